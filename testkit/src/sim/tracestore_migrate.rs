//! The trace store's layout migration under the simulator (`docs/migration.md` §10, §5, §6.2):
//! the [trace-store workload](super::tracestore)'s Gold clients — writers as `Put` machines on
//! states that never read the marker, readers, assignments and checks — run while one
//! [`MigrateTraceStore`] copies their table `T1` into a table `T2` of the other layout, driven
//! by the operator of [`super::migration`] through its gates, crashing and resuming.
//!
//! Each run migrates md5 → digest-id (three runs in four) or digest-id → md5, and follows a
//! [`Scenario`]: the whole migration (copy and verification while the Gold writers write `T1`;
//! the writers stopped, `--switch`; readers and writers restarted on `T2`, §6.2; `--finish`),
//! or a rollback (`--abort`) with the writers running or stopped. A migration the operation
//! budget leaves unfinished is completed after it, without faults. Then (§10.3):
//!
//! 1. **every acknowledged point readable**: the trace-store workload's model of decided cells
//!    holds for a fresh `ReadRange` of the truth table at each operator snapshot (writers
//!    stopped: after the switch on `T2`, before and after a fenced rollback on `T1`) and at
//!    the end (on `T2`, or `T1` after a rollback), with its digest-map, OPS and read checks;
//! 3. `gold check` of the truth table at the end, clean (and every check among the writers);
//! 4. **nothing old left**: after a complete migration `T1` holds only its marker row, its
//!    marker `cleaning` (§12.52), and `T2` no marker row; after a rollback `T2` holds no row
//!    and `T1` no marker row;
//! 5. **a second run after the end sends reads only**;
//! 6. **the marker only follows §3**: every state change a migrator reported is an arrow of §3.
//!
//! Migrators crash after a response (more often after an error response) and when the
//! simulator's crash fault hits them; the next run resumes with `--take-over` (§12.56).

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use rowkit_codec::migration::{Gates, MigrationMarker, MigrationState, OptionsPolicy};
use rowkit_codec::model::{Row, RowRange, RowSet};
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::keys::migration_row_name;
use rowkit_codec::tracestore::migration::MARKER_COLUMN;
use rowkit_statemachines::operation::Start;
#[cfg(feature = "planted-bugs")]
use rowkit_statemachines::planted::PlantedBug;
use rowkit_statemachines::tracestore::migrate::run::{
    MigrateTraceStore, TraceMigrateEnd, TraceMigrateOptions, TraceMigrateOutcome,
};
use rowkit_statemachines::tracestore::migrate::{TablePair, TraceMigrateEvent};
use rowkit_statemachines::tracestore::{Tile, TraceStoreError, TraceStoreEvent, TraceStoreState};
use rowkit_statemachines::{ReadRowsRequest, Request, SplitMix64, Timestamp};
use rowkit_store::MemoryStore;
use rowkit_store::driver::ManualClock;

use super::migration::{
    Action, CrashRates, Driver, MigrationOp, MigrationStats, MigratorEnd, MigratorLog, MigratorRun,
    MigratorShell, MigratorStatus, Pacing, Pausing, Scenario, SchemaMigrator, SnapshotPoint, Stage,
    Waiting, holding, section3_arrow,
};
use super::tracestore::{TABLE, TraceStoreOp, TraceStoreOutput, TraceStoreWorkload, check_tile};
use super::{Checked, Outcome, Record, SimMachine, Workload, erase};

/// The migration's target table `T2`.
pub const TARGET_TABLE: &str = "gold2";
/// A migrator run's deadline: far beyond any run (its passes and settle waits).
const MIGRATOR_DEADLINE_US: i64 = 3_600_000_000;
/// The operator's pacing: writers write longer than in the objmeta workload before they are
/// stopped, so that the migrator's copy pass (two tables read shard by shard, crashing and
/// resuming) ends and its verification runs while they write; idle clients pause longer
/// beside it (its passes send thousands of requests).
const PACING: Pacing = Pacing {
    live_ops: 100,
    abort_live_ops: 60,
    restart_ops: 20,
    pause_requests: 30,
    // Trace-store aware writers are not built (§9).
    aware_writers: false,
};
/// Migrator runs after the budget before the completion gives up.
const COMPLETION_RUNS: u32 = 4;
/// The shell's crash chances (per 10 000 responses): a migrator sends a few hundred requests
/// per run (32 shard scans per tile read, on both tables), so a crash per response is much
/// rarer than objmeta's; the simulator's own crash fault adds more.
const CRASHES: CrashRates = CrashRates {
    after_response: 1,
    after_error: 100,
};

/// An operation of the trace-store migration workload.
#[derive(Clone)]
pub enum TraceMigrateOp {
    /// A Gold client's operation on `T1`, or (`on_target`, restarted) on `T2`.
    Gold {
        /// The client runs on `T2`.
        on_target: bool,
        /// The operation.
        op: TraceStoreOp,
    },
    /// A migrator run (`rowkit gold migrate --to … --target-table gold2` with these flags).
    Migrate(MigratorRun),
    /// An idle client waits with the migrator through its settle wait.
    Wait(Timestamp),
    /// An idle client pauses while the writers are stopped.
    Pause,
    /// The operator's snapshot: a fresh `ReadRange` of the truth table.
    Snapshot(SnapshotPoint),
}

impl fmt::Debug for TraceMigrateOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceMigrateOp::Gold { on_target, op } => {
                let table = if *on_target { TARGET_TABLE } else { TABLE };
                write!(f, "{op:?} on {table}")
            }
            TraceMigrateOp::Migrate(run) => write!(f, "{run}"),
            TraceMigrateOp::Wait(until) => write!(f, "Wait until {}", until.0),
            TraceMigrateOp::Pause => write!(f, "Pause"),
            TraceMigrateOp::Snapshot(point) => write!(f, "Snapshot {point:?}"),
        }
    }
}

/// What an operation of the workload returned.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceMigrateOutput {
    /// A Gold client's output.
    Gold(TraceStoreOutput),
    /// A migrator run's outcome.
    Migrated(TraceMigrateOutcome),
    /// A wait ended.
    Waited,
    /// A snapshot was read (its tile is kept by the workload).
    Snapshot,
}

/// A snapshot: where, when it started, and the tile read.
type Snapshot = (SnapshotPoint, Timestamp, Tile);

/// The trace-store migration workload (see the module doc).
pub struct TraceStoreMigrateWorkload {
    /// A bug planted in the migrator only (the simulator's self-test).
    #[cfg(feature = "planted-bugs")]
    pub planted: Option<PlantedBug>,
    /// `T1`'s clients (and its model and checks).
    source: TraceStoreWorkload,
    /// `T2`'s clients, once restarted.
    target: TraceStoreWorkload,
    pacing: Pacing,
    driver: Driver,
    /// Gold clients were restarted on `T2` (§6.2).
    on_target: bool,
    log: Rc<RefCell<MigratorLog<TraceStoreEvent>>>,
    snapshots: Rc<RefCell<Vec<Snapshot>>>,
    finished_after_budget: bool,
    /// What went wrong where no error can be returned (the completion in
    /// [`Workload::repairs`]); reported by [`Workload::check`].
    failure: Option<String>,
    stats: MigrationStats,
}

impl Default for TraceStoreMigrateWorkload {
    fn default() -> Self {
        TraceStoreMigrateWorkload {
            #[cfg(feature = "planted-bugs")]
            planted: None,
            source: TraceStoreWorkload::on_table(Layout::Md5, TABLE),
            target: TraceStoreWorkload::on_table(Layout::DigestId, TARGET_TABLE),
            pacing: PACING,
            driver: Driver::new(Scenario::Complete, Pacing::default()),
            on_target: false,
            log: Rc::default(),
            snapshots: Rc::default(),
            finished_after_budget: false,
            failure: None,
            stats: MigrationStats::default(),
        }
    }
}

type History = [Record<TraceMigrateOp, TraceMigrateOutput>];

impl TraceStoreMigrateWorkload {
    /// The workload with `bug` planted in its migrators.
    #[cfg(feature = "planted-bugs")]
    pub fn with_planted_bug(bug: PlantedBug) -> TraceStoreMigrateWorkload {
        TraceStoreMigrateWorkload {
            planted: Some(bug),
            ..Default::default()
        }
    }

    /// The migrations' counters over every run so far.
    pub fn stats(&self) -> MigrationStats {
        self.stats
    }

    /// Migrator run `run` as its machine, from `now`.
    fn migrator(&self, run: &MigratorRun, now: Timestamp, seed: u64) -> MigrateTraceStore<'static> {
        let options = TraceMigrateOptions {
            gates: Gates {
                switch: run.switch,
                finish: run.finish,
            },
            abort: run.abort,
            options: OptionsPolicy::Refuse,
            settle_us: None,
            take_over: run.take_over,
            owner: format!("sim:{}", run.n),
        };
        #[cfg_attr(not(feature = "planted-bugs"), expect(unused_mut))]
        let mut pair = TablePair::new(
            TraceStoreState::new(TABLE, self.source.layout()),
            TraceStoreState::new(TARGET_TABLE, self.target.layout()),
        );
        #[cfg(feature = "planted-bugs")]
        pair.source.set_planted_bug(self.planted);
        MigrateTraceStore::new(
            pair,
            self.target.layout(),
            options,
            Start::within(now, seed, MIGRATOR_DEADLINE_US),
        )
    }

    /// Runs migrator runs alone, without faults, until the migration or its rollback ends: the
    /// operator completing what the budget left.
    fn complete(&mut self, store: &MemoryStore, now: Timestamp) -> Result<(), String> {
        let abort = self.driver.scenario != Scenario::Complete;
        for attempt in 0..COMPLETION_RUNS {
            let run = MigratorRun {
                n: self.driver.migrator_runs() + 1 + u64::from(attempt),
                switch: !abort,
                finish: !abort,
                abort,
                take_over: true,
            };
            let (result, ended) = self.run_alone(store, now, &run, &self.log);
            if ended == Some(MigratorEnd::Removed) {
                return Ok(());
            }
            if let Err(e) = result {
                return Err(format!("completing the migration after the budget: {e}"));
            }
        }
        Err(format!(
            "the migration did not end in {COMPLETION_RUNS} runs without faults"
        ))
    }

    /// One migrator run alone, without crashes, logging into `log`: its result and where it
    /// ended.
    fn run_alone(
        &self,
        store: &MemoryStore,
        now: Timestamp,
        run: &MigratorRun,
        log: &Rc<RefCell<MigratorLog<TraceStoreEvent>>>,
    ) -> (Result<TraceMigrateOutcome, String>, Option<MigratorEnd>) {
        let clock = ManualClock::new(now);
        let status = Rc::new(RefCell::new(MigratorStatus::default()));
        let shell = MigratorShell::new(
            self.migrator(run, now, run.n),
            run.n,
            now,
            now.saturating_add_micros(MIGRATOR_DEADLINE_US),
            None,
            log,
            &status,
        );
        let result = rowkit_client::run_blocking(store, &clock, shell, |()| {})
            .map_err(|e| format!("{e:?}"));
        let ended = status.borrow().ended;
        (result, ended)
    }

    /// The Gold operations of the history, as the trace-store workload records them.
    fn gold_history(history: &History) -> Vec<Record<TraceStoreOp, TraceStoreOutput>> {
        history
            .iter()
            .filter_map(|r| {
                let TraceMigrateOp::Gold { op, .. } = &r.op else {
                    return None;
                };
                let outcome = match &r.outcome {
                    Outcome::Crashed => Outcome::Crashed,
                    Outcome::Done(Ok(TraceMigrateOutput::Gold(o))) => Outcome::Done(Ok(o.clone())),
                    Outcome::Done(Ok(other)) => {
                        Outcome::Done(Err(format!("unexpected output {other:?}")))
                    }
                    Outcome::Done(Err(e)) => Outcome::Done(Err(e.clone())),
                };
                Some(Record {
                    op: op.clone(),
                    start: r.start,
                    end: r.end,
                    outcome,
                })
            })
            .collect()
    }

    /// Invariant 6: every state change a migrator reported is an arrow of §3.
    fn check_marker_changes(&self) -> Result<u64, String> {
        let mut checked = 0;
        for (n, event) in &self.log.borrow().events {
            if let TraceStoreEvent::Migrate(TraceMigrateEvent::StateChanged { from, to }) = event {
                if !section3_arrow(*from, *to) {
                    return Err(format!(
                        "migrator #{n} changed the marker {from:?} -> {to:?}, not an arrow of §3"
                    ));
                }
                checked += 1;
            }
        }
        Ok(checked)
    }

    /// Invariant 1 at the snapshots: every point the writes before it decide reads back.
    fn check_snapshots(
        &self,
        gold: &[Record<TraceStoreOp, TraceStoreOutput>],
    ) -> Result<Checked, String> {
        let mut checked = Checked::default();
        for (point, at, tile) in self.snapshots.borrow().iter() {
            let before: Vec<_> = gold.iter().filter(|r| r.start < *at).cloned().collect();
            check_tile(tile, &before, &mut checked)
                .map_err(|e| format!("snapshot {point:?}: {e}"))?;
        }
        Ok(checked)
    }

    /// Invariant 4: nothing old left (see the module doc).
    fn check_nothing_old(&self, store: &MemoryStore, now: Timestamp) -> Result<u64, String> {
        let marker_row = migration_row_name();
        let (old, new) = match self.driver.scenario {
            Scenario::Complete => (TABLE, TARGET_TABLE),
            _ => (TARGET_TABLE, TABLE),
        };
        let old_rows = read_table(store, old, now)?;
        if let Some(r) = old_rows.iter().find(|r| r.key != marker_row) {
            return Err(format!(
                "{old} keeps row {} after the migration ended",
                rowkit_codec::escape::escape(&r.key)
            ));
        }
        let old_marker = old_rows.iter().find_map(marker_of);
        let new_marker = read_table(store, new, now)?.iter().find_map(marker_of);
        match self.driver.scenario {
            Scenario::Complete => {
                let state = old_marker
                    .ok_or_else(|| format!("{old} has no marker after the clean-up"))?
                    .map_err(|e| format!("{old}'s marker: {e}"))?;
                if state != MigrationState::Cleaning {
                    return Err(format!(
                        "{old}'s marker is {state:?}, not cleaning (§12.52)"
                    ));
                }
            }
            _ => {
                if old_marker.is_some() {
                    return Err(format!("{old} keeps a marker after the rollback"));
                }
            }
        }
        if new_marker.is_some() {
            return Err(format!("{new} keeps a marker after the migration ended"));
        }
        Ok(old_rows.len() as u64 + 1)
    }

    /// Invariant 5: a second run after the end (the same gates) sends reads only.
    fn check_second_run(&self, store: &MemoryStore, now: Timestamp) -> Result<(), String> {
        let abort = self.driver.scenario != Scenario::Complete;
        let run = MigratorRun {
            n: u64::MAX,
            switch: !abort,
            finish: !abort,
            abort,
            take_over: false,
        };
        let log = Rc::default();
        let (result, _) = self.run_alone(store, now, &run, &log);
        if let Some((_, r)) = log.borrow().requests.iter().find(|(_, r)| !is_read(r)) {
            return Err(format!(
                "a second run after the end sent a write ({result:?}): {r:?}"
            ));
        }
        Ok(())
    }
}

impl MigrationOp for TraceMigrateOp {
    fn migrator_run(&self) -> Option<&MigratorRun> {
        match self {
            TraceMigrateOp::Migrate(run) => Some(run),
            _ => None,
        }
    }
}

impl SchemaMigrator for MigrateTraceStore<'static> {
    fn stopped_in(output: &TraceMigrateOutcome) -> Option<MigrationState> {
        match output.end {
            TraceMigrateEnd::InState(state) => Some(state),
            TraceMigrateEnd::Removed | TraceMigrateEnd::Cleaned => None,
        }
    }
    fn is_usage_error(error: &TraceStoreError) -> bool {
        matches!(error, TraceStoreError::MigrationUsage(_))
    }
}

/// Whether a request only reads.
fn is_read(r: &Request) -> bool {
    matches!(
        r,
        Request::ReadRows(_) | Request::ReadRow(_) | Request::SampleRowKeys(_)
    )
}

/// Every row of `table`, every cell (also the live migration's "nothing old left").
pub(crate) fn read_table<S: rowkit_store::Store + ?Sized>(
    store: &S,
    table: &str,
    now: Timestamp,
) -> Result<Vec<Row>, String> {
    let request = ReadRowsRequest {
        table: table.into(),
        rows: RowSet {
            row_keys: Vec::new(),
            row_ranges: vec![RowRange::all()],
        },
        ..Default::default()
    };
    rowkit_client::read_rows_blocking(store, request, now)
        .map_err(|e| format!("reading {table}: {e}"))
}

/// The state of the marker a row holds, if it holds one.
pub(crate) fn marker_of(row: &Row) -> Option<Result<MigrationState, String>> {
    let cell = row
        .cells
        .iter()
        .filter(|c| c.qualifier == MARKER_COLUMN.as_bytes())
        .max_by_key(|c| c.timestamp)?;
    Some(
        MigrationMarker::<Layout>::from_json_bytes(&cell.value)
            .map(|m| m.state)
            .map_err(|e| e.to_string()),
    )
}

/// A snapshot in flight: reports its end (success or not) to the driver once.
struct SnapshotRun {
    status: Rc<RefCell<MigratorStatus>>,
    reported: bool,
}

impl SnapshotRun {
    fn end(&mut self, ok: bool) {
        if !self.reported {
            self.reported = true;
            let mut status = self.status.borrow_mut();
            status.snapshot_running = false;
            status.snapshot_ended = Some(ok);
        }
    }
}

impl Drop for SnapshotRun {
    fn drop(&mut self) {
        self.end(false);
    }
}

impl Workload for TraceStoreMigrateWorkload {
    type Op = TraceMigrateOp;
    type Output = TraceMigrateOutput;

    fn setup(&mut self, store: &MemoryStore, now: Timestamp, seed: u64) -> Result<(), String> {
        // Three runs in four migrate md5 to digest-id, the others digest-id to md5.
        let (from, to) = if SplitMix64::nth_output(seed, 8).is_multiple_of(4) {
            (Layout::DigestId, Layout::Md5)
        } else {
            (Layout::Md5, Layout::DigestId)
        };
        self.source = TraceStoreWorkload::on_table(from, TABLE);
        self.target = TraceStoreWorkload::on_table(to, TARGET_TABLE);
        self.source.setup(store, now, seed)?;
        self.target.setup(store, now, seed)?;
        self.driver = Driver::new(Scenario::of_seed(seed), self.pacing);
        self.on_target = false;
        self.log = Rc::default();
        self.snapshots = Rc::default();
        self.finished_after_budget = false;
        self.failure = None;
        Ok(())
    }

    fn next_op(&mut self, rng: &mut SplitMix64) -> TraceMigrateOp {
        let action = self.driver.next_action();
        // Readers, then writers, restarted on `T2` once the switch is done (§6.2).
        if self.driver.stage() == Stage::Finishing {
            self.on_target = true;
        }
        let on_target = self.on_target;
        match action {
            Action::Write => {
                let clients = if on_target {
                    &mut self.target
                } else {
                    &mut self.source
                };
                TraceMigrateOp::Gold {
                    on_target,
                    op: clients.next_op(rng),
                }
            }
            // No aware writers here (`PACING`): the driver never asks for one.
            Action::Read | Action::AwareWrite => TraceMigrateOp::Gold {
                on_target,
                op: TraceStoreWorkload::next_read(rng),
            },
            Action::Migrate(run) => TraceMigrateOp::Migrate(run),
            Action::Wait(until) => TraceMigrateOp::Wait(until),
            Action::Pause => TraceMigrateOp::Pause,
            Action::Snapshot(point) => TraceMigrateOp::Snapshot(point),
        }
    }

    fn start(
        &self,
        op: &TraceMigrateOp,
        now: Timestamp,
        seed: u64,
    ) -> SimMachine<TraceMigrateOutput> {
        match op {
            TraceMigrateOp::Gold { on_target, op } => {
                let clients = if *on_target {
                    &self.target
                } else {
                    &self.source
                };
                let machine = clients.start(op, now, seed);
                if matches!(op, TraceStoreOp::Put { .. } | TraceStoreOp::Assign(_)) {
                    holding(machine, self.driver.writer(), TraceMigrateOutput::Gold)
                } else {
                    erase(machine, TraceMigrateOutput::Gold)
                }
            }
            TraceMigrateOp::Migrate(run) => {
                let shell = MigratorShell::new(
                    self.migrator(run, now, seed),
                    run.n,
                    now,
                    now.saturating_add_micros(MIGRATOR_DEADLINE_US),
                    Some((seed.rotate_left(17), CRASHES)),
                    &self.log,
                    &self.driver.status(),
                );
                erase(shell, TraceMigrateOutput::Migrated)
            }
            TraceMigrateOp::Wait(until) => {
                erase(Waiting::new(now, *until), |()| TraceMigrateOutput::Waited)
            }
            TraceMigrateOp::Pause => erase(
                Pausing::new(now, &self.driver.status(), self.pacing.pause_requests),
                |()| TraceMigrateOutput::Waited,
            ),
            TraceMigrateOp::Snapshot(point) => {
                // After the switch `T2` is the truth; around a rollback, `T1`.
                let truth = if *point == SnapshotPoint::AfterSwitch {
                    &self.target
                } else {
                    &self.source
                };
                let read = truth.read_everything(now, seed);
                let snapshots = self.snapshots.clone();
                let point = *point;
                let mut run = SnapshotRun {
                    status: self.driver.status(),
                    reported: false,
                };
                erase(read, move |tile| {
                    snapshots.borrow_mut().push((point, now, tile));
                    run.end(true);
                    TraceMigrateOutput::Snapshot
                })
            }
        }
    }

    /// Completes the migration the budget left unfinished (alone, without faults: the
    /// operator's last runs).
    fn repairs(&mut self, store: &MemoryStore, now: Timestamp, _: &History) -> Vec<TraceMigrateOp> {
        self.driver.observe_ends();
        if self.driver.stage() != Stage::Done {
            self.finished_after_budget = true;
            if let Err(e) = self.complete(store, now) {
                self.failure = Some(e);
            }
        }
        Vec::new()
    }

    fn check(
        &mut self,
        store: &MemoryStore,
        now: Timestamp,
        history: &History,
    ) -> Result<Checked, String> {
        self.stats
            .count(history, self.driver.scenario, self.finished_after_budget);
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        let gold = Self::gold_history(history);
        let mut decided = self.check_marker_changes()?;
        let snapshots = self.check_snapshots(&gold)?;
        decided += self.check_nothing_old(store, now)?;
        self.check_second_run(store, now)?;
        // The truth's own checks among the writers, not the other table's (numbered apart).
        let complete = self.driver.scenario == Scenario::Complete;
        let truth_gold: Vec<_> = Self::gold_history(history)
            .into_iter()
            .zip(history.iter().filter(|r| matches!(r.op, TraceMigrateOp::Gold { .. })))
            .filter(|(g, r)| {
                !matches!(g.op, TraceStoreOp::Check(_))
                    || matches!(r.op, TraceMigrateOp::Gold { on_target, .. } if on_target == complete)
            })
            .map(|(g, _)| g)
            .collect();
        let truth = if complete {
            &mut self.target
        } else {
            &mut self.source
        };
        let mut checked = truth.check(store, now, &truth_gold)?;
        checked.decided += decided + snapshots.decided;
        checked.undecided += snapshots.undecided;
        Ok(checked)
    }
}
