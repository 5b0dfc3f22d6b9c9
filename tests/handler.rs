//! The host handler ([`smthrs_mcp::handler`]) in both eras, against the real
//! scripted server as a child (stdio) and behind the real hyper bridge (HTTP):
//! what is declared, what reaches the handler, what the server receives back,
//! and the handler's bounds (form checks, URL mode, `inputTimeoutMs`,
//! `requestTimeoutMs` paused, cancellation, concurrency).
//!
//! Legacy servers ask with a JSON-RPC request during a call (`request_first`,
//! `requests_at_once`: the scripted server reports each answer it got); modern
//! servers ask with `input_required` results (MRTR: the scripted server reports
//! the `inputResponses` of each retry).

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};
use smthrs_mcp::handler::{
    ElicitAnswer, ElicitRequest, FieldKind, HostCapabilities, HostHandler, Root, SamplingRequest,
};
use smthrs_mcp::{Client, ClientBuilder, Era, ErrorKind, Limits};
use tokio::sync::watch;

use smthrs_mcp_testkit::bridge::BridgeOptions;
use support::eras::*;
use support::{args, eventually, guard, inline, limits, scenario};

const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// How the test host answers.
#[derive(Clone, Copy, Debug)]
enum Pace {
    /// At once.
    Now,
    /// After this long.
    After(Duration),
    /// Never (until its future is dropped).
    Never,
    /// Once this many answers are waiting at the same time, or after the
    /// pause when fewer ever are.
    Together(usize, Duration),
}

/// A configurable host: what it declares, how it answers, and what it saw.
struct Host {
    caps: HostCapabilities,
    pace: Pace,
    /// The content an accepted form gets.
    content: Map<String, Value>,
    roots: Vec<Root>,
    sampling: Option<Value>,
    /// Every elicitation that reached the host.
    seen: Mutex<Vec<ElicitRequest>>,
    /// Every sampling request that reached the host.
    sampled: Mutex<Vec<SamplingRequest>>,
    /// Answers started / finished / whose future was dropped unfinished.
    entered: watch::Sender<usize>,
    finished: AtomicUsize,
    dropped: AtomicBool,
}

impl Host {
    fn new(caps: HostCapabilities) -> Host {
        Host {
            caps,
            pace: Pace::Now,
            content: Map::new(),
            roots: vec![Root {
                uri: "file:///work/project".into(),
                name: Some("project".into()),
            }],
            sampling: Some(json!({
                "role": "assistant",
                "content": {"type": "text", "text": "sampled"},
                "model": "test-model",
                "stopReason": "endTurn",
            })),
            seen: Mutex::new(Vec::new()),
            sampled: Mutex::new(Vec::new()),
            entered: watch::Sender::new(0),
            finished: AtomicUsize::new(0),
            dropped: AtomicBool::new(false),
        }
    }

    fn pace(mut self, pace: Pace) -> Host {
        self.pace = pace;
        self
    }

    fn content(mut self, content: Value) -> Host {
        self.content = args(content);
        self
    }

    fn arc(self) -> Arc<Host> {
        Arc::new(self)
    }

    fn reached(&self) -> usize {
        *self.entered.borrow()
    }

    fn was_dropped(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
    }

    /// Runs one answer at the host's pace, noting a drop before it finished.
    async fn answer<T>(&self, value: T) -> T {
        struct Unfinished<'a>(&'a Host, bool);
        impl Drop for Unfinished<'_> {
            fn drop(&mut self) {
                if !self.1 {
                    self.0.dropped.store(true, Ordering::SeqCst);
                }
            }
        }
        let mut unfinished = Unfinished(self, false);
        self.entered.send_modify(|n| *n += 1);
        match self.pace {
            Pace::Now => {}
            Pace::After(pause) => tokio::time::sleep(pause).await,
            Pace::Never => std::future::pending::<()>().await,
            Pace::Together(count, pause) => {
                let mut entered = self.entered.subscribe();
                let _ = tokio::time::timeout(pause, entered.wait_for(|n| *n >= count)).await;
            }
        }
        unfinished.1 = true;
        self.finished.fetch_add(1, Ordering::SeqCst);
        value
    }
}

impl HostHandler for Host {
    fn capabilities(&self) -> HostCapabilities {
        self.caps
    }

    fn elicit(&self, request: ElicitRequest) -> BoxFuture<'_, ElicitAnswer> {
        self.seen.lock().unwrap().push(request);
        Box::pin(self.answer(ElicitAnswer::Accept(self.content.clone())))
    }

    fn list_roots(&self) -> BoxFuture<'_, Vec<Root>> {
        Box::pin(self.answer(self.roots.clone()))
    }

    fn create_message(&self, request: SamplingRequest) -> BoxFuture<'_, Option<Value>> {
        self.sampled.lock().unwrap().push(request);
        Box::pin(self.answer(self.sampling.clone()))
    }
}

fn everything() -> HostCapabilities {
    HostCapabilities::default()
        .with_elicitation_form()
        .with_elicitation_url()
        .with_roots()
        .with_sampling()
}

fn form_only() -> HostCapabilities {
    HostCapabilities::default().with_elicitation_form()
}

/// A legacy scenario whose `echo` first sends `requests` to the client.
fn legacy_asking(requests: Value) -> support::Server {
    inline(json!({"on_call": {"echo": {"request_first": requests}}}))
}

/// A modern scenario whose `ask` answers `input_required` with these
/// `inputRequests` (once, then its report).
fn modern_asking(input_requests: Value) -> support::Server {
    inline(json!({
        "era": "modern",
        "tools": [{"name": "ask", "inputSchema": {"type": "object"}}],
        "on_call": {"ask": {"input_required": {"inputRequests": input_requests}}},
    }))
}

fn legacy_options() -> BridgeOptions {
    BridgeOptions::default()
}

fn modern_options() -> BridgeOptions {
    BridgeOptions::modern()
}

/// Calls `echo` on a legacy session and returns the scripted server's report
/// of the answers to its requests.
async fn legacy_report(client: &Client) -> Value {
    let result = guard("echo", client.call_tool("echo", args(json!({"text": "x"}))))
        .await
        .expect("echo");
    report_of(&result)
}

/// Calls `ask` on a modern session and returns its MRTR report.
async fn modern_report(client: &Client) -> Value {
    let result = guard("ask", client.call_tool("ask", Map::new()))
        .await
        .expect("ask");
    report_of(&result)["mrtr"].clone()
}

async fn open(
    via: Via,
    host: Option<Arc<Host>>,
    server: support::Server,
    options: BridgeOptions,
    edit: impl FnOnce(&mut Limits),
) -> Attempt {
    let mut builder: ClientBuilder = Client::builder("host").limits(limits(edit));
    if let Some(host) = host {
        builder = builder.host_handler(host);
    }
    connect(via, builder, server, options).await
}

fn form(message: &str, properties: Value) -> Value {
    json!({"message": message, "requestedSchema": {"type": "object", "properties": properties}})
}

// ---------------------------------------------------------------------------
// What is declared
// ---------------------------------------------------------------------------

both_transports!(
    declared:
    legacy_initialize_declares_what_the_handler_answers,
    modern_meta_declares_what_the_handler_answers,
    without_a_handler_nothing_is_declared_and_legacy_requests_get_method_not_found,
    legacy_request_for_an_undeclared_method_gets_method_not_found,
    modern_server_requests_never_reach_the_host,
);

async fn legacy_initialize_declares_what_the_handler_answers(via: Via) {
    for (caps, expected) in [
        (
            everything(),
            json!({"elicitation": {"form": {}, "url": {}}, "roots": {}, "sampling": {}}),
        ),
        (
            HostCapabilities::default().with_roots(),
            json!({"roots": {}}),
        ),
        (form_only(), json!({"elicitation": {"form": {}}})),
    ] {
        let host = Host::new(caps).arc();
        let a = open(via, Some(host), scenario("basic"), legacy_options(), |_| {}).await;
        assert_eq!(a.client().era(), Era::Legacy);
        a.close().await;
        let init = &a.received("initialize")[0];
        assert_eq!(init["params"]["capabilities"], expected);
        // The probe declared the same.
        if via == Via::Stdio {
            let probe = &a.received("server/discover")[0];
            assert_eq!(probe["params"]["_meta"][META_CAPABILITIES], expected);
        }
    }
}

async fn modern_meta_declares_what_the_handler_answers(via: Via) {
    let host = Host::new(everything()).arc();
    let a = open(
        via,
        Some(host),
        scenario("modern-basic"),
        modern_options(),
        |_| {},
    )
    .await;
    assert_eq!(a.client().era(), Era::Modern);
    guard(
        "echo",
        a.client().call_tool("echo", args(json!({"text": "x"}))),
    )
    .await
    .unwrap();
    a.close().await;
    let expected = json!({"elicitation": {"form": {}, "url": {}}, "roots": {}, "sampling": {}});
    let requests: Vec<Value> = a
        .lines()
        .into_iter()
        .filter(|l| l.get("id").is_some() && l.get("method").is_some())
        .collect();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(
            request["params"]["_meta"][META_CAPABILITIES], expected,
            "{request}"
        );
    }
}

async fn without_a_handler_nothing_is_declared_and_legacy_requests_get_method_not_found(via: Via) {
    let a = open(
        via,
        None,
        scenario("unsupported-server-request"),
        legacy_options(),
        |_| {},
    )
    .await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    assert_eq!(
        a.received("initialize")[0]["params"]["capabilities"],
        json!({})
    );
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2);
    for request in requests {
        assert_eq!(request["answered"], true, "{request}");
        assert_eq!(request["exact_id"], true);
        assert_eq!(request["error_code"], -32601, "{request}");
    }
}

async fn legacy_request_for_an_undeclared_method_gets_method_not_found(via: Via) {
    let host = Host::new(HostCapabilities::default().with_roots()).arc();
    let server = legacy_asking(json!([
        {"method": "sampling/createMessage", "id": 7, "params": {"messages": []}},
        {"method": "elicitation/create", "id": 8, "params": form("m", json!({}))},
        {"method": "roots/list", "id": 9},
    ]));
    let a = open(via, Some(host.clone()), server, legacy_options(), |_| {}).await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    let codes: Vec<Value> = report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["error_code"].clone())
        .collect();
    assert_eq!(codes, [json!(-32601), json!(-32601), Value::Null]);
    assert_eq!(host.reached(), 1, "only roots/list reached the host");
}

/// 2026-07-28 servers send no requests: one that does (the legacy way of
/// asking) is dropped, even with a host that declares the method.
async fn modern_server_requests_never_reach_the_host(via: Via) {
    let host = Host::new(everything()).arc();
    let server = inline(
        json!({"era": "modern", "on_call": {"echo": {"request_first": [
            {"method": "elicitation/create", "id": "e-1", "timeout_ms": 500,
             "params": form("m", json!({}))},
            {"method": "roots/list", "id": "r-1", "timeout_ms": 500},
        ]}}}),
    );
    let a = open(via, Some(host.clone()), server, modern_options(), |_| {}).await;
    assert_eq!(a.client().era(), Era::Modern);
    let report = legacy_report(a.client()).await;
    a.close().await;
    for request in report["requests"].as_array().unwrap() {
        assert_eq!(request["answered"], false, "{request}");
    }
    assert_eq!(host.reached(), 0);
    let dropped: Vec<String> = a
        .events
        .named("server-request-dropped")
        .into_iter()
        .map(|e| e.detail)
        .collect();
    assert_eq!(dropped, ["elicitation/create", "roots/list"]);
}

// ---------------------------------------------------------------------------
// What the host answers
// ---------------------------------------------------------------------------

both_transports!(
    answers:
    legacy_elicitation_reaches_the_host_and_gets_its_defaults,
    legacy_roots_and_sampling_are_answered,
    modern_elicitation_roots_and_sampling_are_answered,
);

async fn legacy_elicitation_reaches_the_host_and_gets_its_defaults(via: Via) {
    let host = Host::new(form_only()).content(json!({"name": "Ada"})).arc();
    let schema = json!({
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
        "verified": {"type": "boolean", "default": true},
    });
    let server = legacy_asking(json!({
        "method": "elicitation/create", "id": "elicit-1",
        "params": form("Who are you?", schema),
    }));
    let a = open(via, Some(host.clone()), server, legacy_options(), |_| {}).await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    let answer = &report["requests"][0];
    assert_eq!(answer["exact_id"], true);
    assert_eq!(
        answer["reply"]["result"],
        json!({"action": "accept", "content": {
            "name": "Ada", "age": 30, "score": 95.5, "status": "active", "verified": true,
        }}),
        "the host's answer, the defaults of the fields it left out filled in"
    );
    let seen = host.seen.lock().unwrap();
    let [ElicitRequest::Form(form)] = &seen[..] else {
        panic!("{seen:?}")
    };
    assert_eq!(form.message, "Who are you?");
    assert_eq!(form.fields.len(), 5);
    let status = form.fields.iter().find(|f| f.name == "status").unwrap();
    assert_eq!(status.default, Some(json!("active")));
    assert!(matches!(&status.kind, FieldKind::Choice { values, .. } if values.len() == 2));
}

async fn legacy_roots_and_sampling_are_answered(via: Via) {
    let host = Host::new(everything()).arc();
    let messages = json!([{"role": "user", "content": {"type": "text", "text": "hi"}}]);
    let server = legacy_asking(json!([
        {"method": "roots/list", "id": "r-1"},
        {"method": "sampling/createMessage", "id": 7,
         "params": {"messages": messages, "maxTokens": 5}},
    ]));
    let a = open(via, Some(host.clone()), server, legacy_options(), |_| {}).await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(
        requests[0]["reply"]["result"],
        json!({"roots": [{"uri": "file:///work/project", "name": "project"}]})
    );
    assert_eq!(
        requests[1]["reply"]["result"],
        host.sampling.clone().unwrap()
    );
    let sampled = host.sampled.lock().unwrap();
    assert_eq!(sampled[0].params["messages"], messages);
}

async fn modern_elicitation_roots_and_sampling_are_answered(via: Via) {
    let host = Host::new(everything()).content(json!({"ok": true})).arc();
    let server = modern_asking(json!({
        "where": {"method": "roots/list", "params": {}},
        "draft": {"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 5,
        }},
        "sure": {"method": "elicitation/create",
                 "params": form("Sure?", json!({"ok": {"type": "boolean"}}))},
    }));
    let a = open(via, Some(host.clone()), server, modern_options(), |_| {}).await;
    let report = modern_report(a.client()).await;
    a.close().await;
    assert_eq!(report["ok"], true, "{report}");
    let responses = &report["retries"][0]["responses"];
    assert_eq!(
        responses["where"],
        json!({"roots": [{"uri": "file:///work/project", "name": "project"}]})
    );
    assert_eq!(responses["draft"], host.sampling.clone().unwrap());
    assert_eq!(
        responses["sure"],
        json!({"action": "accept", "content": {"ok": true}})
    );
}

// ---------------------------------------------------------------------------
// What never reaches the host
// ---------------------------------------------------------------------------

/// Elicitations the client must refuse before the host sees them, with the
/// limits that make them refusable.
fn refused_forms() -> Vec<(&'static str, Value)> {
    vec![
        (
            "nested field",
            form(
                "nested",
                json!({"address": {"type": "object", "properties": {"city": {"type": "string"}}}}),
            ),
        ),
        (
            "oversized message",
            form(&"m".repeat(65), json!({"ok": {"type": "boolean"}})),
        ),
        (
            "too many fields",
            form(
                "fields",
                json!({"a": {"type": "boolean"}, "b": {"type": "boolean"}, "c": {"type": "boolean"}}),
            ),
        ),
        (
            "plain http URL",
            json!({"mode": "url", "message": "pay", "url": "http://pay.example.com/checkout"}),
        ),
        (
            "javascript URL",
            json!({"mode": "url", "message": "pay", "url": "javascript:alert(1)"}),
        ),
        (
            "URL with userinfo",
            json!({"mode": "url", "message": "pay", "url": "https://user:pw@pay.example.com/"}),
        ),
    ]
}

fn tight(l: &mut Limits) {
    l.max_elicitation_message_bytes = 64;
    l.max_elicitation_fields = 2;
}

both_transports!(
    refusals:
    legacy_refused_elicitations_get_invalid_params,
    modern_refused_elicitations_fail_the_call,
    url_mode_reaches_the_host_for_https_and_loopback,
    oversized_sampling_requests_never_reach_the_host,
    answers_the_host_gets_wrong_are_not_sent,
);

async fn legacy_refused_elicitations_get_invalid_params(via: Via) {
    let host = Host::new(everything()).arc();
    let cases = refused_forms();
    let requests: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (_, params))| json!({"method": "elicitation/create", "id": i, "params": params}))
        .collect();
    let a = open(
        via,
        Some(host.clone()),
        legacy_asking(Value::Array(requests)),
        legacy_options(),
        tight,
    )
    .await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    for ((case, _), answer) in cases.iter().zip(report["requests"].as_array().unwrap()) {
        assert_eq!(answer["error_code"], -32602, "{case}: {answer}");
    }
    assert_eq!(host.reached(), 0, "{:?}", host.seen.lock().unwrap());
}

async fn modern_refused_elicitations_fail_the_call(via: Via) {
    for (case, params) in refused_forms() {
        let host = Host::new(everything()).arc();
        let server =
            modern_asking(json!({"q": {"method": "elicitation/create", "params": params}}));
        let a = open(via, Some(host.clone()), server, modern_options(), tight).await;
        let error = guard(case, a.client().call_tool("ask", Map::new()))
            .await
            .unwrap_err();
        assert_eq!(
            error.kind(),
            ErrorKind::InvalidResponse,
            "{case}: {error:?}"
        );
        // A count bound names the count and the option.
        let counted = match case {
            "oversized message" => {
                Some("elicitation message is 65 bytes; maxElicitationMessageBytes is 64")
            }
            "too many fields" => Some("requestedSchema has 3 fields; maxElicitationFields is 2"),
            _ => None,
        };
        if let Some(counted) = counted {
            assert!(error.message().ends_with(counted), "{case}: {error}");
        }
        a.close().await;
        assert_eq!(host.reached(), 0, "{case}");
        assert_eq!(a.received("tools/call").len(), 1, "{case}: no retry");
    }
}

async fn url_mode_reaches_the_host_for_https_and_loopback(via: Via) {
    let host = Host::new(everything()).arc();
    let server = legacy_asking(json!([
        {"method": "elicitation/create", "id": 1,
         "params": {"mode": "url", "message": "Pay here", "url": "https://pay.example.com/checkout?o=1"}},
        {"method": "elicitation/create", "id": 2,
         "params": {"mode": "url", "message": "Log in", "url": "http://127.0.0.1:8765/callback"}},
    ]));
    let a = open(via, Some(host.clone()), server, legacy_options(), |_| {}).await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    for answer in report["requests"].as_array().unwrap() {
        assert_eq!(
            answer["reply"]["result"],
            json!({"action": "accept"}),
            "{answer}"
        );
    }
    let seen = host.seen.lock().unwrap();
    let origins: Vec<&str> = seen
        .iter()
        .map(|request| match request {
            ElicitRequest::Url(url) => url.origin.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        origins,
        ["https://pay.example.com", "http://127.0.0.1:8765"]
    );
}

async fn oversized_sampling_requests_never_reach_the_host(via: Via) {
    let message = json!({"role": "user", "content": {"type": "text", "text": "hi"}});
    let params = json!({"messages": [message, message, message], "maxTokens": 5});
    let edit = |l: &mut Limits| l.max_sampling_messages = 2;
    // Legacy: the server gets -32602.
    let host = Host::new(everything()).arc();
    let server =
        legacy_asking(json!({"method": "sampling/createMessage", "id": 7, "params": params}));
    let a = open(via, Some(host.clone()), server, legacy_options(), edit).await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    assert_eq!(report["requests"][0]["error_code"], -32602, "{report}");
    assert_eq!(host.reached(), 0);
    // Modern: the call fails.
    let host = Host::new(everything()).arc();
    let server =
        modern_asking(json!({"s": {"method": "sampling/createMessage", "params": params}}));
    let a = open(via, Some(host.clone()), server, modern_options(), edit).await;
    let error = guard("ask", a.client().call_tool("ask", Map::new()))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error:?}");
    assert!(
        error
            .message()
            .ends_with("sampling request has 3 messages; maxSamplingMessages is 2"),
        "{error}"
    );
    a.close().await;
    assert_eq!(host.reached(), 0);
    assert_eq!(a.received("tools/call").len(), 1);
}

async fn answers_the_host_gets_wrong_are_not_sent(via: Via) {
    // A form answered with a field of the wrong type, and a refused sampling
    // request (sampling has no decline).
    let wrong = || {
        let mut host = Host::new(everything()).content(json!({"n": "not a number"}));
        host.sampling = None;
        host.arc()
    };
    let form_request = form("n?", json!({"n": {"type": "integer"}}));
    let sampling = json!({"messages": [], "maxTokens": 5});
    let server = legacy_asking(json!([
        {"method": "elicitation/create", "id": 1, "params": form_request},
        {"method": "sampling/createMessage", "id": 2, "params": sampling},
    ]));
    let a = open(via, Some(wrong()), server, legacy_options(), |_| {}).await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    for answer in report["requests"].as_array().unwrap() {
        assert_eq!(answer["error_code"], -32603, "{answer}");
    }
    for input in [
        json!({"q": {"method": "elicitation/create", "params": form_request}}),
        json!({"s": {"method": "sampling/createMessage", "params": sampling}}),
    ] {
        let a = open(
            via,
            Some(wrong()),
            modern_asking(input.clone()),
            modern_options(),
            |_| {},
        )
        .await;
        let error = guard("ask", a.client().call_tool("ask", Map::new()))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InputRefused, "{input}: {error:?}");
        a.close().await;
        assert_eq!(a.received("tools/call").len(), 1, "{input}: nothing sent");
    }
}

// ---------------------------------------------------------------------------
// Time
// ---------------------------------------------------------------------------

both_transports!(
    time:
    legacy_host_past_input_timeout_gets_the_server_an_error,
    modern_host_past_input_timeout_fails_the_call,
    legacy_request_timeout_is_paused_while_the_host_answers,
    modern_request_timeout_is_paused_while_the_host_answers,
    modern_host_time_pauses_only_its_own_call,
);

async fn legacy_host_past_input_timeout_gets_the_server_an_error(via: Via) {
    let host = Host::new(form_only()).pace(Pace::Never).arc();
    let server = legacy_asking(json!({
        "method": "elicitation/create", "id": "slow-1", "timeout_ms": 5000,
        "params": form("m", json!({})),
    }));
    let a = open(via, Some(host.clone()), server, legacy_options(), |l| {
        l.input_timeout_ms = 300
    })
    .await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    assert_eq!(report["requests"][0]["error_code"], -32603, "{report}");
    assert!(host.was_dropped(), "the host's answer was given up on");
}

async fn modern_host_past_input_timeout_fails_the_call(via: Via) {
    let host = Host::new(form_only()).pace(Pace::Never).arc();
    let server = modern_asking(
        json!({"q": {"method": "elicitation/create", "params": form("m", json!({}))}}),
    );
    let a = open(via, Some(host.clone()), server, modern_options(), |l| {
        l.input_timeout_ms = 300
    })
    .await;
    let error = guard("ask", a.client().call_tool("ask", Map::new()))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout, "{error:?}");
    assert!(host.was_dropped());
    assert!(a.client().terminal_error().is_none());
    a.close().await;
    assert_eq!(a.received("tools/call").len(), 1, "no retry");
}

/// The message names the bound that fired (today `Client::call_tool` rewords
/// every timeout as its own `requestTimeoutMs` one: "timed out after 120000 ms").
#[tokio::test]
async fn modern_input_timeout_names_input_timeout_ms() {
    let host = Host::new(form_only()).pace(Pace::Never).arc();
    let server = modern_asking(
        json!({"q": {"method": "elicitation/create", "params": form("m", json!({}))}}),
    );
    let a = open(Via::Stdio, Some(host), server, modern_options(), |l| {
        l.input_timeout_ms = 300
    })
    .await;
    let error = guard("ask", a.client().call_tool("ask", Map::new()))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert!(error.message().contains("inputTimeoutMs"), "{error:?}");
    a.close().await;
}

async fn legacy_request_timeout_is_paused_while_the_host_answers(via: Via) {
    let host = Host::new(form_only())
        .pace(Pace::After(Duration::from_millis(900)))
        .arc();
    let server = legacy_asking(json!({
        "method": "elicitation/create", "id": 1, "params": form("m", json!({})),
    }));
    let a = open(via, Some(host.clone()), server, legacy_options(), |l| {
        l.request_timeout_ms = 300;
        l.input_timeout_ms = 5000;
    })
    .await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    assert_eq!(
        report["requests"][0]["reply"]["result"],
        json!({"action": "accept", "content": {}})
    );
    assert_eq!(host.finished.load(Ordering::SeqCst), 1);
}

async fn modern_request_timeout_is_paused_while_the_host_answers(via: Via) {
    let host = Host::new(form_only())
        .pace(Pace::After(Duration::from_millis(900)))
        .arc();
    let server = modern_asking(
        json!({"q": {"method": "elicitation/create", "params": form("m", json!({}))}}),
    );
    let a = open(via, Some(host.clone()), server, modern_options(), |l| {
        l.request_timeout_ms = 300;
        l.input_timeout_ms = 5000;
    })
    .await;
    let report = modern_report(a.client()).await;
    a.close().await;
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(host.finished.load(Ordering::SeqCst), 1);
}

/// A modern input belongs to one call: the host's time pauses that call's
/// `requestTimeoutMs`, not every other call's.
async fn modern_host_time_pauses_only_its_own_call(via: Via) {
    let host = Host::new(form_only())
        .pace(Pace::After(Duration::from_millis(1500)))
        .arc();
    let server = inline(json!({
        "era": "modern",
        "tools": [{"name": "ask", "inputSchema": {"type": "object"}},
                  {"name": "slow", "inputSchema": {"type": "object"}}],
        "on_call": {"ask": {"input_required": {"inputRequests": {
            "q": {"method": "elicitation/create", "params": form("m", json!({}))}}}}},
    }));
    let a = open(via, Some(host.clone()), server, modern_options(), |l| {
        l.request_timeout_ms = 300;
        l.input_timeout_ms = 5000;
    })
    .await;
    let client = a.client().clone();
    let ask = tokio::spawn(async move { client.call_tool("ask", Map::new()).await });
    let mut entered = host.entered.subscribe();
    guard("the host", entered.wait_for(|n| *n == 1))
        .await
        .unwrap();
    let error = guard(
        "slow",
        a.client().call_tool("slow", args(json!({"ms": 5000}))),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout);
    assert_eq!(
        host.finished.load(Ordering::SeqCst),
        0,
        "slow timed out on its own deadline, while the host was still answering ask"
    );
    let report = report_of(&guard("ask", ask).await.unwrap().expect("ask"));
    assert_eq!(report["mrtr"]["ok"], true);
    a.close().await;
}

// ---------------------------------------------------------------------------
// Cancellation and concurrency
// ---------------------------------------------------------------------------

both_transports!(
    cancel:
    dropping_a_modern_call_drops_the_hosts_answer,
    closing_the_session_drops_a_legacy_answer,
    the_servers_cancellation_drops_a_legacy_answer,
    at_most_four_legacy_requests_are_answered_at_once,
);

async fn dropping_a_modern_call_drops_the_hosts_answer(via: Via) {
    let host = Host::new(form_only()).pace(Pace::Never).arc();
    let server = modern_asking(
        json!({"q": {"method": "elicitation/create", "params": form("m", json!({}))}}),
    );
    let a = open(via, Some(host.clone()), server, modern_options(), |_| {}).await;
    {
        let call = a.client().call_tool("ask", Map::new());
        tokio::pin!(call);
        let mut entered = host.entered.subscribe();
        tokio::select! {
            _ = &mut call => panic!("the call cannot finish"),
            _ = guard("the host", entered.wait_for(|n| *n == 1)) => {}
        }
        assert!(!host.was_dropped());
    }
    assert!(
        host.was_dropped(),
        "dropping the call dropped the host's wait"
    );
    a.close().await;
    assert_eq!(a.received("tools/call").len(), 1);
}

async fn closing_the_session_drops_a_legacy_answer(via: Via) {
    let host = Host::new(form_only()).pace(Pace::Never).arc();
    let server = legacy_asking(json!({
        "method": "elicitation/create", "id": 1, "timeout_ms": 10000,
        "params": form("m", json!({})),
    }));
    let a = open(via, Some(host.clone()), server, legacy_options(), |_| {}).await;
    let client = a.client().clone();
    let call =
        tokio::spawn(async move { client.call_tool("echo", args(json!({"text": "x"}))).await });
    let mut entered = host.entered.subscribe();
    guard("the host", entered.wait_for(|n| *n == 1))
        .await
        .unwrap();
    a.close().await;
    let outcome = guard("the call", call).await.unwrap();
    assert_eq!(outcome.unwrap_err().to_string(), "connection scope closed");
    eventually("the host's answer dropped", || host.was_dropped()).await;
}

async fn the_servers_cancellation_drops_a_legacy_answer(via: Via) {
    let host = Host::new(form_only()).pace(Pace::Never).arc();
    let server = legacy_asking(json!({
        "method": "elicitation/create", "id": "c-1", "cancel_after_ms": 300, "timeout_ms": 1500,
        "params": form("m", json!({})),
    }));
    let a = open(via, Some(host.clone()), server, legacy_options(), |_| {}).await;
    let report = legacy_report(a.client()).await;
    assert_eq!(host.reached(), 1);
    assert!(
        host.was_dropped(),
        "the cancellation dropped the host's wait"
    );
    let answer = &report["requests"][0];
    assert_eq!(answer["cancelled"], true, "{answer}");
    assert_eq!(answer["answered"], false);
    assert_eq!(
        answer["late_reply"],
        Value::Null,
        "nothing sent after the cancel"
    );
    a.close().await;
}

async fn at_most_four_legacy_requests_are_answered_at_once(via: Via) {
    // Each answer waits for a fifth to be running (never, if at most four run at
    // once), so the first four are still running when the fifth request arrives.
    let host = Host::new(form_only())
        .pace(Pace::Together(5, Duration::from_secs(1)))
        .arc();
    let requests: Vec<Value> = (1..=5)
        .map(|id| json!({"method": "elicitation/create", "id": id, "params": form("m", json!({}))}))
        .collect();
    let server = inline(json!({"on_call": {"echo": {"requests_at_once": requests}}}));
    let a = open(via, Some(host.clone()), server, legacy_options(), |_| {}).await;
    let report = legacy_report(a.client()).await;
    a.close().await;
    let answers = report["at_once"].as_array().unwrap();
    assert_eq!(answers.len(), 5);
    for answer in &answers[..4] {
        assert_eq!(
            answer["reply"]["result"],
            json!({"action": "accept", "content": {}}),
            "{answer}"
        );
    }
    assert_eq!(answers[4]["sent_id"], 5);
    assert_eq!(
        answers[4]["error_code"], -32603,
        "the fifth is refused: {report}"
    );
    assert_eq!(host.reached(), 4);
    assert_eq!(host.finished.load(Ordering::SeqCst), 4);
}
