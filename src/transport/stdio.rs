//! The stdio transport: a child process speaking newline-delimited JSON-RPC.
//!
//! - stdin, stdout and stderr are piped; stdout is read through the bounded
//!   [`FramedReader`].
//! - stderr is drained continuously into a [`StderrCollector`]: each complete line is
//!   redacted, then only the redacted text is kept as a bounded tail, which reaches
//!   nobody but an installed diagnostics observer, once, when the session ends.
//! - The child's environment is **not** the parent's: it is the allow-list
//!   [`INHERITED_ENV_VARS`] (plus `LC_*`) taken from the parent, then the entry's
//!   own `env`, so the host's credentials do not reach every server.
//! - Terminal events: stdout EOF is `connection_closed` "stdout closed"; a child exit
//!   is "exited with code N" (or "exited by signal N"); a failed write is
//!   "stdin closed"; an over-long line is `protocol_error`. When stdout ends because
//!   the child exited, the exit is reported: the reader waits up to
//!   [`EXIT_GRACE`] after EOF for the exit status so the more useful event wins.
//!
//! # Teardown: the whole process tree
//!
//! Servers are very often started through wrappers (`npx`, `uvx`, `sh -c`, `node`
//! spawning workers), and killing only the direct child would orphan the real server
//! and everything it started. So on Unix the child is started as the leader of a
//! new **process group** (`setpgid(0, 0)`, through [`Command::process_group`]); the
//! processes it starts join that group unless they leave it themselves, and
//! teardown ends the group, not just the child. Closing the session tears the
//! process down:
//!
//! 1. stdin is closed (the engine drops the sink first), so a well-behaved server
//!    exits by itself;
//! 2. teardown waits up to [`SHUTDOWN_GRACE`] for the child to exit and the group
//!    to empty;
//! 3. then sends **SIGTERM to the group** and waits up to [`TERM_GRACE`];
//! 4. then sends **SIGKILL to the group** and reaps the child.
//!
//! Steps 3 and 4 happen only while some member is left, and also when the child
//! has already exited but its descendants remain (the group id is the dead
//! leader's pid, and a group can be signalled as long as it has members). Teardown
//! therefore takes at most `SHUTDOWN_GRACE + TERM_GRACE` plus the time the kernel
//! takes to deliver SIGKILL, checking the group every [`GROUP_POLL`]. A server that
//! exits on stdin EOF, with nothing left behind, is not waited for at all. A member
//! that has exited but was not yet reaped by whoever inherited it (a zombie, in a
//! container whose PID 1 does not reap) still counts as present, so teardown then
//! waits out both graces.
//!
//! The same happens when the session ends because the child exited on its own
//! (its descendants are ended), and when the client is dropped without `close()`:
//! the teardown task runs it if a runtime is still running; if there is none (the
//! runtime was dropped with the client), `Drop` sends SIGKILL to the group
//! synchronously, and the child itself is killed by `kill_on_drop`.
//!
//! What this does not cover:
//!
//! - **A member that leaves the group** (`setsid`, `setpgid`, a daemonizing
//!   server) is out of reach: nothing short of a cgroup can follow it.
//! - **The host killed with SIGKILL** (or aborting without unwinding) runs no code
//!   at all. What holds then: the child's stdin reaches EOF (the host's end of the
//!   pipe closes with the host), so a server that exits on EOF still exits; its
//!   writes to stdout fail with `EPIPE`. Members that ignore EOF survive, reparented
//!   to init or to the nearest subreaper. A parent-death signal
//!   (`PR_SET_PDEATHSIG`) would need code between `fork` and `exec` (`pre_exec`,
//!   which is `unsafe`, forbidden in this crate), and it fires when the forking
//!   *thread* exits, which a tokio blocking-pool thread does. A host that must not
//!   leak processes even then runs under a supervisor that owns the whole tree: a
//!   systemd service or scope (`KillMode=control-group`, the default, kills every
//!   process in the unit's cgroup when the unit stops, `systemd-run --scope` for a
//!   command), a container whose init reaps and signals its children, or a
//!   subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`, e.g. `tini -s`) that ends the
//!   orphans it inherits.
//! - Because the server leads its own group, a terminal's Ctrl-C (SIGINT to the
//!   foreground group) reaches the host but not the server: the host's teardown
//!   ends the server.
//! - **Windows** has no process groups of this kind; only the direct child is
//!   killed there. Ending the tree would need a Job Object created with
//!   `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, the child assigned to it (ideally
//!   started suspended, so it cannot spawn before it is assigned), and the job
//!   handle closed at teardown (see `SECURITY.md`).

use std::ffi::OsString;
use std::fmt;
use std::io::IoSlice;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use secrecy::{ExposeSecret, SecretString};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use super::framing::{Framed, FramedReader};
use super::{
    Connection, FrameSink, FrameSource, InboundEvent, Medium, OutboundFrame, Shutdown, Transport,
    TransportContext, TrySend,
};
use crate::diagnostics::{DiagnosticEvent, Diagnostics};
use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::redact::{Redactor, StderrCollector};

/// Parent variables a child inherits (when set). `LC_*` variables are inherited too.
///
/// POSIX: `PATH HOME USER LOGNAME SHELL TERM LANG TMPDIR TZ`. Windows equivalents:
/// `SystemRoot SystemDrive windir ComSpec PATHEXT TEMP TMP USERPROFILE USERNAME
/// HOMEDRIVE HOMEPATH APPDATA LOCALAPPDATA ProgramData ProgramFiles
/// ProgramFiles(x86) CommonProgramFiles NUMBER_OF_PROCESSORS PROCESSOR_ARCHITECTURE OS`.
pub const INHERITED_ENV_VARS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "TMPDIR",
    "TZ",
    "SystemRoot",
    "SystemDrive",
    "windir",
    "ComSpec",
    "PATHEXT",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "USERNAME",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "ProgramData",
    "ProgramFiles",
    "ProgramFiles(x86)",
    "CommonProgramFiles",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "OS",
];

/// After stdout EOF, how long the reader waits for the exit status.
pub const EXIT_GRACE: Duration = Duration::from_millis(100);
/// After stdin is closed at teardown, how long the child (and, on Unix, every other
/// process of its group) gets to exit before SIGTERM is sent to the group.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(250);
/// After SIGTERM to the server's process group, how long the group gets to exit
/// before SIGKILL is sent to it (Unix; elsewhere the child is killed after
/// [`SHUTDOWN_GRACE`]). Teardown takes at most `SHUTDOWN_GRACE + TERM_GRACE` plus
/// SIGKILL's delivery.
pub const TERM_GRACE: Duration = Duration::from_millis(250);
/// How often teardown checks whether the server's process group is empty.
pub const GROUP_POLL: Duration = Duration::from_millis(10);
/// How long teardown waits for stderr to drain after the child is gone (a grandchild
/// may hold the pipe open).
const STDERR_DRAIN_GRACE: Duration = Duration::from_millis(100);

/// How to start a stdio MCP server.
///
/// `Debug` prints the program, the number of arguments and the environment *names*
/// only (arguments often carry credentials); values given
/// with [`StdioCommand::env`] are kept as secrets and are redacted from stderr.
///
/// ```
/// let cmd = smthrs_mcp::StdioCommand::new("node")
///     .arg("server.mjs")
///     .env("API_TOKEN", "s3cr3t-value")
///     .current_dir("/srv/tools");
/// assert!(!format!("{cmd:?}").contains("s3cr3t"));
/// ```
#[derive(Clone)]
#[must_use]
pub struct StdioCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(String, SecretString)>,
    cwd: Option<PathBuf>,
}

impl StdioCommand {
    /// A command running `program` (looked up on the child's `PATH`).
    pub fn new(program: impl Into<OsString>) -> Self {
        StdioCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets one environment variable for the child (on top of the allow-list).
    /// The value is treated as a secret: redacted from stderr, never printed.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env
            .push((key.into(), SecretString::from(value.into())));
        self
    }

    /// Sets an environment variable from an existing secret.
    pub fn env_secret(mut self, key: impl Into<String>, value: SecretString) -> Self {
        self.env.push((key.into(), value));
        self
    }

    /// Sets the child's working directory.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    fn build(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.args).env_clear();
        for (key, value) in std::env::vars_os() {
            let Some(name) = key.to_str() else { continue };
            if INHERITED_ENV_VARS.contains(&name) || name.starts_with("LC_") {
                command.env(&key, value);
            }
        }
        for (key, value) in &self.env {
            command.env(key, value.expose_secret());
        }
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // The child leads a new process group (its id is the child's pid), which
        // the processes it starts join: teardown signals the whole group.
        #[cfg(unix)]
        command.process_group(0);
        command
    }
}

impl fmt::Debug for StdioCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Arguments often carry credentials (`--api-key X`): count them only.
        crate::redact::debug_command(
            f,
            "StdioCommand",
            ("program", &self.program),
            self.args.len(),
            &self.env,
            &self.cwd,
        )
    }
}

impl Transport for StdioCommand {
    fn open(&self, ctx: TransportContext) -> BoxFuture<'static, Result<Connection>> {
        let command = self.clone();
        Box::pin(async move { open_stdio(command, ctx) })
    }
}

fn open_stdio(command: StdioCommand, ctx: TransportContext) -> Result<Connection> {
    let mut child = command.build().spawn().map_err(|e| {
        // The io::ErrorKind is generic ("not found", "permission denied"); the
        // program path and arguments are process details and stay out.
        Error::spawn_failed(format!(
            "server \"{}\" could not be started ({})",
            ctx.server,
            e.kind()
        ))
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(Error::spawn_failed(format!(
            "server \"{}\" could not be started (pipes unavailable)",
            ctx.server
        )));
    };

    let redactor = Redactor::new(command.env.iter().map(|(_, v)| v.expose_secret()));
    let collector = Arc::new(Mutex::new(StderrCollector::new(
        redactor,
        Limits::usize_of(ctx.limits.max_stderr_bytes),
    )));
    let stderr_task = tokio::spawn(drain_stderr(stderr, collector.clone()));

    let group = GroupKiller::new(ProcessGroup::of(&child));
    let (exit_tx, exit_rx) = watch::channel(None);
    let (kill_tx, kill_rx) = tokio::sync::oneshot::channel();
    let supervisor = tokio::spawn(supervise(child, group.clone(), exit_tx, kill_rx));

    let max_frame = Limits::usize_of(ctx.limits.max_frame_bytes);
    Ok(Connection {
        medium: Medium::Stream,
        sink: Box::new(StdinSink {
            stdin: Some(stdin),
            slices: Vec::new(),
            partial: None,
        }),
        source: Box::new(StdoutSource {
            reader: FramedReader::new(stdout, max_frame),
            exit: exit_rx.clone(),
            max_frame,
            drain_deadline: None,
        }),
        shutdown: Box::new(StdioShutdown {
            server: ctx.server,
            diagnostics: ctx.diagnostics,
            kill: Some(kill_tx),
            exit: exit_rx,
            supervisor,
            stderr_task,
            collector,
            group,
        }),
    })
}

async fn drain_stderr(
    mut stderr: tokio::process::ChildStderr,
    collector: Arc<Mutex<StderrCollector>>,
) {
    let mut chunk = vec![0u8; 8192];
    loop {
        match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lock(&collector).push(&chunk[..n]),
        }
    }
    lock(&collector).finish();
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The server's process group on Unix: the child leads it, so its id is the
/// child's pid. Elsewhere there is none and only the child is killed.
#[derive(Clone, Copy, Debug)]
struct ProcessGroup {
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
    fn of(child: &Child) -> Option<Self> {
        let pid = i32::try_from(child.id()?).ok()?;
        Some(ProcessGroup {
            id: rustix::process::Pid::from_raw(pid)?,
        })
    }

    #[cfg(not(unix))]
    fn of(_child: &Child) -> Option<Self> {
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
struct GroupKiller {
    group: Option<ProcessGroup>,
    done: Arc<AtomicBool>,
}

impl GroupKiller {
    fn new(group: Option<ProcessGroup>) -> Self {
        GroupKiller {
            group,
            done: Arc::new(AtomicBool::new(false)),
        }
    }

    /// SIGTERM to the group, or to the child alone where there is no group.
    fn terminate(&self, child: &mut Child) {
        match self.group {
            Some(group) => group.signal(GroupSignal::Term),
            // Without a group, the old behaviour: the child is killed.
            None => {
                let _ = child.start_kill();
            }
        }
    }

    /// SIGKILL to the group and to the child.
    fn kill(&self, child: &mut Child) {
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
    child: &mut Child,
    status: &mut Option<Option<ExitStatus>>,
    group: &GroupKiller,
    deadline: tokio::time::Instant,
) -> bool {
    loop {
        if status.is_none() {
            // `Child::wait` is cancel safe.
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
async fn supervise(
    mut child: Child,
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
    group.finish();
    if let Some(exited) = status
        && exit_tx.borrow().is_none()
    {
        let _ = exit_tx.send(exited);
    }
}

fn exit_message(status: &ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with code {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("exited by signal {signal}");
        }
    }
    "exited".to_string()
}

/// Writes frames to the child's stdin: each frame and its newline in one `writev`
/// (a batch in as few as the pipe allows), with no copy into a buffer.
struct StdinSink {
    stdin: Option<ChildStdin>,
    /// The `writev` slice list, kept empty between writes so that its
    /// allocation is reused (see [`reuse_slices`]).
    slices: Vec<IoSlice<'static>>,
    /// What a non-blocking write ([`FrameSink::try_send_now`]) left unwritten: the
    /// rest of the frame's bytes and whether its newline is still due. Written
    /// before anything else.
    partial: Option<(Bytes, bool)>,
}

impl StdinSink {
    async fn write_all(&mut self, frames: &[OutboundFrame]) -> Result<()> {
        let closed = || Error::closed("stdin closed");
        let stdin = self.stdin.as_mut().ok_or_else(closed)?;
        let partial = self.partial.take();
        let mut slices = reuse_slices(std::mem::take(&mut self.slices));
        let written = write_frames(stdin, &mut slices, partial.as_ref(), frames).await;
        self.slices = reuse_slices(slices);
        if written.is_err() {
            self.stdin = None;
            return Err(closed());
        }
        Ok(())
    }
}

/// An empty slice list of any lifetime, in the allocation of `slices` (cleared):
/// `IoSlice`s of every lifetime have one layout, and collecting a mapped
/// `vec::IntoIter` into a `Vec` of the same layout reuses its buffer. Lists
/// grown past 1024 slices (a huge batch) are not kept.
fn reuse_slices<'a>(mut slices: Vec<IoSlice<'_>>) -> Vec<IoSlice<'a>> {
    slices.clear();
    if slices.capacity() > 1024 {
        return Vec::new();
    }
    slices.into_iter().map(|_| IoSlice::new(&[])).collect()
}

/// Writes `partial` (the unwritten rest of an earlier frame), then each frame
/// followed by a newline, with vectored writes.
async fn write_frames<'a>(
    stdin: &mut ChildStdin,
    slices: &mut Vec<IoSlice<'a>>,
    partial: Option<&'a (Bytes, bool)>,
    frames: &'a [OutboundFrame],
) -> std::io::Result<()> {
    slices.reserve(2 + 2 * frames.len());
    if let Some((rest, newline)) = partial {
        slices.push(IoSlice::new(rest));
        if *newline {
            slices.push(IoSlice::new(b"\n"));
        }
    }
    for frame in frames {
        slices.push(IoSlice::new(&frame.bytes));
        slices.push(IoSlice::new(b"\n"));
    }
    let mut remaining = &mut slices[..];
    while remaining.iter().any(|slice| !slice.is_empty()) {
        let written = stdin.write_vectored(remaining).await?;
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut remaining, written);
    }
    stdin.flush().await
}

impl FrameSink for StdinSink {
    fn send(&mut self, frame: OutboundFrame) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move { self.write_all(std::slice::from_ref(&frame)).await })
    }

    fn send_batch<'a>(
        &'a mut self,
        frames: &'a mut Vec<OutboundFrame>,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let result = self.write_all(frames).await;
            frames.clear();
            result
        })
    }

    fn try_send_now(&mut self, frame: OutboundFrame, busy: bool) -> TrySend {
        // With replies pending, let the writer gather frames into one `writev`.
        if busy || self.partial.is_some() {
            return TrySend::WouldBlock(frame);
        }
        let Some(stdin) = self.stdin.as_mut() else {
            return TrySend::Failed(Error::closed("stdin closed"));
        };
        // One non-blocking `writev`: a pipe with room takes the whole frame.
        let mut cx = Context::from_waker(Waker::noop());
        let slices = [IoSlice::new(&frame.bytes), IoSlice::new(b"\n")];
        let total = frame.bytes.len() + 1;
        match Pin::new(stdin).poll_write_vectored(&mut cx, &slices) {
            Poll::Ready(Ok(written)) if written >= total => TrySend::Sent,
            Poll::Ready(Ok(0)) => {
                self.stdin = None;
                TrySend::Failed(Error::closed("stdin closed"))
            }
            Poll::Ready(Ok(written)) => {
                let at = written.min(frame.bytes.len());
                self.partial = Some((frame.bytes.slice(at..), true));
                TrySend::SentPartly
            }
            Poll::Ready(Err(error)) if error.kind() == std::io::ErrorKind::Interrupted => {
                TrySend::WouldBlock(frame)
            }
            Poll::Ready(Err(_)) => {
                self.stdin = None;
                TrySend::Failed(Error::closed("stdin closed"))
            }
            Poll::Pending => TrySend::WouldBlock(frame),
        }
    }
}

struct StdoutSource {
    reader: FramedReader<ChildStdout>,
    exit: watch::Receiver<Option<ExitStatus>>,
    max_frame: usize,
    /// Set once the child has exited while stdout stayed open (a grandchild may
    /// hold it): frames already written are still read until this deadline.
    drain_deadline: Option<tokio::time::Instant>,
}

impl StdoutSource {
    fn exit_error(&self) -> Option<Error> {
        self.exit
            .borrow()
            .as_ref()
            .map(|status| Error::closed(exit_message(status)))
    }

    async fn next_event(&mut self) -> InboundEvent {
        let framed = match self.drain_deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, self.reader.next()).await {
                Ok(framed) => framed,
                Err(_) => {
                    let error = self
                        .exit_error()
                        .unwrap_or_else(|| Error::closed("stdout closed"));
                    return InboundEvent::Closed(error);
                }
            },
            None => {
                let exited = tokio::select! {
                    biased;
                    framed = self.reader.next() => Ok(framed),
                    // The child exited but stdout is still open: report the exit
                    // after draining what it wrote (`FramedReader::next` is
                    // cancel-safe: bytes read so far stay in its buffer).
                    _ = self.exit.wait_for(|status| status.is_some()) => Err(()),
                };
                match exited {
                    Ok(framed) => framed,
                    Err(()) => {
                        self.drain_deadline = Some(tokio::time::Instant::now() + EXIT_GRACE);
                        return Box::pin(self.next_event()).await;
                    }
                }
            }
        };
        match framed {
            Framed::Frame(bytes) => InboundEvent::Frame(bytes),
            Framed::TooLong => self.too_long(),
            Framed::Eof => {
                let exit =
                    tokio::time::timeout(EXIT_GRACE, self.exit.wait_for(|status| status.is_some()))
                        .await;
                let message = match exit {
                    Ok(Ok(status)) => status.as_ref().map(exit_message),
                    _ => None,
                };
                InboundEvent::Closed(Error::closed(
                    message.unwrap_or_else(|| "stdout closed".to_string()),
                ))
            }
        }
    }
}

impl StdoutSource {
    fn too_long(&self) -> InboundEvent {
        InboundEvent::Closed(Error::protocol(format!(
            "inbound frame exceeds maxFrameBytes ({} bytes)",
            self.max_frame
        )))
    }
}

impl FrameSource for StdoutSource {
    fn next(&mut self) -> BoxFuture<'_, InboundEvent> {
        Box::pin(self.next_event())
    }

    fn try_next(&mut self) -> Option<InboundEvent> {
        // `next_event` returns a buffered frame before anything else too (before
        // an exit or a drain deadline is looked at).
        match self.reader.try_next()? {
            Framed::Frame(bytes) => Some(InboundEvent::Frame(bytes)),
            Framed::TooLong => Some(self.too_long()),
            Framed::Eof => None,
        }
    }
}

struct StdioShutdown {
    server: Arc<str>,
    diagnostics: Diagnostics,
    kill: Option<tokio::sync::oneshot::Sender<()>>,
    exit: watch::Receiver<Option<ExitStatus>>,
    supervisor: tokio::task::JoinHandle<()>,
    stderr_task: tokio::task::JoinHandle<()>,
    collector: Arc<Mutex<StderrCollector>>,
    /// Kills the process group on drop unless teardown finished with it.
    group: GroupKiller,
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
        // `kill_on_drop`; aborting it drops the child, which kills it too.
        if self.kill.is_some() {
            self.supervisor.abort();
        }
        self.group.kill_now();
        self.stderr_task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slice_list_keeps_its_allocation_between_writes() {
        let frame = b"frame".to_vec();
        let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(130);
        slices.push(IoSlice::new(&frame));
        let buffer = slices.as_ptr() as usize;
        let kept: Vec<IoSlice<'static>> = reuse_slices(slices);
        assert!(kept.is_empty());
        assert_eq!(kept.capacity(), 130);
        assert_eq!(
            kept.as_ptr() as usize,
            buffer,
            "the same buffer, not a new one"
        );
        // A list grown huge is dropped rather than kept.
        let huge: Vec<IoSlice<'_>> = Vec::with_capacity(4096);
        assert_eq!(reuse_slices(huge).capacity(), 0);
    }
}
