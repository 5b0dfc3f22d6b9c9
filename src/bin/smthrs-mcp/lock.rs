//! `smthrs-mcp lock` and `--locked`: the lock file that pins every server's
//! catalog ([`smthrs_mcp::pin`]).
//!
//! The file (default `mcp.lock.json` in the server file's directory) is JSON meant
//! to be committed, written with sorted keys and a trailing newline, so it is
//! byte-identical across runs for unchanged catalogs:
//!
//! ```json
//! {
//!   "lockVersion": 1,
//!   "servers": [
//!     {
//!       "args": ["demo-server"],
//!       "command": "smthrs-mcp",
//!       "digest": "sha256:…",
//!       "protocol": "2026-07-28",
//!       "server": "demo",
//!       "tools": { "add": "sha256:…", "echo": "sha256:…" }
//!     }
//!   ]
//! }
//! ```
//!
//! An HTTP entry has `url` (scheme, host, port and path: never a query, which may
//! carry a key) instead of `command`/`args`; no entry has env values or tokens.
//! `protocol` records the revision negotiated when the lock was written (for the
//! reader; `--locked` checks the catalog, not the revision or how the server is
//! reached).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use smthrs_mcp::config::{EntryTransport, ServerEntry};
use smthrs_mcp::pin::CatalogPin;
use smthrs_mcp::{Client, Error, ErrorKind};

/// The lock file's format version.
const LOCK_VERSION: u64 = 1;

/// The largest lock file read.
const MAX_LOCK_BYTES: u64 = 16 * 1024 * 1024;

/// The default lock file: `mcp.lock.json` beside the server file (or in the
/// current directory when no server file is configured).
pub(crate) fn default_path(server_file: Option<&Path>) -> PathBuf {
    let dir = server_file
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    dir.join("mcp.lock.json")
}

/// The lock file's text for these connected clients (in file order).
pub(crate) fn render(entries: &[ServerEntry], clients: &[Client]) -> String {
    let servers: Vec<Value> = entries
        .iter()
        .zip(clients)
        .map(|(entry, client)| {
            let pin = CatalogPin::of(client.catalog());
            let mut object = serde_json::Map::new();
            object.insert("server".into(), json!(entry.server));
            match &entry.transport {
                EntryTransport::Stdio(stdio) => {
                    object.insert("command".into(), json!(stdio.command));
                    object.insert("args".into(), json!(stdio.args));
                }
                EntryTransport::Http(http) => {
                    let url = &http.url;
                    let mut shown = format!("{}://{}", url.scheme(), url.host_str().unwrap_or(""));
                    if let Some(port) = url.port() {
                        shown.push_str(&format!(":{port}"));
                    }
                    shown.push_str(url.path());
                    object.insert("url".into(), json!(shown));
                }
            }
            object.insert("protocol".into(), json!(client.protocol_version()));
            object.insert("digest".into(), json!(pin.digest()));
            object.insert("tools".into(), json!(pin.tools()));
            Value::Object(object)
        })
        .collect();
    let lock = json!({ "lockVersion": LOCK_VERSION, "servers": servers });
    let mut text = serde_json::to_string_pretty(&lock).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes the lock file atomically (a temporary file beside it, then a rename):
/// a reader never sees half a lock.
pub(crate) fn write(path: &Path, text: &str) -> std::io::Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(format!(".tmp-{}", std::process::id()));
    let temp = PathBuf::from(temp);
    let written = std::fs::write(&temp, text).and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// A lock file read back: each server's pin.
pub(crate) struct Lock {
    pins: BTreeMap<String, CatalogPin>,
}

impl Lock {
    /// Reads and decodes `path`; the error is a usage message naming the path.
    pub(crate) fn read(path: &Path) -> Result<Lock, String> {
        let shown = path.display();
        let metadata = std::fs::metadata(path)
            .map_err(|_| format!("--lock-file {shown}: the lock file is missing or unreadable"))?;
        if metadata.len() > MAX_LOCK_BYTES {
            return Err(format!("--lock-file {shown}: the lock file is too large"));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|_| format!("--lock-file {shown}: the lock file is unreadable"))?;
        let bad = || format!("--lock-file {shown}: not a lock file written by `smthrs-mcp lock`");
        let value: Value = serde_json::from_str(&text).map_err(|_| bad())?;
        if value["lockVersion"] != json!(LOCK_VERSION) {
            return Err(bad());
        }
        let mut pins = BTreeMap::new();
        for server in value["servers"].as_array().ok_or_else(bad)? {
            let name = server["server"].as_str().ok_or_else(bad)?;
            let digest = server["digest"].as_str().ok_or_else(bad)?;
            let tools = server["tools"].as_object().ok_or_else(bad)?;
            let tools = tools
                .iter()
                .map(|(tool, digest)| digest.as_str().map(|d| (tool.clone(), d.to_owned())))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(bad)?;
            pins.insert(name.to_owned(), CatalogPin::from_parts(digest, tools));
        }
        Ok(Lock { pins })
    }

    /// The pin of `server`, or `catalog_changed` when the lock has none.
    pub(crate) fn pin(&self, server: &str) -> Result<CatalogPin, Error> {
        self.pins.get(server).cloned().ok_or_else(|| {
            Error::new(
                ErrorKind::CatalogChanged,
                format!("server \"{server}\" is not in the lock file (run `smthrs-mcp lock`)"),
            )
        })
    }
}
