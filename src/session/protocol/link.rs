//! The protocol layer's state for one open session, and [`Link`], the pair of
//! it and the core that every protocol step works with.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;

use super::super::engine::Core;
use super::era::{MODERN_PROTOCOL_VERSION, RequestMeta, Wire, WireCell, with_extension};
use super::feeds::Feeds;
use super::inputs::Inputs;
use super::progress::Progresses;
use super::reinit::Reinitialise;
use crate::catalog::Catalog;
use crate::handler::HostHandler;
use crate::pin::CatalogPin;
use crate::prompts::Prompt;
use crate::tasks::TASKS_EXTENSION_ID;

/// The protocol layer's state for one open session: how frames are written
/// (the era's wire), what the client declares, the host's answers, and what
/// the legacy re-initialise compares against.
pub(crate) struct Protocol {
    /// What frames are written for now (legacy before and after its handshake,
    /// or modern).
    pub(crate) wire: WireCell,
    /// The `_meta` of every modern request.
    pub(crate) request_meta: RequestMeta,
    /// The same `_meta` declaring the Tasks extension besides (a `tools/call`
    /// that may become a task, and every `tasks/*` request).
    pub(crate) task_meta: RequestMeta,
    /// The server offers the Tasks extension (2026-07-28 `server/discover`;
    /// never in the legacy era).
    pub(crate) tasks_offered: AtomicBool,
    /// Best-effort `tasks/cancel` requests still being sent (a dropped call's):
    /// [`Client::close`](crate::Client::close) gives them a moment.
    pub(crate) task_cancels: Arc<InFlight>,
    /// The client capabilities declared (legacy `initialize`, modern `_meta`).
    pub(crate) capabilities: Value,
    /// The host's answers to input requests.
    pub(crate) inputs: Arc<Inputs>,
    /// The legacy HTTP session re-initialise.
    pub(crate) reinit: Arc<Reinitialise>,
    /// The frozen catalog, once the handshake has produced it (the
    /// re-initialise compares a new catalog with it).
    pub(crate) catalog: OnceLock<Arc<Catalog>>,
    /// The catalog pin the host gave, once the connect checked it.
    pub(crate) pin: OnceLock<CatalogPin>,
    /// The last `prompts/list` walked in this session (`prompts/get` checks
    /// its arguments against it).
    pub(crate) prompts: Mutex<Option<Arc<[Prompt]>>>,
    /// The open subscriptions, where change notifications go.
    pub(crate) feeds: Feeds,
    /// The calls' progress tokens, where progress notifications go.
    pub(crate) progress: Arc<Progresses>,
}

impl Protocol {
    pub(crate) fn new(handler: Option<Arc<dyn HostHandler>>) -> Protocol {
        let inputs = Arc::new(Inputs::new(handler));
        let capabilities = inputs.capabilities();
        let declaring_tasks = with_extension(&capabilities, TASKS_EXTENSION_ID);
        Protocol {
            wire: WireCell::new(Wire::Legacy(None)),
            request_meta: RequestMeta::new(MODERN_PROTOCOL_VERSION, &capabilities),
            task_meta: RequestMeta::new(MODERN_PROTOCOL_VERSION, &declaring_tasks),
            tasks_offered: AtomicBool::new(false),
            task_cancels: Arc::default(),
            capabilities,
            inputs,
            reinit: Arc::default(),
            catalog: OnceLock::new(),
            pin: OnceLock::new(),
            prompts: Mutex::new(None),
            feeds: Feeds::default(),
            progress: Arc::default(),
        }
    }
}

/// One connected server as the protocol layer works with it: the core it sends
/// through and its own state. Cheap to clone (two `Arc`s).
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) core: Arc<Core>,
    pub(crate) protocol: Arc<Protocol>,
}

/// A count of background jobs (the best-effort `tasks/cancel` of a dropped
/// call) and a way to wait, bounded, for it to reach zero.
#[derive(Default)]
pub(crate) struct InFlight {
    count: AtomicUsize,
    idle: Notify,
}

impl InFlight {
    /// Counts one job until the guard drops.
    pub(crate) fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(self.clone())
    }

    /// Waits until no job runs, at most `bound`.
    pub(crate) async fn settle(&self, bound: Duration) {
        let wait = async {
            loop {
                let idle = self.idle.notified();
                tokio::pin!(idle);
                idle.as_mut().enable();
                if self.count.load(Ordering::SeqCst) == 0 {
                    return;
                }
                idle.await;
            }
        };
        let _ = tokio::time::timeout(bound, wait).await;
    }
}

/// One job of an [`InFlight`].
pub(crate) struct InFlightGuard(Arc<InFlight>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}
