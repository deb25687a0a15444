//! JSON with comments (JSONC), the format VS Code reads `.vscode/mcp.json` in: `//` and
//! `/* */` comments and trailing commas. Reading blanks them out; writing edits the original
//! text in place — one member of an object replaced or added — so every comment survives.
//!
//! Invariant: comments are blanked with spaces of the same length (newlines kept), so every
//! byte offset found in the blanked text is the same offset in the original; an edit never
//! rewrites bytes outside the member it adds or replaces (plus one separating comma).

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

/// `text` with every comment (and, with `trailing_commas`, every trailing comma) replaced by
/// spaces (newlines kept), so offsets are unchanged, and whether anything was replaced.
fn blank(text: &str, trailing_commas: bool) -> (String, bool) {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut changed = false;
    let mut i = 0;
    // Offset of the last comma seen outside strings, cleared by any other significant byte.
    let mut pending_comma: Option<usize> = None;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                pending_comma = None;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
                changed = true;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |e| i + 2 + e + 2);
                for byte in &mut out[i..end] {
                    if *byte != b'\n' {
                        *byte = b' ';
                    }
                }
                changed = true;
                i = end;
            }
            b',' => {
                pending_comma = Some(i);
                i += 1;
            }
            b'}' | b']' => {
                if let Some(comma) = pending_comma.take()
                    && trailing_commas
                {
                    out[comma] = b' ';
                    changed = true;
                }
                i += 1;
            }
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            _ => {
                pending_comma = None;
                i += 1;
            }
        }
    }
    // Only ASCII bytes outside strings were replaced by ASCII spaces: still valid UTF-8.
    (String::from_utf8_lossy(&out).into_owned(), changed)
}

/// A parsed JSONC document that remembers its original text.
#[derive(Debug)]
pub struct Document {
    original: String,
    /// The original with comments blanked (trailing commas kept): where spans are found.
    plain: String,
    /// Whether the original has comments or trailing commas (a plain rewrite would lose them).
    pub has_comments: bool,
    /// The value, comments removed.
    pub root: Map<String, Value>,
}

/// Reads `text` (an empty text is an empty object).
pub fn parse(text: &str) -> Result<Document, JsoncError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let (plain, _) = blank(text, false);
    let (blanked, has_comments) = blank(text, true);
    let root = if blanked.trim().is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(&blanked) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(JsoncError::NotAnObject("the file".into())),
            Err(e) => {
                return Err(JsoncError::Invalid {
                    line: e.line(),
                    column: e.column(),
                });
            }
        }
    };
    Ok(Document {
        original: text.to_owned(),
        plain,
        has_comments,
        root,
    })
}

/// One member of an object: where its value starts and ends.
struct Member {
    key: String,
    value_start: usize,
    value_end: usize,
}

/// An object's braces and members, found in the comment-blanked text.
struct ObjectSpan {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The end (exclusive) of the value starting at `i` (already valid JSON: serde accepted it).
fn value_end(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        }
        Some(b'{') | Some(b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = value_end(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            j
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            j
        }
    }
}

/// The object whose `{` is at `open` in the comment-blanked text (trailing commas allowed).
fn object_at(plain: &str, open: usize) -> ObjectSpan {
    let b = plain.as_bytes();
    let mut members = Vec::new();
    let mut i = skip_ws(b, open + 1);
    while i < b.len() && b[i] == b'"' {
        let key_end = value_end(b, i);
        let key = serde_json::from_str::<String>(&plain[i..key_end]).unwrap_or_default();
        let value_start = skip_ws(b, skip_ws(b, key_end) + 1);
        let end = value_end(b, value_start);
        members.push(Member {
            key,
            value_start,
            value_end: end,
        });
        i = skip_ws(b, end);
        if b.get(i) == Some(&b',') {
            i = skip_ws(b, i + 1);
        }
    }
    ObjectSpan {
        open,
        close: i,
        members,
    }
}

/// The indentation (spaces and tabs) of the line holding `offset`.
fn indent_of(text: &str, offset: usize) -> &str {
    let line_start = text[..offset].rfind('\n').map_or(0, |n| n + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// `value` pretty-printed, its lines after the first indented by `indent`.
fn render(value: &Value, indent: &str) -> String {
    format!("{value:#}").replace('\n', &format!("\n{indent}"))
}

impl Document {
    /// The object at `path` (a chain of keys from the root), located in the text.
    fn span(&self, path: &[&str]) -> Result<ObjectSpan, JsoncError> {
        let b = self.plain.as_bytes();
        let open = skip_ws(b, 0);
        if b.get(open) != Some(&b'{') {
            return Err(JsoncError::NotAnObject("the file".into()));
        }
        let mut span = object_at(&self.plain, open);
        for (depth, key) in path.iter().enumerate() {
            let Some(member) = span.members.iter().find(|m| m.key == *key) else {
                return Err(JsoncError::NotAnObject(path[..=depth].join(".")));
            };
            if b.get(member.value_start) != Some(&b'{') {
                return Err(JsoncError::NotAnObject(path[..=depth].join(".")));
            }
            span = object_at(&self.plain, member.value_start);
        }
        Ok(span)
    }

    /// Sets member `key` of the object at `path` to `value`, editing the original text: an
    /// existing value is replaced (refused when comments lie inside it, since they cannot be
    /// kept), a new member is added after the last one. Everything else is kept byte for byte.
    pub fn set(&mut self, path: &[&str], key: &str, value: &Value) -> Result<(), CommentLoss> {
        let span = self.span(path).map_err(|_| CommentLoss::Structure)?;
        let (start, end, replacement) =
            if let Some(member) = span.members.iter().find(|m| m.key == key) {
                let (s, e) = (member.value_start, member.value_end);
                if self.original[s..e] != self.plain[s..e] {
                    return Err(CommentLoss::InsideEntry);
                }
                (s, e, render(value, indent_of(&self.original, s)))
            } else {
                self.insertion(&span, key, value)
            };
        self.original.replace_range(start..end, &replacement);
        *self = parse(&self.original).map_err(|_| CommentLoss::Structure)?;
        Ok(())
    }

    /// Where and what to insert to add `key: value` as the last member of `span`: the text from
    /// the end of the last value to the closing brace (comments included) is kept.
    fn insertion(&self, span: &ObjectSpan, key: &str, value: &Value) -> (usize, usize, String) {
        let outer = indent_of(&self.original, span.open).to_owned();
        let member_indent = match span.members.first() {
            Some(first) if self.original[span.open..first.value_start].contains('\n') => {
                let key_line = self.original[..first.value_start]
                    .rfind('\n')
                    .map_or(0, |n| n + 1);
                indent_of(&self.original, key_line).to_owned()
            }
            _ => format!("{outer}  "),
        };
        // Insert after the last significant text (a value, a comma or a comment) before `}`.
        let body = &self.original[span.open + 1..span.close];
        let at = span.open + 1 + body.trim_end().len();
        let mut text = String::new();
        let mut start = at;
        if let Some(last) = span.members.last() {
            let has_comma = self.plain[last.value_end..span.close]
                .trim_start()
                .starts_with(',');
            if !has_comma {
                // The comma goes right after the value, before any comment on its line.
                start = last.value_end;
                text.push(',');
                text.push_str(&self.original[last.value_end..at]);
            }
        }
        text.push('\n');
        text.push_str(&member_indent);
        text.push_str(&format!(
            "{}: {}",
            Value::from(key),
            render(value, &member_indent)
        ));
        if !self.original[at..span.close].contains('\n') {
            text.push('\n');
            text.push_str(&outer);
        }
        (start, at, text)
    }

    /// The edited text.
    pub fn text(&self) -> &str {
        &self.original
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
}
