//! The trace-store half of the live migration (`docs/migration.md` §5, §6.2): an md5 table
//! `T1` of `traces` traces loaded through the trace store's `Put`, Gold writers on it, and the
//! comparison of the digest-id table `T2` with what the writers were acknowledged.
//!
//! Trace `t` (`0 ≤ t < traces`) has Gold-like params ([`trace_params`]: a test name, its
//! source type, config, OS and arch). The load puts every trace at [`LOADED_OFFSETS`] of each
//! of [`LOADED_TILES`] tiles (one `Put` of all traces per commit, commits spread over the
//! loader threads), so a migration copies several tiles of `traces` rows each; a trace's
//! digest changes once per tile, as a Gold trace's does now and then.
//!
//! Writers are plain Gold processes (`TraceStore` facades, unaware of the migration: §6.2):
//! each `Put` is one commit — a loaded one (overwrites) or any commit of the loaded tiles and
//! the next one (new commits, a new newest tile) — with fresh digests for 1 to
//! [`MAX_ENTRIES_PER_PUT`] traces. Writer `w` of `W` owns the traces `t ≡ w (mod W)`, so no
//! point has two writers, and each writer's timestamps are distinct milliseconds, never ahead
//! of the clock ([`Writer::next_ts`]): the newest acknowledged write of a point is the one
//! every reader must see (`tracestore.md` §13: the largest cell timestamp wins), and the
//! expected state needs no reading of the store. A write whose timestamp is not above the
//! point's expected one fails the writer, so the expected state is never ambiguous.
//! The writers write `T1` until told the switch happened ([`TraceWorkload::write_target`]),
//! then `T2` (restarted on it, §6.2).

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rowkit_client::migration_json::trace_end_name;
use rowkit_client::tracestore::{TraceStore, setup_table};
use rowkit_client::{Driver, POOL_WORKERS, PoolDriver, SyncDriver, block_on, read_rows_blocking};
use rowkit_codec::migration::{Gates, MIN_SETTLE_US, MigrationState, OptionsPolicy};
use rowkit_codec::model::{RowSet, Timestamp};
use rowkit_codec::tracestore::keys::migration_row_name;
use rowkit_codec::tracestore::ops::{params_from, trace_id_text};
use rowkit_codec::tracestore::{Layout, Params};
use rowkit_statemachines::check::{CheckEvent, CheckOptions};
use rowkit_statemachines::tracestore::migrate::TraceMigrateEvent;
use rowkit_statemachines::tracestore::migrate::run::{TraceMigrateOptions, TraceMigrateOutcome};
use rowkit_statemachines::tracestore::{PutEntry, TraceStoreEvent};
use rowkit_statemachines::{ReadRowsRequest, SplitMix64};
use rowkit_store::Store;
use rowkit_store::driver::{Clock, ManualClock, SystemClock};

use super::{MigrateProgress, StoreFactory, Workload};
use crate::sim::tracestore_migrate::{marker_of, read_table};

/// The source table `T1` (md5): the CLI's default (`rowkit gold --table`).
pub const SOURCE_TABLE: &str = "gold";
/// The target table `T2` (digest-id).
pub const TARGET_TABLE: &str = "gold2";
/// Tiles the load writes (tile indices `0 … LOADED_TILES − 1`).
pub const LOADED_TILES: i64 = 3;
/// The offsets of the loaded commits in each loaded tile.
pub const LOADED_OFFSETS: [i64; 4] = [7, 71, 135, 199];
/// Writers write commits `0 … WRITTEN_COMMITS − 1`: the loaded tiles and the next one.
const WRITTEN_COMMITS: i64 = (LOADED_TILES + 1) * 256;
/// Most entries of a writer's `Put`.
pub const MAX_ENTRIES_PER_PUT: u64 = 20;

/// A facade on the system clock: one process's own state (OPS cache, digest cache, id pool).
type Gold = TraceStore<SyncDriver<Arc<dyn Store>, Arc<SystemClock>>>;

/// One Gold writer: its facade and the last timestamp it wrote with.
pub struct Writer {
    gold: Gold,
    last_ms: Cell<i64>,
}

impl Writer {
    /// The timestamp of the next `Put`: the clock's millisecond, or the one after the
    /// writer's previous `Put` when the clock has not moved past it (then waited for, so the
    /// writer never runs ahead of the clock). Distinct per writer: two `Put`s of a point
    /// never share a millisecond.
    fn next_ts(&self) -> Timestamp {
        let now_ms = SystemClock.now().0 / 1000;
        let ms = now_ms.max(self.last_ms.get() + 1);
        if ms > now_ms {
            std::thread::sleep(Duration::from_millis((ms - now_ms).unsigned_abs()));
        }
        self.last_ms.set(ms);
        Timestamp(ms * 1000)
    }
}

/// A point's newest acknowledged write.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Point {
    digest: String,
    ts: Timestamp,
}

/// The writers of one trace store, and the expected point of each (commit, trace).
pub struct TraceWorkload {
    stores: StoreFactory,
    params: Vec<Params>,
    /// (repo index, trace) → the newest acknowledged write.
    expected: Mutex<BTreeMap<(i64, usize), Point>>,
    /// Writers made from now on write `T2` (restarted after the switch).
    on_target: AtomicBool,
    /// Of every 1 000 points written, how many carry a digest never written before; the
    /// others carry one of their trace's [`RECURRING_DIGESTS`].
    new_digests_per_mille: u64,
}

/// The digests a trace's points repeat when they do not bring a new one (Gold: a test's
/// output mostly matches one it produced before — a few images per trace).
pub const RECURRING_DIGESTS: u64 = 4;

/// Trace `t`'s params: unique per trace, shaped like Gold's (`name`, `source_type`, `config`,
/// `os`, `arch`).
pub fn trace_params(t: usize) -> Params {
    let source = ["gm", "svg", "skp"][(t / 12) % 3];
    let os = ["Android", "Debian11", "Mac14", "Win11"][(t / 3) % 4];
    let arch = if os == "Android" { "arm64" } else { "x86_64" };
    params_from([
        ("name", format!("{source}_{:05}", t / 12)),
        ("source_type", source.to_string()),
        ("config", ["8888", "gles", "vk"][t % 3].to_string()),
        ("os", os.to_string()),
        ("arch", arch.to_string()),
    ])
}

/// 32 lowercase hex characters drawn from `rng`: an MD5-looking digest.
fn digest(rng: &mut SplitMix64) -> String {
    format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64())
}

/// The repo indices the load writes, in load order.
pub fn loaded_commits() -> Vec<i64> {
    (0..LOADED_TILES)
        .flat_map(|tile| LOADED_OFFSETS.map(|off| tile * 256 + off))
        .collect()
}

/// What [`TraceWorkload::verify`] compared.
#[derive(Clone, Copy, Debug, Default)]
pub struct Verified {
    /// Points (non-missing digests) the target's tiles hold, each as expected.
    pub points: usize,
    /// Trace rows read (a trace in a tile).
    pub trace_rows: usize,
    /// Tiles read.
    pub tiles: u32,
    /// Rows `gold check` scanned in the target.
    pub checked_rows: u64,
}

impl TraceWorkload {
    /// A workload of `traces` traces on the stores `stores` opens.
    pub fn new(stores: StoreFactory, traces: usize) -> TraceWorkload {
        TraceWorkload {
            stores,
            params: (0..traces).map(trace_params).collect(),
            expected: Mutex::new(BTreeMap::new()),
            on_target: AtomicBool::new(false),
            new_digests_per_mille: 1000,
        }
    }

    /// This workload with `per_mille` of every 1 000 written points carrying a new digest
    /// (default 1 000: every point — the hardest case for a digest-id target, one id
    /// assignment per point), the others one of their trace's [`RECURRING_DIGESTS`].
    pub fn with_new_digests_per_mille(self, per_mille: u64) -> TraceWorkload {
        TraceWorkload {
            new_digests_per_mille: per_mille.min(1000),
            ..self
        }
    }

    /// The digest of a point of trace `t` a writer writes: new, or one of the trace's
    /// recurring ones, as [`Self::with_new_digests_per_mille`] says.
    fn written_digest(&self, t: usize, rng: &mut SplitMix64) -> String {
        if rng.below(1000) < self.new_digests_per_mille {
            return digest(rng);
        }
        // Seeded apart from the load's digests (`t << 8 | tile`, tile < 256).
        let k = rng.below(RECURRING_DIGESTS);
        digest(&mut SplitMix64::new(!((t as u64) << 8 | k)))
    }

    /// Traces in the store.
    pub fn traces(&self) -> usize {
        self.params.len()
    }

    /// Trace rows the load writes into `T1`: a row per trace and loaded tile (the source rows
    /// a migration of the loaded table copies).
    pub fn loaded_rows(&self) -> u64 {
        self.params.len() as u64 * LOADED_TILES as u64
    }

    /// A Gold process's facade on `table` in `layout`, on the system clock: unaware of the
    /// migration, as Gold is (§6.2).
    fn gold(&self, table: &str, layout: Layout) -> Gold {
        TraceStore::with_layout(
            SyncDriver::new((self.stores)(), Arc::new(SystemClock)),
            table,
            layout,
        )
        .unaware()
    }

    /// Writers made from now on write `T2`, in the digest-id layout: the Gold writers
    /// restarted on the target after the switch (§6.2).
    pub fn write_target(&self) {
        self.on_target.store(true, Ordering::SeqCst);
    }

    fn expected(&self) -> MutexGuard<'_, BTreeMap<(i64, usize), Point>> {
        self.expected.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts `points` (trace, digest) at `commit` with `writer` and records them once
    /// acknowledged; a timestamp not above a point's recorded one is an error (the expected
    /// state would be ambiguous).
    fn put(
        &self,
        writer: &Writer,
        commit: i64,
        points: Vec<(usize, String)>,
    ) -> Result<(), String> {
        let ts = writer.next_ts();
        let entries = points
            .iter()
            .map(|(t, d)| PutEntry {
                params: self.params[*t].clone(),
                digest: d.clone(),
                ..PutEntry::default()
            })
            .collect();
        block_on(writer.gold.put(commit, None, entries, ts)).map_err(|e| {
            format!(
                "Put of {} points at commit {commit} on {}: {e}",
                points.len(),
                writer.gold.table()
            )
        })?;
        let mut expected = self.expected();
        for (t, digest) in points {
            let before = expected.insert((commit, t), Point { digest, ts });
            if let Some(b) = before.filter(|b| b.ts >= ts) {
                return Err(format!(
                    "trace {t} commit {commit}: written at {ts:?}, not after {:?}",
                    b.ts
                ));
            }
        }
        Ok(())
    }

    /// Sets up `T1` (md5) and `T2` (digest-id, the operator's `rowkit gold setup --table T2
    /// --layout digest-id`), then loads `T1` from `threads` loader processes: each commit of
    /// [`loaded_commits`] is one `Put` of every trace, commit `k` by loader `k % threads`.
    pub fn load(&self, threads: usize) -> Result<(), String> {
        let driver = SyncDriver::new((self.stores)(), Arc::new(SystemClock));
        for (table, layout) in [
            (SOURCE_TABLE, Layout::Md5),
            (TARGET_TABLE, Layout::DigestId),
        ] {
            block_on(setup_table(&driver, table, layout))
                .map_err(|e| format!("setup of {table}: {e}"))?;
        }
        let commits = loaded_commits();
        std::thread::scope(|s| {
            let loaders: Vec<_> = (0..threads)
                .map(|l| {
                    let commits = &commits;
                    s.spawn(move || {
                        let writer = Writer {
                            gold: self.gold(SOURCE_TABLE, Layout::Md5),
                            last_ms: Cell::new(0),
                        };
                        for (k, &commit) in commits.iter().enumerate().skip(l).step_by(threads) {
                            // A trace's digest changes once per tile.
                            let tile = k as u64 / LOADED_OFFSETS.len() as u64;
                            let points = (0..self.params.len())
                                .map(|t| {
                                    let mut rng = SplitMix64::new((t as u64) << 8 | tile);
                                    (t, digest(&mut rng))
                                })
                                .collect();
                            self.put(&writer, commit, points)?;
                        }
                        Ok::<(), String>(())
                    })
                })
                .collect();
            loaders
                .into_iter()
                .try_for_each(|l| l.join().unwrap_or_else(|_| Err("a loader panicked".into())))
        })
    }

    /// Reads everything back after a complete migration and compares it with the
    /// acknowledged writes: `T2` read through the facade, tile by tile, holds exactly the
    /// expected points (every trace, every commit; nothing else); `gold check` of `T2` finds
    /// nothing; `T1` holds no row but its marker row, whose marker is `cleaning` (§12.52,
    /// §12.66); `T2` holds no marker row.
    pub fn verify(&self) -> Result<Verified, String> {
        let gold = self.gold(TARGET_TABLE, Layout::DigestId);
        let mut done = Verified::default();
        let mut findings = Vec::new();
        let summary = block_on(gold.check(CheckOptions::default(), 3_600_000_000, |e| {
            if let CheckEvent::Finding(f) = e {
                findings.push(format!("{}: {}", f.kind, f.detail));
            }
        }))
        .map_err(|e| format!("check of {TARGET_TABLE}: {e:?}"))?;
        if !findings.is_empty() || summary.left > 0 {
            return Err(format!(
                "check of {TARGET_TABLE} found {} ({:?}): {:?}",
                summary.left,
                summary.findings_by_kind,
                &findings[..findings.len().min(10)]
            ));
        }
        done.checked_rows = summary.rows_scanned;

        let ids: HashMap<String, usize> = self
            .params
            .iter()
            .enumerate()
            .map(|(t, p)| (trace_id_text(p), t))
            .collect();
        let expected = self.expected().clone();
        let mut wrong = Vec::new();
        for tile in 0..WRITTEN_COMMITS / 256 {
            let (first, last) = (tile * 256, tile * 256 + 255);
            let read = block_on(gold.read_range(first, last))
                .map_err(|e| format!("ReadRange({first}, {last}) of {TARGET_TABLE}: {e}"))?;
            done.tiles += 1;
            // (commit, trace) → digest, every non-missing point read.
            let mut got = BTreeMap::new();
            for (id, trace) in &read.traces {
                let Some(&t) = ids.get(id) else {
                    wrong.push(format!("tile {tile}: a trace no one wrote: {id}"));
                    continue;
                };
                done.trace_rows += 1;
                for (commit, digest) in read.commits.iter().zip(&trace.digests) {
                    if !digest.is_empty() {
                        got.insert((i64::from(*commit), t), digest.as_str());
                    }
                }
            }
            let want: BTreeMap<(i64, usize), &str> = expected
                .range((first, 0)..=(last, usize::MAX))
                .map(|(k, p)| (*k, p.digest.as_str()))
                .collect();
            for (k, w) in &want {
                match got.get(k) {
                    Some(g) if g == w => done.points += 1,
                    g => wrong.push(format!(
                        "trace {} commit {}: read {g:?}, expected {w:?}",
                        k.1, k.0
                    )),
                }
            }
            for k in got.keys().filter(|k| !want.contains_key(*k)) {
                wrong.push(format!(
                    "trace {} commit {}: read {:?}, never written",
                    k.1, k.0, got[k]
                ));
            }
        }
        if !wrong.is_empty() {
            return Err(format!(
                "{} differences in {TARGET_TABLE}, first: {:#?}",
                wrong.len(),
                &wrong[..wrong.len().min(10)]
            ));
        }
        self.verify_nothing_old(gold.driver())?;
        Ok(done)
    }

    /// `T1` holds its marker row only, `cleaning`; `T2` holds no marker row.
    fn verify_nothing_old(
        &self,
        driver: &SyncDriver<Arc<dyn Store>, Arc<SystemClock>>,
    ) -> Result<(), String> {
        let marker_row = migration_row_name();
        let source = read_table(driver.store(), SOURCE_TABLE, driver.now())?;
        if let Some(r) = source.iter().find(|r| r.key != marker_row) {
            return Err(format!(
                "{SOURCE_TABLE} keeps row {} after the migration",
                rowkit_codec::escape::escape(&r.key)
            ));
        }
        match source.iter().find_map(marker_of) {
            Some(Ok(MigrationState::Cleaning)) => {}
            other => {
                return Err(format!(
                    "{SOURCE_TABLE}'s marker after the clean-up: {other:?}, not cleaning"
                ));
            }
        }
        let request = ReadRowsRequest {
            table: TARGET_TABLE.into(),
            rows: RowSet::key(marker_row),
            ..Default::default()
        };
        let target = read_rows_blocking(driver.store(), request, driver.now())
            .map_err(|e| format!("reading {TARGET_TABLE}'s marker row: {e:?}"))?;
        if !target.is_empty() {
            return Err(format!("{TARGET_TABLE} keeps its marker row: {target:?}"));
        }
        Ok(())
    }
}

impl Workload for TraceWorkload {
    type Client = Writer;

    fn client(&self, _writer: usize, _phase: u32) -> Writer {
        let gold = if self.on_target.load(Ordering::SeqCst) {
            self.gold(TARGET_TABLE, Layout::DigestId)
        } else {
            self.gold(SOURCE_TABLE, Layout::Md5)
        };
        Writer {
            gold,
            last_ms: Cell::new(0),
        }
    }

    fn write_once(
        &self,
        client: &Writer,
        writer: usize,
        writers: usize,
        rng: &mut SplitMix64,
    ) -> Result<(), String> {
        let traces = self.params.len();
        if writer >= traces {
            return Err(format!("{writers} writers for {traces} traces"));
        }
        let mine = (traces - writer).div_ceil(writers) as u64;
        // Half the Puts overwrite a loaded commit, half write any commit (mostly new ones).
        let commit = if rng.below(2) == 0 {
            let loaded = loaded_commits();
            loaded[rng.below(loaded.len() as u64) as usize]
        } else {
            rng.below(WRITTEN_COMMITS as u64) as i64
        };
        let n = 1 + rng.below(MAX_ENTRIES_PER_PUT);
        let chosen: BTreeSet<usize> = (0..n)
            .map(|_| writer + writers * rng.below(mine) as usize)
            .collect();
        let points = chosen
            .into_iter()
            .map(|t| (t, self.written_digest(t, rng)))
            .collect();
        self.put(client, commit, points)
    }
}

/// The migrator `rowkit gold migrate --to digest-id --target-table T2` runs
/// (`TraceStore::migrate`, the CLI's options) in this process, on a manual clock that starts
/// at the system time and jumps over the settle waits (as the CLI's `--now`): the Gold writers
/// are stopped at the `--switch` gate and the restarted ones write only `T2`, so waiting `Δ`
/// would protect nothing here (§12.59's argument; the writers are Gold's, unaware).
pub struct InProcessTraceMigrator {
    store: Arc<dyn Store>,
    clock: ManualClock,
    /// The driver's worker threads; `None`: the sync driver, one request at a time.
    workers: Option<usize>,
}

impl InProcessTraceMigrator {
    /// A migrator of `workload`'s `T1` into `T2` over its store, on the CLI's driver
    /// ([`PoolDriver`]).
    pub fn new(workload: &TraceWorkload) -> InProcessTraceMigrator {
        InProcessTraceMigrator {
            store: (workload.stores)(),
            clock: ManualClock::new(SystemClock.now()),
            workers: Some(POOL_WORKERS),
        }
    }

    /// This migrator on a pool of `workers` threads (the CLI's `--max-inflight N`), or with
    /// `None` on the sync driver, its requests served one at a time (the CLI's driver before
    /// the pool; the migration bench's comparison).
    pub fn with_workers(self, workers: Option<usize>) -> InProcessTraceMigrator {
        InProcessTraceMigrator { workers, ..self }
    }

    /// One run to digest-id as far as `gates` allow, with the minimum settle time; where it
    /// ended (`verifying`, `switched`, `cleaned`, …, as the CLI's `state`) and the outcome. A
    /// straggler or a conflict is an error: Gold writers stopped at the gate leave none.
    pub fn run(
        &self,
        gates: Gates,
        mut on_progress: impl FnMut(MigrateProgress<'_>),
    ) -> Result<(String, TraceMigrateOutcome), String> {
        let options = TraceMigrateOptions {
            gates,
            abort: false,
            options: OptionsPolicy::Refuse,
            settle_us: Some(MIN_SETTLE_US),
            take_over: false,
            owner: "live-migration-test:2".into(),
        };
        let mut unexpected = Vec::new();
        let mut on_event = |e| {
            let TraceStoreEvent::Migrate(e) = e else {
                return;
            };
            match e {
                TraceMigrateEvent::Progress(p) => on_progress(MigrateProgress {
                    state: p.state.as_str(),
                    pass: p.pass,
                    rows_scanned: p.counters.rows_scanned,
                }),
                TraceMigrateEvent::StateChanged { to, .. } => {
                    if let Some(to) = to {
                        on_progress(MigrateProgress::state_changed(to));
                    }
                }
                other => unexpected.push(other),
            }
        };
        let (store, clock) = (&*self.store, &self.clock);
        let outcome = match self.workers {
            None => trace_migrate_on(SyncDriver::new(store, clock), options, &mut on_event),
            Some(n) => PoolDriver::scope(store, clock, n, |driver| {
                trace_migrate_on(driver, options, &mut on_event)
            }),
        }?;
        if !unexpected.is_empty() {
            return Err(format!("the migrator reported {unexpected:?}"));
        }
        Ok((trace_end_name(outcome.end).to_string(), outcome))
    }
}

/// `TraceStore::migrate` of `T1` into `T2` on a fresh facade over `driver` (a fresh process,
/// as each CLI run is).
fn trace_migrate_on<D: Driver>(
    driver: D,
    options: TraceMigrateOptions,
    on_event: &mut dyn FnMut(TraceStoreEvent),
) -> Result<TraceMigrateOutcome, String> {
    let gold = TraceStore::with_layout(driver, SOURCE_TABLE, Layout::Md5);
    block_on(gold.migrate(TARGET_TABLE, options, 86_400_000_000, on_event))
        .map_err(|e| format!("TraceStore::migrate: {e}"))
}
