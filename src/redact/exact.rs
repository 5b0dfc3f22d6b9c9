//! Exact values (the child's environment values): every occurrence, overlapping ones
//! included, as written and interrupted by hidden bytes. Separate because it is the
//! one rule with per-value state built in advance and its own cost model.

use aho_corasick::{AhoCorasick, MatchKind};

use super::clean::{is_bidi_control, skip_escape};
use super::span::{ceil_char_boundary, floor_char_boundary};
use super::work::{self, Pass};

/// The exact values, matched together: one Aho-Corasick automaton finds every
/// occurrence of every value in one pass, overlapping ones included (`abca` in
/// `abcabca` occurs twice; a non-overlapping search would leave `bca` behind). Lines
/// with hidden bytes use [`Gapped`] for the values of at most
/// [`MAX_GAPPED_VALUE_BYTES`], and a second automaton for the longer ones.
pub(super) struct ExactValues {
    /// Every value, for lines without hidden bytes.
    all: Matcher,
    /// The values longer than [`MAX_GAPPED_VALUE_BYTES`], for lines with hidden bytes.
    long: Matcher,
    /// One per value of at most [`MAX_GAPPED_VALUE_BYTES`].
    gapped: Box<[Gapped]>,
    /// How many values there are (what `Debug` shows).
    count: usize,
}

/// An automaton over some of the values.
enum Matcher {
    /// There are no such values.
    None,
    Values(AhoCorasick),
    /// The automaton could not be built (beyond its size limits): every byte of a
    /// line counts as covered, so nothing of a value can be kept.
    Everything,
}

impl Matcher {
    fn new<'a>(values: impl Iterator<Item = &'a str>) -> Self {
        let values: Vec<&str> = values.collect();
        if values.is_empty() {
            return Matcher::None;
        }
        match AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(&values)
        {
            Ok(automaton) => Matcher::Values(automaton),
            Err(_) => Matcher::Everything,
        }
    }

    /// Appends the union of the occurrences in `text` to `ranges`, as sorted,
    /// disjoint byte ranges (ranges already there are left alone), so that what is
    /// kept stays bounded by the line, however many occurrences overlap.
    fn cover(&self, text: &str, ranges: &mut Vec<(usize, usize)>) {
        match self {
            Matcher::None => {}
            Matcher::Values(automaton) => {
                work::count(Pass::Exact, text.len());
                let own = ranges.len();
                // Occurrences come in the order of their ends: one reaches back over
                // every kept range it overlaps or touches.
                for found in automaton.find_overlapping_iter(text) {
                    work::count(Pass::Exact, 1);
                    let (mut start, end) = (found.start(), found.end());
                    while ranges.len() > own
                        && let Some(&(last_start, last_end)) = ranges.last()
                        && start <= last_end
                    {
                        work::count(Pass::Exact, 1);
                        start = start.min(last_start);
                        ranges.pop();
                    }
                    ranges.push((start, end));
                }
            }
            Matcher::Everything if !text.is_empty() => ranges.push((0, text.len())),
            Matcher::Everything => {}
        }
    }
}

impl ExactValues {
    /// `values` are at least [`MIN_EXACT_VALUE_BYTES`](super::MIN_EXACT_VALUE_BYTES)
    /// long (never empty).
    pub(super) fn new(values: &[Box<str>]) -> Self {
        let values: Vec<&str> = values.iter().map(|value| &**value).collect();
        let long = |value: &&str| value.len() > MAX_GAPPED_VALUE_BYTES;
        Self {
            all: Matcher::new(values.iter().copied()),
            long: Matcher::new(values.iter().copied().filter(long)),
            gapped: values
                .iter()
                .filter(|value| !long(value))
                .map(|value| Gapped::new(value.as_bytes()))
                .collect(),
            count: values.len(),
        }
    }

    /// How many values there are.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Appends the occurrences of the values in `text` to `ranges`, as sorted,
    /// disjoint runs (one for all the values as written, one per value across hidden
    /// bytes). `hidden`: the bytes that may interrupt one ([`hidden_bytes`]).
    pub(super) fn cover(
        &self,
        text: &str,
        hidden: Option<&[bool]>,
        ranges: &mut Vec<(usize, usize)>,
    ) {
        match hidden {
            None => self.all.cover(text, ranges),
            Some(hidden) => {
                for gapped in self.gapped.iter() {
                    gapped.cover(text, hidden, ranges);
                }
                self.long.cover(text, ranges);
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
pub(super) struct Gapped {
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
pub(super) const GAPPED_BLOCK: usize = 64;

/// Exact values longer than this are matched only as written (and after cleaning),
/// not across escape sequences and hidden characters planted inside them: the cost of
/// that match grows with the value's length (`1 + len / 64` words per byte of a
/// line, three passes), and at 1 KiB a 64 KiB line full of escapes takes about 10 ms
/// in a release build. Multi-line values are also matched line by line, each part on
/// its own; a long random value's parts are still caught by the high-entropy rule.
pub const MAX_GAPPED_VALUE_BYTES: usize = 1024;

impl Gapped {
    pub(super) fn new(value: &[u8]) -> Self {
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
        work::count(Pass::Gapped, self.words);
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
    pub(super) fn cover(&self, text: &str, hidden: &[bool], ranges: &mut Vec<(usize, usize)>) {
        let bytes = text.as_bytes();
        let n = bytes.len();
        if n < self.len {
            return;
        }
        let words = self.words;
        let blocks = n.div_ceil(GAPPED_BLOCK);
        // The stored states, zeroed and then written once each.
        work::count(Pass::Gapped, 2 * blocks * words);
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
                work::count(Pass::Gapped, words);
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
/// sequence starting at any `ESC` would consume (the sequence as [`clean_line`](super::clean::clean_line) reads
/// it, from the `ESC` to its final byte, whatever came before), and every control
/// (Unicode Cc) or bidirectional-override character. `None` when there is none.
///
/// Each escape's extent is taken on its own, not as the cleaning happens to parse
/// the line: an escape prefix planted inside a value is then hidden whatever precedes
/// it (an earlier sequence that takes the planted `ESC` for its final byte, say).
/// Extents end at the next `ESC` or one character after it, so this is linear.
pub(super) fn hidden_bytes(text: &str) -> Option<Vec<bool>> {
    work::count(Pass::Hidden, text.len());
    if text.bytes().all(|byte| (0x20..0x7f).contains(&byte)) {
        return None;
    }
    // The marks, zeroed.
    work::count(Pass::Hidden, text.len());
    let mut hidden = vec![false; text.len()];
    let mut any = false;
    for (at, c) in text.char_indices() {
        work::count(Pass::Hidden, 1);
        if c == '\u{1b}' {
            let mut rest = text[at + 1..].chars();
            skip_escape(&mut rest);
            let end = text.len() - rest.as_str().len();
            // The sequence read, and marked.
            work::count(Pass::Hidden, 2 * (end - at));
            hidden[at..end].fill(true);
            any = true;
        } else if c.is_control() || is_bidi_control(c) {
            hidden[at..at + c.len_utf8()].fill(true);
            any = true;
        }
    }
    any.then_some(hidden)
}
