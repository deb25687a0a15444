//! Prompt recipes: short, reusable instructions that chain the read-only tools.
//!
//! Invariant: a recipe is offered only when every tool it names is registered under the
//! current policy, so a listed prompt never asks the model for a tool it cannot call. The
//! names are the reference's (`cluster-health`, `guest-inventory`, `backup-audit`,
//! `troubleshoot-guest`), which users may already invoke.

use rmcp::model::{Prompt, PromptMessage, Role};

use crate::compact;
use crate::policy::Surface;
use crate::registry::Registry;

/// One recipe.
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    /// Wire name.
    pub name: &'static str,
    /// Human title.
    pub title: &'static str,
    /// One-line description for `prompts/list`.
    pub description: &'static str,
    /// Canonical tools the body relies on.
    pub requires: &'static [&'static str],
    /// The instruction sent as a user message.
    pub body: &'static str,
}

/// Every recipe, in list order.
pub const RECIPES: &[Recipe] = &[
    Recipe {
        name: "cluster-health",
        title: "Check cluster health",
        description: "Summarise node health, resource pressure and quorum, with a prioritised verdict.",
        requires: &[
            "pve_list_nodes",
            "pve_get_node_status",
            "pve_get_cluster_status",
        ],
        body: "Check the health of my Proxmox cluster. 1) Call pve_list_nodes and note which nodes are online. \
2) For each online node call pve_get_node_status and report CPU load, memory use and root filesystem use as percentages. \
3) Call pve_get_cluster_status and say whether the cluster is quorate (a standalone node has no cluster record and no quorum — that is normal). \
Finish with a short verdict, most urgent problem first. Report only what the tools returned; do not change anything.",
    },
    Recipe {
        name: "guest-inventory",
        title: "Inventory VMs and containers",
        description: "One table of every VM and container with node, status and memory.",
        requires: &[
            "pve_list_nodes",
            "pve_list_qemu_vms",
            "pve_list_lxc_containers",
        ],
        body: "Build an inventory of my Proxmox guests. Call pve_list_nodes, then pve_list_qemu_vms and pve_list_lxc_containers for each online node. \
Produce one table (ID, name, VM or CT, node, status, memory in GiB) sorted by node, then ID. \
Below it, flag stopped guests, guests without a name, and nodes that carry far more guests than others. \
List any node you could not read as unread. Do not change anything.",
    },
    Recipe {
        name: "backup-audit",
        title: "Find guests without backups",
        description: "Compare scheduled backup jobs with the guest list and name the uncovered guests.",
        requires: &[
            "pve_list_nodes",
            "pve_list_qemu_vms",
            "pve_list_lxc_containers",
            "pve_list_backup_jobs",
        ],
        body: "Audit backup coverage. Build the guest list with pve_list_nodes, pve_list_qemu_vms and pve_list_lxc_containers. \
Call pve_list_backup_jobs and work out which guests each enabled job selects (vmid lists, all, pool, exclude). \
Name every guest no enabled job covers. When you cannot tell, say \"unknown\", never \"covered\". \
Remind me that a schedule does not prove a backup succeeded. Do not change anything.",
    },
    Recipe {
        name: "troubleshoot-guest",
        title: "Troubleshoot one guest",
        description: "Locate a guest, report its state and recent failed tasks, and suggest the next check.",
        requires: &[
            "pve_list_nodes",
            "pve_list_qemu_vms",
            "pve_list_lxc_containers",
            "pve_list_tasks",
        ],
        body: "Help me troubleshoot one guest. If I have not given its ID, ask for it. Find its node with pve_list_nodes and the per-node lists \
(pve_list_qemu_vms, pve_list_lxc_containers). Report its status, CPU and memory allocation. \
Call pve_list_tasks for that node with the guest's vmid and quote any failed recent task. \
Give the most likely cause and the next check to run. Do not change anything.",
    },
];

/// The recipes whose tools are all registered.
pub fn available(registry: &Registry) -> impl Iterator<Item = &'static Recipe> + '_ {
    RECIPES.iter().filter(|recipe| {
        recipe
            .requires
            .iter()
            .all(|tool| registry.get(tool).is_some())
    })
}

/// The `prompts/list` entry of a recipe (no arguments).
pub fn listing(recipe: &Recipe) -> Prompt {
    Prompt::new(recipe.name, Some(recipe.description), None).with_title(recipe.title)
}

/// The messages `prompts/get` returns for a recipe.
///
/// On the compact surface the body is preceded by the two sentences that explain how the
/// tools it names are reached (through `pve_call_tool`).
pub fn messages(recipe: &Recipe, surface: Surface) -> Vec<PromptMessage> {
    let body = match surface {
        Surface::Full => recipe.body.to_owned(),
        Surface::Compact => format!("{}\n\n{}", compact::FLOW, recipe.body),
    };
    vec![PromptMessage::new_text(Role::User, body)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;
    use crate::policy::Settings;

    #[test]
    fn recipes_name_only_catalog_tools_and_are_unique() {
        let mut names = std::collections::BTreeSet::new();
        for recipe in RECIPES {
            assert!(names.insert(recipe.name));
            for tool in recipe.requires {
                assert!(catalog::find(tool).is_some(), "{}: {tool}", recipe.name);
                assert!(recipe.body.contains(tool), "{} names {tool}", recipe.name);
            }
        }
    }

    #[test]
    fn all_recipes_survive_read_only_and_drop_with_their_tools() {
        let registry = Registry::build(&Settings::default());
        assert_eq!(available(&registry).count(), RECIPES.len());
        let narrowed = Settings {
            blacklist: ["pve_list_backup_jobs".to_owned()].into(),
            ..Settings::default()
        };
        let registry = Registry::build(&narrowed);
        let names: Vec<&str> = available(&registry).map(|r| r.name).collect();
        assert!(!names.contains(&"backup-audit"));
        assert!(names.contains(&"cluster-health"));
    }
}
