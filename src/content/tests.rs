use super::*;
use crate::ErrorKind;
use crate::resources::Role;
use serde_json::json;

fn read(result: Value) -> Result<ReadResult> {
    ReadResult::from_value(result, &ContentBounds::default())
}

fn read_rule(result: Value) -> String {
    let error = read(result).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidResponse);
    error.message().to_owned()
}

/// One item under the default bounds; the rule on failure.
fn item_rule(item: Value) -> String {
    let message = read_rule(json!({ "contents": [item] }));
    message
        .strip_prefix("resources/read result: contents[0]: ")
        .unwrap_or(&message)
        .to_owned()
}

fn blob(text: &str) -> Value {
    json!({ "uri": "file:///b", "blob": text })
}

fn blocks(content: Vec<Value>) -> Result<Vec<ContentBlock>> {
    tool_content(content, &ContentBounds::default())
}

fn block_rule(block: Value) -> String {
    let error = blocks(vec![block]).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidResponse);
    let message = error.message();
    message
        .strip_prefix("tools/call result: content[0]: ")
        .unwrap_or(message)
        .to_owned()
}

#[test]
fn the_spec_read_example_is_accepted() {
    // beyond-tools.md §1.3 (the blob completed to a valid PNG signature).
    let result = read(json!({
        "resultType": "complete",
        "contents": [
            { "uri": "file:///project/src/main.rs", "mimeType": "text/x-rust", "text": "fn main() {}" },
            { "uri": "file:///project/logo.png", "mimeType": "image/png", "blob": "iVBORw0KGgo=" }
        ],
        "ttlMs": 60000,
        "cacheScope": "private"
    }))
    .unwrap();
    assert_eq!(result.contents.len(), 2);
    assert_eq!(
        result.contents[0].data,
        ResourceData::Text("fn main() {}".to_owned())
    );
    assert_eq!(
        result.contents[1].data,
        ResourceData::Blob(b"\x89PNG\r\n\x1a\n".to_vec())
    );
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({ "contents": [
            { "uri": "file:///project/src/main.rs", "mimeType": "text/x-rust", "text": "fn main() {}" },
            { "uri": "file:///project/logo.png", "mimeType": "image/png", "blob": "iVBORw0KGgo=" }
        ]})
    );
}

#[test]
fn an_empty_read_means_empty() {
    assert!(read(json!({ "contents": [] })).unwrap().contents.is_empty());
}

#[test]
fn the_result_shape_is_checked() {
    assert_eq!(
        read_rule(json!("x")),
        "resources/read result: the result is not an object"
    );
    assert_eq!(
        read_rule(json!({})),
        "resources/read result: contents is not an array"
    );
    assert_eq!(
        read_rule(json!({ "contents": null })),
        "resources/read result: contents is not an array"
    );
    assert_eq!(
        read_rule(json!({ "contents": [{ "uri": "file:///a", "text": "" }, 3] })),
        "resources/read result: contents[1]: the item is not an object"
    );
    let bounds = ContentBounds {
        max_resource_contents: 2,
        ..ContentBounds::default()
    };
    let item = json!({ "uri": "file:///a", "text": "" });
    assert!(ReadResult::from_value(json!({ "contents": [item, item] }), &bounds).is_ok());
    assert_eq!(
        ReadResult::from_value(json!({ "contents": [item, item, item] }), &bounds)
            .unwrap_err()
            .message(),
        "resources/read result: contents holds 3 items; maxResourceContents is 2"
    );
}

#[test]
fn an_item_holds_exactly_one_of_text_and_blob() {
    assert_eq!(
        item_rule(json!({ "uri": "file:///a", "text": "x", "blob": "eA==" })),
        "the item holds both text and blob"
    );
    assert_eq!(
        item_rule(json!({ "uri": "file:///a" })),
        "the item holds neither text nor blob"
    );
    assert_eq!(
        item_rule(json!({ "uri": "file:///a", "text": null })),
        "text is not a string"
    );
    assert_eq!(
        item_rule(json!({ "uri": "file:///a", "blob": ["eA=="] })),
        "blob is not a string"
    );
}

#[test]
fn an_item_follows_the_uri_and_hint_rules() {
    assert_eq!(item_rule(json!({ "text": "x" })), "uri is missing");
    assert_eq!(
        item_rule(json!({ "uri": "relative/path", "text": "x" })),
        "a URI does not start with a scheme"
    );
    assert_eq!(
        item_rule(json!({ "uri": "file:///a\u{85}", "text": "x" })),
        "a URI contains a control character (Unicode Cc)"
    );
    assert_eq!(
        item_rule(json!({ "uri": "file:///a", "mimeType": "text", "text": "x" })),
        "mimeType is not of the form type/subtype *(;parameter)"
    );
    assert_eq!(
        item_rule(json!({ "uri": "file:///a", "text": "x", "_meta": "m" })),
        "_meta is not an object"
    );
    // Sub-resources of other URIs are fine; unknown members are tolerated; the
    // server's spelling is kept.
    let result = read(json!({ "contents": [
        { "uri": "file:///dir/", "mimeType": "inode/directory", "text": "" },
        { "uri": "file:///dir/A%20b.txt", "text": "x", "extra": { "y": 1 }, "_meta": { "k": 1 } }
    ]}))
    .unwrap();
    assert_eq!(result.contents[1].uri, "file:///dir/A%20b.txt");
    assert_eq!(result.contents[1].meta.as_ref().unwrap()["k"], 1);
}

#[test]
fn base64_is_strict() {
    for (text, bytes) in [
        ("", &b""[..]),
        ("eA==", b"x"),
        ("eHk=", b"xy"),
        ("eHl6", b"xyz"),
        // Padding is optional (decision Q4) ...
        ("eA", b"x"),
        ("eHk", b"xy"),
        ("+/+/", b"\xfb\xff\xbf"),
    ] {
        let result = read(json!({ "contents": [blob(text)] })).unwrap();
        assert_eq!(
            result.contents[0].data,
            ResourceData::Blob(bytes.to_vec()),
            "{text:?}"
        );
    }
    let alphabet = "blob is not strict base64: a character outside the standard alphabet (whitespace and the URL-safe '-' and '_' included)";
    let padding = "blob is not strict base64: misplaced or non-canonical padding";
    let length = "blob is not base64: its length or padding cannot end a quantum";
    for (text, expected) in [
        // ... but canonical when present.
        ("eA=", length),
        ("eA===", length),
        ("e===", length),
        ("eHk==", length),
        ("=", length),
        ("eA==eA==", padding),
        ("eA=A", padding),
        // Whitespace and line breaks.
        ("e A=", alphabet),
        ("eHl6\neHl", alphabet),
        (" eHl", alphabet),
        ("eHl6\r\n", alphabet),
        // The URL-safe alphabet.
        ("-_-_", alphabet),
        ("eHk-", alphabet),
        // Non-zero trailing bits: "eB==" and "eHl=" are not canonical encodings.
        ("eB==", "blob is not strict base64: non-zero trailing bits"),
        ("eHl=", "blob is not strict base64: non-zero trailing bits"),
        ("eB", "blob is not strict base64: non-zero trailing bits"),
        // A length no quantum ends on.
        ("eHl6e", length),
    ] {
        assert_eq!(item_rule(blob(text)), expected, "{text:?}");
    }
}

#[test]
fn a_huge_claimed_length_is_refused_before_decoding() {
    let bounds = ContentBounds {
        max_resource_bytes: 1024,
        ..ContentBounds::default()
    };
    // 4 MiB of base64 claiming 3 MiB, with an invalid character at the end: the
    // bound answers, so nothing was decoded.
    let mut text = "A".repeat(4 * 1024 * 1024 - 4);
    text.push_str("AAA!");
    let error = ReadResult::from_value(json!({ "contents": [blob(&text)] }), &bounds).unwrap_err();
    assert_eq!(
        error.message(),
        "resources/read result: contents[0]: the result holds 3145728 bytes of content by this item; maxResourceBytes is 1024"
    );
}

#[test]
fn decoded_bytes_and_text_share_one_budget() {
    let bounds = ContentBounds {
        max_resource_bytes: 10,
        ..ContentBounds::default()
    };
    let read = |contents: Value| ReadResult::from_value(json!({ "contents": contents }), &bounds);
    // 4 text bytes + 6 decoded bytes: exactly the bound.
    assert!(read(json!([{ "uri": "file:///a", "text": "abcd" }, blob("eHl6eHl6")])).is_ok());
    assert_eq!(
        read(json!([{ "uri": "file:///a", "text": "abcdé" }, blob("eHl6eHl6")]))
            .unwrap_err()
            .message(),
        "resources/read result: contents[1]: the result holds 12 bytes of content by this item; maxResourceBytes is 10"
    );
    // Text counts in UTF-8 bytes.
    assert_eq!(
        read(json!([{ "uri": "file:///a", "text": "ééééé!" }]))
            .unwrap_err()
            .message(),
        "resources/read result: contents[0]: the result holds 11 bytes of content by this item; maxResourceBytes is 10"
    );
    // Unpadded input is counted exactly too.
    assert!(read(json!([blob("eHl6eHl6eHl6eA")])).is_ok());
    assert!(read(json!([blob("eHl6eHl6eHl6eHk")])).is_err());
}

#[test]
fn the_spec_blocks_are_accepted() {
    // beyond-tools.md §1.5, with real base64.
    let content = blocks(vec![
        json!({ "type": "text", "text": "Here you go", "annotations": { "audience": ["user"] } }),
        json!({ "type": "resource_link", "uri": "file:///project/src/main.rs", "name": "main.rs", "mimeType": "text/x-rust" }),
        json!({ "type": "resource", "resource": { "uri": "resource://example", "mimeType": "text/plain", "text": "…" }, "annotations": { "priority": 0.5 } }),
        json!({ "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" }),
        json!({ "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "_meta": { "k": true } }),
    ])
    .unwrap();
    let kinds: Vec<&str> = content.iter().map(ContentBlock::kind).collect();
    assert_eq!(
        kinds,
        ["text", "resource_link", "resource", "image", "audio"]
    );
    let ContentBlock::Text(text) = &content[0] else {
        panic!("{:?}", content[0])
    };
    assert_eq!(text.text, "Here you go");
    assert_eq!(
        text.annotations.as_ref().unwrap().audience,
        Some(vec![Role::User])
    );
    let ContentBlock::ResourceLink(link) = &content[1] else {
        panic!("{:?}", content[1])
    };
    assert_eq!(link.uri, "file:///project/src/main.rs");
    let ContentBlock::Resource(embedded) = &content[2] else {
        panic!("{:?}", content[2])
    };
    assert_eq!(embedded.resource.uri, "resource://example");
    assert_eq!(embedded.annotations.as_ref().unwrap().priority, Some(0.5));
    let ContentBlock::Audio(audio) = &content[4] else {
        panic!("{:?}", content[4])
    };
    assert_eq!(audio.data, b"RIFF");
    assert_eq!(audio.mime_type, "audio/wav");

    // Serialized as the wire form again.
    assert_eq!(
        serde_json::to_value(&content).unwrap(),
        json!([
            { "type": "text", "text": "Here you go", "annotations": { "audience": ["user"] } },
            { "type": "resource_link", "uri": "file:///project/src/main.rs", "name": "main.rs", "mimeType": "text/x-rust" },
            { "type": "resource", "resource": { "uri": "resource://example", "mimeType": "text/plain", "text": "…" }, "annotations": { "priority": 0.5 } },
            { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" },
            { "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "_meta": { "k": true } }
        ])
    );
}

#[test]
fn unknown_types_are_kept_as_sent() {
    let block = json!({ "type": "hologram", "frames": [1, 2], "data": "not base64 at all" });
    let content = blocks(vec![block.clone()]).unwrap();
    assert_eq!(content[0].kind(), "hologram");
    assert_eq!(
        content[0],
        ContentBlock::Unknown(block.as_object().unwrap().clone())
    );
    assert_eq!(serde_json::to_value(&content[0]).unwrap(), block);
}

/// One block per rule, and the rule it breaks.
fn block_rule_cases() -> Vec<(Value, &'static str)> {
    vec![
        (json!("text"), "the block is not an object"),
        (json!({ "text": "x" }), "type is not a string"),
        (json!({ "type": 3 }), "type is not a string"),
        (json!({ "type": "text" }), "text is missing"),
        (json!({ "type": "text", "text": 1 }), "text is not a string"),
        (
            json!({ "type": "text", "text": "x", "annotations": { "audience": ["model"] } }),
            "annotations: audience holds a value other than \"user\" and \"assistant\"",
        ),
        (
            json!({ "type": "text", "text": "x", "_meta": [] }),
            "_meta is not an object",
        ),
        (
            json!({ "type": "image", "mimeType": "image/png" }),
            "data is missing",
        ),
        (
            json!({ "type": "image", "data": "eA==" }),
            "mimeType is missing",
        ),
        (
            json!({ "type": "audio", "data": "eA==", "mimeType": "wav" }),
            "mimeType is not of the form type/subtype *(;parameter)",
        ),
        (
            json!({ "type": "image", "data": "eA-_", "mimeType": "image/png" }),
            "data is not strict base64: a character outside the standard alphabet (whitespace and the URL-safe '-' and '_' included)",
        ),
        (
            json!({ "type": "image", "data": "e", "mimeType": "image/png" }),
            "data is not base64: its length or padding cannot end a quantum",
        ),
        (
            json!({ "type": "resource_link", "name": "x" }),
            "uri is missing",
        ),
        (
            json!({ "type": "resource_link", "uri": "file:///a" }),
            "name is missing",
        ),
        (
            json!({ "type": "resource_link", "uri": "file:///a", "name": "a", "size": -3 }),
            "size is not a non-negative safe integer",
        ),
        (
            json!({ "type": "resource_link", "uri": "file:///a b", "name": "a" }),
            "a URI contains whitespace",
        ),
        (json!({ "type": "resource" }), "resource is not an object"),
        (
            json!({ "type": "resource", "resource": "file:///a" }),
            "resource is not an object",
        ),
        (
            json!({ "type": "resource", "resource": { "uri": "file:///a" } }),
            "resource: the item holds neither text nor blob",
        ),
        (
            json!({ "type": "resource", "resource": { "uri": "file:///a", "text": "x", "blob": "" } }),
            "resource: the item holds both text and blob",
        ),
        (
            json!({ "type": "resource", "resource": { "uri": "file:///a", "blob": "eA =" } }),
            "resource: blob is not strict base64: a character outside the standard alphabet (whitespace and the URL-safe '-' and '_' included)",
        ),
        (
            json!({ "type": "resource", "resource": { "uri": "file:///a", "text": "x", "annotations": { "priority": 3 } } }),
            "resource: annotations: priority is not a number in [0, 1]",
        ),
        (
            json!({ "type": "resource", "resource": { "uri": "file:///a", "text": "x" }, "annotations": [] }),
            "annotations is not an object",
        ),
        (
            json!({ "type": "resource", "resource": { "uri": "file:///a", "text": "x" }, "_meta": 1 }),
            "_meta is not an object",
        ),
        (
            json!({ "type": "image", "data": "eA==", "mimeType": "image/png", "annotations": { "lastModified": 5 } }),
            "annotations: lastModified is not a string",
        ),
        (
            json!({ "type": "audio", "data": "eA==", "mimeType": 7 }),
            "mimeType is not a string",
        ),
        (
            json!({ "type": "resource_link", "uri": "file:///a\u{7}", "name": "a" }),
            "a URI contains a control character (Unicode Cc)",
        ),
        (
            json!({ "type": "resource", "resource": { "uri": "file:///a", "mimeType": "x", "text": "x" } }),
            "resource: mimeType is not of the form type/subtype *(;parameter)",
        ),
        (
            json!({ "type": "resource", "resource": { "uri": "file:///a", "blob": "eB==" } }),
            "resource: blob is not strict base64: non-zero trailing bits",
        ),
    ]
}

#[test]
fn every_block_rule_is_named() {
    for (block, expected) in block_rule_cases() {
        assert_eq!(block_rule(block.clone()), expected, "{block}");
    }
}

/// What [`check_tool_content`] says of `content`, and whether it says what
/// [`tool_content`] says.
fn checked(content: &[Value], bounds: &ContentBounds) -> Result<()> {
    let checked = check_tool_content(content, bounds);
    let built = tool_content(content.to_vec(), bounds);
    assert_eq!(
        checked.as_ref().map(|_| ()).map_err(Error::message),
        built.as_ref().map(|_| ()).map_err(Error::message),
        "{content:?}"
    );
    checked
}

#[test]
fn checking_in_place_agrees_with_building_on_every_rule() {
    for (block, expected) in block_rule_cases() {
        // Alone, and after a block that passes.
        let error = checked(std::slice::from_ref(&block), &ContentBounds::default()).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidResponse);
        assert_eq!(
            error.message(),
            format!("tools/call result: content[0]: {expected}")
        );
        let text = json!({ "type": "text", "text": "ok" });
        let error = checked(&[text, block], &ContentBounds::default()).unwrap_err();
        assert_eq!(
            error.message(),
            format!("tools/call result: content[1]: {expected}")
        );
    }
}

#[test]
fn checking_in_place_agrees_with_building_on_base64_and_budgets() {
    let image = |data: &str| json!({ "type": "image", "data": data, "mimeType": "image/png" });
    let embedded = |blob: &str| json!({ "type": "resource", "resource": { "uri": "file:///b", "blob": blob } });
    for text in [
        "",
        "eA==",
        "eHk=",
        "eHl6",
        "eA",
        "eHk",
        "+/+/",
        "eA=",
        "eA===",
        "e===",
        "eHk==",
        "=",
        "eA==eA==",
        "eA=A",
        "e A=",
        "eHl6\neHl",
        " eHl",
        "eHl6\r\n",
        "-_-_",
        "eHk-",
        "eB==",
        "eHl=",
        "eB",
        "eHl6e",
    ] {
        checked(&[image(text)], &ContentBounds::default()).ok();
        checked(&[embedded(text)], &ContentBounds::default()).ok();
    }
    for limit in 0..8 {
        let bounds = ContentBounds {
            max_resource_bytes: limit,
            ..ContentBounds::default()
        };
        let content = [
            json!({ "type": "text", "text": "text blocks are not counted" }),
            image("eHk="),
            json!({ "type": "resource", "resource": { "uri": "file:///a", "text": "ab" } }),
            json!({ "type": "hologram", "data": "not counted" }),
            embedded("eHl6"),
        ];
        assert_eq!(checked(&content, &bounds).is_ok(), limit >= 7, "{limit}");
    }
    // A large image, over several chunks of the check, passes as it decodes.
    let large = encode_for_test(&[7u8; 5000]);
    assert!(checked(&[image(&large)], &ContentBounds::default()).is_ok());
}

fn encode_for_test(bytes: &[u8]) -> String {
    strict_base64::encode(bytes)
}

#[test]
fn checking_in_place_agrees_with_building_on_the_spec_blocks() {
    let content = vec![
        json!({ "type": "text", "text": "Here you go", "annotations": { "audience": ["user"] } }),
        json!({ "type": "resource_link", "uri": "file:///project/src/main.rs", "name": "main.rs", "mimeType": "text/x-rust" }),
        json!({ "type": "resource", "resource": { "uri": "resource://example", "mimeType": "text/plain", "text": "…", "annotations": { "priority": 1 } }, "annotations": { "priority": 0.5 } }),
        json!({ "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" }),
        json!({ "type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "_meta": { "k": true } }),
        json!({ "type": "hologram", "frames": [1, 2], "data": "not base64 at all" }),
        json!({ "type": "text", "text": "", "unknown": { "kept": true } }),
        json!({ "type": "text", "text": "x", "_meta": { "a": 1 }, "extra": null }),
    ];
    checked(&content, &ContentBounds::default()).unwrap();
    // A resource link is bounded as an entry, in place too.
    let bounds = ContentBounds {
        max_entry_document_bytes: 16,
        max_uri_bytes: 12,
        ..ContentBounds::default()
    };
    for (link, ok) in [
        (
            json!({ "type": "resource_link", "uri": "file:///abcd", "name": "abc" }),
            true,
        ),
        (
            json!({ "type": "resource_link", "uri": "file:///abcd", "name": "abcdef" }),
            false,
        ),
        (
            json!({ "type": "resource_link", "uri": "file:///abcde", "name": "a" }),
            false,
        ),
    ] {
        assert_eq!(checked(&[link], &bounds).is_ok(), ok);
    }
}

#[test]
fn embedded_annotations_may_sit_inside_the_resource() {
    let inside = json!({ "type": "resource", "resource": {
        "uri": "file:///a", "text": "x", "annotations": { "audience": ["assistant"] }, "unknown": 1
    }});
    let content = blocks(vec![inside]).unwrap();
    let ContentBlock::Resource(embedded) = &content[0] else {
        panic!("{:?}", content[0])
    };
    assert_eq!(
        embedded.annotations.as_ref().unwrap().audience,
        Some(vec![Role::Assistant])
    );
    // The block's own annotations win over the inner ones.
    let both = json!({
        "type": "resource",
        "resource": { "uri": "file:///a", "text": "x", "annotations": { "priority": 0.1 } },
        "annotations": { "priority": 0.9 }
    });
    let content = blocks(vec![both]).unwrap();
    let ContentBlock::Resource(embedded) = &content[0] else {
        panic!("{:?}", content[0])
    };
    assert_eq!(embedded.annotations.as_ref().unwrap().priority, Some(0.9));
}

#[test]
fn a_resource_link_is_bounded_as_an_entry() {
    let bounds = ContentBounds {
        max_entry_document_bytes: 16,
        max_uri_bytes: 12,
        ..ContentBounds::default()
    };
    // {"name":"abc"} is 14 bytes: type and uri do not count.
    let link = json!({ "type": "resource_link", "uri": "file:///abcd", "name": "abc" });
    assert!(tool_content(vec![link], &bounds).is_ok());
    let link = json!({ "type": "resource_link", "uri": "file:///abcd", "name": "abcdef" });
    assert_eq!(
        tool_content(vec![link], &bounds).unwrap_err().message(),
        "tools/call result: content[0]: the entry is 17 bytes of JSON without its uri; maxEntryDocumentBytes is 16"
    );
    let link = json!({ "type": "resource_link", "uri": "file:///abcde", "name": "a" });
    assert_eq!(
        tool_content(vec![link], &bounds).unwrap_err().message(),
        "tools/call result: content[0]: a URI of 13 bytes; maxUriBytes is 12"
    );
}

#[test]
fn binary_blocks_share_the_result_budget() {
    let bounds = ContentBounds {
        max_resource_bytes: 4,
        ..ContentBounds::default()
    };
    let image = json!({ "type": "image", "data": "eHk=", "mimeType": "image/png" });
    let embedded = json!({ "type": "resource", "resource": { "uri": "file:///a", "text": "ab" } });
    // Text blocks are not counted; 2 + 2 bytes are.
    let text = json!({ "type": "text", "text": "a long text that the frame bound holds" });
    assert!(tool_content(vec![text, image.clone(), embedded.clone()], &bounds).is_ok());
    assert_eq!(
        tool_content(vec![image.clone(), embedded, image], &bounds)
            .unwrap_err()
            .message(),
        "tools/call result: content[2]: the result holds 6 bytes of content by this item; maxResourceBytes is 4"
    );
}

#[test]
fn plain_text_blocks_take_the_short_path_and_nothing_else_does() {
    let plain = |block: Value| is_plain_text(block.as_object().unwrap());
    assert!(plain(json!({ "type": "text", "text": "x" })));
    assert!(plain(
        json!({ "text": "", "type": "text", "_meta": {}, "other": [1] })
    ));
    for block in [
        json!({ "type": "text" }),
        json!({ "text": "x" }),
        json!({ "type": "text", "text": 1 }),
        json!({ "type": "text", "text": "x", "_meta": null }),
        json!({ "type": "text", "text": "x", "annotations": { "priority": 0.5 } }),
        json!({ "type": "image", "text": "x" }),
        json!({ "type": ["text"], "text": "x" }),
    ] {
        assert!(!plain(block.clone()), "{block}");
    }
}
