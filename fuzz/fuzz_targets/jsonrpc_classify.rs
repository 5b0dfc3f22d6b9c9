#![no_main]
//! See `smthrs_mcp_fuzz::jsonrpc_classify` (fuzz/src/jsonrpc_classify.rs) for the input format and properties.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| smthrs_mcp_fuzz::jsonrpc_classify::check(data));
