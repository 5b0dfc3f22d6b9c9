#![no_main]
//! See `smthrs_mcp_fuzz::www_authenticate` (fuzz/src/www_authenticate.rs) for the input format and properties.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| smthrs_mcp_fuzz::www_authenticate::check(data));
