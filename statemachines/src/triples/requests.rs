//! What the triple-store flows share: the graph row's point read and filter, and child outcomes
//! turned into the operation's results (rows streamed, batch results, store errors).

use alloc::vec::Vec;

use rowkit_codec::model::{Mutation, Row, RowFilter};
use rowkit_codec::triples::keys;

use super::{OperationConfig, Progress, TriplesError};
use crate::children::ChildId;
use crate::operation::Io;
use crate::{ReadRowRequest, ready};

/// `Chain(Family(graph), Column(graph))`: the graph cell of a graph row.
pub(super) fn graph_cell_filter() -> RowFilter {
    RowFilter::Chain(alloc::vec![
        RowFilter::FamilyNameRegex(keys::FAMILY_GRAPH.into()),
        RowFilter::ColumnQualifierRegex(keys::GRAPH_QUALIFIER.to_vec()),
    ])
}

/// The graph cell of graph `graph` (its id as the value).
pub(super) fn graph_cell(graph: &[u8]) -> Mutation {
    Mutation::set_cell(
        keys::FAMILY_GRAPH,
        keys::GRAPH_QUALIFIER,
        keys::GRAPH_CELL_TIMESTAMP,
        graph.to_vec(),
    )
}

/// Whether `row` holds a graph cell.
fn is_graph_cell(row: &Row) -> bool {
    row.cells
        .iter()
        .any(|c| c.family == keys::FAMILY_GRAPH && c.qualifier == keys::GRAPH_QUALIFIER)
}

/// `ReadRow(graph:<g>)`.
fn graph_read(config: &OperationConfig, graph: &[u8]) -> ReadRowRequest {
    ReadRowRequest {
        table: config.table.clone(),
        row_key: keys::graph_row_key(graph),
        ..Default::default()
    }
}

/// A point read whose row is put to a test: whether it exists and passed (`Exist`'s POS
/// row; the graph row of [`GraphCheck`]).
#[derive(Debug)]
pub(super) enum AnyRow {
    /// Not sent yet.
    Unsent(ReadRowRequest),
    /// Out.
    Reading(ChildId),
}

impl AnyRow {
    /// Sends the read if it is not out yet and tests the row that came; `Some(found)` once
    /// the read finished.
    pub(super) fn advance(
        &mut self,
        io: &mut Io<()>,
        test: impl FnOnce(Row) -> Result<bool, TriplesError>,
    ) -> Progress<bool> {
        if let AnyRow::Unsent(request) = self {
            *self = AnyRow::Reading(io.read_row(core::mem::take(request)));
        }
        let AnyRow::Reading(read) = *self else {
            return Ok(None);
        };
        match ready!(io.row::<TriplesError>(read)) {
            Some(row) => test(row).map(Some),
            None => Ok(Some(false)),
        }
    }
}

/// `Graph(g)`'s check, also the first step of `DeleteGraph`: the graph row is read, and the
/// graph does not exist unless the row holds the graph cell.
#[derive(Debug)]
pub(super) struct GraphCheck {
    graph: Vec<u8>,
    read: AnyRow,
}

impl GraphCheck {
    /// The check of `graph` in `config`'s table.
    pub(super) fn new(config: &OperationConfig, graph: &[u8]) -> GraphCheck {
        GraphCheck {
            graph: graph.to_vec(),
            read: AnyRow::Unsent(graph_read(config, graph)),
        }
    }

    /// Runs the check; `Some(())` once the graph was found.
    pub(super) fn advance(&mut self, io: &mut Io<()>) -> Progress<()> {
        match self.read.advance(io, |row| Ok(is_graph_cell(&row)))? {
            None => Ok(None),
            Some(true) => Ok(Some(())),
            Some(false) => Err(TriplesError::DoesNotExist(self.graph.clone())),
        }
    }
}
