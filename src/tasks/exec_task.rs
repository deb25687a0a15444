//! A guest-agent program as an MCP task: `pve_exec_qemu_guest_command` answers a task for
//! clients with the tasks extension, and `tasks/get` follows `agent/exec-status` for it.
//!
//! The id is `agentexec.<node>.<vmid>.<pid>.<created>.<seal>`: like a UPID-derived id it needs
//! no store and outlives the session. The seal is an HMAC-SHA256 of the rest under a key of this
//! server (derived from `PVE_APPROVAL_KEY_FILE` when set, so replicas sharing that key accept
//! each other's ids; else random per process). Invariants: only an id this server issued
//! decodes — a guessed or edited one (another VM, another pid) is unknown, so reading a guest
//! program's output always follows a person's approval of that program; and an id decodes only to
//! a node name, VMID and pid of the shapes Proxmox accepts, so nothing else reaches a path or a
//! query. Reading the status is the only request it can cause (the Proxmox API cannot stop a
//! guest program).

use std::time::Duration;

use ring::hmac;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::id::{IdError, check_age};
use crate::envelope::{ToolFailure, failure_from};
use crate::pve::{self, ApiRequest};

/// Prefix that tells exec ids from UPID-derived ones (a base64url UPID never holds a `.`).
const PREFIX: &str = "agentexec";

/// The key that seals exec ids (see [`super::seal`]): derived from the shared approval key
/// when set, so replicas accept each other's ids, else from this process's secret.
pub fn seal_key(shared: Option<&[u8]>) -> hmac::Key {
    super::seal::domain_key(shared, b"nandi-proxmox-mcp exec task id v1")
}

fn seal(key: &hmac::Key, body: &str) -> String {
    hex::encode(hmac::sign(key, body.as_bytes()).as_ref())
}

/// A decoded guest-agent task id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecHandle {
    /// Node of the VM.
    pub node: String,
    /// The VM.
    pub vmid: u32,
    /// The guest agent's pid of the program.
    pub pid: i64,
    /// When the MCP task was created, Unix seconds.
    pub created: i64,
}

impl ExecHandle {
    /// The handle of a program started now.
    pub fn new(node: &str, vmid: u32, pid: i64) -> ExecHandle {
        ExecHandle {
            node: node.to_owned(),
            vmid,
            pid,
            created: chrono::Utc::now().timestamp(),
        }
    }

    /// The wire form, sealed with `key` ([`seal_key`]).
    pub fn encode(&self, key: &hmac::Key) -> String {
        let body = format!(
            "{PREFIX}.{}.{}.{}.{}",
            self.node, self.vmid, self.pid, self.created
        );
        let mac = seal(key, &body);
        format!("{body}.{mac}")
    }

    /// Whether `id` is an exec id at all (then [`ExecHandle::decode`] decides).
    pub fn claims(id: &str) -> bool {
        id.starts_with(PREFIX) && id.as_bytes().get(PREFIX.len()) == Some(&b'.')
    }

    /// Decodes an id this server sealed with `key` and checks its age against `ttl`; any other
    /// id (forged, edited, another server's) is unknown.
    pub fn decode(id: &str, ttl: Duration, key: &hmac::Key) -> Result<ExecHandle, IdError> {
        let (body, mac) = id.rsplit_once('.').ok_or(IdError::Unknown)?;
        // `hmac::verify` compares in constant time: the seal is the secret part of an id.
        let tag = hex::decode(mac).map_err(|_| IdError::Unknown)?;
        hmac::verify(key, body.as_bytes(), &tag).map_err(|_| IdError::Unknown)?;
        let parts: Vec<&str> = body.split('.').collect();
        let [prefix, node, vmid, pid, created] = parts.as_slice() else {
            return Err(IdError::Unknown);
        };
        let node_ok = !node.is_empty()
            && node.len() <= 63
            && node.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if *prefix != PREFIX || !node_ok {
            return Err(IdError::Unknown);
        }
        let vmid: u32 = vmid
            .parse()
            .ok()
            .filter(|v| (100..=999_999_999).contains(v))
            .ok_or(IdError::Unknown)?;
        let pid: i64 = pid
            .parse()
            .ok()
            .filter(|p| *p >= 0)
            .ok_or(IdError::Unknown)?;
        let created: i64 = created.parse().map_err(|_| IdError::Unknown)?;
        check_age(created, ttl)?;
        Ok(ExecHandle {
            node: (*node).to_owned(),
            vmid,
            pid,
            created,
        })
    }

    /// Creation time in ISO 8601.
    pub fn created_at(&self) -> String {
        chrono::DateTime::from_timestamp(self.created, 0)
            .unwrap_or_default()
            .to_rfc3339()
    }

    /// One status read: `(exited, the tool's answer so far)`.
    pub async fn poll(
        &self,
        client: &pve::Client,
        cancel: &CancellationToken,
        exec_listed: bool,
        freeze: Option<&crate::effects::FreezeSwitch>,
    ) -> Result<(bool, Value), ToolFailure> {
        let path = format!(
            "/nodes/{}/qemu/{}/agent/exec-status",
            pve::encode_path_segment(&self.node),
            self.vmid
        );
        let request = ApiRequest::get(path).param("pid", self.pid.to_string());
        // Reading the output of a program a person approved: where this server lists the exec
        // tool (tier `full`), the status read is cleared for exactly what it is (a sensitive
        // read); elsewhere it is refused like any other sensitive read, and so it is while
        // changes are frozen (a sensitive read is beyond a plain read).
        let clearance = if exec_listed {
            crate::effects::classify_rest("GET", &request.path, &request.params).effects
        } else {
            crate::effects::EffectSet::READ
        };
        let status =
            crate::effects::with_clearance(clearance, freeze, client.call(request, cancel))
                .await
                .result
                .map_err(failure_from)?;
        Ok(render_status(self.pid, &status))
    }
}

/// Bytes of stdout and of stderr returned at most.
pub const OUTPUT_CAP: usize = 65_536;

/// One `agent/exec-status` answer as the tool returns it: `(exited, answer)`.
pub fn render_status(pid: i64, status: &Value) -> (bool, Value) {
    let exited = truthy(status.get("exited"));
    (exited, render(pid, status, exited))
}

/// Proxmox's loose booleans (`true`, `1`, `"1"`, `"true"`).
pub(crate) fn truthy(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0) != 0,
        Some(Value::String(s)) => s == "1" || s == "true",
        _ => false,
    }
}

/// The answer: pid, exit code, capped stdout/stderr with their truncation flags.
pub(crate) fn render(pid: i64, status: &Value, exited: bool) -> Value {
    let text = |key: &str| status.get(key).and_then(Value::as_str).unwrap_or_default();
    let (stdout, stdout_cut) = cap_text(text("out-data"), OUTPUT_CAP);
    let (stderr, stderr_cut) = cap_text(text("err-data"), OUTPUT_CAP);
    json!({
        "pid": pid,
        "exited": exited,
        "exitcode": status.get("exitcode").cloned().unwrap_or(Value::Null),
        "signal": status.get("signal").cloned().unwrap_or(Value::Null),
        "stdout": stdout,
        "stderr": stderr,
        "stdout_truncated": stdout_cut || truthy(status.get("out-truncated")),
        "stderr_truncated": stderr_cut || truthy(status.get("err-truncated")),
    })
}

/// Keeps at most `cap` bytes of `text` (on a character boundary); whether it cut.
fn cap_text(text: &str, cap: usize) -> (String, bool) {
    if text.len() <= cap {
        return (text.to_owned(), false);
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_owned(), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_other_shapes() {
        let key = seal_key(None);
        let handle = ExecHandle::new("pve01", 101, 4242);
        let id = handle.encode(&key);
        assert!(ExecHandle::claims(&id));
        assert_eq!(
            ExecHandle::decode(&id, Duration::from_secs(60), &key),
            Ok(handle)
        );
        for body in [
            "agentexec.pve01.101.4242",
            "agentexec.pve/01.101.4242.1",
            "agentexec.pve01.99.4242.1",
            "agentexec.pve01.101.-1.1",
            "agentexec.pve01.101.4242.x",
            "agentexec.a..b.101.1.1",
        ] {
            // Even correctly sealed, a malformed body is unknown.
            let sealed = format!("{body}.{}", seal(&key, body));
            assert_eq!(
                ExecHandle::decode(&sealed, Duration::from_secs(u64::MAX / 4), &key),
                Err(IdError::Unknown),
                "{body}"
            );
        }
        let mut old = ExecHandle::new("pve01", 101, 1);
        old.created -= 120;
        assert_eq!(
            ExecHandle::decode(&old.encode(&key), Duration::from_secs(60), &key),
            Err(IdError::Expired { ttl_secs: 60 })
        );
        assert!(!ExecHandle::claims("agentexecX.1"));
    }

    #[test]
    fn a_forged_or_edited_id_is_unknown() {
        let key = seal_key(None);
        let ttl = Duration::from_secs(600);
        let real = ExecHandle::new("pve01", 101, 4242).encode(&key);
        // Without a seal (the 0.5.0 shape), with another pid, another VM, a truncated seal.
        let unsealed = real.rsplit_once('.').unwrap().0.to_owned();
        let other_pid = real.replacen(".4242.", ".4243.", 1);
        let other_vm = real.replacen(".101.", ".102.", 1);
        let short = real[..real.len() - 1].to_owned();
        for forged in [unsealed, other_pid, other_vm, short] {
            assert_eq!(
                ExecHandle::decode(&forged, ttl, &key),
                Err(IdError::Unknown),
                "{forged}"
            );
        }
        // Another server's key (or another replica without the shared key) does not open it.
        let other = seal_key(Some(b"another server's shared approval key!!"));
        assert_eq!(
            ExecHandle::decode(&real, ttl, &other),
            Err(IdError::Unknown)
        );
    }

    #[test]
    fn replicas_sharing_the_approval_key_accept_each_others_ids() {
        let shared = b"a shared approval key of 32+ bytes!!";
        let id = ExecHandle::new("pve01", 101, 7).encode(&seal_key(Some(shared)));
        let ttl = Duration::from_secs(600);
        assert!(ExecHandle::decode(&id, ttl, &seal_key(Some(shared))).is_ok());
        // The derived key is not the approval key itself (domain separation).
        let raw = hmac::Key::new(hmac::HMAC_SHA256, shared);
        assert_eq!(ExecHandle::decode(&id, ttl, &raw), Err(IdError::Unknown));
    }
}
