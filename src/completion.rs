//! Argument completion (`completion/complete`, beyond-tools.md §3): what a
//! request refers to ([`CompletionRef`]) and the checked result
//! ([`Completion`]).
//!
//! The result's bounds are fixed by the schema, not options: at most
//! [`MAX_COMPLETION_VALUES`] values, each at most [`MAX_COMPLETION_VALUE_BYTES`]
//! and under the display-text rules (no Cc, Cf, U+2028/2029 or lone
//! surrogate): a value is shown to a person picking it. `total` is an integer
//! ≥ 0 and `hasMore` a boolean. Every failure is `invalid_response`, naming the
//! rule and the value's position, never the value.
//!
//! ```
//! use serde_json::json;
//! use smthrs_mcp::completion::{Completion, CompletionRef};
//!
//! let reference = CompletionRef::Prompt { name: "code_review".to_owned() };
//! assert_eq!(
//!     serde_json::to_value(&reference)?,
//!     json!({ "type": "ref/prompt", "name": "code_review" })
//! );
//! let completion = Completion::from_value(
//!     json!({ "completion": { "values": ["flask"], "total": 1, "hasMore": false } }),
//! )?;
//! assert_eq!(completion.values, ["flask"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::text::check_bounded_display;

/// The most values one completion may hold (the schema's `maxItems`).
pub const MAX_COMPLETION_VALUES: usize = 100;
/// The most UTF-8 bytes of one completion value (fixed).
pub const MAX_COMPLETION_VALUE_BYTES: usize = 1024;

/// What a `completion/complete` request completes an argument of. Serializes as
/// the request's `ref`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionRef {
    /// `ref/prompt`: an argument of the prompt of this name.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// `ref/resource`: a variable of this resource template (or URI), spelled
    /// as the server listed it.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The template or URI.
        uri: String,
    },
}

/// A checked `completion/complete` result (server-authored values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// The suggested values, in server order.
    pub values: Vec<String>,
    /// How many values exist in all, if the server says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether more values exist than these (`false` when absent).
    pub has_more: bool,
}

impl Completion {
    /// Validates a `completion/complete` result object. Members other than
    /// `completion` (the 2026-07-28 `resultType`, `_meta`) are the caller's.
    ///
    /// Fails with `invalid_response` when: the result or its `completion` is not
    /// an object; `values` is not an array, or holds more than
    /// [`MAX_COMPLETION_VALUES`]; a value is not a string, is longer than
    /// [`MAX_COMPLETION_VALUE_BYTES`] or breaks the display-text rules; `total`
    /// is present and not an integer ≥ 0; or `hasMore` is present and not a
    /// boolean.
    pub fn from_value(result: Value) -> Result<Completion> {
        let fail =
            |rule: &str| Error::invalid_response(format!("completion/complete result: {rule}"));
        let Value::Object(mut result) = result else {
            return Err(fail("the result is not an object"));
        };
        let Some(Value::Object(mut completion)) = result.remove("completion") else {
            return Err(fail("completion is not an object"));
        };
        let Some(Value::Array(values)) = completion.remove("values") else {
            return Err(fail("completion.values is not an array"));
        };
        if values.len() > MAX_COMPLETION_VALUES {
            return Err(fail(&format!(
                "completion.values lists {} values; the fixed limit is {MAX_COMPLETION_VALUES}",
                values.len()
            )));
        }
        let values = values
            .into_iter()
            .enumerate()
            .map(|(position, value)| {
                let what = format!("completion.values[{position}]");
                let Value::String(value) = value else {
                    return Err(fail(&format!("{what} is not a string")));
                };
                check_bounded_display(&what, &value, MAX_COMPLETION_VALUE_BYTES, "the fixed limit")
                    .map_err(|rule| fail(&rule))?;
                Ok(value)
            })
            .collect::<Result<Vec<_>>>()?;
        let total = match completion.remove("total") {
            None => None,
            Some(total) => Some(
                total
                    .as_u64()
                    .ok_or_else(|| fail("completion.total is not an integer >= 0"))?,
            ),
        };
        let has_more = match completion.remove("hasMore") {
            None => false,
            Some(Value::Bool(more)) => more,
            Some(_) => return Err(fail("completion.hasMore is not a boolean")),
        };
        Ok(Completion {
            values,
            total,
            has_more,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use serde_json::json;

    fn rejects(result: Value) -> String {
        let error = Completion::from_value(result).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse);
        error.message().to_owned()
    }

    #[test]
    fn the_spec_example_is_accepted() {
        let completion = Completion::from_value(json!({
            "resultType": "complete",
            "completion": { "values": ["flask"], "total": 1, "hasMore": false }
        }))
        .unwrap();
        assert_eq!(completion.values, ["flask"]);
        assert_eq!(completion.total, Some(1));
        assert!(!completion.has_more);
        assert_eq!(
            serde_json::to_value(&completion).unwrap(),
            json!({ "values": ["flask"], "total": 1, "hasMore": false })
        );

        let bare = Completion::from_value(json!({ "completion": { "values": [] } })).unwrap();
        assert_eq!(
            (bare.values.len(), bare.total, bare.has_more),
            (0, None, false)
        );
    }

    #[test]
    fn the_references_serialize_as_the_wire_ref() {
        assert_eq!(
            serde_json::to_value(CompletionRef::Resource {
                uri: "file:///{path}".to_owned()
            })
            .unwrap(),
            json!({ "type": "ref/resource", "uri": "file:///{path}" })
        );
    }

    #[test]
    fn values_are_bounded_by_count_and_bytes() {
        let full: Vec<String> = (0..MAX_COMPLETION_VALUES).map(|i| i.to_string()).collect();
        assert!(Completion::from_value(json!({ "completion": { "values": full } })).is_ok());
        let over: Vec<String> = (0..=MAX_COMPLETION_VALUES).map(|i| i.to_string()).collect();
        assert_eq!(
            rejects(json!({ "completion": { "values": over } })),
            "completion/complete result: completion.values lists 101 values; the fixed limit is 100"
        );
        let long = "a".repeat(MAX_COMPLETION_VALUE_BYTES);
        assert!(Completion::from_value(json!({ "completion": { "values": [long] } })).is_ok());
        assert_eq!(
            rejects(json!({ "completion": { "values": ["ok", format!("{long}b")] } })),
            "completion/complete result: completion.values[1] is 1025 bytes; the fixed limit is 1024"
        );
    }

    #[test]
    fn every_rule_is_named() {
        for (result, rule) in [
            (json!([]), "the result is not an object"),
            (json!({}), "completion is not an object"),
            (json!({ "completion": null }), "completion is not an object"),
            (
                json!({ "completion": {} }),
                "completion.values is not an array",
            ),
            (
                json!({ "completion": { "values": [1] } }),
                "completion.values[0] is not a string",
            ),
            (
                json!({ "completion": { "values": ["a\u{202E}b"] } }),
                "completion.values[0] contains a format character (Unicode Cf)",
            ),
            (
                json!({ "completion": { "values": ["a\nb"] } }),
                "completion.values[0] contains a control character (Unicode Cc)",
            ),
            (
                json!({ "completion": { "values": [], "total": -1 } }),
                "completion.total is not an integer >= 0",
            ),
            (
                json!({ "completion": { "values": [], "total": 1.5 } }),
                "completion.total is not an integer >= 0",
            ),
            (
                json!({ "completion": { "values": [], "hasMore": "no" } }),
                "completion.hasMore is not a boolean",
            ),
        ] {
            assert_eq!(
                rejects(result.clone()),
                format!("completion/complete result: {rule}"),
                "{result}"
            );
        }
    }
}
