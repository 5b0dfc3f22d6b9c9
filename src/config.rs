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
pub use oauth::OAuthEntry;

/// The largest server file [`load_server_file`] reads: 16 MiB.
pub const MAX_SERVER_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The limit options an HTTP entry accepts (the HTTP table: no `queueCapacity`, no
/// `maxStderrBytes`).
pub const HTTP_OPTION_NAMES: [&str; 17] = [
    "handshakeTimeoutMs",
    "requestTimeoutMs",
    "maxFrameBytes",
    "maxOutboundFrameBytes",
    "maxTools",
    "maxToolNameBytes",
    "maxCatalogPages",
    "maxToolDocumentBytes",
    "probeTimeoutMs",
    "maxInputRounds",
    "maxRequestStateBytes",
    "maxParamHeaders",
    "maxParamHeaderBytes",
    "inputTimeoutMs",
    "maxElicitationMessageBytes",
    "maxElicitationFields",
    "maxSamplingMessages",
];

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
        f.debug_struct("StdioEntry")
            .field("command", &self.command)
            .field("args", &format_args!("<{} withheld>", self.args.len()))
            .field(
                "env",
                &self.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
            )
            .field("cwd", &self.cwd)
            .finish()
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
    path: Option<PathBuf>,
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
        self.path = Some(path.to_path_buf());
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
        let mut end = MAX_ECHO_BYTES;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        write!(f, "{:?}...", &s[..end])
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

fn type_name(value: &Value) -> &'static str {
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
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    fn one(entry: &str) -> Result<ServerEntry, ConfigError> {
        decode_server_file(&format!("[{entry}]")).map(|mut v| v.remove(0))
    }

    fn fails(entry: &str, field: &str) -> ConfigError {
        let err = one(entry).unwrap_err();
        assert_eq!(err.kind(), ConfigErrorKind::InvalidEntries, "{err}");
        assert_eq!(err.entry_index(), Some(0), "{err}");
        assert_eq!(err.field(), Some(field), "{err}");
        assert!(err.to_string().starts_with("entry 0"), "{err}");
        err
    }

    fn stdio(extra: &str) -> String {
        format!(r#"{{"server": "s", "command": "node", "args": []{extra}}}"#)
    }

    fn http(extra: &str) -> String {
        format!(r#"{{"server": "h", "url": "https://mcp.example/mcp"{extra}}}"#)
    }

    #[test]
    fn good_stdio_entry() {
        let entry = one(
            r#"{"server": "github", "command": "/bin/gh-mcp", "args": ["--x", "y"],
                "env": {"TOKEN": "ghp_secret", "A": "1"}, "cwd": "/srv",
                "requestTimeoutMs": 30000, "queueCapacity": 8, "maxStderrBytes": 10,
                "include": ["a", "b"], "exclude": ["b"], "namePrefix": "gh"}"#,
        )
        .unwrap();
        assert_eq!(entry.server, "github");
        assert!(!entry.is_http());
        assert_eq!(entry.limits.request_timeout_ms, 30_000);
        assert_eq!(entry.limits.queue_capacity, 8);
        assert_eq!(entry.limits.max_stderr_bytes, 10);
        assert_eq!(entry.limits.max_tools, crate::limits::DEFAULT_MAX_TOOLS);
        assert_eq!(entry.projection.include, ["a", "b"]);
        assert_eq!(entry.projection.exclude, ["b"]);
        assert_eq!(entry.projection.name_prefix.as_deref(), Some("gh"));
        let EntryTransport::Stdio(s) = &entry.transport else {
            panic!("stdio expected")
        };
        assert_eq!(s.command, "/bin/gh-mcp");
        assert_eq!(s.args, ["--x", "y"]);
        assert_eq!(s.cwd.as_deref(), Some(Path::new("/srv")));
        let env: Vec<_> = s
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.expose_secret()))
            .collect();
        assert_eq!(env, [("A", "1"), ("TOKEN", "ghp_secret")]);
        assert!(!format!("{entry:?}").contains("ghp_secret"));
    }

    #[test]
    fn good_http_entry() {
        let entry = one(
            r#"{"server": "tracker", "url": "https://mcp.tracker.example:8443/mcp?key=sekrit",
                "bearerTokenEnv": "TRACKER_MCP_TOKEN", "maxTools": 9, "handshakeTimeoutMs": 5,
                "namePrefix": ""}"#,
        )
        .unwrap();
        assert!(entry.is_http());
        assert_eq!(entry.limits.max_tools, 9);
        assert_eq!(entry.limits.handshake_timeout_ms, 5);
        // Empty prefix is decoded; the checked projection constructor refuses it.
        assert_eq!(entry.projection.name_prefix.as_deref(), Some(""));
        assert!(entry.projection.validate().is_err());
        let EntryTransport::Http(h) = &entry.transport else {
            panic!("http expected")
        };
        assert_eq!(h.url.host_str(), Some("mcp.tracker.example"));
        assert_eq!(h.bearer_token_env.as_deref(), Some("TRACKER_MCP_TOKEN"));
        let debug = format!("{entry:?}");
        assert!(!debug.contains("sekrit"), "{debug}");
        assert!(
            debug.contains("https://mcp.tracker.example:8443/mcp?[redacted]"),
            "{debug}"
        );
        // Minimal HTTP entry.
        let entry = one(r#"{"server": "h", "url": "http://127.0.0.1:9/"}"#).unwrap();
        assert!(entry.is_http());
    }

    #[test]
    fn empty_array_is_zero_servers() {
        assert!(decode_server_file("[]").unwrap().is_empty());
    }

    #[test]
    fn max_tools_must_be_a_positive_safe_integer() {
        for bad in [
            "0",
            "-1",
            "1.5",
            "9007199254740992",
            "\"5\"",
            "null",
            "1e300",
        ] {
            let err = fails(&stdio(&format!(r#", "maxTools": {bad}"#)), "maxTools");
            assert_eq!(
                err.to_string(),
                r#"entry 0 ("s"): maxTools must be a positive safe integer"#
            );
            fails(&http(&format!(r#", "maxTools": {bad}"#)), "maxTools");
        }
        assert_eq!(
            one(&stdio(r#", "maxTools": 9007199254740991"#))
                .unwrap()
                .limits
                .max_tools,
            9_007_199_254_740_991
        );
    }

    #[test]
    fn every_limit_is_checked_by_name() {
        for name in OPTION_NAMES {
            let err = fails(&stdio(&format!(r#", "{name}": 0"#)), name);
            assert!(err.to_string().contains(name));
        }
        for name in HTTP_OPTION_NAMES {
            fails(&http(&format!(r#", "{name}": -3"#)), name);
        }
    }

    #[test]
    fn http_refuses_stdio_only_fields() {
        for extra in [
            r#", "queueCapacity": 4"#,
            r#", "maxStderrBytes": 4"#,
            r#", "args": []"#,
            r#", "env": {}"#,
            r#", "cwd": "/x""#,
        ] {
            let err = one(&http(extra)).unwrap_err();
            assert!(err.to_string().contains("unknown field"), "{err}");
        }
        // And stdio refuses HTTP-only ones.
        let err = fails(&stdio(r#", "bearerTokenEnv": "T""#), "bearerTokenEnv");
        assert!(err.to_string().contains("unknown field"));
    }

    #[test]
    fn unknown_key_is_an_error() {
        let err = fails(&stdio(r#", "maxtools": 5"#), "maxtools");
        assert_eq!(
            err.to_string(),
            r#"entry 0 ("s"): unknown field "maxtools" in a stdio entry"#
        );
    }

    #[test]
    fn command_and_url_together_or_neither() {
        fails(
            r#"{"server": "s", "command": "x", "args": [], "url": "https://a.example/"}"#,
            "command",
        );
        fails(r#"{"server": "s", "args": []}"#, "command");
    }

    #[test]
    fn server_is_required_and_non_empty() {
        for entry in [
            r#"{"command": "x", "args": []}"#,
            r#"{"server": "", "command": "x", "args": []}"#,
            r#"{"server": 5, "command": "x", "args": []}"#,
        ] {
            let err = fails(entry, "server");
            assert!(err.server().is_none());
            assert_eq!(
                err.to_string(),
                "entry 0: server must be a non-empty string"
            );
        }
    }

    #[test]
    fn command_must_be_a_non_empty_string() {
        fails(r#"{"server": "s", "command": "", "args": []}"#, "command");
        fails(
            r#"{"server": "s", "command": ["x"], "args": []}"#,
            "command",
        );
    }

    #[test]
    fn args_is_required_and_must_be_strings() {
        let err = fails(r#"{"server": "s", "command": "x"}"#, "args");
        assert!(err.to_string().contains("args is required"));
        fails(r#"{"server": "s", "command": "x", "args": [1]}"#, "args");
        fails(r#"{"server": "s", "command": "x", "args": "a b"}"#, "args");
    }

    #[test]
    fn cwd_must_be_non_empty() {
        fails(&stdio(r#", "cwd": """#), "cwd");
        fails(&stdio(r#", "cwd": 1"#), "cwd");
    }

    #[test]
    fn env_must_be_string_values_and_valid_keys_and_never_echoes_values() {
        let err = fails(&stdio(r#", "env": {"TOKEN": 12345}"#), "env.TOKEN");
        assert!(!err.to_string().contains("12345"));
        fails(&stdio(r#", "env": ["A=1"]"#), "env");
        for key in ["", "A=ghp_sekrit", "A\\u0000B"] {
            let err = fails(&stdio(&format!(r#", "env": {{"{key}": "v"}}"#)), "env");
            assert!(!err.to_string().contains("sekrit"), "{err}");
            assert!(!format!("{err:?}").contains("sekrit"), "{err:?}");
        }
        // A later field's failure does not reveal earlier env values either.
        let err = one(&stdio(r#", "env": {"TOKEN": "ghp_sekrit"}, "cwd": """#)).unwrap_err();
        assert!(!err.to_string().contains("sekrit"));
        assert!(!format!("{err:?}").contains("sekrit"));
        let err = crate::Error::from(err);
        assert!(!format!("{err:?}").contains("sekrit"));
    }

    #[test]
    fn url_rules() {
        for (url, needle) in [
            ("https://user:pw@a.example/mcp", "user or password"),
            ("https://user@a.example/mcp", "user or password"),
            ("ftp://a.example/mcp", "scheme"),
            ("file:///etc/passwd", "scheme"),
            ("/mcp", "not an absolute URL"),
            ("a.example/mcp", "not an absolute URL"),
            ("", "not an absolute URL"),
        ] {
            let err = fails(&format!(r#"{{"server": "h", "url": "{url}"}}"#), "url");
            let text = err.to_string();
            assert!(text.contains(needle), "{url}: {text}");
            assert!(!text.contains("pw@") && !text.contains("user@"), "{text}");
        }
        fails(r#"{"server": "h", "url": 5}"#, "url");
    }

    #[test]
    fn bearer_token_env_must_be_a_name() {
        for bad in [r#""""#, r#""A=B""#, r#""A\u0000""#, "5"] {
            fails(
                &http(&format!(r#", "bearerTokenEnv": {bad}"#)),
                "bearerTokenEnv",
            );
        }
    }

    #[test]
    fn projection_fields_are_typed() {
        fails(&stdio(r#", "include": "a""#), "include");
        fails(&stdio(r#", "exclude": [1]"#), "exclude");
        fails(&http(r#", "namePrefix": 3"#), "namePrefix");
    }

    #[test]
    fn duplicate_servers_and_non_objects_fail() {
        let text = format!(
            r#"[{}, {{"server": "s", "url": "http://127.0.0.1:1/mcp"}}]"#,
            stdio("")
        );
        let err = decode_server_file(&text).unwrap_err();
        assert_eq!(err.entry_index(), Some(1));
        assert_eq!(err.field(), Some("server"));
        assert_eq!(err.server(), Some("s"));
        assert!(err.to_string().contains("unique"), "{err}");

        let err = decode_server_file(&format!("[{}, 5]", stdio(""))).unwrap_err();
        assert_eq!(err.entry_index(), Some(1));
        assert_eq!(err.to_string(), "entry 1: must be an object, not a number");
        let err = decode_server_file("[null]").unwrap_err();
        assert_eq!(err.to_string(), "entry 0: must be an object, not null");
    }

    #[test]
    fn not_an_array_and_not_json() {
        let err = decode_server_file(&stdio("")).unwrap_err();
        assert_eq!(err.kind(), ConfigErrorKind::InvalidEntries);
        assert!(err.to_string().contains("must be a JSON array"));
        let err = decode_server_file(r#"[{"server": "s", "env": {"T": "ghp_x"#).unwrap_err();
        assert_eq!(err.kind(), ConfigErrorKind::NotJson);
        assert!(!err.to_string().contains("ghp_x"));
    }

    #[test]
    fn long_server_names_are_truncated_in_messages() {
        let name = "n".repeat(500);
        let err = one(&format!(
            r#"{{"server": "{name}", "command": "x", "args": [], "maxTools": 0}}"#
        ))
        .unwrap_err();
        assert!(err.to_string().len() < 200, "{err}");
        // Over 128 bytes the name itself is refused (it is embedded in flow names).
        assert_eq!(err.field(), Some("server"));
        assert!(
            err.to_string().contains("server is not a valid name"),
            "{err}"
        );
    }

    #[test]
    fn load_names_the_path_for_each_failure() {
        let dir = tempfile::tempdir().unwrap();

        let missing = dir.path().join("missing.json");
        let err = load_server_file(&missing).unwrap_err();
        assert_eq!(err.kind(), ConfigErrorKind::NotFound);
        assert_eq!(err.path(), Some(missing.as_path()));
        assert_eq!(
            err.to_string(),
            format!("server file {}: not found", missing.display())
        );

        // A directory cannot be read as a file.
        let err = load_server_file(dir.path()).unwrap_err();
        assert_eq!(err.kind(), ConfigErrorKind::Unreadable, "{err}");

        let not_utf8 = dir.path().join("latin1.json");
        std::fs::write(&not_utf8, b"[\xff]").unwrap();
        assert_eq!(
            load_server_file(&not_utf8).unwrap_err().kind(),
            ConfigErrorKind::Unreadable
        );

        let entries = dir.path().join("entries.json");
        std::fs::write(&entries, format!("[{}, {}]", stdio(""), http(""))).unwrap();
        assert_eq!(load_server_file(&entries).unwrap().len(), 2);
    }

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/config")
            .join(name)
    }

    #[test]
    fn fixtures() {
        let good = load_server_file(&fixture("good.json")).unwrap();
        let names: Vec<&str> = good.iter().map(|e| e.server.as_str()).collect();
        assert_eq!(names, ["github", "reports", "tracker"]);
        assert_eq!(good[0].projection.exclude, ["delete_repository"]);
        assert_eq!(good[1].limits.request_timeout_ms, 30_000);
        assert!(good[2].is_http());
        assert!(!format!("{good:?}").contains("ghp_example"));

        let prefix = load_server_file(&fixture("empty-name-prefix.json")).unwrap();
        assert!(prefix[0].projection.validate().is_err());

        let path = fixture("bad-max-tools-zero.json");
        let err = load_server_file(&path).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                r#"server file {}: entry 1 ("github"): maxTools must be a positive safe integer"#,
                path.display()
            )
        );
        assert_eq!(
            crate::Error::from(err).kind(),
            crate::ErrorKind::InvalidConfig
        );

        for (name, kind, entry, field) in [
            (
                "bad-command-and-url.json",
                ConfigErrorKind::InvalidEntries,
                Some(0),
                Some("command"),
            ),
            (
                "bad-url-userinfo.json",
                ConfigErrorKind::InvalidEntries,
                Some(0),
                Some("url"),
            ),
            (
                "bad-unknown-key.json",
                ConfigErrorKind::InvalidEntries,
                Some(0),
                Some("maxtools"),
            ),
            (
                "bad-missing-args.json",
                ConfigErrorKind::InvalidEntries,
                Some(0),
                Some("args"),
            ),
            (
                "bad-env-value.json",
                ConfigErrorKind::InvalidEntries,
                Some(0),
                Some("cwd"),
            ),
            (
                "bad-duplicate-server.json",
                ConfigErrorKind::InvalidEntries,
                Some(1),
                Some("server"),
            ),
            ("bad-not-json.json", ConfigErrorKind::NotJson, None, None),
            (
                "bad-not-an-array.json",
                ConfigErrorKind::InvalidEntries,
                None,
                None,
            ),
        ] {
            let path = fixture(name);
            let err = load_server_file(&path).unwrap_err();
            assert_eq!(err.kind(), kind, "{name}: {err}");
            assert_eq!(err.entry_index(), entry, "{name}: {err}");
            assert_eq!(err.field(), field, "{name}: {err}");
            let text = format!("{err} {err:?}");
            assert!(text.contains(&path.display().to_string()), "{text}");
            for secret in ["hunter2", "ghp_secret_value", "user:"] {
                assert!(!text.contains(secret), "{name}: {text}");
            }
        }
    }
}
