use super::*;
use crate::listing::ListBuilder;
use crate::listing::sealed::Entry;
use serde_json::json;

fn bounds() -> ListBounds {
    ListBounds::default()
}

/// Parses one resource entry; the rule on failure.
fn resource(entry: Value) -> Result<Resource, String> {
    Resource::parse(entry, &bounds())
}

fn template(entry: Value) -> Result<ResourceTemplate, String> {
    ResourceTemplate::parse(entry, &bounds())
}

/// A good resource with `member` set to `value` (or removed, for `null` in
/// `remove`).
fn with(member: &str, value: Value) -> Value {
    let mut entry = json!({ "uri": "file:///project/src/main.rs", "name": "main.rs" });
    entry[member] = value;
    entry
}

fn rule(entry: Value) -> String {
    resource(entry).unwrap_err()
}

#[test]
fn the_spec_example_is_accepted_and_kept() {
    // beyond-tools.md §1.1, with the elided members filled in.
    let page = json!({
        "resultType": "complete",
        "resources": [{
            "uri": "file:///project/src/main.rs",
            "name": "main.rs",
            "title": "Rust Software Application Main File",
            "description": "Primary application entry point",
            "mimeType": "text/x-rust",
            "size": 1234,
            "annotations": {
                "audience": ["user", "assistant"],
                "priority": 0.8,
                "lastModified": "2025-01-12T15:00:58Z"
            },
            "icons": [
                { "src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "light" },
                { "src": "data:image/svg+xml;base64,PHN2Zy8+", "sizes": ["any"] }
            ],
            "_meta": { "vendor/x": { "deep": [1, 2] } },
            "unknownMember": true
        }],
        "nextCursor": "next",
        "ttlMs": 300000,
        "cacheScope": "public"
    });
    let mut walk = ListBuilder::<Resource>::new(&bounds());
    assert_eq!(walk.add_page(page).unwrap().as_deref(), Some("next"));
    let resources = walk.finish();
    let r = &resources[0];
    assert_eq!(r.uri, "file:///project/src/main.rs");
    assert_eq!(r.name, "main.rs");
    assert_eq!(
        r.title.as_deref(),
        Some("Rust Software Application Main File")
    );
    assert_eq!(r.mime_type.as_deref(), Some("text/x-rust"));
    assert_eq!(r.size, Some(1234));
    let annotations = r.annotations.as_ref().unwrap();
    assert_eq!(
        annotations.audience.as_deref(),
        Some(&[Role::User, Role::Assistant][..])
    );
    assert_eq!(annotations.priority, Some(0.8));
    assert_eq!(
        annotations.last_modified.as_deref(),
        Some("2025-01-12T15:00:58Z")
    );
    assert_eq!(r.icons.len(), 2);
    assert_eq!(r.icons[0].theme, Some(Theme::Light));
    assert_eq!(r.icons[1].sizes, ["any"]);
    // Serialized as the wire form, unknown members left out.
    assert_eq!(
        serde_json::to_value(r).unwrap(),
        json!({
            "uri": "file:///project/src/main.rs",
            "name": "main.rs",
            "title": "Rust Software Application Main File",
            "description": "Primary application entry point",
            "mimeType": "text/x-rust",
            "size": 1234,
            "annotations": {
                "audience": ["user", "assistant"],
                "priority": 0.8,
                "lastModified": "2025-01-12T15:00:58Z"
            },
            "icons": [
                { "src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "light" },
                { "src": "data:image/svg+xml;base64,PHN2Zy8+", "sizes": ["any"] }
            ],
            "_meta": { "vendor/x": { "deep": [1, 2] } }
        })
    );
}

#[test]
fn a_minimal_resource_serializes_minimally() {
    let r = resource(json!({ "uri": "skill://acme/SKILL.md", "name": "SKILL.md" })).unwrap();
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({ "uri": "skill://acme/SKILL.md", "name": "SKILL.md" })
    );
}

#[test]
fn the_uri_follows_the_uri_rules() {
    assert_eq!(rule(json!({ "name": "x" })), "uri is missing");
    assert_eq!(rule(with("uri", json!(null))), "uri is not a string");
    assert_eq!(rule(with("uri", json!(""))), "a URI is empty");
    assert_eq!(
        rule(with("uri", json!("src/main.rs"))),
        "a URI does not start with a scheme"
    );
    assert_eq!(
        rule(with("uri", json!("file:///a b"))),
        "a URI contains whitespace"
    );
    assert_eq!(
        rule(with("uri", json!("file:///a\u{200F}b"))),
        "a URI contains a format character (Unicode Cf)"
    );
    assert_eq!(
        rule(with("uri", json!("file:///{path}"))),
        "a URI contains '{' or '}'"
    );
    let small = ListBounds {
        max_uri_bytes: 16,
        ..bounds()
    };
    assert_eq!(
        Resource::parse(with("uri", json!("file:///0123456789")), &small).unwrap_err(),
        "a URI of 18 bytes; maxUriBytes is 16"
    );
    // Kept as spelled: no normalisation.
    let spelled = resource(with("uri", json!("FILE:///données/%7Euser/../x"))).unwrap();
    assert_eq!(spelled.uri, "FILE:///données/%7Euser/../x");
}

#[test]
fn the_name_is_a_bounded_label() {
    assert_eq!(rule(json!({ "uri": "file:///a" })), "name is missing");
    assert_eq!(rule(with("name", json!(3))), "name is not a string");
    assert_eq!(rule(with("name", json!(""))), "name is empty");
    assert_eq!(
        rule(with("name", json!("a\u{2028}b"))),
        "name contains a line or paragraph separator (U+2028/U+2029)"
    );
    assert_eq!(
        rule(with("name", json!("\u{FFFD}"))),
        "name contains U+FFFD (a lone surrogate or a replacement character)"
    );
    let label = "é".repeat(MAX_LABEL_BYTES / 2);
    assert!(resource(with("name", json!(label))).is_ok());
    assert_eq!(
        rule(with("name", json!(format!("{label}x")))),
        "name is 1025 bytes; the fixed limit is 1024"
    );
    // A slash, a dot, a space: a label is not a name.
    assert!(resource(with("name", json!("src/main.rs: the entry point"))).is_ok());
    assert!(resource(with("name", json!(".."))).is_ok());
}

#[test]
fn optional_members_have_their_types() {
    assert_eq!(rule(with("title", json!(null))), "title is not a string");
    assert_eq!(
        rule(with("title", json!("Main\u{202E}sr.exe"))),
        "title contains a format character (Unicode Cf)"
    );
    assert_eq!(
        rule(with("description", json!(["x"]))),
        "description is not a string"
    );
    // A description is free text: newlines and all.
    assert!(resource(with("description", json!("line one\nline two\t"))).is_ok());
    assert_eq!(rule(with("_meta", json!([]))), "_meta is not an object");
    assert_eq!(rule(with("_meta", json!(null))), "_meta is not an object");
}

#[test]
fn size_is_a_non_negative_safe_integer_hint() {
    assert_eq!(resource(with("size", json!(0))).unwrap().size, Some(0));
    let max_safe = (1u64 << 53) - 1;
    assert_eq!(
        resource(with("size", json!(max_safe))).unwrap().size,
        Some(max_safe)
    );
    for bad in [
        json!(-1),
        json!(1.5),
        json!(12.0),
        json!("12"),
        json!(null),
        json!(max_safe + 1),
    ] {
        assert_eq!(
            rule(with("size", bad.clone())),
            "size is not a non-negative safe integer",
            "{bad}"
        );
    }
}

#[test]
fn mime_types_have_the_rfc_6838_form() {
    for ok in [
        "text/plain",
        "text/x-rust",
        "image/svg+xml",
        "application/vnd.ms-excel",
        "text/plain; charset=utf-8",
        "text/plain;charset=\"utf-8\";format=flowed",
        "multipart/mixed; boundary=\"a b\\\"c\"",
        "text/plain;",
        "inode/directory",
    ] {
        assert!(resource(with("mimeType", json!(ok))).is_ok(), "{ok}");
    }
    for bad in [
        "text",
        "text/",
        "/plain",
        "*/*",
        "text/plain/x",
        "text/pl ain",
        "text/plain; charset",
        "text/plain; charset=",
        "text/plain; =utf-8",
        "text/plain; charset=\"utf-8",
        "text/plain; charset=ü",
        "téxt/plain",
        " text/plain",
    ] {
        assert_eq!(
            rule(with("mimeType", json!(bad))),
            "mimeType is not of the form type/subtype *(;parameter)",
            "{bad:?}"
        );
    }
    assert_eq!(
        rule(with("mimeType", json!("text/plain;\tcharset=utf-8"))),
        "mimeType contains a control character (Unicode Cc)"
    );
    assert_eq!(rule(with("mimeType", json!(7))), "mimeType is not a string");
    let name = "a".repeat(127);
    assert!(resource(with("mimeType", json!(format!("text/{name}")))).is_ok());
    assert_eq!(
        rule(with("mimeType", json!(format!("text/{name}b")))),
        "mimeType is not of the form type/subtype *(;parameter)"
    );
    let long = format!("{name}/{name}");
    assert_eq!(
        rule(with("mimeType", json!(format!("{long};a=b")))),
        "mimeType is 259 bytes; the fixed limit is 255"
    );
}

#[test]
fn annotations_are_checked() {
    let ok = resource(with(
        "annotations",
        json!({ "audience": ["assistant", "assistant"], "priority": 1, "extra": 3 }),
    ))
    .unwrap();
    let annotations = ok.annotations.unwrap();
    assert_eq!(annotations.audience, Some(vec![Role::Assistant]));
    assert_eq!(annotations.priority, Some(1.0));
    // An unparseable lastModified stays an opaque string.
    let opaque = resource(with("annotations", json!({ "lastModified": "yesterday" }))).unwrap();
    assert_eq!(
        opaque.annotations.unwrap().last_modified.as_deref(),
        Some("yesterday")
    );
    assert!(resource(with("annotations", json!({}))).is_ok());

    for (value, expected) in [
        (json!([]), "annotations is not an object"),
        (json!(null), "annotations is not an object"),
        (
            json!({ "audience": "user" }),
            "annotations: audience is not an array",
        ),
        (
            json!({ "audience": ["user", "system"] }),
            "annotations: audience holds a value other than \"user\" and \"assistant\"",
        ),
        (
            json!({ "audience": [1] }),
            "annotations: audience holds a value other than \"user\" and \"assistant\"",
        ),
        (
            json!({ "priority": 1.01 }),
            "annotations: priority is not a number in [0, 1]",
        ),
        (
            json!({ "priority": -0.1 }),
            "annotations: priority is not a number in [0, 1]",
        ),
        (
            json!({ "priority": "high" }),
            "annotations: priority is not a number in [0, 1]",
        ),
        (
            json!({ "lastModified": 1700000000 }),
            "annotations: lastModified is not a string",
        ),
    ] {
        assert_eq!(
            rule(with("annotations", value.clone())),
            expected,
            "{value}"
        );
    }
}

#[test]
fn icons_are_bounded_and_checked() {
    let icon = json!({ "src": "https://example.com/i.png" });
    let eight = vec![icon.clone(); MAX_ICONS];
    assert_eq!(
        resource(with("icons", json!(eight))).unwrap().icons.len(),
        8
    );
    let nine = vec![icon; MAX_ICONS + 1];
    assert_eq!(
        rule(with("icons", json!(nine))),
        "icons lists 9 icons; the fixed limit is 8"
    );
    let src = format!(
        "data:image/png;base64,{}",
        "A".repeat(MAX_ICON_SRC_BYTES - 22)
    );
    assert_eq!(src.len(), MAX_ICON_SRC_BYTES);
    let big = ListBounds {
        max_entry_document_bytes: 1 << 20,
        ..bounds()
    };
    assert!(Resource::parse(with("icons", json!([{ "src": src }])), &big).is_ok());
    assert_eq!(
        Resource::parse(with("icons", json!([{ "src": format!("{src}A") }])), &big).unwrap_err(),
        "icons[0]: a URI of 65537 bytes; the fixed icon src limit is 65536"
    );

    for (value, expected) in [
        (json!({}), "icons is not an array"),
        (json!([3]), "icons[0]: the icon is not an object"),
        (json!([{}]), "icons[0]: src is missing"),
        (json!([{ "src": 1 }]), "icons[0]: src is not a string"),
        (
            json!([{ "src": "icon.png" }]),
            "icons[0]: a URI does not start with a scheme",
        ),
        (
            json!([{ "src": "data:image/svg+xml,<svg onload='x'> </svg>" }]),
            "icons[0]: a URI contains whitespace",
        ),
        (
            json!([{ "src": "https://x/i.png", "mimeType": "png" }]),
            "icons[0]: mimeType is not of the form type/subtype *(;parameter)",
        ),
        (
            json!([{ "src": "https://x/i.png", "sizes": "48x48" }]),
            "icons[0]: sizes is not an array",
        ),
        (
            json!([{ "src": "https://x/i.png", "sizes": ["48"] }]),
            "icons[0]: sizes holds an entry other than \"WxH\" or \"any\"",
        ),
        (
            json!([{ "src": "https://x/i.png", "sizes": ["48X48"] }]),
            "icons[0]: sizes holds an entry other than \"WxH\" or \"any\"",
        ),
        (
            json!([{ "src": "https://x/i.png", "sizes": [48] }]),
            "icons[0]: sizes holds an entry other than \"WxH\" or \"any\"",
        ),
        (
            json!([{ "src": "https://x/i.png", "theme": "blue" }]),
            "icons[0]: theme is neither \"light\" nor \"dark\"",
        ),
        (
            json!([{ "src": "https://x/i.png" }, { "src": "" }]),
            "icons[1]: a URI is empty",
        ),
    ] {
        assert_eq!(rule(with("icons", value.clone())), expected, "{value}");
    }
}

#[test]
fn the_entry_document_is_bounded_without_its_uri() {
    let small = ListBounds {
        max_entry_document_bytes: 64,
        ..bounds()
    };
    // {"name":"n"} is 12 bytes; the description brings it to 64 exactly.
    let fits = json!({
        "uri": format!("file:///{}", "u".repeat(200)),
        "name": "n",
        "description": "d".repeat(64 - 12 - 17)
    });
    assert!(Resource::parse(fits.clone(), &small).is_ok());
    let mut over = fits;
    over["description"] = json!("d".repeat(64 - 12 - 16));
    assert_eq!(
        Resource::parse(over, &small).unwrap_err(),
        "the entry is 65 bytes of JSON without its uri; maxEntryDocumentBytes is 64"
    );
    // Icons and _meta count.
    let meta = json!({ "uri": "file:///a", "name": "n", "_meta": { "k": "v".repeat(60) } });
    assert!(
        Resource::parse(meta, &small)
            .unwrap_err()
            .ends_with("maxEntryDocumentBytes is 64")
    );
}

#[test]
fn the_spec_template_is_accepted() {
    let page = json!({ "resourceTemplates": [{
        "uriTemplate": "file:///{path}",
        "name": "Project Files",
        "title": "📁 Project Files",
        "description": "Access files in the project directory",
        "mimeType": "application/octet-stream",
        "annotations": { "audience": ["user"] },
        "icons": [{ "src": "https://example.com/folder.svg", "mimeType": "image/svg+xml" }],
        "_meta": {}
    }]});
    let mut walk = ListBuilder::<ResourceTemplate>::new(&bounds());
    assert_eq!(walk.add_page(page).unwrap(), None);
    let templates = walk.finish();
    assert_eq!(templates[0].uri_template, "file:///{path}");
    assert_eq!(templates[0].title.as_deref(), Some("📁 Project Files"));
    assert_eq!(
        serde_json::to_value(&templates[0]).unwrap()["uriTemplate"],
        "file:///{path}"
    );
}

#[test]
fn a_template_follows_the_template_rules() {
    let with = |member: &str, value: Value| {
        let mut entry = json!({ "uriTemplate": "file:///{path}", "name": "files" });
        entry[member] = value;
        template(entry).map(|_| ())
    };
    assert_eq!(
        template(json!({ "name": "x" })).unwrap_err(),
        "uriTemplate is missing"
    );
    assert_eq!(
        with("uriTemplate", json!(["x"])).unwrap_err(),
        "uriTemplate is not a string"
    );
    assert_eq!(
        with("uriTemplate", json!("file:///{path")).unwrap_err(),
        "a URI template has an unclosed expression"
    );
    assert_eq!(
        with("uriTemplate", json!("{+base}/x")).unwrap_err(),
        "a URI template does not start with a scheme"
    );
    assert_eq!(
        with("uriTemplate", json!("file:///{pa th}")).unwrap_err(),
        "a URI template contains whitespace"
    );
    assert_eq!(with("name", json!("")).unwrap_err(), "name is empty");
    assert_eq!(
        with("title", json!("a\u{0}")).unwrap_err(),
        "title contains a control character (Unicode Cc)"
    );
    assert_eq!(
        with("mimeType", json!("binary")).unwrap_err(),
        "mimeType is not of the form type/subtype *(;parameter)"
    );
    assert_eq!(
        with("annotations", json!({ "priority": 2 })).unwrap_err(),
        "annotations: priority is not a number in [0, 1]"
    );
    assert_eq!(
        with("icons", json!([{}])).unwrap_err(),
        "icons[0]: src is missing"
    );
    assert_eq!(
        with("_meta", json!(1)).unwrap_err(),
        "_meta is not an object"
    );
    assert_eq!(
        template(json!(null)).unwrap_err(),
        "the entry is not an object"
    );

    let small = ListBounds {
        max_entry_document_bytes: 20,
        ..bounds()
    };
    let entry = json!({
        "uriTemplate": format!("file:///{{{}}}", "p".repeat(100)),
        "name": "n",
        "description": "0123456789"
    });
    assert_eq!(
        ResourceTemplate::parse(entry, &small).unwrap_err(),
        "the entry is 39 bytes of JSON without its uriTemplate; maxEntryDocumentBytes is 20"
    );
}

fn template_of(uri_template: &str) -> ResourceTemplate {
    let page = json!({"resourceTemplates": [{"uriTemplate": uri_template, "name": "t"}]});
    let mut walk = crate::listing::ListBuilder::<ResourceTemplate>::new(&Default::default());
    walk.add_page(page).unwrap();
    walk.finish().remove(0)
}

fn values(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn a_template_expands_by_rfc_6570_with_each_operator() {
    let v = values(&[
        ("var", "value"),
        ("hello", "Hello World!"),
        ("path", "/foo/bar"),
    ]);
    for (template, expected) in [
        ("file:///{var}", "file:///value"),
        ("file:///{hello}", "file:///Hello%20World%21"),
        ("file://{+path}/here", "file:///foo/bar/here"),
        ("file:///x{#var}", "file:///x#value"),
        ("file:///x{.var}", "file:///x.value"),
        ("file://{/var,var}", "file:///value/value"),
        ("file:///x{;var}", "file:///x;var=value"),
        (
            "file:///x{?var,hello}",
            "file:///x?var=value&hello=Hello%20World%21",
        ),
        ("file:///x?a=1{&var}", "file:///x?a=1&var=value"),
        ("file:///x{?missing}", "file:///x"),
    ] {
        assert_eq!(
            template_of(template).expand(&v, 4096).unwrap(),
            expected,
            "{template}"
        );
    }
}

#[test]
fn a_value_cannot_climb_out_of_its_segment_and_non_ascii_is_percent_encoded() {
    let template = template_of("file:///project/{name}");
    let uri = template
        .expand(&values(&[("name", "../../etc/passwd")]), 4096)
        .unwrap();
    assert_eq!(uri, "file:///project/..%2F..%2Fetc%2Fpasswd");
    let uri = template.expand(&values(&[("name", "café")]), 4096).unwrap();
    assert_eq!(uri, "file:///project/caf%C3%A9");
}

#[test]
fn an_expansion_past_the_bound_is_refused_naming_it() {
    let template = template_of("file:///{a}{a}{a}{a}");
    let long = "x".repeat(100);
    let error = template.expand(&values(&[("a", &long)]), 300).unwrap_err();
    assert_eq!(error.kind(), crate::ErrorKind::ProtocolError);
    assert!(error.message().contains("longer than 300 bytes"), "{error}");
    assert!(!error.message().contains("xxx"), "{error}");
    assert!(template.expand(&values(&[("a", &long)]), 408).is_ok());
}
