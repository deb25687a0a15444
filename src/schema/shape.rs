//! The shaping arguments of long lists (`fields`, `limit`, `offset`): which rows take them,
//! their schema, and how a call's values are read into a [`Shape`]. They shape the answer and
//! are never sent to Proxmox.

use serde_json::{Value, json};

use crate::catalog::ToolSpec;

/// Name of the list control argument that keeps only some keys of each item; never sent.
pub const FIELDS: &str = "fields";
/// Name of the list control argument that caps how many items come back; never sent.
pub const LIMIT: &str = "limit";
/// Name of the list control argument that skips items (paging); never sent.
pub const OFFSET: &str = "offset";

const FIELDS_DESCRIPTION: &str = "Keys to keep.";
const LIMIT_DESCRIPTION: &str = "Max items.";
const OFFSET_DESCRIPTION: &str = "Items to skip.";

/// How a list result is shaped before it is returned: projection and paging, applied to
/// the answer, never sent to Proxmox.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shape {
    /// Keys to keep in each item; empty keeps all.
    pub fields: Vec<String>,
    /// Most items to return.
    pub limit: Option<usize>,
    /// Items to skip first.
    pub offset: usize,
}

/// A long list row: a read whose answer grows with the cluster (`ToolSpec::long_list`).
pub fn is_list(spec: &ToolSpec) -> bool {
    spec.effect.is_read() && spec.long_list
}

/// The shaping arguments a row takes: long list rows get `fields`, and `limit`/`offset`
/// unless the API pages the list itself (a row with its own `limit` or `start`). Short
/// answers (one node's bridges, a guest's snapshots) are not worth their schema bytes.
pub fn shaping_arguments(spec: &ToolSpec) -> impl Iterator<Item = &'static str> {
    let list = is_list(spec);
    let own = |name: &str| spec.params.iter().any(|p| p.name == name);
    let fields = (list && !own(FIELDS)).then_some(FIELDS);
    let pages = list && !own(LIMIT) && !own(OFFSET) && !own("start");
    let paging = pages.then_some([LIMIT, OFFSET]).into_iter().flatten();
    fields.into_iter().chain(paging)
}

pub(super) fn shaping_schema(name: &str) -> Value {
    match name {
        FIELDS => {
            json!({"type": "array", "items": {"type": "string"}, "description": FIELDS_DESCRIPTION})
        }
        LIMIT => json!({"type": "integer", "description": LIMIT_DESCRIPTION}),
        _ => json!({"type": "integer", "description": OFFSET_DESCRIPTION}),
    }
}

/// Reads one shaping argument into `shape`; `Err` says what is wrong with it.
pub(super) fn read_shaping(name: &str, value: &Value, shape: &mut Shape) -> Result<(), String> {
    match (name, value) {
        (_, Value::Null) => Ok(()),
        (FIELDS, Value::Array(items)) => {
            shape.fields = items
                .iter()
                .map(|item| match item {
                    Value::String(s) if !s.is_empty() => Ok(s.clone()),
                    _ => Err("every item must be a non-empty string".to_owned()),
                })
                .collect::<Result<_, _>>()?;
            Ok(())
        }
        (FIELDS, Value::String(s)) => {
            shape.fields = s
                .split(',')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .map(str::to_owned)
                .collect();
            Ok(())
        }
        (FIELDS, _) => Err("must be an array of key names".into()),
        (LIMIT, Value::Number(n)) => match n.as_u64() {
            Some(n) => {
                shape.limit = Some(usize::try_from(n).unwrap_or(usize::MAX));
                Ok(())
            }
            None => Err("must be a whole number (0 or more)".into()),
        },
        (_, Value::Number(n)) => match n.as_u64() {
            Some(n) => {
                shape.offset = usize::try_from(n).unwrap_or(usize::MAX);
                Ok(())
            }
            None => Err("must be a whole number (0 or more)".into()),
        },
        _ => Err("must be an integer".into()),
    }
}
