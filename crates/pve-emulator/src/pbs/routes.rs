//! The PBS route table and the dispatcher that matches a request against it.
//!
//! Invariant: every row is a method and path template of the pinned PBS 4 schema and
//! declares only parameters the schema declares for it (checked by `tests/schema.rs`); a
//! request reaches a handler only when a row matches (else 404, as PBS answers), its
//! `{node}` is the node or `localhost`, no denial covers its path, the token holds one of
//! the row's privileges, and its parameters pass the row's declaration.

use std::sync::Mutex;

use serde_json::{Map, Value};

use super::api::{self, BACKUP_TYPES, Call, PbsError, Route, flag, int, one_of, s, text_response};
use super::state::PbsState;
use super::{ops, store, tasks};

const AUDIT: &[&str] = &["Datastore.Audit", "Datastore.Backup"];
const MODIFY: &[&str] = &["Datastore.Modify", "Datastore.Backup"];
const PRUNE: &[&str] = &["Datastore.Modify", "Datastore.Prune"];
const VERIFY: &[&str] = &["Datastore.Verify", "Datastore.Backup"];
const NONE: &[&str] = &[];

const fn get(
    pattern: &'static str,
    params: &'static [api::Param],
    privs: &'static [&'static str],
    handler: api::Handler,
) -> Route {
    Route {
        method: "GET",
        pattern,
        params,
        privs,
        handler,
    }
}
const fn post(
    pattern: &'static str,
    params: &'static [api::Param],
    privs: &'static [&'static str],
    handler: api::Handler,
) -> Route {
    Route {
        method: "POST",
        pattern,
        params,
        privs,
        handler,
    }
}
const fn put(
    pattern: &'static str,
    params: &'static [api::Param],
    privs: &'static [&'static str],
    handler: api::Handler,
) -> Route {
    Route {
        method: "PUT",
        pattern,
        params,
        privs,
        handler,
    }
}
const fn delete(
    pattern: &'static str,
    params: &'static [api::Param],
    privs: &'static [&'static str],
    handler: api::Handler,
) -> Route {
    Route {
        method: "DELETE",
        pattern,
        params,
        privs,
        handler,
    }
}

/// ns, backup-type, backup-id, backup-time: how one snapshot is addressed.
const SNAPSHOT: &[api::Param] = &[
    s("ns"),
    one_of("backup-type", BACKUP_TYPES).required(),
    s("backup-id").required(),
    int("backup-time").at_least(1).required(),
];

/// Every route the emulator serves.
pub(super) static ROUTES: &[Route] = &[
    get("/version", &[], NONE, store::version),
    get(
        "/access/permissions",
        &[s("path"), s("auth-id")],
        NONE,
        store::permissions,
    ),
    get("/admin/datastore", &[], NONE, store::datastores),
    get(
        "/admin/datastore/{store}/status",
        &[flag("verbose")],
        AUDIT,
        store::status,
    ),
    get("/status/datastore-usage", &[], NONE, store::datastore_usage),
    get(
        "/admin/datastore/{store}/namespace",
        &[s("parent"), int("max-depth").at_least(0).at_most(7)],
        AUDIT,
        store::namespaces,
    ),
    get(
        "/admin/datastore/{store}/groups",
        &[s("ns")],
        AUDIT,
        store::groups,
    ),
    get(
        "/admin/datastore/{store}/snapshots",
        &[s("ns"), one_of("backup-type", BACKUP_TYPES), s("backup-id")],
        AUDIT,
        store::snapshots,
    ),
    delete(
        "/admin/datastore/{store}/snapshots",
        SNAPSHOT,
        PRUNE,
        store::delete_snapshot,
    ),
    get(
        "/admin/datastore/{store}/protected",
        SNAPSHOT,
        AUDIT,
        store::get_protected,
    ),
    put(
        "/admin/datastore/{store}/protected",
        &[
            s("ns"),
            one_of("backup-type", BACKUP_TYPES).required(),
            s("backup-id").required(),
            int("backup-time").at_least(1).required(),
            flag("protected").required(),
        ],
        MODIFY,
        store::set_protected,
    ),
    get(
        "/admin/datastore/{store}/notes",
        SNAPSHOT,
        AUDIT,
        store::get_notes,
    ),
    put(
        "/admin/datastore/{store}/notes",
        &[
            s("ns"),
            one_of("backup-type", BACKUP_TYPES).required(),
            s("backup-id").required(),
            int("backup-time").at_least(1).required(),
            s("notes").required(),
        ],
        MODIFY,
        store::set_notes,
    ),
    get(
        "/admin/datastore/{store}/gc",
        &[],
        &["Datastore.Audit"],
        store::gc_status,
    ),
    post(
        "/admin/datastore/{store}/gc",
        &[],
        &["Datastore.Modify"],
        ops::start_gc,
    ),
    post(
        "/admin/datastore/{store}/verify",
        &[
            s("ns"),
            one_of("backup-type", BACKUP_TYPES),
            s("backup-id"),
            int("backup-time").at_least(1),
            flag("ignore-verified"),
            int("outdated-after").at_least(0),
            int("max-depth").at_least(0).at_most(7),
        ],
        VERIFY,
        ops::verify,
    ),
    post(
        "/admin/datastore/{store}/prune",
        &[
            s("ns"),
            one_of("backup-type", BACKUP_TYPES).required(),
            s("backup-id").required(),
            int("keep-last").at_least(1),
            int("keep-hourly").at_least(1),
            int("keep-daily").at_least(1),
            int("keep-weekly").at_least(1),
            int("keep-monthly").at_least(1),
            int("keep-yearly").at_least(1),
            flag("dry-run"),
        ],
        PRUNE,
        ops::prune,
    ),
    get(
        "/admin/sync",
        &[s("store")],
        &["Datastore.Audit"],
        ops::sync_jobs,
    ),
    post(
        "/admin/sync/{id}/run",
        &[],
        &["Datastore.Backup"],
        ops::run_sync,
    ),
    get("/admin/verify", &[s("store")], AUDIT, ops::verify_jobs),
    post("/admin/verify/{id}/run", &[], VERIFY, ops::run_verify_job),
    get(
        "/nodes/{node}/tasks",
        &[
            int("start"),
            int("limit"),
            flag("running"),
            flag("errors"),
            s("store"),
            s("typefilter"),
            s("userfilter"),
            int("since"),
            int("until"),
        ],
        NONE,
        tasks::list,
    ),
    get(
        "/nodes/{node}/tasks/{upid}/status",
        &[],
        NONE,
        tasks::status,
    ),
    get(
        "/nodes/{node}/tasks/{upid}/log",
        &[
            int("start").at_least(0),
            int("limit").at_least(0),
            flag("test-status"),
            flag("download"),
        ],
        NONE,
        tasks::log,
    ),
    delete("/nodes/{node}/tasks/{upid}", &[], NONE, tasks::stop),
];

/// Matches a pattern against decoded path segments, returning the captures.
fn match_pattern(
    pattern: &'static str,
    segments: &[String],
) -> Option<Vec<(&'static str, String)>> {
    let mut parts = pattern.split('/').filter(|p| !p.is_empty());
    let mut captures = Vec::new();
    for segment in segments {
        let part = parts.next()?;
        match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Some(name) => captures.push((name, segment.clone())),
            None if part == segment => {}
            None => return None,
        }
    }
    if parts.next().is_some() {
        return None;
    }
    Some(captures)
}

/// The route serving `method` on `segments`, literal segments winning over captures.
pub(super) fn find(
    method: &str,
    segments: &[String],
) -> Option<(&'static Route, Vec<(&'static str, String)>)> {
    ROUTES
        .iter()
        .filter(|r| r.method == method)
        .filter_map(|r| match_pattern(r.pattern, segments).map(|c| (r, c)))
        .min_by_key(|(_, captures)| captures.len())
}

/// Answers one authenticated request of `caller` (`path` is decoded, after `/api2/json`).
pub(super) fn dispatch(
    state: &Mutex<PbsState>,
    caller: &str,
    method: &str,
    path: &str,
    segments: &[String],
    params: Vec<(String, String)>,
) -> axum::response::Response {
    let Some((route, captures)) = find(method, segments) else {
        return PbsError::not_found(&format!("/api2/json{path}")).into_response();
    };
    let mut st = crate::lock(state);
    st.settle();
    if let Some((_, node)) = captures.iter().find(|(n, _)| *n == "node")
        && node != &st.node
        && node != "localhost"
    {
        return PbsError::param("node", &format!("no such node '{node}'")).into_response();
    }
    if st.denials.iter().any(|d| path.starts_with(d.as_str()))
        || (!route.privs.is_empty() && !route.privs.iter().any(|p| st.has(p)))
    {
        tracing::debug!(%method, %path, "PBS emulator permission check failed");
        return PbsError::forbidden().into_response();
    }
    let implicit: Vec<&str> = captures.iter().map(|(n, _)| *n).collect();
    if let Err(e) = api::validate(route.params, &implicit, &params) {
        return e.into_response();
    }
    let mut call = Call::new(&mut st, caller.to_owned(), captures, params);
    match (route.handler)(&mut call) {
        Err(e) => {
            tracing::debug!(%method, %path, status = e.status, "PBS emulator API error");
            e.into_response()
        }
        Ok(data) => {
            let mut envelope = Map::new();
            envelope.insert("data".into(), data);
            envelope.append(&mut call.attribs);
            text_response(200, Value::Object(envelope).to_string())
        }
    }
}
