//! The two eras of MCP, which one a session speaks, and how a frame is written
//! for it.
//!
//! - **Legacy** (2025-06-18, 2025-11-25, and 2025-03-26 on the wire): the
//!   `initialize` handshake, `notifications/initialized`, an HTTP session,
//!   `ping` answered both ways.
//! - **Modern** (2026-07-28, stateless): no handshake; `server/discover` says what
//!   the server speaks, and every request carries the protocol version, the
//!   client's capabilities and identity in `params._meta`
//!   ([`RequestMeta`]); HTTP requests carry standard headers and no session.
//!
//! [`ProtocolMode`] is the host's choice; the era a session ended up in is
//! [`Client::era`](crate::session::Client::era). The rules that decide it (probe, corrective
//! retry, fallback) live in [`negotiate`](super::negotiate).

use std::sync::atomic::{AtomicU8, Ordering};

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::super::engine::Framing;

/// The protocol version the client proposes in `initialize`.
pub const PROPOSED_PROTOCOL_VERSION: &str = "2025-06-18";

/// Protocol versions accepted in a server's `initialize` result, newest first
/// after the proposed one.
///
/// `2025-03-26` is accepted because its Streamable HTTP transport and tool shapes are
/// the ones this client speaks; `2025-11-25` only adds behaviour this client handles
/// (SSE polling) or ignores. `2024-11-05` is what many published stdio servers
/// still answer (the archived reference servers and others on the TypeScript SDK
/// 1.0): what that revision lacks (`structuredContent`, `outputSchema`, tool
/// annotations, elicitation) is read as absent, never as an error. Over HTTP a
/// `2024-11-05` server speaks the older HTTP+SSE transport, which this client does
/// not; one that answers `initialize` over Streamable HTTP is served like any other.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2025-06-18", "2025-11-25", "2025-03-26", "2024-11-05"];

/// The name disclosed in `clientInfo`.
pub const CLIENT_NAME: &str = "smithers";

/// The frozen `clientInfo` identity: `{"name": "smithers", "version": <crate version>}`.
pub fn client_info() -> Value {
    serde_json::json!({"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")})
}

/// The stateless revision this client speaks.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// Every modern revision this client speaks, preferred first.
pub const MODERN_PROTOCOL_VERSIONS: &[&str] = &[MODERN_PROTOCOL_VERSION];

/// Which revisions a client may speak with a server.
///
/// The default is [`ProtocolMode::Auto`]: the 2026-07-28 specification asks
/// dual-era clients to probe with `server/discover` first, Go and Python clients do
/// so by default, and a server that offers 2026-07-28 is then spoken to in it. A
/// legacy server pays for the probe with one extra round trip (see the README for
/// the measured cost against real servers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[non_exhaustive]
pub enum ProtocolMode {
    /// Probe with `server/discover`; speak 2026-07-28 when the server offers it,
    /// else fall back to the legacy handshake (`"auto"` in a server file).
    #[default]
    Auto,
    /// The legacy handshake only, exactly as before 2026-07-28 existed: no probe
    /// (`"legacy"`).
    Legacy,
    /// 2026-07-28 only: a server that does not offer it is refused (`"2026-07-28"`).
    Modern,
}

impl ProtocolMode {
    /// The server-file spelling: `auto`, `legacy` or `2026-07-28`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolMode::Auto => "auto",
            ProtocolMode::Legacy => "legacy",
            ProtocolMode::Modern => MODERN_PROTOCOL_VERSION,
        }
    }

    /// Parses the server-file spelling.
    pub fn parse(text: &str) -> Option<ProtocolMode> {
        match text {
            "auto" => Some(ProtocolMode::Auto),
            "legacy" => Some(ProtocolMode::Legacy),
            MODERN_PROTOCOL_VERSION => Some(ProtocolMode::Modern),
            _ => None,
        }
    }
}

impl std::fmt::Display for ProtocolMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The era a session speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// 2025-11-25 and earlier: the `initialize` handshake.
    Legacy,
    /// 2026-07-28: stateless, `_meta` on every request.
    Modern,
}

/// What a frame is written for. Packed in one byte ([`WireCell`]) because every
/// request reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// Legacy; the version once the handshake negotiated one.
    Legacy(Option<&'static str>),
    /// Modern, at this version.
    Modern(&'static str),
}

impl Wire {
    /// The version the frame states (HTTP: `MCP-Protocol-Version`).
    pub(crate) fn version(self) -> Option<&'static str> {
        match self {
            Wire::Legacy(version) => version,
            Wire::Modern(version) => Some(version),
        }
    }

    pub(crate) fn is_modern(self) -> bool {
        matches!(self, Wire::Modern(_))
    }
}

/// The era's wire, as the core carries it: the version a frame states, and
/// stateless for 2026-07-28.
impl From<Wire> for Framing {
    fn from(wire: Wire) -> Framing {
        Framing {
            version: wire.version(),
            stateless: wire.is_modern(),
        }
    }
}

impl Wire {
    fn pack(self) -> u8 {
        let index = |list: &[&str], v: &str| list.iter().position(|x| *x == v).unwrap_or(0) as u8;
        match self {
            Wire::Legacy(None) => 0,
            Wire::Legacy(Some(v)) => 1 + index(SUPPORTED_PROTOCOL_VERSIONS, v),
            Wire::Modern(v) => 0x80 | index(MODERN_PROTOCOL_VERSIONS, v),
        }
    }

    fn unpack(byte: u8) -> Wire {
        if byte & 0x80 != 0 {
            let i = usize::from(byte & 0x7f);
            Wire::Modern(
                MODERN_PROTOCOL_VERSIONS
                    .get(i)
                    .copied()
                    .unwrap_or(MODERN_PROTOCOL_VERSION),
            )
        } else if byte == 0 {
            Wire::Legacy(None)
        } else {
            Wire::Legacy(
                SUPPORTED_PROTOCOL_VERSIONS
                    .get(usize::from(byte - 1))
                    .copied(),
            )
        }
    }
}

/// The session's current [`Wire`], read by every request.
pub(crate) struct WireCell(AtomicU8);

impl WireCell {
    pub(crate) fn new(wire: Wire) -> Self {
        WireCell(AtomicU8::new(wire.pack()))
    }

    pub(crate) fn get(&self) -> Wire {
        Wire::unpack(self.0.load(Ordering::Acquire))
    }

    pub(crate) fn set(&self, wire: Wire) {
        self.0.store(wire.pack(), Ordering::Release);
    }
}

/// `capabilities` (the client's, an object) with `extensions[id]: {}` added:
/// what a request that declares an extension (the Tasks extension on
/// `tools/call` and `tasks/*`) states in `_meta`.
pub(crate) fn with_extension(capabilities: &Value, id: &str) -> Value {
    let mut capabilities = match capabilities {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    let extensions = capabilities
        .entry("extensions")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !extensions.is_object() {
        *extensions = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(extensions) = extensions {
        extensions.insert(id.to_owned(), Value::Object(serde_json::Map::new()));
    }
    Value::Object(capabilities)
}

/// The `params._meta` every modern request carries, encoded once per session:
/// `io.modelcontextprotocol/protocolVersion`, `io.modelcontextprotocol/clientCapabilities`
/// (what the installed host handler answers; `{}` without one) and
/// `io.modelcontextprotocol/clientInfo` ([`client_info`]).
pub(crate) struct RequestMeta {
    json: Box<RawValue>,
}

impl RequestMeta {
    pub(crate) fn new(version: &str, capabilities: &serde_json::Value) -> RequestMeta {
        let meta = serde_json::json!({
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": client_info(),
            "io.modelcontextprotocol/protocolVersion": version,
        });
        let json = serde_json::value::to_raw_value(&meta).expect("a JSON value serializes");
        RequestMeta { json }
    }

    /// This `_meta` with `extra` members added (a call's own, checked by
    /// [`CallOptions`](crate::CallOptions): none of them is one of ours).
    pub(crate) fn with_members(
        &self,
        extra: &serde_json::Map<String, serde_json::Value>,
    ) -> RequestMeta {
        let mut members: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(self.json.get()).expect("our own _meta is an object");
        for (key, value) in extra {
            members.entry(key.clone()).or_insert_with(|| value.clone());
        }
        let json = serde_json::value::to_raw_value(&members).expect("a JSON value serializes");
        RequestMeta { json }
    }

    /// The encoded object.
    #[cfg(test)]
    pub(crate) fn raw(&self) -> &RawValue {
        &self.json
    }
}

impl Serialize for RequestMeta {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.json.serialize(serializer)
    }
}

impl std::fmt::Debug for RequestMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.json.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_their_spelling() {
        for mode in [
            ProtocolMode::Auto,
            ProtocolMode::Legacy,
            ProtocolMode::Modern,
        ] {
            assert_eq!(ProtocolMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(ProtocolMode::parse("2025-06-18"), None);
        assert_eq!(ProtocolMode::default(), ProtocolMode::Auto);
    }

    #[test]
    fn every_wire_packs_into_one_byte_and_back() {
        let mut wires = vec![Wire::Legacy(None)];
        wires.extend(
            SUPPORTED_PROTOCOL_VERSIONS
                .iter()
                .map(|v| Wire::Legacy(Some(*v))),
        );
        wires.extend(MODERN_PROTOCOL_VERSIONS.iter().map(|v| Wire::Modern(v)));
        for wire in wires {
            let cell = WireCell::new(Wire::Legacy(None));
            cell.set(wire);
            assert_eq!(cell.get(), wire);
        }
    }

    #[test]
    fn an_extension_joins_the_capabilities() {
        let caps = serde_json::json!({"roots": {}, "extensions": {"x/y": {"a": 1}}});
        let with = with_extension(&caps, "io.modelcontextprotocol/tasks");
        assert_eq!(
            with,
            serde_json::json!({"roots": {}, "extensions": {"x/y": {"a": 1}, "io.modelcontextprotocol/tasks": {}}})
        );
        let bare = with_extension(&serde_json::json!({}), "e");
        assert_eq!(bare, serde_json::json!({"extensions": {"e": {}}}));
    }

    #[test]
    fn request_meta_holds_the_three_keys() {
        let meta = RequestMeta::new(MODERN_PROTOCOL_VERSION, &serde_json::json!({}));
        let value: serde_json::Value = serde_json::from_str(meta.raw().get()).unwrap();
        assert_eq!(
            value["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            value["io.modelcontextprotocol/clientCapabilities"],
            serde_json::json!({})
        );
        assert_eq!(
            value["io.modelcontextprotocol/clientInfo"]["name"],
            "smithers"
        );
    }
}
