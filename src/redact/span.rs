//! The spans of a line to replace, and the line rebuilt from them; the PEM state
//! a stream carries between lines; char-boundary rounding. Every rule
//! (`clean`, `exact`, `keyed`, `patterns`) produces spans and the redactor applies
//! them.

use super::REDACTED;
use super::work::{self, Pass};

/// Whether the stream is inside a multi-line PEM private-key block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PemState {
    Outside,
    /// `marked`: a [`REDACTED`] has already been shown for this block's body.
    Inside {
        marked: bool,
    },
}

/// A byte range of a line to replace: with [`REDACTED`] if `redact`, else with nothing.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) redact: bool,
}

impl Span {
    pub(super) fn redact(start: usize, end: usize) -> Self {
        Span {
            start,
            end,
            redact: true,
        }
    }
}

/// Builds the redacted line: overlapping or touching spans merge into one replacement.
pub(super) fn apply_spans(line: &str, mut spans: Vec<Span>) -> String {
    if spans.is_empty() {
        work::count(Pass::Spans, line.len());
        return line.to_owned();
    }
    for span in &mut spans {
        // Every rule ends spans on ASCII bytes, but widen defensively so slicing can
        // never panic.
        span.start = floor_char_boundary(line, span.start);
        span.end = ceil_char_boundary(line, span.end);
    }
    work::sorted(Pass::Spans, spans.len());
    spans.sort_unstable_by_key(|span| span.start);
    let mut out = String::with_capacity(line.len());
    let mut cursor = 0;
    let mut current: Option<Span> = None;
    let flush = |span: Span, out: &mut String, cursor: &mut usize| {
        out.push_str(&line[*cursor..span.start]);
        if span.redact {
            out.push_str(REDACTED);
        }
        *cursor = span.end;
    };
    for span in spans {
        if span.start >= span.end {
            continue;
        }
        if let Some(open) = current.as_mut()
            && span.start <= open.end
        {
            open.end = open.end.max(span.end);
            open.redact |= span.redact;
            continue;
        }
        if let Some(done) = current.replace(span) {
            flush(done, &mut out, &mut cursor);
        }
    }
    if let Some(done) = current {
        flush(done, &mut out, &mut cursor);
    }
    out.push_str(&line[cursor..]);
    // What was copied and what was skipped.
    work::count(Pass::Spans, line.len() + out.len());
    out
}

pub(super) fn floor_char_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

pub(super) fn ceil_char_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at += 1;
    }
    at
}
