use std::io::{self, Write};

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::outbound::LIMIT_EXCEEDED_MESSAGE;
use super::*;
use crate::limits::MAX_JSON_DEPTH;

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
            Tree::Object(entries) => 1 + entries.iter().map(|(_, t)| t.depth()).max().unwrap_or(0),
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

// The selective read of a `result` object: names are the caller's data, and what
// it keeps equals, name by name, what a whole parse builds.

/// Names a selection may hold: three of one length, two with the same ends (one
/// fingerprint), keys that need escapes, one outside the BMP, U+FFFD (what a
/// lone surrogate key decodes to), and two of 64 bytes or more (they share a
/// length bit).
const NAME_POOL: &[&str] = &[
    "content",
    "contenx",
    "isError",
    "cat",
    "cut",
    "",
    "x",
    "\u{e9}",
    "\u{fffd}",
    "a\"b\\c",
    "\u{1f600}",
    "a member name that is longer than sixty-three bytes, to share a length bit",
    "another member name longer than sixty-three bytes, of a different length",
];

/// Keys of the result object: the names, and others close to them.
fn arb_result_key() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(NAME_POOL).prop_map(str::to_owned),
        prop::sample::select(vec![
            "other", "conten", "contents", "isErrors", "\u{1}", "X", "_meta", "cot",
        ])
        .prop_map(str::to_owned),
    ]
}

/// A key as JSON: plain, or every character as a `\u` escape (UTF-16 pairs).
fn spell_key(key: &str, escaped: bool) -> String {
    if !escaped {
        return serde_json::to_string(key).unwrap();
    }
    let mut out = String::from("\"");
    for unit in key.encode_utf16() {
        out.push_str(&format!("\\u{unit:04x}"));
    }
    out.push('"');
    out
}

/// A selection of distinct names from the pool, in any order (leaked: a selection
/// is `'static`, as every caller's is).
fn arb_selection() -> impl Strategy<Value = &'static MemberSelection> {
    prop::sample::subsequence(NAME_POOL.to_vec(), 0..=MAX_SELECTED_MEMBERS)
        .prop_shuffle()
        .prop_map(|names| &*Box::leak(Box::new(MemberSelection::new(names.leak()))))
}

/// A frame whose `result` is an object of the given members (duplicates kept),
/// with `id` before or after it.
fn selection_frame(members: &[(String, bool, Value)], id_first: bool) -> String {
    let members: Vec<String> = members
        .iter()
        .map(|(key, escaped, value)| format!("{}:{value}", spell_key(key, *escaped)))
        .collect();
    let result = format!("{{{}}}", members.join(","));
    if id_first {
        format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{result}}}")
    } else {
        format!("{{\"result\":{result},\"jsonrpc\":\"2.0\",\"id\":1}}")
    }
}

/// Reads `frame` selecting `selection` for every id: its selected members.
fn read_selected(frame: &str, selection: &'static MemberSelection) -> SelectedMembers {
    match parse_envelope(frame.as_bytes(), &mut |_| Some(selection)) {
        Envelope::Members(members) => {
            assert_eq!(members.result, None, "{frame}");
            members
                .selected
                .expect("an object result is read selectively")
        }
        other => panic!("{frame}: {other:?}"),
    }
}

/// The selected members equal those of the whole result, found by name.
fn selected_as_whole(frame: &str, selected: &SelectedMembers, selection: &'static MemberSelection) {
    let Ok(Value::Object(mut whole)) = parse_value(frame.as_bytes()) else {
        panic!("{frame}: not an object")
    };
    let Some(Value::Object(result)) = whole.remove("result") else {
        panic!("{frame}: no object result")
    };
    assert!(selected.is(selection));
    for (index, name) in selection.names().iter().enumerate() {
        assert_eq!(selected.get(index), result.get(*name), "{frame}: {name:?}");
    }
    assert_eq!(selected, &selection.select(result), "{frame}");
}

#[test]
fn selected_members_equal_the_whole_result() {
    static SELECTION: MemberSelection = MemberSelection::new(&["content", "\u{fffd}", "isError"]);
    let nest = |n: usize| format!("{}1{}", "[".repeat(n), "]".repeat(n));
    for frame in [
        // A lone surrogate in a key (it names U+FFFD) and in a value.
        r#"{"jsonrpc":"2.0","id":1,"result":{"\ud800":"\udc00x","content":"\ud83d\ude00"}}"#
            .to_owned(),
        // Escaped keys, the last of a member given twice, a non-selected
        // container between selected ones.
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":1,"c\u006fntent":[{"a":{}}],"x":{"content":2},"isError":false,"isError":null}}"#
            .to_owned(),
        // Exactly 128 containers: the envelope, the result, 126 arrays.
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":{}}}}}"#, nest(126)),
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"other":{}}}}}"#, nest(126)),
    ] {
        let selected = read_selected(&frame, &SELECTION);
        selected_as_whole(&frame, &selected, &SELECTION);
    }
    let selected = read_selected(
        r#"{"jsonrpc":"2.0","id":1,"result":{"\ud800":"\udc00x"}}"#,
        &SELECTION,
    );
    assert_eq!(selected.get(1), Some(&json!("\u{fffd}x")));
    // 129 containers, selected or not: refused by the one pass, as by the whole parse.
    for member in ["content", "other"] {
        let frame = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"{member}":{}}}}}"#,
            nest(127)
        );
        assert!(matches!(
            parse_envelope(frame.as_bytes(), &mut |_| Some(&SELECTION)),
            Envelope::Undecided
        ));
        assert!(parse_value(frame.as_bytes()).is_err());
    }
}

#[test]
fn a_selection_is_at_most_eight_distinct_names() {
    assert_eq!(MAX_SELECTED_MEMBERS, 8);
    let eight = MemberSelection::new(&["a", "b", "c", "d", "e", "f", "g", "h"]);
    assert_eq!(eight.names().len(), 8);
    let nine = std::panic::catch_unwind(|| {
        MemberSelection::new(&["a", "b", "c", "d", "e", "f", "g", "h", "i"])
    });
    assert!(nine.is_err());
    assert!(std::panic::catch_unwind(|| MemberSelection::new(&["a", "b", "a"])).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever the names and however the keys are spelled, the selective read
    /// keeps exactly what the whole parse has under those names.
    #[test]
    fn selected_members_equal_the_whole_result_by_name(
        selection in arb_selection(),
        members in prop::collection::vec(
            (arb_result_key(), any::<bool>(), arb_value()),
            0..10,
        ),
        id_first in any::<bool>(),
    ) {
        let frame = selection_frame(&members, id_first);
        let selected = read_selected(&frame, selection);
        selected_as_whole(&frame, &selected, selection);
        // Not selected: the whole result, as the whole parse builds it.
        let Envelope::Members(plain) = parse_envelope(frame.as_bytes(), &mut |_| None) else {
            panic!("{frame}")
        };
        prop_assert!(plain.selected.is_none());
        prop_assert_eq!(plain.result, parse_value(frame.as_bytes()).unwrap().get("result").cloned());
    }
}
