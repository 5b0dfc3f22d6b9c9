//! The modern (2026-07-28) side of the HTTP bridge, and the legacy probe
//! answers; the behaviour is described in the parent module's doc.

use super::{
    Body, DropConnection, HeaderMap, Inner, Method, Piece, PieceSource, Session, StatusCode,
    answer_id, json_response, lock, one_line, session_header, sse_response, status, text,
};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use hyper::Response;
use hyper::header::{ALLOW, HeaderValue};
use serde_json::{Map, Value, json};
use smthrs_mcp_testkit::bridge::{LegacyProbe, parse_json};
use smthrs_mcp_testkit::http_server::full;
use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// The `x-mcp-header` annotations of each listed tool: `(header name, property)`.
pub(super) type ToolHeaders = HashMap<String, Vec<(String, String)>>;

/// `_meta` key of the request's protocol version.
const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// The prefix and suffix of a base64-encoded header value.
const SENTINEL: (&str, &str) = ("=?base64?", "?=");

/// Dual era: whether a request takes the legacy path (a session id, or `initialize`).
pub(super) fn dual_is_legacy(method: &Method, headers: &HeaderMap, body: &[u8]) -> bool {
    if session_header(headers).is_some() {
        return true;
    }
    *method == Method::POST
        && parse_json(body)
            .as_ref()
            .and_then(|message| message.get("method"))
            .and_then(Value::as_str)
            == Some("initialize")
}

/// `405` with `Allow: POST`, for GET and DELETE on the modern endpoint.
pub(super) fn method_not_allowed(inner: &Inner) -> Response<Body> {
    let mut response = status(StatusCode::METHOD_NOT_ALLOWED);
    response
        .headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    with_session_id(inner, response)
}

/// The answer a legacy server of kind `probe` gives a sessionless `server/discover`.
pub(super) fn legacy_probe_answer(
    probe: LegacyProbe,
    id: &Option<Value>,
) -> Option<Response<Body>> {
    Some(match probe {
        LegacyProbe::Forward => return None,
        LegacyProbe::PlainText400 => text(
            StatusCode::BAD_REQUEST,
            "Bad Request: no valid session ID provided",
        ),
        LegacyProbe::JsonRpc400 => json_body(
            StatusCode::BAD_REQUEST,
            json!({"jsonrpc": "2.0", "error": {"code": -32000,
                   "message": "Bad Request: Server not initialized"}, "id": null})
            .to_string(),
        ),
        LegacyProbe::MethodNotFound200 => json_body(
            StatusCode::OK,
            json!({"jsonrpc": "2.0", "id": id,
                   "error": {"code": -32601, "message": "Method not found"}})
            .to_string(),
        ),
        LegacyProbe::NotFound404 => status(StatusCode::NOT_FOUND),
        LegacyProbe::MethodNotAllowed405 => status(StatusCode::METHOD_NOT_ALLOWED),
        LegacyProbe::ServerError500 => {
            text(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
    })
}

/// The modern status of a JSON-RPC answer line.
pub(super) fn status_of(line: &str) -> StatusCode {
    let code = parse_json(line.as_bytes())
        .as_ref()
        .and_then(|answer| answer.get("error"))
        .and_then(|error| error.get("code"))
        .and_then(Value::as_i64);
    let scripted = parse_json(line.as_bytes())
        .as_ref()
        .and_then(|answer| answer.pointer("/error/data/http-bridge~1status"))
        .and_then(Value::as_u64)
        .and_then(|status| StatusCode::from_u16(u16::try_from(status).ok()?).ok());
    if let Some(status) = scripted {
        return status;
    }
    match code {
        Some(-32022 | -32021 | -32020 | -32602) => StatusCode::BAD_REQUEST,
        Some(-32601) => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// The `Retry-After` an error answer scripts (`data["http-bridge/retryAfter"]`,
/// a string sent as is).
fn retry_after_of(line: &str) -> Option<HeaderValue> {
    let answer = parse_json(line.as_bytes())?;
    let value = answer
        .pointer("/error/data/http-bridge~1retryAfter")?
        .as_str()?;
    HeaderValue::from_str(value).ok()
}

/// Learns the valid `x-mcp-header` annotations of every tool in a `tools/list`
/// answer line (any answer whose result holds a `tools` array).
pub(super) fn learn_tools(map: &Mutex<ToolHeaders>, line: &str) {
    let Some(answer) = parse_json(line.as_bytes()) else {
        return;
    };
    let Some(tools) = answer.pointer("/result/tools").and_then(Value::as_array) else {
        return;
    };
    let mut map = lock(map);
    for tool in tools {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let properties = tool
            .pointer("/inputSchema/properties")
            .and_then(Value::as_object);
        let headers = properties
            .into_iter()
            .flatten()
            .filter_map(|(property, schema)| {
                let header = schema.get("x-mcp-header")?.as_str()?;
                is_token(header).then(|| (header.to_owned(), property.clone()))
            })
            .collect();
        map.insert(name.to_owned(), headers);
    }
}

/// Whether `name` is an RFC 9110 token (`1*tchar`).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `POST /mcp` on the modern endpoint.
pub(super) async fn post(
    inner: &Arc<Inner>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response<Body>, DropConnection> {
    let Some(message) = parse_json(body) else {
        return Ok(with_session_id(
            inner,
            text(StatusCode::BAD_REQUEST, "body is not JSON"),
        ));
    };
    let Some(object) = message.as_object() else {
        return Ok(with_session_id(
            inner,
            text(StatusCode::BAD_REQUEST, "body is not one JSON-RPC object"),
        ));
    };
    let method = object.get("method").and_then(Value::as_str);
    let request_id = object.get("id").filter(|_| method.is_some()).cloned();
    if let (Some(method), Some(id)) = (method, &request_id)
        && method != "initialize"
        && let Some(mismatch) = check_headers(inner, headers, object, method)
    {
        let body = json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32020,
            "message": format!("Header mismatch: {}", mismatch.header),
            "data": {"header": mismatch.header, "expected": mismatch.expected,
                     "received": mismatch.received},
        }});
        let response = json_body(StatusCode::BAD_REQUEST, body.to_string());
        return Ok(with_session_id(inner, response));
    }
    let session = match child(inner) {
        Ok(session) => session,
        Err(_) => {
            let response = text(StatusCode::INTERNAL_SERVER_ERROR, "spawn failed");
            return Ok(with_session_id(inner, response));
        }
    };
    let line = one_line(body);
    let Some(id) = request_id else {
        let response = if session.write(line).await {
            status(StatusCode::ACCEPTED)
        } else {
            text(StatusCode::INTERNAL_SERVER_ERROR, "child stdin closed")
        };
        return Ok(with_session_id(inner, response));
    };
    let (key, rx, first) = session
        .open_stream(Some(id.clone()))
        .expect("request streams always open");
    if !session.write(line).await {
        session.close_stream(key);
        let response = text(StatusCode::INTERNAL_SERVER_ERROR, "child stdin closed");
        return Ok(with_session_id(inner, response));
    }
    let options = inner.options.modern;
    let mut guard = Guard {
        rx,
        session,
        key,
        id: id.clone(),
        inner: inner.clone(),
        answered: false,
        ended: false,
    };
    let response = if !inner.options.sse {
        json_response(&id, guard, options.map_error_status).await?
    } else if !options.map_error_status || !first.is_empty() {
        sse_response(first, guard)
    } else {
        let next = std::future::poll_fn(|cx| guard.poll_piece(cx));
        match tokio::time::timeout(options.status_wait, next).await {
            Ok(Some(Piece::Line(event, line))) => {
                let code = status_of(&line);
                if answer_id(&line).as_ref() == Some(&id) && code != StatusCode::OK {
                    json_body(code, line)
                } else {
                    sse_response(vec![Piece::Line(event, line)], guard)
                }
            }
            Ok(Some(piece)) => sse_response(vec![piece], guard),
            Ok(None) | Err(_) => sse_response(Vec::new(), guard),
        }
    };
    Ok(with_session_id(inner, response))
}

/// The long-lived modern child, spawned now if there is none or it ended.
fn child(inner: &Inner) -> io::Result<Arc<Session>> {
    let mut slot = lock(&inner.modern_child);
    if let Some(session) = slot.as_ref()
        && !session.is_closed()
    {
        return Ok(session.clone());
    }
    let session = Session::spawn(inner, true)?;
    *slot = Some(session.clone());
    Ok(session)
}

/// Adds the fixed `Mcp-Session-Id` when [`ModernOptions::send_session_id`] is on.
fn with_session_id(inner: &Inner, mut response: Response<Body>) -> Response<Body> {
    if inner.options.modern.send_session_id {
        let value = HeaderValue::from_str(&inner.modern_session_id).expect("hex session id");
        response.headers_mut().insert(super::SESSION_HEADER, value);
    }
    response
}

/// A response with an `application/json` body.
fn json_body(code: StatusCode, body: String) -> Response<Body> {
    let retry_after = retry_after_of(&body);
    let mut response = full(code.as_u16(), "application/json", body);
    if let Some(value) = retry_after {
        response
            .headers_mut()
            .insert(hyper::header::RETRY_AFTER, value);
    }
    response
}

/// A header that does not agree with the body.
struct Mismatch {
    /// The header's name as the spec spells it.
    header: String,
    /// The value the body implies (`None`: the header must be absent).
    expected: Option<String>,
    /// The value received (`None`: absent).
    received: Option<String>,
}

/// The first header of a request that disagrees with its body, if any.
fn check_headers(
    inner: &Inner,
    headers: &HeaderMap,
    object: &Map<String, Value>,
    method: &str,
) -> Option<Mismatch> {
    let options = inner.options.modern;
    let params = object.get("params");
    let header = |name: &str| {
        headers
            .get(name)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
    };
    let mismatch = |name: &str, expected: Option<&str>, received: Option<String>| Mismatch {
        header: name.to_owned(),
        expected: expected.map(str::to_owned),
        received,
    };
    if options.check_version_header {
        let meta_version = params
            .and_then(|params| params.get("_meta"))
            .and_then(|meta| meta.get(PROTOCOL_VERSION_KEY))
            .and_then(Value::as_str);
        let received = header("mcp-protocol-version");
        match (received, meta_version) {
            (None, expected) => return Some(mismatch("MCP-Protocol-Version", expected, None)),
            (Some(received), Some(expected)) if received != expected => {
                return Some(mismatch(
                    "MCP-Protocol-Version",
                    Some(expected),
                    Some(received),
                ));
            }
            _ => {}
        }
    }
    if options.check_method_header {
        let received = header("mcp-method");
        if received.as_deref() != Some(method) {
            return Some(mismatch("Mcp-Method", Some(method), received));
        }
    }
    let member = |key: &str| params.and_then(|p| p.get(key)).and_then(Value::as_str);
    if options.check_name_header {
        let expected = match method {
            "tools/call" | "prompts/get" => member("name"),
            "resources/read" => member("uri"),
            "tasks/get" | "tasks/update" | "tasks/cancel" => member("taskId"),
            _ => None,
        };
        if let Some(expected) = expected {
            let received = header("mcp-name");
            if received.as_deref().and_then(decode_value).as_deref() != Some(expected) {
                return Some(mismatch("Mcp-Name", Some(expected), received));
            }
        }
    }
    if options.check_param_headers
        && method == "tools/call"
        && let Some(tool) = member("name")
    {
        let annotations = lock(&inner.tool_headers).get(tool).cloned()?;
        let arguments = params.and_then(|p| p.get("arguments"));
        let mut allowed = HashSet::new();
        for (name, property) in &annotations {
            let header_name = format!("mcp-param-{}", name.to_ascii_lowercase());
            let expected = match arguments.and_then(|a| a.get(property)) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => Some(other.to_string()),
            };
            let received = header(&header_name);
            let agrees = match (&expected, &received) {
                (None, None) => true,
                (Some(expected), Some(received)) => {
                    decode_value(received).as_deref() == Some(expected.as_str())
                }
                _ => false,
            };
            if !agrees {
                let spelled = format!("Mcp-Param-{name}");
                return Some(mismatch(&spelled, expected.as_deref(), received));
            }
            allowed.insert(header_name);
        }
        for (name, value) in headers {
            if name.as_str().starts_with("mcp-param-") && !allowed.contains(name.as_str()) {
                let received = String::from_utf8_lossy(value.as_bytes()).into_owned();
                return Some(mismatch(name.as_str(), None, Some(received)));
            }
        }
    }
    None
}

/// A header value as text: `=?base64?...?=` decoded (`None` when that is not
/// valid base64 of UTF-8), anything else as is.
fn decode_value(value: &str) -> Option<String> {
    match value
        .strip_prefix(SENTINEL.0)
        .and_then(|rest| rest.strip_suffix(SENTINEL.1))
    {
        Some(encoded) => String::from_utf8(STANDARD.decode(encoded).ok()?).ok(),
        None => Some(value.to_owned()),
    }
}

/// A request stream's receiver that notices when its client goes away before
/// the answer: on drop it closes the route, records the id in
/// [`Inner::aborted`] and (option) tells the child `notifications/cancelled`.
struct Guard {
    rx: tokio::sync::mpsc::Receiver<Piece>,
    session: Arc<Session>,
    key: u64,
    id: Value,
    inner: Arc<Inner>,
    /// The answer went through.
    answered: bool,
    /// The router ended the stream (answer routed, or the child is gone).
    ended: bool,
}

impl PieceSource for Guard {
    fn poll_piece(&mut self, cx: &mut Context<'_>) -> Poll<Option<Piece>> {
        let polled = self.rx.poll_recv(cx);
        match &polled {
            Poll::Ready(Some(Piece::Line(_, line)))
                if answer_id(line).as_ref() == Some(&self.id) =>
            {
                self.answered = true;
            }
            Poll::Ready(None) => self.ended = true,
            _ => {}
        }
        polled
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if self.answered || self.ended {
            return;
        }
        self.session.close_stream(self.key);
        if self.session.is_closed() {
            return;
        }
        lock(&self.inner.aborted).push(self.id.clone());
        if !self.inner.options.modern.cancel_on_disconnect {
            return;
        }
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": self.id,
            "reason": "http-bridge: the client closed the stream",
        }});
        let line = Bytes::from(format!("{cancel}\n"));
        let session = self.session.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                session.write(line).await;
            });
        }
    }
}
