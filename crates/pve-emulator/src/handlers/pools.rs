//! Pool endpoints: list pools (or one pool with its members), create, update membership,
//! delete — in PVE 9's `/pools?poolid=` form and the deprecated `/pools/{poolid}` form.
//!
//! Invariants: a guest belongs to at most one pool (moving needs `allow-move`), members
//! must exist, and a pool with members cannot be deleted — Proxmox's rules — so a
//! membership change is visible to every later read; `type` without `poolid` is refused
//! as PVE 9 refuses it (the member filter needs a pool).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::api::{ApiError, Call};
use super::super::state::Pool;
use super::cluster::guest_resource;

fn exists(call: &Call<'_>, id: &str) -> Result<(), ApiError> {
    if call.st.pools.iter().any(|p| p.id == id) {
        Ok(())
    } else {
        Err(ApiError::server(format!("pool '{id}' does not exist")))
    }
}

/// The pool addressed: the `{poolid}` capture of the deprecated routes, else the
/// `poolid` parameter of the `/pools` routes.
fn pool_id(call: &Call<'_>) -> String {
    match call.cap("poolid") {
        "" => call.str("poolid").unwrap_or_default().to_string(),
        captured => captured.to_string(),
    }
}

/// `GET /pools`: every pool (poolid, comment), or with `poolid` a one-entry list that
/// also carries the members; `type` filters members and so requires `poolid`.
pub(in super::super) fn list(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let Some(id) = call.str("poolid").map(String::from) else {
        if call.str("type").is_some() {
            let mut errors = BTreeMap::new();
            errors.insert(
                "poolid".to_string(),
                "missing property - 'type' requires this property".to_string(),
            );
            return Err(ApiError::params(errors));
        }
        let rows = call
            .st
            .pools
            .iter()
            .map(|p| json!({ "poolid": p.id, "comment": p.comment }))
            .collect();
        return Ok(Value::Array(rows));
    };
    let mut pool = get(call)?;
    if let Some(map) = pool.as_object_mut() {
        map.insert("poolid".into(), json!(id));
    }
    Ok(Value::Array(vec![pool]))
}

/// `GET /pools/{poolid}`: comment and members (guests, then storages per node).
pub(in super::super) fn get(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = pool_id(call);
    exists(call, &id)?;
    let wanted = call.str("type");
    let st = &*call.st;
    let mut members: Vec<Value> = st
        .guests
        .iter()
        .filter(|g| g.pool.as_deref() == Some(id.as_str()))
        .filter(|g| wanted.is_none_or(|t| t == g.kind.word()))
        .map(guest_resource)
        .collect();
    if wanted.is_none_or(|t| t == "storage") {
        let storages = st.infra.pool_storages.get(&id).cloned().unwrap_or_default();
        for storage in storages
            .iter()
            .filter_map(|s| st.storages.iter().find(|d| d.id == *s))
        {
            for node in &st.nodes {
                members.push(json!({
                    "id": format!("storage/{}/{}", node.name, storage.id),
                    "type": "storage",
                    "storage": storage.id,
                    "node": node.name,
                    "plugintype": storage.kind,
                    "content": storage.content,
                    "status": "available",
                    "disk": storage.used,
                    "maxdisk": storage.total,
                }));
            }
        }
    }
    let comment = st
        .pools
        .iter()
        .find(|p| p.id == id)
        .map(|p| p.comment.clone())
        .unwrap_or_default();
    Ok(json!({ "comment": comment, "members": members }))
}

/// `POST /pools`.
pub(in super::super) fn create(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = call.str("poolid").unwrap_or_default().to_string();
    if call.st.pools.iter().any(|p| p.id == id) {
        return Err(ApiError::server(format!("pool '{id}' already exists")));
    }
    let comment = call.str("comment").unwrap_or_default().to_string();
    call.st.pools.push(Pool { id, comment });
    Ok(Value::Null)
}

fn split_list(call: &Call<'_>, name: &str) -> Vec<String> {
    call.str(name)
        .unwrap_or("")
        .split([',', ';', ' '])
        .filter(|v| !v.is_empty())
        .map(String::from)
        .collect()
}

/// `PUT /pools` (or `/pools/{poolid}`): comment, and members added (or removed with
/// `delete`).
pub(in super::super) fn update(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = pool_id(call);
    exists(call, &id)?;
    let remove = call.flag("delete");
    let allow_move = call.flag("allow-move");
    let vms: Vec<u32> = split_list(call, "vms")
        .iter()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let storages = split_list(call, "storage");
    // Check everything first, so a refused update changes nothing.
    for vmid in &vms {
        let Some(guest) = call.st.guests.iter().find(|g| g.vmid == *vmid) else {
            return Err(ApiError::server(format!("VM {vmid} does not exist")));
        };
        if !remove && !allow_move && guest.pool.as_deref().is_some_and(|p| p != id) {
            return Err(ApiError::server(format!(
                "VM {vmid} is already a pool member"
            )));
        }
    }
    if let Some(missing) = storages
        .iter()
        .find(|s| !call.st.storages.iter().any(|d| d.id == **s))
    {
        return Err(ApiError::server(format!(
            "storage '{missing}' does not exist"
        )));
    }
    let comment = call.str("comment").map(String::from);
    let st = &mut *call.st;
    if let (Some(comment), Some(pool)) = (comment, st.pools.iter_mut().find(|p| p.id == id)) {
        pool.comment = comment;
    }
    for guest in st.guests.iter_mut().filter(|g| vms.contains(&g.vmid)) {
        if remove {
            if guest.pool.as_deref() == Some(id.as_str()) {
                guest.pool = None;
            }
        } else {
            guest.pool = Some(id.clone());
        }
    }
    let members = st.infra.pool_storages.entry(id).or_default();
    for storage in storages {
        if remove {
            members.retain(|m| *m != storage);
        } else if !members.contains(&storage) {
            members.push(storage);
        }
    }
    Ok(Value::Null)
}

/// `DELETE /pools` (or `/pools/{poolid}`): only an empty pool.
pub(in super::super) fn remove(call: &mut Call<'_>) -> Result<Value, ApiError> {
    let id = pool_id(call);
    exists(call, &id)?;
    let st = &mut *call.st;
    let has_guests = st
        .guests
        .iter()
        .any(|g| g.pool.as_deref() == Some(id.as_str()));
    let has_storage = st
        .infra
        .pool_storages
        .get(&id)
        .is_some_and(|m| !m.is_empty());
    if has_guests || has_storage {
        return Err(ApiError::server(format!("pool '{id}' is not empty")));
    }
    st.pools.retain(|p| p.id != id);
    st.infra.pool_storages.remove(&id);
    Ok(Value::Null)
}
