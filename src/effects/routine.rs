//! The gate's second question: of the changes a request makes, is it *routine* — a change to
//! the one guest the call targets that destroys nothing and that the server can undo — or
//! *consequential*?
//!
//! Routine, by the request alone (method, path, parameters, values) and its effects:
//! - power-on: `POST …/{qemu|lxc}/{vmid}/status/start` or `…/status/resume`;
//! - a snapshot: `POST …/{vmid}/snapshot`;
//! - notes: `PUT|POST …/{vmid}/config` setting only `tags` and/or `description`;
//! - a linked clone of a template into a new guest: `POST …/{vmid}/clone` with no full copy,
//!   no pool, no other storage or node (the source being a template is a fact of the target,
//!   checked at decision time);
//! - a backup of one guest that prunes nothing: `POST /nodes/{node}/vzdump` with one `vmid`,
//!   `remove=0`, snapshot mode and no mail or hook script.
//!
//! Everything else that is not a plain read is consequential: destroy, exec, egress,
//! cross-guest (but the template clone above), access, sensitive reads, requests the
//! classifier cannot place, and every other change (hardware, boot, network, storage,
//! firewall, HA, cluster configuration). Invariant: a request is routine only if its
//! effects hold nothing but `change` (and, for the template clone, the copy's `cross-guest`),
//! and only if every parameter it carries is one its kind names — an unknown key makes it
//! consequential. This module only says what a request is; whether the target's facts or an
//! operator's policy keep it routine is decided above it.

use super::{Classified, Effect, EffectSet};

/// The kinds of routine change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Routine {
    /// Start or resume a guest.
    PowerOn,
    /// Take a snapshot.
    Snapshot,
    /// Set tags or the description.
    Notes,
    /// A linked clone of a template into a new guest.
    TemplateClone,
    /// Back up one guest without pruning.
    Backup,
}

impl Routine {
    /// Every kind.
    pub const ALL: [Routine; 5] = [
        Routine::PowerOn,
        Routine::Snapshot,
        Routine::Notes,
        Routine::TemplateClone,
        Routine::Backup,
    ];

    /// The wire name (`tools --json`, the audit's approval).
    pub const fn as_str(self) -> &'static str {
        match self {
            Routine::PowerOn => "power-on",
            Routine::Snapshot => "snapshot",
            Routine::Notes => "notes",
            Routine::TemplateClone => "template-clone",
            Routine::Backup => "backup",
        }
    }

    /// What it does, in a person's words.
    pub const fn meaning(self) -> &'static str {
        match self {
            Routine::PowerOn => "starts or resumes the guest",
            Routine::Snapshot => "takes a snapshot of the guest",
            Routine::Notes => "sets the guest's tags or description",
            Routine::TemplateClone => "makes a linked clone of a template as a new guest",
            Routine::Backup => "backs up the guest without pruning older backups",
        }
    }

    /// The parameters a request of this kind may carry (path captures included); any other
    /// makes it consequential.
    const fn allowed(self) -> &'static [&'static str] {
        match self {
            Routine::PowerOn => &["node", "vmid", "timeout"],
            Routine::Snapshot => &["node", "vmid", "snapname", "description", "vmstate"],
            Routine::Notes => &["node", "vmid", "tags", "description", "digest"],
            Routine::TemplateClone => &[
                "node",
                "vmid",
                "newid",
                "name",
                "hostname",
                "description",
                "full",
            ],
            Routine::Backup => &[
                "node",
                "vmid",
                "storage",
                "mode",
                "compress",
                "notes-template",
                "protected",
                "remove",
            ],
        }
    }

    /// The effects a request of this kind may have.
    fn effects(self) -> EffectSet {
        match self {
            Routine::TemplateClone => [Effect::Change, Effect::CrossGuest].into_iter().collect(),
            _ => EffectSet::of(Effect::Change),
        }
    }
}

/// The routine kind an endpoint (method and path template, or a rendered path) can be, by
/// its route alone: the static answer for a tool's row.
pub fn kind_of_route(method: &str, path: &str) -> Option<Routine> {
    let segments: Vec<&str> = path
        .split('?')
        .next()
        .unwrap_or(path)
        .trim_matches('/')
        .split('/')
        .collect();
    let method = method.to_ascii_uppercase();
    match (method.as_str(), segments.as_slice()) {
        ("POST", ["nodes", _, "vzdump"]) => Some(Routine::Backup),
        ("POST", ["nodes", _, kind, _, "status", "start" | "resume"]) if guest(kind) => {
            Some(Routine::PowerOn)
        }
        ("POST", ["nodes", _, kind, _, "snapshot"]) if guest(kind) => Some(Routine::Snapshot),
        ("PUT" | "POST", ["nodes", _, kind, _, "config"]) if guest(kind) => Some(Routine::Notes),
        ("POST", ["nodes", _, kind, _, "clone"]) if guest(kind) => Some(Routine::TemplateClone),
        _ => None,
    }
}

fn guest(kind: &str) -> bool {
    matches!(kind, "qemu" | "lxc" | "{guest_type}" | "{type}")
}

/// Whether a classified request is routine, and which kind: see the module docs.
pub fn routine(
    method: &str,
    path: &str,
    params: &[(String, String)],
    classified: &Classified,
) -> Option<Routine> {
    let kind = kind_of_route(method, path)?;
    if !kind.effects().covers(classified.effects) {
        return None;
    }
    if params
        .iter()
        .any(|(k, _)| !kind.allowed().contains(&k.as_str()))
    {
        return None;
    }
    let value = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let truthy = |v: Option<&str>| matches!(v, Some("1" | "true"));
    let holds = match kind {
        Routine::PowerOn | Routine::Snapshot => true,
        Routine::Notes => value("tags").is_some() || value("description").is_some(),
        Routine::TemplateClone => value("newid").is_some() && !truthy(value("full")),
        Routine::Backup => {
            let one = value("vmid")
                .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()));
            let no_prune = matches!(value("remove"), Some("0" | "false"));
            let snapshot_mode = matches!(value("mode"), None | Some("snapshot"));
            one && no_prune && snapshot_mode
        }
    };
    holds.then_some(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::effects::classify_rest;

    fn p(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn of(method: &str, path: &str, params: &[(&str, &str)]) -> Option<Routine> {
        let params = p(params);
        routine(method, path, &params, &classify_rest(method, path, &params))
    }

    #[test]
    fn the_routine_kinds_are_recognised() {
        assert_eq!(
            of("POST", "/nodes/pve01/qemu/101/status/start", &[]),
            Some(Routine::PowerOn)
        );
        assert_eq!(
            of("POST", "/nodes/pve01/lxc/201/status/resume", &[]),
            Some(Routine::PowerOn)
        );
        assert_eq!(
            of(
                "POST",
                "/nodes/pve01/qemu/101/snapshot",
                &[("snapname", "before")]
            ),
            Some(Routine::Snapshot)
        );
        assert_eq!(
            of(
                "PUT",
                "/nodes/pve01/qemu/101/config",
                &[("tags", "web"), ("description", "x")]
            ),
            Some(Routine::Notes)
        );
        assert_eq!(
            of(
                "POST",
                "/nodes/pve01/qemu/9000/clone",
                &[("newid", "150"), ("name", "web")]
            ),
            Some(Routine::TemplateClone)
        );
        assert_eq!(
            of(
                "POST",
                "/nodes/pve01/vzdump",
                &[("vmid", "101"), ("remove", "0")]
            ),
            Some(Routine::Backup)
        );
    }

    /// The kinds' names are wire names (the audit, the dry run): each its own.
    #[test]
    fn every_kind_has_its_own_name_and_meaning() {
        let names: Vec<&str> = Routine::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(
            names,
            ["power-on", "snapshot", "notes", "template-clone", "backup"]
        );
        let meanings: std::collections::BTreeSet<&str> =
            Routine::ALL.iter().map(|k| k.meaning()).collect();
        assert_eq!(meanings.len(), Routine::ALL.len());
        assert!(Routine::PowerOn.meaning().contains("starts"));
        assert!(Routine::Backup.meaning().contains("without pruning"));
    }

    /// Only guest routes: the same shape under another collection is no routine route.
    #[test]
    fn only_guest_routes_are_routine_routes() {
        for path in [
            "/nodes/pve01/ceph/x/status/start",
            "/nodes/pve01/storage/local/status/resume",
            "/nodes/pve01/disks/x/snapshot",
            "/nodes/pve01/network/x/config",
            "/nodes/pve01/storage/x/clone",
        ] {
            for method in ["POST", "PUT"] {
                assert_eq!(kind_of_route(method, path), None, "{method} {path}");
            }
        }
        assert_eq!(
            kind_of_route("POST", "/nodes/{node}/{guest_type}/{vmid}/status/start"),
            Some(Routine::PowerOn)
        );
        assert_eq!(
            kind_of_route("GET", "/nodes/pve01/qemu/101/status/start"),
            None
        );
    }

    /// Each condition of a kind on its own: notes need only one of tags or description; a
    /// clone needs a new id; a backup needs one numeric guest, no pruning and snapshot mode.
    #[test]
    fn each_condition_of_a_kind_counts() {
        let config = "/nodes/pve01/qemu/101/config";
        assert_eq!(of("PUT", config, &[("tags", "web")]), Some(Routine::Notes));
        assert_eq!(
            of("PUT", config, &[("description", "x")]),
            Some(Routine::Notes)
        );
        let clone = "/nodes/pve01/qemu/9000/clone";
        assert_eq!(of("POST", clone, &[("name", "web")]), None, "no newid");
        let vzdump = "/nodes/pve01/vzdump";
        assert_eq!(of("POST", vzdump, &[("vmid", "x1"), ("remove", "0")]), None);
        assert_eq!(of("POST", vzdump, &[("vmid", ""), ("remove", "0")]), None);
        assert_eq!(
            of(
                "POST",
                vzdump,
                &[("vmid", "101"), ("remove", "0"), ("mode", "suspend")]
            ),
            None,
            "suspend interrupts the guest"
        );
        assert_eq!(
            of(
                "POST",
                vzdump,
                &[("vmid", "101"), ("remove", "false"), ("mode", "snapshot")]
            ),
            Some(Routine::Backup)
        );
    }

    #[test]
    fn anything_more_is_consequential() {
        for (method, path, params) in [
            ("POST", "/nodes/pve01/qemu/101/status/stop", vec![]),
            (
                "POST",
                "/nodes/pve01/qemu/101/status/start",
                vec![("migratedfrom", "pve02")],
            ),
            ("PUT", "/nodes/pve01/qemu/101/config", vec![("cores", "4")]),
            (
                "PUT",
                "/nodes/pve01/qemu/101/config",
                vec![("tags", "x"), ("net0", "virtio,bridge=vmbr1")],
            ),
            (
                "PUT",
                "/nodes/pve01/qemu/101/config",
                vec![("digest", "abc")],
            ),
            (
                "POST",
                "/nodes/pve01/qemu/9000/clone",
                vec![("newid", "150"), ("full", "1")],
            ),
            (
                "POST",
                "/nodes/pve01/qemu/9000/clone",
                vec![("newid", "150"), ("pool", "lab")],
            ),
            (
                "POST",
                "/nodes/pve01/qemu/9000/clone",
                vec![("newid", "150"), ("target", "pve02")],
            ),
            ("POST", "/nodes/pve01/vzdump", vec![("vmid", "101")]),
            (
                "POST",
                "/nodes/pve01/vzdump",
                vec![("vmid", "101,102"), ("remove", "0")],
            ),
            (
                "POST",
                "/nodes/pve01/vzdump",
                vec![("vmid", "101"), ("remove", "0"), ("mode", "stop")],
            ),
            (
                "POST",
                "/nodes/pve01/vzdump",
                vec![("vmid", "101"), ("remove", "0"), ("mailto", "a@b.example")],
            ),
            (
                "POST",
                "/nodes/pve01/vzdump",
                vec![("all", "1"), ("remove", "0")],
            ),
            (
                "POST",
                "/nodes/pve01/qemu/101/snapshot/before/rollback",
                vec![],
            ),
            ("DELETE", "/nodes/pve01/qemu/101/snapshot/before", vec![]),
            ("POST", "/pools", vec![("poolid", "lab")]),
        ] {
            assert_eq!(
                of(method, path, &params),
                None,
                "{method} {path} {params:?}"
            );
        }
    }
}
