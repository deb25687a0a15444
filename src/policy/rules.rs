//! Operator policy as data: a short table of rules that tighten or relax who approves a call
//! (`allow` — runs without a person, `ask` — a person is asked, `deny` — refused), matched on
//! the call's effects, its class (routine or consequential), the tool, the cluster, the node,
//! the target guest's pool and tags, and a VMID range. The format, the order and the built-in
//! default are written out in `docs/POLICY.md`.
//!
//! Pure: [`PolicyRules::parse`] reads the JSON value, [`PolicyRules::decide`] matches a plain
//! [`Subject`] and returns a [`Decision`]; the pipeline gathers the subject (and reads the
//! target's facts only when a rule needs them).
//!
//! Invariants:
//! * every rule that matches is considered; `deny` beats `ask` beats `allow`, and within one
//!   action the first rule in file order is the one named. No rule matching leaves the
//!   built-in default (routine unasked, consequential asked) in force;
//! * an `allow` with `effect` matches only when **every** effect of the call is listed, so an
//!   allow for `change` never lets a call that also destroys through; `deny` and `ask` match
//!   when **any** effect is listed;
//! * a guest whose facts could not be read never satisfies the `pool` or `tag` of an `allow`
//!   (fail closed) and always satisfies those of a `deny` or an `ask` (tightening);
//! * an unknown key, action, class, effect or tool name is an error at start-up, never ignored.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::catalog;
use crate::effects::{Effect, EffectSet};

/// What a rule does to a call it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Runs without a person (recorded in the audit as `policy:<rule id>`).
    Allow,
    /// A person is asked, even for a routine change.
    Ask,
    /// Refused (`POLICY_DENIED`); nothing is sent, nobody is asked.
    Deny,
}

impl Action {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Ask => "ask",
            Action::Deny => "deny",
        }
    }

    fn parse(value: &str) -> Option<Action> {
        [Action::Allow, Action::Ask, Action::Deny]
            .into_iter()
            .find(|a| a.as_str() == value)
    }
}

/// The gate's class of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// A routine change (`effects::routine`) to a guest that really is what it claims
    /// (a template clone's source is a template).
    Routine,
    /// Everything else the gate holds.
    Consequential,
}

impl Class {
    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Class::Routine => "routine",
            Class::Consequential => "consequential",
        }
    }

    fn parse(value: &str) -> Option<Class> {
        [Class::Routine, Class::Consequential]
            .into_iter()
            .find(|c| c.as_str() == value)
    }
}

/// What is known of the guest a call targets, for `pool` and `tag`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guest {
    /// The call names no guest, or the guest does not exist: no pool, no tag.
    None,
    /// The guest's facts could not be read (why).
    Unknown(String),
    /// Read from Proxmox.
    Known {
        /// Its pool.
        pool: Option<String>,
        /// Its tags.
        tags: Vec<String>,
    },
}

/// The call as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    /// The canonical tool name.
    pub tool: String,
    /// What the call's requests do.
    pub effects: EffectSet,
    /// Routine or consequential.
    pub class: Class,
    /// The cluster (several clusters only).
    pub cluster: Option<String>,
    /// The `node` argument.
    pub node: Option<String>,
    /// The `vmid` argument.
    pub vmid: Option<u64>,
    /// The `pool` argument (a guest created into a pool).
    pub pool_argument: Option<String>,
    /// The target guest's facts.
    pub guest: Guest,
}

/// One rule, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Its `name`, else `rule#N` (1-based position).
    pub id: String,
    /// What it does.
    pub action: Action,
    effects: Option<EffectSet>,
    class: Option<Class>,
    tools: Option<Vec<String>>,
    clusters: Option<Vec<String>>,
    nodes: Option<Vec<String>>,
    pools: Option<Vec<String>>,
    tags: Option<Vec<String>>,
    vmids: Option<Vec<(u64, u64)>>,
    /// The rule in one line (`deny effect=destroy tag=prod`).
    pub text: String,
    /// `policy:<id>`, the audit's approval of a call it allows. Made once when the policy is
    /// parsed (start-up; bounded by the rule count), because a call's approval is `'static`.
    approval: &'static str,
}

/// A rule named in a decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRef {
    /// The rule's id.
    pub id: String,
    /// The rule in one line.
    pub text: String,
    /// `policy:<id>`.
    pub approval: &'static str,
}

/// Which rule decided a call, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `None`: no rule matched, the built-in default decides.
    pub action: Option<Action>,
    /// The deciding rule.
    pub rule: Option<RuleRef>,
    /// Every rule that matched, in file order.
    pub matched: Vec<RuleRef>,
    /// One sentence for people.
    pub why: String,
}

impl Decision {
    /// How the audit records a call this decision let run without a person.
    pub fn approval(&self) -> Option<&'static str> {
        match (&self.action, &self.rule) {
            (Some(Action::Allow), Some(rule)) => Some(rule.approval),
            _ => None,
        }
    }
}

/// A policy that cannot be used: stops start-up.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("policy {source_name}: {at}: {reason}")]
pub struct RulesError {
    /// Where the policy came from (a file, an instance file's `policy` key).
    pub source_name: String,
    /// Which part (`rules[2].effect`).
    pub at: String,
    /// What is wrong, with the valid values.
    pub reason: String,
}

/// The operator's rules (empty: the built-in default decides every call).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyRules {
    /// The rules, in file order.
    pub rules: Vec<Rule>,
    /// Where they came from, for messages (`None`: no policy).
    pub source: Option<String>,
    /// Why a policy file was ignored (it needs the user's trust), for `doctor` and `explain`.
    pub ignored: Option<String>,
}

/// Keys a rule may carry.
const RULE_KEYS: [&str; 12] = [
    "name",
    "comment",
    "action",
    "effect",
    "class",
    "tool",
    "cluster",
    "node",
    "pool",
    "tag",
    "vmid",
    "description",
];

impl PolicyRules {
    /// Parses `{"rules": [...]}` (see `docs/POLICY.md`); `source` names it in errors.
    pub fn parse(value: &Value, source: &str) -> Result<PolicyRules, RulesError> {
        let err = |at: &str, reason: String| RulesError {
            source_name: source.to_owned(),
            at: at.to_owned(),
            reason,
        };
        let Value::Object(top) = value else {
            return Err(err(
                "top level",
                "must be an object {\"rules\": [...]}".into(),
            ));
        };
        if let Some(key) = top
            .keys()
            .find(|k| !matches!(k.as_str(), "rules" | "comment"))
        {
            return Err(err(
                key,
                "unknown key; a policy holds `rules` (and an optional `comment`)".into(),
            ));
        }
        let Some(Value::Array(items)) = top.get("rules") else {
            return Err(err("rules", "must be a list of rules".into()));
        };
        let mut rules = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let at = format!("rules[{i}]");
            let Value::Object(map) = item else {
                return Err(err(&at, "must be an object".into()));
            };
            let rule =
                parse_rule(map, i).map_err(|(key, reason)| err(&format!("{at}{key}"), reason))?;
            if rules.iter().any(|r: &Rule| r.id == rule.id) {
                return Err(err(&at, format!("the name {:?} is used twice", rule.id)));
            }
            rules.push(rule);
        }
        Ok(PolicyRules {
            rules,
            source: Some(source.to_owned()),
            ignored: None,
        })
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether some rule matches on `pool` or `tag` (the target's facts must be read).
    pub fn needs_guest_facts(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.pools.is_some() || r.tags.is_some())
    }

    /// Decides a call: every matching rule, the strongest action, the first rule of it.
    pub fn decide(&self, subject: &Subject) -> Decision {
        let matched: Vec<&Rule> = self.rules.iter().filter(|r| r.matches(subject)).collect();
        let refs = matched.iter().map(|r| r.reference()).collect();
        let strongest = matched.iter().map(|r| r.action).max();
        let rule = strongest.and_then(|a| matched.iter().find(|r| r.action == a));
        let why = match rule {
            Some(rule) => format!(
                "{} by {}: {}{}",
                match rule.action {
                    Action::Allow => "runs without a person",
                    Action::Ask => "a person is asked",
                    Action::Deny => "refused",
                },
                rule.id,
                rule.text,
                if matched.len() > 1 {
                    format!(
                        " ({} rules matched; deny beats ask beats allow)",
                        matched.len()
                    )
                } else {
                    String::new()
                }
            ),
            None => format!(
                "built-in default: {}",
                match subject.class {
                    Class::Routine =>
                        "a routine change runs without a person unless its target is protected",
                    Class::Consequential => "a consequential change asks a person",
                }
            ),
        };
        Decision {
            action: strongest,
            rule: rule.map(|r| r.reference()),
            matched: refs,
            why,
        }
    }

    /// One line per `allow` rule that can let exec, egress, access or an unplaced request run
    /// without a person (for `doctor`).
    pub fn unattended_risks(&self) -> Vec<String> {
        let risky = [
            Effect::Exec,
            Effect::Egress,
            Effect::Access,
            Effect::Unplaced,
        ];
        self.rules
            .iter()
            .filter(|r| r.action == Action::Allow && r.class != Some(Class::Routine))
            .filter_map(|r| {
                let allowed = r.effects.unwrap_or(EffectSet::ANY);
                let names: Vec<&str> = risky
                    .iter()
                    .filter(|e| allowed.contains(**e))
                    .map(|e| e.as_str())
                    .collect();
                (!names.is_empty()).then(|| {
                    format!(
                        "{} ({}) lets {} run without a person",
                        r.id,
                        r.text,
                        names.join(", ")
                    )
                })
            })
            .collect()
    }
}

impl Rule {
    fn reference(&self) -> RuleRef {
        RuleRef {
            id: self.id.clone(),
            text: self.text.clone(),
            approval: self.approval,
        }
    }

    /// Whether every key the rule gives holds for the call (see the module docs).
    pub fn matches(&self, s: &Subject) -> bool {
        let effects_hold = self.effects.is_none_or(|listed| match self.action {
            Action::Allow => listed.covers(s.effects),
            Action::Ask | Action::Deny => s.effects.iter().any(|e| listed.contains(e)),
        });
        let one_of = |list: &Option<Vec<String>>, value: Option<&str>| {
            list.as_ref()
                .is_none_or(|l| value.is_some_and(|v| l.iter().any(|x| x.eq_ignore_ascii_case(v))))
        };
        let tools_hold = self.tools.as_ref().is_none_or(|patterns| {
            patterns.iter().any(|p| match p.strip_suffix('*') {
                Some(prefix) => s.tool.starts_with(prefix),
                None => *p == s.tool,
            })
        });
        let vmid_holds = self.vmids.as_ref().is_none_or(|ranges| {
            s.vmid
                .is_some_and(|v| ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&v)))
        });
        effects_hold
            && self.class.is_none_or(|c| c == s.class)
            && tools_hold
            && one_of(&self.clusters, s.cluster.as_deref())
            && one_of(&self.nodes, s.node.as_deref())
            && vmid_holds
            && self.guest_holds(s)
    }

    /// `pool` and `tag`, with the fail-closed rule for a guest that could not be read.
    fn guest_holds(&self, s: &Subject) -> bool {
        if self.pools.is_none() && self.tags.is_none() {
            return true;
        }
        let (pool, tags): (Option<&str>, &[String]) = match &s.guest {
            Guest::Unknown(_) => return self.action != Action::Allow,
            Guest::None => (None, &[]),
            Guest::Known { pool, tags } => (pool.as_deref(), tags),
        };
        let pool_holds = self.pools.as_ref().is_none_or(|listed| {
            [pool, s.pool_argument.as_deref()]
                .into_iter()
                .flatten()
                .any(|p| listed.iter().any(|x| x.eq_ignore_ascii_case(p)))
        });
        let tag_holds = self.tags.as_ref().is_none_or(|listed| {
            tags.iter()
                .any(|t| listed.iter().any(|x| x.eq_ignore_ascii_case(t)))
        });
        pool_holds && tag_holds
    }
}

/// A key's failure: (`.key` suffix, reason).
type KeyError = (String, String);

fn parse_rule(map: &Map<String, Value>, index: usize) -> Result<Rule, KeyError> {
    if let Some(key) = map.keys().find(|k| !RULE_KEYS.contains(&k.as_str())) {
        return Err((
            format!(".{key}"),
            format!("unknown key; a rule takes: {}", RULE_KEYS.join(", ")),
        ));
    }
    let at = |key: &str| format!(".{key}");
    let action_text = match map.get("action") {
        Some(Value::String(s)) => s.trim().to_ascii_lowercase(),
        _ => return Err((at("action"), "must be one of: allow, ask, deny".into())),
    };
    let action = Action::parse(&action_text).ok_or_else(|| {
        (
            at("action"),
            format!("{action_text:?} is not one of: allow, ask, deny"),
        )
    })?;
    let id = match map.get("name") {
        None | Some(Value::Null) => format!("rule#{}", index + 1),
        Some(Value::String(s)) if valid_name(s) => s.clone(),
        Some(_) => {
            return Err((
                at("name"),
                "must be 1 to 64 letters, digits, `-`, `_` or `.`".into(),
            ));
        }
    };
    let list = |key: &str| strings(map.get(key)).map_err(|reason| (at(key), reason));
    let effects = match list("effect")? {
        None => None,
        Some(names) => {
            let mut set = EffectSet::READ;
            for name in names {
                let effect = Effect::ALL
                    .into_iter()
                    .find(|e| e.as_str() == name.to_ascii_lowercase())
                    .ok_or_else(|| {
                        let valid: Vec<&str> = Effect::ALL.iter().map(|e| e.as_str()).collect();
                        (
                            at("effect"),
                            format!("{name:?} is not an effect; use: {}", valid.join(", ")),
                        )
                    })?;
                set.insert(effect);
            }
            Some(set)
        }
    };
    let class = match list("class")? {
        None => None,
        Some(names) if names.len() == 1 => {
            Some(Class::parse(&names[0].to_ascii_lowercase()).ok_or_else(|| {
                (
                    at("class"),
                    format!("{:?} is not one of: routine, consequential", names[0]),
                )
            })?)
        }
        Some(_) => {
            return Err((
                at("class"),
                "takes one class: routine or consequential".into(),
            ));
        }
    };
    let tools = list("tool")?;
    if let Some(tools) = &tools {
        for tool in tools {
            check_tool(tool).map_err(|reason| (at("tool"), reason))?;
        }
    }
    let lower =
        |v: Option<Vec<String>>| v.map(|l| l.iter().map(|s| s.to_ascii_lowercase()).collect());
    let vmids = match list("vmid")? {
        None => None,
        Some(items) => Some(
            items
                .iter()
                .map(|i| {
                    vmid_range(i).ok_or_else(|| {
                        (
                            at("vmid"),
                            format!("{i:?} is not a VMID or a range like 100-199"),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    let mut rule = Rule {
        id,
        action,
        effects,
        class,
        tools,
        clusters: list("cluster")?,
        nodes: list("node")?,
        pools: lower(list("pool")?),
        tags: lower(list("tag")?),
        vmids,
        text: String::new(),
        approval: "",
    };
    rule.text = render(&rule, map);
    rule.approval = Box::leak(format!("policy:{}", rule.id).into_boxed_str());
    Ok(rule)
}

/// A string, a number or a list of them, as non-empty strings; `None` when absent.
fn strings(value: Option<&Value>) -> Result<Option<Vec<String>>, String> {
    let one = |v: &Value| match v {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err("must be a non-empty string, a number, or a list of them".to_owned()),
    };
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) if items.is_empty() => {
            Err("an empty list matches nothing; leave the key out to match anything".into())
        }
        Some(Value::Array(items)) => items.iter().map(one).collect::<Result<_, _>>().map(Some),
        Some(v) => one(v).map(|s| Some(vec![s])),
    }
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A canonical tool name, or a prefix ending in `*` that names at least one tool.
fn check_tool(pattern: &str) -> Result<(), String> {
    let (prefix, glob) = match pattern.strip_suffix('*') {
        Some(prefix) => (prefix, true),
        None => (pattern, false),
    };
    if prefix.contains('*') {
        return Err(format!("{pattern:?}: `*` may only end a tool pattern"));
    }
    let hit = if glob {
        catalog::canonical_names().any(|n| n.starts_with(prefix))
    } else {
        catalog::canonical_names().any(|n| n == prefix)
    };
    if hit {
        return Ok(());
    }
    match catalog::all().find(|s| s.aliases.contains(&pattern)) {
        Some(spec) => Err(format!("{pattern:?} is an alias: write {}", spec.name)),
        None if glob => Err(format!("{pattern:?} matches no tool")),
        None => Err(format!(
            "{pattern:?} is not a tool (rules take canonical tool names)"
        )),
    }
}

/// `150` or `100-199`.
fn vmid_range(text: &str) -> Option<(u64, u64)> {
    let (lo, hi) = text.split_once('-').unwrap_or((text, text));
    let (lo, hi) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
    (lo <= hi).then_some((lo, hi))
}

/// `allow class=routine pool=lab` — the keys in a fixed order, as written.
fn render(rule: &Rule, map: &Map<String, Value>) -> String {
    let mut text = rule.action.as_str().to_owned();
    for key in [
        "effect", "class", "tool", "cluster", "node", "pool", "tag", "vmid",
    ] {
        if let Ok(Some(values)) = strings(map.get(key)) {
            let _ = write!(text, " {key}={}", values.join(","));
        }
    }
    text
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
