//! The property checks behind every fuzz target, shared with the plain test
//! `tests/fuzz_corpus_replay.rs` (which includes these files by path and replays the
//! committed corpora through them, so CI exercises the properties without nightly).
//!
//! Each module exposes `check(data: &[u8])`, which panics when a property fails.
//! The modules refer to each other only through `super::`, so they compile both as
//! this crate and as top-level modules of the replay test.

pub mod catalog_page;
pub mod change_notification;
pub mod http_sse;
pub mod input_requests;
pub mod jsonrpc_classify;
pub mod line_framer;
pub mod redaction;
pub mod resource_contents;
pub mod server_file;
pub mod skill_frontmatter;
pub mod token_exchange;
pub mod util;
pub mod www_authenticate;
