//! Token requests (authorization code, refresh, client credentials) through the
//! `oauth2` crate, driven by the chain's HTTP stack, and the token set the
//! chain keeps.
//!
//! Every request carries `resource` (RFC 8707), the PRM string byte for byte. The
//! client authentication method is chosen from what the registration and the
//! server's metadata say ([`choose_auth_method`]). Responses are 200 JSON, capped
//! at 64 KiB. Error
//! messages name the standard OAuth error code at most, never the server's
//! `error_description` or anything from the response body.

use std::fmt;
use std::time::Duration;

use oauth2::basic::{BasicErrorResponseType, BasicTokenType};
use oauth2::{RequestTokenError, StandardErrorResponse, TokenResponse};
use secrecy::{ExposeSecret, SecretString};

use super::dpop::DpopSigner;
use super::http::AuthHttp;
use crate::error::{Error, ErrorKind, Result};

/// The longest a token is refreshed before it expires: a token living
/// [`REFRESH_MARGIN_SHARE`] times this or longer (2.5 minutes) is refreshed this
/// long before its expiry. See [`refresh_margin`].
pub const REFRESH_MARGIN: Duration = Duration::from_secs(30);

/// A token is refreshed once less than `1 / REFRESH_MARGIN_SHARE` of its lifetime
/// is left (at most [`REFRESH_MARGIN`] before it expires).
pub const REFRESH_MARGIN_SHARE: u64 = 5;

/// How long before expiry a token that lived `lifetime` seconds (from when it was
/// obtained to when it expires) is refreshed: a fifth of its lifetime, at most
/// [`REFRESH_MARGIN`]; the full [`REFRESH_MARGIN`] when the lifetime is unknown.
///
/// Why this rule:
/// - The margin exists so a token does not expire between the check and the
///   server's; 30 s (rmcp's margin) covers a slow request and a clock that is a
///   little off, and a long-lived token loses nothing by refreshing that early: a
///   one-hour token still refreshes 30 s before it expires.
/// - A fixed 30 s is wrong for short tokens: a token living 30 s or less would be
///   due on arrival and refreshed before every request. A fifth of the lifetime
///   keeps four fifths of it usable (a 20 s token is used for 16 s, then
///   refreshed once), as Kubernetes' kubelet rotates projected service account
///   tokens once 80 % of their lifetime has passed. A larger share would refresh
///   short tokens more often for no gain; a smaller one would leave a short token
///   too little slack for one request (10 % of a 10 s token is 1 s).
/// - The switch from the share to the cap is at a 150 s lifetime, so the margin
///   never grows past 30 s and never shrinks below a fifth.
/// - Unknown lifetime (a token stored before the time it was obtained was
///   recorded): the full 30 s, as before; its first refresh records it.
pub fn refresh_margin(lifetime: Option<u64>) -> Duration {
    match lifetime {
        Some(lifetime) => Duration::from_secs(lifetime / REFRESH_MARGIN_SHARE).min(REFRESH_MARGIN),
        None => REFRESH_MARGIN,
    }
}

/// The one refresh rule every caller uses: true when a token expiring at
/// `expires_at` and obtained at `obtained_at` (seconds since the Unix epoch) is
/// expired at `now` or expires within its [`refresh_margin`]. A token without an
/// expiry is never due; an `obtained_at` after `expires_at` counts as unknown.
pub(crate) fn refresh_due(expires_at: Option<u64>, obtained_at: Option<u64>, now: u64) -> bool {
    let Some(at) = expires_at else {
        return false;
    };
    let lifetime = obtained_at.and_then(|from| at.checked_sub(from));
    at <= now.saturating_add(refresh_margin(lifetime).as_secs())
}

/// An access token with what came with it. `Debug` shows no token.
#[derive(Clone)]
pub struct TokenSet {
    /// The access token.
    pub access_token: SecretString,
    /// The refresh token, when one was issued (or kept from before).
    pub refresh_token: Option<SecretString>,
    /// When the access token expires (seconds since the Unix epoch), if known.
    pub expires_at: Option<u64>,
    /// When the access token was obtained (seconds since the Unix epoch): with
    /// `expires_at`, its lifetime, which sets its [`refresh_margin`]. `None` for
    /// tokens stored before it was recorded.
    pub obtained_at: Option<u64>,
    /// The granted scopes (the requested ones when the response names none).
    pub scopes: Vec<String>,
    /// True when the token is DPoP-bound (`token_type: DPoP`): it is sent as
    /// `Authorization: DPoP` with a proof made with the issuer's key
    /// ([`crate::auth::dpop`]).
    pub dpop_bound: bool,
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"[REDACTED]")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "[REDACTED]"),
            )
            .field("expires_at", &self.expires_at)
            .field("obtained_at", &self.obtained_at)
            .field("scopes", &self.scopes)
            .field("dpop_bound", &self.dpop_bound)
            .finish()
    }
}

impl TokenSet {
    /// True when the token is expired at `now` or expires within its
    /// [`refresh_margin`] (a fifth of its lifetime, at most [`REFRESH_MARGIN`]).
    pub fn needs_refresh(&self, now: u64) -> bool {
        refresh_due(self.expires_at, self.obtained_at, now)
    }
}

/// A token endpoint client authentication method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMethod {
    /// `client_secret_basic`: HTTP Basic with the form-encoded id and secret.
    Basic,
    /// `client_secret_post`: id and secret in the body.
    Post,
    /// `none`: the client id in the body.
    None,
}

/// Chooses the method: the one the registration named if the server lists it
/// (or lists nothing); else `client_secret_basic` when there is a secret and it is
/// listed, then `client_secret_post`, then `none`. An absent list means the RFC
/// 8414 default, `client_secret_basic`.
pub fn choose_auth_method(
    assigned: Option<&str>,
    supported: Option<&[String]>,
    has_secret: bool,
) -> AuthMethod {
    let parse = |m: &str| match m {
        "client_secret_basic" => Some(AuthMethod::Basic),
        "client_secret_post" => Some(AuthMethod::Post),
        "none" => Some(AuthMethod::None),
        _ => None,
    };
    let listed = |m: &str| supported.is_none_or(|l| l.iter().any(|s| s == m));
    if let Some(method) = assigned.and_then(|a| parse(a).filter(|_| listed(a)))
        && (method == AuthMethod::None || has_secret)
    {
        return method;
    }
    if has_secret {
        let supported = supported.unwrap_or(&[]);
        if supported.is_empty() || supported.iter().any(|s| s == "client_secret_basic") {
            return AuthMethod::Basic;
        }
        if supported.iter().any(|s| s == "client_secret_post") {
            return AuthMethod::Post;
        }
    }
    AuthMethod::None
}

/// The parts of a token request the chain supplies.
pub(crate) struct TokenEndpoint<'a> {
    pub(crate) server: &'a str,
    pub(crate) url: &'a str,
    pub(crate) client_id: &'a str,
    pub(crate) client_secret: Option<oauth2::ClientSecret>,
    pub(crate) method: AuthMethod,
    pub(crate) resource: &'a str,
    /// The key and nonces when the request carries a DPoP proof.
    pub(crate) dpop: Option<DpopSigner>,
}

type Client = oauth2::basic::BasicClient<
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointNotSet,
    oauth2::EndpointSet,
>;

impl TokenEndpoint<'_> {
    fn client(&self, redirect_uri: Option<&str>) -> Result<Client> {
        let token_url = oauth2::TokenUrl::new(self.url.to_owned()).map_err(|_| {
            Error::new(
                ErrorKind::Unauthorized,
                format!(
                    "server \"{}\": the token endpoint is not a valid URL",
                    self.server
                ),
            )
        })?;
        let mut client =
            oauth2::basic::BasicClient::new(oauth2::ClientId::new(self.client_id.to_owned()))
                .set_token_uri(token_url)
                .set_auth_type(match self.method {
                    AuthMethod::Basic => oauth2::AuthType::BasicAuth,
                    AuthMethod::Post | AuthMethod::None => oauth2::AuthType::RequestBody,
                });
        if self.method != AuthMethod::None
            && let Some(secret) = &self.client_secret
        {
            client = client.set_client_secret(secret.clone());
        }
        if let Some(uri) = redirect_uri {
            let uri = oauth2::RedirectUrl::new(uri.to_owned())
                .map_err(|_| Error::config("the redirect URI is not a valid URL"))?;
            client = client.set_redirect_uri(uri);
        }
        Ok(client)
    }
}

/// The standard token endpoint error codes a message may name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum TokenFailure {
    /// `invalid_grant`: the code or refresh token is no longer valid.
    InvalidGrant,
    /// `invalid_client` / `unauthorized_client` (the code): the registration is
    /// not valid.
    InvalidClient(&'static str),
    /// Anything else (already a public error).
    Other(Error),
}

/// How a message names a token endpoint `error` that is not `invalid_grant`,
/// `invalid_client` or `unauthorized_client`: the other codes of RFC 6749 §5.2
/// and RFC 8707 §2 (`invalid_target`) as crate text, anything else as
/// `an unknown error`.
fn token_error_name(error: &BasicErrorResponseType) -> &'static str {
    match error {
        BasicErrorResponseType::InvalidRequest => "invalid_request",
        BasicErrorResponseType::InvalidClient => "invalid_client",
        BasicErrorResponseType::InvalidGrant => "invalid_grant",
        BasicErrorResponseType::UnauthorizedClient => "unauthorized_client",
        BasicErrorResponseType::UnsupportedGrantType => "unsupported_grant_type",
        BasicErrorResponseType::InvalidScope => "invalid_scope",
        BasicErrorResponseType::Extension(code) if code == "invalid_target" => "invalid_target",
        BasicErrorResponseType::Extension(code) if code == "use_dpop_nonce" => "use_dpop_nonce",
        BasicErrorResponseType::Extension(code) if code == "invalid_dpop_proof" => {
            "invalid_dpop_proof"
        }
        BasicErrorResponseType::Extension(_) => "an unknown error",
    }
}

fn map_error(
    server: &str,
    error: RequestTokenError<Error, StandardErrorResponse<BasicErrorResponseType>>,
) -> TokenFailure {
    match error {
        RequestTokenError::Request(e) => TokenFailure::Other(e),
        RequestTokenError::ServerResponse(response) => match response.error() {
            BasicErrorResponseType::InvalidGrant => TokenFailure::InvalidGrant,
            code @ (BasicErrorResponseType::InvalidClient
            | BasicErrorResponseType::UnauthorizedClient) => {
                TokenFailure::InvalidClient(token_error_name(code))
            }
            other => TokenFailure::Other(Error::new(
                ErrorKind::Unauthorized,
                format!(
                    "server \"{server}\": the token endpoint refused the request ({})",
                    token_error_name(other)
                ),
            )),
        },
        // Parse errors carry the body: never shown.
        RequestTokenError::Parse(..) | RequestTokenError::Other(_) => {
            TokenFailure::Other(Error::new(
                ErrorKind::Unauthorized,
                format!(
                    "server \"{server}\": the token endpoint's answer is not a valid token response"
                ),
            ))
        }
    }
}

impl TokenFailure {
    /// The public error for this failure.
    pub(crate) fn into_error(self, server: &str) -> Error {
        match self {
            TokenFailure::InvalidGrant => Error::new(
                ErrorKind::Unauthorized,
                format!(
                    "server \"{server}\": the token endpoint refused the grant (invalid_grant)"
                ),
            ),
            TokenFailure::InvalidClient(code) => Error::new(
                ErrorKind::Unauthorized,
                format!("server \"{server}\": the token endpoint refused the client ({code})"),
            ),
            TokenFailure::Other(e) => e,
        }
    }
}

fn token_set(
    server: &str,
    response: oauth2::basic::BasicTokenResponse,
    requested: &[String],
    old_refresh: Option<&SecretString>,
    dpop: Option<&DpopSigner>,
) -> std::result::Result<TokenSet, TokenFailure> {
    // oauth2 lower-cases the type: `DPoP` arrives as `dpop`.
    let dpop_bound = match response.token_type() {
        BasicTokenType::Bearer if dpop.is_some_and(|d| d.required) => {
            return Err(TokenFailure::Other(Error::new(
                ErrorKind::Unauthorized,
                format!(
                    "server \"{server}\": the token endpoint answered a DPoP proof with a Bearer token, and the configuration requires DPoP (OAuth::dpop)"
                ),
            )));
        }
        BasicTokenType::Bearer => false,
        BasicTokenType::Extension(t) if t == "dpop" && dpop.is_some() => true,
        BasicTokenType::Extension(t) if t == "dpop" => {
            return Err(TokenFailure::Other(Error::new(
                ErrorKind::Unauthorized,
                format!(
                    "server \"{server}\": the token endpoint issued a DPoP token to a request without a DPoP proof"
                ),
            )));
        }
        _ => {
            return Err(TokenFailure::Other(Error::new(
                ErrorKind::Unauthorized,
                format!(
                    "server \"{server}\": the token endpoint issued a token type this client does not support (only Bearer and DPoP)"
                ),
            )));
        }
    };
    let access = response.access_token().secret();
    if access.is_empty() || http::HeaderValue::from_str(&format!("Bearer {access}")).is_err() {
        return Err(TokenFailure::Other(Error::new(
            ErrorKind::Unauthorized,
            format!(
                "server \"{server}\": the token endpoint issued an access token that is not a valid header value"
            ),
        )));
    }
    let obtained = super::clock::now();
    Ok(TokenSet {
        access_token: SecretString::from(access.clone()),
        refresh_token: response
            .refresh_token()
            .map(|r| SecretString::from(r.secret().clone()))
            .or_else(|| old_refresh.cloned()),
        expires_at: response
            .expires_in()
            .map(|d| obtained.saturating_add(d.as_secs())),
        obtained_at: Some(obtained),
        scopes: match response.scopes() {
            Some(scopes) => scopes.iter().map(|s| s.to_string()).collect(),
            None => requested.to_vec(),
        },
        dpop_bound,
    })
}

/// Redeems an authorization code.
pub(crate) async fn exchange_code(
    http: &AuthHttp,
    endpoint: &TokenEndpoint<'_>,
    code: oauth2::AuthorizationCode,
    verifier: oauth2::PkceCodeVerifier,
    redirect_uri: &str,
    scopes: &[String],
) -> std::result::Result<TokenSet, TokenFailure> {
    let client = endpoint
        .client(Some(redirect_uri))
        .map_err(TokenFailure::Other)?;
    let hook = http.oauth2_client("token endpoint", endpoint.dpop.clone());
    let response = client
        .exchange_code(code)
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", endpoint.resource)
        .request_async(&hook)
        .await
        .map_err(|e| map_error(endpoint.server, e))?;
    token_set(
        endpoint.server,
        response,
        scopes,
        None,
        endpoint.dpop.as_ref(),
    )
}

/// `Authorization: Basic` for a client (RFC 6749 §2.3.1: the id and the secret
/// form-encoded, then base64), marked sensitive; `None` when that is not a valid
/// header value. For the requests this crate builds itself (revocation, the
/// JWT bearer grant); the oauth2 crate's requests do the same.
pub(crate) fn basic_authorization(client_id: &str, secret: &str) -> Option<http::HeaderValue> {
    use base64::Engine as _;
    let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
        "{}:{}",
        encode(client_id),
        encode(secret)
    ));
    let mut value = http::HeaderValue::from_str(&format!("Basic {credentials}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// Refreshes with `refresh_token`; a response without a new refresh token keeps
/// the old one. `extra` carries a client assertion when the client authenticates
/// with a JWT.
pub(crate) async fn refresh(
    http: &AuthHttp,
    endpoint: &TokenEndpoint<'_>,
    refresh_token: &SecretString,
    scopes: &[String],
    extra: &[(&'static str, SecretString)],
) -> std::result::Result<TokenSet, TokenFailure> {
    let client = endpoint.client(None).map_err(TokenFailure::Other)?;
    let hook = http.oauth2_client("token endpoint", endpoint.dpop.clone());
    let token = oauth2::RefreshToken::new(refresh_token.expose_secret().to_owned());
    let mut request = client
        .exchange_refresh_token(&token)
        .add_extra_param("resource", endpoint.resource);
    for (name, value) in extra {
        request = request.add_extra_param(*name, value.expose_secret().to_owned());
    }
    let response = request
        .request_async(&hook)
        .await
        .map_err(|e| map_error(endpoint.server, e))?;
    token_set(
        endpoint.server,
        response,
        scopes,
        Some(refresh_token),
        endpoint.dpop.as_ref(),
    )
}

/// The client credentials grant; `extra` carries a client assertion when the
/// client authenticates with a JWT.
pub(crate) async fn client_credentials(
    http: &AuthHttp,
    endpoint: &TokenEndpoint<'_>,
    scopes: &[String],
    extra: &[(&'static str, SecretString)],
) -> std::result::Result<TokenSet, TokenFailure> {
    let client = endpoint.client(None).map_err(TokenFailure::Other)?;
    let hook = http.oauth2_client("token endpoint", endpoint.dpop.clone());
    let mut request = client
        .exchange_client_credentials()
        .add_scopes(scopes.iter().map(|s| oauth2::Scope::new(s.clone())))
        .add_extra_param("resource", endpoint.resource);
    for (name, value) in extra {
        request = request.add_extra_param(*name, value.expose_secret().to_owned());
    }
    let response = request
        .request_async(&hook)
        .await
        .map_err(|e| map_error(endpoint.server, e))?;
    token_set(
        endpoint.server,
        response,
        scopes,
        None,
        endpoint.dpop.as_ref(),
    )
}

/// Reads a token endpoint's answer to a request built by hand (the JWT bearer
/// grant, which `oauth2` has no request for) as `oauth2` reads the others: `200`
/// with a token response ([`token_set`]'s rules), anything else an error response
/// naming the standard code at most.
pub(crate) fn token_response(
    server: &str,
    status: http::StatusCode,
    body: &[u8],
    requested: &[String],
    dpop: Option<&DpopSigner>,
) -> std::result::Result<TokenSet, TokenFailure> {
    let invalid = || map_error(server, RequestTokenError::Other(String::new()));
    if status != http::StatusCode::OK {
        let response =
            serde_json::from_slice::<StandardErrorResponse<BasicErrorResponseType>>(body)
                .map_err(|_| invalid())?;
        return Err(map_error(
            server,
            RequestTokenError::ServerResponse(response),
        ));
    }
    let response =
        serde_json::from_slice::<oauth2::basic::BasicTokenResponse>(body).map_err(|_| invalid())?;
    token_set(server, response, requested, None, dpop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn method_selection() {
        use AuthMethod::{Basic, Post};
        let none = AuthMethod::None;
        // The default mock: lists only none, DCR hands out a secret anyway.
        assert_eq!(choose_auth_method(None, Some(&list(&["none"])), true), none);
        assert_eq!(
            choose_auth_method(
                Some("client_secret_basic"),
                Some(&list(&["client_secret_basic"])),
                true
            ),
            Basic
        );
        assert_eq!(
            choose_auth_method(
                Some("client_secret_post"),
                Some(&list(&["client_secret_post"])),
                true
            ),
            Post
        );
        assert_eq!(
            choose_auth_method(Some("none"), Some(&list(&["none"])), false),
            none
        );
        // Pre-registered, only basic listed.
        assert_eq!(
            choose_auth_method(None, Some(&list(&["client_secret_basic"])), true),
            Basic
        );
        // Absent list: the RFC 8414 default.
        assert_eq!(choose_auth_method(None, None, true), Basic);
        assert_eq!(choose_auth_method(None, None, false), none);
        // Assigned but not listed: fall back to the listed order.
        assert_eq!(
            choose_auth_method(
                Some("client_secret_basic"),
                Some(&list(&["client_secret_post"])),
                true
            ),
            Post
        );
        // A secret-based method without a secret is not possible.
        assert_eq!(
            choose_auth_method(
                Some("client_secret_post"),
                Some(&list(&["client_secret_post", "none"])),
                false
            ),
            none
        );
    }

    fn token(obtained_at: Option<u64>, expires_at: Option<u64>) -> TokenSet {
        TokenSet {
            access_token: SecretString::from("a"),
            refresh_token: None,
            expires_at,
            obtained_at,
            scopes: vec![],
            dpop_bound: false,
        }
    }

    #[test]
    fn a_long_lived_token_is_refreshed_30_s_before_it_expires() {
        // One hour, obtained at 1000.
        let t = token(Some(1000), Some(4600));
        assert!(!t.needs_refresh(1000));
        assert!(!t.needs_refresh(4569));
        assert!(t.needs_refresh(4570));
        assert!(t.needs_refresh(5000));
        assert_eq!(refresh_margin(Some(3600)), REFRESH_MARGIN);
        // The share and the cap meet at 150 s.
        assert_eq!(refresh_margin(Some(150)), REFRESH_MARGIN);
        assert_eq!(refresh_margin(Some(149)), Duration::from_secs(29));
        assert!(!format!("{t:?}").contains("\"a\""));
    }

    #[test]
    fn a_short_lived_token_is_used_for_four_fifths_of_its_life() {
        // 20 s: not due when obtained nor for 16 s, due in its last 4 s.
        let t = token(Some(1000), Some(1020));
        for now in 1000..1016 {
            assert!(!t.needs_refresh(now), "{now}");
        }
        for now in 1016..1030 {
            assert!(t.needs_refresh(now), "{now}");
        }
        // Under 5 s: no margin left, due once expired.
        let t = token(Some(1000), Some(1004));
        assert!(!t.needs_refresh(1003));
        assert!(t.needs_refresh(1004));
        // Expired on arrival (expires_in 0): due at once.
        assert!(token(Some(1000), Some(1000)).needs_refresh(1000));
    }

    #[test]
    fn an_unknown_lifetime_keeps_the_full_margin_and_no_expiry_is_never_due() {
        // Stored before `obtainedAt` existed: 30 s, as before.
        let t = token(None, Some(1000));
        assert!(t.needs_refresh(970));
        assert!(!t.needs_refresh(969));
        // Obtained after it expires (a clock jump, a hand-edited file): unknown.
        assert!(token(Some(2000), Some(1000)).needs_refresh(970));
        assert!(!token(Some(0), None).needs_refresh(u64::MAX));
        assert!(token(None, Some(u64::MAX)).needs_refresh(u64::MAX));
    }
}
