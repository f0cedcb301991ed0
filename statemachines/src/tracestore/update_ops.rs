//! `UpdateParamSet` (`updateOrderedParamSet(tileKey, ps)`, `spec/tracestore.md` 9): read the
//! tile's OPS (or take it from the cache), and when `ps` adds something, compare-and-swap the
//! new OPS in on its hash; retried on conflict, with a back-off after an RPC error of the
//! new-row branch, bounded only by the operation deadline.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::model::{Mutation, RowFilter, Timestamp, TimestampRange};
use rowkit_codec::tracestore::cells::{COLUMN_HASH, COLUMN_OPS, FAMILY_OPS};
use rowkit_codec::tracestore::keys::ops_row_name;
use rowkit_codec::tracestore::{OrderedParamSet, ParamSet, encode_ops_gob, ops_hash};

use super::requests::{family, latest, ops_read_request, take_ops_read};
use super::state::{CachedOps, TraceStoreState};
use super::{Progress, TraceStoreEvent, TraceStoreSchema};
use crate::children::ChildId;
use crate::operation::{Flow, Io, settled};
use crate::{Backoff, CheckAndMutateRowRequest, Request, ready};

/// Where an OPS update stands.
#[derive(Debug)]
enum Phase {
    /// Top of the loop: take the cached OPS or read it.
    Start,
    /// The OPS `ReadRow` is out.
    ReadOps(ChildId),
    /// The compare-and-swap is out.
    Swap(Swap),
    /// Waiting one back-off delay after an RPC error of the new-row branch.
    Sleep,
    /// Ended (a flow that ended is never advanced again).
    Done,
}

/// A compare-and-swap in flight; on success `new` becomes the cached OPS.
#[derive(Debug)]
struct Swap {
    child: ChildId,
    existed: bool,
    new: Arc<OrderedParamSet>,
    hash: String,
    ts: Timestamp,
}

/// The OPS update of one tile (a sub-flow of Put); outputs the tile's OPS as written or found
/// (shared with the cache: a tile's OPS holds every trace's params, too much to copy per Put).
#[derive(Debug)]
pub(crate) struct UpdateOps {
    tile_key: i32,
    row: Vec<u8>,
    ps: ParamSet,
    /// The order new keys are appended in (empty: ascending, as a Put adds them).
    key_order: Vec<String>,
    /// Created at the first RPC error (it draws a seed from the operation's stream).
    backoff: Option<Backoff>,
    phase: Phase,
}

impl UpdateOps {
    /// Adds `ps` to the OPS of the tile `tile_key`.
    pub(crate) fn new(tile_key: i32, ps: ParamSet) -> UpdateOps {
        UpdateOps::in_key_order(tile_key, ps, Vec::new())
    }

    /// Adds `ps` to the OPS of the tile `tile_key`, new keys in `key_order` first
    /// ([`OrderedParamSet::update_in_key_order`]).
    pub(crate) fn in_key_order(tile_key: i32, ps: ParamSet, key_order: Vec<String>) -> UpdateOps {
        UpdateOps {
            tile_key,
            row: ops_row_name(tile_key),
            ps,
            key_order,
            backoff: None,
            phase: Phase::Start,
        }
    }

    /// Sends the compare-and-swap of `new` (`ps` added to the current OPS) over `current`.
    fn send_swap(
        &self,
        io: &mut Io<TraceStoreEvent>,
        state: &TraceStoreState,
        current: Option<CachedOps>,
        new: Arc<OrderedParamSet>,
    ) -> Swap {
        let bytes = encode_ops_gob(&new);
        let hash = ops_hash(&bytes);
        // Never older than the stored cells, or LatestN(1) would hide the update (fix, §9).
        let mut ts = io.now().truncate_to_millis();
        if let Some(c) = &current {
            ts = ts.max(c.ts_hash.saturating_add_micros(1000));
        }
        let sets = alloc::vec![
            Mutation::set_cell(FAMILY_OPS, COLUMN_HASH, ts, hash.clone().into_bytes()),
            Mutation::set_cell(FAMILY_OPS, COLUMN_OPS, ts, bytes),
        ];
        let request = |predicate, true_mutations, false_mutations| {
            Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                table: state.table.clone(),
                app_profile_id: state.app_profile_id.clone(),
                row_key: self.row.clone(),
                predicate: Some(predicate),
                true_mutations,
                false_mutations,
            })
        };
        let swap = match &current {
            Some(c) => {
                let predicate = RowFilter::Chain(alloc::vec![
                    latest(),
                    family(FAMILY_OPS),
                    RowFilter::ColumnQualifierRegex(COLUMN_HASH.to_vec()),
                    RowFilter::ValueRegex(c.hash.clone().into_bytes()),
                ]);
                let mut mutations = sets;
                // An end of 0 would mean "unbounded" and delete the new cells (fix, §9).
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
                request(predicate, mutations, Vec::new())
            }
            None => {
                let predicate = RowFilter::Chain(alloc::vec![
                    family(FAMILY_OPS),
                    RowFilter::ColumnQualifierRegex(COLUMN_HASH.to_vec()),
                ]);
                request(predicate, Vec::new(), sets)
            }
        };
        Swap {
            child: io.unary(swap),
            existed: current.is_some(),
            new,
            hash,
            ts,
        }
    }
}

impl Flow for UpdateOps {
    type Schema = TraceStoreSchema;
    type Output = Arc<OrderedParamSet>;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<Arc<OrderedParamSet>> {
        loop {
            // The tile's current OPS, once known (taken from the cache or read).
            let current = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Start => match state.ops_cache.get(&self.row).cloned() {
                    Some(cached) => Some(cached),
                    None => {
                        let read = io.read_row(ops_read_request(state, self.tile_key));
                        self.phase = Phase::ReadOps(read);
                        continue;
                    }
                },
                Phase::ReadOps(child) => {
                    let row = ready!(io.row(child), self.phase => Phase::ReadOps(child));
                    take_ops_read(state, self.tile_key, row.as_ref())?
                }
                Phase::Swap(swap) => {
                    let matched = ready!(
                        settled(io.matched(swap.child)),
                        self.phase => Phase::Swap(swap)
                    );
                    let retry = match (swap.existed, matched) {
                        // Existing row: an RPC error fails the Put (reproduce).
                        (true, Err(e)) => return Err(e),
                        (true, Ok(matched)) => !matched,
                        (false, Ok(matched)) => matched,
                        // New row: an RPC error is retried after one back-off delay.
                        (false, Err(_)) => {
                            state.ops_cache.remove(&self.row);
                            let now = io.now();
                            let backoff = self.backoff.get_or_insert_with(|| io.backoff());
                            // No room before the deadline: sleep into it and end `aborted`.
                            let at = backoff.next_retry_at(now).unwrap_or(backoff.deadline());
                            io.sleep_until(at);
                            self.phase = Phase::Sleep;
                            continue;
                        }
                    };
                    if retry {
                        // Someone else changed the row: re-read it at once.
                        state.ops_cache.remove(&self.row);
                        self.phase = Phase::Start;
                        continue;
                    }
                    state.ops_cache.insert(
                        self.row.clone(),
                        CachedOps {
                            ops: Arc::clone(&swap.new),
                            hash: swap.hash,
                            ts_hash: swap.ts,
                        },
                    );
                    return Ok(Some(swap.new));
                }
                Phase::Sleep => {
                    if io.sleeping() {
                        self.phase = Phase::Sleep;
                        return Ok(None);
                    }
                    self.phase = Phase::Start;
                    continue;
                }
                Phase::Done => return Ok(None),
            };
            // With the current OPS known: done if `ps` adds nothing, else compare-and-swap.
            let ops = current
                .as_ref()
                .map(|c| Arc::clone(&c.ops))
                .unwrap_or_default();
            if ops.delta(&self.ps).is_empty() {
                return Ok(Some(ops));
            }
            // The cache keeps the current OPS until the swap succeeds.
            let mut new = Arc::unwrap_or_clone(ops);
            new.update_in_key_order(&self.key_order, &self.ps);
            self.phase = Phase::Swap(self.send_swap(io, state, current, Arc::new(new)));
        }
    }
}
