//! `StreamTile(index)`: one tile's traces handed over as they arrive, for a viewer that draws a
//! 10 000-trace tile while it streams in. The tile's OPS is read first (trace ids are encoded
//! against it), then the 32 shards' trace scans run together and every row a scan has produced
//! so far is decoded, resolved (digest-id layout: one full map read when an id is not cached)
//! and emitted as a [`TraceStoreEvent::Traces`] batch, before the scans end. Options are not
//! read. Unlike [`ReadRange`](super::ReadRange), nothing of the tile is kept: the caller holds
//! what it was given.

use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::model::Row;
use rowkit_codec::tracestore::CodecError;
use rowkit_codec::tracestore::keys::{SHARDS, tile_key};
use rowkit_codec::tracestore::ops::trace_id_text;
use rowkit_codec::tracestore::{Layout, OrderedParamSet};

use super::aware::{Aware, TableFlow};
use super::digest_map::ReadFullMap;
use super::requests::{ops_read_request, take_ops_read};
use super::state::TraceStoreState;
use super::tile::{decode_trace_row, trace_scan};
use super::{
    Progress, Trace, TraceBatch, TraceStoreError, TraceStoreEvent, TraceStoreSchema, begin,
};
use crate::children::ChildId;
use crate::operation::{ContextArg, Flow, Io, Operation, Start};
use crate::ready;

/// `StreamTile(index)`: the traces of tile `index`, emitted in batches; the output is how many
/// traces were emitted (an aware process's: of the truth's table, [`Aware`]).
pub type StreamTile<'a> = Operation<'a, Aware<StreamTileFlow>>;

impl<'a> StreamTile<'a> {
    /// Streams tile `index` as `start` says.
    pub fn new(
        state: impl Into<ContextArg<'a, TraceStoreState>>,
        index: u32,
        start: Start,
    ) -> Self {
        let tk = tile_key(i64::from(index));
        let flow = if tk < 0 {
            Err(TraceStoreError::Codec(CodecError::BadRepoIndex))
        } else {
            Ok(Aware::new(StreamTileFlow {
                tile_key: tk,
                phase: Phase::Start,
                emitted: 0,
            }))
        };
        begin(state, flow, start)
    }
}

/// Where the stream stands.
#[derive(Debug)]
enum Phase {
    /// Nothing sent yet.
    Start,
    /// The OPS read is out.
    Ops(ChildId),
    /// The shard scans run; `scans` holds the ones not finished.
    Scans(Scans),
    /// Digest-id layout: rows hold an id the cache does not know; the full map is being read.
    Resolve {
        scans: Scans,
        rows: Vec<Row>,
        map: ReadFullMap,
    },
    /// Ended (a flow that ended is never advanced again).
    Done,
}

/// The running shard scans and the tile's OPS.
#[derive(Debug)]
struct Scans {
    ops: alloc::sync::Arc<OrderedParamSet>,
    running: Vec<ChildId>,
}

impl Scans {
    /// Every row the running scans have produced so far, and the scans that finished removed
    /// (a scan's store error ends the stream).
    fn take_rows(&mut self, io: &mut Io<TraceStoreEvent>) -> Result<Vec<Row>, TraceStoreError> {
        let mut rows = Vec::new();
        let mut still = Vec::with_capacity(self.running.len());
        for &id in &self.running {
            while let Some(row) = io.next_row(id) {
                rows.push(row);
            }
            match io.rows::<TraceStoreError>(id)? {
                None => still.push(id),
                Some(rest) => rows.extend(rest),
            }
        }
        self.running = still;
        Ok(rows)
    }
}

/// The flow of [`StreamTile`].
#[derive(Debug)]
pub struct StreamTileFlow {
    tile_key: i32,
    phase: Phase,
    emitted: usize,
}

impl StreamTileFlow {
    /// Decodes `rows` into traces against the tile's OPS (a row the OPS cannot decode is
    /// skipped, as a range read skips it) with every id resolved, and emits them; `Err(id)`
    /// (nothing emitted) when digest id `id` is not cached.
    fn emit(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &TraceStoreState,
        scans: &Scans,
        rows: &[Row],
    ) -> Result<Result<(), u64>, TraceStoreError> {
        let mut decoded = Vec::with_capacity(rows.len());
        for row in rows {
            let (subkey, slots) = decode_trace_row(state.layout, row)?;
            if let Some(id) = slots.iter().find_map(|s| s.unknown_id(&state.digests)) {
                return Ok(Err(id));
            }
            decoded.push((subkey, slots));
        }
        let traces: Vec<(String, Trace)> = decoded
            .into_iter()
            .filter_map(|(subkey, slots)| {
                let params = scans.ops.decode_params(&subkey).ok()?;
                let digests = slots
                    .into_iter()
                    .map(|s| s.into_digest(&state.digests))
                    .collect();
                Some((
                    trace_id_text(&params),
                    Trace {
                        params,
                        digests,
                        ..Trace::default()
                    },
                ))
            })
            .collect();
        self.emitted += traces.len();
        let shards_done = SHARDS - scans.running.len() as u32;
        if !traces.is_empty() || scans.running.is_empty() {
            io.emit(TraceStoreEvent::Traces(TraceBatch {
                traces,
                shards_done,
            }));
        }
        Ok(Ok(()))
    }
}

impl TableFlow for StreamTileFlow {
    const WRITES: bool = false;

    fn mirror(&self, _layout: Layout) -> Option<StreamTileFlow> {
        None
    }
}

impl Flow for StreamTileFlow {
    type Schema = TraceStoreSchema;
    type Output = usize;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<usize> {
        loop {
            self.phase = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Start => Phase::Ops(io.read_row(ops_read_request(state, self.tile_key))),
                Phase::Ops(id) => {
                    let row = ready!(io.row(id), self.phase => Phase::Ops(id));
                    let ops = take_ops_read(state, self.tile_key, row.as_ref())?
                        .map(|c| c.ops)
                        .unwrap_or_default();
                    let running = (0..SHARDS)
                        .map(|s| io.read_rows(trace_scan(state, s, self.tile_key)))
                        .collect();
                    Phase::Scans(Scans { ops, running })
                }
                Phase::Scans(mut scans) => {
                    let rows = scans.take_rows(io)?;
                    if rows.is_empty() && !scans.running.is_empty() {
                        self.phase = Phase::Scans(scans);
                        return Ok(None);
                    }
                    if self.emit(io, state, &scans, &rows)?.is_err() {
                        let map = ReadFullMap::start(io, state);
                        self.phase = Phase::Resolve { scans, rows, map };
                        continue;
                    }
                    if scans.running.is_empty() {
                        return Ok(Some(self.emitted));
                    }
                    Phase::Scans(scans)
                }
                Phase::Resolve {
                    scans,
                    rows,
                    mut map,
                } => {
                    ready!(map.advance(io, state), self.phase => Phase::Resolve { scans, rows, map });
                    // An id still unknown after a full map read is the tile's error.
                    if let Err(id) = self.emit(io, state, &scans, &rows)? {
                        return Err(TraceStoreError::UnknownDigestId(id));
                    }
                    if scans.running.is_empty() {
                        return Ok(Some(self.emitted));
                    }
                    Phase::Scans(scans)
                }
                Phase::Done => return Ok(None),
            }
        }
    }
}
