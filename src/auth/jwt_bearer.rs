//! The JWT bearer grant (RFC 7523 §2.1) for clients that act without a browser:
//!
//! - **Workload identity** (SEP-1933, [`WorkloadIdentity`]): the platform mints a
//!   JWT for the workload (a Kubernetes projected service account token, a cloud
//!   workload identity token) and rotates it in a file; the chain presents it as
//!   the `assertion`, with its `client_id` and no client secret (`none`).
//! - **Enterprise-managed authorization** (SEP-990, [`EnterpriseManaged`]): the
//!   user's ID token from the enterprise identity provider is exchanged there
//!   (RFC 8693: `requested_token_type` `urn:ietf:params:oauth:token-type:id-jag`,
//!   `audience` = the authorization server's issuer, `resource` = the protected
//!   resource) for an Identity Assertion JWT Authorization Grant (ID-JAG), which
//!   the chain presents as the `assertion` with its own client authentication
//!   (`client_secret_basic`, `client_secret_post` or `none`, as the
//!   authorization server lists).
//!
//! Either one replaces registration and the authorization code flow; the
//! authorization server must list `urn:ietf:params:oauth:grant-type:jwt-bearer` in
//! `grant_types_supported`, else the chain stops with `unauthorized` before any
//! token request (and before the exchange at the identity provider). A refusal is final: no retry, no other grant (an assertion
//! the server refused once is refused again; a fresh one comes from the platform,
//! at the next challenge). Every request goes through the chain's HTTP stack
//! (egress grants, address policy, no redirects, 64 KiB bodies, a deadline).
//!
//! Assertions come from an [`AssertionSource`]: a value, a file or an environment
//! variable, read again at every token request (so a rotated file is picked up),
//! at most [`AssertionSource::max_bytes`] bytes, trimmed, never empty. The ID
//! token, the ID-JAG, the workload assertion and every secret stay out of
//! `Debug`, errors and diagnostics.

use std::fmt;
use std::io::Read;
use std::path::PathBuf;

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use http::{HeaderMap, Method};
use secrecy::{ExposeSecret, SecretString};
use url::Url;

use super::http::{AuthHttp, MAX_TOKEN_RESPONSE_BYTES};
use super::id_jag;
use super::token::{AuthMethod, TokenEndpoint, TokenFailure, TokenSet, basic_authorization};
use crate::error::{Error, ErrorKind, Result};

/// `urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523 §2.1).
pub const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// `urn:ietf:params:oauth:grant-type:token-exchange` (RFC 8693 §2.1).
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// `urn:ietf:params:oauth:token-type:id_token` (RFC 8693 §3).
pub const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
pub use super::id_jag::ID_JAG_TOKEN_TYPE;
/// The default of [`AssertionSource::max_bytes`]: 16 KiB, several times a real
/// ID token or workload identity token.
pub const DEFAULT_MAX_ASSERTION_BYTES: usize = 16 * 1024;

#[derive(Clone)]
enum Source {
    Value(SecretString),
    File(PathBuf),
    Env(String),
}

/// Where an assertion (a workload identity token, a user's ID token) comes from.
/// It is read again at every token request; surrounding whitespace is trimmed;
/// an empty one, one that is not UTF-8, or one longer than
/// [`max_bytes`](Self::max_bytes) is an `invalid_config` error naming the file or
/// variable (never its content). `Debug` shows the path or variable name, never
/// a value.
#[derive(Clone)]
pub struct AssertionSource {
    source: Source,
    max_bytes: usize,
}

impl fmt::Debug for AssertionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Source::Value(_) => f.write_str("Value([REDACTED])")?,
            Source::File(path) => write!(f, "File({path:?})")?,
            Source::Env(var) => write!(f, "Env({var:?})")?,
        }
        write!(f, " (max {} bytes)", self.max_bytes)
    }
}

impl AssertionSource {
    /// An assertion held in memory (it cannot be rotated).
    pub fn value(assertion: SecretString) -> Self {
        Self::with(Source::Value(assertion))
    }

    /// A file the platform writes and rotates (a projected service account token,
    /// say), read at every token request.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        Self::with(Source::File(path.into()))
    }

    /// An environment variable, read at every token request.
    pub fn env(var: impl Into<String>) -> Self {
        Self::with(Source::Env(var.into()))
    }

    fn with(source: Source) -> Self {
        AssertionSource {
            source,
            max_bytes: DEFAULT_MAX_ASSERTION_BYTES,
        }
    }

    /// The largest assertion accepted, in bytes, before trimming (the server
    /// file's `maxTokenBytes`). Default: [`DEFAULT_MAX_ASSERTION_BYTES`]; 0 is
    /// refused when the transport is built.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// Where it comes from, for messages (`what` names the assertion).
    fn origin(&self, what: &str) -> String {
        match &self.source {
            Source::Value(_) => format!("the {what}"),
            Source::File(path) => format!("the {what} file {}", path.display()),
            Source::Env(var) => format!("the {what} in environment variable {var}"),
        }
    }

    /// Checks what can be checked before the first request.
    fn validate(&self, what: &str) -> Result<()> {
        if self.max_bytes == 0 {
            return Err(Error::config(format!(
                "the {what}'s bound (maxTokenBytes, AssertionSource::max_bytes) is 0"
            )));
        }
        match &self.source {
            Source::Value(v) => self.accept(what, v.expose_secret().as_bytes()).map(drop),
            Source::Env(var) if var.is_empty() || var.contains(['=', '\0']) => Err(Error::config(
                format!("the {what}'s environment variable name is empty or holds '=' or NUL"),
            )),
            Source::File(path) if path.as_os_str().is_empty() => {
                Err(Error::config(format!("the {what}'s file path is empty")))
            }
            _ => Ok(()),
        }
    }

    /// Applies the bound, UTF-8, trimming and the empty check to `bytes`.
    fn accept(&self, what: &str, bytes: &[u8]) -> Result<SecretString> {
        if bytes.len() > self.max_bytes {
            return Err(self.too_large(what, Some(bytes.len())));
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|_| Error::config(format!("{} is not UTF-8 text", self.origin(what))))?;
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::config(format!("{} is empty", self.origin(what))));
        }
        Ok(SecretString::from(text.to_owned()))
    }

    fn too_large(&self, what: &str, size: Option<usize>) -> Error {
        let size = match size {
            Some(n) => format!("{n} bytes"),
            None => format!("more than {} bytes", self.max_bytes),
        };
        Error::config(format!(
            "{} holds {size}, more than the bound of {} bytes (raise it with maxTokenBytes in the server file, AssertionSource::max_bytes in the library)",
            self.origin(what),
            self.max_bytes
        ))
    }

    /// Reads the assertion now (a file on the blocking pool, at most
    /// `max_bytes + 1` bytes of it).
    pub(crate) async fn read(&self, what: &'static str) -> Result<SecretString> {
        match &self.source {
            Source::Value(v) => self.accept(what, v.expose_secret().as_bytes()),
            Source::Env(var) => match std::env::var_os(var) {
                Some(value) => match value.into_string() {
                    Ok(text) => self.accept(what, text.as_bytes()),
                    Err(_) => Err(Error::config(format!(
                        "{} is not UTF-8 text",
                        self.origin(what)
                    ))),
                },
                None => Err(Error::config(format!("{} is unset", self.origin(what)))),
            },
            Source::File(path) => {
                let path = path.clone();
                let cap = self.max_bytes as u64 + 1;
                let read =
                    tokio::task::spawn_blocking(move || -> std::io::Result<(u64, Vec<u8>)> {
                        let file = std::fs::File::open(&path)?;
                        let size = file.metadata()?.len();
                        let mut bytes = Vec::new();
                        file.take(cap).read_to_end(&mut bytes)?;
                        Ok((size, bytes))
                    })
                    .await
                    .map_err(|_| Error::config(format!("reading {} failed", self.origin(what))))?;
                match read {
                    Ok((size, _)) if size > self.max_bytes as u64 => {
                        Err(self.too_large(what, usize::try_from(size).ok()))
                    }
                    Ok((_, bytes)) if bytes.len() > self.max_bytes => {
                        Err(self.too_large(what, None))
                    }
                    Ok((_, bytes)) => self.accept(what, &bytes),
                    Err(e) => Err(Error::config(format!(
                        "{} cannot be read ({})",
                        self.origin(what),
                        e.kind()
                    ))),
                }
            }
        }
    }
}

/// Workload identity federation (SEP-1933): the JWT bearer grant with an
/// assertion the platform mints, the client id in the body and no client
/// secret. No registration, no person.
///
/// ```
/// use smthrs_mcp::auth::{AssertionSource, OAuth, WorkloadIdentity};
///
/// let oauth = OAuth::new().workload_identity(WorkloadIdentity::new(
///     "my-agent",
///     AssertionSource::file("/var/run/secrets/tokens/mcp-token"),
/// ));
/// # let _ = oauth;
/// ```
#[derive(Clone, Debug)]
pub struct WorkloadIdentity {
    pub(crate) client_id: String,
    pub(crate) assertion: AssertionSource,
}

impl WorkloadIdentity {
    /// The grant for `client_id`, presenting the assertion `assertion` gives.
    pub fn new(client_id: impl Into<String>, assertion: AssertionSource) -> Self {
        WorkloadIdentity {
            client_id: client_id.into(),
            assertion,
        }
    }

    /// The client id.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.client_id.is_empty() {
            return Err(Error::config("the workload identity client id is empty"));
        }
        self.assertion.validate(WORKLOAD_ASSERTION)
    }
}

/// What messages call the workload's assertion.
pub(crate) const WORKLOAD_ASSERTION: &str = "workload identity token";
/// What messages call the user's ID token.
pub(crate) const ID_TOKEN: &str = "ID token";

/// Enterprise-managed authorization (SEP-990): the user's ID token is exchanged
/// at the enterprise identity provider's token endpoint for an ID-JAG, presented
/// to the MCP server's authorization server with the JWT bearer grant.
///
/// The identity provider is another origin: the [`default_grants`] admit any
/// `https` one (and `http` on loopback when the MCP server is on loopback);
/// grants set with [`OAuth::egress_grants`] must admit `POST` to it. The
/// address policy applies to it as to every URL the chain reaches.
///
/// [`default_grants`]: super::default_grants
/// [`OAuth::egress_grants`]: super::OAuth::egress_grants
///
/// ```
/// use secrecy::SecretString;
/// use smthrs_mcp::auth::{AssertionSource, EnterpriseManaged, OAuth};
///
/// let grant = EnterpriseManaged::new(
///     "https://idp.example.com/oauth2/token", // the IdP's token endpoint
///     "idp-client-id",                       // this client at the IdP
///     AssertionSource::env("ID_TOKEN"),      // the user's ID token
///     "mcp-client-id",                       // this client at the MCP server's AS
/// )
/// .client_secret(SecretString::from("from a vault"));
/// let oauth = OAuth::new().enterprise_managed(grant);
/// # let _ = oauth;
/// ```
#[derive(Clone)]
pub struct EnterpriseManaged {
    pub(crate) idp_token_endpoint: String,
    pub(crate) idp_client_id: String,
    pub(crate) idp_client_secret: Option<SecretString>,
    pub(crate) id_token: AssertionSource,
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<SecretString>,
}

impl fmt::Debug for EnterpriseManaged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterpriseManaged")
            .field(
                "idp_token_endpoint",
                &crate::http::url_for_debug(&self.idp_token_endpoint),
            )
            .field("idp_client_id", &self.idp_client_id)
            .field(
                "idp_client_secret",
                &self.idp_client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("id_token", &self.id_token)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .finish()
    }
}

impl EnterpriseManaged {
    /// The grant: `idp_token_endpoint` (an `https` URL, or `http` on loopback)
    /// and `idp_client_id` for the exchange at the identity provider, `id_token`
    /// the user's ID token, `client_id` this client at the MCP server's
    /// authorization server. No secrets by default.
    pub fn new(
        idp_token_endpoint: impl Into<String>,
        idp_client_id: impl Into<String>,
        id_token: AssertionSource,
        client_id: impl Into<String>,
    ) -> Self {
        EnterpriseManaged {
            idp_token_endpoint: idp_token_endpoint.into(),
            idp_client_id: idp_client_id.into(),
            idp_client_secret: None,
            id_token,
            client_id: client_id.into(),
            client_secret: None,
        }
    }

    /// This client's secret at the identity provider, sent in the exchange's
    /// body (`client_secret_post`). Default: none (a public client).
    pub fn idp_client_secret(mut self, secret: SecretString) -> Self {
        self.idp_client_secret = Some(secret);
        self
    }

    /// This client's secret at the MCP server's authorization server (Basic or
    /// post, as the server lists). Default: none (`none`).
    pub fn client_secret(mut self, secret: SecretString) -> Self {
        self.client_secret = Some(secret);
        self
    }

    /// The client id at the MCP server's authorization server.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    pub(crate) fn validate(&self) -> Result<()> {
        let url = Url::parse(&self.idp_token_endpoint).map_err(|_| {
            Error::config("the identity provider's token endpoint is not a valid URL")
        })?;
        if !matches!(url.scheme(), "https" | "http")
            || url.fragment().is_some()
            || !url.username().is_empty()
            || url.password().is_some()
        {
            return Err(Error::config(
                "the identity provider's token endpoint must be an http(s) URL without userinfo or fragment",
            ));
        }
        if self.idp_client_id.is_empty() {
            return Err(Error::config(
                "the client id at the identity provider is empty",
            ));
        }
        if self.client_id.is_empty() {
            return Err(Error::config(
                "the client id at the authorization server is empty",
            ));
        }
        self.id_token.validate(ID_TOKEN)
    }
}

fn form(pairs: &[(&str, &str)]) -> Bytes {
    let mut body = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        body.append_pair(k, v);
    }
    Bytes::from(body.finish())
}

fn form_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    headers
}

fn refused(server: &str, message: String) -> Error {
    Error::new(
        ErrorKind::Unauthorized,
        format!("server \"{server}\": {message}"),
    )
}

/// The RFC 8693 exchange at the identity provider: the ID token for an ID-JAG
/// whose audience is `audience` (the authorization server's issuer) and whose
/// resource is `resource`. One request, never retried.
pub(crate) async fn exchange_id_token(
    http: &AuthHttp,
    server: &str,
    grant: &EnterpriseManaged,
    audience: &str,
    resource: &str,
    scopes: &[String],
) -> Result<id_jag::IdJag> {
    const WHAT: &str = "identity provider's token endpoint";
    let url = Url::parse(&grant.idp_token_endpoint)
        .map_err(|_| refused(server, format!("the {WHAT} is not a valid URL")))?;
    let id_token = grant
        .id_token
        .read(ID_TOKEN)
        .await
        .map_err(|e| prefixed(server, e))?;
    let scope = scopes.join(" ");
    let mut pairs = vec![
        ("grant_type", TOKEN_EXCHANGE_GRANT),
        ("requested_token_type", ID_JAG_TOKEN_TYPE),
        ("subject_token", id_token.expose_secret()),
        ("subject_token_type", ID_TOKEN_TYPE),
        ("audience", audience),
        ("resource", resource),
        ("client_id", &grant.idp_client_id),
    ];
    if let Some(secret) = &grant.idp_client_secret {
        pairs.push(("client_secret", secret.expose_secret()));
    }
    if !scope.is_empty() {
        pairs.push(("scope", &scope));
    }
    let fetched = http
        .send(
            Method::POST,
            &url,
            form_headers(),
            form(&pairs),
            MAX_TOKEN_RESPONSE_BYTES,
            WHAT,
        )
        .await
        .map_err(|e| prefixed(server, e))?;
    if fetched.status.is_redirection() {
        return Err(refused(
            server,
            format!("the {WHAT} answered with a redirect (not followed)"),
        ));
    }
    if !fetched.status.is_success() {
        return Err(refused(
            server,
            format!(
                "the identity provider refused the token exchange: HTTP {} ({})",
                fetched.status.as_u16(),
                id_jag::refusal_code(&fetched.body)
            ),
        ));
    }
    id_jag::decode_token_exchange_response(&fetched.body)
        .map_err(|why| refused(server, format!("the identity provider's answer {why}")))
}

fn prefixed(server: &str, e: Error) -> Error {
    let message = format!("server \"{server}\": {}", e.message());
    e.with_message(message)
}

/// The JWT bearer grant at the authorization server's token endpoint, with the
/// client authentication `endpoint.method` (form-encoded id and secret for
/// Basic, RFC 6749 §2.3.1). The answer is read like every token response
/// ([`super::token::token_response`]). One request, never retried.
pub(crate) async fn jwt_bearer_token(
    http: &AuthHttp,
    endpoint: &TokenEndpoint<'_>,
    assertion: &SecretString,
    scopes: &[String],
) -> std::result::Result<TokenSet, TokenFailure> {
    let url = Url::parse(endpoint.url).map_err(|_| {
        TokenFailure::Other(refused(
            endpoint.server,
            "the token endpoint is not a valid URL".to_owned(),
        ))
    })?;
    let scope = scopes.join(" ");
    let mut pairs = vec![
        ("grant_type", JWT_BEARER_GRANT),
        ("assertion", assertion.expose_secret()),
        ("resource", endpoint.resource),
    ];
    if !scope.is_empty() {
        pairs.push(("scope", &scope));
    }
    let mut headers = form_headers();
    let secret = endpoint.client_secret.as_ref().map(|s| s.secret().as_str());
    match (endpoint.method, secret) {
        (AuthMethod::Basic, Some(secret)) => {
            let value = basic_authorization(endpoint.client_id, secret).ok_or_else(|| {
                TokenFailure::Other(Error::config(
                    "the client credentials are not a valid header value",
                ))
            })?;
            headers.insert(AUTHORIZATION, value);
        }
        (AuthMethod::Post, Some(secret)) => {
            pairs.push(("client_id", endpoint.client_id));
            pairs.push(("client_secret", secret));
        }
        _ => pairs.push(("client_id", endpoint.client_id)),
    }
    let (parts, body) = http::Request::builder()
        .method(Method::POST)
        .uri(url.as_str())
        .body(form(&pairs).to_vec())
        .map_err(|_| {
            TokenFailure::Other(refused(
                endpoint.server,
                "the token endpoint is not a valid URL".to_owned(),
            ))
        })?
        .into_parts();
    let mut request = http::Request::from_parts(parts, body);
    *request.headers_mut() = headers;
    let hook = http.oauth2_client("token endpoint", endpoint.dpop.clone());
    let response = oauth2::AsyncHttpClient::call(&hook, request)
        .await
        .map_err(|e| TokenFailure::Other(prefixed(endpoint.server, e)))?;
    super::token::token_response(
        endpoint.server,
        response.status(),
        response.body(),
        scopes,
        endpoint.dpop.as_ref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, content: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("smthrs-jwt-bearer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }

    #[test]
    fn the_idp_endpoint_refuses_userinfo_and_debug_shows_no_credentials() {
        let grant = |endpoint: &str| {
            EnterpriseManaged::new(
                endpoint,
                "idp-client",
                AssertionSource::value(SecretString::from("id.token")),
                "as-client",
            )
        };
        for bad in [
            "https://user:planted-pass@idp.example/token",
            "https://planted-user@idp.example/token",
        ] {
            let e = grant(bad).validate().unwrap_err();
            assert!(e.message().contains("without userinfo"), "{e}");
            assert!(!format!("{e} {e:?}").contains("planted"), "{e:?}");
        }
        let ok = grant("https://idp.example/token?planted=q#f");
        let debug = format!("{ok:?}");
        assert!(debug.contains("https://idp.example/token"), "{debug}");
        assert!(!debug.contains("planted"), "{debug}");
        assert!(grant("https://idp.example/token").validate().is_ok());
    }

    #[tokio::test]
    async fn a_file_is_read_trimmed_and_bounded_and_named_never_shown() {
        let path = temp("ok", b"  eyJ.a.b\n");
        let source = AssertionSource::file(&path);
        assert_eq!(
            source.read("token").await.unwrap().expose_secret(),
            "eyJ.a.b"
        );
        std::fs::write(&path, b"second.c.d").unwrap();
        assert_eq!(
            source.read("token").await.unwrap().expose_secret(),
            "second.c.d"
        );
        let big = temp("big", &[b'x'; 33]);
        let err = AssertionSource::file(&big)
            .max_bytes(32)
            .read("token")
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidConfig);
        assert!(
            err.message()
                .contains("holds 33 bytes, more than the bound of 32 bytes"),
            "{err}"
        );
        assert!(err.message().contains("maxTokenBytes"), "{err}");
        let empty = temp("empty", b" \n\t");
        let err = AssertionSource::file(&empty)
            .read("token")
            .await
            .unwrap_err();
        assert!(err.message().ends_with("is empty"), "{err}");
        let err = AssertionSource::file(empty.with_extension("missing"))
            .read("token")
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidConfig);
        assert!(err.message().contains("cannot be read"), "{err}");
        let bad = temp("bad", b"\xff\xfe");
        assert!(
            AssertionSource::file(&bad)
                .read("token")
                .await
                .unwrap_err()
                .message()
                .contains("not UTF-8")
        );
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn values_and_configs_are_checked_at_build_and_redacted() {
        let v = AssertionSource::value(SecretString::from("wif-secret-value"));
        assert!(!format!("{v:?}").contains("wif-secret-value"));
        assert!(
            AssertionSource::value(SecretString::from("  "))
                .validate("t")
                .is_err()
        );
        assert!(AssertionSource::env("A=B").validate("t").is_err());
        assert!(
            AssertionSource::file("/x")
                .max_bytes(0)
                .validate("t")
                .is_err()
        );
        let e = EnterpriseManaged::new("not a url", "idp", v.clone(), "c");
        assert_eq!(e.validate().unwrap_err().kind(), ErrorKind::InvalidConfig);
        let e = EnterpriseManaged::new("https://idp/token", "idp", v.clone(), "c")
            .idp_client_secret(SecretString::from("idp-secret-x"))
            .client_secret(SecretString::from("as-secret-y"));
        e.validate().unwrap();
        let shown = format!("{e:?}");
        for s in ["wif-secret-value", "idp-secret-x", "as-secret-y"] {
            assert!(!shown.contains(s), "{shown}");
        }
        assert!(WorkloadIdentity::new("", v).validate().is_err());
    }
}
