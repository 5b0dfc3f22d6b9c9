use super::*;
use crate::ErrorKind;
use crate::listing::ListBuilder;
use crate::listing::sealed::Entry;
use serde_json::json;

fn prompt(entry: Value) -> Result<Prompt, String> {
    Prompt::parse(entry, &ListBounds::default())
}

fn rule(entry: Value) -> String {
    prompt(entry).unwrap_err()
}

fn get(result: Value) -> Result<GetPromptResult> {
    GetPromptResult::from_value(result, &ContentBounds::default())
}

fn get_rule(result: Value) -> String {
    let error = get(result).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidResponse);
    error.message().to_owned()
}

fn code_review() -> Prompt {
    prompt(json!({
        "name": "code_review",
        "arguments": [
            { "name": "code", "required": true },
            { "name": "language" }
        ]
    }))
    .unwrap()
}

#[test]
fn the_spec_listing_is_accepted() {
    // beyond-tools.md §2, with the elided members filled in.
    let page = json!({
        "resultType": "complete",
        "prompts": [{
            "name": "code_review",
            "title": "Request Code Review",
            "description": "Asks the LLM to analyze code quality and suggest improvements",
            "arguments": [{ "name": "code", "title": "Code", "description": "The code to review", "required": true }],
            "icons": [{ "src": "https://example.com/review.svg", "mimeType": "image/svg+xml", "sizes": ["any"] }],
            "_meta": { "vendor/x": 1 }
        }],
        "nextCursor": "next-page",
        "ttlMs": 600000,
        "cacheScope": "public"
    });
    let mut walk = ListBuilder::<Prompt>::new(&ListBounds::default());
    assert_eq!(walk.add_page(page).unwrap().as_deref(), Some("next-page"));
    let prompts = walk.finish();
    let p = &prompts[0];
    assert_eq!(p.name, "code_review");
    assert_eq!(p.title.as_deref(), Some("Request Code Review"));
    assert_eq!(p.arguments.len(), 1);
    assert!(p.arguments[0].required);
    assert_eq!(p.icons.len(), 1);
    assert_eq!(
        serde_json::to_value(p).unwrap(),
        json!({
            "name": "code_review",
            "title": "Request Code Review",
            "description": "Asks the LLM to analyze code quality and suggest improvements",
            "arguments": [{ "name": "code", "title": "Code", "description": "The code to review", "required": true }],
            "icons": [{ "src": "https://example.com/review.svg", "mimeType": "image/svg+xml", "sizes": ["any"] }],
            "_meta": { "vendor/x": 1 }
        })
    );
    // A prompt with nothing but a name.
    let bare = prompt(json!({ "name": "hello" })).unwrap();
    assert!(bare.arguments.is_empty());
    assert_eq!(
        serde_json::to_value(&bare).unwrap(),
        json!({ "name": "hello" })
    );
}

#[test]
fn a_prompt_name_may_become_a_slash_command() {
    assert_eq!(rule(json!({})), "name is missing");
    assert_eq!(rule(json!({ "name": 1 })), "name is not a string");
    assert_eq!(rule(json!({ "name": "" })), "the prompt name is empty");
    assert_eq!(
        rule(json!({ "name": "." })),
        "the prompt name is \".\" or \"..\""
    );
    assert_eq!(
        rule(json!({ "name": ".." })),
        "the prompt name is \".\" or \"..\""
    );
    assert_eq!(
        rule(json!({ "name": "git/commit" })),
        "the prompt name contains '/'"
    );
    assert_eq!(
        rule(json!({ "name": "review\u{2066}" })),
        "the prompt name contains a format character (Unicode Cf)"
    );
    assert_eq!(
        rule(json!({ "name": "a\u{1b}[31m" })),
        "the prompt name contains a control character (Unicode Cc)"
    );
    let at_limit = "p".repeat(128);
    assert!(prompt(json!({ "name": at_limit })).is_ok());
    assert_eq!(
        rule(json!({ "name": format!("{at_limit}p") })),
        "the prompt name is 129 bytes; maxToolNameBytes is 128"
    );
    // Dots and non-ASCII letters inside a name are fine.
    assert!(prompt(json!({ "name": "review.v2-ü" })).is_ok());
}

#[test]
fn arguments_are_bounded_named_and_unique() {
    let bounds = ListBounds {
        max_prompt_arguments: 2,
        max_name_bytes: 8,
        ..ListBounds::default()
    };
    let parse = |entry: Value| Prompt::parse(entry, &bounds);
    assert!(parse(json!({ "name": "p", "arguments": [{ "name": "a" }, { "name": "b" }] })).is_ok());
    assert_eq!(
        parse(
            json!({ "name": "p", "arguments": [{ "name": "a" }, { "name": "b" }, { "name": "c" }] })
        )
        .unwrap_err(),
        "arguments lists 3 arguments; maxPromptArguments is 2"
    );
    assert_eq!(
        parse(json!({ "name": "p", "arguments": [{ "name": "a" }, { "name": "a" }] })).unwrap_err(),
        "arguments[1]: the argument name duplicates another argument's name"
    );
    assert_eq!(
        parse(json!({ "name": "p", "arguments": [{ "name": "123456789" }] })).unwrap_err(),
        "arguments[0]: the argument name is 9 bytes; maxToolNameBytes is 8"
    );
    for (arguments, expected) in [
        (json!({}), "arguments is not an array"),
        (json!(null), "arguments is not an array"),
        (
            json!(["code"]),
            "arguments[0]: the argument is not an object",
        ),
        (json!([{}]), "arguments[0]: name is missing"),
        (
            json!([{ "name": "" }]),
            "arguments[0]: the argument name is empty",
        ),
        (
            json!([{ "name": "a\u{AD}b" }]),
            "arguments[0]: the argument name contains a format character (Unicode Cf)",
        ),
        (
            json!([{ "name": "a", "required": "yes" }]),
            "arguments[0]: required is not a boolean",
        ),
        (
            json!([{ "name": "a", "title": "x\u{2029}" }]),
            "arguments[0]: title contains a line or paragraph separator (U+2028/U+2029)",
        ),
        (
            json!([{ "name": "a", "description": 2 }]),
            "arguments[0]: description is not a string",
        ),
    ] {
        assert_eq!(
            rule(json!({ "name": "p", "arguments": arguments })),
            expected,
            "{arguments}"
        );
    }
    // An argument name is not a command: '/' and '.' are fine there.
    assert!(
        prompt(json!({ "name": "p", "arguments": [{ "name": "path/to" }, { "name": "." }] }))
            .is_ok()
    );
}

#[test]
fn the_other_members_have_their_types() {
    assert_eq!(rule(json!(3)), "the entry is not an object");
    assert_eq!(
        rule(json!({ "name": "p", "title": "a\u{7}" })),
        "title contains a control character (Unicode Cc)"
    );
    assert_eq!(
        rule(json!({ "name": "p", "description": {} })),
        "description is not a string"
    );
    assert_eq!(
        rule(json!({ "name": "p", "icons": [{ "src": "https://x/i.png", "theme": 1 }] })),
        "icons[0]: theme is neither \"light\" nor \"dark\""
    );
    assert_eq!(
        rule(json!({ "name": "p", "_meta": "x" })),
        "_meta is not an object"
    );
}

#[test]
fn the_whole_entry_is_bounded() {
    let bounds = ListBounds {
        max_entry_document_bytes: 40,
        ..ListBounds::default()
    };
    // {"description":"...","name":"p"} is 29 bytes plus the description.
    let entry = |description: &str| json!({ "name": "p", "description": description });
    assert!(Prompt::parse(entry(&"d".repeat(11)), &bounds).is_ok());
    assert_eq!(
        Prompt::parse(entry(&"d".repeat(12)), &bounds).unwrap_err(),
        "the entry is 41 bytes of JSON; maxEntryDocumentBytes is 40"
    );
}

#[test]
fn arguments_are_checked_before_sending() {
    let prompt = code_review();
    let arguments = |pairs: Value| pairs.as_object().unwrap().clone();
    assert!(
        prompt
            .check_arguments(&arguments(json!({ "code": "x" })))
            .is_ok()
    );
    assert!(
        prompt
            .check_arguments(&arguments(json!({ "code": "x", "language": "rust" })))
            .is_ok()
    );
    for (given, expected) in [
        (
            json!({}),
            "prompt \"code_review\" requires argument \"code\", which is missing",
        ),
        (
            json!({ "language": "rust" }),
            "prompt \"code_review\" requires argument \"code\", which is missing",
        ),
        (
            json!({ "code": "x", "langauge": "rust" }),
            "prompt \"code_review\" declares no argument \"langauge\"",
        ),
        (
            json!({ "code": 42 }),
            "argument \"code\" of prompt \"code_review\" is not a string",
        ),
        (
            json!({ "code": "x", "language": null }),
            "argument \"language\" of prompt \"code_review\" is not a string",
        ),
    ] {
        let error = prompt
            .check_arguments(&arguments(given.clone()))
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::ProtocolError, "{given}");
        assert_eq!(error.message(), expected, "{given}");
    }
}

#[test]
fn the_spec_get_result_is_accepted() {
    let result = get(json!({
        "resultType": "complete",
        "description": "Code review prompt",
        "messages": [
            { "role": "user", "content": { "type": "text", "text": "Please review this Python code:\ndef hello():\n    print('world')" } },
            { "role": "assistant", "content": { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" } },
            { "role": "user", "content": { "type": "resource", "resource": { "uri": "resource://example", "mimeType": "text/plain", "text": "Resource content" } } },
            { "role": "user", "content": { "type": "resource_link", "uri": "file:///project/src/main.rs", "name": "main.rs" } }
        ]
    }))
    .unwrap();
    assert_eq!(result.description.as_deref(), Some("Code review prompt"));
    let roles: Vec<Role> = result.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User, Role::User]);
    let kinds: Vec<&str> = result.messages.iter().map(|m| m.content.kind()).collect();
    assert_eq!(kinds, ["text", "image", "resource", "resource_link"]);
    assert_eq!(
        serde_json::to_value(&result.messages[0]).unwrap(),
        json!({ "role": "user", "content": { "type": "text", "text": "Please review this Python code:\ndef hello():\n    print('world')" } })
    );
    // No messages is valid.
    assert!(get(json!({ "messages": [] })).unwrap().messages.is_empty());
}

#[test]
fn every_get_rule_is_named() {
    let text = json!({ "type": "text", "text": "hi" });
    for (result, expected) in [
        (json!(null), "the result is not an object"),
        (json!({}), "messages is not an array"),
        (
            json!({ "description": 1, "messages": [] }),
            "description is not a string",
        ),
        (
            json!({ "messages": [1] }),
            "messages[0]: the message is not an object",
        ),
        (
            json!({ "messages": [{ "content": text }] }),
            "messages[0]: role is neither \"user\" nor \"assistant\"",
        ),
        (
            json!({ "messages": [{ "role": "system", "content": text }] }),
            "messages[0]: role is neither \"user\" nor \"assistant\"",
        ),
        (
            json!({ "messages": [{ "role": "user" }] }),
            "messages[0]: content is missing",
        ),
        (
            json!({ "messages": [{ "role": "user", "content": [text] }] }),
            "messages[0]: content: the block is not an object",
        ),
        (
            json!({ "messages": [{ "role": "user", "content": text }, { "role": "user", "content": { "type": "image", "data": "eA", "mimeType": "image/png", "annotations": { "priority": 9 } } }] }),
            "messages[1]: content: annotations: priority is not a number in [0, 1]",
        ),
    ] {
        assert_eq!(
            get_rule(result.clone()),
            format!("prompts/get result: {expected}"),
            "{result}"
        );
    }
}

#[test]
fn messages_and_their_bytes_are_bounded() {
    let bounds = ContentBounds {
        max_prompt_messages: 2,
        max_resource_bytes: 3,
        ..ContentBounds::default()
    };
    let text = json!({ "role": "user", "content": { "type": "text", "text": "not counted" } });
    let image = json!({ "role": "user", "content": { "type": "image", "data": "eHk=", "mimeType": "image/png" } });
    assert!(GetPromptResult::from_value(json!({ "messages": [text, image] }), &bounds).is_ok());
    assert_eq!(
        GetPromptResult::from_value(json!({ "messages": [text, text, text] }), &bounds)
            .unwrap_err()
            .message(),
        "prompts/get result: messages holds 3 messages; maxPromptMessages is 2"
    );
    assert_eq!(
        GetPromptResult::from_value(json!({ "messages": [image, image] }), &bounds)
            .unwrap_err()
            .message(),
        "prompts/get result: messages[1]: content: the result holds 4 bytes of content by this item; maxResourceBytes is 3"
    );
    // Unknown block types are kept as sent.
    let unknown = json!({ "role": "assistant", "content": { "type": "thinking", "text": "hmm" } });
    let result = GetPromptResult::from_value(json!({ "messages": [unknown] }), &bounds).unwrap();
    assert_eq!(result.messages[0].content.kind(), "thinking");
}
