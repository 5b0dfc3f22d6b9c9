//! The `tracing` feature: every span and event of hostile sessions is captured,
//! and none holds a secret or server-authored text (`cargo test --features tracing
//! --test tracing`; `.ci/run` runs it).
#![cfg(feature = "tracing")]

mod support;

use std::sync::{Arc, Mutex};

use serde_json::json;
use smthrs_mcp::transport::http::HttpTransport;
use smthrs_mcp::{Client, ErrorKind, Limits};
use smthrs_mcp_testkit::bridge::{Bridge, BridgeOptions};
use support::*;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Secrets planted in the child's environment, arguments, stderr and results.
const ENV_SECRET: &str = "env-secret-Tr4cE9";
const ARG_SECRET: &str = "argument-secret-Kk2pQ7";
const STDERR_SECRET: &str = "ghp_SECRETSECRETSECRETSECRETSECRET1234";
const BEARER_SECRET: &str = "bearer-tok-Tq8wE3";
const SERVER_TEXT: &str = "Returns its `text` argument.";

/// Every span name, field name and value, and event, as text.
#[derive(Default, Clone)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Fields<'a>(&'a mut Vec<String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for Capture {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: Context<'_, S>,
    ) {
        let mut lines = self.0.lock().unwrap();
        lines.push(format!("span {}", attrs.metadata().name()));
        attrs.record(&mut Fields(&mut lines));
    }

    fn on_record(
        &self,
        _: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: Context<'_, S>,
    ) {
        values.record(&mut Fields(&mut self.0.lock().unwrap()));
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let mut lines = self.0.lock().unwrap();
        lines.push(format!("event {}", event.metadata().target()));
        event.record(&mut Fields(&mut lines));
    }
}

impl Capture {
    fn text(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }
}

fn install() -> (Capture, tracing::subscriber::DefaultGuard) {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    (capture, guard)
}

fn assert_clean(text: &str) {
    for secret in [
        ENV_SECRET,
        ARG_SECRET,
        STDERR_SECRET,
        BEARER_SECRET,
        SERVER_TEXT,
        "sk-live-SECRET",
    ] {
        assert!(
            !text.contains(secret),
            "{secret} reached a tracing field:\n{text}"
        );
    }
}

#[tokio::test]
async fn a_hostile_stdio_session_leaks_nothing_into_tracing() {
    let (capture, _guard) = install();
    let server = scenario("stderr-secrets").env("API_TOKEN", ENV_SECRET);
    let client = Client::builder("traced")
        .connect(server.stdio())
        .await
        .expect("connect");
    let ok = client
        .call_tool("add", args(json!({"a": 1, "b": 2, "note": ARG_SECRET})))
        .await;
    let error = client
        .call_tool("echo", args(json!({"text": ARG_SECRET})))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionClosed);
    client.close().await;
    let text = capture.text();
    assert_clean(&text);
    // What is there: the connect span with its revision, the call spans with
    // their outcomes, the end of the session.
    assert!(text.contains("span mcp.connect"), "{text}");
    assert!(text.contains("transport=\"stdio\""), "{text}");
    assert!(text.contains("revision=\"2025-06-18\""), "{text}");
    assert!(text.contains("fallback="), "{text}");
    assert!(
        text.contains("span mcp.call") && text.contains("tool=\"echo\""),
        "{text}"
    );
    assert!(text.contains("outcome=\"connection_closed\""), "{text}");
    assert!(text.contains("request_id="), "{text}");
    assert!(text.contains("kind=\"connection_closed\""), "{text}");
    let _ = ok;
}

#[tokio::test]
async fn a_modern_http_session_with_a_token_leaks_nothing_into_tracing() {
    let (capture, _guard) = install();
    let bridge = Bridge::start(
        scripted_server(),
        vec![scenario_path("modern-basic").into()],
        BridgeOptions::modern(),
    );
    let transport = HttpTransport::builder("traced", bridge.url())
        .bearer_token(smthrs_mcp::secrecy::SecretString::from(BEARER_SECRET))
        .build()
        .unwrap();
    let client = Client::builder("traced")
        .limits(Limits::default())
        .connect(transport)
        .await
        .expect("connect");
    let result = client
        .call_tool("echo", args(json!({"text": ARG_SECRET})))
        .await
        .unwrap();
    assert!(!result.is_error);
    client.close().await;
    let text = capture.text();
    assert_clean(&text);
    assert!(text.contains("transport=\"http\""), "{text}");
    assert!(text.contains("revision=\"2026-07-28\""), "{text}");
    assert!(text.contains("outcome=\"ok\""), "{text}");
    assert!(text.contains("duration_ms="), "{text}");
    assert!(text.contains("kind=\"connection_closed\""), "{text}");
}
