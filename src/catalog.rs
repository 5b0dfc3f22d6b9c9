//! The tool catalog: validated once during the handshake, then deeply immutable.
//!
//! The catalog is the part of a session a model reads. Every tool becomes a flow
//! named `mcp/<server>/<tool>`, its description and `inputSchema` are shown to the
//! model, and its name lands in a declaration digest a person may approve. All of it
//! is authored by a server this crate does not trust, so [`CatalogBuilder`] checks
//! each `tools/list` page against the contract's rules and bounds before any of it
//! is kept:
//!
//! - **Names** ([`check_tool_name`]): non-empty, at most `maxToolNameBytes` UTF-8
//!   bytes, no `/` (it would make `mcp/<server>/<tool>` ambiguous), not exactly `.`
//!   or `..` (they read as path segments), and no character that is invisible or
//!   reorders text: controls (Unicode Cc), format characters (Unicode Cf: zero-width
//!   marks, bidi overrides and isolates, the soft hyphen...), and the line and
//!   paragraph separators U+2028/U+2029. Such a character would let one tool *read*
//!   as another, to the model choosing a tool or to the human approving a call, so
//!   none of these rules is cosmetic. Lone UTF-16 surrogates cannot exist in a Rust
//!   string: the frame parser ([`crate::json_bounds::parse_value`], or
//!   `json_bounds::repair_lone_surrogates`) turns each one into U+FFFD, so
//!   a name containing U+FFFD is refused. That also refuses a name in which the
//!   server sent a literal U+FFFD or invalid UTF-8, which is the safe direction.
//! - **Uniqueness**: two tools with one name, on one page or across pages, would
//!   make the flow name ambiguous.
//! - **Entries**: `inputSchema` must be an object whose `type` is exactly
//!   `"object"` (a tool with no usable parameter document is refused rather than
//!   shown to a model as if it had one); `outputSchema` and `annotations`, when
//!   present, must be objects; `description` and `title`, when present, must be
//!   strings.
//! - **Bounds**: a tool's description bytes plus its JSON-encoded `inputSchema`
//!   bytes may not exceed `maxToolDocumentBytes`, so one tool cannot flood the model's
//!   context; more than `maxTools` tools fails (a silently truncated toolset is worse
//!   than a refused connection); the cursor walk ends at `maxCatalogPages` pages or
//!   at a repeated cursor, either of which would otherwise never finish.
//!
//! A member whose value is JSON `null` is *present*, so it must have the member's
//! type: `"outputSchema": null`, `"annotations": null`, `"description": null`,
//! `"title": null` and `"nextCursor": null` are each refused, naming the member.
//! This is the contract's reading ("`outputSchema`, when present, must be a JSON
//! object") and the official TypeScript SDK's (every one of these is
//! `z.optional(...)` in its `ListToolsResultSchema`, which refuses `null`), so a
//! server that sends `null` there already fails the most common client. The SDKs
//! the interop suite runs omit unset members instead of sending `null`: the Python
//! SDK serializes with `exclude_none=True`, rmcp with
//! `skip_serializing_if = "Option::is_none"`. The one real server found sending
//! `null` in one of these places (Codewhale's `serve --mcp`, `"nextCursor": null`)
//! changed to omitting it because strict clients refused it, so no looser reading
//! is kept. Members the contract does not name (`_meta`, `icons`, ...) are ignored
//! and not kept, whatever their value.
//!
//! Every failure is `invalid_response`. Its message names the page, the entry's
//! position and the rule broken; it never quotes server text such as the offending
//! name, which may itself be the attack.
//!
//! ```
//! use serde_json::json;
//! use smthrs_mcp::catalog::CatalogBuilder;
//!
//! let mut builder = CatalogBuilder::new(&smthrs_mcp::Limits::default());
//! let first = json!({
//!     "tools": [{ "name": "echo", "inputSchema": { "type": "object" } }],
//!     "nextCursor": "page-2"
//! });
//! assert_eq!(builder.add_page(first)?, Some("page-2".to_string()));
//! let second = json!({
//!     "tools": [{ "name": "add", "description": "Adds.", "inputSchema": { "type": "object" } }]
//! });
//! assert_eq!(builder.add_page(second)?, None);
//! let catalog = builder.finish();
//! assert_eq!(catalog.len(), 2);
//! assert_eq!(catalog.get("add").and_then(|tool| tool.description()), Some("Adds."));
//! # Ok::<(), smthrs_mcp::Error>(())
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::json_bounds::encoded_len_exceeds;
use crate::limits::Limits;
use crate::listing::{Cursors, encoded_len};
use crate::param_headers::{self, ParamSpec};
use crate::text::Forbidden;

/// One validated tool. Read-only: fields are private and reachable through
/// getters only, so a shared catalog cannot change underneath its readers.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    name: String,
    /// Its validated `x-mcp-header` annotations (2026-07-28 over HTTP only).
    param_specs: Vec<ParamSpec>,
    /// The object exactly as the server sent it (what a [`CatalogPin`](crate::pin::CatalogPin) digests).
    /// The other members are read from it: they were validated when the tool was
    /// built, and keeping one copy of each document halves a large catalog.
    as_sent: Map<String, Value>,
}

/// What [`Tool::input_schema`] would return for a tool built without one: never,
/// since a tool is only built once its `inputSchema` is validated.
static NO_SCHEMA: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

impl Tool {
    /// The tool object exactly as the server sent it, every member included
    /// (server-authored).
    pub fn as_sent(&self) -> &Map<String, Value> {
        &self.as_sent
    }

    /// The validated `x-mcp-header` annotations (empty unless the catalog was
    /// read for 2026-07-28 over HTTP).
    pub(crate) fn param_specs(&self) -> &[ParamSpec] {
        &self.param_specs
    }

    /// The tool's name, as the server sent it; it passed [`check_tool_name`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server's human-readable title, if it sent one (server-authored text).
    pub fn title(&self) -> Option<&str> {
        self.as_sent.get("title").and_then(Value::as_str)
    }

    /// The server's description, if it sent one (server-authored text).
    pub fn description(&self) -> Option<&str> {
        self.as_sent.get("description").and_then(Value::as_str)
    }

    /// The server's `inputSchema` document, carried by value. Its `type` is
    /// `"object"`.
    pub fn input_schema(&self) -> &Map<String, Value> {
        self.as_sent
            .get("inputSchema")
            .and_then(Value::as_object)
            .unwrap_or(&NO_SCHEMA)
    }

    /// The server's `outputSchema` document, if it sent one.
    pub fn output_schema(&self) -> Option<&Map<String, Value>> {
        self.as_sent.get("outputSchema").and_then(Value::as_object)
    }

    /// The server's `annotations` object, carried verbatim, if it sent one.
    pub fn annotations(&self) -> Option<&Value> {
        self.as_sent.get("annotations")
    }
}

/// The validated tool catalog of one session: tools in server order plus a name
/// index. Built once by [`CatalogBuilder`], never refreshed, with no interior
/// mutability; cloning copies it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Catalog {
    tools: Vec<Tool>,
    index: BTreeMap<String, usize>,
    /// Tools left out (their name as sent, and the rule broken).
    dropped: Vec<(String, &'static str)>,
}

impl Catalog {
    /// A catalog with no tools.
    pub fn empty() -> Catalog {
        Catalog::default()
    }

    /// The tools left out of the catalog and why (2026-07-28 over HTTP: an
    /// invalid `x-mcp-header` annotation). The names are server-authored.
    pub(crate) fn dropped(&self) -> impl Iterator<Item = (&str, &'static str)> {
        self.dropped.iter().map(|(name, why)| (name.as_str(), *why))
    }

    /// True when both catalogs hold the same tools, entry for entry, in order.
    pub(crate) fn same_tools_as(&self, other: &Catalog) -> bool {
        self.tools == other.tools
    }

    /// The tools, in the order the server listed them.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tool with exactly this name, if any.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// True when the catalog has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools, in server order.
    pub fn iter(&self) -> std::slice::Iter<'_, Tool> {
        self.tools.iter()
    }
}

impl<'a> IntoIterator for &'a Catalog {
    type Item = &'a Tool;
    type IntoIter = std::slice::Iter<'a, Tool>;

    fn into_iter(self) -> Self::IntoIter {
        self.tools.iter()
    }
}

/// Accumulates `tools/list` pages under the limits, then freezes them into a
/// [`Catalog`].
///
/// A page that fails validation adds nothing; the caller is expected to fail the
/// connection and drop the builder.
#[derive(Debug)]
pub struct CatalogBuilder {
    tools: Vec<Tool>,
    index: BTreeMap<String, usize>,
    cursors: Cursors,
    max_tools: usize,
    max_tool_name_bytes: usize,
    max_tool_document_bytes: usize,
    limits: Limits,
    param_headers: bool,
    dropped: Vec<(String, &'static str)>,
}

impl CatalogBuilder {
    /// 2026-07-28: a `nextCursor` of `""` is a cursor like any other (the page
    /// cap and the repeated-cursor rule still end the walk). Default: `false`,
    /// the legacy rule (a cursor must be non-empty).
    pub fn empty_cursor_continues(mut self, yes: bool) -> Self {
        self.cursors.empty_continues = yes;
        self
    }

    /// 2026-07-28 over HTTP: validate `x-mcp-header` annotations, dropping a tool
    /// with an invalid one (the others are kept). Default: `false`.
    pub fn param_headers(mut self, yes: bool) -> Self {
        self.param_headers = yes;
        self
    }

    /// A builder bounded by `limits` (`maxTools`, `maxToolNameBytes`,
    /// `maxToolDocumentBytes`, `maxCatalogPages`).
    pub fn new(limits: &Limits) -> Self {
        CatalogBuilder {
            tools: Vec::new(),
            index: BTreeMap::new(),
            cursors: Cursors::new(Limits::usize_of(limits.max_catalog_pages)),
            max_tools: Limits::usize_of(limits.max_tools),
            max_tool_name_bytes: Limits::usize_of(limits.max_tool_name_bytes),
            max_tool_document_bytes: Limits::usize_of(limits.max_tool_document_bytes),
            limits: *limits,
            param_headers: false,
            dropped: Vec::new(),
        }
    }

    /// Validates one `tools/list` result object and returns the next cursor to
    /// request, if any. The page is taken by value: each tool's object moves into
    /// its [`Tool`] as sent, without a copy.
    ///
    /// Fails with `invalid_response`, naming the rule and never quoting server text,
    /// when: the result is not an object; `tools` is not an array; an element is not
    /// an object; `name` is not a non-empty string or breaks a [`check_tool_name`]
    /// rule; a name repeats one already accepted (on any page); `inputSchema` is
    /// missing, not an object, or its `type` is not exactly `"object"`;
    /// `outputSchema` or `annotations` is present and not an object; `description`
    /// or `title` is present and not a string; the description's bytes plus the
    /// JSON-encoded `inputSchema` bytes exceed `maxToolDocumentBytes`; the total tool
    /// count would exceed `maxTools`; `nextCursor` is present and not a non-empty
    /// string; `nextCursor` repeats a cursor already returned; or
    /// `nextCursor` is present when this page is already the `maxCatalogPages`th.
    ///
    /// A member present with the value `null` is present: it is refused like any
    /// other value of the wrong type (see the [module docs](self)).
    ///
    /// The page is all or nothing: on failure nothing from it is kept.
    pub fn add_page(&mut self, result: Value) -> Result<Option<String>> {
        let page = self.cursors.pages() + 1;
        let fail = |rule: &str| Error::invalid_response(format!("tools/list page {page}: {rule}"));

        let Value::Object(mut result) = result else {
            return Err(fail("the result is not an object"));
        };
        let Some(Value::Array(entries)) = result.remove("tools") else {
            return Err(fail("tools is not an array"));
        };
        if entries.len() > self.max_tools.saturating_sub(self.tools.len()) {
            let listed = self.tools.len().saturating_add(entries.len());
            return Err(fail(&format!(
                "the catalog lists {listed} tools by this page; maxTools is {}",
                self.max_tools
            )));
        }

        let mut accepted: Vec<Tool> = Vec::with_capacity(entries.len());
        let mut dropped: Vec<(String, &'static str)> = Vec::new();
        // The names on this page so far; each becomes its tool's key in the index.
        let mut page_names: HashSet<String> = HashSet::with_capacity(entries.len());
        for (position, entry) in entries.into_iter().enumerate() {
            let tool = self
                .validate_entry(entry, |name| {
                    self.index.contains_key(name) || page_names.contains(name)
                })
                .map_err(|rule| fail(&format!("tools[{position}]: {rule}")))?;
            page_names.insert(tool.name.clone());
            if self.param_headers {
                match param_headers::annotations(tool.input_schema(), &self.limits) {
                    Ok(specs) => {
                        accepted.push(Tool {
                            param_specs: specs,
                            ..tool
                        });
                    }
                    Err(reason) => dropped.push((tool.name, reason)),
                }
                continue;
            }
            accepted.push(tool);
        }

        let next = self
            .cursors
            .next(result.get("nextCursor"), page, "the catalog")
            .map_err(|rule| fail(&rule))?;

        // Commit the page.
        self.cursors.commit(page, next.as_deref());
        for tool in accepted {
            let key = page_names
                .take(tool.name.as_str())
                .unwrap_or_else(|| tool.name.clone());
            self.index.insert(key, self.tools.len());
            self.tools.push(tool);
        }
        self.dropped.extend(dropped);
        Ok(next)
    }

    /// Tools accepted so far, and pages added.
    pub(crate) fn progress(&self) -> (usize, usize) {
        (self.tools.len(), self.cursors.pages())
    }

    /// Freezes the accepted tools into a [`Catalog`], in server order.
    pub fn finish(self) -> Catalog {
        Catalog {
            tools: self.tools,
            index: self.index,
            dropped: self.dropped,
        }
    }

    /// Validates one `tools` element, which becomes the tool; the error is the rule
    /// broken.
    fn validate_entry(
        &self,
        entry: Value,
        is_duplicate: impl Fn(&str) -> bool,
    ) -> std::result::Result<Tool, Cow<'static, str>> {
        let Value::Object(entry) = entry else {
            return Err("the entry is not an object".into());
        };
        let name = match entry.get("name") {
            Some(Value::String(name)) if !name.is_empty() => name,
            _ => return Err("name is not a non-empty string".into()),
        };
        if name.len() > self.max_tool_name_bytes {
            // Counts only: the name itself broke a rule, so it is never shown.
            return Err(format!(
                "the tool name is {} bytes; maxToolNameBytes is {}",
                name.len(),
                self.max_tool_name_bytes
            )
            .into());
        }
        check_tool_name(name, self.max_tool_name_bytes)?;
        if is_duplicate(name) {
            return Err("the tool name duplicates another tool's name".into());
        }
        let description =
            optional_string(&entry, "description").map_err(|()| "description is not a string")?;
        optional_string(&entry, "title").map_err(|()| "title is not a string")?;

        let input_value = entry.get("inputSchema").ok_or("inputSchema is missing")?;
        let input_schema = input_value
            .as_object()
            .ok_or("inputSchema is not an object")?;
        if input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err("inputSchema.type is not exactly \"object\"".into());
        }
        if entry
            .get("outputSchema")
            .is_some_and(|schema| !schema.is_object())
        {
            return Err("outputSchema is not an object".into());
        }
        if entry.get("annotations").is_some_and(|a| !a.is_object()) {
            return Err("annotations is not an object".into());
        }

        let description_bytes = description.map_or(0, str::len);
        let over = match self.max_tool_document_bytes.checked_sub(description_bytes) {
            Some(budget) => encoded_len_exceeds(input_value, budget),
            None => true,
        };
        if over {
            // The name passed every name rule, so it may be shown (escaped to
            // ASCII); the document's size is counted only on this path.
            let bytes = description_bytes.saturating_add(encoded_len(input_value));
            return Err(format!(
                "tool \"{}\" has a description plus inputSchema of {bytes} bytes; maxToolDocumentBytes is {}",
                name.escape_default(),
                self.max_tool_document_bytes
            )
            .into());
        }

        // The members were checked above; the tool keeps the entry alone.
        Ok(Tool {
            name: name.clone(),
            param_specs: Vec::new(),
            as_sent: entry,
        })
    }
}

/// An optional string member: absent is `None`; any other value than a string,
/// `null` included, is an error.
fn optional_string<'a>(
    entry: &'a Map<String, Value>,
    key: &str,
) -> std::result::Result<Option<&'a str>, ()> {
    match entry.get(key) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(()),
    }
}

/// Checks a tool name against the contract's name rules; the error is the rule
/// broken (crate-authored text, never the name).
///
/// Refused: the empty name; more than `max_bytes` UTF-8 bytes; exactly `.` or `..`;
/// `/`; a control character (Unicode Cc: U+0000-U+001F, U+007F-U+009F); a format
/// character (Unicode Cf, per Unicode 16.0); U+2028 or U+2029; U+FFFD, which is what
/// a lone UTF-16 surrogate becomes once parsed (see the module docs).
///
/// ```
/// use smthrs_mcp::catalog::check_tool_name;
///
/// assert!(check_tool_name("get_weather", 128).is_ok());
/// assert!(check_tool_name("files/read", 128).is_err());
/// assert!(check_tool_name("pay\u{202E}droW", 128).is_err());
/// ```
pub fn check_tool_name(name: &str, max_bytes: usize) -> std::result::Result<(), &'static str> {
    if name.is_empty() {
        return Err("the tool name is empty");
    }
    if name.len() > max_bytes {
        return Err("the tool name exceeds maxToolNameBytes");
    }
    if name == "." || name == ".." {
        return Err("the tool name is \".\" or \"..\"");
    }
    for c in name.chars() {
        if c == '/' {
            return Err("the tool name contains '/'");
        }
        if let Some(rule) = crate::text::forbidden_char(c) {
            return Err(match rule {
                Forbidden::Control => "the tool name contains a control character (Unicode Cc)",
                Forbidden::Format => "the tool name contains a format character (Unicode Cf)",
                Forbidden::Separator => {
                    "the tool name contains a line or paragraph separator (U+2028/U+2029)"
                }
                Forbidden::Replacement => {
                    "the tool name contains U+FFFD (a lone surrogate or a replacement character)"
                }
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
