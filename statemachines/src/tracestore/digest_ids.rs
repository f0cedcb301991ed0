//! The digest-id layout's ids and digest map (`spec/tracestore.md` 11.3-11.5):
//! [`AllocateDigestIds`] (counter increment by batch, local pool), [`LookupDigests`] (one
//! `ReadRows` of the map rows of some digests), [`ReadFullMap`] (32 prefix scans) and
//! [`AssignDigestIds`] (lookup, allocation, conditional inserts with a window, re-read on
//! conflict).
//!
//! Pool rules: the pooled ids an allocation takes stay in the pool until the increment answers,
//! so an error or an abort leaves the pool as it was. Ids offered to inserts go back to the
//! pool when the call ends, however it ends — those whose insert lost to another writer (in
//! ascending digest order), then those whose insert was never sent; the id of an insert that
//! failed or never answered is dropped, since its cell may exist.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::model::{ReadModifyWriteRule, RowFilter, RowSet, RuleOp, Timestamp};
use rowkit_codec::tracestore::TraceStoreError;
use rowkit_codec::tracestore::cells::{
    COLUMN_ID_COUNTER, FAMILY_DIGEST_MAP, FAMILY_ID_COUNTER, RESERVED_IDS, decode_id_counter,
    digest_map_qualifier, digest_map_row, encode_digest_map_value, normalize_digest, reserved_ids,
};
use rowkit_codec::tracestore::keys::{
    GLOBAL_TILE_KEY, SHARDS, TYPE_DIGEST_MAP, id_counter_row_name, shard_prefix_range,
};

use super::op::{Flow, Io, Progress, WaitAll};
use super::requests::{
    map_filter, matched_of, merge_map_rows, read_request, rows_of, set_cell, store_error,
    unexpected,
};
use super::state::TraceStoreState;
use crate::children::{ChildId, ChildOutput};
use crate::{CheckAndMutateRowRequest, ReadModifyWriteRowRequest, Request, Response, StoreError};

/// Digest-map inserts outstanding at once.
pub(crate) const INSERT_WINDOW: usize = 100;

// ---------------------------------------------------------------- AllocateDigestIds (§11.3)

/// Where an allocation stands.
#[derive(Debug)]
enum AllocatePhase {
    /// Nothing sent yet.
    Start,
    /// The increment is out; `pooled` ids will come from the pool's front.
    Increment {
        child: ChildId,
        pooled: usize,
        missing: usize,
        amount: u64,
    },
}

/// `AllocateDigestIds(n)`: `n` distinct, never used ids, from the pool first.
#[derive(Debug)]
pub(crate) struct AllocateDigestIds {
    n: usize,
    phase: AllocatePhase,
}

impl AllocateDigestIds {
    /// Allocates `n` ids.
    pub(crate) fn new(n: usize) -> AllocateDigestIds {
        AllocateDigestIds {
            n,
            phase: AllocatePhase::Start,
        }
    }
}

impl Flow for AllocateDigestIds {
    type Output = Vec<u64>;

    fn advance(&mut self, io: &mut Io, state: &mut TraceStoreState) -> Progress<Vec<u64>> {
        match &self.phase {
            AllocatePhase::Start => {
                let pooled = self.n.min(state.pool.len());
                let missing = self.n - pooled;
                if missing == 0 {
                    return Ok(Some(state.take_pooled(pooled)));
                }
                let amount = missing as u64 + RESERVED_IDS;
                let child = io.unary(Request::ReadModifyWriteRow(ReadModifyWriteRowRequest {
                    table: state.table.clone(),
                    app_profile_id: state.app_profile_id.clone(),
                    row_key: id_counter_row_name(),
                    rules: alloc::vec![ReadModifyWriteRule {
                        family: FAMILY_ID_COUNTER.into(),
                        qualifier: COLUMN_ID_COUNTER.to_vec(),
                        op: RuleOp::IncrementAmount(amount as i64),
                    }],
                }));
                self.phase = AllocatePhase::Increment {
                    child,
                    pooled,
                    missing,
                    amount,
                };
                Ok(None)
            }
            &AllocatePhase::Increment {
                child,
                pooled,
                missing,
                amount,
            } => {
                let Some(outcome) = io.take(child) else {
                    return Ok(None);
                };
                let row = match outcome.map_err(store_error)? {
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
                let mut fresh = reserved_ids(max, amount)?;
                let mut out: Vec<u64> = state.take_pooled(pooled);
                out.extend(fresh.by_ref().take(missing));
                state.pool.extend(fresh);
                Ok(Some(out))
            }
        }
    }
}

// ---------------------------------------------------------------- map reads (§11.4)

/// Row lookup of a set of normalized digests: one `ReadRows` of their map rows (none when the
/// set is empty), merged into the digest cache.
#[derive(Debug)]
pub(crate) struct LookupDigests {
    child: Option<ChildId>,
}

impl LookupDigests {
    /// Sends the lookup of `digests`.
    pub(crate) fn start(
        io: &mut Io,
        state: &TraceStoreState,
        digests: &BTreeSet<String>,
    ) -> LookupDigests {
        let rows: BTreeSet<Vec<u8>> = digests.iter().filter_map(|d| digest_map_row(d)).collect();
        if rows.is_empty() {
            return LookupDigests { child: None };
        }
        let set = RowSet {
            row_keys: rows.into_iter().collect(),
            row_ranges: Vec::new(),
        };
        LookupDigests {
            child: Some(io.read_rows(read_request(state, set, map_filter(), 0))),
        }
    }
}

impl Flow for LookupDigests {
    type Output = ();

    fn advance(&mut self, io: &mut Io, state: &mut TraceStoreState) -> Progress<()> {
        let Some(child) = self.child else {
            return Ok(Some(()));
        };
        let Some(outcome) = io.take(child) else {
            return Ok(None);
        };
        let rows = rows_of(outcome)?;
        merge_map_rows(&mut state.digests, &rows)?;
        Ok(Some(()))
    }
}

/// Full map read: 32 prefix scans together, merged in shard order after all completed.
#[derive(Debug)]
pub(crate) struct ReadFullMap {
    scans: WaitAll,
}

impl ReadFullMap {
    /// Sends the 32 scans.
    pub(crate) fn start(io: &mut Io, state: &TraceStoreState) -> ReadFullMap {
        let ids = (0..SHARDS)
            .map(|s| {
                let range = shard_prefix_range(s, TYPE_DIGEST_MAP, GLOBAL_TILE_KEY);
                io.read_rows(read_request(state, RowSet::range(range), map_filter(), 0))
            })
            .collect();
        ReadFullMap {
            scans: WaitAll::new(ids),
        }
    }
}

impl Flow for ReadFullMap {
    type Output = ();

    fn advance(&mut self, io: &mut Io, state: &mut TraceStoreState) -> Progress<()> {
        let Some(outcomes) = self.scans.poll(io) else {
            return Ok(None);
        };
        let mut all = Vec::new();
        for outcome in outcomes {
            all.extend(rows_of(outcome)?);
        }
        merge_map_rows(&mut state.digests, &all)?;
        Ok(Some(()))
    }
}

// ---------------------------------------------------------------- AssignDigestIds (§11.5)

/// The conditional inserts of new digests, at most [`INSERT_WINDOW`] outstanding.
#[derive(Debug)]
struct Inserts {
    /// New digests, ascending.
    new: Vec<String>,
    /// `ids[i]` is offered to `new[i]`.
    ids: Vec<u64>,
    /// Cell timestamp of every insert of the call.
    ts: Timestamp,
    /// Inserts emitted so far (`new[..next]`).
    next: usize,
    /// Outstanding insert -> its digest's index.
    pending: BTreeMap<ChildId, usize>,
    /// Indices whose insert lost to another writer.
    conflicts: Vec<usize>,
    /// The first RPC error; no insert is emitted after it.
    failure: Option<StoreError>,
}

impl Inserts {
    /// Gives the offered ids that were never written back to the pool: conflicts in ascending
    /// order, then the never-emitted ones. Ids of failed or unanswered inserts are dropped.
    fn release(&mut self, state: &mut TraceStoreState) {
        self.conflicts.sort_unstable();
        for &i in &self.conflicts {
            if let Some(&id) = self.ids.get(i) {
                state.pool.push_back(id);
            }
        }
        state.pool.extend(self.ids.iter().skip(self.next).copied());
        self.conflicts.clear();
        self.next = self.ids.len();
    }

    /// Emits inserts up to the window.
    fn emit(&mut self, io: &mut Io, state: &TraceStoreState) -> Result<(), TraceStoreError> {
        while self.failure.is_none()
            && self.next < self.new.len()
            && self.pending.len() < INSERT_WINDOW
        {
            let i = self.next;
            let (Some(row), Some(q), Some(&id)) = (
                digest_map_row(&self.new[i]),
                digest_map_qualifier(&self.new[i]),
                self.ids.get(i),
            ) else {
                return Err(TraceStoreError::CorruptDigestMap);
            };
            // "Set only if the column is absent" (a qualifier regex, no family filter: reproduce).
            let child = io.unary(Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                table: state.table.clone(),
                app_profile_id: state.app_profile_id.clone(),
                row_key: row,
                predicate: Some(RowFilter::ColumnQualifierRegex(q.clone())),
                true_mutations: Vec::new(),
                false_mutations: alloc::vec![set_cell(
                    FAMILY_DIGEST_MAP,
                    &q,
                    self.ts,
                    encode_digest_map_value(id)
                )],
            }));
            self.pending.insert(child, i);
            self.next += 1;
        }
        Ok(())
    }

    /// Runs the window until every emitted insert answered: `Ok(true)` then.
    fn advance(
        &mut self,
        io: &mut Io,
        state: &mut TraceStoreState,
    ) -> Result<bool, TraceStoreError> {
        loop {
            self.emit(io, state)?;
            if self.pending.is_empty() {
                return Ok(true);
            }
            let ids: Vec<ChildId> = self.pending.keys().copied().collect();
            let Some((child, outcome)) = io.take_any(&ids) else {
                return Ok(false);
            };
            let Some(i) = self.pending.remove(&child) else {
                continue;
            };
            match matched_of(outcome) {
                Ok(false) => {
                    let id = self.ids.get(i).copied().unwrap_or_default();
                    state.digests.merge(&[(self.new[i].clone(), id)])?;
                }
                Ok(true) => self.conflicts.push(i),
                // The cell may exist: this id is dropped, never returned.
                Err(e) => {
                    self.failure.get_or_insert(e);
                }
            }
        }
    }
}

/// Where an assignment stands.
#[derive(Debug)]
enum AssignPhase {
    /// Nothing sent yet.
    Start,
    /// Looking up the digests the cache does not know.
    Lookup {
        lookup: LookupDigests,
        unknown: BTreeSet<String>,
    },
    /// Allocating ids for the digests the map does not hold (ascending).
    Allocate {
        allocate: AllocateDigestIds,
        new: Vec<String>,
    },
    /// Inserting the new digests.
    Insert(Inserts),
    /// Re-reading the rows of the digests whose insert lost.
    Reread {
        lookup: LookupDigests,
        conflicts: BTreeSet<String>,
    },
    /// Ended (nothing left to release).
    Done,
}

/// `AssignDigestIds(digests)`: the id of every input digest (`""` and invalid -> 0).
#[derive(Debug)]
pub(crate) struct AssignDigestIds {
    digests: Vec<String>,
    phase: AssignPhase,
}

impl AssignDigestIds {
    /// Assigns ids to `digests`.
    pub(crate) fn new(digests: Vec<String>) -> AssignDigestIds {
        AssignDigestIds {
            digests,
            phase: AssignPhase::Start,
        }
    }

    /// The answer, once every digest is in the cache.
    fn answer(&mut self, state: &TraceStoreState) -> Vec<u64> {
        self.phase = AssignPhase::Done;
        self.digests
            .iter()
            .map(|d| state.digests.id(&normalize_digest(d)).unwrap_or(0))
            .collect()
    }
}

impl Flow for AssignDigestIds {
    type Output = Vec<u64>;

    fn advance(&mut self, io: &mut Io, state: &mut TraceStoreState) -> Progress<Vec<u64>> {
        loop {
            match &mut self.phase {
                AssignPhase::Start => {
                    let unknown: BTreeSet<String> = self
                        .digests
                        .iter()
                        .map(|d| normalize_digest(d))
                        .filter(|d| !d.is_empty() && state.digests.id(d).is_none())
                        .collect();
                    if unknown.is_empty() {
                        return Ok(Some(self.answer(state)));
                    }
                    let lookup = LookupDigests::start(io, state, &unknown);
                    self.phase = AssignPhase::Lookup { lookup, unknown };
                }
                AssignPhase::Lookup { lookup, unknown } => {
                    if lookup.advance(io, state)?.is_none() {
                        return Ok(None);
                    }
                    let new: Vec<String> = core::mem::take(unknown)
                        .into_iter()
                        .filter(|d| state.digests.id(d).is_none())
                        .collect();
                    if new.is_empty() {
                        return Ok(Some(self.answer(state)));
                    }
                    let allocate = AllocateDigestIds::new(new.len());
                    self.phase = AssignPhase::Allocate { allocate, new };
                }
                AssignPhase::Allocate { allocate, new } => {
                    let Some(ids) = allocate.advance(io, state)? else {
                        return Ok(None);
                    };
                    self.phase = AssignPhase::Insert(Inserts {
                        new: core::mem::take(new),
                        ids,
                        ts: io.now().truncate_to_millis(),
                        next: 0,
                        pending: BTreeMap::new(),
                        conflicts: Vec::new(),
                        failure: None,
                    });
                }
                AssignPhase::Insert(inserts) => {
                    match inserts.advance(io, state) {
                        Ok(false) => return Ok(None),
                        Ok(true) => {}
                        Err(e) => {
                            inserts.release(state);
                            self.phase = AssignPhase::Done;
                            return Err(e);
                        }
                    }
                    let conflicts: BTreeSet<String> = inserts
                        .conflicts
                        .iter()
                        .map(|&i| inserts.new[i].clone())
                        .collect();
                    inserts.release(state);
                    if let Some(e) = inserts.failure.take() {
                        self.phase = AssignPhase::Done;
                        return Err(store_error(e));
                    }
                    if conflicts.is_empty() {
                        return Ok(Some(self.answer(state)));
                    }
                    let lookup = LookupDigests::start(io, state, &conflicts);
                    self.phase = AssignPhase::Reread { lookup, conflicts };
                }
                AssignPhase::Reread { lookup, conflicts } => {
                    if lookup.advance(io, state)?.is_none() {
                        return Ok(None);
                    }
                    if conflicts.iter().any(|d| state.digests.id(d).is_none()) {
                        return Err(TraceStoreError::CorruptDigestMap);
                    }
                    return Ok(Some(self.answer(state)));
                }
                AssignPhase::Done => return Ok(Some(self.answer(state))),
            }
        }
    }

    fn release(&mut self, state: &mut TraceStoreState) {
        if let AssignPhase::Insert(inserts) = &mut self.phase {
            inserts.release(state);
        }
        self.phase = AssignPhase::Done;
    }
}
