//! The protocol layer's state for one open session, and [`Link`], the pair of
//! it and the core that every protocol step works with.

use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use super::super::engine::Core;
use super::era::{MODERN_PROTOCOL_VERSION, RequestMeta, Wire, WireCell};
use super::feeds::Feeds;
use super::inputs::Inputs;
use super::progress::Progresses;
use super::reinit::Reinitialise;
use crate::catalog::Catalog;
use crate::handler::HostHandler;
use crate::pin::CatalogPin;
use crate::prompts::Prompt;

/// The protocol layer's state for one open session: how frames are written
/// (the era's wire), what the client declares, the host's answers, and what
/// the legacy re-initialise compares against.
pub(crate) struct Protocol {
    /// What frames are written for now (legacy before and after its handshake,
    /// or modern).
    pub(crate) wire: WireCell,
    /// The `_meta` of every modern request.
    pub(crate) request_meta: RequestMeta,
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
        Protocol {
            wire: WireCell::new(Wire::Legacy(None)),
            request_meta: RequestMeta::new(MODERN_PROTOCOL_VERSION, &capabilities),
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
