//! Argument completion (beyond-tools.md §3): `completion/complete` for a
//! prompt argument or a resource-template variable, in the session's era
//! through [`super::send`].
//!
//! Gated on the server's `completions` capability (by the caller, before
//! anything is sent: `missing_capability`). The same request in both eras
//! (2026-07-28 adds `_meta` and reads `resultType`); no MRTR and no `Mcp-Name`
//! (SEP-2243 names only `tools/call`, `resources/read` and `prompts/get`). The
//! result is checked by [`Completion::from_value`]: at most 100 values of at
//! most 1024 bytes each, under the display-text rules.

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::link::Link;
use super::send::{self, Ask};
use crate::completion::{Completion, CompletionRef};
use crate::error::{Error, Result};

#[derive(Serialize)]
struct Argument<'a> {
    name: &'a str,
    value: &'a str,
}

#[derive(Serialize)]
struct Context<'a> {
    arguments: &'a Map<String, Value>,
}

#[derive(Serialize)]
struct CompleteParams<'a> {
    argument: Argument<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context: Option<Context<'a>>,
    #[serde(rename = "ref")]
    reference: &'a CompletionRef,
}

/// Completes `argument_name`'s partial `value` for `reference`, with the values
/// already chosen for other arguments in `context` (strings; none sent when
/// empty).
pub(crate) async fn complete(
    link: &Link,
    reference: &CompletionRef,
    argument_name: &str,
    value: &str,
    context: &Map<String, Value>,
) -> Result<Completion> {
    if let Some((key, _)) = context.iter().find(|(_, value)| !value.is_string()) {
        return Err(Error::protocol(format!(
            "completion context argument {key:?} is not a string"
        )));
    }
    let params = CompleteParams {
        argument: Argument {
            name: argument_name,
            value,
        },
        context: (!context.is_empty()).then_some(Context { arguments: context }),
        reference,
    };
    let deadline = Instant::now() + link.core.limits.request_timeout();
    let result = send::send(link, &Ask::new("completion/complete", deadline), &params).await?;
    Completion::from_value(result)
}
