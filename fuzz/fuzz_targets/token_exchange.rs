#![no_main]
//! See `smthrs_mcp_fuzz::token_exchange` (fuzz/src/token_exchange.rs) for the input format and properties.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| smthrs_mcp_fuzz::token_exchange::check(data));
