//! Tasks (the 2026-07-28 extension `io.modelcontextprotocol/tasks`, SEP-2663):
//! a `tools/call` the server answers with a task, driven to its end, against
//! the scripted server as a child (stdio) and behind the hyper bridge (HTTP),
//! which checks `Mcp-Name: <taskId>` on every `tasks/*` POST. Each rule is one
//! way a server behaves or misbehaves: the scripted server answers `tools/call`
//! with a `CreateTaskResult` and each `tasks/get` with the next scripted answer
//! (`methods`), and records when each request arrived (`record_times`), so the
//! polling cadence is checked where it matters: at the server.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use smthrs_mcp::{
    CallEvent, CallOptions, CancellationToken, Client, ClientBuilder, Era, ErrorKind, Limits,
    TaskHandle, TaskMode, TaskPolicy, TaskStatus,
};

use support::eras::*;
use support::{AcceptEveryForm, TaskUpdates, args, eventually, guard, text_of};

const TASKS: &str = "io.modelcontextprotocol/tasks";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
/// The task id every rule's server makes (printable ASCII: `Mcp-Name` carries
/// it as is).
const ID: &str = "task-7f3a";
/// Received-time slack: a gap measured at the server is never shorter than
/// the client's wait (the wait starts after the previous answer), so this only
/// absorbs clock granularity.
const SLACK_MS: u64 = 10;

/// A `CreateTaskResult` for task `id`, polled every `interval` ms (none: no
/// `pollIntervalMs`).
fn created(id: &str, interval: Option<u64>, ttl: Value) -> Value {
    let mut result = json!({
        "resultType": "task", "taskId": id, "status": "working",
        "statusMessage": "queued", "createdAt": "2026-07-28T10:30:00Z",
        "lastUpdatedAt": "2026-07-28T10:30:00Z", "ttlMs": ttl,
    });
    if let Some(ms) = interval {
        result["pollIntervalMs"] = json!(ms);
    }
    result
}

/// A `tasks/get` answer about `id` with `status` and the extra members.
fn polled(id: &str, status: &str, interval: Option<u64>, extra: Value) -> Value {
    let mut result = json!({
        "resultType": "complete", "taskId": id, "status": status,
        "createdAt": "2026-07-28T10:30:00Z", "lastUpdatedAt": "2026-07-28T10:31:00Z",
        "ttlMs": 600_000,
    });
    if let Some(ms) = interval {
        result["pollIntervalMs"] = json!(ms);
    }
    for (key, value) in extra.as_object().cloned().unwrap_or_default() {
        result[key] = value;
    }
    json!({"result": result})
}

fn done(id: &str, text: &str) -> Value {
    polled(
        id,
        "completed",
        Some(100),
        json!({"result": {"content": [{"type": "text", "text": text}], "isError": false}}),
    )
}

fn ack() -> Value {
    json!([{"result": {"resultType": "complete"}}])
}

/// A modern server offering the extension, whose tool `long` makes task `ID`
/// (polled every `interval`), with these `tasks/get` answers.
fn server(interval: Option<u64>, mut gets: Vec<Value>) -> Value {
    if gets.is_empty() {
        gets.push(done(ID, "never polled"));
    }
    json!({
        "capabilities": {"tools": {}, "extensions": {TASKS: {}}},
        "record_times": true,
        "tools": [
            {"name": "long", "inputSchema": {"type": "object"}},
            {"name": "echo", "inputSchema": {"type": "object"}},
        ],
        "on_call": {"long": {"result": created(ID, interval, json!(600_000))}},
        "methods": {"tasks/get": gets, "tasks/update": ack(), "tasks/cancel": ack()},
    })
}

fn push_tool(scenario: &mut Value, name: &str) {
    let tools = scenario["tools"].as_array_mut().expect("a tools array");
    tools.push(json!({"name": name, "inputSchema": {"type": "object"}}));
}

/// Test limits: a short poll floor (the server's intervals here are 100-300 ms).
fn short_poll_limits(edit: impl FnOnce(&mut Limits)) -> Limits {
    support::limits(|limits| {
        limits.task_min_poll_interval_ms = 50;
        limits.request_timeout_ms = 10_000;
        edit(limits);
    })
}

async fn open(via: Via, limits: Limits, scenario: Value) -> Attempt {
    open_with(via, Client::builder("tasks").limits(limits), scenario).await
}

async fn open_with(via: Via, builder: ClientBuilder, scenario: Value) -> Attempt {
    connect_in_era(via, Era::Modern, builder, scenario).await
}

/// The requests of `method` with the time (µs) the server received each.
fn timed(a: &Attempt, method: &str) -> Vec<(u64, Value)> {
    let mut at = 0;
    let mut out = Vec::new();
    for line in a.lines() {
        if let Some(us) = line.get("received_us").and_then(Value::as_u64) {
            at = us;
        } else if line["method"] == method {
            out.push((at, line));
        }
    }
    out
}

/// The gaps (ms) between the `tools/call` and each `tasks/get`, in order.
fn gaps_ms(a: &Attempt) -> Vec<u64> {
    let call = timed(a, "tools/call").last().expect("a tools/call").0;
    let mut last = call;
    timed(a, "tasks/get")
        .into_iter()
        .map(|(at, _)| {
            let gap = at.saturating_sub(last) / 1000;
            last = at;
            gap
        })
        .collect()
}

/// Whether a request's `_meta` declares the Tasks extension.
fn declares(request: &Value) -> bool {
    request["params"]["_meta"][CAPS]["extensions"][TASKS].is_object()
}

/// Every `tasks/*` request declared the extension, named the task, and over
/// HTTP carried `Mcp-Name: <taskId>` and its `Mcp-Method`.
fn check_task_requests(a: &Attempt, via: Via) {
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        for request in a.received(method) {
            assert!(
                declares(&request),
                "{method} declares the extension: {request}"
            );
            assert_eq!(request["params"]["taskId"], ID, "{request}");
        }
    }
    assert!(
        a.received("tasks/result").is_empty(),
        "tasks/result is never called"
    );
    if via == Via::Http {
        let posts: Vec<_> = a
            .requests()
            .into_iter()
            .filter(|r| r.rpc_method().is_some_and(|m| m.starts_with("tasks/")))
            .collect();
        for post in posts {
            assert_eq!(post.header("mcp-name"), Some(ID), "{post:?}");
            assert_eq!(
                post.header("mcp-method").map(str::to_owned),
                post.rpc_method(),
                "{post:?}"
            );
        }
    }
}

async fn call(
    client: &Client,
    options: &CallOptions,
) -> smthrs_mcp::Result<smthrs_mcp::ToolResult> {
    guard(
        "the task call",
        client.call_tool_with("long", Map::new(), options),
    )
    .await
}

/// Create → working → completed: the result, the declaration on every request,
/// the first poll one interval after creation, the updates observed.
async fn a_task_runs_to_its_result(via: Via) {
    let gets = vec![
        polled(
            ID,
            "working",
            Some(150),
            json!({"statusMessage": "halfway"}),
        ),
        done(ID, "finished"),
    ];
    let a = open(via, short_poll_limits(|_| {}), server(Some(150), gets)).await;
    let seen = TaskUpdates::default();
    let result = call(a.client(), &seen.options())
        .await
        .expect("the task's result");
    assert_eq!(text_of(&result), "finished");
    let calls = a.received("tools/call");
    assert!(
        declares(&calls[0]),
        "the call declares the extension: {}",
        calls[0]
    );
    assert_eq!(a.received("tasks/get").len(), 2);
    check_task_requests(&a, via);
    assert!(
        a.received("tasks/cancel").is_empty(),
        "an ended task is not cancelled"
    );
    assert!(a.received("notifications/cancelled").is_empty());
    for gap in gaps_ms(&a) {
        assert!(gap + SLACK_MS >= 150, "polls {gap} ms apart, asked 150");
    }
    let updates = seen.all();
    let statuses: Vec<_> = updates.iter().map(|u| (u.status, u.polls)).collect();
    assert_eq!(
        statuses,
        [
            (TaskStatus::Working, 0),
            (TaskStatus::Working, 1),
            (TaskStatus::Completed, 2)
        ]
    );
    assert_eq!(updates[0].status_message.as_deref(), Some("queued"));
    assert_eq!(updates[1].status_message.as_deref(), Some("halfway"));
    assert_eq!(updates[0].poll_interval, Some(Duration::from_millis(150)));
    assert_eq!(updates[0].task.expose_id(), ID);
    assert_eq!(updates[0].task.server(), "tasks");
    assert!(
        !format!("{:?}", updates[0]).contains(ID),
        "Debug withholds the id"
    );
    a.close().await;
}

/// Each wait is the larger of the server's interval (re-read every poll) and
/// `taskMinPollIntervalMs`: never faster than either.
async fn the_cadence_follows_the_server_and_the_floor(via: Via) {
    let gets = vec![
        polled(ID, "working", Some(300), json!({})),
        polled(ID, "working", Some(120), json!({})),
        done(ID, "ok"),
    ];
    let a = open(
        via,
        short_poll_limits(|l| l.task_min_poll_interval_ms = 180),
        server(Some(100), gets),
    )
    .await;
    call(a.client(), &CallOptions::new()).await.expect("ok");
    let gaps = gaps_ms(&a);
    assert_eq!(gaps.len(), 3, "{gaps:?}");
    // created 100 (floor 180), then 300, then 120 (floor 180).
    for (gap, least) in gaps.iter().zip([180, 300, 180]) {
        assert!(gap + SLACK_MS >= least, "{gaps:?}: a gap under {least} ms");
    }
    a.close().await;
}

/// Without a server interval the client backs off on its own: 1 s, then ×1.5.
async fn without_an_interval_the_client_backs_off(via: Via) {
    let gets = vec![polled(ID, "working", None, json!({})), done(ID, "ok")];
    let a = open(via, short_poll_limits(|_| {}), server(None, gets)).await;
    call(a.client(), &CallOptions::new()).await.expect("ok");
    let gaps = gaps_ms(&a);
    assert!(gaps[0] + SLACK_MS >= 1000, "{gaps:?}");
    assert!(gaps[1] + SLACK_MS >= 1500, "{gaps:?}");
    a.close().await;
}

/// `taskMaxPollIntervalMs` caps the client's own backoff: with a ceiling under
/// its first 1 s step, every wait is the ceiling (plus jitter), never the 1 s,
/// 1.5 s, ... the backoff would reach.
async fn the_own_backoff_stops_at_the_ceiling(via: Via) {
    let working = polled(ID, "working", None, json!({}));
    let gets = vec![working.clone(), working.clone(), working, done(ID, "ok")];
    let a = open(
        via,
        short_poll_limits(|l| l.task_max_poll_interval_ms = 300),
        server(None, gets),
    )
    .await;
    call(a.client(), &CallOptions::new()).await.expect("ok");
    let gaps = gaps_ms(&a);
    assert_eq!(gaps.len(), 4, "{gaps:?}");
    for gap in &gaps {
        assert!(
            *gap + SLACK_MS >= 300,
            "no faster than the ceiling: {gaps:?}"
        );
        assert!(
            *gap < 900,
            "capped at taskMaxPollIntervalMs (300): {gaps:?}"
        );
    }
    a.close().await;
}

fn ask(message: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {"type": "object", "properties": {}},
    }})
}

/// `input_required` during the task: each key reaches the host once and is
/// answered once with `tasks/update`, however often the server lists it.
async fn input_requests_reach_the_host_once_each(via: Via) {
    let gets = vec![
        polled(
            ID,
            "input_required",
            Some(100),
            json!({"inputRequests": {"a": ask("first?")}}),
        ),
        polled(
            ID,
            "input_required",
            Some(100),
            json!({"inputRequests": {"a": ask("first?")}}),
        ),
        polled(
            ID,
            "input_required",
            Some(100),
            json!({"inputRequests": {"a": ask("first?"), "b": ask("second?")}}),
        ),
        done(ID, "answered"),
    ];
    let host = Arc::new(AcceptEveryForm::default());
    let builder = Client::builder("tasks")
        .limits(short_poll_limits(|_| {}))
        .host_handler(host.clone());
    let a = open_with(via, builder, server(Some(100), gets)).await;
    let result = call(a.client(), &CallOptions::new()).await.expect("ok");
    assert_eq!(text_of(&result), "answered");
    assert_eq!(*host.0.lock().unwrap(), ["first?", "second?"]);
    let updates = a.received("tasks/update");
    let keys: Vec<Vec<String>> = updates
        .iter()
        .map(|u| {
            u["params"]["inputResponses"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        })
        .collect();
    assert_eq!(keys, [vec!["a".to_string()], vec!["b".to_string()]]);
    assert_eq!(
        updates[0]["params"]["inputResponses"]["a"]["action"],
        "accept"
    );
    check_task_requests(&a, via);
    a.close().await;
}

/// Past `maxTaskInputRequests` distinct keys the task is cancelled and the
/// call fails.
async fn too_many_input_keys_cancel_the_task(via: Via) {
    let gets = vec![
        polled(
            ID,
            "input_required",
            Some(100),
            json!({"inputRequests": {"a": ask("1"), "b": ask("2")}}),
        ),
        polled(
            ID,
            "input_required",
            Some(100),
            json!({"inputRequests": {"c": ask("3")}}),
        ),
    ];
    let builder = Client::builder("tasks")
        .limits(short_poll_limits(|l| l.max_task_input_requests = 2))
        .host_handler(Arc::new(AcceptEveryForm::default()));
    let a = open_with(via, builder, server(Some(100), gets)).await;
    let error = call(a.client(), &CallOptions::new())
        .await
        .expect_err("past the bound");
    assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error:?}");
    assert!(
        error.message().contains("maxTaskInputRequests is 2"),
        "{error}"
    );
    eventually("the task's cancel", || {
        !a.received("tasks/cancel").is_empty()
    })
    .await;
    assert_eq!(a.received("tasks/update").len(), 1);
    check_task_requests(&a, via);
    a.close().await;
}

/// `failed` is a remote error with the inlined code, the server's message
/// kept out of the error; without `error` it is invalid.
async fn a_failed_task_is_a_remote_error(via: Via) {
    let mut scenario = server(
        Some(100),
        vec![
            polled(
                ID,
                "failed",
                Some(100),
                json!({"error": {"code": -32050, "message": "SECRET-BOOM", "data": {"x": 1}}}),
            ),
            polled(ID, "failed", Some(100), json!({})),
        ],
    );
    push_tool(&mut scenario, "long2");
    scenario["on_call"]["long2"] = json!({"result": created(ID, Some(100), json!(null))});
    let a = open(via, short_poll_limits(|_| {}), scenario).await;
    let error = call(a.client(), &CallOptions::new())
        .await
        .expect_err("failed");
    assert_eq!(error.kind(), ErrorKind::RemoteError, "{error:?}");
    assert_eq!(error.remote_code(), Some(-32050));
    assert!(!error.message().contains("SECRET-BOOM") && !format!("{error:?}").contains("SECRET"));
    assert!(
        a.events
            .named("remote-error")
            .iter()
            .any(|e| e.detail == "-32050"),
        "the failure reaches the diagnostics observer: {:?}",
        a.events.all()
    );
    let error = guard(
        "long2",
        a.client()
            .call_tool_with("long2", Map::new(), &CallOptions::new()),
    )
    .await
    .expect_err("failed without error");
    assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error:?}");
    assert!(error.message().contains("failed without error"), "{error}");
    assert!(
        a.received("tasks/cancel").is_empty(),
        "an ended task is not cancelled"
    );
    a.close().await;
}

/// `cancelled` ends the call with `task_cancelled`; nothing more is sent.
async fn a_cancelled_task_is_task_cancelled(via: Via) {
    let a = open(
        via,
        short_poll_limits(|_| {}),
        server(
            Some(100),
            vec![polled(ID, "cancelled", Some(100), json!({}))],
        ),
    )
    .await;
    let error = call(a.client(), &CallOptions::new())
        .await
        .expect_err("cancelled");
    assert_eq!(error.kind(), ErrorKind::TaskCancelled, "{error:?}");
    assert_eq!(error.kind().as_str(), "task_cancelled");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        a.received("tasks/get").len(),
        1,
        "a terminal task is not polled again"
    );
    assert!(a.received("tasks/cancel").is_empty());
    a.close().await;
}

/// A server that never finishes: `maxTaskPolls` and `maxTaskWaitMs` each end
/// the call with `timeout`, after a `tasks/cancel`.
async fn a_task_that_never_ends_times_out(via: Via) {
    let forever = vec![polled(ID, "working", Some(100), json!({}))];
    let a = open(
        via,
        short_poll_limits(|l| l.max_task_polls = 3),
        server(Some(100), forever.clone()),
    )
    .await;
    let error = call(a.client(), &CallOptions::new())
        .await
        .expect_err("never ends");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
    assert!(error.message().contains("maxTaskPolls (3)"), "{error}");
    assert!(error.detached_task().is_none());
    assert_eq!(a.received("tasks/get").len(), 3);
    assert_eq!(
        a.received("tasks/cancel").len(),
        1,
        "cancelled before the error"
    );
    check_task_requests(&a, via);
    a.close().await;

    let a = open(
        via,
        short_poll_limits(|l| l.max_task_wait_ms = 700),
        server(Some(100), forever),
    )
    .await;
    let started = tokio::time::Instant::now();
    let error = call(a.client(), &CallOptions::new())
        .await
        .expect_err("never ends");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
    assert!(error.message().contains("maxTaskWaitMs (700 ms"), "{error}");
    // Given up once the next poll would come past the wait: within one
    // interval (and its jitter) of it.
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(580), "{waited:?}");
    assert_eq!(a.received("tasks/cancel").len(), 1);
    a.close().await;

    // An interval longer than the whole wait: given up at once, not after it.
    let far = vec![polled(ID, "working", Some(100_000_000_000), json!({}))];
    let a = open(via, short_poll_limits(|_| {}), server(Some(100), far)).await;
    let started = tokio::time::Instant::now();
    let error = call(a.client(), &CallOptions::new())
        .await
        .expect_err("too far");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
    assert!(
        error.message().contains("maxTaskWaitMs (3600000 ms"),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(a.received("tasks/get").len(), 1);
    a.close().await;
}

/// The TTL backstop: a task that keeps one status past its `ttlMs` (counted
/// from when the client saw it) is given up on.
async fn the_ttl_backstop_gives_up(via: Via) {
    let mut scenario = server(
        Some(100),
        vec![polled(ID, "working", Some(100), json!({"ttlMs": 400}))],
    );
    scenario["on_call"]["long"]["result"] = created(ID, Some(100), json!(400));
    let a = open(via, short_poll_limits(|_| {}), scenario).await;
    let started = tokio::time::Instant::now();
    let error = call(a.client(), &CallOptions::new())
        .await
        .expect_err("past the TTL");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
    assert!(error.message().contains("ttlMs (400 ms"), "{error}");
    assert!(
        started.elapsed() >= Duration::from_millis(380),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(a.received("tasks/cancel").len(), 1);
    a.close().await;
}

/// The answers a hostile server polls back, each ending the call with
/// `invalid_response` (never quoting the server's text) and a `tasks/cancel`.
async fn garbage_polls_are_invalid_responses(via: Via) {
    let long_message = "M".repeat(4097);
    // (the members changed, `null` removing one; what the message says; whether
    // the task is cancelled: not when the answer was a valid terminal status).
    let garbage = [
        (
            json!({"status": "paused"}),
            "status is not one of the five",
            true,
        ),
        (json!({"status": null}), "status is missing", true),
        (json!({"status": 7}), "status is not a string", true),
        (json!({"taskId": "other-task"}), "another task", true),
        (json!({"taskId": null}), "taskId is missing", true),
        (json!({"statusMessage": long_message}), "4097 bytes", true),
        (
            json!({"statusMessage": "a\u{1b}[2J"}),
            "control character",
            true,
        ),
        (
            json!({"pollIntervalMs": -1}),
            "pollIntervalMs is not a non-negative integer",
            true,
        ),
        (
            json!({"pollIntervalMs": 1.5}),
            "pollIntervalMs is not a non-negative integer",
            true,
        ),
        (
            json!({"ttlMs": "soon"}),
            "ttlMs is not a non-negative integer",
            true,
        ),
        (
            json!({"createdAt": "yesterday"}),
            "createdAt is not an ISO 8601",
            true,
        ),
        (
            json!({"lastUpdatedAt": null}),
            "lastUpdatedAt is missing",
            true,
        ),
        (
            json!({"resultType": "deferred"}),
            "resultType other than complete",
            true,
        ),
        (
            json!({"status": "input_required"}),
            "without inputRequests",
            true,
        ),
        (
            json!({"status": "completed"}),
            "completed without result",
            true,
        ),
        (
            json!({"status": "completed", "result": {"resultType": "input_required", "content": []}}),
            "resultType is not complete",
            false,
        ),
        (
            json!({"status": "completed", "result": {"content": "not a list"}}),
            "content is not an array",
            false,
        ),
    ];
    let mut gets = Vec::new();
    let mut creates = Vec::new();
    for (index, (overrides, _, _)) in garbage.iter().enumerate() {
        let id = format!("t{index}");
        let mut answer = polled(&id, "working", Some(100), json!({}));
        for (key, value) in overrides.as_object().unwrap() {
            if value.is_null() {
                answer["result"].as_object_mut().unwrap().remove(key);
            } else {
                answer["result"][key] = value.clone();
            }
        }
        gets.push(answer);
        creates.push(json!({"result": created(&id, Some(100), json!(null))}));
    }
    let mut scenario = server(Some(100), gets);
    scenario["on_call"]["long"] = Value::Array(creates);
    let a = open(via, short_poll_limits(|_| {}), scenario).await;
    for (index, (_, expected, cancels)) in garbage.iter().enumerate() {
        let error = call(a.client(), &CallOptions::new())
            .await
            .expect_err("garbage");
        assert_eq!(
            error.kind(),
            ErrorKind::InvalidResponse,
            "case {index}: {error:?}"
        );
        assert!(error.message().contains(expected), "case {index}: {error}");
        assert!(!error.message().contains("MMMM") && !error.message().contains("other-task"));
        let id = format!("t{index}");
        let cancelled = || {
            a.received("tasks/cancel")
                .iter()
                .any(|c| c["params"]["taskId"] == id)
        };
        if *cancels {
            eventually(&format!("case {index}: its tasks/cancel"), cancelled).await;
        } else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert!(!cancelled(), "case {index}: an ended task is not cancelled");
        }
    }
    a.close().await;
}

/// A `CreateTaskResult` that breaks a rule fails the call; with no usable id
/// nothing more is sent.
async fn a_bad_create_task_result_is_invalid(via: Via) {
    let mut scenario = server(Some(100), vec![done(ID, "x")]);
    scenario["on_call"]["long"] = json!([
        {"result": created("has space", Some(100), json!(null))},
        {"result": created(&"x".repeat(257), Some(100), json!(null))},
        {"result": {"resultType": "task", "status": "working"}},
    ]);
    let a = open(via, short_poll_limits(|_| {}), scenario).await;
    for expected in [
        "taskId holds",
        "taskId is longer than 256",
        "taskId is missing",
    ] {
        let error = call(a.client(), &CallOptions::new())
            .await
            .expect_err("bad");
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error:?}");
        assert!(error.message().contains(expected), "{error}");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(a.received("tasks/get").is_empty() && a.received("tasks/cancel").is_empty());
    a.close().await;
}

/// A server that forgot the task (`-32602` to `tasks/get`): `not_found`, and
/// no cancel for a task the server does not have.
async fn a_forgotten_task_is_not_found(via: Via) {
    let gets = vec![json!({"error": {"code": -32602, "message": "Task has expired"}})];
    let a = open(via, short_poll_limits(|_| {}), server(Some(100), gets)).await;
    let error = call(a.client(), &CallOptions::new())
        .await
        .expect_err("forgotten");
    assert_eq!(error.kind(), ErrorKind::NotFound, "{error:?}");
    assert_eq!(error.remote_code(), Some(-32602));
    assert!(!error.message().contains("Task has expired"), "{error}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(a.received("tasks/cancel").is_empty());
    a.close().await;
}

/// A poll not answered within `requestTimeoutMs` is transient: polled again
/// after a longer wait.
async fn an_unanswered_poll_is_polled_again(via: Via) {
    let gets = vec![json!({"no_reply": true}), done(ID, "second time")];
    let a = open(
        via,
        short_poll_limits(|l| l.request_timeout_ms = 400),
        server(Some(100), gets),
    )
    .await;
    let result = call(a.client(), &CallOptions::new())
        .await
        .expect("the retry");
    assert_eq!(text_of(&result), "second time");
    let gaps = gaps_ms(&a);
    assert_eq!(gaps.len(), 2, "{gaps:?}");
    // The second poll waits for the first to time out, then longer.
    assert!(gaps[1] + SLACK_MS >= 400 + 200, "{gaps:?}");
    a.close().await;
}

/// `resultType: "task"` on `tasks/get` (the extension's own examples) is
/// tolerated, and reported once.
async fn a_task_result_type_on_tasks_get_is_tolerated(via: Via) {
    let mut working = polled(ID, "working", Some(100), json!({}));
    working["result"]["resultType"] = json!("task");
    let mut finished = done(ID, "fine");
    finished["result"]["resultType"] = json!("task");
    let a = open(
        via,
        short_poll_limits(|_| {}),
        server(Some(100), vec![working, finished]),
    )
    .await;
    let result = call(a.client(), &CallOptions::new())
        .await
        .expect("tolerated");
    assert_eq!(text_of(&result), "fine");
    assert_eq!(
        a.events.named("task-notice").len(),
        1,
        "{:?}",
        a.events.all()
    );
    a.close().await;
}

/// A server that answers the call directly although it could make a task:
/// the result as is; the call declared the extension; no polls.
async fn a_direct_answer_is_the_result(via: Via) {
    let a = open(via, short_poll_limits(|_| {}), server(Some(100), vec![])).await;
    let result = guard(
        "echo",
        a.client()
            .call_tool_with("echo", args(json!({"text": "direct"})), &CallOptions::new()),
    )
    .await
    .expect("a direct result");
    assert_eq!(text_of(&result), "direct");
    assert!(declares(&a.received("tools/call")[0]));
    assert!(a.received("tasks/get").is_empty());
    a.close().await;
}

/// `Never`: the extension is not declared; a hostile server's task is
/// `invalid_response`, a compliant one's `-32021` is `missing_capability`;
/// a `-32003` (the code before the correction) is a plain remote error.
async fn never_declares_and_refuses_a_task(via: Via) {
    let never = CallOptions::new().task(TaskMode::Never);
    let mut hostile = server(Some(100), vec![done(ID, "x")]);
    hostile["check_capabilities"] = json!(false);
    let a = open(via, short_poll_limits(|_| {}), hostile).await;
    let error = call(a.client(), &never).await.expect_err("undeclared task");
    assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error:?}");
    assert!(
        error
            .message()
            .contains("did not declare the tasks extension"),
        "{error}"
    );
    assert!(!declares(&a.received("tools/call")[0]));
    assert!(a.received("tasks/get").is_empty());
    a.close().await;

    let mut compliant = server(Some(100), vec![]);
    compliant["on_call"]["old"] =
        json!({"error": {"code": -32003, "message": "Missing required client capability"}});
    push_tool(&mut compliant, "old");
    let a = open(via, short_poll_limits(|_| {}), compliant).await;
    let error = call(a.client(), &never).await.expect_err("task-only tool");
    assert_eq!(error.kind(), ErrorKind::MissingCapability, "{error:?}");
    assert_eq!(error.remote_code(), Some(-32021));
    let error = guard("old", a.client().call_tool_with("old", Map::new(), &never))
        .await
        .expect_err("-32003");
    assert_eq!(error.kind(), ErrorKind::RemoteError, "{error:?}");
    assert_eq!(error.remote_code(), Some(-32003));
    a.close().await;
}

/// `Require` against a server without the extension: `missing_capability`,
/// nothing sent; `Auto` there does not declare it.
async fn require_needs_the_extension(via: Via) {
    let mut scenario = server(Some(100), vec![]);
    scenario["capabilities"] = json!({"tools": {}});
    let a = open(via, short_poll_limits(|_| {}), scenario).await;
    let client = a.client();
    let error = call(client, &CallOptions::new().task(TaskMode::Require))
        .await
        .expect_err("not offered");
    assert_eq!(error.kind(), ErrorKind::MissingCapability, "{error:?}");
    assert!(
        error.message().contains("io.modelcontextprotocol/tasks"),
        "{error}"
    );
    assert!(a.received("tools/call").is_empty(), "nothing sent");
    guard("echo", client.call_tool("echo", args(json!({"text": "x"}))))
        .await
        .expect("echo");
    assert!(
        !declares(&a.received("tools/call")[0]),
        "Auto declares only what is offered"
    );
    let missing = TaskHandle::new("tasks", ID);
    let error = guard("resume", client.resume_task(&missing, &CallOptions::new()))
        .await
        .expect_err("not offered");
    assert_eq!(error.kind(), ErrorKind::MissingCapability);
    a.close().await;
}

/// Dropping the call's future after the task was made sends `tasks/cancel`
/// (never `notifications/cancelled` for the task).
async fn dropping_the_call_cancels_the_task(via: Via) {
    let a = open(
        via,
        short_poll_limits(|_| {}),
        server(Some(100), vec![polled(ID, "working", Some(100), json!({}))]),
    )
    .await;
    let client = a.client();
    let options = CallOptions::new();
    let call = client.call_tool_with("long", Map::new(), &options);
    let dropped = async {
        tokio::select! {
            _ = call => panic!("the task never ends"),
            () = eventually("a poll", || !a.received("tasks/get").is_empty()) => {}
        }
    };
    guard("the call until its first poll", dropped).await;
    eventually("the dropped call's tasks/cancel", || {
        !a.received("tasks/cancel").is_empty()
    })
    .await;
    let call_id = a.received("tools/call")[0]["id"].clone();
    assert!(
        !a.received("notifications/cancelled")
            .iter()
            .any(|n| n["params"]["requestId"] == call_id),
        "notifications/cancelled is never sent for a task"
    );
    check_task_requests(&a, via);
    a.close().await;
}

/// The caller's token cancels the task: `cancelled`, and `tasks/cancel` sent
/// before `close` ends the session.
async fn the_token_cancels_the_task(via: Via) {
    let a = open(
        via,
        short_poll_limits(|_| {}),
        server(Some(100), vec![polled(ID, "working", Some(100), json!({}))]),
    )
    .await;
    let token = CancellationToken::new();
    let options = CallOptions::new().cancel_on(token.clone());
    let cancel = async {
        eventually("a poll", || !a.received("tasks/get").is_empty()).await;
        token.cancel();
    };
    let (result, ()) = guard("a cancelled task", async {
        tokio::join!(
            a.client().call_tool_with("long", Map::new(), &options),
            cancel
        )
    })
    .await;
    let error = result.expect_err("cancelled");
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error:?}");
    a.close().await;
    assert_eq!(
        a.received("tasks/cancel").len(),
        1,
        "close waited for the cancel"
    );
}

/// `Detach`: at a bound the task is left running, the error hands it over
/// (its id in no message or `Debug`), and `resume_task` waits again.
async fn a_detached_task_is_resumed(via: Via) {
    let gets = vec![
        polled(ID, "working", Some(100), json!({})),
        done(ID, "resumed"),
    ];
    let a = open(
        via,
        short_poll_limits(|l| l.max_task_polls = 1),
        server(Some(100), gets),
    )
    .await;
    let client = a.client();
    let options = CallOptions::new().task_policy(TaskPolicy::Detach);
    let error = call(client, &options).await.expect_err("detached");
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
    let task = error.detached_task().expect("the detached task").clone();
    assert_eq!(task.expose_id(), ID);
    for text in [
        error.message().to_string(),
        format!("{error:?}"),
        format!("{task:?}"),
    ] {
        assert!(!text.contains(ID), "the id leaks: {text}");
    }
    assert!(
        a.received("tasks/cancel").is_empty(),
        "a detached task is not cancelled"
    );

    let other = TaskHandle::new("another-server", ID);
    let refused = guard("resume elsewhere", client.resume_task(&other, &options)).await;
    assert_eq!(
        refused.expect_err("another server").kind(),
        ErrorKind::InvalidConfig
    );
    let bad = TaskHandle::new("tasks", "has\nnewline");
    let refused = guard("resume a bad id", client.resume_task(&bad, &options)).await;
    assert_eq!(
        refused.expect_err("a bad id").kind(),
        ErrorKind::InvalidConfig
    );
    assert_eq!(
        a.received("tasks/get").len(),
        1,
        "nothing sent for the refused ones"
    );

    let result = guard("resume", client.resume_task(&task, &options))
        .await
        .expect("the resumed task's result");
    assert_eq!(text_of(&result), "resumed");
    check_task_requests(&a, via);
    a.close().await;
}

/// `tasks/update` answered `-32602`: the task is gone (`not_found`).
async fn an_update_for_a_forgotten_task_is_not_found(via: Via) {
    let mut scenario = server(
        Some(100),
        vec![polled(
            ID,
            "input_required",
            Some(100),
            json!({"inputRequests": {"a": ask("?")}}),
        )],
    );
    scenario["methods"]["tasks/update"] =
        json!([{"error": {"code": -32602, "message": "unknown task"}}]);
    let builder = Client::builder("tasks")
        .limits(short_poll_limits(|_| {}))
        .host_handler(Arc::new(AcceptEveryForm::default()));
    let a = open_with(via, builder, scenario).await;
    let error = call(a.client(), &CallOptions::new())
        .await
        .expect_err("gone");
    assert_eq!(error.kind(), ErrorKind::NotFound, "{error:?}");
    assert!(error.message().contains("tasks/update"), "{error}");
    a.close().await;
}

/// The extension's other error codes answering a poll: `-32603` (internal)
/// and `-32601` (no `tasks/get`) are remote errors with their code, `-32021`
/// is `missing_capability`; each leaves the task to a best-effort cancel.
async fn other_error_codes_on_a_poll_end_the_call(via: Via) {
    let error = |code: i64| json!({"error": {"code": code, "message": "no"}});
    let gets = vec![error(-32603), error(-32601), error(-32021)];
    let a = open(via, short_poll_limits(|_| {}), server(Some(100), gets)).await;
    for (code, kind) in [
        (-32603, ErrorKind::RemoteError),
        (-32601, ErrorKind::RemoteError),
        (-32021, ErrorKind::MissingCapability),
    ] {
        let before = a.received("tasks/cancel").len();
        let error = call(a.client(), &CallOptions::new())
            .await
            .expect_err("an error");
        assert_eq!(error.kind(), kind, "{code}: {error:?}");
        assert_eq!(error.remote_code(), Some(code));
        eventually("its tasks/cancel", || {
            a.received("tasks/cancel").len() > before
        })
        .await;
    }
    check_task_requests(&a, via);
    a.close().await;
}

both_transports!(tasks:
    a_tasks_polls_carry_no_progress_for_its_call,
    other_error_codes_on_a_poll_end_the_call,
    a_task_runs_to_its_result,
    the_cadence_follows_the_server_and_the_floor,
    without_an_interval_the_client_backs_off,
    the_own_backoff_stops_at_the_ceiling,
    input_requests_reach_the_host_once_each,
    too_many_input_keys_cancel_the_task,
    a_failed_task_is_a_remote_error,
    a_cancelled_task_is_task_cancelled,
    a_task_that_never_ends_times_out,
    the_ttl_backstop_gives_up,
    garbage_polls_are_invalid_responses,
    a_bad_create_task_result_is_invalid,
    a_forgotten_task_is_not_found,
    an_unanswered_poll_is_polled_again,
    a_task_result_type_on_tasks_get_is_tolerated,
    a_direct_answer_is_the_result,
    never_declares_and_refuses_a_task,
    require_needs_the_extension,
    dropping_the_call_cancels_the_task,
    the_token_cancels_the_task,
    a_detached_task_is_resumed,
    an_update_for_a_forgotten_task_is_not_found,
);

/// A legacy session declares nothing task-like: `Require` is
/// `missing_capability` before anything is sent, and `Auto` sends no `_meta`.
#[tokio::test]
async fn a_legacy_session_never_runs_tasks() {
    let mut scenario = server(Some(100), vec![]);
    scenario["capabilities"] = json!({"tools": {}, "extensions": {TASKS: {}}});
    let a = connect_in_era(Via::Stdio, Era::Legacy, Client::builder("tasks"), scenario).await;
    let client = a.client();
    let error = guard(
        "require",
        client.call_tool_with(
            "echo",
            args(json!({"text": "x"})),
            &CallOptions::new().task(TaskMode::Require),
        ),
    )
    .await
    .expect_err("legacy");
    assert_eq!(error.kind(), ErrorKind::MissingCapability, "{error:?}");
    assert!(error.message().contains("2026-07-28"), "{error}");
    assert!(a.received("tools/call").is_empty());
    guard("auto", client.call_tool("echo", args(json!({"text": "x"}))))
        .await
        .expect("echo");
    let sent = &a.received("tools/call")[0];
    assert!(
        sent["params"].get("_meta").is_none() && sent["params"].get("task").is_none(),
        "{sent}"
    );
    let error = guard(
        "resume",
        client.resume_task(&TaskHandle::new("tasks", ID), &CallOptions::new()),
    )
    .await
    .expect_err("legacy");
    assert_eq!(error.kind(), ErrorKind::MissingCapability);
    a.close().await;
}

/// HTTP `503` with `Retry-After: 1` and `429` without one answering a poll:
/// transient, polled again no sooner than asked (1 s), or after twice the
/// last wait; the status reaches no error.
#[tokio::test]
async fn throttled_polls_wait_as_asked() {
    let throttled = |status: u16, retry: Option<&str>| {
        let mut data = json!({"http-bridge/status": status});
        if let Some(after) = retry {
            data["http-bridge/retryAfter"] = json!(after);
        }
        json!({"error": {"code": -32000, "message": "slow down", "data": data}})
    };
    let gets = vec![
        throttled(503, Some("1")),
        throttled(429, None),
        done(ID, "after the throttling"),
    ];
    let a = open(
        Via::Http,
        short_poll_limits(|_| {}),
        server(Some(100), gets),
    )
    .await;
    let result = call(a.client(), &CallOptions::new()).await.expect("ok");
    assert_eq!(text_of(&result), "after the throttling");
    let gaps = gaps_ms(&a);
    assert_eq!(gaps.len(), 3, "{gaps:?}");
    assert!(gaps[1] + SLACK_MS >= 1000, "Retry-After honoured: {gaps:?}");
    assert!(gaps[2] + SLACK_MS >= 2000, "twice the last wait: {gaps:?}");
    let statuses: Vec<_> = a.requests().iter().filter_map(|r| r.status).collect();
    assert!(
        statuses.contains(&503) && statuses.contains(&429),
        "{statuses:?}"
    );
    a.close().await;
}

/// Progress is not carried on tasks (beyond-tools.md §4.2): the call's token is
/// retired once `tools/call` hands back a task. A `notifications/progress`
/// naming it before the `CreateTaskResult` reaches the observer; the same
/// token named while the task is polled does not (it is reported as naming no
/// active token), and the task's updates do.
async fn a_tasks_polls_carry_no_progress_for_its_call(via: Via) {
    let progress = |n: u64| {
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": "$PROGRESS_TOKEN", "progress": n}})
    };
    let mut working = polled(ID, "working", Some(100), json!({}));
    // `$PROGRESS_TOKEN` in a `methods` line: the last tools/call's token.
    working["before"] = json!([progress(2)]);
    let mut scenario = server(Some(100), vec![working, done(ID, "ok")]);
    scenario["on_call"]["long"]["raw_lines"] = json!([progress(1)]);
    let a = open(via, short_poll_limits(|_| {}), scenario).await;
    let events = Arc::new(Mutex::new(Vec::new()));
    let kept = events.clone();
    let options = CallOptions::new().on_event(move |event| kept.lock().unwrap().push(event));
    let result = call(a.client(), &options).await.expect("the task's result");
    assert_eq!(text_of(&result), "ok");
    let token = &a.received("tools/call")[0]["params"]["_meta"]["progressToken"];
    assert!(token.is_u64(), "the call sent a token: {token}");
    assert_eq!(a.received("tasks/get").len(), 2);
    let events = events.lock().unwrap().clone();
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| match event {
            CallEvent::Progress(_) => "progress",
            CallEvent::Task(_) => "task",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["progress", "task", "task", "task"], "{events:?}");
    let dropped: Vec<_> = a
        .events
        .named("notification-dropped")
        .into_iter()
        .filter(|e| e.detail == "notifications/progress")
        .map(|e| e.reason)
        .collect();
    assert_eq!(dropped, ["names no active progress token"]);
    a.close().await;
}
