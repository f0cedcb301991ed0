//! The layout migrations (`docs/migration.md`): `rowkit s3 migrate` (object metadata, v0 → v1)
//! on a bucket of `--objects` objects and `rowkit gold migrate` (trace store, md5 → digest-id)
//! on a table of `--traces` traces — each one's rate, and the throughput of writers while it
//! copies as a ratio of their throughput without it, on the embedded store and over the
//! emulator.
//!
//! Each round, per schema and store (a fresh redb file with durable commits, as the CLI opens
//! it; with `--store embedded-lazy`, without, as the acceptance test opens it; or a fresh
//! emulator instance):
//!
//! 1. **Rate**: the data loaded through the schema's own writes, as the acceptance test's
//!    (`rowkit_testkit::live_migration`: a v0 bucket, every tenth object versioned; an md5 table
//!    of 3 tiles, every trace at 4 commits of each), then one migrator run with both gates
//!    (copy, verification, switch, clean-up; the settle waits jumped over, see the in-process
//!    migrators), no writer: rows / seconds. **Rows**: object metadata, the rows of the bucket
//!    (the copy pass's `rows_scanned` in the `from` layout); trace store, the source's trace
//!    rows copied — a trace in a tile, `traces × 3` (the copy pass's own `rows_scanned` counts
//!    its post-check re-reads too).
//! 2. **Writers**, on a second fresh store: `--writers` unaware writers (puts, overwrites,
//!    deletes, versions; Gold `Put`s of 1–20 points at new or loaded commits, each point's
//!    digest new with probability `--new-digests F` (default 0.05; 1: every point, the
//!    digest-id target's hardest case — an id assignment per point), else one of its trace's
//!    few recurring ones) alone for
//!    `--duration` s (after 0.5 s warm-up); then the migrator starts and their writes are
//!    counted until the copy pass ends; then, the migrator stopped (in `verifying`, the source
//!    still the truth), fresh writers alone again for `--duration` s. The ratio is the
//!    writes/s during the copy over the mean of the two measurements without it, taken just
//!    before and just after on the same data.
//!
//! The migrators are `ObjectMetadata::migrate_bucket` and `TraceStore::migrate` on the CLI's
//! driver, `PoolDriver` (its requests run at once on `POOL_WORKERS` threads, the CLI's
//! default); `--driver sync,pool` also runs each round on the sync driver (one request at a
//! time, the CLI's before), interleaved, for the ratio, and `poolN` on a pool of `N` threads
//! (the CLI's `--max-inflight N`). Printed: one line per round, schema, store and driver,
//! then the medians.
//!
//! ```sh
//! cargo bench -p rowkit-benches --bench migration                      # 3 rounds, both schemas, both stores
//! cargo bench -p rowkit-benches --bench migration -- --rounds 1 --objects 100000 --schema objmeta --store embedded
//! cargo bench -p rowkit-benches --bench migration -- --schema traces --traces 2000
//! cargo bench -p rowkit-benches --bench migration -- --schema traces --traces 200 --new-digests 1 # every point a new digest
//! cargo bench -p rowkit-benches --bench migration -- --driver sync,pool # old and new, interleaved
//! cargo bench -p rowkit-benches --bench migration -- --driver pool4,pool # --max-inflight 4 and 16
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rowkit_bigtable::BigtableStore;
use rowkit_client::POOL_WORKERS;
use rowkit_codec::objmeta::migration::marker::Gates;
use rowkit_store::{RedbStore, Store};
use rowkit_testkit::emulator::Emulator;
use rowkit_testkit::live_migration::objmeta::{InProcessMigrator, ObjmetaWorkload};
use rowkit_testkit::live_migration::tracestore::{InProcessTraceMigrator, TraceWorkload};
use rowkit_testkit::live_migration::{MigrateProgress, StoreFactory, Workload, WriterPool};

struct Options {
    rounds: usize,
    objects: usize,
    traces: usize,
    writers: usize,
    /// Of every 1 000 points the trace writers write, how many bring a new digest.
    new_digests_per_mille: u64,
    duration: Duration,
    schemas: Vec<String>,
    stores: Vec<String>,
    drivers: Vec<String>,
}

fn options() -> Options {
    let mut o = Options {
        rounds: 3,
        objects: 10_000,
        traces: 2_000,
        writers: 4,
        new_digests_per_mille: 50,
        duration: Duration::from_secs(5),
        schemas: vec!["objmeta".into(), "traces".into()],
        stores: vec!["embedded".into(), "emulator".into()],
        drivers: vec!["pool".into()],
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--rounds" => o.rounds = value.parse().unwrap(),
            "--objects" => o.objects = value.parse().unwrap(),
            "--traces" => o.traces = value.parse().unwrap(),
            "--writers" => o.writers = value.parse().unwrap(),
            "--new-digests" => {
                o.new_digests_per_mille = (value.parse::<f64>().unwrap() * 1000.0).round() as u64
            }
            "--duration" => o.duration = Duration::from_secs_f64(value.parse().unwrap()),
            "--schema" => o.schemas = value.split(',').map(String::from).collect(),
            "--store" => o.stores = value.split(',').map(String::from).collect(),
            "--driver" => {
                o.drivers = value.split(',').map(String::from).collect();
                // Checked before the first round.
                o.drivers.iter().for_each(|d| {
                    workers_of(d);
                });
            }
            // `cargo bench` passes `--bench`; anything else is ignored as well.
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o
}

/// The migrator's driver a `--driver` value names: `sync` (`None`), `pool` (the CLI's
/// default of `POOL_WORKERS` threads) or `poolN` (`N` threads).
fn workers_of(driver: &str) -> Option<usize> {
    match driver {
        "sync" => None,
        "pool" => Some(POOL_WORKERS),
        other => match other.strip_prefix("pool").map(str::parse) {
            Some(Ok(n)) if n > 0 => Some(n),
            _ => panic!("--driver {other}: sync, pool or poolN"),
        },
    }
}

const BUCKET: &str = "bench";
const LOADERS: usize = 8;

/// One schema's workload and migrator, as the bench drives them.
trait Migrated: Workload + Sized {
    /// What the lines call it.
    const NAME: &'static str;
    /// A fresh workload of `o`'s size over `stores`, loaded.
    fn loaded(o: &Options, stores: StoreFactory) -> Self;
    /// One in-process migrator run as far as `gates` allow, on a pool driver of `workers`
    /// threads or (`None`) the sync driver: where it ended and the rows the rate counts (see
    /// the module doc).
    fn migrate(
        &self,
        workers: Option<usize>,
        gates: Gates,
        on_progress: &mut dyn FnMut(MigrateProgress<'_>),
    ) -> (String, u64);
    /// Where a run with both gates ends.
    const DONE: &'static str;
}

impl Migrated for ObjmetaWorkload {
    const NAME: &'static str = "objmeta";
    const DONE: &'static str = "removed";
    fn loaded(o: &Options, stores: StoreFactory) -> Self {
        let w = ObjmetaWorkload::new(stores, BUCKET, o.objects);
        w.load(LOADERS).unwrap();
        w
    }
    fn migrate(
        &self,
        workers: Option<usize>,
        gates: Gates,
        on_progress: &mut dyn FnMut(MigrateProgress<'_>),
    ) -> (String, u64) {
        let migrator = InProcessMigrator::new(self).with_workers(workers);
        let (end, outcome) = migrator.run(BUCKET, gates, on_progress).unwrap();
        // The bucket's rows: the first pass read each of them once in the `from` layout.
        let rows = outcome
            .passes
            .first()
            .map_or(0, |p| p.counters.rows_scanned);
        (end, rows)
    }
}

impl Migrated for TraceWorkload {
    const NAME: &'static str = "traces";
    const DONE: &'static str = "cleaned";
    fn loaded(o: &Options, stores: StoreFactory) -> Self {
        let w = TraceWorkload::new(stores, o.traces)
            .with_new_digests_per_mille(o.new_digests_per_mille);
        w.load(LOADERS).unwrap();
        w
    }
    fn migrate(
        &self,
        workers: Option<usize>,
        gates: Gates,
        on_progress: &mut dyn FnMut(MigrateProgress<'_>),
    ) -> (String, u64) {
        let migrator = InProcessTraceMigrator::new(self).with_workers(workers);
        let (end, _) = migrator.run(gates, on_progress).unwrap();
        (end, self.loaded_rows())
    }
}

/// Opens fresh stores of one kind.
struct Stores {
    kind: String,
    dir: std::path::PathBuf,
    made: usize,
}

impl Stores {
    /// A fresh, empty store and the factory its clients connect with.
    fn fresh(&mut self) -> StoreFactory {
        self.made += 1;
        match self.kind.as_str() {
            // `embedded-lazy`: commits not durable, as the acceptance test opens the file.
            "embedded" | "embedded-lazy" => {
                let path = self.dir.join(format!("m{}.redb", self.made));
                let _ = std::fs::remove_file(&path);
                let durable = self.kind == "embedded";
                let redb = RedbStore::open(path).unwrap().with_durable_commits(durable);
                let store: Arc<dyn Store> = Arc::new(redb);
                Box::new(move || Arc::clone(&store))
            }
            "emulator" => {
                let emu = Emulator::shared_or_skip("migration bench").expect("the emulator");
                let target = emu.fresh_target();
                Box::new(move || {
                    let store: Arc<dyn Store> =
                        Arc::new(BigtableStore::connect(target.clone(), None).unwrap());
                    store
                })
            }
            other => panic!("--store {other}: embedded, embedded-lazy or emulator"),
        }
    }
}

/// Writes/s of `pool` over `duration` after a 0.5 s warm-up.
fn measure(pool: &WriterPool, duration: Duration) -> f64 {
    std::thread::sleep(Duration::from_millis(500));
    let (a0, t0) = (pool.acks(), Instant::now());
    std::thread::sleep(duration);
    (pool.acks() - a0) as f64 / t0.elapsed().as_secs_f64()
}

/// One round of schema `M` on one store and driver: (rows/s of the migration alone, writes/s
/// without, during the copy, without again).
fn round<M: Migrated>(
    o: &Options,
    stores: &mut Stores,
    driver: &str,
    round: usize,
) -> (f64, [f64; 3]) {
    let seed = 36 + round as u64;
    let workload = M::loaded(o, stores.fresh());
    let t = Instant::now();
    let (end, rows) = workload.migrate(workers_of(driver), Gates::ALL, &mut |_| {});
    let took = t.elapsed().as_secs_f64();
    assert_eq!(end, M::DONE);
    let rate = rows as f64 / took;
    println!(
        "{} {} {driver} round {round}: migration of {rows} rows in {took:.2} s: {rate:.0} rows/s",
        M::NAME,
        stores.kind,
    );

    let workload = Arc::new(M::loaded(o, stores.fresh()));
    let pool = WriterPool::start(&workload, o.writers, 1, seed, Duration::ZERO);
    let before = measure(&pool, o.duration);
    let (a0, t0) = (pool.acks(), Instant::now());
    let mut copy = None;
    let stop = pool.stop_flag();
    let (end, _) = workload.migrate(workers_of(driver), Gates::default(), &mut |p| {
        if p.state == "verifying" && copy.is_none() {
            let took = t0.elapsed().as_secs_f64();
            copy = Some(((pool.acks() - a0) as f64 / took, took));
            // Stopped so that the verification can end.
            stop.store(true, Ordering::SeqCst);
        }
    });
    let first = pool.stop().unwrap();
    assert_eq!(end, "verifying");
    let (during, copy_took) = copy.unwrap();
    let pool = WriterPool::start(&workload, o.writers, 2, seed, Duration::ZERO);
    let after = measure(&pool, o.duration);
    pool.stop().unwrap();
    println!(
        "{} {} {driver} round {round}: writers/s without {before:.0}, during the copy ({copy_took:.1} s) {during:.0}, without {after:.0}: ratio {:.2} ({} writes in phase 1)",
        M::NAME,
        stores.kind,
        during / ((before + after) / 2.0),
        first.acks
    );
    (rate, [before, during, after])
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Every round of schema `M` on every store and driver (the drivers interleaved), then the
/// medians.
fn bench<M: Migrated>(o: &Options, dir: &std::path::Path) {
    for kind in &o.stores {
        let mut stores = Stores {
            kind: kind.clone(),
            dir: dir.to_path_buf(),
            made: 0,
        };
        let mut rates = vec![Vec::new(); o.drivers.len()];
        let mut ratios = vec![Vec::new(); o.drivers.len()];
        for r in 0..o.rounds {
            for (d, driver) in o.drivers.iter().enumerate() {
                let (rate, [before, during, after]) = round::<M>(o, &mut stores, driver, r);
                rates[d].push(rate);
                ratios[d].push(during / ((before + after) / 2.0));
            }
        }
        for ((driver, rates), ratios) in o.drivers.iter().zip(rates).zip(ratios) {
            println!(
                "{} {kind} {driver}: median migration rate {:.0} rows/s; writers during the copy / without: median {:.2}",
                M::NAME,
                median(rates),
                median(ratios)
            );
        }
    }
}

fn main() {
    let o = options();
    let dir = std::env::temp_dir().join(format!("rowkit-bench-migration-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!(
        "migration bench: {} rounds, {} objects, {} traces, {} writers ({}‰ of trace points with a new digest), {} s",
        o.rounds,
        o.objects,
        o.traces,
        o.writers,
        o.new_digests_per_mille,
        o.duration.as_secs_f64()
    );
    for schema in &o.schemas {
        match schema.as_str() {
            "objmeta" => bench::<ObjmetaWorkload>(&o, &dir),
            "traces" => bench::<TraceWorkload>(&o, &dir),
            other => panic!("--schema {other}: objmeta or traces"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
