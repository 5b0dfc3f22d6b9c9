#![no_main]
//! See `smthrs_mcp_fuzz::catalog_page` (fuzz/src/catalog_page.rs) for the input format and properties.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| smthrs_mcp_fuzz::catalog_page::check(data));
