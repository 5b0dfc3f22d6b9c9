//! Skill URIs as paths: splitting a URI into its RFC 3986 parts, the
//! normalised key two spellings of one file share, and the resolution of a
//! relative reference (RFC 3986 §5.2).
//!
//! The key follows RFC 3986 §6.2.2 and goes one step further, as the Skills extension asks
//! (`Q&A.md` and `Q%26A.md` name one file): the scheme and the authority are
//! compared without ASCII case, every percent-encoded octet is decoded (not only
//! the unreserved ones), and dot segments are removed from the decoded segments.
//! The path is split on its literal `/` *before* decoding, so `a%2Fb` stays one
//! segment; skill URIs refuse `%2F` anyway ([`unsafe_octet`]). Nothing here
//! resolves, fetches or opens anything.

/// The parts of a URI that has an authority (`scheme://authority/path?query#fragment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parts<'a> {
    pub(crate) scheme: &'a str,
    pub(crate) authority: &'a str,
    /// Empty, or starting with `/`.
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
    pub(crate) fragment: Option<&'a str>,
}

/// Splits `uri` into its parts; `None` when it has no RFC 3986 scheme or no
/// `//` authority.
pub(crate) fn split(uri: &str) -> Option<Parts<'_>> {
    let scheme = scheme_of(uri)?;
    let rest = uri[scheme.len() + 1..].strip_prefix("//")?;
    let (rest, fragment) = match rest.split_once('#') {
        Some((rest, fragment)) => (rest, Some(fragment)),
        None => (rest, None),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    Some(Parts {
        scheme,
        authority,
        path,
        query,
        fragment,
    })
}

/// The scheme of `text` when it starts with one (`ALPHA *( ALPHA / DIGIT / "+"
/// / "-" / "." ) ":"`, the colon before any `/`, `?` or `#`).
fn scheme_of(text: &str) -> Option<&str> {
    let end = text.find([':', '/', '?', '#'])?;
    if text.as_bytes()[end] != b':' {
        return None;
    }
    let scheme = &text[..end];
    let bytes = scheme.as_bytes();
    let ok = bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    ok.then_some(scheme)
}

/// Decodes every `%HH` of `text`; `None` when a `%` is not followed by two hex
/// digits.
pub(crate) fn percent_decode(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let high = hex_value(*bytes.get(i + 1)?)?;
            let low = hex_value(*bytes.get(i + 2)?)?;
            out.push(high << 4 | low);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// True when a decoded segment holds an octet a skill URI may not carry once
/// decoded: `/` or `\` (a second reading as a separator, by a server that
/// decodes before it splits), or a C0 control or DEL (`%00` truncates paths in
/// some servers).
pub(crate) fn unsafe_octet(decoded: &[u8]) -> bool {
    decoded
        .iter()
        .any(|&b| b == b'/' || b == b'\\' || b < 0x20 || b == 0x7F)
}

/// True when `authority` is an RFC 3986 `reg-name` (IRI style: non-ASCII
/// letters allowed, as the URI rules allow them): unreserved characters,
/// percent-encodings and sub-delimiters; no userinfo `@`, no port `:`.
pub(crate) fn is_reg_name(authority: &str) -> bool {
    percent_decode(authority).is_some()
        && authority.chars().all(|c| {
            !c.is_ascii()
                || c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '-' | '.'
                        | '_'
                        | '~'
                        | '%'
                        | '!'
                        | '$'
                        | '&'
                        | '\''
                        | '('
                        | ')'
                        | '*'
                        | '+'
                        | ','
                        | ';'
                        | '='
                )
        })
}

/// The normalised form two spellings of one file share (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    scheme: String,
    authority: Vec<u8>,
    /// Decoded, dot segments removed. A path ending in `/` (or in a dot
    /// segment) ends with an empty segment.
    segments: Vec<Vec<u8>>,
}

impl Key {
    /// The key of `uri`; `None` when it has no scheme or authority, carries a
    /// query or a fragment, or has a malformed percent-encoding.
    pub(crate) fn of(uri: &str) -> Option<Key> {
        let parts = split(uri)?;
        if parts.query.is_some() || parts.fragment.is_some() {
            return None;
        }
        let mut authority = percent_decode(parts.authority)?;
        authority.make_ascii_lowercase();
        let mut segments: Vec<Vec<u8>> = Vec::new();
        if let Some(path) = parts.path.strip_prefix('/') {
            let raw: Vec<&str> = path.split('/').collect();
            let last = raw.len() - 1;
            for (i, segment) in raw.into_iter().enumerate() {
                let decoded = percent_decode(segment)?;
                match decoded.as_slice() {
                    b"." | b".." => {
                        if decoded == b".." {
                            segments.pop();
                        }
                        if i == last {
                            segments.push(Vec::new());
                        }
                    }
                    _ => segments.push(decoded),
                }
            }
        }
        Some(Key {
            scheme: parts.scheme.to_ascii_lowercase(),
            authority,
            segments,
        })
    }

    /// The decoded segments, dot segments removed.
    pub(crate) fn segments(&self) -> &[Vec<u8>] {
        &self.segments
    }

    /// True when `self` names a file strictly under the directory `root`: the
    /// same scheme and authority, and `root`'s segments followed by at least one
    /// more.
    pub(crate) fn is_under(&self, root: &Key) -> bool {
        self.scheme == root.scheme
            && self.authority == root.authority
            && self.segments.len() > root.segments.len()
            && self.segments.starts_with(&root.segments)
    }
}

/// Resolves `reference` against `base` (a URI with an authority whose path ends
/// in `/`), per RFC 3986 §5.2.2, as `new URL(reference, base)` would for these
/// inputs; the fragment is dropped (it names a part of a file, not a file).
/// `None` when the reference has a scheme or an authority of its own whose
/// resolution leaves no usable URI.
pub(crate) fn resolve(base: &str, reference: &str) -> Option<String> {
    let reference = reference.split_once('#').map_or(reference, |(r, _)| r);
    if scheme_of(reference).is_some() {
        // An absolute reference: only its dot segments are resolved.
        let parts = split(reference)?;
        return Some(compose(
            parts.scheme,
            parts.authority,
            &remove_dot_segments(parts.path),
            parts.query,
        ));
    }
    let base = split(base)?;
    if let Some(rest) = reference.strip_prefix("//") {
        let absolute = format!("{}://{rest}", base.scheme);
        let parts = split(&absolute)?;
        return Some(compose(
            base.scheme,
            parts.authority,
            &remove_dot_segments(parts.path),
            parts.query,
        ));
    }
    let (path, query) = match reference.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (reference, None),
    };
    let path = if path.is_empty() {
        return Some(compose(
            base.scheme,
            base.authority,
            base.path,
            query.or(base.query),
        ));
    } else if path.starts_with('/') {
        remove_dot_segments(path)
    } else {
        // RFC 3986 §5.2.3: the base path up to its last `/`, then the reference.
        let dir = base.path.rfind('/').map_or("/", |at| &base.path[..=at]);
        remove_dot_segments(&format!("{dir}{path}"))
    };
    Some(compose(base.scheme, base.authority, &path, query))
}

fn compose(scheme: &str, authority: &str, path: &str, query: Option<&str>) -> String {
    let mut out = format!("{scheme}://{authority}{path}");
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// RFC 3986 §5.2.4 on a path that is empty or starts with `/` (literal dot
/// segments only, as the RFC's algorithm; [`Key::of`] also removes encoded ones).
fn remove_dot_segments(path: &str) -> String {
    let Some(rest) = path.strip_prefix('/') else {
        return path.to_owned();
    };
    let raw: Vec<&str> = rest.split('/').collect();
    let last = raw.len() - 1;
    let mut out: Vec<&str> = Vec::new();
    for (i, segment) in raw.into_iter().enumerate() {
        match segment {
            "." | ".." => {
                if segment == ".." {
                    out.pop();
                }
                if i == last {
                    out.push("");
                }
            }
            _ => out.push(segment),
        }
    }
    format!("/{}", out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(uri: &str) -> Key {
        Key::of(uri).unwrap_or_else(|| panic!("no key for {uri}"))
    }

    #[test]
    fn split_finds_every_part() {
        let parts = split("skill://acme/billing/SKILL.md?x=1#top").unwrap();
        assert_eq!(parts.scheme, "skill");
        assert_eq!(parts.authority, "acme");
        assert_eq!(parts.path, "/billing/SKILL.md");
        assert_eq!(parts.query, Some("x=1"));
        assert_eq!(parts.fragment, Some("top"));
        let bare = split("skill://git-workflow").unwrap();
        assert_eq!((bare.authority, bare.path), ("git-workflow", ""));
        assert_eq!(split("urn:skills:x/SKILL.md"), None);
        assert_eq!(split("/no/scheme"), None);
        assert_eq!(split("a/b:c"), None);
    }

    #[test]
    fn percent_encoding_differences_share_a_key() {
        assert_eq!(
            key("skill://pdf/docs/Q&A.md"),
            key("skill://pdf/docs/Q%26A.md")
        );
        assert_eq!(key("skill://pdf/%C3%A9.md"), key("skill://pdf/é.md"));
        assert_eq!(key("SKILL://PDF/a.md"), key("skill://pdf/a.md"));
        assert_eq!(key("skill://pdf/%7e.md"), key("skill://pdf/~.md"));
        // The path is case-sensitive; a decoded `/` stays inside its segment.
        assert_ne!(key("skill://pdf/A.md"), key("skill://pdf/a.md"));
        assert_ne!(key("skill://pdf/a%2Fb"), key("skill://pdf/a/b"));
        assert_eq!(Key::of("skill://pdf/%zz"), None);
        assert_eq!(Key::of("skill://pdf/a%2"), None);
        assert_eq!(Key::of("skill://pdf/a?q"), None);
        assert_eq!(Key::of("skill://pdf/a#f"), None);
    }

    #[test]
    fn dot_segments_are_removed_after_decoding() {
        assert_eq!(key("skill://a/b/./c/../d.md"), key("skill://a/b/d.md"));
        assert_eq!(key("skill://a/b/%2E%2E/d.md"), key("skill://a/d.md"));
        assert_eq!(key("skill://a/../../d.md"), key("skill://a/d.md"));
        assert_eq!(key("skill://a/b/.").segments(), [b"b".to_vec(), vec![]]);
        assert_eq!(key("skill://a/b/..").segments(), [Vec::<u8>::new()]);
    }

    #[test]
    fn under_needs_the_same_origin_and_one_more_segment() {
        let root = key("skill://acme/billing/refunds");
        assert!(key("skill://acme/billing/refunds/SKILL.md").is_under(&root));
        assert!(key("skill://acme/billing/refunds/a/../b.md").is_under(&root));
        assert!(!key("skill://acme/billing/refunds").is_under(&root));
        assert!(!key("skill://acme/billing/refunds/../x.md").is_under(&root));
        assert!(!key("skill://acme/billing/refunds-evil/x.md").is_under(&root));
        assert!(!key("skill://other/billing/refunds/x.md").is_under(&root));
        assert!(!key("file://acme/billing/refunds/x.md").is_under(&root));
        let single = key("skill://git-workflow");
        assert!(key("skill://git-workflow/SKILL.md").is_under(&single));
        assert!(!key("skill://git-workflow/../x/SKILL.md").is_under(&key("skill://y")));
    }

    #[test]
    fn reg_names() {
        for ok in [
            "acme",
            "pdf-processing",
            "a.b_c~d",
            "x%20y",
            "é",
            "a!$&'()*+,;=",
        ] {
            assert!(is_reg_name(ok), "{ok}");
        }
        for bad in ["user@host", "host:80", "[::1]", "a%zz", "a b", "a/b"] {
            assert!(!is_reg_name(bad), "{bad}");
        }
    }

    #[test]
    fn references_resolve_as_rfc_3986_says() {
        let base = "skill://acme/billing/refunds/";
        for (reference, want) in [
            (
                "references/GUIDE.md",
                "skill://acme/billing/refunds/references/GUIDE.md",
            ),
            ("./a.md", "skill://acme/billing/refunds/a.md"),
            ("a/../b.md", "skill://acme/billing/refunds/b.md"),
            ("../x.md", "skill://acme/billing/x.md"),
            ("../../../../x.md", "skill://acme/x.md"),
            ("/x.md", "skill://acme/x.md"),
            ("//evil/x.md", "skill://evil/x.md"),
            ("https://evil.example/x.md", "https://evil.example/x.md"),
            ("GUIDE.md#part-2", "skill://acme/billing/refunds/GUIDE.md"),
            ("GUIDE.md?v=2", "skill://acme/billing/refunds/GUIDE.md?v=2"),
            ("", "skill://acme/billing/refunds/"),
            ("#only", "skill://acme/billing/refunds/"),
            (".", "skill://acme/billing/refunds/"),
        ] {
            assert_eq!(
                resolve(base, reference).as_deref(),
                Some(want),
                "{reference}"
            );
        }
    }
}
