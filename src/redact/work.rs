//! A count of the work the redaction passes do, per pass, so that the tests can bound
//! it by a line's length (`adversarial_lines_are_linear`) instead of by the clock.
//! Counted in unit-test builds only: elsewhere [`count`] does nothing.
//!
//! A unit is a constant amount of work: one byte or character of a line examined or
//! copied, one comparison with a short constant needle (a prefix, a marker, a key
//! part), one occurrence, range or span handled, or one 64-bit word of a
//! bit-parallel matcher state computed.

#[cfg(test)]
use std::cell::Cell;
#[cfg(test)]
use std::fmt;

/// The passes counted apart.
#[derive(Clone, Copy, Debug)]
pub(super) enum Pass {
    /// Splitting a stream into lines, buffering them and keeping the tail.
    Collect,
    /// Escape sequences stripped, control characters blanked, whitespace collapsed.
    Clean,
    /// Which bytes are hidden ([`hidden_bytes`](super::exact::hidden_bytes)).
    Hidden,
    /// The Aho-Corasick passes over the exact values: the text and each occurrence.
    Exact,
    /// The interrupted-occurrence matcher ([`Gapped`](super::exact::Gapped)): words.
    Gapped,
    /// PEM markers and blocks.
    Pem,
    /// URL userinfo.
    Userinfo,
    /// Secret-named keys, headers, `Bearer` and `Basic`.
    Keyed,
    /// Well-known token shapes.
    Shapes,
    /// High-entropy runs.
    Entropy,
    /// Merging ranges and spans, and writing the redacted line.
    Spans,
}

#[cfg(test)]
const PASSES: usize = Pass::Spans as usize + 1;

#[cfg(test)]
thread_local! {
    static WORK: [Cell<usize>; PASSES] = const { [const { Cell::new(0) }; PASSES] };
}

/// Records `units` of work done by `pass` on this thread.
#[inline(always)]
pub(super) fn count(pass: Pass, units: usize) {
    #[cfg(test)]
    WORK.with(|work| {
        let cell = &work[pass as usize];
        cell.set(cell.get() + units);
    });
    #[cfg(not(test))]
    let _ = (pass, units);
}

/// Records sorting `len` items and going through them once, for `pass`: counted as
/// `len * (1 + log2 len)` units.
#[inline(always)]
pub(super) fn sorted(pass: Pass, len: usize) {
    count(
        pass,
        len * (1 + (usize::BITS - len.leading_zeros()) as usize),
    );
}

/// The work counted on this thread since the last call, per pass.
#[cfg(test)]
pub(super) fn take() -> Work {
    Work(WORK.with(|work| work.each_ref().map(|cell| cell.replace(0))))
}

/// Work per pass, in the order of [`Pass`].
#[cfg(test)]
pub(super) struct Work([usize; PASSES]);

#[cfg(test)]
impl Work {
    pub(super) fn total(&self) -> usize {
        self.0.iter().sum()
    }

    pub(super) fn of(&self, pass: Pass) -> usize {
        self.0[pass as usize]
    }
}

#[cfg(test)]
impl fmt::Debug for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Pass::*;
        let passes = [
            Collect, Clean, Hidden, Exact, Gapped, Pem, Userinfo, Keyed, Shapes, Entropy, Spans,
        ];
        let mut map = f.debug_map();
        for pass in passes {
            if self.of(pass) > 0 {
                map.entry(&pass, &self.of(pass));
            }
        }
        map.finish()
    }
}
