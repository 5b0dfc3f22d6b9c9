//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`): the
//! checks a host runs on what a server says about its skills, free of any
//! transport (beyond-tools.md §5). Nothing here sends a request: the session
//! calls these on the results of `skills/list`, `skills/get` and
//! `resources/read`, and sends only what they allow.
//!
//! | step | call | checks | on failure ([`SkillCheck`]) |
//! | --- | --- | --- | --- |
//! | a `skills/list` entry | [`SkillListing::entry`] | §5.3: the `uri` (ends in `/SKILL.md`, no `?`/`#`, a reg-name authority, the final skill-path segment is `frontmatter.name`); the frontmatter (name, description, compatibility, metadata, no `__proto__`); `resources` (`"dynamic"`, or complete, unique, within the root, digests and sizes well-formed) | `entry`: refuse the listing (or skip and report, a host's opt-in) |
//! | | | `maxSkillFiles`, `maxSkillBytes` (never below [`SKILL_FILES_FLOOR`], [`SKILL_BYTES_FLOOR`]) | `limit`: decline the skill, say why |
//! | | | no `uri` repeats; at most `maxSkills` entries | `listing`: refuse the listing |
//! | a `skills/get` answer | [`Skill::from_get`] | as an entry, and `uri` is the URI asked for | `entry`, `limit` |
//! | before a read | [`check_listed`], [`resolve_reference`] | the file is listed in the held entry (a dynamic skill: within its root) | `unlisted`: send nothing |
//! | a `resources/read` answer | [`verify_read`] | one matching `contents` item; size, then digest, then (the skill's `SKILL.md`) frontmatter | `contents`, `size`, `digest`, `frontmatter`: drop the content, stop acting on the skill |
//!
//! Every message names the rule and the entry's or file's position ("skill 3:
//! file 2: digest is not ...", "file 2 of skill 1 failed its digest check"),
//! never server text. A [`SkillError`] becomes an [`Error`] of kind
//! `invalid_response`.
//!
//! **URIs.** Skill URIs follow the URI rules of every server URI (beyond-tools.md
//! §0.5) and are compared after normalisation, the one exception to byte-for-byte
//! comparison: the scheme and authority without case, every percent-encoding
//! decoded, dot segments removed. A skill's URI and its files' URIs also refuse a
//! backslash and a percent-encoded `/`, `\` or control character (a server that
//! decodes before it splits would read another path), and the skill URI refuses
//! empty and dot segments in its skill path. An authority is never resolved.
//!
//! **Dynamic skills** (`"resources": "dynamic"`) are valid entries; whether to
//! load one is the host's choice (beyond-tools.md Q14: decline by default). When
//! one is loaded, reads are confined to its root, the frontmatter check applies,
//! and the bytes retrieved count against `maxSkillBytes`.

use std::borrow::Cow;
use std::fmt;

use crate::error::{Error, Result};
use crate::limits::{
    DEFAULT_MAX_ENTRY_DOCUMENT_BYTES, DEFAULT_MAX_SKILL_BYTES, DEFAULT_MAX_SKILL_FILES,
    DEFAULT_MAX_SKILL_FRONTMATTER_BYTES, DEFAULT_MAX_SKILLS, DEFAULT_MAX_URI_BYTES, Limits,
    MAX_SAFE_INTEGER,
};

mod entry;
pub(crate) mod frontmatter;
mod path;
mod verify;

pub use entry::{Skill, SkillFile, SkillListing, SkillResources, check_skill_name};
pub use frontmatter::MAX_SKILL_FRONTMATTER_DEPTH;
pub use verify::{VerifiedFile, check_listed, resolve_reference, verify_read};

/// The extension's identifier, the key of `capabilities.extensions`.
pub const SKILLS_EXTENSION_ID: &str = "io.modelcontextprotocol/skills";

/// The name of a skill's own file.
pub const SKILL_MD: &str = "SKILL.md";

/// The extension's floor for files per skill (the Skills extension §Limits): hosts must
/// accept skills with this many `resources` entries, `SKILL.md` included, so
/// `maxSkillFiles` may not be set lower.
pub const SKILL_FILES_FLOOR: u64 = 512;

/// The extension's floor for the total size of a skill (16 MiB, the sum of
/// `size` over `resources`), so `maxSkillBytes` may not be set lower.
pub const SKILL_BYTES_FLOOR: u64 = 16 * 1024 * 1024;

/// The bounds of the Skills checks. The names in the docs are the options'
/// camelCase names, as a server file would carry them.
///
/// ```
/// use smthrs_mcp::skills::SkillLimits;
///
/// let mut limits = SkillLimits::default();
/// limits.max_skill_files = 2048;
/// assert!(limits.validate().is_ok());
/// limits.max_skill_files = 100; // below the extension's floor of 512
/// assert!(limits.validate().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkillLimits {
    /// `maxSkills`: entries across one `skills/list` walk. Default 1024.
    pub max_skills: u64,
    /// `maxSkillFiles`: `resources` entries of one skill, `SKILL.md` included;
    /// more declines the skill. Default and minimum 512.
    pub max_skill_files: u64,
    /// `maxSkillBytes`: the sum of `size` over a skill's `resources`, or the
    /// bytes retrieved for a dynamic skill; more declines the skill. Default and
    /// minimum 16 MiB.
    pub max_skill_bytes: u64,
    /// `maxSkillFrontmatterBytes`: the YAML frontmatter of one `SKILL.md`
    /// (counted with LF line ends); more fails the frontmatter check. Default
    /// 64 KiB.
    pub max_skill_frontmatter_bytes: u64,
    /// `maxUriBytes`: UTF-8 bytes of a skill's or a file's URI. Default 4096
    /// (the value beyond-tools.md §8 gives every server URI).
    pub max_uri_bytes: u64,
    /// `maxEntryDocumentBytes`: the compact JSON of one entry's `frontmatter`.
    /// Default 64 KiB (beyond-tools.md §8; a skill's `resources` array is
    /// bounded by `maxSkillFiles` and `maxUriBytes` instead, since 512 listed
    /// files take more than 64 KiB).
    pub max_entry_document_bytes: u64,
}

impl Default for SkillLimits {
    fn default() -> Self {
        SkillLimits {
            max_skills: DEFAULT_MAX_SKILLS,
            max_skill_files: DEFAULT_MAX_SKILL_FILES,
            max_skill_bytes: DEFAULT_MAX_SKILL_BYTES,
            max_skill_frontmatter_bytes: DEFAULT_MAX_SKILL_FRONTMATTER_BYTES,
            max_uri_bytes: DEFAULT_MAX_URI_BYTES,
            max_entry_document_bytes: DEFAULT_MAX_ENTRY_DOCUMENT_BYTES,
        }
    }
}

/// The session's [`Limits`] (already validated), as the Skills checks read them.
impl From<&Limits> for SkillLimits {
    fn from(limits: &Limits) -> SkillLimits {
        SkillLimits {
            max_skills: limits.max_skills,
            max_skill_files: limits.max_skill_files,
            max_skill_bytes: limits.max_skill_bytes,
            max_skill_frontmatter_bytes: limits.max_skill_frontmatter_bytes,
            max_uri_bytes: limits.max_uri_bytes,
            max_entry_document_bytes: limits.max_entry_document_bytes,
        }
    }
}

impl SkillLimits {
    /// Checks that every bound is a positive safe integer and that
    /// `maxSkillFiles` and `maxSkillBytes` are not below the extension's floors.
    ///
    /// Fails with `protocol_error` naming the option, as
    /// [`Limits::validate`](crate::Limits::validate) does.
    pub fn validate(&self) -> Result<()> {
        for (name, value) in [
            ("maxSkills", self.max_skills),
            ("maxSkillFiles", self.max_skill_files),
            ("maxSkillBytes", self.max_skill_bytes),
            ("maxSkillFrontmatterBytes", self.max_skill_frontmatter_bytes),
            ("maxUriBytes", self.max_uri_bytes),
            ("maxEntryDocumentBytes", self.max_entry_document_bytes),
        ] {
            if value == 0 || value > MAX_SAFE_INTEGER {
                return Err(Error::protocol(format!(
                    "option {name} must be a positive safe integer"
                )));
            }
        }
        for (name, value, floor) in [
            ("maxSkillFiles", self.max_skill_files, SKILL_FILES_FLOOR),
            ("maxSkillBytes", self.max_skill_bytes, SKILL_BYTES_FLOOR),
        ] {
            if value < floor {
                return Err(Error::protocol(format!(
                    "option {name} must be at least {floor}, the Skills extension's floor"
                )));
            }
        }
        Ok(())
    }
}

/// Which check a skill, an entry or a file failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkillCheck {
    /// An entry broke a rule of §5.3: it must not be loaded.
    Entry,
    /// An entry is over `maxSkillFiles` or `maxSkillBytes`: the skill is
    /// declined, the listing stands.
    Limit,
    /// The listing broke a rule: a repeated `uri`, or more than `maxSkills`
    /// entries.
    Listing,
    /// A file not listed in the held entry (or, for a dynamic skill, outside
    /// its root): nothing is sent.
    Unlisted,
    /// The read's `contents` has no usable item for the file (none or two
    /// match, neither or both of `text` and `blob`, a `blob` that is not strict
    /// base64).
    Contents,
    /// The file's byte length is not the entry's `size` (a dynamic skill: the
    /// bytes retrieved passed `maxSkillBytes`).
    Size,
    /// The file's SHA-256 is not the entry's `digest`.
    Digest,
    /// `SKILL.md`'s frontmatter could not be read under the bounds, or differs
    /// from the entry's `frontmatter`.
    Frontmatter,
}

impl SkillCheck {
    /// The check's one-word name (`unlisted`, `size`, `digest`, ...), as
    /// messages and the TypeScript SDK's `SkillVerificationError.reason` use it.
    pub const fn as_str(self) -> &'static str {
        match self {
            SkillCheck::Entry => "entry",
            SkillCheck::Limit => "limit",
            SkillCheck::Listing => "listing",
            SkillCheck::Unlisted => "unlisted",
            SkillCheck::Contents => "contents",
            SkillCheck::Size => "size",
            SkillCheck::Digest => "digest",
            SkillCheck::Frontmatter => "frontmatter",
        }
    }
}

impl fmt::Display for SkillCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed Skills check: which one, and a message authored by this crate that
/// names the rule and the position, never server text. Converts into an
/// [`Error`] of kind `invalid_response` with the same message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillError {
    check: SkillCheck,
    message: Cow<'static, str>,
}

impl SkillError {
    pub(crate) fn new(check: SkillCheck, message: impl Into<Cow<'static, str>>) -> SkillError {
        SkillError {
            check,
            message: message.into(),
        }
    }

    /// The check that failed.
    pub fn check(&self) -> SkillCheck {
        self.check
    }

    /// The message (crate-authored; its wording is not a stable contract).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SkillError {}

impl From<SkillError> for Error {
    fn from(error: SkillError) -> Error {
        Error::invalid_response(error.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn limits_default_to_the_floors_and_refuse_to_go_below() {
        let limits = SkillLimits::default();
        assert_eq!(limits.max_skill_files, 512);
        assert_eq!(limits.max_skill_bytes, 16_777_216);
        assert_eq!(limits.max_skill_frontmatter_bytes, 65_536);
        assert_eq!(limits.max_skills, 1024);
        assert!(limits.validate().is_ok());
        let refused = |limits: SkillLimits| limits.validate().unwrap_err();
        let below = SkillLimits {
            max_skill_files: 511,
            ..limits
        };
        let error = refused(below);
        assert_eq!(error.kind(), ErrorKind::ProtocolError);
        assert_eq!(
            error.message(),
            "option maxSkillFiles must be at least 512, the Skills extension's floor"
        );
        let below = SkillLimits {
            max_skill_bytes: SKILL_BYTES_FLOOR - 1,
            ..limits
        };
        assert_eq!(
            refused(below).message(),
            "option maxSkillBytes must be at least 16777216, the Skills extension's floor"
        );
        let zero = SkillLimits {
            max_skill_frontmatter_bytes: 0,
            ..limits
        };
        assert_eq!(
            refused(zero).message(),
            "option maxSkillFrontmatterBytes must be a positive safe integer"
        );
        let huge = SkillLimits {
            max_skills: MAX_SAFE_INTEGER + 1,
            ..limits
        };
        assert_eq!(
            refused(huge).message(),
            "option maxSkills must be a positive safe integer"
        );
        let above = SkillLimits {
            max_skill_files: 4096,
            max_skill_bytes: 1 << 30,
            ..limits
        };
        assert!(above.validate().is_ok());
    }

    #[test]
    fn a_skill_error_is_an_invalid_response() {
        let error = SkillError::new(
            SkillCheck::Digest,
            "file 2 of skill 1 failed its digest check",
        );
        assert_eq!(error.check().as_str(), "digest");
        let error: Error = error.into();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse);
        assert_eq!(error.message(), "file 2 of skill 1 failed its digest check");
    }
}
