//! Redaction of a child's stderr (`redact::Redactor`, `redact::StderrCollector`).
//!
//! Input: a 16-byte header (tail size, secret length, how often and where to plant
//! it, optional filler to pass the 64 KiB line bound, a distracting second exact
//! value, a chunking seed), the secret's characters, then arbitrary surrounding
//! bytes. The secret (4 to 36 characters without whitespace or control characters,
//! ASCII or not) is given to the redactor as an exact value, the way the child's
//! environment values are, and planted intact one to three times at fuzzed
//! positions. Properties:
//!
//! - a planted secret never survives: not in the collector's tail, whatever the
//!   surrounding bytes (escapes, invalid UTF-8, CR, other credentials, PEM markers,
//!   over-long lines) and wherever the chunk boundaries fall, and not in
//!   `redact_line` of any line. (The `[REDACTED]` and withheld-line markers are
//!   masked first, so a secret such as `DACT` does not "survive" inside one);
//! - the tail does not depend on the chunking (one chunk, seeded chunks, one byte
//!   at a time for short inputs);
//! - the collector never retains more than `MAX_STDERR_LINE_BYTES + max_bytes`, and
//!   its tail never more than `max_bytes`;
//! - `Debug` of the redactor and the collector shows no secret.

use smthrs_mcp::redact::{
    MAX_STDERR_LINE_BYTES, REDACTED, Redactor, StderrCollector, WITHHELD_LINE,
};

use super::util::{chunks, seed_of};

const EXTRA: [char; 5] = ['é', 'ß', '漢', '😀', 'Ω'];

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
    let mut stream = data[16 + secret_len..].to_vec();
    if data[6] & 1 != 0 {
        let filler = vec![data[7]; 1024 * (data[5] as usize % 72)];
        let at = stream.len() * data[3] as usize / 256;
        stream.splice(at..at, filler);
    }
    for k in 0..plants {
        let at = stream.len() * data[2 + k] as usize / 256;
        stream.splice(at..at, secret.bytes());
    }
    let mut exact = vec![secret.clone()];
    if data[6] & 2 != 0 {
        exact.push("distract-value-1234".to_owned());
    }
    let redactor = Redactor::new(&exact);
    assert!(!format!("{redactor:?}").contains(&secret));

    let seed = seed_of(&data[8..16]);
    let whole = collect(&redactor, &[&stream], max_bytes, &secret);
    let pieces = chunks(&stream, seed, 1 + (seed >> 52) as usize % 2048);
    let split = collect(&redactor, &pieces, max_bytes, &secret);
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

/// The secret may not appear once the crate's own markers (including one cut at
/// the front of the tail) are masked out.
fn assert_absent(text: &str, secret: &str, what: &str) {
    let mut masked = text.to_owned();
    for marker in [REDACTED, WITHHELD_LINE] {
        if let Some(cut) = (1..marker.len()).find(|&i| masked.starts_with(&marker[i..])) {
            masked.replace_range(..marker.len() - cut, "\u{0}");
        }
        masked = masked.replace(marker, "\u{0}");
    }
    assert!(
        !masked.contains(secret),
        "the secret {secret:?} survives in {what}: {text:?}"
    );
}
