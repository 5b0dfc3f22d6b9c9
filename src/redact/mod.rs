//! Redaction of a child process's stderr before any of it is kept.
//!
//! A stdio server's stderr is the channel that explains why it failed, and also the
//! channel most likely to carry credentials: servers print their configuration, echo
//! failed HTTP requests with their headers, dump their environment, or log a
//! connection string. The client therefore never keeps raw stderr.
//! [`StderrCollector`] drains it continuously, splits it into lines, redacts each
//! *complete* line with a [`Redactor`], and only then keeps a bounded,
//! whitespace-collapsed tail of the redacted text. Because the cap applies to text that
//! is already redacted, cutting the tail can never strip a credential's recognizable
//! prefix and leave its body behind. A line longer than [`MAX_STDERR_LINE_BYTES`] is
//! withheld whole rather than redacted piecemeal, and never more than that much of a
//! partial line is buffered, so memory stays bounded whatever the child writes.
//!
//! # What is redacted
//!
//! Each match is replaced with [`REDACTED`]; the rest of the line is kept so that it
//! stays useful.
//!
//! - **Exact values**: the values of the environment entries given to the child, passed
//!   to [`Redactor::new`]. Every occurrence is replaced, overlapping ones included.
//!   Values shorter than [`MIN_EXACT_VALUE_BYTES`] are ignored, since replacing every
//!   `1` or `on` would shred the text while protecting nothing. A multi-line value is
//!   also matched line by line. The collector matches them before and after cleaning
//!   (below), and an occurrence may be interrupted by escape sequences and hidden
//!   characters planted inside it.
//! - **Authorization headers**: after `Authorization:` or `Proxy-Authorization:`
//!   (also `Cookie:` and `Set-Cookie:`), everything to the end of the line.
//! - **Auth schemes**: the credential after `Bearer` or `Basic` (case-insensitive).
//! - **URL userinfo**: `scheme://user:pass@host` becomes `scheme://[REDACTED]@host`.
//! - **Values of secret-named keys**: in `key=value`, `key: value`, `"key": "value"`,
//!   `'key': 'value'`, `key => value`, `<key>value</key>`, `--key value`, an argument
//!   vector `["--key", "value"]` and a pair `{"name": "KEY", "value": "value"}`, when the key
//!   (case-insensitive, ignoring `_`, `-` and `.`) contains `token`, `secret`,
//!   `password`, `passwd`, `passphrase`, `pwd`, `apikey`, `accesskey`, `accountkey`,
//!   `privatekey`, `credential`, `auth`, `session` or `cookie`: so `GITHUB_TOKEN`,
//!   `x-api-key`, `db_password` and `clientSecret` all count. A few exceptions keep
//!   ordinary logs readable: `author`/`authority` are not `auth`; a purely numeric value
//!   of a counting key such as `max_tokens` or `tokenizer` is kept; names ending in
//!   `error`, `exception`, `failed` or `failure` (`AuthenticationError: ...`), path
//!   segments (`/etc/passwd: ...`), source positions (`auth.rs:17`) and Rust paths
//!   (`session::Session`) are not keys. Placeholder values (`null`, `true`, `***`, ...)
//!   are kept too.
//! - **Well-known token shapes**, wherever they appear: GitHub (`ghp_`, `gho_`, `ghu_`,
//!   `ghs_`, `ghr_`, `github_pat_`), OpenAI/Anthropic-style `sk-...`, Stripe
//!   (`sk_live_`, `rk_live_`, `whsec_`, ...), Slack (`xox[abposre]-`, `xapp-`), AWS
//!   access key ids (`AKIA`/`ASIA` + 16), Google API keys (`AIza` + 35) and OAuth
//!   tokens (`ya29.`), GitLab (`glpat-`), npm (`npm_`), PyPI (`pypi-`), Hugging Face
//!   (`hf_`), SendGrid (`SG.`), Shopify (`shpat_`, `shpss_`), DigitalOcean (`dop_v1_`),
//!   and JSON Web Tokens (`eyJ...` `.` `eyJ...` `.` signature).
//! - **High-entropy runs**: a run of 32 or more base64 characters that mixes upper
//!   case, lower case and digits the way random data does (and unlike a path or an
//!   identifier). This catches unknown API keys and the body lines of key files.
//! - **PEM private keys**: the body between `-----BEGIN ... PRIVATE KEY-----` and its
//!   `-----END ...-----` line. On a single line (say, a JSON-escaped key) the body
//!   between the markers is replaced; a `BEGIN` line without its `END` has its
//!   remainder replaced, and [`StderrCollector`] remembers that it is inside a block
//!   and drops every following line up to the `END` line, showing one [`REDACTED`]
//!   for the body.
//!
//! # Limits
//!
//! This is a heuristic. A credential with neither a recognizable name nor shape
//! ("the password is hunter2"), a credential split across lines or by visible text,
//! or an encoded form of an environment value (URL- or base64-encoded) can survive. The redactor errs
//! towards over-redaction: some harmless values next to secret-sounding keys, and
//! base64 blobs, are replaced too. A `BEGIN ... PRIVATE KEY-----` marker without its
//! `END` line hides the rest of the stream from the tail; that is the safe side.
//!
//! The collector also strips terminal escape sequences and turns other control and
//! bidirectional-override characters into spaces before redacting, so that neither
//! colour codes nor hidden characters can split a credential out of view, and so that
//! the tail is safe to print. Exact values are matched on both sides of this cleaning:
//! in the cleaned line, where an escape sequence written inside a value no longer
//! splits it, and in the line as written, because cleaning can also eat into a value.
//! A complete escape sequence legitimately consumes the character after it (`ESC [ c`
//! is a CSI sequence whose final byte is `c`; `ESC ( c` designates a character set), so
//! `key \x1b[correct-horse-battery` cleans to `key orrect-horse-battery`. Whatever is
//! left of a value found in the line as written is replaced, wherever it ends up after
//! cleaning: that line becomes `key [REDACTED]`, and no part of the value is kept.
//!
//! An escape can also be planted *inside* a value, so that it splits the value in
//! the line as written and eats one of its characters when the line is cleaned:
//! `correct-horse-\x1b[battery` is `ESC [ b`, a CSI sequence whose final byte is
//! the `b`, and cleans to `correct-horse-attery`, which neither match finds. So in
//! the line as written a value also occurs where deleting some *hidden* bytes leaves
//! exactly the value: bytes that an escape sequence starting at some `ESC` would
//! consume (each `ESC` taken on its own, not as the cleaning happens to parse the
//! line, so that an earlier sequence swallowing the planted `ESC` changes nothing),
//! and control and bidi characters. The whole occurrence, interruptions included,
//! is then replaced, wherever it ends up after cleaning: that line becomes
//! `[REDACTED]`, in the tail and in [`Redactor::redact_line`] alike. This is done for
//! values of at most [`MAX_GAPPED_VALUE_BYTES`](exact::MAX_GAPPED_VALUE_BYTES) (its cost grows with the value's
//! length), and only on lines holding such bytes. A value split by text a reader
//! sees (a space, a letter, a line end) is still beyond the exact-value rule.
//!
//! # Example
//!
//! ```
//! use smthrs_mcp::fuzzing::{Redactor, StderrCollector};
//!
//! let redactor = Redactor::new(["correct-horse-battery"]);
//! assert_eq!(
//!     redactor.redact_line("login with correct-horse-battery failed"),
//!     "login with [REDACTED] failed"
//! );
//! assert_eq!(
//!     redactor.redact_line("DATABASE_PASSWORD=s3cr3t port=5432"),
//!     "DATABASE_PASSWORD=[REDACTED] port=5432"
//! );
//!
//! let mut stderr = StderrCollector::new(redactor, 2048);
//! stderr.push(b"starting\r\nAuthorization: Bearer abc.def.ghi\n  listening   on ");
//! stderr.push(b"port 8080");
//! stderr.finish();
//! assert_eq!(
//!     stderr.tail(),
//!     "starting Authorization: [REDACTED] listening on port 8080"
//! );
//! ```

mod clean;
mod collector;
mod exact;
mod keyed;
mod patterns;
mod redactor;
mod span;
mod withheld;
mod work;

pub use collector::StderrCollector;
pub use redactor::Redactor;
pub(crate) use withheld::debug_command;

/// Lines longer than this many bytes (not counting the line terminator) are withheld
/// whole, and at most this much of a partial line is ever buffered.
pub const MAX_STDERR_LINE_BYTES: usize = 64 * 1024;

/// The text that replaces each redacted span.
pub const REDACTED: &str = "[REDACTED]";

/// What a line longer than [`MAX_STDERR_LINE_BYTES`] becomes in the tail.
pub const WITHHELD_LINE: &str = "[line withheld: over 64 KiB]";

/// Exact values shorter than this many bytes are ignored by [`Redactor::new`]:
/// replacing every occurrence of a one- to three-byte value would shred the text.
pub const MIN_EXACT_VALUE_BYTES: usize = 4;

#[cfg(test)]
mod tests;
