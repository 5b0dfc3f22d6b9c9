//! Where the chain keeps what outlives one connection: dynamic registrations (one
//! per authorization server issuer and redirect URI, at most
//! [`MAX_REGISTRATIONS`] per key), the tokens (bound to one resource and one
//! issuer, with the endpoints that refresh and revoke them), and the loopback
//! redirect port remembered from the first login.
//!
//! A [`TokenStore`] is keyed by a string the host chooses (the CLI uses the server
//! name). Its methods block; the chain calls them on tokio's blocking pool. The
//! chain holds [`TokenStore::lock`] around every read-modify-write, so a store
//! shared by several clients or processes never loses an update: in particular a
//! rotating refresh token is refreshed by one holder of the lock, and the others
//! re-read the store and use the token it stored (single-flight refresh).
//!
//! Verifiers, `state` and authorization codes are never stored: they live in
//! memory for one flow.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value, json};

use super::registration::{Registration, RegistrationKind};
use super::token::TokenSet;
use crate::error::Result;

/// Tokens as stored: the token set and what it is bound to. `Debug` shows no
/// token, and the endpoints without userinfo, query or fragment.
#[derive(Clone)]
pub struct StoredTokens {
    /// The authorization server that issued them.
    pub issuer: String,
    /// The resource (PRM `resource`) they were issued for.
    pub resource: String,
    /// The token endpoint, for refreshing without discovery.
    pub token_endpoint: String,
    /// The client id they were issued to.
    pub client_id: String,
    /// The tokens.
    pub tokens: TokenSet,
    /// The authorization server's revocation endpoint (RFC 7009), when its
    /// metadata named one, for revoking at logout without discovery.
    pub revocation_endpoint: Option<String>,
}

impl fmt::Debug for StoredTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredTokens")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field(
                "token_endpoint",
                &crate::http::url_for_debug(&self.token_endpoint),
            )
            .field("client_id", &self.client_id)
            .field("tokens", &self.tokens)
            .field(
                "revocation_endpoint",
                &self
                    .revocation_endpoint
                    .as_deref()
                    .map(crate::http::url_for_debug),
            )
            .finish_non_exhaustive()
    }
}

/// The most dynamic registrations kept under one key (one per authorization
/// server and redirect URI): a new one past the bound drops the oldest, never the
/// one the stored tokens were issued to.
pub const MAX_REGISTRATIONS: usize = 8;

/// The most DPoP keys kept per key, one per authorization server: past it the
/// oldest goes, except the key of the stored tokens' issuer (a server that names
/// a new authorization server on every connect cannot grow the entry).
pub const MAX_DPOP_KEYS: usize = 8;

/// Everything stored under one key. `Debug` shows no secret.
#[derive(Clone, Debug, Default)]
pub struct StoredAuth {
    /// Dynamic registrations, one per issuer and redirect URI, oldest first.
    pub registrations: Vec<Registration>,
    /// The current tokens, if any.
    pub tokens: Option<StoredTokens>,
    /// The loopback redirect port chosen at the first login without a configured
    /// one, bound again by later logins so that the redirect URI, and with it the
    /// registration, stays the same (the CLI's default for `oauth.redirectPort`).
    pub redirect_port: Option<u16>,
    /// The DPoP keys, one per issuer ([`crate::auth::dpop`]).
    pub dpop_keys: Vec<StoredDpopKey>,
}

/// A DPoP private key as stored. `Debug` shows the issuer only.
#[derive(Clone, Debug)]
pub struct StoredDpopKey {
    /// The authorization server the key proves possession to.
    pub issuer: String,
    /// The P-256 private key: PKCS#8 DER, base64url without padding.
    pub pkcs8: SecretString,
}

/// Drops the oldest of `items` (oldest first) until at most `max` are left,
/// never one `in_use` keeps.
fn drop_oldest_past<T>(items: &mut Vec<T>, max: usize, in_use: impl Fn(&T) -> bool) {
    while items.len() > max {
        match items.iter().position(|item| !in_use(item)) {
            Some(oldest) => {
                items.remove(oldest);
            }
            None => break,
        }
    }
}

impl StoredAuth {
    /// The newest dynamic registration for `issuer`.
    pub fn registration(&self, issuer: &str) -> Option<&Registration> {
        self.registrations.iter().rev().find(|r| r.issuer == issuer)
    }

    /// The dynamic registration for `issuer` that registered `redirect_uri`.
    pub fn registration_for_redirect(
        &self,
        issuer: &str,
        redirect_uri: &str,
    ) -> Option<&Registration> {
        self.registrations
            .iter()
            .rev()
            .find(|r| r.issuer == issuer && r.redirect_uris.iter().any(|u| u == redirect_uri))
    }

    /// The dynamic registration at `issuer` whose client id is `client_id` (the
    /// one tokens were issued to).
    pub fn registration_for_client(&self, issuer: &str, client_id: &str) -> Option<&Registration> {
        self.registrations
            .iter()
            .rev()
            .find(|r| r.issuer == issuer && r.client_id == client_id)
    }

    /// Keeps `registration` as the newest, replacing the one for the same issuer
    /// and redirect URIs. Past [`MAX_REGISTRATIONS`] the oldest is dropped, except
    /// the one the stored tokens were issued to.
    pub fn set_registration(&mut self, registration: Registration) {
        self.registrations.retain(|r| {
            r.issuer != registration.issuer || r.redirect_uris != registration.redirect_uris
        });
        self.registrations.push(registration);
        let tokens = self.tokens.as_ref();
        drop_oldest_past(&mut self.registrations, MAX_REGISTRATIONS, |r| {
            tokens.is_some_and(|t| t.issuer == r.issuer && t.client_id == r.client_id)
        });
    }

    /// The DPoP key for `issuer`.
    pub fn dpop_key(&self, issuer: &str) -> Option<&StoredDpopKey> {
        self.dpop_keys.iter().find(|k| k.issuer == issuer)
    }

    /// Keeps `key` as the newest, replacing the one for its issuer. Past
    /// [`MAX_DPOP_KEYS`] the oldest is dropped, except the one for the stored
    /// tokens' issuer.
    pub fn set_dpop_key(&mut self, key: StoredDpopKey) {
        self.dpop_keys.retain(|k| k.issuer != key.issuer);
        self.dpop_keys.push(key);
        let tokens = self.tokens.as_ref();
        drop_oldest_past(&mut self.dpop_keys, MAX_DPOP_KEYS, |k| {
            tokens.is_some_and(|t| t.issuer == k.issuer)
        });
    }

    /// Forgets the DPoP key for `issuer` (at logout: the next login proves
    /// possession of a new one).
    pub fn remove_dpop_key(&mut self, issuer: &str) {
        self.dpop_keys.retain(|k| k.issuer != issuer);
    }

    /// Encodes for a file (secrets in clear: the file is owner-only).
    pub(crate) fn to_json(&self) -> Value {
        let secret = |s: &Option<SecretString>| s.as_ref().map(|s| s.expose_secret().to_owned());
        json!({
            "registrations": self.registrations.iter().map(|r| json!({
                "issuer": r.issuer,
                "clientId": r.client_id,
                "clientSecret": secret(&r.client_secret),
                "tokenEndpointAuthMethod": r.token_endpoint_auth_method,
                "redirectUris": r.redirect_uris,
            })).collect::<Vec<_>>(),
            "tokens": self.tokens.as_ref().map(|t| json!({
                "issuer": t.issuer,
                "resource": t.resource,
                "tokenEndpoint": t.token_endpoint,
                "clientId": t.client_id,
                "accessToken": t.tokens.access_token.expose_secret(),
                "refreshToken": secret(&t.tokens.refresh_token),
                "expiresAt": t.tokens.expires_at,
                "obtainedAt": t.tokens.obtained_at,
                "scopes": t.tokens.scopes,
                "revocationEndpoint": t.revocation_endpoint,
                "tokenType": if t.tokens.dpop_bound { "DPoP" } else { "Bearer" },
            })),
            "redirectPort": self.redirect_port,
            "dpopKeys": self.dpop_keys.iter().map(|k| json!({
                "issuer": k.issuer,
                "pkcs8": k.pkcs8.expose_secret(),
            })).collect::<Vec<_>>(),
        })
    }

    /// Decodes what [`to_json`](Self::to_json) wrote; `None` when malformed.
    pub(crate) fn from_json(value: &Value) -> Option<Self> {
        let s =
            |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
        let secret = |m: &Map<String, Value>, k: &str| s(m, k).map(SecretString::from);
        let strings = |m: &Map<String, Value>, k: &str| -> Vec<String> {
            m.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let obj = value.as_object()?;
        let mut registrations = Vec::new();
        for r in obj.get("registrations")?.as_array()? {
            let r = r.as_object()?;
            registrations.push(Registration {
                issuer: s(r, "issuer")?,
                client_id: s(r, "clientId")?,
                client_secret: secret(r, "clientSecret"),
                token_endpoint_auth_method: s(r, "tokenEndpointAuthMethod"),
                redirect_uris: strings(r, "redirectUris"),
                kind: RegistrationKind::Dynamic,
            });
        }
        let tokens = match obj.get("tokens") {
            None | Some(Value::Null) => None,
            Some(Value::Object(t)) => Some(StoredTokens {
                issuer: s(t, "issuer")?,
                resource: s(t, "resource")?,
                token_endpoint: s(t, "tokenEndpoint")?,
                client_id: s(t, "clientId")?,
                tokens: TokenSet {
                    access_token: secret(t, "accessToken")?,
                    refresh_token: secret(t, "refreshToken"),
                    expires_at: t.get("expiresAt").and_then(Value::as_u64),
                    // Absent in files written before it was recorded: the
                    // lifetime is unknown and the full margin applies.
                    obtained_at: t.get("obtainedAt").and_then(Value::as_u64),
                    scopes: strings(t, "scopes"),
                    dpop_bound: s(t, "tokenType").as_deref() == Some("DPoP"),
                },
                revocation_endpoint: s(t, "revocationEndpoint"),
            }),
            Some(_) => return None,
        };
        let redirect_port = match obj.get("redirectPort") {
            None | Some(Value::Null) => None,
            Some(port) => Some(
                port.as_u64()
                    .and_then(|p| u16::try_from(p).ok())
                    .filter(|p| *p != 0)?,
            ),
        };
        // Absent in files written before DPoP.
        let mut dpop_keys = Vec::new();
        if let Some(keys) = obj.get("dpopKeys") {
            for k in keys.as_array()? {
                let k = k.as_object()?;
                dpop_keys.push(StoredDpopKey {
                    issuer: s(k, "issuer")?,
                    pkcs8: secret(k, "pkcs8")?,
                });
            }
        }
        Some(StoredAuth {
            registrations,
            tokens,
            redirect_port,
            dpop_keys,
        })
    }
}

/// Held while a store key is locked; dropping it releases the lock.
pub struct StoreLock(#[allow(dead_code)] Box<dyn Send>);

impl StoreLock {
    /// Wraps whatever releases the lock when dropped.
    pub fn new(guard: impl Send + 'static) -> Self {
        StoreLock(Box::new(guard))
    }
}

impl fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("StoreLock")
    }
}

/// Persistent OAuth state. See the [module docs](self).
pub trait TokenStore: Send + Sync + 'static {
    /// What is stored under `key`, if anything.
    fn load(&self, key: &str) -> Result<Option<StoredAuth>>;
    /// Replaces what is stored under `key`. Callers hold [`lock`](Self::lock).
    fn save(&self, key: &str, value: &StoredAuth) -> Result<()>;
    /// Forgets `key`; `true` when something was stored. Callers hold the lock.
    fn remove(&self, key: &str) -> Result<bool>;
    /// Locks `key` exclusively (across processes, for stores that are shared by
    /// processes), blocking until it is free.
    fn lock(&self, key: &str) -> Result<StoreLock>;
}

/// A store in memory: shared by the clients of one process that are given the
/// same `Arc`, forgotten at exit.
#[derive(Clone, Default)]
pub struct MemoryStore {
    entries: Arc<Mutex<HashMap<String, StoredAuth>>>,
    locked: Arc<(Mutex<HashSet<String>>, Condvar)>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("MemoryStore").field("entries", &n).finish()
    }
}

struct MemoryLock {
    key: String,
    locked: Arc<(Mutex<HashSet<String>>, Condvar)>,
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        let (set, cv) = &*self.locked;
        set.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
        cv.notify_all();
    }
}

impl TokenStore for MemoryStore {
    fn load(&self, key: &str) -> Result<Option<StoredAuth>> {
        Ok(self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned())
    }

    fn save(&self, key: &str, value: &StoredAuth) -> Result<()> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key.to_owned(), value.clone());
        Ok(())
    }

    fn remove(&self, key: &str) -> Result<bool> {
        Ok(self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key)
            .is_some())
    }

    fn lock(&self, key: &str) -> Result<StoreLock> {
        let (set, cv) = &*self.locked;
        let mut held = set.lock().unwrap_or_else(PoisonError::into_inner);
        while held.contains(key) {
            held = cv.wait(held).unwrap_or_else(PoisonError::into_inner);
        }
        held.insert(key.to_owned());
        Ok(StoreLock::new(MemoryLock {
            key: key.to_owned(),
            locked: self.locked.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> StoredAuth {
        StoredAuth {
            registrations: vec![Registration {
                issuer: "http://as".into(),
                client_id: "id".into(),
                client_secret: Some(SecretString::from("client-secret-x")),
                token_endpoint_auth_method: Some("client_secret_basic".into()),
                redirect_uris: vec!["http://127.0.0.1:1/callback".into()],
                kind: RegistrationKind::Dynamic,
            }],
            tokens: Some(StoredTokens {
                issuer: "http://as".into(),
                resource: "http://r".into(),
                token_endpoint: "http://as/token".into(),
                client_id: "id".into(),
                tokens: TokenSet {
                    access_token: SecretString::from("access-x"),
                    refresh_token: Some(SecretString::from("refresh-x")),
                    expires_at: Some(5),
                    obtained_at: Some(2),
                    scopes: vec!["a".into()],
                    dpop_bound: true,
                },
                revocation_endpoint: Some("http://as/revoke".into()),
            }),
            redirect_port: Some(8765),
            dpop_keys: vec![StoredDpopKey {
                issuer: "http://as".into(),
                pkcs8: SecretString::from("dpop-key-x"),
            }],
        }
    }

    #[test]
    fn json_round_trip_and_debug_hides_secrets() {
        let s = sample();
        let back = StoredAuth::from_json(&s.to_json()).unwrap();
        let t = back.tokens.as_ref().unwrap();
        assert_eq!(t.tokens.access_token.expose_secret(), "access-x");
        assert_eq!(
            t.tokens.refresh_token.as_ref().unwrap().expose_secret(),
            "refresh-x"
        );
        assert_eq!(
            back.registration("http://as")
                .unwrap()
                .client_secret
                .as_ref()
                .unwrap()
                .expose_secret(),
            "client-secret-x"
        );
        assert_eq!(t.revocation_endpoint.as_deref(), Some("http://as/revoke"));
        assert_eq!(back.redirect_port, Some(8765));
        // Written before these fields existed: absent, not malformed.
        let mut old = s.to_json();
        old.as_object_mut().unwrap().remove("redirectPort");
        old["tokens"]
            .as_object_mut()
            .unwrap()
            .remove("revocationEndpoint");
        let old = StoredAuth::from_json(&old).unwrap();
        assert!(old.redirect_port.is_none());
        assert!(old.tokens.unwrap().revocation_endpoint.is_none());
        for bad in [json!(0), json!(65536), json!("8765"), json!(-1)] {
            let mut v = s.to_json();
            v["redirectPort"] = bad.clone();
            assert!(StoredAuth::from_json(&v).is_none(), "{bad}");
        }
        let mut queried = back.clone();
        if let Some(t) = queried.tokens.as_mut() {
            t.token_endpoint = "https://u:pw-x@as/token?k=query-x".into();
            t.revocation_endpoint = Some("https://as/revoke?k=query-x#frag-x".into());
        }
        let debug = format!("{queried:?}");
        assert!(debug.contains("\"https://as/revoke\""), "{debug}");
        for secret in ["query-x", "pw-x", "frag-x"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        assert!(t.tokens.dpop_bound);
        assert_eq!(
            back.dpop_key("http://as").unwrap().pkcs8.expose_secret(),
            "dpop-key-x"
        );
        // A file written before DPoP: no keys, Bearer tokens.
        let mut old = s.to_json();
        old.as_object_mut().unwrap().remove("dpopKeys");
        old["tokens"].as_object_mut().unwrap().remove("tokenType");
        let old = StoredAuth::from_json(&old).unwrap();
        assert!(old.dpop_keys.is_empty() && !old.tokens.unwrap().tokens.dpop_bound);
        let debug = format!("{back:?}");
        for secret in ["access-x", "refresh-x", "client-secret-x", "dpop-key-x"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        assert!(StoredAuth::from_json(&json!({"tokens": 3})).is_none());
        assert_eq!(t.tokens.obtained_at, Some(2));
    }

    #[test]
    fn a_file_written_before_obtained_at_loads_with_an_unknown_lifetime() {
        // What a store wrote before `obtainedAt` existed, byte for byte.
        let old = json!({
            "registrations": [],
            "tokens": {
                "issuer": "http://as", "resource": "http://r", "tokenEndpoint": "http://as/token",
                "clientId": "id", "accessToken": "access-x", "refreshToken": "refresh-x",
                "expiresAt": 1000, "scopes": ["a"]
            }
        });
        let back = StoredAuth::from_json(&old).unwrap();
        let t = back.tokens.unwrap().tokens;
        assert_eq!((t.expires_at, t.obtained_at), (Some(1000), None));
        // Unknown lifetime: the full 30 s margin, as before.
        assert!(t.needs_refresh(970));
        assert!(!t.needs_refresh(969));
        // A null or a non-number is unknown too, not a malformed file.
        for odd in [json!(null), json!("yesterday")] {
            let mut v = old.clone();
            v["tokens"]["obtainedAt"] = odd;
            let t = StoredAuth::from_json(&v).unwrap().tokens.unwrap().tokens;
            assert_eq!(t.obtained_at, None);
        }
    }

    #[test]
    fn memory_store_locks_per_key() {
        let store = MemoryStore::new();
        store.save("k", &sample()).unwrap();
        assert!(store.load("k").unwrap().is_some());
        let held = store.lock("k").unwrap();
        let other = store.lock("other").unwrap();
        let store2 = store.clone();
        let waiter = std::thread::spawn(move || {
            let _g = store2.lock("k").unwrap();
            store2.remove("k").unwrap()
        });
        drop(other);
        drop(held);
        assert!(waiter.join().unwrap());
        assert!(store.load("k").unwrap().is_none());
    }

    fn dynamic(issuer: &str, client_id: &str, port: u16) -> Registration {
        Registration {
            issuer: issuer.into(),
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: Some("none".into()),
            redirect_uris: vec![format!("http://127.0.0.1:{port}/callback")],
            kind: RegistrationKind::Dynamic,
        }
    }

    #[test]
    fn one_registration_per_issuer_and_redirect_uri() {
        let mut stored = StoredAuth::default();
        stored.set_registration(dynamic("http://as", "a1", 1));
        stored.set_registration(dynamic("http://as", "a2", 2));
        stored.set_registration(dynamic("http://other", "o1", 1));
        // Another redirect URI at the same issuer is another registration.
        assert_eq!(stored.registrations.len(), 3);
        let uri = |p: u16| format!("http://127.0.0.1:{p}/callback");
        let found = |s: &StoredAuth, issuer: &str, p: u16| {
            s.registration_for_redirect(issuer, &uri(p))
                .map(|r| r.client_id.clone())
        };
        assert_eq!(found(&stored, "http://as", 1).as_deref(), Some("a1"));
        assert_eq!(found(&stored, "http://as", 2).as_deref(), Some("a2"));
        assert_eq!(found(&stored, "http://other", 1).as_deref(), Some("o1"));
        assert_eq!(found(&stored, "http://other", 2), None);
        assert_eq!(stored.registration("http://as").unwrap().client_id, "a2");
        assert_eq!(
            stored
                .registration_for_client("http://as", "a1")
                .unwrap()
                .redirect_uris,
            [uri(1)]
        );
        assert!(
            stored
                .registration_for_client("http://other", "a1")
                .is_none()
        );
        // The same issuer and redirect URI again: replaced, and now the newest.
        stored.set_registration(dynamic("http://as", "a1b", 1));
        assert_eq!(stored.registrations.len(), 3);
        assert_eq!(found(&stored, "http://as", 1).as_deref(), Some("a1b"));
        assert_eq!(stored.registrations.last().unwrap().client_id, "a1b");
        // Kept through the file.
        let back = StoredAuth::from_json(&stored.to_json()).unwrap();
        assert_eq!(found(&back, "http://as", 2).as_deref(), Some("a2"));
        assert_eq!(found(&back, "http://as", 1).as_deref(), Some("a1b"));
    }

    #[test]
    fn the_registration_bound_drops_the_oldest_but_never_the_tokens_one() {
        let mut stored = sample();
        // The tokens were issued to "id", registered first (the oldest).
        assert_eq!(stored.registrations[0].client_id, "id");
        for port in 10..10 + MAX_REGISTRATIONS as u16 {
            stored.set_registration(dynamic("http://as", &format!("c{port}"), port));
        }
        assert_eq!(stored.registrations.len(), MAX_REGISTRATIONS);
        assert!(stored.registration_for_client("http://as", "id").is_some());
        // The oldest one the tokens do not use went first.
        assert!(stored.registration_for_client("http://as", "c10").is_none());
        assert!(stored.registration_for_client("http://as", "c11").is_some());
        // Without tokens, the oldest goes.
        stored.tokens = None;
        stored.set_registration(dynamic("http://as", "last", 99));
        assert_eq!(stored.registrations.len(), MAX_REGISTRATIONS);
        assert!(stored.registration_for_client("http://as", "id").is_none());
        assert_eq!(stored.registrations.last().unwrap().client_id, "last");
    }

    #[test]
    fn the_dpop_key_bound_drops_the_oldest_but_never_the_tokens_issuers() {
        let key = |issuer: &str| StoredDpopKey {
            issuer: issuer.to_owned(),
            pkcs8: SecretString::from(format!("key-of-{issuer}")),
        };
        let mut stored = sample();
        let issuer = stored.tokens.as_ref().unwrap().issuer.clone();
        stored.set_dpop_key(key(&issuer));
        for n in 0..MAX_DPOP_KEYS + 3 {
            stored.set_dpop_key(key(&format!("http://as{n}")));
        }
        assert_eq!(stored.dpop_keys.len(), MAX_DPOP_KEYS);
        // The tokens' issuer's key stays, though the oldest.
        assert!(stored.dpop_key(&issuer).is_some());
        assert!(stored.dpop_key("http://as0").is_none());
        assert!(
            stored
                .dpop_key(&format!("http://as{}", MAX_DPOP_KEYS + 2))
                .is_some()
        );
        // Replacing a key keeps one per issuer.
        stored.set_dpop_key(key(&issuer));
        assert_eq!(stored.dpop_keys.len(), MAX_DPOP_KEYS);
        assert_eq!(stored.dpop_keys.last().unwrap().issuer, issuer);
        // Without tokens the oldest goes; logout forgets an issuer's key.
        stored.tokens = None;
        stored.set_dpop_key(key("http://last"));
        assert_eq!(stored.dpop_keys.len(), MAX_DPOP_KEYS);
        stored.remove_dpop_key(&issuer);
        assert!(stored.dpop_key(&issuer).is_none());
        assert_eq!(stored.dpop_keys.len(), MAX_DPOP_KEYS - 1);
    }
}
