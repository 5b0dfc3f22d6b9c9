//! The presentation hints servers attach to entries and content blocks
//! (beyond-tools.md §1.3, §1.4): `annotations`, `icons` and `mimeType`. Hints,
//! never authorisation: nothing here is fetched, sniffed or rendered.

use serde::Serialize;
use serde_json::{Map, Value};

use super::members::{take_string, take_value};
use crate::text::check_bounded_display;

/// The most icons one entry may list (fixed, beyond-tools.md §8).
pub const MAX_ICONS: usize = 8;
/// The most UTF-8 bytes of one icon's `src` (fixed: 64 KiB, room for a `data:` URI).
pub const MAX_ICON_SRC_BYTES: usize = 65_536;
/// The most UTF-8 bytes of a `mimeType` (fixed).
pub const MAX_MIME_TYPE_BYTES: usize = 255;
/// The most characters of one name in a `mimeType` (RFC 6838 §4.2).
const MAX_MIME_NAME_CHARS: usize = 127;

/// Who a piece of content is for, or who speaks a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// The person using the host.
    User,
    /// The model.
    Assistant,
}

impl Role {
    /// `"user"` or `"assistant"`; anything else is `None`.
    pub(crate) fn parse(value: &Value) -> Option<Role> {
        match value.as_str()? {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            _ => None,
        }
    }
}

/// `annotations` on a resource, a template or a content block: hints for the
/// host, never authorisation.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// Who the content is for, each role once, in the order first listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// How important the content is, in `[0, 1]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When the content last changed: an ISO 8601 string as the server sent it,
    /// not parsed (server-authored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

impl Annotations {
    /// Reads an `annotations` value; the error is the rule broken. Members other
    /// than the three are ignored.
    pub(crate) fn parse(value: &Value) -> Result<Annotations, String> {
        let Value::Object(map) = value else {
            return Err("annotations is not an object".to_owned());
        };
        let audience = match map.get("audience") {
            None => None,
            Some(Value::Array(roles)) => {
                let mut audience: Vec<Role> = Vec::with_capacity(2);
                for role in roles {
                    let role = Role::parse(role).ok_or(
                        "annotations: audience holds a value other than \"user\" and \"assistant\"",
                    )?;
                    if !audience.contains(&role) {
                        audience.push(role);
                    }
                }
                Some(audience)
            }
            Some(_) => return Err("annotations: audience is not an array".to_owned()),
        };
        let priority = match map.get("priority") {
            None => None,
            Some(value) => match value.as_f64() {
                Some(p) if (0.0..=1.0).contains(&p) => Some(p),
                _ => return Err("annotations: priority is not a number in [0, 1]".to_owned()),
            },
        };
        let last_modified = super::members::string_of(map, "lastModified")
            .map_err(|rule| format!("annotations: {rule}"))?;
        Ok(Annotations {
            audience,
            priority,
            last_modified: last_modified.map(str::to_owned),
        })
    }
}

/// The theme an icon is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Theme {
    /// A light background.
    Light,
    /// A dark background.
    Dark,
}

/// One entry of `icons` (2025-11-25 and later). **Never fetch `src`
/// automatically**: it is egress, and an SVG can carry script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Icon {
    /// Where the icon is (often a `data:` URI), as the server spelled it; at
    /// most [`MAX_ICON_SRC_BYTES`], and it passes the URI rules.
    pub src: String,
    /// Its media type, if given (a hint).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The sizes it suits: each `WxH` (decimal) or `any`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<String>,
    /// The theme it is drawn for, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theme: Option<Theme>,
}

/// Reads an entry's `icons` member (absent is empty); the error is the rule
/// broken.
pub(crate) fn take_icons(entry: &mut Map<String, Value>) -> Result<Vec<Icon>, String> {
    let icons = match entry.remove("icons") {
        None => return Ok(Vec::new()),
        Some(Value::Array(icons)) => icons,
        Some(_) => return Err("icons is not an array".to_owned()),
    };
    if icons.len() > MAX_ICONS {
        return Err(format!(
            "icons lists {} icons; the fixed limit is {MAX_ICONS}",
            icons.len()
        ));
    }
    icons
        .into_iter()
        .enumerate()
        .map(|(position, icon)| {
            icon_from(icon).map_err(|rule| format!("icons[{position}]: {rule}"))
        })
        .collect()
}

fn icon_from(icon: Value) -> Result<Icon, String> {
    let Value::Object(mut icon) = icon else {
        return Err("the icon is not an object".to_owned());
    };
    let src = take_string(&mut icon, "src")?.ok_or("src is missing")?;
    crate::uri::check_uri(&src, MAX_ICON_SRC_BYTES, "the fixed icon src limit")?;
    let mime_type = take_mime_type(&mut icon)?;
    let sizes = match take_value(&mut icon, "sizes") {
        None => Vec::new(),
        Some(Value::Array(sizes)) => sizes
            .into_iter()
            .map(|size| match size {
                Value::String(size) if is_icon_size(&size) => Ok(size),
                _ => Err("sizes holds an entry other than \"WxH\" or \"any\"".to_owned()),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("sizes is not an array".to_owned()),
    };
    let theme = match take_value(&mut icon, "theme") {
        None => None,
        Some(theme) => match theme.as_str() {
            Some("light") => Some(Theme::Light),
            Some("dark") => Some(Theme::Dark),
            _ => return Err("theme is neither \"light\" nor \"dark\"".to_owned()),
        },
    };
    Ok(Icon {
        src,
        mime_type,
        sizes,
        theme,
    })
}

/// `any`, or `WxH` with decimal `W` and `H` (`48x48`).
fn is_icon_size(size: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit());
    size == "any"
        || size
            .split_once('x')
            .is_some_and(|(w, h)| digits(w) && digits(h))
}

/// Reads an optional `mimeType` member; the error is the rule broken.
pub(crate) fn take_mime_type(entry: &mut Map<String, Value>) -> Result<Option<String>, String> {
    let mime_type = take_string(entry, "mimeType")?;
    if let Some(mime_type) = &mime_type {
        check_mime_type(mime_type)?;
    }
    Ok(mime_type)
}

/// An optional `mimeType` member, borrowed ([`take_mime_type`]'s rules).
pub(crate) fn mime_type_of(entry: &Map<String, Value>) -> Result<Option<&str>, String> {
    let mime_type = super::members::string_of(entry, "mimeType")?;
    if let Some(mime_type) = mime_type {
        check_mime_type(mime_type)?;
    }
    Ok(mime_type)
}

/// Checks a `mimeType` (beyond-tools.md §1.3): at most [`MAX_MIME_TYPE_BYTES`],
/// the display-text rules, and the form `type "/" subtype *(";" parameter)`:
/// RFC 6838 names of at most 127 characters, parameters `name=value` (an RFC
/// 9110 token or quoted string), spaces allowed around `;`. Only a hint: the
/// form is checked, never trusted (content is never sniffed or rendered by it).
fn check_mime_type(text: &str) -> Result<(), String> {
    check_bounded_display("mimeType", text, MAX_MIME_TYPE_BYTES, "the fixed limit")?;
    if is_media_type(text.as_bytes()) {
        Ok(())
    } else {
        Err("mimeType is not of the form type/subtype *(;parameter)".to_owned())
    }
}

fn is_media_type(b: &[u8]) -> bool {
    let Some(mut i) = restricted_name(b, 0) else {
        return false;
    };
    if b.get(i) != Some(&b'/') {
        return false;
    }
    let Some(end) = restricted_name(b, i + 1) else {
        return false;
    };
    i = end;
    let skip_spaces = |mut i: usize| {
        while b.get(i) == Some(&b' ') {
            i += 1;
        }
        i
    };
    loop {
        i = skip_spaces(i);
        match b.get(i) {
            None => return true,
            Some(b';') => i = skip_spaces(i + 1),
            Some(_) => return false,
        }
        // An empty parameter (`;;`, or a trailing `;`) is allowed (RFC 9110).
        if matches!(b.get(i), None | Some(b';')) {
            continue;
        }
        let Some(end) = token(b, i) else {
            return false;
        };
        if b.get(end) != Some(&b'=') {
            return false;
        }
        let value = match b.get(end + 1) {
            Some(b'"') => quoted_string(b, end + 1),
            _ => token(b, end + 1),
        };
        let Some(end) = value else {
            return false;
        };
        i = end;
    }
}

/// RFC 6838 `restricted-name` starting at `start`: where it ends.
fn restricted_name(b: &[u8], start: usize) -> Option<usize> {
    if !b.get(start)?.is_ascii_alphanumeric() {
        return None;
    }
    let len = b[start..]
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&c))
        .count();
    (len <= MAX_MIME_NAME_CHARS).then_some(start + len)
}

/// RFC 9110 `token` (1 to 127 `tchar`s here) starting at `start`: where it ends.
fn token(b: &[u8], start: usize) -> Option<usize> {
    let len = b[start.min(b.len())..]
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c))
        .count();
    (1..=MAX_MIME_NAME_CHARS)
        .contains(&len)
        .then_some(start + len)
}

/// RFC 9110 `quoted-string` (ASCII only) starting at the `"` at `start`: where
/// it ends.
fn quoted_string(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        match *b.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => {
                let escaped = *b.get(i + 1)?;
                if !(escaped == b' ' || escaped.is_ascii_graphic()) {
                    return None;
                }
                i += 2;
            }
            c if c == b' ' || c.is_ascii_graphic() => i += 1,
            _ => return None,
        }
    }
}
