//! Server-authored resource data: a `resources/read` result
//! (`content::ReadResult::from_value`), the content blocks of a tool result
//! (`content::tool_content`) and of a `prompts/get` result
//! (`prompts::GetPromptResult::from_value`), and the walks of
//! `resources/list`, `resources/templates/list` and `prompts/list`
//! (`listing::ListBuilder`).
//!
//! Input: six bytes of bounds, then one JSON value per line (parsed by the
//! engine's bounded parser; other lines are skipped). Each value is handed to
//! every parser: as a read result, as a tool result's content (its `content`
//! member, or the value itself when it is an array), as a `prompts/get` result,
//! and as the next page of each of the three walks (a walk stops once a page
//! fails or names no next cursor). The bounds, small so that they trip:
//! `maxResourceBytes` `4 * b0` (0..=1020), `maxResourceContents` `b1 % 8`,
//! `maxPromptMessages` `(b1 >> 3) % 8`, `""` continues a walk when `b1 & 0x40`
//! (the 2026-07-28 rule), `maxUriBytes` `1 + b2 % 96`, `maxEntryDocumentBytes`
//! `16 + 4 * b3`, each walk's cap `1 + b4 % 8`, `maxPromptArguments`
//! `(b4 >> 3) % 8`, names `1 + b5 % 48` bytes, `maxCatalogPages` `1 + b5 >> 6`.
//!
//! Properties:
//!
//! - never a panic;
//! - every read, tool result, prompt result and page is accepted exactly when an
//!   independent model of the rules accepts it (the URI rules, strict base64,
//!   the `mimeType` grammar, annotations, icons, labels and names, entry
//!   documents, counts, the byte budget, uniqueness, cursors), and a refusal
//!   names the position (`contents[i]`, `content[i]`, `messages[i]`,
//!   `resources[i]`, ...) of the first item the model refuses;
//! - strict base64: a `blob` or `data` is decoded exactly when a hand-written
//!   strict decoder accepts it, to the same bytes, and those bytes encode back
//!   to the text sent (with its padding completed): one text per byte string;
//! - the decoded bytes of one result (blobs, image and audio data, resource
//!   texts) never pass `maxResourceBytes`, nor its items `maxResourceContents`
//!   or `maxPromptMessages`, nor a walk its cap;
//! - an accepted URI holds no control, format, separator or replacement
//!   character and no whitespace; labels, titles and names hold none of the
//!   first four; texts and unknown blocks are kept exactly as sent;
//! - what is accepted serializes to a value that is accepted again, equal;
//! - a refusal is `invalid_response`, and its message (`Display` and `Debug`) is
//!   ASCII and quotes no server text.

use std::collections::HashSet;

use serde_json::{Map, Value};
use smthrs_mcp::ErrorKind;
use smthrs_mcp::content::{
    ContentBlock, ContentBounds, ReadResult, ResourceContents, ResourceData, tool_content,
};
use smthrs_mcp::fuzzing::parse_value;
use smthrs_mcp::listing::{ListBounds, ListBuilder};
use smthrs_mcp::prompts::{GetPromptResult, Prompt};
use smthrs_mcp::resources::{Resource, ResourceTemplate};

use super::util::forbidden_char;

/// The fixed bounds of beyond-tools.md, written out.
const MAX_LABEL_BYTES: usize = 1024;
const MAX_ICONS: usize = 8;
const MAX_ICON_SRC_BYTES: usize = 65_536;
const MAX_MIME_TYPE_BYTES: usize = 255;
const MAX_MIME_NAME: usize = 127;
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The bounds one input chose.
struct Bounds {
    content: ContentBounds,
    list: ListBounds,
    empty_cursor_continues: bool,
}

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    let Some((header, lines)) = data.split_first_chunk::<6>() else {
        return;
    };
    let bounds = bounds(header);
    let mut resources = Walk::<Resource>::new(&bounds);
    let mut templates = Walk::<ResourceTemplate>::new(&bounds);
    let mut prompts = Walk::<Prompt>::new(&bounds);
    for line in lines.split(|&b| b == b'\n') {
        let Ok(value) = parse_value(line) else {
            continue;
        };
        check_read(&value, &bounds);
        check_tool_content(&value, &bounds);
        check_prompt_result(&value, &bounds);
        resources.page(&value, &bounds);
        templates.page(&value, &bounds);
        prompts.page(&value, &bounds);
    }
}

fn bounds(b: &[u8; 6]) -> Bounds {
    let mut content = ContentBounds::default();
    content.max_resource_bytes = 4 * usize::from(b[0]);
    content.max_resource_contents = usize::from(b[1] % 8);
    content.max_prompt_messages = usize::from((b[1] >> 3) % 8);
    content.max_uri_bytes = 1 + usize::from(b[2] % 96);
    content.max_entry_document_bytes = 16 + 4 * usize::from(b[3]);
    let mut list = ListBounds::default();
    list.max_resources = 1 + usize::from(b[4] % 8);
    list.max_resource_templates = list.max_resources;
    list.max_prompts = list.max_resources;
    list.max_prompt_arguments = usize::from((b[4] >> 3) % 8);
    list.max_name_bytes = 1 + usize::from(b[5] % 48);
    list.max_pages = 1 + usize::from(b[5] >> 6);
    list.max_uri_bytes = content.max_uri_bytes;
    list.max_entry_document_bytes = content.max_entry_document_bytes;
    Bounds {
        content,
        list,
        empty_cursor_continues: b[1] & 0x40 != 0,
    }
}

// ----- resources/read -----

/// What an accepted contents item must hold.
#[derive(Debug, PartialEq)]
enum Data {
    Text(String),
    Blob(Vec<u8>),
}

/// The decoded bytes one result may still hold.
struct Budget {
    left: usize,
}

impl Budget {
    fn charge(&mut self, bytes: usize) -> bool {
        match self.left.checked_sub(bytes) {
            Some(left) => {
                self.left = left;
                true
            }
            None => false,
        }
    }
}

/// The model's verdict on a list of items: all accepted, or refused as a whole
/// (`None`) or at the first item refused (`Some(i)`).
type Verdict<T> = Result<Vec<T>, Option<usize>>;

fn model_read(value: &Value, bounds: &ContentBounds) -> Verdict<Data> {
    let items = value
        .as_object()
        .and_then(|result| result.get("contents"))
        .and_then(Value::as_array)
        .ok_or(None)?;
    if items.len() > bounds.max_resource_contents {
        return Err(None);
    }
    let mut budget = Budget {
        left: bounds.max_resource_bytes,
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            item.as_object()
                .and_then(|item| model_contents(item, bounds.max_uri_bytes, &mut budget))
                .ok_or(Some(i))
        })
        .collect()
}

/// One contents object (a read's item, or an embedded resource without its
/// `annotations`).
fn model_contents(item: &Map<String, Value>, max_uri: usize, budget: &mut Budget) -> Option<Data> {
    let uri = item.get("uri")?.as_str()?;
    if !uri_ok(uri, max_uri, false) || !optional_mime_ok(item) || !optional_meta_ok(item) {
        return None;
    }
    let data = match (item.get("text"), item.get("blob")) {
        (Some(Value::String(text)), None) => Data::Text(text.clone()),
        (None, Some(Value::String(blob))) => Data::Blob(strict_base64(blob)?),
        _ => return None,
    };
    let len = match &data {
        Data::Text(text) => text.len(),
        Data::Blob(bytes) => bytes.len(),
    };
    budget.charge(len).then_some(data)
}

fn check_read(value: &Value, bounds: &Bounds) {
    let expected = model_read(value, &bounds.content);
    match (
        ReadResult::from_value(value.clone(), &bounds.content),
        expected,
    ) {
        (Ok(read), Ok(expected)) => {
            let items = value["contents"].as_array().expect("the model read it");
            assert!(read.contents.len() <= bounds.content.max_resource_contents);
            assert_eq!(read.contents.len(), expected.len());
            let mut total = 0;
            for ((item, want), input) in read.contents.iter().zip(&expected).zip(items) {
                total += contents_matches(item, want, input, bounds.content.max_uri_bytes);
            }
            assert!(
                total <= bounds.content.max_resource_bytes,
                "{total} bytes kept"
            );
            let again = serde_json::to_value(&read).expect("a read serializes");
            assert_eq!(
                ReadResult::from_value(again, &bounds.content).as_ref(),
                Ok(&read),
                "a read does not survive its own serialization"
            );
        }
        (Err(error), Err(at)) => refused(&error, value, "contents", at),
        (got, want) => panic!("from_value gave {got:?}, the model {want:?}"),
    }
}

/// Checks an accepted contents item against the model and its input; returns
/// the bytes it holds.
fn contents_matches(item: &ResourceContents, want: &Data, input: &Value, max_uri: usize) -> usize {
    assert_eq!(item.uri, input["uri"].as_str().expect("the model read it"));
    assert!(uri_ok(&item.uri, max_uri, false));
    assert_eq!(item.mime_type.as_deref(), input["mimeType"].as_str());
    match (&item.data, want) {
        (ResourceData::Text(text), Data::Text(want)) => {
            assert_eq!(text, want);
            text.len()
        }
        (ResourceData::Blob(bytes), Data::Blob(want)) => {
            assert_eq!(bytes, want);
            assert_encodes_back(bytes, input["blob"].as_str().expect("the model read it"));
            bytes.len()
        }
        (got, want) => panic!("kept {got:?}, the model {want:?}"),
    }
}

// ----- content blocks -----

/// What an accepted block must be.
#[derive(Debug)]
enum Block {
    Text(String),
    Binary(&'static str, Vec<u8>),
    Link(String),
    Embedded(Data),
    Unknown(Map<String, Value>),
}

/// One block, charging its decoded bytes.
fn model_block(block: &Value, bounds: &ContentBounds, budget: &mut Budget) -> Option<Block> {
    let block = block.as_object()?;
    let kind = block.get("type")?.as_str()?;
    let common = optional_annotations_ok(block.get("annotations")) && optional_meta_ok(block);
    match kind {
        "text" => {
            let text = block.get("text")?.as_str()?;
            common.then(|| Block::Text(text.to_owned()))
        }
        "image" | "audio" => {
            let data = block.get("data")?.as_str()?;
            let mime = block.get("mimeType")?.as_str()?;
            if !common || !mime_ok(mime) {
                return None;
            }
            let bytes = strict_base64(data)?;
            let kind = if kind == "image" { "image" } else { "audio" };
            budget
                .charge(bytes.len())
                .then_some(Block::Binary(kind, bytes))
        }
        "resource_link" => {
            let mut entry = block.clone();
            entry.remove("type");
            model_resource(
                &entry,
                bounds.max_uri_bytes,
                bounds.max_entry_document_bytes,
            )
            .then(|| Block::Link(block["uri"].as_str().expect("checked").to_owned()))
        }
        "resource" => {
            let mut resource = block.get("resource")?.as_object()?.clone();
            let inner = resource.remove("annotations");
            if !common || !optional_annotations_ok(inner.as_ref()) {
                return None;
            }
            model_contents(&resource, bounds.max_uri_bytes, budget).map(Block::Embedded)
        }
        _ => Some(Block::Unknown(block.clone())),
    }
}

fn model_blocks(blocks: &[Value], bounds: &ContentBounds) -> Verdict<Block> {
    let mut budget = Budget {
        left: bounds.max_resource_bytes,
    };
    blocks
        .iter()
        .enumerate()
        .map(|(i, block)| model_block(block, bounds, &mut budget).ok_or(Some(i)))
        .collect()
}

/// Checks an accepted block against the model and its input; returns the
/// decoded bytes it counts.
fn block_matches(
    block: &ContentBlock,
    want: &Block,
    input: &Value,
    bounds: &ContentBounds,
) -> usize {
    match (block, want) {
        (ContentBlock::Text(text), Block::Text(want)) => {
            assert_eq!(&text.text, want);
            0
        }
        (ContentBlock::Image(binary), Block::Binary("image", want))
        | (ContentBlock::Audio(binary), Block::Binary("audio", want)) => {
            assert_eq!(&binary.data, want);
            assert!(mime_ok(&binary.mime_type));
            assert_encodes_back(&binary.data, input["data"].as_str().expect("checked"));
            binary.data.len()
        }
        (ContentBlock::ResourceLink(link), Block::Link(uri)) => {
            assert_eq!(&link.uri, uri);
            resource_holds_its_rules(link, bounds.max_uri_bytes);
            0
        }
        (ContentBlock::Resource(embedded), Block::Embedded(want)) => contents_matches(
            &embedded.resource,
            want,
            &input["resource"],
            bounds.max_uri_bytes,
        ),
        (ContentBlock::Unknown(map), Block::Unknown(want)) => {
            assert_eq!(map, want, "an unknown block is kept as sent");
            0
        }
        (got, want) => panic!("kept {got:?}, the model {want:?}"),
    }
}

fn check_tool_content(value: &Value, bounds: &Bounds) {
    let blocks = match value {
        Value::Array(blocks) => blocks,
        _ => match value.get("content") {
            Some(Value::Array(blocks)) => blocks,
            _ => return,
        },
    };
    let bounds = &bounds.content;
    match (
        tool_content(blocks.clone(), bounds),
        model_blocks(blocks, bounds),
    ) {
        (Ok(got), Ok(want)) => {
            assert_eq!(got.len(), want.len());
            let total: usize = got
                .iter()
                .zip(&want)
                .zip(blocks)
                .map(|((block, want), input)| block_matches(block, want, input, bounds))
                .sum();
            assert!(total <= bounds.max_resource_bytes, "{total} bytes kept");
            let again: Vec<Value> = got
                .iter()
                .map(|block| serde_json::to_value(block).expect("a block serializes"))
                .collect();
            assert_eq!(
                tool_content(again, &relaxed(bounds)).as_ref(),
                Ok(&got),
                "blocks do not survive their own serialization"
            );
        }
        (Err(error), Err(at)) => refused(&error, value, "content", at),
        (got, want) => panic!("tool_content gave {got:?}, the model {want:?}"),
    }
}

/// The same bounds with room for a document that serializes longer than it was
/// sent (`1` for a priority comes back as `1.0`).
fn relaxed(bounds: &ContentBounds) -> ContentBounds {
    let mut relaxed = *bounds;
    relaxed.max_entry_document_bytes = usize::MAX;
    relaxed
}

// ----- prompts/get -----

fn model_prompt_result(value: &Value, bounds: &ContentBounds) -> Verdict<(&'static str, Block)> {
    let result = value.as_object().ok_or(None)?;
    if !matches!(result.get("description"), None | Some(Value::String(_))) {
        return Err(None);
    }
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .ok_or(None)?;
    if messages.len() > bounds.max_prompt_messages {
        return Err(None);
    }
    let mut budget = Budget {
        left: bounds.max_resource_bytes,
    };
    messages
        .iter()
        .enumerate()
        .map(|(i, message)| {
            let message = message.as_object().ok_or(Some(i))?;
            let role = match message.get("role").and_then(Value::as_str) {
                Some("user") => "user",
                Some("assistant") => "assistant",
                _ => return Err(Some(i)),
            };
            let content = message.get("content").ok_or(Some(i))?;
            let block = model_block(content, bounds, &mut budget).ok_or(Some(i))?;
            Ok((role, block))
        })
        .collect()
}

fn check_prompt_result(value: &Value, bounds: &Bounds) {
    let bounds = &bounds.content;
    match (
        GetPromptResult::from_value(value.clone(), bounds),
        model_prompt_result(value, bounds),
    ) {
        (Ok(got), Ok(want)) => {
            assert!(got.messages.len() <= bounds.max_prompt_messages);
            assert_eq!(got.messages.len(), want.len());
            assert_eq!(got.description.as_deref(), value["description"].as_str());
            let inputs = value["messages"].as_array().expect("the model read it");
            let mut total = 0;
            for ((message, (role, block)), input) in got.messages.iter().zip(&want).zip(inputs) {
                assert_eq!(
                    serde_json::to_value(message.role).expect("a role serializes"),
                    *role
                );
                total += block_matches(&message.content, block, &input["content"], bounds);
            }
            assert!(total <= bounds.max_resource_bytes, "{total} bytes kept");
            let again = serde_json::to_value(&got).expect("a prompt result serializes");
            assert_eq!(
                GetPromptResult::from_value(again, &relaxed(bounds)).as_ref(),
                Ok(&got),
                "a prompt result does not survive its own serialization"
            );
        }
        (Err(error), Err(at)) => refused(&error, value, "messages", at),
        (got, want) => panic!("GetPromptResult::from_value gave {got:?}, the model {want:?}"),
    }
}

// ----- list walks -----

/// What the walks need of an entry kind, beside the library's own trait.
trait Kind:
    smthrs_mcp::listing::ListEntry + Clone + PartialEq + std::fmt::Debug + serde::Serialize
{
    const LIST: &'static str;
    fn max(bounds: &ListBounds) -> usize;
    /// The model: `Some(accepted)`, or `None` where it does not decide.
    fn model(entry: &Value, bounds: &ListBounds) -> Option<bool>;
    /// The entry's identity, from the input.
    fn identity(entry: &Value) -> &str;
    /// The rules an accepted entry holds.
    fn holds(&self, bounds: &ListBounds);
}

impl Kind for Resource {
    const LIST: &'static str = "resources";
    fn max(bounds: &ListBounds) -> usize {
        bounds.max_resources
    }
    fn model(entry: &Value, bounds: &ListBounds) -> Option<bool> {
        Some(entry.as_object().is_some_and(|entry| {
            model_resource(entry, bounds.max_uri_bytes, bounds.max_entry_document_bytes)
        }))
    }
    fn identity(entry: &Value) -> &str {
        entry["uri"].as_str().expect("accepted")
    }
    fn holds(&self, bounds: &ListBounds) {
        resource_holds_its_rules(self, bounds.max_uri_bytes);
    }
}

impl Kind for ResourceTemplate {
    const LIST: &'static str = "resourceTemplates";
    fn max(bounds: &ListBounds) -> usize {
        bounds.max_resource_templates
    }
    fn model(entry: &Value, bounds: &ListBounds) -> Option<bool> {
        let Some(entry) = entry.as_object() else {
            return Some(false);
        };
        let Some(Value::String(template)) = entry.get("uriTemplate") else {
            return Some(false);
        };
        // RFC 6570 expressions are outside the model; without braces a
        // template follows the URI rules.
        if template.contains(['{', '}']) {
            return None;
        }
        let mut rest = entry.clone();
        rest.remove("uriTemplate");
        Some(
            uri_ok(template, bounds.max_uri_bytes, false)
                && document_len(&rest) <= bounds.max_entry_document_bytes
                && label_ok(entry.get("name"))
                && optional_display_ok(entry.get("title"))
                && matches!(entry.get("description"), None | Some(Value::String(_)))
                && optional_mime_ok(entry)
                && optional_annotations_ok(entry.get("annotations"))
                && icons_ok(entry.get("icons"))
                && optional_meta_ok(entry),
        )
    }
    fn identity(entry: &Value) -> &str {
        entry["uriTemplate"].as_str().expect("accepted")
    }
    fn holds(&self, bounds: &ListBounds) {
        assert!(uri_ok(&self.uri_template, bounds.max_uri_bytes, true));
        assert!(!self.name.is_empty() && self.name.len() <= MAX_LABEL_BYTES);
        assert!(display_ok(&self.name));
        assert!(self.title.as_deref().is_none_or(display_ok));
        assert!(self.icons.len() <= MAX_ICONS);
    }
}

impl Kind for Prompt {
    const LIST: &'static str = "prompts";
    fn max(bounds: &ListBounds) -> usize {
        bounds.max_prompts
    }
    fn model(entry: &Value, bounds: &ListBounds) -> Option<bool> {
        let Some(entry) = entry.as_object() else {
            return Some(false);
        };
        let name_ok = |name: Option<&Value>, command: bool| {
            name.and_then(Value::as_str).is_some_and(|name| {
                !name.is_empty()
                    && name.len() <= bounds.max_name_bytes
                    && display_ok(name)
                    && (!command || (name != "." && name != ".." && !name.contains('/')))
            })
        };
        let arguments_ok = match entry.get("arguments") {
            None => true,
            Some(Value::Array(arguments)) => {
                let mut names = HashSet::new();
                arguments.len() <= bounds.max_prompt_arguments
                    && arguments.iter().all(|argument| {
                        argument.as_object().is_some_and(|argument| {
                            name_ok(argument.get("name"), false)
                                && names.insert(argument["name"].as_str().expect("checked"))
                                && optional_display_ok(argument.get("title"))
                                && matches!(
                                    argument.get("description"),
                                    None | Some(Value::String(_))
                                )
                                && matches!(argument.get("required"), None | Some(Value::Bool(_)))
                        })
                    })
            }
            Some(_) => false,
        };
        Some(
            document_len(entry) <= bounds.max_entry_document_bytes
                && name_ok(entry.get("name"), true)
                && optional_display_ok(entry.get("title"))
                && matches!(entry.get("description"), None | Some(Value::String(_)))
                && arguments_ok
                && icons_ok(entry.get("icons"))
                && optional_meta_ok(entry),
        )
    }
    fn identity(entry: &Value) -> &str {
        entry["name"].as_str().expect("accepted")
    }
    fn holds(&self, bounds: &ListBounds) {
        assert!(!self.name.is_empty() && self.name.len() <= bounds.max_name_bytes);
        assert!(display_ok(&self.name) && !self.name.contains('/'));
        assert!(self.name != "." && self.name != "..");
        assert!(self.arguments.len() <= bounds.max_prompt_arguments);
        let mut names = HashSet::new();
        for argument in &self.arguments {
            assert!(!argument.name.is_empty() && argument.name.len() <= bounds.max_name_bytes);
            assert!(display_ok(&argument.name) && names.insert(&argument.name));
        }
        assert!(self.title.as_deref().is_none_or(display_ok));
    }
}

/// One walk and the model's state of it.
struct Walk<T: Kind> {
    builder: ListBuilder<T>,
    keys: HashSet<String>,
    cursors: HashSet<String>,
    pages: usize,
    ended: bool,
}

impl<T: Kind> Walk<T> {
    fn new(bounds: &Bounds) -> Self {
        Walk {
            builder: ListBuilder::new(&bounds.list)
                .empty_cursor_continues(bounds.empty_cursor_continues),
            keys: HashSet::new(),
            cursors: HashSet::new(),
            pages: 0,
            ended: false,
        }
    }

    /// The model of one page: the next cursor, or the refusal; `None` where the
    /// model does not decide.
    fn model(
        &self,
        page: &Value,
        bounds: &Bounds,
    ) -> Option<Result<Option<String>, Option<usize>>> {
        let Some(entries) = page
            .as_object()
            .and_then(|page| page.get(T::LIST))
            .and_then(Value::as_array)
        else {
            return Some(Err(None));
        };
        if self.keys.len() + entries.len() > T::max(&bounds.list) {
            return Some(Err(None));
        }
        let mut keys = HashSet::new();
        for (i, entry) in entries.iter().enumerate() {
            if !T::model(entry, &bounds.list)? {
                return Some(Err(Some(i)));
            }
            let key = T::identity(entry);
            if self.keys.contains(key) || !keys.insert(key) {
                return Some(Err(Some(i)));
            }
        }
        Some(match page.get("nextCursor") {
            None => Ok(None),
            Some(Value::String(cursor)) if !cursor.is_empty() || bounds.empty_cursor_continues => {
                if self.cursors.contains(cursor) || self.pages + 1 >= bounds.list.max_pages {
                    Err(None)
                } else {
                    Ok(Some(cursor.clone()))
                }
            }
            Some(_) => Err(None),
        })
    }

    fn page(&mut self, page: &Value, bounds: &Bounds) {
        if self.ended {
            return;
        }
        let expected = self.model(page, bounds);
        let before = self.builder.entries().len();
        let got = self.builder.add_page(page.clone());
        match (&got, &expected) {
            (Ok(cursor), Some(Ok(want))) => assert_eq!(cursor, want),
            (Err(error), Some(Err(at))) => refused(error, page, T::LIST, *at),
            (_, None) => {}
            _ => panic!("add_page gave {got:?}, the model {expected:?}"),
        }
        let entries = self.builder.entries();
        assert!(entries.len() <= T::max(&bounds.list));
        assert!(self.builder.pages() <= bounds.list.max_pages);
        match got {
            Ok(cursor) => {
                let inputs = page[T::LIST].as_array().expect("accepted");
                assert_eq!(entries.len(), before + inputs.len());
                for (entry, input) in entries[before..].iter().zip(inputs) {
                    entry.holds(&bounds.list);
                    assert!(
                        self.keys.insert(T::identity(input).to_owned()),
                        "a key repeats"
                    );
                }
                self.round_trip(&entries[before..], bounds);
                self.pages += 1;
                match cursor {
                    Some(cursor) => {
                        self.cursors.insert(cursor);
                    }
                    None => self.ended = true,
                }
            }
            // A failed page adds nothing, and ends the walk.
            Err(_) => {
                assert_eq!(entries.len(), before);
                self.ended = true;
            }
        }
    }

    /// Accepted entries serialize to a page a fresh walk accepts, equal.
    fn round_trip(&self, entries: &[T], bounds: &Bounds) {
        let mut relaxed = bounds.list;
        relaxed.max_entry_document_bytes = usize::MAX;
        let page = serde_json::json!({ T::LIST: entries });
        let mut again = ListBuilder::<T>::new(&relaxed);
        assert_eq!(again.add_page(page).map_err(|e| e.to_string()), Ok(None));
        assert_eq!(
            again.entries(),
            entries,
            "entries do not survive serialization"
        );
    }
}

// ----- the rules, written out -----

/// A resource (a listing entry, or a `resource_link` without its `type`).
fn model_resource(entry: &Map<String, Value>, max_uri: usize, max_document: usize) -> bool {
    let Some(Value::String(uri)) = entry.get("uri") else {
        return false;
    };
    let mut rest = entry.clone();
    rest.remove("uri");
    uri_ok(uri, max_uri, false)
        && document_len(&rest) <= max_document
        && label_ok(entry.get("name"))
        && optional_display_ok(entry.get("title"))
        && matches!(entry.get("description"), None | Some(Value::String(_)))
        && optional_mime_ok(entry)
        && entry
            .get("size")
            .is_none_or(|size| size.as_u64().is_some_and(|n| n <= MAX_SAFE_INTEGER))
        && optional_annotations_ok(entry.get("annotations"))
        && icons_ok(entry.get("icons"))
        && optional_meta_ok(entry)
}

fn resource_holds_its_rules(resource: &Resource, max_uri: usize) {
    assert!(uri_ok(&resource.uri, max_uri, false));
    assert!(!resource.name.is_empty() && resource.name.len() <= MAX_LABEL_BYTES);
    assert!(display_ok(&resource.name));
    assert!(resource.title.as_deref().is_none_or(display_ok));
    assert!(resource.size.is_none_or(|n| n <= MAX_SAFE_INTEGER));
    assert!(resource.icons.len() <= MAX_ICONS);
    for icon in &resource.icons {
        assert!(uri_ok(&icon.src, MAX_ICON_SRC_BYTES, false));
    }
    if let Some(priority) = resource.annotations.as_ref().and_then(|a| a.priority) {
        assert!((0.0..=1.0).contains(&priority));
    }
}

/// The compact JSON bytes of an entry.
fn document_len(entry: &Map<String, Value>) -> usize {
    serde_json::to_vec(entry).expect("a map serializes").len()
}

fn display_ok(text: &str) -> bool {
    !text.chars().any(forbidden_char)
}

/// A required label: a non-empty string of at most 1024 bytes, display text.
fn label_ok(name: Option<&Value>) -> bool {
    name.and_then(Value::as_str)
        .is_some_and(|name| !name.is_empty() && name.len() <= MAX_LABEL_BYTES && display_ok(name))
}

fn optional_display_ok(text: Option<&Value>) -> bool {
    match text {
        None => true,
        Some(Value::String(text)) => display_ok(text),
        Some(_) => false,
    }
}

fn optional_meta_ok(entry: &Map<String, Value>) -> bool {
    matches!(entry.get("_meta"), None | Some(Value::Object(_)))
}

fn optional_mime_ok(entry: &Map<String, Value>) -> bool {
    match entry.get("mimeType") {
        None => true,
        Some(Value::String(mime)) => mime_ok(mime),
        Some(_) => false,
    }
}

fn optional_annotations_ok(annotations: Option<&Value>) -> bool {
    let Some(annotations) = annotations else {
        return true;
    };
    let Some(annotations) = annotations.as_object() else {
        return false;
    };
    let audience = match annotations.get("audience") {
        None => true,
        Some(Value::Array(roles)) => roles
            .iter()
            .all(|role| matches!(role.as_str(), Some("user" | "assistant"))),
        Some(_) => false,
    };
    let priority = annotations
        .get("priority")
        .is_none_or(|p| p.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)));
    let modified = matches!(
        annotations.get("lastModified"),
        None | Some(Value::String(_))
    );
    audience && priority && modified
}

fn icons_ok(icons: Option<&Value>) -> bool {
    let icons = match icons {
        None => return true,
        Some(Value::Array(icons)) if icons.len() <= MAX_ICONS => icons,
        Some(_) => return false,
    };
    let size_ok = |size: &Value| {
        let digits = |s: &str| (1..=5).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit());
        size.as_str().is_some_and(|size| {
            size == "any"
                || size
                    .split_once('x')
                    .is_some_and(|(w, h)| digits(w) && digits(h))
        })
    };
    icons.iter().all(|icon| {
        icon.as_object().is_some_and(|icon| {
            icon.get("src")
                .and_then(Value::as_str)
                .is_some_and(|src| uri_ok(src, MAX_ICON_SRC_BYTES, false))
                && optional_mime_ok(icon)
                && match icon.get("sizes") {
                    None => true,
                    Some(Value::Array(sizes)) => sizes.iter().all(size_ok),
                    Some(_) => false,
                }
                && match icon.get("theme") {
                    None => true,
                    Some(theme) => matches!(theme.as_str(), Some("light" | "dark")),
                }
        })
    })
}

/// The URI rules: non-empty, within `max` bytes, a scheme (`ALPHA *(ALPHA /
/// DIGIT / + / - / .)`) and a colon first, no forbidden character, no
/// whitespace, and braces only in a template.
fn uri_ok(uri: &str, max: usize, template: bool) -> bool {
    let scheme_ok = uri.split_once(':').is_some_and(|(scheme, _)| {
        let mut bytes = scheme.bytes();
        bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
            && bytes.all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
    });
    !uri.is_empty()
        && uri.len() <= max
        && scheme_ok
        && uri.chars().all(|c| {
            !forbidden_char(c) && !c.is_whitespace() && (template || (c != '{' && c != '}'))
        })
}

/// `type "/" subtype *(OWS ";" OWS [name "=" (token / quoted-string)]) OWS`
/// with RFC 6838 names (1 to 127 characters, a letter or digit first), RFC 9110
/// tokens (1 to 127 characters), spaces only around `;`, at most 255 bytes.
fn mime_ok(mime: &str) -> bool {
    let restricted = |b: u8| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b);
    let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    let name_ok = |name: &str| {
        (1..=MAX_MIME_NAME).contains(&name.len())
            && name.as_bytes()[0].is_ascii_alphanumeric()
            && name.bytes().all(restricted)
    };
    if mime.len() > MAX_MIME_TYPE_BYTES || !mime.is_ascii() {
        return false;
    }
    let Some((kind, rest)) = mime.split_once('/') else {
        return false;
    };
    let subtype_len = rest.bytes().take_while(|&b| restricted(b)).count();
    if !name_ok(kind) || !name_ok(&rest[..subtype_len]) {
        return false;
    }
    let mut rest = &rest[subtype_len..];
    loop {
        rest = rest.trim_start_matches(' ');
        if rest.is_empty() {
            return true;
        }
        let Some(after) = rest.strip_prefix(';') else {
            return false;
        };
        rest = after.trim_start_matches(' ');
        if rest.is_empty() || rest.starts_with(';') {
            continue;
        }
        let name_len = rest.bytes().take_while(|&b| tchar(b)).count();
        if !(1..=MAX_MIME_NAME).contains(&name_len) {
            return false;
        }
        let Some(value) = rest[name_len..].strip_prefix('=') else {
            return false;
        };
        rest = if let Some(quoted) = value.strip_prefix('"') {
            let mut bytes = quoted.bytes().enumerate();
            let visible = |b: u8| b == b' ' || b.is_ascii_graphic();
            loop {
                match bytes.next() {
                    Some((i, b'"')) => break &quoted[i + 1..],
                    Some((_, b'\\')) => match bytes.next() {
                        Some((_, b)) if visible(b) => {}
                        _ => return false,
                    },
                    Some((_, b)) if visible(b) => {}
                    _ => return false,
                }
            }
        } else {
            let len = value.bytes().take_while(|&b| tchar(b)).count();
            if !(1..=MAX_MIME_NAME).contains(&len) {
                return false;
            }
            &value[len..]
        };
    }
}

/// Strict base64, written out: the standard alphabet, no whitespace, padding
/// optional but, when present, exactly what completes the last quantum, and
/// the unused low bits of the last character zero.
fn strict_base64(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let body = text.trim_end_matches('=');
    let padding = text.len() - body.len();
    let sextets: Vec<u32> = body
        .bytes()
        .map(|b| ALPHABET.iter().position(|&a| a == b).map(|p| p as u32))
        .collect::<Option<_>>()?;
    let tail = sextets.len() % 4;
    let padding_ok = match padding {
        0 => true,
        1 => tail == 3,
        2 => tail == 2,
        _ => false,
    };
    if tail == 1 || !padding_ok {
        return None;
    }
    let mut out = Vec::with_capacity(sextets.len() / 4 * 3 + 2);
    for quantum in sextets.chunks(4) {
        let mut bits = 0u32;
        for &s in quantum {
            bits = bits << 6 | s;
        }
        match quantum.len() {
            4 => out.extend_from_slice(&bits.to_be_bytes()[1..]),
            3 => {
                if bits & 0b11 != 0 {
                    return None;
                }
                out.extend_from_slice(&(bits >> 2).to_be_bytes()[2..]);
            }
            _ => {
                if bits & 0b1111 != 0 {
                    return None;
                }
                out.push((bits >> 4) as u8);
            }
        }
    }
    Some(out)
}

/// The bytes, encoded as the crate serializes them (padded standard base64),
/// are the text the server sent, with its padding completed: one text per
/// byte string.
fn assert_encodes_back(bytes: &[u8], sent: &str) {
    let item = serde_json::to_value(ResourceData::Blob(bytes.to_vec())).expect("a blob serializes");
    let encoded = item["blob"].as_str().expect("a blob serializes as blob");
    assert_eq!(encoded.trim_end_matches('='), sent.trim_end_matches('='));
    assert_eq!(encoded.len() % 4, 0, "{encoded:?} is not padded");
    assert_eq!(strict_base64(encoded).as_deref(), Some(bytes));
}

/// A refusal: `invalid_response`, at the position the model names, quoting no
/// server text.
fn refused(error: &smthrs_mcp::Error, input: &Value, member: &str, at: Option<usize>) {
    assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
    let message = error.to_string();
    match at {
        Some(i) => assert!(
            message.contains(&format!(" {member}[{i}]: ")),
            "{message} does not name {member}[{i}]"
        ),
        None => assert!(!message.contains(&format!(" {member}[")), "{message}"),
    }
    let debug = format!("{error:?}");
    for text in [&message, &debug] {
        assert!(text.is_ascii(), "{text}");
        let mut strings = Vec::new();
        collect_strings(input, &mut strings);
        for s in strings {
            let marked = s.chars().any(|c| "@#$%^&~|<>!?`=".contains(c));
            if marked && s.len() >= 2 {
                assert!(!text.contains(s.as_str()), "{text} quotes {s:?}");
            }
        }
    }
}

fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a String>) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) => out.push(s),
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (key, item) in map {
                    out.push(key);
                    stack.push(item);
                }
            }
            _ => {}
        }
    }
}
