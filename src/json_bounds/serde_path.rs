//! MEASUREMENT ONLY (issue 16): the scan-then-serde_json reading of inbound frames,
//! selected with `SMTHRS_MCP_JSON_PARSER=serde`. [`scan_frame`] proves syntax and
//! depth first; serde_json then builds the values through our own visitors (so no
//! key has serde_json's `RawValue` meaning), on bytes with invalid UTF-8 and lone
//! surrogate escapes already replaced by U+FFFD.
//!
//! [`scan_frame`]: super::scan_frame

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::envelope::{Envelope, EnvelopeMembers, Member, ToolCallMembers, ToolMember};
use super::scan::{repair_lone_surrogates, scan_frame};
use crate::error::{Error, Result};
use crate::limits::MAX_JSON_DEPTH;

/// Whether the serde_json reading is selected (read once).
pub(super) fn selected() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("SMTHRS_MCP_JSON_PARSER").is_some_and(|v| v == "serde"))
}

/// What the scan decided, and the bytes serde_json may read.
enum Prepared<'a> {
    NotJson,
    TooDeep,
    Ready { bytes: Cow<'a, [u8]>, tagged: bool },
}

fn prepare(bytes: &[u8]) -> Prepared<'_> {
    let scan = scan_frame(bytes);
    if !scan.valid_json {
        return Prepared::NotJson;
    }
    if scan.max_depth > MAX_JSON_DEPTH {
        return Prepared::TooDeep;
    }
    // Non-ASCII bytes are only valid inside strings, and no replaced sequence can
    // span a quote or a backslash (ASCII), so one lossy pass over the frame equals
    // a lossy decode of each string.
    let mut owned: Cow<'_, [u8]> = if scan.valid_utf8 {
        Cow::Borrowed(bytes)
    } else {
        Cow::Owned(String::from_utf8_lossy(bytes).into_owned().into_bytes())
    };
    if scan.has_lone_surrogate
        && let Some(repaired) = repair_lone_surrogates(&owned)
    {
        owned = Cow::Owned(repaired);
    }
    Prepared::Ready {
        bytes: owned,
        tagged: scan.top_level_object && scan.has_jsonrpc_key,
    }
}

/// Runs a seed over scanned bytes. serde_json's own limit refuses the 128th
/// container (it allows 127) while the contract allows 128, so it is lifted: the
/// scan has proved at most [`MAX_JSON_DEPTH`] levels, so the recursion is bounded.
fn deserialize<'de, S: DeserializeSeed<'de>>(
    bytes: &'de [u8],
    seed: S,
) -> serde_json::Result<S::Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let value = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// [`super::parse_value`] through serde_json.
pub(super) fn parse_value(bytes: &[u8]) -> Result<Value> {
    match prepare(bytes) {
        Prepared::NotJson => Err(Error::protocol("inbound frame is not valid JSON")),
        Prepared::TooDeep => Err(Error::protocol(
            "inbound JSON nests more than 128 objects and arrays",
        )),
        // Syntax and depth are proven: only a number out of range fails here.
        Prepared::Ready { bytes, .. } => deserialize(&bytes, ValueSeed)
            .map_err(|_| Error::protocol("inbound JSON number out of range")),
    }
}

/// [`super::parse_envelope`] through serde_json.
pub(super) fn parse_envelope(
    bytes: &[u8],
    tool_call: &mut dyn FnMut(Option<&Value>) -> bool,
) -> Envelope {
    let bytes = match prepare(bytes) {
        Prepared::NotJson | Prepared::Ready { tagged: false, .. } => return Envelope::Noise,
        Prepared::TooDeep => return Envelope::Undecided,
        Prepared::Ready { bytes, .. } => bytes,
    };
    let mut read = EnvelopeRead {
        tool_call,
        ids: 0,
        ids_at_tool_choice: 0,
        members: EnvelopeMembers::default(),
    };
    if deserialize(&bytes, &mut read).is_err() {
        return Envelope::Undecided;
    }
    // The choice was made before the `id` that counts was read: it must hold for
    // that id.
    if read.members.tool_call_result.is_some()
        && read.ids != read.ids_at_tool_choice
        && !read
            .members
            .id
            .as_ref()
            .is_some_and(|id| (read.tool_call)(Some(id)))
    {
        return Envelope::Undecided;
    }
    Envelope::Members(read.members)
}

/// Builds a [`Value`] (no key has a special meaning).
#[derive(Clone, Copy)]
struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(ValueSeed)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(ValueSeed)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// Reads a value and keeps nothing, numbers still range-checked (serde_json's
/// `IgnoredAny` would not check them).
#[derive(Clone, Copy)]
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while map.next_key_seed(Skip)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
}

/// A key, classified without allocating.
struct KeySeed<F>(F);

impl<'de, T, F: FnOnce(&str) -> T> DeserializeSeed<'de> for KeySeed<F> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<T, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, T, F: FnOnce(&str) -> T> Visitor<'de> for KeySeed<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<T, E> {
        Ok((self.0)(v))
    }
}

/// What `jsonrpc` and `params` are checked for: the string `"2.0"`, a container,
/// or something else (read and dropped).
#[derive(PartialEq)]
enum Shape {
    Version2,
    Container,
    Other,
}

impl<'de> DeserializeSeed<'de> for Shape {
    type Value = Shape;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Shape, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shape {
    type Value = Shape;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Shape, E> {
        Ok(Shape::Other)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Shape, E> {
        Ok(Shape::Other)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Shape, E> {
        Ok(Shape::Other)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Shape, E> {
        Ok(Shape::Other)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Shape, E> {
        Ok(if v == "2.0" {
            Shape::Version2
        } else {
            Shape::Other
        })
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<Shape, E> {
        Ok(Shape::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<Shape, A::Error> {
        Skip.visit_seq(seq).map(|()| Shape::Container)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Shape, A::Error> {
        Skip.visit_map(map).map(|()| Shape::Container)
    }
}

/// The envelope: the members classification reads.
struct EnvelopeRead<'f> {
    tool_call: &'f mut dyn FnMut(Option<&Value>) -> bool,
    ids: usize,
    ids_at_tool_choice: usize,
    members: EnvelopeMembers,
}

impl<'de> DeserializeSeed<'de> for &mut EnvelopeRead<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for &mut EnvelopeRead<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        while let Some(member) =
            map.next_key_seed(KeySeed(|k: &str| Member::of_key(k.as_bytes())))?
        {
            let members = &mut self.members;
            match member {
                Member::Jsonrpc => {
                    members.jsonrpc_is_2_0 = map.next_value_seed(Shape::Other)? == Shape::Version2;
                }
                Member::Id => {
                    members.id = Some(map.next_value_seed(ValueSeed)?);
                    self.ids += 1;
                }
                Member::Method => members.method = Some(map.next_value_seed(ValueSeed)?),
                Member::Params => {
                    members.params_is_container =
                        Some(map.next_value_seed(Shape::Other)? == Shape::Container);
                }
                Member::Result => {
                    let id = members.id.as_ref();
                    let read = map.next_value_seed(ResultSeed {
                        tool_call: &mut *self.tool_call,
                        id,
                    })?;
                    match read {
                        ResultRead::Value(value) => {
                            members.result = Some(value);
                            members.tool_call_result = None;
                        }
                        ResultRead::Tool(tool) => {
                            members.tool_call_result = Some(tool);
                            members.result = None;
                            self.ids_at_tool_choice = self.ids;
                        }
                    }
                }
                Member::Error => members.error = Some(map.next_value_seed(ValueSeed)?),
                Member::Other => map.next_value_seed(Skip)?,
            }
        }
        Ok(())
    }
}

enum ResultRead {
    Value(Value),
    Tool(ToolCallMembers),
}

/// `result`: an object read as a `tools/call` result when `tool_call(id)` says so,
/// anything else built whole.
struct ResultSeed<'a, 'f> {
    tool_call: &'a mut (dyn FnMut(Option<&Value>) -> bool + 'f),
    id: Option<&'a Value>,
}

impl<'de> DeserializeSeed<'de> for ResultSeed<'_, '_> {
    type Value = ResultRead;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<ResultRead, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ResultSeed<'_, '_> {
    type Value = ResultRead;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<ResultRead, E> {
        ValueSeed.visit_bool(v).map(ResultRead::Value)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<ResultRead, E> {
        ValueSeed.visit_i64(v).map(ResultRead::Value)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<ResultRead, E> {
        ValueSeed.visit_u64(v).map(ResultRead::Value)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<ResultRead, E> {
        ValueSeed.visit_f64(v).map(ResultRead::Value)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<ResultRead, E> {
        ValueSeed.visit_str(v).map(ResultRead::Value)
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<ResultRead, E> {
        ValueSeed.visit_unit().map(ResultRead::Value)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<ResultRead, A::Error> {
        ValueSeed.visit_seq(seq).map(ResultRead::Value)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<ResultRead, A::Error> {
        if !(self.tool_call)(self.id) {
            return ValueSeed.visit_map(map).map(ResultRead::Value);
        }
        let mut members = ToolCallMembers::default();
        while let Some(member) =
            map.next_key_seed(KeySeed(|k: &str| ToolMember::of_key(k.as_bytes())))?
        {
            match members.slot(member) {
                Some(slot) => *slot = Some(map.next_value_seed(ValueSeed)?),
                None => map.next_value_seed(Skip)?,
            }
        }
        Ok(ResultRead::Tool(members))
    }
}
