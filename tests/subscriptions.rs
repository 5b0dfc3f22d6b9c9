//! Subscriptions and change events (issue 32; beyond-tools.md §1.6-§1.7,
//! §0.4): legacy list changes and `resources/subscribe`, 2026-07-28
//! `subscriptions/listen`, through the same `Client::subscribe` over stdio
//! and HTTP. The scripted server's `methods` entries write the notifications
//! (`before` lines) when the test triggers them with a `resources/list`.

mod support;

use serde_json::{Value, json};
use smthrs_mcp::events::{Interest, ServerEvent, SubscriptionEnd};
use smthrs_mcp::session::Subscription;
use smthrs_mcp::{Client, Era, ErrorKind, Limits};

use support::eras::*;
use support::{eventually, guard};

const ERAS: [Era; 2] = [Era::Legacy, Era::Modern];
const TAG: &str = "io.modelcontextprotocol/subscriptionId";

/// Connects to a scripted server in `era` with `capabilities` and `methods`.
async fn open(via: Via, era: Era, capabilities: Value, methods: Value, limits: Limits) -> Attempt {
    let scenario = json!({"capabilities": capabilities, "methods": methods});
    connect_in_era(via, era, Client::builder("subs").limits(limits), scenario).await
}

/// Declares every list's changes and resource subscriptions.
fn declared() -> Value {
    json!({
        "tools": {"listChanged": true},
        "prompts": {"listChanged": true},
        "resources": {"listChanged": true, "subscribe": true},
    })
}

/// A notification line: tagged with the last listen's id in 2026-07-28.
fn note(era: Era, method: &str, params: Value) -> Value {
    let mut params = params;
    if era == Era::Modern {
        params["_meta"] = json!({ TAG: "$LISTEN" });
    }
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// The `subscriptions/listen` entry: acknowledge `honoured`, stay open.
fn listen_acking(honoured: Value) -> Value {
    json!({"no_reply": true, "before": [{
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {"_meta": { TAG: "$ID" }, "notifications": honoured},
    }]})
}

/// A `resources/list` answer written after `lines`: the trigger.
fn trigger(lines: Vec<Value>) -> Value {
    json!({"before": lines, "result": {"resources": []}})
}

/// Waits until the server received `notifications/cancelled` for the first
/// listen it was sent (over HTTP the bridge writes it when the stream closes).
async fn first_listen_cancelled(a: &Attempt, what: &str) {
    let listen_id = a.received("subscriptions/listen")[0]["id"].clone();
    eventually(what, || {
        a.received("notifications/cancelled")
            .iter()
            .any(|c| c["params"]["requestId"] == listen_id)
    })
    .await;
}

/// The error a subscribe that must fail fails with.
async fn refused(client: &Client, interest: Interest) -> smthrs_mcp::Error {
    guard("subscribe", client.subscribe(interest))
        .await
        .expect_err("the subscribe must fail")
}

async fn next(sub: &mut Subscription) -> Option<ServerEvent> {
    guard("the next event", sub.next()).await
}

fn updated(uri: &str) -> ServerEvent {
    ServerEvent::ResourceUpdated { uri: uri.into() }
}

async fn changes_reach_the_host_as_events(via: Via) {
    for era in ERAS {
        let lines = vec![
            note(era, "notifications/tools/list_changed", json!({})),
            note(era, "notifications/tools/list_changed", json!({})),
            // Asked for, but not honoured (legacy: not declared; modern: not acked).
            note(era, "notifications/prompts/list_changed", json!({})),
            note(
                era,
                "notifications/resources/updated",
                json!({"uri": "file:///p"}),
            ),
            note(
                era,
                "notifications/resources/updated",
                json!({"uri": "file:///p/sub"}),
            ),
            // Another resource, and one whose name only starts the same.
            note(
                era,
                "notifications/resources/updated",
                json!({"uri": "file:///q"}),
            ),
            note(
                era,
                "notifications/resources/updated",
                json!({"uri": "file:///px"}),
            ),
            note(era, "notifications/resources/list_changed", json!({})),
            // Last, a rule broken (a bidi control): its report says every
            // line before it was routed.
            note(
                era,
                "notifications/resources/updated",
                json!({"uri": "file:///p\u{202e}"}),
            ),
        ];
        let methods = json!({
            "subscriptions/listen": [listen_acking(json!({
                "toolsListChanged": true, "resourcesListChanged": true,
                "resourceSubscriptions": ["file:///p"],
            }))],
            "resources/subscribe": [{"result": {}}],
            "resources/unsubscribe": [{"result": {}}],
            "resources/list": [trigger(lines)],
        });
        let mut capabilities = declared();
        if era == Era::Legacy {
            capabilities["prompts"] = json!({});
        }
        let a = open(via, era, capabilities, methods, Limits::default()).await;
        let client = a.client();
        let interest = Interest::every_list().resource("file:///p");
        let mut sub = guard("subscribe", client.subscribe(interest))
            .await
            .unwrap();
        let honoured = sub.honoured().clone();
        assert!(
            honoured.tools_list_changed && honoured.resources_list_changed,
            "{era:?}"
        );
        assert!(!honoured.prompts_list_changed, "{era:?}");
        assert_eq!(honoured.resources, ["file:///p"], "{era:?}");
        match era {
            Era::Legacy => {
                let subscribed = a.received("resources/subscribe");
                assert_eq!(subscribed.len(), 1);
                assert_eq!(subscribed[0]["params"]["uri"], "file:///p");
                assert!(a.received("subscriptions/listen").is_empty());
            }
            _ => {
                let listens = a.received("subscriptions/listen");
                assert_eq!(listens.len(), 1);
                assert_eq!(
                    listens[0]["params"]["notifications"],
                    json!({"toolsListChanged": true, "promptsListChanged": true,
                           "resourcesListChanged": true, "resourceSubscriptions": ["file:///p"]})
                );
                assert!(a.received("resources/subscribe").is_empty());
            }
        }
        guard("trigger", client.list_resources()).await.unwrap();
        // Every line routed (on one stream) before the host takes anything.
        eventually("the last line routed", || {
            a.events
                .named("notification-dropped")
                .iter()
                .any(|e| e.reason == "breaks a rule")
        })
        .await;
        // The repeated tool-list change waited with the first: coalesced.
        assert_eq!(
            next(&mut sub).await,
            Some(ServerEvent::ToolsListChanged),
            "{era:?}"
        );
        assert_eq!(next(&mut sub).await, Some(updated("file:///p")), "{era:?}");
        assert_eq!(
            next(&mut sub).await,
            Some(updated("file:///p/sub")),
            "{era:?}"
        );
        assert_eq!(
            next(&mut sub).await,
            Some(ServerEvent::ResourcesListChanged),
            "{era:?}"
        );
        let dropped = a.events.named("notification-dropped");
        let reasons: Vec<_> = dropped
            .iter()
            .map(|e| (e.detail.as_str(), e.reason))
            .collect();
        assert!(
            reasons.contains(&("notifications/prompts/list_changed", "not subscribed to")),
            "{era:?}: {reasons:?}"
        );
        // Drops are reported once per reason per second: the two updates of
        // resources not subscribed to (q, px) share the prompts' report, and
        // the exact sequence above shows they were never delivered.
        assert_eq!(reasons.len(), 2, "{era:?}: {reasons:?}");
        // Closing tells the server.
        guard("close", sub.close()).await;
        match era {
            Era::Legacy => {
                let gone = a.received("resources/unsubscribe");
                assert_eq!(gone.len(), 1);
                assert_eq!(gone[0]["params"]["uri"], "file:///p");
            }
            // Over stdio: checked below, by order.
            _ if via == Via::Stdio => {}
            _ => {
                first_listen_cancelled(&a, "the listen cancelled").await;
            }
        }
        // The session goes on. Over stdio the listen's cancellation went out
        // before anything sent after `close` returned.
        guard("after", client.list_resources()).await.unwrap();
        if era == Era::Modern && via == Via::Stdio {
            let lines = a.lines();
            let listen_id = &a.received("subscriptions/listen")[0]["id"];
            let cancelled = lines
                .iter()
                .position(|l| {
                    l["method"] == "notifications/cancelled"
                        && l["params"]["requestId"] == *listen_id
                })
                .expect("the listen's cancellation was sent");
            let after = lines
                .iter()
                .rposition(|l| l["method"] == "resources/list")
                .expect("the request after close");
            assert!(cancelled < after, "{cancelled} {after}");
        }
        a.close().await;
    }
}

/// Whether an end is the one expected.
type EndCheck = fn(&SubscriptionEnd) -> bool;

async fn a_listen_ends_gracefully_by_cancel_or_by_a_bad_result(via: Via) {
    let end_result = |meta_id: &str, kind: &str| {
        json!({"jsonrpc": "2.0", "id": "$LISTEN",
               "result": {"resultType": kind, "_meta": { TAG: meta_id }}})
    };
    let cases: [(Value, EndCheck); 6] = [
        (end_result("$LISTEN", "complete"), |e| {
            matches!(e, SubscriptionEnd::Graceful)
        }),
        // A server from before the post-release edit answers `{}`.
        (
            json!({"jsonrpc": "2.0", "id": "$LISTEN", "result": {}}),
            |e| matches!(e, SubscriptionEnd::Graceful),
        ),
        (
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": "$LISTEN"}}),
            |e| matches!(e, SubscriptionEnd::Cancelled),
        ),
        (
            end_result("another", "complete"),
            |e| matches!(e, SubscriptionEnd::Abrupt(err) if err.kind() == ErrorKind::InvalidResponse),
        ),
        (
            end_result("$LISTEN", "input_required"),
            |e| matches!(e, SubscriptionEnd::Abrupt(err) if err.kind() == ErrorKind::InvalidResponse),
        ),
        (
            json!({"jsonrpc": "2.0", "id": "$LISTEN",
                   "error": {"code": -32603, "message": "server text"}}),
            |e| matches!(e, SubscriptionEnd::Abrupt(err) if err.kind() == ErrorKind::RemoteError),
        ),
    ];
    for (ending, expected) in cases {
        let methods = json!({
            "subscriptions/listen": [listen_acking(json!({"toolsListChanged": true}))],
            "resources/list": [trigger(vec![
                note(Era::Modern, "notifications/tools/list_changed", json!({})),
                ending.clone(),
            ])],
        });
        let a = open(via, Era::Modern, declared(), methods, Limits::default()).await;
        let client = a.client();
        let mut sub = guard("subscribe", client.subscribe(Interest::new().tools_list()))
            .await
            .unwrap();
        guard("trigger", client.list_resources()).await.unwrap();
        // What came before the end is still delivered.
        assert_eq!(
            next(&mut sub).await,
            Some(ServerEvent::ToolsListChanged),
            "{ending}"
        );
        assert_eq!(next(&mut sub).await, None, "{ending}");
        let end = sub.end().expect("ended");
        assert!(expected(&end), "{ending}: {end:?}");
        if let SubscriptionEnd::Abrupt(error) = &end {
            assert!(!error.to_string().contains("server text"), "{error}");
        }
        // The session goes on.
        guard("after", client.list_resources()).await.unwrap();
        a.close().await;
    }
}

async fn an_acknowledgement_must_be_a_timely_subset(via: Via) {
    // More than was asked.
    let methods = json!({
        "subscriptions/listen": [listen_acking(json!({"toolsListChanged": true,
                                                     "promptsListChanged": true}))],
    });
    let a = open(via, Era::Modern, declared(), methods, Limits::default()).await;
    let error = refused(a.client(), Interest::new().tools_list()).await;
    assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
    assert!(error.message().contains("more than was asked"), "{error}");
    // Nothing is left open: the listen was given up.
    first_listen_cancelled(&a, "the listen cancelled").await;
    a.close().await;

    // No acknowledgement at all.
    let methods = json!({"subscriptions/listen": [{"no_reply": true}]});
    let mut limits = Limits::default();
    limits.handshake_timeout_ms = 1500;
    let a = open(via, Era::Modern, declared(), methods, limits).await;
    let error = refused(a.client(), Interest::new().tools_list()).await;
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    assert!(
        error.message().contains("handshakeTimeoutMs is 1500"),
        "{error}"
    );
    a.close().await;

    // An answer before any acknowledgement (here: method not found).
    let a = open(via, Era::Modern, declared(), json!({}), Limits::default()).await;
    let error = refused(a.client(), Interest::new().tools_list()).await;
    assert_eq!(error.kind(), ErrorKind::RemoteError, "{error}");
    a.close().await;
}

async fn hostile_listen_messages_are_dropped_and_reported(via: Via) {
    let tagged = |tag: Value, method: &str| json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": { TAG: tag }}});
    let methods = json!({
        "subscriptions/listen": [{"no_reply": true, "before": [
            // Before the acknowledgement.
            tagged(json!("$ID"), "notifications/tools/list_changed"),
            {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
             "params": {"_meta": { TAG: "$ID" }, "notifications": {"toolsListChanged": true}}},
        ]}],
        "resources/list": [trigger(vec![
            // Untagged, and tagged with a string (our id is a number).
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            tagged(json!("1"), "notifications/tools/list_changed"),
            // A second acknowledgement, and an update with a bidi control.
            tagged(json!("$LISTEN"), "notifications/subscriptions/acknowledged"),
            json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                   "params": {"_meta": { TAG: "$LISTEN" }, "uri": "file:///a\u{202e}"}}),
            // The one that counts.
            tagged(json!("$LISTEN"), "notifications/resources/list_changed"),
        ])],
    });
    let mut capabilities = declared();
    capabilities["resources"] = json!({"listChanged": true});
    let a = open(via, Era::Modern, capabilities, methods, Limits::default()).await;
    let client = a.client();
    let interest = Interest::new().tools_list().resources_list();
    let mut sub = guard("subscribe", client.subscribe(interest))
        .await
        .unwrap();
    assert_eq!(sub.honoured(), &Interest::new().tools_list());
    guard("trigger", client.list_resources()).await.unwrap();
    // Only the honoured resource-list change would count, and it is not
    // honoured either: nothing is delivered. Close to see the end.
    let reasons = || -> Vec<&'static str> {
        a.events
            .named("notification-dropped")
            .iter()
            .map(|e| e.reason)
            .collect()
    };
    eventually("six drops reported", || reasons().len() >= 6).await;
    let mut got = reasons();
    got.sort_unstable();
    let mut want = vec![
        "came before the acknowledgement",
        "carries no subscription id",
        "names no open listen",
        "a second acknowledgement",
        "breaks a rule",
        "not subscribed to",
    ];
    want.sort_unstable();
    assert_eq!(got, want);
    client.close().await;
    assert_eq!(next(&mut sub).await, None);
    assert!(
        matches!(sub.end(), Some(SubscriptionEnd::Abrupt(e)) if e.kind() == ErrorKind::ConnectionClosed)
    );
    a.close().await;
}

async fn bounds_are_kept_locally_and_by_the_queue(via: Via) {
    for era in ERAS {
        let methods = json!({
            "subscriptions/listen": [
                listen_acking(json!({
                    "resourceSubscriptions": ["file:///a", "file:///b", "file:///c"],
                })),
                listen_acking(json!({"toolsListChanged": true})),
            ],
            "resources/subscribe": [{"result": {}}],
            "resources/list": [trigger(vec![
                note(era, "notifications/resources/updated", json!({"uri": "file:///a"})),
                note(era, "notifications/resources/updated", json!({"uri": "file:///b"})),
                note(era, "notifications/resources/updated", json!({"uri": "file:///c"})),
                note(era, "notifications/resources/updated", json!({"uri": "file:///z"})),
            ])],
        });
        let mut limits = Limits::default();
        limits.max_subscriptions = 1;
        limits.max_resource_subscriptions = 3;
        limits.max_pending_events = 2;
        let a = open(via, era, declared(), methods, limits).await;
        let client = a.client();
        // Past maxResourceSubscriptions: refused, nothing sent.
        let four = Interest::new()
            .resource("file:///a")
            .resource("file:///b")
            .resource("file:///c")
            .resource("file:///d");
        let error = refused(client, four).await;
        assert_eq!(error.kind(), ErrorKind::InvalidConfig, "{error}");
        assert!(
            error
                .message()
                .contains("4 resources; maxResourceSubscriptions is 3"),
            "{error}"
        );
        let interest = Interest::new()
            .resource("file:///a")
            .resource("file:///b")
            .resource("file:///c");
        let mut sub = guard("subscribe", client.subscribe(interest))
            .await
            .unwrap();
        // Past maxSubscriptions: refused, nothing sent.
        let before = a.lines().len();
        let error = refused(client, Interest::new().tools_list()).await;
        assert_eq!(error.kind(), ErrorKind::InvalidConfig, "{error}");
        assert!(
            error
                .message()
                .contains("1 subscriptions open; maxSubscriptions is 1"),
            "{error}"
        );
        assert_eq!(a.lines().len(), before, "{era:?}");
        // Three distinct events for a queue of two: the subscription lags.
        guard("trigger", client.list_resources()).await.unwrap();
        match era {
            // The last line is not subscribed to: its drop report says the
            // burst was routed.
            Era::Legacy => {
                eventually("the burst routed", || {
                    !a.events.named("notification-dropped").is_empty()
                })
                .await
            }
            // A lagging listen is given up (what follows it is never read).
            _ => first_listen_cancelled(&a, "the lagging listen cancelled").await,
        }
        assert_eq!(next(&mut sub).await, Some(updated("file:///a")), "{era:?}");
        assert_eq!(next(&mut sub).await, Some(updated("file:///b")), "{era:?}");
        assert_eq!(next(&mut sub).await, None, "{era:?}");
        assert!(
            matches!(sub.end(), Some(SubscriptionEnd::Lagged)),
            "{era:?}"
        );
        drop(sub);
        // Once it is gone, another may open.
        let again = guard("subscribe", client.subscribe(Interest::new().tools_list())).await;
        assert!(again.is_ok(), "{era:?}: {again:?}");
        a.close().await;
    }
}

async fn notifications_past_the_rate_are_dropped(via: Via) {
    for era in ERAS {
        let burst: Vec<Value> = (0..5)
            .map(|i| {
                note(
                    era,
                    "notifications/resources/updated",
                    json!({"uri": format!("file:///r/{i}")}),
                )
            })
            .collect();
        let methods = json!({
            "subscriptions/listen": [listen_acking(json!({"resourceSubscriptions": ["file:///r"]}))],
            "resources/subscribe": [{"result": {}}],
            "resources/list": [trigger(burst)],
        });
        let mut limits = Limits::default();
        limits.max_notifications_per_second = 2;
        let a = open(via, era, declared(), methods, limits).await;
        let client = a.client();
        let mut sub = guard(
            "subscribe",
            client.subscribe(Interest::new().resource("file:///r")),
        )
        .await
        .unwrap();
        guard("trigger", client.list_resources()).await.unwrap();
        assert_eq!(
            next(&mut sub).await,
            Some(updated("file:///r/0")),
            "{era:?}"
        );
        assert_eq!(
            next(&mut sub).await,
            Some(updated("file:///r/1")),
            "{era:?}"
        );
        eventually("the rate reported", || {
            a.events
                .named("notification-dropped")
                .iter()
                .any(|e| e.reason == "past maxNotificationsPerSecond")
        })
        .await;
        client.close().await;
        assert_eq!(next(&mut sub).await, None, "{era:?}");
        // Every line was routed before the session ended: three dropped past
        // the rate, reported once (at most once per reason per second).
        assert_eq!(a.events.named("notification-dropped").len(), 1, "{era:?}");
        a.close().await;
    }
}

async fn nothing_undeclared_is_asked(via: Via) {
    for era in ERAS {
        let capabilities = json!({"tools": {}, "resources": {}});
        let a = open(via, era, capabilities, json!({}), Limits::default()).await;
        let client = a.client();
        let interest = Interest::every_list().resource("file:///a");
        let error = refused(client, interest).await;
        assert_eq!(
            error.kind(),
            ErrorKind::MissingCapability,
            "{era:?}: {error}"
        );
        assert!(error.message().contains("tools.listChanged"), "{error}");
        assert!(a.received("subscriptions/listen").is_empty());
        assert!(a.received("resources/subscribe").is_empty());
        // A caller's bad URI: nothing sent either.
        let error = refused(client, Interest::new().resource("no scheme")).await;
        assert_eq!(error.kind(), ErrorKind::ProtocolError, "{error}");
        a.close().await;
    }
}

async fn a_failed_subscribe_leaves_nothing_subscribed(via: Via) {
    let methods = json!({
        "resources/subscribe": [{"result": {}}, {"error": {"code": -32603, "message": "no"}}],
        "resources/unsubscribe": [{"result": {}}],
    });
    let a = open(via, Era::Legacy, declared(), methods, Limits::default()).await;
    let interest = Interest::new().resource("file:///a").resource("file:///b");
    let error = refused(a.client(), interest).await;
    assert_eq!(error.kind(), ErrorKind::RemoteError, "{error}");
    // Undone from a task of its own: the caller had its error at once.
    eventually("the rollback", || {
        !a.received("resources/unsubscribe").is_empty()
    })
    .await;
    let gone = a.received("resources/unsubscribe");
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0]["params"]["uri"], "file:///a");
    a.close().await;
}

async fn a_prompt_list_change_drops_the_held_listing(via: Via) {
    let methods = json!({
        "prompts/list": [{"result": {"prompts": [{"name": "a"}]}}],
        "prompts/get": [{"result": {"messages": []}}],
        "resources/list": [trigger(vec![
            note(Era::Legacy, "notifications/prompts/list_changed", json!({})),
        ])],
    });
    let a = open(via, Era::Legacy, declared(), methods, Limits::default()).await;
    let client = a.client();
    guard("list", client.list_prompts()).await.unwrap();
    // Held: a name the listing lacks is refused before anything is sent.
    let error = guard("get", client.get_prompt("b", Default::default()))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ProtocolError, "{error}");
    assert!(a.received("prompts/get").is_empty());
    // The list changed (delivered before the trigger's reply, on its stream):
    // the listing no longer says what the server accepts, so the server decides.
    guard("trigger", client.list_resources()).await.unwrap();
    guard("get", client.get_prompt("b", Default::default()))
        .await
        .unwrap();
    assert_eq!(a.received("prompts/get").len(), 1);
    a.close().await;
}

async fn assumed_capabilities_gate_like_declared_ones(via: Via) {
    for era in ERAS {
        let scenario = json!({
            "capabilities": {"tools": {"listChanged": false}, "prompts": {}},
            "methods": {
                "subscriptions/listen": [listen_acking(json!({"toolsListChanged": true}))],
            },
        });
        let builder = Client::builder("subs")
            .assume_capabilities(json!({"tools": {"listChanged": true}, "logging": {}}));
        let a = connect_in_era(via, era, builder, scenario).await;
        let client = a.client();
        // Merged member by member: declared members kept, assumed ones added.
        assert_eq!(
            client.capabilities(),
            &json!({"tools": {"listChanged": true}, "prompts": {}, "logging": {}}),
            "{era:?}"
        );
        let sub = guard("subscribe", client.subscribe(Interest::new().tools_list()))
            .await
            .unwrap();
        assert_eq!(sub.honoured(), &Interest::new().tools_list(), "{era:?}");
        // What was neither declared nor assumed is still refused.
        let error = refused(client, Interest::new().prompts_list()).await;
        assert_eq!(error.kind(), ErrorKind::MissingCapability, "{error}");
        a.close().await;
    }
}

async fn the_session_wide_resource_cap_counts_each_uri_once(via: Via) {
    let methods = json!({
        "resources/subscribe": [{"result": {}}],
        "resources/unsubscribe": [{"result": {}}],
    });
    let mut limits = Limits::default();
    limits.max_resource_subscriptions = 2;
    let a = open(via, Era::Legacy, declared(), methods, limits).await;
    let client = a.client();
    let ab = Interest::new().resource("file:///a").resource("file:///b");
    let first = guard("subscribe", client.subscribe(ab)).await.unwrap();
    // `a` is counted once for both subscriptions; `c` would be the third URI.
    let ac = Interest::new().resource("file:///a").resource("file:///c");
    let error = refused(client, ac).await;
    assert_eq!(error.kind(), ErrorKind::InvalidConfig, "{error}");
    assert!(
        error
            .message()
            .contains("would have 3 resources subscribed; maxResourceSubscriptions is 2"),
        "{error}"
    );
    // The refused call counted nothing: closing the first unsubscribes both.
    guard("close", first.close()).await;
    let gone: Vec<_> = a
        .received("resources/unsubscribe")
        .iter()
        .map(|u| u["params"]["uri"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(gone, ["file:///a", "file:///b"]);
    // Both released: `a` and `c` fit now, and each is subscribed again.
    let ac = Interest::new().resource("file:///a").resource("file:///c");
    let _second = guard("subscribe", client.subscribe(ac)).await.unwrap();
    assert_eq!(a.received("resources/subscribe").len(), 4);
    a.close().await;
}

async fn an_answer_before_the_acknowledgement_fails_the_open(via: Via) {
    let methods = json!({"subscriptions/listen": [{"result": {"resultType": "complete"}}]});
    let a = open(via, Era::Modern, declared(), methods, Limits::default()).await;
    let error = refused(a.client(), Interest::new().tools_list()).await;
    assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
    assert!(
        error.message().contains("before acknowledging it"),
        "{error}"
    );
    a.close().await;
}

async fn a_subscribe_given_up_holds_nothing(via: Via) {
    for era in ERAS {
        // The first open never completes (no acknowledgement, no answer to
        // resources/subscribe); the second does.
        let methods = json!({
            "subscriptions/listen": [{"no_reply": true}, listen_acking(json!({"toolsListChanged": true}))],
            "resources/subscribe": [{"no_reply": true}, {"result": {}}],
        });
        let mut limits = Limits::default();
        limits.max_subscriptions = 1;
        let a = open(via, era, declared(), methods, limits).await;
        let client = a.client();
        let interest = match era {
            Era::Legacy => Interest::new().resource("file:///a"),
            _ => Interest::new().tools_list(),
        };
        let given_up = tokio::time::timeout(
            std::time::Duration::from_millis(300),
            client.subscribe(interest.clone()),
        )
        .await;
        assert!(given_up.is_err(), "{era:?}: the first open completed");
        // Its slot is free (maxSubscriptions is 1), and a legacy URI it had
        // counted is subscribed again.
        let sub = guard("subscribe", client.subscribe(interest)).await;
        assert!(sub.is_ok(), "{era:?}: {sub:?}");
        match era {
            Era::Legacy => assert_eq!(a.received("resources/subscribe").len(), 2),
            _ => {
                first_listen_cancelled(&a, "the given-up listen cancelled").await;
            }
        }
        a.close().await;
    }
}

both_transports!(subscriptions:
    changes_reach_the_host_as_events,
    a_listen_ends_gracefully_by_cancel_or_by_a_bad_result,
    an_acknowledgement_must_be_a_timely_subset,
    hostile_listen_messages_are_dropped_and_reported,
    bounds_are_kept_locally_and_by_the_queue,
    notifications_past_the_rate_are_dropped,
    nothing_undeclared_is_asked,
    a_failed_subscribe_leaves_nothing_subscribed,
    a_prompt_list_change_drops_the_held_listing,
    assumed_capabilities_gate_like_declared_ones,
    the_session_wide_resource_cap_counts_each_uri_once,
    an_answer_before_the_acknowledgement_fails_the_open,
    a_subscribe_given_up_holds_nothing,
);
