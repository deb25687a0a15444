//! The approval page's sign-in under OAuth: this server as an OAuth client of the authorization
//! server (authorization code with PKCE, RFC 7636 `S256`), so that only a person the link's
//! approvers admit ([`crate::approval::Approvers`]) can decide it.
//!
//! Flow: `GET /approve/{id}/login` stores a fresh `state` (bound to that link), a PKCE verifier
//! and a browser binding, sets the binding in a cookie (`SameSite=Lax`: it must come back on the
//! authorization server's cross-site redirect) and redirects to the `authorization_endpoint` of
//! the issuer's metadata with `resource` = this server's resource URI (RFC 8707). The
//! authorization server sends the browser to `<base>/approve/callback?code&state`; the state is
//! taken (single use), the binding cookie checked, the code exchanged at the `token_endpoint`
//! with the verifier, and the access token validated exactly like a caller's (signature by the
//! issuer's JWKS, `iss`, `aud` = the resource, `exp`/`nbf`) — but no tier scope is required: an
//! approver may hold only the approvers' scope. The person is then the token's `sub` and scopes.
//!
//! Invariants: a `state` is 256 random bits, stored only as its SHA-256, usable once, for one
//! link, within [`LOGIN_TTL`], and only from the browser that started it; an unknown, replayed or
//! expired state, a missing binding, an error answer, a code the token endpoint refuses or a token
//! the validator refuses admits nobody; at most [`MAX_LOGINS`] sign-ins are pending; codes,
//! verifiers, tokens and the client secret are never logged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::Value;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use thiserror::Error;
use url::Url;

use super::oauth::ApprovalClient;
use super::oauth_token::TokenValidator;
use crate::approval::Person;
use crate::policy::ApproverRule;

/// Route that starts the sign-in for one link.
pub const LOGIN_ROUTE: &str = "/approve/{id}/login";
/// Route the authorization server redirects back to (the registered redirect URI's path).
pub const CALLBACK_ROUTE: &str = "/approve/callback";
/// Cookie holding a person's session on one link (`SameSite=Strict`, path = the link).
pub const SESSION_COOKIE: &str = "pve_approval";
/// Cookie binding a sign-in to the browser that started it (`SameSite=Lax`, path = callback).
pub const BINDING_COOKIE: &str = "pve_approval_login";
/// How long a started sign-in may take.
pub const LOGIN_TTL: Duration = Duration::from_secs(600);
/// Most sign-ins pending at once.
pub const MAX_LOGINS: usize = 256;
/// Largest token endpoint answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Why a sign-in admitted nobody (the page says so; the log gets the reason).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum LoginProblem {
    /// The `state` is unknown, already used or expired.
    #[error("this sign-in is not known here, was already used, or took too long")]
    State,
    /// The browser that came back is not the one that started the sign-in.
    #[error("this sign-in was started in another browser")]
    Binding,
    /// The authorization server answered with an error instead of a code.
    #[error("the authorization server did not sign you in")]
    Denied,
    /// The token endpoint refused the code (unknown, used, or not for this verifier).
    #[error("the identity provider refused this sign-in's code")]
    Code,
    /// Too many sign-ins are pending.
    #[error("too many sign-ins are pending; try again in a few minutes")]
    Busy,
    /// The authorization server could not be used (metadata, token endpoint, answer).
    #[error("the authorization server could not be asked ({0})")]
    Server(String),
    /// The token the authorization server issued is not valid here.
    #[error("the sign-in's token is not valid here ({0})")]
    Token(&'static str),
}

struct Login {
    link: String,
    verifier: String,
    binding: [u8; 32],
    redirect_uri: String,
    until: Instant,
}

/// A started sign-in: where to send the browser, and the binding cookie's value.
#[derive(Debug)]
pub struct Started {
    /// The authorization request.
    pub authorize: Url,
    /// The browser binding (the cookie's value; secret).
    pub binding: String,
}

/// The sign-in of the approval page.
pub struct ApprovalLogin {
    client: ApprovalClient,
    validator: Arc<TokenValidator>,
    scope: String,
    logins: Mutex<HashMap<[u8; 32], Login>>,
}

impl std::fmt::Debug for ApprovalLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalLogin")
            .field("client_id", &self.client.id)
            .finish_non_exhaustive()
    }
}

impl ApprovalLogin {
    /// A sign-in as `client`, validating with `validator`; under `PVE_APPROVERS=scope:<name>`
    /// that scope is requested too.
    pub fn new(
        client: ApprovalClient,
        validator: Arc<TokenValidator>,
        rule: &ApproverRule,
    ) -> ApprovalLogin {
        let scope = match rule {
            ApproverRule::Caller => "openid".to_owned(),
            ApproverRule::Scope(name) => format!("openid {name}"),
        };
        ApprovalLogin {
            client,
            validator,
            scope,
            logins: Mutex::new(HashMap::new()),
        }
    }

    /// Starts a sign-in for link `link` of a page served at `base`.
    pub async fn start(&self, link: &str, base: &Url) -> Result<Started, LoginProblem> {
        let endpoints = self
            .validator
            .endpoints()
            .await
            .map_err(LoginProblem::Server)?;
        let redirect_uri = callback_url(base)?;
        let state = secret();
        let verifier = B64.encode(random());
        let binding = secret();
        let challenge = B64.encode(Sha256::digest(verifier.as_bytes()));
        {
            let mut logins = self.lock();
            let now = Instant::now();
            logins.retain(|_, login| login.until > now);
            if logins.len() >= MAX_LOGINS {
                return Err(LoginProblem::Busy);
            }
            logins.insert(
                digest(&state),
                Login {
                    link: link.to_owned(),
                    verifier,
                    binding: digest(&binding),
                    redirect_uri: redirect_uri.clone(),
                    until: now + LOGIN_TTL,
                },
            );
        }
        let mut authorize = endpoints.authorization;
        authorize
            .query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client.id)
            .append_pair("redirect_uri", &redirect_uri)
            .append_pair("scope", &self.scope)
            .append_pair("state", &state)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", &self.validator.settings().resource);
        Ok(Started { authorize, binding })
    }

    /// Finishes a sign-in: the link it was for and the person, or why nobody is admitted.
    /// The `state` is spent whatever the outcome.
    pub async fn finish(
        &self,
        state: &str,
        code: Option<&str>,
        binding: Option<&str>,
    ) -> Result<(String, Person), LoginProblem> {
        let login = self
            .lock()
            .remove(&digest(state))
            .filter(|login| login.until > Instant::now())
            .ok_or(LoginProblem::State)?;
        let bound = binding.is_some_and(|b| bool::from(digest(b.trim()).ct_eq(&login.binding)));
        if !bound {
            return Err(LoginProblem::Binding);
        }
        let code = code.filter(|c| !c.is_empty()).ok_or(LoginProblem::Denied)?;
        let token = self.exchange(&login, code).await?;
        let person = self
            .validator
            .identify(&token)
            .await
            .map_err(|rejection| LoginProblem::Token(rejection_reason(rejection)))?;
        Ok((login.link, person))
    }

    /// The access token for `code` (authorization code grant with the PKCE verifier).
    async fn exchange(&self, login: &Login, code: &str) -> Result<String, LoginProblem> {
        let endpoints = self
            .validator
            .endpoints()
            .await
            .map_err(LoginProblem::Server)?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", login.redirect_uri.as_str()),
            ("code_verifier", login.verifier.as_str()),
        ];
        let mut request = self.validator.http().post(endpoints.token);
        match &self.client.secret {
            // client_secret_basic (RFC 6749 §2.3.1: both parts form-encoded first).
            Some(secret) => {
                let user: String =
                    url::form_urlencoded::byte_serialize(self.client.id.as_bytes()).collect();
                let pass: String =
                    url::form_urlencoded::byte_serialize(secret.expose().as_bytes()).collect();
                let basic = format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
                );
                let value = HeaderValue::from_str(&basic)
                    .map_err(|_| LoginProblem::Server("client credentials unusable".into()))?;
                request = request.header(header::AUTHORIZATION, value);
            }
            None => form.push(("client_id", self.client.id.as_str())),
        }
        let body = serde_urlencoded::to_string(&form)
            .map_err(|_| LoginProblem::Server("cannot encode the token request".into()))?;
        let mut response = request
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| LoginProblem::Server(format!("token endpoint: {}", e.without_url())))?;
        let status = response.status();
        let mut answer = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|_| LoginProblem::Server("token endpoint: answer cut short".into()))?
        {
            if answer.len() + chunk.len() > MAX_ANSWER_BYTES {
                return Err(LoginProblem::Server(
                    "token endpoint: answer too large".into(),
                ));
            }
            answer.extend_from_slice(&chunk);
        }
        if matches!(status.as_u16(), 400 | 401) {
            return Err(LoginProblem::Code);
        }
        if !status.is_success() {
            return Err(LoginProblem::Server(format!(
                "token endpoint refused the code: HTTP {}",
                status.as_u16()
            )));
        }
        serde_json::from_slice::<Value>(&answer)
            .ok()
            .and_then(|doc| doc.get("access_token")?.as_str().map(str::to_owned))
            .ok_or_else(|| LoginProblem::Server("token endpoint: no access_token".into()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Login>> {
        self.logins.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `<base>approve/callback`: the redirect URI to register at the authorization server.
pub fn callback_url(base: &Url) -> Result<String, LoginProblem> {
    base.join(CALLBACK_ROUTE.trim_start_matches('/'))
        .map(String::from)
        .map_err(|_| LoginProblem::Server("no redirect URI".into()))
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

/// A `Set-Cookie` value: HttpOnly always, `Secure` when the page is served over https.
pub fn set_cookie(
    name: &str,
    value: &str,
    path: &str,
    seconds: u64,
    same_site: &str,
    secure: bool,
) -> Option<HeaderValue> {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path={path}; Max-Age={seconds}; HttpOnly; SameSite={same_site}{secure}"
    ))
    .ok()
}

fn rejection_reason(rejection: super::oauth_token::Rejection) -> &'static str {
    match rejection {
        super::oauth_token::Rejection::Invalid(why) => why,
        super::oauth_token::Rejection::Missing => "no token",
        super::oauth_token::Rejection::InsufficientScope => "insufficient scope",
    }
}

fn random() -> [u8; 32] {
    crate::approval::random_secret()
}

fn secret() -> String {
    hex::encode(random())
}

fn digest(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_and_written_strictly() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; pve_approval=abc"),
        );
        headers.append(header::COOKIE, HeaderValue::from_static("b=2"));
        assert_eq!(cookie(&headers, SESSION_COOKIE).as_deref(), Some("abc"));
        assert_eq!(cookie(&headers, "b").as_deref(), Some("2"));
        assert_eq!(cookie(&headers, "pve"), None);
        let set = set_cookie(SESSION_COOKIE, "abc", "/approve/x", 60, "Strict", true).unwrap();
        assert_eq!(
            set,
            "pve_approval=abc; Path=/approve/x; Max-Age=60; HttpOnly; SameSite=Strict; Secure"
        );
        let base = Url::parse("https://mcp.example/pve/").unwrap();
        assert_eq!(
            callback_url(&base).unwrap(),
            "https://mcp.example/pve/approve/callback"
        );
    }

    #[test]
    fn debug_output_shows_the_client_id_and_never_its_secret() {
        let settings = super::super::oauth::example_settings();
        let validator = TokenValidator::new(&settings, crate::catalog::Tier::Full).unwrap();
        let client = ApprovalClient {
            id: "pve-approval".into(),
            secret: Some(crate::config::Secret::new("s3cret-value")),
        };
        let login = ApprovalLogin::new(client, validator, &ApproverRule::Caller);
        let shown = format!("{login:?}");
        assert_eq!(shown, "ApprovalLogin { client_id: \"pve-approval\", .. }");
    }
}
