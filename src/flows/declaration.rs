//! [`FlowDeclaration`]: what a caller (or a model) reads about one flow, and its
//! digest over a canonical encoding written here, so an approval names exactly
//! what was declared.

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::capability::{Effects, OutputShape, capabilities, effects};

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
pub(super) enum Node<'a> {
    Value(&'a Value),
    Object(&'a Map<String, Value>),
}

/// One step of the iterative canonical writer.
pub(super) enum Step<'a> {
    Node(Node<'a>),
    Key(&'a str),
    Byte(u8),
}

/// Writes `root` as canonical JSON (sorted keys, compact). Iterative, so arbitrarily
/// deep input cannot overflow the stack.
pub(super) fn write_canonical(out: &mut Vec<u8>, root: Node<'_>) {
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
