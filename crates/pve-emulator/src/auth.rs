//! The API tokens the emulator accepts and the ACL paths it denies each of them.
//!
//! Invariant: a request is served as a token only when its `Authorization` header is exactly
//! `PVEAPIToken=<token_id>=<secret>` for a registered pair (the configured token is compared
//! byte for byte, as before tokens could be added); a denial names one token and one ACL
//! path and never affects another token. Secrets are kept here only, never logged, and
//! [`Tokens`]'s `Debug` output shows token ids alone.

use super::acl;
use super::state_security::{Acl, SecurityState, Token, UgKind, User};

/// The accepted tokens and their denials.
pub(super) struct Tokens {
    /// The configured token's whole `Authorization` value.
    default_header: String,
    /// The configured token's id (`svc_mcp@pve!emu`).
    default_id: String,
    /// Tokens added later: (token id, secret).
    extra: Vec<(String, String)>,
    /// (token id, ACL path) pairs refused with 403.
    denials: Vec<(String, String)>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.extra.iter().map(|(id, _)| id.as_str()).collect();
        f.debug_struct("Tokens")
            .field("default_id", &self.default_id)
            .field("extra", &ids)
            .field("denials", &self.denials)
            .finish_non_exhaustive()
    }
}

/// The header scheme of an API token.
const SCHEME: &str = "PVEAPIToken=";

impl Tokens {
    /// The configured token, `token_id` with `secret`.
    pub fn new(token_id: String, secret: &str) -> Self {
        Self {
            default_header: format!("{SCHEME}{token_id}={secret}"),
            default_id: token_id,
            extra: Vec::new(),
            denials: Vec::new(),
        }
    }

    /// The configured token's `Authorization` header value.
    pub fn default_header(&self) -> &str {
        &self.default_header
    }

    /// The configured token's id.
    pub fn default_id(&self) -> &str {
        &self.default_id
    }

    /// Accepts `token_id` with `secret` as well (a second call replaces the secret).
    pub fn add(&mut self, token_id: &str, secret: &str) {
        self.extra.retain(|(id, _)| id != token_id);
        self.extra.push((token_id.to_owned(), secret.to_owned()));
    }

    /// Refuses `token_id` everything at `acl_path` and below.
    pub fn deny(&mut self, token_id: &str, acl_path: &str) {
        self.denials
            .push((token_id.to_owned(), acl_path.to_owned()));
    }

    /// The token id an `Authorization` header value authenticates, if any.
    pub fn authenticate(&self, header: Option<&[u8]>) -> Option<String> {
        let header = header?;
        if header == self.default_header.as_bytes() {
            return Some(self.default_id.clone());
        }
        let (token_id, secret) = std::str::from_utf8(header)
            .ok()?
            .strip_prefix(SCHEME)?
            .split_once('=')?;
        self.extra
            .iter()
            .find(|(id, s)| id == token_id && s == secret)
            .map(|(id, _)| id.clone())
    }

    /// The denied ACL path covering the request `path` of `token_id`, if one does.
    pub fn denial(&self, token_id: &str, path: &str) -> Option<String> {
        let target = acl::acl_path(path);
        self.denials
            .iter()
            .any(|(id, denied)| id == token_id && acl::covers(denied, &target))
            .then_some(target)
    }
}

/// Makes `token_id` (`user@realm!name`) known to the access-control state as Proxmox would
/// list it: the user (created with the grants of `template_user` when it does not exist)
/// and its token (privilege separation off, so it has its user's privileges). An id not
/// of that form is left out.
pub(super) fn register(sec: &mut SecurityState, token_id: &str, template_user: &str) {
    let Some((userid, name)) = token_id.split_once('!') else {
        return;
    };
    if !userid.contains('@') || name.is_empty() {
        return;
    }
    if sec.user(userid).is_none() {
        sec.users.push(User::new(userid));
        let grants: Vec<Acl> = sec
            .acls
            .iter()
            .filter(|a| a.kind == UgKind::User && a.ugid == template_user)
            .map(|a| Acl {
                ugid: userid.to_owned(),
                ..a.clone()
            })
            .collect();
        sec.acls.extend(grants);
    }
    if let Some(user) = sec.user_mut(userid)
        && !user.tokens.iter().any(|t| t.tokenid == name)
    {
        user.tokens.push(Token {
            tokenid: name.to_owned(),
            comment: Some("emulator token".into()),
            expire: 0,
            privsep: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_authenticate_by_exact_id_and_secret() {
        let mut tokens = Tokens::new("svc@pve!emu".into(), "s0");
        tokens.add("alice@pve!mcp", "s1");
        let auth = |h: &str| tokens.authenticate(Some(h.as_bytes()));
        assert_eq!(
            auth("PVEAPIToken=svc@pve!emu=s0").as_deref(),
            Some("svc@pve!emu")
        );
        assert_eq!(
            auth("PVEAPIToken=alice@pve!mcp=s1").as_deref(),
            Some("alice@pve!mcp")
        );
        assert_eq!(auth("PVEAPIToken=alice@pve!mcp=s0"), None);
        assert_eq!(auth("PVEAPIToken=svc@pve!emu=s1"), None);
        assert_eq!(auth("PVEAPIToken=alice@pve!mcp"), None);
        assert_eq!(tokens.authenticate(None), None);
    }

    #[test]
    fn debug_output_hides_secrets() {
        let mut tokens = Tokens::new("svc@pve!emu".into(), "default-secret-x");
        tokens.add("alice@pve!mcp", "added-secret-y");
        let text = format!("{tokens:?}");
        assert!(text.contains("alice@pve!mcp"), "{text}");
        assert!(!text.contains("default-secret-x") && !text.contains("added-secret-y"));
    }

    #[test]
    fn denials_cover_paths_below_for_one_token_only() {
        let mut tokens = Tokens::new("svc@pve!emu".into(), "s0");
        tokens.deny("alice@pve!mcp", "/vms/101");
        let start = "/nodes/pve01/qemu/101/status/start";
        assert_eq!(
            tokens.denial("alice@pve!mcp", start).as_deref(),
            Some("/vms/101")
        );
        assert!(tokens.denial("svc@pve!emu", start).is_none());
        assert!(
            tokens
                .denial("alice@pve!mcp", "/nodes/pve01/qemu/102/config")
                .is_none()
        );
    }
}
