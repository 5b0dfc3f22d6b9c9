//! The scripted server's Streamable HTTP mode (`--http OPTIONS`).
//!
//! [`run`] binds a real hyper HTTP/1.1 server (on `--listen ADDR`, else
//! `127.0.0.1:0`), prints the bound address as its first stdout line, and serves
//! one endpoint, `/mcp`, until its stdin closes (the test holding it ended),
//! then kills its sessions and exits. Every MCP session runs in a child
//! process: this same binary in its stdio mode, with the same scenario arguments
//! (stdin and stdout piped, stderr discarded). A process per session is what keeps
//! the scenarios' process-level behaviour real over HTTP: a server that exits
//! mid-call, closes its stdout or hangs is killed and reaped like any stdio
//! server. The server translates between Streamable HTTP exchanges and the child's
//! stdin/stdout lines:
//!
//! * `POST /mcp` carries one JSON-RPC message. An `initialize` request without a
//!   known `Mcp-Session-Id` spawns a new child (a new session); anything else is
//!   routed by `Mcp-Session-Id` (missing: `400`, unknown or ended: `404`). The
//!   message is written to the child's stdin as one line. A notification or a
//!   response is answered `202` without a body. A request is answered with a
//!   `text/event-stream` carrying child stdout lines as events (`id: N`,
//!   `data: LINE`) until the line that answers its id (an object with `jsonrpc`,
//!   that `id`, and `result` or `error`), then the stream ends; or,
//!   with [`BridgeOptions::sse`] off, with `application/json` holding that answer
//!   alone.
//! * `GET /mcp` opens the standalone server-to-client stream (`405` unless
//!   [`BridgeOptions::get_stream`]; `409` when one is already open).
//! * `DELETE /mcp` closes the session's child's stdin, gives it a second to exit, kills
//!   it if it has not, and answers `200` (`405` when
//!   [`BridgeOptions::session_ids`] is off).
//!
//! One task per child reads stdout and routes each line: the answer to an open
//! request goes to that request's stream (and closes it); any other line goes to
//! the oldest open request stream, else to the GET stream, else into a bounded
//! buffer that the next opened stream receives first. When stdout ends (the child
//! exited or closed it) every open stream ends without an answer, the child is
//! killed, and the session is over: later requests for it get `404`.
//!
//! A line longer than [`MAX_LINE_BYTES`] is not buffered whole: its first
//! [`MAX_LINE_BYTES`] bytes and then every further chunk are streamed as one
//! growing event to the stream the routing rule picks (never as an answer), so a
//! client's own frame limit is what stops a flood, as over stdio.
//!
//! Limitations: JSON mode cannot deliver server-to-client requests (a `ping`
//! during a call is dropped, and the child waits for a pong that never comes), so
//! JSON mode is for scenarios without server requests; when the child dies before
//! answering a JSON-mode request the connection is dropped without a response.
//! There is no resumption: `Last-Event-ID` is ignored and nothing is replayed.
//! A line routed to a stream whose client has just gone may be lost with it. A
//! POST whose line cannot be written because the child closed its stdin gets
//! `500`. With session ids off, each `initialize` starts a new child and earlier
//! children stay alive (unreachable) until the server ends.
//!
//! # The modern era (2026-07-28)
//!
//! [`BridgeOptions::era`] picks the generation served. [`HttpEra::Legacy`] (the
//! default) is everything above, unchanged. [`HttpEra::Modern`] serves the
//! stateless revision (run it over an `"era": "modern"` scenario):
//!
//! * One long-lived child serves the whole endpoint; there are no sessions. It is
//!   spawned on the first POST and respawned by the first POST after it exited
//!   (a restart is transparent to a modern client). Each POST is an independent
//!   request routed by its id. No `Mcp-Session-Id` is issued, and one sent by the
//!   client is ignored (recorded only) — unless
//!   [`ModernOptions::send_session_id`] is on, which adds one anyway to every
//!   response, as some real servers do, so a test can assert the client ignores it.
//! * `GET` and `DELETE` are `405` with `Allow: POST`. `Last-Event-ID` is ignored.
//! * Header checks on every request POST before the child sees it (each can be
//!   switched off in [`ModernOptions`]; `initialize` is exempt so the child can
//!   refuse it with `-32022`): `MCP-Protocol-Version` missing, or different from
//!   `params._meta["io.modelcontextprotocol/protocolVersion"]`; `Mcp-Method`
//!   missing or different from `method`; `Mcp-Name` missing or different from
//!   `params.name` (`tools/call`, `prompts/get`), `params.uri`
//!   (`resources/read`) or `params.taskId` (`tasks/get`, `tasks/update`,
//!   `tasks/cancel`); and `Mcp-Param-{Name}` for `tools/call`, checked against
//!   the `x-mcp-header` annotations of the tool as learnt from the `tools/list`
//!   answers that went through the bridge (a tool never listed is not checked): an
//!   annotated argument that is present needs its header with the value (string
//!   as is, integer in decimal, `true`/`false`), a `null` or absent one none, and
//!   no other `Mcp-Param-*` header may appear. Values of the form
//!   `=?base64?...?=` are decoded first. Any failure is `400` with a JSON-RPC body
//!   `{"error": {"code": -32020, "message": "Header mismatch: <Header>", "data":
//!   {"header", "expected", "received"}}}` carrying the request id.
//! * The answer's JSON-RPC error code picks the status
//!   ([`ModernOptions::map_error_status`]): `-32022`, `-32021`, `-32020`, `-32602`
//!   → `400`, `-32601` → `404`, each with the JSON-RPC answer as an
//!   `application/json` body; anything else is `200`. An error whose
//!   `data["http-bridge/status"]` is a status code gets that status instead
//!   (`429`, `503`: a throttled request), and `data["http-bridge/retryAfter"]`
//!   (a string) becomes its `Retry-After` (SSE mode). In SSE mode the bridge waits
//!   up to [`ModernOptions::status_wait`] for the child's first line for that
//!   request: an answer within it is mapped, otherwise the SSE stream starts (`200`)
//!   and a later error travels in-band. In JSON mode the answer is always mapped.
//! * A notification or response POST is written to the child and answered `202`.
//! * Lines that answer no open request (late answers, stray notifications while
//!   nothing is open) are dropped instead of buffered for the next stream.
//! * Cancel on HTTP is closing the stream: when a client drops a request's
//!   response before the answer arrived, the bridge writes
//!   `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":<id>,
//!   "reason":"http-bridge: the client closed the stream"}}` to the child (so a
//!   `honor_cancel` scenario and its record file see it; switch off with
//!   [`ModernOptions::cancel_on_disconnect`]) and lists the id in
//!   [`BridgeState::aborted`].
//!
//! [`HttpEra::Dual`] serves both: an `initialize` POST, and any POST carrying an
//! `Mcp-Session-Id`, take the legacy path (one child per session, as above; run it
//! over an `"era": "dual"` scenario so those children serve `initialize`); every
//! other POST is modern and goes to the long-lived modern child. `GET`/`DELETE`
//! with a session id are legacy, without one `405`.
//!
//! [`BridgeOptions::legacy_probe`] (legacy era only) makes the endpoint answer a
//! `server/discover` POST that carries no session id the way real legacy HTTP
//! servers do ([`LegacyProbe`]): a plain-text `400` (stateful Go), `400` with a
//! JSON-RPC `-32000` and `id: null` (TypeScript v1), `200` with `-32601` (a
//! stateless legacy server), a bare `404` or `405` (HTTP+SSE era servers), or
//! `500`. The default forwards it like any other request, which today means
//! `400 missing Mcp-Session-Id` (text) with session ids on.
//!
//! Every response's status is kept in [`RecordedRequest::status`]. `GET
//! /testkit/state` ([`STATE_PATH`]) answers the [`BridgeState`] (the recorded
//! requests, the children spawned and alive, the aborted ids, the learnt
//! headers) and is not recorded itself.

mod modern;

use smthrs_mcp_testkit::bridge::{
    BridgeOptions, BridgeState, ENDPOINT, HttpEra, RecordedRequest, STATE_PATH, parse_json,
};
use smthrs_mcp_testkit::http_server::{self, Body, full};

use std::collections::{HashMap, VecDeque};
use std::error::Error as StdError;
use std::ffi::OsString;
use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

/// Longest child stdout line routed as a whole; longer lines are streamed.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Most lines kept for a stream that is not open yet (the oldest are dropped).
pub const MAX_BUFFERED_LINES: usize = 1000;

/// Largest request body accepted (larger: `413`).
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// The session header (lowercase, as recorded).
pub const SESSION_HEADER: &str = "mcp-session-id";

/// Pieces queued per open stream before the stdout reader waits for its client.
const STREAM_CAPACITY: usize = 64;

/// Lines queued for a child's stdin before a POST waits.
const WRITE_QUEUE: usize = 1024;

/// Read buffer of the stdout reader (also the chunk size of a streamed long line).
const READ_CHUNK: usize = 64 * 1024;

/// How long `DELETE` waits for a killed child to be reaped.
const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long `DELETE` lets a child whose stdin it closed exit by itself.
const STDIN_CLOSE_GRACE: Duration = Duration::from_secs(1);

/// How long `--listen ADDR` keeps trying to bind an address a stopped server
/// released a moment ago.
const REBIND_WAIT: Duration = Duration::from_secs(10);

/// Serves HTTP on `listen` (else `127.0.0.1:0`) until stdin closes, each
/// session running this binary with `args`; prints the bound address first.
/// Returns only when the server cannot start, saying why.
pub fn run(
    listen: Option<SocketAddr>,
    options: BridgeOptions,
    args: Vec<OsString>,
) -> Result<(), String> {
    let program =
        std::env::current_exe().map_err(|error| format!("cannot locate this binary: {error}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the runtime: {error}"))?;
    runtime.block_on(async move {
        let listener = bind(listen).await?;
        let addr = listener
            .local_addr()
            .map_err(|error| format!("no local address: {error}"))?;
        use std::io::Write as _;
        let mut stdout = io::stdout();
        writeln!(stdout, "{addr}")
            .and_then(|()| stdout.flush())
            .map_err(|error| format!("cannot print the address: {error}"))?;
        let inner = Arc::new(Inner {
            program: program.into_os_string(),
            args,
            options,
            modern_child: Mutex::new(None),
            tool_headers: Arc::new(Mutex::new(HashMap::new())),
            aborted: Mutex::new(Vec::new()),
            modern_session_id: new_session_id(),
            sessions: Mutex::new(HashMap::new()),
            current: Mutex::new(None),
            children: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
        });
        end_with_stdin(inner.clone());
        serve(listener, inner).await;
        Ok(())
    })
}

/// Reads stdin on a thread of its own until it closes (whoever started the
/// server has gone, however it ended), then kills every session child and exits.
fn end_with_stdin(inner: Arc<Inner>) {
    std::thread::spawn(move || {
        use std::io::Read as _;
        let mut sink = [0u8; 256];
        while matches!(io::stdin().read(&mut sink), Ok(n) if n > 0) {}
        for child in lock(&inner.children).iter() {
            let _ = lock(child).start_kill();
        }
        std::process::exit(0)
    });
}

/// Binds `listen`, retrying for [`REBIND_WAIT`] while a stopped server's
/// listener is released; or `127.0.0.1:0`.
async fn bind(listen: Option<SocketAddr>) -> Result<TcpListener, String> {
    let Some(addr) = listen else {
        return TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| format!("cannot bind 127.0.0.1:0: {error}"));
    };
    let deadline = tokio::time::Instant::now() + REBIND_WAIT;
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return Ok(listener),
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => return Err(format!("cannot bind {addr}: {error}")),
        }
    }
}

/// What the server has seen and run so far.
fn state(inner: &Inner) -> BridgeState {
    let children = lock(&inner.children);
    BridgeState {
        requests: lock(&inner.requests).clone(),
        children_alive: children
            .iter()
            .filter(|child| matches!(lock(child).try_wait(), Ok(None)))
            .count(),
        children_spawned: children.len(),
        aborted: lock(&inner.aborted).clone(),
        learnt_headers: lock(&inner.tool_headers).clone(),
    }
}

/// `GET /testkit/state`: the [`BridgeState`] as JSON.
fn state_response(inner: &Inner) -> Response<Body> {
    let body = serde_json::to_vec(&state(inner)).expect("the state serializes");
    full(200, "application/json", body)
}

/// Locks a mutex, ignoring poisoning (a panicking test must not cascade).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// State shared by the server and its connections.
struct Inner {
    program: OsString,
    args: Vec<OsString>,
    options: BridgeOptions,
    /// Live sessions by id (session ids on).
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The most recent session (session ids off).
    current: Mutex<Option<Arc<Session>>>,
    /// Every child ever spawned.
    children: Mutex<Vec<Arc<Mutex<Child>>>>,
    requests: Mutex<Vec<RecordedRequest>>,
    /// The long-lived child of the modern era.
    modern_child: Mutex<Option<Arc<Session>>>,
    /// `x-mcp-header` annotations learnt from `tools/list` answers.
    tool_headers: Arc<Mutex<modern::ToolHeaders>>,
    /// Modern requests whose client went away before the answer.
    aborted: Mutex<Vec<Value>>,
    /// The id sent with [`ModernOptions::send_session_id`].
    modern_session_id: String,
}

/// An error that makes hyper drop the connection without a response.
type DropConnection = Box<dyn StdError + Send + Sync>;

/// One unit delivered to an open stream.
#[derive(Debug)]
enum Piece {
    /// A whole stdout line (without newline) and its event id.
    Line(u64, String),
    /// The first bytes of an over-long line and its event id.
    LongStart(u64, Bytes),
    /// More bytes of the over-long line.
    LongMore(Bytes),
    /// The over-long line ended.
    LongEnd,
}

/// Where a response reads its pieces from: the stream's receiver, or (modern
/// era) a guard around it that reports an abandoned request when dropped.
trait PieceSource: Send + 'static {
    /// Polls for the next piece; `None` once the router dropped the stream.
    fn poll_piece(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Option<Piece>>;
}

impl PieceSource for mpsc::Receiver<Piece> {
    fn poll_piece(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Option<Piece>> {
        self.poll_recv(cx)
    }
}

/// An open stream the stdout reader can route to.
struct OpenStream {
    key: u64,
    /// The request id it waits for (`None` for the GET stream).
    id: Option<Value>,
    tx: mpsc::Sender<Piece>,
}

/// The routing table of one session.
#[derive(Default)]
struct Routes {
    /// Open request streams, oldest first.
    requests: Vec<OpenStream>,
    get: Option<OpenStream>,
    /// Lines that found no stream, for the next one to open.
    buffered: VecDeque<String>,
    next_key: u64,
}

impl Routes {
    fn remove(&mut self, key: u64) {
        self.requests.retain(|stream| stream.key != key);
        if self.get.as_ref().is_some_and(|stream| stream.key == key) {
            self.get = None;
        }
    }
}

/// Lines for a child's stdin, each with the ack of its write.
type StdinQueue = mpsc::Sender<(Bytes, oneshot::Sender<bool>)>;

/// One MCP session: a child process and its routing.
struct Session {
    id: String,
    child: Arc<Mutex<Child>>,
    /// `None` once `DELETE` closed the child's stdin.
    stdin: Mutex<Option<StdinQueue>>,
    routes: Mutex<Routes>,
    /// Set once stdout ended or the session was deleted.
    closed: AtomicBool,
    next_event_id: AtomicU64,
    /// Keep lines no stream takes for the next stream (legacy); drop them (modern).
    buffer_unrouted: bool,
    /// Modern: where `x-mcp-header` annotations of listed tools are learnt.
    learn: Option<Arc<Mutex<modern::ToolHeaders>>>,
}

impl Session {
    /// Spawns the child and its stdin writer and stdout reader tasks; a
    /// `modern` child drops unrouted lines and learns tool annotations.
    fn spawn(inner: &Inner, modern: bool) -> io::Result<Arc<Session>> {
        let mut child = Command::new(&inner.program)
            .args(&inner.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let child = Arc::new(Mutex::new(child));
        let (tx, rx) = mpsc::channel(WRITE_QUEUE);
        let session = Arc::new(Session {
            id: new_session_id(),
            child: child.clone(),
            stdin: Mutex::new(Some(tx)),
            routes: Mutex::new(Routes::default()),
            closed: AtomicBool::new(false),
            next_event_id: AtomicU64::new(1),
            buffer_unrouted: !modern,
            learn: modern.then(|| inner.tool_headers.clone()),
        });
        lock(&inner.children).push(child);
        tokio::spawn(write_stdin(stdin, rx));
        tokio::spawn(read_stdout(session.clone(), stdout));
        Ok(session)
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    fn event_id(&self) -> u64 {
        self.next_event_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Writes one line (newline included) to the child; false when stdin is gone.
    async fn write(&self, line: Bytes) -> bool {
        let (ack, done) = oneshot::channel();
        let Some(stdin) = lock(&self.stdin).clone() else {
            return false;
        };
        if stdin.send((line, ack)).await.is_err() {
            return false;
        }
        done.await.unwrap_or(false)
    }

    /// Registers a stream (a request's when `id` is set, else the GET stream) and
    /// returns its key, its receiver and the buffered lines it receives first.
    /// `None` when a GET stream is already open.
    fn open_stream(&self, id: Option<Value>) -> Option<(u64, mpsc::Receiver<Piece>, Vec<Piece>)> {
        let mut routes = lock(&self.routes);
        let is_get = id.is_none();
        if is_get
            && routes
                .get
                .as_ref()
                .is_some_and(|stream| !stream.tx.is_closed())
        {
            return None;
        }
        let key = routes.next_key;
        routes.next_key += 1;
        let first = routes
            .buffered
            .drain(..)
            .map(|line| Piece::Line(self.event_id(), line))
            .collect();
        let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
        let stream = OpenStream { key, id, tx };
        if is_get {
            routes.get = Some(stream);
        } else {
            routes.requests.push(stream);
        }
        Some((key, rx, first))
    }

    fn close_stream(&self, key: u64) {
        lock(&self.routes).remove(key);
    }

    /// Ends every open stream (their clients see the end without an answer).
    fn end_streams(&self) {
        let mut routes = lock(&self.routes);
        routes.requests.clear();
        routes.get = None;
        routes.buffered.clear();
    }

    /// Marks the session over, ends its streams and kills its child.
    fn end(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.end_streams();
        let _ = lock(&self.child).start_kill();
    }

    /// Ends the session as a server does on `DELETE`: the child reads what it was
    /// sent (its stdin is closed after the lines already accepted) and gets
    /// [`STDIN_CLOSE_GRACE`] to exit; then it is killed and reaped (bounded).
    async fn terminate(&self) {
        drop(lock(&self.stdin).take());
        let deadline = tokio::time::Instant::now() + STDIN_CLOSE_GRACE;
        while matches!(lock(&self.child).try_wait(), Ok(None))
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.end();
        let deadline = tokio::time::Instant::now() + KILL_WAIT;
        while matches!(lock(&self.child).try_wait(), Ok(None))
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Picks where a line goes: the stream waiting for `answer_to` (removed, as
    /// the line closes it), else the oldest request stream, else the GET stream.
    /// `None` means buffer it.
    fn pick(
        &self,
        routes: &mut Routes,
        answer_to: Option<&Value>,
        tagged: Option<&Value>,
    ) -> Option<(u64, mpsc::Sender<Piece>)> {
        if let Some(id) = answer_to
            && let Some(index) = routes
                .requests
                .iter()
                .position(|s| s.id.as_ref() == Some(id))
        {
            let stream = routes.requests.remove(index);
            return Some((stream.key, stream.tx));
        }
        // A listen's message (tagged with its id, or cancelling it) goes to
        // that listen's stream.
        if let Some(id) = tagged
            && let Some(stream) = routes.requests.iter().find(|s| s.id.as_ref() == Some(id))
        {
            return Some((stream.key, stream.tx.clone()));
        }
        routes
            .requests
            .first()
            .or(routes.get.as_ref())
            .map(|stream| (stream.key, stream.tx.clone()))
    }

    /// Routes one whole stdout line.
    async fn route_line(&self, mut line: String) {
        let answer_to = answer_id(&line);
        let tagged = listen_tag(&line);
        if let Some(learn) = &self.learn
            && answer_to.is_some()
        {
            modern::learn_tools(learn, &line);
        }
        loop {
            let target = {
                let mut routes = lock(&self.routes);
                match self.pick(&mut routes, answer_to.as_ref(), tagged.as_ref()) {
                    Some(target) => target,
                    None => {
                        if !self.is_closed() && self.buffer_unrouted {
                            if routes.buffered.len() >= MAX_BUFFERED_LINES {
                                routes.buffered.pop_front();
                            }
                            routes.buffered.push_back(line);
                        }
                        return;
                    }
                }
            };
            let (key, tx) = target;
            match tx.send(Piece::Line(self.event_id(), line)).await {
                Ok(()) => return,
                Err(mpsc::error::SendError(piece)) => {
                    // That client went away: forget its stream and route again.
                    self.close_stream(key);
                    let Piece::Line(_, returned) = piece else {
                        unreachable!("sent a line")
                    };
                    line = returned;
                }
            }
        }
    }

    /// Sends the start of an over-long line to the stream the routing rule picks
    /// (it is never an answer) and says where the rest of it goes.
    async fn start_long(&self, start: Bytes) -> LongLine {
        let target = {
            let mut routes = lock(&self.routes);
            self.pick(&mut routes, None, None)
        };
        let Some((key, tx)) = target else {
            return LongLine::Discard;
        };
        if tx
            .send(Piece::LongStart(self.event_id(), start))
            .await
            .is_ok()
        {
            LongLine::To(key, tx)
        } else {
            self.close_stream(key);
            LongLine::Discard
        }
    }
}

/// The id a line answers, when it is protocol traffic (a JSON object with a
/// `jsonrpc` member, whatever its value) with an `id` and a `result` or an
/// `error`. Anything else answers nothing: noise such as `{"id":1,"result":{}}`
/// (no `jsonrpc`, so noise to the client) must not close a stream early.
fn answer_id(line: &str) -> Option<Value> {
    let value: Value = parse_json(line.as_bytes())?;
    let object = value.as_object()?;
    if !object.contains_key("jsonrpc") {
        return None;
    }
    if object.contains_key("result") || object.contains_key("error") {
        object.get("id").cloned()
    } else {
        None
    }
}

/// The listen a notification belongs to: its
/// `params._meta["io.modelcontextprotocol/subscriptionId"]`, or the
/// `requestId` of a `notifications/cancelled` (a server ending a listen).
fn listen_tag(line: &str) -> Option<Value> {
    let value: Value = parse_json(line.as_bytes())?;
    let params = value.get("params")?;
    if value.get("method")?.as_str()? == "notifications/cancelled" {
        return params.get("requestId").cloned();
    }
    params
        .get("_meta")?
        .get("io.modelcontextprotocol/subscriptionId")
        .cloned()
}

/// A fresh session id: 32 hex digits (visible ASCII), from std's random hasher keys.
fn new_session_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = std::collections::hash_map::RandomState::new();
    let mut halves = [0u64; 2];
    for (salt, half) in halves.iter_mut().enumerate() {
        let mut hasher = state.build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_usize(salt);
        hasher.write_u32(std::process::id());
        *half = hasher.finish();
    }
    format!("{:016x}{:016x}", halves[0], halves[1])
}

/// Writes queued lines to the child's stdin, acknowledging each; after the first
/// failure every later line fails at once. Lines are written whole even when the
/// POST that queued one is abandoned, so the child never sees a torn line.
async fn write_stdin(
    mut stdin: ChildStdin,
    mut rx: mpsc::Receiver<(Bytes, oneshot::Sender<bool>)>,
) {
    let mut broken = false;
    while let Some((line, ack)) = rx.recv().await {
        if !broken {
            broken = stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err();
        }
        let _ = ack.send(!broken);
    }
}

/// Where the over-long line being read goes.
enum LongLine {
    /// Not inside an over-long line.
    No,
    /// Streaming it to this stream.
    To(u64, mpsc::Sender<Piece>),
    /// Discarding the rest of it (nobody to send it to).
    Discard,
}

/// Reads the child's stdout and routes every line until EOF, then ends the session.
async fn read_stdout(session: Arc<Session>, stdout: ChildStdout) {
    let mut reader = BufReader::with_capacity(READ_CHUNK, stdout);
    let mut line = Vec::new();
    let mut long = LongLine::No;
    loop {
        let (chunk, complete) = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(buf) => match buf.iter().position(|&byte| byte == b'\n') {
                Some(end) => {
                    let chunk = buf[..end].to_vec();
                    reader.consume(end + 1);
                    (chunk, true)
                }
                None => {
                    let chunk = buf.to_vec();
                    reader.consume(chunk.len());
                    (chunk, false)
                }
            },
        };
        long = match std::mem::replace(&mut long, LongLine::No) {
            LongLine::No => {
                line.extend_from_slice(&chunk);
                if complete {
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    let text = String::from_utf8_lossy(&line).into_owned();
                    line.clear();
                    session.route_line(text).await;
                    LongLine::No
                } else if line.len() > MAX_LINE_BYTES {
                    let start = Bytes::from(std::mem::take(&mut line));
                    session.start_long(start).await
                } else {
                    LongLine::No
                }
            }
            LongLine::To(key, tx) => {
                let mut ok =
                    chunk.is_empty() || tx.send(Piece::LongMore(chunk.into())).await.is_ok();
                if ok && complete {
                    ok = tx.send(Piece::LongEnd).await.is_ok();
                }
                if !ok {
                    session.close_stream(key);
                }
                match (complete, ok) {
                    (true, _) => LongLine::No,
                    (false, true) => LongLine::To(key, tx),
                    (false, false) => LongLine::Discard,
                }
            }
            LongLine::Discard if complete => LongLine::No,
            LongLine::Discard => LongLine::Discard,
        };
    }
    session.end();
}

/// Accepts connections until aborted; each is served on its own task.
async fn serve(listener: TcpListener, inner: Arc<Inner>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let inner = inner.clone();
                connections.spawn(async move {
                    let service = service_fn(move |request| handle(inner.clone(), request));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// A response with a status and no body.
fn status(code: StatusCode) -> Response<Body> {
    http_server::status(code.as_u16())
}

/// A response with a status and a short text body (for people reading logs).
fn text(code: StatusCode, message: &'static str) -> Response<Body> {
    full(code.as_u16(), "text/plain", message)
}

/// Answers the state, or records the request and dispatches on method and path.
async fn handle(
    inner: Arc<Inner>,
    request: Request<Incoming>,
) -> Result<Response<Body>, DropConnection> {
    if request.method() == Method::GET && request.uri().path() == STATE_PATH {
        return Ok(state_response(&inner));
    }
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            if error
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return Ok(status(StatusCode::PAYLOAD_TOO_LARGE));
            }
            return Err(error);
        }
    };
    let index = {
        let mut requests = lock(&inner.requests);
        requests.push(RecordedRequest {
            method: parts.method.to_string(),
            path: parts
                .uri
                .path_and_query()
                .map_or_else(|| parts.uri.path().to_string(), |pq| pq.to_string()),
            headers: parts
                .headers
                .iter()
                .map(|(name, value)| {
                    let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                    (name.as_str().to_ascii_lowercase(), value)
                })
                .collect(),
            body: String::from_utf8_lossy(&body).into_owned(),
            status: None,
        });
        requests.len() - 1
    };
    let response = if parts.uri.path() != ENDPOINT {
        Ok(text(StatusCode::NOT_FOUND, "no such endpoint"))
    } else {
        dispatch(&inner, &parts.method, &parts.headers, &body).await
    };
    if let Ok(response) = &response {
        lock(&inner.requests)[index].status = Some(response.status().as_u16());
    }
    response
}

/// Dispatches on the era and the HTTP method.
async fn dispatch(
    inner: &Arc<Inner>,
    method: &Method,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response<Body>, DropConnection> {
    let legacy = match inner.options.era {
        HttpEra::Legacy => true,
        HttpEra::Modern => false,
        HttpEra::Dual => modern::dual_is_legacy(method, headers, body),
    };
    if !legacy {
        return match *method {
            Method::POST => modern::post(inner, headers, body).await,
            _ => Ok(modern::method_not_allowed(inner)),
        };
    }
    match *method {
        Method::POST => post(inner, headers, body).await,
        Method::GET => Ok(get(inner, headers)),
        Method::DELETE => Ok(delete(inner, headers).await),
        _ => Ok(status(StatusCode::METHOD_NOT_ALLOWED)),
    }
}

/// The `Mcp-Session-Id` a request carries.
fn session_header(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION_HEADER)
        .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
}

/// Why a request addresses no live session: the status and a short reason.
type Refusal = (StatusCode, &'static str);

/// The live session a non-initialize request addresses, or why not.
fn find_session(inner: &Inner, headers: &HeaderMap) -> Result<Arc<Session>, Refusal> {
    if !inner.options.session_ids {
        return match lock(&inner.current).as_ref() {
            Some(session) if !session.is_closed() => Ok(session.clone()),
            _ => Err((StatusCode::NOT_FOUND, "no live session")),
        };
    }
    let Some(id) = session_header(headers) else {
        return Err((StatusCode::BAD_REQUEST, "missing Mcp-Session-Id"));
    };
    let mut sessions = lock(&inner.sessions);
    match sessions.get(&id) {
        Some(session) if !session.is_closed() => Ok(session.clone()),
        Some(_) => {
            sessions.remove(&id);
            Err((StatusCode::NOT_FOUND, "session ended"))
        }
        None => Err((StatusCode::NOT_FOUND, "unknown session")),
    }
}

/// Starts a new session and makes it addressable.
fn new_session(inner: &Inner) -> io::Result<Arc<Session>> {
    let session = Session::spawn(inner, false)?;
    if inner.options.session_ids {
        lock(&inner.sessions).insert(session.id.clone(), session.clone());
    } else {
        *lock(&inner.current) = Some(session.clone());
    }
    Ok(session)
}

/// `POST /mcp`: one JSON-RPC message.
async fn post(
    inner: &Inner,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response<Body>, DropConnection> {
    let Some(message) = parse_json(body) else {
        return Ok(text(StatusCode::BAD_REQUEST, "body is not JSON"));
    };
    let Some(object) = message.as_object() else {
        return Ok(text(
            StatusCode::BAD_REQUEST,
            "body is not one JSON-RPC object",
        ));
    };
    let method = object.get("method").and_then(Value::as_str);
    let request_id = object.get("id").filter(|_| method.is_some()).cloned();
    if method == Some("server/discover")
        && inner.options.era == HttpEra::Legacy
        && session_header(headers).is_none()
        && let Some(response) = modern::legacy_probe_answer(inner.options.legacy_probe, &request_id)
    {
        return Ok(response);
    }
    let (session, created) = if method == Some("initialize") {
        match find_session(inner, headers) {
            Ok(session) if inner.options.session_ids => (session, false),
            _ => match new_session(inner) {
                Ok(session) => (session, true),
                Err(_) => return Ok(text(StatusCode::INTERNAL_SERVER_ERROR, "spawn failed")),
            },
        }
    } else {
        match find_session(inner, headers) {
            Ok(session) => (session, false),
            Err((code, why)) => return Ok(text(code, why)),
        }
    };
    let line = one_line(body);

    let Some(id) = request_id else {
        if !session.write(line).await {
            return Ok(text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "child stdin closed",
            ));
        }
        let mut response = status(StatusCode::ACCEPTED);
        add_session_header(&mut response, inner, &session, created);
        return Ok(response);
    };

    let (key, rx, first) = session
        .open_stream(Some(id.clone()))
        .expect("request streams always open");
    if !session.write(line).await {
        session.close_stream(key);
        return Ok(text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "child stdin closed",
        ));
    }
    let mut response = if inner.options.sse {
        sse_response(first, rx)
    } else {
        json_response(&id, rx, false).await?
    };
    add_session_header(&mut response, inner, &session, created);
    Ok(response)
}

/// The body as one stdin line (newline included). JSON allows a raw CR or LF only
/// between tokens, so blanking them keeps the message identical while making it
/// exactly one line.
fn one_line(body: &[u8]) -> Bytes {
    let mut line: Vec<u8> = body
        .iter()
        .map(|&byte| {
            if byte == b'\n' || byte == b'\r' {
                b' '
            } else {
                byte
            }
        })
        .collect();
    line.push(b'\n');
    Bytes::from(line)
}

/// Sets `Mcp-Session-Id` on the answer that created a session.
fn add_session_header(
    response: &mut Response<Body>,
    inner: &Inner,
    session: &Session,
    created: bool,
) {
    if created && inner.options.session_ids {
        let value = HeaderValue::from_str(&session.id).expect("hex session id");
        response.headers_mut().insert(SESSION_HEADER, value);
    }
}

/// `GET /mcp`: the standalone server-to-client stream.
fn get(inner: &Inner, headers: &HeaderMap) -> Response<Body> {
    if !inner.options.get_stream {
        return status(StatusCode::METHOD_NOT_ALLOWED);
    }
    let session = match find_session(inner, headers) {
        Ok(session) => session,
        Err((code, why)) => return text(code, why),
    };
    match session.open_stream(None) {
        Some((_, rx, first)) => sse_response(first, rx),
        None => text(StatusCode::CONFLICT, "a GET stream is already open"),
    }
}

/// `DELETE /mcp`: ends the session and kills its child.
async fn delete(inner: &Inner, headers: &HeaderMap) -> Response<Body> {
    if !inner.options.session_ids {
        return status(StatusCode::METHOD_NOT_ALLOWED);
    }
    let session = match find_session(inner, headers) {
        Ok(session) => session,
        Err((code, why)) => return text(code, why),
    };
    lock(&inner.sessions).remove(&session.id);
    session.terminate().await;
    status(StatusCode::OK)
}

/// Appends `bytes` as SSE field data: a CR would end the field, so each CR starts
/// a new `data:` field instead (the client joins them with LF, which JSON treats
/// as the same whitespace).
fn push_sse_data(out: &mut Vec<u8>, bytes: &[u8]) {
    for &byte in bytes {
        if byte == b'\r' {
            out.extend_from_slice(b"\ndata: ");
        } else {
            out.push(byte);
        }
    }
}

/// Encodes one piece as SSE bytes.
fn sse_bytes(piece: Piece) -> Bytes {
    let mut out = Vec::new();
    match piece {
        Piece::Line(id, line) => {
            out.extend_from_slice(format!("id: {id}\ndata: ").as_bytes());
            push_sse_data(&mut out, line.as_bytes());
            out.extend_from_slice(b"\n\n");
        }
        Piece::LongStart(id, bytes) => {
            out.extend_from_slice(format!("id: {id}\ndata: ").as_bytes());
            push_sse_data(&mut out, &bytes);
        }
        Piece::LongMore(bytes) => push_sse_data(&mut out, &bytes),
        Piece::LongEnd => out.extend_from_slice(b"\n\n"),
    }
    Bytes::from(out)
}

/// A `200 text/event-stream` response: `first`, then whatever `rx` delivers,
/// ending when the router drops the stream's sender.
fn sse_response(first: Vec<Piece>, mut rx: impl PieceSource) -> Response<Body> {
    let rest = futures_util::stream::poll_fn(move |cx| rx.poll_piece(cx));
    let frames = futures_util::stream::iter(first)
        .chain(rest)
        .map(|piece| Ok::<_, io::Error>(Frame::data(sse_bytes(piece))));
    let mut response = Response::new(BodyExt::boxed_unsync(StreamBody::new(frames)));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A `200 application/json` response holding the answer to `id` (with
/// `map_status`, the modern status of its error code). Other lines are
/// dropped. An over-long line is streamed as the body instead (the client's body
/// limit stops it). When the stream ends without an answer the connection is
/// dropped.
async fn json_response(
    id: &Value,
    mut rx: impl PieceSource,
    map_status: bool,
) -> Result<Response<Body>, DropConnection> {
    let mut code = StatusCode::OK;
    let body = loop {
        match std::future::poll_fn(|cx| rx.poll_piece(cx)).await {
            Some(Piece::Line(_, line)) if answer_id(&line).as_ref() == Some(id) => {
                if map_status {
                    code = modern::status_of(&line);
                }
                break Full::new(Bytes::from(line))
                    .map_err(|never| match never {})
                    .boxed_unsync();
            }
            Some(Piece::Line(..)) | Some(Piece::LongMore(_)) | Some(Piece::LongEnd) => {}
            Some(Piece::LongStart(_, start)) => {
                let mut started = Some(start);
                let rest = futures_util::stream::poll_fn(move |cx| {
                    if let Some(start) = started.take() {
                        return Poll::Ready(Some(start));
                    }
                    match rx.poll_piece(cx) {
                        Poll::Ready(Some(Piece::LongMore(bytes))) => Poll::Ready(Some(bytes)),
                        Poll::Ready(_) => Poll::Ready(None),
                        Poll::Pending => Poll::Pending,
                    }
                });
                let frames = rest.map(|bytes| Ok::<_, io::Error>(Frame::data(bytes)));
                break BodyExt::boxed_unsync(StreamBody::new(frames));
            }
            None => return Err("child stdout ended before the answer".into()),
        }
    };
    let mut response = Response::new(body);
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}
