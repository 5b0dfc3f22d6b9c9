//! smthrs-mcp: a strict, bounded Model Context Protocol client.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod catalog;
pub mod completion;
pub mod config;
pub mod content;
pub mod diagnostics;
pub mod error;
pub mod events;
pub mod flows;
pub mod group;
pub mod handler;
pub(crate) mod http;
pub(crate) mod json_bounds;
pub(crate) mod jsonrpc;
pub mod layer;
pub mod limits;
pub mod listing;
pub mod manual;
pub mod observe;
pub(crate) mod param_headers;
pub mod pin;
pub mod prompts;
pub(crate) mod redact;
pub mod resources;
pub mod session;
pub mod skills;
pub mod supervisor;
pub mod tasks;
pub(crate) mod text;
pub mod transport;
pub(crate) mod uri;

/// Re-exported: secrets in this API (`env` values, bearer tokens, diagnostics) are
/// `secrecy::SecretString`s.
pub use secrecy;

pub use catalog::{Catalog, Tool};
pub use diagnostics::{DiagnosticEvent, DiagnosticObserver};
pub use error::{Error, ErrorKind, Result};
pub use limits::Limits;
pub use session::{
    CallEvent, CallOptions, Client, ClientBuilder, Era, Listing, Page, Progress, ProtocolMode,
    Subscription, TaskMode, TaskPolicy, ToolResult,
};
pub use supervisor::{ReconnectPolicy, Supervisor};
pub use tasks::{TaskHandle, TaskStatus, TaskUpdate};
/// The token [`CallOptions::cancel_on`] takes (tokio-util's).
pub use tokio_util::sync::CancellationToken;
pub use transport::Transport;
pub use transport::duplex::DuplexTransport;
pub use transport::stdio::StdioCommand;

/// The README's examples, compiled as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub use layer::{BearerAuthLayer, EgressGrants, EgressPolicyLayer};
pub use transport::http::{HttpTransport, HttpTransportBuilder, SharedHttpClient};

/// Entry points for the fuzz targets (`fuzz/`) into parsers that are not public
/// API. Not covered by semver.
#[doc(hidden)]
pub mod fuzzing {
    use serde_json::{Map, Value};

    /// The bounded JSON scanner and parser, for the `jsonrpc_classify` and
    /// `catalog_page` targets and `tests/dos.rs`; the selective read of a result
    /// object (names given as data), for the `jsonrpc_classify` target.
    pub use crate::json_bounds::{
        MAX_SELECTED_MEMBERS, MemberSelection, SelectedMembers, parse_value, scan_frame,
        value_depth,
    };

    /// Inbound classification and the replies it drives, for the `jsonrpc_classify`
    /// target.
    pub use crate::jsonrpc::{
        Id, Inbound, ResultBody, RpcError, classify, classify_with, method_not_found_reply,
        ping_reply,
    };

    /// A `tools/call` result's `content`, for the `jsonrpc_classify` target:
    /// checked in place as a session checks it, and built as
    /// [`crate::content::tool_content`] builds it, under the default bounds and
    /// under a 16-byte `maxResourceBytes`. `Ok(blocks)` when both accept, the
    /// message when both refuse; panics when the two disagree.
    pub fn tool_content_agrees(content: &[Value]) -> Result<usize, String> {
        let mut outcome = Ok(content.len());
        for max_resource_bytes in [crate::limits::DEFAULT_MAX_RESOURCE_BYTES, 16] {
            let bounds = crate::content::ContentBounds {
                max_resource_bytes: crate::Limits::usize_of(max_resource_bytes),
                ..crate::content::ContentBounds::default()
            };
            let checked = crate::content::check_tool_content(content, &bounds);
            let built = crate::content::tool_content(content.to_vec(), &bounds);
            match (&checked, &built) {
                (Ok(()), Ok(blocks)) => assert_eq!(blocks.len(), content.len()),
                (Err(checked), Err(built)) => {
                    assert_eq!(checked.kind(), crate::ErrorKind::InvalidResponse);
                    assert_eq!(checked.message(), built.message());
                    outcome = outcome.and(Err(checked.message().to_owned()));
                }
                _ => panic!("checked in place: {checked:?}; built: {built:?}"),
            }
        }
        outcome
    }

    /// Validates `x-mcp-header` annotations of an `inputSchema`: `Ok(count)` or the
    /// rule broken.
    pub fn x_mcp_header_annotations(schema: &Map<String, Value>) -> Result<usize, &'static str> {
        crate::param_headers::annotations(schema, &crate::Limits::default())
            .map(|specs| specs.len())
    }

    /// Encodes a value for an `Mcp-Param-*` (or `Mcp-Name`) header.
    pub fn encode_header_value(value: &str) -> String {
        crate::param_headers::encode_value(value)
    }

    /// Checks an `elicitation/create` request's params, every mode declared:
    /// `Ok(field count, or 0 for URL mode)` or the rule broken.
    pub fn elicitation_request(params: &Value) -> Result<usize, std::borrow::Cow<'static, str>> {
        let caps = crate::handler::HostCapabilities {
            elicitation_form: true,
            elicitation_url: true,
            roots: true,
            sampling: true,
        };
        match crate::handler::elicit_request(params, &caps, &crate::Limits::default())? {
            crate::handler::ElicitRequest::Form(form) => {
                // The defaults every field carries must pass the field's own check.
                let result = crate::handler::elicit_result(
                    &crate::handler::ElicitRequest::Form(form.clone()),
                    crate::handler::ElicitAnswer::Accept(Map::new()),
                );
                let all_required_have_defaults = form
                    .fields
                    .iter()
                    .all(|f| !f.required || f.default.is_some());
                assert_eq!(
                    result.is_ok(),
                    all_required_have_defaults,
                    "defaults do not pass their own form"
                );
                Ok(form.fields.len())
            }
            crate::handler::ElicitRequest::Url(url) => {
                assert!(url.url.scheme() == "https" || url.url.scheme() == "http");
                Ok(0)
            }
        }
    }

    /// The `params` of a notification frame, for the `change_notification` target.
    pub use crate::jsonrpc::request_params;

    /// The event a change notification carries (`events::ServerEvent`), for the
    /// `change_notification` target.
    pub fn change_event(
        method: &str,
        params: Option<&Map<String, Value>>,
        max_uri_bytes: usize,
    ) -> Option<Result<crate::events::ServerEvent, String>> {
        crate::events::ServerEvent::from_notification(method, params, max_uri_bytes)
    }

    /// A 2026-07-28 listen's acknowledged filter, read.
    pub fn subscription_filter(
        filter: &Map<String, Value>,
    ) -> Result<crate::events::Interest, String> {
        crate::events::Interest::from_filter(filter)
    }

    /// The `SubscriptionFilter` asking for `interest`.
    pub fn filter_of(interest: &crate::events::Interest) -> Value {
        interest.to_filter()
    }

    /// Whether everything in `a` is also in `b`.
    pub fn interest_is_subset(a: &crate::events::Interest, b: &crate::events::Interest) -> bool {
        a.is_subset_of(b)
    }

    /// The longest stderr line kept (`redact::MAX_STDERR_LINE_BYTES`).
    pub use crate::redact::MAX_STDERR_LINE_BYTES;
    /// The text that replaces a redacted span (`redact::REDACTED`).
    pub use crate::redact::REDACTED;
    /// The stderr redactor (`redact::Redactor`), for the `redaction` target.
    pub use crate::redact::Redactor;
    /// The bounded, redacted stderr tail (`redact::StderrCollector`).
    pub use crate::redact::StderrCollector;
    /// What an over-long stderr line becomes (`redact::WITHHELD_LINE`).
    pub use crate::redact::WITHHELD_LINE;

    /// The DPoP challenge error and the `DPoP-Nonce` parser with its bound
    /// (`auth::challenge`, `auth::dpop`), for the `www_authenticate` target.
    pub use crate::auth::challenge::dpop_error;
    /// The `WWW-Authenticate` parser and its bounds (`auth::challenge`), for the
    /// `www_authenticate` target.
    pub use crate::auth::challenge::{
        MAX_CHALLENGES, MAX_HEADER_BYTES, MAX_PARAMS, parse_challenges, render_challenges,
    };
    pub use crate::auth::dpop::{MAX_NONCE_BYTES, NonceError, nonce_from_headers, parse_nonce};
    /// The OAuth metadata decoders and their bounds (`auth::metadata`).
    pub use crate::auth::metadata::{
        MAX_AUTHORIZATION_SERVERS, MAX_LIST_ENTRIES, decode_authorization_server_metadata,
        decode_protected_resource_metadata,
    };

    /// The bounded line framer of the stdio transport (the `line_framer` target).
    pub use crate::transport::framing::{Framed, FramedReader, LineDecoder, READ_CHUNK_BYTES};

    /// What [`http_request`] saw.
    #[derive(Debug, Default)]
    pub struct HttpRequestRun {
        /// The inbound frames the transport delivered, in order.
        pub frames: Vec<bytes::Bytes>,
        /// The kinds of the errors the request alone failed with.
        pub failures: Vec<crate::ErrorKind>,
        /// The kind of the terminal error, when the transport ended the session.
        pub closed: Option<crate::ErrorKind>,
        /// How many times the transport reported lost session state.
        pub state_lost: usize,
    }

    /// Opens `transport` as a session would, with `maxFrameBytes` set to
    /// `max_frame_bytes` (the other bounds at their defaults), sends `frame` as one
    /// request whose reply never settles it, and collects what the transport
    /// delivers until it ends the session or nothing arrives for `idle`; then tears
    /// it down. For the `http_sse` target, which answers the `POST` from a layer of
    /// its own.
    pub async fn http_request(
        transport: &crate::HttpTransport,
        max_frame_bytes: usize,
        frame: bytes::Bytes,
        idle: std::time::Duration,
    ) -> crate::Result<HttpRequestRun> {
        use crate::transport::{
            Bounds, FrameMeta, InboundEvent, OutboundFrame, RequestControl, RequestHandle,
            TransportContext,
        };
        use std::sync::{Arc, Mutex};

        /// The engine's side of the request: failures recorded, never settled.
        #[derive(Default)]
        struct Unsettled(Mutex<Vec<crate::ErrorKind>>);

        impl RequestControl for Unsettled {
            fn is_done(&self) -> bool {
                false
            }
            fn is_abandoned(&self) -> bool {
                false
            }
            fn done(&self) -> futures_util::future::BoxFuture<'_, ()> {
                Box::pin(std::future::pending())
            }
            fn fail(&self, error: crate::Error) {
                self.0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(error.kind());
            }
        }

        let limits = crate::Limits {
            max_frame_bytes: max_frame_bytes as u64,
            // The transport frames at the larger of the two: keep it at this one.
            max_resource_bytes: max_frame_bytes as u64,
            ..crate::Limits::default()
        };
        limits.validate()?;
        let ctx = TransportContext {
            server: transport.server().into(),
            bounds: Bounds::from(limits),
            diagnostics: crate::diagnostics::Diagnostics::none(),
        };
        let mut connection = transport.open(ctx).await?;
        let control = Arc::new(Unsettled::default());
        connection
            .sink
            .send(OutboundFrame {
                bytes: frame,
                meta: FrameMeta::default(),
                request: Some(RequestHandle::new(control.clone())),
            })
            .await?;
        let mut run = HttpRequestRun::default();
        loop {
            match tokio::time::timeout(idle, connection.source.next()).await {
                Err(_) => break,
                Ok(InboundEvent::Frame(frame) | InboundEvent::StreamFrame { frame, .. }) => {
                    run.frames.push(frame)
                }
                Ok(InboundEvent::Closed(error)) => {
                    run.closed = Some(error.kind());
                    break;
                }
                Ok(InboundEvent::StateLost { .. }) => run.state_lost += 1,
            }
        }
        connection.shutdown.shutdown().await;
        run.failures = std::mem::take(&mut *control.0.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(run)
    }

    /// A `SKILL.md`'s frontmatter (`skills::frontmatter`), for the
    /// `skill_frontmatter` target: the YAML cut out of the raw bytes (at most
    /// `max_bytes`), then parsed under the bounded YAML 1.2 core schema; the
    /// root mapping, or the rule broken.
    pub fn skill_frontmatter(
        raw: &[u8],
        max_bytes: usize,
    ) -> Result<(String, Map<String, Value>), std::borrow::Cow<'static, str>> {
        let yaml = crate::skills::frontmatter::cut(raw, max_bytes)?;
        let parsed = crate::skills::frontmatter::parse_yaml(&yaml)?;
        Ok((yaml, parsed))
    }

    /// The frontmatter comparison (`skills::frontmatter::compare`): the entry's
    /// `frontmatter` against the parsed one.
    pub fn skill_frontmatter_compare(
        entry: &Map<String, Value>,
        parsed: &Map<String, Value>,
    ) -> Result<(), &'static str> {
        crate::skills::frontmatter::compare(entry, parsed)
    }

    /// The identity provider's token exchange answer (`auth::id_jag`), for the
    /// `token_exchange` target.
    pub use crate::auth::id_jag::{
        ID_JAG_TOKEN_TYPE, IdJag, decode_token_exchange_response, refusal_code,
    };
    /// Reads the assertion an [`IdJag`] holds.
    pub use secrecy::ExposeSecret;
}
