//! The HTTP client of the OAuth chain: every request the chain makes itself
//! (metadata, registration, the headless authorization request, tokens).
//!
//! The stack, outermost first: the egress policy ([`EgressPolicyLayer`], the chain's
//! own grants), the [`AddressPolicy`] URL check, then a hyper-util client whose DNS
//! resolver drops every address the policy refuses (so the check applies to the
//! address actually connected, after DNS). It has no MCP session layer and no
//! bearer token. Redirects are never followed; every body is capped before it is
//! parsed; every request has a deadline.

use std::error::Error as StdError;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tower::util::BoxCloneService;
use tower::{Layer, Service, ServiceExt};
use url::Url;

use super::policy::AddressPolicy;
use crate::error::{Error, ErrorKind, Result};
use crate::layer::{BoxError, EgressGrants, EgressPolicyLayer, StackFailure, stack_failure};

/// The deadline of one request the chain makes (connect, send, read the body).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest token or registration response read: 64 KiB.
pub const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;

/// A response the chain received: status, headers and the capped body.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

type Svc =
    BoxCloneService<http::Request<Full<Bytes>>, http::Response<hyper::body::Incoming>, BoxError>;

/// The chain's HTTP client. Cheap to clone.
#[derive(Clone)]
pub(crate) struct AuthHttp {
    service: Arc<std::sync::Mutex<Svc>>,
    policy: AddressPolicy,
    timeout: Duration,
}

impl std::fmt::Debug for AuthHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthHttp")
            .field("policy", &self.policy)
            .finish()
    }
}

/// The resolver: the system's, minus every address the policy refuses.
#[derive(Clone)]
struct PolicyResolver {
    inner: GaiResolver,
    policy: AddressPolicy,
}

impl Service<Name> for PolicyResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future =
        Pin<Box<dyn Future<Output = std::result::Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let policy = self.policy.clone();
        let future = self.inner.call(name);
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = future.await?.collect();
            let allowed: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| policy.allows(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(Box::new(Error::new(
                    ErrorKind::EgressDenied,
                    "an authorization URL resolves only to addresses the policy refuses",
                )) as BoxError);
            }
            Ok(allowed.into_iter())
        })
    }
}

impl AuthHttp {
    /// Builds the client: `grants` for the egress policy, `policy` for addresses,
    /// `tls` the transport's rustls configuration (same roots).
    pub(crate) fn new(
        grants: EgressGrants,
        policy: AddressPolicy,
        tls: rustls::ClientConfig,
    ) -> Self {
        let mut http = HttpConnector::new_with_resolver(PolicyResolver {
            inner: GaiResolver::new(),
            policy: policy.clone(),
        });
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(REQUEST_TIMEOUT));
        let connector: HttpsConnector<_> = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        let inner = tower::service_fn(move |req: http::Request<Full<Bytes>>| {
            let future = client.request(req);
            async move { future.await.map_err(|e| Box::new(e) as BoxError) }
        });
        let service = BoxCloneService::new(EgressPolicyLayer::new(grants).layer(inner));
        AuthHttp {
            service: Arc::new(std::sync::Mutex::new(service)),
            policy,
            timeout: REQUEST_TIMEOUT,
        }
    }

    /// The address policy in force.
    pub(crate) fn policy(&self) -> &AddressPolicy {
        &self.policy
    }

    /// Sends one request and reads at most `cap` bytes of the body. `what` names
    /// the request in errors (never the URL). Redirects are not followed: a 3xx is
    /// returned as is, with an empty body.
    pub(crate) async fn send(
        &self,
        method: Method,
        url: &Url,
        headers: HeaderMap,
        body: Bytes,
        cap: usize,
        what: &str,
    ) -> Result<Fetched> {
        self.policy.check_url(url, what)?;
        let mut request = http::Request::builder()
            .method(method)
            .uri(url.as_str())
            .body(Full::new(body))
            .map_err(|_| {
                Error::new(
                    ErrorKind::Unauthorized,
                    format!("the {what} URL is not valid"),
                )
            })?;
        *request.headers_mut() = headers;
        let service = self
            .service
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let exchange = async {
            let response = service
                .oneshot(request)
                .await
                .map_err(|e| classify(&*e, what, url.scheme() == "https"))?;
            let (parts, body) = response.into_parts();
            if parts.status.is_redirection() {
                return Ok(Fetched {
                    status: parts.status,
                    headers: parts.headers,
                    body: Bytes::new(),
                });
            }
            let too_large = || {
                Error::new(
                    ErrorKind::ProtocolError,
                    format!("the {what} response is larger than {cap} bytes"),
                )
            };
            if let Some(len) = parts
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                && len > cap as u64
            {
                return Err(too_large());
            }
            let collected = Limited::new(body, cap).collect().await.map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    too_large()
                } else {
                    classify(&*e, what, url.scheme() == "https")
                }
            })?;
            Ok(Fetched {
                status: parts.status,
                headers: parts.headers,
                body: collected.to_bytes(),
            })
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(Error::timeout(format!("the {what} did not answer in time"))),
        }
    }

    /// The `oauth2` crate's HTTP client hook, running through this stack.
    pub(crate) fn oauth2_client(&self, what: &'static str) -> Oauth2Client {
        Oauth2Client {
            http: self.clone(),
            what,
        }
    }
}

/// Maps a failure of the stack to a public error: this crate's own errors (egress
/// and address refusals) pass through; TLS and connect failures get their kinds.
fn classify(error: &(dyn StdError + 'static), what: &str, https: bool) -> Error {
    let is_connect = |e: &(dyn StdError + 'static)| {
        e.downcast_ref::<hyper_util::client::legacy::Error>()
            .is_some_and(|client| client.is_connect())
    };
    match stack_failure(error, https, is_connect) {
        StackFailure::Ours(error) => error,
        StackFailure::Tls => Error::new(ErrorKind::Tls, format!("TLS with the {what} failed")),
        StackFailure::Connect => Error::closed(format!("could not connect to the {what}")),
        StackFailure::Exchange => {
            Error::closed(format!("the HTTP exchange with the {what} failed"))
        }
    }
}

/// [`oauth2::AsyncHttpClient`] over [`AuthHttp`]: token requests go through the
/// egress policy, the address policy, the body cap and the deadline.
#[derive(Clone)]
pub(crate) struct Oauth2Client {
    http: AuthHttp,
    what: &'static str,
}

impl<'c> oauth2::AsyncHttpClient<'c> for Oauth2Client {
    type Error = Error;
    type Future =
        Pin<Box<dyn Future<Output = std::result::Result<oauth2::HttpResponse, Error>> + Send + 'c>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let url = Url::parse(&parts.uri.to_string()).map_err(|_| {
                Error::new(
                    ErrorKind::Unauthorized,
                    format!("the {} URL is not valid", self.what),
                )
            })?;
            let mut headers = parts.headers;
            // oauth2 builds the Basic header; mark it sensitive like every credential.
            if let Some(v) = headers.get_mut(http::header::AUTHORIZATION) {
                v.set_sensitive(true);
            }
            let fetched = self
                .http
                .send(
                    parts.method,
                    &url,
                    headers,
                    Bytes::from(body),
                    MAX_TOKEN_RESPONSE_BYTES,
                    self.what,
                )
                .await?;
            if fetched.status.is_redirection() {
                return Err(Error::new(
                    ErrorKind::Unauthorized,
                    format!("the {} answered with a redirect (not followed)", self.what),
                ));
            }
            // The same depth bound as every other document this crate reads.
            if !fetched.body.is_empty()
                && !crate::json_bounds::scan_frame(&fetched.body).within_depth()
            {
                return Err(Error::new(
                    ErrorKind::Unauthorized,
                    format!(
                        "the {} answered with a body that is not bounded JSON",
                        self.what
                    ),
                ));
            }
            let mut response = http::Response::new(fetched.body.to_vec());
            *response.status_mut() = fetched.status;
            *response.headers_mut() = fetched.headers;
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A `GET` of metadata at `url` with a body cap of `cap` bytes.
    async fn get(http: &AuthHttp, url: &Url, cap: usize) -> Result<Fetched> {
        http.send(
            Method::GET,
            url,
            HeaderMap::new(),
            Bytes::new(),
            cap,
            "metadata",
        )
        .await
    }

    fn tls() -> rustls::ClientConfig {
        rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth()
    }

    /// A name other than `localhost` that the system resolves to loopback (from
    /// /etc/hosts), if there is one.
    fn loopback_alias() -> Option<String> {
        let hosts = std::fs::read_to_string("/etc/hosts").ok()?;
        hosts.lines().find_map(|line| {
            let mut parts = line.split_whitespace();
            let addr = parts.next()?;
            if !addr.starts_with("127.") {
                return None;
            }
            parts
                .find(|n| !n.starts_with('#') && !n.to_ascii_lowercase().contains("localhost"))
                .map(str::to_owned)
        })
    }

    #[tokio::test]
    async fn a_name_resolving_to_a_refused_address_is_never_connected() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                drop(tcp);
            }
        });
        let grants = EgressGrants::parse(["net:get|post:https://**:*"]).unwrap();
        let http = AuthHttp::new(grants, AddressPolicy::public_only(), tls());
        // The DNS path: a name that passes the URL check but resolves to loopback.
        if let Some(alias) = loopback_alias() {
            let url = Url::parse(&format!("https://{alias}:{port}/.well-known/x")).unwrap();
            let err = get(&http, &url, 1024).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::EgressDenied, "{alias}: {err}");
        }
        // The literal path: refused before any resolution.
        for host in ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]"] {
            let url = Url::parse(&format!("https://{host}:{port}/x")).unwrap();
            let err = get(&http, &url, 1024).await.unwrap_err();
            assert_eq!(err.kind(), ErrorKind::EgressDenied, "{host}: {err}");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 0);
        task.abort();
    }

    #[tokio::test]
    async fn bodies_are_capped_and_redirects_are_not_followed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let task = tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut tcp, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let n = tcp.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let response = if head.starts_with("GET /big") {
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: 2048\r\n\r\n{}",
                        "x".repeat(2048)
                    )
                } else {
                    "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n".to_owned()
                };
                let _ = tcp.write_all(response.as_bytes()).await;
            }
        });
        let grants = EgressGrants::parse(["net:get|post:http://127.0.0.1:*"]).unwrap();
        let http = AuthHttp::new(
            grants,
            AddressPolicy::with_classes([crate::auth::policy::AddressClass::Loopback]),
            tls(),
        );
        let url = Url::parse(&format!("http://127.0.0.1:{port}/big")).unwrap();
        let err = get(&http, &url, 1024).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ProtocolError, "{err}");
        let ok = get(&http, &url, 4096).await.unwrap();
        assert_eq!(ok.body.len(), 2048);
        let url = Url::parse(&format!("http://127.0.0.1:{port}/redirect")).unwrap();
        let fetched = get(&http, &url, 1024).await.unwrap();
        assert_eq!(fetched.status, StatusCode::FOUND);
        // Egress grants: another port is denied before sending.
        let denied = AuthHttp::new(
            EgressGrants::parse(["net:get:http://127.0.0.1:1"]).unwrap(),
            http.policy().clone(),
            tls(),
        );
        let err = get(&denied, &url, 1024).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::EgressDenied);
        task.abort();
    }
}
