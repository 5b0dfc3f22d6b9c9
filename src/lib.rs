//! smthrs-mcp: a strict, bounded Model Context Protocol client.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod auth;
pub mod catalog;
pub mod config;
pub mod diagnostics;
pub mod error;
pub mod flows;
pub mod handler;
pub mod json_bounds;
pub mod jsonrpc;
pub mod layer;
pub mod limits;
pub mod observe;
pub(crate) mod param_headers;
pub mod pin;
pub mod redact;
pub mod session;
pub mod transport;

/// Re-exported: secrets in this API (`env` values, bearer tokens, diagnostics) are
/// `secrecy::SecretString`s.
pub use secrecy;

pub use catalog::{Catalog, Tool};
pub use diagnostics::{DiagnosticEvent, DiagnosticObserver};
pub use error::{Error, ErrorKind, Result};
pub use limits::Limits;
pub use session::{Client, ClientBuilder, Era, ProtocolMode, ToolResult};
pub use transport::Transport;
pub use transport::stdio::StdioCommand;

/// The README's examples, compiled as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub use layer::{BearerAuthLayer, EgressGrants, EgressPolicyLayer};
pub use transport::http::{HttpTransport, HttpTransportBuilder};
