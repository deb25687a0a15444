//! Arguments that are lists of JSON objects (a plan's steps): their shape is checked here,
//! their content by the server code that reads them.
//!
//! Invariant: an accepted value is a non-empty array of objects, at most the row's `maximum`
//! items long (default [`MAX_OBJECTS`]); nothing else is accepted.

use serde_json::Value;

use super::ArgValue;
use crate::catalog::Param;

/// Most objects a list argument takes when its row sets no `maximum`.
pub const MAX_OBJECTS: usize = 32;

/// A non-empty array of objects, bounded, as [`ArgValue::Objects`].
pub(super) fn object_list(param: &Param, value: &Value) -> Result<ArgValue, String> {
    let Value::Array(items) = value else {
        return Err("must be an array of objects".into());
    };
    if items.is_empty() {
        return Err("must not be empty".into());
    }
    let most = param
        .maximum
        .and_then(|m| usize::try_from(m).ok())
        .unwrap_or(MAX_OBJECTS);
    if items.len() > most {
        return Err(format!("takes at most {most} items, got {}", items.len()));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Object(map) => Ok(map.clone()),
            _ => Err(format!("item {} must be an object", i + 1)),
        })
        .collect::<Result<Vec<_>, _>>()
        .map(ArgValue::Objects)
}
