//! `Put(commit, entries, ts)` in both layouts (`spec/tracestore.md` 10, 11.6): validation before
//! any request, the OPS update, (digest-id) id assignment, then every `MutateRows` chunk at
//! once. It returns the row keys it wrote, so callers need not encode them again.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::model::limits::MAX_ROW_KEY_BYTES;
use rowkit_codec::model::{Mutation, Timestamp};
use rowkit_codec::tracestore::cells::{
    COLUMN_OPTIONS, FAMILY_OPTIONS, FAMILY_TRACE, digest_id_trace_mutations, digest_to_cell,
};
use rowkit_codec::tracestore::keys::{
    TilePosition, digest_id_trace_qualifier, extract_subkey, md5_trace_qualifier, ops_row_name,
    options_row_name, repo_index_position, trace_row_name,
};
use rowkit_codec::tracestore::ops::{ParamSetBuilder, trace_id_text};
use rowkit_codec::tracestore::{Layout, OrderedParamSet};

use super::assign::AssignDigestIdsFlow;
use super::aware::{Aware, TableFlow};
use super::state::TraceStoreState;
use super::update_ops::UpdateOps;
use super::{Progress, PutEntry, TraceStoreError, TraceStoreEvent, TraceStoreSchema, begin};
use crate::children::ChildOutput;
use crate::operation::{ContextArg, Flow, Io, Operation, OperationError, Start, WaitAll};
use crate::{MutateRowsEntry, MutateRowsRequest, ready};

/// Entries per `MutateRows` request.
pub(crate) const PUT_CHUNK: usize = 10_000;

/// Mutations per `MutateRows` request: a Put's entries carry at most two each, so its chunks
/// of [`PUT_CHUNK`] entries stay under this (`spec/tracestore.md` §3: "at most 20,000
/// mutations"); a migration's copy writes up to two per point of a tile's row, so its chunks
/// end at this bound first, below Bigtable's limit of 100,000 per request.
pub(crate) const CHUNK_MUTATIONS: usize = 20_000;

/// The value of one point as a layout stores it: md5 bytes of a digest, or a digest id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PointValue<'a> {
    /// md5 layout: the digest (32 hex characters; anything else is stored as missing).
    Md5(&'a str),
    /// digest-id layout: the digest's id (0 = missing).
    Id(u64),
}

/// The trace qualifier of `offset` in `layout` (`%03d` / `itoa`).
pub(crate) fn trace_qualifier(layout: Layout, offset: u32) -> Vec<u8> {
    match layout {
        Layout::Md5 => md5_trace_qualifier(offset),
        Layout::DigestId => digest_id_trace_qualifier(offset),
    }
}

/// The mutations that write one point of a trace row, as a Put writes it: `SetCell(T, q, ts,
/// value)`, and in the digest-id layout `DeleteFromColumn(T, q, [0, ts − 1000))`
/// (`spec/tracestore.md` 10, 11.6). `ts` is truncated to milliseconds.
pub(crate) fn point_mutations(
    qualifier: &[u8],
    ts: Timestamp,
    value: PointValue<'_>,
) -> Vec<Mutation> {
    match value {
        PointValue::Md5(digest) => alloc::vec![Mutation::set_cell(
            FAMILY_TRACE,
            qualifier,
            ts.truncate_to_millis(),
            digest_to_cell(digest)
        )],
        PointValue::Id(id) => digest_id_trace_mutations(qualifier, ts, id),
    }
}

fn validate_put(
    state: &TraceStoreState,
    repo_index: i64,
    commit_time: Option<Timestamp>,
    entries: &[PutEntry],
    ts: Timestamp,
) -> Result<TilePosition, TraceStoreError> {
    if state.layout == Layout::DigestId && entries.iter().any(|e| !e.options.is_empty()) {
        return Err(TraceStoreError::OptionsNotSupported);
    }
    let pos = repo_index_position(repo_index)?;
    if ts.0 < 0 {
        return Err(TraceStoreError::BadTimestamp);
    }
    if entries.iter().any(|e| !e.options.is_empty()) && commit_time.is_none_or(|t| t.0 < 0) {
        return Err(TraceStoreError::BadTimestamp);
    }
    Ok(pos)
}

/// Validation that must fail before any request (`bad repo index`, `bad timestamp`,
/// `options not supported by the digest-id layout`).
fn check_put(
    state: &TraceStoreState,
    repo_index: i64,
    commit_time: Option<Timestamp>,
    entries: &[PutEntry],
    ts: Timestamp,
) -> Result<(), TraceStoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    validate_put(state, repo_index, commit_time, entries, ts).map(|_| ())
}

/// `Put(commit, entries, ts)`: OPS update, (digest-id) id assignment, then `MutateRows`
/// chunks. `bad repo index`, `bad timestamp` and `options not supported by the digest-id
/// layout` are raised before any request. Its output is the row keys it wrote, in entry
/// order (an entry's trace row, then, md5 with options, its options row). An aware process's
/// Put writes the truth's table and mirrors into the other one, or pauses in a fence
/// ([`Aware`]).
pub type Put<'a> = Operation<'a, Aware<PutFlow>>;

impl<'a> Put<'a> {
    /// A Put of `entries` at commit `repo_index` with cell timestamp `ts` (options rows at
    /// `commit_time`) as `start` says.
    pub fn new(
        state: impl Into<ContextArg<'a, TraceStoreState>>,
        repo_index: i64,
        commit_time: Option<Timestamp>,
        entries: Vec<PutEntry>,
        ts: Timestamp,
        start: Start,
    ) -> Self {
        let mut state = state.into();
        let checked = match state.get() {
            Some(s) => check_put(s, repo_index, commit_time, &entries, ts),
            None => Ok(()),
        };
        let flow = checked.map(|()| {
            Aware::new(PutFlow {
                repo_index,
                commit_time,
                ts,
                phase: Phase::Start(entries),
            })
        });
        begin(state, flow, start)
    }
}

/// Where a Put stands.
#[derive(Debug)]
enum Phase {
    /// Nothing sent yet.
    Start(Vec<PutEntry>),
    /// Adding the entries' params to the tile's OPS.
    UpdateOps {
        pos: TilePosition,
        entries: Vec<PutEntry>,
        update: UpdateOps,
    },
    /// Digest-id layout: the entries' digests get their ids (trace row names kept).
    AssignIds {
        pos: TilePosition,
        trace_rows: Vec<Vec<u8>>,
        assign: AssignDigestIdsFlow,
    },
    /// Every chunk is out.
    WriteChunks(WriteChunks),
    /// Ended (a flow that ended is never advanced again).
    Done,
}

/// The flow of [`Put`]: the OPS update, (digest-id) id assignment, then every chunk at once.
#[derive(Debug)]
pub struct PutFlow {
    repo_index: i64,
    commit_time: Option<Timestamp>,
    ts: Timestamp,
    phase: Phase,
}

/// The trace row of every entry from its encoded params, in entry order; the first failure (an
/// encoding error, or a trace row key over the limit) aborts the Put before any map or trace
/// cell is written.
fn trace_rows(
    pos: &TilePosition,
    encodings: impl ExactSizeIterator<Item = Result<String, TraceStoreError>>,
) -> Result<Vec<Vec<u8>>, TraceStoreError> {
    let mut rows = Vec::with_capacity(encodings.len());
    for enc in encodings {
        let row = trace_row_name(pos.tile_key, enc?.as_bytes());
        if row.len() > MAX_ROW_KEY_BYTES {
            return Err(TraceStoreError::RowKeyTooLong);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// The trace rows of `entries` encoded with `ops`.
fn encode(
    pos: &TilePosition,
    ops: &OrderedParamSet,
    entries: &[PutEntry],
) -> Result<Vec<Vec<u8>>, TraceStoreError> {
    let encodings = entries.iter().map(|e| Ok(ops.encode_params(&e.params)?));
    trace_rows(pos, encodings)
}

/// The trace rows of `entries` when `ops` (the tile's cached OPS) holds every key and value
/// of them: the OPS update would then send nothing and return `ops`, so the Put goes straight
/// to its writes. `None` when some param is new to `ops` (or does not encode).
fn encode_known(
    pos: &TilePosition,
    ops: &OrderedParamSet,
    entries: &[PutEntry],
) -> Option<Result<Vec<Vec<u8>>, TraceStoreError>> {
    let encoded: Option<Vec<String>> = entries
        .iter()
        .map(|e| ops.encode_known_params(&e.params))
        .collect();
    Some(trace_rows(pos, encoded?.into_iter().map(Ok)))
}

impl PutFlow {
    /// The md5 layout's row entries: trace rows, and options rows sharing their mutation.
    fn md5_rows(
        &self,
        pos: &TilePosition,
        entries: &[PutEntry],
        trace_rows: Vec<Vec<u8>>,
    ) -> Result<Vec<MutateRowsEntry>, TraceStoreError> {
        let qualifier = md5_trace_qualifier(pos.offset);
        let mut rows = Vec::with_capacity(entries.len());
        for (e, trace_row) in entries.iter().zip(trace_rows) {
            let mut m = point_mutations(&qualifier, self.ts, PointValue::Md5(&e.digest));
            if e.options.is_empty() {
                rows.push(MutateRowsEntry {
                    row_key: trace_row,
                    mutations: m,
                });
                continue;
            }
            // The subkey of a trace row is its encoded params.
            let options_row = options_row_name(pos.tile_key, extract_subkey(&trace_row));
            if options_row.len() > MAX_ROW_KEY_BYTES {
                return Err(TraceStoreError::RowKeyTooLong);
            }
            let commit_ts = self.commit_time.unwrap_or_default().truncate_to_millis();
            m.push(Mutation::set_cell(
                FAMILY_OPTIONS,
                COLUMN_OPTIONS,
                commit_ts,
                trace_id_text(&e.options).into_bytes(),
            ));
            // The original reused one mutation for both rows (§5.4): both get both cells.
            rows.push(MutateRowsEntry {
                row_key: trace_row,
                mutations: m.clone(),
            });
            rows.push(MutateRowsEntry {
                row_key: options_row,
                mutations: m,
            });
        }
        Ok(rows)
    }

    /// The digest-id layout's trace row entries, one per entry with its digest's id.
    fn digest_id_rows(
        &self,
        pos: &TilePosition,
        trace_rows: Vec<Vec<u8>>,
        ids: Vec<u64>,
    ) -> Vec<MutateRowsEntry> {
        let qualifier = digest_id_trace_qualifier(pos.offset);
        trace_rows
            .into_iter()
            .zip(ids)
            .map(|(row_key, id)| MutateRowsEntry {
                row_key,
                mutations: point_mutations(&qualifier, self.ts, PointValue::Id(id)),
            })
            .collect()
    }

    /// The phase after the OPS: the writes (md5), or the id assignment (digest-id).
    fn after_ops(
        &self,
        io: &mut Io<TraceStoreEvent>,
        state: &TraceStoreState,
        pos: TilePosition,
        entries: Vec<PutEntry>,
        trace_rows: Vec<Vec<u8>>,
    ) -> Result<Phase, TraceStoreError> {
        Ok(match state.layout {
            Layout::Md5 => {
                let rows = self.md5_rows(&pos, &entries, trace_rows)?;
                Phase::WriteChunks(WriteChunks::start(io, state, rows))
            }
            Layout::DigestId => {
                let digests = entries.into_iter().map(|e| e.digest).collect();
                Phase::AssignIds {
                    pos,
                    trace_rows,
                    assign: AssignDigestIdsFlow::new(digests),
                }
            }
        })
    }
}

impl TableFlow for PutFlow {
    const WRITES: bool = true;

    /// The same Put — commit, entries, `ts`, commit time — on a table of `layout`; into the
    /// digest-id layout without options, which it cannot hold (`docs/migration.md` §5.7).
    fn mirror(&self, layout: Layout) -> Option<PutFlow> {
        let Phase::Start(entries) = &self.phase else {
            return None;
        };
        let entries = entries
            .iter()
            .map(|e| PutEntry {
                options: match layout {
                    Layout::Md5 => e.options.clone(),
                    Layout::DigestId => Default::default(),
                },
                ..e.clone()
            })
            .collect();
        Some(PutFlow {
            repo_index: self.repo_index,
            commit_time: self.commit_time,
            ts: self.ts,
            phase: Phase::Start(entries),
        })
    }
}

impl Flow for PutFlow {
    type Schema = TraceStoreSchema;
    /// The row keys written, in entry order.
    type Output = Vec<Vec<u8>>;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<Vec<Vec<u8>>> {
        loop {
            self.phase = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Start(entries) => {
                    if entries.is_empty() {
                        return Ok(Some(Vec::new()));
                    }
                    let pos =
                        validate_put(state, self.repo_index, self.commit_time, &entries, self.ts)?;
                    let cached = state
                        .ops_cache
                        .get(&ops_row_name(pos.tile_key))
                        .map(|c| Arc::clone(&c.ops));
                    if let Some(known) = cached.and_then(|ops| encode_known(&pos, &ops, &entries)) {
                        self.after_ops(io, state, pos, entries, known?)?
                    } else {
                        let mut ps = ParamSetBuilder::new();
                        for e in &entries {
                            ps.add(&e.params);
                        }
                        let update = UpdateOps::new(pos.tile_key, ps.finish());
                        Phase::UpdateOps {
                            pos,
                            entries,
                            update,
                        }
                    }
                }
                Phase::UpdateOps {
                    pos,
                    entries,
                    mut update,
                } => {
                    let ops = ready!(update.advance(io, state), self.phase => Phase::UpdateOps {
                        pos,
                        entries,
                        update,
                    });
                    let trace_rows = encode(&pos, &ops, &entries)?;
                    self.after_ops(io, state, pos, entries, trace_rows)?
                }
                Phase::AssignIds {
                    pos,
                    trace_rows,
                    mut assign,
                } => {
                    // The assignment gives back what it holds itself when it fails.
                    let ids = ready!(assign.advance(io, state), self.phase => Phase::AssignIds {
                        pos,
                        trace_rows,
                        assign,
                    });
                    let rows = self.digest_id_rows(&pos, trace_rows, ids);
                    Phase::WriteChunks(WriteChunks::start(io, state, rows))
                }
                Phase::WriteChunks(mut write) => {
                    let written =
                        ready!(write.advance(io, state), self.phase => Phase::WriteChunks(write));
                    return Ok(Some(written));
                }
                Phase::Done => return Ok(None),
            }
        }
    }

    fn release(&mut self, state: &mut TraceStoreState) {
        if let Phase::AssignIds { assign, .. } = &mut self.phase {
            assign.release(state);
        }
    }
}

/// Row entries sent in chunks of [`PUT_CHUNK`] entries and at most [`CHUNK_MUTATIONS`]
/// mutations, all at once, in chunk order; fails with the
/// lowest-numbered failed chunk's error after every chunk completed (`spec/tracestore.md` 10
/// step 5), else outputs the row keys written, in entry order.
#[derive(Debug)]
pub(crate) struct WriteChunks {
    chunks: WaitAll,
    row_keys: Vec<Vec<u8>>,
}

impl WriteChunks {
    /// Sends every chunk of `rows`.
    pub(crate) fn start(
        io: &mut Io<TraceStoreEvent>,
        state: &TraceStoreState,
        rows: Vec<MutateRowsEntry>,
    ) -> WriteChunks {
        let row_keys = rows.iter().map(|e| e.row_key.clone()).collect();
        let mut ids = Vec::new();
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            // At least one entry per chunk; then up to PUT_CHUNK entries and CHUNK_MUTATIONS
            // mutations.
            let mut entries: Vec<MutateRowsEntry> = Vec::new();
            let mut mutations = 0;
            while let Some(next) = rows.next_if(|e| {
                entries.is_empty()
                    || (entries.len() < PUT_CHUNK
                        && mutations + e.mutations.len() <= CHUNK_MUTATIONS)
            }) {
                mutations += next.mutations.len();
                entries.push(next);
            }
            ids.push(io.mutate_rows(MutateRowsRequest {
                table: state.table.clone(),
                app_profile_id: state.app_profile_id.clone(),
                entries: entries.into(),
            }));
        }
        WriteChunks {
            chunks: WaitAll::new(ids),
            row_keys,
        }
    }
}

impl Flow for WriteChunks {
    type Schema = TraceStoreSchema;
    type Output = Vec<Vec<u8>>;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        _state: &mut TraceStoreState,
    ) -> Progress<Vec<Vec<u8>>> {
        let Some(outcomes) = self.chunks.poll(io) else {
            return Ok(None);
        };
        for outcome in outcomes {
            // A failed entry is `write failed`, not a store error (spec 18).
            match outcome.map_err(TraceStoreError::store)? {
                ChildOutput::WroteRows(results) => {
                    if let Some(Err(e)) = results.into_iter().map(|r| r.result).find(Result::is_err)
                    {
                        return Err(TraceStoreError::WriteFailed {
                            code: e.code,
                            message: e.message,
                        });
                    }
                }
                other => return Err(TraceStoreError::unexpected(&other)),
            }
        }
        Ok(Some(core::mem::take(&mut self.row_keys)))
    }
}
