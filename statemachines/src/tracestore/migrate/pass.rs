//! `TilePass` — one pass of the trace store's migration over the source's tiles
//! (`docs/migration.md` §5.4, §5.5, §7.1, §7.3): tiles newest first (the source's
//! `NewestTile`, then downwards to tile index 0), one step per tile, the checkpoint after each
//! tile (its `cursor` is the tile's OPS row key), then a progress event.
//!
//! - [`TilePassKind::Copy`] (`copying`, §5.4): [`CopyTile`](super::copy_tile::CopyTile) of
//!   every tile.
//! - [`TilePassKind::Verify`] (`verifying`, and the final pass of `switching`, §5.5): the tile
//!   of both tables as their points (the reader of `ReadRange`, keeping timestamps), compared
//!   — params, digests and the raw `ts` of every source point; a tile with a difference (a
//!   source point the target neither holds nor supersedes with a newer cell, §12.76) is
//!   copied again (`CopyTile`) and counted in `diffs`. A pass is clean when `diffs` is 0.
//!
//! - [`TilePassKind::Sweep`] (`switched`, §5.6): both tables compared; a source point the
//!   target lacks — a Gold writer still on `T1`, a straggler — is written with the strict
//!   `CheckAndMutateRow(T2 row, Chain(Family(T), Column(q), TimestampRange(ts, ∞)), true: [],
//!   false: [the point's cells])`: only if `T2` has no cell of that column at `ts` or later
//!   (`T2` is the truth and may hold newer native writes). Each adopted point is a
//!   [`TraceMigrateEvent::Straggler`]; a source point whose `ts` the target holds with another
//!   digest is a [`TraceMigrateEvent::Conflict`], left in `T1`; a target point newer than the
//!   source's supersedes it.
//!
//! Points only the target holds (written into `T2` alone) are not differences: the copy writes
//! the source's points and cannot remove them, and before the switch nothing writes `T2` but
//! the copies and the aware writers' mirrors of the source's Puts.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::migration::{MigrationCheckpoint, OptionsPolicy, PassCounters};
use rowkit_codec::model::{RowFilter, Timestamp, TimestampRange};
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::cells::FAMILY_TRACE;
use rowkit_codec::tracestore::keys::{
    ops_row_name, parse_ops_row_tile_key, tile_index_of_key, tile_key,
};

use super::super::assign::AssignDigestIdsFlow;
use super::super::newest_tile::NewestTileFlow;
use super::super::put::{PointValue, point_mutations, trace_qualifier};
use super::super::update_ops::UpdateOps;
use super::super::{TraceStoreError, TraceStoreEvent};
use super::copy_tile::{
    CopyTileFlow, ReadTilePoints, RowPoints, TilePoints, options_dropped, row_digests,
    target_ops_update, target_rows,
};
use super::marker::{TraceMigrationRead, WriteTableCheckpointFlow};
use super::{TablePair, TraceMigrateEvent, TraceMigrationSchema};
use crate::children::ChildOutput;
use crate::migration::pass_progress;
use crate::operation::{ContextArg, Flow, Io, Operation, OperationError, Progress, Start, WaitAll};
use crate::{CheckAndMutateRowRequest, Request, Response, RetryPolicy, ready};

/// Which pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TilePassKind {
    /// The copy pass of `copying` (§5.4): every tile copied.
    Copy,
    /// The verification of `verifying` and the final pass of `switching` (§5.5): both tables
    /// compared, differences copied.
    Verify,
    /// The sweep of `switched` (§5.6): stragglers adopted with the strict write, conflicts
    /// reported.
    Sweep,
}

/// Where a pass starts and as whom it writes its checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TilePassResume {
    /// The source's marker row as last read or written: the predicate of the first
    /// checkpoint CAS.
    pub as_read: TraceMigrationRead,
    /// The checkpoint to continue from: its `cursor` (the OPS row key of the last tile done;
    /// `None`: from the newest tile), `pass` and counters so far; `run`, `state`, `owner`,
    /// `started` and `pass_rows_previous` are kept in every checkpoint the pass writes.
    pub checkpoint: MigrationCheckpoint,
    /// `--take-over`: write the checkpoint even when another owner's lease holds (§7.1).
    pub take_over: bool,
}

/// What a pass did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TilePassSummary {
    /// The kind of pass.
    pub kind: TilePassKind,
    /// Its number (the checkpoint's).
    pub pass: u64,
    /// Its counters, resumed ones included: `rows_scanned` trace rows read (both tables in a
    /// verification), `copied` points written, `unchanged` points found equal.
    pub counters: PassCounters,
    /// Points of the source the target did not hold with the same digest and `ts` (this run
    /// only): a verification is clean when it is 0.
    pub diffs: u64,
    /// Tiles done (this run only).
    pub tiles: u64,
    /// Source trace rows skipped: their subkey does not decode with the source OPS (this run).
    pub skipped_rows: u64,
    /// Options rows left behind under `--options drop` (this run).
    pub options_rows_dropped: u64,
    /// The cursor of the last checkpoint written.
    pub cursor: Option<Vec<u8>>,
}

/// A pass's output: its summary and the source's marker row as the last checkpoint left it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TilePassResult {
    /// What the pass did.
    pub summary: TilePassSummary,
    /// The source's marker row as last written: the caller's next "as last read".
    pub migration: TraceMigrationRead,
}

/// `TilePass(kind, options, resume)`: one pass over the source's tiles.
pub type TilePass<'a> = Operation<'a, TilePassFlow>;

impl<'a> TilePass<'a> {
    /// A pass of `kind` over `pair` from `resume`, with `options` for the source's options
    /// rows (§5.7), as `start` says.
    pub fn new(
        pair: impl Into<ContextArg<'a, TablePair>>,
        kind: TilePassKind,
        options: OptionsPolicy,
        resume: TilePassResume,
        start: Start,
    ) -> TilePass<'a> {
        let pair = pair.into();
        match TilePassFlow::new(kind, options, resume) {
            Ok(flow) => Operation::begin(pair, start, RetryPolicy::default(), flow),
            Err(e) => Operation::failed(pair, e),
        }
    }
}

/// The step of one tile.
#[derive(Debug)]
enum TileStep {
    /// `CopyTile`.
    Copy(CopyTileFlow),
    /// Verification: the source's points being read.
    ReadSource(ReadTilePoints),
    /// Verification and sweep: the target's points being read.
    ReadTarget(TilePoints, ReadTilePoints),
    /// Sweep: the target's OPS given the source's params (the stragglers' traces may be new).
    SweepOps(TilePoints, UpdateOps),
    /// Sweep, digest-id target: the stragglers' digests get their ids.
    SweepAssign(Vec<RowPoints>, AssignDigestIdsFlow),
    /// Sweep: the strict writes are out, one per straggler point.
    SweepWrite(Vec<Straggler>, WaitAll),
    /// The tile's checkpoint is out.
    Checkpoint(WriteTableCheckpointFlow),
}

/// A straggler point whose strict write is out.
#[derive(Debug)]
struct Straggler {
    trace: String,
    commit: u32,
    ts: Timestamp,
}

/// Where a pass stands.
#[derive(Debug)]
enum Phase {
    /// Nothing sent yet.
    Start,
    /// The source's newest tile is being found.
    Newest(NewestTileFlow),
    /// Tile `tile_key`'s step (boxed: a tile's reads are large beside the other phases).
    Tile(i32, Box<TileStep>),
    /// A resumed pass whose cursor is the last tile (index 0): nothing left.
    Finished,
    /// Ended (a flow that ended is never advanced again).
    Done,
}

/// The flow of [`TilePass`].
#[derive(Debug)]
pub struct TilePassFlow {
    kind: TilePassKind,
    options: OptionsPolicy,
    as_read: TraceMigrationRead,
    checkpoint: MigrationCheckpoint,
    take_over: bool,
    summary: TilePassSummary,
    rows_this_run: u64,
    began: Option<Timestamp>,
    phase: Phase,
}

impl TilePassFlow {
    /// The flow of [`TilePass::new`], for the migrator; a cursor that is no OPS row key is
    /// refused.
    pub(crate) fn new(
        kind: TilePassKind,
        options: OptionsPolicy,
        resume: TilePassResume,
    ) -> Result<TilePassFlow, TraceStoreError> {
        let cursor = resume.checkpoint.cursor.clone();
        let done = cursor.as_deref().map(parse_ops_row_tile_key).transpose()?;
        let mut flow = TilePassFlow {
            kind,
            options,
            as_read: resume.as_read,
            summary: TilePassSummary {
                kind,
                pass: resume.checkpoint.pass,
                counters: resume.checkpoint.counters,
                diffs: 0,
                tiles: 0,
                skipped_rows: 0,
                options_rows_dropped: 0,
                cursor,
            },
            checkpoint: resume.checkpoint,
            take_over: resume.take_over,
            rows_this_run: 0,
            began: None,
            phase: Phase::Start,
        };
        // Tiles go downwards: the one after the cursor's has the next tile key.
        flow.phase = match done {
            None => Phase::Start,
            Some(i32::MAX) => Phase::Finished,
            Some(tk) => Phase::Tile(tk + 1, Box::new(flow.first_step(tk + 1))),
        };
        Ok(flow)
    }

    /// The first step of tile `tk`.
    fn first_step(&self, tk: i32) -> TileStep {
        match self.kind {
            TilePassKind::Copy => TileStep::Copy(CopyTileFlow::new(tk, self.options)),
            TilePassKind::Verify | TilePassKind::Sweep => {
                TileStep::ReadSource(ReadTilePoints::new(tk))
            }
        }
    }

    /// Sweep: the source points of tile `tk` the target neither holds nor supersedes (the
    /// stragglers), the conflicts reported and counted on the way.
    fn stragglers(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        tk: i32,
        source: &TilePoints,
        target: &TilePoints,
    ) -> TilePoints {
        let mut adopt = source.unsettled_in(target);
        let first_commit = tile_index_of_key(tk).unwrap_or(0).saturating_mul(256);
        for (id, trace) in &mut adopt.traces {
            let theirs = target.traces.get(id);
            trace.points.retain(|offset, (_, ts)| {
                // Unsettled and at the same `ts`: another digest there.
                let conflict = theirs
                    .and_then(|t| t.points.get(offset))
                    .is_some_and(|(_, their_ts)| their_ts == ts);
                if conflict {
                    self.summary.counters.conflicts += 1;
                    io.emit(TraceStoreEvent::Migrate(TraceMigrateEvent::Conflict {
                        trace: id.clone(),
                        commit: first_commit + offset,
                        ts: *ts,
                    }));
                }
                !conflict
            });
        }
        adopt.traces.retain(|_, t| !t.points.is_empty());
        adopt
    }

    /// Sweep: the strict write of every point of `rows` (§5.6), values from `value`.
    fn send_strict_writes<'d>(
        &self,
        io: &mut Io<TraceStoreEvent>,
        pair: &TablePair,
        tk: i32,
        rows: &'d [RowPoints],
        mut value: impl FnMut(&'d str) -> PointValue<'d>,
    ) -> TileStep {
        let layout = pair.target.layout;
        let first_commit = tile_index_of_key(tk).unwrap_or(0).saturating_mul(256);
        let mut ids = Vec::new();
        let mut stragglers = Vec::new();
        for (row_key, trace, points) in rows {
            for (offset, (digest, ts)) in points {
                let qualifier = trace_qualifier(layout, *offset);
                let newer_or_equal = RowFilter::Chain(alloc::vec![
                    RowFilter::FamilyNameRegex(FAMILY_TRACE.into()),
                    RowFilter::ColumnQualifierRegex(qualifier.clone()),
                    RowFilter::TimestampRange(TimestampRange {
                        start: ts.truncate_to_millis().0,
                        end: 0,
                    }),
                ]);
                let _ = io.next_seed();
                ids.push(
                    io.unary(Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                        table: pair.target.table.clone(),
                        app_profile_id: pair.target.app_profile_id.clone(),
                        row_key: row_key.clone(),
                        predicate: Some(newer_or_equal),
                        true_mutations: Vec::new(),
                        false_mutations: point_mutations(&qualifier, *ts, value(digest)),
                    })),
                );
                stragglers.push(Straggler {
                    trace: trace.clone(),
                    commit: first_commit + offset,
                    ts: *ts,
                });
            }
        }
        TileStep::SweepWrite(stragglers, WaitAll::new(ids))
    }

    fn scanned(&mut self, rows: u64) {
        self.summary.counters.rows_scanned += rows;
        self.rows_this_run += rows;
    }

    /// The checkpoint after tile `tk` (§7.1).
    fn checkpoint_step(
        &mut self,
        io: &Io<TraceStoreEvent>,
        tk: i32,
    ) -> Result<TileStep, TraceStoreError> {
        self.checkpoint.cursor = Some(ops_row_name(tk));
        self.checkpoint.counters = self.summary.counters;
        let write = WriteTableCheckpointFlow::new(
            &self.as_read,
            self.checkpoint.clone(),
            self.take_over,
            io.now(),
        )?;
        Ok(TileStep::Checkpoint(write))
    }

    fn result(&mut self) -> TilePassResult {
        TilePassResult {
            summary: self.summary.clone(),
            migration: self.as_read.clone(),
        }
    }
}

impl Flow for TilePassFlow {
    type Schema = TraceMigrationSchema;
    type Output = TilePassResult;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        pair: &mut TablePair,
    ) -> Progress<TilePassResult, TraceMigrationSchema> {
        if self.began.is_none() {
            self.began = Some(io.now());
        }
        loop {
            let (tk, step) = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Start => {
                    self.phase = Phase::Newest(NewestTileFlow::new());
                    continue;
                }
                Phase::Newest(mut newest) => {
                    let index = ready!(newest.advance(io, &mut pair.source),
                        self.phase => Phase::Newest(newest));
                    // An empty source: nothing to copy or compare.
                    let Some(i) = index else {
                        return Ok(Some(self.result()));
                    };
                    let tk = tile_key(i64::from(i));
                    self.phase = Phase::Tile(tk, Box::new(self.first_step(tk)));
                    continue;
                }
                Phase::Tile(tk, step) => (tk, *step),
                Phase::Finished => return Ok(Some(self.result())),
                Phase::Done => return Ok(None),
            };
            let back = |step| Phase::Tile(tk, Box::new(step));
            let next = match step {
                TileStep::Copy(mut copy) => {
                    let s = ready!(copy.advance(io, pair),
                        self.phase => back(TileStep::Copy(copy)));
                    self.scanned(s.rows_scanned);
                    self.summary.counters.copied += s.copied;
                    self.summary.skipped_rows += s.skipped_rows;
                    self.summary.options_rows_dropped += s.options_rows_dropped;
                    self.checkpoint_step(io, tk)?
                }
                TileStep::ReadSource(mut read) => {
                    let source = ready!(read.advance(io, &mut pair.source),
                        self.phase => back(TileStep::ReadSource(read)));
                    // Refused options stop the verification too, before anything is copied.
                    options_dropped(pair.target.layout, self.options, tk, &source)?;
                    TileStep::ReadTarget(source, ReadTilePoints::new(tk))
                }
                TileStep::ReadTarget(source, mut read) => {
                    let target = ready!(read.advance(io, &mut pair.target),
                        self.phase => back(TileStep::ReadTarget(source, read)));
                    self.scanned(source.rows + target.rows);
                    if self.kind == TilePassKind::Sweep {
                        let conflicts = self.summary.counters.conflicts;
                        let adopt = self.stragglers(io, tk, &source, &target);
                        let conflicts = self.summary.counters.conflicts - conflicts;
                        // Equal points, and those a newer target point supersedes.
                        self.summary.counters.unchanged +=
                            source.point_count() - adopt.point_count() - conflicts;
                        if adopt.traces.is_empty() {
                            self.checkpoint_step(io, tk)?
                        } else {
                            TileStep::SweepOps(adopt, target_ops_update(tk, &source))
                        }
                    } else {
                        // A target point newer than the source's is no difference: the
                        // copy (source `ts`) could not change what reads return (§12.76).
                        let diffs = source.unsettled_in(&target).point_count();
                        self.summary.counters.unchanged += source.point_count() - diffs;
                        if diffs > 0 {
                            self.summary.diffs += diffs;
                            TileStep::Copy(CopyTileFlow::new(tk, self.options))
                        } else {
                            self.summary.skipped_rows += source.skipped_rows;
                            self.summary.options_rows_dropped += source.options_rows;
                            self.checkpoint_step(io, tk)?
                        }
                    }
                }
                TileStep::SweepOps(adopt, mut update) => {
                    let ops = ready!(update.advance(io, &mut pair.target),
                        self.phase => back(TileStep::SweepOps(adopt, update)));
                    let rows = target_rows(tk, &ops, adopt)?;
                    match pair.target.layout {
                        Layout::Md5 => {
                            self.send_strict_writes(io, pair, tk, &rows, PointValue::Md5)
                        }
                        Layout::DigestId => {
                            let assign = AssignDigestIdsFlow::new(row_digests(&rows));
                            TileStep::SweepAssign(rows, assign)
                        }
                    }
                }
                TileStep::SweepAssign(rows, mut assign) => {
                    let ids = ready!(assign.advance(io, &mut pair.target),
                        self.phase => back(TileStep::SweepAssign(rows, assign)));
                    let mut ids = ids.into_iter();
                    self.send_strict_writes(io, pair, tk, &rows, |_| {
                        PointValue::Id(ids.next().unwrap_or(0))
                    })
                }
                TileStep::SweepWrite(stragglers, mut writes) => {
                    let Some(outcomes) = writes.poll(io) else {
                        self.phase = back(TileStep::SweepWrite(stragglers, writes));
                        return Ok(None);
                    };
                    for (outcome, s) in outcomes.into_iter().zip(stragglers) {
                        match outcome.map_err(TraceStoreError::store)? {
                            // Not matched: no target cell at `ts` or later, the point written.
                            ChildOutput::Unary(Response::CheckAndMutateRow {
                                predicate_matched: false,
                            }) => {
                                self.summary.counters.stragglers += 1;
                                io.emit(TraceStoreEvent::Migrate(TraceMigrateEvent::Straggler {
                                    trace: s.trace,
                                    commit: s.commit,
                                    ts: s.ts,
                                }));
                            }
                            // A newer native write arrived meanwhile: it wins.
                            ChildOutput::Unary(Response::CheckAndMutateRow { .. }) => {
                                self.summary.counters.unchanged += 1;
                            }
                            other => return Err(TraceStoreError::unexpected(&other)),
                        }
                    }
                    self.checkpoint_step(io, tk)?
                }
                TileStep::Checkpoint(mut write) => {
                    self.as_read = ready!(write.advance(io, &mut pair.source),
                        self.phase => back(TileStep::Checkpoint(write)));
                    self.summary.tiles += 1;
                    self.summary.cursor = self.checkpoint.cursor.clone();
                    let progress =
                        pass_progress(&self.checkpoint, self.rows_this_run, self.began, io.now());
                    io.emit(TraceStoreEvent::Migrate(TraceMigrateEvent::Progress(
                        progress,
                    )));
                    if tk == i32::MAX {
                        return Ok(Some(self.result()));
                    }
                    self.phase = Phase::Tile(tk + 1, Box::new(self.first_step(tk + 1)));
                    continue;
                }
            };
            self.phase = Phase::Tile(tk, Box::new(next));
        }
    }
}
