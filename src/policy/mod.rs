//! Which tools are exposed: one function, one order.
//!
//! `Settings::decide` applies, in this order:
//! 1. the deny-list (`PVE_TOOL_BLACKLIST`) removes a tool — it beats everything;
//! 2. the tier ceiling (`PVE_ACCESS_TIER`, default `read-only`) — no list lifts a tool above it;
//! 3. the module mode (`PVE_MODULE_MODE`, default `core`) — `core` hides `advanced` tools;
//! 4. the category allow-list (`PVE_CATEGORIES`) and the tool allow-list
//!    (`PVE_TOOL_WHITELIST`) narrow further; both must admit the tool when set.
//!
//! How a gated call is approved (`PVE_HUMAN_APPROVAL`) is policy too and lives here; the
//! approval itself runs in `approval`. So is the kill switch the calls are checked against
//! (`PVE_FREEZE_FILE`, read by `config::freeze_file` beside the audit log's path; the check
//! itself is `effects::freeze`).
//!
//! Aliases are never decided on their own: they follow their canonical tool. Every name in
//! the settings is checked against the catalog at start-up; an unknown tier, module,
//! category or tool name is an error listing the valid values, never silently ignored.
//! The lists are parsed in `lists`; the surface, alias and approval modes are in `modes`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

use crate::catalog::{Category, Module, Tier, ToolSpec};
use crate::config::EnvVarDoc;

mod approval_key;
mod approval_links;
mod env_vars;
mod lists;
mod modes;
mod people;
mod routine;
mod rules;
mod rules_file;

pub use routine::{
    DEFAULT_PROTECTED_TAGS, ENV_LEASE_MAX_MINUTES, ENV_PROTECTED_POOLS, ENV_PROTECTED_TAGS,
    ENV_ROUTINE, RoutineSettings,
};

pub use approval_key::ApprovalKey;
pub use approval_links::{
    ApprovalVia, ApproverRule, DEFAULT_APPROVAL_LISTEN, ENV_APPROVAL_BASE_URL, ENV_APPROVAL_LISTEN,
    ENV_APPROVAL_NOTIFY, ENV_APPROVAL_VIA, ENV_APPROVERS, LinkSettings, LinkSettingsError,
    NotifyKind, NotifyTarget,
};
pub use env_vars::ENV_VARS;
pub(crate) use lists::split_list;
pub use modes::{AliasMode, ApprovalMode, Surface};
pub use people::{ENV_PEOPLE_FILE, People, PersonToken, Unmapped, split_token_id};

use lists::{parse_categories, parse_download_allow, parse_tools};
pub use rules::{Action, Class, Decision, Guest, PolicyRules, Rule, RuleRef, RulesError, Subject};
pub use rules_file::{ENV_POLICY_FILE, looks_like_policy, trust_policy_file};

/// Environment variable names, as users already write them.
pub const ENV_TIER: &str = "PVE_ACCESS_TIER";
/// Module mode variable.
pub const ENV_MODULE: &str = "PVE_MODULE_MODE";
/// Category allow-list variable.
pub const ENV_CATEGORIES: &str = "PVE_CATEGORIES";
/// Tool deny-list variable.
pub const ENV_BLACKLIST: &str = "PVE_TOOL_BLACKLIST";
/// Tool allow-list variable.
pub const ENV_WHITELIST: &str = "PVE_TOOL_WHITELIST";
/// How gated calls are approved.
pub const ENV_APPROVAL: &str = "PVE_HUMAN_APPROVAL";
/// How long a person has to answer an approval question.
pub const ENV_APPROVAL_TIMEOUT: &str = "PVE_APPROVAL_TIMEOUT_SECS";
/// Hosts and addresses `pve_download_to_storage` may fetch from despite the address guard.
pub const ENV_DOWNLOAD_ALLOW: &str = "PVE_DOWNLOAD_ALLOW";

/// Which tools `tools/list` shows: every permitted tool, or a few meta-tools over them.
pub const ENV_SURFACE: &str = "PVE_TOOL_SURFACE";
/// Whether legacy alias names are listed, callable but unlisted, or off.
pub const ENV_ALIASES: &str = "PVE_ALIASES";
/// Largest tool result, in bytes, before it is cut with a note on how to page or narrow.
pub const ENV_OUTPUT_CAP: &str = "PVE_OUTPUT_CAP_BYTES";

/// Default result size cap (64 KiB).
pub const DEFAULT_OUTPUT_CAP: usize = 64 * 1024;

/// File holding the key that seals MRTR approval states, shared by every replica.
pub const ENV_APPROVAL_KEY_FILE: &str = "PVE_APPROVAL_KEY_FILE";
/// Fewest secret bytes an approval key file must hold.
pub const MIN_APPROVAL_KEY_BYTES: usize = 32;

/// Default time a person has to answer (seconds).
pub const DEFAULT_APPROVAL_TIMEOUT_SECS: u64 = 300;
/// How long an MCP task id stays valid after its creation.
pub const ENV_TASK_TTL: &str = "PVE_TASK_TTL_SECS";
/// Default task id lifetime (seconds): a day, longer than most backups and migrations.
pub const DEFAULT_TASK_TTL_SECS: u64 = 86_400;

/// A policy setting that cannot be honoured.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PolicyError {
    /// `PVE_ACCESS_TIER` is not one of the three tiers.
    #[error(
        "{ENV_TIER}={value:?} is not a valid access tier; use one of: read-only, read-execute, full"
    )]
    InvalidTier {
        /// The rejected value.
        value: String,
    },
    /// `PVE_MODULE_MODE` is not `core` or `advanced`.
    #[error("{ENV_MODULE}={value:?} is not a valid module mode; use one of: core, advanced")]
    InvalidModule {
        /// The rejected value.
        value: String,
    },
    /// `PVE_HUMAN_APPROVAL` is not one of the modes.
    #[error(
        "{ENV_APPROVAL}={value:?} is not a valid approval mode; use one of: auto, elicit, confirm"
    )]
    InvalidApproval {
        /// The rejected value.
        value: String,
    },
    /// `PVE_APPROVAL_TIMEOUT_SECS` is not a whole number of seconds in 1..=86400.
    #[error("{ENV_APPROVAL_TIMEOUT}={value:?} is not valid; use whole seconds from 1 to 86400")]
    InvalidApprovalTimeout {
        /// The rejected value.
        value: String,
    },
    /// `PVE_TOOL_SURFACE` is not `full` or `compact`.
    #[error("{ENV_SURFACE}={value:?} is not a valid tool surface; use one of: full, compact")]
    InvalidSurface {
        /// The rejected value.
        value: String,
    },
    /// `PVE_ALIASES` is not `listed`, `hidden` or `off`.
    #[error("{ENV_ALIASES}={value:?} is not valid; use one of: listed, hidden, off")]
    InvalidAliases {
        /// The rejected value.
        value: String,
    },
    /// A `PVE_DOWNLOAD_ALLOW` entry is neither a host name, an address nor a CIDR.
    #[error(
        "{ENV_DOWNLOAD_ALLOW} entry {entry:?} is not valid ({why}); use a comma list of host names (`mirror.lan`), addresses (`10.0.0.5`, `fd00::5`) or CIDRs (`10.0.0.0/8`, `fd00::/8`)"
    )]
    InvalidDownloadAllow {
        /// The rejected entry.
        entry: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// `PVE_OUTPUT_CAP_BYTES` is not a whole number in range.
    #[error("{ENV_OUTPUT_CAP}={value:?} is not valid; use whole bytes from 1024 to 16777216")]
    InvalidOutputCap {
        /// The rejected value.
        value: String,
    },
    /// `PVE_APPROVAL_KEY_FILE` cannot be read or holds too little secret (never printed).
    #[error("{ENV_APPROVAL_KEY_FILE} {path}: {problem}")]
    BadApprovalKey {
        /// The file as configured.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// `PVE_PEOPLE_FILE` cannot be read, is not the owner's alone, or is not valid (no
    /// secret is ever part of the text).
    #[error("{ENV_PEOPLE_FILE} {path}: {problem}")]
    BadPeopleFile {
        /// The file as configured.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A setting of approval by link (`PVE_APPROVAL_NOTIFY`, `_BASE_URL`, `_VIA`, `_LISTEN`).
    #[error(transparent)]
    ApprovalLinks(#[from] LinkSettingsError),
    /// `PVE_TASK_TTL_SECS` is not a whole number of seconds in 1..=604800.
    #[error("{ENV_TASK_TTL}={value:?} is not valid; use whole seconds from 1 to 604800")]
    InvalidTaskTtl {
        /// The rejected value.
        value: String,
    },
    /// `PVE_ROUTINE` is neither `auto` nor `ask`.
    #[error(
        "{ENV_ROUTINE}={value:?} is not valid; use auto (routine changes run without a person) or ask"
    )]
    InvalidRoutine {
        /// The rejected value.
        value: String,
    },
    /// `PVE_LEASE_MAX_MINUTES` is not a whole number of minutes from 0 to 480.
    #[error(
        "PVE_LEASE_MAX_MINUTES must be a whole number of minutes from 0 (no leases) to 480, got {value:?}"
    )]
    InvalidLeaseMinutes {
        /// The rejected value.
        value: String,
    },
    /// The operator's rules (`PVE_POLICY_FILE` or an instance file's `policy`) are not valid.
    #[error(transparent)]
    Rules(#[from] RulesError),
    /// `PVE_FREEZE_FILE` (or the state folder its default lives in) is not a usable path.
    #[error("{0}")]
    InvalidFreezeFile(String),
    /// `PVE_CATEGORIES` names a category that does not exist.
    #[error("{ENV_CATEGORIES} names unknown categories: {unknown}; valid categories: {valid}")]
    UnknownCategories {
        /// The unknown names, comma-separated.
        unknown: String,
        /// Every valid category.
        valid: String,
    },
    /// A tool list names a tool that does not exist (or an alias).
    #[error(
        "{var} names unknown tools: {unknown}; lists take canonical tool names (aliases follow their tool); valid names: {valid}"
    )]
    UnknownTools {
        /// Which variable.
        var: &'static str,
        /// The unknown names, comma-separated; an alias is shown with its canonical name.
        unknown: String,
        /// Every canonical tool name.
        valid: String,
    },
    /// A policy key of a cluster's instance file is not valid (same syntax as the variable).
    #[error(
        "cluster `{cluster}`: {source} (the instance file's policy keys take the values of these variables)"
    )]
    Cluster {
        /// The cluster.
        cluster: String,
        /// What is wrong.
        source: Box<PolicyError>,
    },
}

/// The exposure settings in force for this process (or, with several clusters, one cluster).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Highest tier exposed.
    pub tier: Tier,
    /// Module mode.
    pub module: Module,
    /// Category allow-list; empty = all.
    pub categories: BTreeSet<Category>,
    /// Tool deny-list (canonical names).
    pub blacklist: BTreeSet<String>,
    /// Tool allow-list (canonical names); empty = all.
    pub whitelist: BTreeSet<String>,
    /// Who approves gated calls.
    pub approval: ApprovalMode,
    /// How long a person has to answer.
    pub approval_timeout: Duration,
    /// What `tools/list` shows.
    pub surface: Surface,
    /// How legacy alias names are served.
    pub aliases: AliasMode,
    /// Largest tool result in bytes before it is cut.
    pub output_cap: usize,
    /// Download address-guard exceptions (`PVE_DOWNLOAD_ALLOW`), lower-cased entries.
    pub download_allow: Vec<String>,
    /// How long an MCP task id stays valid.
    pub task_ttl: Duration,
    /// Key sealing approval states (`PVE_APPROVAL_KEY_FILE`); `None`: random per process.
    pub approval_key: Option<ApprovalKey>,
    /// Per-person Proxmox identity for OAuth callers (`PVE_PEOPLE_FILE`); `None`: everyone
    /// acts with the server's own token.
    pub people: Option<std::sync::Arc<People>>,
    /// Approval by link: webhook, the page's public address, form or URL preference.
    pub links: LinkSettings,
    /// The kill switch (`PVE_FREEZE_FILE`, else beside the audit log); `None` only when no
    /// path is known (no home or state folder).
    pub freeze: Option<crate::effects::FreezeSwitch>,
    /// Routine changes: run without a person unless the target is protected.
    pub routine: RoutineSettings,
    /// The operator's rules (`PVE_POLICY_FILE`, or the instance file's `policy`).
    pub rules: PolicyRules,
    /// Where the tier limit is set when an instance file sets it (`accessTier in PATH`);
    /// `None`: `PVE_ACCESS_TIER`.
    pub tier_source: Option<String>,
    /// Where the module mode is set when an instance file sets it; `None`: `PVE_MODULE_MODE`.
    pub module_source: Option<String>,
}

/// The settings' lookup, as the configuration's environment source.
struct Lookup<'a, F>(&'a F);

impl<F: Fn(&str) -> Option<String>> crate::config::EnvSource for Lookup<'_, F> {
    fn var(&self, key: &str) -> Option<String> {
        (self.0)(key)
    }
}

impl Default for Settings {
    /// Secure defaults: read-only tier, core module, no lists.
    fn default() -> Self {
        Settings {
            tier: Tier::ReadOnly,
            module: Module::Core,
            categories: BTreeSet::new(),
            blacklist: BTreeSet::new(),
            whitelist: BTreeSet::new(),
            approval: ApprovalMode::Auto,
            approval_timeout: Duration::from_secs(DEFAULT_APPROVAL_TIMEOUT_SECS),
            surface: Surface::Full,
            aliases: AliasMode::Hidden,
            output_cap: DEFAULT_OUTPUT_CAP,
            download_allow: Vec::new(),
            task_ttl: Duration::from_secs(DEFAULT_TASK_TTL_SECS),
            approval_key: None,
            people: None,
            links: LinkSettings::default(),
            freeze: None,
            routine: RoutineSettings::default(),
            rules: PolicyRules::default(),
            tier_source: None,
            module_source: None,
        }
    }
}

impl Settings {
    /// Reads the settings through `lookup` (the process environment in production).
    /// Unset or whitespace-only variables take the defaults.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Settings, PolicyError> {
        let get = |key: &str| {
            lookup(key)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let mut settings = Settings::default();
        if let Some(value) = get(ENV_TIER) {
            settings.tier = Tier::parse(&value).ok_or(PolicyError::InvalidTier { value })?;
        }
        if let Some(value) = get(ENV_MODULE) {
            settings.module = Module::parse(&value).ok_or(PolicyError::InvalidModule { value })?;
        }
        if let Some(value) = get(ENV_CATEGORIES) {
            settings.categories = parse_categories(&value)?;
        }
        if let Some(value) = get(ENV_BLACKLIST) {
            settings.blacklist = parse_tools(ENV_BLACKLIST, &value)?;
        }
        if let Some(value) = get(ENV_WHITELIST) {
            settings.whitelist = parse_tools(ENV_WHITELIST, &value)?;
        }
        if let Some(value) = get(ENV_APPROVAL) {
            settings.approval =
                ApprovalMode::parse(&value).ok_or(PolicyError::InvalidApproval { value })?;
        }
        if let Some(value) = get(ENV_APPROVAL_TIMEOUT) {
            let seconds = value
                .parse::<u64>()
                .ok()
                .filter(|s| (1..=86_400).contains(s))
                .ok_or(PolicyError::InvalidApprovalTimeout { value })?;
            settings.approval_timeout = Duration::from_secs(seconds);
        }
        if let Some(value) = get(ENV_SURFACE) {
            settings.surface =
                Surface::parse(&value).ok_or(PolicyError::InvalidSurface { value })?;
        }
        if let Some(value) = get(ENV_ALIASES) {
            settings.aliases =
                AliasMode::parse(&value).ok_or(PolicyError::InvalidAliases { value })?;
        }
        if let Some(value) = get(ENV_OUTPUT_CAP) {
            settings.output_cap = value
                .parse::<usize>()
                .ok()
                .filter(|n| (1024..=16 * 1024 * 1024).contains(n))
                .ok_or(PolicyError::InvalidOutputCap { value })?;
        }
        if let Some(value) = get(ENV_DOWNLOAD_ALLOW) {
            settings.download_allow = parse_download_allow(&value)?;
        }
        settings.routine = RoutineSettings::read(get)?;
        if let Some(value) = get(ENV_POLICY_FILE) {
            settings.rules = rules_file::load(&Lookup(&lookup), &value)?;
        }
        if let Some(value) = get(ENV_TASK_TTL) {
            let seconds = value
                .parse::<u64>()
                .ok()
                .filter(|s| (1..=604_800).contains(s))
                .ok_or(PolicyError::InvalidTaskTtl { value })?;
            settings.task_ttl = Duration::from_secs(seconds);
        }
        if let Some(value) = get(ENV_APPROVAL_KEY_FILE) {
            settings.approval_key = Some(ApprovalKey::from_file(&PathBuf::from(value))?);
        }
        if let Some(value) = get(ENV_PEOPLE_FILE) {
            let people = People::from_file(&PathBuf::from(value))?;
            settings.people = Some(std::sync::Arc::new(people));
        }
        settings.links = LinkSettings::from_lookup(get)?;
        if settings.links.notify.is_some() && settings.approval == ApprovalMode::Confirm {
            return Err(LinkSettingsError::NotifyWithConfirm.into());
        }
        settings.freeze = crate::config::freeze_file(&Lookup(&lookup))
            .map_err(|e| PolicyError::InvalidFreezeFile(e.to_string()))?
            .map(crate::effects::FreezeSwitch::new);
        Ok(settings)
    }

    /// The settings of one cluster: the policy keys of its instance file (`accessTier`,
    /// `moduleMode`, `categories`, `toolWhitelist`, `toolBlacklist`) beat these settings (the
    /// process's variables) for it; a key the file does not set keeps the process value.
    pub fn for_cluster(
        &self,
        keys: &crate::config::PolicyKeys,
        cluster: &str,
    ) -> Result<Settings, PolicyError> {
        let in_cluster = |source: PolicyError| PolicyError::Cluster {
            cluster: cluster.to_owned(),
            source: Box::new(source),
        };
        let mut settings = self.clone();
        if let Some(value) = keys.value_for(ENV_TIER) {
            settings.tier = Tier::parse(value).ok_or_else(|| {
                in_cluster(PolicyError::InvalidTier {
                    value: value.to_owned(),
                })
            })?;
        }
        if let Some(value) = keys.value_for(ENV_MODULE) {
            settings.module = Module::parse(value).ok_or_else(|| {
                in_cluster(PolicyError::InvalidModule {
                    value: value.to_owned(),
                })
            })?;
        }
        if let Some(value) = keys.value_for(ENV_CATEGORIES) {
            settings.categories = parse_categories(value).map_err(in_cluster)?;
        }
        if let Some(value) = keys.value_for(ENV_BLACKLIST) {
            settings.blacklist = parse_tools(ENV_BLACKLIST, value).map_err(in_cluster)?;
        }
        if let Some(value) = keys.value_for(ENV_WHITELIST) {
            settings.whitelist = parse_tools(ENV_WHITELIST, value).map_err(in_cluster)?;
        }
        if let Some(value) = &keys.policy {
            let source = format!("`policy` of cluster `{cluster}`'s instance file");
            settings.rules = PolicyRules::parse(value, &source)?;
        }
        Ok(settings)
    }

    /// Whether a canonical tool is exposed. See the module docs for the order.
    pub fn decide(&self, spec: &ToolSpec) -> bool {
        if self.blacklist.contains(spec.name) {
            return false;
        }
        if spec.tier > self.tier {
            return false;
        }
        if self.module == Module::Core && spec.module == Module::Advanced {
            return false;
        }
        if !self.categories.is_empty() && !self.categories.contains(&spec.category) {
            return false;
        }
        self.whitelist.is_empty() || self.whitelist.contains(spec.name)
    }

    /// Names the instance file at `path` as where the tier and module limits are set, for the
    /// keys (`accessTier`, `moduleMode`) that file sets.
    pub fn name_file_limits(&mut self, keys: &crate::config::PolicyKeys, path: &std::path::Path) {
        if keys.access_tier.is_some() {
            self.tier_source = Some(format!("accessTier in {}", path.display()));
        }
        if keys.module_mode.is_some() {
            self.module_source = Some(format!("moduleMode in {}", path.display()));
        }
    }

    /// Why a canonical tool is not exposed, with the setting that would expose it; `None`
    /// when [`Settings::decide`] exposes it. Same order as `decide`.
    pub fn why_hidden(&self, spec: &ToolSpec) -> Option<String> {
        if self.blacklist.contains(spec.name) {
            return Some(format!("denied by {ENV_BLACKLIST}"));
        }
        if spec.tier > self.tier {
            return Some(match &self.tier_source {
                None => format!(
                    "tier {} is above PVE_ACCESS_TIER={}; set PVE_ACCESS_TIER={}",
                    spec.tier.as_str(),
                    self.tier.as_str(),
                    spec.tier.as_str()
                ),
                Some(source) => format!(
                    "tier {} is above the tier {} set by {source}; set it to \"{}\" there (the file's key beats PVE_ACCESS_TIER)",
                    spec.tier.as_str(),
                    self.tier.as_str(),
                    spec.tier.as_str()
                ),
            });
        }
        if self.module == Module::Core && spec.module == Module::Advanced {
            return Some(match &self.module_source {
                None => "an advanced tool; set PVE_MODULE_MODE=advanced".to_owned(),
                Some(source) => format!(
                    "an advanced tool; the module mode is core by {source}: set it to \"advanced\" there (the file's key beats PVE_MODULE_MODE)"
                ),
            });
        }
        if !self.categories.is_empty() && !self.categories.contains(&spec.category) {
            return Some(format!(
                "category {} is not in {ENV_CATEGORIES}",
                spec.category.as_str()
            ));
        }
        if !self.whitelist.is_empty() && !self.whitelist.contains(spec.name) {
            return Some(format!("not in {ENV_WHITELIST}"));
        }
        None
    }

    /// One-line summary for logs and the server instructions.
    pub fn summary(&self) -> String {
        let mut parts = vec![
            format!("access tier {}", self.tier.as_str()),
            format!("module mode {}", self.module.as_str()),
        ];
        if self.approval != ApprovalMode::Auto {
            parts.push(format!("approval {}", self.approval.as_str()));
        }
        if self.surface != Surface::Full {
            parts.push(format!("surface {}", self.surface.as_str()));
        }
        if !self.categories.is_empty() {
            let names: Vec<&str> = self.categories.iter().map(|c| c.as_str()).collect();
            parts.push(format!("categories {}", names.join(",")));
        }
        if !self.whitelist.is_empty() {
            parts.push(format!("{} allow-listed tools", self.whitelist.len()));
        }
        if !self.blacklist.is_empty() {
            parts.push(format!("{} deny-listed tools", self.blacklist.len()));
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod cluster_tests;
