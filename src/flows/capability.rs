//! What a flow may do and what it returns: the actions and capabilities it
//! declares, its effects, and the shape of its output. Plain data with its parsing
//! and display; no catalog or session in sight.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

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
/// `structuredContent` (an object), i.e. a serialized [`ToolResult`](crate::ToolResult).
///
/// Serializes as the bare document. Every projected MCP flow has the same shape; a
/// tool's own `outputSchema` is not merged in.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct OutputShape(pub(super) Map<String, Value>);

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
