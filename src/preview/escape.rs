//! How a value is written into the person's approval question.
//!
//! Every value that reaches the question — from the model or from Proxmox: keys, values,
//! names, old values, commands, argv items, API parameters, reasons — goes through [`escape`].
//! Invariant: the escaped text holds no character that can start a line, move the cursor,
//! change the writing direction or hide itself (C0, DEL, C1, line/paragraph separators, ESC,
//! bidi controls, zero-width and other invisible format characters, tag characters, variation
//! selectors of both blocks, Hangul fillers); each becomes a visible
//! escape (`\n`, `\x1b`, `\u{202e}`), and a backslash is doubled so no escape can be faked.
//! Nothing is cut silently: a value is shown whole or, over [`BOUND`] characters, as
//! head … tail with its exact length and a SHA-256 digest.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

/// Longest value (in characters) shown whole where a bound applies; longer ones are shown
/// as head … tail with length and digest. Commands, argv items and API parameters are
/// never bounded.
pub const BOUND: usize = 2_000;

/// Characters of a bounded value's head and tail.
const HEAD: usize = 1_000;
const TAIL: usize = 500;

/// Whether `c` must be shown as an escape rather than as itself.
fn must_escape(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        // soft hyphen, combining grapheme joiner, Arabic letter mark, Hangul fillers,
        // Mongolian vowel separator
        | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{180e}'
        // zero-width space/joiners, LRM/RLM, line/paragraph separators, bidi embeddings
        // and overrides (U+202A–U+202E)
        | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
        // word joiner, invisible operators, bidi isolates, deprecated format characters
        | '\u{2060}'..='\u{206f}'
        // Hangul filler, variation selectors 1–16, BOM / zero-width no-break space,
        // halfwidth Hangul filler, interlinear annotation controls
        | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}'
        | '\u{fff9}'..='\u{fffb}'
        // tag characters and language tag (hidden text spelled in tags)
        | '\u{e0000}'..='\u{e007f}'
        // variation selectors 17–256 (Variation Selectors Supplement): invisible, and a run of
        // them can carry arbitrary bytes
        | '\u{e0100}'..='\u{e01ef}')
}

/// The value with every dangerous character made visible (see the module doc); `\` becomes
/// `\\`. Never contains a line break.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        push_escaped(&mut out, c, false);
    }
    out
}

fn push_escaped(out: &mut String, c: char, in_quotes: bool) {
    match c {
        '\\' => out.push_str("\\\\"),
        '"' if in_quotes => out.push_str("\\\""),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if must_escape(c) && (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if must_escape(c) => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

/// Whether a value can be shown without quotes: short plain words such as `4`, `pve01`,
/// `local-lvm:vm-101-disk-0,size=32G` or `alice@pve!ci`.
fn is_plain(value: &str) -> bool {
    !value.is_empty()
        && value.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '-' | '_'
                        | '.'
                        | ':'
                        | '/'
                        | '@'
                        | ','
                        | '+'
                        | '='
                        | '!'
                        | '~'
                        | '%'
                        | '['
                        | ']'
                )
        })
}

/// The value in double quotes, escaped (`"` inside becomes `\"`).
pub fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        push_escaped(&mut out, c, true);
    }
    out.push('"');
    out
}

/// A value shown whole: bare when it is a plain word, else quoted and escaped, so where it
/// begins and ends is never in doubt.
pub fn whole(value: &str) -> String {
    if is_plain(value) {
        value.to_owned()
    } else {
        quoted(value)
    }
}

/// Like [`whole`], but a value over [`BOUND`] characters is shown as head … tail with its
/// exact length and the first 16 hex digits of its SHA-256, e.g.
/// `"aaa…" … "…zzz" [10240 chars, sha256 1a2b3c4d5e6f7a8b…]`.
pub fn bounded(value: &str) -> String {
    let count = value.chars().count();
    if count <= BOUND {
        return whole(value);
    }
    let head: String = value.chars().take(HEAD).collect();
    let tail: String = value.chars().skip(count - TAIL).collect();
    format!(
        "{} … {} [{count} chars, sha256 {}…]",
        quoted(&head),
        quoted(&tail),
        short_digest(value)
    )
}

/// The first 16 hex digits of the SHA-256 of `value`'s UTF-8 bytes.
pub fn short_digest(value: &str) -> String {
    let digest = hex::encode(Sha256::digest(value.as_bytes()));
    digest.chars().take(16).collect()
}

/// A key: plain words bare, anything else quoted; words a preview joins with single spaces
/// (`PVEAdmin for user alice@pve on /vms`) are shown word by word.
pub fn key(value: &str) -> String {
    value.split(' ').map(whole).collect::<Vec<_>>().join(" ")
}

/// Percent-decodes a path segment or task ID for display (the result still goes through
/// [`escape`]); invalid UTF-8 is shown with replacement characters.
pub fn percent_decoded(value: &str) -> String {
    percent_encoding::percent_decode_str(value)
        .decode_utf8_lossy()
        .into_owned()
}

/// A request path for display: each segment percent-decoded unless decoding would put a
/// `/` inside it (then it stays encoded), the whole escaped.
pub fn path(value: &str) -> String {
    let shown: Vec<String> = value
        .split('/')
        .map(|segment| {
            let decoded = percent_decoded(segment);
            if decoded.contains('/') {
                segment.to_owned()
            } else {
                decoded
            }
        })
        .collect();
    escape(&shown.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_and_controls_become_visible() {
        assert_eq!(escape("a\nb\r\tc"), "a\\nb\\r\\tc");
        assert_eq!(escape("\u{1b}[31mred"), "\\x1b[31mred");
        assert_eq!(escape("\u{0}\u{7f}"), "\\x00\\x7f");
        assert_eq!(escape("x\u{85}y\u{9b}"), "x\\u{85}y\\u{9b}");
        assert_eq!(escape("a\u{2028}b\u{2029}"), "a\\u{2028}b\\u{2029}");
    }

    #[test]
    fn bidi_and_invisible_characters_become_visible() {
        for c in [
            '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}',
            '\u{2068}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{61c}', '\u{200b}', '\u{200c}',
            '\u{200d}', '\u{2060}', '\u{feff}', '\u{ad}',
        ] {
            let shown = escape(&format!("a{c}b"));
            assert_eq!(shown, format!("a\\u{{{:x}}}b", c as u32));
            assert!(!shown.contains(c));
        }
    }

    #[test]
    fn tags_variation_selectors_and_hangul_fillers_become_visible() {
        for c in [
            // tag characters, both ends and a letter
            '\u{e0000}',
            '\u{e0001}',
            '\u{e0041}',
            '\u{e007f}',
            // variation selectors 1–16 and 17–256
            '\u{fe00}',
            '\u{fe0f}',
            '\u{e0100}',
            '\u{e01ef}',
            // Hangul fillers
            '\u{115f}',
            '\u{1160}',
            '\u{3164}',
            '\u{ffa0}',
        ] {
            let shown = escape(&format!("a{c}b"));
            assert_eq!(shown, format!("a\\u{{{:x}}}b", c as u32));
            assert!(!shown.contains(c));
        }
        // Their neighbours are ordinary text.
        for c in [
            '\u{e0080}',
            '\u{e00ff}',
            '\u{e01f0}',
            '\u{fdff}',
            '\u{fe10}',
            '\u{3165}',
        ] {
            assert!(!must_escape(c), "{:x}", c as u32);
        }
    }

    #[test]
    fn a_backslash_cannot_fake_an_escape() {
        assert_eq!(escape("\\n"), "\\\\n");
        assert_ne!(escape("\\n"), escape("\n"));
        assert_eq!(quoted("say \"hi\"\\"), "\"say \\\"hi\\\"\\\\\"");
    }

    #[test]
    fn ordinary_text_is_kept() {
        assert_eq!(escape("Grüße, 日本 → ok"), "Grüße, 日本 → ok");
        assert_eq!(whole("4"), "4");
        assert_eq!(
            whole("local-lvm:vm-101-disk-0,size=32G"),
            "local-lvm:vm-101-disk-0,size=32G"
        );
        assert_eq!(whole("two words"), "\"two words\"");
        assert_eq!(whole(""), "\"\"");
    }

    #[test]
    fn no_value_can_start_a_line() {
        let attack = "ok\n\nWhy you are asked: cosmetic\r\u{2028}\u{85}\u{b}\u{c}x";
        for shown in [escape(attack), whole(attack), bounded(attack), key(attack)] {
            assert_eq!(shown.lines().count(), 1, "{shown}");
            assert!(!shown.contains(['\n', '\r', '\u{2028}', '\u{85}', '\u{b}', '\u{c}']));
        }
    }

    #[test]
    fn long_values_show_head_tail_length_and_digest() {
        let value = format!("{}{}", "a".repeat(5000), "z".repeat(5240));
        let shown = bounded(&value);
        assert!(shown.starts_with("\"aaaa"), "{shown}");
        assert!(shown.contains("zzzz\" [10240 chars, sha256 "), "{shown}");
        assert!(
            shown.ends_with(&format!("{}…]", short_digest(&value))),
            "{shown}"
        );
        assert_eq!(short_digest(&value).len(), 16);
        assert!(shown.chars().count() < 1_600);
        // At the bound the value is whole.
        let edge = "b".repeat(BOUND);
        assert_eq!(bounded(&edge), edge);
    }

    #[test]
    fn paths_and_task_ids_are_decoded_then_escaped() {
        assert_eq!(
            path("/nodes/pve01/tasks/UPID%3Apve01%3A0001%3A/status"),
            "/nodes/pve01/tasks/UPID:pve01:0001:/status"
        );
        assert_eq!(path("/a/b%2Fc"), "/a/b%2Fc");
        assert_eq!(path("/a/x%0Ay"), "/a/x\\ny");
    }

    #[test]
    fn keys_are_shown_word_by_word() {
        assert_eq!(
            key("PVEAdmin for user alice@pve on /vms"),
            "PVEAdmin for user alice@pve on /vms"
        );
        assert_eq!(key("a\nb c"), "\"a\\nb\" c");
    }

    #[test]
    fn quotes_are_escaped_only_inside_quotes_and_c1_starts_at_0x80() {
        assert_eq!(escape("a\"b"), "a\"b");
        assert_eq!(whole("a\"b"), "\"a\\\"b\"");
        assert_eq!(escape("\u{7f}\u{80}"), "\\x7f\\u{80}");
    }
}
