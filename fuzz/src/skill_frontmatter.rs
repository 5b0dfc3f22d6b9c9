//! The frontmatter of a `SKILL.md` (`skills::frontmatter`): the cut between the
//! `---` lines and the bounded YAML 1.2 core-schema parser.
//!
//! Input: one byte choosing `maxSkillFrontmatterBytes` (`16 * (1 + byte)`, so
//! 16..=4096), then the raw bytes of a `SKILL.md`. Properties:
//!
//! - never a panic;
//! - an accepted frontmatter is a mapping whose YAML is at most the bound, no
//!   deeper than 16 (the root mapping is 1), without a `<<` key, and equal to
//!   itself under the comparison;
//! - on a subset an independent model reads (lines of `key: words`, lowercase
//!   ASCII only), the parser agrees with the model: the same mapping, or a
//!   refusal exactly when a key repeats;
//! - JSON is YAML 1.2: the accepted mapping, written as one line of JSON
//!   (non-ASCII escaped) between `---` lines, parses back to an equal mapping
//!   (compared both ways);
//! - a refusal's message is one of the crate's own sentences, never input.

use serde_json::{Map, Value};
use smthrs_mcp::fuzzing::{skill_frontmatter, skill_frontmatter_compare, value_depth};

/// The sentences a refusal may start with.
const MESSAGES: &[&str] = &[
    "SKILL.md is not UTF-8",
    "SKILL.md does not begin with a --- line",
    "the frontmatter has no closing --- line",
    "the frontmatter is longer than ",
    "the frontmatter is not well-formed YAML",
    "the frontmatter holds more than one YAML document",
    "the frontmatter uses a YAML alias",
    "the frontmatter uses a YAML anchor",
    "the frontmatter uses a YAML tag",
    "the frontmatter uses a YAML merge key (<<)",
    "the frontmatter is not a YAML mapping",
    "the frontmatter has a mapping key that is not a string",
    "the frontmatter repeats a mapping key",
    "the frontmatter nests deeper than 16",
    "the frontmatter holds a number JSON cannot carry",
];

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    let Some((&first, raw)) = data.split_first() else {
        return;
    };
    let max = 16 * (1 + usize::from(first));
    match skill_frontmatter(raw, max) {
        Ok((yaml, map)) => {
            assert!(yaml.len() <= max, "{} bytes of YAML past {max}", yaml.len());
            assert!(value_depth(&Value::Object(map.clone())) <= 16);
            assert!(!has_merge_key(&map));
            assert_eq!(skill_frontmatter_compare(&map, &map), Ok(()));
            if let Some(expected) = model(&yaml) {
                assert_eq!(
                    Some(&map),
                    expected.as_ref(),
                    "the model disagrees on {yaml:?}"
                );
            }
            round_trip(&map);
        }
        Err(rule) => {
            assert!(
                MESSAGES.iter().any(|m| rule.starts_with(m)),
                "unknown message {rule:?}"
            );
            if let Some(expected) = std::str::from_utf8(raw).ok().and_then(|text| {
                let yaml = text.strip_prefix("---\n")?.split_once("\n---\n")?.0;
                (yaml.len() < max).then(|| model(&format!("{yaml}\n")))?
            }) {
                assert_eq!(expected, None, "refused ({rule}) what the model reads");
            }
        }
    }
}

fn has_merge_key(map: &Map<String, Value>) -> bool {
    let mut pending: Vec<&Value> = map.values().collect();
    if map.contains_key("<<") {
        return true;
    }
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(map) => {
                if map.contains_key("<<") {
                    return true;
                }
                pending.extend(map.values());
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    false
}

/// The independent model: `None` when the YAML is outside its subset (every
/// line `key:` or `key: words`, keys and words of `a`..=`z`, words separated by
/// one space); otherwise `Some(Some(map))`, or `Some(None)` for a repeated key.
fn model(yaml: &str) -> Option<Option<Map<String, Value>>> {
    let body = yaml.strip_suffix('\n')?;
    if body.is_empty() {
        return None;
    }
    let lower = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase());
    let mut map = Map::new();
    let mut repeated = false;
    for line in body.split('\n') {
        let (key, value) = line.split_once(':')?;
        // Keys the core schema reads as something else than a string are
        // outside the subset.
        if !lower(key) || matches!(key, "null" | "true" | "false") {
            return None;
        }
        let value = match value {
            "" => Value::Null,
            _ => {
                let words = value.strip_prefix(' ')?;
                if !words.split(' ').all(lower) {
                    return None;
                }
                match words {
                    "null" => Value::Null,
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ => Value::String(words.to_owned()),
                }
            }
        };
        if map.insert(key.to_owned(), value).is_some() {
            repeated = true;
        }
    }
    Some((!repeated).then_some(map))
}

/// JSON (compact, non-ASCII and DEL escaped) is YAML 1.2: it parses back to the
/// same mapping.
fn round_trip(map: &Map<String, Value>) {
    if map
        .keys()
        .chain(nested_keys(map).iter().copied())
        .any(|k| k.len() > 100)
    {
        return; // YAML caps an implicit key at 1024 characters
    }
    let json = serde_json::to_string(map).unwrap();
    let mut ascii = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '\u{7F}' => ascii.push_str("\\u007F"),
            c if c.is_ascii() => ascii.push(c),
            c if u32::from(c) > 0xFFFF => ascii.push_str(&format!("\\U{:08X}", u32::from(c))),
            c => ascii.push_str(&format!("\\u{:04X}", u32::from(c))),
        }
    }
    let doc = format!("---\n{ascii}\n---\n");
    let (_, again) = skill_frontmatter(doc.as_bytes(), doc.len())
        .unwrap_or_else(|rule| panic!("its own JSON is refused ({rule}): {ascii}"));
    assert_eq!(skill_frontmatter_compare(map, &again), Ok(()), "{ascii}");
    assert_eq!(skill_frontmatter_compare(&again, map), Ok(()), "{ascii}");
}

fn nested_keys(map: &Map<String, Value>) -> Vec<&String> {
    let mut keys = Vec::new();
    let mut pending: Vec<&Value> = map.values().collect();
    while let Some(value) = pending.pop() {
        match value {
            Value::Object(map) => {
                keys.extend(map.keys());
                pending.extend(map.values());
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    keys
}
