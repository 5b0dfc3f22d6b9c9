//! Windows: how the server is started and held (compiled for Windows only; CI
//! checks that it compiles, and cannot run it).
//!
//! - The command name is resolved as cmd.exe would resolve it, with the child's
//!   `PATH` and `PATHEXT` ([`windows_cmd::resolve`]): `npx` is `npx.cmd`.
//! - A `.cmd`/`.bat` shim runs through `%SystemRoot%\System32\cmd.exe` (never a
//!   `cmd.exe` found on `PATH`), with the line of [`windows_cmd::cmd_line`]
//!   appended raw (`raw_arg`), so std's own quoting, which is right for the C
//!   runtime but not for cmd, never touches it.
//! - The child runs in a Job Object with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`,
//!   through process-wrap's `JobObject` and `KillOnDrop`: it is created suspended,
//!   assigned to the job, and only then resumed, so nothing it starts can escape
//!   the job by being started first. Every process it starts joins the job (unless
//!   created with `CREATE_BREAKAWAY_FROM_JOB`, which this job does not allow).
//!   Teardown terminates the job (`TerminateJobObject`), and closing the job's
//!   handle, when [`ServerChild`] is dropped (with its task, its runtime, or the
//!   host's exit, even a killed host's), ends whatever is left of it.

use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::ExitStatus;

use process_wrap::tokio::{ChildWrapper, CommandWrap, JobObject, KillOnDrop};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};

use super::windows_cmd::{self, Launch, Refusal};
use crate::error::{Error, Result};

/// The `Command` that starts `program` with `args`, given `var`, the value a
/// variable will have in the child. Refused arguments are `invalid_config` errors
/// naming their index.
pub(super) fn command(
    program: &OsStr,
    args: &[OsString],
    server: &str,
    var: impl Fn(&str) -> Option<OsString>,
) -> Result<Command> {
    let as_given = |program: &OsStr| {
        let mut command = Command::new(program);
        command.args(args);
        command
    };
    // A name that is not Unicode is not looked up: CreateProcess takes it as given.
    let Some(name) = program.to_str() else {
        return Ok(as_given(program));
    };
    let path = var("PATH");
    let pathext = var("PATHEXT");
    let launch = windows_cmd::resolve(
        name,
        path.as_deref().and_then(OsStr::to_str),
        pathext.as_deref().and_then(OsStr::to_str),
        |candidate| Path::new(candidate).is_file(),
    );
    let refused = |refusal: Refusal| Error::config(refusal.message(server));
    match launch {
        Launch::AsGiven => Ok(as_given(program)),
        Launch::Program(full) => Ok(as_given(OsStr::new(&full))),
        Launch::Shim(script) => {
            // A relative shim path is taken from the host's working directory, as
            // CreateProcess takes a relative program.
            let script = std::path::absolute(&script).map_err(|_| refused(Refusal::Script))?;
            let script = script.to_str().ok_or_else(|| refused(Refusal::Script))?;
            let args = args
                .iter()
                .enumerate()
                .map(|(index, arg)| arg.to_str().ok_or(Refusal::Argument { index }))
                .collect::<Result<Vec<&str>, Refusal>>()
                .map_err(refused)?;
            let line = windows_cmd::cmd_line(script, &args).map_err(refused)?;
            let mut command = Command::new(cmd_exe(server)?);
            command.raw_arg(line);
            Ok(command)
        }
    }
}

/// `%SystemRoot%\System32\cmd.exe`, from the host's own environment.
fn cmd_exe(server: &str) -> Result<PathBuf> {
    let root = std::env::var_os("SystemRoot")
        .filter(|root| Path::new(root).is_absolute())
        .ok_or_else(|| {
            Error::spawn_failed(format!(
                "server \"{server}\" could not be started (its command is a .cmd/.bat \
                 shim, and SystemRoot is not set, so cmd.exe cannot be found)"
            ))
        })?;
    Ok(Path::new(&root).join("System32").join("cmd.exe"))
}

/// The server process: the direct child (cmd.exe, for a shim) inside its Job
/// Object. Dropping it closes the job's handle, which ends every process left
/// in the job.
pub(super) struct ServerChild(Box<dyn ChildWrapper>);

/// Starts `command` suspended, assigns it to a new Job Object that kills its
/// processes when closed, then resumes it.
pub(super) fn spawn(command: Command) -> io::Result<ServerChild> {
    let mut wrapped = CommandWrap::from(command);
    wrapped.wrap(KillOnDrop).wrap(JobObject);
    wrapped.spawn().map(ServerChild)
}

/// The child's three pipes, if it has them.
pub(super) fn take_pipes(
    child: &mut ServerChild,
) -> Option<(ChildStdin, ChildStdout, ChildStderr)> {
    let child = &mut child.0;
    match (
        child.stdin().take(),
        child.stdout().take(),
        child.stderr().take(),
    ) {
        (Some(stdin), Some(stdout), Some(stderr)) => Some((stdin, stdout, stderr)),
        _ => None,
    }
}

impl ServerChild {
    /// Waits for the direct child to exit, not for the rest of the job. Cancel
    /// safe: it is tokio's `Child::wait` underneath (process-wrap's own `wait`
    /// would also wait on the job, from a blocking thread).
    pub(super) fn wait(
        &mut self,
    ) -> Pin<Box<dyn Future<Output = io::Result<ExitStatus>> + Send + '_>> {
        self.0.inner_mut().wait()
    }

    /// Ends every process of the job now (`TerminateJobObject`).
    pub(super) fn start_kill(&mut self) -> io::Result<()> {
        self.0.start_kill()
    }
}
