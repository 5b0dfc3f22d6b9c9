//! Redaction of a child's stderr (`redact::Redactor`, `redact::StderrCollector`).
//!
//! Input: a 16-byte header (tail size, secret length, how often and where to plant
//! it, optional filler to pass the 64 KiB line bound, a distracting second exact
//! value, whether plants are split, a chunking seed), the secret's characters, then
//! arbitrary surrounding bytes. The secret (4 to 36 characters without whitespace or
//! control characters, ASCII or not) is given to the redactor as an exact value, the
//! way the child's environment values are, and planted one to three times at fuzzed
//! positions (chosen in the surrounding bytes, so that no plant splits another).
//! A plant is the secret intact, or (when bit 2 of header byte 6 is set) the secret
//! split between two of its characters by a planted piece: an escape-sequence
//! prefix (`ESC`, `ESC [`, `ESC [ 1 ;`, `ESC ]`, `ESC (`, `ESC P`, ...) whose sequence
//! may go on into the secret's characters, or a hidden character (a control, DEL, a
//! C1 control, a bidi override); header bytes 8 + 2k and 9 + 2k choose where plant
//! k is split and by what. Properties:
//!
//! - a planted secret never survives whole: not in the collector's tail, whatever
//!   the surrounding bytes (escapes, invalid UTF-8, CR, other credentials, PEM
//!   markers, over-long lines) and wherever the chunk boundaries fall, and not in
//!   `redact_line` of any line. (The `[REDACTED]` and withheld-line markers are
//!   masked first, so a secret such as `DACT` does not "survive" inside one);
//! - no part of a planted secret survives, not even one character: checked on the
//!   *isolated* stream, the same input in which every character of the surrounding
//!   bytes that also occurs in the secret has been overwritten (byte for byte, so
//!   the plants land at the same places) with a printable ASCII byte that does not.
//!   Lossy decoding cannot join a character across a plant's edge, so once the
//!   markers are masked, any character of the secret left in the tail or in
//!   `redact_line`'s output came from a plant, and is a leak. This is stricter than
//!   "no run of `len - 1` characters survives" (which fails on
//!   `artifacts-found/redaction/escape-eats-first-char`: `ESC [` eats the `c` of
//!   `correct-horse-battery`) and, unlike a run-length rule on the raw stream, it
//!   cannot flag fragments of the secret that the surrounding bytes spell out
//!   themselves. The escapes stay: an `ESC [` in the surroundings is kept unless `[`
//!   is in the secret. It holds for split plants too (which is stricter than "no
//!   `len - 1` run survives" again: `artifacts-found/redaction/escape-inside-eats-a-char`,
//!   `correct-horse-\x1b[battery`, left `correct-horse-attery`); a piece's own
//!   characters lie inside the plant, so they count as the secret's;
//! - the tail does not depend on the chunking (one chunk, seeded chunks, one byte
//!   at a time for short inputs);
//! - the collector never retains more than `MAX_STDERR_LINE_BYTES + max_bytes`, and
//!   its tail never more than `max_bytes`;
//! - `Debug` of the redactor and the collector shows no secret.

use smthrs_mcp::fuzzing::{
    MAX_STDERR_LINE_BYTES, REDACTED, Redactor, StderrCollector, WITHHELD_LINE,
};

use super::util::{chunks, seed_of};

const EXTRA: [char; 5] = ['é', 'ß', '漢', '😀', 'Ω'];

/// What a split plant puts between two of the secret's characters: escape-sequence
/// prefixes (the sequence may go on into the secret) and hidden characters. Never a
/// line end, or a printable character: a secret split by text a reader sees is
/// beyond any exact-value rule.
const PIECES: [&str; 24] = [
    "\x1b",
    "\x1b[",
    "\x1b[1;",
    "\x1b[?2",
    "\x1b[0m",
    "\x1b[1 ",
    "\x1b]",
    "\x1b]0;",
    "\x1b]8;;",
    "\x1b]0;t\x07",
    "\x1b]0;t\x1b",
    "\x1b(",
    "\x1b#",
    "\x1b%",
    "\x1bP",
    "\x1b_",
    "\x1b\x1b",
    "\x00",
    "\x07",
    "\t",
    "\r",
    "\x7f",
    "\u{9b}",
    "\u{202e}",
];

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    if data.len() < 16 {
        return;
    }
    let max_bytes = data[0] as usize * 16;
    let secret_len = 4 + data[1] as usize % 33;
    let plants = 1 + data[4] as usize % 3;
    let Some(secret_bytes) = data.get(16..16 + secret_len) else {
        return;
    };
    let secret: String = secret_bytes
        .iter()
        .map(|&b| {
            let i = b as usize % (94 + EXTRA.len());
            if i < 94 {
                char::from(0x21 + i as u8)
            } else {
                EXTRA[i - 94]
            }
        })
        .collect();
    let mut surroundings = data[16 + secret_len..].to_vec();
    if data[6] & 1 != 0 {
        let filler = vec![data[7]; 1024 * (data[5] as usize % 72)];
        let at = surroundings.len() * data[3] as usize / 256;
        surroundings.splice(at..at, filler);
    }
    // Plant positions are chosen in the surroundings, so no plant splits another.
    let mut spots: Vec<usize> = (0..plants)
        .map(|k| surroundings.len() * data[2 + k] as usize / 256)
        .collect();
    spots.sort_unstable();
    // What each plant is: the secret, or the secret split by a piece.
    let chars: Vec<usize> = secret.char_indices().map(|(at, _)| at).collect();
    let planted: Vec<String> = (0..plants)
        .map(|k| {
            if data[6] & 4 == 0 {
                return secret.clone();
            }
            let split = chars[1 + data[8 + 2 * k] as usize % (chars.len() - 1)];
            let piece = PIECES[data[9 + 2 * k] as usize % PIECES.len()];
            format!("{}{piece}{}", &secret[..split], &secret[split..])
        })
        .collect();
    let plant = |surroundings: &[u8]| {
        let mut stream = Vec::with_capacity(surroundings.len() + plants * secret.len() + 24);
        let mut from = 0;
        for (&at, planted) in spots.iter().zip(&planted) {
            stream.extend_from_slice(&surroundings[from..at]);
            stream.extend_from_slice(planted.as_bytes());
            from = at;
        }
        stream.extend_from_slice(&surroundings[from..]);
        stream
    };
    let isolated = isolate(&surroundings, &secret).map(|isolated| plant(&isolated));
    let stream = plant(&surroundings);
    let mut exact = vec![secret.clone()];
    if data[6] & 2 != 0 {
        exact.push("distract-value-1234".to_owned());
    }
    let redactor = Redactor::new(&exact);
    assert!(!format!("{redactor:?}").contains(&secret));

    let seed = seed_of(&data[8..16]);
    let max_chunk = 1 + (seed >> 52) as usize % 2048;
    let whole = collect(&redactor, &[&stream], max_bytes, &secret);
    let split = collect(
        &redactor,
        &chunks(&stream, seed, max_chunk),
        max_bytes,
        &secret,
    );
    assert_eq!(whole, split, "the tail depends on the chunking");
    if stream.len() <= 4096 {
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(whole, collect(&redactor, &bytes, max_bytes, &secret));
    }
    assert_absent(&whole, &secret, "the tail");
    for line in String::from_utf8_lossy(&stream).split('\n') {
        if line.len() <= MAX_STDERR_LINE_BYTES {
            assert_absent(&redactor.redact_line(line), &secret, "redact_line");
        }
    }

    // The isolated stream (unless the surroundings had no character of the secret,
    // in which case it is `stream`, and the checks below apply to it).
    let isolated = isolated.as_ref().unwrap_or(&stream);
    let tails = if isolated == &stream {
        [whole, split]
    } else {
        let pieces = chunks(isolated, seed, max_chunk);
        [
            collect(&redactor, &[isolated], max_bytes, &secret),
            collect(&redactor, &pieces, max_bytes, &secret),
        ]
    };
    assert_eq!(tails[0], tails[1], "the tail depends on the chunking");
    assert_no_part(&tails[0], &secret, "the tail");
    for line in String::from_utf8_lossy(isolated).split('\n') {
        if line.len() <= MAX_STDERR_LINE_BYTES {
            assert_no_part(&redactor.redact_line(line), &secret, "redact_line");
        }
    }
}

/// `bytes` with every occurrence of a character of `secret` overwritten byte for byte
/// by a printable ASCII byte that is not in the secret; `None` if there is none.
/// (A secret has at most 36 characters, so such a byte exists. A multi-byte
/// character is only ever decoded from its own complete encoding, so overwriting its
/// encodings removes it from the decoded text.)
fn isolate(bytes: &[u8], secret: &str) -> Option<Vec<u8>> {
    let filler = (b'!'..=b'~')
        .find(|&byte| !secret.contains(char::from(byte)))
        .expect("a printable byte outside the secret");
    let mut out = bytes.to_vec();
    let mut changed = false;
    let mut ascii = [false; 128];
    for c in secret.chars() {
        if c.is_ascii() {
            ascii[c as usize] = true;
            continue;
        }
        let mut buffer = [0; 4];
        let encoded = c.encode_utf8(&mut buffer).as_bytes();
        let mut at = 0;
        while let Some(offset) = out[at..]
            .windows(encoded.len())
            .position(|window| window == encoded)
        {
            let start = at + offset;
            out[start..start + encoded.len()].fill(filler);
            changed = true;
            at = start + encoded.len();
        }
    }
    for byte in &mut out {
        if ascii.get(usize::from(*byte)) == Some(&true) {
            *byte = filler;
            changed = true;
        }
    }
    changed.then_some(out)
}

fn collect(redactor: &Redactor, pieces: &[&[u8]], max_bytes: usize, secret: &str) -> String {
    let mut collector = StderrCollector::new(redactor.clone(), max_bytes);
    for piece in pieces {
        collector.push(piece);
        assert!(collector.retained_bytes() <= MAX_STDERR_LINE_BYTES + max_bytes);
    }
    collector.finish();
    assert!(collector.tail().len() <= max_bytes);
    assert!(!format!("{collector:?}").contains(secret));
    collector.tail().to_owned()
}

/// `text` with the crate's own markers (including one cut at the front of the tail)
/// masked out.
fn masked(text: &str) -> String {
    let mut masked = text.to_owned();
    for marker in [REDACTED, WITHHELD_LINE] {
        if let Some(cut) = (1..marker.len()).find(|&i| masked.starts_with(&marker[i..])) {
            masked.replace_range(..marker.len() - cut, "\u{0}");
        }
        masked = masked.replace(marker, "\u{0}");
    }
    masked
}

/// The secret may not appear once the crate's own markers are masked out.
fn assert_absent(text: &str, secret: &str, what: &str) {
    assert!(
        !masked(text).contains(secret),
        "the secret {secret:?} survives in {what}: {text:?}"
    );
}

/// No character of the secret may appear once the crate's own markers are masked out
/// (for output of the isolated stream, where only the plants hold such characters).
fn assert_no_part(text: &str, secret: &str, what: &str) {
    let found = masked(text).chars().find(|&c| secret.contains(c));
    assert!(
        found.is_none(),
        "{found:?} of the secret {secret:?} survives in {what}: {text:?}"
    );
}
