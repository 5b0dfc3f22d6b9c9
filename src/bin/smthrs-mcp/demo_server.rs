//! The embedded demo MCP server behind `smthrs-mcp demo-server`.
//!
//! A small, well-behaved Model Context Protocol server speaking newline-delimited
//! JSON-RPC 2.0 on stdin/stdout: the server a new user connects to first. It is
//! dual-era: it answers `server/discover` and every request carrying the
//! 2026-07-28 `_meta` in that (stateless) revision, with `resultType` and cache
//! hints; and a legacy `initialize` at revision `2025-06-18` (echoing
//! `2025-03-26` or `2025-11-25` when the client proposes one of them). A request
//! naming another modern revision gets -32022 with the supported list. It serves
//! three tools:
//!
//! | tool | arguments | result |
//! | --- | --- | --- |
//! | `echo` | `{"text": string}` | the text |
//! | `add` | `{"a": number, "b": number}` | `{"sum": number}` as `structuredContent`, and as JSON text |
//! | `current_time` | `{}` | the current UTC time, RFC 3339 (`2025-06-18T12:00:00Z`) |
//!
//! Invalid arguments produce a tool result with `isError: true` and a text that
//! says what was expected (the model can read it and retry); an unknown tool is
//! JSON-RPC error `-32602`, an unknown method `-32601`. `ping` answers `{}`.
//! Notifications and responses are ignored. The server returns when stdin
//! reaches EOF (or stdout is closed). It is blocking std I/O: no runtime needed.

use serde_json::json;
use serde_json::{Map, Value};
use smthrs_mcp::config::type_name;
use std::io::{self, BufRead, BufWriter, Write};
use std::time::{SystemTime, UNIX_EPOCH};

/// The revision answered when the client proposes one this server does not know.
const DEFAULT_PROTOCOL_VERSION: &str = "2025-06-18";

/// Revisions echoed back when the client proposes them.
const SUPPORTED_PROTOCOL_VERSIONS: [&str; 3] = ["2025-03-26", "2025-06-18", "2025-11-25"];

/// The stateless revision served.
const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// JSON-RPC (2026-07-28): unsupported protocol version.
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The longest inbound line accepted; a longer one is skipped and answered
/// with an `Invalid Request` error, so a runaway client cannot grow memory.
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// JSON-RPC: invalid JSON was received.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the JSON sent is not a valid request object.
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the method does not exist.
const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: invalid method parameters (including an unknown tool).
const INVALID_PARAMS: i64 = -32602;

/// Serves the demo server on the process's stdin and stdout until stdin EOF.
///
/// Returns `Ok(())` on EOF or when the client closes our stdout; any other
/// I/O error is returned.
pub fn run_stdio() -> io::Result<()> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    serve(stdin.lock(), BufWriter::new(stdout.lock()))
}

/// Serves the demo server over any line reader and writer until `reader`
/// reaches EOF.
///
/// Each inbound line is one JSON-RPC message; each answer is written as one
/// line and flushed at once. A broken pipe on `writer` ends the session
/// quietly with `Ok(())`.
pub fn serve(mut reader: impl BufRead, mut writer: impl Write) -> io::Result<()> {
    let mut line = Vec::with_capacity(4096);
    loop {
        let reply = match read_line_bounded(&mut reader, &mut line, MAX_LINE_BYTES)? {
            Line::Eof => return Ok(()),
            Line::TooLong => Some(error_response(
                Value::Null,
                INVALID_REQUEST,
                format!("Invalid Request: a message may not exceed {MAX_LINE_BYTES} bytes"),
            )),
            Line::Complete => handle_line(&line),
        };
        if let Some(reply) = reply {
            match write_message(&mut writer, &reply) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::BrokenPipe => return Ok(()),
                Err(err) => return Err(err),
            }
        }
    }
}

/// What [`read_line_bounded`] found.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// End of input, nothing pending.
    Eof,
    /// A line (without its `\n`) is in the buffer. A final line without a
    /// newline at EOF also counts.
    Complete,
    /// A line longer than the limit was read and discarded.
    TooLong,
}

/// Reads one `\n`-terminated line into `line`, never holding more than `max`
/// bytes of it; the rest of an over-long line is consumed and discarded.
fn read_line_bounded(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Line> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if line.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let newline = available.iter().position(|&byte| byte == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = chunk.len() + usize::from(newline.is_some());
        reader.consume(used);
        if newline.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

/// Writes one message as a line and flushes it.
fn write_message(writer: &mut impl Write, message: &Value) -> io::Result<()> {
    serde_json::to_writer(&mut *writer, message)?;
    writer.write_all(b"\n")?;
    writer.flush()
}

/// A JSON-RPC error to answer a request with.
#[derive(Debug)]
struct RpcError {
    /// The JSON-RPC error code.
    code: i64,
    /// A short, human-readable message.
    message: String,
    /// Structured detail (-32022: the supported versions).
    data: Option<Value>,
}

impl RpcError {
    /// Builds an error from a code and a message.
    fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

/// Builds a JSON-RPC error response.
fn error_response(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Handles one inbound line; returns the response to write, if any.
///
/// Blank lines, notifications and responses get no answer. Invalid JSON is a
/// parse error and a non-object (a batch, a scalar) an invalid request, both
/// with `id: null` as JSON-RPC prescribes.
fn handle_line(line: &[u8]) -> Option<Value> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let message = match serde_json::from_slice::<Value>(line) {
        Ok(message) => message,
        Err(_) => {
            return Some(error_response(
                Value::Null,
                PARSE_ERROR,
                "Parse error: each line must be one JSON-RPC message".into(),
            ));
        }
    };
    let Value::Object(message) = message else {
        return Some(error_response(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: expected one JSON-RPC object (batches are not supported)".into(),
        ));
    };
    let id = match message.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        Some(_) => {
            return Some(error_response(
                Value::Null,
                INVALID_REQUEST,
                "Invalid Request: id must be a string or a number".into(),
            ));
        }
    };
    // A notification (no id) is never answered, even a malformed one; a
    // message without a method is a response to a request we never send.
    let id = id?;
    let method = message.get("method")?;
    let outcome = if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        Err(RpcError::new(
            INVALID_REQUEST,
            "Invalid Request: jsonrpc must be \"2.0\"",
        ))
    } else if let Value::String(method) = method {
        dispatch(method, message.get("params"))
    } else {
        Err(RpcError::new(
            INVALID_REQUEST,
            "Invalid Request: method must be a string",
        ))
    };
    Some(match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(RpcError {
            code,
            message,
            data: Some(data),
        }) => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}})
        }
        Err(err) => error_response(id, err.code, err.message),
    })
}

/// Runs one request method.
fn dispatch(method: &str, params: Option<&Value>) -> Result<Value, RpcError> {
    let params = match params {
        None | Some(Value::Null) => None,
        Some(Value::Object(params)) => Some(params),
        Some(_) => {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "Invalid params: params must be an object",
            ));
        }
    };
    let modern = match params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
    {
        None => false,
        Some(Value::String(v)) if v == MODERN_PROTOCOL_VERSION => true,
        Some(requested) => {
            return Err(RpcError {
                code: UNSUPPORTED_PROTOCOL_VERSION,
                message: "Unsupported protocol version".into(),
                data: Some(json!({"supported": all_versions(), "requested": requested})),
            });
        }
    };
    let result = match (method, modern) {
        ("server/discover", true) => Ok(discover()),
        ("initialize", false) => Ok(initialize(params)),
        ("ping", false) => Ok(json!({})),
        ("tools/list", _) => list_tools(params),
        ("tools/call", _) => call_tool(params),
        _ => Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    };
    // 2026-07-28: every result states its type; lists carry cache hints.
    result.map(|mut result| {
        if modern && let Value::Object(object) = &mut result {
            object.insert("resultType".into(), json!("complete"));
            if method == "tools/list" {
                object.insert("ttlMs".into(), json!(0));
                object.insert("cacheScope".into(), json!("public"));
            }
        }
        result
    })
}

/// Every revision served, newest first.
fn all_versions() -> Vec<&'static str> {
    let mut versions = vec![MODERN_PROTOCOL_VERSION];
    versions.extend(SUPPORTED_PROTOCOL_VERSIONS.iter().rev());
    versions
}

/// Answers `server/discover` (2026-07-28).
fn discover() -> Value {
    json!({
        "supportedVersions": all_versions(),
        "capabilities": {"tools": {}},
        "instructions": INSTRUCTIONS,
        "ttlMs": 0,
        "cacheScope": "public",
        "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
    })
}

fn server_info() -> Value {
    json!({"name": "smthrs-mcp-demo", "version": env!("CARGO_PKG_VERSION")})
}

/// What the server tells a model about itself.
const INSTRUCTIONS: &str = "A demo server: `echo` returns text, `add` adds two numbers, `current_time` tells the UTC time.";

/// Answers `initialize`: echoes a supported proposed revision, else the default.
fn initialize(params: Option<&Map<String, Value>>) -> Value {
    let proposed = params
        .and_then(|params| params.get("protocolVersion"))
        .and_then(Value::as_str);
    let version = match proposed {
        Some(version) if SUPPORTED_PROTOCOL_VERSIONS.contains(&version) => version,
        _ => DEFAULT_PROTOCOL_VERSION,
    };
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}

/// Answers `tools/list`: the whole catalog in one page.
fn list_tools(params: Option<&Map<String, Value>>) -> Result<Value, RpcError> {
    match params.and_then(|params| params.get("cursor")) {
        None | Some(Value::Null) => Ok(json!({"tools": tool_catalog()})),
        Some(_) => Err(RpcError::new(
            INVALID_PARAMS,
            "Invalid params: unknown cursor (the catalog has one page)",
        )),
    }
}

/// The catalog: each tool with a description and a closed `inputSchema`.
fn tool_catalog() -> Value {
    let annotations = json!({"readOnlyHint": true, "openWorldHint": false});
    json!([
        {
            "name": "echo",
            "title": "Echo",
            "description": "Returns the given text unchanged.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to return."}},
                "required": ["text"],
                "additionalProperties": false,
            },
            "annotations": annotations,
        },
        {
            "name": "add",
            "title": "Add",
            "description": "Adds two numbers and returns their sum.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "a": {"type": "number", "description": "The first addend."},
                    "b": {"type": "number", "description": "The second addend."},
                },
                "required": ["a", "b"],
                "additionalProperties": false,
            },
            "outputSchema": {
                "type": "object",
                "properties": {"sum": {"type": "number", "description": "a + b"}},
                "required": ["sum"],
            },
            "annotations": annotations,
        },
        {
            "name": "current_time",
            "title": "Current time",
            "description": "Returns the current UTC date and time in RFC 3339 format, \
                            e.g. 2025-06-18T12:00:00Z.",
            "inputSchema": {
                "type": "object",
                "properties": {},
                "required": [],
                "additionalProperties": false,
            },
            "annotations": annotations,
        },
    ])
}

/// Answers `tools/call`. Bad arguments are a tool result with `isError: true`;
/// a missing or unknown tool name is a JSON-RPC error.
fn call_tool(params: Option<&Map<String, Value>>) -> Result<Value, RpcError> {
    let name = match params.and_then(|params| params.get("name")) {
        Some(Value::String(name)) => name.as_str(),
        _ => {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "Invalid params: tools/call needs a string `name`",
            ));
        }
    };
    let tool: fn(&Map<String, Value>) -> Result<Value, String> = match name {
        "echo" => echo,
        "add" => add,
        "current_time" => current_time,
        _ => {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("Unknown tool: {name}"),
            ));
        }
    };
    let empty = Map::new();
    let arguments = match params.and_then(|params| params.get("arguments")) {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(arguments)) => arguments,
        Some(other) => {
            return Ok(error_result(format!(
                "Invalid arguments for `{name}`: arguments must be a JSON object, got {}.",
                type_name(other)
            )));
        }
    };
    Ok(tool(arguments).unwrap_or_else(|message| {
        error_result(format!("Invalid arguments for `{name}`: {message}"))
    }))
}

/// `echo`: returns `text`.
fn echo(arguments: &Map<String, Value>) -> Result<Value, String> {
    const USAGE: &str = "expected {\"text\": string}";
    only_keys(arguments, &["text"], USAGE)?;
    match arguments.get("text") {
        Some(Value::String(text)) => Ok(text_result(text.clone())),
        Some(other) => Err(format!(
            "`text` must be a string, got {}; {USAGE}.",
            type_name(other)
        )),
        None => Err(format!("`text` is required; {USAGE}.")),
    }
}

/// `add`: returns `a + b`, as an integer when both are integers and the sum
/// fits, else as a float.
fn add(arguments: &Map<String, Value>) -> Result<Value, String> {
    const USAGE: &str = "expected {\"a\": number, \"b\": number}";
    only_keys(arguments, &["a", "b"], USAGE)?;
    let number = |key: &str| match arguments.get(key) {
        Some(Value::Number(number)) => Ok(number.clone()),
        Some(other) => Err(format!(
            "`{key}` must be a number, got {}; {USAGE}.",
            type_name(other)
        )),
        None => Err(format!("`{key}` is required; {USAGE}.")),
    };
    let (a, b) = (number("a")?, number("b")?);
    let integer_sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) => a.checked_add(b).map(Value::from),
        _ => None,
    };
    let sum = match integer_sum {
        Some(sum) => sum,
        None => {
            let sum = a.as_f64().unwrap_or(f64::NAN) + b.as_f64().unwrap_or(f64::NAN);
            if !sum.is_finite() {
                return Err("the sum is too large to represent.".into());
            }
            Value::from(sum)
        }
    };
    let structured = json!({"sum": sum});
    let mut result = text_result(structured.to_string());
    result["structuredContent"] = structured;
    Ok(result)
}

/// `current_time`: the current UTC time in RFC 3339.
fn current_time(arguments: &Map<String, Value>) -> Result<Value, String> {
    only_keys(arguments, &[], "expected no arguments: {}")?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    Ok(text_result(rfc3339_utc(now)))
}

/// Refuses any argument not in `allowed` (the schemas are closed).
fn only_keys(arguments: &Map<String, Value>, allowed: &[&str], usage: &str) -> Result<(), String> {
    match arguments
        .keys()
        .find(|key| !allowed.contains(&key.as_str()))
    {
        Some(key) => Err(format!("unexpected argument `{key}`; {usage}.")),
        None => Ok(()),
    }
}

/// A successful tool result with one text block.
fn text_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

/// A failed tool result (`isError: true`) with one text block.
fn error_result(text: String) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// Formats seconds since the Unix epoch as RFC 3339 UTC (`YYYY-MM-DDThh:mm:ssZ`).
fn rfc3339_utc(unix_seconds: u64) -> String {
    let days = unix_seconds / 86_400;
    let seconds_of_day = unix_seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        seconds_of_day / 3600,
        seconds_of_day % 3600 / 60,
        seconds_of_day % 60
    )
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day),
/// after Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    // Shift the epoch to 0000-03-01 so leap days fall at the end of a year.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153; // 0 = March
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests;
