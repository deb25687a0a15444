//! The peer-surface tools (tested in `tests/peer_*.rs`), so other suites that enumerate a
//! category can leave them to those tests.

/// Every tool the peer-surface REST and composite work added.
pub const PEER_TOOLS: &[&str] = &[
    "pve_node_power",
    "pve_create_console_ticket",
    "pve_inventory_overview",
    "pve_capabilities",
    "pve_get_ceph_status",
    "pve_list_sdn_zones",
    "pve_list_sdn_vnets",
    "pve_list_pci_mappings",
    "pve_get_pci_mapping",
    "pve_create_pci_mapping",
    "pve_update_pci_mapping",
    "pve_delete_pci_mapping",
    "pve_list_cloudinit_snippets",
    "pve_download_to_storage",
    "pve_qemu_agent_ping",
    "pve_diagnose_qemu_guest_agent",
    "pve_diagnose_qemu_boot",
    "pve_qemu_agent_file_read",
    "pve_qemu_agent_file_write",
];
