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
//! - a decoded PRM document has a resource and 1..=`MAX_AUTHORIZATION_SERVERS`
//!   servers; decoded lists respect `MAX_LIST_ENTRIES`.

use smthrs_mcp::fuzzing::{
    MAX_AUTHORIZATION_SERVERS, MAX_CHALLENGES, MAX_HEADER_BYTES, MAX_LIST_ENTRIES, MAX_PARAMS,
    decode_authorization_server_metadata, decode_protected_resource_metadata, parse_challenges,
    render_challenges,
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
