//! Reconnect, never replay: a [`Supervisor`] keeps one server's session up,
//! for hosts that opt into it.
//!
//! A [`Client`] is one session, and a session ends once (the child exited,
//! the HTTP connection failed, the legacy HTTP session was lost and could not
//! be re-initialised, a protocol rule was broken). A supervisor watches its
//! session end ([`Client::closed`]) and connects again:
//!
//! 1. it waits a bounded, jittered delay ([`ReconnectPolicy`]);
//! 2. it asks the host's factory for a fresh [`ClientBuilder`] and transport,
//!    and pins the builder to the catalog it supervises (the host cannot
//!    forget the pin: the supervisor applies it to every connect, and to the
//!    legacy HTTP re-initialise of every session it makes);
//! 3. it connects: the handshake, the whole catalog walk and its rules, then
//!    the pin check (a different catalog fails with `catalog_changed`);
//! 4. only then it publishes the new session: [`Supervisor::client`] returns
//!    it from that moment on, never before.
//!
//! The pin is the host's ([`SupervisorBuilder::pin`]), else the catalog of the
//! first connect ([`CatalogPin::of`]).
//!
//! # Never replay
//!
//! Nothing is sent twice. [`Supervisor::call_tool`] runs a call once, on the
//! session published when it starts; a call in flight when that session ends
//! fails with the session's terminal error (`connection_closed` when the child
//! exited or the connection failed), and the supervisor reconnects in the
//! background. Whether the call may be made again is the host's decision (a
//! tool call is an action the server may have taken before it went away);
//! the supervisor never makes it.
//!
//! # What the supervisor does, by outcome
//!
//! | what happened | what the supervisor does |
//! | --- | --- |
//! | the session ended with `catalog_changed` (the legacy HTTP re-initialise found another catalog) | stops and stays down: [`SupervisorEvent::CatalogChanged`], and [`Supervisor::client`] fails with the pin's error |
//! | the session ended with any other error | reconnects (the run of attempts below) |
//! | an attempt connected and the catalog is the pinned one | publishes it: [`SupervisorEvent::Reconnected`] |
//! | an attempt failed with `catalog_changed` | tears it down, stops and stays down: [`SupervisorEvent::CatalogChanged`]; the changed session is never published |
//! | an attempt failed with `invalid_config` (the factory's configuration, or a builder naming another server) | stops: [`SupervisorEvent::GaveUp`] (it will not fix itself) |
//! | an attempt failed otherwise | [`SupervisorEvent::AttemptFailed`], then the next attempt |
//! | `max_attempts` attempts failed, or `give_up_after` passed | stops: [`SupervisorEvent::GaveUp`]; [`Supervisor::client`] fails with `connection_closed` naming the count and the option |
//! | [`Supervisor::close`], or the last handle dropped | ends the session or the attempt in progress, and stops |
//!
//! A catalog that changed is never swapped in silently. To accept it, the
//! host reviews it and starts a new supervisor (with the new catalog's pin,
//! or none to take whatever the first connect finds).
//!
//! A run of attempts counts on across sessions that did not last: a session
//! published and ended within [`ReconnectPolicy::reset_after`] does not start
//! the count over, so a server that accepts the connect and then fails at
//! once is given up on after `max_attempts`, like one that never connects.
//!
//! # Events
//!
//! A [`SupervisorObserver`] (an `Fn(&str, SupervisorEvent)` closure will do)
//! hears, from the supervisor's task, each step in order:
//! [`SessionEnded`](SupervisorEvent::SessionEnded), then per attempt an
//! [`Attempt`](SupervisorEvent::Attempt) followed by exactly one of
//! [`AttemptFailed`](SupervisorEvent::AttemptFailed),
//! [`Reconnected`](SupervisorEvent::Reconnected) or
//! [`CatalogChanged`](SupervisorEvent::CatalogChanged) (none when the
//! supervisor is closed meanwhile), and [`GaveUp`](SupervisorEvent::GaveUp)
//! after the last failure. Events carry error kinds and counts, never a
//! message: no server-authored text reaches them. At most two events per
//! attempt, so their number is bounded by the policy.
//!
//! # Subscriptions
//!
//! A [`Subscription`](crate::Subscription) belongs to its session: it ends
//! `Abrupt` when that session ends, and the supervisor does not open it
//! again. beyond-tools.md §1.7 asks a client that reconnects to re-send its
//! listens and refetch what they covered (nothing is replayed); here that is
//! the host's step, taken on [`SupervisorEvent::Reconnected`] with the new
//! session from [`Supervisor::client`]: only the host knows which
//! subscriptions it still wants, and it must refetch what they cover anyway,
//! since the changes during the gap are lost.
//!
//! ```no_run
//! # async fn run() -> smthrs_mcp::Result<()> {
//! use std::sync::Arc;
//! use smthrs_mcp::{Client, ReconnectPolicy, StdioCommand, Supervisor};
//! use smthrs_mcp::supervisor::SupervisorEvent;
//!
//! let supervisor = Supervisor::builder(|| async {
//!     Ok((
//!         Client::builder("demo"),
//!         StdioCommand::new("smthrs-mcp").arg("demo-server"),
//!     ))
//! })
//! .policy(ReconnectPolicy::default())
//! .observer(Arc::new(|server: &str, event: SupervisorEvent| {
//!     eprintln!("{server}: {event:?}");
//! }))
//! .connect()
//! .await?;
//!
//! let mut args = serde_json::Map::new();
//! args.insert("text".into(), "hello".into());
//! // Once, on the session up now; never sent again by the supervisor.
//! let result = supervisor.call_tool("echo", args).await?;
//! # let _ = result;
//! supervisor.close().await;
//! # Ok(()) }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, ErrorKind, Result};
use crate::pin::CatalogPin;
use crate::session::{Client, ClientBuilder, ToolResult};
use crate::transport::Transport;

/// The longest delay a policy may name (`initial_delay`, `max_delay`): past
/// it a wait is not a backoff any more.
pub const MAX_POLICY_DELAY: Duration = Duration::from_secs(24 * 60 * 60);

/// How a supervisor spreads its delays (see [`ReconnectPolicy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Jitter {
    /// "Full jitter": the delay is drawn uniformly from zero to the ceiling.
    /// Spreads the most: many clients of one restarted server do not come
    /// back together. The default.
    #[default]
    Full,
    /// "Equal jitter": half the ceiling, plus a draw from zero to the other
    /// half. Keeps a floor of half the ceiling between attempts.
    Equal,
}

/// When and how often a [`Supervisor`] connects again.
///
/// Attempt `n` (from 1) of a run waits a delay drawn under the ceiling
/// `min(max_delay, initial_delay × multiplier^(n-1))`, as [`Jitter`] says.
/// The defaults are the re-listen numbers of beyond-tools.md §1.7: from 1 s,
/// doubling, up to 60 s, at most 10 attempts (about five minutes of waiting
/// at most, before each attempt's own connect time).
///
/// ```
/// use std::time::Duration;
/// use smthrs_mcp::ReconnectPolicy;
///
/// let mut policy = ReconnectPolicy::default();
/// policy.max_attempts = 5;
/// policy.give_up_after = Some(Duration::from_secs(60));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ReconnectPolicy {
    /// The ceiling of the first attempt's delay (default 1 s). Positive, at
    /// most [`MAX_POLICY_DELAY`].
    pub initial_delay: Duration,
    /// The highest ceiling (default 60 s). At least `initial_delay`, at most
    /// [`MAX_POLICY_DELAY`].
    pub max_delay: Duration,
    /// How the ceiling grows per attempt (default 2.0). Finite, at least 1.
    pub multiplier: f64,
    /// How a delay is drawn under its ceiling (default [`Jitter::Full`]).
    pub jitter: Jitter,
    /// The most attempts in one run (default 10, at least 1); then the
    /// supervisor gives up.
    pub max_attempts: u32,
    /// The most time a run may take, from the session's end (default: none,
    /// `max_attempts` bounds it): no attempt whose delay would end past it
    /// starts, and an attempt still connecting when it passes is ended.
    /// Positive when set.
    pub give_up_after: Option<Duration>,
    /// How long a published session must last for the next run to count
    /// from 1 again (default 60 s); a session ending sooner continues the
    /// run it ended.
    pub reset_after: Duration,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            multiplier: 2.0,
            jitter: Jitter::Full,
            max_attempts: 10,
            give_up_after: None,
            reset_after: Duration::from_secs(60),
        }
    }
}

impl ReconnectPolicy {
    /// `invalid_config` naming the option when a value is nonsense (the
    /// field docs give each rule); [`SupervisorBuilder::connect`] checks it
    /// before anything is started.
    pub fn validate(&self) -> Result<()> {
        let refuse = |message: String| Err(Error::config(message));
        if self.initial_delay.is_zero() {
            return refuse(
                "ReconnectPolicy::initial_delay must be positive (a zero delay retries back to back)"
                    .into(),
            );
        }
        if self.max_delay > MAX_POLICY_DELAY || self.initial_delay > MAX_POLICY_DELAY {
            return refuse(format!(
                "ReconnectPolicy delays are at most {} s (initial_delay is {} ms, max_delay {} ms)",
                MAX_POLICY_DELAY.as_secs(),
                self.initial_delay.as_millis(),
                self.max_delay.as_millis()
            ));
        }
        if self.max_delay < self.initial_delay {
            return refuse(format!(
                "ReconnectPolicy::max_delay ({} ms) is below initial_delay ({} ms)",
                self.max_delay.as_millis(),
                self.initial_delay.as_millis()
            ));
        }
        if !self.multiplier.is_finite() || self.multiplier < 1.0 {
            return refuse(format!(
                "ReconnectPolicy::multiplier must be finite and at least 1 (it is {})",
                self.multiplier
            ));
        }
        if self.max_attempts == 0 {
            return refuse("ReconnectPolicy::max_attempts must be at least 1".into());
        }
        if self.give_up_after.is_some_and(|d| d.is_zero()) {
            return refuse("ReconnectPolicy::give_up_after must be positive when set".into());
        }
        Ok(())
    }

    /// The ceiling of attempt `attempt` (from 1).
    fn ceiling(&self, attempt: u32) -> Duration {
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let grown = self.initial_delay.as_secs_f64() * self.multiplier.powi(exponent);
        // `grown` may be infinite (never NaN: both factors are finite and
        // positive); `min` takes the cap then.
        Duration::from_secs_f64(grown.min(self.max_delay.as_secs_f64()))
    }

    /// The delay before attempt `attempt` (from 1), given a uniformly random
    /// `random`: a pure function of its inputs.
    fn delay(&self, attempt: u32, random: u64) -> Duration {
        let ceiling = self.ceiling(attempt).as_nanos();
        let (floor, span) = match self.jitter {
            Jitter::Full => (0, ceiling),
            Jitter::Equal => (ceiling / 2, ceiling - ceiling / 2),
        };
        let offset = span * u128::from(random) / u128::from(u64::MAX);
        // At most `MAX_POLICY_DELAY` in nanoseconds: fits a `u64`.
        Duration::from_nanos(u64::try_from(floor + offset).unwrap_or(u64::MAX))
    }
}

/// What a supervisor tells its observer: kinds and counts, no server text.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SupervisorEvent {
    /// The published session ended, with an error of this kind.
    SessionEnded {
        /// The kind of the session's terminal error.
        kind: ErrorKind,
    },
    /// Attempt `number` (from 1 in a run) starts after `delay`.
    Attempt {
        /// The attempt's number in the run.
        number: u32,
        /// The jittered delay waited before it.
        delay: Duration,
    },
    /// Attempt `number` failed with an error of this kind.
    AttemptFailed {
        /// The attempt's number in the run.
        number: u32,
        /// The kind of the error.
        kind: ErrorKind,
    },
    /// Attempt `attempt` connected, the catalog is the pinned one, and the
    /// new session is published.
    Reconnected {
        /// The attempt's number in the run.
        attempt: u32,
    },
    /// The catalog differs from the pin (found by an attempt, or by the
    /// running session's legacy HTTP re-initialise): the supervisor stopped
    /// and stays down; nothing was swapped in.
    CatalogChanged,
    /// The supervisor stopped trying: `max_attempts` or `give_up_after` was
    /// reached, or an attempt failed with `invalid_config`.
    GaveUp {
        /// Attempts made in the run.
        attempts: u32,
        /// The kind of the last failure.
        last: ErrorKind,
    },
}

/// Hears a supervisor's events ([`SupervisorEvent`]), from its task, with the
/// server's name: keep it fast, and bound what it keeps (a panic in it stops
/// the supervisor, as [`Supervisor::close`] would). Any
/// `Fn(&str, SupervisorEvent) + Send + Sync` closure is one.
pub trait SupervisorObserver: Send + Sync + 'static {
    /// Called once per event, in order.
    fn observe(&self, server: &str, event: SupervisorEvent);
}

impl<F> SupervisorObserver for F
where
    F: Fn(&str, SupervisorEvent) + Send + Sync + 'static,
{
    fn observe(&self, server: &str, event: SupervisorEvent) {
        self(server, event)
    }
}

/// What the factory makes: a builder and the transport to connect it over.
type Made = (ClientBuilder, Box<dyn Transport>);

/// The host's factory, boxed.
type Factory = Arc<dyn Fn() -> BoxFuture<'static, Result<Made>> + Send + Sync>;

/// Configures and starts a [`Supervisor`].
#[must_use]
pub struct SupervisorBuilder {
    factory: Factory,
    policy: ReconnectPolicy,
    pin: Option<CatalogPin>,
    observer: Option<Arc<dyn SupervisorObserver>>,
}

impl fmt::Debug for SupervisorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SupervisorBuilder")
            .field("policy", &self.policy)
            .field("pin", &self.pin.as_ref().map(CatalogPin::digest))
            .field("observer", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

impl SupervisorBuilder {
    /// Sets the reconnect policy (default: [`ReconnectPolicy::default`]).
    pub fn policy(mut self, policy: ReconnectPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Pins the catalog: the first connect and every reconnect must find
    /// exactly these tools (default: the catalog of the first connect).
    pub fn pin(mut self, pin: CatalogPin) -> Self {
        self.pin = Some(pin);
        self
    }

    /// Installs the observer of the supervisor's events (default: none).
    pub fn observer(mut self, observer: Arc<dyn SupervisorObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Validates the policy, connects once (no retry: a first connect that
    /// fails returns its error, and nothing is left running), takes the pin,
    /// and starts supervising. `invalid_config` when the policy is nonsense,
    /// before the factory is called.
    pub async fn connect(self) -> Result<Supervisor> {
        self.policy.validate()?;
        let cancel = CancellationToken::new();
        let client = attempt(&self.factory, self.pin.as_ref(), cancel.child_token()).await?;
        let server: Arc<str> = Arc::from(client.server());
        // The host's pin (the connect checked it), else the catalog found;
        // either way the session holds it from now on.
        let pin = client.pin_own_catalog();
        let (state, _) = watch::channel(State::Up(client.clone()));
        let shared = Arc::new(Shared {
            server,
            pin,
            policy: self.policy,
            state,
            cancel: cancel.clone(),
        });
        let done = CancellationToken::new();
        let task = Task {
            shared: shared.clone(),
            factory: self.factory,
            observer: self.observer,
            jitter: Rng::seeded(),
        };
        tokio::spawn(task.run(client, done.clone().drop_guard()));
        Ok(Supervisor {
            shared,
            scope: Arc::new(Scope { cancel, done }),
        })
    }
}

/// Calls the factory (given up when the supervisor closes) and connects what
/// it made, pinned, under `scope`.
async fn attempt(
    factory: &Factory,
    pin: Option<&CatalogPin>,
    scope: CancellationToken,
) -> Result<Client> {
    let made = tokio::select! {
        made = factory() => made,
        () = scope.cancelled() => return Err(closed_error()),
    };
    let (builder, transport) = made?;
    let builder = match pin {
        Some(pin) => builder.pin(pin.clone()),
        None => builder,
    };
    // Cancelling `scope` ends the connect (and waits for its teardown), so
    // the future is never dropped midway.
    builder.scope(scope).connect_boxed(transport).await
}

fn closed_error() -> Error {
    Error::closed("the supervisor was closed")
}

/// What the supervisor holds now.
enum State {
    /// A published session (it may have ended a moment ago).
    Up(Client),
    /// Between sessions: the attempt under way (0 before the first).
    Reconnecting { attempt: u32, ended: ErrorKind },
    /// Stopped for good: gave up, the catalog changed, or closed.
    Stopped(Error),
}

/// What the handles and the task share.
struct Shared {
    server: Arc<str>,
    pin: CatalogPin,
    policy: ReconnectPolicy,
    state: watch::Sender<State>,
    /// Cancelled by `close` or when the last handle drops; every session
    /// made is scoped to a child of it.
    cancel: CancellationToken,
}

impl Shared {
    fn reconnecting(&self, attempt: u32, ended: ErrorKind) -> Error {
        Error::closed(format!(
            "the session with server \"{}\" ended ({ended}); the supervisor is reconnecting (attempt {attempt} of {}, ReconnectPolicy::max_attempts)",
            self.server, self.policy.max_attempts
        ))
    }

    /// The published session, or why there is none.
    fn current(&self, state: &State) -> Option<Result<Client>> {
        if let State::Stopped(error) = state {
            return Some(Err(error.clone()));
        }
        if self.cancel.is_cancelled() {
            return Some(Err(closed_error()));
        }
        match state {
            State::Up(client) => match client.terminal_error() {
                None => Some(Ok(client.clone())),
                Some(_) => None,
            },
            State::Reconnecting { .. } => None,
            State::Stopped(error) => Some(Err(error.clone())),
        }
    }
}

/// Ends the supervisor when the last handle drops; `done` is cancelled when
/// its task has finished.
struct Scope {
    cancel: CancellationToken,
    done: CancellationToken,
}

impl Drop for Scope {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// One server's session, kept up: reconnected when it ends, with backoff,
/// the catalog checked against the pin before a new session is published.
/// Cheap to clone; every clone is the same supervisor. The module docs
/// describe it.
#[derive(Clone)]
pub struct Supervisor {
    shared: Arc<Shared>,
    scope: Arc<Scope>,
}

impl fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &*self.shared.state.borrow() {
            State::Up(_) => "up",
            State::Reconnecting { .. } => "reconnecting",
            State::Stopped(_) => "stopped",
        };
        f.debug_struct("Supervisor")
            .field("server", &self.shared.server)
            .field("state", &state)
            .field("pin", &self.shared.pin.digest())
            .finish()
    }
}

impl Supervisor {
    /// Starts configuring a supervisor over `factory`, which makes a fresh
    /// [`ClientBuilder`] and transport for each connect (the first and every
    /// reconnect). The supervisor adds the pin and its own scope to the
    /// builder; everything else (limits, protocol mode, handler,
    /// diagnostics) is the factory's. A factory error fails that attempt
    /// (`invalid_config` stops the supervisor). The builder must name the
    /// same server every time.
    pub fn builder<F, Fut, T>(factory: F) -> SupervisorBuilder
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(ClientBuilder, T)>> + Send + 'static,
        T: Transport,
    {
        let factory: Factory = Arc::new(move || {
            let made = factory();
            Box::pin(async move {
                let (builder, transport) = made.await?;
                Ok((builder, Box::new(transport) as Box<dyn Transport>))
            })
        });
        SupervisorBuilder {
            factory,
            policy: ReconnectPolicy::default(),
            pin: None,
            observer: None,
        }
    }

    /// The server's name (the first connect's).
    pub fn server(&self) -> &str {
        &self.shared.server
    }

    /// The pin every connect is checked against.
    pub fn pin(&self) -> &CatalogPin {
        &self.shared.pin
    }

    /// The published session now, or why there is none: `connection_closed`
    /// while reconnecting (naming the attempt) or once given up or closed;
    /// `catalog_changed` once a reconnect found another catalog. Take it
    /// afresh for each use: a session kept ends with its own error.
    pub fn client(&self) -> Result<Client> {
        let state = self.shared.state.borrow();
        match self.shared.current(&state) {
            Some(current) => current,
            None => Err(match &*state {
                State::Reconnecting { attempt, ended } => {
                    self.shared.reconnecting(*attempt, *ended)
                }
                _ => Error::closed(format!(
                    "the session with server \"{}\" ended; the supervisor is reconnecting",
                    self.shared.server
                )),
            }),
        }
    }

    /// Waits for a published session: at once when one is up, after a
    /// reconnect when one is under way; the final error when the supervisor
    /// has stopped. Bound the wait yourself (the policy bounds a run, the
    /// factory's futures are the host's).
    pub async fn ready(&self) -> Result<Client> {
        let mut state = self.shared.state.subscribe();
        loop {
            if let Some(current) = self.shared.current(&state.borrow_and_update()) {
                return current;
            }
            tokio::select! {
                changed = state.changed() => {
                    if changed.is_err() {
                        return Err(closed_error());
                    }
                }
                // Stopped or closed: the next look says which.
                () = self.shared.cancel.cancelled() => {}
            }
        }
    }

    /// Calls `name` once on the published session ([`Client::call_tool`]).
    /// Never retried, never sent again: without a session it fails at once
    /// (the error of [`client`](Self::client)), and a call in flight when
    /// the session ends fails with the session's terminal error while the
    /// supervisor reconnects.
    pub async fn call_tool(&self, name: &str, arguments: Map<String, Value>) -> Result<ToolResult> {
        self.client()?.call_tool(name, arguments).await
    }

    /// [`Supervisor::call_tool`] with options of the call's own
    /// ([`Client::call_tool_with`]), under the same rule: sent at most once.
    pub async fn call_tool_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        options: &crate::session::CallOptions,
    ) -> Result<ToolResult> {
        self.client()?
            .call_tool_with(name, arguments, options)
            .await
    }

    /// Ends the supervisor: the published session is closed
    /// ([`Client::close`]), a reconnect under way is ended (its delay cut
    /// short, its connect torn down, its child ended), and this returns once
    /// nothing of it runs. Later calls fail with `connection_closed`.
    /// Dropping the last handle does the same, without the wait.
    pub async fn close(&self) {
        self.scope.cancel.cancel();
        self.scope.done.cancelled().await;
    }
}

/// The supervisor's task: it owns the reconnecting.
struct Task {
    shared: Arc<Shared>,
    factory: Factory,
    observer: Option<Arc<dyn SupervisorObserver>>,
    jitter: Rng,
}

/// How a run of attempts ended.
enum Run {
    Published(Client),
    Stop(Error),
    Closed,
}

impl Task {
    fn emit(&self, event: SupervisorEvent) {
        if let Some(observer) = &self.observer {
            observer.observe(&self.shared.server, event);
        }
    }

    async fn run(mut self, first: Client, _done: tokio_util::sync::DropGuard) {
        let _finish = Finish(self.shared.clone());
        let cancel = self.shared.cancel.clone();
        let mut client = first;
        let mut published = Instant::now();
        // Attempts made in the current run (it goes on across a session
        // that did not last `reset_after`).
        let mut attempts = 0u32;
        loop {
            let ended = tokio::select! {
                ended = client.closed() => ended,
                () = cancel.cancelled() => break,
            };
            if cancel.is_cancelled() {
                break;
            }
            self.emit(SupervisorEvent::SessionEnded { kind: ended.kind() });
            if ended.kind() == ErrorKind::CatalogChanged {
                self.stop_changed(ended);
                return;
            }
            if published.elapsed() >= self.shared.policy.reset_after {
                attempts = 0;
            }
            self.shared.state.send_replace(State::Reconnecting {
                attempt: attempts,
                ended: ended.kind(),
            });
            match self.reconnect(&mut attempts, ended.kind()).await {
                Run::Published(next) => {
                    client = next;
                    published = Instant::now();
                }
                Run::Stop(error) => {
                    self.shared.state.send_replace(State::Stopped(error));
                    return;
                }
                Run::Closed => break,
            }
        }
        // Closed: the scope is cancelled, so the session is closing; wait
        // for its teardown.
        self.shared
            .state
            .send_replace(State::Stopped(closed_error()));
        client.close().await;
    }

    /// The run of attempts after a session ended with `ended`.
    async fn reconnect(&mut self, attempts: &mut u32, ended: ErrorKind) -> Run {
        let policy = self.shared.policy;
        let cancel = self.shared.cancel.clone();
        let give_up_at = policy
            .give_up_after
            .and_then(|after| Instant::now().checked_add(after));
        let mut last = ended;
        loop {
            let number = attempts.saturating_add(1);
            let delay = policy.delay(number, self.jitter.next());
            let out_of_time = give_up_at.is_some_and(|at| Instant::now() + delay >= at);
            if number > policy.max_attempts || out_of_time {
                return self.give_up(*attempts, last, out_of_time);
            }
            *attempts = number;
            self.emit(SupervisorEvent::Attempt { number, delay });
            self.shared.state.send_replace(State::Reconnecting {
                attempt: number,
                ended,
            });
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = cancel.cancelled() => return Run::Closed,
            }
            let scope = cancel.child_token();
            let connecting = attempt(&self.factory, Some(&self.shared.pin), scope.clone());
            let result = match give_up_at {
                None => connecting.await,
                Some(at) => {
                    tokio::pin!(connecting);
                    tokio::select! {
                        result = &mut connecting => result,
                        () = tokio::time::sleep_until(at) => {
                            // Ended, and waited for: nothing outlives the run.
                            scope.cancel();
                            if let Ok(late) = connecting.await {
                                late.close().await;
                            }
                            if cancel.is_cancelled() {
                                return Run::Closed;
                            }
                            self.emit(SupervisorEvent::AttemptFailed { number, kind: ErrorKind::Timeout });
                            return self.give_up(number, ErrorKind::Timeout, true);
                        }
                    }
                }
            };
            if cancel.is_cancelled() {
                if let Ok(late) = result {
                    late.close().await;
                }
                return Run::Closed;
            }
            match result {
                Ok(client) if client.server() != &*self.shared.server => {
                    client.close().await;
                    let error = Error::config(format!(
                        "the supervisor's factory made a client for server \"{}\"; it supervises server \"{}\"",
                        client.server(),
                        self.shared.server
                    ));
                    return self.refused(number, error);
                }
                Ok(client) => {
                    self.shared.state.send_replace(State::Up(client.clone()));
                    self.emit(SupervisorEvent::Reconnected { attempt: number });
                    return Run::Published(client);
                }
                Err(error) if error.kind() == ErrorKind::CatalogChanged => {
                    self.emit(SupervisorEvent::CatalogChanged);
                    return Run::Stop(self.changed_error(error));
                }
                Err(error) if error.kind() == ErrorKind::InvalidConfig => {
                    return self.refused(number, error);
                }
                Err(error) => {
                    last = error.kind();
                    self.emit(SupervisorEvent::AttemptFailed { number, kind: last });
                }
            }
        }
    }

    fn give_up(&self, attempts: u32, last: ErrorKind, out_of_time: bool) -> Run {
        self.emit(SupervisorEvent::GaveUp { attempts, last });
        let policy = &self.shared.policy;
        let bound = match policy.give_up_after {
            Some(after) if out_of_time => format!(
                "ReconnectPolicy::give_up_after ({} ms) passed",
                after.as_millis()
            ),
            _ => format!("ReconnectPolicy::max_attempts is {}", policy.max_attempts),
        };
        Run::Stop(Error::closed(format!(
            "the supervisor gave up reconnecting to server \"{}\" after {attempts} attempts (the last ended with {last}); {bound}",
            self.shared.server
        )))
    }

    /// Attempt `number` was refused as `invalid_config` (no later attempt
    /// could do better): reported, and the run stops with `error`.
    fn refused(&self, number: u32, error: Error) -> Run {
        let kind = ErrorKind::InvalidConfig;
        self.emit(SupervisorEvent::AttemptFailed { number, kind });
        self.emit(SupervisorEvent::GaveUp {
            attempts: number,
            last: kind,
        });
        Run::Stop(error)
    }

    fn changed_error(&self, error: Error) -> Error {
        let message = format!(
            "{}; the supervisor stays down (start a new one to accept the new catalog)",
            error.message()
        );
        error.with_message(message)
    }

    fn stop_changed(&self, error: Error) {
        self.emit(SupervisorEvent::CatalogChanged);
        let error = self.changed_error(error);
        self.shared.state.send_replace(State::Stopped(error));
    }
}

/// However the task ends (an observer that panicked included), the
/// supervisor is stopped and every session it made is closed.
struct Finish(Arc<Shared>);

impl Drop for Finish {
    fn drop(&mut self) {
        self.0.cancel.cancel();
        self.0.state.send_if_modified(|state| {
            if matches!(state, State::Stopped(_)) {
                return false;
            }
            *state = State::Stopped(closed_error());
            true
        });
    }
}

/// Jitter's randomness: splitmix64, seeded per supervisor from the standard
/// library's per-process random hash keys. Not for secrets, only spreading.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(0x5eed);
        Rng(hasher.finish())
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests;
