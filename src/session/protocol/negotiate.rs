//! Which era a session speaks, decided per server (`protocol-2026-07-28.md`
//! §1.4-1.7), and the catalog walk both eras share.
//!
//! With [`ProtocolMode::Auto`] the engine sends `server/discover` before
//! anything else, with the full `_meta` and a string id
//! (`server-discover-probe-<n>`, distinct from every later request's number id),
//! and reads the outcome:
//!
//! | outcome | verdict |
//! | --- | --- |
//! | a result listing `2026-07-28` | modern |
//! | a result listing no modern version this client speaks | legacy |
//! | -32022 whose `data.supported` lists `2026-07-28` | probe again at it, once (the corrective retry); a second -32022 fails with `unsupported_protocol_version` |
//! | -32022 listing only legacy versions | legacy |
//! | -32022 listing only modern versions this client does not speak | `unsupported_protocol_version` |
//! | -32020 / -32021 | a modern server refusing the probe: the error is surfaced |
//! | any other JSON-RPC error (-32601, -32602, ...) | legacy |
//! | stdio: no answer within `probeTimeoutMs` | legacy |
//! | stdio: the child exits during the probe | legacy, in a freshly started child |
//! | HTTP: a `4xx` other than 401/403 without a modern error body, or a `202` | legacy |
//! | HTTP: 401/403, a `5xx`, a network failure, a timeout | the error (never era evidence) |
//!
//! After a legacy verdict the legacy handshake runs exactly as without the probe;
//! late replies to the probe are dropped like any reply nobody waits for, and a
//! timed-out probe is never cancelled. A legacy `initialize` answered with -32022
//! (a modern-only server that was slow to answer the probe) sends the probe once
//! more. Once modern, a -32022 answering `tools/list` or `tools/call` gets the same
//! corrective retry, once per `tools/call` and once per catalog walk (the walk
//! switches version once, for all its pages) ([`retry_after_version_error`]).
//! [`ProtocolMode::Legacy`] skips the probe; [`ProtocolMode::Modern`]
//! refuses any verdict but modern with `unsupported_protocol_version`. A
//! group's era cache (`crate::group`) skips it too, for an `auto` server whose
//! HTTP origin another server was found legacy on: `initialize` first, and the
//! full negotiation above once on a fresh session when that `initialize` is
//! refused (`super::connect_known_legacy`).

use std::collections::HashSet;

use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;

use secrecy::SecretString;

use super::super::engine::{Core, RequestOptions};
use super::era::{
    Era, MODERN_PROTOCOL_VERSIONS, ProtocolMode, RequestMeta, SUPPORTED_PROTOCOL_VERSIONS, Wire,
};
use super::facts::{CacheHint, ServerInfo, instructions};
use super::link::Link;
use crate::catalog::{Catalog, CatalogBuilder};
use crate::diagnostics::DiagnosticEvent;
use crate::error::{Detail, Error, ErrorKind, Result};
use crate::jsonrpc::{self, ResultBody};
use crate::limits::Limits;
use crate::transport::Medium;

/// What the handshake (legacy) or `server/discover` (modern) told us.
#[derive(Debug, Clone)]
pub(crate) struct ServerFacts {
    pub(crate) era: Era,
    pub(crate) version: &'static str,
    pub(crate) offers_tools: bool,
    /// The server's `capabilities` object as sent (`{}` when it sent none or
    /// not an object), unknown members kept: SEP-2133 `extensions` lives in it
    /// in both eras. Bounded by the frame it came in.
    pub(crate) capabilities: Value,
    pub(crate) server_info: Option<ServerInfo>,
    pub(crate) instructions: Option<String>,
    /// The `server/discover` result's cache hints (modern only).
    pub(crate) discover_cache: Option<CacheHint>,
}

impl ServerFacts {
    /// From a legacy `initialize` result.
    pub(crate) fn from_result(result: &Value, version: &'static str) -> ServerFacts {
        ServerFacts {
            era: Era::Legacy,
            version,
            offers_tools: offers_tools(result),
            capabilities: capabilities_of(result),
            server_info: ServerInfo::from_value(result.get("serverInfo")),
            instructions: instructions(result),
            discover_cache: None,
        }
    }

    /// From a `server/discover` result (identity in the result `_meta`; the body's
    /// `serverInfo` that some servers still send is read when `_meta` has none).
    fn from_discover(result: &Value, version: &'static str) -> ServerFacts {
        let info = result
            .get("_meta")
            .and_then(|meta| meta.get("io.modelcontextprotocol/serverInfo"));
        ServerFacts {
            era: Era::Modern,
            version,
            offers_tools: offers_tools(result),
            capabilities: capabilities_of(result),
            server_info: ServerInfo::from_value(info)
                .or_else(|| ServerInfo::from_value(result.get("serverInfo"))),
            instructions: instructions(result),
            discover_cache: Some(CacheHint::from_result(result)),
        }
    }
}

impl ServerFacts {
    /// The member `name` of the server's `capabilities`, when it declared it
    /// as an object (`resources`, `prompts`, `completions`, `extensions`, ...).
    pub(crate) fn capability(&self, name: &str) -> Option<&Value> {
        self.capabilities.get(name).filter(|c| c.is_object())
    }

    /// The gate in front of every request a capability governs (beyond-tools.md
    /// §0.2, strict: Q1): `Ok` when the server declared `capability` as an
    /// object, else `missing_capability` naming the server and the capability.
    /// Nothing is sent either way.
    pub(crate) fn require(&self, server: &str, capability: &str) -> Result<()> {
        if self.capability(capability).is_some() {
            Ok(())
        } else {
            Err(missing_capability(server, capability))
        }
    }
}

/// The error of a request the server's capabilities do not cover (nothing was
/// sent): `server "x" does not declare resources`.
pub(crate) fn missing_capability(server: &str, capability: &str) -> Error {
    Error::new(
        ErrorKind::MissingCapability,
        format!("server \"{server}\" does not declare {capability}"),
    )
}

/// The `capabilities` member of a handshake result, `{}` unless an object.
fn capabilities_of(result: &Value) -> Value {
    match result.get("capabilities") {
        Some(caps @ Value::Object(_)) => caps.clone(),
        _ => Value::Object(serde_json::Map::new()),
    }
}

fn offers_tools(result: &Value) -> bool {
    result
        .get("capabilities")
        .and_then(|c| c.get("tools"))
        .is_some_and(Value::is_object)
}

/// Maps a handshake step's timeout to its public message; other errors pass.
pub(crate) fn step_error(shared: &Core, what: &'static str) -> impl Fn(Error) -> Error + use<> {
    let server = shared.server.clone();
    move |error: Error| {
        if error.kind() == ErrorKind::Timeout {
            Error::timeout(format!(
                "server \"{server}\" did not complete {what} within handshakeTimeoutMs"
            ))
        } else {
            error
        }
    }
}

/// `server/discover` and `tools/list` parameters. Legacy frames carry no `_meta`
/// (so their bytes are exactly what they were before 2026-07-28 existed).
#[derive(Serialize)]
struct ListParams<'a> {
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<&'a RequestMeta>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<&'a str>,
}

/// Checks a modern result's `resultType`: absent or `complete` is complete
/// (absent is what earlier servers send, and what the conformance suite expects
/// to be read so); `input_required` is not allowed here, and an unknown value is
/// never read as complete.
pub(crate) fn require_complete(shared: &Core, method: &str, result: &Value) -> Result<()> {
    match result.get("resultType") {
        None => Ok(()),
        Some(Value::String(kind)) if kind == "complete" => Ok(()),
        Some(_) => Err(Error::invalid_response(format!(
            "server \"{}\" answered {method} with a resultType other than complete",
            shared.server
        ))),
    }
}

/// Step 5 of the connect: walks `tools/list` following `nextCursor` under the
/// catalog limits. In the modern era `""` is a cursor like any other (the page
/// cap and the repeated-cursor rule still end a walk), `_meta` goes on every
/// page, and on HTTP tools with invalid `x-mcp-header` annotations are dropped.
pub(crate) async fn walk_catalog(link: &Link, wire: Wire) -> Result<(Catalog, Option<CacheHint>)> {
    let Link {
        core: shared,
        protocol,
    } = link;
    let timeout = shared.limits.handshake_timeout();
    let modern = wire.is_modern();
    let mut builder = CatalogBuilder::new(&shared.limits)
        .empty_cursor_continues(modern)
        .param_headers(modern && shared.medium == Medium::Exchanges);
    let mut cursor: Option<String> = None;
    let mut hint: Option<CacheHint> = None;
    let mut wire = wire;
    let mut corrective_used = false;
    loop {
        let params = ListParams {
            meta: modern.then_some(&protocol.request_meta),
            cursor: cursor.as_deref(),
        };
        let page = match shared
            .request("tools/list", params, wire, Instant::now() + timeout, true)
            .await
        {
            Err(error) if modern && error.kind() == ErrorKind::UnsupportedProtocolVersion => {
                wire =
                    retry_after_version_error(shared, "tools/list", error, &mut corrective_used)?;
                continue;
            }
            page => page.map_err(step_error(shared, "tools/list"))?,
        };
        if modern {
            require_complete(shared, "tools/list", &page)?;
            let page_hint = CacheHint::from_result(&page);
            hint = Some(hint.map_or(page_hint, |h| h.stricter(page_hint)));
        }
        let (accepted, pages) = builder.progress();
        let listed = accepted.saturating_add(tools_on(&page));
        if listed > Limits::usize_of(shared.limits.max_tools) {
            return Err(past_max_tools(link, wire, &page, listed, pages + 1).await);
        }
        match builder.add_page(page)? {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let catalog = builder.finish();
    for (tool, reason) in catalog.dropped() {
        tool_dropped(shared, tool, reason);
    }
    Ok((catalog, hint))
}

/// Reports a tool dropped from the catalog (its name is server text: private).
fn tool_dropped(core: &Core, tool: &str, reason: &'static str) {
    if core.diagnostics.is_enabled() {
        core.diagnostics.emit(DiagnosticEvent::ToolDropped {
            server: core.server.clone(),
            tool: SecretString::from(tool.to_owned()),
            reason,
        });
    }
}

/// How many entries a `tools/list` page's `tools` array has (0 when it is not one).
fn tools_on(page: &Value) -> usize {
    page.get("tools")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The catalog lists more than `maxTools` tools by page `page` (`listed` so far):
/// the walk goes on only to count, so that the error says how far past the bound
/// the server is (`server "s" lists 262 tools; maxTools is 256`). Counting follows
/// `nextCursor` under the same rules and bounds as the walk (`maxCatalogPages`,
/// no repeated cursor, `handshakeTimeoutMs` a page) and keeps nothing; when it
/// cannot reach the last page the count is "at least". The connection fails
/// either way: a catalog is never truncated.
async fn past_max_tools(
    link: &Link,
    wire: Wire,
    page: &Value,
    mut listed: usize,
    mut pages: usize,
) -> Error {
    let Link {
        core: shared,
        protocol,
    } = link;
    let modern = wire.is_modern();
    let max_pages = Limits::usize_of(shared.limits.max_catalog_pages);
    let mut seen: HashSet<String> = HashSet::new();
    let mut last_is_final = page_is_last(page);
    let mut next = next_cursor(page, modern);
    let complete = loop {
        let Some(cursor) = next.take() else {
            break last_is_final;
        };
        if pages >= max_pages || !seen.insert(cursor.clone()) {
            break false;
        }
        let params = ListParams {
            meta: modern.then_some(&protocol.request_meta),
            cursor: Some(&cursor),
        };
        let deadline = Instant::now() + shared.limits.handshake_timeout();
        let Ok(more) = shared
            .request("tools/list", params, wire, deadline, true)
            .await
        else {
            break false;
        };
        pages += 1;
        listed = listed.saturating_add(tools_on(&more));
        last_is_final = page_is_last(&more);
        next = next_cursor(&more, modern);
    };
    let (at_least, max) = (
        if complete { "" } else { "at least " },
        shared.limits.max_tools,
    );
    Error::invalid_response(format!(
        "server \"{}\" lists {at_least}{listed} tools; maxTools is {max}",
        shared.server
    ))
}

/// A page's `nextCursor` when it is one the walk would follow.
fn next_cursor(page: &Value, modern: bool) -> Option<String> {
    match page.get("nextCursor") {
        Some(Value::String(cursor)) if !cursor.is_empty() || modern => Some(cursor.clone()),
        _ => None,
    }
}

/// A page with no `nextCursor` member is the last; one whose `nextCursor` is not
/// a cursor the walk follows ends the count without knowing the rest.
fn page_is_last(page: &Value) -> bool {
    page.get("nextCursor").is_none()
}

/// What the probe decided.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Speak 2026-07-28.
    Modern(ServerFacts),
    /// Run the legacy handshake on this connection (why, for diagnostics).
    Legacy(&'static str),
    /// The stdio child exited during the probe: start it again and run the
    /// legacy handshake there.
    Respawn,
}

/// Sends `server/discover` (once more after a -32022 naming a version we speak)
/// and classifies the outcome (see the module docs).
pub(crate) async fn probe(link: &Link, mode: ProtocolMode) -> Result<Verdict> {
    let Link {
        core: shared,
        protocol,
    } = link;
    let mut corrective_used = false;
    loop {
        let version = MODERN_PROTOCOL_VERSIONS[0];
        let wire = Wire::Modern(version);
        let params = ListParams {
            meta: Some(&protocol.request_meta),
            cursor: None,
        };
        let deadline = Instant::now() + shared.limits.probe_timeout();
        // Never cancelled: a legacy server does not know the request.
        let options = RequestOptions {
            framing: wire.into(),
            cancellable: false,
            quiet: true,
            string_id: true,
            ..RequestOptions::default()
        };
        let outcome = shared
            .request_body("server/discover", params, deadline, options)
            .await
            .map(ResultBody::into_value);
        let verdict = match outcome {
            Ok(result) => {
                require_complete(shared, "server/discover", &result)?;
                match offered_modern_version(&result) {
                    Some(version) => Verdict::Modern(ServerFacts::from_discover(&result, version)),
                    None => Verdict::Legacy("server/discover offered no 2026-07-28"),
                }
            }
            Err(error) => match classify_probe_error(shared, error)? {
                ProbeError::Retry if !corrective_used => {
                    corrective_used = true;
                    continue;
                }
                ProbeError::Retry => {
                    return Err(Error::new(
                        ErrorKind::UnsupportedProtocolVersion,
                        format!(
                            "server \"{}\" refused protocol version {version} twice",
                            shared.server
                        ),
                    ));
                }
                ProbeError::Legacy(why) => Verdict::Legacy(why),
                ProbeError::Respawn => Verdict::Respawn,
            },
        };
        if mode == ProtocolMode::Modern && !matches!(verdict, Verdict::Modern(_)) {
            return Err(Error::new(
                ErrorKind::UnsupportedProtocolVersion,
                format!(
                    "server \"{}\" does not speak protocol 2026-07-28 (protocol is pinned to it)",
                    shared.server
                ),
            ));
        }
        return Ok(verdict);
    }
}

/// The first modern version this client speaks that a `DiscoverResult` lists.
fn offered_modern_version(result: &Value) -> Option<&'static str> {
    let offered = result.get("supportedVersions")?.as_array()?;
    MODERN_PROTOCOL_VERSIONS
        .iter()
        .find(|ours| offered.iter().any(|v| v.as_str() == Some(ours)))
        .copied()
}

/// The versions a -32022 error's `data.supported` names (empty for any other error).
fn supported_versions(error: &Error) -> &[String] {
    match error.detail() {
        Some(Detail::Remote { supported, .. }) => supported.as_slice(),
        _ => &[],
    }
}

/// The first modern version this client speaks that a -32022 error names.
fn mutual_modern_version(error: &Error) -> Option<&'static str> {
    let supported = supported_versions(error);
    MODERN_PROTOCOL_VERSIONS
        .iter()
        .find(|ours| supported.iter().any(|v| v == *ours))
        .copied()
}

/// The corrective retry of a modern request other than the probe
/// (`protocol-2026-07-28.md` §1.3): a -32022 answering `tools/list` or
/// `tools/call` after `server/discover` succeeded, whose `data.supported` names a
/// version this client speaks, sends the same request once more (a new id) at that
/// version; `used` records that it was spent. Any other error, a -32022 naming no
/// mutual version, or a second -32022 fails (`unsupported_protocol_version`).
///
/// A -32022 means the server refused the request before running it, so sending
/// it again replays nothing. This client speaks one modern version, which the
/// session's `_meta` already states: the retry's wire is that same version.
pub(crate) fn retry_after_version_error(
    shared: &Core,
    method: &str,
    error: Error,
    used: &mut bool,
) -> Result<Wire> {
    if error.kind() != ErrorKind::UnsupportedProtocolVersion {
        return Err(error);
    }
    let Some(version) = mutual_modern_version(&error) else {
        return Err(error);
    };
    if std::mem::replace(used, true) {
        let detail = error.detail().cloned();
        let refused = Error::new(
            ErrorKind::UnsupportedProtocolVersion,
            format!(
                "server \"{}\" refused protocol version {version} twice for {method}",
                shared.server
            ),
        );
        return Err(match detail {
            Some(detail) => refused.with_detail(detail),
            None => refused,
        });
    }
    Ok(Wire::Modern(version))
}

enum ProbeError {
    Retry,
    Legacy(&'static str),
    Respawn,
}

fn classify_probe_error(shared: &Core, error: Error) -> Result<ProbeError> {
    let stream = shared.medium == Medium::Stream;
    match error.kind() {
        ErrorKind::UnsupportedProtocolVersion => {
            let supported = supported_versions(&error);
            if mutual_modern_version(&error).is_some() {
                Ok(ProbeError::Retry)
            } else if supported
                .iter()
                .any(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(&v.as_str()))
            {
                Ok(ProbeError::Legacy(
                    "server/discover refused; the server names legacy versions",
                ))
            } else {
                Err(Error::new(
                    ErrorKind::UnsupportedProtocolVersion,
                    format!(
                        "server \"{}\" supports no protocol version this client speaks",
                        shared.server
                    ),
                )
                .with_detail(error.detail().cloned().unwrap_or(Detail::Remote {
                    code: jsonrpc::UNSUPPORTED_PROTOCOL_VERSION,
                    supported: Vec::new(),
                })))
            }
        }
        // A modern server refusing the probe itself: surfaced, not a fallback.
        ErrorKind::MissingCapability | ErrorKind::HeaderMismatch => Err(error),
        ErrorKind::RemoteError => Ok(ProbeError::Legacy(
            "server/discover answered with a JSON-RPC error",
        )),
        ErrorKind::Timeout if stream => Ok(ProbeError::Legacy(
            "no answer to server/discover within probeTimeoutMs",
        )),
        ErrorKind::Timeout => Err(Error::timeout(format!(
            "server \"{}\" did not answer server/discover within probeTimeoutMs",
            shared.server
        ))),
        ErrorKind::HttpStatus => match error.http_status() {
            Some(status @ 400..=499) if status != 401 && status != 403 => Ok(ProbeError::Legacy(
                "server/discover refused with an HTTP 4xx and no modern error",
            )),
            _ => Err(error),
        },
        // A request "accepted" with no reply: a server that does not know it.
        ErrorKind::InvalidResponse if matches!(error.http_status(), Some(202 | 204)) => Ok(
            ProbeError::Legacy("server/discover answered HTTP 202/204 without a reply"),
        ),
        // The child exited or closed stdout during the probe: some legacy servers
        // stop when the first request is not `initialize`.
        ErrorKind::ConnectionClosed if stream && shared.terminal().is_some() => {
            Ok(ProbeError::Respawn)
        }
        _ => Err(error),
    }
}
