//! The chain itself: what happens between a `401`/`403` from the MCP server and
//! the token the request is retried with.
//!
//! One [`Chain`] per transport, shared by its connections. It keeps the current
//! access token (read lock-free by every request), and runs at most one chain at a
//! time (an async mutex: requests that meet a `401` while another runs wait, then
//! retry with the token it got). Everything persistent goes through the
//! [`TokenStore`] under its lock.

use std::sync::{Arc, RwLock};

use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use http::{HeaderMap, Method, StatusCode};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::{Mutex, OnceCell};
use url::Url;

use super::authorize::{AuthorizationRequest, authorization_url, validate_callback};
use super::challenge::BearerChallenge;
use super::http::{AuthHttp, MAX_TOKEN_RESPONSE_BYTES};
use super::metadata::{
    AuthorizationServerMetadata, MAX_METADATA_BYTES, ProtectedResourceMetadata,
    authorization_server_metadata_urls, decode_authorization_server_metadata,
    decode_protected_resource_metadata, decode_registration, legacy_resource, origin_text,
    protected_resource_metadata_urls, resource_matches,
};
use super::policy::AddressPolicy;
use super::registration::{self, Plan, Registration, RegistrationKind};
use super::store::{StoredAuth, StoredTokens, TokenStore};
use super::token::{self, AuthMethod, TokenEndpoint, TokenFailure, TokenSet, choose_auth_method};
use super::{ClientCredentials, OAuth};
use crate::error::{Error, ErrorKind, Result};
use crate::layer::EgressGrants;

/// The token a request is sent with, and which generation it is.
#[derive(Clone)]
pub(crate) struct Current {
    pub(crate) header: HeaderValue,
    pub(crate) generation: u64,
    expires_at: Option<u64>,
    has_refresh: bool,
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
    tls: rustls::ClientConfig,
    http: OnceCell<AuthHttp>,
    current: RwLock<Option<Current>>,
    state: Mutex<State>,
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
    pub(crate) fn new(
        server: Arc<str>,
        mcp: Url,
        config: OAuth,
        tls: rustls::ClientConfig,
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
            tls,
            http: OnceCell::new(),
            current: RwLock::new(None),
            state: Mutex::new(State::default()),
        }
    }

    /// The configured server name.
    pub(crate) fn server_name(&self) -> &str {
        &self.server
    }

    /// The origin the token is sent to: the MCP endpoint's.
    pub(crate) fn mcp_url(&self) -> &Url {
        &self.mcp
    }

    async fn http(&self) -> &AuthHttp {
        self.http
            .get_or_init(|| async {
                let policy = AddressPolicy::for_server(&self.mcp).await;
                let grants = self
                    .config
                    .grants
                    .clone()
                    .unwrap_or_else(|| default_grants(&self.mcp));
                AuthHttp::new(grants, policy, self.tls.clone())
            })
            .await
    }

    fn current(&self) -> Option<Current> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set_current(&self, state: &mut State, tokens: &TokenSet) -> Result<Current> {
        state.generation += 1;
        state.granted = tokens.scopes.clone();
        let mut header =
            HeaderValue::from_str(&format!("Bearer {}", tokens.access_token.expose_secret()))
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
            has_refresh: tokens.refresh_token.is_some(),
        };
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(current.clone());
        Ok(current)
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

    // ----- the store, on the blocking pool -----

    async fn with_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn TokenStore, &str) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = self.config.store.clone();
        let key = self.key.clone();
        tokio::task::spawn_blocking(move || {
            let _lock = store.lock(&key)?;
            f(&*store, &key)
        })
        .await
        .map_err(|_| Error::new(ErrorKind::InvalidConfig, "the token store task failed"))?
    }

    /// Takes the store lock (blocking, on the blocking pool); dropping it releases.
    async fn store_lock(&self) -> Result<super::store::StoreLock> {
        let store = self.config.store.clone();
        let key = self.key.clone();
        tokio::task::spawn_blocking(move || store.lock(&key))
            .await
            .map_err(|_| Error::new(ErrorKind::InvalidConfig, "the token store task failed"))?
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
        if let Some(t) = stored
            .tokens
            .as_ref()
            .filter(|t| t.resource_matches_server(&self.mcp))
        {
            state.requested = t.tokens.scopes.clone();
            self.set_current(state, &t.tokens.clone())?;
        }
        state.stored = stored;
        Ok(())
    }

    /// Stores `tokens` (read-modify-write under the store lock) and makes them current.
    async fn save_tokens(
        &self,
        state: &mut State,
        tokens: StoredTokens,
        registration: Option<Registration>,
    ) -> Result<Current> {
        let current = self.set_current(state, &tokens.tokens)?;
        let saved = self
            .with_store(move |s, k| {
                let mut stored = s.load(k)?.unwrap_or_default();
                if let Some(r) = registration {
                    stored.set_registration(r);
                }
                stored.tokens = Some(tokens);
                s.save(k, &stored)?;
                Ok(stored)
            })
            .await?;
        state.stored = saved;
        Ok(current)
    }

    // ----- what the layer calls -----

    /// The token to send a request with, refreshing it first when it is about to
    /// expire and a refresh token is held.
    pub(crate) async fn token_for_request(&self) -> Result<Option<Current>> {
        if let Some(c) = self.current() {
            let fresh = c
                .expires_at
                .is_none_or(|at| at > token::now() + token::REFRESH_MARGIN.as_secs());
            if fresh || !c.has_refresh {
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
        if c.expires_at
            .is_some_and(|at| at <= token::now() + token::REFRESH_MARGIN.as_secs())
            && c.has_refresh
        {
            match self.refresh_locked(&mut state, None).await {
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
    pub(crate) async fn on_challenge(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        sent: Option<u64>,
    ) -> Result<Current> {
        let challenge = BearerChallenge::from_headers(headers);
        let mut state = self.state.lock().await;
        self.load(&mut state).await?;
        // Another request already replaced the token this one was refused with.
        if let Some(c) = self.current()
            && Some(c.generation) != sent
            && status == StatusCode::UNAUTHORIZED
        {
            return Ok(c);
        }
        let step_up = status == StatusCode::FORBIDDEN;
        if step_up {
            if challenge.error.as_deref() != Some("insufficient_scope") {
                return Err(unauthorized(format!(
                    "server \"{}\" refused the request: HTTP 403",
                    self.server
                )));
            }
            let wanted = challenge.scopes();
            // One step-up per scope: asking again for scopes already asked for
            // (granted or not) would loop.
            if wanted.is_empty()
                || wanted
                    .iter()
                    .all(|s| state.granted.contains(s) || state.requested.contains(s))
            {
                return Err(unauthorized(format!(
                    "server \"{}\" refused the request for lack of scope (HTTP 403 insufficient_scope), and the scopes it names were already requested",
                    self.server
                )));
            }
        }
        self.clear_current();
        // Nobody can act and nothing can be refreshed: fail at once, without
        // discovery.
        let can_refresh = !step_up
            && state
                .stored
                .tokens
                .as_ref()
                .is_some_and(|t| t.tokens.refresh_token.is_some());
        if self.config.authorizer.is_none()
            && self.config.client_credentials.is_none()
            && !can_refresh
        {
            return Err(self.login_needed("a person must log in"));
        }
        let found = self.discover(&challenge).await?;
        let issuer = found.metadata.issuer.clone();
        // A refresh (same issuer and resource only) unless this is a step-up: a
        // refresh cannot widen the scope.
        if !step_up
            && let Some(t) = &state.stored.tokens
            && t.issuer == issuer
            && t.resource == found.resource
            && t.tokens.refresh_token.is_some()
            && let Ok(c) = self.refresh_locked(&mut state, Some(&found)).await
        {
            return Ok(c);
        }
        let scopes = if step_up {
            let mut s = state.requested.clone();
            union(&mut s, &state.granted.clone());
            union(&mut s, &challenge.scopes());
            s
        } else {
            self.select_scopes(&challenge, &found)
        };
        self.authorize(&mut state, &found, scopes).await
    }

    fn select_scopes(&self, challenge: &BearerChallenge, found: &Discovered) -> Vec<String> {
        let mut scopes = challenge.scopes();
        if scopes.is_empty()
            && let Some(prm) = &found.prm
        {
            scopes = prm.scopes_supported.clone().unwrap_or_default();
        }
        union(&mut scopes, &self.config.scopes);
        if self.config.offline_access
            && self.config.client_credentials.is_none()
            && !scopes.is_empty()
            && found
                .metadata
                .scopes_supported
                .as_ref()
                .is_some_and(|l| l.iter().any(|s| s == "offline_access"))
        {
            union(&mut scopes, &["offline_access".to_owned()]);
        }
        scopes
    }

    // ----- discovery -----

    async fn get_document(&self, url: &str, what: &str) -> Result<Option<bytes::Bytes>> {
        let url = Url::parse(url).map_err(|_| {
            unauthorized(format!(
                "server \"{}\": the {what} URL is not valid",
                self.server
            ))
        })?;
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let fetched = self
            .http()
            .await
            .send(
                Method::GET,
                &url,
                headers,
                bytes::Bytes::new(),
                MAX_METADATA_BYTES,
                what,
            )
            .await?;
        match fetched.status.as_u16() {
            200 => Ok(Some(fetched.body)),
            400..=499 | 502 => Ok(None),
            code => Err(unauthorized(format!(
                "server \"{}\": the {what} answered HTTP {code}",
                self.server
            ))),
        }
    }

    async fn discover(&self, challenge: &BearerChallenge) -> Result<Discovered> {
        let server = &self.server;
        const PRM: &str = "protected resource metadata";
        let candidates = match &challenge.resource_metadata {
            Some(url) => vec![url.clone()],
            None => protected_resource_metadata_urls(&self.mcp),
        };
        let mut prm = None;
        for url in candidates {
            if let Some(body) = self.get_document(&url, PRM).await? {
                prm = Some(
                    decode_protected_resource_metadata(&body).map_err(|e| prefixed(server, e))?,
                );
                break;
            }
        }
        let Some(prm) = prm else {
            if self.config.legacy_discovery {
                return self.discover_legacy().await;
            }
            return Err(unauthorized(format!(
                "server \"{server}\" asks for authorization but publishes no protected resource metadata"
            )));
        };
        if !resource_matches(&prm.resource, &self.mcp) {
            return Err(unauthorized(format!(
                "server \"{server}\": its protected resource metadata names another resource; not authorizing"
            )));
        }
        let mut last = None;
        for issuer in &prm.authorization_servers {
            match self.fetch_metadata(issuer).await {
                Ok(metadata) => {
                    return Ok(Discovered {
                        resource: prm.resource.clone(),
                        metadata,
                        prm: Some(prm.clone()),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            unauthorized(format!(
                "server \"{server}\": no authorization server metadata found"
            ))
        }))
    }

    async fn fetch_metadata(&self, issuer: &str) -> Result<AuthorizationServerMetadata> {
        let server = &self.server;
        const WHAT: &str = "authorization server metadata";
        let urls = authorization_server_metadata_urls(issuer).map_err(|e| prefixed(server, e))?;
        for url in urls {
            if let Some(body) = self.get_document(&url, WHAT).await? {
                let metadata =
                    decode_authorization_server_metadata(&body).map_err(|e| prefixed(server, e))?;
                if metadata.issuer != issuer {
                    return Err(unauthorized(format!(
                        "server \"{server}\": the authorization server metadata names another issuer than the one it was fetched for; not used"
                    )));
                }
                return Ok(metadata);
            }
        }
        Err(unauthorized(format!(
            "server \"{server}\": the authorization server publishes no metadata"
        )))
    }

    /// 2025-03-26: without PRM, the MCP server's origin is the authorization
    /// server; without metadata there, its default endpoints.
    async fn discover_legacy(&self) -> Result<Discovered> {
        let origin = origin_text(&self.mcp);
        let url = format!("{origin}/.well-known/oauth-authorization-server");
        let metadata = match self
            .get_document(&url, "authorization server metadata")
            .await?
        {
            Some(body) => {
                let m = decode_authorization_server_metadata(&body)?;
                if m.issuer.trim_end_matches('/') != origin {
                    return Err(unauthorized(format!(
                        "server \"{}\": the authorization server metadata names another issuer; not used",
                        self.server
                    )));
                }
                m
            }
            None => AuthorizationServerMetadata {
                issuer: origin.clone(),
                authorization_endpoint: Some(format!("{origin}/authorize")),
                token_endpoint: Some(format!("{origin}/token")),
                registration_endpoint: Some(format!("{origin}/register")),
                response_types_supported: vec!["code".into()],
                code_challenge_methods_supported: Some(vec!["S256".into()]),
                ..Default::default()
            },
        };
        Ok(Discovered {
            resource: legacy_resource(&self.mcp),
            metadata,
            prm: None,
        })
    }

    // ----- tokens -----

    fn endpoint<'a>(
        &'a self,
        url: &'a str,
        reg: &'a Registration,
        supported: Option<&'a [String]>,
        resource: &'a str,
    ) -> TokenEndpoint<'a> {
        let method = choose_auth_method(
            reg.token_endpoint_auth_method.as_deref(),
            supported,
            reg.client_secret.is_some(),
        );
        TokenEndpoint {
            server: &self.server,
            url,
            client_id: &reg.client_id,
            client_secret: registration::secret(reg),
            method,
            resource,
        }
    }

    /// The registration the stored tokens were issued to.
    fn registration_for(
        &self,
        state: &State,
        issuer: &str,
        client_id: &str,
    ) -> Option<Registration> {
        if let Some(r) = state
            .stored
            .registration(issuer)
            .filter(|r| r.client_id == client_id)
        {
            return Some(r.clone());
        }
        if let Some(pre) = &self.config.pre_registered
            && pre.client_id == client_id
            && pre.issuer.as_deref().is_none_or(|i| i == issuer)
        {
            return Some(Registration {
                issuer: issuer.to_owned(),
                client_id: pre.client_id.clone(),
                client_secret: pre.client_secret.clone(),
                token_endpoint_auth_method: None,
                redirect_uris: vec![],
                kind: RegistrationKind::PreRegistered,
            });
        }
        (self.config.metadata_document.as_deref() == Some(client_id)).then(|| Registration {
            issuer: issuer.to_owned(),
            client_id: client_id.to_owned(),
            client_secret: None,
            token_endpoint_auth_method: Some("none".into()),
            redirect_uris: vec![],
            kind: RegistrationKind::MetadataDocument,
        })
    }

    /// Refreshes under the store lock, single-flight across processes: after
    /// taking the lock the store is re-read, and a token another holder rotated
    /// meanwhile is used instead of refreshing again. On `invalid_grant` the
    /// tokens are cleared only if the stored refresh token is still the one sent.
    async fn refresh_locked(
        &self,
        state: &mut State,
        found: Option<&Discovered>,
    ) -> Result<Current> {
        let server = self.server.to_string();
        let held = state
            .stored
            .tokens
            .clone()
            .ok_or_else(|| self.login_needed("no refresh token"))?;
        let ours = held
            .tokens
            .refresh_token
            .clone()
            .ok_or_else(|| self.login_needed("no refresh token"))?;
        let registration = self
            .registration_for(state, &held.issuer, &held.client_id)
            .ok_or_else(|| self.login_needed("the client registration is gone"))?;
        let supported =
            found.and_then(|f| f.metadata.token_endpoint_auth_methods_supported.clone());
        let http = self.http().await.clone();
        // The whole exchange runs while the store lock is held.
        let lock = self.store_lock().await?;
        let stored = self.unlocked(|s, k| s.load(k)).await?.unwrap_or_default();
        let now = token::now();
        if let Some(t) = stored
            .tokens
            .as_ref()
            .filter(|t| t.resource_matches_server(&self.mcp))
            && t.tokens.refresh_token.as_ref().map(|r| r.expose_secret())
                != Some(ours.expose_secret())
            && !t.tokens.needs_refresh(now)
        {
            // Another holder rotated it meanwhile: use theirs.
            drop(lock);
            let t = t.clone();
            state.stored = stored;
            return self.set_current(state, &t.tokens);
        }
        let endpoint = TokenEndpoint {
            server: &server,
            url: &held.token_endpoint,
            client_id: &registration.client_id,
            client_secret: registration::secret(&registration),
            method: choose_auth_method(
                registration.token_endpoint_auth_method.as_deref(),
                supported.as_deref(),
                registration.client_secret.is_some(),
            ),
            resource: &held.resource,
        };
        let result = token::refresh(&http, &endpoint, &ours, &held.tokens.scopes).await;
        let mut stored = stored;
        let outcome = match result {
            Ok(tokens) => {
                let new = StoredTokens {
                    tokens,
                    ..held.clone()
                };
                stored.tokens = Some(new.clone());
                let copy = stored.clone();
                self.unlocked(move |s, k| s.save(k, &copy)).await?;
                (Some(stored), Ok(new))
            }
            Err(TokenFailure::InvalidGrant) => {
                if stored
                    .tokens
                    .as_ref()
                    .and_then(|t| t.tokens.refresh_token.as_ref())
                    .map(|r| r.expose_secret())
                    == Some(ours.expose_secret())
                {
                    stored.tokens = None;
                    let copy = stored.clone();
                    self.unlocked(move |s, k| s.save(k, &copy)).await?;
                }
                (Some(stored), Err(TokenFailure::InvalidGrant))
            }
            Err(other) => (None, Err(other)),
        };
        drop(lock);
        let (stored, result) = outcome;
        if let Some(stored) = stored {
            state.stored = stored;
        }
        match result {
            Ok(t) => self.set_current(state, &t.tokens),
            Err(e) => Err(e.into_error(&self.server)),
        }
    }

    async fn authorize(
        &self,
        state: &mut State,
        found: &Discovered,
        scopes: Vec<String>,
    ) -> Result<Current> {
        let server = self.server.to_string();
        let meta = &found.metadata;
        let token_url = meta.token_endpoint.clone().ok_or_else(|| {
            unauthorized(format!(
                "server \"{server}\": the authorization server has no token endpoint"
            ))
        })?;
        if let Some(creds) = &self.config.client_credentials {
            return self
                .client_credentials(state, found, creds, &token_url, scopes)
                .await;
        }
        let Some(authorizer) = self.config.authorizer.clone() else {
            return Err(self.login_needed("a person must log in"));
        };
        if !meta.response_types_supported.is_empty()
            && !meta.response_types_supported.iter().any(|t| t == "code")
        {
            return Err(unauthorized(format!(
                "server \"{server}\": the authorization server does not offer the authorization code flow"
            )));
        }
        if !meta
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|l| l.iter().any(|m| m == "S256"))
        {
            return Err(unauthorized(format!(
                "server \"{server}\": the authorization server does not advertise PKCE S256; refusing to authorize"
            )));
        }
        let auth_endpoint = meta.authorization_endpoint.clone().ok_or_else(|| {
            unauthorized(format!(
                "server \"{server}\": the authorization server has no authorization endpoint"
            ))
        })?;
        let http = self.http().await.clone();
        let auth_url = Url::parse(&auth_endpoint).map_err(|_| {
            unauthorized(format!(
                "server \"{server}\": the authorization endpoint is not a valid URL"
            ))
        })?;
        http.policy()
            .check_url(&auth_url, "authorization endpoint")?;
        let redirect_uri = authorizer.redirect_uri().to_owned();
        let scope_text = scopes.join(" ");
        let (registration, new_registration) = match registration::plan(
            &server,
            meta,
            self.config.pre_registered.as_ref(),
            self.config.metadata_document.as_deref(),
            state.stored.registration(&meta.issuer),
            Some(&redirect_uri),
        )? {
            Plan::Use(r) => (r, None),
            Plan::Register(endpoint) => {
                let body = registration::registration_body(
                    &self.config.client_name,
                    &redirect_uri,
                    Some(&scope_text),
                );
                let mut headers = HeaderMap::new();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
                let fetched = http
                    .send(
                        Method::POST,
                        &endpoint,
                        headers,
                        bytes::Bytes::from(body.to_string()),
                        MAX_TOKEN_RESPONSE_BYTES,
                        "registration endpoint",
                    )
                    .await?;
                if !fetched.status.is_success() {
                    return Err(unauthorized(format!(
                        "server \"{server}\": the authorization server refused to register this client (HTTP {})",
                        fetched.status.as_u16()
                    )));
                }
                let raw = decode_registration(&fetched.body).map_err(|e| prefixed(&server, e))?;
                let r = Registration {
                    issuer: meta.issuer.clone(),
                    client_id: raw.client_id,
                    client_secret: raw
                        .client_secret
                        .filter(|s| !s.is_empty())
                        .map(SecretString::from),
                    token_endpoint_auth_method: raw.token_endpoint_auth_method,
                    redirect_uris: vec![redirect_uri.clone()],
                    kind: RegistrationKind::Dynamic,
                };
                (r.clone(), Some(r))
            }
        };
        let (url, record) = authorization_url(
            &auth_endpoint,
            &registration.client_id,
            &redirect_uri,
            &found.resource,
            &scopes,
            &meta.issuer,
            meta.authorization_response_iss_parameter_supported,
        )?;
        union(&mut state.requested, &scopes);
        let query = authorizer
            .authorize(AuthorizationRequest {
                url,
                state: &record.state,
                redirect_uri: &redirect_uri,
                server: &server,
                http: &http,
            })
            .await?;
        let code = validate_callback(&server, &record, query.expose_secret())?;
        let endpoint = self.endpoint(
            &token_url,
            &registration,
            meta.token_endpoint_auth_methods_supported.as_deref(),
            &found.resource,
        );
        let tokens = token::exchange_code(
            &http,
            &endpoint,
            code,
            record.verifier,
            &redirect_uri,
            &scopes,
        )
        .await
        .map_err(|e| e.into_error(&server))?;
        let stored = StoredTokens {
            issuer: meta.issuer.clone(),
            resource: found.resource.clone(),
            token_endpoint: token_url.clone(),
            client_id: registration.client_id.clone(),
            tokens,
        };
        self.save_tokens(state, stored, new_registration).await
    }

    async fn client_credentials(
        &self,
        state: &mut State,
        found: &Discovered,
        creds: &ClientCredentials,
        token_url: &str,
        scopes: Vec<String>,
    ) -> Result<Current> {
        let server = self.server.to_string();
        let http = self.http().await.clone();
        let meta = &found.metadata;
        let (secret, extra) = match creds {
            ClientCredentials::Secret { client_secret, .. } => {
                (Some(client_secret.clone()), Vec::new())
            }
            ClientCredentials::PrivateKeyJwt {
                client_id,
                private_key_pem,
            } => {
                let assertion =
                    super::client_credentials::assertion(client_id, private_key_pem, &meta.issuer)?;
                (
                    None,
                    vec![
                        (
                            "client_assertion_type",
                            SecretString::from(super::client_credentials::ASSERTION_TYPE),
                        ),
                        ("client_assertion", assertion),
                    ],
                )
            }
        };
        let method = if secret.is_some() {
            choose_auth_method(
                None,
                meta.token_endpoint_auth_methods_supported.as_deref(),
                true,
            )
        } else {
            AuthMethod::None
        };
        let endpoint = TokenEndpoint {
            server: &server,
            url: token_url,
            client_id: creds.client_id(),
            client_secret: secret.map(|s| oauth2::ClientSecret::new(s.expose_secret().to_owned())),
            method,
            resource: &found.resource,
        };
        union(&mut state.requested, &scopes);
        let tokens = token::client_credentials(&http, &endpoint, &scopes, &extra)
            .await
            .map_err(|e| e.into_error(&server))?;
        let stored = StoredTokens {
            issuer: meta.issuer.clone(),
            resource: found.resource.clone(),
            token_endpoint: token_url.to_owned(),
            client_id: creds.client_id().to_owned(),
            tokens,
        };
        self.save_tokens(state, stored, None).await
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
