//! The tool result: what a `tools/call` returns, and how the protocol layer
//! reads one (per era: a legacy `structuredContent` must be an object, a
//! 2026-07-28 one may be any value). The members a tool result reads are given
//! to the reader as a [`MemberSelection`] ([`TOOL_CALL_MEMBERS`]), so it builds
//! only these, and taken by name ([`ToolCallMembers`]), whichever way the
//! result was read.
//!
//! Every content block is checked by the rules of prompt messages
//! (beyond-tools.md §1.5, the [`content`](crate::content) module): a
//! `resource_link` as a resource entry, an embedded resource as a read's
//! contents, `image` and `audio` with `mimeType` and strict base64, the decoded
//! bytes of the whole array within `maxResourceBytes`; a block of an unknown
//! `type` passes as it does in a prompt. The blocks are checked in place and
//! returned as sent. A block that breaks a rule fails the call with
//! `invalid_response` naming its position and the rule; the session goes on.

use serde::Serialize;
use serde_json::{Map, Value};

use super::era::Era;
use crate::content::{ContentBounds, check_tool_content};
use crate::error::{Error, Result};
use crate::json_bounds::{MemberSelection, SelectedMembers};

/// The result of a `tools/call`: success even when `is_error` is true (the tool ran
/// and reported a problem: that is data, not a session failure).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolResult {
    /// The content blocks. From [`Client::call_tool`]: as the server sent
    /// them, each having passed the checks of beyond-tools.md §1.5 (see
    /// [`content::tool_content`] for them typed, binary data decoded); a
    /// result a host builds ([`ToolResult::new`]) is not checked.
    ///
    /// [`Client::call_tool`]: crate::Client::call_tool
    /// [`content::tool_content`]: crate::content::tool_content
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

    pub(crate) fn from_value(value: Value, era: Era, bounds: &ContentBounds) -> Result<ToolResult> {
        let Value::Object(object) = value else {
            return Err(Error::invalid_response(
                "tools/call result is not an object",
            ));
        };
        ToolResult::from_members(ToolCallMembers::from_object(object), era, bounds)
    }

    /// From the members of a result object (the reader may have built just
    /// these), the content blocks checked under `bounds`.
    pub(crate) fn from_members(
        members: ToolCallMembers,
        era: Era,
        bounds: &ContentBounds,
    ) -> Result<ToolResult> {
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
        check_tool_content(&content, bounds)?;
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
    use crate::ErrorKind;
    use serde_json::json;

    fn result_of(content: Value, era: Era, bounds: &ContentBounds) -> Result<ToolResult> {
        let members = ToolCallMembers {
            content: Some(content),
            ..ToolCallMembers::default()
        };
        ToolResult::from_members(members, era, bounds)
    }

    /// A mix of every block type the schema names, an unknown one, and
    /// members the schema does not name.
    fn good_mix() -> Value {
        json!([
            { "type": "text", "text": "done", "annotations": { "audience": ["user"], "priority": 0.2 } },
            { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png", "_meta": { "k": 1 } },
            { "type": "audio", "data": "UklGRg", "mimeType": "audio/wav" },
            { "type": "resource_link", "uri": "file:///project/a.rs", "name": "a.rs", "size": 3, "x": 1 },
            { "type": "resource", "resource": { "uri": "resource://r", "blob": "AAEC", "annotations": { "priority": 1 } } },
            { "type": "resource", "resource": { "uri": "resource://t", "mimeType": "text/plain", "text": "t" } },
            { "type": "hologram", "frames": 3 }
        ])
    }

    #[test]
    fn a_good_mix_of_blocks_is_returned_as_sent() {
        for era in [Era::Legacy, Era::Modern] {
            let result = result_of(good_mix(), era, &ContentBounds::default()).unwrap();
            assert_eq!(Value::Array(result.content), good_mix(), "{era:?}");
        }
    }

    #[test]
    fn a_block_breaking_a_rule_fails_the_result_naming_its_position() {
        let text = json!({ "type": "text", "text": "ok" });
        for (block, rule) in [
            (
                json!({ "type": "image", "data": "secret text!", "mimeType": "image/png" }),
                "data is not strict base64: a character outside the standard alphabet (whitespace and the URL-safe '-' and '_' included)",
            ),
            (
                json!({ "type": "resource_link", "uri": "file:///secret\u{1b}[2J", "name": "secret" }),
                "a URI contains a control character (Unicode Cc)",
            ),
            (
                json!({ "type": "resource", "resource": { "uri": "file:///secret", "text": "secret", "blob": "c2VjcmV0" } }),
                "resource: the item holds both text and blob",
            ),
            (json!("secret"), "the block is not an object"),
            (json!({ "text": "secret" }), "type is not a string"),
        ] {
            for era in [Era::Legacy, Era::Modern] {
                let content = json!([text, text, block]);
                let error = result_of(content, era, &ContentBounds::default()).unwrap_err();
                assert_eq!(error.kind(), ErrorKind::InvalidResponse);
                assert_eq!(
                    error.message(),
                    format!("tools/call result: content[2]: {rule}")
                );
                assert!(!error.message().contains("secret"), "{error}");
            }
        }
    }

    #[test]
    fn binary_blocks_count_against_max_resource_bytes() {
        // Text blocks do not count; image, audio and embedded bytes do.
        let content = json!([
            { "type": "text", "text": "a text the frame bound holds" },
            { "type": "image", "data": "AAAA", "mimeType": "image/png" },
            { "type": "audio", "data": "AAA=", "mimeType": "audio/wav" },
            { "type": "resource", "resource": { "uri": "file:///a", "blob": "AA==" } },
            { "type": "resource", "resource": { "uri": "file:///b", "text": "abc" } }
        ]);
        let limits = |max_resource_bytes| crate::Limits {
            max_resource_bytes,
            ..crate::Limits::default()
        };
        let bounds = ContentBounds::from(&limits(9));
        assert!(result_of(content.clone(), Era::Legacy, &bounds).is_ok());
        let bounds = ContentBounds::from(&limits(8));
        let error = result_of(content, Era::Modern, &bounds).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse);
        assert_eq!(
            error.message(),
            "tools/call result: content[4]: resource: the result holds 9 bytes of content by this item; maxResourceBytes is 8"
        );
    }

    #[test]
    fn no_content_is_empty_content() {
        for content in [Value::Null, json!([])] {
            let result = result_of(content, Era::Legacy, &ContentBounds::default()).unwrap();
            assert!(result.content.is_empty());
        }
        let error = result_of(json!({}), Era::Legacy, &ContentBounds::default()).unwrap_err();
        assert_eq!(error.message(), "tools/call result content is not an array");
    }

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
