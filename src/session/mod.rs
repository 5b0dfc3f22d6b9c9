//! The session engine: connect, hold a frozen catalog, call tools, end once.
//!
//! [`Client::builder`] validates the [`Limits`] before anything is spawned, then
//! [`ClientBuilder::connect`] connects over any [`Transport`]:
//!
//! 1. open the transport (spawn the child: a failure is `spawn_failed`);
//! 2. choose the era ([`ProtocolMode`], default `auto`): send `server/discover`
//!    and speak 2026-07-28 when the server offers it, else run the legacy
//!    handshake (see `session::negotiate` for every outcome);
//! 3. legacy: send `initialize`, proposing [`PROPOSED_PROTOCOL_VERSION`] and
//!    [`client_info`]; validate a version in [`SUPPORTED_PROTOCOL_VERSIONS`] and a
//!    `tools` capability object, else `protocol_error`; send
//!    `notifications/initialized`. Modern: the `server/discover` result must declare
//!    a `tools` capability object too;
//! 4. walk `tools/list` following `nextCursor` under the catalog limits.
//!
//! Every step is bounded by `handshakeTimeoutMs` (the probe by `probeTimeoutMs`).
//! The catalog is then frozen ([`Client::catalog`]) and never refreshed, in
//! either era.
//!
//! The session ends exactly once (see the "Ending" table of the contract): by
//! [`Client::close`], by dropping the last handle, by the transport closing, or by a
//! malformed tagged envelope. The first event wins, and every pending and later call
//! fails with that one error.

pub(crate) mod engine;
pub(crate) mod era;
pub(crate) mod facts;
pub(crate) mod inputs;
pub(crate) mod legacy;
pub(crate) mod modern;
pub(crate) mod negotiate;
pub(crate) mod tool_result;

pub use engine::CLOSE_CANCEL_GRACE;
pub use era::{Era, MODERN_PROTOCOL_VERSION, MODERN_PROTOCOL_VERSIONS, ProtocolMode};
pub use facts::{
    CacheHint, CacheScope, MAX_CACHE_TTL, MAX_INSTRUCTIONS_BYTES, MAX_SERVER_INFO_BYTES, ServerInfo,
};

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::catalog::Catalog;
use crate::diagnostics::{DiagnosticEvent, DiagnosticObserver, Diagnostics};
use crate::error::{Error, ErrorKind, Result};
use crate::handler::HostHandler;
use crate::json_bounds::value_depth;
use crate::limits::{Limits, MAX_JSON_DEPTH};
use crate::observe;
use crate::pin::CatalogPin;
use crate::transport::{Transport, TransportContext};
use engine::{Core, SCOPE_CLOSED};
use era::Wire;
use inputs::Inputs;
use negotiate::{ServerFacts, Verdict};
use tool_result::ToolCallMembers;

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

/// The longest server name accepted, in UTF-8 bytes.
pub const MAX_SERVER_NAME_BYTES: usize = 128;

/// The name disclosed in `clientInfo`.
pub const CLIENT_NAME: &str = "smithers";

/// The frozen `clientInfo` identity: `{"name": "smithers", "version": <crate version>}`.
pub fn client_info() -> Value {
    serde_json::json!({"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")})
}

/// The result of a `tools/call`: success even when `is_error` is true (the tool ran
/// and reported a problem: that is data, not a session failure).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResult {
    /// The content items, carried unchanged.
    pub content: Vec<Value>,
    /// The tool's own failure flag.
    pub is_error: bool,
    /// Optional structured result: an object in the legacy era, any JSON value in
    /// 2026-07-28 (`null` reads as absent in both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
}

impl ToolResult {
    /// A result carrying `content` (`isError: false`, no `structuredContent`),
    /// for hosts that answer a flow themselves.
    pub fn new(content: Vec<Value>) -> ToolResult {
        ToolResult {
            content,
            is_error: false,
            structured_content: None,
        }
    }

    /// A result the tool reports as failed (`isError: true`) with `content`.
    pub fn error(content: Vec<Value>) -> ToolResult {
        ToolResult {
            is_error: true,
            ..ToolResult::new(content)
        }
    }

    /// The same result with `structuredContent`.
    #[must_use]
    pub fn with_structured_content(mut self, value: Value) -> ToolResult {
        self.structured_content = Some(value);
        self
    }

    fn from_value(value: Value, era: Era) -> Result<ToolResult> {
        let Value::Object(object) = value else {
            return Err(Error::invalid_response(
                "tools/call result is not an object",
            ));
        };
        ToolResult::from_members(ToolCallMembers::from_object(object), era)
    }

    /// From the members of a result object (the reader may have built just these).
    pub(crate) fn from_members(members: ToolCallMembers, era: Era) -> Result<ToolResult> {
        let bad = |what: &str| Error::invalid_response(format!("tools/call result {what}"));
        let ToolCallMembers {
            content,
            is_error,
            structured_content,
            ..
        } = members;
        let content = match content {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(bad("content is not an array")),
        };
        let is_error = match is_error {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => b,
            Some(_) => return Err(bad("isError is not a boolean")),
        };
        let structured_content = match (structured_content, era) {
            (None | Some(Value::Null), _) => None,
            (Some(Value::Object(map)), _) => Some(Value::Object(map)),
            (Some(value), Era::Modern) => Some(value),
            (Some(_), Era::Legacy) => return Err(bad("structuredContent is not an object")),
        };
        Ok(ToolResult {
            content,
            is_error,
            structured_content,
        })
    }
}

/// Configures and connects a [`Client`].
#[must_use]
pub struct ClientBuilder {
    server: String,
    limits: Limits,
    diagnostics: Diagnostics,
    protocol: ProtocolMode,
    handler: Option<Arc<dyn HostHandler>>,
    pin: Option<CatalogPin>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("server", &self.server)
            .field("limits", &self.limits)
            .field("protocol", &self.protocol)
            .field("pin", &self.pin.as_ref().map(CatalogPin::digest))
            .field(
                "host_handler",
                &self.handler.as_ref().map(|h| h.capabilities()),
            )
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// Sets the limits (default: [`Limits::default`]).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Installs the private diagnostics observer (default: none, and private details
    /// are discarded).
    pub fn diagnostics(mut self, observer: Arc<dyn DiagnosticObserver>) -> Self {
        self.diagnostics = Diagnostics::new(observer);
        self
    }

    /// Installs the host handler that answers what a server asks (elicitation,
    /// roots, sampling; see [`handler`](crate::handler)). The capabilities declared
    /// follow from it. Default: none, nothing declared.
    pub fn host_handler(mut self, handler: Arc<dyn HostHandler>) -> Self {
        self.handler = Some(handler);
        self
    }

    /// Pins the catalog: the connect fails with `catalog_changed` unless the
    /// server's tools are exactly the pinned ones (see [`pin`](crate::pin)); the
    /// legacy HTTP re-initialise after a `404` checks the same. Default: no pin.
    pub fn pin(mut self, pin: CatalogPin) -> Self {
        self.pin = Some(pin);
        self
    }

    /// Chooses which protocol revisions may be spoken (default:
    /// [`ProtocolMode::Auto`]: probe, then speak 2026-07-28 or fall back).
    pub fn protocol(mut self, mode: ProtocolMode) -> Self {
        self.protocol = mode;
        self
    }

    /// Validates the options, opens the transport and performs the handshake.
    ///
    /// Nothing is spawned or connected when the limits or the server name are invalid.
    pub async fn connect(self, transport: impl Transport) -> Result<Client> {
        self.connect_boxed(Box::new(transport)).await
    }

    /// [`ClientBuilder::connect`] for an already boxed transport.
    pub async fn connect_boxed(self, transport: Box<dyn Transport>) -> Result<Client> {
        let span = observe::connect_span(&self.server);
        span.run(self.connect_in(transport, &span)).await
    }

    async fn connect_in(
        self,
        transport: Box<dyn Transport>,
        span: &observe::Span,
    ) -> Result<Client> {
        // The server name appears in flow names (`mcp/<server>/<tool>`), messages
        // and diagnostics lines: it obeys the tool-name rules (no `/`, control,
        // format or line-separator characters) and the same byte bound.
        if self.server.is_empty() {
            return Err(Error::protocol("option server must be a non-empty string"));
        }
        if let Err(rule) = crate::catalog::check_tool_name(&self.server, MAX_SERVER_NAME_BYTES) {
            return Err(Error::protocol(format!(
                "option server is not a valid name: {rule}"
            )));
        }
        self.limits.validate()?;
        let server: Arc<str> = Arc::from(self.server.as_str());
        let inputs = Arc::new(Inputs::new(self.handler.clone()));
        let open = || {
            Opened::open(
                &*transport,
                server.clone(),
                self.limits,
                self.diagnostics.clone(),
                inputs.clone(),
            )
        };
        let mut session = open().await?;
        span.transport(match session.shared.medium {
            crate::transport::Medium::Stream => "stdio",
            crate::transport::Medium::Exchanges => "http",
        });
        let (facts, fallback) = match connect_era(&session.shared, self.protocol).await {
            Ok(Connected::Done(facts, fallback)) => (facts, fallback),
            Ok(Connected::Respawn(why)) => {
                // The child exited during the probe: a legacy server that stops
                // when the first request is not `initialize`. Start it again.
                session.abandon().await;
                session = open().await?;
                match legacy::initialize(&session.shared).await {
                    Ok(facts) => (facts, Some(why)),
                    Err(error) => return Err(session.fail(error).await),
                }
            }
            Err(error) => return Err(session.fail(error).await),
        };
        let shared = session.shared.clone();
        let wire = shared.wire.get();
        let (catalog, catalog_cache) = match negotiate::walk_catalog(&shared, wire).await {
            Ok(walked) => walked,
            Err(error) => return Err(session.fail(error).await),
        };
        if let Some(pin) = &self.pin {
            if let Err(error) = CatalogPin::of(&catalog).check(&shared.server, pin) {
                return Err(session.fail(error).await);
            }
            let _ = shared.pin.set(pin.clone());
        }
        span.negotiated(facts.version, fallback);
        if let Some(reason) = fallback
            && shared.diagnostics.is_enabled()
        {
            shared.diagnostics.emit(DiagnosticEvent::LegacyFallback {
                server: shared.server.clone(),
                version: facts.version,
                reason,
            });
        }
        let catalog = Arc::new(catalog);
        let _ = shared.catalog.set(catalog.clone());
        let torn_down = session.disarm();
        Ok(Client {
            inner: Arc::new(ClientInner {
                shared,
                torn_down,
                catalog,
                facts,
                catalog_cache,
            }),
        })
    }
}

/// How [`connect_era`] ended.
enum Connected {
    /// Handshake done (and why a probe fell back to legacy, if it did).
    Done(ServerFacts, Option<&'static str>),
    /// Start the child again and connect legacy (why).
    Respawn(&'static str),
}

/// Steps 2-3 of the connect on an open session: the probe (unless legacy is
/// pinned), then the legacy handshake when the verdict says so, with one more
/// probe when `initialize` is answered with -32022.
async fn connect_era(shared: &Arc<Core>, mode: ProtocolMode) -> Result<Connected> {
    let fallback = match mode {
        ProtocolMode::Legacy => None,
        ProtocolMode::Auto | ProtocolMode::Modern => match negotiate::probe(shared, mode).await? {
            Verdict::Modern(facts) => return modern_connected(shared, facts),
            Verdict::Respawn => {
                return Ok(Connected::Respawn(
                    "the server exited during server/discover",
                ));
            }
            Verdict::Legacy(why) => Some(why),
        },
    };
    match legacy::initialize(shared).await {
        Ok(facts) => Ok(Connected::Done(facts, fallback)),
        // The child answered the probe, then exited (current rmcp refuses a
        // non-initialize first request and stops): start it again.
        Err(error)
            if fallback.is_some()
                && shared.medium == crate::transport::Medium::Stream
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
            match negotiate::probe(shared, ProtocolMode::Modern).await? {
                Verdict::Modern(facts) => modern_connected(shared, facts),
                _ => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}

fn modern_connected(shared: &Arc<Core>, facts: ServerFacts) -> Result<Connected> {
    if !facts.offers_tools {
        return Err(Error::protocol(format!(
            "server \"{}\" does not offer tools",
            shared.server
        )));
    }
    shared.wire.set(Wire::Modern(facts.version));
    Ok(Connected::Done(facts, None))
}

/// An open transport with its engine tasks, ended if dropped before the client
/// owns it.
struct Opened {
    shared: Arc<Core>,
    torn_down: watch::Receiver<bool>,
    /// Cleared once the client owns the session.
    armed: bool,
}

impl Opened {
    async fn open(
        transport: &dyn Transport,
        server: Arc<str>,
        limits: Limits,
        diagnostics: Diagnostics,
        inputs: Arc<Inputs>,
    ) -> Result<Opened> {
        let ctx = TransportContext {
            server: server.clone(),
            limits,
            diagnostics: diagnostics.clone(),
        };
        let connection = transport.open(ctx).await?;
        let (shared, queue) = Core::new(server, limits, diagnostics, connection.medium, inputs);
        let writer = tokio::spawn(engine::run_writer(shared.clone(), connection.sink, queue));
        let reader = tokio::spawn(engine::run_reader(shared.clone(), connection.source));
        let shutdown = connection.shutdown;
        let teardown_shared = shared.clone();
        let (torn_down_tx, torn_down) = watch::channel(false);
        tokio::spawn(async move {
            teardown_shared.ended.cancelled().await;
            // Both loops watch `ended`; wait for them so the sink (stdin) is dropped
            // before the transport is torn down.
            let _ = writer.await;
            let _ = reader.await;
            shutdown.shutdown().await;
            let _ = torn_down_tx.send(true);
        });
        Ok(Opened {
            shared,
            torn_down,
            armed: true,
        })
    }

    async fn wait_teardown(&self) {
        let _ = self.torn_down.clone().wait_for(|done| *done).await;
    }

    /// Ends the session with `error` (or the terminal error already recorded),
    /// waits for the teardown, and returns the error to report.
    async fn fail(self, error: Error) -> Error {
        let error = self.shared.terminal().cloned().unwrap_or(error);
        self.shared.terminate(error.clone());
        self.wait_teardown().await;
        error
    }

    /// Tears down a session given up on (the probe's child, before a respawn).
    async fn abandon(self) {
        self.shared.terminate(Error::closed(SCOPE_CLOSED));
        self.wait_teardown().await;
    }

    /// The client owns the session now.
    fn disarm(mut self) -> watch::Receiver<bool> {
        self.armed = false;
        self.torn_down.clone()
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        // A connect future dropped (or failed) before the client owned the
        // session: no task outlives it.
        if self.armed {
            self.shared.terminate(Error::closed(SCOPE_CLOSED));
        }
    }
}

struct ClientInner {
    shared: Arc<Core>,
    /// Becomes true once the transport is torn down; every closer waits on it.
    torn_down: watch::Receiver<bool>,
    catalog: Arc<Catalog>,
    facts: ServerFacts,
    catalog_cache: Option<CacheHint>,
}

impl ClientInner {
    async fn wait_teardown(&self) {
        let _ = self.torn_down.clone().wait_for(|done| *done).await;
    }
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        // Dropping the last handle is a scope close; the teardown task (if a runtime
        // is still running it) writes the owed cancellations and kills the child, and
        // `kill_on_drop` covers the rest.
        self.shared.close_scope();
    }
}

/// A connected MCP session. Cheap to clone; every clone is the same session.
///
/// ```no_run
/// # async fn run() -> smthrs_mcp::Result<()> {
/// use smthrs_mcp::{Client, StdioCommand};
/// let client = Client::builder("demo")
///     .connect(StdioCommand::new("smthrs-mcp").arg("demo-server"))
///     .await?;
/// println!("speaking {} ({:?})", client.protocol_version(), client.era());
/// for tool in client.catalog().iter() {
///     println!("{}", tool.name());
/// }
/// let mut args = serde_json::Map::new();
/// args.insert("text".into(), "hello".into());
/// let result = client.call_tool("echo", args).await?;
/// assert!(!result.is_error);
/// client.close().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.server())
            .field("protocol", &self.protocol_version())
            .field("tools", &self.inner.catalog.len())
            .field("ended", &self.inner.shared.terminal().is_some())
            .finish()
    }
}

impl Client {
    /// Starts configuring a session with the server named `server` (used in messages
    /// and flow names).
    pub fn builder(server: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            server: server.into(),
            limits: Limits::default(),
            diagnostics: Diagnostics::none(),
            protocol: ProtocolMode::default(),
            handler: None,
            pin: None,
        }
    }

    /// The configured server name.
    pub fn server(&self) -> &str {
        &self.inner.shared.server
    }

    /// The frozen catalog, fetched once at connect time.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.inner.catalog
    }

    /// The protocol revision negotiated (`"2026-07-28"`, or the legacy version
    /// the server chose in `initialize`).
    pub fn protocol_version(&self) -> &'static str {
        self.inner.facts.version
    }

    /// The era the session speaks.
    pub fn era(&self) -> Era {
        self.inner.facts.era
    }

    /// The server's self-reported identity, if it sent a well-formed one.
    /// Untrusted: base no decision on it.
    pub fn server_info(&self) -> Option<&ServerInfo> {
        self.inner.facts.server_info.as_ref()
    }

    /// The server's `instructions`, if any: text meant for a model, written by
    /// the server (treat it as untrusted input).
    pub fn instructions(&self) -> Option<&str> {
        self.inner.facts.instructions.as_deref()
    }

    /// 2026-07-28: the cache hints of the `server/discover` result and of the
    /// catalog (the stricter of its pages). The catalog stays frozen for the
    /// session whatever they say; they are for hosts that cache across sessions.
    /// `None` in the legacy era.
    pub fn cache_hints(&self) -> Option<(CacheHint, CacheHint)> {
        Some((self.inner.facts.discover_cache?, self.inner.catalog_cache?))
    }

    /// The limits this session enforces.
    pub fn limits(&self) -> &Limits {
        &self.inner.shared.limits
    }

    /// The terminal error, once the session has ended.
    pub fn terminal_error(&self) -> Option<Error> {
        self.inner.shared.terminal().cloned()
    }

    /// Resolves with the terminal error once the session has ended (the server
    /// exited or closed the stream, a protocol rule was broken, [`Client::close`]
    /// was called): a supervisor awaits this instead of polling
    /// [`Client::terminal_error`]. Resolves at once when the session has already
    /// ended; cancel-safe, and any number of handles may wait.
    ///
    /// ```no_run
    /// # async fn run(client: smthrs_mcp::Client) {
    /// let ended = client.closed().await;
    /// eprintln!("server {} ended: {ended}", client.server());
    /// # }
    /// ```
    pub async fn closed(&self) -> Error {
        let shared = &self.inner.shared;
        shared.ended.cancelled().await;
        shared
            .terminal()
            .cloned()
            .unwrap_or_else(|| Error::closed(SCOPE_CLOSED))
    }

    /// Calls `name` with `arguments`, bounded by `requestTimeoutMs`.
    ///
    /// - An unknown name fails with `tool_not_found` before any frame is written.
    /// - Arguments nested deeper than the JSON depth bound (their root is container
    ///   three, inside the envelope and `params`) or a frame over
    ///   `maxOutboundFrameBytes` fail with `protocol_error`; nothing is sent and the
    ///   session stays open.
    /// - A timeout (or dropping the returned future) after the frame reached the
    ///   writer sends one best-effort `notifications/cancelled` (2026-07-28 over
    ///   HTTP: the request's exchange is cut instead).
    /// - 2026-07-28: `input_required` results are answered by the host handler and
    ///   retried (`session::modern`'s rules and bounds).
    /// - A result with `isError: true` is `Ok`.
    pub async fn call_tool(&self, name: &str, arguments: Map<String, Value>) -> Result<ToolResult> {
        let span = observe::call_span(self.server(), name);
        let started = observe::Stopwatch::start();
        let result = span.run(self.call_in(name, arguments)).await;
        let outcome = match &result {
            Ok(result) if result.is_error => "is_error",
            Ok(_) => "ok",
            Err(error) => error.kind().as_str(),
        };
        span.outcome(outcome, started);
        result
    }

    async fn call_in(&self, name: &str, arguments: Map<String, Value>) -> Result<ToolResult> {
        let shared = &self.inner.shared;
        if let Some(error) = shared.terminal() {
            return Err(error.clone());
        }
        let Some(tool) = self.inner.catalog.get(name) else {
            return Err(Error::new(
                ErrorKind::ToolNotFound,
                format!(
                    "tool {name:?} is not in the catalog of server \"{}\"",
                    shared.server
                ),
            ));
        };
        let deadline = Instant::now() + shared.limits.request_timeout();
        let arguments = Value::Object(arguments);
        // Envelope (1) and params (2) hold the arguments' root (3).
        if 2 + value_depth(&arguments) > MAX_JSON_DEPTH {
            // A caller-built value this deep would overflow the stack in
            // `Value`'s recursive `Drop`: take it apart iteratively.
            crate::json_bounds::drop_value(arguments);
            return Err(Error::protocol(format!(
                "tool arguments nest deeper than {MAX_JSON_DEPTH} JSON containers"
            )));
        }
        let wire = shared.wire.get();
        let result = if wire.is_modern() {
            modern::call_tool(shared, tool, arguments, wire, deadline).await
        } else {
            legacy::call_tool(shared, name, arguments, wire, deadline).await
        };
        result.map_err(|error| {
            // The terminal error is final and reaches every caller unchanged;
            // only this request's own deadline gets the call-specific wording.
            if error.kind() == ErrorKind::Timeout
                && shared.terminal().is_none()
                && !matches!(error.detail(), Some(crate::error::Detail::HostTimeout))
            {
                Error::timeout(format!(
                    "tools/call {name:?} on server \"{}\" timed out after {} ms",
                    shared.server, shared.limits.request_timeout_ms
                ))
            } else {
                error
            }
        })
    }

    /// Closes the session: records "connection scope closed" as the terminal reason
    /// (so teardown does not report "stdin closed"), fails pending calls with it,
    /// writes the `notifications/cancelled` owed (for calls that timed out or were
    /// dropped, and for calls written and still unanswered now) within
    /// [`CLOSE_CANCEL_GRACE`], and tears the transport down (closes stdin, waits
    /// briefly, kills the child; or sends `DELETE`).
    pub async fn close(&self) {
        self.inner.shared.close_scope();
        self.inner.wait_teardown().await;
    }
}
