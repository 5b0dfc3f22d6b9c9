//! The Tasks extension of 2026-07-28 (`io.modelcontextprotocol/tasks`,
//! SEP-2663): what a host sees of a tool call the server runs as a task. The
//! session drives the task (`session::protocol::tasks` has the rules: the
//! polling cadence, the bounds, the statuses and error codes); this module holds
//! the names a host holds on to, free of any transport:
//!
//! - [`TaskHandle`]: which task of which server, for
//!   [`Client::resume_task`](crate::Client::resume_task) after the call stopped
//!   waiting on it ([`TaskPolicy::Detach`](crate::TaskPolicy::Detach)), or after
//!   a restart. A task id may be a bearer token (the extension's §Security): its
//!   `Debug` withholds the id, and no error message or diagnostic carries it;
//! - [`TaskStatus`] and [`TaskUpdate`]: what
//!   [`CallEvent::Task`](crate::CallEvent::Task) reports on creation and on each
//!   poll.
//!
//! The 2025-11-25 design of tasks (SEP-1686: the `task` parameter,
//! `tasks/result`, `tasks/list`) is not supported: a legacy session never
//! declares or drives a task.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The extension's identifier, the key of `capabilities.extensions` (the
/// server's, in `server/discover`) and of `clientCapabilities.extensions` (the
/// client's, in a request's `_meta`).
pub const TASKS_EXTENSION_ID: &str = "io.modelcontextprotocol/tasks";

/// The longest task id accepted, in UTF-8 bytes.
pub const MAX_TASK_ID_BYTES: usize = 256;

/// The longest `statusMessage` accepted, in UTF-8 bytes.
pub const MAX_STATUS_MESSAGE_BYTES: usize = 4096;

/// One task of one server: its id (server-authored, possibly a bearer token)
/// and the name of the server that made it. A host keeps it to resume the task
/// ([`Client::resume_task`](crate::Client::resume_task)), only ever with the
/// client of that server.
///
/// `Debug` shows the server and withholds the id; read it with
/// [`TaskHandle::expose_id`] only to store it somewhere as safe as a credential.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TaskHandle {
    server: Arc<str>,
    id: Arc<str>,
}

impl TaskHandle {
    /// The task `id` of server `server` (a task id a host stored; the session
    /// checks it before sending it anywhere).
    pub fn new(server: &str, id: &str) -> TaskHandle {
        TaskHandle {
            server: server.into(),
            id: id.into(),
        }
    }

    /// The name of the server that made the task (the client's
    /// [`server`](crate::Client::server) name).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The task id, as the server sent it. Treat it as a secret: it may be all
    /// it takes to read the task's result.
    pub fn expose_id(&self) -> &str {
        &self.id
    }
}

impl fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskHandle")
            .field("server", &self.server)
            .field("id", &"[REDACTED]")
            .finish()
    }
}

/// A task's status (`status`). The last three are terminal: a task in one of
/// them never changes again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// `working`: the server is running it.
    Working,
    /// `input_required`: the server waits for answers to its input requests
    /// (the host handler is asked, and the answers sent with `tasks/update`).
    InputRequired,
    /// `completed`: the result is in (a tool result with `isError: true`
    /// included).
    Completed,
    /// `failed`: the request failed with a JSON-RPC error.
    Failed,
    /// `cancelled`: the task was cancelled before it completed.
    Cancelled,
}

impl TaskStatus {
    /// The wire spelling (`working`, `input_required`, `completed`, `failed`,
    /// `cancelled`).
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Parses the wire spelling; anything else is `None`.
    pub fn parse(text: &str) -> Option<TaskStatus> {
        Some(match text {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            _ => return None,
        })
    }

    /// `completed`, `failed` or `cancelled`.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a task looked like at one point, as
/// [`CallEvent::Task`](crate::CallEvent::Task) reports it: once when the server
/// created it (`polls` 0), then after every `tasks/get` answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskUpdate {
    /// The task (its id withheld from `Debug`).
    pub task: TaskHandle,
    /// Its status.
    pub status: TaskStatus,
    /// The server's `statusMessage`, when it sent one: at most
    /// [`MAX_STATUS_MESSAGE_BYTES`] bytes without control, format or separator
    /// characters, and still the server's words (untrusted: show it as such).
    pub status_message: Option<String>,
    /// `tasks/get` polls answered so far.
    pub polls: u64,
    /// The interval between polls the server asked for, when it did.
    pub poll_interval: Option<Duration>,
}
