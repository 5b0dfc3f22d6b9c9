#![no_main]
//! See `smthrs_mcp_fuzz::line_framer` (fuzz/src/line_framer.rs) for the input format and properties.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| smthrs_mcp_fuzz::line_framer::check(data));
