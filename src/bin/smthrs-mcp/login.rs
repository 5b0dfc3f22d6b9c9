//! `smthrs-mcp login SERVER` and `logout SERVER`, and the OAuth configuration
//! `tools` and `call` use for an entry with `oauth`.
//!
//! - Tokens live in the user's token file ([`FileStore::default_path`]:
//!   `$XDG_STATE_HOME/smthrs-mcp/tokens.json`, else
//!   `~/.local/state/smthrs-mcp/tokens.json`), keyed by the server's name; never
//!   in the server file. With `oauth.tokenStore: "keyring"` (a build with the
//!   `keyring` feature) they live in the OS keyring instead, one entry per server
//!   (service `smthrs-mcp`), locked through `keyring.lock` beside the token file;
//!   `login`, `logout`, `tools` and `call` all use the store the entry names.
//! - `tools` and `call` install no authorizer: they use stored tokens, refresh
//!   them silently, and when a person must act fail at once with `unauthorized`
//!   and a message naming `smthrs-mcp login SERVER`.
//! - `login` forgets the server's tokens (keeping its registrations), binds the
//!   loopback redirect listener, prints the authorization URL on stderr, and
//!   connects: the server's 401 runs the authorization code flow, and the
//!   handshake completes with the new token, which is then stored. The person has
//!   [`LOGIN_DEADLINE`].
//! - The listener's port (127.0.0.1 only): `oauth.redirectPort` when set (taken:
//!   an error naming the port and the field); else the port remembered in the
//!   token file from the first login, so the redirect URI, and the dynamic
//!   registration made for it, stay the same across logins; else an ephemeral
//!   port, then remembered. A remembered port that is taken is replaced by a new
//!   ephemeral one (remembered instead), with a note on stderr: the new redirect
//!   URI gets a registration of its own, and the login goes on.
//! - `logout` revokes the stored tokens at the authorization server when it named
//!   a revocation endpoint (RFC 7009), then forgets them whatever the answer
//!   (keeping the registrations and the remembered port); a revocation that
//!   failed or was not offered is a note on stderr, never a failure.

use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;
use smthrs_mcp::auth::{
    AssertionSource, EnterpriseManaged, FileStore, Logout, LoopbackAuthorizer, OAuth,
    PreRegisteredClient, StoredAuth, TokenStore, WorkloadIdentity,
};
use smthrs_mcp::config::oauth::TokenOrigin;
use smthrs_mcp::config::{EntryTransport, OAuthEntry, ServerEntry, TokenStoreKind};
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, DiagnosticObserver, Error, ErrorKind};

/// How long `login` waits for the browser's redirect.
pub const LOGIN_DEADLINE: Duration = Duration::from_secs(300);

/// The store `oauth.tokenStore` chooses.
fn store(entry: &OAuthEntry) -> Result<Arc<dyn TokenStore>, Error> {
    let path = FileStore::default_path().ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidConfig,
            "no token file location: set XDG_STATE_HOME or HOME",
        )
    })?;
    match entry.token_store {
        TokenStoreKind::File => Ok(Arc::new(FileStore::new(path))),
        TokenStoreKind::Keyring => keyring_store(path.with_file_name("keyring.lock")),
        _ => Err(Error::new(
            ErrorKind::InvalidConfig,
            "this build does not know the oauth.tokenStore chosen",
        )),
    }
}

#[cfg(feature = "keyring")]
fn keyring_store(lock: std::path::PathBuf) -> Result<Arc<dyn TokenStore>, Error> {
    use smthrs_mcp::auth::KeyringStore;
    use smthrs_mcp::auth::keyring_store::DEFAULT_KEYRING_SERVICE;
    Ok(Arc::new(KeyringStore::native(
        DEFAULT_KEYRING_SERVICE,
        lock,
    )?))
}

/// The server file refuses `"keyring"` in such a build; this is the second line.
#[cfg(not(feature = "keyring"))]
fn keyring_store(_lock: std::path::PathBuf) -> Result<Arc<dyn TokenStore>, Error> {
    Err(Error::new(
        ErrorKind::InvalidConfig,
        "oauth.tokenStore \"keyring\" needs a build with the `keyring` feature",
    ))
}

/// Reads the secret in environment variable `var` (`field` names the setting in
/// the error).
fn env_secret(server: &str, var: &str, field: &str) -> Result<SecretString, Error> {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Ok(SecretString::from(value)),
        _ => Err(Error::new(
            ErrorKind::InvalidConfig,
            format!(
                "server \"{server}\": environment variable {var} ({field}) is unset, empty or not UTF-8"
            ),
        )),
    }
}

/// The assertion source of a server-file token origin.
fn assertion_source(origin: &TokenOrigin, max_token_bytes: Option<usize>) -> AssertionSource {
    let source = match origin {
        TokenOrigin::File(path) => AssertionSource::file(path.clone()),
        TokenOrigin::Env(var) => AssertionSource::env(var.clone()),
    };
    match max_token_bytes {
        Some(max) => source.max_bytes(max),
        None => source,
    }
}

/// The JWT bearer grant of an entry with `oauth.workloadIdentity` or
/// `oauth.enterprise` (both need `clientId`, checked when the file was read);
/// `oauth` as it is for other entries. Reads the secrets' variables now.
fn jwt_bearer_grant(server: &str, entry: &OAuthEntry, oauth: OAuth) -> Result<OAuth, Error> {
    let client_id = entry.client_id.clone().unwrap_or_default();
    if let Some(w) = &entry.workload_identity {
        let source = assertion_source(&w.token, w.max_token_bytes);
        return Ok(oauth.workload_identity(WorkloadIdentity::new(client_id, source)));
    }
    let Some(e) = &entry.enterprise else {
        return Ok(oauth);
    };
    let mut grant = EnterpriseManaged::new(
        e.idp_token_endpoint.clone(),
        e.idp_client_id.clone(),
        assertion_source(&e.id_token, e.max_token_bytes),
        client_id,
    );
    if let Some(var) = &e.idp_client_secret_env {
        grant = grant.idp_client_secret(env_secret(
            server,
            var,
            "oauth.enterprise.idpClientSecretEnv",
        )?);
    }
    if let Some(var) = &entry.client_secret_env {
        grant = grant.client_secret(env_secret(server, var, "oauth.clientSecretEnv")?);
    }
    Ok(oauth.enterprise_managed(grant))
}

/// The OAuth configuration of an entry, without an authorizer. Reads
/// `oauth.clientSecretEnv` now (unset or empty: an error naming the variable).
pub fn oauth(server: &str, entry: &OAuthEntry) -> Result<OAuth, Error> {
    let mut oauth = OAuth::new()
        .store(store(entry)?)
        .store_key(server)
        .scopes(entry.scopes.clone())
        .legacy_discovery(entry.legacy_discovery)
        .dpop(entry.dpop)
        .login_hint(format!("run `smthrs-mcp login {server}`"));
    if let Some(url) = &entry.client_metadata_url {
        oauth = oauth.client_metadata_url(url.clone());
    }
    if entry.workload_identity.is_some() || entry.enterprise.is_some() {
        return jwt_bearer_grant(server, entry, oauth);
    }
    if let Some(client_id) = &entry.client_id {
        let client_secret = match &entry.client_secret_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(value) if !value.is_empty() => Some(SecretString::from(value)),
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidConfig,
                        format!(
                            "server \"{server}\": environment variable {var} (oauth.clientSecretEnv) is unset, empty or not UTF-8"
                        ),
                    ));
                }
            },
        };
        oauth = oauth.pre_registered(PreRegisteredClient {
            client_id: client_id.clone(),
            client_secret,
            issuer: entry.issuer.clone(),
        });
    }
    Ok(oauth)
}

/// The entry named `server`, if it is an HTTP entry with `oauth`.
pub fn oauth_entry<'a>(
    entries: &'a [ServerEntry],
    server: &str,
) -> Result<(&'a ServerEntry, &'a OAuthEntry), String> {
    let entry = entries
        .iter()
        .find(|e| e.server == server)
        .ok_or_else(|| format!("no server named {server:?} in the server file"))?;
    match &entry.transport {
        EntryTransport::Http(http) => match &http.oauth {
            Some(o) => Ok((entry, o)),
            None => Err(format!(
                "server {server:?} does not use OAuth (its entry has no \"oauth\" object)"
            )),
        },
        EntryTransport::Stdio(_) => Err(format!(
            "server {server:?} is a stdio server; only HTTP servers log in"
        )),
    }
}

/// `login SERVER`. With `observer` (`--diagnostics`), the chain's steps are
/// reported to it.
pub async fn login(
    entry: &ServerEntry,
    oauth_entry: &OAuthEntry,
    observer: Option<Arc<dyn DiagnosticObserver>>,
) -> Result<(), Error> {
    let server = entry.server.as_str();
    let EntryTransport::Http(http) = &entry.transport else {
        unreachable!("oauth_entry checked the kind")
    };
    if oauth_entry.workload_identity.is_some() || oauth_entry.enterprise.is_some() {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            format!(
                "server \"{server}\" authenticates with oauth.workloadIdentity or oauth.enterprise: no login is needed, `tools` and `call` obtain tokens themselves"
            ),
        ));
    }
    let store = store(oauth_entry)?;
    // A fresh authorization: forget the tokens, keep the registrations.
    let remembered = update(&store, server, |stored| {
        stored.tokens = None;
        stored.redirect_port
    })
    .await?
    .flatten();
    let authorizer = bind(server, oauth_entry.redirect_port, remembered).await?;
    if oauth_entry.redirect_port.is_none() && authorizer.port() != remembered {
        let port = authorizer.port();
        update_or_create(&store, server, move |stored| stored.redirect_port = port).await?;
    }
    let authorizer = authorizer.deadline(LOGIN_DEADLINE);
    let oauth = oauth(server, oauth_entry)?.authorizer(Arc::new(authorizer));
    let transport = HttpTransport::builder(server, http.url.as_str())
        .use_env_proxy(true)
        .oauth(oauth)
        .build()?;
    let mut limits = entry.limits;
    // The handshake waits for the person.
    limits.handshake_timeout_ms = limits
        .handshake_timeout_ms
        .max(LOGIN_DEADLINE.as_millis() as u64 + 60_000);
    let mut builder = Client::builder(server).limits(limits);
    if let Some(observer) = observer {
        builder = builder.diagnostics(observer);
    }
    let client = builder.connect(transport).await?;
    client.close().await;
    let key = server.to_owned();
    let stored = tokio::task::spawn_blocking(move || -> Result<bool, Error> {
        let _lock = store.lock(&key)?;
        Ok(store.load(&key)?.is_some_and(|s| s.tokens.is_some()))
    })
    .await
    .map_err(|_| Error::new(ErrorKind::InvalidConfig, "the token store task failed"))??;
    if !stored {
        return Err(Error::new(
            ErrorKind::Unauthorized,
            format!("server \"{server}\" did not ask for authorization; nothing was stored"),
        ));
    }
    Ok(())
}

/// The login listener: the configured port (taken: an error naming it and
/// `oauth.redirectPort`), else the remembered one when free (taken: a new
/// ephemeral port, with a note), else an ephemeral port.
async fn bind(
    server: &str,
    configured: Option<u16>,
    remembered: Option<u16>,
) -> Result<LoopbackAuthorizer, Error> {
    let named = |e: Error| {
        let message = format!("server \"{server}\": {}", e.message());
        e.with_message(message)
    };
    if let Some(port) = configured {
        return LoopbackAuthorizer::bind(Some(port)).await.map_err(|e| {
            let message = format!(
                "server \"{server}\": {}; free port {port} or set another in oauth.redirectPort",
                e.message()
            );
            e.with_message(message)
        });
    }
    let Some(port) = remembered else {
        return LoopbackAuthorizer::bind(None).await.map_err(named);
    };
    let authorizer = LoopbackAuthorizer::bind_preferring(port)
        .await
        .map_err(named)?;
    if let Some(now) = authorizer.port().filter(|now| *now != port) {
        eprintln!(
            "smthrs-mcp: note: server \"{server}\": port {port}, remembered from an earlier login, is taken; listening on port {now} instead (remembered from now on; a new redirect URI registers the client again; oauth.redirectPort fixes the port)"
        );
    }
    Ok(authorizer)
}

/// Runs `change` on what is stored for `server`, under the store lock, and
/// saves it; returns what `change` returned (`None`, and nothing saved, when
/// nothing was stored).
async fn update<T: Send + 'static>(
    store: &Arc<dyn TokenStore>,
    server: &str,
    change: impl FnOnce(&mut StoredAuth) -> T + Send + 'static,
) -> Result<Option<T>, Error> {
    let store = store.clone();
    let key = server.to_owned();
    tokio::task::spawn_blocking(move || -> Result<Option<T>, Error> {
        let _lock = store.lock(&key)?;
        let Some(mut stored) = store.load(&key)? else {
            return Ok(None);
        };
        let out = change(&mut stored);
        store.save(&key, &stored)?;
        Ok(Some(out))
    })
    .await
    .map_err(|_| Error::new(ErrorKind::InvalidConfig, "the token store task failed"))?
}

/// As [`update`], starting from an empty entry when nothing was stored.
async fn update_or_create(
    store: &Arc<dyn TokenStore>,
    server: &str,
    change: impl FnOnce(&mut StoredAuth) + Send + 'static,
) -> Result<(), Error> {
    let store = store.clone();
    let key = server.to_owned();
    tokio::task::spawn_blocking(move || -> Result<(), Error> {
        let _lock = store.lock(&key)?;
        let mut stored = store.load(&key)?.unwrap_or_default();
        change(&mut stored);
        store.save(&key, &stored)
    })
    .await
    .map_err(|_| Error::new(ErrorKind::InvalidConfig, "the token store task failed"))?
}

/// `logout SERVER`: revokes the stored tokens where the authorization server
/// offers it, then forgets them (keeping the registrations and the remembered
/// redirect port). Returns a note for stderr when the tokens were forgotten
/// without being revoked.
pub async fn logout(
    entry: &ServerEntry,
    oauth_entry: &OAuthEntry,
) -> Result<Option<String>, Error> {
    let server = entry.server.as_str();
    let EntryTransport::Http(http) = &entry.transport else {
        unreachable!("oauth_entry checked the kind")
    };
    // (The configuration was validated at startup, like every entry's.)
    let transport = HttpTransport::builder(server, http.url.as_str())
        .use_env_proxy(true)
        .oauth(oauth(server, oauth_entry)?)
        .build()?;
    let outcome = transport.logout().await?;
    Ok(match outcome {
        Logout::NotOffered => Some(format!(
            "server \"{server}\": the authorization server offers no token revocation; the tokens were forgotten here only"
        )),
        Logout::NotRevoked(e) => Some(format!(
            "the tokens were forgotten here but not revoked ({}: {})",
            e.kind(),
            e.message()
        )),
        _ => None,
    })
}
