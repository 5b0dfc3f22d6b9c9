//! The identity provider's answer to the RFC 8693 token exchange of
//! enterprise-managed authorization (`auth::id_jag`).
//!
//! Input: arbitrary bytes, used as the body of a `200` answer and of a refusal.
//! Properties:
//!
//! - never a panic;
//! - the decoder's verdict equals a reference model written here from the rule
//!   table in `src/auth/id_jag.rs` (over the crate's bounded JSON parser, whose
//!   own properties the `jsonrpc_classify` target checks): accepted exactly when
//!   the model accepts, with the same assertion, `expires_in` and `scope`;
//! - a refusal is crate text (`&'static str`, by type) and a refusal body yields
//!   only a standard code, `an unknown error` or `no error code`.

use serde_json::Value;
use smthrs_mcp::fuzzing::{
    ExposeSecret, ID_JAG_TOKEN_TYPE, decode_token_exchange_response, parse_value, refusal_code,
};

/// What the model expects of a `200` body: the accepted fields, or `None`.
type Expected = Option<(String, Option<u64>, Option<String>)>;

fn model(data: &[u8]) -> Expected {
    let Ok(Value::Object(map)) = parse_value(data) else {
        return None;
    };
    if map.get("issued_token_type").and_then(Value::as_str) != Some(ID_JAG_TOKEN_TYPE) {
        return None;
    }
    let assertion = map.get("access_token")?.as_str()?;
    if assertion.is_empty() || !assertion.chars().all(|c| c.is_ascii_graphic()) {
        return None;
    }
    if let Some(t) = map.get("token_type")
        && t.as_str().map(str::to_ascii_uppercase).as_deref() != Some("N_A")
    {
        return None;
    }
    let expires_in = match map.get("expires_in") {
        None => None,
        Some(v) => Some(v.as_u64()?),
    };
    let scope = match map.get("scope") {
        None => None,
        Some(v) => Some(v.as_str()?.to_owned()),
    };
    Some((assertion.to_owned(), expires_in, scope))
}

const CODES: [&str; 9] = [
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
    "invalid_target",
    "an unknown error",
    "no error code",
];

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    let decoded = decode_token_exchange_response(data);
    match (decoded, model(data)) {
        (Ok(got), Some((assertion, expires_in, scope))) => {
            assert_eq!(got.assertion.expose_secret(), assertion);
            assert_eq!(got.expires_in, expires_in);
            assert_eq!(got.scope, scope);
            assert!(!format!("{got:?}").contains(&assertion) || assertion.len() < 12);
        }
        (Err(why), None) => assert!(!why.is_empty()),
        (Ok(_), None) => panic!("accepted what the model refuses"),
        (Err(why), Some(_)) => panic!("refused what the model accepts: {why}"),
    }
    let code = refusal_code(data);
    assert!(CODES.contains(&code), "{code}");
    let named = match parse_value(data) {
        Ok(Value::Object(map)) => map.get("error").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    };
    match named {
        Some(n) if CODES[..7].contains(&n.as_str()) => assert_eq!(code, n),
        Some(_) => assert_eq!(code, "an unknown error"),
        None => assert_eq!(code, "no error code"),
    }
}
