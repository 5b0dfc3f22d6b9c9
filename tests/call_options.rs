//! Per-call options (issue 33): a call's own timeout, a cancellation token and
//! the host's `_meta`, in both eras over stdio and HTTP; the rules refused
//! before anything is sent.

mod support;
#[macro_use]
#[path = "support/eras.rs"]
mod eras;

use std::time::Duration;

use serde_json::{Map, Value, json};
use smthrs_mcp::{CallOptions, CancellationToken, Client, Era, ErrorKind, Limits};

use eras::*;

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
        let echoed = guard(
            "the next call",
            client.call_tool("echo", args(json!({"text": "still here"}))),
        )
        .await
        .expect("the session stays open");
        assert_eq!(text_of(&echoed), "still here");
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
        let echoed = guard(
            "the next call",
            client.call_tool("echo", args(json!({"text": "on"}))),
        )
        .await
        .expect("the session stays open");
        assert_eq!(text_of(&echoed), "on");
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

both_transports!(options:
    a_call_timeout_replaces_the_session_timeout,
    a_cancelled_token_ends_the_call,
    the_hosts_meta_reaches_the_server,
    broken_options_are_refused_before_sending,
);
