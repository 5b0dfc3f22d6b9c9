//! The inbound hot path: one pass that checks a frame as [`scan_frame`] does and
//! builds only the JSON-RPC envelope members classification reads, a `tools/call`
//! result member by member ([`ToolCallMembers`]).
//!
//! Separate from `parse.rs` because it is a different sink over the same core, not
//! a different parser: every member it keeps is built by the same [`Builder`], so
//! it equals what [`parse_value`] builds.
//!
//! [`scan_frame`]: super::scan_frame
//! [`Builder`]: super::parse::Builder
//! [`parse_value`]: super::parse_value

use serde_json::{Map, Value};

use super::parse::{Builder, Frame, decode_string, parse_number};
use super::scan::{Core, Sink, Stop};
use crate::limits::MAX_JSON_DEPTH;

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
    ///
    /// [`scan_frame`]: super::scan_frame
    /// [`parse_value`]: super::parse_value
    Undecided,
}

/// The members of a `tools/call` result object that a tool result reads, each
/// built exactly as [`parse_value`] builds it, without the object around them
/// (no map, no keys). A member given twice: the last wins, as in a map.
///
/// [`parse_value`]: super::parse_value
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
///
/// [`scan_frame`]: super::scan_frame
/// [`parse_value`]: super::parse_value
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
