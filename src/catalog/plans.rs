//! Plans: several changes previewed together, approved once, applied in order and rolled back
//! on failure (`pipeline::plan`). `pve_apply_plan` takes the steps the model proposes;
//! `pve_provision_qemu_guest` is the built-in plan: a template becomes a reachable guest.
//!
//! Invariant: a plan row sends nothing itself; every request comes from one of its steps, each
//! a row of its own validated, gated and audited as that row (`pipeline::plan`), so the plan
//! can never do what its steps' rows could not.

use super::types::{Backend, Category, CompositeOp, Effect, Param, ParamKind, Tier, ToolSpec};

/// The plan rows.
pub(super) const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pve_apply_plan",
        title: "Apply a plan of several calls",
        description: "Several tool calls judged together, asked once, run in order; a failed step undoes the earlier ones. A value \"$1.newid\" is step 1's argument newid.",
        category: Category::Tasks,
        tier: Tier::ReadExecute,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        params: &[Param::arg(
            "steps",
            ParamKind::ObjectArray,
            "In order: {\"tool\": name, \"arguments\": {...}}.",
        )
        .range(1, 20)
        .required()],
        backend: Backend::Composite(CompositeOp::ApplyPlan),
        timeout_ms: 1_800_000,
        ..ToolSpec::BASE
    },
    ToolSpec {
        name: "pve_provision_qemu_guest",
        title: "Provision a VM from a template",
        description: "Clone a template, grow its disk, configure, start, await its agent, report IPs: one approval; a failed step undoes the earlier ones.",
        category: Category::Qemu,
        tier: Tier::Full,
        effect: Effect::Write {
            destructive: true,
            idempotent: false,
        },
        params: &[
            Param::arg("node", ParamKind::String, "Template's node.")
                .matching(super::params::NODE_PATTERN)
                .required(),
            Param::arg("vmid", ParamKind::Integer, "The template VMID.")
                .range(100, 999_999_999)
                .required(),
            Param::arg("newid", ParamKind::Integer, "Default: next free.").range(100, 999_999_999),
            Param::arg("name", ParamKind::String, "The VM name."),
            Param::arg("full", ParamKind::Boolean, "A full clone."),
            Param::arg("cores", ParamKind::Integer, "CPU cores.").range(1, 8192),
            Param::arg("memory", ParamKind::Integer, "Memory in MiB.").range(16, 8_388_608),
            Param::arg("grow", ParamKind::String, "scsi0 growth, e.g. +10G."),
            Param::arg("ciuser", ParamKind::String, "Cloud-init user."),
            Param::arg("sshkeys", ParamKind::String, "SSH public keys."),
            Param::arg("ipconfig0", ParamKind::String, "e.g. ip=dhcp (net0)."),
            Param::arg("tags", ParamKind::String, "Tags, e.g. a;b."),
        ],
        backend: Backend::Composite(CompositeOp::ProvisionQemu),
        timeout_ms: 1_800_000,
        ..ToolSpec::BASE
    },
];
