//! `MCP_*` settings of the Streamable HTTP transport, read and validated once at start-up.
//!
//! Invariants: a malformed or non-positive number is a start-up error naming the variable (the
//! reference silently fell back to defaults); the bearer token is only reachable through
//! [`Secret::expose`] and never printed; running without a token needs both a loopback bind
//! address and `MCP_ALLOW_NO_AUTH=true`; off loopback the token needs at least
//! [`MIN_TOKEN_BITS_OFF_LOOPBACK`] bits of estimated entropy (other machines can guess at it).
//! One authentication mode at a time (`MCP_AUTH_MODE`: `token`, `oauth` or `none`; by default
//! derived from the token variables as before): a static token together with OAuth, OAuth
//! variables outside OAuth mode, or a token with `none` stop the start-up (OAuth's own rules:
//! [`super::oauth`]).

use crate::config::EnvVarDoc;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

use super::oauth::{OAUTH_VAR_NAMES, OAuthError, OAuthSettings};
use super::token_strength::{MIN_TOKEN_BITS_OFF_LOOPBACK, estimated_entropy_bits};
use crate::config::Secret;

/// Default bind address (the reference bound `0.0.0.0`).
pub const DEFAULT_HOST: &str = "127.0.0.1";
/// Default port.
pub const DEFAULT_PORT: u16 = 3000;
/// Shortest bearer token accepted: shorter ones are guessable.
pub const MIN_TOKEN_LEN: usize = 16;

/// Why the HTTP settings cannot be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SettingsError {
    /// A numeric variable is not a number in range.
    #[error("{name}={value:?} is not valid: expected {expected}")]
    Invalid {
        /// Variable name.
        name: &'static str,
        /// The value given (never a secret).
        value: String,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// No token and no explicit, safe opt-out.
    #[error(
        "HTTP transport needs a bearer token: set MCP_AUTH_TOKEN or MCP_AUTH_TOKEN_FILE (e.g. `openssl rand -hex 32`); \
only on a loopback MCP_HOST may MCP_ALLOW_NO_AUTH=true run without one"
    )]
    MissingToken,
    /// `MCP_ALLOW_NO_AUTH=true` on an address other machines can reach.
    #[error(
        "MCP_ALLOW_NO_AUTH=true is only allowed when MCP_HOST is a loopback address (127.0.0.1, ::1 or localhost), not {0:?}"
    )]
    NoAuthNotLoopback(String),
    /// The token is unusable (the message never contains it).
    #[error("{source_name}: {problem}")]
    BadToken {
        /// `MCP_AUTH_TOKEN` or the token file path.
        source_name: String,
        /// What is wrong with it.
        problem: String,
    },
    /// Authentication settings that contradict each other.
    #[error("{0}; one authentication mode at a time (MCP_AUTH_MODE=token, oauth or none)")]
    AuthMix(String),
    /// OAuth settings that are missing or unsafe.
    #[error(transparent)]
    OAuth(#[from] OAuthError),
}

/// How `/mcp` authenticates requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <token>` must carry this token.
    Bearer(Secret),
    /// No authentication (loopback only, explicitly requested).
    Disabled,
    /// OAuth 2.1 access tokens from an authorization server (`MCP_AUTH_MODE=oauth`).
    OAuth(Box<OAuthSettings>),
}

/// Validated settings of the HTTP transport.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// Bind address as configured (`MCP_HOST`).
    pub host: String,
    /// Port (`MCP_PORT`; 0 picks a free one).
    pub port: u16,
    /// Extra allowed `Host` names, lower-cased; an entry may carry a port (`name:port`).
    pub allowed_hosts: Vec<String>,
    /// Extra allowed origins (`MCP_ALLOWED_ORIGINS`), as given.
    pub allowed_origins: Vec<String>,
    /// Rate-limit window (`MCP_RATE_LIMIT_WINDOW_MS`).
    pub rate_limit_window: Duration,
    /// Requests per window per client address on `/mcp` (`MCP_RATE_LIMIT_MAX`).
    pub rate_limit_max: u32,
    /// Largest request body in bytes (`MCP_MAX_BODY_SIZE_BYTES`).
    pub max_body_bytes: usize,
    /// Time allowed to send the request headers (`MCP_HEADERS_TIMEOUT_MS`).
    pub headers_timeout: Duration,
    /// Time allowed for the body and for the response to start (`MCP_REQUEST_TIMEOUT_MS`).
    pub request_timeout: Duration,
    /// Idle time after which a kept-alive connection is closed (`MCP_KEEPALIVE_TIMEOUT_MS`).
    pub keepalive_timeout: Duration,
    /// Most request headers accepted (`MCP_MAX_HEADERS_COUNT`).
    pub max_headers: usize,
    /// Most live MCP sessions (`MCP_MAX_SESSIONS`).
    pub max_sessions: usize,
    /// A session unused for this long is closed (`MCP_SESSION_IDLE_TIMEOUT_MS`).
    pub session_idle_timeout: Duration,
    /// How long a `/ready` answer from Proxmox is reused.
    pub ready_cache: Duration,
    /// Authentication of `/mcp`.
    pub auth: Auth,
    /// No sessions at all (`MCP_STATELESS`): every request stands alone, so any replica behind
    /// a load balancer can serve it (2026-07-28 requests are stateless either way).
    pub stateless: bool,
}

/// Every variable read by [`HttpSettings::from_lookup`].
pub const VARS: &[EnvVarDoc] = &[
    var("MCP_TRANSPORT", "stdio", "`http` serves Streamable HTTP"),
    var("MCP_HOST", DEFAULT_HOST, "bind address"),
    var("MCP_PORT", "3000", "port; 0 picks a free one"),
    var(
        "MCP_AUTH_TOKEN",
        "–",
        "bearer token required on /mcp (off loopback: ≥ 128 bits, e.g. `openssl rand -hex 32`)",
    ),
    var("MCP_AUTH_TOKEN_FILE", "–", "file holding the bearer token"),
    var(
        "MCP_ALLOW_NO_AUTH",
        "false",
        "true allows no token, loopback bind only",
    ),
    var(
        "MCP_AUTH_MODE",
        "token (none with MCP_ALLOW_NO_AUTH=true)",
        "`token` (static bearer token), `oauth` (OAuth 2.1 access tokens) or `none` (loopback only)",
    ),
    var(
        "MCP_OAUTH_ISSUER",
        "–",
        "oauth: the authorization server's issuer URL (https; http only on loopback); `iss` must equal it",
    ),
    var(
        "MCP_OAUTH_RESOURCE",
        "–",
        "oauth: this server's canonical URI as clients reach it, e.g. https://mcp.example.com/mcp; `aud` must contain it",
    ),
    var(
        "MCP_OAUTH_JWKS_URL",
        "discovered",
        "oauth: the issuer's JWKS URL; default: `jwks_uri` of its RFC 8414 or OpenID metadata",
    ),
    var(
        "MCP_OAUTH_ALGORITHMS",
        "RS256,ES256,EdDSA",
        "oauth: accepted token signature algorithms (RS*, PS*, ES256, ES384, EdDSA; never HS* or none)",
    ),
    var(
        "MCP_OAUTH_REQUIRE_AT_JWT",
        "false",
        "oauth: `true` accepts only tokens whose header says `typ: at+jwt` (RFC 9068); otherwise `typ` may also be absent or `JWT`, and any other type (an ID token's, a DPoP proof's) is refused",
    ),
    var(
        "MCP_OAUTH_SCOPE_READ",
        "proxmox:read",
        "oauth: scope granting read-only tools",
    ),
    var(
        "MCP_OAUTH_SCOPE_OPERATE",
        "proxmox:operate",
        "oauth: scope granting read-execute tools",
    ),
    var(
        "MCP_OAUTH_SCOPE_ADMIN",
        "proxmox:admin",
        "oauth: scope granting every tool of PVE_ACCESS_TIER",
    ),
    var(
        "MCP_OAUTH_APPROVAL_CLIENT_ID",
        "–",
        "oauth: client id of this server at the authorization server, for the approval page's sign-in (authorization code + PKCE, redirect URI `<PVE_APPROVAL_BASE_URL>approve/callback`); unset: approval links of OAuth callers cannot be decided",
    ),
    var(
        "MCP_OAUTH_APPROVAL_CLIENT_SECRET_FILE",
        "–",
        "oauth: file holding that client's secret when it is a confidential client",
    ),
    var(
        "MCP_BEHIND_TLS_PROXY",
        "false",
        "true: a TLS-terminating reverse proxy is in front (needed for oauth off loopback)",
    ),
    var(
        "MCP_ALLOWED_HOSTS",
        "–",
        "extra allowed Host names (comma list)",
    ),
    var(
        "MCP_ALLOWED_ORIGINS",
        "–",
        "extra allowed Origins (comma list)",
    ),
    var("MCP_RATE_LIMIT_WINDOW_MS", "60000", "rate-limit window"),
    var(
        "MCP_RATE_LIMIT_MAX",
        "120",
        "requests per window per token (failed authentication: per client IP, separately)",
    ),
    var("MCP_MAX_BODY_SIZE_BYTES", "262144", "request body limit"),
    var("MCP_HEADERS_TIMEOUT_MS", "15000", "time to send headers"),
    var(
        "MCP_REQUEST_TIMEOUT_MS",
        "120000",
        "time to send the body / start the answer",
    ),
    var(
        "MCP_KEEPALIVE_TIMEOUT_MS",
        "5000",
        "idle keep-alive connection",
    ),
    var("MCP_MAX_HEADERS_COUNT", "64", "most request headers"),
    var(
        "MCP_MAX_SESSIONS",
        "100",
        "most live MCP sessions (the least recently used idle one makes room)",
    ),
    var(
        "MCP_SESSION_IDLE_TIMEOUT_MS",
        "1800000",
        "idle session expiry",
    ),
    var(
        "MCP_STATELESS",
        "false",
        "true: no sessions for any protocol version, so replicas need no session affinity (share PVE_APPROVAL_KEY_FILE)",
    ),
];

const fn var(name: &'static str, default: &'static str, meaning: &'static str) -> EnvVarDoc {
    EnvVarDoc {
        name,
        description: meaning,
        default,
        // The only secret among them: the bearer token itself.
        secret: matches!(name.as_bytes(), b"MCP_AUTH_TOKEN"),
    }
}

impl HttpSettings {
    /// Reads and validates the settings; `lookup` returns a variable's value (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let host = get("MCP_HOST").unwrap_or_else(|| DEFAULT_HOST.to_owned());
        let port = match get("MCP_PORT") {
            None => DEFAULT_PORT,
            Some(v) => v.parse::<u16>().map_err(|_| SettingsError::Invalid {
                name: "MCP_PORT",
                value: v.clone(),
                expected: "a port number 0..65535",
            })?,
        };
        let positive = |name: &'static str, default: u64, max: u64| -> Result<u64, SettingsError> {
            match get(name) {
                None => Ok(default),
                Some(v) => match v.parse::<u64>() {
                    Ok(n) if n > 0 && n <= max => Ok(n),
                    _ => Err(SettingsError::Invalid {
                        name,
                        value: v,
                        expected: "a whole number greater than 0",
                    }),
                },
            }
        };
        const DAY_MS: u64 = 86_400_000;
        let ms = |name, default| positive(name, default, DAY_MS).map(Duration::from_millis);
        let list = |name: &str| -> Vec<String> {
            get(name)
                .map(|v| {
                    v.split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        let allowed_hosts = list("MCP_ALLOWED_HOSTS")
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect();
        let auth = read_auth(&get, &host)?;
        let stateless = flag(&get, "MCP_STATELESS")?;
        Ok(HttpSettings {
            port,
            allowed_hosts,
            allowed_origins: list("MCP_ALLOWED_ORIGINS"),
            rate_limit_window: ms("MCP_RATE_LIMIT_WINDOW_MS", 60_000)?,
            rate_limit_max: positive("MCP_RATE_LIMIT_MAX", 120, u64::from(u32::MAX))? as u32,
            max_body_bytes: positive("MCP_MAX_BODY_SIZE_BYTES", 262_144, 1 << 30)? as usize,
            headers_timeout: ms("MCP_HEADERS_TIMEOUT_MS", 15_000)?,
            request_timeout: ms("MCP_REQUEST_TIMEOUT_MS", 120_000)?,
            keepalive_timeout: ms("MCP_KEEPALIVE_TIMEOUT_MS", 5_000)?,
            max_headers: positive("MCP_MAX_HEADERS_COUNT", 64, 10_000)? as usize,
            max_sessions: positive("MCP_MAX_SESSIONS", 100, 1_000_000)? as usize,
            session_idle_timeout: ms("MCP_SESSION_IDLE_TIMEOUT_MS", 1_800_000)?,
            ready_cache: Duration::from_secs(5),
            auth,
            stateless,
            host,
        })
    }

    /// Whether the bind address only accepts connections from this machine.
    pub fn is_loopback(&self) -> bool {
        is_loopback(&self.host)
    }
}

fn is_loopback(host: &str) -> bool {
    super::oauth::is_loopback_host(host)
}

fn read_auth(get: &impl Fn(&str) -> Option<String>, host: &str) -> Result<Auth, SettingsError> {
    let mode = get("MCP_AUTH_MODE").map(|m| m.to_ascii_lowercase());
    let token_set = get("MCP_AUTH_TOKEN").is_some() || get("MCP_AUTH_TOKEN_FILE").is_some();
    let allow_no_auth = flag(get, "MCP_ALLOW_NO_AUTH")?;
    let behind_tls_proxy = flag(get, "MCP_BEHIND_TLS_PROXY")?;
    let oauth_var = OAUTH_VAR_NAMES.iter().find(|name| get(name).is_some());
    match mode.as_deref() {
        Some("oauth") => {
            if token_set {
                return Err(SettingsError::AuthMix(
                    "MCP_AUTH_MODE=oauth with a static token (MCP_AUTH_TOKEN or MCP_AUTH_TOKEN_FILE) set".into(),
                ));
            }
            if allow_no_auth {
                return Err(SettingsError::AuthMix(
                    "MCP_AUTH_MODE=oauth with MCP_ALLOW_NO_AUTH=true".into(),
                ));
            }
            Ok(Auth::OAuth(Box::new(OAuthSettings::from_lookup(
                get,
                host,
                behind_tls_proxy,
            )?)))
        }
        Some(other) if !matches!(other, "token" | "none") => Err(SettingsError::Invalid {
            name: "MCP_AUTH_MODE",
            value: other.to_owned(),
            expected: "token, oauth or none",
        }),
        _ if oauth_var.is_some() => Err(SettingsError::AuthMix(format!(
            "{} is set but MCP_AUTH_MODE is not oauth",
            oauth_var.copied().unwrap_or_default()
        ))),
        Some("none") if token_set => Err(SettingsError::AuthMix(
            "MCP_AUTH_MODE=none with a static token set".into(),
        )),
        Some("none") if !is_loopback(host) => {
            Err(SettingsError::NoAuthNotLoopback(host.to_owned()))
        }
        Some("none") => Ok(Auth::Disabled),
        Some(_) if !token_set && allow_no_auth => Err(SettingsError::AuthMix(
            "MCP_AUTH_MODE=token with MCP_ALLOW_NO_AUTH=true and no token".into(),
        )),
        _ => read_static_token(get, host, allow_no_auth),
    }
}

fn read_static_token(
    get: &impl Fn(&str) -> Option<String>,
    host: &str,
    allow_no_auth: bool,
) -> Result<Auth, SettingsError> {
    let from_env = get("MCP_AUTH_TOKEN");
    let file = get("MCP_AUTH_TOKEN_FILE").map(PathBuf::from);
    let token = match (from_env, file) {
        (Some(_), Some(_)) => {
            return Err(SettingsError::BadToken {
                source_name: "MCP_AUTH_TOKEN".into(),
                problem: "set either MCP_AUTH_TOKEN or MCP_AUTH_TOKEN_FILE, not both".into(),
            });
        }
        (Some(token), None) => Some(check_token("MCP_AUTH_TOKEN".into(), token, host)?),
        (None, Some(path)) => {
            let name = format!("MCP_AUTH_TOKEN_FILE {}", path.display());
            let text = std::fs::read_to_string(&path).map_err(|e| SettingsError::BadToken {
                source_name: name.clone(),
                problem: format!("cannot be read: {}", e.kind()),
            })?;
            Some(check_token(name, text.trim().to_owned(), host)?)
        }
        (None, None) => None,
    };
    match token {
        Some(token) => Ok(Auth::Bearer(token)),
        None if !allow_no_auth => Err(SettingsError::MissingToken),
        None if !is_loopback(host) => Err(SettingsError::NoAuthNotLoopback(host.to_owned())),
        None => Ok(Auth::Disabled),
    }
}

/// A boolean variable: unset is false; anything but the usual spellings is an error.
fn flag(get: &impl Fn(&str) -> Option<String>, name: &'static str) -> Result<bool, SettingsError> {
    match get(name).map(|v| v.to_ascii_lowercase()) {
        None => Ok(false),
        Some(v) if matches!(v.as_str(), "1" | "true" | "yes" | "on") => Ok(true),
        Some(v) if matches!(v.as_str(), "0" | "false" | "no" | "off") => Ok(false),
        Some(value) => Err(SettingsError::Invalid {
            name,
            value,
            expected: "true or false",
        }),
    }
}

fn check_token(source_name: String, token: String, host: &str) -> Result<Secret, SettingsError> {
    // Never "about -0 bits": an estimate below zero is zero. Judged only off loopback: the
    // estimator's dictionaries (~6 MiB, held for the life of the process) are not loaded
    // for a token no other machine can try.
    let weak_off_loopback = || {
        let bits = estimated_entropy_bits(&token).max(0.0);
        (bits < MIN_TOKEN_BITS_OFF_LOOPBACK).then_some(bits)
    };
    let problem = if token.len() < MIN_TOKEN_LEN {
        format!("the token is shorter than {MIN_TOKEN_LEN} characters")
    } else if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        "the token contains whitespace or control characters".to_owned()
    } else if let Some(bits) = (!is_loopback(host)).then(weak_off_loopback).flatten() {
        format!(
            "the token is too weak for MCP_HOST={host} (other machines can reach it): about \
             {bits:.0} bits of estimated entropy, at least {MIN_TOKEN_BITS_OFF_LOOPBACK:.0} needed; \
             generate one with `openssl rand -hex 32`"
        )
    } else {
        return Ok(Secret::new(token));
    };
    Err(SettingsError::BadToken {
        source_name,
        problem,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<HttpSettings, SettingsError> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        HttpSettings::from_lookup(|k| map.get(k).cloned())
    }

    const TOKEN: (&str, &str) = ("MCP_AUTH_TOKEN", "0123456789abcdef0123");

    #[test]
    fn defaults_match_the_reference_except_the_bind_address() {
        let s = settings(&[TOKEN]).unwrap();
        assert_eq!(s.host, "127.0.0.1");
        assert_eq!(s.port, 3000);
        assert_eq!(s.rate_limit_window, Duration::from_millis(60_000));
        assert_eq!(s.rate_limit_max, 120);
        assert_eq!(s.max_body_bytes, 262_144);
        assert_eq!(s.headers_timeout, Duration::from_millis(15_000));
        assert_eq!(s.request_timeout, Duration::from_millis(120_000));
        assert_eq!(s.keepalive_timeout, Duration::from_millis(5_000));
        assert_eq!(s.max_headers, 64);
        assert!(matches!(s.auth, Auth::Bearer(_)));
    }

    #[test]
    fn invalid_numbers_are_errors_not_defaults() {
        for (name, value) in [
            ("MCP_PORT", "70000"),
            ("MCP_PORT", "abc"),
            ("MCP_RATE_LIMIT_MAX", "0"),
            ("MCP_RATE_LIMIT_WINDOW_MS", "-5"),
            ("MCP_MAX_BODY_SIZE_BYTES", "1e6"),
            ("MCP_HEADERS_TIMEOUT_MS", "fast"),
            ("MCP_MAX_HEADERS_COUNT", "0"),
        ] {
            let err = settings(&[TOKEN, (name, value)]).unwrap_err();
            assert!(
                matches!(&err, SettingsError::Invalid { name: n, .. } if *n == name),
                "{name}={value}: {err}"
            );
        }
        assert_eq!(settings(&[TOKEN, ("MCP_PORT", "0")]).unwrap().port, 0);
    }

    #[test]
    fn a_token_is_required_unless_loopback_and_explicitly_waived() {
        assert_eq!(settings(&[]).unwrap_err(), SettingsError::MissingToken);
        let s = settings(&[("MCP_ALLOW_NO_AUTH", "true")]).unwrap();
        assert_eq!(s.auth, Auth::Disabled);
        let err = settings(&[("MCP_ALLOW_NO_AUTH", "true"), ("MCP_HOST", "0.0.0.0")]).unwrap_err();
        assert!(matches!(err, SettingsError::NoAuthNotLoopback(_)));
        assert!(settings(&[("MCP_ALLOW_NO_AUTH", "true"), ("MCP_HOST", "::1")]).is_ok());
        assert!(settings(&[("MCP_ALLOW_NO_AUTH", "maybe")]).is_err());
    }

    #[test]
    fn weak_or_doubled_tokens_are_refused_without_echoing_them() {
        let err = settings(&[("MCP_AUTH_TOKEN", "short-secret")]).unwrap_err();
        assert!(!err.to_string().contains("short-secret"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "file-token-0123456789\n").unwrap();
        let file = path.to_str().unwrap();
        let s = settings(&[("MCP_AUTH_TOKEN_FILE", file)]).unwrap();
        assert_eq!(s.auth, Auth::Bearer(Secret::new("file-token-0123456789")));
        assert!(settings(&[TOKEN, ("MCP_AUTH_TOKEN_FILE", file)]).is_err());
        let missing = settings(&[("MCP_AUTH_TOKEN_FILE", "/nonexistent/token")]).unwrap_err();
        assert!(matches!(missing, SettingsError::BadToken { .. }));
    }

    #[test]
    fn off_loopback_a_token_needs_128_bits_of_estimated_entropy() {
        let hex = "3f9a0c7d51e2b846a9d03c5e7f1b2a8d6c4e0f9b3a5d7c1e8f2a4b6c9d0e1f3a";
        let weak = [
            "aaaaaaaaaaaaaaaa",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "abababababababababababababababab",
            // Found accepted by an outside attack: sequences, a repeated run, words.
            "abcdefghijklmnopqrstuvwxyz012345",
            "0123456789abcdef0123456789abcdef",
            "correcthorsebatterystaple1234567",
            TOKEN.1,
        ];
        for host in ["0.0.0.0", "192.168.1.5", "mcp.lan", "::"] {
            for token in weak {
                let err = settings(&[("MCP_HOST", host), ("MCP_AUTH_TOKEN", token)]).unwrap_err();
                let msg = err.to_string();
                assert!(msg.contains("openssl rand -hex 32"), "{msg}");
                assert!(!msg.contains(token), "{msg}");
            }
            assert!(settings(&[("MCP_HOST", host), ("MCP_AUTH_TOKEN", hex)]).is_ok());
        }
        // Loopback keeps today's rule: any token of at least 16 characters.
        for host in ["127.0.0.1", "::1", "localhost"] {
            let s = settings(&[("MCP_HOST", host), ("MCP_AUTH_TOKEN", "aaaaaaaaaaaaaaaa")]);
            assert!(s.is_ok(), "{host}");
        }
        assert!(estimated_entropy_bits("aaaaaaaaaaaaaaaa") < 1.0);
        assert!(estimated_entropy_bits(hex) > 200.0);
    }

    #[test]
    fn stateless_is_off_by_default_and_a_strict_boolean() {
        assert!(!settings(&[TOKEN]).unwrap().stateless);
        assert!(
            settings(&[TOKEN, ("MCP_STATELESS", "true")])
                .unwrap()
                .stateless
        );
        let err = settings(&[TOKEN, ("MCP_STATELESS", "sometimes")]).unwrap_err();
        assert!(matches!(
            err,
            SettingsError::Invalid {
                name: "MCP_STATELESS",
                ..
            }
        ));
    }

    #[test]
    fn debug_output_hides_the_token() {
        let s = settings(&[TOKEN]).unwrap();
        assert!(!format!("{s:?}").contains(TOKEN.1));
    }
}
