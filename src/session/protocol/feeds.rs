//! Where change notifications go: the session's open subscriptions (each a
//! [`Feed`]), and the routing of every change notification to them
//! (beyond-tools.md §0.4, §1.6, §1.7).
//!
//! | | legacy | 2026-07-28 |
//! | --- | --- | --- |
//! | a change notification | to every feed whose honoured interest covers it | to the one listen its `_meta` subscription id names (a number equal to the listen's id), once acknowledged and when its honoured filter covers it |
//! | `notifications/subscriptions/acknowledged` | dropped | the listen's first message: its filter must be a subset of the request |
//! | `notifications/cancelled` naming a listen | (the input requests' rule) | the listen ends, `Cancelled` |
//! | `maxNotificationsPerSecond` | per session | per listen |
//!
//! What breaks a rule is dropped and reported to the diagnostics observer
//! ([`DiagnosticEvent::NotificationDropped`]); it never ends the session or the
//! subscription (Q9). Opening and closing feeds is [`super::subscriptions`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use secrecy::SecretString;
use serde_json::{Map, Value};
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::super::engine::{Core, lock};
use crate::diagnostics::DiagnosticEvent;
use crate::error::{Error, Result};
use crate::events::{
    EventQueue, Interest, Offered, RateWindow, SUBSCRIPTION_ID, ServerEvent, SubscriptionEnd,
};
use crate::jsonrpc::{self, Id};
use crate::limits::Limits;

/// The acknowledgement of a 2026-07-28 listen.
pub(crate) const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
const CANCELLED: &str = "notifications/cancelled";

/// One open subscription: what it asked for and was granted, the events
/// waiting for the host, and (2026-07-28) its listen request.
pub(crate) struct Feed {
    /// 2026-07-28: the id of its `subscriptions/listen` request.
    pub(crate) listen: Option<u64>,
    /// What was asked of the server.
    pub(crate) asked: Interest,
    state: Mutex<FeedState>,
    /// Woken when an event is queued or the feed ends.
    pub(crate) wake: Notify,
    /// Cancelled when the feed ends: its listen request is given up.
    pub(crate) stop: CancellationToken,
    /// 2026-07-28: the task carrying its listen request; once it has ended, the
    /// request was given up (its cancellation queued ahead of anything later).
    task: Mutex<Option<JoinHandle<()>>>,
}

struct FeedState {
    /// What the server agreed to (legacy: what it declared; 2026-07-28: set by
    /// the acknowledgement).
    honoured: Option<Interest>,
    queue: EventQueue,
    /// 2026-07-28: the acknowledgement's waiter, until it arrives.
    ack: Option<oneshot::Sender<Result<Interest>>>,
    /// 2026-07-28: `maxNotificationsPerSecond` of this listen.
    rate: RateWindow,
}

impl Feed {
    /// A legacy feed: `honoured` is what the server declared of `asked`.
    pub(crate) fn legacy(honoured: Interest, limits: &Limits) -> Arc<Feed> {
        Arc::new(Feed {
            listen: None,
            asked: honoured.clone(),
            state: Mutex::new(FeedState {
                honoured: Some(honoured),
                queue: EventQueue::new(Limits::usize_of(limits.max_pending_events)),
                ack: None,
                rate: RateWindow::new(limits.max_notifications_per_second),
            }),
            wake: Notify::new(),
            stop: CancellationToken::new(),
            task: Mutex::new(None),
        })
    }

    /// A 2026-07-28 feed for the listen `id`, and the wait for its
    /// acknowledgement.
    pub(crate) fn listen(
        id: u64,
        asked: Interest,
        limits: &Limits,
    ) -> (Arc<Feed>, oneshot::Receiver<Result<Interest>>) {
        let (ack, acked) = oneshot::channel();
        let feed = Arc::new(Feed {
            listen: Some(id),
            asked,
            state: Mutex::new(FeedState {
                honoured: None,
                queue: EventQueue::new(Limits::usize_of(limits.max_pending_events)),
                ack: Some(ack),
                rate: RateWindow::new(limits.max_notifications_per_second),
            }),
            wake: Notify::new(),
            stop: CancellationToken::new(),
            task: Mutex::new(None),
        });
        (feed, acked)
    }

    /// Keeps the task carrying the listen request.
    pub(crate) fn carried_by(&self, task: JoinHandle<()>) {
        *lock(&self.task) = Some(task);
    }

    /// Waits until the listen request's task has ended (after
    /// [`Feed::finish`], at once: the request is dropped, its cancellation
    /// queued). Nothing to wait for in the legacy era.
    pub(crate) async fn given_up(&self) {
        let task = lock(&self.task).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// What the server agreed to, once it did.
    pub(crate) fn honoured(&self) -> Option<Interest> {
        lock(&self.state).honoured.clone()
    }

    /// The next event, or the end once nothing is left before it; `Ok(None)`
    /// while nothing waits.
    pub(crate) fn take(&self) -> std::result::Result<Option<ServerEvent>, SubscriptionEnd> {
        lock(&self.state).queue.take()
    }

    /// How it ended, if it has.
    pub(crate) fn end(&self) -> Option<SubscriptionEnd> {
        lock(&self.state).queue.end().cloned()
    }

    /// Ends it (the first end stands): a waiting acknowledgement fails with
    /// the end's error, the listen is given up, the host is woken.
    pub(crate) fn finish(&self, end: SubscriptionEnd) {
        let ack = {
            let mut state = lock(&self.state);
            state.queue.finish(end.clone());
            state.ack.take()
        };
        if let Some(ack) = ack {
            let error = match end {
                SubscriptionEnd::Abrupt(error) => error,
                _ => Error::closed("the subscription ended before the server acknowledged it"),
            };
            let _ = ack.send(Err(error));
        }
        self.stop.cancel();
        self.wake.notify_one();
    }

    /// Queues `event` if the honoured interest covers it.
    fn offer(&self, core: &Core, method: &str, event: ServerEvent) {
        let offered = {
            let mut state = lock(&self.state);
            if !state
                .honoured
                .as_ref()
                .is_some_and(|honoured| honoured.covers(&event))
            {
                drop(state);
                return dropped(core, method, "not subscribed to");
            }
            state.queue.offer(event)
        };
        match offered {
            Offered::Queued => self.wake.notify_one(),
            Offered::Lagged => self.finish(SubscriptionEnd::Lagged),
            Offered::Coalesced | Offered::Ended => {}
        }
    }
}

/// The session's open feeds.
pub(crate) struct Feeds {
    inner: Mutex<FeedsInner>,
}

struct FeedsInner {
    feeds: Vec<Arc<Feed>>,
    /// Legacy: each subscribed URI and how many feeds want it.
    uris: HashMap<String, usize>,
    /// Legacy: `maxNotificationsPerSecond` of the session.
    rate: Option<RateWindow>,
}

impl Default for Feeds {
    fn default() -> Self {
        Feeds {
            inner: Mutex::new(FeedsInner {
                feeds: Vec::new(),
                uris: HashMap::new(),
                rate: None,
            }),
        }
    }
}

impl Feeds {
    /// Registers `feed`, within `maxSubscriptions` (`invalid_config`).
    pub(crate) fn add(&self, feed: &Arc<Feed>, server: &str, limits: &Limits) -> Result<()> {
        let mut inner = lock(&self.inner);
        let max = limits.max_subscriptions;
        if inner.feeds.len() as u64 >= max {
            return Err(Error::config(format!(
                "server \"{server}\" has {} subscriptions open; maxSubscriptions is {max}",
                inner.feeds.len()
            )));
        }
        inner.feeds.push(feed.clone());
        Ok(())
    }

    /// Legacy: counts `feed`'s URIs as wanted, within
    /// `maxResourceSubscriptions` distinct URIs in the session
    /// (`invalid_config`, nothing counted); returns those not subscribed yet.
    pub(crate) fn claim(&self, feed: &Feed, server: &str, limits: &Limits) -> Result<Vec<String>> {
        let mut inner = lock(&self.inner);
        let fresh: Vec<String> = feed
            .asked
            .resources
            .iter()
            .filter(|uri| !inner.uris.contains_key(*uri))
            .cloned()
            .collect();
        let total = inner.uris.len() + fresh.len();
        let max = limits.max_resource_subscriptions;
        if total as u64 > max {
            return Err(Error::config(format!(
                "server \"{server}\" would have {total} resources subscribed; maxResourceSubscriptions is {max}"
            )));
        }
        for uri in &feed.asked.resources {
            *inner.uris.entry(uri.clone()).or_default() += 1;
        }
        Ok(fresh)
    }

    /// Removes `feed` (ending it as `end` if it has not ended); returns the
    /// legacy URIs no feed wants any more.
    pub(crate) fn remove(&self, feed: &Arc<Feed>, end: SubscriptionEnd) -> Vec<String> {
        feed.finish(end);
        let mut inner = lock(&self.inner);
        let before = inner.feeds.len();
        inner.feeds.retain(|f| !Arc::ptr_eq(f, feed));
        if before == inner.feeds.len() || feed.listen.is_some() {
            return Vec::new();
        }
        let mut released = Vec::new();
        for uri in &feed.asked.resources {
            if let Some(count) = inner.uris.get_mut(uri) {
                *count -= 1;
                if *count == 0 {
                    inner.uris.remove(uri);
                    released.push(uri.clone());
                }
            }
        }
        released
    }

    /// Legacy: every subscribed URI (to subscribe again after a re-initialise).
    pub(crate) fn subscribed(&self) -> Vec<String> {
        lock(&self.inner).uris.keys().cloned().collect()
    }

    /// Legacy: ends every feed holding resource subscriptions as `error` (the
    /// server lost them and subscribing again failed).
    pub(crate) fn lose_resources(&self, error: &Error) {
        let holding: Vec<_> = lock(&self.inner)
            .feeds
            .iter()
            .filter(|f| f.listen.is_none() && !f.asked.resources.is_empty())
            .cloned()
            .collect();
        for feed in holding {
            feed.finish(SubscriptionEnd::Abrupt(error.clone()));
        }
    }

    /// Routes one notification (see the module docs); `modern` is the era.
    pub(crate) fn route(&self, core: &Core, method: &str, frame: &[u8], modern: bool) {
        if !ServerEvent::is_change(method) && method != ACKNOWLEDGED && method != CANCELLED {
            return;
        }
        if lock(&self.inner).feeds.is_empty() {
            // Legacy servers send list changes unasked; a 2026-07-28 one may not.
            if modern && method != CANCELLED {
                dropped(core, method, "no subscription is open");
            }
            return;
        }
        let params = jsonrpc::request_params(frame);
        if modern {
            self.route_modern(core, method, params.as_ref());
        } else if method != CANCELLED {
            self.route_legacy(core, method, params.as_ref());
        }
    }

    fn route_legacy(&self, core: &Core, method: &str, params: Option<&Map<String, Value>>) {
        if method == ACKNOWLEDGED {
            return dropped(core, method, "a 2026-07-28 message in a legacy session");
        }
        let event = match event_of(core, method, params) {
            Some(event) => event,
            None => return,
        };
        let feeds = {
            let mut inner = lock(&self.inner);
            let per_second = core.limits.max_notifications_per_second;
            let rate = inner
                .rate
                .get_or_insert_with(|| RateWindow::new(per_second));
            if !rate.admit(Instant::now()) {
                let first = rate.dropped == 1;
                drop(inner);
                return rate_limited(core, method, first);
            }
            inner.feeds.clone()
        };
        for feed in feeds {
            feed.offer(core, method, event.clone());
        }
    }

    fn route_modern(&self, core: &Core, method: &str, params: Option<&Map<String, Value>>) {
        if method == CANCELLED {
            // The server ending a listen (its id is the cancelled request's).
            let named = params
                .and_then(|p| p.get("requestId"))
                .and_then(Id::from_json)
                .and_then(|id| id.as_u64().filter(|_| matches!(id, Id::Number(_))));
            if let Some(feed) = named.and_then(|id| self.listen_of(id)) {
                feed.finish(SubscriptionEnd::Cancelled);
            }
            return;
        }
        let tag = params
            .and_then(|p| p.get("_meta"))
            .and_then(|meta| meta.get(SUBSCRIPTION_ID));
        // Compared exactly: our listen ids are numbers, and "7" is not 7.
        let feed = match tag.and_then(Value::as_u64) {
            Some(id) => self.listen_of(id),
            None => None,
        };
        let Some(feed) = feed else {
            let reason = if tag.is_some() {
                "names no open listen"
            } else {
                "carries no subscription id"
            };
            return dropped(core, method, reason);
        };
        if method == ACKNOWLEDGED {
            return acknowledge(core, &feed, params);
        }
        let event = match event_of(core, method, params) {
            Some(event) => event,
            None => return,
        };
        {
            let mut state = lock(&feed.state);
            if state.honoured.is_none() {
                drop(state);
                return dropped(core, method, "came before the acknowledgement");
            }
            if !state.rate.admit(Instant::now()) {
                let first = state.rate.dropped == 1;
                drop(state);
                return rate_limited(core, method, first);
            }
        }
        feed.offer(core, method, event);
    }

    fn listen_of(&self, id: u64) -> Option<Arc<Feed>> {
        lock(&self.inner)
            .feeds
            .iter()
            .find(|feed| feed.listen == Some(id))
            .cloned()
    }
}

/// A listen's acknowledgement: the first one settles the wait (a filter that
/// asks for more than was asked fails it); any later one is dropped.
fn acknowledge(core: &Core, feed: &Feed, params: Option<&Map<String, Value>>) {
    let mut state = lock(&feed.state);
    let Some(ack) = state.ack.take() else {
        drop(state);
        return dropped(core, ACKNOWLEDGED, "a second acknowledgement");
    };
    let filter = params
        .and_then(|p| p.get("notifications"))
        .and_then(Value::as_object);
    let read = match filter {
        Some(filter) => Interest::from_filter(filter),
        None => Err("it has no notifications object".to_owned()),
    };
    let outcome = match read {
        Ok(honoured) if honoured.is_subset_of(&feed.asked) => {
            state.honoured = Some(honoured.clone());
            Ok(honoured)
        }
        Ok(_) => Err(Error::invalid_response(format!(
            "server \"{}\" acknowledged subscriptions/listen with more than was asked",
            core.server
        ))),
        Err(rule) => Err(Error::invalid_response(format!(
            "server \"{}\" acknowledged subscriptions/listen with a filter that breaks a rule: {rule}",
            core.server
        ))),
    };
    drop(state);
    let _ = ack.send(outcome);
}

/// The event of a change notification; `None` (dropped, reported) when it
/// breaks a rule.
fn event_of(core: &Core, method: &str, params: Option<&Map<String, Value>>) -> Option<ServerEvent> {
    let max_uri = Limits::usize_of(core.limits.max_uri_bytes);
    match ServerEvent::from_notification(method, params, max_uri)? {
        Ok(event) => Some(event),
        Err(_) => {
            dropped(core, method, "breaks a rule");
            None
        }
    }
}

/// A drop past the rate: reported for the first in each second.
fn rate_limited(core: &Core, method: &str, first: bool) {
    if first {
        dropped(core, method, "past maxNotificationsPerSecond");
    }
}

fn dropped(core: &Core, method: &str, reason: &'static str) {
    if core.diagnostics.is_enabled() {
        core.diagnostics.emit(DiagnosticEvent::NotificationDropped {
            server: core.server.clone(),
            method: SecretString::from(method.to_owned()),
            reason,
        });
    }
}
