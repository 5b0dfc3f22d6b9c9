//! Change notifications (`events`, the parsers `session::protocol::feeds`
//! routes with): what a `list_changed`, a `resources/updated` and a listen's
//! acknowledgement become. The routing itself is tested in
//! `tests/subscriptions.rs`.
//!
//! Input: one byte choosing `maxUriBytes` (`1 + byte`), then one JSON-RPC
//! frame. Properties:
//!
//! - never a panic;
//! - a frame is a change event exactly when its method is one of the four
//!   change methods;
//! - an accepted `resources/updated` URI is at most the bound, has a scheme,
//!   and holds no control, format, whitespace or separator character; a
//!   refusal is one of the crate's own sentences, never the URI;
//! - an acknowledged filter that is read writes back to itself (the filter
//!   of what was read reads back equal), is a subset of itself, and is a
//!   subset of every list's changes exactly when it names no resource;
//! - whether an interest covers an update agrees with an independent model
//!   of the rule (the URI itself, or it followed by `/`, `?` or `#`).

use serde_json::Value;
use smthrs_mcp::events::{Interest, ServerEvent};
use smthrs_mcp::fuzzing::{
    Inbound, change_event, classify, filter_of, request_params, subscription_filter,
};

use super::util::forbidden_char;

const CHANGE_METHODS: [&str; 4] = [
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
];

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    let Some((&first, frame)) = data.split_first() else {
        return;
    };
    let max_uri = 1 + usize::from(first);
    let Ok(Inbound::Notification { method }) = classify(frame) else {
        return;
    };
    let params = request_params(frame);
    let event = change_event(&method, params.as_ref(), max_uri);
    assert_eq!(event.is_some(), CHANGE_METHODS.contains(&method.as_str()));
    let updated = match event {
        Some(Ok(ServerEvent::ResourceUpdated { uri })) => {
            assert!(uri.len() <= max_uri, "{} bytes past {max_uri}", uri.len());
            assert!(!uri.chars().any(|c| forbidden_char(c) || c.is_whitespace()));
            assert!(has_scheme(&uri), "{uri:?} has no scheme");
            Some(uri)
        }
        Some(Err(rule)) => {
            assert!(
                rule == "resources/updated has no string uri"
                    || rule.starts_with("resources/updated: "),
                "{rule}"
            );
            if let Some(Value::String(uri)) = params.as_ref().and_then(|p| p.get("uri"))
                && uri.len() >= 12
            {
                assert!(!rule.contains(uri.as_str()), "the rule quotes the uri");
            }
            None
        }
        _ => None,
    };
    let Some(filter) = params
        .as_ref()
        .and_then(|p| p.get("notifications"))
        .and_then(Value::as_object)
    else {
        return;
    };
    let Ok(interest) = subscription_filter(filter) else {
        return;
    };
    let written = filter_of(&interest);
    let again = subscription_filter(written.as_object().expect("an object")).expect("reads back");
    assert_eq!(again, interest);
    assert!(smthrs_mcp::fuzzing::interest_is_subset(
        &interest, &interest
    ));
    assert_eq!(
        smthrs_mcp::fuzzing::interest_is_subset(&interest, &Interest::every_list()),
        interest.resources.is_empty()
    );
    if let Some(uri) = updated {
        let event = ServerEvent::ResourceUpdated { uri: uri.clone() };
        assert_eq!(
            interest.covers(&event),
            model_covers(&interest.resources, &uri)
        );
    }
}

fn has_scheme(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The rule, written apart: byte equality, or a prefix followed by one of
/// three separators.
fn model_covers(subscribed: &[String], uri: &str) -> bool {
    subscribed.iter().any(|wanted| {
        let (w, u) = (wanted.as_bytes(), uri.as_bytes());
        w == u
            || (u.len() > w.len() && &u[..w.len()] == w && matches!(u[w.len()], b'/' | b'?' | b'#'))
    })
}
