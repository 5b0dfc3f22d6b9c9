#![no_main]
//! See `smthrs_mcp_fuzz::http_sse` (fuzz/src/http_sse.rs) for the input format and properties.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| smthrs_mcp_fuzz::http_sse::check(data));
