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

/// The most expressions a URI template may hold (fixed, beyond-tools.md §1.2).
pub(crate) const MAX_TEMPLATE_EXPRESSIONS: usize = 32;
/// The most variables one expression of a URI template may list (fixed).
pub(crate) const MAX_TEMPLATE_VARIABLES: usize = 32;

/// Checks a resource template (RFC 6570, levels 1 to 4): the URI rules, with
/// `{` and `}` allowed around expressions; braces balanced and never nested;
/// each expression an optional operator (`+ # . / ; ? &`; the reserved `= , !
/// @ |` are refused) and 1 to [`MAX_TEMPLATE_VARIABLES`] variable specs
/// (`varname`, `varname*` or `varname:1..9999`); at most
/// [`MAX_TEMPLATE_EXPRESSIONS`] expressions.
pub(crate) fn check_uri_template(
    template: &str,
    max_bytes: usize,
    option: &str,
) -> Result<(), String> {
    check(template, max_bytes, option, true)?;
    check_expressions(template)
}

/// The RFC 6570 expression rules of a template that passed the URI rules.
fn check_expressions(template: &str) -> Result<(), String> {
    let mut rest = template;
    let mut expressions = 0usize;
    while let Some(at) = rest.find(['{', '}']) {
        if rest.as_bytes()[at] == b'}' {
            return Err("a URI template has a '}' outside an expression".to_owned());
        }
        let inside = &rest[at + 1..];
        let end = match inside.find(['{', '}']) {
            Some(end) if inside.as_bytes()[end] == b'}' => end,
            Some(_) => return Err("a URI template nests an expression".to_owned()),
            None => return Err("a URI template has an unclosed expression".to_owned()),
        };
        check_expression(&inside[..end])?;
        expressions += 1;
        rest = &inside[end + 1..];
    }
    if expressions > MAX_TEMPLATE_EXPRESSIONS {
        return Err(format!(
            "a URI template has {expressions} expressions; the fixed limit is {MAX_TEMPLATE_EXPRESSIONS}"
        ));
    }
    Ok(())
}

/// One expression, without its braces.
fn check_expression(expression: &str) -> Result<(), String> {
    let body = match expression.as_bytes().first() {
        Some(b'+' | b'#' | b'.' | b'/' | b';' | b'?' | b'&') => &expression[1..],
        Some(b'=' | b',' | b'!' | b'@' | b'|') => {
            return Err("a URI template uses a reserved operator".to_owned());
        }
        _ => expression,
    };
    let variables = body.split(',').count();
    if variables > MAX_TEMPLATE_VARIABLES {
        return Err(format!(
            "a URI template expression lists {variables} variables; the fixed limit is {MAX_TEMPLATE_VARIABLES}"
        ));
    }
    for spec in body.split(',') {
        let (name, modifier) = match spec.find([':', '*']) {
            Some(at) => spec.split_at(at),
            None => (spec, ""),
        };
        if !is_varname(name) {
            return Err("a URI template has an invalid variable name".to_owned());
        }
        let valid_modifier = match modifier.as_bytes() {
            [] | [b'*'] => true,
            [b':', digits @ ..] => {
                (1..=4).contains(&digits.len())
                    && digits.iter().all(u8::is_ascii_digit)
                    && digits[0] != b'0'
            }
            _ => false,
        };
        if !valid_modifier {
            return Err("a URI template has an invalid variable modifier".to_owned());
        }
    }
    Ok(())
}

/// RFC 6570 `varname = varchar *( ["."] varchar )`, `varchar = ALPHA / DIGIT /
/// "_" / pct-encoded`.
fn is_varname(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes[0] == b'.' || bytes[bytes.len() - 1] == b'.' {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                if !(i + 2 < bytes.len()
                    && bytes[i + 1].is_ascii_hexdigit()
                    && bytes[i + 2].is_ascii_hexdigit())
                {
                    return false;
                }
                i += 3;
                continue;
            }
            b'.' if bytes[i - 1] == b'.' => return false,
            b'.' | b'_' => {}
            b if b.is_ascii_alphanumeric() => {}
            _ => return false,
        }
        i += 1;
    }
    true
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

    fn template(text: &str) -> Result<(), String> {
        check_uri_template(text, 4096, "maxUriBytes")
    }

    #[test]
    fn a_template_may_hold_expressions() {
        for ok in [
            "file:///{+path}{?q,lang}",
            "file:///{path}",
            "https://x/{a.b}/{c_1:30}{/list*}{#frag}{;p}{&more}{.ext}",
            "db://table/{%41name}",
            "file:///no-expression",
        ] {
            assert_eq!(template(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            template("{scheme}://x"),
            Err("a URI template does not start with a scheme".to_owned())
        );
    }

    #[test]
    fn template_expressions_follow_rfc_6570() {
        for (bad, rule) in [
            (
                "file:///a}",
                "a URI template has a '}' outside an expression",
            ),
            ("file:///{a", "a URI template has an unclosed expression"),
            ("file:///{a{b}}", "a URI template nests an expression"),
            ("file:///{}", "a URI template has an invalid variable name"),
            ("file:///{+}", "a URI template has an invalid variable name"),
            ("file:///{=a}", "a URI template uses a reserved operator"),
            ("file:///{|a}", "a URI template uses a reserved operator"),
            (
                "file:///{a,}",
                "a URI template has an invalid variable name",
            ),
            (
                "file:///{a-b}",
                "a URI template has an invalid variable name",
            ),
            (
                "file:///{a..b}",
                "a URI template has an invalid variable name",
            ),
            (
                "file:///{.a.}",
                "a URI template has an invalid variable name",
            ),
            (
                "file:///{%4}",
                "a URI template has an invalid variable name",
            ),
            (
                "file:///{a:0}",
                "a URI template has an invalid variable modifier",
            ),
            (
                "file:///{a:10000}",
                "a URI template has an invalid variable modifier",
            ),
            (
                "file:///{a:}",
                "a URI template has an invalid variable modifier",
            ),
            (
                "file:///{a*:2}",
                "a URI template has an invalid variable modifier",
            ),
            (
                "file:///{a**}",
                "a URI template has an invalid variable modifier",
            ),
        ] {
            assert_eq!(template(bad), Err(rule.to_owned()), "{bad:?}");
        }
    }

    #[test]
    fn template_counts_are_bounded() {
        let at_limit = format!("file:///{}", "{a}".repeat(MAX_TEMPLATE_EXPRESSIONS));
        assert_eq!(template(&at_limit), Ok(()));
        assert_eq!(
            template(&format!("{at_limit}{{b}}")),
            Err("a URI template has 33 expressions; the fixed limit is 32".to_owned())
        );
        let names: Vec<String> = (0..MAX_TEMPLATE_VARIABLES)
            .map(|i| format!("v{i}"))
            .collect();
        let at_limit = format!("file:///{{?{}}}", names.join(","));
        assert_eq!(template(&at_limit), Ok(()));
        assert_eq!(
            template(&format!("file:///{{?{},x}}", names.join(","))),
            Err("a URI template expression lists 33 variables; the fixed limit is 32".to_owned())
        );
    }
}
