//! JSON with comments (JSONC), the format VS Code reads `.vscode/mcp.json` in: `//` and
//! `/* */` comments and trailing commas. The text is held as a concrete syntax tree
//! (`jsonc-parser`'s CST), so an edit — one member of an object replaced or added — keeps every
//! comment, the file's indentation, its line endings and its trailing-comma style.
//!
//! Only comments and trailing commas are allowed beyond strict JSON; anything else (single
//! quotes, bare keys, missing commas, a raw control character in a string, a number JSON cannot
//! hold) is refused as invalid, so the file is never touched.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstLeafNode, CstNode, CstRootNode};
use serde_json::{Map, Value};

/// Why a JSONC text cannot be read or edited.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JsoncError {
    /// Not valid JSONC.
    #[error("invalid JSON at line {line} column {column}")]
    Invalid {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// Valid, but not an object where one is needed.
    #[error("{0} must be an object")]
    NotAnObject(String),
}

/// Strict JSON plus comments and trailing commas.
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// The 1-based line and column of byte `offset` in `text`.
fn invalid_at(text: &str, offset: usize) -> JsoncError {
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    JsoncError::Invalid {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

/// Every leaf under `node` (tokens, literals, comments, whitespace), in the order of the text.
fn leaves(node: CstNode, out: &mut Vec<CstLeafNode>) {
    match node {
        CstNode::Leaf(leaf) => out.push(leaf),
        CstNode::Container(container) => {
            for child in container.children() {
                leaves(child, out);
            }
        }
    }
}

/// Whether `node` holds a comment anywhere inside it.
fn holds_comment(node: &CstNode) -> bool {
    node.is_comment() || node.children().iter().any(holds_comment)
}

/// `value` as the CST builds it.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

/// A parsed JSONC document.
#[derive(Debug)]
pub struct Document {
    cst: CstRootNode,
    /// The text the tree prints, as of the last parse or edit.
    text: String,
    /// Every comment, in order: an edit must leave exactly these.
    comments: Vec<String>,
    /// Whether the original has comments or trailing commas (a plain rewrite would lose them).
    pub has_comments: bool,
    /// The value, comments removed.
    pub root: Map<String, Value>,
}

/// Reads `text` (an empty text, or one holding only comments, is an empty object).
pub fn parse(text: &str) -> Result<Document, JsoncError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let cst = CstRootNode::parse(text, &options()).map_err(|e| JsoncError::Invalid {
        line: e.line_display(),
        column: e.column_display(),
    })?;
    let mut all = Vec::new();
    leaves(cst.clone().into(), &mut all);
    let (mut offset, mut comments, mut comma, mut trailing) = (0, Vec::new(), false, false);
    for leaf in all {
        let raw = leaf.to_string();
        match &leaf {
            CstLeafNode::Comment(_) => comments.push(raw.clone()),
            CstLeafNode::Whitespace(_) | CstLeafNode::Newline(_) => {}
            CstLeafNode::Token(t) if t.value() == ',' => comma = true,
            CstLeafNode::Token(t) if matches!(t.value(), '}' | ']') => {
                trailing |= comma;
                comma = false;
            }
            // The parser lets through raw control characters and out-of-range numbers; JSON
            // does not.
            CstLeafNode::StringLit(_) | CstLeafNode::NumberLit(_)
                if serde_json::from_str::<Value>(&raw).is_err() =>
            {
                return Err(invalid_at(text, offset));
            }
            _ => comma = false,
        }
        offset += raw.len();
    }
    let root = match cst.value() {
        None => Map::new(),
        Some(value) => match value.as_object().and_then(|o| o.to_serde_value()) {
            Some(Value::Object(map)) => map,
            _ => return Err(JsoncError::NotAnObject("the file".into())),
        },
    };
    Ok(Document {
        cst,
        text: text.to_owned(),
        has_comments: trailing || !comments.is_empty(),
        comments,
        root,
    })
}

impl Document {
    /// Sets member `key` of the object at `path` (a chain of keys from the root) to `value`: an
    /// existing value is replaced (refused when comments lie inside it, since they cannot be
    /// kept), a new member is added after the last one. Every comment is kept, in order: an
    /// edit that would lose one is refused and the document left as it was. Whitespace inside
    /// the edited object may be tidied (a one-line object opened onto lines, blank lines just
    /// inside its braces dropped); the new text follows the file's indentation, line endings
    /// and trailing-comma style.
    pub fn set(&mut self, path: &[&str], key: &str, value: &Value) -> Result<(), CommentLoss> {
        self.edit_tree(path, key, value)?;
        let refusal = match parse(&self.cst.to_string()) {
            Ok(doc) if doc.comments == self.comments => {
                *self = doc;
                return Ok(());
            }
            Ok(_) => CommentLoss::Moved,
            Err(_) => CommentLoss::Structure,
        };
        // Not expected of the tree; refused all the same, with the document as it was.
        if let Ok(original) = parse(&self.text) {
            *self = original;
        }
        Err(refusal)
    }

    /// The tree edit behind [`Document::set`]; the nodes it holds are gone when it returns.
    fn edit_tree(&self, path: &[&str], key: &str, value: &Value) -> Result<(), CommentLoss> {
        let mut object = match self.cst.value() {
            Some(root) => root.as_object().ok_or(CommentLoss::Structure)?,
            None if path.is_empty() => self
                .cst
                .object_value_or_create()
                .ok_or(CommentLoss::Structure)?,
            None => return Err(CommentLoss::Structure),
        };
        for step in path {
            object = object.object_value(step).ok_or(CommentLoss::Structure)?;
        }
        match object.get(key) {
            Some(member) if member.value().is_some_and(|v| holds_comment(&v)) => {
                Err(CommentLoss::InsideEntry)
            }
            Some(member) => {
                member.set_value(input(value));
                Ok(())
            }
            None => {
                object.append(key, input(value));
                Ok(())
            }
        }
    }

    /// The edited text.
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// Why an edit would lose comments, so nothing is written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommentLoss {
    /// Our entry itself holds comments: replacing it would drop them.
    #[error("comments inside the entry would be lost")]
    InsideEntry,
    /// The members to edit are not objects where the text says so.
    #[error("the layout cannot be edited in place")]
    Structure,
    /// The edited text would not hold the same comments in the same order.
    #[error("the edit would drop or reorder a comment")]
    Moved,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const VSCODE: &str = r#"{
  // Servers for this workspace
  "servers": {
    "other": { "command": "x" }, // keep me
    /* block
       comment */
  },
  "inputs": [], // trailing
}
"#;

    #[test]
    fn comments_and_trailing_commas_are_read() {
        let doc = parse(VSCODE).unwrap();
        assert!(doc.has_comments);
        assert_eq!(doc.root["servers"]["other"]["command"], "x");
        assert!(!parse(r#"{"a": "// not a comment"}"#).unwrap().has_comments);
        assert!(matches!(
            parse("{\"a\": 1,,}"),
            Err(JsoncError::Invalid { line: 1, .. })
        ));
    }

    #[test]
    fn adding_a_member_keeps_every_comment() {
        let mut doc = parse(VSCODE).unwrap();
        doc.set(
            &["servers"],
            "proxmox",
            &json!({"command": "n", "args": ["run"]}),
        )
        .unwrap();
        let text = doc.text();
        for comment in [
            "// Servers for this workspace",
            "// keep me",
            "/* block\n       comment */",
            "// trailing",
        ] {
            assert!(text.contains(comment), "{comment} lost:\n{text}");
        }
        let reread = parse(text).unwrap();
        assert_eq!(reread.root["servers"]["proxmox"]["args"][0], "run");
        assert_eq!(reread.root["servers"]["other"]["command"], "x");
    }

    #[test]
    fn replacing_a_member_keeps_the_comments_around_it() {
        let text =
            "{\n  \"servers\": {\n    // ours\n    \"proxmox\": {\"command\": \"old\"}\n  }\n}\n";
        let mut doc = parse(text).unwrap();
        doc.set(&["servers"], "proxmox", &json!({"command": "new"}))
            .unwrap();
        assert!(doc.text().contains("// ours"), "{}", doc.text());
        assert_eq!(doc.root["servers"]["proxmox"]["command"], "new");
        let inside = "{\"servers\": {\"proxmox\": {\"command\": \"x\" /* mine */}}}";
        let mut doc = parse(inside).unwrap();
        assert_eq!(
            doc.set(&["servers"], "proxmox", &json!({})),
            Err(CommentLoss::InsideEntry)
        );
    }

    #[test]
    fn a_comma_is_added_before_a_line_comment_not_after_it() {
        let text = "{\n  // top\n  \"a\": 1 // one\n}";
        let mut doc = parse(text).unwrap();
        doc.set(&[], "b", &json!(2)).unwrap();
        assert_eq!(doc.text(), "{\n  // top\n  \"a\": 1, // one\n  \"b\": 2\n}");
    }

    /// The entry a setup writes, for the tests below.
    fn entry() -> Value {
        json!({"command": "C:\\tools\\n \"q\".exe", "args": ["run"], "env": {"A": "b"}})
    }

    #[test]
    fn reading_and_printing_change_nothing() {
        for text in [
            VSCODE,
            "",
            "// only\n",
            "{\r\n\t\"a\": [1, 2,],\r\n}\r\n",
            "{} /* end */",
        ] {
            assert_eq!(parse(text).unwrap().text(), text);
        }
        assert_eq!(parse("\u{feff}{}").unwrap().text(), "{}");
    }

    #[test]
    fn the_file_s_line_endings_indentation_and_trailing_commas_are_followed() {
        let crlf = "{\r\n\t// c\r\n\t\"servers\": {\r\n\t\t\"other\": 1\r\n\t}\r\n}\r\n";
        let mut doc = parse(crlf).unwrap();
        doc.set(&["servers"], "proxmox", &entry()).unwrap();
        let text = doc.text();
        assert_eq!(
            text.matches('\n').count(),
            text.matches("\r\n").count(),
            "{text:?}"
        );
        assert!(
            text.contains("\t\t\"proxmox\": {\r\n\t\t\t\"command\""),
            "{text:?}"
        );
        assert!(text.contains("\t\t\t\"env\": {\r\n\t\t\t\t\"A\": \"b\"\r\n\t\t\t}"));

        let four = "{\n    \"servers\": {\n        \"other\": 1,\n    },\n}\n";
        let mut doc = parse(four).unwrap();
        doc.set(&["servers"], "proxmox", &entry()).unwrap();
        assert!(
            doc.text()
                .contains("\n        \"proxmox\": {\n            \"command\""),
            "{}",
            doc.text()
        );
        assert!(
            doc.text().contains("\"A\": \"b\",\n"),
            "trailing commas kept"
        );
        assert_eq!(doc.root["servers"]["proxmox"], entry());
    }

    #[test]
    fn replacing_twice_gives_the_same_text() {
        let mut doc = parse(VSCODE).unwrap();
        doc.set(&["servers"], "proxmox", &entry()).unwrap();
        let once = doc.text().to_owned();
        doc.set(&["servers"], "proxmox", &entry()).unwrap();
        assert_eq!(doc.text(), once);
        assert_eq!(
            doc.root["servers"]["proxmox"]["command"],
            entry()["command"]
        );
    }

    #[test]
    fn a_comment_anywhere_inside_the_replaced_value_refuses_and_changes_nothing() {
        for text in [
            "{\"s\": {\"proxmox\": {\"args\": [\"run\" // why\n]}}}",
            "{\"s\": {\"proxmox\": {/* a */}}}",
            "{\"s\": {\"proxmox\": {\"env\": {\"A\": \"b\" /* c */}}}}",
        ] {
            let mut doc = parse(text).unwrap();
            assert_eq!(
                doc.set(&["s"], "proxmox", &entry()),
                Err(CommentLoss::InsideEntry)
            );
            assert_eq!(doc.text(), text);
        }
        // Comments beside the value (around the colon, after it) are not inside it: kept.
        let beside = "{\"s\": {\"proxmox\" /* k */ : /* v */ {\"command\": \"x\"} // after\n}}";
        let mut doc = parse(beside).unwrap();
        doc.set(&["s"], "proxmox", &entry()).unwrap();
        for comment in ["/* k */ : /* v */ {", "} // after"] {
            assert!(doc.text().contains(comment), "{comment}: {}", doc.text());
        }
    }

    #[test]
    fn an_empty_file_or_one_holding_only_a_comment_gets_an_object() {
        for text in ["", "// only a comment\n", "/* a */"] {
            let mut doc = parse(text).unwrap();
            assert!(doc.root.is_empty());
            assert_eq!(doc.has_comments, !text.is_empty());
            doc.set(&[], "servers", &json!({"proxmox": entry()}))
                .unwrap();
            assert!(doc.text().contains(text), "{}", doc.text());
            assert_eq!(doc.root["servers"]["proxmox"], entry());
        }
        assert_eq!(
            parse("// c\n").unwrap().set(&["servers"], "x", &json!(1)),
            Err(CommentLoss::Structure)
        );
    }

    #[test]
    fn what_is_not_an_object_where_one_is_needed_is_refused() {
        assert_eq!(
            parse("[1] // c").unwrap_err(),
            JsoncError::NotAnObject("the file".into())
        );
        let text = "{\"servers\": [] // c\n}";
        let mut doc = parse(text).unwrap();
        assert_eq!(
            doc.set(&["servers"], "x", &json!(1)),
            Err(CommentLoss::Structure)
        );
        assert_eq!(
            doc.set(&["missing"], "x", &json!(1)),
            Err(CommentLoss::Structure)
        );
        assert_eq!(doc.text(), text);
    }

    #[test]
    fn anything_beyond_comments_and_trailing_commas_is_invalid() {
        for text in [
            "{'a': 1}",
            "{a: 1}",
            "{\"a\": 1 \"b\": 2}",
            "{\"a\": 0x1}",
            "{\"a\": +1}",
            "{\"a\": .5}",
            "{\"a\": NaN}",
            "{\"a\": \"\\x41\"}",
            "{\"a\": 1",
            "{\"a\": 1} /* open",
            "{} {}",
            "{\"a\": [1,,]}",
        ] {
            assert!(
                matches!(parse(text), Err(JsoncError::Invalid { .. })),
                "{text}"
            );
        }
        // What the parser lets through and JSON does not, with where it is.
        assert_eq!(
            parse("{\n  // c\n  \"a\": \"x\ty\"}").unwrap_err(),
            JsoncError::Invalid { line: 3, column: 8 }
        );
        assert_eq!(
            parse("{\"é\": 1e999}").unwrap_err(),
            JsoncError::Invalid { line: 1, column: 7 },
            "columns count characters, not bytes"
        );
    }

    #[test]
    fn deep_nesting_is_read_or_refused_without_overflowing() {
        let nest = |depth: usize| format!("{{\"a\": {}1{}}}", "[".repeat(depth), "]".repeat(depth));
        assert!(parse(&nest(400)).is_ok());
        assert!(matches!(
            parse(&nest(2000)),
            Err(JsoncError::Invalid { .. })
        ));
    }
}
