//! `AssignDigestIds(digests)` (`spec/tracestore.md` 11.5): lookup of the digests the cache
//! does not know, allocation of ids for those the map does not hold, conditional inserts with
//! a window, and a re-read of the digests whose insert lost.
//!
//! Ids offered to inserts go back to the pool when the call ends, however it ends — those
//! whose insert lost to another writer (in ascending digest order), then those whose insert
//! was never sent; the id of an insert that failed or never answered is dropped, since its
//! cell may exist.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::model::{Mutation, RowFilter, Timestamp};
use rowkit_codec::tracestore::CodecError;
use rowkit_codec::tracestore::cells::{
    FAMILY_DIGEST_MAP, digest_map_qualifier, digest_map_row, encode_digest_map_value,
    normalize_digest,
};

use super::allocate::AllocateDigestIdsFlow;
use super::digest_map::LookupDigests;
use super::state::TraceStoreState;
use super::{Progress, TraceStoreError, TraceStoreEvent, TraceStoreSchema, begin};
use crate::children::ChildId;
use crate::operation::{ContextArg, Flow, Io, Operation, Start, settled};
use crate::{CheckAndMutateRowRequest, Request, ready};

/// Digest-map inserts outstanding at once.
pub(crate) const INSERT_WINDOW: usize = 100;

/// `AssignDigestIds(digests)` (digest-id layout): the id of every input digest, in input
/// order (`""` and invalid digests -> 0).
pub type AssignDigestIds<'a> = Operation<'a, AssignDigestIdsFlow>;

impl<'a> AssignDigestIds<'a> {
    /// Assigns ids to `digests` as `start` says.
    pub fn new(
        state: impl Into<ContextArg<'a, TraceStoreState>>,
        digests: Vec<String>,
        start: Start,
    ) -> Self {
        let flow = AssignDigestIdsFlow::new(digests);
        begin(state, Ok(flow), start)
    }
}

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
    failure: Option<TraceStoreError>,
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
    fn emit(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &TraceStoreState,
    ) -> Result<(), TraceStoreError> {
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
                return Err(TraceStoreError::Codec(CodecError::CorruptDigestMap));
            };
            // "Set only if the column is absent" (a qualifier regex, no family filter: reproduce).
            let child = io.unary(Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                table: state.table.clone(),
                app_profile_id: state.app_profile_id.clone(),
                row_key: row,
                predicate: Some(RowFilter::ColumnQualifierRegex(q.clone())),
                true_mutations: Vec::new(),
                false_mutations: alloc::vec![Mutation::set_cell(
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
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Result<bool, TraceStoreError> {
        loop {
            self.emit(io, state)?;
            if self.pending.is_empty() {
                return Ok(true);
            }
            // The answered insert with the lowest id.
            let answered = self
                .pending
                .iter()
                .find_map(|(&child, &i)| settled(io.matched(child)).ok()?.map(|m| (child, i, m)));
            let Some((child, i, matched)) = answered else {
                return Ok(false);
            };
            self.pending.remove(&child);
            match matched {
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
enum Phase {
    /// Nothing sent yet.
    Start,
    /// Looking up the digests the cache does not know.
    Lookup {
        lookup: LookupDigests,
        unknown: BTreeSet<String>,
    },
    /// Allocating ids for the digests the map does not hold (ascending).
    Allocate {
        allocate: AllocateDigestIdsFlow,
        new: Vec<String>,
    },
    /// Inserting the new digests.
    Insert(Inserts),
    /// Re-reading the rows of the digests whose insert lost.
    Reread {
        lookup: LookupDigests,
        conflicts: BTreeSet<String>,
    },
    /// Ended (nothing left to release; a flow that ended is never advanced again).
    Done,
}

/// The flow of [`AssignDigestIds`]: the id of every input digest (`""` and invalid -> 0).
#[derive(Debug)]
pub struct AssignDigestIdsFlow {
    digests: Vec<String>,
    phase: Phase,
}

impl AssignDigestIdsFlow {
    /// Assigns ids to `digests` (also a sub-flow of [`Put`](super::Put)).
    pub(crate) fn new(digests: Vec<String>) -> AssignDigestIdsFlow {
        AssignDigestIdsFlow {
            digests,
            phase: Phase::Start,
        }
    }

    /// The answer, once every digest is in the cache.
    fn answer(&self, state: &TraceStoreState) -> Vec<u64> {
        self.digests
            .iter()
            .map(|d| state.digests.id(&normalize_digest(d)).unwrap_or(0))
            .collect()
    }
}

impl Flow for AssignDigestIdsFlow {
    type Schema = TraceStoreSchema;
    type Output = Vec<u64>;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<Vec<u64>> {
        loop {
            self.phase = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Start => {
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
                    Phase::Lookup { lookup, unknown }
                }
                Phase::Lookup {
                    mut lookup,
                    unknown,
                } => {
                    ready!(lookup.advance(io, state), self.phase => Phase::Lookup { lookup, unknown });
                    let new: Vec<String> = unknown
                        .into_iter()
                        .filter(|d| state.digests.id(d).is_none())
                        .collect();
                    if new.is_empty() {
                        return Ok(Some(self.answer(state)));
                    }
                    let allocate = AllocateDigestIdsFlow::new(new.len());
                    Phase::Allocate { allocate, new }
                }
                Phase::Allocate { mut allocate, new } => {
                    let ids = ready!(
                        allocate.advance(io, state),
                        self.phase => Phase::Allocate { allocate, new }
                    );
                    Phase::Insert(Inserts {
                        new,
                        ids,
                        ts: io.now().truncate_to_millis(),
                        next: 0,
                        pending: BTreeMap::new(),
                        conflicts: Vec::new(),
                        failure: None,
                    })
                }
                Phase::Insert(mut inserts) => {
                    match inserts.advance(io, state) {
                        Ok(false) => {
                            self.phase = Phase::Insert(inserts);
                            return Ok(None);
                        }
                        Ok(true) => {}
                        Err(e) => {
                            inserts.release(state);
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
                        return Err(e);
                    }
                    if conflicts.is_empty() {
                        return Ok(Some(self.answer(state)));
                    }
                    let lookup = LookupDigests::start(io, state, &conflicts);
                    Phase::Reread { lookup, conflicts }
                }
                Phase::Reread {
                    mut lookup,
                    conflicts,
                } => {
                    ready!(
                        lookup.advance(io, state),
                        self.phase => Phase::Reread { lookup, conflicts }
                    );
                    if conflicts.iter().any(|d| state.digests.id(d).is_none()) {
                        return Err(TraceStoreError::Codec(CodecError::CorruptDigestMap));
                    }
                    return Ok(Some(self.answer(state)));
                }
                Phase::Done => return Ok(None),
            }
        }
    }

    fn release(&mut self, state: &mut TraceStoreState) {
        if let Phase::Insert(inserts) = &mut self.phase {
            inserts.release(state);
        }
        self.phase = Phase::Done;
    }
}
