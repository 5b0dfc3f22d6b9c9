//! Tower middleware used by the Streamable HTTP transport, usable on its own.
//!
//! Each middleware lives in one file in [tower-http]'s layout: a module doc with an
//! example, the `FooLayer` (configuration only, `Clone`), the `Foo<S>` service, the
//! constructors, and the tests.
//!
//! - [`bearer_auth`]: [`BearerAuthLayer`] adds `Authorization: Bearer <token>`, marked
//!   sensitive, and only to requests for the origin it was configured for.
//! - [`egress_policy`]: [`EgressPolicyLayer`] refuses, before the inner service is
//!   called (so before any byte leaves the process), every request whose method and
//!   destination origin no `net:<method>:<origin>` grant allows.
//!
//! - [`oauth`]: [`OAuthLayer`] holds the OAuth token of one server and runs its
//!   authorization chain on a `401` (in place of [`BearerAuthLayer`] for entries
//!   that use OAuth). The chain is the auth module's; the layer knows it only
//!   through the small `oauth::Authorization` trait it implements, so this
//!   module imports neither the auth module nor the transport.
//!
//! The transport stacks them as: your own layers, then the same-origin redirects
//! (when enabled), then [`EgressPolicyLayer`], then [`BearerAuthLayer`] or
//! [`OAuthLayer`], then the MCP header/session layer, over the transport's one
//! hyper-util client.
//!
//! [tower-http]: https://docs.rs/tower-http

/// `get_ref`, `get_mut` and `into_inner` for a middleware service whose wrapped
/// service is its `inner` field (tower's accessors).
macro_rules! inner_accessors {
    ($service:ident) => {
        impl<S> $service<S> {
            /// The wrapped service.
            pub fn get_ref(&self) -> &S {
                &self.inner
            }

            /// The wrapped service, mutably.
            pub fn get_mut(&mut self) -> &mut S {
                &mut self.inner
            }

            /// Unwraps the inner service.
            pub fn into_inner(self) -> S {
                self.inner
            }
        }
    };
}

pub mod bearer_auth;
pub mod egress_policy;
pub mod oauth;

pub use bearer_auth::{BearerAuth, BearerAuthLayer};
pub use egress_policy::{EgressGrants, EgressPolicy, EgressPolicyLayer};
pub use oauth::{OAuthLayer, OAuthService};

/// The boxed error type services in this crate's HTTP stack return (tower's usual
/// `BoxError`). Errors this crate produces itself are boxed [`crate::Error`]s.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
