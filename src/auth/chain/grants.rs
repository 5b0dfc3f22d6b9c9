//! Grants: how the chain obtains tokens once it knows where to ask: a refresh
//! single-flight across processes, the authorization-code flow with PKCE through
//! the host's authorizer, the client-credentials grant, and the JWT bearer
//! grants (workload identity; enterprise-managed, after the token exchange at the
//! identity provider).

use http::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use http::{HeaderMap, Method};
use secrecy::{ExposeSecret, SecretString};
use url::Url;

use crate::auth::ClientCredentials;
use crate::auth::authorize::{AuthorizationRequest, authorization_url, validate_callback};
use crate::auth::dpop::{DpopMode, DpopSigner};
use crate::auth::http::{AuthHttp, MAX_TOKEN_RESPONSE_BYTES};
use crate::auth::jwt_bearer;
use crate::auth::metadata::{AuthorizationServerMetadata, decode_registration};
use crate::auth::registration::{self, Plan, Registration, RegistrationKind};
use crate::auth::store::StoredTokens;
use crate::auth::token::{self, AuthMethod, TokenEndpoint, TokenFailure, choose_auth_method};
use crate::diagnostics::Diagnostics;
use crate::error::Result;

use super::{Chain, Current, Discovered, State, prefixed, unauthorized, union};

impl Chain {
    /// Refreshes under the store lock, single-flight across processes: after
    /// taking the lock the store is re-read, and a token another holder rotated
    /// meanwhile is used instead of refreshing again. On `invalid_grant` the
    /// tokens are cleared only if the stored refresh token is still the one sent.
    pub(super) async fn refresh_locked(
        &self,
        state: &mut State,
        found: Option<&Discovered>,
        diag: &Diagnostics,
    ) -> Result<Current> {
        let result = self.refresh_single_flight(state, found).await;
        self.report(diag, "refresh", &result);
        result
    }

    async fn refresh_single_flight(
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
        let supported =
            found.and_then(|f| f.metadata.token_endpoint_auth_methods_supported.clone());
        let auth = self
            .client_auth(&state.stored, &held, supported.as_deref())?
            .ok_or_else(|| self.login_needed("the client registration is gone"))?;
        let http = self.http().await.clone();
        // The whole exchange runs while the store lock is held.
        let lock = self.store_lock().await?;
        let stored = self.unlocked(|s, k| s.load(k)).await?.unwrap_or_default();
        let now = crate::auth::clock::now();
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
            return self.set_current(state, &t);
        }
        // A bound token is refreshed with a proof (RFC 9449 §5: a public
        // client's refresh token is bound too); otherwise as for a new grant.
        let mode = self.config.dpop;
        let wanted = if mode != DpopMode::Off && held.tokens.dpop_bound {
            true
        } else {
            match found {
                Some(f) => mode.use_for(
                    f.metadata.dpop_signing_alg_values_supported.as_deref(),
                    &server,
                )?,
                None => mode == DpopMode::Required,
            }
        };
        let dpop = self.dpop_signer(state, &held.issuer, wanted)?;
        let endpoint = TokenEndpoint {
            server: &server,
            url: &held.token_endpoint,
            client_id: &held.client_id,
            client_secret: auth.oauth2_secret(),
            method: auth.method,
            resource: &held.resource,
            dpop,
        };
        let result =
            token::refresh(&http, &endpoint, &ours, &held.tokens.scopes, &auth.extra).await;
        let mut stored = stored;
        let outcome = match result {
            Ok(tokens) => {
                let new = StoredTokens {
                    tokens,
                    ..held.clone()
                };
                if let Some(key) = self.stored_key(&new) {
                    stored.set_dpop_key(key);
                }
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
            Ok(t) => self.set_current(state, &t),
            Err(e) => Err(e.into_error(&self.server)),
        }
    }

    /// Obtains a token for `scopes`: client credentials when configured, else the
    /// authorization code flow (registration, authorization, code exchange), each
    /// step reported to `diag`.
    pub(super) async fn authorize(
        &self,
        state: &mut State,
        found: &Discovered,
        scopes: Vec<String>,
        diag: &Diagnostics,
    ) -> Result<Current> {
        let server = self.server.to_string();
        let meta = &found.metadata;
        let token_url = meta.token_endpoint.clone().ok_or_else(|| {
            unauthorized(format!(
                "server \"{server}\": the authorization server has no token endpoint"
            ))
        })?;
        if self.config.jwt_bearer_configured() {
            return self
                .jwt_bearer(state, found, &token_url, scopes, diag)
                .await;
        }
        if let Some(creds) = &self.config.client_credentials {
            let result = self
                .client_credentials(state, found, creds, &token_url, scopes)
                .await;
            self.report(diag, "client-credentials", &result);
            return result;
        }
        let Some(authorizer) = self.config.authorizer.clone() else {
            let e = self.login_needed("a person must log in");
            self.report(diag, "authorization", &Err::<(), _>(e.clone()));
            return Err(e);
        };
        let http = self.http().await.clone();
        let auth_endpoint = self.code_flow_endpoint(meta, &http);
        if auth_endpoint.is_err() {
            self.report(diag, "authorization", &auth_endpoint);
        }
        let auth_endpoint = auth_endpoint?;
        let redirect_uri = authorizer.redirect_uri().to_owned();
        // A registration's `scope` bounds every later authorization at some
        // servers (oidc-provider refuses a scope outside it with `invalid_scope`),
        // and the registration is reused: it names the resource's
        // `scopes_supported` too, so a step-up to one of them stays within it.
        // The authorization itself asks only for `scopes`.
        let mut registered = scopes.clone();
        if let Some(supported) = found.prm.as_ref().and_then(|p| p.scopes_supported.as_ref()) {
            union(&mut registered, supported);
        }
        let scope_text = registered.join(" ");
        let plan = registration::plan(
            &server,
            meta,
            self.config.pre_registered.as_ref(),
            self.config.metadata_document.as_deref(),
            &state.stored.registrations,
            Some(&redirect_uri),
        );
        if plan.is_err() {
            self.report(diag, "registration", &plan);
        }
        let registration = match plan? {
            Plan::Use(r) => r,
            Plan::Register(endpoint) => {
                let r = self
                    .register(&http, &endpoint, &meta.issuer, &redirect_uri, &scope_text)
                    .await;
                self.report(diag, "registration", &r);
                let r = r?;
                // Stored at once: reused by the next authorization with this
                // redirect URI even if this one is abandoned.
                self.save_registration(state, r.clone()).await?;
                r
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
        let code = authorizer
            .authorize(AuthorizationRequest {
                url,
                state: &record.state,
                redirect_uri: &redirect_uri,
                server: &server,
                http: &http,
            })
            .await
            .and_then(|query| validate_callback(&server, &record, query.expose_secret()));
        self.report(diag, "authorization", &code);
        let code = code?;
        let mut endpoint = self.endpoint(
            &token_url,
            &registration,
            meta.token_endpoint_auth_methods_supported.as_deref(),
            &found.resource,
        );
        endpoint.dpop = self.new_grant_signer(state, meta)?;
        let tokens = token::exchange_code(
            &http,
            &endpoint,
            code,
            record.verifier,
            &redirect_uri,
            &scopes,
        )
        .await
        .map_err(|e| e.into_error(&server));
        self.report(diag, "token", &tokens);
        let tokens = tokens?;
        let stored = StoredTokens {
            issuer: meta.issuer.clone(),
            resource: found.resource.clone(),
            token_endpoint: token_url.clone(),
            client_id: registration.client_id.clone(),
            tokens,
            revocation_endpoint: meta.revocation_endpoint.clone(),
        };
        self.save_tokens(state, stored).await
    }

    /// The DPoP signer for a new grant at the server `meta` describes, as
    /// [`OAuth::dpop`](crate::auth::OAuth::dpop) and its metadata say.
    fn new_grant_signer(
        &self,
        state: &mut State,
        meta: &AuthorizationServerMetadata,
    ) -> Result<Option<DpopSigner>> {
        let wanted = self.config.dpop.use_for(
            meta.dpop_signing_alg_values_supported.as_deref(),
            &self.server,
        )?;
        self.dpop_signer(state, &meta.issuer, wanted)
    }

    /// The authorization endpoint, when the server offers the authorization code
    /// flow with PKCE S256 there and the address policy admits it.
    fn code_flow_endpoint(
        &self,
        meta: &AuthorizationServerMetadata,
        http: &AuthHttp,
    ) -> Result<String> {
        let server = &self.server;
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
        let auth_url = Url::parse(&auth_endpoint).map_err(|_| {
            unauthorized(format!(
                "server \"{server}\": the authorization endpoint is not a valid URL"
            ))
        })?;
        http.policy()
            .check_url(&auth_url, "authorization endpoint")?;
        Ok(auth_endpoint)
    }

    /// Dynamic Client Registration (RFC 7591) at `endpoint`. A refusal of a body
    /// carrying `scope` is retried once without it
    /// ([`registration::retry_without_scope`]); a final refusal names the step, the
    /// HTTP status and the standard error code at most.
    async fn register(
        &self,
        http: &AuthHttp,
        endpoint: &Url,
        issuer: &str,
        redirect_uri: &str,
        scope: &str,
    ) -> Result<Registration> {
        let server = &self.server;
        let mut scope = Some(scope).filter(|s| !s.is_empty());
        let fetched = loop {
            let body =
                registration::registration_body(&self.config.client_name, redirect_uri, scope);
            let mut headers = HeaderMap::new();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
            let fetched = http
                .send(
                    Method::POST,
                    endpoint,
                    headers,
                    bytes::Bytes::from(body.to_string()),
                    MAX_TOKEN_RESPONSE_BYTES,
                    "registration endpoint",
                )
                .await?;
            if fetched.status.is_success() {
                break fetched;
            }
            let error = registration::registration_error_name(&fetched.body);
            if scope.is_some()
                && fetched.status == http::StatusCode::BAD_REQUEST
                && registration::retry_without_scope(error)
            {
                scope = None;
                continue;
            }
            return Err(unauthorized(format!(
                "server \"{server}\": the authorization server refused to register this client: HTTP {} ({error})",
                fetched.status.as_u16()
            )));
        };
        let raw = decode_registration(&fetched.body).map_err(|e| prefixed(server, e))?;
        Ok(Registration {
            issuer: issuer.to_owned(),
            client_id: raw.client_id,
            client_secret: raw
                .client_secret
                .filter(|s| !s.is_empty())
                .map(SecretString::from),
            token_endpoint_auth_method: raw.token_endpoint_auth_method,
            redirect_uris: vec![redirect_uri.to_owned()],
            kind: RegistrationKind::Dynamic,
        })
    }

    pub(super) async fn client_credentials(
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
                let assertion = crate::auth::client_credentials::assertion(
                    client_id,
                    private_key_pem,
                    &meta.issuer,
                )?;
                (
                    None,
                    vec![
                        (
                            "client_assertion_type",
                            SecretString::from(crate::auth::client_credentials::ASSERTION_TYPE),
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
            dpop: self.new_grant_signer(state, meta)?,
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
            revocation_endpoint: meta.revocation_endpoint.clone(),
        };
        self.save_tokens(state, stored).await
    }

    /// The JWT bearer grant (RFC 7523) with the configured workload identity
    /// assertion, or with the ID-JAG the identity provider issues for the user's
    /// ID token (enterprise-managed authorization). The authorization server must
    /// list the grant. Each request is made once: a refusal is the error, with no
    /// retry and no other grant. Steps reported: `token-exchange`, `jwt-bearer`.
    pub(super) async fn jwt_bearer(
        &self,
        state: &mut State,
        found: &Discovered,
        token_url: &str,
        scopes: Vec<String>,
        diag: &Diagnostics,
    ) -> Result<Current> {
        let server = self.server.to_string();
        let meta = &found.metadata;
        let listed = meta
            .grant_types_supported
            .as_ref()
            .is_some_and(|l| l.iter().any(|g| g == jwt_bearer::JWT_BEARER_GRANT));
        if !listed {
            let e = unauthorized(format!(
                "server \"{server}\": the authorization server does not list the JWT bearer grant ({}) in grant_types_supported",
                jwt_bearer::JWT_BEARER_GRANT
            ));
            self.report(diag, "jwt-bearer", &Err::<(), _>(e.clone()));
            return Err(e);
        }
        let http = self.http().await.clone();
        union(&mut state.requested, &scopes);
        let (assertion, client_id, secret, method) = match (
            &self.config.workload_identity,
            &self.config.enterprise_managed,
        ) {
            (Some(w), _) => {
                let assertion = w
                    .assertion
                    .read(jwt_bearer::WORKLOAD_ASSERTION)
                    .await
                    .map_err(|e| prefixed(&server, e));
                if assertion.is_err() {
                    self.report(diag, "jwt-bearer", &assertion);
                }
                (assertion?, w.client_id.clone(), None, AuthMethod::None)
            }
            (None, Some(e)) => {
                let id_jag = jwt_bearer::exchange_id_token(
                    &http,
                    &server,
                    e,
                    &meta.issuer,
                    &found.resource,
                    &scopes,
                )
                .await;
                self.report(diag, "token-exchange", &id_jag);
                let method = choose_auth_method(
                    None,
                    meta.token_endpoint_auth_methods_supported.as_deref(),
                    e.client_secret.is_some(),
                );
                (
                    id_jag?.assertion,
                    e.client_id.clone(),
                    e.client_secret.clone(),
                    method,
                )
            }
            (None, None) => return Err(self.login_needed("no JWT bearer grant is configured")),
        };
        let endpoint = TokenEndpoint {
            server: &server,
            url: token_url,
            client_id: &client_id,
            client_secret: secret.map(|s| oauth2::ClientSecret::new(s.expose_secret().to_owned())),
            method,
            resource: &found.resource,
            dpop: self.new_grant_signer(state, meta)?,
        };
        let tokens = jwt_bearer::jwt_bearer_token(&http, &endpoint, &assertion, &scopes)
            .await
            .map_err(|e| e.into_error(&server));
        self.report(diag, "jwt-bearer", &tokens);
        let stored = StoredTokens {
            issuer: meta.issuer.clone(),
            resource: found.resource.clone(),
            token_endpoint: token_url.to_owned(),
            client_id,
            tokens: tokens?,
            revocation_endpoint: meta.revocation_endpoint.clone(),
        };
        self.save_tokens(state, stored).await
    }
}
