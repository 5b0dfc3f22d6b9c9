//! A bounded newline framer for stdio.
//!
//! Modeled on `tokio_util::codec::LinesCodec`: it remembers how far it has scanned so
//! bytes are never rescanned, and it enforces a maximum frame length. Unlike
//! `LinesCodec` an over-long line is not skipped: it is a protocol error that ends the
//! session at once, without reading the rest of the line. A partial line at EOF is not
//! a message.
//!
//! Memory: the buffer never holds more than one partial frame of at most
//! `max_frame_bytes` bytes plus one read chunk ([`READ_CHUNK_BYTES`]).

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// How many bytes one read asks for.
pub const READ_CHUNK_BYTES: usize = 64 * 1024;

/// What the framer produced.
#[derive(Debug, PartialEq, Eq)]
pub enum Framed {
    /// One complete line, without its `\n` (and without a trailing `\r`).
    Frame(Bytes),
    /// A line grew past the limit before its newline arrived.
    TooLong,
    /// The stream ended. Any partial line is discarded.
    Eof,
}

/// The pure decoding state: bytes in, frames out. Used by [`FramedReader`]; exposed
/// for tests and fuzzing (arbitrary chunking of the same bytes gives the same frames).
#[derive(Debug)]
pub struct LineDecoder {
    buf: BytesMut,
    /// Bytes at the front of `buf` already known to contain no newline.
    scanned: usize,
    max_frame_bytes: usize,
}

impl LineDecoder {
    /// A decoder that refuses lines longer than `max_frame_bytes` (excluding the newline).
    pub fn new(max_frame_bytes: usize) -> Self {
        LineDecoder {
            buf: BytesMut::new(),
            scanned: 0,
            max_frame_bytes,
        }
    }

    /// Appends raw bytes.
    pub fn extend(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// Takes the next complete frame, [`Framed::TooLong`] when the pending line is
    /// over the limit, or `None` when more bytes are needed.
    pub fn decode(&mut self) -> Option<Framed> {
        match memchr::memchr(b'\n', &self.buf[self.scanned..]) {
            Some(offset) => {
                let end = self.scanned + offset;
                self.scanned = 0;
                let mut line = self.buf.split_to(end + 1);
                line.truncate(end);
                if line.last() == Some(&b'\r') {
                    line.truncate(end - 1);
                }
                if line.len() > self.max_frame_bytes {
                    return Some(Framed::TooLong);
                }
                Some(Framed::Frame(line.freeze()))
            }
            None => {
                self.scanned = self.buf.len();
                // Allow one byte for a trailing '\r' that would be stripped.
                if self.buf.len() > self.max_frame_bytes.saturating_add(1) {
                    Some(Framed::TooLong)
                } else {
                    None
                }
            }
        }
    }

    /// Bytes currently retained (the partial frame plus undecoded input).
    pub fn retained_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Capacity currently allocated for the buffer.
    pub fn retained_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// How many bytes the next read may add: never more than the pending line can
    /// still legally grow by (+2 to see "over"), so a flood cannot make one read
    /// take the buffer past the bound.
    fn read_room(&mut self) -> usize {
        let room = self
            .max_frame_bytes
            .saturating_add(2)
            .saturating_sub(self.buf.len())
            .clamp(1, READ_CHUNK_BYTES);
        let needed = self.buf.len() + room;
        if self.buf.capacity() < needed {
            // Grow geometrically, but never past one bounded frame plus one read
            // (`BytesMut::reserve` alone would double past the bound).
            let ceiling = self.max_frame_bytes.saturating_add(2 + READ_CHUNK_BYTES);
            let capacity = (self.buf.capacity() * 2).clamp(needed, ceiling.max(needed));
            let mut grown = BytesMut::with_capacity(capacity);
            grown.extend_from_slice(&self.buf);
            self.buf = grown;
        }
        room
    }
}

/// An async reader of bounded newline-delimited frames.
#[derive(Debug)]
pub struct FramedReader<R> {
    reader: R,
    decoder: LineDecoder,
}

impl<R: AsyncRead + Unpin> FramedReader<R> {
    /// Wraps `reader` with a frame limit of `max_frame_bytes`.
    pub fn new(reader: R, max_frame_bytes: usize) -> Self {
        FramedReader {
            reader,
            decoder: LineDecoder::new(max_frame_bytes),
        }
    }

    /// The decoder, for memory assertions.
    pub fn decoder(&self) -> &LineDecoder {
        &self.decoder
    }

    /// A frame (or an over-long line) already buffered, without reading.
    pub fn try_next(&mut self) -> Option<Framed> {
        self.decoder.decode()
    }

    /// Reads until a frame, an over-long line or EOF. I/O errors count as EOF.
    pub async fn next(&mut self) -> Framed {
        loop {
            if let Some(framed) = self.decoder.decode() {
                return framed;
            }
            let room = self.decoder.read_room();
            let mut take = (&mut self.reader).take(room as u64);
            match take.read_buf(&mut self.decoder.buf).await {
                Ok(0) | Err(_) => return Framed::Eof,
                Ok(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames_of(chunks: &[&[u8]], max: usize) -> Vec<Framed> {
        let mut decoder = LineDecoder::new(max);
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.extend(chunk);
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

    fn frame(s: &str) -> Framed {
        Framed::Frame(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn splits_bursts_and_strips_cr() {
        let got = frames_of(&[b"a\nbb\r\n\nccc\n"], 16);
        assert_eq!(got, vec![frame("a"), frame("bb"), frame(""), frame("ccc")]);
    }

    #[test]
    fn newline_split_across_reads() {
        let got = frames_of(&[b"{\"a\"", b":1}", b"\n", b"x"], 16);
        assert_eq!(got, vec![frame("{\"a\":1}")]);
    }

    #[test]
    fn exactly_at_limit_passes_one_over_fails() {
        assert_eq!(frames_of(&[b"abcd\n"], 4), vec![frame("abcd")]);
        assert_eq!(frames_of(&[b"abcde\n"], 4), vec![Framed::TooLong]);
        // Without a newline the over-long line is refused as soon as it is visible.
        assert_eq!(frames_of(&[b"abc", b"def"], 4), vec![Framed::TooLong]);
        // A CR before the newline does not count.
        assert_eq!(frames_of(&[b"abcd\r\n"], 4), vec![frame("abcd")]);
    }

    #[test]
    fn any_chunking_gives_the_same_frames() {
        let input = b"one\ntwo\r\n\nthree four\nfive";
        let whole = frames_of(&[input], 64);
        for size in 1..input.len() {
            let chunks: Vec<&[u8]> = input.chunks(size).collect();
            assert_eq!(frames_of(&chunks, 64), whole, "chunk size {size}");
        }
    }

    #[tokio::test]
    async fn partial_line_at_eof_is_not_a_message() {
        let data: &[u8] = b"full\npartial";
        let mut reader = FramedReader::new(data, 64);
        assert_eq!(reader.next().await, frame("full"));
        assert_eq!(reader.next().await, Framed::Eof);
    }

    #[tokio::test]
    async fn flood_without_newline_stops_at_the_bound() {
        // 8 MiB of 'a' with a 4 KiB limit: the reader gives up once it has seen
        // just over 4 KiB, never buffering the flood.
        let flood = vec![b'a'; 8 << 20];
        let mut reader = FramedReader::new(&flood[..], 4096);
        assert_eq!(reader.next().await, Framed::TooLong);
        assert!(reader.decoder().retained_bytes() <= 4096 + 2);
        assert!(reader.decoder().retained_capacity() <= 4096 + 2 + READ_CHUNK_BYTES);
    }
}
