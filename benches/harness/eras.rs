//! `--eras`: the 2026-07-28 era against the legacy one, in the same run.
//!
//! Every scenario of the default table for the raw loop, smthrs-mcp and rmcp, each
//! in both eras (`--era legacy` and `--era modern`: see `clients.rs` for what each
//! sends), interleaved per round; then the connect cost against the dual-era echo
//! server (legacy, modern and smthrs-mcp's default `auto`, which probes with
//! `server/discover` and speaks 2026-07-28 when offered) and against the same
//! server answering `server/discover` as a legacy one does (`--legacy-only`:
//! `auto` then pays the probe and falls back).

use std::time::Instant;

use crate::runner::{
    ConnectPoint, Contender, Measured, Plan, Runner, Timing, median_of, paired_ratio, peak_mib,
};
use crate::{ClientKind, EraChoice, Options, Transport, fmt_mem, fmt_ms, fmt_rate, load_average};
use smthrs_mcp_testkit::echo::Shape;

/// The least smthrs-mcp modern / legacy calls/s ratio the issue asks for.
const TARGET: f64 = 0.85;

/// The CI smoke's share of the eras (`--quick`): the raw loop and smthrs-mcp in
/// 2026-07-28 over stdio and HTTP, and `auto` against both servers. Prints
/// progress lines only; failures go to the runner.
pub fn smoke(runner: &mut Runner<'_>) {
    let label = "smoke: 2026-07-28";
    if !runner.wanted(&[label]) {
        return;
    }
    for transport in [Transport::Stdio, Transport::Http] {
        for kind in [ClientKind::Raw, ClientKind::Ours] {
            let who = Contender::new(kind, EraChoice::Modern);
            runner.throughput(label, who, transport, "multi", 1, Shape::default());
        }
    }
    let auto = Contender::new(ClientKind::Ours, EraChoice::Auto);
    for legacy_only in [false, true] {
        let shape = Shape {
            legacy_only,
            ..Shape::default()
        };
        runner.connect(label, auto, Transport::Stdio, "multi", shape);
    }
}

pub fn orchestrate(options: &Options) {
    let started = Instant::now();
    let load_at_start = load_average();
    let (rounds, timing) = Timing::for_mode("--eras", options, [1, 150, 30, 3], [3, 1500, 300, 15]);
    let scenarios = crate::Scenario::all(options);
    let both = |kind| [EraChoice::Legacy, EraChoice::Modern].map(|era| Contender::new(kind, era));
    let contenders: Vec<Contender> = ClientKind::ALL.into_iter().flat_map(both).collect();
    let dual = Shape::default();
    let legacy_only = Shape {
        legacy_only: true,
        ..Shape::default()
    };
    let mut connects = Vec::new();
    for transport in [Transport::Stdio, Transport::Http] {
        for (server, shape) in [("dual-era", dual), ("legacy-only", legacy_only)] {
            let mut who: Vec<Contender> = vec![Contender::new(ClientKind::Raw, EraChoice::Legacy)];
            if !shape.legacy_only {
                who.push(Contender::new(ClientKind::Raw, EraChoice::Modern));
            }
            who.extend(
                [EraChoice::Legacy, EraChoice::Modern, EraChoice::Auto]
                    .map(|era| Contender::new(ClientKind::Ours, era)),
            );
            who.push(Contender::new(ClientKind::Rmcp, EraChoice::Legacy));
            if !shape.legacy_only {
                who.push(Contender::new(ClientKind::Rmcp, EraChoice::Modern));
            }
            // smthrs-mcp pinned to 2026-07-28 is refused by a legacy server.
            who.retain(|w| !(shape.legacy_only && w.era == EraChoice::Modern));
            connects.extend(who.into_iter().map(|who| ConnectPoint {
                label: format!("{} connect {server}", transport.name()),
                transport,
                shape,
                who,
            }));
        }
    }
    let plan = Plan {
        scenarios: &scenarios,
        contenders,
        connects,
    };
    let mut runner = Runner::new(options, timing);
    let measured = runner.rounds(rounds, &plan);
    let failures = std::mem::take(&mut runner.failures);
    drop(runner);

    let elapsed = started.elapsed().as_secs_f64();
    let what = format!(
        "{}; medians, ratios paired by round; {elapsed:.0} s in all",
        timing.describe(rounds)
    );
    let mut out = crate::report_header(options, &load_at_start, &what) + "\n";
    out += &throughput_table(&plan, &measured);
    out += "\n";
    out += &connect_table(&plan, &measured);
    crate::print_report(&out, &failures);
    if !failures.is_empty() {
        std::process::exit(1);
    }
}

/// calls/s per scenario: each client in both eras, and the ratios.
fn throughput_table(plan: &Plan<'_>, measured: &Measured) -> String {
    let mut out = String::from(
        "| scenario | raw legacy | raw modern | smthrs-mcp legacy | smthrs-mcp modern | rmcp legacy | rmcp modern | ours modern / legacy | raw modern / legacy | rmcp modern / legacy | ours / raw, legacy / modern | peak RSS MiB ours legacy / modern |\n",
    );
    out += "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    let mut checks = Vec::new();
    for (index, scenario) in plan.scenarios.iter().enumerate() {
        let key = |kind, era| (index, Contender::new(kind, era));
        let rate = |kind, era| median_of(&measured.throughput, &key(kind, era));
        let mem = |era| peak_mib(&measured.throughput, &key(ClientKind::Ours, era));
        // Ratios of the same round's runs (see `paired_ratio`).
        let ratio = |a: (ClientKind, EraChoice), b: (ClientKind, EraChoice)| {
            let ratio = paired_ratio(&measured.throughput, &key(a.0, a.1), &key(b.0, b.1));
            crate::fmt_times(ratio)
        };
        let (legacy, modern) = (EraChoice::Legacy, EraChoice::Modern);
        let modern_vs_legacy = |kind| ratio((kind, modern), (kind, legacy));
        let [raw, ours, rmcp] =
            ClientKind::ALL.map(|kind| (rate(kind, legacy), rate(kind, modern)));
        if [raw, ours, rmcp]
            .iter()
            .all(|(l, m)| l.is_none() && m.is_none())
        {
            continue;
        }
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {} / {} |\n",
            scenario.name(),
            fmt_rate(raw.0),
            fmt_rate(raw.1),
            fmt_rate(ours.0),
            fmt_rate(ours.1),
            fmt_rate(rmcp.0),
            fmt_rate(rmcp.1),
            modern_vs_legacy(ClientKind::Ours),
            modern_vs_legacy(ClientKind::Raw),
            modern_vs_legacy(ClientKind::Rmcp),
            ratio((ClientKind::Ours, legacy), (ClientKind::Raw, legacy)),
            ratio((ClientKind::Ours, modern), (ClientKind::Raw, modern)),
            fmt_mem(mem(legacy)),
            fmt_mem(mem(modern)),
        );
        let ours_key = |era| key(ClientKind::Ours, era);
        if let Some(r) = paired_ratio(&measured.throughput, &ours_key(modern), &ours_key(legacy)) {
            checks.push((scenario.name(), r));
        }
    }
    if !checks.is_empty() {
        out += &format!(
            "\n| target: smthrs-mcp modern >= {TARGET} x legacy | this run | met |\n| --- | ---: | --- |\n"
        );
        for (name, ratio) in checks {
            let met = if ratio >= TARGET { "yes" } else { "**no**" };
            out += &format!("| {name} | {ratio:.2}x | {met} |\n");
        }
    }
    out
}

/// Connect cost (ms) per transport and server, and `auto` against `legacy`.
fn connect_table(plan: &Plan<'_>, measured: &Measured) -> String {
    let mut out = String::from(
        "| connect | raw legacy | raw modern | smthrs-mcp legacy | smthrs-mcp modern | smthrs-mcp auto | auto / legacy | rmcp legacy | rmcp modern |\n",
    );
    out += "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
    let mut labels: Vec<&str> = plan.connects.iter().map(|p| p.label.as_str()).collect();
    labels.dedup();
    for label in labels {
        let ms = |kind, era| {
            let who = Contender::new(kind, era);
            let index = plan
                .connects
                .iter()
                .position(|p| p.label == label && p.who == who)?;
            median_of(&measured.connect, &index).map(|us| us / 1e3)
        };
        let ours_legacy = ms(ClientKind::Ours, EraChoice::Legacy);
        let ours_auto = ms(ClientKind::Ours, EraChoice::Auto);
        if [ours_legacy, ours_auto].iter().all(Option::is_none) {
            continue;
        }
        let point = |era| {
            let who = Contender::new(ClientKind::Ours, era);
            plan.connects
                .iter()
                .position(|p| p.label == label && p.who == who)
        };
        let auto_vs_legacy = match (point(EraChoice::Auto), point(EraChoice::Legacy)) {
            (Some(a), Some(l)) => paired_ratio(&measured.connect, &a, &l)
                .map_or_else(|| "-".to_string(), |r| format!("{r:.2}x")),
            _ => "-".to_string(),
        };
        out += &format!(
            "| {label} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            fmt_ms(ms(ClientKind::Raw, EraChoice::Legacy)),
            fmt_ms(ms(ClientKind::Raw, EraChoice::Modern)),
            fmt_ms(ours_legacy),
            fmt_ms(ms(ClientKind::Ours, EraChoice::Modern)),
            fmt_ms(ours_auto),
            auto_vs_legacy,
            fmt_ms(ms(ClientKind::Rmcp, EraChoice::Legacy)),
            fmt_ms(ms(ClientKind::Rmcp, EraChoice::Modern)),
        );
    }
    out
}
