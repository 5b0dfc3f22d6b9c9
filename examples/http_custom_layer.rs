//! Add your own tower layers to the Streamable HTTP transport's stack.
//!
//! Two layers are added: a `MapRequestLayer` that sets a `User-Agent` header, and a
//! hand-written request counter. They sit above the egress policy, the bearer token
//! and the MCP headers (the first layer added is the outermost).
//!
//! The example starts a tiny MCP server on 127.0.0.1 (the legacy handshake and one
//! tool) so that it runs on its own, and connects a client to it:
//!
//! ```text
//! cargo run --example http_custom_layer
//! ```

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use smthrs_mcp::transport::http::{HttpRequest, HttpTransport};
use smthrs_mcp::{Client, ProtocolMode};
use tower::util::MapRequestLayer;
use tower::{Layer, Service};

/// Counts the requests that go through the stack.
#[derive(Clone)]
struct CountRequestsLayer {
    count: Arc<AtomicUsize>,
}

impl<S> Layer<S> for CountRequestsLayer {
    type Service = CountRequests<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CountRequests {
            inner,
            count: self.count.clone(),
        }
    }
}

#[derive(Clone)]
struct CountRequests<S> {
    inner: S,
    count: Arc<AtomicUsize>,
}

impl<S> Service<HttpRequest> for CountRequests<S>
where
    S: Service<HttpRequest>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: HttpRequest) -> Self::Future {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.inner.call(req)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let url = start_demo_server().await?;

    let count = Arc::new(AtomicUsize::new(0));
    let transport = HttpTransport::builder("demo", url)
        .layer(MapRequestLayer::new(|mut req: HttpRequest| {
            req.headers_mut().insert(
                http::header::USER_AGENT,
                HeaderValue::from_static("smthrs-mcp-example/0.1"),
            );
            req
        }))
        .layer(CountRequestsLayer {
            count: count.clone(),
        })
        .build()?;
    println!("{transport:?}");

    // The demo server speaks only the legacy handshake: no probe.
    let client = Client::builder("demo")
        .protocol(ProtocolMode::Legacy)
        .connect(transport)
        .await?;
    println!(
        "connected ({}), {} tool(s)",
        client.protocol_version(),
        client.catalog().len()
    );
    client.close().await;
    println!(
        "requests through the custom layer: {}",
        count.load(Ordering::Relaxed)
    );
    Ok(())
}

/// A minimal MCP server: `initialize` and `tools/list` (one tool) answered with
/// JSON, notifications accepted with `202`, no standalone stream (`405` to
/// anything but a `POST`). It prints the User-Agent of each request on stderr.
async fn start_demo_server() -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    |req: http::Request<hyper::body::Incoming>| async move {
                        let agent = req
                            .headers()
                            .get(http::header::USER_AGENT)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("-")
                            .to_owned();
                        eprintln!("server: {} from {agent}", req.method());
                        let post = req.method() == Method::POST;
                        let body = req.into_body().collect().await.map(|b| b.to_bytes());
                        let message: Value = match (post, body) {
                            (true, Ok(body)) => serde_json::from_slice(&body).unwrap_or_default(),
                            (false, _) => return Ok(answer(StatusCode::METHOD_NOT_ALLOWED, None)),
                            (true, Err(_)) => Value::Null,
                        };
                        let Some(id) = message.get("id") else {
                            return Ok::<_, Infallible>(answer(StatusCode::ACCEPTED, None));
                        };
                        let result = match message["method"].as_str() {
                            Some("initialize") => json!({
                                "protocolVersion": "2025-06-18",
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "demo", "version": "0.1.0"},
                            }),
                            Some("tools/list") => json!({
                                "tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
                            }),
                            _ => json!({}),
                        };
                        let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
                        Ok(answer(StatusCode::OK, Some(reply)))
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
    Ok(url)
}

/// A response with `status` and, if any, `reply` as its JSON body.
fn answer(status: StatusCode, reply: Option<Value>) -> http::Response<Full<Bytes>> {
    let body = reply.map_or_else(Bytes::new, |reply| Bytes::from(reply.to_string()));
    let json = !body.is_empty();
    let mut response = http::Response::new(Full::new(body));
    *response.status_mut() = status;
    if json {
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    response
}
