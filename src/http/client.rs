//! The one HTTP client of a transport: hyper-util's pooled
//! `client::legacy::Client` over hyper-rustls, built once per
//! [`HttpTransport`](crate::transport::http::HttpTransport) and shared by its MCP
//! requests and its OAuth chain (cheap to clone: the clones share one pool), or
//! built once for many transports by a
//! [`SharedHttpClient`](crate::transport::http::SharedHttpClient) (never with
//! an OAuth chain's address guard).
//!
//! - TLS: rustls with the `ring` provider chosen explicitly; ALPN offers `h2` and
//!   `http/1.1`, so HTTP/2 is used where the server offers it.
//! - Roots: the system's (rustls-native-certs) unless [`TlsOptions::roots_only`];
//!   when no system root loads at all, the bundled webpki roots are used instead.
//!   Custom roots are added on top. For an `http://` endpoint without OAuth no root
//!   is loaded (TLS is never used: redirects stay on the origin, and proxies are
//!   plain HTTP).
//! - The pool: hyper-util's. An HTTP/1.1 connection is reused once its response
//!   body was read to the end; one whose exchange was abandoned is closed; a
//!   request that found its reused connection closed before it was written is
//!   sent again on another (never one that may have reached the server). At most
//!   [`MAX_IDLE_PER_ORIGIN`] idle connections per origin, each kept
//!   [`POOL_IDLE_TIMEOUT`]. Each connection is driven by a task of its own on the
//!   runtime that opened it.
//! - Proxies: only when a [`Matcher`] is given (the builder's `use_env_proxy` or
//!   `proxy`). `https` destinations go through a `CONNECT` tunnel; `http`
//!   destinations are sent to the proxy in absolute form, with
//!   `Proxy-Authorization` from the proxy URL's userinfo when present. Proxies
//!   with an `https://` URL are not supported. Whether a destination is proxied
//!   is the matcher's answer for its URL (so `NO_PROXY` is matched against the
//!   URL's host, as curl does), for every origin alike.
//! - The address guard ([`AddressGuard`], the OAuth chain's address policy): a
//!   connection to any origin but the endpoint's goes only to addresses the
//!   guard keeps of those the name resolves to here, so a discovered URL whose
//!   name resolves inside the network is refused before anything is connected,
//!   the proxy included. Such an `https` destination that the matcher proxies
//!   goes through a `CONNECT` tunnel whose target is the kept address
//!   (`CONNECT 203.0.113.7:443`, each kept address in turn until one tunnel
//!   opens), never the name: a proxy given the name would resolve it itself,
//!   and could be led anywhere (DNS rebinding). TLS still verifies the name
//!   (hyper-rustls takes the server name from the request's URI, not from the
//!   tunnel), and the proxy's credentials go in the `CONNECT` as for the
//!   endpoint's requests. An `http` destination outside the endpoint's origin
//!   (which the policy allows on loopback only) is always connected directly: a
//!   proxy elsewhere cannot reach this machine's loopback, and a plain-HTTP
//!   proxy would read the request (a token request's code or secret). The
//!   endpoint's own origin is reached as the transport reaches it: its address
//!   is the one configured, and the proxy may resolve its name.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::Uri;
use http::header::PROXY_AUTHORIZATION;
use http_body_util::{BodyExt, Full};
use hyper::rt;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::legacy::{Client, ResponseFuture};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tower::{Service, ServiceExt};

use super::body::KnownEnd;
use super::{BoxError, HttpRequest, HttpResponse, same_origin};
use crate::error::{Error, Result};

/// How long one TCP connect may take (per address tried).
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an idle pooled connection is kept.
pub(crate) const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// Idle HTTP/1.1 connections kept per origin: the most POSTs a transport has in
/// flight at once (`queueCapacity` is capped there), so a burst's connections
/// are all reused.
pub(crate) const MAX_IDLE_PER_ORIGIN: usize = 4096;

/// TLS settings collected by the builder.
#[derive(Default)]
pub(crate) struct TlsOptions {
    pub(crate) roots: Vec<CertificateDer<'static>>,
    pub(crate) roots_only: bool,
    pub(crate) identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
}

/// Builds the rustls client configuration. `needs_roots` is false for `http://`
/// endpoints without OAuth, which never use TLS, so the system store is not read
/// for them.
pub(crate) fn tls_config(
    server: &str,
    options: TlsOptions,
    needs_roots: bool,
) -> Result<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|_| Error::config(format!("server \"{server}\": TLS setup failed")))?;
    let mut roots = RootCertStore::empty();
    for der in options.roots {
        roots.add(der).map_err(|_| {
            Error::config(format!(
                "server \"{server}\": a custom root certificate is not a valid X.509 certificate"
            ))
        })?;
    }
    if needs_roots && !options.roots_only {
        let native = rustls_native_certs::load_native_certs();
        let (added, _unparsable) = roots.add_parsable_certificates(native.certs);
        if added == 0 {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
    }
    if needs_roots && roots.is_empty() {
        return Err(Error::config(format!(
            "server \"{server}\": tls_roots_only is set but no root certificate was added"
        )));
    }
    let builder = builder.with_root_certificates(roots);
    let config = match options.identity {
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).map_err(|_| {
            Error::config(format!(
                "server \"{server}\": the client certificate or its key is invalid"
            ))
        })?,
        None => builder.with_no_client_auth(),
    };
    Ok(config)
}

/// Which resolved addresses a connection outside the endpoint's origin may use
/// (the OAuth chain's address policy implements it).
pub(crate) trait AddressGuard: Send + Sync + 'static {
    /// The addresses of `addrs` that may be connected to, in their order; an
    /// error (`egress_denied`) when none may.
    fn keep(&self, addrs: Vec<SocketAddr>) -> BoxFuture<'_, Result<Vec<SocketAddr>>>;

    /// True when a guarded `https` destination named by a host name, that the
    /// proxy takes, is tunnelled by that name (`CONNECT as.example:443`): the
    /// proxy resolves it, and [`keep`](Self::keep) never sees its addresses.
    /// For networks where only the proxy resolves names; an explicit opt-in.
    /// Default: false (resolved here, tunnelled to a kept address).
    fn proxy_resolves_names(&self) -> bool {
        false
    }
}

/// The system's resolver, minus every address the guard refuses.
#[derive(Clone)]
struct GuardedResolver {
    inner: GaiResolver,
    guard: Arc<dyn AddressGuard>,
}

impl Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = BoxFuture<'static, std::result::Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let guard = self.guard.clone();
        let resolving = self.inner.call(name);
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = resolving.await?.collect();
            let kept = guard.keep(addrs).await?;
            Ok(kept.into_iter())
        })
    }
}

/// Connections outside the endpoint's origin, when an [`AddressGuard`] applies.
#[derive(Clone)]
struct Guarded {
    endpoint: Uri,
    /// Resolves a name here and keeps what the guard allows: for tunnels, whose
    /// `CONNECT` names the kept address, never the name.
    resolver: GuardedResolver,
    http: HttpConnector<GuardedResolver>,
}

/// A guarded destination's name that this machine cannot resolve, on the way to
/// the proxy: the proxy is not asked, and the message names the opt-in.
const UNRESOLVED: &str = "the host name of an authorization URL could not be resolved here, \
     and the proxy is not asked to resolve it (oauth_proxy_resolves_names lets it, \
     where only the proxy resolves names)";

/// The addresses of `host` (an IP literal, bracketed or not, or a name resolved
/// here) that the guard keeps, each with `port`.
async fn kept_addresses(
    resolver: GuardedResolver,
    host: &str,
    port: u16,
) -> std::result::Result<Vec<SocketAddr>, BoxError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let kept: Vec<SocketAddr> = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => resolver.guard.keep(vec![SocketAddr::new(ip, port)]).await?,
        Err(_) => {
            let name: Name = bare
                .parse()
                .map_err(|_| io::Error::other("the destination's host is not a name"))?;
            let addrs = resolver
                .inner
                .oneshot(name)
                .await
                .map_err(|_| Error::closed(UNRESOLVED))?;
            resolver.guard.keep(addrs.collect()).await?
        }
    };
    Ok(kept
        .into_iter()
        .map(|a| SocketAddr::new(a.ip(), port))
        .collect())
}

/// A `CONNECT` tunnel through `proxy` to a guarded `https` destination: the name
/// is resolved here, the guard keeps the allowed addresses, and each is tried in
/// turn as the tunnel's target (`CONNECT 203.0.113.7:443`), so the proxy never
/// resolves the name itself. TLS, above this connector, still verifies the
/// destination's name (hyper-rustls takes it from the original URI).
async fn guarded_tunnel(
    resolver: GuardedResolver,
    http: HttpConnector,
    proxy: Uri,
    auth: Option<http::HeaderValue>,
    dst: Uri,
) -> std::result::Result<TokioIo<TcpStream>, BoxError> {
    let host = dst
        .host()
        .ok_or_else(|| io::Error::other("the destination has no host"))?;
    let port = dst.port_u16().unwrap_or(443);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let targets: Vec<String> =
        if resolver.guard.proxy_resolves_names() && bare.parse::<std::net::IpAddr>().is_err() {
            // The opt-in: the proxy resolves the name (the URL's string checks
            // were made above this client).
            vec![format!("{host}:{port}")]
        } else {
            kept_addresses(resolver, host, port)
                .await?
                .iter()
                .map(SocketAddr::to_string)
                .collect()
        };
    let mut last: Option<BoxError> = None;
    for authority in targets {
        let target = Uri::builder()
            .scheme("https")
            .authority(authority)
            .path_and_query("/")
            .build()?;
        let mut tunnel = Tunnel::new(proxy.clone(), http.clone());
        if let Some(auth) = &auth {
            tunnel = tunnel.with_auth(auth.clone());
        }
        match tunnel.call(target).await {
            Ok(io) => return Ok(io),
            Err(e) => last = Some(e.into()),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no address to tunnel to").into()))
}

/// The TCP connector: through a proxy when the matcher says so, directly
/// otherwise; guarded outside the endpoint's origin when a guard is set.
#[derive(Clone)]
pub(crate) struct Connector {
    http: HttpConnector,
    proxies: Option<Arc<Matcher>>,
    guarded: Option<Guarded>,
}

fn tcp_settings<R>(http: &mut HttpConnector<R>) {
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(CONNECT_TIMEOUT));
}

impl Connector {
    fn new(proxies: Option<Arc<Matcher>>, guard: Option<(Uri, Arc<dyn AddressGuard>)>) -> Self {
        let mut http = HttpConnector::new();
        tcp_settings(&mut http);
        let guarded = guard.map(|(endpoint, guard)| {
            let resolver = GuardedResolver {
                inner: GaiResolver::new(),
                guard,
            };
            let mut http = HttpConnector::new_with_resolver(resolver.clone());
            tcp_settings(&mut http);
            Guarded {
                endpoint,
                resolver,
                http,
            }
        });
        Connector {
            http,
            proxies,
            guarded,
        }
    }
}

impl Service<Uri> for Connector {
    type Response = ProxyStream;
    type Error = BoxError;
    type Future = BoxFuture<'static, std::result::Result<ProxyStream, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let direct = |io| ProxyStream {
            io,
            absolute_form: false,
        };
        let intercept = self.proxies.as_ref().and_then(|m| m.intercept(&dst));
        if let Some(guarded) = &self.guarded
            && !same_origin(&dst, &guarded.endpoint)
        {
            // Outside the endpoint's origin: `https` through the proxy (when it
            // intercepts) tunnels to an address checked here; anything else (plain
            // `http`, which the policy allows on loopback only: a proxy elsewhere
            // cannot reach this machine's loopback, and would read the request)
            // connects directly to the addresses the guard keeps.
            let intercept = intercept.filter(|_| dst.scheme_str() == Some("https"));
            let Some(intercept) = intercept else {
                let mut http = guarded.http.clone();
                return Box::pin(async move { Ok(direct(http.call(dst).await?)) });
            };
            let resolver = guarded.resolver.clone();
            let http = self.http.clone();
            return Box::pin(async move {
                let proxy = intercept.uri().clone();
                if proxy.scheme_str() != Some("http") {
                    return Err(io::Error::other("only http:// proxies are supported").into());
                }
                let auth = intercept.basic_auth().cloned();
                Ok(direct(
                    guarded_tunnel(resolver, http, proxy, auth, dst).await?,
                ))
            });
        }
        let mut http = self.http.clone();
        Box::pin(async move {
            let Some(intercept) = intercept else {
                return Ok(direct(http.call(dst).await?));
            };
            let proxy = intercept.uri().clone();
            if proxy.scheme_str() != Some("http") {
                return Err(io::Error::other("only http:// proxies are supported").into());
            }
            if dst.scheme_str() == Some("https") {
                let mut tunnel = Tunnel::new(proxy, http);
                if let Some(auth) = intercept.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                Ok(direct(tunnel.call(dst).await?))
            } else {
                let io = http.call(proxy).await?;
                Ok(ProxyStream {
                    io,
                    absolute_form: true,
                })
            }
        })
    }
}

/// A TCP stream, possibly to a proxy; `absolute_form` tells hyper-util to send
/// requests in absolute form (plain-HTTP proxying).
pub(crate) struct ProxyStream {
    io: TokioIo<TcpStream>,
    absolute_form: bool,
}

impl Connection for ProxyStream {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.absolute_form)
    }
}

impl rt::Read for ProxyStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl rt::Write for ProxyStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

type Pooled = Client<HttpsConnector<Connector>, Full<Bytes>>;

/// The shared client as a `tower::Service`: the bottom of every stack of the
/// transport (its MCP requests and its OAuth chain's). Cheap to clone: clones
/// share the pool, the connector and the TLS configuration.
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: Arc<Pooled>,
    proxies: Option<Arc<Matcher>>,
    /// The endpoint, when a guard is set: `http` requests outside its origin
    /// connect directly ([`Connector`]), so they carry no proxy credentials
    /// (`https` ones carry them in the tunnel's `CONNECT` only).
    guarded_endpoint: Option<Uri>,
}

impl HttpClient {
    /// Builds the client: `tls` for every `https` connection, `proxies` when the
    /// builder asked for them, `guard` (the endpoint, and the guard applied to
    /// connections outside its origin) when an OAuth chain shares the client.
    pub(crate) fn new(
        tls: ClientConfig,
        proxies: Option<Matcher>,
        guard: Option<(Uri, Arc<dyn AddressGuard>)>,
    ) -> Self {
        Self::build(tls, proxies.map(Arc::new), guard)
    }

    /// A client many transports share (`SharedHttpClient`): no address guard
    /// (an OAuth transport never shares one), `proxies` shared with the
    /// handle that checks the transports' settings.
    pub(crate) fn shared(tls: ClientConfig, proxies: Option<Arc<Matcher>>) -> Self {
        Self::build(tls, proxies, None)
    }

    fn build(
        tls: ClientConfig,
        proxies: Option<Arc<Matcher>>,
        guard: Option<(Uri, Arc<dyn AddressGuard>)>,
    ) -> Self {
        let guarded_endpoint = guard.as_ref().map(|(endpoint, _)| endpoint.clone());
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(Connector::new(proxies.clone(), guard));
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE_TIMEOUT)
            .pool_max_idle_per_host(MAX_IDLE_PER_ORIGIN)
            .build(connector);
        HttpClient {
            client: Arc::new(client),
            proxies,
            guarded_endpoint,
        }
    }
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("proxies", &self.proxies.is_some())
            .finish()
    }
}

impl Service<HttpRequest> for HttpClient {
    type Response = HttpResponse;
    type Error = BoxError;
    type Future = ClientFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: HttpRequest) -> Self::Future {
        // Plain-HTTP proxying sends the request itself to the proxy: it carries the
        // proxy's credentials (a CONNECT tunnel carries them in the CONNECT instead).
        // A guarded `http` request (outside the endpoint's origin) never goes
        // through the proxy, so it never carries them.
        let guarded = self
            .guarded_endpoint
            .as_ref()
            .is_some_and(|endpoint| !same_origin(req.uri(), endpoint));
        if req.uri().scheme_str() == Some("http")
            && !guarded
            && let Some(mut auth) = self
                .proxies
                .as_ref()
                .and_then(|m| m.intercept(req.uri()))
                .and_then(|i| i.basic_auth().cloned())
        {
            auth.set_sensitive(true);
            req.headers_mut().insert(PROXY_AUTHORIZATION, auth);
        }
        ClientFuture(self.client.request(req))
    }
}

/// The response future of [`HttpClient`]: hyper-util's, its body ending at its
/// known end ([`KnownEnd`]) and boxed.
pub(crate) struct ClientFuture(ResponseFuture);

impl Future for ClientFuture {
    type Output = std::result::Result<HttpResponse, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let response = std::task::ready!(Pin::new(&mut self.0).poll(cx))?;
        Poll::Ready(Ok(
            response.map(|body| KnownEnd::new(body).map_err(Into::into).boxed_unsync())
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::http::body::collect_limited;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tower::ServiceExt;

    /// A client without roots, proxies or guard (plain `http` only).
    pub(crate) fn plain_client() -> HttpClient {
        let tls = tls_config("t", TlsOptions::default(), false).unwrap();
        HttpClient::new(tls, None, None)
    }

    fn get(url: &str) -> HttpRequest {
        http::Request::get(url)
            .body(Full::new(Bytes::new()))
            .unwrap()
    }

    /// A loopback HTTP/1.1 server counting the connections it accepted and
    /// those that ended; `/big` answers with a 1 MiB body.
    struct Counting {
        addr: SocketAddr,
        accepted: Arc<AtomicUsize>,
        ended: Arc<AtomicUsize>,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for Counting {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    impl Counting {
        async fn start() -> Counting {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let accepted = Arc::new(AtomicUsize::new(0));
            let ended = Arc::new(AtomicUsize::new(0));
            let (a, e) = (accepted.clone(), ended.clone());
            let task = tokio::spawn(async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    a.fetch_add(1, Ordering::SeqCst);
                    let e = e.clone();
                    tokio::spawn(async move {
                        let svc = hyper::service::service_fn(
                            |req: http::Request<hyper::body::Incoming>| async move {
                                let body = if req.uri().path() == "/big" {
                                    Bytes::from(vec![b'x'; 1 << 20])
                                } else {
                                    Bytes::from_static(b"{}")
                                };
                                Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                                    body,
                                )))
                            },
                        );
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tcp), svc)
                            .await;
                        e.fetch_add(1, Ordering::SeqCst);
                    });
                }
            });
            Counting {
                addr,
                accepted,
                ended,
                task,
            }
        }

        fn url(&self, path: &str) -> String {
            format!("http://{}{path}", self.addr)
        }

        fn accepted(&self) -> usize {
            self.accepted.load(Ordering::SeqCst)
        }

        /// Waits (up to 5 s) until `n` connections ended; returns how many did.
        async fn wait_ended(&self, n: usize) -> usize {
            for _ in 0..500 {
                if self.ended.load(Ordering::SeqCst) >= n {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            self.ended.load(Ordering::SeqCst)
        }
    }

    async fn call(client: &HttpClient, url: &str) -> Bytes {
        let response = client.clone().oneshot(get(url)).await.unwrap();
        collect_limited(response.into_body(), 1 << 21)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn sequential_requests_share_one_connection() {
        let server = Counting::start().await;
        let client = plain_client();
        for _ in 0..5 {
            assert_eq!(&call(&client, &server.url("/")).await[..], b"{}");
        }
        assert_eq!(server.accepted(), 1);
    }

    #[tokio::test]
    async fn concurrent_requests_each_get_a_connection_then_reuse_them() {
        let server = Counting::start().await;
        let client = plain_client();
        let url = server.url("/");
        for _ in 0..3 {
            let calls = (0..8).map(|_| call(&client, &url));
            futures_util::future::join_all(calls).await;
        }
        let accepted = server.accepted();
        assert!(
            (1..=8).contains(&accepted),
            "24 requests, 8 at a time, took {accepted} connections"
        );
    }

    #[tokio::test]
    async fn an_abandoned_body_closes_its_connection() {
        let server = Counting::start().await;
        let client = plain_client();
        let response = client
            .clone()
            .oneshot(get(&server.url("/big")))
            .await
            .unwrap();
        drop(response);
        assert_eq!(server.wait_ended(1).await, 1, "the connection was closed");
        assert_eq!(&call(&client, &server.url("/")).await[..], b"{}");
        assert_eq!(server.accepted(), 2, "not reused after an abandoned body");
    }

    /// A server that answers one request per connection, then closes it
    /// without saying so (no `Connection: close`).
    async fn closing_server() -> (SocketAddr, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 4096];
                    let _ = tcp.read(&mut buf).await;
                    let _ = tcp
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                        .await;
                    let _ = tcp.shutdown().await;
                });
            }
        });
        (addr, accepted)
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_not_used() {
        let (addr, accepted) = closing_server().await;
        let client = plain_client();
        let url = format!("http://{addr}/");
        assert_eq!(&call(&client, &url).await[..], b"{}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(&call(&client, &url).await[..], b"{}");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    /// A plain-HTTP proxy on loopback that answers every request itself, recording
    /// the request target and the proxy credentials it saw.
    async fn fake_proxy() -> (
        SocketAddr,
        Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>,
        Arc<AtomicUsize>,
    ) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (seen2, accepted2) = (seen.clone(), accepted.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                accepted2.fetch_add(1, Ordering::SeqCst);
                let seen = seen2.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let seen = seen.clone();
                            async move {
                                let auth = req
                                    .headers()
                                    .get(PROXY_AUTHORIZATION)
                                    .map(|v| v.to_str().unwrap().to_owned());
                                seen.lock().unwrap().push((req.uri().to_string(), auth));
                                Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                                    Bytes::from_static(b"{}"),
                                )))
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), svc)
                        .await;
                });
            }
        });
        (addr, seen, accepted)
    }

    #[tokio::test]
    async fn plain_http_goes_to_the_proxy_in_absolute_form_with_credentials() {
        let (proxy, seen, accepted) = fake_proxy().await;
        let matcher = Matcher::builder()
            .http(format!("http://user:pass@{proxy}"))
            .build();
        let tls = tls_config("t", TlsOptions::default(), false).unwrap();
        let client = HttpClient::new(tls, Some(matcher), None);
        // The destination does not exist: only the proxy can answer.
        for _ in 0..2 {
            let req = http::Request::post("http://mcp.invalid:9/mcp?x=1")
                .body(Full::new(Bytes::from_static(b"{}")))
                .unwrap();
            let resp = client.clone().oneshot(req).await.unwrap();
            assert_eq!(resp.status(), 200);
            collect_limited(resp.into_body(), 64).await.unwrap();
        }
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "the proxy connection is reused"
        );
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].0, "http://mcp.invalid:9/mcp?x=1");
        assert_eq!(seen[0].1.as_deref(), Some("Basic dXNlcjpwYXNz"));
    }

    #[tokio::test]
    async fn no_proxy_is_honoured() {
        let (proxy, _seen, accepted) = fake_proxy().await;
        let target = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let target_addr = target.local_addr().unwrap();
        drop(target);
        let matcher = Matcher::builder()
            .http(format!("http://{proxy}"))
            .no("127.0.0.1")
            .build();
        let tls = tls_config("t", TlsOptions::default(), false).unwrap();
        let client = HttpClient::new(tls, Some(matcher), None);
        // Direct connection to a closed port fails; the proxy was not used.
        assert!(
            client
                .oneshot(get(&format!("http://{target_addr}/")))
                .await
                .is_err()
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
    }

    /// Refuses every address.
    struct RefuseAll;

    impl AddressGuard for RefuseAll {
        fn keep(&self, _addrs: Vec<SocketAddr>) -> BoxFuture<'_, Result<Vec<SocketAddr>>> {
            Box::pin(async {
                Err(Error::new(
                    crate::error::ErrorKind::EgressDenied,
                    "refused by the test guard",
                ))
            })
        }
    }

    /// The guard applies to every origin but the endpoint's, before any proxy:
    /// a refused destination, `http` or `https`, never reaches the proxy.
    #[tokio::test]
    async fn the_guard_holds_outside_the_endpoints_origin_before_any_proxy() {
        let server = Counting::start().await;
        let (proxy, _seen, proxied) = fake_proxy().await;
        let tls = tls_config("t", TlsOptions::default(), false).unwrap();
        let endpoint: Uri = server.url("/mcp").parse().unwrap();
        let guard: Arc<dyn AddressGuard> = Arc::new(RefuseAll);
        let matcher = Matcher::builder()
            .all(format!("http://{proxy}"))
            .no("127.0.0.1")
            .build();
        let client = HttpClient::new(tls, Some(matcher), Some((endpoint, guard)));
        // The endpoint's origin: reached as configured (here: NO_PROXY, direct).
        assert_eq!(&call(&client, &server.url("/")).await[..], b"{}");
        // The same server under another name is another origin: guarded, and
        // refused before the proxy (which would take `localhost`, not under
        // NO_PROXY) is asked anything, for `http` and for `https` alike.
        for scheme in ["http", "https"] {
            let other = format!("{scheme}://localhost:{}/", server.addr.port());
            let error = client.clone().oneshot(get(&other)).await.unwrap_err();
            match super::super::stack_failure(&*error, false) {
                super::super::StackFailure::Ours(e) => {
                    assert_eq!(e.kind(), crate::error::ErrorKind::EgressDenied, "{e}");
                }
                _ => panic!("{scheme}: not the guard's refusal: {error}"),
            }
        }
        assert_eq!(proxied.load(Ordering::SeqCst), 0, "the proxy was reached");
        assert_eq!(server.accepted(), 1);
    }

    /// Keeps only one address.
    struct KeepOnly(std::net::IpAddr);

    impl AddressGuard for KeepOnly {
        fn keep(&self, addrs: Vec<SocketAddr>) -> BoxFuture<'_, Result<Vec<SocketAddr>>> {
            Box::pin(async move { Ok(addrs.into_iter().filter(|a| a.ip() == self.0).collect()) })
        }
    }

    /// A `CONNECT` proxy on loopback that records each request line's target and
    /// `Proxy-Authorization`, then refuses the tunnel (`502`) and closes.
    async fn refusing_connect_proxy() -> (
        SocketAddr,
        Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>,
    ) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
                        if tcp.read_exact(&mut byte).await.is_err() {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let mut lines = head.split("\r\n");
                    let target = lines
                        .next()
                        .and_then(|l| l.strip_prefix("CONNECT "))
                        .and_then(|l| l.split(' ').next())
                        .unwrap_or("(not a CONNECT)")
                        .to_owned();
                    let auth = lines
                        .find(|l| l.to_ascii_lowercase().starts_with("proxy-authorization:"))
                        .map(|l| l.split_once(':').unwrap().1.trim().to_owned());
                    log.lock().unwrap().push((target, auth));
                    let _ = tcp.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                });
            }
        });
        (addr, seen)
    }

    /// A guarded `https` destination goes through the proxy, tunnelled to the
    /// address resolved here and kept by the guard, never to the name (which the
    /// proxy would resolve itself); the proxy's credentials go in the `CONNECT`.
    #[tokio::test]
    async fn a_guarded_https_destination_is_tunnelled_to_the_checked_address() {
        let (proxy, seen) = refusing_connect_proxy().await;
        let matcher = Matcher::builder()
            .all(format!("http://user:pass@{proxy}"))
            .build();
        let tls = tls_config("t", TlsOptions::default(), false).unwrap();
        let endpoint: Uri = "https://127.0.0.1:9/mcp".parse().unwrap();
        let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
        let guard: Arc<dyn AddressGuard> = Arc::new(KeepOnly(loopback));
        let client = HttpClient::new(tls, Some(matcher), Some((endpoint, guard)));
        // The proxy refuses the tunnel: the request fails, the CONNECT is recorded.
        let error = client
            .clone()
            .oneshot(get("https://localhost:8443/token"))
            .await;
        assert!(error.is_err());
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [(
                "127.0.0.1:8443".to_owned(),
                Some("Basic dXNlcjpwYXNz".to_owned())
            )],
            "one CONNECT, to the kept address, with the proxy's credentials"
        );
    }

    /// Refuses every address, and lets the proxy resolve names (the opt-in).
    struct TrustsTheProxy;

    impl AddressGuard for TrustsTheProxy {
        fn keep(&self, addrs: Vec<SocketAddr>) -> BoxFuture<'_, Result<Vec<SocketAddr>>> {
            RefuseAll.keep(addrs)
        }

        fn proxy_resolves_names(&self) -> bool {
            true
        }
    }

    /// With the opt-in, a proxied guarded `https` name is tunnelled by name (the
    /// guard never sees its addresses); an IP literal is still checked here.
    #[tokio::test]
    async fn with_the_opt_in_the_proxy_resolves_names_but_literals_are_checked() {
        let (proxy, seen) = refusing_connect_proxy().await;
        let matcher = Matcher::builder()
            .all(format!("http://user:pass@{proxy}"))
            .build();
        let tls = tls_config("t", TlsOptions::default(), false).unwrap();
        let endpoint: Uri = "https://127.0.0.1:9/mcp".parse().unwrap();
        let guard: Arc<dyn AddressGuard> = Arc::new(TrustsTheProxy);
        let client = HttpClient::new(tls, Some(matcher), Some((endpoint, guard)));
        for literal in ["https://127.0.0.1:8443/token", "https://[::1]:8443/token"] {
            let error = client.clone().oneshot(get(literal)).await.unwrap_err();
            match super::super::stack_failure(&*error, true) {
                super::super::StackFailure::Ours(e) => {
                    assert_eq!(e.kind(), crate::error::ErrorKind::EgressDenied, "{e}");
                }
                _ => panic!("{literal}: not the guard's refusal: {error}"),
            }
        }
        assert!(
            seen.lock().unwrap().is_empty(),
            "a refused literal was tunnelled"
        );
        let error = client
            .clone()
            .oneshot(get("https://as.example:8443/token"))
            .await;
        assert!(error.is_err());
        assert_eq!(
            seen.lock().unwrap().clone(),
            [(
                "as.example:8443".to_owned(),
                Some("Basic dXNlcjpwYXNz".to_owned())
            )]
        );
    }

    /// A guarded name this machine cannot resolve is not handed to the proxy;
    /// the error names the opt-in that would.
    #[tokio::test]
    async fn an_unresolvable_name_is_not_handed_to_the_proxy() {
        let (proxy, seen) = refusing_connect_proxy().await;
        let matcher = Matcher::builder().all(format!("http://{proxy}")).build();
        let tls = tls_config("t", TlsOptions::default(), false).unwrap();
        let endpoint: Uri = "https://127.0.0.1:9/mcp".parse().unwrap();
        let guard: Arc<dyn AddressGuard> = Arc::new(AllowAll);
        let client = HttpClient::new(tls, Some(matcher), Some((endpoint, guard)));
        let error = client
            .oneshot(get("https://nowhere.invalid/token"))
            .await
            .unwrap_err();
        match super::super::stack_failure(&*error, true) {
            super::super::StackFailure::Ours(e) => {
                assert_eq!(e.kind(), crate::error::ErrorKind::ConnectionClosed, "{e}");
                assert!(e.message().contains("oauth_proxy_resolves_names"), "{e}");
                assert!(!e.message().contains("nowhere"), "{e}");
            }
            _ => panic!("not the resolution failure: {error}"),
        }
        assert!(seen.lock().unwrap().is_empty(), "the proxy was asked");
    }

    /// NO_PROXY holds for guarded destinations as for the endpoint's: a guarded
    /// `https` destination under it connects directly (to a kept address).
    #[tokio::test]
    async fn no_proxy_is_honoured_for_guarded_destinations() {
        let target = Counting::start().await;
        let (proxy, seen) = refusing_connect_proxy().await;
        let matcher = Matcher::builder()
            .all(format!("http://{proxy}"))
            .no("localhost")
            .build();
        let tls = tls_config("t", TlsOptions::default(), false).unwrap();
        let endpoint: Uri = "https://127.0.0.1:9/mcp".parse().unwrap();
        let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
        let guard: Arc<dyn AddressGuard> = Arc::new(KeepOnly(loopback));
        let client = HttpClient::new(tls, Some(matcher), Some((endpoint, guard)));
        // The target speaks plain HTTP: TLS fails, after a direct connection.
        let url = format!("https://localhost:{}/token", target.addr.port());
        assert!(client.clone().oneshot(get(&url)).await.is_err());
        assert_eq!(target.accepted(), 1, "not connected directly");
        assert!(seen.lock().unwrap().is_empty(), "the proxy was asked");
    }

    /// Keeps every address.
    struct AllowAll;

    impl AddressGuard for AllowAll {
        fn keep(&self, addrs: Vec<SocketAddr>) -> BoxFuture<'_, Result<Vec<SocketAddr>>> {
            Box::pin(async move { Ok(addrs) })
        }
    }

    /// A guarded request connects directly, and the proxy's credentials do not
    /// travel with it to the server.
    #[tokio::test]
    async fn a_guarded_request_carries_no_proxy_credentials() {
        let (target, seen, _) = fake_proxy().await;
        let (proxy, _, proxied) = fake_proxy().await;
        let matcher = Matcher::builder()
            .http(format!("http://user:pass@{proxy}"))
            .build();
        let tls = tls_config("t", TlsOptions::default(), false).unwrap();
        let endpoint: Uri = "http://127.0.0.1:9/mcp".parse().unwrap();
        let guard: Arc<dyn AddressGuard> = Arc::new(AllowAll);
        let client = HttpClient::new(tls, Some(matcher), Some((endpoint, guard)));
        let other = format!("http://localhost:{}/token", target.port());
        assert_eq!(&call(&client, &other).await[..], b"{}");
        assert_eq!(proxied.load(Ordering::SeqCst), 0, "not through the proxy");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            seen[0].1, None,
            "the proxy's credentials reached the server"
        );
    }

    #[test]
    fn roots_only_without_roots_is_a_config_error() {
        let options = TlsOptions {
            roots_only: true,
            ..TlsOptions::default()
        };
        let err = tls_config("srv", options, true).unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::InvalidConfig);
        assert!(err.message().contains("srv"));
    }
}
