//! Verification on read (beyond-tools.md §5.4): the unlisted check before a
//! read is sent, then, on the `resources/read` answer, the matching contents
//! item, its raw bytes, and the size, digest and frontmatter checks, in that
//! order. Also relative references (§5.4 "Further rules").

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::entry::{Skill, SkillFile, SkillResources};
use super::frontmatter;
use super::path::{self, Key};
use super::{SkillCheck, SkillError, SkillLimits};
use crate::content::strict_base64;
use crate::limits::Limits;

/// A skill file that passed every check that applies to it. `Debug` prints its
/// URI, length and flags, never its bytes (server-authored content).
#[derive(Clone, PartialEq, Eq)]
pub struct VerifiedFile {
    uri: String,
    body: Body,
    verified: bool,
    skill_md: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Body {
    Text(String),
    Blob(Vec<u8>),
}

impl VerifiedFile {
    /// The URI read, as the entry spells it (for a dynamic skill, as requested).
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The raw bytes: the UTF-8 of `text`, or the decoded `blob`.
    pub fn bytes(&self) -> &[u8] {
        match &self.body {
            Body::Text(text) => text.as_bytes(),
            Body::Blob(bytes) => bytes,
        }
    }

    /// The bytes, owned.
    pub fn into_bytes(self) -> Vec<u8> {
        match self.body {
            Body::Text(text) => text.into_bytes(),
            Body::Blob(bytes) => bytes,
        }
    }

    /// The text, when the server sent the file as `text`.
    pub fn text(&self) -> Option<&str> {
        match &self.body {
            Body::Text(text) => Some(text),
            Body::Blob(_) => None,
        }
    }

    /// True when the size and digest were checked against the entry; false for
    /// a dynamic skill's file, which has no integrity.
    pub fn is_verified(&self) -> bool {
        self.verified
    }

    /// True when this is the skill's own `SKILL.md`, whose frontmatter was
    /// checked against the entry's.
    pub fn is_skill_md(&self) -> bool {
        self.skill_md
    }
}

impl std::fmt::Debug for VerifiedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifiedFile")
            .field("uri", &self.uri)
            .field("bytes", &self.bytes().len())
            .field("verified", &self.verified)
            .field("skill_md", &self.skill_md)
            .finish()
    }
}

/// The unlisted check, decided before anything is sent: the URI a read of
/// `uri` must request, as the entry spells it (percent-encoding differences
/// and dot segments aside, `uri` must name a listed file). For a dynamic skill,
/// which lists nothing, `uri` must lie within the skill's root and is returned
/// as given.
///
/// Fails with [`SkillCheck::Unlisted`].
pub fn check_listed<'a>(skill: &'a Skill, uri: &'a str) -> Result<&'a str, SkillError> {
    target(skill, uri).map(|target| target.file.map_or(uri, |(_, file)| file.uri()))
}

/// What a requested URI names in a held skill.
struct Target<'a> {
    key: Key,
    /// The listed file and its 1-based position; `None` for a dynamic skill.
    file: Option<(usize, &'a SkillFile)>,
}

fn target<'a>(skill: &'a Skill, uri: &str) -> Result<Target<'a>, SkillError> {
    let unlisted = || {
        SkillError::new(
            SkillCheck::Unlisted,
            format!(
                "{}: the requested file is not listed in the held entry (unlisted check)",
                skill.label()
            ),
        )
    };
    let key = Key::of(uri).ok_or_else(unlisted)?;
    let file = match skill.resources() {
        SkillResources::Listed(files) => {
            let found = files.iter().enumerate().find(|(_, file)| file.key == key);
            Some(found.map(|(i, file)| (i + 1, file)).ok_or_else(unlisted)?)
        }
        SkillResources::Dynamic => {
            let plain_file = key.is_under(&skill.root_key)
                && !key.segments().iter().any(Vec::is_empty)
                && !key.segments().iter().any(|s| path::unsafe_octet(s));
            if !plain_file {
                return Err(unlisted());
            }
            None
        }
    };
    Ok(Target { key, file })
}

/// Resolves a relative reference found in the skill (in `SKILL.md`, say)
/// against the skill's root plus `/`, as `new URL(reference, root + "/")`
/// would (RFC 3986 §5.2; a fragment is dropped), and applies the unlisted
/// check to the result: the URI to request, as the entry spells it.
///
/// A nested skill's references resolve against its own root: call this with
/// the nested skill's entry.
pub fn resolve_reference(skill: &Skill, reference: &str) -> Result<String, SkillError> {
    let base = format!("{}/", skill.root());
    let resolved = path::resolve(&base, reference).ok_or_else(|| {
        SkillError::new(
            SkillCheck::Unlisted,
            format!(
                "{}: the reference does not resolve to a file of the skill (unlisted check)",
                skill.label()
            ),
        )
    })?;
    match target(skill, &resolved)?.file {
        Some((_, file)) => Ok(file.uri().to_owned()),
        None => Ok(resolved),
    }
}

/// Verifies a `resources/read` answer for one file of a held skill.
///
/// `requested` is the URI the read asked for (what [`check_listed`]
/// returned); `contents` is the result's `contents` array, taken by value so
/// a text moves into the [`VerifiedFile`]. `retrieved_before` counts the bytes
/// of this skill already retrieved in this acting window: for a dynamic skill
/// the file must fit in `maxSkillBytes` less them (the caller adds
/// `bytes().len()` after each success); a listed skill ignores it.
///
/// The checks, in order, each failing with its own [`SkillCheck`]:
/// 1. **unlisted**: `requested` names a listed file (for a dynamic skill: a
///    file within the root);
/// 2. **contents**: exactly one item of `contents` has a `uri` that names the
///    same file (percent-encoding and dot segments aside), with a string
///    `text` or a string `blob` but not both; a `blob` is strict base64 (RFC
///    4648 standard alphabet, padded, no whitespace, no trailing bits);
/// 3. **size**: the byte length equals the entry's `size` (dynamic: is within
///    the byte budget), computed from the base64 length before anything is
///    decoded;
/// 4. **digest**: `sha256:` and the lowercase hex SHA-256 of the bytes equal
///    the entry's `digest` (not for a dynamic skill);
/// 5. **frontmatter**, for the skill's own `SKILL.md` (dynamic or not): the
///    YAML frontmatter, parsed under the bounds of
///    `maxSkillFrontmatterBytes` and depth 16, equals the entry's
///    `frontmatter` field by field.
///
/// Messages name the check and the file's position in the listing ("file 2 of
/// skill 1 failed its digest check"), never content. After any failure the
/// host must not use the content, must stop acting on the skill and read no
/// further file of it.
pub fn verify_read(
    skill: &Skill,
    requested: &str,
    contents: Value,
    retrieved_before: u64,
    limits: &SkillLimits,
) -> Result<VerifiedFile, SkillError> {
    let Target { key, file } = target(skill, requested)?;
    let what = match file {
        Some((n, _)) => format!("file {n} of {}", skill.label()),
        None => format!("a file of {}", skill.label()),
    };
    let file = file.map(|(_, file)| file);
    let fail = |check: SkillCheck, detail: &str| {
        SkillError::new(
            check,
            format!("{what} failed its {} check{detail}", check.as_str()),
        )
    };

    // 2. The item.
    let Value::Array(items) = contents else {
        return Err(fail(SkillCheck::Contents, ": contents is not an array"));
    };
    let mut found: Option<serde_json::Map<String, Value>> = None;
    for item in items {
        let Value::Object(item) = item else {
            return Err(fail(
                SkillCheck::Contents,
                ": a contents item is not an object",
            ));
        };
        let matches = match item.get("uri") {
            Some(Value::String(uri)) => Key::of(uri).is_some_and(|k| k == key),
            _ => {
                return Err(fail(
                    SkillCheck::Contents,
                    ": a contents item has no string uri",
                ));
            }
        };
        if matches {
            if found.is_some() {
                return Err(fail(
                    SkillCheck::Contents,
                    ": two contents items match the file",
                ));
            }
            found = Some(item);
        }
    }
    let Some(mut item) = found else {
        return Err(fail(
            SkillCheck::Contents,
            ": no contents item matches the file",
        ));
    };

    // 3. The size, before any decoding or hashing.
    let bound = match file {
        Some(file) => file.size(),
        None => limits.max_skill_bytes.saturating_sub(retrieved_before),
    };
    let size_failure = |length: u64| match file {
        Some(file) => fail(
            SkillCheck::Size,
            &format!(": {length} bytes, the entry lists {}", file.size()),
        ),
        None => fail(
            SkillCheck::Size,
            &format!(
                ": {} bytes retrieved for the dynamic skill; maxSkillBytes is {}",
                retrieved_before.saturating_add(length),
                limits.max_skill_bytes
            ),
        ),
    };
    let size_ok = |length: u64| match file {
        Some(_) => length == bound,
        None => length <= bound,
    };
    let body = match (item.remove("text"), item.remove("blob")) {
        (Some(Value::String(text)), None) => {
            let length = text.len() as u64;
            if !size_ok(length) {
                return Err(size_failure(length));
            }
            Body::Text(text)
        }
        (None, Some(Value::String(blob))) => {
            let length = strict_base64::decoded_len(&blob)
                .ok_or_else(|| fail(SkillCheck::Contents, ": blob is not strict base64"))?
                as u64;
            if !size_ok(length) {
                return Err(size_failure(length));
            }
            let bytes = strict_base64::decode_checked("blob", &blob)
                .map_err(|_| fail(SkillCheck::Contents, ": blob is not strict base64"))?;
            Body::Blob(bytes)
        }
        (Some(_), Some(_)) => {
            return Err(fail(
                SkillCheck::Contents,
                ": the item has both text and blob",
            ));
        }
        _ => {
            return Err(fail(
                SkillCheck::Contents,
                ": the item has neither a string text nor a string blob",
            ));
        }
    };
    let verified = VerifiedFile {
        uri: file.map_or(requested, SkillFile::uri).to_owned(),
        body,
        verified: file.is_some(),
        skill_md: key == skill.key,
    };

    // 4. The digest.
    if let Some(file) = file {
        let hash = Sha256::digest(verified.bytes());
        let hex = file.digest().strip_prefix("sha256:").unwrap_or_default();
        if !hex_equals(hex, &hash) {
            return Err(fail(SkillCheck::Digest, ""));
        }
    }

    // 5. The frontmatter, for the skill's own SKILL.md.
    if verified.skill_md {
        let max = Limits::usize_of(limits.max_skill_frontmatter_bytes);
        frontmatter::parse_skill_md(verified.bytes(), max)
            .map_err(|rule| fail(SkillCheck::Frontmatter, &format!(": {rule}")))
            .and_then(|parsed| {
                frontmatter::compare(skill.frontmatter(), &parsed)
                    .map_err(|rule| fail(SkillCheck::Frontmatter, &format!(": {rule}")))
            })?;
    }
    Ok(verified)
}

/// `hex` (lowercase, validated at entry time) spells `hash`.
fn hex_equals(hex: &str, hash: &[u8]) -> bool {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    hex.len() == hash.len() * 2
        && hash
            .iter()
            .zip(hex.as_bytes().chunks(2))
            .all(|(byte, pair)| {
                pair[0] == DIGITS[usize::from(byte >> 4)]
                    && pair[1] == DIGITS[usize::from(byte & 0xF)]
            })
}

#[cfg(test)]
mod tests;
