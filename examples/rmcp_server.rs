//! An MCP server built on the official Rust SDK (`rmcp`, a dev-dependency), used as an
//! interop peer by `tests/interop_rmcp.rs`.
//!
//! Tools: `echo {text}`, `add {a, b}` (text plus structured `{"sum": ..}`) and
//! `slow {ms}` (sends a log notification, sleeps, then says so; cancellable).
//!
//! ```text
//! cargo run --example rmcp_server -- stdio [--legacy-only]
//! cargo run --example rmcp_server -- http 8123 [--legacy-only]   # http://127.0.0.1:8123/mcp
//! ```
//!
//! Two eras, chosen by `ServerHandler::supported_protocol_versions` (rmcp 3.11):
//!
//! - default, **dual-era**: every version rmcp knows
//!   (`ProtocolVersion::KNOWN_VERSIONS`, 2024-11-05 up to 2026-07-28). It answers
//!   `server/discover` (a modern client) and still serves the legacy `initialize`
//!   handshake on the same process or endpoint;
//! - `--legacy-only`: `ProtocolVersion::known_up_to(2025-11-25)`. rmcp still routes
//!   `server/discover`, but rejects its 2026-07-28 `_meta` with -32022 naming only
//!   legacy versions, so a dual-era client falls back to `initialize`.
//!
//! Streamable HTTP is served by rmcp's `StreamableHttpService` (a tower service, default
//! config: legacy sessions on, modern requests served statelessly) on a plain hyper
//! server bound to 127.0.0.1 only.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ProtocolVersion, ServerCapabilities, ServerConfig};
#[allow(deprecated)] // logging is deprecated from protocol 2026-07-28 on
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
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
    /// Serve only the revisions that have the `initialize` handshake.
    legacy_only: bool,
}

#[tool_router]
impl Interop {
    fn new(legacy_only: bool) -> Self {
        Self {
            tool_router: Self::tool_router(),
            legacy_only,
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
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new(
                if self.legacy_only {
                    "smthrs-interop-rmcp-legacy"
                } else {
                    "smthrs-interop-rmcp"
                },
                "3.11.0",
            ),
        )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.legacy_only {
            Cow::Borrowed(ProtocolVersion::known_up_to(
                &ProtocolVersion::LATEST_WITH_INITIALIZE,
            ))
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: rmcp_server stdio [--legacy-only] | http <port> [--legacy-only]");
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let legacy_only = args.last().is_some_and(|a| a == "--legacy-only");
    if legacy_only {
        args.pop();
    }
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["stdio"] => {
            let running = Interop::new(legacy_only)
                .serve(rmcp::transport::stdio())
                .await?;
            running.waiting().await?;
            Ok(())
        }
        ["http", port] => {
            let port: u16 = port.parse().unwrap_or_else(|_| usage());
            serve_http(port, legacy_only).await
        }
        _ => usage(),
    }
}

async fn serve_http(
    port: u16,
    legacy_only: bool,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let service: StreamableHttpService<Interop, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(Interop::new(legacy_only)),
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
