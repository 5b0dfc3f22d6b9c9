//! The identity provider's answer to the RFC 8693 token exchange of
//! enterprise-managed authorization (SEP-990): an Identity Assertion JWT
//! Authorization Grant (ID-JAG), or a refusal.
//!
//! The body is already capped (64 KiB, `auth::http`); here it is parsed with the
//! crate's depth bound ([`crate::json_bounds::parse_value`]). How strict, field by
//! field:
//!
//! | field | rule |
//! | --- | --- |
//! | `issued_token_type` | required, exactly `urn:ietf:params:oauth:token-type:id-jag` |
//! | `access_token` | required: the ID-JAG, a non-empty string of visible ASCII (a JWT is base64url and dots) |
//! | `token_type` | absent, or `N_A` in any case (RFC 8693 §2.2.1: the ID-JAG is no access token); any other value is refused, since it says the provider issued something else |
//! | `expires_in` | absent, or a non-negative integer |
//! | `scope` | absent, or a string |
//!
//! Other members are ignored. Every refusal is crate text (`&'static str`), never
//! the provider's: a refusal body yields at most a standard error code
//! ([`refusal_code`]).

use secrecy::SecretString;
use serde_json::Value;

/// `urn:ietf:params:oauth:token-type:id-jag`: the token type of an ID-JAG.
pub const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// An ID-JAG the identity provider issued. `Debug` shows no assertion.
pub struct IdJag {
    /// The grant itself (the response's `access_token`).
    pub assertion: SecretString,
    /// `expires_in`, when given.
    pub expires_in: Option<u64>,
    /// `scope`, when given.
    pub scope: Option<String>,
}

impl std::fmt::Debug for IdJag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdJag")
            .field("assertion", &"[REDACTED]")
            .field("expires_in", &self.expires_in)
            .field("scope", &self.scope)
            .finish()
    }
}

/// True for the characters an ID-JAG may hold: visible ASCII, no space.
fn visible_ascii(text: &str) -> bool {
    text.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// Reads a `200` answer to the token exchange. The error says what is wrong in
/// crate text (it completes "the identity provider's answer ...").
pub fn decode_token_exchange_response(body: &[u8]) -> Result<IdJag, &'static str> {
    let Ok(Value::Object(map)) = crate::json_bounds::parse_value(body) else {
        return Err("is not a bounded JSON object");
    };
    match map.get("issued_token_type") {
        Some(Value::String(t)) if t == ID_JAG_TOKEN_TYPE => {}
        None => return Err("names no issued_token_type"),
        Some(_) => return Err("issued a token type other than an ID-JAG (issued_token_type)"),
    }
    let assertion = match map.get("access_token") {
        Some(Value::String(t)) if !t.is_empty() && visible_ascii(t) => {
            SecretString::from(t.clone())
        }
        Some(Value::String(_)) => {
            return Err("holds an ID-JAG (access_token) that is empty or not visible ASCII");
        }
        None => return Err("holds no ID-JAG (access_token)"),
        Some(_) => return Err("holds an ID-JAG (access_token) that is not a string"),
    };
    match map.get("token_type") {
        None => {}
        Some(Value::String(t)) if t.eq_ignore_ascii_case("N_A") => {}
        Some(_) => return Err("names a token_type other than N_A"),
    }
    let expires_in = match map.get("expires_in") {
        None => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or("has an expires_in that is not a non-negative integer")?,
        ),
    };
    let scope = match map.get("scope") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("has a scope that is not a string"),
    };
    Ok(IdJag {
        assertion,
        expires_in,
        scope,
    })
}

/// The standard error code of a refusal body (RFC 6749 §5.2, RFC 8693 §2.2.2
/// `invalid_target`), as crate text: `an unknown error` for any other code, `no
/// error code` when the body names none.
pub fn refusal_code(body: &[u8]) -> &'static str {
    let Ok(Value::Object(map)) = crate::json_bounds::parse_value(body) else {
        return "no error code";
    };
    match map.get("error").and_then(Value::as_str) {
        Some("invalid_request") => "invalid_request",
        Some("invalid_client") => "invalid_client",
        Some("invalid_grant") => "invalid_grant",
        Some("unauthorized_client") => "unauthorized_client",
        Some("unsupported_grant_type") => "unsupported_grant_type",
        Some("invalid_scope") => "invalid_scope",
        Some("invalid_target") => "invalid_target",
        Some(_) => "an unknown error",
        None => "no error code",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;
    use serde_json::json;

    fn decode(v: Value) -> Result<IdJag, &'static str> {
        decode_token_exchange_response(v.to_string().as_bytes())
    }

    #[test]
    fn the_suites_answer_and_the_tolerated_variants() {
        let ok = decode(
            json!({"access_token": "a.b.c", "issued_token_type": ID_JAG_TOKEN_TYPE,
            "token_type": "N_A"}),
        )
        .unwrap();
        assert_eq!(ok.assertion.expose_secret(), "a.b.c");
        assert!(!format!("{ok:?}").contains("a.b.c"));
        for token_type in [json!("n_a"), Value::Null] {
            let mut body = json!({"access_token": "x", "issued_token_type": ID_JAG_TOKEN_TYPE,
                "expires_in": 300, "scope": "a b"});
            if !token_type.is_null() {
                body["token_type"] = token_type;
            }
            let ok = decode(body).unwrap();
            assert_eq!(ok.expires_in, Some(300));
            assert_eq!(ok.scope.as_deref(), Some("a b"));
        }
    }

    #[test]
    fn every_rule_refuses_in_crate_text() {
        let base = || json!({"access_token": "x", "issued_token_type": ID_JAG_TOKEN_TYPE});
        let with = |k: &str, v: Value| {
            let mut b = base();
            b[k] = v;
            b
        };
        let without = |k: &str| {
            let mut b = base();
            b.as_object_mut().unwrap().remove(k);
            b
        };
        for (body, why) in [
            (json!([]), "is not a bounded JSON object"),
            (without("issued_token_type"), "names no issued_token_type"),
            (
                with(
                    "issued_token_type",
                    json!("urn:ietf:params:oauth:token-type:access_token"),
                ),
                "issued a token type other than an ID-JAG (issued_token_type)",
            ),
            (without("access_token"), "holds no ID-JAG (access_token)"),
            (
                with("access_token", json!("")),
                "holds an ID-JAG (access_token) that is empty or not visible ASCII",
            ),
            (
                with("access_token", json!("a b")),
                "holds an ID-JAG (access_token) that is empty or not visible ASCII",
            ),
            (
                with("access_token", json!(7)),
                "holds an ID-JAG (access_token) that is not a string",
            ),
            (
                with("token_type", json!("Bearer")),
                "names a token_type other than N_A",
            ),
            (
                with("expires_in", json!(-1)),
                "has an expires_in that is not a non-negative integer",
            ),
            (
                with("scope", json!(["a"])),
                "has a scope that is not a string",
            ),
        ] {
            assert_eq!(decode(body.clone()).unwrap_err(), why, "{body}");
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(decode_token_exchange_response(deep.as_bytes()).is_err());
    }

    #[test]
    fn refusal_codes_are_standard_or_withheld() {
        assert_eq!(
            refusal_code(br#"{"error":"invalid_grant","error_description":"x"}"#),
            "invalid_grant"
        );
        assert_eq!(refusal_code(br#"{"error":"<script>"}"#), "an unknown error");
        assert_eq!(refusal_code(b"oops"), "no error code");
        assert_eq!(refusal_code(br#"{"error":1}"#), "no error code");
    }
}
