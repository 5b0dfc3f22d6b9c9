//! The legacy era (2024-11-05 to 2025-11-25): the `initialize` handshake, exactly as
//! before 2026-07-28 existed, `tools/call`, and the one place the legacy HTTP
//! session's re-initialise lives (a `404` to a request carrying a session id).
//!
//! Handshake, per the contract's connect steps 2-4:
//! send `initialize` proposing [`PROPOSED_PROTOCOL_VERSION`] with [`client_info`];
//! require a version in [`SUPPORTED_PROTOCOL_VERSIONS`] (a server without a
//! `tools` capability connects with an empty catalog); send
//! `notifications/initialized`. The catalog walk (step 5) is shared
//! with the modern era ([`super::negotiate::walk_catalog`]).

use std::sync::Arc;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::super::call_options::PROGRESS_TOKEN_KEY;
use super::super::engine::{Core, RequestOptions, notification_meta};
use super::era::{Era, PROPOSED_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, Wire, client_info};
use super::link::Link;
use super::negotiate::{ServerFacts, step_error, walk_catalog};
use super::progress::ProgressCall;
use super::tool_result::{TOOL_CALL_MEMBERS, ToolCallMembers, ToolResult};
use crate::content::ContentBounds;
use crate::error::{Error, ErrorKind, Result};
use crate::jsonrpc::ResultBody;
use crate::pin::CatalogPin;
use crate::transport::Medium;

/// Legacy `tools/call` parameters (keys in the order a `serde_json::Map` writes them).
#[derive(Serialize)]
struct CallParams<'a> {
    /// The call's own `_meta`, when it has one.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<CallMeta<'a>>,
    arguments: Value,
    name: &'a str,
}

/// A legacy call's `_meta`: its progress token and the host's own members
/// (`CallOptions::meta`, which never name `progressToken`), written as one
/// object without building it.
struct CallMeta<'a> {
    progress_token: Option<u64>,
    host: Option<&'a Map<String, Value>>,
}

impl Serialize for CallMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let len = usize::from(self.progress_token.is_some()) + self.host.map_or(0, Map::len);
        let mut map = serializer.serialize_map(Some(len))?;
        if let Some(token) = self.progress_token {
            map.serialize_entry(PROGRESS_TOKEN_KEY, &token)?;
        }
        for (key, value) in self.host.into_iter().flatten() {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Calls `name` with `arguments` (checked by the caller) until `deadline`; the
/// result is read as the legacy era defines it. `meta`: the host's `_meta`
/// members; `progress`: the call's progress token.
pub(crate) async fn call_tool(
    core: &Arc<Core>,
    name: &str,
    arguments: Value,
    meta: Option<&Map<String, Value>>,
    progress: Option<&ProgressCall>,
    wire: Wire,
    deadline: Instant,
) -> Result<ToolResult> {
    let progress_token = progress.map(ProgressCall::token);
    let meta = (meta.is_some() || progress_token.is_some()).then_some(CallMeta {
        progress_token,
        host: meta,
    });
    // Serialized as `{"arguments":..,"name":..}` without building a `Value`.
    let params = CallParams {
        meta,
        arguments,
        name,
    };
    let options = RequestOptions {
        framing: wire.into(),
        cancellable: true,
        select: Some(&TOOL_CALL_MEMBERS),
        later: progress.and_then(ProgressCall::later),
        ..RequestOptions::default()
    };
    match core
        .request_body("tools/call", params, deadline, options)
        .await?
    {
        ResultBody::Selected(members) => ToolResult::from_members(
            ToolCallMembers::from_selected(members),
            Era::Legacy,
            &ContentBounds::from(&core.limits),
        ),
        ResultBody::Value(value) => {
            ToolResult::from_value(value, Era::Legacy, &ContentBounds::from(&core.limits))
        }
    }
}

/// Steps 2-4 of the legacy connect: `initialize`, its checks, and
/// `notifications/initialized`. Leaves the session's wire at the negotiated
/// version. A JSON-RPC error answering `initialize` is returned as is (a
/// `remote_error` whose [`Error::remote_code`] the negotiation reads: -32022 from a
/// modern-only server means "probe again").
pub(crate) async fn initialize(link: &Link) -> Result<ServerFacts> {
    let Link { core, protocol } = link;
    let timeout = core.limits.handshake_timeout();
    protocol.wire.set(Wire::Legacy(None));
    let params = serde_json::json!({
        "protocolVersion": PROPOSED_PROTOCOL_VERSION,
        "capabilities": protocol.capabilities,
        "clientInfo": client_info(),
    });
    let result = core
        .request(
            "initialize",
            params,
            Wire::Legacy(None),
            Instant::now() + timeout,
            false,
        )
        .await
        .map_err(step_error(core, "initialize"))
        .map_err(|error| older_http_transport_hint(core, error))?;
    let answered = result.get("protocolVersion");
    let version = answered
        .and_then(Value::as_str)
        .and_then(|v| {
            SUPPORTED_PROTOCOL_VERSIONS
                .iter()
                .find(|s| **s == v)
                .copied()
        })
        .ok_or_else(|| unsupported_version(&core.server, answered))?;
    // A server without a `tools` capability connects with an empty catalog
    // (the Skills mock declares only `resources` and the extension).
    let facts = ServerFacts::from_result(&result, version);
    let wire = Wire::Legacy(Some(version));
    protocol.wire.set(wire);
    let initialized = core.encode(&serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/initialized",
    }))?;
    let meta = notification_meta("notifications/initialized", wire.into()).completing_handshake();
    core.enqueue(initialized, meta, Instant::now() + timeout)
        .await
        .map_err(step_error(core, "notifications/initialized"))?;
    Ok(facts)
}

/// A `404` or `405` answering the `initialize` POST is what a server that speaks
/// only the 2024-11-05 HTTP+SSE transport (a `GET` event stream plus a separate
/// POST endpoint) answers: the error says so, since this client speaks Streamable
/// HTTP only. Kind and status are kept.
fn older_http_transport_hint(core: &Core, error: Error) -> Error {
    if core.medium != Medium::Exchanges
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
/// that the server still offers the same catalog (the pin, when there is one).
pub(crate) async fn reinitialize(link: &Link) -> Result<()> {
    let Link { core, protocol } = link;
    let frozen = protocol
        .catalog
        .get()
        .cloned()
        .ok_or_else(|| Error::closed("session expired before the catalog was frozen"))?;
    let facts = initialize(link).await?;
    let catalog = if facts.offers_tools {
        walk_catalog(link, protocol.wire.get()).await?.0
    } else {
        crate::catalog::CatalogBuilder::new(&core.limits).finish()
    };
    if let Some(pin) = protocol.pin.get() {
        return CatalogPin::of(&catalog).check(&core.server, pin);
    }
    if !catalog.same_tools_as(&frozen) {
        return Err(Error::closed(format!(
            "server \"{}\" restarted its session with a different catalog",
            core.server
        )));
    }
    Ok(())
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
