//! Opening and closing subscriptions (beyond-tools.md §1.7), per era; the
//! routing of what they deliver is [`super::feeds`].
//!
//! | | legacy | 2026-07-28 |
//! | --- | --- | --- |
//! | lists | the `listChanged` the server declared; nothing is sent (the server sends them unasked) | `subscriptions/listen` asks; its acknowledgement says what is honoured (a subset of the request) |
//! | resources | `resources/subscribe` per URI not yet subscribed in the session (needs `resources.subscribe`) | in the same listen's `resourceSubscriptions` |
//! | the wait | each `resources/subscribe` within `requestTimeoutMs` | the acknowledgement within `handshakeTimeoutMs`; after it, no request timeout |
//! | closing | `resources/unsubscribe` for URIs no other subscription wants | the listen given up (stdio: `notifications/cancelled`; HTTP: its stream closed) |
//! | the server's session lost (HTTP 404) | subscribed again after the re-initialise; if that fails, the subscriptions holding resources end `Abrupt` | — (stateless) |
//!
//! Asked for is what the host asked and the server declared
//! (`tools.listChanged`, `prompts.listChanged`, `resources.listChanged`,
//! `resources.subscribe`): nothing left is `missing_capability`, and nothing
//! is sent. At most `maxSubscriptions` open at once, at most
//! `maxResourceSubscriptions` URIs in one (and, legacy, in the session): past
//! either, `invalid_config`, nothing sent. A failure leaves nothing subscribed
//! that this call subscribed.
//!
//! Where this differs from beyond-tools.md §1.7 and §8, on purpose:
//! - no re-listen with backoff: a subscription that ends says why
//!   ([`SubscriptionEnd`]) and the host opens another. The supervisor
//!   (`crate::supervisor`) reconnects a session and re-discovers, but does
//!   not reopen subscriptions either: the host does, on its `Reconnected`
//!   event, and refetches (its module docs say why);
//! - `maxSubscriptions` counts legacy subscriptions too, not only listen
//!   streams (one bound for what the host holds open);
//! - a listen's result without `_meta` or `resultType` (servers before the
//!   post-release edit) is graceful without a diagnostic: the observer has no
//!   event for it;
//! - a 2026-07-28 event is matched by its subscription id alone, not by the
//!   HTTP stream it came on (the id is what the spec names; a server sends
//!   each on its listen's stream anyway);
//! - the legacy `maxNotificationsPerSecond` counts every change
//!   notification of the session, asked for or not.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use tokio::time::Instant;

use super::super::engine::RequestOptions;
use super::era::RequestMeta;
use super::feeds::Feed;
use super::link::Link;
use super::negotiate::{ServerFacts, missing_capability};
use super::send::{self, Ask};
use crate::error::{Error, Result};
use crate::events::{Interest, SUBSCRIPTION_ID, SubscriptionEnd};
use crate::jsonrpc::ResultBody;
use crate::limits::Limits;

/// How far ahead an acknowledged listen's deadline lies: it has no request
/// timeout, and this stands for "never" to the core's deadline.
const LISTEN_HORIZON: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Opens a subscription for `interest` (the module docs say how, per era).
pub(crate) async fn open(
    link: &Link,
    facts: &ServerFacts,
    interest: Interest,
) -> Result<Arc<Feed>> {
    let core = &link.core;
    let limits = &core.limits;
    let interest = interest.checked(Limits::usize_of(limits.max_uri_bytes))?;
    let max = limits.max_resource_subscriptions;
    if interest.resources.len() as u64 > max {
        return Err(Error::config(format!(
            "a subscription to server \"{}\" asks for {} resources; maxResourceSubscriptions is {max}",
            core.server,
            interest.resources.len()
        )));
    }
    if interest.is_empty() {
        return Err(Error::protocol(
            "a subscription must ask for something: the interest is empty",
        ));
    }
    let asked = declared(facts, &interest);
    if asked.is_empty() {
        return Err(missing_capability(&core.server, first_asked(&interest)));
    }
    let mut guard = OpenGuard::new(link);
    let feed = if link.protocol.wire.get().is_modern() {
        listen(link, asked, &mut guard).await?
    } else {
        subscribe(link, asked, &mut guard).await?
    };
    guard.disarm();
    Ok(feed)
}

/// What of `interest` the server declared it can send.
fn declared(facts: &ServerFacts, interest: &Interest) -> Interest {
    let flag = |capability: &str, member: &str| {
        facts
            .capability(capability)
            .and_then(|c| c.get(member))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    Interest {
        tools_list_changed: interest.tools_list_changed && flag("tools", "listChanged"),
        prompts_list_changed: interest.prompts_list_changed && flag("prompts", "listChanged"),
        resources_list_changed: interest.resources_list_changed && flag("resources", "listChanged"),
        resources: if flag("resources", "subscribe") {
            interest.resources.clone()
        } else {
            Vec::new()
        },
    }
}

/// The capability named when nothing asked is declared.
fn first_asked(interest: &Interest) -> &'static str {
    if interest.tools_list_changed {
        "tools.listChanged"
    } else if interest.prompts_list_changed {
        "prompts.listChanged"
    } else if interest.resources_list_changed {
        "resources.listChanged"
    } else {
        "resources.subscribe"
    }
}

#[derive(Serialize)]
struct UriParams<'a> {
    uri: &'a str,
}

/// Legacy: registers the feed and counts its URIs, then subscribes those the
/// session has not, all within one `requestTimeoutMs` and under the legacy
/// serial lock (a concurrent subscribe or release of the same URIs waits). On
/// failure the feed is released and what this call subscribed is
/// unsubscribed (from a task of its own: the caller gets the error at once).
async fn subscribe(link: &Link, asked: Interest, guard: &mut OpenGuard) -> Result<Arc<Feed>> {
    let core = &link.core;
    let feeds = &link.protocol.feeds;
    let deadline = Instant::now() + core.limits.request_timeout();
    let _serial = feeds.legacy_serial.lock().await;
    let feed = Feed::legacy(asked, &core.limits);
    let fresh = feeds.add(&feed, &core.server, &core.limits)?;
    guard.arm(&feed);
    for (done, uri) in fresh.iter().enumerate() {
        let ask = Ask::new("resources/subscribe", deadline);
        if let Err(error) = send::send(link, &ask, &UriParams { uri }).await {
            feeds.remove(&feed, SubscriptionEnd::Abrupt(error.clone()));
            let undo: Vec<_> = feeds
                .release(&feed)
                .into_iter()
                .filter(|uri| fresh[..done].contains(uri))
                .collect();
            guard.disarm();
            spawn_unsubscribe(link, undo);
            return Err(error);
        }
    }
    Ok(feed)
}

/// Legacy: `resources/unsubscribe` for each of `uris` within one
/// `requestTimeoutMs`; best effort (the server may have gone). The caller
/// holds the legacy serial lock.
async fn unsubscribe(link: &Link, uris: &[String]) {
    let deadline = Instant::now() + link.core.limits.request_timeout();
    for uri in uris {
        if link.core.terminal().is_some() {
            return;
        }
        let ask = Ask::new("resources/unsubscribe", deadline);
        let _ = send::send(link, &ask, &UriParams { uri }).await;
    }
}

/// Legacy: releases `feed`'s URIs and unsubscribes those no feed wants any
/// more, under the legacy serial lock.
pub(crate) async fn release(link: &Link, feed: &Feed) {
    let feeds = &link.protocol.feeds;
    let _serial = feeds.legacy_serial.lock().await;
    let released = feeds.release(feed);
    unsubscribe(link, &released).await;
}

/// [`release`] from a task of its own (a drop path), when a runtime runs;
/// without one the URIs are only uncounted (nothing can be sent).
pub(crate) fn spawn_release(link: &Link, feed: Arc<Feed>) {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            let link = link.clone();
            runtime.spawn(async move { release(&link, &feed).await });
        }
        Err(_) => {
            link.protocol.feeds.release(&feed);
        }
    }
}

/// Unsubscribes `uris` from a task of its own (a rollback), under the legacy
/// serial lock.
fn spawn_unsubscribe(link: &Link, uris: Vec<String>) {
    if uris.is_empty() {
        return;
    }
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let link = link.clone();
        runtime.spawn(async move {
            let _serial = link.protocol.feeds.legacy_serial.lock().await;
            unsubscribe(&link, &uris).await;
        });
    }
}

/// Legacy, after a re-initialise: subscribes again every URI the session had
/// (the server's new session has none), within one `requestTimeoutMs`; when
/// that fails, the subscriptions holding resources end `Abrupt` with the error
/// (its kind and remote detail kept) and nothing stays counted.
pub(crate) async fn renew(link: &Link) {
    let feeds = &link.protocol.feeds;
    let _serial = feeds.legacy_serial.lock().await;
    let deadline = Instant::now() + link.core.limits.request_timeout();
    for uri in feeds.subscribed() {
        let ask = Ask::new("resources/subscribe", deadline);
        if let Err(error) = send::send(link, &ask, &UriParams { uri: &uri }).await {
            let mut lost = Error::new(
                error.kind(),
                format!(
                    "server \"{}\" lost its session and subscribing to its resources again failed: {}",
                    link.core.server,
                    error.message()
                ),
            );
            if let Some(detail) = error.detail() {
                lost = lost.with_detail(detail.clone());
            }
            feeds.lose_resources(&lost);
            return;
        }
    }
}

/// Undoes an open that did not finish (its future dropped, or failed past
/// registering): the feed is removed and (legacy) its URIs uncounted at once,
/// so a cancelled `subscribe` holds no `maxSubscriptions` slot, no counted URI
/// and no running listen. Nothing is unsubscribed: the `resources/subscribe`
/// given up was cancelled, and a URI it had subscribed before stays
/// subscribed on the server (its updates are dropped as not subscribed to)
/// until a subscription asks for it again or the session ends. (Armed only
/// while the open holds the legacy serial lock, so uncounting here races
/// with no other subscribe or release.)
pub(crate) struct OpenGuard {
    link: Link,
    feed: Option<Arc<Feed>>,
}

impl OpenGuard {
    fn new(link: &Link) -> OpenGuard {
        OpenGuard {
            link: link.clone(),
            feed: None,
        }
    }

    fn arm(&mut self, feed: &Arc<Feed>) {
        self.feed = Some(feed.clone());
    }

    fn disarm(&mut self) {
        self.feed = None;
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        if let Some(feed) = self.feed.take() {
            let gone = Error::closed("the subscribe call was given up");
            self.link
                .protocol
                .feeds
                .remove(&feed, SubscriptionEnd::Abrupt(gone));
            if feed.listen.is_none() {
                self.link.protocol.feeds.release(&feed);
            }
        }
    }
}

#[derive(Serialize)]
struct ListenParams<'a> {
    #[serde(rename = "_meta")]
    meta: &'a RequestMeta,
    notifications: Value,
}

/// 2026-07-28: sends `subscriptions/listen` from a task of its own (it lives
/// as long as the subscription) and waits for the acknowledgement.
async fn listen(link: &Link, asked: Interest, guard: &mut OpenGuard) -> Result<Arc<Feed>> {
    let core = &link.core;
    let id = core.reserve_id();
    let (feed, acked) = Feed::listen(id, asked, &core.limits);
    link.protocol.feeds.add(&feed, &core.server, &core.limits)?;
    guard.arm(&feed);
    let task = {
        let link = link.clone();
        let feed = feed.clone();
        async move {
            let core = &link.core;
            let params = ListenParams {
                meta: &link.protocol.request_meta,
                notifications: feed.asked.to_filter(),
            };
            let options = RequestOptions {
                framing: link.protocol.wire.get().into(),
                id: Some(id),
                ..RequestOptions::default()
            };
            let request = core.request_body(
                "subscriptions/listen",
                params,
                Instant::now() + LISTEN_HORIZON,
                options,
            );
            let end = tokio::select! {
                outcome = request => listen_ended(&link, &feed, outcome),
                // Given up (closed, dropped, lagged, cancelled by the server):
                // dropping the request cancels it.
                () = feed.stop.cancelled() => return,
            };
            link.protocol.feeds.remove(&feed, end);
        }
    };
    feed.carried_by(tokio::spawn(task));
    let timeout = core.limits.handshake_timeout();
    let outcome = match tokio::time::timeout(timeout, acked).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(_)) => Err(Error::closed(format!(
            "server \"{}\" ended subscriptions/listen before acknowledging it",
            core.server
        ))),
        Err(_) => Err(Error::timeout(format!(
            "server \"{}\" did not acknowledge subscriptions/listen within {} ms; handshakeTimeoutMs is {}",
            core.server, core.limits.handshake_timeout_ms, core.limits.handshake_timeout_ms
        ))),
    };
    match outcome {
        Ok(_) => Ok(feed),
        Err(error) => {
            link.protocol
                .feeds
                .remove(&feed, SubscriptionEnd::Abrupt(error.clone()));
            guard.disarm();
            Err(error)
        }
    }
}

/// How a listen ended when its request was answered: a result tagged with
/// its id (`resultType: "complete"`) is graceful; one without `_meta` or
/// `resultType` (servers before the post-release edit send `{}`) is graceful
/// too; another id or `resultType` is `invalid_response`; an error (the
/// session ended, the stream broke, the server refused) is abrupt. A reply
/// before the acknowledgement fails the open.
fn listen_ended(link: &Link, feed: &Feed, outcome: Result<ResultBody>) -> SubscriptionEnd {
    let server = &link.core.server;
    let result = match outcome {
        Ok(result) => result.into_value(),
        Err(error) => return SubscriptionEnd::Abrupt(error),
    };
    if feed.honoured().is_none() {
        return SubscriptionEnd::Abrupt(Error::invalid_response(format!(
            "server \"{server}\" answered subscriptions/listen before acknowledging it"
        )));
    }
    let tag = result
        .get("_meta")
        .and_then(|meta| meta.get(SUBSCRIPTION_ID));
    let tag_ok = match tag {
        None => true,
        Some(tag) => tag.as_u64() == feed.listen,
    };
    let kind_ok = match result.get("resultType") {
        None => true,
        Some(kind) => kind == "complete",
    };
    if tag_ok && kind_ok {
        SubscriptionEnd::Graceful
    } else {
        SubscriptionEnd::Abrupt(Error::invalid_response(format!(
            "server \"{server}\" ended subscriptions/listen with a result for another subscription or of another resultType"
        )))
    }
}
