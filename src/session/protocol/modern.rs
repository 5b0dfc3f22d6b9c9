//! The modern era's `tools/call` (2026-07-28): `_meta` on every round,
//! `Mcp-Name` and `Mcp-Param-*` for HTTP, and multi-round-trip results (MRTR,
//! SEP-2322).
//!
//! A call's result has a `resultType`: absent or `complete` is the tool result;
//! `input_required` asks for another round; `task` (the Tasks extension) is a
//! task the [`tasks`](super::tasks) driver runs to its end when the call
//! declared the extension, and `invalid_response` when it did not; anything else
//! is `invalid_response` (never read as complete). An `input_required` result:
//!
//! - carries `inputRequests` (a map of keys to `{method, params}`), `requestState`
//!   (an opaque string), or both; neither is `invalid_response`;
//! - every input request must name a method this client declared on that request
//!   (from the installed host handler; none without one), at most
//!   [`MAX_INPUT_REQUESTS`] of them: anything else fails the call (no invented
//!   answers, no retry): `missing_capability` for an input method not declared,
//!   `invalid_response` for anything but the three input methods
//!   (`elicitation/create`, `roots/list`, `sampling/createMessage`);
//! - the retry is the same request with a new JSON-RPC id, plus `inputResponses`
//!   (this round's answers only) and `requestState` echoed exactly as received
//!   (none when none came), never carried over to another call;
//! - a result with only `requestState` (the server shedding load) is retried after
//!   a backoff of 50 ms doubling to 250 ms;
//! - at most `maxInputRounds` `input_required` results answered (a server
//!   still asking after that many fails the call) and `requestState` of at most
//!   `maxRequestStateBytes` bytes, else the call fails with `invalid_response`.
//!
//! `requestTimeoutMs` bounds the whole call, rounds and backoffs included, except
//! the time the host handler spends answering (it has a bound of its own).
//!
//! A `requestState` holding a lone UTF-16 surrogate (`"\ud800"`) is echoed with
//! U+FFFD in its place: Rust strings cannot hold one (the catalog documents the
//! same reading for tool names).

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::super::call_options::CallOptions;
use super::super::engine::RequestOptions;
use super::era::{Era, RequestMeta, Wire};
use super::inputs::MAX_INPUT_REQUESTS;
use super::link::Link;
use super::progress::{self, ProgressCall};
use super::tool_result::{TOOL_CALL_MEMBERS, ToolCallMembers, ToolResult};
use crate::catalog::Tool;
use crate::content::ContentBounds;
use crate::error::{Error, ErrorKind, Result};
use crate::jsonrpc::ResultBody;
use crate::param_headers;
use crate::transport::{CallHeaders, Medium};

/// The first backoff before retrying a `requestState`-only result.
const SHED_BACKOFF_FIRST: Duration = Duration::from_millis(50);
/// The longest backoff.
const SHED_BACKOFF_MAX: Duration = Duration::from_millis(250);

/// Modern `tools/call` parameters (keys in the order a `serde_json::Map` writes
/// them).
#[derive(Serialize)]
struct CallParams<'a> {
    #[serde(rename = "_meta")]
    meta: &'a RequestMeta,
    arguments: &'a Value,
    #[serde(rename = "inputResponses", skip_serializing_if = "Option::is_none")]
    input_responses: Option<&'a Map<String, Value>>,
    name: &'a str,
    #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
    request_state: Option<&'a str>,
}

/// Calls `tool` in the modern era, answering `input_required` rounds; with
/// `progress`, its token on every round (see [`super::progress`]: retire it
/// when `tools/call` hands back a task).
pub(crate) async fn call_tool(
    link: &Link,
    tool: &Tool,
    arguments: Value,
    options: &CallOptions,
    progress: Option<&ProgressCall>,
    mut wire: Wire,
    mut deadline: Instant,
) -> Result<ToolResult> {
    let Link {
        core: shared,
        protocol,
    } = link;
    // A call that may become a task declares the Tasks extension.
    let declaring = super::tasks::declares(link, options.task)?;
    let call_options = options;
    let base_meta = if declaring {
        &protocol.task_meta
    } else {
        &protocol.request_meta
    };
    // The host's own `_meta` members and the progress token join the
    // session's (rare: built per call).
    let merged_meta = progress::modern_meta(base_meta, options.meta.as_ref(), progress);
    let request_meta = merged_meta.as_ref().unwrap_or(base_meta);
    let server = &shared.server;
    let http = shared.medium == Medium::Exchanges;
    let call_headers = match (&arguments, http) {
        (Value::Object(object), true) => Some(Arc::new(CallHeaders {
            name: param_headers::encode_value(tool.name()),
            params: param_headers::mirror(server, tool.param_specs(), object, &shared.limits)?,
        })),
        _ => None,
    };
    let mut rounds = Rounds::new();
    let mut header_recheck_done = false;
    let mut corrective_used = false;
    loop {
        let params = CallParams {
            meta: request_meta,
            arguments: &arguments,
            input_responses: rounds.input_responses.as_ref(),
            name: tool.name(),
            request_state: rounds.request_state.as_deref(),
        };
        let options = RequestOptions {
            framing: wire.into(),
            cancellable: true,
            // A task's members are more than a selection holds: whole.
            select: (!declaring).then_some(&TOOL_CALL_MEMBERS),
            call: call_headers.clone(),
            stream_tag: progress.and_then(ProgressCall::stream_tag),
            later: progress.and_then(ProgressCall::later),
            ..RequestOptions::default()
        };
        let reply = shared
            .request_body("tools/call", params, deadline, options)
            .await;
        let reply = match reply {
            // -32020 to a call that mirrored arguments into headers: the server's
            // annotations may have changed under the frozen catalog. Re-list once:
            // the same definition, send the call again; another, refuse it.
            Err(error)
                if error.kind() == ErrorKind::HeaderMismatch
                    && !header_recheck_done
                    && call_headers.as_ref().is_some_and(|c| !c.params.is_empty()) =>
            {
                header_recheck_done = true;
                // The rare paths are boxed: every call's future would otherwise
                // carry their state (a catalog walk, the host handler's answers).
                Box::pin(recheck_tool(link, tool, wire)).await?;
                continue;
            }
            // -32022 after `server/discover` succeeded: one corrective retry.
            Err(error) if error.kind() == ErrorKind::UnsupportedProtocolVersion => {
                wire = super::negotiate::retry_after_version_error(
                    shared,
                    "tools/call",
                    error,
                    &mut corrective_used,
                )?;
                continue;
            }
            other => other?,
        };
        let members = match reply {
            ResultBody::Selected(members) => ToolCallMembers::from_selected(members),
            ResultBody::Value(Value::Object(object)) => {
                if declaring && object.get("resultType").and_then(Value::as_str) == Some("task") {
                    // Progress is not carried on tasks (beyond-tools.md §4.2).
                    if let Some(progress) = progress {
                        progress.retire();
                    }
                    return Box::pin(super::tasks::run(link, tool.name(), &object, call_options))
                        .await;
                }
                ToolCallMembers::from_object(object)
            }
            ResultBody::Value(_) => {
                return Err(Error::invalid_response(
                    "tools/call result is not an object",
                ));
            }
        };
        let bounds = || ContentBounds::from(&shared.limits);
        match members.result_type.as_ref() {
            None => return ToolResult::from_members(members, Era::Modern, &bounds()),
            Some(Value::String(kind)) if kind == "complete" => {
                return ToolResult::from_members(members, Era::Modern, &bounds());
            }
            Some(Value::String(kind)) if kind == "input_required" => {}
            Some(Value::String(kind)) if kind == "task" => {
                return Err(Error::invalid_response(format!(
                    "server \"{server}\" answered tools/call with a task, though the call did not declare the tasks extension"
                )));
            }
            Some(_) => {
                return Err(Error::invalid_response(format!(
                    "server \"{server}\" answered tools/call with an unknown resultType"
                )));
            }
        }
        rounds
            .answer(
                link,
                "tools/call",
                members.request_state,
                members.input_requests,
                &mut deadline,
            )
            .await?;
    }
}

/// The state of one multi-round-trip request between its rounds: what the
/// next round echoes (`inputResponses`, `requestState`), how many
/// `input_required` results were answered, and the load-shedding backoff. One
/// per request (never carried over), shared by `tools/call` and the generic
/// requests of [`super::send`] (`resources/read`, `prompts/get`).
pub(crate) struct Rounds {
    /// This round's answers, sent with the next round.
    pub(crate) input_responses: Option<Map<String, Value>>,
    /// The server's `requestState`, echoed exactly.
    pub(crate) request_state: Option<String>,
    answered: u64,
    backoff: Duration,
}

impl Rounds {
    pub(crate) fn new() -> Rounds {
        Rounds {
            input_responses: None,
            request_state: None,
            answered: 0,
            backoff: SHED_BACKOFF_FIRST,
        }
    }

    /// Takes one `input_required` result of `method` (its `requestState` and
    /// `inputRequests` members): checks the bounds, answers the input requests
    /// through the host handler (moving `deadline` on by the host's time) or
    /// backs off when only `requestState` came, and leaves what the next round
    /// sends in `self`.
    pub(crate) async fn answer(
        &mut self,
        link: &Link,
        method: &str,
        request_state: Option<Value>,
        input_requests: Option<Value>,
        deadline: &mut Instant,
    ) -> Result<()> {
        let Link {
            core: shared,
            protocol,
        } = link;
        let server = &shared.server;
        // `maxInputRounds` input_required results are answered; one more fails.
        self.answered += 1;
        if self.answered > shared.limits.max_input_rounds {
            return Err(Error::invalid_response(format!(
                "{method} on server \"{server}\" still asked for input after maxInputRounds ({}) rounds",
                shared.limits.max_input_rounds
            )));
        }
        self.request_state = match request_state {
            None | Some(Value::Null) => None,
            Some(Value::String(state)) => {
                if state.len() as u64 > shared.limits.max_request_state_bytes {
                    return Err(Error::invalid_response(format!(
                        "server \"{server}\" sent a requestState of {} bytes; maxRequestStateBytes is {}",
                        state.len(),
                        shared.limits.max_request_state_bytes
                    )));
                }
                Some(state)
            }
            Some(_) => {
                return Err(Error::invalid_response(format!(
                    "server \"{server}\" sent a requestState that is not a string"
                )));
            }
        };
        self.input_responses = match input_requests {
            None | Some(Value::Null) => {
                if self.request_state.is_none() {
                    return Err(Error::invalid_response(format!(
                        "server \"{server}\" asked for input with neither inputRequests nor requestState"
                    )));
                }
                // Load shedding: retry after a short, growing pause.
                let pause = self
                    .backoff
                    .min(deadline.saturating_duration_since(Instant::now()));
                Box::pin(tokio::time::sleep(pause)).await;
                self.backoff = (self.backoff * 2).min(SHED_BACKOFF_MAX);
                None
            }
            Some(Value::Object(requests)) => {
                if requests.len() > MAX_INPUT_REQUESTS {
                    return Err(Error::invalid_response(format!(
                        "server \"{server}\" sent {} inputRequests; at most {MAX_INPUT_REQUESTS} are answered (a fixed bound)",
                        requests.len()
                    )));
                }
                let started = Instant::now();
                let answers = Box::pin(protocol.inputs.answer_all(shared, requests)).await?;
                // The host's time (a person filling a form) is not the tool's.
                *deadline += started.elapsed();
                Some(answers)
            }
            Some(_) => {
                return Err(Error::invalid_response(format!(
                    "server \"{server}\" sent inputRequests that is not an object"
                )));
            }
        };
        Ok(())
    }
}

/// After a -32020 to a call with `Mcp-Param-*` headers (the specification: the
/// client SHOULD re-fetch `tools/list` and retry): `Ok` when the server still
/// describes `tool` exactly as the frozen catalog does, else `catalog_changed`
/// (the catalog is a snapshot for the session: reconnect to pick up the change).
async fn recheck_tool(link: &Link, tool: &Tool, wire: Wire) -> Result<()> {
    let (catalog, _) = super::negotiate::walk_catalog(link, wire).await?;
    match catalog.get(tool.name()) {
        Some(now) if now.as_sent() == tool.as_sent() => Ok(()),
        _ => Err(Error::new(
            ErrorKind::CatalogChanged,
            format!(
                "server \"{}\" refused the headers of {:?} and now describes it differently: reconnect to use its new definition",
                link.core.server,
                tool.name()
            ),
        )),
    }
}
