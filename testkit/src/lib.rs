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

pub mod bridge;
pub mod echo;
pub mod http_server;
pub mod oauth_server;
