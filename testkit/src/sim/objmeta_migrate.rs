//! The object-metadata layout migration under the simulator (`docs/migration.md` §10): the
//! [objmeta workload](super::objmeta)'s clients — unaware writers on their own processes with
//! their cached vFormat, aware readers on fresh processes (they read the truth) and its
//! checks — run while one [`MigrateBucket`] moves a bucket to the other key layout, driven by
//! the operator of [`super::migration`] through its gates, crashing and resuming.
//!
//! Each run migrates one bucket: `simzero` v0 → v1 (three runs in four) or `simone` v1 → v0,
//! and follows a [`Scenario`]: the whole migration (copy and verification while the writers
//! write; the writers stopped, `--switch`; the writers restarted on fresh processes, which read
//! the new vFormat; `--finish`), or a rollback (`--abort`) with the writers running or
//! stopped. A migration the operation budget leaves unfinished is completed after it, without
//! faults, before the objmeta workload's repairs. Then (§10.3):
//!
//! 1. **no acknowledged write lost** and **readers never miss**: the objmeta workload's model
//!    of acknowledged and open outcomes holds for every get and listing during the run (aware
//!    readers) and for every object after it — read back through `GetObject` and listings on
//!    the layout the bucket ends in;
//! 3. the objmeta check (`check_op` among the writers, which may also report a migrating
//!    bucket's pairs the unaware writers left unsynced, or a straggler's or conflicting write
//!    after the switch: `migration_unsynced`, `migration_straggler`, `migration_conflict`;
//!    `wrong_format_key` from a check that read the metastore row before the marker was written,
//!    §6.3) and `check_settled` at the end, clean;
//! 4. **nothing old left**: the bucket's collection holds only keys of the layout it ends in,
//!    no row carries `f:rowkitSync`, its metastore row no marker or checkpoint, and its
//!    `vFormat` is `to` (or, rolled back, `from`);
//! 5. **a second run after the end sends reads only** (and ends "already", or, after a
//!    rollback, refuses `--abort` with nothing to abort); after the switch, with the writers
//!    stopped, the two layouts hold the same rows byte for byte, every one stamped (§4.5 step
//!    2); a rollback with the writers stopped leaves the bucket byte for byte as it was before
//!    the migration (its rows, without the stamps and `to` rows the migration added);
//! 6. **the marker only follows §3**: every marker change a migrator sent (the predicate names
//!    the marker as read, the mutation the new one) is an arrow of §3's diagram, and only the
//!    switch CAS (`switching` → `switched`) writes `d:vFormat`, with `to`.
//!
//! Migrators crash after a response (more often after an error response, i.e. after a request
//! applied whose response was lost) and when the simulator's crash fault hits them; the next
//! run resumes with `--take-over` (§12 of the design records why).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use crate::sync_stamps::{stamped_with_its_hash, without_sync_nonce};
use rowkit_codec::model::{KeyBound, Mutation, Row, RowFilter, RowRange, RowSet};
use rowkit_codec::objmeta::cells::DOC_FAMILY;
use rowkit_codec::objmeta::keys::{VFormat, collection_end, collection_start};
use rowkit_codec::objmeta::migration::marker::{
    CHECKPOINT_COLUMN, Gates, MARKER_COLUMN, MigrationMarker, MigrationState, VFORMAT_COLUMN,
    metastore_row,
};
use rowkit_codec::objmeta::migration::sync::SYNC_QUALIFIER;
use rowkit_statemachines::objmeta::migrate::pass::MigrateEvent;
use rowkit_statemachines::objmeta::migrate::run::{
    MigrateBucket, MigrateEnd, MigrateOptions, MigrateOutcome,
};
use rowkit_statemachines::objmeta::{ObjmetaConfig, ObjmetaError, ObjmetaEvent, ObjmetaState};
use rowkit_statemachines::operation::Start;
#[cfg(feature = "planted-bugs")]
use rowkit_statemachines::planted::PlantedBug;
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    Machine, ReadRowsRequest, Request, Response, SplitMix64, StoreError, Tag, Timestamp,
};
use rowkit_store::MemoryStore;
use rowkit_store::driver::ManualClock;

use super::migration::{
    Action, Collecting, CrashRates, Driver, MigrationOp, MigrationStats, MigratorEnd, MigratorLog,
    MigratorRun, MigratorShell, MigratorStatus, Pacing, Pausing, Scenario, SchemaMigrator,
    SnapshotPoint, Stage, Waiting, holding, section3_arrow,
};
use super::objmeta::{BUCKETS, ObjmetaOp, ObjmetaOutput, ObjmetaWorkload, TABLE};
use super::{Checked, Outcome, Record, SimMachine, Workload, erase};

/// A migrator run's deadline: far beyond any run (its passes and settle waits).
const MIGRATOR_DEADLINE_US: i64 = 3_600_000_000;
/// `from` rows per page: small, so that a pass has several pages and checkpoints.
const PAGE_ROWS: u32 = 12;
/// Migrator runs after the budget before the completion gives up (each one without faults
/// should finish; a second is a resume after a gate).
const COMPLETION_RUNS: u32 = 4;
/// One put or delete in this many, where the writers write, runs on an aware process.
const AWARE_EVERY: u64 = 3;
/// One aware write in this many crashes before its mirror.
const CRASH_BEFORE_MIRROR_EVERY: u64 = 4;
/// The error of an aware write crashed before its mirror.
const CRASHED_BEFORE_MIRROR: &str = "aware writer crashed before its mirror (simulated)";

/// The shell's crash chances (per 10 000 responses).
const CRASHES: CrashRates = CrashRates {
    after_response: 10,
    after_error: 800,
};

/// An operation of the migration workload.
#[derive(Clone)]
pub enum MigrateOp {
    /// One of the objmeta workload's operations (boxed: the other variants are small).
    Objmeta(Box<ObjmetaOp>),
    /// A put or delete on an aware process (rowkit's client facade, §9): it follows the
    /// marker and needs no gate; `crash_before_mirror`: it crashes at its first read after a
    /// write — the mirror's read of the pair (§10.1's crash between a protocol write and its
    /// mirror).
    Aware {
        /// The write.
        op: Box<ObjmetaOp>,
        /// It crashes before its mirror.
        crash_before_mirror: bool,
    },
    /// A migrator run (`rowkit s3 migrate BUCKET --to …` with these flags).
    Migrate(MigratorRun),
    /// An idle client waits with the migrator through its settle wait.
    Wait(Timestamp),
    /// An idle client pauses while the writers are stopped.
    Pause,
    /// The operator's snapshot of the bucket (its collection and metastore row).
    Snapshot(SnapshotPoint),
}

impl fmt::Debug for MigrateOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MigrateOp::Objmeta(op) => op.fmt(f),
            MigrateOp::Aware {
                op,
                crash_before_mirror,
            } => {
                let crash = if *crash_before_mirror {
                    ", crashing before its mirror"
                } else {
                    ""
                };
                write!(f, "{op:?} (aware{crash})")
            }
            MigrateOp::Migrate(run) => write!(f, "{run}"),
            MigrateOp::Wait(until) => write!(f, "Wait until {}", until.0),
            MigrateOp::Pause => write!(f, "Pause"),
            MigrateOp::Snapshot(point) => write!(f, "Snapshot {point:?}"),
        }
    }
}

/// What an operation of the migration workload returned.
#[derive(Clone, Debug, PartialEq)]
pub enum MigrateOutput {
    /// An objmeta operation's output.
    Objmeta(ObjmetaOutput),
    /// A migrator run's outcome.
    Migrated(MigrateOutcome),
    /// A wait ended.
    Waited,
    /// A snapshot was taken (its rows are kept by the workload).
    Snapshot,
}

/// The migration workload (see the module doc).
pub struct ObjmetaMigrateWorkload {
    /// A bug planted in the migrator only (the simulator's self-test).
    #[cfg(feature = "planted-bugs")]
    pub planted: Option<PlantedBug>,
    objmeta: ObjmetaWorkload,
    pacing: Pacing,
    driver: Driver,
    /// The migrating bucket (index into the objmeta workload's buckets) and its layouts.
    bucket: usize,
    from: VFormat,
    to: VFormat,
    log: Rc<RefCell<MigratorLog<ObjmetaEvent>>>,
    snapshots: Rc<RefCell<BTreeMap<SnapshotPoint, Vec<Row>>>>,
    /// The migration was completed after the budget in this run.
    finished_after_budget: bool,
    /// What went wrong where no error can be returned (completing the migration in
    /// [`Workload::repairs`]); reported by [`Workload::check`].
    failure: Option<String>,
    stats: MigrationStats,
}

/// An aware write that crashes at its first read after a write: the mirror's read of the
/// pair (`SyncKey` reads it first), after the protocol wrote (§10.1). It ends with
/// [`CRASHED_BEFORE_MIRROR`], an outcome the model leaves open.
struct CrashBeforeMirror {
    machine: SimMachine<ObjmetaOutput>,
    wrote: bool,
    crashed: bool,
    reported: bool,
}

impl CrashBeforeMirror {
    fn new(machine: SimMachine<ObjmetaOutput>) -> CrashBeforeMirror {
        CrashBeforeMirror {
            machine,
            wrote: false,
            crashed: false,
            reported: false,
        }
    }
}

impl Machine for CrashBeforeMirror {
    type Output = ObjmetaOutput;
    type Event = ();
    type Error = String;

    fn handle_response(&mut self, tag: Tag, r: Result<Response, StoreError>, now: Timestamp) {
        if !self.crashed {
            self.machine.handle_response(tag, r, now);
        }
    }
    fn handle_timeout(&mut self, now: Timestamp) {
        if !self.crashed {
            self.machine.handle_timeout(now);
        }
    }
    fn cancel(&mut self, now: Timestamp) {
        self.machine.cancel(now);
    }
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        if self.crashed {
            return None;
        }
        let (tag, request) = self.machine.poll_request()?;
        let read = matches!(request, Request::ReadRows(_) | Request::ReadRow(_));
        if read && self.wrote {
            self.crashed = true;
            return None;
        }
        self.wrote |= !read;
        Some((tag, request))
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        if self.crashed {
            return None;
        }
        self.machine.poll_abort()
    }
    fn poll_event(&mut self) -> Option<()> {
        if self.crashed {
            return None;
        }
        self.machine.poll_event()
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        if self.crashed {
            return None;
        }
        self.machine.poll_timeout()
    }
    fn result(&mut self) -> Option<Result<ObjmetaOutput, String>> {
        if self.crashed {
            if self.reported {
                return None;
            }
            self.reported = true;
            return Some(Err(CRASHED_BEFORE_MIRROR.to_string()));
        }
        self.machine.result()
    }
}

impl Default for ObjmetaMigrateWorkload {
    fn default() -> Self {
        ObjmetaMigrateWorkload {
            #[cfg(feature = "planted-bugs")]
            planted: None,
            objmeta: ObjmetaWorkload::default(),
            pacing: Pacing {
                aware_writers: true,
                ..Pacing::default()
            },
            driver: Driver::new(Scenario::Complete, Pacing::default()),
            bucket: 0,
            from: VFormat::V0,
            to: VFormat::V1,
            log: Rc::default(),
            snapshots: Rc::default(),
            finished_after_budget: false,
            failure: None,
            stats: MigrationStats::default(),
        }
    }
}

type History = [Record<MigrateOp, MigrateOutput>];

impl ObjmetaMigrateWorkload {
    /// The workload with `bug` planted in its migrators.
    #[cfg(feature = "planted-bugs")]
    pub fn with_planted_bug(bug: PlantedBug) -> ObjmetaMigrateWorkload {
        ObjmetaMigrateWorkload {
            planted: Some(bug),
            ..Default::default()
        }
    }

    /// The migrations' counters over every run so far.
    pub fn stats(&self) -> MigrationStats {
        self.stats
    }

    fn bucket_name(&self) -> &'static str {
        BUCKETS[self.bucket].0
    }

    /// A migrator process's state (the planted bug, if any, is the migrator's only).
    fn migrator_state(&self) -> ObjmetaState {
        ObjmetaState::new(ObjmetaConfig {
            table: TABLE.into(),
            #[cfg(feature = "planted-bugs")]
            planted: self.planted,
            ..ObjmetaConfig::default()
        })
    }

    /// Migrator run `run` as its machine, from `now`.
    fn migrator(&self, run: &MigratorRun, now: Timestamp, seed: u64) -> MigrateBucket<'static> {
        let options = MigrateOptions {
            gates: Gates {
                switch: run.switch,
                finish: run.finish,
            },
            abort: run.abort,
            settle_us: None,
            page_rows: PAGE_ROWS,
            take_over: run.take_over,
            owner: format!("sim:{}", run.n),
            ..MigrateOptions::default()
        };
        MigrateBucket::new(
            self.migrator_state(),
            self.bucket_name(),
            self.to,
            options,
            Start::within(now, seed, MIGRATOR_DEADLINE_US),
        )
    }

    /// The read of a snapshot: the bucket's collection and metastore row, every cell.
    fn snapshot_request(&self) -> ReadRowsRequest {
        let bucket = self.bucket_name();
        ReadRowsRequest {
            table: TABLE.into(),
            rows: RowSet {
                row_keys: vec![metastore_row(bucket)],
                row_ranges: vec![RowRange::half_open(
                    collection_start(bucket),
                    collection_end(bucket),
                )],
            },
            ..Default::default()
        }
    }

    fn read_bucket(&self, store: &MemoryStore, now: Timestamp) -> Result<Vec<Row>, String> {
        rowkit_client::read_rows_blocking(store, self.snapshot_request(), now)
            .map_err(|e| format!("reading bucket {}: {e}", self.bucket_name()))
    }

    /// What the processes do when the operator's stage changes.
    fn enter(&mut self, stage: Stage) {
        match stage {
            // The writers are stopped: so are their processes' scheduled repairs.
            Stage::Switching | Stage::SnapshotBefore => {
                self.objmeta.drop_pending_repairs(self.bucket)
            }
            // Restarted processes read the new vFormat.
            Stage::Finishing => {
                self.objmeta.set_cached_vformat(self.bucket, None);
                self.objmeta.set_rows_vformat(self.bucket, self.to);
            }
            _ => {}
        }
    }

    /// Runs migrator runs alone, without faults, until the marker is removed: the operator
    /// completing what the budget left (the rollback, or the whole migration).
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
            let clock = ManualClock::new(now);
            let status = Rc::new(RefCell::new(MigratorStatus::default()));
            let shell = MigratorShell::new(
                self.migrator(&run, now, u64::from(attempt)),
                run.n,
                now,
                now.saturating_add_micros(MIGRATOR_DEADLINE_US),
                None,
                &self.log,
                &status,
            );
            let result = rowkit_client::run_blocking(store, &clock, shell, |()| {});
            let ended = status.borrow().ended;
            match (result, ended) {
                // The marker removed (or, for `--abort`, never written: nothing to roll back).
                (_, Some(MigratorEnd::Removed)) => return Ok(()),
                (Ok(_), _) => {}
                (Err(e), _) => {
                    return Err(format!(
                        "completing the migration of {} after the budget: {e:?}",
                        self.bucket_name()
                    ));
                }
            }
        }
        Err(format!(
            "the migration of {} did not end in {COMPLETION_RUNS} runs without faults",
            self.bucket_name()
        ))
    }

    /// `op` (a put or delete) on an aware process, crashing before its mirror one time in
    /// [`CRASH_BEFORE_MIRROR_EVERY`].
    fn aware(&self, op: ObjmetaOp, rng: &mut SplitMix64) -> MigrateOp {
        MigrateOp::Aware {
            op: Box::new(op),
            crash_before_mirror: rng.next_u64().is_multiple_of(CRASH_BEFORE_MIRROR_EVERY),
        }
    }

    /// The objmeta operations of the history, as the objmeta workload records them.
    fn objmeta_history(history: &History) -> Vec<Record<ObjmetaOp, ObjmetaOutput>> {
        history
            .iter()
            .filter_map(|r| {
                let (MigrateOp::Objmeta(op) | MigrateOp::Aware { op, .. }) = &r.op else {
                    return None;
                };
                let outcome = match &r.outcome {
                    Outcome::Crashed => Outcome::Crashed,
                    Outcome::Done(Ok(MigrateOutput::Objmeta(o))) => Outcome::Done(Ok(o.clone())),
                    Outcome::Done(Ok(other)) => {
                        Outcome::Done(Err(format!("unexpected output {other:?}")))
                    }
                    Outcome::Done(Err(e)) => Outcome::Done(Err(e.clone())),
                };
                Some(Record {
                    op: ObjmetaOp::clone(op),
                    start: r.start,
                    end: r.end,
                    outcome,
                })
            })
            .collect()
    }

    /// Invariant 6: every marker change sent is an arrow of §3; only the switch writes
    /// `d:vFormat`, with `to`. Also the `StateChanged` events. Gives the changes checked.
    fn check_marker_changes(&self) -> Result<u64, String> {
        let log = self.log.borrow();
        let row = metastore_row(self.bucket_name());
        let mut checked = 0;
        for (n, request) in &log.requests {
            let Request::CheckAndMutateRow(r) = request else {
                continue;
            };
            if r.row_key != row {
                continue;
            }
            let mutations: Vec<&Mutation> =
                r.true_mutations.iter().chain(&r.false_mutations).collect();
            let marker_write = mutations
                .iter()
                .find_map(|m| doc_column_write(m, MARKER_COLUMN));
            let vformat_write = mutations
                .iter()
                .find_map(|m| doc_column_write(m, VFORMAT_COLUMN));
            let Some(new) = marker_write else {
                if vformat_write.is_some() {
                    return Err(format!(
                        "migrator {n} wrote d:vFormat without changing the marker"
                    ));
                }
                continue;
            };
            let old = marker_as_read(r.predicate.as_ref())
                .ok_or_else(|| format!("migrator {n}: a marker change without the marker as read in its predicate: {:?}", r.predicate))?;
            let old = old.map(state_of).transpose()?;
            let new = new.map(state_of).transpose()?;
            if !section3_arrow(old, new) {
                return Err(format!(
                    "migrator {n} sent the marker change {old:?} → {new:?}, which §3 does not draw"
                ));
            }
            let switch =
                old == Some(MigrationState::Switching) && new == Some(MigrationState::Switched);
            match vformat_write {
                Some(value) if switch => {
                    let want = format!("\"{}\"", self.to.as_str());
                    if value != Some(want.as_bytes()) {
                        return Err(format!(
                            "migrator {n}'s switch wrote d:vFormat {:?}, not {want}",
                            value.map(String::from_utf8_lossy)
                        ));
                    }
                }
                None if switch => {
                    return Err(format!("migrator {n}'s switch left d:vFormat as it was"));
                }
                Some(_) => {
                    return Err(format!(
                        "migrator {n} wrote d:vFormat in the change {old:?} → {new:?}, not the switch"
                    ));
                }
                None => {}
            }
            checked += 1;
        }
        for (n, event) in &log.events {
            if let ObjmetaEvent::Migrate(MigrateEvent::StateChanged { from, to }) = event
                && !section3_arrow(*from, *to)
            {
                return Err(format!(
                    "migrator {n} reported the state change {from:?} → {to:?}, which §3 does not draw"
                ));
            }
        }
        Ok(checked)
    }

    /// Invariant 4 and the end of invariant 6: the bucket as its migration (or rollback) must
    /// leave it. Gives the rows checked.
    fn check_nothing_old(&self, rows: &[Row]) -> Result<u64, String> {
        let rolled_back = self.driver.scenario != Scenario::Complete;
        let layout = if rolled_back { self.from } else { self.to };
        let bucket = self.bucket_name();
        let meta = metastore_row(bucket);
        let mut checked = 0;
        for row in rows {
            if row.key == meta {
                let cell = |q: &str| {
                    row.cells
                        .iter()
                        .find(|c| c.family == DOC_FAMILY && c.qualifier == q.as_bytes())
                };
                for q in [MARKER_COLUMN, CHECKPOINT_COLUMN] {
                    if cell(q).is_some() {
                        return Err(format!("bucket {bucket} ended with d:{q}"));
                    }
                }
                let vformat = cell(VFORMAT_COLUMN).map(|c| c.value.clone());
                let want = format!("\"{}\"", layout.as_str());
                // A v0 bucket created without `d:vFormat` reads as v0.
                let ok = vformat.as_deref() == Some(want.as_bytes())
                    || (vformat.is_none() && layout == VFormat::V0);
                if !ok {
                    return Err(format!(
                        "bucket {bucket} ended with d:vFormat {:?}, not {want}",
                        vformat.map(|v| String::from_utf8_lossy(&v).into_owned())
                    ));
                }
                continue;
            }
            let arsenal = arsenal_key(bucket, &row.key)?;
            if layout_of(arsenal) != layout {
                return Err(format!(
                    "bucket {bucket} ended {} with a {} row {}",
                    layout.as_str(),
                    layout_of(arsenal).as_str(),
                    rowkit_codec::escape::escape(&row.key)
                ));
            }
            if let Some(c) = row
                .cells
                .iter()
                .find(|c| c.qualifier == SYNC_QUALIFIER.as_bytes())
            {
                return Err(format!(
                    "row {} of {bucket} ended with {}:{SYNC_QUALIFIER}",
                    rowkit_codec::escape::escape(&row.key),
                    c.family
                ));
            }
            checked += 1;
        }
        Ok(checked)
    }

    /// Invariant 5's second run: a migrator after the end sends reads only and ends "already"
    /// (after a rollback: `--abort` refused, nothing to abort).
    fn check_second_run(&self, store: &MemoryStore, now: Timestamp) -> Result<(), String> {
        let rolled_back = self.driver.scenario != Scenario::Complete;
        let run = MigratorRun {
            n: 0,
            switch: true,
            finish: true,
            abort: rolled_back,
            take_over: false,
        };
        let log = Rc::new(RefCell::new(MigratorLog::default()));
        let status = Rc::new(RefCell::new(MigratorStatus::default()));
        let shell = MigratorShell::new(
            self.migrator(&run, now, 1),
            0,
            now,
            now.saturating_add_micros(MIGRATOR_DEADLINE_US),
            None,
            &log,
            &status,
        );
        let result = rowkit_client::run_blocking(store, &ManualClock::new(now), shell, |()| {});
        // After a rollback `--abort` is refused as a usage error (nothing to abort), the only
        // usage error the shell maps to `Removed` (`SchemaMigrator::is_usage_error`).
        let ended_right = match &result {
            Ok(outcome) => !rolled_back && outcome.end == MigrateEnd::Already,
            Err(_) => rolled_back && status.borrow().ended == Some(MigratorEnd::Removed),
        };
        if !ended_right {
            return Err(format!(
                "a second migrator run after the end gave {result:?}"
            ));
        }
        if let Some((_, write)) = log
            .borrow()
            .requests
            .iter()
            .find(|(_, r)| !matches!(r, Request::ReadRows(_) | Request::ReadRow(_)))
        {
            return Err(format!(
                "a second migrator run after the end sent {}",
                write.rpc_name()
            ));
        }
        Ok(())
    }

    /// Invariant 5's byte-for-byte checks on the snapshots the run took.
    fn check_snapshots(&self) -> Result<u64, String> {
        let snapshots = self.snapshots.borrow();
        let bucket = self.bucket_name();
        let meta = metastore_row(bucket);
        let mut checked = 0;
        if let Some(rows) = snapshots.get(&SnapshotPoint::AfterSwitch) {
            let mut from_rows = BTreeMap::new();
            let mut to_rows = BTreeMap::new();
            for row in rows.iter().filter(|r| r.key != meta) {
                let arsenal = arsenal_key(bucket, &row.key)?;
                if !stamped_with_its_hash(row) {
                    return Err(format!(
                        "after the switch, row {} is not stamped with its hash",
                        rowkit_codec::escape::escape(&row.key)
                    ));
                }
                // The layouts hold the same bytes but for the stamps' kinds and nonces (which
                // sync wrote which row, §4.2).
                let cells = without_sync_nonce(row.clone()).cells;
                if layout_of(arsenal) == self.from {
                    from_rows.insert(other_layout_key(arsenal, self.to), cells);
                } else {
                    to_rows.insert(arsenal.to_vec(), cells);
                }
            }
            if from_rows != to_rows {
                let differ: Vec<String> = from_rows
                    .keys()
                    .chain(to_rows.keys())
                    .filter(|k| from_rows.get(*k) != to_rows.get(*k))
                    .map(|k| rowkit_codec::escape::escape(k))
                    .collect();
                return Err(format!(
                    "after the switch, the layouts of {bucket} differ at {}",
                    differ.join(", ")
                ));
            }
            checked += from_rows.len() as u64;
        }
        if let (Some(before), Some(after)) = (
            snapshots.get(&SnapshotPoint::BeforeAbort),
            snapshots.get(&SnapshotPoint::AfterAbort),
        ) {
            let expected: Vec<Row> = before
                .iter()
                .filter(|r| {
                    r.key == meta
                        || arsenal_key(bucket, &r.key).is_ok_and(|a| layout_of(a) == self.from)
                })
                .map(|r| Row {
                    key: r.key.clone(),
                    cells: r
                        .cells
                        .iter()
                        .filter(|c| {
                            let added = if r.key == meta {
                                c.family == DOC_FAMILY
                                    && (c.qualifier == MARKER_COLUMN.as_bytes()
                                        || c.qualifier == CHECKPOINT_COLUMN.as_bytes())
                            } else {
                                c.family == "f" && c.qualifier == SYNC_QUALIFIER.as_bytes()
                            };
                            !added
                        })
                        .cloned()
                        .collect(),
                })
                .collect();
            if *after != expected {
                let differ: Vec<String> = expected
                    .iter()
                    .map(|r| &r.key)
                    .chain(after.iter().map(|r| &r.key))
                    .filter(|k| {
                        expected.iter().find(|r| &r.key == *k)
                            != after.iter().find(|r| &r.key == *k)
                    })
                    .map(|k| rowkit_codec::escape::escape(k))
                    .collect();
                return Err(format!(
                    "the rollback of {bucket} did not leave it as before the migration: rows {} differ",
                    differ.join(", ")
                ));
            }
            checked += expected.len() as u64;
        }
        Ok(checked)
    }
}

impl MigrationOp for MigrateOp {
    fn migrator_run(&self) -> Option<&MigratorRun> {
        match self {
            MigrateOp::Migrate(run) => Some(run),
            _ => None,
        }
    }
}

impl SchemaMigrator for MigrateBucket<'static> {
    fn stopped_in(output: &MigrateOutcome) -> Option<MigrationState> {
        match output.end {
            MigrateEnd::InState(state) => Some(state),
            MigrateEnd::Removed | MigrateEnd::Already => None,
        }
    }
    fn is_usage_error(error: &ObjmetaError) -> bool {
        matches!(error, ObjmetaError::MigrationUsage(_))
    }
}

fn state_of(text: &[u8]) -> Result<MigrationState, String> {
    MigrationMarker::from_json_bytes(text)
        .map(|m| m.state)
        .map_err(|e| format!("a marker sent is invalid: {e}"))
}

/// A mutation's effect on the `d:` column `qualifier`: `Some(Some(v))` sets it to `v`,
/// `Some(None)` deletes it.
fn doc_column_write<'m>(m: &'m Mutation, qualifier: &str) -> Option<Option<&'m [u8]>> {
    match m {
        Mutation::SetCell {
            family,
            qualifier: q,
            value,
            ..
        } if family == DOC_FAMILY && q == qualifier.as_bytes() => Some(Some(value)),
        Mutation::DeleteFromColumn {
            family,
            qualifier: q,
            ..
        } if family == DOC_FAMILY && q == qualifier.as_bytes() => Some(None),
        _ => None,
    }
}

/// The marker a predicate requires (§2.2: `VALUE_EQ(d:rowkitMigration, v)` → `Some(v)`; the
/// column required absent → `None`); `None` when it names no marker.
fn marker_as_read(filter: Option<&RowFilter>) -> Option<Option<&[u8]>> {
    let names_marker = |chain: &[RowFilter]| {
        chain.iter().any(
            |f| matches!(f, RowFilter::ColumnQualifierRegex(q) if q == MARKER_COLUMN.as_bytes()),
        )
    };
    match filter? {
        RowFilter::Chain(chain) if names_marker(chain) => chain.iter().find_map(|f| match f {
            RowFilter::ValueRange {
                start: KeyBound::Closed(v),
                ..
            } => Some(Some(v.as_slice())),
            _ => None,
        }),
        RowFilter::Condition {
            predicate,
            true_filter,
            false_filter,
        } => {
            if let Some(RowFilter::Chain(chain)) = predicate.as_deref()
                && names_marker(chain)
                && !chain
                    .iter()
                    .any(|f| matches!(f, RowFilter::ValueRange { .. }))
            {
                return Some(None);
            }
            [predicate, true_filter, false_filter]
                .into_iter()
                .find_map(|f| marker_as_read(f.as_deref()))
        }
        RowFilter::Chain(chain) | RowFilter::Interleave(chain) => {
            chain.iter().find_map(|f| marker_as_read(Some(f)))
        }
        _ => None,
    }
}

/// The Arsenal key of a row of `bucket`'s collection (`C ‖ 00 ‖ key`).
fn arsenal_key<'r>(bucket: &str, row_key: &'r [u8]) -> Result<&'r [u8], String> {
    row_key
        .strip_prefix(bucket.as_bytes())
        .and_then(|k| k.strip_prefix(&[0]))
        .ok_or_else(|| {
            format!(
                "row {} is not in bucket {bucket}",
                rowkit_codec::escape::escape(row_key)
            )
        })
}

/// The layout an Arsenal key belongs to (`objmeta.md` §4.1: v1 keys start with `\x7fM` or
/// `\x7fV`).
fn layout_of(arsenal: &[u8]) -> VFormat {
    if arsenal.starts_with(b"\x7fM") || arsenal.starts_with(b"\x7fV") {
        VFormat::V1
    } else {
        VFormat::V0
    }
}

/// The key of the same master or version in layout `to` (§4.1: v0 `k` ↔ v1 `\x7fMk`, v0
/// `k\0x` ↔ v1 `\x7fVk\0x`).
fn other_layout_key(arsenal: &[u8], to: VFormat) -> Vec<u8> {
    match to {
        VFormat::V1 => {
            let prefix: &[u8] = if arsenal.contains(&0) {
                b"\x7fV"
            } else {
                b"\x7fM"
            };
            [prefix, arsenal].concat()
        }
        VFormat::V0 => arsenal.get(2..).unwrap_or_default().to_vec(),
    }
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

impl Workload for ObjmetaMigrateWorkload {
    type Op = MigrateOp;
    type Output = MigrateOutput;

    fn setup(&mut self, store: &MemoryStore, now: Timestamp, seed: u64) -> Result<(), String> {
        self.objmeta.setup(store, now, seed)?;
        self.objmeta.set_fresh_readers(true);
        // What the unaware writers beside a migration leave until a pass syncs it (§6.3); and
        // `wrong_format_key` for a check that read the metastore row before the migrator wrote
        // its marker (or after it removed it) and scans the other layout's rows meanwhile —
        // a migrator in flight leaves them. The settled check at the end allows none.
        for kind in [
            "migration_unsynced",
            "migration_straggler",
            "migration_conflict",
            "wrong_format_key",
        ] {
            self.objmeta.allow_concurrent_finding(kind);
        }
        // Three runs in four migrate the v0 bucket to v1, the others the v1 bucket to v0.
        self.bucket = usize::from(SplitMix64::nth_output(seed, 8).is_multiple_of(4));
        self.from = BUCKETS[self.bucket].1;
        self.to = match self.from {
            VFormat::V0 => VFormat::V1,
            VFormat::V1 => VFormat::V0,
        };
        self.driver = Driver::new(Scenario::of_seed(seed), self.pacing);
        self.log = Rc::default();
        self.snapshots = Rc::default();
        self.finished_after_budget = false;
        self.failure = None;
        Ok(())
    }

    fn next_op(&mut self, rng: &mut SplitMix64) -> MigrateOp {
        let before = self.driver.stage();
        let action = self.driver.next_action();
        if self.driver.stage() != before {
            self.enter(self.driver.stage());
        }
        match action {
            Action::Write => {
                let op = self.objmeta.next_op(rng);
                if op.is_object_write() && rng.next_u64().is_multiple_of(AWARE_EVERY) {
                    self.aware(op, rng)
                } else {
                    MigrateOp::Objmeta(Box::new(op))
                }
            }
            // Only an object write may run now (the gated writers, repairs and checks are
            // stopped): a repair drawn is left to the final sweep, which finds its placeholder.
            Action::AwareWrite => match self.objmeta.next_op(rng) {
                op if op.is_object_write() => self.aware(op, rng),
                op if op.may_write(self.bucket) || op.is_check() => {
                    MigrateOp::Objmeta(Box::new(self.objmeta.next_read(rng, self.bucket)))
                }
                op => MigrateOp::Objmeta(Box::new(op)),
            },
            Action::Read => MigrateOp::Objmeta(Box::new(self.objmeta.next_read(rng, self.bucket))),
            Action::Migrate(run) => MigrateOp::Migrate(run),
            Action::Wait(until) => MigrateOp::Wait(until),
            Action::Pause => MigrateOp::Pause,
            Action::Snapshot(point) => MigrateOp::Snapshot(point),
        }
    }

    fn start(&self, op: &MigrateOp, now: Timestamp, seed: u64) -> SimMachine<MigrateOutput> {
        match op {
            MigrateOp::Objmeta(o) => {
                let machine = self.objmeta.start(o, now, seed);
                if o.may_write(self.bucket) {
                    holding(machine, self.driver.writer(), MigrateOutput::Objmeta)
                } else {
                    erase(machine, MigrateOutput::Objmeta)
                }
            }
            MigrateOp::Aware {
                op,
                crash_before_mirror,
            } => {
                let machine = self.objmeta.start_on(op, now, seed, true);
                let machine = if *crash_before_mirror {
                    Box::new(CrashBeforeMirror::new(machine))
                } else {
                    machine
                };
                holding(machine, self.driver.aware_writer(), MigrateOutput::Objmeta)
            }
            MigrateOp::Migrate(run) => {
                let shell = MigratorShell::new(
                    self.migrator(run, now, seed),
                    run.n,
                    now,
                    now.saturating_add_micros(MIGRATOR_DEADLINE_US),
                    Some((seed.rotate_left(17), CRASHES)),
                    &self.log,
                    &self.driver.status(),
                );
                erase(shell, MigrateOutput::Migrated)
            }
            MigrateOp::Wait(until) => erase(Waiting::new(now, *until), |()| MigrateOutput::Waited),
            MigrateOp::Pause => erase(
                Pausing::new(now, &self.driver.status(), self.pacing.pause_requests),
                |()| MigrateOutput::Waited,
            ),
            MigrateOp::Snapshot(point) => {
                let read = ReadRows::new(self.snapshot_request(), now, seed, Default::default());
                let snapshots = self.snapshots.clone();
                let point = *point;
                let mut run = SnapshotRun {
                    status: self.driver.status(),
                    reported: false,
                };
                erase(Collecting::new(read), move |rows| {
                    snapshots.borrow_mut().insert(point, rows);
                    run.end(true);
                    MigrateOutput::Snapshot
                })
            }
        }
    }

    /// Completes the migration the budget left unfinished (alone, without faults: the
    /// operator's last runs, the writers' processes stopped before a switch), takes the
    /// snapshot after a rollback whose writers stayed stopped, then the objmeta workload's
    /// repairs on the layout the bucket ends in.
    fn repairs(
        &mut self,
        store: &MemoryStore,
        now: Timestamp,
        history: &History,
    ) -> Vec<MigrateOp> {
        if self.driver.observe_ends() {
            self.enter(self.driver.stage());
        }
        let stage = self.driver.stage();
        if stage != Stage::Done {
            self.finished_after_budget = true;
            let switched = matches!(stage, Stage::SnapshotSwitched | Stage::Finishing);
            if self.driver.scenario == Scenario::Complete && !switched {
                self.objmeta.drop_pending_repairs(self.bucket);
            }
            if let Err(e) = self.complete(store, now) {
                self.failure = Some(e);
            }
            if self.driver.scenario == Scenario::Complete {
                self.objmeta.set_cached_vformat(self.bucket, None);
                self.objmeta.set_rows_vformat(self.bucket, self.to);
            }
            // The writers never restarted after the snapshot before the rollback.
            let fenced = matches!(
                stage,
                Stage::Aborting { fenced: true } | Stage::SnapshotAfter
            );
            if fenced && self.failure.is_none() {
                match self.read_bucket(store, now) {
                    Ok(rows) => {
                        self.snapshots
                            .borrow_mut()
                            .insert(SnapshotPoint::AfterAbort, rows);
                    }
                    Err(e) => self.failure = Some(e),
                }
            }
        }
        let objmeta_history = Self::objmeta_history(history);
        self.objmeta
            .repairs(store, now, &objmeta_history)
            .into_iter()
            .map(|op| MigrateOp::Objmeta(Box::new(op)))
            .collect()
    }

    fn check(
        &mut self,
        store: &MemoryStore,
        now: Timestamp,
        history: &History,
    ) -> Result<Checked, String> {
        self.stats
            .count(history, self.driver.scenario, self.finished_after_budget);
        for r in history {
            if let MigrateOp::Aware { .. } = r.op {
                self.stats.aware_writes += 1;
                self.stats.crashed_before_mirror += u64::from(matches!(
                    &r.outcome,
                    Outcome::Done(Err(e)) if e == CRASHED_BEFORE_MIRROR
                ));
            }
        }
        if let Some(e) = self.failure.take() {
            return Err(e);
        }
        let mut decided = self.check_marker_changes()?;
        decided += self.check_snapshots()?;
        decided += self.check_nothing_old(&self.read_bucket(store, now)?)?;
        self.check_second_run(store, now)?;
        let mut checked = self
            .objmeta
            .check(store, now, &Self::objmeta_history(history))?;
        checked.decided += decided + 1;
        Ok(checked)
    }
}
