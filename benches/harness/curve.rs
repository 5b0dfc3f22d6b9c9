//! `--curve`: how the cost grows, each point against the raw loop and rmcp in the
//! same run (issue 16 §2).
//!
//! - **Catalog size**: 1, 256, 4096 tools in one `tools/list` page (`echo` last),
//!   stdio and HTTP: connect time, then sequential calls/s and peak RSS of a
//!   client holding that catalog. smthrs-mcp runs with `maxTools` and
//!   `maxFrameBytes` raised to fit (`clients::limits_for`).
//! - **Result size**: a 100 B, 10 KiB, 100 KiB and 1 MiB text per call, stdio and
//!   HTTP, sequential and 64 in flight (`maxFrameBytes` raised to 2 MiB for 1 MiB).
//! - **Concurrency**: 1, 4, 16, 64, 256, 1024 calls in flight, stdio and HTTP
//!   (`queueCapacity` raised to the in-flight count past 64; the raw stdio loop
//!   past 64 writes and reads in two joined futures).
//! - **Server count**: 1, 10, 50, 200 stdio servers connected from one process as
//!   the CLI's `tools` does (all connects in parallel, catalogs read, all closed):
//!   time to done and peak RSS; the raw loop does the same handshakes, rmcp the
//!   same connects and `tools/list`.
//!
//! Each round runs every point for every client, interleaved; figures are medians
//! over the rounds (default 3, 500 ms per throughput run after 100 ms warm-up,
//! 5 connects per connect process). All clients on the multi-thread runtime.

use std::time::Instant;

use crate::runner::{Contender, Runner, Samples, Timing, median_of, paired_ratio, peak_mib};
use crate::{ClientKind, MAX_INFLIGHT, Options, Transport, fmt_mem, fmt_rate, load_average};
use smthrs_mcp_testkit::echo::Shape;

const CATALOG_SIZES: [usize; 3] = [1, 256, 4096];
const RESULT_SIZES: [usize; 4] = [100, 10 << 10, 100 << 10, 1 << 20];
const CONCURRENCY: [usize; 6] = [1, 4, 16, 64, 256, 1024];
const SERVER_COUNTS: [usize; 4] = [1, 10, 50, 200];

/// What one point measures.
#[derive(Clone, Copy)]
enum Measure {
    /// calls/s with this many in flight.
    Calls {
        transport: Transport,
        inflight: usize,
    },
    /// The median connect, in microseconds.
    Connect { transport: Transport },
    /// This many stdio servers connected, listed and closed, in milliseconds.
    Servers { count: usize },
}

/// One point of the curve.
struct Point {
    /// Which table it belongs to.
    dimension: &'static str,
    /// The row's label (its coordinate).
    label: String,
    shape: Shape,
    measure: Measure,
}

impl Point {
    fn name(&self) -> String {
        format!("curve {} {}", self.dimension, self.label)
    }
}

fn points() -> Vec<Point> {
    let mut points = Vec::new();
    let transports = [Transport::Stdio, Transport::Http];
    for tools in CATALOG_SIZES {
        for transport in transports {
            let shape = Shape {
                tools,
                ..Shape::default()
            };
            let label = format!("{tools} tools, {}", transport.name());
            for measure in [
                Measure::Connect { transport },
                Measure::Calls {
                    transport,
                    inflight: 1,
                },
            ] {
                let label = label.clone();
                points.push(Point {
                    dimension: "catalog",
                    label,
                    shape,
                    measure,
                });
            }
        }
    }
    for bytes in RESULT_SIZES {
        for transport in transports {
            for inflight in [1, MAX_INFLIGHT] {
                let shape = Shape {
                    result_bytes: Some(bytes),
                    ..Shape::default()
                };
                points.push(Point {
                    dimension: "result",
                    label: format!(
                        "{}, {}, {inflight} in flight",
                        size(bytes),
                        transport.name()
                    ),
                    shape,
                    measure: Measure::Calls {
                        transport,
                        inflight,
                    },
                });
            }
        }
    }
    for inflight in CONCURRENCY {
        for transport in transports {
            points.push(Point {
                dimension: "concurrency",
                label: format!("{inflight} in flight, {}", transport.name()),
                shape: Shape::default(),
                measure: Measure::Calls {
                    transport,
                    inflight,
                },
            });
        }
    }
    for count in SERVER_COUNTS {
        points.push(Point {
            dimension: "servers",
            label: format!("{count} stdio servers"),
            shape: Shape::default(),
            measure: Measure::Servers { count },
        });
    }
    points
}

fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// The CI smoke's share of the curve (`--quick`): the far end of each dimension
/// once, so the raised limits, the split raw loop, the big catalog and the many
/// servers keep working. Prints progress lines only; failures go to the runner.
pub fn smoke(runner: &mut Runner<'_>) {
    let era = runner.options.era;
    let ours = Contender::new(ClientKind::Ours, era);
    let raw = Contender::new(ClientKind::Raw, era);
    let big_catalog = Shape {
        tools: CATALOG_SIZES[2],
        ..Shape::default()
    };
    let big_result = Shape {
        result_bytes: Some(RESULT_SIZES[3]),
        ..Shape::default()
    };
    let stdio = Transport::Stdio;
    let label = "smoke: curve";
    if !runner.wanted(&[label]) {
        return;
    }
    runner.connect(label, ours, stdio, "multi", big_catalog);
    runner.throughput(label, ours, stdio, "multi", 1, big_result);
    for who in [raw, ours] {
        runner.throughput(label, who, stdio, "multi", CONCURRENCY[5], Shape::default());
    }
    runner.servers(label, ours, SERVER_COUNTS[2], Shape::default());
}

pub fn orchestrate(options: &Options) {
    let started = Instant::now();
    let load_at_start = load_average();
    let (rounds, timing) = Timing::for_mode("--curve", options, [1, 100, 20, 2], [3, 500, 100, 5]);
    let points = points();
    let contenders = ClientKind::ALL.map(|kind| Contender::new(kind, options.era));
    let mut runner = Runner::new(options, timing);
    let mut measured: Samples<(usize, Contender)> = Samples::new();
    for round in 0..rounds {
        eprintln!("harness: round {}/{rounds}", round + 1);
        for (index, point) in points.iter().enumerate() {
            let name = point.name();
            for who in contenders {
                if !runner.wanted(&[&name, who.kind.name()]) {
                    continue;
                }
                let shape = point.shape;
                let sample = match point.measure {
                    Measure::Calls {
                        transport,
                        inflight,
                    } => runner.throughput(&name, who, transport, "multi", inflight, shape),
                    Measure::Connect { transport } => {
                        runner.connect(&name, who, transport, "multi", shape)
                    }
                    Measure::Servers { count } => runner.servers(&name, who, count, shape),
                };
                if let Some(sample) = sample {
                    measured.entry((index, who)).or_default().push(sample);
                }
            }
        }
    }
    let failures = std::mem::take(&mut runner.failures);
    drop(runner);

    let what = format!(
        "{}, {} connects per process; era {}; medians, ratios paired by round; {:.0} s in all",
        timing.describe(rounds),
        timing.connect_iters,
        options.era.name(),
        started.elapsed().as_secs_f64()
    );
    let mut out = crate::report_header(options, &load_at_start, &what);
    let report = Report {
        points: &points,
        measured: &measured,
        contenders,
    };
    out += &report.table(
        "catalog",
        "catalog",
        &[Column::Connect, Column::Calls, Column::Rss],
    );
    out += &report.table("result", "result size", &[Column::Calls, Column::Rss]);
    out += &report.table("concurrency", "concurrency", &[Column::Calls, Column::Rss]);
    out += &report.table("servers", "server count", &[Column::Done, Column::Rss]);
    crate::print_report(&out, &failures);
    if !failures.is_empty() {
        std::process::exit(1);
    }
}

/// A group of columns: one figure for each client, then ours against each.
#[derive(Clone, Copy, PartialEq)]
enum Column {
    /// Median connect, ms (lower is better).
    Connect,
    /// calls/s.
    Calls,
    /// Time to done, ms (lower is better).
    Done,
    /// Largest peak RSS over the rounds, MiB (of the calls process, where the row
    /// has one).
    Rss,
}

struct Report<'a> {
    points: &'a [Point],
    measured: &'a Samples<(usize, Contender)>,
    contenders: [Contender; 3],
}

impl Report<'_> {
    /// The table of one dimension: a row per label, the point kinds of that label
    /// side by side.
    fn table(&self, dimension: &str, title: &str, columns: &[Column]) -> String {
        let mut head = format!("\n| {title} |");
        let mut rule = String::from("| --- |");
        for column in columns {
            let (what, ratios) = match column {
                Column::Connect => ("connect ms raw / ours / rmcp", true),
                Column::Calls => ("calls/s raw / ours / rmcp", true),
                Column::Done => ("time to done ms raw / ours / rmcp", true),
                Column::Rss => ("peak RSS MiB raw / ours / rmcp", false),
            };
            head += &format!(" {what} |");
            rule += " ---: |";
            if ratios {
                head += " ours / raw | ours / rmcp |";
                rule += " ---: | ---: |";
            }
        }
        let mut out = format!("{head}\n{rule}\n");
        let mut labels: Vec<&str> = self
            .points
            .iter()
            .filter(|p| p.dimension == dimension)
            .map(|p| p.label.as_str())
            .collect();
        labels.dedup();
        for label in labels {
            let mut row = format!("| {label} |");
            let mut any = false;
            for &column in columns {
                let cells = self.cells(dimension, label, column);
                any |= cells.iter().any(Option::is_some);
                let figures: Vec<String> = cells
                    .iter()
                    .map(|&v| match column {
                        Column::Calls => fmt_rate(v),
                        Column::Rss => fmt_mem(v),
                        Column::Connect | Column::Done => crate::fmt_ms(v),
                    })
                    .collect();
                row += &format!(" {} |", figures.join(" / "));
                if column != Column::Rss {
                    let [vs_raw, vs_rmcp] = self.ratios(dimension, label, column);
                    row += &format!(" {vs_raw} | {vs_rmcp} |");
                }
            }
            if any {
                out += &row;
                out += "\n";
            }
        }
        out
    }

    /// ours / raw and ours / rmcp of `column` for the row `label`, paired by round.
    fn ratios(&self, dimension: &str, label: &str, column: Column) -> [String; 2] {
        let index = self.index(dimension, label, column);
        let [raw, ours, rmcp] = self.contenders;
        [raw, rmcp].map(|other| {
            let ratio = index.and_then(|i| paired_ratio(self.measured, &(i, ours), &(i, other)));
            crate::fmt_times(ratio)
        })
    }

    /// The point of `column` in the row `label`.
    fn index(&self, dimension: &str, label: &str, column: Column) -> Option<usize> {
        self.points.iter().position(|p| {
            p.dimension == dimension
                && p.label == label
                && matches!(
                    (column, p.measure),
                    (Column::Connect, Measure::Connect { .. })
                        | (Column::Calls | Column::Rss, Measure::Calls { .. })
                        | (Column::Done | Column::Rss, Measure::Servers { .. })
                )
        })
    }

    /// raw, ours, rmcp figures of `column` for the row `label`.
    fn cells(&self, dimension: &str, label: &str, column: Column) -> [Option<f64>; 3] {
        let index = self.index(dimension, label, column);
        self.contenders.map(|who| {
            let key = (index?, who);
            match column {
                Column::Rss => peak_mib(self.measured, &key),
                Column::Connect => median_of(self.measured, &key).map(|us| us / 1e3),
                Column::Calls | Column::Done => median_of(self.measured, &key),
            }
        })
    }
}
