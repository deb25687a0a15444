//! The policy settings' named modes: the tool surface, the alias mode and the approval mode.
//!
//! Invariant: each mode's wire form (`full`, `hidden`, `elicit`, …) is the one operators write in
//! its variable; it never changes, and only the exact form parses.

/// What `tools/list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// Every permitted tool, each with its full schema.
    Full,
    /// Three meta-tools (find, describe, call) over the same permitted tools.
    Compact,
}

impl Surface {
    /// The wire form used in `PVE_TOOL_SURFACE`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Surface::Full => "full",
            Surface::Compact => "compact",
        }
    }

    /// Parses the exact wire form.
    pub fn parse(value: &str) -> Option<Surface> {
        [Surface::Full, Surface::Compact]
            .into_iter()
            .find(|s| s.as_str() == value)
    }
}

/// How legacy alias names are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AliasMode {
    /// Listed next to their canonical tool and callable.
    Listed,
    /// Callable, not listed: old configs and prompts keep working at no context cost.
    Hidden,
    /// Neither listed nor callable.
    Off,
}

impl AliasMode {
    /// The wire form used in `PVE_ALIASES`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AliasMode::Listed => "listed",
            AliasMode::Hidden => "hidden",
            AliasMode::Off => "off",
        }
    }

    /// Parses the exact wire form.
    pub fn parse(value: &str) -> Option<AliasMode> {
        [AliasMode::Listed, AliasMode::Hidden, AliasMode::Off]
            .into_iter()
            .find(|m| m.as_str() == value)
    }
}

/// Who approves a gated call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalMode {
    /// A person where the client can ask (elicitation or MRTR); else the `confirm` flag.
    Auto,
    /// A person, always; clients that cannot ask get a refusal.
    Elicit,
    /// The `confirm` flag only, even where a person could be asked (unattended automation).
    Confirm,
}

impl ApprovalMode {
    /// Every mode.
    pub const ALL: [ApprovalMode; 3] = [
        ApprovalMode::Auto,
        ApprovalMode::Elicit,
        ApprovalMode::Confirm,
    ];

    /// The wire form used in `PVE_HUMAN_APPROVAL`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Auto => "auto",
            ApprovalMode::Elicit => "elicit",
            ApprovalMode::Confirm => "confirm",
        }
    }

    /// Parses the exact wire form.
    pub fn parse(value: &str) -> Option<ApprovalMode> {
        ApprovalMode::ALL.into_iter().find(|m| m.as_str() == value)
    }
}
