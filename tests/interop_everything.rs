//! Interop with the official reference server `@modelcontextprotocol/server-everything`
//! 2026.8.31 (npm, pinned in `interop/package-lock.json`, installed by `.ci/run` with
//! `npm ci`).
//!
//! A legacy-only peer (built on the TypeScript SDK v1): it answers `server/discover`
//! with -32601 on stdio and with a 400 (-32000, "Server not initialized") on HTTP, then
//! serves `initialize` (`interop/servers/PROBES.md`). Every pair must negotiate the
//! legacy handshake (the default mode probes, then falls back).
//!
//! Change events ([`change_events`], issue 32): it declares `listChanged` on every list
//! and `resources.subscribe`; `resources/subscribe` registers a URI, and the tool
//! `toggle-subscriber-updates` sends `notifications/resources/updated` for each URI the
//! session subscribed to at once and then every 5 s (`resources/subscriptions.js`);
//! `gzip-file-as-resource` registers a session resource, which sends
//! `notifications/resources/list_changed` (given a `data:` URI it fetches nothing). It
//! sends `notifications/tools/list_changed` once, unasked, right after
//! `notifications/initialized` (it registers its conditional tools then), and nothing
//! changes its prompts.
//!
//! Locally, when `interop/node_modules` is absent, the tests print a notice and pass
//! vacuously; under CI (`CI=true`) a missing peer is a failure, so CI cannot go green
//! without running them.

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use smthrs_mcp::events::{Interest, ServerEvent};
use smthrs_mcp::session::Subscription;
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{CallEvent, CallOptions, Client, ClientBuilder, ErrorKind, StdioCommand};
use support::interop;
use support::interop::{Era, Reach};
use support::{args, text_of};

const PEER: &str = "everything";

fn everything_entry() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    interop::require(
        path.exists().then_some(path),
        "interop/node_modules/@modelcontextprotocol/server-everything",
        "cd interop && npm ci",
    )
}

/// server-everything as a child over stdio.
fn stdio(entry: &Path) -> Reach<'static, StdioCommand> {
    Reach::stdio(StdioCommand::new("node").arg(entry).arg("stdio"))
}

/// A session opened by `builder`; the peer is legacy-only, so every pair is legacy.
async fn open(reach: Reach<'_, impl smthrs_mcp::Transport>, builder: ClientBuilder) -> Client {
    let client = reach.connect(builder).await;
    interop::expect_era(&client, Era::Legacy);
    client
}

/// [`open`] in the default mode, timed and reported ([`interop::connect`]).
async fn open_reported(reach: Reach<'_, impl smthrs_mcp::Transport>) -> Client {
    let client = reach
        .connect_reported(Client::builder(PEER), PEER, Era::Legacy)
        .await;
    interop::expect_era(&client, Era::Legacy);
    client
}

/// The catalog, `echo` (of `message`), `get-sum`, `get-structured-content` (for
/// `location`), every content block type, and progress.
async fn everything_tools_and_calls(client: &Client, message: &str, location: &str) {
    for name in [
        "echo",
        "get-sum",
        "get-structured-content",
        "trigger-long-running-operation",
        "get-env",
    ] {
        assert!(client.catalog().get(name).is_some(), "missing {name}");
    }
    let echoed = client
        .call_tool("echo", args(json!({ "message": message })))
        .await
        .unwrap();
    assert!(text_of(&echoed).contains(message), "{echoed:?}");
    let sum = client
        .call_tool("get-sum", args(json!({"a": 2, "b": 40})))
        .await
        .unwrap();
    assert!(text_of(&sum).contains("42"), "{sum:?}");
    let structured = client
        .call_tool(
            "get-structured-content",
            args(json!({ "location": location })),
        )
        .await
        .unwrap();
    assert!(structured.structured_content.is_some(), "{structured:?}");
    content_blocks_of_every_type(client).await;
    long_running_operation_reports_progress(client).await;
}

/// A 5 s `trigger-long-running-operation` past the 300 ms request timeout
/// ([`interop::timeout_limits`]) fails with `Timeout`.
async fn long_operation_times_out(client: &Client) {
    let error = client
        .call_tool(
            "trigger-long-running-operation",
            args(json!({"duration": 5, "steps": 5})),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Timeout);
}

/// `get-sum` of 1 and 2 answers 3: the session serves calls.
async fn still_adds(client: &Client) {
    let sum = client
        .call_tool("get-sum", args(json!({"a": 1, "b": 2})))
        .await
        .unwrap();
    assert!(text_of(&sum).contains('3'));
}

#[tokio::test]
async fn stdio_tools_and_calls() {
    let Some(entry) = everything_entry() else {
        return;
    };
    let client = open_reported(stdio(&entry)).await;
    everything_tools_and_calls(&client, "hi there", "New York").await;
    client.close().await;
}

#[tokio::test]
async fn stdio_env_does_not_leak_our_secrets() {
    let Some(entry) = everything_entry() else {
        return;
    };
    // CARGO_* variables are set in this test process; a planted value in the child's
    // own env must arrive, nothing else outside the allow-list may.
    let client = Client::builder("everything")
        .connect(
            StdioCommand::new("node")
                .arg(&entry)
                .arg("stdio")
                .env("GIVEN_TO_CHILD", "visible-by-design"),
        )
        .await
        .unwrap();
    let env = client.call_tool("get-env", args(json!({}))).await.unwrap();
    let shown = text_of(&env);
    assert!(shown.contains("visible-by-design"), "{shown}");
    assert!(
        !shown.contains("CARGO_PKG_NAME"),
        "host environment leaked: {shown}"
    );
    assert!(!shown.contains("CARGO_MANIFEST_DIR"));
    client.close().await;
}

#[tokio::test]
async fn stdio_timeout_then_cancel() {
    let Some(entry) = everything_entry() else {
        return;
    };
    let builder = Client::builder(PEER).limits(interop::timeout_limits());
    let client = open(stdio(&entry), builder).await;
    long_operation_times_out(&client).await;
    // The session survives the cancellation and serves the next call.
    tokio::time::sleep(Duration::from_millis(50)).await;
    still_adds(&client).await;
    client.close().await;
}

/// `trigger-long-running-operation` sends `notifications/progress` for each
/// step when the call carries a progress token (it does, with an observer):
/// the observer gets every step, in order, with the total, before the result.
/// Without an observer no token is sent and the result still arrives.
async fn long_running_operation_reports_progress(client: &Client) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let observer = seen.clone();
    let options = CallOptions::new().on_event(move |event| {
        if let CallEvent::Progress(progress) = event {
            observer
                .lock()
                .unwrap()
                .push((progress.progress, progress.total));
        }
    });
    let arguments = args(json!({"duration": 1, "steps": 3}));
    let long = client
        .call_tool_with("trigger-long-running-operation", arguments, &options)
        .await
        .unwrap();
    assert!(!long.is_error, "{long:?}");
    assert_eq!(
        *seen.lock().unwrap(),
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );
    let quiet = client
        .call_tool(
            "trigger-long-running-operation",
            args(json!({"duration": 0.3, "steps": 3})),
        )
        .await
        .unwrap();
    assert!(!quiet.is_error, "{quiet:?}");
}

/// server-everything in `streamableHttp` mode on a free loopback port; killed on drop.
struct HttpEverything {
    child: std::process::Child,
    url: String,
}

impl HttpEverything {
    async fn start(entry: &std::path::Path) -> HttpEverything {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("node")
            .arg(entry)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("node");
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        HttpEverything {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    fn transport(&self) -> HttpTransport {
        HttpTransport::builder("everything", self.url.as_str())
            .build()
            .unwrap()
    }

    /// How a test reaches this server (whose output is not kept).
    fn reach(&self) -> Reach<'_, HttpTransport> {
        Reach::http(self.transport(), String::new)
    }
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn http_tools_and_calls() {
    let Some(entry) = everything_entry() else {
        return;
    };
    let server = HttpEverything::start(&entry).await;
    let client = open_reported(server.reach()).await;
    everything_tools_and_calls(&client, "over http", "Chicago").await;
    client.close().await;
}

#[tokio::test]
async fn http_timeout_then_cancel() {
    let Some(entry) = everything_entry() else {
        return;
    };
    let server = HttpEverything::start(&entry).await;
    let builder = Client::builder(PEER).limits(interop::timeout_limits());
    let client = open(server.reach(), builder).await;
    long_operation_times_out(&client).await;
    still_adds(&client).await;
    client.close().await;
}

/// Tools that answer with every block type the schema names besides text
/// (an image, annotations, resource links, embedded text and blob resources):
/// each result passes the §1.5 checks and is returned as sent, and typed by
/// `tool_content` as the blocks they are.
async fn content_blocks_of_every_type(client: &Client) {
    use smthrs_mcp::content::{ContentBlock, ContentBounds, tool_content};

    let mut kinds = Vec::new();
    for (tool, arguments) in [
        ("get-tiny-image", json!({})),
        (
            "get-annotated-message",
            json!({"messageType": "error", "includeImage": true}),
        ),
        ("get-resource-links", json!({"count": 4})),
        (
            "get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 2}),
        ),
        (
            "get-resource-reference",
            json!({"resourceType": "Blob", "resourceId": 3}),
        ),
    ] {
        let result = client
            .call_tool(tool, args(arguments))
            .await
            .unwrap_or_else(|error| panic!("{tool}: {error}"));
        assert!(!result.is_error, "{tool}: {result:?}");
        let blocks = tool_content(result.content.clone(), &ContentBounds::default())
            .unwrap_or_else(|error| panic!("{tool}: {error}"));
        kinds.extend(blocks.iter().map(|block| block.kind().to_owned()));
        if tool == "get-tiny-image" {
            let image = blocks.iter().find_map(|block| match block {
                ContentBlock::Image(image) => Some(image),
                _ => None,
            });
            assert!(
                image.is_some_and(|image| image.data.starts_with(b"\x89PNG")),
                "{blocks:?}"
            );
        }
    }
    for kind in ["text", "image", "resource_link", "resource"] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} in {kinds:?}");
    }
}

/// Resources, templates, reads (text and blob), prompts, a prompt with
/// arguments, and a completion, against server-everything (issue 32): what a
/// real server that nobody here wrote offers besides tools.
async fn offers_besides_tools(client: &Client) {
    use smthrs_mcp::completion::CompletionRef;
    use smthrs_mcp::content::{ContentBlock, ResourceData};

    let resources = client.list_resources().await.expect("resources/list");
    let doc = "demo://resource/static/document/architecture.md";
    assert!(
        resources.entries.iter().any(|r| r.uri == doc),
        "{:?}",
        resources.entries.iter().map(|r| &r.uri).collect::<Vec<_>>()
    );
    let read = client.read_resource(doc).await.expect("resources/read");
    match &read.contents[0].data {
        ResourceData::Text(text) => assert!(!text.is_empty()),
        other => panic!("a text document, got {other:?}"),
    }
    let templates = client
        .list_resource_templates()
        .await
        .expect("resources/templates/list");
    assert!(
        templates
            .entries
            .iter()
            .any(|t| t.uri_template == "demo://resource/dynamic/blob/{resourceId}"),
        "{:?}",
        templates
            .entries
            .iter()
            .map(|t| &t.uri_template)
            .collect::<Vec<_>>()
    );
    let blob = client
        .read_resource("demo://resource/dynamic/blob/1")
        .await
        .expect("a blob read");
    assert!(
        matches!(&blob.contents[0].data, ResourceData::Blob(bytes) if !bytes.is_empty()),
        "{blob:?}"
    );

    let prompts = client.list_prompts().await.expect("prompts/list");
    let names: Vec<&str> = prompts.entries.iter().map(|p| p.name.as_str()).collect();
    for name in ["simple-prompt", "args-prompt", "completable-prompt"] {
        assert!(names.contains(&name), "{names:?}");
    }
    let prompt = client
        .get_prompt("args-prompt", args(json!({"city": "Paris"})))
        .await
        .expect("prompts/get");
    match &prompt.messages[0].content {
        ContentBlock::Text(text) => assert!(text.text.contains("Paris"), "{}", text.text),
        other => panic!("a text message, got {other:?}"),
    }
    let missing = client
        .get_prompt("args-prompt", args(json!({})))
        .await
        .expect_err("city is required: refused before sending");
    assert_eq!(missing.kind(), ErrorKind::ProtocolError);

    let completion = client
        .complete(
            &CompletionRef::Prompt {
                name: "completable-prompt".into(),
            },
            "department",
            "Eng",
            serde_json::Map::new(),
        )
        .await
        .expect("completion/complete");
    assert_eq!(completion.values, ["Engineering"]);
}

#[tokio::test]
async fn stdio_resources_prompts_and_completion() {
    let Some(entry) = everything_entry() else {
        return;
    };
    let client = open_reported(stdio(&entry)).await;
    offers_besides_tools(&client).await;
    client.close().await;
}

#[tokio::test]
async fn http_resources_prompts_and_completion() {
    let Some(entry) = everything_entry() else {
        return;
    };
    let server = HttpEverything::start(&entry).await;
    let client = open_reported(server.reach()).await;
    offers_besides_tools(&client).await;
    client.close().await;
}

/// The static resource the change-event test subscribes to.
const DOC: &str = "demo://resource/static/document/architecture.md";

/// Takes events until `wanted` comes, allowing only `besides` on the way.
async fn wait_for(sub: &mut Subscription, wanted: ServerEvent, besides: &[ServerEvent]) {
    loop {
        match interop::next_event(sub).await {
            Some(event) if event == wanted => return,
            Some(event) if besides.contains(&event) => {}
            other => panic!(
                "waiting for {wanted:?}, got {other:?} (end: {:?})",
                sub.end()
            ),
        }
    }
}

/// Legacy change events: `resources/subscribe` for one static document, its
/// timer-driven updates, a resource list change, then `resources/unsubscribe` on close
/// with the session going on. `drops` must be the session's observer.
async fn change_events(client: &Client, drops: &interop::Drops) {
    let asked = Interest::every_list().resource(DOC);
    let mut sub = support::guard("subscribe", client.subscribe(asked.clone()))
        .await
        .expect("subscribe to every list and one document");
    // Legacy: what the server declared of what was asked.
    assert_eq!(sub.honoured(), &asked);

    let toggle = || client.call_tool("toggle-subscriber-updates", args(json!({})));
    let started = support::guard("start the updates", toggle()).await.unwrap();
    assert!(text_of(&started).contains("Started"), "{started:?}");
    // Its one unasked tool-list change may still be on its way (HTTP: on the
    // standalone stream, which opened after `notifications/initialized`).
    let early = [ServerEvent::ToolsListChanged];
    wait_for(&mut sub, interop::updated(DOC), &early).await;

    let gzip = client.call_tool(
        "gzip-file-as-resource",
        args(json!({
            "name": "subscribed.gz",
            "data": "data:text/plain;base64,aGVsbG8=",
            "outputType": "resourceLink",
        })),
    );
    let linked = support::guard("gzip-file-as-resource", gzip).await.unwrap();
    assert!(!linked.is_error, "{linked:?}");
    let besides = [ServerEvent::ToolsListChanged, interop::updated(DOC)];
    wait_for(&mut sub, ServerEvent::ResourcesListChanged, &besides).await;

    let stopped = support::guard("stop the updates", toggle()).await.unwrap();
    assert!(text_of(&stopped).contains("Stopped"), "{stopped:?}");
    assert!(sub.end().is_none(), "{:?}", sub.end());
    assert_eq!(drops.taken(), [], "notifications the client refused");
    support::guard("close (resources/unsubscribe)", sub.close()).await;
    let sum = support::guard(
        "get-sum",
        client.call_tool("get-sum", args(json!({"a": 1, "b": 2}))),
    )
    .await
    .unwrap();
    assert!(text_of(&sum).contains('3'), "{sum:?}");
}

#[tokio::test]
async fn stdio_change_events() {
    let Some(entry) = everything_entry() else {
        return;
    };
    let drops = interop::Drops::new();
    let client = open(
        stdio(&entry),
        Client::builder(PEER).diagnostics(drops.clone()),
    )
    .await;
    change_events(&client, &drops).await;
    client.close().await;
}

#[tokio::test]
async fn http_change_events() {
    let Some(entry) = everything_entry() else {
        return;
    };
    let server = HttpEverything::start(&entry).await;
    let drops = interop::Drops::new();
    let client = open(
        server.reach(),
        Client::builder(PEER).diagnostics(drops.clone()),
    )
    .await;
    change_events(&client, &drops).await;
    client.close().await;
}
