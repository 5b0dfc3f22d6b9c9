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
//! ([`DiagnosticEvent::NotificationDropped`], at most once per reason per
//! second); it never ends the session or the subscription (Q9). Opening and
//! closing feeds is [`super::subscriptions`].
//!
//! A feed counts against `maxSubscriptions` until it ends (ended feeds are
//! pruned when the next one is added); a legacy feed's URIs count against
//! `maxResourceSubscriptions` until it is released ([`Feeds::release`], once)
//! or the server lost them ([`Feeds::lose_resources`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
use crate::events::{
    PROMPTS_LIST_CHANGED, RESOURCES_LIST_CHANGED, RESOURCES_UPDATED, TOOLS_LIST_CHANGED,
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
    /// Legacy: its URIs are counted in [`Feeds`] (until released).
    claimed: AtomicBool,
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
            claimed: AtomicBool::new(false),
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
            claimed: AtomicBool::new(false),
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

    /// Queues `event` if the honoured interest covers it; whether it did.
    fn offer(&self, event: &ServerEvent) -> bool {
        let offered = {
            let mut state = lock(&self.state);
            if !state
                .honoured
                .as_ref()
                .is_some_and(|honoured| honoured.covers(event))
            {
                return false;
            }
            state.queue.offer(event.clone())
        };
        match offered {
            Offered::Queued => self.wake.notify_one(),
            Offered::Lagged => self.finish(SubscriptionEnd::Lagged),
            Offered::Coalesced | Offered::Ended => {}
        }
        true
    }
}

/// The session's open feeds.
pub(crate) struct Feeds {
    inner: Mutex<FeedsInner>,
    /// Held across a legacy subscribe (counting, `resources/subscribe`, the
    /// rollback) and a release (uncounting, `resources/unsubscribe`), so that
    /// the server's subscribed set follows the counts: a URI another call is
    /// subscribing or unsubscribing waits for it.
    pub(crate) legacy_serial: tokio::sync::Mutex<()>,
    /// When each drop reason was last reported.
    reported: DropReports,
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
            legacy_serial: tokio::sync::Mutex::new(()),
            reported: DropReports::default(),
        }
    }
}

impl Feeds {
    /// Registers `feed` within `maxSubscriptions` and (legacy) counts its
    /// URIs within `maxResourceSubscriptions` distinct URIs in the session, in
    /// one step: on `invalid_config` nothing is registered or counted. Returns
    /// the URIs not subscribed yet (legacy; the caller subscribes them).
    pub(crate) fn add(
        &self,
        feed: &Arc<Feed>,
        server: &str,
        limits: &Limits,
    ) -> Result<Vec<String>> {
        let mut inner = lock(&self.inner);
        inner.feeds.retain(|f| f.end().is_none());
        let max = limits.max_subscriptions;
        if inner.feeds.len() as u64 >= max {
            return Err(Error::config(format!(
                "server \"{server}\" has {} subscriptions open; maxSubscriptions is {max}",
                inner.feeds.len()
            )));
        }
        let mut fresh = Vec::new();
        if feed.listen.is_none() && !feed.asked.resources.is_empty() {
            fresh = feed
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
            feed.claimed.store(true, Ordering::SeqCst);
        }
        inner.feeds.push(feed.clone());
        Ok(fresh)
    }

    /// Ends `feed` as `end` (unless it has ended) and takes it out of the
    /// routing; its URIs stay counted until [`Feeds::release`].
    pub(crate) fn remove(&self, feed: &Arc<Feed>, end: SubscriptionEnd) {
        feed.finish(end);
        lock(&self.inner).feeds.retain(|f| !Arc::ptr_eq(f, feed));
    }

    /// Legacy: uncounts `feed`'s URIs (once; nothing for a feed released or
    /// lost already) and returns those no feed wants any more (the caller
    /// unsubscribes them).
    pub(crate) fn release(&self, feed: &Feed) -> Vec<String> {
        if !feed.claimed.swap(false, Ordering::SeqCst) {
            return Vec::new();
        }
        let mut inner = lock(&self.inner);
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

    /// Legacy: the server lost every resource subscription and subscribing
    /// again failed: the feeds holding some end as `error`, nothing stays
    /// counted (a later subscribe subscribes again).
    pub(crate) fn lose_resources(&self, error: &Error) {
        let holding: Vec<_> = {
            let mut inner = lock(&self.inner);
            inner.uris.clear();
            let holding: Vec<_> = inner
                .feeds
                .iter()
                .filter(|f| f.claimed.swap(false, Ordering::SeqCst))
                .cloned()
                .collect();
            inner
                .feeds
                .retain(|f| !holding.iter().any(|h| Arc::ptr_eq(f, h)));
            holding
        };
        for feed in holding {
            feed.finish(SubscriptionEnd::Abrupt(error.clone()));
        }
    }

    /// Routes one notification (see the module docs); `modern` is the era.
    /// Whether a feed took it as an event.
    pub(crate) fn route(&self, core: &Core, method: &str, frame: &[u8], modern: bool) -> bool {
        if !ServerEvent::is_change(method) && method != ACKNOWLEDGED && method != CANCELLED {
            return false;
        }
        if lock(&self.inner).feeds.is_empty() {
            // Legacy servers send list changes unasked; a 2026-07-28 one may not.
            if modern && method != CANCELLED {
                self.report(core, method, "no subscription is open");
            }
            return false;
        }
        let params = jsonrpc::request_params(frame);
        if modern {
            self.route_modern(core, method, params.as_ref())
        } else if method != CANCELLED {
            self.route_legacy(core, method, params.as_ref())
        } else {
            false
        }
    }

    fn route_legacy(&self, core: &Core, method: &str, params: Option<&Map<String, Value>>) -> bool {
        if method == ACKNOWLEDGED {
            self.report(core, method, "a 2026-07-28 message in a legacy session");
            return false;
        }
        let Some(event) = self.event_of(core, method, params) else {
            return false;
        };
        let feeds = {
            let mut inner = lock(&self.inner);
            let per_second = core.limits.max_notifications_per_second;
            let rate = inner
                .rate
                .get_or_insert_with(|| RateWindow::new(per_second));
            if !rate.admit(Instant::now()) {
                drop(inner);
                self.report(core, method, "past maxNotificationsPerSecond");
                return false;
            }
            inner.feeds.clone()
        };
        let mut taken = false;
        for feed in feeds {
            taken |= feed.offer(&event);
        }
        if !taken {
            self.report(core, method, "not subscribed to");
        }
        taken
    }

    fn route_modern(&self, core: &Core, method: &str, params: Option<&Map<String, Value>>) -> bool {
        if method == CANCELLED {
            // The server ending a listen (its id is the cancelled request's).
            let named = params
                .and_then(|p| p.get("requestId"))
                .and_then(Id::from_json)
                .and_then(|id| id.as_u64().filter(|_| matches!(id, Id::Number(_))));
            if let Some(feed) = named.and_then(|id| self.listen_of(id)) {
                feed.finish(SubscriptionEnd::Cancelled);
            }
            return false;
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
            self.report(core, method, reason);
            return false;
        };
        if method == ACKNOWLEDGED {
            self.acknowledge(core, &feed, params);
            return false;
        }
        let Some(event) = self.event_of(core, method, params) else {
            return false;
        };
        {
            let mut state = lock(&feed.state);
            if state.honoured.is_none() {
                drop(state);
                self.report(core, method, "came before the acknowledgement");
                return false;
            }
            if !state.rate.admit(Instant::now()) {
                drop(state);
                self.report(core, method, "past maxNotificationsPerSecond");
                return false;
            }
        }
        let taken = feed.offer(&event);
        if !taken {
            self.report(core, method, "not subscribed to");
        }
        taken
    }

    fn listen_of(&self, id: u64) -> Option<Arc<Feed>> {
        lock(&self.inner)
            .feeds
            .iter()
            .find(|feed| feed.listen == Some(id))
            .cloned()
    }
}

impl Feeds {
    /// A listen's acknowledgement: the first one settles the wait (a filter that
    /// asks for more than was asked fails it); any later one is dropped.
    fn acknowledge(&self, core: &Core, feed: &Feed, params: Option<&Map<String, Value>>) {
        let mut state = lock(&feed.state);
        let Some(ack) = state.ack.take() else {
            drop(state);
            return self.report(core, ACKNOWLEDGED, "a second acknowledgement");
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
    fn event_of(
        &self,
        core: &Core,
        method: &str,
        params: Option<&Map<String, Value>>,
    ) -> Option<ServerEvent> {
        let max_uri = Limits::usize_of(core.limits.max_uri_bytes);
        match ServerEvent::from_notification(method, params, max_uri)? {
            Ok(event) => Some(event),
            Err(_) => {
                self.report(core, method, "breaks a rule");
                None
            }
        }
    }

    /// Reports a drop to the diagnostics observer ([`DropReports`]).
    fn report(&self, core: &Core, method: &str, reason: &'static str) {
        self.reported.report(core, known_method(method), reason);
    }
}

/// When each reason a notification was dropped for was last reported: a drop
/// is reported to the diagnostics observer at most once per reason per second
/// (a flood is reported, not repeated).
#[derive(Default)]
pub(crate) struct DropReports(Mutex<HashMap<&'static str, Instant>>);

impl DropReports {
    /// Reports a notification of `method` dropped for `reason`, unless that
    /// reason was reported less than a second ago.
    pub(crate) fn report(&self, core: &Core, method: &'static str, reason: &'static str) {
        if !core.diagnostics.is_enabled() {
            return;
        }
        let now = Instant::now();
        {
            let mut reported = lock(&self.0);
            match reported.get(reason) {
                Some(last) if now.duration_since(*last) < Duration::from_secs(1) => return,
                _ => {
                    reported.insert(reason, now);
                }
            }
        }
        core.diagnostics.emit(DiagnosticEvent::NotificationDropped {
            server: core.server.clone(),
            method,
            reason,
        });
    }
}

/// The methods that reach [`Feeds::report`], as static names.
fn known_method(method: &str) -> &'static str {
    match method {
        TOOLS_LIST_CHANGED => TOOLS_LIST_CHANGED,
        PROMPTS_LIST_CHANGED => PROMPTS_LIST_CHANGED,
        RESOURCES_LIST_CHANGED => RESOURCES_LIST_CHANGED,
        RESOURCES_UPDATED => RESOURCES_UPDATED,
        ACKNOWLEDGED => ACKNOWLEDGED,
        _ => "notification",
    }
}
