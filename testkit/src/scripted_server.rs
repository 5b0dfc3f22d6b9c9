//! `smthrs-mcp-scripted-server`: a real MCP stdio server whose behaviour comes
//! from a scenario, able to misbehave one chosen way at a time.
//!
//! ```text
//! smthrs-mcp-scripted-server [SCENARIO] [--record PATH]
//! smthrs-mcp-scripted-server --http OPTIONS [--listen ADDR] [SCENARIO] [--record PATH]
//! smthrs-mcp-scripted-server echo serve-stdio|serve-http [--tools N] [--result-bytes N] [--legacy-only] [--startup-ms N] [--flood BYTES]
//! ```
//!
//! `SCENARIO` is a path to a JSON file, or inline JSON when it starts with `{`;
//! without it the server is well behaved. `--record PATH` appends every line
//! received from the client to `PATH` (it overrides the scenario's `record`).
//! The scenario format is documented in `testdata/scenarios/README.md`.
//!
//! Without `--http` the server speaks stdio. With it, it serves Streamable HTTP
//! (`http_bridge.rs`): `OPTIONS` is the JSON of
//! `smthrs_mcp_testkit::bridge::BridgeOptions` (`{}` for the defaults), `ADDR`
//! the address to bind (default `127.0.0.1:0`); the bound address is printed as
//! the first stdout line, and every session runs this binary on stdio with the
//! scenario arguments.
//!
//! The server uses blocking std I/O: the main thread reads stdin, records and
//! dispatches each line; calls that must wait (a delay, the `slow` tool, a
//! server-to-client request) run on their own thread so the reader keeps
//! reading (and recording `notifications/cancelled`, routing pongs) meanwhile.
//! Every message is written through one buffered writer and flushed at once.
//!
//! The scenario's `era` picks the protocol: `legacy` (the default: the
//! `initialize` handshake, exactly as before the key existed), `modern` (the
//! stateless 2026-07-28 revision: `server/discover`, per-request `_meta`,
//! `resultType`, MRTR) or `dual` (both). The modern part lives in
//! `scripted_server/modern.rs`.
//!
//! With `echo` it is not the scripted server but the benchmark harness's echo
//! server (`echo_server.rs`; `smthrs_mcp_testkit::echo` says what its options
//! mean): stdio (`serve-stdio`) or Streamable HTTP (`serve-http`, which prints
//! its port as the first stdout line and serves until its stdin closes).
//!
//! This binary never depends on the library it tests, so it builds even when the
//! library does not.

mod echo_server;
mod http_bridge;
#[path = "scripted_server/modern.rs"]
mod modern;

use serde_json::json;
use serde_json::{Map, Value};
use smthrs_mcp_testkit::bridge::{BridgeOptions, parse_json};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufWriter, Write};
use std::net::SocketAddr;
use std::process;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// Chunk size used when flooding stdout or stderr.
const FLOOD_CHUNK: usize = 64 * 1024;

/// Default time a server-to-client request waits for the client's answer.
const DEFAULT_REPLY_WAIT_MS: u64 = 5_000;

/// Exit status used when the command line or the scenario is unusable.
const USAGE_EXIT: i32 = 2;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|arg| arg == "echo") {
        match echo_server::run(args.into_iter().skip(1)) {
            Ok(()) => return,
            Err(message) => usage_exit(&message),
        }
    }
    if args.first().is_some_and(|arg| arg == "--http") {
        serve_http(args)
    }
    let (scenario_arg, record_arg) = match parse_args(args.into_iter()) {
        Ok(parsed) => parsed,
        Err(message) => usage_exit(&message),
    };
    let mut scenario = load_scenario(scenario_arg);
    if record_arg.is_some() {
        scenario.record = record_arg;
    }
    let mut record = match &scenario.record {
        None => None,
        Some(path) => match OpenOptions::new().create(true).append(true).open(path) {
            Ok(file) => Some(file),
            Err(err) => usage_exit(&format!("cannot open record file {path}: {err}")),
        },
    };
    if scenario.record_pid
        && let Some(file) = &mut record
    {
        let _ = writeln!(file, "{}", json!({"started_pid": process::id()}));
    }

    spawn_orphan_watchdog();
    write_startup_stderr(&scenario);

    let shared = Arc::new(Shared::new(&scenario));
    let server = Server {
        scenario: Arc::new(scenario),
        shared,
        record,
        call_counts: HashMap::new(),
        list_calls: 0,
        ready_fired: false,
        stdin_closed: false,
        first_request_seen: false,
        method_calls: HashMap::new(),
        last_listen: None,
        last_progress_token: Value::Null,
        modern: modern::State::default(),
    };
    server.run();
}

/// The scenario the argument names (the well-behaved one without it), or a
/// usage exit saying why it is unusable.
fn load_scenario(arg: Option<String>) -> Scenario {
    let scenario_json = match arg {
        None => Value::Object(Map::new()),
        Some(arg) => match load_scenario_json(&arg) {
            Ok(value) => value,
            Err(message) => usage_exit(&message),
        },
    };
    match Scenario::from_json(&scenario_json) {
        Ok(scenario) => scenario,
        Err(message) => usage_exit(&format!("invalid scenario: {message}")),
    }
}

/// `--http OPTIONS [--listen ADDR] [SCENARIO] [--record PATH]`: checks the
/// scenario once, then serves Streamable HTTP until stdin closes.
fn serve_http(args: Vec<String>) -> ! {
    let mut args = args.into_iter().skip(1);
    let options = args
        .next()
        .unwrap_or_else(|| usage_exit("--http needs the options' JSON"));
    let options: BridgeOptions = serde_json::from_str(&options)
        .unwrap_or_else(|error| usage_exit(&format!("--http options are invalid: {error}")));
    let mut rest: Vec<String> = args.collect();
    let mut listen = None;
    if rest.first().is_some_and(|arg| arg == "--listen") {
        let addr = rest
            .get(1)
            .unwrap_or_else(|| usage_exit("--listen needs an address"));
        let addr: SocketAddr = addr
            .parse()
            .unwrap_or_else(|error| usage_exit(&format!("--listen {addr}: {error}")));
        listen = Some(addr);
        rest.drain(..2);
    }
    match parse_args(rest.iter().cloned()) {
        Ok((scenario, _)) => drop(load_scenario(scenario)),
        Err(message) => usage_exit(&message),
    }
    let args = rest.into_iter().map(OsString::from).collect();
    match http_bridge::run(listen, options, args) {
        Ok(()) => process::exit(0),
        Err(message) => usage_exit(&message),
    }
}

/// Prints a usage problem to stderr and exits with [`USAGE_EXIT`].
fn usage_exit(message: &str) -> ! {
    eprintln!("smthrs-mcp-scripted-server: {message}");
    eprintln!("usage: smthrs-mcp-scripted-server [SCENARIO.json | '{{...}}'] [--record PATH]");
    eprintln!(
        "       smthrs-mcp-scripted-server --http OPTIONS [--listen ADDR] [SCENARIO] [--record PATH]"
    );
    eprintln!(
        "       smthrs-mcp-scripted-server echo serve-stdio|serve-http [--tools N] [--result-bytes N] [--legacy-only] [--startup-ms N] [--flood BYTES]"
    );
    process::exit(USAGE_EXIT)
}

/// Splits the command line into the scenario argument and the `--record` path.
fn parse_args(
    args: impl Iterator<Item = String>,
) -> Result<(Option<String>, Option<String>), String> {
    let mut scenario = None;
    let mut record = None;
    let mut args = args;
    while let Some(arg) = args.next() {
        if arg == "--record" {
            record = Some(args.next().ok_or("--record needs a path")?);
        } else if let Some(path) = arg.strip_prefix("--record=") {
            record = Some(path.to_owned());
        } else if scenario.is_none() {
            scenario = Some(arg);
        } else {
            return Err(format!("unexpected argument {arg:?}"));
        }
    }
    Ok((scenario, record))
}

/// Reads the scenario: inline JSON when the argument starts with `{`, else a file.
fn load_scenario_json(arg: &str) -> Result<Value, String> {
    let text = if arg.trim_start().starts_with('{') {
        arg.to_owned()
    } else {
        std::fs::read_to_string(arg).map_err(|err| format!("cannot read scenario {arg}: {err}"))?
    };
    serde_json::from_str(&text).map_err(|err| format!("scenario {arg} is not JSON: {err}"))
}

/// Exits quietly when the parent process goes away, so a server that stopped
/// reading stdin (or ignores EOF) never outlives the client that spawned it.
fn spawn_orphan_watchdog() {
    #[cfg(unix)]
    {
        let parent = std::os::unix::process::parent_id();
        thread::spawn(move || watch_parent(parent));
    }
}

/// Polls the parent id every 200 ms and exits once it changes.
#[cfg(unix)]
fn watch_parent(parent: u32) {
    while std::os::unix::process::parent_id() == parent {
        thread::sleep(Duration::from_millis(200));
    }
    process::exit(0)
}

/// Writes the scenario's startup stderr: `stderr_lines`, then the flood.
fn write_startup_stderr(scenario: &Scenario) {
    let stderr = io::stderr();
    let mut err = stderr.lock();
    for line in &scenario.stderr_lines {
        let _ = writeln!(err, "{line}");
    }
    let flood = scenario.stderr_flood_bytes;
    if flood > 0 {
        let mut chunk = vec![b'e'; FLOOD_CHUNK];
        if !scenario.stderr_flood_no_newline {
            for (index, byte) in chunk.iter_mut().enumerate() {
                if index % 1024 == 1023 {
                    *byte = b'\n';
                }
            }
        }
        let _ = write_flood(&mut err, &chunk, flood);
    }
    let _ = err.flush();
}

/// Writes `bytes` bytes of `chunk` (repeated, [`FLOOD_CHUNK`] bytes long) to `out`;
/// stops at the first error.
fn write_flood(out: &mut impl Write, chunk: &[u8], bytes: u64) -> io::Result<()> {
    let mut remaining = bytes;
    while remaining > 0 {
        let len = remaining.min(chunk.len() as u64) as usize;
        out.write_all(&chunk[..len])?;
        remaining -= len as u64;
    }
    Ok(())
}

/// A raw line from the scenario, written verbatim except for the `$ID` and
/// `$PROGRESS_TOKEN` tokens.
///
/// A scenario string is kept as is and `$ID` inside it becomes the JSON of the
/// current request id (`3` or `"abc"`), `$PROGRESS_TOKEN` the JSON of its
/// `params._meta.progressToken` (`null` without one; a call's lines only). Any
/// other JSON value is serialised compactly and a string value exactly `"$ID"`
/// (`"$PROGRESS_TOKEN"`) becomes the request id (its progress token).
#[derive(Clone, Debug)]
struct Template {
    /// The line without its newline.
    text: String,
    /// The placeholder to substitute, when the line contains one.
    placeholder: Option<&'static str>,
    /// The progress token's placeholder, when the line contains it.
    token_placeholder: Option<&'static str>,
}

impl Template {
    /// Builds a template from a scenario value (string or any JSON value).
    fn from_json(value: &Value) -> Template {
        let (text, id, token) = match value {
            Value::String(text) => (text.clone(), "$ID", "$PROGRESS_TOKEN"),
            other => (other.to_string(), "\"$ID\"", "\"$PROGRESS_TOKEN\""),
        };
        let placeholder = text.contains(id).then_some(id);
        let token_placeholder = text.contains(token).then_some(token);
        Template {
            text,
            placeholder,
            token_placeholder,
        }
    }

    /// Renders the line for the request whose id is `id`.
    fn render(&self, id: &Value) -> Cow<'_, str> {
        self.render_call(id, &Value::Null)
    }

    /// Renders the line for the request whose id is `id` and whose progress
    /// token is `token`.
    fn render_call(&self, id: &Value, token: &Value) -> Cow<'_, str> {
        let mut text = Cow::Borrowed(self.text.as_str());
        if let Some(placeholder) = self.token_placeholder {
            text = Cow::Owned(text.replace(placeholder, &token.to_string()));
        }
        if let Some(placeholder) = self.placeholder {
            text = Cow::Owned(text.replace(placeholder, &id.to_string()));
        }
        text
    }
}

/// What the server does with a request (`initialize`, `tools/list`).
#[derive(Clone, Debug)]
enum Behaviour {
    /// Answer normally.
    Normal,
    /// Read the request and never answer it.
    NeverReply,
    /// Exit the process with this status instead of answering.
    Exit(i32),
    /// Write this line verbatim instead of the reply.
    Raw(Template),
    /// Answer with this JSON-RPC error object (any shape).
    Error(Value),
}

impl Behaviour {
    /// Decodes `"normal" | "never_reply" | "exit" | {"exit":n} | {"raw":..} | {"error":..}`.
    fn from_json(field: &str, value: Option<&Value>) -> Result<Behaviour, String> {
        let Some(value) = value else {
            return Ok(Behaviour::Normal);
        };
        match value {
            Value::String(s) if s == "normal" => Ok(Behaviour::Normal),
            Value::String(s) if s == "never_reply" => Ok(Behaviour::NeverReply),
            Value::String(s) if s == "exit" => Ok(Behaviour::Exit(1)),
            Value::Object(map) if map.len() == 1 => {
                let (key, inner) = map.iter().next().expect("one entry");
                match key.as_str() {
                    "raw" => Ok(Behaviour::Raw(Template::from_json(inner))),
                    "error" => Ok(Behaviour::Error(inner.clone())),
                    "exit" => Ok(Behaviour::Exit(as_i32(inner).ok_or_else(|| {
                        format!("{field}.exit must be an integer exit status")
                    })?)),
                    _ => Err(format!("{field}: unknown behaviour {key:?}")),
                }
            }
            _ => Err(format!(
                "{field} must be \"normal\", \"never_reply\", \"exit\", {{\"exit\":n}}, {{\"raw\":..}} or {{\"error\":..}}"
            )),
        }
    }
}

/// When the `*_after_initialized` actions fire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadyOn {
    /// Right after the last `tools/list` page (one without `nextCursor`) is written.
    Catalog,
    /// Right after `notifications/initialized` is received.
    Initialized,
}

/// A server-to-client request sent before answering a tool call.
#[derive(Clone, Debug)]
struct ServerRequest {
    /// The request's method (`ping`, `sampling/createMessage`, ...).
    method: String,
    /// The exact id sent (string or integer, or anything a test wants).
    id: Value,
    /// Optional params object.
    params: Option<Value>,
    /// How long to wait for the client's answer.
    timeout_ms: u64,
    /// Without an answer this long, send `notifications/cancelled` for the
    /// request, then keep listening (until `timeout_ms`) for a late answer.
    cancel_after_ms: Option<u64>,
}

impl ServerRequest {
    /// Decodes `{"method":..,"id":..,"params"?:..,"timeout_ms"?:..}`.
    fn from_json(field: &str, value: &Value, default_method: &str) -> Result<Self, String> {
        let map = value
            .as_object()
            .ok_or_else(|| format!("{field} must be an object"))?;
        let method = match map.get("method") {
            None => default_method.to_owned(),
            Some(Value::String(m)) => m.clone(),
            Some(_) => return Err(format!("{field}.method must be a string")),
        };
        Ok(ServerRequest {
            method,
            id: map.get("id").cloned().unwrap_or(json!(1)),
            params: map.get("params").cloned(),
            timeout_ms: map
                .get("timeout_ms")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_REPLY_WAIT_MS),
            cancel_after_ms: map.get("cancel_after_ms").and_then(Value::as_u64),
        })
    }
}

/// How one `tools/call` of a given tool is scripted (`on_call` entry).
#[derive(Clone, Debug, Default)]
struct CallScript {
    /// Text written to stderr when the call is read.
    stderr: Option<String>,
    /// Sleep before doing anything else (on a worker thread).
    delay_ms: u64,
    /// Raw lines written before the reply.
    raw_lines: Vec<Template>,
    /// A `ping` sent to the client first; its answer is reported in the result.
    ping_first: Option<ServerRequest>,
    /// Other requests sent to the client first; their answers are reported.
    request_first: Vec<ServerRequest>,
    /// Requests sent to the client all at once (before any answer), then
    /// waited for; their answers are reported under `"at_once"`.
    requests_at_once: Vec<ServerRequest>,
    /// Bytes written to stdout without a newline before anything else is written.
    flood_bytes: u64,
    /// For this many milliseconds, `notifications/message` lines as fast as
    /// stdout takes them (on a worker thread), before the rest of the script.
    notification_flood_ms: u64,
    /// Exit with this status instead of answering.
    exit_code: Option<i32>,
    /// Close stdout (fd 1) instead of answering, and stay alive.
    close_stdout: bool,
    /// Close stdin (fd 0) once this call has been read, and stay alive.
    close_stdin: bool,
    /// Stop reading stdin once this call has been read, and stay alive.
    stop_reading_stdin: bool,
    /// Never answer.
    no_reply: bool,
    /// Write this line instead of the reply.
    reply_raw: Option<Template>,
    /// Answer with this id instead of the request's (`null` allowed).
    reply_id: Option<Value>,
    /// Answer with this JSON-RPC error object.
    error: Option<Value>,
    /// Answer with this result object instead of the tool's own.
    result: Option<Value>,
    /// Answer with a text result of this many `x` bytes.
    text_bytes: Option<u64>,
    /// Answer `input_required` first (MRTR, see `modern.rs`).
    input_required: Option<Arc<modern::MrtrScript>>,
    /// `resultType` of the generated result (`Some(None)`: omit it); modern era only.
    result_type: Option<Option<Value>>,
}

impl CallScript {
    /// Decodes one `on_call` entry.
    fn from_json(field: &str, value: &Value) -> Result<CallScript, String> {
        let map = value
            .as_object()
            .ok_or_else(|| format!("{field} must be an object"))?;
        let mut script = CallScript::default();
        for (key, inner) in map {
            let name = format!("{field}.{key}");
            match key.as_str() {
                "stderr" => script.stderr = Some(as_string(&name, inner)?),
                "delay_ms" => script.delay_ms = as_u64(&name, inner)?,
                "raw_lines" => script.raw_lines = templates(&name, inner)?,
                "ping_first" => {
                    script.ping_first = Some(ServerRequest::from_json(&name, inner, "ping")?)
                }
                "request_first" => {
                    let items = match inner {
                        Value::Array(items) => items.iter().collect(),
                        other => vec![other],
                    };
                    for item in items {
                        script.request_first.push(ServerRequest::from_json(
                            &name,
                            item,
                            "sampling/createMessage",
                        )?);
                    }
                }
                "requests_at_once" => {
                    let Value::Array(items) = inner else {
                        return Err(format!("{name} must be an array"));
                    };
                    for item in items {
                        script.requests_at_once.push(ServerRequest::from_json(
                            &name,
                            item,
                            "sampling/createMessage",
                        )?);
                    }
                }
                "flood_bytes" => script.flood_bytes = as_u64(&name, inner)?,
                "notification_flood_ms" => script.notification_flood_ms = as_u64(&name, inner)?,
                "exit_code" => {
                    script.exit_code =
                        Some(as_i32(inner).ok_or_else(|| format!("{name} must be an integer"))?)
                }
                "close_stdout" => script.close_stdout = as_bool(&name, inner)?,
                "close_stdin" => script.close_stdin = as_bool(&name, inner)?,
                "stop_reading_stdin" => script.stop_reading_stdin = as_bool(&name, inner)?,
                "no_reply" => script.no_reply = as_bool(&name, inner)?,
                "reply_raw" => script.reply_raw = Some(Template::from_json(inner)),
                "reply_id" => script.reply_id = Some(inner.clone()),
                "error" => script.error = Some(inner.clone()),
                "result" => script.result = Some(inner.clone()),
                "text_bytes" => script.text_bytes = Some(as_u64(&name, inner)?),
                "input_required" => {
                    script.input_required =
                        Some(Arc::new(modern::MrtrScript::from_json(&name, inner)?))
                }
                "result_type" => script.result_type = Some(modern::optional_value(inner)),
                _ => return Err(format!("unknown field {name}")),
            }
        }
        Ok(script)
    }

    /// Whether the call must run on its own thread (it sleeps or waits).
    fn waits(&self) -> bool {
        self.delay_ms > 0
            || self.notification_flood_ms > 0
            || self.ping_first.is_some()
            || !self.request_first.is_empty()
            || !self.requests_at_once.is_empty()
    }
}

/// A decoded scenario. Every field is optional in the JSON; see the README.
#[derive(Debug)]
struct Scenario {
    /// `protocolVersion` to answer (any JSON); `None` echoes the client's proposal.
    protocol_version: Option<Value>,
    /// `capabilities` to answer (any JSON).
    capabilities: Value,
    /// `serverInfo` to answer (any JSON).
    server_info: Value,
    /// Optional `instructions` to answer.
    instructions: Option<Value>,
    /// A whole `initialize` result replacing the generated one.
    initialize_result: Option<Value>,
    /// What to do with `initialize`.
    initialize: Behaviour,
    /// Sleep before answering `initialize`.
    initialize_delay_ms: u64,
    /// Lines written before the `initialize` reply.
    before_initialize_reply: Vec<Template>,
    /// Lines written before every reply.
    noise: Vec<Template>,
    /// Replies per other method (`resources/list`, `resources/read`, ...): the
    /// i-th request of a method gets entry i (the last repeats).
    methods: HashMap<String, Vec<Value>>,
    /// The single-page catalog (raw JSON, any shape).
    tools: Value,
    /// Raw `tools/list` results, one per call, the last repeated.
    pages: Option<Vec<Value>>,
    /// Answer every `tools/list` with a fresh cursor.
    endless_pages: bool,
    /// Tools on each endless page.
    endless_tools_per_page: u64,
    /// What to do with `tools/list`.
    tools_list: Behaviour,
    /// Sleep before answering each `tools/list`.
    tools_list_delay_ms: u64,
    /// Scripts per tool name; the i-th call uses entry i (the last repeats).
    on_call: HashMap<String, Vec<Arc<CallScript>>>,
    /// Lines written to stderr at startup.
    stderr_lines: Vec<String>,
    /// Bytes written to stderr at startup.
    stderr_flood_bytes: u64,
    /// Flood stderr without newlines.
    stderr_flood_no_newline: bool,
    /// Bytes written to stdout without a newline in place of the `initialize` reply.
    flood_stdout_bytes: u64,
    /// Byte used for stdout floods.
    flood_byte: u8,
    /// At the ready point, stop reading stdin but stay alive.
    stop_reading_stdin_after_initialized: bool,
    /// At the ready point, close stdout but keep reading stdin.
    close_stdout_after_initialized: bool,
    /// At the ready point, close stdin and stay alive.
    close_stdin_after_initialized: bool,
    /// At the ready point, exit with this status.
    exit_after_initialized: Option<i32>,
    /// Which event is the ready point.
    ready_on: ReadyOn,
    /// File where every received line is appended.
    record: Option<String>,
    /// Append `{"started_pid": <pid>}` to the record file at startup.
    record_pid: bool,
    /// Before each received line, append `{"received_us": <µs since the Unix
    /// epoch>}` to the record file.
    record_times: bool,
    /// Serve the `env` tool.
    print_env: bool,
    /// Do not answer a call after `notifications/cancelled` named it.
    honor_cancel: bool,
    /// Stay alive after stdin reaches EOF.
    ignore_stdin_eof: bool,
    /// Names callable without an `on_call` entry (builtins and catalog names).
    known_tools: HashSet<String>,
    /// Exit with this status when the first request is not `initialize` (legacy era).
    exit_if_first_not_initialize: Option<i32>,
    /// Exit with this status right after answering `server/discover` (legacy era).
    exit_after_discover: Option<i32>,
    /// The era and everything modern (see `modern.rs`).
    modern: modern::Config,
}

impl Scenario {
    /// Appends one line to the record file, if there is one (what the server
    /// did, beside what it received).
    fn append_record(&self, line: &Value) {
        if let Some(path) = &self.record
            && let Ok(mut file) = OpenOptions::new().append(true).open(path)
        {
            let _ = writeln!(file, "{line}");
        }
    }

    /// Decodes and checks a scenario object; the error names the bad field.
    fn from_json(value: &Value) -> Result<Scenario, String> {
        const FIELDS: &[&str] = &[
            "description",
            "protocolVersion",
            "capabilities",
            "serverInfo",
            "instructions",
            "initialize_result",
            "initialize",
            "initialize_delay_ms",
            "before_initialize_reply",
            "noise",
            "methods",
            "tools",
            "pages",
            "endless_pages",
            "endless_tools_per_page",
            "tools_list",
            "tools_list_delay_ms",
            "on_call",
            "stderr_lines",
            "stderr_flood_bytes",
            "stderr_flood_no_newline",
            "flood_stdout_bytes",
            "flood_byte",
            "stop_reading_stdin_after_initialized",
            "close_stdout_after_initialized",
            "close_stdin",
            "close_stdin_after_initialized",
            "exit_after_initialized",
            "ready_on",
            "record",
            "record_pid",
            "record_times",
            "print_env",
            "emit_tool",
            "honor_cancel",
            "ignore_stdin_eof",
            "exit_if_first_not_initialize",
            "exit_after_discover",
        ];
        let map = value
            .as_object()
            .ok_or("the scenario must be a JSON object")?;
        if let Some(unknown) = map
            .keys()
            .find(|key| !FIELDS.contains(&key.as_str()) && !modern::FIELDS.contains(&key.as_str()))
        {
            return Err(format!("unknown field {unknown:?}"));
        }
        let get_u64 = |key: &str| map.get(key).map_or(Ok(0), |v| as_u64(key, v));
        let get_bool = |key: &str| map.get(key).map_or(Ok(false), |v| as_bool(key, v));
        let get_lines = |key: &str| map.get(key).map_or(Ok(Vec::new()), |v| templates(key, v));

        let print_env = get_bool("print_env")?;
        let emit_tool = get_bool("emit_tool")?;
        let tools = match map.get("tools") {
            Some(tools) => tools.clone(),
            None => default_tools(print_env, emit_tool),
        };
        let pages = match map.get("pages") {
            None => None,
            Some(Value::Array(pages)) if !pages.is_empty() => Some(pages.clone()),
            Some(_) => return Err("pages must be a non-empty array".into()),
        };

        let mut on_call = HashMap::new();
        if let Some(entries) = map.get("on_call") {
            let entries = entries.as_object().ok_or("on_call must be an object")?;
            for (tool, entry) in entries {
                let field = format!("on_call.{tool}");
                let scripts = match entry {
                    Value::Array(items) if !items.is_empty() => items
                        .iter()
                        .map(|item| CallScript::from_json(&field, item).map(Arc::new))
                        .collect::<Result<Vec<_>, _>>()?,
                    Value::Array(_) => return Err(format!("{field} must not be empty")),
                    other => vec![Arc::new(CallScript::from_json(&field, other)?)],
                };
                on_call.insert(tool.clone(), scripts);
            }
        }

        let mut known_tools: HashSet<String> = BUILTIN_TOOLS
            .iter()
            .map(|name| (*name).to_owned())
            .collect();
        if print_env {
            known_tools.insert("env".into());
        }
        collect_tool_names(&tools, &mut known_tools);
        for page in pages.iter().flatten() {
            collect_tool_names(page.get("tools").unwrap_or(&Value::Null), &mut known_tools);
        }

        let ready_on = match map.get("ready_on").and_then(Value::as_str) {
            None | Some("catalog") => ReadyOn::Catalog,
            Some("initialized") => ReadyOn::Initialized,
            Some(other) => return Err(format!("ready_on: unknown value {other:?}")),
        };
        let stderr_lines = match map.get("stderr_lines") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| as_string("stderr_lines[]", item))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("stderr_lines must be an array of strings".into()),
        };
        let flood_byte = match map.get("flood_byte") {
            None => b'a',
            Some(Value::String(s)) if s.len() == 1 => s.as_bytes()[0],
            Some(_) => return Err("flood_byte must be a one-byte string".into()),
        };
        let exit_after_initialized = match map.get("exit_after_initialized") {
            None => None,
            Some(v) => Some(as_i32(v).ok_or("exit_after_initialized must be an integer")?),
        };
        let exit_status = |key: &str| match map.get(key) {
            None => Ok(None),
            Some(v) => as_i32(v)
                .map(Some)
                .ok_or_else(|| format!("{key} must be an integer")),
        };

        Ok(Scenario {
            protocol_version: map.get("protocolVersion").cloned(),
            capabilities: map
                .get("capabilities")
                .cloned()
                .unwrap_or_else(|| json!({"tools": {}})),
            server_info: map.get("serverInfo").cloned().unwrap_or_else(
                || json!({"name": "smthrs-mcp-scripted-server", "version": "0.1.0"}),
            ),
            instructions: map.get("instructions").cloned(),
            initialize_result: map.get("initialize_result").cloned(),
            initialize: Behaviour::from_json("initialize", map.get("initialize"))?,
            initialize_delay_ms: get_u64("initialize_delay_ms")?,
            before_initialize_reply: get_lines("before_initialize_reply")?,
            noise: get_lines("noise")?,
            methods: match map.get("methods") {
                None => HashMap::new(),
                Some(Value::Object(methods)) => methods
                    .iter()
                    .map(|(method, entries)| match entries {
                        Value::Array(entries) if !entries.is_empty() => {
                            Ok((method.clone(), entries.clone()))
                        }
                        _ => Err(format!("methods.{method} must be a non-empty array")),
                    })
                    .collect::<Result<_, String>>()?,
                Some(_) => return Err("methods must be an object".into()),
            },
            tools,
            pages,
            endless_pages: get_bool("endless_pages")?,
            endless_tools_per_page: get_u64("endless_tools_per_page")?,
            tools_list: Behaviour::from_json("tools_list", map.get("tools_list"))?,
            tools_list_delay_ms: get_u64("tools_list_delay_ms")?,
            on_call,
            stderr_lines,
            stderr_flood_bytes: get_u64("stderr_flood_bytes")?,
            stderr_flood_no_newline: get_bool("stderr_flood_no_newline")?,
            flood_stdout_bytes: get_u64("flood_stdout_bytes")?,
            flood_byte,
            stop_reading_stdin_after_initialized: get_bool("stop_reading_stdin_after_initialized")?,
            close_stdout_after_initialized: get_bool("close_stdout_after_initialized")?,
            close_stdin_after_initialized: get_bool("close_stdin")?
                || get_bool("close_stdin_after_initialized")?,
            exit_after_initialized,
            ready_on,
            record: match map.get("record") {
                None => None,
                Some(v) => Some(as_string("record", v)?),
            },
            record_pid: get_bool("record_pid")?,
            record_times: get_bool("record_times")?,
            print_env,
            honor_cancel: get_bool("honor_cancel")?,
            ignore_stdin_eof: get_bool("ignore_stdin_eof")?,
            known_tools,
            exit_if_first_not_initialize: exit_status("exit_if_first_not_initialize")?,
            exit_after_discover: exit_status("exit_after_discover")?,
            modern: modern::Config::from_json(map)?,
        })
    }
}

/// Adds the `name` of every object in a raw `tools` array to `names`.
fn collect_tool_names(tools: &Value, names: &mut HashSet<String>) {
    for tool in tools.as_array().into_iter().flatten() {
        if let Some(name) = tool.get("name").and_then(Value::as_str) {
            names.insert(name.to_owned());
        }
    }
}

/// Decodes a list of raw lines.
fn templates(field: &str, value: &Value) -> Result<Vec<Template>, String> {
    match value {
        Value::Array(items) => Ok(items.iter().map(Template::from_json).collect()),
        _ => Err(format!("{field} must be an array of lines")),
    }
}

/// Reads a non-negative integer field.
fn as_u64(field: &str, value: &Value) -> Result<u64, String> {
    value
        .as_u64()
        .ok_or_else(|| format!("{field} must be a non-negative integer"))
}

/// Reads a boolean field.
fn as_bool(field: &str, value: &Value) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("{field} must be a boolean"))
}

/// Reads a string field.
fn as_string(field: &str, value: &Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{field} must be a string"))
}

/// Reads an exit status.
fn as_i32(value: &Value) -> Option<i32> {
    value.as_i64().and_then(|n| i32::try_from(n).ok())
}

/// The tools always callable, whatever the catalog says.
const BUILTIN_TOOLS: &[&str] = &[
    "echo", "add", "fail", "slow", "exit", "stderr", "cwd", "emit",
];

/// The default catalog: the builtin tools (`emit` only when `emit_tool` is
/// set), plus `env` when `print_env` is set.
fn default_tools(print_env: bool, emit_tool: bool) -> Value {
    let tool = |name: &str, description: &str, properties: Value, required: &[&str]| {
        json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object", "properties": properties, "required": required},
        })
    };
    let mut tools = vec![
        tool(
            "echo",
            "Returns its `text` argument.",
            json!({"text": {"type": "string"}}),
            &["text"],
        ),
        tool(
            "add",
            "Adds two numbers.",
            json!({"a": {"type": "number"}, "b": {"type": "number"}}),
            &["a", "b"],
        ),
        tool(
            "fail",
            "Always returns a tool result with isError: true.",
            json!({"text": {"type": "string"}}),
            &[],
        ),
        tool(
            "slow",
            "Sleeps `ms` milliseconds (default 1000), then answers.",
            json!({"ms": {"type": "integer", "minimum": 0}}),
            &[],
        ),
        tool(
            "exit",
            "Exits the server process with status `code` (default 1) without answering.",
            json!({"code": {"type": "integer"}}),
            &[],
        ),
        tool(
            "stderr",
            "Writes `text` to the server's stderr, then answers.",
            json!({"text": {"type": "string"}}),
            &["text"],
        ),
        tool(
            "cwd",
            "Returns the server's current directory.",
            json!({}),
            &[],
        ),
    ];
    if emit_tool {
        tools.push(tool(
            "emit",
            "Writes each of `lines` (raw lines), `interval_ms` apart, then answers.",
            json!({"lines": {"type": "array"}, "interval_ms": {"type": "integer", "minimum": 0}}),
            &["lines"],
        ));
    }
    if print_env {
        tools.push(tool(
            "env",
            "Returns the server's whole environment as a JSON object.",
            json!({}),
            &[],
        ));
    }
    Value::Array(tools)
}

/// State shared by the reader thread and the call worker threads.
struct Shared {
    /// The only stdout writer; each message is flushed whole.
    out: Mutex<BufWriter<io::Stdout>>,
    /// Set once fd 1 is closed, so nothing is written to a reused descriptor.
    stdout_closed: AtomicBool,
    /// Lines written before every reply.
    noise: Vec<Template>,
    /// Server-to-client requests waiting for the client's answer.
    pending: Mutex<Vec<(Value, mpsc::Sender<Value>)>>,
    /// Keys ([`id_key`]) of requests named by `notifications/cancelled`.
    cancelled: Mutex<HashSet<String>>,
    /// Byte used for stdout floods.
    flood_byte: u8,
}

impl Shared {
    /// Creates the shared state for a scenario.
    fn new(scenario: &Scenario) -> Shared {
        Shared {
            out: Mutex::new(BufWriter::with_capacity(64 * 1024, io::stdout())),
            stdout_closed: AtomicBool::new(false),
            noise: scenario.noise.clone(),
            pending: Mutex::new(Vec::new()),
            cancelled: Mutex::new(HashSet::new()),
            flood_byte: scenario.flood_byte,
        }
    }

    /// Locks the writer, tolerating a poisoned lock.
    fn lock_out(&self) -> std::sync::MutexGuard<'_, BufWriter<io::Stdout>> {
        self.out.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// Writes raw lines (each followed by `\n`) and flushes; errors are ignored.
    fn write_lines<'a>(&self, lines: impl IntoIterator<Item = Cow<'a, str>>) {
        let mut out = self.lock_out();
        if self.stdout_closed.load(Ordering::SeqCst) {
            return;
        }
        for line in lines {
            let _ = out.write_all(line.as_bytes());
            let _ = out.write_all(b"\n");
        }
        let _ = out.flush();
    }

    /// Writes the noise lines, then `reply` (a line verbatim), and flushes.
    fn reply_raw(&self, reply: &str) {
        let noise = self.noise.iter().map(|t| t.render(&Value::Null));
        self.write_lines(noise.chain(std::iter::once(Cow::Borrowed(reply))));
    }

    /// Writes the noise lines, then `message` serialised, and flushes.
    fn reply(&self, message: &Value) {
        let mut out = self.lock_out();
        if self.stdout_closed.load(Ordering::SeqCst) {
            return;
        }
        for line in &self.noise {
            let _ = out.write_all(line.render(&Value::Null).as_bytes());
            let _ = out.write_all(b"\n");
        }
        let _ = serde_json::to_writer(&mut *out, message);
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }

    /// Answers request `id` with `result`.
    fn reply_result(&self, id: Value, result: Value) {
        self.reply(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Answers request `id` with a JSON-RPC error object (any shape).
    fn reply_error(&self, id: Value, error: Value) {
        self.reply(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
    }

    /// Writes `bytes` bytes without a newline, in 64 KiB chunks; stops on error.
    fn flood(&self, bytes: u64) {
        let chunk = vec![self.flood_byte; FLOOD_CHUNK];
        let mut out = self.lock_out();
        if self.stdout_closed.load(Ordering::SeqCst) {
            return;
        }
        if write_flood(&mut *out, &chunk, bytes).is_ok() {
            let _ = out.flush();
        }
    }

    /// Writes `notifications/message` lines for `period`, in 64 KiB batches,
    /// releasing stdout between batches (replies to the client's requests
    /// interleave); stops quietly when stdout is gone. Returns the lines written.
    fn flood_notifications(&self, period: Duration) -> u64 {
        const LINE: &[u8] =
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"flood\"}}\n";
        let per_batch = FLOOD_CHUNK / LINE.len();
        let batch = LINE.repeat(per_batch);
        let until = Instant::now() + period;
        let mut written = 0;
        while Instant::now() < until {
            let mut out = self.lock_out();
            if self.stdout_closed.load(Ordering::SeqCst)
                || out.write_all(&batch).is_err()
                || out.flush().is_err()
            {
                break;
            }
            written += per_batch as u64;
        }
        written
    }

    /// Flushes and closes stdout (fd 1); later writes are skipped.
    fn close_stdout(&self) {
        let mut out = self.lock_out();
        let _ = out.flush();
        if !self.stdout_closed.swap(true, Ordering::SeqCst) {
            close_fd(1);
        }
    }

    /// Flushes stdout and exits with `code`.
    fn exit(&self, code: i32) -> ! {
        let _ = self.lock_out().flush();
        process::exit(code)
    }

    /// Sends a request to the client and waits for its answer (`None` on timeout).
    fn ask_client(&self, request: &ServerRequest) -> Option<Value> {
        let rx = self.send_request(request);
        self.wait_answer(request, &rx).answer
    }

    /// Registers a server-to-client request and writes it; its answer arrives on
    /// the receiver.
    fn send_request(&self, request: &ServerRequest) -> mpsc::Receiver<Value> {
        let (tx, rx) = mpsc::channel();
        self.pending
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .push((request.id.clone(), tx));
        let mut message = json!({"jsonrpc": "2.0", "id": request.id, "method": request.method});
        if let Some(params) = &request.params {
            message["params"] = params.clone();
        }
        self.write_lines([Cow::Owned(message.to_string())]);
        rx
    }

    /// Waits for the answer to a request sent with [`Shared::send_request`]:
    /// until `timeout_ms`, or (with `cancel_after_ms`) until then, after which
    /// `notifications/cancelled` is sent and a late answer is waited for until
    /// `timeout_ms`.
    fn wait_answer(&self, request: &ServerRequest, rx: &mpsc::Receiver<Value>) -> Asked {
        let total = Duration::from_millis(request.timeout_ms);
        let first = request
            .cancel_after_ms
            .map_or(total, |ms| Duration::from_millis(ms).min(total));
        let answer = rx.recv_timeout(first).ok();
        let mut asked = Asked {
            answer,
            cancelled: false,
            late: None,
        };
        if asked.answer.is_none() && request.cancel_after_ms.is_some() {
            let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": request.id, "reason": "scripted-server: no longer needed"}});
            self.write_lines([Cow::Owned(cancel.to_string())]);
            asked.cancelled = true;
            asked.late = rx.recv_timeout(total.saturating_sub(first)).ok();
        }
        if asked.answer.is_none() && asked.late.is_none() {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.retain(|(id, _)| id != &request.id);
        }
        asked
    }

    /// Routes a response from the client to the request waiting for it: an exact
    /// id match first, then a loose one (`"7"` for `7`) so a wrong id type is
    /// reported instead of timing out. Unmatched responses are dropped.
    fn route_response(&self, message: Value) {
        let Some(id) = message.get("id") else { return };
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        let index = pending.iter().position(|(sent, _)| sent == id).or_else(|| {
            let key = id_key(id);
            pending.iter().position(|(sent, _)| id_key(sent) == key)
        });
        if let Some(index) = index {
            let (_, tx) = pending.swap_remove(index);
            let _ = tx.send(message);
        }
    }

    /// Whether `notifications/cancelled` named request `id`.
    fn is_cancelled(&self, id: &Value) -> bool {
        self.cancelled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&id_key(id))
    }
}

/// A loose key for an id: a string's content, or any other value's JSON.
fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Closes a standard descriptor so the peer sees EOF (fd 1) or EPIPE (fd 0).
fn close_fd(fd: i32) {
    #[cfg(unix)]
    {
        use std::os::fd::{FromRawFd, OwnedFd};
        // SAFETY: fd 0 and 1 are open for the whole life of the process and are
        // only closed here, once (guarded by the callers). Nothing else holds
        // them as an `OwnedFd`, and every later std use of them goes through
        // `Stdin`/`Stdout`, which this binary no longer touches afterwards.
        drop(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    #[cfg(not(unix))]
    let _ = fd;
}

/// What the reader loop does after handling a message.
enum Flow {
    /// Keep reading.
    Continue,
    /// Stop reading stdin, stay alive.
    StopReading,
    /// Close stdin, stay alive.
    CloseStdin,
}

/// The reader side of the server: owns stdin, the record file and counters.
struct Server {
    /// The scenario being played.
    scenario: Arc<Scenario>,
    /// State shared with call workers.
    shared: Arc<Shared>,
    /// Where received lines are appended.
    record: Option<File>,
    /// `tools/call` count per tool name, to pick `on_call` entries.
    call_counts: HashMap<String, usize>,
    /// Number of `tools/list` calls answered so far.
    list_calls: usize,
    /// Whether the ready-point actions already ran.
    ready_fired: bool,
    /// Whether fd 0 was already closed.
    stdin_closed: bool,
    /// Whether a request was already read (for `exit_if_first_not_initialize`).
    first_request_seen: bool,
    /// Requests answered per scripted method.
    method_calls: HashMap<String, usize>,
    /// The id of the last `subscriptions/listen` received (`$LISTEN` in a
    /// `methods` entry's `before` lines).
    last_listen: Option<Value>,
    /// The progress token of the last `tools/call` received (`null`: none;
    /// `$PROGRESS_TOKEN` in a `methods` entry's `before` lines).
    last_progress_token: Value,
    /// Modern-era state (request count, MRTR flows, dual-era lock).
    modern: modern::State,
}

impl Server {
    /// Reads stdin until EOF (or until the scenario stops reading).
    fn run(mut self) {
        let stdin = io::stdin();
        let mut reader = stdin.lock();
        let mut buf = Vec::with_capacity(8 * 1024);
        let flow = loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) => break None,
                Ok(_) => {}
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => break None,
            }
            let mut line = buf.as_slice();
            if let Some(rest) = line.strip_suffix(b"\n") {
                line = rest;
            }
            if let Some(rest) = line.strip_suffix(b"\r") {
                line = rest;
            }
            if let Some(file) = &mut self.record {
                if self.scenario.record_times {
                    let micros = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| d.as_micros());
                    let _ = writeln!(file, "{}", json!({"received_us": micros as u64}));
                }
                let mut entry = Vec::with_capacity(line.len() + 1);
                entry.extend_from_slice(line);
                entry.push(b'\n');
                let _ = file.write_all(&entry);
            }
            let Some(message) = parse_json(line) else {
                continue;
            };
            match self.handle(message) {
                Flow::Continue => {}
                other => break Some(other),
            }
        };
        drop(reader);
        match flow {
            None if !self.scenario.ignore_stdin_eof => self.shared.exit(0),
            None | Some(Flow::StopReading) | Some(Flow::Continue) => {}
            Some(Flow::CloseStdin) => self.close_stdin(),
        }
        // Stay alive (the watchdog ends the process when the client goes away).
        loop {
            thread::park();
        }
    }

    /// Classifies one parsed message and dispatches it.
    fn handle(&mut self, message: Value) -> Flow {
        let Value::Object(mut map) = message else {
            return Flow::Continue;
        };
        let method = match map.remove("method") {
            Some(Value::String(method)) => Some(method),
            Some(_) => return Flow::Continue,
            None => None,
        };
        let params = map.remove("params").unwrap_or(Value::Null);
        match (method, map.remove("id")) {
            (Some(method), Some(id)) => self.request(&method, id, params),
            (Some(method), None) => self.notification(&method, &params),
            (None, Some(id)) => {
                map.insert("id".into(), id);
                self.shared.route_response(Value::Object(map));
                Flow::Continue
            }
            (None, None) => Flow::Continue,
        }
    }

    /// Handles a notification from the client.
    fn notification(&mut self, method: &str, params: &Value) -> Flow {
        match method {
            "notifications/cancelled" => {
                if let Some(id) = params.get("requestId") {
                    let mut cancelled = self
                        .shared
                        .cancelled
                        .lock()
                        .unwrap_or_else(|p| p.into_inner());
                    cancelled.insert(id_key(id));
                }
                Flow::Continue
            }
            "notifications/initialized" if self.scenario.ready_on == ReadyOn::Initialized => {
                self.ready()
            }
            _ => Flow::Continue,
        }
    }

    /// Handles a request from the client.
    fn request(&mut self, method: &str, id: Value, params: Value) -> Flow {
        let first = !self.first_request_seen;
        self.first_request_seen = true;
        if self.serves_modern() {
            return self.modern_request(method, id, params);
        }
        if first
            && method != "initialize"
            && let Some(code) = self.scenario.exit_if_first_not_initialize
        {
            self.shared.exit(code);
        }
        if self.scenario.methods.contains_key(method) {
            self.scripted_method(id, method);
            return Flow::Continue;
        }
        match method {
            "initialize" => {
                self.initialize(id, &params);
                Flow::Continue
            }
            "ping" => {
                self.shared.reply_result(id, json!({}));
                Flow::Continue
            }
            "tools/list" => self.tools_list(id, false),
            "tools/call" => self.tools_call(id, params, false),
            "server/discover" => {
                let scenario = Arc::clone(&self.scenario);
                match &scenario.modern.discover {
                    Behaviour::Normal => self
                        .shared
                        .reply_error(id, json!({"code": -32601, "message": "Method not found"})),
                    other => self.misbehave(other, id),
                }
                if let Some(code) = scenario.exit_after_discover {
                    self.shared.exit(code);
                }
                Flow::Continue
            }
            _ => {
                self.shared
                    .reply_error(id, json!({"code": -32601, "message": "Method not found"}));
                Flow::Continue
            }
        }
    }

    /// Answers a method of `methods` with its next entry: `{"result": ...}`,
    /// `{"error": ...}`, `{"big_text": n, "uri": u}` (a `resources/read`
    /// result of one text content of `n` bytes of `x`), `{"big_blob": n, "uri":
    /// u}` (one blob content of the `n` bytes [`blob_byte`] gives), or
    /// `{"long_line": "notification" | "noise", "bytes": n}` (one line of `n`
    /// bytes, and no answer: the request stays pending).
    fn scripted_method(&mut self, id: Value, method: &str) {
        let entries = &self.scenario.methods[method];
        let count = self.method_calls.entry(method.to_owned()).or_default();
        let entry = entries[(*count).min(entries.len() - 1)].clone();
        *count += 1;
        if method == "subscriptions/listen" {
            self.last_listen = Some(id.clone());
        }
        if let Some(Value::Array(lines)) = entry.get("before") {
            let listen = self.last_listen.clone().unwrap_or(Value::Null);
            let token = self.last_progress_token.to_string();
            let rendered: Vec<String> = lines
                .iter()
                .map(|line| {
                    let text = match line {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    text.replace("\"$ID\"", &id.to_string())
                        .replace("\"$LISTEN\"", &listen.to_string())
                        .replace("\"$PROGRESS_TOKEN\"", &token)
                })
                .collect();
            self.shared
                .write_lines(rendered.iter().map(|line| Cow::Borrowed(line.as_str())));
        }
        if entry.get("no_reply") == Some(&Value::Bool(true)) {
            return;
        }
        if let Some(result) = entry.get("result") {
            self.shared.reply_result(id, result.clone());
        } else if let Some(error) = entry.get("error") {
            self.shared.reply_error(id, error.clone());
        } else if let Some(n) = entry.get("big_text").and_then(Value::as_u64) {
            let uri = entry.get("uri").cloned().unwrap_or(json!("file:///big"));
            let text = "x".repeat(n as usize);
            self.shared.reply_result(
                id,
                json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}),
            );
        } else if let Some(n) = entry.get("big_blob").and_then(Value::as_u64) {
            use base64::Engine as _;
            let uri = entry.get("uri").cloned().unwrap_or(json!("file:///big"));
            let bytes: Vec<u8> = (0..n).map(blob_byte).collect();
            let blob = base64::engine::general_purpose::STANDARD.encode(&bytes);
            drop(bytes);
            // Built by hand so the 22 MiB of base64 are moved, not copied.
            let mut item = Map::new();
            item.insert("uri".into(), uri);
            item.insert("mimeType".into(), json!("application/octet-stream"));
            item.insert("blob".into(), Value::String(blob));
            let mut result = Map::new();
            result.insert("contents".into(), Value::Array(vec![Value::Object(item)]));
            self.shared.reply_result(id, Value::Object(result));
        } else if let Some(kind) = entry.get("long_line").and_then(Value::as_str) {
            let n = entry.get("bytes").and_then(Value::as_u64).unwrap_or(0) as usize;
            let line = match kind {
                "notification" => {
                    let head = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":""#;
                    let tail = r#""}}"#;
                    let fill = n.saturating_sub(head.len() + tail.len());
                    format!("{head}{}{tail}", "x".repeat(fill))
                }
                _ => "x".repeat(n),
            };
            self.shared.write_lines([Cow::Owned(line)]);
        }
    }

    /// Closes stdin (fd 0) once; the caller must never read stdin again.
    fn close_stdin(&mut self) {
        if !self.stdin_closed {
            self.stdin_closed = true;
            close_fd(0);
        }
    }

    /// Runs the ready-point actions once.
    fn ready(&mut self) -> Flow {
        if self.ready_fired {
            return Flow::Continue;
        }
        self.ready_fired = true;
        let scenario = Arc::clone(&self.scenario);
        if let Some(code) = scenario.exit_after_initialized {
            self.shared.exit(code);
        }
        if scenario.close_stdout_after_initialized {
            self.shared.close_stdout();
        }
        if scenario.close_stdin_after_initialized {
            self.close_stdin();
            Flow::CloseStdin
        } else if scenario.stop_reading_stdin_after_initialized {
            Flow::StopReading
        } else {
            Flow::Continue
        }
    }

    /// Answers `initialize` as the scenario says.
    fn initialize(&mut self, id: Value, params: &Value) {
        let scenario = Arc::clone(&self.scenario);
        if scenario.initialize_delay_ms > 0 {
            thread::sleep(Duration::from_millis(scenario.initialize_delay_ms));
        }
        self.shared.write_lines(
            scenario
                .before_initialize_reply
                .iter()
                .map(|line| line.render(&id)),
        );
        if scenario.flood_stdout_bytes > 0 {
            self.shared.flood(scenario.flood_stdout_bytes);
            return;
        }
        match &scenario.initialize {
            Behaviour::Normal => {
                let result = match &scenario.initialize_result {
                    Some(result) => result.clone(),
                    None => {
                        let version = scenario.protocol_version.clone().unwrap_or_else(|| {
                            params
                                .get("protocolVersion")
                                .cloned()
                                .unwrap_or_else(|| json!("2025-06-18"))
                        });
                        let mut result = json!({
                            "protocolVersion": version,
                            "capabilities": scenario.capabilities,
                            "serverInfo": scenario.server_info,
                        });
                        if let Some(instructions) = &scenario.instructions {
                            result["instructions"] = instructions.clone();
                        }
                        result
                    }
                };
                self.shared.reply_result(id, result);
            }
            other => self.misbehave(other, id),
        }
    }

    /// Applies a non-normal [`Behaviour`] to request `id`.
    fn misbehave(&self, behaviour: &Behaviour, id: Value) {
        match behaviour {
            Behaviour::Normal | Behaviour::NeverReply => {}
            Behaviour::Exit(code) => self.shared.exit(*code),
            Behaviour::Raw(line) => self.shared.reply_raw(&line.render(&id)),
            Behaviour::Error(error) => self.shared.reply_error(id, error.clone()),
        }
    }

    /// Answers `tools/list` with the next page; `modern` adds `resultType`, the
    /// cache hints and `_meta` to the generated pages (scripted `pages` are raw).
    fn tools_list(&mut self, id: Value, modern: bool) -> Flow {
        let scenario = Arc::clone(&self.scenario);
        if scenario.tools_list_delay_ms > 0 {
            thread::sleep(Duration::from_millis(scenario.tools_list_delay_ms));
        }
        if !matches!(scenario.tools_list, Behaviour::Normal) {
            self.misbehave(&scenario.tools_list, id);
            return Flow::Continue;
        }
        let index = self.list_calls;
        self.list_calls += 1;
        let mut generated = true;
        let result = if scenario.endless_pages {
            let tools: Vec<Value> = (0..scenario.endless_tools_per_page)
                .map(|n| {
                    json!({
                        "name": format!("page{index}_tool{n}"),
                        "description": "A tool from an endless catalog.",
                        "inputSchema": {"type": "object", "properties": {}},
                    })
                })
                .collect();
            json!({"tools": tools, "nextCursor": format!("cursor-{}", index + 1)})
        } else if let Some(pages) = &scenario.pages {
            generated = false;
            pages[index.min(pages.len() - 1)].clone()
        } else {
            json!({"tools": scenario.tools})
        };
        let result = if modern && generated {
            scenario.modern_result(result, true)
        } else {
            result
        };
        let ready = scenario.ready_on == ReadyOn::Catalog
            && result.get("nextCursor").is_none_or(Value::is_null);
        if ready && scenario.close_stdin_after_initialized {
            // Closed before the last page is written, so every write the client
            // makes once connected fails deterministically with EPIPE.
            self.close_stdin();
        }
        self.shared.reply_result(id, result);
        if !ready {
            return Flow::Continue;
        }
        self.ready()
    }

    /// Answers `tools/call`, inline or on a worker thread when it must wait.
    /// `modern` is set in the modern era: generated results get `resultType` and
    /// `_meta`, and `input_required` scripts start an MRTR flow.
    fn tools_call(&mut self, id: Value, params: Value, modern: bool) -> Flow {
        let Value::Object(mut params) = params else {
            self.shared.reply_error(
                id,
                json!({"code": -32602, "message": "tools/call params must be an object"}),
            );
            return Flow::Continue;
        };
        let Some(Value::String(name)) = params.remove("name") else {
            self.shared
                .reply_error(id, json!({"code": -32602, "message": "missing tool name"}));
            return Flow::Continue;
        };
        let arguments = params.remove("arguments").unwrap_or_else(|| json!({}));
        let progress_token = params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .cloned()
            .unwrap_or(Value::Null);
        self.last_progress_token = progress_token.clone();
        let script = self.scenario.on_call.get(&name).map(|scripts| {
            let count = self.call_counts.entry(name.clone()).or_insert(0);
            let script = Arc::clone(&scripts[(*count).min(scripts.len() - 1)]);
            *count += 1;
            script
        });
        if script.is_none() && !self.scenario.known_tools.contains(&name) {
            self.shared.reply_error(
                id,
                json!({"code": -32602, "message": format!("Unknown tool: {name}")}),
            );
            return Flow::Continue;
        }
        if let Some(text) = script.as_ref().and_then(|s| s.stderr.as_ref()) {
            let _ = writeln!(io::stderr(), "{text}");
        }
        if let Some(mrtr) = script.as_ref().and_then(|s| s.input_required.clone()) {
            let meta = Value::Object(params);
            self.start_mrtr(id, name, arguments, mrtr, modern.then_some(&meta));
            return Flow::Continue;
        }
        if modern
            && let Some(result) = script.as_ref().and_then(|s| s.result.as_ref())
            && let Some(error) = self.undeclared_task(result, &params)
        {
            self.shared.reply_error(id, error);
            return Flow::Continue;
        }
        let decorate = modern.then(|| {
            let result_type = match script.as_ref().and_then(|s| s.result_type.clone()) {
                Some(result_type) => result_type,
                None => self.scenario.modern.result_type.clone(),
            };
            modern::Decorate {
                result_type,
                server_info: self.scenario.server_info.clone(),
            }
        });
        let flow = match &script {
            Some(s) if s.close_stdin => {
                // Closed before answering, so the client's next write fails.
                self.close_stdin();
                Flow::CloseStdin
            }
            Some(s) if s.stop_reading_stdin => Flow::StopReading,
            _ => Flow::Continue,
        };
        let call = Call {
            shared: Arc::clone(&self.shared),
            scenario: Arc::clone(&self.scenario),
            id,
            name,
            arguments,
            progress_token,
            script,
            decorate,
        };
        let waits = matches!(call.name.as_str(), "slow" | "emit");
        if waits || call.script.as_ref().is_some_and(|s| s.waits()) {
            thread::spawn(move || call.run());
        } else {
            call.run();
        }
        flow
    }
}

/// One `tools/call` being answered.
struct Call {
    /// Shared writer and routing state.
    shared: Arc<Shared>,
    /// The scenario (for `print_env` and `honor_cancel`).
    scenario: Arc<Scenario>,
    /// The request id.
    id: Value,
    /// The tool name.
    name: String,
    /// The tool arguments (`{}` when absent).
    arguments: Value,
    /// `params._meta.progressToken` (`null` when absent).
    progress_token: Value,
    /// The `on_call` script for this call, if any.
    script: Option<Arc<CallScript>>,
    /// Modern era: what generated results carry (`resultType`, `_meta`).
    decorate: Option<modern::Decorate>,
}

impl Call {
    /// Plays the script, then answers (or not).
    fn run(self) {
        let shared = &self.shared;
        let mut report = Map::new();
        if let Some(script) = &self.script {
            if script.delay_ms > 0 {
                thread::sleep(Duration::from_millis(script.delay_ms));
            }
            if script.flood_bytes > 0 {
                shared.flood(script.flood_bytes);
            }
            if script.notification_flood_ms > 0 {
                let lines =
                    shared.flood_notifications(Duration::from_millis(script.notification_flood_ms));
                self.scenario
                    .append_record(&json!({"flooded_lines": lines}));
            }
            shared.write_lines(
                script
                    .raw_lines
                    .iter()
                    .map(|line| line.render_call(&self.id, &self.progress_token)),
            );
            if let Some(ping) = &script.ping_first {
                report.insert("ping".into(), ping_report(ping, shared.ask_client(ping)));
            }
            if !script.request_first.is_empty() {
                let answers = script
                    .request_first
                    .iter()
                    .map(|request| {
                        let rx = shared.send_request(request);
                        request_report(request, shared.wait_answer(request, &rx))
                    })
                    .collect();
                report.insert("requests".into(), Value::Array(answers));
            }
            if !script.requests_at_once.is_empty() {
                let sent: Vec<_> = script
                    .requests_at_once
                    .iter()
                    .map(|request| (request, shared.send_request(request)))
                    .collect();
                let answers = sent
                    .iter()
                    .map(|(request, rx)| request_report(request, shared.wait_answer(request, rx)))
                    .collect();
                report.insert("at_once".into(), Value::Array(answers));
            }
            if let Some(code) = script.exit_code {
                shared.exit(code);
            }
            if script.close_stdout {
                shared.close_stdout();
                return;
            }
            if script.no_reply {
                return;
            }
        }
        let script = self.script.as_deref();
        let cancelled = || self.scenario.honor_cancel && shared.is_cancelled(&self.id);
        if let Some(line) = script.and_then(|s| s.reply_raw.as_ref()) {
            if !cancelled() {
                shared.reply_raw(&line.render(&self.id));
            }
            return;
        }
        let id = match script.and_then(|s| s.reply_id.clone()) {
            Some(id) => id,
            None => self.id.clone(),
        };
        if let Some(error) = script.and_then(|s| s.error.clone()) {
            if !cancelled() {
                shared.reply_error(id, error);
            }
            return;
        }
        let result = match script {
            Some(CallScript {
                result: Some(result),
                ..
            }) => Some(result.clone()),
            Some(CallScript {
                text_bytes: Some(n),
                ..
            }) => self.finish(text_result("x".repeat(*n as usize), false)),
            _ if !report.is_empty() => {
                self.finish(text_result(Value::Object(report).to_string(), false))
            }
            _ => self.builtin().and_then(|result| self.finish(result)),
        };
        match result {
            Some(result) if !cancelled() => shared.reply_result(id, result),
            _ => {}
        }
    }

    /// Adds the modern-era members to a generated result (a no-op in the legacy era).
    fn finish(&self, result: Value) -> Option<Value> {
        Some(match &self.decorate {
            None => result,
            Some(decorate) => decorate.apply(result),
        })
    }

    /// The builtin behaviour of the tool; `None` means do not answer.
    fn builtin(&self) -> Option<Value> {
        let args = &self.arguments;
        let text_arg = || match args.get("text") {
            Some(Value::String(text)) => text.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        Some(match self.name.as_str() {
            "echo" => text_result(text_arg(), false),
            "add" => match (args.get("a"), args.get("b")) {
                (Some(Value::Number(a)), Some(Value::Number(b))) => {
                    let sum = match (a.as_i64(), b.as_i64()) {
                        (Some(a), Some(b)) => a.checked_add(b).map(Value::from),
                        _ => None,
                    }
                    .unwrap_or_else(|| {
                        Value::from(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0))
                    });
                    let mut result = text_result(sum.to_string(), false);
                    result["structuredContent"] = json!({"sum": sum});
                    result
                }
                _ => text_result("add needs numbers a and b".into(), true),
            },
            "fail" => {
                let text = match args.get("text") {
                    Some(_) => text_arg(),
                    None => "requested failure".into(),
                };
                text_result(text, true)
            }
            "slow" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(1000);
                thread::sleep(Duration::from_millis(ms));
                text_result(format!("slept {ms} ms"), false)
            }
            "exit" => {
                let code = args.get("code").and_then(as_i32).unwrap_or(1);
                self.shared.exit(code)
            }
            "stderr" => {
                let text = text_arg();
                let _ = writeln!(io::stderr(), "{text}");
                text_result(format!("wrote {} bytes to stderr", text.len() + 1), false)
            }
            "emit" => {
                let interval = args.get("interval_ms").and_then(Value::as_u64).unwrap_or(0);
                let lines = match args.get("lines") {
                    Some(Value::Array(lines)) => lines.clone(),
                    _ => Vec::new(),
                };
                for line in &lines {
                    if interval > 0 {
                        thread::sleep(Duration::from_millis(interval));
                    }
                    let line = Template::from_json(line);
                    let line = line.render_call(&self.id, &self.progress_token);
                    self.shared.write_lines(std::iter::once(line));
                }
                text_result(format!("emitted {} lines", lines.len()), false)
            }
            "cwd" => {
                let dir = std::env::current_dir()
                    .map(|dir| dir.to_string_lossy().into_owned())
                    .unwrap_or_default();
                text_result(dir, false)
            }
            "env" if self.scenario.print_env => {
                let env: Map<String, Value> = std::env::vars_os()
                    .map(|(key, value)| {
                        (
                            key.to_string_lossy().into_owned(),
                            Value::String(value.to_string_lossy().into_owned()),
                        )
                    })
                    .collect();
                text_result(Value::Object(env).to_string(), false)
            }
            _ => {
                let call = json!({"tool": self.name, "arguments": args});
                text_result(call.to_string(), false)
            }
        })
    }
}

/// A tool result with one text block.
fn text_result(text: String, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

/// Describes the client's answer to a server `ping`.
fn ping_report(ping: &ServerRequest, answer: Option<Value>) -> Value {
    let exact_id = answer.as_ref().and_then(|a| a.get("id")) == Some(&ping.id);
    let empty_result = answer.as_ref().and_then(|a| a.get("result")) == Some(&json!({}));
    let no_error = answer.as_ref().is_some_and(|a| a.get("error").is_none());
    let jsonrpc = answer.as_ref().and_then(|a| a.get("jsonrpc")) == Some(&json!("2.0"));
    json!({
        "sent_id": ping.id,
        "answered": answer.is_some(),
        "exact_id": exact_id,
        "empty_result": empty_result,
        "ok": exact_id && empty_result && no_error && jsonrpc,
        "reply": answer,
    })
}

/// What a server-to-client request got.
struct Asked {
    /// The answer received in time (before any cancellation).
    answer: Option<Value>,
    /// `notifications/cancelled` was sent for it (`cancel_after_ms`).
    cancelled: bool,
    /// An answer received after the cancellation.
    late: Option<Value>,
}

/// Describes the client's answer to another server request.
fn request_report(request: &ServerRequest, asked: Asked) -> Value {
    let answer = asked.answer;
    let exact_id = answer.as_ref().and_then(|a| a.get("id")) == Some(&request.id);
    let error_code = answer
        .as_ref()
        .and_then(|a| a.get("error"))
        .and_then(|e| e.get("code"))
        .cloned();
    let mut report = json!({
        "method": request.method,
        "sent_id": request.id,
        "answered": answer.is_some(),
        "exact_id": exact_id,
        "error_code": error_code,
        "reply": answer,
    });
    if request.cancel_after_ms.is_some() {
        report["cancelled"] = json!(asked.cancelled);
        report["late_reply"] = asked.late.unwrap_or(Value::Null);
    }
    report
}

/// Byte `i` of a `big_blob`: `(i % 251) ^ (i >> 12)`, cut to eight bits (no short
/// period, so a misplaced chunk shows).
fn blob_byte(i: u64) -> u8 {
    ((i % 251) ^ (i >> 12)) as u8
}
