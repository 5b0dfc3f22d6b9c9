//! The frontmatter check of a `SKILL.md` (the Skills extension §Frontmatter Verification):
//! cut the YAML out of the file, parse it with a bounded YAML 1.2 core-schema
//! parser, and compare it field by field with the entry's `frontmatter`.
//!
//! **Cutting.** The raw bytes (already size- and digest-checked) must be UTF-8.
//! A leading BOM is stripped and CRLF read as LF. The first line must be `---`
//! (trailing spaces and tabs allowed, as after a YAML document marker), and the
//! frontmatter runs to the next such line. At most `maxSkillFrontmatterBytes`
//! bytes of YAML (counted with LF line ends) are read: the closing line is not
//! looked for past them.
//!
//! **Parsing.** [`saphyr_parser`] produces the events; this module builds the
//! value from them and refuses, before anything is built:
//! - anchors, aliases and tags (`!!str` included): nothing in a frontmatter needs
//!   them, and aliases are how a small YAML becomes a large value;
//! - a merge key `<<`, in any style (YAML 1.1 merges would change the value under
//!   another parser);
//! - a second document, or an explicit `---` inside the frontmatter;
//! - a root that is not a mapping; a mapping key that is not a string under the
//!   core schema (a complex key, or a plain `1`, `true`, `null`); a repeated key;
//! - nesting deeper than [`MAX_SKILL_FRONTMATTER_DEPTH`] (the root mapping is
//!   depth 1), checked as each collection opens;
//! - `.inf`, `.nan` and numbers past the `f64` range, which no JSON value can
//!   equal.
//!
//! Plain scalars resolve by the YAML 1.2 core schema (§10.3.2): `null`, `Null`,
//! `NULL`, `~` and the empty scalar are null; `true`/`True`/`TRUE` and the
//! `false` forms are booleans; `[-+]?[0-9]+`, `0o[0-7]+` and `0x[0-9a-fA-F]+` are
//! integers; `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?` is a float;
//! anything else is a string (`yes`, `on`, `1_000` and `2024-01-01` included).
//! Quoted and block scalars are always strings.
//!
//! **Comparing.** Every key both ways, objects in any order, arrays in order,
//! strings byte for byte, numbers by value (`1` equals `1.0`; an integer beyond
//! 64 bits is compared as the nearest float, as the JSON parser reads it), and no
//! coercion across types (`"1.0"` is not `1.0`, `"true"` is not `true`).
//!
//! Messages name the rule broken, never a key or a value: they are
//! server-authored.
//!
//! Why `saphyr-parser`: it is the maintained successor of `yaml-rust2` by the
//! same maintainers, a YAML 1.2 parser that passes the YAML test suite, pure
//! Rust with no `unsafe`-heavy C binding, and it exposes the event stream with
//! each node's anchor and tag, so the refusals above happen before any value is
//! built. Its dependencies (`arraydeque`, `thiserror`) are small. `serde_yaml`
//! is unmaintained, and loaders that build a document first (`saphyr`,
//! `yaml-rust2`'s `YamlLoader`) would expand aliases before we could refuse them.

use std::borrow::Cow;

use saphyr_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};

/// The deepest nesting a frontmatter may have, the root mapping being depth 1
/// (beyond-tools.md §5.4).
pub const MAX_SKILL_FRONTMATTER_DEPTH: usize = 16;

/// Cuts the frontmatter YAML out of a `SKILL.md`'s raw bytes and parses it: the
/// root mapping as a JSON object, or the rule broken.
pub(crate) fn parse_skill_md(
    raw: &[u8],
    max_bytes: usize,
) -> Result<Map<String, Value>, Cow<'static, str>> {
    let yaml = cut(raw, max_bytes)?;
    parse_yaml(&yaml)
}

/// The YAML between the first two `---` lines, LF line ends.
pub(crate) fn cut(raw: &[u8], max_bytes: usize) -> Result<String, Cow<'static, str>> {
    let text = std::str::from_utf8(raw).map_err(|_| "SKILL.md is not UTF-8")?;
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut lines = text
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line));
    if !lines.next().is_some_and(is_marker) {
        return Err("SKILL.md does not begin with a --- line".into());
    }
    let mut yaml = String::new();
    for line in lines {
        if is_marker(line) {
            return Ok(yaml);
        }
        if yaml.len() + line.len() + 1 > max_bytes {
            return Err(format!(
                "the frontmatter is longer than {max_bytes} bytes (maxSkillFrontmatterBytes)"
            )
            .into());
        }
        yaml.push_str(line);
        yaml.push('\n');
    }
    Err("the frontmatter has no closing --- line".into())
}

/// `---` with only spaces or tabs after it.
fn is_marker(line: &str) -> bool {
    line.strip_prefix("---")
        .is_some_and(|rest| rest.bytes().all(|b| b == b' ' || b == b'\t'))
}

/// An open collection while the value is built.
enum Open {
    Mapping {
        map: Map<String, Value>,
        /// The key read, waiting for its value.
        key: Option<String>,
    },
    Sequence(Vec<Value>),
}

/// Parses one YAML document whose root is a mapping, under the rules of the
/// module docs.
pub(crate) fn parse_yaml(yaml: &str) -> Result<Map<String, Value>, Cow<'static, str>> {
    let mut parser = Parser::new_from_str(yaml);
    let mut stack: Vec<Open> = Vec::new();
    let mut root: Option<Map<String, Value>> = None;
    let mut documents = 0usize;
    loop {
        let event = match parser.next_event() {
            None => break,
            Some(Ok((event, _span))) => event,
            // The scanner's message quotes nothing, but it is not ours to show.
            Some(Err(_)) => return Err("the frontmatter is not well-formed YAML".into()),
        };
        let value = match event {
            Event::StreamStart | Event::Nothing | Event::DocumentEnd => continue,
            Event::StreamEnd => break,
            Event::DocumentStart(explicit) => {
                documents += 1;
                if explicit || documents > 1 {
                    return Err("the frontmatter holds more than one YAML document".into());
                }
                continue;
            }
            Event::Alias(_) => return Err("the frontmatter uses a YAML alias".into()),
            Event::Scalar(text, style, anchor, tag) => {
                refuse_properties(anchor, tag.is_some())?;
                let key_expected = matches!(stack.last(), Some(Open::Mapping { key: None, .. }));
                if key_expected {
                    let key = scalar_key(&text, style)?;
                    let Some(Open::Mapping { map, key: slot }) = stack.last_mut() else {
                        unreachable!("a key is read inside a mapping");
                    };
                    if map.contains_key(&key) {
                        return Err("the frontmatter repeats a mapping key".into());
                    }
                    *slot = Some(key);
                    continue;
                }
                if stack.is_empty() {
                    return Err("the frontmatter is not a YAML mapping".into());
                }
                scalar_value(&text, style)?
            }
            Event::MappingStart(anchor, ref tag) | Event::SequenceStart(anchor, ref tag) => {
                refuse_properties(anchor, tag.is_some())?;
                if matches!(stack.last(), Some(Open::Mapping { key: None, .. })) {
                    return Err("the frontmatter has a mapping key that is not a string".into());
                }
                if stack.len() >= MAX_SKILL_FRONTMATTER_DEPTH {
                    return Err(format!(
                        "the frontmatter nests deeper than {MAX_SKILL_FRONTMATTER_DEPTH}"
                    )
                    .into());
                }
                let opens_mapping = matches!(event, Event::MappingStart(..));
                if stack.is_empty() && !opens_mapping {
                    return Err("the frontmatter is not a YAML mapping".into());
                }
                stack.push(if opens_mapping {
                    Open::Mapping {
                        map: Map::new(),
                        key: None,
                    }
                } else {
                    Open::Sequence(Vec::new())
                });
                continue;
            }
            Event::MappingEnd | Event::SequenceEnd => match stack.pop() {
                Some(Open::Mapping { map, .. }) => {
                    if stack.is_empty() {
                        root = Some(map);
                        continue;
                    }
                    Value::Object(map)
                }
                Some(Open::Sequence(items)) => Value::Array(items),
                None => return Err("the frontmatter is not well-formed YAML".into()),
            },
        };
        match stack.last_mut() {
            Some(Open::Mapping { map, key }) => {
                let Some(key) = key.take() else {
                    unreachable!("a value follows its key");
                };
                map.insert(key, value);
            }
            Some(Open::Sequence(items)) => items.push(value),
            None => unreachable!("values are read inside the root mapping"),
        }
    }
    root.ok_or_else(|| "the frontmatter is not a YAML mapping".into())
}

fn refuse_properties(anchor: usize, tagged: bool) -> Result<(), Cow<'static, str>> {
    if anchor != 0 {
        return Err("the frontmatter uses a YAML anchor".into());
    }
    if tagged {
        return Err("the frontmatter uses a YAML tag".into());
    }
    Ok(())
}

fn scalar_key(text: &str, style: ScalarStyle) -> Result<String, Cow<'static, str>> {
    if text == "<<" {
        return Err("the frontmatter uses a YAML merge key (<<)".into());
    }
    match scalar_value(text, style)? {
        Value::String(key) => Ok(key),
        _ => Err("the frontmatter has a mapping key that is not a string".into()),
    }
}

/// A scalar under the core schema: only plain scalars resolve to other types.
fn scalar_value(text: &str, style: ScalarStyle) -> Result<Value, Cow<'static, str>> {
    if style != ScalarStyle::Plain {
        return Ok(Value::String(text.to_owned()));
    }
    Ok(match text {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => return Err(UNREPRESENTABLE.into()),
        _ => match core_number(text) {
            None => Value::String(text.to_owned()),
            Some(Some(number)) => Value::Number(number),
            Some(None) => return Err(UNREPRESENTABLE.into()),
        },
    })
}

const UNREPRESENTABLE: &str =
    "the frontmatter holds a number JSON cannot carry (.inf, .nan, or past the float range)";

/// A core-schema integer or float, as the JSON parser would hold it: `u64`,
/// else `i64`, else `f64`. `None` for a string; `Some(None)` for a number no
/// JSON value equals (past the `f64` range).
fn core_number(text: &str) -> Option<Option<Number>> {
    if let Some(digits) = text.strip_prefix("0o") {
        return radix_number(digits, 8);
    }
    if let Some(digits) = text.strip_prefix("0x") {
        return radix_number(digits, 16);
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        let plain = text.strip_prefix('+').unwrap_or(text);
        if let Ok(n) = plain.parse::<u64>() {
            return Some(Some(Number::from(n)));
        }
        if let Ok(n) = plain.parse::<i64>() {
            return Some(Some(Number::from(n)));
        }
        return Some(plain.parse::<f64>().ok().and_then(Number::from_f64));
    }
    if is_core_float(unsigned) {
        return Some(text.parse::<f64>().ok().and_then(Number::from_f64));
    }
    None
}

/// `0o` / `0x` digits (the core schema has no sign for these).
fn radix_number(digits: &str, radix: u32) -> Option<Option<Number>> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    if let Ok(n) = u64::from_str_radix(digits, radix) {
        return Some(Some(Number::from(n)));
    }
    let mut value = 0f64;
    for c in digits.chars() {
        value = value * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0));
    }
    Some(Number::from_f64(value))
}

/// `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, the sign already taken off.
fn is_core_float(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => digits(fraction),
        Some((whole, fraction)) => digits(whole) && (fraction.is_empty() || digits(fraction)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// Compares the entry's `frontmatter` with the one parsed from `SKILL.md`; the
/// error is the rule broken.
pub(crate) fn compare(
    entry: &Map<String, Value>,
    parsed: &Map<String, Value>,
) -> Result<(), &'static str> {
    // Iterative, so a deep value costs no stack (both sides are depth-bounded
    // anyway).
    let mut pending: Vec<(&Value, &Value)> = Vec::new();
    compare_maps(entry, parsed, &mut pending)?;
    while let Some((a, b)) = pending.pop() {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => compare_maps(a, b, &mut pending)?,
            (Value::Array(a), Value::Array(b)) => {
                if a.len() != b.len() {
                    return Err(
                        "SKILL.md's frontmatter has a list of another length than the entry's",
                    );
                }
                pending.extend(a.iter().zip(b));
            }
            (Value::Number(a), Value::Number(b)) => {
                if !same_number(a, b) {
                    return Err(
                        "SKILL.md's frontmatter has a number that differs from the entry's",
                    );
                }
            }
            (a, b) if std::mem::discriminant(a) != std::mem::discriminant(b) => {
                return Err("SKILL.md's frontmatter has a value of another type than the entry's");
            }
            (a, b) => {
                if a != b {
                    return Err("SKILL.md's frontmatter has a value that differs from the entry's");
                }
            }
        }
    }
    Ok(())
}

fn compare_maps<'a>(
    entry: &'a Map<String, Value>,
    parsed: &'a Map<String, Value>,
    pending: &mut Vec<(&'a Value, &'a Value)>,
) -> Result<(), &'static str> {
    for (key, value) in entry {
        let Some(other) = parsed.get(key) else {
            return Err("SKILL.md's frontmatter lacks a key the entry's has");
        };
        pending.push((value, other));
    }
    if parsed.keys().any(|key| !entry.contains_key(key)) {
        return Err("SKILL.md's frontmatter has a key the entry's lacks");
    }
    Ok(())
}

/// Numbers by value: integers exactly, a float and an integer when the float is
/// that integer exactly, floats by `==`.
fn same_number(a: &Number, b: &Number) -> bool {
    fn integer(n: &Number) -> Option<i128> {
        n.as_u64()
            .map(i128::from)
            .or_else(|| n.as_i64().map(i128::from))
    }
    match (integer(a), integer(b)) {
        (Some(x), Some(y)) => x == y,
        (Some(x), None) => float_is_integer(b.as_f64(), x),
        (None, Some(y)) => float_is_integer(a.as_f64(), y),
        (None, None) => a.as_f64() == b.as_f64(),
    }
}

fn float_is_integer(float: Option<f64>, integer: i128) -> bool {
    float.is_some_and(|f| {
        // `as` saturates; the round trip proves the conversion was exact.
        f.fract() == 0.0 && f as i128 == integer && integer as f64 == f
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(yaml: &str) -> Result<Value, Cow<'static, str>> {
        parse_yaml(yaml).map(Value::Object)
    }

    fn refused(yaml: &str) -> String {
        parse_yaml(yaml).unwrap_err().into_owned()
    }

    #[test]
    fn cut_strips_the_bom_reads_crlf_as_lf_and_needs_both_markers() {
        let doc = b"\xEF\xBB\xBF---\r\nname: a\r\ndescription: b\r\n---\r\nbody\r\n";
        assert_eq!(cut(doc, 1024).unwrap(), "name: a\ndescription: b\n");
        assert_eq!(
            cut(b"--- \t\nname: a\n---  \nbody", 1024).unwrap(),
            "name: a\n"
        );
        assert_eq!(cut(b"---\n---\n", 1024).unwrap(), "");
        for (bad, rule) in [
            (
                &b"name: a\n---\n"[..],
                "SKILL.md does not begin with a --- line",
            ),
            (
                b"\n---\nname: a\n---\n",
                "SKILL.md does not begin with a --- line",
            ),
            (
                b"----\nname: a\n---\n",
                "SKILL.md does not begin with a --- line",
            ),
            (
                b"---x\nname: a\n---\n",
                "SKILL.md does not begin with a --- line",
            ),
            (b"---\nname: a\n", "the frontmatter has no closing --- line"),
            (
                b"---\nname: a\n--- x\n",
                "the frontmatter has no closing --- line",
            ),
            (b"---\n\xFF\n---\n", "SKILL.md is not UTF-8"),
            (
                b"\xEF\xBB\xBF\xEF\xBB\xBF---\n---\n",
                "SKILL.md does not begin with a --- line",
            ),
        ] {
            assert_eq!(cut(bad, 1024).unwrap_err(), rule, "{bad:?}");
        }
        // A lone CR is not a line end.
        assert_eq!(
            cut(b"---\ra: b\n---\n", 1024).unwrap_err(),
            "SKILL.md does not begin with a --- line"
        );
    }

    #[test]
    fn cut_reads_at_most_the_byte_bound() {
        let yaml = "description: xxxxxxxx\n"; // 22 bytes
        let doc = format!("---\n{yaml}---\n");
        assert_eq!(cut(doc.as_bytes(), 22).unwrap(), yaml);
        assert_eq!(
            cut(doc.as_bytes(), 21).unwrap_err(),
            "the frontmatter is longer than 21 bytes (maxSkillFrontmatterBytes)"
        );
        // CRLF counts as LF.
        let crlf = format!("---\r\n{}\r\n---\r\n", yaml.trim_end());
        assert_eq!(cut(crlf.as_bytes(), 22).unwrap(), yaml);
    }

    #[test]
    fn the_core_schema_resolves_plain_scalars_only() {
        let value = parsed(
            "a: yes\nb: no\nc: on\nd: true\ne: False\nf: ~\ng:\nh: null\ni: 12\nj: -7\nk: +3\n\
             l: 0o17\nm: 0x1F\nn: 1.5\no: .5\np: 1e3\nq: 1_000\nr: 2024-01-01\ns: '12'\nt: \"true\"\n\
             u: |\n  12\nv: 0x\nw: 1.2.3\nx: -0x1\ny: 18446744073709551616\nz: 5.\n",
        )
        .unwrap();
        assert_eq!(
            value,
            json!({
                "a": "yes", "b": "no", "c": "on", "d": true, "e": false, "f": null, "g": null,
                "h": null, "i": 12, "j": -7, "k": 3, "l": 15, "m": 31, "n": 1.5, "o": 0.5,
                "p": 1000.0, "q": "1_000", "r": "2024-01-01", "s": "12", "t": "true", "u": "12\n",
                "v": "0x", "w": "1.2.3", "x": "-0x1", "y": 18446744073709551616.0, "z": 5.0
            })
        );
        for yaml in [
            "a: .inf\n",
            "a: [-.Inf]\n",
            "a: {b: .NaN}\n",
            "a: 1e400\n",
            "a: -1e309\n",
            &format!("a: {}\n", "9".repeat(400)),
            &format!("a: 0x{}\n", "f".repeat(300)),
        ] {
            assert_eq!(refused(yaml), UNREPRESENTABLE, "{yaml}");
        }
        assert_eq!(parsed("a: 1e-400\n").unwrap(), json!({"a": 0.0}));
        assert_eq!(
            parsed("a: 0x10000000000000000\n").unwrap(),
            json!({"a": 18446744073709551616.0})
        );
        assert_eq!(parsed("a: '.inf'\n").unwrap(), json!({"a": ".inf"}));
    }

    #[test]
    fn anchors_aliases_tags_and_merge_keys_are_refused() {
        for (yaml, rule) in [
            ("a: &x 1\nb: *x\n", "the frontmatter uses a YAML anchor"),
            ("a: &x [1]\n", "the frontmatter uses a YAML anchor"),
            ("a: !!str 1\n", "the frontmatter uses a YAML tag"),
            ("a: !custom {b: 1}\n", "the frontmatter uses a YAML tag"),
            ("!!map {a: 1}\n", "the frontmatter uses a YAML tag"),
            ("a: *x\n", "the frontmatter is not well-formed YAML"),
            (
                "base: {a: 1}\nderived:\n  <<: {a: 2}\n",
                "the frontmatter uses a YAML merge key (<<)",
            ),
            ("'<<': 1\n", "the frontmatter uses a YAML merge key (<<)"),
        ] {
            assert_eq!(refused(yaml), rule, "{yaml}");
        }
    }

    #[test]
    fn one_document_whose_root_is_a_mapping_with_string_keys() {
        for (yaml, rule) in [
            ("", "the frontmatter is not a YAML mapping"),
            (
                "# only a comment\n",
                "the frontmatter is not a YAML mapping",
            ),
            ("just text\n", "the frontmatter is not a YAML mapping"),
            ("- a\n- b\n", "the frontmatter is not a YAML mapping"),
            (
                "a: 1\n...\nb: 2\n",
                "the frontmatter holds more than one YAML document",
            ),
            (
                "--- \na: 1\n",
                "the frontmatter holds more than one YAML document",
            ),
            (
                "a: 1\n--- # x\nb: 2\n",
                "the frontmatter holds more than one YAML document",
            ),
            (
                "1: a\n",
                "the frontmatter has a mapping key that is not a string",
            ),
            (
                "true: a\n",
                "the frontmatter has a mapping key that is not a string",
            ),
            (
                "~: a\n",
                "the frontmatter has a mapping key that is not a string",
            ),
            (
                "? [a]\n: b\n",
                "the frontmatter has a mapping key that is not a string",
            ),
            (
                "{[a]: b}\n",
                "the frontmatter has a mapping key that is not a string",
            ),
            ("a: 1\na: 2\n", "the frontmatter repeats a mapping key"),
            (
                "a: {b: 1, 'b': 2}\n",
                "the frontmatter repeats a mapping key",
            ),
            ("a: [1\n", "the frontmatter is not well-formed YAML"),
            ("a: b: c\n", "the frontmatter is not well-formed YAML"),
        ] {
            assert_eq!(refused(yaml), rule, "{yaml:?}");
        }
        assert_eq!(
            parsed("'1': a\n\"true\": b\n").unwrap(),
            json!({"1": "a", "true": "b"})
        );
    }

    #[test]
    fn depth_sixteen_passes_and_seventeen_is_refused() {
        // The root mapping is depth 1; each `[` adds one.
        let nested =
            |depth: usize| format!("a: {}{}\n", "[".repeat(depth - 1), "]".repeat(depth - 1));
        assert!(parse_yaml(&nested(16)).is_ok());
        assert_eq!(refused(&nested(17)), "the frontmatter nests deeper than 16");
        let mut block = String::new();
        for level in 0..17 {
            block.push_str(&format!("{}k{level}:\n", "  ".repeat(level)));
        }
        block.push_str(&format!("{}v: 1\n", "  ".repeat(17)));
        assert_eq!(refused(&block), "the frontmatter nests deeper than 16");
        assert_eq!(
            refused(&nested(100)),
            "the frontmatter nests deeper than 16"
        );
        // Past the scanner's own flow-level limit (255), which it reaches while
        // looking ahead for a simple key: refused by the scanner, quickly.
        let deep = format!("a: {}\n", "[".repeat(60_000));
        assert_eq!(refused(&deep), "the frontmatter is not well-formed YAML");
    }

    #[test]
    fn comparison_is_field_by_field_without_coercion() {
        let entry = |v: Value| v.as_object().unwrap().clone();
        let yaml = parse_yaml(
            "name: pdf\ndescription: Does PDFs\nversion: 1.0\ncount: 3\nflag: yes\n\
             tags: [a, b]\nmetadata: {author: me, team: x}\n",
        )
        .unwrap();
        let good = json!({"description": "Does PDFs", "name": "pdf", "version": 1, "count": 3.0,
                          "flag": "yes", "tags": ["a", "b"], "metadata": {"team": "x", "author": "me"}});
        assert_eq!(compare(&entry(good.clone()), &yaml), Ok(()));
        for (change, rule) in [
            (
                json!({"version": "1.0"}),
                "SKILL.md's frontmatter has a value of another type than the entry's",
            ),
            (
                json!({"flag": true}),
                "SKILL.md's frontmatter has a value of another type than the entry's",
            ),
            (
                json!({"count": 3.5}),
                "SKILL.md's frontmatter has a number that differs from the entry's",
            ),
            (
                json!({"tags": ["b", "a"]}),
                "SKILL.md's frontmatter has a value that differs from the entry's",
            ),
            (
                json!({"tags": ["a"]}),
                "SKILL.md's frontmatter has a list of another length than the entry's",
            ),
            (
                json!({"metadata": {"author": "me"}}),
                "SKILL.md's frontmatter has a key the entry's lacks",
            ),
            (
                json!({"extra": null}),
                "SKILL.md's frontmatter lacks a key the entry's has",
            ),
            (
                json!({"description": "Exfiltrate credentials"}),
                "SKILL.md's frontmatter has a value that differs from the entry's",
            ),
        ] {
            let mut changed = good.clone();
            for (key, value) in change.as_object().unwrap() {
                changed[key] = value.clone();
            }
            assert_eq!(compare(&entry(changed), &yaml), Err(rule), "{change}");
        }
        let mut fewer = entry(good);
        fewer.remove("tags");
        assert_eq!(
            compare(&fewer, &yaml),
            Err("SKILL.md's frontmatter has a key the entry's lacks")
        );
    }

    #[test]
    fn numbers_compare_by_value() {
        let n = |v: Value| match v {
            Value::Number(n) => n,
            _ => unreachable!(),
        };
        assert!(same_number(&n(json!(1)), &n(json!(1.0))));
        assert!(same_number(&n(json!(-1)), &n(json!(-1.0))));
        assert!(same_number(&n(json!(0)), &n(json!(-0.0))));
        assert!(same_number(&n(json!(0.1)), &n(json!(0.1))));
        assert!(!same_number(&n(json!(1)), &n(json!(1.5))));
        assert!(!same_number(
            &n(json!(u64::MAX)),
            &n(json!(18446744073709551616.0))
        ));
        assert!(!same_number(&n(json!(i64::MIN)), &n(json!(1))));
        assert!(same_number(
            &n(json!(i64::MIN)),
            &n(json!(-9223372036854775808.0))
        ));
    }
}
