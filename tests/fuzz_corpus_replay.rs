//! Replays every committed fuzz input through the same property checks the fuzz
//! targets run, so plain `cargo test` (stable, no cargo-fuzz) exercises them.
//!
//! The checks live in `fuzz/src/` and are included here by path; each target in
//! `fuzz/fuzz_targets/` is a one-line wrapper around the same `check` function.
//! Inputs replayed: `fuzz/corpus/<target>/*` (seeds and minimized entries) and
//! `fuzz/artifacts-found/<target>/*` (reproducers of past findings, once fixed).

#![allow(dead_code)]

#[path = "../fuzz/src/catalog_page.rs"]
mod catalog_page;
#[path = "../fuzz/src/change_notification.rs"]
mod change_notification;
#[path = "../fuzz/src/http_sse.rs"]
mod http_sse;
#[path = "../fuzz/src/input_requests.rs"]
mod input_requests;
#[path = "../fuzz/src/jsonrpc_classify.rs"]
mod jsonrpc_classify;
#[path = "../fuzz/src/line_framer.rs"]
mod line_framer;
#[path = "../fuzz/src/redaction.rs"]
mod redaction;
#[path = "../fuzz/src/resource_contents.rs"]
mod resource_contents;
#[path = "../fuzz/src/server_file.rs"]
mod server_file;
#[path = "../fuzz/src/skill_frontmatter.rs"]
mod skill_frontmatter;
#[path = "../fuzz/src/token_exchange.rs"]
mod token_exchange;
#[path = "../fuzz/src/util.rs"]
mod util;
#[path = "../fuzz/src/www_authenticate.rs"]
mod www_authenticate;

use std::path::{Path, PathBuf};

/// The committed inputs of one target, sorted, so a failure names a file.
fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files = Vec::new();
    for dir in ["corpus", "artifacts-found"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_file() && path.file_name().is_none_or(|n| n != "README.md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn replay(target: &str, check: fn(&[u8])) {
    let files = inputs(target);
    assert!(!files.is_empty(), "no committed corpus for {target}");
    eprintln!("{target}: replaying {} inputs", files.len());
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(
            outcome.is_ok(),
            "{target}: {} fails its properties",
            path.display()
        );
    }
}

#[test]
fn line_framer_corpus() {
    replay("line_framer", line_framer::check);
}

#[test]
fn jsonrpc_classify_corpus() {
    replay("jsonrpc_classify", jsonrpc_classify::check);
}

#[test]
fn catalog_page_corpus() {
    replay("catalog_page", catalog_page::check);
}

#[test]
fn http_sse_corpus() {
    replay("http_sse", http_sse::check);
}

#[test]
fn server_file_corpus() {
    replay("server_file", server_file::check);
}

#[test]
fn redaction_corpus() {
    replay("redaction", redaction::check);
}

#[test]
fn input_requests_corpus() {
    replay("input_requests", input_requests::check);
}

#[test]
fn www_authenticate_corpus() {
    replay("www_authenticate", www_authenticate::check);
}

#[test]
fn skill_frontmatter_corpus() {
    replay("skill_frontmatter", skill_frontmatter::check);
}

#[test]
fn change_notification_corpus() {
    replay("change_notification", change_notification::check);
}

#[test]
fn resource_contents_corpus() {
    replay("resource_contents", resource_contents::check);
}

#[test]
fn token_exchange_corpus() {
    replay("token_exchange", token_exchange::check);
}

/// The fuzz smoke gate: every cargo-fuzz target in `fuzz/fuzz_targets/` is a wrapper
/// around the `check` of the same name in `fuzz/src/`, and that `check` is replayed
/// over the target's corpus by a test in this file. A new target without a replay
/// fails here, so `cargo test` (stable) runs every target's properties; building
/// the real targets needs nightly and sanitizers (`fuzz/run.sh`).
#[test]
fn every_fuzz_target_is_replayed_here() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let this = std::fs::read_to_string(root.join("tests/fuzz_corpus_replay.rs")).unwrap();
    let mut targets: Vec<PathBuf> = std::fs::read_dir(root.join("fuzz/fuzz_targets"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    targets.sort();
    assert!(!targets.is_empty(), "no fuzz targets found");
    for path in &targets {
        let name = path.file_stem().unwrap().to_str().unwrap();
        let source = std::fs::read_to_string(path).unwrap();
        assert!(
            source.contains(&format!("smthrs_mcp_fuzz::{name}::check(")),
            "{}: the target does not call smthrs_mcp_fuzz::{name}::check",
            path.display()
        );
        assert!(
            this.contains(&format!("#[path = \"../fuzz/src/{name}.rs\"]"))
                && this.contains(&format!("replay(\"{name}\", {name}::check);")),
            "fuzz target {name} has no corpus replay in tests/fuzz_corpus_replay.rs"
        );
    }
}
