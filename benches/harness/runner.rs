//! Runs one measured client process and collects what it reports: the cell every
//! table of the harness (the default table, `--eras`, `--curve`) is made of.
//!
//! A [`Contender`] is a client in an era. The [`Runner`] starts the HTTP echo
//! servers it needs (one per server [`Shape`], each for the whole run), re-executes
//! this binary in a role for each measurement, prints a progress line on stderr
//! and keeps the failures: a failed measurement is reported, never fatal before
//! the report is printed.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::{ClientKind, EraChoice, HttpServer, Options, Scenario, Transport, run_role, wanted};
use smthrs_mcp_testkit::echo::Shape;

/// A client in one era: what a column of a table measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Contender {
    pub kind: ClientKind,
    pub era: EraChoice,
}

impl Contender {
    pub const fn new(kind: ClientKind, era: EraChoice) -> Contender {
        Contender { kind, era }
    }

    /// `raw`, `smthrs-mcp`, `rmcp` in the legacy era; `raw modern`,
    /// `smthrs-mcp auto`, ... otherwise.
    pub fn name(&self) -> String {
        match self.era {
            EraChoice::Legacy => self.kind.name().to_string(),
            era => format!("{} {}", self.kind.name(), era.name()),
        }
    }
}

/// How long each throughput run lasts.
#[derive(Clone, Copy)]
pub struct Timing {
    pub duration_ms: u64,
    pub warmup_ms: u64,
    /// Connects per `connect` process.
    pub connect_iters: usize,
}

impl Timing {
    /// A mode's rounds and timing: `--rounds`, `--duration-ms` and `--warmup-ms`
    /// over its defaults `[rounds, duration ms, warm-up ms, connects]`, one set for
    /// `--quick` and one for a full run. Announces the mode on stderr.
    pub fn for_mode(
        mode: &str,
        options: &Options,
        quick: [u64; 4],
        full: [u64; 4],
    ) -> (usize, Timing) {
        let [rounds, duration_ms, warmup_ms, connects] = if options.quick { quick } else { full };
        let rounds = options.rounds.unwrap_or(rounds as usize);
        let timing = Timing {
            duration_ms: options.duration_ms.unwrap_or(duration_ms),
            warmup_ms: options.warmup_ms.unwrap_or(warmup_ms),
            connect_iters: connects as usize,
        };
        eprintln!(
            "harness {mode}: {rounds} round(s), {} ms per run; load average {}",
            timing.duration_ms,
            crate::load_average()
        );
        (rounds, timing)
    }
}

impl Timing {
    /// "3 round(s) x 500 ms per run after 100 ms warm-up", for a report.
    pub fn describe(&self, rounds: usize) -> String {
        let Timing {
            duration_ms,
            warmup_ms,
            ..
        } = self;
        format!("{rounds} round(s) x {duration_ms} ms per run after {warmup_ms} ms warm-up")
    }
}

/// What one measured process reported.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    /// calls/s (throughput), microseconds (connect) or milliseconds (servers).
    pub value: f64,
    /// The process's peak RSS.
    pub rss_kib: f64,
}

pub struct Runner<'a> {
    pub options: &'a Options,
    pub timing: Timing,
    http: BTreeMap<Shape, HttpServer>,
    pub failures: Vec<String>,
}

impl<'a> Runner<'a> {
    pub fn new(options: &'a Options, timing: Timing) -> Runner<'a> {
        Runner {
            options,
            timing,
            http: BTreeMap::new(),
            failures: Vec::new(),
        }
    }

    /// The options every role of `who` on `transport` takes (starting the HTTP
    /// server of this shape if there is none yet).
    fn common(
        &mut self,
        who: Contender,
        transport: Transport,
        rt: &str,
        shape: Shape,
    ) -> Vec<String> {
        let base = self.http_base(shape);
        let mut args = vec![
            "--client".into(),
            who.kind.name().into(),
            "--transport".into(),
            transport.name().into(),
            "--rt".into(),
            rt.to_string(),
            "--http-base".into(),
            base,
            "--era".into(),
            who.era.name().into(),
        ];
        args.extend(shape.args());
        args
    }

    /// Runs this binary in `role` for `who` (with `extra` options after the
    /// common ones); the parsed report, or `None` (the failure kept).
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        role: &str,
        label: &str,
        who: Contender,
        transport: Transport,
        rt: &str,
        shape: Shape,
        extra: &[String],
        limit: Duration,
    ) -> Option<Value> {
        let mut args = vec![role.to_string()];
        args.extend(self.common(who, transport, rt, shape));
        args.extend_from_slice(extra);
        match run_role(&args, limit) {
            Ok(value) => Some(value),
            Err(error) => {
                eprintln!("  {label} {}: FAILED {error}", who.name());
                self.failures
                    .push(format!("{label} {}: {error}", who.name()));
                None
            }
        }
    }

    /// True unless `--only` excludes every one of `names`.
    pub fn wanted(&self, names: &[&str]) -> bool {
        wanted(self.options, names)
    }

    /// A timed throughput run: calls/s with `inflight` outstanding.
    pub fn throughput(
        &mut self,
        label: &str,
        who: Contender,
        transport: Transport,
        rt: &str,
        inflight: usize,
        shape: Shape,
    ) -> Option<Sample> {
        let timing = self.timing;
        let extra = [
            "--inflight".into(),
            inflight.to_string(),
            "--duration-ms".into(),
            timing.duration_ms.to_string(),
            "--warmup-ms".into(),
            timing.warmup_ms.to_string(),
        ];
        let limit = Duration::from_millis(timing.duration_ms + timing.warmup_ms + 30_000);
        let value = self.run("client", label, who, transport, rt, shape, &extra, limit)?;
        let sample = sample(&value, "rate");
        eprintln!(
            "  {label:<32} {:<18} {:>10.0} calls/s  {:>6.1} MiB",
            who.name(),
            sample.value,
            sample.rss_kib / 1024.0
        );
        Some(sample)
    }

    /// The median of `connect_iters` connects (spawn or client build, handshake,
    /// `tools/list`, close), in microseconds.
    pub fn connect(
        &mut self,
        label: &str,
        who: Contender,
        transport: Transport,
        rt: &str,
        shape: Shape,
    ) -> Option<Sample> {
        let extra = ["--iters".into(), self.timing.connect_iters.to_string()];
        let limit = Duration::from_secs(120);
        let value = self.run("connect", label, who, transport, rt, shape, &extra, limit)?;
        let sample = sample(&value, "median_us");
        eprintln!("  {label:<32} {:<18} {:>10.0} us", who.name(), sample.value);
        Some(sample)
    }

    /// `count` stdio servers connected, listed and closed from one process, in
    /// milliseconds.
    pub fn servers(
        &mut self,
        label: &str,
        who: Contender,
        count: usize,
        shape: Shape,
    ) -> Option<Sample> {
        let extra = ["--servers".into(), count.to_string()];
        let limit = Duration::from_secs(120);
        let value = self.run(
            "servers",
            label,
            who,
            Transport::Stdio,
            "multi",
            shape,
            &extra,
            limit,
        )?;
        let sample = sample(&value, "ms");
        eprintln!(
            "  {label:<32} {:<18} {:>10.0} ms  {:>6.1} MiB",
            who.name(),
            sample.value,
            sample.rss_kib / 1024.0
        );
        Some(sample)
    }

    /// The base URL of the HTTP server for `shape` (started if needed).
    pub fn http_base(&mut self, shape: Shape) -> String {
        self.http
            .entry(shape)
            .or_insert_with(|| HttpServer::start(shape))
            .base
            .clone()
    }
}

fn sample(value: &Value, key: &str) -> Sample {
    Sample {
        value: value[key].as_f64().unwrap_or(f64::NAN),
        rss_kib: value["rss_kib"].as_f64().unwrap_or(f64::NAN),
    }
}

/// Samples by key, one per round.
pub type Samples<K> = BTreeMap<K, Vec<Sample>>;

/// The median value of `key`'s samples.
pub fn median_of<K: Ord>(samples: &Samples<K>, key: &K) -> Option<f64> {
    let values: Vec<f64> = samples.get(key)?.iter().map(|s| s.value).collect();
    Some(crate::median(&values))
}

/// The largest peak RSS of `key`'s samples, in MiB.
pub fn peak_mib<K: Ord>(samples: &Samples<K>, key: &K) -> Option<f64> {
    let samples = samples.get(key)?;
    Some(samples.iter().map(|s| s.rss_kib).fold(0.0, f64::max) / 1024.0)
}

/// One connect measurement of a plan: its label, where, against which server.
pub struct ConnectPoint {
    pub label: String,
    pub transport: Transport,
    pub shape: Shape,
    pub who: Contender,
}

/// What a run of rounds measures: every scenario for every contender, then every
/// connect point, each round in this order (so drift hits all alike).
pub struct Plan<'s> {
    pub scenarios: &'s [Scenario],
    pub contenders: Vec<Contender>,
    pub connects: Vec<ConnectPoint>,
}

/// A plan's samples: throughput by (scenario index, contender), connects by
/// point index.
#[derive(Default)]
pub struct Measured {
    pub throughput: Samples<(usize, Contender)>,
    pub connect: Samples<usize>,
}

impl Runner<'_> {
    /// Runs `plan` `rounds` times (`--only` filters scenarios, clients and
    /// connect labels).
    pub fn rounds(&mut self, rounds: usize, plan: &Plan<'_>) -> Measured {
        let mut measured = Measured::default();
        let rt = self.options.rt.clone().unwrap_or_else(|| "multi".into());
        for round in 0..rounds {
            eprintln!("harness: round {}/{rounds}", round + 1);
            for (index, scenario) in plan.scenarios.iter().enumerate() {
                let label = scenario.name();
                for &who in &plan.contenders {
                    if !self.wanted(&[&label, who.kind.name()]) {
                        continue;
                    }
                    let (transport, inflight) = (scenario.transport, scenario.inflight);
                    let shape = Shape::default();
                    if let Some(sample) =
                        self.throughput(&label, who, transport, &scenario.rt, inflight, shape)
                    {
                        measured
                            .throughput
                            .entry((index, who))
                            .or_default()
                            .push(sample);
                    }
                }
            }
            for (index, point) in plan.connects.iter().enumerate() {
                if !self.wanted(&[&point.label, point.who.kind.name()]) {
                    continue;
                }
                let (who, transport, shape) = (point.who, point.transport, point.shape);
                if let Some(sample) = self.connect(&point.label, who, transport, &rt, shape) {
                    measured.connect.entry(index).or_default().push(sample);
                }
            }
        }
        measured
    }
}

/// The median over the rounds of `a`'s figure divided by `b`'s in the same round:
/// the two ran minutes apart at most, one right after the other, so the machine's
/// load cancels out better than in a ratio of medians (`docs/benchmarks-notebook.md`,
/// "Results").
pub fn paired_ratio<K: Ord>(samples: &Samples<K>, a: &K, b: &K) -> Option<f64> {
    let (a, b) = (samples.get(a)?, samples.get(b)?);
    let ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(_, b)| b.value > 0.0)
        .map(|(a, b)| a.value / b.value)
        .collect();
    (!ratios.is_empty()).then(|| crate::median(&ratios))
}
