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
//! becomes an [`Error`] of kind [`ErrorKind::FlowFailed`], carrying the session
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
//!             Ok(ToolResult {
//!                 content: vec![json!({ "type": "text", "text": Value::Object(args).to_string() })],
//!                 is_error: false,
//!                 structured_content: None,
//!             })
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

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::catalog::{Catalog, Tool};
use crate::error::{Error, ErrorKind};
use crate::session::{Client, ToolResult};

/// A boxed, `Send` future, as [`FlowInvoker::invoke`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

// ---------------------------------------------------------------------------------
// Actions and capabilities
// ---------------------------------------------------------------------------------

/// The host actions a flow may need authority for.
///
/// This is the host's action vocabulary (the `Capability.Action.literals` of the
/// reference system), kept deliberately small. A capability string is
/// `namespace:operation:resource`; the actions are:
///
/// | action | string | what it covers |
/// | --- | --- | --- |
/// | [`FsRead`](Action::FsRead) | `fs:read` | reading files and directories |
/// | [`FsWrite`](Action::FsWrite) | `fs:write` | creating or modifying files |
/// | [`FsDelete`](Action::FsDelete) | `fs:delete` | removing files |
/// | [`NetGet`](Action::NetGet), [`NetPost`](Action::NetPost), [`NetDelete`](Action::NetDelete) | `net:get`, `net:post`, `net:delete` | one HTTP method each, the resource an origin: the methods and the `net:<method>:<origin>` form of the egress grants ([`EgressGrants`](crate::layer::EgressGrants)), which are the methods Streamable HTTP uses |
/// | [`ProcessSpawn`](Action::ProcessSpawn) | `process:spawn` | starting a child process |
/// | [`EnvRead`](Action::EnvRead) | `env:read` | reading environment variables |
/// | [`ClockRead`](Action::ClockRead) | `clock:read` | reading the wall clock |
///
/// [`capabilities()`] derives the capability list every MCP flow declares from
/// [`Action::ALL`], so adding an action here cannot be silently left out of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Action {
    /// `fs:read`
    FsRead,
    /// `fs:write`
    FsWrite,
    /// `fs:delete`
    FsDelete,
    /// `net:get`
    NetGet,
    /// `net:post`
    NetPost,
    /// `net:delete`
    NetDelete,
    /// `process:spawn`
    ProcessSpawn,
    /// `env:read`
    EnvRead,
    /// `clock:read`
    ClockRead,
}

impl Action {
    /// Every action, in a fixed order.
    pub const ALL: &'static [Action] = &[
        Action::FsRead,
        Action::FsWrite,
        Action::FsDelete,
        Action::NetGet,
        Action::NetPost,
        Action::NetDelete,
        Action::ProcessSpawn,
        Action::EnvRead,
        Action::ClockRead,
    ];

    /// The capability namespace (`fs`, `net`, `process`, `env`, `clock`).
    pub const fn namespace(self) -> &'static str {
        match self {
            Action::FsRead | Action::FsWrite | Action::FsDelete => "fs",
            Action::NetGet | Action::NetPost | Action::NetDelete => "net",
            Action::ProcessSpawn => "process",
            Action::EnvRead => "env",
            Action::ClockRead => "clock",
        }
    }

    /// The operation within the namespace (`read`, `post`, `spawn`, ...).
    pub const fn operation(self) -> &'static str {
        match self {
            Action::FsRead | Action::EnvRead | Action::ClockRead => "read",
            Action::FsWrite => "write",
            Action::FsDelete | Action::NetDelete => "delete",
            Action::NetGet => "get",
            Action::NetPost => "post",
            Action::ProcessSpawn => "spawn",
        }
    }

    /// The capability for this action on `resource`.
    ///
    /// Fails when `resource` is empty.
    pub fn capability(self, resource: &str) -> Result<Capability, CapabilityParseError> {
        if resource.is_empty() {
            return Err(CapabilityParseError("the resource is empty"));
        }
        Ok(Capability {
            namespace: self.namespace().to_owned(),
            operation: self.operation().to_owned(),
            resource: resource.to_owned(),
        })
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.namespace(), self.operation())
    }
}

/// The capabilities every projected MCP flow declares: `"<namespace>:<operation>:**"`
/// for each of [`Action::ALL`], in that order. Never a wildcard such as `"*"`,
/// which [`Capability::parse`] refuses and a host would therefore treat as
/// unauthorized.
pub fn capabilities() -> Vec<String> {
    Action::ALL
        .iter()
        .map(|a| format!("{}:{}:**", a.namespace(), a.operation()))
        .collect()
}

/// A parsed `namespace:operation:resource` capability.
///
/// The string is split at its **first two** colons: the namespace and the operation
/// cannot contain a colon, and the resource is everything after the second colon,
/// so a resource may itself contain colons (`net:post:https://api.example:8443`).
/// All three parts must be non-empty, and the namespace and operation may not
/// contain whitespace or control characters. So `"*"`, `"a:b"`, `"a::c"` and
/// `"a:b:"` do not parse.
///
/// ```
/// use smthrs_mcp::flows::Capability;
/// let cap = Capability::parse("net:post:https://api.example:8443").unwrap();
/// assert_eq!(cap.namespace(), "net");
/// assert_eq!(cap.operation(), "post");
/// assert_eq!(cap.resource(), "https://api.example:8443");
/// assert_eq!(cap.to_string(), "net:post:https://api.example:8443");
/// assert!(Capability::parse("*").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Capability {
    namespace: String,
    operation: String,
    resource: String,
}

impl Capability {
    /// Parses `namespace:operation:resource` (see the type docs for the rules).
    pub fn parse(s: &str) -> Result<Capability, CapabilityParseError> {
        let (namespace, rest) = s
            .split_once(':')
            .ok_or(CapabilityParseError("it has fewer than three components"))?;
        let (operation, resource) = rest
            .split_once(':')
            .ok_or(CapabilityParseError("it has fewer than three components"))?;
        if namespace.is_empty() {
            return Err(CapabilityParseError("the namespace is empty"));
        }
        if operation.is_empty() {
            return Err(CapabilityParseError("the operation is empty"));
        }
        if resource.is_empty() {
            return Err(CapabilityParseError("the resource is empty"));
        }
        let bad = |c: char| c.is_whitespace() || c.is_control();
        if namespace.contains(bad) || operation.contains(bad) {
            return Err(CapabilityParseError(
                "the namespace or operation contains whitespace or a control character",
            ));
        }
        Ok(Capability {
            namespace: namespace.to_owned(),
            operation: operation.to_owned(),
            resource: resource.to_owned(),
        })
    }

    /// The namespace (`fs`, `net`, ...).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The operation (`read`, `post`, ...).
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// The resource (a path pattern, an origin, `**`, ...).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The [`Action`] this capability names, if it is one of [`Action::ALL`].
    pub fn action(&self) -> Option<Action> {
        Action::ALL
            .iter()
            .copied()
            .find(|a| a.namespace() == self.namespace && a.operation() == self.operation)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.namespace, self.operation, self.resource)
    }
}

impl std::str::FromStr for Capability {
    type Err = CapabilityParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Capability::parse(s)
    }
}

/// Why a string is not a `namespace:operation:resource` capability.
///
/// The message does not repeat the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapabilityParseError(&'static str);

impl fmt::Display for CapabilityParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not a namespace:operation:resource capability: {}",
            self.0
        )
    }
}

impl std::error::Error for CapabilityParseError {}

// ---------------------------------------------------------------------------------
// Effects and the output shape
// ---------------------------------------------------------------------------------

/// The effects envelope a flow declares. Serializes with camelCase keys
/// (`onConflict`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Effects {
    /// Path patterns the flow may read.
    pub reads: Vec<String>,
    /// Path patterns the flow may write.
    pub writes: Vec<String>,
    /// Whether the effects are `expected` (declared up front).
    pub mode: &'static str,
    /// What the host does when two flows' effects overlap (`serialize`).
    pub on_conflict: &'static str,
    /// How undoable the effects are (`irreversible`).
    pub tier: &'static str,
}

/// The conservative envelope every MCP tool declares: `reads: ["**"]`,
/// `writes: ["**"]`, `mode: "expected"`, `onConflict: "serialize"`,
/// `tier: "irreversible"`. The irreversible tier is why a timed-out call is
/// cancelled: an abandoned in-flight mutation is a durability problem.
pub fn effects() -> Effects {
    Effects {
        reads: vec!["**".to_owned()],
        writes: vec!["**".to_owned()],
        mode: "expected",
        on_conflict: "serialize",
        tier: "irreversible",
    }
}

/// The result shape a flow returns, as a JSON Schema document: an object with
/// `content` (an array of content blocks), `isError` (a boolean) and optional
/// `structuredContent` (an object), i.e. a serialized [`ToolResult`].
///
/// Serializes as the bare document. Every projected MCP flow has the same shape; a
/// tool's own `outputSchema` is not merged in.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct OutputShape(Map<String, Value>);

impl OutputShape {
    /// The `{content, isError, structuredContent?}` shape of a tool result.
    pub fn tool_result() -> OutputShape {
        let value = serde_json::json!({
            "type": "object",
            "properties": {
                "content": { "type": "array", "items": { "type": "object" } },
                "isError": { "type": "boolean" },
                "structuredContent": { "type": "object" }
            },
            "required": ["content", "isError"]
        });
        match value {
            Value::Object(map) => OutputShape(map),
            _ => OutputShape(Map::new()),
        }
    }

    /// The JSON Schema document.
    pub fn document(&self) -> &Map<String, Value> {
        &self.0
    }
}

impl Default for OutputShape {
    fn default() -> Self {
        OutputShape::tool_result()
    }
}

// ---------------------------------------------------------------------------------
// Declarations and digests
// ---------------------------------------------------------------------------------

/// One flow's declaration: what a caller reading the flow catalog (or a model) sees.
///
/// Serializes with camelCase keys: `name`, `description`, `server`, `tool`,
/// `inputDocument`, `output`, `capabilities`, `effects`, `digest`.
///
/// The fields are public so a host can narrow a declaration (for example its
/// capabilities); call [`FlowDeclaration::refresh_digest`] afterwards so `digest`
/// describes what is declared.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FlowDeclaration {
    /// The flow name, `<prefix>/<tool>` for MCP tools.
    pub name: String,
    /// The description shown to a model.
    pub description: String,
    /// The server that runs the flow (for MCP, the server file's `server`).
    pub server: String,
    /// The tool's own name on that server.
    pub tool: String,
    /// The parameter document, the tool's `inputSchema` carried by value.
    pub input_document: Map<String, Value>,
    /// The result shape.
    pub output: OutputShape,
    /// The declared capabilities (`namespace:operation:resource` strings).
    pub capabilities: Vec<String>,
    /// The declared effects.
    pub effects: Effects,
    /// Lowercase hex SHA-256 of the canonical declaration; see
    /// [`FlowDeclaration::compute_digest`].
    pub digest: String,
}

impl FlowDeclaration {
    /// A declaration with the MCP adapter's output shape, [`capabilities()`] and
    /// [`effects()`], and its digest computed. `description` is used as given.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        server: impl Into<String>,
        tool: impl Into<String>,
        input_document: Map<String, Value>,
    ) -> FlowDeclaration {
        let mut declaration = FlowDeclaration {
            name: name.into(),
            description: description.into(),
            server: server.into(),
            tool: tool.into(),
            input_document,
            output: OutputShape::tool_result(),
            capabilities: capabilities(),
            effects: effects(),
            digest: String::new(),
        };
        declaration.refresh_digest();
        declaration
    }

    /// Computes the digest of this declaration's current fields.
    ///
    /// The digest is the lowercase hex SHA-256 of the canonical JSON encoding of the
    /// object `{capabilities, description, effects, inputDocument, name, output,
    /// server, tool}` (every field except `digest`). Canonical means: object keys
    /// sorted by their UTF-8 bytes at every level, no whitespace, strings and numbers
    /// written as `serde_json` writes them. It does not depend on map insertion
    /// order, the process, or the run, and changes when any of those fields does.
    pub fn compute_digest(&self) -> String {
        let capabilities: Vec<Value> = self
            .capabilities
            .iter()
            .map(|c| Value::String(c.clone()))
            .collect();
        let capabilities = Value::Array(capabilities);
        let description = Value::String(self.description.clone());
        let effects = serde_json::to_value(&self.effects).unwrap_or(Value::Null);
        let name = Value::String(self.name.clone());
        let server = Value::String(self.server.clone());
        let tool = Value::String(self.tool.clone());
        // Keys listed already sorted; the writer sorts nested objects itself.
        let fields: [(&str, Node<'_>); 8] = [
            ("capabilities", Node::Value(&capabilities)),
            ("description", Node::Value(&description)),
            ("effects", Node::Value(&effects)),
            ("inputDocument", Node::Object(&self.input_document)),
            ("name", Node::Value(&name)),
            ("output", Node::Object(self.output.document())),
            ("server", Node::Value(&server)),
            ("tool", Node::Value(&tool)),
        ];
        let mut out = Vec::with_capacity(1024);
        out.push(b'{');
        for (i, (key, node)) in fields.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json_string(&mut out, key);
            out.push(b':');
            write_canonical(&mut out, node);
        }
        out.push(b'}');
        hex(&Sha256::digest(&out))
    }

    /// Recomputes [`FlowDeclaration::digest`] after the fields were changed.
    pub fn refresh_digest(&mut self) {
        self.digest = self.compute_digest();
    }
}

/// A value to write canonically.
#[derive(Clone, Copy)]
enum Node<'a> {
    Value(&'a Value),
    Object(&'a Map<String, Value>),
}

/// One step of the iterative canonical writer.
enum Step<'a> {
    Node(Node<'a>),
    Key(&'a str),
    Byte(u8),
}

/// Writes `root` as canonical JSON (sorted keys, compact). Iterative, so arbitrarily
/// deep input cannot overflow the stack.
fn write_canonical(out: &mut Vec<u8>, root: Node<'_>) {
    let mut stack = vec![Step::Node(root)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Byte(b) => out.push(b),
            Step::Key(key) => {
                write_json_string(out, key);
                out.push(b':');
            }
            Step::Node(Node::Object(map)) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                out.push(b'{');
                stack.push(Step::Byte(b'}'));
                for (i, (key, value)) in entries.into_iter().enumerate().rev() {
                    stack.push(Step::Node(Node::Value(value)));
                    stack.push(Step::Key(key));
                    if i > 0 {
                        stack.push(Step::Byte(b','));
                    }
                }
            }
            Step::Node(Node::Value(value)) => match value {
                Value::Object(map) => stack.push(Step::Node(Node::Object(map))),
                Value::Array(items) => {
                    out.push(b'[');
                    stack.push(Step::Byte(b']'));
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push(Step::Node(Node::Value(item)));
                        if i > 0 {
                            stack.push(Step::Byte(b','));
                        }
                    }
                }
                // Scalars: serde_json's own compact encoding (never fails for these).
                scalar => {
                    let _ = serde_json::to_writer(&mut *out, scalar);
                }
            },
        }
    }
}

fn write_json_string(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    s
}

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
/// [`InvalidConfig`](ErrorKind::InvalidConfig).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectionError {
    kind: ProjectionErrorKind,
    server: Option<String>,
    name: Option<String>,
}

impl ProjectionError {
    fn new(kind: ProjectionErrorKind) -> Self {
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
fn flow_failed(err: Error) -> Error {
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
            None => {
                let err = Error::new(
                    ErrorKind::ToolNotFound,
                    format!("no flow named {:?}", truncate(name, 128)),
                );
                Box::pin(std::future::ready(Err(err)))
            }
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

pub(crate) fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn schema(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("object expected"),
        }
    }

    /// A real, validated catalog of these (name, description) tools.
    fn tools(specs: &[(&str, Option<&str>)]) -> Catalog {
        let entries: Vec<Value> = specs
            .iter()
            .map(|(name, description)| {
                let mut tool = json!({
                    "name": name,
                    "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}
                });
                if let Some(d) = description {
                    tool["description"] = json!(d);
                }
                tool
            })
            .collect();
        let mut builder = crate::catalog::CatalogBuilder::new(&crate::Limits::default());
        builder.add_page(&json!({ "tools": entries })).unwrap();
        builder.finish()
    }

    fn names(decls: &[FlowDeclaration]) -> Vec<&str> {
        decls.iter().map(|d| d.name.as_str()).collect()
    }

    fn ok_result() -> ToolResult {
        ToolResult {
            content: vec![],
            is_error: false,
            structured_content: None,
        }
    }

    fn source(decls: Vec<FlowDeclaration>) -> FlowSource {
        decls
            .into_iter()
            .map(|d| Flow::new(d, invoker_fn(|_| async { Ok(ok_result()) })))
            .collect()
    }

    #[test]
    fn description_with_and_without_server_text() {
        let t = tools(&[
            ("a", Some("Finds things.")),
            ("b", None),
            ("c", Some("")),
            ("d", Some("  \n")),
        ]);
        let d = project("srv", &t, &ProjectionOptions::default()).unwrap();
        assert_eq!(
            d[0].description,
            "MCP tool \"a\" on server \"srv\". Server-supplied description: Finds things."
        );
        assert_eq!(d[1].description, "MCP tool \"b\" on server \"srv\"");
        assert_eq!(d[2].description, d[2].description.replace(". Server", ""));
        assert_eq!(d[3].description, "MCP tool \"d\" on server \"srv\"");
    }

    #[test]
    fn names_with_default_and_custom_prefix() {
        let t = tools(&[("create_issue", None), ("list", None)]);
        let d = project("github", &t, &ProjectionOptions::default()).unwrap();
        assert_eq!(names(&d), ["mcp/github/create_issue", "mcp/github/list"]);
        assert_eq!(d[0].server, "github");
        assert_eq!(d[0].tool, "create_issue");
        let custom = ProjectionOptions::checked(vec![], vec![], Some("gh".into())).unwrap();
        let d = project("github", &t, &custom).unwrap();
        assert_eq!(names(&d), ["gh/create_issue", "gh/list"]);
        assert_eq!(d[0].tool, "create_issue");
    }

    #[test]
    fn declaration_carries_input_document_and_shared_envelope() {
        let t = tools(&[("a", None)]);
        let d = &project("s", &t, &ProjectionOptions::default()).unwrap()[0];
        assert_eq!(&d.input_document, t.tools()[0].input_schema());
        assert_eq!(d.capabilities, capabilities());
        assert_eq!(d.effects, effects());
        let v = serde_json::to_value(d).unwrap();
        for key in [
            "name",
            "description",
            "inputDocument",
            "server",
            "tool",
            "capabilities",
            "effects",
            "digest",
            "output",
        ] {
            assert!(v.get(key).is_some(), "{key} missing from {v}");
        }
        assert_eq!(
            v["effects"],
            json!({"reads": ["**"], "writes": ["**"], "mode": "expected",
                   "onConflict": "serialize", "tier": "irreversible"})
        );
        assert_eq!(v["output"]["required"], json!(["content", "isError"]));
        assert_eq!(d.digest.len(), 64);
        assert!(
            d.digest
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }

    #[test]
    fn include_then_exclude_in_catalog_order() {
        let t = tools(&[("a", None), ("b", None), ("c", None), ("d", None)]);
        let o = ProjectionOptions {
            include: vec!["d".into(), "b".into(), "c".into()],
            exclude: vec!["c".into(), "zzz".into()],
            name_prefix: None,
        };
        assert_eq!(
            names(&project("s", &t, &o).unwrap()),
            ["mcp/s/b", "mcp/s/d"]
        );
        let o = ProjectionOptions {
            exclude: vec!["a".into()],
            ..Default::default()
        };
        assert_eq!(
            names(&project("s", &t, &o).unwrap()),
            ["mcp/s/b", "mcp/s/c", "mcp/s/d"]
        );
    }

    #[test]
    fn include_unknown_is_an_error_only_when_checked() {
        let t = tools(&[("a", None)]);
        let o = ProjectionOptions {
            include: vec!["a".into(), "nope".into()],
            ..Default::default()
        };
        let err = project("srv", &t, &o).unwrap_err();
        assert_eq!(err.kind(), ProjectionErrorKind::UnknownInclude);
        assert_eq!(err.name(), Some("nope"));
        assert_eq!(err.server(), Some("srv"));
        assert!(err.to_string().contains("\"nope\""), "{err}");
        let unchecked = project_unchecked("srv", &t, &o);
        assert_eq!(names(&unchecked), ["mcp/srv/a"]);
        let e: Error = err.into();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig);
    }

    #[test]
    fn empty_prefix_is_refused_by_checked_paths() {
        let err = ProjectionOptions::checked(vec![], vec![], Some(String::new())).unwrap_err();
        assert_eq!(err.kind(), ProjectionErrorKind::EmptyNamePrefix);
        assert_eq!(err.to_string(), "namePrefix must be a non-empty string");
        let o = ProjectionOptions {
            name_prefix: Some(String::new()),
            ..Default::default()
        };
        assert!(o.validate().is_err());
        let t = tools(&[("a", None)]);
        let err = project("srv", &t, &o).unwrap_err();
        assert_eq!(
            err.to_string(),
            "server \"srv\": namePrefix must be a non-empty string"
        );
        // The unchecked projection uses the prefix literally.
        let d = project_unchecked("srv", &t, &o);
        assert_eq!(names(&d), ["/a"]);
        assert!(ProjectionOptions::default().validate().is_ok());
    }

    #[test]
    fn project_over_an_empty_catalog() {
        let catalog = Catalog::empty();
        assert!(
            project("s", &catalog, &ProjectionOptions::default())
                .unwrap()
                .is_empty()
        );
        let o = ProjectionOptions {
            include: vec!["x".into()],
            ..Default::default()
        };
        assert!(project("s", &catalog, &o).is_err());
        assert!(project_unchecked("s", &catalog, &o).is_empty());
    }

    #[test]
    fn duplicate_names_fail_composition_but_default_prefixes_do_not_collide() {
        let t = tools(&[("search", None)]);
        let same = ProjectionOptions {
            name_prefix: Some("tools".into()),
            ..Default::default()
        };
        let err = compose([
            source(project("one", &t, &same).unwrap()),
            source(project("two", &t, &same).unwrap()),
        ])
        .unwrap_err();
        assert_eq!(err.kind(), ProjectionErrorKind::DuplicateFlowName);
        assert_eq!(err.name(), Some("tools/search"));
        assert!(err.to_string().contains("\"tools/search\""));

        let def = ProjectionOptions::default();
        let catalog = compose([
            source(project("one", &t, &def).unwrap()),
            source(project("two", &t, &def).unwrap()),
        ])
        .unwrap();
        let listed: Vec<&str> = catalog.declarations().map(|d| d.name.as_str()).collect();
        assert_eq!(listed, ["mcp/one/search", "mcp/two/search"]);
        assert_eq!(catalog.len(), 2);
        assert_eq!(
            catalog.get("mcp/two/search").unwrap().declaration.server,
            "two"
        );
        assert!(catalog.get("mcp/three/search").is_none());
    }

    #[tokio::test]
    async fn invoke_dispatches_by_name_and_unknown_calls_nothing() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&calls);
        let decl = FlowDeclaration::new("x/y", "d", "x", "y", Map::new());
        let flow = Flow::new(
            decl,
            invoker_fn(move |args| {
                let counter = Arc::clone(&counter);
                async move {
                    counter.fetch_add(1, Ordering::SeqCst);
                    // A tool-level failure is data.
                    Ok(ToolResult {
                        content: vec![json!({"type": "text", "text": args.len().to_string()})],
                        is_error: true,
                        structured_content: None,
                    })
                }
            }),
        );
        let catalog = compose([FlowSource::new(vec![flow])]).unwrap();
        let err = catalog.invoke("x/z", Map::new()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ToolNotFound);
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        let result = catalog.invoke("x/y", Map::new()).await.unwrap();
        assert!(result.is_error);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn session_errors_become_flow_failed_with_the_same_message() {
        let e = flow_failed(Error::timeout("tools/call timed out after 5 ms"));
        assert_eq!(e.kind(), ErrorKind::FlowFailed);
        assert_eq!(e.message(), "tools/call timed out after 5 ms");
    }

    fn base() -> FlowDeclaration {
        FlowDeclaration::new(
            "mcp/s/t",
            describe("s", "t", Some("Does t.")),
            "s",
            "t",
            schema(json!({"type": "object", "properties": {"a": {"type": "integer"}}})),
        )
    }

    #[test]
    fn digest_is_stable_and_changes_with_every_field() {
        let d = base();
        assert_eq!(d.digest, base().digest);
        assert_eq!(d.digest, d.compute_digest());
        type Mutation = Box<dyn Fn(&mut FlowDeclaration)>;
        let mutations: Vec<Mutation> = vec![
            Box::new(|d| d.name.push('x')),
            Box::new(|d| d.description.push('x')),
            Box::new(|d| d.server.push('x')),
            Box::new(|d| d.tool.push('x')),
            Box::new(|d| {
                d.input_document.insert("required".into(), json!(["a"]));
            }),
            Box::new(|d| {
                d.input_document["properties"]["a"]["type"] = json!("string");
            }),
            Box::new(|d| {
                d.capabilities.pop();
            }),
            Box::new(|d| d.effects.tier = "reversible"),
            Box::new(|d| d.effects.reads = vec!["/tmp/**".into()]),
            Box::new(|d| {
                d.output.0.insert("title".into(), json!("x"));
            }),
        ];
        let mut seen = HashSet::new();
        seen.insert(d.digest.clone());
        for (i, mutate) in mutations.iter().enumerate() {
            let mut changed = base();
            mutate(&mut changed);
            changed.refresh_digest();
            assert!(
                seen.insert(changed.digest.clone()),
                "mutation {i} kept the digest"
            );
        }
    }

    #[test]
    fn digest_ignores_key_insertion_order() {
        let mut a = Map::new();
        a.insert("type".into(), json!("object"));
        a.insert(
            "b".into(),
            json!({"y": 1, "x": [2, {"q": null, "p": true}]}),
        );
        let mut b = Map::new();
        b.insert(
            "b".into(),
            json!({"x": [2, {"p": true, "q": null}], "y": 1}),
        );
        b.insert("type".into(), json!("object"));
        let da = FlowDeclaration::new("n", "d", "s", "t", a);
        let db = FlowDeclaration::new("n", "d", "s", "t", b);
        assert_eq!(da.digest, db.digest);
    }

    #[test]
    fn canonical_json_is_sorted_and_compact() {
        let v = json!({"b": [1, 2.5, "x\"y", null, {"z": false, "a": {}}], "a": [], "é": -3});
        let mut out = Vec::new();
        write_canonical(&mut out, Node::Value(&v));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a":[],"b":[1,2.5,"x\"y",null,{"a":{},"z":false}],"é":-3}"#
        );
    }

    #[test]
    fn canonical_writer_survives_deep_input() {
        let mut v = json!(1);
        for _ in 0..20_000 {
            v = Value::Array(vec![v]);
        }
        let mut out = Vec::new();
        write_canonical(&mut out, Node::Value(&v));
        assert_eq!(out.len(), 40_001);
        // Drop iteratively as well: serde_json's Drop for deep values recurses.
        let mut cur = v;
        while let Value::Array(mut items) = cur {
            cur = items.pop().unwrap_or(Value::Null);
        }
    }

    /// Pins the digest of a fixed declaration: proves it is the same in every
    /// process and run (and catches accidental changes to the encoding).
    #[test]
    fn digest_is_pinned() {
        assert_eq!(base().digest, PINNED_DIGEST);
    }

    const PINNED_DIGEST: &str = "ed61fb39c9dfe99a2938112a9ecafe0cb24376d1d8836dcaaebe0c453a4b898d";

    #[test]
    fn capability_parse_cases() {
        for bad in [
            "", "*", "a", "a:b", "a::c", ":b:c", "a:b:", "::", "a :b:c", "a:b\n:c",
        ] {
            assert!(Capability::parse(bad).is_err(), "{bad:?} parsed");
        }
        let c = Capability::parse("fs:read:/home/me/My Files/**").unwrap();
        assert_eq!(c.resource(), "/home/me/My Files/**");
        assert_eq!(c.action(), Some(Action::FsRead));
        let c: Capability = "net:post:https://a.example:8443".parse().unwrap();
        assert_eq!(
            (c.namespace(), c.operation(), c.resource()),
            ("net", "post", "https://a.example:8443")
        );
        let c = Capability::parse("x:y:z:w").unwrap();
        assert_eq!(c.resource(), "z:w");
        assert_eq!(c.action(), None);
        assert!(
            Capability::parse("*")
                .unwrap_err()
                .to_string()
                .contains("fewer than three")
        );
        assert_eq!(
            Action::NetPost
                .capability("https://a.example")
                .unwrap()
                .to_string(),
            "net:post:https://a.example"
        );
        assert!(Action::NetPost.capability("").is_err());
    }

    #[test]
    fn every_capability_string_parses_and_covers_every_action() {
        let caps = capabilities();
        assert_eq!(caps.len(), Action::ALL.len());
        let mut actions = HashSet::new();
        for s in &caps {
            assert!(!s.contains('*') || s.ends_with(":**"), "{s}");
            let c = Capability::parse(s).unwrap();
            assert_eq!(c.resource(), "**");
            assert_eq!(c.to_string(), *s);
            assert!(actions.insert(c.action().unwrap()));
        }
        assert!(caps.contains(&"net:post:**".to_owned()));
        assert!(caps.contains(&"fs:read:**".to_owned()));
        assert!(!caps.contains(&"*".to_owned()));
    }
}
