//! `--group`: many servers from one process.
//!
//! - **The CLI.** `smthrs-mcp --mcp-config FILE tools` over 1, 10 and 100
//!   servers: stdio (each entry the CLI's own `demo-server`) and Streamable HTTP
//!   (each entry the test kit's HTTP echo server, one process, one origin, as
//!   servers behind a gateway are). The whole process is timed (spawn to exit);
//!   its peak RSS comes from `/usr/bin/time -f %M` when that is installed (the
//!   column is `-` otherwise). Every run's output is checked: a JSON array of
//!   N times one server's flows.
//! - **The group's knobs**, in the role `group` (a `ClientGroup` built as the
//!   CLI builds one: `auto`, one `SharedHttpClient`, the era cache, a
//!   current-thread runtime), 100 servers: `max_concurrent_connects` 1, 8 (the
//!   default) and 100; the shared pool against a client per transport (with the
//!   TCP connections the echo server accepted, from its `GET /stats`); the era
//!   cache on and off against a legacy-only HTTP server (`--legacy-only`: every
//!   `auto` connect is probed, then falls back); and stdio servers that spin the
//!   CPU for 100 ms before reading anything (`--startup-ms`, as slow as a
//!   `node` server), bounded and not, with how many of the dual-era sessions
//!   fell back to legacy because their probe timed out. The role reports its
//!   wall time from before the first connect to after the last close, and its
//!   own peak RSS.
//!
//! Each figure is the median over the rounds (`--rounds`, default 5; `--quick`:
//! 1). `--only SUBSTRING` picks rows by name.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{HttpServer, Options, Transport, fail, median, peak_rss_kib, report, run_role, wanted};
use smthrs_mcp_testkit::echo::Shape;

/// The server counts of the CLI table.
const COUNTS: [usize; 3] = [1, 10, 100];
/// The server count of the knob table.
const KNOB_SERVERS: usize = 100;
/// The longest one measured process may take.
const LIMIT: Duration = Duration::from_secs(120);

/// The CLI built with the harness (cargo builds the binaries for benches).
fn cli() -> &'static str {
    env!("CARGO_BIN_EXE_smthrs-mcp")
}

/// One row of a table: medians of wall ms and peak KiB (0: not known), and
/// what else the row reports.
struct Row {
    name: String,
    ms: f64,
    rss_kib: f64,
    note: String,
}

pub fn orchestrate(options: &Options) {
    let rounds = options.rounds.unwrap_or(if options.quick { 1 } else { 5 });
    eprintln!(
        "harness --group: {rounds} round(s); load average {}",
        crate::load_average()
    );
    let dual = HttpServer::start(Shape::default());
    let legacy = HttpServer::start(Shape {
        legacy_only: true,
        ..Shape::default()
    });
    let dir = std::env::temp_dir().join(format!("smthrs-group-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let timer = Path::new("/usr/bin/time").exists();
    let mut failures = Vec::new();

    let mut cli_rows = Vec::new();
    let mut per_server: [Option<usize>; 2] = [None, None];
    for (t, transport) in [Transport::Stdio, Transport::Http].into_iter().enumerate() {
        for count in COUNTS {
            let name = format!("tools, {count} {} servers", kind_name(transport));
            if !wanted(options, &[&name]) {
                continue;
            }
            let file = dir.join(format!("{}-{count}.json", kind_name(transport)));
            write_config(&file, transport, count, &dual.base);
            let mut ms = Vec::new();
            let mut kib = Vec::new();
            for _ in 0..rounds {
                match run_cli(&file, &dir, timer) {
                    Ok((elapsed, peak, flows)) => {
                        let one = *per_server[t].get_or_insert(flows / count.max(1));
                        if flows != one * count || one == 0 {
                            failures
                                .push(format!("{name}: {flows} flows, expected {count} x {one}"));
                        }
                        ms.push(elapsed);
                        kib.push(peak);
                    }
                    Err(error) => failures.push(format!("{name}: {error}")),
                }
            }
            eprintln!("  {name}: {:.1} ms", median(&ms));
            cli_rows.push(Row {
                name,
                ms: median(&ms),
                rss_kib: median(&kib),
                note: String::new(),
            });
        }
    }

    let mut knob_rows = Vec::new();
    let n = KNOB_SERVERS.to_string();
    let knobs: Vec<(String, Vec<String>)> = vec![
        knob(
            "stdio, max 1",
            &["--transport", "stdio", "--max-connects", "1"],
        ),
        knob(
            "stdio, max 8 (default)",
            &["--transport", "stdio", "--max-connects", "8"],
        ),
        knob(
            "stdio, max 100",
            &["--transport", "stdio", "--max-connects", "100"],
        ),
        knob(
            "stdio, 100 ms CPU at start, max 8",
            &[
                "--transport",
                "stdio",
                "--max-connects",
                "8",
                "--startup-ms",
                "100",
            ],
        ),
        knob(
            "stdio, 100 ms CPU at start, max 100",
            &[
                "--transport",
                "stdio",
                "--max-connects",
                "100",
                "--startup-ms",
                "100",
            ],
        ),
        knob("http, max 8, shared pool", &http_args(&dual.base, "8", &[])),
        knob(
            "http, max 8, a pool each",
            &http_args(&dual.base, "8", &["--own-pools"]),
        ),
        knob(
            "http, max 100, shared pool",
            &http_args(&dual.base, "100", &[]),
        ),
        knob(
            "http, max 100, a pool each",
            &http_args(&dual.base, "100", &["--own-pools"]),
        ),
        knob(
            "http legacy-only, era cache",
            &http_args(&legacy.base, "8", &["--legacy-only"]),
        ),
        knob(
            "http legacy-only, no era cache",
            &http_args(&legacy.base, "8", &["--legacy-only", "--no-era-cache"]),
        ),
    ];
    for (name, args) in knobs {
        if !wanted(options, &[&name]) {
            continue;
        }
        let mut role = vec!["group".to_string(), "--servers".into(), n.clone()];
        role.extend(args);
        let mut ms = Vec::new();
        let mut kib = Vec::new();
        let mut connections = Vec::new();
        let mut legacy = Vec::new();
        let mut probes = Vec::new();
        let mut failed = 0;
        for _ in 0..rounds {
            match run_role(&role, LIMIT) {
                Ok(value) => {
                    ms.push(value["ms"].as_f64().unwrap_or(f64::NAN));
                    kib.push(value["rss_kib"].as_f64().unwrap_or(0.0));
                    if let Some(c) = value["connections"].as_f64() {
                        connections.push(c);
                    }
                    legacy.push(value["legacy"].as_f64().unwrap_or(0.0));
                    if let Some(p) = value["probes"].as_f64() {
                        probes.push(p);
                    }
                }
                // A slow start under no bound may time a handshake out: that
                // is the row's finding, not the harness's failure.
                Err(error) if name.contains("CPU at start") => {
                    eprintln!("  {name}: {error}");
                    failed += 1;
                }
                Err(error) => failures.push(format!("{name}: {error}")),
            }
        }
        eprintln!("  {name}: {:.1} ms", median(&ms));
        let mut notes = Vec::new();
        if failed > 0 {
            notes.push(format!(
                "{failed} of {rounds} runs failed: a handshake timed out"
            ));
        }
        if !connections.is_empty() {
            notes.push(format!("{:.0} TCP connections", median(&connections)));
        }
        if !probes.is_empty() {
            notes.push(format!("{:.0} probes", median(&probes)));
        }
        // The echo server speaks 2026-07-28 unless `--legacy-only`: a legacy
        // session with it is a probe that timed out.
        if !name.contains("legacy-only") && legacy.iter().any(|&l| l > 0.0) {
            let most = legacy.iter().copied().fold(0.0, f64::max);
            notes.push(format!("up to {most:.0} sessions fell back to legacy"));
        }
        let note = notes.join("; ");
        knob_rows.push(Row {
            name,
            ms: median(&ms),
            rss_kib: median(&kib),
            note,
        });
    }
    let _ = std::fs::remove_dir_all(&dir);

    let mut out = String::new();
    out += &format!("{}\n\n", crate::command_line());
    out += &format!("`smthrs-mcp tools` (whole process), {rounds} round(s), medians\n\n");
    out += "| servers | wall ms | peak RSS MiB |\n| --- | ---: | ---: |\n";
    for row in &cli_rows {
        out += &format!("| {} | {:.1} | {} |\n", row.name, row.ms, mib(row.rss_kib));
    }
    out += &format!(
        "\n`ClientGroup` knobs, {KNOB_SERVERS} servers (role `group`), {rounds} round(s), medians\n\n"
    );
    out += "| variant | wall ms | peak RSS MiB | |\n| --- | ---: | ---: | --- |\n";
    for row in &knob_rows {
        out += &format!(
            "| {} | {:.1} | {} | {} |\n",
            row.name,
            row.ms,
            mib(row.rss_kib),
            row.note
        );
    }
    println!("{out}");
    for failure in &failures {
        eprintln!("harness --group: FAILED {failure}");
    }
    if !failures.is_empty() {
        std::process::exit(1);
    }
}

fn kind_name(transport: Transport) -> &'static str {
    match transport {
        Transport::Stdio => "stdio",
        _ => "HTTP",
    }
}

fn mib(kib: f64) -> String {
    if kib > 0.0 {
        format!("{:.1}", kib / 1024.0)
    } else {
        "-".into()
    }
}

fn knob(name: &str, args: &[&str]) -> (String, Vec<String>) {
    (name.into(), args.iter().map(|a| a.to_string()).collect())
}

fn http_args<'a>(base: &'a str, max: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--transport",
        "http",
        "--http-base",
        base,
        "--max-connects",
        max,
    ];
    args.extend_from_slice(extra);
    args
}

/// The server file of `count` entries.
fn write_config(path: &Path, transport: Transport, count: usize, base: &str) {
    let entries: Vec<Value> = (0..count)
        .map(|i| match transport {
            Transport::Stdio => {
                json!({"server": format!("demo-{i}"), "command": cli(), "args": ["demo-server"]})
            }
            _ => json!({"server": format!("echo-{i}"), "url": format!("{base}/mcp")}),
        })
        .collect();
    std::fs::write(path, serde_json::to_vec(&entries).expect("JSON"))
        .expect("write the server file");
}

/// Runs `tools` once: wall ms, peak KiB (0 without `/usr/bin/time`), flows printed.
fn run_cli(file: &Path, dir: &Path, timer: bool) -> Result<(f64, f64, usize), String> {
    let peak_file = dir.join("peak");
    let mut command = if timer {
        let mut command = Command::new("/usr/bin/time");
        command.args(["-f", "%M", "-o"]).arg(&peak_file).arg(cli());
        command
    } else {
        Command::new(cli())
    };
    command
        .arg("--mcp-config")
        .arg(file)
        .arg("tools")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| e.to_string())?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let status = child.wait().map_err(|e| e.to_string())?;
    let elapsed = started.elapsed().as_secs_f64() * 1e3;
    let text = reader.join().unwrap_or_default();
    if !status.success() {
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        return Err(format!(
            "exit {status}: {}",
            stderr.lines().last().unwrap_or("")
        ));
    }
    let flows = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v.as_array().map(Vec::len))
        .ok_or("the output is not a JSON array")?;
    let peak = if timer {
        std::fs::read_to_string(&peak_file)
            .ok()
            .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()))
            .unwrap_or(0.0)
    } else {
        0.0
    };
    Ok((elapsed, peak, flows))
}

/// The TCP connections the HTTP echo server at `base` accepted so far (this
/// request's own included) and the `server/discover` requests it received.
fn stats(base: &str) -> Option<(f64, f64)> {
    let address = base.strip_prefix("http://")?;
    let mut tcp = std::net::TcpStream::connect(address).ok()?;
    tcp.write_all(b"GET /stats HTTP/1.0\r\nHost: stats\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    tcp.read_to_string(&mut text).ok()?;
    let mut numbers = text.rsplit("\r\n\r\n").next()?.split_whitespace();
    let accepted = numbers.next()?.parse().ok()?;
    let probes = numbers.next()?.parse().ok()?;
    Some((accepted, probes))
}

/// `group`: `--servers N` servers as one `ClientGroup`, as the CLI connects
/// them; flows composed, then closed.
pub fn role_group(options: &Options) {
    use smthrs_mcp::group::{ClientGroup, GroupEntry};
    use smthrs_mcp::transport::http::{HttpTransport, SharedHttpClient};
    use smthrs_mcp::{Client, StdioCommand};

    let exe = crate::echo_server();
    let stdio_args = crate::echo_stdio_args(options.shape, None);
    let base = options.http_base.clone().unwrap_or_default();
    let before = stats(&base);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let started = Instant::now();
    let outcome = runtime.block_on(async {
        let shared = SharedHttpClient::new();
        let mut group = ClientGroup::builder().max_concurrent_connects(options.max_connects);
        if options.no_era_cache {
            group = group.without_era_cache();
        }
        for i in 0..options.servers {
            let name = format!("echo-{i}");
            let transport: Box<dyn smthrs_mcp::Transport> = match options.transport {
                Transport::Stdio => Box::new(StdioCommand::new(exe).args(&stdio_args)),
                _ => {
                    let mut builder = HttpTransport::builder(name.as_str(), format!("{base}/mcp"));
                    if !options.own_pools {
                        builder = builder.http_client(shared.clone());
                    }
                    Box::new(builder.build().map_err(|e| e.to_string())?)
                }
            };
            group = group.entry(GroupEntry::boxed(Client::builder(name), transport));
        }
        let group = group.connect().await.map_err(|e| e.to_string())?;
        let flows = group.flows().len();
        let legacy = group
            .clients()
            .iter()
            .filter(|c| c.era() == smthrs_mcp::Era::Legacy)
            .count();
        group.close().await;
        Ok::<_, String>((flows, legacy))
    });
    let ms = started.elapsed().as_secs_f64() * 1e3;
    drop(runtime);
    let (flows, legacy) = outcome.unwrap_or_else(|e| fail("group", e));
    let (connections, probes) = match (before, stats(&base)) {
        // Less the first `/stats` request's connection.
        (Some(before), Some(after)) => (Some(after.0 - before.0 - 1.0), Some(after.1 - before.1)),
        _ => (None, None),
    };
    report(json!({
        "ms": ms,
        "flows": flows,
        "legacy": legacy,
        "connections": connections,
        "probes": probes,
        "rss_kib": peak_rss_kib(),
    }));
}
