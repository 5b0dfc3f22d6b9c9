//! The rules for every URI a server sends (resources, their contents, links,
//! embedded resources, `resources/updated`, skill entries) and for resource
//! templates: non-empty, within a byte bound, an RFC 3986 scheme first, and no
//! control, format, whitespace or separator character (servers percent-encode a
//! space). Non-ASCII letters are allowed (IRI style). URIs are compared byte
//! for byte and echoed as the server spelled them; a scheme never authorises
//! a local action (nothing here resolves, fetches or opens a URI).

use crate::text::forbidden_char;

/// Checks a URI; the error is the rule broken (crate-authored text, never the
/// URI). `max_bytes` is the option's value; `option` its name, for the message.
pub(crate) fn check_uri(uri: &str, max_bytes: usize, option: &str) -> Result<(), String> {
    check(uri, max_bytes, option, false)
}

/// Checks a resource template (RFC 6570): the URI rules, with `{` and `}`
/// allowed.
pub(crate) fn check_uri_template(
    template: &str,
    max_bytes: usize,
    option: &str,
) -> Result<(), String> {
    check(template, max_bytes, option, true)
}

fn check(uri: &str, max_bytes: usize, option: &str, template: bool) -> Result<(), String> {
    let what = if template { "URI template" } else { "URI" };
    if uri.is_empty() {
        return Err(format!("a {what} is empty"));
    }
    if uri.len() > max_bytes {
        return Err(format!(
            "a {what} of {} bytes; {option} is {max_bytes}",
            uri.len()
        ));
    }
    if !has_scheme(uri) {
        return Err(format!("a {what} does not start with a scheme"));
    }
    for c in uri.chars() {
        if let Some(rule) = forbidden_char(c) {
            return Err(format!("a {what} contains {}", rule.describe()));
        }
        if c.is_whitespace() {
            return Err(format!("a {what} contains whitespace"));
        }
        if !template && (c == '{' || c == '}') {
            return Err(format!("a {what} contains '{{' or '}}'"));
        }
    }
    Ok(())
}

/// `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"` at the start.
fn has_scheme(uri: &str) -> bool {
    let Some(colon) = uri.find(':') else {
        return false;
    };
    let scheme = &uri.as_bytes()[..colon];
    scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(text: &str) -> Result<(), String> {
        check_uri(text, 64, "maxUriBytes")
    }

    #[test]
    fn a_uri_needs_a_scheme_and_clean_characters() {
        for ok in [
            "file:///project/src/main.rs",
            "skill://acme/billing/refunds/SKILL.md",
            "https://example.com/a?b=c#d",
            "x-custom+v1.2:thing",
            "file:///path/to/file%20name.txt",
            "file:///données/é.txt",
        ] {
            assert_eq!(uri(ok), Ok(()), "{ok}");
        }
        for (bad, rule) in [
            ("", "a URI is empty"),
            ("no-scheme/here", "a URI does not start with a scheme"),
            (":nothing", "a URI does not start with a scheme"),
            ("1http://x", "a URI does not start with a scheme"),
            ("ht tp://x", "a URI does not start with a scheme"),
            ("file:///a b", "a URI contains whitespace"),
            ("file:///a\u{A0}b", "a URI contains whitespace"),
            (
                "file:///a\nb",
                "a URI contains a control character (Unicode Cc)",
            ),
            (
                "file:///a\u{202E}b",
                "a URI contains a format character (Unicode Cf)",
            ),
            (
                "file:///a\u{2029}",
                "a URI contains a line or paragraph separator (U+2028/U+2029)",
            ),
            ("file:///{path}", "a URI contains '{' or '}'"),
        ] {
            assert_eq!(uri(bad), Err(rule.to_owned()), "{bad:?}");
        }
    }

    #[test]
    fn the_byte_bound_names_the_count_and_the_option() {
        let long = format!("file:///{}", "a".repeat(60));
        assert_eq!(
            uri(&long),
            Err("a URI of 68 bytes; maxUriBytes is 64".to_owned())
        );
        assert_eq!(uri(&long[..64]), Ok(()));
    }

    #[test]
    fn a_template_may_hold_expressions() {
        assert_eq!(
            check_uri_template("file:///{+path}{?q,lang}", 64, "maxUriBytes"),
            Ok(())
        );
        assert_eq!(
            check_uri_template("{scheme}://x", 64, "maxUriBytes"),
            Err("a URI template does not start with a scheme".to_owned())
        );
    }
}
