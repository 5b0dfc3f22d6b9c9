//! Iterative bounds on JSON: the inbound depth check and the outbound expansion bound.
//!
//! Bytes alone do not make recursive consumers safe. Every inbound frame may nest at
//! most [`MAX_JSON_DEPTH`] (128) object/array containers, counting the JSON-RPC
//! envelope, and that must be decided *before* anything recursive (serde's
//! `Deserialize`, `Drop`, `Serialize`, `PartialEq`) walks the document. Everything in
//! this module is therefore iterative: explicit stacks, constant call-stack use, no
//! recursion, whatever the input.
//!
//! The inbound path is:
//!
//! 1. [`scan_frame`]: one O(n) pass that checks RFC 8259 syntax and reports the
//!    nesting depth, whether the frame is an object with an own top-level `jsonrpc`
//!    key (the noise/protocol split), lone surrogate escapes and UTF-8 validity. It
//!    works on frames of any depth, including ones far too deep to parse.
//! 2. [`parse_value`]: an iterative builder of a [`serde_json::Value`] that refuses
//!    more than [`MAX_JSON_DEPTH`] containers.
//!
//! Why not `serde_json::from_slice` (or `Deserializer::from_slice`) directly:
//!
//! - serde_json's own recursion limit refuses the 128th container (it allows 127),
//!   while this crate's contract allows exactly 128. The switch that lifts that limit,
//!   `Deserializer::disable_recursion_limit`, exists only with serde_json's
//!   `unbounded_depth` feature.
//! - With serde_json's `raw_value` feature (enabled here), deserializing a `Value`
//!   (or a `Map<String, Value>`, or any type holding one) treats an object whose
//!   first key is `"$serde_json::private::RawValue"` as an embedded JSON *string* to
//!   be parsed again: the object is replaced by the parsed string's contents. That
//!   gives a server-controlled document a meaning JSON does not give it, and each
//!   embedding is parsed by a fresh deserializer with a fresh recursion budget, on
//!   the same call stack. A frame that scans at depth 2 can thus become a `Value`
//!   hundreds of containers deep (a test below shows one), defeating the depth
//!   check. [`parse_value`] builds objects itself and gives that key no meaning.
//! - serde_json refuses lone surrogate escapes (`"\ud800"`), which JavaScript keeps.
//!   [`parse_value`] decodes each one to U+FFFD; [`repair_lone_surrogates`] does the
//!   same rewrite on the bytes for callers that must hand them to serde_json.
//!
//! Numbers: JSON syntax allows `1e400`, so [`scan_frame`] reports such a frame as
//! valid, but it overflows `f64`. [`parse_value`] (like serde_json) refuses it with
//! `protocol_error` ("number out of range"), as the contract requires for "numeric
//! overflow to infinity".
//!
//! The outbound path uses [`encoded_len_exceeds`], which stops as soon as a lower
//! bound on a value's compact JSON encoding passes the budget, and [`LimitedWriter`],
//! which stops a serializer at the byte limit instead of letting it grow a buffer.
//!
//! ```
//! use smthrs_mcp::json_bounds::{parse_value, scan_frame};
//!
//! let frame = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
//! let scan = scan_frame(frame);
//! assert!(scan.valid_json && scan.top_level_object && scan.has_jsonrpc_key);
//! assert_eq!(scan.max_depth, 3);
//! let value = parse_value(frame).unwrap();
//! assert_eq!(value["id"], 1);
//! ```

use std::fmt;
use std::io;

use serde_json::{Map, Number, Value};

use crate::error::{Error, Result};
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
    pub fn within_depth(&self) -> bool {
        self.valid_json && self.max_depth <= MAX_JSON_DEPTH
    }
}

/// Scans one inbound frame iteratively in O(n) time and constant call stack.
///
/// The only allocation proportional to depth is a bitset of container kinds (one
/// bit per open container). See [`FrameScan`] for what is reported.
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

/// Parses one frame into a [`Value`] iteratively, refusing more than
/// [`MAX_JSON_DEPTH`] nested containers.
///
/// Differences from `serde_json::from_slice::<Value>`, all deliberate (see the
/// module docs): exactly 128 containers are accepted; no key has a special meaning;
/// a lone surrogate escape decodes to U+FFFD; invalid UTF-8 inside a string decodes
/// to U+FFFD as a WHATWG (JavaScript) decoder would; floats are correctly rounded,
/// as in JavaScript (serde_json without `float_roundtrip` can be one ULP off).
/// Numbers get serde_json's types (`u64`, then `i64`, then `f64`); duplicate keys
/// keep the last value, as in serde_json and JavaScript.
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

/// Rewrites every lone surrogate escape (`\uD800`-`\uDFFF` not forming a high-low
/// pair) to `\ufffd`, so that serde_json can parse the frame: serde_json refuses
/// lone surrogates, JavaScript keeps them. Returns `None` when there is nothing to
/// rewrite.
///
/// Each rewrite replaces six bytes with six bytes, so offsets are preserved. Meant
/// for frames that [`scan_frame`] found valid; on other input it still rewrites
/// only complete `\uXXXX` escapes and never panics.
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

/// The nesting depth of a parsed value, computed iteratively: a scalar is 0, `{}`
/// is 1, `{"a":[1]}` is 2.
///
/// Memory is one iterator per open container; the call stack is constant.
pub fn value_depth(value: &Value) -> usize {
    // A flat container (the usual tool arguments) needs no stack.
    let flat = match value {
        Value::Array(items) => items.iter().all(is_scalar),
        Value::Object(members) => members.values().all(is_scalar),
        _ => return 0,
    };
    if flat {
        return 1;
    }
    let mut stack: Vec<Children<'_>> = Vec::new();
    let mut max = 0;
    if let Some(children) = Children::of(value) {
        stack.push(children);
        max = 1;
    }
    while let Some(top) = stack.last_mut() {
        match top.next() {
            Some(child) => {
                if let Some(children) = Children::of(child) {
                    stack.push(children);
                    max = max.max(stack.len());
                }
            }
            None => {
                stack.pop();
            }
        }
    }
    max
}

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

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
/// ```
/// use smthrs_mcp::json_bounds::LimitedWriter;
///
/// let mut writer = LimitedWriter::new(8);
/// let err = serde_json::to_writer(&mut writer, &vec![1, 2, 3, 4, 5]).unwrap_err();
/// assert!(err.is_io() && writer.exceeded());
/// ```
#[derive(Debug, Clone)]
pub struct LimitedWriter {
    buf: Vec<u8>,
    limit: usize,
    exceeded: bool,
}

impl LimitedWriter {
    /// A writer that accepts at most `limit` bytes.
    pub fn new(limit: usize) -> Self {
        LimitedWriter {
            buf: Vec::new(),
            limit,
            exceeded: false,
        }
    }

    /// A writer that accepts at most `limit` bytes, with room for `capacity` bytes
    /// (never more than `limit`) reserved up front.
    pub fn with_capacity(limit: usize, capacity: usize) -> Self {
        LimitedWriter {
            buf: Vec::with_capacity(capacity.min(limit)),
            limit,
            exceeded: false,
        }
    }

    /// Bytes accepted so far.
    pub fn written(&self) -> usize {
        self.buf.len()
    }

    /// True once a write has been refused for passing the limit.
    pub fn exceeded(&self) -> bool {
        self.exceeded
    }

    /// The bytes accepted so far.
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
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

// ---------------------------------------------------------------------------
// The scanner core, shared by `scan_frame` (no sink) and `parse_value` (a builder).

/// Why the core stopped early.
enum Stop {
    /// The bytes are not JSON.
    Syntax,
    /// The sink refused (too deep, number out of range): its message.
    Sink(&'static str),
}

/// Receives the values the core recognizes. Raw slices are validated grammar:
/// strings without their quotes and with escapes intact, numbers as written.
trait Sink {
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

/// One open container of the builder.
enum Frame {
    Array(Vec<Value>),
    Object(Map<String, Value>, String),
}

/// The sink for [`parse_value`]: builds a `Value` with an explicit stack.
#[derive(Default)]
struct Builder {
    stack: Vec<Frame>,
    root: Option<Value>,
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

/// The members of a JSON-RPC envelope that classification reads, parsed in the
/// same pass that checks the frame's syntax and depth (see [`parse_envelope`]).
#[derive(Debug, Default)]
pub(crate) struct EnvelopeMembers {
    /// `jsonrpc` is the string `"2.0"` (after unescaping).
    pub(crate) jsonrpc_is_2_0: bool,
    /// `id`, as parsed.
    pub(crate) id: Option<Value>,
    /// `method`, as parsed.
    pub(crate) method: Option<Value>,
    /// `params` is present: `true` for an object or array, `false` otherwise.
    pub(crate) params_is_container: Option<bool>,
    /// `result`, as parsed (unless it was read into `tool_call_result`).
    pub(crate) result: Option<Value>,
    /// `result`, read as a `tools/call` result (see [`parse_envelope`]).
    pub(crate) tool_call_result: Option<ToolCallMembers>,
    /// `error`, as parsed.
    pub(crate) error: Option<Value>,
}

/// How [`parse_envelope`] ended.
#[derive(Debug)]
// Returned by value once per frame: boxing the members would cost an allocation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Envelope {
    /// Valid JSON, within the depth bound, every number in range: a top-level
    /// object with an own `jsonrpc` key, and its members.
    Members(EnvelopeMembers),
    /// Not JSON, or not an object with an own `jsonrpc` key: noise.
    Noise,
    /// The pass stopped early (a container past the depth bound, a number out of
    /// range): the caller decides with [`scan_frame`] and [`parse_value`].
    Undecided,
}

/// The members of a `tools/call` result object that a tool result reads, each
/// built exactly as [`parse_value`] builds it, without the object around them
/// (no map, no keys). A member given twice: the last wins, as in a map.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ToolCallMembers {
    /// `content`.
    pub content: Option<Value>,
    /// `isError`.
    pub is_error: Option<Value>,
    /// `structuredContent`.
    pub structured_content: Option<Value>,
    /// `resultType` (2026-07-28).
    pub result_type: Option<Value>,
    /// `inputRequests` (2026-07-28, with `resultType: "input_required"`).
    pub input_requests: Option<Value>,
    /// `requestState` (2026-07-28, with `resultType: "input_required"`).
    pub request_state: Option<Value>,
}

impl ToolCallMembers {
    /// The members of a result object (the others are dropped).
    pub fn from_object(object: Map<String, Value>) -> ToolCallMembers {
        let mut members = ToolCallMembers::default();
        for (key, value) in object {
            if let Some(slot) = members.slot(ToolMember::of_key(key.as_bytes())) {
                *slot = Some(value);
            }
        }
        members
    }

    /// Back to an object holding just these members.
    pub fn into_object(self) -> Map<String, Value> {
        let mut object = Map::new();
        for (key, value) in [
            ("content", self.content),
            ("isError", self.is_error),
            ("structuredContent", self.structured_content),
            ("resultType", self.result_type),
            ("inputRequests", self.input_requests),
            ("requestState", self.request_state),
        ] {
            if let Some(value) = value {
                object.insert(key.to_string(), value);
            }
        }
        object
    }

    fn slot(&mut self, member: ToolMember) -> Option<&mut Option<Value>> {
        match member {
            ToolMember::Content => Some(&mut self.content),
            ToolMember::IsError => Some(&mut self.is_error),
            ToolMember::StructuredContent => Some(&mut self.structured_content),
            ToolMember::ResultType => Some(&mut self.result_type),
            ToolMember::InputRequests => Some(&mut self.input_requests),
            ToolMember::RequestState => Some(&mut self.request_state),
            ToolMember::Other => None,
        }
    }
}

/// A member of a `tools/call` result object.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum ToolMember {
    Content,
    IsError,
    StructuredContent,
    ResultType,
    InputRequests,
    RequestState,
    #[default]
    Other,
}

impl ToolMember {
    /// From a decoded key.
    fn of_key(key: &[u8]) -> ToolMember {
        match key {
            b"content" => ToolMember::Content,
            b"isError" => ToolMember::IsError,
            b"structuredContent" => ToolMember::StructuredContent,
            b"resultType" => ToolMember::ResultType,
            b"inputRequests" => ToolMember::InputRequests,
            b"requestState" => ToolMember::RequestState,
            _ => ToolMember::Other,
        }
    }

    /// From a validated raw key (escapes intact).
    fn of_raw(raw: &[u8], escaped: bool) -> ToolMember {
        if escaped {
            ToolMember::of_key(decode_string(raw, true).as_bytes())
        } else {
            ToolMember::of_key(raw)
        }
    }
}

/// One pass over an inbound frame that checks what [`scan_frame`] checks and, for
/// a JSON-RPC envelope, builds only the members classification reads (`id`,
/// `method`, `result`, `error` as [`Value`]s built exactly as [`parse_value`]
/// builds them; `jsonrpc` and `params` only as facts). Other members are checked
/// (syntax, depth, number range) but not built. Duplicate keys: the last wins, as
/// in [`parse_value`].
///
/// When `result` is an object and `tool_call(id)` says the id asks for a
/// `tools/call` result, only its [`ToolCallMembers`] are built (into
/// `tool_call_result`; the rest is checked, not built). A `result` before its `id`
/// is read so when `tool_call(None)` says so; the id read later must then agree,
/// and when it does not (or a later `id` replaces the one asked about), the
/// frame is [`Envelope::Undecided`] and the generic path reads it whole.
pub(crate) fn parse_envelope(
    bytes: &[u8],
    tool_call: &mut dyn FnMut(Option<&Value>) -> bool,
) -> Envelope {
    let mut core = Core::new(bytes, EnvelopeSink::new(tool_call));
    match core.run() {
        // The choice was made before the `id` that counts was read: it must hold
        // for that id.
        Ok(())
            if core.sink.members.tool_call_result.is_some()
                && core.sink.ids != core.sink.ids_at_tool_choice
                && !core
                    .sink
                    .members
                    .id
                    .as_ref()
                    .is_some_and(|id| (core.sink.tool_call)(Some(id))) =>
        {
            Envelope::Undecided
        }
        Ok(()) if core.top_level_object && core.has_jsonrpc_key => {
            Envelope::Members(core.sink.members)
        }
        Ok(()) | Err(Stop::Syntax) => Envelope::Noise,
        Err(Stop::Sink(_)) => Envelope::Undecided,
    }
}

/// A top-level member of an envelope.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    #[default]
    Other,
}

fn member_of(raw: &[u8], escaped: bool) -> Member {
    let decoded;
    let key = if escaped {
        decoded = decode_string(raw, true);
        decoded.as_bytes()
    } else {
        raw
    };
    match key {
        b"jsonrpc" => Member::Jsonrpc,
        b"id" => Member::Id,
        b"method" => Member::Method,
        b"params" => Member::Params,
        b"result" => Member::Result,
        b"error" => Member::Error,
        _ => Member::Other,
    }
}

/// The sink of [`parse_envelope`].
struct EnvelopeSink<'f> {
    /// Open containers, envelope included.
    depth: usize,
    top_is_object: bool,
    /// The member whose value comes next (depth 1 of an object).
    member: Member,
    /// Builds the current member's value when it is a container that is kept.
    builder: Option<Builder>,
    /// An empty builder stack, kept for the next builder (one allocation per
    /// frame, not one per kept container).
    spare: Vec<Frame>,
    /// Whether an id asks for a `tools/call` result.
    tool_call: &'f mut dyn FnMut(Option<&Value>) -> bool,
    /// Set while inside a `result` object read as a `tools/call` result.
    tool: Option<ToolCallSink>,
    /// `id` members seen so far, and how many had been seen when `result` was
    /// read as a `tools/call` result (a later `id` would make that choice stale).
    ids: usize,
    ids_at_tool_choice: usize,
    members: EnvelopeMembers,
}

/// Reads a `tools/call` result object (depth 2) member by member.
#[derive(Default)]
struct ToolCallSink {
    /// The result member whose value comes next.
    member: ToolMember,
    members: ToolCallMembers,
}

impl<'f> EnvelopeSink<'f> {
    fn new(tool_call: &'f mut dyn FnMut(Option<&Value>) -> bool) -> Self {
        EnvelopeSink {
            depth: 0,
            top_is_object: false,
            member: Member::Other,
            builder: None,
            spare: Vec::new(),
            tool_call,
            tool: None,
            ids: 0,
            ids_at_tool_choice: 0,
            members: EnvelopeMembers::default(),
        }
    }

    /// True when the next scalar is the value of a top-level member.
    fn at_member(&self) -> bool {
        self.depth == 1 && self.top_is_object
    }

    fn assign(&mut self, value: Value) {
        match self.member {
            Member::Jsonrpc => self.members.jsonrpc_is_2_0 = value.as_str() == Some("2.0"),
            Member::Id => {
                self.members.id = Some(value);
                self.ids += 1;
            }
            Member::Method => self.members.method = Some(value),
            Member::Params => self.members.params_is_container = Some(false),
            Member::Result => {
                self.members.result = Some(value);
                self.members.tool_call_result = None;
            }
            Member::Error => self.members.error = Some(value),
            Member::Other => {}
        }
    }

    /// A builder for a kept container, opened.
    fn start_builder(&mut self, object: bool) -> std::result::Result<(), Stop> {
        let mut builder = Builder {
            stack: std::mem::take(&mut self.spare),
            root: None,
        };
        builder.open(object)?;
        self.builder = Some(builder);
        Ok(())
    }

    /// The finished builder's value; its stack is kept for the next one.
    fn finish_builder(&mut self) -> Option<Value> {
        let mut builder = self.builder.take()?;
        builder.stack.clear();
        self.spare = builder.stack;
        builder.root
    }

    /// A scalar or finished container at depth 2 of a `tools/call` result.
    fn assign_tool_member(&mut self, value: Value) {
        if let Some(tool) = &mut self.tool
            && let Some(slot) = tool.members.slot(tool.member)
        {
            *slot = Some(value);
        }
    }

    /// Inside a `tools/call` result object (depth 2 and below).
    fn in_tool_result(&self) -> bool {
        self.tool.is_some() && self.depth >= 2
    }
}

impl Sink for EnvelopeSink<'_> {
    fn open(&mut self, object: bool) -> std::result::Result<(), Stop> {
        if self.depth >= MAX_JSON_DEPTH {
            return Err(Stop::Sink(
                "inbound JSON nests more than 128 objects and arrays",
            ));
        }
        self.depth += 1;
        if self.depth == 1 {
            self.top_is_object = object;
        } else if self.depth == 2 && self.top_is_object {
            match self.member {
                Member::Result if object && (self.tool_call)(self.members.id.as_ref()) => {
                    self.tool = Some(ToolCallSink::default());
                    self.ids_at_tool_choice = self.ids;
                }
                Member::Id | Member::Method | Member::Result | Member::Error => {
                    self.start_builder(object)?;
                }
                Member::Params => self.members.params_is_container = Some(true),
                Member::Jsonrpc => self.members.jsonrpc_is_2_0 = false,
                Member::Other => {}
            }
        } else if self.depth == 3
            && self
                .tool
                .as_ref()
                .is_some_and(|tool| tool.member != ToolMember::Other)
        {
            self.start_builder(object)?;
        } else if let Some(builder) = &mut self.builder {
            builder.open(object)?;
        }
        Ok(())
    }

    fn close(&mut self) {
        if self.depth == 2 && self.tool.is_some() {
            // The end of a `tools/call` result object.
            let tool = self.tool.take().map(|tool| tool.members);
            self.members.tool_call_result = tool;
            self.members.result = None;
        } else if let Some(builder) = &mut self.builder {
            builder.close();
            if self.depth == 3 && self.tool.is_some() {
                if let Some(value) = self.finish_builder() {
                    self.assign_tool_member(value);
                }
            } else if self.depth == 2
                && let Some(value) = self.finish_builder()
            {
                self.assign(value);
            }
        }
        self.depth = self.depth.saturating_sub(1);
    }

    fn key(&mut self, raw: &[u8], escaped: bool) {
        if self.at_member() {
            self.member = member_of(raw, escaped);
        } else if self.depth == 2 && self.tool.is_some() {
            if let Some(tool) = &mut self.tool {
                tool.member = ToolMember::of_raw(raw, escaped);
            }
        } else if let Some(builder) = &mut self.builder {
            builder.key(raw, escaped);
        }
    }

    fn string(&mut self, raw: &[u8], escaped: bool) {
        if self.at_member() {
            match self.member {
                Member::Other => {}
                Member::Params => self.members.params_is_container = Some(false),
                Member::Jsonrpc => {
                    self.members.jsonrpc_is_2_0 = if escaped {
                        decode_string(raw, true) == "2.0"
                    } else {
                        raw == b"2.0"
                    };
                }
                _ => self.assign(Value::String(decode_string(raw, escaped))),
            }
        } else if let Some(builder) = &mut self.builder {
            builder.string(raw, escaped);
        } else if self.depth == 2
            && self.in_tool_result()
            && self
                .tool
                .as_ref()
                .is_some_and(|tool| tool.member != ToolMember::Other)
        {
            self.assign_tool_member(Value::String(decode_string(raw, escaped)));
        }
    }

    fn number(&mut self, raw: &[u8]) -> std::result::Result<(), Stop> {
        if let Some(builder) = &mut self.builder {
            return builder.number(raw);
        }
        // Checked even when not kept: out of range anywhere is a protocol error.
        let number = parse_number(raw).ok_or(Stop::Sink("inbound JSON number out of range"))?;
        if self.at_member() {
            self.assign(Value::Number(number));
        } else if self.depth == 2 && self.in_tool_result() {
            self.assign_tool_member(Value::Number(number));
        }
        Ok(())
    }

    fn literal(&mut self, value: Value) {
        if self.at_member() {
            self.assign(value);
        } else if let Some(builder) = &mut self.builder {
            builder.literal(value);
        } else if self.depth == 2 && self.in_tool_result() {
            self.assign_tool_member(value);
        }
    }
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

struct Core<'a, S> {
    bytes: &'a [u8],
    pos: usize,
    kinds: KindStack,
    sink: S,
    max_depth: usize,
    top_level_object: bool,
    has_jsonrpc_key: bool,
    has_lone_surrogate: bool,
}

impl<'a, S: Sink> Core<'a, S> {
    fn new(bytes: &'a [u8], sink: S) -> Self {
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

    fn run(&mut self) -> std::result::Result<(), Stop> {
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

/// A grammar-checked number token as serde_json would type it (`u64` when it fits,
/// else `i64`, else `f64`; `-0` is the float `-0.0`) but with every float correctly
/// rounded, as JavaScript's `JSON.parse` does. (serde_json without its
/// `float_roundtrip` feature may be one ULP off.) `None` when it overflows `f64`.
fn parse_number(raw: &[u8]) -> Option<Number> {
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

fn hex4(digits: &[u8]) -> Option<u16> {
    digits.iter().try_fold(0u16, |acc, &d| {
        let v = (d as char).to_digit(16)?;
        Some(acc << 4 | v as u16)
    })
}

fn is_high_surrogate(unit: u16) -> bool {
    (0xD800..=0xDBFF).contains(&unit)
}

fn is_low_surrogate(unit: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

/// The character a one-letter escape stands for (grammar already checked).
fn simple_escape(letter: u8) -> u8 {
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

/// Decodes a validated raw string: escapes resolved, surrogate pairs combined, lone
/// surrogates and invalid UTF-8 replaced by U+FFFD.
fn decode_string(raw: &[u8], escaped: bool) -> String {
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

// ---------------------------------------------------------------------------
// Encoded length.

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

/// Children of a container, for the depth walk.
enum Children<'a> {
    Array(std::slice::Iter<'a, Value>),
    Object(serde_json::map::Values<'a>),
}

impl<'a> Children<'a> {
    fn of(value: &'a Value) -> Option<Self> {
        match value {
            Value::Array(items) => Some(Children::Array(items.iter())),
            Value::Object(map) => Some(Children::Object(map.values())),
            _ => None,
        }
    }
}

impl<'a> Iterator for Children<'a> {
    type Item = &'a Value;

    fn next(&mut self) -> Option<&'a Value> {
        match self {
            Children::Array(items) => items.next(),
            Children::Object(values) => values.next(),
        }
    }
}

/// Drops a JSON value without recursion.
///
/// `serde_json::Value`'s own `Drop` recurses once per nesting level, so a value
/// nested 100 000 deep (which a caller can build and hand us) would overflow the
/// stack when dropped. This takes it apart with an explicit stack instead.
pub fn drop_value(value: Value) {
    let mut stack = vec![value];
    while let Some(mut value) = stack.pop() {
        match &mut value {
            Value::Array(items) => stack.append(items),
            Value::Object(map) => {
                let map = std::mem::take(map);
                stack.extend(map.into_iter().map(|(_, v)| v));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use std::io::Write;

    fn nested(depth: usize, open: &str, close: &str, inner: &str) -> String {
        let mut s = open.repeat(depth);
        s.push_str(inner);
        s.push_str(&close.repeat(depth));
        s
    }

    fn valid(text: &str) -> bool {
        scan_frame(text.as_bytes()).valid_json
    }

    #[test]
    fn accepts_every_kind_of_value() {
        for text in [
            "0",
            "-0",
            "1",
            "-12.5e+3",
            "1E-7",
            "0.0",
            "1e400",
            "true",
            "false",
            "null",
            "\"\"",
            "\"a\\\"b\"",
            "\"\\\\\"",
            "\"\\/\\b\\f\\n\\r\\t\\u00e9\\uD83D\\uDE00\"",
            "[]",
            "{}",
            "[1,[2,{\"a\":[]}],\"]\"]",
            "{\"a\":1,\"b\":{\"c\":null}}",
            " \t\r\n{ \"a\" : [ 1 , 2 ] } \n",
            "\"é漢字😀\"",
        ] {
            assert!(valid(text), "{text:?}");
            assert!(serde_json::from_str::<Value>(text).is_ok() || text == "1e400");
        }
    }

    #[test]
    fn refuses_malformed_input() {
        for text in [
            "",
            "   ",
            "{",
            "}",
            "[",
            "[1,]",
            "[,1]",
            "{\"a\":1,}",
            "{\"a\"}",
            "{\"a\" 1}",
            "{1:2}",
            "{'a':1}",
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "1e+",
            "+1",
            "0x10",
            "NaN",
            "Infinity",
            "tru",
            "truex",
            "nul",
            "\"abc",
            "\"\\x\"",
            "\"\\u12G4\"",
            "\"\\u123\"",
            "\"a\nb\"",
            "\"tab\there\"",
            "{} {}",
            "[] x",
            "1 2",
            "[1]]",
            "{\"a\":1}}",
            "[}",
            "{]",
            "\u{feff}{}",
            "{\"a\":1}\u{0}",
            "\"\\\"",
            "é",
        ] {
            assert!(!valid(text), "{text:?}");
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn brackets_and_quotes_inside_strings_do_not_count() {
        let scan = scan_frame(br#"{"a":"[[[{{{\"]]]}}}\\","b":"\\\\"}"#);
        assert!(scan.valid_json);
        assert_eq!(scan.max_depth, 1);
        // An escaped backslash ends the escape: the next quote closes the string.
        let scan = scan_frame(br#"["\\"]"#);
        assert!(scan.valid_json);
        assert_eq!(scan.max_depth, 1);
        assert!(!valid(r#"["\\\"]"#));
    }

    #[test]
    fn depth_counts_containers_only() {
        assert_eq!(scan_frame(b"1").max_depth, 0);
        assert_eq!(scan_frame(b"\"[[\"").max_depth, 0);
        assert_eq!(scan_frame(b"{}").max_depth, 1);
        assert_eq!(scan_frame(b"[]").max_depth, 1);
        assert_eq!(scan_frame(br#"{"a":[1]}"#).max_depth, 2);
        assert_eq!(scan_frame(br#"[[],[[]],[]]"#).max_depth, 3);
        assert_eq!(scan_frame(br#"{"a":{},"b":[{"c":[]}]}"#).max_depth, 4);
    }

    #[test]
    fn depth_128_parses_and_129_does_not() {
        let at_limit = nested(MAX_JSON_DEPTH, "[", "]", "1");
        let scan = scan_frame(at_limit.as_bytes());
        assert!(scan.valid_json && scan.within_depth());
        assert_eq!(scan.max_depth, 128);
        // serde_json alone refuses the 128th container; parse_value does not.
        assert!(serde_json::from_str::<Value>(&at_limit).is_err());
        let value = parse_value(at_limit.as_bytes()).unwrap();
        assert_eq!(value_depth(&value), 128);
        assert_eq!(serde_json::to_string(&value).unwrap(), at_limit);

        let objects = nested(MAX_JSON_DEPTH, "{\"k\":", "}", "null");
        assert_eq!(scan_frame(objects.as_bytes()).max_depth, 128);
        assert_eq!(value_depth(&parse_value(objects.as_bytes()).unwrap()), 128);

        let over = nested(MAX_JSON_DEPTH + 1, "[", "]", "");
        let scan = scan_frame(over.as_bytes());
        assert!(scan.valid_json && !scan.within_depth());
        assert_eq!(scan.max_depth, 129);
        let err = parse_value(over.as_bytes()).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::ProtocolError);
        assert!(err.message().contains("128"));

        // A depth-127 frame is one serde_json accepts too.
        let below = nested(MAX_JSON_DEPTH - 1, "[", "]", "");
        assert!(serde_json::from_str::<Value>(&below).is_ok());
        assert_eq!(scan_frame(below.as_bytes()).max_depth, 127);
    }

    #[test]
    fn a_hundred_thousand_deep_frame_does_not_overflow_the_stack() {
        let deep = nested(100_000, "[", "]", "");
        let scan = scan_frame(deep.as_bytes());
        assert!(scan.valid_json);
        assert_eq!(scan.max_depth, 100_000);
        assert!(!scan.top_level_object);
        assert!(parse_value(deep.as_bytes()).is_err());

        let deep_objects = format!(
            "{{\"jsonrpc\":\"2.0\",\"x\":{}}}",
            nested(100_000, "{\"a\":", "}", "1")
        );
        let scan = scan_frame(deep_objects.as_bytes());
        assert!(scan.valid_json && scan.top_level_object && scan.has_jsonrpc_key);
        assert_eq!(scan.max_depth, 100_001);

        // Unterminated: still no overflow, just invalid.
        let open = "[".repeat(100_000);
        let scan = scan_frame(open.as_bytes());
        assert!(!scan.valid_json);
        assert_eq!(scan.max_depth, 100_000);
    }

    #[test]
    fn top_level_object_and_jsonrpc_key() {
        let scan = scan_frame(br#" {"id":1,"jsonrpc":"2.0"} "#);
        assert!(scan.top_level_object && scan.has_jsonrpc_key);
        let scan = scan_frame(br#"{"json\u0072pc":"2.0"}"#);
        assert!(scan.has_jsonrpc_key);
        let scan = scan_frame(br#"{"\u006a\u0073\u006F\u006e\u0072\u0070\u0063":1}"#);
        assert!(scan.has_jsonrpc_key);
        for text in [
            r#"{"a":{"jsonrpc":"2.0"}}"#,
            r#"[{"jsonrpc":"2.0"}]"#,
            r#"{"jsonrpcx":1}"#,
            r#"{"jsonrp":1}"#,
            r#"{"JSONRPC":1}"#,
            r#"{"jsonrpc\u0000":1}"#,
            r#"{"a":"jsonrpc"}"#,
            r#""jsonrpc""#,
            r#"{}"#,
        ] {
            assert!(!scan_frame(text.as_bytes()).has_jsonrpc_key, "{text}");
        }
        assert!(!scan_frame(b"[]").top_level_object);
        assert!(!scan_frame(b"null").top_level_object);
        assert!(!scan_frame(b"\"{\"").top_level_object);
        // Nested objects are not the top level.
        assert!(!scan_frame(b"[{}]").top_level_object);
    }

    #[test]
    fn lone_surrogates_are_detected_and_repaired() {
        for (text, lone) in [
            (r#""\ud83d\ude00""#, false),
            (r#""\uD83D\uDE00""#, false),
            (r#""\ud800""#, true),
            (r#""\udc00""#, true),
            (r#""\ud800x""#, true),
            (r#""\ud800\n""#, true),
            (r#""\ud800\u0041""#, true),
            (r#""\ud800\ud800\udc00""#, true),
            (r#""\ude00\ud83d""#, true),
            (r#"["\ud800","\udc00"]"#, true),
            (r#""\\ud800""#, false),
            (r#""\u00e9""#, false),
        ] {
            let scan = scan_frame(text.as_bytes());
            assert!(scan.valid_json, "{text}");
            assert_eq!(scan.has_lone_surrogate, lone, "{text}");
            let repaired = repair_lone_surrogates(text.as_bytes());
            assert_eq!(repaired.is_some(), lone, "{text}");
            let fixed = repaired.unwrap_or_else(|| text.as_bytes().to_vec());
            assert!(!scan_frame(&fixed).has_lone_surrogate, "{text}");
            let by_serde: Value = serde_json::from_slice(&fixed).unwrap();
            assert_eq!(parse_value(text.as_bytes()).unwrap(), by_serde, "{text}");
        }
        assert_eq!(
            repair_lone_surrogates(br#"{"a":"x\ud800y"}"#).unwrap(),
            br#"{"a":"x\ufffdy"}"#.to_vec()
        );
        assert_eq!(
            parse_value(br#"["\ud800\ud800\udc00"]"#).unwrap(),
            json!(["\u{fffd}\u{10000}"])
        );
        // Truncated input never panics.
        assert_eq!(repair_lone_surrogates(br#""\ud80"#), None);
        assert!(repair_lone_surrogates(br#"\ud800"#).is_some());
    }

    #[test]
    fn utf8_validity_is_reported_separately() {
        let scan = scan_frame(b"\"caf\xc3\xa9\"");
        assert!(scan.valid_json && scan.valid_utf8);
        let scan = scan_frame(b"\"bad \xff byte\"");
        assert!(scan.valid_json && !scan.valid_utf8);
        assert_eq!(
            parse_value(b"\"bad \xff byte\"").unwrap(),
            json!("bad \u{fffd} byte")
        );
        let scan = scan_frame(b"[1,\xff]");
        assert!(!scan.valid_json && !scan.valid_utf8);
        let scan = scan_frame(b"{\"a\":1} \xff");
        assert!(!scan.valid_json && !scan.valid_utf8);
    }

    #[test]
    fn parse_value_matches_serde_json_and_refuses_bad_numbers() {
        let text = br#"{"jsonrpc":"2.0","id":-7,"result":{"f":1.5e3,"big":18446744073709551615,
            "neg":-9223372036854775808,"z":-0,"s":"a\"\\\/\b\f\n\r\t\u00e9","d":1,"d":2,"arr":[true,false,null]}}"#;
        let ours = parse_value(text).unwrap();
        let theirs: Value = serde_json::from_slice(text).unwrap();
        assert_eq!(ours, theirs);
        assert_eq!(ours["result"]["d"], 2);

        let err = parse_value(b"[1e400]").unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::ProtocolError);
        assert!(err.message().contains("out of range"));
        assert!(parse_value(b"-1e400").is_err());
        assert!(parse_value(b"{").is_err());
        assert!(parse_value(b"").is_err());
    }

    #[test]
    fn parse_value_gives_no_key_a_special_meaning() {
        let text = br#"{"$serde_json::private::RawValue":"[1,2]"}"#;
        // serde_json's Value deserializer (raw_value feature) would re-parse the string.
        let theirs: Value = serde_json::from_slice(text).unwrap();
        assert_eq!(theirs, json!([1, 2]));
        let ours = parse_value(text).unwrap();
        assert_eq!(ours, json!({"$serde_json::private::RawValue": "[1,2]"}));

        // Embedded strings get a fresh recursion budget each: a frame that scans at
        // depth 2 becomes a Value hundreds of containers deep through serde_json.
        let mut inner = "1".to_string();
        for _ in 0..4 {
            let wrapped = format!("{}{inner}{}", "[".repeat(100), "]".repeat(100));
            let quoted = serde_json::to_string(&wrapped).unwrap();
            inner = format!("{{\"$serde_json::private::RawValue\":{quoted}}}");
        }
        let frame = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{inner}}}");
        assert_eq!(scan_frame(frame.as_bytes()).max_depth, 2);
        let theirs: Value = serde_json::from_str(&frame).unwrap();
        assert_eq!(value_depth(&theirs), 401);
        assert_eq!(value_depth(&parse_value(frame.as_bytes()).unwrap()), 2);
    }

    #[test]
    fn value_depth_of_small_values() {
        assert_eq!(value_depth(&json!(1)), 0);
        assert_eq!(value_depth(&json!("x")), 0);
        assert_eq!(value_depth(&json!({})), 1);
        assert_eq!(value_depth(&json!([])), 1);
        assert_eq!(value_depth(&json!({"a": [1]})), 2);
        assert_eq!(value_depth(&json!([[], [[[]]], {}])), 4);
    }

    #[test]
    fn encoded_len_matches_serde_json_on_edges() {
        let values = [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.5),
            json!(1e300),
            json!(-0.0),
            json!(""),
            json!("\u{0}\u{1f}\u{7f}\"\\/\u{8}\u{c}\n\r\t é😀\u{2028}"),
            json!([]),
            json!({}),
            json!({"a": [1, {"b": null}], "c\"": "d"}),
        ];
        for value in &values {
            let len = serde_json::to_vec(value).unwrap().len();
            assert!(!encoded_len_exceeds(value, len), "{value}");
            assert!(encoded_len_exceeds(value, len - 1), "{value}");
            assert!(encoded_len_exceeds(value, 0));
        }
    }

    #[test]
    fn encoded_len_stops_early_on_huge_values() {
        // 2^20 elements would be several MB; the answer comes from the first few.
        let wide = Value::Array(vec![json!("xxxxxxxxxx"); 1 << 20]);
        assert!(encoded_len_exceeds(&wide, 100));
        let mut deep = json!(1);
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        assert!(encoded_len_exceeds(&deep, 1000));
        assert!(!encoded_len_exceeds(&deep, 200_001));
        assert!(encoded_len_exceeds(&deep, 200_000));
        assert_eq!(value_depth(&deep), 100_000);
        // Dropping a deep Value is recursive; dismantle it iteratively.
        let mut stack = vec![deep];
        while let Some(mut value) = stack.pop() {
            if let Value::Array(items) = &mut value {
                stack.append(items);
            }
        }
    }

    #[test]
    fn limited_writer_stops_at_the_limit() {
        let mut writer = LimitedWriter::new(5);
        writer.write_all(b"abc").unwrap();
        writer.write_all(b"de").unwrap();
        assert_eq!(writer.written(), 5);
        assert!(!writer.exceeded());
        let err = writer.write_all(b"f").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Other);
        assert_eq!(err.to_string(), LIMIT_EXCEEDED_MESSAGE);
        assert!(writer.exceeded());
        assert_eq!(writer.into_inner(), b"abcde");

        let value = json!({"key": "a longer value than the limit allows"});
        let mut writer = LimitedWriter::new(10);
        let err = serde_json::to_writer(&mut writer, &value).unwrap_err();
        assert!(err.is_io());
        assert!(writer.written() <= 10);

        let mut writer = LimitedWriter::new(64);
        serde_json::to_writer(&mut writer, &value).unwrap();
        assert_eq!(writer.into_inner(), serde_json::to_vec(&value).unwrap());
    }

    fn arb_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x1f\"\\\\a/\u{2028}é]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(10, 96, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec(("[a-z\"\\\\\u{1}é]{0,4}", inner), 0..6)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    fn reference_depth(value: &Value) -> usize {
        match value {
            Value::Array(items) => 1 + items.iter().map(reference_depth).max().unwrap_or(0),
            Value::Object(map) => 1 + map.values().map(reference_depth).max().unwrap_or(0),
            _ => 0,
        }
    }

    /// Equal, except that floats may differ by serde_json's rounding (one ULP).
    fn same_up_to_float_rounding(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) if x.is_f64() && y.is_f64() => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                x == y || (x.to_bits() as i64 - y.to_bits() as i64).abs() <= 1
            }
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|(x, y)| same_up_to_float_rounding(x, y))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|((kx, x), (ky, y))| kx == ky && same_up_to_float_rounding(x, y))
            }
            _ => a == b,
        }
    }

    /// Token soup: mostly-JSON fragments glued at random, to reach the edges of the
    /// grammar far more often than random bytes would.
    fn arb_soup() -> impl Strategy<Value = Vec<u8>> {
        let tokens = prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            " ",
            "\n",
            "\"a\"",
            "\"jsonrpc\"",
            "\"",
            "\\",
            "\\\"",
            "\\u0041",
            "\\ud800",
            "\\udc00",
            "1",
            "0",
            "-",
            "-0.5e3",
            ".",
            "e",
            "01",
            "1e999",
            "true",
            "nul",
            "null",
            "x",
            "\u{e9}",
        ]);
        prop::collection::vec(tokens, 0..24).prop_map(|parts| parts.concat().into_bytes())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn scan_agrees_with_serde_on_serialized_values(value in arb_value()) {
            let depth = reference_depth(&value);
            prop_assume!(depth < 127);
            for bytes in [
                serde_json::to_vec(&value).unwrap(),
                serde_json::to_vec_pretty(&value).unwrap(),
            ] {
                let scan = scan_frame(&bytes);
                prop_assert!(scan.valid_json && scan.valid_utf8 && !scan.has_lone_surrogate);
                prop_assert_eq!(scan.max_depth, depth);
                prop_assert_eq!(scan.top_level_object, value.is_object());
                prop_assert_eq!(
                    scan.has_jsonrpc_key,
                    value.as_object().is_some_and(|m| m.contains_key("jsonrpc"))
                );
                prop_assert!(serde_json::from_slice::<Value>(&bytes).is_ok());
                prop_assert_eq!(&parse_value(&bytes).unwrap(), &value);
                // Cutting the last byte off a container or string makes it invalid.
                if !matches!(value, Value::Number(_)) {
                    let truncated = &bytes[..bytes.len() - 1];
                    prop_assert!(!scan_frame(truncated).valid_json);
                }
            }
        }

        #[test]
        fn scan_agrees_with_serde_on_token_soup(bytes in arb_soup()) {
            let scan = scan_frame(&bytes);
            let serde = serde_json::from_slice::<Value>(&bytes);
            match &serde {
                Ok(value) => {
                    prop_assert!(scan.valid_json);
                    prop_assert_eq!(scan.max_depth, value_depth(value));
                    prop_assert!(same_up_to_float_rounding(&parse_value(&bytes).unwrap(), value));
                }
                Err(err) if scan.valid_json => {
                    // serde_json refuses only lone surrogates and huge numbers here.
                    let message = err.to_string();
                    prop_assert!(
                        scan.has_lone_surrogate || message.contains("out of range"),
                        "{}", message
                    );
                    if let Some(fixed) = repair_lone_surrogates(&bytes) {
                        let fixed_scan = scan_frame(&fixed);
                        prop_assert!(fixed_scan.valid_json && !fixed_scan.has_lone_surrogate);
                        if let Ok(value) = serde_json::from_slice::<Value>(&fixed) {
                            let ours = parse_value(&bytes).unwrap();
                            prop_assert!(same_up_to_float_rounding(&ours, &value));
                        }
                    }
                }
                Err(_) => prop_assert!(parse_value(&bytes).is_err()),
            }
        }

        #[test]
        fn value_depth_matches_a_recursive_reference(value in arb_value()) {
            prop_assert_eq!(value_depth(&value), reference_depth(&value));
        }

        #[test]
        fn encoded_len_matches_serde_json(value in arb_value(), budget in 0usize..4096) {
            let len = serde_json::to_vec(&value).unwrap().len();
            prop_assert_eq!(encoded_len_exceeds(&value, budget), len > budget);
            prop_assert!(!encoded_len_exceeds(&value, len));
            if len > 0 {
                prop_assert!(encoded_len_exceeds(&value, len - 1));
            }
        }
    }

    // ----- Trees of any depth, the 100 000-deep bound, expansion, UTF-8 sizes -----

    /// A random JSON tree of our own, so that depths far past what serde_json (or
    /// a recursive `Value` walk) can handle can be generated, printed and measured.
    #[derive(Debug, Clone)]
    enum Tree {
        Leaf(&'static str),
        Array(Vec<Tree>),
        Object(Vec<(String, Tree)>),
    }

    impl Tree {
        /// The recursive reference: a scalar is 0, a container 1 + its deepest child.
        fn depth(&self) -> usize {
            match self {
                Tree::Leaf(_) => 0,
                Tree::Array(items) => 1 + items.iter().map(Tree::depth).max().unwrap_or(0),
                Tree::Object(entries) => {
                    1 + entries.iter().map(|(_, t)| t.depth()).max().unwrap_or(0)
                }
            }
        }

        fn write(&self, out: &mut String) {
            match self {
                Tree::Leaf(text) => out.push_str(text),
                Tree::Array(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        item.write(out);
                    }
                    out.push(']');
                }
                Tree::Object(entries) => {
                    out.push('{');
                    for (i, (key, item)) in entries.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(&serde_json::to_string(key).unwrap());
                        out.push(':');
                        item.write(out);
                    }
                    out.push('}');
                }
            }
        }

        fn text(&self) -> String {
            let mut out = String::new();
            self.write(&mut out);
            out
        }
    }

    /// Trees up to ~200 containers deep: a random bushy tree, optionally hung at
    /// the bottom of a random spine, so depths around the 128 bound are common.
    fn arb_tree() -> impl Strategy<Value = Tree> {
        let leaf = prop::sample::select(vec!["0", "-1.5e3", "true", "null", "\"x\"", "\"[{\""])
            .prop_map(Tree::Leaf);
        let bushy = leaf.prop_recursive(12, 64, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Tree::Array),
                // Unique keys: a duplicate key keeps only its last value.
                prop::collection::vec(("[a-z]{0,3}", inner), 0..4).prop_map(|entries| {
                    Tree::Object(
                        entries
                            .into_iter()
                            .enumerate()
                            .map(|(i, (key, tree))| (format!("{key}{i}"), tree))
                            .collect(),
                    )
                }),
            ]
        });
        (bushy, prop::collection::vec(any::<bool>(), 0..200)).prop_map(|(mut tree, spine)| {
            for object in spine {
                tree = if object {
                    Tree::Object(vec![("k".into(), tree)])
                } else {
                    Tree::Array(vec![Tree::Leaf("1"), tree])
                };
            }
            tree
        })
    }

    /// Builds a value `depth` containers deep without recursion, each level an
    /// array or an object as `kinds` says (cycled), with a sibling scalar.
    fn deep_value(depth: usize, kinds: &[bool]) -> Value {
        let mut value = json!("bottom");
        for level in 0..depth {
            value = if kinds[level % kinds.len()] {
                let mut map = Map::new();
                map.insert("a".into(), json!(level));
                map.insert("k".into(), value);
                Value::Object(map)
            } else {
                Value::Array(vec![json!(null), value])
            };
        }
        value
    }

    /// The text of [`deep_value`], built iteratively.
    fn deep_text(depth: usize, kinds: &[bool]) -> String {
        let mut open = String::new();
        let mut close = String::new();
        for level in (0..depth).rev() {
            if kinds[level % kinds.len()] {
                open.push_str(&format!("{{\"a\":{level},\"k\":"));
                close.push('}');
            } else {
                open.push_str("[null,");
                close.push(']');
            }
        }
        format!(
            "{open}\"bottom\"{}",
            close.chars().rev().collect::<String>()
        )
    }

    /// The compact encoded length of one string, written out per character as
    /// serde_json escapes it: `"` `\\` and the five short escapes take 2 bytes,
    /// other C0 controls 6 (`\\u00XX`), everything else its UTF-8 length.
    fn reference_string_len(text: &str) -> usize {
        2 + text
            .chars()
            .map(|c| match c {
                '"' | '\\' | '\u{8}' | '\u{9}' | '\n' | '\u{c}' | '\r' => 2,
                '\u{0}'..='\u{1f}' => 6,
                c => c.len_utf8(),
            })
            .sum::<usize>()
    }

    /// `v(0) = leaf`, `v(k+1) = [v(k), v(k)]`: 2^k leaves; its length by formula.
    fn doubling(leaf: &Value, k: u32) -> (Value, usize) {
        let mut value = leaf.clone();
        let mut len = serde_json::to_vec(leaf).unwrap().len();
        for _ in 0..k {
            value = Value::Array(vec![value.clone(), value]);
            len = 2 * len + 3;
        }
        (value, len)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The iterative depth check agrees with a recursive reference on random
        /// trees on both sides of the bound, and the bound is exactly 128.
        #[test]
        fn depth_check_agrees_with_a_recursive_reference_on_random_trees(tree in arb_tree()) {
            let depth = tree.depth();
            let text = tree.text();
            let scan = scan_frame(text.as_bytes());
            prop_assert!(scan.valid_json);
            prop_assert_eq!(scan.max_depth, depth);
            prop_assert_eq!(scan.within_depth(), depth <= MAX_JSON_DEPTH);
            match parse_value(text.as_bytes()) {
                Ok(value) => {
                    prop_assert!(depth <= MAX_JSON_DEPTH);
                    prop_assert_eq!(value_depth(&value), depth);
                    prop_assert_eq!(reference_depth(&value), depth);
                    drop_value(value);
                }
                Err(error) => {
                    prop_assert!(depth > MAX_JSON_DEPTH);
                    prop_assert_eq!(error.kind(), crate::ErrorKind::ProtocolError);
                }
            }
            // Inside an envelope the root is container two: the envelope counts.
            let frame = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[{text}]}}");
            let classified = crate::jsonrpc::classify(frame.as_bytes());
            prop_assert_eq!(classified.is_ok(), depth + 2 <= MAX_JSON_DEPTH);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]

        /// 100 000 containers of random kinds: scanning, refusing to parse,
        /// classifying, measuring, bounding the encoding and dropping never
        /// overflow the (2 MiB) test-thread stack.
        #[test]
        fn nothing_overflows_the_stack_at_depth_100_000(
            extra in 0usize..64,
            kinds in prop::collection::vec(any::<bool>(), 1..8),
        ) {
            let depth = 100_000 + extra;
            let text = deep_text(depth, &kinds);
            let scan = scan_frame(text.as_bytes());
            prop_assert!(scan.valid_json && !scan.within_depth());
            prop_assert_eq!(scan.max_depth, depth);
            prop_assert_eq!(scan.top_level_object, kinds[(depth - 1) % kinds.len()]);
            prop_assert!(parse_value(text.as_bytes()).is_err());
            let frame = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{text}}}");
            prop_assert_eq!(
                crate::jsonrpc::classify(frame.as_bytes()).map_err(|e| e.kind()).err(),
                Some(crate::ErrorKind::ProtocolError)
            );

            let value = deep_value(depth, &kinds);
            prop_assert_eq!(value_depth(&value), depth);
            prop_assert!(encoded_len_exceeds(&value, 1 << 16));
            prop_assert!(!encoded_len_exceeds(&value, text.len()));
            prop_assert!(encoded_len_exceeds(&value, text.len() - 1));
            drop_value(value);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The expansion bound on values whose encoding doubles with every level:
        /// the answer matches the length formula for every budget, and a small
        /// budget is decided without walking the value.
        #[test]
        fn expansion_bound_matches_the_doubling_formula(
            leaf in arb_value().prop_filter("small leaf", |v| serde_json::to_vec(v).unwrap().len() < 64),
            k in 0u32..14,
            budget in 0usize..1_000_000,
        ) {
            let (value, len) = doubling(&leaf, k);
            prop_assert_eq!(encoded_len_exceeds(&value, budget), len > budget);
            prop_assert!(!encoded_len_exceeds(&value, len));
            prop_assert!(encoded_len_exceeds(&value, len - 1));
            if k <= 10 {
                prop_assert_eq!(serde_json::to_vec(&value).unwrap().len(), len);
            }
            // The writer bound agrees, and stops at the limit.
            let mut writer = LimitedWriter::new(budget.min(1 << 16));
            let written = serde_json::to_writer(&mut writer, &value);
            prop_assert_eq!(written.is_ok(), len <= budget.min(1 << 16));
            prop_assert!(writer.written() <= budget.min(1 << 16));
        }

        /// UTF-8 size accounting: multi-byte characters, escapes and controls are
        /// counted in encoded bytes, in strings and in keys, exactly at the limit.
        #[test]
        fn utf8_sizes_are_counted_in_encoded_bytes(
            text in "(\\PC|[\\x00-\\x1f\"\\\\\u{7f}\u{80}\u{2028}\u{ffff}\u{10000}\u{10ffff}]){0,40}",
            key in "(\\PC|[\\x00-\\x1f\"\\\\]){0,8}",
        ) {
            let string = Value::String(text.clone());
            let len = reference_string_len(&text);
            prop_assert_eq!(serde_json::to_vec(&string).unwrap().len(), len);
            prop_assert!(!encoded_len_exceeds(&string, len));
            prop_assert!(encoded_len_exceeds(&string, len - 1));

            let mut map = Map::new();
            map.insert(key.clone(), string.clone());
            let object = Value::Object(map);
            let object_len = 2 + reference_string_len(&key) + 1 + len;
            prop_assert_eq!(serde_json::to_vec(&object).unwrap().len(), object_len);
            prop_assert!(!encoded_len_exceeds(&object, object_len));
            prop_assert!(encoded_len_exceeds(&object, object_len - 1));

            let mut exact = LimitedWriter::new(object_len);
            prop_assert!(serde_json::to_writer(&mut exact, &object).is_ok());
            let mut short = LimitedWriter::new(object_len - 1);
            prop_assert!(serde_json::to_writer(&mut short, &object).is_err());
            prop_assert!(short.exceeded());

            // And the inbound side reads the same bytes back.
            let bytes = exact.into_inner();
            prop_assert_eq!(parse_value(&bytes).unwrap(), object);
        }
    }
}
