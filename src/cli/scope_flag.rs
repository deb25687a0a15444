//! The `--scope` flag shared by `setup` and `harden`.
//!
//! Invariant: a leaf of the CLI — it imports only the error type and the config layer, so the
//! commands that parse `--scope` never import each other for it (`setup` → `harden` stays
//! one-way).

use super::CliError;
use crate::config::Scope;

/// `project` or `user`; anything else is an error (the reference silently meant project).
pub(crate) fn parse_scope(raw: Option<&str>) -> Result<Scope, CliError> {
    match raw {
        None => Ok(Scope::Project),
        Some(s) => Scope::parse(s).ok_or_else(|| {
            CliError::Config(format!("--scope `{s}` is not a scope; use project or user"))
        }),
    }
}
