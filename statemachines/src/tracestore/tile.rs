//! One tile as read (`spec/tracestore.md` 12.1, 11.7): [`LoadTile`] sends the OPS read and
//! the 32 trace scans, plus 32 options scans in the md5 layout, all together, and decodes them
//! into a [`RawTile`]: one slot per commit of each trace (readers), or each stored point with
//! its cell timestamp ([`TileForm::Points`], the migration's copy and verification,
//! `docs/migration.md` §5.2).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::model::{Cell, Row, RowFilter, RowSet, Timestamp};
use rowkit_codec::tracestore::cells::{
    FAMILY_OPTIONS, FAMILY_TRACE, cell_to_digest, decode_digest_id_cell,
};
use rowkit_codec::tracestore::keys::{
    SHARDS, TILE_SIZE, TYPE_OPTIONS, TYPE_TRACE, extract_subkey, parse_trace_qualifier,
    shard_prefix_range,
};
use rowkit_codec::tracestore::ops::parse_options_text;
use rowkit_codec::tracestore::{Layout, OrderedParamSet, Params};

use super::requests::{family, latest, ops_read_request, read_request, take_ops_read};
use super::state::{DigestCache, TraceStoreState};
use super::{Progress, TraceStoreError, TraceStoreEvent, TraceStoreSchema};
use crate::children::ChildId;
use crate::operation::{Flow, Io, WaitAll};
use crate::{ReadRowsRequest, ready};

/// One slot of a trace in a tile as read: a digest (md5) or an id (digest-id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    Digest(String),
    Id(u64),
}

impl Slot {
    pub(super) fn missing(layout: Layout) -> Slot {
        match layout {
            Layout::Md5 => Slot::Digest(String::new()),
            Layout::DigestId => Slot::Id(0),
        }
    }

    /// The digest id this slot holds that `digests` cannot resolve (0 is missing, not unknown).
    pub(crate) fn unknown_id(&self, digests: &DigestCache) -> Option<u64> {
        match self {
            Slot::Id(id) if *id != 0 && digests.digest(*id).is_none() => Some(*id),
            _ => None,
        }
    }

    /// The slot's digest (`""` = missing), an id resolved by `digests` (an id it does not know
    /// reads as missing: callers check [`Slot::unknown_id`] first).
    pub(crate) fn into_digest(self, digests: &DigestCache) -> String {
        match self {
            Slot::Digest(d) => d,
            Slot::Id(id) => String::from(digests.digest(id).unwrap_or_default()),
        }
    }
}

/// The scan of shard `shard`'s trace rows of a tile: the latest cell of each of the 256
/// commit columns.
pub(super) fn trace_scan(state: &TraceStoreState, shard: u32, tile_key: i32) -> ReadRowsRequest {
    let filter = RowFilter::Chain(alloc::vec![
        family(FAMILY_TRACE),
        latest(),
        RowFilter::CellsPerRowLimit(256)
    ]);
    read_request(
        state,
        RowSet::range(shard_prefix_range(shard, TYPE_TRACE, tile_key)),
        filter,
        0,
    )
}

/// A trace cell of `layout`: its offset in the tile and its slot.
fn decode_trace_cell(layout: Layout, cell: &Cell) -> Result<(usize, Slot), TraceStoreError> {
    let i = parse_trace_qualifier(&cell.qualifier)? as usize;
    let slot = match layout {
        Layout::Md5 => Slot::Digest(cell_to_digest(&cell.value)),
        Layout::DigestId => Slot::Id(decode_digest_id_cell(&cell.value)?),
    };
    Ok((i, slot))
}

/// A trace row of a tile: its subkey (the encoded trace id) and one slot per commit of the
/// tile, missing where the row has no cell.
pub(super) fn decode_trace_row(
    layout: Layout,
    row: &Row,
) -> Result<(Vec<u8>, Vec<Slot>), TraceStoreError> {
    let mut slots = alloc::vec![Slot::missing(layout); TILE_SIZE as usize];
    for cell in row.cells.iter().filter(|c| c.family == FAMILY_TRACE) {
        let (i, slot) = decode_trace_cell(layout, cell)?;
        if let Some(s) = slots.get_mut(i) {
            *s = slot;
        }
    }
    Ok((extract_subkey(&row.key).to_vec(), slots))
}

/// One point of a trace row as stored (`docs/migration.md` §5.2): the newest cell of a commit
/// column, with its timestamp.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct StoredPoint {
    /// The commit's offset in the tile.
    pub(crate) offset: u32,
    /// The cell's value as the layout decodes it.
    pub(crate) slot: Slot,
    /// The cell's timestamp.
    pub(crate) ts: Timestamp,
}

/// A trace row of a tile: its subkey and each stored point, in qualifier order as read.
fn decode_trace_points(
    layout: Layout,
    row: &Row,
) -> Result<(Vec<u8>, Vec<StoredPoint>), TraceStoreError> {
    let mut points = Vec::new();
    for cell in row.cells.iter().filter(|c| c.family == FAMILY_TRACE) {
        let (i, slot) = decode_trace_cell(layout, cell)?;
        if i < TILE_SIZE as usize {
            points.push(StoredPoint {
                offset: i as u32,
                slot,
                ts: cell.timestamp,
            });
        }
    }
    Ok((extract_subkey(&row.key).to_vec(), points))
}

/// What a [`LoadTile`] decodes its trace rows into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TileForm {
    /// One slot per commit ([`RawTile::traces`]): what readers assemble.
    Slots,
    /// Each stored point with its timestamp ([`RawTile::points`]): what the migration copies
    /// and compares.
    Points,
}

/// One tile as read, before range assembly.
#[derive(Debug)]
pub(crate) struct RawTile {
    /// The tile's OPS (empty when it has none), shared with the cache.
    pub(crate) ops: Arc<OrderedParamSet>,
    /// Encoded trace id -> one slot per commit of the tile ([`TileForm::Slots`]).
    pub(super) traces: Vec<(Vec<u8>, Vec<Slot>)>,
    /// Encoded trace id -> its stored points ([`TileForm::Points`]).
    pub(crate) points: Vec<(Vec<u8>, Vec<StoredPoint>)>,
    /// Encoded trace id -> options (md5 layout).
    pub(crate) options: BTreeMap<Vec<u8>, Params>,
}

/// Where a tile load stands. Outcomes are checked in this order, as the protocol waits: the
/// OPS read first (its store error ends the load at once), then every trace scan, then every
/// options scan.
#[derive(Debug)]
enum Phase {
    /// Waiting for the OPS read.
    Ops,
    /// Waiting for the trace scans.
    Traces { ops_row: Option<Row> },
    /// Waiting for the options scans (none in the digest-id layout).
    Options {
        ops_row: Option<Row>,
        trace_rows: Vec<Row>,
    },
    /// Ended (a flow that ended is never advanced again).
    Done,
}

/// `loadTile(tk)`.
#[derive(Debug)]
pub(crate) struct LoadTile {
    tile_key: i32,
    form: TileForm,
    ops: ChildId,
    traces: WaitAll,
    options: WaitAll,
    phase: Phase,
}

impl LoadTile {
    /// Sends the tile's requests together: OPS read, 32 trace scans, (md5) 32 options scans.
    pub(super) fn start(
        io: &mut Io<TraceStoreEvent>,
        state: &TraceStoreState,
        tile_key: i32,
    ) -> LoadTile {
        LoadTile::start_as(io, state, tile_key, TileForm::Slots)
    }

    /// [`LoadTile::start`], decoding the trace rows into `form`.
    pub(crate) fn start_as(
        io: &mut Io<TraceStoreEvent>,
        state: &TraceStoreState,
        tile_key: i32,
        form: TileForm,
    ) -> LoadTile {
        let ops = io.read_row(ops_read_request(state, tile_key));
        let traces = (0..SHARDS)
            .map(|s| io.read_rows(trace_scan(state, s, tile_key)))
            .collect();
        let options = if state.layout == Layout::Md5 {
            let filter = RowFilter::Chain(alloc::vec![
                family(FAMILY_OPTIONS),
                latest(),
                RowFilter::CellsPerRowLimit(1)
            ]);
            (0..SHARDS)
                .map(|s| {
                    io.read_rows(read_request(
                        state,
                        RowSet::range(shard_prefix_range(s, TYPE_OPTIONS, tile_key)),
                        filter.clone(),
                        0,
                    ))
                })
                .collect()
        } else {
            Vec::new()
        };
        LoadTile {
            tile_key,
            form,
            ops,
            traces: WaitAll::new(traces),
            options: WaitAll::new(options),
            phase: Phase::Ops,
        }
    }

    /// Decodes the tile once every read has completed.
    fn decode(
        &self,
        state: &mut TraceStoreState,
        ops_row: Option<&Row>,
        trace_rows: &[Row],
        options_rows: &[Row],
    ) -> Result<RawTile, TraceStoreError> {
        let layout = state.layout;
        let ops = take_ops_read(state, self.tile_key, ops_row)?
            .map(|c| c.ops)
            .unwrap_or_default();
        let (traces, points) = match self.form {
            TileForm::Slots => (
                trace_rows
                    .iter()
                    .map(|row| decode_trace_row(layout, row))
                    .collect::<Result<Vec<_>, _>>()?,
                Vec::new(),
            ),
            TileForm::Points => (
                Vec::new(),
                trace_rows
                    .iter()
                    .map(|row| decode_trace_points(layout, row))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let mut options = BTreeMap::new();
        for row in options_rows {
            if let Some(cell) = row.cells.iter().find(|c| c.family == FAMILY_OPTIONS) {
                options.insert(
                    extract_subkey(&row.key).to_vec(),
                    parse_options_text(&cell.value)?,
                );
            }
        }
        Ok(RawTile {
            ops,
            traces,
            points,
            options,
        })
    }
}

impl Flow for LoadTile {
    type Schema = TraceStoreSchema;
    type Output = RawTile;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<RawTile> {
        loop {
            self.phase = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Ops => Phase::Traces {
                    ops_row: ready!(io.row(self.ops), self.phase => Phase::Ops),
                },
                Phase::Traces { ops_row } => {
                    let trace_rows = ready!(
                        self.traces.rows(io),
                        self.phase => Phase::Traces { ops_row }
                    );
                    Phase::Options {
                        ops_row,
                        trace_rows: trace_rows.into_iter().flatten().collect(),
                    }
                }
                Phase::Options {
                    ops_row,
                    trace_rows,
                } => {
                    let options_rows: Vec<Row> = ready!(
                        self.options.rows(io),
                        self.phase => Phase::Options { ops_row, trace_rows }
                    )
                    .into_iter()
                    .flatten()
                    .collect();
                    return self
                        .decode(state, ops_row.as_ref(), &trace_rows, &options_rows)
                        .map(Some);
                }
                Phase::Done => return Ok(None),
            }
        }
    }
}
