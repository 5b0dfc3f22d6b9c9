//! `smthrs-mcp`: the command-line front door (see `cli-contract.md`).
//!
//! ```text
//! smthrs-mcp [--mcp-config PATH] [--diagnostics] <COMMAND> [ARGS]
//! ```
//!
//! Exit status: 0 success (a tool result with `isError: true` is success), 1 a
//! session or flow failed (last stderr line `smthrs-mcp: <kind>: <message>`), 2 a
//! usage error (bad flag, bad server file, unset `bearerTokenEnv` or
//! `oauth.clientSecretEnv` variable).

mod demo_server;
mod lock;
mod login;
mod offers;
mod prompt;
mod skill_files;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use secrecy::ExposeSecret;
use serde_json::{Map, Value};
use smthrs_mcp::config::{self, EntryTransport, ServerEntry};
use smthrs_mcp::flows;
use smthrs_mcp::group::{ClientGroup, GroupEntry, GroupError};
use smthrs_mcp::transport::http::{HttpTransport, SharedHttpClient};
use smthrs_mcp::{
    CallEvent, CallOptions, CancellationToken, Client, DiagnosticEvent, DiagnosticObserver, Error,
    StdioCommand, TaskMode, TaskStatus, Transport,
};

#[derive(Parser, Debug)]
#[command(name = "smthrs-mcp", version, about = "A strict, bounded MCP client")]
struct Cli {
    /// The server file (a JSON array of entries). Also `SMITHERS_MCP_CONFIG`; the
    /// flag wins. With neither, no server is configured.
    #[arg(long = "mcp-config", value_name = "PATH", global = true)]
    mcp_config: Option<PathBuf>,

    /// Install the private diagnostic observer and print its events to stderr,
    /// one line each, prefixed `diagnostic: `.
    #[arg(long, global = true)]
    diagnostics: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Decode and validate the server file; spawn and connect nothing.
    Check,
    /// Connect every server, print the composed flow declarations as a JSON array.
    Tools {
        #[command(flatten)]
        lock: Locking,
    },
    /// Connect every server, call one flow, print its result as a JSON object.
    Call {
        /// The flow name, e.g. `mcp/<server>/<tool>`.
        flow: String,
        /// The arguments, a JSON object.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        args: String,
        /// Never ask on the terminal: decline every elicitation a server sends
        /// (the default without a terminal on stdin).
        #[arg(long)]
        no_input: bool,
        /// The call must be able to run as a task: fail with
        /// `missing_capability` where the server does not offer the Tasks
        /// extension (by default a call runs as a task where it does).
        #[arg(long, conflicts_with = "no_task")]
        task: bool,
        /// Never run the call as a task (do not declare the Tasks extension).
        #[arg(long)]
        no_task: bool,
        #[command(flatten)]
        lock: Locking,
    },
    /// Connect every server and write the lock file pinning their catalogs.
    Lock {
        /// The lock file (default: mcp.lock.json beside the server file).
        #[arg(long = "lock-file", value_name = "PATH")]
        lock_file: Option<PathBuf>,
    },
    /// List the resources and resource templates of every server that declares
    /// resources (or of the one named), as one JSON object.
    Resources {
        /// Only this server (it must declare resources).
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
    },
    /// Read one resource from the server named, as one JSON object.
    Read {
        /// The server's name in the server file.
        server: String,
        /// The resource's URI, as the server lists it.
        uri: String,
    },
    /// List the prompts of every server that declares prompts (or of the one
    /// named), as a JSON array.
    Prompts {
        /// Only this server (it must declare prompts).
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
    },
    /// Get one prompt from the server named, with string arguments.
    Prompt {
        /// The server's name in the server file.
        server: String,
        /// The prompt's name.
        name: String,
        /// The arguments, a JSON object of strings.
        #[arg(long, value_name = "JSON", default_value = "{}")]
        args: String,
    },
    /// List the skills of every server that offers the Skills extension (or of
    /// the one named), as a JSON array.
    Skills {
        /// Only this server (it must offer the extension).
        #[arg(long, value_name = "NAME")]
        server: Option<String>,
    },
    /// Load one skill from the server named, verify every file against the
    /// listing, and write it under DIR/NAME/ (nothing unless all verify).
    Skill {
        /// The server's name in the server file.
        server: String,
        /// The skill's name, as the server lists it.
        name: String,
        /// The directory to write the skill into.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Serve the embedded demo MCP server on stdin/stdout.
    DemoServer,
    /// Log in to an HTTP server that uses OAuth: prints the URL to open, waits
    /// for the browser's redirect on 127.0.0.1, stores the tokens.
    Login {
        /// The server's name in the server file.
        server: String,
    },
    /// Forget the stored tokens of an HTTP server that uses OAuth.
    Logout {
        /// The server's name in the server file.
        server: String,
    },
}

/// `--locked [--lock-file PATH]`.
#[derive(clap::Args, Debug)]
struct Locking {
    /// Every server's catalog must match its entry in the lock file.
    #[arg(long)]
    locked: bool,
    /// The lock file (default: mcp.lock.json beside the server file).
    #[arg(long = "lock-file", value_name = "PATH", requires = "locked")]
    lock_file: Option<PathBuf>,
}

impl Locking {
    /// The lock, when `--locked`; a missing or unreadable file is a usage error.
    fn read(&self, server_file: Option<&std::path::Path>) -> Result<Option<lock::Lock>, Failure> {
        if !self.locked {
            return Ok(None);
        }
        let path = self
            .lock_file
            .clone()
            .unwrap_or_else(|| lock::default_path(server_file));
        lock::Lock::read(&path).map(Some).map_err(Failure::Usage)
    }
}

/// A failure and the exit status it maps to.
enum Failure {
    /// Exit 2: names the flag or variable and the path or server.
    Usage(String),
    /// Exit 1: `smthrs-mcp: <kind>: <message>`.
    Session(Error),
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::Session(error)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::DemoServer = cli.command {
        return match demo_server::run_stdio() {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!(
                    "smthrs-mcp: connection_closed: demo server I/O failed ({})",
                    error.kind()
                );
                ExitCode::from(1)
            }
        };
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(_) => {
            eprintln!("smthrs-mcp: connection_closed: could not start the async runtime");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(run(cli));
    // Every session is torn down by now; what may remain is a terminal prompt
    // blocked on stdin for an answer nobody wants any more: do not wait for it.
    runtime.shutdown_background();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("smthrs-mcp: usage: {message}");
            ExitCode::from(2)
        }
        Err(Failure::Session(error)) => {
            eprintln!("smthrs-mcp: {}: {}", error.kind(), error);
            ExitCode::from(1)
        }
    }
}

/// The environment variable that names the server file when the flag is absent.
const CONFIG_ENV: &str = "SMITHERS_MCP_CONFIG";

/// Where the server file came from, as a usage message names it.
struct ConfigSource {
    path: PathBuf,
    label: String,
}

fn config_source(flag: Option<PathBuf>) -> Option<ConfigSource> {
    if let Some(path) = flag {
        let label = format!("--mcp-config {}", path.display());
        return Some(ConfigSource { path, label });
    }
    let path = PathBuf::from(std::env::var_os(CONFIG_ENV).filter(|v| !v.is_empty())?);
    let label = format!("{CONFIG_ENV}={}", path.display());
    Some(ConfigSource { path, label })
}

async fn run(cli: Cli) -> Result<(), Failure> {
    let source = config_source(cli.mcp_config);
    let label = source.as_ref().map(|s| s.label.clone()).unwrap_or_default();
    let entries = match &source {
        Some(source) => config::load_server_file(&source.path)
            .map_err(|e| Failure::Usage(format!("{}: {e}", source.label)))?,
        None => Vec::new(),
    };
    // Everything checkable without connecting happens here, before any spawn:
    // projection prefixes, and bearer tokens read from the environment. Every
    // HTTP entry but the OAuth ones shares one HTTP client (one pool); it reads
    // the proxy variables once, here, and builds its connectors when the first
    // transport needs one.
    let shared = SharedHttpClient::builder()
        .use_env_proxy(true)
        .build()
        .map_err(|e| Failure::Usage(format!("{label}: {e}")))?;
    let mut transports = Vec::with_capacity(entries.len());
    for entry in &entries {
        entry
            .projection
            .validate()
            .map_err(|e| Failure::Usage(format!("{label}: server \"{}\": {e}", entry.server)))?;
        transports.push(
            transport_for(entry, &shared).map_err(|e| Failure::Usage(format!("{label}: {e}")))?,
        );
    }
    let listing_resources = matches!(cli.command, Command::Resources { .. });
    match cli.command {
        Command::Check => {
            print_stdout(&format!("ok: {} servers", entries.len()));
            Ok(())
        }
        Command::Tools { lock } => {
            let pins = lock.read(source.as_ref().map(|s| s.path.as_path()))?;
            let group = connect_all(
                &entries,
                transports,
                &label,
                cli.diagnostics,
                Asking::Nothing,
                pins.as_ref(),
            )
            .await?;
            let declarations: Vec<_> = group.flows().declarations().collect();
            let printed = serde_json::to_string_pretty(&declarations)
                .map_err(|_| Failure::Usage("could not encode declarations".into()));
            group.close().await;
            print_stdout(&printed?);
            Ok(())
        }
        Command::Call {
            flow,
            args,
            no_input,
            task,
            no_task,
            lock,
        } => {
            let arguments: Map<String, Value> = match serde_json::from_str(&args) {
                Ok(Value::Object(map)) => map,
                _ => return Err(Failure::Usage("--args must be a JSON object".into())),
            };
            let pins = lock.read(source.as_ref().map(|s| s.path.as_path()))?;
            let asking = Asking::Elicitation {
                interactive: prompt::interactive(no_input),
            };
            let group = connect_all(
                &entries,
                transports,
                &label,
                cli.diagnostics,
                asking,
                pins.as_ref(),
            )
            .await?;
            let mode = match (task, no_task) {
                (true, _) => TaskMode::Require,
                (_, true) => TaskMode::Never,
                _ => TaskMode::Auto,
            };
            let outcome = call(&group, &flow, arguments, mode).await;
            group.close().await;
            let result = outcome?;
            let printed = serde_json::to_string_pretty(&result)
                .map_err(|_| Failure::Usage("could not encode the result".into()))?;
            print_stdout(&printed);
            Ok(())
        }
        Command::Lock { lock_file } => {
            let path = lock_file
                .unwrap_or_else(|| lock::default_path(source.as_ref().map(|s| s.path.as_path())));
            let group = connect_all(
                &entries,
                transports,
                &label,
                cli.diagnostics,
                Asking::Nothing,
                None,
            )
            .await?;
            let text = lock::render(&entries, group.clients());
            group.close().await;
            lock::write(&path, &text).map_err(|e| {
                Failure::Usage(format!(
                    "--lock-file {}: cannot write the lock file ({})",
                    path.display(),
                    e.kind()
                ))
            })?;
            print_stdout(&format!("ok: {} servers locked", entries.len()));
            Ok(())
        }
        Command::Login { server } => {
            let (entry, oauth) = login::oauth_entry(&entries, &server)
                .map_err(|m| Failure::Usage(format!("{label}: {m}")))?;
            let observer = cli
                .diagnostics
                .then(|| Arc::new(PrintDiagnostics) as Arc<dyn DiagnosticObserver>);
            login::login(entry, oauth, observer).await?;
            print_stdout(&format!("ok: logged in to {server}"));
            Ok(())
        }
        Command::Logout { server } => {
            let (entry, oauth) = login::oauth_entry(&entries, &server)
                .map_err(|m| Failure::Usage(format!("{label}: {m}")))?;
            if let Some(note) = login::logout(entry, oauth).await? {
                eprintln!("smthrs-mcp: note: {note}");
            }
            print_stdout(&format!("ok: logged out of {server}"));
            Ok(())
        }
        Command::Resources { server } | Command::Prompts { server } => {
            let group = connect_chosen(
                &entries,
                transports,
                server.as_deref(),
                &label,
                cli.diagnostics,
            )
            .await?;
            let named_server = server.is_some();
            let outcome = if listing_resources {
                offers::resources(group.clients(), named_server).await
            } else {
                offers::prompts(group.clients(), named_server).await
            };
            group.close().await;
            print_json(&outcome?)
        }
        Command::Read { server, uri } => {
            let group =
                connect_chosen(&entries, transports, Some(&server), &label, cli.diagnostics)
                    .await?;
            let outcome = offers::read(only(&group)?, &uri).await;
            group.close().await;
            print_json(&outcome?)
        }
        Command::Prompt { server, name, args } => {
            let arguments: Map<String, Value> = match serde_json::from_str(&args) {
                Ok(Value::Object(map)) if map.values().all(Value::is_string) => map,
                _ => {
                    return Err(Failure::Usage(
                        "--args must be a JSON object of strings".into(),
                    ));
                }
            };
            let group =
                connect_chosen(&entries, transports, Some(&server), &label, cli.diagnostics)
                    .await?;
            let outcome = offers::prompt(only(&group)?, &name, arguments).await;
            group.close().await;
            print_json(&outcome?)
        }
        Command::Skills { server } => {
            let group = connect_chosen(
                &entries,
                transports,
                server.as_deref(),
                &label,
                cli.diagnostics,
            )
            .await?;
            let outcome = skill_files::skills(group.clients(), server.is_some()).await;
            group.close().await;
            print_json(&outcome?)
        }
        Command::Skill { server, name, out } => {
            let group =
                connect_chosen(&entries, transports, Some(&server), &label, cli.diagnostics)
                    .await?;
            let outcome = skill_files::skill(only(&group)?, &name, &out).await;
            group.close().await;
            print_stdout(&format!("ok: {} files", outcome?));
            Ok(())
        }
        Command::DemoServer => unreachable!("handled before the runtime starts"),
    }
}

/// Connects the entries [`choose`] picks (all, or the one named), with no
/// host handler and no pins: the commands for what servers offer besides
/// tools.
async fn connect_chosen(
    entries: &[ServerEntry],
    transports: Vec<Box<dyn Transport>>,
    server: Option<&str>,
    label: &str,
    diagnostics: bool,
) -> Result<ClientGroup, Failure> {
    let (chosen, transports) = choose(entries, transports, server, label)?;
    connect_all(
        &chosen,
        transports,
        label,
        diagnostics,
        Asking::Nothing,
        None,
    )
    .await
}

/// The one client of a group connected for the server a command names.
fn only(group: &ClientGroup) -> Result<&Client, Failure> {
    group
        .clients()
        .first()
        .ok_or_else(|| Failure::Usage("no server connected".into()))
}

/// The entries a command connects, and their transports.
type Chosen = (Vec<ServerEntry>, Vec<Box<dyn Transport>>);

/// The entries (and their transports) a command connects: all of them, or only
/// the one named; a name not in the file is a usage error naming it.
fn choose(
    entries: &[ServerEntry],
    transports: Vec<Box<dyn Transport>>,
    server: Option<&str>,
    label: &str,
) -> Result<Chosen, Failure> {
    let Some(server) = server else {
        return Ok((entries.to_vec(), transports));
    };
    let Some(index) = entries.iter().position(|entry| entry.server == server) else {
        return Err(Failure::Usage(format!(
            "{label}: no server named \"{}\" in the server file",
            prompt::printable(server)
        )));
    };
    let transport = transports
        .into_iter()
        .nth(index)
        .ok_or_else(|| Failure::Usage(format!("no transport for server \"{server}\"")))?;
    Ok((vec![entries[index].clone()], vec![transport]))
}

/// Prints a JSON document on stdout.
fn print_json(value: &Value) -> Result<(), Failure> {
    let printed = serde_json::to_string_pretty(value)
        .map_err(|_| Failure::Usage("could not encode the output".into()))?;
    print_stdout(&printed);
    Ok(())
}

async fn call(
    group: &ClientGroup,
    flow: &str,
    arguments: Map<String, Value>,
    mode: TaskMode,
) -> Result<smthrs_mcp::ToolResult, Failure> {
    // The group calls the tool on its client directly, so the exit line
    // carries the session's own kind (timeout, connection_closed, ...), naming
    // the server; an unknown flow is tool_not_found, nothing sent. An
    // interrupt (SIGINT) cancels the call: a task gets `tasks/cancel` before
    // the sessions close.
    let interrupted = CancellationToken::new();
    let listener = {
        let interrupted = interrupted.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                interrupted.cancel();
            }
        })
    };
    let options = CallOptions::new()
        .task(mode)
        .cancel_on(interrupted)
        .on_event(TaskLines::default().observer());
    let result = group
        .call_with(flow, arguments, &options)
        .await
        .map_err(Failure::Session);
    listener.abort();
    result
}

/// The longest server status message printed, in bytes (cut on a character).
const STATUS_LINE_BYTES: usize = 200;

/// Prints a task's status to stderr when it changes: `task: <status> (poll
/// N)`, and the server's message marked as its words (control and invisible
/// characters escaped, cut to [`STATUS_LINE_BYTES`]); and each accepted
/// progress notification: `progress: <progress>[ of <total>]` and the message.
#[derive(Default)]
struct TaskLines(std::sync::Mutex<Option<(TaskStatus, Option<String>)>>);

impl TaskLines {
    fn observer(self) -> impl Fn(CallEvent) + Send + Sync + 'static {
        move |event| {
            let update = match event {
                CallEvent::Task(update) => update,
                CallEvent::Progress(progress) => {
                    eprintln!("progress: {}", progress_line(&progress));
                    return;
                }
                _ => return,
            };
            let now = (update.status, update.status_message.clone());
            let mut last = self
                .0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.as_ref() == Some(&now) {
                return;
            }
            *last = Some(now);
            let said = server_says(update.status_message.as_deref());
            eprintln!("task: {} (poll {}){said}", update.status, update.polls);
        }
    }
}

/// `; the server says: <text>` for a server's message (control and invisible
/// characters escaped, cut to [`STATUS_LINE_BYTES`]), or nothing.
fn server_says(text: Option<&str>) -> String {
    let Some(text) = text else {
        return String::new();
    };
    let mut end = text.len().min(STATUS_LINE_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = if end < text.len() { "..." } else { "" };
    format!("; the server says: {}{cut}", one_line(&text[..end]))
}

/// A progress line: `<progress>[ of <total>]`, then the server's message.
fn progress_line(progress: &smthrs_mcp::Progress) -> String {
    let of = progress
        .total
        .map(|total| format!(" of {total}"))
        .unwrap_or_default();
    let said = server_says(progress.message.as_deref());
    format!("{}{of}{said}", progress.progress)
}

/// What the CLI's host handler answers besides the entry's roots.
#[derive(Clone, Copy)]
enum Asking {
    /// No tool is called: no elicitation declared.
    Nothing,
    /// `call`: elicitation declared and asked on the terminal when `interactive`
    /// (stdin is a terminal and `--no-input` is absent); otherwise not declared,
    /// since a capability the host would always decline misleads the server.
    Elicitation { interactive: bool },
}

/// Connects every entry as one group ([`ClientGroup`]: in parallel, at most
/// its default number at a time; HTTP servers of one origin share what their
/// era is); the first failure takes the run down, naming its server, after
/// every session the group started is ended.
async fn connect_all(
    entries: &[ServerEntry],
    transports: Vec<Box<dyn Transport>>,
    label: &str,
    diagnostics: bool,
    asking: Asking,
    pins: Option<&lock::Lock>,
) -> Result<ClientGroup, Failure> {
    // Under --locked every server must have a pin before anything connects.
    let pins: Vec<Option<smthrs_mcp::pin::CatalogPin>> = match pins {
        Some(lock) => entries
            .iter()
            .map(|entry| lock.pin(&entry.server).map(Some))
            .collect::<Result<_, _>>()?,
        None => entries.iter().map(|_| None).collect(),
    };
    let observer: Option<Arc<dyn DiagnosticObserver>> =
        diagnostics.then(|| Arc::new(PrintDiagnostics) as Arc<dyn DiagnosticObserver>);
    let mut group = ClientGroup::builder();
    for ((entry, transport), pin) in entries.iter().zip(transports).zip(pins) {
        let mut builder = Client::builder(entry.server.clone())
            .limits(entry.limits)
            .protocol(entry.protocol);
        let (elicitation, interactive) = match asking {
            Asking::Nothing => (false, false),
            Asking::Elicitation { interactive } => (interactive, interactive),
        };
        let host = prompt::CliHost::new(&entry.server, &entry.roots, elicitation, interactive);
        if host.declares_anything() {
            builder = builder.host_handler(host);
        }
        if let Some(pin) = pin {
            builder = builder.pin(pin);
        }
        if let Some(observer) = &observer {
            builder = builder.diagnostics(observer.clone());
        }
        group =
            group.entry(GroupEntry::boxed(builder, transport).projection(entry.projection.clone()));
    }
    group.connect().await.map_err(|error| match error {
        GroupError::Projection(error) => projection_failure(label, error),
        GroupError::Connect(error) => Failure::Session(error),
        other => Failure::Session(other.into()),
    })
}

/// An unknown `include` name or a duplicate flow name, found after connecting: a
/// failed run (exit 1, `invalid_config`), not a server-file usage error. These are
/// projection errors, separate from the file's validation.
fn projection_failure(label: &str, error: flows::ProjectionError) -> Failure {
    let message = format!("{label}: {error}");
    Failure::Session(Error::from(error).with_message(message))
}

/// Builds the transport of one entry. Nothing is spawned or connected here; an
/// HTTP entry reads its `bearerTokenEnv` variable now (unset or empty fails,
/// naming the server and the variable) and is granted exactly its own origin.
fn transport_for(
    entry: &ServerEntry,
    shared: &SharedHttpClient,
) -> Result<Box<dyn Transport>, Error> {
    match &entry.transport {
        EntryTransport::Stdio(stdio) => {
            let mut command = StdioCommand::new(&stdio.command).args(&stdio.args);
            for (key, value) in &stdio.env {
                command = command.env_secret(key.clone(), value.clone());
            }
            if let Some(cwd) = &stdio.cwd {
                command = command.current_dir(cwd);
            }
            Ok(Box::new(command))
        }
        EntryTransport::Http(http) => {
            // The host's proxy settings apply (configure-servers-for-the-cli.md,
            // "Remote servers"); the egress grant is still checked against the real
            // destination, exactly the entry's own origin.
            let mut builder = HttpTransport::builder(entry.server.as_str(), http.url.as_str())
                .use_env_proxy(true);
            if let Some(var) = &http.bearer_token_env {
                builder = builder.bearer_token_env(var.clone());
            }
            match &http.oauth {
                // The OAuth chain guards its client's addresses per endpoint:
                // an OAuth entry keeps a client of its own.
                Some(oauth) => builder = builder.oauth(login::oauth(&entry.server, oauth)?),
                None => builder = builder.http_client(shared.clone()),
            }
            Ok(Box::new(builder.build()?))
        }
    }
}

/// Writes one line to stdout. A closed stdout (`smthrs-mcp tools | head -1`) is
/// not an error worth a panic: the reader left.
fn print_stdout(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{text}").and_then(|()| stdout.flush());
}

/// Prefixes the server name unless the message already names it.
fn named(server: &str, error: Error) -> Error {
    if error.message().contains(&format!("server \"{server}\"")) {
        error
    } else {
        let message = format!("server \"{server}\": {}", error.message());
        error.with_message(message)
    }
}

/// Prints private diagnostics to stderr, one line per event.
struct PrintDiagnostics;

/// Server-authored text on one line, control and format characters escaped (a
/// server must not drive the operator's terminal).
fn one_line(text: &str) -> String {
    prompt::printable(&text.split_whitespace().collect::<Vec<_>>().join(" "))
}

impl DiagnosticObserver for PrintDiagnostics {
    fn observe(&self, event: DiagnosticEvent) {
        let line = match &event {
            DiagnosticEvent::StderrTail { server, tail } => {
                format!("server \"{server}\": {}", one_line(tail.expose_secret()))
            }
            DiagnosticEvent::RemoteError {
                server,
                code,
                message,
                data,
            } => {
                let data = data
                    .as_ref()
                    .map(|d| format!(" data: {}", one_line(d.expose_secret())))
                    .unwrap_or_default();
                format!(
                    "server \"{server}\": code {code}: {}{data}",
                    one_line(message.expose_secret())
                )
            }
            DiagnosticEvent::ServerRequestDropped { server, method } => format!(
                "server \"{server}\": dropped a request ({})",
                one_line(method.expose_secret())
            ),
            DiagnosticEvent::ToolDropped {
                server,
                tool,
                reason,
            } => format!(
                "server \"{server}\": tool {} left out: {reason}",
                one_line(tool.expose_secret())
            ),
            DiagnosticEvent::LegacyFallback {
                server,
                version,
                reason,
            } => format!("server \"{server}\": speaking {version}: {reason}"),
            DiagnosticEvent::NotificationDropped {
                server,
                method,
                reason,
            } => format!("server \"{server}\": dropped a notification ({method}): {reason}"),
            DiagnosticEvent::TaskNotice { server, reason } => {
                format!("server \"{server}\": {reason}")
            }
            DiagnosticEvent::OAuthStep {
                server,
                step,
                outcome,
                detail,
            } => match detail {
                Some(detail) => format!(
                    "server \"{server}\": {step}: {outcome}: {}",
                    one_line(detail)
                ),
                None => format!("server \"{server}\": {step}: {outcome}"),
            },
            _ => return,
        };
        eprintln!("diagnostic: {}: {line}", event.name());
    }
}
