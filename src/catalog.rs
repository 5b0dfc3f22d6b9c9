//! Tool catalog: validated, immutable. (being written)
#![allow(missing_docs)]
/// A tool.
#[derive(Debug, Clone)]
pub struct Tool;
/// The catalog.
#[derive(Debug, Clone)]
pub struct Catalog;
