//! Bounds on what we send: the encoded length of a value without encoding it
//! ([`encoded_len_exceeds`]) and a writer that refuses to grow past a limit
//! ([`LimitedWriter`]).

use std::fmt;
use std::io;

use serde_json::{Number, Value};

/// Whether the compact JSON encoding of `value` (exactly what
/// `serde_json::to_vec(value)` would produce) is longer than `budget` bytes.
///
/// Computed iteratively without serializing: the running total is always a lower
/// bound of the final length, and the walk stops as soon as it passes `budget`, so
/// the cost is bounded by the budget rather than by the value's size.
pub fn encoded_len_exceeds(value: &Value, budget: usize) -> bool {
    let mut counter = LenCounter { total: 0, budget };
    let mut stack: Vec<EncodeFrame<'_>> = Vec::new();
    if counter.value(value, &mut stack) {
        return true;
    }
    loop {
        let step = match stack.last_mut() {
            None => return false,
            Some(EncodeFrame::Array { items, first }) => match items.next() {
                Some(item) => Some((None, item, std::mem::replace(first, false))),
                None => None,
            },
            Some(EncodeFrame::Object { entries, first }) => match entries.next() {
                Some((key, item)) => Some((Some(key), item, std::mem::replace(first, false))),
                None => None,
            },
        };
        let over = match step {
            // The container is exhausted: its closing bracket or brace.
            None => {
                stack.pop();
                counter.add(1)
            }
            Some((key, item, first)) => {
                // A comma before every element but the first.
                if !first && counter.add(1) {
                    return true;
                }
                if let Some(key) = key {
                    // The key and its colon.
                    if counter.add(string_len(key, counter.remaining())) || counter.add(1) {
                        return true;
                    }
                }
                counter.value(item, &mut stack)
            }
        };
        if over {
            return true;
        }
    }
}

/// The fixed message of the error [`LimitedWriter`] returns.
pub const LIMIT_EXCEEDED_MESSAGE: &str = "output exceeds its byte limit";

/// A [`std::io::Write`] into memory that fails once more than `limit` bytes would
/// have been written, so a serializer stops early instead of growing a buffer.
///
/// The failing write stores nothing and returns an [`io::ErrorKind::Other`] error
/// with the fixed message [`LIMIT_EXCEEDED_MESSAGE`]; serde_json reports it as an I/O
/// error (`serde_json::Error::is_io`). Exactly `limit` bytes are accepted.
///
/// The unit test `limited_writer_stops_at_the_limit` shows it under serde_json.
#[derive(Debug, Clone)]
pub struct LimitedWriter {
    buf: Vec<u8>,
    limit: usize,
    exceeded: bool,
}

impl LimitedWriter {
    /// A writer that accepts at most `limit` bytes, with room for `capacity` bytes
    /// (never more than `limit`) reserved up front.
    pub fn with_capacity(limit: usize, capacity: usize) -> Self {
        LimitedWriter {
            buf: Vec::with_capacity(capacity.min(limit)),
            limit,
            exceeded: false,
        }
    }

    /// The bytes accepted so far.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

// Only the unit tests use these since the module became crate-private.
#[cfg(test)]
impl LimitedWriter {
    /// A writer that accepts at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        LimitedWriter::with_capacity(limit, 0)
    }

    /// Bytes accepted so far.
    pub fn written(&self) -> usize {
        self.buf.len()
    }

    /// True once a write has been refused for passing the limit.
    pub fn exceeded(&self) -> bool {
        self.exceeded
    }
}

impl LimitedWriter {
    #[cold]
    #[inline(never)]
    fn refuse(&mut self) -> io::Error {
        self.exceeded = true;
        io::Error::other(LIMIT_EXCEEDED_MESSAGE)
    }
}

impl io::Write for LimitedWriter {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.exceeded || buf.len() > self.limit - self.buf.len() {
            return Err(self.refuse());
        }
        self.buf.extend_from_slice(buf);
        Ok(buf.len())
    }

    // A serializer writes many short pieces: this is its hot path, inlined into it.
    #[inline(always)]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        // `write` takes all of `buf` or fails: no loop needed. (An empty `buf` is
        // always fine, as with the default `write_all`.)
        if buf.is_empty() {
            return Ok(());
        }
        if self.exceeded || buf.len() > self.limit - self.buf.len() {
            return Err(self.refuse());
        }
        if let [byte] = buf {
            self.buf.push(*byte);
        } else {
            self.buf.extend_from_slice(buf);
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// One open container of the encoded-length walk.
enum EncodeFrame<'a> {
    Array {
        items: std::slice::Iter<'a, Value>,
        first: bool,
    },
    Object {
        entries: serde_json::map::Iter<'a>,
        first: bool,
    },
}

struct LenCounter {
    total: usize,
    budget: usize,
}

impl LenCounter {
    /// Adds `n` bytes; true once the total passes the budget.
    fn add(&mut self, n: usize) -> bool {
        self.total = self.total.saturating_add(n);
        self.total > self.budget
    }

    /// Bytes left before the budget is passed (used to cut string scans short).
    fn remaining(&self) -> usize {
        self.budget.saturating_sub(self.total)
    }

    /// Counts a scalar, or the opening of a container (pushing it); true when over.
    fn value<'a>(&mut self, value: &'a Value, stack: &mut Vec<EncodeFrame<'a>>) -> bool {
        match value {
            Value::Null => self.add(4),
            Value::Bool(true) => self.add(4),
            Value::Bool(false) => self.add(5),
            Value::Number(number) => self.add(number_len(number)),
            Value::String(text) => self.add(string_len(text, self.remaining())),
            Value::Array(items) => {
                stack.push(EncodeFrame::Array {
                    items: items.iter(),
                    first: true,
                });
                self.add(1)
            }
            Value::Object(map) => {
                stack.push(EncodeFrame::Object {
                    entries: map.iter(),
                    first: true,
                });
                self.add(1)
            }
        }
    }
}

/// serde_json writes numbers exactly as `Number`'s `Display` does (itoa / ryu).
fn number_len(number: &Number) -> usize {
    struct Count(usize);
    impl fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = fmt::write(&mut count, format_args!("{number}"));
    count.0
}

/// The length of `text` as serde_json encodes it (quotes included), or some length
/// greater than `remaining` once that is certain.
fn string_len(text: &str, remaining: usize) -> usize {
    let mut len = 2 + text.len();
    if len > remaining {
        return len;
    }
    for &byte in text.as_bytes() {
        len += match byte {
            b'"' | b'\\' | 0x08 | 0x09 | 0x0A | 0x0C | 0x0D => 1,
            0x00..=0x1F => 5,
            _ => 0,
        };
        if len > remaining {
            return len;
        }
    }
    len
}
