//! `AddTriples` and `RemoveTriples` (spec §4): four entries per triple, sent as consecutive
//! `MutateRows` batches of at most [`MAX_BATCH_ENTRIES`] entries, one batch at a time. Entries
//! are built per batch, so only one batch is held at a time.

use alloc::vec::Vec;

use rowkit_codec::model::{Mutation, TimestampRange};
use rowkit_codec::triples::Triple;
use rowkit_codec::triples::keys;

use super::graph::batch_outcome;
use super::op::{Core, Done, Flow, Op, Step};
use super::{MAX_BATCH_ENTRIES, OperationConfig};
use crate::{MutateRowsEntry, MutateRowsRequest, Timestamp};

/// Whether a batch writes or deletes the triples' cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Add,
    Remove,
}

/// The batch-writing flow shared by [`AddTriples`] and [`RemoveTriples`].
#[derive(Debug)]
struct BatchFlow {
    mode: Mode,
    graph: Vec<u8>,
    triples: Vec<Triple>,
    /// The next triple to turn into entries.
    next: usize,
    batch_entries: usize,
}

/// The flow of [`AddTriples`].
#[derive(Debug)]
pub struct AddFlow(BatchFlow);
/// The flow of [`RemoveTriples`].
#[derive(Debug)]
pub struct RemoveFlow(BatchFlow);

/// Writes triples (idempotent: cells have deterministic timestamps).
pub type AddTriples = Op<AddFlow>;
/// Removes exactly the given triples' cells (fix 9).
pub type RemoveTriples = Op<RemoveFlow>;

fn batch_flow(mode: Mode, graph: &[u8], triples: Vec<Triple>, batch_entries: usize) -> BatchFlow {
    BatchFlow {
        mode,
        graph: graph.to_vec(),
        triples,
        next: 0,
        batch_entries: batch_entries.max(4) / 4 * 4,
    }
}

impl Op<AddFlow> {
    /// `AddTriples(graph, triples)` at `now`.
    pub fn new(
        graph: &[u8],
        triples: Vec<Triple>,
        config: OperationConfig,
        now: Timestamp,
        seed: u64,
    ) -> AddTriples {
        Self::with_batch_entries(graph, triples, MAX_BATCH_ENTRIES, config, now, seed)
    }

    /// As `new` with batches of at most `batch_entries` entries (rounded down to whole
    /// triples; tests exercise batching with small values).
    pub fn with_batch_entries(
        graph: &[u8],
        triples: Vec<Triple>,
        batch_entries: usize,
        config: OperationConfig,
        now: Timestamp,
        seed: u64,
    ) -> AddTriples {
        let flow = AddFlow(batch_flow(Mode::Add, graph, triples, batch_entries));
        Op::start(flow, config, now, seed)
    }
}

impl Op<RemoveFlow> {
    /// `RemoveTriples(graph, triples)` at `now`.
    pub fn new(
        graph: &[u8],
        triples: Vec<Triple>,
        config: OperationConfig,
        now: Timestamp,
        seed: u64,
    ) -> RemoveTriples {
        Self::with_batch_entries(graph, triples, MAX_BATCH_ENTRIES, config, now, seed)
    }

    /// As `new` with batches of at most `batch_entries` entries.
    pub fn with_batch_entries(
        graph: &[u8],
        triples: Vec<Triple>,
        batch_entries: usize,
        config: OperationConfig,
        now: Timestamp,
        seed: u64,
    ) -> RemoveTriples {
        let flow = RemoveFlow(batch_flow(Mode::Remove, graph, triples, batch_entries));
        Op::start(flow, config, now, seed)
    }
}

macro_rules! delegate_flow {
    ($t:ty) => {
        impl Flow for $t {
            type Output = ();

            fn start(&mut self, core: &mut Core, now: Timestamp) -> Step<()> {
                self.0.start(core, now)
            }

            fn done(&mut self, core: &mut Core, done: Done, now: Timestamp) -> Step<()> {
                self.0.done(core, done, now)
            }
        }
    };
}

delegate_flow!(AddFlow);
delegate_flow!(RemoveFlow);

impl BatchFlow {
    fn entries_of(&self, triple: &Triple) -> [MutateRowsEntry; 4] {
        keys::triple_cells(&self.graph, triple).map(|cell| {
            let mutation = match self.mode {
                Mode::Add => Mutation::SetCell {
                    family: cell.family.into(),
                    qualifier: cell.qualifier.to_vec(),
                    timestamp: cell.timestamp,
                    value: triple.to_text(),
                },
                Mode::Remove => Mutation::DeleteFromColumn {
                    family: cell.family.into(),
                    qualifier: cell.qualifier.to_vec(),
                    range: Some(TimestampRange {
                        start: cell.timestamp.0,
                        end: cell.timestamp.0 + 1000,
                    }),
                },
            };
            MutateRowsEntry {
                row_key: cell.row_key,
                mutations: alloc::vec![mutation],
            }
        })
    }

    fn send_next(&mut self, core: &mut Core, now: Timestamp) -> Step<()> {
        if self.next >= self.triples.len() {
            return Step::Finish(Ok(()));
        }
        let per_batch = self.batch_entries / 4;
        let end = (self.next + per_batch).min(self.triples.len());
        let mut entries = Vec::with_capacity((end - self.next) * 4);
        for triple in &self.triples[self.next..end] {
            entries.extend(self.entries_of(triple));
        }
        #[cfg(feature = "planted-bugs")]
        if self.mode == Mode::Remove
            && core.config.planted == Some(crate::planted::PlantedBug::TriplesRemoveSkipsSpo)
        {
            let spo = keys::index_prefix(&self.graph, keys::Index::Spo);
            entries.retain(|e| !e.row_key.starts_with(&spo));
        }
        self.next = end;
        let request = MutateRowsRequest {
            table: core.config.table.clone(),
            app_profile_id: Default::default(),
            entries,
        };
        core.write(request, now).into()
    }
}

impl BatchFlow {
    fn start(&mut self, core: &mut Core, now: Timestamp) -> Step<()> {
        if let Err(e) = keys::check_graph_id(&self.graph) {
            return Step::Finish(Err(e.into()));
        }
        self.send_next(core, now)
    }

    fn done(&mut self, core: &mut Core, done: Done, now: Timestamp) -> Step<()> {
        match batch_outcome(core, done, now) {
            Err(e) => Step::Finish(Err(e)),
            Ok(()) => self.send_next(core, now),
        }
    }
}
