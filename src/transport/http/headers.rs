//! The per-request MCP headers, from the engine's [`FrameMeta`]: the transport
//! parses no JSON-RPC to write them.
//!
//! - `MCP-Protocol-Version` whenever the frame states a version (legacy: every
//!   request after the handshake negotiated one; 2026-07-28: every request, equal
//!   to the `_meta` version);
//! - 2026-07-28 only: `Mcp-Method` (the body's method), `Mcp-Name` (`params.name`
//!   of a `tools/call`, encoded by the engine) and the `Mcp-Param-*` headers the
//!   tool's `x-mcp-header` annotations ask for (validated tokens, encoded values).
//!   The request is marked [`Stateless`], so the session layer sends and captures
//!   no session id.
//!
//! The legacy wire carries exactly the headers it carried before 2026-07-28.

use http::header::{HeaderName, HeaderValue};

use super::HttpRequest;
use crate::error::{Error, Result};
use crate::transport::FrameMeta;

/// `MCP-Protocol-Version`.
pub(crate) static MCP_PROTOCOL_VERSION: HeaderName =
    HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`.
pub(crate) static MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`.
pub(crate) static MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");

/// Request extension: a 2026-07-28 request (no session, no resumption).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stateless;

/// Sets the headers `meta` asks for on `req`.
pub(crate) fn apply(req: &mut HttpRequest, meta: &FrameMeta) -> Result<()> {
    let invalid = || Error::protocol("an MCP request header value is not valid");
    let headers = req.headers_mut();
    if let Some(version) = meta.protocol_version {
        headers.insert(
            MCP_PROTOCOL_VERSION.clone(),
            HeaderValue::from_static(version),
        );
    }
    if !meta.stateless {
        return Ok(());
    }
    if let Some(method) = meta.method {
        headers.insert(MCP_METHOD.clone(), HeaderValue::from_static(method));
    }
    let call = meta.call.as_deref();
    if let Some(call) = call {
        let value = HeaderValue::from_str(&call.name).map_err(|_| invalid())?;
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
    req.extensions_mut().insert(Stateless);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{CallHeaders, ParamHeader};
    use bytes::Bytes;
    use http_body_util::Full;
    use std::sync::Arc;

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
            protocol_version: Some("2025-06-18"),
            call: Some(Arc::new(CallHeaders {
                name: "x".into(),
                params: Vec::new(),
            })),
            ..FrameMeta::default()
        };
        apply(&mut req, &meta).unwrap();
        assert_eq!(req.headers()[&MCP_PROTOCOL_VERSION], "2025-06-18");
        assert!(req.headers().get(&MCP_METHOD).is_none());
        assert!(req.headers().get(&MCP_NAME).is_none());
        assert!(req.extensions().get::<Stateless>().is_none());
    }

    #[test]
    fn stateless_frames_get_the_standard_headers() {
        let mut req = request();
        let meta = FrameMeta {
            method: Some("tools/call"),
            protocol_version: Some("2026-07-28"),
            stateless: true,
            completes_handshake: false,
            call: Some(Arc::new(CallHeaders {
                name: "my-tool".into(),
                params: vec![ParamHeader {
                    name: "Region".into(),
                    value: "us-west1".into(),
                }],
            })),
        };
        apply(&mut req, &meta).unwrap();
        let h = req.headers();
        assert_eq!(h["mcp-protocol-version"], "2026-07-28");
        assert_eq!(h["mcp-method"], "tools/call");
        assert_eq!(h["mcp-name"], "my-tool");
        assert_eq!(h["mcp-param-region"], "us-west1");
        assert!(h["mcp-param-region"].is_sensitive());
        assert!(req.extensions().get::<Stateless>().is_some());
    }

    #[test]
    fn a_header_injection_never_reaches_the_request() {
        let mut req = request();
        let meta = FrameMeta {
            stateless: true,
            call: Some(Arc::new(CallHeaders {
                name: "t".into(),
                params: vec![ParamHeader {
                    name: "X".into(),
                    value: "a\r\nInjected: 1".into(),
                }],
            })),
            ..FrameMeta::default()
        };
        assert!(apply(&mut req, &meta).is_err());
    }
}
