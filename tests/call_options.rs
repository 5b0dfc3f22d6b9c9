//! Per-call options (issue 33): a call's own timeout, a cancellation token,
//! the host's `_meta` and progress (its token, the rules a notification must
//! keep, the timeout it may restart), in both eras over stdio and HTTP; the
//! rules refused before anything is sent.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use smthrs_mcp::{
    CallEvent, CallOptions, CancellationToken, Client, Era, ErrorKind, Limits, Progress, TaskMode,
};

use support::eras::*;
use support::text_of;
use support::{eventually, guard};

const ERAS: [Era; 2] = [Era::Legacy, Era::Modern];

async fn open(via: Via, era: Era) -> Attempt {
    let mut limits = Limits::default();
    limits.request_timeout_ms = 20_000;
    connect_in_era(via, era, Client::builder("opts").limits(limits), json!({})).await
}

fn args(pairs: Value) -> Map<String, Value> {
    pairs.as_object().cloned().expect("an object")
}

/// Waits until the server received `notifications/cancelled` for the last
/// `tools/call` (over HTTP the bridge writes it when the exchange is cut).
async fn last_call_cancelled(a: &Attempt, what: &str) {
    let calls = a.received("tools/call");
    let id = calls.last().expect("a tools/call was sent")["id"].clone();
    eventually(what, || {
        a.received("notifications/cancelled")
            .iter()
            .any(|c| c["params"]["requestId"] == id)
    })
    .await;
}

/// The session still answers: an `echo` of `text` comes back.
async fn still_open(client: &Client, text: &str) {
    let echoed = guard(
        "the next call",
        client.call_tool("echo", args(json!({ "text": text }))),
    )
    .await
    .expect("the session stays open");
    assert_eq!(text_of(&echoed), text);
}

/// A call's own timeout replaces `requestTimeoutMs`, is named in the error,
/// tells the server, and leaves the session open.
async fn a_call_timeout_replaces_the_session_timeout(via: Via) {
    for era in ERAS {
        let a = open(via, era).await;
        let client = a.client();
        let options = CallOptions::new().timeout(Duration::from_millis(300));
        let error = guard(
            "a slow call",
            client.call_tool_with("slow", args(json!({"ms": 10_000})), &options),
        )
        .await
        .expect_err("the call outlives its own timeout");
        assert_eq!(error.kind(), ErrorKind::Timeout, "{era:?}: {error:?}");
        assert!(error.message().contains("300 ms"), "{error}");
        last_call_cancelled(&a, "the timed-out call's cancellation").await;
        still_open(client, "still here").await;
        a.close().await;
    }
}

/// A cancelled token ends the call with `cancelled`, the server is told, and
/// the session goes on; a token cancelled before the call sends nothing.
async fn a_cancelled_token_ends_the_call(via: Via) {
    for era in ERAS {
        let a = open(via, era).await;
        let client = a.client();
        let token = CancellationToken::new();
        let options = CallOptions::new().cancel_on(token.clone());
        let call = client.call_tool_with("slow", args(json!({"ms": 10_000})), &options);
        // Cancel once the server has the call, so the cancellation is owed.
        let cancel = async {
            eventually("the call reaches the server", || {
                a.methods().iter().any(|m| m == "tools/call")
            })
            .await;
            token.cancel();
        };
        let (result, ()) = guard("a cancelled call", async { tokio::join!(call, cancel) }).await;
        let error = result.expect_err("the call is cancelled");
        assert_eq!(error.kind(), ErrorKind::Cancelled, "{era:?}: {error:?}");
        assert_eq!(error.kind().as_str(), "cancelled");
        last_call_cancelled(&a, "the cancelled call's notification").await;

        // Already cancelled: fails at once, and no tools/call is written.
        let before = a.received("tools/call").len();
        let error = guard(
            "a call with a cancelled token",
            client.call_tool_with("echo", args(json!({"text": "x"})), &options),
        )
        .await
        .expect_err("the token is cancelled");
        assert_eq!(error.kind(), ErrorKind::Cancelled);
        assert_eq!(a.received("tools/call").len(), before, "{era:?}");
        still_open(client, "on").await;
        a.close().await;
    }
}

/// The host's `_meta` members reach the server beside the client's own.
async fn the_hosts_meta_reaches_the_server(via: Via) {
    for era in ERAS {
        let a = open(via, era).await;
        let meta = args(json!({"com.example/trace": "t-1", "tenant": {"id": 7}}));
        let options = CallOptions::new().meta(meta);
        guard(
            "a call with _meta",
            a.client()
                .call_tool_with("echo", args(json!({"text": "m"})), &options),
        )
        .await
        .expect("the call succeeds");
        let call = a.received("tools/call").pop().expect("the call was sent");
        let sent = &call["params"]["_meta"];
        assert_eq!(sent["com.example/trace"], "t-1", "{era:?}: {call}");
        assert_eq!(sent["tenant"], json!({"id": 7}));
        if era == Era::Modern {
            assert_eq!(
                sent["io.modelcontextprotocol/protocolVersion"], "2026-07-28",
                "the session's own members stay: {call}"
            );
        }
        a.close().await;
    }
}

/// Options that break the rules fail before anything is written: a zero or
/// over-cap timeout, a reserved `_meta` key.
async fn broken_options_are_refused_before_sending(via: Via) {
    for era in ERAS {
        let a = open(via, era).await;
        let client = a.client();
        let before = a.received("tools/call").len();
        let cap = Duration::from_millis(client.limits().max_request_ms);
        let refused = [
            CallOptions::new().timeout(Duration::ZERO),
            CallOptions::new().timeout(cap + Duration::from_millis(1)),
            CallOptions::new().meta(args(json!({"progressToken": 1}))),
            CallOptions::new().meta(args(json!({"io.modelcontextprotocol/clientInfo": {}}))),
        ];
        for options in &refused {
            let error = guard(
                "a refused call",
                client.call_tool_with("echo", args(json!({"text": "x"})), options),
            )
            .await
            .expect_err("the options are refused");
            assert_eq!(error.kind(), ErrorKind::InvalidConfig, "{options:?}");
            assert!(
                error.message().contains("maxRequestMs") || error.message().contains("_meta key 0"),
                "{error}"
            );
        }
        // Deeper than the JSON depth bound, counted from `_meta`'s values.
        let mut deep = json!(0);
        for _ in 0..200 {
            deep = json!([deep]);
        }
        let options = CallOptions::new().meta(args(json!({"deep": deep})));
        let error = guard(
            "a too-deep _meta",
            client.call_tool_with("echo", args(json!({"text": "x"})), &options),
        )
        .await
        .expect_err("too deep");
        assert_eq!(error.kind(), ErrorKind::ProtocolError);
        assert_eq!(a.received("tools/call").len(), before, "nothing was sent");
        a.close().await;
    }
}

/// A legacy session has no Tasks (SEP-1686 is out of scope): `Require` is
/// `missing_capability` naming the revision, and nothing is sent; `Never`
/// and `Auto` call as usual, declaring nothing.
async fn a_legacy_session_cannot_require_a_task(via: Via) {
    let a = open(via, Era::Legacy).await;
    let client = a.client();
    let error = guard(
        "a call requiring a task",
        client.call_tool_with(
            "echo",
            args(json!({"text": "t"})),
            &CallOptions::new().task(TaskMode::Require),
        ),
    )
    .await
    .expect_err("no tasks in a legacy session");
    assert_eq!(error.kind(), ErrorKind::MissingCapability, "{error:?}");
    assert!(error.message().contains("legacy revision"), "{error}");
    assert!(a.received("tools/call").is_empty(), "nothing sent");
    for mode in [TaskMode::Never, TaskMode::Auto] {
        guard(
            "a plain call",
            client.call_tool_with(
                "echo",
                args(json!({"text": "t"})),
                &CallOptions::new().task(mode),
            ),
        )
        .await
        .expect("the call succeeds");
    }
    for call in a.received("tools/call") {
        assert!(call["params"].get("_meta").is_none(), "{call}");
    }
    a.close().await;
}

both_transports!(options:
    a_call_timeout_replaces_the_session_timeout,
    a_cancelled_token_ends_the_call,
    the_hosts_meta_reaches_the_server,
    broken_options_are_refused_before_sending,
    a_legacy_session_cannot_require_a_task,
);

// ---- Progress (beyond-tools.md §4.2) ----

/// What a call's observer received, in order.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Progress>>>);

impl Seen {
    /// Options whose observer records here.
    fn options(&self) -> CallOptions {
        let seen = self.0.clone();
        CallOptions::new().on_event(move |event| {
            if let CallEvent::Progress(progress) = event {
                seen.lock().unwrap().push(progress);
            }
        })
    }

    fn all(&self) -> Vec<Progress> {
        self.0.lock().unwrap().clone()
    }

    /// The `progress` values received.
    fn values(&self) -> Vec<f64> {
        self.all().iter().map(|p| p.progress).collect()
    }
}

/// A session on the scripted server with the `emit` tool listed.
async fn open_emit(via: Via, era: Era, limits: Limits) -> Attempt {
    let builder = Client::builder("progress").limits(limits);
    connect_in_era(via, era, builder, json!({"emit_tool": true})).await
}

fn progress_limits() -> Limits {
    support::limits(|limits| limits.request_timeout_ms = 20_000)
}

/// A `notifications/progress` line with these params (`"$PROGRESS_TOKEN"`
/// becomes the call's token).
fn progress_line(params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
}

/// Progress `n` of the call's own token, with `total` 10.
fn tick(n: u64) -> Value {
    progress_line(json!({"progressToken": "$PROGRESS_TOKEN", "progress": n, "total": 10}))
}

/// Calls `emit`: the server writes `lines`, `interval_ms` apart, then answers.
async fn emit(
    client: &Client,
    lines: Vec<Value>,
    interval_ms: u64,
    options: &CallOptions,
) -> smthrs_mcp::Result<smthrs_mcp::ToolResult> {
    let arguments = args(json!({"lines": lines, "interval_ms": interval_ms}));
    guard(
        "an emit call",
        client.call_tool_with("emit", arguments, options),
    )
    .await
}

/// The reasons of the progress notifications dropped so far.
fn dropped(a: &Attempt) -> Vec<&'static str> {
    a.events
        .named("notification-dropped")
        .into_iter()
        .filter(|e| e.detail == "notifications/progress")
        .map(|e| e.reason)
        .collect()
}

/// The progress token the last `tools/call` carried.
fn last_token(a: &Attempt) -> Value {
    let call = a
        .received("tools/call")
        .pop()
        .expect("a tools/call was sent");
    call["params"]["_meta"]["progressToken"].clone()
}

/// A call with an observer sends a number token (beside the host's `_meta`
/// and, in 2026-07-28, the session's own), a fresh one per call, and its
/// observer gets each progress notification, values as sent, in order, before
/// the call returns.
async fn progress_reaches_the_observer_in_order(via: Via) {
    for era in ERAS {
        let a = open_emit(via, era, progress_limits()).await;
        let client = a.client();
        let seen = Seen::default();
        let options = seen
            .options()
            .meta(args(json!({"com.example/trace": "t-2"})));
        let lines = vec![
            progress_line(
                json!({"progressToken": "$PROGRESS_TOKEN", "progress": 1, "total": 3, "message": "first step"}),
            ),
            progress_line(json!({"progressToken": "$PROGRESS_TOKEN", "progress": 2.5, "total": 3})),
            progress_line(
                json!({"progressToken": "$PROGRESS_TOKEN", "progress": 3, "total": null, "message": "done é"}),
            ),
        ];
        let result = emit(client, lines, 0, &options)
            .await
            .expect("the call succeeds");
        assert_eq!(text_of(&result), "emitted 3 lines");
        let got = seen.all();
        assert_eq!(seen.values(), [1.0, 2.5, 3.0], "{era:?}");
        assert_eq!(got[0].total, Some(3.0));
        assert_eq!(got[0].message.as_deref(), Some("first step"));
        assert_eq!((got[1].total, got[1].message.as_deref()), (Some(3.0), None));
        assert_eq!(
            (got[2].total, got[2].message.as_deref()),
            (None, Some("done é"))
        );
        assert!(dropped(&a).is_empty(), "{:?}", a.events.all());

        let call = a.received("tools/call").pop().expect("the call was sent");
        let meta = &call["params"]["_meta"];
        let token = meta["progressToken"].clone();
        assert!(token.is_u64(), "a number token: {call}");
        assert_eq!(meta["com.example/trace"], "t-2", "{call}");
        if era == Era::Modern {
            assert_eq!(
                meta["io.modelcontextprotocol/protocolVersion"],
                "2026-07-28"
            );
        }
        // The next call's token is another.
        emit(client, vec![tick(1)], 0, &seen.options())
            .await
            .expect("a second call");
        assert_ne!(last_token(&a), token, "{era:?}");
        assert_eq!(seen.values(), [1.0, 2.5, 3.0, 1.0]);
        a.close().await;
    }
}

/// 2026-07-28: every round of a multi-round-trip call carries the same token.
async fn every_round_carries_the_token(via: Via) {
    let scenario = json!({
        "tools": [{"name": "confirm", "inputSchema": {"type": "object"}}],
        "on_call": {"confirm": {"input_required": {"inputRequests": null}}},
    });
    let builder = Client::builder("progress").limits(progress_limits());
    let a = connect_in_era(via, Era::Modern, builder, scenario).await;
    let seen = Seen::default();
    guard(
        "a call over two rounds",
        a.client()
            .call_tool_with("confirm", Map::new(), &seen.options()),
    )
    .await
    .expect("the call completes");
    let rounds = a.received("tools/call");
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    let token = &rounds[0]["params"]["_meta"]["progressToken"];
    assert!(token.is_u64(), "{rounds:?}");
    assert_eq!(&rounds[1]["params"]["_meta"]["progressToken"], token);
    a.close().await;
}

/// Without an observer nothing changes on the wire: no token (legacy: no
/// `_meta` at all unless the host gives members). A call that only restarts its
/// timeout on progress sends one.
async fn no_token_without_an_observer(via: Via) {
    for era in ERAS {
        let a = open_emit(via, era, progress_limits()).await;
        let client = a.client();
        let a = &a;
        let echo = |options: CallOptions| async move {
            guard(
                "an echo call",
                client.call_tool_with("echo", args(json!({"text": "x"})), &options),
            )
            .await
            .expect("the call succeeds");
            a.received("tools/call").pop().expect("sent")
        };
        let plain = echo(CallOptions::new()).await;
        match era {
            Era::Legacy => assert!(plain["params"].get("_meta").is_none(), "{plain}"),
            _ => assert!(
                plain["params"]["_meta"].get("progressToken").is_none(),
                "{plain}"
            ),
        }
        let meta_only = echo(CallOptions::new().meta(args(json!({"tenant": 1})))).await;
        assert!(
            meta_only["params"]["_meta"].get("progressToken").is_none(),
            "{meta_only}"
        );
        assert_eq!(meta_only["params"]["_meta"]["tenant"], 1);
        let resetting = echo(CallOptions::new().reset_timeout_on_progress(true)).await;
        assert!(
            resetting["params"]["_meta"]["progressToken"].is_u64(),
            "{resetting}"
        );
        a.close().await;
    }
}

/// Every notification that breaks a rule is dropped and reported, never
/// fatal: an unknown token, the token as a string, a non-increasing
/// `progress`, values that are not numbers, a negative `total`, a message too
/// long or with control or format characters. The valid ones around them are
/// delivered. (JSON has no NaN or infinity; a number past `f64`'s range, such
/// as `1e400`, breaks the frame rule every message keeps and ends the session
/// with `protocol_error`, as it does in any frame.)
async fn progress_that_breaks_a_rule_is_dropped(via: Via) {
    for era in ERAS {
        let a = open_emit(via, era, progress_limits()).await;
        let seen = Seen::default();
        let with = |extra: Value| {
            let mut params = json!({"progressToken": "$PROGRESS_TOKEN", "progress": 5});
            for (key, value) in extra.as_object().expect("an object") {
                params[key] = value.clone();
            }
            progress_line(params)
        };
        let raw = |params: &str| {
            Value::String(format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{params}}}"#
            ))
        };
        let lines = vec![
            tick(1),
            with(json!({"progressToken": 987_654_321})),
            raw(r#"{"progressToken":"$PROGRESS_TOKEN","progress":5}"#),
            with(json!({"progressToken": null})),
            tick(1),
            tick(0),
            with(json!({"progress": "5"})),
            with(json!({"total": "NaN"})),
            with(json!({"total": -1})),
            with(json!({"total": [10]})),
            with(json!({"message": "x".repeat(4097)})),
            with(json!({"message": "red \u{1b}[31m"})),
            with(json!({"message": "pay\u{202E}lanigiro"})),
            with(json!({"message": 42})),
            json!({"jsonrpc": "2.0", "method": "notifications/progress"}),
            with(json!({"message": "é".repeat(2048)})),
        ];
        let result = emit(a.client(), lines, 0, &seen.options())
            .await
            .expect("the call succeeds: a dropped notification is never fatal");
        assert_eq!(text_of(&result), "emitted 16 lines");
        assert_eq!(seen.values(), [1.0, 5.0], "{era:?}");
        assert_eq!(
            seen.all()[1].message.as_deref(),
            Some("é".repeat(2048).as_str())
        );
        let reasons = dropped(&a);
        for reason in [
            "names no active progress token",
            "progress did not increase",
            "breaks a value rule",
            "breaks a message rule",
        ] {
            assert!(
                reasons.contains(&reason),
                "{era:?}: {reason} not in {reasons:?}"
            );
        }
        still_open(a.client(), "on").await;
        a.close().await;
    }
}

/// A call's token is retired when it returns: a later notification naming it
/// reaches no observer (the call's nor the next one's) and is reported.
async fn a_returned_calls_token_is_dropped(via: Via) {
    for era in ERAS {
        let a = open_emit(via, era, progress_limits()).await;
        let first = Seen::default();
        emit(a.client(), vec![tick(1)], 0, &first.options())
            .await
            .expect("the first call");
        let old = last_token(&a);
        let second = Seen::default();
        let stale = progress_line(json!({"progressToken": old, "progress": 2}));
        emit(a.client(), vec![stale, tick(3)], 0, &second.options())
            .await
            .expect("the second call");
        assert_eq!(first.values(), [1.0], "{era:?}");
        assert_eq!(second.values(), [3.0], "{era:?}");
        assert_eq!(dropped(&a), ["names no active progress token"], "{era:?}");
        a.close().await;
    }
}

/// At most `maxNotificationsPerSecond` progress notifications of one call are
/// delivered; the rest are dropped and reported.
async fn progress_past_the_rate_is_dropped(via: Via) {
    for era in ERAS {
        let mut limits = progress_limits();
        limits.max_notifications_per_second = 5;
        let a = open_emit(via, era, limits).await;
        let seen = Seen::default();
        let lines: Vec<Value> = (1..=40).map(tick).collect();
        emit(a.client(), lines, 0, &seen.options())
            .await
            .expect("the call succeeds");
        let got = seen.values();
        assert!(!got.is_empty() && got.len() <= 5, "{era:?}: {got:?}");
        assert!(got.windows(2).all(|w| w[0] < w[1]), "in order: {got:?}");
        assert!(
            dropped(&a).contains(&"past maxNotificationsPerSecond"),
            "{:?}",
            a.events.all()
        );
        a.close().await;
    }
}

/// `reset_timeout_on_progress`: progress arriving faster than the call's
/// timeout keeps a call alive for longer than that timeout; without the
/// option, or when the progress does not increase, the same call times out.
async fn progress_restarts_the_timeout_when_asked(via: Via) {
    for era in ERAS {
        let a = open_emit(via, era, progress_limits()).await;
        let client = a.client();
        let timeout = Duration::from_millis(1_000);
        // 2 s of progress, 100 ms apart.
        let lines: Vec<Value> = (1..=20).map(tick).collect();
        let seen = Seen::default();
        let resetting = seen
            .options()
            .timeout(timeout)
            .reset_timeout_on_progress(true);
        let result = emit(client, lines.clone(), 100, &resetting)
            .await
            .expect("progress kept the call alive");
        assert_eq!(text_of(&result), "emitted 20 lines", "{era:?}");
        assert_eq!(seen.values().len(), 20);

        // One accepted tick, then ticks that never increase: they restart nothing.
        let mut flat = vec![tick(5)];
        flat.extend((0..20).map(|_| tick(1)));
        let error = emit(client, flat, 100, &resetting)
            .await
            .expect_err("dropped progress restarts no timer");
        assert_eq!(error.kind(), ErrorKind::Timeout, "{era:?}: {error:?}");
        assert!(error.message().contains("after 1000 ms"), "{error}");

        let error = emit(client, lines, 100, &seen.options().timeout(timeout))
            .await
            .expect_err("without the option the timeout stands");
        assert_eq!(error.kind(), ErrorKind::Timeout, "{era:?}: {error:?}");
        assert!(error.message().contains("after 1000 ms"), "{error}");
        a.close().await;
    }
}

/// However progress restarts the timeout, `maxRequestMs` from the call's
/// start ends it, with a `timeout` naming that option; the session goes on.
async fn max_request_ms_ends_a_call_progress_keeps_alive(via: Via) {
    for era in ERAS {
        let mut limits = progress_limits();
        limits.max_request_ms = 1_500;
        let a = open_emit(via, era, limits).await;
        let seen = Seen::default();
        let options = seen
            .options()
            .timeout(Duration::from_millis(500))
            .reset_timeout_on_progress(true);
        // 5 s of progress, 50 ms apart.
        let lines: Vec<Value> = (1..=100).map(tick).collect();
        let error = emit(a.client(), lines, 50, &options)
            .await
            .expect_err("the cap ends the call");
        assert_eq!(error.kind(), ErrorKind::Timeout, "{era:?}: {error:?}");
        assert!(
            error.message().contains("maxRequestMs (1500 ms)"),
            "{error}"
        );
        assert!(!seen.values().is_empty());
        still_open(a.client(), "on").await;
        a.close().await;
    }
}

/// 2026-07-28 over HTTP, a token counts only on its own call's stream: the
/// bridge puts a call's progress on the oldest open request stream, here
/// another call's, and the client drops it. Over stdio, and in the legacy era
/// (where progress may come on any stream), it is delivered.
async fn progress_on_another_calls_stream(via: Via) {
    for era in ERAS {
        let a = open_emit(via, era, progress_limits()).await;
        let client = a.client();
        let slow = client.call_tool("slow", args(json!({"ms": 2_000})));
        let seen = Seen::default();
        let observed = async {
            eventually("the slow call reaches the server", || {
                a.methods().iter().any(|m| m == "tools/call")
            })
            .await;
            // The tick, then half a second before the reply: the tick, on
            // another stream, is routed before the call returns.
            let lines = vec![
                tick(1),
                json!({"jsonrpc": "2.0", "method": "notifications/other"}),
            ];
            emit(client, lines, 500, &seen.options()).await
        };
        let (slow, observed) = guard("two calls", async { tokio::join!(slow, observed) }).await;
        slow.expect("the slow call");
        observed.expect("the observed call");
        if via == Via::Http && era == Era::Modern {
            assert!(seen.values().is_empty(), "{:?}", seen.values());
            assert_eq!(dropped(&a), ["came on another request's stream"]);
        } else {
            assert_eq!(seen.values(), [1.0], "{via:?} {era:?}");
            assert!(dropped(&a).is_empty(), "{:?}", a.events.all());
        }
        a.close().await;
    }
}

both_transports!(progress:
    progress_reaches_the_observer_in_order,
    every_round_carries_the_token,
    no_token_without_an_observer,
    progress_that_breaks_a_rule_is_dropped,
    a_returned_calls_token_is_dropped,
    progress_past_the_rate_is_dropped,
    progress_restarts_the_timeout_when_asked,
    max_request_ms_ends_a_call_progress_keeps_alive,
    progress_on_another_calls_stream,
);
