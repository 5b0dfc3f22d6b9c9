//! The `WWW-Authenticate` parser and the OAuth metadata decoders
//! (`auth::challenge`, `auth::metadata`).
//!
//! Input: arbitrary bytes, used as a header value and as a metadata document.
//! Properties:
//!
//! - never a panic;
//! - the parser's bounds hold (at most `MAX_CHALLENGES` challenges, `MAX_PARAMS`
//!   parameters each), and nothing it returns is longer than the input;
//! - rendering the parsed challenges and parsing that again gives the same
//!   challenges (a fixed point: the parser reads what it would write);
//! - the `DPoP` challenge's `error` is the first `DPoP` challenge's parameter;
//! - as a `DPoP-Nonce` value: kept only when at most `MAX_NONCE_BYTES` of RFC 9449
//!   §8.1 characters, and then unchanged; a longer one is `TooLong` with its
//!   length; read from a header map, the same answer;
//! - a decoded PRM document has a resource and 1..=`MAX_AUTHORIZATION_SERVERS`
//!   servers; decoded lists respect `MAX_LIST_ENTRIES`.

use smthrs_mcp::fuzzing::{
    MAX_AUTHORIZATION_SERVERS, MAX_CHALLENGES, MAX_HEADER_BYTES, MAX_LIST_ENTRIES, MAX_NONCE_BYTES,
    MAX_PARAMS, NonceError, decode_authorization_server_metadata,
    decode_protected_resource_metadata, dpop_error, nonce_from_headers, parse_challenges,
    parse_nonce, render_challenges,
};

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    let parsed = parse_challenges([data]);
    assert!(parsed.len() <= MAX_CHALLENGES);
    for c in &parsed {
        assert!(c.params.len() <= MAX_PARAMS);
        assert!(c.scheme.len() <= data.len());
        for (n, v) in &c.params {
            assert!(n.len() + v.len() <= data.len());
        }
    }
    let rendered = render_challenges(&parsed);
    if rendered.len() <= MAX_HEADER_BYTES {
        let again = parse_challenges([rendered.as_bytes()]);
        assert_eq!(
            again, parsed,
            "render/parse is not a fixed point for {rendered:?}"
        );
    }
    let first_dpop = parsed
        .iter()
        .find(|c| c.scheme.eq_ignore_ascii_case("dpop"))
        .and_then(|c| c.param("error"));
    assert_eq!(dpop_error(&parsed), first_dpop);
    check_nonce(data);
    if let Ok(prm) = decode_protected_resource_metadata(data) {
        assert!(!prm.resource.is_empty());
        assert!((1..=MAX_AUTHORIZATION_SERVERS).contains(&prm.authorization_servers.len()));
        assert!(
            prm.scopes_supported
                .is_none_or(|s| s.len() <= MAX_LIST_ENTRIES)
        );
    }
    if let Ok(asm) = decode_authorization_server_metadata(data) {
        assert!(!asm.issuer.is_empty());
        assert!(asm.response_types_supported.len() <= MAX_LIST_ENTRIES);
    }
}

/// The `DPoP-Nonce` properties of one input.
fn check_nonce(data: &[u8]) {
    let nqchar = |b: &u8| matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e);
    let parsed = parse_nonce(data);
    match &parsed {
        Ok(nonce) => {
            assert!(nonce.len() <= MAX_NONCE_BYTES);
            assert_eq!(nonce.as_bytes(), data);
            assert!(!data.is_empty() && data.iter().all(nqchar));
        }
        Err(NonceError::TooLong(n)) => {
            assert_eq!(*n, data.len());
            assert!(*n > MAX_NONCE_BYTES);
        }
        Err(NonceError::Malformed) => {
            assert!(data.len() <= MAX_NONCE_BYTES);
            assert!(data.is_empty() || !data.iter().all(nqchar));
        }
        Err(NonceError::Missing) => panic!("a value is never missing"),
        Err(other) => panic!("a variant this target does not know: {other:?}"),
    }
    if let Ok(value) = http::HeaderValue::from_bytes(data) {
        let mut headers = http::HeaderMap::new();
        headers.insert("dpop-nonce", value);
        assert_eq!(nonce_from_headers(&headers), parsed.map(Some));
    }
}
