//! OAuth 2.1 resource-server settings of the HTTP transport (`MCP_AUTH_MODE=oauth`), the
//! Protected Resource Metadata document (RFC 9728) and the `WWW-Authenticate` challenges.
//!
//! Invariants: the issuer, the JWKS URL and this server's resource URI are absolute `https`
//! URLs (plain `http` only for loopback hosts, so tests and local setups can run); off a
//! loopback `MCP_HOST` OAuth needs `MCP_BEHIND_TLS_PROXY=true`, since bearer tokens must not
//! cross a network in clear text; only asymmetric signature algorithms are accepted (`none`
//! and the HMAC family are refused at start-up, so a public key can never be used as an HMAC
//! secret); scope names are valid RFC 6749 scope tokens and distinct. The metadata document
//! and the challenges name the same resource, issuer and scopes the validator enforces. The
//! approval sign-in's client secret is read from a file and is never shown by `Debug`.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use jsonwebtoken::Algorithm;
use serde_json::json;
use url::Url;

use thiserror::Error;

use crate::catalog::Tier;
use crate::config::Secret;

/// OAuth settings that are missing or unsafe; the message names the variable.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("{0}")]
pub struct OAuthError(pub String);

/// Path of the Protected Resource Metadata document (RFC 9728 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// Default scope granting read-only tools.
pub const DEFAULT_SCOPE_READ: &str = "proxmox:read";
/// Default scope granting read and operate (power, snapshots…) tools.
pub const DEFAULT_SCOPE_OPERATE: &str = "proxmox:operate";
/// Default scope granting every tool the server exposes.
pub const DEFAULT_SCOPE_ADMIN: &str = "proxmox:admin";
/// Default allow-list of token signature algorithms.
pub const DEFAULT_ALGORITHMS: &[Algorithm] =
    &[Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA];
/// Shortest interval between two JWKS downloads (an unknown `kid` triggers at most one per
/// interval, so a flood of forged key ids cannot make the server hammer the issuer).
pub const DEFAULT_JWKS_MIN_REFRESH: Duration = Duration::from_secs(30);

/// The variables only OAuth mode reads; setting one in another mode is an error.
pub const OAUTH_VAR_NAMES: &[&str] = &[
    "MCP_OAUTH_ISSUER",
    "MCP_OAUTH_JWKS_URL",
    "MCP_OAUTH_RESOURCE",
    "MCP_OAUTH_ALGORITHMS",
    "MCP_OAUTH_REQUIRE_AT_JWT",
    "MCP_OAUTH_SCOPE_READ",
    "MCP_OAUTH_SCOPE_OPERATE",
    "MCP_OAUTH_SCOPE_ADMIN",
    "MCP_OAUTH_APPROVAL_CLIENT_ID",
    "MCP_OAUTH_APPROVAL_CLIENT_SECRET_FILE",
];

/// This server as an OAuth client of the authorization server, for the approval page's
/// sign-in (authorization code with PKCE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalClient {
    /// `MCP_OAUTH_APPROVAL_CLIENT_ID`.
    pub id: String,
    /// The secret of a confidential client (`MCP_OAUTH_APPROVAL_CLIENT_SECRET_FILE`); `None`:
    /// a public client (PKCE alone).
    pub secret: Option<Secret>,
}

/// The scope names that map to access tiers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeNames {
    /// Grants [`Tier::ReadOnly`].
    pub read: String,
    /// Grants [`Tier::ReadExecute`].
    pub operate: String,
    /// Grants [`Tier::Full`].
    pub admin: String,
}

impl ScopeNames {
    /// The highest tier the granted scopes reach; `None` when none of them is ours.
    pub fn tier_of<'a>(&self, granted: impl IntoIterator<Item = &'a str>) -> Option<Tier> {
        granted
            .into_iter()
            .filter_map(|scope| {
                if scope == self.admin {
                    Some(Tier::Full)
                } else if scope == self.operate {
                    Some(Tier::ReadExecute)
                } else if scope == self.read {
                    Some(Tier::ReadOnly)
                } else {
                    None
                }
            })
            .max()
    }

    /// The scope that grants `tier`.
    pub fn for_tier(&self, tier: Tier) -> &str {
        match tier {
            Tier::ReadOnly => &self.read,
            Tier::ReadExecute => &self.operate,
            Tier::Full => &self.admin,
        }
    }

    /// The scopes useful on a server whose tier is `tier`, lowest first.
    pub fn up_to(&self, tier: Tier) -> Vec<&str> {
        let mut scopes = vec![self.read.as_str()];
        if tier >= Tier::ReadExecute {
            scopes.push(&self.operate);
        }
        if tier >= Tier::Full {
            scopes.push(&self.admin);
        }
        scopes
    }
}

/// Validated OAuth settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OAuthSettings {
    /// The authorization server's issuer identifier (`MCP_OAUTH_ISSUER`); `iss` must equal it.
    pub issuer: String,
    /// Where the signing keys are (`MCP_OAUTH_JWKS_URL`); `None`: discovered from the
    /// issuer's metadata (`jwks_uri`).
    pub jwks_url: Option<String>,
    /// This server's canonical URI (`MCP_OAUTH_RESOURCE`); `aud` must contain it.
    pub resource: String,
    /// Accepted signature algorithms (`MCP_OAUTH_ALGORITHMS`).
    pub algorithms: Vec<Algorithm>,
    /// `MCP_OAUTH_REQUIRE_AT_JWT`: the token's header must say `typ: at+jwt` (RFC 9068). Off,
    /// a `typ` may also be absent or `JWT`; any other type is refused either way.
    pub require_at_jwt: bool,
    /// Scope names per tier.
    pub scopes: ScopeNames,
    /// Shortest interval between two JWKS downloads.
    pub jwks_min_refresh: Duration,
    /// The approval page's sign-in client; `None`: links of OAuth callers cannot be decided.
    pub approval_client: Option<ApprovalClient>,
}

impl OAuthSettings {
    /// Reads the `MCP_OAUTH_*` variables; `host` is `MCP_HOST`, `behind_tls_proxy` is
    /// `MCP_BEHIND_TLS_PROXY`.
    pub fn from_lookup(
        get: &impl Fn(&str) -> Option<String>,
        host: &str,
        behind_tls_proxy: bool,
    ) -> Result<OAuthSettings, OAuthError> {
        if !behind_tls_proxy && !is_loopback_host(host) {
            return Err(OAuthError(format!(
                "MCP_AUTH_MODE=oauth on MCP_HOST={host} would carry bearer tokens over plain HTTP; \
                 bind a loopback address, or put a TLS-terminating reverse proxy in front and set \
                 MCP_BEHIND_TLS_PROXY=true"
            )));
        }
        let required = |name: &'static str| {
            get(name).ok_or_else(|| OAuthError(format!("MCP_AUTH_MODE=oauth needs {name}")))
        };
        let issuer = required("MCP_OAUTH_ISSUER")?;
        secure_url("MCP_OAUTH_ISSUER", &issuer)?;
        let jwks_url = get("MCP_OAUTH_JWKS_URL");
        if let Some(url) = &jwks_url {
            secure_url("MCP_OAUTH_JWKS_URL", url)?;
        }
        let resource = required("MCP_OAUTH_RESOURCE")?;
        secure_url("MCP_OAUTH_RESOURCE", &resource)?;
        let algorithms = match get("MCP_OAUTH_ALGORITHMS") {
            None => DEFAULT_ALGORITHMS.to_vec(),
            Some(list) => parse_algorithms(&list)?,
        };
        let scope = |name: &'static str, default: &str| -> Result<String, OAuthError> {
            let value = get(name).unwrap_or_else(|| default.to_owned());
            let valid = !value.is_empty()
                && value
                    .chars()
                    .all(|c| c == '!' || matches!(c, '#'..='[' | ']'..='~'));
            if valid {
                Ok(value)
            } else {
                Err(OAuthError(format!(
                    "{name}={value:?} is not a scope name (printable ASCII without spaces, quotes or backslashes)"
                )))
            }
        };
        let scopes = ScopeNames {
            read: scope("MCP_OAUTH_SCOPE_READ", DEFAULT_SCOPE_READ)?,
            operate: scope("MCP_OAUTH_SCOPE_OPERATE", DEFAULT_SCOPE_OPERATE)?,
            admin: scope("MCP_OAUTH_SCOPE_ADMIN", DEFAULT_SCOPE_ADMIN)?,
        };
        if scopes.read == scopes.operate
            || scopes.read == scopes.admin
            || scopes.operate == scopes.admin
        {
            return Err(OAuthError(
                "MCP_OAUTH_SCOPE_READ, _OPERATE and _ADMIN must be three different scopes".into(),
            ));
        }
        let require_at_jwt = match get("MCP_OAUTH_REQUIRE_AT_JWT").as_deref() {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(OAuthError(format!(
                    "MCP_OAUTH_REQUIRE_AT_JWT={other:?}: expected true or false"
                )));
            }
        };
        Ok(OAuthSettings {
            issuer,
            jwks_url,
            resource,
            algorithms,
            require_at_jwt,
            scopes,
            jwks_min_refresh: DEFAULT_JWKS_MIN_REFRESH,
            approval_client: approval_client(get)?,
        })
    }

    /// The URL of this resource's metadata document: the well-known path inserted before the
    /// resource's path (RFC 9728 §3.1), e.g. `https://mcp.example.com/mcp` →
    /// `https://mcp.example.com/.well-known/oauth-protected-resource/mcp`.
    pub fn metadata_url(&self) -> String {
        match Url::parse(&self.resource) {
            Ok(url) => {
                let path = url.path().trim_end_matches('/');
                format!(
                    "{}{METADATA_PATH}{path}",
                    url.origin().ascii_serialization()
                )
            }
            Err(_) => METADATA_PATH.to_owned(),
        }
    }

    /// The Protected Resource Metadata document for a server whose tier is `tier`, as served
    /// at [`METADATA_PATH`] followed by `suffix` (`""` or `"/mcp"`). Its `resource` is the
    /// identifier that URL was built from (RFC 9728 §3.3): `MCP_OAUTH_RESOURCE` where the suffix
    /// is that URL's path, else the resource's origin followed by the suffix. The documents are
    /// not signed, so no `resource_signing_alg_values_supported` (that member names the
    /// algorithms of `signed_metadata`, not of the access tokens).
    pub fn metadata(&self, tier: Tier, suffix: &str) -> serde_json::Value {
        let resource = match Url::parse(&self.resource) {
            Ok(url) if url.path().trim_end_matches('/') != suffix => {
                format!("{}{suffix}", url.origin().ascii_serialization())
            }
            _ => self.resource.clone(),
        };
        json!({
            "resource": resource,
            "authorization_servers": [self.issuer],
            "scopes_supported": self.scopes.up_to(tier),
            "bearer_methods_supported": ["header"],
            "resource_name": "nandi-proxmox-mcp (Proxmox VE)",
        })
    }
}

/// The `WWW-Authenticate` values of OAuth refusals, built once.
#[derive(Clone, Debug)]
pub struct Challenges {
    /// 401 without a token.
    pub missing: HeaderValue,
    /// 401 with a token that is not valid here.
    pub invalid: HeaderValue,
    /// 403 with a valid token that grants none of the server's scopes.
    pub insufficient_scope: HeaderValue,
}

impl Challenges {
    /// The challenges for `settings`. They name the least scope that lists tools
    /// (`MCP_OAUTH_SCOPE_READ`): a client that follows the challenge asks for reads only, and
    /// steps up when a call answers 403 with the scope it needs ([`Challenges::step_up`]).
    /// The metadata's `scopes_supported` still lists every scope of the server's tier.
    pub fn new(settings: &OAuthSettings, _tier: Tier) -> Challenges {
        let metadata = settings.metadata_url();
        let scope = settings.scopes.read.as_str();
        let value = |text: String| {
            HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("Bearer"))
        };
        Challenges {
            missing: value(format!(
                r#"Bearer resource_metadata="{metadata}", scope="{scope}""#
            )),
            invalid: value(format!(
                r#"Bearer error="invalid_token", resource_metadata="{metadata}", scope="{scope}""#
            )),
            insufficient_scope: value(format!(
                r#"Bearer error="insufficient_scope", scope="{scope}", resource_metadata="{metadata}""#
            )),
        }
    }

    /// The 403 challenge of a call that needs `scope`, more than the token grants (RFC 6750
    /// §3.1; the MCP authorization spec's step-up).
    pub fn step_up(settings: &OAuthSettings, scope: &str) -> HeaderValue {
        let metadata = settings.metadata_url();
        HeaderValue::from_str(&format!(
            r#"Bearer error="insufficient_scope", scope="{scope}", resource_metadata="{metadata}", error_description="this call needs the scope {scope}""#
        ))
        .unwrap_or(HeaderValue::from_static(r#"Bearer error="insufficient_scope""#))
    }
}

/// The metadata routes: the document at [`METADATA_PATH`] and at its `/mcp`-suffixed form,
/// each naming the `resource` its own URL stands for. They need no token; the Host/Origin
/// guard of the whole router still applies.
pub fn metadata_routes(settings: &OAuthSettings, tier: Tier) -> Router {
    let serve = |suffix: &str| {
        let body: Arc<str> = settings.metadata(tier, suffix).to_string().into();
        move || {
            let body = body.clone();
            async move { metadata_response(&body) }
        }
    };
    Router::new().route(METADATA_PATH, get(serve(""))).route(
        &format!("{METADATA_PATH}{}", super::MCP_PATH),
        get(serve(super::MCP_PATH)),
    )
}

fn metadata_response(body: &str) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_owned(),
    )
        .into_response()
}

/// Whether a host name (with or without brackets) is a loopback address or `localhost`.
pub fn is_loopback_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// An absolute `https` URL without fragment, or `http` on a loopback host.
pub fn secure_url(name: &str, value: &str) -> Result<Url, OAuthError> {
    let bad = |why: &str| OAuthError(format!("{name}={value:?} {why}"));
    let url = Url::parse(value).map_err(|_| bad("is not an absolute URL"))?;
    if url.fragment().is_some() {
        return Err(bad("must not have a fragment"));
    }
    let host = url.host_str().unwrap_or_default();
    match url.scheme() {
        "https" => Ok(url),
        "http" if is_loopback_host(host) => Ok(url),
        _ => Err(bad(
            "must be an https URL (plain http is accepted only for loopback hosts)",
        )),
    }
}

/// `MCP_OAUTH_APPROVAL_CLIENT_ID` and its optional secret file (trimmed, non-empty).
fn approval_client(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<ApprovalClient>, OAuthError> {
    let secret_file = get("MCP_OAUTH_APPROVAL_CLIENT_SECRET_FILE");
    let Some(id) = get("MCP_OAUTH_APPROVAL_CLIENT_ID") else {
        return match secret_file {
            Some(_) => Err(OAuthError(
                "MCP_OAUTH_APPROVAL_CLIENT_SECRET_FILE needs MCP_OAUTH_APPROVAL_CLIENT_ID".into(),
            )),
            None => Ok(None),
        };
    };
    if id.chars().any(|c| c.is_control() || c == ' ') {
        return Err(OAuthError(format!(
            "MCP_OAUTH_APPROVAL_CLIENT_ID={id:?} is not a client id"
        )));
    }
    let secret = match secret_file {
        None => None,
        Some(path) => {
            let text = std::fs::read_to_string(&path).map_err(|e| {
                OAuthError(format!(
                    "MCP_OAUTH_APPROVAL_CLIENT_SECRET_FILE={path:?} cannot be read: {e}"
                ))
            })?;
            let text = text.trim();
            if text.is_empty() {
                return Err(OAuthError(format!(
                    "MCP_OAUTH_APPROVAL_CLIENT_SECRET_FILE={path:?} is empty"
                )));
            }
            Some(Secret::new(text))
        }
    };
    Ok(Some(ApprovalClient { id, secret }))
}

fn parse_algorithms(list: &str) -> Result<Vec<Algorithm>, OAuthError> {
    let mut algorithms = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let alg = match name {
            "RS256" => Algorithm::RS256,
            "RS384" => Algorithm::RS384,
            "RS512" => Algorithm::RS512,
            "PS256" => Algorithm::PS256,
            "PS384" => Algorithm::PS384,
            "PS512" => Algorithm::PS512,
            "ES256" => Algorithm::ES256,
            "ES384" => Algorithm::ES384,
            "EdDSA" => Algorithm::EdDSA,
            "HS256" | "HS384" | "HS512" | "none" => {
                return Err(OAuthError(format!(
                    "MCP_OAUTH_ALGORITHMS: {name} is refused (only asymmetric signatures are \
                     accepted from an authorization server)"
                )));
            }
            _ => {
                return Err(OAuthError(format!(
                    "MCP_OAUTH_ALGORITHMS: unknown algorithm {name:?}; expected RS256, RS384, \
                     RS512, PS256, PS384, PS512, ES256, ES384 or EdDSA"
                )));
            }
        };
        if !algorithms.contains(&alg) {
            algorithms.push(alg);
        }
    }
    if algorithms.is_empty() {
        return Err(OAuthError("MCP_OAUTH_ALGORITHMS lists no algorithm".into()));
    }
    Ok(algorithms)
}

/// Settings for unit tests elsewhere: issuer `https://id.example.com/realms/lab`, resource
/// `https://mcp.example.com/mcp`, everything else by default.
#[cfg(test)]
pub(crate) fn example_settings() -> OAuthSettings {
    let vars = [
        ("MCP_OAUTH_ISSUER", "https://id.example.com/realms/lab"),
        ("MCP_OAUTH_RESOURCE", "https://mcp.example.com/mcp"),
    ];
    let get = |k: &str| {
        vars.iter()
            .find(|(name, _)| *name == k)
            .map(|(_, v)| (*v).to_owned())
    };
    OAuthSettings::from_lookup(&get, "127.0.0.1", false).expect("example settings")
}

#[cfg(test)]
mod tests;
