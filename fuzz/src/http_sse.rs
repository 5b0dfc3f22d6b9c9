//! The HTTP response path: the bounded SSE reader (`BoundedSse` splitting lines
//! within its per-event bound, `SseData` dispatching the events' data) and the bounded JSON body
//! collector, reached from outside the crate through the public
//! `HttpTransportBuilder::layer` hook. The layer answers the POST itself with the
//! fuzzed body, so no socket is opened; the rest of the transport (driver, SSE
//! bound, body bound, frame delivery) runs as in production, on a paused clock.
//!
//! Input: byte 0 is flags (bit 0: `application/json` instead of
//! `text/event-stream`; bit 1: the body fails after its last chunk; bit 2: insert
//! filler), byte 1 picks `maxFrameBytes` (1..=256), bytes 2..4 the filler (count x
//! 1 KiB, byte, position), bytes 5..13 seed the chunking, the rest is the body.
//! Properties:
//!
//! - the same bytes in one chunk and in seeded random chunks end the same way
//!   (still open, or the same error kind), and when neither run failed they
//!   delivered the same frames;
//! - no delivered frame exceeds `maxFrameBytes`;
//! - SSE: when the body is UTF-8 and no event nears the raw bound
//!   (`maxFrameBytes` + 16 KiB), the frames are exactly the non-empty `data` of a
//!   reference WHATWG event-stream parser, up to the first event whose data exceeds
//!   `maxFrameBytes`, which ends the session with `protocol_error`; invalid UTF-8 or
//!   an event past the raw bound also ends it with `protocol_error`, having
//!   delivered at most a prefix of the reference frames;
//! - JSON: a body over `maxFrameBytes` is `protocol_error`; otherwise it is one
//!   frame (none when blank), and a body that breaks is `connection_closed`.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use smthrs_mcp::ErrorKind;
use smthrs_mcp::fuzzing;
use smthrs_mcp::transport::http::{HttpRequest, HttpResponse, HttpService, HttpTransport};

use super::util::{chunks, panicked_since_last_call, seed_of, with_runtime};

/// Raw bytes an event may carry beyond `maxFrameBytes` (the crate's
/// `SSE_FRAMING_ALLOWANCE`, which is private).
const SSE_ALLOWANCE: usize = 16 * 1024;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, Clone, PartialEq, Eq)]
enum End {
    /// Nothing ended the session or the request.
    Open,
    /// The request alone failed with this kind (a stream that ended before its
    /// reply and could not be resumed); the session goes on.
    Failed(ErrorKind),
    /// The transport ended the session with this kind.
    Closed(ErrorKind),
}

#[derive(Clone)]
struct Canned {
    json: bool,
    broken: bool,
    chunks: Vec<Bytes>,
}

/// Runs the properties on one input.
pub fn check(data: &[u8]) {
    if data.len() < 13 {
        return;
    }
    let json = data[0] & 1 != 0;
    let broken = data[0] & 2 != 0;
    let max = 1 + data[1] as usize;
    let mut body = data[13..].to_vec();
    if data[0] & 4 != 0 {
        // Filler makes long events (to reach the raw per-event bound) or, of CR or
        // LF, thousands of lines (blank, or breaking a line in two).
        let filler = vec![data[3]; 1024 * (data[2] as usize % 24)];
        let at = body.len() * data[4] as usize / 256;
        body.splice(at..at, filler);
    }
    let seed = seed_of(&data[5..13]);
    let whole = run(
        &Canned {
            json,
            broken,
            chunks: vec![Bytes::from(body.clone())],
        },
        max,
    );
    // Chunks of 1..=700 bytes, but about 4096 chunks at most: each is one body
    // frame through the transport, so this bounds the target's own cost per input
    // (the parser's cost is linear whatever the chunking, DOS.md). A body of up to
    // 2 KiB can still arrive byte by byte.
    let chunk_max = (1 + (seed >> 48) as usize % 700).max(body.len() / 2048 + 1);
    let pieces = chunks(&body, seed, chunk_max)
        .into_iter()
        .map(Bytes::copy_from_slice)
        .collect();
    let split = run(
        &Canned {
            json,
            broken,
            chunks: pieces,
        },
        max,
    );

    for (frames, _) in [&whole, &split] {
        for frame in frames {
            assert!(
                frame.len() <= max,
                "a {}-byte frame passed a {max}-byte bound",
                frame.len()
            );
        }
    }
    assert_eq!(
        whole.1, split.1,
        "one chunk and many chunks ended differently"
    );
    if !matches!(whole.1, End::Closed(_)) {
        assert_eq!(
            whole.0, split.0,
            "one chunk and many chunks gave different frames"
        );
    }

    if json {
        let want = if body.len() > max {
            End::Closed(ErrorKind::ProtocolError)
        } else if broken {
            End::Closed(ErrorKind::ConnectionClosed)
        } else {
            End::Open
        };
        assert_eq!(whole.1, want);
        if want == End::Open {
            let frames: Vec<Vec<u8>> = if body.iter().all(u8::is_ascii_whitespace) {
                vec![]
            } else {
                vec![body.clone()]
            };
            assert_eq!(whole.0, frames);
        }
        return;
    }

    let utf8 = match std::str::from_utf8(&body) {
        Ok(_) => Some(true),
        // A sequence cut off by the end of the body is never checked: undecided.
        Err(e) if e.error_len().is_none() => None,
        Err(_) => Some(false),
    };
    let limit = max + SSE_ALLOWANCE;
    let nonempty: Vec<Vec<u8>> = reference_events(&body)
        .into_iter()
        .filter(|e| !e.is_empty())
        .collect();
    let largest_raw = raw_event_sizes(&body).into_iter().max().unwrap_or(0);
    if utf8 == Some(false) || largest_raw > limit + 2 {
        assert_eq!(whole.1, End::Closed(ErrorKind::ProtocolError));
        for (frames, _) in [&whole, &split] {
            assert!(nonempty.starts_with(frames), "frames beyond the reference");
        }
        return;
    }
    if utf8.is_none() || largest_raw + 2 >= limit {
        return; // at the edge: the two runs agreeing is all we ask
    }
    match nonempty.iter().position(|e| e.len() > max) {
        Some(first_over) => {
            assert_eq!(whole.1, End::Closed(ErrorKind::ProtocolError));
            for (frames, _) in [&whole, &split] {
                assert_eq!(&frames[..], &nonempty[..first_over]);
            }
        }
        None => {
            // The stream ended without our reply: the request may fail (at once or
            // after a refused resumption), the session may not.
            let session_ended = matches!(whole.1, End::Closed(_));
            assert!(
                !session_ended,
                "a valid stream ended the session: {:?}",
                whole.1
            );
            assert_eq!(whole.0, nonempty);
        }
    }
}

/// Delivers `chunks` as the body answering one request through the real HTTP
/// transport (see [`check`]) with `maxFrameBytes = max`; returns the frames and how
/// it ended. Used by `examples/sse_cost.rs` to measure the parser's cost.
pub fn deliver(json: bool, chunks: Vec<Bytes>, max: usize) -> (Vec<Vec<u8>>, String) {
    let (frames, end) = run(
        &Canned {
            json,
            broken: false,
            chunks,
        },
        max,
    );
    (frames, format!("{end:?}"))
}

/// Opens the real HTTP transport with a layer that answers the first POST with
/// `canned` (and anything else with 405), sends one request, and collects what the
/// source delivers until it closes or everything is idle for an hour of paused
/// time. The request is never settled, as if its reply never came, so a stream
/// that ends is resumed (a `GET`, refused) or fails the request.
fn run(canned: &Canned, max: usize) -> (Vec<Vec<u8>>, End) {
    panicked_since_last_call();
    let outcome = run_unchecked(canned, max);
    assert!(!panicked_since_last_call(), "a transport task panicked");
    outcome
}

fn run_unchecked(canned: &Canned, max: usize) -> (Vec<Vec<u8>>, End) {
    let shared = Arc::new(Mutex::new(Some(canned.clone())));
    let layer = tower::layer::layer_fn(move |_inner: HttpService| {
        let shared = shared.clone();
        tower::service_fn(move |req: HttpRequest| {
            let canned = if req.method() == http::Method::POST {
                shared.lock().unwrap_or_else(|e| e.into_inner()).take()
            } else {
                None
            };
            async move { Ok::<_, Infallible>(respond(canned)) }
        })
    });
    let transport = HttpTransport::builder("fuzz", "http://mcp.invalid/mcp")
        .layer(layer)
        .build()
        .expect("the transport builds");
    with_runtime(|rt| {
        rt.block_on(async move {
            let run = fuzzing::http_request(
                &transport,
                max,
                Bytes::from_static(
                    br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
                ),
                Duration::from_secs(3600),
            )
            .await
            .expect("the transport opens and accepts the first send");
            assert_eq!(run.state_lost, 0, "no session to expire");
            let frames = run.frames.iter().map(|frame| frame.to_vec()).collect();
            let end = match run.closed {
                Some(kind) => End::Closed(kind),
                None => {
                    let failures = &run.failures;
                    assert!(failures.len() <= 1, "a request failed twice: {failures:?}");
                    failures
                        .first()
                        .map_or(End::Open, |kind| End::Failed(*kind))
                }
            };
            (frames, end)
        })
    })
}

fn respond(canned: Option<Canned>) -> HttpResponse {
    let Some(canned) = canned else {
        let empty = StreamBody::new(stream::iter(Vec::<Result<_, BoxError>>::new()));
        return http::Response::builder()
            .status(405)
            .body(empty.boxed_unsync())
            .expect("a response");
    };
    let mut items: Vec<Result<http_body::Frame<Bytes>, BoxError>> = canned
        .chunks
        .into_iter()
        .map(|c| Ok(http_body::Frame::data(c)))
        .collect();
    if canned.broken {
        items.push(Err("connection reset".into()));
    }
    let content_type = if canned.json {
        "application/json"
    } else {
        "text/event-stream"
    };
    http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, content_type)
        .body(StreamBody::new(stream::iter(items)).boxed_unsync())
        .expect("a response")
}

/// Splits a body into its complete lines the way the event-stream grammar does
/// (CRLF, LF or CR line ends; a lone CR as the body's last byte ends a line, as
/// `fuzz/artifacts-found/http_sse/cr-at-eof` checks).
fn lines(body: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'\n' => {
                out.push(&body[start..i]);
                start = i + 1;
            }
            b'\r' => {
                out.push(&body[start..i]);
                if body.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out // a trailing partial line is never part of a dispatched event
}

/// The `data` of every event the WHATWG algorithm dispatches (a trailing
/// incomplete event is discarded; an event whose data buffer stays empty is not
/// dispatched).
fn reference_events(body: &[u8]) -> Vec<Vec<u8>> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let mut events = Vec::new();
    let mut data: Vec<u8> = Vec::new();
    let mut has_data = false;
    for line in lines(body) {
        if line.is_empty() {
            if has_data {
                if data.last() == Some(&b'\n') {
                    data.pop();
                }
                events.push(std::mem::take(&mut data));
            }
            data.clear();
            has_data = false;
            continue;
        }
        if line[0] == b':' {
            continue;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => (&line[..i], &line[i + 1..]),
            None => (line, &b""[..]),
        };
        let value = value.strip_prefix(b" ").unwrap_or(value);
        if field == b"data" {
            data.extend_from_slice(value);
            data.push(b'\n');
            has_data = true;
        }
    }
    events
}

/// The raw size of each event: bytes from one blank line's end to the next (the
/// last, unterminated one included). A leading byte-order mark is not part of
/// any event (the transport strips it).
fn raw_event_sizes(body: &[u8]) -> Vec<usize> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let mut sizes = Vec::new();
    let mut size = 0;
    let mut line_len = 0;
    let mut prev_cr = false;
    for &b in body {
        size += 1;
        match b {
            b'\n' if prev_cr => prev_cr = false,
            b'\n' | b'\r' => {
                prev_cr = b == b'\r';
                if line_len == 0 {
                    sizes.push(size);
                    size = 0;
                }
                line_len = 0;
            }
            _ => {
                prev_cr = false;
                line_len += 1;
            }
        }
    }
    sizes.push(size);
    sizes
}
