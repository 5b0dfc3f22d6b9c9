//! Logout: the stored tokens revoked at the authorization server (RFC 7009,
//! `auth::revocation`), then forgotten, whatever the answer.

use crate::auth::http::AuthHttp;
use crate::auth::revocation::{Hint, Logout, RevocationEndpoint, revoke};
use crate::auth::store::{StoredAuth, StoredTokens};
use crate::error::{ErrorKind, Result};

use super::Chain;
use super::client_auth::ClientAuth;

impl Chain {
    /// Revokes the stored tokens, then forgets them and their issuer's DPoP key
    /// (keeping the registrations and the remembered redirect port), under the
    /// store lock; the current token is dropped first, so a request sent
    /// meanwhile meets a `401`. Fails only when the store does.
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
        stored.remove_dpop_key(&held.issuer);
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
        // A registration no longer known (dropped, or the configuration
        // changed): the client id alone, as a public client.
        let auth = match self.client_auth(stored, held, None) {
            Ok(auth) => auth.unwrap_or_else(ClientAuth::public),
            Err(e) => return Logout::NotRevoked(e),
        };
        let endpoint = RevocationEndpoint {
            server: &self.server,
            url,
            client_id: &held.client_id,
            client_secret: auth.secret.as_ref(),
            method: auth.method,
            extra: auth.extra,
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
}
