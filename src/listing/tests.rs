use super::*;
use crate::ErrorKind;
use crate::prompts::Prompt;
use crate::resources::{Resource, ResourceTemplate};
use serde_json::json;

fn resource(n: usize) -> Value {
    json!({ "uri": format!("file:///r/{n}"), "name": format!("r{n}") })
}

fn resources(range: std::ops::Range<usize>) -> Vec<Value> {
    range.map(resource).collect()
}

fn walk() -> ListBuilder<Resource> {
    ListBuilder::new(&ListBounds::default())
}

fn message(result: Result<Option<String>>) -> String {
    let error = result.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InvalidResponse);
    error.message().to_owned()
}

#[test]
fn pages_accumulate_in_server_order() {
    let mut walk = walk();
    assert_eq!(
        walk.add_page(json!({ "resources": resources(0..2), "nextCursor": "a" }))
            .unwrap()
            .as_deref(),
        Some("a")
    );
    assert_eq!(walk.pages(), 1);
    assert_eq!(walk.entries().len(), 2);
    assert_eq!(
        walk.add_page(json!({ "resources": [], "nextCursor": "b" }))
            .unwrap()
            .as_deref(),
        Some("b")
    );
    assert_eq!(
        walk.add_page(json!({
            "resources": resources(2..3),
            "resultType": "complete", "ttlMs": 300000, "cacheScope": "public"
        }))
        .unwrap(),
        None
    );
    let uris: Vec<String> = walk.finish().into_iter().map(|r| r.uri).collect();
    assert_eq!(uris, ["file:///r/0", "file:///r/1", "file:///r/2"]);
}

#[test]
fn the_result_must_hold_an_entry_array() {
    assert_eq!(
        message(walk().add_page(json!([]))),
        "resources/list page 1: the result is not an object"
    );
    assert_eq!(
        message(walk().add_page(json!({ "resources": {} }))),
        "resources/list page 1: resources is not an array"
    );
    assert_eq!(
        message(walk().add_page(json!({ "tools": [] }))),
        "resources/list page 1: resources is not an array"
    );
    assert_eq!(
        message(ListBuilder::<ResourceTemplate>::new(&ListBounds::default()).add_page(json!({}))),
        "resources/templates/list page 1: resourceTemplates is not an array"
    );
    assert_eq!(
        message(ListBuilder::<Prompt>::new(&ListBounds::default()).add_page(json!({}))),
        "prompts/list page 1: prompts is not an array"
    );
}

#[test]
fn an_entry_error_names_the_page_and_the_position() {
    let mut walk = walk();
    walk.add_page(json!({ "resources": resources(0..1), "nextCursor": "a" }))
        .unwrap();
    assert_eq!(
        message(walk.add_page(json!({ "resources": [resource(1), 7] }))),
        "resources/list page 2: resources[1]: the entry is not an object"
    );
}

#[test]
fn a_failed_page_adds_nothing() {
    let mut walk = walk();
    walk.add_page(json!({ "resources": resources(0..1), "nextCursor": "a" }))
        .unwrap();
    // A good entry, then a bad one: neither is kept, and the page is not counted.
    assert!(
        walk.add_page(json!({ "resources": [resource(1), { "uri": "file:///x" }] }))
            .is_err()
    );
    assert!(
        walk.add_page(json!({ "resources": resources(2..3), "nextCursor": 5 }))
            .is_err()
    );
    assert_eq!((walk.entries().len(), walk.pages()), (1, 1));
    // The rejected entries' URIs were not recorded either.
    assert_eq!(
        walk.add_page(json!({ "resources": resources(1..3) }))
            .unwrap(),
        None
    );
    assert_eq!(walk.finish().len(), 3);
}

#[test]
fn the_item_cap_names_the_count_and_the_option_per_kind() {
    let bounds = ListBounds {
        max_resources: 3,
        max_resource_templates: 1,
        max_prompts: 2,
        ..ListBounds::default()
    };
    let mut walk = ListBuilder::<Resource>::new(&bounds);
    walk.add_page(json!({ "resources": resources(0..2), "nextCursor": "a" }))
        .unwrap();
    assert_eq!(
        message(walk.add_page(json!({ "resources": resources(2..4) }))),
        "resources/list page 2: the server lists 4 resources by this page; maxResources is 3"
    );
    // Exactly at the cap is fine.
    assert_eq!(
        walk.add_page(json!({ "resources": resources(2..3) }))
            .unwrap(),
        None
    );

    let templates = json!({ "resourceTemplates": [
        { "uriTemplate": "file:///{a}", "name": "a" },
        { "uriTemplate": "file:///{b}", "name": "b" }
    ]});
    assert_eq!(
        message(ListBuilder::<ResourceTemplate>::new(&bounds).add_page(templates)),
        "resources/templates/list page 1: the server lists 2 resource templates by this page; maxResourceTemplates is 1"
    );
    let prompts = json!({ "prompts": [{ "name": "a" }, { "name": "b" }, { "name": "c" }] });
    assert_eq!(
        message(ListBuilder::<Prompt>::new(&bounds).add_page(prompts)),
        "prompts/list page 1: the server lists 3 prompts by this page; maxPrompts is 2"
    );
}

#[test]
fn the_brief_example_of_the_cap_message() {
    let bounds = ListBounds {
        max_resources: 256,
        ..ListBounds::default()
    };
    let error = ListBuilder::<Resource>::new(&bounds)
        .add_page(json!({ "resources": resources(0..300) }))
        .unwrap_err();
    assert!(
        error
            .message()
            .contains("server lists 300 resources by this page; maxResources is 256"),
        "{}",
        error.message()
    );
}

#[test]
fn duplicates_fail_on_one_page_and_across_pages() {
    assert_eq!(
        message(walk().add_page(json!({ "resources": [resource(0), resource(1), resource(0)] }))),
        "resources/list page 1: resources[2]: the uri duplicates another resource's uri"
    );
    let mut across = walk();
    across
        .add_page(json!({ "resources": resources(0..2), "nextCursor": "a" }))
        .unwrap();
    assert_eq!(
        message(across.add_page(json!({ "resources": [resource(5), resource(1)] }))),
        "resources/list page 2: resources[1]: the uri duplicates another resource's uri"
    );
    // A repeated name is fine: the URI is the identity. URIs compare byte for byte.
    let labels = json!({ "resources": [
        { "uri": "file:///a", "name": "same" },
        { "uri": "file:///A", "name": "same" },
        { "uri": "file:///%61", "name": "same" }
    ]});
    assert_eq!(walk().add_page(labels).unwrap(), None);

    let templates = json!({ "resourceTemplates": [
        { "uriTemplate": "file:///{a}", "name": "a" },
        { "uriTemplate": "file:///{a}", "name": "b" }
    ]});
    assert_eq!(
        message(ListBuilder::<ResourceTemplate>::new(&ListBounds::default()).add_page(templates)),
        "resources/templates/list page 1: resourceTemplates[1]: the uriTemplate duplicates another template's uriTemplate"
    );
    let prompts = json!({ "prompts": [{ "name": "a" }, { "name": "a", "title": "Other" }] });
    assert_eq!(
        message(ListBuilder::<Prompt>::new(&ListBounds::default()).add_page(prompts)),
        "prompts/list page 1: prompts[1]: the prompt name duplicates another prompt's name"
    );
}

#[test]
fn a_legacy_cursor_is_a_non_empty_string() {
    for cursor in [json!(""), json!(null), json!(3), json!(["a"]), json!({})] {
        assert_eq!(
            message(walk().add_page(json!({ "resources": [], "nextCursor": cursor }))),
            "resources/list page 1: nextCursor is not a non-empty string",
            "{cursor}"
        );
    }
}

#[test]
fn a_modern_empty_cursor_continues_once() {
    let mut walk = walk().empty_cursor_continues(true);
    assert_eq!(
        walk.add_page(json!({ "resources": resources(0..1), "nextCursor": "" }))
            .unwrap()
            .as_deref(),
        Some("")
    );
    assert_eq!(
        message(walk.add_page(json!({ "resources": resources(1..2), "nextCursor": "" }))),
        "resources/list page 2: nextCursor repeats a cursor already seen"
    );
}

#[test]
fn a_repeated_cursor_ends_the_walk() {
    let mut walk = walk();
    walk.add_page(json!({ "resources": [], "nextCursor": "x" }))
        .unwrap();
    walk.add_page(json!({ "resources": [], "nextCursor": "y" }))
        .unwrap();
    assert_eq!(
        message(walk.add_page(json!({ "resources": [], "nextCursor": "x" }))),
        "resources/list page 3: nextCursor repeats a cursor already seen"
    );
}

#[test]
fn the_page_cap_ends_the_walk() {
    let bounds = ListBounds {
        max_pages: 2,
        ..ListBounds::default()
    };
    let mut walk = ListBuilder::<Resource>::new(&bounds);
    walk.add_page(json!({ "resources": [], "nextCursor": "1" }))
        .unwrap();
    assert_eq!(
        message(walk.add_page(json!({ "resources": [], "nextCursor": "2" }))),
        "resources/list page 2: the listing has more than 2 pages; maxCatalogPages is 2"
    );
    // The last allowed page, without a cursor, is fine.
    assert_eq!(walk.add_page(json!({ "resources": [] })).unwrap(), None);
}

#[test]
fn encoded_len_counts_the_compact_encoding() {
    let value = json!({ "a": [1, "é\n"], "b": null });
    assert_eq!(
        encoded_len(&value),
        serde_json::to_vec(&value).unwrap().len()
    );
}
