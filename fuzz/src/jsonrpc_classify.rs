//! Inbound classification and envelope decoding (`jsonrpc::classify`, built on
//! `json_bounds::scan_frame` and `json_bounds::parse_value`).
//!
//! Input: one inbound frame. Properties:
//!
//! - never a panic or a stack overflow, whatever the depth;
//! - the parsed value is never deeper than the scan said (shallower only when a
//!   duplicate key dropped a deeper value);
//! - the noise/protocol split follows the scan: a frame that is not valid JSON, not
//!   an object, or has no own top-level `jsonrpc` key is `Noise`; a tagged frame
//!   nesting deeper than 128 containers is a `protocol_error`;
//! - every tagged frame that parses is classified exactly as an independent
//!   re-implementation of the envelope rules (below) classifies the parsed value;
//! - `parse_value` agrees with serde_json whenever serde_json accepts the frame
//!   (floats up to one ULP; serde_json's magic `RawValue` key aside);
//! - an error is always `protocol_error` and its message never quotes the frame;
//! - a request id is echoed exactly by `ping_reply` / `method_not_found_reply`;
//! - `classify_with` reading every result selectively (several member lists,
//!   given as data: a `tools/call` result's, envelope names, none, eight)
//!   classifies exactly as `classify` does, each `Selected` member equal to the
//!   member of that name in the result object `classify` built; a result read so
//!   before its id and then refused by the id is read again whole, exactly as
//!   `classify` reads it;
//! - a result's `content` array, checked in place as a session checks a
//!   `tools/call` result, passes or fails exactly as building its blocks does
//!   (`content::tool_content`), with the same message.

use serde_json::{Map, Value};
use smthrs_mcp::ErrorKind;
use smthrs_mcp::fuzzing::{
    Id, Inbound, MemberSelection, ResultBody, classify, classify_with, method_not_found_reply,
    parse_value, ping_reply, scan_frame, tool_content_agrees, value_depth,
};
use smthrs_mcp::limits::MAX_JSON_DEPTH;

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    let scan = scan_frame(data);
    let result = classify(data);
    for selection in SELECTIONS {
        selective_reading_agrees(data, &result, selection);
    }

    if let Err(error) = &result {
        assert_eq!(error.kind(), ErrorKind::ProtocolError, "{error}");
        let message = error.to_string();
        assert!(
            message.is_ascii() && !message.contains(['{', '}', '\\']),
            "a message may not quote the frame: {message}"
        );
        assert_eq!(format!("{error}"), message);
        assert!(format!("{error:?}").contains(&format!("{message:?}")));
    }

    let tagged = scan.valid_json && scan.top_level_object && scan.has_jsonrpc_key;
    if !tagged {
        assert!(
            matches!(result, Ok(Inbound::Noise)),
            "untagged frame must be noise: {result:?}"
        );
        return;
    }
    if scan.max_depth > MAX_JSON_DEPTH {
        assert_eq!(
            result.as_ref().err().map(|e| e.kind()),
            Some(ErrorKind::ProtocolError)
        );
        return;
    }
    assert!(
        !matches!(result, Ok(Inbound::Noise)),
        "a tagged frame is never noise"
    );

    let parsed = match parse_value(data) {
        Ok(value) => value,
        Err(_) => {
            // Only numbers out of range fail here (syntax and depth were checked).
            assert!(result.is_err(), "unparseable frame classified: {result:?}");
            return;
        }
    };
    // A duplicate key keeps its last value, so the parsed value can be shallower
    // than the frame (the scan counts every container it read).
    assert!(value_depth(&parsed) <= scan.max_depth);
    serde_agrees(data, &parsed);

    let Value::Object(object) = parsed else {
        panic!("a top-level object parsed to something else")
    };
    let expected = reference(object);
    match (&result, &expected) {
        (Err(_), None) => {}
        (Ok(got), Some(want)) => {
            assert_eq!(got, want);
            if let Inbound::Request { id, .. } = got {
                echoes(id);
            }
            if let Inbound::Response {
                outcome: Ok(ResultBody::Value(Value::Object(result))),
                ..
            } = got
                && let Some(Value::Array(content)) = result.get("content")
            {
                let _ = tool_content_agrees(content);
            }
        }
        _ => panic!("classify gave {result:?}, the reference {expected:?}"),
    }
}

/// The envelope rules, written out independently of the crate.
fn reference(mut object: Map<String, Value>) -> Option<Inbound> {
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return None;
    }
    let id_of = |value: Value| match value {
        Value::String(s) => Some(Id::String(s)),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(Id::Number(n)),
        _ => None,
    };
    if let Some(method) = object.remove("method") {
        let method = method.as_str()?.to_owned();
        if object
            .get("params")
            .is_some_and(|p| !p.is_object() && !p.is_array())
        {
            return None;
        }
        if object.contains_key("result") || object.contains_key("error") {
            return None;
        }
        return match object.remove("id") {
            None => Some(Inbound::Notification { method }),
            Some(id) => Some(Inbound::Request {
                id: id_of(id)?,
                method,
            }),
        };
    }
    let id = object.remove("id")?;
    let outcome = match (object.remove("result"), object.remove("error")) {
        (Some(result), None) => Ok(ResultBody::Value(result)),
        (None, Some(Value::Object(mut error))) => {
            let code = error.get("code")?.as_i64()?;
            let Value::String(message) = error.remove("message")? else {
                return None;
            };
            Err(smthrs_mcp::fuzzing::RpcError {
                code,
                message,
                data: error.remove("data"),
            })
        }
        _ => return None,
    };
    if id.is_null() {
        return match outcome {
            Err(error) => Some(Inbound::NullIdError(error)),
            Ok(_) => None,
        };
    }
    Some(Inbound::Response {
        id: id_of(id)?,
        outcome,
    })
}

/// The member lists the selective reading is checked with: a `tools/call`
/// result's, envelope names (and one only escapes spell), none, eight.
static SELECTIONS: [&MemberSelection; 4] = [
    &MemberSelection::new(&[
        "content",
        "isError",
        "structuredContent",
        "resultType",
        "inputRequests",
        "requestState",
    ]),
    &MemberSelection::new(&["id", "jsonrpc", "result", "\u{e9}"]),
    &MemberSelection::new(&[]),
    &MemberSelection::new(&[
        "content", "", "a", "error", "method", "params", "x", "\u{fffd}",
    ]),
];

/// Reading results selectively changes nothing but the result's form.
fn selective_reading_agrees(
    data: &[u8],
    plain: &smthrs_mcp::Result<Inbound>,
    selection: &'static MemberSelection,
) {
    // Read speculatively (a result before its id) but refused by the id: exactly
    // the plain reading.
    let refused = classify_with(data, &mut |id| id.is_none().then_some(selection));
    match (plain, &refused) {
        (Ok(plain), Ok(refused)) => assert_eq!(plain, refused),
        (Err(plain), Err(refused)) => {
            assert_eq!(plain.kind(), refused.kind());
            assert_eq!(plain.message(), refused.message());
        }
        _ => panic!("a refused reading disagrees: {plain:?} vs {refused:?}"),
    }
    let read = classify_with(data, &mut |_| Some(selection));
    match (plain, &read) {
        (
            Ok(Inbound::Response {
                id,
                outcome: Ok(ResultBody::Value(value)),
            }),
            Ok(Inbound::Response {
                id: read_id,
                outcome: Ok(ResultBody::Selected(members)),
            }),
        ) => {
            assert_eq!(id, read_id);
            let Value::Object(object) = value else {
                panic!("only an object result is read selectively");
            };
            assert!(members.is(selection));
            for (index, name) in selection.names().iter().enumerate() {
                assert_eq!(members.get(index), object.get(*name), "{name:?}");
            }
        }
        (Ok(plain), Ok(read)) => assert_eq!(plain, read),
        (Err(plain), Err(read)) => {
            assert_eq!(plain.kind(), read.kind());
            assert_eq!(plain.message(), read.message());
        }
        _ => panic!("classify_with disagrees: {plain:?} vs {read:?}"),
    }
}

/// A server-request id must come back exactly in our replies.
fn echoes(id: &Id) {
    for reply in [ping_reply(id), method_not_found_reply(id)] {
        let text = serde_json::to_vec(&reply).expect("a reply serializes");
        let back = parse_value(&text).expect("a reply parses");
        assert_eq!(back["id"], id.to_value());
        assert_eq!(back["jsonrpc"], "2.0");
    }
}

/// When serde_json accepts the frame, both parsers build the same value.
fn serde_agrees(data: &[u8], ours: &Value) {
    if let Ok(theirs) = serde_json::from_slice::<Value>(data)
        && !same(ours, &theirs)
    {
        // serde_json (raw_value feature) re-parses an object keyed by its private
        // RawValue token; that needs the token spelled out or escaped.
        let magic =
            data.windows(7).any(|w| w == b"private") || data.windows(2).any(|w| w == b"\\u");
        assert!(magic, "parse_value and serde_json disagree");
    }
}

/// Equal, except that floats may differ by serde_json's rounding (one ULP).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() && y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x == y || (x.to_bits() as i64 - y.to_bits() as i64).abs() <= 1
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, x), (ky, y))| kx == ky && same(x, y))
        }
        _ => a == b,
    }
}
