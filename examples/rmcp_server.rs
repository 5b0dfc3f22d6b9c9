//! An MCP server built on the official Rust SDK (`rmcp`, a dev-dependency), used as an
//! interop peer by `tests/interop_rmcp.rs`.
//!
//! Tools: `echo {text}`, `add {a, b}` (text plus structured `{"sum": ..}`) and
//! `slow {ms}` (sends a log notification, sleeps, then says so; cancellable).
//!
//! ```text
//! cargo run --example rmcp_server -- stdio
//! cargo run --example rmcp_server -- http 8123    # http://127.0.0.1:8123/mcp
//! ```
//!
//! Streamable HTTP is served by rmcp's `StreamableHttpService` (a tower service) on a
//! plain hyper server bound to 127.0.0.1 only.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
#[allow(deprecated)] // logging is deprecated from protocol 2026-07-28 on
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{Json, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Sum {
    sum: i64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SlowArgs {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

#[derive(Debug, Clone)]
struct Interop {
    // Read by the code `#[tool_handler]` generates.
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Interop {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Returns the text unchanged")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Adds two integers; the sum also comes back as structured content")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Json<Sum> {
        Json(Sum { sum: a + b })
    }

    /// Sends a log notification first (while the call is pending: on the call's own
    /// SSE stream over HTTP), as real servers do.
    #[tool(description = "Sleeps for `ms` milliseconds, then says so")]
    async fn slow(
        &self,
        Parameters(SlowArgs { ms }): Parameters<SlowArgs>,
        context: RequestContext<RoleServer>,
    ) -> String {
        #[allow(deprecated)]
        let _ = context
            .peer
            .notify_logging_message(LoggingMessageNotificationParam::new(
                LoggingLevel::Info,
                serde_json::json!(format!("sleeping {ms} ms")),
            ))
            .await;
        tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("slept {ms} ms")
    }
}

#[tool_handler]
impl ServerHandler for Interop {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn usage() -> ! {
    eprintln!("usage: rmcp_server stdio | http <port>");
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["stdio"] => {
            let running = Interop::new().serve(rmcp::transport::stdio()).await?;
            running.waiting().await?;
            Ok(())
        }
        ["http", port] => {
            let port: u16 = port.parse().unwrap_or_else(|_| usage());
            serve_http(port).await
        }
        _ => usage(),
    }
}

async fn serve_http(port: u16) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let service: StreamableHttpService<Interop, LocalSessionManager> = StreamableHttpService::new(
        || Ok(Interop::new()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("rmcp_server: listening on http://127.0.0.1:{port}/mcp");
    loop {
        let (tcp, _) = listener.accept().await?;
        let service = service.clone();
        tokio::spawn(async move {
            let handler = hyper::service::service_fn(move |request| {
                let mut service = service.clone();
                async move {
                    // Every path is the MCP endpoint; /mcp is the one the tests use.
                    tower::Service::call(&mut service, request).await
                }
            });
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tcp), handler)
                .await;
        });
    }
}
