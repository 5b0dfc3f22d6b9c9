//! The echo server every client in the benchmark talks to: one Rust MCP server, in
//! this same binary, speaking stdio (`serve-stdio`) or Streamable HTTP
//! (`serve-http`: `/mcp` answers with JSON bodies, `/sse` with a one-event SSE
//! stream).
//!
//! It is deliberately cheap so the clients, not the server, are measured: requests
//! are parsed with borrowed fields (`RawValue` ids and arguments are echoed as
//! they came), replies are written straight from the borrowed parts, and the stdio
//! server flushes only when no further request is already buffered (so a pipelined
//! client gets its replies batched, as from any buffered server).
//!
//! `serve-stdio --flood BYTES` answers `initialize` with BYTES of `a` and no
//! newline instead, then keeps its stdout open until stdin closes.

use std::borrow::Cow;
use std::convert::Infallible;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The one tool the server offers.
const TOOLS_LIST: &str = r#"{"tools":[{"name":"echo","description":"Echoes its text argument","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}}]}"#;

/// The session id the HTTP server hands out (constant: the server keeps no state).
pub const SESSION_ID: &str = "bench-session-1";

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
    #[serde(borrow, default)]
    arguments: Option<EchoArgs<'a>>,
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
    /// A notification, a reply or noise: nothing to write.
    Nothing,
    /// `initialize` in flood mode.
    Flood,
}

/// Answers one JSON-RPC message, appending the reply (without newline) to `out`.
pub fn answer(message: &[u8], out: &mut Vec<u8>, flood: bool) -> Answer {
    let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(message) else {
        return Answer::Nothing;
    };
    let (Some(id), Some(method)) = (envelope.id, envelope.method) else {
        return Answer::Nothing; // a notification or a reply
    };
    let written = match &*method {
        "tools/call" => {
            let params = envelope
                .params
                .and_then(|p| serde_json::from_str::<CallParams<'_>>(p.get()).ok());
            let text = params
                .as_ref()
                .and_then(|p| p.arguments.as_ref())
                .and_then(|a| a.text.as_deref())
                .unwrap_or("");
            serde_json::to_writer(
                &mut *out,
                &Reply {
                    jsonrpc: "2.0",
                    id,
                    result: CallResult {
                        content: [TextContent { kind: "text", text }],
                        is_error: false,
                    },
                },
            )
        }
        "initialize" if flood => return Answer::Flood,
        "initialize" => {
            let params = envelope
                .params
                .and_then(|p| serde_json::from_str::<InitParams<'_>>(p.get()).ok());
            let version = params
                .as_ref()
                .and_then(|p| p.protocol_version.as_deref())
                .unwrap_or("2025-06-18");
            serde_json::to_writer(
                &mut *out,
                &Reply {
                    jsonrpc: "2.0",
                    id,
                    result: InitResult {
                        protocol_version: version,
                        capabilities: raw(r#"{"tools":{}}"#),
                        server_info: raw(r#"{"name":"bench-echo","version":"1.0.0"}"#),
                    },
                },
            )
        }
        "tools/list" => serde_json::to_writer(
            &mut *out,
            &Reply {
                jsonrpc: "2.0",
                id,
                result: raw(TOOLS_LIST),
            },
        ),
        "ping" => serde_json::to_writer(
            &mut *out,
            &Reply {
                jsonrpc: "2.0",
                id,
                result: raw("{}"),
            },
        ),
        _ => serde_json::to_writer(
            &mut *out,
            &ErrorReply {
                jsonrpc: "2.0",
                id,
                error: raw(r#"{"code":-32601,"message":"Method not found"}"#),
            },
        ),
    };
    if written.is_ok() {
        Answer::Reply
    } else {
        Answer::Nothing
    }
}

/// `serve-stdio [--flood BYTES]`: newline-delimited JSON-RPC on stdin/stdout.
pub fn serve_stdio(flood_bytes: Option<u64>) {
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
        match answer(message, &mut out, flood_bytes.is_some()) {
            Answer::Flood => {
                let _ = flood_stdout(&mut writer, flood_bytes.unwrap_or(0));
                // Keep stdout open (a client waiting for a newline waits on)
                // until the client closes stdin.
                let mut sink = [0u8; 8192];
                while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                return;
            }
            Answer::Reply => {
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
pub fn serve_http() {
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

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let sse = req.uri().path() == "/sse";
    match *req.method() {
        Method::POST => {}
        Method::DELETE => return Ok(empty(StatusCode::OK)),
        _ => return Ok(empty(StatusCode::METHOD_NOT_ALLOWED)),
    }
    let Ok(body) = req.into_body().collect().await else {
        return Ok(empty(StatusCode::BAD_REQUEST));
    };
    let body = body.to_bytes();
    let initialize = body.windows(12).any(|w| w == b"\"initialize\"");
    let mut reply = Vec::with_capacity(256);
    if answer(&body, &mut reply, false) != Answer::Reply {
        return Ok(empty(StatusCode::ACCEPTED));
    }
    let (content_type, body) = if sse {
        let mut event = Vec::with_capacity(reply.len() + 24);
        event.extend_from_slice(b"event: message\ndata: ");
        event.extend_from_slice(&reply);
        event.extend_from_slice(b"\n\n");
        ("text/event-stream", event)
    } else {
        ("application/json", reply)
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    if initialize {
        headers.insert("mcp-session-id", http::HeaderValue::from_static(SESSION_ID));
    }
    Ok(response)
}
