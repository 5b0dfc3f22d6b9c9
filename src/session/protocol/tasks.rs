//! The Tasks extension in the session (2026-07-28, `io.modelcontextprotocol/tasks`,
//! SEP-2663; beyond-tools.md §6.3-§6.5): a `tools/call` the server answers with
//! `resultType: "task"` is driven here to its end. The 2025-11-25 design
//! (SEP-1686: `params.task`, `tasks/result`, `tasks/list`) is not supported: a
//! legacy session declares nothing task-like, and [`TaskMode::Require`] there
//! is `missing_capability`. `tasks/result` is never called (it is `-32601` in
//! 2026-07-28: the result comes inlined in `tasks/get`).
//!
//! **Declaring** ([`declares`]). A `tools/call` declares the extension in its
//! `_meta.clientCapabilities.extensions` when the server's `server/discover`
//! offered it (`capabilities.extensions["io.modelcontextprotocol/tasks"]`) and
//! the call's [`TaskMode`] allows it (`Auto`, `Require`); `Never` never
//! declares. Every `tasks/*` request declares it. A `resultType: "task"`
//! answering a call that did not declare is `invalid_response` (modern.rs).
//! A `-32021` (a server that runs the tool only as a task, asked without the
//! declaration) is `missing_capability`; the pre-correction `-32003` is a plain
//! `remote_error`.
//!
//! **Polling.** The first `tasks/get` goes one interval after the
//! `CreateTaskResult`, never at once. Each interval is the larger of the
//! server's `pollIntervalMs` (re-read from every answer) and
//! `taskMinPollIntervalMs`, plus 0-10 % jitter, upward only: never faster than
//! the server asked. Without a server value the client backs off on its own
//! from 1 s by ×1.5 up to `taskMaxPollIntervalMs`. A transient failure of a
//! poll (an HTTP `429` or `5xx`, a poll not answered within `requestTimeoutMs`)
//! waits longer still: twice the last wait per failure in a row (up to
//! `taskMaxPollIntervalMs`, or the server's interval when larger), and at least
//! what a `Retry-After` of delta-seconds asked; it counts as a poll. Over HTTP
//! every `tasks/*` request carries `Mcp-Name: <taskId>` (the base64 sentinel
//! unless printable ASCII) beside `Mcp-Method`.
//!
//! **The end.** `completed` → the inlined `result`, read exactly as a direct
//! `tools/call` result (content rules; a `resultType` other than `complete`
//! inside it, or no `result`, is `invalid_response`); `failed` → `remote_error`
//! with the inlined `error.code` ([`Error::remote_code`]; its message and data
//! go to the diagnostics observer, never into the error; no `error` is
//! `invalid_response`); `cancelled` → `task_cancelled`. Nothing is polled after
//! a terminal status.
//!
//! **Giving up.** At `maxTaskWaitMs` from the `CreateTaskResult` (as soon as
//! the next poll the interval allows would come later: a server asking for
//! polls further apart than the wait left is given up on at once), after
//! `maxTaskPolls` polls, or at the TTL backstop (the task's `ttlMs` after the
//! local time its current status was first seen, with no change since: the
//! server's clock is never read) the call fails with `timeout`, after a
//! best-effort `tasks/cancel` ([`TaskPolicy::Cancel`], the default) or leaving
//! the task running ([`TaskPolicy::Detach`]: [`Error::detached_task`] names it
//! for [`Client::resume_task`](crate::Client::resume_task)). The caller's
//! token, or dropping the call's future, sends a best-effort `tasks/cancel`
//! from a spawned task (bounded by `requestTimeoutMs`); `notifications/cancelled`
//! is never sent for a task. A call that fails for any other reason while its
//! task runs (a broken rule, a refused input request) cancels it the same way;
//! one whose task is gone (`not_found`), ended, or whose session ended does not.
//!
//! **Input during the task.** `status: "input_required"` carries
//! `inputRequests`: the keys not answered before go to the host handler (the
//! same rules and caps as the multi-round-trip requests of `tools/call`: the
//! methods declared, [`MAX_INPUT_REQUESTS`] new keys per poll, the elicitation
//! and sampling bounds), and their answers are sent with
//! `tasks/update {taskId, inputResponses}`. Keys come back on every poll until
//! the server has taken the answers: a key is never shown to the host or
//! answered twice, even if its `tasks/update` failed. More than
//! `maxTaskInputRequests` distinct keys over the task's life cancels the task
//! (best effort) and fails the call with `invalid_response`.
//!
//! **Field rules** (a broken one is `invalid_response`, naming the field, never
//! its value): `taskId` a non-empty string of at most
//! [`MAX_TASK_ID_BYTES`] bytes without control, format or whitespace
//! characters, and on `tasks/get` the id asked about; `status` one of the five;
//! `statusMessage` absent, `null` or a string of at most
//! [`MAX_STATUS_MESSAGE_BYTES`] bytes following the display-text rules;
//! `createdAt`/`lastUpdatedAt` strings of at most 64 printable ASCII bytes
//! starting with a `YYYY-MM-DD` date; `ttlMs` (absent read as `null`) and
//! `pollIntervalMs` non-negative integers or `null`. `resultType` on `tasks/get`
//! is `complete` (or absent); `task`, as the extension's own examples show, is
//! tolerated and reported once per task to the diagnostics observer
//! (`task-notice`). A `tasks/get` or `tasks/update` answered `-32602` (the
//! server does not know the task: forgotten, expired, never made) is
//! `not_found`.
//!
//! The task id never appears in an error message, a diagnostic or a `Debug`
//! output: it may be a bearer token.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use secrecy::SecretString;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::time::Instant;

use super::super::call_options::{CallEvent, CallOptions, TaskMode, TaskPolicy};
use super::super::engine::RequestOptions;
use super::era::{Era, RequestMeta};
use super::inputs::MAX_INPUT_REQUESTS;
use super::link::Link;
use super::negotiate::{missing_capability, retry_after_version_error};
use super::tool_result::ToolResult;
use crate::content::ContentBounds;
use crate::diagnostics::DiagnosticEvent;
use crate::error::{Detail, Error, ErrorKind, Result};
use crate::jsonrpc::{self, ResultBody};
use crate::param_headers;
use crate::tasks::{
    MAX_STATUS_MESSAGE_BYTES, MAX_TASK_ID_BYTES, TASKS_EXTENSION_ID, TaskHandle, TaskStatus,
    TaskUpdate,
};
use crate::transport::{CallHeaders, Medium};

/// The first wait of the client's own backoff (no server interval).
const OWN_BACKOFF_FIRST: Duration = Duration::from_secs(1);

/// The longest `createdAt` / `lastUpdatedAt` accepted, in bytes.
const MAX_TIMESTAMP_BYTES: usize = 64;

/// The capability a call asks for when it requires the extension.
const EXTENSION: &str = "the Tasks extension (io.modelcontextprotocol/tasks)";

/// Whether a `tools/call` declares the Tasks extension, decided before anything
/// is sent: `Auto` when the server offered it (2026-07-28 only), `Require` the
/// same or `missing_capability`, `Never` never.
pub(crate) fn declares(link: &Link, mode: TaskMode) -> Result<bool> {
    let modern = link.protocol.wire.get().is_modern();
    let offered = modern && link.protocol.tasks_offered.load(Ordering::Acquire);
    match mode {
        TaskMode::Never => Ok(false),
        TaskMode::Auto => Ok(offered),
        TaskMode::Require if offered => Ok(true),
        TaskMode::Require if modern => Err(missing_capability(&link.core.server, EXTENSION)),
        TaskMode::Require => Err(missing_capability(
            &link.core.server,
            "the Tasks extension (io.modelcontextprotocol/tasks, a 2026-07-28 extension; this session speaks a legacy revision)",
        )),
    }
}

/// Whether the server's `capabilities` (of `server/discover`) offer the
/// extension.
pub(crate) fn offered_in(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|extensions| extensions.get(TASKS_EXTENSION_ID))
        .is_some_and(Value::is_object)
}

/// Drives the task a `tools/call` of `tool` became (`created`, its
/// `CreateTaskResult`, on a call that declared the extension) to its end.
pub(crate) async fn run(
    link: &Link,
    tool: &str,
    created: &Map<String, Value>,
    options: &CallOptions,
) -> Result<ToolResult> {
    let what = format!("tools/call {tool:?}");
    let state = read_task(link, &what, created, None)?;
    let task = TaskHandle::new(&link.core.server, &state.id);
    let mut driver = Driver::new(link, task, options, what);
    driver.drive(Some(state)).await
}

/// Drives an existing task (one a call left running, or a host stored) from
/// now: its first poll goes at once.
pub(crate) async fn resume(
    link: &Link,
    task: &TaskHandle,
    options: &CallOptions,
) -> Result<ToolResult> {
    let server = &link.core.server;
    if task.server() != server.as_ref() {
        return Err(Error::config(format!(
            "this task was made by another server than \"{server}\": resume it through the client of the server that made it"
        )));
    }
    if let Err(rule) = check_task_id(task.expose_id()) {
        return Err(Error::config(format!(
            "the task id to resume on server \"{server}\" {rule}"
        )));
    }
    declares(link, TaskMode::Require)?;
    let mut driver = Driver::new(link, task.clone(), options, "the resumed task".to_owned());
    driver.drive(None).await
}

/// `tasks/get`, `tasks/update` and `tasks/cancel` parameters.
#[derive(Serialize)]
struct TaskParams<'a> {
    #[serde(rename = "_meta")]
    meta: &'a RequestMeta,
    #[serde(rename = "inputResponses", skip_serializing_if = "Option::is_none")]
    input_responses: Option<&'a Map<String, Value>>,
    #[serde(rename = "taskId")]
    task_id: &'a str,
}

/// One `tasks/*` request about `task` until `deadline`: the declaring `_meta`,
/// `Mcp-Name` over HTTP, the -32022 corrective retry once; the result object.
async fn task_request(
    link: &Link,
    method: &'static str,
    task: &TaskHandle,
    input_responses: Option<&Map<String, Value>>,
    deadline: Instant,
) -> Result<Map<String, Value>> {
    let Link { core, protocol } = link;
    let headers = (core.medium == Medium::Exchanges).then(|| {
        Arc::new(CallHeaders {
            name: param_headers::encode_value(task.expose_id()),
            params: Vec::new(),
        })
    });
    let mut wire = protocol.wire.get();
    let mut corrective_used = false;
    loop {
        let params = TaskParams {
            meta: &protocol.task_meta,
            input_responses,
            task_id: task.expose_id(),
        };
        let options = RequestOptions {
            framing: wire.into(),
            // An abandoned poll is only dropped: nothing that reads as a
            // cancellation goes out for a task.
            cancellable: false,
            call: headers.clone(),
            ..RequestOptions::default()
        };
        let reply = core
            .request_body(method, params, deadline, options)
            .await
            .map(ResultBody::into_value);
        match reply {
            Err(error) if error.kind() == ErrorKind::UnsupportedProtocolVersion => {
                wire = retry_after_version_error(core, method, error, &mut corrective_used)?;
            }
            Err(error) => return Err(error),
            Ok(Value::Object(result)) => return Ok(result),
            Ok(_) => {
                return Err(Error::invalid_response(format!(
                    "server \"{}\" answered {method} with a result that is not an object",
                    core.server
                )));
            }
        }
    }
}

/// A best-effort `tasks/cancel` within `requestTimeoutMs`; a failure is only
/// reported to the diagnostics observer.
async fn cancel(link: &Link, task: &TaskHandle) {
    let deadline = Instant::now() + link.core.limits.request_timeout();
    if task_request(link, "tasks/cancel", task, None, deadline)
        .await
        .is_err()
        && link.core.diagnostics.is_enabled()
    {
        link.core.diagnostics.emit(DiagnosticEvent::TaskNotice {
            server: link.core.server.clone(),
            reason: "a best-effort tasks/cancel failed",
        });
    }
}

/// Sends `tasks/cancel` from a spawned task when dropped armed (the call's
/// future dropped, or a failure that leaves the task running).
struct CancelOnDrop {
    link: Link,
    task: TaskHandle,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed || self.link.core.terminal().is_some() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let link = self.link.clone();
        let task = self.task.clone();
        let in_flight = link.protocol.task_cancels.enter();
        runtime.spawn(async move {
            let _in_flight = in_flight;
            cancel(&link, &task).await;
        });
    }
}

/// One task as an answer described it (fields checked). `Debug` withholds
/// the id, the status message and the inlined members (server-authored).
struct TaskState {
    id: String,
    status: TaskStatus,
    message: Option<String>,
    ttl: Option<Duration>,
    interval: Option<Duration>,
    input_requests: Option<Map<String, Value>>,
    result: Option<Map<String, Value>>,
    error: Option<Map<String, Value>>,
}

impl std::fmt::Debug for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskState")
            .field("id", &"[REDACTED]")
            .field("status", &self.status)
            .field("ttl", &self.ttl)
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

/// Checks a task id (see the module docs); the rule broken, never the id.
fn check_task_id(id: &str) -> std::result::Result<(), &'static str> {
    if id.is_empty() {
        return Err("is empty");
    }
    if id.len() > MAX_TASK_ID_BYTES {
        return Err("is longer than 256 bytes");
    }
    if id
        .chars()
        .any(|c| c.is_whitespace() || crate::text::forbidden_char(c).is_some())
    {
        return Err("holds a control, format or whitespace character");
    }
    Ok(())
}

/// Reads a `CreateTaskResult` (`asked` none) or a `tasks/get` answer about
/// `asked`, for the call `what`.
fn read_task(
    link: &Link,
    what: &str,
    object: &Map<String, Value>,
    asked: Option<&TaskHandle>,
) -> Result<TaskState> {
    let server = &link.core.server;
    let answer = if asked.is_some() {
        "tasks/get"
    } else {
        "the CreateTaskResult"
    };
    let bad = |rule: &str| {
        Error::invalid_response(format!(
            "server \"{server}\" answered {what}: {answer}: {rule}"
        ))
    };
    let id = match object.get("taskId") {
        Some(Value::String(id)) => id,
        Some(_) => return Err(bad("taskId is not a string")),
        None => return Err(bad("taskId is missing")),
    };
    check_task_id(id).map_err(|rule| bad(&format!("taskId {rule}")))?;
    if let Some(asked) = asked
        && asked.expose_id() != id
    {
        return Err(bad("it is about another task than the one asked about"));
    }
    let status = match object.get("status") {
        Some(Value::String(status)) => {
            TaskStatus::parse(status).ok_or_else(|| bad("status is not one of the five"))?
        }
        Some(_) => return Err(bad("status is not a string")),
        None => return Err(bad("status is missing")),
    };
    let message = match object.get("statusMessage") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => {
            if text.len() > MAX_STATUS_MESSAGE_BYTES {
                return Err(bad(&format!(
                    "statusMessage is {} bytes; at most {MAX_STATUS_MESSAGE_BYTES} are accepted (a fixed bound)",
                    text.len()
                )));
            }
            if let Some(broken) = crate::text::forbidden_in(text) {
                return Err(bad(&format!(
                    "statusMessage contains {}",
                    broken.describe()
                )));
            }
            Some(text.clone())
        }
        Some(_) => return Err(bad("statusMessage is not a string")),
    };
    for field in ["createdAt", "lastUpdatedAt"] {
        match object.get(field) {
            Some(Value::String(stamp)) if is_timestamp(stamp) => {}
            Some(Value::String(_)) => {
                return Err(bad(&format!(
                    "{field} is not an ISO 8601 timestamp of at most {MAX_TIMESTAMP_BYTES} bytes"
                )));
            }
            Some(_) => return Err(bad(&format!("{field} is not a string"))),
            None => return Err(bad(&format!("{field} is missing"))),
        }
    }
    let millis = |field: &str| match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(ms) => Ok(Some(Duration::from_millis(ms))),
            None => Err(bad(&format!("{field} is not a non-negative integer"))),
        },
    };
    let ttl = millis("ttlMs")?;
    let interval = millis("pollIntervalMs")?;
    let object_member = |field: &str| match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map.clone())),
        Some(_) => Err(bad(&format!("{field} is not an object"))),
    };
    let (mut input_requests, mut result, mut error) = (None, None, None);
    if asked.is_some() {
        match status {
            TaskStatus::InputRequired => {
                input_requests = object_member("inputRequests")?;
                if input_requests.is_none() {
                    return Err(bad("status input_required without inputRequests"));
                }
            }
            TaskStatus::Completed => {
                result = object_member("result")?;
                if result.is_none() {
                    return Err(bad("status completed without result"));
                }
            }
            TaskStatus::Failed => {
                error = object_member("error")?;
                if error.is_none() {
                    return Err(bad("status failed without error"));
                }
            }
            TaskStatus::Working | TaskStatus::Cancelled => {}
        }
    }
    Ok(TaskState {
        id: id.clone(),
        status,
        message,
        ttl,
        interval,
        input_requests,
        result,
        error,
    })
}

/// `YYYY-MM-DD...`: at most [`MAX_TIMESTAMP_BYTES`] printable ASCII bytes.
fn is_timestamp(stamp: &str) -> bool {
    let bytes = stamp.as_bytes();
    bytes.len() >= 10
        && bytes.len() <= MAX_TIMESTAMP_BYTES
        && bytes.iter().all(|b| (0x20..=0x7e).contains(b))
        && bytes[..10].iter().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
}

/// Up to 10 % of `wait` more, at random: polls of many clients spread out.
fn with_jitter(wait: Duration) -> Duration {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0);
    let per_mille = hasher.finish() % 101;
    wait + wait.mul_f64(per_mille as f64 / 1000.0)
}

/// How the polls of one task stopped.
enum Stop {
    /// A task bound: the crate-authored reason naming the option.
    GaveUp(String),
}

/// One task being driven.
struct Driver<'a> {
    link: &'a Link,
    task: TaskHandle,
    options: &'a CallOptions,
    /// The call, for messages (`tools/call "tool"`).
    what: String,
    guard: CancelOnDrop,
    /// `maxTaskWaitMs` from the local receipt of the task (or the resume).
    wait_deadline: Instant,
    polls: u64,
    /// Keys of `inputRequests` given to the host (never again).
    answered: HashSet<String>,
    /// The last status seen, and the local time it was first seen.
    status: Option<(TaskStatus, Instant)>,
    /// The latest `ttlMs` and `pollIntervalMs`.
    ttl: Option<Duration>,
    interval: Option<Duration>,
    /// The client's own backoff when the server gives no interval.
    own_backoff: Duration,
    /// The last wait before jitter (a transient failure waits twice as long).
    last_wait: Duration,
    /// After a transient failure: the least wait before the next poll.
    retry_wait: Option<Duration>,
    /// The `resultType: "task"` on `tasks/get` was reported.
    noticed: bool,
}

impl<'a> Driver<'a> {
    fn new(link: &'a Link, task: TaskHandle, options: &'a CallOptions, what: String) -> Self {
        let limits = &link.core.limits;
        let wait = Duration::from_millis(limits.max_task_wait_ms);
        let now = Instant::now();
        Driver {
            link,
            guard: CancelOnDrop {
                link: link.clone(),
                task: task.clone(),
                armed: true,
            },
            task,
            options,
            what,
            wait_deadline: now
                .checked_add(wait)
                .unwrap_or(now + Duration::from_secs(86_400 * 365)),
            polls: 0,
            answered: HashSet::new(),
            status: None,
            ttl: None,
            interval: None,
            own_backoff: OWN_BACKOFF_FIRST,
            last_wait: Duration::ZERO,
            retry_wait: None,
            noticed: false,
        }
    }

    fn server(&self) -> &str {
        &self.link.core.server
    }

    /// The polls, until the task ends or a bound stops them.
    async fn drive(&mut self, created: Option<TaskState>) -> Result<ToolResult> {
        let outcome = self.poll_until_end(created).await;
        match outcome {
            Ok(result) => {
                self.guard.armed = false;
                Ok(result)
            }
            Err(Ok(Stop::GaveUp(why))) => Err(self.give_up(why).await),
            Err(Err(error)) => {
                // Ended or gone: nothing to cancel (and with no session left,
                // nothing can be sent: the guard checks).
                if self.ended() || error.kind() == ErrorKind::NotFound {
                    self.guard.armed = false;
                }
                Err(error)
            }
        }
    }

    /// Whether the last status seen was terminal.
    fn ended(&self) -> bool {
        self.status.is_some_and(|(status, _)| status.is_terminal())
    }

    async fn poll_until_end(
        &mut self,
        created: Option<TaskState>,
    ) -> std::result::Result<ToolResult, std::result::Result<Stop, Error>> {
        let mut wait = Duration::ZERO;
        if let Some(created) = created {
            self.observe(&created);
            wait = self.next_wait();
        }
        let limits = &self.link.core.limits;
        loop {
            if self.polls >= limits.max_task_polls {
                return Err(Ok(Stop::GaveUp(format!(
                    "its task was polled maxTaskPolls ({}) times without ending",
                    limits.max_task_polls
                ))));
            }
            let now = Instant::now();
            let at = now.checked_add(wait).unwrap_or(self.wait_deadline);
            if at > self.wait_deadline {
                // No poll can come within the wait: waiting on is pointless.
                return Err(Ok(Stop::GaveUp(format!(
                    "its task did not end within maxTaskWaitMs ({} ms; the next poll the server's interval allows would come later)",
                    limits.max_task_wait_ms
                ))));
            }
            if let Some(backstop) = self.backstop()
                && at >= backstop
            {
                tokio::time::sleep_until(backstop).await;
                return Err(Ok(Stop::GaveUp(format!(
                    "its task kept one status past its ttlMs ({} ms, the TTL backstop)",
                    self.ttl.unwrap_or_default().as_millis()
                ))));
            }
            tokio::time::sleep_until(at).await;
            let deadline = (Instant::now() + limits.request_timeout()).min(self.wait_deadline);
            self.polls += 1;
            let answer = task_request(self.link, "tasks/get", &self.task, None, deadline).await;
            let answer = match answer {
                Ok(answer) => answer,
                Err(error) if self.transient(&error) => {
                    wait = self.next_wait();
                    continue;
                }
                Err(error) => return Err(Err(self.not_found("tasks/get", error))),
            };
            self.retry_wait = None;
            self.check_result_type(&answer).map_err(Err)?;
            let state = read_task(self.link, &self.what, &answer, Some(&self.task)).map_err(Err)?;
            drop(answer);
            self.observe(&state);
            match state.status {
                TaskStatus::Completed => return self.completed(state.result).map_err(Err),
                TaskStatus::Failed => return Err(Err(self.failed(state.error))),
                TaskStatus::Cancelled => {
                    return Err(Err(Error::new(
                        ErrorKind::TaskCancelled,
                        format!(
                            "server \"{}\" ended the task of {} as cancelled",
                            self.server(),
                            self.what
                        ),
                    )));
                }
                TaskStatus::InputRequired => {
                    let requests = state.input_requests.unwrap_or_default();
                    self.answer_inputs(requests).await.map_err(Err)?;
                }
                TaskStatus::Working => {}
            }
            wait = self.next_wait();
        }
    }

    /// Records an answer: the status (and when it changed), the server's
    /// interval and TTL; tells the observer.
    fn observe(&mut self, state: &TaskState) {
        let now = Instant::now();
        match self.status {
            Some((status, _)) if status == state.status => {}
            _ => self.status = Some((state.status, now)),
        }
        self.ttl = state.ttl;
        self.interval = state.interval;
        if let Some(observer) = &self.options.observer {
            observer(CallEvent::Task(TaskUpdate {
                task: self.task.clone(),
                status: state.status,
                status_message: state.message.clone(),
                polls: self.polls,
                poll_interval: state.interval,
            }));
        }
    }

    /// The TTL backstop: the current status's first sighting plus `ttlMs`.
    fn backstop(&self) -> Option<Instant> {
        let (_, since) = self.status?;
        since.checked_add(self.ttl?)
    }

    /// The wait before the next poll (see the module docs).
    fn next_wait(&mut self) -> Duration {
        let limits = &self.link.core.limits;
        let floor = Duration::from_millis(limits.task_min_poll_interval_ms);
        let ceiling = Duration::from_millis(limits.task_max_poll_interval_ms);
        let base = match self.interval {
            Some(server) => server.max(floor),
            None => {
                let own = self.own_backoff.min(ceiling).max(floor);
                self.own_backoff = self.own_backoff.mul_f64(1.5).min(ceiling);
                own
            }
        };
        let base = match self.retry_wait {
            Some(retry) => base.max(retry),
            None => base,
        };
        self.last_wait = base;
        with_jitter(base)
    }

    /// Whether a failed poll is worth another (an HTTP `429`/`5xx`, a poll not
    /// answered in time while the session lives); sets the longer wait.
    fn transient(&mut self, error: &Error) -> bool {
        let core = &self.link.core;
        let transient = match error.kind() {
            ErrorKind::HttpStatus => error
                .http_status()
                .is_some_and(|status| status == 429 || status >= 500),
            ErrorKind::Timeout => core.terminal().is_none(),
            _ => false,
        };
        if !transient {
            return false;
        }
        let limits = &core.limits;
        let ceiling = Duration::from_millis(limits.task_max_poll_interval_ms)
            .max(self.interval.unwrap_or_default());
        let floor = Duration::from_millis(limits.task_min_poll_interval_ms);
        let doubled = self.last_wait.max(floor).saturating_mul(2);
        let mut wait = doubled.min(ceiling);
        if let Some(asked) = error.retry_after() {
            wait = wait.max(asked);
        }
        self.retry_wait = Some(wait);
        true
    }

    /// `resultType` of a `tasks/get` answer: `complete` or absent; `task`
    /// tolerated (reported once).
    fn check_result_type(&mut self, answer: &Map<String, Value>) -> Result<()> {
        match answer.get("resultType") {
            None => Ok(()),
            Some(Value::String(kind)) if kind == "complete" => Ok(()),
            Some(Value::String(kind)) if kind == "task" => {
                let core = &self.link.core;
                if !self.noticed && core.diagnostics.is_enabled() {
                    core.diagnostics.emit(DiagnosticEvent::TaskNotice {
                        server: core.server.clone(),
                        reason: "tasks/get answered with resultType \"task\" (tolerated; the extension says \"complete\")",
                    });
                }
                self.noticed = true;
                Ok(())
            }
            Some(_) => Err(Error::invalid_response(format!(
                "server \"{}\" answered tasks/get for {} with a resultType other than complete",
                self.server(),
                self.what
            ))),
        }
    }

    /// A `-32602` answering `method` about the task: the server does not know
    /// it (`not_found`); other errors pass.
    fn not_found(&self, method: &str, error: Error) -> Error {
        if error.kind() != ErrorKind::RemoteError
            || error.remote_code() != Some(jsonrpc::INVALID_PARAMS)
        {
            return error;
        }
        let detail = error.detail().cloned();
        let missing = Error::new(
            ErrorKind::NotFound,
            format!(
                "server \"{}\" does not know the task of {} (forgotten or expired: {method} answered with JSON-RPC error {})",
                self.server(),
                self.what,
                jsonrpc::INVALID_PARAMS
            ),
        );
        match detail {
            Some(detail) => missing.with_detail(detail),
            None => missing,
        }
    }

    /// `completed`: the inlined result, read as a `tools/call` result.
    fn completed(&self, result: Option<Map<String, Value>>) -> Result<ToolResult> {
        let result = result.unwrap_or_default();
        match result.get("resultType") {
            None => {}
            Some(Value::String(kind)) if kind == "complete" => {}
            Some(_) => {
                return Err(Error::invalid_response(format!(
                    "server \"{}\" completed the task of {} with a result whose resultType is not complete",
                    self.server(),
                    self.what
                )));
            }
        }
        let bounds = ContentBounds::from(&self.link.core.limits);
        ToolResult::from_value(Value::Object(result), Era::Modern, &bounds)
    }

    /// `failed`: `remote_error` with the inlined code; the message and data go
    /// to the diagnostics observer.
    fn failed(&self, error: Option<Map<String, Value>>) -> Error {
        let core = &self.link.core;
        let mut error = error.unwrap_or_default();
        let Some(code) = error.get("code").and_then(Value::as_i64) else {
            return Error::invalid_response(format!(
                "server \"{}\" failed the task of {} with an error whose code is not an integer",
                self.server(),
                self.what
            ));
        };
        if core.diagnostics.is_enabled() {
            let message = match error.remove("message") {
                Some(Value::String(text)) => text,
                _ => String::new(),
            };
            core.diagnostics.emit(DiagnosticEvent::RemoteError {
                server: core.server.clone(),
                code,
                message: SecretString::from(message),
                data: error
                    .remove("data")
                    .map(|data| SecretString::from(data.to_string())),
            });
        }
        Error::new(
            ErrorKind::RemoteError,
            format!(
                "server \"{}\" failed the task of {} with JSON-RPC error {code}",
                self.server(),
                self.what
            ),
        )
        .with_detail(Detail::Remote {
            code,
            supported: Vec::new(),
        })
    }

    /// `input_required`: the keys not seen before go to the host handler, the
    /// answers back with `tasks/update`.
    async fn answer_inputs(&mut self, requests: Map<String, Value>) -> Result<()> {
        let fresh: Map<String, Value> = requests
            .into_iter()
            .filter(|(key, _)| !self.answered.contains(key))
            .collect();
        if fresh.is_empty() {
            // All answered: the server has yet to take them.
            return Ok(());
        }
        let limits = &self.link.core.limits;
        if fresh.len() > MAX_INPUT_REQUESTS {
            return Err(Error::invalid_response(format!(
                "server \"{}\" sent {} new inputRequests in one poll of the task of {}; at most {MAX_INPUT_REQUESTS} are answered (a fixed bound)",
                self.server(),
                fresh.len(),
                self.what
            )));
        }
        let total = self.answered.len() + fresh.len();
        if total as u64 > limits.max_task_input_requests {
            return Err(Error::invalid_response(format!(
                "server \"{}\" asked {total} distinct inputRequests during the task of {}; maxTaskInputRequests is {}",
                self.server(),
                self.what,
                limits.max_task_input_requests
            )));
        }
        self.answered.extend(fresh.keys().cloned());
        let core = &self.link.core;
        let answers = Box::pin(self.link.protocol.inputs.answer_all(core, fresh)).await?;
        let deadline = (Instant::now() + limits.request_timeout()).min(self.wait_deadline);
        let ack = task_request(
            self.link,
            "tasks/update",
            &self.task,
            Some(&answers),
            deadline,
        )
        .await
        .map_err(|error| self.not_found("tasks/update", error))?;
        match ack.get("resultType") {
            None => Ok(()),
            Some(Value::String(kind)) if kind == "complete" => Ok(()),
            Some(_) => Err(Error::invalid_response(format!(
                "server \"{}\" answered tasks/update for {} with a resultType other than complete",
                self.server(),
                self.what
            ))),
        }
    }

    /// A task bound stopped the polls: the policy, then `timeout`.
    async fn give_up(&mut self, why: String) -> Error {
        self.guard.armed = false;
        let server = self.server().to_owned();
        let what = &self.what;
        match self.options.task_policy {
            TaskPolicy::Detach => Error::timeout(format!(
                "{what} on server \"{server}\" stopped waiting: {why}; the task was left running (Error::detached_task)"
            ))
            .with_detail(Detail::TaskGaveUp(Some(self.task.clone()))),
            TaskPolicy::Cancel => {
                cancel(self.link, &self.task).await;
                Error::timeout(format!(
                    "{what} on server \"{server}\" stopped waiting: {why}; tasks/cancel was sent (best effort)"
                ))
                .with_detail(Detail::TaskGaveUp(None))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_ids_follow_the_rules() {
        assert!(check_task_id("786512e2-9e0d-44bd-8f29-789f320fe840").is_ok());
        assert!(check_task_id("tâche-1").is_ok());
        assert_eq!(check_task_id(""), Err("is empty"));
        assert!(check_task_id(&"a".repeat(256)).is_ok());
        assert!(check_task_id(&"a".repeat(257)).is_err());
        for bad in ["a b", "a\tb", "a\u{200b}b", "a\u{2028}b", "a\u{7f}"] {
            assert!(check_task_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_task_states_debug_withholds_the_id_and_the_servers_text() {
        let state = TaskState {
            id: "bearer-task-7f3a".to_owned(),
            status: TaskStatus::Working,
            message: Some("private status".to_owned()),
            ttl: None,
            interval: Some(Duration::from_millis(100)),
            input_requests: None,
            result: None,
            error: None,
        };
        let shown = format!("{state:?}");
        assert!(!shown.contains("bearer-task-7f3a"), "{shown}");
        assert!(!shown.contains("private status"), "{shown}");
        assert!(shown.contains("Working"), "{shown}");
    }

    #[test]
    fn timestamps_have_the_iso_shape() {
        assert!(is_timestamp("2025-11-25T10:30:00Z"));
        assert!(is_timestamp("2026-07-28T10:30:00.123456+00:00"));
        assert!(is_timestamp("2026-07-28"));
        assert!(!is_timestamp("yesterday"));
        assert!(!is_timestamp("2026/07/28T10:30"));
        assert!(!is_timestamp(&format!("2026-07-28T{}", "0".repeat(60))));
        assert!(!is_timestamp("2026-07-28T10:30:00\u{e9}"));
    }

    #[test]
    fn jitter_is_upward_and_at_most_a_tenth() {
        let wait = Duration::from_millis(1000);
        for _ in 0..200 {
            let jittered = with_jitter(wait);
            assert!(jittered >= wait && jittered <= Duration::from_millis(1100));
        }
    }

    #[test]
    fn the_extension_is_found_in_capabilities() {
        use serde_json::json;
        assert!(offered_in(
            &json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
        ));
        assert!(!offered_in(
            &json!({"extensions": {"io.modelcontextprotocol/tasks": true}})
        ));
        assert!(!offered_in(&json!({"tasks": {}})));
    }
}
