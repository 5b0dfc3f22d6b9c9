//! What a server tells the host about change: its tool, prompt and resource
//! lists changed, or a resource it reads changed (beyond-tools.md §1.6, §1.7,
//! §0.4). Transport-free: the rules here are the same in both eras.
//!
//! - [`Interest`]: what the host asks to hear about, and (once the server
//!   answered) what the server agreed to send.
//! - [`ServerEvent`]: one change, as the host receives it. It carries no
//!   server-authored text but a resource URI that passed the URI rules.
//! - [`SubscriptionEnd`]: why a subscription stopped delivering.
//!
//! Events are notices, never applied: the tool catalog stays the frozen
//! snapshot taken at connect (a changed tool list is reported; the host
//! reconnects, and a pin decides), and a resource is read again only when the
//! host reads it. How they are opened, delivered and bounded is
//! [`Client::subscribe`](crate::Client::subscribe)'s documentation.

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::error::Error;
use crate::uri::check_uri;

/// The member naming a 2026-07-28 listen's id on each of its messages.
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// What a host asks to hear about ([`Client::subscribe`](crate::Client::subscribe)),
/// and what a subscription's server agreed to send
/// ([`Subscription::honoured`](crate::session::Subscription::honoured)).
///
/// ```
/// use smthrs_mcp::events::Interest;
/// let interest = Interest::new()
///     .tools_list()
///     .resource("file:///project/config.json");
/// assert!(interest.tools_list_changed);
/// assert_eq!(interest.resources, ["file:///project/config.json"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Interest {
    /// `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs (and their
    /// sub-resources: the URI followed by `/`, `?` or `#`), spelled as the
    /// server spells them.
    pub resources: Vec<String>,
}

impl Interest {
    /// Nothing yet.
    pub fn new() -> Interest {
        Interest::default()
    }

    /// Every list's changes (tools, prompts, resources); no resource updates.
    pub fn every_list() -> Interest {
        Interest::new().tools_list().prompts_list().resources_list()
    }

    /// Also the tool list's changes.
    #[must_use]
    pub fn tools_list(mut self) -> Interest {
        self.tools_list_changed = true;
        self
    }

    /// Also the prompt list's changes.
    #[must_use]
    pub fn prompts_list(mut self) -> Interest {
        self.prompts_list_changed = true;
        self
    }

    /// Also the resource list's changes.
    #[must_use]
    pub fn resources_list(mut self) -> Interest {
        self.resources_list_changed = true;
        self
    }

    /// Also updates of the resource at `uri` (a URI the server listed or
    /// linked; it is never fetched by its scheme).
    #[must_use]
    pub fn resource(mut self, uri: impl Into<String>) -> Interest {
        self.resources.push(uri.into());
        self
    }

    /// Nothing asked (or agreed).
    pub fn is_empty(&self) -> bool {
        !self.tools_list_changed
            && !self.prompts_list_changed
            && !self.resources_list_changed
            && self.resources.is_empty()
    }

    /// Everything in `self` is also in `other`.
    pub(crate) fn is_subset_of(&self, other: &Interest) -> bool {
        (!self.tools_list_changed || other.tools_list_changed)
            && (!self.prompts_list_changed || other.prompts_list_changed)
            && (!self.resources_list_changed || other.resources_list_changed)
            && self
                .resources
                .iter()
                .all(|uri| other.resources.contains(uri))
    }

    /// Whether `event` is one this interest covers: a list it names, or an
    /// update of a URI it names or of a sub-resource of one (§1.6, Q8: the
    /// URI followed by `/`, `?` or `#`; anything else is not ours).
    pub fn covers(&self, event: &ServerEvent) -> bool {
        match event {
            ServerEvent::ToolsListChanged => self.tools_list_changed,
            ServerEvent::PromptsListChanged => self.prompts_list_changed,
            ServerEvent::ResourcesListChanged => self.resources_list_changed,
            ServerEvent::ResourceUpdated { uri } => self.resources.iter().any(|wanted| {
                uri == wanted
                    || uri
                        .strip_prefix(wanted.as_str())
                        .is_some_and(|rest| rest.starts_with(['/', '?', '#']))
            }),
        }
    }

    /// Checks the host's URIs (`protocol_error`, nothing sent: the URI rules,
    /// under `maxUriBytes`) and drops repeats, keeping the first spelling's
    /// order.
    pub(crate) fn checked(mut self, max_uri_bytes: usize) -> crate::Result<Interest> {
        for (position, uri) in self.resources.iter().enumerate() {
            check_uri(uri, max_uri_bytes, "maxUriBytes").map_err(|rule| {
                Error::protocol(format!(
                    "resource {} to subscribe to breaks a rule: {rule}",
                    position + 1
                ))
            })?;
        }
        let mut seen = std::collections::HashSet::new();
        self.resources.retain(|uri| seen.insert(uri.clone()));
        Ok(self)
    }

    /// The 2026-07-28 `SubscriptionFilter` asking for this interest.
    pub(crate) fn to_filter(&self) -> Value {
        let mut filter = Map::new();
        for (name, wanted) in [
            ("toolsListChanged", self.tools_list_changed),
            ("promptsListChanged", self.prompts_list_changed),
            ("resourcesListChanged", self.resources_list_changed),
        ] {
            if wanted {
                filter.insert(name.into(), Value::Bool(true));
            }
        }
        if !self.resources.is_empty() {
            filter.insert(
                "resourceSubscriptions".into(),
                self.resources.iter().cloned().map(Value::String).collect(),
            );
        }
        Value::Object(filter)
    }

    /// Reads the filter a server acknowledged; the error is the rule broken
    /// (crate-authored). A member absent, `false` or `null` is not honoured.
    pub(crate) fn from_filter(filter: &Map<String, Value>) -> Result<Interest, String> {
        let flag = |name: &str| match filter.get(name) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(false),
            Some(Value::Bool(true)) => Ok(true),
            Some(_) => Err(format!("{name} is not a boolean")),
        };
        let resources = match filter.get("resourceSubscriptions") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(uri) => Ok(uri.clone()),
                    _ => Err("resourceSubscriptions holds a value that is not a string".to_owned()),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("resourceSubscriptions is not an array".to_owned()),
        };
        Ok(Interest {
            tools_list_changed: flag("toolsListChanged")?,
            prompts_list_changed: flag("promptsListChanged")?,
            resources_list_changed: flag("resourcesListChanged")?,
            resources,
        })
    }
}

/// One change a server reported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The server's tool list changed. The catalog this session froze at
    /// connect does not: reconnect to see the new list (a pin decides whether
    /// it is accepted).
    ToolsListChanged,
    /// The server's prompt list changed (the listing held for
    /// [`Client::get_prompt`](crate::Client::get_prompt)'s argument check is
    /// dropped; list again).
    PromptsListChanged,
    /// The server's resource list changed.
    ResourcesListChanged,
    /// The resource at `uri` (one subscribed to, or a sub-resource of one)
    /// changed; read it again to see how.
    ResourceUpdated {
        /// As the server spelled it (it passed the URI rules).
        uri: String,
    },
}

/// The notification methods of change events.
pub(crate) const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
pub(crate) const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
pub(crate) const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
pub(crate) const RESOURCES_UPDATED: &str = "notifications/resources/updated";

impl ServerEvent {
    /// Whether `method` is a change notification.
    pub(crate) fn is_change(method: &str) -> bool {
        matches!(
            method,
            TOOLS_LIST_CHANGED | PROMPTS_LIST_CHANGED | RESOURCES_LIST_CHANGED | RESOURCES_UPDATED
        )
    }

    /// The event a change notification carries; the error is the rule broken
    /// (crate-authored, never the URI). `None` when `method` is not one.
    pub(crate) fn from_notification(
        method: &str,
        params: Option<&Map<String, Value>>,
        max_uri_bytes: usize,
    ) -> Option<Result<ServerEvent, String>> {
        Some(Ok(match method {
            TOOLS_LIST_CHANGED => ServerEvent::ToolsListChanged,
            PROMPTS_LIST_CHANGED => ServerEvent::PromptsListChanged,
            RESOURCES_LIST_CHANGED => ServerEvent::ResourcesListChanged,
            RESOURCES_UPDATED => {
                let uri = match params.and_then(|p| p.get("uri")) {
                    Some(Value::String(uri)) => uri,
                    _ => return Some(Err("resources/updated has no string uri".to_owned())),
                };
                if let Err(rule) = check_uri(uri, max_uri_bytes, "maxUriBytes") {
                    return Some(Err(format!("resources/updated: {rule}")));
                }
                ServerEvent::ResourceUpdated { uri: uri.clone() }
            }
            _ => return None,
        }))
    }
}

/// Why a subscription stopped delivering events (after the ones already
/// delivered to it).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SubscriptionEnd {
    /// The server ended it by answering the listen (2026-07-28).
    Graceful,
    /// The server ended it with `notifications/cancelled` (2026-07-28).
    Cancelled,
    /// More than `maxPendingEvents` distinct events waited for the host: the
    /// subscription ended rather than grow (what changed since is unknown:
    /// list again, or subscribe again).
    Lagged,
    /// The session ended, the stream carrying it broke, the server's answer
    /// broke a rule, or (legacy HTTP) the server lost the session state the
    /// resource subscriptions lived in. The error says which.
    Abrupt(Error),
}

/// Admits at most `per_second` notifications in each one-second window
/// (`maxNotificationsPerSecond`); the rest are dropped and counted.
#[derive(Debug)]
pub(crate) struct RateWindow {
    per_second: u64,
    started: Option<Instant>,
    admitted: u64,
    /// Dropped since the window opened (reported once per window).
    pub(crate) dropped: u64,
}

impl RateWindow {
    pub(crate) fn new(per_second: u64) -> RateWindow {
        RateWindow {
            per_second,
            started: None,
            admitted: 0,
            dropped: 0,
        }
    }

    /// Whether one more notification is admitted at `now`.
    pub(crate) fn admit(&mut self, now: Instant) -> bool {
        let fresh = self
            .started
            .is_none_or(|started| now.duration_since(started) >= Duration::from_secs(1));
        if fresh {
            self.started = Some(now);
            self.admitted = 0;
            self.dropped = 0;
        }
        if self.admitted < self.per_second {
            self.admitted += 1;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

/// What [`EventQueue::offer`] did with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Offered {
    /// Queued for the host.
    Queued,
    /// The same event was already waiting: coalesced with it.
    Coalesced,
    /// The queue was full: the subscription ends as [`SubscriptionEnd::Lagged`].
    Lagged,
    /// The subscription had already ended: dropped.
    Ended,
}

/// The events waiting for the host, at most `capacity` distinct ones; an
/// event equal to one already waiting is coalesced with it (a storm of
/// `list_changed` is one refetch), and past the capacity the subscription ends
/// as lagged. Once ended, what is queued is still delivered, then the end.
#[derive(Debug)]
pub(crate) struct EventQueue {
    pending: VecDeque<ServerEvent>,
    capacity: usize,
    end: Option<SubscriptionEnd>,
}

impl EventQueue {
    pub(crate) fn new(capacity: usize) -> EventQueue {
        EventQueue {
            pending: VecDeque::new(),
            capacity,
            end: None,
        }
    }

    pub(crate) fn offer(&mut self, event: ServerEvent) -> Offered {
        if self.end.is_some() {
            return Offered::Ended;
        }
        if self.pending.contains(&event) {
            return Offered::Coalesced;
        }
        if self.pending.len() >= self.capacity {
            self.end = Some(SubscriptionEnd::Lagged);
            return Offered::Lagged;
        }
        self.pending.push_back(event);
        Offered::Queued
    }

    /// Ends the queue (the first end recorded stands).
    pub(crate) fn finish(&mut self, end: SubscriptionEnd) {
        if self.end.is_none() {
            self.end = Some(end);
        }
    }

    /// The next event; `Err` with the end once nothing is left after it;
    /// `Ok(None)` while nothing waits.
    pub(crate) fn take(&mut self) -> Result<Option<ServerEvent>, SubscriptionEnd> {
        match self.pending.pop_front() {
            Some(event) => Ok(Some(event)),
            None => match &self.end {
                Some(end) => Err(end.clone()),
                None => Ok(None),
            },
        }
    }

    pub(crate) fn end(&self) -> Option<&SubscriptionEnd> {
        self.end.as_ref()
    }
}

#[cfg(test)]
mod tests;
