//! One rule written once as `async fn rule(via: Via)` and run over stdio (the
//! scripted server as a child) and over Streamable HTTP (the same scripted server
//! in its `--http` mode), with the HTTP options each era needs.

use std::sync::{Arc, Mutex};

use secrecy::ExposeSecret;
use serde_json::Value;
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, ClientBuilder, DiagnosticEvent, DiagnosticObserver};
use smthrs_mcp_testkit::bridge::{Bridge, BridgeOptions, RecordedRequest};

use crate::support::{Recording, Server, guard, scripted_server, text_of};

/// Which transport a rule runs over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// The scripted server as a child process.
    Stdio,
    /// The scripted server behind the Streamable HTTP bridge.
    Http,
}

/// Runs each rule (`async fn rule(via: Via)` at the test file's root) once per
/// transport: `both_transports!(group: a, b)` as `group::stdio::a` and
/// `group::http::a`; `both_transports!(a, b)` as `stdio::a` and `http::a`.
#[allow(unused_macros)] // not every file runs rules over both transports
macro_rules! both_transports {
    ($group:ident: $($rule:ident),* $(,)?) => {
        mod $group {
            use super::*;
            $crate::support::eras::both_transports!($($rule),*);
        }
    };
    ($($rule:ident),* $(,)?) => {
        mod stdio {
            $(
                #[tokio::test]
                async fn $rule() {
                    super::$rule($crate::support::eras::Via::Stdio).await
                }
            )*
        }
        mod http {
            $(
                #[tokio::test]
                async fn $rule() {
                    super::$rule($crate::support::eras::Via::Http).await
                }
            )*
        }
    };
}
#[allow(unused_imports)]
pub(crate) use both_transports;

/// A connect attempt and whatever must outlive it (the HTTP bridge, the
/// recording of what the server received).
pub struct Attempt {
    pub result: smthrs_mcp::Result<Client>,
    pub bridge: Option<Bridge>,
    pub rec: Recording,
    pub events: Arc<Events>,
}

impl Attempt {
    /// The client; panics with the error when the connect failed.
    pub fn client(&self) -> &Client {
        match &self.result {
            Ok(client) => client,
            Err(error) => panic!("connect failed: {error:?}"),
        }
    }

    /// The connect error; panics when the connect succeeded.
    pub fn error(&self) -> smthrs_mcp::Error {
        match &self.result {
            Ok(client) => panic!("connect succeeded: {client:?}"),
            Err(error) => error.clone(),
        }
    }

    /// The bridge (HTTP only).
    pub fn bridge(&self) -> &Bridge {
        self.bridge.as_ref().expect("an HTTP attempt")
    }

    /// The HTTP requests the bridge received (empty over stdio).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.bridge
            .as_ref()
            .map(Bridge::requests)
            .unwrap_or_default()
    }

    /// The JSON-RPC messages the server process(es) received, in order.
    pub fn lines(&self) -> Vec<Value> {
        self.rec.lines()
    }

    /// The methods the server process(es) received, in order.
    pub fn methods(&self) -> Vec<String> {
        self.rec.methods()
    }

    /// The received messages with this method.
    pub fn received(&self, method: &str) -> Vec<Value> {
        self.lines()
            .into_iter()
            .filter(|line| line["method"] == method)
            .collect()
    }

    /// Closes the client, if one connected.
    pub async fn close(&self) {
        if let Ok(client) = &self.result {
            guard("close", client.close()).await;
        }
    }
}

/// Connects over `via`: over stdio to `server` directly, over HTTP through a
/// bridge started with `options` in front of the same command. The server
/// records what it receives; the diagnostics go to [`Attempt::events`].
pub async fn connect(
    via: Via,
    builder: ClientBuilder,
    server: Server,
    options: BridgeOptions,
) -> Attempt {
    let rec = Recording::new();
    let server = rec.attach(server);
    let events = Events::new();
    let builder = builder.diagnostics(events.clone());
    let (result, bridge) = match via {
        Via::Stdio => (
            guard("connect", builder.connect(server.stdio())).await,
            None,
        ),
        Via::Http => {
            let bridge = Bridge::start(scripted_server(), server.args, options);
            let transport = HttpTransport::builder("bridge", bridge.url())
                .build()
                .expect("an HTTP transport to the bridge");
            (
                guard("connect", builder.connect(transport)).await,
                Some(bridge),
            )
        }
    };
    Attempt {
        result,
        bridge,
        rec,
        events,
    }
}

/// Connects `builder`, pinned to `era`, to the scripted server running
/// `scenario` in `era` (its `era` key set here): over stdio, or behind the
/// bridge serving that era. Asserts the era the session speaks.
pub async fn connect_in_era(
    via: Via,
    era: smthrs_mcp::Era,
    builder: ClientBuilder,
    mut scenario: Value,
) -> Attempt {
    use smthrs_mcp::{Era, ProtocolMode};
    let (mode, options, script_era) = match era {
        Era::Modern => (ProtocolMode::Modern, BridgeOptions::modern(), "modern"),
        _ => (ProtocolMode::Legacy, BridgeOptions::default(), "legacy"),
    };
    scenario["era"] = serde_json::json!(script_era);
    let server = crate::support::inline(scenario);
    let attempt = connect(via, builder.protocol(mode), server, options).await;
    assert_eq!(attempt.client().era(), era);
    attempt
}

/// One diagnostic event, with the detail a test matches on (private values
/// exposed: this is a test).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// [`DiagnosticEvent::name`].
    pub name: &'static str,
    /// The remote error's code; the tool, method or version the event names.
    pub detail: String,
    /// The crate-authored reason (tool dropped, legacy fallback).
    pub reason: &'static str,
}

/// An observer keeping every event.
#[derive(Default)]
pub struct Events(Mutex<Vec<Event>>);

impl Events {
    pub fn new() -> Arc<Events> {
        Arc::new(Events::default())
    }

    pub fn all(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    pub fn named(&self, name: &str) -> Vec<Event> {
        self.all().into_iter().filter(|e| e.name == name).collect()
    }
}

impl DiagnosticObserver for Events {
    fn observe(&self, event: DiagnosticEvent) {
        let (detail, reason) = match &event {
            DiagnosticEvent::RemoteError { code, .. } => (code.to_string(), ""),
            DiagnosticEvent::ServerRequestDropped { method, .. } => {
                (method.expose_secret().to_string(), "")
            }
            DiagnosticEvent::ToolDropped { tool, reason, .. } => {
                (tool.expose_secret().to_string(), *reason)
            }
            DiagnosticEvent::LegacyFallback {
                version, reason, ..
            } => (version.to_string(), *reason),
            DiagnosticEvent::NotificationDropped { method, reason, .. } => {
                (method.to_string(), *reason)
            }
            _ => (String::new(), ""),
        };
        self.0.lock().unwrap().push(Event {
            name: event.name(),
            detail,
            reason,
        });
    }
}

/// The first content block's text parsed as JSON (the scripted server's reports).
pub fn report_of(result: &smthrs_mcp::ToolResult) -> Value {
    serde_json::from_str(&text_of(result)).expect("the result text is a JSON report")
}

/// Decodes `=?base64?...?=` (test side, independent of the library).
pub fn decode_header(value: &str) -> String {
    use base64::Engine as _;
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .expect("valid base64"),
        )
        .expect("UTF-8"),
        None => value.to_string(),
    }
}
