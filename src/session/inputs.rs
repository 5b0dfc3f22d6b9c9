//! Answers to what a server asks of the client mid-call: 2026-07-28 `inputRequests`
//! and legacy server-to-client requests, through one host handler.
//!
//! Without a handler nothing is declared (`clientCapabilities` is `{}`), a modern
//! input request fails its call, and a legacy server request gets `-32601`.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::engine::Shared;
use super::modern::undeclared_input;
use crate::error::Result;

/// The methods a server may ask the client to answer.
pub(crate) const INPUT_METHODS: [&str; 3] =
    ["elicitation/create", "roots/list", "sampling/createMessage"];

/// The host's answers (none installed yet: every request is undeclared).
#[derive(Default)]
pub(crate) struct Inputs {}

impl Inputs {
    /// The client capabilities the installed handler answers.
    pub(crate) fn capabilities(&self) -> Value {
        Value::Object(Map::new())
    }

    /// Answers every entry of an `inputRequests` map, or fails the call.
    pub(crate) async fn answer_all(
        &self,
        shared: &Arc<Shared>,
        requests: Map<String, Value>,
    ) -> Result<Map<String, Value>> {
        match requests.values().next() {
            Some(request) => {
                let method = request.get("method").and_then(Value::as_str);
                let known = INPUT_METHODS.iter().find(|m| Some(**m) == method).copied();
                Err(undeclared_input(&shared.server, known))
            }
            None => Ok(Map::new()),
        }
    }
}
