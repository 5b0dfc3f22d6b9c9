//! Secret-named keys (`key=value` and a dozen other layouts), `Authorization`-style
//! headers and the `Bearer`/`Basic` schemes: the rule that reads a word as a key and
//! finds its value, with the exceptions that keep ordinary logs readable.

use super::patterns::run_end;
use super::span::Span;
use super::work::{self, Pass};

/// Longer words are not taken for keys (this keeps key matching cheap).
const MAX_KEY_BYTES: usize = 128;

// ---------------------------------------------------------------------------------
// Secret-named keys, Authorization headers, Bearer and Basic
// ---------------------------------------------------------------------------------

/// Bytes of a key: `GITHUB_TOKEN`, `x-api-key`, `spring.datasource.password`, `--token`.
fn is_key_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.')
}

/// Bytes that end an unquoted value.
fn ends_value(byte: u8) -> bool {
    byte.is_ascii_whitespace()
        || byte.is_ascii_control()
        || matches!(
            byte,
            b'"' | b'\'' | b'`' | b',' | b';' | b'&' | b')' | b']' | b'}' | b'<' | b'>'
        )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyClass {
    /// Not a secret-named key.
    Plain,
    /// Its value is a secret.
    Secret,
    /// Names a count of tokens (`max_tokens`, `tokenizer`): a numeric value is kept.
    Count,
    /// `Authorization`, `Cookie` and friends: an unquoted value runs to end of line.
    Header,
}

const HEADER_KEYS: &[&[u8]] = &[
    b"authorization",
    b"proxy-authorization",
    b"cookie",
    b"set-cookie",
];

/// Classifies a key. Lower-cased with `_`, `-` and `.` dropped (into `norm`), a secret
/// key contains one of: token, secret, password, passwd, passphrase, pwd, apikey,
/// accesskey, accountkey, privatekey, credential, auth, session, cookie.
fn classify_key(word: &[u8], norm: &mut Vec<u8>) -> KeyClass {
    if word.len() > MAX_KEY_BYTES {
        return KeyClass::Plain;
    }
    // The header names, the word copied into `norm`, and the suffixes.
    work::count(Pass::Keyed, HEADER_KEYS.len() + word.len() + 5);
    if HEADER_KEYS.iter().any(|key| word.eq_ignore_ascii_case(key)) {
        return KeyClass::Header;
    }
    norm.clear();
    norm.extend(
        word.iter()
            .filter(|byte| byte.is_ascii_alphanumeric())
            .map(u8::to_ascii_lowercase),
    );
    const NOT_KEYS: &[&[u8]] = &[b"error", b"errors", b"exception", b"failed", b"failure"];
    if NOT_KEYS.iter().any(|suffix| norm.ends_with(suffix)) {
        return KeyClass::Plain; // `AuthenticationError: invalid key`, `token_failed: 3`
    }
    let mut counts = false;
    for at in 0..norm.len() {
        work::count(Pass::Keyed, 1);
        let rest = &norm[at..];
        // Dispatch on the first letter so that a word is scanned once.
        let parts: &[&[u8]] = match rest[0] {
            b'a' => &[b"apikey", b"accesskey", b"accountkey"],
            b'c' => &[b"credential", b"cookie"],
            b'p' => &[b"password", b"passwd", b"passphrase", b"pwd", b"privatekey"],
            b's' => &[b"secret", b"session"],
            b't' => &[],
            _ => continue,
        };
        if parts.iter().any(|part| rest.starts_with(part)) {
            return KeyClass::Secret;
        }
        if let Some(after) = rest.strip_prefix(b"token") {
            if after.starts_with(b"s") || after.starts_with(b"iz") || after.starts_with(b"is") {
                counts = true; // `max_tokens`, `tokenizer`
            } else {
                return KeyClass::Secret;
            }
        }
        if let Some(after) = rest.strip_prefix(b"auth") {
            let author = after.starts_with(b"or")
                && !after.starts_with(b"oriz")
                && !after.starts_with(b"oris");
            if !author {
                return KeyClass::Secret;
            }
        }
    }
    if counts {
        KeyClass::Count
    } else {
        KeyClass::Plain
    }
}

/// A value found after a key.
struct KeyedValue {
    start: usize,
    end: usize,
    redact: bool,
    /// Where scanning for the next key resumes (past any closing quote).
    resume: usize,
}

fn is_placeholder(value: &[u8]) -> bool {
    const PLACEHOLDERS: &[&[u8]] = &[
        b"null",
        b"none",
        b"nil",
        b"undefined",
        b"true",
        b"false",
        b"redacted",
        b"[redacted]",
        b"<redacted>",
        b"(redacted)",
    ];
    value.iter().all(|&byte| byte == b'*')
        || PLACEHOLDERS
            .iter()
            .any(|placeholder| value.eq_ignore_ascii_case(placeholder))
}

fn is_numeric(value: &[u8]) -> bool {
    value.iter().any(u8::is_ascii_digit)
        && value
            .iter()
            .all(|&byte| byte.is_ascii_digit() || matches!(byte, b'.' | b',' | b'_'))
}

fn keyed_value(
    start: usize,
    end: usize,
    resume: usize,
    bytes: &[u8],
    class: KeyClass,
) -> KeyedValue {
    let value = &bytes[start..end];
    // At most: the value looked at for `*`s, for digits twice, and the placeholders.
    work::count(Pass::Keyed, 3 * value.len() + 10);
    let count = class == KeyClass::Count && is_numeric(value);
    let redact = !(value.is_empty() || is_placeholder(value) || count);
    KeyedValue {
        start,
        end,
        redact,
        resume,
    }
}

/// Finds the value that follows the key `bytes[key_start..key_end]`, if any.
fn value_after_key(
    bytes: &[u8],
    key_start: usize,
    key_end: usize,
    class: KeyClass,
) -> Option<KeyedValue> {
    let len = bytes.len();
    let word = &bytes[key_start..key_end];
    let before = key_start.checked_sub(1).map(|index| bytes[index]);
    if before == Some(b'/') {
        return None; // a path segment: `/etc/passwd: No such file`
    }
    let mut at = key_end;
    if bytes.get(at) == Some(&b':')
        && bytes.get(at + 1).is_some_and(u8::is_ascii_digit)
        && looks_like_file_name(word)
    {
        return None; // a source position: `auth.rs:17:5`
    }
    // <password>value</password>
    if before == Some(b'<') && bytes.get(at) == Some(&b'>') {
        let start = at + 1;
        let end = bytes[start..]
            .iter()
            .position(|&byte| byte == b'<')
            .map_or(len, |offset| start + offset);
        work::count(Pass::Keyed, end + 1 - start);
        return Some(keyed_value(start, end, end, bytes, class));
    }
    // The closing quote of a quoted key: "key", 'key', \"key\".
    let mut quotes = 0;
    while at < len && quotes < 3 && matches!(bytes[at], b'"' | b'\'' | b'`' | b'\\') {
        at += 1;
        quotes += 1;
    }
    let spaces_start = at;
    at = skip_blanks(bytes, at);
    let spaced = at > spaces_start;
    let flag = bytes[key_start] == b'-';
    if let Some(after) = after_separator(bytes, at) {
        at = after;
    } else {
        match bytes.get(at) {
            // `--password value`
            Some(&next) if quotes == 0 && spaced && flag && next != b'-' => {}
            // A quoted key followed by another string: `{"name": "API_TOKEN", "value": "..."}`
            // or an argument vector `["--api-key", "..."]`.
            Some(b',') if quotes > 0 => {
                let next = skip_blanks(bytes, at + 1);
                if let Some(after) = value_key_at(bytes, next) {
                    at = after;
                } else if flag && matches!(bytes.get(next), Some(b'"' | b'\'')) {
                    at = next;
                } else {
                    return None;
                }
            }
            _ => return None,
        }
    }
    let first = *bytes.get(at)?;
    let (quote, escaped, start) = match first {
        b'\\' if matches!(bytes.get(at + 1), Some(b'"' | b'\'')) => (bytes[at + 1], true, at + 2),
        b'"' | b'\'' | b'`' => (first, false, at + 1),
        _ => (0, false, at),
    };
    if quote != 0 {
        let mut cursor = start;
        let (mut end, mut resume) = (len, len);
        while cursor < len {
            let byte = bytes[cursor];
            if byte == b'\\' {
                if escaped && bytes.get(cursor + 1) == Some(&quote) {
                    (end, resume) = (cursor, cursor + 2);
                    break;
                }
                cursor += 2;
                continue;
            }
            if !escaped && byte == quote {
                (end, resume) = (cursor, cursor + 1);
                break;
            }
            cursor += 1;
        }
        work::count(Pass::Keyed, cursor + 1 - start);
        return Some(keyed_value(start, end, resume, bytes, class));
    }
    if matches!(first, b'{' | b'[' | b'(') {
        return None; // a nested structure: its own keys are examined in turn
    }
    if class == KeyClass::Header {
        return Some(keyed_value(start, len, len, bytes, class));
    }
    let end = bytes[start..]
        .iter()
        .position(|&byte| ends_value(byte))
        .map_or(len, |offset| start + offset);
    work::count(Pass::Keyed, end + 1 - start);
    if end == start {
        return None;
    }
    Some(keyed_value(start, end, end, bytes, class))
}

fn skip_blanks(bytes: &[u8], at: usize) -> usize {
    run_end(bytes, at, |byte| matches!(byte, b' ' | b'\t'), Pass::Keyed)
}

/// A `:` or `=` separator at `at` (also `:=` and `=>`, not `::`): where the value starts.
fn after_separator(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b':' if bytes.get(at + 1) == Some(&b':') => None, // a path: `auth::login`
        b':' | b'=' => {
            let skip = usize::from(matches!(bytes.get(at + 1), Some(b'=' | b'>')));
            Some(skip_blanks(bytes, at + 1 + skip))
        }
        _ => None,
    }
}

/// A quoted `"value"` key and its separator at `at`: where its value starts.
fn value_key_at(bytes: &[u8], at: usize) -> Option<usize> {
    let quote = *bytes.get(at)?;
    if !matches!(quote, b'"' | b'\'') {
        return None;
    }
    let key = bytes.get(at + 1..at + 6)?;
    if !key.eq_ignore_ascii_case(b"value") || bytes.get(at + 6) != Some(&quote) {
        return None;
    }
    after_separator(bytes, skip_blanks(bytes, at + 7))
}

/// `auth.rs`, `session.py`: a stem and a short alphanumeric extension.
fn looks_like_file_name(word: &[u8]) -> bool {
    match word.iter().rposition(|&byte| byte == b'.') {
        Some(dot) => {
            let extension = &word[dot + 1..];
            dot > 0
                && (1..=5).contains(&extension.len())
                && extension.iter().all(u8::is_ascii_alphanumeric)
        }
        None => false,
    }
}

fn is_bearer_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
}

fn is_base64_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/')
}

fn base64_value(byte: u8) -> Option<u32> {
    Some(match byte {
        b'A'..=b'Z' => u32::from(byte - b'A'),
        b'a'..=b'z' => u32::from(byte - b'a') + 26,
        b'0'..=b'9' => u32::from(byte - b'0') + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    })
}

/// Whether `token` is base64 of printable text containing a `:` (`user:pass`).
fn decodes_to_user_pass(token: &[u8]) -> bool {
    let body = token
        .strip_suffix(b"==")
        .or_else(|| token.strip_suffix(b"="))
        .unwrap_or(token);
    if body.len() % 4 == 1 {
        return false;
    }
    let (mut acc, mut bits, mut colon) = (0u32, 0u32, false);
    for &byte in body {
        let Some(value) = base64_value(byte) else {
            return false;
        };
        acc = (acc << 6) | value;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            let decoded = (acc >> bits) & 0xff;
            acc &= (1 << bits) - 1;
            if !(0x20..0x7f).contains(&decoded) {
                return false;
            }
            colon |= decoded == u32::from(b':');
        }
    }
    colon
}

fn looks_like_bearer(token: &[u8]) -> bool {
    token.len() >= 8 && (token.len() >= 20 || !token.iter().all(u8::is_ascii_alphabetic))
}

fn looks_like_basic(token: &[u8]) -> bool {
    token.len() >= 8
        && (token
            .iter()
            .any(|&byte| byte.is_ascii_digit() || matches!(byte, b'+' | b'/' | b'='))
            || decodes_to_user_pass(token))
}

/// The credential after `Bearer` or `Basic` (whose end is `at`), if it looks like one.
fn scheme_credential(bytes: &[u8], at: usize, basic: bool) -> Option<(usize, usize)> {
    let mut cursor = at;
    while cursor < bytes.len() && matches!(bytes[cursor], b' ' | b'\t') {
        cursor += 1;
    }
    if cursor == at {
        return None;
    }
    let start = cursor;
    let accept = if basic {
        is_base64_byte
    } else {
        is_bearer_byte
    };
    while cursor < bytes.len() && accept(bytes[cursor]) {
        cursor += 1;
    }
    while cursor < bytes.len() && bytes[cursor] == b'=' {
        cursor += 1;
    }
    let token = &bytes[start..cursor];
    // The blanks and the token, then the token again to judge it.
    work::count(Pass::Keyed, cursor + 1 - at + token.len());
    let looks = if basic {
        looks_like_basic(token)
    } else {
        looks_like_bearer(token)
    };
    looks.then_some((start, cursor))
}

/// Walks the line word by word, marking values of secret-named keys and the
/// credentials after `Bearer` and `Basic`. Linear: scanning resumes after each value.
pub(super) fn find_keyed_values(bytes: &[u8], spans: &mut Vec<Span>) {
    let mut norm = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if !is_key_byte(bytes[at]) {
            work::count(Pass::Keyed, 1);
            at += 1;
            continue;
        }
        let start = at;
        at = run_end(bytes, at, is_key_byte, Pass::Keyed);
        let word = &bytes[start..at];
        let bearer = word.eq_ignore_ascii_case(b"bearer");
        if bearer || word.eq_ignore_ascii_case(b"basic") {
            if let Some((credential_start, credential_end)) = scheme_credential(bytes, at, !bearer)
            {
                spans.push(Span::redact(credential_start, credential_end));
                at = credential_end;
            }
            continue;
        }
        let class = classify_key(word, &mut norm);
        if class == KeyClass::Plain {
            continue;
        }
        if let Some(value) = value_after_key(bytes, start, at, class) {
            if value.redact {
                spans.push(Span::redact(value.start, value.end));
            }
            at = at.max(value.resume);
        }
    }
}
