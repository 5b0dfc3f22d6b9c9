//! Discovery: the protected-resource and authorization-server metadata the chain
//! follows from a challenge (or the legacy fallback), the endpoints it picks, the
//! scopes it asks for and how it registers.

use http::header::{ACCEPT, HeaderValue};
use http::{HeaderMap, Method};
use url::Url;

use crate::auth::challenge::BearerChallenge;
use crate::auth::metadata::{
    AuthorizationServerMetadata, MAX_METADATA_BYTES, ProtectedResourceMetadata,
    authorization_server_metadata_urls, decode_authorization_server_metadata,
    decode_protected_resource_metadata, legacy_resource, origin_text,
    protected_resource_metadata_urls, resource_matches,
};
use crate::auth::registration::{self, Registration, RegistrationKind};
use crate::auth::token::{TokenEndpoint, choose_auth_method};
use crate::diagnostics::Diagnostics;
use crate::error::Result;

use crate::auth::store::StoredAuth;

use super::{Chain, Discovered, prefixed, unauthorized, union};

impl Chain {
    pub(super) fn select_scopes(
        &self,
        challenge: &BearerChallenge,
        found: &Discovered,
    ) -> Vec<String> {
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

    pub(super) async fn get_document(&self, url: &str, what: &str) -> Result<Option<bytes::Bytes>> {
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

    /// Discovery from a challenge: the Protected Resource Metadata (or, when
    /// there is none and it is enabled, the 2025-03-26 fallback), then the first
    /// authorization server whose metadata is usable. Each step is reported to
    /// `diag`.
    pub(super) async fn discover(
        &self,
        challenge: &BearerChallenge,
        diag: &Diagnostics,
    ) -> Result<Discovered> {
        const PRM: &str = "protected-resource-metadata";
        let prm = match self.protected_resource(challenge).await {
            Ok(Some(prm)) => prm,
            Ok(None) if self.config.legacy_discovery => {
                let found = self.discover_legacy().await;
                self.report(diag, "authorization-server-metadata", &found);
                return found;
            }
            Ok(None) => {
                let e = unauthorized(format!(
                    "server \"{}\" asks for authorization but publishes no protected resource metadata",
                    self.server
                ));
                self.report(diag, PRM, &Err::<(), _>(e.clone()));
                return Err(e);
            }
            Err(e) => {
                self.report(diag, PRM, &Err::<(), _>(e.clone()));
                return Err(e);
            }
        };
        self.report(diag, PRM, &Ok(()));
        let found = self.authorization_server(prm).await;
        self.report(diag, "authorization-server-metadata", &found);
        found
    }

    /// The Protected Resource Metadata: the URL the challenge names, else the
    /// well-known ones; `None` when none is published. Its `resource` must
    /// identify the server.
    async fn protected_resource(
        &self,
        challenge: &BearerChallenge,
    ) -> Result<Option<ProtectedResourceMetadata>> {
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
        if let Some(prm) = &prm
            && !resource_matches(&prm.resource, &self.mcp)
        {
            return Err(unauthorized(format!(
                "server \"{server}\": its protected resource metadata names another resource; not authorizing"
            )));
        }
        Ok(prm)
    }

    /// The first authorization server `prm` names whose metadata is usable.
    async fn authorization_server(&self, prm: ProtectedResourceMetadata) -> Result<Discovered> {
        let mut last = None;
        for issuer in &prm.authorization_servers {
            match self.fetch_metadata(issuer).await {
                Ok(metadata) => {
                    return Ok(Discovered {
                        resource: prm.resource.clone(),
                        metadata,
                        prm: Some(prm),
                    });
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            unauthorized(format!(
                "server \"{}\": no authorization server metadata found",
                self.server
            ))
        }))
    }

    pub(super) async fn fetch_metadata(&self, issuer: &str) -> Result<AuthorizationServerMetadata> {
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
    pub(super) async fn discover_legacy(&self) -> Result<Discovered> {
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

    pub(super) fn endpoint<'a>(
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
    pub(super) fn registration_for(
        &self,
        stored: &StoredAuth,
        issuer: &str,
        client_id: &str,
    ) -> Option<Registration> {
        if let Some(r) = stored.registration_for_client(issuer, client_id) {
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
}
