//! The duplex transport against the scripted server, a real child process whose
//! pipes the test hands over (as a host does with `docker exec`), or reached
//! through a unix socket pair: both eras, the frame bound, the end of the
//! stream, the teardown (the server reads the end of its input and exits), and a
//! stream that cannot carry a second session.

mod support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use smthrs_mcp::{
    Client, DuplexTransport, Era, ErrorKind, HttpTransport, Limits, ProtocolMode, StdioCommand,
    Transport,
};
use support::{Server, args, inline, scenario, scripted_server};
use tokio::process::{Child, Command};

/// A guard against a hang, never a timing assertion.
const HANG: Duration = Duration::from_secs(30);

/// The scripted server as a child the test started itself, stderr discarded.
fn spawn(server: &Server) -> Child {
    Command::new(scripted_server())
        .args(&server.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the scripted server starts")
}

/// A duplex transport over the child's stdout (read) and stdin (written).
fn over_pipes(child: &mut Child) -> DuplexTransport {
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    DuplexTransport::new(stdout, stdin)
}

async fn connect(transport: DuplexTransport, limits: Limits, mode: ProtocolMode) -> Client {
    let builder = Client::builder("duplex").limits(limits).protocol(mode);
    support::connected(builder, transport).await
}

async fn echo(client: &Client, text: &str) -> smthrs_mcp::Result<String> {
    let result = tokio::time::timeout(HANG, client.call_tool("echo", args(json!({"text": text}))))
        .await
        .expect("a call does not hang")?;
    Ok(result.content[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned())
}

/// Connects over the child's pipes, calls, closes, and checks that closing
/// shut the writing half down: the server reads the end of its input and
/// exits by itself with status 0 (nothing killed it).
async fn round_trip(server: Server, era: Era) {
    let mut child = spawn(&server);
    let client = connect(
        over_pipes(&mut child),
        Limits::default(),
        ProtocolMode::Auto,
    )
    .await;
    assert_eq!(client.era(), era);
    assert!(client.catalog().get("echo").is_some());
    assert_eq!(
        echo(&client, "over a stream").await.unwrap(),
        "over a stream"
    );
    client.close().await;
    let status = tokio::time::timeout(HANG, child.wait())
        .await
        .expect("the server exits once its input ends")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn a_legacy_server_over_pipes_the_host_started() {
    round_trip(scenario("basic"), Era::Legacy).await;
}

#[tokio::test]
async fn a_2026_07_28_server_over_pipes_the_host_started() {
    round_trip(scenario("modern-basic"), Era::Modern).await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_behind_a_unix_socket() {
    // The test's end of the socket pair is pumped to and from a scripted server
    // child; the client holds the other end, as one stream.
    let (ours, theirs) = tokio::net::UnixStream::pair().unwrap();
    let mut child = spawn(&scenario("basic"));
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (mut from_client, mut to_client) = tokio::io::split(theirs);
    let inbound = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_client, &mut stdin).await;
        // The client shut its writing half down: the server's input ends.
    });
    let outbound = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut stdout, &mut to_client).await;
    });
    let client = connect(
        DuplexTransport::from_stream(ours),
        Limits::default(),
        ProtocolMode::Auto,
    )
    .await;
    assert_eq!(client.era(), Era::Legacy);
    for i in 0..10 {
        let text = format!("call {i}");
        assert_eq!(echo(&client, &text).await.unwrap(), text);
    }
    client.close().await;
    tokio::time::timeout(HANG, inbound)
        .await
        .expect("the client shut its writing half down")
        .unwrap();
    let status = tokio::time::timeout(HANG, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    outbound.abort();
}

#[tokio::test]
async fn a_line_past_max_frame_bytes_is_a_protocol_error() {
    // The server answers initialize with endless bytes and no newline: the
    // framer stops at the bound, as over stdio.
    let mut child = spawn(&scenario("flood-stdout"));
    let mut limits = Limits::default();
    limits.max_frame_bytes = 64 * 1024;
    // The framer's bound is the larger of maxFrameBytes and maxResourceBytes
    // (a resources/read reply may be that long).
    limits.max_resource_bytes = 64 * 1024;
    let error = tokio::time::timeout(
        HANG,
        Client::builder("duplex")
            .limits(limits)
            .protocol(ProtocolMode::Legacy)
            .connect(over_pipes(&mut child)),
    )
    .await
    .expect("no hang")
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ProtocolError, "{error}");
    assert!(
        error
            .to_string()
            .contains("of more than 65536 bytes; maxFrameBytes is 65536"),
        "{error}"
    );
}

#[tokio::test]
async fn the_end_of_the_stream_ends_the_session() {
    let mut child = spawn(&inline(json!({"on_call": {"echo": {"exit_code": 7}}})));
    let client = connect(
        over_pipes(&mut child),
        Limits::default(),
        ProtocolMode::Legacy,
    )
    .await;
    let error = echo(&client, "bye").await.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionClosed, "{error}");
    assert!(error.to_string().contains("stream closed"), "{error}");
    let terminal = client.terminal_error().expect("the session ended");
    assert_eq!(terminal.kind(), ErrorKind::ConnectionClosed);
}

#[tokio::test]
async fn a_stream_carries_one_session() {
    // A legacy server that exits when the probe asks for server/discover: over
    // stdio the engine starts it again; a stream cannot be opened twice, and
    // says so.
    let mut child = spawn(&scenario("legacy-probe-exit"));
    let error = tokio::time::timeout(
        HANG,
        Client::builder("duplex").connect(over_pipes(&mut child)),
    )
    .await
    .expect("no hang")
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::ConnectionClosed, "{error}");
    assert!(
        error
            .to_string()
            .contains("the duplex stream was already used"),
        "{error}"
    );

    // The same server, connected in the legacy era from the start, works.
    let mut child = spawn(&scenario("legacy-probe-exit"));
    let client = connect(
        over_pipes(&mut child),
        Limits::default(),
        ProtocolMode::Legacy,
    )
    .await;
    assert_eq!(echo(&client, "legacy").await.unwrap(), "legacy");
    client.close().await;
}

/// `Transport` is sealed, yet each public transport still boxes as a
/// `dyn Transport` (a host choosing its transport at run time, as the CLI does),
/// and a boxed one connects through `connect_boxed`.
#[tokio::test]
async fn a_boxed_transport_connects_through_connect_boxed() {
    let _choices: [Box<dyn Transport>; 2] = [
        Box::new(StdioCommand::new(scripted_server())),
        Box::new(
            HttpTransport::builder("boxed", "http://127.0.0.1:9/mcp")
                .build()
                .expect("builds"),
        ),
    ];

    let mut child = spawn(&scenario("basic"));
    let transport: Box<dyn Transport> = Box::new(over_pipes(&mut child));
    let client = tokio::time::timeout(HANG, Client::builder("boxed").connect_boxed(transport))
        .await
        .expect("connect does not hang")
        .expect("connects");
    assert_eq!(echo(&client, "boxed").await.unwrap(), "boxed");
    client.close().await;
}

/// A writer that records whether it was shut down.
struct Recorded<W> {
    inner: W,
    shut_down: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Recorded<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.shut_down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[tokio::test]
async fn closing_shuts_the_writing_half_down() {
    // A socket's writing half is not closed by dropping it while the reading
    // half lives on: the teardown shuts it down explicitly.
    let mut child = spawn(&scenario("basic"));
    let shut_down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = Recorded {
        inner: child.stdin.take().unwrap(),
        shut_down: shut_down.clone(),
    };
    let transport = DuplexTransport::new(child.stdout.take().unwrap(), writer);
    let client = connect(transport, Limits::default(), ProtocolMode::Legacy).await;
    assert_eq!(echo(&client, "x").await.unwrap(), "x");
    assert!(!shut_down.load(std::sync::atomic::Ordering::SeqCst));
    client.close().await;
    assert!(
        shut_down.load(std::sync::atomic::Ordering::SeqCst),
        "close() returned after the writing half was shut down"
    );
}

#[tokio::test]
async fn a_buffering_writer_is_flushed() {
    // A writer that holds bytes until flushed (as a TLS stream does): every
    // frame still reaches the server.
    let mut child = spawn(&scenario("basic"));
    let writer = tokio::io::BufWriter::with_capacity(64 * 1024, child.stdin.take().unwrap());
    let transport = DuplexTransport::new(child.stdout.take().unwrap(), writer);
    let client = connect(transport, Limits::default(), ProtocolMode::Auto).await;
    for i in 0..5 {
        let text = format!("buffered {i}");
        assert_eq!(echo(&client, &text).await.unwrap(), text);
    }
    client.close().await;
}
