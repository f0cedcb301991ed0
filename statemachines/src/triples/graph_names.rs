//! `GraphNames()` (spec §4): the value of every graph cell under `graph:`, in row order
//! (fix 8).

use alloc::vec::Vec;

use rowkit_codec::model::{RowFilter, RowRange, RowSet};
use rowkit_codec::triples::keys;

use super::{OperationConfig, Progress, TriplesSchema, begin};
use crate::ReadRowsRequest;
use crate::children::ChildId;
use crate::operation::{Flow, Io, Operation, Start};

/// Lists the graphs.
pub type GraphNames = Operation<'static, GraphNamesFlow>;

impl GraphNames {
    /// `GraphNames()` as `start` says.
    pub fn new(config: OperationConfig, start: Start) -> GraphNames {
        let flow = GraphNamesFlow {
            phase: Phase::Start,
        };
        begin(config, start, flow)
    }
}

/// Where the listing stands.
#[derive(Debug)]
enum Phase {
    /// Nothing sent yet.
    Start,
    /// The scan of `graph:` is out; `names` so far.
    Read { read: ChildId, names: Vec<Vec<u8>> },
}

/// The flow of [`GraphNames`]: one scan of the graph rows.
#[derive(Debug)]
pub struct GraphNamesFlow {
    phase: Phase,
}

impl Flow for GraphNamesFlow {
    type Schema = TriplesSchema;
    type Output = Vec<Vec<u8>>;

    fn advance(&mut self, io: &mut Io<()>, config: &mut OperationConfig) -> Progress<Vec<Vec<u8>>> {
        loop {
            match &mut self.phase {
                Phase::Start => {
                    let read = io.read_rows(ReadRowsRequest {
                        table: config.table.clone(),
                        rows: RowSet::range(RowRange::prefix(keys::GRAPH_ROW_PREFIX)),
                        filter: Some(RowFilter::Chain(alloc::vec![
                            RowFilter::FamilyNameRegex(keys::FAMILY_GRAPH.into()),
                            RowFilter::ColumnQualifierRegex(keys::GRAPH_QUALIFIER.to_vec()),
                            RowFilter::CellsPerColumnLimit(1),
                        ])),
                        ..Default::default()
                    });
                    self.phase = Phase::Read {
                        read,
                        names: Vec::new(),
                    };
                }
                Phase::Read { read, names } => {
                    let done = io.stream_rows::<super::TriplesError>(*read, |row| {
                        names.extend(row.cells.into_iter().map(|c| c.value));
                        Ok(())
                    })?;
                    return Ok(done.map(|()| core::mem::take(names)));
                }
            }
        }
    }
}
