//! What the scripted test server and the tests that drive it must agree on.
//!
//! The server is the binary `smthrs-mcp-scripted-server` (`src/scripted_server.rs`):
//! an MCP server whose behaviour comes from a scenario, on stdio by default and on
//! Streamable HTTP with `--http OPTIONS` (`src/http_bridge.rs`). A test starts it
//! with [`bridge::BridgeOptions`] as JSON and reads its state
//! ([`bridge::BridgeState`]) back from [`bridge::STATE_PATH`].
//!
//! [`http_server`] is the in-process hyper server whose handler a test writes
//! (HTTP transport, OAuth and denial-of-service tests): a library module, so it
//! is compiled once rather than into every test binary.

pub mod bridge;
pub mod http_server;
