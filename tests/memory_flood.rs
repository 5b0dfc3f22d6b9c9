//! A server that writes 512 MiB without a newline: the session must end with
//! `protocol_error` while the client's memory stays near `maxFrameBytes`.
//!
//! This file holds the only tests in its process, so the process's peak resident
//! set (VmHWM) is a fair measure of what the client retained.

mod support;

use smthrs_mcp::fuzzing::{Framed, FramedReader, READ_CHUNK_BYTES};
use smthrs_mcp::{Client, ErrorKind, Limits};
use tokio::io::AsyncWriteExt;

const FLOOD: &str = "flood-stdout"; // 512 MiB of 'a', no newline

/// The framer's own buffer never exceeds one bounded partial frame plus one read.
#[tokio::test]
async fn framer_retains_one_bounded_partial_frame() {
    let max = 1 << 20;
    let mut child = tokio::process::Command::new(support::scripted_server())
        .arg(support::scenario_path(FLOOD))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{}}\n")
        .await
        .unwrap();
    let mut reader = FramedReader::new(child.stdout.take().unwrap(), max);
    assert_eq!(reader.next().await, Framed::TooLong);
    let decoder = reader.decoder();
    assert!(
        decoder.retained_bytes() <= max + 2,
        "{}",
        decoder.retained_bytes()
    );
    assert!(
        decoder.retained_capacity() <= max + 2 + READ_CHUNK_BYTES,
        "{}",
        decoder.retained_capacity()
    );
}

fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Through the whole client: `protocol_error`, and the peak RSS stays within
/// 3 x the framing bound + 16 MiB of what the process had before. The framing
/// bound is the larger of maxFrameBytes and maxResourceBytes (a resources/read
/// reply may be that long, beyond-tools.md Q3): 16 MiB by default.
#[tokio::test]
async fn client_fails_the_flood_with_bounded_memory() {
    let limits = Limits::default();
    let before = peak_rss_bytes();
    let error = Client::builder("flood")
        .limits(limits)
        .connect(support::scenario(FLOOD).stdio())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ProtocolError, "{error}");
    assert!(error.to_string().contains("maxFrameBytes"));
    if let (Some(before), Some(after)) = (before, peak_rss_bytes()) {
        // The framing bound: a resources/read reply may carry maxResourceBytes
        // as base64 plus 64 KiB of envelope (Limits::read_frame_bytes).
        let read_frame =
            (limits.max_resource_bytes.div_ceil(3) * 4 + 65_536).max(limits.max_frame_bytes);
        let budget = 3 * read_frame + (16 << 20);
        assert!(
            after.saturating_sub(before) <= budget,
            "peak RSS grew by {} bytes (budget {budget})",
            after - before
        );
    }
}
