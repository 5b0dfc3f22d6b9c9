#![no_main]
//! See `smthrs_mcp_fuzz::input_requests` (fuzz/src/input_requests.rs) for the input format and properties.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| smthrs_mcp_fuzz::input_requests::check(data));
