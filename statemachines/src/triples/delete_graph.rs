//! `DeleteGraph(g)` (spec §4, fix 21): check the graph row, then per index page through the
//! keys and delete those rows, then delete the graph cell.

use alloc::vec::Vec;

use rowkit_codec::model::{KeyBound, Mutation, RowFilter, RowRange, RowSet, TimestampRange};
use rowkit_codec::triples::keys::{self, Index};

use super::requests::GraphCheck;
use super::{DELETE_PAGE_ROWS, OperationConfig, Progress, TriplesSchema, begin};
use crate::children::ChildId;
use crate::operation::{Flow, Io, Operation, Start};
use crate::ready;
use crate::{MutateRowRequest, MutateRowsEntry, MutateRowsRequest, ReadRowsRequest};

/// Deletes a graph and every row of its four indices.
pub type DeleteGraph = Operation<'static, DeleteGraphFlow>;

impl DeleteGraph {
    /// `DeleteGraph(graph)` as `start` says, listing [`DELETE_PAGE_ROWS`] keys per page.
    pub fn new(config: OperationConfig, graph: &[u8], start: Start) -> DeleteGraph {
        Self::with_page_rows(config, graph, DELETE_PAGE_ROWS, start)
    }

    /// As [`DeleteGraph::new`] with another page size (tests exercise paging).
    pub fn with_page_rows(
        config: OperationConfig,
        graph: &[u8],
        page_rows: i64,
        start: Start,
    ) -> DeleteGraph {
        let flow = DeleteGraphFlow {
            graph: graph.to_vec(),
            page_rows: page_rows.max(1),
            phase: Phase::Check(GraphCheck::new(&config, graph)),
        };
        begin(config, start, flow)
    }
}

/// Where the deletion stands.
#[derive(Debug)]
enum Phase {
    /// Checking that the graph exists.
    Check(GraphCheck),
    /// Listing a page of index `Index::ALL[index]`: the keys of the graph's rows so far, how
    /// many rows came, and the last key (the next page starts after it).
    List {
        index: usize,
        read: ChildId,
        page: Vec<Vec<u8>>,
        rows: i64,
        last_key: Option<Vec<u8>>,
    },
    /// Deleting the rows of that page; `full` when another page of the index follows.
    Delete {
        index: usize,
        write: ChildId,
        full: bool,
        last_key: Option<Vec<u8>>,
    },
    /// Deleting the graph cell.
    Forget(ChildId),
    /// Ended (a flow that ended is never advanced again).
    Done,
}

/// The flow of [`DeleteGraph`]: the graph row's check, each index's pages listed and deleted,
/// then the graph cell deleted.
#[derive(Debug)]
pub struct DeleteGraphFlow {
    graph: Vec<u8>,
    page_rows: i64,
    phase: Phase,
}

impl DeleteGraphFlow {
    /// Lists the page of index `index` after `after`; past the last index, deletes the graph
    /// cell.
    fn list(
        &self,
        io: &mut Io<()>,
        config: &OperationConfig,
        index: usize,
        after: Option<Vec<u8>>,
    ) -> Phase {
        let Some(&which) = Index::ALL.get(index) else {
            return self.forget(io, config);
        };
        let prefix = keys::index_prefix(&self.graph, which);
        let mut range = RowRange::prefix(&prefix);
        if let Some(last) = &after {
            range.start = KeyBound::Open(last.clone());
        }
        let read = io.read_rows(ReadRowsRequest {
            table: config.table.clone(),
            rows: RowSet::range(range),
            filter: Some(RowFilter::Chain(alloc::vec![
                RowFilter::CellsPerRowLimit(1),
                RowFilter::StripValue,
            ])),
            rows_limit: self.page_rows,
            ..Default::default()
        });
        Phase::List {
            index,
            read,
            page: Vec::new(),
            rows: 0,
            last_key: after,
        }
    }

    /// The next page of index `index` when this one was `full`, else the next index.
    fn next_page(
        &self,
        io: &mut Io<()>,
        config: &OperationConfig,
        index: usize,
        full: bool,
        last_key: Option<Vec<u8>>,
    ) -> Phase {
        if full {
            self.list(io, config, index, last_key)
        } else {
            self.list(io, config, index + 1, None)
        }
    }

    /// Deletes the graph cell.
    fn forget(&self, io: &mut Io<()>, config: &OperationConfig) -> Phase {
        Phase::Forget(io.mutate_row(MutateRowRequest {
            table: config.table.clone(),
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
        }))
    }
}

impl Flow for DeleteGraphFlow {
    type Schema = TriplesSchema;
    type Output = ();

    fn advance(&mut self, io: &mut Io<()>, config: &mut OperationConfig) -> Progress<()> {
        loop {
            self.phase = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Check(mut check) => {
                    if check.advance(io)?.is_none() {
                        self.phase = Phase::Check(check);
                        return Ok(None);
                    }
                    self.list(io, config, 0, None)
                }
                Phase::List {
                    index,
                    read,
                    mut page,
                    mut rows,
                    mut last_key,
                } => {
                    let graph = &self.graph;
                    let done = io.stream_rows::<super::TriplesError>(read, |row| {
                        rows += 1;
                        if keys::is_triple_row_of(graph, &row.key) {
                            page.push(row.key.clone());
                        }
                        last_key = Some(row.key);
                        Ok(())
                    })?;
                    if done.is_none() {
                        self.phase = Phase::List {
                            index,
                            read,
                            page,
                            rows,
                            last_key,
                        };
                        return Ok(None);
                    }
                    let full = rows >= self.page_rows;
                    if page.is_empty() {
                        self.next_page(io, config, index, full, last_key)
                    } else {
                        let entries = page
                            .into_iter()
                            .map(|row_key| MutateRowsEntry {
                                row_key,
                                mutations: alloc::vec![Mutation::DeleteFromRow],
                            })
                            .collect();
                        let write = io.mutate_rows(MutateRowsRequest {
                            table: config.table.clone(),
                            app_profile_id: Default::default(),
                            entries,
                        });
                        Phase::Delete {
                            index,
                            write,
                            full,
                            last_key,
                        }
                    }
                }
                Phase::Delete {
                    index,
                    write,
                    full,
                    last_key,
                } => {
                    ready!(io.written(write), self.phase => Phase::Delete {
                        index,
                        write,
                        full,
                        last_key,
                    });
                    self.next_page(io, config, index, full, last_key)
                }
                Phase::Forget(write) => {
                    ready!(io.written(write), self.phase => Phase::Forget(write));
                    return Ok(Some(()));
                }
                Phase::Done => return Ok(None),
            }
        }
    }
}
