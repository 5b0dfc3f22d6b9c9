//! Interop with the official Rust SDK (`rmcp` 3.11, a dev-dependency): the server in
//! `examples/rmcp_server.rs`, over stdio and over Streamable HTTP (rmcp's
//! `StreamableHttpService` on hyper, 127.0.0.1 only), in its two modes:
//!
//! - default, dual-era (`supported_protocol_versions` = every version rmcp knows,
//!   2026-07-28 included): the default mode's target is modern;
//! - `--legacy-only` (versions up to 2025-11-25; it answers `server/discover` with
//!   -32022 naming only legacy versions, `interop/servers/PROBES.md`): always legacy.
//!   The tests of this mode have `legacy_only` in their names.
//!
//! `cargo test` builds examples, so the binary sits at
//! `<target>/debug/examples/rmcp_server` when the tests run. Run alone
//! (`cargo test --test interop_rmcp`), cargo may not build it: then the tests print a
//! notice and pass vacuously, except under CI (`CI=true`), where that is a failure.

#[path = "support/interop.rs"]
mod interop;
#[path = "support/peer_process.rs"]
mod peer_process;

use std::path::{Path, PathBuf};
use std::time::Duration;

use interop::{Era, SlowUnit};
use peer_process::HttpPeer;
use smthrs_mcp::{Client, StdioCommand};

const SLOW: SlowUnit = SlowUnit::Millis;

/// The two modes of the example server.
#[derive(Clone, Copy)]
enum Mode {
    DualEra,
    LegacyOnly,
}

impl Mode {
    fn peer(self) -> &'static str {
        match self {
            Mode::DualEra => "rmcp",
            Mode::LegacyOnly => "rmcp-legacy",
        }
    }

    fn era(self) -> Era {
        match self {
            Mode::DualEra => Era::Modern,
            Mode::LegacyOnly => Era::Legacy,
        }
    }

    fn extra_args(self) -> &'static [&'static str] {
        match self {
            Mode::DualEra => &[],
            Mode::LegacyOnly => &["--legacy-only"],
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

fn stdio(server: &Path, mode: Mode) -> StdioCommand {
    StdioCommand::new(server)
        .arg("stdio")
        .args(mode.extra_args().iter().copied())
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

async fn stdio_tools_and_calls_in(mode: Mode) {
    let Some(server) = rmcp_server() else {
        return;
    };
    let client = interop::connect(
        Client::builder(mode.peer()),
        stdio(&server, mode),
        mode.peer(),
        "stdio",
        mode.era(),
    )
    .await
    .expect("connect to the rmcp server over stdio");
    interop::expect_era(&client, mode.era());
    interop::tools_and_calls(&client, SLOW).await;
    client.close().await;
}

async fn stdio_timeout_then_cancel_in(mode: Mode) {
    let Some(server) = rmcp_server() else {
        return;
    };
    let client = Client::builder(mode.peer())
        .limits(interop::timeout_limits())
        .connect(stdio(&server, mode))
        .await
        .unwrap();
    interop::expect_era(&client, mode.era());
    interop::timeout_then_cancel(&client, SLOW).await;
    client.close().await;
}

async fn http_tools_and_calls_in(mode: Mode) {
    let Some(server) = rmcp_server() else {
        return;
    };
    let peer = http(&server, mode).await;
    let client = interop::connect(
        Client::builder(mode.peer()),
        peer.transport(mode.peer()),
        mode.peer(),
        "http",
        mode.era(),
    )
    .await
    .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", peer.log()));
    interop::expect_era(&client, mode.era());
    interop::tools_and_calls(&client, SLOW).await;
    client.close().await;
}

async fn http_timeout_then_cancel_in(mode: Mode) {
    let Some(server) = rmcp_server() else {
        return;
    };
    let peer = http(&server, mode).await;
    let client = Client::builder(mode.peer())
        .limits(interop::timeout_limits())
        .connect(peer.transport(mode.peer()))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", peer.log()));
    interop::expect_era(&client, mode.era());
    interop::timeout_then_cancel(&client, SLOW).await;
    client.close().await;
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
    let Some(server) = rmcp_server() else {
        return;
    };
    let client = Client::builder("rmcp")
        .connect(stdio(&server, Mode::DualEra))
        .await
        .unwrap();
    interop::expect_modern(&client);
    interop::tools_and_calls(&client, SLOW).await;
    client.close().await;
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
    let Some(server) = rmcp_server() else {
        return;
    };
    let peer = http(&server, Mode::DualEra).await;
    let client = Client::builder("rmcp")
        .connect(peer.transport("rmcp"))
        .await
        .unwrap_or_else(|e| panic!("connect over Streamable HTTP: {e}\n{}", peer.log()));
    interop::expect_modern(&client);
    interop::tools_and_calls(&client, SLOW).await;
    client.close().await;
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
