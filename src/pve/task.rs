//! Proxmox task identifiers (UPIDs): parsing and validation.
//!
//! A UPID names a background task and the node that runs it:
//! `UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:` (pid and starttime 8 hex digits,
//! pstart 8 or 9). Invariant: [`Upid::parse`] accepts exactly what Proxmox's own decoder accepts,
//! so a `upid` argument that passes here is well-formed and its `node` can be compared with the
//! node a caller names before any request is sent.

use std::fmt;
use std::str::FromStr;

/// A parsed Proxmox task id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Upid {
    /// Node that runs the task.
    pub node: String,
    /// Process id of the worker.
    pub pid: u32,
    /// Process start time in clock ticks since boot (may need 9 hex digits on long uptimes).
    pub pstart: u64,
    /// Task start, seconds since the Unix epoch.
    pub starttime: i64,
    /// Task type, e.g. `qmstart`, `vzdump`.
    pub kind: String,
    /// Object the task works on (often a VMID); may be empty.
    pub id: String,
    /// User (or `user@realm!token`) that started the task.
    pub user: String,
}

/// Why a string is not a valid UPID.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a valid Proxmox task id (UPID:node:pid:pstart:starttime:type:id:user:): {reason}")]
pub struct UpidError {
    reason: String,
}

impl UpidError {
    fn new(reason: impl Into<String>) -> UpidError {
        UpidError {
            reason: reason.into(),
        }
    }

    /// The specific problem found.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl Upid {
    /// Parses a UPID string, checking every field's shape.
    pub fn parse(s: &str) -> Result<Upid, UpidError> {
        let parts: Vec<&str> = s.split(':').collect();
        if parts.first() != Some(&"UPID") {
            return Err(UpidError::new("it must start with 'UPID:'"));
        }
        if parts.len() != 9 {
            return Err(UpidError::new(format!(
                "expected 8 ':'-terminated fields after 'UPID', found {}",
                parts.len().saturating_sub(1)
            )));
        }
        if !parts[8].is_empty() {
            return Err(UpidError::new("it must end with ':'"));
        }
        let node = parts[1];
        if !is_node_name(node) {
            return Err(UpidError::new(format!("invalid node name {node:?}")));
        }
        let pid = hex_field(parts[2], 8, 8, "pid")?;
        let pstart = hex_field(parts[3], 8, 9, "pstart")?;
        let starttime = hex_field(parts[4], 8, 8, "starttime")?;
        let kind = parts[5];
        let id = parts[6];
        let user = parts[7];
        if kind.is_empty() || has_space(kind) {
            return Err(UpidError::new("the task type is empty or contains spaces"));
        }
        if has_space(id) {
            return Err(UpidError::new("the task object id contains spaces"));
        }
        if user.is_empty() || has_space(user) {
            return Err(UpidError::new("the user is empty or contains spaces"));
        }
        Ok(Upid {
            node: node.to_owned(),
            // 8 hex digits always fit in u32; i64 holds any 8-digit starttime.
            pid: u32::try_from(pid).map_err(|_| UpidError::new("pid out of range"))?,
            pstart,
            starttime: i64::try_from(starttime)
                .map_err(|_| UpidError::new("starttime out of range"))?,
            kind: kind.to_owned(),
            id: id.to_owned(),
            user: user.to_owned(),
        })
    }
}

impl FromStr for Upid {
    type Err = UpidError;

    fn from_str(s: &str) -> Result<Upid, UpidError> {
        Upid::parse(s)
    }
}

/// Canonical form as Proxmox writes it (upper-case hex, zero-padded to 8 digits).
impl fmt::Display for Upid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "UPID:{}:{:08X}:{:08X}:{:08X}:{}:{}:{}:",
            self.node, self.pid, self.pstart, self.starttime, self.kind, self.id, self.user
        )
    }
}

/// Proxmox node names: letters, digits and inner hyphens (a DNS label).
fn is_node_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
        }
        _ => false,
    }
}

fn has_space(s: &str) -> bool {
    s.chars().any(char::is_whitespace)
}

fn hex_field(s: &str, min: usize, max: usize, name: &str) -> Result<u64, UpidError> {
    if s.len() < min || s.len() > max || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        let digits = if min == max {
            format!("{min}")
        } else {
            format!("{min} or {max}")
        };
        return Err(UpidError::new(format!(
            "{name} must be {digits} hex digits, got {s:?}"
        )));
    }
    u64::from_str_radix(s, 16).map_err(|_| UpidError::new(format!("{name} is not hexadecimal")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "UPID:pve01:0000C0DE:0001E240:65A1B2C3:qmstart:100:root@pam:";

    #[test]
    fn parses_a_typical_upid() {
        let upid = Upid::parse(SAMPLE).unwrap();
        assert_eq!(upid.node, "pve01");
        assert_eq!(upid.pid, 0xC0DE);
        assert_eq!(upid.pstart, 0x1E240);
        assert_eq!(upid.starttime, 0x65A1B2C3);
        assert_eq!(upid.kind, "qmstart");
        assert_eq!(upid.id, "100");
        assert_eq!(upid.user, "root@pam");
        assert_eq!(upid.to_string(), SAMPLE);
        assert_eq!(SAMPLE.parse::<Upid>().unwrap(), upid);
    }

    #[test]
    fn accepts_empty_id_token_user_lowercase_hex_and_long_pstart() {
        let upid =
            Upid::parse("UPID:node-2:0012abcd:1000000ab:65a1b2c3:aptupdate::svc@pve!mcp:").unwrap();
        assert_eq!(upid.node, "node-2");
        assert_eq!(upid.id, "");
        assert_eq!(upid.user, "svc@pve!mcp");
        assert_eq!(upid.pstart, 0x1_0000_00ab);
        assert_eq!(
            upid.to_string(),
            "UPID:node-2:0012ABCD:1000000AB:65A1B2C3:aptupdate::svc@pve!mcp:"
        );
    }

    #[test]
    fn rejects_malformed_upids() {
        let bad = [
            "",
            "UPID",
            "upid:pve01:0000C0DE:0001E240:65A1B2C3:qmstart:100:root@pam:",
            "UPID:pve01:0000C0DE:0001E240:65A1B2C3:qmstart:100:root@pam",
            "UPID:pve01:0000C0DE:0001E240:65A1B2C3:qmstart:100:root@pam:x",
            "UPID:pve01:0000C0DE:0001E240:65A1B2C3:qmstart:100:root@pam::",
            "UPID::0000C0DE:0001E240:65A1B2C3:qmstart:100:root@pam:",
            "UPID:-pve:0000C0DE:0001E240:65A1B2C3:qmstart:100:root@pam:",
            "UPID:pve_1:0000C0DE:0001E240:65A1B2C3:qmstart:100:root@pam:",
            "UPID:pve01:C0DE:0001E240:65A1B2C3:qmstart:100:root@pam:",
            "UPID:pve01:0000C0DG:0001E240:65A1B2C3:qmstart:100:root@pam:",
            "UPID:pve01:0000C0DE:00000001E240:65A1B2C3:qmstart:100:root@pam:",
            "UPID:pve01:0000C0DE:0001E240:5A1B2C3:qmstart:100:root@pam:",
            "UPID:pve01:0000C0DE:0001E240:65A1B2C3::100:root@pam:",
            "UPID:pve01:0000C0DE:0001E240:65A1B2C3:qm start:100:root@pam:",
            "UPID:pve01:0000C0DE:0001E240:65A1B2C3:qmstart:1 0:root@pam:",
            "UPID:pve01:0000C0DE:0001E240:65A1B2C3:qmstart:100::",
            "UPID:pve01:+000C0DE:0001E240:65A1B2C3:qmstart:100:root@pam:",
        ];
        for s in bad {
            let err = Upid::parse(s).expect_err(s);
            assert!(!err.reason().is_empty());
            assert!(err.to_string().contains("UPID"));
        }
    }
}
