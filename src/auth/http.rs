//! The HTTP stack of the OAuth chain: every request the chain makes itself
//! (metadata, registration, the headless authorization request, tokens).
//!
//! The stack, outermost first: the egress policy ([`EgressPolicyLayer`], the
//! chain's own grants), the [`AddressPolicy`] URL check, then the transport's one
//! HTTP client ([`HttpClient`], shared with the MCP requests). That client's
//! connector holds every connection outside the MCP endpoint's origin to the same
//! policy after DNS ([`PolicyGuard`]), so the check applies to the address
//! actually connected. With a proxy (the transport's `use_env_proxy` or
//! `proxy`, `NO_PROXY` honoured), the chain's `https` requests go through it as
//! the MCP requests do, but the name is resolved here and the `CONNECT` names
//! the checked address, so the proxy never resolves a discovered name; plain
//! `http` (loopback only) is always direct. It has no MCP session layer and no
//! bearer token.
//! Redirects are never followed; every body is capped before it is parsed; every
//! request has a deadline.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::Full;
use tokio::sync::OnceCell;
use tower::util::BoxCloneService;
use tower::{Layer, ServiceExt};
use url::Url;

use super::dpop::{DPOP, DpopSigner, NonceError, nonce_from_headers};
use super::policy::AddressPolicy;
use crate::error::{Error, ErrorKind, Result};
use crate::http::body::{BodyError, collect_limited, declared_too_large};
use crate::http::client::{AddressGuard, HttpClient};
use crate::http::{BoxError, HttpResponse, StackFailure, stack_failure};
use crate::layer::{EgressGrants, EgressPolicyLayer};

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

type Svc = BoxCloneService<http::Request<Full<Bytes>>, HttpResponse, BoxError>;

/// The chain's HTTP stack. Cheap to clone.
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

/// The chain's address policy, worked out once for the MCP server (it may
/// resolve the server's name: [`AddressPolicy::for_server`]) and shared by the
/// chain's URL checks and the transport's client, whose connector keeps only the
/// addresses it allows ([`AddressGuard`]) on every connection outside the MCP
/// endpoint's origin.
pub(crate) struct PolicyGuard {
    mcp: Url,
    policy: OnceCell<AddressPolicy>,
    /// The transport's `oauth_proxy_resolves_names`.
    proxy_resolves_names: bool,
}

impl PolicyGuard {
    /// The guard for the MCP server at `mcp`; its policy is worked out on first use.
    pub(crate) fn for_server(mcp: Url) -> Self {
        PolicyGuard {
            mcp,
            policy: OnceCell::new(),
            proxy_resolves_names: false,
        }
    }

    /// Lets the proxy resolve the names of the chain's proxied `https`
    /// destinations ([`AddressGuard::proxy_resolves_names`]) when `trusted`.
    pub(crate) fn with_proxy_resolving_names(mut self, trusted: bool) -> Self {
        self.proxy_resolves_names = trusted;
        self
    }

    /// A guard holding `policy` as it is.
    #[cfg(test)]
    pub(crate) fn fixed(policy: AddressPolicy) -> Self {
        PolicyGuard {
            mcp: Url::parse("https://mcp.invalid/").expect("a valid URL"),
            policy: OnceCell::new_with(Some(policy)),
            proxy_resolves_names: false,
        }
    }

    /// The policy.
    pub(crate) async fn policy(&self) -> &AddressPolicy {
        self.policy
            .get_or_init(|| AddressPolicy::for_server(&self.mcp))
            .await
    }
}

impl AddressGuard for PolicyGuard {
    fn keep(&self, addrs: Vec<SocketAddr>) -> BoxFuture<'_, Result<Vec<SocketAddr>>> {
        Box::pin(async move {
            let policy = self.policy().await;
            let allowed: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| policy.allows(a.ip()))
                .collect();
            if allowed.is_empty() {
                return Err(Error::new(
                    ErrorKind::EgressDenied,
                    "an authorization URL resolves only to addresses the policy refuses",
                ));
            }
            Ok(allowed)
        })
    }

    fn proxy_resolves_names(&self) -> bool {
        self.proxy_resolves_names
    }
}

impl AuthHttp {
    /// Builds the stack: `grants` for the egress policy, `policy` for the URL
    /// checks, over `client` (the transport's, whose connector applies the same
    /// policy after DNS).
    pub(crate) fn new(grants: EgressGrants, policy: AddressPolicy, client: HttpClient) -> Self {
        let service = BoxCloneService::new(EgressPolicyLayer::new(grants).layer(client));
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
            if declared_too_large(&body, cap) {
                return Err(too_large());
            }
            let collected = collect_limited(body, cap).await.map_err(|e| match e {
                BodyError::TooLarge => too_large(),
                BodyError::Broken(e) => classify(&*e, what, url.scheme() == "https"),
            })?;
            Ok(Fetched {
                status: parts.status,
                headers: parts.headers,
                body: collected,
            })
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(Error::timeout(format!("the {what} did not answer in time"))),
        }
    }

    /// The `oauth2` crate's HTTP client hook, running through this stack; with
    /// `dpop`, every request carries a fresh proof (see [`Oauth2Client`]).
    pub(crate) fn oauth2_client(
        &self,
        what: &'static str,
        dpop: Option<DpopSigner>,
    ) -> Oauth2Client {
        Oauth2Client {
            http: self.clone(),
            what,
            dpop,
        }
    }
}

/// Maps a failure of the stack to a public error: this crate's own errors (egress
/// and address refusals) pass through; TLS and connect failures get their kinds.
fn classify(error: &(dyn std::error::Error + 'static), what: &str, https: bool) -> Error {
    match stack_failure(error, https) {
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
///
/// With a DPoP signer, each request carries `DPoP: <fresh proof>` (with the
/// nonce held for the endpoint's origin); a `DPoP-Nonce` in any answer is kept,
/// and a `400 use_dpop_nonce` that brings one is retried once with a new proof
/// carrying it. `oauth2` never sees response headers, so this is the place.
#[derive(Clone)]
pub(crate) struct Oauth2Client {
    http: AuthHttp,
    what: &'static str,
    dpop: Option<DpopSigner>,
}

/// The `error` of a token endpoint's JSON error body, if it is `use_dpop_nonce`.
fn asks_for_nonce(status: StatusCode, body: &[u8]) -> bool {
    status == StatusCode::BAD_REQUEST
        && crate::json_bounds::scan_frame(body).within_depth()
        && serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .is_some_and(|v| v.get("error").and_then(|e| e.as_str()) == Some("use_dpop_nonce"))
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
            let body = Bytes::from(body);
            let mut retried = false;
            let fetched = loop {
                if let Some(dpop) = &self.dpop {
                    let nonce = dpop.nonces.get(&url);
                    let proof = dpop.key.proof_header(
                        parts.method.as_str(),
                        &url,
                        None,
                        nonce.as_deref(),
                    )?;
                    headers.insert(DPOP, proof);
                }
                let fetched = self
                    .http
                    .send(
                        parts.method.clone(),
                        &url,
                        headers.clone(),
                        body.clone(),
                        MAX_TOKEN_RESPONSE_BYTES,
                        self.what,
                    )
                    .await?;
                let Some(dpop) = &self.dpop else {
                    break fetched;
                };
                let asks = asks_for_nonce(fetched.status, &fetched.body);
                let fresh = match nonce_from_headers(&fetched.headers) {
                    Ok(Some(nonce)) => {
                        dpop.nonces.set(&url, nonce);
                        true
                    }
                    Ok(None) if asks => {
                        return Err(NonceError::Missing.into_error(&dpop.server, self.what));
                    }
                    Ok(None) => false,
                    Err(e) if asks => return Err(e.into_error(&dpop.server, self.what)),
                    // Not asked for: ignored (the next answer may ask again).
                    Err(_) => false,
                };
                // Retried once, with the nonce this answer gave.
                if asks && !retried && fresh {
                    retried = true;
                    continue;
                }
                break fetched;
            };
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
pub(crate) mod tests {
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

    /// The chain's stack as a transport builds it: `policy` for the URL checks
    /// and, through the client's guard, for the addresses DNS gives.
    pub(crate) fn auth_http(grants: EgressGrants, policy: AddressPolicy) -> AuthHttp {
        auth_http_via(grants, policy, None)
    }

    /// [`auth_http`], its client going through `proxies`.
    fn auth_http_via(
        grants: EgressGrants,
        policy: AddressPolicy,
        proxies: Option<hyper_util::client::proxy::matcher::Matcher>,
    ) -> AuthHttp {
        auth_http_trusting(grants, policy, proxies, false)
    }

    /// [`auth_http_via`], the guard letting the proxy resolve names when
    /// `trusted` (the transport's `oauth_proxy_resolves_names`).
    fn auth_http_trusting(
        grants: EgressGrants,
        policy: AddressPolicy,
        proxies: Option<hyper_util::client::proxy::matcher::Matcher>,
        trusted: bool,
    ) -> AuthHttp {
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
        let guard: Arc<dyn AddressGuard> =
            Arc::new(PolicyGuard::fixed(policy.clone()).with_proxy_resolving_names(trusted));
        let endpoint = "https://mcp.invalid/mcp".parse().unwrap();
        let client = HttpClient::new(tls, proxies, Some((endpoint, guard)));
        AuthHttp::new(grants, policy, client)
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
        // Without a proxy, and through one (the listener itself: a connection
        // to the proxy is counted too), which is never asked to tunnel there.
        let proxy = hyper_util::client::proxy::matcher::Matcher::builder()
            .all(format!("http://127.0.0.1:{port}"))
            .build();
        for proxies in [None, Some(proxy)] {
            let via = if proxies.is_some() {
                "proxied"
            } else {
                "direct"
            };
            let http = auth_http_via(grants.clone(), AddressPolicy::public_only(), proxies);
            // The DNS path: a name that passes the URL check but resolves to loopback.
            if let Some(alias) = loopback_alias() {
                let url = Url::parse(&format!("https://{alias}:{port}/.well-known/x")).unwrap();
                let err = get(&http, &url, 1024).await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::EgressDenied, "{via} {alias}: {err}");
            }
            // The literal path: refused before any resolution.
            for host in ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]"] {
                let url = Url::parse(&format!("https://{host}:{port}/x")).unwrap();
                let err = get(&http, &url, 1024).await.unwrap_err();
                assert_eq!(err.kind(), ErrorKind::EgressDenied, "{via} {host}: {err}");
            }
        }
        // With the proxy resolving names (the opt-in), the URL's own checks still
        // hold: refused literals and names are never sent to the proxy.
        let proxy = hyper_util::client::proxy::matcher::Matcher::builder()
            .all(format!("http://127.0.0.1:{port}"))
            .build();
        let http = auth_http_trusting(grants, AddressPolicy::public_only(), Some(proxy), true);
        for host in [
            "127.0.0.1",
            "localhost",
            "[::ffff:127.0.0.1]",
            "169.254.169.254",
            "metadata.google.internal",
        ] {
            let url = Url::parse(&format!("https://{host}:{port}/x")).unwrap();
            let err = get(&http, &url, 1024).await.unwrap_err();
            assert_eq!(
                err.kind(),
                ErrorKind::EgressDenied,
                "trusting {host}: {err}"
            );
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
        let http = auth_http(
            grants,
            AddressPolicy::with_classes([crate::auth::policy::AddressClass::Loopback]),
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
        let denied = auth_http(
            EgressGrants::parse(["net:get:http://127.0.0.1:1"]).unwrap(),
            http.policy().clone(),
        );
        let err = get(&denied, &url, 1024).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::EgressDenied);
        task.abort();
    }
}
