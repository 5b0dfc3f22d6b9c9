//! JSON-RPC envelopes: inbound classification (noise vs protocol traffic) and the
//! few outbound frames the engine writes.
//!
//! Classification follows "Noise and protocol traffic on stdout" in the contract:
//! - a blank line, invalid JSON, a scalar, an array, `null`, or an object without an
//!   own `jsonrpc` key is **noise** and is dropped;
//! - an object with `jsonrpc` is **protocol traffic**: its version must be exactly
//!   `"2.0"`; a valid method-bearing envelope without an id is a notification, with
//!   an id a server request; anything else must be a valid reply with an id and
//!   exactly one of `result` or `error`. A malformed tagged envelope is a
//!   `protocol_error`, and the raw frame is never attached to the error.
//!
//! The depth bound (128 containers, envelope included) is checked by an iterative
//! scan before parsing, so a deeply nested frame can neither overflow the stack nor
//! be mistaken for noise.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::json_bounds::{
    Envelope, EnvelopeMembers, MemberSelection, SelectedMembers, parse_envelope, parse_value,
    scan_frame,
};
use crate::limits::MAX_JSON_DEPTH;

/// -32022 (2026-07-28): the protocol version is unknown or unsupported;
/// `data: {supported, requested}`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// -32021 (2026-07-28): the request needs a client capability it did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// -32020 (2026-07-28): HTTP headers missing, malformed or disagreeing with the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// -32601: method not found.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC invalid params (also "no such resource or prompt" answering
/// `resources/read` and `prompts/get`).
pub(crate) const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC id as the server sent it: a string or an integer, echoed exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Id {
    /// An integer id (kept as its JSON number).
    Number(serde_json::Number),
    /// A string id.
    String(String),
}

impl Id {
    fn from_value(value: Value) -> Option<Id> {
        match value {
            Value::String(s) => Some(Id::String(s)),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(Id::Number(n)),
            _ => None,
        }
    }

    /// An id from a JSON value (a string or an integer).
    pub fn from_json(value: &Value) -> Option<Id> {
        Id::from_value(value.clone())
    }

    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            Id::Number(n) => Value::Number(n.clone()),
            Id::String(s) => Value::String(s.clone()),
        }
    }

    /// The id as one of our own request ids (non-negative integer), if it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Id::Number(n) => n.as_u64(),
            Id::String(_) => None,
        }
    }
}

/// A JSON-RPC error object. `Debug` shows the code only: the message and data are
/// server-authored and may carry anything.
#[derive(Clone, PartialEq)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// The error message (server-authored: never put it in a public message).
    pub message: String,
    /// Optional data (server-authored).
    pub data: Option<Value>,
}

impl std::fmt::Debug for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcError")
            .field("code", &self.code)
            .finish_non_exhaustive()
    }
}

/// The `result` of a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultBody {
    /// The whole value.
    Value(Value),
    /// An object result read selectively: only the members the caller's
    /// [`MemberSelection`] names, by position (see [`classify_with`]).
    Selected(SelectedMembers),
}

impl ResultBody {
    /// The result as a value. A `Selected` body becomes an object of just its
    /// members (the others were never built): only a caller that asked for a
    /// selection gets such a body.
    pub fn into_value(self) -> Value {
        match self {
            ResultBody::Value(value) => value,
            ResultBody::Selected(members) => Value::Object(members.into_object()),
        }
    }
}

/// One classified inbound frame. `Debug` never prints a result or an error body.
#[derive(PartialEq)]
pub enum Inbound {
    /// Not protocol traffic: dropped.
    Noise,
    /// A notification from the server: dropped.
    Notification {
        /// Its method.
        method: String,
    },
    /// A request from the server (answered: `ping` with `{}`, others `-32601`).
    Request {
        /// Its id, echoed exactly in the reply.
        id: Id,
        /// Its method.
        method: String,
    },
    /// A reply to a request.
    Response {
        /// The id it answers.
        id: Id,
        /// `Ok(result)` or `Err(error)`.
        outcome: std::result::Result<ResultBody, RpcError>,
    },
    /// A valid error reply with `id: null`: goes to diagnostics only.
    NullIdError(RpcError),
}

impl std::fmt::Debug for Inbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Inbound::Noise => f.write_str("Noise"),
            Inbound::Notification { method } => f
                .debug_struct("Notification")
                .field("method", method)
                .finish(),
            Inbound::Request { id, method } => f
                .debug_struct("Request")
                .field("id", id)
                .field("method", method)
                .finish(),
            Inbound::Response { id, outcome } => f
                .debug_struct("Response")
                .field("id", id)
                .field("ok", &outcome.is_ok())
                .finish_non_exhaustive(),
            Inbound::NullIdError(error) => f.debug_tuple("NullIdError").field(error).finish(),
        }
    }
}

fn malformed(what: &str) -> Error {
    Error::protocol(format!("malformed JSON-RPC message: {what}"))
}

/// Classifies one inbound frame.
///
/// Returns `Err` (`protocol_error`) only for protocol traffic that breaks the rules;
/// noise is `Ok(Inbound::Noise)`.
pub fn classify(frame: &[u8]) -> Result<Inbound> {
    classify_with(frame, &mut |_| None)
}

/// [`classify`], reading the `result` object of a reply selectively
/// ([`ResultBody::Selected`]: only the members `select(Some(id))` names, without
/// the object around them) when `select` gives a [`MemberSelection`] for its id.
/// A result object that comes before its `id` (as the TypeScript SDK writes
/// replies) is read so when `select(None)` gives a selection, and kept so only if
/// `select(Some(id))` then gives the same one; otherwise the frame is read again
/// whole. Any other result is a [`ResultBody::Value`].
pub fn classify_with(
    frame: &[u8],
    select: &mut dyn FnMut(Option<&Value>) -> Option<&'static MemberSelection>,
) -> Result<Inbound> {
    // One pass that checks the frame and builds only the members read below; a
    // frame it cannot decide alone (too deep, a number out of range) takes the
    // two-pass path, whose answer is the reference.
    match parse_envelope(frame, select) {
        Envelope::Noise => Ok(Inbound::Noise),
        Envelope::Members(members) => classify_members(members),
        Envelope::Undecided => classify_two_pass(frame),
    }
}

/// The reference classification: a full scan, then a full parse.
fn classify_two_pass(frame: &[u8]) -> Result<Inbound> {
    let scan = scan_frame(frame);
    if !scan.valid_json || !scan.top_level_object || !scan.has_jsonrpc_key {
        return Ok(Inbound::Noise);
    }
    if scan.max_depth > MAX_JSON_DEPTH {
        return Err(Error::protocol(format!(
            "message nests deeper than {MAX_JSON_DEPTH} JSON containers"
        )));
    }
    // Our own iterative parser: no recursion, no serde_json `RawValue` magic key,
    // lone surrogates and invalid UTF-8 become U+FFFD, and a number that overflows
    // to infinity is a protocol error.
    match parse_value(frame)? {
        Value::Object(object) => classify_object(object),
        _ => Ok(Inbound::Noise),
    }
}

/// [`classify_object`] on the members [`parse_envelope`] kept: the same checks in
/// the same order.
fn classify_members(members: EnvelopeMembers) -> Result<Inbound> {
    if !members.jsonrpc_is_2_0 {
        return Err(malformed("jsonrpc must be \"2.0\""));
    }
    if let Some(method) = members.method {
        let Value::String(method) = method else {
            return Err(malformed("method must be a string"));
        };
        if members.params_is_container == Some(false) {
            return Err(malformed("params must be an object or an array"));
        }
        if members.result.is_some() || members.selected.is_some() || members.error.is_some() {
            return Err(malformed("a request carries result or error"));
        }
        return match members.id {
            None => Ok(Inbound::Notification { method }),
            Some(id) => match Id::from_value(id) {
                Some(id) => Ok(Inbound::Request { id, method }),
                None => Err(malformed("request id must be a string or an integer")),
            },
        };
    }
    let Some(id) = members.id else {
        return Err(malformed("reply without an id"));
    };
    let result = match (members.result, members.selected) {
        (Some(value), _) => Some(ResultBody::Value(value)),
        (None, Some(members)) => Some(ResultBody::Selected(members)),
        (None, None) => None,
    };
    reply(id, result, members.error)
}

fn classify_object(mut object: Map<String, Value>) -> Result<Inbound> {
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(malformed("jsonrpc must be \"2.0\""));
    }
    if let Some(method) = object.remove("method") {
        let Value::String(method) = method else {
            return Err(malformed("method must be a string"));
        };
        if let Some(params) = object.get("params")
            && !params.is_object()
            && !params.is_array()
        {
            return Err(malformed("params must be an object or an array"));
        }
        if object.contains_key("result") || object.contains_key("error") {
            return Err(malformed("a request carries result or error"));
        }
        return match object.remove("id") {
            None => Ok(Inbound::Notification { method }),
            Some(id) => match Id::from_value(id) {
                Some(id) => Ok(Inbound::Request { id, method }),
                None => Err(malformed("request id must be a string or an integer")),
            },
        };
    }
    let Some(id) = object.remove("id") else {
        return Err(malformed("reply without an id"));
    };
    let result = object.remove("result").map(ResultBody::Value);
    let error = object.remove("error");
    reply(id, result, error)
}

fn reply(id: Value, result: Option<ResultBody>, error: Option<Value>) -> Result<Inbound> {
    let outcome = match (result, error) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(parse_error_object(error)?),
        (Some(_), Some(_)) => return Err(malformed("reply carries both result and error")),
        (None, None) => return Err(malformed("reply carries neither result nor error")),
    };
    if id.is_null() {
        return match outcome {
            Err(error) => Ok(Inbound::NullIdError(error)),
            Ok(_) => Err(malformed("result reply with a null id")),
        };
    }
    let id =
        Id::from_value(id).ok_or_else(|| malformed("reply id must be a string or an integer"))?;
    Ok(Inbound::Response { id, outcome })
}

fn parse_error_object(error: Value) -> Result<RpcError> {
    let Value::Object(mut error) = error else {
        return Err(malformed("error must be an object"));
    };
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .ok_or_else(|| malformed("error code must be an integer"))?;
    let Some(Value::String(message)) = error.remove("message") else {
        return Err(malformed("error message must be a string"));
    };
    Ok(RpcError {
        code,
        message,
        data: error.remove("data"),
    })
}

/// The `params` object of a request or notification frame (already classified as
/// one), read whole with the same depth bound as every frame; `None` when it has
/// no object `params`.
pub fn request_params(frame: &[u8]) -> Option<Map<String, Value>> {
    let scan = scan_frame(frame);
    if !scan.valid_json || scan.max_depth > MAX_JSON_DEPTH {
        return None;
    }
    match parse_value(frame).ok()? {
        Value::Object(mut object) => match object.remove("params") {
            Some(Value::Object(params)) => Some(params),
            _ => None,
        },
        _ => None,
    }
}

/// `{"jsonrpc":"2.0","id":<id>,"result":{}}`: the answer to `ping`.
pub fn ping_reply(id: &Id) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id.to_value(), "result": {}})
}

/// The `-32601 Method not found` answer to an unsupported server request.
pub fn method_not_found_reply(id: &Id) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.to_value(),
        "error": {"code": METHOD_NOT_FOUND, "message": "Method not found"}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(frame: &str) -> std::result::Result<Inbound, crate::ErrorKind> {
        classify(frame.as_bytes()).map_err(|e| e.kind())
    }

    #[test]
    fn noise_is_dropped() {
        for frame in [
            "",
            "   ",
            "not json",
            "42",
            "\"text\"",
            "[1,2]",
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]",
            "null",
            "{\"no\":\"jsonrpc\"}",
            "{\"nested\":{\"jsonrpc\":\"2.0\"}}",
            "{\"jsonrpc\":\"2.0\"",
        ] {
            assert_eq!(kind(frame), Ok(Inbound::Noise), "{frame:?}");
        }
    }

    #[test]
    fn tagged_envelopes_are_classified() {
        assert_eq!(
            kind(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#),
            Ok(Inbound::Notification {
                method: "notifications/progress".into()
            })
        );
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","id":"p-1","method":"ping"}"#),
            Ok(Inbound::Request { id: Id::String(s), .. }) if s == "p-1"
        ));
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","id":7,"result":{"ok":true}}"#),
            Ok(Inbound::Response { outcome: Ok(_), .. })
        ));
        assert!(matches!(
            kind(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m","data":[1]}}"#),
            Ok(Inbound::NullIdError(RpcError { code: -1, .. }))
        ));
    }

    #[test]
    fn malformed_tagged_envelopes_are_protocol_errors() {
        for frame in [
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":null,"id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":"x","message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":7}"#,
            r#"{"jsonrpc":"2.0","method":"x","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1e400}"#,
        ] {
            assert_eq!(kind(frame), Err(crate::ErrorKind::ProtocolError), "{frame}");
        }
    }

    #[test]
    fn depth_bound_counts_the_envelope() {
        let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        // envelope (1) + 127 arrays = 128: accepted.
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":{}}}}}"#,
            nest(126)
        );
        assert!(matches!(kind(&ok), Ok(Inbound::Response { .. })));
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"a":{}}}}}"#,
            nest(127)
        );
        assert_eq!(kind(&deep), Err(crate::ErrorKind::ProtocolError));
        let very_deep = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#, nest(100_000));
        assert_eq!(kind(&very_deep), Err(crate::ErrorKind::ProtocolError));
    }

    #[test]
    fn replies_echo_ids_exactly() {
        let id = Id::String("abc".into());
        assert_eq!(ping_reply(&id)["id"], "abc");
        let id = Id::Number(serde_json::Number::from(-3));
        assert_eq!(method_not_found_reply(&id)["error"]["code"], -32601);
    }

    /// The members a `tools/call` result is read into (the session's list,
    /// written out here as data).
    static TOOL_CALL: MemberSelection = MemberSelection::new(&[
        "content",
        "isError",
        "structuredContent",
        "resultType",
        "inputRequests",
        "requestState",
    ]);
    /// Envelope members, escapes in keys, and the longest list.
    static ENVELOPE: MemberSelection = MemberSelection::new(&["id", "jsonrpc", "result", "other"]);
    static NONE: MemberSelection = MemberSelection::new(&[]);
    static EIGHT: MemberSelection = MemberSelection::new(&[
        "content",
        "",
        "caf\u{e9}",
        "error",
        "method",
        "params",
        "x",
        "isError",
    ]);
    static SELECTIONS: [&MemberSelection; 4] = [&TOOL_CALL, &ENVELOPE, &NONE, &EIGHT];

    /// The selected members of an object, found by name: the reference.
    fn by_name(selection: &MemberSelection, object: &Map<String, Value>) -> Vec<Option<Value>> {
        selection
            .names()
            .iter()
            .map(|name| object.get(*name).cloned())
            .collect()
    }

    fn positions(selected: &SelectedMembers) -> Vec<Option<Value>> {
        (0..selected.selection().names().len())
            .map(|index| selected.get(index).cloned())
            .collect()
    }

    /// The one-pass classification and the two-pass reference give the same
    /// answer (kind and message of an error, or the same classified value).
    /// Reading every result selectively changes only its form: the members equal
    /// those of the object the plain reading built, by name.
    fn selective_reading_agrees(frame: &str, selection: &'static MemberSelection) {
        // Read speculatively (before the id) but refused by the id: the same as
        // the plain reading, exactly.
        let refused = classify_with(frame.as_bytes(), &mut |id| {
            id.is_none().then_some(selection)
        })
        .map_err(|e| (e.kind(), e.message().to_string()));
        let plain = classify(frame.as_bytes()).map_err(|e| (e.kind(), e.message().to_string()));
        assert_eq!(refused, plain, "{frame}");
        // Read speculatively with another selection than the id's: the same.
        let other = if std::ptr::eq(selection, &NONE) {
            &TOOL_CALL
        } else {
            &NONE
        };
        let mut speculative = false;
        let switched = classify_with(frame.as_bytes(), &mut |id| {
            speculative |= id.is_none();
            Some(if id.is_none() { other } else { selection })
        })
        .map_err(|e| (e.kind(), e.message().to_string()));
        let read = classify_with(frame.as_bytes(), &mut |_| Some(selection))
            .map_err(|e| (e.kind(), e.message().to_string()));
        if speculative {
            assert!(switched == read || switched == plain, "{frame}");
        } else {
            assert_eq!(switched, read, "{frame}");
        }
        let plain = classify(frame.as_bytes());
        let read = classify_with(frame.as_bytes(), &mut |_| Some(selection));
        match (plain, read) {
            (
                Ok(Inbound::Response {
                    id,
                    outcome: Ok(ResultBody::Value(Value::Object(object))),
                }),
                Ok(Inbound::Response {
                    id: read_id,
                    outcome: Ok(ResultBody::Selected(members)),
                }),
            ) => {
                assert_eq!(id, read_id, "{frame}");
                assert!(members.is(selection), "{frame}");
                assert_eq!(positions(&members), by_name(selection, &object), "{frame}");
                assert_eq!(members, selection.select(object), "{frame}");
            }
            (Ok(plain), Ok(read)) => assert_eq!(plain, read, "{frame}"),
            (Err(plain), Err(read)) => assert_eq!(
                (plain.kind(), plain.message().to_string()),
                (read.kind(), read.message().to_string()),
                "{frame}"
            ),
            (plain, read) => panic!("{frame}: {plain:?} vs {read:?}"),
        }
    }

    #[test]
    fn results_are_read_member_by_member() {
        let read = |frame: &str| match classify_with(frame.as_bytes(), &mut |id| {
            id.is_none_or(|id| id == 7).then_some(&TOOL_CALL)
        }) {
            Ok(Inbound::Response {
                outcome: Ok(body), ..
            }) => body,
            other => panic!("{frame}: {other:?}"),
        };
        let selected = |object: Value| match object {
            Value::Object(object) => ResultBody::Selected(TOOL_CALL.select(object)),
            _ => unreachable!(),
        };
        let text = serde_json::json!([{"type": "text", "text": "hi"}]);
        // The usual order: the members only, without the object.
        let body = read(
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}],"isError":false,"_meta":{"x":[1]}}}"#,
        );
        assert_eq!(
            body,
            selected(serde_json::json!({"content": text, "isError": false}))
        );
        let ResultBody::Selected(members) = body else {
            unreachable!()
        };
        assert_eq!(members.get(0), Some(&text));
        assert_eq!(members.get(1), Some(&Value::Bool(false)));
        assert_eq!(members.get(2), None);
        // Escaped keys, a member given twice (the last wins), scalars of the wrong kind.
        assert_eq!(
            read(
                r#"{"jsonrpc":"2.0","id":7,"result":{"content":1,"cont\u0065nt":[{"type":"text","text":"hi"}],"isError":"no","structuredContent":{"a":{"b":null}}}}"#
            ),
            selected(serde_json::json!({
                "content": text,
                "isError": "no",
                "structuredContent": {"a": {"b": null}},
            }))
        );
        // A result before its id (the TypeScript SDK's order), and a later id
        // that also asks for it: read member by member.
        for frame in [
            r#"{"result":{"content":[],"x":1},"jsonrpc":"2.0","id":7}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"id":7}"#,
        ] {
            assert_eq!(
                read(frame),
                selected(serde_json::json!({"content": []})),
                "{frame}"
            );
        }
        // Another id, a result before an id that does not ask for it, a later id
        // that does not, a non-object: whole values.
        for frame in [
            r#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","result":{"content":[],"x":1},"id":8}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"id":8}"#,
            r#"{"jsonrpc":"2.0","id":8,"result":{"content":[]},"id":7}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":[1]}"#,
        ] {
            assert!(matches!(read(frame), ResultBody::Value(_)), "{frame}");
        }
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","result":{"content":[],"x":1},"id":8}"#),
            ResultBody::Value(serde_json::json!({"content": [], "x": 1})),
            "read again whole"
        );
        // A later result that is not an object replaces one read member by member.
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"result":5}"#),
            ResultBody::Value(Value::from(5))
        );
        // A result before its id read with one selection, the id asking for
        // another: read again whole, then selected by the caller.
        let frame = r#"{"result":{"content":[],"id":1},"jsonrpc":"2.0","id":7}"#;
        let body = classify_with(frame.as_bytes(), &mut |id| {
            Some(if id.is_none() { &ENVELOPE } else { &TOOL_CALL })
        });
        assert!(
            matches!(
                body,
                Ok(Inbound::Response {
                    outcome: Ok(ResultBody::Value(_)),
                    ..
                })
            ),
            "{body:?}"
        );
        // Back to an object of just the selected members.
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":7,"result":{"isError":true,"x":1,"content":[]}}"#)
                .into_value(),
            serde_json::json!({"content": [], "isError": true})
        );
    }

    fn same_as_two_pass(frame: &str) {
        for selection in SELECTIONS {
            selective_reading_agrees(frame, selection);
        }
        let one = classify(frame.as_bytes()).map_err(|e| (e.kind(), e.message().to_string()));
        let two =
            classify_two_pass(frame.as_bytes()).map_err(|e| (e.kind(), e.message().to_string()));
        assert_eq!(one, two, "{frame}");
    }

    #[test]
    fn one_pass_agrees_with_two_passes_on_the_corpus() {
        let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let frames = [
            String::new(),
            "noise".into(),
            "[1]".into(),
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#.into(),
            r#"{"json\u0072pc":"2\u002e0","\u0069d":"x","res\u0075lt":[1,2.5,-0,true,null]}"#
                .into(),
            r#"{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"result":{}}"#.into(),
            r#"{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"result":{}}"#.into(),
            r#"{"jsonrpc":["2.0"],"id":1,"result":{}}"#.into(),
            r#"{"jsonrpc":2.0,"id":1,"result":{}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"id":2,"result":{},"result":[]}"#.into(),
            r#"{"jsonrpc":"2.0","id":{"a":1},"result":{}}"#.into(),
            r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#.into(),
            r#"{"jsonrpc":"2.0","method":"ping","params":null}"#.into(),
            r#"{"jsonrpc":"2.0","method":"x","params":[],"params":"s"}"#.into(),
            r#"{"jsonrpc":"2.0","method":"x","params":"s","params":{}}"#.into(),
            r#"{"jsonrpc":"2.0","method":{"m":1},"id":1}"#.into(),
            r#"{"jsonrpc":"2.0","method":"x","id":1,"error":null}"#.into(),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"m","data":{"d":[1]}}}"#
                .into(),
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":1.5,"message":"m"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":3,"result":1e400}"#.into(),
            r#"{"jsonrpc":"2.0","id":3,"result":{},"other":1e400}"#.into(),
            r#"{"jsonrpc":"2.0","id":3,"result":{},"other":1e400,}"#.into(),
            r#"{"jsonrpc":"2.0","id":3,"result":{},"other":[1,{"x":"\ud800"}]}"#.into(),
            r#"{"other":{"jsonrpc":"2.0"},"id":1,"result":{}}"#.into(),
            r#"{"jsonrpc":"2.0","id":1,"result":{}} trailing"#.into(),
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\u{1}\"}".into(),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#, nest(127)),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#, nest(128)),
            format!(r#"{{"jsonrpc":"2.0","id":1,"other":{}}}"#, nest(127)),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{}},"other":{}}}"#,
                nest(130)
            ),
            format!(r#"{{"id":1,"result":{{}},"other":{}}}"#, nest(130)),
            nest(200),
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}"#, nest(300)),
        ];
        for frame in &frames {
            same_as_two_pass(frame);
        }
    }

    mod random {
        use super::*;
        use proptest::prelude::*;

        fn key() -> impl Strategy<Value = &'static str> {
            prop::sample::select(vec![
                "jsonrpc",
                "json\\u0072pc",
                "id",
                "\\u0069d",
                "method",
                "params",
                "result",
                "res\\u0075lt",
                "error",
                "other",
                "",
                // Members the selections name.
                "content",
                "cont\\u0065nt",
                "isError",
                "structuredContent",
                "x",
                "caf\\u00e9",
                "caf\u{e9}",
            ])
        }

        fn scalar() -> impl Strategy<Value = &'static str> {
            prop::sample::select(vec![
                "\"2.0\"",
                "\"2\\u002e0\"",
                "\"1.0\"",
                "1",
                "-7",
                "0",
                "1.5",
                "1e400",
                "123456789012345678901234567890",
                "null",
                "true",
                "false",
                "\"ping\"",
                "\"tools/list\"",
                "\"\\ud800x\"",
                "\"caf\\u00e9\"",
            ])
        }

        fn value() -> impl Strategy<Value = String> {
            let leaf = scalar().prop_map(str::to_string);
            leaf.prop_recursive(4, 24, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4)
                        .prop_map(|items| format!("[{}]", items.join(","))),
                    prop::collection::vec((key(), inner), 0..4).prop_map(|members| {
                        let members: Vec<String> = members
                            .iter()
                            .map(|(k, v)| format!("\"{k}\":{v}"))
                            .collect();
                        format!("{{{}}}", members.join(","))
                    }),
                ]
            })
        }

        fn frame() -> impl Strategy<Value = String> {
            (
                prop::collection::vec((key(), value()), 0..7),
                0usize..140,
                any::<bool>(),
                prop::sample::select(vec!["", " ", "x", ",", "}"]),
            )
                .prop_map(|(members, deep, deep_array, tail)| {
                    let mut members: Vec<String> = members
                        .iter()
                        .map(|(k, v)| format!("\"{k}\":{v}"))
                        .collect();
                    if deep > 100 {
                        let (open, close) = if deep_array {
                            ("[", "]")
                        } else {
                            ("{\"a\":", "}")
                        };
                        members.push(format!(
                            "\"result\":{}1{}",
                            open.repeat(deep),
                            close.repeat(deep)
                        ));
                    }
                    format!("{{{}}}{tail}", members.join(","))
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            #[test]
            fn one_pass_agrees_with_two_passes_on_random_envelopes(frame in frame()) {
                same_as_two_pass(&frame);
            }
        }
    }
}
