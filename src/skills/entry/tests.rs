use serde_json::{Value, json};

use super::*;

const ZEROS: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

fn file(uri: &str, size: u64) -> Value {
    json!({"uri": uri, "digest": ZEROS, "size": size})
}

/// A valid entry for `skill://acme/billing/refunds/SKILL.md`.
fn refunds() -> Value {
    json!({
        "uri": "skill://acme/billing/refunds/SKILL.md",
        "frontmatter": {
            "name": "refunds",
            "description": "Process customer refund requests per company policy",
            "license": "Apache-2.0"
        },
        "resources": [
            file("skill://acme/billing/refunds/SKILL.md", 3871),
            file("skill://acme/billing/refunds/examples/email.md", 962)
        ]
    })
}

fn with(mut entry: Value, pointer: &str, value: Value) -> Value {
    *entry
        .pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer}")) = value;
    entry
}

fn without(mut entry: Value, pointer: &str) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    entry
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .unwrap()
        .remove(key);
    entry
}

fn first(entry: Value) -> Result<Skill, SkillError> {
    SkillListing::new(SkillLimits::default()).entry(entry)
}

fn refused(entry: Value) -> (SkillCheck, String) {
    let error = first(entry).unwrap_err();
    (error.check(), error.message().to_owned())
}

fn invalid(entry: Value, rule: &str) {
    let shown = crate::error::truncate(&entry.to_string(), 300).to_owned();
    assert_eq!(
        refused(entry),
        (SkillCheck::Entry, format!("skill 1: {rule}")),
        "{shown}"
    );
}

#[test]
fn a_valid_entry_keeps_everything() {
    let skill = first(refunds()).unwrap();
    assert_eq!(skill.uri(), "skill://acme/billing/refunds/SKILL.md");
    assert_eq!(skill.root(), "skill://acme/billing/refunds");
    assert_eq!(skill.name(), "refunds");
    assert_eq!(
        skill.description(),
        "Process customer refund requests per company policy"
    );
    assert_eq!(skill.frontmatter()["license"], "Apache-2.0");
    assert_eq!(skill.position(), Some(1));
    assert!(!skill.is_dynamic());
    assert_eq!(skill.total_size(), Some(3871 + 962));
    let files = skill.files().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(
        files[1].uri(),
        "skill://acme/billing/refunds/examples/email.md"
    );
    assert_eq!(files[1].digest(), ZEROS);
    assert_eq!(files[1].size(), 962);

    let dynamic = first(json!({
        "uri": "skill://reports/daily/SKILL.md",
        "frontmatter": {"name": "daily", "description": "Today's report"},
        "resources": "dynamic"
    }))
    .unwrap();
    assert!(dynamic.is_dynamic());
    assert_eq!(dynamic.resources(), &SkillResources::Dynamic);
    assert_eq!(dynamic.files(), None);
    assert_eq!(dynamic.total_size(), None);

    // A single-segment skill path: the authority is the name.
    let single = first(json!({
        "uri": "skill://git-workflow/SKILL.md",
        "frontmatter": {"name": "git-workflow", "description": "Git conventions"},
        "resources": [file("skill://git-workflow/SKILL.md", 10)]
    }))
    .unwrap();
    assert_eq!(single.root(), "skill://git-workflow");
    // Another scheme, a percent-encoded name segment, a size sent as 5.0.
    first(json!({
        "uri": "github://owner/repo/skills/%72efunds/SKILL.md",
        "frontmatter": {"name": "refunds", "description": "x", "compatibility": "any",
                        "metadata": {"version": "2.1.0", "io.modelcontextprotocol/x": "y"}},
        "resources": [{"uri": "github://owner/repo/skills/refunds/SKILL.md", "digest": ZEROS, "size": 5.0}]
    }))
    .unwrap();
}

#[test]
fn the_uri_rules() {
    let uri = |u: &str| with(refunds(), "/uri", json!(u));
    invalid(json!([]), "the entry is not an object");
    invalid(without(refunds(), "/uri"), "uri is not a string");
    invalid(uri(""), "uri: a URI is empty");
    invalid(
        uri("acme/billing/refunds/SKILL.md"),
        "uri: a URI does not start with a scheme",
    );
    invalid(
        uri("skill://acme/billing/re funds/SKILL.md"),
        "uri: a URI contains whitespace",
    );
    invalid(
        uri("skill://acme/billing/refunds/SKILL.md?v=1"),
        "uri has a query or a fragment",
    );
    invalid(
        uri("skill://acme/billing/refunds/SKILL.md#x"),
        "uri has a query or a fragment",
    );
    invalid(
        uri("skill://acme/billing/refunds/skill.md"),
        "uri does not end in /SKILL.md",
    );
    invalid(
        uri("skill://acme/billing/refunds/README.md"),
        "uri does not end in /SKILL.md",
    );
    invalid(
        uri("skill:acme/billing/refunds/SKILL.md"),
        "uri has no authority (scheme://authority/...)",
    );
    invalid(
        uri("skill:///billing/refunds/SKILL.md"),
        "uri's authority is not an RFC 3986 reg-name",
    );
    invalid(
        uri("skill://user@acme/billing/refunds/SKILL.md"),
        "uri's authority is not an RFC 3986 reg-name",
    );
    invalid(
        uri("skill://acme:80/billing/refunds/SKILL.md"),
        "uri's authority is not an RFC 3986 reg-name",
    );
    invalid(
        uri("skill://acme//refunds/SKILL.md"),
        "uri has an empty, \".\" or \"..\" skill-path segment",
    );
    invalid(
        uri("skill://acme/billing/../refunds/SKILL.md"),
        "uri has an empty, \".\" or \"..\" skill-path segment",
    );
    invalid(
        uri("skill://acme/%2E/refunds/SKILL.md"),
        "uri has an empty, \".\" or \"..\" skill-path segment",
    );
    invalid(
        uri("skill://acme/bil%zzling/refunds/SKILL.md"),
        "uri has a malformed percent-encoding",
    );
    invalid(
        uri("skill://acme/a%2Fb/refunds/SKILL.md"),
        "a uri has a backslash, or percent-encodes '/', '\\' or a control character",
    );
    invalid(
        uri("skill://acme/a\\b/refunds/SKILL.md"),
        "a uri has a backslash, or percent-encodes '/', '\\' or a control character",
    );
    invalid(
        uri("skill://acme/a%00/refunds/SKILL.md"),
        "a uri has a backslash, or percent-encodes '/', '\\' or a control character",
    );
    invalid(
        uri("skill://acme/billing/refund/SKILL.md"),
        "the uri's final skill-path segment, percent-decoded, is not frontmatter.name",
    );
    invalid(
        uri("skill://acme/billing/Refunds/SKILL.md"),
        "the uri's final skill-path segment, percent-decoded, is not frontmatter.name",
    );
    let long = format!("skill://acme/{}/refunds/SKILL.md", "a".repeat(4096));
    invalid(uri(&long), "uri: a URI of 4126 bytes; maxUriBytes is 4096");
}

#[test]
fn the_frontmatter_rules() {
    let set = |key: &str, value: Value| {
        let mut entry = refunds();
        entry["frontmatter"][key] = value;
        entry
    };
    invalid(
        with(refunds(), "/frontmatter", json!("name: refunds")),
        "frontmatter is not an object",
    );
    invalid(
        without(refunds(), "/frontmatter"),
        "frontmatter is not an object",
    );
    invalid(
        without(refunds(), "/frontmatter/name"),
        "frontmatter.name is not a string",
    );
    invalid(set("name", json!(7)), "frontmatter.name is not a string");
    invalid(
        set("name", json!("")),
        "frontmatter.name is not 1 to 64 characters",
    );
    let long = "a".repeat(65);
    invalid(
        with(
            set("name", json!(long)),
            "/uri",
            json!(format!("skill://acme/{long}/SKILL.md")),
        ),
        "frontmatter.name is not 1 to 64 characters",
    );
    for bad in [
        "Refunds",
        "-refunds",
        "refunds-",
        "re--funds",
        "re_funds",
        "réfunds",
    ] {
        invalid(
            set("name", json!(bad)),
            "frontmatter.name is not lowercase letters and digits with single inner hyphens",
        );
    }
    invalid(
        without(refunds(), "/frontmatter/description"),
        "frontmatter.description is not a string",
    );
    invalid(
        set("description", json!("")),
        "frontmatter.description has 0 characters, not 1 to 1024",
    );
    invalid(
        set("description", json!("é".repeat(1025))),
        "frontmatter.description has 1025 characters, not 1 to 1024",
    );
    assert!(first(set("description", json!("é".repeat(1024)))).is_ok());
    invalid(
        set("compatibility", json!("")),
        "frontmatter.compatibility has 0 characters, not 1 to 500",
    );
    invalid(
        set("compatibility", json!("x".repeat(501))),
        "frontmatter.compatibility has 501 characters, not 1 to 500",
    );
    invalid(
        set("compatibility", json!(null)),
        "frontmatter.compatibility is not a string",
    );
    invalid(
        set("metadata", json!({"version": 2})),
        "frontmatter.metadata is not a map of strings to strings",
    );
    invalid(
        set("metadata", json!(["a"])),
        "frontmatter.metadata is not a map of strings to strings",
    );
    invalid(
        set("__proto__", json!({})),
        "frontmatter has a __proto__ key",
    );
    invalid(
        set("extra", json!([{"a": {"__proto__": 1}}])),
        "frontmatter has a __proto__ key",
    );
    let nest = |depth: usize| {
        let mut value = json!(1);
        for _ in 1..depth {
            value = json!([value]);
        }
        value
    };
    // The frontmatter object is depth 1, so 15 more levels are the most.
    assert!(first(set("deep", nest(16))).is_ok());
    invalid(
        set("deep", nest(17)),
        "frontmatter nests 17 deep; SKILL.md frontmatter may nest 16",
    );
    let big = set("extra", json!("x".repeat(65_536)));
    invalid(
        big,
        "frontmatter is longer than 65536 bytes of JSON; maxEntryDocumentBytes is 65536",
    );
}

#[test]
fn the_resources_rules() {
    let files = |files: Value| with(refunds(), "/resources", files);
    let md = || file("skill://acme/billing/refunds/SKILL.md", 1);
    invalid(without(refunds(), "/resources"), "resources is missing");
    invalid(
        files(json!("Dynamic")),
        "resources is neither an array nor \"dynamic\"",
    );
    invalid(
        files(json!(null)),
        "resources is neither an array nor \"dynamic\"",
    );
    invalid(
        files(json!({})),
        "resources is neither an array nor \"dynamic\"",
    );
    invalid(
        files(json!([])),
        "resources does not list the skill's own SKILL.md",
    );
    invalid(
        files(json!([file("skill://acme/billing/refunds/other.md", 1)])),
        "resources does not list the skill's own SKILL.md",
    );
    invalid(
        files(json!([md(), 7])),
        "file 2: the entry is not an object",
    );
    invalid(
        files(json!([md(), {"digest": ZEROS, "size": 1}])),
        "file 2: uri is not a string",
    );
    invalid(
        files(json!([md(), file("", 1)])),
        "file 2: uri: a URI is empty",
    );
    invalid(
        files(json!([
            md(),
            file("skill://acme/billing/refunds/a.md?v=2", 1)
        ])),
        "file 2: uri has a query or a fragment",
    );
    // `..` escapes, literal or percent-encoded, and other roots.
    for outside in [
        "skill://acme/billing/refunds/../secrets.md",
        "skill://acme/billing/refunds/a/../../x.md",
        "skill://acme/billing/refunds/%2E%2E/x.md",
        "skill://acme/billing/refunds/%2e%2e/x.md",
        "skill://acme/billing/refunds-evil/x.md",
        "skill://acme/billing/x.md",
        "skill://other/billing/refunds/x.md",
        "https://acme/billing/refunds/x.md",
        "skill://acme/billing/refunds",
        "skill://acme/billing/refunds/..",
        "skill:acme/billing/refunds/x.md",
    ] {
        invalid(
            files(json!([md(), file(outside, 1)])),
            "file 2: uri is not within the skill's root (after normalisation and dot-segment removal)",
        );
    }
    // Within the root once normalised: allowed.
    assert!(
        first(files(json!([
            md(),
            file("skill://acme/billing/refunds/a/../b.md", 1)
        ])))
        .is_ok()
    );
    assert!(
        first(files(json!([
            md(),
            file("SKILL://ACME/billing/refunds/b.md", 1)
        ])))
        .is_ok()
    );
    invalid(
        files(json!([md(), file("skill://acme/billing/refunds/dir/", 1)])),
        "file 2: uri has an empty path segment",
    );
    invalid(
        files(json!([md(), file("skill://acme/billing/refunds//x.md", 1)])),
        "file 2: uri has an empty path segment",
    );
    invalid(
        files(json!([
            md(),
            file("skill://acme/billing/refunds/a%2F..%2F..%2Fx", 1)
        ])),
        "file 2: a uri has a backslash, or percent-encodes '/', '\\' or a control character",
    );
    invalid(
        files(json!([
            md(),
            file("skill://acme/billing/refunds/..\\..\\x", 1)
        ])),
        "file 2: a uri has a backslash, or percent-encodes '/', '\\' or a control character",
    );
    invalid(
        files(json!([md(), file("skill://acme/billing/refunds/%G0", 1)])),
        "file 2: uri has a malformed percent-encoding",
    );
    // Duplicates, spelled alike or only equivalently.
    invalid(
        files(json!([md(), md()])),
        "file 2: uri repeats another file's uri",
    );
    invalid(
        files(json!([
            md(),
            file("skill://acme/billing/refunds/Q&A.md", 1),
            file("skill://acme/billing/refunds/Q%26A.md", 1)
        ])),
        "file 3: uri repeats another file's uri",
    );
    invalid(
        files(json!([
            md(),
            file("skill://acme/billing/refunds/./SKILL.md", 1)
        ])),
        "file 2: uri repeats another file's uri",
    );
    // Digests.
    for digest in [
        json!("sha256:ABCDEF0000000000000000000000000000000000000000000000000000000000"),
        json!("sha256:000000000000000000000000000000000000000000000000000000000000000"),
        json!("sha256:00000000000000000000000000000000000000000000000000000000000000000"),
        json!("sha512:0000000000000000000000000000000000000000000000000000000000000000"),
        json!("0000000000000000000000000000000000000000000000000000000000000000"),
        json!(null),
        json!(5),
    ] {
        invalid(
            with(refunds(), "/resources/1/digest", digest),
            "file 2: digest is not sha256: and 64 lowercase hex digits",
        );
    }
    invalid(
        without(refunds(), "/resources/1/digest"),
        "file 2: digest is not sha256: and 64 lowercase hex digits",
    );
    // Sizes.
    for size in [
        json!(-1),
        json!(1.5),
        json!("1"),
        json!(null),
        json!(9007199254740992u64),
    ] {
        invalid(
            with(refunds(), "/resources/1/size", size),
            "file 2: size is not an integer from 0 to 2^53-1",
        );
    }
    invalid(
        without(refunds(), "/resources/1/size"),
        "file 2: size is not an integer from 0 to 2^53-1",
    );
    assert!(first(with(refunds(), "/resources/1/size", json!(0))).is_ok());
}

#[test]
fn the_limits_decline_the_skill() {
    let many = |count: usize| {
        let mut list = vec![file("skill://acme/billing/refunds/SKILL.md", 1)];
        for i in 1..count {
            list.push(file(&format!("skill://acme/billing/refunds/f{i}.md"), 1));
        }
        with(refunds(), "/resources", Value::Array(list))
    };
    assert!(first(many(512)).is_ok());
    assert_eq!(
        refused(many(513)),
        (
            SkillCheck::Limit,
            "skill 1: the skill lists 513 files; maxSkillFiles is 512".to_owned()
        )
    );
    let sized = |a: u64, b: u64| {
        with(
            with(refunds(), "/resources/0/size", json!(a)),
            "/resources/1/size",
            json!(b),
        )
    };
    assert!(first(sized(16_777_215, 1)).is_ok());
    assert_eq!(
        refused(sized(16_777_216, 1)),
        (
            SkillCheck::Limit,
            "skill 1: the skill's files total 16777217 bytes; maxSkillBytes is 16777216".to_owned()
        )
    );
    // Raised limits admit more.
    let limits = SkillLimits {
        max_skill_files: 1024,
        max_skill_bytes: 1 << 30,
        ..SkillLimits::default()
    };
    let mut listing = SkillListing::new(limits);
    assert!(listing.entry(many(513)).is_ok());
    assert!(
        Skill::from_get(
            sized(16_777_216, 1),
            "skill://acme/billing/refunds/SKILL.md",
            &limits
        )
        .is_ok()
    );
}

#[test]
fn the_listing_refuses_repeated_uris_but_not_repeated_names() {
    let mut listing = SkillListing::new(SkillLimits::default());
    assert!(listing.is_empty());
    listing.entry(refunds()).unwrap();
    // The same name at another path is another skill.
    let support = json!({
        "uri": "skill://acme/support/refunds/SKILL.md",
        "frontmatter": {"name": "refunds", "description": "Support's refunds"},
        "resources": "dynamic"
    });
    let skill = listing.entry(support).unwrap();
    assert_eq!(skill.position(), Some(2));
    // A repeat, spelled differently but equivalent.
    let repeat = with(
        refunds(),
        "/uri",
        json!("SKILL://acme/billing/%72efunds/SKILL.md"),
    );
    let error = listing.entry(repeat).unwrap_err();
    assert_eq!(error.check(), SkillCheck::Listing);
    assert_eq!(
        error.message(),
        "skill 3: uri repeats the uri of another entry"
    );
    assert_eq!(listing.len(), 3);
    // Invalid entries are counted, and positions run across pages.
    assert!(listing.entry(json!(null)).is_err());
    let error = listing
        .entry(with(
            refunds(),
            "/uri",
            json!("skill://x/refunds/SKILL.md?"),
        ))
        .unwrap_err();
    assert_eq!(error.message(), "skill 5: uri has a query or a fragment");
}

#[test]
fn the_listing_stops_at_max_skills() {
    let limits = SkillLimits {
        max_skills: 2,
        ..SkillLimits::default()
    };
    let mut listing = SkillListing::new(limits);
    for n in 0..2 {
        let uri = format!("skill://s{n}/refunds/SKILL.md");
        let entry = with(
            with(refunds(), "/uri", json!(uri)),
            "/resources",
            json!([file(&uri, 1)]),
        );
        listing.entry(entry).unwrap();
    }
    let error = listing.entry(refunds()).unwrap_err();
    assert_eq!(error.check(), SkillCheck::Listing);
    assert_eq!(
        error.message(),
        "the listing has more than 2 skills; maxSkills is 2"
    );
}

#[test]
fn skills_get_must_answer_the_uri_asked() {
    let limits = SkillLimits::default();
    let asked = "skill://acme/billing/refunds/SKILL.md";
    let skill = Skill::from_get(refunds(), asked, &limits).unwrap();
    assert_eq!(skill.position(), None);
    let error = Skill::from_get(
        refunds(),
        "skill://acme/billing/%72efunds/SKILL.md",
        &limits,
    )
    .unwrap_err();
    assert_eq!(error.check(), SkillCheck::Entry);
    assert_eq!(
        error.message(),
        "the skills/get skill: uri is not the URI asked for"
    );
    let error = Skill::from_get(json!({"uri": asked}), asked, &limits).unwrap_err();
    assert_eq!(
        error.message(),
        "the skills/get skill: frontmatter is not an object"
    );
}

#[test]
fn messages_never_quote_server_text() {
    let marker = "zzsecretzz";
    let entries = [
        with(
            refunds(),
            "/uri",
            json!(format!("skill://acme/{marker}/x/SKILL.md")),
        ),
        with(refunds(), "/frontmatter/name", json!(marker.to_uppercase())),
        with(
            refunds(),
            "/frontmatter/description",
            json!(marker.repeat(200)),
        ),
        with(
            refunds(),
            "/resources/1/uri",
            json!(format!("skill://acme/{marker}.md")),
        ),
        with(refunds(), "/resources/1/digest", json!(marker)),
    ];
    for entry in entries {
        let (_, message) = refused(entry);
        assert!(!message.to_lowercase().contains(marker), "{message}");
    }
}
