//! Many servers as one: [`ClientGroup`] connects N servers with bounded
//! concurrency, composes their tools into one [`FlowCatalog`], routes calls by
//! flow name, and closes them together.
//!
//! ```no_run
//! use smthrs_mcp::group::ClientGroup;
//! use smthrs_mcp::transport::http::{HttpTransport, SharedHttpClient};
//! use smthrs_mcp::{Client, StdioCommand};
//!
//! # async fn run() -> Result<(), smthrs_mcp::Error> {
//! let pool = SharedHttpClient::new(); // one connection pool for every HTTP server
//! let mut group = ClientGroup::builder().max_concurrent_connects(4);
//! group = group.add(
//!     Client::builder("files"),
//!     StdioCommand::new("mcp-server-files").arg("/srv/project"),
//! );
//! for name in ["tracker", "wiki"] {
//!     let url = format!("https://mcp.example/{name}/mcp");
//!     let transport = HttpTransport::builder(name, url).http_client(pool.clone()).build()?;
//!     group = group.add(Client::builder(name), transport);
//! }
//! let group = group.connect().await?; // every server, or none
//! let mut args = serde_json::Map::new();
//! args.insert("query".into(), "open bugs".into());
//! let result = group.call("mcp/tracker/search", args).await?;
//! # let _ = result;
//! group.close().await; // all in parallel
//! # Ok(()) }
//! ```
//!
//! # Connecting
//!
//! [`ClientGroupBuilder::connect`] checks what can be checked first (server
//! names unique, projection prefixes not empty, the options), then connects every
//! entry, at most [`max_concurrent_connects`](ClientGroupBuilder::max_concurrent_connects)
//! at once (default [`DEFAULT_MAX_CONCURRENT_CONNECTS`]): a connect holds its slot
//! from the spawn or first request to the end of its catalog walk. The bound keeps
//! thirty stdio servers from starting in the same instant and competing for the
//! machine (a slow start then times out a handshake that would have passed
//! alone), and keeps a group from opening hundreds of HTTP connections at once.
//! Connects start in entry order; they finish in any order.
//!
//! It returns every server connected, or the first failure: the error of the
//! first connect that failed (its message names the server, `server "x": ...`),
//! after every other connect was stopped (dropped: its session ended, its child
//! killed) and every session already connected was closed, in parallel, and
//! after all of them were torn down, so nothing the group started is still
//! running when the error arrives. A projection failure after every server
//! connected (an `include` naming a tool the catalog lacks, two flows of one
//! name) closes them all the same ([`GroupError::Projection`]).
//!
//! **Cancel safety.** Dropping the future of `connect` (a timeout around it, a
//! caller that gave up) drops every pending connect and every client already
//! connected: each session ends as a dropped [`Client`] does, its child killed
//! and its HTTP session deleted by the teardown that runs on the runtime
//! (a dropped future cannot wait for it; the stdio teardown takes at most its
//! graces).
//!
//! # One HTTP client
//!
//! A group does not build transports: build every HTTP one with one
//! [`SharedHttpClient`](crate::transport::http::SharedHttpClient)
//! ([`HttpTransportBuilder::http_client`](crate::transport::http::HttpTransportBuilder::http_client)),
//! and servers on one origin reuse each other's idle connections. What a request
//! carries stays per transport (egress policy, token, session): see that type.
//!
//! # One era cache per origin
//!
//! With [`ProtocolMode::Auto`] each connect probes with `server/discover`
//! before the legacy `initialize` (see `session::protocol::negotiate`); against
//! a legacy server that is one round trip spent to learn the era. Servers behind
//! one origin (scheme, host, port: a gateway serving many servers under paths)
//! usually share their era, so the group keeps an [`EraCache`]: once a server
//! of origin O was found legacy (`auto` fell back), the next `auto` connect to O
//! skips the probe and sends `initialize` at once. To make that deterministic,
//! the first `auto` entry of each HTTP origin leads: later `auto` entries of that
//! origin wait for its connect to end before taking a slot (so a slow leader
//! delays the rest of its origin, never the other origins). When the cached era
//! is wrong for a server (its `initialize` fails with a JSON-RPC error, -32022,
//! an HTTP `4xx`, a version or a result refused), that session is dropped, the
//! full negotiation runs once on a fresh one, and the entry is dropped from the
//! cache; a server found modern drops it too. A timeout, `401`/`403`, a closed
//! connection, TLS or egress failure says nothing about the era and fails the
//! connect as it would have. Stdio and duplex servers are never cached (each is
//! a command of its own), nor entries pinned to `legacy` or `2026-07-28`.
//!
//! The trade-off: a server that speaks both eras, behind an origin whose leader
//! is legacy-only, is spoken to in legacy. Pin such a server
//! ([`ClientBuilder::protocol`]) or turn the cache off
//! ([`ClientGroupBuilder::without_era_cache`]). A host that connects groups
//! again (after a restart) may keep one cache across them
//! ([`ClientGroupBuilder::era_cache`]).
//!
//! # Calls
//!
//! The group's [`FlowCatalog`] is [`flows::compose`] over every client's
//! projection ([`flows::source_from_client`]), in entry order.
//! [`ClientGroup::call`] finds the flow and calls its tool on its server's
//! client directly, so a failure keeps the session's own kind (`timeout`,
//! `connection_closed`, ...) and names the server; an unknown flow name is
//! `tool_not_found` and reaches no server.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::{Map, Value};
use tokio::sync::{Semaphore, watch};

use crate::error::{Error, Result, truncate};
use crate::flows::{self, FlowCatalog, ProjectionError, ProjectionOptions};
use crate::session::client::TeardownLog;
use crate::session::{CallOptions, Client, ClientBuilder, Era, ProtocolMode, ToolResult};
use crate::transport::{self, Transport};

/// How many connects a group runs at once unless told otherwise
/// ([`ClientGroupBuilder::max_concurrent_connects`]).
pub const DEFAULT_MAX_CONCURRENT_CONNECTS: usize = 8;

/// An origin: scheme, lower-cased host, effective port.
type Origin = (&'static str, String, u16);

/// The origins whose servers were found legacy (see the [module docs](self)).
/// Cheap to clone: clones share the cache.
#[derive(Clone, Default)]
pub struct EraCache {
    legacy: Arc<Mutex<HashSet<Origin>>>,
}

impl EraCache {
    /// An empty cache.
    pub fn new() -> EraCache {
        EraCache::default()
    }

    /// Whether the origin of `url` (an absolute `http`/`https` URL) is known
    /// as legacy; `false` for anything else.
    pub fn knows_legacy(&self, url: &str) -> bool {
        url.parse::<http::Uri>()
            .ok()
            .and_then(|uri| crate::http::origin_of(&uri))
            .is_some_and(|origin| self.contains(&origin))
    }

    /// How many origins are known as legacy.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no origin is known.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Forgets every origin.
    pub fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<Origin>> {
        self.legacy.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn contains(&self, origin: &Origin) -> bool {
        self.lock().contains(origin)
    }

    /// Records what a connect to `origin` found (`hinted`: it was told the
    /// origin is legacy).
    fn learn(&self, origin: &Origin, hinted: bool, outcome: &Result<Client>) {
        match outcome {
            Ok(client) if client.era() == Era::Legacy => {
                self.lock().insert(origin.clone());
            }
            Ok(_) => {
                self.lock().remove(origin);
            }
            Err(_) if hinted => {
                self.lock().remove(origin);
            }
            Err(_) => {}
        }
    }
}

impl fmt::Debug for EraCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EraCache")
            .field("legacy_origins", &self.len())
            .finish()
    }
}

/// One server of a group: how to connect it, and how to project its tools.
pub struct GroupEntry {
    builder: ClientBuilder,
    transport: Box<dyn Transport>,
    projection: ProjectionOptions,
}

impl GroupEntry {
    /// The server `builder` configures (its name is the server's name in the
    /// group), reached over `transport`, projected with the default options.
    pub fn new(builder: ClientBuilder, transport: impl Transport) -> GroupEntry {
        GroupEntry::boxed(builder, Box::new(transport))
    }

    /// [`GroupEntry::new`] for an already boxed transport.
    pub fn boxed(builder: ClientBuilder, transport: Box<dyn Transport>) -> GroupEntry {
        GroupEntry {
            builder,
            transport,
            projection: ProjectionOptions::default(),
        }
    }

    /// Projects the server's tools with `options` (default: every tool, under
    /// `mcp/<server>`).
    pub fn projection(mut self, options: ProjectionOptions) -> GroupEntry {
        self.projection = options;
        self
    }
}

impl fmt::Debug for GroupEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupEntry")
            .field("builder", &self.builder)
            .field("projection", &self.projection)
            .finish_non_exhaustive()
    }
}

/// Why a group did not connect. Every session the group started was ended
/// before it was returned.
#[derive(Debug)]
#[non_exhaustive]
pub enum GroupError {
    /// A server failed to connect (the message names it), or the group's own
    /// options were refused before anything started (`invalid_config`).
    Connect(Error),
    /// Every server connected, but a projection or composition rule failed (an
    /// `include` naming a tool the catalog lacks, two flows of one name), or a
    /// projection prefix was empty (checked before anything started).
    Projection(ProjectionError),
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupError::Connect(error) => fmt::Display::fmt(error, f),
            GroupError::Projection(error) => fmt::Display::fmt(error, f),
        }
    }
}

impl std::error::Error for GroupError {}

/// A projection failure becomes `invalid_config` with the same message.
impl From<GroupError> for Error {
    fn from(error: GroupError) -> Error {
        match error {
            GroupError::Connect(error) => error,
            GroupError::Projection(error) => error.into(),
        }
    }
}

/// Configures and connects a [`ClientGroup`] (see the [module docs](self)).
#[must_use = "a builder does nothing until connect() is called"]
pub struct ClientGroupBuilder {
    entries: Vec<GroupEntry>,
    max_concurrent_connects: usize,
    era_cache: Option<EraCache>,
}

impl ClientGroupBuilder {
    /// Adds a server with the default projection ([`GroupEntry::new`]).
    pub fn add(self, builder: ClientBuilder, transport: impl Transport) -> Self {
        self.entry(GroupEntry::new(builder, transport))
    }

    /// Adds a server.
    pub fn entry(mut self, entry: GroupEntry) -> Self {
        self.entries.push(entry);
        self
    }

    /// How many connects run at once, at least 1 (0 fails the connect with
    /// `invalid_config` before anything starts; `usize::MAX` means no bound).
    /// Default: [`DEFAULT_MAX_CONCURRENT_CONNECTS`].
    pub fn max_concurrent_connects(mut self, max: usize) -> Self {
        self.max_concurrent_connects = max;
        self
    }

    /// Uses `cache` as the era cache, shared with whoever else holds a clone
    /// (another group, a later connect). Default: a new cache for this group.
    pub fn era_cache(mut self, cache: EraCache) -> Self {
        self.era_cache = Some(cache);
        self
    }

    /// Turns the era cache off: every `auto` connect probes, and no entry
    /// waits for another.
    pub fn without_era_cache(mut self) -> Self {
        self.era_cache = None;
        self
    }

    /// Checks the entries and options, then connects every server (see the
    /// [module docs](self) for the order, the bound, and what a failure or a
    /// dropped future leaves behind: nothing).
    pub async fn connect(self) -> std::result::Result<ClientGroup, GroupError> {
        if self.max_concurrent_connects == 0 {
            return Err(GroupError::Connect(Error::config(
                "max_concurrent_connects is 0; a group needs at least 1 connect at a time",
            )));
        }
        let mut names = HashSet::new();
        for entry in &self.entries {
            let name = entry.builder.server_name();
            if !names.insert(name) {
                return Err(GroupError::Connect(Error::config(format!(
                    "server {:?} is added to the group twice; server names must be unique",
                    truncate(name, crate::session::MAX_SERVER_NAME_BYTES)
                ))));
            }
            entry
                .projection
                .validate()
                .map_err(GroupError::Projection)?;
        }
        let count = self.entries.len();
        // Past the semaphore's ceiling `Semaphore::new` would panic; no group
        // has that many entries, so the ceiling bounds nothing real.
        let permits = self.max_concurrent_connects.min(Semaphore::MAX_PERMITS);
        let slots = Arc::new(Semaphore::new(permits));
        let teardowns = TeardownLog::default();
        let cache = self.era_cache;
        // The first `auto` entry of each HTTP origin leads; the others wait
        // for its connect (before taking a slot).
        let mut leaders: HashMap<Origin, watch::Receiver<bool>> = HashMap::new();
        let mut projections = Vec::with_capacity(count);
        let mut pending = FuturesUnordered::new();
        for (index, entry) in self.entries.into_iter().enumerate() {
            let GroupEntry {
                builder,
                transport,
                projection,
            } = entry;
            projections.push(projection);
            let origin = match &cache {
                Some(_) if builder.protocol_mode() == ProtocolMode::Auto => {
                    transport::origin_of(&*transport)
                }
                _ => None,
            };
            let (lead, follow) = match &origin {
                Some(origin) => match leaders.get(origin) {
                    Some(leader) => (None, Some(leader.clone())),
                    None => {
                        let (done, waiting) = watch::channel(false);
                        leaders.insert(origin.clone(), waiting);
                        (Some(done), None)
                    }
                },
                None => (None, None),
            };
            let slots = slots.clone();
            let teardowns = teardowns.clone();
            let cache = cache.clone();
            pending.push(async move {
                if let Some(mut leader) = follow {
                    // Ends when the leader's connect ended (or was dropped).
                    let _ = leader.wait_for(|done| *done).await;
                }
                // The semaphore is never closed: `Err` cannot happen.
                let _slot = slots.acquire().await.ok();
                let hinted = match (&cache, &origin) {
                    (Some(cache), Some(origin)) => cache.contains(origin),
                    _ => false,
                };
                let server = builder.server_name().to_owned();
                let outcome = builder
                    .known_legacy(hinted)
                    .log_teardowns(teardowns)
                    .connect_boxed(transport)
                    .await
                    .map_err(|error| named(&server, error));
                if let (Some(cache), Some(origin)) = (&cache, &origin) {
                    cache.learn(origin, hinted, &outcome);
                }
                if let Some(done) = lead {
                    let _ = done.send(true);
                }
                (index, outcome)
            });
        }
        let mut connected: Vec<Option<Client>> = (0..count).map(|_| None).collect();
        while let Some((index, outcome)) = pending.next().await {
            match outcome {
                Ok(client) => connected[index] = Some(client),
                Err(error) => {
                    // The first failure: stop the others (dropping a connect
                    // ends what it opened), close the connected, and wait
                    // until everything started is torn down.
                    drop(pending);
                    let connected: Vec<Client> = connected.into_iter().flatten().collect();
                    close_all(&connected).await;
                    teardowns.wait_all().await;
                    return Err(GroupError::Connect(error));
                }
            }
        }
        let clients: Vec<Client> = connected.into_iter().flatten().collect();
        let mut sources = Vec::with_capacity(clients.len());
        for (client, projection) in clients.iter().zip(&projections) {
            match flows::source_from_client(client, projection) {
                Ok(source) => sources.push(source),
                Err(error) => {
                    close_all(&clients).await;
                    return Err(GroupError::Projection(error));
                }
            }
        }
        let flows = match flows::compose(sources) {
            Ok(flows) => flows,
            Err(error) => {
                close_all(&clients).await;
                return Err(GroupError::Projection(error));
            }
        };
        let by_server = clients
            .iter()
            .enumerate()
            .map(|(index, client)| (client.server().to_owned(), index))
            .collect();
        Ok(ClientGroup {
            clients,
            by_server,
            flows,
        })
    }
}

impl fmt::Debug for ClientGroupBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientGroupBuilder")
            .field("entries", &self.entries)
            .field("max_concurrent_connects", &self.max_concurrent_connects)
            .field("era_cache", &self.era_cache)
            .finish()
    }
}

/// Connected servers, their composed flows, and the routing of calls by flow
/// name (see the [module docs](self)). Dropping it drops every client (each
/// session ends as a dropped [`Client`] does); [`close`](Self::close) ends
/// them and waits.
pub struct ClientGroup {
    clients: Vec<Client>,
    by_server: HashMap<String, usize>,
    flows: FlowCatalog,
}

impl ClientGroup {
    /// Starts configuring a group.
    ///
    /// ```no_run
    /// use smthrs_mcp::group::ClientGroup;
    /// use smthrs_mcp::{Client, HttpTransport, StdioCommand};
    ///
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let tracker = HttpTransport::builder("tracker", "https://mcp.tracker.example/mcp").build()?;
    /// let group = ClientGroup::builder()
    ///     .max_concurrent_connects(4)
    ///     .add(Client::builder("demo"), StdioCommand::new("smthrs-mcp").arg("demo-server"))
    ///     .add(Client::builder("tracker"), tracker)
    ///     .connect() // every server, or none
    ///     .await?;
    /// println!("{} flows", group.flows().len());
    /// group.close().await;
    /// # Ok(()) }
    /// ```
    pub fn builder() -> ClientGroupBuilder {
        ClientGroupBuilder {
            entries: Vec::new(),
            max_concurrent_connects: DEFAULT_MAX_CONCURRENT_CONNECTS,
            era_cache: Some(EraCache::new()),
        }
    }

    /// The clients, in entry order.
    pub fn clients(&self) -> &[Client] {
        &self.clients
    }

    /// The client of the server named `server`.
    pub fn client(&self, server: &str) -> Option<&Client> {
        self.by_server
            .get(server)
            .map(|&index| &self.clients[index])
    }

    /// The composed flows: every server's projection, in entry order.
    pub fn flows(&self) -> &FlowCatalog {
        &self.flows
    }

    /// How many servers the group holds.
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    /// True for a group of no server.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// Calls the flow named `flow` with `arguments`: its tool, on its server's
    /// client ([`Client::call_tool`], bounded by that server's
    /// `requestTimeoutMs`). A failure keeps the session's kind and its message
    /// names the server; an unknown flow name is `tool_not_found`, sending
    /// nothing. A tool result with `isError: true` is `Ok`.
    pub async fn call(&self, flow: &str, arguments: Map<String, Value>) -> Result<ToolResult> {
        self.call_with(flow, arguments, &CallOptions::default())
            .await
    }

    /// [`call`](Self::call) with per-call options ([`Client::call_tool_with`]:
    /// a timeout, a cancellation token, an event observer, `_meta`, whether
    /// the call may run as a task).
    pub async fn call_with(
        &self,
        flow: &str,
        arguments: Map<String, Value>,
        options: &CallOptions,
    ) -> Result<ToolResult> {
        let Some(found) = self.flows.get(flow) else {
            return Err(flows::unknown_flow(flow));
        };
        let declaration = &found.declaration;
        let Some(client) = self.client(&declaration.server) else {
            return Err(flows::unknown_flow(flow));
        };
        client
            .call_tool_with(&declaration.tool, arguments, options)
            .await
            .map_err(|error| named(&declaration.server, error))
    }

    /// Ends every session, in parallel, and waits until each is torn down
    /// ([`Client::close`]).
    pub async fn close(&self) {
        close_all(&self.clients).await;
    }
}

impl fmt::Debug for ClientGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientGroup")
            .field("clients", &self.clients)
            .field("flows", &self.flows.len())
            .finish()
    }
}

async fn close_all(clients: &[Client]) {
    futures_util::future::join_all(clients.iter().map(Client::close)).await;
}

/// `server "x": <message>`, unless the message already names the server.
fn named(server: &str, error: Error) -> Error {
    if error.message().contains(&format!("server \"{server}\"")) {
        error
    } else {
        let message = format!("server \"{server}\": {}", error.message());
        error.with_message(message)
    }
}
