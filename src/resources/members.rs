//! Readers for the members entries and blocks share. Each takes the member out
//! of an entry the caller owns (no copy) and returns the rule broken,
//! crate-authored, naming the member and never quoting its value. The `*_of`
//! readers apply the same rules, with the same errors, to an entry they only
//! borrow (a tool result's blocks are checked in place).
//!
//! A member present with the value `null` is present: it must have the
//! member's type, as in the catalog (`crate::catalog`'s module docs say why).

use serde_json::{Map, Value};

use crate::json_bounds::encoded_len_exceeds;
use crate::listing::encoded_len;
use crate::text::{check_bounded_display, check_display};

/// The most UTF-8 bytes of a resource or template `name`, a label (fixed,
/// beyond-tools.md §0.5).
pub const MAX_LABEL_BYTES: usize = 1024;

/// Member `key`, taken out, whatever its value.
pub(crate) fn take_value(entry: &mut Map<String, Value>, key: &str) -> Option<Value> {
    entry.remove(key)
}

/// An optional string member.
pub(crate) fn take_string(
    entry: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<String>, String> {
    match entry.remove(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(format!("{key} is not a string")),
    }
}

/// An optional string member, borrowed ([`take_string`]'s rule).
pub(crate) fn string_of<'a>(
    entry: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, String> {
    match entry.get(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(format!("{key} is not a string")),
    }
}

/// A required string member, borrowed ([`take_required_string`]'s rule).
pub(crate) fn required_string_of<'a>(
    entry: &'a Map<String, Value>,
    key: &str,
) -> Result<&'a str, String> {
    string_of(entry, key)?.ok_or_else(|| format!("{key} is missing"))
}

/// A required string member.
pub(crate) fn take_required_string(
    entry: &mut Map<String, Value>,
    key: &str,
) -> Result<String, String> {
    take_string(entry, key)?.ok_or_else(|| format!("{key} is missing"))
}

/// An optional `title`: a string under the display-text rules.
pub(crate) fn take_title(entry: &mut Map<String, Value>) -> Result<Option<String>, String> {
    let title = take_string(entry, "title")?;
    if let Some(title) = &title {
        check_display("title", title)?;
    }
    Ok(title)
}

/// The `name` of a resource or template: a non-empty label of at most
/// [`MAX_LABEL_BYTES`] under the display-text rules (it may repeat: the URI is
/// the identity).
pub(crate) fn take_label(entry: &mut Map<String, Value>) -> Result<String, String> {
    let name = take_required_string(entry, "name")?;
    if name.is_empty() {
        return Err("name is empty".to_owned());
    }
    check_bounded_display("name", &name, MAX_LABEL_BYTES, "the fixed limit")?;
    Ok(name)
}

/// An optional `_meta`: an object, kept opaque.
pub(crate) fn take_meta(
    entry: &mut Map<String, Value>,
) -> Result<Option<Map<String, Value>>, String> {
    match entry.remove("_meta") {
        None => Ok(None),
        Some(Value::Object(meta)) => Ok(Some(meta)),
        Some(_) => Err("_meta is not an object".to_owned()),
    }
}

/// An optional `_meta`, borrowed ([`take_meta`]'s rule).
pub(crate) fn check_meta_of(entry: &Map<String, Value>) -> Result<(), String> {
    match entry.get("_meta") {
        None | Some(Value::Object(_)) => Ok(()),
        Some(_) => Err("_meta is not an object".to_owned()),
    }
}

/// A required URI member, borrowed ([`take_uri`]'s rules).
pub(crate) fn check_uri_of(
    entry: &Map<String, Value>,
    key: &str,
    max_uri_bytes: usize,
) -> Result<(), String> {
    let uri = required_string_of(entry, key)?;
    crate::uri::check_uri(uri, max_uri_bytes, "maxUriBytes")
}

/// A required URI member (`uri`), under the URI rules of beyond-tools.md §0.5
/// (`maxUriBytes`). Kept as the server spelled it.
pub(crate) fn take_uri(
    entry: &mut Map<String, Value>,
    key: &str,
    max_uri_bytes: usize,
) -> Result<String, String> {
    let uri = take_required_string(entry, key)?;
    crate::uri::check_uri(&uri, max_uri_bytes, "maxUriBytes")?;
    Ok(uri)
}

/// The largest integer a JSON number carries exactly everywhere (2^53 - 1).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// An optional non-negative safe integer member (`size`).
pub(crate) fn take_safe_integer(
    entry: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<u64>, String> {
    match entry.remove(key) {
        None => Ok(None),
        Some(value) => match value.as_u64() {
            Some(n) if n <= MAX_SAFE_INTEGER => Ok(Some(n)),
            _ => Err(format!("{key} is not a non-negative safe integer")),
        },
    }
}

/// Bounds an entry's compact JSON bytes (what is left of it: the caller has
/// taken out the members that do not count, named by `without` for the
/// message, such as `" without its uri"`) by `maxEntryDocumentBytes`, and gives
/// the entry back.
pub(crate) fn check_document(
    entry: Map<String, Value>,
    max_bytes: usize,
    without: &str,
) -> Result<Map<String, Value>, String> {
    let entry = Value::Object(entry);
    if encoded_len_exceeds(&entry, max_bytes) {
        return Err(format!(
            "the entry is {} bytes of JSON{without}; maxEntryDocumentBytes is {max_bytes}",
            encoded_len(&entry)
        ));
    }
    match entry {
        Value::Object(entry) => Ok(entry),
        _ => unreachable!("built as an object above"),
    }
}
