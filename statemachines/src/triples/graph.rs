//! Graph operations: `NewGraph`, `Graph` (existence), `DeleteGraph`, `GraphNames` (spec §4).

use alloc::vec::Vec;

use rowkit_codec::model::{KeyBound, Mutation, Row, RowFilter, RowRange, RowSet, TimestampRange};
use rowkit_codec::triples::keys::{self, Index};

use super::op::{Core, Done, Flow, Op, Step};
use super::{DELETE_PAGE_ROWS, OperationConfig, TriplesError};
use crate::{
    CheckAndMutateRowRequest, MutateRowRequest, MutateRowsEntry, MutateRowsRequest,
    ReadRowsRequest, Request, Response, Timestamp,
};

fn graph_cell_filter() -> RowFilter {
    RowFilter::Chain(alloc::vec![
        RowFilter::FamilyNameRegex(keys::FAMILY_GRAPH.into()),
        RowFilter::ColumnQualifierRegex(keys::GRAPH_QUALIFIER.to_vec()),
    ])
}

fn is_graph_cell(row: &Row) -> bool {
    row.cells
        .iter()
        .any(|c| c.family == keys::FAMILY_GRAPH && c.qualifier == keys::GRAPH_QUALIFIER)
}

/// The first failed entry of a batch (results are in entry order), as the operation's error.
pub(super) fn batch_outcome(core: &Core, done: Done, now: Timestamp) -> Result<(), TriplesError> {
    match done {
        Done::Write(Ok(results)) => match results.into_iter().find_map(|r| r.result.err()) {
            Some(e) => Err(core.store_error(e, now)),
            None => Ok(()),
        },
        Done::Write(Err(e)) | Done::Read(Err(e)) | Done::WriteRow(Err(e)) | Done::Unary(Err(e)) => {
            Err(core.store_error(e, now))
        }
        _ => Ok(()),
    }
}

/// `NewGraph(g)`: one `CheckAndMutateRow` creating the graph cell unless it exists (fix 7).
#[derive(Debug)]
pub struct NewGraphFlow {
    graph: Vec<u8>,
}

/// Creates a graph.
pub type NewGraph = Op<NewGraphFlow>;

impl Op<NewGraphFlow> {
    /// `NewGraph(graph)` at `now`.
    pub fn new(graph: &[u8], config: OperationConfig, now: Timestamp, seed: u64) -> NewGraph {
        Op::start(
            NewGraphFlow {
                graph: graph.to_vec(),
            },
            config,
            now,
            seed,
        )
    }
}

impl Flow for NewGraphFlow {
    type Output = ();

    fn start(&mut self, core: &mut Core, now: Timestamp) -> Step<()> {
        if let Err(e) = keys::check_graph_id(&self.graph) {
            return Step::Finish(Err(e.into()));
        }
        let request = Request::CheckAndMutateRow(CheckAndMutateRowRequest {
            table: core.config.table.clone(),
            app_profile_id: Default::default(),
            row_key: keys::graph_row_key(&self.graph),
            predicate: Some(graph_cell_filter()),
            true_mutations: Vec::new(),
            false_mutations: alloc::vec![Mutation::SetCell {
                family: keys::FAMILY_GRAPH.into(),
                qualifier: keys::GRAPH_QUALIFIER.to_vec(),
                timestamp: keys::GRAPH_CELL_TIMESTAMP,
                value: self.graph.clone(),
            }],
        });
        core.unary(request, now).into()
    }

    fn done(&mut self, core: &mut Core, done: Done, now: Timestamp) -> Step<()> {
        Step::Finish(match done {
            Done::Unary(Ok(Response::CheckAndMutateRow {
                predicate_matched: true,
            })) => Err(TriplesError::AlreadyExists(self.graph.clone())),
            Done::Unary(Ok(_)) => Ok(()),
            Done::Unary(Err(e)) => Err(core.store_error(e, now)),
            _ => Ok(()),
        })
    }
}

fn graph_read(core: &Core, graph: &[u8]) -> ReadRowsRequest {
    ReadRowsRequest {
        table: core.config.table.clone(),
        rows: RowSet::key(keys::graph_row_key(graph)),
        ..Default::default()
    }
}

/// `Graph(g)`: one `ReadRow` of `graph:<g>`; fails unless the graph cell exists.
#[derive(Debug)]
pub struct GraphExistsFlow {
    graph: Vec<u8>,
    found: bool,
}

/// Checks that a graph exists (the original `Graph(g)`).
pub type GraphExists = Op<GraphExistsFlow>;

impl Op<GraphExistsFlow> {
    /// `Graph(graph)` at `now`.
    pub fn new(graph: &[u8], config: OperationConfig, now: Timestamp, seed: u64) -> GraphExists {
        Op::start(
            GraphExistsFlow {
                graph: graph.to_vec(),
                found: false,
            },
            config,
            now,
            seed,
        )
    }
}

impl Flow for GraphExistsFlow {
    type Output = ();

    fn start(&mut self, core: &mut Core, now: Timestamp) -> Step<()> {
        let request = graph_read(core, &self.graph);
        core.read(request, now).into()
    }

    fn row(&mut self, _core: &mut Core, row: Row) -> Result<(), TriplesError> {
        self.found |= is_graph_cell(&row);
        Ok(())
    }

    fn done(&mut self, core: &mut Core, done: Done, now: Timestamp) -> Step<()> {
        Step::Finish(match done {
            Done::Read(Err(e)) => Err(core.store_error(e, now)),
            _ if self.found => Ok(()),
            _ => Err(TriplesError::DoesNotExist(self.graph.clone())),
        })
    }
}

/// Where `DeleteGraph` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeletePhase {
    /// Reading the graph row.
    Check,
    /// Listing a page of index `Index::ALL[i]`.
    List(usize),
    /// Deleting the rows of that page.
    Delete(usize),
    /// Deleting the graph cell.
    Forget,
}

/// `DeleteGraph(g)`: check, then per index page through the keys and delete those rows, then
/// delete the graph cell (spec §4, fix 21).
#[derive(Debug)]
pub struct DeleteGraphFlow {
    graph: Vec<u8>,
    page_rows: i64,
    phase: DeletePhase,
    found: bool,
    /// Keys of the current page (at most `page_rows`).
    page: Vec<Vec<u8>>,
    rows_in_page: i64,
    last_key: Option<Vec<u8>>,
    /// Rows deleted so far.
    deleted: u64,
}

/// Deletes a graph and every row of its four indices.
pub type DeleteGraph = Op<DeleteGraphFlow>;

impl Op<DeleteGraphFlow> {
    /// `DeleteGraph(graph)` at `now`, listing `DELETE_PAGE_ROWS` keys per page.
    pub fn new(graph: &[u8], config: OperationConfig, now: Timestamp, seed: u64) -> DeleteGraph {
        Self::with_page_rows(graph, DELETE_PAGE_ROWS, config, now, seed)
    }

    /// As [`Op::<DeleteGraphFlow>::new`] with another page size (tests exercise paging).
    pub fn with_page_rows(
        graph: &[u8],
        page_rows: i64,
        config: OperationConfig,
        now: Timestamp,
        seed: u64,
    ) -> DeleteGraph {
        Op::start(
            DeleteGraphFlow {
                graph: graph.to_vec(),
                page_rows: page_rows.max(1),
                phase: DeletePhase::Check,
                found: false,
                page: Vec::new(),
                rows_in_page: 0,
                last_key: None,
                deleted: 0,
            },
            config,
            now,
            seed,
        )
    }
}

impl DeleteGraphFlow {
    fn list(&mut self, core: &mut Core, i: usize, now: Timestamp) -> Step<()> {
        let Some(&index) = Index::ALL.get(i) else {
            return self.forget(core, now);
        };
        self.phase = DeletePhase::List(i);
        self.page.clear();
        self.rows_in_page = 0;
        let prefix = keys::index_prefix(&self.graph, index);
        let mut range = RowRange::prefix(&prefix);
        if let Some(last) = &self.last_key {
            range.start = KeyBound::Open(last.clone());
        }
        let request = ReadRowsRequest {
            table: core.config.table.clone(),
            rows: RowSet::range(range),
            filter: Some(RowFilter::Chain(alloc::vec![
                RowFilter::CellsPerRowLimit(1),
                RowFilter::StripValue,
            ])),
            rows_limit: self.page_rows,
            ..Default::default()
        };
        core.read(request, now).into()
    }

    fn forget(&mut self, core: &mut Core, now: Timestamp) -> Step<()> {
        self.phase = DeletePhase::Forget;
        let request = MutateRowRequest {
            table: core.config.table.clone(),
            app_profile_id: Default::default(),
            row_key: keys::graph_row_key(&self.graph),
            mutations: alloc::vec![Mutation::DeleteFromColumn {
                family: keys::FAMILY_GRAPH.into(),
                qualifier: keys::GRAPH_QUALIFIER.to_vec(),
                range: Some(TimestampRange {
                    start: 1_000_000,
                    end: keys::MAX_VALID_TIMESTAMP,
                }),
            }],
        };
        core.write_row(request, now).into()
    }

    /// The page is listed: delete its rows, or move on.
    fn after_page(&mut self, core: &mut Core, i: usize, now: Timestamp) -> Step<()> {
        let full = self.rows_in_page >= self.page_rows;
        if self.page.is_empty() {
            return self.next_page(core, i, full, now);
        }
        self.phase = DeletePhase::Delete(i);
        self.deleted += self.page.len() as u64;
        let entries = core::mem::take(&mut self.page)
            .into_iter()
            .map(|row_key| MutateRowsEntry {
                row_key,
                mutations: alloc::vec![Mutation::DeleteFromRow],
            })
            .collect();
        // Remember whether another page follows.
        self.rows_in_page = if full { self.page_rows } else { 0 };
        let request = MutateRowsRequest {
            table: core.config.table.clone(),
            app_profile_id: Default::default(),
            entries,
        };
        core.write(request, now).into()
    }

    fn next_page(&mut self, core: &mut Core, i: usize, full: bool, now: Timestamp) -> Step<()> {
        if full {
            self.list(core, i, now)
        } else {
            self.last_key = None;
            self.list(core, i + 1, now)
        }
    }
}

impl Flow for DeleteGraphFlow {
    type Output = ();

    fn start(&mut self, core: &mut Core, now: Timestamp) -> Step<()> {
        let request = graph_read(core, &self.graph);
        core.read(request, now).into()
    }

    fn row(&mut self, _core: &mut Core, row: Row) -> Result<(), TriplesError> {
        match self.phase {
            DeletePhase::Check => self.found |= is_graph_cell(&row),
            DeletePhase::List(_) => {
                self.rows_in_page += 1;
                if keys::is_triple_row_of(&self.graph, &row.key) {
                    self.page.push(row.key.clone());
                }
                self.last_key = Some(row.key);
            }
            _ => {}
        }
        Ok(())
    }

    fn done(&mut self, core: &mut Core, done: Done, now: Timestamp) -> Step<()> {
        match self.phase {
            DeletePhase::Check => match done {
                Done::Read(Err(e)) => Step::Finish(Err(core.store_error(e, now))),
                _ if self.found => self.list(core, 0, now),
                _ => Step::Finish(Err(TriplesError::DoesNotExist(self.graph.clone()))),
            },
            DeletePhase::List(i) => match done {
                Done::Read(Err(e)) => Step::Finish(Err(core.store_error(e, now))),
                _ => self.after_page(core, i, now),
            },
            DeletePhase::Delete(i) => match batch_outcome(core, done, now) {
                Err(e) => Step::Finish(Err(e)),
                Ok(()) => {
                    let full = self.rows_in_page >= self.page_rows;
                    self.next_page(core, i, full, now)
                }
            },
            DeletePhase::Forget => Step::Finish(batch_outcome(core, done, now)),
        }
    }
}

/// `GraphNames()`: the value of every graph cell under `graph:`, in row order (fix 8).
#[derive(Debug, Default)]
pub struct GraphNamesFlow {
    names: Vec<Vec<u8>>,
}

/// Lists the graphs.
pub type GraphNames = Op<GraphNamesFlow>;

impl Op<GraphNamesFlow> {
    /// `GraphNames()` at `now`.
    pub fn new(config: OperationConfig, now: Timestamp, seed: u64) -> GraphNames {
        Op::start(GraphNamesFlow::default(), config, now, seed)
    }
}

impl Flow for GraphNamesFlow {
    type Output = Vec<Vec<u8>>;

    fn start(&mut self, core: &mut Core, now: Timestamp) -> Step<Self::Output> {
        let request = ReadRowsRequest {
            table: core.config.table.clone(),
            rows: RowSet::range(RowRange::prefix(keys::GRAPH_ROW_PREFIX)),
            filter: Some(RowFilter::Chain(alloc::vec![
                RowFilter::FamilyNameRegex(keys::FAMILY_GRAPH.into()),
                RowFilter::ColumnQualifierRegex(keys::GRAPH_QUALIFIER.to_vec()),
                RowFilter::CellsPerColumnLimit(1),
            ])),
            ..Default::default()
        };
        core.read(request, now).into()
    }

    fn row(&mut self, _core: &mut Core, row: Row) -> Result<(), TriplesError> {
        self.names.extend(row.cells.into_iter().map(|c| c.value));
        Ok(())
    }

    fn done(&mut self, core: &mut Core, done: Done, now: Timestamp) -> Step<Self::Output> {
        Step::Finish(match done {
            Done::Read(Err(e)) => Err(core.store_error(e, now)),
            _ => Ok(core::mem::take(&mut self.names)),
        })
    }
}
