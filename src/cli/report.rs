//! The `[GREEN|RED|SKIP] check: detail` report shared by `setup` and `doctor`.
//!
//! Invariant: colour codes are written only when stdout is a terminal (and `NO_COLOR` is unset),
//! so piped output and `--json` stay plain; a report is RED as soon as one item is RED.

use std::io::IsTerminal;

use serde_json::{Value, json};

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Passed.
    Green,
    /// Failed: the command exits non-zero.
    Red,
    /// Not applicable or not run.
    Skip,
    /// Works, but weaker than it should be (e.g. TLS checks off): said, the exit status stays 0.
    Yellow,
}

impl Status {
    /// `GREEN`, `RED`, `SKIP`, `YELLOW`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Green => "GREEN",
            Status::Red => "RED",
            Status::Skip => "SKIP",
            Status::Yellow => "YELLOW",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Status::Green => "\x1b[32m",
            Status::Red => "\x1b[31m",
            Status::Skip | Status::Yellow => "\x1b[33m",
        }
    }
}

/// One line of a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// Outcome.
    pub status: Status,
    /// Check name, e.g. `listNodes`.
    pub check: String,
    /// What was found.
    pub detail: String,
    /// How to fix it, when there is advice.
    pub fix: Option<String>,
}

impl Item {
    /// A GREEN item.
    pub fn green(check: &str, detail: impl Into<String>) -> Item {
        Item::new(Status::Green, check, detail, None)
    }

    /// A RED item with a fix.
    pub fn red(check: &str, detail: impl Into<String>, fix: Option<String>) -> Item {
        Item::new(Status::Red, check, detail, fix)
    }

    /// A YELLOW item: it works, but the fix says what would make it right.
    pub fn yellow(check: &str, detail: impl Into<String>, fix: Option<String>) -> Item {
        Item::new(Status::Yellow, check, detail, fix)
    }

    /// A SKIP item.
    pub fn skip(check: &str, detail: impl Into<String>) -> Item {
        Item::new(Status::Skip, check, detail, None)
    }

    /// Any item.
    pub fn new(
        status: Status,
        check: &str,
        detail: impl Into<String>,
        fix: Option<String>,
    ) -> Item {
        Item {
            status,
            check: check.to_owned(),
            detail: detail.into(),
            fix,
        }
    }

    /// Adds a fix hint.
    pub fn with_fix(mut self, fix: impl Into<String>) -> Item {
        self.fix = Some(fix.into());
        self
    }
}

/// An ordered list of items.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Items in the order they were checked.
    pub items: Vec<Item>,
}

impl Report {
    /// Appends an item.
    pub fn push(&mut self, item: Item) {
        self.items.push(item);
    }

    /// Whether any item is YELLOW.
    pub fn is_yellow(&self) -> bool {
        self.items.iter().any(|i| i.status == Status::Yellow)
    }

    /// `RED` when any item is RED, else `YELLOW` when any is YELLOW, else `GREEN`.
    pub fn verdict(&self) -> &'static str {
        if self.is_red() {
            "RED"
        } else if self.is_yellow() {
            "YELLOW"
        } else {
            "GREEN"
        }
    }

    /// Whether any item is RED.
    pub fn is_red(&self) -> bool {
        self.items.iter().any(|i| i.status == Status::Red)
    }

    /// The plain or coloured text form: a title, its underline, one line per item and
    /// `fix:` lines.
    pub fn render(&self, title: &str, colour: bool) -> String {
        let mut out = format!("\n{title}\n{}\n", "-".repeat(title.chars().count()));
        for item in &self.items {
            let tag = format!("[{}]", item.status.as_str());
            let tag = if colour {
                format!("{}{tag}\x1b[0m", item.status.colour())
            } else {
                tag
            };
            out.push_str(&format!("{tag} {}: {}\n", item.check, item.detail));
            if let Some(fix) = &item.fix {
                out.push_str(&format!("         fix: {fix}\n"));
            }
        }
        out
    }

    /// The `--json` form.
    pub fn to_json(&self) -> Value {
        json!({
            "status": self.verdict(),
            "items": self.items.iter().map(|i| json!({
                "status": i.status.as_str(),
                "check": i.check,
                "detail": i.detail,
                "fix": i.fix,
            })).collect::<Vec<_>>(),
        })
    }
}

/// Whether to colour stdout: a terminal, and `NO_COLOR` not set.
pub fn use_colour() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_plain_and_red() {
        let mut r = Report::default();
        r.push(Item::green("listNodes", "Found 3 nodes"));
        assert!(!r.is_red());
        r.push(Item::red("tls", "expired", Some("renew".into())));
        let text = r.render("Doctor", false);
        assert!(text.contains("[GREEN] listNodes: Found 3 nodes\n"));
        assert!(text.contains("[RED] tls: expired\n         fix: renew\n"));
        assert!(!text.contains('\x1b'));
        assert!(r.render("D", true).contains("\x1b[31m[RED]"));
        assert_eq!(r.to_json()["status"], "RED");
    }
}
