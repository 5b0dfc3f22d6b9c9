use super::*;
use std::io::Cursor;

/// Runs `serve` over the given input and returns the parsed output lines.
fn run(input: &str) -> Vec<Value> {
    let mut output = Vec::new();
    serve(Cursor::new(input.as_bytes().to_vec()), &mut output).expect("serve");
    String::from_utf8(output)
        .expect("utf-8 output")
        .lines()
        .map(|line| serde_json::from_str(line).expect("each output line is JSON"))
        .collect()
}

/// Runs one request and returns its single response.
fn request(message: Value) -> Value {
    let mut replies = run(&format!("{message}\n"));
    assert_eq!(replies.len(), 1, "one reply expected: {replies:?}");
    replies.remove(0)
}

/// Calls a tool and returns the `result` of the reply.
fn call(name: &str, arguments: Value) -> Value {
    let reply = request(json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }));
    reply["result"].clone()
}

/// The single text of a tool result.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().expect("text content")
}

/// Sends `initialize` proposing `version` and returns the reply.
fn initialize_with(version: &str) -> Value {
    request(json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "smithers", "version": "0.1.0"},
        },
    }))
}

#[test]
fn initialize_echoes_supported_versions() {
    for version in SUPPORTED_PROTOCOL_VERSIONS {
        let reply = initialize_with(version);
        assert_eq!(reply["id"], 0);
        assert_eq!(reply["result"]["protocolVersion"], version);
    }
}

#[test]
fn initialize_answers_default_for_unknown_versions() {
    let reply = initialize_with("1999-01-01");
    let result = &reply["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["capabilities"], json!({"tools": {}}));
    assert_eq!(result["serverInfo"]["name"], "smthrs-mcp-demo");
    assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn initialize_without_params_still_answers() {
    let reply = request(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"}));
    assert_eq!(reply["result"]["protocolVersion"], "2025-06-18");
}

#[test]
fn full_session_transcript() {
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "smithers", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "echo", "arguments": {"text": "hi"}}}),
    ]
    .iter()
    .map(|message| format!("{message}\n"))
    .collect::<String>();
    let replies = run(&input);
    let ids: Vec<&Value> = replies.iter().map(|reply| &reply["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3)]);
    assert!(replies.iter().all(|reply| reply["jsonrpc"] == "2.0"));
    assert_eq!(text(&replies[2]["result"]), "hi");
}

#[test]
fn tools_list_has_three_well_formed_tools() {
    let reply = request(json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}));
    assert_eq!(reply["id"], "list");
    assert!(reply["result"].get("nextCursor").is_none());
    let tools = reply["result"]["tools"].as_array().expect("tools array");
    let names: Vec<&str> = tools
        .iter()
        .map(|tool| tool["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["echo", "add", "current_time"]);
    for tool in tools {
        let description = tool["description"].as_str().expect("description");
        assert!(!description.is_empty());
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object");
        assert!(schema["properties"].is_object());
        let required = schema["required"].as_array().expect("required");
        for key in required {
            let key = key.as_str().expect("required names are strings");
            assert!(schema["properties"].get(key).is_some(), "{key} declared");
        }
    }
    assert_eq!(tools[1]["outputSchema"]["type"], "object");
}

#[test]
fn tools_list_refuses_a_cursor() {
    let reply = request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                               "params": {"cursor": "next"}}));
    assert_eq!(reply["error"]["code"], INVALID_PARAMS);
}

#[test]
fn echo_returns_text() {
    let result = call("echo", json!({"text": "héllo\nworld"}));
    assert_eq!(result["isError"], false);
    assert_eq!(text(&result), "héllo\nworld");
}

#[test]
fn echo_invalid_arguments_are_tool_errors() {
    for arguments in [json!({}), json!({"text": 3}), json!({"text": "a", "x": 1})] {
        let result = call("echo", arguments.clone());
        assert_eq!(result["isError"], true, "{arguments}");
        assert!(text(&result).contains("`echo`"), "{}", text(&result));
        assert!(text(&result).contains("\"text\": string"));
    }
}

#[test]
fn arguments_must_be_an_object() {
    let result = call("echo", json!(["hi"]));
    assert_eq!(result["isError"], true);
    assert!(text(&result).contains("must be a JSON object, got an array"));
}

#[test]
fn missing_arguments_mean_empty_object() {
    let reply = request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                               "params": {"name": "current_time"}}));
    assert_eq!(reply["result"]["isError"], false);
}

#[test]
fn add_integers_and_floats() {
    let result = call("add", json!({"a": 2, "b": 3}));
    assert_eq!(result["isError"], false);
    assert_eq!(result["structuredContent"], json!({"sum": 5}));
    assert_eq!(text(&result), r#"{"sum":5}"#);

    let result = call("add", json!({"a": 0.5, "b": -2}));
    assert_eq!(result["structuredContent"]["sum"], json!(-1.5));

    let result = call("add", json!({"a": i64::MAX, "b": 1}));
    assert_eq!(result["isError"], false);
    assert_eq!(
        result["structuredContent"]["sum"].as_f64(),
        Some(i64::MAX as f64 + 1.0)
    );
}

#[test]
fn add_overflow_to_infinity_is_a_tool_error() {
    let result = call("add", json!({"a": 1.7e308, "b": 1.7e308}));
    assert_eq!(result["isError"], true);
    assert!(text(&result).contains("too large"));
}

#[test]
fn add_invalid_arguments_are_tool_errors() {
    for arguments in [
        json!({"a": 1}),
        json!({"a": "1", "b": 2}),
        json!({"a": 1, "b": null}),
        json!({"a": 1, "b": 2, "c": 3}),
    ] {
        let result = call("add", arguments.clone());
        assert_eq!(result["isError"], true, "{arguments}");
        assert!(text(&result).contains("\"a\": number, \"b\": number"));
        assert!(result.get("structuredContent").is_none());
    }
}

#[test]
fn current_time_is_rfc3339_utc() {
    let result = call("current_time", json!({}));
    assert_eq!(result["isError"], false);
    let time = text(&result);
    assert_eq!(time.len(), 20, "{time}");
    let bytes = time.as_bytes();
    let separators = [4, 7, 10, 13, 16, 19].map(|index| bytes[index]);
    assert_eq!(separators, *b"--T::Z");
    assert!(time >= "2024-01-01T00:00:00Z");
}

#[test]
fn current_time_refuses_arguments() {
    let result = call("current_time", json!({"zone": "CET"}));
    assert_eq!(result["isError"], true);
    assert!(text(&result).contains("unexpected argument `zone`"));
}

#[test]
fn rfc3339_known_instants() {
    assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339_utc(1_700_000_000), "2023-11-14T22:13:20Z");
    assert_eq!(rfc3339_utc(1_709_251_199), "2024-02-29T23:59:59Z");
    assert_eq!(rfc3339_utc(4_102_444_800), "2100-01-01T00:00:00Z");
    assert_eq!(rfc3339_utc(253_402_300_799), "9999-12-31T23:59:59Z");
}

#[test]
fn unknown_tool_is_invalid_params() {
    let reply = request(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                               "params": {"name": "rm_rf", "arguments": {}}}));
    assert_eq!(reply["id"], 9);
    assert_eq!(reply["error"]["code"], INVALID_PARAMS);
    assert!(reply.get("result").is_none());
    let message = reply["error"]["message"].as_str().expect("message");
    assert!(message.contains("rm_rf"));
}

#[test]
fn call_without_name_is_invalid_params() {
    let reply = request(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                               "params": {"arguments": {}}}));
    assert_eq!(reply["error"]["code"], INVALID_PARAMS);
}

#[test]
fn discover_and_modern_requests_are_served_in_2026_07_28() {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let discover = request(
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
    );
    let result = &discover["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"][0], "2026-07-28");
    assert_eq!(result["capabilities"]["tools"], json!({}));
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "smthrs-mcp-demo"
    );
    let list = request(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}),
    );
    assert_eq!(list["result"]["resultType"], "complete");
    assert_eq!(list["result"]["cacheScope"], "public");
    let call = request(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"_meta": meta, "name": "add", "arguments": {"a": 1, "b": 2}}}));
    assert_eq!(call["result"]["resultType"], "complete");
    assert_eq!(call["result"]["structuredContent"]["sum"], 3);
    // A legacy client probing first gets -32601 from nothing: discover needs _meta.
    let bare = request(json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover"}));
    assert_eq!(bare["error"]["code"], METHOD_NOT_FOUND);
    let other = request(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}}}));
    assert_eq!(other["error"]["code"], UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(other["error"]["data"]["supported"][0], "2026-07-28");
}

#[test]
fn unknown_method_is_method_not_found() {
    let reply = request(json!({"jsonrpc": "2.0", "id": 4, "method": "resources/list"}));
    assert_eq!(reply["id"], 4);
    assert_eq!(reply["error"]["code"], METHOD_NOT_FOUND);
}

#[test]
fn ping_preserves_string_and_integer_ids() {
    let reply = request(json!({"jsonrpc": "2.0", "id": "p-1", "method": "ping"}));
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": "p-1", "result": {}}));
    let reply = request(json!({"jsonrpc": "2.0", "id": 77, "method": "ping"}));
    assert_eq!(reply, json!({"jsonrpc": "2.0", "id": 77, "result": {}}));
}

#[test]
fn notifications_and_responses_get_no_answer() {
    let input = concat!(
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n",
        "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n",
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n",
        "\n",
        "   \r\n",
    );
    assert!(run(input).is_empty());
}

#[test]
fn malformed_input_gets_jsonrpc_errors() {
    let replies = run(
        "not json\n[1,2]\n{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}\n\
         {\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}\n\
         {\"jsonrpc\":\"2.0\",\"id\":6,\"method\":7}\n\
         {\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":[1]}\n",
    );
    let summary: Vec<(Value, Value)> = replies
        .iter()
        .map(|reply| (reply["id"].clone(), reply["error"]["code"].clone()))
        .collect();
    assert_eq!(
        summary,
        [
            (Value::Null, json!(PARSE_ERROR)),
            (Value::Null, json!(INVALID_REQUEST)),
            (json!(3), json!(INVALID_REQUEST)),
            (Value::Null, json!(INVALID_REQUEST)),
            (json!(6), json!(INVALID_REQUEST)),
            (json!(8), json!(INVALID_PARAMS)),
        ]
    );
}

#[test]
fn crlf_and_final_line_without_newline_are_served() {
    let replies = run("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\
         {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[1]["id"], 2);
}

#[test]
fn bounded_reader_discards_an_over_long_line() {
    let input = format!("{}\nabc\nxyz", "x".repeat(100));
    let mut reader = io::BufReader::with_capacity(16, Cursor::new(input.into_bytes()));
    let mut line = Vec::new();
    assert_eq!(
        read_line_bounded(&mut reader, &mut line, 10).unwrap(),
        Line::TooLong
    );
    assert!(line.is_empty());
    assert_eq!(
        read_line_bounded(&mut reader, &mut line, 10).unwrap(),
        Line::Complete
    );
    assert_eq!(line, b"abc");
    assert_eq!(
        read_line_bounded(&mut reader, &mut line, 10).unwrap(),
        Line::Complete
    );
    assert_eq!(line, b"xyz");
    assert_eq!(
        read_line_bounded(&mut reader, &mut line, 10).unwrap(),
        Line::Eof
    );
}

#[test]
fn over_long_message_is_refused_and_the_session_continues() {
    let input = format!(
        "{}\n{}\n",
        "x".repeat(MAX_LINE_BYTES + 1),
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    );
    let replies = run(&input);
    assert_eq!(replies.len(), 2);
    assert_eq!(replies[0]["error"]["code"], INVALID_REQUEST);
    assert_eq!(replies[1]["result"], json!({}));
}

#[test]
fn broken_pipe_ends_the_session_quietly() {
    struct Closed;
    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
    assert!(serve(Cursor::new(input), Closed).is_ok());
}

#[test]
fn empty_input_returns_ok() {
    assert!(run("").is_empty());
}
