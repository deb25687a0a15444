//! Route types, the builders route tables are written with, and the
//! parameter value lists several tables share.
//!
//! Invariant: this module depends only on `api` (parameter and call types),
//! never on the tables or the dispatcher, so `dispatch` → `routes*` → `route`
//! stays one-way.

use serde_json::Value;

use super::api::{ApiError, Call, Param};

/// A route handler: runs with the state locked, returns the `data` value.
pub(super) type Handler = fn(&mut Call<'_>) -> Result<Value, ApiError>;

/// HTTP methods the API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Method {
    /// GET: read; parameters in the query string.
    Get,
    /// POST: create/act; parameters in the form body.
    Post,
    /// PUT: update; parameters in the form body.
    Put,
    /// DELETE: remove; parameters in the query string.
    Delete,
}

impl Method {
    pub(super) fn name(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }
}

/// One API endpoint.
pub(super) struct Route {
    /// HTTP method.
    pub method: Method,
    /// Path after `/api2/json`, with `{name}` captures for whole segments.
    pub pattern: &'static str,
    /// Parameters the Proxmox schema accepts besides the path captures.
    pub params: &'static [Param],
    /// What answers it.
    pub handler: Handler,
}

/// A `GET` route.
pub(super) const fn get(
    pattern: &'static str,
    params: &'static [Param],
    handler: Handler,
) -> Route {
    Route {
        method: Method::Get,
        pattern,
        params,
        handler,
    }
}

/// A `POST` route.
pub(super) const fn post(
    pattern: &'static str,
    params: &'static [Param],
    handler: Handler,
) -> Route {
    Route {
        method: Method::Post,
        pattern,
        params,
        handler,
    }
}

/// A `PUT` route.
#[allow(dead_code)] // No PUT route yet; kept so adding one stays a one-liner.
pub(super) const fn put(
    pattern: &'static str,
    params: &'static [Param],
    handler: Handler,
) -> Route {
    Route {
        method: Method::Put,
        pattern,
        params,
        handler,
    }
}

/// A `DELETE` route.
pub(super) const fn delete(
    pattern: &'static str,
    params: &'static [Param],
    handler: Handler,
) -> Route {
    Route {
        method: Method::Delete,
        pattern,
        params,
        handler,
    }
}

/// Interface types `GET /nodes/{node}/network` filters by.
pub(super) const NETWORK_TYPES: &[&str] = &[
    "bridge",
    "bond",
    "eth",
    "alias",
    "vlan",
    "fabric",
    "OVSBridge",
    "OVSBond",
    "OVSPort",
    "OVSIntPort",
    "vnet",
    "any_bridge",
    "any_local_bridge",
    "include_sdn",
];

/// Storage types Proxmox knows.
pub(super) const STORAGE_TYPES: &[&str] = &[
    "btrfs",
    "cephfs",
    "cifs",
    "dir",
    "esxi",
    "iscsi",
    "iscsidirect",
    "lvm",
    "lvmthin",
    "nfs",
    "pbs",
    "rbd",
    "zfs",
    "zfspool",
];
