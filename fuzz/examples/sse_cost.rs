//! Measures what the SSE path costs per body shape, through the real HTTP
//! transport (no socket: a layer answers with the body in the chunks given).
//! `cargo +nightly run --release --example sse_cost` from `fuzz/`; see DOS.md.

use std::time::Instant;

use bytes::Bytes;
use smthrs_mcp_fuzz::http_sse::deliver;

fn time(label: &str, n: usize, chunks: Vec<Bytes>, max: usize) {
    let bytes: usize = chunks.iter().map(Bytes::len).sum();
    let count = chunks.len();
    let started = Instant::now();
    let (frames, end) = deliver(false, chunks, max);
    let elapsed = started.elapsed();
    println!(
        "{label:<40} n={n:>7} body={bytes:>8} B in {count:>6} chunks: {:>9.1} ms, {} frames, {end}",
        elapsed.as_secs_f64() * 1000.0,
        frames.len()
    );
}

fn split(body: Vec<u8>, size: usize) -> Vec<Bytes> {
    body.chunks(size).map(Bytes::copy_from_slice).collect()
}

fn main() {
    const MAX: usize = 1 << 20; // the default maxFrameBytes
    for n in [16_384usize, 32_768, 65_536, 131_072] {
        time(
            "blank lines, one chunk",
            n,
            vec![Bytes::from(vec![b'\n'; n])],
            MAX,
        );
    }
    for n in [16_384usize, 32_768, 65_536, 131_072] {
        time(
            "comment lines (\":\\n\"), one chunk",
            n,
            vec![Bytes::from(b":\n".repeat(n / 2))],
            MAX,
        );
    }
    for n in [65_536usize, 131_072, 262_144, 524_288] {
        let mut body = b"data: ".to_vec();
        body.extend(std::iter::repeat_n(b'x', n));
        body.extend_from_slice(b"\n\n");
        time("one data line, 64-byte chunks", n, split(body, 64), MAX);
    }
    for n in [65_536usize, 131_072, 262_144, 524_288] {
        let body = b"data: x\n\n".repeat(n / 9);
        time(
            "small events (baseline), 64-byte chunks",
            n,
            split(body, 64),
            MAX,
        );
    }
}
