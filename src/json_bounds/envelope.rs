//! The inbound hot path: one pass that checks a frame as [`scan_frame`] does and
//! builds only the JSON-RPC envelope members classification reads, and of a
//! `result` object only the members the caller selects ([`MemberSelection`]).
//!
//! Separate from `parse.rs` because it is a different sink over the same core, not
//! a different parser: every member it keeps is built by the same [`Builder`], so
//! it equals what [`parse_value`] builds.
//!
//! [`scan_frame`]: super::scan_frame
//! [`Builder`]: super::parse::Builder
//! [`parse_value`]: super::parse_value

use serde_json::Value;

use super::parse::{Builder, Frame, decode_string, parse_number};
use super::scan::{Core, Sink, Stop};
use super::select::{MemberSelection, SelectedMembers};
use crate::limits::MAX_JSON_DEPTH;

/// For a reply's `id` (`None`: the `result` came first), the members of its
/// `result` object to keep; `None` builds the result whole. The caller's choice,
/// per frame (see [`parse_envelope`]).
pub(crate) type SelectFor<'a> = dyn FnMut(Option<&Value>) -> Option<&'static MemberSelection> + 'a;

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
    /// `result`, as parsed (unless it was read into `selected`).
    pub(crate) result: Option<Value>,
    /// `result`, an object read selectively: only the members the caller
    /// selected (see [`parse_envelope`]).
    pub(crate) selected: Option<SelectedMembers>,
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

/// One pass over an inbound frame that checks what [`scan_frame`] checks and, for
/// a JSON-RPC envelope, builds only the members classification reads (`id`,
/// `method`, `result`, `error` as [`Value`]s built exactly as [`parse_value`]
/// builds them; `jsonrpc` and `params` only as facts). Other members are checked
/// (syntax, depth, number range) but not built. Duplicate keys: the last wins, as
/// in [`parse_value`].
///
/// When `result` is an object and `select(Some(id))` gives a [`MemberSelection`]
/// for the id, only the members it names are built (into `selected`, by
/// position; the rest is checked, not built). A `result` before its `id` is read
/// so when `select(None)` gives a selection; the id read later must then give the
/// same selection, and when it does not (or a later `id` replaces the one asked
/// about), the frame is [`Envelope::Undecided`] and the generic path reads it
/// whole.
///
/// [`scan_frame`]: super::scan_frame
/// [`parse_value`]: super::parse_value
pub(crate) fn parse_envelope(bytes: &[u8], select: &mut SelectFor<'_>) -> Envelope {
    let mut core = Core::new(bytes, EnvelopeSink::new(select));
    match core.run() {
        // The choice was made before the `id` that counts was read: it must hold
        // for that id.
        Ok(()) if core.sink.selection_is_stale() => Envelope::Undecided,
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
    /// The caller's choice of members for an id.
    select: &'f mut SelectFor<'f>,
    /// Set while inside a `result` object read selectively (into
    /// `members.selected`).
    selecting: Option<&'static MemberSelection>,
    /// The index, in the selection, of the result member whose value comes next
    /// (depth 2 of a selected `result`); `None`: not selected.
    slot: Option<usize>,
    /// `id` members seen so far, and how many had been seen when `result` was
    /// read selectively (a later `id` would make that choice stale).
    ids: usize,
    ids_at_selection: usize,
    members: EnvelopeMembers,
}

impl<'f> EnvelopeSink<'f> {
    fn new(select: &'f mut SelectFor<'f>) -> Self {
        EnvelopeSink {
            depth: 0,
            top_is_object: false,
            member: Member::Other,
            builder: None,
            spare: Vec::new(),
            select,
            selecting: None,
            slot: None,
            ids: 0,
            ids_at_selection: 0,
            members: EnvelopeMembers::default(),
        }
    }

    /// True when the next scalar is the value of a top-level member.
    fn at_member(&self) -> bool {
        self.depth == 1 && self.top_is_object
    }

    /// The `result` was read selectively before the `id` that counts, and that
    /// id does not ask for the same selection.
    fn selection_is_stale(&mut self) -> bool {
        let Some(selected) = &self.members.selected else {
            return false;
        };
        self.ids != self.ids_at_selection
            && !self
                .members
                .id
                .as_ref()
                .and_then(|id| (self.select)(Some(id)))
                .is_some_and(|selection| selected.is(selection))
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
                self.members.selected = None;
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

    /// A `result` object (depth 2) opens: read it selectively when the caller
    /// selects members for the id read so far.
    fn open_result(&mut self) -> std::result::Result<(), Stop> {
        match (self.select)(self.members.id.as_ref()) {
            Some(selection) => {
                self.selecting = Some(selection);
                self.slot = None;
                self.members.selected = Some(SelectedMembers::new(selection));
                self.members.result = None;
                self.ids_at_selection = self.ids;
                Ok(())
            }
            None => self.start_builder(true),
        }
    }

    /// A scalar or finished container at depth 2 of a selected `result`.
    fn assign_selected(&mut self, value: Value) {
        if let Some(index) = self.slot
            && let Some(selected) = &mut self.members.selected
        {
            *selected.slot(index) = Some(value);
        }
    }

    /// The next value is a selected member of a selected `result` (depth 2).
    fn at_selected_member(&self) -> bool {
        self.depth == 2 && self.selecting.is_some() && self.slot.is_some()
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
                Member::Result if object => self.open_result()?,
                Member::Id | Member::Method | Member::Result | Member::Error => {
                    self.start_builder(object)?;
                }
                Member::Params => self.members.params_is_container = Some(true),
                Member::Jsonrpc => self.members.jsonrpc_is_2_0 = false,
                Member::Other => {}
            }
        } else if self.depth == 3 && self.selecting.is_some() && self.slot.is_some() {
            self.start_builder(object)?;
        } else if let Some(builder) = &mut self.builder {
            builder.open(object)?;
        }
        Ok(())
    }

    fn close(&mut self) {
        if self.depth == 2 && self.selecting.is_some() {
            // The end of a selected `result` object: its members are in place.
            self.selecting = None;
        } else if let Some(builder) = &mut self.builder {
            builder.close();
            if self.depth == 3 && self.selecting.is_some() {
                if let Some(value) = self.finish_builder() {
                    self.assign_selected(value);
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
        } else if self.depth == 2
            && let Some(selection) = self.selecting
        {
            self.slot = selection.position_raw(raw, escaped);
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
        } else if self.at_selected_member() {
            self.assign_selected(Value::String(decode_string(raw, escaped)));
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
        } else if self.at_selected_member() {
            self.assign_selected(Value::Number(number));
        }
        Ok(())
    }

    fn literal(&mut self, value: Value) {
        if self.at_member() {
            self.assign(value);
        } else if let Some(builder) = &mut self.builder {
            builder.literal(value);
        } else if self.at_selected_member() {
            self.assign_selected(value);
        }
    }
}
