//! The `WWW-Authenticate` parser (RFC 9110 §11.6.1), bounded.
//!
//! A header value is a comma-separated list of challenges, each an auth scheme
//! followed by either a `token68` or a comma-separated list of `name=value`
//! parameters (value a token or a quoted string). Several header fields are one
//! list. The grammar is ambiguous where a comma separates both parameters and
//! challenges; as in every mainstream parser, a token not followed by `=` starts a
//! new challenge.
//!
//! Bounds: at most [`MAX_HEADER_BYTES`] of header text are read (the rest is
//! ignored), at most [`MAX_CHALLENGES`] challenges and [`MAX_PARAMS`] parameters
//! per challenge are kept. Malformed text ends the parse; what was read before it
//! is kept. Scheme and parameter names compare case-insensitively.
//!
//! ```
//! # use smthrs_mcp::fuzzing::parse_challenges; // internal: reached the fuzz targets' way
//!
//! let header = r#"Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource""#;
//! let challenges = parse_challenges([header.as_bytes()]);
//! assert_eq!(challenges.len(), 1);
//! assert!(challenges[0].scheme_is("bearer"));
//! assert_eq!(challenges[0].param("SCOPE"), Some("mcp:read mcp:write"));
//! ```

/// The most header text read, over all `WWW-Authenticate` fields: 8 KiB.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;
/// The most challenges kept.
pub const MAX_CHALLENGES: usize = 16;
/// The most parameters kept per challenge.
pub const MAX_PARAMS: usize = 32;

/// One challenge: its scheme and its parameters, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    /// The auth scheme as sent (`Bearer`, `DPoP`, ...).
    pub scheme: String,
    /// A `token68`, when the challenge carries one instead of parameters.
    pub token68: Option<String>,
    /// The parameters: name as sent, value unquoted.
    pub params: Vec<(String, String)>,
}

impl Challenge {
    /// True when the scheme is `scheme`, ignoring ASCII case.
    pub fn scheme_is(&self, scheme: &str) -> bool {
        self.scheme.eq_ignore_ascii_case(scheme)
    }

    /// The first parameter named `name` (ASCII case-insensitive).
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the OAuth chain takes from a response's challenges: the first `Bearer`
/// (or `DPoP`) challenge's `resource_metadata`, `scope` and `error`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// The Protected Resource Metadata URL (RFC 9728 §5.1).
    pub resource_metadata: Option<String>,
    /// The scopes the resource asks for, space-separated.
    pub scope: Option<String>,
    /// The error code (`invalid_token`, `insufficient_scope`, ...).
    pub error: Option<String>,
}

impl BearerChallenge {
    /// Picks the first `Bearer` challenge, else the first `DPoP` one, from the
    /// parsed list.
    pub fn from_challenges(challenges: &[Challenge]) -> Self {
        let chosen = challenges
            .iter()
            .find(|c| c.scheme_is("bearer"))
            .or_else(|| challenges.iter().find(|c| c.scheme_is("dpop")));
        let Some(c) = chosen else {
            return BearerChallenge::default();
        };
        let get = |name: &str| c.param(name).map(str::to_owned);
        BearerChallenge {
            resource_metadata: get("resource_metadata"),
            scope: get("scope").filter(|s| !s.trim().is_empty()),
            error: get("error"),
        }
    }

    /// Parses the `WWW-Authenticate` fields of `headers`.
    pub fn from_headers(headers: &http::HeaderMap) -> Self {
        let values = headers
            .get_all(http::header::WWW_AUTHENTICATE)
            .iter()
            .map(|v| v.as_bytes());
        Self::from_challenges(&parse_challenges(values))
    }

    /// The challenged scopes, split on whitespace.
    pub fn scopes(&self) -> Vec<String> {
        self.scope
            .as_deref()
            .unwrap_or("")
            .split_ascii_whitespace()
            .map(str::to_owned)
            .collect()
    }
}

/// The `error` of the first `DPoP` challenge (RFC 9449 §7.1), such as
/// `use_dpop_nonce` (§9), from the parsed list.
pub fn dpop_error(challenges: &[Challenge]) -> Option<&str> {
    challenges
        .iter()
        .find(|c| c.scheme_is("dpop"))
        .and_then(|c| c.param("error"))
}

/// True when `headers` carry a `DPoP` challenge with `error="use_dpop_nonce"`.
pub(crate) fn asks_for_dpop_nonce(headers: &http::HeaderMap) -> bool {
    let values = headers
        .get_all(http::header::WWW_AUTHENTICATE)
        .iter()
        .map(|v| v.as_bytes());
    dpop_error(&parse_challenges(values)) == Some("use_dpop_nonce")
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token68_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn skip_ows_and_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> Option<&str> {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        // tchars are ASCII, so this is valid UTF-8.
        (self.i > start).then(|| std::str::from_utf8(&self.s[start..self.i]).unwrap_or(""))
    }

    /// A quoted string (the opening quote not yet consumed); `None` if unterminated
    /// or not valid UTF-8.
    fn quoted(&mut self) -> Option<String> {
        debug_assert_eq!(self.peek(), Some(b'"'));
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return String::from_utf8(out).ok();
                }
                b'\\' => {
                    self.i += 1;
                    // quoted-pair = "\" ( HTAB / SP / VCHAR / obs-text ): a
                    // control character is not made text by escaping it.
                    let escaped = self.peek()?;
                    if is_ctl(escaped) {
                        return None;
                    }
                    out.push(escaped);
                    self.i += 1;
                }
                b => {
                    if is_ctl(b) {
                        return None;
                    }
                    out.push(b);
                    self.i += 1;
                }
            }
        }
    }
}

/// A control character other than HTAB, which neither qdtext nor a quoted-pair
/// may carry (RFC 9110 §5.6.4).
fn is_ctl(b: u8) -> bool {
    b < 0x20 && b != b'\t' || b == 0x7f
}

/// Parses the values of one or more `WWW-Authenticate` fields into challenges.
///
/// Never panics; bounded as the `auth::challenge` module docs say.
pub fn parse_challenges<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Vec<Challenge> {
    let mut joined = Vec::new();
    for value in values {
        if joined.len() >= MAX_HEADER_BYTES {
            break;
        }
        if !joined.is_empty() {
            joined.push(b',');
        }
        let room = MAX_HEADER_BYTES - joined.len();
        joined.extend_from_slice(&value[..value.len().min(room)]);
    }
    let mut c = Cursor { s: &joined, i: 0 };
    let mut out: Vec<Challenge> = Vec::new();
    'challenges: loop {
        c.skip_ows_and_commas();
        if c.peek().is_none() || out.len() >= MAX_CHALLENGES {
            break;
        }
        let Some(scheme) = c.token().map(str::to_owned) else {
            break;
        };
        let mut challenge = Challenge {
            scheme,
            token68: None,
            params: Vec::new(),
        };
        // The scheme is followed by at least one space, or by the end / a comma.
        match c.peek() {
            None | Some(b',') => {
                out.push(challenge);
                continue;
            }
            Some(b' ' | b'\t') => c.skip_ows(),
            Some(_) => break,
        }
        loop {
            c.skip_ows_and_commas();
            let Some(b) = c.peek() else {
                out.push(challenge);
                break 'challenges;
            };
            // token68: only as the whole of a challenge's data, and only when it is
            // followed by the end or a comma (`name=value` has a value after `=`).
            if challenge.params.is_empty() && challenge.token68.is_none() && is_token68_char(b) {
                let start = c.i;
                let mut end = start;
                while c.s.get(end).copied().is_some_and(is_token68_char) {
                    end += 1;
                }
                while c.s.get(end) == Some(&b'=') {
                    end += 1;
                }
                let mut after = end;
                while matches!(c.s.get(after), Some(b' ' | b'\t')) {
                    after += 1;
                }
                if matches!(c.s.get(after), None | Some(b',')) {
                    challenge.token68 = std::str::from_utf8(&c.s[start..end])
                        .ok()
                        .map(str::to_owned);
                    c.i = after;
                    continue;
                }
            }
            let name_start = c.i;
            let Some(name) = c.token().map(str::to_owned) else {
                out.push(challenge);
                break 'challenges;
            };
            c.skip_ows();
            if c.peek() != Some(b'=') {
                // A new challenge starts at this token.
                c.i = name_start;
                out.push(challenge);
                continue 'challenges;
            }
            c.i += 1;
            c.skip_ows();
            let value = match c.peek() {
                Some(b'"') => match c.quoted() {
                    Some(v) => v,
                    None => {
                        out.push(challenge);
                        break 'challenges;
                    }
                },
                _ => match c.token() {
                    Some(v) => v.to_owned(),
                    None => {
                        out.push(challenge);
                        break 'challenges;
                    }
                },
            };
            if challenge.params.len() < MAX_PARAMS {
                challenge.params.push((name, value));
            }
            c.skip_ows();
            match c.peek() {
                None => {
                    out.push(challenge);
                    break 'challenges;
                }
                Some(b',') => {}
                Some(_) => {
                    out.push(challenge);
                    break 'challenges;
                }
            }
        }
    }
    out
}

/// Renders challenges back into one header value (parameters always quoted), the
/// inverse the fuzz target checks the parser against.
pub fn render_challenges(challenges: &[Challenge]) -> String {
    let mut out = String::new();
    for (i, c) in challenges.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&c.scheme);
        if let Some(t) = &c.token68 {
            out.push(' ');
            out.push_str(t);
        }
        for (j, (name, value)) in c.params.iter().enumerate() {
            // After a token68 the parser reads a parameter of the same challenge
            // only past a comma (without one, the next token starts a challenge).
            let first = j == 0 && c.token68.is_none();
            out.push_str(if first { " " } else { ", " });
            out.push_str(name);
            out.push_str("=\"");
            for ch in value.chars() {
                if ch == '"' || ch == '\\' {
                    out.push('\\');
                }
                out.push(ch);
            }
            out.push('"');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Vec<Challenge> {
        parse_challenges([s.as_bytes()])
    }

    #[test]
    fn the_suites_challenges() {
        let c = parse(
            r#"Bearer error="invalid_token", error_description="Missing Authorization header", resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp""#,
        );
        assert_eq!(c.len(), 1);
        let b = BearerChallenge::from_challenges(&c);
        assert_eq!(b.error.as_deref(), Some("invalid_token"));
        assert_eq!(
            b.resource_metadata.as_deref(),
            Some("http://localhost:3000/.well-known/oauth-protected-resource/mcp")
        );
        let c = parse(
            r#"Bearer scope="mcp:write", resource_metadata="http://h/x", error="insufficient_scope""#,
        );
        let b = BearerChallenge::from_challenges(&c);
        assert_eq!(b.scopes(), ["mcp:write"]);
        assert_eq!(b.error.as_deref(), Some("insufficient_scope"));
    }

    #[test]
    fn several_challenges_tokens_and_token68() {
        let c = parse(
            r#"Basic realm="x", DPoP algs="ES256", Bearer scope=read, Negotiate abc+/==, Empty"#,
        );
        let schemes: Vec<_> = c.iter().map(|c| c.scheme.as_str()).collect();
        assert_eq!(schemes, ["Basic", "DPoP", "Bearer", "Negotiate", "Empty"]);
        assert_eq!(c[2].param("scope"), Some("read"));
        assert_eq!(c[3].token68.as_deref(), Some("abc+/=="));
        // Bearer is preferred over an earlier DPoP.
        assert_eq!(
            BearerChallenge::from_challenges(&c).scope.as_deref(),
            Some("read")
        );
        let dpop = parse(r#"DPoP error="use_dpop_nonce", algs="ES256""#);
        assert_eq!(dpop_error(&dpop), Some("use_dpop_nonce"));
        let both = parse(r#"Bearer error="invalid_token", DPoP error="use_dpop_nonce""#);
        assert_eq!(dpop_error(&both), Some("use_dpop_nonce"));
        assert_eq!(dpop_error(&parse(r#"Bearer error="use_dpop_nonce""#)), None);
        assert_eq!(
            BearerChallenge::from_challenges(&dpop).error.as_deref(),
            Some("use_dpop_nonce")
        );
    }

    #[test]
    fn quoting_case_and_several_fields() {
        let c = parse_challenges([&b"bEaReR Scope=\"a \\\"b\\\\\""[..], b"Other x=1"]);
        assert_eq!(c.len(), 2);
        assert!(c[0].scheme_is("Bearer"));
        assert_eq!(c[0].param("scope"), Some("a \"b\\"));
        assert_eq!(c[1].param("X"), Some("1"));
    }

    #[test]
    fn malformed_text_keeps_what_came_before() {
        assert!(parse("").is_empty());
        assert!(parse("   ,, ").is_empty());
        let c = parse(r#"Bearer scope="unterminated"#);
        assert_eq!(c.len(), 1);
        assert!(c[0].params.is_empty());
        assert!(parse("\"quoted\" x").is_empty());
        let c = parse("Bearer a=1 junk");
        assert_eq!(c[0].param("a"), Some("1"));
    }

    #[test]
    fn bounds_hold() {
        let many = "B a=1, ".repeat(1000);
        assert!(parse(&many).len() <= MAX_CHALLENGES);
        let params = format!("Bearer {}", "a=1, ".repeat(1000));
        assert_eq!(parse(&params)[0].params.len(), MAX_PARAMS);
        let long = format!("Bearer scope=\"{}\"", "x".repeat(MAX_HEADER_BYTES * 2));
        // Cut at the bound: the quoted string never ends, so no parameter.
        assert!(parse(&long)[0].params.is_empty());
    }

    #[test]
    fn a_token68_followed_by_parameters_renders_with_the_comma_between() {
        // The fuzz finding `fuzz/artifacts-found/www_authenticate/token68-then-params`.
        let c = parse("bEaReR ScobEaReR ,cope=2");
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].token68.as_deref(), Some("ScobEaReR"));
        assert_eq!(c[0].params, [("cope".to_owned(), "2".to_owned())]);
        let rendered = render_challenges(&c);
        assert_eq!(rendered, r#"bEaReR ScobEaReR, cope="2""#);
        assert_eq!(parse(&rendered), c);
    }

    #[test]
    fn an_escaped_control_character_makes_the_quoted_string_malformed() {
        // The fuzz finding `fuzz/artifacts-found/www_authenticate/escaped-control`:
        // `\<0x12>` was read as text, which the renderer then wrote raw and the
        // parser refused.
        let c = parse("Bearer error=\"a\\\u{12}b\", scope=\"x\"");
        assert_eq!(c.len(), 1);
        assert!(c[0].params.is_empty(), "{c:?}");
        assert_eq!(parse(&render_challenges(&c)), c);
        // An escaped tab, space or visible character is still text.
        let ok = parse("Bearer error=\"a\\\tb\\ c\\\"d\"");
        assert_eq!(ok[0].param("error"), Some("a\tb c\"d"));
    }

    #[test]
    fn render_then_parse_is_the_identity() {
        let c = parse(r#"Bearer error="e", scope="a b", DPoP algs="ES256", Basic, Neg abc=="#);
        assert_eq!(parse(&render_challenges(&c)), c);
    }
}
