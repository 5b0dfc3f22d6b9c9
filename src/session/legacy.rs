//! The legacy era (2024-11-05 to 2025-11-25): the `initialize` handshake, exactly as
//! before 2026-07-28 existed, `tools/call`, and the one place the legacy HTTP
//! session's re-initialise lives (a `404` to a request carrying a session id).
//!
//! Handshake, per the contract's connect steps 2-4:
//! send `initialize` proposing [`PROPOSED_PROTOCOL_VERSION`] with [`client_info`];
//! require a version in [`SUPPORTED_PROTOCOL_VERSIONS`] and a `tools` capability
//! object; send `notifications/initialized`. The catalog walk (step 5) is shared
//! with the modern era ([`super::negotiate::walk_catalog`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;

use super::ToolResult;
use super::engine::{Core, Queued, RequestCtl, RequestOptions, lock, notification_meta};
use super::era::{Era, Wire};
use super::negotiate::{ServerFacts, step_error, walk_catalog};
use super::tool_result::{TOOL_CALL_MEMBERS, ToolCallMembers};
use super::{PROPOSED_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, client_info};
use crate::error::{Error, ErrorKind, Result};
use crate::jsonrpc::ResultBody;
use crate::pin::CatalogPin;
use crate::transport::{FrameMeta, Medium, OutboundFrame};

/// Legacy `tools/call` parameters (keys in the order a `serde_json::Map` writes them).
#[derive(Serialize)]
struct CallParams<'a> {
    arguments: Value,
    name: &'a str,
}

/// Calls `name` with `arguments` (checked by the caller) until `deadline`; the
/// result is read as the legacy era defines it.
pub(crate) async fn call_tool(
    shared: &Arc<Core>,
    name: &str,
    arguments: Value,
    wire: Wire,
    deadline: Instant,
) -> Result<ToolResult> {
    // Serialized as `{"arguments":..,"name":..}` without building a `Value`.
    let params = CallParams { arguments, name };
    let options = RequestOptions {
        framing: wire.into(),
        cancellable: true,
        select: Some(&TOOL_CALL_MEMBERS),
        ..RequestOptions::default()
    };
    match shared
        .request_body("tools/call", params, deadline, options)
        .await?
    {
        ResultBody::Selected(members) => {
            ToolResult::from_members(ToolCallMembers::from_selected(members), Era::Legacy)
        }
        ResultBody::Value(value) => ToolResult::from_value(value, Era::Legacy),
    }
}

/// The one-shot HTTP session re-initialise.
pub(crate) enum Reinit {
    /// Not needed so far.
    Idle,
    /// Running; frames refused meanwhile, and requests made meanwhile, wait to be
    /// sent (see [`Held`]).
    Running(Vec<Held>),
    /// Done once: a later expiry ends the session.
    Done,
}

/// A frame waiting for the re-initialise: refused with the old session (its
/// request, if any, was written once), or a new request held back before it was
/// written (its state is still `QUEUED`: the writer may still skip it).
pub(crate) type Held = (OutboundFrame, Option<Arc<RequestCtl>>);

tokio::task_local! {
    /// Set in the task that re-initialises: its own requests are not held back.
    static REINITIALISING: ();
}

/// Steps 2-4 of the legacy connect: `initialize`, its checks, and
/// `notifications/initialized`. Leaves the session's wire at the negotiated
/// version. A JSON-RPC error answering `initialize` is returned as is (a
/// `remote_error` whose [`Error::remote_code`] the negotiation reads: -32022 from a
/// modern-only server means "probe again").
pub(crate) async fn initialize(shared: &Arc<Core>) -> Result<ServerFacts> {
    let timeout = shared.limits.handshake_timeout();
    shared.wire.set(Wire::Legacy(None));
    let params = serde_json::json!({
        "protocolVersion": PROPOSED_PROTOCOL_VERSION,
        "capabilities": shared.capabilities,
        "clientInfo": client_info(),
    });
    let result = shared
        .request(
            "initialize",
            params,
            Wire::Legacy(None),
            Instant::now() + timeout,
            false,
        )
        .await
        .map_err(step_error(shared, "initialize"))
        .map_err(|error| older_http_transport_hint(shared, error))?;
    let answered = result.get("protocolVersion");
    let version = answered
        .and_then(Value::as_str)
        .and_then(|v| {
            SUPPORTED_PROTOCOL_VERSIONS
                .iter()
                .find(|s| **s == v)
                .copied()
        })
        .ok_or_else(|| unsupported_version(&shared.server, answered))?;
    let facts = ServerFacts::from_result(&result, version);
    if !facts.offers_tools {
        return Err(Error::protocol(format!(
            "server \"{}\" does not offer tools",
            shared.server
        )));
    }
    let wire = Wire::Legacy(Some(version));
    shared.wire.set(wire);
    let initialized = shared.encode(&serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/initialized",
    }))?;
    let meta = FrameMeta {
        completes_handshake: true,
        ..notification_meta("notifications/initialized", wire.into())
    };
    shared
        .enqueue(initialized, meta, Instant::now() + timeout)
        .await
        .map_err(step_error(shared, "notifications/initialized"))?;
    Ok(facts)
}

/// A `404` or `405` answering the `initialize` POST is what a server that speaks
/// only the 2024-11-05 HTTP+SSE transport (a `GET` event stream plus a separate
/// POST endpoint) answers: the error says so, since this client speaks Streamable
/// HTTP only. Kind and status are kept.
fn older_http_transport_hint(shared: &Core, error: Error) -> Error {
    if shared.medium != Medium::Exchanges
        || error.kind() != ErrorKind::HttpStatus
        || !matches!(error.http_status(), Some(404 | 405))
    {
        return error;
    }
    let message = format!(
        "{}; a server that answers initialize so may speak only the 2024-11-05 HTTP+SSE \
         transport, which this client does not (it speaks Streamable HTTP)",
        error.message()
    );
    error.with_message(message)
}

/// The error for an `initialize` result whose `protocolVersion` this client does
/// not accept: it names what the server answered (only when it has the shape of a
/// version, `YYYY-MM-DD`, which cannot carry a secret) and the versions accepted.
fn unsupported_version(server: &str, answered: Option<&Value>) -> Error {
    let answered = match answered {
        None => "no protocol version".to_owned(),
        Some(Value::String(v)) if looks_like_a_version(v) => format!("protocol version {v}"),
        Some(_) => "a protocol version that is not a version".to_owned(),
    };
    Error::protocol(format!(
        "server \"{server}\" answered initialize with {answered}; this client accepts {}",
        SUPPORTED_PROTOCOL_VERSIONS.join(", ")
    ))
}

/// `^\d{4}-\d{2}-\d{2}$`, ASCII digits only.
fn looks_like_a_version(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 10
        && b.iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
}

/// Runs the handshake again on a transport that lost its HTTP session and checks
/// that the server still offers the same catalog.
pub(crate) async fn reinitialize(shared: &Arc<Core>) -> Result<()> {
    let frozen = shared
        .catalog
        .get()
        .cloned()
        .ok_or_else(|| Error::closed("session expired before the catalog was frozen"))?;
    initialize(shared).await?;
    let (catalog, _) = walk_catalog(shared, shared.wire.get()).await?;
    if let Some(pin) = shared.pin.get() {
        return CatalogPin::of(&catalog).check(&shared.server, pin);
    }
    if !catalog.same_tools_as(&frozen) {
        return Err(Error::closed(format!(
            "server \"{}\" restarted its session with a different catalog",
            shared.server
        )));
    }
    Ok(())
}

impl Core {
    /// While an HTTP re-initialise runs, a new request would go out without a
    /// session id (and be refused): it waits for the new session instead. `Some`
    /// gives the frame back to be sent now.
    pub(crate) fn hold_for_reinit(
        &self,
        frame: OutboundFrame,
        control: &Arc<RequestCtl>,
    ) -> Option<OutboundFrame> {
        if !self.reinit_running.load(Ordering::Acquire) || REINITIALISING.try_with(|_| ()).is_ok() {
            return Some(frame);
        }
        match &mut *lock(&self.reinit) {
            Reinit::Running(waiting) => {
                waiting.push((frame, Some(control.clone())));
                None
            }
            _ => Some(frame),
        }
    }

    /// HTTP `404` to a request carrying a session id: re-initialise once without the
    /// id (the transport has dropped it), compare the new catalog's declarations
    /// with the frozen one, and re-send the refused frames if they are identical;
    /// otherwise the session ends with `connection_closed`.
    pub(crate) fn session_expired(
        self: &Arc<Self>,
        failed: OutboundFrame,
        stale: bool,
    ) -> Result<()> {
        let mut reinit = lock(&self.reinit);
        match &mut *reinit {
            Reinit::Running(waiting) => {
                waiting.push((failed, None));
                Ok(())
            }
            // Refused for the session the re-initialise replaced: send it again.
            Reinit::Done if stale => {
                drop(reinit);
                let shared = self.clone();
                tokio::spawn(async move { shared.send_held(vec![(failed, None)]).await });
                Ok(())
            }
            Reinit::Done => Err(Error::closed(format!(
                "server \"{}\" ended the HTTP session again after a re-initialise",
                self.server
            ))),
            Reinit::Idle => {
                if self.catalog.get().is_none() {
                    return Err(Error::closed(format!(
                        "server \"{}\" ended the HTTP session during the handshake",
                        self.server
                    )));
                }
                *reinit = Reinit::Running(vec![(failed, None)]);
                self.reinit_running.store(true, Ordering::Release);
                let shared = self.clone();
                tokio::spawn(async move {
                    let outcome = REINITIALISING.scope((), reinitialize(&shared)).await;
                    let waiting = {
                        let mut reinit = lock(&shared.reinit);
                        shared.reinit_running.store(false, Ordering::Release);
                        match std::mem::replace(&mut *reinit, Reinit::Done) {
                            Reinit::Running(waiting) => waiting,
                            _ => Vec::new(),
                        }
                    };
                    if let Err(error) = outcome {
                        shared.terminate(error);
                        return;
                    }
                    shared.send_held(waiting).await;
                });
                Ok(())
            }
        }
    }

    /// Queues frames that waited for the re-initialise, in order, skipping
    /// requests settled or abandoned meanwhile. A frame the queue does not take in
    /// time fails its own request only, as a caller's own admission would.
    async fn send_held(&self, held: Vec<Held>) {
        for (frame, request) in held {
            // A notification or reply refused with the old session (a ping reply,
            // a cancellation) means nothing to the new one: dropped.
            let Some(handle) = frame.request.clone() else {
                continue;
            };
            if handle.is_done() {
                continue;
            }
            let deadline = Instant::now() + self.limits.request_timeout();
            // A refused frame (`None`) was written once: the writer skips it if it
            // is done by the time it comes up. A held request is still `QUEUED`.
            let admitted = tokio::select! {
                biased;
                admitted = self.admit(Queued::Frame { frame, request }, deadline) => admitted,
                // Abandoned while waiting for room: nothing to send.
                _ = handle.done() => Ok(()),
            };
            if let Err(error) = admitted {
                if self.terminal().is_some() {
                    return;
                }
                handle.fail(error);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_shape_of_a_version_is_named() {
        for v in ["2024-11-05", "2023-01-01", "9999-99-99"] {
            assert!(looks_like_a_version(v), "{v}");
        }
        for v in [
            "",
            "2024-11-5",
            "2024-11-055",
            "2024/11/05",
            "2024-11-0\u{0665}",
            "v2024-11-05",
            "sk-live-1234",
            "2024-11-05\n",
        ] {
            assert!(!looks_like_a_version(v), "{v:?}");
        }
    }

    #[test]
    fn an_unsupported_version_names_what_was_answered_and_what_is_accepted() {
        let accepted = "this client accepts 2025-06-18, 2025-11-25, 2025-03-26, 2024-11-05";
        let old = unsupported_version("s", Some(&Value::from("2023-01-01")));
        assert_eq!(old.kind(), ErrorKind::ProtocolError);
        assert_eq!(
            old.message(),
            format!(
                "server \"s\" answered initialize with protocol version 2023-01-01; {accepted}"
            )
        );
        let secret = unsupported_version("s", Some(&Value::from("ghp_secret-token")));
        assert_eq!(
            secret.message(),
            format!(
                "server \"s\" answered initialize with a protocol version that is not a version; {accepted}"
            )
        );
        let number = unsupported_version("s", Some(&Value::from(20241105)));
        assert!(number.message().contains("not a version"), "{number}");
        let none = unsupported_version("s", None);
        assert!(
            none.message().contains("with no protocol version;"),
            "{none}"
        );
    }
}
