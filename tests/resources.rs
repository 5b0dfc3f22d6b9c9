//! Resources, prompts and completion (issue 32) through the same code in both
//! eras and over both transports: the scripted server's `methods` replies, run
//! over stdio and behind the HTTP bridge, each rule once legacy and once
//! 2026-07-28. The content blocks of `tools/call` results (§1.5) too, scripted
//! with `on_call`.

mod support;

use serde_json::{Map, Value, json};
use smthrs_mcp::completion::CompletionRef;
use smthrs_mcp::content::ResourceData;
use smthrs_mcp::prompts::Prompt;
use smthrs_mcp::resources::Resource;
use smthrs_mcp::{Client, Era, ErrorKind, Limits};

use support::args;
use support::eras::*;
use support::{bulk_guard, guard};

const ERAS: [Era; 2] = [Era::Legacy, Era::Modern];

/// Connects to a scripted server with `capabilities` and `methods` in `era`.
async fn open(via: Via, era: Era, capabilities: Value, methods: Value, limits: Limits) -> Attempt {
    let scenario = json!({ "capabilities": capabilities, "methods": methods });
    open_scenario(via, era, scenario, limits).await
}

/// Connects to a scripted server running `scenario` in `era`.
async fn open_scenario(via: Via, era: Era, scenario: Value, limits: Limits) -> Attempt {
    connect_in_era(via, era, Client::builder("res").limits(limits), scenario).await
}

fn all() -> Value {
    json!({"tools": {}, "resources": {}, "prompts": {}, "completions": {}})
}

fn ok(result: Value) -> Value {
    json!({ "result": result })
}

fn error(code: i64) -> Value {
    json!({"error": {"code": code, "message": "secret remote text", "data": {"uri": "file:///x"}}})
}

async fn a_walk_follows_every_page(via: Via) {
    for era in ERAS {
        let methods = json!({
            "resources/list": [
                ok(json!({"resources": [{"uri": "file:///a", "name": "a"}], "nextCursor": "p2",
                          "ttlMs": 60000, "cacheScope": "public"})),
                ok(json!({"resources": [{"uri": "file:///b", "name": "b", "size": 3}],
                          "ttlMs": 1000, "cacheScope": "private"})),
            ],
            "resources/templates/list": [
                ok(json!({"resourceTemplates": [{"uriTemplate": "file:///{path}", "name": "files"}]})),
            ],
        });
        let a = open(via, era, all(), methods, Limits::default()).await;
        let client = a.client();
        let listed = guard("list", client.list_resources()).await.unwrap();
        let uris: Vec<_> = listed.entries.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["file:///a", "file:///b"], "{era:?}");
        assert_eq!(listed.entries[1].size, Some(3));
        match era {
            Era::Modern => {
                let hint = listed.cache.expect("modern hints");
                assert_eq!(hint.ttl, std::time::Duration::from_millis(1000));
                assert_eq!(hint.scope, smthrs_mcp::session::CacheScope::Private);
            }
            _ => assert!(listed.cache.is_none()),
        }
        let pages = a.received("resources/list");
        assert_eq!(pages.len(), 2);
        assert_eq!(pages[1]["params"]["cursor"], "p2");
        assert_eq!(
            pages[0]["params"].get("_meta").is_some(),
            era == Era::Modern,
            "_meta only in the modern era"
        );
        let templates = guard("templates", client.list_resource_templates())
            .await
            .unwrap();
        assert_eq!(templates.entries[0].uri_template, "file:///{path}");
        a.close().await;
    }
}

async fn a_duplicate_uri_fails_the_walk(via: Via) {
    for era in ERAS {
        let page = ok(json!({"resources": [
            {"uri": "file:///a", "name": "a"}, {"uri": "file:///a", "name": "again"}]}));
        let a = open(
            via,
            era,
            all(),
            json!({"resources/list": [page]}),
            Limits::default(),
        )
        .await;
        let error = guard("list", a.client().list_resources())
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
        assert!(error.message().contains("resources[1]"), "{error}");
        assert!(
            !error.message().contains("file:///a"),
            "never the uri: {error}"
        );
        a.close().await;
    }
}

async fn a_cap_is_tripped_naming_the_count_and_option(via: Via) {
    for era in ERAS {
        let methods = json!({"resources/list": [
            ok(json!({"resources": [{"uri": "file:///a", "name": "a"}], "nextCursor": "n"})),
            ok(json!({"resources": [{"uri": "file:///b", "name": "b"}, {"uri": "file:///c", "name": "c"}]})),
        ]});
        let mut limits = Limits::default();
        limits.max_resources = 2;
        let a = open(via, era, all(), methods, limits).await;
        let error = guard("list", a.client().list_resources())
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
        assert!(
            error.message().contains("3 resources")
                && error.message().contains("maxResources is 2"),
            "{error}"
        );
        a.close().await;
    }
}

async fn a_read_returns_text_and_blob_and_refuses_bad_base64(via: Via) {
    for era in ERAS {
        let methods = json!({"resources/read": [
            ok(json!({"contents": [
                {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"},
                {"uri": "file:///a.png", "mimeType": "image/png", "blob": "AAEC"},
            ]})),
            ok(json!({"contents": [{"uri": "file:///b", "blob": "A A=="}]})),
        ]});
        let a = open(via, era, all(), methods, Limits::default()).await;
        let client = a.client();
        let read = guard("read", client.read_resource("file:///a.txt"))
            .await
            .unwrap();
        assert_eq!(read.contents.len(), 2);
        assert_eq!(read.contents[0].data, ResourceData::Text("hello".into()));
        assert_eq!(read.contents[1].data, ResourceData::Blob(vec![0, 1, 2]));
        let error = guard("read", client.read_resource("file:///b"))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
        assert!(client.terminal_error().is_none(), "the session lives");
        assert_eq!(
            a.received("resources/read")[0]["params"]["uri"],
            "file:///a.txt"
        );
        a.close().await;
    }
}

async fn a_large_read_is_admitted_and_other_large_frames_are_not(via: Via) {
    for era in ERAS {
        let methods = json!({
            "resources/read": [{"big_text": 200_000}],
            "prompts/get": [{"big_text": 200_000}],
        });
        let mut limits = Limits::default();
        limits.max_frame_bytes = 64 * 1024;
        let a = open(via, era, all(), methods, limits).await;
        let client = a.client();
        let read = guard("read", client.read_resource("file:///big"))
            .await
            .unwrap();
        match &read.contents[0].data {
            ResourceData::Text(text) => assert_eq!(text.len(), 200_000),
            other => panic!("{other:?}"),
        }
        let error = guard("get", client.get_prompt("p", Map::new()))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::ProtocolError, "{error}");
        assert!(
            error.message().contains("maxFrameBytes is 65536"),
            "{error}"
        );
        a.close().await;
    }
}

/// While a read is pending the framer takes frames up to the read's bound
/// (`Limits::read_frame_bytes`, about 22.4 MiB by default), but only its reply may
/// pass `maxFrameBytes`: a notification or a noise line past it ends the session
/// with `protocol_error` naming `maxFrameBytes`, and the pending read fails with
/// it instead of waiting for a reply that never comes.
async fn a_long_notification_or_noise_line_during_a_read_ends_the_session(via: Via) {
    for era in ERAS {
        for kind in ["notification", "noise"] {
            let methods = json!({"resources/read": [{"long_line": kind, "bytes": 100_000}]});
            let mut limits = Limits::default();
            limits.max_frame_bytes = 64 * 1024;
            // A read left waiting would time out well before the hang guard.
            limits.request_timeout_ms = 15_000;
            let a = open(via, era, all(), methods, limits).await;
            let client = a.client();
            let error = guard("read", client.read_resource("file:///pending"))
                .await
                .unwrap_err();
            assert_eq!(
                error.kind(),
                ErrorKind::ProtocolError,
                "{era:?} {kind}: {error}"
            );
            assert!(
                error.message().contains("maxFrameBytes is 65536"),
                "{era:?} {kind}: {error}"
            );
            let terminal = client.terminal_error().expect("the session ended");
            assert_eq!(terminal.kind(), ErrorKind::ProtocolError, "{terminal}");
            assert!(
                terminal.message().contains("maxFrameBytes is 65536"),
                "{terminal}"
            );
            a.close().await;
        }
    }
}

/// Byte `i` of the scripted server's `big_blob` (testdata/scenarios/README.md).
fn blob_byte(i: usize) -> u8 {
    ((i % 251) ^ (i >> 12)) as u8
}

/// A blob of exactly `maxResourceBytes` (16 MiB by default, about 22.4 MiB of
/// base64 on the wire) read through a live session comes back byte for byte;
/// one byte more fails that read with `invalid_response` naming
/// `maxResourceBytes`, and the session goes on.
async fn a_blob_of_max_resource_bytes_is_read_whole_and_one_byte_more_is_refused(via: Via) {
    let max = Limits::default().max_resource_bytes;
    assert_eq!(max, 16 << 20, "the default this test is about");
    for era in ERAS {
        let methods = json!({"resources/read": [
            {"big_blob": max},
            {"big_blob": max + 1},
            ok(json!({"contents": [{"uri": "file:///small", "text": "after"}]})),
        ]});
        // The default bounds, but a request deadline of two minutes (under the
        // bulk hang guard): a debug-build 22 MiB read on a busy two-core machine
        // may pass the default one.
        let mut limits = Limits::default();
        limits.request_timeout_ms = 120_000;
        let a = open(via, era, all(), methods, limits).await;
        let client = a.client();
        let read = bulk_guard("read", client.read_resource("file:///big"))
            .await
            .unwrap();
        assert_eq!(read.contents.len(), 1);
        let ResourceData::Blob(bytes) = &read.contents[0].data else {
            panic!("{era:?}: not a blob");
        };
        assert_eq!(bytes.len() as u64, max, "{era:?}");
        let wrong = bytes
            .iter()
            .enumerate()
            .position(|(i, &byte)| byte != blob_byte(i));
        assert_eq!(wrong, None, "{era:?}: the first wrong byte");
        drop(read);

        let error = bulk_guard("read", client.read_resource("file:///big"))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{era:?}: {error}");
        assert!(
            error.message().contains(&format!("{} bytes", max + 1))
                && error
                    .message()
                    .contains(&format!("maxResourceBytes is {max}")),
            "{era:?}: {error}"
        );
        assert!(client.terminal_error().is_none(), "the session lives");
        let after = guard("read", client.read_resource("file:///small"))
            .await
            .unwrap();
        assert_eq!(after.contents[0].data, ResourceData::Text("after".into()));
        a.close().await;
    }
}

async fn not_found_for_32002_and_32602(via: Via) {
    for era in ERAS {
        let methods = json!({
            "resources/read": [error(-32002), error(-32602)],
            "prompts/get": [error(-32602)],
            "resources/list": [error(-32602)],
        });
        let a = open(via, era, all(), methods, Limits::default()).await;
        let client = a.client();
        for _ in 0..2 {
            let error = guard("read", client.read_resource("file:///gone"))
                .await
                .unwrap_err();
            assert_eq!(error.kind(), ErrorKind::NotFound, "{error}");
            assert!(!error.message().contains("secret"), "{error}");
        }
        let error = guard("get", client.get_prompt("gone", Map::new()))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::NotFound, "{error}");
        assert_eq!(error.remote_code(), Some(-32602));
        // A -32602 answering a list is a plain remote error.
        let error = guard("list", client.list_resources()).await.unwrap_err();
        assert_eq!(error.kind(), ErrorKind::RemoteError, "{error}");
        a.close().await;
    }
}

async fn an_undeclared_capability_sends_nothing(via: Via) {
    for era in ERAS {
        let a = open(via, era, json!({"tools": {}}), json!({}), Limits::default()).await;
        let client = a.client();
        let errors = [
            guard("list", client.list_resources()).await.unwrap_err(),
            guard("read", client.read_resource("file:///a"))
                .await
                .unwrap_err(),
            guard("prompts", client.list_prompts()).await.unwrap_err(),
            guard(
                "complete",
                client.complete(
                    &CompletionRef::Prompt { name: "p".into() },
                    "a",
                    "",
                    Map::new(),
                ),
            )
            .await
            .unwrap_err(),
        ];
        for error in &errors {
            assert_eq!(error.kind(), ErrorKind::MissingCapability, "{error}");
        }
        assert_eq!(
            errors[0].message(),
            "server \"res\" does not declare resources"
        );
        assert_eq!(
            errors[3].message(),
            "server \"res\" does not declare completions"
        );
        for method in [
            "resources/list",
            "resources/read",
            "prompts/list",
            "completion/complete",
        ] {
            assert!(a.received(method).is_empty(), "{method} was sent");
        }
        a.close().await;
    }
}

async fn prompt_arguments_are_checked_against_the_listing(via: Via) {
    for era in ERAS {
        let methods = json!({
            "prompts/list": [ok(json!({"prompts": [{"name": "review", "arguments": [
                {"name": "code", "required": true}, {"name": "style"}]}]}))],
            "prompts/get": [ok(json!({"description": "d", "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi"}}]}))],
        });
        let a = open(via, era, all(), methods, Limits::default()).await;
        let client = a.client();
        // Without a listing: sent as given.
        let got = guard(
            "get",
            client.get_prompt("review", args(json!({"code": "x"}))),
        )
        .await
        .unwrap();
        assert_eq!(got.messages.len(), 1);
        let listed = guard("list", client.list_prompts()).await.unwrap();
        assert_eq!(listed.entries[0].arguments.len(), 2);
        for (name, arguments) in [
            ("review", json!({})),
            ("review", json!({"code": "x", "other": "y"})),
            ("review", json!({"code": 1})),
            ("unlisted", json!({})),
        ] {
            let error = guard("get", client.get_prompt(name, args(arguments.clone())))
                .await
                .unwrap_err();
            assert_eq!(
                error.kind(),
                ErrorKind::ProtocolError,
                "{arguments}: {error}"
            );
        }
        assert_eq!(a.received("prompts/get").len(), 1, "refused locally");
        let get = &a.received("prompts/get")[0]["params"];
        assert_eq!(get["name"], "review");
        assert_eq!(get["arguments"], json!({"code": "x"}));
        a.close().await;
    }
}

async fn completion_values_are_bounded(via: Via) {
    for era in ERAS {
        let many: Vec<String> = (0..101).map(|i| format!("v{i}")).collect();
        let methods = json!({"completion/complete": [
            ok(json!({"completion": {"values": ["flask", "fastapi"], "total": 2, "hasMore": false}})),
            ok(json!({"completion": {"values": many}})),
        ]});
        let a = open(via, era, all(), methods, Limits::default()).await;
        let client = a.client();
        let reference = CompletionRef::Prompt {
            name: "review".into(),
        };
        let context = args(json!({"language": "python"}));
        let done = guard(
            "complete",
            client.complete(&reference, "framework", "f", context),
        )
        .await
        .unwrap();
        assert_eq!(done.values, ["flask", "fastapi"]);
        let error = guard(
            "complete",
            client.complete(&reference, "framework", "f", Map::new()),
        )
        .await
        .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
        let sent = &a.received("completion/complete")[0]["params"];
        assert_eq!(sent["ref"], json!({"type": "ref/prompt", "name": "review"}));
        assert_eq!(sent["argument"], json!({"name": "framework", "value": "f"}));
        assert_eq!(
            sent["context"],
            json!({"arguments": {"language": "python"}})
        );
        a.close().await;
    }
}

async fn a_modern_read_answers_input_required_in_rounds(via: Via) {
    let methods = json!({"resources/read": [
        ok(json!({"resultType": "input_required", "requestState": "s1"})),
        ok(json!({"resultType": "complete", "contents": []})),
    ]});
    let a = open(via, Era::Modern, all(), methods, Limits::default()).await;
    let read = guard("read", a.client().read_resource("file:///r"))
        .await
        .unwrap();
    assert!(read.contents.is_empty());
    let rounds = a.received("resources/read");
    assert_eq!(rounds.len(), 2);
    assert_eq!(rounds[1]["params"]["requestState"], "s1");
    assert_eq!(rounds[1]["params"]["uri"], "file:///r");
    a.close().await;
}

async fn modern_http_sends_mcp_name(via: Via) {
    let methods = json!({
        "resources/read": [ok(json!({"contents": []}))],
        "prompts/get": [ok(json!({"messages": []}))],
    });
    let a = open(via, Era::Modern, all(), methods, Limits::default()).await;
    let client = a.client();
    guard("read", client.read_resource("file:///caf\u{e9}"))
        .await
        .unwrap();
    guard("get", client.get_prompt("review", Map::new()))
        .await
        .unwrap();
    if via == Via::Http {
        let names: Vec<String> = a
            .requests()
            .iter()
            .filter_map(|r| {
                r.headers
                    .iter()
                    .find(|(name, _)| name == "mcp-name")
                    .map(|(_, value)| value.clone())
            })
            .collect();
        assert!(
            names.contains(&"=?base64?ZmlsZTovLy9jYWbDqQ==?=".to_owned()),
            "{names:?}"
        );
        assert!(names.contains(&"review".to_owned()), "{names:?}");
    }
    a.close().await;
}

async fn a_host_pages_itself_one_page_at_a_time(via: Via) {
    for era in ERAS {
        let methods = json!({
            "prompts/list": [
                ok(json!({"prompts": [{"name": "a"}], "nextCursor": "p2"})),
                ok(json!({"prompts": [{"name": "b"}], "nextCursor": "p2"})),
            ],
        });
        let a = open(via, era, all(), methods, Limits::default()).await;
        let client = a.client();
        let first = guard("page 1", client.list_page::<Prompt>(None))
            .await
            .unwrap();
        assert_eq!(first.entries[0].name, "a", "{era:?}");
        assert_eq!(first.next_cursor.as_deref(), Some("p2"), "{era:?}");
        assert_eq!(first.cache.is_some(), era == Era::Modern);
        // The second page names the cursor it was asked with: a loop, refused.
        let error = guard("page 2", client.list_page::<Prompt>(Some("p2")))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
        assert!(error.message().contains("repeats the cursor"), "{error}");
        let pages = a.received("prompts/list");
        assert_eq!(pages.len(), 2);
        assert!(pages[0]["params"].get("cursor").is_none());
        assert_eq!(pages[1]["params"]["cursor"], "p2");
        // Gated like the walk: nothing sent without the capability.
        a.close().await;
        let a = open(via, era, json!({"tools": {}}), json!({}), Limits::default()).await;
        let error = guard("gated", a.client().list_page::<Resource>(None))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::MissingCapability, "{error}");
        assert!(a.received("resources/list").is_empty());
        a.close().await;
    }
}

/// Every block type a tool may return, an unknown one, and members the schema
/// does not name.
fn good_blocks() -> Value {
    json!([
        {"type": "text", "text": "done", "annotations": {"audience": ["user"], "priority": 0.5}},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "_meta": {"k": 1}},
        {"type": "resource_link", "uri": "file:///project/src/main.rs", "name": "main.rs",
         "mimeType": "text/x-rust", "description": "the entry point"},
        {"type": "resource", "resource": {"uri": "resource://logo", "mimeType": "image/png",
         "blob": "AAEC", "annotations": {"priority": 1}}},
        {"type": "resource", "resource": {"uri": "resource://note", "text": "note"},
         "annotations": {"audience": ["assistant"]}},
        {"type": "hologram", "frames": [1, 2]},
    ])
}

async fn tool_content_blocks_are_checked(via: Via) {
    let text = json!({"type": "text", "text": "before"});
    // Each bad block, the rule named, after a good text block.
    let bad = [
        (
            json!({"type": "image", "data": "iVBORw0-Ggo=", "mimeType": "image/png"}),
            "data is not strict base64",
        ),
        (
            json!({"type": "resource_link", "uri": "file:///tmp/\u{1b}]8;;evil", "name": "main.rs"}),
            "a URI contains a control character",
        ),
        (
            json!({"type": "resource", "resource": {"uri": "file:///a", "text": "hidden", "blob": "AAEC"}}),
            "resource: the item holds both text and blob",
        ),
        (
            // 24 + 9 decoded bytes; maxResourceBytes is 32 below (the good
            // blocks hold 19).
            json!({"type": "audio", "data": "AAAAAAAAAAAA", "mimeType": "audio/wav"}),
            "the result holds 33 bytes of content by this item; maxResourceBytes is 32",
        ),
    ];
    let big = json!({"type": "image", "data": "A".repeat(32), "mimeType": "image/png"});
    let mut scripts = vec![json!({"result": {"content": good_blocks(), "isError": false}})];
    for (block, _) in &bad {
        let content = if block["type"] == "audio" {
            json!([text, big, block])
        } else {
            json!([text, text, block])
        };
        scripts.push(json!({"result": {"content": content}}));
    }
    scripts.push(json!({"result": {"content": good_blocks(), "isError": true}}));
    for era in ERAS {
        let scenario = json!({"on_call": {"echo": scripts}});
        let mut limits = Limits::default();
        limits.max_resource_bytes = 32;
        let a = open_scenario(via, era, scenario, limits).await;
        let client = a.client();
        let call = || client.call_tool("echo", args(json!({"text": "x"})));
        let result = guard("good", call()).await.unwrap();
        assert_eq!(Value::Array(result.content), good_blocks(), "{era:?}");
        assert!(!result.is_error);
        for (_, rule) in &bad {
            let error = guard("bad", call()).await.unwrap_err();
            assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{error}");
            assert!(
                error
                    .message()
                    .starts_with("tools/call result: content[2]: ")
                    && error.message().contains(rule),
                "{era:?}: {error}"
            );
            for server_text in ["evil", "hidden", "iVBOR", "main.rs"] {
                assert!(!error.message().contains(server_text), "{error}");
            }
            assert!(client.terminal_error().is_none(), "the session lives");
        }
        // The session goes on: a good result after the refused ones.
        let result = guard("good again", call()).await.unwrap();
        assert_eq!(Value::Array(result.content), good_blocks());
        assert!(result.is_error);
        a.close().await;
    }
}

both_transports!(resources:
    a_walk_follows_every_page,
    a_duplicate_uri_fails_the_walk,
    a_cap_is_tripped_naming_the_count_and_option,
    a_read_returns_text_and_blob_and_refuses_bad_base64,
    a_large_read_is_admitted_and_other_large_frames_are_not,
    a_long_notification_or_noise_line_during_a_read_ends_the_session,
    a_blob_of_max_resource_bytes_is_read_whole_and_one_byte_more_is_refused,
    not_found_for_32002_and_32602,
    an_undeclared_capability_sends_nothing,
    prompt_arguments_are_checked_against_the_listing,
    completion_values_are_bounded,
    a_modern_read_answers_input_required_in_rounds,
    modern_http_sends_mcp_name,
    a_host_pages_itself_one_page_at_a_time,
    tool_content_blocks_are_checked,
);
