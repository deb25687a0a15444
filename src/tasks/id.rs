//! MCP task ids derived from the Proxmox task they stand for.
//!
//! An id is `<base64url(UPID)>.<created, Unix seconds>.<tool>`: the UPID names its node,
//! so the id needs no shared store and outlives the session that created it; the creation
//! time lets any server process apply the TTL. Invariant: an id decodes only to a UPID
//! that passes [`Upid::parse`] and a known tool name, so nothing else ever reaches a
//! Proxmox path. The id is a handle, not a capability: it grants nothing that
//! `pve_get_task_status` (and, for cancelling, an approved `pve_stop_task`) would not.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::pve::Upid;

/// A decoded task id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskHandle {
    /// The Proxmox task.
    pub upid: Upid,
    /// When the MCP task was created, Unix seconds.
    pub created: i64,
    /// The tool whose call created it.
    pub tool: String,
}

/// Why an id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Not an id this server issued.
    #[error("unknown task id")]
    Unknown,
    /// Issued, but older than the TTL.
    #[error("task id expired (older than {ttl_secs} s)")]
    Expired {
        /// The TTL in force.
        ttl_secs: u64,
    },
}

impl TaskHandle {
    /// The id for `upid`, created now by `tool`.
    pub fn new(upid: Upid, tool: &str) -> TaskHandle {
        TaskHandle {
            upid,
            created: chrono::Utc::now().timestamp(),
            tool: tool.to_owned(),
        }
    }

    /// The wire form.
    pub fn encode(&self) -> String {
        format!(
            "{}.{}.{}",
            URL_SAFE_NO_PAD.encode(self.upid.to_string()),
            self.created,
            self.tool
        )
    }

    /// Decodes an id and checks its age against `ttl`.
    pub fn decode(id: &str, ttl: Duration) -> Result<TaskHandle, IdError> {
        let mut parts = id.splitn(3, '.');
        let (Some(upid), Some(created), Some(tool)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(IdError::Unknown);
        };
        let upid = URL_SAFE_NO_PAD
            .decode(upid)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|text| Upid::parse(&text).ok())
            .ok_or(IdError::Unknown)?;
        let created: i64 = created.parse().map_err(|_| IdError::Unknown)?;
        if tool.is_empty() || !tool.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(IdError::Unknown);
        }
        check_age(created, ttl)?;
        Ok(TaskHandle {
            upid,
            created,
            tool: tool.to_owned(),
        })
    }

    /// Creation time in ISO 8601.
    pub fn created_at(&self) -> String {
        chrono::DateTime::from_timestamp(self.created, 0)
            .unwrap_or_default()
            .to_rfc3339()
    }
}

/// An id created more than a minute in the future was not issued by this clock; one older
/// than `ttl` has expired.
pub fn check_age(created: i64, ttl: Duration) -> Result<(), IdError> {
    let age = chrono::Utc::now().timestamp().saturating_sub(created);
    if age < -60 {
        return Err(IdError::Unknown);
    }
    if u64::try_from(age).unwrap_or(0) > ttl.as_secs() {
        return Err(IdError::Expired {
            ttl_secs: ttl.as_secs(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPID: &str = "UPID:pve01:0000C0DE:0001E240:65A1B2C3:qmclone:100:svc@pve!mcp:";

    #[test]
    fn round_trips_and_needs_no_store() {
        let handle = TaskHandle::new(Upid::parse(UPID).unwrap(), "pve_qemu_clone");
        let id = handle.encode();
        assert!(!id.contains(':') && !id.contains('/'), "{id}");
        let back = TaskHandle::decode(&id, Duration::from_secs(60)).unwrap();
        assert_eq!(back, handle);
        assert_eq!(back.upid.to_string(), UPID);
    }

    #[test]
    fn expired_and_forged_ids_are_refused() {
        let mut handle = TaskHandle::new(Upid::parse(UPID).unwrap(), "pve_qemu_clone");
        handle.created -= 120;
        assert_eq!(
            TaskHandle::decode(&handle.encode(), Duration::from_secs(60)),
            Err(IdError::Expired { ttl_secs: 60 })
        );
        let not_a_upid = format!("{}.1.pve_qemu_clone", URL_SAFE_NO_PAD.encode("/etc/passwd"));
        for bad in [
            "",
            "abc",
            "a.b.c",
            not_a_upid.as_str(),
            &format!("{}.x.pve_qemu_clone", URL_SAFE_NO_PAD.encode(UPID)),
            &format!("{}.1.bad/tool", URL_SAFE_NO_PAD.encode(UPID)),
        ] {
            assert_eq!(
                TaskHandle::decode(bad, Duration::from_secs(u64::MAX / 4)),
                Err(IdError::Unknown),
                "{bad}"
            );
        }
    }
}
