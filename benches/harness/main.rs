//! The benchmark harness: this crate against the raw loop and rmcp, over stdio and
//! Streamable HTTP, against one in-repo echo server.
//!
//! ```text
//! cargo bench --bench harness                 # full run (3 rounds, about 3 minutes)
//! cargo bench --bench harness -- --quick      # smoke (1 short round, under 30 s)
//! cargo bench --bench harness -- --callgrind  # instructions per call (valgrind)
//! cargo bench --bench harness -- --eras       # 2026-07-28 against legacy, same run
//! cargo bench --bench harness -- --curve      # the cost curve (about 4 minutes)
//! cargo bench --bench harness -- --group      # `tools` over 1, 10, 100 servers; group knobs
//! ```
//!
//! Every measured client runs in its own process (this binary, re-executed with a
//! role), so the peak RSS it reports (`VmHWM` from `/proc/self/status`) is that
//! client's alone. The echo server is the test kit's (`testkit/`):
//! `smthrs-mcp-scripted-server echo serve-stdio|serve-http` (its code is
//! `testkit/src/echo_server.rs`, the options both sides share
//! `smthrs_mcp_testkit::echo`), built once in this build's profile
//! ([`echo_server`]). Each figure is the median over the rounds; the rounds
//! interleave the clients so drift hits them alike. See `BENCHMARKS.md`.
//!
//! Options: `--quick`, `--rounds N`, `--duration-ms MS`, `--warmup-ms MS`,
//! `--only SUBSTRING` (scenario or client names), `--rt current|multi` (the
//! clients' tokio runtime; default `multi`), `--json PATH` (raw results),
//! `--callgrind [CALLS]` (instructions per stdio call, sequential and 64 in flight,
//! from runs of `CALLS` and `CALLS / 10` calls; default 4000), `--era
//! legacy|modern` (the era of the table; default legacy), `--eras` (every
//! scenario and connect in both eras, `auto` too, see `eras.rs`), `--curve` (the
//! cost curve, see `curve.rs`), `--group` (many servers, see `group.rs`; its
//! role `group` takes `--servers N`, `--max-connects N`, `--own-pools`,
//! `--no-era-cache`). The `client` role also takes `--calls N` (stop
//! after N calls, spread over `--inflight` tasks); every role takes the server's
//! shape (`--tools N`, `--result-bytes N`, `--legacy-only`, see
//! `smthrs_mcp_testkit::echo::Shape`).

mod clients;
mod curve;
mod eras;
mod group;
mod runner;
mod table;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use smthrs_mcp_testkit::echo::{self, Shape};

use clients::{ServerTarget, Setup, Until};

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

/// The era a client speaks (`--era`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EraChoice {
    Legacy,
    Modern,
    /// smthrs-mcp's default: probe with `server/discover`, fall back.
    Auto,
}

impl EraChoice {
    /// `--era`'s spelling of each, in declaration order.
    const NAMES: [&'static str; 3] = ["legacy", "modern", "auto"];

    fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// `legacy`, `modern` (or `2026-07-28`), `auto`.
    fn parse(text: &str) -> Option<EraChoice> {
        let text = if text == echo::MODERN { "modern" } else { text };
        [EraChoice::Legacy, EraChoice::Modern, EraChoice::Auto]
            .into_iter()
            .find(|era| era.name() == text)
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
    era: EraChoice,
    shape: Shape,
    eras: bool,
    curve: bool,
    servers: usize,
    group: bool,
    max_connects: usize,
    own_pools: bool,
    no_era_cache: bool,
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
        era: EraChoice::Legacy,
        shape: Shape::default(),
        eras: false,
        curve: false,
        servers: 1,
        group: false,
        max_connects: smthrs_mcp::group::DEFAULT_MAX_CONCURRENT_CONNECTS,
        own_pools: false,
        no_era_cache: false,
    };
    let mut args = std::env::args().skip(1).peekable();
    while let Some(arg) = args.next() {
        match options.shape.accept(&arg, &mut args) {
            Ok(true) => continue,
            Ok(false) => {}
            Err(message) => usage(&message),
        }
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
            "--era" => {
                options.era = EraChoice::parse(&value("--era"))
                    .unwrap_or_else(|| usage("--era legacy|modern|auto"))
            }
            "--eras" => options.eras = true,
            "--curve" => options.curve = true,
            "--servers" => options.servers = number(&arg, value(&arg)) as usize,
            "--group" => options.group = true,
            "--max-connects" => options.max_connects = number(&arg, value(&arg)) as usize,
            "--own-pools" => options.own_pools = true,
            "--no-era-cache" => options.no_era_cache = true,
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
         [--only NAME] [--rt current|multi] [--json PATH] [--callgrind [CALLS]] \
         [--era legacy|modern] [--eras] [--curve] [--group]"
    );
    std::process::exit(2)
}

fn main() {
    let options = parse_options();
    match options.role.as_deref() {
        None if options.callgrind.is_some() => {
            callgrind(&options, options.callgrind.unwrap_or(4000))
        }
        None if options.eras => eras::orchestrate(&options),
        None if options.curve => curve::orchestrate(&options),
        None if options.group => group::orchestrate(&options),
        None => table::orchestrate(&options),
        Some("client") => role_client(&options),
        Some("connect") => role_connect(&options),
        Some("servers") => role_servers(&options),
        Some("group") => group::role_group(&options),
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

/// The variable through which the orchestrator hands its client processes the
/// echo server's path, so that only the orchestrator builds it.
const ECHO_SERVER_ENV: &str = "SMTHRS_MCP_BENCH_ECHO_SERVER";

/// The echo server: the test kit's `smthrs-mcp-scripted-server` (its `echo`
/// mode), built once by `smthrs_mcp_testkit::build_server` in the profile this
/// harness was built in; a client process takes the orchestrator's path from
/// [`ECHO_SERVER_ENV`].
fn echo_server() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Some(path) = std::env::var_os(ECHO_SERVER_ENV) {
            return PathBuf::from(path);
        }
        smthrs_mcp_testkit::build_server().unwrap_or_else(|message| {
            eprintln!("harness: {message}");
            std::process::exit(1)
        })
    })
}

/// The echo server's stdio command line: `echo serve-stdio`, the shape's options
/// and, when given, `--flood BYTES`.
fn echo_stdio_args(shape: Shape, flood: Option<u64>) -> Vec<String> {
    let mut stdio_args = vec!["echo".to_string(), "serve-stdio".to_string()];
    stdio_args.extend(shape.args());
    if let Some(bytes) = flood {
        stdio_args.push("--flood".into());
        stdio_args.push(bytes.to_string());
    }
    stdio_args
}

fn target(options: &Options, flood: Option<u64>) -> ServerTarget {
    ServerTarget {
        exe: echo_server().to_path_buf(),
        stdio_args: echo_stdio_args(options.shape, flood),
        http_base: options.http_base.clone(),
    }
}

fn setup(options: &Options) -> Setup {
    Setup {
        era: options.era,
        shape: options.shape,
        inflight: options.inflight,
    }
}

fn report(value: Value) {
    println!("{value}");
}

fn fail(what: &str, error: impl std::fmt::Display) -> ! {
    report(json!({"error": format!("{what}: {error}")}));
    std::process::exit(1)
}

/// The `--client` a role needs.
fn client_kind(options: &Options, role: &str) -> ClientKind {
    let Some(kind) = options.client else {
        usage(&format!("{role} needs --client"))
    };
    kind
}

/// `client`: connect, warm up, then either a timed run or a fixed call count.
fn role_client(options: &Options) {
    let kind = client_kind(options, "client");
    let server = target(options, None);
    let rt = runtime(options.rt.as_deref().unwrap_or("multi"));
    let outcome = rt.block_on(async {
        let mut connected = clients::connect(kind, options.transport, &server, &setup(options))
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
    let kind = client_kind(options, "connect");
    let server = target(options, None);
    let rt = runtime(options.rt.as_deref().unwrap_or("multi"));
    let samples = rt.block_on(async {
        let mut samples = Vec::with_capacity(options.iters);
        for _ in 0..options.iters {
            let started = Instant::now();
            let connected = clients::connect(kind, options.transport, &server, &setup(options))
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
    let kind = client_kind(options, "flood");
    let server = target(options, Some(options.flood.unwrap_or(FLOOD_BYTES)));
    let rt = runtime(options.rt.as_deref().unwrap_or("multi"));
    let limit = Duration::from_millis(options.timeout_ms);
    let (outcome, elapsed) = rt.block_on(clients::flood(kind, &server, &setup(options), limit));
    // A client that hung keeps its tasks; the process exits without waiting.
    let rss = peak_rss_kib();
    report(json!({"outcome": outcome, "ms": elapsed.as_secs_f64() * 1e3, "rss_kib": rss}));
    let _ = std::io::stdout().flush();
    std::process::exit(0);
}

/// `servers`: `--servers N` stdio servers connected at once from this process, as
/// the CLI's `tools` does: all connects in parallel, every catalog read, all
/// closed; the time to done and this process's peak RSS.
fn role_servers(options: &Options) {
    let kind = client_kind(options, "servers");
    let server = target(options, None);
    let rt = runtime(options.rt.as_deref().unwrap_or("multi"));
    let started = Instant::now();
    let tools = rt
        .block_on(clients::connect_many(
            kind,
            &server,
            &setup(options),
            options.servers,
        ))
        .unwrap_or_else(|e| fail("servers", e));
    let ms = started.elapsed().as_secs_f64() * 1e3;
    drop(rt);
    report(json!({"ms": ms, "tools": tools, "rss_kib": peak_rss_kib()}));
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
        .env(ECHO_SERVER_ENV, echo_server())
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
    fn start(shape: Shape) -> HttpServer {
        let mut child = Command::new(echo_server())
            .args(["echo", "serve-http"])
            .args(shape.args())
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
    /// The throughput scenarios: every transport sequential and with
    /// [`MAX_INFLIGHT`] in flight on the default multi-thread runtime (what
    /// `#[tokio::main]` gives); stdio also on a current-thread runtime, where the
    /// runtime adds least and the clients' own costs show most. `--rt` runs
    /// everything on one.
    fn all(options: &Options) -> Vec<Scenario> {
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
        scenarios
    }

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

/// The lines every report starts with: the machine, the load at the start and
/// now, and the command with `what` it ran.
fn report_header(options: &Options, load_at_start: &str, what: &str) -> String {
    let machine = machine_line(options);
    let (now, command) = (load_average(), command_line());
    format!(
        "machine: {machine}\nload average at start: {load_at_start}; at end: {now}\ncommand: {command} ({what})\n"
    )
}

/// Prints the report and the failures, if any.
fn print_report(out: &str, failures: &[String]) {
    print!("{out}");
    if !failures.is_empty() {
        println!("\nFAILURES:");
        for failure in failures {
            println!("- {failure}");
        }
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

fn fmt_rate(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".into(), |r| format!("{r:.0}"))
}

fn fmt_ms(ms: Option<f64>) -> String {
    ms.map_or_else(|| "-".into(), |m| format!("{m:.2}"))
}

fn fmt_mem(mib: Option<f64>) -> String {
    mib.map_or_else(|| "-".into(), |m| format!("{m:.1}"))
}

/// A ratio already computed (a paired one, `runner::paired_ratio`).
fn fmt_times(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "-".into(), |r| format!("{r:.2}x"))
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
    // `--transport http-json|http-sse`: the client process against the HTTP echo
    // server (not traced), which runs for the whole measurement.
    let http = (options.transport != Transport::Stdio).then(|| HttpServer::start(Shape::default()));
    let target = Target {
        transport: options.transport,
        base: http.as_ref().map(|h| h.base.clone()),
        era: options.era,
    };
    let mut out = String::new();
    out += &format!(
        "instructions per {} call (callgrind, ({calls} - {small}) calls, client process only, tokio current_thread, era {})\n\n",
        options.transport.name(),
        options.era.name()
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
                match callgrind_run(&exe, client, &target, inflight, n) {
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

/// What a callgrind run's client talks to.
struct Target {
    transport: Transport,
    /// The HTTP echo server's base URL.
    base: Option<String>,
    era: EraChoice,
}

/// One client process under callgrind making `calls` calls with `inflight` in
/// flight; the instructions it executed, or valgrind's stderr.
fn callgrind_run(
    exe: &std::path::Path,
    client: ClientKind,
    target: &Target,
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
        .env(ECHO_SERVER_ENV, echo_server())
        .args([
            "client",
            "--client",
            client.name(),
            "--transport",
            target.transport.name(),
            "--rt",
            "current",
            "--era",
            target.era.name(),
        ])
        .args(
            target
                .base
                .iter()
                .flat_map(|base| ["--http-base", base.as_str()]),
        )
        .arg("--inflight")
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
