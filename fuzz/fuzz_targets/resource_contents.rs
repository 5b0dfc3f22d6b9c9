#![no_main]
//! See `smthrs_mcp_fuzz::resource_contents` (fuzz/src/resource_contents.rs) for the input format and properties.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| smthrs_mcp_fuzz::resource_contents::check(data));
