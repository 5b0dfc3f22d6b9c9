//! The default table: raw, smthrs-mcp and rmcp in one era (`--era`, default
//! legacy) on every scenario, the connect cost, the flood, and the issue's
//! targets checked on this run's figures: calls/s are medians over the rounds,
//! ratios the median of the per-round ratios (`runner::paired_ratio`: each
//! round runs the clients one right after the other, so the machine's drift
//! between rounds cancels out).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::runner::{ConnectPoint, Contender, Plan, Runner, Sample, Timing, paired_ratio};
use crate::{
    ClientKind, Options, Scenario, Transport, fmt_mem, fmt_ms, fmt_rate, fmt_ratio, fmt_times,
    load_average, machine_line, median, run_role,
};
use smthrs_mcp_testkit::echo::Shape;

pub fn orchestrate(options: &Options) {
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
    let rt = options.rt.clone().unwrap_or_else(|| "multi".into());
    let scenarios = Scenario::all(options);
    let era = options.era;
    let timing = Timing {
        duration_ms,
        warmup_ms,
        connect_iters,
    };
    let mut runner = Runner::new(options, timing);
    let transports = [Transport::Stdio, Transport::Http];
    let pairs: Vec<(Transport, ClientKind)> = transports
        .iter()
        .flat_map(|&t| ClientKind::ALL.map(|c| (t, c)))
        .collect();
    let plan = Plan {
        scenarios: &scenarios,
        contenders: ClientKind::ALL.map(|c| Contender::new(c, era)).to_vec(),
        connects: pairs
            .iter()
            .map(|&(transport, client)| ConnectPoint {
                label: format!("{} connect", transport.name()),
                transport,
                shape: Shape::default(),
                who: Contender::new(client, era),
            })
            .collect(),
    };
    let measured = runner.rounds(rounds, &plan);
    let shape = Shape::default();
    // (scenario, client) -> rates, rss
    let values = |samples: &[Sample], rss: bool| -> Vec<f64> {
        samples
            .iter()
            .map(|s| if rss { s.rss_kib } else { s.value })
            .collect()
    };
    let mut rates: BTreeMap<(usize, ClientKind), Vec<f64>> = BTreeMap::new();
    let mut rss: BTreeMap<(usize, ClientKind), Vec<f64>> = BTreeMap::new();
    for (&(index, who), samples) in &measured.throughput {
        rates.insert((index, who.kind), values(samples, false));
        rss.insert((index, who.kind), values(samples, true));
    }
    let mut connects: BTreeMap<(Transport, ClientKind), Vec<f64>> = BTreeMap::new();
    let mut connect_rss: BTreeMap<(Transport, ClientKind), Vec<f64>> = BTreeMap::new();
    for (&index, samples) in &measured.connect {
        connects.insert(pairs[index], values(samples, false));
        connect_rss.insert(pairs[index], values(samples, true));
    }
    // The flood: once (its outcome is not a throughput figure).
    let mut floods: Vec<(ClientKind, Value)> = Vec::new();
    for client in [ClientKind::Ours, ClientKind::Rmcp] {
        if !runner.wanted(&["stdio flood", client.name()]) {
            continue;
        }
        let timeout_ms = if client == ClientKind::Ours {
            10_000
        } else {
            rmcp_flood_limit_ms
        };
        let who = Contender::new(client, era);
        let extra = ["--timeout-ms".into(), timeout_ms.to_string()];
        let limit = Duration::from_millis(timeout_ms + 30_000);
        let label = "stdio flood";
        if let Some(value) = runner.run(
            "flood",
            label,
            who,
            Transport::Stdio,
            &rt,
            shape,
            &extra,
            limit,
        ) {
            eprintln!("  stdio flood {:<11} {value}", client.name());
            floods.push((client, value));
        }
    }
    if quick && rounds == 1 {
        // The CI smoke also keeps the other modes' paths running.
        crate::eras::smoke(&mut runner);
        crate::curve::smoke(&mut runner);
    }
    let idle = run_role(
        &["idle".to_string(), "--rt".into(), rt.clone()],
        Duration::from_secs(10),
    )
    .ok()
    .and_then(|v| v["rss_kib"].as_f64());
    let failures = std::mem::take(&mut runner.failures);
    drop(runner);

    // ---- the report
    let elapsed = started.elapsed().as_secs_f64();
    let what = format!(
        "{rounds} round(s) x {duration_ms} ms per run after {warmup_ms} ms warm-up; calls/s medians, ratios paired by round; {elapsed:.0} s in all"
    );
    let mut out = crate::report_header(options, &load_at_start, &what) + "\n";
    out += "| scenario | raw calls/s | smthrs-mcp calls/s | rmcp calls/s | ours / raw | ours / rmcp | peak RSS MiB raw / ours / rmcp |\n";
    out += "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    let paired = |index: usize, a: ClientKind, b: ClientKind| {
        paired_ratio(
            &measured.throughput,
            &(index, Contender::new(a, era)),
            &(index, Contender::new(b, era)),
        )
    };
    let mut results = Vec::new();
    let mut worst_rss: f64 = 0.0;
    for (index, scenario) in scenarios.iter().enumerate() {
        let get = |client| rates.get(&(index, client)).map(|v| median(v));
        let mem = |client| {
            rss.get(&(index, client))
                .map(|v| v.iter().cloned().fold(0.0, f64::max) / 1024.0)
        };
        let [raw, ours, rmcp] = ClientKind::ALL.map(get);
        if [raw, ours, rmcp].iter().all(Option::is_none) {
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
            fmt_times(paired(index, ClientKind::Ours, ClientKind::Raw)),
            fmt_times(paired(index, ClientKind::Ours, ClientKind::Rmcp)),
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
        let [raw, ours, rmcp] = ClientKind::ALL.map(get);
        if [raw, ours, rmcp].iter().all(Option::is_none) {
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
    // ---- the issues' targets, checked on this run's paired ratios
    let mut checks: Vec<(String, String, bool)> = Vec::new();
    for (index, scenario) in scenarios.iter().enumerate() {
        let (Some(vs_raw_now), Some(vs_rmcp_now)) = (
            paired(index, ClientKind::Ours, ClientKind::Raw),
            paired(index, ClientKind::Ours, ClientKind::Rmcp),
        ) else {
            continue;
        };
        let (vs_raw, vs_rmcp) = match (scenario.transport, scenario.inflight) {
            (Transport::Stdio, 1) => (0.8, 2.0),
            (Transport::Stdio, _) => (0.7, 2.0),
            (_, 1) => (0.8, 2.5),
            // Where these targets come from: `docs/benchmarks-notebook.md`, "The command".
            (_, _) => (0.8, 2.5),
        };
        checks.push((
            format!("{}: ours / raw >= {vs_raw}", scenario.name()),
            fmt_times(Some(vs_raw_now)),
            vs_raw_now >= vs_raw,
        ));
        checks.push((
            format!("{}: ours / rmcp >= {vs_rmcp}", scenario.name()),
            fmt_times(Some(vs_rmcp_now)),
            vs_rmcp_now >= vs_rmcp,
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
        // The stdio framing bound is the larger of maxFrameBytes and a
        // resources/read reply's frame (beyond-tools.md Q3; DOS.md): the
        // budget of tests/memory_flood.rs.
        use smthrs_mcp::limits::{
            DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_RESOURCE_BYTES, READ_ENVELOPE_BYTES,
        };
        let read_frame = DEFAULT_MAX_RESOURCE_BYTES.div_ceil(3) * 4 + READ_ENVELOPE_BYTES;
        let framing = DEFAULT_MAX_FRAME_BYTES.max(read_frame) as f64 / (1024.0 * 1024.0);
        let budget = 3.0 * framing + 16.0;
        checks.push((
            format!("flood: peak RSS <= 3 x the framing bound + 16 MiB ({budget:.0} MiB)"),
            format!("{mib:.1} MiB"),
            mib <= budget,
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
    crate::print_report(&out, &failures);
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
