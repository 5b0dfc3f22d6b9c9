//! Strict base64 for `blob` and `data` (beyond-tools.md §1.3, decision Q4), and
//! the budget of decoded bytes one result may hold.
//!
//! The rules: the RFC 4648 standard alphabet (so no URL-safe `-` or `_`), no
//! whitespace or line breaks, padding optional but, when present, canonical
//! (`=` or `==` completing the last quantum, nothing after it), and no
//! non-zero trailing bits (one encoding per byte string). The decoded length is
//! computed from the text's length alone and charged to the budget **before**
//! anything is decoded, so a claimed size past the bound allocates nothing.
//! [`check`] applies the same rules without keeping the bytes (a tool result's
//! blocks are checked, not decoded): it decodes into a buffer on the stack, one
//! [`CHECK_CHUNK`] of text at a time.

use base64::Engine as _;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::{DecodePaddingMode, general_purpose};

/// Padded input: the padding must be exactly what the last quantum needs.
const PADDED: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(false),
);

/// Unpadded input.
const UNPADDED: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(false),
);

/// The decoded bytes one result may still hold (`maxResourceBytes`), summed
/// over its items: base64 counted decoded, text in UTF-8 bytes.
#[derive(Debug)]
pub(crate) struct Budget {
    used: usize,
    limit: usize,
}

impl Budget {
    pub(crate) fn new(limit: usize) -> Self {
        Budget { used: 0, limit }
    }

    /// Charges `bytes`; the error names the total reached and the option.
    pub(crate) fn charge(&mut self, bytes: usize) -> Result<(), String> {
        let total = self.used.saturating_add(bytes);
        if total > self.limit {
            return Err(format!(
                "the result holds {total} bytes of content by this item; maxResourceBytes is {}",
                self.limit
            ));
        }
        self.used = total;
        Ok(())
    }
}

/// The length `text` decodes to, from its length and padding alone; `None`
/// when no base64 text has that shape.
pub(crate) fn decoded_len(text: &str) -> Option<usize> {
    let len = text.len();
    let padding = text.bytes().rev().take_while(|&b| b == b'=').count();
    if padding > 0 {
        // Canonical padding completes a 4-character quantum with 1 or 2 `=`.
        return (padding <= 2 && len.is_multiple_of(4)).then(|| len / 4 * 3 - padding);
    }
    match len % 4 {
        0 => Some(len / 4 * 3),
        2 => Some(len / 4 * 3 + 1),
        3 => Some(len / 4 * 3 + 2),
        _ => None,
    }
}

/// Decodes `text` (member `what`, for messages) under the strict rules,
/// charging its decoded length to `budget` first.
pub(crate) fn decode(what: &str, text: &str, budget: &mut Budget) -> Result<Vec<u8>, String> {
    let Some(len) = decoded_len(text) else {
        return Err(format!(
            "{what} is not base64: its length or padding cannot end a quantum"
        ));
    };
    budget.charge(len)?;
    decode_checked(what, text)
}

/// Decodes `text` under the strict rules, its length already checked (and
/// charged) by the caller through [`decoded_len`].
pub(crate) fn decode_checked(what: &str, text: &str) -> Result<Vec<u8>, String> {
    engine_for(text)
        .decode(text)
        .map_err(|error| not_strict(what, &error))
}

/// The characters of base64 text [`check`] decodes at a time: a whole number
/// of quanta, decoding to at most [`CHECK_BUFFER`] bytes.
pub(crate) const CHECK_CHUNK: usize = 1024;

/// The stack buffer of [`check`].
const CHECK_BUFFER: usize = CHECK_CHUNK / 4 * 3;

/// [`decode`]'s rules and budget, the bytes not kept: the same `Ok` and the
/// same error for every text, and no allocation unless it fails.
pub(crate) fn check(what: &str, text: &str, budget: &mut Budget) -> Result<(), String> {
    let Some(len) = decoded_len(text) else {
        return Err(format!(
            "{what} is not base64: its length or padding cannot end a quantum"
        ));
    };
    budget.charge(len)?;
    check_in_chunks(what, text, CHECK_CHUNK)
}

/// Checks `text` (its length already checked) `chunk` characters at a time
/// (a multiple of 4, at most [`CHECK_CHUNK`]). Every chunk but the last is a
/// run of whole quanta with no padding allowed; the last is decoded as the end
/// of the text. A text is strict base64 exactly when each chunk is, and the
/// first chunk that is not fails with the error the whole text fails with.
fn check_in_chunks(what: &str, text: &str, chunk: usize) -> Result<(), String> {
    debug_assert!(chunk.is_multiple_of(4) && (4..=CHECK_CHUNK).contains(&chunk));
    let mut buffer = [0u8; CHECK_BUFFER];
    let bytes = text.as_bytes();
    // The last chunk holds 1 to `chunk` characters (none for an empty text).
    let last = bytes.len().saturating_sub(1) / chunk * chunk;
    let (body, end) = bytes.split_at(last);
    let decoded = body
        .chunks(chunk)
        .map(|quanta| (&UNPADDED, quanta))
        .chain(std::iter::once((engine_for(text), end)))
        .try_for_each(|(engine, input)| engine.decode_slice(input, &mut buffer).map(drop));
    match decoded {
        Ok(()) => Ok(()),
        Err(base64::DecodeSliceError::DecodeError(error)) => Err(not_strict(what, &error)),
        // `chunk` characters decode to at most `CHECK_BUFFER` bytes.
        Err(base64::DecodeSliceError::OutputSliceTooSmall) => Err(format!(
            "{what} is not strict base64: its length cannot end a quantum"
        )),
    }
}

/// The engine for a whole text: canonical padding when it ends with `=`.
fn engine_for(text: &str) -> &'static GeneralPurpose {
    if text.ends_with('=') {
        &PADDED
    } else {
        &UNPADDED
    }
}

/// The rule a decode error breaks, for member `what`.
fn not_strict(what: &str, error: &base64::DecodeError) -> String {
    let why = match error {
        base64::DecodeError::InvalidByte(_, b'=') | base64::DecodeError::InvalidPadding => {
            "misplaced or non-canonical padding"
        }
        base64::DecodeError::InvalidByte(..) => {
            "a character outside the standard alphabet (whitespace and the URL-safe '-' and '_' included)"
        }
        base64::DecodeError::InvalidLastSymbol(..) => "non-zero trailing bits",
        base64::DecodeError::InvalidLength(_) => "its length cannot end a quantum",
    };
    format!("{what} is not strict base64: {why}")
}

/// Encodes bytes as padded standard base64 (how the CLI prints them).
pub(crate) fn encode(bytes: &[u8]) -> String {
    general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What [`decode`] says of `text`, the bytes dropped.
    fn decoded(text: &str) -> Result<(), String> {
        decode("data", text, &mut Budget::new(usize::MAX)).map(drop)
    }

    #[test]
    fn check_agrees_with_decode_across_chunks() {
        let valid = encode(&(0..=255u8).cycle().take(3000).collect::<Vec<_>>());
        let mut texts = vec![valid.clone(), valid.trim_end_matches('=').to_owned()];
        // A fault at each side of a chunk boundary, and at the end.
        for at in [
            0,
            3,
            4,
            CHECK_CHUNK - 1,
            CHECK_CHUNK,
            CHECK_CHUNK + 1,
            valid.len() - 1,
        ] {
            for fault in ["=", "-", " ", "_"] {
                let mut text = valid.clone();
                text.replace_range(at..at + 1, fault);
                texts.push(text);
            }
        }
        // Padding closing a chunk that is not the last.
        let mut text = valid.clone();
        text.replace_range(CHECK_CHUNK - 2..CHECK_CHUNK, "==");
        texts.push(text);
        for text in &texts {
            let mut budget = Budget::new(usize::MAX);
            assert_eq!(check("data", text, &mut budget), decoded(text), "{text:?}");
        }
        assert!(check("data", &valid, &mut Budget::new(usize::MAX)).is_ok());
    }

    #[test]
    fn check_charges_the_budget_before_reading_a_character() {
        let mut budget = Budget::new(5);
        assert_eq!(
            check("data", "!!!!!!!!", &mut budget).unwrap_err(),
            "the result holds 6 bytes of content by this item; maxResourceBytes is 5"
        );
        assert!(check("data", "eHl6eHk=", &mut budget).is_ok());
        assert!(check("data", "", &mut budget).is_ok());
        assert!(check("data", "eA", &mut budget).is_err(), "5 + 1 bytes");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Chunk by chunk, [`check`] fails exactly where [`decode`] does, with
        /// the same rule: texts of valid, padding, URL-safe and blank
        /// characters, checked 4, 8 and 12 characters at a time.
        #[test]
        fn chunked_checks_agree_with_decoding(
            text in "[AQgwB9+/=\\-_ ]{0,40}",
            chunk in prop_oneof![Just(4usize), Just(8), Just(12)],
        ) {
            let expected = decoded(&text);
            let got = match decoded_len(&text) {
                None => Err("data is not base64: its length or padding cannot end a quantum".to_owned()),
                Some(_) => check_in_chunks("data", &text, chunk),
            };
            prop_assert_eq!(got, expected, "{:?} by {}", text, chunk);
        }

        /// The same on encodings of random bytes, padded or not, with one
        /// character replaced (or none).
        #[test]
        fn chunked_checks_agree_on_near_valid_texts(
            bytes in proptest::collection::vec(any::<u8>(), 0..48),
            padded in any::<bool>(),
            fault in proptest::option::of((any::<prop::sample::Index>(), r"[A/=\-_ \n]")),
            chunk in prop_oneof![Just(4usize), Just(8), Just(12)],
        ) {
            let mut text = encode(&bytes);
            if !padded {
                text.truncate(text.trim_end_matches('=').len());
            }
            if let (Some((at, with)), false) = (fault, text.is_empty()) {
                let at = at.index(text.len());
                text.replace_range(at..at + 1, &with);
            }
            let expected = decoded(&text);
            let got = match decoded_len(&text) {
                None => Err("data is not base64: its length or padding cannot end a quantum".to_owned()),
                Some(_) => check_in_chunks("data", &text, chunk),
            };
            prop_assert_eq!(got, expected, "{:?} by {}", text, chunk);
        }
    }
}
