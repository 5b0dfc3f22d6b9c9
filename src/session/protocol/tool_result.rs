//! The tool result: what a `tools/call` returns, and how the protocol layer
//! reads one from the result members the core built (per era: a legacy
//! `structuredContent` must be an object, a 2026-07-28 one may be any value).

use serde::Serialize;
use serde_json::Value;

use super::era::Era;
use crate::error::{Error, Result};
use crate::json_bounds::ToolCallMembers;

/// The result of a `tools/call`: success even when `is_error` is true (the tool ran
/// and reported a problem: that is data, not a session failure).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResult {
    /// The content items, carried unchanged.
    pub content: Vec<Value>,
    /// The tool's own failure flag.
    pub is_error: bool,
    /// Optional structured result: an object in the legacy era, any JSON value in
    /// 2026-07-28 (`null` reads as absent in both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
}

impl ToolResult {
    /// A result carrying `content` (`isError: false`, no `structuredContent`),
    /// for hosts that answer a flow themselves.
    pub fn new(content: Vec<Value>) -> ToolResult {
        ToolResult {
            content,
            is_error: false,
            structured_content: None,
        }
    }

    /// A result the tool reports as failed (`isError: true`) with `content`.
    pub fn error(content: Vec<Value>) -> ToolResult {
        ToolResult {
            is_error: true,
            ..ToolResult::new(content)
        }
    }

    /// The same result with `structuredContent`.
    #[must_use]
    pub fn with_structured_content(mut self, value: Value) -> ToolResult {
        self.structured_content = Some(value);
        self
    }

    pub(crate) fn from_value(value: Value, era: Era) -> Result<ToolResult> {
        let Value::Object(object) = value else {
            return Err(Error::invalid_response(
                "tools/call result is not an object",
            ));
        };
        ToolResult::from_members(ToolCallMembers::from_object(object), era)
    }

    /// From the members of a result object (the reader may have built just these).
    pub(crate) fn from_members(members: ToolCallMembers, era: Era) -> Result<ToolResult> {
        let bad = |what: &str| Error::invalid_response(format!("tools/call result {what}"));
        let ToolCallMembers {
            content,
            is_error,
            structured_content,
            ..
        } = members;
        let content = match content {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(bad("content is not an array")),
        };
        let is_error = match is_error {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => b,
            Some(_) => return Err(bad("isError is not a boolean")),
        };
        let structured_content = match (structured_content, era) {
            (None | Some(Value::Null), _) => None,
            (Some(Value::Object(map)), _) => Some(Value::Object(map)),
            (Some(value), Era::Modern) => Some(value),
            (Some(_), Era::Legacy) => return Err(bad("structuredContent is not an object")),
        };
        Ok(ToolResult {
            content,
            is_error,
            structured_content,
        })
    }
}
