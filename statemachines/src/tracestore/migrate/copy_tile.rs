//! `CopyTile(tile)` — the one sync step of the trace store's migration (`docs/migration.md`
//! §5.3), and the points of a tile both tables are compared by (§5.2, §5.5).
//!
//! 1. **Source**: the tile as `ReadRange` reads it — the same reader ([`LoadTile`]: the OPS
//!    row, the 32 trace scans, the md5 layout's 32 options scans), keeping each point's cell
//!    timestamp ([`TileForm::Points`]); ids resolved through the source's digest map (one full
//!    map read on a cache miss, as `ReadRange` does); trace rows whose subkey the source OPS
//!    does not decode are skipped and counted, as readers skip them.
//! 2. **Target OPS**: `UpdateOps(target, tile, ps)` with the source OPS's params, new keys in
//!    the source's KeyOrder and values in source order, so that a target OPS that is a copy so
//!    far gets the same indices; subkeys are re-encoded with the target OPS, never copied.
//! 3. **Digest-id target**: `AssignDigestIds` of the points' digests (its own conditional
//!    inserts).
//! 4. **Writes**: one `MutateRows` entry per target trace row, the points' cells built as a Put
//!    builds them (`SetCell(T, q, ts, value)` with the target qualifier and **the source
//!    timestamp**; digest-id plus `DeleteFromColumn(T, q, [0, ts − 1000))`), in Put's chunks.
//! 5. **Post-check**: the source tile read again (step 1's requests); the points whose
//!    `(digest, ts)` differ from what step 4 wrote (a write at the same millisecond, a newer
//!    write, a trace whose params the OPS lacked) are copied again (back to step 2 for those
//!    traces); done when a re-read matches, or after [`MAX_WRITE_ROUNDS`] writes: a tile that
//!    Gold writers write faster than it is read would otherwise never be done, and what is
//!    left is the next pass's (the verification compares digests and `ts`, `docs/migration.md`
//!    §5.5, §12.71).
//!
//! Options (md5 → digest-id, §5.7): `--options refuse` stops at a tile holding options rows
//! ([`TraceStoreError::MigrationOptions`], before any write of that tile); `--options drop`
//! leaves them and counts them. digest-id → md5 has no options to lose.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::migration::OptionsPolicy;
use rowkit_codec::model::Timestamp;
use rowkit_codec::model::limits::MAX_ROW_KEY_BYTES;
use rowkit_codec::tracestore::keys::trace_row_name;
use rowkit_codec::tracestore::ops::trace_id_text;
use rowkit_codec::tracestore::{Layout, OrderedParamSet, Params};

use super::super::assign::AssignDigestIdsFlow;
use super::super::digest_map::ReadFullMap;
use super::super::put::{PointValue, WriteChunks, point_mutations, trace_qualifier};
use super::super::tile::{LoadTile, RawTile, TileForm};
use super::super::update_ops::UpdateOps;
use super::super::{TraceStoreError, TraceStoreEvent, TraceStoreSchema, TraceStoreState};
use super::{Side, TablePair, TraceMigrationSchema};
use crate::operation::{ContextArg, Flow, Io, Operation, Progress, Start};
use crate::{MutateRowsEntry, RetryPolicy, ready};

/// Most write rounds of one `CopyTile` (the first copy and the post-check's re-copies): enough
/// for the post-check's race (a write at the copied point's millisecond, §5.3) to be copied
/// again once or twice, few enough that Gold writers writing the tile without pause do not keep
/// the copy from ending (§12.71).
pub const MAX_WRITE_ROUNDS: u64 = 3;

/// A point's value and timestamp (§5.2): the digest (`""` = missing) and the cell's `ts`.
pub type PointValueTs = (String, Timestamp);

/// One trace of a tile as stored: its params and its points by offset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TracePoints {
    /// The trace's params (decoded with the table's OPS).
    pub params: Params,
    /// Offset in the tile → the point.
    pub points: BTreeMap<u32, PointValueTs>,
}

/// One tile of one table as its points (§5.2): what the copy writes and the verification
/// compares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TilePoints {
    /// Trace id text → the trace.
    pub traces: BTreeMap<String, TracePoints>,
    /// Trace rows read.
    pub rows: u64,
    /// Trace rows whose subkey the OPS does not decode (skipped, as readers skip them).
    pub skipped_rows: u64,
    /// Options rows read (md5 layout).
    pub options_rows: u64,
    /// The tile's OPS as read.
    ops: Arc<OrderedParamSet>,
}

impl TilePoints {
    /// Every point of the tile.
    pub fn point_count(&self) -> u64 {
        self.traces.values().map(|t| t.points.len() as u64).sum()
    }

    /// The points of `self` that `other` does not hold with the same digest and `ts`, by
    /// trace (traces without such a point left out).
    pub fn not_in(&self, other: &TilePoints) -> TilePoints {
        let mut out = TilePoints {
            ops: Arc::clone(&self.ops),
            ..TilePoints::default()
        };
        for (id, trace) in &self.traces {
            let theirs = other.traces.get(id);
            let points: BTreeMap<u32, PointValueTs> = trace
                .points
                .iter()
                .filter(|(offset, p)| theirs.and_then(|t| t.points.get(offset)) != Some(*p))
                .map(|(offset, p)| (*offset, p.clone()))
                .collect();
            if !points.is_empty() {
                out.traces.insert(
                    id.clone(),
                    TracePoints {
                        params: trace.params.clone(),
                        points,
                    },
                );
            }
        }
        out
    }

    /// The points of `self` that `other` neither holds (same digest and `ts`) nor supersedes
    /// (a newer cell at that offset, which every read of `other` returns instead): what a
    /// copy into `other` still has to write. The verification's differences, the sweep's
    /// stragglers and conflicts (§5.5, §5.6) and `check`'s `write_after_switch` (§6.3) are
    /// all these points; a point `other` holds at the same `ts` with another digest is one of
    /// them (a copy overwrites it, a sweep reports it).
    pub fn unsettled_in(&self, other: &TilePoints) -> TilePoints {
        let mut out = self.not_in(other);
        for (id, trace) in &mut out.traces {
            let theirs = other.traces.get(id);
            trace.points.retain(|offset, (_, ts)| {
                theirs
                    .and_then(|t| t.points.get(offset))
                    .is_none_or(|(_, their_ts)| their_ts <= ts)
            });
        }
        out.traces.retain(|_, t| !t.points.is_empty());
        out
    }

    /// The trace rows of `points` (points of this tile) as this table names them: its OPS
    /// encodes their params.
    pub(crate) fn rows_of(
        &self,
        tile_key: i32,
        points: TilePoints,
    ) -> Result<Vec<RowPoints>, TraceStoreError> {
        target_rows(tile_key, &self.ops, points)
    }

    /// Decodes a tile read in [`TileForm::Points`] on `state` (ids resolved by its cache).
    fn from_raw(state: &TraceStoreState, raw: RawTile) -> Result<TilePoints, TraceStoreError> {
        let mut out = TilePoints {
            rows: raw.points.len() as u64,
            options_rows: raw.options.len() as u64,
            ops: Arc::clone(&raw.ops),
            ..TilePoints::default()
        };
        for (subkey, points) in raw.points {
            // A trace written before its OPS was readable is skipped, as readers skip it.
            let Ok(params) = raw.ops.decode_params(&subkey) else {
                out.skipped_rows += 1;
                continue;
            };
            let mut by_offset = BTreeMap::new();
            for p in points {
                if let Some(id) = p.slot.unknown_id(&state.digests) {
                    return Err(TraceStoreError::UnknownDigestId(id));
                }
                by_offset.insert(p.offset, (p.slot.into_digest(&state.digests), p.ts));
            }
            let trace = out.traces.entry(trace_id_text(&params)).or_default();
            trace.params = params;
            trace.points.append(&mut by_offset);
        }
        Ok(out)
    }
}

/// The options rows of a source tile read that a copy into a `target` table leaves behind
/// (§5.7): none for an md5 target; for a digest-id target, `--options refuse` stops at them
/// ([`TraceStoreError::MigrationOptions`]), `--options drop` counts them.
pub(crate) fn options_dropped(
    target: Layout,
    options: OptionsPolicy,
    tile_key: i32,
    read: &TilePoints,
) -> Result<u64, TraceStoreError> {
    if target == Layout::Md5 || read.options_rows == 0 {
        return Ok(0);
    }
    match options {
        OptionsPolicy::Refuse => Err(TraceStoreError::MigrationOptions {
            tile_key,
            rows: read.options_rows,
        }),
        OptionsPolicy::Drop => Ok(read.options_rows),
    }
}

/// Whether a tile read holds an id its table's digest cache cannot resolve.
fn has_unknown_id(state: &TraceStoreState, raw: &RawTile) -> bool {
    raw.points
        .iter()
        .flat_map(|(_, points)| points)
        .any(|p| p.slot.unknown_id(&state.digests).is_some())
}

/// Where a [`ReadTilePoints`] stands.
#[derive(Debug)]
enum ReadPhase {
    Start,
    Load(LoadTile),
    /// Digest-id layout: an id was not cached, the full map is being read.
    Resolve {
        raw: RawTile,
        map: ReadFullMap,
    },
    Done,
}

/// The read of one tile of one table as its points: the tile reader of `ReadRange`
/// ([`LoadTile`]) keeping timestamps, ids resolved as `ReadRange` resolves them.
#[derive(Debug)]
pub(crate) struct ReadTilePoints {
    tile_key: i32,
    phase: ReadPhase,
}

impl ReadTilePoints {
    /// The read of tile `tile_key`; nothing is sent before the first advance.
    pub(crate) fn new(tile_key: i32) -> ReadTilePoints {
        ReadTilePoints {
            tile_key,
            phase: ReadPhase::Start,
        }
    }
}

impl Flow for ReadTilePoints {
    type Schema = TraceStoreSchema;
    type Output = TilePoints;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<TilePoints, TraceStoreSchema> {
        loop {
            self.phase = match core::mem::replace(&mut self.phase, ReadPhase::Done) {
                ReadPhase::Start => ReadPhase::Load(LoadTile::start_as(
                    io,
                    state,
                    self.tile_key,
                    TileForm::Points,
                )),
                ReadPhase::Load(mut load) => {
                    let raw = ready!(load.advance(io, state), self.phase => ReadPhase::Load(load));
                    if !has_unknown_id(state, &raw) {
                        return TilePoints::from_raw(state, raw).map(Some);
                    }
                    let map = ReadFullMap::start(io, state);
                    ReadPhase::Resolve { raw, map }
                }
                ReadPhase::Resolve { raw, mut map } => {
                    ready!(map.advance(io, state), self.phase => ReadPhase::Resolve { raw, map });
                    return TilePoints::from_raw(state, raw).map(Some);
                }
                ReadPhase::Done => return Ok(None),
            }
        }
    }
}

/// What a [`CopyTile`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyTileSummary {
    /// Trace rows read from the source, every read (the post-checks included).
    pub rows_scanned: u64,
    /// Points of the tile at the first read.
    pub points: u64,
    /// Points written into the target, every round.
    pub copied: u64,
    /// Write rounds (0: nothing to copy; more than 1: the post-check found changes).
    pub rounds: u64,
    /// Source trace rows skipped (their subkey does not decode with the source OPS).
    pub skipped_rows: u64,
    /// Options rows left behind (`--options drop`).
    pub options_rows_dropped: u64,
}

/// `CopyTile(tile)`: one tile of the source copied into the target (§5.3).
pub type CopyTile<'a> = Operation<'a, CopyTileFlow>;

impl<'a> CopyTile<'a> {
    /// Copies the tile `tile_key` from `pair.source` into `pair.target` as `start` says, with
    /// `options` for an md5 source's options rows (§5.7). Tables of one layout are refused
    /// before any request.
    pub fn new(
        pair: impl Into<ContextArg<'a, TablePair>>,
        tile_key: i32,
        options: OptionsPolicy,
        start: Start,
    ) -> CopyTile<'a> {
        let mut pair = pair.into();
        let flow = match pair.get() {
            Some(p) if p.source.layout == p.target.layout => {
                Err(TraceStoreError::MigrationUsage(alloc::format!(
                    "tables {} and {} are both {}: a migration needs the other layout",
                    p.source.table,
                    p.target.table,
                    p.source.layout.name()
                )))
            }
            _ => Ok(CopyTileFlow::new(tile_key, options)),
        };
        match flow {
            Ok(flow) => Operation::begin(pair, start, RetryPolicy::default(), flow),
            Err(e) => Operation::failed(pair, e),
        }
    }
}

/// A target trace row to write: its key, its trace id text and its points.
pub(crate) type RowPoints = (Vec<u8>, String, Vec<(u32, PointValueTs)>);

/// Where a copy stands.
#[derive(Debug)]
enum Phase {
    Start,
    /// Reading the source tile (the first read, or a post-check).
    Read(ReadTilePoints),
    /// Adding the source OPS's params to the target's.
    Ops {
        read: TilePoints,
        copy: TilePoints,
        update: UpdateOps,
    },
    /// Digest-id target: the points' digests get their ids.
    Assign {
        read: TilePoints,
        rows: Vec<RowPoints>,
        assign: AssignDigestIdsFlow,
    },
    /// The target rows' writes are out.
    Write {
        read: TilePoints,
        points: u64,
        write: WriteChunks,
    },
    Done,
}

/// The flow of [`CopyTile`].
#[derive(Debug)]
pub struct CopyTileFlow {
    tile_key: i32,
    options: OptionsPolicy,
    /// The source read whose points were last written (`None` before the first write).
    written: Option<TilePoints>,
    summary: CopyTileSummary,
    phase: Phase,
}

impl CopyTileFlow {
    /// The flow of [`CopyTile::new`], for the migrator's passes.
    pub(crate) fn new(tile_key: i32, options: OptionsPolicy) -> CopyTileFlow {
        CopyTileFlow {
            tile_key,
            options,
            written: None,
            summary: CopyTileSummary::default(),
            phase: Phase::Start,
        }
    }

    /// After a source read: what to copy (everything the first time, what changed since the
    /// last write after it), or the end.
    fn after_read(&mut self, pair: &TablePair, read: TilePoints) -> Result<Phase, TraceStoreError> {
        self.summary.rows_scanned += read.rows;
        let first = self.written.is_none();
        if first {
            self.summary.points = read.point_count();
            self.summary.skipped_rows = read.skipped_rows;
            self.summary.options_rows_dropped =
                options_dropped(pair.target.layout, self.options, self.tile_key, &read)?;
        }
        let copy = match &self.written {
            None => read.clone(),
            Some(written) => read.not_in(written),
        };
        if copy.traces.is_empty() || self.summary.rounds >= MAX_WRITE_ROUNDS {
            return Ok(Phase::Done);
        }
        let update = target_ops_update(self.tile_key, &read);
        Ok(Phase::Ops { read, copy, update })
    }
}

/// The target rows of `copy`'s traces in tile `tile_key`, encoded with the target's OPS.
pub(crate) fn target_rows(
    tile_key: i32,
    ops: &OrderedParamSet,
    copy: TilePoints,
) -> Result<Vec<RowPoints>, TraceStoreError> {
    let mut rows = Vec::with_capacity(copy.traces.len());
    for (id, trace) in copy.traces {
        let enc = ops.encode_params(&trace.params)?;
        let row = trace_row_name(tile_key, enc.as_bytes());
        if row.len() > MAX_ROW_KEY_BYTES {
            return Err(TraceStoreError::RowKeyTooLong);
        }
        rows.push((row, id, trace.points.into_iter().collect()));
    }
    Ok(rows)
}

/// The `UpdateOps` that gives the target's OPS of tile `tile_key` every param of the source's
/// `read` (§5.3 step 2): new keys in the source's KeyOrder, values in source order.
pub(crate) fn target_ops_update(tile_key: i32, read: &TilePoints) -> UpdateOps {
    let ps = read.ops.param_set().clone();
    UpdateOps::in_key_order(tile_key, ps, read.ops.key_order().to_vec())
}

/// The digests of `rows`' points, in order (what `AssignDigestIds` is given).
pub(crate) fn row_digests(rows: &[RowPoints]) -> Vec<String> {
    rows.iter()
        .flat_map(|(_, _, points)| points.iter().map(|(_, (d, _))| d.clone()))
        .collect()
}

/// The `MutateRows` entries of `rows` in `layout`, the values given by `value` (called once per
/// point, in order).
fn write_entries<'d>(
    layout: Layout,
    rows: &'d [RowPoints],
    mut value: impl FnMut(&'d str) -> PointValue<'d>,
) -> Vec<MutateRowsEntry> {
    rows.iter()
        .map(|(row_key, _, points)| MutateRowsEntry {
            row_key: row_key.clone(),
            mutations: points
                .iter()
                .flat_map(|(offset, (digest, ts))| {
                    point_mutations(&trace_qualifier(layout, *offset), *ts, value(digest))
                })
                .collect(),
        })
        .collect()
}

fn point_total(rows: &[RowPoints]) -> u64 {
    rows.iter().map(|(_, _, p)| p.len() as u64).sum()
}

impl Flow for CopyTileFlow {
    type Schema = TraceMigrationSchema;
    type Output = CopyTileSummary;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        pair: &mut TablePair,
    ) -> Progress<CopyTileSummary, TraceMigrationSchema> {
        loop {
            self.phase = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Start => Phase::Read(ReadTilePoints::new(self.tile_key)),
                Phase::Read(mut reading) => {
                    let read = ready!(reading.advance(io, pair.side(Side::Source)),
                        self.phase => Phase::Read(reading));
                    match self.after_read(pair, read)? {
                        Phase::Done => return Ok(Some(self.summary)),
                        next => next,
                    }
                }
                Phase::Ops {
                    read,
                    copy,
                    mut update,
                } => {
                    let ops = ready!(update.advance(io, &mut pair.target),
                        self.phase => Phase::Ops { read, copy, update });
                    let rows = target_rows(self.tile_key, &ops, copy)?;
                    match pair.target.layout {
                        Layout::Md5 => {
                            let entries = write_entries(Layout::Md5, &rows, PointValue::Md5);
                            Phase::Write {
                                read,
                                points: point_total(&rows),
                                write: WriteChunks::start(io, &pair.target, entries),
                            }
                        }
                        Layout::DigestId => {
                            let digests = row_digests(&rows);
                            Phase::Assign {
                                read,
                                rows,
                                assign: AssignDigestIdsFlow::new(digests),
                            }
                        }
                    }
                }
                Phase::Assign {
                    read,
                    rows,
                    mut assign,
                } => {
                    let ids = ready!(assign.advance(io, &mut pair.target),
                        self.phase => Phase::Assign { read, rows, assign });
                    let mut ids = ids.into_iter();
                    let entries = write_entries(Layout::DigestId, &rows, |_| {
                        PointValue::Id(ids.next().unwrap_or(0))
                    });
                    Phase::Write {
                        read,
                        points: point_total(&rows),
                        write: WriteChunks::start(io, &pair.target, entries),
                    }
                }
                Phase::Write {
                    read,
                    points,
                    mut write,
                } => {
                    ready!(write.advance(io, &mut pair.target),
                        self.phase => Phase::Write { read, points, write });
                    self.summary.copied += points;
                    self.summary.rounds += 1;
                    self.written = Some(read);
                    Phase::Read(ReadTilePoints::new(self.tile_key))
                }
                Phase::Done => return Ok(None),
            }
        }
    }

    fn release(&mut self, pair: &mut TablePair) {
        if let Phase::Assign { assign, .. } = &mut self.phase {
            assign.release(&mut pair.target);
        }
    }
}
