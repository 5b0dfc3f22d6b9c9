//! Tools as flows: projecting an MCP server's tool catalog into flow declarations,
//! and composing those with other flow sources into one [`FlowCatalog`].
//!
//! A remote MCP tool is a flow declaration plus the code that runs it, which is what
//! every other flow already is. [`project`] turns a server's frozen [`Catalog`] into
//! plain [`FlowDeclaration`] structs; [`source_from_client`] pairs each one with an
//! invoker that calls the tool through a connected [`Client`]; [`compose`] merges
//! any number of [`FlowSource`]s, refusing duplicate flow names instead of letting
//! one shadow another.
//!
//! Only tools become flows. Resources, prompts, completions and Skills are
//! data a host reads ([`Client::read_resource`](crate::Client::read_resource), [`Client::get_prompt`](crate::Client::get_prompt),
//! [`Client::load_skill`](crate::Client::load_skill)), not actions a flow runs; change events
//! ([`Client::subscribe`](crate::Client::subscribe)) are notices, and a changed tool list never changes
//! a projection (the catalog stays frozen: reconnect, and a pin decides).
//!
//! # What one tool becomes
//!
//! | field | value |
//! | --- | --- |
//! | `name` | `<prefix>/<tool>`; the prefix defaults to `mcp/<server>` ([`ProjectionOptions::name_prefix`]). |
//! | `description` | `MCP tool "<tool>" on server "<server>"`, plus `. Server-supplied description: <text>` when the server sent a description that is not empty or whitespace-only. |
//! | `server`, `tool` | Where the flow goes: the server name and the tool's own name. |
//! | `inputDocument` | The tool's `inputSchema`, carried by value and unchanged. Arguments are **not** validated here: the server owns that decision. |
//! | `output` | [`OutputShape`]: a JSON Schema for `{content, isError, structuredContent?}`. |
//! | `capabilities` | [`capabilities()`]: one `namespace:operation:**` string per host [`Action`], the same for every tool. |
//! | `effects` | [`effects()`]: `reads ["**"]`, `writes ["**"]`, `expected`, `serialize`, `irreversible`, the same for every tool. |
//! | `digest` | Lowercase hex SHA-256 of the canonical JSON of all of the above ([`FlowDeclaration::compute_digest`]). |
//!
//! Every MCP tool declares the same, widest authority because it is opaque code this
//! adapter does not control: the declaration is a ceiling for the host to narrow,
//! not a recommendation.
//!
//! # A tool-level failure is data
//!
//! A `tools/call` that comes back with `isError: true` is a *successful* invocation:
//! the [`ToolResult`] arrives in `Ok`. Only a failure of the session itself (the
//! server would not start, the pipe closed, a reply could not be parsed, a timeout)
//! becomes an [`Error`] of kind [`ErrorKind::FlowFailed`](crate::ErrorKind::FlowFailed), carrying the session
//! error's public message unchanged (which never holds remote bodies or process
//! details). The session error's own kind (`timeout`, `connection_closed`, ...) is
//! not kept; a caller that must tell them apart calls
//! [`Client::call_tool`](crate::Client::call_tool) directly. A custom
//! [`FlowInvoker`] must keep the same contract.
//!
//! # Composing sources
//!
//! A [`FlowSource`] is a list of [`Flow`]s. [`source_from_client`] builds one from a
//! connected server; a host builds others from its own code. This example composes
//! two in-memory sources and invokes a flow, without any server:
//!
//! ```
//! use serde_json::{json, Map, Value};
//! use smthrs_mcp::flows::{compose, invoker_fn, Flow, FlowDeclaration, FlowSource};
//! use smthrs_mcp::{ErrorKind, ToolResult};
//!
//! fn echo_flow(name: &str) -> Flow {
//!     let input: Map<String, Value> =
//!         serde_json::from_value(json!({ "type": "object" })).unwrap();
//!     let declaration = FlowDeclaration::new(name, "Echoes its arguments.", "local", "echo", input);
//!     Flow::new(
//!         declaration,
//!         invoker_fn(|args: Map<String, Value>| async move {
//!             let text = Value::Object(args).to_string();
//!             Ok(ToolResult::new(vec![json!({ "type": "text", "text": text })]))
//!         }),
//!     )
//! }
//!
//! let mine = FlowSource::new(vec![echo_flow("local/echo")]);
//! let theirs: FlowSource = [echo_flow("other/echo")].into_iter().collect();
//! let catalog = compose([mine, theirs])?;
//! assert_eq!(catalog.len(), 2);
//! assert!(catalog.get("other/echo").is_some());
//!
//! // The same name from two sources fails composition, naming the flow.
//! let clash = compose([
//!     FlowSource::new(vec![echo_flow("local/echo")]),
//!     FlowSource::new(vec![echo_flow("local/echo")]),
//! ]);
//! assert!(clash.unwrap_err().to_string().contains("local/echo"));
//!
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! runtime.block_on(async {
//!     let mut args = Map::new();
//!     args.insert("x".into(), json!(1));
//!     let result = catalog.invoke("local/echo", args).await.unwrap();
//!     assert!(!result.is_error);
//!     // Unknown flow names fail with `tool_not_found` and call nothing.
//!     let err = catalog.invoke("nope/echo", Map::new()).await.unwrap_err();
//!     assert_eq!(err.kind(), ErrorKind::ToolNotFound);
//! });
//! # Ok::<(), smthrs_mcp::flows::ProjectionError>(())
//! ```
//!
//! With a connected [`Client`], the MCP source is one call, and the projection
//! options usually come from a server file entry
//! ([`ServerEntry::projection`](crate::config::ServerEntry::projection)):
//!
//! ```no_run
//! use smthrs_mcp::flows::{compose, source_from_client, FlowSource, ProjectionOptions};
//! use smthrs_mcp::{Client, StdioCommand};
//!
//! # async fn run(local: FlowSource) -> Result<(), smthrs_mcp::Error> {
//! let options = ProjectionOptions::checked(
//!     vec![],
//!     vec!["delete_repository".into()],
//!     Some("github".into()),
//! )?;
//! // Spawn and connect only after the options were checked.
//! let client = Client::builder("github")
//!     .connect(StdioCommand::new("mcp-server-github"))
//!     .await?;
//! let catalog = compose([source_from_client(&client, &options)?, local])?;
//! # let _ = catalog;
//! # Ok(()) }
//! ```
//!
//! # Choosing a projection constructor
//!
//! - [`ProjectionOptions::checked`] / [`ProjectionOptions::validate`] refuse an
//!   empty `namePrefix`: call them **before** spawning or connecting anything.
//! - [`project`] (and [`source_from_client`]) also refuse an `include` name that the
//!   catalog does not have, which can only be known after the catalog is read.
//! - [`project_unchecked`] does neither: it never fails, ignores unknown `include`
//!   names, and joins any prefix, even an empty one, literally (`"" + "/" + tool`).
//!
//! [`Catalog`]: crate::Catalog
//! [`Client`]: crate::Client
//! [`ToolResult`]: crate::ToolResult
//! [`Error`]: crate::Error

mod capability;
mod declaration;
mod projection;
mod source;

use std::future::Future;
use std::pin::Pin;

pub use capability::{
    Action, Capability, CapabilityParseError, Effects, OutputShape, capabilities, effects,
};
pub use declaration::FlowDeclaration;
pub use projection::{
    ProjectionError, ProjectionErrorKind, ProjectionOptions, describe, project, project_unchecked,
};
pub(crate) use source::unknown_flow;
pub use source::{
    Flow, FlowCatalog, FlowInvoker, FlowSource, compose, invoker_fn, source_from_client,
};

/// A boxed, `Send` future, as [`FlowInvoker::invoke`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

#[cfg(test)]
mod tests;
