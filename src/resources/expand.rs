//! Expanding a server's resource template (RFC 6570, levels 1 to 4) with the
//! host's values, through iri-string's template processor: every value
//! percent-encoded as its operator says (non-ASCII as UTF-8 octets), the
//! output written through a byte bound so that long values repeated across
//! expressions cannot grow it past the bound.

use std::collections::BTreeMap;
use std::fmt::Write;

use iri_string::spec::UriSpec;
use iri_string::template::UriTemplateStr;
use iri_string::template::simple_context::{SimpleContext, Value};

use super::ResourceTemplate;
use crate::error::{Error, Result};
use crate::uri::check_uri;

/// A `String` that refuses to grow past `max` bytes.
struct Bounded {
    out: String,
    max: usize,
}

impl Write for Bounded {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.out.len().saturating_add(s.len()) > self.max {
            return Err(std::fmt::Error);
        }
        self.out.push_str(s);
        Ok(())
    }
}

impl ResourceTemplate {
    /// The URI this template names with `values` (RFC 6570: a variable
    /// without a value is undefined and expands to nothing, as the RFC says),
    /// at most `max_bytes` long (pass the session's `maxUriBytes`). Read it with
    /// [`Client::read_resource`](crate::Client::read_resource) on the server that
    /// listed the template; the expansion is an address on that server, never a
    /// path or a URL to fetch.
    ///
    /// Fails with `protocol_error` when the template is not one the processor
    /// accepts, the expansion would pass `max_bytes` (the message names the
    /// bound, never a value), or the expansion breaks the URI rules (it is
    /// empty, or lost its scheme).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use smthrs_mcp::resources::ResourceTemplate;
    /// # fn template() -> ResourceTemplate {
    /// #     let listing = serde_json::json!({"resourceTemplates": [
    /// #         {"uriTemplate": "file:///logs/{day}{?level}", "name": "logs"}]});
    /// #     let mut walk = smthrs_mcp::listing::ListBuilder::<ResourceTemplate>::new(&Default::default());
    /// #     walk.add_page(listing).unwrap();
    /// #     walk.finish().remove(0)
    /// # }
    /// let template = template(); // from Client::list_resource_templates
    /// let values = BTreeMap::from([
    ///     ("day".to_owned(), "2026-12-07".to_owned()),
    ///     ("level".to_owned(), "warn & up".to_owned()),
    /// ]);
    /// let uri = template.expand(&values, 4096)?;
    /// assert_eq!(uri, "file:///logs/2026-12-07?level=warn%20%26%20up");
    /// # Ok::<(), smthrs_mcp::Error>(())
    /// ```
    pub fn expand(&self, values: &BTreeMap<String, String>, max_bytes: usize) -> Result<String> {
        let template = UriTemplateStr::new(&self.uri_template).map_err(|_| {
            Error::protocol("the resource template is not an RFC 6570 template this crate expands")
        })?;
        let mut context = SimpleContext::new();
        for (name, value) in values {
            context.insert(name.as_str(), Value::String(value.clone()));
        }
        let expanded = template.expand::<UriSpec, _>(&context).map_err(|_| {
            Error::protocol("the resource template could not be expanded with these values")
        })?;
        let mut out = Bounded {
            out: String::new(),
            max: max_bytes,
        };
        write!(out, "{expanded}").map_err(|_| {
            Error::protocol(format!(
                "the expanded resource template would be longer than {max_bytes} bytes"
            ))
        })?;
        check_uri(&out.out, max_bytes, "maxUriBytes").map_err(|rule| {
            Error::protocol(format!(
                "the expanded resource template is not a valid uri: {rule}"
            ))
        })?;
        Ok(out.out)
    }
}
