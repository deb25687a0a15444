//! Classifies one concrete request: the endpoint's own effects (from the table) plus what its
//! argument values add, plus the small hand-kept table of what the schema cannot say.
//!
//! The hand table is short on purpose and every line says why: Proxmox defaults that act
//! when a key is *absent* (`vzdump` prunes unless `remove=0`; a container is privileged
//! unless `unprivileged=1`), keys whose meaning is access or execution rather than a
//! setting (`sshkeys`, `password`, `hookscript`, host mounts), and copies (`clone`).
//! Invariant: an endpoint missing from the table is [`Effect::Unplaced`] — never a read.

use std::sync::OnceLock;

use regex::Regex;

use super::derive::ParamKind;
use super::table::{self, Endpoint};
use super::{Classified, Effect};

/// Keys whose value grants access or holds a credential, wherever they appear in a write.
const ACCESS_KEYS: &[&str] = &[
    "password",
    "cipassword",
    "sshkeys",
    "ssh-public-keys",
    "features",
    "tokens",
    "users",
    "groups",
    "roles",
    "privs",
];

/// Keys whose value makes Proxmox run something (a hook script, cloud-init user data).
const EXEC_KEYS: &[&str] = &["hookscript", "cicustom"];

/// Families that pass host devices or host paths into a guest.
const HOST_FAMILIES: &[&str] = &["dev", "hostpci", "usb"];

/// Classifies a REST request: method, rendered path (no `/api2/json`), parameters.
pub fn classify_rest(method: &str, path: &str, params: &[(String, String)]) -> Classified {
    let mut out = Classified::read();
    let Some(endpoint) = table::endpoint(method, path) else {
        out.add(
            Effect::Unplaced,
            format!("{method} {path} is not in the Proxmox VE 9.1 API this server knows"),
        );
        if !method.eq_ignore_ascii_case("GET") {
            out.add(Effect::Change, format!("{method} {path}"));
        }
        return out;
    };
    let at = format!("{} {}", endpoint.method, endpoint.path);
    for effect in &endpoint.effects {
        let because = match effect {
            Effect::SensitiveRead => format!(
                "{at} needs {} (more than an auditor's view)",
                endpoint.privileges.join(" or ")
            ),
            Effect::Access if !endpoint.privileges.is_empty() => {
                format!("{at} needs {}", endpoint.privileges.join(" or "))
            }
            Effect::Exec | Effect::Egress => {
                format!("{at} needs {}", endpoint.privileges.join(" or "))
            }
            _ => at.clone(),
        };
        out.add(*effect, because);
    }
    let target = vmid_in_path(path);
    for (key, value) in params {
        by_value(endpoint, key, value, target.as_deref(), &mut out);
    }
    hand_rules(endpoint, params, &mut out);
    out
}

/// What one argument's value adds.
fn by_value(
    endpoint: &Endpoint,
    key: &str,
    value: &str,
    target: Option<&str>,
    out: &mut Classified,
) {
    let write = !endpoint.method.eq_ignore_ascii_case("GET");
    match endpoint.param_kind(key) {
        Some(ParamKind::Url) => {
            out.add(Effect::Egress, format!("{key}: the node fetches this URL"))
        }
        Some(ParamKind::Server) => out.add(
            Effect::Egress,
            format!("{key}: the node connects to this host"),
        ),
        Some(ParamKind::Mail) => {
            out.add(Effect::Egress, format!("{key}: the node sends mail to it"))
        }
        Some(ParamKind::Vmids) if list_len(value) > 1 => out.add(
            Effect::CrossGuest,
            format!("{key}: {} guests at once", list_len(value)),
        ),
        Some(ParamKind::Volume) => {
            if value.contains("import-from") || key == "import-from" {
                out.add(
                    Effect::CrossGuest,
                    format!("{key}: import-from copies an existing volume"),
                );
            }
            for owner in volume_owners(value) {
                if target != Some(owner.as_str()) {
                    out.add(
                        Effect::CrossGuest,
                        format!("{key}: names a volume of guest {owner}"),
                    );
                }
            }
        }
        _ => {}
    }
    if !write {
        return;
    }
    let family = key.trim_end_matches(|c: char| c.is_ascii_digit());
    if ACCESS_KEYS.contains(&key) {
        out.add(
            Effect::Access,
            format!("{key}: sets a credential or access"),
        );
    }
    if EXEC_KEYS.contains(&key) {
        out.add(Effect::Exec, format!("{key}: Proxmox runs what it names"));
    }
    if family != key && HOST_FAMILIES.contains(&family) {
        out.add(
            Effect::Access,
            format!("{key}: passes a host device into the guest"),
        );
    }
    if family == "mp" && family != key && is_host_mount(value) {
        out.add(
            Effect::Access,
            format!("{key}: mounts a host path into the container"),
        );
    }
}

/// The hand table: defaults that act when a key is absent, and copies.
fn hand_rules(endpoint: &Endpoint, params: &[(String, String)], out: &mut Classified) {
    let value = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let truthy = |name: &str| value(name).is_some_and(|v| v == "1" || v == "true");
    let path = endpoint.path.as_str();
    let method = endpoint.method.as_str();
    // Open to every user by the schema's check, with the real rule only in prose ("You need
    // read access for the volume", "VM.Backup on the guest"): files and configs out of a
    // backup are guest data, so a sensitive read.
    if method == "GET"
        && (path.contains("/file-restore/") || path.ends_with("/vzdump/extractconfig"))
    {
        out.add(
            Effect::SensitiveRead,
            format!("{method} {path} reads files or a configuration out of a guest's backup"),
        );
    }
    if method == "POST" && path == "/nodes/{node}/vzdump" {
        if !matches!(value("remove"), Some("0" | "false")) {
            out.add(
                Effect::Destroy,
                "vzdump prunes older backups by the storage's retention unless remove=0",
            );
        }
        if truthy("all") {
            out.add(Effect::CrossGuest, "all: backs up every guest");
        }
        if value("pool").is_some() {
            out.add(Effect::CrossGuest, "pool: backs up every guest of the pool");
        }
        if value("exclude").is_some() {
            out.add(
                Effect::CrossGuest,
                "exclude: backs up every guest not excluded",
            );
        }
        if value("mode") == Some("stop") {
            out.add(Effect::Destroy, "mode=stop: stops the guest for the backup");
        }
    }
    if method == "POST" && (path.ends_with("/clone") || path.ends_with("/template")) {
        let what = if path.ends_with("/clone") {
            "copies a guest's disks, settings and identity (addresses, keys) into another guest"
        } else {
            "turns the guest into a template that others are cloned from"
        };
        out.add(Effect::CrossGuest, what);
    }
    if method == "POST" && path == "/nodes/{node}/lxc" && !truthy("unprivileged") {
        out.add(
            Effect::Access,
            "unprivileged is not 1: Proxmox creates a privileged container (root on the host)",
        );
    }
    if method == "POST" && (path == "/nodes/{node}/lxc" || path == "/nodes/{node}/qemu") {
        if value("archive").is_some() && truthy("force") {
            out.add(
                Effect::Destroy,
                "force with archive: overwrites an existing guest",
            );
        }
        if truthy("start") || truthy("onboot") {
            out.add(Effect::Change, "start/onboot: the new guest will run");
        }
    }
    if method == "POST" && path.ends_with("/upload") && value("content") == Some("snippets") {
        out.add(
            Effect::Exec,
            "content=snippets: hook scripts and cloud-init data run from there",
        );
    }
    if method == "POST" && path == "/nodes/{node}/execute" {
        out.add(Effect::Exec, "runs a batch of API commands on the node");
    }
}

/// The guest ID in a `/…/qemu/{vmid}` or `/…/lxc/{vmid}` path, if any.
fn vmid_in_path(path: &str) -> Option<String> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    segments
        .windows(2)
        .find(|w| (w[0] == "qemu" || w[0] == "lxc") && w[1].bytes().all(|b| b.is_ascii_digit()))
        .map(|w| w[1].to_owned())
}

/// The guest IDs whose volumes a value names (`vm-100-disk-0`, `subvol-200-disk-1`,
/// `base-9000-disk-0`, backup archives `vzdump-qemu-100-…`).
fn volume_owners(value: &str) -> Vec<String> {
    static OWNER: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = OWNER
        .get_or_init(|| {
            Regex::new(r"(?:^|[:/,=])(?:vm|subvol|base|vzdump-(?:qemu|lxc))-(\d+)-").ok()
        })
        .as_ref()
    else {
        return Vec::new();
    };
    let mut owners: Vec<String> = re
        .captures_iter(value)
        .filter_map(|c| c.get(1).map(|m| m.as_str().to_owned()))
        .collect();
    owners.dedup();
    owners
}

/// Whether a mount point value's volume is a host path (`/srv/data,mp=/mnt`).
fn is_host_mount(value: &str) -> bool {
    let volume = value.split(',').next().unwrap_or("");
    let volume = volume.strip_prefix("volume=").unwrap_or(volume);
    volume.starts_with('/')
}

/// Items of a Proxmox list value (`,`, `;` or whitespace separated).
fn list_len(value: &str) -> usize {
    value
        .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .count()
}

/// SSH and SFTP operations, as the SSH entry point names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SshKind {
    /// A fixed, allow-listed diagnostic command (no caller-chosen program).
    Diagnostic,
    /// A command or program the caller chose.
    Command,
    /// Reading a file on a node.
    FileRead,
    /// Writing a file on a node or a snippet (hook scripts run from there).
    FileWrite,
    /// Removing a file.
    FileRemove,
}

/// Classifies an SSH/SFTP operation.
pub fn classify_ssh(kind: SshKind, what: &str) -> Classified {
    let mut out = Classified::read();
    match kind {
        SshKind::Diagnostic => {}
        SshKind::Command => out.add(Effect::Exec, format!("runs over SSH: {what}")),
        SshKind::FileRead => out.add(Effect::SensitiveRead, format!("reads a node file: {what}")),
        SshKind::FileWrite => {
            out.add(Effect::Change, format!("writes a node file: {what}"));
            out.add(
                Effect::Exec,
                format!("a written file can be run by the node: {what}"),
            );
            out.add(Effect::Destroy, format!("overwrites {what} if it exists"));
        }
        SshKind::FileRemove => out.add(Effect::Destroy, format!("removes {what}")),
    }
    out
}

#[cfg(test)]
mod tests;
