//! The Skills extension in the session (SEP-2640, beyond-tools.md §5): the
//! `skills/list` walk, `skills/get`, and the reads of a skill's files, each
//! checked by [`crate::skills`] before anything is handed out.
//!
//! - **Gate.** Nothing is sent unless the server declared
//!   `capabilities.extensions["io.modelcontextprotocol/skills"]` (an object) and
//!   `resources` (the extension requires it, and files are read with
//!   `resources/read`): otherwise `missing_capability`, naming both.
//! - **Listing.** Walked page by page with the cursor rules of every list
//!   (`maxCatalogPages`, no repeated cursor, `""` continues in 2026-07-28); each
//!   entry validated as it arrives, at most `maxSkills`, no `uri` twice. A bad
//!   entry fails the listing (no silent skip). Nothing is read while listing.
//! - **Reads.** A file is read only if the held entry lists it (the unlisted
//!   check runs before anything is sent), with the entry's spelling of its URI,
//!   and its answer is checked in order: the matching contents item, size,
//!   SHA-256 digest and, for `SKILL.md`, the frontmatter against the entry. A
//!   reply may be a frame of up to `maxResourceBytes` (a skill file may be
//!   16 MiB), every other frame staying under `maxFrameBytes`.

use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;

use super::link::Link;
use super::negotiate::{ServerFacts, missing_capability};
use super::send::{Ask, send};
use crate::error::{Error, Result};
use crate::limits::Limits;
use crate::listing::Cursors;
use crate::skills::{
    SKILLS_EXTENSION_ID, Skill, SkillCheck, SkillLimits, SkillListing, VerifiedFile, check_listed,
    verify_read,
};

/// Fails with `missing_capability` unless the server offers the Skills
/// extension (and `resources`, which the extension requires).
pub(crate) fn require_skills(facts: &ServerFacts, server: &str) -> Result<()> {
    let declared = facts
        .capability("extensions")
        .and_then(|extensions| extensions.get(SKILLS_EXTENSION_ID))
        .is_some_and(Value::is_object);
    if !declared {
        return Err(missing_capability(
            server,
            "the Skills extension (io.modelcontextprotocol/skills)",
        ));
    }
    facts.require(server, "resources")
}

/// `skills/list` and `resources/read` parameters.
#[derive(Serialize)]
struct Page<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cursor: Option<&'a str>,
}

#[derive(Serialize)]
struct Address<'a> {
    uri: &'a str,
}

/// A server's skills ([`Client::list_skills`](crate::Client::list_skills)):
/// those whose entries passed every rule, in the server's order, and those
/// declined for a per-skill bound (`maxSkillFiles`, `maxSkillBytes`), each with
/// the error saying why; the listing stands without them (beyond-tools.md §5.6:
/// say why a skill is declined).
#[derive(Debug)]
#[non_exhaustive]
pub struct SkillList {
    /// The skills that may be loaded.
    pub skills: Vec<Skill>,
    /// One `invalid_response` per skill declined, naming its position and the
    /// bound.
    pub declined: Vec<Error>,
}

/// Walks `skills/list`: every entry validated, in the server's order; an entry
/// that breaks a rule fails the walk, one over a per-skill bound is declined.
pub(crate) async fn list(link: &Link) -> Result<SkillList> {
    let core = &link.core;
    let limits = SkillLimits::from(&core.limits);
    let mut listing = SkillListing::new(limits);
    let mut cursors = Cursors::new(Limits::usize_of(core.limits.max_catalog_pages));
    cursors.empty_continues = link.protocol.wire.get().is_modern();
    let mut skills = Vec::new();
    let mut declined = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let deadline = Instant::now() + core.limits.request_timeout();
        let page = send(
            link,
            &Ask::new("skills/list", deadline),
            &Page {
                cursor: cursor.as_deref(),
            },
        )
        .await?;
        let bad = |rule: &str| {
            Error::invalid_response(format!(
                "server \"{}\" answered skills/list with a page that breaks a rule: {rule}",
                core.server
            ))
        };
        let Value::Object(mut page) = page else {
            return Err(bad("the result is not an object"));
        };
        let number = cursors.pages() + 1;
        let next = cursors
            .next(page.get("nextCursor"), number, "the skill listing")
            .map_err(|rule| bad(&rule))?;
        let Some(Value::Array(entries)) = page.remove("skills") else {
            return Err(bad("skills is not an array"));
        };
        for entry in entries {
            match listing.entry(entry) {
                Ok(skill) => skills.push(skill.listed_by(core.server.clone())),
                Err(error) if error.check() == SkillCheck::Limit => declined.push(error.into()),
                Err(error) => return Err(error.into()),
            }
        }
        cursors.commit(number, next.as_deref());
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(SkillList { skills, declined }),
        }
    }
}

/// `skills/get` for `uri`: the entry, validated, naming exactly that URI.
pub(crate) async fn get(link: &Link, uri: &str) -> Result<Skill> {
    let core = &link.core;
    let deadline = Instant::now() + core.limits.request_timeout();
    let ask = Ask {
        invalid_params_is_not_found: true,
        ..Ask::new("skills/get", deadline)
    };
    let result = send(link, &ask, &Address { uri }).await?;
    let Value::Object(mut result) = result else {
        return Err(Error::invalid_response(format!(
            "server \"{}\" answered skills/get with a result that is not an object",
            core.server
        )));
    };
    let skill = result.remove("skill").unwrap_or(Value::Null);
    Skill::from_get(skill, uri, &SkillLimits::from(&core.limits))
        .map(|skill| skill.listed_by(core.server.clone()))
        .map_err(Error::from)
}

/// Reads one file of `skill` (`uri` as the caller names it) and verifies it;
/// `retrieved_before` is what earlier reads of the skill took (a dynamic
/// skill's bytes count against `maxSkillBytes`).
pub(crate) async fn read_file(
    link: &Link,
    skill: &Skill,
    uri: &str,
    retrieved_before: u64,
) -> Result<VerifiedFile> {
    let core = &link.core;
    let limits = SkillLimits::from(&core.limits);
    // The unlisted check, before anything is sent; the entry's spelling is sent.
    let listed = check_listed(skill, uri).map_err(Error::from)?;
    let deadline = Instant::now() + core.limits.request_timeout();
    let ask = Ask {
        name_header: Some(listed),
        invalid_params_is_not_found: true,
        rounds: true,
        max_reply_bytes: Some(reply_bound(&core.limits)),
        ..Ask::new("resources/read", deadline)
    };
    let result = send(link, &ask, &Address { uri: listed }).await?;
    let contents = match result {
        Value::Object(mut result) => result.remove("contents").unwrap_or(Value::Null),
        _ => Value::Null,
    };
    verify_read(skill, listed, contents, retrieved_before, &limits).map_err(Error::from)
}

/// The longest reply a skill file's read may be ([`Limits::read_frame_bytes`]:
/// room for a 16 MiB file as base64).
fn reply_bound(limits: &Limits) -> usize {
    Limits::usize_of(limits.read_frame_bytes())
}
