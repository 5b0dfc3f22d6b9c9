//! The per-request MCP headers, from the [`HttpHints`] the engine gives each
//! frame (read here and in the rest of the HTTP transport, nowhere else): the
//! transport parses no JSON-RPC to write them.
//!
//! - `MCP-Protocol-Version` whenever the frame states a version (legacy: every
//!   request after the handshake negotiated one; 2026-07-28: every request, equal
//!   to the `_meta` version);
//! - 2026-07-28 only: `Mcp-Method` (the body's method), `Mcp-Name` (the
//!   `params.name` of a `tools/call` or `prompts/get`, the `params.uri` of a
//!   `resources/read`, encoded by the engine) and the `Mcp-Param-*` headers the
//!   tool's `x-mcp-header` annotations ask for (validated tokens, encoded values).
//!   `Mcp-Method` also marks the request as stateless ([`is_stateless`]), so the
//!   session layer sends and captures no session id.
//!
//! The legacy wire carries exactly the headers it carried before 2026-07-28.

use std::sync::Arc;

use http::HeaderMap;
use http::header::{HeaderName, HeaderValue};

use super::HttpRequest;
use crate::error::{Error, Result};
use crate::transport::FrameMeta;

/// What the HTTP transport writes and does for one frame, and no other transport
/// reads: the engine builds it (its fields are private to the HTTP transport), so
/// the stream transports receive just bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HttpHints {
    /// The protocol version the frame is written for (`MCP-Protocol-Version`).
    /// `None` before a legacy handshake negotiated one.
    pub(in crate::transport::http) protocol_version: Option<&'static str>,
    /// Written in the stateless 2026-07-28 era: the standard headers
    /// (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`), no session id, no resumption,
    /// error bodies read, and an abandoned request's exchange is cut (that is its
    /// cancellation).
    pub(in crate::transport::http) stateless: bool,
    /// The frame completes the legacy handshake (`notifications/initialized`):
    /// once it is accepted, the standalone stream opens.
    pub(in crate::transport::http) completes_handshake: bool,
    /// The headers of a stateless `tools/call`; shared by the rounds of one call.
    pub(in crate::transport::http) call: Option<Arc<CallHeaders>>,
}

impl HttpHints {
    /// The hints of a frame written for `protocol_version` (`None` before a legacy
    /// handshake negotiated one), stateless (2026-07-28) or not.
    pub(crate) fn new(protocol_version: Option<&'static str>, stateless: bool) -> HttpHints {
        HttpHints {
            protocol_version,
            stateless,
            completes_handshake: false,
            call: None,
        }
    }

    /// With the per-request headers of a stateless request (`Mcp-Name`, and for
    /// a `tools/call` `Mcp-Param-*`).
    pub(crate) fn with_call(mut self, call: Option<Arc<CallHeaders>>) -> HttpHints {
        self.call = call;
        self
    }

    /// The frame completes the legacy handshake (`notifications/initialized`): once
    /// its `POST` succeeds, the negotiated version is kept for the `GET`s and the
    /// `DELETE`, and the standalone stream opens.
    pub(crate) fn completing_handshake(mut self) -> HttpHints {
        self.completes_handshake = true;
        self
    }
}

/// One `Mcp-Param-{name}` header of a `tools/call` (2026-07-28, HTTP): the name
/// suffix is a validated RFC 9110 token, the value is already encoded (plain
/// printable ASCII, or the `=?base64?...?=` form).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    /// What follows `Mcp-Param-` in the header name.
    pub(crate) name: Arc<str>,
    /// The encoded value.
    pub(crate) value: String,
}

impl std::fmt::Debug for ParamHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The value mirrors a tool argument: its length only.
        f.debug_struct("ParamHeader")
            .field("name", &self.name)
            .field("value_bytes", &self.value.len())
            .finish()
    }
}

/// The per-request headers of a stateless `tools/call`, `resources/read` or
/// `prompts/get` over HTTP, or of a `tasks/*` request. `Debug` shows the
/// name's length only: it may be a task id (a possible bearer token) or a URI.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct CallHeaders {
    /// `Mcp-Name`: the tool's or prompt's name, the resource's URI, or the
    /// task id, encoded like a header value by the engine.
    pub(crate) name: String,
    /// The `Mcp-Param-*` headers (`tools/call` only).
    pub(crate) params: Vec<ParamHeader>,
}

impl std::fmt::Debug for CallHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallHeaders")
            .field("name_bytes", &self.name.len())
            .field("params", &self.params)
            .finish()
    }
}

/// `MCP-Protocol-Version`.
pub(crate) static MCP_PROTOCOL_VERSION: HeaderName =
    HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`.
pub(crate) static MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`.
pub(crate) static MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// Whether `headers` are those of a 2026-07-28 request (no session, no
/// resumption): [`apply`] writes `Mcp-Method` on every such request and on no
/// other. A header rather than a request extension; a user layer that removes
/// `Mcp-Method` makes the request look like a legacy one to the session layer,
/// which then attaches the session's id if it has one (a 2026-07-28 session
/// never does).
/// Chosen for speed: `docs/benchmarks-notebook.md`, "Sixth round: the 2026-07-28 era and per-request parsing".
pub(crate) fn is_stateless(headers: &HeaderMap) -> bool {
    headers.contains_key(&MCP_METHOD)
}

/// Headers every POST leaves with besides those [`apply`] writes: `Accept` and
/// `Content-Type` (the session layer), `Host` (the client) and `Content-Length`
/// (hyper).
const BASE_HEADERS: usize = 4;

/// What an empty map holds before it first grows (`http`'s smallest table).
const UNSIZED_ROOM: usize = 6;

/// The empty header map for the POST carrying a frame with `meta`, when the
/// transport's own layers add `layered` headers (`Authorization`): unallocated
/// while the headers fit the smallest table, else allocated once for all of
/// them, so that the seventh header (a 2026-07-28 request has at least seven)
/// does not reallocate the map and rehash its entries on the way down. Counted
/// from the frame and the configuration; a user layer's headers are not known.
pub(crate) fn map_for(meta: &FrameMeta, layered: usize) -> HeaderMap {
    let hints = &meta.http;
    let mut count = BASE_HEADERS + layered + usize::from(hints.protocol_version.is_some());
    if hints.stateless {
        count += 1 + hints
            .call
            .as_deref()
            .map_or(0, |call| 1 + call.params.len());
    } else {
        // The legacy session id, once there is one.
        count += 1;
    }
    if count <= UNSIZED_ROOM {
        HeaderMap::new()
    } else {
        HeaderMap::with_capacity(count)
    }
}

/// Sets the headers `meta` asks for on `req`.
pub(crate) fn apply(req: &mut HttpRequest, meta: &FrameMeta) -> Result<()> {
    let invalid = || Error::protocol("an MCP request header value is not valid");
    let headers = req.headers_mut();
    let hints = &meta.http;
    if let Some(version) = hints.protocol_version {
        headers.insert(
            MCP_PROTOCOL_VERSION.clone(),
            HeaderValue::from_static(version),
        );
    }
    if !hints.stateless {
        return Ok(());
    }
    // 2026-07-28 sends `Mcp-Method` on every POST (the engine's stateless frames
    // are requests and notifications; replies to server requests are legacy
    // only), and that header is what marks the request stateless: a frame of
    // another sender without a method is refused rather than sent as legacy.
    let Some(method) = meta.method else {
        return Err(Error::protocol(
            "a 2026-07-28 frame must name its method (Mcp-Method)",
        ));
    };
    headers.insert(MCP_METHOD.clone(), HeaderValue::from_static(method));
    let call = hints.call.as_deref();
    if let Some(call) = call {
        let mut value = HeaderValue::from_str(&call.name).map_err(|_| invalid())?;
        // On `tasks/*` it is the task id (a possible bearer token), elsewhere
        // a URI may carry secrets: user layers that log headers must not print it.
        value.set_sensitive(true);
        headers.insert(MCP_NAME.clone(), value);
    }
    for param in call.map_or(&[][..], |call| &call.params) {
        let name = HeaderName::from_bytes(format!("mcp-param-{}", param.name).as_bytes())
            .map_err(|_| invalid())?;
        let mut value = HeaderValue::from_str(&param.value).map_err(|_| invalid())?;
        // It mirrors a tool argument: user layers that log headers must not print it.
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::Full;

    fn request() -> HttpRequest {
        http::Request::post("http://h/mcp")
            .body(Full::new(Bytes::new()))
            .unwrap()
    }

    #[test]
    fn legacy_frames_get_only_the_version() {
        let mut req = request();
        let meta = FrameMeta {
            method: Some("tools/call"),
            http: HttpHints::new(Some("2025-06-18"), false).with_call(Some(Arc::new(
                CallHeaders {
                    name: "x".into(),
                    params: Vec::new(),
                },
            ))),
        };
        apply(&mut req, &meta).unwrap();
        assert_eq!(req.headers()[&MCP_PROTOCOL_VERSION], "2025-06-18");
        assert!(req.headers().get(&MCP_METHOD).is_none());
        assert!(req.headers().get(&MCP_NAME).is_none());
        assert!(!is_stateless(req.headers()));
    }

    #[test]
    fn call_headers_debug_shows_no_name_nor_value() {
        let call = CallHeaders {
            name: "bearer-task-7f3a".into(),
            params: vec![ParamHeader {
                name: "Region".into(),
                value: "secret-value".into(),
            }],
        };
        let shown = format!("{call:?}");
        assert!(!shown.contains("bearer-task-7f3a"), "{shown}");
        assert!(!shown.contains("secret-value"), "{shown}");
        assert!(shown.contains("name_bytes: 16"), "{shown}");
    }

    /// A 2026-07-28 `tools/call` of `my-tool` with one parameter header.
    fn stateless_call() -> FrameMeta {
        FrameMeta {
            method: Some("tools/call"),
            http: HttpHints::new(Some("2026-07-28"), true).with_call(Some(Arc::new(CallHeaders {
                name: "my-tool".into(),
                params: vec![ParamHeader {
                    name: "Region".into(),
                    value: "us-west1".into(),
                }],
            }))),
        }
    }

    #[test]
    fn stateless_frames_get_the_standard_headers() {
        let mut req = request();
        let meta = stateless_call();
        apply(&mut req, &meta).unwrap();
        let h = req.headers();
        assert_eq!(h["mcp-protocol-version"], "2026-07-28");
        assert_eq!(h["mcp-method"], "tools/call");
        assert_eq!(h["mcp-name"], "my-tool");
        assert!(h["mcp-name"].is_sensitive());
        assert_eq!(h["mcp-param-region"], "us-west1");
        assert!(h["mcp-param-region"].is_sensitive());
        assert!(is_stateless(req.headers()));
    }

    #[test]
    fn a_header_injection_never_reaches_the_request() {
        let mut req = request();
        let meta = FrameMeta {
            method: Some("tools/call"),
            http: HttpHints::new(None, true).with_call(Some(Arc::new(CallHeaders {
                name: "t".into(),
                params: vec![ParamHeader {
                    name: "X".into(),
                    value: "a\r\nInjected: 1".into(),
                }],
            }))),
        };
        assert!(apply(&mut req, &meta).is_err());
    }

    #[test]
    fn a_stateless_frame_without_a_method_is_refused_not_sent_as_legacy() {
        let mut req = request();
        let meta = FrameMeta {
            method: None,
            http: HttpHints::new(Some("2026-07-28"), true),
        };
        let error = apply(&mut req, &meta).expect_err("no method");
        assert_eq!(error.kind(), crate::error::ErrorKind::ProtocolError);
        assert!(error.message().contains("Mcp-Method"), "{error}");
    }

    /// The map of a 2026-07-28 `tools/call` with a bearer token is allocated
    /// once for every header it leaves with; a legacy POST's map starts
    /// unallocated.
    #[test]
    fn a_posts_map_is_sized_for_the_headers_it_will_carry() {
        let legacy = FrameMeta {
            method: Some("tools/call"),
            http: HttpHints::new(Some("2025-06-18"), false),
        };
        assert_eq!(map_for(&legacy, 0).capacity(), 0, "6 headers fit");
        let meta = stateless_call();
        let mut req = request();
        *req.headers_mut() = map_for(&meta, 1);
        let room = req.headers().capacity();
        assert!(room >= 9, "9 headers need room, have {room}");
        apply(&mut req, &meta).unwrap();
        for name in [
            "accept",
            "content-type",
            "authorization",
            "host",
            "content-length",
        ] {
            req.headers_mut()
                .insert(HeaderName::from_static(name), HeaderValue::from_static("1"));
        }
        assert_eq!(req.headers().len(), 9);
        assert_eq!(req.headers().capacity(), room, "the map did not grow");
    }
}
