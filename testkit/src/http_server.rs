//! Real hyper servers on 127.0.0.1 for the HTTP transport tests: one per test, with
//! every request recorded, accepted connections counted, and optional TLS. The
//! test writes the handler; the helpers below build its answers.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::stream::{self, StreamExt};
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri, Version};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The response body type handlers return.
pub type Body = UnsyncBoxBody<Bytes, io::Error>;

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: Method,
    pub uri: Uri,
    pub version: Version,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub at: Instant,
    /// Index of this request in the server's log.
    pub index: usize,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }
}

type Handler = Arc<dyn Fn(Recorded) -> BoxFuture<'static, Response<Body>> + Send + Sync>;

/// A running test server.
pub struct TestServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    accepted: Arc<AtomicUsize>,
    task: JoinHandle<()>,
    scheme: &'static str,
}

impl TestServer {
    /// Plain HTTP (HTTP/1.1, or HTTP/2 with prior knowledge).
    pub async fn start<F, Fut>(handler: F) -> Self
    where
        F: Fn(Recorded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        Self::spawn(handler, None).await
    }

    /// HTTPS with `config` (ALPN h2 and http/1.1 are set here).
    pub async fn start_tls<F, Fut>(handler: F, config: rustls::ServerConfig) -> Self
    where
        F: Fn(Recorded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let mut config = config;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        Self::spawn(handler, Some(acceptor)).await
    }

    async fn spawn<F, Fut>(handler: F, tls: Option<tokio_rustls::TlsAcceptor>) -> Self
    where
        F: Fn(Recorded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Response<Body>> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests: Arc<Mutex<Vec<Recorded>>> = Arc::default();
        let accepted = Arc::new(AtomicUsize::new(0));
        let handler: Handler = Arc::new(move |r| Box::pin(handler(r)));
        let scheme = if tls.is_some() { "https" } else { "http" };
        let task = {
            let requests = requests.clone();
            let accepted = accepted.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        return;
                    };
                    accepted.fetch_add(1, Ordering::SeqCst);
                    let handler = handler.clone();
                    let requests = requests.clone();
                    let tls = tls.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                            let handler = handler.clone();
                            let requests = requests.clone();
                            async move {
                                let (parts, body) = req.into_parts();
                                let body = body
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes())
                                    .unwrap_or_default();
                                let recorded = {
                                    let mut log = requests.lock().unwrap();
                                    let recorded = Recorded {
                                        method: parts.method,
                                        uri: parts.uri,
                                        version: parts.version,
                                        headers: parts.headers,
                                        body,
                                        at: Instant::now(),
                                        index: log.len(),
                                    };
                                    log.push(recorded.clone());
                                    recorded
                                };
                                Ok::<_, Infallible>(handler(recorded).await)
                            }
                        });
                        let builder = auto::Builder::new(TokioExecutor::new());
                        match tls {
                            None => {
                                let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
                            }
                            Some(acceptor) => {
                                let Ok(stream) = acceptor.accept(tcp).await else {
                                    return;
                                };
                                let _ = builder
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            }
                        }
                    });
                }
            })
        };
        TestServer {
            addr,
            requests,
            accepted,
            task,
            scheme,
        }
    }

    /// `http://127.0.0.1:<port>/mcp` (or `https://localhost:<port>/mcp` with TLS).
    pub fn url(&self) -> String {
        match self.scheme {
            "https" => format!("https://localhost:{}/mcp", self.addr.port()),
            _ => format!("http://{}/mcp", self.addr),
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// Requests with `method`.
    pub fn requests_with(&self, method: Method) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method)
            .collect()
    }

    /// Accepted TCP connections so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Waits until `n` requests arrived (or panics after 5 s).
    pub async fn wait_for_requests(&self, n: usize) -> Vec<Recorded> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let requests = self.requests();
            if requests.len() >= n {
                return requests;
            }
            assert!(
                Instant::now() < deadline,
                "only {} requests arrived",
                requests.len()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A TCP listener that only counts connections (and accepts, then drops them).
pub struct CountingListener {
    pub addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl CountingListener {
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(tcp);
            }
        });
        CountingListener {
            addr,
            accepted,
            task,
        }
    }

    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for CountingListener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

// ----- responses -----

/// A response with status `code` and no body.
pub fn status(code: u16) -> Response<Body> {
    let mut response = Response::new(Empty::new().map_err(|e| match e {}).boxed_unsync());
    *response.status_mut() = StatusCode::from_u16(code).unwrap();
    response
}

/// A response with status `code` and a whole body of `content_type`.
pub fn full(code: u16, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(
        Full::new(body.into())
            .map_err(|e| match e {})
            .boxed_unsync(),
    );
    *response.status_mut() = StatusCode::from_u16(code).unwrap();
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_str(content_type).unwrap());
    response
}

/// A `200 application/json` response holding `body`.
pub fn json(body: &str) -> Response<Body> {
    full(200, "application/json", body.to_owned())
}

/// A `200` JSON response carrying the JSON-RPC result `result` for request `id`
/// (`null` when the id is `None`).
pub fn rpc_result(id: Option<&serde_json::Value>, result: serde_json::Value) -> Response<Body> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
    json(&body.to_string())
}

/// The `initialize` result of a legacy (2025-06-18) MCP server named `name`
/// declaring `capabilities`: how the hand-written servers of the HTTP tests
/// answer the handshake.
pub fn initialize_result(name: &str, capabilities: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "protocolVersion": "2025-06-18",
        "capabilities": capabilities,
        "serverInfo": {"name": name, "version": "1"},
    })
}

/// The `tools/list` result of a server whose one tool is `echo`.
pub fn echo_catalog() -> serde_json::Value {
    serde_json::json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
}

/// A `200 text/event-stream` response holding `body` (whole SSE events).
pub fn sse(body: &str) -> Response<Body> {
    full(200, "text/event-stream", body.to_owned())
}

/// `response` with header `name` set to `value`.
pub fn with_header(
    mut response: Response<Body>,
    name: &'static str,
    value: &str,
) -> Response<Body> {
    response
        .headers_mut()
        .insert(name, HeaderValue::from_bytes(value.as_bytes()).unwrap());
    response
}

/// A streamed body: each item is a chunk, or an error that aborts the connection
/// mid-body. `gap` is slept before each chunk.
pub fn chunked(
    code: u16,
    content_type: &str,
    chunks: Vec<Result<&'static str, ()>>,
    gap: Duration,
) -> Response<Body> {
    let body = stream::iter(chunks).then(move |chunk| async move {
        tokio::time::sleep(gap).await;
        match chunk {
            Ok(text) => Ok(Frame::data(Bytes::from_static(text.as_bytes()))),
            Err(()) => Err(io::Error::other("cut")),
        }
    });
    let mut response = Response::new(StreamBody::new(body).boxed_unsync());
    *response.status_mut() = StatusCode::from_u16(code).unwrap();
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_str(content_type).unwrap());
    response
}

/// A 200 response streaming `body` as it yields chunks.
pub fn streaming<S>(content_type: &str, body: S) -> Response<Body>
where
    S: futures_util::Stream<Item = Bytes> + Send + 'static,
{
    let body = body.map(|chunk| Ok::<_, io::Error>(Frame::data(chunk)));
    let mut response = Response::new(StreamBody::new(body).boxed_unsync());
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_str(content_type).unwrap());
    response
}

/// An endless body: `prefix`, then `filler` bytes forever (up to `cap` bytes in
/// total), counting the bytes hyper pulled from it into `sent`.
pub fn endless(
    content_type: &str,
    prefix: &'static str,
    cap: usize,
    sent: Arc<AtomicUsize>,
) -> Response<Body> {
    let chunk = Bytes::from(vec![b'x'; 64 * 1024]);
    let first = Bytes::from_static(prefix.as_bytes());
    let body = stream::once(async move { first })
        .chain(stream::repeat(chunk))
        .scan(0usize, move |total, chunk| {
            *total += chunk.len();
            let keep = *total <= cap;
            async move { keep.then_some(chunk) }
        })
        .map(move |chunk| {
            sent.fetch_add(chunk.len(), Ordering::SeqCst);
            Ok::<_, io::Error>(Frame::data(chunk))
        });
    let mut response = Response::new(StreamBody::new(body).boxed_unsync());
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_str(content_type).unwrap());
    response
}

// ----- TLS material -----

/// A CA and a server certificate for `localhost` / 127.0.0.1 signed by it; it can
/// also issue client certificates and build a server config requiring them.
pub struct TestPki {
    pub ca_der: Vec<u8>,
    pub server_config: rustls::ServerConfig,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    server_chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    server_key: Vec<u8>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl Default for TestPki {
    fn default() -> Self {
        TestPki::new()
    }
}

impl TestPki {
    /// A fresh CA and a server certificate it signed.
    pub fn new() -> Self {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "smthrs test CA");
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);

        let leaf_key = KeyPair::generate().unwrap();
        let leaf_params =
            CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();

        let server_chain = vec![leaf.der().clone(), ca_cert.der().clone()];
        let server_key = leaf_key.serialize_der();
        let server_config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                server_chain.clone(),
                rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.clone().into()),
            )
            .unwrap();
        TestPki {
            ca_der: ca_cert.der().to_vec(),
            server_config,
            issuer,
            server_chain,
            server_key,
        }
    }

    /// A client certificate (DER) and its PKCS#8 key, signed by this CA.
    pub fn client_identity(&self) -> (Vec<u8>, rustls::pki_types::PrivateKeyDer<'static>) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "smthrs test client");
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (
            cert.der().to_vec(),
            rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
    }

    /// A server config that requires a client certificate signed by this CA.
    pub fn server_config_requiring_client_auth(&self) -> rustls::ServerConfig {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(rustls::pki_types::CertificateDer::from(self.ca_der.clone()))
            .unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider(),
        )
        .build()
        .unwrap();
        rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                self.server_chain.clone(),
                rustls::pki_types::PrivateKeyDer::Pkcs8(self.server_key.clone().into()),
            )
            .unwrap()
    }
}

// ----- a CONNECT proxy -----

/// Tunnel targets and their `Proxy-Authorization` values.
pub type TunnelLog = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A minimal `CONNECT` proxy recording each tunnel target (and its
/// `Proxy-Authorization`, if any), then relaying bytes both ways.
pub struct ConnectProxy {
    pub addr: SocketAddr,
    pub tunnels: TunnelLog,
    task: JoinHandle<()>,
}

impl ConnectProxy {
    pub async fn start() -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let tunnels: TunnelLog = Arc::default();
        let log = tunnels.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
                        if client.read_exact(&mut byte).await.is_err() {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let mut lines = head.split("\r\n");
                    let request_line = lines.next().unwrap_or("");
                    let mut parts = request_line.split(' ');
                    if parts.next() != Some("CONNECT") {
                        let _ = client
                            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
                            .await;
                        return;
                    }
                    let target = parts.next().unwrap_or("").to_owned();
                    let auth = lines
                        .find(|l| l.to_ascii_lowercase().starts_with("proxy-authorization:"))
                        .map(|l| l.split_once(':').unwrap().1.trim().to_owned());
                    log.lock().unwrap().push((target.clone(), auth));
                    let Ok(mut upstream) = tokio::net::TcpStream::connect(&target).await else {
                        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                        return;
                    };
                    let _ = client
                        .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                        .await;
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                });
            }
        });
        ConnectProxy {
            addr,
            tunnels,
            task,
        }
    }

    pub fn tunnels(&self) -> Vec<(String, Option<String>)> {
        self.tunnels.lock().unwrap().clone()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
