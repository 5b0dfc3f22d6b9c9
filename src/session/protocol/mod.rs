//! The protocol layer: what MCP says over the core's requests, in the era the
//! session speaks. The era is chosen once, at connect ([`connect_era`], with
//! the probe table of [`negotiate`] as its entry), and this layer owns all that
//! differs by era: the legacy handshake and its HTTP re-initialise
//! ([`legacy`]), the 2026-07-28 `_meta` and multi-round-trip calls
//! ([`modern`]), how a tool result is read ([`tool_result`]), and the answers to
//! what a server asks ([`inputs`]).
//!
//! It sits on the core ([`super::engine`]), which it reaches through [`Link`]
//! (the core and this layer's state, [`Protocol`]) and which reaches it only
//! through [`ProtocolHooks`]; the public [`Client`](super::Client) sits on it.

pub(crate) mod completion;
pub(crate) mod era;
pub(crate) mod facts;
pub(crate) mod feeds;
pub(crate) mod inputs;
pub(crate) mod legacy;
pub(crate) mod link;
pub(crate) mod modern;
pub(crate) mod negotiate;
pub(crate) mod progress;
pub(crate) mod prompts;
pub(crate) mod reinit;
pub(crate) mod resources;
pub(crate) mod send;
pub(crate) mod skills;
pub(crate) mod subscriptions;
pub(crate) mod tasks;
pub(crate) mod tool_result;

use std::num::NonZeroU64;
use std::sync::Arc;

use secrecy::SecretString;
use serde_json::Value;
use tokio::time::Instant;

use super::call_options::CallOptions;
use super::engine::{Core, Framing, ProtocolHooks, RequestCtl};
use crate::catalog::Tool;
use crate::diagnostics::DiagnosticEvent;
use crate::error::{ErrorKind, Result};
use crate::jsonrpc::Id;
use crate::transport::{Medium, OutboundFrame};
use era::{ProtocolMode, Wire};
pub(crate) use link::{Link, Protocol};
use negotiate::{ServerFacts, Verdict};
use progress::ProgressCall;
use tool_result::ToolResult;

/// The legacy era answers the input requests the host declared (and `ping`)
/// and refuses the rest; 2026-07-28 has no server requests (dropped, and
/// reported). Requests wait while a legacy re-initialise runs; a lost HTTP
/// session starts one.
impl ProtocolHooks for Protocol {
    fn request(
        self: Arc<Self>,
        core: &Arc<Core>,
        id: Id,
        method: &str,
        frame: &[u8],
    ) -> Option<Value> {
        if self.wire.get().is_modern() {
            // 2026-07-28: a server sends no requests and a client writes no
            // responses, not even an error: dropped, and reported.
            if core.diagnostics.is_enabled() {
                core.diagnostics
                    .emit(DiagnosticEvent::ServerRequestDropped {
                        server: core.server.clone(),
                        method: SecretString::from(method.to_owned()),
                    });
            }
            return None;
        }
        self.inputs.server_request(core, id, method, frame)
    }

    fn notification(
        &self,
        core: &Arc<Core>,
        method: &str,
        frame: &[u8],
        stream: Option<NonZeroU64>,
    ) {
        let modern = self.wire.get().is_modern();
        if method == progress::PROGRESS {
            // 2026-07-28 over HTTP: only on its own call's stream.
            let own_stream_only = modern && core.medium == Medium::Exchanges;
            return self.progress.route(core, frame, stream, own_stream_only);
        }
        self.inputs.server_notification(method, frame);
        let taken = self.feeds.route(core, method, frame, modern);
        // The held listing no longer says what `prompts/get` accepts. Legacy
        // servers send the change unasked (some without declaring it);
        // 2026-07-28: only a change a listen took counts.
        if method == crate::events::PROMPTS_LIST_CHANGED && (taken || !modern) {
            *super::engine::lock(&self.prompts) = None;
        }
    }

    fn framing(&self) -> Framing {
        self.wire.get().into()
    }

    fn hold(&self, frame: OutboundFrame, control: &Arc<RequestCtl>) -> Option<OutboundFrame> {
        self.reinit.hold(frame, control)
    }

    fn state_lost(
        self: Arc<Self>,
        core: &Arc<Core>,
        refused: OutboundFrame,
        stale: bool,
    ) -> Result<()> {
        let frozen = self.catalog.get().is_some();
        let reinit = self.reinit.clone();
        let link = Link {
            core: core.clone(),
            protocol: self,
        };
        let rerun = async move {
            let done = legacy::reinitialize(&link).await;
            if done.is_ok() {
                // The new session has none of the old one's subscriptions; the
                // requests wait until the re-initialise is over.
                let link = link.clone();
                tokio::spawn(async move { subscriptions::renew(&link).await });
            }
            done
        };
        reinit.expired(core, refused, stale, frozen, rerun)
    }
}

/// Calls `tool` (from the frozen catalog, its `arguments` and `options`
/// checked) until `deadline`, in the era the session speaks; with `progress`,
/// the call's registered progress token ([`progress`]).
pub(crate) async fn call_tool(
    link: &Link,
    tool: &Tool,
    arguments: Value,
    options: &CallOptions,
    progress: Option<&ProgressCall>,
    deadline: Instant,
) -> Result<ToolResult> {
    let wire = link.protocol.wire.get();
    if wire.is_modern() {
        modern::call_tool(link, tool, arguments, options, progress, wire, deadline).await
    } else {
        // 2025-11-25 tasks (SEP-1686) are not supported: `Require` cannot hold.
        tasks::declares(link, options.task)?;
        let meta = options.meta.as_ref();
        let name = tool.name();
        legacy::call_tool(&link.core, name, arguments, meta, progress, wire, deadline).await
    }
}

/// How [`connect_era`] ended.
pub(crate) enum Connected {
    /// Handshake done (and why a probe fell back to legacy, if it did).
    Done(ServerFacts, Option<&'static str>),
    /// Start the child again and connect legacy (why).
    Respawn(&'static str),
    /// The era cache's legacy hint failed: run the full negotiation on a fresh
    /// session ([`connect_known_legacy`]).
    Renegotiate,
}

/// The fallback reason reported when the era cache skipped the probe.
pub(crate) const KNOWN_LEGACY: &str =
    "another server of this origin was found legacy; server/discover skipped";

/// Steps 2-3 when the era cache knows the server's origin as legacy (a
/// group's, `auto` only): `initialize` at once, no probe. A failure that may
/// mean the era is wrong (a JSON-RPC error, -32022 included, an HTTP status, a
/// version or result refused) asks for the full negotiation
/// ([`Connected::Renegotiate`]); a failure that says nothing about the era
/// (a timeout, `401`/`403`, a closed connection, TLS, egress) is the error.
pub(crate) async fn connect_known_legacy(link: &Link) -> Result<Connected> {
    match legacy::initialize(link).await {
        Ok(facts) => Ok(Connected::Done(facts, Some(KNOWN_LEGACY))),
        Err(error)
            if matches!(
                error.kind(),
                ErrorKind::RemoteError
                    | ErrorKind::UnsupportedProtocolVersion
                    | ErrorKind::HttpStatus
                    | ErrorKind::ProtocolError
                    | ErrorKind::InvalidResponse
            ) =>
        {
            Ok(Connected::Renegotiate)
        }
        Err(error) => Err(error),
    }
}

/// Steps 2-3 of the connect on an open session: the probe (unless legacy is
/// pinned), then the legacy handshake when the verdict says so, with one more
/// probe when `initialize` is answered with -32022.
pub(crate) async fn connect_era(link: &Link, mode: ProtocolMode) -> Result<Connected> {
    let fallback = match mode {
        ProtocolMode::Legacy => None,
        ProtocolMode::Auto | ProtocolMode::Modern => match negotiate::probe(link, mode).await? {
            Verdict::Modern(facts) => return modern_connected(link, facts),
            Verdict::Respawn => {
                return Ok(Connected::Respawn(
                    "the server exited during server/discover",
                ));
            }
            Verdict::Legacy(why) => Some(why),
        },
    };
    match legacy::initialize(link).await {
        Ok(facts) => Ok(Connected::Done(facts, fallback)),
        // The child answered the probe, then exited (current rmcp refuses a
        // non-initialize first request and stops): start it again.
        Err(error)
            if fallback.is_some()
                && link.core.medium == Medium::Stream
                && error.kind() == ErrorKind::ConnectionClosed =>
        {
            Ok(Connected::Respawn(
                "the server exited after answering server/discover",
            ))
        }
        // A modern-only server that missed the probe (slow to start): once more.
        Err(error)
            if mode == ProtocolMode::Auto
                && error.kind() == ErrorKind::UnsupportedProtocolVersion =>
        {
            match negotiate::probe(link, ProtocolMode::Modern).await? {
                Verdict::Modern(facts) => modern_connected(link, facts),
                _ => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}

fn modern_connected(link: &Link, facts: ServerFacts) -> Result<Connected> {
    link.protocol.wire.set(Wire::Modern(facts.version));
    let tasks = tasks::offered_in(&facts.capabilities);
    link.protocol
        .tasks_offered
        .store(tasks, std::sync::atomic::Ordering::Release);
    Ok(Connected::Done(facts, None))
}
