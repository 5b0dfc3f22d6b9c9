//! What a server sends as content (beyond-tools.md §1.3, §1.5): the contents of
//! a `resources/read` ([`ReadResult`]), and the content blocks of tool results
//! and prompt messages ([`ContentBlock`]), validated and bounded before any of
//! it is kept.
//!
//! - **Resource contents** ([`ResourceContents`]): a `uri` under the URI rules
//!   (kept as the server spelled it; a read may answer with sub-resources of
//!   other URIs), a `mimeType` hint, and **exactly one** of `text` or `blob`.
//!   At most `maxResourceContents` items in one read; `[]` means "exists, but
//!   empty".
//! - **Base64** (`blob`, and `data` of image and audio blocks): strict — the
//!   standard alphabet, no whitespace, no URL-safe alphabet, padding optional
//!   but canonical when present, no trailing bits. The decoded length is known
//!   from the text's length and checked against what is left of
//!   `maxResourceBytes` **before** decoding.
//! - **The byte budget** (`maxResourceBytes`): the decoded bytes of one read,
//!   one prompt result or one tool result, summed over its items: `blob`, image
//!   and audio data decoded, the `text` of resource contents in UTF-8 bytes.
//!   The `text` of a text block is not counted (the frame bound holds it).
//! - **Blocks**: `text`; `image` and `audio` (`data` and a required
//!   `mimeType`); `resource_link` (a [`Resource`], under the listing's entry
//!   rules: a link is only a URI for `resources/read` on the server that sent
//!   it, never fetched by its scheme); `resource` (embedded contents, as a read;
//!   `annotations` on the block or, as the 2026 tools page shows, inside
//!   `resource`); and any other `type`, kept as sent
//!   ([`ContentBlock::Unknown`]).
//! - `mimeType` is a hint: content is never sniffed, and never rendered by it
//!   (`text/html` and `image/svg+xml` are active content).
//!
//! Every failure is `invalid_response`, naming the result, the item's position
//! and the rule broken, never server-authored text.
//!
//! A session checks every `tools/call` result by these rules before returning
//! it: the blocks are checked where they lie (base64 checked and counted, not
//! decoded) and `ToolResult::content` holds them as sent; [`tool_content`]
//! gives them typed.
//!
//! ```
//! use serde_json::json;
//! use smthrs_mcp::content::{ContentBounds, ReadResult, ResourceData};
//!
//! let read = ReadResult::from_value(
//!     json!({ "contents": [
//!         { "uri": "file:///project/src/main.rs", "mimeType": "text/x-rust", "text": "fn main() {}" },
//!         { "uri": "file:///project/logo.png", "mimeType": "image/png", "blob": "iVBORw0KGgo=" }
//!     ]}),
//!     &ContentBounds::default(),
//! )?;
//! assert_eq!(read.contents[1].data, ResourceData::Blob(b"\x89PNG\r\n\x1a\n".to_vec()));
//! # Ok::<(), smthrs_mcp::Error>(())
//! ```

pub(crate) mod strict_base64;

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::resources::members::{
    check_meta_of, check_uri_of, required_string_of, take_meta, take_required_string, take_uri,
};
use crate::resources::{Annotations, Resource, mime_type_of, take_mime_type};

pub(crate) use strict_base64::Budget;

/// The bounds of content a server sends. [`Default`] holds the proposed
/// defaults of the matching `Limits` options (named on each field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContentBounds {
    /// UTF-8 bytes of any `uri` (`maxUriBytes`, 4096).
    pub max_uri_bytes: usize,
    /// The compact JSON bytes of a `resource_link` block, without its `uri` and
    /// `type` (`maxEntryDocumentBytes`, 65536).
    pub max_entry_document_bytes: usize,
    /// Decoded bytes of one read, one prompt result or one tool result
    /// (`maxResourceBytes`, 16 MiB).
    pub max_resource_bytes: usize,
    /// `contents` items in one read (`maxResourceContents`, 64).
    pub max_resource_contents: usize,
    /// Messages in one `prompts/get` result (`maxPromptMessages`, 128).
    pub max_prompt_messages: usize,
}

impl Default for ContentBounds {
    fn default() -> Self {
        ContentBounds::from(&Limits::default())
    }
}

/// The session's [`Limits`] (already validated), as the content checks read them.
impl From<&Limits> for ContentBounds {
    fn from(limits: &Limits) -> ContentBounds {
        ContentBounds {
            max_uri_bytes: Limits::usize_of(limits.max_uri_bytes),
            max_entry_document_bytes: Limits::usize_of(limits.max_entry_document_bytes),
            max_resource_bytes: Limits::usize_of(limits.max_resource_bytes),
            max_resource_contents: Limits::usize_of(limits.max_resource_contents),
            max_prompt_messages: Limits::usize_of(limits.max_prompt_messages),
        }
    }
}

/// One item of a read's `contents`, or the `resource` of an embedded block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceContents {
    /// The address, as the server spelled it.
    pub uri: String,
    /// The media type, a hint (never sniff, never render by it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text or the decoded bytes.
    #[serde(flatten)]
    pub data: ResourceData,
    /// `_meta`, opaque.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// What a [`ResourceContents`] holds. Serializes as the wire member (`text`, or
/// `blob` in padded standard base64).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ResourceData {
    /// `text`, as sent (server-authored).
    Text(String),
    /// `blob`, decoded.
    #[serde(serialize_with = "as_base64")]
    Blob(Vec<u8>),
}

impl ResourceContents {
    /// Validates one contents object; the error is the rule broken. Members the
    /// schema does not name are tolerated and not kept.
    fn from_object(
        mut item: Map<String, Value>,
        max_uri_bytes: usize,
        budget: &mut Budget,
    ) -> std::result::Result<ResourceContents, String> {
        let uri = take_uri(&mut item, "uri", max_uri_bytes)?;
        let mime_type = take_mime_type(&mut item)?;
        let data = match (item.remove("text"), item.remove("blob")) {
            (Some(_), Some(_)) => return Err("the item holds both text and blob".to_owned()),
            (None, None) => return Err("the item holds neither text nor blob".to_owned()),
            (Some(Value::String(text)), None) => {
                budget.charge(text.len())?;
                ResourceData::Text(text)
            }
            (None, Some(Value::String(blob))) => {
                ResourceData::Blob(strict_base64::decode("blob", &blob, budget)?)
            }
            (Some(_), None) => return Err("text is not a string".to_owned()),
            (None, Some(_)) => return Err("blob is not a string".to_owned()),
        };
        let meta = take_meta(&mut item)?;
        Ok(ResourceContents {
            uri,
            mime_type,
            data,
            meta,
        })
    }
}

/// [`ResourceContents::from_object`]'s rules, in its order and with its
/// errors, on contents only borrowed: nothing kept, a `blob` checked and
/// counted, not decoded.
fn check_contents(
    item: &Map<String, Value>,
    max_uri_bytes: usize,
    budget: &mut Budget,
) -> std::result::Result<(), String> {
    check_uri_of(item, "uri", max_uri_bytes)?;
    mime_type_of(item)?;
    match (item.get("text"), item.get("blob")) {
        (Some(_), Some(_)) => return Err("the item holds both text and blob".to_owned()),
        (None, None) => return Err("the item holds neither text nor blob".to_owned()),
        (Some(Value::String(text)), None) => budget.charge(text.len())?,
        (None, Some(Value::String(blob))) => strict_base64::check("blob", blob, budget)?,
        (Some(_), None) => return Err("text is not a string".to_owned()),
        (None, Some(_)) => return Err("blob is not a string".to_owned()),
    }
    check_meta_of(item)
}

/// A `resources/read` result: the contents, in server order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ReadResult {
    /// The items (several for a directory-like read; none for an empty one).
    pub contents: Vec<ResourceContents>,
}

impl ReadResult {
    /// Validates a `resources/read` result object. Members other than
    /// `contents` (the 2026-07-28 `resultType`, `ttlMs`, `cacheScope`, `_meta`)
    /// are the caller's to read.
    ///
    /// Fails with `invalid_response` when: the result is not an object;
    /// `contents` is not an array, or holds more than `maxResourceContents`
    /// items; an item is not an object, breaks the URI rules, has a malformed
    /// `mimeType` or `_meta`, holds both or neither of `text` and `blob`, or a
    /// `blob` that is not strict base64; or the items' bytes pass
    /// `maxResourceBytes` (checked before each `blob` is decoded).
    pub fn from_value(result: Value, bounds: &ContentBounds) -> Result<ReadResult> {
        let fail = |rule: &str| Error::invalid_response(format!("resources/read result: {rule}"));
        let Value::Object(mut result) = result else {
            return Err(fail("the result is not an object"));
        };
        let Some(Value::Array(items)) = result.remove("contents") else {
            return Err(fail("contents is not an array"));
        };
        if items.len() > bounds.max_resource_contents {
            return Err(fail(&format!(
                "contents holds {} items; maxResourceContents is {}",
                items.len(),
                bounds.max_resource_contents
            )));
        }
        let mut budget = Budget::new(bounds.max_resource_bytes);
        let contents = items
            .into_iter()
            .enumerate()
            .map(|(position, item)| {
                let item = match item {
                    Value::Object(item) => {
                        ResourceContents::from_object(item, bounds.max_uri_bytes, &mut budget)
                    }
                    _ => Err("the item is not an object".to_owned()),
                };
                item.map_err(|rule| format!("contents[{position}]: {rule}"))
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|rule| fail(&rule))?;
        Ok(ReadResult { contents })
    }
}

/// One content block of a tool result or a prompt message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    /// `type: "text"`.
    Text(TextContent),
    /// `type: "image"`.
    Image(BinaryContent),
    /// `type: "audio"`.
    Audio(BinaryContent),
    /// `type: "resource_link"`: a resource to read with `resources/read` on the
    /// server that sent it (it need not be listed by `resources/list`).
    ResourceLink(Resource),
    /// `type: "resource"`: embedded contents.
    Resource(EmbeddedResource),
    /// A block of another `type`, kept exactly as sent (server-authored).
    Unknown(Map<String, Value>),
}

/// A text block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TextContent {
    /// The text (server-authored).
    pub text: String,
    /// Hints for the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`, opaque.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// An image or audio block. Serializes `data` in padded standard base64.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BinaryContent {
    /// The decoded bytes.
    #[serde(serialize_with = "as_base64")]
    pub data: Vec<u8>,
    /// The media type, a hint.
    pub mime_type: String,
    /// Hints for the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// `_meta`, opaque.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// An embedded resource block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct EmbeddedResource {
    /// The contents, under the rules of a read.
    pub resource: ResourceContents,
    /// Hints for the host: the block's `annotations`, or, when the block has
    /// none, those inside `resource` (both are checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// The block's `_meta`, opaque.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ContentBlock {
    /// The block's `type`.
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            ContentBlock::ResourceLink(_) => "resource_link",
            ContentBlock::Resource(_) => "resource",
            ContentBlock::Unknown(block) => block.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// Validates one block; the error is the rule broken. Decoded bytes are
    /// charged to `budget`.
    pub(crate) fn from_value(
        block: Value,
        bounds: &ContentBounds,
        budget: &mut Budget,
    ) -> std::result::Result<ContentBlock, String> {
        let Value::Object(mut block) = block else {
            return Err("the block is not an object".to_owned());
        };
        let kind = match block.remove("type") {
            Some(Value::String(kind)) => kind,
            _ => return Err("type is not a string".to_owned()),
        };
        match kind.as_str() {
            "text" => {
                let text = take_required_string(&mut block, "text")?;
                Ok(ContentBlock::Text(TextContent {
                    text,
                    annotations: take_annotations(&mut block)?,
                    meta: take_meta(&mut block)?,
                }))
            }
            "image" | "audio" => {
                let image = kind == "image";
                let data = take_required_string(&mut block, "data")?;
                let mime_type = take_mime_type(&mut block)?.ok_or("mimeType is missing")?;
                let data = strict_base64::decode("data", &data, budget)?;
                let content = BinaryContent {
                    data,
                    mime_type,
                    annotations: take_annotations(&mut block)?,
                    meta: take_meta(&mut block)?,
                };
                Ok(if image {
                    ContentBlock::Image(content)
                } else {
                    ContentBlock::Audio(content)
                })
            }
            "resource_link" => {
                let resource = Resource::from_object(
                    block,
                    bounds.max_uri_bytes,
                    bounds.max_entry_document_bytes,
                )?;
                Ok(ContentBlock::ResourceLink(resource))
            }
            "resource" => {
                let Some(Value::Object(mut resource)) = block.remove("resource") else {
                    return Err("resource is not an object".to_owned());
                };
                let outer = take_annotations(&mut block)?;
                let inner =
                    take_annotations(&mut resource).map_err(|rule| format!("resource: {rule}"))?;
                let resource =
                    ResourceContents::from_object(resource, bounds.max_uri_bytes, budget)
                        .map_err(|rule| format!("resource: {rule}"))?;
                Ok(ContentBlock::Resource(EmbeddedResource {
                    resource,
                    annotations: outer.or(inner),
                    meta: take_meta(&mut block)?,
                }))
            }
            _ => {
                block.insert("type".to_owned(), Value::String(kind));
                Ok(ContentBlock::Unknown(block))
            }
        }
    }

    /// [`ContentBlock::from_value`]'s rules, in its order and with its errors,
    /// on a block only borrowed (a tool result's, carried on as sent): nothing
    /// built, base64 checked and counted, not decoded. A `resource_link` is
    /// checked on a copy (the entry rules take members out).
    pub(crate) fn check(
        block: &Value,
        bounds: &ContentBounds,
        budget: &mut Budget,
    ) -> std::result::Result<(), String> {
        let Value::Object(block) = block else {
            return Err("the block is not an object".to_owned());
        };
        if is_plain_text(block) {
            return Ok(());
        }
        let Some(Value::String(kind)) = block.get("type") else {
            return Err("type is not a string".to_owned());
        };
        match kind.as_str() {
            "text" => {
                required_string_of(block, "text")?;
                check_annotations_of(block)?;
                check_meta_of(block)
            }
            "image" | "audio" => {
                let data = required_string_of(block, "data")?;
                mime_type_of(block)?.ok_or("mimeType is missing")?;
                strict_base64::check("data", data, budget)?;
                check_annotations_of(block)?;
                check_meta_of(block)
            }
            "resource_link" => {
                let mut link = block.clone();
                link.remove("type");
                Resource::from_object(link, bounds.max_uri_bytes, bounds.max_entry_document_bytes)
                    .map(drop)
            }
            "resource" => {
                let Some(Value::Object(resource)) = block.get("resource") else {
                    return Err("resource is not an object".to_owned());
                };
                check_annotations_of(block)?;
                check_annotations_of(resource).map_err(|rule| format!("resource: {rule}"))?;
                check_contents(resource, bounds.max_uri_bytes, budget)
                    .map_err(|rule| format!("resource: {rule}"))?;
                check_meta_of(block)
            }
            _ => Ok(()),
        }
    }
}

impl Serialize for ContentBlock {
    /// The wire form: the block's members and its `type` (an unknown block as
    /// sent).
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a, T: Serialize> {
            r#type: &'static str,
            #[serde(flatten)]
            block: &'a T,
        }
        fn tagged<T: Serialize, S: Serializer>(
            r#type: &'static str,
            block: &T,
            serializer: S,
        ) -> std::result::Result<S::Ok, S::Error> {
            Tagged { r#type, block }.serialize(serializer)
        }
        match self {
            ContentBlock::Text(block) => tagged("text", block, serializer),
            ContentBlock::Image(block) => tagged("image", block, serializer),
            ContentBlock::Audio(block) => tagged("audio", block, serializer),
            ContentBlock::ResourceLink(block) => tagged("resource_link", block, serializer),
            ContentBlock::Resource(block) => tagged("resource", block, serializer),
            ContentBlock::Unknown(block) => block.serialize(serializer),
        }
    }
}

/// A text block whose members pass [`ContentBlock::check`] at a glance: a
/// string `text`, no `annotations`, `_meta` absent or an object (members the
/// schema does not name are ignored). The common block, read in one pass
/// over its members; `false` leaves the block to the full check, which names
/// the rule broken.
fn is_plain_text(block: &Map<String, Value>) -> bool {
    let (mut kind, mut text) = (false, false);
    for (key, value) in block {
        match (key.as_str(), value) {
            ("type", Value::String(t)) => kind = t == "text",
            ("text", Value::String(_)) => text = true,
            ("_meta", Value::Object(_)) => {}
            ("type" | "text" | "_meta" | "annotations", _) => return false,
            _ => {}
        }
    }
    kind && text
}

/// An optional `annotations` member.
fn take_annotations(
    entry: &mut Map<String, Value>,
) -> std::result::Result<Option<Annotations>, String> {
    entry
        .remove("annotations")
        .as_ref()
        .map(Annotations::parse)
        .transpose()
}

/// An optional `annotations` member, borrowed ([`take_annotations`]'s rules).
fn check_annotations_of(entry: &Map<String, Value>) -> std::result::Result<(), String> {
    match entry.get("annotations") {
        None => Ok(()),
        Some(annotations) => Annotations::parse(annotations).map(drop),
    }
}

/// Validates the `content` array of a `tools/call` result (both eras): each
/// block by the rules of the [module docs](self), the decoded bytes of the
/// whole array within `maxResourceBytes`.
///
/// Fails with `invalid_response` naming `content[i]` and the rule broken.
///
/// ```
/// use serde_json::json;
/// use smthrs_mcp::content::{ContentBlock, ContentBounds, tool_content};
///
/// let blocks = tool_content(
///     vec![
///         json!({ "type": "text", "text": "done" }),
///         json!({ "type": "resource_link", "uri": "file:///project/src/main.rs", "name": "main.rs" }),
///         json!({ "type": "hologram", "frames": 3 }),
///     ],
///     &ContentBounds::default(),
/// )?;
/// assert!(matches!(&blocks[1], ContentBlock::ResourceLink(link) if link.name == "main.rs"));
/// assert_eq!(blocks[2].kind(), "hologram");
/// # Ok::<(), smthrs_mcp::Error>(())
/// ```
pub fn tool_content(content: Vec<Value>, bounds: &ContentBounds) -> Result<Vec<ContentBlock>> {
    let mut budget = Budget::new(bounds.max_resource_bytes);
    content
        .into_iter()
        .enumerate()
        .map(|(position, block)| {
            ContentBlock::from_value(block, bounds, &mut budget)
                .map_err(|rule| tool_content_error(position, &rule))
        })
        .collect()
}

/// [`tool_content`]'s checks and errors, on a `content` array only borrowed:
/// how a `tools/call` result is checked before it is returned as sent (the
/// same blocks pass, the same error for the first that does not).
pub(crate) fn check_tool_content(content: &[Value], bounds: &ContentBounds) -> Result<()> {
    let mut budget = Budget::new(bounds.max_resource_bytes);
    for (position, block) in content.iter().enumerate() {
        ContentBlock::check(block, bounds, &mut budget)
            .map_err(|rule| tool_content_error(position, &rule))?;
    }
    Ok(())
}

fn tool_content_error(position: usize, rule: &str) -> Error {
    Error::invalid_response(format!("tools/call result: content[{position}]: {rule}"))
}

/// Serializes bytes as padded standard base64.
fn as_base64<S: Serializer>(bytes: &[u8], serializer: S) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_str(&strict_base64::encode(bytes))
}

#[cfg(test)]
mod tests;
