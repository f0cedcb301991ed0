//! Issue 36's acceptance test (`docs/migration.md` §3–§6): a v0 bucket of
//! `ROWKIT_MIGRATE_OBJECTS` objects (default 100 000) migrated to v1, and an md5 trace store of
//! `ROWKIT_MIGRATE_TRACES` traces (default 10 000) migrated to digest-id, while writers write,
//! on the embedded store and on the emulator.
//!
//! Both follow the same phases ([`migrate_while_writing`]). The data is loaded through the
//! schema's own writes by concurrent loader processes (`putObject`; the trace store's `Put`),
//! so the rows are those the protocol writes, not a copy of its encoding. Writers unaware of
//! the migration — their own facades: Arsenal processes that cached `vFormat` v0 (§6.1), Gold
//! processes on `T1` (§6.2) — write while the migrator copies and verifies; they stop (the
//! `--switch` gate) during the first verification pass; `--switch`; fresh writers (which read
//! v1; Gold writers restarted on `T2`) write while the migration is `switched` and during
//! `--finish`. Afterwards everything is read back and compared with what the writers'
//! acknowledgements say (`rowkit_testkit::live_migration`): the bucket is v1, its check finds
//! nothing, no v0 row, stamp, marker or checkpoint is left; `T2` reads exactly the
//! acknowledged points, `gold check` of it finds nothing, `T1` holds only its marker row
//! (`cleaning`) and `T2` no marker.
//!
//! The migrator: on the emulator, `rowkit s3 migrate` / `rowkit gold migrate` itself (one
//! process per run, as an operator runs it); on the embedded file, whose lock admits one
//! process, the same `ObjectMetadata::migrate_bucket` / `TraceStore::migrate` in this
//! process. All on a manual clock (`--now`) that jumps over the settle waits: the unaware
//! writers are stopped at the gate and the fresh ones write only the `to` layout, so the 85 s
//! waits would protect nothing and only cost 170 s per store (§12.59).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rowkit_bigtable::BigtableStore;
use rowkit_codec::objmeta::migration::marker::Gates;
use rowkit_store::{RedbStore, Store};
use rowkit_testkit::emulator::Emulator;
use rowkit_testkit::live_migration::objmeta::{InProcessMigrator, ObjmetaWorkload};
use rowkit_testkit::live_migration::tracestore::{
    InProcessTraceMigrator, SOURCE_TABLE, TARGET_TABLE, TraceWorkload,
};
use rowkit_testkit::live_migration::{
    MigrateProgress, StoreFactory, Workload, WriterPool, WritersReport,
};
use serde_json::Value;

/// Writer threads per phase.
const WRITERS: usize = 4;
/// At most one write per writer per `PACE` (100 writes/s each): writers as fast as the emulator
/// answers take most of its one busy core and leave the migrator's one request at a time a
/// small share of it (its first run on 100 000 objects had not ended after 13 minutes).
const PACE: Duration = Duration::from_millis(10);
/// Loader threads.
const LOADERS: usize = 8;
/// The bucket.
const BUCKET: &str = "live";

/// A count from the environment variable `name`, else `default`.
fn count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().unwrap_or_else(|_| panic!("{name}: a number")))
        .unwrap_or(default)
}

/// One schema's part of [`migrate_while_writing`].
trait Subject: Workload {
    /// What the store holds, for the summary line (`objects`, `traces`).
    const WHAT: &'static str;
    /// The state a run with both gates ends in (the CLI's `state`).
    const DONE: &'static str;
    /// How many objects or traces.
    fn size(&self) -> usize;
    /// Loads the store.
    fn load(&self) -> Result<(), String>;
    /// Rows a first verification pass has read at about its half: the unaware writers stop
    /// there.
    fn half_verification(&self) -> u64;
    /// Writers made from now on are the ones restarted after the switch.
    fn switched(&self) {}
    /// Reads everything back and compares it with the acknowledged writes; what it compared.
    fn verify(&self) -> Result<String, String>;
}

impl Subject for ObjmetaWorkload {
    const WHAT: &'static str = "objects";
    const DONE: &'static str = "removed";
    fn size(&self) -> usize {
        self.objects()
    }
    fn load(&self) -> Result<(), String> {
        ObjmetaWorkload::load(self, LOADERS)
    }
    fn half_verification(&self) -> u64 {
        // A verification pass reads both layouts: `n` rows is about half of it.
        self.objects() as u64
    }
    fn verify(&self) -> Result<String, String> {
        let verified = ObjmetaWorkload::verify(self)?;
        // Exactly the listed objects' rows: a master per object, a row per version.
        if verified.rows != verified.listed + verified.versions {
            return Err(format!("rows are not the listed objects: {verified:?}"));
        }
        Ok(format!("{verified:?}"))
    }
}

impl Subject for TraceWorkload {
    const WHAT: &'static str = "traces";
    const DONE: &'static str = "cleaned";
    fn size(&self) -> usize {
        self.traces()
    }
    fn load(&self) -> Result<(), String> {
        TraceWorkload::load(self, LOADERS)
    }
    fn half_verification(&self) -> u64 {
        // A verification pass reads the trace rows of both tables.
        self.loaded_rows()
    }
    fn switched(&self) {
        self.write_target();
    }
    fn verify(&self) -> Result<String, String> {
        TraceWorkload::verify(self).map(|v| format!("{v:?}"))
    }
}

/// One run of the migrator: the gates given, progress reported as it comes; where it ended.
trait Migrator {
    fn run(&mut self, gates: Gates, on_progress: &mut dyn FnMut(MigrateProgress<'_>)) -> String;
}

impl Migrator for InProcessMigrator {
    fn run(&mut self, gates: Gates, on_progress: &mut dyn FnMut(MigrateProgress<'_>)) -> String {
        let (end, outcome) = InProcessMigrator::run(self, BUCKET, gates, on_progress).unwrap();
        assert!(
            outcome.conflicts.is_empty() && outcome.findings.is_empty(),
            "{outcome:?}"
        );
        end
    }
}

impl Migrator for InProcessTraceMigrator {
    fn run(&mut self, gates: Gates, on_progress: &mut dyn FnMut(MigrateProgress<'_>)) -> String {
        InProcessTraceMigrator::run(self, gates, on_progress)
            .unwrap()
            .0
    }
}

/// `rowkit --json --now T --store URL <command> [--switch] [--finish]`, each run a new
/// process at a manual time 1 000 s after the previous one's (so past the previous run's
/// settle waits and lease).
struct CliMigrator {
    store: String,
    now_us: i64,
    pid: u64,
    /// The command after the global options, for a process numbered `pid`.
    command: fn(pid: &str) -> Vec<String>,
    /// Members of the `--json` result that must be empty arrays.
    empty: &'static [&'static str],
}

impl CliMigrator {
    /// A migrator over the emulator at `store`, starting at the system time.
    fn new(
        store: String,
        command: fn(&str) -> Vec<String>,
        empty: &'static [&'static str],
    ) -> CliMigrator {
        let now_us = i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_micros(),
        )
        .unwrap();
        CliMigrator {
            store,
            now_us,
            pid: 7_000,
            command,
            empty,
        }
    }
}

impl Migrator for CliMigrator {
    fn run(&mut self, gates: Gates, on_progress: &mut dyn FnMut(MigrateProgress<'_>)) -> String {
        self.now_us += 1_000_000_000;
        self.pid += 1;
        let now = self.now_us.to_string();
        let mut args: Vec<String> = ["--json", "--store", &self.store, "--now", &now]
            .map(String::from)
            .into();
        args.extend((self.command)(&self.pid.to_string()));
        if gates.switch {
            args.push("--switch".into());
        }
        if gates.finish {
            args.push("--finish".into());
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .args(&args)
            .env_remove("ROWKIT_STORE")
            .env_remove("BIGTABLE_EMULATOR_HOST")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Progress: one JSON line per page or tile on stderr (§7.3).
        let mut other = String::new();
        for line in BufReader::new(child.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            match serde_json::from_str::<Value>(&line) {
                Ok(p) if p["state"].is_string() => on_progress(MigrateProgress {
                    state: p["state"].as_str().unwrap(),
                    pass: p["pass"].as_u64().unwrap(),
                    rows_scanned: p["rows_scanned"].as_u64().unwrap(),
                }),
                _ => other.push_str(&line),
            }
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "rowkit {args:?}: {:?} {other}",
            out.status
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        for member in self.empty {
            assert_eq!(doc[member], serde_json::json!([]), "{member}: {doc}");
        }
        doc["state"].as_str().unwrap().to_string()
    }
}

/// `rowkit s3 --pid P migrate live --to v1`.
fn s3_migrate(pid: &str) -> Vec<String> {
    ["s3", "--pid", pid, "migrate", BUCKET, "--to", "v1"]
        .map(String::from)
        .into()
}

/// `rowkit gold --table T1 migrate --to digest-id --target-table T2` (the CLI's own pid).
fn gold_migrate(_pid: &str) -> Vec<String> {
    [
        "gold",
        "--table",
        SOURCE_TABLE,
        "migrate",
        "--to",
        "digest-id",
        "--target-table",
        TARGET_TABLE,
    ]
    .map(String::from)
    .into()
}

/// The whole flow on one store; prints each phase's time and the writers' counts.
fn migrate_while_writing<S: Subject>(
    name: &str,
    workload: S,
    make_migrator: impl FnOnce(&S) -> Box<dyn Migrator>,
) {
    let workload = Arc::new(workload);
    let n = workload.size();
    let mut migrator = make_migrator(&workload);
    let t = Instant::now();
    workload.load().unwrap();
    let load = t.elapsed();

    // Unaware writers (for objmeta: vFormat v0 cached at their first write, before the
    // migrator starts) while the migrator copies and verifies; stopped halfway through the
    // first verification pass (the `--switch` gate).
    let t = Instant::now();
    let writers = WriterPool::start(&workload, WRITERS, 1, 36, PACE);
    while writers.acks() < WRITERS as u64 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let stop = writers.stop_flag();
    let half = workload.half_verification();
    let mut states = Vec::new();
    let end = migrator.run(Gates::default(), &mut |p| {
        if states.last() != Some(&p.state.to_string()) {
            states.push(p.state.to_string());
        }
        if p.state == "verifying" && p.rows_scanned >= half {
            stop.store(true, Ordering::SeqCst);
        }
    });
    let unaware = writers.stop().unwrap();
    assert_eq!(end, "verifying");
    assert_eq!(states, ["copying", "verifying"]);
    let copy = t.elapsed();

    let t = Instant::now();
    assert_eq!(
        migrator.run(
            Gates {
                switch: true,
                finish: false
            },
            &mut |_| {}
        ),
        "switched"
    );
    let switch = t.elapsed();

    // Fresh writers (v1 readers; Gold writers restarted on `T2`) while the migration is
    // `switched` and during the clean-up.
    let t = Instant::now();
    workload.switched();
    let writers = WriterPool::start(&workload, WRITERS, 2, 36, PACE);
    while writers.acks() < 100 {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(migrator.run(Gates::ALL, &mut |_| {}), S::DONE);
    let fresh = writers.stop().unwrap();
    let finish = t.elapsed();

    let t = Instant::now();
    let verified = workload.verify().unwrap();
    let show = |r: WritersReport| format!("{} writes ({:.0}/s)", r.acks, r.per_second());
    eprintln!(
        // On a line of its own: the harness prints the test's name before it.
        "\nmigrate_live {name}: {n} {} loaded in {load:.1?}; copy+verify {copy:.1?} with {} \
         by unaware writers; switch {switch:.1?}; switched+finish {finish:.1?} with {} by \
         restarted writers; verified in {:.1?}: {verified}",
        S::WHAT,
        show(unaware),
        show(fresh),
        t.elapsed()
    );
    assert!(unaware.acks > WRITERS as u64 && fresh.acks >= 100);
}

/// A fresh embedded file with commits not durable, and the factory of its clients (all one
/// store: the file lock admits one process). Removed with the directory the guard names.
fn embedded(name: &str) -> (StoreFactory, TempDir) {
    let dir =
        std::env::temp_dir().join(format!("rowkit-migrate-live-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // Commits not durable: the migrator sends one CAS at a time (the sync driver, as the
    // CLI's), so with an fsync each it ran at 60–200 rows/s (benches/README.md) and 100 000
    // objects would take 10–30 minutes; the test is about the protocol, not the disk.
    let store: Arc<dyn Store> = Arc::new(
        RedbStore::open(dir.join("t.redb"))
            .unwrap()
            .with_durable_commits(false),
    );
    (Box::new(move || Arc::clone(&store)), TempDir(dir))
}

/// Removes its directory when dropped.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh emulator instance: the factory of its clients (one connection each, as separate
/// processes) and its URL for the CLI; `None` when the emulator is not installed (outside CI).
fn emulator(test: &str) -> Option<(StoreFactory, String)> {
    let emu = Emulator::shared_or_skip(test)?;
    let target = emu.fresh_target();
    let url = emu.url(&target.instance);
    let stores: StoreFactory = Box::new(move || {
        let store: Arc<dyn Store> = Arc::new(BigtableStore::connect(target.clone(), None).unwrap());
        store
    });
    Some((stores, url))
}

/// Objects in the bucket: `ROWKIT_MIGRATE_OBJECTS`, default 100 000 (issue 36).
fn objects() -> usize {
    count("ROWKIT_MIGRATE_OBJECTS", 100_000)
}

/// Traces in the trace store: `ROWKIT_MIGRATE_TRACES`, default 10 000 (issue 36).
fn traces() -> usize {
    count("ROWKIT_MIGRATE_TRACES", 10_000)
}

#[test]
fn a_v0_bucket_migrates_while_writers_write_on_the_embedded_store() {
    let (stores, _dir) = embedded("objects");
    let workload = ObjmetaWorkload::new(stores, BUCKET, objects());
    migrate_while_writing("embedded", workload, |w| {
        Box::new(InProcessMigrator::new(w))
    });
}

#[test]
fn a_v0_bucket_migrates_while_writers_write_on_the_emulator() {
    let Some((stores, url)) = emulator("a_v0_bucket_migrates_while_writers_write_on_the_emulator")
    else {
        return;
    };
    let workload = ObjmetaWorkload::new(stores, BUCKET, objects());
    migrate_while_writing("emulator", workload, |_| {
        Box::new(CliMigrator::new(
            url,
            s3_migrate,
            &["conflicts", "findings"],
        ))
    });
}

#[test]
fn an_md5_trace_store_migrates_while_gold_writers_write_on_the_embedded_store() {
    let (stores, _dir) = embedded("traces");
    let workload = TraceWorkload::new(stores, traces());
    migrate_while_writing("traces embedded", workload, |w| {
        Box::new(InProcessTraceMigrator::new(w))
    });
}

#[test]
fn an_md5_trace_store_migrates_while_gold_writers_write_on_the_emulator() {
    let Some((stores, url)) =
        emulator("an_md5_trace_store_migrates_while_gold_writers_write_on_the_emulator")
    else {
        return;
    };
    let workload = TraceWorkload::new(stores, traces());
    migrate_while_writing("traces emulator", workload, |_| {
        Box::new(CliMigrator::new(
            url,
            gold_migrate,
            &["conflicts", "stragglers"],
        ))
    });
}
