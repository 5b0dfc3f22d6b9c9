//! Token revocation (RFC 7009) at logout, and what a logout did ([`Logout`]).
//!
//! [`HttpTransport::logout`](crate::transport::http::HttpTransport::logout) revokes
//! the stored tokens at the revocation endpoint the authorization server's
//! metadata named when they were issued (kept with them as
//! [`StoredTokens::revocation_endpoint`](super::store::StoredTokens::revocation_endpoint),
//! so no discovery runs), then forgets them whatever the answer:
//!
//! 1. the refresh token, with `token_type_hint=refresh_token` (revoking it ends
//!    the grant at servers that tie the access tokens to it, RFC 7009 §2.1);
//! 2. the access token, with `token_type_hint=access_token`.
//!
//! Each request is a form `POST` with the client authentication the token
//! endpoint gets when the chain refreshes without discovery: the registration's
//! `client_secret_basic` (HTTP Basic over the form-encoded id and secret),
//! `client_secret_post`, or `none` (the client id in the body); a
//! client-credentials client with a key sends a fresh client assertion. It goes
//! through the chain's stack (`auth::http`): the egress grants, the address
//! policy (an endpoint it refuses gets nothing), no redirect followed, the body
//! capped, a deadline. A `2xx` is success (RFC 7009 §2.2: the server answers
//! `200` for a token it revoked or never knew); anything else is a failure
//! naming the HTTP status and a standard error code at most, never the server's
//! text. A failure never stops the forgetting: it is the [`Logout::NotRevoked`]
//! outcome, for the host to show.

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use http::{HeaderMap, Method};
use secrecy::{ExposeSecret, SecretString};
use url::Url;

use super::http::{AuthHttp, MAX_TOKEN_RESPONSE_BYTES};
use super::token::{AuthMethod, basic_authorization};
use crate::error::{Error, ErrorKind, Result};

/// What a logout did. The stored tokens are forgotten in every case.
#[derive(Debug)]
#[non_exhaustive]
pub enum Logout {
    /// No tokens were stored: nothing was revoked or forgotten.
    NothingStored,
    /// Every stored token was revoked at the authorization server, then forgotten.
    Revoked,
    /// The authorization server named no revocation endpoint (or the tokens were
    /// stored before this crate kept it): the tokens were forgotten here only and
    /// stay valid at the server until they expire.
    NotOffered,
    /// Revocation failed (refused, unreachable, or refused by the egress or
    /// address policy before anything was sent); the error says which token and
    /// why, in crate text. The tokens were forgotten here anyway.
    NotRevoked(Error),
}

/// The error codes a refused revocation may name (RFC 7009 §2.2.1, RFC 6749 §5.2).
pub(crate) const REVOCATION_ERRORS: [&str; 7] = [
    "unsupported_token_type",
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
];

/// How a message names the `error` of a refused revocation (the capped body): a
/// standard code as crate text, anything else as `an unknown error`.
pub(crate) fn revocation_error_name(body: &[u8]) -> &'static str {
    let error = match crate::json_bounds::parse_value(body) {
        Ok(serde_json::Value::Object(map)) => map
            .get("error")
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned),
        _ => None,
    };
    error
        .and_then(|e| REVOCATION_ERRORS.iter().find(|known| **known == e))
        .copied()
        .unwrap_or("an unknown error")
}

/// The revocation endpoint and how the client authenticates there.
pub(crate) struct RevocationEndpoint<'a> {
    pub(crate) server: &'a str,
    pub(crate) url: &'a str,
    pub(crate) client_id: &'a str,
    pub(crate) client_secret: Option<&'a SecretString>,
    pub(crate) method: AuthMethod,
    /// Extra form parameters (a client assertion).
    pub(crate) extra: Vec<(&'static str, SecretString)>,
}

/// Which token a revocation request carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hint {
    Refresh,
    Access,
}

impl Hint {
    fn wire(self) -> &'static str {
        match self {
            Hint::Refresh => "refresh_token",
            Hint::Access => "access_token",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Hint::Refresh => "refresh token",
            Hint::Access => "access token",
        }
    }
}

/// Revokes `token` at `endpoint`. See the [module docs](self).
pub(crate) async fn revoke(
    http: &AuthHttp,
    endpoint: &RevocationEndpoint<'_>,
    token: &SecretString,
    hint: Hint,
) -> Result<()> {
    const WHAT: &str = "revocation endpoint";
    let server = endpoint.server;
    let named = |e: Error| {
        let message = format!("server \"{server}\": {}", e.message());
        e.with_message(message)
    };
    let url = Url::parse(endpoint.url).map_err(|_| {
        Error::new(
            ErrorKind::Unauthorized,
            format!("server \"{server}\": the revocation endpoint is not a valid URL"),
        )
    })?;
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("token", token.expose_secret());
    form.append_pair("token_type_hint", hint.wire());
    let mut headers = HeaderMap::new();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    let secret = endpoint.client_secret.map(|s| s.expose_secret());
    match (endpoint.method, secret) {
        (AuthMethod::Basic, Some(secret)) => {
            let value = basic_authorization(endpoint.client_id, secret).ok_or_else(|| {
                Error::new(
                    ErrorKind::Unauthorized,
                    format!(
                        "server \"{server}\": the client credentials are not a valid header value"
                    ),
                )
            })?;
            headers.insert(AUTHORIZATION, value);
        }
        (AuthMethod::Post, Some(secret)) => {
            form.append_pair("client_id", endpoint.client_id);
            form.append_pair("client_secret", secret);
        }
        _ => {
            form.append_pair("client_id", endpoint.client_id);
        }
    }
    for (name, value) in &endpoint.extra {
        form.append_pair(name, value.expose_secret());
    }
    let body = Bytes::from(form.finish());
    let fetched = http
        .send(
            Method::POST,
            &url,
            headers,
            body,
            MAX_TOKEN_RESPONSE_BYTES,
            WHAT,
        )
        .await
        .map_err(named)?;
    if fetched.status.is_success() {
        return Ok(());
    }
    let token = hint.name();
    let status = fetched.status.as_u16();
    let message = if fetched.status.is_redirection() {
        format!(
            "server \"{server}\": the revocation endpoint answered the {token}'s revocation with a redirect (not followed)"
        )
    } else if fetched.status.is_client_error() {
        format!(
            "server \"{server}\": the revocation endpoint refused to revoke the {token}: HTTP {status} ({})",
            revocation_error_name(&fetched.body)
        )
    } else {
        format!(
            "server \"{server}\": the revocation endpoint did not revoke the {token}: HTTP {status}"
        )
    };
    Err(Error::new(ErrorKind::Unauthorized, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_named_from_the_standard_codes_only() {
        for code in REVOCATION_ERRORS {
            let body = serde_json::json!({"error": code, "error_description": "remote-text"});
            assert_eq!(revocation_error_name(body.to_string().as_bytes()), code);
        }
        for body in [
            &br#"{"error":"remote-text"}"#[..],
            br#"{"error":7}"#,
            b"remote-text",
            b"",
        ] {
            assert_eq!(revocation_error_name(body), "an unknown error");
        }
    }

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        use base64::Engine as _;
        let value = basic_authorization("a b:c/é", "s&t").unwrap();
        assert!(value.is_sensitive());
        let encoded = value.to_str().unwrap().strip_prefix("Basic ").unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        assert_eq!(decoded, b"a+b%3Ac%2F%C3%A9:s%26t");
    }
}
