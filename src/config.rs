//! The server file: decoding and validating the JSON array of MCP servers the CLI
//! (`smthrs-mcp --mcp-config PATH`, or `SMITHERS_MCP_CONFIG`) connects.
//!
//! The file is a JSON array. Each entry is either a **stdio** server (it has a
//! `command`) or a **Streamable HTTP** server (it has a `url`), never both and never
//! neither, plus the projection fields of
//! [`ProjectionOptions`]:
//!
//! ```
//! use smthrs_mcp::config::{decode_server_file, EntryTransport};
//!
//! let entries = decode_server_file(r#"[
//!   { "server": "reports", "command": "node", "args": ["./reports.mjs"],
//!     "env": { "REPORTS_TOKEN": "not-printed" }, "requestTimeoutMs": 30000,
//!     "exclude": ["delete_report"] },
//!   { "server": "tracker", "url": "https://mcp.tracker.example/mcp",
//!     "bearerTokenEnv": "TRACKER_MCP_TOKEN", "namePrefix": "tracker" }
//! ]"#)?;
//! assert_eq!(entries.len(), 2);
//! assert_eq!(entries[0].limits.request_timeout_ms, 30_000);
//! assert!(matches!(entries[1].transport, EntryTransport::Http(_)));
//!
//! let err = decode_server_file(r#"[{ "server": "github", "command": "gh-mcp", "args": [], "maxTools": 0 }]"#)
//!     .unwrap_err();
//! assert_eq!(err.to_string(), r#"entry 0 ("github"): maxTools must be a positive safe integer"#);
//! # Ok::<(), smthrs_mcp::config::ConfigError>(())
//! ```
//!
//! # The rules
//!
//! A stdio entry:
//!
//! | field | requirement |
//! | --- | --- |
//! | `server`, `command` | Required non-empty strings. |
//! | `args` | Required array of strings. |
//! | `cwd` | Optional non-empty string. |
//! | `env` | Optional object of string values; keys non-empty, without `=` or NUL. |
//! | every limit of [`Limits`] | Optional positive safe integers (1 ..= 2^53-1). |
//!
//! An HTTP entry:
//!
//! | field | requirement |
//! | --- | --- |
//! | `server` | Required non-empty string. |
//! | `url` | Required absolute `http:` or `https:` URL without user or password. |
//! | `bearerTokenEnv` | Optional environment variable name: non-empty, without `=` or NUL. |
//! | `oauth` | Optional object opting into OAuth 2.1 (exclusive with `bearerTokenEnv`); its fields are in [`oauth`]. |
//! | every limit of [`Limits`] but `queueCapacity` and `maxStderrBytes` ([`HTTP_OPTION_NAMES`]) | Optional positive safe integers. |
//!
//! Both kinds also accept:
//!
//! | field | requirement |
//! | --- | --- |
//! | `protocol` | Optional: `"auto"` (the default: probe with `server/discover`, speak 2026-07-28 when offered, else the legacy handshake), `"legacy"` (the legacy handshake only, no probe), `"2026-07-28"` (modern only). |
//! | `roots` | Optional array of at most [`MAX_ROOTS`] `file:` URIs without query or fragment: the workspace roots the CLI declares and serves when the server asks. |
//! | `include`, `exclude` | Optional arrays of strings. |
//! | `namePrefix` | Optional string. |
//!
//! An empty `namePrefix` is *decoded* here and refused by
//! [`ProjectionOptions::validate`](crate::flows::ProjectionOptions::validate), the
//! checked projection constructor, before anything is spawned: that is a projection
//! error, not a file-schema error.
//!
//! Decisions this module makes where the contract leaves room:
//!
//! - **Unknown keys are errors.** A typo such as `maxtools` would otherwise be
//!   silently ignored and the default limit applied; the decoder is strict so the
//!   mistake fails before anything connects. This includes stdio-only fields
//!   (`args`, `env`, `cwd`, `queueCapacity`, `maxStderrBytes`) in an HTTP entry.
//! - **Duplicate `server` names in one file are errors**: the name scopes flow names
//!   and diagnostics, so two entries sharing one would be ambiguous.
//! - **Entries are numbered from 0**, as JSON array indices are.
//! - The bearer token variable is **not read here**; the HTTP transport reads it, once,
//!   when it is built. The CLI builds every transport (spawning and connecting
//!   nothing) before any command runs, `check` included, so an unset variable is a
//!   usage error there too; the value is never printed.
//! - A file larger than [`MAX_SERVER_FILE_BYTES`] is refused as unreadable.
//!
//! # What an error shows
//!
//! A [`ConfigError`] names the file (when loaded from one), the entry index, the
//! server name when the entry has a valid one, and the field. It never contains an
//! `env` value, a URL, or text from the file other than key names and server names
//! (escaped and truncated). Its `Debug` output is the same safe text.

use std::collections::HashSet;
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use secrecy::SecretString;
use serde_json::{Map, Value};
use url::Url;

use crate::flows::ProjectionOptions;
use crate::session::ProtocolMode;

pub mod oauth;
use crate::limits::{Limits, OPTION_NAMES};
pub use oauth::{OAuthEntry, TokenStoreKind};

/// The largest server file [`load_server_file`] reads: 16 MiB.
pub const MAX_SERVER_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The limit options an HTTP entry accepts (the HTTP table: no `queueCapacity`, no
/// `maxStderrBytes`), in the order of [`OPTION_NAMES`].
pub const HTTP_OPTION_NAMES: [&str; OPTION_NAMES.len() - 2] = http_option_names();

/// [`OPTION_NAMES`] without the two that only a child process has.
const fn http_option_names() -> [&'static str; OPTION_NAMES.len() - 2] {
    const fn same(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut at = 0;
        while at < a.len() {
            if a[at] != b[at] {
                return false;
            }
            at += 1;
        }
        true
    }
    let mut names = [""; OPTION_NAMES.len() - 2];
    let (mut from, mut to) = (0, 0);
    while from < OPTION_NAMES.len() {
        let name = OPTION_NAMES[from];
        if !same(name, "queueCapacity") && !same(name, "maxStderrBytes") {
            names[to] = name;
            to += 1;
        }
        from += 1;
    }
    assert!(to == names.len(), "every HTTP option name is set");
    names
}

/// The most `roots` an entry may list.
pub const MAX_ROOTS: usize = 64;

const PROJECTION_FIELDS: [&str; 3] = ["include", "exclude", "namePrefix"];
/// Fields both kinds of entry accept.
const COMMON_FIELDS: [&str; 2] = ["protocol", "roots"];
const STDIO_FIELDS: [&str; 5] = ["server", "command", "args", "cwd", "env"];
const HTTP_FIELDS: [&str; 4] = ["server", "url", "bearerTokenEnv", "oauth"];

/// Longest server or key name echoed in a message, in bytes.
const MAX_ECHO_BYTES: usize = 64;

/// One decoded, validated entry of the server file.
#[derive(Debug, Clone)]
pub struct ServerEntry {
    /// The server's name: scopes its flow names (`mcp/<server>/<tool>`) and messages.
    pub server: String,
    /// How to reach the server.
    pub transport: EntryTransport,
    /// The limits, defaults overridden by the entry's fields.
    pub limits: Limits,
    /// Which tools to project and how to name them.
    pub projection: ProjectionOptions,
    /// Which protocol revisions may be spoken (`"protocol"`: `"auto"`, the
    /// default; `"legacy"`; `"2026-07-28"`).
    pub protocol: ProtocolMode,
    /// The workspace roots (`"roots"`: `file:` URIs) the CLI declares and serves
    /// when the server asks (`roots/list`); empty: none declared.
    pub roots: Vec<String>,
}

impl ServerEntry {
    /// True when this is a Streamable HTTP entry.
    pub fn is_http(&self) -> bool {
        matches!(self.transport, EntryTransport::Http(_))
    }
}

/// The transport half of a [`ServerEntry`].
#[derive(Debug, Clone)]
pub enum EntryTransport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio(StdioEntry),
    /// A Streamable HTTP endpoint.
    Http(HttpEntry),
}

/// A stdio server: the command to spawn.
///
/// `Debug` shows the environment's keys but never its values (they are
/// [`SecretString`]s), and the number of arguments but not the arguments (they
/// often carry credentials such as `--api-key X`).
#[derive(Clone)]
pub struct StdioEntry {
    /// The program to run (non-empty).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables to set for the child, sorted by key.
    pub env: Vec<(String, SecretString)>,
    /// The child's working directory, when given.
    pub cwd: Option<PathBuf>,
}

impl std::fmt::Debug for StdioEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let command = ("command", &self.command as &dyn std::fmt::Debug);
        crate::redact::debug_command(
            f,
            "StdioEntry",
            command,
            self.args.len(),
            &self.env,
            &self.cwd,
        )
    }
}

/// A Streamable HTTP server.
///
/// `Debug` prints the URL without its query or fragment (the URL never carries a
/// user or password: the decoder refuses one).
#[derive(Clone)]
pub struct HttpEntry {
    /// The MCP endpoint: absolute, `http` or `https`, no user or password.
    pub url: Url,
    /// The environment variable holding the bearer token, read by the HTTP transport
    /// when it is built (never by the decoder).
    pub bearer_token_env: Option<String>,
    /// OAuth 2.1, when the entry opts in (exclusive with `bearer_token_env`).
    pub oauth: Option<OAuthEntry>,
}

impl fmt::Debug for HttpEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = &self.url;
        let mut shown = format!("{}://{}", url.scheme(), url.host_str().unwrap_or(""));
        if let Some(port) = url.port() {
            shown.push_str(&format!(":{port}"));
        }
        shown.push_str(url.path());
        if url.query().is_some() {
            shown.push_str("?[redacted]");
        }
        f.debug_struct("HttpEntry")
            .field("url", &shown)
            .field("bearer_token_env", &self.bearer_token_env)
            .field("oauth", &self.oauth)
            .finish()
    }
}

/// Which of the contract's four failures a [`ConfigError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigErrorKind {
    /// The file does not exist.
    NotFound,
    /// The file exists but could not be read (permissions, a directory, too large,
    /// not UTF-8).
    Unreadable,
    /// The text is not valid JSON.
    NotJson,
    /// The JSON is not an array of valid entries.
    InvalidEntries,
}

/// A server file that is missing, unreadable, not JSON, or not an array of valid
/// entries: a usage error.
///
/// `Display` reads like
/// `server file /etc/mcp.json: entry 2 ("github"): maxTools must be a positive safe integer`.
/// The wording is not a stable contract; [`ConfigError::kind`] and the accessors are.
/// Converts into [`crate::Error`] with kind [`InvalidConfig`](crate::ErrorKind::InvalidConfig).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    kind: ConfigErrorKind,
    // Boxed: a `PathBuf` is a word larger on Windows, which took the error past
    // clippy's `result_large_err` there.
    path: Option<Box<Path>>,
    entry: Option<usize>,
    server: Option<String>,
    field: Option<String>,
    message: String,
}

impl ConfigError {
    fn new(kind: ConfigErrorKind, message: impl Into<String>) -> Self {
        ConfigError {
            kind,
            path: None,
            entry: None,
            server: None,
            field: None,
            message: message.into(),
        }
    }

    fn with_path(mut self, path: &Path) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Which of the four failures this is.
    pub fn kind(&self) -> ConfigErrorKind {
        self.kind
    }

    /// The file, when the error came from [`load_server_file`].
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The index (from 0) of the offending entry, when one entry is at fault.
    pub fn entry_index(&self) -> Option<usize> {
        self.entry
    }

    /// The offending entry's server name, when it has a valid one.
    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// The offending field (`maxTools`, `env`, `url`, ...), when one field is at fault.
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(path) = &self.path {
            write!(f, "server file {}: ", path.display())?;
        }
        if let Some(index) = self.entry {
            write!(f, "entry {index}")?;
            if let Some(server) = &self.server {
                write!(f, " ({})", Echo(server))?;
            }
            f.write_str(": ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl From<ConfigError> for crate::Error {
    fn from(err: ConfigError) -> Self {
        crate::Error::config(err.to_string())
    }
}

/// Displays untrusted file text (a key or server name) quoted, escaped, and
/// truncated to [`MAX_ECHO_BYTES`].
struct Echo<'a>(&'a str);

impl fmt::Display for Echo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0;
        if s.len() <= MAX_ECHO_BYTES {
            return write!(f, "{s:?}");
        }
        write!(f, "{:?}...", crate::error::truncate(s, MAX_ECHO_BYTES))
    }
}

/// Reads and decodes the server file at `path`.
///
/// Fails with a [`ConfigError`] naming `path` when the file is missing, cannot be
/// read (including a file over [`MAX_SERVER_FILE_BYTES`] or one that is not UTF-8),
/// is not JSON, or is not an array of valid entries.
pub fn load_server_file(path: &Path) -> Result<Vec<ServerEntry>, ConfigError> {
    let text = read_bounded(path).map_err(|e| e.with_path(path))?;
    decode_server_file(&text).map_err(|e| e.with_path(path))
}

fn read_bounded(path: &Path) -> Result<String, ConfigError> {
    let io_error = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ConfigError::new(ConfigErrorKind::NotFound, "not found")
        } else {
            ConfigError::new(
                ConfigErrorKind::Unreadable,
                format!("cannot be read ({})", e.kind()),
            )
        }
    };
    let file = std::fs::File::open(path).map_err(io_error)?;
    let mut bytes = Vec::new();
    file.take(MAX_SERVER_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > MAX_SERVER_FILE_BYTES {
        return Err(ConfigError::new(
            ConfigErrorKind::Unreadable,
            format!("cannot be read (larger than {MAX_SERVER_FILE_BYTES} bytes)"),
        ));
    }
    String::from_utf8(bytes)
        .map_err(|_| ConfigError::new(ConfigErrorKind::Unreadable, "cannot be read (not UTF-8)"))
}

/// Decodes the text of a server file: a JSON array of entries.
///
/// See the [module docs](self) for the rules. The error names the entry index,
/// server name and field, but no path (use [`load_server_file`] for that).
pub fn decode_server_file(text: &str) -> Result<Vec<ServerEntry>, ConfigError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        // serde_json's own message is not echoed: only its position.
        ConfigError::new(
            ConfigErrorKind::NotJson,
            format!(
                "not valid JSON (error at line {} column {})",
                e.line(),
                e.column()
            ),
        )
    })?;
    let Value::Array(items) = value else {
        return Err(ConfigError::new(
            ConfigErrorKind::InvalidEntries,
            format!(
                "must be a JSON array of server entries, not {}",
                type_name(&value)
            ),
        ));
    };
    let mut seen: HashSet<String> = HashSet::new();
    let mut entries = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let entry = decode_entry(item).map_err(|fault| {
            let mut err = ConfigError::new(ConfigErrorKind::InvalidEntries, fault.message);
            err.entry = Some(index);
            err.server = fault.server;
            err.field = fault.field;
            err
        })?;
        if !seen.insert(entry.server.clone()) {
            let mut err = ConfigError::new(
                ConfigErrorKind::InvalidEntries,
                "server name is used by an earlier entry; server names must be unique",
            );
            err.entry = Some(index);
            err.server = Some(entry.server);
            err.field = Some("server".to_owned());
            return Err(err);
        }
        entries.push(entry);
    }
    Ok(entries)
}

/// One entry's failure, before the index is attached.
struct Fault {
    server: Option<String>,
    field: Option<String>,
    message: String,
}

/// Names a JSON value's type for error texts (`a string`, `null`, ...). Also used
/// by the CLI's demo server; not part of the API.
#[doc(hidden)]
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Decodes one entry; every failure carries the server name when it is valid.
fn decode_entry(item: &Value) -> Result<ServerEntry, Fault> {
    let Value::Object(object) = item else {
        return Err(Fault {
            server: None,
            field: None,
            message: format!("must be an object, not {}", type_name(item)),
        });
    };
    let server = match object.get("server") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    };
    let fail = |field: &str, message: String| Fault {
        server: server.clone(),
        field: Some(field.to_owned()),
        message,
    };
    let Some(server_name) = server.clone() else {
        return Err(fail(
            "server",
            "server must be a non-empty string".to_owned(),
        ));
    };
    // The name is embedded in flow names and printed in messages and diagnostics
    // lines: it follows the tool-name rules (no `/`, no control, format or line
    // separator characters, not `.`/`..`) and their byte bound.
    if let Err(rule) =
        crate::catalog::check_tool_name(&server_name, crate::session::MAX_SERVER_NAME_BYTES)
    {
        return Err(Fault {
            server: None,
            field: Some("server".to_owned()),
            message: format!("server is not a valid name: {rule}"),
        });
    }

    let http = match (object.contains_key("command"), object.contains_key("url")) {
        (true, true) => {
            return Err(fail(
                "command",
                "an entry has either command (stdio) or url (HTTP), not both".to_owned(),
            ));
        }
        (false, false) => {
            return Err(fail(
                "command",
                "an entry needs command (stdio) or url (HTTP)".to_owned(),
            ));
        }
        (false, true) => true,
        (true, false) => false,
    };

    // Strict keys: anything not in this kind's table is refused.
    for key in object.keys() {
        let known = PROJECTION_FIELDS.contains(&key.as_str())
            || COMMON_FIELDS.contains(&key.as_str())
            || if http {
                HTTP_FIELDS.contains(&key.as_str()) || HTTP_OPTION_NAMES.contains(&key.as_str())
            } else {
                STDIO_FIELDS.contains(&key.as_str()) || OPTION_NAMES.contains(&key.as_str())
            };
        if !known {
            let what = if http { "an HTTP" } else { "a stdio" };
            return Err(fail(
                key,
                format!("unknown field {} in {what} entry", Echo(key)),
            ));
        }
    }

    let mut limits = Limits::default();
    let option_names: &[&str] = if http {
        &HTTP_OPTION_NAMES
    } else {
        &OPTION_NAMES
    };
    for name in option_names {
        if let Some(value) = object.get(*name) {
            limits
                .set_from_json(name, value)
                .map_err(|_| fail(name, format!("{name} must be a positive safe integer")))?;
        }
    }

    let projection = ProjectionOptions {
        include: string_array(object, "include")
            .map_err(|m| fail("include", m))?
            .unwrap_or_default(),
        exclude: string_array(object, "exclude")
            .map_err(|m| fail("exclude", m))?
            .unwrap_or_default(),
        name_prefix: match object.get("namePrefix") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(fail("namePrefix", "namePrefix must be a string".to_owned())),
        },
    };

    let protocol = match object.get("protocol") {
        None => ProtocolMode::default(),
        Some(Value::String(text)) => ProtocolMode::parse(text).ok_or_else(|| {
            fail(
                "protocol",
                "protocol must be \"auto\", \"legacy\" or \"2026-07-28\"".to_owned(),
            )
        })?,
        Some(_) => {
            return Err(fail(
                "protocol",
                "protocol must be \"auto\", \"legacy\" or \"2026-07-28\"".to_owned(),
            ));
        }
    };
    let roots = decode_roots(object).map_err(|m| fail("roots", m))?;

    let transport = if http {
        EntryTransport::Http(decode_http(object).map_err(|(field, m)| fail(field, m))?)
    } else {
        EntryTransport::Stdio(decode_stdio(object).map_err(|(field, m)| fail(&field, m))?)
    };

    Ok(ServerEntry {
        server: server_name,
        transport,
        limits,
        projection,
        protocol,
        roots,
    })
}

/// `roots`: at most [`MAX_ROOTS`] absolute `file:` URIs without query or fragment.
fn decode_roots(object: &Map<String, Value>) -> Result<Vec<String>, String> {
    let rule = "roots must be an array of file: URIs (no query or fragment)";
    let Some(roots) = string_array(object, "roots").map_err(|_| rule.to_owned())? else {
        return Ok(Vec::new());
    };
    if roots.len() > MAX_ROOTS {
        return Err(format!("roots lists more than {MAX_ROOTS} entries"));
    }
    for root in &roots {
        let url = Url::parse(root).map_err(|_| rule.to_owned())?;
        if url.scheme() != "file" || url.query().is_some() || url.fragment().is_some() {
            return Err(rule.to_owned());
        }
    }
    Ok(roots)
}

fn string_array(object: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, String> {
    match object.get(key) {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .map(Some)
            .ok_or_else(|| format!("{key} must be an array of strings")),
        Some(_) => Err(format!("{key} must be an array of strings")),
    }
}

/// A valid environment variable name: non-empty, no `=`, no NUL.
fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('=') && !name.contains('\0')
}

fn decode_stdio(object: &Map<String, Value>) -> Result<StdioEntry, (String, String)> {
    let command = match object.get("command") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => {
            return Err((
                "command".to_owned(),
                "command must be a non-empty string".to_owned(),
            ));
        }
    };
    let args = match string_array(object, "args") {
        Ok(Some(args)) => args,
        Ok(None) => {
            return Err((
                "args".to_owned(),
                "args is required for a stdio entry (an array of strings, possibly empty)"
                    .to_owned(),
            ));
        }
        Err(m) => return Err(("args".to_owned(), m)),
    };
    let cwd = match object.get("cwd") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(PathBuf::from(s)),
        Some(_) => {
            return Err((
                "cwd".to_owned(),
                "cwd must be a non-empty string".to_owned(),
            ));
        }
    };
    let env = match object.get("env") {
        None => Vec::new(),
        Some(Value::Object(vars)) => {
            let mut env = Vec::with_capacity(vars.len());
            for (key, value) in vars {
                if !valid_env_name(key) {
                    // The key is not echoed: a malformed `NAME=value` key may hold a secret.
                    return Err((
                        "env".to_owned(),
                        "env keys must be non-empty and contain no '=' or NUL".to_owned(),
                    ));
                }
                let Value::String(value) = value else {
                    return Err((
                        format!("env.{key}"),
                        format!("env value for {} must be a string", Echo(key)),
                    ));
                };
                env.push((key.clone(), SecretString::from(value.as_str())));
            }
            env.sort_by(|a, b| a.0.cmp(&b.0));
            env
        }
        Some(_) => {
            return Err((
                "env".to_owned(),
                "env must be an object of string values".to_owned(),
            ));
        }
    };
    Ok(StdioEntry {
        command,
        args,
        env,
        cwd,
    })
}

fn decode_http(object: &Map<String, Value>) -> Result<HttpEntry, (&'static str, String)> {
    const URL_RULE: &str = "url must be an absolute http: or https: URL without user or password";
    let Some(Value::String(text)) = object.get("url") else {
        return Err(("url", format!("{URL_RULE} (not a string)")));
    };
    // Neither the URL nor the parser's message is echoed: either may carry a secret.
    let url = Url::parse(text).map_err(|_| ("url", format!("{URL_RULE} (not an absolute URL)")))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(("url", format!("{URL_RULE} (scheme is not http or https)")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(("url", format!("{URL_RULE} (it has a user or password)")));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(("url", format!("{URL_RULE} (no host)")));
    }
    let bearer_token_env = match object.get("bearerTokenEnv") {
        None => None,
        Some(Value::String(name)) if valid_env_name(name) => Some(name.clone()),
        Some(_) => {
            return Err((
                "bearerTokenEnv",
                "bearerTokenEnv must be an environment variable name (non-empty, no '=' or NUL)"
                    .to_owned(),
            ));
        }
    };
    let oauth = object.get("oauth").map(oauth::decode).transpose()?;
    if oauth.is_some() && bearer_token_env.is_some() {
        return Err((
            "oauth",
            "oauth and bearerTokenEnv are exclusive: an entry uses one or the other".to_owned(),
        ));
    }
    Ok(HttpEntry {
        url,
        bearer_token_env,
        oauth,
    })
}

#[cfg(test)]
mod tests;
