//! The policy keys of an instance file: a cluster's own access tier, module mode and tool
//! lists (`accessTier`, `moduleMode`, `categories`, `toolWhitelist`, `toolBlacklist`) and
//! whether it is the default cluster (`default`).
//!
//! Config sits below policy, so the values are kept as the text the matching environment
//! variable would hold (a list may be written as a JSON array or a comma-separated string);
//! `policy::Settings::for_cluster` checks them against the catalog. Invariant: a key that is
//! not set here leaves the process setting (environment variable or default) in force.

use std::path::Path;

use serde_json::{Map, Value};

use super::ConfigError;
use super::fields::kind;

/// `accessTier`: the cluster's tier (as `PVE_ACCESS_TIER`).
pub(crate) const ACCESS_TIER: &str = "accessTier";
/// `moduleMode`: the cluster's module mode (as `PVE_MODULE_MODE`).
pub(crate) const MODULE_MODE: &str = "moduleMode";
/// `categories`: the cluster's category allow-list (as `PVE_CATEGORIES`).
pub(crate) const CATEGORIES: &str = "categories";
/// `toolWhitelist`: the cluster's tool allow-list (as `PVE_TOOL_WHITELIST`).
pub(crate) const TOOL_WHITELIST: &str = "toolWhitelist";
/// `toolBlacklist`: the cluster's tool deny-list (as `PVE_TOOL_BLACKLIST`).
pub(crate) const TOOL_BLACKLIST: &str = "toolBlacklist";
/// `default`: this cluster is the one a call without `cluster` goes to.
pub(crate) const DEFAULT: &str = "default";
/// `policy`: the cluster's operator rules (`{"rules": [...]}`, see docs/POLICY.md).
pub(crate) const POLICY: &str = "policy";

/// A cluster's own policy, as written in its instance file; `None` keeps the process setting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyKeys {
    /// `accessTier`, in `PVE_ACCESS_TIER` syntax.
    pub access_tier: Option<String>,
    /// `moduleMode`, in `PVE_MODULE_MODE` syntax.
    pub module_mode: Option<String>,
    /// `categories`, comma-separated as in `PVE_CATEGORIES`.
    pub categories: Option<String>,
    /// `toolWhitelist`, comma-separated as in `PVE_TOOL_WHITELIST`.
    pub tool_whitelist: Option<String>,
    /// `toolBlacklist`, comma-separated as in `PVE_TOOL_BLACKLIST`.
    pub tool_blacklist: Option<String>,
    /// `default: true`: calls without a `cluster` argument go here.
    pub default: bool,
    /// `policy`, as written (checked by `policy::PolicyRules::parse`); beats `PVE_POLICY_FILE`.
    pub policy: Option<Value>,
}

impl PolicyKeys {
    /// The file's value for the policy environment variable `var`, when the file sets it.
    pub fn value_for(&self, var: &str) -> Option<&str> {
        let value = match var {
            "PVE_ACCESS_TIER" => &self.access_tier,
            "PVE_MODULE_MODE" => &self.module_mode,
            "PVE_CATEGORIES" => &self.categories,
            "PVE_TOOL_WHITELIST" => &self.tool_whitelist,
            "PVE_TOOL_BLACKLIST" => &self.tool_blacklist,
            _ => &None,
        };
        value.as_deref()
    }

    /// Whether any policy key (besides `default`) is set.
    pub fn any_policy(&self) -> bool {
        [
            &self.access_tier,
            &self.module_mode,
            &self.categories,
            &self.tool_whitelist,
            &self.tool_blacklist,
        ]
        .iter()
        .any(|v| v.is_some())
            || self.policy.is_some()
    }
}

/// Reads the policy keys of an instance-file object (unknown keys are checked elsewhere).
pub(crate) fn parse(path: &Path, map: &Map<String, Value>) -> Result<PolicyKeys, ConfigError> {
    let invalid = |key: &str, reason: String| ConfigError::Invalid {
        location: format!("`{key}` in {}", path.display()),
        reason,
    };
    let text = |key: &str| -> Result<Option<String>, ConfigError> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
            Some(other) => Err(invalid(
                key,
                format!("must be a string (got {})", kind(other)),
            )),
        }
    };
    let list = |key: &str| -> Result<Option<String>, ConfigError> {
        match map.get(key) {
            Some(Value::Array(items)) => {
                let mut names = Vec::new();
                for item in items {
                    match item {
                        Value::String(s) if !s.trim().is_empty() => names.push(s.trim()),
                        other => {
                            return Err(invalid(
                                key,
                                format!(
                                    "must list non-empty strings (got {} in the list)",
                                    kind(other)
                                ),
                            ));
                        }
                    }
                }
                Ok((!names.is_empty()).then(|| names.join(",")))
            }
            _ => text(key),
        }
    };
    let default = match map.get(DEFAULT) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(invalid(
                DEFAULT,
                format!("must be true or false without quotes (got {})", kind(other)),
            ));
        }
    };
    Ok(PolicyKeys {
        access_tier: text(ACCESS_TIER)?,
        module_mode: text(MODULE_MODE)?,
        categories: list(CATEGORIES)?,
        tool_whitelist: list(TOOL_WHITELIST)?,
        tool_blacklist: list(TOOL_BLACKLIST)?,
        default,
        policy: map.get(POLICY).filter(|v| !v.is_null()).cloned(),
    })
}
