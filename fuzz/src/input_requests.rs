//! What a 2026-07-28 server chooses and the host is shown: `x-mcp-header`
//! annotations (`param_headers`) and elicitation requests (`handler`).
//!
//! Input: arbitrary bytes; when they parse as JSON, the value is used as an
//! `inputSchema` (its object) and as `elicitation/create` params; every input is
//! also used as a string to encode as a header value.
//!
//! Properties:
//!
//! - never a panic, at any depth the JSON parser accepts;
//! - an accepted schema has at most `maxParamHeaders` annotations;
//! - every encoded header value is visible ASCII or space, never starts or ends
//!   with a space, and never holds CR, LF or TAB (no header injection), and a value
//!   that was already safe is sent as it is;
//! - a checked form accepts its own defaults whenever every required field has one;
//!   a URL request is http(s) only.

use smthrs_mcp::fuzzing::{elicitation_request, encode_header_value, x_mcp_header_annotations};

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let encoded = encode_header_value(&text);
    assert!(
        encoded.bytes().all(|b| (0x20..=0x7e).contains(&b)),
        "unsafe header bytes for {text:?}"
    );
    assert!(!encoded.starts_with(' ') && !encoded.ends_with(' '));
    let printable = text.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = text.starts_with(' ') || text.ends_with(' ');
    let sentinel = text.starts_with("=?") && text.ends_with("?=");
    if printable && !padded && !sentinel {
        assert_eq!(encoded, text);
    } else {
        assert!(encoded.starts_with("=?base64?") && encoded.ends_with("?="));
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Some(schema) = value.as_object()
        && let Ok(count) = x_mcp_header_annotations(schema)
    {
        assert!(count as u64 <= smthrs_mcp::limits::DEFAULT_MAX_PARAM_HEADERS);
    }
    let _ = elicitation_request(&value);
}
