//! The MCP annotations of every tool, pinned: which tools write, which are destructive,
//! which writes are idempotent, and where the cluster reaches outside itself. A row that
//! changes one of these must change this file too, on purpose.

use std::collections::BTreeSet;

use nandi_proxmox_mcp::catalog::{self, Module, Tier};
use nandi_proxmox_mcp::policy::{AliasMode, Settings};
use nandi_proxmox_mcp::registry::{Capabilities, Registry};

include!("pins/annotations.rs");

#[test]
fn every_tools_annotations_are_the_pinned_ones() {
    let settings = Settings {
        tier: Tier::Full,
        module: Module::Advanced,
        // Superseded reference tools are listed only with the aliases; they are pinned too.
        aliases: AliasMode::Listed,
        ..Settings::default()
    };
    let registry = Registry::build_for(&settings, Capabilities::ALL);
    let listed = registry.tools();
    let set = |names: &[&'static str]| names.iter().copied().collect::<BTreeSet<&str>>();
    let (writes, destructive, idempotent, open_world) = (
        set(WRITES),
        set(DESTRUCTIVE),
        set(IDEMPOTENT_WRITES),
        set(OPEN_WORLD),
    );
    let mut wrong = Vec::new();
    // The cross-cluster overview is listed only by a process serving several clusters
    // (tests/it/clusters.rs); every other row is listed here.
    for spec in catalog::all().filter(|spec| !spec.spans_clusters()) {
        let tool = listed
            .iter()
            .find(|t| t.name == spec.name)
            .unwrap_or_else(|| panic!("{} listed at full/advanced", spec.name));
        let a = tool.annotations.as_ref().expect("annotations");
        let writes_here = writes.contains(spec.name);
        let expect = [
            ("readOnlyHint", a.read_only_hint, Some(!writes_here)),
            (
                "destructiveHint",
                a.destructive_hint,
                writes_here.then(|| destructive.contains(spec.name)),
            ),
            (
                "idempotentHint",
                a.idempotent_hint,
                writes_here.then(|| idempotent.contains(spec.name)),
            ),
            (
                "openWorldHint",
                a.open_world_hint,
                Some(open_world.contains(spec.name)),
            ),
        ];
        for (hint, got, want) in expect {
            if got != want {
                wrong.push(format!("{}: {hint} is {got:?}, pinned {want:?}", spec.name));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Every pinned name is a tool (a renamed tool must be re-pinned).
    let names: BTreeSet<&str> = catalog::all().map(|s| s.name).collect();
    for pinned in WRITES.iter().chain(OPEN_WORLD) {
        assert!(names.contains(pinned), "{pinned} is pinned but not a tool");
    }
}

#[test]
fn start_and_resume_are_not_destructive_and_backups_are() {
    // Read from the listed tools themselves, not from the pins above.
    let settings = Settings {
        tier: Tier::Full,
        module: Module::Advanced,
        ..Settings::default()
    };
    let listed = Registry::build_for(&settings, Capabilities::ALL).tools();
    let hints = |name: &str| {
        let tool = listed.iter().find(|t| t.name == name).expect("listed");
        let a = tool.annotations.clone().expect("annotations");
        (a.destructive_hint, a.open_world_hint)
    };
    for name in [
        "pve_start_qemu_vm",
        "pve_resume_qemu_vm",
        "pve_start_lxc_container",
    ] {
        assert_eq!(hints(name).0, Some(false), "{name}");
    }
    for name in ["pve_run_backup", "pve_create_backup_job"] {
        assert_eq!(hints(name), (Some(true), Some(true)), "{name}");
    }
}
