//! The walk of a paginated list a server sends (`resources/list`,
//! `resources/templates/list`, `prompts/list`; beyond-tools.md §0.3), the rules
//! of the `tools/list` walk ([`CatalogBuilder`](crate::catalog::CatalogBuilder))
//! applied to every list kind:
//!
//! - **Cursors** are opaque. Legacy: a `nextCursor` must be a non-empty string.
//!   2026-07-28: `""` continues the walk
//!   ([`ListBuilder::empty_cursor_continues`]). A cursor that repeats one already
//!   seen, or a walk past `maxCatalogPages` pages, fails: either would otherwise
//!   never end.
//! - **Caps.** Each list kind has its own item cap (`maxResources`,
//!   `maxResourceTemplates`, `maxPrompts`); a walk past it fails rather than
//!   being truncated.
//! - **Identity.** A resource's `uri`, a template's `uriTemplate` and a prompt's
//!   `name` are unique across the walk: a duplicate fails it, as a duplicate tool
//!   name fails the catalog. Two entries for one address are ambiguous to the
//!   person the listing is shown to.
//! - **Entries** follow their kind's rules ([`Resource`](crate::resources::Resource),
//!   [`ResourceTemplate`](crate::resources::ResourceTemplate),
//!   [`Prompt`](crate::prompts::Prompt)).
//!
//! Every failure is `invalid_response`, naming the method, the page, the entry's
//! position and the rule broken; never server-authored text. A page is all or
//! nothing, and a failed page is meant to fail the walk: the caller drops the
//! builder (a truncated listing is never returned).
//!
//! ```
//! use serde_json::json;
//! use smthrs_mcp::listing::{ListBounds, ListBuilder};
//! use smthrs_mcp::resources::Resource;
//!
//! let mut walk = ListBuilder::<Resource>::new(&ListBounds::default());
//! let first = json!({
//!     "resources": [{ "uri": "file:///project/src/main.rs", "name": "main.rs" }],
//!     "nextCursor": "next"
//! });
//! assert_eq!(walk.add_page(first)?, Some("next".to_owned()));
//! let second = json!({ "resources": [{ "uri": "file:///project/README.md", "name": "README" }] });
//! assert_eq!(walk.add_page(second)?, None);
//! let resources = walk.finish();
//! assert_eq!(resources[1].uri, "file:///project/README.md");
//! # Ok::<(), smthrs_mcp::Error>(())
//! ```

use std::collections::HashSet;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::limits::Limits;

/// The bounds of a list walk and of its entries. [`Default`] holds the proposed
/// defaults of the matching `Limits` options (named on each field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListBounds {
    /// Resources across one `resources/list` walk (`maxResources`, 1024).
    pub max_resources: usize,
    /// Templates across one `resources/templates/list` walk
    /// (`maxResourceTemplates`, 256).
    pub max_resource_templates: usize,
    /// Prompts across one `prompts/list` walk (`maxPrompts`, 256).
    pub max_prompts: usize,
    /// Arguments of one prompt (`maxPromptArguments`, 32).
    pub max_prompt_arguments: usize,
    /// UTF-8 bytes of a prompt or argument name (`maxToolNameBytes`, 128).
    pub max_name_bytes: usize,
    /// UTF-8 bytes of a `uri` or `uriTemplate` (`maxUriBytes`, 4096).
    pub max_uri_bytes: usize,
    /// The compact JSON bytes of one entry, without its `uri` or `uriTemplate`
    /// (`maxEntryDocumentBytes`, 65536).
    pub max_entry_document_bytes: usize,
    /// Pages walked while following cursors (`maxCatalogPages`, 32).
    pub max_pages: usize,
}

impl Default for ListBounds {
    fn default() -> Self {
        ListBounds::from(&Limits::default())
    }
}

/// The session's [`Limits`] (already validated), as the list walks read them.
impl From<&Limits> for ListBounds {
    fn from(limits: &Limits) -> ListBounds {
        ListBounds {
            max_resources: Limits::usize_of(limits.max_resources),
            max_resource_templates: Limits::usize_of(limits.max_resource_templates),
            max_prompts: Limits::usize_of(limits.max_prompts),
            max_prompt_arguments: Limits::usize_of(limits.max_prompt_arguments),
            max_name_bytes: Limits::usize_of(limits.max_tool_name_bytes),
            max_uri_bytes: Limits::usize_of(limits.max_uri_bytes),
            max_entry_document_bytes: Limits::usize_of(limits.max_entry_document_bytes),
            max_pages: Limits::usize_of(limits.max_catalog_pages),
        }
    }
}

/// A kind of list entry a [`ListBuilder`] walks: [`Resource`](crate::resources::Resource),
/// [`ResourceTemplate`](crate::resources::ResourceTemplate) or
/// [`Prompt`](crate::prompts::Prompt). Sealed.
pub trait ListEntry: sealed::Entry {}

pub(crate) mod sealed {
    use serde_json::Value;

    use super::ListBounds;

    /// What the walk needs to know of an entry kind.
    pub trait Entry: Sized {
        /// The list method, for messages (`"resources/list"`).
        const METHOD: &'static str;
        /// The server capability the method needs (`"resources"`).
        const CAPABILITY: &'static str;
        /// The result member holding the entries (`"resources"`).
        const MEMBER: &'static str;
        /// What the entries are, plural, for the cap message (`"resources"`).
        const PLURAL: &'static str;
        /// The option that caps the count (`"maxResources"`).
        const OPTION: &'static str;
        /// The rule a duplicate breaks (`"the uri duplicates another resource's uri"`).
        const DUPLICATE: &'static str;

        /// The cap, from the bounds.
        fn cap(bounds: &ListBounds) -> usize;

        /// Validates one entry; the error is the rule broken.
        fn parse(entry: Value, bounds: &ListBounds) -> Result<Self, String>;

        /// The entry's identity in the walk (compared byte for byte).
        fn key(&self) -> &str;
    }
}

/// Accumulates the pages of one list walk under [`ListBounds`].
///
/// A page that fails adds nothing; the caller is expected to fail the walk and
/// drop the builder.
#[derive(Debug)]
pub struct ListBuilder<T> {
    entries: Vec<T>,
    keys: HashSet<String>,
    cursors: Cursors,
    bounds: ListBounds,
}

impl<T: ListEntry> ListBuilder<T> {
    /// A walk bounded by `bounds`.
    pub fn new(bounds: &ListBounds) -> Self {
        ListBuilder {
            entries: Vec::new(),
            keys: HashSet::new(),
            cursors: Cursors::new(bounds.max_pages),
            bounds: *bounds,
        }
    }

    /// 2026-07-28: a `nextCursor` of `""` is a cursor like any other (the page
    /// cap and the repeated-cursor rule still end the walk). Default: `false`,
    /// the legacy rule (a cursor must be non-empty).
    #[must_use]
    pub fn empty_cursor_continues(mut self, yes: bool) -> Self {
        self.cursors.empty_continues = yes;
        self
    }

    /// Validates one list result object and returns the next cursor to request,
    /// if any. The page is taken by value: its entries move into the listing.
    ///
    /// Fails with `invalid_response` when: the result is not an object; the
    /// entries member is not an array; the walk would pass its item cap; an entry
    /// breaks its kind's rules; an entry's identity repeats one already accepted
    /// (on any page); or `nextCursor` is present and not a non-empty string
    /// (`""` allowed by [`empty_cursor_continues`](Self::empty_cursor_continues)),
    /// repeats a cursor already returned, or comes on the `maxCatalogPages`th
    /// page. Members other than the entries and `nextCursor` (the 2026-07-28
    /// `resultType`, `ttlMs`, `cacheScope`, `_meta`) are the caller's to read.
    pub fn add_page(&mut self, result: Value) -> Result<Option<String>> {
        let page = self.cursors.pages() + 1;
        let fail =
            |rule: &str| Error::invalid_response(format!("{} page {page}: {rule}", T::METHOD));

        let Value::Object(mut result) = result else {
            return Err(fail("the result is not an object"));
        };
        let Some(Value::Array(items)) = result.remove(T::MEMBER) else {
            return Err(fail(&format!("{} is not an array", T::MEMBER)));
        };
        let cap = T::cap(&self.bounds);
        if items.len() > cap.saturating_sub(self.entries.len()) {
            let listed = self.entries.len().saturating_add(items.len());
            return Err(fail(&format!(
                "the server lists {listed} {} by this page; {} is {cap}",
                T::PLURAL,
                T::OPTION
            )));
        }

        let mut accepted: Vec<T> = Vec::with_capacity(items.len());
        let mut page_keys: HashSet<String> = HashSet::with_capacity(items.len());
        for (position, item) in items.into_iter().enumerate() {
            let at = |rule: &str| fail(&format!("{}[{position}]: {rule}", T::MEMBER));
            let entry = T::parse(item, &self.bounds).map_err(|rule| at(&rule))?;
            let key = entry.key();
            if self.keys.contains(key) || !page_keys.insert(key.to_owned()) {
                return Err(at(T::DUPLICATE));
            }
            accepted.push(entry);
        }
        let next = self
            .cursors
            .next(result.get("nextCursor"), page, "the listing")
            .map_err(|rule| fail(&rule))?;

        // Commit the page.
        self.cursors.commit(page, next.as_deref());
        self.keys.extend(page_keys);
        self.entries.extend(accepted);
        Ok(next)
    }

    /// The entries accepted so far, in server order.
    pub fn entries(&self) -> &[T] {
        &self.entries
    }

    /// Pages added so far.
    pub fn pages(&self) -> usize {
        self.cursors.pages()
    }

    /// The entries of the walk, in server order.
    pub fn finish(self) -> Vec<T> {
        self.entries
    }
}

/// The cursor state of one walk: the cursors seen, the pages added, the page
/// cap, and the era's rule for `""`.
#[derive(Debug)]
pub(crate) struct Cursors {
    seen: HashSet<String>,
    pages: usize,
    max_pages: usize,
    pub(crate) empty_continues: bool,
}

impl Cursors {
    /// A walk of at most `max_pages` pages, with the legacy cursor rule.
    pub(crate) fn new(max_pages: usize) -> Self {
        Cursors {
            seen: HashSet::new(),
            pages: 0,
            max_pages,
            empty_continues: false,
        }
    }

    /// Pages committed so far.
    pub(crate) fn pages(&self) -> usize {
        self.pages
    }

    /// The cursor `next_cursor` (a page's `nextCursor` member) names for page
    /// `page`, checked but not recorded; the error is the rule broken. `noun`
    /// names the walk in the page-cap message (`"the catalog"`).
    pub(crate) fn next(
        &self,
        next_cursor: Option<&Value>,
        page: usize,
        noun: &str,
    ) -> std::result::Result<Option<String>, String> {
        match next_cursor {
            None => Ok(None),
            Some(Value::String(cursor)) if !cursor.is_empty() || self.empty_continues => {
                if self.seen.contains(cursor) {
                    return Err("nextCursor repeats a cursor already seen".to_owned());
                }
                if page >= self.max_pages {
                    return Err(format!(
                        "{noun} has more than {0} pages; maxCatalogPages is {0}",
                        self.max_pages
                    ));
                }
                Ok(Some(cursor.clone()))
            }
            Some(_) => Err("nextCursor is not a non-empty string".to_owned()),
        }
    }

    /// Records page `page` and the cursor it named.
    pub(crate) fn commit(&mut self, page: usize, next: Option<&str>) {
        self.pages = page;
        if let Some(cursor) = next {
            self.seen.insert(cursor.to_owned());
        }
    }
}

/// The length of `value`'s compact JSON encoding, counted without building it
/// (for messages; bound checks use
/// [`encoded_len_exceeds`](crate::json_bounds::encoded_len_exceeds), which
/// stops at the budget).
pub(crate) fn encoded_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests;
