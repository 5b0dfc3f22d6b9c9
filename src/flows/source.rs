//! Running flows: the [`FlowInvoker`] trait, flows and their sources (a connected
//! client, or the host's own), and [`compose`], which joins sources into one
//! [`FlowCatalog`] with unique names.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, truncate};
use crate::session::{Client, ToolResult};

use super::BoxFuture;
use super::declaration::FlowDeclaration;
use super::projection::{ProjectionError, ProjectionErrorKind, ProjectionOptions, project};

// ---------------------------------------------------------------------------------
// Flows, sources and composition
// ---------------------------------------------------------------------------------

/// How a flow runs: takes the caller's arguments and produces a tool result.
///
/// Implement it to add your own flow sources. The contract is the MCP one: a
/// tool-level failure is `Ok` data (`is_error: true`); `Err` is for a failure of the
/// machinery, with kind [`ErrorKind::FlowFailed`] and a public message that carries
/// no secrets, remote bodies or process details.
pub trait FlowInvoker: Send + Sync {
    /// Runs the flow with `arguments`. The future owns everything it needs.
    fn invoke(
        &self,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'static, crate::Result<ToolResult>>;
}

struct FnInvoker<F>(F);

impl<F, Fut> FlowInvoker for FnInvoker<F>
where
    F: Fn(Map<String, Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = crate::Result<ToolResult>> + Send + 'static,
{
    fn invoke(
        &self,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'static, crate::Result<ToolResult>> {
        Box::pin((self.0)(arguments))
    }
}

/// Wraps an async closure as a [`FlowInvoker`].
pub fn invoker_fn<F, Fut>(f: F) -> Arc<dyn FlowInvoker>
where
    F: Fn(Map<String, Value>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = crate::Result<ToolResult>> + Send + 'static,
{
    Arc::new(FnInvoker(f))
}

/// Invokes one MCP tool through a session.
struct McpInvoker {
    client: Client,
    tool: Arc<str>,
}

impl FlowInvoker for McpInvoker {
    fn invoke(
        &self,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'static, crate::Result<ToolResult>> {
        let client = self.client.clone();
        let tool = Arc::clone(&self.tool);
        Box::pin(async move {
            client
                .call_tool(&tool, arguments)
                .await
                .map_err(flow_failed)
        })
    }
}

/// A session error as a flow failure, keeping its public message.
pub(super) fn flow_failed(err: Error) -> Error {
    Error::new(ErrorKind::FlowFailed, err.message().to_owned())
}

/// A flow: its declaration and how to run it.
#[derive(Clone)]
pub struct Flow {
    /// What the flow declares.
    pub declaration: FlowDeclaration,
    /// What runs it.
    pub invoker: Arc<dyn FlowInvoker>,
}

impl Flow {
    /// Pairs a declaration with its invoker.
    pub fn new(declaration: FlowDeclaration, invoker: Arc<dyn FlowInvoker>) -> Flow {
        Flow {
            declaration,
            invoker,
        }
    }

    /// The flow's name.
    pub fn name(&self) -> &str {
        &self.declaration.name
    }
}

impl fmt::Debug for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Flow")
            .field("declaration", &self.declaration)
            .finish_non_exhaustive()
    }
}

/// A list of flows from one origin (an MCP server, or a host's own code), ready to
/// [`compose`].
#[derive(Debug, Clone, Default)]
pub struct FlowSource {
    flows: Vec<Flow>,
}

impl FlowSource {
    /// A source of these flows.
    pub fn new(flows: Vec<Flow>) -> FlowSource {
        FlowSource { flows }
    }

    /// Adds a flow.
    pub fn push(&mut self, flow: Flow) {
        self.flows.push(flow);
    }

    /// The flows, in order.
    pub fn flows(&self) -> &[Flow] {
        &self.flows
    }

    /// Number of flows.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// True when the source has no flows.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }
}

impl From<Vec<Flow>> for FlowSource {
    fn from(flows: Vec<Flow>) -> Self {
        FlowSource { flows }
    }
}

impl FromIterator<Flow> for FlowSource {
    fn from_iter<I: IntoIterator<Item = Flow>>(iter: I) -> Self {
        FlowSource {
            flows: iter.into_iter().collect(),
        }
    }
}

impl IntoIterator for FlowSource {
    type Item = Flow;
    type IntoIter = std::vec::IntoIter<Flow>;
    fn into_iter(self) -> Self::IntoIter {
        self.flows.into_iter()
    }
}

/// The flow source for a connected MCP server: [`project`]s its frozen catalog with
/// `options` and pairs each declaration with an invoker that calls the tool through
/// `client` (see the module docs for how failures map).
pub fn source_from_client(
    client: &Client,
    options: &ProjectionOptions,
) -> Result<FlowSource, ProjectionError> {
    let declarations = project(client.server(), client.catalog(), options)?;
    Ok(declarations
        .into_iter()
        .map(|declaration| {
            let invoker = Arc::new(McpInvoker {
                client: client.clone(),
                tool: Arc::from(declaration.tool.as_str()),
            });
            Flow::new(declaration, invoker)
        })
        .collect())
}

/// Merges sources into one catalog, keeping source order and flow order.
///
/// A flow name that appears twice fails with
/// [`ProjectionErrorKind::DuplicateFlowName`] naming it: a name never silently
/// dispatches to another implementation.
pub fn compose(
    sources: impl IntoIterator<Item = FlowSource>,
) -> Result<FlowCatalog, ProjectionError> {
    let mut flows = Vec::new();
    let mut index = HashMap::new();
    for flow in sources.into_iter().flatten() {
        if index.contains_key(flow.name()) {
            let mut err = ProjectionError::new(ProjectionErrorKind::DuplicateFlowName);
            err.name = Some(flow.name().to_owned());
            return Err(err);
        }
        index.insert(flow.name().to_owned(), flows.len());
        flows.push(flow);
    }
    Ok(FlowCatalog { flows, index })
}

/// The error for a flow name no catalog entry has: `tool_not_found`, naming
/// it (escaped, at most 128 bytes).
pub(crate) fn unknown_flow(name: &str) -> Error {
    Error::new(
        ErrorKind::ToolNotFound,
        format!("no flow named {:?}", truncate(name, 128)),
    )
}

/// The composed flows of a run, by name. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct FlowCatalog {
    flows: Vec<Flow>,
    index: HashMap<String, usize>,
}

impl FlowCatalog {
    /// The flow named `name`.
    pub fn get(&self, name: &str) -> Option<&Flow> {
        self.index.get(name).map(|&i| &self.flows[i])
    }

    /// The flows, sources in composition order, each source's flows in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Flow> {
        self.flows.iter()
    }

    /// The declarations, in the same order as [`FlowCatalog::iter`].
    pub fn declarations(&self) -> impl Iterator<Item = &FlowDeclaration> {
        self.flows.iter().map(|f| &f.declaration)
    }

    /// Number of flows.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// True when no flows were composed.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Invokes the flow named `name` with `arguments`.
    ///
    /// An unknown name fails with [`ErrorKind::ToolNotFound`] without invoking
    /// anything. The returned future owns what it needs, so it may be spawned.
    pub fn invoke(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'static, crate::Result<ToolResult>> {
        match self.get(name) {
            Some(flow) => flow.invoker.invoke(arguments),
            None => Box::pin(std::future::ready(Err(unknown_flow(name)))),
        }
    }
}

impl<'a> IntoIterator for &'a FlowCatalog {
    type Item = &'a Flow;
    type IntoIter = std::slice::Iter<'a, Flow>;
    fn into_iter(self) -> Self::IntoIter {
        self.flows.iter()
    }
}
