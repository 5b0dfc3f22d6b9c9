//! [`Redactor`]: the rules applied to one line, and the replacement of what they
//! mark. Each rule lives in its own file (exact values, keyed values, shapes); this
//! file runs them in order and merges their spans into the redacted line.

use std::fmt;
use std::sync::Arc;

use super::MIN_EXACT_VALUE_BYTES;
use super::REDACTED;
use super::clean::clean_line;
use super::exact::{ExactValues, hidden_bytes};
use super::keyed::find_keyed_values;
use super::patterns::{
    PEM_END, find_high_entropy, find_pem_blocks, find_pem_marker, find_token_shapes, find_userinfo,
};
use super::span::{PemState, Span, apply_spans};
use super::work::{self, Pass};

/// Replaces credentials in single lines of text. See the `redact` module docs for
/// what is recognized.
///
/// Cheap to clone: the exact values are shared. Its `Debug` output shows only how many
/// exact values it holds, never the values.
#[derive(Clone)]
pub struct Redactor {
    exact: Arc<ExactValues>,
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
    /// Values shorter than `MIN_EXACT_VALUE_BYTES` (4) (including empty ones) are ignored.
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
            exact: Arc::new(ExactValues::new(&exact)),
        }
    }

    /// Where the exact values occur in `text`, overlapping occurrences included: the
    /// union of all occurrences as sorted, disjoint byte ranges.
    ///
    /// When `text` holds escape sequences or hidden characters (see
    /// [`hidden_bytes`]), an occurrence may also be interrupted by any of their
    /// bytes: `correct-horse-\x1b[battery` is an occurrence of
    /// `correct-horse-battery` (the range then covers the interruption too). One pass
    /// over `text` for all the values (an Aho-Corasick automaton; its time grows with
    /// the occurrences, overlapping ones included); when there are such bytes, one
    /// per value of at most `MAX_GAPPED_VALUE_BYTES` instead, each `1 + len / 64`
    /// words per byte.
    pub(super) fn exact_ranges(&self, text: &str) -> Vec<(usize, usize)> {
        let mut ranges = Vec::new();
        let hidden = hidden_bytes(text);
        self.exact.cover(text, hidden.as_deref(), &mut ranges);
        work::sorted(Pass::Spans, ranges.len());
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
    /// only caught if it looks random enough (use [`StderrCollector`](super::collector::StderrCollector) for streams).
    /// An exact value interrupted by escape sequences or hidden characters is replaced
    /// with its interruptions (see the `redact` module docs).
    /// Runs in time linear in the line's length (times the number of exact values,
    /// and `1 + len / 64` for a value of `len` bytes on a line holding escapes or
    /// control characters).
    pub fn redact_line(&self, line: &str) -> String {
        self.redact_in(line, Vec::new(), &mut PemState::Outside)
    }

    /// Redacts one line, tracking whether the stream is inside a PEM private-key block.
    /// `spans` are replaced too (the collector passes what is left of exact values
    /// found before the line was cleaned).
    pub(super) fn redact_in(&self, line: &str, mut spans: Vec<Span>, pem: &mut PemState) -> String {
        let mut from = 0;
        if let PemState::Inside { marked } = *pem {
            // Whichever part of the line is looked at for text.
            work::count(Pass::Pem, line.len());
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
