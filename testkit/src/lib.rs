//! What the test kit's servers and the tests and benchmarks that drive them must
//! agree on.
//!
//! The servers are modes of one binary, `smthrs-mcp-scripted-server`:
//!
//! - the scripted server (`src/scripted_server.rs`): an MCP server whose behaviour
//!   comes from a scenario, on stdio by default and on Streamable HTTP with
//!   `--http OPTIONS` (`src/http_bridge.rs`). A test starts it with
//!   [`bridge::BridgeOptions`] as JSON and reads its state
//!   ([`bridge::BridgeState`]) back from [`bridge::STATE_PATH`];
//! - the benchmark's echo server (`echo serve-stdio|serve-http`,
//!   `src/echo_server.rs`): deliberately cheap, so the benchmark harness
//!   (`benches/harness/`) measures the clients; it takes an [`echo::Shape`].
//!
//! Two in-process servers are library modules, compiled once rather than into
//! every test binary: [`http_server`], the hyper server whose handler a test
//! writes (HTTP transport, session and denial-of-service tests), and
//! [`oauth_server`], an MCP server protected by OAuth with its authorization
//! server, built on it.

use std::path::PathBuf;

pub mod bridge;
pub mod echo;
pub mod http_server;
pub mod oauth_server;

/// Builds the test kit's binary, `smthrs-mcp-scripted-server`, and returns its
/// path, or the build's error.
///
/// It is `cargo build -p smthrs-mcp-testkit --bin smthrs-mcp-scripted-server`
/// (through escargot) in the profile this library was built in (debug under
/// `cargo test`, release under `cargo bench`) and into the workspace's target
/// directory, so plain `cargo test` and `cargo bench` need no step of their own.
/// Callers cache the path: a second call asks cargo again (a no-op build).
pub fn build_server() -> Result<PathBuf, String> {
    // No `current_target()`: an explicit `--target` builds into a second tree
    // (target/<triple>/), while the host build shares target/debug with the
    // tests, which are never cross-run.
    escargot::CargoBuild::new()
        .package("smthrs-mcp-testkit")
        .bin("smthrs-mcp-scripted-server")
        .current_release()
        .manifest_path(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .run()
        .map(|run| run.path().to_path_buf())
        .map_err(|error| {
            format!(
                "building the scripted server failed (`cargo build -p smthrs-mcp-testkit` shows the errors): {error}"
            )
        })
}
