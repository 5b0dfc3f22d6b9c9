#![no_main]
//! See `smthrs_mcp_fuzz::skill_frontmatter` (fuzz/src/skill_frontmatter.rs) for the input format and properties.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| smthrs_mcp_fuzz::skill_frontmatter::check(data));
