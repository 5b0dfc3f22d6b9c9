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
    let asked = declared(facts, &interest);
    if asked.is_empty() {
        return Err(missing_capability(&core.server, first_asked(&interest)));
    }
    if link.protocol.wire.get().is_modern() {
        listen(link, asked).await
    } else {
        subscribe(link, asked).await
    }
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
    } else if !interest.resources.is_empty() {
        "resources.subscribe"
    } else {
        "anything to subscribe to (the interest is empty)"
    }
}

#[derive(Serialize)]
struct UriParams<'a> {
    uri: &'a str,
}

/// Legacy: registers the feed, then subscribes the URIs the session has not.
async fn subscribe(link: &Link, asked: Interest) -> Result<Arc<Feed>> {
    let core = &link.core;
    let feeds = &link.protocol.feeds;
    let feed = Feed::legacy(asked, &core.limits);
    feeds.add(&feed, &core.server, &core.limits)?;
    let fresh = match feeds.claim(&feed, &core.server, &core.limits) {
        Ok(fresh) => fresh,
        Err(error) => {
            feeds.remove(&feed, SubscriptionEnd::Abrupt(error.clone()));
            return Err(error);
        }
    };
    for (done, uri) in fresh.iter().enumerate() {
        let deadline = Instant::now() + core.limits.request_timeout();
        let ask = Ask::new("resources/subscribe", deadline);
        if let Err(error) = send::send(link, &ask, &UriParams { uri }).await {
            // Nothing half-done: what this call subscribed is unsubscribed.
            let released = feeds.remove(&feed, SubscriptionEnd::Abrupt(error.clone()));
            let undo: Vec<_> = released
                .into_iter()
                .filter(|uri| fresh[..done].contains(uri))
                .collect();
            unsubscribe(link, &undo).await;
            return Err(error);
        }
    }
    Ok(feed)
}

/// Legacy: `resources/unsubscribe` for each of `uris`, each within
/// `requestTimeoutMs`; best effort (the server may have gone).
pub(crate) async fn unsubscribe(link: &Link, uris: &[String]) {
    for uri in uris {
        if link.core.terminal().is_some() {
            return;
        }
        let deadline = Instant::now() + link.core.limits.request_timeout();
        let ask = Ask::new("resources/unsubscribe", deadline);
        let _ = send::send(link, &ask, &UriParams { uri }).await;
    }
}

/// Legacy, after a re-initialise: subscribes again every URI the session had
/// (the server's new session has none); when that fails, the subscriptions
/// holding resources end `Abrupt` with the error.
pub(crate) async fn renew(link: &Link) {
    for uri in link.protocol.feeds.subscribed() {
        let deadline = Instant::now() + link.core.limits.request_timeout();
        let ask = Ask::new("resources/subscribe", deadline);
        if let Err(error) = send::send(link, &ask, &UriParams { uri: &uri }).await {
            let error = Error::new(
                error.kind(),
                format!(
                    "server \"{}\" lost its session and subscribing to its resources again failed: {}",
                    link.core.server,
                    error.message()
                ),
            );
            link.protocol.feeds.lose_resources(&error);
            return;
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
async fn listen(link: &Link, asked: Interest) -> Result<Arc<Feed>> {
    let core = &link.core;
    let id = core.reserve_id();
    let (feed, acked) = Feed::listen(id, asked, &core.limits);
    link.protocol.feeds.add(&feed, &core.server, &core.limits)?;
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
