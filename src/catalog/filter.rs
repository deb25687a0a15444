//! Result filters: a row may declare that only some entries of a list answer are kept,
//! for selections the Proxmox API cannot make on the server (e.g. "QEMU templates only":
//! `GET /nodes/{node}/qemu` has no template filter).
//!
//! Invariant: a filter only ever removes entries of an array answer; any other answer
//! passes unchanged, and the request sent to Proxmox is the same with or without it.
//! Comparison follows Proxmox's loose Perl typing: `1`, `"1"` and `true` are one value.

use serde_json::Value;

/// The value a field must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterValue {
    /// An integer; also matches the same digits as a string, and `true`/`false` for 1/0.
    Int(i64),
    /// A string, compared exactly.
    Str(&'static str),
}

/// Keep the array entries whose `field` equals `equals` (entries without it are dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultFilter {
    /// Field of each entry, e.g. `template`.
    pub field: &'static str,
    /// Required value.
    pub equals: FilterValue,
}

impl ResultFilter {
    /// `field == value` for an integer (Perl boolean) field.
    pub const fn int(field: &'static str, value: i64) -> ResultFilter {
        ResultFilter {
            field,
            equals: FilterValue::Int(value),
        }
    }

    /// Whether one entry is kept.
    pub fn keeps(&self, entry: &Value) -> bool {
        let Some(found) = entry.get(self.field) else {
            return false;
        };
        match (self.equals, found) {
            (FilterValue::Int(want), Value::Number(n)) => n.as_i64() == Some(want),
            (FilterValue::Int(want), Value::String(s)) => s.trim().parse::<i64>() == Ok(want),
            (FilterValue::Int(want), Value::Bool(b)) => i64::from(*b) == want,
            (FilterValue::Str(want), Value::String(s)) => s == want,
            _ => false,
        }
    }

    /// Applies the filter to an answer: arrays lose the entries that do not match.
    pub fn apply(&self, answer: Value) -> Value {
        match answer {
            Value::Array(items) => {
                Value::Array(items.into_iter().filter(|e| self.keeps(e)).collect())
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_perl_style_matches_only() {
        let f = ResultFilter::int("template", 1);
        let out = f.apply(json!([
            {"vmid": 1, "template": 1},
            {"vmid": 2, "template": "1"},
            {"vmid": 3, "template": true},
            {"vmid": 4, "template": 0},
            {"vmid": 5}
        ]));
        let ids: Vec<i64> = out
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["vmid"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, vec![1, 2, 3]);
        assert_eq!(f.apply(json!({"a": 1})), json!({"a": 1}));
        assert!(
            ResultFilter {
                field: "t",
                equals: FilterValue::Str("x")
            }
            .keeps(&json!({"t": "x"}))
        );
    }
}
