//! The authorization request (authorization code with PKCE S256, `state`,
//! `resource`, `scope`) and the validation of the redirect that answers it
//! (`state`, then RFC 9207 `iss`, then `error` or `code`).
//!
//! The step where a person acts is an [`Authorizer`]: it is handed the
//! authorization URL and returns the redirect's query. This crate has two: the
//! [`HeadlessAuthorizer`] (the client is its own user agent: it fetches the URL
//! without following redirects and reads the `Location` of the 3xx; for servers
//! that authorize without a person, such as test servers) and
//! [`LoopbackAuthorizer`](super::loopback::LoopbackAuthorizer) (prints the URL and
//! waits for the browser's redirect on 127.0.0.1).

use std::fmt;

use futures_util::future::BoxFuture;
use http::{HeaderMap, Method};
use oauth2::{CsrfToken, PkceCodeChallenge, PkceCodeVerifier};
use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq;
use url::Url;

use super::http::AuthHttp;
use crate::error::{Error, ErrorKind, Result};

/// What an [`Authorizer`] is handed: the URL to open and the expected `state`.
pub struct AuthorizationRequest<'a> {
    pub(crate) url: SecretString,
    pub(crate) state: &'a SecretString,
    pub(crate) redirect_uri: &'a str,
    pub(crate) server: &'a str,
    pub(crate) http: &'a AuthHttp,
}

impl AuthorizationRequest<'_> {
    /// The authorization URL (it carries the PKCE challenge and `state`: show it to
    /// the person who must open it, never log it).
    pub fn url(&self) -> &SecretString {
        &self.url
    }

    /// The `state` the redirect must carry back.
    pub fn state(&self) -> &SecretString {
        self.state
    }

    /// The redirect URI the request names.
    pub fn redirect_uri(&self) -> &str {
        self.redirect_uri
    }

    /// The configured server name (for messages).
    pub fn server(&self) -> &str {
        self.server
    }

    /// True when `candidate` equals the expected state, compared in constant time.
    pub fn state_matches(&self, candidate: &str) -> bool {
        constant_time_eq(candidate, self.state.expose_secret())
    }
}

impl fmt::Debug for AuthorizationRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorizationRequest")
            .field("url", &"[REDACTED]")
            .field("redirect_uri", &self.redirect_uri)
            .field("server", &self.server)
            .finish()
    }
}

/// The person-in-the-loop step of the authorization code flow.
pub trait Authorizer: Send + Sync + 'static {
    /// The redirect URI this authorizer receives the authorization response on
    /// (registered with the server and sent in the request).
    fn redirect_uri(&self) -> &str;

    /// Has the authorization URL opened and returns the query string of the
    /// redirect to [`redirect_uri`](Self::redirect_uri) (without `?`). Errors
    /// should be `unauthorized` or `timeout`, and carry no secret.
    fn authorize<'a>(
        &'a self,
        request: AuthorizationRequest<'a>,
    ) -> BoxFuture<'a, Result<SecretString>>;
}

/// The client as its own user agent: `GET` the authorization URL (through the
/// chain's egress policy, address policy and deadline), follow no redirect,
/// require a 3xx whose `Location` starts with the redirect URI, and return its
/// query. For authorization servers that need no person (test servers, the
/// conformance suite).
#[derive(Clone, Debug)]
pub struct HeadlessAuthorizer {
    redirect_uri: String,
}

impl HeadlessAuthorizer {
    /// Uses `redirect_uri` as the registered redirect URI (nothing listens there).
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        HeadlessAuthorizer {
            redirect_uri: redirect_uri.into(),
        }
    }
}

impl Default for HeadlessAuthorizer {
    /// `http://127.0.0.1:8765/callback`.
    fn default() -> Self {
        Self::new("http://127.0.0.1:8765/callback")
    }
}

impl_authorizer!(HeadlessAuthorizer);

impl HeadlessAuthorizer {
    /// [`Authorizer::authorize`]: fetches the URL and reads the redirect it answers with.
    async fn run(&self, request: AuthorizationRequest<'_>) -> Result<SecretString> {
        let url = Url::parse(request.url.expose_secret())
            .map_err(|_| unauthorized("the authorization URL is not valid"))?;
        let fetched = request
            .http
            .send(
                Method::GET,
                &url,
                HeaderMap::new(),
                bytes::Bytes::new(),
                16 * 1024,
                "authorization endpoint",
            )
            .await?;
        if !fetched.status.is_redirection() {
            return Err(unauthorized(&format!(
                "server \"{}\": the authorization endpoint answered HTTP {} instead of redirecting",
                request.server,
                fetched.status.as_u16()
            )));
        }
        let location = fetched
            .headers
            .get(http::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let Some(rest) = location.strip_prefix(&self.redirect_uri) else {
            return Err(unauthorized(&format!(
                "server \"{}\": the authorization endpoint redirected somewhere other than the redirect URI",
                request.server
            )));
        };
        let query = match rest.split_once('?') {
            Some(("", q)) => q,
            _ if rest.is_empty() => "",
            _ => {
                return Err(unauthorized(&format!(
                    "server \"{}\": the authorization endpoint redirected somewhere other than the redirect URI",
                    request.server
                )));
            }
        };
        let query = query.split('#').next().unwrap_or("");
        Ok(SecretString::from(query))
    }
}

fn unauthorized(message: &str) -> Error {
    Error::new(ErrorKind::Unauthorized, message.to_owned())
}

/// Compares two strings in constant time (for their common length; lengths are
/// not secret).
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// One authorization flow's record, made before the URL is handed out (verifier,
/// state, the issuer and its RFC 9207 flag, redirect URI, resource, scope).
/// `Debug` shows no secret.
pub(crate) struct FlowRecord {
    pub(crate) verifier: PkceCodeVerifier,
    pub(crate) state: SecretString,
    pub(crate) issuer: String,
    pub(crate) iss_supported: bool,
    pub(crate) redirect_uri: String,
    pub(crate) scopes: Vec<String>,
}

impl fmt::Debug for FlowRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowRecord")
            .field("issuer", &self.issuer)
            .field("iss_supported", &self.iss_supported)
            .field("redirect_uri", &self.redirect_uri)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// Builds the authorization URL and its flow record. `authorization_endpoint` was
/// checked by the address policy; `resource` is sent byte for byte.
///
/// **`prompt=consent` with `offline_access`.** When the scopes include
/// `offline_access`, the request also carries `prompt=consent`. `offline_access`
/// is defined by OpenID Connect Core §11, which lets a provider ignore it unless
/// consent is prompted (and then issue no refresh token); the chain requests it
/// only from a server whose metadata lists it in `scopes_supported`, which is what
/// an OpenID provider advertising offline access looks like. So the rule needs no
/// guess at whether the server "is" OpenID Connect (metadata from
/// `openid-configuration`, `openid` in `scopes_supported`): any request with
/// `offline_access` gets the prompt. A plain OAuth server must ignore the
/// parameter (RFC 6749 §3.1). This is what the official TypeScript SDK client
/// does (`startAuthorization`: `prompt=consent` whenever the scope includes
/// `offline_access`); the Python SDK client never adds `offline_access` itself.
pub(crate) fn authorization_url(
    authorization_endpoint: &str,
    client_id: &str,
    redirect_uri: &str,
    resource: &str,
    scopes: &[String],
    issuer: &str,
    iss_supported: bool,
) -> Result<(SecretString, FlowRecord)> {
    let auth_url = oauth2::AuthUrl::new(authorization_endpoint.to_owned())
        .map_err(|_| unauthorized("the authorization endpoint is not a valid URL"))?;
    let redirect = oauth2::RedirectUrl::new(redirect_uri.to_owned())
        .map_err(|_| Error::config("the redirect URI is not a valid URL"))?;
    let client = oauth2::basic::BasicClient::new(oauth2::ClientId::new(client_id.to_owned()))
        .set_auth_uri(auth_url)
        .set_redirect_uri(redirect);
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut request = client
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_scopes(scopes.iter().map(|s| oauth2::Scope::new(s.clone())))
        .add_extra_param("resource", resource);
    if scopes.iter().any(|s| s == "offline_access") {
        request = request.add_extra_param("prompt", "consent");
    }
    let (url, state) = request.url();
    Ok((
        SecretString::from(url.to_string()),
        FlowRecord {
            verifier,
            state: SecretString::from(state.secret().clone()),
            issuer: issuer.to_owned(),
            iss_supported,
            redirect_uri: redirect_uri.to_owned(),
            scopes: scopes.to_vec(),
        },
    ))
}

/// The error codes an authorization response may carry: RFC 6749 §4.1.2.1 and
/// RFC 8707 §2 (`invalid_target`, a `resource` the server refuses).
pub(crate) const AUTHORIZATION_ERRORS: [&str; 8] = [
    "invalid_request",
    "unauthorized_client",
    "access_denied",
    "unsupported_response_type",
    "invalid_scope",
    "server_error",
    "temporarily_unavailable",
    "invalid_target",
];

/// How a message names an authorization response's `error`: a standard code as
/// crate text (the static string, not the server's), anything else as
/// `an unknown error`.
pub(crate) fn authorization_error_name(error: &str) -> &'static str {
    AUTHORIZATION_ERRORS
        .iter()
        .find(|known| **known == error)
        .copied()
        .unwrap_or("an unknown error")
}

/// Validates the redirect's query against the flow record, in the order the
/// specification gives: `state` (else the whole response is discarded), then RFC
/// 9207 `iss` (exact string comparison; advertised and absent is a rejection; on
/// mismatch nothing else is read), then `error`, then `code`.
///
/// Messages never contain the code, the state, `iss`, or the server's
/// `error_description`; only a standard `error` code is named.
pub(crate) fn validate_callback(
    server: &str,
    record: &FlowRecord,
    query: &str,
) -> Result<oauth2::AuthorizationCode> {
    let mut state = None;
    let mut iss = None;
    let mut code = None;
    let mut error = None;
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        let slot = match &*k {
            "state" => &mut state,
            "iss" => &mut iss,
            "code" => &mut code,
            "error" => &mut error,
            _ => continue,
        };
        if slot.is_some() {
            return Err(unauthorized(&format!(
                "server \"{server}\": the authorization response repeats a parameter; it was discarded"
            )));
        }
        *slot = Some(v.into_owned());
    }
    match &state {
        Some(s) if constant_time_eq(s, record.state.expose_secret()) => {}
        _ => {
            return Err(unauthorized(&format!(
                "server \"{server}\": the authorization response's state does not match the request; it was discarded"
            )));
        }
    }
    match (&iss, record.iss_supported) {
        (Some(i), _) if i != &record.issuer => {
            return Err(unauthorized(&format!(
                "server \"{server}\": the authorization response names another issuer (RFC 9207 iss); it was discarded"
            )));
        }
        (None, true) => {
            return Err(unauthorized(&format!(
                "server \"{server}\": the authorization server advertises RFC 9207 but its response has no iss; it was discarded"
            )));
        }
        _ => {}
    }
    if let Some(error) = error {
        return Err(unauthorized(&format!(
            "server \"{server}\": the authorization server refused the authorization ({})",
            authorization_error_name(&error)
        )));
    }
    match code {
        Some(c) if !c.is_empty() => Ok(oauth2::AuthorizationCode::new(c)),
        _ => Err(unauthorized(&format!(
            "server \"{server}\": the authorization response has no code"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(iss_supported: bool) -> (SecretString, FlowRecord) {
        authorization_url(
            "http://localhost:9/authorize",
            "client",
            "http://127.0.0.1:1/callback",
            "http://localhost:3",
            &["a".into(), "b".into()],
            "http://localhost:9",
            iss_supported,
        )
        .unwrap()
    }

    fn query(r: &FlowRecord, extra: &str) -> String {
        format!("state={}&code=c0de{extra}", r.state.expose_secret())
    }

    #[test]
    fn the_url_carries_pkce_state_resource_and_scope() {
        let (url, r) = record(false);
        let url = Url::parse(url.expose_secret()).unwrap();
        let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["resource"], "http://localhost:3");
        assert_eq!(q["scope"], "a b");
        assert_eq!(q["redirect_uri"], "http://127.0.0.1:1/callback");
        assert!(!q.contains_key("prompt"));
        assert_eq!(q["state"], r.state.expose_secret());
        // 16 random bytes of state (128 bits), 43-char verifier.
        assert!(q["state"].len() >= 22);
        assert_eq!(r.verifier.secret().len(), 43);
        use sha2::Digest;
        let digest = sha2::Sha256::digest(r.verifier.secret().as_bytes());
        use base64::Engine;
        assert_eq!(
            q["code_challenge"],
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest)
        );
        let (_, none) = authorization_url(
            "http://h/a",
            "c",
            "http://127.0.0.1:1/cb",
            "r",
            &[],
            "i",
            false,
        )
        .unwrap();
        assert!(none.scopes.is_empty());
    }

    #[test]
    fn the_rfc_9207_table() {
        let iss = "&iss=http%3A%2F%2Flocalhost%3A9";
        let (_, supported) = record(true);
        let (_, plain) = record(false);
        assert!(validate_callback("s", &supported, &query(&supported, iss)).is_ok());
        assert!(validate_callback("s", &plain, &query(&plain, "")).is_ok());
        assert!(validate_callback("s", &plain, &query(&plain, iss)).is_ok());
        for (r, extra) in [
            (&supported, ""),
            (&supported, "&iss=https%3A%2F%2Fevil.example.com"),
            (&plain, "&iss=https%3A%2F%2Fevil.example.com"),
            (&supported, "&iss=http%3A%2F%2Flocalhost%3A9%2F"),
            (&supported, "&iss=HTTP%3A%2F%2Flocalhost%3A9"),
        ] {
            let err = validate_callback("s", r, &query(r, extra)).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Unauthorized);
            assert!(!err.message().contains("evil"), "{err}");
        }
        // A mismatched iss hides the error fields.
        let q = format!(
            "state={}&iss=x&error=access_denied&error_description=secret-text",
            supported.state.expose_secret()
        );
        let err = validate_callback("s", &supported, &q).unwrap_err();
        assert!(err.message().contains("issuer") && !err.message().contains("secret-text"));
    }

    #[test]
    fn state_first_then_error_then_code() {
        let (_, r) = record(false);
        for bad in [
            "code=c",
            "state=wrong&code=c",
            &format!("state={}&state=x&code=c", r.state.expose_secret()),
        ] {
            assert!(
                validate_callback("s", &r, bad)
                    .unwrap_err()
                    .message()
                    .contains("discarded")
            );
        }
        let q = format!(
            "state={}&error=access_denied&error_description=remote-text",
            r.state.expose_secret()
        );
        let err = validate_callback("s", &r, &q).unwrap_err();
        assert!(err.message().contains("access_denied") && !err.message().contains("remote-text"));
        let q = format!("state={}&error=made-up-by-server", r.state.expose_secret());
        assert!(
            !validate_callback("s", &r, &q)
                .unwrap_err()
                .message()
                .contains("made-up")
        );
        let q = format!("state={}", r.state.expose_secret());
        assert!(
            validate_callback("s", &r, &q)
                .unwrap_err()
                .message()
                .contains("no code")
        );
    }

    #[test]
    fn every_standard_authorization_error_code_is_named() {
        let (_, r) = record(false);
        // RFC 6749 §4.1.2.1 and RFC 8707 §2.
        for code in [
            "invalid_request",
            "unauthorized_client",
            "access_denied",
            "unsupported_response_type",
            "invalid_scope",
            "server_error",
            "temporarily_unavailable",
            "invalid_target",
        ] {
            let q = format!(
                "state={}&error={code}&error_description=remote-text",
                r.state.expose_secret()
            );
            let err = validate_callback("s", &r, &q).unwrap_err();
            assert!(err.message().contains(&format!("({code})")), "{err}");
            assert!(!err.message().contains("remote-text"), "{err}");
        }
    }

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq("abc", "abc"));
        assert!(!constant_time_eq("abc", "abd"));
        assert!(!constant_time_eq("abc", "abcd"));
    }
}
