#![no_main]
//! See `smthrs_mcp_fuzz::change_notification` (fuzz/src/change_notification.rs) for the input format and properties.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| smthrs_mcp_fuzz::change_notification::check(data));
