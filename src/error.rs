//! The one public error type.
//!
//! Modeled on `hyper::Error`: an opaque struct with a stable [`ErrorKind`] and a
//! message authored by this crate. The wording of messages is **not** a stable
//! contract; the kind and its snake_case name are.
//!
//! Messages never carry process details, a child's stderr, environment values,
//! bearer tokens, URL userinfo or query strings, or remote error bodies. Those go only
//! to an explicitly installed [`DiagnosticObserver`](crate::diagnostics::DiagnosticObserver).

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::tasks::TaskHandle;

/// What went wrong, as a stable, matchable category.
///
/// The snake_case names returned by [`ErrorKind::as_str`] are stable and appear in the
/// CLI's error line (`smthrs-mcp: <kind>: <message>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The server process could not be started.
    SpawnFailed,
    /// A handshake step or a request did not finish before its deadline.
    Timeout,
    /// The session ended: the scope closed, the child exited, a pipe closed, or the
    /// HTTP session could not be continued.
    ConnectionClosed,
    /// The server (or a caller-supplied option or argument) broke the protocol's
    /// rules: malformed tagged envelopes, over-long frames, excessive nesting,
    /// invalid limits.
    ProtocolError,
    /// A well-formed reply whose content breaks the catalog or result rules.
    InvalidResponse,
    /// `call_tool` named a tool that is not in the frozen catalog.
    ToolNotFound,
    /// The egress policy (or the OAuth chain's address policy) refused a request
    /// before it left the process.
    EgressDenied,
    /// The HTTP server answered 401 or 403, or the OAuth chain could not obtain a
    /// token (a login is needed, a document failed its checks, the authorization
    /// server refused).
    Unauthorized,
    /// The HTTP server answered another error status (the body is withheld).
    HttpStatus,
    /// A TLS handshake or certificate check failed.
    Tls,
    /// The server answered a request with a JSON-RPC error (its body is withheld from
    /// the message and goes to the diagnostics observer).
    RemoteError,
    /// A server file, projection option or builder setting is invalid (a usage error).
    InvalidConfig,
    /// A flow invocation failed because its session failed; carries the session
    /// error's public message.
    FlowFailed,
    /// No protocol revision both sides speak: the server refused the one this
    /// client sent (JSON-RPC -32022, also after the one corrective retry), or the
    /// negotiation found none in common (a `2026-07-28`-only client and a legacy
    /// server, say).
    UnsupportedProtocolVersion,
    /// The server requires a client capability the request did not declare
    /// (JSON-RPC -32021, 2026-07-28).
    MissingCapability,
    /// The server found the HTTP headers missing, malformed or disagreeing with the
    /// body (JSON-RPC -32020, 2026-07-28).
    HeaderMismatch,
    /// The server's catalog differs from the one it was pinned to
    /// ([`pin`](crate::pin)); the message names the tools added, removed or
    /// changed.
    CatalogChanged,
    /// The host handler refused a server's input request or answered it wrongly
    /// (a sampling request it will not serve, a form answer that does not fit the
    /// form); the call that needed the answer fails with it.
    InputRefused,
    /// The server answered that the resource or prompt asked for does not exist
    /// (JSON-RPC -32002 in either era, or -32602 answering `resources/read` or
    /// `prompts/get`, whose only argument is the address or name asked for). The
    /// message names the server and the method, never the remote error's text
    /// (which goes to the diagnostics observer like any remote error body);
    /// [`Error::remote_code`] gives the code.
    NotFound,
    /// The caller cancelled the call (its
    /// [`CallOptions::cancel_on`](crate::CallOptions::cancel_on) token); the
    /// server was told.
    Cancelled,
    /// The server ended the call's task as `cancelled` (the Tasks extension:
    /// someone cancelled it before it completed). Distinct from
    /// [`ErrorKind::Cancelled`], which is this caller's own cancellation.
    TaskCancelled,
}

impl ErrorKind {
    /// The stable snake_case name of this kind.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::SpawnFailed => "spawn_failed",
            ErrorKind::Timeout => "timeout",
            ErrorKind::ConnectionClosed => "connection_closed",
            ErrorKind::ProtocolError => "protocol_error",
            ErrorKind::InvalidResponse => "invalid_response",
            ErrorKind::ToolNotFound => "tool_not_found",
            ErrorKind::EgressDenied => "egress_denied",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::Tls => "tls",
            ErrorKind::RemoteError => "remote_error",
            ErrorKind::InvalidConfig => "invalid_config",
            ErrorKind::FlowFailed => "flow_failed",
            ErrorKind::UnsupportedProtocolVersion => "unsupported_protocol_version",
            ErrorKind::MissingCapability => "missing_capability",
            ErrorKind::HeaderMismatch => "header_mismatch",
            ErrorKind::CatalogChanged => "catalog_changed",
            ErrorKind::InputRefused => "input_refused",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::TaskCancelled => "task_cancelled",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The crate's error: a stable [`ErrorKind`] plus a public message.
///
/// `Display` prints the message only; `Debug` prints kind and message. Neither ever
/// contains secrets (see the module docs). Cloning is cheap, so one terminal error can
/// be handed to every waiter.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: Cow<'static, str>,
    /// Facts a caller may match on beyond the kind (never secret, never
    /// server-authored text).
    detail: Option<Arc<Detail>>,
}

/// What an [`Error`] records beyond its kind and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Detail {
    /// A JSON-RPC error answered the request: its code, and for -32022 the
    /// protocol versions the server says it supports (only well-formed version
    /// strings, at most [`MAX_SUPPORTED_VERSIONS`]).
    Remote { code: i64, supported: Vec<String> },
    /// The HTTP status that refused the request.
    Status(u16),
    /// The HTTP status that refused the request (429 or 503), with the wait its
    /// `Retry-After` asked for (delta-seconds; at most [`MAX_RETRY_AFTER`]).
    Throttled(u16, Duration),
    /// The call stopped waiting on its task (a task bound: `maxTaskWaitMs`,
    /// `maxTaskPolls`, the TTL backstop); the task, when the policy left it
    /// running ([`TaskPolicy::Detach`](crate::TaskPolicy::Detach)).
    TaskGaveUp(Option<TaskHandle>),
    /// The host handler did not answer within `inputTimeoutMs` (not the call's
    /// own deadline).
    HostTimeout,
}

/// The longest `Retry-After` honoured.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(3600);

/// The most entries of a -32022 `data.supported` list kept.
pub(crate) const MAX_SUPPORTED_VERSIONS: usize = 16;

impl Error {
    /// Builds an error from a kind and a message, for code that implements this
    /// crate's traits (a [`Transport`](crate::Transport), a
    /// [`FlowInvoker`](crate::flows::FlowInvoker)).
    ///
    /// The message must follow the public-message rule: never untrusted or secret
    /// text (no stderr, env values, tokens, URL userinfo or query, remote bodies).
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind,
            message: message.into(),
            detail: None,
        }
    }

    pub(crate) fn with_detail(mut self, detail: Detail) -> Self {
        self.detail = Some(Arc::new(detail));
        self
    }

    pub(crate) fn detail(&self) -> Option<&Detail> {
        self.detail.as_deref()
    }

    /// The JSON-RPC error code, when a JSON-RPC error reply caused this error
    /// (kinds `remote_error`, `unsupported_protocol_version`, `missing_capability`,
    /// `header_mismatch`).
    pub fn remote_code(&self) -> Option<i64> {
        match self.detail() {
            Some(Detail::Remote { code, .. }) => Some(*code),
            _ => None,
        }
    }

    /// The HTTP status, when an HTTP status refused the request (kinds
    /// `http_status`, `unauthorized`).
    pub fn http_status(&self) -> Option<u16> {
        match self.detail() {
            Some(Detail::Status(status) | Detail::Throttled(status, _)) => Some(*status),
            _ => None,
        }
    }

    /// The wait a `429`/`503` asked for with `Retry-After`, when it did.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self.detail() {
            Some(Detail::Throttled(_, after)) => Some(*after),
            _ => None,
        }
    }

    /// The task a call stopped waiting on and left running (kind `timeout`,
    /// under [`TaskPolicy::Detach`](crate::TaskPolicy::Detach)): hand it to
    /// [`Client::resume_task`](crate::Client::resume_task) to wait again. The
    /// message never holds its id.
    pub fn detached_task(&self) -> Option<&TaskHandle> {
        match self.detail() {
            Some(Detail::TaskGaveUp(task)) => task.as_ref(),
            _ => None,
        }
    }

    /// The stable category of this error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The public message (no secrets, no remote bodies, no process details).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same kind with a new message, for hosts that add context (such as the
    /// server's name). The message must follow the same rule: no secrets, no remote
    /// bodies, no process details.
    pub fn with_message(self, message: impl Into<Cow<'static, str>>) -> Self {
        Error {
            kind: self.kind,
            message: message.into(),
            detail: self.detail,
        }
    }

    /// True when a deadline elapsed.
    pub fn is_timeout(&self) -> bool {
        self.kind == ErrorKind::Timeout
    }

    /// True when the session has ended.
    pub fn is_closed(&self) -> bool {
        self.kind == ErrorKind::ConnectionClosed
    }

    pub(crate) fn spawn_failed(msg: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::SpawnFailed, msg)
    }
    pub(crate) fn timeout(msg: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::Timeout, msg)
    }
    pub(crate) fn closed(msg: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::ConnectionClosed, msg)
    }
    pub(crate) fn protocol(msg: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::ProtocolError, msg)
    }
    pub(crate) fn invalid_response(msg: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::InvalidResponse, msg)
    }
    pub(crate) fn config(msg: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorKind::InvalidConfig, msg)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind.as_str())
            .field("message", &self.message)
            .finish()
    }
}

impl std::error::Error for Error {}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The longest prefix of `text` of at most `max` bytes that ends on a character
/// boundary: how untrusted text is cut before a message quotes it.
pub(crate) fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_stays_small() {
        // kind + Cow<'static, str> + one optional Arc: cheap to move and clone.
        assert!(std::mem::size_of::<Error>() <= 40);
    }

    #[test]
    fn display_is_message_and_kind_names_are_snake_case() {
        let e = Error::closed("stdout closed");
        assert_eq!(e.to_string(), "stdout closed");
        assert_eq!(e.kind().as_str(), "connection_closed");
        assert!(format!("{e:?}").contains("connection_closed"));
    }
}
