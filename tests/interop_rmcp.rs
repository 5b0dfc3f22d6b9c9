//! Interop with the official Rust SDK (`rmcp` 3.11, a dev-dependency): the server in
//! `examples/rmcp_server.rs`, over stdio and over Streamable HTTP (rmcp's
//! `StreamableHttpService` on hyper, 127.0.0.1 only), in its two modes:
//!
//! - default, dual-era (`supported_protocol_versions` = every version rmcp knows,
//!   2026-07-28 included): the default mode's target is modern;
//! - `--legacy-only` (versions up to 2025-11-25; it answers `server/discover` with
//!   -32022 naming only legacy versions, `interop/servers/PROBES.md`): always legacy.
//!   The tests of this mode have `legacy_only` in their names;
//! - `--tasks` (dual-era, plus the Tasks extension served by rmcp's `TaskManager`):
//!   the `job` tool runs as a task, driven by this client's task driver against
//!   rmcp's own `tasks/get`, `tasks/update` and `tasks/cancel` (and, over HTTP, its
//!   `Mcp-Name` checks). The tests of this mode have `task` in their names.
//!
//! `cargo test` builds examples, so the binary sits at
//! `<target>/debug/examples/rmcp_server` when the tests run. Run alone
//! (`cargo test --test interop_rmcp`), cargo may not build it: then the tests print a
//! notice and pass vacuously, except under CI (`CI=true`), where that is a failure.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use support::interop;
use support::{AcceptEveryForm, TaskUpdates};

use serde_json::{Map, Value, json};
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{
    CallOptions, CancellationToken, Client, ClientBuilder, ErrorKind, Limits, StdioCommand,
    TaskPolicy, TaskStatus,
};
use support::interop::{Era, OurServer, Reach, SlowUnit};
use support::peer_process::HttpPeer;

const SLOW: SlowUnit = SlowUnit::Millis;

/// The modes of the example server.
#[derive(Clone, Copy)]
enum Mode {
    DualEra,
    LegacyOnly,
    Tasks,
}

impl Mode {
    fn peer(self) -> &'static str {
        match self {
            Mode::DualEra => "rmcp",
            Mode::LegacyOnly => "rmcp-legacy",
            Mode::Tasks => "rmcp-tasks",
        }
    }

    fn era(self) -> Era {
        match self {
            Mode::DualEra | Mode::Tasks => Era::Modern,
            Mode::LegacyOnly => Era::Legacy,
        }
    }

    /// The example server in this mode, for the uniform checks.
    fn server(self) -> OurServer {
        OurServer {
            peer: self.peer(),
            speaks: self.era(),
            slow: SLOW,
        }
    }

    fn extra_args(self) -> &'static [&'static str] {
        match self {
            Mode::DualEra => &[],
            Mode::LegacyOnly => &["--legacy-only"],
            Mode::Tasks => &["--tasks"],
        }
    }
}

/// `<target>/<profile>/examples/rmcp_server`, next to this test's `deps/` directory.
fn rmcp_server() -> Option<PathBuf> {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("tests run from <target>/<profile>/deps");
    let path = profile_dir
        .join("examples")
        .join(format!("rmcp_server{}", std::env::consts::EXE_SUFFIX));
    if path.exists() {
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/rmcp_server.rs");
        let modified = |p: &PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        if modified(&source) > modified(&path) {
            eprintln!(
                "warning: {} is older than examples/rmcp_server.rs; \
                 run `cargo build --example rmcp_server`",
                path.display()
            );
        }
    }
    let what = path.display().to_string();
    interop::require(
        path.exists().then_some(path),
        &what,
        "plain `cargo test` builds it, or `cargo build --example rmcp_server`",
    )
}

fn stdio(server: &Path, mode: Mode) -> Reach<'static, StdioCommand> {
    Reach::stdio(
        StdioCommand::new(server)
            .arg("stdio")
            .args(mode.extra_args().iter().copied()),
    )
}

async fn http(server: &Path, mode: Mode) -> HttpPeer {
    let server = server.to_path_buf();
    HttpPeer::start(
        move |port| {
            let mut command = std::process::Command::new(server);
            command
                .arg("http")
                .arg(port.to_string())
                .args(mode.extra_args());
            command
        },
        Duration::from_secs(15),
    )
    .await
}

/// How a test reaches `peer` in `mode` (its log shown if connecting fails).
fn reach(peer: &HttpPeer, mode: Mode) -> Reach<'_, HttpTransport> {
    Reach::http(peer.transport(mode.peer()), || peer.log())
}

async fn stdio_tools_and_calls_in(mode: Mode) {
    if let Some(server) = rmcp_server() {
        let client = mode.server().tools_and_calls(stdio(&server, mode)).await;
        client.close().await;
    }
}

async fn stdio_timeout_then_cancel_in(mode: Mode) {
    if let Some(server) = rmcp_server() {
        let client = mode
            .server()
            .timeout_then_cancel(stdio(&server, mode))
            .await;
        client.close().await;
    }
}

async fn http_tools_and_calls_in(mode: Mode) {
    if let Some(server) = rmcp_server() {
        let peer = http(&server, mode).await;
        let client = mode.server().tools_and_calls(reach(&peer, mode)).await;
        client.close().await;
    }
}

async fn http_timeout_then_cancel_in(mode: Mode) {
    if let Some(server) = rmcp_server() {
        let peer = http(&server, mode).await;
        let client = mode.server().timeout_then_cancel(reach(&peer, mode)).await;
        client.close().await;
    }
}

#[tokio::test]
async fn stdio_tools_and_calls() {
    stdio_tools_and_calls_in(Mode::DualEra).await;
}

#[tokio::test]
async fn stdio_timeout_then_cancel() {
    stdio_timeout_then_cancel_in(Mode::DualEra).await;
}

#[tokio::test]
async fn stdio_negotiates_modern() {
    if let Some(server) = rmcp_server() {
        let mode = Mode::DualEra;
        let client = mode.server().negotiates_modern(stdio(&server, mode)).await;
        client.close().await;
    }
}

#[tokio::test]
async fn http_tools_and_calls() {
    http_tools_and_calls_in(Mode::DualEra).await;
}

#[tokio::test]
async fn http_timeout_then_cancel() {
    http_timeout_then_cancel_in(Mode::DualEra).await;
}

#[tokio::test]
async fn http_negotiates_modern() {
    if let Some(server) = rmcp_server() {
        let mode = Mode::DualEra;
        let peer = http(&server, mode).await;
        let client = mode.server().negotiates_modern(reach(&peer, mode)).await;
        client.close().await;
    }
}

#[tokio::test]
async fn stdio_legacy_only_tools_and_calls() {
    stdio_tools_and_calls_in(Mode::LegacyOnly).await;
}

#[tokio::test]
async fn stdio_legacy_only_timeout_then_cancel() {
    stdio_timeout_then_cancel_in(Mode::LegacyOnly).await;
}

#[tokio::test]
async fn http_legacy_only_tools_and_calls() {
    http_tools_and_calls_in(Mode::LegacyOnly).await;
}

#[tokio::test]
async fn http_legacy_only_timeout_then_cancel() {
    http_timeout_then_cancel_in(Mode::LegacyOnly).await;
}

fn job(ms: u64, ask: bool) -> Map<String, Value> {
    json!({"ms": ms, "ask": ask}).as_object().cloned().unwrap()
}

/// rmcp's `job` as a task: to its result (polled at rmcp's 100 ms), with an
/// elicitation during the task answered through `tasks/update`, cancelled by
/// the caller's token (`tasks/cancel`: rmcp ends it `cancelled`), and detached
/// at `maxTaskWaitMs`, then resumed to its result.
async fn tasks_against_rmcp(client: &Client, host: &AcceptEveryForm) {
    interop::expect_modern(client);
    let seen = TaskUpdates::default();
    let result = client
        .call_tool_with("job", job(300, false), &seen.options())
        .await
        .expect("the task's result");
    assert_eq!(support::text_of(&result), "job done after 300 ms");
    let updates = seen.all();
    assert_eq!(updates[0].status, TaskStatus::Working, "{updates:?}");
    assert_eq!(updates[0].polls, 0);
    assert_eq!(updates[0].poll_interval, Some(Duration::from_millis(100)));
    assert_eq!(updates.last().unwrap().status, TaskStatus::Completed);
    assert!(updates.len() >= 3, "polled while it ran: {updates:?}");

    let asked = client
        .call_tool_with("job", job(100, true), &CallOptions::new())
        .await
        .expect("the task after its elicitation");
    assert_eq!(support::text_of(&asked), "job done after 100 ms");
    assert_eq!(*host.0.lock().unwrap(), ["Go on with the job?"]);

    // The caller gives up: tasks/cancel; rmcp's job stops as `cancelled`,
    // which resuming the task then reports.
    let token = CancellationToken::new();
    let seen = TaskUpdates::default();
    let options = seen.options().cancel_on(token.clone());
    let call = client.call_tool_with("job", job(60_000, false), &options);
    let cancel = async {
        while seen.all().len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        token.cancel();
    };
    let (result, ()) = tokio::join!(call, cancel);
    assert_eq!(result.expect_err("cancelled").kind(), ErrorKind::Cancelled);
    let task = seen.all()[0].task.clone();
    let ended = tokio::time::timeout(
        Duration::from_secs(20),
        client.resume_task(&task, &CallOptions::new()),
    )
    .await
    .expect("the cancelled task ends")
    .expect_err("cancelled by tasks/cancel");
    assert_eq!(ended.kind(), ErrorKind::TaskCancelled, "{ended:?}");
}

/// `Detach` at `maxTaskWaitMs`, then `resume_task` to the result.
async fn detach_and_resume_against_rmcp(client: &Client) {
    let options = CallOptions::new().task_policy(TaskPolicy::Detach);
    let error = client
        .call_tool_with("job", job(600, false), &options)
        .await
        .expect_err("detached at maxTaskWaitMs");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
    let task = error.detached_task().expect("the task").clone();
    let result = client
        .resume_task(&task, &options)
        .await
        .expect("the resumed task's result");
    assert_eq!(support::text_of(&result), "job done after 600 ms");
}

fn task_limits(wait_ms: u64) -> Limits {
    let mut limits = Limits::default();
    limits.task_min_poll_interval_ms = 50;
    limits.max_task_wait_ms = wait_ms;
    limits
}

/// A client of the `--tasks` server waiting at most `wait_ms` for a task.
fn task_client(wait_ms: u64) -> ClientBuilder {
    Client::builder(Mode::Tasks.peer()).limits(task_limits(wait_ms))
}

#[tokio::test]
async fn stdio_tasks() {
    let Some(server) = rmcp_server() else {
        return;
    };
    let host = Arc::new(AcceptEveryForm::default());
    let driving = task_client(60_000).host_handler(host.clone());
    let client = stdio(&server, Mode::Tasks).connect(driving).await;
    tasks_against_rmcp(&client, &host).await;
    client.close().await;
    let client = stdio(&server, Mode::Tasks).connect(task_client(400)).await;
    detach_and_resume_against_rmcp(&client).await;
    client.close().await;
}

#[tokio::test]
async fn http_tasks() {
    let Some(server) = rmcp_server() else {
        return;
    };
    let peer = http(&server, Mode::Tasks).await;
    let host = Arc::new(AcceptEveryForm::default());
    let driving = task_client(60_000).host_handler(host.clone());
    let client = reach(&peer, Mode::Tasks).connect(driving).await;
    tasks_against_rmcp(&client, &host).await;
    client.close().await;
    let client = reach(&peer, Mode::Tasks).connect(task_client(400)).await;
    detach_and_resume_against_rmcp(&client).await;
    client.close().await;
}
