//! A [`TokenStore`] in the OS keyring (feature `keyring`): on Linux the kernel's
//! keyutils, elsewhere any [keyring-core](https://docs.rs/keyring-core) store the
//! host hands in.
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
//! On Linux the entries are `user` keys described `keyring-rs:KEY@SERVICE` (the
//! keyring-rs convention) in the user's persistent keyring
//! (`KEYCTL_GET_PERSISTENT`, linked into the calling thread's keyring): one
//! keyring per user, the same for every thread and process of that user, so a
//! write is what the next read sees wherever it runs. They outlive the process
//! and the login session until the persistent keyring expires (three days unused,
//! by default) or the machine reboots: after either, the next request needs a
//! login again. They are not written to disk. A kernel without persistent
//! keyrings gets the user keyring instead (it lives while a process of the user
//! does). The kernel counts entries against the user's key quota
//! (`/proc/sys/kernel/keys/maxbytes`: 20000 bytes for all of a non-root user's
//! keys by default), so a user with many logins may need the file store or a
//! larger quota; a full quota is named in the error.
//!
//! keyring-core's own keyutils store (linux-keyutils-keyring-store) is not used:
//! it writes each entry into the calling thread's session keyring and links it
//! into the persistent one, and a thread (or process) without a session keyring of
//! its own gets a new one, so under a multi-threaded runtime a write from one
//! thread left the old entry in another thread's session keyring, where that
//! thread's next read found it first: a rotated refresh token was lost and the
//! old one replayed (`tests/keyring_store.rs` keeps the case).

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
    backend: Backend,
    service: String,
    lock_path: PathBuf,
}

/// Where the entries live.
#[derive(Clone)]
enum Backend {
    /// The user's persistent keyring, through keyutils (see [`keyutils`]).
    #[cfg(target_os = "linux")]
    Keyutils,
    /// A keyring-core store the host handed in.
    Core(Arc<CredentialStore>),
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

/// Why a keyring-core call failed, from the variant alone: the payloads may hold
/// the entry's bytes (`BadEncoding`, `BadDataFormat`) or platform text, never
/// shown.
fn reason(e: &keyring_core::Error) -> &'static str {
    use keyring_core::Error as K;
    match e {
        K::NoStorageAccess(_) => "the keyring cannot be reached",
        K::PlatformFailure(_) => "the keyring failed",
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
    /// The platform's keyring: on Linux the user's persistent keyring through the
    /// kernel's keyutils (see the [module docs](self)). Entries are filed under
    /// `service` ([`DEFAULT_KEYRING_SERVICE`] for the CLI's), and every process
    /// sharing the entries must use the same `lock_path` (see
    /// [`default_lock_path`](Self::default_lock_path)). Elsewhere, or when the
    /// keyring cannot be reached, an `invalid_config` error.
    pub fn native(service: impl Into<String>, lock_path: impl Into<PathBuf>) -> Result<Self> {
        #[cfg(target_os = "linux")]
        {
            keyutils::persistent_keyring()
                .map_err(|e| store_error(format!("cannot be opened: {}", keyutils::reason(&e))))?;
            Ok(KeyringStore {
                backend: Backend::Keyutils,
                service: service.into(),
                lock_path: lock_path.into(),
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (service, lock_path);
            Err(store_error(
                "has no native keyring on this platform in this build (only Linux keyutils); use the file store, or KeyringStore::with_credential_store".to_owned(),
            ))
        }
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
            backend: Backend::Core(store),
            service: service.into(),
            lock_path: lock_path.into(),
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

    fn core_entry(&self, store: &Arc<CredentialStore>, key: &str) -> Result<Entry> {
        store.build(&self.service, key, None).map_err(|e| {
            store_error(format!(
                "cannot name an entry for \"{key}\": {}",
                reason(&e)
            ))
        })
    }

    /// The entry's bytes, `None` without one; the error is the reason alone.
    fn read(&self, key: &str) -> Result<Option<Zeroizing<Vec<u8>>>> {
        let failed = |why: &str| store_error(format!("cannot read the entry for \"{key}\": {why}"));
        match &self.backend {
            #[cfg(target_os = "linux")]
            Backend::Keyutils => keyutils::read(&self.service, key)
                .map(|bytes| bytes.map(Zeroizing::new))
                .map_err(|e| failed(keyutils::reason(&e))),
            Backend::Core(store) => match self.core_entry(store, key)?.get_secret() {
                Ok(bytes) => Ok(Some(Zeroizing::new(bytes))),
                Err(keyring_core::Error::NoEntry) => Ok(None),
                Err(e) => Err(failed(reason(&e))),
            },
        }
    }

    fn write(&self, key: &str, bytes: &[u8]) -> Result<()> {
        let failed =
            |why: &str| store_error(format!("cannot write the entry for \"{key}\": {why}"));
        match &self.backend {
            #[cfg(target_os = "linux")]
            Backend::Keyutils => {
                keyutils::write(&self.service, key, bytes).map_err(|e| failed(keyutils::reason(&e)))
            }
            Backend::Core(store) => self
                .core_entry(store, key)?
                .set_secret(bytes)
                .map_err(|e| failed(reason(&e))),
        }
    }

    fn delete(&self, key: &str) -> Result<bool> {
        let failed =
            |why: &str| store_error(format!("cannot remove the entry for \"{key}\": {why}"));
        match &self.backend {
            #[cfg(target_os = "linux")]
            Backend::Keyutils => {
                keyutils::delete(&self.service, key).map_err(|e| failed(keyutils::reason(&e)))
            }
            Backend::Core(store) => match self.core_entry(store, key)?.delete_credential() {
                Ok(()) => Ok(true),
                Err(keyring_core::Error::NoEntry) => Ok(false),
                Err(e) => Err(failed(reason(&e))),
            },
        }
    }
}

/// The Linux backend: `user` keys in the user's persistent keyring.
#[cfg(target_os = "linux")]
mod keyutils {
    use linux_keyutils::{KeyError, KeyRing, KeyRingIdentifier};

    /// The user's persistent keyring, linked into the calling thread's keyring so
    /// the thread possesses it (the keyring grants its user view and read alone;
    /// searching it, and reading the keys in it, takes possession). The thread
    /// keyring rather than the session keyring: it changes nothing a child
    /// process inherits, and goes with the thread. Each call also restarts the
    /// persistent keyring's expiry.
    pub(super) fn persistent_keyring() -> Result<KeyRing, KeyError> {
        KeyRing::get_persistent(KeyRingIdentifier::Thread)
    }

    /// The key's description, keyring-rs's convention.
    pub(super) fn description(service: &str, key: &str) -> String {
        format!("keyring-rs:{key}@{service}")
    }

    pub(super) fn read(service: &str, key: &str) -> Result<Option<Vec<u8>>, KeyError> {
        let keyring = persistent_keyring()?;
        match keyring.search(&description(service, key)) {
            Ok(found) => found.read_to_vec().map(Some),
            Err(KeyError::KeyDoesNotExist) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `add_key` into the persistent keyring: an entry already there is updated
    /// in place, so every holder of its id reads the new bytes.
    pub(super) fn write(service: &str, key: &str, bytes: &[u8]) -> Result<(), KeyError> {
        persistent_keyring()?
            .add_key(&description(service, key), bytes)
            .map(drop)
    }

    /// Unlinks the entry from the persistent keyring (the next search there
    /// misses it at once), then invalidates it (no other keyring that links it
    /// keeps it either; the kernel collects it later).
    pub(super) fn delete(service: &str, key: &str) -> Result<bool, KeyError> {
        let keyring = persistent_keyring()?;
        match keyring.search(&description(service, key)) {
            Ok(found) => {
                keyring.unlink_key(found)?;
                let _ = found.invalidate();
                Ok(true)
            }
            Err(KeyError::KeyDoesNotExist) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Why a keyutils call failed.
    pub(super) fn reason(e: &KeyError) -> &'static str {
        match e {
            KeyError::QuotaExceeded => {
                "the user's kernel key quota is full (/proc/sys/kernel/keys/maxbytes, maxkeys)"
            }
            KeyError::OperationNotSupported => {
                "this kernel has no persistent keyrings (CONFIG_PERSISTENT_KEYRINGS); use the file store"
            }
            KeyError::AccessDenied | KeyError::PermissionDenied => "the keyring refused access",
            KeyError::KeyExpired | KeyError::KeyRevoked | KeyError::KeyRejected => {
                "the entry expired or was revoked (remove it to log in again)"
            }
            _ => "the keyring failed",
        }
    }
}

impl TokenStore for KeyringStore {
    fn load(&self, key: &str) -> Result<Option<StoredAuth>> {
        let Some(bytes) = self.read(key)? else {
            return Ok(None);
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
        self.write(key, &bytes)
    }

    fn remove(&self, key: &str) -> Result<bool> {
        self.delete(key)
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

    fn mock_entry(store: &KeyringStore, key: &str) -> Entry {
        match &store.backend {
            Backend::Core(core) => store.core_entry(core, key).unwrap(),
            #[cfg(target_os = "linux")]
            Backend::Keyutils => unreachable!("the mock store is a keyring-core one"),
        }
    }

    #[test]
    fn an_entry_over_the_bound_is_refused_when_read() {
        let (store, _dir) = mock();
        let entry = mock_entry(&store, "k");
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
        let entry = mock_entry(&store, "k");
        entry.set_secret(b"{}").unwrap();
        let cred: &keyring_core::mock::Cred = entry.as_any().downcast_ref().unwrap();
        cred.set_error(keyring_core::Error::BadEncoding(b"planted-secret".to_vec()));
        let e = store.load("k").unwrap_err();
        assert!(e.message().contains("not valid"), "{e}");
        assert!(!format!("{e} {e:?}").contains("planted-secret"), "{e:?}");
    }
}
