//! The bottom of the stack: rustls configuration, the (optionally proxied) TCP
//! connector, and the connection pool ([`super::pool`]) as a tower service.
//!
//! - TLS: rustls with the `ring` provider chosen explicitly; ALPN offers `h2` and
//!   `http/1.1`, so HTTP/2 is used where the server offers it.
//! - Roots: the system's (rustls-native-certs) unless [`TlsOptions::roots_only`];
//!   when no system root loads at all, the bundled webpki roots are used instead.
//!   Custom roots are added on top. For an `http://` endpoint no root is loaded
//!   (TLS is never used: redirects stay on the origin, and proxies are plain HTTP).
//! - Proxies: only when a [`Matcher`] is given (the builder's `use_env_proxy`).
//!   `https` destinations go through a `CONNECT` tunnel; `http` destinations are sent
//!   to the proxy in absolute form, with `Proxy-Authorization` from the proxy URL's
//!   userinfo when present. Proxies with an `https://` URL are not supported.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use http::header::PROXY_AUTHORIZATION;
use http::{Method, Uri};
use hyper::rt;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tower::Service;

use super::headers::HeaderCount;
use super::pool::Pool;
use super::{HttpRequest, HttpResponse};
use crate::error::{Error, Result};
use crate::layer::BoxError;

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
/// endpoints, which never use TLS, so the system store is not read for them.
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

/// A TCP connector that goes through a proxy when the matcher says so.
#[derive(Clone)]
pub(crate) struct ProxyConnector {
    http: HttpConnector,
    proxies: Option<Arc<Matcher>>,
}

impl ProxyConnector {
    pub(crate) fn new(proxies: Option<Arc<Matcher>>) -> Self {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        ProxyConnector { http, proxies }
    }
}

impl Service<Uri> for ProxyConnector {
    type Response = ProxyStream;
    type Error = BoxError;
    type Future = BoxFuture<'static, std::result::Result<ProxyStream, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let intercept = self.proxies.as_ref().and_then(|m| m.intercept(&dst));
        let mut http = self.http.clone();
        Box::pin(async move {
            let Some(intercept) = intercept else {
                let io = http.call(dst).await?;
                return Ok(ProxyStream {
                    io,
                    absolute_form: false,
                });
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
                let io = tunnel.call(dst).await?;
                Ok(ProxyStream {
                    io,
                    absolute_form: false,
                })
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

/// A TCP stream, possibly to a proxy; `absolute_form` tells hyper to send requests
/// in absolute form (plain-HTTP proxying).
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

/// The connector under the pool: TCP (through a proxy when the matcher says so),
/// then TLS for `https` with ALPN offering `h2` and `http/1.1`.
pub(crate) fn https_connector(
    tls: ClientConfig,
    proxies: Option<Arc<Matcher>>,
) -> HttpsConnector<ProxyConnector> {
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(ProxyConnector::new(proxies))
}

/// The bottom of the stack as a `tower::Service`: the connection [`Pool`], built
/// once per transport; HTTP/2 where ALPN offers it.
#[derive(Clone)]
pub(crate) struct HyperService {
    pool: Pool<HttpsConnector<ProxyConnector>>,
    proxies: Option<Arc<Matcher>>,
    headers: HeaderCount,
}

impl HyperService {
    pub(crate) fn new(tls: ClientConfig, proxies: Option<Matcher>) -> Self {
        let proxies = proxies.map(Arc::new);
        let connector = https_connector(tls, proxies.clone());
        let pool = Pool::new(connector, POOL_IDLE_TIMEOUT, MAX_IDLE_PER_ORIGIN);
        HyperService {
            pool,
            proxies,
            headers: HeaderCount::default(),
        }
    }

    /// The count of headers requests leave the stack with, for the driver to size
    /// the next request's map.
    pub(crate) fn header_count(&self) -> HeaderCount {
        self.headers.clone()
    }
}

impl fmt::Debug for HyperService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HyperService")
            .field("proxies", &self.proxies.is_some())
            .finish()
    }
}

impl Service<HttpRequest> for HyperService {
    type Response = HttpResponse;
    type Error = BoxError;
    type Future = HyperFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: HttpRequest) -> Self::Future {
        // Plain-HTTP proxying sends the request itself to the proxy: it carries the
        // proxy's credentials (a CONNECT tunnel carries them in the CONNECT instead).
        if req.uri().scheme_str() == Some("http")
            && let Some(mut auth) = self
                .proxies
                .as_ref()
                .and_then(|m| m.intercept(req.uri()))
                .and_then(|i| i.basic_auth().cloned())
        {
            auth.set_sensitive(true);
            req.headers_mut().insert(PROXY_AUTHORIZATION, auth);
        }
        if req.method() == Method::POST {
            self.headers.record(req.headers());
        }
        HyperFuture(self.pool.send(req))
    }
}

/// The response future of [`HyperService`]: the pool's (boxed once) future.
pub(crate) struct HyperFuture(BoxFuture<'static, std::result::Result<HttpResponse, BoxError>>);

impl Future for HyperFuture {
    type Output = std::result::Result<HttpResponse, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::Full;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tower::ServiceExt;

    /// A plain-HTTP proxy on loopback that answers every request itself, recording
    /// the request target and the proxy credentials it saw.
    async fn fake_proxy() -> (
        std::net::SocketAddr,
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
        let svc = HyperService::new(tls, Some(matcher));
        // The destination does not exist: only the proxy can answer.
        let req = http::Request::post("http://mcp.invalid:9/mcp?x=1")
            .body(Full::new(Bytes::from_static(b"{}")))
            .unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
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
        let svc = HyperService::new(tls, Some(matcher));
        let req = http::Request::get(format!("http://{target_addr}/"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        // Direct connection to a closed port fails; the proxy was not used.
        assert!(svc.oneshot(req).await.is_err());
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn roots_only_without_roots_is_a_config_error() {
        let options = TlsOptions {
            roots_only: true,
            ..TlsOptions::default()
        };
        let err = tls_config("srv", options, true).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidConfig);
        assert!(err.message().contains("srv"));
    }
}
