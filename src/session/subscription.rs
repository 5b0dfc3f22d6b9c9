//! [`Subscription`]: the host's end of an open subscription, from
//! [`Client::subscribe`](super::Client::subscribe).

use std::sync::Arc;

use super::protocol::Link;
use super::protocol::feeds::Feed;
use super::protocol::subscriptions;
use crate::events::{Interest, ServerEvent, SubscriptionEnd};

/// An open subscription: the events the server sends for it, in order, equal
/// ones coalesced while they wait, until it ends.
///
/// Dropping it ends it: a 2026-07-28 listen is given up at once (stdio:
/// `notifications/cancelled`; HTTP: its stream closed), and legacy resource
/// subscriptions no other subscription wants are unsubscribed from a task of
/// their own. [`close`](Self::close) does the same and waits for it.
///
/// ```no_run
/// # async fn run(client: smthrs_mcp::Client) -> smthrs_mcp::Result<()> {
/// use smthrs_mcp::events::{Interest, ServerEvent};
/// let mut changes = client.subscribe(Interest::every_list()).await?;
/// while let Some(event) = changes.next().await {
///     if event == ServerEvent::ToolsListChanged {
///         println!("the server's tools changed: reconnect to see them");
///     }
/// }
/// println!("ended: {:?}", changes.end());
/// # Ok(())
/// # }
/// ```
#[must_use = "dropping a Subscription ends it"]
pub struct Subscription {
    link: Link,
    feed: Arc<Feed>,
    honoured: Interest,
    closed: bool,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("server", &self.link.core.server)
            .field("honoured", &self.honoured)
            .field("ended", &self.feed.end().is_some())
            .finish()
    }
}

impl Subscription {
    pub(crate) fn new(link: Link, feed: Arc<Feed>) -> Subscription {
        let honoured = feed.honoured().unwrap_or_default();
        Subscription {
            link,
            feed,
            honoured,
            closed: false,
        }
    }

    /// What the server agreed to send: a subset of what was asked
    /// (legacy: what it declared; 2026-07-28: what it acknowledged).
    pub fn honoured(&self) -> &Interest {
        &self.honoured
    }

    /// The next event; `None` once the subscription has ended and every
    /// event before the end was taken ([`end`](Self::end) says why).
    /// Cancel-safe: an event is taken only when this returns it.
    pub async fn next(&mut self) -> Option<ServerEvent> {
        loop {
            let woken = self.feed.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            match self.feed.take() {
                Ok(Some(event)) => return Some(event),
                Err(_) => return None,
                Ok(None) => {}
            }
            tokio::select! {
                () = woken => {}
                () = self.link.core.ended.cancelled() => {
                    let error = self.link.core.terminal().cloned().unwrap_or_else(|| {
                        crate::Error::closed("the session ended")
                    });
                    self.feed.finish(SubscriptionEnd::Abrupt(error));
                }
            }
        }
    }

    /// How it ended, once it has (events may still wait before the end).
    pub fn end(&self) -> Option<SubscriptionEnd> {
        if self.feed.end().is_none()
            && let Some(error) = self.link.core.terminal()
        {
            self.feed.finish(SubscriptionEnd::Abrupt(error.clone()));
        }
        self.feed.end()
    }

    /// Ends it and waits until the server is told, ahead of any later
    /// request: a legacy `resources/unsubscribe` for each URI no other
    /// subscription wants (within one `requestTimeoutMs`, best effort); a
    /// 2026-07-28 listen given up (stdio: its `notifications/cancelled` queued
    /// before anything sent after `close` returns; HTTP: its stream closed).
    pub async fn close(mut self) {
        self.closed = true;
        self.end_here();
        self.feed.given_up().await;
        if self.feed.listen.is_none() {
            subscriptions::release(&self.link, &self.feed).await;
        }
    }

    /// Ends it and takes it out of the routing (its URIs stay counted until
    /// released).
    fn end_here(&self) {
        let closed = crate::Error::closed("the subscription was closed");
        self.link
            .protocol
            .feeds
            .remove(&self.feed, SubscriptionEnd::Abrupt(closed));
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        self.end_here();
        if self.feed.listen.is_none() {
            subscriptions::spawn_release(&self.link, self.feed.clone());
        }
    }
}
