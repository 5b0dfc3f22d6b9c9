//! One request in the session's era, for every method past `tools/*`
//! (`resources/*`, `prompts/*`, `completion/complete`), and the paginated walk
//! of a list method (beyond-tools.md §0.1-§0.3).
//!
//! [`send`] writes the request as the era wants it and reads the reply:
//!
//! | | legacy | 2026-07-28 |
//! | --- | --- | --- |
//! | `params._meta` | none (the bytes are what they were before 2026-07-28) | [`RequestMeta`] on every round |
//! | `resultType` | not read | absent or `complete` is the result ([`require_complete`]); `input_required` answered in rounds ([`Rounds`]) where the method allows it, else `invalid_response` |
//! | `Mcp-Name` (HTTP) | none | the `uri` of `resources/read`, the `name` of `prompts/get`, through the base64 sentinel unless printable ASCII |
//! | -32022 | a remote error | the corrective retry, once per request, as for `tools/list` |
//! | -32002 | `not_found` | `not_found` |
//! | -32602 | `remote_error`, except `not_found` answering `resources/read` / `prompts/get` | the same |
//!
//! A `not_found` never carries the server's message (it goes to the diagnostics
//! observer like any remote error body). Capability gating happens before
//! anything here runs ([`ServerFacts::require`](super::negotiate::ServerFacts::require)).
//!
//! [`walk`] drives a [`ListBuilder`] over the pages of a list method: the cursor
//! rules, the page cap (`maxCatalogPages`) and the item caps are the builder's;
//! the walk adds the era's cursor (`""` continues in 2026-07-28), merges the
//! pages' cache hints (the earliest expiry wins, one `private` page makes the
//! list private), and on a modern `-32602` answering a page asked with a cursor
//! (expired, or the list changed) drops what it has and starts again from the
//! first page, once. A page that breaks a rule fails the walk: a truncated list
//! is never returned.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::super::engine::RequestOptions;
use super::era::RequestMeta;
use super::facts::CacheHint;
use super::link::Link;
use super::modern::Rounds;
use super::negotiate::{require_complete, retry_after_version_error};
use crate::error::{Detail, Error, ErrorKind, Result};
use crate::jsonrpc::{self, ResultBody};
use crate::listing::{ListBounds, ListBuilder, ListEntry};
use crate::param_headers;
use crate::transport::{CallHeaders, Medium};

/// JSON-RPC -32002: resource not found (2025-11-25; accepted in both eras).
pub(crate) const RESOURCE_NOT_FOUND: i64 = -32002;

/// How [`send`] sends one request.
pub(crate) struct Ask<'a> {
    /// The method.
    pub(crate) method: &'static str,
    /// 2026-07-28 over HTTP: the `Mcp-Name` value (not yet encoded).
    pub(crate) name_header: Option<&'a str>,
    /// A -32602 answering it means "no such resource or prompt" (`not_found`).
    pub(crate) invalid_params_is_not_found: bool,
    /// 2026-07-28: `input_required` is answered in rounds (MRTR); otherwise it
    /// is `invalid_response`.
    pub(crate) rounds: bool,
    /// The reply may be a frame this long, past `maxFrameBytes`
    /// (`resources/read`: beyond-tools.md Q3).
    pub(crate) max_reply_bytes: Option<usize>,
    /// When the request (all its rounds) must be answered by.
    pub(crate) deadline: Instant,
}

impl Ask<'_> {
    /// A plain request of `method` until `deadline`.
    pub(crate) fn new(method: &'static str, deadline: Instant) -> Ask<'static> {
        Ask {
            method,
            name_header: None,
            invalid_params_is_not_found: false,
            rounds: false,
            max_reply_bytes: None,
            deadline,
        }
    }
}

/// A request's params in the era's form: the method's own members, plus (2026-07-28)
/// `_meta` and the MRTR members of a retried round.
#[derive(Serialize)]
struct Params<'a, P: Serialize> {
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a RequestMeta>,
    #[serde(flatten)]
    body: &'a P,
    #[serde(rename = "inputResponses", skip_serializing_if = "Option::is_none")]
    input_responses: Option<&'a Map<String, Value>>,
    #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
    request_state: Option<&'a str>,
}

/// Sends `body` (an object's members) as `ask.method` in the session's era and
/// returns the result object (see the module docs for what differs by era).
pub(crate) async fn send<P: Serialize>(link: &Link, ask: &Ask<'_>, body: &P) -> Result<Value> {
    let Link { core, protocol } = link;
    let mut wire = protocol.wire.get();
    let modern = wire.is_modern();
    let headers = match ask.name_header {
        Some(name) if modern && core.medium == Medium::Exchanges => Some(Arc::new(CallHeaders {
            name: param_headers::encode_value(name),
            params: Vec::new(),
        })),
        _ => None,
    };
    let mut rounds = Rounds::new();
    let mut corrective_used = false;
    let mut deadline = ask.deadline;
    loop {
        let params = Params {
            meta: modern.then_some(&protocol.request_meta),
            body,
            input_responses: rounds.input_responses.as_ref(),
            request_state: rounds.request_state.as_deref(),
        };
        let options = RequestOptions {
            framing: wire.into(),
            cancellable: true,
            call: headers.clone(),
            max_reply_bytes: ask.max_reply_bytes,
            ..RequestOptions::default()
        };
        let reply = core
            .request_body(ask.method, params, deadline, options)
            .await
            .map(ResultBody::into_value);
        let result = match reply {
            Err(error) if modern && error.kind() == ErrorKind::UnsupportedProtocolVersion => {
                wire = retry_after_version_error(core, ask.method, error, &mut corrective_used)?;
                continue;
            }
            Err(error) => return Err(not_found(core.server.as_ref(), ask, error)),
            Ok(result) => result,
        };
        if !modern {
            return Ok(result);
        }
        let Value::Object(mut result) = result else {
            return Err(Error::invalid_response(format!(
                "server \"{}\" answered {} with a result that is not an object",
                core.server, ask.method
            )));
        };
        match result.get("resultType") {
            Some(Value::String(kind)) if kind == "input_required" && ask.rounds => {}
            _ => {
                let result = Value::Object(result);
                require_complete(core, ask.method, &result)?;
                return Ok(result);
            }
        }
        let state = result.remove("requestState");
        let requests = result.remove("inputRequests");
        rounds
            .answer(link, ask.method, state, requests, &mut deadline)
            .await?;
    }
}

/// A JSON-RPC error meaning "no such thing" becomes `not_found` (the remote
/// code kept, the remote text never): -32002 always, -32602 where the request's
/// only argument is the address or name asked for.
fn not_found(server: &str, ask: &Ask<'_>, error: Error) -> Error {
    let code = error.remote_code();
    let missing = error.kind() == ErrorKind::RemoteError
        && (code == Some(RESOURCE_NOT_FOUND)
            || (ask.invalid_params_is_not_found && code == Some(jsonrpc::INVALID_PARAMS)));
    if !missing {
        return error;
    }
    let what = match ask.method {
        "resources/read" => "the resource asked for",
        "prompts/get" => "the prompt asked for",
        _ => "what was asked for",
    };
    Error::new(
        ErrorKind::NotFound,
        format!(
            "server \"{server}\" does not have {what} ({} answered with JSON-RPC error {})",
            ask.method,
            code.unwrap_or_default()
        ),
    )
    .with_detail(error.detail().cloned().unwrap_or(Detail::Remote {
        code: code.unwrap_or_default(),
        supported: Vec::new(),
    }))
}

/// A list page's params: the cursor, when there is one.
#[derive(Serialize)]
struct PageParams<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<&'a str>,
}

/// A whole list walk (`resources/list`, `resources/templates/list`,
/// `prompts/list`): its entries in server order, every page checked, and
/// (2026-07-28) the merged cache hints of its pages: the earliest expiry, and
/// `private` when any page was.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Listing<T> {
    /// The entries, in server order.
    pub entries: Vec<T>,
    /// The merged cache hints (2026-07-28 only; `None` in the legacy era).
    pub cache: Option<CacheHint>,
}

/// One page of a list method, for hosts that page themselves (a listing may
/// be larger than its walk's cap). The page follows every rule of a walk's
/// page; the cursor is the host's to keep.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page<T> {
    /// The page's entries, in server order.
    pub entries: Vec<T>,
    /// The cursor of the next page, when there is one (2026-07-28: `""` is a
    /// cursor).
    pub next_cursor: Option<String>,
    /// The page's cache hints (2026-07-28 only).
    pub cache: Option<CacheHint>,
}

/// Fetches one page of the list method of `T` at `cursor` within
/// `requestTimeoutMs`. A `nextCursor` equal to `cursor` fails (the host would
/// loop).
pub(crate) async fn page<T: ListEntry>(link: &Link, cursor: Option<&str>) -> Result<Page<T>> {
    let core = &link.core;
    let modern = link.protocol.wire.get().is_modern();
    let bounds = ListBounds::from(&core.limits);
    let method = <T as crate::listing::sealed::Entry>::METHOD;
    let deadline = Instant::now() + core.limits.request_timeout();
    let page = send(link, &Ask::new(method, deadline), &PageParams { cursor }).await?;
    let cache = modern.then(|| CacheHint::from_result(&page));
    let mut builder = ListBuilder::<T>::new(&bounds).empty_cursor_continues(modern);
    let next_cursor = builder.add_page(page)?;
    if next_cursor.is_some() && next_cursor.as_deref() == cursor {
        return Err(Error::invalid_response(format!(
            "{method}: the nextCursor repeats the cursor the page was asked with"
        )));
    }
    Ok(Page {
        entries: builder.finish(),
        next_cursor,
        cache,
    })
}

/// Walks the list method of `T` (see the module docs), each page bounded by
/// `requestTimeoutMs`.
pub(crate) async fn walk<T: ListEntry>(link: &Link) -> Result<Listing<T>> {
    let core = &link.core;
    let modern = link.protocol.wire.get().is_modern();
    let bounds = ListBounds::from(&core.limits);
    let method = <T as crate::listing::sealed::Entry>::METHOD;
    let mut restarted = false;
    'walk: loop {
        let mut builder = ListBuilder::<T>::new(&bounds).empty_cursor_continues(modern);
        let mut cursor: Option<String> = None;
        let mut cache: Option<CacheHint> = None;
        loop {
            let deadline = Instant::now() + core.limits.request_timeout();
            let params = PageParams {
                cursor: cursor.as_deref(),
            };
            let page = match send(link, &Ask::new(method, deadline), &params).await {
                Err(error)
                    if modern
                        && cursor.is_some()
                        && !restarted
                        && error.kind() == ErrorKind::RemoteError
                        && error.remote_code() == Some(jsonrpc::INVALID_PARAMS) =>
                {
                    // The cursor expired or the list changed: once from page one.
                    restarted = true;
                    continue 'walk;
                }
                page => page?,
            };
            if modern {
                let hint = CacheHint::from_result(&page);
                cache = Some(cache.map_or(hint, |h| h.stricter(hint)));
            }
            match builder.add_page(page)? {
                Some(next) => cursor = Some(next),
                None => {
                    return Ok(Listing {
                        entries: builder.finish(),
                        cache,
                    });
                }
            }
        }
    }
}
