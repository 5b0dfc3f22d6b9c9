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
//!   100 ms after EOF for the exit status so the more useful event wins.
//!
//! # Teardown: the whole process tree
//!
//! Servers are very often started through wrappers (`npx`, `uvx`, `sh -c`, `node`
//! spawning workers), and killing only the direct child would orphan the real server
//! and everything it started. So on Unix the child is started as the leader of a
//! new **process group** (`setpgid(0, 0)`, through `Command::process_group`); the
//! processes it starts join that group unless they leave it themselves, and
//! teardown ends the group, not just the child. Closing the session tears the
//! process down:
//!
//! 1. stdin is closed (the engine drops the sink first), so a well-behaved server
//!    exits by itself;
//! 2. teardown waits up to 250 ms for the child to exit and the group to empty;
//! 3. then sends **SIGTERM to the group** and waits up to 250 ms more;
//! 4. then sends **SIGKILL to the group** and reaps the child.
//!
//! Steps 3 and 4 happen only while some member is left, and also when the child
//! has already exited but its descendants remain (the group id is the dead
//! leader's pid, and a group can be signalled as long as it has members). Teardown
//! therefore takes at most half a second plus the time the kernel takes to
//! deliver SIGKILL, checking the group every 10 ms. A server that
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
//!
//! # Windows (compile-checked in CI, never run there)
//!
//! - The command is resolved as cmd.exe resolves it, on the child's `PATH` with its
//!   `PATHEXT`, so `npx` finds `npx.cmd`. A `.cmd`/`.bat` shim is started as
//!   `cmd.exe /d /e:ON /v:OFF /s /c "..."`, every argument quoted for cmd and then
//!   for the C runtime behind the shim; an argument that cannot be carried
//!   unchanged (a line break or another control character) is refused with
//!   `invalid_config`, naming its index. The rules, and why `%` is safe, are in the
//!   `windows_cmd` module's docs, and `SECURITY.md`.
//! - There are no process groups; the child runs in a **Job Object** with
//!   `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` instead. It is created suspended,
//!   assigned to the job and only then resumed (process-wrap), so everything it
//!   starts is in the job. Teardown closes stdin, waits up to the same 250 ms for
//!   the direct child to exit, then terminates the job (`TerminateJobObject`;
//!   there is no SIGTERM to send first), whether or not the child exited by itself,
//!   because only the direct child is watched, not the rest of the job; then it
//!   gives the child up to 250 ms more to be reaped. Dropping the client (or its
//!   runtime) drops the job's handle, which ends the job; so does the host's exit,
//!   even a killed host's, since the system closes its handles: unlike on Unix, a
//!   killed host leaves none of the tree behind.
//! - Variable names ignore case there: the allow-list matches the parent's `Path`.

// This file: `StdioCommand` (the env allow-list, the pipes, the process group) and
// the spawn that wires the parts together; `pipes` and `teardown` hold the parts,
// `windows` and `windows_cmd` what differs on Windows.
mod pipes;
mod teardown;
#[cfg(windows)]
mod windows;
// The quoting and the `PATHEXT` lookup are pure: compiled (and tested) everywhere,
// used on Windows only.
#[cfg_attr(not(windows), allow(dead_code))]
mod windows_cmd;

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use secrecy::{ExposeSecret, SecretString};
use tokio::process::Command;
use tokio::sync::watch;

use super::framing::FramedReader;
use super::{Connection, Medium, TransportContext};
use crate::error::{Error, Result};
use crate::redact::{Redactor, StderrCollector};
use pipes::{StdinSink, StdoutSource, drain_stderr};
use teardown::{GroupKiller, ProcessGroup, StdioShutdown, supervise};
#[cfg(not(windows))]
use tokio::process::Child as ServerChild;
#[cfg(not(windows))]
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
#[cfg(windows)]
use windows::{ServerChild, spawn, take_pipes};

/// Parent variables a child inherits (when set). `LC_*` variables are inherited too.
/// On Windows, where variable names ignore case, they are matched ignoring ASCII
/// case (the parent's `PATH` is usually spelled `Path` there).
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
    ///
    /// ```
    /// use smthrs_mcp::StdioCommand;
    ///
    /// let command = StdioCommand::new("npx")
    ///     .args(["-y", "@modelcontextprotocol/server-everything"])
    ///     .env("NODE_ENV", "production");
    /// # let _ = command;
    /// ```
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

    /// The command that starts the server: the program and its arguments
    /// ([`Self::launcher`]), the environment, the pipes, the process group.
    fn build(&self, server: &str) -> Result<Command> {
        let mut command = self.launcher(server)?;
        command.env_clear();
        for (key, value) in std::env::vars_os() {
            let Some(name) = key.to_str() else { continue };
            if is_inherited(name) {
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
        Ok(command)
    }

    /// The program with its arguments, as given.
    #[cfg(not(windows))]
    fn launcher(&self, _server: &str) -> Result<Command> {
        let mut command = Command::new(&self.program);
        command.args(&self.args);
        Ok(command)
    }

    /// The program as cmd.exe would resolve it on the child's `PATH`, a `.cmd`/`.bat`
    /// shim (`npx`) through cmd.exe (the `windows` module).
    #[cfg(windows)]
    fn launcher(&self, server: &str) -> Result<Command> {
        windows::command(&self.program, &self.args, server, |name| {
            self.child_var(name)
        })
    }

    /// The value variable `name` will have in the child (names ignore case on
    /// Windows): the entry's own (the last one set), else the parent's when it is
    /// inherited.
    #[cfg(windows)]
    fn child_var(&self, name: &str) -> Option<OsString> {
        if let Some((_, value)) = self
            .env
            .iter()
            .rev()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
        {
            return Some(OsString::from(value.expose_secret()));
        }
        std::env::vars_os()
            .find(|(key, _)| {
                key.to_str()
                    .is_some_and(|key| key.eq_ignore_ascii_case(name) && is_inherited(key))
            })
            .map(|(_, value)| value)
    }
}

/// Whether the parent's variable `name` reaches the child. Names ignore case on
/// Windows (the parent's `PATH` is usually spelled `Path` there), so the allow-list
/// is matched ignoring ASCII case there.
fn is_inherited(name: &str) -> bool {
    is_inherited_by(name, cfg!(windows))
}

fn is_inherited_by(name: &str, ignore_case: bool) -> bool {
    if ignore_case {
        INHERITED_ENV_VARS
            .iter()
            .any(|known| known.eq_ignore_ascii_case(name))
            || name
                .get(..3)
                .is_some_and(|prefix| prefix.eq_ignore_ascii_case("LC_"))
    } else {
        INHERITED_ENV_VARS.contains(&name) || name.starts_with("LC_")
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

impl StdioCommand {
    /// Starts the server (a fresh process at each call).
    pub(crate) fn open(&self, ctx: TransportContext) -> BoxFuture<'static, Result<Connection>> {
        let command = self.clone();
        Box::pin(async move { open_stdio(command, ctx) })
    }
}

fn open_stdio(command: StdioCommand, ctx: TransportContext) -> Result<Connection> {
    let mut child = spawn(command.build(&ctx.server)?).map_err(|e| {
        // The io::ErrorKind is generic ("not found", "permission denied"); the
        // program path and arguments are process details and stay out.
        Error::spawn_failed(format!(
            "server \"{}\" could not be started ({})",
            ctx.server,
            e.kind()
        ))
    })?;
    let Some((stdin, stdout, stderr)) = take_pipes(&mut child) else {
        return Err(Error::spawn_failed(format!(
            "server \"{}\" could not be started (pipes unavailable)",
            ctx.server
        )));
    };

    let redactor = Redactor::new(command.env.iter().map(|(_, v)| v.expose_secret()));
    let collector = Arc::new(Mutex::new(StderrCollector::new(
        redactor,
        ctx.bounds.max_stderr_bytes,
    )));
    let stderr_task = tokio::spawn(drain_stderr(stderr, collector.clone()));

    let group = GroupKiller::new(ProcessGroup::of(&child));
    let (exit_tx, exit_rx) = watch::channel(None);
    let (kill_tx, kill_rx) = tokio::sync::oneshot::channel();
    let supervisor = tokio::spawn(supervise(child, group.clone(), exit_tx, kill_rx));

    let max_frame = ctx.bounds.max_frame_bytes;
    Ok(Connection {
        medium: Medium::Stream,
        sink: Box::new(StdinSink::new(stdin, "stdin closed")),
        source: Box::new(StdoutSource {
            reader: FramedReader::new(stdout, max_frame),
            exit: exit_rx.clone(),
            max_frame,
            frame_option: ctx.bounds.frame_option,
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

/// Starts the server process.
#[cfg(not(windows))]
fn spawn(mut command: Command) -> std::io::Result<ServerChild> {
    command.spawn()
}

/// The child's three pipes, if it has them.
#[cfg(not(windows))]
fn take_pipes(child: &mut ServerChild) -> Option<(ChildStdin, ChildStdout, ChildStderr)> {
    match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(stdin), Some(stdout), Some(stderr)) => Some((stdin, stdout, stderr)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allow_list_ignores_case_only_on_windows() {
        for name in ["PATH", "SystemRoot", "PATHEXT", "LC_ALL", "LC_"] {
            assert!(is_inherited_by(name, false), "{name}");
            assert!(is_inherited_by(name, true), "{name}");
        }
        // Windows spells the parent's PATH `Path`; case matters elsewhere.
        for name in ["Path", "path", "SYSTEMROOT", "Pathext", "lc_all"] {
            assert!(!is_inherited_by(name, false), "{name}");
            assert!(is_inherited_by(name, true), "{name}");
        }
        for name in ["AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "PATHX", "L", ""] {
            assert!(!is_inherited_by(name, false), "{name}");
            assert!(!is_inherited_by(name, true), "{name}");
        }
        assert_eq!(is_inherited("Path"), cfg!(windows));
    }
}
