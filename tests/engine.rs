//! Session-engine rules, each against a real child process (the scripted server).
//!
//! Transport-independent rules are written once as `async fn rule(via: Via)` and
//! instantiated per transport by `both_transports!`.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, ClientBuilder, Era, ErrorKind, ProtocolMode, StdioCommand, ToolResult};
use smthrs_mcp_testkit::bridge::{Bridge, BridgeOptions};
use support::eras::{Via, both_transports};
use support::*;
use tokio::task::JoinHandle;

/// A client plus whatever must outlive it (the HTTP bridge).
struct Session {
    client: Client,
    _bridge: Option<Bridge>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.client.fmt(f)
    }
}

impl std::ops::Deref for Session {
    type Target = Client;
    fn deref(&self) -> &Client {
        &self.client
    }
}

async fn open(via: Via, builder: ClientBuilder, server: Server) -> smthrs_mcp::Result<Session> {
    match via {
        Via::Stdio => Ok(Session {
            client: builder.connect(server.stdio()).await?,
            _bridge: None,
        }),
        Via::Http => {
            let bridge = Bridge::start(scripted_server(), server.args, BridgeOptions::default());
            let transport = HttpTransport::builder("bridge", bridge.url()).build()?;
            Ok(Session {
                client: builder.connect(transport).await?,
                _bridge: Some(bridge),
            })
        }
    }
}

both_transports!(
    handshake_proposes_version_and_identity_then_lists,
    legacy_mode_sends_no_probe_and_the_same_bytes,
    is_error_result_is_success,
    unknown_tool_is_refused_before_any_frame,
    stdout_noise_is_dropped,
    ping_is_answered_with_the_exact_id,
    unsupported_server_request_gets_method_not_found,
    replies_to_unknown_ids_are_dropped,
    null_id_error_goes_to_the_observer_and_keeps_the_session,
    malformed_envelope_ends_the_session_for_everyone,
    deep_inbound_message_is_a_protocol_error,
    deep_outbound_arguments_are_refused_and_the_session_stays_open,
    oversized_outbound_frame_is_refused_and_the_session_stays_open,
    infinite_number_is_a_protocol_error,
    unsupported_protocol_version_is_refused,
    a_2024_11_05_server_is_accepted_and_what_it_lacks_is_absent,
    server_without_tools_connects_with_an_empty_catalog,
    stalled_initialize_times_out,
    stalled_tools_list_times_out,
    timed_out_call_sends_one_cancellation,
    dropped_call_sends_one_cancellation,
    initialize_is_never_cancelled,
    answered_call_is_never_cancelled,
    catalog_pages_are_walked,
    catalog_rules_refuse_bad_catalogs,
    a_catalog_past_max_tools_names_how_far_past,
    null_catalog_members_are_refused_by_name,
    close_records_scope_closed_for_later_calls,
    closed_resolves_with_the_terminal_error,
    closed_resolves_when_the_client_closes,
    close_right_after_a_timeout_still_sends_the_cancellation,
    close_with_a_call_in_flight_cancels_it,
    dropping_the_client_right_after_a_timeout_still_sends_the_cancellation,
);

/// Opens a session that must connect.
async fn connected_via(via: Via, builder: ClientBuilder, server: Server) -> Session {
    open(via, builder, server).await.expect("connect")
}

/// Opens a session whose traffic is recorded.
async fn connected_recorded(
    via: Via,
    builder: ClientBuilder,
    server: Server,
) -> (Session, Recording) {
    let rec = Recording::new();
    let session = connected_via(via, builder, rec.attach(server)).await;
    (session, rec)
}

/// Opens a session that must fail to connect, and returns why.
async fn refused(via: Via, builder: ClientBuilder, server: Server) -> smthrs_mcp::Error {
    open(via, builder, server)
        .await
        .expect_err("the connection must fail")
}

/// A client whose requests time out after `ms` milliseconds.
fn request_timeout(name: &str, ms: u64) -> ClientBuilder {
    Client::builder(name).limits(limits(|l| l.request_timeout_ms = ms))
}

/// A client whose handshake times out after `ms` milliseconds.
fn handshake_timeout(name: &str, ms: u64) -> ClientBuilder {
    Client::builder(name).limits(limits(|l| l.handshake_timeout_ms = ms))
}

/// Calls `echo` with `text`.
async fn echo(client: &Client, text: &str) -> smthrs_mcp::Result<ToolResult> {
    client.call_tool("echo", args(json!({"text": text}))).await
}

/// Calls `echo` with `text`, which must succeed, and returns the text echoed.
async fn echoed(client: &Client, text: &str) -> String {
    text_of(&echo(client, text).await.expect("echo succeeds"))
}

/// Calls `echo`, which must fail, and returns the error.
async fn echo_fails(client: &Client) -> smthrs_mcp::Error {
    echo(client, "x").await.expect_err("echo must fail")
}

/// Calls `slow` (the server sleeps `ms` milliseconds before answering).
async fn slow(client: &Client, ms: u64) -> smthrs_mcp::Result<ToolResult> {
    client.call_tool("slow", args(json!({"ms": ms}))).await
}

/// Starts a 5 s `slow` call on its own task.
fn spawn_slow_call(client: &Client) -> JoinHandle<smthrs_mcp::Result<ToolResult>> {
    let client = client.clone();
    tokio::spawn(async move { slow(&client, 5000).await })
}

/// Starts a task waiting for the session to end.
fn spawn_closed_watcher(client: &Client) -> JoinHandle<smthrs_mcp::Error> {
    let client = client.clone();
    tokio::spawn(async move { client.closed().await })
}

/// What a watcher from `spawn_closed_watcher` resolved with; `why` names
/// the expectation when it does not resolve within 30 s.
async fn closed_within_30s(watcher: JoinHandle<smthrs_mcp::Error>, why: &str) -> smthrs_mcp::Error {
    guard(why, watcher).await.expect("the watcher task")
}

/// The recorded methods other than the `server/discover` probe.
fn methods_after_probe(rec: &Recording) -> Vec<String> {
    let mut methods = rec.methods();
    methods.retain(|m| m != "server/discover");
    methods
}

/// How many `method` requests were recorded.
fn count_of(rec: &Recording, method: &str) -> usize {
    rec.methods().iter().filter(|m| *m == method).count()
}

async fn handshake_proposes_version_and_identity_then_lists(via: Via) {
    let (client, rec) = connected_recorded(via, Client::builder("basic"), scenario("basic")).await;
    assert_eq!(client.protocol_version(), "2025-06-18");
    let names: Vec<&str> = client.catalog().iter().map(|t| t.name()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"add"),
        "{names:?}"
    );
    client.close().await;
    let mut lines = rec.lines();
    // The default (`auto`) probes first; a legacy server answers -32601 (the HTTP
    // bridge refuses it before the child sees it), and the legacy handshake
    // follows unchanged.
    if matches!(via, Via::Stdio) {
        let probe = lines.remove(0);
        assert_eq!(probe["method"], "server/discover");
        let meta = &probe["params"]["_meta"];
        assert_eq!(
            meta["io.modelcontextprotocol/protocolVersion"],
            "2026-07-28"
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({})
        );
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"],
            "smithers"
        );
    }
    let init = &lines[0];
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["params"]["clientInfo"]["name"], "smithers");
    assert_eq!(
        init["params"]["clientInfo"]["version"],
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        methods_after_probe(&rec)[..3],
        ["initialize", "notifications/initialized", "tools/list"]
    );
}

async fn is_error_result_is_success(via: Via) {
    let client = connected_via(via, Client::builder("basic"), scenario("basic")).await;
    let result = client
        .call_tool("fail", args(json!({})))
        .await
        .expect("data, not failure");
    assert!(result.is_error);
    // Every call in flight holds this state (2488 bytes on rustc 1.95): a
    // wrapper that kept the call's future twice (an `async fn` awaiting its
    // argument) made it 6120, the modern era's rare paths unboxed 3080.
    let call = client.call_tool("echo", args(json!({"text": "hi"})));
    let size = std::mem::size_of_val(&call);
    assert!(size <= 3000, "a call's future is {size} bytes");
    let result = call.await.unwrap();
    assert!(!result.is_error);
    assert_eq!(text_of(&result), "hi");
    client.close().await;
}

async fn unknown_tool_is_refused_before_any_frame(via: Via) {
    let (client, rec) = connected_recorded(via, Client::builder("basic"), scenario("basic")).await;
    let error = client.call_tool("nope", args(json!({}))).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ToolNotFound);
    client.close().await;
    assert!(!rec.methods().iter().any(|m| m == "tools/call"));
}

async fn stdout_noise_is_dropped(via: Via) {
    let client = open(via, Client::builder("noisy"), scenario("noise"))
        .await
        .expect("noise is tolerated");
    assert_eq!(echoed(&client, "still here").await, "still here");
    client.close().await;
}

async fn ping_is_answered_with_the_exact_id(via: Via) {
    let client = connected_via(via, Client::builder("ping"), scenario("ping-during-call")).await;
    for tool in ["echo", "add"] {
        let result = client
            .call_tool(tool, args(json!({"text": "x", "a": 1, "b": 2})))
            .await
            .unwrap();
        let report: Value = serde_json::from_str(&text_of(&result)).expect("report json");
        assert_eq!(report["ping"]["exact_id"], true, "{tool}: {report}");
        assert_eq!(report["ping"]["empty_result"], true, "{tool}: {report}");
    }
    client.close().await;
}

async fn unsupported_server_request_gets_method_not_found(via: Via) {
    let command = inline(json!({
        "on_call": {"echo": {"request_first": {"method": "sampling/createMessage", "id": 7}}}
    }));
    let client = connected_via(via, Client::builder("req"), command).await;
    let text = echoed(&client, "x").await;
    assert!(text.contains("-32601"), "{text}");
    client.close().await;
}

async fn replies_to_unknown_ids_are_dropped(via: Via) {
    let command = inline(json!({
        "on_call": {"echo": {"raw_lines": [
            {"jsonrpc": "2.0", "id": 9999, "result": {}},
            {"jsonrpc": "2.0", "id": "not-ours", "result": {"content": []}},
            {"jsonrpc": "2.0", "id": 123456, "error": {"code": 1, "message": "x"}}
        ]}}
    }));
    let client = connected_via(via, Client::builder("ids"), command).await;
    assert_eq!(echoed(&client, "ok").await, "ok");
    client.close().await;
}

async fn null_id_error_goes_to_the_observer_and_keeps_the_session(via: Via) {
    let observer = Collect::new();
    let builder = Client::builder("nullid").diagnostics(observer.clone());
    let client = connected_via(via, builder, scenario("null-id-error")).await;
    assert_eq!(echoed(&client, "after").await, "after");
    let events = observer.events();
    assert!(
        events
            .iter()
            .any(|(name, text)| name == "remote-error" && text.contains("uncorrelated failure")),
        "{events:?}"
    );
    assert!(client.terminal_error().is_none());
    client.close().await;
}

async fn malformed_envelope_ends_the_session_for_everyone(via: Via) {
    let command = inline(json!({
        "on_call": {"echo": {"reply_raw": "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{},\"error\":{\"code\":1,\"message\":\"MARKER-7731\"}}"}}
    }));
    let client = connected_via(via, Client::builder("bad"), command).await;
    let error = echo_fails(&client).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
    assert!(
        !error.to_string().contains("MARKER-7731"),
        "raw frame leaked: {error}"
    );
    let later = client
        .call_tool("add", args(json!({"a": 1, "b": 2})))
        .await
        .unwrap_err();
    assert_eq!(later, error, "later calls get the same terminal error");
    client.close().await;
    assert_eq!(client.terminal_error(), Some(error));
}

fn nest(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// The error an `echo` call meets when the server answers it with `raw`
/// (`$ID` stands for the call's id); the session is closed afterwards.
async fn echo_error_for_raw_reply(via: Via, name: &str, raw: &str) -> smthrs_mcp::Error {
    let command = inline(json!({"on_call": {"echo": {"reply_raw": raw}}}));
    let client = connected_via(via, Client::builder(name), command).await;
    let error = echo_fails(&client).await;
    client.close().await;
    error
}

async fn deep_inbound_message_is_a_protocol_error(via: Via) {
    // envelope(1) + result(2) + content array (3) + 126 more = 129 containers.
    let raw = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":\"$ID\",\"result\":{{\"content\":{}}}}}",
        nest(127)
    );
    let error = echo_error_for_raw_reply(via, "deep", &raw).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError, "{error}");
}

async fn deep_outbound_arguments_are_refused_and_the_session_stays_open(via: Via) {
    let (client, rec) = connected_recorded(via, Client::builder("deep"), scenario("basic")).await;
    // Root object is container 3: 125 more levels reach exactly 128.
    let mut ok = json!(1);
    for _ in 0..125 {
        ok = json!([ok]);
    }
    client
        .call_tool("echo", args(json!({"text": "ok", "deep": ok.clone()})))
        .await
        .expect("128 is allowed");
    let too_deep = json!({"text": "x", "deep": [ok]});
    let error = client.call_tool("echo", args(too_deep)).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
    assert_eq!(echoed(&client, "alive").await, "alive");
    client.close().await;
    assert_eq!(
        count_of(&rec, "tools/call"),
        2,
        "the refused call sent nothing"
    );
}

async fn oversized_outbound_frame_is_refused_and_the_session_stays_open(via: Via) {
    let builder = Client::builder("big").limits(limits(|l| l.max_outbound_frame_bytes = 4096));
    let (client, rec) = connected_recorded(via, builder, scenario("basic")).await;
    // Escapes count: 1500 quotes encode as 3000 bytes, plus protocol overhead.
    let error = echo(&client, &"\"".repeat(2100)).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
    assert_eq!(echoed(&client, "small").await, "small");
    client.close().await;
    assert_eq!(count_of(&rec, "tools/call"), 1);
}

async fn infinite_number_is_a_protocol_error(via: Via) {
    let raw = "{\"jsonrpc\":\"2.0\",\"id\":\"$ID\",\"result\":{\"content\":[],\"n\":1e400}}";
    let error = echo_error_for_raw_reply(via, "inf", raw).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
}

async fn unsupported_protocol_version_is_refused(via: Via) {
    let accepted = "this client accepts 2025-06-18, 2025-11-25, 2025-03-26, 2024-11-05";
    let version = |v: &str| inline(json!({"protocolVersion": v}));
    let error = refused(via, Client::builder("old"), version("2023-01-01")).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
    assert_eq!(
        error.message(),
        format!("server \"old\" answered initialize with protocol version 2023-01-01; {accepted}")
    );
    // Anything without the shape of a version is never quoted (it could be a secret).
    let odd = version("2025-06-18 ghp_0123456789abcdef");
    let error = refused(via, Client::builder("odd"), odd).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
    assert_eq!(
        error.message(),
        format!(
            "server \"odd\" answered initialize with a protocol version that is not a version; {accepted}"
        )
    );
}

/// `2024-11-05` (the archived reference servers, TypeScript SDK 1.0) is a legacy
/// version like the others: what it lacks is read as absent.
async fn a_2024_11_05_server_is_accepted_and_what_it_lacks_is_absent(via: Via) {
    let builder = Client::builder("old").protocol(ProtocolMode::Auto);
    let server = inline(json!({"protocolVersion": "2024-11-05"}));
    let client = connected_via(via, builder, server).await;
    assert_eq!(client.protocol_version(), "2024-11-05");
    assert_eq!(client.era(), Era::Legacy);
    let echo_tool = client.catalog().get("echo").unwrap();
    assert!(echo_tool.output_schema().is_none());
    let result = echo(&client, "from 2024").await.unwrap();
    assert_eq!(text_of(&result), "from 2024");
    assert!(result.structured_content.is_none());
    assert!(!result.is_error);
    client.close().await;
}

/// A server that declares no `tools` capability connects with an empty
/// catalog (nothing walked): it may offer only resources, prompts or Skills.
async fn server_without_tools_connects_with_an_empty_catalog(via: Via) {
    let server = scenario("no-tools-capability");
    let client = connected_via(via, Client::builder("notools"), server).await;
    assert!(client.catalog().is_empty());
    assert!(!client.declares("tools"));
    let error = client.call_tool("echo", args(json!({}))).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ToolNotFound);
    client.close().await;
}

async fn stalled_initialize_times_out(via: Via) {
    let error = refused(
        via,
        handshake_timeout("stall", 300),
        scenario("stalled-handshake"),
    )
    .await;
    assert_eq!(error.kind(), ErrorKind::Timeout);
}

async fn stalled_tools_list_times_out(via: Via) {
    let error = refused(
        via,
        handshake_timeout("stall", 300),
        scenario("stalled-tools-list"),
    )
    .await;
    assert_eq!(error.kind(), ErrorKind::Timeout);
}

fn cancelled_ids(rec: &Recording) -> Vec<Value> {
    rec.lines()
        .into_iter()
        .filter(|l| l["method"] == "notifications/cancelled")
        .map(|l| l["params"]["requestId"].clone())
        .collect()
}

fn call_ids(rec: &Recording) -> Vec<Value> {
    rec.lines()
        .into_iter()
        .filter(|l| l["method"] == "tools/call")
        .map(|l| l["id"].clone())
        .collect()
}

/// Waits for the first cancellation, then checks there is exactly one per
/// call written, naming it.
async fn assert_each_call_cancelled_once(rec: &Recording) {
    eventually("a cancellation recorded", || !cancelled_ids(rec).is_empty()).await;
    assert_eq!(
        cancelled_ids(rec),
        call_ids(rec),
        "one cancellation naming the call"
    );
}

/// Opens a recorded session whose requests time out after 200 ms and makes a
/// `slow` call of `ms` that must time out.
async fn timed_out_slow_call(via: Via, ms: u64) -> (Session, Recording) {
    let (client, rec) =
        connected_recorded(via, request_timeout("slow", 200), scenario("basic")).await;
    let error = slow(&client, ms).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout);
    (client, rec)
}

async fn timed_out_call_sends_one_cancellation(via: Via) {
    let (client, rec) = timed_out_slow_call(via, 2000).await;
    assert_each_call_cancelled_once(&rec).await;
    assert!(
        client.terminal_error().is_none(),
        "a timeout does not end the session"
    );
    client.close().await;
}

async fn dropped_call_sends_one_cancellation(via: Via) {
    let (client, rec) = connected_recorded(via, Client::builder("slow"), scenario("basic")).await;
    let call = slow(&client, 2000);
    // Drop the call once it has been written.
    let _ = tokio::time::timeout(Duration::from_millis(200), call).await;
    assert_each_call_cancelled_once(&rec).await;
    client.close().await;
}

/// The host closes at once after a timeout (the CLI does): the cancellation the
/// timeout owes is written before the transport is torn down.
async fn close_right_after_a_timeout_still_sends_the_cancellation(via: Via) {
    let (client, rec) = timed_out_slow_call(via, 5000).await;
    client.close().await;
    assert_each_call_cancelled_once(&rec).await;
    assert_eq!(call_ids(&rec).len(), 1);
}

/// Closing abandons a call still waiting for its reply: the server is told.
async fn close_with_a_call_in_flight_cancels_it(via: Via) {
    let (client, rec) = connected_recorded(via, Client::builder("slow"), scenario("basic")).await;
    let pending = spawn_slow_call(&client);
    eventually("the call recorded", || !call_ids(&rec).is_empty()).await;
    client.close().await;
    let error = pending.await.unwrap().unwrap_err();
    assert_eq!(error.to_string(), "connection scope closed");
    assert_each_call_cancelled_once(&rec).await;
}

/// Dropping the last handle right after a timeout: the teardown task writes the
/// owed cancellation too.
async fn dropping_the_client_right_after_a_timeout_still_sends_the_cancellation(via: Via) {
    let (session, rec) = timed_out_slow_call(via, 5000).await;
    let Session { client, _bridge } = session;
    drop(client);
    assert_each_call_cancelled_once(&rec).await;
}

async fn initialize_is_never_cancelled(via: Via) {
    let rec = Recording::new();
    let server = rec.attach(scenario("stalled-handshake"));
    let _ = refused(via, handshake_timeout("stall", 200), server).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(methods_after_probe(&rec), ["initialize"]);
}

/// `legacy` pins today's handshake: no probe, and the first frame is exactly the
/// `initialize` this client always sent.
async fn legacy_mode_sends_no_probe_and_the_same_bytes(via: Via) {
    let builder = Client::builder("basic").protocol(ProtocolMode::Legacy);
    let (client, rec) = connected_recorded(via, builder, scenario("basic")).await;
    assert_eq!(client.era(), Era::Legacy);
    client.close().await;
    let text = std::fs::read_to_string(rec.path()).unwrap();
    let first = text.lines().next().unwrap();
    let expected = format!(
        r#"{{"id":0,"jsonrpc":"2.0","method":"initialize","params":{{"capabilities":{{}},"clientInfo":{{"name":"smithers","version":"{}"}},"protocolVersion":"2025-06-18"}}}}"#,
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(first, expected);
    assert_eq!(
        rec.methods()[..3],
        ["initialize", "notifications/initialized", "tools/list"]
    );
}

async fn answered_call_is_never_cancelled(via: Via) {
    let (client, rec) = connected_recorded(via, Client::builder("basic"), scenario("basic")).await;
    echo(&client, "x").await.unwrap();
    let _ = client.call_tool("nope", args(json!({}))).await;
    client.close().await;
    assert!(cancelled_ids(&rec).is_empty());
}

async fn catalog_pages_are_walked(via: Via) {
    let server = scenario("paged-catalog");
    let (client, rec) = connected_recorded(via, Client::builder("paged"), server).await;
    assert!(client.catalog().len() >= 2);
    assert!(count_of(&rec, "tools/list") >= 2, "followed nextCursor");
    client.close().await;
}

async fn catalog_rules_refuse_bad_catalogs(via: Via) {
    for (name, edit) in [
        ("bad-name-slash", None),
        ("bad-name-invisible", None),
        ("duplicate-names", None),
        ("bad-input-schema", None),
        ("huge-tool-document", None),
        ("repeated-cursor", None),
        ("endless-pages", None),
        ("too-many-tools", Some(4u64)),
    ] {
        let builder = Client::builder(name).limits(limits(|l| {
            if let Some(max) = edit {
                l.max_tools = max;
            }
        }));
        let error = refused(via, builder, scenario(name)).await;
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{name}: {error}");
    }
}

/// A member sent as `null` is present, so it must have its type: `outputSchema: null`
/// and `nextCursor: null` fail the connection, and the message names the member.
/// A catalog past `maxTools` fails the connection (never truncated) with the
/// count the server lists and the bound: the walk goes on only to count, to the
/// end when it can, else "at least" what it reached.
async fn a_catalog_past_max_tools_names_how_far_past(via: Via) {
    for (name, max_tools, expected) in [
        ("too-many-tools", 256, "lists 257 tools; maxTools is 256"),
        ("too-many-tools", 4, "lists 257 tools; maxTools is 4"),
        // Past the bound on page 2 of 3: page 3 is still counted.
        ("paged-catalog", 1, "lists 3 tools; maxTools is 1"),
        // 10 tools a page forever: counted to maxCatalogPages (32) pages.
        (
            "endless-tools",
            25,
            "lists at least 320 tools; maxTools is 25",
        ),
    ] {
        let builder = Client::builder("many").limits(limits(|l| l.max_tools = max_tools));
        let error = refused(via, builder, scenario(name)).await;
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{name}: {error}");
        assert_eq!(
            error.message(),
            format!("server \"many\" {expected}"),
            "{name}"
        );
    }
    let builder = Client::builder("pages").limits(limits(|l| l.max_catalog_pages = 3));
    let error = refused(via, builder, scenario("endless-pages")).await;
    assert_eq!(
        error.message(),
        "tools/list page 3: the catalog has more than 3 pages; maxCatalogPages is 3"
    );
    let error = refused(via, Client::builder("doc"), scenario("huge-tool-document")).await;
    assert!(
        error.message().starts_with(
            "tools/list page 1: tools[0]: tool \"echo\" has a description plus inputSchema of 70"
        ) && error
            .message()
            .ends_with(" bytes; maxToolDocumentBytes is 65536"),
        "{error}"
    );
}

async fn null_catalog_members_are_refused_by_name(via: Via) {
    for (name, member) in [
        ("null-members", "outputSchema"),
        ("null-next-cursor", "nextCursor"),
    ] {
        let error = refused(via, Client::builder(name), scenario(name)).await;
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{name}: {error}");
        assert!(error.to_string().contains(member), "{name}: {error}");
    }
}

async fn close_records_scope_closed_for_later_calls(via: Via) {
    let client = connected_via(via, Client::builder("basic"), scenario("basic")).await;
    let pending = spawn_slow_call(&client);
    tokio::time::sleep(Duration::from_millis(100)).await;
    client.close().await;
    let error = pending.await.unwrap().unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionClosed);
    assert_eq!(error.to_string(), "connection scope closed");
    assert_eq!(echo_fails(&client).await, error);
}

async fn closed_resolves_with_the_terminal_error(via: Via) {
    // A reply with both `result` and `error` ends the session on either transport.
    let client = connected_via(via, Client::builder("bad"), scenario("malformed-envelope")).await;
    let watcher = spawn_closed_watcher(&client);
    tokio::task::yield_now().await;
    assert!(!watcher.is_finished(), "the session is up");
    let error = echo_fails(&client).await;
    let ended = closed_within_30s(watcher, "closed() resolves once the session ends").await;
    assert_eq!(ended.kind(), ErrorKind::ProtocolError, "{ended}");
    assert_eq!(Some(ended.clone()), client.terminal_error());
    assert_eq!(error, ended);
    // Once ended, at once.
    assert_eq!(client.closed().await, ended);
}

async fn closed_resolves_when_the_client_closes(via: Via) {
    let client = connected_via(via, Client::builder("basic"), scenario("basic")).await;
    let watcher = spawn_closed_watcher(&client);
    client.close().await;
    let ended = closed_within_30s(watcher, "closed() resolves on close()").await;
    assert_eq!(ended.to_string(), "connection scope closed");
}

// ---- stdio-only rules: process exit, pipes, environment, stderr ----

/// Checks that the session ended as closed, for the reason `why`.
fn assert_connection_closed(error: &smthrs_mcp::Error, why: &str) {
    assert_eq!(error.kind(), ErrorKind::ConnectionClosed, "{error}");
    assert_eq!(error.to_string(), why);
}

#[tokio::test]
async fn child_exit_fails_pending_and_later_calls_with_its_code() {
    let client = connected_via(
        Via::Stdio,
        Client::builder("exit"),
        scenario("exit-on-call"),
    )
    .await;
    let error = echo_fails(&client).await;
    assert_connection_closed(&error, "exited with code 7");
    let later = client
        .call_tool("add", args(json!({"a": 1, "b": 1})))
        .await
        .unwrap_err();
    assert_eq!(later, error);
    client.close().await;
}

#[tokio::test]
async fn stdout_eof_is_stdout_closed() {
    let server = scenario("close-stdout-after-initialized");
    let client = connected_via(Via::Stdio, Client::builder("eof"), server).await;
    assert_connection_closed(&echo_fails(&client).await, "stdout closed");
}

#[tokio::test]
async fn closed_stdin_is_stdin_closed() {
    let client = connected_via(
        Via::Stdio,
        Client::builder("stdin"),
        scenario("close-stdin"),
    )
    .await;
    // The first write after the server closed its stdin fails with EPIPE.
    let mut error = None;
    for _ in 0..20 {
        match echo(&client, "x").await {
            Err(e) => {
                error = Some(e);
                break;
            }
            Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    let error = error.expect("writes must fail");
    assert_connection_closed(&error, "stdin closed");
}

#[tokio::test]
async fn spawn_failure_is_spawn_failed_without_process_details() {
    let error = Client::builder("missing")
        .connect(StdioCommand::new("/nonexistent/secret-path/server").arg("--token=abc"))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::SpawnFailed);
    let shown = format!("{error} {error:?}");
    assert!(
        !shown.contains("secret-path") && !shown.contains("abc"),
        "{shown}"
    );
}

#[tokio::test]
async fn invalid_limits_fail_before_anything_is_spawned() {
    let rec = Recording::new();
    let bad = Client::builder("x").limits(limits(|l| l.max_tools = 0));
    let error = refused(Via::Stdio, bad, rec.attach(scenario("basic"))).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
    assert!(error.to_string().contains("maxTools"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!rec.path().exists(), "nothing was spawned");
}

#[tokio::test]
async fn child_environment_is_the_allow_list_plus_entry_env() {
    let server = scenario("print-env").env("GIVEN_VAR", "given-value");
    let client = connected_via(Via::Stdio, Client::builder("env"), server).await;
    let result = client.call_tool("env", args(json!({}))).await.unwrap();
    let env: serde_json::Map<String, Value> = serde_json::from_str(&text_of(&result)).unwrap();
    assert_eq!(env["GIVEN_VAR"], "given-value");
    for key in env.keys() {
        let allowed = smthrs_mcp::transport::stdio::INHERITED_ENV_VARS.contains(&key.as_str())
            || key.starts_with("LC_")
            || key == "GIVEN_VAR";
        assert!(allowed, "child inherited {key}");
    }
    // cargo sets CARGO_* for the test process: none may reach the child.
    assert!(std::env::var("CARGO_PKG_NAME").is_ok());
    assert!(!env.contains_key("CARGO_PKG_NAME"));
    client.close().await;
}

#[tokio::test]
async fn stderr_secrets_reach_only_the_observer_and_redacted() {
    let observer = Collect::new();
    let builder = Client::builder("leaky").diagnostics(observer.clone());
    let server = scenario("stderr-secrets").env(
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "ghp_SECRETSECRETSECRETSECRETSECRET1234",
    );
    let client = connected_via(Via::Stdio, builder, server).await;
    let error = echo_fails(&client).await;
    assert_eq!(error.to_string(), "exited with code 1");
    client.close().await;
    let events = observer.events();
    let tails: Vec<&String> = events
        .iter()
        .filter(|(n, _)| n == "stderr-tail")
        .map(|(_, t)| t)
        .collect();
    assert_eq!(tails.len(), 1, "{events:?}");
    for secret in [
        "ghp_SECRETSECRETSECRETSECRETSECRET1234",
        "sk-live-SECRETSECRETSECRET",
        "SECRETSECRET",
    ] {
        assert!(
            !tails[0].contains(secret),
            "tail leaked {secret}: {}",
            tails[0]
        );
        assert!(!format!("{error} {error:?}").contains(secret));
    }
    assert!(tails[0].contains("REDACTED"), "{}", tails[0]);
}

#[tokio::test]
async fn blocked_outbound_queue_times_out_instead_of_hanging() {
    let builder = Client::builder("stuck").limits(limits(|l| {
        l.queue_capacity = 1;
        l.request_timeout_ms = 500;
    }));
    let client = connected_via(Via::Stdio, builder, scenario("stop-reading-stdin")).await;
    // Large frames fill the pipe (64 KiB on Linux), then the one-slot queue.
    let big = "x".repeat(200_000);
    let mut calls = Vec::new();
    for _ in 0..4 {
        let client = client.clone();
        let big = big.clone();
        calls.push(tokio::spawn(async move { echo(&client, &big).await }));
    }
    for call in calls {
        let error = call.await.unwrap().unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Timeout, "{error}");
    }
    // Cancellations are owed for the calls that were written, but the server
    // reads nothing: closing still ends (within CLOSE_CANCEL_GRACE plus the
    // transport's own teardown bounds; the generous bound only catches a hang).
    tokio::time::timeout(Duration::from_secs(10), client.close())
        .await
        .expect("close() is bounded on a server that stopped reading");
}

#[tokio::test]
async fn flood_without_newline_is_a_protocol_error() {
    // The transport frames at the larger of maxFrameBytes and maxResourceBytes
    // (a resources/read reply may be that long): both at 64 KiB here.
    let builder = Client::builder("flood").limits(limits(|l| {
        l.max_frame_bytes = 64 * 1024;
        l.max_resource_bytes = 64 * 1024;
    }));
    let error = refused(Via::Stdio, builder, scenario("flood-stdout")).await;
    assert_eq!(error.kind(), ErrorKind::ProtocolError, "{error}");
    assert!(
        error
            .message()
            .ends_with("of more than 65536 bytes; maxFrameBytes is 65536"),
        "{error}"
    );
}

/// Processes whose command line mentions `needle` (Linux /proc scan).
#[cfg(target_os = "linux")]
fn processes_mentioning(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmd| String::from_utf8_lossy(cmd).contains(needle))
        .count()
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn dropping_the_last_handle_ends_the_child() {
    let rec = Recording::new();
    let needle = rec.path().to_string_lossy().to_string();
    let server = rec.attach(inline(json!({"ignore_stdin_eof": true})));
    let client = connected_via(Via::Stdio, Client::builder("drop"), server).await;
    assert_eq!(processes_mentioning(&needle), 1);
    drop(client);
    // Teardown closes stdin, waits SHUTDOWN_GRACE for an exit that this server
    // refuses, then kills it.
    eventually("the child ended", || processes_mentioning(&needle) == 0).await;
    assert_eq!(processes_mentioning(&needle), 0);
}

#[tokio::test]
async fn child_exit_is_noticed_while_a_grandchild_holds_stdout() {
    // `sh` runs a background `sleep` that inherits stdout, then execs the server:
    // when the server exits, stdout stays open. The exit must still end the
    // session (before the 2.5 s request deadline, which the 3 s sleep outlives).
    let command = StdioCommand::new("sh")
        .arg("-c")
        .arg("sleep 3 & exec \"$0\" \"$@\"")
        .arg(scripted_server())
        .arg(scenario_path("exit-on-call"));
    let client = request_timeout("wrapped", 2500)
        .connect(command)
        .await
        .expect("connect");
    assert_connection_closed(&echo_fails(&client).await, "exited with code 7");
    client.close().await;
}

#[tokio::test]
async fn invalid_server_names_are_refused_before_spawning() {
    let rec = Recording::new();
    for name in ["a/b", "line\nbreak", "zero\u{200b}width", ".."] {
        let error = refused(
            Via::Stdio,
            Client::builder(name),
            rec.attach(scenario("basic")),
        )
        .await;
        assert_eq!(error.kind(), ErrorKind::ProtocolError, "{name:?}");
    }
    assert!(!rec.path().exists(), "nothing was spawned");
}

#[tokio::test]
async fn very_deep_caller_arguments_are_refused_without_overflowing_the_stack() {
    let client = connected_via(Via::Stdio, Client::builder("deep"), scenario("basic")).await;
    // Built by hand: `json!` would copy (and recurse into) the value at each level.
    let mut deep = Value::from(1);
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let mut arguments = serde_json::Map::new();
    arguments.insert("deep".into(), deep);
    let error = client.call_tool("echo", arguments).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ProtocolError);
    client.close().await;
}
