//! `tracing` spans and events, behind the `tracing` cargo feature (off by
//! default; without it every function here compiles to nothing).
//!
//! What is emitted, all at the `smthrs_mcp` target:
//!
//! | what | kind | fields |
//! | --- | --- | --- |
//! | `mcp.connect` | span (INFO) | `server`, `transport` (`stdio`/`http`), `revision` (recorded once negotiated), `fallback` (why a probe fell back to legacy, crate-authored) |
//! | `mcp.call` | span (INFO) | `server`, `tool`, `request_id` (of the last round), `outcome` (`ok`, `is_error`, or an error kind), `duration_ms` |
//! | `session ended` | event (DEBUG) | `server`, `kind` (the terminal error's kind), `noise` (noise frames dropped), `dropped` (notifications and replies nobody waited for) |
//!
//! No field ever holds server-authored text other than the tool name (which passed
//! the catalog's name rules), an argument, a result, a token, an environment value,
//! stderr, or an error message: the [diagnostics observer](crate::diagnostics)
//! stays the only channel for private details.
//!
//! ```no_run
//! # #[cfg(feature = "tracing")]
//! # async fn run() -> smthrs_mcp::Result<()> {
//! // With `tracing-subscriber` (features `fmt`, `env-filter`):
//! // tracing_subscriber::fmt().with_env_filter("smthrs_mcp=debug").init();
//! let client = smthrs_mcp::Client::builder("demo")
//!     .connect(smthrs_mcp::StdioCommand::new("smthrs-mcp").arg("demo-server"))
//!     .await?; // an `mcp.connect` span with server, transport, revision
//! # let _ = client;
//! # Ok(()) }
//! ```
//!
//! `examples/tracing.rs` runs a session with a subscriber installed.

#[cfg(feature = "tracing")]
mod enabled {
    use std::future::Future;

    use tracing::Instrument;

    /// When a call started (read only when spans are recorded).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Stopwatch(std::time::Instant);

    impl Stopwatch {
        pub(crate) fn start() -> Stopwatch {
            Stopwatch(std::time::Instant::now())
        }
    }

    /// A span of this crate (`tracing::Span`).
    #[derive(Clone, Debug)]
    pub(crate) struct Span(pub(crate) tracing::Span);

    pub(crate) fn connect_span(server: &str) -> Span {
        Span(tracing::info_span!(
            target: "smthrs_mcp",
            "mcp.connect",
            server = server,
            transport = tracing::field::Empty,
            revision = tracing::field::Empty,
            fallback = tracing::field::Empty,
        ))
    }

    pub(crate) fn call_span(server: &str, tool: &str) -> Span {
        Span(tracing::info_span!(
            target: "smthrs_mcp",
            "mcp.call",
            server = server,
            tool = tool,
            request_id = tracing::field::Empty,
            outcome = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
        ))
    }

    impl Span {
        pub(crate) fn transport(&self, transport: &'static str) {
            self.0.record("transport", transport);
        }

        pub(crate) fn negotiated(&self, revision: &'static str, fallback: Option<&'static str>) {
            self.0.record("revision", revision);
            if let Some(fallback) = fallback {
                self.0.record("fallback", fallback);
            }
        }

        /// Records how a call ended and how long it took since `started`.
        pub(crate) fn outcome(&self, outcome: &'static str, started: Stopwatch) {
            self.0.record("outcome", outcome);
            self.0
                .record("duration_ms", started.0.elapsed().as_millis() as u64);
        }

        /// `future` inside this span. A plain function returning the wrapped
        /// future, not an `async fn`: that would hold `future` twice (its
        /// argument and its awaited copy), doubling every call's state.
        pub(crate) fn run<F: Future>(&self, future: F) -> tracing::instrument::Instrumented<F> {
            future.instrument(self.0.clone())
        }
    }

    /// Records the id of the request just sent on the current `mcp.call` span.
    pub(crate) fn request_sent(id: u64) {
        tracing::Span::current().record("request_id", id);
    }

    pub(crate) fn session_ended(server: &str, kind: &'static str, noise: u64, dropped: u64) {
        tracing::debug!(target: "smthrs_mcp", server = server, kind = kind, noise = noise, dropped = dropped, "session ended");
    }
}

#[cfg(not(feature = "tracing"))]
mod enabled {
    use std::future::Future;

    /// Without the `tracing` feature: nothing.
    #[derive(Clone, Debug)]
    pub(crate) struct Span;

    /// Without the `tracing` feature: no clock is read (two reads a call).
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Stopwatch;

    impl Stopwatch {
        pub(crate) fn start() -> Stopwatch {
            Stopwatch
        }
    }

    pub(crate) fn connect_span(_server: &str) -> Span {
        Span
    }

    pub(crate) fn call_span(_server: &str, _tool: &str) -> Span {
        Span
    }

    impl Span {
        pub(crate) fn transport(&self, _transport: &'static str) {}

        pub(crate) fn negotiated(&self, _revision: &'static str, _fallback: Option<&'static str>) {}

        pub(crate) fn outcome(&self, _outcome: &'static str, _started: Stopwatch) {}

        /// `future` itself (see the `tracing` variant: not an `async fn`).
        pub(crate) fn run<F: Future>(&self, future: F) -> F {
            future
        }
    }

    pub(crate) fn request_sent(_id: u64) {}

    pub(crate) fn session_ended(_server: &str, _kind: &'static str, _noise: u64, _dropped: u64) {}
}

pub(crate) use enabled::*;
