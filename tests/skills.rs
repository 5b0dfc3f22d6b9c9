//! The Skills extension through the session (beyond-tools.md §5), over both
//! transports and in both eras, against the scripted server: a skill listed,
//! loaded (its `SKILL.md` read and verified) and a supporting file read; a
//! tampered `SKILL.md` failing the load; a file the entry does not list refused
//! before anything is sent; a failed read stopping every later one; and a
//! server without the extension asked nothing.

mod support;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use smthrs_mcp::session::LoadedSkill;
use smthrs_mcp::skills::Skill;
use smthrs_mcp::{Client, ErrorKind};
use smthrs_mcp_testkit::bridge::BridgeOptions;
use support::eras::*;
use support::guard;
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

/// The reads of the listing's two files, in order: `SKILL.md` answered with
/// `skill_md`, `FORMS.md` with `forms_md`.
fn reads(skill_md: &str, forms_md: &str) -> Vec<Value> {
    vec![
        read_result(SKILL_URI, skill_md),
        read_result(FORMS_URI, forms_md),
    ]
}

/// Connects over `via`, in `era`, to a [`server`] answering the reads with `reads`.
async fn connect_era(via: Via, era: &str, reads: Vec<Value>) -> Attempt {
    connect(via, builder(era), server(era, reads), options(era)).await
}

/// The first skill `client` lists (the listing must succeed).
async fn first_listed(client: &Client) -> Skill {
    guard("list", client.list_skills())
        .await
        .expect("listed")
        .skills
        .remove(0)
}

/// The first skill `client` lists, loaded (both must succeed).
async fn load_first_listed(client: &Client) -> LoadedSkill {
    let skill = first_listed(client).await;
    guard("load", client.load_skill(skill))
        .await
        .expect("loaded")
}

/// Closes the session, then asserts the server was asked `method` `expected` times.
async fn close_then_assert_asked(a: &Attempt, method: &str, expected: usize, why: &str) {
    a.close().await;
    assert_eq!(asked(a, method), expected, "{why}");
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
        let a = connect_era(via, era, reads(SKILL_MD, FORMS_MD)).await;
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
        close_then_assert_asked(&a, "resources/read", 2, era).await;
    }
}

async fn a_tampered_skill_md_fails_the_load(via: Via) {
    for era in ["legacy", "modern"] {
        // Same length, other bytes: the size passes, the digest does not.
        let tampered = SKILL_MD.replace("Skill body.", "Evil body!!");
        let a = connect_era(via, era, reads(&tampered, FORMS_MD)).await;
        let client = a.client();
        let skill = first_listed(client).await;
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
        let why = format!("nothing more is read ({era})");
        close_then_assert_asked(&a, "resources/read", 1, &why).await;
    }
}

async fn an_unlisted_file_is_refused_before_anything_is_sent(via: Via) {
    let a = connect_era(via, "legacy", vec![read_result(SKILL_URI, SKILL_MD)]).await;
    let loaded = load_first_listed(a.client()).await;
    for reference in ["scripts/evil.sh", "../other-skill/SKILL.md"] {
        let error = guard("read", loaded.read(reference))
            .await
            .expect_err("not listed");
        assert_eq!(error.kind(), ErrorKind::InvalidResponse, "{reference}");
    }
    close_then_assert_asked(&a, "resources/read", 1, "only SKILL.md was asked for").await;
}

async fn after_a_failed_read_no_file_is_read(via: Via) {
    let forms_md = "# Forms\n\nFill them in, and more.\n";
    let a = connect_era(via, "modern", reads(SKILL_MD, forms_md)).await;
    let loaded = load_first_listed(a.client()).await;
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
    close_then_assert_asked(&a, "resources/read", 2, "the second read was not sent").await;
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
        close_then_assert_asked(&a, "skills/list", 0, era).await;
    }
}

/// A skill is loaded only through the client of the server that listed it
/// (beyond-tools.md §5.3: its identity is the server and the uri).
#[tokio::test]
async fn a_skill_is_loaded_only_from_the_server_that_listed_it() {
    let connect_as = |name: &'static str| {
        connect(
            Via::Stdio,
            Client::builder(name),
            server("legacy", vec![read_result(SKILL_URI, SKILL_MD)]),
            options("legacy"),
        )
    };
    let a = connect_as("a").await;
    let b = connect_as("b").await;
    let skill = first_listed(a.client()).await;
    assert_eq!(skill.origin(), Some("a"));
    let error = guard("load", b.client().load_skill(skill))
        .await
        .expect_err("another server's skill");
    assert_eq!(error.kind(), ErrorKind::InvalidConfig);
    a.close().await;
    close_then_assert_asked(&b, "resources/read", 0, "nothing was sent to b").await;
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
