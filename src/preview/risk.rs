//! The target's risk facts, read from Proxmox when a routine change is about to run: what
//! decides whether it may run without a person, and the one line a question shows under its
//! reasons ("HA-managed · tag prod · running").
//!
//! Two plain reads per decision, never more: `GET /cluster/resources?type=vm` (tags, pool,
//! HA state, template, lock, status) and the guest's `config` (`protection`). Invariant: facts
//! that could not be read protect — a routine change whose target cannot be checked asks.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::effects::routine::Routine;
use crate::policy::RoutineSettings;
use crate::pve::{self, ApiRequest, RetryPolicy, encode_path_segment};

/// What Proxmox says about the guest a change targets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RiskFacts {
    /// The guest ID.
    pub vmid: String,
    /// Why the facts are incomplete (a read failed, the guest is not listed).
    pub unread: Option<String>,
    /// HA state (`started`, `stopped`, …) when HA manages the guest.
    pub ha: Option<String>,
    /// `protection=1` in the guest's configuration.
    pub protection: bool,
    /// Tags, lower-cased.
    pub tags: Vec<String>,
    /// Pool the guest belongs to.
    pub pool: Option<String>,
    /// The guest is a template.
    pub template: bool,
    /// `running`, `stopped`, …
    pub status: Option<String>,
    /// A lock held on the guest (`backup`, `migrate`, …).
    pub lock: Option<String>,
    /// The reads made to learn these facts (`GET /cluster/resources`, …), for a refusal's
    /// `details.read`.
    pub reads: Vec<String>,
}

impl RiskFacts {
    /// Why a routine change to this guest must be asked, given the protected tags and pools;
    /// empty when it may run without a person.
    pub fn protective(&self, tags: &[String], pools: &[String]) -> Vec<String> {
        let mut why = Vec::new();
        if let Some(unread) = &self.unread {
            why.push(format!(
                "guest {}: its facts could not be read ({unread})",
                self.vmid
            ));
        }
        if self.protection {
            why.push(format!("guest {} has protection=1", self.vmid));
        }
        if let Some(state) = &self.ha {
            why.push(format!("guest {} is HA-managed ({state})", self.vmid));
        }
        for tag in self.tags.iter().filter(|t| tags.contains(t)) {
            why.push(format!("guest {} is tagged {tag} (protected)", self.vmid));
        }
        if let Some(pool) = self
            .pool
            .as_ref()
            .filter(|p| pools.contains(&p.to_ascii_lowercase()))
        {
            why.push(format!("guest {} is in pool {pool} (protected)", self.vmid));
        }
        if let Some(lock) = &self.lock {
            why.push(format!("guest {} is locked ({lock})", self.vmid));
        }
        why
    }

    /// The facts in one line for a person (`HA-managed · tag prod · running`).
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(unread) = &self.unread {
            parts.push(format!("facts not read: {unread}"));
        }
        if self.protection {
            parts.push("protection=1".to_owned());
        }
        if self.ha.is_some() {
            parts.push("HA-managed".to_owned());
        }
        parts.extend(self.tags.iter().map(|t| format!("tag {t}")));
        if let Some(pool) = &self.pool {
            parts.push(format!("pool {pool}"));
        }
        if self.template {
            parts.push("template".to_owned());
        }
        if let Some(lock) = &self.lock {
            parts.push(format!("locked ({lock})"));
        }
        if let Some(status) = &self.status {
            parts.push(status.clone());
        }
        parts.join(" · ")
    }
}

/// Reads the facts of guest `vmid` (two plain reads; see the module docs).
pub async fn read(client: &pve::Client, vmid: &str, cancel: &CancellationToken) -> RiskFacts {
    let mut facts = RiskFacts {
        vmid: vmid.to_owned(),
        ..RiskFacts::default()
    };
    facts.reads.push("GET /cluster/resources".to_owned());
    let listing = client
        .call(
            ApiRequest::get("/cluster/resources")
                .param("type", "vm")
                .retry(RetryPolicy::Reads),
            cancel,
        )
        .await
        .result;
    let row = match listing {
        Ok(Value::Array(rows)) => rows
            .into_iter()
            .find(|r| r.get("vmid").map(plain) == Some(vmid.to_owned())),
        Ok(_) => None,
        Err(e) => {
            facts.unread = Some(format!("GET /cluster/resources failed: {}", e.code()));
            return facts;
        }
    };
    let Some(row) = row else {
        facts.unread = Some("not listed in /cluster/resources".to_owned());
        return facts;
    };
    let text = |key: &str| row.get(key).map(plain).filter(|s| !s.is_empty());
    facts.ha = text("hastate");
    facts.tags = text("tags")
        .map(|t| {
            t.split([';', ',', ' '])
                .filter(|s| !s.is_empty())
                .map(str::to_ascii_lowercase)
                .collect()
        })
        .unwrap_or_default();
    facts.pool = text("pool");
    facts.template = text("template").is_some_and(|t| t == "1");
    facts.status = text("status");
    facts.lock = text("lock");
    let (Some(node), Some(kind)) = (text("node"), text("type")) else {
        facts.unread = Some("the listing names no node".to_owned());
        return facts;
    };
    let path = format!(
        "/nodes/{}/{}/{}/config",
        encode_path_segment(&node),
        encode_path_segment(&kind),
        encode_path_segment(vmid)
    );
    facts
        .reads
        .push(format!("GET /nodes/{node}/{kind}/{vmid}/config"));
    match client
        .call(ApiRequest::get(path).retry(RetryPolicy::Reads), cancel)
        .await
        .result
    {
        Ok(config) => {
            facts.protection = config.get("protection").map(plain).as_deref() == Some("1");
        }
        Err(e) => {
            facts.unread = Some(format!(
                "the guest's config could not be read: {}",
                e.code()
            ))
        }
    }
    facts
}

/// What the gate's routine candidate comes to once its target is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoutineVerdict {
    /// Runs without a person: what it is, and the target's facts in one line.
    Unasked {
        /// The routine kind.
        kind: Routine,
        /// The target's facts (`RiskFacts::line`).
        facts: String,
    },
    /// Asks after all: why (protected facts, or a clone whose source is not a template),
    /// and the facts line for the question.
    Ask {
        /// One line per reason.
        why: Vec<String>,
        /// The target's facts (`RiskFacts::line`).
        facts: String,
        /// The reads made to learn them, for a refusal's `details.read`.
        reads: Vec<String>,
    },
}

/// Decides a routine candidate: reads the target (`vmid`: the guest the request names, the
/// clone's source) and keeps it routine only when nothing protects it — and, for a clone, when
/// the source really is a template.
/// `copy_of`: the guest this one was cloned from by this server, when that source was not a
/// template (the undo records say so); starting such a copy stays consequential.
pub async fn decide(
    client: &pve::Client,
    kind: Routine,
    vmid: &str,
    copy_of: Option<&str>,
    settings: &RoutineSettings,
    cancel: &CancellationToken,
) -> RoutineVerdict {
    let facts = read(client, vmid, cancel).await;
    let mut why = facts.protective(&settings.protected_tags, &settings.protected_pools);
    if let (Routine::PowerOn, Some(source)) = (kind, copy_of) {
        why.push(format!(
            "guest {vmid} is a full copy of {} (not a template) made by this server: started, it runs a second copy of its services and addresses",
            guest_name(source)
        ));
    }
    if kind == Routine::TemplateClone && !facts.template && facts.unread.is_none() {
        why.push(format!(
            "guest {vmid} is not a template: a clone of it copies a live guest's disks and identity"
        ));
    }
    let line = facts.line();
    if why.is_empty() {
        RoutineVerdict::Unasked { kind, facts: line }
    } else {
        RoutineVerdict::Ask {
            why,
            facts: line,
            reads: facts.reads,
        }
    }
}

/// `guest 101` for a VMID, else the text as it is (it comes from this server's own record).
fn guest_name(source: &str) -> String {
    if source.bytes().all(|b| b.is_ascii_digit()) && !source.is_empty() {
        format!("guest {source}")
    } else {
        "another guest".to_owned()
    }
}

/// A JSON scalar as text (`1` and `"1"` alike).
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_facts_are_named_and_plain_ones_are_not() {
        let tags = vec!["prod".to_owned()];
        let plain = RiskFacts {
            vmid: "150".into(),
            tags: vec!["web".into()],
            status: Some("stopped".into()),
            ..RiskFacts::default()
        };
        assert!(plain.protective(&tags, &[]).is_empty());
        assert_eq!(plain.line(), "tag web · stopped");
        let guarded = RiskFacts {
            vmid: "101".into(),
            ha: Some("started".into()),
            protection: true,
            tags: vec!["prod".into(), "web".into()],
            pool: Some("Core".into()),
            ..RiskFacts::default()
        };
        let why = guarded.protective(&tags, &["core".to_owned()]);
        assert_eq!(why.len(), 4, "{why:?}");
        assert!(why.iter().any(|w| w.contains("HA-managed")));
        assert_eq!(
            guarded.line(),
            "protection=1 · HA-managed · tag prod · tag web · pool Core"
        );
        let unread = RiskFacts {
            vmid: "7".into(),
            unread: Some("x".into()),
            ..RiskFacts::default()
        };
        assert_eq!(unread.protective(&[], &[]).len(), 1);
    }
}
