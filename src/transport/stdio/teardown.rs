//! Teardown of the server's process tree (the [parent module](super)'s "Teardown"
//! section): the process group and the signals sent to it; the supervisor task,
//! which reaps the child and, once stdin is closed, waits [`SHUTDOWN_GRACE`], sends
//! SIGTERM to the group, waits [`TERM_GRACE`] and sends SIGKILL; and
//! [`StdioShutdown`], which starts that, hands on the stderr tail, and on the
//! synchronous drop path (no teardown run) kills the group itself.
//!
//! On Windows there is no group: the child's `start_kill` terminates its whole Job
//! Object, which teardown does after [`SHUTDOWN_GRACE`] and once more at its end,
//! and dropping the child closes the job (the parent module's "Windows" section).

use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use secrecy::SecretString;
use tokio::sync::watch;

use super::ServerChild;
use super::pipes::lock;
use crate::diagnostics::{DiagnosticEvent, Diagnostics};
use crate::redact::StderrCollector;
use crate::transport::Shutdown;

/// After stdin is closed at teardown, how long the child (and, on Unix, every other
/// process of its group) gets to exit before SIGTERM is sent to the group.
pub(super) const SHUTDOWN_GRACE: Duration = Duration::from_millis(250);
/// After SIGTERM to the server's process group, how long the group gets to exit
/// before SIGKILL is sent to it (Unix; on Windows the job is terminated after
/// [`SHUTDOWN_GRACE`], and this is how long the child then gets to be reaped). Teardown takes at most `SHUTDOWN_GRACE + TERM_GRACE` plus
/// SIGKILL's delivery.
pub(super) const TERM_GRACE: Duration = Duration::from_millis(250);
/// How often teardown checks whether the server's process group is empty.
pub(super) const GROUP_POLL: Duration = Duration::from_millis(10);
/// How long teardown waits for stderr to drain after the child is gone (a grandchild
/// may hold the pipe open).
const STDERR_DRAIN_GRACE: Duration = Duration::from_millis(100);

/// The server's process group on Unix: the child leads it, so its id is the
/// child's pid. Elsewhere there is none and only the child is killed.
#[derive(Clone, Copy, Debug)]
pub(super) struct ProcessGroup {
    #[cfg(unix)]
    id: rustix::process::Pid,
}

/// A signal teardown sends to the group.
#[derive(Clone, Copy, Debug)]
enum GroupSignal {
    Term,
    Kill,
}

impl ProcessGroup {
    /// The group `child` leads (it was spawned with `process_group(0)`), if its
    /// pid is known (it is until the child is reaped).
    #[cfg(unix)]
    pub(super) fn of(child: &ServerChild) -> Option<Self> {
        let pid = i32::try_from(child.id()?).ok()?;
        Some(ProcessGroup {
            id: rustix::process::Pid::from_raw(pid)?,
        })
    }

    #[cfg(not(unix))]
    pub(super) fn of(_child: &ServerChild) -> Option<Self> {
        None
    }

    /// Sends `signal` to every process of the group; errors (an empty group) are
    /// ignored.
    #[cfg(unix)]
    fn signal(self, signal: GroupSignal) {
        let signal = match signal {
            GroupSignal::Term => rustix::process::Signal::TERM,
            GroupSignal::Kill => rustix::process::Signal::KILL,
        };
        let _ = rustix::process::kill_process_group(self.id, signal);
    }

    #[cfg(not(unix))]
    fn signal(self, _signal: GroupSignal) {}

    /// Whether no process we may signal is left in the group (`kill(-pgid, 0)`).
    /// A member we may not signal (one that made itself another user's) counts
    /// as gone: nothing here could end it. A zombie counts as present until its
    /// parent reaps it, so waiting for an empty group is always bounded by a grace.
    #[cfg(unix)]
    fn is_empty(self) -> bool {
        rustix::process::test_kill_process_group(self.id).is_err()
    }

    #[cfg(not(unix))]
    fn is_empty(self) -> bool {
        true
    }
}

/// Ends the server's process group with SIGKILL when dropped before teardown has
/// finished with it: when the supervisor task is aborted, or dropped with its
/// runtime, or when [`StdioShutdown`] is dropped without its teardown having run.
/// No runtime is needed. The supervisor and the shutdown handle each hold one; they
/// share the flag that teardown sets once the group is empty, after which neither
/// signals again (the group id could then be reused).
#[derive(Clone, Debug)]
pub(super) struct GroupKiller {
    group: Option<ProcessGroup>,
    done: Arc<AtomicBool>,
}

impl GroupKiller {
    pub(super) fn new(group: Option<ProcessGroup>) -> Self {
        GroupKiller {
            group,
            done: Arc::new(AtomicBool::new(false)),
        }
    }

    /// SIGTERM to the group; where there is no group, the child's `start_kill`
    /// (on Windows, that terminates the child's whole Job Object).
    fn terminate(&self, child: &mut ServerChild) {
        match self.group {
            Some(group) => group.signal(GroupSignal::Term),
            // Without a group, the old behaviour: the child is killed.
            None => {
                let _ = child.start_kill();
            }
        }
    }

    /// SIGKILL to the group and to the child.
    fn kill(&self, child: &mut ServerChild) {
        if let Some(group) = self.group {
            group.signal(GroupSignal::Kill);
        }
        let _ = child.start_kill();
    }

    /// Whether the group has no member left (trivially, without a group).
    fn is_empty(&self) -> bool {
        self.group.is_none_or(ProcessGroup::is_empty)
    }

    /// Teardown is done with the group: never signal it again.
    fn finish(&self) {
        self.done.store(true, AtomicOrdering::Release);
    }

    /// SIGKILL to the group, unless teardown finished with it or it is empty.
    fn kill_now(&self) {
        if self.done.load(AtomicOrdering::Acquire) {
            return;
        }
        if let Some(group) = self.group.filter(|group| !group.is_empty()) {
            group.signal(GroupSignal::Kill);
        }
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// Waits until the child has exited (reaping it into `status`) and its group is
/// empty, or `deadline` passes. True when everything ended.
async fn wait_for_the_group(
    child: &mut ServerChild,
    status: &mut Option<Option<ExitStatus>>,
    group: &GroupKiller,
    deadline: tokio::time::Instant,
) -> bool {
    loop {
        if status.is_none() {
            // `wait` is cancel safe (tokio's `Child::wait`, on Windows too).
            tokio::select! {
                exited = child.wait() => *status = Some(exited.ok()),
                _ = tokio::time::sleep(GROUP_POLL) => {}
            }
        }
        if status.is_some() && group.is_empty() {
            return true;
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return false;
        }
        if status.is_some() {
            tokio::time::sleep(GROUP_POLL.min(deadline - now)).await;
        }
    }
}

/// Publishes the child's exit status when it exits; when asked to stop (or when
/// its [`StdioShutdown`] is gone), tears the process group down: a grace for the
/// child and the group to exit after stdin closed, SIGTERM to the group, a
/// second grace, SIGKILL to the group (see the [module docs](self)).
pub(super) async fn supervise(
    mut child: ServerChild,
    group: GroupKiller,
    exit_tx: watch::Sender<Option<ExitStatus>>,
    mut kill_rx: tokio::sync::oneshot::Receiver<()>,
) {
    // `Some(status)` once the child is reaped.
    let mut status: Option<Option<ExitStatus>> = None;
    tokio::select! {
        exited = child.wait() => {
            let exited = exited.ok();
            status = Some(exited);
            let _ = exit_tx.send(exited);
            // The session ends on this exit; its descendants may not have. Wait
            // for teardown (or for the shutdown handle to be dropped).
            let _ = kill_rx.await;
        }
        _ = &mut kill_rx => {}
    }
    // Stdin is already closed by the time we are asked: a grace to exit.
    let now = tokio::time::Instant::now();
    if !wait_for_the_group(&mut child, &mut status, &group, now + SHUTDOWN_GRACE).await {
        group.terminate(&mut child);
        let now = tokio::time::Instant::now();
        if !wait_for_the_group(&mut child, &mut status, &group, now + TERM_GRACE).await {
            group.kill(&mut child);
            if status.is_none() {
                status = Some(child.wait().await.ok());
            }
        }
    }
    // Windows: only the direct child is watched, not the rest of its job; what is
    // left of the tree ends with the job now.
    #[cfg(windows)]
    let _ = child.start_kill();
    group.finish();
    if let Some(exited) = status
        && exit_tx.borrow().is_none()
    {
        let _ = exit_tx.send(exited);
    }
}

pub(super) struct StdioShutdown {
    pub(super) server: Arc<str>,
    pub(super) diagnostics: Diagnostics,
    pub(super) kill: Option<tokio::sync::oneshot::Sender<()>>,
    pub(super) exit: watch::Receiver<Option<ExitStatus>>,
    pub(super) supervisor: tokio::task::JoinHandle<()>,
    pub(super) stderr_task: tokio::task::JoinHandle<()>,
    pub(super) collector: Arc<Mutex<StderrCollector>>,
    /// Kills the process group on drop unless teardown finished with it.
    pub(super) group: GroupKiller,
}

impl Shutdown for StdioShutdown {
    fn shutdown(mut self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            if let Some(kill) = self.kill.take() {
                let _ = kill.send(());
            }
            let _ = self.exit.wait_for(|status| status.is_some()).await;
            let _ = (&mut self.supervisor).await;
            let _ = tokio::time::timeout(STDERR_DRAIN_GRACE, &mut self.stderr_task).await;
            self.stderr_task.abort();
            let tail = lock(&self.collector).tail().to_string();
            if !tail.is_empty() {
                self.diagnostics.emit(DiagnosticEvent::StderrTail {
                    server: self.server.clone(),
                    tail: SecretString::from(tail),
                });
            }
        })
    }
}

impl Drop for StdioShutdown {
    fn drop(&mut self) {
        // Without a runtime to run the teardown (or with it cut short): SIGKILL to
        // the process group now, synchronously (`group`'s own `Drop`, a no-op once
        // teardown has finished with the group). The supervisor owns the child with
        // `kill_on_drop`; aborting it drops the child, which kills it too (on
        // Windows, dropping it closes the child's Job Object, which ends the tree).
        if self.kill.is_some() {
            self.supervisor.abort();
        }
        self.group.kill_now();
        self.stderr_task.abort();
    }
}
