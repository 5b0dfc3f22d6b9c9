//! The tool result: what a `tools/call` returns, and how the protocol layer
//! reads one (per era: a legacy `structuredContent` must be an object, a
//! 2026-07-28 one may be any value). The members a tool result reads are given
//! to the reader as a [`MemberSelection`] ([`TOOL_CALL_MEMBERS`]), so it builds
//! only these, and taken by name ([`ToolCallMembers`]), whichever way the
//! result was read.

use serde::Serialize;
use serde_json::{Map, Value};

use super::era::Era;
use crate::error::{Error, Result};
use crate::json_bounds::{MemberSelection, SelectedMembers};

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

/// The members of a `tools/call` result object a tool result reads, in the order
/// [`ToolCallMembers::from_selected`] takes them.
pub(crate) static TOOL_CALL_MEMBERS: MemberSelection = MemberSelection::new(&[
    "content",
    "isError",
    "structuredContent",
    "resultType",
    "inputRequests",
    "requestState",
]);

/// The members of a `tools/call` result object that a tool result reads, each
/// built exactly as the whole result would have built it (a member given twice:
/// the last wins, as in a map).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ToolCallMembers {
    /// `content`.
    pub(crate) content: Option<Value>,
    /// `isError`.
    pub(crate) is_error: Option<Value>,
    /// `structuredContent`.
    pub(crate) structured_content: Option<Value>,
    /// `resultType` (2026-07-28).
    pub(crate) result_type: Option<Value>,
    /// `inputRequests` (2026-07-28, with `resultType: "input_required"`).
    pub(crate) input_requests: Option<Value>,
    /// `requestState` (2026-07-28, with `resultType: "input_required"`).
    pub(crate) request_state: Option<Value>,
}

impl ToolCallMembers {
    /// The members the reader selected with [`TOOL_CALL_MEMBERS`] (read with
    /// another selection: those of the object they make).
    pub(crate) fn from_selected(mut selected: SelectedMembers) -> ToolCallMembers {
        if !selected.is(&TOOL_CALL_MEMBERS) {
            return ToolCallMembers::from_object(selected.into_object());
        }
        ToolCallMembers {
            content: selected.take(0),
            is_error: selected.take(1),
            structured_content: selected.take(2),
            result_type: selected.take(3),
            input_requests: selected.take(4),
            request_state: selected.take(5),
        }
    }

    /// The members of a result object (the others are dropped).
    pub(crate) fn from_object(object: Map<String, Value>) -> ToolCallMembers {
        ToolCallMembers::from_selected(TOOL_CALL_MEMBERS.select(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_positions_follow_the_names() {
        let object = serde_json::json!({
            "content": [1],
            "isError": true,
            "structuredContent": {"a": 1},
            "resultType": "complete",
            "inputRequests": {"r": {}},
            "requestState": "s",
            "_meta": {"x": 1},
        });
        let Value::Object(object) = object else {
            unreachable!()
        };
        assert_eq!(
            ToolCallMembers::from_object(object),
            ToolCallMembers {
                content: Some(serde_json::json!([1])),
                is_error: Some(Value::Bool(true)),
                structured_content: Some(serde_json::json!({"a": 1})),
                result_type: Some(Value::from("complete")),
                input_requests: Some(serde_json::json!({"r": {}})),
                request_state: Some(Value::from("s")),
            }
        );
    }

    #[test]
    fn members_read_with_another_selection_are_found_by_name() {
        static OTHER: MemberSelection = MemberSelection::new(&["isError", "x", "content"]);
        let Value::Object(object) = serde_json::json!({"content": [], "isError": false, "x": 1})
        else {
            unreachable!()
        };
        assert_eq!(
            ToolCallMembers::from_selected(OTHER.select(object)),
            ToolCallMembers {
                content: Some(serde_json::json!([])),
                is_error: Some(Value::Bool(false)),
                ..ToolCallMembers::default()
            }
        );
    }
}
