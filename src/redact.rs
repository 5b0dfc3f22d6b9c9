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
//! values of at most [`MAX_GAPPED_VALUE_BYTES`] (its cost grows with the value's
//! length), and only on lines holding such bytes. A value split by text a reader
//! sees (a space, a letter, a line end) is still beyond the exact-value rule.//!
//! # Example
//!
//! ```
//! use smthrs_mcp::redact::{Redactor, StderrCollector};
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

use std::fmt;
use std::sync::Arc;

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

/// The longest PEM label accepted between `-----BEGIN ` and `-----`.
const PEM_LABEL_MAX: usize = 64;
const PEM_BEGIN: &str = "-----BEGIN ";
const PEM_END: &str = "-----END ";
/// Longer words are not taken for keys (this keeps key matching cheap).
const MAX_KEY_BYTES: usize = 128;
/// The shortest run that the high-entropy rule considers.
const ENTROPY_MIN_LEN: usize = 32;

/// Replaces credentials in single lines of text. See the [module docs](self) for
/// what is recognized.
///
/// Cheap to clone: the exact values are shared. Its `Debug` output shows only how many
/// exact values it holds, never the values.
#[derive(Clone)]
pub struct Redactor {
    exact: Arc<[ExactValue]>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field(
                "exact_values",
                &format_args!("<{} withheld>", self.exact.len()),
            )
            .finish()
    }
}

impl Default for Redactor {
    /// A redactor with no exact values: only the built-in patterns apply.
    fn default() -> Self {
        Self::new(std::iter::empty::<&str>())
    }
}

impl Redactor {
    /// A redactor that also replaces every occurrence of each of `exact_values`,
    /// typically the values of the environment entries given to the child.
    ///
    /// Values shorter than [`MIN_EXACT_VALUE_BYTES`] (including empty ones) are ignored.
    /// A value is also matched in its whitespace-collapsed form (which is how the
    /// collector sees lines), and a multi-line value is also matched line by line,
    /// since stderr is redacted one line at a time. Every occurrence is replaced, also
    /// occurrences that overlap (`abca` twice in `abcabca`).
    pub fn new<I, S>(exact_values: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut exact: Vec<Box<str>> = Vec::new();
        let mut add = |value: &str| {
            if value.len() >= MIN_EXACT_VALUE_BYTES {
                exact.push(value.into());
            }
        };
        for value in exact_values {
            let value = value.as_ref();
            add(value);
            add(&clean_line(value));
            if value.contains(['\n', '\r']) {
                for part in value.split(['\n', '\r']) {
                    add(part);
                    add(&clean_line(part));
                }
            }
        }
        exact.sort_unstable();
        exact.dedup();
        Self {
            exact: exact.iter().map(|value| ExactValue::new(value)).collect(),
        }
    }

    /// Where the exact values occur in `text`, overlapping occurrences included: the
    /// union of all occurrences as sorted, disjoint byte ranges.
    ///
    /// When `text` holds escape sequences or hidden characters (see
    /// [`hidden_bytes`]), an occurrence may also be interrupted by any of their
    /// bytes: `correct-horse-\x1b[battery` is an occurrence of
    /// `correct-horse-battery` (the range then covers the interruption too). Linear
    /// in the length of `text` for each value, times `1 + len / 64` for the values of
    /// at most [`MAX_GAPPED_VALUE_BYTES`] when there are such bytes.
    fn exact_ranges(&self, text: &str) -> Vec<(usize, usize)> {
        let mut ranges = Vec::new();
        let hidden = hidden_bytes(text);
        for value in self.exact.iter() {
            match (&hidden, &value.gapped) {
                (Some(hidden), Some(gapped)) => gapped.cover(text, hidden, &mut ranges),
                _ => value.cover(text.as_bytes(), &mut ranges),
            }
        }
        ranges.sort_unstable_by_key(|&(start, _)| start);
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
        for (start, end) in ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        merged
    }

    /// Returns `line` with every recognized credential replaced by [`REDACTED`].
    ///
    /// The line is taken on its own: a line in the middle of a multi-line PEM block is
    /// only caught if it looks random enough (use [`StderrCollector`] for streams).
    /// An exact value interrupted by escape sequences or hidden characters is replaced
    /// with its interruptions (see the [module docs](self)).
    /// Runs in time linear in the line's length (times the number of exact values,
    /// and `1 + len / 64` for a value of `len` bytes on a line holding escapes or
    /// control characters).
    pub fn redact_line(&self, line: &str) -> String {
        self.redact_in(line, Vec::new(), &mut PemState::Outside)
    }

    /// Redacts one line, tracking whether the stream is inside a PEM private-key block.
    /// `spans` are replaced too (the collector passes what is left of exact values
    /// found before the line was cleaned).
    fn redact_in(&self, line: &str, mut spans: Vec<Span>, pem: &mut PemState) -> String {
        let mut from = 0;
        if let PemState::Inside { marked } = *pem {
            match find_pem_marker(line, 0, PEM_END) {
                Some((start, _)) => {
                    if !line[..start].trim().is_empty() {
                        spans.push(Span {
                            start: 0,
                            end: start,
                            redact: !marked,
                        });
                    }
                    *pem = PemState::Outside;
                    from = start;
                }
                None => {
                    if marked || line.trim().is_empty() {
                        return String::new();
                    }
                    *pem = PemState::Inside { marked: true };
                    return REDACTED.to_owned();
                }
            }
        }
        find_pem_blocks(line, from, pem, &mut spans);
        for (start, end) in self.exact_ranges(line) {
            spans.push(Span::redact(start, end));
        }
        let bytes = line.as_bytes();
        find_userinfo(line, &mut spans);
        find_keyed_values(bytes, &mut spans);
        find_token_shapes(bytes, &mut spans);
        find_high_entropy(bytes, &mut spans);
        apply_spans(line, spans)
    }
}

/// An exact value and its Knuth-Morris-Pratt failure table, so that one linear pass
/// finds every occurrence, overlapping ones included (`abca` in `abcabca` occurs twice;
/// a non-overlapping search would leave `bca` behind).
struct ExactValue {
    value: Box<str>,
    /// `fail[i]`: the length of the longest proper prefix of `value[..=i]` that is also
    /// a suffix of it.
    fail: Box<[usize]>,
    /// The matcher for occurrences interrupted by hidden bytes, for values of at
    /// most [`MAX_GAPPED_VALUE_BYTES`].
    gapped: Option<Gapped>,
}

impl ExactValue {
    /// `value` is at least [`MIN_EXACT_VALUE_BYTES`] long (never empty).
    fn new(value: &str) -> Self {
        let needle = value.as_bytes();
        let mut fail = vec![0; needle.len()];
        let mut matched = 0;
        for at in 1..needle.len() {
            while matched > 0 && needle[at] != needle[matched] {
                matched = fail[matched - 1];
            }
            if needle[at] == needle[matched] {
                matched += 1;
            }
            fail[at] = matched;
        }
        Self {
            value: value.into(),
            fail: fail.into(),
            gapped: (needle.len() <= MAX_GAPPED_VALUE_BYTES).then(|| Gapped::new(needle)),
        }
    }

    /// Appends the union of this value's occurrences in `text` to `ranges`, as sorted,
    /// disjoint byte ranges (ranges already there are left alone).
    fn cover(&self, text: &[u8], ranges: &mut Vec<(usize, usize)>) {
        let needle = self.value.as_bytes();
        let Some(&first) = needle.first() else {
            return;
        };
        let own = ranges.len();
        let (mut at, mut matched) = (0, 0);
        while at < text.len() {
            if matched == 0 {
                // Nothing to extend: skip to the next possible first byte.
                match memchr::memchr(first, &text[at..]) {
                    Some(offset) => at += offset,
                    None => return,
                }
            }
            let byte = text[at];
            while matched > 0 && needle[matched] != byte {
                matched = self.fail[matched - 1];
            }
            if needle[matched] == byte {
                matched += 1;
            }
            at += 1;
            if matched == needle.len() {
                let start = at - needle.len();
                match ranges[own..].last_mut() {
                    Some(last) if start <= last.1 => last.1 = at,
                    _ => ranges.push((start, at)),
                }
                matched = self.fail[matched - 1];
            }
        }
    }
}

/// Finds a value whose occurrences may be interrupted by hidden bytes: `value`
/// occurs at `[a, b)` when deleting some hidden bytes of `text[a..b]` leaves exactly
/// `value` (and `text[a]`, `text[b - 1]` are kept). Bit-parallel (shift-and): a state
/// is a set of prefix lengths, `value.len() + 1` bits, one pass per direction.
///
/// A byte of `text` lies in some occurrence when, for some `i`, the prefix
/// `value[..i]` ends just before it and the suffix after it starts just after it
/// (the byte being `value[i]`, or a hidden byte between the two). So a backward pass
/// computes, for every position, which suffixes start after it, and a forward pass
/// which prefixes end before it; their meeting marks the byte. The backward states
/// are kept only every [`GAPPED_BLOCK`] positions and recomputed block by block, so
/// memory stays at `(len / GAPPED_BLOCK + GAPPED_BLOCK)` states.
struct Gapped {
    len: usize,
    /// Words per state: bits `0..=len`.
    words: usize,
    /// For each byte value, `1 +` its index into `masks`, or 0 if it is not in the
    /// value.
    class: Box<[u16; 256]>,
    /// Per distinct byte of the value, `words` words: bit `i` set iff
    /// `value[i]` is that byte.
    masks: Box<[u64]>,
}

/// Positions per stored backward state in [`Gapped::cover`].
const GAPPED_BLOCK: usize = 64;

/// Exact values longer than this are matched only as written (and after cleaning),
/// not across escape sequences and hidden characters planted inside them: the cost of
/// that match grows with the value's length (`1 + len / 64` words per byte of a
/// line, three passes), and at 1 KiB a 64 KiB line full of escapes takes about 10 ms
/// in a release build. Multi-line values are also matched line by line, each part on
/// its own; a long random value's parts are still caught by the high-entropy rule.
pub const MAX_GAPPED_VALUE_BYTES: usize = 1024;

impl Gapped {
    fn new(value: &[u8]) -> Self {
        let len = value.len();
        let words = len / 64 + 1;
        let mut class = Box::new([0u16; 256]);
        let mut masks: Vec<u64> = Vec::new();
        for (index, &byte) in value.iter().enumerate() {
            if class[usize::from(byte)] == 0 {
                masks.resize(masks.len() + words, 0);
                class[usize::from(byte)] = (masks.len() / words) as u16;
            }
            let at = (usize::from(class[usize::from(byte)]) - 1) * words;
            masks[at + index / 64] |= 1 << (index % 64);
        }
        Gapped {
            len,
            words,
            class,
            masks: masks.into(),
        }
    }

    /// The bits of `value` positions holding `byte` (all zero if none).
    fn mask(&self, byte: u8) -> Option<&[u64]> {
        let class = usize::from(self.class[usize::from(byte)]);
        (class > 0).then(|| &self.masks[(class - 1) * self.words..class * self.words])
    }

    /// One byte backwards: `after` is the set of suffix starts `k < len` such that
    /// `value[k..]` occurs starting right after the byte (`len`, the empty suffix, is
    /// implied); writes the same for the byte itself into `out`.
    fn step_back(&self, after: &[u64], byte: u8, hidden: bool, out: &mut [u64]) {
        let top = self.len;
        match self.mask(byte) {
            Some(mask) => {
                // ((after | bit len) >> 1) & mask
                for word in 0..self.words {
                    let mut shifted = after[word] >> 1;
                    let next = after.get(word + 1).copied().unwrap_or(0);
                    shifted |= next << 63;
                    if top / 64 == word + 1 && top.is_multiple_of(64) {
                        shifted |= 1 << 63;
                    }
                    if top / 64 == word && !top.is_multiple_of(64) {
                        shifted |= 1 << (top % 64 - 1);
                    }
                    out[word] = shifted & mask[word];
                }
            }
            None => out.fill(0),
        }
        if hidden {
            for (out, after) in out.iter_mut().zip(after) {
                *out |= after;
            }
        }
    }

    /// Appends the union of the (possibly interrupted) occurrences in `text` to
    /// `ranges` as sorted, disjoint byte ranges on character boundaries. `hidden`
    /// marks the bytes that may interrupt one.
    fn cover(&self, text: &str, hidden: &[bool], ranges: &mut Vec<(usize, usize)>) {
        let bytes = text.as_bytes();
        let n = bytes.len();
        if n < self.len {
            return;
        }
        let words = self.words;
        let blocks = n.div_ceil(GAPPED_BLOCK);
        // `saved[b]`: the backward state after the last byte of block `b`.
        let mut saved = vec![0u64; blocks * words];
        let mut state = vec![0u64; words];
        let mut scratch = vec![0u64; words];
        for block in (0..blocks).rev() {
            saved[block * words..(block + 1) * words].copy_from_slice(&state);
            let start = block * GAPPED_BLOCK;
            let end = (start + GAPPED_BLOCK).min(n);
            for at in (start..end).rev() {
                self.step_back(&state, bytes[at], hidden[at], &mut scratch);
                std::mem::swap(&mut state, &mut scratch);
            }
        }
        // Forward, block by block: `after[i]` is the backward state after byte
        // `start + i`, recomputed from the saved one.
        let mut after = vec![0u64; GAPPED_BLOCK * words];
        let mut before = vec![0u64; words]; // prefixes `1..=len` ending before the byte
        let mut matched = vec![0u64; words];
        let top = self.len;
        let own = ranges.len();
        let mut push = |at: usize| match ranges[own..].last_mut() {
            Some(last) if last.1 >= at => last.1 = ceil_char_boundary(text, at + 1),
            _ => ranges.push((
                floor_char_boundary(text, at),
                ceil_char_boundary(text, at + 1),
            )),
        };
        for block in 0..blocks {
            let start = block * GAPPED_BLOCK;
            let end = (start + GAPPED_BLOCK).min(n);
            let count = end - start;
            after[(count - 1) * words..count * words]
                .copy_from_slice(&saved[block * words..(block + 1) * words]);
            for i in (0..count - 1).rev() {
                let (low, high) = after.split_at_mut((i + 1) * words);
                self.step_back(
                    &high[..words],
                    bytes[start + i + 1],
                    hidden[start + i + 1],
                    &mut low[i * words..],
                );
            }
            for i in 0..count {
                let at = start + i;
                let next = &after[i * words..(i + 1) * words];
                // The prefixes this byte extends: ((before | bit 0) & mask) << 1.
                let mut carry = 1u64; // bit 0: the empty prefix
                match self.mask(bytes[at]) {
                    Some(mask) => {
                        for word in 0..words {
                            let x = (before[word] | carry) & mask[word];
                            carry = 0;
                            matched[word] = x;
                        }
                        let mut high = 0;
                        for word in matched.iter_mut() {
                            let x = *word;
                            *word = (x << 1) | high;
                            high = x >> 63;
                        }
                    }
                    None => matched.fill(0),
                }
                // Kept as `value[i]`: the suffix after `i` must start after the byte.
                let mut covered = matched.iter().zip(next).enumerate().any(|(word, (m, e))| {
                    let mut suffixes = *e;
                    if top / 64 == word {
                        suffixes |= 1 << (top % 64);
                    }
                    m & suffixes != 0
                });
                // Hidden and skipped: a prefix before it meets a suffix after it.
                if hidden[at] && !covered {
                    covered = before.iter().zip(next).any(|(d, e)| d & e != 0);
                }
                if covered {
                    push(at);
                }
                if hidden[at] {
                    for (m, d) in matched.iter_mut().zip(&before) {
                        *m |= d;
                    }
                }
                std::mem::swap(&mut before, &mut matched);
            }
        }
    }
}

/// Which bytes of `text` a reader does not see as themselves, and that may therefore
/// interrupt an exact value without hiding it from view: every byte that an escape
/// sequence starting at any `ESC` would consume (the sequence as [`clean_line`] reads
/// it, from the `ESC` to its final byte, whatever came before), and every control
/// (Unicode Cc) or bidirectional-override character. `None` when there is none.
///
/// Each escape's extent is taken on its own, not as the cleaning happens to parse
/// the line: an escape prefix planted inside a value is then hidden whatever precedes
/// it (an earlier sequence that takes the planted `ESC` for its final byte, say).
/// Extents end at the next `ESC` or one character after it, so this is linear.
fn hidden_bytes(text: &str) -> Option<Vec<bool>> {
    if text.bytes().all(|byte| (0x20..0x7f).contains(&byte)) {
        return None;
    }
    let mut hidden = vec![false; text.len()];
    let mut any = false;
    for (at, c) in text.char_indices() {
        if c == '\u{1b}' {
            let mut rest = text[at + 1..].chars();
            skip_escape(&mut rest);
            let end = text.len() - rest.as_str().len();
            hidden[at..end].fill(true);
            any = true;
        } else if c.is_control() || is_bidi_control(c) {
            hidden[at..at + c.len_utf8()].fill(true);
            any = true;
        }
    }
    any.then_some(hidden)
}

/// Whether the stream is inside a multi-line PEM private-key block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PemState {
    Outside,
    /// `marked`: a [`REDACTED`] has already been shown for this block's body.
    Inside {
        marked: bool,
    },
}

/// A byte range of a line to replace: with [`REDACTED`] if `redact`, else with nothing.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: usize,
    end: usize,
    redact: bool,
}

impl Span {
    fn redact(start: usize, end: usize) -> Self {
        Span {
            start,
            end,
            redact: true,
        }
    }
}

/// Builds the redacted line: overlapping or touching spans merge into one replacement.
fn apply_spans(line: &str, mut spans: Vec<Span>) -> String {
    if spans.is_empty() {
        return line.to_owned();
    }
    for span in &mut spans {
        // Every rule ends spans on ASCII bytes, but widen defensively so slicing can
        // never panic.
        span.start = floor_char_boundary(line, span.start);
        span.end = ceil_char_boundary(line, span.end);
    }
    spans.sort_unstable_by_key(|span| span.start);
    let mut out = String::with_capacity(line.len());
    let mut cursor = 0;
    let mut current: Option<Span> = None;
    let flush = |span: Span, out: &mut String, cursor: &mut usize| {
        out.push_str(&line[*cursor..span.start]);
        if span.redact {
            out.push_str(REDACTED);
        }
        *cursor = span.end;
    };
    for span in spans {
        if span.start >= span.end {
            continue;
        }
        if let Some(open) = current.as_mut()
            && span.start <= open.end
        {
            open.end = open.end.max(span.end);
            open.redact |= span.redact;
            continue;
        }
        if let Some(done) = current.replace(span) {
            flush(done, &mut out, &mut cursor);
        }
    }
    if let Some(done) = current {
        flush(done, &mut out, &mut cursor);
    }
    out.push_str(&line[cursor..]);
    out
}

fn floor_char_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The first occurrence of a short, non-empty `needle` at or after `from`. Linear for
/// the short constant needles used here (cost `haystack.len() * needle.len()` at worst).
fn find_from(haystack: &[u8], mut from: usize, needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    while let Some(offset) = haystack.get(from..)?.iter().position(|&byte| byte == first) {
        let at = from + offset;
        if haystack[at + 1..].starts_with(rest) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

// ---------------------------------------------------------------------------------
// PEM private keys
// ---------------------------------------------------------------------------------

/// Finds the next `-----BEGIN <label>-----` (or END, per `kind`) marker at or after
/// `from` whose label names a private key. Returns the marker's start and end.
fn find_pem_marker(line: &str, mut from: usize, kind: &str) -> Option<(usize, usize)> {
    while let Some(start) = find_from(line.as_bytes(), from, kind.as_bytes()) {
        let label_start = start + kind.len();
        let window_end = (label_start + PEM_LABEL_MAX + 5).min(line.len());
        let window = &line.as_bytes()[label_start..window_end];
        if let Some(close) = window.windows(5).position(|w| w == b"-----")
            && contains_bytes(&window[..close], b"PRIVATE KEY")
        {
            return Some((start, label_start + close + 5));
        }
        from = start + 1;
    }
    None
}

/// Marks the bodies of private-key blocks that start on this line (at or after
/// `from`); enters [`PemState::Inside`] if the last one does not end on it.
fn find_pem_blocks(line: &str, mut from: usize, pem: &mut PemState, spans: &mut Vec<Span>) {
    while let Some((_, body_start)) = find_pem_marker(line, from, PEM_BEGIN) {
        match find_pem_marker(line, body_start, PEM_END) {
            Some((end_start, end_end)) => {
                spans.push(Span::redact(body_start, end_start));
                from = end_end;
            }
            None => {
                let blank = line[body_start..].trim().is_empty();
                if !blank {
                    spans.push(Span::redact(body_start, line.len()));
                }
                *pem = PemState::Inside { marked: !blank };
                return;
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// URL userinfo
// ---------------------------------------------------------------------------------

fn ends_authority(byte: u8) -> bool {
    byte.is_ascii_whitespace()
        || byte.is_ascii_control()
        || matches!(
            byte,
            b'/' | b'?' | b'#' | b'"' | b'\'' | b'`' | b'<' | b'>' | b'\\' | b'{' | b'}' | b'|'
        )
}

/// `scheme://userinfo@host`: marks everything between `://` and the authority's last `@`.
fn find_userinfo(line: &str, spans: &mut Vec<Span>) {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(sep) = find_from(bytes, from, b"://") {
        let start = sep + 3;
        let mut at = None;
        let mut cursor = start;
        while cursor < bytes.len() && !ends_authority(bytes[cursor]) {
            if bytes[cursor] == b'@' {
                at = Some(cursor);
            }
            cursor += 1;
        }
        if let Some(at) = at
            && at > start
        {
            spans.push(Span::redact(start, at));
        }
        from = cursor;
    }
}

// ---------------------------------------------------------------------------------
// Secret-named keys, Authorization headers, Bearer and Basic
// ---------------------------------------------------------------------------------

/// Bytes of a key: `GITHUB_TOKEN`, `x-api-key`, `spring.datasource.password`, `--token`.
fn is_key_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.')
}

/// Bytes that end an unquoted value.
fn ends_value(byte: u8) -> bool {
    byte.is_ascii_whitespace()
        || byte.is_ascii_control()
        || matches!(
            byte,
            b'"' | b'\'' | b'`' | b',' | b';' | b'&' | b')' | b']' | b'}' | b'<' | b'>'
        )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyClass {
    /// Not a secret-named key.
    Plain,
    /// Its value is a secret.
    Secret,
    /// Names a count of tokens (`max_tokens`, `tokenizer`): a numeric value is kept.
    Count,
    /// `Authorization`, `Cookie` and friends: an unquoted value runs to end of line.
    Header,
}

const HEADER_KEYS: &[&[u8]] = &[
    b"authorization",
    b"proxy-authorization",
    b"cookie",
    b"set-cookie",
];

/// Classifies a key. Lower-cased with `_`, `-` and `.` dropped (into `norm`), a secret
/// key contains one of: token, secret, password, passwd, passphrase, pwd, apikey,
/// accesskey, accountkey, privatekey, credential, auth, session, cookie.
fn classify_key(word: &[u8], norm: &mut Vec<u8>) -> KeyClass {
    if word.len() > MAX_KEY_BYTES {
        return KeyClass::Plain;
    }
    if HEADER_KEYS.iter().any(|key| word.eq_ignore_ascii_case(key)) {
        return KeyClass::Header;
    }
    norm.clear();
    norm.extend(
        word.iter()
            .filter(|byte| byte.is_ascii_alphanumeric())
            .map(u8::to_ascii_lowercase),
    );
    const NOT_KEYS: &[&[u8]] = &[b"error", b"errors", b"exception", b"failed", b"failure"];
    if NOT_KEYS.iter().any(|suffix| norm.ends_with(suffix)) {
        return KeyClass::Plain; // `AuthenticationError: invalid key`, `token_failed: 3`
    }
    let mut counts = false;
    for at in 0..norm.len() {
        let rest = &norm[at..];
        // Dispatch on the first letter so that a word is scanned once.
        let parts: &[&[u8]] = match rest[0] {
            b'a' => &[b"apikey", b"accesskey", b"accountkey"],
            b'c' => &[b"credential", b"cookie"],
            b'p' => &[b"password", b"passwd", b"passphrase", b"pwd", b"privatekey"],
            b's' => &[b"secret", b"session"],
            b't' => &[],
            _ => continue,
        };
        if parts.iter().any(|part| rest.starts_with(part)) {
            return KeyClass::Secret;
        }
        if let Some(after) = rest.strip_prefix(b"token") {
            if after.starts_with(b"s") || after.starts_with(b"iz") || after.starts_with(b"is") {
                counts = true; // `max_tokens`, `tokenizer`
            } else {
                return KeyClass::Secret;
            }
        }
        if let Some(after) = rest.strip_prefix(b"auth") {
            let author = after.starts_with(b"or")
                && !after.starts_with(b"oriz")
                && !after.starts_with(b"oris");
            if !author {
                return KeyClass::Secret;
            }
        }
    }
    if counts {
        KeyClass::Count
    } else {
        KeyClass::Plain
    }
}

/// A value found after a key.
struct KeyedValue {
    start: usize,
    end: usize,
    redact: bool,
    /// Where scanning for the next key resumes (past any closing quote).
    resume: usize,
}

fn is_placeholder(value: &[u8]) -> bool {
    const PLACEHOLDERS: &[&[u8]] = &[
        b"null",
        b"none",
        b"nil",
        b"undefined",
        b"true",
        b"false",
        b"redacted",
        b"[redacted]",
        b"<redacted>",
        b"(redacted)",
    ];
    value.iter().all(|&byte| byte == b'*')
        || PLACEHOLDERS
            .iter()
            .any(|placeholder| value.eq_ignore_ascii_case(placeholder))
}

fn is_numeric(value: &[u8]) -> bool {
    value.iter().any(u8::is_ascii_digit)
        && value
            .iter()
            .all(|&byte| byte.is_ascii_digit() || matches!(byte, b'.' | b',' | b'_'))
}

fn keyed_value(
    start: usize,
    end: usize,
    resume: usize,
    bytes: &[u8],
    class: KeyClass,
) -> KeyedValue {
    let value = &bytes[start..end];
    let count = class == KeyClass::Count && is_numeric(value);
    let redact = !(value.is_empty() || is_placeholder(value) || count);
    KeyedValue {
        start,
        end,
        redact,
        resume,
    }
}

/// Finds the value that follows the key `bytes[key_start..key_end]`, if any.
fn value_after_key(
    bytes: &[u8],
    key_start: usize,
    key_end: usize,
    class: KeyClass,
) -> Option<KeyedValue> {
    let len = bytes.len();
    let word = &bytes[key_start..key_end];
    let before = key_start.checked_sub(1).map(|index| bytes[index]);
    if before == Some(b'/') {
        return None; // a path segment: `/etc/passwd: No such file`
    }
    let mut at = key_end;
    if bytes.get(at) == Some(&b':')
        && bytes.get(at + 1).is_some_and(u8::is_ascii_digit)
        && looks_like_file_name(word)
    {
        return None; // a source position: `auth.rs:17:5`
    }
    // <password>value</password>
    if before == Some(b'<') && bytes.get(at) == Some(&b'>') {
        let start = at + 1;
        let end = bytes[start..]
            .iter()
            .position(|&byte| byte == b'<')
            .map_or(len, |offset| start + offset);
        return Some(keyed_value(start, end, end, bytes, class));
    }
    // The closing quote of a quoted key: "key", 'key', \"key\".
    let mut quotes = 0;
    while at < len && quotes < 3 && matches!(bytes[at], b'"' | b'\'' | b'`' | b'\\') {
        at += 1;
        quotes += 1;
    }
    let spaces_start = at;
    while at < len && matches!(bytes[at], b' ' | b'\t') {
        at += 1;
    }
    let spaced = at > spaces_start;
    let flag = bytes[key_start] == b'-';
    if let Some(after) = after_separator(bytes, at) {
        at = after;
    } else {
        match bytes.get(at) {
            // `--password value`
            Some(&next) if quotes == 0 && spaced && flag && next != b'-' => {}
            // A quoted key followed by another string: `{"name": "API_TOKEN", "value": "..."}`
            // or an argument vector `["--api-key", "..."]`.
            Some(b',') if quotes > 0 => {
                let next = skip_blanks(bytes, at + 1);
                if let Some(after) = value_key_at(bytes, next) {
                    at = after;
                } else if flag && matches!(bytes.get(next), Some(b'"' | b'\'')) {
                    at = next;
                } else {
                    return None;
                }
            }
            _ => return None,
        }
    }
    let first = *bytes.get(at)?;
    let (quote, escaped, start) = match first {
        b'\\' if matches!(bytes.get(at + 1), Some(b'"' | b'\'')) => (bytes[at + 1], true, at + 2),
        b'"' | b'\'' | b'`' => (first, false, at + 1),
        _ => (0, false, at),
    };
    if quote != 0 {
        let mut cursor = start;
        let (mut end, mut resume) = (len, len);
        while cursor < len {
            let byte = bytes[cursor];
            if byte == b'\\' {
                if escaped && bytes.get(cursor + 1) == Some(&quote) {
                    (end, resume) = (cursor, cursor + 2);
                    break;
                }
                cursor += 2;
                continue;
            }
            if !escaped && byte == quote {
                (end, resume) = (cursor, cursor + 1);
                break;
            }
            cursor += 1;
        }
        return Some(keyed_value(start, end, resume, bytes, class));
    }
    if matches!(first, b'{' | b'[' | b'(') {
        return None; // a nested structure: its own keys are examined in turn
    }
    if class == KeyClass::Header {
        return Some(keyed_value(start, len, len, bytes, class));
    }
    let end = bytes[start..]
        .iter()
        .position(|&byte| ends_value(byte))
        .map_or(len, |offset| start + offset);
    if end == start {
        return None;
    }
    Some(keyed_value(start, end, end, bytes, class))
}

fn skip_blanks(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && matches!(bytes[at], b' ' | b'\t') {
        at += 1;
    }
    at
}

/// A `:` or `=` separator at `at` (also `:=` and `=>`, not `::`): where the value starts.
fn after_separator(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b':' if bytes.get(at + 1) == Some(&b':') => None, // a path: `auth::login`
        b':' | b'=' => {
            let skip = usize::from(matches!(bytes.get(at + 1), Some(b'=' | b'>')));
            Some(skip_blanks(bytes, at + 1 + skip))
        }
        _ => None,
    }
}

/// A quoted `"value"` key and its separator at `at`: where its value starts.
fn value_key_at(bytes: &[u8], at: usize) -> Option<usize> {
    let quote = *bytes.get(at)?;
    if !matches!(quote, b'"' | b'\'') {
        return None;
    }
    let key = bytes.get(at + 1..at + 6)?;
    if !key.eq_ignore_ascii_case(b"value") || bytes.get(at + 6) != Some(&quote) {
        return None;
    }
    after_separator(bytes, skip_blanks(bytes, at + 7))
}

/// `auth.rs`, `session.py`: a stem and a short alphanumeric extension.
fn looks_like_file_name(word: &[u8]) -> bool {
    match word.iter().rposition(|&byte| byte == b'.') {
        Some(dot) => {
            let extension = &word[dot + 1..];
            dot > 0
                && (1..=5).contains(&extension.len())
                && extension.iter().all(u8::is_ascii_alphanumeric)
        }
        None => false,
    }
}

fn is_bearer_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
}

fn is_base64_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/')
}

fn base64_value(byte: u8) -> Option<u32> {
    Some(match byte {
        b'A'..=b'Z' => u32::from(byte - b'A'),
        b'a'..=b'z' => u32::from(byte - b'a') + 26,
        b'0'..=b'9' => u32::from(byte - b'0') + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    })
}

/// Whether `token` is base64 of printable text containing a `:` (`user:pass`).
fn decodes_to_user_pass(token: &[u8]) -> bool {
    let body = token
        .strip_suffix(b"==")
        .or_else(|| token.strip_suffix(b"="))
        .unwrap_or(token);
    if body.len() % 4 == 1 {
        return false;
    }
    let (mut acc, mut bits, mut colon) = (0u32, 0u32, false);
    for &byte in body {
        let Some(value) = base64_value(byte) else {
            return false;
        };
        acc = (acc << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            let decoded = (acc >> bits) & 0xff;
            acc &= (1 << bits) - 1;
            if !(0x20..0x7f).contains(&decoded) {
                return false;
            }
            colon |= decoded == u32::from(b':');
        }
    }
    colon
}

fn looks_like_bearer(token: &[u8]) -> bool {
    token.len() >= 8 && (token.len() >= 20 || !token.iter().all(u8::is_ascii_alphabetic))
}

fn looks_like_basic(token: &[u8]) -> bool {
    token.len() >= 8
        && (token
            .iter()
            .any(|&byte| byte.is_ascii_digit() || matches!(byte, b'+' | b'/' | b'='))
            || decodes_to_user_pass(token))
}

/// The credential after `Bearer` or `Basic` (whose end is `at`), if it looks like one.
fn scheme_credential(bytes: &[u8], at: usize, basic: bool) -> Option<(usize, usize)> {
    let mut cursor = at;
    while cursor < bytes.len() && matches!(bytes[cursor], b' ' | b'\t') {
        cursor += 1;
    }
    if cursor == at {
        return None;
    }
    let start = cursor;
    let accept = if basic {
        is_base64_byte
    } else {
        is_bearer_byte
    };
    while cursor < bytes.len() && accept(bytes[cursor]) {
        cursor += 1;
    }
    while cursor < bytes.len() && bytes[cursor] == b'=' {
        cursor += 1;
    }
    let token = &bytes[start..cursor];
    let looks = if basic {
        looks_like_basic(token)
    } else {
        looks_like_bearer(token)
    };
    looks.then_some((start, cursor))
}

/// Walks the line word by word, marking values of secret-named keys and the
/// credentials after `Bearer` and `Basic`. Linear: scanning resumes after each value.
fn find_keyed_values(bytes: &[u8], spans: &mut Vec<Span>) {
    let mut norm = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !is_key_byte(bytes[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && is_key_byte(bytes[at]) {
            at += 1;
        }
        let word = &bytes[start..at];
        let bearer = word.eq_ignore_ascii_case(b"bearer");
        if bearer || word.eq_ignore_ascii_case(b"basic") {
            if let Some((credential_start, credential_end)) = scheme_credential(bytes, at, !bearer)
            {
                spans.push(Span::redact(credential_start, credential_end));
                at = credential_end;
            }
            continue;
        }
        let class = classify_key(word, &mut norm);
        if class == KeyClass::Plain {
            continue;
        }
        if let Some(value) = value_after_key(bytes, start, at, class) {
            if value.redact {
                spans.push(Span::redact(value.start, value.end));
            }
            at = at.max(value.resume);
        }
    }
}

// ---------------------------------------------------------------------------------
// Token shapes and high-entropy runs
// ---------------------------------------------------------------------------------

/// Bytes of a token: alphanumerics, `_` and `-`. A shape must start after a non-token byte.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-')
}

/// Prefix, minimum length of the token run after it, and whether that run needs a digit.
const TOKEN_PREFIXES: &[(&[u8], usize, bool)] = &[
    (b"ghp_", 20, false),
    (b"gho_", 20, false),
    (b"ghu_", 20, false),
    (b"ghs_", 20, false),
    (b"ghr_", 20, false),
    (b"github_pat_", 20, false),
    (b"sk-", 16, true),
    (b"sk_live_", 16, false),
    (b"sk_test_", 16, false),
    (b"rk_live_", 16, false),
    (b"rk_test_", 16, false),
    (b"whsec_", 24, false),
    (b"xoxa-", 10, true),
    (b"xoxb-", 10, true),
    (b"xoxe-", 10, true),
    (b"xoxo-", 10, true),
    (b"xoxp-", 10, true),
    (b"xoxr-", 10, true),
    (b"xoxs-", 10, true),
    (b"xapp-", 10, true),
    (b"AIza", 35, false),
    (b"ya29.", 20, false),
    (b"glpat-", 20, false),
    (b"npm_", 36, false),
    (b"pypi-", 50, false),
    (b"hf_", 30, false),
    (b"SG.", 20, false),
    (b"shpat_", 32, false),
    (b"shpss_", 32, false),
    (b"dop_v1_", 60, false),
];

fn token_run_end(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && is_token_byte(bytes[at]) {
        at += 1;
    }
    at
}

/// `eyJ<header>.eyJ<payload>.<signature>` starting at `at`: its end.
fn jwt_end(bytes: &[u8], at: usize) -> Option<usize> {
    let header_end = token_run_end(bytes, at + 3);
    let payload = header_end + 1;
    if bytes.get(header_end) != Some(&b'.') || !bytes[payload..].starts_with(b"eyJ") {
        return None;
    }
    let payload_end = token_run_end(bytes, payload + 3);
    if bytes.get(payload_end) != Some(&b'.') {
        return None;
    }
    Some(token_run_end(bytes, payload_end + 1))
}

/// The end of a well-known token shape starting at `at`, if one does.
fn token_shape_end(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = &bytes[at..];
    for &(prefix, min_len, needs_digit) in TOKEN_PREFIXES {
        if rest.starts_with(prefix) {
            let body_start = at + prefix.len();
            let end = token_run_end(bytes, body_start);
            let body = &bytes[body_start..end];
            if body.len() >= min_len && (!needs_digit || body.iter().any(u8::is_ascii_digit)) {
                return Some(end);
            }
        }
    }
    if rest.starts_with(b"AKIA") || rest.starts_with(b"ASIA") {
        let id_ok = rest.get(4..20).is_some_and(|id| {
            id.iter()
                .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit())
        });
        let bounded = rest
            .get(20)
            .is_none_or(|byte| !byte.is_ascii_alphanumeric());
        if id_ok && bounded {
            return Some(at + 20);
        }
    }
    if rest.starts_with(b"eyJ") {
        return jwt_end(bytes, at);
    }
    None
}

/// Bytes that can start a token shape, for a cheap first test.
const TOKEN_FIRST_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut index = 0;
    while index < TOKEN_PREFIXES.len() {
        table[TOKEN_PREFIXES[index].0[0] as usize] = true;
        index += 1;
    }
    table[b'A' as usize] = true; // AKIA, ASIA
    table[b'e' as usize] = true; // eyJ
    table
};

fn find_token_shapes(bytes: &[u8], spans: &mut Vec<Span>) {
    let mut at = 0;
    while at < bytes.len() {
        let boundary = at == 0 || !is_token_byte(bytes[at - 1]);
        if !boundary || !TOKEN_FIRST_BYTES[usize::from(bytes[at])] {
            at += 1;
            continue;
        }
        match token_shape_end(bytes, at) {
            Some(end) => {
                spans.push(Span::redact(at, end));
                at = end.max(at + 1);
            }
            None => at += 1,
        }
    }
}

fn is_entropy_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'_' | b'-')
}

/// Whether a run looks like random base64 rather than a path or an identifier: long,
/// mixing upper case, lower case and digits, changing class often, and few `/`.
fn looks_random(run: &[u8]) -> bool {
    if run.len() < ENTROPY_MIN_LEN {
        return false;
    }
    let class = |byte: u8| match byte {
        b'A'..=b'Z' => 0u8,
        b'a'..=b'z' => 1,
        b'0'..=b'9' => 2,
        _ => 3,
    };
    let mut seen = [false; 4];
    let (mut changes, mut slashes) = (0usize, 0usize);
    let mut previous = None;
    for &byte in run {
        let current = class(byte);
        seen[usize::from(current)] = true;
        if previous.is_some_and(|previous| previous != current) {
            changes += 1;
        }
        previous = Some(current);
        slashes += usize::from(byte == b'/');
    }
    seen[0] && seen[1] && seen[2] && changes * 3 >= run.len() && slashes * 16 <= run.len()
}

fn find_high_entropy(bytes: &[u8], spans: &mut Vec<Span>) {
    let mut at = 0;
    while at < bytes.len() {
        if !is_entropy_byte(bytes[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && is_entropy_byte(bytes[at]) {
            at += 1;
        }
        let run_end = at;
        while at < bytes.len() && bytes[at] == b'=' {
            at += 1;
        }
        if looks_random(&bytes[start..run_end]) {
            spans.push(Span::redact(start, at));
        }
    }
}

// ---------------------------------------------------------------------------------
// Cleaning: escape sequences, control characters, whitespace
// ---------------------------------------------------------------------------------

/// Characters that reorder displayed text (Trojan Source) and are never needed in a log.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Strips terminal escape sequences, turns other control and bidi characters into
/// spaces, and collapses whitespace runs to one space, trimming both ends.
fn clean_line(text: &str) -> String {
    clean_tracking(text, &[]).0
}

/// [`clean_line`], also telling where the byte ranges `ranges` of `text` (sorted and
/// disjoint) end up: for each, the span of the cleaned text that holds whatever of it
/// survives cleaning, without a collapsed space in front. A range whose characters
/// all vanish (eaten by an escape sequence, or blank) yields no span.
///
/// An escape sequence may start before a range and consume its first characters
/// (`ESC [` before `correct-horse` takes the `c` as its final byte), or swallow all
/// of it (an OSC string); either way the characters that remain are in the span.
fn clean_tracking(text: &str, ranges: &[(usize, usize)]) -> (String, Vec<Span>) {
    let mut out = String::with_capacity(text.len());
    let mut spans = Vec::new();
    let mut space = false;
    // The next range endpoint to reach (`2 * i` starts range `i`, `2 * i + 1` ends it)
    // and where the open range starts in `out`.
    let (mut endpoint, mut open) = (0, 0);
    let mut chars = text.chars();
    loop {
        // Every character before `offset` has been handled: what it produced is in
        // `out`, except a pending space, which belongs to the next visible character.
        let offset = text.len() - chars.as_str().len();
        while let Some(&(start, end)) = ranges.get(endpoint / 2) {
            let starts = endpoint % 2 == 0;
            if (if starts { start } else { end }) > offset {
                break;
            }
            if starts {
                open = out.len() + usize::from(space);
            } else if out.len() > open {
                spans.push(Span::redact(open, out.len()));
            }
            endpoint += 1;
        }
        let Some(c) = chars.next() else {
            break;
        };
        if c == '\u{1b}' {
            skip_escape(&mut chars);
            continue;
        }
        if c.is_whitespace() || c.is_control() || is_bidi_control(c) {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    (out, spans)
}

/// Consumes the rest of an escape sequence whose ESC has just been read.
fn skip_escape(chars: &mut std::str::Chars<'_>) {
    match chars.next() {
        // CSI: parameters and intermediates, then one final byte.
        Some('[') => {
            for c in chars.by_ref() {
                if !('\u{20}'..='\u{3f}').contains(&c) {
                    break;
                }
            }
        }
        // OSC (and the other string sequences): up to BEL or ST (ESC \).
        Some(']' | 'P' | 'X' | '^' | '_') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    chars.next();
                    break;
                }
            }
        }
        // Two-byte sequences (and a charset designation's one extra byte).
        Some('(' | ')' | '*' | '+' | '#' | '%') => {
            chars.next();
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------
// The collector
// ---------------------------------------------------------------------------------

/// Grows `buffer` so it can take `additional` more bytes, never beyond `cap` capacity
/// (callers ensure `len + additional <= cap`), amortized by doubling.
fn reserve_within(buffer: &mut Vec<u8>, additional: usize, cap: usize) {
    let needed = buffer.len() + additional;
    if needed <= buffer.capacity() {
        return;
    }
    let target = buffer
        .capacity()
        .saturating_mul(2)
        .max(64)
        .min(cap)
        .max(needed);
    buffer.reserve_exact(target - buffer.len());
}

/// [`reserve_within`] for the tail.
fn reserve_tail(tail: &mut String, additional: usize, cap: usize) {
    let needed = tail.len() + additional;
    if needed <= tail.capacity() {
        return;
    }
    let target = tail
        .capacity()
        .saturating_mul(2)
        .max(64)
        .min(cap)
        .max(needed);
    tail.reserve_exact(target - tail.len());
}

/// Drains a child's raw stderr into a bounded tail of redacted text.
///
/// Bytes are split into lines at `\n` (a trailing `\r` is dropped); each complete line
/// is decoded (lossily, if it is not UTF-8), cleaned of terminal escapes and control
/// characters, whitespace-collapsed, and redacted with the [`Redactor`]. Exact values
/// are found in the decoded line before it is cleaned as well as after: whatever of an
/// occurrence survives cleaning is redacted, so an escape sequence in front of a value
/// cannot shorten it out of the exact-value rule's reach, nor one planted inside it
/// (an occurrence in the line as written may be interrupted by escape sequences and
/// control characters; see the [module docs](self)). Only then is
/// it appended to the tail, joined to the previous line by one space, and the tail is
/// cut from the front to at most `max_bytes` bytes, on a character boundary.
///
/// A line longer than [`MAX_STDERR_LINE_BYTES`] is withheld whole and appears as
/// [`WITHHELD_LINE`]; once a partial line exceeds that size its bytes are discarded up
/// to the next newline. The collector thus retains at most
/// `MAX_STDERR_LINE_BYTES + max_bytes` bytes whatever it is fed (plus transient
/// copies of one line while it is redacted). The result does not depend on how the
/// stream is chunked.
///
/// Its `Debug` output shows sizes only, never buffered text.
pub struct StderrCollector {
    redactor: Redactor,
    max_bytes: usize,
    /// The current partial line, at most [`MAX_STDERR_LINE_BYTES`] bytes.
    partial: Vec<u8>,
    /// The partial line ended with a `\r`, held back in case a `\n` follows.
    pending_cr: bool,
    /// The current line is over the limit: discard until the next newline.
    discarding: bool,
    pem: PemState,
    tail: String,
}

impl fmt::Debug for StderrCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StderrCollector")
            .field("redactor", &self.redactor)
            .field("max_bytes", &self.max_bytes)
            .field("partial_bytes", &self.partial.len())
            .field("discarding", &self.discarding)
            .field("tail_bytes", &self.tail.len())
            .finish()
    }
}

impl StderrCollector {
    /// A collector that redacts with `redactor` and keeps at most `max_bytes` bytes of
    /// tail (`maxStderrBytes`, default 2048). With `max_bytes == 0` nothing is kept.
    pub fn new(redactor: Redactor, max_bytes: usize) -> Self {
        Self {
            redactor,
            max_bytes,
            partial: Vec::new(),
            pending_cr: false,
            discarding: false,
            pem: PemState::Outside,
            tail: String::new(),
        }
    }

    /// Feeds raw stderr bytes. Chunks may split lines anywhere, even inside a UTF-8
    /// character; complete lines are redacted and appended to the tail at once.
    pub fn push(&mut self, mut chunk: &[u8]) {
        while let Some(newline) = chunk.iter().position(|&byte| byte == b'\n') {
            self.absorb(&chunk[..newline]);
            self.end_line();
            chunk = &chunk[newline + 1..];
        }
        self.absorb(chunk);
    }

    /// Marks end of stream: a trailing partial line is redacted and kept like a line.
    /// Calling it again, or pushing more afterwards, is harmless.
    pub fn finish(&mut self) {
        if self.discarding || self.pending_cr || !self.partial.is_empty() {
            self.end_line();
        }
    }

    /// The current tail: redacted, whitespace-collapsed, at most `max_bytes` bytes.
    /// Empty if nothing (or only blank lines) arrived.
    pub fn tail(&self) -> &str {
        &self.tail
    }

    /// Bytes currently buffered: the partial line plus the tail. Never more than
    /// `MAX_STDERR_LINE_BYTES + max_bytes`.
    pub fn retained_bytes(&self) -> usize {
        self.partial.len() + self.tail.len()
    }

    /// Appends bytes of the current line (no `\n` among them).
    fn absorb(&mut self, segment: &[u8]) {
        if segment.is_empty() || self.discarding {
            return;
        }
        let (body, ends_cr) = match segment.split_last() {
            Some((&b'\r', body)) => (body, true),
            _ => (segment, false),
        };
        let additional = usize::from(self.pending_cr) + body.len();
        if self.partial.len() + additional > MAX_STDERR_LINE_BYTES {
            self.discarding = true;
            self.pending_cr = false;
            self.partial.clear();
            return;
        }
        reserve_within(&mut self.partial, additional, MAX_STDERR_LINE_BYTES);
        if self.pending_cr {
            self.partial.push(b'\r');
        }
        self.partial.extend_from_slice(body);
        self.pending_cr = ends_cr;
    }

    /// The current line is complete (a newline or end of stream).
    fn end_line(&mut self) {
        self.pending_cr = false;
        if self.discarding {
            self.discarding = false;
            self.append(WITHHELD_LINE);
            return;
        }
        let raw = std::mem::take(&mut self.partial);
        let (cleaned, exact) = {
            // Exact values are looked for in the line as written too, before cleaning
            // can eat into them: whatever of them survives cleaning is redacted, even
            // when an escape sequence has consumed their first characters. (They are
            // looked for again after cleaning, which can join a value that an escape
            // sequence split.)
            let text = String::from_utf8_lossy(&raw);
            clean_tracking(&text, &self.redactor.exact_ranges(&text))
        };
        self.partial = raw;
        self.partial.clear();
        let redacted = self.redactor.redact_in(&cleaned, exact, &mut self.pem);
        self.append(redacted.trim());
    }

    /// Appends one redacted line to the tail and cuts the tail to `max_bytes`.
    fn append(&mut self, line: &str) {
        if line.is_empty() || self.max_bytes == 0 {
            return;
        }
        let max = self.max_bytes;
        if line.len() >= max {
            let cut = ceil_char_boundary(line, line.len() - max);
            let kept = line[cut..].trim_start();
            self.tail.clear();
            reserve_tail(&mut self.tail, kept.len(), max);
            self.tail.push_str(kept);
            return;
        }
        let separator = usize::from(!self.tail.is_empty());
        let total = self.tail.len() + separator + line.len();
        if total > max {
            let excess = total - max;
            if excess >= self.tail.len() {
                self.tail.clear();
            } else {
                let cut = ceil_char_boundary(&self.tail, excess);
                self.tail.drain(..cut);
                if self.tail.starts_with(' ') {
                    self.tail.remove(0);
                }
            }
        }
        let separator = usize::from(!self.tail.is_empty());
        reserve_tail(&mut self.tail, separator + line.len(), max);
        if separator == 1 {
            self.tail.push(' ');
        }
        self.tail.push_str(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORPUS: &str = include_str!("../testdata/redaction/corpus.txt");
    const SECRETS: &str = include_str!("../testdata/redaction/secrets.txt");
    const ENV: &str = include_str!("../testdata/redaction/env.txt");

    fn secrets() -> Vec<&'static str> {
        SECRETS.lines().filter(|line| !line.is_empty()).collect()
    }

    fn corpus_redactor() -> Redactor {
        Redactor::new(ENV.lines())
    }

    fn leaked<'a>(text: &str, secrets: &[&'a str]) -> Vec<&'a str> {
        secrets
            .iter()
            .copied()
            .filter(|secret| text.contains(secret))
            .collect()
    }

    fn collect(redactor: &Redactor, max_bytes: usize, input: &[u8], chunks: &[usize]) -> String {
        let mut collector = StderrCollector::new(redactor.clone(), max_bytes);
        let mut rest = input;
        let mut sizes = chunks.iter().cycle();
        while !rest.is_empty() {
            let size = (*sizes.next().unwrap_or(&1)).clamp(1, rest.len());
            collector.push(&rest[..size]);
            rest = &rest[size..];
        }
        collector.finish();
        collector.tail().to_owned()
    }

    /// Deterministic "random-ish" chunk sizes in `1..=max`, without end.
    fn chunk_sizes(seed: u64, max: usize) -> impl Iterator<Item = usize> {
        let mut state = seed;
        std::iter::repeat_with(move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as usize % max) + 1
        })
    }

    #[test]
    fn corpus_is_consistent() {
        let secrets = secrets();
        assert!(secrets.len() >= 40, "corpus too small: {}", secrets.len());
        for secret in &secrets {
            assert!(CORPUS.contains(secret), "secret not planted: {secret}");
        }
    }

    #[test]
    fn corpus_lines_are_redacted_one_by_one() {
        let redactor = corpus_redactor();
        let secrets = secrets();
        let mut in_pem = false;
        let mut checked = 0;
        for line in CORPUS.lines() {
            if in_pem {
                // PEM body lines are only caught by the collector, which tracks blocks.
                in_pem = !line.contains("-----END");
                continue;
            }
            if line.contains("-----BEGIN") && !line.contains("-----END") {
                in_pem = true;
            }
            let out = redactor.redact_line(line);
            assert!(leaked(&out, &secrets).is_empty(), "leak in {out:?}");
            if !leaked(line, &secrets).is_empty() {
                checked += 1;
                assert!(out.contains(REDACTED), "nothing redacted in {line:?}");
            }
        }
        assert!(checked >= 40, "only {checked} lines with secrets");
    }

    #[test]
    fn corpus_survives_no_chunking_and_no_cap() {
        let redactor = corpus_redactor();
        let secrets = secrets();
        let crlf = CORPUS.replace('\n', "\r\n");
        for input in [CORPUS, crlf.as_str()] {
            let input = input.as_bytes();
            let whole = collect(&redactor, usize::MAX, input, &[input.len()]);
            assert!(leaked(&whole, &secrets).is_empty(), "leak in {whole}");
            assert!(whole.contains(
                "-----BEGIN RSA PRIVATE KEY----- [REDACTED] -----END RSA PRIVATE KEY-----"
            ));
            let mut chunkings = vec![vec![1], vec![2], vec![3], vec![7], vec![64]];
            chunkings.extend((0..4).map(|seed| chunk_sizes(seed, 40).take(97).collect::<Vec<_>>()));
            for chunks in &chunkings {
                assert_eq!(
                    collect(&redactor, usize::MAX, input, chunks),
                    whole,
                    "chunks {chunks:?}"
                );
            }
            // Caps: every capped tail is a suffix of the uncapped one, so it leaks nothing
            // the uncapped one does not.
            for cap in [1, 5, 16, 37, 64, 100, 255, 2048] {
                for chunks in chunkings.iter().take(3).chain(chunkings.iter().skip(5)) {
                    let tail = collect(&redactor, cap, input, chunks);
                    assert!(tail.len() <= cap);
                    assert!(whole.ends_with(&tail), "cap {cap}: {tail:?}");
                }
            }
        }
    }

    #[test]
    fn capped_tail_never_leaks_along_the_way() {
        let redactor = corpus_redactor();
        let secrets = secrets();
        for (seed, cap) in [(1, 24), (2, 80), (3, 512), (4, 2048)] {
            let mut collector = StderrCollector::new(redactor.clone(), cap);
            let mut rest = CORPUS.as_bytes();
            for size in chunk_sizes(seed, 23) {
                if rest.is_empty() {
                    break;
                }
                let size = size.min(rest.len());
                collector.push(&rest[..size]);
                rest = &rest[size..];
                assert!(collector.tail().len() <= cap);
                assert!(
                    leaked(collector.tail(), &secrets).is_empty(),
                    "{}",
                    collector.tail()
                );
                assert!(collector.retained_bytes() <= MAX_STDERR_LINE_BYTES + cap);
            }
        }
    }

    #[test]
    fn cap_cannot_cut_a_credential_prefix() {
        let token = "ghp_Zx81LmQp0rTuVw29aBcDeFgHiJkLmNoPqRsT";
        let line = format!("{} the token is {token}", "x".repeat(3000));
        let raw_body_len = token.len() - 4;
        // A cap of raw_body_len bytes would, on raw text, keep exactly the body after `ghp_`.
        for cap in [raw_body_len, raw_body_len + 1, token.len(), 10, 11, 12] {
            let mut collector = StderrCollector::new(Redactor::default(), cap);
            collector.push(line.as_bytes());
            collector.push(b"\n");
            let tail = collector.tail();
            assert!(!tail.contains(&token[4..12]), "cap {cap}: {tail:?}");
            assert!(
                REDACTED.ends_with(tail) || tail.ends_with(REDACTED),
                "cap {cap}: {tail:?}"
            );
        }
    }

    #[test]
    fn benign_text_stays_readable() {
        let redactor = Redactor::new(["unrelated-secret-value"]);
        for line in [
            "listening on port 8080",
            "tokens processed: 42",
            "GET /api/users 200 12ms",
            "max_tokens=4096 prompt_tokens: 1200",
            "Server started at http://localhost:3000/mcp",
            "author: Jane Doe <jane@example.com>",
            "authority: login.microsoftonline.com",
            "token expired, refreshing",
            "basic setup complete",
            "Bearer token missing",
            "session started for user 42",
            "error: authentication failed (code=401)",
            "at Object.<anonymous> (/Users/dev/my-mcp-server/node_modules/@modelcontextprotocol/sdk/dist/index.js:42:13)",
            "File \"/usr/lib/python3.11/site-packages/mcp/server/stdio.py\", line 88, in stdio_server",
            "thread 'main' panicked at src/session/auth.rs:17:5: called `Option::unwrap()`",
            "at smthrs::session::Session::new (src/session.rs:10)",
            "request_id=550e8400-e29b-41d4-a716-446655440000 status=ok",
            "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 (HEAD -> main)",
            "Loaded 12 tools: read_file, write_file, search_TokensAndSecretsDocs",
            "password reset email sent to jane@example.com",
            "cookie consent banner disabled",
            "export PATH=/usr/local/bin:/usr/bin",
            "token: null, password: '', secret=***",
            "résumé — naïve café ✓ 日本語のログ",
        ] {
            assert_eq!(redactor.redact_line(line), line);
        }
    }

    #[test]
    fn each_rule() {
        let redactor = Redactor::new(["", "abc", "multi\nline-secret-part", " padded-value "]);
        let cases = [
            (
                "Authorization: token ghx_abc def",
                "Authorization: [REDACTED]",
            ),
            (
                "proxy-authorization: Digest username=x",
                "proxy-authorization: [REDACTED]",
            ),
            ("Cookie: _ga=1; sid=xyz", "Cookie: [REDACTED]"),
            ("Set-Cookie: sid=abc123; Path=/", "Set-Cookie: [REDACTED]"),
            (
                r#"{"Authorization": "Bearer abc", "ok": 1}"#,
                r#"{"Authorization": "[REDACTED]", "ok": 1}"#,
            ),
            (
                "sent bearer\tab12cd34ef to api",
                "sent bearer\t[REDACTED] to api",
            ),
            (
                "header Basic dXNlcjpwYXNzd29yZA== ok",
                "header Basic [REDACTED] ok",
            ),
            ("header BASIC dXNlcjpwYXNz", "header BASIC [REDACTED]"),
            (
                "postgres://admin:hunter2@db:5432/app",
                "postgres://[REDACTED]@db:5432/app",
            ),
            (
                "git https://ghtoken@github.com/a/b and ftp://x.org/@y",
                "git https://[REDACTED]@github.com/a/b and ftp://x.org/@y",
            ),
            (
                "redis://:pass@localhost:6379",
                "redis://[REDACTED]@localhost:6379",
            ),
            (
                "GITHUB_TOKEN=abc123 next=1",
                "GITHUB_TOKEN=[REDACTED] next=1",
            ),
            ("x-api-key: abcd", "x-api-key: [REDACTED]"),
            ("db_password = 'p w d'", "db_password = '[REDACTED]'"),
            (
                r#"{"clientSecret":"a\"b","n":2}"#,
                r#"{"clientSecret":"[REDACTED]","n":2}"#,
            ),
            (
                r#"log "{\"password\":\"p@ss w\"}""#,
                r#"log "{\"password\":\"[REDACTED]\"}""#,
            ),
            (
                "{'api_key': 'zzz', 'n': 1}",
                "{'api_key': '[REDACTED]', 'n': 1}",
            ),
            (
                "run --access-key AK1 --region x",
                "run --access-key [REDACTED] --region x",
            ),
            (
                "run --password=\"a b\" -v",
                "run --password=\"[REDACTED]\" -v",
            ),
            (
                "opts :session_key => 'v4lue'",
                "opts :session_key => '[REDACTED]'",
            ),
            (
                "<Password>s3cr3t</Password>",
                "<Password>[REDACTED]</Password>",
            ),
            ("?auth_token=q1&page=2", "?auth_token=[REDACTED]&page=2"),
            ("max_tokens=abc", "max_tokens=[REDACTED]"),
            (
                "tokens: 10, credentials: {user: a}",
                "tokens: 10, credentials: {user: a}",
            ),
            (
                "&{Name:svc Secret:abc123 Region:us}",
                "&{Name:svc Secret:[REDACTED] Region:us}",
            ),
            (
                r#"args ["--port", "1", "--api-key", "k3y"]"#,
                r#"args ["--port", "1", "--api-key", "[REDACTED]"]"#,
            ),
            (
                r#"env [{"name": "API_TOKEN", "value": "v4l"}, {"name": "A", "value": "b"}]"#,
                r#"env [{"name": "API_TOKEN", "value": "[REDACTED]"}, {"name": "A", "value": "b"}]"#,
            ),
            (
                "openai.AuthenticationError: Error code: 401",
                "openai.AuthenticationError: Error code: 401",
            ),
            (
                "at auth.rs:17:5 and /etc/passwd: No such file",
                "at auth.rs:17:5 and /etc/passwd: No such file",
            ),
            (
                "got multi and line-secret-part",
                "got [REDACTED] and [REDACTED]",
            ),
            ("abc padded-value", "abc [REDACTED]"),
            (
                "-----BEGIN PRIVATE KEY-----\\nMIIEv\\n-----END PRIVATE KEY-----\\n",
                "-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----\\n",
            ),
            (
                "key -----BEGIN EC PRIVATE KEY----- MHcCAQEE",
                "key -----BEGIN EC PRIVATE KEY-----[REDACTED]",
            ),
            (
                "-----BEGIN CERTIFICATE----- MIIBszCCAVmgAwIBAgI",
                "-----BEGIN CERTIFICATE----- MIIBszCCAVmgAwIBAgI",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(redactor.redact_line(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn token_shapes() {
        let redactor = Redactor::default();
        for token in [
            "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
            "gho_16C7e42F292c6912E7710c838347Ae178B4a",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
            "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
            "sk-ant-api03-abcdef0123456789",
            "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            "AKIAIOSFODNN7EXAMPLE",
            "ASIAY34FZKBOKMUTVV7A",
            "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
            "glpat-xxxxxxxxxxxxxxxxxxxx",
            "npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
            "ya29.a0AfH6SMBx-abcdefghijklmnop",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
            "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL",
        ] {
            for line in [
                token.to_owned(),
                format!("value ({token}), next"),
                format!("k={token}"),
            ] {
                let out = redactor.redact_line(&line);
                assert!(!out.contains(token), "{token} survived: {out}");
                assert!(out.contains(REDACTED));
            }
        }
        // Near misses stay.
        for line in [
            "ghp_short",
            "sk-learn-is-a-library-name",
            "AKIAIOSFODNN7EXAMPLEX",
            "eyJhbGciOiJIUzI1NiJ9 alone",
            "xoxb-nodigitshere",
        ] {
            assert_eq!(redactor.redact_line(line), line);
        }
    }

    #[test]
    fn redaction_is_idempotent_and_merges() {
        let redactor = Redactor::default();
        let once = redactor.redact_line("token=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 end");
        assert_eq!(once, "token=[REDACTED] end");
        assert_eq!(redactor.redact_line(&once), once);
    }

    #[test]
    fn pem_block_in_the_collector() {
        let mut collector = StderrCollector::new(Redactor::default(), 4096);
        collector.push(
            b"loading key\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA\n",
        );
        collector.push(b"-----END OPENSSH PRIVATE KEY----- done\nnext line\n");
        assert_eq!(
            collector.tail(),
            "loading key -----BEGIN OPENSSH PRIVATE KEY----- [REDACTED] -----END OPENSSH PRIVATE KEY----- done next line"
        );
        // The body on the BEGIN line is redacted once, not twice.
        let mut collector = StderrCollector::new(Redactor::default(), 4096);
        collector
            .push(b"k: -----BEGIN PRIVATE KEY----- MIIEvQ\nAAAA\nBBBB -----END PRIVATE KEY-----\n");
        assert_eq!(
            collector.tail(),
            "k: -----BEGIN PRIVATE KEY-----[REDACTED] -----END PRIVATE KEY-----"
        );
    }

    #[test]
    fn over_long_line_is_withheld() {
        let secret = "hunter2-is-my-password";
        let mut collector = StderrCollector::new(Redactor::new([secret]), 2048);
        let mut long = format!("{secret} ").into_bytes();
        long.resize(MAX_STDERR_LINE_BYTES + 1, b'a');
        collector.push(b"before\n");
        collector.push(&long);
        collector.push(b"\nafter\n");
        assert_eq!(collector.tail(), format!("before {WITHHELD_LINE} after"));

        // Exactly at the limit (even with a CRLF ending) is kept.
        let mut collector = StderrCollector::new(Redactor::default(), 16);
        let mut exact = vec![b'b'; MAX_STDERR_LINE_BYTES];
        exact.extend_from_slice(b"\r\n");
        collector.push(&exact);
        assert_eq!(collector.tail(), "b".repeat(16));
        assert!(collector.partial.capacity() <= MAX_STDERR_LINE_BYTES);

        // One byte over, fed byte by byte.
        let mut collector = StderrCollector::new(Redactor::default(), 64);
        for _ in 0..=MAX_STDERR_LINE_BYTES {
            collector.push(b"c");
        }
        collector.push(b"\r\n");
        assert_eq!(collector.tail(), WITHHELD_LINE);
    }

    #[test]
    fn memory_is_bounded_for_a_huge_line() {
        let max = 2048;
        let mut collector = StderrCollector::new(Redactor::default(), max);
        collector.push(b"first line\n");
        let chunk = vec![b'z'; 1024 * 1024];
        for _ in 0..10 {
            collector.push(&chunk);
            assert!(collector.retained_bytes() <= MAX_STDERR_LINE_BYTES + max);
            assert!(collector.partial.capacity() <= MAX_STDERR_LINE_BYTES);
        }
        collector.push(b"tail of the long line\nsecond line");
        collector.finish();
        assert_eq!(
            collector.tail(),
            format!("first line {WITHHELD_LINE} second line")
        );
        assert!(collector.tail.capacity() <= max);
    }

    #[test]
    fn finish_keeps_a_partial_line() {
        let mut collector = StderrCollector::new(Redactor::default(), 100);
        collector.push(b"one\ntwo password=abc\r");
        assert_eq!(collector.tail(), "one");
        collector.finish();
        assert_eq!(collector.tail(), "one two password=[REDACTED]");
        collector.finish();
        assert_eq!(collector.tail(), "one two password=[REDACTED]");
        // A discarded partial line at EOF is reported as withheld.
        let mut collector = StderrCollector::new(Redactor::default(), 100);
        collector.push(&vec![b'q'; MAX_STDERR_LINE_BYTES + 10]);
        collector.finish();
        assert_eq!(collector.tail(), WITHHELD_LINE);
    }

    #[test]
    fn whitespace_and_escapes_collapse() {
        let mut collector = StderrCollector::new(Redactor::new(["two  words"]), 200);
        collector.push(b"  a\t\tb   c  \r\n\n   \n\x1b[31mERROR\x1b[0m:\x07 to\x1b[1mken=ghp_\x1b[0mAbCdEfGhIj0123456789xyz\n");
        collector.push("bidi \u{202E}evil\u{202C} and two words and two\t words\n".as_bytes());
        collector.push(b"\x1b]0;title\x07osc done\n");
        assert_eq!(
            collector.tail(),
            "a b c ERROR: token=[REDACTED] bidi evil and [REDACTED] and [REDACTED] osc done"
        );
    }

    /// The longest run of consecutive characters of `value` found in `text` once the
    /// crate's own markers are masked out.
    fn longest_run(text: &str, value: &str) -> usize {
        let masked = text
            .replace(REDACTED, "\u{0}")
            .replace(WITHHELD_LINE, "\u{0}");
        let chars: Vec<char> = value.chars().collect();
        (1..=chars.len())
            .rev()
            .find(|&len| {
                chars
                    .windows(len)
                    .any(|run| masked.contains(&run.iter().collect::<String>()))
            })
            .unwrap_or(0)
    }

    fn tail_of(redactor: &Redactor, pieces: &[&[u8]]) -> String {
        let mut collector = StderrCollector::new(redactor.clone(), 4096);
        for piece in pieces {
            collector.push(piece);
        }
        collector.finish();
        collector.tail().to_owned()
    }

    /// `fuzz/artifacts-found/redaction/escape-eats-first-char`: `ESC [ c` is a complete
    /// CSI sequence, so cleaning drops the `c`, and matching the value only after
    /// cleaning let `orrect-horse-battery` through.
    #[test]
    fn escape_eats_first_char_reproducer() {
        let redactor = Redactor::new(["correct-horse-battery"]);
        let tail = tail_of(&redactor, &[b"key \x1b[correct-horse-battery staple\n"]);
        assert_eq!(tail, "key [REDACTED] staple");
    }

    /// Every kind of escape or control character written right before a value: what
    /// cleaning leaves of the value is redacted, and nothing of it survives.
    #[test]
    fn a_value_behind_any_escape_is_redacted() {
        let value = "correct-horse-battery";
        let redactor = Redactor::new([value, "0123-abc-secret"]);
        let kept = "key [REDACTED] staple";
        let cases: &[(&[u8], &str)] = &[
            (b"\x1b[", kept),              // CSI without parameters: `c` is its final byte
            (b"\x1b[31;1", kept),          // CSI with parameters
            (b"\x1b[?25", kept),           // private parameters
            (b"\x1b[1 ", kept),            // an intermediate byte
            (b"\x1b[31m", kept),           // a complete CSI: nothing is eaten
            (b"\x1b", kept),               // a lone ESC: `ESC c` is two bytes
            (b"\x1b(", kept),              // a charset designation takes one more
            (b"\x1b#", kept),              // so does `ESC #`
            (b"\x1b]0;title\x07", kept),   // a complete OSC
            (b"\x1b]0;title\x1b", kept),   // an OSC whose ST is cut short: eats `c`
            (b"\x1b]8;;", "key"),          // an unterminated OSC swallows the rest
            (b"\x1bPq", "key"),            // so does a DCS
            ("\u{9b}".as_bytes(), kept),   // C1 CSI: a control, so a space
            ("\u{9d}".as_bytes(), kept),   // C1 OSC
            ("\u{85}".as_bytes(), kept),   // NEL
            ("\u{202e}".as_bytes(), kept), // a bidi override
            (b"\x9b", "key \u{fffd}[REDACTED] staple"), // a raw C1 byte is not UTF-8
        ];
        for &(prefix, expected) in cases {
            let line = [b"key ", prefix, value.as_bytes(), b" staple\n"].concat();
            let tail = tail_of(&redactor, &[&line]);
            assert_eq!(tail, expected, "after {prefix:?}");
            // (Single letters of it occur in `key` and `staple`.)
            assert!(longest_run(&tail, value) < 2, "after {prefix:?}: {tail:?}");
        }
        // A value starting with CSI parameter and intermediate characters loses more
        // than one (`0123-a` is a whole CSI sequence).
        let tail = tail_of(&redactor, &[b"key \x1b[0123-abc-secret staple\n"]);
        assert_eq!(tail, kept);
    }

    /// `fuzz/artifacts-found/redaction/escape-inside-eats-a-char`: an escape planted
    /// *inside* a value, whose final byte is one of the value's characters
    /// (`ESC [ b` in `correct-horse-\x1b[battery`), split it in the line as written
    /// and ate the `b` when the line was cleaned, so neither pass matched and
    /// `correct-horse-attery` reached the tail.
    #[test]
    fn escape_inside_a_value_reproducer() {
        let redactor = Redactor::new(["correct-horse-battery"]);
        let line = b"key correct-horse-\x1b[battery staple\n";
        assert_eq!(tail_of(&redactor, &[line]), "key [REDACTED] staple");
        let raw = String::from_utf8_lossy(&line[..line.len() - 1]);
        assert_eq!(redactor.redact_line(&raw), "key [REDACTED] staple");
    }

    /// Escape-sequence prefixes and hidden characters planted anywhere inside a value
    /// (also at several places at once): not one of its characters survives, in the
    /// tail or in `redact_line`, whatever the split.
    #[test]
    fn a_value_split_by_any_escape_is_redacted() {
        let value = "correct-horse-battery";
        let redactor = Redactor::new([value]);
        let pieces: &[&str] = &[
            "\x1b",
            "\x1b[",
            "\x1b[1;",
            "\x1b[?",
            "\x1b[31m",
            "\x1b]",
            "\x1b]0;",
            "\x1b]0;t\x07",
            "\x1b(",
            "\x1b#",
            "\x1bP",
            "\x1b_",
            "\x1b\x1b",
            "\x00",
            "\x07",
            "\t",
            "\r",
            "\x7f",
            "\u{85}",
            "\u{9b}",
            "\u{202e}",
            "\u{2066}",
        ];
        // Characters of `value` that appear outside it in these lines: none.
        let (before, after) = ("KEY=", " ZZZ");
        let survivors = |text: &str| -> Vec<char> {
            let masked = text.replace(REDACTED, "");
            masked.chars().filter(|&c| value.contains(c)).collect()
        };
        let chars: Vec<(usize, char)> = value.char_indices().collect();
        for piece in pieces {
            for &(split, _) in chars.iter().skip(1) {
                let planted = format!("{}{piece}{}", &value[..split], &value[split..]);
                let line = format!("{before}{planted}{after}");
                let tail = tail_of(&redactor, &[format!("{line}\n").as_bytes()]);
                assert!(
                    survivors(&tail).is_empty(),
                    "{piece:?} at {split}: {tail:?}"
                );
                let out = redactor.redact_line(&line);
                assert!(survivors(&out).is_empty(), "{piece:?} at {split}: {out:?}");
            }
            // Planted at every gap at once.
            let mut planted = String::new();
            for (index, c) in value.chars().enumerate() {
                if index > 0 {
                    planted.push_str(piece);
                }
                planted.push(c);
            }
            let line = format!("{before}{planted}{after}");
            let tail = tail_of(&redactor, &[format!("{line}\n").as_bytes()]);
            assert!(
                survivors(&tail).is_empty(),
                "{piece:?} everywhere: {tail:?}"
            );
            assert!(survivors(&redactor.redact_line(&line)).is_empty());
        }
        // Text that only looks like the value once escapes are skipped is not text a
        // reader sees as the value unless those bytes are escapes: a printable
        // character inside it keeps it apart.
        assert_eq!(
            redactor.redact_line("correct-horse-Xbattery"),
            "correct-horse-Xbattery"
        );
    }

    /// The bit-parallel matcher against a brute-force search of every interrupted
    /// occurrence, on many small random lines, values of one to three words long.
    #[test]
    fn gapped_matching_agrees_with_a_brute_force_reference() {
        fn reference(text: &[u8], hidden: &[bool], value: &[u8]) -> Vec<bool> {
            let mut covered = vec![false; text.len()];
            for start in 0..text.len() {
                if text[start] != value[0] {
                    continue;
                }
                // (position, matched) pairs reachable from a match starting here.
                let mut stack = vec![(start + 1, 1)];
                let mut seen = std::collections::HashSet::new();
                while let Some((at, done)) = stack.pop() {
                    if !seen.insert((at, done)) {
                        continue;
                    }
                    if done == value.len() {
                        covered[start..at].iter_mut().for_each(|c| *c = true);
                        continue;
                    }
                    if at < text.len() {
                        if text[at] == value[done] {
                            stack.push((at + 1, done + 1));
                        }
                        if hidden[at] {
                            stack.push((at + 1, done));
                        }
                    }
                }
            }
            covered
        }
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |bound: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % bound as u64) as usize
        };
        let alphabet = b"ab[;1\x1b\x07]\x00(";
        for round in 0..3000 {
            let value_len = match round % 3 {
                0 => 1 + next(6),
                1 => 60 + next(10),
                _ => 126 + next(6),
            };
            let value: Vec<u8> = (0..value_len).map(|_| b"ab[;1"[next(5)]).collect();
            let text_len = value_len + next(value_len + 12);
            let mut text: Vec<u8> = (0..text_len)
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            // Plant the value, interrupted, half of the time.
            if round % 2 == 0 && text_len >= value_len {
                let at = next(text_len - value_len + 1);
                text[at..at + value_len].copy_from_slice(&value);
                let split = at + next(value_len);
                text.splice(split..split, [0x1b, b'['].into_iter().take(1 + next(2)));
            }
            let text = String::from_utf8(text).unwrap();
            let Some(hidden) = hidden_bytes(&text) else {
                continue;
            };
            let gapped = Gapped::new(&value);
            let mut ranges = Vec::new();
            gapped.cover(&text, &hidden, &mut ranges);
            let mut got = vec![false; text.len()];
            for (start, end) in ranges {
                got[start..end].iter_mut().for_each(|c| *c = true);
            }
            let want = reference(text.as_bytes(), &hidden, &value);
            assert_eq!(
                got,
                want,
                "{text:?} / {:?}",
                String::from_utf8_lossy(&value)
            );
        }
    }

    #[test]
    fn hidden_bytes_follow_each_escape_on_its_own() {
        let marks = |text: &str| -> String {
            let hidden = hidden_bytes(text).unwrap_or_default();
            text.bytes()
                .enumerate()
                .map(|(at, _)| {
                    if hidden.get(at) == Some(&true) {
                        '^'
                    } else {
                        '.'
                    }
                })
                .collect()
        };
        assert_eq!(hidden_bytes("plain text"), None);
        assert_eq!(hidden_bytes("naïve"), None);
        assert_eq!(marks("a\x1b[1;2bc"), ".^^^^^^.");
        assert_eq!(marks("a\x1b]0;t\x07b"), ".^^^^^^.");
        assert_eq!(marks("a\x1b(bc"), ".^^^.");
        assert_eq!(marks("a\x1bbc"), ".^^.");
        assert_eq!(marks("a\tb\x7fc"), ".^.^.");
        // A CSI takes the next ESC for its final byte, but that ESC's own sequence
        // is hidden too.
        assert_eq!(marks("\x1b[1\x1b[x y"), "^^^^^^..");
        assert_eq!(marks("a\u{202e}b"), ".^^^.");
    }

    /// A line is only cleaned once complete, so where the reads split it does not
    /// matter, even between an escape and the value it eats into.
    #[test]
    fn a_value_split_across_reads_right_after_an_escape() {
        let value = "correct-horse-battery";
        let redactor = Redactor::new([value]);
        for (prefix, expected) in [
            ("\x1b[", "key [REDACTED] staple"),
            ("\x1b[31;1", "key [REDACTED] staple"),
            ("\x1b", "key [REDACTED] staple"),
            ("\x1b]0;t\x1b", "key [REDACTED] staple"),
            ("\x1b]0;", "key"),
        ] {
            let line = format!("key {prefix}{value} staple\n");
            let bytes = line.as_bytes();
            for first in 1..bytes.len() {
                for second in first..bytes.len() {
                    let tail = tail_of(
                        &redactor,
                        &[&bytes[..first], &bytes[first..second], &bytes[second..]],
                    );
                    assert_eq!(tail, expected, "{prefix:?} cut at {first}, {second}");
                }
            }
        }
    }

    /// Cleaning can eat into a value (so it is matched in the line as written) and can
    /// join one that an escape split (so it is matched in the cleaned line too).
    #[test]
    fn exact_values_are_matched_before_and_after_cleaning() {
        let redactor = Redactor::new(["correct-horse-battery", "pass\x1b[1mword-1234"]);
        for (line, expected) in [
            ("a \x1b[correct-horse-battery", "a [REDACTED]"),
            ("b correct\x1b[0m-horse-battery", "b [REDACTED]"),
            ("c correct-horse\x1b[0m-battery!", "c [REDACTED]!"),
            ("d pass\x1b[1mword-1234 e", "d [REDACTED] e"),
            ("f password-1234 g", "f [REDACTED] g"),
            // A value that holds an escape, behind another that eats its first
            // character: only the match before cleaning sees it.
            ("h \x1b[pass\x1b[1mword-1234 i", "h [REDACTED] i"),
        ] {
            let tail = tail_of(&redactor, &[line.as_bytes()]);
            assert_eq!(tail, expected, "{line:?}");
        }
    }

    #[test]
    fn overlapping_occurrences_are_all_replaced() {
        let redactor = Redactor::new(["abca", "aaaa", "xyxyx"]);
        for (line, expected) in [
            ("abcabca", "[REDACTED]"),
            ("k=abcabcabca!", "k=[REDACTED]!"),
            ("abcab", "[REDACTED]b"),
            ("baaaaaab", "b[REDACTED]b"),
            ("xyxyxyx xyxy", "[REDACTED] xyxy"),
        ] {
            assert_eq!(redactor.redact_line(line), expected, "{line:?}");
            assert_eq!(tail_of(&redactor, &[line.as_bytes()]), expected);
        }
    }

    #[test]
    fn cleaning_tracks_where_ranges_end_up() {
        let text = "  ab\x1b[31mcd  \x1b]0;gone\x07ef \x1b[xyz\t";
        let ranges = [(2, 4), (4, 13), (15, 25), (27, 30), (30, 35)];
        let (cleaned, spans) = clean_tracking(text, &ranges);
        assert_eq!(cleaned, clean_line(text));
        assert_eq!(cleaned, "abcd ef yz");
        let found: Vec<&str> = spans
            .iter()
            .map(|span| &cleaned[span.start..span.end])
            .collect();
        // `ab`; `\x1b[31mcd`; the OSC alone leaves nothing; `ef` without the space
        // before it; `\x1b[x` leaves nothing; `yz\t` leaves `yz`.
        assert_eq!(found, ["ab", "cd", "ef", "yz"]);
        assert!(clean_tracking("", &[(0, 0)]).1.is_empty());
    }

    #[test]
    fn env_values_never_survive_in_part() {
        // The corpus ends with lines where an escape eats the first character of an
        // environment value, or splits one: no run of all but one of its characters
        // may survive, whatever the chunking.
        let redactor = corpus_redactor();
        let input = CORPUS.as_bytes();
        for chunks in [vec![input.len()], vec![1], vec![5], vec![13, 2, 7]] {
            let tail = collect(&redactor, usize::MAX, input, &chunks);
            for value in ENV
                .lines()
                .filter(|value| value.len() >= MIN_EXACT_VALUE_BYTES)
            {
                let run = longest_run(&tail, value);
                assert!(run < value.len() - 1, "{run} of {value:?} in {tail}");
            }
            assert!(
                tail.contains("upstream said [REDACTED] is invalid"),
                "{tail}"
            );
            assert!(tail.contains("with [REDACTED] refused"), "{tail}");
            assert!(tail.contains("split by colour: [REDACTED] done"), "{tail}");
        }
    }

    #[test]
    fn tail_is_cut_on_a_char_boundary() {
        for max in 1..40 {
            let mut collector = StderrCollector::new(Redactor::default(), max);
            collector.push("héllo wörld ✓✓ 日本語 😀😀\nend 😀\n".as_bytes());
            let tail = collector.tail();
            assert!(tail.len() <= max, "{max}: {tail:?}");
            assert!(
                "héllo wörld ✓✓ 日本語 😀😀 end 😀".ends_with(tail),
                "{max}: {tail:?}"
            );
            assert!(!tail.starts_with(' '));
        }
        let mut collector = StderrCollector::new(Redactor::default(), 0);
        collector.push(b"anything\n");
        assert_eq!(collector.tail(), "");
    }

    #[test]
    fn utf8_split_across_chunks_and_invalid_bytes() {
        let mut collector = StderrCollector::new(Redactor::default(), 100);
        let text = "naïve 😀 ok\n".as_bytes();
        for byte in text {
            collector.push(std::slice::from_ref(byte));
        }
        collector.push(b"bad \xff\xfe bytes\n");
        assert_eq!(collector.tail(), "naïve 😀 ok bad \u{FFFD}\u{FFFD} bytes");
    }

    #[test]
    fn debug_never_prints_values() {
        let redactor = Redactor::new(["super-secret-value-1", "another-secret-2"]);
        let shown = format!("{redactor:?}");
        assert!(
            !shown.contains("super-secret") && !shown.contains("another-secret"),
            "{shown}"
        );
        assert!(shown.contains('2'));
        let mut collector = StderrCollector::new(redactor, 100);
        collector.push(b"partial super-secret-value-1");
        let shown = format!("{collector:?}");
        assert!(!shown.contains("super-secret"), "{shown}");
    }

    #[test]
    fn types_can_cross_threads() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<Redactor>();
        assert_send_sync::<StderrCollector>();
    }

    #[test]
    fn an_unterminated_pem_block_hides_the_rest() {
        let mut collector = StderrCollector::new(Redactor::default(), 4096);
        collector.push(b"-----BEGIN PRIVATE KEY-----\nMIIEvgIBADANBg\nlater: ordinary text\n");
        collector.finish();
        assert_eq!(collector.tail(), "-----BEGIN PRIVATE KEY----- [REDACTED]");
    }

    #[test]
    fn short_values_are_ignored() {
        let redactor = Redactor::new(["", "a", "ab", "abc", "abcd"]);
        assert_eq!(redactor.redact_line("a ab abc abcd"), "a ab abc [REDACTED]");
    }

    #[test]
    fn adversarial_lines_are_linear() {
        let redactor = Redactor::new(["needle-value-0", "needle-value-1", "needle-value-2"]);
        let size = MAX_STDERR_LINE_BYTES;
        let fill = |pattern: &str| pattern.repeat(size / pattern.len() + 1)[..size].to_owned();
        let lines = [
            fill("a"),
            fill("token="),
            fill("token:\"a"),
            fill("token='"),
            fill("\\\"token\\\":\\\"x"),
            fill("--token "),
            fill("eyJa."),
            fill("eyJ-"),
            fill("://a"),
            fill("://a@"),
            fill("-----BEGIN "),
            fill("-----BEGIN PRIVATE KEY-----"),
            fill("-----END PRIVATE KEY-----"),
            fill("Bearer "),
            fill("Basic QUJD"),
            fill("aB3/"),
            fill("ghp_"),
            fill("AKIAAAAAAAAAAAAAAAAA"),
            fill("needle-value-"),
            fill("é"),
        ];
        for line in &lines {
            let started = std::time::Instant::now();
            let out = redactor.redact_line(line);
            let mut collector = StderrCollector::new(redactor.clone(), 2048);
            collector.push(line.as_bytes());
            collector.finish();
            let elapsed = started.elapsed();
            // Quadratic behaviour on 64 KiB would take seconds even in release builds.
            assert!(elapsed.as_millis() < 1500, "{:?}: {elapsed:?}", &line[..16]);
            assert!(out.len() <= line.len() * (REDACTED.len() + 1));
        }
        // Escapes everywhere make every value of up to MAX_GAPPED_VALUE_BYTES go
        // through the interrupted-occurrence matcher: `len / 64` words per byte.
        let long = "a\x1b".repeat(MAX_GAPPED_VALUE_BYTES / 2);
        let redactor = Redactor::new([long.as_str(), "needle-value-0"]);
        for line in [fill("\x1ba"), fill("a\x1b[1;"), fill("\x1b]a"), fill("a")] {
            let started = std::time::Instant::now();
            redactor.redact_line(&line);
            let mut collector = StderrCollector::new(redactor.clone(), 2048);
            collector.push(line.as_bytes());
            collector.finish();
            let elapsed = started.elapsed();
            assert!(elapsed.as_millis() < 1500, "{:?}: {elapsed:?}", &line[..4]);
        }
    }

    #[test]
    fn many_short_lines_with_a_large_cap() {
        let mut collector = StderrCollector::new(Redactor::default(), 1 << 20);
        for index in 0..50_000 {
            collector.push(format!("line {index}\n").as_bytes());
        }
        assert!(collector.tail().ends_with("line 49999"));
        assert!(collector.tail().len() <= 1 << 20);
    }

    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn redact_line_never_panics(line in any::<String>()) {
                let redactor = Redactor::new(["secret-value", "ü-ünïcode"]);
                let _ = redactor.redact_line(&line);
            }

            #[test]
            fn redact_line_never_panics_on_structured_text(
                parts in proptest::collection::vec(
                    prop_oneof![
                        Just("token"), Just("="), Just(":"), Just("\""), Just("'"), Just("\\"),
                        Just(" "), Just("--"), Just("Bearer "), Just("Basic "), Just("://"),
                        Just("@"), Just("-----BEGIN "), Just("-----END "), Just("PRIVATE KEY"),
                        Just("-----"), Just("eyJ"), Just("."), Just("ghp_"), Just("é"),
                        Just("😀"), Just("<"), Just(">"), Just("aB3xY9"), Just("\u{1b}["),
                    ],
                    0..40,
                )
            ) {
                let line = parts.concat();
                let redactor = Redactor::new(["aB3xY9"]);
                let out = redactor.redact_line(&line);
                prop_assert!(!out.contains("aB3xY9"));
                let mut collector = StderrCollector::new(redactor, 64);
                collector.push(line.as_bytes());
                collector.push(b"\n");
                collector.push(line.as_bytes());
                collector.finish();
                prop_assert!(collector.tail().len() <= 64);
            }

            #[test]
            fn chunking_does_not_matter(
                bytes in proptest::collection::vec(
                    prop_oneof![any::<u8>(), Just(b'\n'), Just(b'\r'), Just(b' ')],
                    0..400,
                ),
                cuts in proptest::collection::vec(1usize..50, 1..20),
                max in 1usize..80,
            ) {
                let redactor = Redactor::new(["\u{fffd}\u{fffd}xx"]);
                let mut whole = StderrCollector::new(redactor.clone(), max);
                whole.push(&bytes);
                whole.finish();
                let mut chunked = StderrCollector::new(redactor, max);
                let mut rest = &bytes[..];
                for cut in cuts.iter().cycle() {
                    if rest.is_empty() {
                        break;
                    }
                    let cut = (*cut).min(rest.len());
                    chunked.push(&rest[..cut]);
                    rest = &rest[cut..];
                }
                chunked.finish();
                prop_assert_eq!(whole.tail(), chunked.tail());
                prop_assert!(whole.tail().len() <= max);
            }
        }
    }
}
