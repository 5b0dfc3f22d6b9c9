//! The measured clients, each run in its own process (roles `client`, `connect`,
//! `flood`): the raw loop, this crate, and rmcp.
//!
//! - raw, stdio: tokio `BufReader`/`BufWriter` over the child's pipes; requests are
//!   formatted with `write!`, replies are recognised by a byte search, nothing is
//!   parsed. With N in flight it is one task that keeps N requests outstanding and
//!   flushes only when no reply is buffered.
//! - raw, HTTP: hyper-util's pooled client over loopback (keep-alive), the bodies
//!   collected and searched, nothing parsed.
//! - smthrs-mcp: `Client::call_tool` with a `Map` argument.
//! - rmcp: `Peer::call_tool` with `CallToolRequestParams` (child-process transport
//!   for stdio; the reqwest Streamable HTTP client with its defaults, except
//!   `max_concurrent_requests` raised to the in-flight count).

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::{ClientKind, Transport};

/// The text every call echoes.
pub const TEXT: &str = "hello from the benchmark harness";

type BoxResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// When a run stops: at a deadline (throughput), or after a number of calls
/// shared by all the run's tasks (instruction counts).
#[derive(Clone)]
pub enum Until {
    /// Start no call after this instant.
    Deadline(Instant),
    /// Start exactly this many calls in all.
    Calls(Arc<AtomicU64>),
}

impl Until {
    /// A budget of `calls` calls.
    pub fn calls(calls: u64) -> Until {
        Until::Calls(Arc::new(AtomicU64::new(calls)))
    }

    /// True when one more call may start (and takes it from the budget).
    fn more(&self) -> bool {
        match self {
            Until::Deadline(deadline) => Instant::now() < *deadline,
            Until::Calls(left) => left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
        }
    }
}

/// One connected client of any kind.
pub enum Connected {
    RawStdio(RawStdio),
    RawHttp(RawHttp),
    Ours(smthrs_mcp::Client),
    Rmcp(rmcp::service::RunningService<rmcp::RoleClient, ()>),
}

/// Spawns (stdio) or reaches (HTTP) the echo server and completes the handshake:
/// `initialize`, `notifications/initialized`, `tools/list`.
pub async fn connect(
    kind: ClientKind,
    transport: Transport,
    server: &ServerTarget,
) -> BoxResult<Connected> {
    Ok(match (kind, transport) {
        (ClientKind::Raw, Transport::Stdio) => {
            Connected::RawStdio(RawStdio::connect(&server.exe, &server.stdio_args).await?)
        }
        (ClientKind::Raw, Transport::Http | Transport::Sse) => {
            Connected::RawHttp(RawHttp::connect(server.url(transport)).await?)
        }
        (ClientKind::Ours, Transport::Stdio) => {
            let command = smthrs_mcp::StdioCommand::new(&server.exe).args(&server.stdio_args);
            Connected::Ours(smthrs_mcp::Client::builder("echo").connect(command).await?)
        }
        (ClientKind::Ours, Transport::Http | Transport::Sse) => {
            let http =
                smthrs_mcp::transport::http::HttpTransport::builder("echo", server.url(transport))
                    .build()?;
            Connected::Ours(smthrs_mcp::Client::builder("echo").connect(http).await?)
        }
        (ClientKind::Rmcp, Transport::Stdio) => {
            use rmcp::ServiceExt;
            let mut command = Command::new(&server.exe);
            command.args(&server.stdio_args);
            let child = rmcp::transport::TokioChildProcess::new(command)?;
            let service = ().serve(child).await?;
            service.peer().list_tools(None).await?;
            Connected::Rmcp(service)
        }
        (ClientKind::Rmcp, Transport::Http | Transport::Sse) => {
            use rmcp::ServiceExt;
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let config = StreamableHttpClientTransportConfig::with_uri(server.url(transport))
                .max_concurrent_requests(crate::MAX_INFLIGHT);
            let service = ().serve(StreamableHttpClientTransport::from_config(config)).await?;
            service.peer().list_tools(None).await?;
            Connected::Rmcp(service)
        }
    })
}

/// Where the echo server is.
#[derive(Clone)]
pub struct ServerTarget {
    /// The harness binary (it is the server too).
    pub exe: std::path::PathBuf,
    /// `serve-stdio` and its options.
    pub stdio_args: Vec<String>,
    /// `http://127.0.0.1:PORT` of the HTTP server, when one runs.
    pub http_base: Option<String>,
}

impl ServerTarget {
    fn url(&self, transport: Transport) -> String {
        let base = self.http_base.as_deref().unwrap_or("http://127.0.0.1:9");
        match transport {
            Transport::Sse => format!("{base}/sse"),
            _ => format!("{base}/mcp"),
        }
    }
}

fn echo_args() -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("text".into(), Value::String(TEXT.into()));
    args
}

impl Connected {
    /// Closes the session (kills or releases the server side).
    pub async fn close(self) {
        match self {
            Connected::RawStdio(raw) => raw.close().await,
            Connected::RawHttp(_) => {}
            Connected::Ours(client) => client.close().await,
            Connected::Rmcp(service) => {
                let _ = service.cancel().await;
            }
        }
    }

    /// Runs calls with `inflight` outstanding until `deadline`; returns how many
    /// completed.
    pub async fn run(&mut self, inflight: usize, until: Until) -> BoxResult<u64> {
        match self {
            Connected::RawStdio(raw) => raw.run(inflight, until).await,
            Connected::RawHttp(raw) => {
                let raw = raw.clone();
                spread(inflight, until, move || {
                    let raw = raw.clone();
                    async move { raw.call().await }
                })
                .await
            }
            Connected::Ours(client) => {
                let client = client.clone();
                let args = echo_args();
                spread(inflight, until, move || {
                    let client = client.clone();
                    let args = args.clone();
                    async move {
                        let result = client.call_tool("echo", args).await?;
                        if result.is_error || result.content.is_empty() {
                            return Err("tool failed".into());
                        }
                        Ok(())
                    }
                })
                .await
            }
            Connected::Rmcp(service) => {
                let peer = service.peer().clone();
                let args = echo_args();
                spread(inflight, until, move || {
                    let peer = peer.clone();
                    let args = args.clone();
                    async move {
                        let params =
                            rmcp::model::CallToolRequestParams::new("echo").with_arguments(args);
                        let result = peer.call_tool(params).await?;
                        if result.is_error == Some(true) || result.content.is_empty() {
                            return Err("tool failed".into());
                        }
                        Ok(())
                    }
                })
                .await
            }
        }
    }
}

/// Runs `call` in a loop until `until` says stop, in `inflight` concurrent tasks
/// (or in this task when `inflight` is 1).
async fn spread<F, Fut>(inflight: usize, until: Until, call: F) -> BoxResult<u64>
where
    F: Fn() -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = BoxResult<()>> + Send + 'static,
{
    if inflight <= 1 {
        let mut done = 0;
        while until.more() {
            call().await?;
            done += 1;
        }
        return Ok(done);
    }
    let mut tasks = Vec::with_capacity(inflight);
    for _ in 0..inflight {
        let call = call.clone();
        let until = until.clone();
        tasks.push(tokio::spawn(async move {
            let mut done = 0u64;
            while until.more() {
                call().await?;
                done += 1;
            }
            Ok::<u64, Box<dyn std::error::Error + Send + Sync>>(done)
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await??;
    }
    Ok(total)
}

// ---------------------------------------------------------------------------
// The raw stdio loop.

/// Plain buffered pipes to the echo server.
pub struct RawStdio {
    child: Child,
    reader: BufReader<ChildStdout>,
    writer: BufWriter<ChildStdin>,
    next_id: u64,
    line: Vec<u8>,
}

impl RawStdio {
    async fn connect(exe: &std::path::Path, args: &[String]) -> BoxResult<RawStdio> {
        let mut child = Command::new(exe)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut raw = RawStdio {
            child,
            reader: BufReader::with_capacity(64 * 1024, stdout),
            writer: BufWriter::with_capacity(64 * 1024, stdin),
            next_id: 0,
            line: Vec::with_capacity(1024),
        };
        raw.exchange(
            br#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        )
        .await?;
        raw.writer
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await?;
        raw.exchange(br#"{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{}}"#)
            .await?;
        Ok(raw)
    }

    async fn exchange(&mut self, frame: &[u8]) -> BoxResult<()> {
        self.writer.write_all(frame).await?;
        self.writer.write_all(b"\n").await?;
        self.writer.flush().await?;
        self.read_reply().await
    }

    async fn read_reply(&mut self) -> BoxResult<()> {
        self.line.clear();
        if self.reader.read_until(b'\n', &mut self.line).await? == 0 {
            return Err("server closed stdout".into());
        }
        if memchr::memmem::find(&self.line, b"\"result\"").is_none() {
            return Err("reply without a result".into());
        }
        Ok(())
    }

    /// Queues one `tools/call` (not flushed).
    async fn queue_call(&mut self) -> BoxResult<()> {
        let mut frame = Vec::with_capacity(160);
        write!(
            frame,
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{TEXT}"}}}}}}"#,
            self.next_id
        )?;
        frame.push(b'\n');
        self.next_id += 1;
        self.writer.write_all(&frame).await?;
        Ok(())
    }

    async fn call_once(&mut self) -> BoxResult<()> {
        self.queue_call().await?;
        self.writer.flush().await?;
        self.read_reply().await
    }

    async fn run(&mut self, inflight: usize, until: Until) -> BoxResult<u64> {
        let mut done = 0;
        if inflight <= 1 {
            while until.more() {
                self.call_once().await?;
                done += 1;
            }
            return Ok(done);
        }
        let mut outstanding = 0;
        while outstanding < inflight && until.more() {
            self.queue_call().await?;
            outstanding += 1;
        }
        while outstanding > 0 {
            if self.reader.buffer().is_empty() {
                self.writer.flush().await?;
            }
            self.read_reply().await?;
            done += 1;
            if until.more() {
                self.queue_call().await?;
            } else {
                outstanding -= 1;
            }
        }
        self.writer.flush().await?;
        Ok(done)
    }

    async fn close(mut self) {
        let _ = self.writer.shutdown().await;
        drop(self.writer);
        let _ = self.child.wait().await;
    }
}

// ---------------------------------------------------------------------------
// The raw HTTP loop.

/// Plain hyper over loopback.
#[derive(Clone)]
pub struct RawHttp {
    client: HyperClient<HttpConnector, Full<Bytes>>,
    url: http::Uri,
    next_id: Arc<AtomicU64>,
}

impl RawHttp {
    async fn connect(url: String) -> BoxResult<RawHttp> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = HyperClient::builder(TokioExecutor::new()).build(connector);
        let raw = RawHttp {
            client,
            url: url.parse()?,
            next_id: Arc::new(AtomicU64::new(0)),
        };
        raw.post(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        ), true)
        .await?;
        raw.post(
            Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            false,
        )
        .await?;
        raw.post(
            Bytes::from_static(
                br#"{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{}}"#,
            ),
            true,
        )
        .await?;
        Ok(raw)
    }

    async fn post(&self, body: Bytes, expect_result: bool) -> BoxResult<()> {
        let req = http::Request::post(self.url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .header("mcp-session-id", crate::server::SESSION_ID)
            .header("mcp-protocol-version", "2025-06-18")
            .body(Full::new(body))?;
        let response = self.client.request(req).await?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()).into());
        }
        let body = response.into_body().collect().await?.to_bytes();
        if expect_result && memchr::memmem::find(&body, b"\"result\"").is_none() {
            return Err("reply without a result".into());
        }
        Ok(())
    }

    async fn call(&self) -> BoxResult<()> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut frame = Vec::with_capacity(160);
        write!(
            frame,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{TEXT}"}}}}}}"#,
        )?;
        self.post(Bytes::from(frame), true).await
    }
}

/// Spawns the flooding server and connects; returns the error kind (or
/// `"timeout"` / `"connected"`) and the time it took.
pub async fn flood(kind: ClientKind, server: &ServerTarget, limit: Duration) -> (String, Duration) {
    let started = Instant::now();
    let outcome = tokio::time::timeout(limit, async {
        match kind {
            ClientKind::Ours => {
                let command = smthrs_mcp::StdioCommand::new(&server.exe).args(&server.stdio_args);
                match smthrs_mcp::Client::builder("flood").connect(command).await {
                    Ok(client) => {
                        client.close().await;
                        "connected".to_string()
                    }
                    Err(error) => error.kind().to_string(),
                }
            }
            _ => match connect(kind, Transport::Stdio, server).await {
                Ok(connected) => {
                    connected.close().await;
                    "connected".to_string()
                }
                Err(error) => format!("error: {error}"),
            },
        }
    })
    .await;
    let elapsed = started.elapsed();
    (
        outcome.unwrap_or_else(|_| format!("no outcome after {} s", limit.as_secs())),
        elapsed,
    )
}
