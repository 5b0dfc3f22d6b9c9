//! Prompts (beyond-tools.md §2): the `prompts/list` walk and `prompts/get`, in
//! the session's era through [`super::send`].
//!
//! - Both are gated on the server's `prompts` capability (by the caller, before
//!   anything is sent: `missing_capability`).
//! - The walk is whole and bounded (`maxPrompts`, `maxPromptArguments`,
//!   `maxCatalogPages`, the name rules of [`crate::prompts`]); the last listing
//!   walked in this session is held ([`Protocol::prompts`](super::Protocol)).
//! - `prompts/get` arguments are checked against the held listing when there is
//!   one ([`Prompt::check_arguments`]: a name not listed, an undeclared or
//!   missing required argument, a value that is not a string is `protocol_error`,
//!   nothing sent); without a listing they are sent as given (only the string
//!   rule is checked) and the server judges. 2026-07-28 answers `input_required`
//!   in rounds and sends `Mcp-Name: <name>` over HTTP. The result is checked by
//!   [`GetPromptResult::from_value`] (`maxPromptMessages`, `maxResourceBytes`).
//! - `-32002`, and `-32602` answering `prompts/get`, are `not_found`.
//!
//! Prompt messages are server-authored turns (they may claim the assistant's
//! role): delivered typed and bounded, never merged into system text.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::super::engine::lock;
use super::link::Link;
use super::send::{self, Ask, Listing};
use crate::content::ContentBounds;
use crate::error::{Error, Result};
use crate::prompts::{GetPromptResult, Prompt};

/// Walks `prompts/list` and holds the listing for later argument checks.
pub(crate) async fn list(link: &Link) -> Result<Listing<Prompt>> {
    let walked: Listing<Prompt> = send::walk(link).await?;
    *lock(&link.protocol.prompts) = Some(Arc::from(walked.entries.clone()));
    Ok(walked)
}

#[derive(Serialize)]
struct GetParams<'a> {
    #[serde(skip_serializing_if = "Map::is_empty")]
    arguments: &'a Map<String, Value>,
    name: &'a str,
}

/// Gets the prompt `name` with `arguments` (string values).
pub(crate) async fn get(
    link: &Link,
    name: &str,
    arguments: &Map<String, Value>,
) -> Result<GetPromptResult> {
    let held = lock(&link.protocol.prompts).clone();
    match held {
        Some(listing) => match listing.iter().find(|prompt| prompt.name == name) {
            Some(prompt) => prompt.check_arguments(arguments)?,
            None => {
                return Err(Error::protocol(format!(
                    "server \"{}\" lists no prompt {name:?}",
                    link.core.server
                )));
            }
        },
        None => {
            if let Some((key, _)) = arguments.iter().find(|(_, value)| !value.is_string()) {
                return Err(Error::protocol(format!(
                    "argument {key:?} of prompt {name:?} is not a string"
                )));
            }
        }
    }
    let limits = &link.core.limits;
    let ask = Ask {
        name_header: Some(name),
        // -32602 means "no such prompt" only when the name is all that was
        // sent; with arguments it may be about them (beyond-tools.md §0.6).
        invalid_params_is_not_found: arguments.is_empty(),
        rounds: true,
        ..Ask::new("prompts/get", Instant::now() + limits.request_timeout())
    };
    let result = send::send(link, &ask, &GetParams { arguments, name }).await?;
    GetPromptResult::from_value(result, &ContentBounds::from(limits))
}
