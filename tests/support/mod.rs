//! The one support module every integration test file includes (`mod support;`).
//!
//! At the root: the scripted server (built on demand from the `testkit/` crate) and
//! how to start it, what it recorded, diagnostics collectors, and the small helpers
//! every file wants. Below it, one module per kind of peer:
//!
//! - [`eras`]: one rule run over stdio and over Streamable HTTP, in either era
//!   (`Via`, [`both_transports!`](eras::both_transports), `Attempt`);
//! - [`oauth_server`]: the test kit's OAuth server, and the helpers the OAuth tests
//!   share on top of it;
//! - [`interop`] and [`peer_process`]: the third-party MCP servers and how to run them.
//!
//! The servers themselves live in the test kit's library, which tests import
//! directly: `smthrs_mcp_testkit::bridge::Bridge` (the scripted server on
//! Streamable HTTP), `http_server` (a hyper server on loopback whose handler a test
//! writes) and `oauth_server`.
#![allow(dead_code)]

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use secrecy::ExposeSecret;
use serde_json::{Map, Value};
use smthrs_mcp::handler::{ElicitAnswer, ElicitRequest, HostCapabilities, HostHandler};
use smthrs_mcp::{
    CallEvent, CallOptions, Client, ClientBuilder, DiagnosticEvent, DiagnosticObserver, Limits,
    StdioCommand, TaskUpdate, ToolResult, Transport,
};

mod testkit;
/// Path of the scripted test server binary (built on demand from `testkit/`).
pub use testkit::scripted_server;

/// Path of a scenario file under `testdata/scenarios/`.
pub fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/scenarios")
        .join(format!("{name}.json"))
}

/// How to start the scripted server: its arguments and extra environment. Over
/// stdio through [`Server::stdio`], or behind the HTTP bridge.
#[derive(Clone, Debug)]
pub struct Server {
    pub args: Vec<OsString>,
    pub env: Vec<(String, String)>,
}

impl Server {
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// The stdio command for this server.
    pub fn stdio(&self) -> StdioCommand {
        let mut command = StdioCommand::new(scripted_server()).args(self.args.clone());
        for (key, value) in &self.env {
            command = command.env(key.clone(), value.clone());
        }
        command
    }
}

/// The scripted server with a named scenario.
pub fn scenario(name: &str) -> Server {
    Server {
        args: vec![scenario_path(name).into()],
        env: Vec::new(),
    }
}

/// The scripted server with an inline scenario.
pub fn inline(json: Value) -> Server {
    Server {
        args: vec![json.to_string().into()],
        env: Vec::new(),
    }
}

/// A record file the scripted server appends every received line to.
pub struct Recording {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Recording {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("record.jsonl");
        Recording { _dir: dir, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds `--record PATH` to a server.
    pub fn attach(&self, server: Server) -> Server {
        server.arg("--record").arg(&self.path)
    }

    /// Every line received so far, parsed where possible.
    pub fn lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| parse_deep(l.as_bytes()))
            .collect()
    }

    pub fn methods(&self) -> Vec<String> {
        self.lines()
            .iter()
            .filter_map(|v| v.get("method").and_then(Value::as_str).map(String::from))
            .collect()
    }
}

/// An observer that keeps every event as plain text (test only).
#[derive(Default)]
pub struct Collect(pub Mutex<Vec<(String, String)>>);

impl DiagnosticObserver for Collect {
    fn observe(&self, event: DiagnosticEvent) {
        let text = match &event {
            DiagnosticEvent::StderrTail { tail, .. } => tail.expose_secret().to_string(),
            DiagnosticEvent::RemoteError {
                code,
                message,
                data,
                ..
            } => format!(
                "{code} {} {}",
                message.expose_secret(),
                data.as_ref()
                    .map(|d| d.expose_secret().to_string())
                    .unwrap_or_default()
            ),
            DiagnosticEvent::OAuthStep {
                step,
                outcome,
                detail,
                ..
            } => format!(
                "{step} {outcome} {} {event:?}",
                detail.as_deref().unwrap_or_default()
            ),
            _ => String::new(),
        };
        self.0
            .lock()
            .unwrap()
            .push((event.name().to_string(), text));
    }
}

impl Collect {
    pub fn new() -> Arc<Self> {
        Arc::new(Collect::default())
    }
    pub fn events(&self) -> Vec<(String, String)> {
        self.0.lock().unwrap().clone()
    }
    /// The text of every event with this name, in order.
    pub fn named(&self, name: &str) -> Vec<String> {
        self.events()
            .into_iter()
            .filter(|(event, _)| event == name)
            .map(|(_, text)| text)
            .collect()
    }
}

/// A host that accepts every form (with no content), recording each form's message.
#[derive(Default)]
pub struct AcceptEveryForm(pub Mutex<Vec<String>>);

impl HostHandler for AcceptEveryForm {
    fn capabilities(&self) -> HostCapabilities {
        HostCapabilities::default().with_elicitation_form()
    }

    fn elicit(&self, request: ElicitRequest) -> BoxFuture<'_, ElicitAnswer> {
        if let ElicitRequest::Form(form) = request {
            self.0.lock().unwrap().push(form.message);
        }
        Box::pin(async { ElicitAnswer::Accept(Map::new()) })
    }
}

/// The task updates a call reports, kept: calls made with [`TaskUpdates::options`]
/// record every [`CallEvent::Task`] here.
#[derive(Clone, Default)]
pub struct TaskUpdates(Arc<Mutex<Vec<TaskUpdate>>>);

impl TaskUpdates {
    /// Call options that record the call's task updates.
    pub fn options(&self) -> CallOptions {
        let seen = self.0.clone();
        CallOptions::new().on_event(move |event| {
            if let CallEvent::Task(update) = event {
                seen.lock().unwrap().push(update);
            }
        })
    }

    /// Every update so far, in order.
    pub fn all(&self) -> Vec<TaskUpdate> {
        self.0.lock().unwrap().clone()
    }
}

/// The generous bound every await of a test gets: a hang fails the test instead
/// of stalling the run. Never a timing assertion.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// The hang guard of an await that moves a bound's worth of data (16 MiB and
/// more through a debug build, on a busy two-core machine). Never a timing
/// assertion.
pub const BULK_HANG_GUARD: Duration = Duration::from_secs(180);

/// Awaits `future`, failing the test if it hangs.
pub async fn guard<T>(what: &str, future: impl Future<Output = T>) -> T {
    guard_within(HANG_GUARD, what, future).await
}

/// As [`guard`], for an await that moves a bound's worth of data.
pub async fn bulk_guard<T>(what: &str, future: impl Future<Output = T>) -> T {
    guard_within(BULK_HANG_GUARD, what, future).await
}

async fn guard_within<T>(bound: Duration, what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(bound, future).await {
        Ok(value) => value,
        Err(_) => panic!("hang guard: {what} did not finish within {bound:?}"),
    }
}

/// Polls `check` every 10 ms until it holds (at most [`HANG_GUARD`], a hang
/// guard, never a timing claim): for effects another process produces
/// asynchronously (a record line, a bridge record).
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    while tokio::time::Instant::now() < deadline {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: never observed");
}

/// Connects `builder` over `transport` within the hang guard; panics when the
/// connect fails.
pub async fn connected(builder: ClientBuilder, transport: impl Transport) -> Client {
    guard("connect", builder.connect(transport))
        .await
        .expect("connects")
}

/// The default limits with `edit` applied.
pub fn limits(edit: impl FnOnce(&mut Limits)) -> Limits {
    let mut limits = Limits::default();
    edit(&mut limits);
    limits
}

/// The text of a tool result's first content block; panics when that block has none.
pub fn text_of(result: &ToolResult) -> String {
    match result
        .content
        .first()
        .and_then(|block| block["text"].as_str())
    {
        Some(text) => text.to_owned(),
        None => panic!("the result's first block has no text: {:?}", result.content),
    }
}

/// Whether `pid` is a live process: it exists and is neither a zombie nor dead.
pub fn live_process(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `pid (comm) S ...`: the state follows the last `)`.
    let state = stat
        .rfind(')')
        .and_then(|at| stat[at + 1..].split_whitespace().next());
    !matches!(state, Some("Z" | "X"))
}

/// Whether `pid` is a live (not zombie) process whose environment holds
/// `name=value`: how a test tells its own server processes (tagged through the
/// environment) from every other process on the machine.
pub fn live_process_with_env(pid: i32, name: &str, value: &str) -> bool {
    if !live_process(pid) {
        return false;
    }
    let needle = format!("{name}={value}");
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|environ| {
            environ
                .split(|&byte| byte == 0)
                .any(|entry| entry == needle.as_bytes())
        })
        .unwrap_or(false)
}

/// Builds an argument object from a JSON literal.
pub fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("arguments must be an object"),
    }
}
pub mod eras;
pub mod interop;
pub mod oauth_server;
pub mod peer_process;

/// Parses JSON allowing the 128 containers a frame may legally have (serde_json's
/// default recursion limit stops at 127).
pub fn parse_deep(bytes: &[u8]) -> Option<Value> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    Value::deserialize(&mut de).ok()
}
