//! The path of the scripted test server, built on demand.
//!
//! The server lives in the workspace crate `testkit/` (`smthrs-mcp-testkit`, never
//! published), so it is not a binary of this crate and `CARGO_BIN_EXE_*` does not
//! name it. The first call builds it (`smthrs_mcp_testkit::build_server`, in the
//! test build's profile and target directory); later calls return the cached path.
//! Plain `cargo test` and `cargo test --test X` both work from a clean clone.
//!
//! Test files get it as `support::scripted_server()`.

use std::sync::OnceLock;

/// Path of the scripted test server binary (`smthrs-mcp-scripted-server`).
pub fn scripted_server() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        let path = smthrs_mcp_testkit::build_server().unwrap_or_else(|message| panic!("{message}"));
        path.into_os_string()
            .into_string()
            .expect("the scripted server's path is UTF-8")
    })
}
