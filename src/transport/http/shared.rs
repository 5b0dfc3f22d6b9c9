//! [`SharedHttpClient`]: one HTTP client (one connection pool) for many
//! [`HttpTransport`](super::HttpTransport)s; the type's docs say what is shared
//! and what never is.

use std::fmt;
use std::sync::{Arc, Mutex};

use hyper_util::client::proxy::matcher::Matcher;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;

use super::{ProxySource, parse_proxy};
use crate::error::{Error, Result};
use crate::http::client::{self, HttpClient};

/// The name the shared client's own configuration errors carry.
const SHARED: &str = "shared HTTP client";

/// One HTTP client (one connection pool, one rustls configuration) for many
/// [`HttpTransport`](super::HttpTransport)s. Cheap to clone: clones are the
/// same client.
///
/// Without it every transport builds its own client: its own pool, its own
/// rustls configuration, its own connections. A host that connects many servers
/// (a [`ClientGroup`](crate::group::ClientGroup)) builds one
/// `SharedHttpClient` and hands a clone to each
/// [`HttpTransportBuilder::http_client`](super::HttpTransportBuilder::http_client):
/// servers on one origin (scheme, host, port) then share its idle connections,
/// and the rustls configuration (with the system's roots) is built once.
///
/// # What is shared, and what never is
///
/// The pool holds connections, nothing else. Everything that decides what a
/// request carries and where it may go stays per transport, above the client:
/// the egress policy, the bearer token (sent only to its own endpoint's origin),
/// the MCP session headers, redirects, your own layers. A token is never sent to
/// another server's origin because a connection was shared: the connection is
/// chosen by the request's origin, after the token layer of the request's own
/// transport decided whether the token goes on it at all.
///
/// The TLS and proxy settings are the client's, so a transport that shares it
/// must say the same: its own proxy setting
/// ([`use_env_proxy`](super::HttpTransportBuilder::use_env_proxy),
/// [`proxy`](super::HttpTransportBuilder::proxy)) and its added roots and
/// [`tls_roots_only`](super::HttpTransportBuilder::tls_roots_only) must equal the
/// shared client's, or [`build`](super::HttpTransportBuilder::build) fails with
/// `invalid_config` naming the setting that differs: a transport is never
/// silently given a pool whose connections were made under other settings. Two
/// settings are never shared at all (the transport keeps a client of its own,
/// so `build` refuses the shared one, `invalid_config`): a client certificate
/// ([`client_identity`](super::HttpTransportBuilder::client_identity)), which is
/// one server's credential, and OAuth, whose authorization chain guards the
/// addresses of its client per endpoint.
///
/// # Lazily built
///
/// [`SharedHttpClientBuilder::build`] checks the settings and builds nothing
/// else: the client for `http://` endpoints (which never uses TLS: redirects stay
/// on the origin and proxies are plain HTTP) is built when the first such
/// transport is, and the one for `https://` endpoints, with the system's roots
/// read once, when the first `https` transport is. So a host that shares a
/// client between plain-HTTP servers never reads the system's certificate store.
///
/// Connections are driven by tasks on the runtime that opened them: use one
/// shared client from one tokio runtime.
///
/// ```no_run
/// use smthrs_mcp::transport::http::{HttpTransport, SharedHttpClient};
///
/// # fn main() -> smthrs_mcp::Result<()> {
/// let shared = SharedHttpClient::builder().use_env_proxy(true).build()?;
/// let tracker = HttpTransport::builder("tracker", "https://mcp.example/tracker/mcp")
///     .use_env_proxy(true) // the same setting as the shared client's
///     .http_client(shared.clone())
///     .build()?;
/// let wiki = HttpTransport::builder("wiki", "https://mcp.example/wiki/mcp")
///     .use_env_proxy(true)
///     .http_client(shared)
///     .build()?;
/// # let _ = (tracker, wiki);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SharedHttpClient {
    inner: Arc<Shared>,
}

struct Shared {
    proxy: ProxySource,
    proxies: Option<Arc<Matcher>>,
    roots: Vec<CertificateDer<'static>>,
    roots_only: bool,
    /// For `http://` endpoints: no roots read.
    plain: Mutex<Option<HttpClient>>,
    /// For `https://` endpoints: the system's roots (unless `roots_only`) and
    /// the added ones.
    tls: Mutex<Option<HttpClient>>,
}

/// Builds a [`SharedHttpClient`]. Setters never fail;
/// [`build`](Self::build) reports the first problem as `invalid_config`.
#[must_use = "a builder does nothing until build() is called"]
#[derive(Default)]
pub struct SharedHttpClientBuilder {
    proxy: ProxySource,
    roots: Vec<CertificateDer<'static>>,
    roots_only: bool,
}

impl SharedHttpClient {
    /// Starts a builder: no proxy, the system's roots, as
    /// [`HttpTransport::builder`](super::HttpTransport::builder)'s defaults.
    pub fn builder() -> SharedHttpClientBuilder {
        SharedHttpClientBuilder::default()
    }

    /// A shared client with the defaults (no proxy, the system's roots): what
    /// transports built with their own defaults may share.
    pub fn new() -> SharedHttpClient {
        SharedHttpClient::from_parts(ProxySource::None, None, Vec::new(), false)
    }

    fn from_parts(
        proxy: ProxySource,
        proxies: Option<Matcher>,
        roots: Vec<CertificateDer<'static>>,
        roots_only: bool,
    ) -> SharedHttpClient {
        SharedHttpClient {
            inner: Arc::new(Shared {
                proxy,
                proxies: proxies.map(Arc::new),
                roots,
                roots_only,
                plain: Mutex::new(None),
                tls: Mutex::new(None),
            }),
        }
    }

    /// Refuses a transport whose own settings differ from the client's
    /// (`invalid_config` naming the server and the setting).
    pub(super) fn check(
        &self,
        server: &str,
        proxy: &ProxySource,
        tls: &client::TlsOptions,
        oauth: bool,
    ) -> Result<()> {
        let refuse = |what: &str| {
            Err(Error::config(format!(
                "server \"{server}\": {what}; build this transport without the shared HTTP client (http_client), or share one whose settings are the transport's"
            )))
        };
        let shared = &self.inner;
        if oauth {
            return refuse("an OAuth transport keeps an HTTP client of its own");
        }
        if tls.identity.is_some() {
            return refuse("a transport with a client certificate keeps an HTTP client of its own");
        }
        if *proxy != shared.proxy {
            return refuse("its proxy setting differs from the shared HTTP client's");
        }
        if tls.roots != shared.roots || tls.roots_only != shared.roots_only {
            return refuse("its TLS roots differ from the shared HTTP client's");
        }
        Ok(())
    }

    /// The proxies the client sends through.
    pub(super) fn proxies(&self) -> Option<&Matcher> {
        self.inner.proxies.as_deref()
    }

    /// The client for an endpoint that needs roots (`https`) or not; built on
    /// first use.
    pub(super) fn client(&self, needs_roots: bool) -> Result<HttpClient> {
        let shared = &self.inner;
        let slot = if needs_roots {
            &shared.tls
        } else {
            &shared.plain
        };
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = slot.as_ref() {
            return Ok(client.clone());
        }
        let options = client::TlsOptions {
            roots: shared.roots.clone(),
            roots_only: shared.roots_only,
            identity: None,
        };
        let tls = client::tls_config(SHARED, options, needs_roots)?;
        let built = HttpClient::shared(tls, shared.proxies.clone());
        *slot = Some(built.clone());
        Ok(built)
    }
}

impl Default for SharedHttpClient {
    fn default() -> Self {
        SharedHttpClient::new()
    }
}

impl fmt::Debug for SharedHttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shared = &self.inner;
        f.debug_struct("SharedHttpClient")
            .field("proxy", &shared.proxy.describe())
            .field("extra_roots", &shared.roots.len())
            .field("tls_roots_only", &shared.roots_only)
            .finish_non_exhaustive()
    }
}

impl SharedHttpClientBuilder {
    /// Honours the proxy environment variables, as
    /// [`HttpTransportBuilder::use_env_proxy`](super::HttpTransportBuilder::use_env_proxy)
    /// (read once, in [`build`](Self::build)). Default: `false`.
    pub fn use_env_proxy(mut self, enabled: bool) -> Self {
        self.proxy = if enabled {
            ProxySource::Env
        } else {
            ProxySource::None
        };
        self
    }

    /// Sends every request through the `http://` proxy at `url`, as
    /// [`HttpTransportBuilder::proxy`](super::HttpTransportBuilder::proxy).
    /// Default: no proxy.
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = ProxySource::Explicit(url.into());
        self
    }

    /// Trusts `der` (a DER-encoded X.509 certificate) as an additional root, as
    /// [`HttpTransportBuilder::add_root_certificate`](super::HttpTransportBuilder::add_root_certificate).
    /// Default: the system's roots only.
    pub fn add_root_certificate(mut self, der: impl Into<Vec<u8>>) -> Self {
        self.roots.push(CertificateDer::from(der.into()));
        self
    }

    /// Trusts only the added roots, as
    /// [`HttpTransportBuilder::tls_roots_only`](super::HttpTransportBuilder::tls_roots_only)
    /// (then at least one is required). Default: `false`.
    pub fn tls_roots_only(mut self, only: bool) -> Self {
        self.roots_only = only;
        self
    }

    /// Checks the settings (the proxy URL, the roots) and returns the client;
    /// its connectors are built when a transport first needs them.
    pub fn build(self) -> Result<SharedHttpClient> {
        let proxies = match &self.proxy {
            ProxySource::None => None,
            ProxySource::Env => Some(Matcher::from_env()),
            ProxySource::Explicit(url) => Some(parse_proxy(SHARED, url).map_err(|_| {
                Error::config(format!("{SHARED}: the proxy must be an absolute http: URL"))
            })?),
        };
        let mut store = RootCertStore::empty();
        for der in &self.roots {
            store.add(der.clone()).map_err(|_| {
                Error::config(format!(
                    "{SHARED}: a custom root certificate is not a valid X.509 certificate"
                ))
            })?;
        }
        if self.roots_only && self.roots.is_empty() {
            return Err(Error::config(format!(
                "{SHARED}: tls_roots_only is set but no root certificate was added"
            )));
        }
        Ok(SharedHttpClient::from_parts(
            self.proxy,
            proxies,
            self.roots,
            self.roots_only,
        ))
    }
}

impl fmt::Debug for SharedHttpClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedHttpClientBuilder")
            .field("proxy", &self.proxy.describe())
            .field("extra_roots", &self.roots.len())
            .field("tls_roots_only", &self.roots_only)
            .finish()
    }
}
