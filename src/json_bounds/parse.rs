//! Building a whole [`Value`] from a frame ([`parse_value`]), and the string and
//! number decoding shared with the envelope reader (`envelope.rs`), so a member
//! built there equals the same member built here.

use serde_json::{Map, Number, Value};

use super::scan::{Core, Sink, Stop, hex4, is_high_surrogate, is_low_surrogate, simple_escape};
use crate::error::{Error, Result};
use crate::limits::MAX_JSON_DEPTH;

/// Parses one frame into a [`Value`] iteratively, refusing more than
/// [`MAX_JSON_DEPTH`] nested containers.
///
/// Differences from `serde_json::from_slice::<Value>`, all deliberate (see the
/// `json_bounds` module docs): exactly 128 containers are accepted; no key has a
/// special meaning; a lone surrogate escape decodes to U+FFFD; invalid UTF-8 inside
/// a string decodes to U+FFFD as a WHATWG (JavaScript) decoder would; floats are
/// correctly rounded, as in JavaScript (serde_json without `float_roundtrip` can
/// be one ULP off). Numbers get serde_json's types (`u64`, then `i64`, then
/// `f64`); duplicate keys keep the last value, as in serde_json and JavaScript.
///
/// Every failure is a `protocol_error` whose message names the reason (invalid
/// JSON, nesting deeper than 128, number out of range) and never quotes the frame.
pub fn parse_value(bytes: &[u8]) -> Result<Value> {
    let mut core = Core::new(bytes, Builder::default());
    match core.run() {
        Ok(()) => core
            .sink
            .root
            .take()
            .ok_or_else(|| Error::protocol("inbound frame is not valid JSON")),
        Err(Stop::Sink(reason)) => Err(Error::protocol(reason)),
        Err(Stop::Syntax) => Err(Error::protocol("inbound frame is not valid JSON")),
    }
}

/// One open container of the builder.
pub(super) enum Frame {
    Array(Vec<Value>),
    Object(Map<String, Value>, String),
}

/// The sink for [`parse_value`]: builds a `Value` with an explicit stack.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) stack: Vec<Frame>,
    pub(super) root: Option<Value>,
}

impl Builder {
    fn attach(&mut self, value: Value) {
        match self.stack.last_mut() {
            None => self.root = Some(value),
            Some(Frame::Array(items)) => items.push(value),
            Some(Frame::Object(map, key)) => {
                map.insert(std::mem::take(key), value);
            }
        }
    }
}

impl Sink for Builder {
    fn open(&mut self, object: bool) -> std::result::Result<(), Stop> {
        if self.stack.len() >= MAX_JSON_DEPTH {
            return Err(Stop::Sink(
                "inbound JSON nests more than 128 objects and arrays",
            ));
        }
        self.stack.push(if object {
            Frame::Object(Map::new(), String::new())
        } else {
            Frame::Array(Vec::new())
        });
        Ok(())
    }

    fn close(&mut self) {
        let value = match self.stack.pop() {
            Some(Frame::Array(items)) => Value::Array(items),
            Some(Frame::Object(map, _)) => Value::Object(map),
            None => return,
        };
        self.attach(value);
    }

    fn key(&mut self, raw: &[u8], escaped: bool) {
        if let Some(Frame::Object(_, key)) = self.stack.last_mut() {
            *key = decode_string(raw, escaped);
        }
    }

    fn string(&mut self, raw: &[u8], escaped: bool) {
        self.attach(Value::String(decode_string(raw, escaped)));
    }

    fn number(&mut self, raw: &[u8]) -> std::result::Result<(), Stop> {
        let number = parse_number(raw).ok_or(Stop::Sink("inbound JSON number out of range"))?;
        self.attach(Value::Number(number));
        Ok(())
    }

    fn literal(&mut self, value: Value) {
        self.attach(value);
    }
}

/// A grammar-checked number token as serde_json would type it (`u64` when it fits,
/// else `i64`, else `f64`; `-0` is the float `-0.0`) but with every float correctly
/// rounded, as JavaScript's `JSON.parse` does. (serde_json without its
/// `float_roundtrip` feature may be one ULP off.) `None` when it overflows `f64`.
pub(super) fn parse_number(raw: &[u8]) -> Option<Number> {
    let text = std::str::from_utf8(raw).ok()?;
    if !raw.iter().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        if let Ok(n) = text.parse::<u64>() {
            return Some(Number::from(n));
        }
        if let Some(n) = text.parse::<i64>().ok().filter(|&n| n != 0) {
            return Some(Number::from(n));
        }
    }
    Number::from_f64(text.parse::<f64>().ok()?)
}

/// Decodes a validated raw string: escapes resolved, surrogate pairs combined, lone
/// surrogates and invalid UTF-8 replaced by U+FFFD.
pub(super) fn decode_string(raw: &[u8], escaped: bool) -> String {
    // Most strings have no escape: one validation and one copy.
    if !escaped {
        return match std::str::from_utf8(raw) {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(raw).into_owned(),
        };
    }
    let mut out = String::with_capacity(raw.len());
    let mut segment = 0;
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != b'\\' {
            i += 1;
            continue;
        }
        out.push_str(&String::from_utf8_lossy(&raw[segment..i]));
        if raw[i + 1] == b'u' {
            let unit = hex4(&raw[i + 2..i + 6]).unwrap_or(0xFFFD);
            i += 6;
            let ch = if is_high_surrogate(unit) {
                let low = match raw.get(i..i + 6) {
                    Some([b'\\', b'u', digits @ ..]) => {
                        hex4(digits).filter(|u| is_low_surrogate(*u))
                    }
                    _ => None,
                };
                match low {
                    Some(low) => {
                        i += 6;
                        let scalar = 0x10000
                            + ((u32::from(unit) - 0xD800) << 10)
                            + (u32::from(low) - 0xDC00);
                        char::from_u32(scalar).unwrap_or(char::REPLACEMENT_CHARACTER)
                    }
                    None => char::REPLACEMENT_CHARACTER,
                }
            } else {
                char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER)
            };
            out.push(ch);
        } else {
            out.push(char::from(simple_escape(raw[i + 1])));
            i += 2;
        }
        segment = i;
    }
    out.push_str(&String::from_utf8_lossy(&raw[segment..]));
    out
}
