//! The grammar core: one iterative pass over a frame's bytes that checks RFC 8259
//! syntax, counts nesting and notes the facts the noise/protocol split needs.
//!
//! Every inbound reading is this pass with a different [`Sink`]: [`scan_frame`]
//! records nothing, [`parse_value`] builds a whole value (`parse.rs`) and
//! [`parse_envelope`] builds only the members classification reads
//! (`envelope.rs`). Keeping the grammar in one place is why the three readings
//! cannot disagree on what is JSON or how deep it nests.
//!
//! [`parse_value`]: super::parse_value
//! [`parse_envelope`]: super::parse_envelope

use serde_json::Value;

use crate::limits::MAX_JSON_DEPTH;

/// Result of one iterative pass over an inbound frame ([`scan_frame`]).
///
/// When `valid_json` is false the scan stopped at the first syntax error and the
/// other fields (except `valid_utf8`) describe only the part scanned before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameScan {
    /// The bytes are exactly one JSON value (RFC 8259 grammar), with optional
    /// surrounding whitespace (space, tab, CR, LF).
    ///
    /// This is a grammar check over bytes: non-ASCII bytes inside strings are
    /// accepted whether or not they are valid UTF-8 (see `valid_utf8`), which matches
    /// what JavaScript sees after a lossy UTF-8 decode. Numbers out of `f64` range
    /// (`1e400`) are valid syntax. Lone surrogate escapes are valid syntax.
    pub valid_json: bool,
    /// Maximum nesting of objects and arrays: a scalar is 0, `{}` is 1,
    /// `{"a":[1]}` is 2.
    pub max_depth: usize,
    /// The top-level value is an object.
    pub top_level_object: bool,
    /// The top-level object has a key that is exactly `jsonrpc` after unescaping
    /// (`"json\u0072pc"` counts). Keys of nested objects do not count.
    pub has_jsonrpc_key: bool,
    /// Some string contains a `\uD800`-`\uDFFF` escape that does not form a valid
    /// high-low pair.
    pub has_lone_surrogate: bool,
    /// The whole frame is valid UTF-8 (checked independently of the grammar).
    pub valid_utf8: bool,
}

impl FrameScan {
    /// True when the frame is valid JSON that nests no deeper than
    /// [`MAX_JSON_DEPTH`] containers, i.e. [`parse_value`] may be called on it.
    ///
    /// [`parse_value`]: super::parse_value
    pub fn within_depth(&self) -> bool {
        self.valid_json && self.max_depth <= MAX_JSON_DEPTH
    }
}

/// Scans one inbound frame iteratively in O(n) time and constant call stack.
///
/// The only allocation proportional to depth is a bitset of container kinds (one
/// bit per open container). See `FrameScan` for what is reported.
pub fn scan_frame(bytes: &[u8]) -> FrameScan {
    let mut core = Core::new(bytes, NoSink);
    let valid_json = core.run().is_ok();
    FrameScan {
        valid_json,
        max_depth: core.max_depth,
        top_level_object: core.top_level_object,
        has_jsonrpc_key: core.has_jsonrpc_key,
        has_lone_surrogate: core.has_lone_surrogate,
        valid_utf8: std::str::from_utf8(bytes).is_ok(),
    }
}

/// Rewrites every lone surrogate escape (`\uD800`-`\uDFFF` not forming a high-low
/// pair) to `\ufffd`, so that serde_json can parse the frame: serde_json refuses
/// lone surrogates, JavaScript keeps them. Returns `None` when there is nothing to
/// rewrite.
///
/// Each rewrite replaces six bytes with six bytes, so offsets are preserved. Meant
/// for frames that [`scan_frame`] found valid; on other input it still rewrites
/// only complete `\uXXXX` escapes and never panics.
// Only tests call it: the one-pass parser decodes lone surrogates itself, and the
// scan-then-serde_json reading that would need this was not kept (chosen for
// speed: `docs/benchmarks-notebook.md`, "Third round: the JSON parser"). The tests
// use it to show both readings give the same U+FFFD.
#[cfg_attr(not(test), allow(dead_code))]
pub fn repair_lone_surrogates(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    let mut pending_high: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            if let Some(at) = pending_high.take() {
                rewrite_escape(&mut out, bytes, at);
            }
            i += 1;
            continue;
        }
        let unit = match bytes.get(i + 1) {
            Some(b'u') => bytes.get(i + 2..i + 6).and_then(hex4),
            _ => None,
        };
        match unit {
            Some(unit) if is_high_surrogate(unit) => {
                if let Some(at) = pending_high.replace(i) {
                    rewrite_escape(&mut out, bytes, at);
                }
                i += 6;
            }
            Some(unit) if is_low_surrogate(unit) => {
                if pending_high.take().is_none() {
                    rewrite_escape(&mut out, bytes, i);
                }
                i += 6;
            }
            other => {
                if let Some(at) = pending_high.take() {
                    rewrite_escape(&mut out, bytes, at);
                }
                // Any other escape: skip the backslash and the escaped byte, so `\\`
                // followed by text `uD800` is never mistaken for an escape.
                i += if other.is_some() { 6 } else { 2 };
            }
        }
    }
    if let Some(at) = pending_high {
        rewrite_escape(&mut out, bytes, at);
    }
    out
}

fn rewrite_escape(out: &mut Option<Vec<u8>>, bytes: &[u8], at: usize) {
    let out = out.get_or_insert_with(|| bytes.to_vec());
    out[at..at + 6].copy_from_slice(b"\\ufffd");
}

/// Why the core stopped early.
pub(super) enum Stop {
    /// The bytes are not JSON.
    Syntax,
    /// The sink refused (too deep, number out of range): its message.
    Sink(&'static str),
}

/// Receives the values the core recognizes. Raw slices are validated grammar:
/// strings without their quotes and with escapes intact, numbers as written.
pub(super) trait Sink {
    fn open(&mut self, object: bool) -> std::result::Result<(), Stop>;
    fn close(&mut self);
    /// `escaped`: `raw` holds a backslash escape.
    fn key(&mut self, raw: &[u8], escaped: bool);
    fn string(&mut self, raw: &[u8], escaped: bool);
    fn number(&mut self, raw: &[u8]) -> std::result::Result<(), Stop>;
    fn literal(&mut self, value: Value);
}

/// The sink for [`scan_frame`]: records nothing.
struct NoSink;

impl Sink for NoSink {
    #[inline]
    fn open(&mut self, _object: bool) -> std::result::Result<(), Stop> {
        Ok(())
    }
    #[inline]
    fn close(&mut self) {}
    #[inline]
    fn key(&mut self, _raw: &[u8], _escaped: bool) {}
    #[inline]
    fn string(&mut self, _raw: &[u8], _escaped: bool) {}
    #[inline]
    fn number(&mut self, _raw: &[u8]) -> std::result::Result<(), Stop> {
        Ok(())
    }
    #[inline]
    fn literal(&mut self, _value: Value) {}
}

/// What the core expects next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Any value.
    Value,
    /// Just after `[`: a value or `]`.
    FirstValueOrEnd,
    /// After an array element: `,` or `]`.
    ArrNext,
    /// Just after `{`: a key or `}`.
    FirstKeyOrEnd,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After an object member: `,` or `}`.
    ObjNext,
    /// The top-level value is complete: only whitespace may follow.
    Done,
}

/// A stack of container kinds, one bit per open container (1 = object): the
/// first 128 levels (every frame within the depth bound) in place, deeper ones
/// (only [`scan_frame`] goes there) in `spill`.
#[derive(Default)]
struct KindStack {
    inline: [u64; 2],
    spill: Vec<u64>,
    len: usize,
}

impl KindStack {
    fn word(&mut self, index: usize) -> &mut u64 {
        if index < 2 {
            return &mut self.inline[index];
        }
        if index - 2 == self.spill.len() {
            self.spill.push(0);
        }
        &mut self.spill[index - 2]
    }

    fn push(&mut self, object: bool) {
        let (index, bit) = (self.len / 64, self.len % 64);
        let word = self.word(index);
        if object {
            *word |= 1 << bit;
        } else {
            *word &= !(1 << bit);
        }
        self.len += 1;
    }

    fn pop(&mut self) {
        self.len = self.len.saturating_sub(1);
    }

    fn top_is_object(&self) -> Option<bool> {
        let top = self.len.checked_sub(1)?;
        let word = match top / 64 {
            index @ 0..2 => self.inline[index],
            index => self.spill[index - 2],
        };
        Some((word >> (top % 64)) & 1 == 1)
    }
}

/// The pass itself, generic over its sink so that each reading is monomorphized
/// (the scan-only one compiles to a plain validator).
pub(super) struct Core<'a, S> {
    bytes: &'a [u8],
    pos: usize,
    kinds: KindStack,
    pub(super) sink: S,
    pub(super) max_depth: usize,
    pub(super) top_level_object: bool,
    pub(super) has_jsonrpc_key: bool,
    pub(super) has_lone_surrogate: bool,
}

impl<'a, S: Sink> Core<'a, S> {
    pub(super) fn new(bytes: &'a [u8], sink: S) -> Self {
        Core {
            bytes,
            pos: 0,
            kinds: KindStack::default(),
            sink,
            max_depth: 0,
            top_level_object: false,
            has_jsonrpc_key: false,
            has_lone_surrogate: false,
        }
    }

    pub(super) fn run(&mut self) -> std::result::Result<(), Stop> {
        let mut state = State::Value;
        loop {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            let Some(&byte) = self.bytes.get(self.pos) else {
                return if state == State::Done {
                    Ok(())
                } else {
                    Err(Stop::Syntax)
                };
            };
            state = match (state, byte) {
                (State::FirstValueOrEnd | State::ArrNext, b']')
                | (State::FirstKeyOrEnd | State::ObjNext, b'}') => {
                    self.pos += 1;
                    self.kinds.pop();
                    self.sink.close();
                    self.after_value()
                }
                (State::Value | State::FirstValueOrEnd, _) => self.value(byte)?,
                (State::ArrNext, b',') => {
                    self.pos += 1;
                    State::Value
                }
                (State::FirstKeyOrEnd | State::Key, b'"') => {
                    let (raw, escaped) = self.string()?;
                    // Keys are only read inside objects, so depth 1 is the root object.
                    if self.kinds.len == 1 && is_jsonrpc(raw, escaped) {
                        self.has_jsonrpc_key = true;
                    }
                    self.sink.key(raw, escaped);
                    State::Colon
                }
                (State::Colon, b':') => {
                    self.pos += 1;
                    State::Value
                }
                (State::ObjNext, b',') => {
                    self.pos += 1;
                    State::Key
                }
                _ => return Err(Stop::Syntax),
            };
        }
    }

    fn after_value(&self) -> State {
        match self.kinds.top_is_object() {
            None => State::Done,
            Some(true) => State::ObjNext,
            Some(false) => State::ArrNext,
        }
    }

    fn value(&mut self, byte: u8) -> std::result::Result<State, Stop> {
        match byte {
            b'{' | b'[' => {
                let object = byte == b'{';
                self.pos += 1;
                self.kinds.push(object);
                self.max_depth = self.max_depth.max(self.kinds.len);
                if object && self.kinds.len == 1 {
                    self.top_level_object = true;
                }
                self.sink.open(object)?;
                return Ok(if object {
                    State::FirstKeyOrEnd
                } else {
                    State::FirstValueOrEnd
                });
            }
            b'"' => {
                let (raw, escaped) = self.string()?;
                self.sink.string(raw, escaped);
            }
            b'-' | b'0'..=b'9' => {
                let raw = self.number()?;
                self.sink.number(raw)?;
            }
            b't' => self.literal(b"true", Value::Bool(true))?,
            b'f' => self.literal(b"false", Value::Bool(false))?,
            b'n' => self.literal(b"null", Value::Null)?,
            _ => return Err(Stop::Syntax),
        }
        Ok(self.after_value())
    }

    fn literal(&mut self, text: &[u8], value: Value) -> std::result::Result<(), Stop> {
        if !self.bytes[self.pos..].starts_with(text) {
            return Err(Stop::Syntax);
        }
        self.pos += text.len();
        self.sink.literal(value);
        Ok(())
    }

    /// A string starting at the opening quote; returns its raw contents and
    /// whether they hold an escape.
    fn string(&mut self) -> std::result::Result<(&'a [u8], bool), Stop> {
        let bytes = self.bytes;
        let start = self.pos + 1;
        let mut i = start;
        let mut pending_high = false;
        let mut escaped = false;
        loop {
            // Skip plain text in one step: the next quote or backslash, with no
            // control character before it. (Plain text after a high surrogate
            // escape makes that escape a lone one.)
            let rest = bytes.get(i..).ok_or(Stop::Syntax)?;
            // Short runs (keys, small values) are cheaper byte by byte than through
            // memchr's setup.
            let short = rest.len().min(32);
            let mut plain = 0;
            // Eight bytes at a time, then byte by byte.
            while let Some(word) = rest.get(plain..plain + 8).filter(|_| plain + 8 <= short) {
                let stops = string_stops(u64::from_le_bytes(word.try_into().unwrap_or([0; 8])));
                if stops != 0 {
                    plain += (stops.trailing_zeros() / 8) as usize;
                    break;
                }
                plain += 8;
            }
            while plain < short && !STRING_STOP[usize::from(rest[plain])] {
                plain += 1;
            }
            if plain == short {
                plain += memchr::memchr2(b'"', b'\\', &rest[short..]).ok_or(Stop::Syntax)?;
            }
            if plain > 0 {
                if plain > short && rest[short..plain].iter().any(|&b| b < 0x20) {
                    return Err(Stop::Syntax);
                }
                self.has_lone_surrogate |= pending_high;
                pending_high = false;
                i += plain;
            }
            let byte = bytes[i];
            escaped |= byte == b'\\';
            match byte {
                b'"' => {
                    self.has_lone_surrogate |= pending_high;
                    self.pos = i + 1;
                    return Ok((&bytes[start..i], escaped));
                }
                b'\\' => match bytes.get(i + 1).ok_or(Stop::Syntax)? {
                    b'u' => {
                        let unit = bytes.get(i + 2..i + 6).and_then(hex4).ok_or(Stop::Syntax)?;
                        if is_high_surrogate(unit) {
                            self.has_lone_surrogate |= pending_high;
                            pending_high = true;
                        } else if is_low_surrogate(unit) {
                            self.has_lone_surrogate |= !pending_high;
                            pending_high = false;
                        } else {
                            self.has_lone_surrogate |= pending_high;
                            pending_high = false;
                        }
                        i += 6;
                    }
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                        self.has_lone_surrogate |= pending_high;
                        pending_high = false;
                        i += 2;
                    }
                    _ => return Err(Stop::Syntax),
                },
                0x00..=0x1F => return Err(Stop::Syntax),
                _ => {
                    self.has_lone_surrogate |= pending_high;
                    pending_high = false;
                    i += 1;
                }
            }
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn number(&mut self) -> std::result::Result<&'a [u8], Stop> {
        let bytes = self.bytes;
        let start = self.pos;
        let mut i = start;
        let digits = |mut i: usize| {
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            i
        };
        if bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        match bytes.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = digits(i + 1),
            _ => return Err(Stop::Syntax),
        }
        if bytes.get(i) == Some(&b'.') {
            let end = digits(i + 1);
            if end == i + 1 {
                return Err(Stop::Syntax);
            }
            i = end;
        }
        if let Some(b'e' | b'E') = bytes.get(i) {
            i += 1;
            if let Some(b'+' | b'-') = bytes.get(i) {
                i += 1;
            }
            let end = digits(i);
            if end == i {
                return Err(Stop::Syntax);
            }
            i = end;
        }
        self.pos = i;
        Ok(&bytes[start..i])
    }
}

pub(super) fn hex4(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0u16, |acc, &d| {
        let v = (d as char).to_digit(16)?;
        Some(acc << 4 | v as u16)
    })
}

pub(super) fn is_high_surrogate(unit: u16) -> bool {
    (0xD800..=0xDBFF).contains(&unit)
}

pub(super) fn is_low_surrogate(unit: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

/// The character a one-letter escape stands for (grammar already checked).
pub(super) fn simple_escape(letter: u8) -> u8 {
    match letter {
        b'b' => 0x08,
        b'f' => 0x0C,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        other => other, // '"', '\\', '/'
    }
}

/// Bytes that end a run of plain string text: `"`, `\\` and the C0 controls.
/// One high bit per byte of `word` (little-endian) that stops plain string text:
/// `"`, `\\` or a control character. Only the lowest set bit is exact (a borrow
/// may flag bytes above a real stop), which is the one the caller reads.
#[inline]
fn string_stops(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGH;
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    control
        | zero_byte(word ^ (ONES * u64::from(b'"')))
        | zero_byte(word ^ (ONES * u64::from(b'\\')))
}

static STRING_STOP: [bool; 256] = {
    let mut stop = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        stop[byte] = true;
        byte += 1;
    }
    stop[b'"' as usize] = true;
    stop[b'\\' as usize] = true;
    stop
};

/// Whether a validated raw key decodes to exactly `jsonrpc`, without allocating.
fn is_jsonrpc(raw: &[u8], escaped: bool) -> bool {
    const WANT: &[u8] = b"jsonrpc";
    if !escaped {
        return raw == WANT;
    }
    let mut matched = 0;
    let mut i = 0;
    while i < raw.len() {
        let unit: u16 = if raw[i] == b'\\' {
            if raw[i + 1] == b'u' {
                i += 6;
                hex4(&raw[i - 4..i]).unwrap_or(u16::MAX)
            } else {
                i += 2;
                simple_escape(raw[i - 1]) as u16
            }
        } else {
            i += 1;
            raw[i - 1] as u16
        };
        if matched == WANT.len() || unit != WANT[matched] as u16 {
            return false;
        }
        matched += 1;
    }
    matched == WANT.len()
}

#[cfg(test)]
mod word_tests {
    use super::{STRING_STOP, string_stops};

    /// The word test finds the first stop exactly where the byte table does,
    /// for every byte value at every position, with and without a stop below it.
    #[test]
    fn the_word_test_agrees_with_the_byte_table() {
        let first_stop = |bytes: &[u8; 8]| bytes.iter().position(|&b| STRING_STOP[usize::from(b)]);
        for position in 0..8 {
            for byte in 0..=255u8 {
                for filler in [b'a', 0xE9, b'"', 0x1F, 0x20, 0x7F, 0x80, 0xFF] {
                    let mut bytes = [filler; 8];
                    bytes[position] = byte;
                    let stops = string_stops(u64::from_le_bytes(bytes));
                    let found = (stops != 0).then(|| (stops.trailing_zeros() / 8) as usize);
                    assert_eq!(found, first_stop(&bytes), "{bytes:?}");
                }
            }
        }
    }
}
