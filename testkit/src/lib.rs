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
//! [`http_server`] is the in-process hyper server whose handler a test writes
//! (HTTP transport, OAuth and denial-of-service tests): a library module, so it
//! is compiled once rather than into every test binary.

pub mod bridge;
pub mod echo;
pub mod http_server;
