//! Add your own tower layers to the Streamable HTTP transport's stack.
//!
//! Two layers are added: a `MapRequestLayer` that sets a `User-Agent` header, and a
//! hand-written request counter. They sit above the egress policy, the bearer token
//! and the MCP headers (the first layer added is the outermost).
//!
//! The example starts a tiny MCP-ish server on 127.0.0.1 so that it runs on its own,
//! and drives the transport directly through `Transport::open`:
//!
//! ```text
//! cargo run --example http_custom_layer
//! ```

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::HeaderValue;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use smthrs_mcp::Limits;
use smthrs_mcp::diagnostics::Diagnostics;
use smthrs_mcp::transport::http::{HttpRequest, HttpTransport};
use smthrs_mcp::transport::{FrameMeta, InboundEvent, OutboundFrame, Transport, TransportContext};
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

    // The session engine normally does this; here we drive the transport by hand.
    let ctx = TransportContext {
        server: "demo".into(),
        limits: Limits::default(),
        diagnostics: Diagnostics::none(),
    };
    let mut connection = transport.open(ctx).await?;
    connection
        .sink
        .send(OutboundFrame {
            bytes: Bytes::from_static(br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#),
            meta: FrameMeta::default(),
            request: None,
        })
        .await?;
    match connection.source.next().await {
        InboundEvent::Frame(frame) => println!("reply: {}", String::from_utf8_lossy(&frame)),
        other => println!("unexpected: {other:?}"),
    }
    connection.shutdown.shutdown().await;
    println!(
        "requests through the custom layer: {}",
        count.load(Ordering::Relaxed)
    );
    Ok(())
}

/// A server that answers every POST with an empty JSON-RPC result, echoing the
/// User-Agent it saw on stderr.
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
                        let _ = req.into_body().collect().await;
                        eprintln!("server: request from {agent}");
                        let body = Full::new(Bytes::from_static(
                            br#"{"jsonrpc":"2.0","id":0,"result":{}}"#,
                        ));
                        let mut response = http::Response::new(body);
                        response.headers_mut().insert(
                            http::header::CONTENT_TYPE,
                            HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, Infallible>(response)
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
