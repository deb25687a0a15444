//! Argument-sensitive approval rules: which argument values turn a routine call into one a
//! person must approve.
//!
//! A row lists its rules in `gated_when`; a tool with `confirm: true` is gated on every call.
//! Invariant: rules are plain `const` data matched against *wire* values (`"1"`/`"0"` for
//! booleans), so the same rule text drives the gate at run time, `tools --json`,
//! docs/TOOLS.md and the threat model's sink table — it is never restated elsewhere.

/// When a rule fires, given the wire value of its parameter (`None` when absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// The parameter is given at all (any value).
    Given,
    /// The parameter is given with exactly this wire value.
    Is(&'static str),
    /// The parameter is absent or has another value (e.g. `unprivileged` not `1`: Proxmox
    /// creates a privileged container when the key is left out).
    IsNot(&'static str),
    /// The parameter is given as a list of more than one item (split on `,`, `;` or
    /// whitespace, as Proxmox splits guest ID lists).
    Several,
}

/// One argument rule of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgRule {
    /// Parameter name as clients write it (an indexed family's prefix matches every index).
    pub param: &'static str,
    /// Condition on its value.
    pub when: When,
    /// What the call would do because of it, in a person's words.
    pub why: &'static str,
}

impl ArgRule {
    /// Fires when `param` is given with any value.
    pub const fn given(param: &'static str, why: &'static str) -> ArgRule {
        ArgRule {
            param,
            when: When::Given,
            why,
        }
    }

    /// Fires when `param` has the wire value `value`.
    pub const fn is(param: &'static str, value: &'static str, why: &'static str) -> ArgRule {
        ArgRule {
            param,
            when: When::Is(value),
            why,
        }
    }

    /// Fires when `param` is absent or differs from `value`.
    pub const fn is_not(param: &'static str, value: &'static str, why: &'static str) -> ArgRule {
        ArgRule {
            param,
            when: When::IsNot(value),
            why,
        }
    }

    /// Fires when `param` lists more than one item.
    pub const fn several(param: &'static str, why: &'static str) -> ArgRule {
        ArgRule {
            param,
            when: When::Several,
            why,
        }
    }

    /// Whether the rule fires for the given wire values of its parameter (several for an
    /// indexed family or a list; empty when absent).
    pub fn fires(&self, values: &[&str]) -> bool {
        match self.when {
            When::Given => !values.is_empty(),
            When::Is(expected) => values.contains(&expected),
            When::IsNot(expected) => !values.contains(&expected),
            When::Several => {
                values
                    .iter()
                    .flat_map(|v| v.split(|c: char| c == ',' || c == ';' || c.is_whitespace()))
                    .filter(|item| !item.is_empty())
                    .count()
                    > 1
            }
        }
    }

    /// The condition as people read it: `mailto`, `mode=stop`, `unprivileged≠1`.
    pub fn condition(&self) -> String {
        match self.when {
            When::Given => self.param.to_owned(),
            When::Is(value) => format!("{}={}", self.param, display_wire(value)),
            When::IsNot(value) => format!("{}≠{}", self.param, display_wire(value)),
            When::Several => format!("{} with several items", self.param),
        }
    }
}

/// Booleans travel as `1`/`0`; people read them as true/false.
fn display_wire(value: &str) -> &str {
    match value {
        "1" => "true",
        "0" => "false",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_fire_on_their_condition_only() {
        let mail = ArgRule::given("mailto", "mails a report");
        assert!(mail.fires(&["a@b.c"]));
        assert!(!mail.fires(&[]));
        let stop = ArgRule::is("mode", "stop", "stops guests");
        assert!(stop.fires(&["stop"]));
        assert!(!stop.fires(&["snapshot"]));
        let privileged = ArgRule::is_not("unprivileged", "1", "privileged");
        assert!(privileged.fires(&[]));
        assert!(privileged.fires(&["0"]));
        assert!(!privileged.fires(&["1"]));
        let many = ArgRule::several("vmid", "several guests");
        assert!(many.fires(&["101,102"]));
        assert!(many.fires(&["101 102"]));
        assert!(many.fires(&["101;102"]));
        assert!(!many.fires(&["101"]));
        assert_eq!(privileged.condition(), "unprivileged≠true");
        assert_eq!(stop.condition(), "mode=stop");
    }
}
