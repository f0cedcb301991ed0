//! `MigrateTraceStore` — the trace store's migrator (`docs/migration.md` §3, §5.4, §5.5, §5.9,
//! §7.2, §8): one operation over both tables that drives the migration through its
//! states as far as the operator's gates allow, running the marker steps
//! ([`crate::migration`]), the tile passes ([`TilePass`](super::pass::TilePass)) and the
//! rollback's deletion inside its own operation.
//!
//! Both tables carry a marker (§2.1): the source's (`role: source`) is the run's state and
//! holds the checkpoint; the target's (`role: target`) follows it. Every state change writes
//! the source's marker, then the target's — except the switch, which writes the target's first
//! (§5.5: a process that reads either sees `switched` or the fence) — and the end of a
//! rollback removes the target's marker, then the source's.
//!
//! | Markers as read (source, target) | What the run does |
//! | --- | --- |
//! | none, none | the start: `copying` (run id from the operation's seed, `since` = now) |
//! | the target's behind the source's (a crash between the two writes) | the target's written to the source's state |
//! | `switching`, `switched` (the switch half done) | the source's written `switched` |
//! | `copying` | a Copy pass (resumed from the checkpoint when it names this run and state), then `verifying` |
//! | `verifying` | Verify passes until one run whole has no difference; then `gold check` of the target, nested (§8: a finding the source's check does not report on the same row stops the run, [`TraceStoreError::MigrationBlocked`]); then `switching` with `--switch`, else the run ends |
//! | `switching` | waits `since + Δ`; Verify passes (the final pass, every tile) until one is clean; then `switched` (target, then source) |
//! | `switched` | a sweep (§5.6); then `cleaning` with `--finish`, else the run ends |
//! | the source's `switched` as the target of a run out of the target table, `--to` that run's `from` | §5.9's rollback: the swapped run (new id, roles and layouts swapped) written at `switching`, the source's marker first (needs `--switch`); a target marker of the run it swapped is "behind" |
//! | `cleaning` | waits `since + Δ`; a sweep (a conflict ends the run here, nothing deleted); every Gold row of the source deleted, each only if no cell newer than those read arrived (§5.8); the target's marker removed — the source's stays `cleaning`, the forwarding note "use `T2`" |
//! | `cleaning`, no target marker | the migration is complete: the run ends there |
//! | `aborting` (or `--abort` from `copying`, `verifying`, `switching`) | waits `since + Δ`; every row of the target but its marker row deleted; the markers removed (target, then source) |
//!
//! Every wait is measured from the source marker's `since`, so a resumed run does not wait
//! again for time already passed. A run that stops at a gate releases its lease (§12.24).

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::migration::{
    DEFAULT_SETTLE_US, Gates, MIN_SETTLE_US, MarkerRole, MigrationCheckpoint, MigrationState,
    OptionsPolicy, RunId,
};
use rowkit_codec::model::{
    KeyBound, Mutation, Row, RowFilter, RowRange, RowSet, Timestamp, TimestampRange,
};
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::keys::migration_row_name;
use rowkit_codec::tracestore::migration::{TraceMarkerChange, TraceMigrationMarker, marker_place};

use super::super::check::Check;
use super::super::put::WriteChunks;
use super::super::requests::read_request;
use super::super::{TraceStoreError, TraceStoreEvent, TraceStoreState};
use super::marker::{TraceMigrationRead, marker_table};
use super::pass::{TilePassFlow, TilePassKind, TilePassResume, TilePassSummary};
use super::{Side, TablePair, TraceMigrateEvent, TraceMigrationSchema};
use crate::check::{CheckError, CheckOptions, CheckTarget, Finding, NestedCheck};
use crate::children::{ChildId, ChildOutput};
use crate::migration::{ReadMarkerStep, WriteCheckpointStep, WriteMarkerStep};
use crate::objmeta::migrate::pass::PassFinding;
use crate::operation::{ContextArg, Flow, Io, Operation, OperationError, Progress, Start, WaitAll};
use crate::{CheckAndMutateRowRequest, MutateRowsEntry, Request, Response, RetryPolicy, ready};

/// Rows read per page of the rollback's and the clean-up's deletions.
const SCAN_PAGE_ROWS: i64 = 1000;
/// Every family of both Gold layouts (§5.8's predicate).
const GOLD_FAMILIES: &str = "T|P|O|D|I";

/// `MigrateTraceStore(to, options)`: the migration of `pair.source` into `pair.target`, as far
/// as the gates allow (`rowkit gold migrate --to L --target-table T2`).
pub type MigrateTraceStore<'a> = Operation<'a, MigrateTraceStoreFlow>;

/// The migrator's command-line options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceMigrateOptions {
    /// `--switch` / `--finish`: the states the operator lets the run enter (§3).
    pub gates: Gates,
    /// `--abort`: roll back (§5.9's first row).
    pub abort: bool,
    /// `--options refuse|drop` (§5.7).
    pub options: OptionsPolicy,
    /// `--settle`: `Δ` for a run this operation starts (`None`: [`DEFAULT_SETTLE_US`]); never
    /// below [`MIN_SETTLE_US`]. A resumed run keeps its marker's `settle_us`.
    pub settle_us: Option<i64>,
    /// `--take-over`: write checkpoints even while another owner's lease holds (§7.1).
    pub take_over: bool,
    /// Who runs the migration (`host:pid`): the checkpoints' `owner`.
    pub owner: String,
}

/// Where a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceMigrateEnd {
    /// The run stopped in this state: a gate not given, or a state whose work is not built.
    InState(MigrationState),
    /// The markers were removed: the rollback is complete.
    Removed,
    /// The source's Gold rows are gone and the target's marker removed: the migration is
    /// complete (the source's marker stays, `cleaning`, naming the target).
    Cleaned,
}

/// What a run did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceMigrateOutcome {
    /// Where the run ended.
    pub end: TraceMigrateEnd,
    /// The run id.
    pub run: Option<RunId>,
    /// The passes this operation ran, in order.
    pub passes: Vec<TilePassSummary>,
    /// Rows of the target the rollback deleted (this run).
    pub target_rows_deleted: u64,
    /// Rows of the source the clean-up deleted (this run).
    pub source_rows_deleted: u64,
    /// Rows of the source the clean-up left: a cell newer than those it read arrived (this
    /// run; the next run sweeps and deletes them).
    pub source_rows_left: u64,
    /// Findings of the check of the target before the switch that the source has too (§8:
    /// reported, not blocking).
    pub findings: Vec<PassFinding>,
}

/// The check of the target before the switch (§5.5, §8), then — only when it found
/// something — of the source, to tell the source's own findings from the copy's.
#[derive(Debug)]
struct TableCheck {
    nested: NestedCheck<Check>,
    /// The table being checked.
    side: Side,
    /// The target's findings, once its check ended (the source's is running).
    target_findings: Option<Vec<Finding>>,
}

/// The marker changed, on which table.
#[derive(Debug)]
struct MarkerWrite {
    side: Side,
    write: WriteMarkerStep<TraceMigrationRead>,
    from: Option<MigrationState>,
}

#[derive(Debug)]
enum RunPhase {
    /// The source's marker row being read.
    ReadSource(ReadMarkerStep),
    /// The target's marker row being read.
    ReadTarget(ReadMarkerStep),
    /// A marker change being written.
    Marker(Box<MarkerWrite>),
    /// Waiting until the source marker's `since + Δ` (§2.3).
    Settle(Timestamp),
    /// A pass running; `from_start`: not resumed from a cursor.
    Pass {
        pass: Box<TilePassFlow>,
        from_start: bool,
    },
    /// The check of a table before the switch (§8).
    Check(Box<TableCheck>),
    /// The rollback (target) or the clean-up (source): a page of the table's rows being read.
    ScanRead(Side, ChildId),
    /// The rollback: the page's rows being deleted; then the page after `last`.
    ClearDelete(WriteChunks, Vec<u8>),
    /// The clean-up: the page's conditional deletes are out; then the page after `last`.
    CleanDelete(WaitAll, Vec<u8>),
    /// The run stops at a gate (or is refused there): its lease being released first, then
    /// `end`.
    Release {
        write: Box<WriteCheckpointStep<TraceMigrationRead>>,
        end: Result<TraceMigrateEnd, TraceStoreError>,
    },
    Done,
}

/// What the run does next.
enum Next {
    Write(Side, TraceMarkerChange),
    Settle(Timestamp),
    Pass(TilePassKind),
    /// Delete the rows of a side but its marker row (target: the rollback; source: the
    /// clean-up, conditionally).
    Delete(Side),
    /// The check of a table (§8).
    Check(Side),
    /// The run ends (`Err`: refused at a gate, after its lease is released).
    End(Result<TraceMigrateEnd, TraceStoreError>),
}

/// The last pass of the current state.
#[derive(Debug)]
struct Verdict {
    from_start: bool,
    diffs: u64,
    /// Sweep: conflicts found (left in the source).
    conflicts: u64,
    /// A clean verification: the check of the target ran after it and blocks nothing.
    checked: bool,
}

/// The flow of [`MigrateTraceStore`].
#[derive(Debug)]
pub struct MigrateTraceStoreFlow {
    to: Layout,
    options: TraceMigrateOptions,
    source: TraceMigrationRead,
    target: TraceMigrationRead,
    /// The checkpoint to resume the current state's first pass from (§7.2), taken once.
    resume: Option<MigrationCheckpoint>,
    verdict: Option<Verdict>,
    /// The rollback's or clean-up's deletion ended in this run.
    deleted: bool,
    outcome: TraceMigrateOutcome,
    released: bool,
    phase: RunPhase,
}

impl<'a> MigrateTraceStore<'a> {
    /// Migrates `pair.source` into `pair.target` (layout `to`) as far as `options.gates`
    /// allow, starting a run or resuming the one the markers name (see the module doc).
    /// Refused before any request: `to` not the target's layout, or the source's
    /// (`usage_error`); `--settle` below [`MIN_SETTLE_US`]. Refused after the reads, before
    /// any write: a marker of another run or direction (`migration_in_progress`); `--abort`
    /// with nothing to abort, or after the switch (`usage_error`).
    pub fn new(
        pair: impl Into<ContextArg<'a, TablePair>>,
        to: Layout,
        options: TraceMigrateOptions,
        start: Start,
    ) -> MigrateTraceStore<'a> {
        let mut pair = pair.into();
        let refused = match pair.get() {
            Some(p) if p.target.layout != to || p.source.layout == to => Some(alloc::format!(
                "--to {} needs a source table of the other layout and a target of {} \
                     (source {} is {}, target {} is {})",
                to.name(),
                to.name(),
                p.source.table,
                p.source.layout.name(),
                p.target.table,
                p.target.layout.name()
            )),
            _ => options
                .settle_us
                .filter(|s| *s < MIN_SETTLE_US)
                .map(|settle| {
                    alloc::format!(
                        "--settle {settle} µs is below the minimum of {MIN_SETTLE_US} µs \
                     (marker_ttl + max(max_write, 75 s) + skew, docs/migration.md §2.3)"
                    )
                }),
        };
        if let Some(message) = refused {
            return Operation::failed(pair, TraceStoreError::MigrationUsage(message));
        }
        let flow = MigrateTraceStoreFlow {
            to,
            options,
            source: TraceMigrationRead::default(),
            target: TraceMigrationRead::default(),
            resume: None,
            verdict: None,
            deleted: false,
            outcome: TraceMigrateOutcome {
                end: TraceMigrateEnd::Removed,
                run: None,
                passes: Vec::new(),
                target_rows_deleted: 0,
                source_rows_deleted: 0,
                source_rows_left: 0,
                findings: Vec::new(),
            },
            released: false,
            phase: RunPhase::ReadSource(ReadMarkerStep::new(&marker_place())),
        };
        Operation::begin(pair, start, RetryPolicy::default(), flow)
    }
}

/// `marker` as the target's marker (the same run and state, `role: target`).
fn as_target(marker: &TraceMigrationMarker) -> TraceMigrationMarker {
    TraceMigrationMarker {
        role: Some(MarkerRole::Target),
        ..marker.clone()
    }
}

/// Whether `marker`, the source table's, is the target's marker of a switched migration out
/// of `pair.target` in layout `to` — what §5.9 rolls back by the swapped run.
fn is_switched_into(marker: &TraceMigrationMarker, pair: &TablePair, to: Layout) -> bool {
    marker.role == Some(MarkerRole::Target)
        && marker.state == MigrationState::Switched
        && marker.from == to
        && marker.source_table.as_deref() == Some(pair.target.table.as_str())
        && marker.target_table.as_deref() == Some(pair.source.table.as_str())
}

/// Whether the target's marker `target` is the source marker of the switched run that the
/// swapped run `source` rolls back (§5.9), not yet overwritten: a crash between the swapped
/// run's first two marker writes.
fn is_swapped_from(source: &TraceMigrationMarker, target: &TraceMigrationMarker) -> bool {
    source.state == MigrationState::Switching
        && target.state == MigrationState::Switched
        && target.role == Some(MarkerRole::Source)
        && (target.from, target.to) == (source.to, source.from)
        && target.source_table == source.target_table
        && target.target_table == source.source_table
}

impl MigrateTraceStoreFlow {
    /// The refusals on the markers as first read, and what the run starts with.
    fn first(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        pair: &TablePair,
    ) -> Result<Next, TraceStoreError> {
        let in_progress = |m: &TraceMigrationMarker, table: &str| {
            TraceStoreError::MigrationInProgress(alloc::format!(
                "table {table} holds run {} from {} to {} ({}, {} {} into {})",
                m.run,
                m.from.name(),
                m.to.name(),
                m.state,
                m.source_table.as_deref().unwrap_or_default(),
                m.role.map_or("", MarkerRole::as_str),
                m.target_table.as_deref().unwrap_or_default(),
            ))
        };
        let names_this_pair = |m: &TraceMigrationMarker| {
            m.to == self.to
                && m.source_table.as_deref() == Some(pair.source.table.as_str())
                && m.target_table.as_deref() == Some(pair.target.table.as_str())
        };
        if let Some(s) = &self.source.marker
            && is_switched_into(s, pair, self.to)
            && !self.options.abort
        {
            let s = s.clone();
            return self.roll_back(io, pair, s);
        }
        if let Some(t) = &self.target.marker {
            let followed =
                self.source.marker.as_ref().is_some_and(|s| {
                    (names_this_pair(t) && s.run == t.run) || is_swapped_from(s, t)
                });
            if !followed {
                return Err(in_progress(t, &pair.target.table));
            }
        }
        let Some(marker) = self.source.marker.clone() else {
            if self.options.abort {
                return Err(TraceStoreError::MigrationUsage(alloc::format!(
                    "table {} has no migration to abort",
                    pair.source.table
                )));
            }
            let run = RunId((u128::from(io.next_seed()) << 64) | u128::from(io.next_seed()));
            let marker = TraceMigrationMarker {
                source_table: Some(pair.source.table.clone()),
                target_table: Some(pair.target.table.clone()),
                role: Some(MarkerRole::Source),
                options: (self.to == Layout::DigestId).then_some(self.options.options),
                ..TraceMigrationMarker::new(
                    run,
                    pair.source.layout,
                    self.to,
                    MigrationState::Copying,
                    io.now(),
                    self.options.settle_us.unwrap_or(DEFAULT_SETTLE_US),
                    "",
                )
            };
            return Ok(Next::Write(Side::Source, TraceMarkerChange::Write(marker)));
        };
        if !names_this_pair(&marker) {
            return Err(in_progress(&marker, &pair.source.table));
        }
        self.outcome.run = Some(marker.run);
        self.resume = self
            .source
            .checkpoint
            .clone()
            .filter(|c| c.run == marker.run && c.state == marker.state);
        if self.options.abort {
            return match marker.state {
                MigrationState::Copying | MigrationState::Verifying | MigrationState::Switching
                    if self.target.marker.as_ref().map(|t| t.state)
                        != Some(MigrationState::Switched) =>
                {
                    Ok(Next::Write(
                        Side::Source,
                        TraceMarkerChange::Write(
                            marker.with_state(MigrationState::Aborting, io.now()),
                        ),
                    ))
                }
                MigrationState::Aborting => self.next(io),
                _ => Err(TraceStoreError::MigrationUsage(alloc::format!(
                    "run {} is switched: the truth is {} and --abort would delete it \
                     (docs/migration.md §5.9)",
                    marker.run,
                    marker.target_table.as_deref().unwrap_or_default()
                ))),
            };
        }
        self.next(io)
    }

    /// §5.9's second row: a run from the target of a switched migration back into its source
    /// (`--to` the source's layout, `--target-table` the source) starts the swapped run — a
    /// new run id, the tables' roles and the layouts swapped — at `switching`, the source's
    /// (the old target's) marker first. It fences the writers, so it needs `--switch`; a
    /// switch half written (the old source still `switching`) is completed by a run of the
    /// migration itself first. Refused before any write.
    fn roll_back(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        pair: &TablePair,
        switched: TraceMigrationMarker,
    ) -> Result<Next, TraceStoreError> {
        let old_source = self.target.marker.as_ref();
        if old_source.is_none_or(|t| t.run != switched.run) {
            return Err(TraceStoreError::MigrationInProgress(alloc::format!(
                "table {} is the target of run {}, but table {} holds no marker of that run",
                pair.source.table,
                switched.run,
                pair.target.table
            )));
        }
        if old_source.is_some_and(|t| t.state != MigrationState::Switched) {
            return Err(TraceStoreError::MigrationUsage(alloc::format!(
                "the switch of run {} is half written: run `rowkit gold --table {} migrate --to \
                 {} --target-table {}` once to complete it, then roll back",
                switched.run,
                pair.target.table,
                switched.to.name(),
                pair.source.table
            )));
        }
        if !self.options.gates.switch {
            return Err(TraceStoreError::MigrationUsage(alloc::format!(
                "run {} is switched to {}: rolling back to {} fences the writers and needs \
                 --switch (docs/migration.md §5.9)",
                switched.run,
                pair.source.table,
                pair.target.table
            )));
        }
        let run = RunId((u128::from(io.next_seed()) << 64) | u128::from(io.next_seed()));
        let swapped = TraceMigrationMarker {
            run,
            from: switched.to,
            to: switched.from,
            state: MigrationState::Switching,
            since: io.now(),
            source_table: Some(pair.source.table.clone()),
            target_table: Some(pair.target.table.clone()),
            role: Some(MarkerRole::Source),
            options: (self.to == Layout::DigestId).then_some(self.options.options),
            ..switched
        };
        self.outcome.run = Some(run);
        Ok(Next::Write(Side::Source, TraceMarkerChange::Write(swapped)))
    }

    /// Starts `gold check` of `state`'s table (§8) as a nested operation with the run's
    /// deadline: its requests leave under the migrator's tags, its timer is the migrator's.
    fn start_check(io: &mut Io<TraceStoreEvent>, state: &TraceStoreState) -> NestedCheck<Check> {
        let start = io.child_start();
        let target = CheckTarget::new(&state.table);
        let check = Check::new(target, state.layout, CheckOptions::default(), start);
        NestedCheck::start(io, check)
    }

    /// The target's check findings, each marked whether it is the source's own: the source's
    /// check reports the same kind on the same row key (trace and OPS rows have the same key
    /// in both layouts, §12.46).
    fn judge_check(target: &[Finding], source: &[Finding]) -> Vec<PassFinding> {
        target
            .iter()
            .map(|f| PassFinding::Check {
                finding: f.clone(),
                source_own: source
                    .iter()
                    .any(|s| s.kind == f.kind && s.row_key == f.row_key),
            })
            .collect()
    }

    /// The next step from the markers as last read and the current state's last pass.
    fn next(&mut self, io: &Io<TraceStoreEvent>) -> Result<Next, TraceStoreError> {
        let Some(s) = self.source.marker.clone() else {
            return Ok(Next::End(Ok(TraceMigrateEnd::Removed)));
        };
        let t_state = self.target.marker.as_ref().map(|t| t.state);
        let same_run = self.target.marker.as_ref().is_some_and(|t| t.run == s.run);
        // The switch half done: the target says switched, the source still switching. (A
        // target marker of another run is the run a rollback swapped, §5.9: it is behind.)
        if s.state == MigrationState::Switching
            && t_state == Some(MigrationState::Switched)
            && same_run
        {
            let switched = s.with_state(MigrationState::Switched, io.now());
            return Ok(Next::Write(
                Side::Source,
                TraceMarkerChange::Write(switched),
            ));
        }
        // The end of a rollback: the target's marker is removed first.
        if s.state == MigrationState::Aborting && self.deleted {
            let side = if t_state.is_some() {
                Side::Target
            } else {
                Side::Source
            };
            return Ok(Next::Write(side, TraceMarkerChange::Remove));
        }
        // The end of the clean-up: the target's marker removed, the source's kept.
        if s.state == MigrationState::Cleaning && t_state.is_none() {
            return Ok(Next::End(Ok(TraceMigrateEnd::Cleaned)));
        }
        if s.state == MigrationState::Cleaning && self.deleted {
            return Ok(if self.outcome.source_rows_left == 0 {
                Next::Write(Side::Target, TraceMarkerChange::Remove)
            } else {
                Next::End(Ok(TraceMigrateEnd::InState(MigrationState::Cleaning)))
            });
        }
        // The target's marker behind the source's (a crash between the two writes), or the
        // swapped run's predecessor (§5.9's rollback of `switched`).
        let removed = s.state == MigrationState::Aborting && t_state.is_none();
        if (t_state != Some(s.state) || !same_run) && !removed {
            return Ok(Next::Write(
                Side::Target,
                TraceMarkerChange::Write(as_target(&s)),
            ));
        }
        let gates = self.options.gates;
        let change = |state| TraceMarkerChange::Write(s.with_state(state, io.now()));
        let settled = s.since.saturating_add_micros(s.settle_us);
        let waits = matches!(
            s.state,
            MigrationState::Switching | MigrationState::Cleaning | MigrationState::Aborting
        );
        let Some(verdict) = &self.verdict else {
            return Ok(match s.state {
                _ if waits && io.now() < settled => Next::Settle(settled),
                MigrationState::Copying => Next::Pass(TilePassKind::Copy),
                MigrationState::Verifying | MigrationState::Switching => {
                    Next::Pass(TilePassKind::Verify)
                }
                MigrationState::Switched | MigrationState::Cleaning => {
                    Next::Pass(TilePassKind::Sweep)
                }
                MigrationState::Aborting => Next::Delete(Side::Target),
            });
        };
        let clean = verdict.from_start && verdict.diffs == 0;
        Ok(match s.state {
            MigrationState::Copying => Next::Write(Side::Source, change(MigrationState::Verifying)),
            MigrationState::Verifying if !clean => Next::Pass(TilePassKind::Verify),
            // §5.5, §8: `gold check` on the target after a clean verification.
            MigrationState::Verifying if !verdict.checked => Next::Check(Side::Target),
            MigrationState::Verifying if gates.switch => {
                Next::Write(Side::Source, change(MigrationState::Switching))
            }
            MigrationState::Switching if !clean => Next::Pass(TilePassKind::Verify),
            // The switch (§5.5): the target's marker first.
            MigrationState::Switching => Next::Write(
                Side::Target,
                TraceMarkerChange::Write(
                    as_target(&s).with_state(MigrationState::Switched, io.now()),
                ),
            ),
            MigrationState::Switched if gates.finish => {
                Next::Write(Side::Source, change(MigrationState::Cleaning))
            }
            // A conflict is left in the source for the operator: nothing of it is deleted.
            MigrationState::Cleaning if verdict.conflicts > 0 => {
                Next::End(Ok(TraceMigrateEnd::InState(MigrationState::Cleaning)))
            }
            // After the last sweep of `cleaning`: the source's Gold rows.
            MigrationState::Cleaning => Next::Delete(Side::Source),
            state => Next::End(Ok(TraceMigrateEnd::InState(state))),
        })
    }

    /// The pass of `kind` in the source marker's state: a Copy pass resumed from the
    /// checkpoint when it names this run and state (once), else from the beginning with the
    /// next pass number (§12.20).
    fn start_pass(
        &mut self,
        now: Timestamp,
        kind: TilePassKind,
    ) -> Result<RunPhase, TraceStoreError> {
        let marker = self
            .source
            .marker
            .clone()
            .ok_or_else(|| TraceStoreError::Internal("a pass without a marker".into()))?;
        let resumed = self.resume.take().filter(|c| {
            kind == TilePassKind::Copy && c.run == marker.run && c.state == marker.state
        });
        let (checkpoint, from_start) = match resumed {
            Some(c) => {
                let from_start = c.cursor.is_none();
                let owner = self.options.owner.clone();
                (MigrationCheckpoint { owner, ..c }, from_start)
            }
            None => {
                let checkpoint = MigrationCheckpoint::next_pass(
                    self.source.checkpoint.as_ref(),
                    marker.run,
                    marker.state,
                    &self.options.owner,
                    now,
                );
                (checkpoint, true)
            }
        };
        let resume = TilePassResume {
            as_read: self.source.clone(),
            checkpoint,
            take_over: self.options.take_over,
        };
        let options = marker.options.unwrap_or(OptionsPolicy::Refuse);
        let pass = TilePassFlow::new(kind, options, resume)?;
        Ok(RunPhase::Pass {
            pass: Box::new(pass),
            from_start,
        })
    }

    /// A read of the next page of `side`'s rows after `after` (its marker row left out):
    /// the newest cell of each column, values stripped (the keys and timestamps are what the
    /// deletes need).
    fn scan_read(
        io: &mut Io<TraceStoreEvent>,
        pair: &mut TablePair,
        side: Side,
        after: Option<Vec<u8>>,
    ) -> RunPhase {
        let marker_row = migration_row_name();
        let start = after.map_or(KeyBound::Unbounded, KeyBound::Open);
        let past_marker = match &start {
            KeyBound::Open(k) if *k > marker_row => start.clone(),
            _ => KeyBound::Open(marker_row.clone()),
        };
        let ranges = [
            RowRange {
                start,
                end: KeyBound::Open(marker_row),
            },
            RowRange {
                start: past_marker,
                end: KeyBound::Unbounded,
            },
        ];
        let rows = RowSet {
            row_keys: Vec::new(),
            row_ranges: ranges.into_iter().filter(|r| !r.is_empty()).collect(),
        };
        let filter = RowFilter::Chain(alloc::vec![
            RowFilter::CellsPerColumnLimit(1),
            RowFilter::StripValue
        ]);
        let read = io.read_rows(read_request(pair.side(side), rows, filter, SCAN_PAGE_ROWS));
        RunPhase::ScanRead(side, read)
    }

    /// The deletes of a page of `side`'s rows: the rollback's `DeleteFromRow`s (target), or
    /// the clean-up's conditional ones (source, §5.8): `CheckAndMutateRow(row,
    /// Chain(Family(T|P|O|D|I), TimestampRange(newest ts read + 1000, ∞)), true: [], false:
    /// [DeleteFromRow])` — deleted only if no cell newer than those read arrived.
    fn delete_page(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        pair: &TablePair,
        side: Side,
        rows: &[Row],
    ) -> RunPhase {
        let last = rows.last().map(|r| r.key.clone()).unwrap_or_default();
        if side == Side::Target {
            self.outcome.target_rows_deleted += rows.len() as u64;
            let entries = rows
                .iter()
                .map(|r| MutateRowsEntry {
                    row_key: r.key.clone(),
                    mutations: alloc::vec![Mutation::DeleteFromRow],
                })
                .collect();
            return RunPhase::ClearDelete(WriteChunks::start(io, &pair.target, entries), last);
        }
        let ids = rows
            .iter()
            .map(|r| {
                let newest = r.cells.iter().map(|c| c.timestamp.0).max().unwrap_or(0);
                let newer = RowFilter::Chain(alloc::vec![
                    RowFilter::FamilyNameRegex(GOLD_FAMILIES.into()),
                    RowFilter::TimestampRange(TimestampRange {
                        start: newest.saturating_add(1000),
                        end: 0,
                    }),
                ]);
                let _ = io.next_seed();
                io.unary(Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                    table: pair.source.table.clone(),
                    app_profile_id: pair.source.app_profile_id.clone(),
                    row_key: r.key.clone(),
                    predicate: Some(newer),
                    true_mutations: Vec::new(),
                    false_mutations: alloc::vec![Mutation::DeleteFromRow],
                }))
            })
            .collect();
        RunPhase::CleanDelete(WaitAll::new(ids), last)
    }

    /// The phase that carries out `next`, or the run's output when it ends.
    fn carry_out(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        pair: &mut TablePair,
        next: Next,
    ) -> Result<Result<RunPhase, TraceMigrateOutcome>, TraceStoreError> {
        Ok(Ok(match next {
            Next::Write(side, change) => {
                let as_read = match side {
                    Side::Source => &self.source,
                    Side::Target => &self.target,
                };
                let from = as_read.marker.as_ref().map(|m| m.state);
                let write = WriteMarkerStep::new(
                    &marker_place(),
                    as_read,
                    change,
                    self.options.gates,
                    |_| Vec::new(),
                )?;
                RunPhase::Marker(Box::new(MarkerWrite { side, write, from }))
            }
            Next::Settle(until) => RunPhase::Settle(until),
            Next::Pass(kind) => self.start_pass(io.now(), kind)?,
            Next::Delete(side) => Self::scan_read(io, pair, side, None),
            Next::Check(side) => RunPhase::Check(Box::new(TableCheck {
                nested: Self::start_check(io, pair.side(side)),
                side,
                target_findings: None,
            })),
            Next::End(end @ (Ok(TraceMigrateEnd::InState(_)) | Err(_))) if !self.released => {
                self.released = true;
                match WriteCheckpointStep::release(
                    &marker_place(),
                    &self.source,
                    &self.options.owner,
                    io.now(),
                )? {
                    Some(write) => RunPhase::Release {
                        write: Box::new(write),
                        end,
                    },
                    None => return self.carry_out(io, pair, Next::End(end)),
                }
            }
            Next::End(end) => {
                self.outcome.end = end?;
                return Ok(Err(self.outcome.clone()));
            }
        }))
    }
}

impl Flow for MigrateTraceStoreFlow {
    type Schema = TraceMigrationSchema;
    type Output = TraceMigrateOutcome;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        pair: &mut TablePair,
    ) -> Progress<TraceMigrateOutcome, TraceMigrationSchema> {
        loop {
            let next = match core::mem::replace(&mut self.phase, RunPhase::Done) {
                RunPhase::ReadSource(mut read) => {
                    let row = ready!(read.poll::<_, TraceStoreError>(io, &marker_table(&pair.source)),
                        self.phase => RunPhase::ReadSource(read));
                    self.source = TraceMigrationRead::from_row(row.as_ref())?;
                    self.phase = RunPhase::ReadTarget(ReadMarkerStep::new(&marker_place()));
                    continue;
                }
                RunPhase::ReadTarget(mut read) => {
                    let row = ready!(read.poll::<_, TraceStoreError>(io, &marker_table(&pair.target)),
                        self.phase => RunPhase::ReadTarget(read));
                    self.target = TraceMigrationRead::from_row(row.as_ref())?;
                    self.first(io, pair)?
                }
                RunPhase::Marker(mut m) => {
                    let table = marker_table(pair.side(m.side));
                    let written =
                        ready!(m.write.poll(io, &table), self.phase => RunPhase::Marker(m));
                    let to = written.marker.as_ref().map(|w| w.state);
                    if let Some(w) = &written.marker {
                        self.outcome.run = Some(w.run);
                    }
                    match m.side {
                        Side::Source => {
                            if to != m.from {
                                self.verdict = None;
                                self.resume = None;
                                io.emit(TraceStoreEvent::Migrate(
                                    TraceMigrateEvent::StateChanged { from: m.from, to },
                                ));
                            }
                            self.source = written;
                        }
                        Side::Target => self.target = written,
                    }
                    self.next(io)?
                }
                RunPhase::Settle(until) => {
                    if io.now() < until {
                        if !io.sleeping() {
                            io.sleep_until(until);
                        }
                        self.phase = RunPhase::Settle(until);
                        return Ok(None);
                    }
                    io.cancel_sleep();
                    self.next(io)?
                }
                RunPhase::Pass {
                    mut pass,
                    from_start,
                } => {
                    let done = ready!(pass.advance(io, pair),
                        self.phase => RunPhase::Pass { pass, from_start });
                    self.source = done.migration;
                    self.verdict = Some(Verdict {
                        from_start,
                        diffs: done.summary.diffs,
                        conflicts: done.summary.counters.conflicts,
                        checked: false,
                    });
                    self.outcome.passes.push(done.summary);
                    self.next(io)?
                }
                RunPhase::Check(mut check) => {
                    let Some(result) = check.nested.advance(io) else {
                        self.phase = RunPhase::Check(check);
                        return Ok(None);
                    };
                    let table = &pair.side(check.side).table;
                    let found = result.map_err(|e| match e {
                        CheckError::Aborted => TraceStoreError::Aborted,
                        CheckError::Store(e) => TraceStoreError::store(e),
                        other => TraceStoreError::Internal(alloc::format!(
                            "the check of {table}: {other}"
                        )),
                    })?;
                    match check.target_findings.take() {
                        // Findings in the target: check the source too, to tell its own.
                        None if !found.is_empty() => {
                            check.target_findings = Some(found);
                            check.nested = Self::start_check(io, &pair.source);
                            check.side = Side::Source;
                            self.phase = RunPhase::Check(check);
                            continue;
                        }
                        target => {
                            let (target, source) = match target {
                                Some(target) => (target, found),
                                None => (found, Vec::new()),
                            };
                            let judged = Self::judge_check(&target, &source);
                            for finding in &judged {
                                io.emit(TraceStoreEvent::Migrate(TraceMigrateEvent::Finding(
                                    finding.clone(),
                                )));
                            }
                            let own = |f: &PassFinding| {
                                matches!(
                                    f,
                                    PassFinding::Check {
                                        source_own: true,
                                        ..
                                    }
                                )
                            };
                            if judged.iter().any(|f| !own(f)) {
                                Next::End(Err(TraceStoreError::MigrationBlocked {
                                    findings: judged,
                                }))
                            } else {
                                self.outcome.findings.extend(judged);
                                if let Some(verdict) = &mut self.verdict {
                                    verdict.checked = true;
                                }
                                self.next(io)?
                            }
                        }
                    }
                }
                RunPhase::ScanRead(side, read) => {
                    let rows = ready!(io.rows(read), self.phase => RunPhase::ScanRead(side, read));
                    #[cfg(feature = "_planted_bugs")]
                    let rows = if side == Side::Target
                        && pair.source.planted
                            == Some(crate::planted::PlantedBug::TraceMigrateAbortKeepsTarget)
                    {
                        Vec::new()
                    } else {
                        rows
                    };
                    if rows.is_empty() {
                        self.deleted = true;
                        self.next(io)?
                    } else {
                        self.phase = self.delete_page(io, pair, side, &rows);
                        continue;
                    }
                }
                RunPhase::ClearDelete(mut write, last) => {
                    ready!(write.advance(io, &mut pair.target),
                        self.phase => RunPhase::ClearDelete(write, last));
                    self.phase = Self::scan_read(io, pair, Side::Target, Some(last));
                    continue;
                }
                RunPhase::CleanDelete(mut deletes, last) => {
                    let Some(outcomes) = deletes.poll(io) else {
                        self.phase = RunPhase::CleanDelete(deletes, last);
                        return Ok(None);
                    };
                    for outcome in outcomes {
                        match outcome.map_err(TraceStoreError::store)? {
                            ChildOutput::Unary(Response::CheckAndMutateRow {
                                predicate_matched: false,
                            }) => self.outcome.source_rows_deleted += 1,
                            // A newer cell arrived: left for the next run's sweep.
                            ChildOutput::Unary(Response::CheckAndMutateRow { .. }) => {
                                self.outcome.source_rows_left += 1;
                            }
                            other => return Err(TraceStoreError::unexpected(&other)),
                        }
                    }
                    self.phase = Self::scan_read(io, pair, Side::Source, Some(last));
                    continue;
                }
                RunPhase::Release { mut write, end } => {
                    self.source = ready!(write.poll(io, &marker_table(&pair.source)),
                        self.phase => RunPhase::Release { write, end });
                    Next::End(end)
                }
                RunPhase::Done => return Ok(None),
            };
            match self.carry_out(io, pair, next)? {
                Ok(phase) => self.phase = phase,
                Err(outcome) => return Ok(Some(outcome)),
            }
        }
    }
}
