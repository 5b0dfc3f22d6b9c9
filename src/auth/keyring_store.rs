//! A [`TokenStore`] in the OS keyring (feature `keyring`), through
//! [keyring-core](https://docs.rs/keyring-core) and, on Linux, the kernel keyutils
//! store.
//!
//! - One keyring entry per store key (service: the store's service name, default
//!   `smthrs-mcp`; user: the key), holding what is stored under that key as the
//!   same JSON [`FileStore`](super::FileStore) writes for it.
//! - An entry is at most [`MAX_KEYRING_ENTRY_BYTES`], the most a keyutils `user`
//!   key holds: a larger value is refused before anything is written, a larger
//!   entry (from another store) is refused when read, and a malformed entry is an
//!   error (never silently replaced); each error names the key, never the content.
//! - The keyring has no lock, so [`TokenStore::lock`] takes the file store's lock:
//!   an exclusive advisory lock on a lock file (default:
//!   [`KeyringStore::default_lock_path`]), shared by every process that uses the
//!   same keyring store, so a rotating refresh token is refreshed once.
//!
//! On Linux the entries live in the user's session keyring, linked to the
//! persistent keyring, so they outlive the process and the login session until
//! the persistent keyring expires (a few days unused, by default) or the machine
//! reboots: after either, the next request needs a login again. They are not
//! written to disk. The kernel counts them against the user's key quota
//! (`/proc/sys/kernel/keys/maxbytes`: 20000 bytes for all of a non-root user's
//! keys by default), so a user with many logins may need the file store or a
//! larger quota; a full quota is named in the error.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use keyring_core::{CredentialStore, Entry};
use secrecy::zeroize::Zeroizing;

use super::file_store::lock_file;
use super::store::{StoreLock, StoredAuth, TokenStore};
use crate::error::{Error, ErrorKind, Result};

/// The largest keyring entry read or written: 32767 bytes, the payload limit of a
/// keyutils `user` key.
pub const MAX_KEYRING_ENTRY_BYTES: usize = 32_767;

/// The service name entries are filed under unless the host names another.
pub const DEFAULT_KEYRING_SERVICE: &str = "smthrs-mcp";

/// A [`TokenStore`] in the OS keyring. See the [module docs](self). `Debug` shows
/// the service and the lock file, nothing stored.
#[derive(Clone)]
pub struct KeyringStore {
    store: Arc<CredentialStore>,
    service: String,
    lock_path: PathBuf,
    /// The store is the Linux keyutils one (see [`join_persistent_keyring`]).
    keyutils: bool,
}

impl fmt::Debug for KeyringStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyringStore")
            .field("service", &self.service)
            .field("lock_path", &self.lock_path)
            .finish_non_exhaustive()
    }
}

fn store_error(what: String) -> Error {
    Error::new(
        ErrorKind::InvalidConfig,
        format!("the keyring token store {what}"),
    )
}

/// Why a keyring call failed, from the variant alone: the payloads may hold the
/// entry's bytes (`BadEncoding`, `BadDataFormat`) or platform text, never shown.
fn reason(e: &keyring_core::Error) -> &'static str {
    use keyring_core::Error as K;
    match e {
        K::NoStorageAccess(_) => "the keyring cannot be reached",
        K::PlatformFailure(inner) => {
            #[cfg(target_os = "linux")]
            if matches!(
                inner.downcast_ref::<linux_keyutils::KeyError>(),
                Some(linux_keyutils::KeyError::QuotaExceeded)
            ) {
                return "the user's kernel key quota is full (/proc/sys/kernel/keys/maxbytes, maxkeys)";
            }
            let _ = inner;
            "the keyring failed"
        }
        K::NoEntry => "there is no such entry",
        K::BadEncoding(_) | K::BadDataFormat(..) | K::BadStoreFormat(_) => {
            "the keyring's data is not valid"
        }
        K::TooLong(..) => "a name is too long for the keyring",
        K::Invalid(..) => "the keyring refused a name or value",
        K::Ambiguous(_) => "the keyring holds more than one entry for it",
        K::NoDefaultStore | K::NotSupportedByStore(_) => {
            "the keyring does not support the operation"
        }
        _ => "the keyring failed",
    }
}

impl KeyringStore {
    /// The platform's keyring: on Linux the kernel keyutils store (session
    /// keyring, linked to the persistent one). Entries are filed under `service`
    /// ([`DEFAULT_KEYRING_SERVICE`] for the CLI's), and every process sharing the
    /// entries must use the same `lock_path` (see
    /// [`default_lock_path`](Self::default_lock_path)). Elsewhere, or when the
    /// keyring cannot be reached, an `invalid_config` error.
    pub fn native(service: impl Into<String>, lock_path: impl Into<PathBuf>) -> Result<Self> {
        Ok(KeyringStore {
            keyutils: cfg!(target_os = "linux"),
            ..Self::with_credential_store(native_store()?, service, lock_path)
        })
    }

    /// A store over any keyring-core credential store (the macOS or Windows
    /// stores, which this crate does not link), with the same encoding, bounds
    /// and lock as [`native`](Self::native).
    pub fn with_credential_store(
        store: Arc<CredentialStore>,
        service: impl Into<String>,
        lock_path: impl Into<PathBuf>,
    ) -> Self {
        KeyringStore {
            store,
            service: service.into(),
            lock_path: lock_path.into(),
            keyutils: false,
        }
    }

    /// The lock file beside the default token file:
    /// `$XDG_STATE_HOME/smthrs-mcp/keyring.lock`, else
    /// `$HOME/.local/state/smthrs-mcp/keyring.lock`; `None` without either.
    pub fn default_lock_path() -> Option<PathBuf> {
        super::FileStore::default_path().map(|p| p.with_file_name("keyring.lock"))
    }

    /// The service name entries are filed under.
    pub fn service(&self) -> &str {
        &self.service
    }

    /// The lock file.
    pub fn lock_path(&self) -> &Path {
        &self.lock_path
    }

    fn entry(&self, key: &str) -> Result<Entry> {
        if self.keyutils {
            join_persistent_keyring();
        }
        self.store.build(&self.service, key, None).map_err(|e| {
            store_error(format!(
                "cannot name an entry for \"{key}\": {}",
                reason(&e)
            ))
        })
    }
}

/// Links the user's persistent keyring into the calling thread's session keyring
/// before an entry is built, so the entry sees the session keyring the kernel
/// settles on. A thread without a session keyring of its own (a service, cron,
/// CI, a tokio blocking-pool thread of such a process) resolves "session" to the
/// user-session keyring, but `KEYCTL_GET_PERSISTENT` then gives the thread a new
/// session keyring holding the persistent one: an entry built first wrote its key
/// into the user-session keyring, whose keys that thread no longer possesses, and
/// linking the key into the persistent keyring failed with `EACCES` (and a new
/// process did not find the keys an earlier one stored). Joining first makes
/// every step use the session keyring that links the persistent one. Failure is
/// ignored: without a persistent keyring the store uses the session keyring alone.
#[cfg(target_os = "linux")]
fn join_persistent_keyring() {
    use linux_keyutils::{KeyRing, KeyRingIdentifier};
    let _ = KeyRing::get_persistent(KeyRingIdentifier::Session);
}

#[cfg(not(target_os = "linux"))]
fn join_persistent_keyring() {}

#[cfg(target_os = "linux")]
fn native_store() -> Result<Arc<CredentialStore>> {
    let store = linux_keyutils_keyring_store::Store::new()
        .map_err(|e| store_error(format!("cannot be opened: {}", reason(&e))))?;
    Ok(store)
}

#[cfg(not(target_os = "linux"))]
fn native_store() -> Result<Arc<CredentialStore>> {
    Err(store_error(
        "has no native keyring on this platform in this build (only Linux keyutils); use the file store, or KeyringStore::with_credential_store".to_owned(),
    ))
}

impl TokenStore for KeyringStore {
    fn load(&self, key: &str) -> Result<Option<StoredAuth>> {
        let bytes = match self.entry(key)?.get_secret() {
            Ok(bytes) => Zeroizing::new(bytes),
            Err(keyring_core::Error::NoEntry) => return Ok(None),
            Err(e) => {
                return Err(store_error(format!(
                    "cannot read the entry for \"{key}\": {}",
                    reason(&e)
                )));
            }
        };
        if bytes.len() > MAX_KEYRING_ENTRY_BYTES {
            return Err(store_error(format!(
                "entry for \"{key}\" is {} bytes, more than the {MAX_KEYRING_ENTRY_BYTES} a keyring entry may hold",
                bytes.len()
            )));
        }
        crate::json_bounds::parse_value(&bytes)
            .ok()
            .and_then(|v| StoredAuth::from_json(&v))
            .map(Some)
            .ok_or_else(|| {
                store_error(format!(
                    "entry for \"{key}\" is not valid (remove it to log in again)"
                ))
            })
    }

    fn save(&self, key: &str, value: &StoredAuth) -> Result<()> {
        let bytes = Zeroizing::new(
            serde_json::to_vec(&value.to_json())
                .map_err(|_| store_error(format!("cannot encode the entry for \"{key}\"")))?,
        );
        if bytes.len() > MAX_KEYRING_ENTRY_BYTES {
            return Err(store_error(format!(
                "cannot store {} bytes for \"{key}\": a keyring entry holds at most {MAX_KEYRING_ENTRY_BYTES} (use the file store)",
                bytes.len()
            )));
        }
        self.entry(key)?.set_secret(&bytes).map_err(|e| {
            store_error(format!(
                "cannot write the entry for \"{key}\": {}",
                reason(&e)
            ))
        })
    }

    fn remove(&self, key: &str) -> Result<bool> {
        match self.entry(key)?.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring_core::Error::NoEntry) => Ok(false),
            Err(e) => Err(store_error(format!(
                "cannot remove the entry for \"{key}\": {}",
                reason(&e)
            ))),
        }
    }

    fn lock(&self, _key: &str) -> Result<StoreLock> {
        lock_file(&self.lock_path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// keyring-core's in-memory mock: only for what the kernel store cannot
    /// produce (an entry over the keyutils limit, a platform failure).
    fn mock() -> (KeyringStore, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = KeyringStore::with_credential_store(
            keyring_core::mock::Store::new().unwrap(),
            "svc",
            dir.path().join("keyring.lock"),
        );
        (store, dir)
    }

    #[test]
    fn an_entry_over_the_bound_is_refused_when_read() {
        let (store, _dir) = mock();
        let entry = store.entry("k").unwrap();
        let mut big = b"{\"registrations\":[],\"tokens\":null,\"x\":\"".to_vec();
        big.resize(MAX_KEYRING_ENTRY_BYTES + 1 - 2, b'a');
        big.extend_from_slice(b"\"}");
        assert_eq!(big.len(), MAX_KEYRING_ENTRY_BYTES + 1);
        entry.set_secret(&big).unwrap();
        let e = store.load("k").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig);
        assert!(e.message().contains("32768 bytes"), "{e}");
        assert!(e.message().contains("32767"), "{e}");
        // One byte less is read.
        big.remove(big.len() - 3);
        entry.set_secret(&big).unwrap();
        assert!(store.load("k").unwrap().is_some());
    }

    #[test]
    fn a_platform_failure_names_the_variant_never_its_payload() {
        let (store, _dir) = mock();
        let entry = store.entry("k").unwrap();
        entry.set_secret(b"{}").unwrap();
        let cred: &keyring_core::mock::Cred = entry.as_any().downcast_ref().unwrap();
        cred.set_error(keyring_core::Error::BadEncoding(b"planted-secret".to_vec()));
        let e = store.load("k").unwrap_err();
        assert!(e.message().contains("not valid"), "{e}");
        assert!(!format!("{e} {e:?}").contains("planted-secret"), "{e:?}");
    }
}
