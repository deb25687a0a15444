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
use super::reviewed::{self, Reviewed, Verdict};
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

/// QEMU disk families: a value naming a path (`/dev/sdb`) instead of a volume is a host device.
const QEMU_DISKS: &[&str] = &[
    "scsi", "sata", "ide", "virtio", "efidisk", "tpmstate", "unused",
];

/// The address spellings that mean "every address" in a firewall rule.
const ANY_ADDRESS: &[&str] = &["0.0.0.0/0", "::/0", "0/0", "0.0.0.0", "::"];

/// Classifies a REST request: method, rendered path (no `/api2/json`), parameters.
pub fn classify_rest(method: &str, path: &str, params: &[(String, String)]) -> Classified {
    classify_rest_with(method, path, params, None)
}

/// Classifies a REST request against the embedded table and, where the cluster's own schema
/// has an entry for it (`cluster`, built with [`Endpoint::from_schema`]), against that too:
/// the union of both, so a newer schema can add effects and never take one away, and a
/// parameter either schema does not declare is not placed.
pub fn classify_rest_with(
    method: &str,
    path: &str,
    params: &[(String, String)],
    cluster: Option<&Endpoint>,
) -> Classified {
    let mut out = match table::endpoint(method, path) {
        Some(endpoint) => classify_at(endpoint, path, params, "the embedded PVE schema"),
        None => match reviewed::newer(method, path) {
            Some(row) => newer_row(row, params),
            None => unknown(method, path),
        },
    };
    if let Some(cluster) = cluster {
        out.merge(classify_at(cluster, path, params, "the cluster's schema"));
    }
    out
}

fn unknown(method: &str, path: &str) -> Classified {
    let mut out = Classified::read();
    out.add(
        Effect::Unplaced,
        format!("{method} {path} is not in the Proxmox VE API this server knows"),
    );
    if !method.eq_ignore_ascii_case("GET") {
        out.add(Effect::Change, format!("{method} {path}"));
    }
    out
}

/// An operation of a newer PVE, judged by hand: its effects, and for a GET (no permission
/// check known) or any parameter (none known) "not placed".
fn newer_row(row: &reviewed::Newer, params: &[(String, String)]) -> Classified {
    let mut out = Classified::read();
    let at = format!("{} {}", row.method, row.path);
    for effect in &row.effects {
        out.add(*effect, format!("{at}: {} (PVE 9.2)", row.reason));
    }
    if row.effects.is_empty() {
        out.add(
            Effect::Unplaced,
            format!("{at} is a PVE 9.2 endpoint whose permission check this server does not know"),
        );
    }
    for (key, _) in params {
        out.add(
            Effect::Unplaced,
            format!(
                "{key}: a parameter of the PVE 9.2 endpoint {at}, which this server cannot place"
            ),
        );
    }
    out
}

/// Classifies a request against one endpoint's facts (`source` names where they come from).
fn classify_at(
    endpoint: &Endpoint,
    path: &str,
    params: &[(String, String)],
    source: &str,
) -> Classified {
    let mut out = Classified::read();
    let at = format!("{} {}", endpoint.method, endpoint.path);
    let review = reviewed::reviewed(&endpoint.method, &endpoint.path);
    let reviewed_read =
        review.is_some_and(|r| matches!(r.verdict, Verdict::Read | Verdict::ReadByValue));
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
            // A reviewed read: the one case a non-GET's default change is not added (for
            // `monitor`, the value rule below then says what the command does).
            Effect::Change if reviewed_read => continue,
            _ => at.clone(),
        };
        out.add(*effect, because);
    }
    if let Some(Reviewed {
        verdict: Verdict::Adds(effects),
        reason,
        ..
    }) = review
    {
        for effect in effects {
            out.add(*effect, format!("{at}: {reason}"));
        }
    }
    for (key, _) in params {
        if !endpoint.declares(key) {
            out.add(
                Effect::Unplaced,
                format!(
                    "{key}: not a parameter of {at} in {source}, so this server cannot place it"
                ),
            );
        }
    }
    let target = vmid_in_path(path);
    for (key, value) in params {
        by_value(endpoint, key, value, target.as_deref(), &mut out);
    }
    hand_rules(endpoint, params, target.as_deref(), &mut out);
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
    if key == "rootfs" && is_host_mount(value) {
        out.add(
            Effect::Access,
            format!("{key}: makes a host path the container's root"),
        );
    }
    if family != key && QEMU_DISKS.contains(&family) && is_host_mount(value) {
        out.add(
            Effect::Access,
            format!("{key}: passes a host block device or file into the guest"),
        );
    }
}

/// The hand table: defaults that act when a key is absent, and copies.
fn hand_rules(
    endpoint: &Endpoint,
    params: &[(String, String)],
    target: Option<&str>,
    out: &mut Classified,
) {
    let value = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let truthy = |name: &str| value(name).is_some_and(|v| v == "1" || v == "true");
    let path = endpoint.path.as_str();
    let method = endpoint.method.as_str();
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
    if method == "POST" && path == "/nodes/{node}/qemu/{vmid}/monitor" {
        monitor(value("command"), out);
    }
    if method == "POST" && path.ends_with("/agent/set-user-password") {
        out.add(
            Effect::Access,
            "set-user-password: sets the password of a user inside the guest",
        );
    }
    if value("script").is_some()
        && method != "GET"
        && (path == "/nodes/{node}/vzdump" || path.starts_with("/cluster/backup"))
    {
        out.add(
            Effect::Exec,
            "script: the node runs this hook script for the backup",
        );
    }
    if method == "PUT"
        && path.starts_with("/pools")
        && !truthy("delete")
        && (value("vms").is_some() || value("storage").is_some())
    {
        out.add(
            Effect::Access,
            "vms/storage: the members come under the pool's permissions",
        );
    }
    if method == "POST" && (path.ends_with("/move_disk") || path.ends_with("/move_volume")) {
        if let Some(other) = value("target-vmid").filter(|v| Some(*v) != target) {
            out.add(
                Effect::CrossGuest,
                format!("target-vmid: moves the disk to guest {other}"),
            );
        }
        if truthy("delete") {
            out.add(
                Effect::Destroy,
                "delete: removes the source volume after the move",
            );
        }
    }
    if method != "GET"
        && path.contains("/firewall/")
        && (path.contains("/rules") || path.contains("/groups/"))
    {
        for key in ["source", "dest"] {
            if let Some(v) = value(key).filter(|v| ANY_ADDRESS.contains(&v.trim())) {
                out.add(
                    Effect::Access,
                    format!("{key}={v}: the rule applies to every address"),
                );
            }
        }
    }
    if method != "GET"
        && (path == "/storage" || path == "/storage/{storage}")
        && value("content").is_some_and(|c| c.split(',').any(|c| c.trim() == "snippets"))
    {
        out.add(
            Effect::Exec,
            "content=snippets: hook scripts and cloud-init data on this storage run on guests",
        );
    }
}

/// The QEMU monitor (`POST …/monitor`): `help`, `?` and `info …` read the guest's state (a
/// sensitive read: registers, memory, block devices); every other command needs `Sys.Modify`
/// and can quit or reset the guest or run a host command (`migrate "exec:…"`).
fn monitor(command: Option<&str>, out: &mut Classified) {
    let command = command.unwrap_or("").trim();
    let word = command.split_whitespace().next().unwrap_or("");
    if matches!(word, "help" | "?" | "info") {
        out.add(
            Effect::SensitiveRead,
            format!("monitor command {word:?}: reads the guest's internal state"),
        );
        return;
    }
    let shown = if word.is_empty() { "(none)" } else { word };
    out.add(
        Effect::Change,
        format!("monitor command {shown:?} changes the running guest"),
    );
    out.add(
        Effect::Exec,
        format!("monitor command {shown:?}: a monitor command can run a host program (migrate \"exec:…\")"),
    );
    out.add(
        Effect::Destroy,
        format!("monitor command {shown:?}: a monitor command can quit or reset the guest"),
    );
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

/// Whether a disk or mount point value's volume is a host path or device (`/srv/data,mp=/mnt`,
/// `mp=/mnt,volume=/etc`, `/dev/sdb`): the first item unless a `volume=`/`file=` item names it.
fn is_host_mount(value: &str) -> bool {
    let mut items = value.split(',');
    let first = items.next().unwrap_or("");
    let named = value.split(',').find_map(|item| {
        item.strip_prefix("volume=")
            .or_else(|| item.strip_prefix("file="))
    });
    let volume = named.unwrap_or(if first.contains('=') { "" } else { first });
    volume.trim().starts_with('/')
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
mod ground_truth_tests;
#[cfg(test)]
mod tests;
