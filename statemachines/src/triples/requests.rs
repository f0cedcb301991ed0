//! What the triple-store flows share: the graph row's read and filter, and child outcomes
//! turned into the operation's results (rows streamed, batch results, store errors).

use rowkit_codec::model::{Row, RowFilter, RowSet};
use rowkit_codec::triples::keys;

use super::{OperationConfig, Progress, TriplesError};
use crate::children::{ChildId, ChildOutput, owned_rows};
use crate::operation::Io;
use crate::{ReadRowsRequest, StoreError};

/// `Chain(Family(graph), Column(graph))`: the graph cell of a graph row.
pub(super) fn graph_cell_filter() -> RowFilter {
    RowFilter::Chain(alloc::vec![
        RowFilter::FamilyNameRegex(keys::FAMILY_GRAPH.into()),
        RowFilter::ColumnQualifierRegex(keys::GRAPH_QUALIFIER.to_vec()),
    ])
}

/// Whether `row` holds a graph cell.
pub(super) fn is_graph_cell(row: &Row) -> bool {
    row.cells
        .iter()
        .any(|c| c.family == keys::FAMILY_GRAPH && c.qualifier == keys::GRAPH_QUALIFIER)
}

/// `ReadRow(graph:<g>)`.
pub(super) fn graph_read(config: &OperationConfig, graph: &[u8]) -> ReadRowsRequest {
    ReadRowsRequest {
        table: config.table.clone(),
        rows: RowSet::key(keys::graph_row_key(graph)),
        ..Default::default()
    }
}

/// Hands every row the read `read` has produced so far to `each`, in key order; `Some(())`
/// once the read finished (its store error is the operation's). A row `each` rejects ends the
/// operation at once.
pub(super) fn stream_rows(
    io: &mut Io<()>,
    read: ChildId,
    mut each: impl FnMut(Row) -> Result<(), TriplesError>,
) -> Progress<()> {
    while let Some(row) = io.next_row(read) {
        each(row)?;
    }
    match io.take(read) {
        None => Ok(None),
        Some(Ok(ChildOutput::Rows(rest))) => {
            for row in owned_rows(rest) {
                each(row)?;
            }
            Ok(Some(()))
        }
        Some(Ok(_)) => Ok(Some(())),
        Some(Err(e)) => Err(TriplesError::Store(e)),
    }
}

/// A finished write: its store error, or a batch's first failed entry (results are in entry
/// order), as the operation's error.
pub(super) fn write_outcome(outcome: Result<ChildOutput, StoreError>) -> Result<(), TriplesError> {
    match outcome {
        Ok(ChildOutput::WroteRows(results)) => {
            match results.into_iter().find_map(|r| r.result.err()) {
                Some(e) => Err(TriplesError::Store(e)),
                None => Ok(()),
            }
        }
        Ok(_) => Ok(()),
        Err(e) => Err(TriplesError::Store(e)),
    }
}
