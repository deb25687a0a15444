//! Which ACL path and privilege Proxmox checks for an API request, as named in its
//! `Permission check failed (<path>, <privilege>)` refusals.
//!
//! Invariant: the ACL path depends on the decoded API path only, mapped the way PVE maps
//! it (`/nodes/{n}/qemu|lxc/{vmid}/…` → `/vms/{vmid}`, `/nodes/{n}/storage/{s}/…` →
//! `/storage/{s}`, `/nodes/{n}/…` → `/nodes/{n}`, `/pools/{p}` → `/pool/{p}`, `/access/…`
//! → `/access`, everything else `/`); the privilege comes from the official schema when
//! one is served ([`super::apidata`]) and otherwise from [`fallback_privilege`], a
//! sensible PVE privilege by method and path.

/// The ACL path PVE checks for the decoded API path `path` (e.g. `/vms/101`).
pub(super) fn acl_path(path: &str) -> String {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["nodes", _, "qemu" | "lxc", vmid, ..] => format!("/vms/{vmid}"),
        ["nodes", _, "storage", storage, ..] | ["storage", storage, ..] => {
            format!("/storage/{storage}")
        }
        ["nodes", node, ..] => format!("/nodes/{node}"),
        ["pools", pool, ..] => format!("/pool/{pool}"),
        ["access", ..] => "/access".to_string(),
        _ => "/".to_string(),
    }
}

/// Whether `requested` is `granted_path` or lies below it (`/vms` covers `/vms/101`,
/// `/` covers everything, `/vms/10` does not cover `/vms/101`).
pub(super) fn covers(granted_path: &str, requested: &str) -> bool {
    let granted = granted_path.trim_end_matches('/');
    granted.is_empty()
        || requested == granted
        || requested
            .strip_prefix(granted)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// `<acl path>, <privilege>` as a refusal names it, with the fallback privilege.
pub(super) fn target(method: &str, path: &str) -> String {
    format!("{}, {}", acl_path(path), fallback_privilege(method, path))
}

/// The privilege PVE most plausibly checks for `method` on `path` when no schema says.
pub(super) fn fallback_privilege(method: &str, path: &str) -> &'static str {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let read = method == "GET";
    match segments.as_slice() {
        ["nodes", _, "qemu" | "lxc", _, rest @ ..] => guest_privilege(method, rest),
        ["nodes", _, "storage", _, ..] | ["storage", _, ..] if read => "Datastore.Audit",
        ["nodes", _, "storage", _, ..] => "Datastore.AllocateSpace",
        ["storage", ..] if !read => "Datastore.Allocate",
        ["nodes", _, "syslog" | "journal", ..] => "Sys.Syslog",
        ["nodes", _, "status"] if !read => "Sys.PowerMgmt",
        ["nodes", _, "vncshell" | "termproxy" | "spiceshell", ..] => "Sys.Console",
        ["pools", ..] if read => "Pool.Audit",
        ["pools", ..] => "Pool.Allocate",
        ["access", "acl", ..] if !read => "Permissions.Modify",
        ["access", ..] if !read => "User.Modify",
        _ if read => "Sys.Audit",
        _ => "Sys.Modify",
    }
}

/// The privilege for a request on a guest; `rest` is the path after `/{vmid}`.
fn guest_privilege(method: &str, rest: &[&str]) -> &'static str {
    let read = method == "GET";
    match rest {
        ["agent", ..] if read => "VM.GuestAgent.Audit",
        ["agent", ..] => "VM.GuestAgent.Unrestricted",
        ["firewall", "log", ..] => "VM.Console",
        ["migrate"] if read => "VM.Migrate",
        _ if read => "VM.Audit",
        ["status", ..] => "VM.PowerMgmt",
        ["config" | "cloudinit", ..] => "VM.Config.Options",
        ["snapshot", _, "rollback"] => "VM.Snapshot.Rollback",
        ["snapshot", ..] => "VM.Snapshot",
        ["clone"] => "VM.Clone",
        ["migrate" | "remote_migrate"] => "VM.Migrate",
        ["resize" | "move_disk" | "move_volume"] => "VM.Config.Disk",
        ["firewall", ..] => "VM.Config.Network",
        [
            "vncproxy" | "termproxy" | "spiceproxy" | "sendkey" | "vncwebsocket",
            ..,
        ] => "VM.Console",
        [] | ["template"] => "VM.Allocate",
        _ => "VM.Config.Options",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_paths_map_to_acl_paths() {
        assert_eq!(acl_path("/nodes/pve01/qemu/101/status/start"), "/vms/101");
        assert_eq!(acl_path("/nodes/pve01/lxc/201/config"), "/vms/201");
        assert_eq!(
            acl_path("/nodes/pve01/storage/local/content"),
            "/storage/local"
        );
        assert_eq!(acl_path("/nodes/pve01/status"), "/nodes/pve01");
        assert_eq!(acl_path("/pools/emu-pool"), "/pool/emu-pool");
        assert_eq!(acl_path("/access/users"), "/access");
        assert_eq!(acl_path("/cluster/resources"), "/");
        assert_eq!(acl_path("/nodes"), "/");
    }

    #[test]
    fn coverage_is_by_whole_segments() {
        assert!(covers("/vms/101", "/vms/101"));
        assert!(covers("/vms", "/vms/101"));
        assert!(covers("/", "/nodes/pve01"));
        assert!(!covers("/vms/10", "/vms/101"));
        assert!(!covers("/vms/101", "/vms"));
    }

    #[test]
    fn privileges_by_method_and_path() {
        let p = fallback_privilege;
        assert_eq!(p("GET", "/nodes/pve01/qemu/101/config"), "VM.Audit");
        assert_eq!(
            p("POST", "/nodes/pve01/qemu/101/status/start"),
            "VM.PowerMgmt"
        );
        assert_eq!(
            p("PUT", "/nodes/pve01/qemu/101/config"),
            "VM.Config.Options"
        );
        assert_eq!(p("DELETE", "/nodes/pve01/qemu/101"), "VM.Allocate");
        assert_eq!(p("GET", "/nodes/pve01/status"), "Sys.Audit");
        assert_eq!(p("POST", "/nodes/pve01/status"), "Sys.PowerMgmt");
        assert_eq!(
            p("GET", "/nodes/pve01/storage/local/content"),
            "Datastore.Audit"
        );
        assert_eq!(p("GET", "/version"), "Sys.Audit");
        assert_eq!(
            target("GET", "/nodes/pve01/qemu/101/status/current"),
            "/vms/101, VM.Audit"
        );
        assert_eq!(
            target("GET", "/nodes/pve01/status"),
            "/nodes/pve01, Sys.Audit"
        );
        assert_eq!(target("GET", "/version"), "/, Sys.Audit");
    }
}
