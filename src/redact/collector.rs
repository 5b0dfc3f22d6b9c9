//! [`StderrCollector`]: the stream side, lines split and bounded, each redacted
//! (exact values before and after cleaning), and a capped tail of the result.

use std::fmt;

use super::clean::clean_tracking;
use super::redactor::Redactor;
use super::span::{PemState, ceil_char_boundary};
use super::work::{self, Pass};
use super::{MAX_STDERR_LINE_BYTES, WITHHELD_LINE};

// ---------------------------------------------------------------------------------
// The collector
// ---------------------------------------------------------------------------------

/// How many bytes to reserve so that a buffer of `len` bytes and `capacity` can take
/// `additional` more, never beyond `cap` capacity (callers ensure
/// `len + additional <= cap`), amortized by doubling. `None`: it already can.
fn growth(len: usize, capacity: usize, additional: usize, cap: usize) -> Option<usize> {
    let needed = len + additional;
    if needed <= capacity {
        return None;
    }
    let target = capacity.saturating_mul(2).max(64).min(cap).max(needed);
    Some(target - len)
}

/// Grows `buffer` per [`growth`].
fn reserve_within(buffer: &mut Vec<u8>, additional: usize, cap: usize) {
    if let Some(more) = growth(buffer.len(), buffer.capacity(), additional, cap) {
        buffer.reserve_exact(more);
    }
}

/// Grows the tail per [`growth`].
fn reserve_tail(tail: &mut String, additional: usize, cap: usize) {
    if let Some(more) = growth(tail.len(), tail.capacity(), additional, cap) {
        tail.reserve_exact(more);
    }
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
/// control characters; see the `redact` module docs). Only then is
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
    pub(super) partial: Vec<u8>,
    /// The partial line ended with a `\r`, held back in case a `\n` follows.
    pending_cr: bool,
    /// The current line is over the limit: discard until the next newline.
    discarding: bool,
    pem: PemState,
    pub(super) tail: String,
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
        work::count(Pass::Collect, chunk.len());
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
        work::count(Pass::Collect, additional);
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
            work::count(Pass::Collect, raw.len());
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
        // The line copied, and the tail moved forward when it is cut.
        work::count(Pass::Collect, line.len() + self.tail.len());
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
