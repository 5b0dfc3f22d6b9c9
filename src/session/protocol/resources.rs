//! Resources (beyond-tools.md §1.1-§1.3): the `resources/list` and
//! `resources/templates/list` walks and `resources/read`, in the session's era
//! through [`super::send`].
//!
//! - Every request is gated on the server's `resources` capability (checked by
//!   the caller before anything is sent: `missing_capability`).
//! - A walk is whole and bounded (`maxResources`, `maxResourceTemplates`,
//!   `maxCatalogPages`, the entry rules of [`crate::resources`]); a page that
//!   breaks a rule fails it.
//! - A read is checked by [`ReadResult::from_value`] (`maxResourceContents`,
//!   `maxResourceBytes`, strict base64 before decoding). 2026-07-28 answers
//!   `input_required` in rounds as `tools/call` does and sends `Mcp-Name: <uri>`
//!   over HTTP. Its reply may be a frame of up to the larger of
//!   `maxResourceBytes` and `maxFrameBytes` (Q3): the only request that admits
//!   a frame past `maxFrameBytes`.
//! - `-32002` (either era) and `-32602` answering a read are `not_found`.
//!
//! A URI is read only with `resources/read` on the server that listed it:
//! nothing here dereferences a scheme.

use serde::Serialize;
use tokio::time::Instant;

use super::link::Link;
use super::send::{self, Ask, Listing};
use crate::content::{ContentBounds, ReadResult};
use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::resources::{Resource, ResourceTemplate};

/// Walks `resources/list`.
pub(crate) async fn list(link: &Link) -> Result<Listing<Resource>> {
    send::walk(link).await
}

/// Walks `resources/templates/list`.
pub(crate) async fn templates(link: &Link) -> Result<Listing<ResourceTemplate>> {
    send::walk(link).await
}

#[derive(Serialize)]
struct ReadParams<'a> {
    uri: &'a str,
}

/// Reads `uri` (checked against the URI rules first: a caller's mistake is
/// `protocol_error` and nothing is sent).
pub(crate) async fn read(link: &Link, uri: &str) -> Result<ReadResult> {
    let limits = &link.core.limits;
    crate::uri::check_uri(uri, Limits::usize_of(limits.max_uri_bytes), "maxUriBytes")
        .map_err(|rule| Error::protocol(format!("the uri to read is not a valid uri: {rule}")))?;
    let ask = Ask {
        name_header: Some(uri),
        invalid_params_is_not_found: true,
        rounds: true,
        max_reply_bytes: Some(Limits::usize_of(limits.read_frame_bytes())),
        ..Ask::new("resources/read", Instant::now() + limits.request_timeout())
    };
    let result = send::send(link, &ask, &ReadParams { uri }).await?;
    ReadResult::from_value(result, &ContentBounds::from(limits))
}
