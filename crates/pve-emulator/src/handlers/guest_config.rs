//! Guest configuration writes: config updates (PUT and POST), disk resize and template
//! conversion, plus the helpers create/clone/restore share to turn request parameters
//! into stored configuration keys.
//!
//! Invariant: an update either fails with Proxmox's message and changes nothing, or
//! applies every given key and every `delete` at once; a stale `digest` is refused the way
//! Proxmox refuses it, and `format: urlencoded` values (`sshkeys`) must arrive encoded.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::super::api::{ApiError, Call, parse_bool};
use super::super::state::{EmuState, Guest, GuestKind};
use super::guest;

/// Parameters that steer a request and are never stored in the configuration.
const CONTROL: &[&str] = &[
    "vmid",
    "delete",
    "digest",
    "revert",
    "skiplock",
    "force",
    "start",
    "pool",
    "storage",
    "archive",
    "unique",
    "restore",
    "ostemplate",
    "password",
    "ssh-public-keys",
    "bwlimit",
    "live-restore",
    "ignore-unpack-errors",
    "ha-managed",
    "background_delay",
    "import-working-storage",
];

/// Keys Proxmox stores as numbers (integers and Perl booleans).
const NUMERIC: &[&str] = &[
    "cores",
    "sockets",
    "memory",
    "balloon",
    "swap",
    "cpuunits",
    "vcpus",
    "onboot",
    "protection",
    "numa",
    "template",
    "unprivileged",
    "tty",
    "console",
    "acpi",
    "kvm",
    "tablet",
    "localtime",
    "shares",
    "migrate_speed",
    "ciupgrade",
    "smp",
    "autostart",
    "freeze",
    "reboot",
    "tdf",
    "keephugepages",
    "allow-ksm",
];

/// Whether a key names a disk or volume that `<storage>:<GiB>` allocates.
fn is_volume_key(key: &str) -> bool {
    if matches!(key, "efidisk0" | "tpmstate0" | "rootfs") {
        return true;
    }
    ["scsi", "virtio", "sata", "ide", "mp"]
        .iter()
        .any(|prefix| {
            key.strip_prefix(prefix)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// `PVE::JSONSchema`'s check of `format: urlencoded`.
fn is_urlencoded(text: &str) -> bool {
    text.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-%_.!~*'()".contains(c))
}

/// A MAC address in Proxmox's `BC:24:11` range, stable per (vmid, key).
pub(super) fn mac_for(vmid: u32, key: &str) -> String {
    let hash = Sha256::digest(format!("{vmid}/{key}").as_bytes());
    format!("BC:24:11:{:02X}:{:02X}:{:02X}", hash[0], hash[1], hash[2])
}

/// The number of the next `vm-<vmid>-disk-<n>` volume of a configuration.
fn next_disk_number(config: &Map<String, Value>, vmid: u32) -> usize {
    let stem = format!("-{vmid}-disk-");
    (0..)
        .find(|n| {
            let name = format!("{stem}{n}");
            !config
                .values()
                .any(|v| v.as_str().is_some_and(|s| s.contains(&name)))
        })
        .unwrap_or(0)
}

/// Turns one request value into what Proxmox stores: allocations (`local-lvm:32`) become
/// volumes, NICs without a MAC get one, numbers and booleans become numbers.
fn stored_value(
    st: &EmuState,
    config: &Map<String, Value>,
    kind: GuestKind,
    vmid: u32,
    key: &str,
    value: &str,
) -> Result<Value, ApiError> {
    if NUMERIC.contains(&key) {
        if let Some(b) = parse_bool(value).filter(|_| !value.bytes().all(|c| c.is_ascii_digit())) {
            return Ok(json!(u8::from(b)));
        }
        if let Ok(n) = value.parse::<u64>() {
            return Ok(json!(n));
        }
    }
    if is_volume_key(key) {
        let (first, options) = value.split_once(',').unwrap_or((value, ""));
        let first = first.strip_prefix("volume=").unwrap_or(first);
        let first = first.strip_prefix("file=").unwrap_or(first);
        if let Some((storage, size)) = first.split_once(':') {
            let allocate = size.parse::<f64>().is_ok_and(|s| s > 0.0);
            let cloudinit = size == "cloudinit";
            if allocate || cloudinit {
                if !st.storages.iter().any(|s| s.id == storage) {
                    return Err(ApiError::server(format!(
                        "storage '{storage}' does not exist"
                    )));
                }
                let mut text = if cloudinit {
                    format!("{storage}:vm-{vmid}-cloudinit,media=cdrom")
                } else {
                    let n = next_disk_number(config, vmid);
                    format!("{storage}:vm-{vmid}-disk-{n},size={size}G")
                };
                if !options.is_empty() {
                    text.push(',');
                    text.push_str(options);
                }
                return Ok(json!(text));
            }
        }
    }
    if kind == GuestKind::Qemu
        && key
            .strip_prefix("net")
            .is_some_and(|n| n.parse::<u8>().is_ok())
    {
        let (model, rest) = value.split_once(',').unwrap_or((value, ""));
        if !model.contains('=') {
            let mut text = format!("{model}={}", mac_for(vmid, key));
            if !rest.is_empty() {
                text.push(',');
                text.push_str(rest);
            }
            return Ok(json!(text));
        }
    }
    if key == "cipassword" {
        // Proxmox stores a crypt hash, never the password.
        let hash = hex::encode(Sha256::digest(value.as_bytes()));
        return Ok(json!(format!("$5$emu${}", &hash[..43])));
    }
    Ok(json!(value))
}

/// Applies request parameters to a configuration (not the control ones), checking
/// `format: urlencoded` values the way Proxmox's schema does.
pub(super) fn apply_params(
    st: &EmuState,
    config: &mut Map<String, Value>,
    kind: GuestKind,
    vmid: u32,
    params: &[(String, String)],
) -> Result<(), ApiError> {
    if let Some((_, keys)) = params
        .iter()
        .find(|(k, v)| k == "sshkeys" && !is_urlencoded(v))
    {
        return Err(ApiError::param(
            "sshkeys",
            format!("invalid urlencoded string: {keys}"),
        ));
    }
    for (key, value) in params {
        if CONTROL.contains(&key.as_str()) {
            continue;
        }
        let stored = stored_value(st, config, kind, vmid, key, value)?;
        config.insert(key.clone(), stored);
    }
    Ok(())
}

fn update(call: &mut Call<'_>, kind: GuestKind) -> Result<Value, ApiError> {
    let params: Vec<(String, String)> = call.params().to_vec();
    let vmid = call.vmid();
    let digest = call.str("digest").map(str::to_owned);
    let delete: Vec<String> = call
        .str("delete")
        .unwrap_or("")
        .split([',', ';', ' '])
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
        .collect();
    let mut errors = BTreeMap::new();
    for key in &delete {
        if params.iter().any(|(k, _)| k == key) {
            errors.insert(
                "delete".to_string(),
                format!("unable to delete '{key}' - it is also being set"),
            );
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::params(errors));
    }
    let (config, current_digest) = {
        let g = guest(call, kind)?;
        (g.config.clone(), g.digest())
    };
    if digest.is_some_and(|d| !current_digest.starts_with(&d.to_ascii_lowercase())) {
        return Err(ApiError::server(
            "detected modified configuration - file changed by other user? Try again.",
        ));
    }
    if config.get("protection").and_then(Value::as_u64) == Some(1)
        && delete.iter().any(|k| is_volume_key(k))
    {
        return Err(ApiError::server(format!(
            "can't remove {} {vmid} disk - protection mode enabled",
            kind.label()
        )));
    }
    let mut config = config;
    apply_params(call.st, &mut config, kind, vmid, &params)?;
    for key in &delete {
        config.remove(key);
    }
    guest(call, kind)?.config = config;
    Ok(Value::Null)
}

/// `PUT /nodes/{node}/qemu/{vmid}/config` (synchronous; returns null).
pub(in super::super) fn qemu_update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    update(call, GuestKind::Qemu)
}

/// `POST /nodes/{node}/qemu/{vmid}/config` (asynchronous; returns a UPID).
pub(in super::super) fn qemu_update_async(call: &mut Call<'_>) -> Result<Value, ApiError> {
    update(call, GuestKind::Qemu)?;
    let node = call.cap("node").to_string();
    let vmid = call.vmid().to_string();
    Ok(Value::String(call.st.spawn_task(
        &node,
        "qmconfig",
        &vmid,
        "update VM config",
    )))
}

/// `PUT /nodes/{node}/lxc/{vmid}/config`.
pub(in super::super) fn lxc_update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    update(call, GuestKind::Lxc)
}

/// Bytes of a `size=` option (`32G`, `512M`, `1T`, plain bytes).
fn parse_size(text: &str) -> Option<u64> {
    let (number, unit) = match text.char_indices().last()? {
        (i, c) if c.is_ascii_alphabetic() => (&text[..i], c.to_ascii_uppercase()),
        _ => (text, 'B'),
    };
    let value: f64 = number.parse().ok()?;
    let factor: f64 = match unit {
        'B' => 1.0,
        'K' => 1024.0,
        'M' => 1024.0 * 1024.0,
        'G' => 1024.0 * 1024.0 * 1024.0,
        'T' => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some((value * factor) as u64)
}

/// `G` text of a byte count, as Proxmox writes sizes back.
fn format_size(bytes: u64) -> String {
    const GIB: u64 = 1024 * 1024 * 1024;
    if bytes.is_multiple_of(GIB) {
        format!("{}G", bytes / GIB)
    } else {
        format!("{}M", bytes / (1024 * 1024))
    }
}

/// `PUT /nodes/{node}/qemu/{vmid}/resize`: grows a disk's `size=`, returns a UPID.
pub(in super::super) fn qemu_resize(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let disk = call.str("disk").unwrap_or_default().to_string();
    let size = call.str("size").unwrap_or_default().to_string();
    let node = call.cap("node").to_string();
    let g = guest(call, GuestKind::Qemu)?;
    let vmid = g.vmid;
    let Some(current) = g
        .config
        .get(&disk)
        .and_then(Value::as_str)
        .map(str::to_owned)
    else {
        return Err(ApiError::server(format!("disk '{disk}' does not exist")));
    };
    let old = current
        .split(',')
        .find_map(|o| o.strip_prefix("size="))
        .and_then(parse_size)
        .unwrap_or(0);
    let (grow, amount) = match size.strip_prefix('+') {
        Some(rest) => (true, rest),
        None => (false, size.as_str()),
    };
    let amount = parse_size(amount)
        .ok_or_else(|| ApiError::param("size", format!("invalid size '{size}'")))?;
    let new = if grow { old + amount } else { amount };
    if new < old {
        return Err(ApiError::server("shrinking disks is not supported"));
    }
    let mut parts: Vec<String> = current
        .split(',')
        .filter(|o| !o.starts_with("size="))
        .map(str::to_owned)
        .collect();
    parts.push(format!("size={}", format_size(new)));
    g.config.insert(disk.clone(), json!(parts.join(",")));
    if disk == "scsi0" || disk == "virtio0" {
        g.maxdisk = new;
    }
    let id = vmid.to_string();
    Ok(Value::String(call.st.spawn_task(
        &node,
        "resize",
        &id,
        &format!("resize {disk} of VM {vmid}"),
    )))
}

/// Renames a guest's disk volumes from `vm-<id>-` to `base-<id>-` (template conversion).
fn to_base_volumes(g: &mut Guest) {
    let from = format!("vm-{}-", g.vmid);
    let to = format!("base-{}-", g.vmid);
    for value in g.config.values_mut() {
        if let Some(text) = value.as_str().filter(|t| t.contains(&from)) {
            *value = json!(text.replace(&from, &to));
        }
    }
}

/// `POST /nodes/{node}/qemu/{vmid}/template`: irreversible conversion, returns a UPID.
pub(in super::super) fn qemu_template(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let node = call.cap("node").to_string();
    let g = guest(call, GuestKind::Qemu)?;
    if g.is_template() {
        return Err(ApiError::server(
            "you can't convert a template to a template",
        ));
    }
    if g.is_running() {
        return Err(ApiError::server(
            "you can't convert a VM to template if VM is running",
        ));
    }
    g.config.insert("template".into(), json!(1));
    to_base_volumes(g);
    let vmid = g.vmid;
    Ok(Value::String(call.st.spawn_task(
        &node,
        "qmtemplate",
        &vmid.to_string(),
        &format!("convert VM {vmid} to template"),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_trip() {
        assert_eq!(parse_size("32G"), Some(32 * 1024 * 1024 * 1024));
        assert_eq!(parse_size("512M"), Some(512 * 1024 * 1024));
        assert_eq!(format_size(parse_size("42G").unwrap()), "42G");
        assert_eq!(parse_size("x"), None);
    }

    #[test]
    fn urlencoded_check_matches_proxmox() {
        assert!(is_urlencoded("ssh-ed25519%20AAAA%20me%40host"));
        assert!(!is_urlencoded("ssh-ed25519 AAAA me@host"));
    }
}
