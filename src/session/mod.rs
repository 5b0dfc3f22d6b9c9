//! The session: connect, hold a frozen catalog, call tools, end once.
//!
//! Three layers, each importing only the one below it:
//!
//! - `engine`, the core: ids, pending requests, the outbound queue and writer,
//!   the reader, deadlines, cancellation, the terminal transition and every
//!   limit. It knows no era; it reaches the layer above only through
//!   `engine::ProtocolHooks`;
//! - `protocol`: the era, chosen once at connect, and all that differs by it
//!   (handshake and re-initialise, `_meta`, multi-round-trip calls, tool-result
//!   decoding, the answers to what a server asks);
//! - `client`: the public [`Client`] and [`ClientBuilder`], a thin handle, and
//!   `subscription`: the host's end of a subscription ([`Subscription`]).
//!
//! Connecting:
//!
//! [`Client::builder`] validates the [`Limits`](crate::Limits) before anything is spawned, then
//! [`ClientBuilder::connect`] connects over any [`Transport`](crate::Transport):
//!
//! 1. open the transport (spawn the child: a failure is `spawn_failed`);
//! 2. choose the era ([`ProtocolMode`], default `auto`): send `server/discover`
//!    and speak 2026-07-28 when the server offers it, else run the legacy
//!    handshake (see `session::protocol::negotiate` for every outcome);
//! 3. legacy: send `initialize`, proposing [`PROPOSED_PROTOCOL_VERSION`] and
//!    [`client_info`]; validate a version in [`SUPPORTED_PROTOCOL_VERSIONS`], else
//!    `protocol_error`; send `notifications/initialized`. The server's
//!    `capabilities` object is kept (both eras) and gates every later request
//!    (`missing_capability`, nothing sent);
//! 4. walk `tools/list` following `nextCursor` under the catalog limits, when the
//!    server declares a `tools` capability object; without one the catalog is
//!    empty (a deviation from the-session contract, which required tools: a
//!    server may offer only resources, prompts or Skills).
//!
//! Every step is bounded by `handshakeTimeoutMs` (the probe by `probeTimeoutMs`).
//! The catalog is then frozen ([`Client::catalog`]) and never refreshed, in
//! either era.
//!
//! The session ends exactly once (see the "Ending" table of the contract): by
//! [`Client::close`], by dropping the last handle, by the transport closing, or by a
//! malformed tagged envelope. The first event wins, and every pending and later call
//! fails with that one error.

pub(crate) mod call_options;
pub(crate) mod client;
pub(crate) mod engine;
pub(crate) mod protocol;
pub(crate) mod subscription;

pub use call_options::{CallEvent, CallOptions, Progress, TaskMode, TaskPolicy};
pub use client::{Client, ClientBuilder, LoadedSkill, MAX_SERVER_NAME_BYTES};
pub use protocol::era::{
    CLIENT_NAME, Era, MODERN_PROTOCOL_VERSION, MODERN_PROTOCOL_VERSIONS, PROPOSED_PROTOCOL_VERSION,
    ProtocolMode, SUPPORTED_PROTOCOL_VERSIONS, client_info,
};
pub use protocol::facts::{
    CacheHint, CacheScope, MAX_CACHE_TTL, MAX_INSTRUCTIONS_BYTES, MAX_SERVER_INFO_BYTES, ServerInfo,
};
pub use protocol::send::{Listing, Page};
pub use protocol::skills::SkillList;
pub use protocol::tool_result::ToolResult;
pub use subscription::Subscription;
