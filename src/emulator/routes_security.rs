//! Security routes: users, groups, roles, ACLs, realms, API tokens, and the cluster and
//! guest firewalls.
//!
//! Invariant: each route declares exactly the parameters Proxmox's schema accepts for
//! it, so a tool that sends anything else is refused with a 400 like pveproxy does.

use super::api::s;
use super::dispatch::{Route, get};
use super::handlers::permissions;

/// Routes of this table (see `routes::TABLES`).
pub(super) static ROUTES: &[Route] = &[get(
    "/access/permissions",
    &[s("path"), s("userid")],
    permissions::list,
)];
