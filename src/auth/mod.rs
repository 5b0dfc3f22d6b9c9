//! OAuth 2.1 for remote MCP servers (MCP authorization, revisions 2025-11-25 and
//! 2026-07-28), as tower middleware in the HTTP stack.
//!
//! An HTTP transport given an [`OAuth`] configuration (with
//! [`HttpTransportBuilder::oauth`](crate::transport::http::HttpTransportBuilder::oauth))
//! answers the server's `401` itself:
//!
//! 1. the `WWW-Authenticate` challenge (`auth::challenge`) names the Protected Resource
//!    Metadata, or the well-known URLs are tried (path-aware, then root);
//! 2. the document's `resource` must identify the server (`auth::metadata`);
//! 3. authorization server metadata is fetched in the specification's order
//!    (RFC 8414, then OpenID Connect) and its `issuer` must equal the one asked for;
//! 4. the client is registered: pre-registered credentials, a Client ID Metadata
//!    Document, or Dynamic Client Registration ([`registration`]; a registration
//!    refused for its optional `scope` is retried once without it), per issuer
//!    (and, for dynamic registrations, per redirect URI);
//! 5. an [`Authorizer`] has a person (or, headless, the client itself) open the
//!    authorization URL (PKCE S256, `state`, `resource`, scope rules), and the
//!    redirect is validated (`state`, RFC 9207 `iss`) ([`authorize`]);
//! 6. the code is redeemed with the client authentication the server advertises
//!    ([`token`]); the token goes on every request to the server, is refreshed
//!    before it expires (single-flight, across processes with a [`FileStore`]), and
//!    a `403 insufficient_scope` re-authorizes once with the union of scopes (the
//!    challenge's, or when it names none the resource metadata's
//!    `scopes_supported`; with nothing new to ask for, `unauthorized` with the
//!    login hint);
//! 7. machine clients use [`ClientCredentials`] instead of steps 4-5;
//! 8. when the authorization server advertises DPoP (ES256), tokens are bound to
//!    a key per authorization server and every token and MCP request carries a
//!    fresh proof, with the servers' nonces ([`dpop`], [`OAuth::dpop`]);
//! 9. workloads
//!    [`WorkloadIdentity`] (a platform-minted JWT, the JWT bearer grant), and
//!    enterprise users [`EnterpriseManaged`] (the ID token exchanged at the
//!    enterprise identity provider for an ID-JAG, then the JWT bearer grant)
//!    ([`jwt_bearer`]).
//!
//! Each step's outcome (discovery, registration, authorization, token, refresh,
//! step-up) goes to the session's
//! [diagnostics observer](crate::diagnostics::DiagnosticObserver) as an
//! `oauth-step` event, in crate text only. A refusal names a standard OAuth error
//! code at most, never the server's `error_description`.
//!
//! Every request the chain makes goes through the egress grants and the
//! [`policy`] on discovered URLs and the addresses they resolve to; no redirect is
//! followed, every body is capped, every request has a deadline. The chain has no
//! HTTP client of its own: its stack (`auth::http`) runs over the transport's,
//! which applies the address policy to every connection outside the MCP
//! endpoint's origin. Tokens, codes, verifiers, `state`, secrets and assertions
//! never reach `Debug`, `Display` or an error.
//!
//! When a person must act and no authorizer is installed (the CLI's `tools` and
//! `call`), the request fails at once with `unauthorized` and the configured
//! [`OAuth::login_hint`].
//!
//! A dynamic registration is made once per authorization server and redirect
//! URI and reused by later logins ([`registration`]). Logging out
//! ([`HttpTransport::logout`](crate::transport::http::HttpTransport::logout))
//! revokes the stored tokens at the authorization server's revocation endpoint
//! (RFC 7009, [`revocation`]) and forgets them whatever the answer; the
//! [`Logout`] outcome says whether they were revoked.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use smthrs_mcp::Client;
//! use smthrs_mcp::auth::{FileStore, LoopbackAuthorizer, OAuth};
//! use smthrs_mcp::transport::http::HttpTransport;
//!
//! # async fn run() -> smthrs_mcp::Result<()> {
//! let authorizer = LoopbackAuthorizer::bind(None).await?; // 127.0.0.1, ephemeral port
//! let oauth = OAuth::new()
//!     .client_metadata_url("https://app.example/mcp-client.json")
//!     .store(Arc::new(FileStore::new("/home/me/.local/state/app/tokens.json")))
//!     .authorizer(Arc::new(authorizer));
//! let transport = HttpTransport::builder("tracker", "https://mcp.tracker.example/mcp")
//!     .oauth(oauth)
//!     .build()?;
//! let client = Client::builder("tracker").connect(transport).await?;
//! println!("{} tools", client.catalog().len());
//! client.close().await;
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

/// Implements [`Authorizer`] for a type with a `redirect_uri: String` field and an
/// inherent `async fn run(&self, AuthorizationRequest<'_>) -> Result<SecretString>`.
/// The names are those imported where it is used.
macro_rules! impl_authorizer {
    ($type:ident) => {
        impl Authorizer for $type {
            fn redirect_uri(&self) -> &str {
                &self.redirect_uri
            }

            fn authorize<'a>(
                &'a self,
                request: AuthorizationRequest<'a>,
            ) -> BoxFuture<'a, Result<SecretString>> {
                Box::pin(self.run(request))
            }
        }
    };
}

pub mod authorize;
pub(crate) mod chain;
pub(crate) mod challenge;
pub mod client_credentials;
pub(crate) mod clock;
pub mod dpop;
pub mod file_store;
pub(crate) mod http;
pub(crate) mod id_jag;
pub mod jwt_bearer;
#[cfg(feature = "keyring")]
pub mod keyring_store;
pub mod loopback;
pub(crate) mod metadata;
pub mod policy;
pub mod registration;
pub mod revocation;
pub mod store;
pub mod token;

pub use authorize::{AuthorizationRequest, Authorizer, HeadlessAuthorizer};
pub use chain::default_grants;
pub use client_credentials::ClientCredentials;
pub use dpop::DpopMode;
pub use file_store::FileStore;
pub use jwt_bearer::{AssertionSource, EnterpriseManaged, WorkloadIdentity};
#[cfg(feature = "keyring")]
pub use keyring_store::KeyringStore;
pub use loopback::LoopbackAuthorizer;
pub use registration::PreRegisteredClient;
pub use revocation::Logout;
pub use store::{MemoryStore, StoreLock, StoredAuth, StoredDpopKey, TokenStore};

use crate::layer::EgressGrants;

/// The OAuth configuration of one HTTP server. Setters never fail; the transport
/// builder validates.
#[derive(Clone)]
#[must_use]
pub struct OAuth {
    pub(crate) pre_registered: Option<PreRegisteredClient>,
    pub(crate) metadata_document: Option<String>,
    pub(crate) client_credentials: Option<ClientCredentials>,
    pub(crate) scopes: Vec<String>,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) store_key: Option<String>,
    pub(crate) grants: Option<EgressGrants>,
    pub(crate) legacy_discovery: bool,
    pub(crate) client_name: String,
    pub(crate) login_hint: Option<String>,
    pub(crate) offline_access: bool,
    pub(crate) dpop: DpopMode,
    // JWT bearer grants (auth::jwt_bearer).
    pub(crate) workload_identity: Option<WorkloadIdentity>,
    pub(crate) enterprise_managed: Option<EnterpriseManaged>,
}

impl Default for OAuth {
    fn default() -> Self {
        OAuth {
            pre_registered: None,
            metadata_document: None,
            client_credentials: None,
            scopes: Vec::new(),
            authorizer: None,
            store: Arc::new(MemoryStore::new()),
            store_key: None,
            grants: None,
            legacy_discovery: false,
            client_name: "smthrs-mcp".into(),
            login_hint: None,
            offline_access: true,
            dpop: DpopMode::Auto,
            workload_identity: None,
            enterprise_managed: None,
        }
    }
}

impl OAuth {
    /// The defaults: Dynamic Client Registration, an in-memory store, no
    /// authorizer (a needed login fails with `unauthorized`), the
    /// [`default_grants`], no 2025-03-26 discovery.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use smthrs_mcp::HttpTransport;
    /// use smthrs_mcp::auth::{FileStore, OAuth};
    ///
    /// # let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    /// # let _inside = runtime.enter();
    /// let oauth = OAuth::new()
    ///     .scopes(["tickets:read"])
    ///     .store(Arc::new(FileStore::new("/home/me/.local/state/app/tokens.json")))
    ///     .login_hint("run `app login tracker`");
    /// let transport = HttpTransport::builder("tracker", "https://mcp.tracker.example/mcp")
    ///     .oauth(oauth)
    ///     .build()?; // connects nothing until the client does
    /// # let _ = transport;
    /// # Ok::<(), smthrs_mcp::Error>(())
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses pre-registered credentials (tried first). Default: none.
    pub fn pre_registered(mut self, client: PreRegisteredClient) -> Self {
        self.pre_registered = Some(client);
        self
    }

    /// Uses `url` (an https URL with a path, hosting this client's Client ID
    /// Metadata Document) as the client id where the server supports it. Default:
    /// none.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.metadata_document = Some(url.into());
        self
    }

    /// Authenticates as a machine client with the client credentials grant instead
    /// of the authorization code flow. Default: none.
    pub fn client_credentials(mut self, credentials: ClientCredentials) -> Self {
        self.client_credentials = Some(credentials);
        self
    }

    /// Scopes always requested, in addition to the ones the specification's rules
    /// select. Default: none.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Installs the step where a person authorizes. Default: none.
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Where registrations and tokens are kept. Default: a fresh [`MemoryStore`].
    pub fn store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = store;
        self
    }

    /// The key in the store. Default: the server's name.
    pub fn store_key(mut self, key: impl Into<String>) -> Self {
        self.store_key = Some(key.into());
        self
    }

    /// The egress grants for the chain's own requests (metadata, registration,
    /// tokens). Default: [`default_grants`] of the server's URL.
    pub fn egress_grants(mut self, grants: EgressGrants) -> Self {
        self.grants = Some(grants);
        self
    }

    /// Enables 2025-03-26 discovery for servers without Protected Resource
    /// Metadata: the server's origin is the authorization server, and without
    /// metadata its `/authorize`, `/token` and `/register` are used (PKCE S256 is
    /// then assumed, not advertised). Default: `false`.
    pub fn legacy_discovery(mut self, enabled: bool) -> Self {
        self.legacy_discovery = enabled;
        self
    }

    /// The `client_name` sent in Dynamic Client Registration. Default: `smthrs-mcp`.
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// Text appended to the `unauthorized` error when a person must log in and no
    /// authorizer is installed (the CLI: ``run `smthrs-mcp login SERVER` ``).
    /// Default: none.
    pub fn login_hint(mut self, hint: impl Into<String>) -> Self {
        self.login_hint = Some(hint.into());
        self
    }

    /// Requests `offline_access` (a refresh token) when the authorization server
    /// lists it in `scopes_supported` and some scope is requested; such a request
    /// also carries `prompt=consent`, without which an OpenID provider may drop
    /// `offline_access` (OpenID Connect Core §11). Default: `true`.
    pub fn offline_access(mut self, enabled: bool) -> Self {
        self.offline_access = enabled;
        self
    }

    /// When tokens are bound to a key with DPoP (RFC 9449; see [`dpop`]):
    /// [`DpopMode::Auto`] uses DPoP when the authorization server advertises
    /// ES256 in `dpop_signing_alg_values_supported`; [`DpopMode::Required`]
    /// refuses a server that does not (or that answers with a Bearer token);
    /// [`DpopMode::Off`] never sends a proof. Default: [`DpopMode::Auto`].
    pub fn dpop(mut self, mode: DpopMode) -> Self {
        self.dpop = mode;
        self
    }

    /// Authenticates as a workload with the JWT bearer grant and an assertion
    /// the platform mints (SEP-1933) instead of the authorization code flow: no
    /// registration, no person, no retry. Exclusive with
    /// [`client_credentials`](Self::client_credentials),
    /// [`enterprise_managed`](Self::enterprise_managed),
    /// [`pre_registered`](Self::pre_registered) and
    /// [`authorizer`](Self::authorizer) (the transport builder refuses the pair
    /// with `invalid_config`). Default: none.
    pub fn workload_identity(mut self, grant: WorkloadIdentity) -> Self {
        self.workload_identity = Some(grant);
        self
    }

    /// Authorizes as an enterprise user (SEP-990): the user's ID token is
    /// exchanged at the enterprise identity provider for an ID-JAG, presented
    /// with the JWT bearer grant, instead of the authorization code flow.
    /// Exclusive like [`workload_identity`](Self::workload_identity). Default:
    /// none.
    pub fn enterprise_managed(mut self, grant: EnterpriseManaged) -> Self {
        self.enterprise_managed = Some(grant);
        self
    }

    /// True when a JWT bearer grant replaces the authorization code flow.
    pub(crate) fn jwt_bearer_configured(&self) -> bool {
        self.workload_identity.is_some() || self.enterprise_managed.is_some()
    }

    /// Refuses a JWT bearer grant configured beside another way to obtain tokens.
    fn validate_jwt_bearer(&self) -> crate::error::Result<()> {
        let grant = match (&self.workload_identity, &self.enterprise_managed) {
            (Some(_), Some(_)) => {
                return Err(crate::error::Error::config(
                    "workload identity and enterprise-managed authorization are exclusive; configure one",
                ));
            }
            (Some(w), None) => {
                w.validate()?;
                "workload identity"
            }
            (None, Some(e)) => {
                e.validate()?;
                "enterprise-managed authorization"
            }
            (None, None) => return Ok(()),
        };
        let other = if self.client_credentials.is_some() {
            "client credentials"
        } else if self.pre_registered.is_some() {
            "a pre-registered client"
        } else if self.authorizer.is_some() {
            "an authorizer (the authorization code flow)"
        } else {
            return Ok(());
        };
        Err(crate::error::Error::config(format!(
            "{grant} and {other} are exclusive; configure one"
        )))
    }

    pub(crate) fn validate(&self, server: &str) -> crate::error::Result<()> {
        let named = |e: crate::error::Error| {
            let message = format!("server \"{server}\": {}", e.message());
            e.with_message(message)
        };
        if let Some(url) = &self.metadata_document {
            registration::check_metadata_document_url(url).map_err(named)?;
        }
        if let Some(creds) = &self.client_credentials {
            creds.validate().map_err(named)?;
        }
        if let Some(pre) = &self.pre_registered
            && pre.client_id.is_empty()
        {
            return Err(named(crate::error::Error::config(
                "the pre-registered client id is empty",
            )));
        }
        self.validate_jwt_bearer().map_err(named)?;
        Ok(())
    }
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuth")
            .field("pre_registered", &self.pre_registered)
            .field("client_metadata_url", &self.metadata_document)
            .field("client_credentials", &self.client_credentials)
            .field("scopes", &self.scopes)
            .field("authorizer", &self.authorizer.is_some())
            .field("store_key", &self.store_key)
            .field("egress_grants", &self.grants)
            .field("legacy_discovery", &self.legacy_discovery)
            .field("dpop", &self.dpop)
            .field("workload_identity", &self.workload_identity)
            .field("enterprise_managed", &self.enterprise_managed)
            .finish_non_exhaustive()
    }
}
