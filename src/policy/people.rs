//! Per-person Proxmox identity: the operator's map from an OAuth subject to that person's own
//! Proxmox API token, read once from `PVE_PEOPLE_FILE`.
//!
//! With it, a call of an OAuth caller runs under the person's token, so Proxmox's ACLs limit
//! the person and its task log names them. The file:
//!
//! ```json
//! {"unmapped": "refuse",
//!  "people": {"alice@example.com": {"tokenId": "alice@pve!mcp", "secret": "…"}}}
//! ```
//!
//! Invariants: the file is the operator's alone (no group or other permission bits, else
//! start-up stops); unknown keys are refused; a secret is never shown by `Debug`, in an error
//! or a log line (parse errors have their quoted values blanked); subjects are matched by the
//! digest of the raw claim ([`crate::identity::subject_key`]), never by a cleaned name.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::PolicyError;
use crate::identity::subject_key;

/// The variable naming the people file.
pub const ENV_PEOPLE_FILE: &str = "PVE_PEOPLE_FILE";

/// What an OAuth caller the file does not name gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Unmapped {
    /// A clear refusal, before anything is sent (the default).
    #[default]
    Refuse,
    /// The server's shared token, said so in the audit trail.
    Shared,
}

/// One person's Proxmox API token. `Debug` hides the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct PersonToken {
    /// The subject as the file writes it (for `doctor`, `bootstrap` and messages).
    pub subject: String,
    /// `user@realm!token`, checked.
    pub token_id: String,
    secret: String,
}

impl PersonToken {
    /// The token's user, realm and name (`token_id` is checked to have exactly these parts).
    pub fn parts(&self) -> (&str, &str, &str) {
        split_token_id(&self.token_id).unwrap_or(("", "", ""))
    }

    /// The secret; only for building the request header.
    pub fn expose_secret(&self) -> &str {
        &self.secret
    }
}

impl std::fmt::Debug for PersonToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersonToken")
            .field("subject", &self.subject)
            .field("token_id", &self.token_id)
            .field("secret", &"<hidden>")
            .finish()
    }
}

/// The people file, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct People {
    /// The file as configured (for messages).
    pub path: String,
    /// What a caller without an entry gets.
    pub unmapped: Unmapped,
    /// The entries, by the digest of the raw subject.
    by_subject: BTreeMap<[u8; 32], PersonToken>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileShape {
    /// Checked by hand: serde's "unknown variant" error would echo the value.
    #[serde(default)]
    unmapped: Option<String>,
    people: BTreeMap<String, EntryShape>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EntryShape {
    token_id: String,
    secret: String,
}

impl People {
    /// Reads and checks the file at `path`.
    pub fn from_file(path: &Path) -> Result<People, PolicyError> {
        let shown = path.display().to_string();
        let bad = |problem: String| PolicyError::BadPeopleFile {
            path: shown.clone(),
            problem,
        };
        let meta =
            std::fs::metadata(path).map_err(|e| bad(format!("cannot be read: {}", e.kind())))?;
        check_private(&meta).map_err(&bad)?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| bad(format!("cannot be read: {}", e.kind())))?;
        People::parse(&text, &shown).map_err(bad)
    }

    /// Checks the file's text (`path` only names it in messages).
    fn parse(text: &str, path: &str) -> Result<People, String> {
        let shape: FileShape =
            serde_json::from_str(text).map_err(|e| blank_quoted(&e.to_string()))?;
        let unmapped = match shape.unmapped.as_deref() {
            None | Some("refuse") => Unmapped::Refuse,
            Some("shared") => Unmapped::Shared,
            Some(_) => return Err("`unmapped` must be \"refuse\" or \"shared\"".to_owned()),
        };
        let mut by_subject = BTreeMap::new();
        for (subject, entry) in shape.people {
            if subject.trim().is_empty() {
                return Err("a person's subject is empty".to_owned());
            }
            if split_token_id(&entry.token_id).is_none() {
                return Err(format!(
                    "{subject:?}: tokenId {:?} is not `user@realm!token` (no blanks, and no '@', '!' or '=' inside a part)",
                    entry.token_id
                ));
            }
            if entry.secret.trim().is_empty() || !entry.secret.chars().all(|c| c.is_ascii_graphic())
            {
                return Err(format!(
                    "{subject:?}: the secret is empty or holds characters a token secret never has"
                ));
            }
            let token = PersonToken {
                subject: subject.clone(),
                token_id: entry.token_id,
                secret: entry.secret,
            };
            by_subject.insert(subject_key(&subject), token);
        }
        Ok(People {
            path: path.to_owned(),
            unmapped,
            by_subject,
        })
    }

    /// The token of the caller whose raw subject has this digest.
    pub fn token_of(&self, subject_key: &[u8; 32]) -> Option<&PersonToken> {
        self.by_subject.get(subject_key)
    }

    /// Every entry, in no particular order (for `doctor`).
    pub fn tokens(&self) -> impl Iterator<Item = &PersonToken> {
        self.by_subject.values()
    }
}

/// `user@realm!name` split into its parts, each non-empty and free of blanks, controls and the
/// separators; `None` otherwise.
pub fn split_token_id(token_id: &str) -> Option<(&str, &str, &str)> {
    let (user, rest) = token_id.split_once('@')?;
    let (realm, name) = rest.split_once('!')?;
    let fine = |part: &str| {
        !part.is_empty()
            && !part
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '@' | '!' | '='))
    };
    [user, realm, name]
        .iter()
        .all(|p| fine(p))
        .then_some((user, realm, name))
}

/// The file must be the owner's alone: it holds other people's secrets.
#[cfg(unix)]
fn check_private(meta: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "is readable or writable by others (mode {mode:04o}); it holds API token secrets: `chmod 600` it"
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_meta: &std::fs::Metadata) -> Result<(), String> {
    Ok(())
}

/// A parse error's text with every double-quoted value blanked: serde quotes the offending
/// value, which may be a secret written in the wrong place.
fn blank_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut inside = false;
    for c in message.chars() {
        if c == '"' {
            if !inside {
                out.push_str("\"…");
            } else {
                out.push('"');
            }
            inside = !inside;
        } else if !inside {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "5f0c2a7e-93b1-4d6e-8a2f-c0ffee000001";

    fn file(body: &str, mode: u32) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("people.json");
        std::fs::write(&path, body).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        (dir, path)
    }

    fn alice() -> String {
        format!(
            r#"{{"people": {{"alice": {{"tokenId": "alice@pve!mcp", "secret": "{SECRET}"}}}}}}"#
        )
    }

    #[test]
    fn a_private_file_maps_subjects_by_their_raw_digest_and_hides_secrets() {
        let (_dir, path) = file(&alice(), 0o600);
        let people = People::from_file(&path).unwrap();
        assert_eq!(people.unmapped, Unmapped::Refuse);
        let token = people.token_of(&subject_key("alice")).unwrap();
        assert_eq!(token.parts(), ("alice", "pve", "mcp"));
        assert_eq!(token.expose_secret(), SECRET);
        assert!(people.token_of(&subject_key("alice ")).is_none());
        assert!(!format!("{people:?}").contains(SECRET));
    }

    #[cfg(unix)]
    #[test]
    fn a_file_others_can_read_is_refused() {
        let (_dir, path) = file(&alice(), 0o640);
        let err = People::from_file(&path).unwrap_err().to_string();
        assert!(
            err.contains(ENV_PEOPLE_FILE) && err.contains("chmod 600"),
            "{err}"
        );
        assert!(err.contains("0640"), "{err}");
    }

    #[test]
    fn bad_entries_are_named_without_their_secret() {
        let cases = [
            (
                format!(
                    r#"{{"people": {{"a": {{"tokenId": "alice@pve", "secret": "{SECRET}"}}}}}}"#
                ),
                "user@realm!token",
            ),
            (
                format!(r#"{{"people": {{"a": {{"tokenid": "a@pve!x", "secret": "{SECRET}"}}}}}}"#),
                "unknown field",
            ),
            (
                format!(r#"{{"unmapped": "{SECRET}", "people": {{}}}}"#),
                "`unmapped` must be",
            ),
            (
                format!(
                    r#"{{"people": {{"a": {{"tokenId": "a@pve!x", "secret": ["{SECRET}"]}}}}}}"#
                ),
                "invalid type",
            ),
            (
                r#"{"people": {"a": {"tokenId": "a@pve!x", "secret": "with blank"}}}"#.to_owned(),
                "secret",
            ),
        ];
        for (body, expected) in cases {
            let (_dir, path) = file(&body, 0o600);
            let err = People::from_file(&path).unwrap_err().to_string();
            assert!(err.contains(expected), "{err}");
            assert!(
                !err.contains(SECRET) && !err.contains("with blank"),
                "{err}"
            );
        }
    }

    #[test]
    fn token_ids_have_exactly_three_clean_parts() {
        assert_eq!(split_token_id("a@pve!b"), Some(("a", "pve", "b")));
        for bad in [
            "a@pve",
            "a!b",
            "@pve!b",
            "a@!b",
            "a@pve!",
            "a b@pve!c",
            "a@p@ve!c",
            "a@pve!b!c",
            "a@pve!b=c",
        ] {
            assert_eq!(split_token_id(bad), None, "{bad}");
        }
    }
}
