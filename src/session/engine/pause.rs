//! The time the host spent answering legacy server requests: a pending
//! request's deadline moves on by what accrued while it waited (a person filling
//! a form is not the server being slow). A 2026-07-28 input belongs to one call,
//! whose deadline moves on by itself.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::lock;

/// The total time the host handler spent answering, including the current answer.
#[derive(Default)]
pub(crate) struct PauseClock {
    state: Mutex<PauseState>,
}

#[derive(Default)]
struct PauseState {
    active: usize,
    since: Option<Instant>,
    total: Duration,
}

impl PauseClock {
    /// The time accrued so far.
    pub(crate) fn total(&self) -> Duration {
        let state = lock(&self.state);
        state.total + state.since.map_or(Duration::ZERO, |since| since.elapsed())
    }

    /// Runs the clock until the returned guard drops (answers may overlap: the
    /// clock runs while any is in progress).
    pub(crate) fn pause(&self) -> Paused<'_> {
        let mut state = lock(&self.state);
        if state.active == 0 {
            state.since = Some(Instant::now());
        }
        state.active += 1;
        Paused(self)
    }
}

/// Stops the clock's current pause when the last answer ends.
pub(crate) struct Paused<'a>(&'a PauseClock);

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.active -= 1;
        if state.active == 0
            && let Some(since) = state.since.take()
        {
            state.total += since.elapsed();
        }
    }
}
