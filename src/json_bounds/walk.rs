//! Iterative walks over a built [`Value`]: its depth ([`value_depth`]) and its drop
//! ([`drop_value`]), for values a caller hands us, which no scan has bounded.

use serde_json::Value;

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
