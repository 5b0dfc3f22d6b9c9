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
//! The hot path does both in one pass (`parse_envelope`): it checks what
//! [`scan_frame`] checks and builds only the JSON-RPC envelope members, and of a
//! `result` object only the members its caller selects ([`MemberSelection`]: a
//! list of names that is the caller's data, not this module's), returned by
//! position ([`SelectedMembers`]). Each member kept equals what [`parse_value`]
//! builds; a frame that pass cannot decide alone is read by the two steps above.
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
//!   hundreds of containers deep (a test in `tests.rs` shows one), defeating the depth
//!   check. [`parse_value`] builds objects itself and gives that key no meaning.
//! - serde_json refuses lone surrogate escapes (`"\ud800"`), which JavaScript keeps.
//!   [`parse_value`] decodes each one to U+FFFD; [`repair_lone_surrogates`] does the
//!   same rewrite on the bytes for callers that must hand them to serde_json.
//! - Scanning first and then letting serde_json build the values (through visitors
//!   that give no key a meaning, on repaired bytes) was slower, for no less code,
//!   since the scan must stay.
//!   Chosen for speed: `docs/benchmarks-notebook.md`, "Third round: the JSON parser".
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
//! The files, one concern each:
//!
//! - `scan.rs`: the grammar core every inbound reading runs on ([`scan_frame`],
//!   the `Sink` it feeds, [`repair_lone_surrogates`]);
//! - `parse.rs`: the sink that builds a whole [`Value`](serde_json::Value)
//!   ([`parse_value`]) and the string and number decoding every builder shares;
//! - `envelope.rs`: the sink that builds only what classification reads
//!   (`parse_envelope`), and of a `result` object only the members its caller
//!   selects;
//! - `select.rs`: that selection, names given as data by the caller
//!   ([`MemberSelection`]), and the values it keeps, by position
//!   ([`SelectedMembers`]); no name here means anything to this module;
//! - `outbound.rs`: bounds on what we send ([`encoded_len_exceeds`],
//!   [`LimitedWriter`]);
//! - `walk.rs`: iterative walks over a built value ([`value_depth`],
//!   [`drop_value`]).
//!
//! The module is crate-private; the example reaches it through the doc-hidden
//! `fuzzing` module, as the fuzz targets do.
//!
//! ```
//! use smthrs_mcp::fuzzing::{parse_value, scan_frame};
//!
//! let frame = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
//! let scan = scan_frame(frame);
//! assert!(scan.valid_json && scan.top_level_object && scan.has_jsonrpc_key);
//! assert_eq!(scan.max_depth, 3);
//! let value = parse_value(frame).unwrap();
//! assert_eq!(value["id"], 1);
//! ```
//!
//! [`MAX_JSON_DEPTH`]: crate::limits::MAX_JSON_DEPTH

mod envelope;
mod outbound;
mod parse;
mod scan;
mod select;
mod walk;

pub(crate) use envelope::{Envelope, EnvelopeMembers, parse_envelope};
pub use outbound::{LimitedWriter, encoded_len_exceeds};
pub use parse::parse_value;
#[cfg_attr(not(test), allow(unused_imports))]
pub use scan::repair_lone_surrogates;
pub use scan::scan_frame;
pub use select::{MAX_SELECTED_MEMBERS, MemberSelection, SelectedMembers};
pub use walk::{drop_value, value_depth};

#[cfg(test)]
mod tests;
