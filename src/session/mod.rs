//! The session engine: connect, hold a frozen catalog, call tools, end once.
//!
//! [`Client::builder`] validates the [`Limits`] before anything is spawned, then
//! [`ClientBuilder::connect`] runs the five connect steps over any [`Transport`]:
//!
//! 1. open the transport (spawn the child: a failure is `spawn_failed`);
//! 2. send `initialize`, proposing [`PROPOSED_PROTOCOL_VERSION`] and [`client_info`];
//! 3. validate the result: a version in [`SUPPORTED_PROTOCOL_VERSIONS`] and a `tools`
//!    capability object, else `protocol_error`;
//! 4. send `notifications/initialized`;
//! 5. walk `tools/list` following `nextCursor` under the catalog limits.
//!
//! Steps 2-5 are each bounded by `handshakeTimeoutMs`. The catalog is then frozen
//! ([`Client::catalog`]) and never refreshed.
//!
//! The session ends exactly once (see the "Ending" table of the contract): by
//! [`Client::close`], by dropping the last handle, by the transport closing, or by a
//! malformed tagged envelope. The first event wins, and every pending and later call
//! fails with that one error.

pub(crate) mod engine;

pub use engine::CLOSE_CANCEL_GRACE;

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::catalog::{Catalog, CatalogBuilder};
use crate::diagnostics::{DiagnosticObserver, Diagnostics};
use crate::error::{Error, ErrorKind, Result};
use crate::json_bounds::{ToolCallMembers, value_depth};
use crate::jsonrpc::ResultBody;
use crate::limits::{Limits, MAX_JSON_DEPTH};
use crate::transport::{Transport, TransportContext};
use engine::{SCOPE_CLOSED, Shared};

/// The protocol version the client proposes in `initialize`.
pub const PROPOSED_PROTOCOL_VERSION: &str = "2025-06-18";

/// Protocol versions accepted in a server's `initialize` result.
///
/// `2025-03-26` is accepted because its Streamable HTTP transport and tool shapes are
/// the ones this client speaks; `2025-11-25` only adds behaviour this client handles
/// (SSE polling) or ignores.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2025-11-25"];

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
pub struct ToolResult {
    /// The content items, carried unchanged.
    pub content: Vec<Value>,
    /// The tool's own failure flag.
    pub is_error: bool,
    /// Optional structured result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Map<String, Value>>,
}

impl ToolResult {
    fn from_value(value: Value) -> Result<ToolResult> {
        let Value::Object(object) = value else {
            return Err(Error::invalid_response(
                "tools/call result is not an object",
            ));
        };
        ToolResult::from_members(ToolCallMembers::from_object(object))
    }

    /// From the members of a result object (the reader may have built just these).
    fn from_members(members: ToolCallMembers) -> Result<ToolResult> {
        let bad = |what: &str| Error::invalid_response(format!("tools/call result {what}"));
        let ToolCallMembers {
            content,
            is_error,
            structured_content,
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
        let structured_content = match structured_content {
            None | Some(Value::Null) => None,
            Some(Value::Object(map)) => Some(map),
            Some(_) => return Err(bad("structuredContent is not an object")),
        };
        Ok(ToolResult {
            content,
            is_error,
            structured_content,
        })
    }
}

/// `tools/call` parameters (keys in the order a `serde_json::Map` writes them).
#[derive(Serialize)]
struct CallParams<'a> {
    arguments: Value,
    name: &'a str,
}

/// Configures and connects a [`Client`].
#[must_use]
pub struct ClientBuilder {
    server: String,
    limits: Limits,
    diagnostics: Diagnostics,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("server", &self.server)
            .field("limits", &self.limits)
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

    /// Validates the options, opens the transport and performs the handshake.
    ///
    /// Nothing is spawned or connected when the limits or the server name are invalid.
    pub async fn connect(self, transport: impl Transport) -> Result<Client> {
        self.connect_boxed(Box::new(transport)).await
    }

    /// [`ClientBuilder::connect`] for an already boxed transport.
    pub async fn connect_boxed(self, transport: Box<dyn Transport>) -> Result<Client> {
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
        let ctx = TransportContext {
            server: server.clone(),
            limits: self.limits,
            diagnostics: self.diagnostics.clone(),
        };
        let connection = transport.open(ctx).await?;
        let (shared, queue) = Shared::new(server, self.limits, self.diagnostics);
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
        // Until the handshake succeeds, this guard ends the session if the connect
        // future is dropped or fails, so no task outlives an abandoned connect.
        let mut guard = ConnectGuard {
            shared: Some(shared.clone()),
            torn_down: torn_down.clone(),
        };
        match handshake(&shared).await {
            Ok((catalog, protocol_version)) => {
                let catalog = Arc::new(catalog);
                let _ = shared.catalog.set(catalog.clone());
                guard.shared = None; // disarmed: the client owns the session now
                Ok(Client {
                    inner: Arc::new(ClientInner {
                        shared,
                        torn_down,
                        catalog,
                        protocol_version,
                    }),
                })
            }
            Err(error) => {
                let error = shared.terminal().cloned().unwrap_or(error);
                shared.terminate(error.clone());
                guard.wait_teardown().await;
                Err(error)
            }
        }
    }
}

async fn handshake(shared: &Arc<Shared>) -> Result<(Catalog, String)> {
    let timeout = shared.limits.handshake_timeout();
    let step = |what: &'static str| {
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
    };
    let params = serde_json::json!({
        "protocolVersion": PROPOSED_PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": client_info(),
    });
    let result = shared
        .request("initialize", params, Instant::now() + timeout, false)
        .await
        .map_err(step("initialize"))?;
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .filter(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(v))
        .ok_or_else(|| {
            Error::protocol(format!(
                "server \"{}\" answered initialize with an unsupported protocol version",
                shared.server
            ))
        })?
        .to_string();
    if !result
        .get("capabilities")
        .and_then(|c| c.get("tools"))
        .is_some_and(Value::is_object)
    {
        return Err(Error::protocol(format!(
            "server \"{}\" does not offer tools",
            shared.server
        )));
    }
    shared
        .negotiated(version.clone(), Instant::now() + timeout)
        .await
        .map_err(step("initialize"))?;
    let initialized = shared.encode(&serde_json::json!({
        "jsonrpc": "2.0",
        "method": "notifications/initialized",
    }))?;
    shared
        .enqueue(initialized, Instant::now() + timeout)
        .await
        .map_err(step("notifications/initialized"))?;

    let mut builder = CatalogBuilder::new(&shared.limits);
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(cursor) => serde_json::json!({ "cursor": cursor }),
            None => serde_json::json!({}),
        };
        let page = shared
            .request("tools/list", params, Instant::now() + timeout, true)
            .await
            .map_err(step("tools/list"))?;
        match builder.add_page(&page)? {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok((builder.finish(), version))
}

/// Runs the handshake again on a transport that lost its HTTP session and checks
/// that the server still declares the same flows (by declaration digest).
pub(crate) async fn reinitialize(shared: &Arc<Shared>) -> Result<()> {
    let frozen = shared
        .catalog
        .get()
        .cloned()
        .ok_or_else(|| Error::closed("session expired before the catalog was frozen"))?;
    let (catalog, _version) = handshake(shared).await?;
    let digests = |catalog: &Catalog| -> Vec<String> {
        crate::flows::project_unchecked(&shared.server, catalog, &Default::default())
            .into_iter()
            .map(|declaration| declaration.digest)
            .collect()
    };
    if digests(&catalog) != digests(&frozen) {
        return Err(Error::closed(format!(
            "server \"{}\" restarted its session with a different catalog",
            shared.server
        )));
    }
    Ok(())
}

/// Ends a session whose connect did not complete.
struct ConnectGuard {
    /// `None` once disarmed.
    shared: Option<Arc<Shared>>,
    torn_down: watch::Receiver<bool>,
}

impl ConnectGuard {
    async fn wait_teardown(&self) {
        let _ = self.torn_down.clone().wait_for(|done| *done).await;
    }
}

impl Drop for ConnectGuard {
    fn drop(&mut self) {
        if let Some(shared) = &self.shared {
            shared.terminate(Error::closed(SCOPE_CLOSED));
        }
    }
}

struct ClientInner {
    shared: Arc<Shared>,
    /// Becomes true once the transport is torn down; every closer waits on it.
    torn_down: watch::Receiver<bool>,
    catalog: Arc<Catalog>,
    protocol_version: String,
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

    /// The protocol version the server chose.
    pub fn protocol_version(&self) -> &str {
        &self.inner.protocol_version
    }

    /// The limits this session enforces.
    pub fn limits(&self) -> &Limits {
        &self.inner.shared.limits
    }

    /// The terminal error, once the session has ended.
    pub fn terminal_error(&self) -> Option<Error> {
        self.inner.shared.terminal().cloned()
    }

    /// Calls `name` with `arguments`, bounded by `requestTimeoutMs`.
    ///
    /// - An unknown name fails with `tool_not_found` before any frame is written.
    /// - Arguments nested deeper than the JSON depth bound (their root is container
    ///   three, inside the envelope and `params`) or a frame over
    ///   `maxOutboundFrameBytes` fail with `protocol_error`; nothing is sent and the
    ///   session stays open.
    /// - A timeout (or dropping the returned future) after the frame reached the
    ///   writer sends one best-effort `notifications/cancelled`.
    /// - A result with `isError: true` is `Ok`.
    pub async fn call_tool(&self, name: &str, arguments: Map<String, Value>) -> Result<ToolResult> {
        let shared = &self.inner.shared;
        if let Some(error) = shared.terminal() {
            return Err(error.clone());
        }
        if self.inner.catalog.get(name).is_none() {
            return Err(Error::new(
                ErrorKind::ToolNotFound,
                format!(
                    "tool {name:?} is not in the catalog of server \"{}\"",
                    shared.server
                ),
            ));
        }
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
        // Serialized as `{"arguments":..,"name":..}` without building a `Value`.
        let params = CallParams { arguments, name };
        let result = shared
            .request_body("tools/call", params, deadline, true, true)
            .await
            .map_err(|error| {
                // The terminal error is final and reaches every caller unchanged;
                // only this request's own deadline gets the call-specific wording.
                if error.kind() == ErrorKind::Timeout && shared.terminal().is_none() {
                    Error::timeout(format!(
                        "tools/call {name:?} on server \"{}\" timed out after {} ms",
                        shared.server, shared.limits.request_timeout_ms
                    ))
                } else {
                    error
                }
            })?;
        match result {
            ResultBody::ToolCall(members) => ToolResult::from_members(members),
            ResultBody::Value(value) => ToolResult::from_value(value),
        }
    }

    /// Closes the session: records "connection scope closed" as the terminal reason
    /// (so teardown does not report "stdin closed"), fails pending calls with it,
    /// writes the `notifications/cancelled` owed (for calls that timed out or were
    /// dropped, and for calls written and still unanswered now) within
    /// [`CLOSE_CANCEL_GRACE`], and tears the transport
    /// down (closes stdin, waits briefly, kills the child; or sends `DELETE`).
    pub async fn close(&self) {
        self.inner.shared.close_scope();
        self.inner.wait_teardown().await;
    }
}
