//! The character rules every server-authored name, label and URI obeys (the
//! tool-name rules of the contract, shared): no control character (Unicode
//! Cc), no format character (Cf, which holds the bidi controls), no line or
//! paragraph separator (U+2028/U+2029), and no U+FFFD, which is what a lone
//! UTF-16 surrogate becomes once parsed. Each check names the rule a text
//! broke, never the text (it is server-authored).

/// A character server-authored text may not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forbidden {
    /// Unicode Cc.
    Control,
    /// Unicode Cf.
    Format,
    /// U+2028 or U+2029.
    Separator,
    /// U+FFFD.
    Replacement,
}

impl Forbidden {
    /// What the character is, for a message ("contains ...").
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Forbidden::Control => "a control character (Unicode Cc)",
            Forbidden::Format => "a format character (Unicode Cf)",
            Forbidden::Separator => "a line or paragraph separator (U+2028/U+2029)",
            Forbidden::Replacement => "U+FFFD (a lone surrogate or a replacement character)",
        }
    }
}

/// The rule `c` breaks, if any.
pub(crate) fn forbidden_char(c: char) -> Option<Forbidden> {
    if is_control(c) {
        Some(Forbidden::Control)
    } else if is_format(c) {
        Some(Forbidden::Format)
    } else if c == '\u{2028}' || c == '\u{2029}' {
        Some(Forbidden::Separator)
    } else if c == char::REPLACEMENT_CHARACTER {
        Some(Forbidden::Replacement)
    } else {
        None
    }
}

/// The first rule `text` breaks, if any.
pub(crate) fn forbidden_in(text: &str) -> Option<Forbidden> {
    text.chars().find_map(forbidden_char)
}

/// Unicode general category Cc.
fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1F}' | '\u{7F}'..='\u{9F}')
}

/// Every code point of general category Cf in Unicode 16.0 (unchanged since 15.0),
/// as sorted, disjoint, inclusive ranges.
const FORMAT_RANGES: [(u32, u32); 21] = [
    (0x00AD, 0x00AD),   // SOFT HYPHEN
    (0x0600, 0x0605),   // ARABIC NUMBER SIGN .. ARABIC NUMBER MARK ABOVE
    (0x061C, 0x061C),   // ARABIC LETTER MARK
    (0x06DD, 0x06DD),   // ARABIC END OF AYAH
    (0x070F, 0x070F),   // SYRIAC ABBREVIATION MARK
    (0x0890, 0x0891),   // ARABIC POUND MARK ABOVE, ARABIC PIASTRE MARK ABOVE
    (0x08E2, 0x08E2),   // ARABIC DISPUTED END OF AYAH
    (0x180E, 0x180E),   // MONGOLIAN VOWEL SEPARATOR
    (0x200B, 0x200F),   // ZERO WIDTH SPACE .. RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),   // LEFT-TO-RIGHT EMBEDDING .. RIGHT-TO-LEFT OVERRIDE
    (0x2060, 0x2064),   // WORD JOINER .. INVISIBLE PLUS
    (0x2066, 0x206F),   // LEFT-TO-RIGHT ISOLATE .. NOMINAL DIGIT SHAPES
    (0xFEFF, 0xFEFF),   // ZERO WIDTH NO-BREAK SPACE
    (0xFFF9, 0xFFFB),   // INTERLINEAR ANNOTATION ANCHOR .. TERMINATOR
    (0x110BD, 0x110BD), // KAITHI NUMBER SIGN
    (0x110CD, 0x110CD), // KAITHI NUMBER SIGN ABOVE
    (0x13430, 0x1343F), // EGYPTIAN HIEROGLYPH VERTICAL JOINER .. END WALLED ENCLOSURE
    (0x1BCA0, 0x1BCA3), // SHORTHAND FORMAT LETTER OVERLAP .. UP STEP
    (0x1D173, 0x1D17A), // MUSICAL SYMBOL BEGIN BEAM .. END PHRASE
    (0xE0001, 0xE0001), // LANGUAGE TAG
    (0xE0020, 0xE007F), // TAG SPACE .. CANCEL TAG
];

/// Unicode general category Cf.
fn is_format(c: char) -> bool {
    let c = u32::from(c);
    FORMAT_RANGES
        .binary_search_by(|&(low, high)| {
            if high < c {
                std::cmp::Ordering::Less
            } else if low > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_is_named_and_plain_text_passes() {
        assert_eq!(forbidden_in("get_weather é 天気"), None);
        assert_eq!(forbidden_in("a\u{7}b"), Some(Forbidden::Control));
        assert_eq!(forbidden_in("a\u{85}b"), Some(Forbidden::Control));
        assert_eq!(forbidden_in("pay\u{202E}droW"), Some(Forbidden::Format));
        assert_eq!(forbidden_in("a\u{2028}"), Some(Forbidden::Separator));
        assert_eq!(forbidden_in("\u{FFFD}"), Some(Forbidden::Replacement));
        assert_eq!(forbidden_in("\u{E0041}"), Some(Forbidden::Format));
        assert_eq!(forbidden_in("\u{E0080}"), None);
    }

    #[test]
    fn the_format_table_is_sorted_and_exact() {
        for pair in FORMAT_RANGES.windows(2) {
            assert!(pair[0].0 <= pair[0].1 && pair[0].1 < pair[1].0);
        }
        let count: u32 = FORMAT_RANGES.iter().map(|(l, h)| h - l + 1).sum();
        // Unicode 15.0/16.0: 170 code points of category Cf.
        assert_eq!(count, 170);
        for &(low, high) in &FORMAT_RANGES {
            for c in [low, high] {
                assert!(is_format(char::from_u32(c).unwrap()), "{c:X}");
            }
        }
        for c in [
            0x00AC, 0x00AE, 0x05FF, 0x0606, 0x061B, 0x061D, 0x06DC, 0x06DE, 0x070E, 0x0710, 0x088F,
            0x0892, 0x08E1, 0x08E3, 0x180D, 0x180F, 0x200A, 0x2010, 0x2029, 0x202F, 0x205F, 0x2065,
            0x2070, 0xFEFE, 0xFF00, 0xFFF8, 0xFFFC, 0xFFFD, 0x110BC, 0x110BE, 0x110CC, 0x110CE,
            0x1342F, 0x13440, 0x1BC9F, 0x1BCA4, 0x1D172, 0x1D17B, 0xE0000, 0xE0002, 0xE001F,
            0xE0080, 0x41, 0x0,
        ] {
            assert!(!is_format(char::from_u32(c).unwrap()), "{c:X}");
        }
        assert!(is_control('\u{0}') && is_control('\u{9f}') && !is_control('\u{a0}'));
        for c in '\u{0}'..='\u{10FFFF}' {
            assert_eq!(is_control(c), c.is_control(), "{:X}", c as u32);
        }
    }
}
