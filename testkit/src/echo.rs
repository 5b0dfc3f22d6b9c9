//! What the benchmark harness (`benches/harness/`) and the echo server it measures
//! against must agree on.
//!
//! The echo server is a mode of the binary `smthrs-mcp-scripted-server`
//! (`src/echo_server.rs`):
//!
//! ```text
//! smthrs-mcp-scripted-server echo serve-stdio [SHAPE] [--flood BYTES]
//! smthrs-mcp-scripted-server echo serve-http [SHAPE]
//! ```
//!
//! `SHAPE` is the options of a [`Shape`] (`--tools N`, `--result-bytes N`,
//! `--legacy-only`, `--startup-ms N`), as [`Shape::args`] renders them and
//! [`Shape::accept`] reads them. `serve-http` prints its port as the first stdout
//! line and serves until its stdin closes; its sessions all get [`SESSION_ID`].

/// The 2026-07-28 revision.
pub const MODERN: &str = "2026-07-28";

/// The session id the HTTP server hands out (constant: the server keeps no state).
pub const SESSION_ID: &str = "bench-session-1";

/// What the server offers and answers: the command line's `--tools`,
/// `--result-bytes` and `--legacy-only`, the same for every role that spawns or
/// starts a server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Shape {
    /// Tools in the catalog (0 means the default, 1: `echo` alone).
    pub tools: usize,
    /// Every call answered with a text of this many bytes instead of the echo.
    pub result_bytes: Option<usize>,
    /// Answer `server/discover` as a legacy server.
    pub legacy_only: bool,
    /// `serve-stdio`: use this much CPU time before reading anything (a server
    /// that starts as slowly as a `node` or `python` one).
    pub startup_ms: u64,
}

impl Shape {
    /// The options that give this shape, for a child's command line.
    pub fn args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.tools > 1 {
            args.extend(["--tools".to_string(), self.tools.to_string()]);
        }
        if let Some(bytes) = self.result_bytes {
            args.extend(["--result-bytes".to_string(), bytes.to_string()]);
        }
        if self.legacy_only {
            args.push("--legacy-only".into());
        }
        if self.startup_ms > 0 {
            args.extend(["--startup-ms".to_string(), self.startup_ms.to_string()]);
        }
        args
    }

    /// Reads `arg` if it is one of the shape's options, taking its value from
    /// `rest`: `Ok(true)` when it was, `Ok(false)` when `arg` is not a shape
    /// option, and the usage problem (`--tools needs a value`, `--tools needs a
    /// number`) otherwise.
    pub fn accept(
        &mut self,
        arg: &str,
        rest: &mut impl Iterator<Item = String>,
    ) -> Result<bool, String> {
        let mut number = || -> Result<u64, String> {
            rest.next()
                .ok_or_else(|| format!("{arg} needs a value"))?
                .parse()
                .map_err(|_| format!("{arg} needs a number"))
        };
        match arg {
            "--tools" => self.tools = number()? as usize,
            "--result-bytes" => self.result_bytes = Some(number()? as usize),
            "--legacy-only" => self.legacy_only = true,
            "--startup-ms" => self.startup_ms = number()?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}
