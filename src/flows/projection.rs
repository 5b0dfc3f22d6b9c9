//! Projection: a server's frozen catalog becomes flow declarations under a name
//! prefix, with `include`/`exclude` applied and the options checked before any
//! process is spawned.

use std::collections::HashSet;
use std::fmt;

use crate::catalog::{Catalog, Tool};
use crate::error::Error;

use super::declaration::FlowDeclaration;

// ---------------------------------------------------------------------------------
// Projection
// ---------------------------------------------------------------------------------

/// Which tools of a server to project, and how to name them.
///
/// The default projects every tool under the prefix `mcp/<server>`. These are the
/// server file's `include`, `exclude` and `namePrefix` fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectionOptions {
    /// Exact tool names to project; empty projects every tool. A name the catalog
    /// does not have fails [`project`].
    pub include: Vec<String>,
    /// Exact tool names to drop, applied after `include`. Unknown names are ignored.
    pub exclude: Vec<String>,
    /// Replaces the default `mcp/<server>` flow-name prefix. Must not be empty.
    pub name_prefix: Option<String>,
}

impl ProjectionOptions {
    /// The checked constructor: refuses an empty `name_prefix`. Call it (or
    /// [`ProjectionOptions::validate`]) before spawning or connecting a server.
    pub fn checked(
        include: Vec<String>,
        exclude: Vec<String>,
        name_prefix: Option<String>,
    ) -> Result<ProjectionOptions, ProjectionError> {
        let options = ProjectionOptions {
            include,
            exclude,
            name_prefix,
        };
        options.validate()?;
        Ok(options)
    }

    /// Checks what can be checked before the catalog is known: `name_prefix`, when
    /// set, must not be empty.
    pub fn validate(&self) -> Result<(), ProjectionError> {
        match self.name_prefix.as_deref() {
            Some("") => Err(ProjectionError::new(ProjectionErrorKind::EmptyNamePrefix)),
            _ => Ok(()),
        }
    }

    /// The flow-name prefix for `server`: `name_prefix`, or `mcp/<server>`.
    pub fn prefix_for(&self, server: &str) -> String {
        match &self.name_prefix {
            Some(prefix) => prefix.clone(),
            None => format!("mcp/{server}"),
        }
    }
}

/// Which projection or composition rule a [`ProjectionError`] broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProjectionErrorKind {
    /// `namePrefix` was the empty string.
    EmptyNamePrefix,
    /// An `include` name is not in the server's catalog.
    UnknownInclude,
    /// Two flows in a composition have the same name.
    DuplicateFlowName,
}

/// A projection or composition failure: a configuration problem, not a connection
/// failure. Converts into [`crate::Error`] with kind
/// [`InvalidConfig`](crate::ErrorKind::InvalidConfig).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectionError {
    kind: ProjectionErrorKind,
    server: Option<String>,
    pub(super) name: Option<String>,
}

impl ProjectionError {
    pub(super) fn new(kind: ProjectionErrorKind) -> Self {
        ProjectionError {
            kind,
            server: None,
            name: None,
        }
    }

    /// Which rule was broken.
    pub fn kind(&self) -> ProjectionErrorKind {
        self.kind
    }

    /// The server being projected, when known.
    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// The unknown `include` tool name, or the duplicate flow name.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}

impl fmt::Display for ProjectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(server) = &self.server {
            write!(f, "server {server:?}: ")?;
        }
        let name = self.name.as_deref().unwrap_or("");
        match self.kind {
            ProjectionErrorKind::EmptyNamePrefix => {
                f.write_str("namePrefix must be a non-empty string")
            }
            ProjectionErrorKind::UnknownInclude => write!(
                f,
                "include names {name:?}, which is not in the server's tool catalog"
            ),
            ProjectionErrorKind::DuplicateFlowName => write!(
                f,
                "duplicate flow name {name:?}: two flows in the composition declare it \
                 (give one server a different namePrefix)"
            ),
        }
    }
}

impl std::error::Error for ProjectionError {}

impl From<ProjectionError> for Error {
    fn from(err: ProjectionError) -> Self {
        Error::config(err.to_string())
    }
}

/// The model-facing description of a tool: `MCP tool "<tool>" on server "<server>"`,
/// followed by `. Server-supplied description: <text>` when the server sent a
/// description that is not empty or whitespace-only (such a description counts as
/// none). The server's text is carried unchanged.
pub fn describe(server: &str, tool: &str, server_description: Option<&str>) -> String {
    let mut text = format!("MCP tool \"{tool}\" on server \"{server}\"");
    if let Some(extra) = server_description.filter(|d| !d.trim().is_empty()) {
        text.push_str(". Server-supplied description: ");
        text.push_str(extra);
    }
    text
}

fn declare(server: &str, prefix: &str, tool: &Tool) -> FlowDeclaration {
    FlowDeclaration::new(
        format!("{prefix}/{}", tool.name()),
        describe(server, tool.name(), tool.description()),
        server,
        tool.name(),
        tool.input_schema().clone(),
    )
}

fn project_inner(
    server: &str,
    catalog: &Catalog,
    options: &ProjectionOptions,
    checked: bool,
) -> Result<Vec<FlowDeclaration>, ProjectionError> {
    let in_server = |mut err: ProjectionError| {
        err.server = Some(server.to_owned());
        err
    };
    if checked {
        options.validate().map_err(in_server)?;
        if let Some(unknown) = options.include.iter().find(|n| catalog.get(n).is_none()) {
            let mut err = ProjectionError::new(ProjectionErrorKind::UnknownInclude);
            err.name = Some(unknown.clone());
            return Err(in_server(err));
        }
    }
    let include: HashSet<&str> = options.include.iter().map(String::as_str).collect();
    let exclude: HashSet<&str> = options.exclude.iter().map(String::as_str).collect();
    let prefix = options.prefix_for(server);
    Ok(catalog
        .iter()
        .filter(|t| include.is_empty() || include.contains(t.name()))
        .filter(|t| !exclude.contains(t.name()))
        .map(|t| declare(server, &prefix, t))
        .collect())
}

/// Projects `catalog` (of the server named `server`) into flow declarations, in
/// catalog order: `include` (empty = every tool), then `exclude`, then naming.
///
/// Fails when `namePrefix` is empty or an `include` name is not in the catalog.
pub fn project(
    server: &str,
    catalog: &Catalog,
    options: &ProjectionOptions,
) -> Result<Vec<FlowDeclaration>, ProjectionError> {
    project_inner(server, catalog, options, true)
}

/// Like [`project`], without the checks: unknown `include` names are ignored and the
/// prefix is used as given, even when empty. Never fails and never panics.
pub fn project_unchecked(
    server: &str,
    catalog: &Catalog,
    options: &ProjectionOptions,
) -> Vec<FlowDeclaration> {
    project_inner(server, catalog, options, false).unwrap_or_default()
}
