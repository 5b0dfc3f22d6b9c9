use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::declaration::{Node, write_canonical};
use super::source::flow_failed;
use super::*;
use crate::catalog::Catalog;
use crate::error::{Error, ErrorKind};
use crate::session::ToolResult;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};

fn schema(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("object expected"),
    }
}

/// A real, validated catalog of these (name, description) tools.
fn tools(specs: &[(&str, Option<&str>)]) -> Catalog {
    let entries: Vec<Value> = specs
        .iter()
        .map(|(name, description)| {
            let mut tool = json!({
                "name": name,
                "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}
            });
            if let Some(d) = description {
                tool["description"] = json!(d);
            }
            tool
        })
        .collect();
    let mut builder = crate::catalog::CatalogBuilder::new(&crate::Limits::default());
    builder.add_page(json!({ "tools": entries })).unwrap();
    builder.finish()
}

fn names(decls: &[FlowDeclaration]) -> Vec<&str> {
    decls.iter().map(|d| d.name.as_str()).collect()
}

fn ok_result() -> ToolResult {
    ToolResult {
        content: vec![],
        is_error: false,
        structured_content: None,
    }
}

fn source(decls: Vec<FlowDeclaration>) -> FlowSource {
    decls
        .into_iter()
        .map(|d| Flow::new(d, invoker_fn(|_| async { Ok(ok_result()) })))
        .collect()
}

#[test]
fn description_with_and_without_server_text() {
    let t = tools(&[
        ("a", Some("Finds things.")),
        ("b", None),
        ("c", Some("")),
        ("d", Some("  \n")),
    ]);
    let d = project("srv", &t, &ProjectionOptions::default()).unwrap();
    assert_eq!(
        d[0].description,
        "MCP tool \"a\" on server \"srv\". Server-supplied description: Finds things."
    );
    assert_eq!(d[1].description, "MCP tool \"b\" on server \"srv\"");
    assert_eq!(d[2].description, d[2].description.replace(". Server", ""));
    assert_eq!(d[3].description, "MCP tool \"d\" on server \"srv\"");
}

#[test]
fn names_with_default_and_custom_prefix() {
    let t = tools(&[("create_issue", None), ("list", None)]);
    let d = project("github", &t, &ProjectionOptions::default()).unwrap();
    assert_eq!(names(&d), ["mcp/github/create_issue", "mcp/github/list"]);
    assert_eq!(d[0].server, "github");
    assert_eq!(d[0].tool, "create_issue");
    let custom = ProjectionOptions::checked(vec![], vec![], Some("gh".into())).unwrap();
    let d = project("github", &t, &custom).unwrap();
    assert_eq!(names(&d), ["gh/create_issue", "gh/list"]);
    assert_eq!(d[0].tool, "create_issue");
}

#[test]
fn declaration_carries_input_document_and_shared_envelope() {
    let t = tools(&[("a", None)]);
    let d = &project("s", &t, &ProjectionOptions::default()).unwrap()[0];
    assert_eq!(&d.input_document, t.tools()[0].input_schema());
    assert_eq!(d.capabilities, capabilities());
    assert_eq!(d.effects, effects());
    let v = serde_json::to_value(d).unwrap();
    for key in [
        "name",
        "description",
        "inputDocument",
        "server",
        "tool",
        "capabilities",
        "effects",
        "digest",
        "output",
    ] {
        assert!(v.get(key).is_some(), "{key} missing from {v}");
    }
    assert_eq!(
        v["effects"],
        json!({"reads": ["**"], "writes": ["**"], "mode": "expected",
               "onConflict": "serialize", "tier": "irreversible"})
    );
    assert_eq!(v["output"]["required"], json!(["content", "isError"]));
    assert_eq!(d.digest.len(), 64);
    assert!(
        d.digest
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
}

#[test]
fn include_then_exclude_in_catalog_order() {
    let t = tools(&[("a", None), ("b", None), ("c", None), ("d", None)]);
    let o = ProjectionOptions {
        include: vec!["d".into(), "b".into(), "c".into()],
        exclude: vec!["c".into(), "zzz".into()],
        name_prefix: None,
    };
    assert_eq!(
        names(&project("s", &t, &o).unwrap()),
        ["mcp/s/b", "mcp/s/d"]
    );
    let o = ProjectionOptions {
        exclude: vec!["a".into()],
        ..Default::default()
    };
    assert_eq!(
        names(&project("s", &t, &o).unwrap()),
        ["mcp/s/b", "mcp/s/c", "mcp/s/d"]
    );
}

#[test]
fn include_unknown_is_an_error_only_when_checked() {
    let t = tools(&[("a", None)]);
    let o = ProjectionOptions {
        include: vec!["a".into(), "nope".into()],
        ..Default::default()
    };
    let err = project("srv", &t, &o).unwrap_err();
    assert_eq!(err.kind(), ProjectionErrorKind::UnknownInclude);
    assert_eq!(err.name(), Some("nope"));
    assert_eq!(err.server(), Some("srv"));
    assert!(err.to_string().contains("\"nope\""), "{err}");
    let unchecked = project_unchecked("srv", &t, &o);
    assert_eq!(names(&unchecked), ["mcp/srv/a"]);
    let e: Error = err.into();
    assert_eq!(e.kind(), ErrorKind::InvalidConfig);
}

#[test]
fn empty_prefix_is_refused_by_checked_paths() {
    let err = ProjectionOptions::checked(vec![], vec![], Some(String::new())).unwrap_err();
    assert_eq!(err.kind(), ProjectionErrorKind::EmptyNamePrefix);
    assert_eq!(err.to_string(), "namePrefix must be a non-empty string");
    let o = ProjectionOptions {
        name_prefix: Some(String::new()),
        ..Default::default()
    };
    assert!(o.validate().is_err());
    let t = tools(&[("a", None)]);
    let err = project("srv", &t, &o).unwrap_err();
    assert_eq!(
        err.to_string(),
        "server \"srv\": namePrefix must be a non-empty string"
    );
    // The unchecked projection uses the prefix literally.
    let d = project_unchecked("srv", &t, &o);
    assert_eq!(names(&d), ["/a"]);
    assert!(ProjectionOptions::default().validate().is_ok());
}

#[test]
fn project_over_an_empty_catalog() {
    let catalog = Catalog::empty();
    assert!(
        project("s", &catalog, &ProjectionOptions::default())
            .unwrap()
            .is_empty()
    );
    let o = ProjectionOptions {
        include: vec!["x".into()],
        ..Default::default()
    };
    assert!(project("s", &catalog, &o).is_err());
    assert!(project_unchecked("s", &catalog, &o).is_empty());
}

#[test]
fn duplicate_names_fail_composition_but_default_prefixes_do_not_collide() {
    let t = tools(&[("search", None)]);
    let same = ProjectionOptions {
        name_prefix: Some("tools".into()),
        ..Default::default()
    };
    let err = compose([
        source(project("one", &t, &same).unwrap()),
        source(project("two", &t, &same).unwrap()),
    ])
    .unwrap_err();
    assert_eq!(err.kind(), ProjectionErrorKind::DuplicateFlowName);
    assert_eq!(err.name(), Some("tools/search"));
    assert!(err.to_string().contains("\"tools/search\""));

    let def = ProjectionOptions::default();
    let catalog = compose([
        source(project("one", &t, &def).unwrap()),
        source(project("two", &t, &def).unwrap()),
    ])
    .unwrap();
    let listed: Vec<&str> = catalog.declarations().map(|d| d.name.as_str()).collect();
    assert_eq!(listed, ["mcp/one/search", "mcp/two/search"]);
    assert_eq!(catalog.len(), 2);
    assert_eq!(
        catalog.get("mcp/two/search").unwrap().declaration.server,
        "two"
    );
    assert!(catalog.get("mcp/three/search").is_none());
}

#[tokio::test]
async fn invoke_dispatches_by_name_and_unknown_calls_nothing() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let decl = FlowDeclaration::new("x/y", "d", "x", "y", Map::new());
    let flow = Flow::new(
        decl,
        invoker_fn(move |args| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                // A tool-level failure is data.
                Ok(ToolResult {
                    content: vec![json!({"type": "text", "text": args.len().to_string()})],
                    is_error: true,
                    structured_content: None,
                })
            }
        }),
    );
    let catalog = compose([FlowSource::new(vec![flow])]).unwrap();
    let err = catalog.invoke("x/z", Map::new()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ToolNotFound);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let result = catalog.invoke("x/y", Map::new()).await.unwrap();
    assert!(result.is_error);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn session_errors_become_flow_failed_with_the_same_message() {
    let e = flow_failed(Error::timeout("tools/call timed out after 5 ms"));
    assert_eq!(e.kind(), ErrorKind::FlowFailed);
    assert_eq!(e.message(), "tools/call timed out after 5 ms");
}

fn base() -> FlowDeclaration {
    FlowDeclaration::new(
        "mcp/s/t",
        describe("s", "t", Some("Does t.")),
        "s",
        "t",
        schema(json!({"type": "object", "properties": {"a": {"type": "integer"}}})),
    )
}

#[test]
fn digest_is_stable_and_changes_with_every_field() {
    let d = base();
    assert_eq!(d.digest, base().digest);
    assert_eq!(d.digest, d.compute_digest());
    type Mutation = Box<dyn Fn(&mut FlowDeclaration)>;
    let mutations: Vec<Mutation> = vec![
        Box::new(|d| d.name.push('x')),
        Box::new(|d| d.description.push('x')),
        Box::new(|d| d.server.push('x')),
        Box::new(|d| d.tool.push('x')),
        Box::new(|d| {
            d.input_document.insert("required".into(), json!(["a"]));
        }),
        Box::new(|d| {
            d.input_document["properties"]["a"]["type"] = json!("string");
        }),
        Box::new(|d| {
            d.capabilities.pop();
        }),
        Box::new(|d| d.effects.tier = "reversible"),
        Box::new(|d| d.effects.reads = vec!["/tmp/**".into()]),
        Box::new(|d| {
            d.output.0.insert("title".into(), json!("x"));
        }),
    ];
    let mut seen = HashSet::new();
    seen.insert(d.digest.clone());
    for (i, mutate) in mutations.iter().enumerate() {
        let mut changed = base();
        mutate(&mut changed);
        changed.refresh_digest();
        assert!(
            seen.insert(changed.digest.clone()),
            "mutation {i} kept the digest"
        );
    }
}

#[test]
fn digest_ignores_key_insertion_order() {
    let mut a = Map::new();
    a.insert("type".into(), json!("object"));
    a.insert(
        "b".into(),
        json!({"y": 1, "x": [2, {"q": null, "p": true}]}),
    );
    let mut b = Map::new();
    b.insert(
        "b".into(),
        json!({"x": [2, {"p": true, "q": null}], "y": 1}),
    );
    b.insert("type".into(), json!("object"));
    let da = FlowDeclaration::new("n", "d", "s", "t", a);
    let db = FlowDeclaration::new("n", "d", "s", "t", b);
    assert_eq!(da.digest, db.digest);
}

#[test]
fn canonical_json_is_sorted_and_compact() {
    let v = json!({"b": [1, 2.5, "x\"y", null, {"z": false, "a": {}}], "a": [], "é": -3});
    let mut out = Vec::new();
    write_canonical(&mut out, Node::Value(&v));
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#"{"a":[],"b":[1,2.5,"x\"y",null,{"a":{},"z":false}],"é":-3}"#
    );
}

#[test]
fn canonical_writer_survives_deep_input() {
    let mut v = json!(1);
    for _ in 0..20_000 {
        v = Value::Array(vec![v]);
    }
    let mut out = Vec::new();
    write_canonical(&mut out, Node::Value(&v));
    assert_eq!(out.len(), 40_001);
    // Drop iteratively as well: serde_json's Drop for deep values recurses.
    let mut cur = v;
    while let Value::Array(mut items) = cur {
        cur = items.pop().unwrap_or(Value::Null);
    }
}

/// Pins the digest of a fixed declaration: proves it is the same in every
/// process and run (and catches accidental changes to the encoding).
#[test]
fn digest_is_pinned() {
    assert_eq!(base().digest, PINNED_DIGEST);
}

const PINNED_DIGEST: &str = "ed61fb39c9dfe99a2938112a9ecafe0cb24376d1d8836dcaaebe0c453a4b898d";

#[test]
fn capability_parse_cases() {
    for bad in [
        "", "*", "a", "a:b", "a::c", ":b:c", "a:b:", "::", "a :b:c", "a:b\n:c",
    ] {
        assert!(Capability::parse(bad).is_err(), "{bad:?} parsed");
    }
    let c = Capability::parse("fs:read:/home/me/My Files/**").unwrap();
    assert_eq!(c.resource(), "/home/me/My Files/**");
    assert_eq!(c.action(), Some(Action::FsRead));
    let c: Capability = "net:post:https://a.example:8443".parse().unwrap();
    assert_eq!(
        (c.namespace(), c.operation(), c.resource()),
        ("net", "post", "https://a.example:8443")
    );
    let c = Capability::parse("x:y:z:w").unwrap();
    assert_eq!(c.resource(), "z:w");
    assert_eq!(c.action(), None);
    assert!(
        Capability::parse("*")
            .unwrap_err()
            .to_string()
            .contains("fewer than three")
    );
    assert_eq!(
        Action::NetPost
            .capability("https://a.example")
            .unwrap()
            .to_string(),
        "net:post:https://a.example"
    );
    assert!(Action::NetPost.capability("").is_err());
}

#[test]
fn every_capability_string_parses_and_covers_every_action() {
    let caps = capabilities();
    assert_eq!(caps.len(), Action::ALL.len());
    let mut actions = HashSet::new();
    for s in &caps {
        assert!(!s.contains('*') || s.ends_with(":**"), "{s}");
        let c = Capability::parse(s).unwrap();
        assert_eq!(c.resource(), "**");
        assert_eq!(c.to_string(), *s);
        assert!(actions.insert(c.action().unwrap()));
    }
    assert!(caps.contains(&"net:post:**".to_owned()));
    assert!(caps.contains(&"fs:read:**".to_owned()));
    assert!(!caps.contains(&"*".to_owned()));
}
