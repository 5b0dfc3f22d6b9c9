//! The benchmark harness: this crate against the raw loop and rmcp, over stdio and
//! Streamable HTTP, against one in-repo echo server.
//!
//! ```text
//! cargo bench --bench harness                 # full run (3 rounds, about 3 minutes)
//! cargo bench --bench harness -- --quick      # smoke (1 short round, under 30 s)
//! cargo bench --bench harness -- --callgrind  # instructions per call (valgrind)
//! ```
//!
//! Every measured client runs in its own process (this binary, re-executed with a
//! role), so the peak RSS it reports (`VmHWM` from `/proc/self/status`) is that
//! client's alone. The echo server is this binary too (`serve-stdio`,
//! `serve-http`). Each figure is the median over the rounds; the rounds interleave
//! the clients so drift hits them alike. See `BENCHMARKS.md`.
//!
//! Options: `--quick`, `--rounds N`, `--duration-ms MS`, `--warmup-ms MS`,
//! `--only SUBSTRING` (scenario or client names), `--rt current|multi` (the
//! clients' tokio runtime; default `multi`), `--json PATH` (raw results),
//! `--callgrind [CALLS]` (instructions per stdio call, sequential and 64 in flight,
//! from runs of `CALLS` and `CALLS / 10` calls; default 4000). The `client` role
//! also takes `--calls N` (stop after N calls, spread over `--inflight` tasks).

mod clients;
mod server;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use clients::{ServerTarget, Until};

/// The in-flight count of the concurrent scenarios.
pub const MAX_INFLIGHT: usize = 64;
/// Bytes the flooding server writes without a newline.
const FLOOD_BYTES: u64 = 512 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ClientKind {
    Raw,
    Ours,
    Rmcp,
}

impl ClientKind {
    const ALL: [ClientKind; 3] = [ClientKind::Raw, ClientKind::Ours, ClientKind::Rmcp];

    fn name(self) -> &'static str {
        match self {
            ClientKind::Raw => "raw",
            ClientKind::Ours => "smthrs-mcp",
            ClientKind::Rmcp => "rmcp",
        }
    }

    fn parse(text: &str) -> Option<ClientKind> {
        Some(match text {
            "raw" => ClientKind::Raw,
            "ours" | "smthrs-mcp" => ClientKind::Ours,
            "rmcp" => ClientKind::Rmcp,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Transport {
    Stdio,
    /// Streamable HTTP, JSON replies.
    Http,
    /// Streamable HTTP, SSE replies.
    Sse,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http-json",
            Transport::Sse => "http-sse",
        }
    }

    fn parse(text: &str) -> Option<Transport> {
        Some(match text {
            "stdio" => Transport::Stdio,
            "http" | "http-json" => Transport::Http,
            "sse" | "http-sse" => Transport::Sse,
            _ => return None,
        })
    }
}

/// Command-line options, shared by every role.
struct Options {
    role: Option<String>,
    quick: bool,
    rounds: Option<usize>,
    duration_ms: Option<u64>,
    warmup_ms: Option<u64>,
    only: Vec<String>,
    rt: Option<String>,
    json: Option<PathBuf>,
    callgrind: Option<u64>,
    client: Option<ClientKind>,
    transport: Transport,
    inflight: usize,
    calls: Option<u64>,
    iters: usize,
    http_base: Option<String>,
    flood: Option<u64>,
    timeout_ms: u64,
}

fn parse_options() -> Options {
    let mut options = Options {
        role: None,
        quick: false,
        rounds: None,
        duration_ms: None,
        warmup_ms: None,
        only: Vec::new(),
        rt: None,
        json: None,
        callgrind: None,
        client: None,
        transport: Transport::Stdio,
        inflight: 1,
        calls: None,
        iters: 10,
        http_base: None,
        flood: None,
        timeout_ms: 10_000,
    };
    let mut args = std::env::args().skip(1).peekable();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        let number = |name: &str, text: String| -> u64 {
            text.parse()
                .unwrap_or_else(|_| usage(&format!("{name} needs a number")))
        };
        match arg.as_str() {
            "--bench" | "--nocapture" => {}
            "--quick" => options.quick = true,
            "--rounds" => options.rounds = Some(number("--rounds", value("--rounds")) as usize),
            "--duration-ms" => options.duration_ms = Some(number(&arg, value(&arg))),
            "--warmup-ms" => options.warmup_ms = Some(number(&arg, value(&arg))),
            "--only" => options.only.push(value("--only")),
            "--rt" => options.rt = Some(value("--rt")),
            "--json" => options.json = Some(PathBuf::from(value("--json"))),
            "--callgrind" => {
                let calls = match args.peek() {
                    Some(next) if !next.starts_with('-') => {
                        let next = args.next().unwrap_or_default();
                        number("--callgrind", next)
                    }
                    _ => 4000,
                };
                options.callgrind = Some(calls);
            }
            "--client" => {
                options.client = Some(
                    ClientKind::parse(&value("--client"))
                        .unwrap_or_else(|| usage("--client raw|ours|rmcp")),
                )
            }
            "--transport" => {
                options.transport = Transport::parse(&value("--transport"))
                    .unwrap_or_else(|| usage("--transport stdio|http|sse"))
            }
            "--inflight" => options.inflight = number(&arg, value(&arg)) as usize,
            "--calls" => options.calls = Some(number(&arg, value(&arg))),
            "--iters" => options.iters = number(&arg, value(&arg)) as usize,
            "--http-base" => options.http_base = Some(value("--http-base")),
            "--flood" => options.flood = Some(number(&arg, value(&arg))),
            "--timeout-ms" => options.timeout_ms = number(&arg, value(&arg)),
            role if !role.starts_with('-') && options.role.is_none() => {
                options.role = Some(role.to_string())
            }
            other if other.starts_with("--") => usage(&format!("unknown option {other}")),
            _ => {} // a filter cargo passes through: ignored
        }
    }
    options
}

fn usage(message: &str) -> ! {
    eprintln!("harness: {message}");
    eprintln!(
        "usage: cargo bench --bench harness -- [--quick] [--rounds N] [--duration-ms MS] \
         [--only NAME] [--rt current|multi] [--json PATH] [--callgrind [CALLS]]"
    );
    std::process::exit(2)
}

fn main() {
    let options = parse_options();
    match options.role.as_deref() {
        None => orchestrate(&options),
        Some("serve-stdio") => server::serve_stdio(options.flood),
        Some("serve-http") => server::serve_http(),
        Some("client") => role_client(&options),
        Some("connect") => role_connect(&options),
        Some("flood") => role_flood(&options),
        Some("idle") => role_idle(&options),
        Some(other) => usage(&format!("unknown role {other}")),
    }
}

// ---------------------------------------------------------------------------
// Roles run in child processes.

fn runtime(rt: &str) -> tokio::runtime::Runtime {
    let mut builder = match rt {
        "current" => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    builder.enable_all().build().expect("a tokio runtime")
}

/// Peak resident set of this process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

fn target(options: &Options, flood: Option<u64>) -> ServerTarget {
    let mut stdio_args = vec!["serve-stdio".to_string()];
    if let Some(bytes) = flood {
        stdio_args.push("--flood".into());
        stdio_args.push(bytes.to_string());
    }
    ServerTarget {
        exe: std::env::current_exe().expect("the harness binary"),
        stdio_args,
        http_base: options.http_base.clone(),
    }
}

fn report(value: Value) {
    println!("{value}");
}

fn fail(what: &str, error: impl std::fmt::Display) -> ! {
    report(json!({"error": format!("{what}: {error}")}));
    std::process::exit(1)
}

/// `client`: connect, warm up, then either a timed run or a fixed call count.
fn role_client(options: &Options) {
    let kind = options
        .client
        .unwrap_or_else(|| usage("client needs --client"));
    let server = target(options, None);
    let rt = runtime(options.rt.as_deref().unwrap_or("multi"));
    let outcome = rt.block_on(async {
        let mut connected = clients::connect(kind, options.transport, &server)
            .await
            .unwrap_or_else(|e| fail("connect", e));
        if let Some(calls) = options.calls {
            let done = connected
                .run(options.inflight, Until::calls(calls))
                .await
                .unwrap_or_else(|e| fail("calls", e));
            connected.close().await;
            return json!({"calls": done});
        }
        let warmup = Duration::from_millis(options.warmup_ms.unwrap_or(300));
        connected
            .run(options.inflight, Until::Deadline(Instant::now() + warmup))
            .await
            .unwrap_or_else(|e| fail("warm-up", e));
        let duration = Duration::from_millis(options.duration_ms.unwrap_or(1500));
        let started = Instant::now();
        let calls = connected
            .run(options.inflight, Until::Deadline(started + duration))
            .await
            .unwrap_or_else(|e| fail("run", e));
        let secs = started.elapsed().as_secs_f64();
        connected.close().await;
        json!({"calls": calls, "secs": secs, "rate": calls as f64 / secs})
    });
    drop(rt);
    let mut outcome = outcome;
    outcome["rss_kib"] = json!(peak_rss_kib());
    report(outcome);
}

/// `connect`: spawn (stdio) + handshake + `tools/list`, `--iters` times.
fn role_connect(options: &Options) {
    let kind = options
        .client
        .unwrap_or_else(|| usage("connect needs --client"));
    let server = target(options, None);
    let rt = runtime(options.rt.as_deref().unwrap_or("multi"));
    let samples = rt.block_on(async {
        let mut samples = Vec::with_capacity(options.iters);
        for _ in 0..options.iters {
            let started = Instant::now();
            let connected = clients::connect(kind, options.transport, &server)
                .await
                .unwrap_or_else(|e| fail("connect", e));
            samples.push(started.elapsed().as_secs_f64() * 1e6);
            connected.close().await;
        }
        samples
    });
    drop(rt);
    report(
        json!({"median_us": median(&samples), "samples_us": samples, "rss_kib": peak_rss_kib()}),
    );
}

/// `flood`: connect to a server that answers `initialize` with 512 MiB and no newline.
fn role_flood(options: &Options) {
    let kind = options
        .client
        .unwrap_or_else(|| usage("flood needs --client"));
    let server = target(options, Some(options.flood.unwrap_or(FLOOD_BYTES)));
    let rt = runtime(options.rt.as_deref().unwrap_or("multi"));
    let limit = Duration::from_millis(options.timeout_ms);
    let (outcome, elapsed) = rt.block_on(clients::flood(kind, &server, limit));
    // A client that hung keeps its tasks; the process exits without waiting.
    let rss = peak_rss_kib();
    report(json!({"outcome": outcome, "ms": elapsed.as_secs_f64() * 1e3, "rss_kib": rss}));
    let _ = std::io::stdout().flush();
    std::process::exit(0);
}

/// `idle`: the footprint of this binary with a runtime and nothing else.
fn role_idle(options: &Options) {
    let rt = runtime(options.rt.as_deref().unwrap_or("multi"));
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(10)).await });
    drop(rt);
    report(json!({"rss_kib": peak_rss_kib()}));
}

// ---------------------------------------------------------------------------
// The orchestrator.

fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// Runs this binary with `args`, waits up to `limit`, and parses its last stdout line.
fn run_role(args: &[String], limit: Duration) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{} timed out after {:?}", args.join(" "), limit));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(e.to_string()),
        }
    }
    let text = reader.join().unwrap_or_default();
    let line = text.lines().last().ok_or("no output")?;
    let value: Value = serde_json::from_str(line).map_err(|e| format!("{e}: {line}"))?;
    if let Some(error) = value.get("error") {
        return Err(format!("{}: {error}", args.join(" ")));
    }
    Ok(value)
}

/// The HTTP echo server, for the whole run.
struct HttpServer {
    child: Child,
    base: String,
}

impl HttpServer {
    fn start() -> HttpServer {
        let exe = std::env::current_exe().expect("the harness binary");
        let mut child = Command::new(exe)
            .arg("serve-http")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the HTTP echo server");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the HTTP server's port");
        let port: u16 = line.trim().parse().expect("a port number");
        HttpServer {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        // Closing its stdin ends it; kill in case it does not.
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Scenario {
    transport: Transport,
    inflight: usize,
    /// The clients' tokio runtime: `multi` or `current`.
    rt: String,
    /// Name the runtime in the scenario's name.
    tagged: bool,
}

impl Scenario {
    fn name(&self) -> String {
        let mode = if self.inflight == 1 {
            "seq".to_string()
        } else {
            format!("{} in flight", self.inflight)
        };
        let tag = match (self.tagged, self.rt.as_str()) {
            (false, _) => "",
            (true, "current") => " (current_thread)",
            (true, _) => " (multi_thread)",
        };
        format!("{} {mode}{tag}", self.transport.name())
    }
}

fn wanted(options: &Options, names: &[&str]) -> bool {
    options.only.is_empty()
        || options
            .only
            .iter()
            .any(|filter| names.iter().any(|name| name.contains(filter.as_str())))
}

/// The 1-, 5- and 15-minute load averages (other work on the machine skews
/// wall-clock figures; instruction counts are immune).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| "?".into())
}

/// The command that produced this report.
fn command_line() -> String {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| arg != "--bench")
        .collect();
    if args.is_empty() {
        "cargo bench --bench harness".into()
    } else {
        format!("cargo bench --bench harness -- {}", args.join(" "))
    }
}

fn machine_line(options: &Options) -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(str::trim)
        .unwrap_or("unknown CPU")
        .to_string();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem_gib = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let runtime = match options.rt.as_deref() {
        None => "tokio multi_thread (default workers), stdio also current_thread",
        Some("current") => "tokio current_thread",
        Some(_) => "tokio multi_thread (default workers)",
    };
    format!(
        "{cpu}, {cores} cores, {mem_gib:.0} GiB, Linux {}, {rustc}, client runtime: {runtime}",
        kernel.trim(),
    )
}

fn orchestrate(options: &Options) {
    if let Some(calls) = options.callgrind {
        return callgrind(options, calls);
    }
    let quick = options.quick;
    let rounds = options.rounds.unwrap_or(if quick { 1 } else { 3 });
    let duration_ms = options
        .duration_ms
        .unwrap_or(if quick { 150 } else { 1500 });
    let warmup_ms = options.warmup_ms.unwrap_or(if quick { 30 } else { 300 });
    let connect_iters = if quick { 3 } else { 15 };
    let rmcp_flood_limit_ms: u64 = if quick { 2_000 } else { 5_000 };
    let started = Instant::now();
    let load_at_start = load_average();
    eprintln!("harness: {rounds} round(s), {duration_ms} ms per run; load average {load_at_start}");
    let http = HttpServer::start();
    // Every scenario on the default multi-thread runtime (what `#[tokio::main]`
    // gives); stdio also on a current-thread runtime, where the runtime adds least
    // and the clients' own costs show most. `--rt` runs everything on one.
    let default_rt = options.rt.is_none();
    let rt = options.rt.clone().unwrap_or_else(|| "multi".into());
    let mut scenarios = Vec::new();
    for transport in [Transport::Stdio, Transport::Http, Transport::Sse] {
        for inflight in [1, MAX_INFLIGHT] {
            scenarios.push(Scenario {
                transport,
                inflight,
                rt: rt.clone(),
                tagged: default_rt && transport == Transport::Stdio,
            });
        }
        if default_rt && transport == Transport::Stdio {
            for inflight in [1, MAX_INFLIGHT] {
                scenarios.push(Scenario {
                    transport,
                    inflight,
                    rt: "current".into(),
                    tagged: true,
                });
            }
        }
    }
    let common = |client: ClientKind, transport: Transport, rt: &str| -> Vec<String> {
        vec![
            "--client".into(),
            client.name().into(),
            "--transport".into(),
            transport.name().into(),
            "--rt".into(),
            rt.to_string(),
            "--http-base".into(),
            http.base.clone(),
        ]
    };
    let mut failures: Vec<String> = Vec::new();
    // (scenario, client) -> rates, rss
    let mut rates: BTreeMap<(usize, ClientKind), Vec<f64>> = BTreeMap::new();
    let mut rss: BTreeMap<(usize, ClientKind), Vec<f64>> = BTreeMap::new();
    let mut connects: BTreeMap<(Transport, ClientKind), Vec<f64>> = BTreeMap::new();
    let mut connect_rss: BTreeMap<(Transport, ClientKind), Vec<f64>> = BTreeMap::new();
    let limit = Duration::from_millis(duration_ms + warmup_ms + 20_000);
    for round in 0..rounds {
        eprintln!("harness: round {}/{rounds}", round + 1);
        for (index, scenario) in scenarios.iter().enumerate() {
            for client in ClientKind::ALL {
                if !wanted(options, &[&scenario.name(), client.name()]) {
                    continue;
                }
                let mut args = vec!["client".to_string()];
                args.extend(common(client, scenario.transport, &scenario.rt));
                args.extend([
                    "--inflight".into(),
                    scenario.inflight.to_string(),
                    "--duration-ms".into(),
                    duration_ms.to_string(),
                    "--warmup-ms".into(),
                    warmup_ms.to_string(),
                ]);
                match run_role(&args, limit) {
                    Ok(value) => {
                        let rate = value["rate"].as_f64().unwrap_or(f64::NAN);
                        let kib = value["rss_kib"].as_f64().unwrap_or(f64::NAN);
                        eprintln!(
                            "  {:<24} {:<11} {:>10.0} calls/s  {:>6.1} MiB",
                            scenario.name(),
                            client.name(),
                            rate,
                            kib / 1024.0
                        );
                        rates.entry((index, client)).or_default().push(rate);
                        rss.entry((index, client)).or_default().push(kib);
                    }
                    Err(error) => {
                        eprintln!("  {} {}: FAILED {error}", scenario.name(), client.name());
                        failures.push(format!("{} {}: {error}", scenario.name(), client.name()));
                    }
                }
            }
        }
        for transport in [Transport::Stdio, Transport::Http] {
            let name = format!("{} connect", transport.name());
            for client in ClientKind::ALL {
                if !wanted(options, &[&name, client.name()]) {
                    continue;
                }
                let mut args = vec!["connect".to_string()];
                args.extend(common(client, transport, &rt));
                args.extend(["--iters".into(), connect_iters.to_string()]);
                match run_role(&args, Duration::from_secs(120)) {
                    Ok(value) => {
                        let us = value["median_us"].as_f64().unwrap_or(f64::NAN);
                        eprintln!("  {name:<24} {:<11} {:>10.0} us", client.name(), us);
                        connects.entry((transport, client)).or_default().push(us);
                        connect_rss
                            .entry((transport, client))
                            .or_default()
                            .push(value["rss_kib"].as_f64().unwrap_or(f64::NAN));
                    }
                    Err(error) => {
                        eprintln!("  {name} {}: FAILED {error}", client.name());
                        failures.push(format!("{name} {}: {error}", client.name()));
                    }
                }
            }
        }
    }
    // The flood: once (its outcome is not a throughput figure).
    let mut floods: Vec<(ClientKind, Value)> = Vec::new();
    for client in [ClientKind::Ours, ClientKind::Rmcp] {
        if !wanted(options, &["stdio flood", client.name()]) {
            continue;
        }
        let timeout_ms = if client == ClientKind::Ours {
            10_000
        } else {
            rmcp_flood_limit_ms
        };
        let mut args = vec!["flood".to_string()];
        args.extend(common(client, Transport::Stdio, &rt));
        args.extend(["--timeout-ms".into(), timeout_ms.to_string()]);
        match run_role(&args, Duration::from_millis(timeout_ms + 30_000)) {
            Ok(value) => {
                eprintln!("  stdio flood {:<11} {value}", client.name());
                floods.push((client, value));
            }
            Err(error) => {
                eprintln!("  stdio flood {}: FAILED {error}", client.name());
                failures.push(format!("stdio flood {}: {error}", client.name()));
            }
        }
    }
    let idle = run_role(
        &["idle".to_string(), "--rt".into(), rt.clone()],
        Duration::from_secs(10),
    )
    .ok()
    .and_then(|v| v["rss_kib"].as_f64());
    drop(http);

    // ---- the report
    let mut out = String::new();
    out += &format!("machine: {}\n", machine_line(options));
    out += &format!(
        "load average at start: {load_at_start}; at end: {}\n",
        load_average()
    );
    out += &format!(
        "command: {} ({rounds} round(s) x {duration_ms} ms per run after {warmup_ms} ms warm-up; medians; {:.0} s in all)\n\n",
        command_line(),
        started.elapsed().as_secs_f64()
    );
    out += "| scenario | raw calls/s | smthrs-mcp calls/s | rmcp calls/s | ours / raw | ours / rmcp | peak RSS MiB raw / ours / rmcp |\n";
    out += "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    let mut results = Vec::new();
    let mut worst_rss: f64 = 0.0;
    for (index, scenario) in scenarios.iter().enumerate() {
        let get = |client| rates.get(&(index, client)).map(|v| median(v));
        let mem = |client| {
            rss.get(&(index, client))
                .map(|v| v.iter().cloned().fold(0.0, f64::max) / 1024.0)
        };
        let (raw, ours, rmcp) = (
            get(ClientKind::Raw),
            get(ClientKind::Ours),
            get(ClientKind::Rmcp),
        );
        if raw.is_none() && ours.is_none() && rmcp.is_none() {
            continue;
        }
        if let Some(m) = mem(ClientKind::Ours) {
            worst_rss = worst_rss.max(m);
        }
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {} / {} / {} |\n",
            scenario.name(),
            fmt_rate(raw),
            fmt_rate(ours),
            fmt_rate(rmcp),
            fmt_ratio(ours, raw),
            fmt_ratio(ours, rmcp),
            fmt_mem(mem(ClientKind::Raw)),
            fmt_mem(mem(ClientKind::Ours)),
            fmt_mem(mem(ClientKind::Rmcp)),
        );
        results.push(json!({
            "scenario": scenario.name(),
            "raw": rates.get(&(index, ClientKind::Raw)),
            "ours": rates.get(&(index, ClientKind::Ours)),
            "rmcp": rates.get(&(index, ClientKind::Rmcp)),
            "rss_kib": {
                "raw": rss.get(&(index, ClientKind::Raw)),
                "ours": rss.get(&(index, ClientKind::Ours)),
                "rmcp": rss.get(&(index, ClientKind::Rmcp)),
            },
        }));
    }
    out += "\n| connect (spawn + initialize + tools/list) | raw ms | smthrs-mcp ms | rmcp ms | ours / raw | ours / rmcp |\n";
    out += "| --- | ---: | ---: | ---: | ---: | ---: |\n";
    for transport in [Transport::Stdio, Transport::Http] {
        let get = |client| connects.get(&(transport, client)).map(|v| median(v) / 1e3);
        let (raw, ours, rmcp) = (
            get(ClientKind::Raw),
            get(ClientKind::Ours),
            get(ClientKind::Rmcp),
        );
        if raw.is_none() && ours.is_none() && rmcp.is_none() {
            continue;
        }
        // Lower is better: the ratios are time ratios.
        out += &format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            transport.name(),
            fmt_ms(raw),
            fmt_ms(ours),
            fmt_ms(rmcp),
            fmt_ratio(ours, raw),
            fmt_ratio(ours, rmcp),
        );
    }
    if !floods.is_empty() {
        out += "\n| 512 MiB without a newline (stdio, maxFrameBytes 1 MiB) | outcome | time ms | peak RSS MiB |\n";
        out += "| --- | --- | ---: | ---: |\n";
        for (client, value) in &floods {
            out += &format!(
                "| {} | {} | {:.0} | {:.1} |\n",
                client.name(),
                value["outcome"].as_str().unwrap_or("?"),
                value["ms"].as_f64().unwrap_or(f64::NAN),
                value["rss_kib"].as_f64().unwrap_or(f64::NAN) / 1024.0
            );
        }
    }
    if let Some(idle) = idle {
        out += &format!(
            "\nidle harness process (runtime only): {:.1} MiB peak RSS; smthrs-mcp's worst throughput-run peak: {:.1} MiB\n",
            idle / 1024.0,
            worst_rss
        );
    }
    // ---- the issue's targets, checked on this run's medians
    let mut checks: Vec<(String, String, bool)> = Vec::new();
    for (index, scenario) in scenarios.iter().enumerate() {
        let get = |client| rates.get(&(index, client)).map(|v| median(v));
        let (Some(raw), Some(ours), Some(rmcp)) = (
            get(ClientKind::Raw),
            get(ClientKind::Ours),
            get(ClientKind::Rmcp),
        ) else {
            continue;
        };
        let (vs_raw, vs_rmcp) = match (scenario.transport, scenario.inflight) {
            (Transport::Stdio, 1) => (0.8, 2.0),
            (Transport::Stdio, _) => (0.7, 2.0),
            (_, 1) => (0.8, 2.5),
            (_, _) => (0.5, 2.5),
        };
        checks.push((
            format!("{}: ours / raw >= {vs_raw}", scenario.name()),
            format!("{:.2}x", ours / raw),
            ours / raw >= vs_raw,
        ));
        checks.push((
            format!("{}: ours / rmcp >= {vs_rmcp}", scenario.name()),
            format!("{:.2}x", ours / rmcp),
            ours / rmcp >= vs_rmcp,
        ));
    }
    if worst_rss > 0.0 {
        checks.push((
            "smthrs-mcp peak RSS <= 16 MiB in every throughput run".into(),
            format!("{worst_rss:.1} MiB"),
            worst_rss <= 16.0,
        ));
    }
    if let Some((_, value)) = floods.iter().find(|(c, _)| *c == ClientKind::Ours) {
        let mib = value["rss_kib"].as_f64().unwrap_or(f64::NAN) / 1024.0;
        let ms = value["ms"].as_f64().unwrap_or(f64::NAN);
        let outcome = value["outcome"].as_str().unwrap_or("?");
        checks.push((
            "flood: protocol_error within 2 s".into(),
            format!("{outcome} in {ms:.0} ms"),
            outcome == "protocol_error" && ms <= 2000.0,
        ));
        checks.push((
            "flood: peak RSS <= 3 x maxFrameBytes + 16 MiB (19 MiB)".into(),
            format!("{mib:.1} MiB"),
            mib <= 19.0,
        ));
    }
    let connect = |client| connects.get(&(Transport::Stdio, client)).map(|v| median(v));
    if let (Some(raw), Some(ours)) = (connect(ClientKind::Raw), connect(ClientKind::Ours)) {
        checks.push((
            "stdio connect <= 1.2 x raw spawn + handshake".into(),
            format!("{:.2}x", ours / raw),
            ours / raw <= 1.2,
        ));
    }
    if !checks.is_empty() {
        out += "\n| target | this run | met |\n| --- | ---: | --- |\n";
        for (target, value, met) in &checks {
            out += &format!(
                "| {target} | {value} | {} |\n",
                if *met { "yes" } else { "**no**" }
            );
        }
    }
    print!("{out}");
    if !failures.is_empty() {
        println!("\nFAILURES:");
        for failure in &failures {
            println!("- {failure}");
        }
    }
    if let Some(path) = &options.json {
        let document = json!({
            "machine": machine_line(options),
            "rounds": rounds,
            "duration_ms": duration_ms,
            "throughput": results,
            "connect_us": connects.iter().map(|((t, c), v)| json!({"transport": t.name(), "client": c.name(), "samples": v})).collect::<Vec<_>>(),
            "connect_rss_kib": connect_rss.iter().map(|((t, c), v)| json!({"transport": t.name(), "client": c.name(), "samples": v})).collect::<Vec<_>>(),
            "flood": floods.iter().map(|(c, v)| json!({"client": c.name(), "result": v})).collect::<Vec<_>>(),
            "failures": failures,
        });
        let _ = std::fs::write(
            path,
            serde_json::to_string_pretty(&document).unwrap_or_default(),
        );
    }
    if !failures.is_empty() {
        std::process::exit(1);
    }
}

fn fmt_rate(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".into(), |r| format!("{r:.0}"))
}

fn fmt_ms(ms: Option<f64>) -> String {
    ms.map_or_else(|| "-".into(), |m| format!("{m:.2}"))
}

fn fmt_mem(mib: Option<f64>) -> String {
    mib.map_or_else(|| "-".into(), |m| format!("{m:.1}"))
}

fn fmt_ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
        _ => "-".into(),
    }
}

// ---------------------------------------------------------------------------
// Instruction counts.

/// Runs each stdio client under callgrind twice (`calls` and `calls / 10` calls,
/// same connect) and reports the difference per call: startup, spawn and
/// handshake cancel out. Once one call at a time, once with
/// [`MAX_INFLIGHT`] in flight.
fn callgrind(options: &Options, calls: u64) {
    let exe = std::env::current_exe().expect("the harness binary");
    let small = (calls / 10).max(1);
    let mut out = String::new();
    out += &format!(
        "instructions per stdio call (callgrind, ({calls} - {small}) calls, client process only, tokio current_thread)\n\n"
    );
    out += &format!("| client | sequential | {MAX_INFLIGHT} in flight |\n| --- | ---: | ---: |\n");
    let mut failed = false;
    for client in ClientKind::ALL {
        if !wanted(options, &[client.name()]) {
            continue;
        }
        let mut row = Vec::new();
        for inflight in [1, MAX_INFLIGHT] {
            let mut counts = Vec::new();
            for n in [small, calls] {
                match callgrind_run(&exe, client, inflight, n) {
                    Ok(count) => counts.push(count),
                    Err(stderr) => {
                        eprintln!(
                            "harness: callgrind run of {} failed:\n{stderr}",
                            client.name()
                        );
                        failed = true;
                    }
                }
            }
            if let [a, b] = counts[..] {
                let per_call = (b as f64 - a as f64) / (calls - small) as f64;
                eprintln!(
                    "  {:<11} {inflight:>2} in flight: {per_call:.0} instructions/call",
                    client.name()
                );
                row.push(format!("{per_call:.0}"));
            } else {
                row.push("-".into());
            }
        }
        out += &format!("| {} | {} |\n", client.name(), row.join(" | "));
    }
    print!("{out}");
    if failed {
        std::process::exit(1);
    }
}

/// One client process under callgrind making `calls` calls with `inflight` in
/// flight; the instructions it executed, or valgrind's stderr.
fn callgrind_run(
    exe: &std::path::Path,
    client: ClientKind,
    inflight: usize,
    calls: u64,
) -> Result<u64, String> {
    let dir = std::env::temp_dir().join(format!("harness-callgrind-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let output = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!(
            "--callgrind-out-file={}",
            dir.join("callgrind.out.%p").display()
        ))
        .arg(exe)
        .args([
            "client",
            "--client",
            client.name(),
            "--transport",
            "stdio",
            "--rt",
            "current",
            "--inflight",
        ])
        .arg(inflight.to_string())
        .arg("--calls")
        .arg(calls.to_string())
        .stdin(Stdio::null())
        .output();
    let _ = std::fs::remove_dir_all(&dir);
    let output = match output {
        Ok(output) => output,
        Err(error) => {
            eprintln!("harness: cannot run valgrind: {error}");
            std::process::exit(1);
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let collected = stderr
        .lines()
        .find_map(|line| line.split("Collected :").nth(1))
        .and_then(|n| n.trim().parse::<u64>().ok());
    match collected {
        Some(count) if output.status.success() => Ok(count),
        _ => Err(stderr),
    }
}
