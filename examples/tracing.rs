//! A session with a `tracing` subscriber installed: the crate's spans
//! (`mcp.connect`, `mcp.call`) and its end-of-session event, printed to stderr.
//!
//! ```text
//! cargo run --example tracing --features tracing
//! ```

use smthrs_mcp::{Client, StdioCommand};

#[tokio::main(flavor = "current_thread")]
async fn main() -> smthrs_mcp::Result<()> {
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(std::io::stderr)
        // One line per closed span, with its fields (revision, outcome, ...).
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .init();
    // The embedded demo server of this crate's CLI (target/<profile>/smthrs-mcp,
    // beside target/<profile>/examples/ where this example runs).
    let cli = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("smthrs-mcp")))
        .unwrap_or_else(|| "smthrs-mcp".into());
    let client = Client::builder("demo")
        .connect(StdioCommand::new(cli).arg("demo-server"))
        .await?;
    let mut args = serde_json::Map::new();
    args.insert("a".into(), 2.into());
    args.insert("b".into(), 3.into());
    let result = client.call_tool("add", args).await?;
    println!("{:?}", result.content);
    client.close().await;
    Ok(())
}
