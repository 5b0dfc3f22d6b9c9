//! The path of the scripted test server, built on demand.
//!
//! The server lives in the workspace crate `testkit/` (`smthrs-mcp-testkit`, never
//! published), so it is not a binary of this crate and `CARGO_BIN_EXE_*` does not
//! name it. The first call builds it with escargot (`cargo build -p
//! smthrs-mcp-testkit --bin smthrs-mcp-scripted-server`, in the profile this test
//! was built in and into the same target directory, so it shares the test build's
//! artifacts); later calls return the cached path. Plain `cargo test` and `cargo
//! test --test X` both work from a clean clone.
//!
//! Test files get it as `support::scripted_server()`.

use std::sync::OnceLock;

/// Path of the scripted test server binary (`smthrs-mcp-scripted-server`).
pub fn scripted_server() -> &'static str {
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        // No `current_target()`: an explicit `--target` builds into a second tree
        // (target/<triple>/), while the host build shares target/debug with the
        // tests, which are never cross-run.
        let run = escargot::CargoBuild::new()
            .package("smthrs-mcp-testkit")
            .bin("smthrs-mcp-scripted-server")
            .current_release()
            .manifest_path(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .run()
            .unwrap_or_else(|e| panic!(
                "building the scripted test server failed (`cargo build -p smthrs-mcp-testkit` shows the errors): {e}"
            ));
        run.path()
            .to_str()
            .expect("the scripted server's path is UTF-8")
            .to_owned()
    })
}
