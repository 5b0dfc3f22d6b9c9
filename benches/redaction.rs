//! The stderr redaction matcher, timed on a realistic stream: 10,000 lines of a
//! server's log (levels, key=value pairs, JSON, URLs, colour escapes on some
//! lines), through a `StderrCollector` whose redactor holds 0, 5 or 50
//! environment values of 8 to 64 bytes, a few of them planted in the stream.
//!
//! `cargo bench --bench redaction` prints the median of 15 runs per case.
//! `redaction --once N` runs case N (0, 5 or 50 values) once, for
//! `valgrind --tool=callgrind --toggle-collect='*redaction::run*'`, whose
//! instruction count is the figure `docs/benchmarks-notebook.md` uses ("Third round:
//! the redaction matcher"; the machine is shared).

use std::hint::black_box;
use std::time::Instant;

use smthrs_mcp::fuzzing::{Redactor, StderrCollector};

const LINES: usize = 10_000;
const CASES: [usize; 3] = [0, 5, 50];

/// A deterministic generator (an LCG), so every run sees the same stream.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `count` values of 8 to 64 bytes drawn from the characters environment values use.
fn env_values(count: usize, rng: &mut Lcg) -> Vec<String> {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_./:";
    (0..count)
        .map(|_| {
            let len = 8 + rng.below(57);
            (0..len)
                .map(|_| char::from(CHARS[rng.below(CHARS.len())]))
                .collect()
        })
        .collect()
}

/// The stream: ordinary log lines, 1 in 100 carrying one of `values`, 1 in 30
/// coloured with escapes (so the matcher across hidden bytes runs too).
fn stream(values: &[String], rng: &mut Lcg) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "connected",
        "listening",
        "request",
        "response",
        "tool",
        "call",
        "cache",
        "miss",
        "retry",
        "upstream",
        "session",
        "started",
        "closed",
        "elapsed",
        "bytes",
        "rows",
    ];
    let mut out = Vec::with_capacity(LINES * 90);
    for line in 0..LINES {
        let colour = rng.below(30) == 0;
        if colour {
            out.extend_from_slice(b"\x1b[32m");
        }
        out.extend_from_slice(
            format!(
                "2026-07-28T12:{:02}:{:02}.{:03}Z INFO ",
                line / 60 % 60,
                line % 60,
                rng.below(1000)
            )
            .as_bytes(),
        );
        if colour {
            out.extend_from_slice(b"\x1b[0m");
        }
        match rng.below(6) {
            0 => out.extend_from_slice(
                format!(
                    "{{\"level\":\"info\",\"msg\":\"{}\",\"id\":{},\"path\":\"/v1/items/{}\"}}",
                    WORDS[rng.below(WORDS.len())],
                    rng.next(),
                    rng.below(10_000)
                )
                .as_bytes(),
            ),
            1 => out.extend_from_slice(
                format!(
                    "GET https://api.example.com/v2/search?q={} 200 {}ms",
                    WORDS[rng.below(WORDS.len())],
                    rng.below(900)
                )
                .as_bytes(),
            ),
            2 => out.extend_from_slice(
                format!(
                    "worker={} queue_depth={} max_tokens={} elapsed_ms={}",
                    rng.below(16),
                    rng.below(100),
                    rng.below(4096),
                    rng.below(5000)
                )
                .as_bytes(),
            ),
            _ => {
                for _ in 0..6 + rng.below(8) {
                    out.extend_from_slice(WORDS[rng.below(WORDS.len())].as_bytes());
                    out.push(b' ');
                }
            }
        }
        if !values.is_empty() && rng.below(100) == 0 {
            out.extend_from_slice(b" using ");
            out.extend_from_slice(values[rng.below(values.len())].as_bytes());
        }
        out.push(b'\n');
    }
    out
}

/// One pass: the whole stream through a collector, in 4 KiB reads.
#[inline(never)]
fn run(redactor: &Redactor, input: &[u8]) -> usize {
    let mut collector = StderrCollector::new(redactor.clone(), 2048);
    for chunk in input.chunks(4096) {
        collector.push(chunk);
    }
    collector.finish();
    collector.tail().len()
}

fn case(count: usize) -> (Redactor, Vec<u8>) {
    let mut rng = Lcg(0x5eed + count as u64);
    let values = env_values(count, &mut rng);
    let input = stream(&values, &mut rng);
    (Redactor::new(&values), input)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--once") {
        let count: usize = args[at + 1].parse().expect("--once N");
        let (redactor, input) = case(count);
        black_box(run(&redactor, &input));
        return;
    }
    for count in CASES {
        let (redactor, input) = case(count);
        let mut times: Vec<f64> = (0..15)
            .map(|_| {
                let start = Instant::now();
                black_box(run(&redactor, black_box(&input)));
                start.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        times.sort_by(f64::total_cmp);
        println!(
            "{count:>2} values: median {:.2} ms for {LINES} lines ({} bytes)",
            times[times.len() / 2],
            input.len()
        );
    }
}
