use super::clean::{clean_line, clean_tracking};
use super::exact::{Gapped, MAX_GAPPED_VALUE_BYTES, hidden_bytes};
use super::work;
use super::*;

const CORPUS: &str = include_str!("../../testdata/redaction/corpus.txt");
const SECRETS: &str = include_str!("../../testdata/redaction/secrets.txt");
const ENV: &str = include_str!("../../testdata/redaction/env.txt");

fn secrets() -> Vec<&'static str> {
    SECRETS.lines().filter(|line| !line.is_empty()).collect()
}

fn corpus_redactor() -> Redactor {
    Redactor::new(ENV.lines())
}

fn leaked<'a>(text: &str, secrets: &[&'a str]) -> Vec<&'a str> {
    secrets
        .iter()
        .copied()
        .filter(|secret| text.contains(secret))
        .collect()
}

fn collect(redactor: &Redactor, max_bytes: usize, input: &[u8], chunks: &[usize]) -> String {
    let mut collector = StderrCollector::new(redactor.clone(), max_bytes);
    let mut rest = input;
    let mut sizes = chunks.iter().cycle();
    while !rest.is_empty() {
        let size = (*sizes.next().unwrap_or(&1)).clamp(1, rest.len());
        collector.push(&rest[..size]);
        rest = &rest[size..];
    }
    collector.finish();
    collector.tail().to_owned()
}

/// Deterministic "random-ish" chunk sizes in `1..=max`, without end.
fn chunk_sizes(seed: u64, max: usize) -> impl Iterator<Item = usize> {
    let mut state = seed;
    std::iter::repeat_with(move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize % max) + 1
    })
}

#[test]
fn corpus_is_consistent() {
    let secrets = secrets();
    assert!(secrets.len() >= 40, "corpus too small: {}", secrets.len());
    for secret in &secrets {
        assert!(CORPUS.contains(secret), "secret not planted: {secret}");
    }
}

#[test]
fn corpus_lines_are_redacted_one_by_one() {
    let redactor = corpus_redactor();
    let secrets = secrets();
    let mut in_pem = false;
    let mut checked = 0;
    for line in CORPUS.lines() {
        if in_pem {
            // PEM body lines are only caught by the collector, which tracks blocks.
            in_pem = !line.contains("-----END");
            continue;
        }
        if line.contains("-----BEGIN") && !line.contains("-----END") {
            in_pem = true;
        }
        let out = redactor.redact_line(line);
        assert!(leaked(&out, &secrets).is_empty(), "leak in {out:?}");
        if !leaked(line, &secrets).is_empty() {
            checked += 1;
            assert!(out.contains(REDACTED), "nothing redacted in {line:?}");
        }
    }
    assert!(checked >= 40, "only {checked} lines with secrets");
}

#[test]
fn corpus_survives_no_chunking_and_no_cap() {
    let redactor = corpus_redactor();
    let secrets = secrets();
    let crlf = CORPUS.replace('\n', "\r\n");
    for input in [CORPUS, crlf.as_str()] {
        let input = input.as_bytes();
        let whole = collect(&redactor, usize::MAX, input, &[input.len()]);
        assert!(leaked(&whole, &secrets).is_empty(), "leak in {whole}");
        assert!(
            whole.contains(
                "-----BEGIN RSA PRIVATE KEY----- [REDACTED] -----END RSA PRIVATE KEY-----"
            )
        );
        let mut chunkings = vec![vec![1], vec![2], vec![3], vec![7], vec![64]];
        chunkings.extend((0..4).map(|seed| chunk_sizes(seed, 40).take(97).collect::<Vec<_>>()));
        for chunks in &chunkings {
            assert_eq!(
                collect(&redactor, usize::MAX, input, chunks),
                whole,
                "chunks {chunks:?}"
            );
        }
        // Caps: every capped tail is a suffix of the uncapped one, so it leaks nothing
        // the uncapped one does not.
        for cap in [1, 5, 16, 37, 64, 100, 255, 2048] {
            for chunks in chunkings.iter().take(3).chain(chunkings.iter().skip(5)) {
                let tail = collect(&redactor, cap, input, chunks);
                assert!(tail.len() <= cap);
                assert!(whole.ends_with(&tail), "cap {cap}: {tail:?}");
            }
        }
    }
}

#[test]
fn capped_tail_never_leaks_along_the_way() {
    let redactor = corpus_redactor();
    let secrets = secrets();
    for (seed, cap) in [(1, 24), (2, 80), (3, 512), (4, 2048)] {
        let mut collector = StderrCollector::new(redactor.clone(), cap);
        let mut rest = CORPUS.as_bytes();
        for size in chunk_sizes(seed, 23) {
            if rest.is_empty() {
                break;
            }
            let size = size.min(rest.len());
            collector.push(&rest[..size]);
            rest = &rest[size..];
            assert!(collector.tail().len() <= cap);
            assert!(
                leaked(collector.tail(), &secrets).is_empty(),
                "{}",
                collector.tail()
            );
            assert!(collector.retained_bytes() <= MAX_STDERR_LINE_BYTES + cap);
        }
    }
}

#[test]
fn cap_cannot_cut_a_credential_prefix() {
    let token = "ghp_Zx81LmQp0rTuVw29aBcDeFgHiJkLmNoPqRsT";
    let line = format!("{} the token is {token}", "x".repeat(3000));
    let raw_body_len = token.len() - 4;
    // A cap of raw_body_len bytes would, on raw text, keep exactly the body after `ghp_`.
    for cap in [raw_body_len, raw_body_len + 1, token.len(), 10, 11, 12] {
        let mut collector = StderrCollector::new(Redactor::default(), cap);
        collector.push(line.as_bytes());
        collector.push(b"\n");
        let tail = collector.tail();
        assert!(!tail.contains(&token[4..12]), "cap {cap}: {tail:?}");
        assert!(
            REDACTED.ends_with(tail) || tail.ends_with(REDACTED),
            "cap {cap}: {tail:?}"
        );
    }
}

#[test]
fn benign_text_stays_readable() {
    let redactor = Redactor::new(["unrelated-secret-value"]);
    for line in [
        "listening on port 8080",
        "tokens processed: 42",
        "GET /api/users 200 12ms",
        "max_tokens=4096 prompt_tokens: 1200",
        "Server started at http://localhost:3000/mcp",
        "author: Jane Doe <jane@example.com>",
        "authority: login.microsoftonline.com",
        "token expired, refreshing",
        "basic setup complete",
        "Bearer token missing",
        "session started for user 42",
        "error: authentication failed (code=401)",
        "at Object.<anonymous> (/Users/dev/my-mcp-server/node_modules/@modelcontextprotocol/sdk/dist/index.js:42:13)",
        "File \"/usr/lib/python3.11/site-packages/mcp/server/stdio.py\", line 88, in stdio_server",
        "thread 'main' panicked at src/session/auth.rs:17:5: called `Option::unwrap()`",
        "at smthrs::session::Session::new (src/session.rs:10)",
        "request_id=550e8400-e29b-41d4-a716-446655440000 status=ok",
        "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 (HEAD -> main)",
        "Loaded 12 tools: read_file, write_file, search_TokensAndSecretsDocs",
        "password reset email sent to jane@example.com",
        "cookie consent banner disabled",
        "export PATH=/usr/local/bin:/usr/bin",
        "token: null, password: '', secret=***",
        "résumé — naïve café ✓ 日本語のログ",
    ] {
        assert_eq!(redactor.redact_line(line), line);
    }
}

#[test]
fn each_rule() {
    let redactor = Redactor::new(["", "abc", "multi\nline-secret-part", " padded-value "]);
    let cases = [
        (
            "Authorization: token ghx_abc def",
            "Authorization: [REDACTED]",
        ),
        (
            "proxy-authorization: Digest username=x",
            "proxy-authorization: [REDACTED]",
        ),
        ("Cookie: _ga=1; sid=xyz", "Cookie: [REDACTED]"),
        ("Set-Cookie: sid=abc123; Path=/", "Set-Cookie: [REDACTED]"),
        (
            r#"{"Authorization": "Bearer abc", "ok": 1}"#,
            r#"{"Authorization": "[REDACTED]", "ok": 1}"#,
        ),
        (
            "sent bearer\tab12cd34ef to api",
            "sent bearer\t[REDACTED] to api",
        ),
        (
            "header Basic dXNlcjpwYXNzd29yZA== ok",
            "header Basic [REDACTED] ok",
        ),
        ("header BASIC dXNlcjpwYXNz", "header BASIC [REDACTED]"),
        (
            "postgres://admin:hunter2@db:5432/app",
            "postgres://[REDACTED]@db:5432/app",
        ),
        (
            "git https://ghtoken@github.com/a/b and ftp://x.org/@y",
            "git https://[REDACTED]@github.com/a/b and ftp://x.org/@y",
        ),
        (
            "redis://:pass@localhost:6379",
            "redis://[REDACTED]@localhost:6379",
        ),
        (
            "GITHUB_TOKEN=abc123 next=1",
            "GITHUB_TOKEN=[REDACTED] next=1",
        ),
        ("x-api-key: abcd", "x-api-key: [REDACTED]"),
        ("db_password = 'p w d'", "db_password = '[REDACTED]'"),
        (
            r#"{"clientSecret":"a\"b","n":2}"#,
            r#"{"clientSecret":"[REDACTED]","n":2}"#,
        ),
        (
            r#"log "{\"password\":\"p@ss w\"}""#,
            r#"log "{\"password\":\"[REDACTED]\"}""#,
        ),
        (
            "{'api_key': 'zzz', 'n': 1}",
            "{'api_key': '[REDACTED]', 'n': 1}",
        ),
        (
            "run --access-key AK1 --region x",
            "run --access-key [REDACTED] --region x",
        ),
        (
            "run --password=\"a b\" -v",
            "run --password=\"[REDACTED]\" -v",
        ),
        (
            "opts :session_key => 'v4lue'",
            "opts :session_key => '[REDACTED]'",
        ),
        (
            "<Password>s3cr3t</Password>",
            "<Password>[REDACTED]</Password>",
        ),
        ("?auth_token=q1&page=2", "?auth_token=[REDACTED]&page=2"),
        ("max_tokens=abc", "max_tokens=[REDACTED]"),
        (
            "tokens: 10, credentials: {user: a}",
            "tokens: 10, credentials: {user: a}",
        ),
        (
            "&{Name:svc Secret:abc123 Region:us}",
            "&{Name:svc Secret:[REDACTED] Region:us}",
        ),
        (
            r#"args ["--port", "1", "--api-key", "k3y"]"#,
            r#"args ["--port", "1", "--api-key", "[REDACTED]"]"#,
        ),
        (
            r#"env [{"name": "API_TOKEN", "value": "v4l"}, {"name": "A", "value": "b"}]"#,
            r#"env [{"name": "API_TOKEN", "value": "[REDACTED]"}, {"name": "A", "value": "b"}]"#,
        ),
        (
            "openai.AuthenticationError: Error code: 401",
            "openai.AuthenticationError: Error code: 401",
        ),
        (
            "at auth.rs:17:5 and /etc/passwd: No such file",
            "at auth.rs:17:5 and /etc/passwd: No such file",
        ),
        (
            "got multi and line-secret-part",
            "got [REDACTED] and [REDACTED]",
        ),
        ("abc padded-value", "abc [REDACTED]"),
        (
            "-----BEGIN PRIVATE KEY-----\\nMIIEv\\n-----END PRIVATE KEY-----\\n",
            "-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----\\n",
        ),
        (
            "key -----BEGIN EC PRIVATE KEY----- MHcCAQEE",
            "key -----BEGIN EC PRIVATE KEY-----[REDACTED]",
        ),
        (
            "-----BEGIN CERTIFICATE----- MIIBszCCAVmgAwIBAgI",
            "-----BEGIN CERTIFICATE----- MIIBszCCAVmgAwIBAgI",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(redactor.redact_line(input), expected, "input {input:?}");
    }
}

#[test]
fn token_shapes() {
    let redactor = Redactor::default();
    for token in [
        "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t",
        "sk-ant-api03-abcdef0123456789",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "AKIAIOSFODNN7EXAMPLE",
        "ASIAY34FZKBOKMUTVV7A",
        "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
        "glpat-xxxxxxxxxxxxxxxxxxxx",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        "ya29.a0AfH6SMBx-abcdefghijklmnop",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRkdISUpL",
    ] {
        for line in [
            token.to_owned(),
            format!("value ({token}), next"),
            format!("k={token}"),
        ] {
            let out = redactor.redact_line(&line);
            assert!(!out.contains(token), "{token} survived: {out}");
            assert!(out.contains(REDACTED));
        }
    }
    // Near misses stay.
    for line in [
        "ghp_short",
        "sk-learn-is-a-library-name",
        "AKIAIOSFODNN7EXAMPLEX",
        "eyJhbGciOiJIUzI1NiJ9 alone",
        "xoxb-nodigitshere",
    ] {
        assert_eq!(redactor.redact_line(line), line);
    }
}

#[test]
fn redaction_is_idempotent_and_merges() {
    let redactor = Redactor::default();
    let once = redactor.redact_line("token=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 end");
    assert_eq!(once, "token=[REDACTED] end");
    assert_eq!(redactor.redact_line(&once), once);
}

#[test]
fn pem_block_in_the_collector() {
    let mut collector = StderrCollector::new(Redactor::default(), 4096);
    collector.push(
        b"loading key\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA\n",
    );
    collector.push(b"-----END OPENSSH PRIVATE KEY----- done\nnext line\n");
    assert_eq!(
        collector.tail(),
        "loading key -----BEGIN OPENSSH PRIVATE KEY----- [REDACTED] -----END OPENSSH PRIVATE KEY----- done next line"
    );
    // The body on the BEGIN line is redacted once, not twice.
    let mut collector = StderrCollector::new(Redactor::default(), 4096);
    collector
        .push(b"k: -----BEGIN PRIVATE KEY----- MIIEvQ\nAAAA\nBBBB -----END PRIVATE KEY-----\n");
    assert_eq!(
        collector.tail(),
        "k: -----BEGIN PRIVATE KEY-----[REDACTED] -----END PRIVATE KEY-----"
    );
}

#[test]
fn over_long_line_is_withheld() {
    let secret = "hunter2-is-my-password";
    let mut collector = StderrCollector::new(Redactor::new([secret]), 2048);
    let mut long = format!("{secret} ").into_bytes();
    long.resize(MAX_STDERR_LINE_BYTES + 1, b'a');
    collector.push(b"before\n");
    collector.push(&long);
    collector.push(b"\nafter\n");
    assert_eq!(collector.tail(), format!("before {WITHHELD_LINE} after"));

    // Exactly at the limit (even with a CRLF ending) is kept.
    let mut collector = StderrCollector::new(Redactor::default(), 16);
    let mut exact = vec![b'b'; MAX_STDERR_LINE_BYTES];
    exact.extend_from_slice(b"\r\n");
    collector.push(&exact);
    assert_eq!(collector.tail(), "b".repeat(16));
    assert!(collector.partial.capacity() <= MAX_STDERR_LINE_BYTES);

    // One byte over, fed byte by byte.
    let mut collector = StderrCollector::new(Redactor::default(), 64);
    for _ in 0..=MAX_STDERR_LINE_BYTES {
        collector.push(b"c");
    }
    collector.push(b"\r\n");
    assert_eq!(collector.tail(), WITHHELD_LINE);
}

#[test]
fn memory_is_bounded_for_a_huge_line() {
    let max = 2048;
    let mut collector = StderrCollector::new(Redactor::default(), max);
    collector.push(b"first line\n");
    let chunk = vec![b'z'; 1024 * 1024];
    for _ in 0..10 {
        collector.push(&chunk);
        assert!(collector.retained_bytes() <= MAX_STDERR_LINE_BYTES + max);
        assert!(collector.partial.capacity() <= MAX_STDERR_LINE_BYTES);
    }
    collector.push(b"tail of the long line\nsecond line");
    collector.finish();
    assert_eq!(
        collector.tail(),
        format!("first line {WITHHELD_LINE} second line")
    );
    assert!(collector.tail.capacity() <= max);
}

#[test]
fn finish_keeps_a_partial_line() {
    let mut collector = StderrCollector::new(Redactor::default(), 100);
    collector.push(b"one\ntwo password=abc\r");
    assert_eq!(collector.tail(), "one");
    collector.finish();
    assert_eq!(collector.tail(), "one two password=[REDACTED]");
    collector.finish();
    assert_eq!(collector.tail(), "one two password=[REDACTED]");
    // A discarded partial line at EOF is reported as withheld.
    let mut collector = StderrCollector::new(Redactor::default(), 100);
    collector.push(&vec![b'q'; MAX_STDERR_LINE_BYTES + 10]);
    collector.finish();
    assert_eq!(collector.tail(), WITHHELD_LINE);
}

#[test]
fn whitespace_and_escapes_collapse() {
    let mut collector = StderrCollector::new(Redactor::new(["two  words"]), 200);
    collector.push(b"  a\t\tb   c  \r\n\n   \n\x1b[31mERROR\x1b[0m:\x07 to\x1b[1mken=ghp_\x1b[0mAbCdEfGhIj0123456789xyz\n");
    collector.push("bidi \u{202E}evil\u{202C} and two words and two\t words\n".as_bytes());
    collector.push(b"\x1b]0;title\x07osc done\n");
    assert_eq!(
        collector.tail(),
        "a b c ERROR: token=[REDACTED] bidi evil and [REDACTED] and [REDACTED] osc done"
    );
}

/// The longest run of consecutive characters of `value` found in `text` once the
/// crate's own markers are masked out.
fn longest_run(text: &str, value: &str) -> usize {
    let masked = text
        .replace(REDACTED, "\u{0}")
        .replace(WITHHELD_LINE, "\u{0}");
    let chars: Vec<char> = value.chars().collect();
    (1..=chars.len())
        .rev()
        .find(|&len| {
            chars
                .windows(len)
                .any(|run| masked.contains(&run.iter().collect::<String>()))
        })
        .unwrap_or(0)
}

fn tail_of(redactor: &Redactor, pieces: &[&[u8]]) -> String {
    let mut collector = StderrCollector::new(redactor.clone(), 4096);
    for piece in pieces {
        collector.push(piece);
    }
    collector.finish();
    collector.tail().to_owned()
}

/// `fuzz/artifacts-found/redaction/escape-eats-first-char`: `ESC [ c` is a complete
/// CSI sequence, so cleaning drops the `c`, and matching the value only after
/// cleaning let `orrect-horse-battery` through.
#[test]
fn escape_eats_first_char_reproducer() {
    let redactor = Redactor::new(["correct-horse-battery"]);
    let tail = tail_of(&redactor, &[b"key \x1b[correct-horse-battery staple\n"]);
    assert_eq!(tail, "key [REDACTED] staple");
}

/// Every kind of escape or control character written right before a value: what
/// cleaning leaves of the value is redacted, and nothing of it survives.
#[test]
fn a_value_behind_any_escape_is_redacted() {
    let value = "correct-horse-battery";
    let redactor = Redactor::new([value, "0123-abc-secret"]);
    let kept = "key [REDACTED] staple";
    let cases: &[(&[u8], &str)] = &[
        (b"\x1b[", kept),              // CSI without parameters: `c` is its final byte
        (b"\x1b[31;1", kept),          // CSI with parameters
        (b"\x1b[?25", kept),           // private parameters
        (b"\x1b[1 ", kept),            // an intermediate byte
        (b"\x1b[31m", kept),           // a complete CSI: nothing is eaten
        (b"\x1b", kept),               // a lone ESC: `ESC c` is two bytes
        (b"\x1b(", kept),              // a charset designation takes one more
        (b"\x1b#", kept),              // so does `ESC #`
        (b"\x1b]0;title\x07", kept),   // a complete OSC
        (b"\x1b]0;title\x1b", kept),   // an OSC whose ST is cut short: eats `c`
        (b"\x1b]8;;", "key"),          // an unterminated OSC swallows the rest
        (b"\x1bPq", "key"),            // so does a DCS
        ("\u{9b}".as_bytes(), kept),   // C1 CSI: a control, so a space
        ("\u{9d}".as_bytes(), kept),   // C1 OSC
        ("\u{85}".as_bytes(), kept),   // NEL
        ("\u{202e}".as_bytes(), kept), // a bidi override
        (b"\x9b", "key \u{fffd}[REDACTED] staple"), // a raw C1 byte is not UTF-8
    ];
    for &(prefix, expected) in cases {
        let line = [b"key ", prefix, value.as_bytes(), b" staple\n"].concat();
        let tail = tail_of(&redactor, &[&line]);
        assert_eq!(tail, expected, "after {prefix:?}");
        // (Single letters of it occur in `key` and `staple`.)
        assert!(longest_run(&tail, value) < 2, "after {prefix:?}: {tail:?}");
    }
    // A value starting with CSI parameter and intermediate characters loses more
    // than one (`0123-a` is a whole CSI sequence).
    let tail = tail_of(&redactor, &[b"key \x1b[0123-abc-secret staple\n"]);
    assert_eq!(tail, kept);
}

/// `fuzz/artifacts-found/redaction/escape-inside-eats-a-char`: an escape planted
/// *inside* a value, whose final byte is one of the value's characters
/// (`ESC [ b` in `correct-horse-\x1b[battery`), split it in the line as written
/// and ate the `b` when the line was cleaned, so neither pass matched and
/// `correct-horse-attery` reached the tail.
#[test]
fn escape_inside_a_value_reproducer() {
    let redactor = Redactor::new(["correct-horse-battery"]);
    let line = b"key correct-horse-\x1b[battery staple\n";
    assert_eq!(tail_of(&redactor, &[line]), "key [REDACTED] staple");
    let raw = String::from_utf8_lossy(&line[..line.len() - 1]);
    assert_eq!(redactor.redact_line(&raw), "key [REDACTED] staple");
}

/// Escape-sequence prefixes and hidden characters planted anywhere inside a value
/// (also at several places at once): not one of its characters survives, in the
/// tail or in `redact_line`, whatever the split.
#[test]
fn a_value_split_by_any_escape_is_redacted() {
    let value = "correct-horse-battery";
    let redactor = Redactor::new([value]);
    let pieces: &[&str] = &[
        "\x1b",
        "\x1b[",
        "\x1b[1;",
        "\x1b[?",
        "\x1b[31m",
        "\x1b]",
        "\x1b]0;",
        "\x1b]0;t\x07",
        "\x1b(",
        "\x1b#",
        "\x1bP",
        "\x1b_",
        "\x1b\x1b",
        "\x00",
        "\x07",
        "\t",
        "\r",
        "\x7f",
        "\u{85}",
        "\u{9b}",
        "\u{202e}",
        "\u{2066}",
    ];
    // Characters of `value` that appear outside it in these lines: none.
    let (before, after) = ("KEY=", " ZZZ");
    let survivors = |text: &str| -> Vec<char> {
        let masked = text.replace(REDACTED, "");
        masked.chars().filter(|&c| value.contains(c)).collect()
    };
    let chars: Vec<(usize, char)> = value.char_indices().collect();
    for piece in pieces {
        for &(split, _) in chars.iter().skip(1) {
            let planted = format!("{}{piece}{}", &value[..split], &value[split..]);
            let line = format!("{before}{planted}{after}");
            let tail = tail_of(&redactor, &[format!("{line}\n").as_bytes()]);
            assert!(
                survivors(&tail).is_empty(),
                "{piece:?} at {split}: {tail:?}"
            );
            let out = redactor.redact_line(&line);
            assert!(survivors(&out).is_empty(), "{piece:?} at {split}: {out:?}");
        }
        // Planted at every gap at once.
        let mut planted = String::new();
        for (index, c) in value.chars().enumerate() {
            if index > 0 {
                planted.push_str(piece);
            }
            planted.push(c);
        }
        let line = format!("{before}{planted}{after}");
        let tail = tail_of(&redactor, &[format!("{line}\n").as_bytes()]);
        assert!(
            survivors(&tail).is_empty(),
            "{piece:?} everywhere: {tail:?}"
        );
        assert!(survivors(&redactor.redact_line(&line)).is_empty());
    }
    // Text that only looks like the value once escapes are skipped is not text a
    // reader sees as the value unless those bytes are escapes: a printable
    // character inside it keeps it apart.
    assert_eq!(
        redactor.redact_line("correct-horse-Xbattery"),
        "correct-horse-Xbattery"
    );
}

/// The bit-parallel matcher against a brute-force search of every interrupted
/// occurrence, on many small random lines, values of one to three words long.
#[test]
fn gapped_matching_agrees_with_a_brute_force_reference() {
    fn reference(text: &[u8], hidden: &[bool], value: &[u8]) -> Vec<bool> {
        let mut covered = vec![false; text.len()];
        for start in 0..text.len() {
            if text[start] != value[0] {
                continue;
            }
            // (position, matched) pairs reachable from a match starting here.
            let mut stack = vec![(start + 1, 1)];
            let mut seen = std::collections::HashSet::new();
            while let Some((at, done)) = stack.pop() {
                if !seen.insert((at, done)) {
                    continue;
                }
                if done == value.len() {
                    covered[start..at].iter_mut().for_each(|c| *c = true);
                    continue;
                }
                if at < text.len() {
                    if text[at] == value[done] {
                        stack.push((at + 1, done + 1));
                    }
                    if hidden[at] {
                        stack.push((at + 1, done));
                    }
                }
            }
        }
        covered
    }
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move |bound: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % bound as u64) as usize
    };
    let alphabet = b"ab[;1\x1b\x07]\x00(";
    for round in 0..3000 {
        let value_len = match round % 3 {
            0 => 1 + next(6),
            1 => 60 + next(10),
            _ => 126 + next(6),
        };
        let value: Vec<u8> = (0..value_len).map(|_| b"ab[;1"[next(5)]).collect();
        let text_len = value_len + next(value_len + 12);
        let mut text: Vec<u8> = (0..text_len)
            .map(|_| alphabet[next(alphabet.len())])
            .collect();
        // Plant the value, interrupted, half of the time.
        if round % 2 == 0 && text_len >= value_len {
            let at = next(text_len - value_len + 1);
            text[at..at + value_len].copy_from_slice(&value);
            let split = at + next(value_len);
            text.splice(split..split, [0x1b, b'['].into_iter().take(1 + next(2)));
        }
        let text = String::from_utf8(text).unwrap();
        let Some(hidden) = hidden_bytes(&text) else {
            continue;
        };
        let gapped = Gapped::new(&value);
        let mut ranges = Vec::new();
        gapped.cover(&text, &hidden, &mut ranges);
        let mut got = vec![false; text.len()];
        for (start, end) in ranges {
            got[start..end].iter_mut().for_each(|c| *c = true);
        }
        let want = reference(text.as_bytes(), &hidden, &value);
        assert_eq!(
            got,
            want,
            "{text:?} / {:?}",
            String::from_utf8_lossy(&value)
        );
    }
}

#[test]
fn hidden_bytes_follow_each_escape_on_its_own() {
    let marks = |text: &str| -> String {
        let hidden = hidden_bytes(text).unwrap_or_default();
        text.bytes()
            .enumerate()
            .map(|(at, _)| {
                if hidden.get(at) == Some(&true) {
                    '^'
                } else {
                    '.'
                }
            })
            .collect()
    };
    assert_eq!(hidden_bytes("plain text"), None);
    assert_eq!(hidden_bytes("naïve"), None);
    assert_eq!(marks("a\x1b[1;2bc"), ".^^^^^^.");
    assert_eq!(marks("a\x1b]0;t\x07b"), ".^^^^^^.");
    assert_eq!(marks("a\x1b(bc"), ".^^^.");
    assert_eq!(marks("a\x1bbc"), ".^^.");
    assert_eq!(marks("a\tb\x7fc"), ".^.^.");
    // A CSI takes the next ESC for its final byte, but that ESC's own sequence
    // is hidden too.
    assert_eq!(marks("\x1b[1\x1b[x y"), "^^^^^^..");
    assert_eq!(marks("a\u{202e}b"), ".^^^.");
}

/// A line is only cleaned once complete, so where the reads split it does not
/// matter, even between an escape and the value it eats into.
#[test]
fn a_value_split_across_reads_right_after_an_escape() {
    let value = "correct-horse-battery";
    let redactor = Redactor::new([value]);
    for (prefix, expected) in [
        ("\x1b[", "key [REDACTED] staple"),
        ("\x1b[31;1", "key [REDACTED] staple"),
        ("\x1b", "key [REDACTED] staple"),
        ("\x1b]0;t\x1b", "key [REDACTED] staple"),
        ("\x1b]0;", "key"),
    ] {
        let line = format!("key {prefix}{value} staple\n");
        let bytes = line.as_bytes();
        for first in 1..bytes.len() {
            for second in first..bytes.len() {
                let tail = tail_of(
                    &redactor,
                    &[&bytes[..first], &bytes[first..second], &bytes[second..]],
                );
                assert_eq!(tail, expected, "{prefix:?} cut at {first}, {second}");
            }
        }
    }
}

/// Cleaning can eat into a value (so it is matched in the line as written) and can
/// join one that an escape split (so it is matched in the cleaned line too).
#[test]
fn exact_values_are_matched_before_and_after_cleaning() {
    let redactor = Redactor::new(["correct-horse-battery", "pass\x1b[1mword-1234"]);
    for (line, expected) in [
        ("a \x1b[correct-horse-battery", "a [REDACTED]"),
        ("b correct\x1b[0m-horse-battery", "b [REDACTED]"),
        ("c correct-horse\x1b[0m-battery!", "c [REDACTED]!"),
        ("d pass\x1b[1mword-1234 e", "d [REDACTED] e"),
        ("f password-1234 g", "f [REDACTED] g"),
        // A value that holds an escape, behind another that eats its first
        // character: only the match before cleaning sees it.
        ("h \x1b[pass\x1b[1mword-1234 i", "h [REDACTED] i"),
    ] {
        let tail = tail_of(&redactor, &[line.as_bytes()]);
        assert_eq!(tail, expected, "{line:?}");
    }
}

#[test]
fn overlapping_occurrences_are_all_replaced() {
    let redactor = Redactor::new(["abca", "aaaa", "xyxyx"]);
    for (line, expected) in [
        ("abcabca", "[REDACTED]"),
        ("k=abcabcabca!", "k=[REDACTED]!"),
        ("abcab", "[REDACTED]b"),
        ("baaaaaab", "b[REDACTED]b"),
        ("xyxyxyx xyxy", "[REDACTED] xyxy"),
    ] {
        assert_eq!(redactor.redact_line(line), expected, "{line:?}");
        assert_eq!(tail_of(&redactor, &[line.as_bytes()]), expected);
    }
}

#[test]
fn cleaning_tracks_where_ranges_end_up() {
    let text = "  ab\x1b[31mcd  \x1b]0;gone\x07ef \x1b[xyz\t";
    let ranges = [(2, 4), (4, 13), (15, 25), (27, 30), (30, 35)];
    let (cleaned, spans) = clean_tracking(text, &ranges);
    assert_eq!(cleaned, clean_line(text));
    assert_eq!(cleaned, "abcd ef yz");
    let found: Vec<&str> = spans
        .iter()
        .map(|span| &cleaned[span.start..span.end])
        .collect();
    // `ab`; `\x1b[31mcd`; the OSC alone leaves nothing; `ef` without the space
    // before it; `\x1b[x` leaves nothing; `yz\t` leaves `yz`.
    assert_eq!(found, ["ab", "cd", "ef", "yz"]);
    assert!(clean_tracking("", &[(0, 0)]).1.is_empty());
}

#[test]
fn env_values_never_survive_in_part() {
    // The corpus ends with lines where an escape eats the first character of an
    // environment value, or splits one: no run of all but one of its characters
    // may survive, whatever the chunking.
    let redactor = corpus_redactor();
    let input = CORPUS.as_bytes();
    for chunks in [vec![input.len()], vec![1], vec![5], vec![13, 2, 7]] {
        let tail = collect(&redactor, usize::MAX, input, &chunks);
        for value in ENV
            .lines()
            .filter(|value| value.len() >= MIN_EXACT_VALUE_BYTES)
        {
            let run = longest_run(&tail, value);
            assert!(run < value.len() - 1, "{run} of {value:?} in {tail}");
        }
        assert!(
            tail.contains("upstream said [REDACTED] is invalid"),
            "{tail}"
        );
        assert!(tail.contains("with [REDACTED] refused"), "{tail}");
        assert!(tail.contains("split by colour: [REDACTED] done"), "{tail}");
    }
}

#[test]
fn tail_is_cut_on_a_char_boundary() {
    for max in 1..40 {
        let mut collector = StderrCollector::new(Redactor::default(), max);
        collector.push("héllo wörld ✓✓ 日本語 😀😀\nend 😀\n".as_bytes());
        let tail = collector.tail();
        assert!(tail.len() <= max, "{max}: {tail:?}");
        assert!(
            "héllo wörld ✓✓ 日本語 😀😀 end 😀".ends_with(tail),
            "{max}: {tail:?}"
        );
        assert!(!tail.starts_with(' '));
    }
    let mut collector = StderrCollector::new(Redactor::default(), 0);
    collector.push(b"anything\n");
    assert_eq!(collector.tail(), "");
}

#[test]
fn utf8_split_across_chunks_and_invalid_bytes() {
    let mut collector = StderrCollector::new(Redactor::default(), 100);
    let text = "naïve 😀 ok\n".as_bytes();
    for byte in text {
        collector.push(std::slice::from_ref(byte));
    }
    collector.push(b"bad \xff\xfe bytes\n");
    assert_eq!(collector.tail(), "naïve 😀 ok bad \u{FFFD}\u{FFFD} bytes");
}

#[test]
fn debug_never_prints_values() {
    let redactor = Redactor::new(["super-secret-value-1", "another-secret-2"]);
    let shown = format!("{redactor:?}");
    assert!(
        !shown.contains("super-secret") && !shown.contains("another-secret"),
        "{shown}"
    );
    assert!(shown.contains('2'));
    let mut collector = StderrCollector::new(redactor, 100);
    collector.push(b"partial super-secret-value-1");
    let shown = format!("{collector:?}");
    assert!(!shown.contains("super-secret"), "{shown}");
}

#[test]
fn types_can_cross_threads() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Redactor>();
    assert_send_sync::<StderrCollector>();
}

#[test]
fn an_unterminated_pem_block_hides_the_rest() {
    let mut collector = StderrCollector::new(Redactor::default(), 4096);
    collector.push(b"-----BEGIN PRIVATE KEY-----\nMIIEvgIBADANBg\nlater: ordinary text\n");
    collector.finish();
    assert_eq!(collector.tail(), "-----BEGIN PRIVATE KEY----- [REDACTED]");
}

#[test]
fn short_values_are_ignored() {
    let redactor = Redactor::new(["", "a", "ab", "abc", "abcd"]);
    assert_eq!(redactor.redact_line("a ab abc abcd"), "a ab abc [REDACTED]");
}

#[test]
fn adversarial_lines_are_linear() {
    let redactor = Redactor::new(["needle-value-0", "needle-value-1", "needle-value-2"]);
    let size = MAX_STDERR_LINE_BYTES;
    let fill = |pattern: &str| pattern.repeat(size / pattern.len() + 1)[..size].to_owned();
    let lines = [
        fill("a"),
        fill("token="),
        fill("token:\"a"),
        fill("token='"),
        fill("\\\"token\\\":\\\"x"),
        fill("--token "),
        fill("eyJa."),
        fill("eyJ-"),
        fill("://a"),
        fill("://a@"),
        fill("-----BEGIN "),
        fill("-----BEGIN PRIVATE KEY-----"),
        fill("-----END PRIVATE KEY-----"),
        fill("Bearer "),
        fill("Basic QUJD"),
        fill("aB3/"),
        fill("ghp_"),
        fill("AKIAAAAAAAAAAAAAAAAA"),
        fill("needle-value-"),
        fill("é"),
    ];
    // Units of work (see `work`) per byte of the line, for redacting it alone and in
    // a collector. Measured at 38.5 at most (`\"token\":\"x` repeated; 25 for a
    // line of `a`s). The count does not depend on the machine or its load, so the
    // headroom is for changes to the code: 64 leaves room for a pass or two more,
    // while a matcher that rescans from each position does about `len / 2` per
    // byte, tens of thousands here.
    const WORK_PER_BYTE: usize = 64;
    for line in &lines {
        work::take();
        let out = redactor.redact_line(line);
        let mut collector = StderrCollector::new(redactor.clone(), 2048);
        collector.push(line.as_bytes());
        collector.finish();
        let work = work::take();
        assert!(
            work.total() <= WORK_PER_BYTE * line.len(),
            "{:?}: {} units for {} bytes: {work:?}",
            &line[..16],
            work.total(),
            line.len()
        );
        assert!(out.len() <= line.len() * (REDACTED.len() + 1));
    }
    // Escapes everywhere make every value of up to MAX_GAPPED_VALUE_BYTES go
    // through the interrupted-occurrence matcher: `1 + len / 64` words per byte of
    // the line, per value.
    let long = "a\x1b".repeat(MAX_GAPPED_VALUE_BYTES / 2);
    let needle = "needle-value-0";
    let redactor = Redactor::new([long.as_str(), needle]);
    let words: usize = [long.len(), needle.len()]
        .iter()
        .map(|len| 1 + len / 64)
        .sum();
    // The matcher's words per byte of the line and per word of its states
    // (`words`): measured at 6.03. The line is matched as written twice (by
    // `redact_line` and by the collector; what the collector cleans it to has no
    // escapes left), three passes each (backward, backward again block by block,
    // forward), plus the stored states. 8 leaves room for a little more, not for a
    // fourth pass on each; the rest of the work measured at 29 per byte at most.
    const GAPPED_WORK_PER_WORD: usize = 8;
    for line in [fill("\x1ba"), fill("a\x1b[1;"), fill("\x1b]a"), fill("a")] {
        work::take();
        redactor.redact_line(&line);
        let mut collector = StderrCollector::new(redactor.clone(), 2048);
        collector.push(line.as_bytes());
        collector.finish();
        let work = work::take();
        let gapped = work.of(work::Pass::Gapped);
        assert!(
            gapped <= GAPPED_WORK_PER_WORD * words * line.len(),
            "{:?}: {gapped} words for {} bytes: {work:?}",
            &line[..4],
            line.len()
        );
        // Everything else is as linear as above.
        assert!(
            work.total() - gapped <= WORK_PER_BYTE * line.len(),
            "{:?}: {} units for {} bytes: {work:?}",
            &line[..4],
            work.total() - gapped,
            line.len()
        );
    }
}

#[test]
fn many_short_lines_with_a_large_cap() {
    let mut collector = StderrCollector::new(Redactor::default(), 1 << 20);
    for index in 0..50_000 {
        collector.push(format!("line {index}\n").as_bytes());
    }
    assert!(collector.tail().ends_with("line 49999"));
    assert!(collector.tail().len() <= 1 << 20);
}

mod properties {
    use super::super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn redact_line_never_panics(line in any::<String>()) {
            let redactor = Redactor::new(["secret-value", "ü-ünïcode"]);
            let _ = redactor.redact_line(&line);
        }

        #[test]
        fn redact_line_never_panics_on_structured_text(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("token"), Just("="), Just(":"), Just("\""), Just("'"), Just("\\"),
                    Just(" "), Just("--"), Just("Bearer "), Just("Basic "), Just("://"),
                    Just("@"), Just("-----BEGIN "), Just("-----END "), Just("PRIVATE KEY"),
                    Just("-----"), Just("eyJ"), Just("."), Just("ghp_"), Just("é"),
                    Just("😀"), Just("<"), Just(">"), Just("aB3xY9"), Just("\u{1b}["),
                ],
                0..40,
            )
        ) {
            let line = parts.concat();
            let redactor = Redactor::new(["aB3xY9"]);
            let out = redactor.redact_line(&line);
            prop_assert!(!out.contains("aB3xY9"));
            let mut collector = StderrCollector::new(redactor, 64);
            collector.push(line.as_bytes());
            collector.push(b"\n");
            collector.push(line.as_bytes());
            collector.finish();
            prop_assert!(collector.tail().len() <= 64);
        }

        #[test]
        fn chunking_does_not_matter(
            bytes in proptest::collection::vec(
                prop_oneof![any::<u8>(), Just(b'\n'), Just(b'\r'), Just(b' ')],
                0..400,
            ),
            cuts in proptest::collection::vec(1usize..50, 1..20),
            max in 1usize..80,
        ) {
            let redactor = Redactor::new(["\u{fffd}\u{fffd}xx"]);
            let mut whole = StderrCollector::new(redactor.clone(), max);
            whole.push(&bytes);
            whole.finish();
            let mut chunked = StderrCollector::new(redactor, max);
            let mut rest = &bytes[..];
            for cut in cuts.iter().cycle() {
                if rest.is_empty() {
                    break;
                }
                let cut = (*cut).min(rest.len());
                chunked.push(&rest[..cut]);
                rest = &rest[cut..];
            }
            chunked.finish();
            prop_assert_eq!(whole.tail(), chunked.tail());
            prop_assert!(whole.tail().len() <= max);
        }
    }
}

#[test]
fn overlapping_occurrences_of_many_values_stay_one_range() {
    // 50 values that all occur at almost every position of a line of `a`s: what
    // the matcher keeps is the union, one range, not one per occurrence.
    let values: Vec<String> = (4..54).map(|len| "a".repeat(len)).collect();
    let redactor = Redactor::new(&values);
    let line = "a".repeat(MAX_STDERR_LINE_BYTES);
    assert_eq!(redactor.exact_ranges(&line), [(0, line.len())]);
    assert_eq!(
        redactor.redact_line(&format!("x {line} y")),
        "x [REDACTED] y"
    );
}
