use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::*;
use crate::skills::SkillListing;

const SKILL_URI: &str = "skill://pdf-processing/SKILL.md";
const FORMS_URI: &str = "skill://pdf-processing/references/FORMS.md";
const QA_URI: &str = "skill://pdf-processing/references/Q&A.md";
const DESCRIPTION: &str = "Extract, fill, and assemble PDF documents";

/// The conformance mock's `SKILL.md` (`sep-2640-client-verify-*`).
fn skill_md(description: &str, body: &str) -> String {
    format!("---\nname: pdf-processing\ndescription: {description}\n---\n{body}\n")
}

const FORMS: &str = "# Forms\nFill them in.\n";
const QA: &[u8] = b"\x00\x01binary!\xFF"; // 10 bytes: base64 ends in "=="

fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn listed(uri: &str, bytes: &[u8]) -> Value {
    json!({"uri": uri, "digest": digest(bytes), "size": bytes.len()})
}

/// The held entry, listing honest digests of `md` and the two other files.
fn entry_for(md: &str) -> Skill {
    let entry = json!({
        "uri": SKILL_URI,
        "frontmatter": {"name": "pdf-processing", "description": DESCRIPTION},
        "resources": [
            listed(SKILL_URI, md.as_bytes()),
            listed(FORMS_URI, FORMS.as_bytes()),
            listed(QA_URI, QA)
        ]
    });
    SkillListing::new(SkillLimits::default())
        .entry(entry)
        .unwrap()
}

fn held() -> Skill {
    entry_for(&skill_md(DESCRIPTION, "Skill body."))
}

fn text(uri: &str, text: &str) -> Value {
    json!([{"uri": uri, "mimeType": "text/markdown", "text": text}])
}

fn blob(uri: &str, bytes: &[u8]) -> Value {
    json!([{"uri": uri, "blob": STANDARD.encode(bytes)}])
}

fn verify(skill: &Skill, requested: &str, contents: Value) -> Result<VerifiedFile, SkillError> {
    verify_read(skill, requested, contents, 0, &SkillLimits::default())
}

fn failed(result: Result<VerifiedFile, SkillError>) -> (SkillCheck, String) {
    let error = result.unwrap_err();
    (error.check(), error.message().to_owned())
}

#[test]
fn honest_files_verify() {
    let skill = held();
    let md = skill_md(DESCRIPTION, "Skill body.");
    let file = verify(&skill, SKILL_URI, text(SKILL_URI, &md)).unwrap();
    assert!(file.is_verified());
    assert!(file.is_skill_md());
    assert_eq!(file.text(), Some(md.as_str()));
    assert_eq!(file.uri(), SKILL_URI);
    let forms = verify(&skill, FORMS_URI, text(FORMS_URI, FORMS)).unwrap();
    assert!(!forms.is_skill_md());
    assert_eq!(forms.bytes(), FORMS.as_bytes());
    let qa = verify(&skill, QA_URI, blob(QA_URI, QA)).unwrap();
    assert_eq!(qa.text(), None);
    assert_eq!(qa.into_bytes(), QA);
    // The other items of `contents` are ignored.
    let mixed = json!([
        {"uri": "skill://pdf-processing/other.md", "text": "x"},
        {"uri": FORMS_URI, "text": FORMS}
    ]);
    assert!(verify(&skill, FORMS_URI, mixed).is_ok());
}

/// The four tamperings of the conformance scenarios (beyond-tools.md §5.8).
#[test]
fn the_conformance_tamperings_fail_their_checks() {
    let skill = held();
    // verify-digest: the body changed, same length.
    let evil = skill_md(DESCRIPTION, "Evil body!!");
    assert_eq!(evil.len(), skill_md(DESCRIPTION, "Skill body.").len());
    assert_eq!(
        failed(verify(&skill, SKILL_URI, text(SKILL_URI, &evil))),
        (
            SkillCheck::Digest,
            "file 1 of skill 1 failed its digest check".to_owned()
        )
    );
    // verify-size: bytes appended.
    let longer = format!("{}appended", skill_md(DESCRIPTION, "Skill body."));
    let md_len = skill_md(DESCRIPTION, "Skill body.").len();
    assert_eq!(
        failed(verify(&skill, SKILL_URI, text(SKILL_URI, &longer))),
        (
            SkillCheck::Size,
            format!(
                "file 1 of skill 1 failed its size check: {} bytes, the entry lists {md_len}",
                md_len + 8
            )
        )
    );
    // verify-frontmatter: the description changed, the entry's digest and size
    // recomputed, so only the frontmatter differs.
    let tampered = skill_md("Exfiltrate credentials", "Skill body.");
    let recomputed = entry_for(&tampered);
    assert_eq!(
        failed(verify(&recomputed, SKILL_URI, text(SKILL_URI, &tampered))),
        (
            SkillCheck::Frontmatter,
            "file 1 of skill 1 failed its frontmatter check: SKILL.md's frontmatter has a value \
             that differs from the entry's"
                .to_owned()
        )
    );
    // The retired fourth, unlisted: a supporting file the entry does not list.
    let error = check_listed(&skill, "skill://pdf-processing/references/SECRET.md").unwrap_err();
    assert_eq!(
        (error.check(), error.message()),
        (
            SkillCheck::Unlisted,
            "skill 1: the requested file is not listed in the held entry (unlisted check)"
        )
    );
}

#[test]
fn unlisted_files_are_refused_before_anything_is_sent() {
    let skill = held();
    assert_eq!(check_listed(&skill, FORMS_URI), Ok(FORMS_URI));
    // Another spelling of a listed file: the request uses the entry's.
    assert_eq!(
        check_listed(&skill, "skill://pdf-processing/references/Q%26A.md"),
        Ok(QA_URI)
    );
    assert_eq!(
        check_listed(&skill, "skill://pdf-processing/x/../references/FORMS.md"),
        Ok(FORMS_URI)
    );
    for unlisted in [
        "skill://pdf-processing/references/SECRET.md",
        "skill://pdf-processing/../other/SKILL.md",
        "skill://pdf-processing/references/FORMS.md?v=2",
        "skill://pdf-processing/references/FORMS.md#top",
        "skill://other/references/FORMS.md",
        "file:///etc/passwd",
        "references/FORMS.md",
        "",
    ] {
        let error = check_listed(&skill, unlisted).unwrap_err();
        assert_eq!(error.check(), SkillCheck::Unlisted, "{unlisted}");
        // verify_read runs the same check first.
        let error = verify(&skill, unlisted, text(unlisted, "x")).unwrap_err();
        assert_eq!(error.check(), SkillCheck::Unlisted, "{unlisted}");
    }
}

#[test]
fn percent_encoding_equivalent_uris_match() {
    let skill = held();
    // The server answers with another spelling of the file asked for.
    let file = verify(
        &skill,
        QA_URI,
        blob("skill://pdf-processing/references/Q%26A.md", QA),
    )
    .unwrap();
    assert_eq!(file.uri(), QA_URI);
    let file = verify(
        &skill,
        "skill://pdf-processing/references/Q%26A.md",
        blob(QA_URI, QA),
    )
    .unwrap();
    assert_eq!(file.uri(), QA_URI);
    let file = verify(
        &skill,
        FORMS_URI,
        text("SKILL://PDF-PROCESSING/references/./FORMS.md", FORMS),
    )
    .unwrap();
    assert_eq!(file.uri(), FORMS_URI);
}

#[test]
fn the_contents_must_hold_one_usable_item() {
    let skill = held();
    let fail = |contents: Value| failed(verify(&skill, FORMS_URI, contents));
    let contents = |detail: &str| {
        (
            SkillCheck::Contents,
            format!("file 2 of skill 1 failed its contents check: {detail}"),
        )
    };
    assert_eq!(fail(json!({})), contents("contents is not an array"));
    assert_eq!(
        fail(json!([])),
        contents("no contents item matches the file")
    );
    assert_eq!(
        fail(text("skill://pdf-processing/references/forms.md", FORMS)),
        contents("no contents item matches the file")
    );
    assert_eq!(
        fail(text("skill://pdf-processing/references/FORMS.md?x", FORMS)),
        contents("no contents item matches the file")
    );
    assert_eq!(
        fail(json!([7])),
        contents("a contents item is not an object")
    );
    assert_eq!(
        fail(json!([{"text": FORMS}])),
        contents("a contents item has no string uri")
    );
    assert_eq!(
        fail(
            json!([{"uri": FORMS_URI, "text": FORMS}, {"uri": "skill://pdf-processing/references/%46ORMS.md", "text": FORMS}])
        ),
        contents("two contents items match the file")
    );
    assert_eq!(
        fail(json!([{"uri": FORMS_URI, "text": FORMS, "blob": ""}])),
        contents("the item has both text and blob")
    );
    assert_eq!(
        fail(json!([{"uri": FORMS_URI}])),
        contents("the item has neither a string text nor a string blob")
    );
    assert_eq!(
        fail(json!([{"uri": FORMS_URI, "text": 7}])),
        contents("the item has neither a string text nor a string blob")
    );
    assert_eq!(
        fail(json!([{"uri": FORMS_URI, "text": null}])),
        contents("the item has neither a string text nor a string blob")
    );
}

#[test]
fn blobs_are_strict_base64() {
    let skill = held();
    let qa = STANDARD.encode(QA);
    let fail = |blob: &str| {
        failed(verify(
            &skill,
            QA_URI,
            json!([{"uri": QA_URI, "blob": blob}]),
        ))
    };
    let not_base64 = (
        SkillCheck::Contents,
        "file 3 of skill 1 failed its contents check: blob is not strict base64".to_owned(),
    );
    assert!(qa.ends_with('='), "{qa}");
    let unpadded = qa.trim_end_matches('=');
    // Padding is optional but canonical when present (beyond-tools.md Q4).
    assert!(
        verify(&skill, QA_URI, json!([{"uri": QA_URI, "blob": unpadded}])).is_ok(),
        "an unpadded blob is read"
    );
    assert_eq!(fail(&format!("{qa}=")), not_base64);
    assert_eq!(fail(&format!("{} {}", &qa[..4], &qa[4..])), not_base64);
    assert_eq!(fail(&format!("{}\n{}", &qa[..4], &qa[4..])), not_base64);
    assert_eq!(fail(&qa.replace('/', "_").replace('+', "-")), not_base64);
    assert_eq!(fail("===="), not_base64);
    // Trailing bits: the last data character of "xx==" carries 2 bits and 4
    // zero bits; setting one of those makes a non-canonical spelling.
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = qa.clone().into_bytes();
    let at = bits.len() - 3;
    let value = ALPHABET.iter().position(|&c| c == bits[at]).unwrap();
    assert_eq!(value & 0xF, 0);
    bits[at] = ALPHABET[value | 1];
    assert_eq!(fail(&String::from_utf8(bits).unwrap()), not_base64);
    // The size is checked from the length before decoding.
    assert_eq!(
        fail(&STANDARD.encode(b"0123456789abcdef")).0,
        SkillCheck::Size
    );
}

#[test]
fn the_size_is_checked_before_the_digest() {
    let skill = held();
    // Wrong length and wrong content: the size check fails first.
    assert_eq!(
        failed(verify(&skill, FORMS_URI, text(FORMS_URI, "short"))).0,
        SkillCheck::Size
    );
    // Right length, wrong content: digest.
    let same_length = "x".repeat(FORMS.len());
    assert_eq!(
        failed(verify(&skill, FORMS_URI, text(FORMS_URI, &same_length))),
        (
            SkillCheck::Digest,
            "file 2 of skill 1 failed its digest check".to_owned()
        )
    );
    assert_eq!(
        failed(verify(&skill, QA_URI, blob(QA_URI, b"\x00\x01binary!\xFE"))),
        (
            SkillCheck::Digest,
            "file 3 of skill 1 failed its digest check".to_owned()
        )
    );
}

#[test]
fn the_frontmatter_check_reads_bom_and_crlf() {
    let crlf = "\u{FEFF}---\r\nname: pdf-processing\r\ndescription: Extract, fill, and assemble PDF documents\r\n---\r\nbody\r\n";
    let skill = entry_for(crlf);
    assert!(verify(&skill, SKILL_URI, text(SKILL_URI, crlf)).is_ok());
    // The same bytes as a blob.
    assert!(verify(&skill, SKILL_URI, blob(SKILL_URI, crlf.as_bytes())).is_ok());
}

#[test]
fn every_frontmatter_refusal_is_a_frontmatter_failure() {
    let frontmatter_failure = |md: &str, rule: &str| {
        let skill = entry_for(md);
        assert_eq!(
            failed(verify(&skill, SKILL_URI, text(SKILL_URI, md))),
            (
                SkillCheck::Frontmatter,
                format!("file 1 of skill 1 failed its frontmatter check: {rule}")
            ),
            "{md}"
        );
    };
    let head = format!("name: pdf-processing\ndescription: {DESCRIPTION}\n");
    frontmatter_failure(
        &format!("# Title\n---\n{head}---\n"),
        "SKILL.md does not begin with a --- line",
    );
    frontmatter_failure(
        &format!("---\n{head}"),
        "the frontmatter has no closing --- line",
    );
    frontmatter_failure(
        &format!("---\n{head}a: &x 1\nb: *x\n---\n"),
        "the frontmatter uses a YAML anchor",
    );
    frontmatter_failure(
        &format!("---\n{head}a: *x\n---\n"),
        "the frontmatter is not well-formed YAML",
    );
    frontmatter_failure(
        &format!("---\n{head}a: !!str x\n---\n"),
        "the frontmatter uses a YAML tag",
    );
    frontmatter_failure(
        &format!("---\n{head}<<: {{a: 1}}\n---\n"),
        "the frontmatter uses a YAML merge key (<<)",
    );
    frontmatter_failure(
        &format!("---\n{head}...\nname: again\n---\n"),
        "the frontmatter holds more than one YAML document",
    );
    frontmatter_failure(
        &format!(
            "---\n{head}deep: {}{}\n---\n",
            "[".repeat(16),
            "]".repeat(16)
        ),
        "the frontmatter nests deeper than 16",
    );
    frontmatter_failure(
        &format!("---\n{head}extra: {}\n---\n", "x".repeat(65_536)),
        "the frontmatter is longer than 65536 bytes (maxSkillFrontmatterBytes)",
    );
    frontmatter_failure(
        &format!("---\n{head}extra: yes\n---\n"),
        "SKILL.md's frontmatter has a key the entry's lacks",
    );
    frontmatter_failure(
        "---\nname: pdf-processing\n---\n",
        "SKILL.md's frontmatter lacks a key the entry's has",
    );
    // Not UTF-8: only a blob can carry it.
    let mut bytes = b"---\nname: pdf-processing\n".to_vec();
    bytes.push(0xFF);
    let entry = json!({
        "uri": SKILL_URI,
        "frontmatter": {"name": "pdf-processing", "description": DESCRIPTION},
        "resources": [listed(SKILL_URI, &bytes)]
    });
    let skill = SkillListing::new(SkillLimits::default())
        .entry(entry)
        .unwrap();
    assert_eq!(
        failed(verify(&skill, SKILL_URI, blob(SKILL_URI, &bytes))),
        (
            SkillCheck::Frontmatter,
            "file 1 of skill 1 failed its frontmatter check: SKILL.md is not UTF-8".to_owned()
        )
    );
}

#[test]
fn yaml_1_2_values_compare_without_coercion() {
    let md = format!(
        "---\nname: pdf-processing\ndescription: {DESCRIPTION}\nflag: yes\nversion: 1.0\n\
         count: 3\nlicense: 'Apache-2.0'\nmetadata:\n  author: me\n---\nbody\n"
    );
    let with = |extra: Value| {
        let mut frontmatter = json!({"name": "pdf-processing", "description": DESCRIPTION,
                                     "license": "Apache-2.0", "metadata": {"author": "me"}});
        for (key, value) in extra.as_object().unwrap() {
            frontmatter[key] = value.clone();
        }
        let entry = json!({"uri": SKILL_URI, "frontmatter": frontmatter,
                           "resources": [listed(SKILL_URI, md.as_bytes())]});
        let skill = SkillListing::new(SkillLimits::default())
            .entry(entry)
            .unwrap();
        verify(&skill, SKILL_URI, text(SKILL_URI, &md)).map(|_| ())
    };
    assert_eq!(
        with(json!({"flag": "yes", "version": 1, "count": 3.0})),
        Ok(())
    );
    assert_eq!(
        with(json!({"flag": "yes", "version": 1.0, "count": 3})),
        Ok(())
    );
    for coerced in [
        json!({"flag": true, "version": 1.0, "count": 3}),
        json!({"flag": "yes", "version": "1.0", "count": 3}),
        json!({"flag": "yes", "version": 1.0, "count": "3"}),
        json!({"flag": "yes", "version": 1.5, "count": 3}),
    ] {
        assert_eq!(
            with(coerced.clone()).unwrap_err().check(),
            SkillCheck::Frontmatter,
            "{coerced}"
        );
    }
}

#[test]
fn dynamic_skills_are_confined_to_their_root_and_their_bytes() {
    let md = skill_md("Today's report", "Live data.");
    let entry = json!({
        "uri": "skill://reports/daily/SKILL.md",
        "frontmatter": {"name": "daily", "description": "Today's report"},
        "resources": "dynamic"
    });
    let skill = SkillListing::new(SkillLimits::default())
        .entry(entry)
        .unwrap();
    let limits = SkillLimits::default();
    let md = md.replace("pdf-processing", "daily");
    let file = verify_read(&skill, skill.uri(), text(skill.uri(), &md), 0, &limits).unwrap();
    assert!(!file.is_verified());
    assert!(file.is_skill_md());
    // The frontmatter check still applies.
    let tampered = md.replace("Today's report", "Exfiltrate credentials");
    assert_eq!(
        failed(verify_read(
            &skill,
            skill.uri(),
            text(skill.uri(), &tampered),
            0,
            &limits
        )),
        (
            SkillCheck::Frontmatter,
            "a file of skill 1 failed its frontmatter check: SKILL.md's frontmatter has a value \
             that differs from the entry's"
                .to_owned()
        )
    );
    // Any file within the root; nothing outside it.
    let data = "skill://reports/daily/data/today.csv";
    assert_eq!(check_listed(&skill, data), Ok(data));
    for outside in [
        "skill://reports/daily",
        "skill://reports/daily/",
        "skill://reports/daily/../weekly/SKILL.md",
        "skill://reports/weekly/x.md",
        "skill://reports/daily/a%2F..%2F..%2Fx",
    ] {
        assert_eq!(
            check_listed(&skill, outside).unwrap_err().check(),
            SkillCheck::Unlisted,
            "{outside}"
        );
    }
    // The bytes retrieved count against maxSkillBytes.
    let budget = limits.max_skill_bytes;
    assert!(verify_read(&skill, data, text(data, "abcd"), budget - 4, &limits).is_ok());
    assert_eq!(
        failed(verify_read(
            &skill,
            data,
            text(data, "abcd"),
            budget - 3,
            &limits
        )),
        (
            SkillCheck::Size,
            "a file of skill 1 failed its size check: 16777217 bytes retrieved for the dynamic \
             skill; maxSkillBytes is 16777216"
                .to_owned()
        )
    );
    assert_eq!(
        failed(verify_read(
            &skill,
            data,
            blob(data, b"abcd"),
            budget - 3,
            &limits
        ))
        .0,
        SkillCheck::Size
    );
}

#[test]
fn relative_references_resolve_against_the_root_and_must_be_listed() {
    let skill = held();
    assert_eq!(
        resolve_reference(&skill, "references/FORMS.md").unwrap(),
        FORMS_URI
    );
    assert_eq!(
        resolve_reference(&skill, "./references/FORMS.md#fields").unwrap(),
        FORMS_URI
    );
    assert_eq!(
        resolve_reference(&skill, "references/Q%26A.md").unwrap(),
        QA_URI
    );
    assert_eq!(resolve_reference(&skill, "SKILL.md").unwrap(), SKILL_URI);
    assert_eq!(resolve_reference(&skill, FORMS_URI).unwrap(), FORMS_URI);
    for escape in [
        "../other/SKILL.md",
        "references/../../etc/passwd",
        "/etc/passwd",
        "//evil/references/FORMS.md",
        "https://evil.example/FORMS.md",
        "references/FORMS.md?v=2",
        "references/SECRET.md",
        "references/",
        "",
    ] {
        let error = resolve_reference(&skill, escape).unwrap_err();
        assert_eq!(error.check(), SkillCheck::Unlisted, "{escape}");
        assert_eq!(
            error.message(),
            "skill 1: the requested file is not listed in the held entry (unlisted check)"
        );
    }
    // A nested skill resolves against its own root.
    let nested_md = "skill://pdf-processing/nested/inner/SKILL.md";
    let nested = SkillListing::new(SkillLimits::default())
        .entry(json!({
            "uri": nested_md,
            "frontmatter": {"name": "inner", "description": "Nested"},
            "resources": [listed(nested_md, b"x"), listed("skill://pdf-processing/nested/inner/a.md", b"y")]
        }))
        .unwrap();
    assert_eq!(
        resolve_reference(&nested, "a.md").unwrap(),
        "skill://pdf-processing/nested/inner/a.md"
    );
    assert!(resolve_reference(&nested, "../../references/FORMS.md").is_err());
}

#[test]
fn messages_never_quote_content() {
    let marker = "zzsecretzz";
    let skill = held();
    let results = [
        verify(
            &skill,
            SKILL_URI,
            text(SKILL_URI, &skill_md(DESCRIPTION, &format!("{marker}!!!!!"))),
        ),
        verify(
            &skill,
            SKILL_URI,
            text(SKILL_URI, &skill_md(marker, "Skill body.")),
        ),
        verify(&skill, FORMS_URI, text(FORMS_URI, marker)),
        verify(
            &skill,
            FORMS_URI,
            json!([{"uri": FORMS_URI, "blob": marker}]),
        ),
        verify(
            &skill,
            &format!("skill://pdf-processing/{marker}"),
            text(FORMS_URI, marker),
        ),
    ];
    for result in results {
        let message = result.unwrap_err().message().to_owned();
        assert!(!message.contains(marker), "{message}");
    }
}

#[test]
fn hex_comparison() {
    assert!(hex_equals("00ff10", &[0x00, 0xFF, 0x10]));
    assert!(!hex_equals("00FF10", &[0x00, 0xFF, 0x10]));
    assert!(!hex_equals("00ff1", &[0x00, 0xFF, 0x10]));
}
