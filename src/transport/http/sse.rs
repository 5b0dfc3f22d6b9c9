//! Reading server-sent events within bounds: [`BoundedSse`] bounds each event
//! and splits the byte stream into complete lines; [`SseData`] dispatches the
//! events' data from those lines.
//!
//! [`BoundedSse`] sits between the response body and the dispatch. It
//!
//! - counts the bytes since the last event boundary (a blank line, with `\n`, `\r`
//!   or `\r\n` line ends) and fails with [`SseByteError::TooLarge`] as soon as one
//!   event exceeds its limit, so an endless event fails at the limit instead of
//!   growing any buffer;
//! - validates UTF-8 incrementally and fails with [`SseByteError::Malformed`] on an
//!   invalid sequence;
//! - records, in its [`SseCursor`], the last event id (committed at each event
//!   boundary, as the HTML spec does, including for events without data) and the
//!   server's `retry:` reconnection time, which resumption needs even for the
//!   data-less "priming" event a server sends before closing a stream on purpose;
//! - forwards only complete lines, one per item, and holds an incomplete line
//!   itself (within the event bound), so every byte is scanned a bounded number
//!   of times whatever the chunking. A line ends at a `\r` at once (a `\n` that
//!   follows it, even in the next chunk, belongs to the same line end), so a
//!   final blank line that is a lone `\r` at the end of the body dispatches;
//! - strips a leading byte-order mark whatever the chunking.
//!
//! The limit given to [`BoundedSse::new`] is the raw event size: the transport
//! passes `maxFrameBytes` plus [`SSE_FRAMING_ALLOWANCE`] for field names, `id:` and
//! `event:` lines, and checks each event's `data` against `maxFrameBytes` exactly.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_util::Stream;

use crate::http::BoxError;

/// Raw bytes an event may carry beyond its data: field names, line ends, `id:`,
/// `event:` and `retry:` lines.
pub(crate) const SSE_FRAMING_ALLOWANCE: usize = 16 * 1024;

/// The longest `id:` or `retry:` line kept; a longer id cannot be used to resume.
const MAX_FIELD_LINE: usize = 1024;

/// What a stream told us about resuming it.
#[derive(Debug, Default, Clone)]
pub(crate) struct SseCursor {
    /// The last event id seen at an event boundary (`None`: none, or reset to empty).
    pub(crate) last_event_id: Option<String>,
    /// The server's last `retry:` value.
    pub(crate) retry: Option<Duration>,
}

/// Errors of [`BoundedSse`].
pub(crate) enum SseByteError {
    /// One event exceeded the limit.
    TooLarge,
    /// The bytes are not UTF-8.
    Malformed,
    /// The body failed (connection reset, ...): the stream may be resumed.
    Body,
}

impl fmt::Debug for SseByteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for SseByteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SseByteError::TooLarge => "event too large",
            SseByteError::Malformed => "invalid UTF-8",
            SseByteError::Body => "body error",
        })
    }
}

/// See the [module docs](self).
pub(crate) struct BoundedSse<S> {
    inner: S,
    limit: usize,
    /// Bytes since the last event boundary.
    event_bytes: usize,
    /// The previous byte was `\r` (a following `\n` belongs to the same line end).
    prev_cr: bool,
    /// Bytes of the current line (any length).
    line_len: usize,
    /// The start of the current line while it may be an `id` or `retry` line
    /// (the only fields read here), up to `MAX_FIELD_LINE` bytes; other lines
    /// are only counted.
    line: Vec<u8>,
    /// The current line is known not to be an `id` or `retry` line.
    other_field: bool,
    /// The current line has a NUL past the bytes kept in `line` (an `id` with
    /// a NUL is ignored, however long).
    nul_past_kept: bool,
    /// The spec's "last event ID buffer".
    id_buffer: Option<String>,
    /// `id_buffer` changed since the cursor last took it (the cursor holds it
    /// otherwise: it is seeded from the cursor, and only this stream writes it).
    id_changed: bool,
    /// An incomplete UTF-8 sequence carried over from the previous chunk.
    utf8_carry: Vec<u8>,
    /// Owned while the stream is read, handed back by [`SseData::into_cursor`]
    /// (one stream at a time resumes a request: no lock, no shared allocation).
    cursor: SseCursor,
    failed: bool,
    /// The stream's first bytes, held until they are known not to be (or have been
    /// stripped of) a byte-order mark, whatever the chunking (the parser used
    /// before [`SseData`] panicked on one: found by the `http_sse` fuzz target).
    head: Option<Vec<u8>>,
    /// The rest of the current chunk: already scanned, not yet forwarded.
    pending: Bytes,
    /// Where `pending` starts in its chunk.
    pending_start: usize,
    /// The line ends the scan of the current chunk found (offsets in the chunk),
    /// the first [`RECORDED_ENDS`] of them, so that forwarding the lines does not
    /// search for them again; `ends_taken` of them are forwarded.
    ends: [u32; RECORDED_ENDS],
    ends_found: u8,
    ends_taken: u8,
    /// `ends` holds every line end of the chunk (else the rest is searched for).
    ends_complete: bool,
    /// The start of a line whose end has not arrived (within the event bound).
    partial: Vec<u8>,
    /// The last forwarded line ended with `\r`: a `\n` right after it is part of
    /// that line end, even at the start of the next chunk.
    skip_lf: bool,
    /// Bytes examined so far, by both passes (see `linear_work_whatever_the_chunking`).
    #[cfg(test)]
    examined: usize,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Line ends of a chunk kept from its scan: an event of a few lines, the usual
/// chunk, has them all; a chunk of more lines is searched again past them (the
/// record stays a fixed size however many lines a chunk has).
const RECORDED_ENDS: usize = 8;

/// Bytes enough to tell an `id` or `retry` line from any other (`retry:`).
const FIELD_PREFIX: usize = 6;

/// Whether a line starting with `start` (at most [`FIELD_PREFIX`] bytes, or the
/// whole line) may be an `id` or `retry` line: its name so far is a prefix of
/// one of them, or it is one of them followed by the colon.
fn may_be_read(start: &[u8]) -> bool {
    if !matches!(start.first(), None | Some(b'i' | b'r')) {
        return false;
    }
    [&b"id:"[..], b"retry:"]
        .iter()
        .any(|field| field.starts_with(start) || start.starts_with(field))
}

impl<S> BoundedSse<S> {
    /// Bounds `inner`, each event to `limit` raw bytes, reporting ids and `retry`
    /// into `cursor` (whose current id seeds the id buffer, so a resumed stream keeps
    /// the id until it sends a new one).
    pub(crate) fn new(inner: S, limit: usize, cursor: SseCursor) -> Self {
        let id_buffer = cursor.last_event_id.clone();
        BoundedSse {
            inner,
            limit,
            event_bytes: 0,
            prev_cr: false,
            line_len: 0,
            line: Vec::new(),
            other_field: false,
            nul_past_kept: false,
            id_buffer,
            id_changed: false,
            utf8_carry: Vec::new(),
            cursor,
            failed: false,
            head: Some(Vec::new()),
            pending: Bytes::new(),
            pending_start: 0,
            ends: [0; RECORDED_ENDS],
            ends_found: 0,
            ends_taken: 0,
            ends_complete: true,
            partial: Vec::new(),
            skip_lf: false,
            #[cfg(test)]
            examined: 0,
        }
    }

    /// Feeds the stream's first bytes through the BOM check (one leading BOM is
    /// stripped; a second one is field text by the spec: that line is an
    /// unknown field, ignored). `None`: need more.
    fn take_head(&mut self, chunk: Bytes) -> Option<Bytes> {
        let head = self.head.as_mut()?;
        let mut start = if head.is_empty() && chunk.len() >= BOM.len() {
            // The usual case, the whole check in the first chunk: no copy.
            chunk
        } else {
            head.extend_from_slice(&chunk);
            if head.len() < BOM.len() && BOM.starts_with(head) {
                return None;
            }
            Bytes::from(std::mem::take(head))
        };
        self.head = None;
        if start.starts_with(BOM) {
            start.advance(BOM.len());
        }
        Some(start)
    }

    /// Judges a whole chunk (UTF-8, the event bound, ids and `retry`) before any of
    /// it is forwarded, so a chunk that fails delivers none of its events.
    fn scan(&mut self, chunk: &[u8]) -> Result<(), SseByteError> {
        self.count(chunk.len());
        self.check_utf8(chunk)?;
        self.ends_found = 0;
        self.ends_taken = 0;
        self.ends_complete = true;
        // Line by line: the text between line ends is taken in one step (a data
        // line is never copied byte by byte).
        let mut rest = chunk;
        while let Some(&first) = rest.first() {
            if first == b'\n' && self.prev_cr {
                // The `\n` of a `\r\n` line end.
                self.prev_cr = false;
                self.add_event_bytes(1)?;
                rest = &rest[1..];
                continue;
            }
            self.prev_cr = false;
            let Some(end) = memchr::memchr2(b'\n', b'\r', rest) else {
                self.add_event_bytes(rest.len())?;
                self.add_to_line(rest);
                break;
            };
            self.record_end(chunk.len() - rest.len() + end);
            // The line end counts toward the event before the line ends it.
            self.add_event_bytes(end + 1)?;
            self.add_to_line(&rest[..end]);
            self.prev_cr = rest[end] == b'\r';
            self.end_line();
            rest = &rest[end + 1..];
        }
        Ok(())
    }

    /// Keeps the offset of a line end the scan found, while there is room.
    fn record_end(&mut self, at: usize) {
        match u32::try_from(at) {
            Ok(at) if usize::from(self.ends_found) < RECORDED_ENDS => {
                self.ends[usize::from(self.ends_found)] = at;
                self.ends_found += 1;
            }
            _ => self.ends_complete = false,
        }
    }

    /// The next line end in `pending`, as an offset in it: recorded by the
    /// scan, or searched for past the recorded ones.
    fn next_end(&mut self) -> Option<usize> {
        if self.ends_taken < self.ends_found {
            let at = self.ends[usize::from(self.ends_taken)] as usize;
            self.ends_taken += 1;
            return Some(at - self.pending_start);
        }
        if self.ends_complete {
            return None;
        }
        memchr::memchr2(b'\n', b'\r', &self.pending)
    }

    /// Forwards `n` bytes of `pending`.
    fn take_pending(&mut self, n: usize) -> Bytes {
        self.pending_start += n;
        self.pending.split_to(n)
    }

    /// Drops `n` bytes of `pending` (copied, or a line end's `\n`).
    fn skip_pending(&mut self, n: usize) {
        self.pending_start += n;
        self.pending.advance(n);
    }

    /// Counts `n` raw bytes toward the current event's bound.
    fn add_event_bytes(&mut self, n: usize) -> Result<(), SseByteError> {
        self.event_bytes = self.event_bytes.saturating_add(n);
        if self.event_bytes > self.limit {
            return Err(SseByteError::TooLarge);
        }
        Ok(())
    }

    /// Text of the current line: counted, and while the line may be an `id` or
    /// `retry` line kept up to `MAX_FIELD_LINE` (and one byte more, which marks
    /// a longer line as truncated). A `data` line is not copied.
    fn add_to_line(&mut self, mut text: &[u8]) {
        self.line_len += text.len();
        if self.other_field {
            return;
        }
        if self.line.len() < FIELD_PREFIX {
            let probe = text.len().min(FIELD_PREFIX - self.line.len());
            // A line starting here (the usual case) is judged before any copy.
            if self.line.is_empty() && !may_be_read(&text[..probe]) {
                self.other_field = true;
                return;
            }
            self.line.extend_from_slice(&text[..probe]);
            text = &text[probe..];
            if !may_be_read(&self.line) {
                self.other_field = true;
                return;
            }
        }
        let room = (MAX_FIELD_LINE + 1).saturating_sub(self.line.len());
        let (kept, past) = text.split_at(room.min(text.len()));
        self.line.extend_from_slice(kept);
        self.nul_past_kept |= memchr::memchr(0, past).is_some();
    }

    fn end_line(&mut self) {
        if self.line_len == 0 {
            // Blank line: the event boundary. Commit the id, as dispatch does.
            self.event_bytes = 0;
            if std::mem::take(&mut self.id_changed) {
                self.cursor.last_event_id = self.id_buffer.clone().filter(|id| !id.is_empty());
            }
        } else if !self.other_field {
            let line = &self.line[..];
            let truncated = self.line_len > self.line.len();
            let (name, value) = match line.iter().position(|&c| c == b':') {
                Some(i) => (&line[..i], &line[i + 1..]),
                None => (line, &b""[..]),
            };
            let value = value.strip_prefix(b" ").unwrap_or(value);
            match name {
                b"id" if !value.contains(&0) && !self.nul_past_kept => {
                    self.id_changed = true;
                    self.id_buffer = if truncated {
                        // Too long to replay: resumption is not possible with it.
                        Some(String::new())
                    } else {
                        Some(String::from_utf8_lossy(value).into_owned())
                    };
                }
                b"retry"
                    if !truncated && !value.is_empty() && value.iter().all(u8::is_ascii_digit) =>
                {
                    let ms = std::str::from_utf8(value)
                        .ok()
                        .and_then(|v| v.parse::<u64>().ok())
                        .unwrap_or(u64::MAX);
                    self.cursor.retry = Some(Duration::from_millis(ms));
                }
                _ => {}
            }
        }
        self.other_field = false;
        self.nul_past_kept = false;
        self.line.clear();
        self.line_len = 0;
    }

    /// The next complete line of the scanned bytes, ended by one `\n`; `None`:
    /// the rest (if any) is kept in `partial` until its line end arrives.
    fn next_line(&mut self) -> Option<Bytes> {
        if self.skip_lf && !self.pending.is_empty() {
            self.skip_lf = false;
            if self.pending[0] == b'\n' {
                self.count(1);
                self.skip_pending(1);
            }
        }
        if self.pending.is_empty() {
            return None;
        }
        let Some(end) = self.next_end() else {
            self.count(self.pending.len());
            self.partial.extend_from_slice(&self.pending);
            self.pending.clear();
            return None;
        };
        self.count(end + 1);
        let cr = self.pending[end] == b'\r';
        if self.partial.is_empty() {
            // The whole line is in this chunk: forward it without a copy when its
            // line end is already complete.
            if !cr {
                return Some(self.take_pending(end + 1));
            }
            if self.pending.get(end + 1) == Some(&b'\n') {
                self.count(1);
                return Some(self.take_pending(end + 2));
            }
        }
        let mut line = std::mem::take(&mut self.partial);
        line.reserve_exact(end + 1);
        line.extend_from_slice(&self.pending[..end]);
        line.push(b'\n');
        self.skip_pending(end + 1);
        self.skip_lf = cr;
        Some(Bytes::from(line))
    }

    /// Records bytes examined (the tests bound the total by the input's size).
    fn count(&mut self, bytes: usize) {
        #[cfg(test)]
        {
            self.examined += bytes;
        }
        #[cfg(not(test))]
        let _ = bytes;
    }

    fn check_utf8(&mut self, mut chunk: &[u8]) -> Result<(), SseByteError> {
        if !self.utf8_carry.is_empty() {
            let need = match self.utf8_carry[0] {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                _ => 4,
            };
            let take = (need - self.utf8_carry.len()).min(chunk.len());
            self.utf8_carry.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if self.utf8_carry.len() < need {
                // Judge a partial sequence now, so the same bytes fail the same way
                // whatever the chunking (an invalid continuation is invalid at once).
                return match std::str::from_utf8(&self.utf8_carry) {
                    Err(e) if e.error_len().is_some() => Err(SseByteError::Malformed),
                    _ => Ok(()),
                };
            }
            if std::str::from_utf8(&self.utf8_carry).is_err() {
                return Err(SseByteError::Malformed);
            }
            self.utf8_carry.clear();
        }
        match std::str::from_utf8(chunk) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_none() => {
                self.utf8_carry.extend_from_slice(&chunk[e.valid_up_to()..]);
                Ok(())
            }
            Err(_) => Err(SseByteError::Malformed),
        }
    }
}

impl<S> Stream for BoundedSse<S>
where
    S: Stream<Item = Result<Bytes, BoxError>> + Unpin,
{
    type Item = Result<Bytes, SseByteError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        loop {
            if let Some(line) = self.next_line() {
                return Poll::Ready(Some(Ok(line)));
            }
            let chunk = match Pin::new(&mut self.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    // An incomplete line left in `partial` is not a line: dropped.
                    // A stream that ended inside a would-be BOM: pass those bytes on.
                    match self.head.take().filter(|head| !head.is_empty()) {
                        Some(head) => Bytes::from(head),
                        None if !self.utf8_carry.is_empty() => {
                            // Ended inside a UTF-8 sequence: malformed, as it would
                            // be had the bytes arrived in one chunk.
                            self.failed = true;
                            return Poll::Ready(Some(Err(SseByteError::Malformed)));
                        }
                        None => return Poll::Ready(None),
                    }
                }
                Poll::Ready(Some(Err(_))) => {
                    self.failed = true;
                    return Poll::Ready(Some(Err(SseByteError::Body)));
                }
                Poll::Ready(Some(Ok(chunk))) => {
                    if self.head.is_none() {
                        chunk
                    } else {
                        match self.take_head(chunk) {
                            Some(chunk) => chunk,
                            None => continue,
                        }
                    }
                }
            };
            if chunk.is_empty() {
                continue;
            }
            if let Err(e) = self.scan(&chunk) {
                self.failed = true;
                return Poll::Ready(Some(Err(e)));
            }
            self.pending = chunk;
            self.pending_start = 0;
        }
    }
}

/// The data of each event, dispatched from the lines [`BoundedSse`] forwards,
/// as the WHATWG event-stream interpretation does for a consumer that reads
/// only `data`: `data` lines join with `\n`, a blank line dispatches, comments
/// and other fields are ignored (`id` and `retry` are recorded by
/// [`BoundedSse`]), and an event the stream ends inside is discarded. Events
/// without data are not yielded. The data is UTF-8 (the bytes were judged
/// whole) and an event of one `data` line is a slice of that line, not a copy.
///
/// Written here rather than taken from `eventsource-stream`: that crate
/// re-validates UTF-8 into `String`s, parses each line again with `nom` and
/// builds every event's fields, on top of the quadratic buffering and the BOM
/// panic [`BoundedSse`] already had to shield it from. The `http_sse` fuzz
/// target checks it against an independent reference parser.
/// Chosen for speed: `docs/benchmarks-notebook.md`, "Fourth round: HTTP, fewer instructions per call".
pub(crate) struct SseData<S> {
    lines: BoundedSse<S>,
    /// The event's only `data` line so far.
    first: Option<Bytes>,
    /// The event's data once it has a second line.
    joined: Vec<u8>,
}

impl<S> SseData<S> {
    pub(crate) fn new(lines: BoundedSse<S>) -> Self {
        SseData {
            lines,
            first: None,
            joined: Vec::new(),
        }
    }

    /// One complete line (ended by `\n`, `\r\n` or `\r`); the event's data when
    /// the line dispatches a non-empty one.
    fn feed(&mut self, line: Bytes) -> Option<Bytes> {
        let mut end = line.len();
        if line[..end].ends_with(b"\n") {
            end -= 1;
        }
        if line[..end].ends_with(b"\r") {
            end -= 1;
        }
        let text = &line[..end];
        if text.is_empty() {
            return self.dispatch();
        }
        if text[0] == b':' {
            return None; // a comment
        }
        let (name, value_start) = match memchr::memchr(b':', text) {
            Some(colon) => {
                let space = usize::from(text.get(colon + 1) == Some(&b' '));
                (&text[..colon], colon + 1 + space)
            }
            None => (text, end),
        };
        if name == b"data" {
            let value = line.slice(value_start..end);
            if self.first.is_none() && self.joined.is_empty() {
                self.first = Some(value);
            } else {
                if let Some(first) = self.first.take() {
                    self.joined.extend_from_slice(&first);
                }
                self.joined.push(b'\n');
                self.joined.extend_from_slice(&value);
            }
        }
        None
    }

    /// What the stream told about resuming it (ids committed at event
    /// boundaries, the last `retry`), seeded with the cursor it was given.
    pub(crate) fn into_cursor(self) -> SseCursor {
        self.lines.cursor
    }

    fn dispatch(&mut self) -> Option<Bytes> {
        let data = match self.first.take() {
            Some(first) => first,
            None => Bytes::from(std::mem::take(&mut self.joined)),
        };
        (!data.is_empty()).then_some(data)
    }
}

impl<S> Stream for SseData<S>
where
    S: Stream<Item = Result<Bytes, BoxError>> + Unpin,
{
    type Item = Result<Bytes, SseByteError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            // Each line spends the task's cooperative budget: a stream of lines
            // that never make an event (blank lines, comments, data-less events)
            // would otherwise keep this loop, and the task reading it, from ever
            // yielding to the runtime's timers (DOS.md, "A deadline under a flood").
            let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
            match std::task::ready!(Pin::new(&mut self.lines).poll_next(cx)) {
                None => return Poll::Ready(None),
                Some(Err(error)) => return Poll::Ready(Some(Err(error))),
                Some(Ok(line)) => {
                    coop.made_progress();
                    if let Some(data) = self.feed(line) {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::{StreamExt, stream};

    async fn run(
        chunks: Vec<&'static [u8]>,
        limit: usize,
    ) -> (Vec<Result<String, String>>, SseCursor) {
        let input = stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, BoxError>(Bytes::from_static(c))),
        );
        // As the transport does: stop at the first error.
        let mut events = SseData::new(BoundedSse::new(input, limit, SseCursor::default()));
        let mut out = Vec::new();
        while let Some(item) = events.next().await {
            match item {
                Ok(data) => out.push(Ok(String::from_utf8(data.to_vec()).expect("UTF-8"))),
                Err(e) => {
                    out.push(Err(e.to_string()));
                    break;
                }
            }
        }
        (out, events.into_cursor())
    }

    #[tokio::test]
    async fn data_is_dispatched_as_the_whatwg_interpretation_says() {
        let body: &'static [u8] = b": a comment\n\
            event: ignored\ndata:no space\n\n\
            data: two\ndata:  lines\r\n\r\n\
            data\ndata: after an empty one\n\n\
            data:\n\n\
            id: 7\nretry: 10\n\n\
            unknown: x\ndata: x\n\n\
            data: never dispatched";
        let (out, cursor) = run(vec![body], 1024).await;
        let got: Vec<String> = out.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(
            got,
            ["no space", "two\n lines", "\nafter an empty one", "x"],
            "an empty data line dispatches nothing; the unfinished event is discarded"
        );
        assert_eq!(cursor.last_event_id.as_deref(), Some("7"));
    }

    #[tokio::test]
    async fn an_invalid_utf8_tail_fails_the_same_whatever_the_chunking() {
        // Found by the http_sse fuzz target: F3 ED is invalid; split between the two
        // bytes it used to wait for more and end cleanly.
        for chunks in [
            vec![&b"data: x\n\ndata: \xF3\xED"[..]],
            vec![&b"data: x\n\ndata: \xF3"[..], b"\xED"],
            vec![&b"data: x\n\ndata: \xF3"[..]],
        ] {
            // However it was cut, the stream ends as malformed (not cleanly).
            let (out, _) = run(chunks, 1024).await;
            assert_eq!(
                out.last(),
                Some(&Err("invalid UTF-8".to_string())),
                "{out:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_leading_bom_is_stripped_whatever_the_chunking() {
        // eventsource-stream 0.2.3 (the parser before SseData) panicked on a BOM.
        for chunks in [
            vec![&b"\xEF\xBB\xBFdata: x\n\n"[..]],
            vec![&b"\xEF\xBB"[..], b"\xBFdata: x\n\n"],
            vec![&b"\xEF"[..], b"\xBB", b"\xBF", b"data: x\n\n"],
            // Two marks: the second is field text (the line is ignored), no panic.
            vec![&b"\xEF\xBB\xBF\xEF\xBB\xBFjunk\ndata: x\n\n"[..]],
        ] {
            let (out, _) = run(chunks, 1024).await;
            assert_eq!(out, vec![Ok("x".to_string())]);
        }
        // Not a BOM: the bytes pass through (and are judged as UTF-8 as usual).
        let (out, _) = run(vec![&b"da"[..], b"ta: y\n\n"], 1024).await;
        assert_eq!(out, vec![Ok("y".to_string())]);
    }

    #[tokio::test]
    async fn events_across_chunks_and_line_ends() {
        let (out, cursor) = run(
            vec![
                b"id: 1\r\ndata: {\"a\":",
                b"1}\r",
                b"\n\r\n",
                b"data: x\r\rid: 2\n\n",
            ],
            64,
        )
        .await;
        assert_eq!(out, vec![Ok("{\"a\":1}".into()), Ok("x".into())]);
        assert_eq!(cursor.last_event_id.as_deref(), Some("2"));
    }

    #[tokio::test]
    async fn a_priming_event_without_data_still_sets_id_and_retry() {
        let (out, cursor) = run(vec![b"id: p-1\nretry: 50\ndata:\n\n"], 64).await;
        assert!(out.is_empty());
        assert_eq!(cursor.last_event_id.as_deref(), Some("p-1"));
        assert_eq!(cursor.retry, Some(Duration::from_millis(50)));
    }

    #[tokio::test]
    async fn an_id_is_committed_only_at_the_boundary() {
        let (_, cursor) = run(vec![b"id: 1\n\nid: 2\ndata: partial"], 64).await;
        assert_eq!(cursor.last_event_id.as_deref(), Some("1"));
        let (_, cursor) = run(vec![b"id: 1\n\nid\n\n"], 64).await;
        assert_eq!(cursor.last_event_id, None);
    }

    #[tokio::test]
    async fn only_id_and_retry_lines_are_read_whatever_the_chunking() {
        // Names that share a prefix with `id` or `retry`, a data line holding
        // field text, a BOM after the stripped one: none of them is read.
        let body: &'static [u8] = b"\xEF\xBB\xBFidx: no\nretryx: 9\nid: 7\nidentity: no\n\
            data: id: 8\ndata: retry: 5\nre: 1\nretry: 30\n\n\xEF\xBB\xBFid: 9\n\n";
        for chunks in chunkings(body) {
            let (out, cursor) = run(chunks, 1024).await;
            assert_eq!(out, vec![Ok("id: 8\nretry: 5".to_owned())]);
            assert_eq!(cursor.last_event_id.as_deref(), Some("7"));
            assert_eq!(cursor.retry, Some(Duration::from_millis(30)));
        }
        // An `id` line too long to replay resets the id, a shorter one is kept.
        let long = format!("id: {}\n\n", "a".repeat(MAX_FIELD_LINE));
        let (_, cursor) = run(
            vec![b"id: 1\n\n", Box::leak(long.into_boxed_str()).as_bytes()],
            4096,
        )
        .await;
        assert_eq!(cursor.last_event_id, None);
        let short = format!("id: {}\n\n", "a".repeat(MAX_FIELD_LINE - 4));
        let (_, cursor) = run(vec![Box::leak(short.into_boxed_str()).as_bytes()], 4096).await;
        assert_eq!(
            cursor.last_event_id.map(|id| id.len()),
            Some(MAX_FIELD_LINE - 4)
        );
    }

    /// The last event id and `retry` of a body by the WHATWG rules, written
    /// independently of `BoundedSse`: lines end at `\r\n`, `\r` or `\n`, an
    /// unfinished last line is not a line, one leading BOM is dropped; an id
    /// line too long to replay (past `MAX_FIELD_LINE` and the byte that marks it)
    /// resets the id, as a too long `retry` line is ignored.
    fn reference_cursor(body: &[u8]) -> (Option<String>, Option<Duration>) {
        let body = body.strip_prefix(BOM).unwrap_or(body);
        let (mut buffer, mut last, mut retry) = (None::<String>, None, None);
        let (mut start, mut i) = (0, 0);
        while i < body.len() {
            let end = body[i];
            if end != b'\n' && end != b'\r' {
                i += 1;
                continue;
            }
            let line = &body[start..i];
            i += 1 + usize::from(end == b'\r' && body.get(i + 1) == Some(&b'\n'));
            start = i;
            if line.is_empty() {
                last = buffer.clone().filter(|id| !id.is_empty());
                continue;
            }
            let too_long = line.len() > MAX_FIELD_LINE + 1;
            let (name, value) = match line.iter().position(|&c| c == b':') {
                Some(colon) => (&line[..colon], &line[colon + 1..]),
                None => (line, &b""[..]),
            };
            let value = value.strip_prefix(b" ").unwrap_or(value);
            match name {
                b"id" if !value.contains(&0) => {
                    buffer = Some(match too_long {
                        true => String::new(),
                        false => String::from_utf8_lossy(value).into_owned(),
                    });
                }
                b"retry"
                    if !too_long && !value.is_empty() && value.iter().all(u8::is_ascii_digit) =>
                {
                    let ms = std::str::from_utf8(value)
                        .unwrap()
                        .parse()
                        .unwrap_or(u64::MAX);
                    retry = Some(Duration::from_millis(ms));
                }
                _ => {}
            }
        }
        (last, retry)
    }

    mod random {
        use super::*;
        use proptest::prelude::*;

        /// Bodies made of field names, near misses, values, BOMs and line ends.
        fn body() -> impl Strategy<Value = Vec<u8>> {
            let pieces: Vec<&'static [u8]> = vec![
                b"id",
                b"id:",
                b"id: ",
                b"i",
                b"d",
                b"idx",
                b"retry",
                b"retry:",
                b"retry: ",
                b"re",
                b"try",
                b"retryx",
                b"data",
                b"data: ",
                b":",
                b" ",
                b"7",
                b"42",
                b"99999999999999999999999",
                b"ab",
                b"\0",
                b"\xEF\xBB\xBF",
                b"\n",
                b"\n",
                b"\r\n",
                b"\r",
                b"\n\n",
            ];
            // Around the length past which an id line is too long to replay.
            let long = (MAX_FIELD_LINE - 6..=MAX_FIELD_LINE + 1).prop_map(|n| vec![b'a'; n]);
            let piece = prop_oneof![
                20 => proptest::sample::select(pieces).prop_map(<[u8]>::to_vec),
                2 => long,
            ];
            proptest::collection::vec(piece, 0..48).prop_map(|pieces| pieces.concat())
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn ids_and_retry_follow_the_reference_whatever_the_chunking(
                body in body(),
                cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
            ) {
                let mut at: Vec<usize> = cuts.iter().map(|c| c.index(body.len() + 1)).collect();
                at.sort_unstable();
                at.dedup();
                let mut chunks = Vec::new();
                let mut from = 0;
                for to in at.into_iter().chain([body.len()]) {
                    chunks.push(Bytes::copy_from_slice(&body[from..to]));
                    from = to;
                }
                let input = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, BoxError>));
                let mut events =
                    SseData::new(BoundedSse::new(input, 1 << 20, SseCursor::default()));
                let ended = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap()
                    .block_on(async {
                        while let Some(item) = events.next().await {
                            if item.is_err() {
                                return false;
                            }
                        }
                        true
                    });
                prop_assert!(ended, "a body of valid UTF-8 within the bound");
                let (id, retry) = reference_cursor(&body);
                let got = events.into_cursor();
                prop_assert_eq!(got.last_event_id, id);
                prop_assert_eq!(got.retry, retry);
            }
        }
    }

    #[tokio::test]
    async fn one_event_over_the_limit_fails_but_many_small_ones_do_not() {
        // 10 bytes per event (including the blank line), limit 10.
        let (out, _) = run(vec![b"data: abc\n\n", b"data: def\n\n"], 11).await;
        assert_eq!(out, vec![Ok("abc".into()), Ok("def".into())]);
        let (out, _) = run(vec![b"data: abcdef"], 11).await;
        assert_eq!(out, vec![Err("event too large".into())]);
        // Comments without a blank line never end an event.
        let (out, _) = run(vec![b": ping\n", b": ping\n", b": ping\n"], 16).await;
        assert_eq!(out, vec![Err("event too large".into())]);
    }

    #[tokio::test]
    async fn invalid_utf8_is_malformed_but_split_characters_are_fine() {
        let (out, _) = run(vec![b"data: caf\xC3", b"\xA9\n\n"], 64).await;
        assert_eq!(out, vec![Ok("café".into())]);
        let (out, _) = run(vec![b"data: \xFF\n\n"], 64).await;
        assert_eq!(out, vec![Err("invalid UTF-8".into())]);
        let (out, _) = run(vec![b"data: \xE2\x82", b"A\n\n"], 64).await;
        assert_eq!(out, vec![Err("invalid UTF-8".into())]);
    }

    /// Every chunking of `body`: whole, one byte per chunk, and cut in two at each
    /// position.
    fn chunkings(body: &'static [u8]) -> Vec<Vec<&'static [u8]>> {
        let mut all = vec![vec![body], body.chunks(1).collect()];
        for at in 1..body.len() {
            all.push(vec![&body[..at], &body[at..]]);
        }
        all
    }

    /// Drives `BoundedSse` alone; returns what it forwards and the bytes it examined.
    async fn forward(chunks: Vec<Bytes>, limit: usize) -> (Vec<Bytes>, usize) {
        let input = stream::iter(chunks.into_iter().map(Ok::<_, BoxError>));
        let mut sse = BoundedSse::new(input, limit, SseCursor::default());
        let mut items = Vec::new();
        while let Some(item) = sse.next().await {
            items.push(item.expect("within the bound"));
        }
        (items, sse.examined)
    }

    #[tokio::test]
    async fn linear_work_whatever_the_chunking() {
        // The parser behind us re-parses its buffer from the start on every item
        // while a line is incomplete, and copies the rest of its buffer once per
        // line: quadratic in what it holds. It never holds more than one line if
        // every item is exactly one complete line, so its work is linear in the
        // bytes forwarded; ours is bounded by the bytes examined. Both are counted
        // here, for bodies that were quadratic (DOS.md), in one chunk and one byte
        // per chunk.
        const N: usize = 64 * 1024;
        let mut long_line = b"data: ".to_vec();
        long_line.resize(N, b'x');
        long_line.extend_from_slice(b"\r\n\r\n");
        let bodies = [
            vec![b'\n'; N],
            vec![b'\r'; N],
            b"\r\n".repeat(N / 2),
            b":\n".repeat(N / 2),
            b"data: x\r\n\r".repeat(N / 10),
            long_line,
        ];
        for body in bodies {
            let n = body.len();
            let one = vec![Bytes::from(body.clone())];
            let bytewise = body.iter().map(|&b| Bytes::from(vec![b])).collect();
            for chunks in [one, bytewise] {
                let (items, examined) = forward(chunks, 2 * N).await;
                // Both passes see each byte once (plus the leading blank line).
                assert!(examined <= 2 * (n + 1), "{examined} bytes examined for {n}");
                let mut forwarded = 0;
                for item in &items {
                    let line = item.strip_suffix(b"\n").expect("a complete line");
                    let line = line.strip_suffix(b"\r").unwrap_or(line);
                    assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
                    forwarded += item.len();
                }
                // At most one added `\n` per line (for a `\r` line end).
                assert!(
                    forwarded <= 2 * (n + 1),
                    "{forwarded} bytes forwarded for {n}"
                );
            }
        }
    }

    #[tokio::test]
    async fn a_lone_cr_at_the_end_of_the_body_ends_the_last_event() {
        // fuzz/artifacts-found/http_sse/cr-at-eof: the final blank line is a lone CR.
        for chunks in chunkings(b"id: 1\rdata: a\r\rid: 2\rdata: b\r\r") {
            let (out, cursor) = run(chunks.clone(), 64).await;
            assert_eq!(out, vec![Ok("a".into()), Ok("b".into())], "{chunks:?}");
            assert_eq!(cursor.last_event_id.as_deref(), Some("2"));
        }
        // One CR at the end is a line end, not a blank line: no event, no new id.
        for chunks in chunkings(b"id: 1\rdata: a\r\rid: 2\rdata: b\r") {
            let (out, cursor) = run(chunks, 64).await;
            assert_eq!(out, vec![Ok("a".into())]);
            assert_eq!(cursor.last_event_id.as_deref(), Some("1"));
        }
    }

    #[tokio::test]
    async fn a_crlf_split_across_chunks_is_one_line_end() {
        // Were the LF a second line end, `a` would be dispatched alone.
        let (out, _) = run(vec![b"data: a\r", b"\n", b"data: b\r\n\r\n"], 64).await;
        assert_eq!(out, vec![Ok("a\nb".into())]);
        let (out, _) = run(vec![b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"], 64).await;
        assert_eq!(out, vec![Ok("a\nb".into())]);
        // A CR, then a CR LF: two line ends, the second a blank line.
        let (out, _) = run(vec![b"data: a\r", b"\r", b"\ndata: b\n\n"], 64).await;
        assert_eq!(out, vec![Ok("a".into()), Ok("b".into())]);
    }

    #[tokio::test]
    async fn a_lone_cr_at_a_chunk_end_is_a_line_end() {
        let (out, _) = run(vec![b"data: a\r", b"data: b\r\r"], 64).await;
        assert_eq!(out, vec![Ok("a\nb".into())]);
        let (out, _) = run(vec![b"data: a\r\r", b"data: b\r\r"], 64).await;
        assert_eq!(out, vec![Ok("a".into()), Ok("b".into())]);
    }

    #[tokio::test]
    async fn every_chunking_gives_the_same_events() {
        let body: &[u8] = b": hi\r\nid: 7\rretry: 9\n\ndata:a\r\ndata:  b\n\r\
                            event: e\rdata\r\r\ndata: c\r\n\rdata: partial";
        let (want, cursor) = run(vec![body], 256).await;
        assert_eq!(
            want,
            vec![Ok("a\n b".into()), Ok("c".into())],
            "the `data` line without a colon makes an empty event, skipped"
        );
        assert_eq!(cursor.last_event_id.as_deref(), Some("7"));
        assert_eq!(cursor.retry, Some(Duration::from_millis(9)));
        for chunks in chunkings(body) {
            assert_eq!(run(chunks.clone(), 256).await.0, want, "{chunks:?}");
        }
    }

    #[tokio::test]
    async fn a_chunk_of_more_lines_than_its_scan_records_gives_the_same_events() {
        // Every line end of the chunk in its record, then three times as many
        // (the rest searched for again), against the same lines one per chunk.
        for events in [RECORDED_ENDS / 2 - 1, 3 * RECORDED_ENDS] {
            let body: String = (0..events)
                .map(|i| format!("id: {i}\r\ndata: {i}\r\n\r\n"))
                .collect();
            let body: &'static [u8] = Box::leak(body.into_boxed_str()).as_bytes();
            let (whole, cursor) = run(vec![body], 256).await;
            let want: Vec<_> = (0..events).map(|i| Ok(i.to_string())).collect();
            assert_eq!(whole, want);
            assert_eq!(cursor.last_event_id, Some((events - 1).to_string()));
            let lines: Vec<&'static [u8]> = body.split_inclusive(|&b| b == b'\n').collect();
            assert_eq!(run(lines, 256).await.0, want);
        }
    }
}
