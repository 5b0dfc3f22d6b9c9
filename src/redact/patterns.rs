//! The shape rules, which need no key in front: PEM private-key blocks, URL
//! userinfo, well-known token prefixes and high-entropy runs, with the small byte
//! search helpers they share.

use super::span::{PemState, Span};
use super::work::{self, Pass};

/// The longest PEM label accepted between `-----BEGIN ` and `-----`.
pub(super) const PEM_LABEL_MAX: usize = 64;
pub(super) const PEM_BEGIN: &str = "-----BEGIN ";
pub(super) const PEM_END: &str = "-----END ";
/// The shortest run that the high-entropy rule considers.
const ENTROPY_MIN_LEN: usize = 32;

/// The first occurrence of a short, non-empty `needle` at or after `from`. Linear for
/// the short constant needles used here (cost `haystack.len() * needle.len()` at worst).
/// Its work is counted for `pass`.
pub(super) fn find_from(
    haystack: &[u8],
    mut from: usize,
    needle: &[u8],
    pass: Pass,
) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    loop {
        let tail = haystack.get(from..)?;
        let Some(offset) = tail.iter().position(|&byte| byte == first) else {
            work::count(pass, tail.len());
            return None;
        };
        // The bytes up to the candidate, and one comparison with the needle.
        work::count(pass, offset + 1);
        let at = from + offset;
        if haystack[at + 1..].starts_with(rest) {
            return Some(at);
        }
        from = at + 1;
    }
}

pub(super) fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

// ---------------------------------------------------------------------------------
// PEM private keys
// ---------------------------------------------------------------------------------

/// Finds the next `-----BEGIN <label>-----` (or END, per `kind`) marker at or after
/// `from` whose label names a private key. Returns the marker's start and end.
pub(super) fn find_pem_marker(line: &str, mut from: usize, kind: &str) -> Option<(usize, usize)> {
    while let Some(start) = find_from(line.as_bytes(), from, kind.as_bytes(), Pass::Pem) {
        let label_start = start + kind.len();
        let window_end = (label_start + PEM_LABEL_MAX + 5).min(line.len());
        let window = &line.as_bytes()[label_start..window_end];
        let close = window.windows(5).position(|w| w == b"-----");
        // The window's positions looked at for `-----`, then the label's for the name.
        work::count(Pass::Pem, close.map_or(window.len(), |close| 2 * close + 1));
        if let Some(close) = close
            && contains_bytes(&window[..close], b"PRIVATE KEY")
        {
            return Some((start, label_start + close + 5));
        }
        from = start + 1;
    }
    None
}

/// Marks the bodies of private-key blocks that start on this line (at or after
/// `from`); enters [`PemState::Inside`] if the last one does not end on it.
pub(super) fn find_pem_blocks(
    line: &str,
    mut from: usize,
    pem: &mut PemState,
    spans: &mut Vec<Span>,
) {
    while let Some((_, body_start)) = find_pem_marker(line, from, PEM_BEGIN) {
        match find_pem_marker(line, body_start, PEM_END) {
            Some((end_start, end_end)) => {
                spans.push(Span::redact(body_start, end_start));
                from = end_end;
            }
            None => {
                work::count(Pass::Pem, line.len() - body_start);
                let blank = line[body_start..].trim().is_empty();
                if !blank {
                    spans.push(Span::redact(body_start, line.len()));
                }
                *pem = PemState::Inside { marked: !blank };
                return;
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// URL userinfo
// ---------------------------------------------------------------------------------

fn ends_authority(byte: u8) -> bool {
    byte.is_ascii_whitespace()
        || byte.is_ascii_control()
        || matches!(
            byte,
            b'/' | b'?' | b'#' | b'"' | b'\'' | b'`' | b'<' | b'>' | b'\\' | b'{' | b'}' | b'|'
        )
}

/// `scheme://userinfo@host`: marks everything between `://` and the authority's last `@`.
pub(super) fn find_userinfo(line: &str, spans: &mut Vec<Span>) {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(sep) = find_from(bytes, from, b"://", Pass::Userinfo) {
        let start = sep + 3;
        let mut at = None;
        let mut cursor = start;
        while cursor < bytes.len() && !ends_authority(bytes[cursor]) {
            if bytes[cursor] == b'@' {
                at = Some(cursor);
            }
            cursor += 1;
        }
        work::count(Pass::Userinfo, cursor + 1 - start);
        if let Some(at) = at
            && at > start
        {
            spans.push(Span::redact(start, at));
        }
        from = cursor;
    }
}

// ---------------------------------------------------------------------------------
// Token shapes and high-entropy runs
// ---------------------------------------------------------------------------------

/// Bytes of a token: alphanumerics, `_` and `-`. A shape must start after a non-token byte.
fn is_token_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-')
}

/// Prefix, minimum length of the token run after it, and whether that run needs a digit.
const TOKEN_PREFIXES: &[(&[u8], usize, bool)] = &[
    (b"ghp_", 20, false),
    (b"gho_", 20, false),
    (b"ghu_", 20, false),
    (b"ghs_", 20, false),
    (b"ghr_", 20, false),
    (b"github_pat_", 20, false),
    (b"sk-", 16, true),
    (b"sk_live_", 16, false),
    (b"sk_test_", 16, false),
    (b"rk_live_", 16, false),
    (b"rk_test_", 16, false),
    (b"whsec_", 24, false),
    (b"xoxa-", 10, true),
    (b"xoxb-", 10, true),
    (b"xoxe-", 10, true),
    (b"xoxo-", 10, true),
    (b"xoxp-", 10, true),
    (b"xoxr-", 10, true),
    (b"xoxs-", 10, true),
    (b"xapp-", 10, true),
    (b"AIza", 35, false),
    (b"ya29.", 20, false),
    (b"glpat-", 20, false),
    (b"npm_", 36, false),
    (b"pypi-", 50, false),
    (b"hf_", 30, false),
    (b"SG.", 20, false),
    (b"shpat_", 32, false),
    (b"shpss_", 32, false),
    (b"dop_v1_", 60, false),
];

/// The end of the run of `part` bytes that starts at `at`. Its work is counted for
/// `pass`.
pub(super) fn run_end(bytes: &[u8], mut at: usize, part: impl Fn(u8) -> bool, pass: Pass) -> usize {
    let start = at;
    while at < bytes.len() && part(bytes[at]) {
        at += 1;
    }
    work::count(pass, at + 1 - start);
    at
}

fn token_run_end(bytes: &[u8], at: usize) -> usize {
    run_end(bytes, at, is_token_byte, Pass::Shapes)
}

/// `eyJ<header>.eyJ<payload>.<signature>` starting at `at`: its end.
fn jwt_end(bytes: &[u8], at: usize) -> Option<usize> {
    let header_end = token_run_end(bytes, at + 3);
    let payload = header_end + 1;
    if bytes.get(header_end) != Some(&b'.') || !bytes[payload..].starts_with(b"eyJ") {
        return None;
    }
    let payload_end = token_run_end(bytes, payload + 3);
    if bytes.get(payload_end) != Some(&b'.') {
        return None;
    }
    Some(token_run_end(bytes, payload_end + 1))
}

/// The end of a well-known token shape starting at `at`, if one does.
fn token_shape_end(bytes: &[u8], at: usize) -> Option<usize> {
    let rest = &bytes[at..];
    // One comparison per prefix, and the AWS and JWT ones.
    work::count(Pass::Shapes, TOKEN_PREFIXES.len() + 3);
    for &(prefix, min_len, needs_digit) in TOKEN_PREFIXES {
        if rest.starts_with(prefix) {
            let body_start = at + prefix.len();
            let end = token_run_end(bytes, body_start);
            let body = &bytes[body_start..end];
            if needs_digit && body.len() >= min_len {
                work::count(Pass::Shapes, body.len());
            }
            if body.len() >= min_len && (!needs_digit || body.iter().any(u8::is_ascii_digit)) {
                return Some(end);
            }
        }
    }
    if rest.starts_with(b"AKIA") || rest.starts_with(b"ASIA") {
        let id_ok = rest.get(4..20).is_some_and(|id| {
            id.iter()
                .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit())
        });
        let bounded = rest
            .get(20)
            .is_none_or(|byte| !byte.is_ascii_alphanumeric());
        if id_ok && bounded {
            return Some(at + 20);
        }
    }
    if rest.starts_with(b"eyJ") {
        return jwt_end(bytes, at);
    }
    None
}

/// Bytes that can start a token shape, for a cheap first test.
const TOKEN_FIRST_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut index = 0;
    while index < TOKEN_PREFIXES.len() {
        table[TOKEN_PREFIXES[index].0[0] as usize] = true;
        index += 1;
    }
    table[b'A' as usize] = true; // AKIA, ASIA
    table[b'e' as usize] = true; // eyJ
    table
};

pub(super) fn find_token_shapes(bytes: &[u8], spans: &mut Vec<Span>) {
    let mut at = 0;
    while at < bytes.len() {
        work::count(Pass::Shapes, 1);
        let boundary = at == 0 || !is_token_byte(bytes[at - 1]);
        if !boundary || !TOKEN_FIRST_BYTES[usize::from(bytes[at])] {
            at += 1;
            continue;
        }
        match token_shape_end(bytes, at) {
            Some(end) => {
                spans.push(Span::redact(at, end));
                at = end.max(at + 1);
            }
            None => at += 1,
        }
    }
}

fn is_entropy_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'_' | b'-')
}

/// Whether a run looks like random base64 rather than a path or an identifier: long,
/// mixing upper case, lower case and digits, changing class often, and few `/`.
fn looks_random(run: &[u8]) -> bool {
    if run.len() < ENTROPY_MIN_LEN {
        return false;
    }
    work::count(Pass::Entropy, run.len());
    let class = |byte: u8| match byte {
        b'A'..=b'Z' => 0u8,
        b'a'..=b'z' => 1,
        b'0'..=b'9' => 2,
        _ => 3,
    };
    let mut seen = [false; 4];
    let (mut changes, mut slashes) = (0usize, 0usize);
    let mut previous = None;
    for &byte in run {
        let current = class(byte);
        seen[usize::from(current)] = true;
        if previous.is_some_and(|previous| previous != current) {
            changes += 1;
        }
        previous = Some(current);
        slashes += usize::from(byte == b'/');
    }
    seen[0] && seen[1] && seen[2] && changes * 3 >= run.len() && slashes * 16 <= run.len()
}

pub(super) fn find_high_entropy(bytes: &[u8], spans: &mut Vec<Span>) {
    let mut at = 0;
    while at < bytes.len() {
        if !is_entropy_byte(bytes[at]) {
            work::count(Pass::Entropy, 1);
            at += 1;
            continue;
        }
        let start = at;
        at = run_end(bytes, at, is_entropy_byte, Pass::Entropy);
        let run_end = at;
        while at < bytes.len() && bytes[at] == b'=' {
            at += 1;
        }
        work::count(Pass::Entropy, at - run_end);
        if looks_random(&bytes[start..run_end]) {
            spans.push(Span::redact(start, at));
        }
    }
}
