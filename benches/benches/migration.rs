//! The object-metadata migration (`docs/migration.md`, `rowkit s3 migrate`): its rate on a
//! bucket of `--objects` objects, and the throughput of writers while it copies as a ratio of
//! their throughput without it, on the embedded store and over the emulator.
//!
//! Each round, per store (a fresh redb file with durable commits, as the CLI opens it; with
//! `--store embedded-lazy`, without, as the acceptance test opens it; or a fresh emulator
//! instance):
//!
//! 1. **Rate**: a v0 bucket of `--objects` objects (every tenth versioned, as the acceptance
//!    test's: `rowkit_testkit::live_migration::objmeta`) loaded through `putObject`, then one
//!    migrator run with both gates (copy, verification, switch, clean-up; the settle waits
//!    jumped over, see `InProcessMigrator`), no writer: rows of the bucket / seconds.
//! 2. **Writers**, on a second fresh bucket: `--writers` unaware writers (puts, overwrites,
//!    deletes, versions) alone for `--duration` s (after 0.5 s warm-up); then the migrator
//!    starts and their writes are counted until the copy pass ends; then, the migrator stopped
//!    (the bucket in `verifying`, still v0), fresh writers alone again for `--duration` s. The
//!    ratio is the writes/s during the copy over the mean of the two measurements without it,
//!    taken just before and just after on the same bucket.
//!
//! The migrator is `ObjectMetadata::migrate_bucket` on the CLI's driver, `PoolDriver` (its
//! requests run at once on `POOL_WORKERS` threads); `--driver sync,pool` also runs each round
//! on the sync driver (one request at a time, the CLI's before), interleaved, for the ratio.
//! Printed: one line per round, store and driver, then the medians.
//!
//! ```sh
//! cargo bench -p rowkit-benches --bench migration                      # 3 rounds, 10 000 objects, both stores
//! cargo bench -p rowkit-benches --bench migration -- --rounds 1 --objects 100000 --store embedded
//! cargo bench -p rowkit-benches --bench migration -- --driver sync,pool # old and new, interleaved
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rowkit_bigtable::BigtableStore;
use rowkit_codec::objmeta::migration::marker::Gates;
use rowkit_store::{RedbStore, Store};
use rowkit_testkit::emulator::Emulator;
use rowkit_testkit::live_migration::WriterPool;
use rowkit_testkit::live_migration::objmeta::{InProcessMigrator, ObjmetaWorkload, StoreFactory};

struct Options {
    rounds: usize,
    objects: usize,
    writers: usize,
    duration: Duration,
    stores: Vec<String>,
    drivers: Vec<String>,
}

fn options() -> Options {
    let mut o = Options {
        rounds: 3,
        objects: 10_000,
        writers: 4,
        duration: Duration::from_secs(5),
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
            "--writers" => o.writers = value.parse().unwrap(),
            "--duration" => o.duration = Duration::from_secs_f64(value.parse().unwrap()),
            "--store" => o.stores = value.split(',').map(String::from).collect(),
            "--driver" => o.drivers = value.split(',').map(String::from).collect(),
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

const BUCKET: &str = "bench";
const LOADERS: usize = 8;

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

/// The migrator of `workload` on `driver`: `pool` (the CLI's) or `sync`.
fn migrator_on(workload: &ObjmetaWorkload, driver: &str) -> InProcessMigrator {
    match driver {
        "pool" => InProcessMigrator::new(workload),
        "sync" => InProcessMigrator::new(workload).one_at_a_time(),
        other => panic!("--driver {other}: pool or sync"),
    }
}

/// One round on one store and driver: (rows/s of the migration alone, writes/s without,
/// during the copy, without again).
fn round(o: &Options, stores: &mut Stores, driver: &str, round: usize) -> (f64, [f64; 3]) {
    let seed = 36 + round as u64;
    let workload = ObjmetaWorkload::new(stores.fresh(), BUCKET, o.objects);
    workload.load(LOADERS).unwrap();
    let migrator = migrator_on(&workload, driver);
    let t = Instant::now();
    let (end, outcome) = migrator.run(BUCKET, Gates::ALL, |_| {}).unwrap();
    let took = t.elapsed().as_secs_f64();
    assert_eq!(end, "removed");
    // The bucket's rows: the first pass read each of them once in the `from` layout.
    let rows = outcome
        .passes
        .first()
        .map_or(0, |p| p.counters.rows_scanned);
    let rate = rows as f64 / took;
    println!(
        "{} {driver} round {round}: migration of {} objects ({rows} rows, {} passes) in {took:.2} s: {rate:.0} rows/s",
        stores.kind,
        o.objects,
        outcome.passes.len()
    );

    let workload = Arc::new(ObjmetaWorkload::new(stores.fresh(), BUCKET, o.objects));
    workload.load(LOADERS).unwrap();
    let pool = WriterPool::start(&workload, o.writers, 1, seed, Duration::ZERO);
    let before = measure(&pool, o.duration);
    let migrator = migrator_on(&workload, driver);
    let (a0, t0) = (pool.acks(), Instant::now());
    let mut copy = None;
    let stop = pool.stop_flag();
    let (end, _) = migrator
        .run(BUCKET, Gates::default(), |p| {
            if p.state == "verifying" && copy.is_none() {
                copy = Some((pool.acks() - a0) as f64 / t0.elapsed().as_secs_f64());
                // Stopped so that the verification can end.
                stop.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
    let first = pool.stop().unwrap();
    assert_eq!(end, "verifying");
    let during = copy.unwrap();
    let pool = WriterPool::start(&workload, o.writers, 2, seed, Duration::ZERO);
    let after = measure(&pool, o.duration);
    pool.stop().unwrap();
    println!(
        "{} {driver} round {round}: writers/s without {before:.0}, during the copy {during:.0}, without {after:.0}: ratio {:.2} ({} writes in phase 1)",
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

fn main() {
    let o = options();
    let dir = std::env::temp_dir().join(format!("rowkit-bench-migration-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!(
        "migration bench: {} rounds, {} objects, {} writers, {} s",
        o.rounds,
        o.objects,
        o.writers,
        o.duration.as_secs_f64()
    );
    for kind in &o.stores {
        let mut stores = Stores {
            kind: kind.clone(),
            dir: dir.clone(),
            made: 0,
        };
        let mut rates = vec![Vec::new(); o.drivers.len()];
        let mut ratios = vec![Vec::new(); o.drivers.len()];
        for r in 0..o.rounds {
            for (d, driver) in o.drivers.iter().enumerate() {
                let (rate, [before, during, after]) = round(&o, &mut stores, driver, r);
                rates[d].push(rate);
                ratios[d].push(during / ((before + after) / 2.0));
            }
        }
        for ((driver, rates), ratios) in o.drivers.iter().zip(rates).zip(ratios) {
            println!(
                "{kind} {driver}: median migration rate {:.0} rows/s; writers during the copy / without: median {:.2}",
                median(rates),
                median(ratios)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
