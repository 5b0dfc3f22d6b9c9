//! (being written)
#![allow(missing_docs)]
pub struct Client;
pub struct ClientBuilder;
pub struct ToolResult;
