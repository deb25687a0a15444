//! `GET /access/permissions`: the privileges of the calling token, per ACL path.
//!
//! Invariant: answers like Proxmox — a map of path → {privilege: 1}; the set is every privilege
//! (an administrator's token) unless the emulator was started with a restricted list, so a test
//! can see what a token without some privilege experiences.

use serde_json::{Map, Value, json};

use super::super::api::{ApiError, Call};

/// Every privilege Proxmox VE 9 defines.
pub(in super::super) const ALL_PRIVILEGES: &[&str] = &[
    "Datastore.Allocate",
    "Datastore.AllocateSpace",
    "Datastore.AllocateTemplate",
    "Datastore.Audit",
    "Group.Allocate",
    "Mapping.Audit",
    "Mapping.Modify",
    "Mapping.Use",
    "Permissions.Modify",
    "Pool.Allocate",
    "Pool.Audit",
    "Realm.Allocate",
    "Realm.AllocateUser",
    "SDN.Allocate",
    "SDN.Audit",
    "SDN.Use",
    "Sys.AccessNetwork",
    "Sys.Audit",
    "Sys.Console",
    "Sys.Incoming",
    "Sys.Modify",
    "Sys.PowerMgmt",
    "Sys.Syslog",
    "User.Modify",
    "VM.Allocate",
    "VM.Audit",
    "VM.Backup",
    "VM.Clone",
    "VM.Config.CDROM",
    "VM.Config.CPU",
    "VM.Config.Cloudinit",
    "VM.Config.Disk",
    "VM.Config.HWType",
    "VM.Config.Memory",
    "VM.Config.Network",
    "VM.Config.Options",
    "VM.Console",
    "VM.GuestAgent.Audit",
    "VM.GuestAgent.FileRead",
    "VM.GuestAgent.FileSystemMgmt",
    "VM.GuestAgent.FileWrite",
    "VM.GuestAgent.Unrestricted",
    "VM.Migrate",
    "VM.PowerMgmt",
    "VM.Replicate",
    "VM.Snapshot",
    "VM.Snapshot.Rollback",
];

/// `GET /access/permissions`.
pub(in super::super) fn list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let privileges: Map<String, Value> = match &call.st.privileges {
        Some(list) => list.iter().map(|p| (p.clone(), json!(1))).collect(),
        None => ALL_PRIVILEGES
            .iter()
            .map(|p| ((*p).to_owned(), json!(1)))
            .collect(),
    };
    let path = call.str("path").unwrap_or("/").to_owned();
    let mut out = Map::new();
    out.insert("/".into(), Value::Object(privileges.clone()));
    if path != "/" {
        out.insert(path, Value::Object(privileges));
    }
    Ok(Value::Object(out))
}
