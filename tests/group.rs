//! `ClientGroup`: bounded concurrent connects, cleanup when one fails or the
//! caller gives up (real children), one shared HTTP client (real loopback hyper
//! servers counting connections and tokens), the era cache per origin (the
//! server counts the probes), and calls routed by flow name.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::Method;
use secrecy::SecretString;
use serde_json::{Map, Value, json};
use smthrs_mcp::flows::{ProjectionErrorKind, ProjectionOptions};
use smthrs_mcp::group::{ClientGroup, EraCache, GroupEntry, GroupError};
use smthrs_mcp::transport::http::{HttpTransport, SharedHttpClient};
use smthrs_mcp::{Client, Era, ErrorKind, Limits, ProtocolMode, StdioCommand};
use smthrs_mcp_testkit::http_server::{
    Body, Recorded, TestServer, full, initialize_result, json, status, with_header,
};
use support::text_of;

// ---------------------------------------------------------------------------------
// A loopback MCP server over Streamable HTTP, one endpoint per path
// ---------------------------------------------------------------------------------

/// What the loopback server observed beyond the request log.
#[derive(Default)]
struct Observed {
    /// `initialize` requests being answered right now, and the most at once.
    initializing: AtomicUsize,
    most_initializing: AtomicUsize,
    sessions: AtomicUsize,
}

/// How the loopback server answers.
#[derive(Clone, Copy)]
struct Behaviour {
    /// How long each `initialize` is held before its answer.
    hold: Duration,
}

/// A legacy Streamable HTTP server on every path, except paths starting with
/// `/modern`: a 2026-07-28-only server (refuses `initialize` with -32022).
/// Legacy paths refuse the probe as a stateful Go server does (plain-text
/// `400`). `tools/call` of the tool `whoami` answers with the path.
async fn loopback(behaviour: Behaviour) -> (TestServer, Arc<Observed>) {
    let observed = Arc::new(Observed::default());
    let seen = observed.clone();
    let server = TestServer::start(move |request: Recorded| {
        let seen = seen.clone();
        async move { answer(request, behaviour, &seen).await }
    })
    .await;
    (server, observed)
}

async fn answer(request: Recorded, behaviour: Behaviour, seen: &Observed) -> http::Response<Body> {
    let path = request.uri.path().to_owned();
    match request.method {
        Method::GET => return status(405),
        Method::DELETE => return status(200),
        _ => {}
    }
    let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
        return status(400);
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let method = message["method"].as_str().unwrap_or("").to_owned();
    let modern = path.starts_with("/modern");
    let reply =
        |result: Value| json(&json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string());
    match method.as_str() {
        "server/discover" if modern => reply(json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "loop", "version": "1"}},
        })),
        "server/discover" => full(400, "text/plain", "missing session id"),
        "initialize" if modern => full(
            400,
            "application/json",
            json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32022, "message": "unsupported", "data": {"supported": ["2026-07-28"]}
            }})
            .to_string(),
        ),
        "initialize" => {
            let now = seen.initializing.fetch_add(1, Ordering::SeqCst) + 1;
            seen.most_initializing.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(behaviour.hold).await;
            seen.initializing.fetch_sub(1, Ordering::SeqCst);
            let session = seen.sessions.fetch_add(1, Ordering::SeqCst);
            with_header(
                reply(initialize_result("loop", json!({"tools": {}}))),
                "mcp-session-id",
                &format!("session-{session}"),
            )
        }
        _ if id.is_null() => status(202),
        "tools/list" => reply(json!({"tools": [{
            "name": "whoami",
            "description": "Answers with the endpoint's path",
            "inputSchema": {"type": "object"},
        }]})),
        "tools/call" if path.starts_with("/failing") => status(500),
        "tools/call" => reply(json!({
            "content": [{"type": "text", "text": path}],
            "isError": false,
        })),
        _ => reply(json!({})),
    }
}

fn quick() -> Behaviour {
    Behaviour {
        hold: Duration::ZERO,
    }
}

/// The JSON-RPC method of a recorded POST.
fn rpc_method(request: &Recorded) -> Option<String> {
    let message: Value = serde_json::from_slice(&request.body).ok()?;
    message["method"].as_str().map(str::to_owned)
}

/// How many POSTs to `path` carried `method`.
fn count(server: &TestServer, path: &str, method: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.uri.path() == path && rpc_method(r).as_deref() == Some(method))
        .count()
}

fn url(server: &TestServer, path: &str) -> String {
    format!("http://{}{path}", server.addr)
}

fn http(
    server: &TestServer,
    name: &str,
    path: &str,
    shared: Option<&SharedHttpClient>,
) -> HttpTransport {
    let mut builder = HttpTransport::builder(name, url(server, path));
    if let Some(shared) = shared {
        builder = builder.http_client(shared.clone());
    }
    builder.build().unwrap()
}

fn args() -> Map<String, Value> {
    Map::new()
}

// ---------------------------------------------------------------------------------
// Bounded concurrency
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn at_most_max_concurrent_connects_handshakes_run_at_once() {
    let behaviour = Behaviour {
        hold: Duration::from_millis(150),
    };
    for (max, expected) in [(Some(2), 2), (None, 6)] {
        let (server, observed) = loopback(behaviour).await;
        let mut group = ClientGroup::builder();
        if let Some(max) = max {
            group = group.max_concurrent_connects(max);
        }
        for i in 0..6 {
            let name = format!("s{i}");
            let transport = http(&server, &name, &format!("/s{i}"), None);
            group = group.add(
                Client::builder(name).protocol(ProtocolMode::Legacy),
                transport,
            );
        }
        let group = group.connect().await.unwrap();
        assert_eq!(group.len(), 6);
        assert_eq!(
            observed.most_initializing.load(Ordering::SeqCst),
            expected,
            "max_concurrent_connects {max:?}"
        );
        group.close().await;
    }
}

/// A bound past what a semaphore holds (`usize::MAX`) is no bound, not a panic.
#[tokio::test]
async fn the_largest_max_concurrent_connects_connects() {
    let (server, _) = loopback(quick()).await;
    let group = ClientGroup::builder()
        .max_concurrent_connects(usize::MAX)
        .add(
            Client::builder("a").protocol(ProtocolMode::Legacy),
            http(&server, "a", "/a", None),
        )
        .connect()
        .await
        .expect("connects");
    assert_eq!(group.len(), 1);
    group.close().await;
}

#[tokio::test]
async fn zero_concurrent_connects_and_duplicate_names_are_refused_before_anything_starts() {
    let (server, _) = loopback(quick()).await;
    let refused = ClientGroup::builder()
        .max_concurrent_connects(0)
        .add(Client::builder("a"), http(&server, "a", "/a", None))
        .connect()
        .await
        .unwrap_err();
    let GroupError::Connect(error) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(error.kind(), ErrorKind::InvalidConfig);
    assert!(
        error.message().contains("max_concurrent_connects"),
        "{error}"
    );

    let refused = ClientGroup::builder()
        .add(Client::builder("a"), http(&server, "a", "/a", None))
        .add(Client::builder("a"), http(&server, "a", "/b", None))
        .connect()
        .await
        .unwrap_err();
    let error = smthrs_mcp::Error::from(refused);
    assert_eq!(error.kind(), ErrorKind::InvalidConfig);
    assert!(error.message().contains("\"a\""), "{error}");
    assert!(server.requests().is_empty(), "nothing may be sent");
}

// ---------------------------------------------------------------------------------
// Cleanup: real children
// ---------------------------------------------------------------------------------

/// Tags this test's children so a reused pid is never mistaken for one.
const TAG_VAR: &str = "SMTHRS_GROUP_TEST_TAG";

/// A scripted server (with `scenario`) that records its pid in `record`.
fn scripted(scenario: Value, record: &Path, tag: &str) -> StdioCommand {
    let mut scenario = scenario;
    scenario["record_pid"] = json!(true);
    StdioCommand::new(support::scripted_server())
        .arg(scenario.to_string())
        .arg("--record")
        .arg(record)
        .env(TAG_VAR, tag)
}

/// The pid a scripted server recorded, waiting up to 5 s for it.
fn recorded_pid(record: &Path) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(record).unwrap_or_default();
        if let Some(pid) = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find_map(|line| line["started_pid"].as_i64())
        {
            return pid as i32;
        }
        assert!(
            Instant::now() < deadline,
            "{} recorded no pid",
            record.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `pid` is a live (non-zombie) process carrying `tag`.
fn alive(pid: i32, tag: &str) -> bool {
    support::live_process_with_env(pid, TAG_VAR, tag)
}

fn tag() -> String {
    format!("{}-{:?}", std::process::id(), Instant::now())
}

/// Three servers connect, two stall in their handshake (and outlive the end
/// of their input, so only the teardown's signals end them), one fails after
/// a moment: the group's error names the failed one, and by the time it
/// arrives every child it started is gone (the connected ones closed, the
/// stalled ones' connects dropped), long before any handshake timeout.
#[tokio::test]
async fn a_failure_in_the_middle_ends_every_session_before_the_error_returns() {
    let dir = tempfile::tempdir().unwrap();
    let tag = tag();
    let mut limits = Limits::default();
    limits.handshake_timeout_ms = 60_000;
    let mut group = ClientGroup::builder();
    let mut records = Vec::new();
    let servers = [
        ("ok0", json!({})),
        ("stall0", json!({"initialize": "never_reply"})),
        ("ok1", json!({})),
        (
            "broken",
            json!({"initialize": {"error": {"code": -32603, "message": "no"}}, "initialize_delay_ms": 700}),
        ),
        (
            "stall1",
            json!({"initialize": "never_reply", "ignore_stdin_eof": true}),
        ),
        ("ok2", json!({})),
    ];
    for (name, scenario) in servers {
        let record = dir.path().join(format!("{name}.jsonl"));
        let builder = Client::builder(name)
            .limits(limits)
            .protocol(ProtocolMode::Legacy);
        group = group.add(builder, scripted(scenario, &record, &tag));
        records.push(record);
    }
    let started = Instant::now();
    let error = smthrs_mcp::Error::from(group.connect().await.unwrap_err());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.kind(), ErrorKind::RemoteError, "{error}");
    assert!(error.message().starts_with("server \"broken\""), "{error}");
    let pids: Vec<i32> = records.iter().map(|r| recorded_pid(r)).collect();
    let left: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|&pid| alive(pid, &tag))
        .collect();
    assert!(
        left.is_empty(),
        "children still running when the error returned: {left:?}"
    );
}

/// Dropping the connect future (a timeout around it) ends every session it
/// opened: the connected ones and the stalled ones.
#[tokio::test]
async fn dropping_the_connect_future_ends_every_session() {
    let dir = tempfile::tempdir().unwrap();
    let tag = tag();
    let mut group = ClientGroup::builder();
    let mut records = Vec::new();
    for (name, scenario) in [
        ("ok0", json!({})),
        (
            "stall0",
            json!({"initialize": "never_reply", "ignore_stdin_eof": true}),
        ),
        ("ok1", json!({})),
        (
            "stall1",
            json!({"tools_list": "never_reply", "ignore_stdin_eof": true}),
        ),
    ] {
        let record = dir.path().join(format!("{name}.jsonl"));
        group = group.add(
            Client::builder(name).protocol(ProtocolMode::Legacy),
            scripted(scenario, &record, &tag),
        );
        records.push(record);
    }
    let connect = group.connect();
    let gave_up = tokio::time::timeout(Duration::from_millis(1500), connect).await;
    assert!(
        gave_up.is_err(),
        "the stalled servers cannot have connected"
    );
    let pids: Vec<i32> = records.iter().map(|r| recorded_pid(r)).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left: Vec<i32> = pids
            .iter()
            .copied()
            .filter(|&pid| alive(pid, &tag))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "children still running: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------------
// One shared HTTP client
// ---------------------------------------------------------------------------------

/// Three servers of one origin, connected one after another: through one
/// shared client they reuse one connection; each with a client of its own,
/// each opens its own.
#[tokio::test]
async fn servers_of_one_origin_share_the_pools_connections() {
    for shared in [Some(SharedHttpClient::new()), None] {
        let (server, _) = loopback(quick()).await;
        let mut group = ClientGroup::builder().max_concurrent_connects(1);
        for name in ["a", "b", "c"] {
            let transport = http(&server, name, &format!("/{name}"), shared.as_ref());
            group = group.add(
                Client::builder(name).protocol(ProtocolMode::Legacy),
                transport,
            );
        }
        let group = group.connect().await.unwrap();
        for name in ["a", "b", "c"] {
            let result = group
                .call(&format!("mcp/{name}/whoami"), args())
                .await
                .unwrap();
            assert_eq!(text_of(&result), format!("/{name}"));
        }
        let accepted = server.accepted();
        group.close().await;
        if shared.is_some() {
            assert_eq!(accepted, 1, "one pool, one connection");
        } else {
            assert!(accepted >= 3, "a pool each: {accepted} connections");
        }
    }
}

/// Two servers on two origins through one pool: each origin sees its own
/// token on every request, never the other's.
#[tokio::test]
async fn through_one_pool_each_token_reaches_only_its_own_origin() {
    let shared = SharedHttpClient::new();
    let (first, _) = loopback(quick()).await;
    let (second, _) = loopback(quick()).await;
    let mut group = ClientGroup::builder();
    for (name, server, token) in [("one", &first, "tok-one"), ("two", &second, "tok-two")] {
        let transport = HttpTransport::builder(name, url(server, "/mcp"))
            .bearer_token(SecretString::from(token))
            .http_client(shared.clone())
            .build()
            .unwrap();
        group = group.add(Client::builder(name), transport);
    }
    let group = group.connect().await.unwrap();
    group.call("mcp/one/whoami", args()).await.unwrap();
    group.call("mcp/two/whoami", args()).await.unwrap();
    group.close().await;
    for (server, token) in [(&first, "Bearer tok-one"), (&second, "Bearer tok-two")] {
        let requests = server.requests();
        assert!(requests.len() >= 4, "{} requests", requests.len());
        for request in requests {
            assert_eq!(
                request.header("authorization"),
                Some(token),
                "{} {}",
                request.method,
                request.uri
            );
        }
    }
}

#[test]
fn a_transport_whose_settings_differ_from_the_shared_clients_is_refused() {
    let shared = SharedHttpClient::new();
    let refused = |builder: smthrs_mcp::HttpTransportBuilder, what: &str| {
        let error = builder.http_client(shared.clone()).build().unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidConfig, "{what}");
        assert!(error.message().contains("server \"s\""), "{error}");
        assert!(error.message().contains(what), "{what}: {error}");
    };
    let base = || HttpTransport::builder("s", "https://mcp.example/mcp");
    refused(base().use_env_proxy(true), "proxy");
    refused(base().proxy("http://proxy.example:3128"), "proxy");
    refused(base().tls_roots_only(true), "TLS roots");
    refused(base().oauth(smthrs_mcp::auth::OAuth::new()), "OAuth");
    // The same settings share it.
    let proxied = SharedHttpClient::builder()
        .proxy("http://proxy.example:3128")
        .build()
        .unwrap();
    base()
        .proxy("http://proxy.example:3128")
        .http_client(proxied.clone())
        .build()
        .unwrap();
    let error = base().http_client(proxied).build().unwrap_err();
    assert!(error.message().contains("proxy"), "{error}");
    // The shared client's own settings are checked when it is built.
    let error = SharedHttpClient::builder()
        .tls_roots_only(true)
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidConfig);
    let error = SharedHttpClient::builder()
        .proxy("socks5://p:1")
        .build()
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidConfig);
}

// ---------------------------------------------------------------------------------
// The era cache
// ---------------------------------------------------------------------------------

/// Three legacy servers of one origin in `auto`: only the first is probed;
/// without the cache, each is.
#[tokio::test]
async fn the_era_cache_skips_the_probe_for_the_origins_later_servers() {
    for cached in [true, false] {
        let (server, _) = loopback(quick()).await;
        let mut group = ClientGroup::builder();
        if !cached {
            group = group.without_era_cache();
        }
        for name in ["a", "b", "c"] {
            group = group.add(
                Client::builder(name),
                http(&server, name, &format!("/{name}"), None),
            );
        }
        let group = group.connect().await.unwrap();
        assert!(group.clients().iter().all(|c| c.era() == Era::Legacy));
        let probes: usize = ["/a", "/b", "/c"]
            .iter()
            .map(|path| count(&server, path, "server/discover"))
            .sum();
        let initializes: usize = ["/a", "/b", "/c"]
            .iter()
            .map(|path| count(&server, path, "initialize"))
            .sum();
        assert_eq!(initializes, 3);
        if cached {
            assert_eq!(probes, 1, "the leader alone is probed");
            assert_eq!(count(&server, "/a", "server/discover"), 1);
        } else {
            assert_eq!(probes, 3);
        }
        group.close().await;
    }
}

/// A cached legacy era that is wrong for a server: its `initialize` is
/// refused, the full negotiation runs once (it speaks 2026-07-28), and the
/// cache forgets the origin, so the next server is probed again.
#[tokio::test]
async fn a_wrong_cached_era_falls_back_to_the_full_negotiation_once_and_is_forgotten() {
    let (server, _) = loopback(quick()).await;
    let cache = EraCache::new();
    let connect = |name: &'static str, path: &'static str| {
        let transport = http(&server, name, path, None);
        ClientGroup::builder()
            .era_cache(cache.clone())
            .add(Client::builder(name), transport)
            .connect()
    };
    let first = connect("legacy", "/legacy").await.unwrap();
    assert_eq!(first.clients()[0].era(), Era::Legacy);
    assert!(cache.knows_legacy(&url(&server, "/anything")));
    assert_eq!(cache.len(), 1);

    let second = connect("modern", "/modern").await.unwrap();
    assert_eq!(second.clients()[0].era(), Era::Modern);
    assert_eq!(
        count(&server, "/modern", "initialize"),
        1,
        "the cached era, once"
    );
    assert_eq!(
        count(&server, "/modern", "server/discover"),
        1,
        "then the probe, once"
    );
    assert!(cache.is_empty(), "the wrong entry is dropped");
    let result = second.call("mcp/modern/whoami", args()).await.unwrap();
    assert_eq!(text_of(&result), "/modern");

    let third = connect("again", "/again").await.unwrap();
    assert_eq!(
        count(&server, "/again", "server/discover"),
        1,
        "probed again"
    );
    assert!(cache.knows_legacy(&url(&server, "/")));
    for group in [first, second, third] {
        group.close().await;
    }
}

/// Stdio servers are never cached: each is a command of its own.
#[tokio::test]
async fn stdio_servers_are_each_probed() {
    let dir = tempfile::tempdir().unwrap();
    let tag = tag();
    let mut group = ClientGroup::builder().max_concurrent_connects(1);
    let mut records = Vec::new();
    for name in ["a", "b"] {
        let record = dir.path().join(format!("{name}.jsonl"));
        group = group.add(Client::builder(name), scripted(json!({}), &record, &tag));
        records.push(record);
    }
    let group = group.connect().await.unwrap();
    group.close().await;
    for record in records {
        let text = std::fs::read_to_string(&record).unwrap();
        assert_eq!(text.matches("\"server/discover\"").count(), 1, "{text}");
    }
}

// ---------------------------------------------------------------------------------
// Routing by flow name
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn calls_are_routed_by_flow_name() {
    let (server, _) = loopback(quick()).await;
    let tracker = GroupEntry::new(
        Client::builder("tracker"),
        http(&server, "tracker", "/tracker", None),
    )
    .projection(ProjectionOptions::checked(vec![], vec![], Some("bugs".into())).unwrap());
    let group = ClientGroup::builder()
        .add(
            Client::builder("wiki"),
            http(&server, "wiki", "/wiki", None),
        )
        .entry(tracker)
        .connect()
        .await
        .unwrap();
    let names: Vec<&str> = group.flows().iter().map(|f| f.name()).collect();
    assert_eq!(names, ["mcp/wiki/whoami", "bugs/whoami"], "entry order");
    assert_eq!(
        text_of(&group.call("bugs/whoami", args()).await.unwrap()),
        "/tracker"
    );
    assert_eq!(
        text_of(&group.call("mcp/wiki/whoami", args()).await.unwrap()),
        "/wiki"
    );
    assert_eq!(group.client("tracker").unwrap().server(), "tracker");

    let calls_before =
        count(&server, "/tracker", "tools/call") + count(&server, "/wiki", "tools/call");
    let error = group.call("mcp/tracker/whoami", args()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ToolNotFound, "{error}");
    let calls_after =
        count(&server, "/tracker", "tools/call") + count(&server, "/wiki", "tools/call");
    assert_eq!(
        calls_before, calls_after,
        "an unknown flow reaches no server"
    );
    group.close().await;
    assert_eq!(
        server.requests_with(Method::DELETE).len(),
        2,
        "both sessions ended"
    );
}

/// Two servers projected under one prefix: composition fails, and both
/// sessions are closed before the error returns.
#[tokio::test]
async fn a_composition_failure_closes_every_session() {
    let (server, _) = loopback(quick()).await;
    let same = || ProjectionOptions::checked(vec![], vec![], Some("same".into())).unwrap();
    let refused = ClientGroup::builder()
        .entry(
            GroupEntry::new(Client::builder("a"), http(&server, "a", "/a", None))
                .projection(same()),
        )
        .entry(
            GroupEntry::new(Client::builder("b"), http(&server, "b", "/b", None))
                .projection(same()),
        )
        .connect()
        .await
        .unwrap_err();
    let GroupError::Projection(error) = refused else {
        panic!("{refused:?}")
    };
    assert_eq!(error.kind(), ProjectionErrorKind::DuplicateFlowName);
    assert_eq!(
        server.requests_with(Method::DELETE).len(),
        2,
        "both sessions ended"
    );
}

/// A failed call keeps its session's kind (not `flow_failed`) and names the
/// server.
#[tokio::test]
async fn a_failed_call_keeps_its_kind_and_names_its_server() {
    let (server, _) = loopback(quick()).await;
    let group = ClientGroup::builder()
        .add(
            Client::builder("failing"),
            http(&server, "failing", "/failing", None),
        )
        .connect()
        .await
        .unwrap();
    let error = group.call("mcp/failing/whoami", args()).await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::HttpStatus, "{error}");
    assert!(error.message().contains("server \"failing\""), "{error}");
    group.close().await;
}

/// Per-call options reach the routed call: a cancelled token fails it with
/// `cancelled`, naming the server, and the next call without one succeeds.
#[tokio::test]
async fn per_call_options_reach_the_routed_call() {
    let (server, _) = loopback(quick()).await;
    let group = ClientGroup::builder()
        .add(
            Client::builder("wiki"),
            http(&server, "wiki", "/wiki", None),
        )
        .connect()
        .await
        .unwrap();
    let token = smthrs_mcp::CancellationToken::new();
    token.cancel();
    let options = smthrs_mcp::CallOptions::new().cancel_on(token);
    let error = group
        .call_with("mcp/wiki/whoami", args(), &options)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Cancelled, "{error}");
    assert!(error.message().contains("server \"wiki\""), "{error}");
    let result = group.call("mcp/wiki/whoami", args()).await.unwrap();
    assert_eq!(text_of(&result), "/wiki");
    group.close().await;
}

/// A host may spawn a group's connect and calls, and share the group.
#[test]
fn the_group_and_its_futures_are_send() {
    fn send<T: Send>(_: &T) {}
    fn shared<T: Send + Sync>() {}
    let connect = ClientGroup::builder()
        .add(Client::builder("a"), StdioCommand::new("true"))
        .connect();
    send(&connect);
    drop(connect);
    shared::<ClientGroup>();
    shared::<EraCache>();
    shared::<SharedHttpClient>();
    let call = |group: &'static ClientGroup| {
        let future = group.call("mcp/a/x", Map::new());
        send(&future);
    };
    let _ = call;
}
