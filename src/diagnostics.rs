//! The private diagnostics channel.
//!
//! Some facts about a failing server are useful to an operator but must never reach
//! an ordinary error: the child's (redacted) stderr tail, and the bodies of JSON-RPC
//! error replies. The OAuth chain reports each step's outcome here too (crate text
//! only: tokens, codes and server text never reach it). They go only to a [`DiagnosticObserver`] the host installs
//! explicitly; without one they are discarded. Values are wrapped in
//! [`SecretString`] so that printing an event with `{:?}` withholds them.
//!
//! An observer is called from the session's tasks: keep it fast and non-blocking,
//! and bound any history it keeps (each event is bounded, the number of events is not).

use std::fmt;
use std::sync::Arc;

use secrecy::SecretString;

/// One private diagnostic event.
#[non_exhaustive]
pub enum DiagnosticEvent {
    /// The redacted, whitespace-collapsed, bounded tail of a child's stderr, delivered
    /// when the session ends (if the child wrote anything).
    StderrTail {
        /// The configured server name.
        server: Arc<str>,
        /// The tail, at most `maxStderrBytes` bytes of redacted text.
        tail: SecretString,
    },
    /// A JSON-RPC error reply: either one with `id: null` (which cannot be correlated
    /// and is otherwise dropped) or one answering a request of ours.
    RemoteError {
        /// The configured server name.
        server: Arc<str>,
        /// The JSON-RPC error code.
        code: i64,
        /// The error's `message` text, as the server sent it.
        message: SecretString,
        /// The error's `data`, JSON-encoded, if present.
        data: Option<SecretString>,
    },
    /// A 2026-07-28 server sent a request (servers send none in that revision): it
    /// was dropped without an answer.
    ServerRequestDropped {
        /// The configured server name.
        server: Arc<str>,
        /// The request's method, as the server sent it.
        method: SecretString,
    },
    /// A tool was left out of the catalog (2026-07-28 over HTTP: an invalid
    /// `x-mcp-header` annotation); the other tools were kept.
    ToolDropped {
        /// The configured server name.
        server: Arc<str>,
        /// The tool's name, as the server sent it.
        tool: SecretString,
        /// Which rule it broke.
        reason: &'static str,
    },
    /// One step of an HTTP server's OAuth chain, and how it ended. Every field is
    /// crate-authored: no token, code, `state`, verifier, secret or server text
    /// (the chain never puts an `error_description` or a body into an error).
    OAuthStep {
        /// The configured server name.
        server: Arc<str>,
        /// The step: `protected-resource-metadata`,
        /// `authorization-server-metadata`, `registration`, `authorization`,
        /// `token` (the code exchange), `refresh`, `client-credentials`,
        /// `token-exchange` (at an enterprise identity provider), `jwt-bearer`,
        /// `step-up` (the whole answer to a `403 insufficient_scope`), or
        /// `dpop-nonce` (a malformed or over-long `DPoP-Nonce` ignored).
        step: &'static str,
        /// `ok` or `failed`.
        outcome: &'static str,
        /// On failure: the kind and message of the error (the same crate text
        /// an error of the chain carries).
        detail: Option<String>,
    },
    /// The client probed with `server/discover` and fell back to the legacy
    /// handshake (a downgrade is worth knowing: a hostile server can force one).
    LegacyFallback {
        /// The configured server name.
        server: Arc<str>,
        /// The negotiated legacy version.
        version: &'static str,
        /// Why (crate-authored: which outcome of the probe).
        reason: &'static str,
    },
    /// A change or progress notification broke a rule, was not asked for
    /// (a progress token no active call has), or came past
    /// `maxNotificationsPerSecond`: dropped, never delivered (the session, the
    /// subscriptions and the calls go on). Each reason is reported at most
    /// once a second.
    NotificationDropped {
        /// The configured server name.
        server: Arc<str>,
        /// The notification's method (one of the change methods, the
        /// acknowledgement or `notifications/progress`; `notification` for any
        /// other).
        method: &'static str,
        /// Which rule (crate-authored).
        reason: &'static str,
    },
    /// A server's task answer deviated from the Tasks extension in a way the
    /// client tolerates (a `tasks/get` answered with `resultType: "task"`, as
    /// the extension's own examples show), or a best-effort `tasks/cancel`
    /// could not be sent. Never the task id.
    TaskNotice {
        /// The configured server name.
        server: Arc<str>,
        /// What happened (crate-authored).
        reason: &'static str,
    },
}

impl DiagnosticEvent {
    /// A short stable name for the event (`stderr-tail`, `remote-error`,
    /// `server-request-dropped`, `tool-dropped`, `oauth-step`, `legacy-fallback`,
    /// `notification-dropped`, `task-notice`).
    pub fn name(&self) -> &'static str {
        match self {
            DiagnosticEvent::StderrTail { .. } => "stderr-tail",
            DiagnosticEvent::RemoteError { .. } => "remote-error",
            DiagnosticEvent::ServerRequestDropped { .. } => "server-request-dropped",
            DiagnosticEvent::ToolDropped { .. } => "tool-dropped",
            DiagnosticEvent::OAuthStep { .. } => "oauth-step",
            DiagnosticEvent::LegacyFallback { .. } => "legacy-fallback",
            DiagnosticEvent::NotificationDropped { .. } => "notification-dropped",
            DiagnosticEvent::TaskNotice { .. } => "task-notice",
        }
    }
}

impl fmt::Debug for DiagnosticEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiagnosticEvent::StderrTail { server, .. } => f
                .debug_struct("StderrTail")
                .field("server", server)
                .field("tail", &"[REDACTED]")
                .finish(),
            DiagnosticEvent::RemoteError { server, code, .. } => f
                .debug_struct("RemoteError")
                .field("server", server)
                .field("code", code)
                .field("message", &"[REDACTED]")
                .finish_non_exhaustive(),
            DiagnosticEvent::ServerRequestDropped { server, .. } => f
                .debug_struct("ServerRequestDropped")
                .field("server", server)
                .field("method", &"[REDACTED]")
                .finish(),
            DiagnosticEvent::ToolDropped { server, reason, .. } => f
                .debug_struct("ToolDropped")
                .field("server", server)
                .field("tool", &"[REDACTED]")
                .field("reason", reason)
                .finish(),
            DiagnosticEvent::OAuthStep {
                server,
                step,
                outcome,
                detail,
            } => f
                .debug_struct("OAuthStep")
                .field("server", server)
                .field("step", step)
                .field("outcome", outcome)
                .field("detail", detail)
                .finish(),
            DiagnosticEvent::LegacyFallback {
                server,
                version,
                reason,
            } => f
                .debug_struct("LegacyFallback")
                .field("server", server)
                .field("version", version)
                .field("reason", reason)
                .finish(),
            DiagnosticEvent::NotificationDropped {
                server,
                method,
                reason,
            } => f
                .debug_struct("NotificationDropped")
                .field("server", server)
                .field("method", method)
                .field("reason", reason)
                .finish(),
            DiagnosticEvent::TaskNotice { server, reason } => f
                .debug_struct("TaskNotice")
                .field("server", server)
                .field("reason", reason)
                .finish(),
        }
    }
}

/// Receives private diagnostics. Install one with
/// [`ClientBuilder::diagnostics`](crate::ClientBuilder::diagnostics).
pub trait DiagnosticObserver: Send + Sync + 'static {
    /// Called once per event, from the session's tasks.
    fn observe(&self, event: DiagnosticEvent);
}

/// A cheap, cloneable handle to the (optional) installed observer.
#[derive(Clone, Default)]
pub struct Diagnostics(Option<Arc<dyn DiagnosticObserver>>);

impl Diagnostics {
    /// No observer: every event is discarded.
    pub fn none() -> Self {
        Diagnostics(None)
    }

    /// Wraps an installed observer.
    pub fn new(observer: Arc<dyn DiagnosticObserver>) -> Self {
        Diagnostics(Some(observer))
    }

    /// True when an observer is installed (callers may skip building events otherwise).
    pub fn is_enabled(&self) -> bool {
        self.0.is_some()
    }

    /// Delivers an event, or drops it when no observer is installed.
    pub fn emit(&self, event: DiagnosticEvent) {
        if let Some(observer) = &self.0 {
            observer.observe(event);
        }
    }
}

impl fmt::Debug for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Diagnostics(installed)"
        } else {
            "Diagnostics(none)"
        })
    }
}
