//! The members of a `tools/call` result that a tool result reads: their names,
//! given to the reader as a [`MemberSelection`] so it builds only these, and
//! their values by name ([`ToolCallMembers`]), whichever way the result was read.

use serde_json::{Map, Value};

use crate::json_bounds::{MemberSelection, SelectedMembers};

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
