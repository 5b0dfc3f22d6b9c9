//! The Streamable HTTP transport, as a tower service stack.
//!
//! # The stack
//!
//! Each outbound frame is one `POST` through this stack (outermost first):
//!
//! 1. your own layers, added with [`HttpTransportBuilder::layer`] (the first added is
//!    the outermost, as with `tower::ServiceBuilder`); they see each request once
//!    (redirects are followed below them);
//! 2. with [`HttpTransportBuilder::follow_same_origin_redirects`], tower-http's
//!    `FollowRedirect` with this crate's same-origin policy (the hops go through
//!    every layer below, the egress policy included);
//! 3. [`EgressPolicyLayer`]: refuses requests no
//!    `net:<method>:<origin>` grant allows, before anything leaves the process;
//! 4. [`BearerAuthLayer`]: the bearer token, marked
//!    sensitive and restricted to the endpoint's origin (or the
//!    [`OAuthLayer`] when OAuth is configured);
//! 5. the MCP header/session layer: `Accept`, `Content-Type`, `Mcp-Session-Id`;
//! 6. the transport's one HTTP client: hyper-util's pooled `client::legacy::Client`
//!    over hyper-rustls (the `ring` provider; HTTP/2 via ALPN where the server
//!    offers it), built once per transport and shared with its OAuth chain, or
//!    one [`SharedHttpClient`] many transports share
//!    ([`HttpTransportBuilder::http_client`]: one pool, the layers above it
//!    each transport's own).
//!
//! The stack's request type is [`HttpRequest`] (`http::Request<Full<Bytes>>`), its
//! response [`HttpResponse`] (a boxed body), its error [`BoxError`]. Errors this
//! crate produces travel boxed as [`crate::Error`].
//!
//! # Why the event-stream parser is this crate's own
//!
//! `sse` bounds every event while it is still arriving (`maxFrameBytes` plus
//! framing), so an endless event fails at its bound instead of growing a buffer.
//! No maintained crate does: `eventsource-stream` has had no commit since 2022,
//! bounds nothing, and has an unmerged fix for a panic on a leading byte-order
//! mark; `sse-stream`, which rmcp uses, bounds no event in progress either (rmcp
//! wraps it in a bound of its own). Ours is fuzzed against a reference parser
//! (`fuzz/`, target `http_sse`).
//!
//! # What the transport does, and does not
//!
//! It moves bytes; the session engine owns JSON-RPC meaning. Response bodies to a
//! request become inbound frames: an `application/json` body (or one without a
//! content type) is one frame, each `text/event-stream` event with non-empty `data`
//! is one frame; `202`/`204` to a request fail that request (its reply can never
//! come). A POSTed notification or reply is answered `202`; a body a server sends
//! anyway is ignored. Every body and every event is bounded by `maxFrameBytes`.
//! The source is a bounded channel (`queueCapacity`, at most 4096 events): a reader
//! that falls behind slows the HTTP reads down. At most `queueCapacity` POSTs are in
//! flight (sent, response head not yet received); sending a frame waits for a
//! slot, starts the POST, and returns without waiting for the response for a request, but waits
//! for the response head of a notification or reply, so those keep their order
//! with what follows (`notifications/initialized` reaches the server before
//! `tools/list`). A response stream that stays open does not hold a slot, so with
//! an SSE-replying server the reply to a server request arriving on a stream can be
//! sent while that stream is open.
//!
//! Streamable HTTP behaviour (MCP 2025-06-18, with 2025-11-25's SSE polling):
//!
//! - The session id is captured from the first successful response carrying
//!   `Mcp-Session-Id` (the `initialize` exchange) and sent on every later `POST`,
//!   `GET` and `DELETE`. An id that is not visible ASCII (0x21-0x7E) ends the session
//!   with `protocol_error` and is never echoed.
//! - Once the legacy handshake negotiated a version (the engine writes it into the
//!   HTTP hints of each frame), every request carries
//!   `MCP-Protocol-Version`, and after the next successful POST
//!   (the `notifications/initialized` completing the handshake) the optional
//!   standalone `GET` stream is opened; `400`, `404` and `405` mean the server offers
//!   none, which is fine. The notification whose POST started the stream (the
//!   `notifications/initialized`) returns only once the GET is answered, or after
//!   1 s (at most a quarter of `handshakeTimeoutMs`) if it is
//!   not, so a server that answers promptly has the stream open before the first
//!   request after the handshake: it may deliver that request's reply on it.
//! - A response stream that breaks or ends while its request is unsettled, and that
//!   carried an event id, is resumed: after the server's `retry:` delay (default
//!   1 s, capped at 60 s) the transport sends `GET` with
//!   `Last-Event-ID` and reads on. A stream the server ends cleanly (2025-11-25
//!   polling) is not a failure; five broken or refused attempts
//!   in a row without a delivered message end the resumption. The engine's request
//!   deadline bounds the whole. Without an id, the request fails with
//!   `connection_closed`.
//! - A `404` answering a request that carried a session id forgets the session (id
//!   and version) and reports the lost state to the engine, which re-initialises;
//!   the next response carrying an id starts the new session. A `404` for a session
//!   already replaced (a POST in flight across the re-initialise) is reported with
//!   `stale: true`, and the engine sends that frame again with the new session. The
//!   engine holds requests made while it re-initialises until the new session is
//!   open, so none goes out without a session id.
//! - The session's teardown stops every task and sends `DELETE` with the session
//!   id, bounded by 2 s (`405` is fine). A transport dropped without
//!   that teardown (its runtime gone) stops every task but sends no `DELETE`.
//!
//! # Errors
//!
//! | what happened | how it is reported | kind |
//! | --- | --- | --- |
//! | `401` / `403` | terminal `Closed` | `unauthorized` |
//! | another error status (`4xx`, `5xx`, unfollowed `3xx`) to a request | that request fails; the body is never read | `http_status` |
//! | a body or event over `maxFrameBytes`, a malformed event stream, an invalid session id | terminal | `protocol_error` |
//! | connection refused, reset, DNS failure | terminal | `connection_closed` |
//! | certificate not trusted, TLS handshake failure, a fatal TLS alert from the server (client certificate refused) | terminal | `tls` |
//! | no egress grant for the request | terminal, nothing sent | `egress_denied` |
//! | a response stream that ended before its reply and cannot be resumed | that request fails | `connection_closed` |
//!
//! Error statuses answering notifications and replies (no request to fail) are
//! ignored, except `401`/`403` and the session-expiry `404`. Messages name the
//! server; they never contain the token, the session id, response bodies, or the
//! URL's userinfo or query.
//!
//! # Example
//!
//! ```no_run
//! use smthrs_mcp::transport::http::HttpTransport;
//!
//! # fn main() -> smthrs_mcp::Result<()> {
//! let transport = HttpTransport::builder("tracker", "https://mcp.tracker.example/mcp")
//!     .bearer_token_env("TRACKER_MCP_TOKEN")
//!     .build()?;
//! # let _ = transport;
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use hyper_util::client::proxy::matcher::Matcher;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use secrecy::SecretString;
use tower::util::{BoxCloneService, Either};
use tower::{Layer, Service, ServiceExt};
use tower_http::follow_redirect::FollowRedirect;

use crate::auth::chain::Chain;
use crate::auth::http::PolicyGuard;
use crate::diagnostics::Diagnostics;
use crate::error::{Error, Result};
use crate::http::client::{self, AddressGuard, HttpClient};
use crate::http::redirect;
use crate::layer::{BearerAuthLayer, BoxError, EgressGrants, EgressPolicyLayer, OAuthLayer};
use crate::transport::{Connection, TransportContext};

use bytes::Bytes;
use http_body_util::Full;
use http_body_util::combinators::UnsyncBoxBody;

mod driver;
mod headers;
mod session_id;
mod shared;
mod sse;

pub use shared::{SharedHttpClient, SharedHttpClientBuilder};

pub(crate) use headers::{CallHeaders, HttpHints, ParamHeader};

/// The request type of the HTTP stack.
pub type HttpRequest = http::Request<Full<Bytes>>;
/// The response body type of the HTTP stack.
pub type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;
/// The response type of the HTTP stack.
pub type HttpResponse = http::Response<ResponseBody>;
/// The type-erased service the stack is built from, and what
/// [`HttpTransportBuilder::layer`] wraps.
pub type HttpService = BoxCloneService<HttpRequest, HttpResponse, BoxError>;

/// Wait before resuming a stream when the server sent no `retry:` field.
pub(crate) const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The longest `retry:` delay honoured; a larger value is capped to this.
pub(crate) const MAX_RETRY: Duration = Duration::from_secs(60);
/// Consecutive resumption (or standalone-stream reopen) attempts without a
/// delivered message before giving up.
pub(crate) const MAX_RESUME_ATTEMPTS: u32 = 5;
/// How long a response stream is still read after its request settled (a server
/// should close it right after the reply; this bounds one that does not).
pub(crate) const SETTLED_STREAM_GRACE: Duration = Duration::from_secs(5);
/// The bound on the `DELETE` sent at shutdown.
pub(crate) const DELETE_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest the handshake waits, after `notifications/initialized`, for the
/// server to answer the standalone stream's `GET` (never more than a quarter of
/// `handshakeTimeoutMs`); then it goes on without it.
pub(crate) const STANDALONE_OPEN_WAIT: Duration = Duration::from_secs(1);

type LayerFn = Arc<dyn Fn(HttpService) -> HttpService + Send + Sync>;

enum TokenSource {
    None,
    Env(String),
    Value(SecretString),
}

/// Where a client's proxies come from. Compared as configured: a transport
/// shares a [`SharedHttpClient`] only when it says the same.
#[derive(Default, PartialEq, Eq)]
enum ProxySource {
    #[default]
    None,
    Env,
    Explicit(String),
}

impl ProxySource {
    /// For `Debug`: never the proxy URL's userinfo.
    fn describe(&self) -> String {
        match self {
            ProxySource::None => "none".to_owned(),
            ProxySource::Env => "environment".to_owned(),
            ProxySource::Explicit(url) => crate::http::url_for_debug(url),
        }
    }
}

/// Builds an [`HttpTransport`]. Setters never fail; [`HttpTransportBuilder::build`]
/// reports the first problem as `invalid_config`.
#[must_use = "a builder does nothing until build() is called"]
pub struct HttpTransportBuilder {
    server: Arc<str>,
    url: String,
    token: TokenSource,
    grants: Option<EgressGrants>,
    proxy: ProxySource,
    tls: client::TlsOptions,
    redirects: usize,
    layers: Vec<LayerFn>,
    oauth: Option<crate::auth::OAuth>,
    shared: Option<SharedHttpClient>,
    oauth_proxy_resolves_names: bool,
}

impl HttpTransportBuilder {
    /// Sends this transport's requests through `client`, one HTTP client (one
    /// connection pool) that other transports share ([`SharedHttpClient`]):
    /// servers on one origin then reuse each other's idle connections. The
    /// egress policy, the token and every other layer stay this transport's
    /// own. This transport's TLS and proxy settings must equal the client's,
    /// and it may have neither OAuth nor a client certificate:
    /// [`build`](Self::build) refuses otherwise (`invalid_config`, naming the
    /// setting).
    ///
    /// Default: a client of this transport's own.
    pub fn http_client(mut self, client: SharedHttpClient) -> Self {
        self.shared = Some(client);
        self
    }

    /// Authorizes with OAuth 2.1 ([`crate::auth`]): the stack gets an
    /// [`OAuthLayer`] in place of the bearer layer, which
    /// answers a `401` by running the authorization chain and retries once.
    /// Exclusive with [`bearer_token`](Self::bearer_token) and
    /// [`bearer_token_env`](Self::bearer_token_env) (`build()` refuses both).
    ///
    /// Default: no OAuth.
    pub fn oauth(mut self, oauth: crate::auth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// Reads the bearer token from the environment variable `var`, once, in
    /// [`build`](Self::build). An unset, empty or non-UTF-8 variable is an
    /// `invalid_config` error naming the server and the variable (never a value).
    ///
    /// Default: no token.
    pub fn bearer_token_env(mut self, var: impl Into<String>) -> Self {
        self.token = TokenSource::Env(var.into());
        self
    }

    /// Uses `token` as the bearer token. Replaces
    /// [`bearer_token_env`](Self::bearer_token_env).
    ///
    /// Default: no token.
    pub fn bearer_token(mut self, token: SecretString) -> Self {
        self.token = TokenSource::Value(token);
        self
    }

    /// Replaces the egress grants.
    ///
    /// Default: exactly `net:get|post|delete:<origin of the URL>` (what the CLI
    /// uses), so the transport may reach its own endpoint and nothing else.
    pub fn egress_grants(mut self, grants: EgressGrants) -> Self {
        self.grants = Some(grants);
        self
    }

    /// Honours the proxy environment variables (`HTTPS_PROXY`, `HTTP_PROXY`,
    /// `ALL_PROXY`, `NO_PROXY`, upper or lower case), read once in
    /// [`build`](Self::build). `https` endpoints go through a `CONNECT` tunnel, `http`
    /// endpoints are sent to the proxy in absolute form. Only `http://` proxy URLs
    /// are supported. The egress policy still checks the real destination. A bearer
    /// token with an `http://` endpoint that the proxy would intercept is refused at
    /// `build()`: the proxy would see the token. With [`oauth`](Self::oauth), the
    /// chain's `https` requests to other origins go through the proxy as well,
    /// each tunnel naming an address resolved here and allowed by the chain's
    /// address policy (see
    /// [`oauth_proxy_resolves_names`](Self::oauth_proxy_resolves_names));
    /// its plain `http` requests (loopback only) are made directly.
    ///
    /// Default: `false` (the environment's proxies are ignored).
    pub fn use_env_proxy(mut self, enabled: bool) -> Self {
        self.proxy = if enabled {
            ProxySource::Env
        } else {
            ProxySource::None
        };
        self
    }

    /// Sends every request through the `http://` proxy at `url` (userinfo, if any,
    /// becomes `Proxy-Authorization: Basic`). Replaces
    /// [`use_env_proxy`](Self::use_env_proxy); `NO_PROXY` is not consulted. The
    /// egress policy still checks the real destination. The OAuth chain's
    /// requests go through it as described for
    /// [`use_env_proxy`](Self::use_env_proxy).
    ///
    /// Default: no proxy.
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = ProxySource::Explicit(url.into());
        self
    }

    /// With OAuth and a proxy: lets the proxy resolve the host names of the
    /// OAuth chain's `https` requests outside the endpoint's origin (metadata,
    /// registration, authorization, tokens), for networks where this machine
    /// cannot resolve names and only the proxy can.
    ///
    /// By default the chain resolves such a name itself, keeps only the
    /// addresses its address policy allows, and opens the proxy's `CONNECT`
    /// tunnel to one of them, so a discovered URL cannot lead the proxy into a
    /// network the policy refuses (a name it cannot resolve is a
    /// `connection_closed` error naming this setting; the proxy is not asked).
    /// With this set, the tunnel names the host
    /// instead, and the proxy decides where it leads: the policy's checks of
    /// resolved addresses no longer apply to these requests (the proxy's own
    /// egress rules must keep it from internal addresses such as the cloud
    /// metadata service), while its checks of the URL itself still do (`https`
    /// only, cloud metadata host names and IP literals of refused classes
    /// refused), as do the egress grants. Destinations the proxy does not take
    /// (`NO_PROXY`) and plain `http` (loopback only) are unaffected.
    ///
    /// Default: `false`. Without OAuth or without a proxy it changes nothing.
    pub fn oauth_proxy_resolves_names(mut self, trusted: bool) -> Self {
        self.oauth_proxy_resolves_names = trusted;
        self
    }

    /// Trusts `der` (a DER-encoded X.509 certificate) as an additional root.
    ///
    /// Default: the system's roots only (or the bundled webpki roots when the
    /// system store yields none).
    pub fn add_root_certificate(mut self, der: impl Into<Vec<u8>>) -> Self {
        self.tls.roots.push(CertificateDer::from(der.into()));
        self
    }

    /// When `true`, only the roots added with
    /// [`add_root_certificate`](Self::add_root_certificate) are trusted (neither the
    /// system's nor the bundled ones); building an `https` transport then requires
    /// at least one.
    ///
    /// Default: `false`.
    pub fn tls_roots_only(mut self, only: bool) -> Self {
        self.tls.roots_only = only;
        self
    }

    /// Presents a client certificate: `cert_chain` (DER, leaf first) and its
    /// private key (`key`: DER-encoded PKCS#8, PKCS#1 or SEC1).
    ///
    /// Default: no client certificate.
    pub fn client_identity(
        mut self,
        cert_chain: impl IntoIterator<Item = Vec<u8>>,
        key: PrivateKeyDer<'static>,
    ) -> Self {
        let chain = cert_chain.into_iter().map(CertificateDer::from).collect();
        self.tls.identity = Some((chain, key));
        self
    }

    /// Follows up to `max` redirects that stay on the same origin (scheme, host,
    /// port): `307`/`308` for every method, `301`/`302`/`303` for `GET` only. A
    /// redirect to another origin is never followed, so the token never reaches it;
    /// the request then fails with `http_status`. Followed by tower-http's
    /// `FollowRedirect` below your own layers: each hop passes the egress policy
    /// and the token layer again, your layers see the request once.
    ///
    /// Default: `0` (no redirect is followed).
    pub fn follow_same_origin_redirects(mut self, max: usize) -> Self {
        self.redirects = max;
        self
    }

    /// Adds your own tower layer on top of the stack (above the egress policy).
    /// The first layer added is the outermost. Its errors are boxed.
    ///
    /// Default: no extra layer.
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<HttpService> + Send + Sync + 'static,
        L::Service: Service<HttpRequest, Response = HttpResponse> + Clone + Send + 'static,
        <L::Service as Service<HttpRequest>>::Error: Into<BoxError>,
        <L::Service as Service<HttpRequest>>::Future: Send + 'static,
    {
        self.layers.push(Arc::new(move |inner: HttpService| {
            BoxCloneService::new(layer.layer(inner).map_err(Into::into))
        }));
        self
    }

    /// Validates the configuration, reads the token, builds the TLS configuration
    /// and the HTTP client.
    ///
    /// Fails with `invalid_config` when the URL is not an absolute `http`/`https`
    /// URL without userinfo, when the token variable is unset, empty or not UTF-8, when a
    /// certificate or key is invalid, or when the proxy URL is unusable.
    pub fn build(self) -> Result<HttpTransport> {
        let server = self.server;
        let endpoint = parse_endpoint(&server, &self.url)?;
        if self.oauth.is_some() && !matches!(self.token, TokenSource::None) {
            return Err(Error::config(format!(
                "server \"{server}\": a bearer token and OAuth are exclusive; configure one"
            )));
        }
        if let Some(oauth) = &self.oauth {
            oauth.validate(&server)?;
        }
        let token = match self.token {
            TokenSource::None => None,
            TokenSource::Value(token) => Some(token),
            TokenSource::Env(var) => match std::env::var(&var) {
                Ok(value) if !value.is_empty() => Some(SecretString::from(value)),
                _ => {
                    return Err(Error::config(format!(
                        "server \"{server}\": environment variable {var} (bearerTokenEnv) is unset, empty or not UTF-8"
                    )));
                }
            },
        };
        let bearer = token
            .map(|t| {
                BearerAuthLayer::new(&t)
                    .and_then(|l| l.restrict_to_origin(&endpoint))
                    .map_err(|e| Error::config(format!("server \"{server}\": {e}")))
            })
            .transpose()?;
        let grants = match self.grants {
            Some(grants) => grants,
            None => EgressGrants::for_endpoint(&endpoint)
                .map_err(|e| Error::config(format!("server \"{server}\": {e}")))?,
        };
        if let Some(shared) = &self.shared {
            shared.check(&server, &self.proxy, &self.tls, self.oauth.is_some())?;
        }
        let proxies = match (&self.shared, self.proxy) {
            (Some(_), _) | (None, ProxySource::None) => None,
            (None, ProxySource::Env) => Some(Matcher::from_env()),
            (None, ProxySource::Explicit(url)) => Some(parse_proxy(&server, &url)?),
        };
        let intercepting = match &self.shared {
            Some(shared) => shared.proxies(),
            None => proxies.as_ref(),
        };
        if let Some(proxy) = intercepting.and_then(|m| m.intercept(&endpoint)) {
            if proxy.uri().scheme_str() != Some("http") {
                return Err(Error::config(format!(
                    "server \"{server}\": only http:// proxies are supported"
                )));
            }
            // A plain-http endpoint goes through the proxy in absolute form, headers
            // and all: the bearer token (static or OAuth's) would reach the proxy, a
            // host it was not configured for. (https endpoints are tunnelled with
            // CONNECT, and the proxy never sees the token.)
            if endpoint.scheme_str() == Some("http") {
                let what = if bearer.is_some() {
                    Some("a bearer token")
                } else if self.oauth.is_some() {
                    Some("OAuth tokens")
                } else {
                    None
                };
                if let Some(what) = what {
                    return Err(Error::config(format!(
                        "server \"{server}\": refusing to send {what} to an http:// endpoint through a proxy"
                    )));
                }
            }
        }
        let needs_roots = endpoint.scheme_str() == Some("https") || self.oauth.is_some();
        if let Some(shared) = &self.shared {
            // Checked above: no OAuth, so no chain and no address guard.
            return Ok(HttpTransport {
                inner: Arc::new(Prepared {
                    server,
                    endpoint,
                    client: shared.client(needs_roots)?,
                    bearer,
                    oauth: None,
                    chain: None,
                    egress: EgressPolicyLayer::new(grants),
                    layers: self.layers,
                    redirects: self.redirects,
                }),
            });
        }
        let tls = client::tls_config(&server, self.tls, needs_roots)?;
        let oauth = match self.oauth {
            Some(config) => {
                let url = url::Url::parse(&endpoint.to_string()).map_err(|_| {
                    Error::config(format!(
                        "server \"{server}\": the URL cannot be used for OAuth"
                    ))
                })?;
                Some((config, url))
            }
            None => None,
        };
        // With OAuth, the chain's address policy holds every connection the
        // client makes outside the endpoint's origin.
        let guard = oauth.as_ref().map(|(_, url)| {
            Arc::new(
                PolicyGuard::for_server(url.clone())
                    .with_proxy_resolving_names(self.oauth_proxy_resolves_names),
            )
        });
        let client = HttpClient::new(
            tls,
            proxies,
            guard
                .clone()
                .map(|g| (endpoint.clone(), g as Arc<dyn AddressGuard>)),
        );
        let chain = match (oauth, guard) {
            (Some((config, url)), Some(guard)) => Some(Arc::new(Chain::new(
                server.clone(),
                url,
                config,
                client.clone(),
                guard,
            ))),
            _ => None,
        };
        let oauth = chain.clone().map(|chain| OAuthLayer::new(chain, &endpoint));
        Ok(HttpTransport {
            inner: Arc::new(Prepared {
                server,
                endpoint,
                client,
                bearer,
                oauth,
                chain,
                egress: EgressPolicyLayer::new(grants),
                layers: self.layers,
                redirects: self.redirects,
            }),
        })
    }
}

impl fmt::Debug for HttpTransportBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpTransportBuilder")
            .field("server", &self.server)
            .field("url", &crate::http::url_for_debug(&self.url))
            .field(
                "token",
                &match &self.token {
                    TokenSource::None => "none".to_owned(),
                    TokenSource::Env(var) => format!("from ${var}"),
                    TokenSource::Value(_) => "[REDACTED]".to_owned(),
                },
            )
            .field("egress_grants", &self.grants)
            .field("proxy", &self.proxy.describe())
            .field("extra_roots", &self.tls.roots.len())
            .field("tls_roots_only", &self.tls.roots_only)
            .field("client_identity", &self.tls.identity.is_some())
            .field("follow_same_origin_redirects", &self.redirects)
            .field("layers", &self.layers.len())
            .field("oauth", &self.oauth)
            .field("shared_http_client", &self.shared.is_some())
            .field(
                "oauth_proxy_resolves_names",
                &self.oauth_proxy_resolves_names,
            )
            .finish()
    }
}

/// A Streamable HTTP [`Transport`](crate::Transport). Cheap to clone: clones share
/// the HTTP client (and its connection pool); each session connected with it is a
/// fresh MCP session.
#[derive(Clone)]
pub struct HttpTransport {
    inner: Arc<Prepared>,
}

struct Prepared {
    server: Arc<str>,
    endpoint: http::Uri,
    /// The one client: every session's stack and the OAuth chain share it
    /// (clones share its connection pool).
    client: HttpClient,
    bearer: Option<BearerAuthLayer>,
    oauth: Option<OAuthLayer>,
    /// The OAuth chain behind `oauth` (for [`HttpTransport::logout`]).
    chain: Option<Arc<Chain>>,
    egress: EgressPolicyLayer,
    layers: Vec<LayerFn>,
    redirects: usize,
}

impl HttpTransport {
    /// Starts a builder for the server named `server` (used in messages) at `url`
    /// (the MCP endpoint). See [`HttpTransportBuilder`] for the options and their
    /// defaults.
    ///
    /// ```
    /// use smthrs_mcp::{ErrorKind, HttpTransport};
    ///
    /// // A URL with userinfo is refused at build, before anything is connected.
    /// let refused = HttpTransport::builder("tracker", "https://me:pw@mcp.tracker.example/mcp")
    ///     .build()
    ///     .unwrap_err();
    /// assert_eq!(refused.kind(), ErrorKind::InvalidConfig);
    /// assert!(!refused.to_string().contains("pw@"));
    /// ```
    pub fn builder(server: impl Into<Arc<str>>, url: impl Into<String>) -> HttpTransportBuilder {
        HttpTransportBuilder {
            server: server.into(),
            url: url.into(),
            token: TokenSource::None,
            grants: None,
            proxy: ProxySource::None,
            tls: client::TlsOptions::default(),
            redirects: 0,
            layers: Vec::new(),
            oauth: None,
            shared: None,
            oauth_proxy_resolves_names: false,
        }
    }

    /// The configured server name.
    pub fn server(&self) -> &str {
        &self.inner.server
    }

    /// The egress grants in force.
    pub fn egress_grants(&self) -> &EgressGrants {
        self.inner.egress.grants()
    }

    /// Logs out of an OAuth server: revokes the stored tokens at the revocation
    /// endpoint the authorization server named when it issued them (RFC 7009;
    /// no discovery runs), then forgets them whatever the answer, keeping the
    /// client registrations for the next login. Sessions on this transport drop
    /// their token at once. The requests go through the chain's egress grants and
    /// address policy, like every other request it makes
    /// ([`auth::revocation`](crate::auth::revocation)).
    ///
    /// The outcome says whether the tokens were revoked; a failed revocation is
    /// [`Logout::NotRevoked`](crate::auth::Logout::NotRevoked), not an error.
    /// Fails with `invalid_config` when the transport has no OAuth
    /// configuration, and when the token store fails.
    pub async fn logout(&self) -> Result<crate::auth::Logout> {
        match &self.inner.chain {
            Some(chain) => chain.logout().await,
            None => Err(Error::config(format!(
                "server \"{}\" has no OAuth configuration; there is nothing to log out of",
                self.inner.server
            ))),
        }
    }

    /// The endpoint's origin: scheme, lower-cased host, effective port.
    pub(crate) fn origin(&self) -> Option<(&'static str, String, u16)> {
        crate::http::origin_of(&self.inner.endpoint)
    }

    fn stack(
        &self,
        session: Arc<session_id::SessionState>,
        diagnostics: &Diagnostics,
    ) -> HttpService {
        let prepared = &self.inner;
        // One concrete stack under one box (`Either` for the optional layers):
        // each box is an allocation and a dynamic call per request and per clone.
        let service = session_id::McpSessionLayer::new(session).layer(prepared.client.clone());
        let service = match &prepared.bearer {
            Some(bearer) => Either::Left(bearer.layer(service)),
            None => Either::Right(service),
        };
        let service = match &prepared.oauth {
            Some(oauth) => Either::Left(oauth.with_diagnostics(diagnostics.clone()).layer(service)),
            None => Either::Right(service),
        };
        let service = prepared.egress.layer(service);
        let service = match prepared.redirects {
            0 => Either::Right(service),
            max => Either::Left(FollowRedirect::with_policy(
                service,
                redirect::same_origin_policy(max),
            )),
        };
        let mut service = BoxCloneService::new(service);
        for layer in prepared.layers.iter().rev() {
            service = layer(service);
        }
        service
    }
}

impl fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prepared = &self.inner;
        f.debug_struct("HttpTransport")
            .field("server", &prepared.server)
            .field(
                "url",
                &crate::http::url_for_debug(&prepared.endpoint.to_string()),
            )
            .field("token", &prepared.bearer.as_ref().map(|_| "[REDACTED]"))
            .field("oauth", &prepared.oauth.is_some())
            .field("egress_grants", prepared.egress.grants())
            .field("follow_same_origin_redirects", &prepared.redirects)
            .field("layers", &prepared.layers.len())
            .finish()
    }
}

impl HttpTransport {
    /// Opens a fresh MCP session over the HTTP client: nothing is sent until the
    /// first frame. The bounds come from limits the session already validated.
    pub(crate) fn open(&self, ctx: TransportContext) -> BoxFuture<'static, Result<Connection>> {
        let this = self.clone();
        Box::pin(async move {
            let session = Arc::new(session_id::SessionState::default());
            // The OAuth chain reports its steps to this session's observer.
            let service = this.stack(session.clone(), &ctx.diagnostics);
            Ok(driver::open(driver::OpenParams {
                server: ctx.server,
                endpoint: this.inner.endpoint.clone(),
                service,
                session,
                max_frame: ctx.bounds.max_frame_bytes,
                frame_option: ctx.bounds.frame_option,
                bounds: ctx.bounds.http,
                layered: usize::from(this.inner.bearer.is_some() || this.inner.oauth.is_some()),
                redirects: this.inner.redirects,
            }))
        })
    }
}

fn parse_endpoint(server: &str, raw: &str) -> Result<http::Uri> {
    let invalid = || {
        Error::config(format!(
            "server \"{server}\": url must be an absolute http: or https: URL without user or password"
        ))
    };
    let mut url = url::Url::parse(raw).map_err(|_| invalid())?;
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none_or(str::is_empty)
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(invalid());
    }
    url.set_fragment(None);
    url.as_str().parse().map_err(|_| invalid())
}

fn parse_proxy(server: &str, raw: &str) -> Result<Matcher> {
    let invalid = || {
        Error::config(format!(
            "server \"{server}\": the proxy must be an absolute http: URL"
        ))
    };
    let url = url::Url::parse(raw).map_err(|_| invalid())?;
    if url.scheme() != "http" || url.host_str().is_none_or(str::is_empty) {
        return Err(invalid());
    }
    Ok(Matcher::builder().all(raw.to_owned()).build())
}

#[cfg(test)]
mod contract_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_validated_without_echoing_them() {
        for bad in [
            "",
            "not a url",
            "ftp://h/mcp",
            "/relative",
            "https://user:secret-pw@h/mcp",
            "https://user@h/mcp",
            "file:///etc/passwd",
        ] {
            let err = HttpTransport::builder("srv", bad).build().unwrap_err();
            assert_eq!(err.kind(), crate::error::ErrorKind::InvalidConfig, "{bad}");
            assert!(err.message().contains("\"srv\""));
            assert!(!err.message().contains("secret-pw"));
        }
    }

    #[test]
    fn debug_hides_token_userinfo_and_query() {
        let builder = HttpTransport::builder("srv", "http://u:pw@h:8080/mcp?key=sekrit#frag")
            .bearer_token(SecretString::from("tok-value"))
            .proxy("http://puser:ppass@proxy:3128");
        let text = format!("{builder:?}");
        for secret in ["tok-value", "pw", "sekrit", "frag", "ppass", "puser"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("http://h:8080/mcp"), "{text}");
        let transport = HttpTransport::builder("srv", "http://h:8080/mcp?key=sekrit")
            .bearer_token(SecretString::from("tok-value"))
            .build()
            .unwrap();
        let text = format!("{transport:?}");
        assert!(
            !text.contains("tok-value") && !text.contains("sekrit"),
            "{text}"
        );
        assert!(text.contains("net:get|post|delete:http://h:8080"), "{text}");
    }

    #[test]
    fn bad_proxy_urls_are_config_errors() {
        for bad in ["https://proxy:3128", "socks5://p:1", "nope"] {
            let err = HttpTransport::builder("srv", "http://h/mcp")
                .proxy(bad)
                .build()
                .unwrap_err();
            assert_eq!(err.kind(), crate::error::ErrorKind::InvalidConfig, "{bad}");
        }
    }
}
