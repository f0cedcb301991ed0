//! `AddTriples` and `RemoveTriples` (spec §4): four entries per triple, sent as consecutive
//! `MutateRows` batches of at most [`MAX_BATCH_ENTRIES`] entries, one batch at a time. Entries
//! are built per batch, so only one batch is held at a time.

use alloc::vec::Vec;
use core::marker::PhantomData;

use rowkit_codec::model::{Mutation, TimestampRange};
use rowkit_codec::triples::keys::{self, TripleCell};
use rowkit_codec::triples::{KeyError, Triple};

use super::{MAX_BATCH_ENTRIES, OperationConfig, Progress, TriplesSchema, begin, failed};
use crate::children::ChildId;
use crate::operation::{Flow, Io, Operation, Start};
use crate::ready;
use crate::{MutateRowsEntry, MutateRowsRequest};

/// Writes triples (idempotent: cells have deterministic timestamps).
pub type AddTriples = Operation<'static, AddTriplesFlow>;
/// Removes exactly the given triples' cells (fix 9).
pub type RemoveTriples = Operation<'static, RemoveTriplesFlow>;

/// The flow of [`AddTriples`]: the triples' cells written batch after batch.
pub type AddTriplesFlow = CellBatches<SetCells>;
/// The flow of [`RemoveTriples`]: the triples' cells deleted batch after batch.
pub type RemoveTriplesFlow = CellBatches<DeleteCells>;

impl<C: CellChange> Operation<'static, CellBatches<C>> {
    /// `AddTriples(graph, triples)` or `RemoveTriples(graph, triples)` as `start` says; a graph id
    /// over the limit fails before any request.
    pub fn new(config: OperationConfig, graph: &[u8], triples: Vec<Triple>, start: Start) -> Self {
        Self::with_batch_entries(config, graph, triples, MAX_BATCH_ENTRIES, start)
    }

    /// As [`AddTriples::new`] with batches of at most `batch_entries` entries (rounded down to
    /// whole triples; tests exercise batching with small values).
    pub fn with_batch_entries(
        config: OperationConfig,
        graph: &[u8],
        triples: Vec<Triple>,
        batch_entries: usize,
        start: Start,
    ) -> Self {
        match CellBatches::new(graph, triples, batch_entries) {
            Ok(batches) => begin(config, start, batches),
            Err(e) => failed(config, e),
        }
    }
}

/// What a batch does with each of a triple's four cells: [`SetCells`] or [`DeleteCells`].
pub trait CellChange: core::fmt::Debug + sealed::Sealed {
    /// Whether the change deletes (the planted bug of the simulator's self-test drops the
    /// SPO entries of deletes only; not public API, only with `_planted_bugs`).
    #[cfg(feature = "_planted_bugs")]
    #[doc(hidden)]
    const DELETES: bool;

    /// What the change writes to each of a triple's four cells, computed once per triple
    /// (the triple's text is serialised once, not once per cell).
    type Value;

    /// The value of `triple`'s cells.
    fn value(triple: &Triple) -> Self::Value;

    /// The triple's text if `value` is it, so that the cells' timestamp does not serialise
    /// the triple again.
    fn text(value: &Self::Value) -> Option<&[u8]>;

    /// The mutation of `cell`, `value` being its triple's [`CellChange::value`].
    fn mutation(cell: &TripleCell, value: &Self::Value) -> Mutation;
}

mod sealed {
    /// Keeps [`super::CellChange`] to the two changes the spec defines.
    pub trait Sealed {}
    impl Sealed for super::SetCells {}
    impl Sealed for super::DeleteCells {}
}

/// [`AddTriples`]' change: each cell set to the triple's text.
#[derive(Debug)]
pub struct SetCells;

impl CellChange for SetCells {
    #[cfg(feature = "_planted_bugs")]
    const DELETES: bool = false;

    /// The triple's text.
    type Value = Vec<u8>;

    fn value(triple: &Triple) -> Vec<u8> {
        triple.to_text()
    }

    fn text(value: &Vec<u8>) -> Option<&[u8]> {
        Some(value)
    }

    fn mutation(cell: &TripleCell, text: &Vec<u8>) -> Mutation {
        Mutation::set_cell(cell.family, cell.qualifier, cell.timestamp, text.clone())
    }
}

/// [`RemoveTriples`]' change: each cell deleted at exactly its timestamp's millisecond.
#[derive(Debug)]
pub struct DeleteCells;

impl CellChange for DeleteCells {
    #[cfg(feature = "_planted_bugs")]
    const DELETES: bool = true;

    /// Nothing: a delete names the cell only.
    type Value = ();

    fn value(_triple: &Triple) {}

    fn text(_: &()) -> Option<&[u8]> {
        None
    }

    fn mutation(cell: &TripleCell, _: &()) -> Mutation {
        Mutation::DeleteFromColumn {
            family: cell.family.into(),
            qualifier: cell.qualifier.to_vec(),
            range: Some(TimestampRange {
                start: cell.timestamp.0,
                end: cell.timestamp.0 + 1000,
            }),
        }
    }
}

/// Where the batches stand.
#[derive(Debug)]
enum Phase {
    /// The next batch (from triple `next`) is to be sent, or none is left.
    Next,
    /// A batch is out.
    Write(ChildId),
}

/// The batch-writing flow of [`AddTriples`] and [`RemoveTriples`]; `C` says what happens to
/// each cell.
#[derive(Debug)]
pub struct CellBatches<C> {
    graph: Vec<u8>,
    triples: Vec<Triple>,
    /// The next triple to turn into entries.
    next: usize,
    batch_entries: usize,
    phase: Phase,
    change: PhantomData<fn() -> C>,
}

impl<C: CellChange> CellBatches<C> {
    /// The batches of `triples` in `graph`, or the graph id's error.
    fn new(graph: &[u8], triples: Vec<Triple>, batch_entries: usize) -> Result<Self, KeyError> {
        keys::check_graph_id(graph)?;
        Ok(CellBatches {
            graph: graph.to_vec(),
            triples,
            next: 0,
            batch_entries: batch_entries.max(4) / 4 * 4,
            phase: Phase::Next,
            change: PhantomData,
        })
    }

    fn entries_of(&self, triple: &Triple) -> [MutateRowsEntry; 4] {
        let value = C::value(triple);
        keys::triple_cells_with_text(&self.graph, triple, C::text(&value)).map(|cell| {
            MutateRowsEntry {
                mutations: alloc::vec![C::mutation(&cell, &value)],
                row_key: cell.row_key,
            }
        })
    }

    /// The next batch's request (`None` once every triple was sent).
    fn next_batch(&mut self, config: &OperationConfig) -> Option<MutateRowsRequest> {
        if self.next >= self.triples.len() {
            return None;
        }
        let per_batch = self.batch_entries / 4;
        let end = (self.next + per_batch).min(self.triples.len());
        let mut entries = Vec::with_capacity((end - self.next) * 4);
        for triple in &self.triples[self.next..end] {
            entries.extend(self.entries_of(triple));
        }
        #[cfg(feature = "_planted_bugs")]
        if C::DELETES && config.planted == Some(crate::planted::PlantedBug::TriplesRemoveSkipsSpo) {
            let spo = keys::index_prefix(&self.graph, keys::Index::Spo);
            entries.retain(|e| !e.row_key.starts_with(&spo));
        }
        self.next = end;
        Some(MutateRowsRequest {
            table: config.table.clone(),
            app_profile_id: Default::default(),
            entries: entries.into(),
        })
    }
}

impl<C: CellChange> Flow for CellBatches<C> {
    type Schema = TriplesSchema;
    type Output = ();

    fn advance(&mut self, io: &mut Io<()>, config: &mut OperationConfig) -> Progress<()> {
        loop {
            match self.phase {
                Phase::Next => match self.next_batch(config) {
                    Some(request) => self.phase = Phase::Write(io.mutate_rows(request)),
                    None => return Ok(Some(())),
                },
                Phase::Write(write) => {
                    ready!(io.written(write));
                    self.phase = Phase::Next;
                }
            }
        }
    }
}
