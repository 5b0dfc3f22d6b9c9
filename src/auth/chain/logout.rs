//! Logout: the stored tokens revoked at the authorization server (RFC 7009,
//! `auth::revocation`), then forgotten, whatever the answer.

use secrecy::SecretString;

use crate::auth::ClientCredentials;
use crate::auth::client_credentials::{ASSERTION_TYPE, assertion};
use crate::auth::http::AuthHttp;
use crate::auth::revocation::{Hint, Logout, RevocationEndpoint, revoke};
use crate::auth::store::{StoredAuth, StoredTokens};
use crate::auth::token::{AuthMethod, choose_auth_method};
use crate::error::{ErrorKind, Result};

use super::Chain;

/// How the client authenticates at the revocation endpoint: its secret, the
/// method, and extra form parameters (a client assertion).
type ClientAuth = (
    Option<SecretString>,
    AuthMethod,
    Vec<(&'static str, SecretString)>,
);

impl Chain {
    /// Revokes the stored tokens, then forgets them (keeping the registrations
    /// and the remembered redirect port), under the store lock; the current
    /// token is dropped first, so a request sent meanwhile meets a `401`. Fails
    /// only when the store does.
    pub(crate) async fn logout(&self) -> Result<Logout> {
        let mut state = self.state.lock().await;
        self.clear_current();
        state.requested.clear();
        state.granted.clear();
        let http = self.http().await.clone();
        let lock = self.store_lock().await?;
        let mut stored = self.unlocked(|s, k| s.load(k)).await?.unwrap_or_default();
        let Some(held) = stored.tokens.take() else {
            drop(lock);
            state.stored = stored;
            state.loaded = true;
            return Ok(Logout::NothingStored);
        };
        let outcome = self.revoke_all(&http, &stored, &held).await;
        let copy = stored.clone();
        let saved = self.unlocked(move |s, k| s.save(k, &copy)).await;
        drop(lock);
        state.stored = stored;
        state.loaded = true;
        saved?;
        Ok(outcome)
    }

    async fn revoke_all(
        &self,
        http: &AuthHttp,
        stored: &StoredAuth,
        held: &StoredTokens,
    ) -> Logout {
        let Some(url) = held.revocation_endpoint.as_deref() else {
            return Logout::NotOffered;
        };
        let (secret, method, extra) = match self.client_auth(stored, held) {
            Ok(auth) => auth,
            Err(e) => return Logout::NotRevoked(e),
        };
        let endpoint = RevocationEndpoint {
            server: &self.server,
            url,
            client_id: &held.client_id,
            client_secret: secret.as_ref(),
            method,
            extra,
        };
        if let Some(refresh) = &held.tokens.refresh_token
            && let Err(e) = revoke(http, &endpoint, refresh, Hint::Refresh).await
        {
            // An answer from the server: the access token may still be revoked.
            // Anything else (a refusal before sending, no connection, no answer
            // in time) would fail the same way again.
            if e.kind() != ErrorKind::Unauthorized {
                return Logout::NotRevoked(e);
            }
            let _ = revoke(http, &endpoint, &held.tokens.access_token, Hint::Access).await;
            return Logout::NotRevoked(e);
        }
        match revoke(http, &endpoint, &held.tokens.access_token, Hint::Access).await {
            Ok(()) => Logout::Revoked,
            Err(e) => Logout::NotRevoked(e),
        }
    }

    /// The client authentication the token endpoint gets for these tokens when
    /// the chain refreshes them without discovery.
    fn client_auth(&self, stored: &StoredAuth, held: &StoredTokens) -> Result<ClientAuth> {
        if let Some(creds) = &self.config.client_credentials
            && creds.client_id() == held.client_id
        {
            return Ok(match creds {
                ClientCredentials::Secret { client_secret, .. } => (
                    Some(client_secret.clone()),
                    choose_auth_method(None, None, true),
                    Vec::new(),
                ),
                ClientCredentials::PrivateKeyJwt {
                    client_id,
                    private_key_pem,
                } => (
                    None,
                    AuthMethod::None,
                    vec![
                        ("client_assertion_type", SecretString::from(ASSERTION_TYPE)),
                        (
                            "client_assertion",
                            assertion(client_id, private_key_pem, &held.issuer)?,
                        ),
                    ],
                ),
            });
        }
        // Enterprise-managed authorization: the client's own credentials (a
        // workload identity client is public, as below).
        if let Some(grant) = &self.config.enterprise_managed
            && grant.client_id == held.client_id
        {
            let secret = grant.client_secret.clone();
            let method = choose_auth_method(None, None, secret.is_some());
            return Ok((secret, method, Vec::new()));
        }
        // A registration no longer known (dropped, or the configuration changed):
        // the client id alone, as a public client.
        Ok(
            match self.registration_for(stored, &held.issuer, &held.client_id) {
                Some(reg) => {
                    let method = choose_auth_method(
                        reg.token_endpoint_auth_method.as_deref(),
                        None,
                        reg.client_secret.is_some(),
                    );
                    (reg.client_secret, method, Vec::new())
                }
                None => (None, AuthMethod::None, Vec::new()),
            },
        )
    }
}
