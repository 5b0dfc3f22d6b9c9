//! The server-file decoder (`config::decode_server_file`, what `--mcp-config`
//! reads).
//!
//! Input: the file's text (non-UTF-8 input is skipped: the loader refuses it before
//! decoding). Properties:
//!
//! - never a panic;
//! - a decoded file is a JSON array whose entries have unique, non-empty server
//!   names, one entry per element, stdio or HTTP as the element says;
//! - neither an error (`Display`, `Debug`, and the `crate::Error` it converts into)
//!   nor a decoded entry's `Debug` contains a secret: an `env` value, or a URL's
//!   user, password, query or fragment. (A secret is only checked when it is at
//!   least 6 bytes, carries a character crate messages never use, and is not also
//!   part of text the decoder may echo: a key, a server name, a command, ...)

use serde_json::Value;
use smthrs_mcp::config::{EntryTransport, decode_server_file};

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let result = decode_server_file(text);
    let parsed = serde_json::from_str::<Value>(text).ok();
    let (secrets, allowed) = parsed.as_ref().map(classify_strings).unwrap_or_default();

    let mut outputs = Vec::new();
    match &result {
        Ok(entries) => {
            let Some(Value::Array(items)) = &parsed else {
                panic!("decoded something that is not a JSON array")
            };
            assert_eq!(entries.len(), items.len());
            let mut names = std::collections::HashSet::new();
            for (entry, item) in entries.iter().zip(items) {
                assert!(!entry.server.is_empty());
                assert!(names.insert(entry.server.clone()), "duplicate server name");
                assert_eq!(item["server"], Value::from(entry.server.as_str()));
                match &entry.transport {
                    EntryTransport::Stdio(_) => assert!(item.get("command").is_some()),
                    EntryTransport::Http(_) => assert!(item.get("url").is_some()),
                }
                entry.limits.validate().expect("decoded limits are valid");
                outputs.push(format!("{entry:?}"));
            }
        }
        Err(error) => {
            outputs.push(error.to_string());
            outputs.push(format!("{error:?}"));
            outputs.push(smthrs_mcp::Error::from(error.clone()).to_string());
        }
    }
    for secret in &secrets {
        if secret.len() < 6
            || !secret
                .chars()
                .any(|c| !c.is_ascii() || "@#$%^&*~|<>;!?`".contains(c))
            || allowed
                .iter()
                .any(|a| a.contains(secret.as_str()) || format!("{a:?}").contains(secret.as_str()))
        {
            continue;
        }
        let escaped = format!("{secret:?}");
        let escaped = &escaped[1..escaped.len() - 1];
        for output in &outputs {
            assert!(
                !output.contains(secret.as_str()) && !output.contains(escaped),
                "secret {secret:?} in {output}"
            );
        }
    }
}

/// Splits the file's strings into secrets and text the decoder may echo.
fn classify_strings(root: &Value) -> (Vec<String>, Vec<String>) {
    let mut secrets = Vec::new();
    let mut allowed = Vec::new();
    let mut stack = vec![(root, false, false)];
    while let Some((value, in_env, is_url)) = stack.pop() {
        match value {
            Value::String(s) if in_env => secrets.push(s.clone()),
            Value::String(s) if is_url => match url::Url::parse(s) {
                Ok(url) => {
                    for part in [
                        Some(url.username()),
                        url.password(),
                        url.query(),
                        url.fragment(),
                    ]
                    .into_iter()
                    .flatten()
                    {
                        secrets.push(part.to_owned());
                    }
                    allowed.push(url.host_str().unwrap_or("").to_owned());
                    allowed.push(url.path().to_owned());
                    allowed.push(url.scheme().to_owned());
                }
                Err(_) => secrets.push(s.clone()),
            },
            Value::String(s) => allowed.push(s.clone()),
            Value::Array(items) => stack.extend(items.iter().map(|v| (v, false, false))),
            Value::Object(map) => {
                for (key, item) in map {
                    allowed.push(key.clone());
                    match (key.as_str(), item) {
                        ("env", Value::Object(vars)) => {
                            for (name, var) in vars {
                                allowed.push(name.clone());
                                stack.push((var, true, false));
                            }
                        }
                        ("url", item) => stack.push((item, false, true)),
                        (_, item) => stack.push((item, false, false)),
                    }
                }
            }
            _ => {}
        }
    }
    (secrets, allowed)
}
