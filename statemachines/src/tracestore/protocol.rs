//! The trace store protocols of `spec/tracestore.md` 9-12 as `async` bodies over a [`Ctx`]
//! (see [`super::exec`]): OPS update, Put (both layouts), id allocation, digest-id assignment,
//! digest map reads, tile and range reads, dense reads and the newest tile.

use alloc::collections::{BTreeMap, BTreeSet, VecDeque};
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::model::limits::MAX_ROW_KEY_BYTES;
use rowkit_codec::model::{
    Mutation, ReadModifyWriteRule, Row, RowFilter, RowSet, RuleOp, Timestamp, TimestampRange,
};
use rowkit_codec::tracestore::cells::*;
use rowkit_codec::tracestore::keys::*;
use rowkit_codec::tracestore::ops::{
    add_params, normalize_param_set, parse_options_text, trace_id_text,
};
use rowkit_codec::tracestore::{
    Layout, OrderedParamSet, ParamSet, Params, TraceStoreError, decode_ops_gob, encode_ops_gob,
    ops_hash,
};

use super::exec::{ChildId, ChildOutput, Ctx};
use super::state::{CachedOps, DigestCache, TraceStoreState};
use super::{PutEntry, Tile, Trace};
use crate::{
    CheckAndMutateRowRequest, MutateRowsEntry, MutateRowsRequest, ReadModifyWriteRowRequest,
    ReadRowsRequest, Request, Response, StoreError,
};

/// Entries per `MutateRows` request.
pub(crate) const PUT_CHUNK: usize = 10_000;
/// Digest-map inserts outstanding at once.
pub(crate) const INSERT_WINDOW: usize = 100;
/// Tile steps of a dense read.
pub(crate) const MAX_DENSE_STEPS: usize = 50;

fn store_error(e: StoreError) -> TraceStoreError {
    TraceStoreError::Store {
        code: e.code,
        message: e.message,
    }
}

fn unexpected(what: &str) -> TraceStoreError {
    TraceStoreError::Store {
        code: crate::Code::Internal,
        message: alloc::format!("unexpected response to {what}"),
    }
}

fn latest() -> RowFilter {
    RowFilter::CellsPerColumnLimit(1)
}

fn family(f: &str) -> RowFilter {
    RowFilter::FamilyNameRegex(f.into())
}

fn read_request(
    state: &TraceStoreState,
    rows: RowSet,
    filter: RowFilter,
    rows_limit: i64,
) -> ReadRowsRequest {
    ReadRowsRequest {
        table: state.table.clone(),
        app_profile_id: state.app_profile_id.clone(),
        rows,
        filter: Some(filter),
        rows_limit,
        reversed: false,
    }
}

fn rows_of(outcome: Result<ChildOutput, StoreError>) -> Result<Vec<Row>, TraceStoreError> {
    match outcome.map_err(store_error)? {
        ChildOutput::Rows(rows) => Ok(rows),
        _ => Err(unexpected("ReadRows")),
    }
}

fn matched_of(outcome: Result<ChildOutput, StoreError>) -> Result<bool, StoreError> {
    match outcome? {
        ChildOutput::Unary(Response::CheckAndMutateRow { predicate_matched }) => {
            Ok(predicate_matched)
        }
        _ => Err(StoreError::new(
            crate::Code::Internal,
            "unexpected response to CheckAndMutateRow",
        )),
    }
}

fn set_cell(fam: &str, qualifier: &[u8], ts: Timestamp, value: Vec<u8>) -> Mutation {
    Mutation::SetCell {
        family: fam.into(),
        qualifier: qualifier.to_vec(),
        timestamp: ts,
        value,
    }
}

// ---------------------------------------------------------------- OPS (§9)

fn decode_ops_row(row: &Row) -> Result<CachedOps, TraceStoreError> {
    let cells: Vec<_> = row
        .cells
        .iter()
        .filter(|c| c.family == FAMILY_OPS)
        .collect();
    if cells.len() != 2 {
        return Err(TraceStoreError::BadOpsRow {
            reason: "incorrect number of OPS columns",
        });
    }
    let hash = cells.iter().find(|c| c.qualifier == COLUMN_HASH);
    let ops = cells.iter().find(|c| c.qualifier == COLUMN_OPS);
    let (Some(hash), Some(ops)) = (hash, ops) else {
        return Err(TraceStoreError::BadOpsRow {
            reason: "incorrect number of OPS columns",
        });
    };
    if hash.value.is_empty() {
        return Err(TraceStoreError::BadOpsRow {
            reason: "missing hash",
        });
    }
    Ok(CachedOps {
        ops: decode_ops_gob(&ops.value)?,
        hash: String::from_utf8_lossy(&hash.value).into_owned(),
        ts_hash: hash.timestamp,
    })
}

fn ops_read_request(state: &TraceStoreState, tile_key: i32) -> ReadRowsRequest {
    read_request(
        state,
        RowSet::key(ops_row_name(tile_key)),
        RowFilter::Chain(alloc::vec![latest(), family(FAMILY_OPS)]),
        0,
    )
}

/// Decodes the answer of an OPS read (no row -> `None`) and caches what it found.
fn take_ops_read(
    state: &mut TraceStoreState,
    tile_key: i32,
    rows: &[Row],
) -> Result<Option<CachedOps>, TraceStoreError> {
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let cached = decode_ops_row(row)?;
    state
        .ops_cache
        .insert(ops_row_name(tile_key), cached.clone());
    Ok(Some(cached))
}

/// `updateOrderedParamSet(tileKey, ps)`.
pub(crate) async fn update_ops(
    ctx: &Ctx,
    state: &mut TraceStoreState,
    tile_key: i32,
    ps: &ParamSet,
) -> Result<OrderedParamSet, TraceStoreError> {
    let row = ops_row_name(tile_key);
    let mut backoff = None;
    loop {
        let current = match state.ops_cache.get(&row) {
            Some(c) => Some(c.clone()),
            None => {
                let id = ctx.read_rows(ops_read_request(state, tile_key));
                let rows = rows_of(ctx.wait(id).await)?;
                take_ops_read(state, tile_key, &rows)?
            }
        };
        let ops = current.as_ref().map(|c| c.ops.clone()).unwrap_or_default();
        if ops.delta(ps).is_empty() {
            return Ok(ops);
        }
        let mut new = ops.clone();
        new.update(ps);
        let bytes = encode_ops_gob(&new);
        let new_hash = ops_hash(&bytes);
        let mut ts = ctx.now().truncate_to_millis();
        if let Some(c) = &current {
            ts = ts.max(c.ts_hash.saturating_add_micros(1000));
        }
        let sets = alloc::vec![
            set_cell(FAMILY_OPS, COLUMN_HASH, ts, new_hash.clone().into_bytes()),
            set_cell(FAMILY_OPS, COLUMN_OPS, ts, bytes),
        ];
        let request = |predicate, true_mutations, false_mutations| {
            Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                table: state.table.clone(),
                app_profile_id: state.app_profile_id.clone(),
                row_key: row.clone(),
                predicate: Some(predicate),
                true_mutations,
                false_mutations,
            })
        };
        if let Some(c) = &current {
            let predicate = RowFilter::Chain(alloc::vec![
                latest(),
                family(FAMILY_OPS),
                RowFilter::ColumnQualifierRegex(COLUMN_HASH.to_vec()),
                RowFilter::ValueRegex(c.hash.clone().into_bytes()),
            ]);
            let mut mutations = sets;
            let end = ts.0 - 1_000_000;
            if end > 0 {
                for q in [COLUMN_HASH, COLUMN_OPS] {
                    mutations.push(Mutation::DeleteFromColumn {
                        family: FAMILY_OPS.into(),
                        qualifier: q.to_vec(),
                        range: Some(TimestampRange { start: 0, end }),
                    });
                }
            }
            let id = ctx.unary(request(predicate, mutations, Vec::new()));
            let matched = matched_of(ctx.wait(id).await).map_err(store_error)?;
            if !matched {
                state.ops_cache.remove(&row);
                continue;
            }
        } else {
            let predicate = RowFilter::Chain(alloc::vec![
                family(FAMILY_OPS),
                RowFilter::ColumnQualifierRegex(COLUMN_HASH.to_vec()),
            ]);
            let id = ctx.unary(request(predicate, Vec::new(), sets));
            match matched_of(ctx.wait(id).await) {
                Ok(false) => {}
                Ok(true) => {
                    state.ops_cache.remove(&row);
                    continue;
                }
                Err(_) => {
                    state.ops_cache.remove(&row);
                    let b = backoff.get_or_insert_with(|| ctx.backoff());
                    let now = ctx.now();
                    // No room before the deadline: sleep into it and end `aborted`.
                    let at = b.next_retry_at(now).unwrap_or(b.deadline());
                    ctx.sleep_until(at).await;
                    continue;
                }
            }
        }
        state.ops_cache.insert(
            row,
            CachedOps {
                ops: new.clone(),
                hash: new_hash,
                ts_hash: ts,
            },
        );
        return Ok(new);
    }
}

// ---------------------------------------------------------------- Put (§10, §11.6)

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
pub(crate) fn check_put(
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

/// `Put(commit, entries, ts)` in the state's layout.
pub(crate) async fn put(
    ctx: Ctx,
    state: &mut TraceStoreState,
    repo_index: i64,
    commit_time: Option<Timestamp>,
    entries: Vec<PutEntry>,
    ts: Timestamp,
) -> Result<(), TraceStoreError> {
    if entries.is_empty() {
        return Ok(());
    }
    let pos = validate_put(state, repo_index, commit_time, &entries, ts)?;
    let mut ps = ParamSet::new();
    for e in &entries {
        add_params(&mut ps, &e.params);
    }
    let ops = update_ops(&ctx, state, pos.tile_key, &ps).await?;
    let mut encoded = Vec::with_capacity(entries.len());
    for e in &entries {
        let enc = ops.encode_params(&e.params)?;
        let row = trace_row_name(pos.tile_key, enc.as_bytes());
        if row.len() > MAX_ROW_KEY_BYTES {
            return Err(TraceStoreError::RowKeyTooLong);
        }
        encoded.push(enc);
    }
    let ts = ts.truncate_to_millis();
    let mut rows: Vec<MutateRowsEntry> = Vec::new();
    match state.layout {
        Layout::Md5 => {
            let qualifier = md5_trace_qualifier(pos.offset);
            for (e, enc) in entries.iter().zip(&encoded) {
                let mut m = alloc::vec![set_cell(
                    FAMILY_TRACE,
                    &qualifier,
                    ts,
                    digest_to_cell(&e.digest)
                )];
                let trace_row = trace_row_name(pos.tile_key, enc.as_bytes());
                if e.options.is_empty() {
                    rows.push(MutateRowsEntry {
                        row_key: trace_row,
                        mutations: m,
                    });
                    continue;
                }
                let options_row = options_row_name(pos.tile_key, enc.as_bytes());
                if options_row.len() > MAX_ROW_KEY_BYTES {
                    return Err(TraceStoreError::RowKeyTooLong);
                }
                let commit_ts = commit_time.unwrap_or_default().truncate_to_millis();
                m.push(set_cell(
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
        }
        Layout::DigestId => {
            let digests: Vec<String> = entries.iter().map(|e| e.digest.clone()).collect();
            let ids = assign_digest_ids(&ctx, state, &digests).await?;
            let qualifier = digest_id_trace_qualifier(pos.offset);
            for ((e, enc), id) in entries.iter().zip(&encoded).zip(ids) {
                let _ = e;
                rows.push(MutateRowsEntry {
                    row_key: trace_row_name(pos.tile_key, enc.as_bytes()),
                    mutations: digest_id_trace_mutations(&qualifier, ts, id),
                });
            }
        }
    }
    write_chunks(&ctx, state, rows).await
}

/// Sends entries in chunks of [`PUT_CHUNK`], all at once; fails with the lowest-numbered
/// failed chunk's error after all completed.
async fn write_chunks(
    ctx: &Ctx,
    state: &TraceStoreState,
    rows: Vec<MutateRowsEntry>,
) -> Result<(), TraceStoreError> {
    let mut ids = Vec::new();
    let mut rest = rows;
    while !rest.is_empty() {
        let tail = rest.split_off(rest.len().min(PUT_CHUNK));
        ids.push(ctx.mutate_rows(MutateRowsRequest {
            table: state.table.clone(),
            app_profile_id: state.app_profile_id.clone(),
            entries: rest,
        }));
        rest = tail;
    }
    let outcomes = ctx.wait_all(&ids).await;
    for outcome in outcomes {
        match outcome.map_err(store_error)? {
            ChildOutput::Mutated(results) => {
                if let Some(Err(e)) = results.into_iter().map(|r| r.result).find(Result::is_err) {
                    return Err(TraceStoreError::WriteFailed {
                        code: e.code,
                        message: e.message,
                    });
                }
            }
            _ => return Err(unexpected("MutateRows")),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- ids (§11.3)

/// `AllocateDigestIds(n)`. The pooled ids stay in the pool until the increment answered, so
/// an error or an abort leaves the pool as it was.
pub(crate) async fn allocate_digest_ids(
    ctx: &Ctx,
    state: &mut TraceStoreState,
    n: usize,
) -> Result<Vec<u64>, TraceStoreError> {
    let k = n.min(state.pool.len());
    let m = n - k;
    if m == 0 {
        return Ok(state.pool.drain(..k).collect());
    }
    let amount = m as u64 + RESERVED_IDS;
    let id = ctx.unary(Request::ReadModifyWriteRow(ReadModifyWriteRowRequest {
        table: state.table.clone(),
        app_profile_id: state.app_profile_id.clone(),
        row_key: id_counter_row_name(),
        rules: alloc::vec![ReadModifyWriteRule {
            family: FAMILY_ID_COUNTER.into(),
            qualifier: COLUMN_ID_COUNTER.to_vec(),
            op: RuleOp::IncrementAmount(amount as i64),
        }],
    }));
    let row = match ctx.wait(id).await.map_err(store_error)? {
        ChildOutput::Unary(Response::ReadModifyWriteRow(row)) => row,
        _ => return Err(unexpected("ReadModifyWriteRow")),
    };
    let cells: Vec<_> = row
        .cells
        .iter()
        .filter(|c| c.family == FAMILY_ID_COUNTER)
        .collect();
    let [cell] = cells.as_slice() else {
        return Err(TraceStoreError::BadIdCounter {
            reason: "malformed id counter response",
        });
    };
    let max = decode_id_counter(&cell.value)?;
    let reserved = reserved_ids(max, amount)?;
    let mut out: Vec<u64> = state.pool.drain(..k).collect();
    let mut fresh = reserved;
    out.extend(fresh.by_ref().take(m));
    state.pool.extend(fresh);
    Ok(out)
}

// ---------------------------------------------------------------- digest map (§11.4, §11.5)

fn merge_map_rows(cache: &mut DigestCache, rows: &[Row]) -> Result<(), TraceStoreError> {
    let mut entries = Vec::new();
    for row in rows {
        for cell in row.cells.iter().filter(|c| c.family == FAMILY_DIGEST_MAP) {
            let digest = digest_of_map_cell(&row.key, &cell.qualifier)?;
            let id = decode_digest_map_value(&cell.value)?;
            entries.push((digest, id));
        }
    }
    cache.merge(&entries)
}

fn map_filter() -> RowFilter {
    RowFilter::Chain(alloc::vec![family(FAMILY_DIGEST_MAP), latest()])
}

/// Row lookup of a set of normalized digests: one `ReadRows` of their map rows.
pub(crate) async fn lookup_digests(
    ctx: &Ctx,
    state: &mut TraceStoreState,
    digests: &BTreeSet<String>,
) -> Result<(), TraceStoreError> {
    let rows: BTreeSet<Vec<u8>> = digests.iter().filter_map(|d| digest_map_row(d)).collect();
    if rows.is_empty() {
        return Ok(());
    }
    let set = RowSet {
        row_keys: rows.into_iter().collect(),
        row_ranges: Vec::new(),
    };
    let id = ctx.read_rows(read_request(state, set, map_filter(), 0));
    let rows = rows_of(ctx.wait(id).await)?;
    merge_map_rows(&mut state.digests, &rows)
}

/// Full map read: 32 prefix scans together, merged in shard order.
pub(crate) async fn read_full_map(
    ctx: &Ctx,
    state: &mut TraceStoreState,
) -> Result<(), TraceStoreError> {
    let ids: Vec<ChildId> = (0..SHARDS)
        .map(|s| {
            let range = shard_prefix_range(s, TYPE_DIGEST_MAP, GLOBAL_TILE_KEY);
            ctx.read_rows(read_request(state, RowSet::range(range), map_filter(), 0))
        })
        .collect();
    let mut all = Vec::new();
    for outcome in ctx.wait_all(&ids).await {
        all.extend(rows_of(outcome)?);
    }
    merge_map_rows(&mut state.digests, &all)
}

/// Ids offered to new digests and not (yet) known to be written: returned to the pool when
/// the call ends, however it ends — conflicts in ascending order, then never-emitted inserts.
struct Offered<'p> {
    pool: &'p mut VecDeque<u64>,
    ids: Vec<u64>,
    conflicts: Vec<usize>,
    next: usize,
}

impl Drop for Offered<'_> {
    fn drop(&mut self) {
        self.conflicts.sort_unstable();
        for &i in &self.conflicts {
            if let Some(&id) = self.ids.get(i) {
                self.pool.push_back(id);
            }
        }
        self.pool.extend(self.ids.iter().skip(self.next).copied());
    }
}

/// `AssignDigestIds(digests)`: the id of every input digest (`""` and invalid -> 0).
pub(crate) async fn assign_digest_ids(
    ctx: &Ctx,
    state: &mut TraceStoreState,
    digests: &[String],
) -> Result<Vec<u64>, TraceStoreError> {
    let normalized: BTreeSet<String> = digests
        .iter()
        .map(|d| normalize_digest(d))
        .filter(|d| !d.is_empty())
        .collect();
    let mut unknown: BTreeSet<String> = normalized
        .iter()
        .filter(|d| state.digests.id(d).is_none())
        .cloned()
        .collect();
    if !unknown.is_empty() {
        lookup_digests(ctx, state, &unknown).await?;
        unknown.retain(|d| state.digests.id(d).is_none());
    }
    if !unknown.is_empty() {
        let new: Vec<String> = unknown.into_iter().collect();
        let ids = allocate_digest_ids(ctx, state, new.len()).await?;
        let ts = ctx.now().truncate_to_millis();
        let TraceStoreState {
            table,
            app_profile_id,
            digests: cache,
            pool,
            ..
        } = state;
        let mut offered = Offered {
            pool,
            ids,
            conflicts: Vec::new(),
            next: 0,
        };
        let mut pending: BTreeMap<ChildId, usize> = BTreeMap::new();
        let mut failure: Option<StoreError> = None;
        loop {
            while failure.is_none() && offered.next < new.len() && pending.len() < INSERT_WINDOW {
                let i = offered.next;
                let (Some(row), Some(q), Some(&id)) = (
                    digest_map_row(&new[i]),
                    digest_map_qualifier(&new[i]),
                    offered.ids.get(i),
                ) else {
                    return Err(TraceStoreError::CorruptDigestMap);
                };
                let child = ctx.unary(Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                    table: table.clone(),
                    app_profile_id: app_profile_id.clone(),
                    row_key: row,
                    predicate: Some(RowFilter::ColumnQualifierRegex(q.clone())),
                    true_mutations: Vec::new(),
                    false_mutations: alloc::vec![set_cell(
                        FAMILY_DIGEST_MAP,
                        &q,
                        ts,
                        encode_digest_map_value(id)
                    )],
                }));
                pending.insert(child, i);
                offered.next += 1;
            }
            if pending.is_empty() {
                break;
            }
            let (child, outcome) = ctx.wait_any(pending.keys().copied().collect()).await;
            let Some(i) = pending.remove(&child) else {
                continue;
            };
            match matched_of(outcome) {
                Ok(false) => {
                    let id = offered.ids.get(i).copied().unwrap_or_default();
                    cache.merge(&[(new[i].clone(), id)])?;
                }
                Ok(true) => offered.conflicts.push(i),
                // The cell may exist: this id is dropped, never returned.
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        let conflicts: BTreeSet<String> =
            offered.conflicts.iter().map(|&i| new[i].clone()).collect();
        drop(offered);
        if let Some(e) = failure {
            return Err(store_error(e));
        }
        if !conflicts.is_empty() {
            lookup_digests(ctx, state, &conflicts).await?;
            if conflicts.iter().any(|d| state.digests.id(d).is_none()) {
                return Err(TraceStoreError::CorruptDigestMap);
            }
        }
    }
    Ok(digests
        .iter()
        .map(|d| state.digests.id(&normalize_digest(d)).unwrap_or(0))
        .collect())
}

// ---------------------------------------------------------------- reads (§11.7, §12)

/// One slot of a trace in a tile as read: a digest (md5) or an id (digest-id).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Slot {
    Digest(String),
    Id(u64),
}

impl Slot {
    fn missing(layout: Layout) -> Slot {
        match layout {
            Layout::Md5 => Slot::Digest(String::new()),
            Layout::DigestId => Slot::Id(0),
        }
    }
}

struct RawTile {
    ops: OrderedParamSet,
    traces: Vec<(Vec<u8>, Vec<Slot>)>,
    options: BTreeMap<Vec<u8>, Params>,
}

/// `loadTile(tk)`: OPS read, 32 trace scans, (md5) 32 options scans, all together.
async fn load_tile(
    ctx: &Ctx,
    state: &mut TraceStoreState,
    tile_key: i32,
) -> Result<RawTile, TraceStoreError> {
    let layout = state.layout;
    let ops_id = ctx.read_rows(ops_read_request(state, tile_key));
    let trace_filter = RowFilter::Chain(alloc::vec![
        family(FAMILY_TRACE),
        latest(),
        RowFilter::CellsPerRowLimit(256)
    ]);
    let trace_ids: Vec<ChildId> = (0..SHARDS)
        .map(|s| {
            ctx.read_rows(read_request(
                state,
                RowSet::range(shard_prefix_range(s, TYPE_TRACE, tile_key)),
                trace_filter.clone(),
                0,
            ))
        })
        .collect();
    let options_ids: Vec<ChildId> = if layout == Layout::Md5 {
        let filter = RowFilter::Chain(alloc::vec![
            family(FAMILY_OPTIONS),
            latest(),
            RowFilter::CellsPerRowLimit(1)
        ]);
        (0..SHARDS)
            .map(|s| {
                ctx.read_rows(read_request(
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
    let ops_rows = rows_of(ctx.wait(ops_id).await)?;
    let mut trace_rows = Vec::new();
    for outcome in ctx.wait_all(&trace_ids).await {
        trace_rows.extend(rows_of(outcome)?);
    }
    let mut options_rows = Vec::new();
    for outcome in ctx.wait_all(&options_ids).await {
        options_rows.extend(rows_of(outcome)?);
    }
    let ops = take_ops_read(state, tile_key, &ops_rows)?
        .map(|c| c.ops)
        .unwrap_or_default();
    let mut traces = Vec::with_capacity(trace_rows.len());
    for row in &trace_rows {
        let mut slots = alloc::vec![Slot::missing(layout); TILE_SIZE as usize];
        for cell in row.cells.iter().filter(|c| c.family == FAMILY_TRACE) {
            let i = parse_trace_qualifier(&cell.qualifier)? as usize;
            let slot = match layout {
                Layout::Md5 => Slot::Digest(cell_to_digest(&cell.value)),
                Layout::DigestId => Slot::Id(decode_digest_id_cell(&cell.value)?),
            };
            if let Some(s) = slots.get_mut(i) {
                *s = slot;
            }
        }
        traces.push((extract_subkey(&row.key).to_vec(), slots));
    }
    let mut options = BTreeMap::new();
    for row in &options_rows {
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
        options,
    })
}

struct Assembled {
    n_commits: usize,
    traces: BTreeMap<String, (Params, Params, Vec<Slot>)>,
    paramset: ParamSet,
}

/// `getTracesInRange(startTK, endTK, startOff, endOff)`, tiles loaded oldest first, then ids
/// resolved (digest-id), returning digests.
async fn traces_in_range(
    ctx: &Ctx,
    state: &mut TraceStoreState,
    start_tk: i32,
    end_tk: i32,
    start_off: u32,
    end_off: u32,
) -> Result<Tile, TraceStoreError> {
    if start_tk < end_tk {
        return Err(TraceStoreError::IncorrectTileMath);
    }
    let n_tiles = (start_tk - end_tk) as usize + 1;
    let n_commits =
        (start_tk - end_tk) as i64 * 256 + i64::from(end_off) - i64::from(start_off) + 1;
    if n_commits <= 0 {
        return Err(TraceStoreError::IncorrectTileMath);
    }
    let n_commits = n_commits as usize;
    let mut tiles = Vec::with_capacity(n_tiles);
    for i in 0..n_tiles {
        tiles.push(load_tile(ctx, state, start_tk - i as i32).await?);
    }
    let layout = state.layout;
    let mut out = Assembled {
        n_commits,
        traces: BTreeMap::new(),
        paramset: ParamSet::new(),
    };
    let mut pos = n_commits;
    for idx in (0..n_tiles).rev() {
        let a = if idx == 0 { start_off } else { 0 } as usize;
        let b = if idx == n_tiles - 1 { end_off } else { 255 } as usize;
        let len = b - a + 1;
        pos = pos
            .checked_sub(len)
            .ok_or(TraceStoreError::IncorrectTileMath)?;
        if idx == 0 && pos != 0 {
            return Err(TraceStoreError::IncorrectTileMath);
        }
        let tile = &tiles[idx];
        for (subkey, slots) in &tile.traces {
            // A trace written before its OPS was readable is skipped (reproduce).
            let Ok(params) = tile.ops.decode_params(subkey) else {
                continue;
            };
            let key = trace_id_text(&params);
            let options = tile.options.get(subkey).cloned().unwrap_or_default();
            let entry = out.traces.entry(key).or_insert_with(|| {
                add_params(&mut out.paramset, &params);
                add_params(&mut out.paramset, &options);
                (
                    params.clone(),
                    options.clone(),
                    alloc::vec![Slot::missing(layout); n_commits],
                )
            });
            entry.2[pos..pos + len].clone_from_slice(&slots[a..a + len]);
        }
    }
    normalize_param_set(&mut out.paramset);
    resolve(ctx, state, out).await
}

/// Resolves ids to digests (digest-id layout): one full map read if an id is not cached.
async fn resolve(
    ctx: &Ctx,
    state: &mut TraceStoreState,
    assembled: Assembled,
) -> Result<Tile, TraceStoreError> {
    let ids: BTreeSet<u64> = assembled
        .traces
        .values()
        .flat_map(|t| t.2.iter())
        .filter_map(|s| match s {
            Slot::Id(id) if *id != 0 => Some(*id),
            _ => None,
        })
        .collect();
    if ids.iter().any(|&id| state.digests.digest(id).is_none()) {
        read_full_map(ctx, state).await?;
    }
    if let Some(&id) = ids.iter().find(|&&id| state.digests.digest(id).is_none()) {
        return Err(TraceStoreError::UnknownDigestId(id));
    }
    let traces = assembled
        .traces
        .into_iter()
        .map(|(key, (params, options, slots))| {
            let digests = slots
                .into_iter()
                .map(|s| match s {
                    Slot::Digest(d) => d,
                    Slot::Id(id) => String::from(state.digests.digest(id).unwrap_or_default()),
                })
                .collect();
            (
                key,
                Trace {
                    params,
                    options,
                    digests,
                },
            )
        })
        .collect();
    Ok(Tile {
        commits: (0..assembled.n_commits as u32).collect(),
        traces,
        paramset: assembled.paramset,
    })
}

/// `ReadRange(first, last)`.
pub(crate) async fn read_range(
    ctx: Ctx,
    state: &mut TraceStoreState,
    first: i64,
    last: i64,
) -> Result<Tile, TraceStoreError> {
    let (a, b) = check_range(first, last)?;
    let mut tile = traces_in_range(&ctx, state, a.tile_key, b.tile_key, a.offset, b.offset).await?;
    tile.commits = (first as u32..=last as u32).collect();
    Ok(tile)
}

/// Validates a commit range.
pub(crate) fn check_range(
    first: i64,
    last: i64,
) -> Result<(TilePosition, TilePosition), TraceStoreError> {
    let a = repo_index_position(first)?;
    let b = repo_index_position(last)?;
    if first > last {
        return Err(TraceStoreError::BadRepoIndex);
    }
    Ok((a, b))
}

/// `ReadDense(last, n)` (`GetDenseTile`).
pub(crate) async fn read_dense(
    ctx: Ctx,
    state: &mut TraceStoreState,
    last: i64,
    n: usize,
) -> Result<Tile, TraceStoreError> {
    let end = repo_index_position(last)?;
    if n == 0 {
        return Err(TraceStoreError::BadArgument);
    }
    let oldest = tile_key(0);
    let mut end_tk = end.tile_key;
    let mut end_idx = end.offset;
    let mut start_tk = end_tk;
    let mut k = n as i64 - i64::from(end_idx);
    while k > 0 && start_tk < oldest {
        k -= 256;
        start_tk += 1;
    }
    let mut found: Vec<u32> = Vec::new();
    let mut traces: BTreeMap<String, Trace> = BTreeMap::new();
    let mut paramset = ParamSet::new();
    for _ in 0..MAX_DENSE_STEPS {
        let range = traces_in_range(&ctx, state, start_tk, end_tk, 0, end_idx).await?;
        let tile_start = tile_index_of_key(start_tk).unwrap_or(0) * TILE_SIZE;
        let width = (start_tk - end_tk) as usize * 256 + end_idx as usize + 1;
        let mut filled: Vec<usize> = (0..width)
            .filter(|&p| {
                range
                    .traces
                    .values()
                    .any(|t| t.digests.get(p).is_some_and(|d| !d.is_empty()))
            })
            .collect();
        let want = n - found.len();
        if filled.len() > want {
            filled.drain(..filled.len() - want);
        }
        for (key, values) in &range.paramset {
            for v in values {
                let list = paramset.entry(key.clone()).or_default();
                if !list.contains(v) {
                    list.push(v.clone());
                }
            }
        }
        if !filled.is_empty() {
            let had = found.len();
            for t in traces.values_mut() {
                let mut cols: Vec<String> = alloc::vec![String::new(); filled.len()];
                cols.append(&mut t.digests);
                t.digests = cols;
            }
            for (key, t) in range.traces {
                let cols: Vec<String> = filled
                    .iter()
                    .map(|&p| t.digests.get(p).cloned().unwrap_or_default())
                    .collect();
                let entry = traces.entry(key).or_insert_with(|| Trace {
                    params: t.params.clone(),
                    options: t.options.clone(),
                    digests: alloc::vec![String::new(); filled.len() + had],
                });
                entry.digests[..filled.len()].clone_from_slice(&cols);
            }
            let mut commits: Vec<u32> = filled.iter().map(|&p| tile_start + p as u32).collect();
            commits.append(&mut found);
            found = commits;
        }
        if found.len() == n || start_tk >= oldest {
            break;
        }
        start_tk += 1;
        end_tk = start_tk;
        end_idx = 255;
    }
    if found.is_empty() {
        return Ok(Tile::default());
    }
    normalize_param_set(&mut paramset);
    Ok(Tile {
        commits: found,
        traces,
        paramset,
    })
}

/// `NewestTile`: the tile index of the first OPS row, `None` on a table without tiles.
pub(crate) async fn newest_tile(
    ctx: Ctx,
    state: &mut TraceStoreState,
) -> Result<Option<u32>, TraceStoreError> {
    let filter = RowFilter::Chain(alloc::vec![
        family(FAMILY_OPS),
        RowFilter::ColumnQualifierRegex(COLUMN_HASH.to_vec()),
        RowFilter::StripValue,
    ]);
    let request = read_request(
        state,
        RowSet::range(rowkit_codec::model::RowRange::prefix(OPS_ROWS_PREFIX)),
        filter,
        1,
    );
    let id = ctx.read_rows(request);
    let rows = rows_of(ctx.wait(id).await)?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let key = parse_ops_row_tile_key(&row.key)?;
    Ok(tile_index_of_key(key))
}
