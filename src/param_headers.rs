//! `x-mcp-header` (2026-07-28, Streamable HTTP): a tool's `inputSchema` may ask
//! that an argument be mirrored into an `Mcp-Param-{Name}` request header, so that
//! intermediaries can route on it without reading the body (SEP-2243).
//!
//! The server chooses those header names, so they are attacker input:
//!
//! - **At catalog time** ([`annotations`]) a tool's annotations are validated as
//!   the specification requires of HTTP clients; a tool with an invalid one is
//!   dropped from the catalog (with a diagnostic) and the other tools are kept.
//!   Invalid: not a string, empty, not an RFC 9110 token (which also excludes
//!   spaces, colons, control and non-ASCII characters), not unique ignoring case,
//!   on a property whose `type` is not exactly `string`, `integer` or `boolean`,
//!   on a property not reachable from the root through `properties` alone (under
//!   `items`, `oneOf`, `$defs`, ...), or more of them than `maxParamHeaders`.
//! - **At call time** ([`mirror`]) each annotated argument present in the call
//!   becomes a header: a string as it is, an integer in decimal (within
//!   ±(2^53-1)), a boolean as `true`/`false`; `null` or absent means no header.
//!   Any value that is not plain printable ASCII (0x20-0x7E without leading or
//!   trailing space), or that looks like the encoding's own sentinel, is sent as
//!   `=?base64?{base64 of its UTF-8}?=`: this is also what keeps a CR/LF in an
//!   argument from ever reaching a header. The headers of one call may total at
//!   most `maxParamHeaderBytes` (names and values), or the call is refused before
//!   anything is sent.
//!
//! On stdio the annotations are ignored (the specification allows it), and the
//! catalog keeps such tools.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::limits::{Limits, MAX_SAFE_INTEGER};
use crate::transport::ParamHeader;

/// The annotation key.
pub const ANNOTATION: &str = "x-mcp-header";

/// The header name prefix.
pub const PREFIX: &str = "Mcp-Param-";

/// The JSON type of an annotated property.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderType {
    String,
    Integer,
    Boolean,
}

/// One validated annotation: which argument (a path of property names from the
/// root) goes into which header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamSpec {
    /// The header name after [`PREFIX`], as the server wrote it.
    pub(crate) name: Arc<str>,
    /// Property names from the arguments' root to the value.
    pub(crate) path: Vec<String>,
    pub(crate) kind: HeaderType,
}

/// Why a tool's annotations are refused (a diagnostic names it; never the
/// server's text).
pub(crate) type Invalid = &'static str;

/// Validates every `x-mcp-header` annotation of an `inputSchema`.
pub(crate) fn annotations(
    schema: &Map<String, Value>,
    limits: &Limits,
) -> std::result::Result<Vec<ParamSpec>, Invalid> {
    let mut specs = Vec::new();
    walk_schema(schema, true, &mut Vec::new(), &mut specs)?;
    if specs.len() as u64 > limits.max_param_headers {
        return Err("more x-mcp-header annotations than maxParamHeaders");
    }
    for (i, spec) in specs.iter().enumerate() {
        if specs[..i]
            .iter()
            .any(|other| other.name.eq_ignore_ascii_case(&spec.name))
        {
            return Err("x-mcp-header names are not unique (ignoring case)");
        }
    }
    Ok(specs)
}

/// Keywords whose values are data, not schemas: an `x-mcp-header` key inside
/// them is not an annotation.
const DATA_KEYWORDS: &[&str] = &["const", "default", "enum", "examples"];

/// Walks one schema object. `root` is the arguments' own schema; `path` the
/// property names that led here through `properties` alone (`None` past any other
/// keyword: annotations are invalid there).
fn walk_schema(
    node: &Map<String, Value>,
    root: bool,
    path: &mut Vec<String>,
    specs: &mut Vec<ParamSpec>,
) -> std::result::Result<(), Invalid> {
    walk(node, Some(path), root, specs)
}

fn walk(
    node: &Map<String, Value>,
    path: Option<&mut Vec<String>>,
    root: bool,
    specs: &mut Vec<ParamSpec>,
) -> std::result::Result<(), Invalid> {
    let reachable = path.is_some() && !root;
    if let Some(annotation) = node.get(ANNOTATION) {
        if !reachable {
            return Err("x-mcp-header outside a property reachable through properties");
        }
        let name = match annotation {
            Value::String(name) => name,
            _ => return Err("x-mcp-header is not a string"),
        };
        if name.is_empty() {
            return Err("x-mcp-header is empty");
        }
        if !name.bytes().all(is_tchar) {
            return Err("x-mcp-header is not an HTTP token");
        }
        let kind = match node.get("type").and_then(Value::as_str) {
            Some("string") => HeaderType::String,
            Some("integer") => HeaderType::Integer,
            Some("boolean") => HeaderType::Boolean,
            _ => return Err("x-mcp-header on a property that is not string, integer or boolean"),
        };
        specs.push(ParamSpec {
            name: Arc::from(name.as_str()),
            path: path.as_deref().cloned().unwrap_or_default(),
            kind,
        });
    }
    let mut path = path;
    for (key, value) in node {
        if key == ANNOTATION || DATA_KEYWORDS.contains(&key.as_str()) {
            continue;
        }
        if key == "properties"
            && let Value::Object(properties) = value
        {
            for (name, sub) in properties {
                let Value::Object(sub) = sub else { continue };
                match path.as_deref_mut() {
                    Some(path) => {
                        path.push(name.clone());
                        let walked = walk(sub, Some(path), false, specs);
                        path.pop();
                        walked?;
                    }
                    None => walk(sub, None, false, specs)?,
                }
            }
            continue;
        }
        walk_any(value, specs)?;
    }
    Ok(())
}

/// Any value below a keyword other than `properties`: every object in it is a
/// schema in which annotations are invalid.
fn walk_any(value: &Value, specs: &mut Vec<ParamSpec>) -> std::result::Result<(), Invalid> {
    // Iterative over arrays and objects (the catalog already bounds depth).
    match value {
        Value::Object(object) => walk(object, None, false, specs),
        Value::Array(items) => items.iter().try_for_each(|item| walk_any(item, specs)),
        _ => Ok(()),
    }
}

/// RFC 9110 `tchar`.
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// Encodes a header value: as it is when it is plain printable ASCII, else the
/// `=?base64?...?=` form (also for a value that looks like that form).
pub(crate) fn encode_value(value: &str) -> String {
    let printable = value.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let sentinel = value.starts_with("=?") && value.ends_with("?=");
    if printable && !padded && !sentinel {
        value.to_owned()
    } else {
        use base64::Engine as _;
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value.as_bytes())
        )
    }
}

/// The `Mcp-Param-*` headers of one call.
pub(crate) fn mirror(
    server: &str,
    specs: &[ParamSpec],
    arguments: &Map<String, Value>,
    limits: &Limits,
) -> Result<Vec<ParamHeader>> {
    let mut headers = Vec::new();
    let mut bytes = 0usize;
    for spec in specs {
        let Some(value) = lookup(arguments, &spec.path) else {
            continue;
        };
        let refuse = |what: &str| {
            Error::protocol(format!(
                "argument for header {PREFIX}{} of server \"{server}\" {what}",
                spec.name
            ))
        };
        let text = match (value, spec.kind) {
            (Value::Null, _) => continue,
            (Value::String(s), HeaderType::String) => s.clone(),
            (Value::Bool(b), HeaderType::Boolean) => b.to_string(),
            (Value::Number(n), HeaderType::Integer) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) if i.unsigned_abs() <= MAX_SAFE_INTEGER => i.to_string(),
                (None, Some(u)) if u <= MAX_SAFE_INTEGER => u.to_string(),
                _ => return Err(refuse("is not an integer within ±(2^53-1)")),
            },
            _ => return Err(refuse("does not match the property's type")),
        };
        let value = encode_value(&text);
        bytes = bytes
            .saturating_add(PREFIX.len() + spec.name.len())
            .saturating_add(value.len());
        if bytes as u64 > limits.max_param_header_bytes {
            // Counted up to the header that crossed the bound (the rest is not
            // encoded).
            return Err(Error::protocol(format!(
                "Mcp-Param-* headers of the call to server \"{server}\" reach {bytes} bytes; maxParamHeaderBytes is {}",
                limits.max_param_header_bytes
            )));
        }
        headers.push(ParamHeader {
            name: spec.name.clone(),
            value,
        });
    }
    Ok(headers)
}

fn lookup<'a>(arguments: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut value = arguments.get(first)?;
    for key in rest {
        value = value.as_object()?.get(key)?;
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(properties: Value) -> Map<String, Value> {
        json!({"type": "object", "properties": properties})
            .as_object()
            .cloned()
            .unwrap()
    }

    fn check(properties: Value) -> std::result::Result<Vec<ParamSpec>, Invalid> {
        annotations(&schema(properties), &Limits::default())
    }

    #[test]
    fn valid_annotations_give_paths_and_types() {
        let specs = check(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "Count"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "f": {"type": "number"},
            "nested": {"type": "object", "properties": {"id": {"type": "string", "x-mcp-header": "Id"}}}
        }))
        .unwrap();
        let names: Vec<_> = specs.iter().map(|s| (&*s.name, s.path.join("."))).collect();
        assert!(names.contains(&("Region", "region".into())));
        assert!(names.contains(&("Id", "nested.id".into())));
        assert_eq!(specs.len(), 4);
    }

    #[test]
    fn the_suites_ten_invalid_kinds_are_refused() {
        for properties in [
            json!({"a": {"type": "string", "x-mcp-header": ""}}),
            json!({"a": {"type": "object", "x-mcp-header": "A"}}),
            json!({"a": {"type": "array", "x-mcp-header": "A"}}),
            json!({"a": {"type": "null", "x-mcp-header": "A"}}),
            json!({"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "A"}}),
            json!({"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}),
            json!({"a": {"type": "string", "x-mcp-header": "A B"}}),
            json!({"a": {"type": "string", "x-mcp-header": "A:B"}}),
            json!({"a": {"type": "string", "x-mcp-header": "Régión"}}),
            json!({"a": {"type": "string", "x-mcp-header": "A\u{1}"}}),
            json!({"a": {"type": "number", "x-mcp-header": "A"}}),
            json!({"a": {"type": "string", "x-mcp-header": 7}}),
            json!({"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}),
            json!({"a": {"oneOf": [{"type": "string", "x-mcp-header": "A"}]}}),
        ] {
            assert!(check(properties.clone()).is_err(), "{properties}");
        }
        // A property *named* x-mcp-header, and the key inside data, are fine.
        assert!(
            check(json!({"x-mcp-header": {"type": "string"}}))
                .unwrap()
                .is_empty()
        );
        assert!(
            check(json!({"a": {"type": "string", "default": {"x-mcp-header": "X"}}}))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn the_count_is_bounded_by_max_param_headers() {
        let limits = Limits {
            max_param_headers: 1,
            ..Limits::default()
        };
        let two = schema(json!({
            "a": {"type": "string", "x-mcp-header": "A"},
            "b": {"type": "string", "x-mcp-header": "B"}
        }));
        assert!(annotations(&two, &limits).is_err());
    }

    #[test]
    fn values_are_encoded_as_the_suite_expects() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(encode_value(""), "");
        assert_eq!(encode_value("a b"), "a b");
        for unsafe_value in [
            " lead",
            "trail ",
            "tab\there",
            "cr\r\nlf",
            "naïve",
            "=?base64?eA==?=",
        ] {
            let encoded = encode_value(unsafe_value);
            assert!(
                encoded.starts_with("=?base64?") && encoded.ends_with("?="),
                "{unsafe_value:?}"
            );
            assert!(encoded.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        }
    }

    #[test]
    fn mirror_formats_skips_null_and_bounds_bytes() {
        let specs = check(json!({
            "s": {"type": "string", "x-mcp-header": "S"},
            "i": {"type": "integer", "x-mcp-header": "I"},
            "b": {"type": "boolean", "x-mcp-header": "B"},
            "z": {"type": "string", "x-mcp-header": "Z"}
        }))
        .unwrap();
        let args = json!({"s": "x\r\nInjected: 1", "i": -42, "b": true, "z": null});
        let headers = mirror("srv", &specs, args.as_object().unwrap(), &Limits::default()).unwrap();
        let find = |n: &str| {
            headers
                .iter()
                .find(|h| &*h.name == n)
                .map(|h| h.value.clone())
        };
        assert_eq!(find("I").as_deref(), Some("-42"));
        assert_eq!(find("B").as_deref(), Some("true"));
        assert_eq!(find("Z"), None);
        assert!(find("S").unwrap().starts_with("=?base64?"));
        let too_big = json!({"i": 9007199254740992u64});
        assert!(
            mirror(
                "srv",
                &specs,
                too_big.as_object().unwrap(),
                &Limits::default()
            )
            .is_err()
        );
        let tight = Limits {
            max_param_header_bytes: 20,
            ..Limits::default()
        };
        let long = json!({"s": "y".repeat(40)});
        let error = mirror("srv", &specs, long.as_object().unwrap(), &tight).unwrap_err();
        assert!(error.message().contains("maxParamHeaderBytes"));
    }
}
