//! Strict base64 for `blob` and `data` (beyond-tools.md §1.3, decision Q4), and
//! the budget of decoded bytes one result may hold.
//!
//! The rules: the RFC 4648 standard alphabet (so no URL-safe `-` or `_`), no
//! whitespace or line breaks, padding optional but, when present, canonical
//! (`=` or `==` completing the last quantum, nothing after it), and no
//! non-zero trailing bits (one encoding per byte string). The decoded length is
//! computed from the text's length alone and charged to the budget **before**
//! anything is decoded, so a claimed size past the bound allocates nothing.

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
    let engine = if text.ends_with('=') {
        &PADDED
    } else {
        &UNPADDED
    };
    engine.decode(text).map_err(|error| {
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
    })
}

/// Encodes bytes as padded standard base64 (how the CLI prints them).
pub(crate) fn encode(bytes: &[u8]) -> String {
    general_purpose::STANDARD.encode(bytes)
}
