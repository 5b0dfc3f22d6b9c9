//! Progress of a call (beyond-tools.md §4.2, §0.4): the tokens of the calls
//! that asked for it, and the routing of every `notifications/progress` to the
//! call its token names.
//!
//! A call gets a token when it has an observer
//! ([`CallOptions::on_event`]) or restarts its timeout on progress
//! ([`CallOptions::reset_timeout_on_progress`]); any other call sends none and
//! costs nothing here. The token is a number from this session's own counter
//! (unique among the session's calls, active or not), sent as
//! `params._meta.progressToken` in both eras, on every round of a
//! multi-round-trip call. It is active from before the first round is sent
//! until the call returns ([`ProgressCall`] dropped, or
//! [`ProgressCall::retire`] when `tools/call` hands back a task: 2026-07-28
//! tasks carry no progress).
//!
//! | a notification | is |
//! | --- | --- |
//! | naming no active token (`"7"` is not `7`; a call that returned) | dropped |
//! | 2026-07-28 over HTTP, not on the event stream answering its own call's request | dropped |
//! | `progress` not a finite number, `total` not a finite number ≥ 0, `message` not a string | dropped |
//! | `message` over [`MAX_PROGRESS_MESSAGE_BYTES`] bytes, or breaking the display-text rules (no Cc, Cf, U+2028/2029, lone surrogate) | dropped |
//! | `progress` not above the last delivered for the token | dropped, and restarts no timer |
//! | past `maxNotificationsPerSecond` for the token | dropped |
//! | anything else | delivered: [`CallEvent::Progress`] to the call's observer, and the call's timeout restarted when it asked |
//!
//! `total` and `message` may be absent or `null` (read as absent). JSON has no
//! NaN or infinity, and a number past `f64`'s range (`1e400`) breaks the rule
//! every frame keeps (bound-an-untrusted-server.md, "JSON depth and
//! expansion"): it ends the session with `protocol_error` before any rule
//! here is read, as in any other message. Every drop
//! is reported to the diagnostics observer
//! ([`DiagnosticEvent::NotificationDropped`], at most once per reason per
//! second); none is ever fatal to the call or the session.
//!
//! The observer is called on the task that routed the notification (the
//! session's reader, or the call's own task over HTTP), in the order the
//! notifications were accepted: nothing waits to be delivered, so there is
//! nothing to coalesce. One that panics loses that event, not the session.
//!
//! **Restarting the timeout.** With `reset_timeout_on_progress(true)`, each
//! delivered notification moves the call's deadline to its timeout from now
//! (its own, else `requestTimeoutMs`), never past `maxRequestMs` from the
//! call's start: a call that reaches that cap fails with `timeout` naming
//! `maxRequestMs`. A deadline that progress moved is not moved again by the
//! host's time in a 2026-07-28 input round (that moves the call's own
//! deadline), so it still passes once the server stops reporting.
//!
//! **Which stream.** Over 2026-07-28 HTTP a token counts only on its own
//! call's stream: each request of a call with a token is sent with the token
//! as its stream tag, and the transport delivers the frames of that request's
//! event stream with it. Over stdio there is one stream, and in the legacy era
//! progress may come on any stream (the standalone GET stream included).
//!
//! [`CallOptions::on_event`]: crate::CallOptions::on_event
//! [`CallOptions::reset_timeout_on_progress`]: crate::CallOptions::reset_timeout_on_progress
//! [`DiagnosticEvent::NotificationDropped`]: crate::DiagnosticEvent::NotificationDropped

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

use super::super::call_options::{CallEvent, CallOptions, PROGRESS_TOKEN_KEY, Progress};
use super::super::engine::{Core, MovableDeadline, lock};
use super::era::RequestMeta;
use super::feeds::DropReports;
use crate::events::RateWindow;
use crate::jsonrpc;
use crate::limits::Limits;

/// The notification's method.
pub(crate) const PROGRESS: &str = "notifications/progress";

/// The longest `message` delivered, in UTF-8 bytes (a fixed rule).
pub(crate) const MAX_PROGRESS_MESSAGE_BYTES: usize = 4096;

/// The host's observer of one call.
type Observer = Arc<dyn Fn(CallEvent) + Send + Sync>;

/// The session's active progress tokens, and where their notifications go.
#[derive(Default)]
pub(crate) struct Progresses {
    /// The last token minted.
    minted: AtomicU64,
    active: Mutex<HashMap<u64, Arc<Watch>>>,
    reported: DropReports,
}

/// What one active token delivers to, and its state.
struct Watch {
    observer: Option<Observer>,
    restart: Option<Restart>,
    state: Mutex<WatchState>,
}

/// A call that restarts its timeout on progress.
struct Restart {
    timeout: Duration,
    /// `maxRequestMs` from the call's start.
    cap: Instant,
    deadline: Arc<MovableDeadline>,
    /// A restart was held back by `cap`.
    capped: AtomicBool,
}

struct WatchState {
    /// The last `progress` delivered.
    last: Option<f64>,
    rate: RateWindow,
}

impl Progresses {
    /// Registers a call made with `options`, when it asks for progress (see
    /// the module docs); `None` otherwise, at no cost.
    pub(crate) fn register(
        self: &Arc<Self>,
        options: &CallOptions,
        limits: &Limits,
    ) -> Option<ProgressCall> {
        if options.observer.is_none() && !options.reset_timeout_on_progress {
            return None;
        }
        let restart = options.reset_timeout_on_progress.then(|| Restart {
            timeout: options.request_timeout(limits),
            cap: Instant::now() + Duration::from_millis(limits.max_request_ms),
            deadline: Arc::new(MovableDeadline::new()),
            capped: AtomicBool::new(false),
        });
        let watch = Arc::new(Watch {
            observer: options.observer.clone(),
            restart,
            state: Mutex::new(WatchState {
                last: None,
                rate: RateWindow::new(limits.max_notifications_per_second),
            }),
        });
        let token = self.minted.fetch_add(1, Ordering::Relaxed) + 1;
        lock(&self.active).insert(token, watch.clone());
        Some(ProgressCall {
            routes: self.clone(),
            token,
            watch,
        })
    }

    /// Routes one `notifications/progress` (see the module docs). `stream`:
    /// the tag of the request whose stream carried it, when known;
    /// `own_stream_only`: the token counts only on its own call's stream
    /// (2026-07-28 over HTTP).
    pub(crate) fn route(
        &self,
        core: &Core,
        frame: &[u8],
        stream: Option<u64>,
        own_stream_only: bool,
    ) {
        if lock(&self.active).is_empty() {
            return self.drop_one(core, "names no active progress token");
        }
        let params = jsonrpc::request_params(frame);
        // Compared exactly: our tokens are integers, and "7" is not 7.
        let token = params
            .as_ref()
            .and_then(|p| p.get(PROGRESS_TOKEN_KEY))
            .filter(|token| token.is_u64())
            .and_then(Value::as_u64);
        let watch = token.and_then(|token| lock(&self.active).get(&token).cloned());
        let (Some(token), Some(watch), Some(params)) = (token, watch, params) else {
            return self.drop_one(core, "names no active progress token");
        };
        if own_stream_only && stream != Some(token) {
            return self.drop_one(core, "came on another request's stream");
        }
        let progress = match read(&params) {
            Ok(progress) => progress,
            Err(reason) => return self.drop_one(core, reason),
        };
        let mut state = lock(&watch.state);
        if state.last.is_some_and(|last| progress.progress <= last) {
            drop(state);
            return self.drop_one(core, "progress did not increase");
        }
        if !state.rate.admit(Instant::now()) {
            drop(state);
            return self.drop_one(core, "past maxNotificationsPerSecond");
        }
        state.last = Some(progress.progress);
        if let Some(restart) = &watch.restart {
            restart.restart();
        }
        // Under the token's lock, so that its notifications reach the
        // observer in the order they were accepted, whichever task routes them.
        if let Some(observer) = &watch.observer {
            let event = CallEvent::Progress(progress);
            // A panicking observer loses its event, never the session's reader.
            let _ = std::panic::catch_unwind(AssertUnwindSafe(|| observer(event)));
        }
    }

    fn drop_one(&self, core: &Core, reason: &'static str) {
        self.reported.report(core, PROGRESS, reason);
    }
}

impl Restart {
    /// Moves the deadline to the timeout from now, within the cap.
    fn restart(&self) {
        let wanted = Instant::now() + self.timeout;
        if wanted > self.cap {
            self.capped.store(true, Ordering::Release);
        }
        self.deadline.move_to(wanted.min(self.cap));
    }
}

/// Reads the values of a notification whose token matched; the rule broken
/// otherwise.
fn read(params: &Map<String, Value>) -> std::result::Result<Progress, &'static str> {
    const VALUES: &str = "breaks a value rule";
    // serde_json holds only finite floats: a number is finite (one past
    // `f64`'s range never gets here: it breaks the frame rule every message
    // keeps, and ends the session with `protocol_error`).
    let progress = params
        .get("progress")
        .and_then(Value::as_f64)
        .ok_or(VALUES)?;
    let total = match params.get("total") {
        None | Some(Value::Null) => None,
        Some(total) => Some(total.as_f64().filter(|t| *t >= 0.0).ok_or(VALUES)?),
    };
    let message = match params.get("message") {
        None | Some(Value::Null) => None,
        Some(Value::String(message)) => {
            crate::text::check_bounded_display(
                "message",
                message,
                MAX_PROGRESS_MESSAGE_BYTES,
                "the fixed limit",
            )
            .map_err(|_| "breaks a message rule")?;
            Some(message.clone())
        }
        Some(_) => return Err("breaks a message rule"),
    };
    Ok(Progress {
        progress,
        total,
        message,
    })
}

/// One call's progress token, active until dropped (or retired).
pub(crate) struct ProgressCall {
    routes: Arc<Progresses>,
    token: u64,
    watch: Arc<Watch>,
}

impl ProgressCall {
    /// The token sent as `params._meta.progressToken`.
    pub(crate) fn token(&self) -> u64 {
        self.token
    }

    /// The stream tag of the call's requests (2026-07-28): the token.
    pub(crate) fn stream_tag(&self) -> Option<u64> {
        Some(self.token)
    }

    /// The deadline progress moves, when the call restarts its timeout on
    /// progress.
    pub(crate) fn later(&self) -> Option<Arc<MovableDeadline>> {
        self.watch.restart.as_ref().map(|r| r.deadline.clone())
    }

    /// Whether `maxRequestMs` held back a restart: the call's deadline is then
    /// that cap.
    pub(crate) fn capped(&self) -> bool {
        self.watch
            .restart
            .as_ref()
            .is_some_and(|r| r.capped.load(Ordering::Acquire))
    }

    /// Retires the token: later notifications naming it are dropped. Dropping
    /// the call does it too; `tools/call` returning a task does it at once.
    pub(crate) fn retire(&self) {
        lock(&self.routes.active).remove(&self.token);
    }
}

impl Drop for ProgressCall {
    fn drop(&mut self) {
        self.retire();
    }
}

/// The `_meta` of a 2026-07-28 call with members of its own (the host's, and
/// its progress token) beside the session's; `None` when it adds none (the
/// session's is sent as is). Built once per call, only for such calls.
pub(crate) fn modern_meta(
    session: &RequestMeta,
    host: Option<&Map<String, Value>>,
    progress: Option<&ProgressCall>,
) -> Option<RequestMeta> {
    match (host, progress) {
        (None, None) => None,
        (Some(host), None) => Some(session.with_members(host)),
        (host, Some(progress)) => {
            let mut members = host.cloned().unwrap_or_default();
            members.insert(PROGRESS_TOKEN_KEY.into(), progress.token().into());
            Some(session.with_members(&members))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().cloned().expect("an object")
    }

    #[test]
    fn values_are_finite_totals_not_negative_and_messages_display_text() {
        let ok = read(&params(
            json!({"progress": 1.5, "total": 3, "message": "half"}),
        ))
        .expect("valid");
        assert_eq!(ok.progress, 1.5);
        assert_eq!(ok.total, Some(3.0));
        assert_eq!(ok.message.as_deref(), Some("half"));
        let bare = read(&params(
            json!({"progress": 0, "total": null, "message": null}),
        ))
        .expect("null reads as absent");
        assert_eq!((bare.total, bare.message), (None, None));
        let max = "é".repeat(MAX_PROGRESS_MESSAGE_BYTES / 2);
        assert!(read(&params(json!({"progress": 1, "message": max}))).is_ok());
        for (broken, reason) in [
            (json!({}), "breaks a value rule"),
            (json!({"progress": "1"}), "breaks a value rule"),
            (json!({"progress": null}), "breaks a value rule"),
            (json!({"progress": 1, "total": -1}), "breaks a value rule"),
            (
                json!({"progress": 1, "total": "NaN"}),
                "breaks a value rule",
            ),
            (
                json!({"progress": 1, "message": "x".repeat(MAX_PROGRESS_MESSAGE_BYTES + 1)}),
                "breaks a message rule",
            ),
            (
                json!({"progress": 1, "message": "a\u{1b}[31m"}),
                "breaks a message rule",
            ),
            (
                json!({"progress": 1, "message": "pay\u{202E}"}),
                "breaks a message rule",
            ),
            (
                json!({"progress": 1, "message": 7}),
                "breaks a message rule",
            ),
        ] {
            assert_eq!(
                read(&params(broken.clone())).err(),
                Some(reason),
                "{broken}"
            );
        }
    }

    #[test]
    fn a_restart_moves_the_deadline_within_the_cap() {
        let restart = Restart {
            timeout: Duration::from_secs(10),
            cap: Instant::now() + Duration::from_secs(60),
            deadline: Arc::new(MovableDeadline::new()),
            capped: AtomicBool::new(false),
        };
        restart.restart();
        let moved = restart.deadline.get().expect("moved");
        assert!(moved <= restart.cap && moved > Instant::now());
        assert!(!restart.capped.load(Ordering::Acquire));
        let tight = Restart {
            cap: Instant::now() + Duration::from_millis(1),
            deadline: Arc::new(MovableDeadline::new()),
            ..restart
        };
        tight.restart();
        assert_eq!(tight.deadline.get(), Some(tight.cap), "held at the cap");
        assert!(tight.capped.load(Ordering::Acquire));
    }
}
