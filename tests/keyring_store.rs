//! The OS keyring token store (feature `keyring`) against the real kernel keyutils
//! store, no mock: the encoding, the bounds, a malformed entry, the lock, and the
//! CLI with `oauth.tokenStore: "keyring"` (two processes refreshing at once keep
//! the rotating token; `logout` removes the entry; `login` stores into it and
//! `call` uses what it stored).
//!
//! Every test files its entries under a name of its own (service or server name
//! with the process id and a counter) and removes them, so runs in parallel and
//! the user's own entries are untouched.
//!
//! Run: `cargo test --features keyring --test keyring_store`.
#![cfg(all(feature = "keyring", target_os = "linux"))]

mod support;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use secrecy::{ExposeSecret, SecretString};
use serde_json::{Value, json};
use smthrs_mcp::ErrorKind;
use smthrs_mcp::auth::keyring_store::{DEFAULT_KEYRING_SERVICE, MAX_KEYRING_ENTRY_BYTES};
use smthrs_mcp::auth::registration::{Registration, RegistrationKind};
use smthrs_mcp::auth::store::StoredTokens;
use smthrs_mcp::auth::token::TokenSet;
use smthrs_mcp::auth::{FileStore, KeyringStore, StoredAuth, TokenStore};
use support::oauth_server;
use support::oauth_server::OAuthServer;

/// A name no other test (or run) uses.
fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{prefix}-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// A store under a service of its own, its lock file in `dir`.
fn store(dir: &tempfile::TempDir) -> KeyringStore {
    KeyringStore::native(unique("smthrs-mcp-test"), dir.path().join("keyring.lock")).unwrap()
}

fn sample(access: &str, refresh: &str, secret: &str) -> StoredAuth {
    StoredAuth {
        registrations: vec![Registration {
            issuer: "http://as".into(),
            client_id: "id".into(),
            client_secret: Some(SecretString::from(secret)),
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
                expires_at: Some(4600),
                obtained_at: Some(1000),
                scopes: vec!["a".into()],
                ..oauth_server::token_set(access, refresh)
            },
            revocation_endpoint: Some("http://as/revoke".into()),
        }),
        redirect_port: Some(8765),
        dpop_keys: vec![],
    }
}

/// The user's persistent keyring, where the store keeps its entries (the module
/// docs' layout), reached past the store.
fn persistent() -> linux_keyutils::KeyRing {
    linux_keyutils::KeyRing::get_persistent(linux_keyutils::KeyRingIdentifier::Thread).unwrap()
}

fn description(store: &KeyringStore, key: &str) -> String {
    format!("keyring-rs:{key}@{}", store.service())
}

/// Writes the entry's raw bytes past the store.
fn plant(store: &KeyringStore, key: &str, bytes: &[u8]) {
    persistent()
        .add_key(&description(store, key), bytes)
        .unwrap();
}

/// The raw bytes of the entry, read past the store.
fn raw(store: &KeyringStore, key: &str) -> Option<Vec<u8>> {
    let key = persistent().search(&description(store, key)).ok()?;
    key.read_to_vec().ok()
}

#[test]
fn entries_round_trip_in_the_file_stores_encoding_and_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    assert!(store.load("srv").unwrap().is_none());
    assert!(!store.remove("srv").unwrap());
    let value = sample("access-k", "refresh-k", "secret-k");
    {
        let _lock = store.lock("srv").unwrap();
        store.save("srv", &value).unwrap();
    }
    // Another store over the same service (as another process has) reads it.
    let other = KeyringStore::native(store.service(), store.lock_path()).unwrap();
    let back = other.load("srv").unwrap().unwrap();
    let t = back.tokens.as_ref().unwrap();
    assert_eq!(t.tokens.access_token.expose_secret(), "access-k");
    assert_eq!(
        t.tokens.refresh_token.as_ref().unwrap().expose_secret(),
        "refresh-k"
    );
    assert_eq!(
        (t.tokens.expires_at, t.tokens.obtained_at),
        (Some(4600), Some(1000))
    );
    assert_eq!(
        back.registration("http://as")
            .unwrap()
            .client_secret
            .as_ref()
            .unwrap()
            .expose_secret(),
        "secret-k"
    );
    // The entry holds what the file store writes under the key, as JSON.
    let file = FileStore::new(dir.path().join("tokens.json"));
    file.save("srv", &value).unwrap();
    let written: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("tokens.json")).unwrap()).unwrap();
    let entry: Value = serde_json::from_slice(&raw(&store, "srv").unwrap()).unwrap();
    assert_eq!(entry, written["srv"]);
    // Keys are separate entries.
    store
        .save("other", &sample("access-2", "refresh-2", "secret-2"))
        .unwrap();
    assert!(store.remove("srv").unwrap());
    assert!(store.load("srv").unwrap().is_none());
    assert!(raw(&store, "srv").is_none());
    assert!(!store.remove("srv").unwrap());
    assert!(store.load("other").unwrap().is_some());
    assert!(store.remove("other").unwrap());
}

/// The case that lost a rotated refresh token: threads that have not touched the
/// keyring (as a runtime's workers and blocking threads), one reading the entry,
/// another writing it without having read it, the first reading again. Each read
/// must see the last write, wherever it ran.
#[test]
fn a_write_from_one_thread_is_what_every_thread_reads_next() {
    use std::sync::mpsc::{Sender, channel};
    type Job = Box<dyn FnOnce() + Send>;
    // Threads started before anything here touches the keyring.
    let worker = || {
        let (tx, rx) = channel::<Job>();
        let handle = std::thread::spawn(move || {
            for job in rx {
                job();
            }
        });
        (tx, handle)
    };
    let workers: Vec<_> = (0..4).map(|_| worker()).collect();
    let on =
        |thread: &Sender<Job>, store: &KeyringStore, job: fn(&KeyringStore) -> Option<String>| {
            let (store, (tx, rx)) = (store.clone(), channel());
            thread
                .send(Box::new(move || tx.send(job(&store)).unwrap()))
                .unwrap();
            rx.recv().unwrap()
        };
    fn access(store: &KeyringStore) -> Option<String> {
        let stored = store.load("srv").unwrap()?.tokens?;
        Some(stored.tokens.access_token.expose_secret().to_owned())
    }
    let [(a, _), (b, _), (c, _), (d, _)] = &workers[..] else {
        unreachable!()
    };
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    store
        .save("srv", &sample("access-1", "refresh-1", "secret-t"))
        .unwrap();
    assert_eq!(on(a, &store, access).as_deref(), Some("access-1"));
    // A thread that never read the entry writes it.
    on(b, &store, |store| {
        store
            .save("srv", &sample("access-2", "refresh-2", "secret-t"))
            .unwrap();
        None
    });
    assert_eq!(on(a, &store, access).as_deref(), Some("access-2"));
    assert_eq!(access(&store).as_deref(), Some("access-2"));
    assert_eq!(on(b, &store, access).as_deref(), Some("access-2"));
    on(c, &store, |store| {
        store
            .save("srv", &sample("access-3", "refresh-3", "secret-t"))
            .unwrap();
        None
    });
    assert_eq!(access(&store).as_deref(), Some("access-3"));
    assert_eq!(on(a, &store, access).as_deref(), Some("access-3"));
    assert_eq!(on(b, &store, access).as_deref(), Some("access-3"));
    // A removal from yet another thread is seen everywhere too.
    assert_eq!(
        on(d, &store, |store| store
            .remove("srv")
            .unwrap()
            .then(String::new)),
        Some(String::new())
    );
    for thread in [a, b, c] {
        assert_eq!(on(thread, &store, access), None);
    }
    assert_eq!(access(&store), None);
    for (tx, handle) in workers {
        drop(tx);
        handle.join().unwrap();
    }
}

#[test]
fn a_malformed_entry_is_a_typed_error_naming_the_key_not_the_content() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    for bad in [
        &b"not json planted-secret-m"[..],
        br#"{"registrations": [], "tokens": "planted-secret-m"}"#,
        br#"{"tokens": {"accessToken": "planted-secret-m"}}"#,
        b"\xff\xfe planted-secret-m",
    ] {
        plant(&store, "srv", bad);
        let e = store.load("srv").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidConfig);
        assert!(e.message().contains("\"srv\" is not valid"), "{e}");
        assert!(!format!("{e} {e:?}").contains("planted-secret-m"), "{e:?}");
    }
    assert!(store.remove("srv").unwrap());
}

#[test]
fn a_value_over_the_entry_bound_is_refused_and_the_entry_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    store
        .save("srv", &sample("access-b", "refresh-b", "secret-b"))
        .unwrap();
    let over = sample(
        &format!("planted-secret-b{}", "x".repeat(MAX_KEYRING_ENTRY_BYTES)),
        "refresh-b",
        "secret-b",
    );
    let e = store.save("srv", &over).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidConfig);
    assert!(e.message().contains("at most 32767"), "{e}");
    assert!(!format!("{e} {e:?}").contains("planted-secret-b"), "{e:?}");
    // Nothing was written: the old entry stands.
    let kept = store.load("srv").unwrap().unwrap().tokens.unwrap();
    assert_eq!(kept.tokens.access_token.expose_secret(), "access-b");
    // Exactly the bound is stored (the kernel takes up to 32767 bytes), one more
    // byte is not. An access token of n bytes adds n to the encoding.
    store
        .save("big", &sample("", "refresh-b", "secret-b"))
        .unwrap();
    let n = MAX_KEYRING_ENTRY_BYTES - raw(&store, "big").unwrap().len();
    store
        .save("big", &sample(&"x".repeat(n), "refresh-b", "secret-b"))
        .unwrap();
    assert_eq!(raw(&store, "big").unwrap().len(), MAX_KEYRING_ENTRY_BYTES);
    assert!(store.load("big").unwrap().is_some());
    let e = store
        .save("big", &sample(&"x".repeat(n + 1), "refresh-b", "secret-b"))
        .unwrap_err();
    assert!(e.message().contains("32768 bytes"), "{e}");
    assert!(store.remove("big").unwrap());
    assert!(store.remove("srv").unwrap());
}

#[test]
fn the_lock_file_excludes_a_second_holder_until_released() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let held = store.lock("k").unwrap();
    let probe = std::fs::File::open(store.lock_path()).unwrap();
    assert!(matches!(
        probe.try_lock(),
        Err(std::fs::TryLockError::WouldBlock)
    ));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(store.lock_path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let other = store.clone();
    let t = std::thread::spawn(move || {
        let _g = other.lock("k").unwrap();
        tx.send(()).unwrap();
    });
    assert!(
        rx.recv_timeout(std::time::Duration::from_millis(200))
            .is_err()
    );
    drop(held);
    rx.recv().unwrap();
    t.join().unwrap();
}

#[test]
fn debug_shows_the_service_and_lock_path_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    store
        .save("srv", &sample("access-d", "refresh-d", "secret-d"))
        .unwrap();
    let debug = format!("{store:?}");
    assert!(debug.contains(store.service()), "{debug}");
    for secret in ["access-d", "refresh-d", "secret-d"] {
        assert!(!debug.contains(secret), "{debug}");
    }
    assert!(store.remove("srv").unwrap());
}

type Outputs = Vec<(i32, String, String)>;
type Job = (Vec<std::process::Command>, std::sync::mpsc::Sender<Outputs>);

/// Starts commands, all at once, from a thread created before its test touched
/// the keyring. Session keyrings are per thread and inherited by children, and
/// the store gives the thread that uses it a session keyring of its own: a child
/// of that thread would inherit it and find the entries through it, while a
/// child of this one starts without one, as a process in another login session
/// (or a service) does, and must find them through the persistent keyring.
struct Launcher(std::sync::mpsc::Sender<Job>);

impl Launcher {
    fn new() -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::spawn(move || {
            for (commands, reply) in rx {
                let children: Vec<_> = commands
                    .into_iter()
                    .map(|mut c| {
                        c.stdout(std::process::Stdio::piped())
                            .stderr(std::process::Stdio::piped())
                            .spawn()
                            .unwrap()
                    })
                    .collect();
                let outputs = children
                    .into_iter()
                    .map(|child| oauth_server::outputs(child.wait_with_output().unwrap()))
                    .collect();
                let _ = reply.send(outputs);
            }
        });
        Launcher(tx)
    }

    async fn run(&self, commands: Vec<std::process::Command>) -> Outputs {
        let (reply, outputs) = std::sync::mpsc::channel();
        self.0.send((commands, reply)).unwrap();
        tokio::task::spawn_blocking(move || outputs.recv().unwrap())
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn the_cli_keeps_tokens_in_the_keyring_and_two_processes_refresh_once() {
    // Before anything here touches the keyring.
    let launcher = Launcher::new();
    let server = OAuthServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let state_home = dir.path().join("state");
    let config = dir.path().join("servers.json");
    let name = unique("srv");
    let (client_id, _access, refresh) = server.state.seed(&[]);
    server.state.expire_access_tokens();
    std::fs::write(
        &config,
        json!([{"server": name, "url": server.url(),
                "oauth": {"clientId": client_id, "tokenStore": "keyring"}}])
        .to_string(),
    )
    .unwrap();
    // The CLI's store: service smthrs-mcp, the lock beside the token file.
    let lock: PathBuf = state_home.join("smthrs-mcp").join("keyring.lock");
    let store = KeyringStore::native(DEFAULT_KEYRING_SERVICE, &lock).unwrap();
    let expired = TokenSet {
        expires_at: Some(1),
        ..oauth_server::token_set("expired", &refresh)
    };
    {
        let _lock = store.lock(&name).unwrap();
        let login = oauth_server::stored_login(&server, &client_id, expired, None);
        store.save(&name, &login).unwrap();
    }
    let command = |args: &[&str]| {
        let mut c = oauth_server::cli();
        c.arg("--mcp-config")
            .arg(&config)
            .args(args)
            .env("XDG_STATE_HOME", &state_home);
        c
    };
    let plain = |args: &[&str]| {
        let c = command(args);
        let std = c.as_std();
        let mut plain = std::process::Command::new(std.get_program());
        plain.args(std.get_args());
        for (k, v) in std.get_envs() {
            match v {
                Some(v) => plain.env(k, v),
                None => plain.env_remove(k),
            };
        }
        plain
    };
    // Two processes without the test's session keyring, at once.
    let mut both = launcher
        .run(vec![plain(&["tools"]), plain(&["tools"])])
        .await;
    let (b, a) = (both.pop().unwrap(), both.pop().unwrap());
    assert_eq!(a.0, 0, "first: {}", a.2);
    assert_eq!(b.0, 0, "second: {}", b.2);
    let tools: Value = serde_json::from_str(&a.1).unwrap();
    assert_eq!(tools[0]["name"], format!("mcp/{name}/echo"));
    // One refresh: the second process waited on keyring.lock, re-read the entry
    // and used the rotated token.
    assert_eq!(*server.state.refreshes.lock().unwrap(), 1);
    assert_eq!(*server.state.reuse_detected.lock().unwrap(), 0);
    let stored = store.load(&name).unwrap().unwrap().tokens.unwrap();
    assert_ne!(
        stored.tokens.refresh_token.unwrap().expose_secret(),
        &refresh
    );
    assert!(stored.tokens.obtained_at.is_some());
    // Nothing went to the token file.
    assert!(!state_home.join("smthrs-mcp").join("tokens.json").exists());
    // logout forgets the tokens.
    let (code, stdout, stderr) = oauth_server::run(command(&["logout", &name])).await;
    assert_eq!(
        (code, stdout.trim()),
        (0, format!("ok: logged out of {name}").as_str()),
        "{stderr}"
    );
    assert!(
        store
            .load(&name)
            .unwrap()
            .is_none_or(|s| s.tokens.is_none())
    );
    let (code, _, stderr) = oauth_server::run(command(&["tools"])).await;
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!("smthrs-mcp login {name}")),
        "{stderr}"
    );

    // login stores into the keyring (the browser's redirect answered 200, the
    // login succeeded), and call uses what it stored.
    oauth_server::login_with_browser(command(&["login", &name])).await;
    let stored = store.load(&name).unwrap().unwrap().tokens.unwrap();
    assert!(stored.tokens.obtained_at.is_some());
    // Read from another session: through the persistent keyring.
    let call = launcher
        .run(vec![plain(&[
            "call",
            &format!("mcp/{name}/echo"),
            "--args",
            "{}",
        ])])
        .await;
    assert_eq!(call[0].0, 0, "{call:?}");
    assert!(!state_home.join("smthrs-mcp").join("tokens.json").exists());
    let (code, _, _) = oauth_server::run(command(&["logout", &name])).await;
    assert_eq!(code, 0);
    // Logout forgets the tokens, keeping the remembered redirect port.
    let kept = store.load(&name).unwrap().unwrap();
    assert!(kept.tokens.is_none());
    assert!(kept.redirect_port.is_some());
    assert!(store.remove(&name).unwrap());
}
