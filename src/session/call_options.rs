//! What a host sets for one `tools/call` ([`CallOptions`]): its own timeout, a
//! cancellation token, an observer of what happens while it runs ([`CallEvent`]),
//! `_meta` members of the host's own, and whether the call may run as a task
//! ([`TaskMode`]). The session-wide [`Limits`](crate::Limits) stay the defaults:
//! [`Client::call_tool`](super::Client::call_tool) is
//! [`Client::call_tool_with`](super::Client::call_tool_with) with
//! `CallOptions::default()`.
//!
//! The rules, checked before anything is sent (a broken one is `invalid_config`,
//! and the session stays open):
//!
//! - a timeout is positive and at most `maxRequestMs`;
//! - the host's `_meta` members never name what the client writes itself:
//!   `progressToken`, or any key in the `io.modelcontextprotocol/` namespace;
//!   their values nest no deeper than the JSON depth bound allows, and the frame
//!   stays under `maxOutboundFrameBytes` like the arguments.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::json_bounds::value_depth;
use crate::limits::{Limits, MAX_JSON_DEPTH};
use crate::tasks::TaskUpdate;

/// The `_meta` key prefix the protocol reserves for itself.
const RESERVED_META_PREFIX: &str = "io.modelcontextprotocol/";

/// The `_meta` key a request's progress token travels in.
pub(crate) const PROGRESS_TOKEN_KEY: &str = "progressToken";

/// Options for one `tools/call`; `CallOptions::default()` is what
/// [`Client::call_tool`](super::Client::call_tool) uses.
///
/// ```
/// use std::time::Duration;
/// use smthrs_mcp::{CallOptions, CancellationToken, TaskMode};
///
/// let stop = CancellationToken::new();
/// let options = CallOptions::new()
///     .timeout(Duration::from_secs(120))
///     .cancel_on(stop.clone())
///     .on_event(|event| eprintln!("{event:?}"))
///     .task(TaskMode::Never);
/// # let _ = options;
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) cancel: Option<CancellationToken>,
    pub(crate) observer: Option<Arc<dyn Fn(CallEvent) + Send + Sync>>,
    pub(crate) reset_timeout_on_progress: bool,
    pub(crate) meta: Option<Map<String, Value>>,
    pub(crate) task: TaskMode,
    pub(crate) task_policy: TaskPolicy,
}

impl fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `_meta` values are the host's and may be anything: only their keys.
        let meta_keys: Option<Vec<&str>> = self
            .meta
            .as_ref()
            .map(|meta| meta.keys().map(String::as_str).collect());
        f.debug_struct("CallOptions")
            .field("timeout", &self.timeout)
            .field("cancel", &self.cancel.is_some())
            .field("observer", &self.observer.is_some())
            .field("reset_timeout_on_progress", &self.reset_timeout_on_progress)
            .field("meta_keys", &meta_keys)
            .field("task", &self.task)
            .field("task_policy", &self.task_policy)
            .finish()
    }
}

impl CallOptions {
    /// The defaults: `requestTimeoutMs`, no token, no observer, no `_meta` of the
    /// host's, [`TaskMode::Auto`].
    pub fn new() -> CallOptions {
        CallOptions::default()
    }

    /// This call's timeout in place of `requestTimeoutMs` (positive, at most
    /// `maxRequestMs`). It bounds the `tools/call` request and its input rounds;
    /// a call that became a task waits under the task's own bounds (see
    /// [`TaskMode`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Cancels the call when `token` is cancelled: the call fails with
    /// `cancelled`, and the server is told as dropping the call's future tells it
    /// (`notifications/cancelled`, or the exchange cut on 2026-07-28 HTTP; a task
    /// gets `tasks/cancel`).
    pub fn cancel_on(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Calls `observer` with what happens while the call runs (progress the
    /// server reports, a task's status). It runs on the session's reader: keep
    /// it short and never block in it.
    ///
    /// A call with an observer sends a progress token
    /// (`params._meta.progressToken`, a number unique in the session) so that
    /// the server may report progress; the notifications that name it are
    /// checked (see [`Progress`]) and delivered in order as
    /// [`CallEvent::Progress`] until the call returns. What breaks a rule is
    /// dropped and reported to the diagnostics observer, never fatal. A call
    /// without an observer sends no token.
    pub fn on_event(mut self, observer: impl Fn(CallEvent) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(observer));
        self
    }

    /// An accepted progress notification restarts this call's timeout (its
    /// own, else `requestTimeoutMs`; off by default); `maxRequestMs` from the
    /// call's start still ends it, with a `timeout` naming that option. A call
    /// with this set sends a progress token, observer or not; a notification
    /// dropped by the rules of [`Progress`] restarts nothing.
    pub fn reset_timeout_on_progress(mut self, reset: bool) -> Self {
        self.reset_timeout_on_progress = reset;
        self
    }

    /// Members the host adds to the request's `params._meta` (see the module docs
    /// for the keys refused).
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Whether the call may run as a task (default [`TaskMode::Auto`]).
    pub fn task(mut self, mode: TaskMode) -> Self {
        self.task = mode;
        self
    }

    /// What happens to the call's task when the call stops waiting on it at a
    /// task bound (`maxTaskWaitMs`, `maxTaskPolls`, the TTL backstop): default
    /// [`TaskPolicy::Cancel`].
    pub fn task_policy(mut self, policy: TaskPolicy) -> Self {
        self.task_policy = policy;
        self
    }

    /// The call's deadline budget: its own timeout or `requestTimeoutMs`.
    pub(crate) fn request_timeout(&self, limits: &Limits) -> Duration {
        self.timeout.unwrap_or_else(|| limits.request_timeout())
    }

    /// Checks the rules of the module docs for server `server`.
    pub(crate) fn check(&self, server: &str, limits: &Limits) -> Result<()> {
        if let Some(timeout) = self.timeout {
            let cap = Duration::from_millis(limits.max_request_ms);
            if timeout.is_zero() || timeout > cap {
                return Err(Error::config(format!(
                    "server \"{server}\": a call's timeout must be positive and at most maxRequestMs ({} ms); it was {} ms",
                    limits.max_request_ms,
                    timeout.as_millis()
                )));
            }
        }
        if let Some(meta) = &self.meta {
            for (index, key) in meta.keys().enumerate() {
                if key == PROGRESS_TOKEN_KEY || key.starts_with(RESERVED_META_PREFIX) {
                    return Err(Error::config(format!(
                        "server \"{server}\": the call's _meta key {index} is one the client writes itself (progressToken or the io.modelcontextprotocol/ namespace)"
                    )));
                }
            }
            // Envelope (1), params (2), `_meta` (3) hold each value's root (4).
            if meta.values().any(|v| 3 + value_depth(v) > MAX_JSON_DEPTH) {
                return Err(Error::protocol(format!(
                    "the call's _meta nests deeper than {MAX_JSON_DEPTH} JSON containers"
                )));
            }
        }
        Ok(())
    }
}

/// What happened while a call ran, as [`CallOptions::on_event`] reports it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallEvent {
    /// The server reported progress (`notifications/progress`, accepted by the
    /// rules of [`Progress`]).
    Progress(Progress),
    /// The call runs as a task: reported when the server created it and after
    /// every `tasks/get` (its status, the server's status message, the polls so
    /// far).
    Task(TaskUpdate),
}

/// One accepted `notifications/progress`: it names the call's own token
/// exactly (a number, never its text; over 2026-07-28 HTTP, on the call's own
/// stream), its values are finite, `progress` is above the last one delivered
/// for the call, `total` is not negative, `message` is within 4096 bytes and
/// free of control, format and separator characters, and it came within
/// `maxNotificationsPerSecond` for the call. The message is the server's text:
/// show it as such, never as the client's.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// How far the call is.
    pub progress: f64,
    /// Out of how much, when the server says.
    pub total: Option<f64>,
    /// The server's message, when it sent one.
    pub message: Option<String>,
}

/// Whether a `tools/call` may run as a task (the 2026-07-28 Tasks extension,
/// `io.modelcontextprotocol/tasks`, SEP-2663; the 2025-11-25 design is not
/// supported). A call that became a task waits under the task's own bounds
/// (`maxTaskWaitMs`, `maxTaskPolls`, the TTL backstop; then [`TaskPolicy`]),
/// not its timeout; the polls follow the server's `pollIntervalMs`, never
/// faster (the README's "Tasks" section has the rules).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskMode {
    /// Declare the extension on the call when the server offers it, and drive a
    /// task if the server makes one.
    #[default]
    Auto,
    /// The call must be able to run as a task: `missing_capability` (nothing
    /// sent) when the server does not offer the extension.
    Require,
    /// Never declare the extension: a server that runs the tool only as a task
    /// answers `missing_capability`.
    Never,
}

/// What a call does with its task when it stops waiting on it at a task bound
/// (`maxTaskWaitMs`, `maxTaskPolls`, or the TTL backstop); either way the call
/// fails with `timeout`. A caller's cancellation (its token, or dropping the
/// call) always cancels the task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskPolicy {
    /// Send a best-effort `tasks/cancel` (the server may still finish it).
    #[default]
    Cancel,
    /// Leave the task running: the error's
    /// [`detached_task`](crate::Error::detached_task) names it, for
    /// [`Client::resume_task`](super::Client::resume_task).
    Detach,
}
