//! The CLI's token store: one JSON file per user, owner-only, written atomically,
//! locked across processes.
//!
//! - The directory is created `0700` and the file `0600` from the start (`O_CREAT`
//!   with the mode, never a `chmod` afterwards), on Unix.
//! - Every write goes to a fresh temporary file in the same directory (created
//!   `0600`, exclusively), is flushed to disk, and is renamed over the file: a
//!   reader sees the old content or the new one, never half of either.
//! - [`TokenStore::lock`] takes an exclusive advisory lock
//!   (`std::fs::File::lock`) on a sibling `<file>.lock`, so two processes that
//!   refresh at once are serialized and the second sees the first one's rotated
//!   refresh token.
//! - The file is at most [`MAX_STORE_BYTES`]; a larger or malformed one is an
//!   error (never silently replaced, which would drop every other server's login).
//!
//! [`FileStore::default_path`] is `$XDG_STATE_HOME/smthrs-mcp/tokens.json`, else
//! `$HOME/.local/state/smthrs-mcp/tokens.json`. The server file never holds tokens.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::store::{StoreLock, StoredAuth, TokenStore};
use crate::error::{Error, ErrorKind, Result};

/// The largest token file read: 4 MiB.
pub const MAX_STORE_BYTES: u64 = 4 * 1024 * 1024;

/// A [`TokenStore`] in one owner-only file. See the [module docs](self).
#[derive(Clone, Debug)]
pub struct FileStore {
    path: PathBuf,
}

fn store_error(what: &str) -> Error {
    Error::new(ErrorKind::InvalidConfig, format!("the token store {what}"))
}

impl FileStore {
    /// A store in the file at `path` (created on the first write).
    ///
    /// ```
    /// use smthrs_mcp::auth::FileStore;
    ///
    /// let store = FileStore::new("/home/me/.local/state/app/tokens.json");
    /// assert!(store.path().ends_with("tokens.json"));
    /// // The CLI's own file, when a home directory is known:
    /// let _cli = FileStore::default_path().map(FileStore::new);
    /// ```
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileStore { path: path.into() }
    }

    /// `$XDG_STATE_HOME/smthrs-mcp/tokens.json`, else
    /// `$HOME/.local/state/smthrs-mcp/tokens.json`; `None` without either.
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_STATE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".local").join("state"))
            })?;
        Some(base.join("smthrs-mcp").join("tokens.json"))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn dir(&self) -> Result<&Path> {
        self.path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .ok_or_else(|| store_error("path has no directory"))
    }

    fn ensure_dir(&self) -> Result<()> {
        ensure_dir(self.dir()?)
    }

    fn read_all(&self) -> Result<Map<String, Value>> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(e) => return Err(store_error(&format!("file cannot be read ({})", e.kind()))),
        };
        let mut bytes = Vec::new();
        file.take(MAX_STORE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| store_error(&format!("file cannot be read ({})", e.kind())))?;
        if bytes.len() as u64 > MAX_STORE_BYTES {
            return Err(store_error("file is larger than 4 MiB"));
        }
        if bytes.is_empty() {
            return Ok(Map::new());
        }
        match crate::json_bounds::parse_value(&bytes) {
            Ok(Value::Object(map)) => Ok(map),
            _ => Err(store_error("file is not valid (delete it to log in again)")),
        }
    }

    fn write_all(&self, map: &Map<String, Value>) -> Result<()> {
        self.ensure_dir()?;
        let dir = self.dir()?;
        let bytes = serde_json::to_vec_pretty(&Value::Object(map.clone()))
            .map_err(|_| store_error("could not be encoded"))?;
        let name = self
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("tokens.json");
        let mut attempt = 0u32;
        let (tmp_path, mut tmp) = loop {
            let nonce: u64 = rand_u64();
            let candidate = dir.join(format!(".{name}.{}.{nonce:016x}.tmp", std::process::id()));
            let mut options = OpenOptions::new();
            options.write(true).create_new(true);
            #[cfg(unix)]
            {
                use std::os::unix::fs::OpenOptionsExt;
                options.mode(0o600);
            }
            match options.open(&candidate) {
                Ok(f) => break (candidate, f),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 8 => {
                    attempt += 1
                }
                Err(e) => {
                    return Err(store_error(&format!(
                        "file cannot be written ({})",
                        e.kind()
                    )));
                }
            }
        };
        let written = tmp
            .write_all(&bytes)
            .and_then(|()| tmp.sync_all())
            .and_then(|()| std::fs::rename(&tmp_path, &self.path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp_path);
            return Err(store_error(&format!(
                "file cannot be written ({})",
                e.kind()
            )));
        }
        // The rename is durable once the directory is.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

/// Creates `dir` and its missing parents, `0700` on Unix.
fn ensure_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .map_err(|e| store_error(&format!("directory cannot be created ({})", e.kind())))
}

/// Takes an exclusive advisory lock (`std::fs::File::lock`) on the lock file at
/// `path`, created `0600` in a `0700` directory on Unix, blocking until it is
/// free; dropping the lock closes the file, which releases it. The lock of
/// [`FileStore`] and of the keyring store (which has no lock of its own).
pub(crate) fn lock_file(path: &Path) -> Result<StoreLock> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        ensure_dir(dir)?;
    }
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let file = options
        .open(path)
        .map_err(|e| store_error(&format!("lock file cannot be opened ({})", e.kind())))?;
    file.lock()
        .map_err(|e| store_error(&format!("lock cannot be taken ({})", e.kind())))?;
    Ok(StoreLock::new(file))
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

impl TokenStore for FileStore {
    fn load(&self, key: &str) -> Result<Option<StoredAuth>> {
        let map = self.read_all()?;
        match map.get(key) {
            None => Ok(None),
            Some(v) => StoredAuth::from_json(v)
                .map(Some)
                .ok_or_else(|| store_error("file is not valid (delete it to log in again)")),
        }
    }

    fn save(&self, key: &str, value: &StoredAuth) -> Result<()> {
        let mut map = self.read_all()?;
        map.insert(key.to_owned(), value.to_json());
        self.write_all(&map)
    }

    fn remove(&self, key: &str) -> Result<bool> {
        let mut map = self.read_all()?;
        let had = map.remove(key).is_some();
        if had {
            self.write_all(&map)?;
        }
        Ok(had)
    }

    fn lock(&self, _key: &str) -> Result<StoreLock> {
        self.ensure_dir()?;
        let mut lock_path = self.path.clone().into_os_string();
        lock_path.push(".lock");
        lock_file(&PathBuf::from(lock_path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::store::StoredTokens;
    use crate::auth::token::TokenSet;
    use secrecy::SecretString;

    fn tokens(access: &str) -> StoredAuth {
        StoredAuth {
            registrations: vec![],
            tokens: Some(StoredTokens {
                issuer: "i".into(),
                resource: "r".into(),
                token_endpoint: "t".into(),
                client_id: "c".into(),
                tokens: TokenSet {
                    access_token: SecretString::from(access),
                    refresh_token: None,
                    expires_at: None,
                    obtained_at: None,
                    scopes: vec![],
                    dpop_bound: false,
                },
                revocation_endpoint: None,
            }),
            redirect_port: None,
            ..Default::default()
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_file_and_its_directory_are_owner_only_and_written_atomically() {
        use secrecy::ExposeSecret;
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir
            .path()
            .join("state")
            .join("smthrs-mcp")
            .join("tokens.json");
        let store = FileStore::new(&path);
        let _lock = store.lock("a").unwrap();
        store.save("a", &tokens("one")).unwrap();
        store.save("b", &tokens("two")).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let read = store.load("a").unwrap().unwrap();
        assert_eq!(
            read.tokens.unwrap().tokens.access_token.expose_secret(),
            "one"
        );
        assert!(store.remove("a").unwrap());
        assert!(!store.remove("a").unwrap());
        assert!(store.load("b").unwrap().is_some());
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    #[test]
    fn a_malformed_or_oversized_file_is_an_error_not_a_reset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.json");
        std::fs::write(&path, "not json").unwrap();
        let store = FileStore::new(&path);
        assert_eq!(
            store.load("a").unwrap_err().kind(),
            ErrorKind::InvalidConfig
        );
        assert!(store.save("a", &tokens("x")).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not json");
        let big = vec![b' '; (MAX_STORE_BYTES + 1) as usize];
        std::fs::write(&path, big).unwrap();
        assert!(store.load("a").unwrap_err().message().contains("4 MiB"));
    }

    #[test]
    fn the_lock_excludes_a_second_holder_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path().join("tokens.json"));
        let held = store.lock("k").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let s2 = store.clone();
        let t = std::thread::spawn(move || {
            let _g = s2.lock("k").unwrap();
            tx.send(()).unwrap();
        });
        // The second lock cannot be had while the first is held.
        let lock_file = {
            let mut p = store.path().to_path_buf().into_os_string();
            p.push(".lock");
            PathBuf::from(p)
        };
        let probe = File::open(&lock_file).unwrap();
        assert!(matches!(
            probe.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop(held);
        rx.recv().unwrap();
        t.join().unwrap();
    }
}
