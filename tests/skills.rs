//! The Skills extension through the session (beyond-tools.md §5), over both
//! transports and in both eras, against the scripted server: a skill listed,
//! loaded (its `SKILL.md` read and verified) and a supporting file read; a
//! tampered `SKILL.md` failing the load; a file the entry does not list refused
//! before anything is sent; a failed read stopping every later one; and a
//! server without the extension asked nothing.

mod support;
use support::eras;

use eras::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use smthrs_mcp::{Client, ErrorKind};
use support::http_bridge::BridgeOptions;
use support::inline;

const SKILL_URI: &str = "skill://pdf-processing/SKILL.md";
const FORMS_URI: &str = "skill://pdf-processing/references/FORMS.md";
const SKILL_MD: &str = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nSkill body.\n";
const FORMS_MD: &str = "# Forms\n\nFill them in.\n";

fn digest(text: &str) -> String {
    let hash = Sha256::digest(text.as_bytes());
    let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The listing's one entry, honest about both files.
fn entry() -> Value {
    json!({
        "uri": SKILL_URI,
        "frontmatter": {
            "name": "pdf-processing",
            "description": "Extract, fill, and assemble PDF documents"
        },
        "resources": [
            {"uri": SKILL_URI, "digest": digest(SKILL_MD), "size": SKILL_MD.len()},
            {"uri": FORMS_URI, "digest": digest(FORMS_MD), "size": FORMS_MD.len()}
        ]
    })
}

fn read_result(uri: &str, text: &str) -> Value {
    json!({"result": {"contents": [{"uri": uri, "mimeType": "text/markdown", "text": text}]}})
}

/// A server offering the extension, answering `skills/list` with [`entry`] and
/// the reads in order with `reads`.
fn server(era: &str, reads: Vec<Value>) -> support::Server {
    inline(json!({
        "era": era,
        "capabilities": {
            "tools": {},
            "resources": {},
            "extensions": {"io.modelcontextprotocol/skills": {}}
        },
        "methods": {
            "skills/list": [{"result": {"skills": [entry()]}}],
            "resources/read": reads
        }
    }))
}

fn options(era: &str) -> BridgeOptions {
    if era == "modern" {
        BridgeOptions::modern()
    } else {
        BridgeOptions::default()
    }
}

fn builder(era: &str) -> smthrs_mcp::ClientBuilder {
    let mode = if era == "modern" {
        smthrs_mcp::ProtocolMode::Modern
    } else {
        smthrs_mcp::ProtocolMode::Legacy
    };
    Client::builder("skills").protocol(mode)
}

/// How many times the server was asked `method`.
fn asked(a: &Attempt, method: &str) -> usize {
    a.methods().iter().filter(|m| *m == method).count()
}

both_transports!(
    skills:
    a_listed_skill_loads_and_its_files_verify,
    a_tampered_skill_md_fails_the_load,
    an_unlisted_file_is_refused_before_anything_is_sent,
    after_a_failed_read_no_file_is_read,
    a_server_without_the_extension_is_asked_nothing,
);

async fn a_listed_skill_loads_and_its_files_verify(via: Via) {
    for era in ["legacy", "modern"] {
        let reads = vec![
            read_result(SKILL_URI, SKILL_MD),
            read_result(FORMS_URI, FORMS_MD),
        ];
        let a = connect(via, builder(era), server(era, reads), options(era)).await;
        let client = a.client();
        let skills = guard("list", client.list_skills())
            .await
            .expect("listed")
            .skills;
        assert_eq!(skills.len(), 1, "{era}");
        assert_eq!(skills[0].name(), "pdf-processing");
        assert_eq!(
            asked(&a, "resources/read"),
            0,
            "listing reads nothing ({era})"
        );
        let skill = skills.into_iter().next().unwrap();
        let loaded = guard("load", client.load_skill(skill))
            .await
            .expect("loaded");
        assert_eq!(loaded.skill_md().bytes(), SKILL_MD.as_bytes(), "{era}");
        let forms = guard("read", loaded.read("references/FORMS.md"))
            .await
            .expect("read");
        assert_eq!(forms.uri(), FORMS_URI);
        assert_eq!(forms.bytes(), FORMS_MD.as_bytes());
        assert!(forms.is_verified());
        a.close().await;
        assert_eq!(asked(&a, "resources/read"), 2, "{era}");
    }
}

async fn a_tampered_skill_md_fails_the_load(via: Via) {
    for era in ["legacy", "modern"] {
        // Same length, other bytes: the size passes, the digest does not.
        let tampered = SKILL_MD.replace("Skill body.", "Evil body!!");
        let reads = vec![
            read_result(SKILL_URI, &tampered),
            read_result(FORMS_URI, FORMS_MD),
        ];
        let a = connect(via, builder(era), server(era, reads), options(era)).await;
        let client = a.client();
        let skill = guard("list", client.list_skills())
            .await
            .expect("listed")
            .skills
            .remove(0);
        let error = guard("load", client.load_skill(skill))
            .await
            .expect_err("a tampered SKILL.md");
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{era}");
        assert_eq!(
            error.message(),
            "file 1 of skill 1 failed its digest check",
            "{era}"
        );
        assert!(
            !error.message().contains("Evil"),
            "never the server's content"
        );
        a.close().await;
        assert_eq!(
            asked(&a, "resources/read"),
            1,
            "nothing more is read ({era})"
        );
    }
}

async fn an_unlisted_file_is_refused_before_anything_is_sent(via: Via) {
    let era = "legacy";
    let reads = vec![read_result(SKILL_URI, SKILL_MD)];
    let a = connect(via, builder(era), server(era, reads), options(era)).await;
    let client = a.client();
    let skill = guard("list", client.list_skills())
        .await
        .expect("listed")
        .skills
        .remove(0);
    let loaded = guard("load", client.load_skill(skill))
        .await
        .expect("loaded");
    for reference in ["scripts/evil.sh", "../other-skill/SKILL.md"] {
        let error = guard("read", loaded.read(reference))
            .await
            .expect_err("not listed");
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{reference}");
    }
    a.close().await;
    assert_eq!(
        asked(&a, "resources/read"),
        1,
        "only SKILL.md was asked for"
    );
}

async fn after_a_failed_read_no_file_is_read(via: Via) {
    let era = "modern";
    let reads = vec![
        read_result(SKILL_URI, SKILL_MD),
        read_result(FORMS_URI, "# Forms\n\nFill them in, and more.\n"),
    ];
    let a = connect(via, builder(era), server(era, reads), options(era)).await;
    let client = a.client();
    let skill = guard("list", client.list_skills())
        .await
        .expect("listed")
        .skills
        .remove(0);
    let loaded = guard("load", client.load_skill(skill))
        .await
        .expect("loaded");
    let error = guard("read", loaded.read("references/FORMS.md"))
        .await
        .expect_err("a size mismatch");
    assert_eq!(error.kind(), ErrorKind::InvalidResponse);
    assert!(
        error.message().contains("size check"),
        "{}",
        error.message()
    );
    let again = guard("read again", loaded.read("references/FORMS.md"))
        .await
        .expect_err("nothing more is read");
    assert_eq!(again.kind(), ErrorKind::InvalidResponse);
    a.close().await;
    assert_eq!(
        asked(&a, "resources/read"),
        2,
        "the second read was not sent"
    );
}

async fn a_server_without_the_extension_is_asked_nothing(via: Via) {
    for era in ["legacy", "modern"] {
        let server = inline(json!({
            "era": era,
            "capabilities": {"tools": {}, "resources": {}},
            "methods": {"skills/list": [{"result": {"skills": [entry()]}}]}
        }));
        let a = connect(via, builder(era), server, options(era)).await;
        let error = guard("list", a.client().list_skills())
            .await
            .expect_err("no extension");
        assert_eq!(error.kind(), ErrorKind::MissingCapability, "{era}");
        assert_eq!(
            error.message(),
            "server \"skills\" does not declare the Skills extension (io.modelcontextprotocol/skills)"
        );
        a.close().await;
        assert_eq!(asked(&a, "skills/list"), 0, "{era}");
    }
}

/// A skill is loaded only through the client of the server that listed it
/// (beyond-tools.md §5.3: its identity is the server and the uri).
#[tokio::test]
async fn a_skill_is_loaded_only_from_the_server_that_listed_it() {
    let reads = || vec![read_result(SKILL_URI, SKILL_MD)];
    let a = connect(
        Via::Stdio,
        Client::builder("a"),
        server("legacy", reads()),
        options("legacy"),
    )
    .await;
    let b = connect(
        Via::Stdio,
        Client::builder("b"),
        server("legacy", reads()),
        options("legacy"),
    )
    .await;
    let skill = guard("list", a.client().list_skills())
        .await
        .expect("listed")
        .skills
        .remove(0);
    assert_eq!(skill.origin(), Some("a"));
    let error = guard("load", b.client().load_skill(skill))
        .await
        .expect_err("another server's skill");
    assert_eq!(error.kind(), ErrorKind::InvalidConfig);
    a.close().await;
    b.close().await;
    assert_eq!(asked(&b, "resources/read"), 0, "nothing was sent to b");
}

/// A skill over a per-skill bound is declined, and says why; the listing
/// stands and the other skills load (beyond-tools.md §5.6).
#[tokio::test]
async fn a_skill_over_a_per_skill_bound_is_declined_and_the_listing_stands() {
    let huge = json!({
        "uri": "skill://huge/SKILL.md",
        "frontmatter": {"name": "huge", "description": "Too big"},
        "resources": [
            {"uri": "skill://huge/SKILL.md", "digest": digest(SKILL_MD), "size": SKILL_MD.len()},
            {"uri": "skill://huge/data.bin", "digest": digest(""), "size": 16 * 1024 * 1024}
        ]
    });
    let server = inline(json!({
        "capabilities": {
            "tools": {},
            "resources": {},
            "extensions": {"io.modelcontextprotocol/skills": {}}
        },
        "methods": {
            "skills/list": [{"result": {"skills": [huge, entry()]}}],
            "resources/read": [read_result(SKILL_URI, SKILL_MD)]
        }
    }));
    let a = connect(Via::Stdio, builder("legacy"), server, options("legacy")).await;
    let listed = guard("list", a.client().list_skills())
        .await
        .expect("the listing stands");
    assert_eq!(listed.skills.len(), 1);
    assert_eq!(listed.skills[0].name(), "pdf-processing");
    assert_eq!(listed.declined.len(), 1);
    let reason = &listed.declined[0];
    assert_eq!(reason.kind(), ErrorKind::InvalidResponse);
    assert!(
        reason.message().contains("maxSkillBytes is 16777216"),
        "{}",
        reason.message()
    );
    let skill = listed.skills.into_iter().next().unwrap();
    guard("load", a.client().load_skill(skill))
        .await
        .expect("the other skill loads");
    a.close().await;
}
