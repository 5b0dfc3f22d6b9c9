//! The chain itself: what happens between a `401`/`403` from the MCP server and
//! the token the request is retried with.
//!
//! One [`Chain`] per transport, shared by its connections. It keeps the current
//! access token (read lock-free by every request), and runs at most one chain at a
//! time (an async mutex: requests that meet a `401` while another runs wait, then
//! retry with the token it got). Everything persistent goes through the
//! [`TokenStore`] under its lock.
//!
//! The chain's steps each have a file: [`discovery`] finds the authorization server
//! and how to register with it; [`grants`] obtains tokens (refresh, the
//! authorization-code flow, client credentials, the JWT bearer grants). This file holds the state, the
//! store and the entry points the transport calls.

mod client_auth;
mod discovery;
mod grants;
mod logout;

use std::sync::{Arc, RwLock};

use futures_util::future::BoxFuture;

use http::header::HeaderValue;
use http::{HeaderMap, StatusCode};
use secrecy::ExposeSecret;
use tokio::sync::{Mutex, OnceCell};
use url::Url;

use super::OAuth;
use super::challenge::{BearerChallenge, asks_for_dpop_nonce};
use super::dpop::{DPOP, DpopKey, DpopMode, DpopSigner, NonceError, Nonces, nonce_from_headers};
use super::http::{AuthHttp, PolicyGuard};
use super::metadata::{
    AuthorizationServerMetadata, ProtectedResourceMetadata, legacy_resource, resource_matches,
};
use super::registration::Registration;
use super::store::{StoredAuth, StoredDpopKey, StoredTokens, TokenStore};
use super::token;
use crate::diagnostics::{DiagnosticEvent, Diagnostics};
use crate::error::{Error, ErrorKind, Result};
use crate::http::client::HttpClient;
use crate::layer::EgressGrants;
use crate::layer::oauth::{Authorization, RequestProof, Token};

/// The token a request is sent with, and which generation it is.
#[derive(Clone)]
pub(crate) struct Current {
    pub(crate) header: HeaderValue,
    pub(crate) generation: u64,
    expires_at: Option<u64>,
    obtained_at: Option<u64>,
    has_refresh: bool,
    proof: Option<Arc<ResourceProof>>,
}

/// The DPoP proofs of one bound access token on MCP requests: `ath` of the
/// token, the nonce the server's origin gave last. `Debug` shows nothing.
pub(crate) struct ResourceProof {
    key: Arc<DpopKey>,
    access_token: secrecy::SecretString,
    nonces: Arc<Nonces>,
}

impl RequestProof for ResourceProof {
    fn header(
        &self,
        method: &http::Method,
        uri: &http::Uri,
    ) -> Result<(http::HeaderName, HeaderValue)> {
        let url = Url::parse(&uri.to_string()).map_err(|_| {
            Error::new(
                ErrorKind::InvalidConfig,
                "the request URL is not a valid URL",
            )
        })?;
        let nonce = self.nonces.get(&url);
        let value = self.key.proof_header(
            method.as_str(),
            &url,
            Some(self.access_token.expose_secret()),
            nonce.as_deref(),
        )?;
        Ok((DPOP, value))
    }
}

impl Current {
    /// True when this token is due for a refresh ([`token::refresh_due`]).
    fn refresh_due(&self) -> bool {
        token::refresh_due(self.expires_at, self.obtained_at, crate::auth::clock::now())
    }
}

#[derive(Default)]
struct State {
    loaded: bool,
    stored: StoredAuth,
    /// Every scope requested so far (for the step-up union).
    requested: Vec<String>,
    /// The scopes of the current token.
    granted: Vec<String>,
    generation: u64,
}

/// What discovery found for the resource.
struct Discovered {
    resource: String,
    metadata: AuthorizationServerMetadata,
    prm: Option<ProtectedResourceMetadata>,
}

/// The OAuth chain of one transport.
pub(crate) struct Chain {
    server: Arc<str>,
    mcp: Url,
    config: OAuth,
    key: String,
    /// The transport's client (its MCP requests share it).
    client: HttpClient,
    /// The address policy, shared with the client's connector.
    guard: Arc<PolicyGuard>,
    http: OnceCell<AuthHttp>,
    current: RwLock<Option<Current>>,
    state: Mutex<State>,
    /// DPoP keys in use, per issuer (parsed once from the store or generated).
    dpop_keys: std::sync::Mutex<std::collections::HashMap<String, Arc<DpopKey>>>,
    /// The latest DPoP nonces of the authorization servers' token endpoints.
    as_nonces: Arc<Nonces>,
    /// The latest DPoP nonces of the MCP server's origin.
    rs_nonces: Arc<Nonces>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chain")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

fn unauthorized(message: String) -> Error {
    Error::new(ErrorKind::Unauthorized, message)
}

fn prefixed(server: &str, e: Error) -> Error {
    let message = format!("server \"{server}\": {}", e.message());
    e.with_message(message)
}

fn union(into: &mut Vec<String>, more: &[String]) {
    for s in more {
        if !into.contains(s) {
            into.push(s.clone());
        }
    }
}

impl Chain {
    /// The chain of the transport whose client is `client`; `guard` is the
    /// address policy that client's connector applies outside the endpoint's
    /// origin (see [`PolicyGuard`]).
    pub(crate) fn new(
        server: Arc<str>,
        mcp: Url,
        config: OAuth,
        client: HttpClient,
        guard: Arc<PolicyGuard>,
    ) -> Self {
        let key = config
            .store_key
            .clone()
            .unwrap_or_else(|| server.to_string());
        Chain {
            server,
            mcp,
            config,
            key,
            client,
            guard,
            http: OnceCell::new(),
            current: RwLock::new(None),
            state: Mutex::new(State::default()),
            dpop_keys: Default::default(),
            as_nonces: Default::default(),
            rs_nonces: Default::default(),
        }
    }

    async fn http(&self) -> &AuthHttp {
        self.http
            .get_or_init(|| async {
                let policy = self.guard.policy().await.clone();
                let grants = self
                    .config
                    .grants
                    .clone()
                    .unwrap_or_else(|| default_grants(&self.mcp));
                AuthHttp::new(grants, policy, self.client.clone())
            })
            .await
    }

    fn current(&self) -> Option<Current> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set_current(&self, state: &mut State, stored: &StoredTokens) -> Result<Current> {
        let tokens = &stored.tokens;
        let (scheme, proof) = if tokens.dpop_bound {
            let key = self
                .known_key(state, &stored.issuer)
                .ok_or_else(|| self.login_needed("the DPoP key of the stored token is missing"))?;
            let proof = ResourceProof {
                key,
                access_token: tokens.access_token.clone(),
                nonces: self.rs_nonces.clone(),
            };
            ("DPoP", Some(Arc::new(proof)))
        } else {
            ("Bearer", None)
        };
        state.generation += 1;
        state.granted = tokens.scopes.clone();
        let mut header =
            HeaderValue::from_str(&format!("{scheme} {}", tokens.access_token.expose_secret()))
                .map_err(|_| {
                    unauthorized(format!(
                        "server \"{}\": the access token is not a valid header value",
                        self.server
                    ))
                })?;
        header.set_sensitive(true);
        let current = Current {
            header,
            generation: state.generation,
            expires_at: tokens.expires_at,
            obtained_at: tokens.obtained_at,
            has_refresh: tokens.refresh_token.is_some(),
            proof,
        };
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(current.clone());
        Ok(current)
    }

    // ----- DPoP keys -----

    /// The DPoP key for `issuer` already in use or stored, without making one.
    fn known_key(&self, state: &State, issuer: &str) -> Option<Arc<DpopKey>> {
        let mut keys = self
            .dpop_keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(k) = keys.get(issuer) {
            return Some(k.clone());
        }
        let stored = state.stored.dpop_key(issuer)?;
        let key = Arc::new(DpopKey::from_pkcs8(&stored.pkcs8).ok()?);
        keys.insert(issuer.to_owned(), key.clone());
        Some(key)
    }

    /// The DPoP signer for a token request to `issuer` when `wanted`: the key in
    /// use or stored for it, else a new one (stored with the tokens it binds).
    fn dpop_signer(
        &self,
        state: &mut State,
        issuer: &str,
        wanted: bool,
    ) -> Result<Option<DpopSigner>> {
        if !wanted {
            return Ok(None);
        }
        let key = match self.known_key(state, issuer) {
            Some(k) => k,
            None => {
                let key = Arc::new(DpopKey::generate()?);
                state.stored.set_dpop_key(StoredDpopKey {
                    issuer: issuer.to_owned(),
                    pkcs8: key.pkcs8().clone(),
                });
                self.dpop_keys
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(issuer.to_owned(), key.clone());
                key
            }
        };
        Ok(Some(DpopSigner {
            key,
            nonces: self.as_nonces.clone(),
            server: self.server.clone(),
            required: self.config.dpop == DpopMode::Required,
        }))
    }

    /// The key a DPoP-bound token of `issuer` is bound to, as stored.
    fn stored_key(&self, tokens: &StoredTokens) -> Option<StoredDpopKey> {
        if !tokens.tokens.dpop_bound {
            return None;
        }
        let keys = self
            .dpop_keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        keys.get(&tokens.issuer).map(|k| StoredDpopKey {
            issuer: tokens.issuer.clone(),
            pkcs8: k.pkcs8().clone(),
        })
    }

    fn clear_current(&self) {
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    fn login_needed(&self, why: &str) -> Error {
        let hint = match &self.config.login_hint {
            Some(hint) => format!("; {hint}"),
            None => String::new(),
        };
        unauthorized(format!(
            "server \"{}\" requires authorization ({why}){hint}",
            self.server
        ))
    }

    /// Reports one step's outcome to the diagnostics observer (crate text only:
    /// the error's kind and message, never a token, code or server text).
    fn report<T>(&self, diag: &Diagnostics, step: &'static str, result: &Result<T>) {
        if !diag.is_enabled() {
            return;
        }
        let (outcome, detail) = match result {
            Ok(_) => ("ok", None),
            Err(e) => ("failed", Some(format!("{}: {}", e.kind(), e.message()))),
        };
        diag.emit(DiagnosticEvent::OAuthStep {
            server: self.server.clone(),
            step,
            outcome,
            detail,
        });
    }

    // ----- the store, on the blocking pool -----

    async fn with_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn TokenStore, &str) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.unlocked(move |store, key| {
            let _lock = store.lock(key)?;
            f(store, key)
        })
        .await
    }

    /// Takes the store lock (blocking, on the blocking pool); dropping it releases.
    async fn store_lock(&self) -> Result<super::store::StoreLock> {
        self.unlocked(|store, key| store.lock(key)).await
    }

    /// A store operation for a caller that holds the lock.
    async fn unlocked<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn TokenStore, &str) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = self.config.store.clone();
        let key = self.key.clone();
        tokio::task::spawn_blocking(move || f(&*store, &key))
            .await
            .map_err(|_| Error::new(ErrorKind::InvalidConfig, "the token store task failed"))?
    }

    async fn load(&self, state: &mut State) -> Result<()> {
        if state.loaded {
            return Ok(());
        }
        let stored = self.with_store(|s, k| s.load(k)).await?.unwrap_or_default();
        state.loaded = true;
        let tokens = stored
            .tokens
            .clone()
            .filter(|t| t.resource_matches_server(&self.mcp));
        state.stored = stored;
        if let Some(t) = tokens {
            state.requested = t.tokens.scopes.clone();
            self.set_current(state, &t)?;
        }
        Ok(())
    }

    /// Stores `tokens` (read-modify-write under the store lock) and makes them current.
    async fn save_tokens(&self, state: &mut State, tokens: StoredTokens) -> Result<Current> {
        let current = self.set_current(state, &tokens)?;
        let key = self.stored_key(&tokens);
        let saved = self
            .with_store(move |s, k| {
                let mut stored = s.load(k)?.unwrap_or_default();
                if let Some(key) = key {
                    stored.set_dpop_key(key);
                }
                stored.tokens = Some(tokens);
                s.save(k, &stored)?;
                Ok(stored)
            })
            .await?;
        state.stored = saved;
        Ok(current)
    }

    /// Stores a new dynamic registration (read-modify-write under the store lock).
    async fn save_registration(&self, state: &mut State, registration: Registration) -> Result<()> {
        let saved = self
            .with_store(move |s, k| {
                let mut stored = s.load(k)?.unwrap_or_default();
                stored.set_registration(registration);
                s.save(k, &stored)?;
                Ok(stored)
            })
            .await?;
        state.stored = saved;
        Ok(())
    }

    // ----- what the layer calls -----

    /// The token to send a request with, refreshing it first when it is about to
    /// expire and a refresh token is held. Steps are reported to `diag`.
    pub(crate) async fn token_for_request(&self, diag: &Diagnostics) -> Result<Option<Current>> {
        if let Some(c) = self.current() {
            if !c.refresh_due() || !c.has_refresh {
                return Ok(Some(c));
            }
        } else if self.state.try_lock().is_ok_and(|s| s.loaded) {
            return Ok(None);
        }
        let mut state = self.state.lock().await;
        self.load(&mut state).await?;
        let Some(c) = self.current() else {
            return Ok(None);
        };
        if c.refresh_due() && c.has_refresh {
            match self.refresh_locked(&mut state, None, diag).await {
                Ok(c) => return Ok(Some(c)),
                // The 401 that follows runs the whole chain.
                Err(_) => {
                    self.clear_current();
                    return Ok(None);
                }
            }
        }
        Ok(Some(c))
    }

    /// Handles a `401` or `403` answering a request sent with `sent` (a
    /// generation, `None` without a token). Returns the token to retry with.
    /// Steps are reported to `diag`.
    pub(crate) async fn on_challenge(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        sent: Option<u64>,
        diag: &Diagnostics,
    ) -> Result<Current> {
        let challenge = BearerChallenge::from_headers(headers);
        let mut state = self.state.lock().await;
        self.load(&mut state).await?;
        if status == StatusCode::FORBIDDEN {
            let result = self.step_up(&mut state, &challenge, diag).await;
            self.report(diag, "step-up", &result);
            return result;
        }
        // Another request already replaced the token this one was refused with.
        if let Some(c) = self.current()
            && Some(c.generation) != sent
        {
            return Ok(c);
        }
        self.clear_current();
        // Nobody can act and nothing can be refreshed: fail at once, without
        // discovery.
        let can_refresh = state
            .stored
            .tokens
            .as_ref()
            .is_some_and(|t| t.tokens.refresh_token.is_some());
        if self.config.authorizer.is_none()
            && self.config.client_credentials.is_none()
            && !self.config.jwt_bearer_configured()
            && !can_refresh
        {
            let e = self.login_needed("a person must log in");
            self.report(diag, "authorization", &Err::<(), _>(e.clone()));
            return Err(e);
        }
        let found = self.discover(&challenge, diag).await?;
        let issuer = found.metadata.issuer.clone();
        // A refresh (same issuer and resource only).
        if let Some(t) = &state.stored.tokens
            && t.issuer == issuer
            && t.resource == found.resource
            && t.tokens.refresh_token.is_some()
            && let Ok(c) = self.refresh_locked(&mut state, Some(&found), diag).await
        {
            return Ok(c);
        }
        let scopes = self.select_scopes(&challenge, &found);
        self.authorize(&mut state, &found, scopes, diag).await
    }

    /// A `403`: only `insufficient_scope` re-authorizes (a new authorization, not
    /// a refresh: a refresh cannot widen the scope), with the union of the scopes
    /// requested and granted before and the ones the challenge names. A challenge
    /// that names none falls back to the resource's `scopes_supported` (its
    /// Protected Resource Metadata). One step-up per scope: when no scope is left
    /// that was not already requested (granted or not), asking again would loop,
    /// and the error is `unauthorized` with the login hint.
    async fn step_up(
        &self,
        state: &mut State,
        challenge: &BearerChallenge,
        diag: &Diagnostics,
    ) -> Result<Current> {
        if challenge.error.as_deref() != Some("insufficient_scope") {
            return Err(unauthorized(format!(
                "server \"{}\" refused the request: HTTP 403",
                self.server
            )));
        }
        let mut wanted = challenge.scopes();
        let mut found = None;
        if wanted.is_empty() {
            let discovered = self.discover(challenge, diag).await?;
            wanted = discovered
                .prm
                .as_ref()
                .and_then(|p| p.scopes_supported.clone())
                .unwrap_or_default();
            found = Some(discovered);
        }
        if wanted
            .iter()
            .all(|s| state.granted.contains(s) || state.requested.contains(s))
        {
            return Err(self.login_needed(
                "HTTP 403 insufficient_scope, and the scopes it names, or its resource metadata lists, were already requested",
            ));
        }
        self.clear_current();
        if self.config.authorizer.is_none()
            && self.config.client_credentials.is_none()
            && !self.config.jwt_bearer_configured()
        {
            return Err(self.login_needed("a person must log in"));
        }
        let found = match found {
            Some(found) => found,
            None => self.discover(challenge, diag).await?,
        };
        let mut scopes = state.requested.clone();
        union(&mut scopes, &state.granted.clone());
        union(&mut scopes, &wanted);
        self.authorize(state, &found, scopes, diag).await
    }
}

/// What the OAuth layer calls.
impl Authorization for Chain {
    fn server_name(&self) -> &str {
        &self.server
    }

    fn token<'a>(&'a self, diagnostics: &'a Diagnostics) -> BoxFuture<'a, Result<Option<Token>>> {
        Box::pin(async move {
            Ok(self
                .token_for_request(diagnostics)
                .await?
                .map(Current::token))
        })
    }

    fn observe(
        &self,
        uri: &http::Uri,
        status: StatusCode,
        headers: &HeaderMap,
        proved: bool,
        diagnostics: &Diagnostics,
    ) -> Result<bool> {
        let nonce = nonce_from_headers(headers);
        if matches!(nonce, Ok(None)) && status != StatusCode::UNAUTHORIZED {
            return Ok(false);
        }
        let asks = proved && status == StatusCode::UNAUTHORIZED && asks_for_dpop_nonce(headers);
        let Ok(url) = Url::parse(&uri.to_string()) else {
            return Ok(false);
        };
        match nonce {
            Ok(Some(nonce)) => {
                self.rs_nonces.set(&url, nonce);
                Ok(asks)
            }
            Ok(None) if asks => Err(NonceError::Missing.into_error(&self.server, "MCP server")),
            Ok(None) => Ok(false),
            Err(e) if asks => Err(e.into_error(&self.server, "MCP server")),
            Err(e) => {
                // Not asked for: ignored, and said so.
                let e = e.ignored(&self.server, "MCP server");
                self.report(diagnostics, "dpop-nonce", &Err::<(), _>(e));
                Ok(false)
            }
        }
    }

    fn is_challenge(&self, status: StatusCode, headers: &HeaderMap) -> bool {
        match status {
            StatusCode::UNAUTHORIZED => true,
            StatusCode::FORBIDDEN => {
                BearerChallenge::from_headers(headers).error.as_deref()
                    == Some("insufficient_scope")
            }
            _ => false,
        }
    }

    fn on_challenge<'a>(
        &'a self,
        status: StatusCode,
        headers: &'a HeaderMap,
        sent: Option<u64>,
        diagnostics: &'a Diagnostics,
    ) -> BoxFuture<'a, Result<Token>> {
        Box::pin(async move {
            Chain::on_challenge(self, status, headers, sent, diagnostics)
                .await
                .map(Current::token)
        })
    }
}

impl Current {
    fn token(self) -> Token {
        Token {
            header: self.header,
            generation: self.generation,
            proof: self.proof.map(|p| p as Arc<dyn RequestProof>),
        }
    }
}

impl StoredTokens {
    /// True when these tokens were issued for a resource that identifies `mcp`.
    pub(crate) fn resource_matches_server(&self, mcp: &Url) -> bool {
        resource_matches(&self.resource, mcp) || self.resource == legacy_resource(mcp)
    }
}

/// The grants the chain uses unless the host sets its own: `GET` and `POST` to
/// any `https` origin (any port), plus `http` on loopback when the MCP server is
/// itself on loopback. The address policy still applies on top.
pub fn default_grants(mcp: &Url) -> EgressGrants {
    let mut grants = EgressGrants::parse(["net:get|post:https://**:*"]).unwrap_or_default();
    let loopback = match mcp.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    if loopback {
        for g in [
            "net:get|post:http://localhost:*",
            "net:get|post:http://127.0.0.1:*",
            "net:get|post:http://[::1]:*",
        ] {
            if let Ok(next) = grants.clone().with(g) {
                grants = next;
            }
        }
    }
    grants
}
