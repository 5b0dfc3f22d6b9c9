//! The public handle: [`ClientBuilder`] validates the options and connects,
//! [`Client`] calls tools on the frozen catalog and ends the session once. A
//! thin layer over the protocol layer ([`super::protocol`]), which does the
//! talking, on the core ([`super::engine`]), which does the sending.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::engine::{self, Core, SCOPE_CLOSED};
use super::protocol::era::{Era, ProtocolMode};
use super::protocol::facts::{CacheHint, ServerInfo};
use super::protocol::negotiate::{self, ServerFacts};
use super::protocol::progress::ProgressCall;
use super::protocol::send::{Listing, Page};
use super::protocol::skills::SkillList;
use super::protocol::tool_result::ToolResult;
use super::protocol::{self, Connected, Link, Protocol, legacy};
use super::subscription::Subscription;
use crate::completion::{Completion, CompletionRef};
use crate::content::ReadResult;
use crate::prompts::{GetPromptResult, Prompt};
use crate::resources::{Resource, ResourceTemplate};

use super::call_options::CallOptions;

/// How long [`Client::close`] waits for the best-effort `tasks/cancel` of
/// dropped calls still being sent (at most `requestTimeoutMs`).
const TASK_CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);
use crate::catalog::Catalog;
use crate::diagnostics::{DiagnosticEvent, DiagnosticObserver, Diagnostics};
use crate::error::{Error, ErrorKind, Result};
use crate::handler::HostHandler;
use crate::json_bounds::value_depth;
use crate::limits::{Limits, MAX_JSON_DEPTH};
use crate::observe;
use crate::pin::CatalogPin;
use crate::skills::{Skill, VerifiedFile, resolve_reference};
use crate::transport::{Transport, TransportContext};

/// The longest server name accepted, in UTF-8 bytes.
pub const MAX_SERVER_NAME_BYTES: usize = 128;

/// Configures and connects a [`Client`].
#[must_use]
pub struct ClientBuilder {
    server: String,
    limits: Limits,
    diagnostics: Diagnostics,
    protocol: ProtocolMode,
    handler: Option<Arc<dyn HostHandler>>,
    pin: Option<CatalogPin>,
    assumed: Option<Value>,
    /// Set by the supervisor: the session (connecting or connected) closes
    /// its scope when this is cancelled.
    scope: Option<CancellationToken>,
    /// Set by a group's era cache: the server's origin was found legacy
    /// (`auto` only; see [`ClientBuilder::known_legacy`]).
    known_legacy: bool,
    /// Set by a group: every session this connect opens is logged here, so the
    /// group can wait for their teardown after giving up on the connect.
    teardowns: Option<TeardownLog>,
}

/// The teardowns of the sessions a group's connects opened, so that a group
/// that gives up on a connect (dropping it) can wait until what it started is
/// gone. Cheap to clone: clones share the log.
#[derive(Clone, Default)]
pub(crate) struct TeardownLog(Arc<std::sync::Mutex<Vec<watch::Receiver<bool>>>>);

impl TeardownLog {
    fn record(&self, torn_down: watch::Receiver<bool>) {
        super::engine::lock(&self.0).push(torn_down);
    }

    /// Waits until every session logged so far is torn down (each teardown is
    /// bounded by the transport's own graces).
    pub(crate) async fn wait_all(&self) {
        let logged = std::mem::take(&mut *super::engine::lock(&self.0));
        futures_util::future::join_all(logged.into_iter().map(|mut torn_down| async move {
            let _ = torn_down.wait_for(|done| *done).await;
        }))
        .await;
    }
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("server", &self.server)
            .field("limits", &self.limits)
            .field("protocol", &self.protocol)
            .field("pin", &self.pin.as_ref().map(CatalogPin::digest))
            .field("assumed_capabilities", &self.assumed)
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

    /// Takes the server to declare `capabilities` besides what it declares
    /// (merged member by member into its `capabilities` object; an object
    /// merges into an object, anything else replaces). A loosening of the
    /// strict gating (beyond-tools.md Q1), for named servers that serve or send
    /// what they do not declare: the Python SDK's FastMCP 1.x declares
    /// `listChanged: false` for every list yet sends the changes when asked
    /// to, and some servers answer `resources/*` or `prompts/*` without
    /// declaring them. Assumed capabilities gate requests and subscriptions
    /// like declared ones ([`Client::capabilities`] shows the merge); they do
    /// not make the connect walk `tools/list` for a server that declared no
    /// `tools`. Default: none.
    ///
    /// ```no_run
    /// # async fn run() -> smthrs_mcp::Result<()> {
    /// use smthrs_mcp::{Client, StdioCommand};
    /// let client = Client::builder("fastmcp")
    ///     .assume_capabilities(serde_json::json!({"tools": {"listChanged": true}}))
    ///     .connect(StdioCommand::new("python").arg("server.py"))
    ///     .await?;
    /// # let _ = client;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// A `capabilities` value that is not a JSON object fails the connect
    /// with `invalid_config` before anything is spawned.
    pub fn assume_capabilities(mut self, capabilities: Value) -> Self {
        self.assumed = Some(capabilities);
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

    /// Ends the session when `scope` is cancelled, as [`Client::close`] would,
    /// whether it is still connecting (the connect then fails with
    /// `connection_closed` once torn down) or connected. For the supervisor,
    /// whose `close` must end an attempt in progress without dropping it.
    pub(crate) fn scope(mut self, scope: CancellationToken) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Chooses which protocol revisions may be spoken (default:
    /// [`ProtocolMode::Auto`]: probe, then speak 2026-07-28 or fall back).
    pub fn protocol(mut self, mode: ProtocolMode) -> Self {
        self.protocol = mode;
        self
    }

    /// The era cache's hint (a group's, [`crate::group`]): with
    /// [`ProtocolMode::Auto`], skip the `server/discover` probe and send
    /// `initialize` at once, because another server of the same origin was
    /// found legacy. When that `initialize` fails in a way that says the era
    /// may be wrong (a JSON-RPC error, -32022, an HTTP `4xx`, a version or a
    /// result this client does not accept), the session is dropped and the
    /// full negotiation runs once on a fresh one. No effect in the other modes.
    pub(crate) fn known_legacy(mut self, known: bool) -> Self {
        self.known_legacy = known;
        self
    }

    /// Logs the teardown of every session this connect opens (a group's).
    pub(crate) fn log_teardowns(mut self, log: TeardownLog) -> Self {
        self.teardowns = Some(log);
        self
    }

    /// The server name given to [`Client::builder`].
    pub(crate) fn server_name(&self) -> &str {
        &self.server
    }

    /// The protocol mode chosen.
    pub(crate) fn protocol_mode(&self) -> ProtocolMode {
        self.protocol
    }

    /// Validates the options, opens the transport and performs the handshake.
    ///
    /// Nothing is spawned or connected when the limits or the server name are invalid.
    ///
    /// ```no_run
    /// use smthrs_mcp::{Client, HttpTransport};
    ///
    /// # async fn run() -> smthrs_mcp::Result<()> {
    /// let transport = HttpTransport::builder("tracker", "https://mcp.tracker.example/mcp")
    ///     .bearer_token_env("TRACKER_MCP_TOKEN")
    ///     .build()?;
    /// let client = Client::builder("tracker").connect(transport).await?;
    /// println!("{} tools, speaking {}", client.catalog().len(), client.protocol_version());
    /// client.close().await;
    /// # Ok(()) }
    /// ```
    ///
    /// An invalid limit fails before anything is spawned:
    ///
    /// ```
    /// use smthrs_mcp::{Client, ErrorKind, Limits, StdioCommand};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let mut limits = Limits::default();
    /// limits.max_frame_bytes = 0;
    /// let error = Client::builder("demo")
    ///     .limits(limits)
    ///     .connect(StdioCommand::new("a-program-that-is-never-started"))
    ///     .await
    ///     .unwrap_err();
    /// assert_eq!(error.kind(), ErrorKind::ProtocolError);
    /// # });
    /// ```
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
        if self
            .assumed
            .as_ref()
            .is_some_and(|assumed| !assumed.is_object())
        {
            return Err(Error::config(
                "assume_capabilities takes a JSON object (capability names to their objects)",
            ));
        }
        let server: Arc<str> = Arc::from(self.server.as_str());
        // The transport is borrowed only to start each open, never across an
        // await (`dyn Transport` is not `Sync`): the connect future stays
        // `Send`, so a host may spawn it.
        let open = |transport: &dyn Transport| {
            Opened::open(
                transport,
                server.clone(),
                self.limits,
                self.diagnostics.clone(),
                self.handler.clone(),
                self.scope.clone(),
            )
        };
        // A group waits for the teardown of every session it started.
        let logged = |session: Opened| {
            if let Some(log) = &self.teardowns {
                log.record(session.torn_down.clone());
            }
            session
        };
        let opening = open(&*transport);
        let mut session = logged(opening.await?);
        span.transport(match session.link.core.medium {
            crate::transport::Medium::Stream => "stdio",
            crate::transport::Medium::Exchanges => "http",
        });
        let mut known_legacy = self.known_legacy && self.protocol == ProtocolMode::Auto;
        let (facts, fallback) = loop {
            let connected = if known_legacy {
                protocol::connect_known_legacy(&session.link).await
            } else {
                protocol::connect_era(&session.link, self.protocol).await
            };
            match connected {
                Ok(Connected::Done(facts, fallback)) => break (facts, fallback),
                Ok(Connected::Renegotiate) => {
                    // The era cache was wrong for this server: the full
                    // negotiation, once, on a fresh session.
                    known_legacy = false;
                    session.abandon().await;
                    let opening = open(&*transport);
                    session = logged(opening.await?);
                }
                Ok(Connected::Respawn(why)) => {
                    // The child exited during the probe: a legacy server that stops
                    // when the first request is not `initialize`. Start it again.
                    session.abandon().await;
                    let opening = open(&*transport);
                    session = logged(opening.await?);
                    match legacy::initialize(&session.link).await {
                        Ok(facts) => break (facts, Some(why)),
                        Err(error) => return Err(session.fail(error).await),
                    }
                }
                Err(error) => return Err(session.fail(error).await),
            }
        };
        let mut facts = facts;
        if let Some(Value::Object(assumed)) = &self.assumed {
            merge_into(&mut facts.capabilities, assumed);
        }
        let link = session.link.clone();
        let Link { core, protocol } = &link;
        let wire = protocol.wire.get();
        let (catalog, catalog_cache) = if facts.offers_tools {
            match negotiate::walk_catalog(&link, wire).await {
                Ok(walked) => walked,
                Err(error) => return Err(session.fail(error).await),
            }
        } else {
            // No `tools` capability: an empty catalog, nothing asked.
            (
                crate::catalog::CatalogBuilder::new(&core.limits).finish(),
                None,
            )
        };
        if let Some(pin) = &self.pin {
            if let Err(error) = CatalogPin::of(&catalog).check(&core.server, pin) {
                return Err(session.fail(error).await);
            }
            let _ = protocol.pin.set(pin.clone());
        }
        span.negotiated(facts.version, fallback);
        if let Some(reason) = fallback
            && core.diagnostics.is_enabled()
        {
            core.diagnostics.emit(DiagnosticEvent::LegacyFallback {
                server: core.server.clone(),
                version: facts.version,
                reason,
            });
        }
        let catalog = Arc::new(catalog);
        let _ = protocol.catalog.set(catalog.clone());
        let torn_down = session.disarm();
        Ok(Client {
            inner: Arc::new(ClientInner {
                link,
                torn_down,
                catalog,
                facts,
                catalog_cache,
            }),
        })
    }
}

/// owns it.
struct Opened {
    link: Link,
    torn_down: watch::Receiver<bool>,
    /// Cleared once the client owns the session.
    armed: bool,
}

impl Opened {
    /// Starts opening `transport` (the borrow ends here) and returns the rest.
    fn open(
        transport: &dyn Transport,
        server: Arc<str>,
        limits: Limits,
        diagnostics: Diagnostics,
        handler: Option<Arc<dyn HostHandler>>,
        scope: Option<CancellationToken>,
    ) -> impl Future<Output = Result<Opened>> + Send + use<> {
        let ctx = TransportContext {
            server: server.clone(),
            bounds: limits.into(),
            diagnostics: diagnostics.clone(),
        };
        let connecting = transport.open(ctx);
        Opened::start(connecting, server, limits, diagnostics, handler, scope)
    }

    async fn start(
        connecting: futures_util::future::BoxFuture<'static, Result<crate::transport::Connection>>,
        server: Arc<str>,
        limits: Limits,
        diagnostics: Diagnostics,
        handler: Option<Arc<dyn HostHandler>>,
        scope: Option<CancellationToken>,
    ) -> Result<Opened> {
        let connection = connecting.await?;
        let protocol = Arc::new(Protocol::new(handler));
        let (core, queue) = Core::new(
            server,
            limits,
            diagnostics,
            connection.medium,
            protocol.clone(),
        );
        let writer = tokio::spawn(engine::run_writer(core.clone(), connection.sink, queue));
        let reader = tokio::spawn(engine::run_reader(core.clone(), connection.source));
        let shutdown = connection.shutdown;
        let teardown_core = core.clone();
        let (torn_down_tx, torn_down) = watch::channel(false);
        tokio::spawn(async move {
            match scope {
                Some(scope) => tokio::select! {
                    () = teardown_core.ended.cancelled() => {}
                    () = scope.cancelled() => teardown_core.close_scope(),
                },
                None => teardown_core.ended.cancelled().await,
            }
            // `close_scope` ends the session unless another end won the race,
            // which ends it too.
            teardown_core.ended.cancelled().await;
            // Both loops watch `ended`; wait for them so the sink (stdin) is dropped
            // before the transport is torn down.
            let _ = writer.await;
            let _ = reader.await;
            shutdown.shutdown().await;
            let _ = torn_down_tx.send(true);
        });
        Ok(Opened {
            link: Link { core, protocol },
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
        let core = &self.link.core;
        let error = core.terminal().cloned().unwrap_or(error);
        core.terminate(error.clone());
        self.wait_teardown().await;
        error
    }

    /// Tears down a session given up on (the probe's child, before a respawn).
    async fn abandon(self) {
        self.link.core.terminate(Error::closed(SCOPE_CLOSED));
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
            self.link.core.terminate(Error::closed(SCOPE_CLOSED));
        }
    }
}

struct ClientInner {
    link: Link,
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
        self.link.core.close_scope();
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
            .field("ended", &self.inner.link.core.terminal().is_some())
            .finish()
    }
}

impl Client {
    /// Starts configuring a session with the server named `server` (used in messages
    /// and flow names).
    ///
    /// ```no_run
    /// use smthrs_mcp::{Client, Limits, ProtocolMode, StdioCommand};
    ///
    /// # async fn run() -> smthrs_mcp::Result<()> {
    /// let mut limits = Limits::default();
    /// limits.max_tools = 512;
    /// let client = Client::builder("demo")
    ///     .limits(limits)
    ///     .protocol(ProtocolMode::Auto)
    ///     .connect(StdioCommand::new("smthrs-mcp").arg("demo-server"))
    ///     .await?;
    /// # let _ = client;
    /// # Ok(()) }
    /// ```
    pub fn builder(server: impl Into<String>) -> ClientBuilder {
        ClientBuilder {
            server: server.into(),
            limits: Limits::default(),
            diagnostics: Diagnostics::none(),
            protocol: ProtocolMode::default(),
            handler: None,
            pin: None,
            assumed: None,
            scope: None,
            known_legacy: false,
            teardowns: None,
        }
    }

    /// The configured server name.
    pub fn server(&self) -> &str {
        &self.inner.link.core.server
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

    /// The server's `capabilities` object as it sent it (legacy `initialize`,
    /// 2026-07-28 `server/discover`), unknown members kept (SEP-2133
    /// `extensions` in both eras), with what the host assumed merged in
    /// ([`ClientBuilder::assume_capabilities`]); `{}` when there is none.
    /// Server-authored: it decides which requests this client sends (a
    /// capability not declared is never asked: `missing_capability`), nothing
    /// else.
    pub fn capabilities(&self) -> &Value {
        &self.inner.facts.capabilities
    }

    /// Whether the server declared `capability` (`"tools"`, `"resources"`,
    /// `"prompts"`, `"completions"`, ...) as an object.
    pub fn declares(&self, capability: &str) -> bool {
        self.inner.facts.capability(capability).is_some()
    }

    /// Runs a request the server's `capability` governs: `missing_capability`
    /// (nothing sent) when it did not declare it, the terminal error when the
    /// session has ended.
    fn gate(&self, capability: &str) -> Result<&Link> {
        let link = &self.inner.link;
        if let Some(error) = link.core.terminal() {
            return Err(error.clone());
        }
        self.inner.facts.require(&link.core.server, capability)?;
        Ok(link)
    }

    /// Lists the server's resources, walking every page (`resources/list`,
    /// beyond-tools.md §1.1): bounded by `maxResources`, `maxCatalogPages`,
    /// `maxUriBytes` and `maxEntryDocumentBytes`, each page by
    /// `requestTimeoutMs`. A duplicate `uri`, a cap passed or an entry that
    /// breaks a rule fails the walk with `invalid_response` (never a truncated
    /// list). `missing_capability` when the server does not declare
    /// `resources` (nothing is sent).
    pub async fn list_resources(&self) -> Result<Listing<Resource>> {
        let walked = protocol::resources::list(self.gate("resources")?).await?;
        Ok(walked)
    }

    /// Lists the server's resource templates, walking every page
    /// (`resources/templates/list`), under `maxResourceTemplates` and the rules
    /// of [`list_resources`](Self::list_resources).
    pub async fn list_resource_templates(&self) -> Result<Listing<ResourceTemplate>> {
        let walked = protocol::resources::templates(self.gate("resources")?).await?;
        Ok(walked)
    }

    /// Reads one resource (`resources/read`) by its `uri`, spelled as the
    /// server spelled it; only on this server, never by dereferencing its
    /// scheme. The contents are checked ([`ReadResult::from_value`]:
    /// `maxResourceContents`, `maxResourceBytes` counted on decoded bytes,
    /// strict base64 checked before decoding). Its reply may be a frame of up to
    /// the larger of `maxResourceBytes` and `maxFrameBytes`; every other frame
    /// stays under `maxFrameBytes`.
    ///
    /// Errors: `missing_capability` (no `resources`; nothing sent);
    /// `protocol_error` when `uri` breaks the URI rules (nothing sent);
    /// `not_found` when the server answers -32002 or -32602;
    /// `invalid_response` when the result breaks a rule (the session lives).
    ///
    /// ```no_run
    /// # async fn run(client: smthrs_mcp::Client) -> smthrs_mcp::Result<()> {
    /// let read = client.read_resource("file:///project/README.md").await?;
    /// println!("{} items", read.contents.len());
    /// # Ok(()) }
    /// ```
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResult> {
        protocol::resources::read(self.gate("resources")?, uri).await
    }

    /// One page of a list (`T`: [`Resource`], [`ResourceTemplate`] or
    /// [`Prompt`]) at `cursor` (`None`: the first), for hosts that page
    /// themselves: a server's listing may be larger than a walk's cap. The
    /// page is checked as a walk's page is (entry rules, the item cap,
    /// duplicates within it); following [`Page::next_cursor`], repeats and the
    /// page count are the host's to bound, except that a `nextCursor` equal to
    /// `cursor` fails (`invalid_response`). A page of prompts is not held for
    /// [`get_prompt`](Self::get_prompt)'s check (only a whole listing is).
    /// `missing_capability` when the server does not declare the list's
    /// capability (nothing sent).
    ///
    /// ```no_run
    /// # async fn run(client: smthrs_mcp::Client) -> smthrs_mcp::Result<()> {
    /// use smthrs_mcp::resources::Resource;
    /// let mut cursor = None;
    /// loop {
    ///     let page = client.list_page::<Resource>(cursor.as_deref()).await?;
    ///     for resource in &page.entries {
    ///         println!("{}", resource.uri);
    ///     }
    ///     match page.next_cursor {
    ///         Some(next) => cursor = Some(next),
    ///         None => break,
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_page<T: crate::listing::ListEntry>(
        &self,
        cursor: Option<&str>,
    ) -> Result<Page<T>> {
        let capability = <T as crate::listing::sealed::Entry>::CAPABILITY;
        protocol::send::page(self.gate(capability)?, cursor).await
    }

    /// Lists the server's prompts, walking every page (`prompts/list`), under
    /// `maxPrompts`, `maxPromptArguments` and the name rules; the listing is
    /// held for [`get_prompt`](Self::get_prompt)'s argument check.
    /// `missing_capability` when the server does not declare `prompts`.
    pub async fn list_prompts(&self) -> Result<Listing<Prompt>> {
        let walked = protocol::prompts::list(self.gate("prompts")?).await?;
        Ok(walked)
    }

    /// Gets one prompt (`prompts/get`) with string `arguments`. When a listing
    /// was fetched in this session ([`list_prompts`](Self::list_prompts)) the
    /// name and arguments are checked against it first (`protocol_error`,
    /// nothing sent); otherwise they are sent as given. The messages are
    /// server-authored turns, checked and bounded ([`GetPromptResult::from_value`]).
    /// `not_found` when the server answers -32002 or -32602.
    ///
    /// ```no_run
    /// # async fn run(client: smthrs_mcp::Client) -> smthrs_mcp::Result<()> {
    /// let mut args = serde_json::Map::new();
    /// args.insert("language".into(), "rust".into());
    /// let prompt = client.get_prompt("code_review", args).await?;
    /// println!("{} messages (server-authored)", prompt.messages.len());
    /// # Ok(()) }
    /// ```
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult> {
        protocol::prompts::get(self.gate("prompts")?, name, &arguments).await
    }

    /// Completes the partial `value` of the argument `argument_name` of
    /// `reference` (a prompt, or a resource template) with `completion/complete`,
    /// given the values already chosen for other arguments in `context`
    /// (strings; none sent when empty). At most 100 values of at most 1024
    /// bytes each. `missing_capability` when the server does not declare
    /// `completions`.
    pub async fn complete(
        &self,
        reference: &CompletionRef,
        argument_name: &str,
        value: &str,
        context: Map<String, Value>,
    ) -> Result<Completion> {
        protocol::completion::complete(
            self.gate("completions")?,
            reference,
            argument_name,
            value,
            &context,
        )
        .await
    }

    /// Subscribes to the changes `interest` names (beyond-tools.md §1.6-§1.7):
    /// list changes and resource updates, delivered by the returned
    /// [`Subscription`] until it or the session ends.
    ///
    /// What is asked is what the host asks and the server declares
    /// (`tools.listChanged`, `prompts.listChanged`, `resources.listChanged`,
    /// `resources.subscribe`); [`Subscription::honoured`] says what the server
    /// agreed to. Legacy: list changes need nothing sent (servers send them
    /// unasked, on HTTP on the standalone GET stream or any response stream);
    /// each resource is subscribed with `resources/subscribe` (and again after
    /// an HTTP re-initialise). 2026-07-28: one `subscriptions/listen` whose
    /// acknowledgement (within `handshakeTimeoutMs`, a subset of the request)
    /// opens it; its events carry its id and nothing else is taken.
    ///
    /// Events are notices: the catalog stays frozen (a
    /// [`ToolsListChanged`](crate::events::ServerEvent::ToolsListChanged) means
    /// reconnect to see the new tools, and a pin decides), and nothing is
    /// fetched for the host. A notification that breaks a rule, was not asked
    /// for or comes past `maxNotificationsPerSecond` is dropped (and reported
    /// to the diagnostics observer), never the session. Equal events waiting
    /// for the host are coalesced; past `maxPendingEvents` distinct ones the
    /// subscription ends as [`Lagged`](crate::events::SubscriptionEnd::Lagged).
    ///
    /// Errors (nothing is left subscribed by a failed call):
    /// `missing_capability` when the server declares none of what was asked;
    /// `protocol_error` when a URI breaks the URI rules; `invalid_config` past
    /// `maxSubscriptions` open at once or `maxResourceSubscriptions` URIs;
    /// `timeout` when a 2026-07-28 server does not acknowledge in time;
    /// `invalid_response` when it acknowledges more than was asked; what a
    /// legacy `resources/subscribe` failed with.
    pub async fn subscribe(&self, interest: crate::events::Interest) -> Result<Subscription> {
        let link = &self.inner.link;
        if let Some(error) = link.core.terminal() {
            return Err(error.clone());
        }
        let feed = protocol::subscriptions::open(link, &self.inner.facts, interest).await?;
        Ok(Subscription::new(link.clone(), feed))
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
        &self.inner.link.core.limits
    }

    /// The pin this session's catalog is held to: the one it connected
    /// under, else its own catalog's, pinned from now on (a legacy HTTP
    /// re-initialise then fails with `catalog_changed` on another catalog).
    /// For the supervisor, whose first connect takes its pin this way.
    pub(crate) fn pin_own_catalog(&self) -> CatalogPin {
        let protocol = &self.inner.link.protocol;
        protocol
            .pin
            .get_or_init(|| CatalogPin::of(&self.inner.catalog))
            .clone()
    }

    /// The terminal error, once the session has ended.
    pub fn terminal_error(&self) -> Option<Error> {
        self.inner.link.core.terminal().cloned()
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
        let core = &self.inner.link.core;
        core.ended.cancelled().await;
        core.terminal()
            .cloned()
            .unwrap_or_else(|| Error::closed(SCOPE_CLOSED))
    }

    /// Calls `name` with `arguments`, bounded by `requestTimeoutMs`:
    /// [`Client::call_tool_with`] with `CallOptions::default()`.
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
    ///   retried (`session::protocol::modern`'s rules and bounds); where the server
    ///   offers the Tasks extension, a call it runs as a task is polled to its
    ///   result (`session::protocol::tasks`' rules and bounds; [`TaskMode`](crate::TaskMode)).
    /// - A result with `isError: true` is `Ok`.
    ///
    /// ```no_run
    /// # async fn run(client: smthrs_mcp::Client) -> smthrs_mcp::Result<()> {
    /// let args = serde_json::json!({"a": 2, "b": 3});
    /// let serde_json::Value::Object(args) = args else { unreachable!() };
    /// let result = client.call_tool("add", args).await?;
    /// if result.is_error {
    ///     eprintln!("the tool failed: {:?}", result.content); // data, not an Err
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn call_tool(&self, name: &str, arguments: Map<String, Value>) -> Result<ToolResult> {
        self.call_tool_with(name, arguments, &CallOptions::default())
            .await
    }

    /// [`Client::call_tool`] with options of this call's own
    /// ([`CallOptions`]: a timeout, a cancellation token, an event observer,
    /// `_meta`, whether it may run as a task). Options that break
    /// [`CallOptions`]' rules fail with `invalid_config` (a `_meta` too deep:
    /// `protocol_error`) before anything is sent. A cancelled token fails the
    /// call with `cancelled`, telling the server as dropping the future does.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<ToolResult> {
        let span = observe::call_span(self.server(), name);
        let started = observe::Stopwatch::start();
        let call = span.run(self.call_in(name, arguments, options));
        let call = std::pin::pin!(call);
        let result = self
            .unless_cancelled(options, || format!("tools/call {name:?}"), call)
            .await;
        let outcome = match &result {
            Ok(result) if result.is_error => "is_error",
            Ok(_) => "ok",
            Err(error) => error.kind().as_str(),
        };
        span.outcome(outcome, started);
        result
    }

    /// `call`, unless the options' token is cancelled first (then the call's
    /// future is dropped by the caller, which tells the server, and the result
    /// is `cancelled`). A token already cancelled sends nothing. The call is
    /// pinned by the caller: held here by reference, it is not stored twice.
    async fn unless_cancelled<T>(
        &self,
        options: &CallOptions,
        what: impl FnOnce() -> String,
        call: std::pin::Pin<&mut impl std::future::Future<Output = Result<T>>>,
    ) -> Result<T> {
        match &options.cancel {
            None => call.await,
            Some(token) => tokio::select! {
                biased;
                () = token.cancelled() => Err(Error::new(
                    ErrorKind::Cancelled,
                    format!(
                        "{} on server \"{}\" was cancelled by the caller",
                        what(),
                        self.server()
                    ),
                )),
                result = call => result,
            },
        }
    }

    /// Waits again for a task a call stopped waiting on and left running
    /// ([`TaskPolicy::Detach`](crate::TaskPolicy::Detach): the error's
    /// [`detached_task`](Error::detached_task)), or one a host stored: polls
    /// it (the first `tasks/get` at once) under the rules and bounds of a
    /// call's task (`maxTaskWaitMs` counted from now) until its result, which
    /// is read as a `tools/call` result. `options` give the token, the
    /// observer ([`CallEvent::Task`](crate::CallEvent::Task)) and the policy at
    /// the bounds; their timeout and `_meta` have no use here.
    ///
    /// A task of another server is refused (`invalid_config`: a task id is
    /// used only with the server that made it), and so is an id that breaks
    /// the task id rules; a server that does not offer the Tasks extension
    /// (2026-07-28) is `missing_capability`; one that no longer knows the
    /// task is `not_found`. Nothing is sent in the refused cases.
    pub async fn resume_task(
        &self,
        task: &crate::tasks::TaskHandle,
        options: &CallOptions,
    ) -> Result<ToolResult> {
        let link = &self.inner.link;
        if let Some(error) = link.core.terminal() {
            return Err(error.clone());
        }
        options.check(&link.core.server, &link.core.limits)?;
        let resume = std::pin::pin!(protocol::tasks::resume(link, task, options));
        self.unless_cancelled(options, || "resuming a task".to_owned(), resume)
            .await
    }

    async fn call_in(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<ToolResult> {
        let core = &self.inner.link.core;
        if let Some(error) = core.terminal() {
            return Err(error.clone());
        }
        let Some(tool) = self.inner.catalog.get(name) else {
            return Err(Error::new(
                ErrorKind::ToolNotFound,
                format!(
                    "tool {name:?} is not in the catalog of server \"{}\"",
                    core.server
                ),
            ));
        };
        options.check(&core.server, &core.limits)?;
        let timeout = options.request_timeout(&core.limits);
        let deadline = Instant::now() + timeout;
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
        let link = &self.inner.link;
        // Only a call that asks for progress registers a token.
        let progress = link.protocol.progress.register(options, &core.limits);
        let result =
            protocol::call_tool(link, tool, arguments, options, progress.as_ref(), deadline).await;
        // Held back by `maxRequestMs`: the deadline that passed was that cap.
        let capped = progress.as_ref().is_some_and(ProgressCall::capped);
        drop(progress);
        result.map_err(|error| {
            // The terminal error is final and reaches every caller unchanged;
            // only this request's own deadline gets the call-specific wording.
            if error.kind() == ErrorKind::Timeout
                && core.terminal().is_none()
                && !matches!(
                    error.detail(),
                    Some(crate::error::Detail::HostTimeout | crate::error::Detail::TaskGaveUp(_))
                )
            {
                Error::timeout(if capped {
                    format!(
                        "tools/call {name:?} on server \"{}\" reached maxRequestMs ({} ms), progress having restarted its {} ms timeout until then",
                        core.server,
                        core.limits.max_request_ms,
                        timeout.as_millis()
                    )
                } else {
                    format!(
                        "tools/call {name:?} on server \"{}\" timed out after {} ms",
                        core.server,
                        timeout.as_millis()
                    )
                })
            } else {
                error
            }
        })
    }

    /// Closes the session: gives the best-effort `tasks/cancel` of dropped
    /// calls still being sent a moment (at most 2 s), records "connection scope closed" as the terminal reason
    /// (so teardown does not report "stdin closed"), fails pending calls with it,
    /// writes the `notifications/cancelled` owed (for calls that timed out or were
    /// dropped, and for calls written and still unanswered now) within half a
    /// second, and tears the transport down (closes stdin, waits briefly, ends
    /// the child's process group; or sends `DELETE`, bounded by 2 s).
    pub async fn close(&self) {
        // A dropped call's best-effort `tasks/cancel` gets a moment first.
        let link = &self.inner.link;
        let bound = TASK_CANCEL_GRACE.min(link.core.limits.request_timeout());
        link.protocol.task_cancels.settle(bound).await;
        self.inner.link.core.close_scope();
        self.inner.wait_teardown().await;
    }

    /// The server's skills (the Skills extension, SEP-2640): every page of
    /// `skills/list`, each entry checked as the extension's rules say (name,
    /// root, a complete manifest of files within it, digests, the per-skill
    /// bounds `maxSkillFiles` and `maxSkillBytes`: a skill over one is declined,
    /// the listing stands), at most `maxSkills`. No file is read. `missing_capability` (nothing sent) when the server does
    /// not offer the extension and `resources`.
    pub async fn list_skills(&self) -> Result<SkillList> {
        self.skills_gate()?;
        protocol::skills::list(&self.inner.link).await
    }

    /// One skill by the URI of its `SKILL.md` (`skills/get`), listed or not;
    /// `not_found` when the server does not have it.
    pub async fn get_skill(&self, uri: &str) -> Result<Skill> {
        self.skills_gate()?;
        protocol::skills::get(&self.inner.link, uri).await
    }

    /// Loads `skill`: reads its `SKILL.md` and checks it against the entry (the
    /// size, the SHA-256 digest, and the YAML frontmatter field by field). Its
    /// other files are read only when asked for ([`LoadedSkill::read`]). A skill
    /// whose files are `"dynamic"` (no manifest to verify against) is declined
    /// with `invalid_response` (beyond-tools.md Q14).
    pub async fn load_skill(&self, skill: Skill) -> Result<LoadedSkill> {
        self.skills_gate()?;
        // Reads go only to the server that listed the skill (§5.3, §5.4).
        if skill.origin() != Some(self.server()) {
            return Err(Error::new(
                ErrorKind::InvalidConfig,
                format!(
                    "this skill was not listed by server \"{}\": load it through the client of the server that listed it",
                    self.server()
                ),
            ));
        }
        if skill.is_dynamic() {
            return Err(Error::invalid_response(format!(
                "server \"{}\" lists a skill whose files are dynamic: nothing can be verified, and such skills are declined",
                self.server()
            )));
        }
        let skill_md =
            protocol::skills::read_file(&self.inner.link, &skill, skill.uri(), 0).await?;
        let retrieved = skill_md.bytes().len() as u64;
        Ok(LoadedSkill {
            client: self.clone(),
            skill,
            skill_md,
            state: std::sync::Mutex::new(SkillReads {
                retrieved,
                failed: false,
            }),
        })
    }

    fn skills_gate(&self) -> Result<()> {
        if let Some(error) = self.inner.link.core.terminal() {
            return Err(error.clone());
        }
        protocol::skills::require_skills(&self.inner.facts, self.server())
    }
}

/// A skill loaded from its server ([`Client::load_skill`]): its entry, its
/// verified `SKILL.md`, and the reads of its other files, each checked against
/// the entry before it is sent (a file the entry does not list is never asked
/// for) and after it arrives (size, digest). Once a read fails a check, no
/// further file of the skill is read: load it again from a fresh listing or
/// [`Client::get_skill`].
#[derive(Debug)]
pub struct LoadedSkill {
    client: Client,
    skill: Skill,
    skill_md: VerifiedFile,
    state: std::sync::Mutex<SkillReads>,
}

#[derive(Debug)]
struct SkillReads {
    /// Bytes read so far.
    retrieved: u64,
    /// A read failed a check: nothing more is read.
    failed: bool,
}

impl LoadedSkill {
    /// The entry the skill was loaded from.
    pub fn skill(&self) -> &Skill {
        &self.skill
    }

    /// The verified `SKILL.md`.
    pub fn skill_md(&self) -> &VerifiedFile {
        &self.skill_md
    }

    /// Reads one of the skill's files, named relative to the skill's root
    /// (`references/FORMS.md`) or by its URI, and verifies it. A name that
    /// resolves outside the entry's files fails before anything is sent.
    pub async fn read(&self, reference: &str) -> Result<VerifiedFile> {
        let uri = resolve_reference(&self.skill, reference).map_err(Error::from)?;
        let retrieved = {
            let state = engine::lock(&self.state);
            if state.failed {
                return Err(Error::invalid_response(format!(
                    "a file of this skill of server \"{}\" failed a check: no further file is read",
                    self.client.server()
                )));
            }
            state.retrieved
        };
        let read =
            protocol::skills::read_file(&self.client.inner.link, &self.skill, &uri, retrieved)
                .await;
        let mut state = engine::lock(&self.state);
        match read {
            // Another read failed its check meanwhile: this one is not used.
            Ok(_) if state.failed => Err(Error::invalid_response(format!(
                "a file of this skill of server \"{}\" failed a check: no further file is read",
                self.client.server()
            ))),
            Ok(file) => {
                state.retrieved += file.bytes().len() as u64;
                Ok(file)
            }
            Err(error) => {
                if error.kind() == ErrorKind::InvalidResponse {
                    state.failed = true;
                }
                Err(error)
            }
        }
    }

    /// Reads every file the entry lists besides `SKILL.md`, in the entry's
    /// order, stopping at the first that fails. With `SKILL.md` first, the
    /// whole skill, verified.
    pub async fn read_all(&self) -> Result<Vec<VerifiedFile>> {
        let mut files = vec![self.skill_md.clone()];
        for file in self.skill.files().unwrap_or_default() {
            if file.uri() == self.skill.uri() {
                continue;
            }
            files.push(self.read(file.uri()).await?);
        }
        Ok(files)
    }
}

/// Merges `assumed` into `declared` member by member: an object into an
/// object, anything else replacing (a `declared` that is not an object
/// becomes one).
fn merge_into(declared: &mut Value, assumed: &Map<String, Value>) {
    if !declared.is_object() {
        *declared = Value::Object(Map::new());
    }
    let Value::Object(target) = declared else {
        return;
    };
    for (name, value) in assumed {
        match (target.get_mut(name), value) {
            (Some(existing @ Value::Object(_)), Value::Object(inner)) => {
                merge_into(existing, inner)
            }
            _ => {
                target.insert(name.clone(), value.clone());
            }
        }
    }
}
