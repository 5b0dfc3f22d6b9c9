//! How the client authenticates for tokens it already holds, at the token
//! endpoint (refresh) and at the revocation endpoint (logout): as the configured
//! client the tokens were issued to (client credentials, enterprise-managed
//! authorization, workload identity), else as the registration they were issued
//! to.

use secrecy::SecretString;

use crate::auth::ClientCredentials;
use crate::auth::client_credentials::{ASSERTION_TYPE, assertion};
use crate::auth::store::{StoredAuth, StoredTokens};
use crate::auth::token::{AuthMethod, choose_auth_method};
use crate::error::Result;

use super::Chain;

/// The client's secret, its authentication method, and extra form parameters (a
/// client assertion).
pub(super) struct ClientAuth {
    pub(super) secret: Option<SecretString>,
    pub(super) method: AuthMethod,
    pub(super) extra: Vec<(&'static str, SecretString)>,
}

impl ClientAuth {
    /// A public client: the client id alone.
    pub(super) fn public() -> Self {
        ClientAuth {
            secret: None,
            method: AuthMethod::None,
            extra: Vec::new(),
        }
    }

    fn secret(secret: Option<SecretString>, method: AuthMethod) -> Self {
        ClientAuth {
            secret,
            method,
            extra: Vec::new(),
        }
    }

    /// The secret in the form the token endpoint's client takes.
    pub(super) fn oauth2_secret(&self) -> Option<oauth2::ClientSecret> {
        use secrecy::ExposeSecret;
        self.secret
            .as_ref()
            .map(|s| oauth2::ClientSecret::new(s.expose_secret().to_owned()))
    }
}

impl Chain {
    /// The authentication for `held`, the methods the authorization server
    /// lists (`supported`, when known) taken into account; `None` when neither a
    /// configured client nor a known registration issued them.
    pub(super) fn client_auth(
        &self,
        stored: &StoredAuth,
        held: &StoredTokens,
        supported: Option<&[String]>,
    ) -> Result<Option<ClientAuth>> {
        if let Some(creds) = &self.config.client_credentials
            && creds.client_id() == held.client_id
        {
            return Ok(Some(match creds {
                ClientCredentials::Secret { client_secret, .. } => ClientAuth::secret(
                    Some(client_secret.clone()),
                    choose_auth_method(None, supported, true),
                ),
                ClientCredentials::PrivateKeyJwt {
                    client_id,
                    private_key_pem,
                } => ClientAuth {
                    secret: None,
                    method: AuthMethod::None,
                    extra: vec![
                        ("client_assertion_type", SecretString::from(ASSERTION_TYPE)),
                        (
                            "client_assertion",
                            assertion(client_id, private_key_pem, &held.issuer)?,
                        ),
                    ],
                },
            }));
        }
        // Enterprise-managed authorization: the client's own credentials.
        if let Some(grant) = &self.config.enterprise_managed
            && grant.client_id == held.client_id
        {
            let secret = grant.client_secret.clone();
            let method = choose_auth_method(None, supported, secret.is_some());
            return Ok(Some(ClientAuth::secret(secret, method)));
        }
        // Workload identity: a public client.
        if let Some(workload) = &self.config.workload_identity
            && workload.client_id() == held.client_id
        {
            return Ok(Some(ClientAuth::public()));
        }
        Ok(self
            .registration_for(stored, &held.issuer, &held.client_id)
            .map(|reg| {
                let method = choose_auth_method(
                    reg.token_endpoint_auth_method.as_deref(),
                    supported,
                    reg.client_secret.is_some(),
                );
                ClientAuth::secret(reg.client_secret, method)
            }))
    }
}
