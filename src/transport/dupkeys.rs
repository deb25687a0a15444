//! Refusal of duplicate JSON object keys in `tools/call` requests, checked on the raw bytes.
//!
//! rmcp decodes messages with serde_json, which keeps the *last* of two equal keys: a call with
//! `{"confirm": false, "confirm": true}` reaches the server as `confirm: true`, while a reviewer
//! or a logging proxy that keeps the first one saw `false`. Both transports therefore look at the
//! bytes before rmcp does and answer such a request with JSON-RPC `-32602` naming the key.
//!
//! Invariant: a `tools/call` message (or a batch holding one) with the same key twice in any
//! object — `params.arguments` and everything inside it, but also `params` or the envelope
//! itself — never reaches rmcp. [`check`] also tells whether the bytes are JSON at all, so the
//! stdio transport can answer a line that is not (rmcp ignores it silently).

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};

/// JSON-RPC "invalid params".
pub const INVALID_PARAMS: i64 = -32602;

/// A `tools/call` request that repeats a key.
#[derive(Debug, Clone, PartialEq)]
pub struct DuplicateKey {
    /// The request's `id`, when it has one (a notification cannot be answered).
    pub id: Option<Value>,
    /// Where the repeated key is, e.g. `params.arguments.confirm`.
    pub path: String,
    /// The repeated key itself.
    pub key: String,
}

impl DuplicateKey {
    /// The JSON-RPC error message.
    pub fn message(&self) -> String {
        format!(
            "Invalid params: duplicate key {:?} at {}; each key may appear only once in a tools/call request",
            self.key, self.path
        )
    }

    /// The whole JSON-RPC error response.
    pub fn response(&self) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": self.id.clone().unwrap_or(Value::Null),
            "error": {"code": INVALID_PARAMS, "message": self.message()},
        })
    }
}

/// What one pass over a message's bytes found.
#[derive(Debug, Clone, PartialEq)]
pub enum Checked {
    /// Valid JSON with no `tools/call` that repeats a key.
    Clean,
    /// A `tools/call` that repeats a key.
    Duplicate(DuplicateKey),
    /// Not one JSON value (syntax error, trailing bytes, not UTF-8, or nothing at all).
    NotJson,
}

/// Checks `bytes` (a single message or a batch, a leading UTF-8 byte-order mark allowed as rmcp
/// allows it) in one pass: whether they are JSON at all, and the first duplicate key of a
/// `tools/call` message.
pub fn check(bytes: &[u8]) -> Checked {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut scan = Scan::default();
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let parsed = Node { scan: &mut scan }.deserialize(&mut deserializer);
    if parsed.is_err() || deserializer.end().is_err() {
        return Checked::NotJson;
    }
    let found = scan.messages.into_iter().find_map(|message| {
        let is_call = message.methods.iter().any(|m| m == "tools/call");
        let (path, key) = message.duplicate?;
        is_call.then_some(DuplicateKey {
            id: message.id,
            path,
            key,
        })
    });
    found.map_or(Checked::Clean, Checked::Duplicate)
}

/// The first duplicate key of a `tools/call` message in `bytes` (a single message or a batch);
/// `None` when there is none, when no message is a `tools/call`, or when the bytes are not JSON.
pub fn duplicate_in_tool_call(bytes: &[u8]) -> Option<DuplicateKey> {
    match check(bytes) {
        Checked::Duplicate(found) => Some(found),
        Checked::Clean | Checked::NotJson => None,
    }
}

/// What was seen of one top-level message.
#[derive(Debug, Default)]
struct Message {
    methods: Vec<String>,
    id: Option<Value>,
    duplicate: Option<(String, String)>,
}

#[derive(Debug, Default)]
struct Scan {
    path: Vec<String>,
    messages: Vec<Message>,
}

impl Scan {
    /// Depth of a message envelope: 0 for a single message, 1 inside a batch array.
    fn at_envelope(&self) -> bool {
        self.path.is_empty() || (self.path.len() == 1 && self.path[0].starts_with('['))
    }

    fn record_duplicate(&mut self, key: &str) {
        let mut path: Vec<&str> = self
            .path
            .iter()
            .map(String::as_str)
            .skip_while(|p| p.starts_with('['))
            .collect();
        path.push(key);
        let rendered = path.join(".").replace(".[", "[");
        if let Some(message) = self.messages.last_mut()
            && message.duplicate.is_none()
        {
            message.duplicate = Some((rendered, key.to_owned()));
        }
    }
}

/// Walks one JSON value, recording duplicates and the envelope fields of each message.
struct Node<'a> {
    scan: &'a mut Scan,
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0usize;
        loop {
            self.scan.path.push(format!("[{index}]"));
            let more = seq.next_element_seed(Node { scan: self.scan })?;
            self.scan.path.pop();
            if more.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let envelope = self.scan.at_envelope();
        if envelope {
            self.scan.messages.push(Message::default());
        }
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                self.scan.record_duplicate(&key);
            }
            if envelope && (key == "method" || key == "id") {
                let value: Value = map.next_value()?;
                if let Some(message) = self.scan.messages.last_mut() {
                    match (key.as_str(), value) {
                        ("method", Value::String(method)) => message.methods.push(method),
                        ("id", id) => message.id = Some(id),
                        _ => {}
                    }
                }
                continue;
            }
            self.scan.path.push(key);
            let walked = map.next_value_seed(Node { scan: self.scan });
            self.scan.path.pop();
            walked?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Option<DuplicateKey> {
        duplicate_in_tool_call(text.as_bytes())
    }

    #[test]
    fn a_repeated_argument_is_found_and_named() {
        let found = check(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"confirm":false,"confirm":true}}}"#,
        )
        .unwrap();
        assert_eq!(found.id, Some(json!(7)));
        assert_eq!(found.path, "params.arguments.confirm");
        assert_eq!(found.key, "confirm");
        let response = found.response();
        assert_eq!(response["error"]["code"], -32602);
        assert!(
            response["error"]["message"]
                .as_str()
                .unwrap()
                .contains("\"confirm\"")
        );
    }

    #[test]
    fn nested_and_envelope_duplicates_are_found() {
        let nested = check(
            r#"{"id":"a","method":"tools/call","params":{"name":"x","arguments":{"net":[{"a":1,"a":2}]}}}"#,
        )
        .unwrap();
        assert_eq!(nested.path, "params.arguments.net[0].a");
        // The index names the element that repeats the key, not the first one.
        let later = check(
            r#"{"id":"b","method":"tools/call","params":{"name":"x","arguments":{"net":[{"a":1},{"b":1},{"c":1,"c":2}]}}}"#,
        )
        .unwrap();
        assert_eq!(later.path, "params.arguments.net[2].c");
        let doubled = check(
            r#"{"id":1,"method":"tools/call","params":{"arguments":{"confirm":false},"arguments":{"confirm":true}}}"#,
        )
        .unwrap();
        assert_eq!(doubled.path, "params.arguments");
        let batch = check(
            r#"[{"id":1,"method":"ping"},{"id":2,"method":"tools/call","params":{"arguments":{"b":1,"b":1}}}]"#,
        )
        .unwrap();
        assert_eq!(
            (batch.id, batch.path.as_str()),
            (Some(json!(2)), "params.arguments.b")
        );
    }

    #[test]
    fn other_messages_and_clean_calls_pass() {
        for text in [
            r#"{"id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":{"a":1},"b":[1,1]}}}"#,
            r#"{"id":1,"method":"tools/list","params":{"x":1,"x":2}}"#,
            r#"{not json"#,
            r#"{"id":1,"method":"tools/call"} trailing"#,
            "",
        ] {
            assert_eq!(check(text), None, "{text}");
        }
    }

    #[test]
    fn bytes_that_are_not_json_are_told_apart() {
        for text in ["hello", "{not json", r#"{"id":1} trailing"#, "", "  "] {
            assert_eq!(super::check(text.as_bytes()), Checked::NotJson, "{text:?}");
        }
        assert_eq!(super::check(b"\xff\xfe{}"), Checked::NotJson);
        for text in [
            "{}",
            "42",
            "[]",
            "{\"id\":1,\"method\":\"ping\"}\r\n",
            "\u{feff}{\"id\":1,\"method\":\"ping\"}",
        ] {
            assert_eq!(super::check(text.as_bytes()), Checked::Clean, "{text:?}");
        }
    }
}
