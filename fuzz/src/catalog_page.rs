//! Catalog validation (`catalog::CatalogBuilder::add_page`): the `tools/list`
//! results a server sends.
//!
//! Input: four bytes of limits (`maxTools` 1..=16, `maxToolNameBytes` 1..=48,
//! `maxToolDocumentBytes` 1..=1024, `maxCatalogPages` 1..=6), then one JSON page per
//! line. Lines that are not JSON are skipped. Properties:
//!
//! - never a panic;
//! - each page is accepted exactly when an independent re-implementation of the
//!   contract's rules (names, uniqueness across pages, entry shape, document bytes,
//!   `maxTools`, cursors, `maxCatalogPages`; a member sent as `null` is present and
//!   must have its type) accepts it, and the returned cursor is
//!   the page's `nextCursor`;
//! - a refused page keeps nothing (all or nothing), so the final catalog is exactly
//!   the tools of the accepted pages, in server order, within every bound;
//! - a refusal is `invalid_response` and its message never quotes server text but
//!   a tool name that passed every name rule (the document-bytes refusal names its
//!   tool, escaped to ASCII).

use std::collections::HashSet;

use serde_json::Value;
use smthrs_mcp::catalog::CatalogBuilder;
use smthrs_mcp::fuzzing::parse_value;
use smthrs_mcp::{ErrorKind, Limits};

use super::util::forbidden_char;

struct Model {
    names: Vec<String>,
    cursors: HashSet<String>,
    pages: usize,
    max_tools: usize,
    max_name: usize,
    max_doc: usize,
    max_pages: usize,
}

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    if data.len() < 4 {
        return;
    }
    let mut limits = Limits::default();
    limits.max_tools = 1 + u64::from(data[0] % 16);
    limits.max_tool_name_bytes = 1 + u64::from(data[1] % 48);
    limits.max_tool_document_bytes = 1 + u64::from(data[2]) * 4;
    limits.max_catalog_pages = 1 + u64::from(data[3] % 6);
    let mut model = Model {
        names: Vec::new(),
        cursors: HashSet::new(),
        pages: 0,
        max_tools: limits.max_tools as usize,
        max_name: limits.max_tool_name_bytes as usize,
        max_doc: limits.max_tool_document_bytes as usize,
        max_pages: limits.max_catalog_pages as usize,
    };
    let mut builder = CatalogBuilder::new(&limits);
    for line in data[4..].split(|&b| b == b'\n') {
        let Ok(page) = parse_value(line) else {
            continue;
        };
        let expected = model.accept(&page);
        let got = builder.add_page(page.clone());
        match (&got, &expected) {
            (Ok(cursor), Some((want, _))) => assert_eq!(cursor, want),
            (Err(error), None) => {
                assert_eq!(error.kind(), ErrorKind::InvalidResponse);
                assert_quotes_nothing(&error.to_string(), &page, model.max_name);
                assert_quotes_nothing(&format!("{error:?}"), &page, model.max_name);
            }
            _ => panic!("add_page gave {got:?}, the reference {expected:?}"),
        }
        if let Some((cursor, names)) = expected {
            model.pages += 1;
            model.names.extend(names);
            match cursor {
                Some(cursor) => {
                    model.cursors.insert(cursor);
                }
                // The walk ends, as the engine ends it.
                None => break,
            }
        }
    }
    let catalog = builder.finish();
    let names: Vec<&str> = catalog.iter().map(|t| t.name()).collect();
    assert_eq!(names, model.names);
    assert!(catalog.len() <= model.max_tools);
    assert!(model.pages <= model.max_pages);
    for tool in catalog.iter() {
        assert!(name_ok(tool.name(), model.max_name));
        assert_eq!(
            catalog.get(tool.name()).map(|t| t.name()),
            Some(tool.name())
        );
        let schema = serde_json::to_vec(&Value::Object(tool.input_schema().clone()))
            .expect("a schema serializes");
        assert!(tool.description().map_or(0, str::len) + schema.len() <= model.max_doc);
        assert_eq!(
            tool.input_schema().get("type"),
            Some(&Value::from("object"))
        );
    }
}

impl Model {
    /// `Some((cursor, names))` when the page must be accepted.
    #[allow(clippy::type_complexity)]
    fn accept(&self, page: &Value) -> Option<(Option<String>, Vec<String>)> {
        let page_no = self.pages + 1;
        let tools = page.as_object()?.get("tools")?.as_array()?;
        if self.names.len() + tools.len() > self.max_tools {
            return None;
        }
        let mut names: Vec<String> = Vec::new();
        for entry in tools {
            let entry = entry.as_object()?;
            let name = entry.get("name")?.as_str()?;
            if !name_ok(name, self.max_name)
                || self.names.iter().any(|n| n == name)
                || names.iter().any(|n| n == name)
            {
                return None;
            }
            // A member sent as `null` is present: it must have its type.
            let text = |key: &str| match entry.get(key) {
                None => Some(None),
                Some(Value::String(s)) => Some(Some(s.len())),
                Some(_) => None,
            };
            let description = text("description")?;
            text("title")?;
            let schema = entry.get("inputSchema")?;
            if schema.as_object()?.get("type") != Some(&Value::from("object")) {
                return None;
            }
            for key in ["outputSchema", "annotations"] {
                if !matches!(entry.get(key), None | Some(Value::Object(_))) {
                    return None;
                }
            }
            let encoded = serde_json::to_vec(schema).ok()?.len();
            if description.unwrap_or(0) + encoded > self.max_doc {
                return None;
            }
            names.push(name.to_owned());
        }
        let cursor = match page.get("nextCursor") {
            None => None,
            Some(Value::String(c)) if !c.is_empty() => {
                if self.cursors.contains(c) || page_no >= self.max_pages {
                    return None;
                }
                Some(c.clone())
            }
            Some(_) => return None,
        };
        Some((cursor, names))
    }
}

/// The name rules of "Bound an untrusted server", written out.
fn name_ok(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name != "."
        && name != ".."
        && name.chars().all(|c| c != '/' && !forbidden_char(c))
}

/// The message may not contain server text. Crate messages are ASCII made of
/// words, digits and a little punctuation; server strings carrying any other
/// character must not appear, except a string that is a valid tool name (a tool
/// that passed every name rule may be named).
fn assert_quotes_nothing(message: &str, page: &Value, max_name: usize) {
    assert!(message.is_ascii(), "{message}");
    let mut strings = Vec::new();
    collect_strings(page, &mut strings);
    for s in strings {
        if name_ok(s, max_name) {
            continue;
        }
        let marked = s
            .chars()
            .any(|c| !c.is_ascii() || "@#$%^&*~|<>;!?`=".contains(c));
        if marked && s.len() >= 2 {
            assert!(!message.contains(s.as_str()), "{message} quotes {s:?}");
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
