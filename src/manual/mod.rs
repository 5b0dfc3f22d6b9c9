//! The manual: prose chapters on using smthrs-mcp, and the reasons behind it.
//!
//! This module holds no code. Each submodule is one chapter, its documentation
//! the text (the arrangement follows rustls' `manual` module). The API
//! reference stays on the items themselves; the chapters say how they fit
//! together, what the crate promises, and why.
//!
//! 1. [`_01_connecting`]: stdio, Streamable HTTP and duplex transports, the
//!    [`Client`](crate::Client) builder, the CLI's server file.
//! 2. [`_02_bounds`]: every limit, its default, the option that sets it, why it
//!    exists and the error it trips.
//! 3. [`_03_authorization`]: OAuth for remote servers: the chain, token stores,
//!    DPoP, machine and enterprise grants, logout, proxies.
//! 4. [`_04_servers_that_ask`]: elicitation, roots and sampling, answered by a
//!    host handler.
//! 5. [`_05_pinning`]: refusing a server whose tools changed since review.
//! 6. [`_06_eras`]: the legacy revisions and 2026-07-28, and how a session's era
//!    is chosen.
//! 7. [`_07_threat_model`]: what the crate defends against at each boundary.
//! 8. [`_08_cancel_safety`]: what dropping a future does, method by method.
//! 9. [`_09_stability`]: semver promises, MSRV, feature flags, the API listing.
//!
//! The examples in the chapters are doc tests: those marked `no_run` need a
//! server or a network and are compiled only; the others run.

#[doc = include_str!("connecting.md")]
pub mod _01_connecting {}

#[doc = include_str!("bounds.md")]
pub mod _02_bounds {}

#[doc = include_str!("authorization.md")]
pub mod _03_authorization {}

#[doc = include_str!("servers_that_ask.md")]
pub mod _04_servers_that_ask {}

#[doc = include_str!("pinning.md")]
pub mod _05_pinning {}

#[doc = include_str!("eras.md")]
pub mod _06_eras {}

#[doc = include_str!("threat_model.md")]
pub mod _07_threat_model {}

#[doc = include_str!("cancel_safety.md")]
pub mod _08_cancel_safety {}

#[doc = include_str!("stability.md")]
pub mod _09_stability {}
