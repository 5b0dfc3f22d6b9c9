//! The echo server every client in the benchmark harness (`benches/harness/`)
//! talks to: one Rust MCP server, the `echo` mode of this binary, speaking stdio
//! (`echo serve-stdio`) or Streamable HTTP (`echo serve-http`: `/mcp` answers
//! with JSON bodies, `/sse` with a one-event SSE stream). What the harness must
//! agree with it on ([`Shape`], [`MODERN`], [`SESSION_ID`]) is the library's
//! `smthrs_mcp_testkit::echo`.
//!
//! It is deliberately cheap so the clients, not the server, are measured: requests
//! are parsed with borrowed fields (`RawValue` ids and arguments are echoed as
//! they came), replies are written straight from the borrowed parts, and the stdio
//! server flushes only when no further request is already buffered (so a pipelined
//! client gets its replies batched, as from any buffered server).
//!
//! It is dual-era: it answers the legacy `initialize` (2025-06-18) and the
//! 2026-07-28 `server/discover` (`supportedVersions: ["2026-07-28"]`, as Python
//! `mcp` 2.x announces), and a request whose `params` carry `_meta` is answered
//! the modern way (results with `resultType`, `tools/list` with `ttlMs` and
//! `cacheScope`). Over HTTP a request with `MCP-Protocol-Version: 2026-07-28`
//! must carry `Mcp-Method` equal to its method and, for `tools/call`, `Mcp-Name`
//! equal to the tool's name, else it gets 400 and -32020, as a modern server
//! answers.
//!
//! Options ([`Shape`]), for the cost curve: `--tools N` offers N tools in one
//! `tools/list` page (`echo` last, after N - 1 generated ones of about 350 bytes
//! each), `--result-bytes N` answers every call with an N-byte text (precomputed:
//! the server's cost stays flat), `--legacy-only` answers `server/discover` as a
//! legacy server does (stdio: -32601; HTTP: 400 with -32000, as the TypeScript
//! SDK 1.x does), `--startup-ms N` makes `serve-stdio` use N ms of CPU time
//! before it reads anything (a slow-starting server).
//!
//! `serve-http` answers `GET /stats` with the number of TCP connections it
//! accepted and of `server/discover` requests it received so far (the
//! `--group` mode counts a group's connections and probes with it).
//!
//! `serve-stdio --flood BYTES` answers the first request with BYTES of `a` and no
//! newline instead, then keeps its stdout open until stdin closes.

use std::borrow::Cow;
use std::convert::Infallible;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::sync::OnceLock;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use smthrs_mcp_testkit::echo::{MODERN, SESSION_ID, Shape};

/// The tool every client calls.
const ECHO_TOOL: &str = r#"{"name":"echo","description":"Echoes its text argument","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}"#;

/// `echo serve-stdio [SHAPE] [--flood BYTES]` or `echo serve-http [SHAPE]` (the
/// arguments after `echo`): serves, then exits; a usage problem is returned.
pub fn run(args: impl Iterator<Item = String>) -> Result<(), String> {
    let mut role = None;
    let mut flood = None;
    let mut shape = Shape::default();
    let mut args = args;
    while let Some(arg) = args.next() {
        if shape.accept(&arg, &mut args)? {
            continue;
        }
        match arg.as_str() {
            "--flood" => {
                let bytes = args.next().ok_or("--flood needs a value")?;
                flood = Some(bytes.parse().map_err(|_| "--flood needs a number")?);
            }
            "serve-stdio" | "serve-http" if role.is_none() => role = Some(arg),
            other => return Err(format!("echo: unexpected argument {other:?}")),
        }
    }
    match role.as_deref() {
        Some("serve-stdio") => serve_stdio(flood, shape),
        Some(_) => serve_http(shape),
        None => return Err("echo needs serve-stdio or serve-http".into()),
    }
    Ok(())
}

/// Everything a shape makes the server say, built once per process.
struct Canned {
    shape: Shape,
    tools_legacy: Box<RawValue>,
    tools_modern: Box<RawValue>,
    /// The call result with the fixed text (`--result-bytes`), legacy and modern.
    fixed: Option<[Box<RawValue>; 2]>,
}

static CANNED: OnceLock<Canned> = OnceLock::new();

/// Sets the shape this process serves (once, before serving).
pub fn configure(shape: Shape) {
    let _ = CANNED.set(Canned::new(shape));
}

fn canned() -> &'static Canned {
    CANNED.get_or_init(|| Canned::new(Shape::default()))
}

impl Canned {
    fn new(shape: Shape) -> Canned {
        let mut tools = String::with_capacity(shape.tools.max(1) * 360);
        for i in 1..shape.tools.max(1) {
            tools += &format!(
                r#"{{"name":"tool_{i:05}","description":"Synthetic tool {i} of the benchmark catalog: takes a query and a limit and returns nothing useful.","inputSchema":{{"type":"object","properties":{{"query":{{"type":"string","description":"What to look for"}},"limit":{{"type":"integer","minimum":1,"maximum":100}}}},"required":["query"]}}}},"#
            );
        }
        tools += ECHO_TOOL;
        let boxed = |text: String| RawValue::from_string(text).expect("valid canned JSON");
        let fixed = shape.result_bytes.map(|bytes| {
            let text: String = "abcdefghijklmnopqrstuvwxyz0123456789 "
                .chars()
                .cycle()
                .take(bytes)
                .collect();
            [None, Some("complete")].map(|result_type| {
                let result = CallResult {
                    content: [TextContent {
                        kind: "text",
                        text: &text,
                    }],
                    is_error: false,
                    result_type,
                };
                boxed(serde_json::to_string(&result).expect("a call result serializes"))
            })
        });
        Canned {
            shape,
            tools_legacy: boxed(format!(r#"{{"tools":[{tools}]}}"#)),
            tools_modern: boxed(format!(
                r#"{{"tools":[{tools}],"resultType":"complete","ttlMs":0,"cacheScope":"public"}}"#
            )),
            fixed,
        }
    }
}

/// The `server/discover` result.
const DISCOVER: &str = r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bench-echo","version":"1.0.0"}}}"#;

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<EchoArgs<'a>>,
}

/// Any other request's `params`: only whether `_meta` is there.
#[derive(Deserialize)]
struct MetaParams<'a> {
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct EchoArgs<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct InitParams<'a> {
    #[serde(rename = "protocolVersion", borrow, default)]
    protocol_version: Option<Cow<'a, str>>,
}

#[derive(Serialize)]
struct Reply<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: T,
}

#[derive(Serialize)]
struct TextContent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct CallResult<'a> {
    content: [TextContent<'a>; 1],
    #[serde(rename = "isError")]
    is_error: bool,
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
}

#[derive(Serialize)]
struct InitResult<'a> {
    #[serde(rename = "protocolVersion")]
    protocol_version: &'a str,
    capabilities: &'a RawValue,
    #[serde(rename = "serverInfo")]
    server_info: &'a RawValue,
}

#[derive(Serialize)]
struct ErrorReply<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    error: &'a RawValue,
}

fn raw(text: &'static str) -> &'static RawValue {
    // Only called with the literals below, which are valid JSON.
    serde_json::from_str::<&RawValue>(text).expect("a valid JSON literal")
}

/// What one message asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// A reply was appended to the output buffer.
    Reply,
    /// An error reply was appended that HTTP sends with status 400.
    Refused,
    /// A notification, a reply or noise: nothing to write.
    Nothing,
    /// The first request in flood mode.
    Flood,
}

/// The 2026-07-28 headers of an HTTP request (stdio: the default, none).
#[derive(Default)]
pub struct Headers<'a> {
    /// `MCP-Protocol-Version: 2026-07-28` was sent.
    pub modern: bool,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name`.
    pub name: Option<&'a str>,
    /// The request came over HTTP.
    pub http: bool,
}

/// Answers one JSON-RPC message, appending the reply (without newline) to `out`.
pub fn answer(message: &[u8], out: &mut Vec<u8>, flood: bool, headers: &Headers<'_>) -> Answer {
    let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(message) else {
        return Answer::Nothing;
    };
    let (Some(id), Some(method)) = (envelope.id, envelope.method) else {
        return Answer::Nothing; // a notification or a reply
    };
    if flood {
        return Answer::Flood;
    }
    if headers.modern && headers.method != Some(&*method) {
        return refuse(
            out,
            id,
            r#"{"code":-32020,"message":"Mcp-Method does not match the body"}"#,
        );
    }
    let canned = canned();
    let modern = || {
        envelope
            .params
            .and_then(|p| serde_json::from_str::<MetaParams<'_>>(p.get()).ok())
            .is_some_and(|p| p.meta.is_some())
    };
    let written = match &*method {
        "tools/call" => {
            let params = envelope
                .params
                .and_then(|p| serde_json::from_str::<CallParams<'_>>(p.get()).ok());
            let params = params.as_ref();
            if headers.modern && headers.name != params.and_then(|p| p.name.as_deref()) {
                return refuse(
                    out,
                    id,
                    r#"{"code":-32020,"message":"Mcp-Name does not match the body"}"#,
                );
            }
            let modern = params.is_some_and(|p| p.meta.is_some());
            if let Some(fixed) = &canned.fixed {
                let result = &*fixed[usize::from(modern)];
                reply(out, id, result)
            } else {
                let text = params
                    .and_then(|p| p.arguments.as_ref())
                    .and_then(|a| a.text.as_deref())
                    .unwrap_or("");
                let result = CallResult {
                    content: [TextContent { kind: "text", text }],
                    is_error: false,
                    result_type: modern.then_some("complete"),
                };
                reply(out, id, result)
            }
        }
        "server/discover" if canned.shape.legacy_only && headers.http => {
            // The TypeScript SDK 1.x: a request before `initialize`, no session.
            out.extend_from_slice(
                br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}"#,
            );
            return Answer::Refused;
        }
        "server/discover" if !canned.shape.legacy_only => reply(out, id, raw(DISCOVER)),
        "initialize" => {
            let params = envelope
                .params
                .and_then(|p| serde_json::from_str::<InitParams<'_>>(p.get()).ok());
            let version = params
                .as_ref()
                .and_then(|p| p.protocol_version.as_deref())
                .unwrap_or("2025-06-18");
            let result = InitResult {
                protocol_version: version,
                capabilities: raw(r#"{"tools":{}}"#),
                server_info: raw(r#"{"name":"bench-echo","version":"1.0.0"}"#),
            };
            reply(out, id, result)
        }
        "tools/list" => {
            let result = if modern() {
                &*canned.tools_modern
            } else {
                &*canned.tools_legacy
            };
            reply(out, id, result)
        }
        "ping" => reply(out, id, raw("{}")),
        _ => error_reply(out, id, r#"{"code":-32601,"message":"Method not found"}"#),
    };
    if written.is_ok() {
        Answer::Reply
    } else {
        Answer::Nothing
    }
}

/// Appends a reply with this result.
fn reply(out: &mut Vec<u8>, id: &RawValue, result: impl Serialize) -> serde_json::Result<()> {
    serde_json::to_writer(
        out,
        &Reply {
            jsonrpc: "2.0",
            id,
            result,
        },
    )
}

/// Appends an error reply.
fn error_reply(out: &mut Vec<u8>, id: &RawValue, error: &'static str) -> serde_json::Result<()> {
    let error = raw(error);
    serde_json::to_writer(
        out,
        &ErrorReply {
            jsonrpc: "2.0",
            id,
            error,
        },
    )
}

/// Appends an error reply that HTTP sends with status 400.
fn refuse(out: &mut Vec<u8>, id: &RawValue, error: &'static str) -> Answer {
    match error_reply(out, id, error) {
        Ok(()) => Answer::Refused,
        Err(_) => Answer::Nothing,
    }
}

/// `serve-stdio [--flood BYTES]`: newline-delimited JSON-RPC on stdin/stdout.
/// Spins until this process has used `ms` of CPU time (user + system, from
/// `/proc/self/stat` in 100 Hz ticks: Linux), however long that takes while
/// other processes compete for the cores.
fn spin_cpu(ms: u64) {
    let used_ms = || -> u64 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let after = stat.rfind(')').map_or("", |at| &stat[at + 1..]);
        let fields: Vec<&str> = after.split_whitespace().collect();
        // utime and stime: fields 14 and 15 of the line, 12 and 13 after `comm`.
        let ticks = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0)
        };
        (ticks(11) + ticks(12)) * 10
    };
    if ms == 0 {
        return;
    }
    let mut spun = 0u64;
    while used_ms() < ms {
        for _ in 0..100_000 {
            spun = std::hint::black_box(spun.wrapping_mul(31).wrapping_add(1));
        }
    }
}

pub fn serve_stdio(flood_bytes: Option<u64>, shape: Shape) {
    configure(shape);
    spin_cpu(shape.startup_ms);
    let stdin = io::stdin();
    let mut reader = BufReader::with_capacity(64 * 1024, stdin.lock());
    let stdout = io::stdout();
    let mut writer = BufWriter::with_capacity(64 * 1024, stdout.lock());
    let mut line = Vec::with_capacity(1024);
    let mut out = Vec::with_capacity(1024);
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let message = line.strip_suffix(b"\n").unwrap_or(&line);
        out.clear();
        match answer(
            message,
            &mut out,
            flood_bytes.is_some(),
            &Headers::default(),
        ) {
            Answer::Flood => {
                let _ = flood_stdout(&mut writer, flood_bytes.unwrap_or(0));
                // Keep stdout open (a client waiting for a newline waits on)
                // until the client closes stdin.
                let mut sink = [0u8; 8192];
                while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                return;
            }
            Answer::Reply | Answer::Refused => {
                out.push(b'\n');
                if writer.write_all(&out).is_err() {
                    return;
                }
            }
            Answer::Nothing => {}
        }
        // Flush only when no further request is already buffered: the replies to a
        // pipelined burst leave in one write.
        if reader.buffer().is_empty() && writer.flush().is_err() {
            return;
        }
    }
}

fn flood_stdout(writer: &mut impl Write, bytes: u64) -> io::Result<()> {
    let chunk = vec![b'a'; 64 * 1024];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        writer.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    writer.flush()
}

/// `serve-http`: prints the bound port on stdout, serves until stdin closes.
pub fn serve_http(shape: Shape) {
    configure(shape);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("a local address").port();
        println!("{port}");
        let _ = io::stdout().flush();
        // The harness holds our stdin: its end is our end.
        std::thread::spawn(|| {
            let mut sink = [0u8; 64];
            while matches!(io::stdin().read(&mut sink), Ok(n) if n > 0) {}
            std::process::exit(0);
        });
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            ACCEPTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let _ = tcp.set_nodelay(true);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(handle);
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    });
}

fn empty(status: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = status;
    response
}

/// TCP connections the HTTP server accepted, and `server/discover` requests it
/// received (`GET /stats` answers both, in this order).
static ACCEPTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static PROBES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let sse = req.uri().path() == "/sse";
    match *req.method() {
        Method::GET if req.uri().path() == "/stats" => {
            let accepted = ACCEPTED.load(std::sync::atomic::Ordering::Relaxed);
            let probes = PROBES.load(std::sync::atomic::Ordering::Relaxed);
            let stats = format!("{accepted} {probes}");
            return Ok(Response::new(Full::new(Bytes::from(stats))));
        }
        Method::POST => {}
        Method::DELETE => return Ok(empty(StatusCode::OK)),
        _ => return Ok(empty(StatusCode::METHOD_NOT_ALLOWED)),
    }
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await else {
        return Ok(empty(StatusCode::BAD_REQUEST));
    };
    let body = body.to_bytes();
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let headers = Headers {
        modern: header("mcp-protocol-version") == Some(MODERN),
        method: header("mcp-method"),
        name: header("mcp-name"),
        http: true,
    };
    let initialize = body.windows(12).any(|w| w == b"\"initialize\"");
    if body.windows(17).any(|w| w == b"\"server/discover\"") {
        PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let mut reply = Vec::with_capacity(256);
    let status = match answer(&body, &mut reply, false, &headers) {
        Answer::Reply => StatusCode::OK,
        Answer::Refused => StatusCode::BAD_REQUEST,
        Answer::Nothing | Answer::Flood => return Ok(empty(StatusCode::ACCEPTED)),
    };
    let (content_type, body) = if sse && status == StatusCode::OK {
        let mut event = Vec::with_capacity(reply.len() + 24);
        event.extend_from_slice(b"event: message\ndata: ");
        event.extend_from_slice(&reply);
        event.extend_from_slice(b"\n\n");
        ("text/event-stream", event)
    } else {
        ("application/json", reply)
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    if initialize {
        headers.insert(
            "mcp-session-id",
            hyper::header::HeaderValue::from_static(SESSION_ID),
        );
    }
    Ok(response)
}
