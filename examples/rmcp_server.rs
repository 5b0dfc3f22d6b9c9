//! An MCP server built on the official Rust SDK (`rmcp`, a dev-dependency), used as an
//! interop peer by `tests/interop_rmcp.rs`.
//!
//! Tools: `echo {text}`, `add {a, b}` (text plus structured `{"sum": ..}`),
//! `slow {ms}` (sends a log notification, sleeps, then says so; cancellable) and
//! `job {ms, ask?}`: with `--tasks` the server offers the Tasks extension
//! (`io.modelcontextprotocol/tasks`, rmcp's `TaskManager`) and `job` runs as a
//! task for a client that declares it (polled every 100 ms; with `ask`, an
//! elicitation during the task first; `tasks/cancel` ends it as `cancelled`);
//! otherwise it sleeps and answers directly.
//!
//! ```text
//! cargo run --example rmcp_server -- stdio [--tasks] [--legacy-only]
//! cargo run --example rmcp_server -- http 8123 [--tasks] [--legacy-only]   # http://127.0.0.1:8123/mcp
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
use rmcp::ErrorData as McpError;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock, CreateTaskResult,
    ElicitRequest, ElicitRequestParams, ElicitationSchema, GetTaskParams, GetTaskResult,
    Implementation, InputRequest, ProtocolVersion, ServerCapabilities, ServerConfig,
    UpdateTaskParams,
};
#[allow(deprecated)] // logging is deprecated from protocol 2026-07-28 on
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
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

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct JobArgs {
    /// How long the job runs, in milliseconds.
    ms: u64,
    /// Ask the client to confirm (an elicitation during the task) first.
    #[serde(default)]
    ask: bool,
}

#[derive(Clone)]
struct Interop {
    // Read by the code `#[tool_handler]` generates.
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
    /// Serve only the revisions that have the `initialize` handshake.
    legacy_only: bool,
    /// `--tasks`: the Tasks extension, its tasks shared by every instance (one
    /// per HTTP request or session).
    tasks: Option<TaskManager>,
}

#[tool_router]
impl Interop {
    fn new(legacy_only: bool, tasks: Option<TaskManager>) -> Self {
        Self {
            tool_router: Self::tool_router(),
            legacy_only,
            tasks,
        }
    }

    fn task_manager(&self) -> Result<&TaskManager, McpError> {
        self.tasks
            .as_ref()
            .ok_or_else(|| McpError::invalid_request("tasks are not served (--tasks)", None))
    }

    /// A task when the request declared the Tasks extension and `--tasks` is on;
    /// otherwise a sleep and a direct answer.
    #[tool(
        description = "Runs for `ms` milliseconds, as a task where the client declares the Tasks extension"
    )]
    async fn job(
        &self,
        Parameters(JobArgs { ms, ask }): Parameters<JobArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let declared = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        let Some(tasks) = self.tasks.as_ref().filter(|_| declared) else {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            let text = format!("job ran {ms} ms inline");
            return Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into());
        };
        let options = TaskOptions::new()
            .with_poll_interval_ms(100)
            .with_ttl_ms(60_000u64)
            .with_status_message("started");
        let task = tasks.spawn(options, move |context| {
            Box::pin(async move {
                if ask {
                    let schema = ElicitationSchema::builder()
                        .optional_bool("go", true)
                        .build()
                        .map_err(|e| TaskExit::Error(McpError::internal_error(e, None)))?;
                    let request = InputRequest::Elicitation(ElicitRequest::new(
                        ElicitRequestParams::FormElicitationParams {
                            meta: None,
                            message: "Go on with the job?".into(),
                            requested_schema: schema,
                        },
                    ));
                    let answer = context.request_input("confirm", request).await?;
                    if answer.get("action").and_then(|a| a.as_str()) != Some("accept") {
                        return Err(TaskExit::Error(McpError::invalid_request("declined", None)));
                    }
                }
                context.set_status_message("working");
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    () = context.cancelled() => return Err(TaskExit::Cancelled),
                }
                let text = format!("job done after {ms} ms");
                Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
            })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
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
        let capabilities = ServerCapabilities::builder().enable_tools();
        let capabilities = match self.tasks {
            Some(_) => capabilities.enable_tasks().build(),
            None => capabilities.build(),
        };
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            if self.legacy_only {
                "smthrs-interop-rmcp-legacy"
            } else {
                "smthrs-interop-rmcp"
            },
            "3.11.0",
        ))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let task = self.task_manager()?.get_task(&request.task_id)?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_manager()?
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.task_manager()?.cancel_task(&request.task_id)
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
    eprintln!(
        "usage: rmcp_server stdio [--tasks] [--legacy-only] | http <port> [--tasks] [--legacy-only]"
    );
    std::process::exit(2)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let legacy_only = args.iter().any(|a| a == "--legacy-only");
    let tasks = args.iter().any(|a| a == "--tasks").then(TaskManager::new);
    args.retain(|a| a != "--legacy-only" && a != "--tasks");
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["stdio"] => {
            let running = Interop::new(legacy_only, tasks)
                .serve(rmcp::transport::stdio())
                .await?;
            running.waiting().await?;
            Ok(())
        }
        ["http", port] => {
            let port: u16 = port.parse().unwrap_or_else(|_| usage());
            serve_http(port, legacy_only, tasks).await
        }
        _ => usage(),
    }
}

async fn serve_http(
    port: u16,
    legacy_only: bool,
    tasks: Option<TaskManager>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let service: StreamableHttpService<Interop, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(Interop::new(legacy_only, tasks.clone())),
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
