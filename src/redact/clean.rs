//! Cleaning a line before it is redacted and kept: terminal escape sequences
//! stripped, control and bidi characters turned into spaces, whitespace collapsed,
//! with a variant that tracks where given byte ranges end up.

use super::span::Span;
use super::work::{self, Pass};

// ---------------------------------------------------------------------------------
// Cleaning: escape sequences, control characters, whitespace
// ---------------------------------------------------------------------------------

/// Characters that reorder displayed text (Trojan Source) and are never needed in a log.
pub(super) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Strips terminal escape sequences, turns other control and bidi characters into
/// spaces, and collapses whitespace runs to one space, trimming both ends.
pub(super) fn clean_line(text: &str) -> String {
    clean_tracking(text, &[]).0
}

/// [`clean_line`], also telling where the byte ranges `ranges` of `text` (sorted and
/// disjoint) end up: for each, the span of the cleaned text that holds whatever of it
/// survives cleaning, without a collapsed space in front. A range whose characters
/// all vanish (eaten by an escape sequence, or blank) yields no span.
///
/// An escape sequence may start before a range and consume its first characters
/// (`ESC [` before `correct-horse` takes the `c` as its final byte), or swallow all
/// of it (an OSC string); either way the characters that remain are in the span.
pub(super) fn clean_tracking(text: &str, ranges: &[(usize, usize)]) -> (String, Vec<Span>) {
    let mut out = String::with_capacity(text.len());
    let mut spans = Vec::new();
    let mut space = false;
    // The next range endpoint to reach (`2 * i` starts range `i`, `2 * i + 1` ends it)
    // and where the open range starts in `out`.
    let (mut endpoint, mut open) = (0, 0);
    let mut chars = text.chars();
    loop {
        // Every character before `offset` has been handled: what it produced is in
        // `out`, except a pending space, which belongs to the next visible character.
        let offset = text.len() - chars.as_str().len();
        work::count(Pass::Clean, 1);
        while let Some(&(start, end)) = ranges.get(endpoint / 2) {
            work::count(Pass::Clean, 1);
            let starts = endpoint % 2 == 0;
            if (if starts { start } else { end }) > offset {
                break;
            }
            if starts {
                open = out.len() + usize::from(space);
            } else if out.len() > open {
                spans.push(Span::redact(open, out.len()));
            }
            endpoint += 1;
        }
        let Some(c) = chars.next() else {
            break;
        };
        if c == '\u{1b}' {
            let left = chars.as_str().len();
            skip_escape(&mut chars);
            work::count(Pass::Clean, left - chars.as_str().len());
            continue;
        }
        if c.is_whitespace() || c.is_control() || is_bidi_control(c) {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    (out, spans)
}

/// Consumes the rest of an escape sequence whose ESC has just been read.
pub(super) fn skip_escape(chars: &mut std::str::Chars<'_>) {
    match chars.next() {
        // CSI: parameters and intermediates, then one final byte.
        Some('[') => {
            for c in chars.by_ref() {
                if !('\u{20}'..='\u{3f}').contains(&c) {
                    break;
                }
            }
        }
        // OSC (and the other string sequences): up to BEL or ST (ESC \).
        Some(']' | 'P' | 'X' | '^' | '_') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    chars.next();
                    break;
                }
            }
        }
        // Two-byte sequences (and a charset designation's one extra byte).
        Some('(' | ')' | '*' | '+' | '#' | '%') => {
            chars.next();
        }
        _ => {}
    }
}
