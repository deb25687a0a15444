//! The `Authorization` header of every API request, built from a [`Connection`].
//!
//! Invariants: the token id parts are checked (none empty, no whitespace, `@`, `!` or `=`); the
//! header value is marked sensitive so `Debug` never prints it; no error ever echoes the secret.

use reqwest::header::HeaderValue;

use super::super::error::PveError;
use super::super::{Connection, Product};

/// `PVEAPIToken=user@realm!token=secret` (PBS: `PBSAPIToken=user@realm!token:secret`),
/// validated and marked sensitive. Errors never echo it.
pub(super) fn auth_header(conn: &Connection, product: Product) -> Result<HeaderValue, PveError> {
    token_header(
        TokenParts {
            user: &conn.user,
            realm: &conn.realm,
            token_name: &conn.token_name,
            secret: &conn.token_secret,
        },
        product,
    )
}

/// One API token: `user@realm!token_name` and its secret.
#[derive(Clone, Copy)]
pub struct TokenParts<'a> {
    /// The user, without realm.
    pub user: &'a str,
    /// The user's realm.
    pub realm: &'a str,
    /// The token's name (after `!`).
    pub token_name: &'a str,
    /// The secret. Never printed.
    pub secret: &'a str,
}

/// The header of any token (the server's own, or a person's), checked as [`auth_header`] is.
pub(super) fn token_header(
    token: TokenParts<'_>,
    product: Product,
) -> Result<HeaderValue, PveError> {
    let parts = [
        ("the API user", token.user),
        ("the API user's realm", token.realm),
        ("the API token's name", token.token_name),
    ];
    for (what, value) in parts {
        if value.trim().is_empty() {
            return Err(PveError::Config(format!("{what} is empty")));
        }
        if value.chars().any(|c| c.is_whitespace() || c.is_control())
            || value.contains(['@', '!', '='])
        {
            return Err(PveError::Config(format!(
                "{what} {value:?} contains whitespace or one of '@', '!', '='"
            )));
        }
    }
    if token.secret.trim().is_empty() {
        return Err(PveError::Config("the API token secret is empty".to_owned()));
    }
    let text = match product {
        Product::Pve => format!(
            "PVEAPIToken={}@{}!{}={}",
            token.user, token.realm, token.token_name, token.secret
        ),
        Product::Pbs => format!(
            "PBSAPIToken={}@{}!{}:{}",
            token.user, token.realm, token.token_name, token.secret
        ),
    };
    let mut value = HeaderValue::from_str(&text).map_err(|_| {
        PveError::Config(
            "the API token secret contains characters that cannot be sent in an HTTP header"
                .to_owned(),
        )
    })?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::super::Client;
    use super::super::tests::conn;
    use super::*;

    #[test]
    fn bad_token_id_parts_are_named_plainly() {
        let mut c = conn("pve01");
        c.token_name = "my token".into();
        let err = Client::new(&c).unwrap_err().to_string();
        assert!(
            err.contains(
                "the API token's name \"my token\" contains whitespace or one of '@', '!', '='"
            ),
            "{err}"
        );
        assert!(!err.contains("token token"), "{err}");
        c.token_name = " ".into();
        let err = Client::new(&c).unwrap_err().to_string();
        assert!(err.contains("the API token's name is empty"), "{err}");
        let mut c = conn("pve01");
        c.realm = "p!ve".into();
        let err = Client::new(&c).unwrap_err().to_string();
        assert!(err.contains("the API user's realm \"p!ve\""), "{err}");
    }

    #[test]
    fn auth_header_is_sensitive() {
        let value = auth_header(&conn("pve01"), Product::Pve).unwrap();
        assert!(value.is_sensitive());
        assert_eq!(
            value.to_str().unwrap(),
            "PVEAPIToken=svc_mcp@pve!mcp=s3cr3t-value"
        );
        assert!(!format!("{value:?}").contains("s3cr3t"));
        let client = Client::new(&conn("pve01")).unwrap();
        assert!(!format!("{client:?}").contains("s3cr3t"));
        let pbs = auth_header(&conn("pbs01"), Product::Pbs).unwrap();
        assert!(pbs.is_sensitive());
        assert_eq!(
            pbs.to_str().unwrap(),
            "PBSAPIToken=svc_mcp@pve!mcp:s3cr3t-value"
        );
        assert!(!format!("{pbs:?}").contains("s3cr3t"));
    }
}
