//! Resources and resource templates as servers list them (beyond-tools.md §1.1,
//! §1.2, §1.4), validated before any of it is kept.
//!
//! A [`Resource`] is an address (`uri`) with a label and hints; a
//! [`ResourceTemplate`] is an RFC 6570 template of such addresses. Both are
//! server-authored, shown to a person choosing what to read, and so bounded
//! and checked like tool entries:
//!
//! - **`uri`** / **`uriTemplate`**: the URI rules of §0.5 (`maxUriBytes`, a
//!   scheme first, no control, format, whitespace or separator character); a
//!   template also follows RFC 6570 (at most 32 expressions, 32 variables in
//!   each). The URI is the identity: it is unique in a listing
//!   ([`ListBuilder`](crate::listing::ListBuilder)), compared byte for byte, and
//!   kept as the server spelled it. A scheme never authorises a local action:
//!   nothing in this crate opens, fetches or resolves it.
//! - **`name`**: a label, non-empty, at most [`MAX_LABEL_BYTES`], under the
//!   display-text rules (no Cc, Cf, U+2028/2029 or lone surrogate); it may
//!   repeat. **`title`** follows the same character rules.
//! - **`mimeType`**: `type/subtype *(;parameter)` with RFC 6838 names, at most
//!   [`MAX_MIME_TYPE_BYTES`]; only a hint.
//! - **`size`**: a non-negative safe integer, a hint only: never allocate from
//!   it, never fail a read whose length differs.
//! - **`annotations`** ([`Annotations`]): `audience` ⊆ {user, assistant},
//!   `priority` in [0, 1], `lastModified` kept as a string.
//! - **`icons`** ([`Icon`]): at most [`MAX_ICONS`], each `src` at most
//!   [`MAX_ICON_SRC_BYTES`], never fetched.
//! - **`_meta`**: an object, kept opaque.
//! - **The entry**: its compact JSON bytes, without its `uri` (or
//!   `uriTemplate`), at most `maxEntryDocumentBytes`; icons and `_meta` count.
//!
//! Members the schema does not name are ignored and not kept. A member present
//! as `null` is refused like any other value of the wrong type.

mod expand;
mod hints;
pub(crate) mod members;

use serde::Serialize;
use serde_json::{Map, Value};

pub use hints::{
    Annotations, Icon, MAX_ICON_SRC_BYTES, MAX_ICONS, MAX_MIME_TYPE_BYTES, Role, Theme,
};
pub use members::MAX_LABEL_BYTES;

pub(crate) use hints::{mime_type_of, take_icons, take_mime_type};

use crate::listing::{ListBounds, ListEntry, sealed};
use members::{check_document, take_label, take_meta, take_string, take_title, take_uri};

/// One resource of a `resources/list` walk, or the target of a `resource_link`
/// content block. Every text member is server-authored.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// The address, as the server spelled it; read it only with
    /// `resources/read` on the server that listed it.
    pub uri: String,
    /// A label (not an identity: it may repeat).
    pub name: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description (free text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The media type, a hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The raw size in bytes, a hint only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Hints for the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons, never fetched by this crate.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// `_meta`, opaque.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl Resource {
    /// Validates a resource object (a listing entry, or a `resource_link` block
    /// with its `type` taken out); the error is the rule broken.
    pub(crate) fn from_object(
        mut entry: Map<String, Value>,
        max_uri_bytes: usize,
        max_entry_document_bytes: usize,
    ) -> Result<Resource, String> {
        let uri = take_uri(&mut entry, "uri", max_uri_bytes)?;
        let mut entry = check_document(entry, max_entry_document_bytes, " without its uri")?;
        let name = take_label(&mut entry)?;
        let title = take_title(&mut entry)?;
        let description = take_string(&mut entry, "description")?;
        let mime_type = take_mime_type(&mut entry)?;
        let size = members::take_safe_integer(&mut entry, "size")?;
        let annotations = entry
            .get("annotations")
            .map(Annotations::parse)
            .transpose()?;
        let icons = take_icons(&mut entry)?;
        let meta = take_meta(&mut entry)?;
        Ok(Resource {
            uri,
            name,
            title,
            description,
            mime_type,
            size,
            annotations,
            icons,
            meta,
        })
    }
}

impl sealed::Entry for Resource {
    const METHOD: &'static str = "resources/list";
    const CAPABILITY: &'static str = "resources";
    const MEMBER: &'static str = "resources";
    const PLURAL: &'static str = "resources";
    const OPTION: &'static str = "maxResources";
    const DUPLICATE: &'static str = "the uri duplicates another resource's uri";

    fn cap(bounds: &ListBounds) -> usize {
        bounds.max_resources
    }

    fn parse(entry: Value, bounds: &ListBounds) -> Result<Self, String> {
        let Value::Object(entry) = entry else {
            return Err("the entry is not an object".to_owned());
        };
        Resource::from_object(entry, bounds.max_uri_bytes, bounds.max_entry_document_bytes)
    }

    fn key(&self) -> &str {
        &self.uri
    }
}

impl ListEntry for Resource {}

/// One template of a `resources/templates/list` walk: the addresses it names
/// are expanded by the host (with values from a person or a model) and read
/// with `resources/read`; an expansion is never a safe path.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The RFC 6570 template, as the server spelled it.
    pub uri_template: String,
    /// A label (it may repeat).
    pub name: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A description (free text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The media type of every match, a hint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Hints for the host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    /// Icons, never fetched by this crate.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    /// `_meta`, opaque.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl sealed::Entry for ResourceTemplate {
    const METHOD: &'static str = "resources/templates/list";
    const CAPABILITY: &'static str = "resources";
    const MEMBER: &'static str = "resourceTemplates";
    const PLURAL: &'static str = "resource templates";
    const OPTION: &'static str = "maxResourceTemplates";
    const DUPLICATE: &'static str = "the uriTemplate duplicates another template's uriTemplate";

    fn cap(bounds: &ListBounds) -> usize {
        bounds.max_resource_templates
    }

    fn parse(entry: Value, bounds: &ListBounds) -> Result<Self, String> {
        let Value::Object(mut entry) = entry else {
            return Err("the entry is not an object".to_owned());
        };
        let uri_template = members::take_required_string(&mut entry, "uriTemplate")?;
        crate::uri::check_uri_template(&uri_template, bounds.max_uri_bytes, "maxUriBytes")?;
        let mut entry = check_document(
            entry,
            bounds.max_entry_document_bytes,
            " without its uriTemplate",
        )?;
        let name = take_label(&mut entry)?;
        let title = take_title(&mut entry)?;
        let description = take_string(&mut entry, "description")?;
        let mime_type = take_mime_type(&mut entry)?;
        let annotations = entry
            .get("annotations")
            .map(Annotations::parse)
            .transpose()?;
        let icons = take_icons(&mut entry)?;
        let meta = take_meta(&mut entry)?;
        Ok(ResourceTemplate {
            uri_template,
            name,
            title,
            description,
            mime_type,
            annotations,
            icons,
            meta,
        })
    }

    fn key(&self) -> &str {
        &self.uri_template
    }
}

impl ListEntry for ResourceTemplate {}

#[cfg(test)]
mod tests;
