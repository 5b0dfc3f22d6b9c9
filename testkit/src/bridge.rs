//! The scripted server's HTTP mode as a test sees it: [`Bridge`], the handle on
//! one running server, and the options and state the two exchange.
//!
//! `smthrs-mcp-scripted-server --http OPTIONS [--listen ADDR] [SCENARIO...]` takes
//! [`BridgeOptions`] as JSON, prints the address it bound as its first stdout
//! line, and answers `GET` [`STATE_PATH`] with [`BridgeState`] as JSON. The
//! behaviour each option selects is described in `src/http_bridge.rs`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, MutexGuard, mpsc};
use std::time::Duration;

/// The endpoint path the server serves.
pub const ENDPOINT: &str = "/mcp";

/// Where the server reports its [`BridgeState`] (never recorded as a request).
pub const STATE_PATH: &str = "/testkit/state";

/// How long [`Bridge::start`] waits for the server's address: a hang guard.
pub const STARTUP_WAIT: Duration = Duration::from_secs(30);

/// How long [`Bridge::state`] waits for the server's answer: a hang guard.
pub const STATE_WAIT: Duration = Duration::from_secs(30);

/// A running `smthrs-mcp-scripted-server --http`: the handle a test holds.
///
/// The handle holds the server's stdin: the server serves until it closes, so
/// however the test ends (its handle dropped, a panic, the test binary killed)
/// the server ends with it and kills its session children. Dropping the handle
/// also kills the server's process group (Unix), at once.
pub struct Bridge {
    process: Mutex<Child>,
    /// The write end of the server's stdin, closed when the handle drops.
    _stdin: ChildStdin,
    addr: SocketAddr,
}

impl Bridge {
    /// Starts `program` (the path of `smthrs-mcp-scripted-server`) in its HTTP
    /// mode on `127.0.0.1:0`; each session runs it on stdio with `args` (a
    /// scenario, `--record PATH`).
    ///
    /// # Panics
    ///
    /// When the server does not print its address within [`STARTUP_WAIT`] (its
    /// stderr, which the test run's stderr shows, says why).
    pub fn start(program: &str, args: Vec<OsString>, options: BridgeOptions) -> Bridge {
        Bridge::spawn(program, None, args, options)
    }

    /// [`Bridge::start`] on `addr`: a server restarted on the port of one
    /// stopped (dropped) a moment ago. The server keeps trying to bind for a few
    /// seconds while the old listener is being released.
    ///
    /// # Panics
    ///
    /// When the server does not start on `addr`.
    pub fn start_at(
        program: &str,
        addr: SocketAddr,
        args: Vec<OsString>,
        options: BridgeOptions,
    ) -> Bridge {
        Bridge::spawn(program, Some(addr), args, options)
    }

    fn spawn(
        program: &str,
        listen: Option<SocketAddr>,
        args: Vec<OsString>,
        options: BridgeOptions,
    ) -> Bridge {
        let mut command = Command::new(program);
        command
            .arg("--http")
            .arg(serde_json::to_string(&options).expect("the options serialize"));
        if let Some(addr) = listen {
            command.arg("--listen").arg(addr.to_string());
        }
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut process = command
            .spawn()
            .unwrap_or_else(|error| panic!("spawning the scripted HTTP server {program}: {error}"));
        let stdin = process.stdin.take().expect("piped stdin");
        let stdout = process.stdout.take().expect("piped stdout");
        // The server prints its address once bound, or exits saying why it cannot;
        // the read runs on a thread so that a server doing neither cannot hang the test.
        let (line_tx, line_rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = line_tx.send(line);
        });
        let line = line_rx.recv_timeout(STARTUP_WAIT);
        let Some(addr) = line
            .as_deref()
            .ok()
            .and_then(|line| line.trim().parse().ok())
        else {
            let _ = process.kill();
            let exit = process.wait();
            panic!(
                "the scripted HTTP server did not start within {STARTUP_WAIT:?} (it printed \
                 {line:?} and exited {exit:?}; its stderr is on the test run's stderr)"
            );
        };
        Bridge {
            process: Mutex::new(process),
            _stdin: stdin,
            addr,
        }
    }

    /// The endpoint URL, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{ENDPOINT}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the server has seen and run so far.
    ///
    /// # Panics
    ///
    /// When the server does not answer within [`STATE_WAIT`] (a hang guard).
    pub fn state(&self) -> BridgeState {
        let mut stream = TcpStream::connect(self.addr).unwrap_or_else(|error| {
            let exit = self.lock_process().try_wait();
            panic!("the scripted HTTP server does not answer ({error}; its exit: {exit:?})")
        });
        stream
            .set_read_timeout(Some(STATE_WAIT))
            .expect("a read timeout");
        write!(
            stream,
            "GET {STATE_PATH} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .expect("asking the scripted server for its state");
        let mut response = Vec::new();
        stream
            .read_to_end(&mut response)
            .expect("reading the scripted server's state");
        let head_end = response
            .windows(4)
            .position(|window| window == b"\r\n\r\n")
            .expect("an HTTP response head");
        assert!(
            response.starts_with(b"HTTP/1.1 200 "),
            "the state endpoint answered {:?}",
            String::from_utf8_lossy(&response[..head_end])
        );
        serde_json::from_slice(&response[head_end + 4..]).expect("the state is JSON")
    }

    fn lock_process(&self) -> MutexGuard<'_, Child> {
        self.process
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().requests
    }

    /// How many session children have not exited yet.
    pub fn children_alive(&self) -> usize {
        self.state().children_alive
    }

    /// How many session children were spawned in total.
    pub fn children_spawned(&self) -> usize {
        self.state().children_spawned
    }

    /// Modern era: ids of the requests whose client dropped the response before
    /// the answer arrived, in the order noticed.
    pub fn aborted(&self) -> Vec<Value> {
        self.state().aborted
    }

    /// Modern era: the `x-mcp-header` annotations learnt per tool from the
    /// `tools/list` answers, as `(header name, property)` pairs.
    pub fn learnt_headers(&self) -> HashMap<String, Vec<(String, String)>> {
        self.state().learnt_headers
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let process = self
            .process
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        #[cfg(unix)]
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_child(process),
            rustix::process::Signal::KILL,
        );
        let _ = process.kill();
        let _ = process.wait();
    }
}

/// How the HTTP server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BridgeOptions {
    /// Which generation of Streamable HTTP is served (default [`HttpEra::Legacy`]).
    pub era: HttpEra,
    /// Legacy era: how a sessionless `server/discover` is answered (default
    /// [`LegacyProbe::Forward`], as any other request).
    pub legacy_probe: LegacyProbe,
    /// Modern and dual eras: header checks, status mapping and the rest.
    pub modern: ModernOptions,
    /// Answer requests with `text/event-stream` (`true`, the default) or with
    /// `application/json` (the answer only; see the server's limitations).
    pub sse: bool,
    /// Issue `Mcp-Session-Id` on the `initialize` answer and require it afterwards
    /// (default `true`). When off, the most recent session serves every request,
    /// each `initialize` starts a new one, and `DELETE` is `405`.
    pub session_ids: bool,
    /// Offer the standalone GET stream (default `false`: `GET` is `405`).
    pub get_stream: bool,
}

impl Default for BridgeOptions {
    fn default() -> Self {
        BridgeOptions {
            era: HttpEra::Legacy,
            legacy_probe: LegacyProbe::Forward,
            modern: ModernOptions::default(),
            sse: true,
            session_ids: true,
            get_stream: false,
        }
    }
}

impl BridgeOptions {
    /// The modern (2026-07-28) endpoint with every check on, SSE answers.
    pub fn modern() -> BridgeOptions {
        BridgeOptions {
            era: HttpEra::Modern,
            ..BridgeOptions::default()
        }
    }

    /// A dual-era endpoint: legacy sessions for `initialize`, modern otherwise.
    pub fn dual() -> BridgeOptions {
        BridgeOptions {
            era: HttpEra::Dual,
            ..BridgeOptions::default()
        }
    }

    /// A legacy endpoint answering a sessionless `server/discover` as `probe` says.
    pub fn legacy_probe(probe: LegacyProbe) -> BridgeOptions {
        BridgeOptions {
            legacy_probe: probe,
            ..BridgeOptions::default()
        }
    }
}

/// Which generation of Streamable HTTP the server speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HttpEra {
    /// Sessions, `initialize`, GET stream, DELETE.
    #[default]
    Legacy,
    /// The stateless 2026-07-28 endpoint: one long-lived child, no sessions.
    Modern,
    /// `initialize` and session-carrying requests are legacy, the rest modern.
    Dual,
}

/// How a legacy endpoint answers a `server/discover` POST without a session id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum LegacyProbe {
    /// Like any other request (with session ids on: `400 missing Mcp-Session-Id`).
    #[default]
    Forward,
    /// `400`, `text/plain` body (a stateful Go server).
    PlainText400,
    /// `400`, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request:
    /// Server not initialized"},"id":null}` (TypeScript SDK v1).
    JsonRpc400,
    /// `200`, a JSON-RPC `-32601` for the probe's id (a stateless legacy server).
    MethodNotFound200,
    /// `404` without a body (an HTTP+SSE era server).
    NotFound404,
    /// `405` without a body (an HTTP+SSE era server).
    MethodNotAllowed405,
    /// `500`, `text/plain` (not era evidence: the client must not cache "legacy").
    ServerError500,
}

/// The modern endpoint's checks and quirks. Every check is on by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModernOptions {
    /// Send an `Mcp-Session-Id` on every response anyway (default `false`).
    pub send_session_id: bool,
    /// `MCP-Protocol-Version` must be present and equal `_meta`'s version.
    pub check_version_header: bool,
    /// `Mcp-Method` must be present and equal the body's `method`.
    pub check_method_header: bool,
    /// `Mcp-Name` must be present and equal `params.name` / `params.uri`.
    pub check_name_header: bool,
    /// `Mcp-Param-*` must mirror the tool's `x-mcp-header` arguments exactly.
    pub check_param_headers: bool,
    /// `-32022`/`-32021`/`-32020`/`-32602` → `400`, `-32601` → `404`.
    pub map_error_status: bool,
    /// SSE mode: how long to wait for the first line before committing to `200`
    /// (default 2 s; the window includes the start of a fresh child).
    pub status_wait: Duration,
    /// Write `notifications/cancelled` to the child when a client drops a
    /// request's response before its answer.
    pub cancel_on_disconnect: bool,
}

impl Default for ModernOptions {
    fn default() -> Self {
        ModernOptions {
            send_session_id: false,
            check_version_header: true,
            check_method_header: true,
            check_name_header: true,
            check_param_headers: true,
            map_error_status: true,
            status_wait: Duration::from_secs(2),
            cancel_on_disconnect: true,
        }
    }
}

/// One HTTP request as the server received it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// `POST`, `GET`, `DELETE`, ...
    pub method: String,
    /// The request path (with query, if any).
    pub path: String,
    /// Every header in arrival order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy UTF-8); empty for bodiless requests.
    pub body: String,
    /// The status answered (`None` while pending, or when the connection was
    /// dropped without a response).
    pub status: Option<u16>,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The body parsed as JSON, when it is.
    pub fn json(&self) -> Option<Value> {
        parse_json(self.body.as_bytes())
    }

    /// The JSON-RPC `method` of the body, when it has one.
    pub fn rpc_method(&self) -> Option<String> {
        self.json()?.get("method")?.as_str().map(String::from)
    }
}

/// What the HTTP server has seen and run so far.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct BridgeState {
    /// Every request received, in arrival order ([`STATE_PATH`] excepted).
    pub requests: Vec<RecordedRequest>,
    /// How many session children have not exited yet.
    pub children_alive: usize,
    /// How many session children were spawned in total.
    pub children_spawned: usize,
    /// Modern era: ids of the requests whose client dropped the response before
    /// the answer arrived, in the order noticed.
    pub aborted: Vec<Value>,
    /// Modern era: the `x-mcp-header` annotations learnt per tool from the
    /// `tools/list` answers, as `(header name, property)` pairs.
    pub learnt_headers: HashMap<String, Vec<(String, String)>>,
}

/// Parses JSON allowing the 128 containers an MCP frame may legally have
/// (serde_json's default recursion limit stops at 127).
pub fn parse_json(bytes: &[u8]) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let value = Value::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}
