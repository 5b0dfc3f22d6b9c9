//! Skill entries (`skills/list` entries and `skills/get`'s `skill`), validated
//! under beyond-tools.md §5.3, and the listing walk's own rule (§5.3 item 4).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::frontmatter::MAX_SKILL_FRONTMATTER_DEPTH;
use super::path::{self, Key};
use super::{SKILL_MD, SkillCheck, SkillError, SkillLimits};
use crate::json_bounds::value_depth;
use crate::limits::{Limits, MAX_SAFE_INTEGER};

/// One validated skill entry: what a host holds while acting on the skill.
///
/// Read-only: the fields are reachable through getters, so a held entry cannot
/// change underneath the checks that rely on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    uri: String,
    frontmatter: Map<String, Value>,
    resources: SkillResources,
    /// The entry's 1-based position in its listing walk; `None` for a
    /// `skills/get` answer.
    position: Option<usize>,
    /// The normalised key of `uri` and of the root (`uri` less `/SKILL.md`).
    pub(super) key: Key,
    pub(super) root_key: Key,
    /// The label of the server that listed it, once a session did
    /// (beyond-tools.md §5.3: a skill's identity is its server and its uri).
    origin: Option<std::sync::Arc<str>>,
}

/// A skill's files: the complete manifest, or `"dynamic"`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included, in the server's order.
    Listed(Vec<SkillFile>),
    /// The server publishes no manifest: the skill's content has no integrity
    /// (the Skills extension §Resources). Reads are confined to the skill's root, and the
    /// frontmatter check still applies.
    Dynamic,
}

/// One listed file of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    uri: String,
    digest: String,
    size: u64,
    pub(super) key: Key,
}

impl SkillFile {
    /// The file's URI, as the entry spells it (the spelling a read must use).
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// `sha256:` and 64 lowercase hex digits.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The file's length in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

impl Skill {
    /// The same skill, marked as listed by the server labelled `server`.
    pub(crate) fn listed_by(mut self, server: std::sync::Arc<str>) -> Skill {
        self.origin = Some(server);
        self
    }

    /// The label of the server a session listed it from (`None` for an entry
    /// checked outside a session).
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// Validates a `skills/get` result's `skill` against the URI asked for,
    /// which it must equal byte for byte. Otherwise as [`SkillListing::entry`];
    /// messages say "the skills/get skill" where a listing says "skill N".
    pub fn from_get(
        skill: Value,
        asked_uri: &str,
        limits: &SkillLimits,
    ) -> Result<Skill, SkillError> {
        let skill = parse(skill, None, limits)?;
        if skill.uri != asked_uri {
            return Err(SkillError::new(
                SkillCheck::Entry,
                "the skills/get skill: uri is not the URI asked for",
            ));
        }
        Ok(skill)
    }

    /// The URI of the skill's `SKILL.md`, as the server spelled it.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The skill's root: [`uri`](Self::uri) without `/SKILL.md`. Relative
    /// references resolve against it plus `/`.
    pub fn root(&self) -> &str {
        &self.uri[..self.uri.len() - SKILL_MD.len() - 1]
    }

    /// `frontmatter.name` (server-authored; it passed the name rule).
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `frontmatter.description` (server-authored text).
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The frontmatter object, every member as the server sent it.
    pub fn frontmatter(&self) -> &Map<String, Value> {
        &self.frontmatter
    }

    /// The files, or [`SkillResources::Dynamic`].
    pub fn resources(&self) -> &SkillResources {
        &self.resources
    }

    /// The listed files; `None` for a dynamic skill.
    pub fn files(&self) -> Option<&[SkillFile]> {
        match &self.resources {
            SkillResources::Listed(files) => Some(files),
            SkillResources::Dynamic => None,
        }
    }

    /// True when `resources` is `"dynamic"`.
    pub fn is_dynamic(&self) -> bool {
        matches!(self.resources, SkillResources::Dynamic)
    }

    /// The sum of the listed sizes; `None` for a dynamic skill.
    pub fn total_size(&self) -> Option<u64> {
        self.files()
            .map(|files| files.iter().map(SkillFile::size).sum())
    }

    /// The entry's 1-based position in its listing walk; `None` when it came
    /// from `skills/get`.
    pub fn position(&self) -> Option<usize> {
        self.position
    }

    /// "skill N" or "the skills/get skill", for messages.
    pub(super) fn label(&self) -> String {
        label(self.position)
    }
}

fn label(position: Option<usize>) -> String {
    match position {
        Some(n) => format!("skill {n}"),
        None => "the skills/get skill".to_owned(),
    }
}

/// Walks a `skills/list` listing, page after page: each entry is validated,
/// no `uri` may repeat (after normalisation: two spellings of one URI are one
/// skill), and at most `maxSkills` entries are taken. Names may repeat: hosts
/// must not assume they are unique, and disambiguate rather than drop.
///
/// What a failure means for the walk, by [`SkillError::check`]:
/// - [`SkillCheck::Entry`]: the entry is invalid and must not be loaded. Refuse
///   the listing, or (a host's opt-in) skip and report the entry.
/// - [`SkillCheck::Limit`]: the entry is over `maxSkillFiles` or
///   `maxSkillBytes`; the skill is declined (tell the user why), the listing
///   stands.
/// - [`SkillCheck::Listing`]: a repeated `uri`, or more than `maxSkills`
///   entries: the listing is refused.
///
/// ```
/// use serde_json::json;
/// use smthrs_mcp::skills::{SkillCheck, SkillLimits, SkillListing};
///
/// let digest = format!("sha256:{}", "0".repeat(64));
/// let entry = json!({
///     "uri": "skill://git-workflow/SKILL.md",
///     "frontmatter": { "name": "git-workflow", "description": "Team Git conventions" },
///     "resources": [{ "uri": "skill://git-workflow/SKILL.md", "digest": digest, "size": 120 }]
/// });
/// let mut listing = SkillListing::new(SkillLimits::default());
/// let skill = listing.entry(entry.clone())?;
/// assert_eq!(skill.name(), "git-workflow");
/// assert_eq!(skill.root(), "skill://git-workflow");
/// let again = listing.entry(entry).unwrap_err();
/// assert_eq!(again.check(), SkillCheck::Listing);
/// assert_eq!(again.message(), "skill 2: uri repeats the uri of another entry");
/// # Ok::<(), smthrs_mcp::skills::SkillError>(())
/// ```
#[derive(Debug, Clone)]
pub struct SkillListing {
    limits: SkillLimits,
    seen: HashSet<Key>,
    entries: usize,
}

impl SkillListing {
    /// A walk bounded by `limits`.
    pub fn new(limits: SkillLimits) -> SkillListing {
        SkillListing {
            limits,
            seen: HashSet::new(),
            entries: 0,
        }
    }

    /// The entries seen so far, valid or not.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// True before the first entry.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Validates the listing's next entry (see the type's docs for what each
    /// failure means). The entry is taken by value: its `frontmatter` moves
    /// into the [`Skill`].
    pub fn entry(&mut self, entry: Value) -> Result<Skill, SkillError> {
        self.entries += 1;
        let position = self.entries;
        let max_skills = Limits::usize_of(self.limits.max_skills);
        if position > max_skills {
            return Err(SkillError::new(
                SkillCheck::Listing,
                format!("the listing has more than {max_skills} skills; maxSkills is {max_skills}"),
            ));
        }
        // The uri is checked first, so a repeat is found even in an entry that
        // is later declined for its size.
        if let Some(Value::String(uri)) = entry.get("uri")
            && let Ok(key) = check_skill_uri(uri, &self.limits)
            && !self.seen.insert(key.0)
        {
            return Err(SkillError::new(
                SkillCheck::Listing,
                format!(
                    "{}: uri repeats the uri of another entry",
                    label(Some(position))
                ),
            ));
        }
        parse(entry, Some(position), &self.limits)
    }
}

/// Validates one entry; `position` is its place in the listing, or `None` for
/// `skills/get`.
fn parse(entry: Value, position: Option<usize>, limits: &SkillLimits) -> Result<Skill, SkillError> {
    let fail = |check: SkillCheck, rule: &str| {
        SkillError::new(check, format!("{}: {rule}", label(position)))
    };
    let invalid = |rule: &str| fail(SkillCheck::Entry, rule);

    let Value::Object(mut entry) = entry else {
        return Err(invalid("the entry is not an object"));
    };
    let uri = match entry.remove("uri") {
        Some(Value::String(uri)) => uri,
        _ => return Err(invalid("uri is not a string")),
    };
    let (key, root_key, final_segment) =
        check_skill_uri(&uri, limits).map_err(|rule| invalid(&rule))?;

    let frontmatter = match entry.remove("frontmatter") {
        Some(Value::Object(frontmatter)) => frontmatter,
        _ => return Err(invalid("frontmatter is not an object")),
    };
    check_frontmatter(&frontmatter, limits).map_err(|rule| invalid(&rule))?;
    let name = frontmatter
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if final_segment != name.as_bytes() {
        return Err(invalid(
            "the uri's final skill-path segment, percent-decoded, is not frontmatter.name",
        ));
    }

    let resources = match entry.get("resources") {
        Some(Value::String(word)) if word == "dynamic" => SkillResources::Dynamic,
        Some(Value::Array(files)) => {
            let max_files = Limits::usize_of(limits.max_skill_files);
            if files.len() > max_files {
                return Err(fail(
                    SkillCheck::Limit,
                    &format!(
                        "the skill lists {} files; maxSkillFiles is {max_files}",
                        files.len()
                    ),
                ));
            }
            let files =
                check_files(files, &key, &root_key, limits).map_err(|rule| invalid(&rule))?;
            let total = files
                .iter()
                .fold(0u64, |sum, file| sum.saturating_add(file.size));
            if total > limits.max_skill_bytes {
                return Err(fail(
                    SkillCheck::Limit,
                    &format!(
                        "the skill's files total {total} bytes; maxSkillBytes is {}",
                        limits.max_skill_bytes
                    ),
                ));
            }
            SkillResources::Listed(files)
        }
        None => return Err(invalid("resources is missing")),
        Some(_) => return Err(invalid("resources is neither an array nor \"dynamic\"")),
    };

    Ok(Skill {
        uri,
        frontmatter,
        resources,
        position,
        key,
        root_key,
        origin: None,
    })
}

/// Rule 1 of §5.3: the key of the uri, of its root, and the decoded final
/// skill-path segment; the error is the rule broken.
fn check_skill_uri(uri: &str, limits: &SkillLimits) -> Result<(Key, Key, Vec<u8>), String> {
    crate::uri::check_uri(uri, Limits::usize_of(limits.max_uri_bytes), "maxUriBytes")
        .map_err(|rule| format!("uri: {rule}"))?;
    if uri.contains(['?', '#']) {
        return Err("uri has a query or a fragment".to_owned());
    }
    let Some(root) = uri.strip_suffix("/SKILL.md") else {
        return Err("uri does not end in /SKILL.md".to_owned());
    };
    let parts = path::split(root).ok_or("uri has no authority (scheme://authority/...)")?;
    if parts.authority.is_empty() || !path::is_reg_name(parts.authority) {
        return Err("uri's authority is not an RFC 3986 reg-name".to_owned());
    }
    // The skill path: the authority, then the root's path segments.
    let mut segments = vec![parts.authority];
    if let Some(rest) = parts.path.strip_prefix('/') {
        segments.extend(rest.split('/'));
    }
    let mut final_segment = Vec::new();
    for segment in segments {
        let decoded =
            path::percent_decode(segment).ok_or("uri has a malformed percent-encoding")?;
        if decoded.is_empty() || decoded == b"." || decoded == b".." {
            return Err("uri has an empty, \".\" or \"..\" skill-path segment".to_owned());
        }
        check_segment(segment, &decoded)?;
        final_segment = decoded;
    }
    let key = Key::of(uri).ok_or("uri has a malformed percent-encoding")?;
    let root_key = Key::of(root).ok_or("uri has a malformed percent-encoding")?;
    Ok((key, root_key, final_segment))
}

/// A literal `\`, or a percent-encoded `/`, `\` or control, in a segment.
fn check_segment(raw: &str, decoded: &[u8]) -> Result<(), String> {
    if raw.contains('\\') || path::unsafe_octet(decoded) {
        return Err(
            "a uri has a backslash, or percent-encodes '/', '\\' or a control character".to_owned(),
        );
    }
    Ok(())
}

/// Rule 2 of §5.3 (Agent Skills: name, description, compatibility, metadata),
/// plus: no `__proto__` key at any depth (as the TypeScript SDK refuses it),
/// no deeper than the YAML bound (deeper could never pass the frontmatter
/// check), and at most `maxEntryDocumentBytes` of JSON.
fn check_frontmatter(frontmatter: &Map<String, Value>, limits: &SkillLimits) -> Result<(), String> {
    let name = match frontmatter.get("name") {
        Some(Value::String(name)) => name,
        _ => return Err("frontmatter.name is not a string".to_owned()),
    };
    check_skill_name(name).map_err(str::to_owned)?;
    let description = match frontmatter.get("description") {
        Some(Value::String(description)) => description,
        _ => return Err("frontmatter.description is not a string".to_owned()),
    };
    let chars = description.chars().count();
    if !(1..=1024).contains(&chars) {
        return Err(format!(
            "frontmatter.description has {chars} characters, not 1 to 1024"
        ));
    }
    match frontmatter.get("compatibility") {
        None => {}
        Some(Value::String(text)) => {
            let chars = text.chars().count();
            if !(1..=500).contains(&chars) {
                return Err(format!(
                    "frontmatter.compatibility has {chars} characters, not 1 to 500"
                ));
            }
        }
        Some(_) => return Err("frontmatter.compatibility is not a string".to_owned()),
    }
    match frontmatter.get("metadata") {
        None => {}
        Some(Value::Object(map)) if map.values().all(Value::is_string) => {}
        Some(_) => return Err("frontmatter.metadata is not a map of strings to strings".to_owned()),
    }
    let depth = 1 + frontmatter.values().map(value_depth).max().unwrap_or(0);
    if depth > MAX_SKILL_FRONTMATTER_DEPTH {
        return Err(format!(
            "frontmatter nests {depth} deep; SKILL.md frontmatter may nest {MAX_SKILL_FRONTMATTER_DEPTH}"
        ));
    }
    if has_proto_key(frontmatter) {
        return Err("frontmatter has a __proto__ key".to_owned());
    }
    let max = Limits::usize_of(limits.max_entry_document_bytes);
    if json_longer_than(frontmatter, max) {
        return Err(format!(
            "frontmatter is longer than {max} bytes of JSON; maxEntryDocumentBytes is {max}"
        ));
    }
    Ok(())
}

/// True when the compact JSON of `value` is longer than `max` bytes; the
/// serializer stops at the first byte past it.
fn json_longer_than(value: &impl serde::Serialize, max: usize) -> bool {
    struct Budget(usize);
    impl std::io::Write for Budget {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self
                .0
                .checked_sub(buf.len())
                .ok_or_else(|| std::io::Error::other("over the bound"))?;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(&mut Budget(max), value).is_err()
}

fn has_proto_key(frontmatter: &Map<String, Value>) -> bool {
    let mut pending: Vec<&Value> = frontmatter.values().collect();
    if frontmatter.contains_key("__proto__") {
        return true;
    }
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(map) => {
                if map.contains_key("__proto__") {
                    return true;
                }
                pending.extend(map.values());
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    false
}

/// The Agent Skills name rule as the TypeScript SDK enforces it (Q6): 1 to 64
/// characters of `^[a-z0-9]+(-[a-z0-9]+)*$`.
///
/// ```
/// use smthrs_mcp::skills::check_skill_name;
///
/// assert!(check_skill_name("pdf-processing").is_ok());
/// assert!(check_skill_name("PDF").is_err());
/// assert!(check_skill_name("a--b").is_err());
/// ```
pub fn check_skill_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() || name.len() > 64 {
        return Err("frontmatter.name is not 1 to 64 characters");
    }
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = name.as_bytes();
    let shape = bytes.iter().all(|&b| allowed(b) || b == b'-')
        && bytes.first().is_some_and(|&b| b != b'-')
        && bytes.last().is_some_and(|&b| b != b'-')
        && !name.contains("--");
    if !shape {
        return Err(
            "frontmatter.name is not lowercase letters and digits with single inner hyphens",
        );
    }
    Ok(())
}

/// Rule 3 of §5.3 for an array: every file within the root, no duplicate, a
/// well-formed digest and size, and `SKILL.md` itself among them.
fn check_files(
    files: &[Value],
    key: &Key,
    root_key: &Key,
    limits: &SkillLimits,
) -> Result<Vec<SkillFile>, String> {
    let max_uri = Limits::usize_of(limits.max_uri_bytes);
    let mut seen: HashSet<&Key> = HashSet::with_capacity(files.len());
    let mut out: Vec<SkillFile> = Vec::with_capacity(files.len());
    for (index, file) in files.iter().enumerate() {
        let n = index + 1;
        let Value::Object(file) = file else {
            return Err(format!("file {n}: the entry is not an object"));
        };
        let uri = match file.get("uri") {
            Some(Value::String(uri)) => uri,
            _ => return Err(format!("file {n}: uri is not a string")),
        };
        crate::uri::check_uri(uri, max_uri, "maxUriBytes")
            .map_err(|rule| format!("file {n}: uri: {rule}"))?;
        if uri.contains(['?', '#']) {
            return Err(format!("file {n}: uri has a query or a fragment"));
        }
        let outside = || {
            format!(
                "file {n}: uri is not within the skill's root (after normalisation and dot-segment removal)"
            )
        };
        let parts = path::split(uri).ok_or_else(outside)?;
        for segment in parts.path.split('/').skip(1) {
            let decoded = path::percent_decode(segment)
                .ok_or_else(|| format!("file {n}: uri has a malformed percent-encoding"))?;
            check_segment(segment, &decoded).map_err(|rule| format!("file {n}: {rule}"))?;
        }
        let file_key = Key::of(uri)
            .ok_or_else(|| format!("file {n}: uri has a malformed percent-encoding"))?;
        if !file_key.is_under(root_key) {
            return Err(outside());
        }
        if file_key.segments().iter().any(Vec::is_empty) {
            return Err(format!("file {n}: uri has an empty path segment"));
        }
        let digest = match file.get("digest") {
            Some(Value::String(digest)) if is_digest(digest) => digest.clone(),
            _ => {
                return Err(format!(
                    "file {n}: digest is not sha256: and 64 lowercase hex digits"
                ));
            }
        };
        let size = file
            .get("size")
            .and_then(non_negative_safe_integer)
            .ok_or_else(|| format!("file {n}: size is not an integer from 0 to 2^53-1"))?;
        out.push(SkillFile {
            uri: uri.clone(),
            digest,
            size,
            key: file_key,
        });
    }
    for (index, file) in out.iter().enumerate() {
        if !seen.insert(&file.key) {
            return Err(format!(
                "file {}: uri repeats another file's uri",
                index + 1
            ));
        }
    }
    if !seen.contains(key) {
        return Err("resources does not list the skill's own SKILL.md".to_owned());
    }
    Ok(out)
}

/// `^sha256:[0-9a-f]{64}$`.
pub(super) fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// A JSON number that is an integer from 0 to 2^53-1 (an integral float such
/// as `5.0` included, as JavaScript reads it).
fn non_negative_safe_integer(value: &Value) -> Option<u64> {
    let number = value.as_number()?;
    if let Some(n) = number.as_u64() {
        return (n <= MAX_SAFE_INTEGER).then_some(n);
    }
    let f = number.as_f64()?;
    (f.is_finite() && f.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER as f64).contains(&f))
        .then_some(f as u64)
}

#[cfg(test)]
mod tests;
