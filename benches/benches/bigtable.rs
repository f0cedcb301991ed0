//! The Go client bench's workload (`../shared/peers/go-bigtable-bench/main.go`) through
//! rowkit's Bigtable adapter, so the two figures compare: a rowkit machine per request, the
//! Tokio driver (`rowkit_client::run`), the prost conversions and tonic over loopback HTTP/2
//! to `cbtemulator` (started here through `rowkit_testkit::emulator`), on one connection.
//!
//! Setup: table `peerbench`, family `m` with GC max-versions 1, row `read/0` holding one
//! 100-byte cell `m:c`. For each RPC and each number of workers in flight (each worker issues
//! its next request as soon as the previous one returns): 0.5 s warm-up, then 5 s measured;
//! one line per cell in the Go program's format (`goroutines=` is the workers in flight):
//!
//! - `ReadRow`: a one-key `ReadRows` machine for `read/0`, no filter; the row is checked.
//! - `MutateRow`: the retrying `MutateRow` machine (Go's `Apply` retries idempotent writes
//!   too) with one SetCell `m:c` ts=1000 µs of the 100-byte value on row `mut/<w>`.
//! - `CheckAndMutateRow`: one `Unary` (never retried, like Go's conditional `Apply`) on row
//!   `cam/<w>`: predicate `Chain(Family m, Column v, LatestN 1, Value <8-hex version>)`, true
//!   mutation Set `m:v` ts=1000 µs `<version+1>`; every reply must say `matched`.
//!
//! ```sh
//! cargo bench -p rowkit-benches --bench bigtable                     # the six cells
//! cargo bench -p rowkit-benches --bench bigtable -- --runtime multi  # 2-worker runtime
//! cargo bench -p rowkit-benches --bench bigtable -- --criterion      # + criterion latency
//! ```
//!
//! Other flags: `--duration S`, `--warmup S` (seconds, fractions allowed), `--conc 1,16`,
//! `--ops ReadRow,MutateRow,CheckAndMutateRow`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::Criterion;
use rowkit_bigtable::BigtableConnection;
use rowkit_client::{Driver, TokioDriver, run};
use rowkit_codec::model::{ColumnFamily, Mutation, RowFilter, RowSet, Timestamp};
use rowkit_statemachines::raw::{MutateRow, Unary};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    CheckAndMutateRowRequest, MutateRowRequest, ReadRowsRequest, Request, Response, RetryPolicy,
};
use rowkit_testkit::emulator::Emulator;

const TABLE: &str = "peerbench";
const FAMILY: &str = "m";
const READ_ROW: &[u8] = b"read/0";
/// Every cell is written at this timestamp (µs), as in the Go program: each write replaces
/// the same version, so rows never pile up versions in the emulator (which GCs lazily).
const CELL_TS: Timestamp = Timestamp(1000);

/// The three RPCs, in the Go program's order.
#[derive(Clone, Copy, Debug)]
#[allow(clippy::enum_variant_names)] // the RPCs' own names
enum Op {
    ReadRow,
    MutateRow,
    CheckAndMutateRow,
}

impl Op {
    const ALL: [Op; 3] = [Op::ReadRow, Op::MutateRow, Op::CheckAndMutateRow];

    fn name(self) -> &'static str {
        match self {
            Op::ReadRow => "ReadRow",
            Op::MutateRow => "MutateRow",
            Op::CheckAndMutateRow => "CheckAndMutateRow",
        }
    }
}

/// What the workers share: the driver, the 100-byte value, each worker's rows and the
/// current version of its `cam/<w>` row.
struct Workload {
    driver: TokioDriver,
    value: Vec<u8>,
    mut_rows: Vec<Vec<u8>>,
    cam_rows: Vec<Vec<u8>>,
    /// Worker `w` alone reads and writes slot `w`.
    versions: Vec<AtomicU32>,
    /// Seeds of the retrying machines (the retry jitter; never used without a failure).
    seeds: AtomicU64,
}

fn set_cell(qualifier: &[u8], value: Vec<u8>) -> Mutation {
    Mutation::SetCell {
        family: FAMILY.into(),
        qualifier: qualifier.to_vec(),
        timestamp: CELL_TS,
        value,
    }
}

impl Workload {
    /// One request of `op` for worker `w`, built from scratch as the Go program does.
    async fn one(&self, op: Op, w: usize) -> Result<(), String> {
        let d = &self.driver;
        let seed = self.seeds.fetch_add(1, Ordering::Relaxed);
        match op {
            Op::ReadRow => {
                let req = ReadRowsRequest {
                    table: TABLE.into(),
                    rows: RowSet::key(READ_ROW),
                    ..Default::default()
                };
                let m = ReadRows::new(req, d.now(), seed, RetryPolicy::default());
                let mut ok = false;
                let n = run(d, m, |row| {
                    ok = row.key == READ_ROW
                        && row.cells.len() == 1
                        && row.cells[0].family == FAMILY
                        && row.cells[0].value == self.value;
                })
                .await
                .map_err(|e| format!("ReadRow: {e}"))?;
                if n != 1 || !ok {
                    return Err(format!("ReadRow returned {n} rows, expected cell: {ok}"));
                }
            }
            Op::MutateRow => {
                let req = MutateRowRequest {
                    table: TABLE.into(),
                    row_key: self.mut_rows[w].clone(),
                    mutations: vec![set_cell(b"c", self.value.clone())],
                    ..Default::default()
                };
                let m = MutateRow::new(req, d.now(), seed, RetryPolicy::default());
                run(d, m, |()| {})
                    .await
                    .map_err(|e| format!("MutateRow: {e}"))?;
            }
            Op::CheckAndMutateRow => {
                let version = self.versions[w].load(Ordering::Relaxed);
                let next = version.wrapping_add(1);
                let predicate = RowFilter::Chain(vec![
                    RowFilter::FamilyNameRegex(FAMILY.into()),
                    RowFilter::ColumnQualifierRegex(b"v".to_vec()),
                    RowFilter::CellsPerColumnLimit(1),
                    RowFilter::ValueRegex(format!("{version:08x}").into_bytes()),
                ]);
                let req = Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                    table: TABLE.into(),
                    row_key: self.cam_rows[w].clone(),
                    predicate: Some(predicate),
                    true_mutations: vec![set_cell(b"v", format!("{next:08x}").into_bytes())],
                    ..Default::default()
                });
                match run(d, Unary::new(req), |()| {}).await {
                    Ok(Response::CheckAndMutateRow {
                        predicate_matched: true,
                    }) => self.versions[w].store(next, Ordering::Relaxed),
                    Ok(other) => {
                        return Err(format!(
                            "CheckAndMutateRow on cam/{w:02}: predicate {version:08x} did not match ({other:?})"
                        ));
                    }
                    Err(e) => return Err(format!("CheckAndMutateRow: {e}")),
                }
            }
        }
        Ok(())
    }
}

/// Requests done, wall time, and every request's latency.
struct Outcome {
    requests: usize,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

/// `workers` tasks issue `op` back to back until `d` has passed (like the Go program's
/// goroutines); the first error ends the run.
async fn drive(load: &Arc<Workload>, op: Op, workers: usize, d: Duration) -> Outcome {
    let start = Instant::now();
    let deadline = start + d;
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let load = Arc::clone(load);
            tokio::spawn(async move {
                let mut lat = Vec::with_capacity(1 << 16);
                while Instant::now() < deadline {
                    let t0 = Instant::now();
                    load.one(op, w).await?;
                    lat.push(t0.elapsed());
                }
                Ok::<_, String>(lat)
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for t in tasks {
        match t.await.expect("worker task panicked") {
            Ok(lat) => latencies.extend(lat),
            Err(e) => panic!("{e}"),
        }
    }
    Outcome {
        requests: latencies.len(),
        elapsed: start.elapsed(),
        latencies,
    }
}

/// The latency at quantile `p` of sorted latencies, picked as the Go program does.
fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // Truncation as Go's int(p * float64(len-1)).
    sorted[(p * (sorted.len() - 1) as f64) as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3}ms", d.as_secs_f64() * 1e3)
}

/// Command-line flags (see the module doc).
struct Flags {
    duration: Duration,
    warmup: Duration,
    conc: Vec<usize>,
    ops: Vec<Op>,
    multi_thread: bool,
    criterion: bool,
}

fn flags() -> Flags {
    let mut f = Flags {
        duration: Duration::from_secs(5),
        warmup: Duration::from_millis(500),
        conc: vec![1, 16],
        ops: Op::ALL.to_vec(),
        multi_thread: false,
        criterion: false,
    };
    let secs = |v: Option<String>| Duration::from_secs_f64(v.unwrap().parse().unwrap());
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--duration" => f.duration = secs(args.next()),
            "--warmup" => f.warmup = secs(args.next()),
            "--conc" => {
                f.conc = args
                    .next()
                    .unwrap()
                    .split(',')
                    .map(|n| n.trim().parse().unwrap())
                    .collect();
                assert!(f.conc.iter().all(|&n| (1..=256).contains(&n)), "bad --conc");
            }
            "--ops" => {
                let names = args.next().unwrap();
                f.ops = Op::ALL
                    .into_iter()
                    .filter(|op| names.split(',').any(|n| n == op.name()))
                    .collect();
            }
            "--runtime" => {
                f.multi_thread = match args.next().as_deref() {
                    Some("multi") => true,
                    Some("current") => false,
                    other => panic!("--runtime current|multi, not {other:?}"),
                }
            }
            "--criterion" => f.criterion = true,
            // `cargo bench` passes `--bench`; criterion-style filters are not used here.
            _ => {}
        }
    }
    f
}

/// The table, the read row and every worker's `cam/<w>` row at its first version.
async fn setup(emu: &Emulator, workers: usize) -> Workload {
    let conn = BigtableConnection::connect(emu.fresh_target(), None)
        .await
        .expect("connecting to the emulator");
    conn.create_table(TABLE, &[ColumnFamily::max_versions(FAMILY, 1)])
        .await
        .expect("creating the table");
    let load = Workload {
        driver: TokioDriver::new(conn),
        value: (0..100u8).map(|i| b'a' + i % 26).collect(),
        mut_rows: (0..workers)
            .map(|w| format!("mut/{w:02}").into_bytes())
            .collect(),
        cam_rows: (0..workers)
            .map(|w| format!("cam/{w:02}").into_bytes())
            .collect(),
        // As in the Go program: w * 1000003, so no two rows share a version.
        versions: (0..workers)
            .map(|w| AtomicU32::new((w as u32).wrapping_mul(1_000_003)))
            .collect(),
        seeds: AtomicU64::new(1),
    };
    let seed = |row: &[u8], q: &[u8], value: Vec<u8>| MutateRowRequest {
        table: TABLE.into(),
        row_key: row.to_vec(),
        mutations: vec![set_cell(q, value)],
        ..Default::default()
    };
    let d = &load.driver;
    let mut rows = vec![seed(READ_ROW, b"c", load.value.clone())];
    for w in 0..workers {
        let v = load.versions[w].load(Ordering::Relaxed);
        rows.push(seed(
            &load.cam_rows[w],
            b"v",
            format!("{v:08x}").into_bytes(),
        ));
    }
    for req in rows {
        let m = MutateRow::new(req, d.now(), 0, RetryPolicy::default());
        run(d, m, |()| {}).await.expect("seeding a row");
    }
    load
}

fn main() {
    let f = flags();
    let Some(emu) = Emulator::shared_or_skip("bigtable bench") else {
        return;
    };
    let mut rt = if f.multi_thread {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let rt = rt.enable_all().build().unwrap();
    let workers = f.conc.iter().copied().max().unwrap_or(1);
    let load = Arc::new(rt.block_on(setup(emu, workers)));
    println!(
        "# rowkit (rowkit-bigtable + TokioDriver, {} runtime) -> emulator {}",
        if f.multi_thread {
            "multi_thread"
        } else {
            "current_thread"
        },
        emu.host()
    );
    println!("# {:?} per figure after {:?} warm-up", f.duration, f.warmup);
    for &op in &f.ops {
        for &n in &f.conc {
            rt.block_on(drive(&load, op, n, f.warmup));
            let mut res = rt.block_on(drive(&load, op, n, f.duration));
            res.latencies.sort_unstable();
            let secs = res.elapsed.as_secs_f64();
            println!(
                "{:<18} goroutines={:<3} requests={:<7} elapsed={:.2}s  req/s={:>8.0}  p50={} p99={}",
                op.name(),
                n,
                res.requests,
                secs,
                res.requests as f64 / secs,
                ms(pct(&res.latencies, 0.50)),
                ms(pct(&res.latencies, 0.99)),
            );
        }
    }
    if f.criterion {
        // Criterion's statistics for the one-in-flight latency of each RPC.
        let mut c = Criterion::default()
            .sample_size(20)
            .warm_up_time(f.warmup)
            .measurement_time(f.duration);
        let mut group = c.benchmark_group("bigtable-emulator");
        group.throughput(criterion::Throughput::Elements(1));
        for &op in &f.ops {
            group.bench_function(format!("{}/1 in flight", op.name()), |b| {
                b.iter_custom(|iters| {
                    rt.block_on(async {
                        let start = Instant::now();
                        for _ in 0..iters {
                            load.one(op, 0).await.unwrap();
                        }
                        start.elapsed()
                    })
                })
            });
        }
        group.finish();
        c.final_summary();
    }
}
