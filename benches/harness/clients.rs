//! The measured clients, each run in its own process (roles `client`, `connect`,
//! `flood`): the raw loop, this crate, and rmcp.
//!
//! - raw, stdio: tokio `BufReader`/`BufWriter` over the child's pipes; requests are
//!   formatted with `write!`, replies are recognised by a byte search, nothing is
//!   parsed. With N in flight it is one task that keeps N requests outstanding and
//!   flushes only when no reply is buffered.
//! - raw, HTTP: hyper-util's pooled client over loopback (keep-alive), the bodies
//!   collected and searched, nothing parsed.
//!   With more than [`MAX_INFLIGHT`](crate::MAX_INFLIGHT) in flight (the cost
//!   curve) the writing and the reading are two futures joined in that task, so
//!   that the requests not yet written never wait on replies not yet read.
//! - raw, 2026-07-28 (`--era modern`): the same loops sending what a modern client
//!   must: `server/discover` and `tools/list` instead of the handshake, `_meta`
//!   (protocol version, capabilities, client info) in every request's `params`;
//!   over HTTP `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, no session.
//! - smthrs-mcp: `Client::call_tool` with a `Map` argument, with
//!   `ProtocolMode::Legacy`, `Modern` or `Auto` (`--era`); the era the session
//!   ends up in is checked. `Limits` are the defaults unless the run needs more
//!   (the curve: `maxTools`, `maxFrameBytes`, `queueCapacity`; see [`limits_for`]).
//! - rmcp: `Peer::call_tool` with `CallToolRequestParams` (child-process transport
//!   for stdio; the reqwest Streamable HTTP client with its defaults, except
//!   `max_concurrent_requests` raised to the in-flight count); legacy `serve`, or
//!   `serve_with_lifecycle` with `Discover` at 2026-07-28 for `--era modern`.

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

use crate::{ClientKind, EraChoice, MAX_INFLIGHT, Transport};
use smthrs_mcp_testkit::echo::Shape;

/// The text every call echoes.
pub const TEXT: &str = "hello from the benchmark harness";

/// The `_meta` every request of the raw 2026-07-28 loop carries (the three keys a
/// modern client must or should send, as this crate sends them).
const RAW_META: &str = r#"{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;

/// How a client connects: the era it speaks, the server's shape and the most
/// calls it will have in flight.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub era: EraChoice,
    pub shape: Shape,
    pub inflight: usize,
}

/// The limits this crate's client runs with: the defaults, raised only where the
/// run needs more (the curve's big catalogs, big results, many in flight).
pub fn limits_for(setup: &Setup) -> smthrs_mcp::Limits {
    let mut limits = smthrs_mcp::Limits::default();
    let tools = setup.shape.tools as u64;
    limits.max_tools = limits.max_tools.max(tools);
    // A generated tool is about 350 bytes; the frame is the one page of them.
    let frame = (tools * 512).max(setup.shape.result_bytes.unwrap_or(0) as u64 + 4096);
    limits.max_frame_bytes = limits.max_frame_bytes.max(frame.next_power_of_two());
    limits.queue_capacity = limits.queue_capacity.max(setup.inflight as u64);
    limits
}

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
/// legacy `initialize`, `notifications/initialized`, `tools/list`; 2026-07-28
/// `server/discover`, `tools/list`.
pub async fn connect(
    kind: ClientKind,
    transport: Transport,
    server: &ServerTarget,
    setup: &Setup,
) -> BoxResult<Connected> {
    let modern = match (kind, setup.era) {
        (_, EraChoice::Legacy) => false,
        (_, EraChoice::Modern) => true,
        (ClientKind::Ours, EraChoice::Auto) => false,
        (_, EraChoice::Auto) => return Err("only smthrs-mcp has --era auto".into()),
    };
    Ok(match (kind, transport) {
        (ClientKind::Raw, Transport::Stdio) => {
            Connected::RawStdio(RawStdio::connect(&server.exe, &server.stdio_args, modern).await?)
        }
        (ClientKind::Raw, Transport::Http | Transport::Sse) => {
            Connected::RawHttp(RawHttp::connect(server.url(transport), modern).await?)
        }
        (ClientKind::Ours, Transport::Stdio) => {
            let command = smthrs_mcp::StdioCommand::new(&server.exe).args(&server.stdio_args);
            Connected::Ours(ours(setup, "echo".into(), command).await?)
        }
        (ClientKind::Ours, Transport::Http | Transport::Sse) => {
            let http =
                smthrs_mcp::transport::http::HttpTransport::builder("echo", server.url(transport))
                    .build()?;
            Connected::Ours(ours(setup, "echo".into(), http).await?)
        }
        (ClientKind::Rmcp, Transport::Stdio) => {
            let mut command = Command::new(&server.exe);
            command.args(&server.stdio_args);
            let child = rmcp::transport::TokioChildProcess::new(command)?;
            Connected::Rmcp(rmcp_serve(child, modern).await?)
        }
        (ClientKind::Rmcp, Transport::Http | Transport::Sse) => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            let config = StreamableHttpClientTransportConfig::with_uri(server.url(transport))
                .max_concurrent_requests(setup.inflight.max(MAX_INFLIGHT));
            let transport = StreamableHttpClientTransport::from_config(config);
            Connected::Rmcp(rmcp_serve(transport, modern).await?)
        }
    })
}

/// `count` stdio servers connected at once, as the CLI's `tools` does it: every
/// connect in parallel, then (this crate) each catalog projected into flows and
/// the flows composed into one catalog, then every session closed at once.
/// Returns the number of tools seen (the raw loop and rmcp: as listed).
pub async fn connect_many(
    kind: ClientKind,
    server: &ServerTarget,
    setup: &Setup,
    count: usize,
) -> BoxResult<usize> {
    use futures_util::future::{join_all, try_join_all};
    if kind != ClientKind::Ours {
        let connects = (0..count).map(|_| connect(kind, Transport::Stdio, server, setup));
        let all = try_join_all(connects).await?;
        join_all(all.into_iter().map(Connected::close)).await;
        return Ok(count * setup.shape.tools.max(1));
    }
    // Each server its own name, as in a server file: the flows are
    // `mcp/echo-N/<tool>`.
    let connects = (0..count).map(|i| {
        let command = smthrs_mcp::StdioCommand::new(&server.exe).args(&server.stdio_args);
        ours(setup, format!("echo-{i}"), command)
    });
    let clients = try_join_all(connects).await?;
    let options = smthrs_mcp::flows::ProjectionOptions::default();
    let sources = clients
        .iter()
        .map(|client| smthrs_mcp::flows::source_from_client(client, &options))
        .collect::<Result<Vec<_>, _>>()?;
    let tools = smthrs_mcp::flows::compose(sources)?.declarations().count();
    join_all(clients.iter().map(smthrs_mcp::Client::close)).await;
    Ok(tools)
}

/// This crate's client in the era `setup` asks for; fails when the session ends
/// up in another.
async fn ours(
    setup: &Setup,
    name: String,
    transport: impl smthrs_mcp::Transport,
) -> BoxResult<smthrs_mcp::Client> {
    use smthrs_mcp::{Era, ProtocolMode};
    let (mode, expected) = match setup.era {
        EraChoice::Legacy => (ProtocolMode::Legacy, Era::Legacy),
        EraChoice::Modern => (ProtocolMode::Modern, Era::Modern),
        EraChoice::Auto if setup.shape.legacy_only => (ProtocolMode::Auto, Era::Legacy),
        EraChoice::Auto => (ProtocolMode::Auto, Era::Modern),
    };
    let client = smthrs_mcp::Client::builder(name)
        .protocol(mode)
        .limits(limits_for(setup))
        .connect(transport)
        .await?;
    let era = client.era();
    if era != expected {
        client.close().await;
        let wanted = setup.era.name();
        return Err(format!("--era {wanted}: the session speaks {era:?}, not {expected:?}").into());
    }
    Ok(client)
}

/// rmcp's client on `transport`, legacy or 2026-07-28, catalog listed.
async fn rmcp_serve<T, E, A>(
    transport: T,
    modern: bool,
) -> BoxResult<rmcp::service::RunningService<rmcp::RoleClient, ()>>
where
    T: rmcp::transport::IntoTransport<rmcp::RoleClient, E, A> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    use rmcp::ServiceExt;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let service = if modern {
        let preferred_versions = vec![rmcp::model::ProtocolVersion::V_2026_07_28];
        ().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover { preferred_versions },
        )
        .await?
    } else {
        ().serve(transport).await?
    };
    service.peer().list_tools(None).await?;
    Ok(service)
}

/// Where the echo server is.
#[derive(Clone)]
pub struct ServerTarget {
    /// The test kit's server binary (`crate::echo_server`).
    pub exe: std::path::PathBuf,
    /// `echo serve-stdio` and its options.
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
    modern: bool,
}

impl RawStdio {
    async fn connect(exe: &std::path::Path, args: &[String], modern: bool) -> BoxResult<RawStdio> {
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
            modern,
        };
        if modern {
            let discover = format!(
                r#"{{"jsonrpc":"2.0","id":"discover","method":"server/discover","params":{{"_meta":{RAW_META}}}}}"#
            );
            raw.exchange(discover.as_bytes()).await?;
            let list = format!(
                r#"{{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{{"_meta":{RAW_META}}}}}"#
            );
            raw.exchange(list.as_bytes()).await?;
            return Ok(raw);
        }
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
        read_reply(&mut self.reader, &mut self.line).await
    }

    /// Queues one `tools/call` (not flushed).
    async fn queue_call(&mut self) -> BoxResult<()> {
        queue_call(&mut self.writer, self.next_id, self.modern).await?;
        self.next_id += 1;
        Ok(())
    }

    async fn call_once(&mut self) -> BoxResult<()> {
        self.queue_call().await?;
        self.writer.flush().await?;
        read_reply(&mut self.reader, &mut self.line).await
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
        if inflight > MAX_INFLIGHT {
            return self.run_split(inflight, until).await;
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
            read_reply(&mut self.reader, &mut self.line).await?;
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

    /// `inflight` outstanding with the writing and the reading as two futures of
    /// this task: with a thousand requests in flight neither side's pipe may wait
    /// for the other. The writer flushes whenever it runs out of credits.
    async fn run_split(&mut self, inflight: usize, until: Until) -> BoxResult<u64> {
        use std::cell::Cell;
        let credits = tokio::sync::Semaphore::new(inflight);
        let progress = tokio::sync::Notify::new();
        let sent = Cell::new(0u64);
        let finished = Cell::new(false);
        let (writer, modern, first_id) = (&mut self.writer, self.modern, self.next_id);
        let write = async {
            while until.more() {
                match credits.try_acquire() {
                    Ok(permit) => permit.forget(),
                    Err(_) => {
                        writer.flush().await?;
                        credits.acquire().await?.forget();
                    }
                }
                queue_call(writer, first_id + sent.get(), modern).await?;
                sent.set(sent.get() + 1);
                progress.notify_one();
            }
            writer.flush().await?;
            finished.set(true);
            progress.notify_one();
            Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
        };
        let (reader, line) = (&mut self.reader, &mut self.line);
        let read = async {
            let mut done = 0u64;
            loop {
                while done >= sent.get() {
                    if finished.get() {
                        return Ok::<u64, Box<dyn std::error::Error + Send + Sync>>(done);
                    }
                    progress.notified().await;
                }
                read_reply(reader, line).await?;
                done += 1;
                credits.add_permits(1);
            }
        };
        let (written, done) = tokio::join!(write, read);
        written?;
        self.next_id += sent.get();
        done
    }

    async fn close(mut self) {
        let _ = self.writer.shutdown().await;
        drop(self.writer);
        let _ = self.child.wait().await;
    }
}

/// Reads one reply line and checks it carries a result.
async fn read_reply(reader: &mut BufReader<ChildStdout>, line: &mut Vec<u8>) -> BoxResult<()> {
    line.clear();
    if reader.read_until(b'\n', line).await? == 0 {
        return Err("server closed stdout".into());
    }
    if memchr::memmem::find(line, b"\"result\"").is_none() {
        return Err("reply without a result".into());
    }
    Ok(())
}

/// Queues one `tools/call` with this id (not flushed).
async fn queue_call(writer: &mut BufWriter<ChildStdin>, id: u64, modern: bool) -> BoxResult<()> {
    let mut frame = Vec::with_capacity(if modern { 320 } else { 160 });
    call_frame(&mut frame, id, modern)?;
    frame.push(b'\n');
    writer.write_all(&frame).await?;
    Ok(())
}

/// One `tools/call` of `echo` (with `_meta` in the modern era).
fn call_frame(frame: &mut Vec<u8>, id: u64, modern: bool) -> std::io::Result<()> {
    if modern {
        write!(
            frame,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"_meta":{RAW_META},"arguments":{{"text":"{TEXT}"}},"name":"echo"}}}}"#
        )
    } else {
        write!(
            frame,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{TEXT}"}}}}}}"#
        )
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
    modern: bool,
}

impl RawHttp {
    async fn connect(url: String, modern: bool) -> BoxResult<RawHttp> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = HyperClient::builder(TokioExecutor::new()).build(connector);
        let raw = RawHttp {
            client,
            url: url.parse()?,
            next_id: Arc::new(AtomicU64::new(0)),
            modern,
        };
        if modern {
            let discover = format!(
                r#"{{"jsonrpc":"2.0","id":"discover","method":"server/discover","params":{{"_meta":{RAW_META}}}}}"#
            );
            raw.post(Bytes::from(discover), Some(("server/discover", None)))
                .await?;
            let list = format!(
                r#"{{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{{"_meta":{RAW_META}}}}}"#
            );
            raw.post(Bytes::from(list), Some(("tools/list", None)))
                .await?;
            return Ok(raw);
        }
        raw.post(Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#,
        ), Some(("initialize", None)))
        .await?;
        raw.post(
            Bytes::from_static(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None,
        )
        .await?;
        raw.post(
            Bytes::from_static(
                br#"{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{}}"#,
            ),
            Some(("tools/list", None)),
        )
        .await?;
        Ok(raw)
    }

    /// POSTs `body`; `request` is the method and tool name of a request (whose
    /// reply must carry a result), `None` for a notification.
    async fn post(&self, body: Bytes, request: Option<(&str, Option<&str>)>) -> BoxResult<()> {
        let mut req = http::Request::post(self.url.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, text/event-stream");
        if self.modern {
            req = req.header("mcp-protocol-version", smthrs_mcp_testkit::echo::MODERN);
            if let Some((method, name)) = request {
                req = req.header("mcp-method", method);
                if let Some(name) = name {
                    req = req.header("mcp-name", name);
                }
            }
        } else {
            req = req
                .header("mcp-session-id", smthrs_mcp_testkit::echo::SESSION_ID)
                .header("mcp-protocol-version", "2025-06-18");
        }
        let response = self.client.request(req.body(Full::new(body))?).await?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()).into());
        }
        let body = response.into_body().collect().await?.to_bytes();
        if request.is_some() && memchr::memmem::find(&body, b"\"result\"").is_none() {
            return Err("reply without a result".into());
        }
        Ok(())
    }

    async fn call(&self) -> BoxResult<()> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut frame = Vec::with_capacity(if self.modern { 320 } else { 160 });
        call_frame(&mut frame, id, self.modern)?;
        self.post(Bytes::from(frame), Some(("tools/call", Some("echo"))))
            .await
    }
}

/// Spawns the flooding server and connects; returns the error kind (or
/// `"timeout"` / `"connected"`) and the time it took.
pub async fn flood(
    kind: ClientKind,
    server: &ServerTarget,
    setup: &Setup,
    limit: Duration,
) -> (String, Duration) {
    let started = Instant::now();
    let outcome = tokio::time::timeout(limit, async {
        match kind {
            ClientKind::Ours => {
                let command = smthrs_mcp::StdioCommand::new(&server.exe).args(&server.stdio_args);
                let builder =
                    smthrs_mcp::Client::builder("flood").protocol(smthrs_mcp::ProtocolMode::Legacy);
                match builder.connect(command).await {
                    Ok(client) => {
                        client.close().await;
                        "connected".to_string()
                    }
                    Err(error) => error.kind().to_string(),
                }
            }
            _ => match connect(kind, Transport::Stdio, server, setup).await {
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
