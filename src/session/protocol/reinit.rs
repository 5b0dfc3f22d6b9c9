//! The legacy HTTP session's one re-initialise: when the server answers a
//! request carrying a session id with `404`, the protocol layer runs the
//! handshake again once ([`Reinitialise::expired`]); requests made meanwhile
//! wait for the new session ([`Reinitialise::hold`]) and the refused ones are
//! sent again. A second expiry ends the session.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use super::super::engine::{Core, Queued, RequestCtl, lock};
use crate::error::{Error, Result};
use crate::transport::OutboundFrame;

/// The one-shot HTTP session re-initialise: its state, and a flag every
/// request reads cheaply before locking it.
#[derive(Default)]
pub(crate) struct Reinitialise {
    state: Mutex<Reinit>,
    /// True while a re-initialise runs.
    running: AtomicBool,
}

/// Where the re-initialise is.
#[derive(Default)]
enum Reinit {
    /// Not needed so far.
    #[default]
    Idle,
    /// Running; frames refused meanwhile, and requests made meanwhile, wait to be
    /// sent (see [`Held`]).
    Running(Vec<Held>),
    /// Done once: a later expiry ends the session.
    Done,
}

/// A frame waiting for the re-initialise: refused with the old session (its
/// request, if any, was written once), or a new request held back before it was
/// written (its state is still `QUEUED`: the writer may still skip it).
pub(crate) type Held = (OutboundFrame, Option<Arc<RequestCtl>>);

tokio::task_local! {
    /// Set in the task that re-initialises: its own requests are not held back.
    static REINITIALISING: ();
}

impl Reinitialise {
    /// While an HTTP re-initialise runs, a new request would go out without a
    /// session id (and be refused): it waits for the new session instead. `Some`
    /// gives the frame back to be sent now.
    pub(crate) fn hold(
        &self,
        frame: OutboundFrame,
        control: &Arc<RequestCtl>,
    ) -> Option<OutboundFrame> {
        if !self.running.load(Ordering::Acquire) || REINITIALISING.try_with(|_| ()).is_ok() {
            return Some(frame);
        }
        match &mut *lock(&self.state) {
            Reinit::Running(waiting) => {
                waiting.push((frame, Some(control.clone())));
                None
            }
            _ => Some(frame),
        }
    }

    /// HTTP `404` to a request carrying a session id: run `rerun` (the
    /// handshake again, without the id the transport has dropped, and its
    /// catalog check) once, then re-send the refused frames; if `rerun` fails
    /// the session ends with its error. `frozen`: the connect had frozen the
    /// catalog (before that, the session ends).
    pub(crate) fn expired<F>(
        self: &Arc<Self>,
        core: &Arc<Core>,
        failed: OutboundFrame,
        stale: bool,
        frozen: bool,
        rerun: F,
    ) -> Result<()>
    where
        F: Future<Output = Result<()>> + Send + 'static,
    {
        let mut state = lock(&self.state);
        match &mut *state {
            Reinit::Running(waiting) => {
                waiting.push((failed, None));
                Ok(())
            }
            // Refused for the session the re-initialise replaced: send it again.
            Reinit::Done if stale => {
                drop(state);
                let core = core.clone();
                tokio::spawn(async move { send_held(&core, vec![(failed, None)]).await });
                Ok(())
            }
            Reinit::Done => Err(Error::closed(format!(
                "server \"{}\" ended the HTTP session again after a re-initialise",
                core.server
            ))),
            Reinit::Idle => {
                if !frozen {
                    return Err(Error::closed(format!(
                        "server \"{}\" ended the HTTP session during the handshake",
                        core.server
                    )));
                }
                *state = Reinit::Running(vec![(failed, None)]);
                self.running.store(true, Ordering::Release);
                let reinit = self.clone();
                let core = core.clone();
                tokio::spawn(async move {
                    let outcome = REINITIALISING.scope((), rerun).await;
                    let waiting = {
                        let mut state = lock(&reinit.state);
                        reinit.running.store(false, Ordering::Release);
                        match std::mem::replace(&mut *state, Reinit::Done) {
                            Reinit::Running(waiting) => waiting,
                            _ => Vec::new(),
                        }
                    };
                    if let Err(error) = outcome {
                        core.terminate(error);
                        return;
                    }
                    send_held(&core, waiting).await;
                });
                Ok(())
            }
        }
    }
}

/// Queues frames that waited for the re-initialise, in order, skipping
/// requests settled or abandoned meanwhile. A frame the queue does not take in
/// time fails its own request only, as a caller's own admission would.
async fn send_held(core: &Core, held: Vec<Held>) {
    for (frame, request) in held {
        // A notification or reply refused with the old session (a ping reply,
        // a cancellation) means nothing to the new one: dropped.
        let Some(handle) = frame.request.clone() else {
            continue;
        };
        if handle.is_done() {
            continue;
        }
        let deadline = Instant::now() + core.limits.request_timeout();
        // A refused frame (`None`) was written once: the writer skips it if it
        // is done by the time it comes up. A held request is still `QUEUED`.
        let admitted = tokio::select! {
            biased;
            admitted = core.admit(Queued::Frame { frame, request }, deadline) => admitted,
            // Abandoned while waiting for room: nothing to send.
            _ = handle.done() => Ok(()),
        };
        if let Err(error) = admitted {
            if core.terminal().is_some() {
                return;
            }
            handle.fail(error);
        }
    }
}
