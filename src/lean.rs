//! Lean results: the projection and paging a caller asked for (`fields`, `limit`, `offset`),
//! and the size cap every result passes before the envelope.
//!
//! Invariant: a result is never cut silently. When the answer is larger than the cap
//! (`PVE_OUTPUT_CAP_BYTES`), what is returned says how much was kept, how much there was,
//! and which arguments fetch the rest or narrow the answer. Lists are cut between items and
//! texts between lines, so what is kept is always whole.

use serde_json::{Map, Value, json};

use crate::catalog::ToolSpec;
use crate::schema::{self, Shape};

/// Room kept under the cap for the wrapper and the note.
const NOTE_ROOM: usize = 768;

/// Applies `fields`, `offset` and `limit` to a list answer; other answers pass unchanged.
pub fn shape(data: Value, shape: &Shape) -> Value {
    if *shape == Shape::default() {
        return data;
    }
    let Value::Array(items) = data else {
        return data;
    };
    let take = shape.limit.unwrap_or(usize::MAX);
    Value::Array(
        items
            .into_iter()
            .skip(shape.offset)
            .take(take)
            .map(|item| project(item, &shape.fields))
            .collect(),
    )
}

/// Keeps only `fields` of an object item (all of them when `fields` is empty).
fn project(item: Value, fields: &[String]) -> Value {
    match item {
        Value::Object(map) if !fields.is_empty() => Value::Object(
            map.into_iter()
                .filter(|(key, _)| fields.iter().any(|f| f == key))
                .collect(),
        ),
        other => other,
    }
}

/// Cuts `data` to at most `cap` bytes of JSON, with a note saying how to get the rest: for
/// lists and plain text a `truncated` object; for an object answer `truncated: true` (the
/// meaning tools already give the key) plus an `outputCap` object.
pub fn cap(data: Value, spec: &ToolSpec, cap: usize) -> Value {
    let size = json_len(&data);
    if size <= cap {
        return data;
    }
    let budget = cap.saturating_sub(NOTE_ROOM);
    match data {
        Value::Array(items) => cut_items(items, spec, size, cap, budget),
        Value::String(text) => {
            let (kept, lines, total) = cut_lines(&text, budget);
            json!({"text": kept, "truncated": text_note(spec, size, cap, lines, total)})
        }
        Value::Object(map) => cut_object(map, spec, size, cap, budget),
        other => other,
    }
}

fn cut_items(items: Vec<Value>, spec: &ToolSpec, size: usize, cap: usize, budget: usize) -> Value {
    let total = items.len();
    let mut used = 2;
    let mut kept = Vec::new();
    for item in items {
        let len = json_len(&item) + 1;
        if used + len > budget {
            break;
        }
        used += len;
        kept.push(item);
    }
    let returned = kept.len();
    let own = |name: &str| spec.params.iter().any(|p| p.name == name);
    let how = if own("start") {
        format!(
            "Call again with start raised by {returned} (start={returned} if you passed none) for the next lines, or narrow the request."
        )
    } else if schema::shaping_arguments(spec).any(|a| a == schema::OFFSET) {
        format!(
            "Call again with offset raised by {returned} (offset={returned} if you passed none) for the next items, or pass fields=[...] to keep fewer keys per item."
        )
    } else if schema::shaping_arguments(spec).any(|a| a == schema::FIELDS) {
        "Pass fields=[...] to keep fewer keys per item, or narrow the request.".to_owned()
    } else {
        "Narrow the request (filters, a smaller range), or raise PVE_OUTPUT_CAP_BYTES.".to_owned()
    };
    json!({
        "items": kept,
        "truncated": {
            "returnedItems": returned,
            "totalItems": total,
            "bytes": size,
            "capBytes": cap,
            "next": how,
        }
    })
}

/// An object answer: its largest text field is cut by lines (a command's stdout, a log);
/// failing that, the JSON text itself is cut and returned as `partial`.
fn cut_object(
    mut map: Map<String, Value>,
    spec: &ToolSpec,
    size: usize,
    cap: usize,
    budget: usize,
) -> Value {
    let largest = map
        .iter()
        .filter(|(_, value)| value.is_string())
        .map(|(key, value)| (key.clone(), json_len(value)))
        .max_by_key(|(_, len)| *len);
    if let Some((key, len)) = largest {
        let rest = size - len;
        if let (true, Some(Value::String(text))) = (rest < budget, map.get(&key)) {
            let (mut kept, lines, total) = cut_lines(text, budget - rest);
            if lines == 0 {
                // One long line (base64, minified JSON): keep what fits, on a char boundary.
                kept = cut_chars(text, budget - rest);
            }
            let note = text_note(spec, size, cap, lines, total);
            map.insert(key, kept.into());
            // `truncated: true` keeps the meaning tools already give it (output was cut);
            // the note says by whom and how to get the rest.
            map.insert("truncated".into(), true.into());
            map.insert("outputCap".into(), note);
            return Value::Object(map);
        }
    }
    let text = Value::Object(map).to_string();
    let mut end = budget.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    json!({
        "partial": &text[..end],
        "truncated": {
            "bytes": size,
            "capBytes": cap,
            "next": "The JSON answer was cut at the cap (see `partial`). Narrow the request, or raise PVE_OUTPUT_CAP_BYTES.",
        }
    })
}

/// Keeps the longest prefix of `text` whose JSON form fits in `budget` bytes.
fn cut_chars(text: &str, budget: usize) -> String {
    let mut kept = String::new();
    let mut used = 2;
    for ch in text.chars() {
        let len = json_len(&Value::from(ch.to_string())) - 2;
        if used + len > budget {
            break;
        }
        used += len;
        kept.push(ch);
    }
    kept
}

/// Keeps the first whole lines of `text` that fit in `budget` bytes of JSON.
fn cut_lines(text: &str, budget: usize) -> (String, usize, usize) {
    let total = text.lines().count();
    let mut kept = String::new();
    let mut used = 2;
    let mut lines = 0;
    for line in text.lines() {
        let len = json_len(&Value::from(line)) - 1;
        if used + len > budget {
            break;
        }
        used += len;
        kept.push_str(line);
        kept.push('\n');
        lines += 1;
    }
    (kept, lines, total)
}

fn text_note(spec: &ToolSpec, size: usize, cap: usize, lines: usize, total: usize) -> Value {
    let paging: Vec<&str> = ["start", "limit", "tail", "lines", "max"]
        .into_iter()
        .filter(|name| spec.params.iter().any(|p| p.name == *name))
        .collect();
    let how = if paging.is_empty() {
        "Narrow the request, or raise PVE_OUTPUT_CAP_BYTES.".to_owned()
    } else {
        format!("Read fewer lines per call with {}.", paging.join("/"))
    };
    json!({
        "returnedLines": lines,
        "totalLines": total,
        "bytes": size,
        "capBytes": cap,
        "next": how,
    })
}

/// Bytes of `value`'s JSON text, counted while serializing — every answer is measured
/// against the cap, so nothing is allocated for it.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(0, |()| count.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    fn spec(name: &str) -> &'static ToolSpec {
        catalog::find(name).unwrap()
    }

    #[test]
    fn shape_projects_and_pages() {
        let data = json!([{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]);
        let shaped = shape(
            data,
            &Shape {
                fields: vec!["a".into()],
                limit: Some(1),
                offset: 1,
            },
        );
        assert_eq!(shaped, json!([{"a": 3}]));
    }

    #[test]
    fn an_oversized_list_is_cut_between_items_with_a_paging_note() {
        let items: Vec<Value> = (0..500)
            .map(|i| json!({"vmid": i, "name": "x".repeat(40)}))
            .collect();
        let capped = cap(Value::Array(items), spec("pve_list_qemu_vms"), 4096);
        let kept = capped["items"].as_array().unwrap().len();
        assert!(kept > 10 && kept < 500, "{kept}");
        assert!(json_len(&capped) <= 4096);
        assert_eq!(capped["truncated"]["totalItems"], 500);
        let next = capped["truncated"]["next"].as_str().unwrap();
        assert!(next.contains(&format!("offset={kept}")), "{next}");
    }

    #[test]
    fn an_oversized_text_field_is_cut_between_lines() {
        let stdout: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let data = json!({"stdout": stdout, "node": "pve01"});
        let capped = cap(data, spec("pve_docker_logs_in_container"), 2048);
        assert!(json_len(&capped) <= 2048);
        assert!(capped["stdout"].as_str().unwrap().ends_with('\n'));
        assert_eq!(capped["node"], "pve01");
        assert_eq!(capped["truncated"], true);
        assert_eq!(capped["outputCap"]["totalLines"], 2000);
        assert!(
            capped["outputCap"]["next"]
                .as_str()
                .unwrap()
                .contains("tail")
        );
    }

    #[test]
    fn the_counted_length_is_the_serialized_length() {
        let value = json!({"a": [1, "é\n", null], "b": {"c": true}});
        assert_eq!(json_len(&value), serde_json::to_vec(&value).unwrap().len());
    }

    #[test]
    fn one_long_line_is_cut_by_characters_not_dropped() {
        let data =
            json!({"content": "A".repeat(100_000), "encoding": "base64", "truncated": false});
        let capped = cap(data, spec("pve_docker_logs_in_container"), 4096);
        assert!(json_len(&capped) <= 4096, "{}", json_len(&capped));
        let kept = capped["content"].as_str().unwrap().len();
        assert!(kept > 3000, "kept {kept}");
        assert_eq!(capped["truncated"], true);
        assert_eq!(capped["encoding"], "base64");
    }

    #[test]
    fn a_small_answer_is_untouched() {
        let data = json!([{"a": 1}]);
        assert_eq!(cap(data.clone(), spec("pve_list_nodes"), 1024), data);
    }
}
