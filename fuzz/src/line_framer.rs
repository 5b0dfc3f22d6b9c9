//! The bounded line framer (`transport::framing`).
//!
//! Input: byte 0 picks `max_frame_bytes` (1..=96), bytes 1..9 seed a chunking, the
//! rest is the stream. Properties:
//!
//! - the frames equal those of a reference splitter (split at `\n`, strip one `\r`,
//!   refuse a line over the limit, refuse a partial line over limit + 1), for the
//!   whole input as one chunk, one byte at a time, and a seeded random chunking;
//! - the async `FramedReader`, fed the same bytes in the same chunks by a reader
//!   that returns short reads, gives the same frames and then `Eof` (a partial line
//!   at EOF is not a message), and never retains more than one bounded partial frame
//!   (`max + 2` bytes, capacity `max + 2 + READ_CHUNK_BYTES`).

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use smthrs_mcp::fuzzing::{Framed, FramedReader, LineDecoder, READ_CHUNK_BYTES};
use tokio::io::{AsyncRead, ReadBuf};

use super::util::{chunks, seed_of, with_runtime};

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    if data.len() < 9 {
        return;
    }
    let max = 1 + data[0] as usize % 96;
    let seed = seed_of(&data[1..9]);
    let stream = &data[9..];
    let expected = reference(stream, max);

    assert_eq!(decode(&[stream], max), expected, "one chunk");
    let bytes: Vec<&[u8]> = stream.chunks(1).collect();
    assert_eq!(decode(&bytes, max), expected, "byte at a time");
    let random = chunks(stream, seed, 1 + (seed >> 56) as usize % 48);
    assert_eq!(decode(&random, max), expected, "seeded chunking");

    let mut want = reference(stream, max);
    if want.last() != Some(&Framed::TooLong) {
        want.push(Framed::Eof);
    }
    assert_eq!(read_async(&random, max), want, "FramedReader");
}

/// The reference: what the framer must produce for `stream` (no EOF marker).
fn reference(stream: &[u8], max: usize) -> Vec<Framed> {
    let mut out = Vec::new();
    let mut rest = stream;
    while let Some(newline) = rest.iter().position(|&b| b == b'\n') {
        let mut line = &rest[..newline];
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        if line.len() > max {
            out.push(Framed::TooLong);
            return out;
        }
        out.push(Framed::Frame(Bytes::copy_from_slice(line)));
        rest = &rest[newline + 1..];
    }
    // A partial line may hold one byte over the limit: a '\r' that would be stripped.
    if rest.len() > max + 1 {
        out.push(Framed::TooLong);
    }
    out
}

fn decode(pieces: &[&[u8]], max: usize) -> Vec<Framed> {
    let mut decoder = LineDecoder::new(max);
    let mut out = Vec::new();
    for piece in pieces {
        decoder.extend(piece);
        while let Some(framed) = decoder.decode() {
            let stop = framed == Framed::TooLong;
            out.push(framed);
            if stop {
                return out;
            }
        }
    }
    out
}

/// An `AsyncRead` that returns the given chunks, one short read at a time.
struct Chunked(VecDeque<Vec<u8>>);

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(front) = self.0.front_mut() {
            let n = front.len().min(buf.remaining());
            buf.put_slice(&front[..n]);
            front.drain(..n);
            if front.is_empty() {
                self.0.pop_front();
            }
        }
        Poll::Ready(Ok(()))
    }
}

fn read_async(pieces: &[&[u8]], max: usize) -> Vec<Framed> {
    let source = Chunked(pieces.iter().map(|p| p.to_vec()).collect());
    with_runtime(|rt| {
        rt.block_on(async {
            let mut reader = FramedReader::new(source, max);
            let mut out = Vec::new();
            loop {
                let framed = reader.next().await;
                let decoder = reader.decoder();
                assert!(
                    decoder.retained_bytes() <= max + 2,
                    "retained {} bytes with a limit of {max}",
                    decoder.retained_bytes()
                );
                assert!(
                    decoder.retained_capacity() <= max + 2 + READ_CHUNK_BYTES,
                    "capacity {} with a limit of {max}",
                    decoder.retained_capacity()
                );
                let stop = matches!(framed, Framed::TooLong | Framed::Eof);
                out.push(framed);
                if stop {
                    return out;
                }
            }
        })
    })
}
