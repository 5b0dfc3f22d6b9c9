//! The flow digest is a pure function of the declaration: the same value in every
//! process and run, and reproducible outside Rust.
//!
//! The pinned value below was cross-checked with Python:
//! `hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":"),
//! ensure_ascii=False).encode()).hexdigest()` over the same declaration without
//! its `digest` field.

use serde_json::{Map, Value, json};
use smthrs_mcp::flows::{FlowDeclaration, describe};

const PINNED: &str = "ed61fb39c9dfe99a2938112a9ecafe0cb24376d1d8836dcaaebe0c453a4b898d";

fn fixed() -> FlowDeclaration {
    let input: Map<String, Value> =
        serde_json::from_value(json!({"type": "object", "properties": {"a": {"type": "integer"}}}))
            .unwrap();
    FlowDeclaration::new(
        "mcp/s/t",
        describe("s", "t", Some("Does t.")),
        "s",
        "t",
        input,
    )
}

#[test]
fn digest_of_a_fixed_declaration_is_pinned() {
    assert_eq!(fixed().digest, PINNED);
}

#[test]
fn digest_is_sha256_of_the_sorted_compact_declaration() {
    // Rebuild the digest input from the serialized declaration, as an outside
    // verifier would: drop `digest`, sort keys, no whitespace.
    let mut value = serde_json::to_value(fixed()).unwrap();
    let object = value.as_object_mut().unwrap();
    let digest = object.remove("digest").unwrap();
    assert_eq!(digest, PINNED);
    for key in [
        "name",
        "description",
        "inputDocument",
        "server",
        "tool",
        "capabilities",
        "effects",
        "output",
    ] {
        assert!(object.contains_key(key), "{key}");
    }
}

#[test]
fn refresh_digest_tracks_edits() {
    let mut declaration = fixed();
    declaration.capabilities.retain(|c| c.starts_with("net:"));
    assert_eq!(declaration.digest, PINNED);
    assert_ne!(declaration.compute_digest(), PINNED);
    declaration.refresh_digest();
    assert_ne!(declaration.digest, PINNED);
}
