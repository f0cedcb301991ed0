//! `NewGraph(g)` (spec §4): one `CheckAndMutateRow` creating the graph cell unless it exists
//! (fix 7).

use alloc::vec::Vec;

use rowkit_codec::triples::keys;

use super::requests::{graph_cell, graph_cell_filter};
use super::{OperationConfig, Progress, TriplesError, TriplesSchema, begin, failed};
use crate::children::ChildId;
use crate::operation::{Flow, Io, Operation, Start};
use crate::ready;
use crate::{CheckAndMutateRowRequest, Request};

/// Creates a graph.
pub type NewGraph = Operation<'static, NewGraphFlow>;

impl NewGraph {
    /// `NewGraph(graph)` as `start` says; a graph id over the limit fails before any request.
    pub fn new(config: OperationConfig, graph: &[u8], start: Start) -> NewGraph {
        if let Err(e) = keys::check_graph_id(graph) {
            return failed(config, e);
        }
        let flow = NewGraphFlow {
            graph: graph.to_vec(),
            phase: Phase::Start,
        };
        begin(config, start, flow)
    }
}

/// Where the creation stands.
#[derive(Debug)]
enum Phase {
    /// Nothing sent yet.
    Start,
    /// The `CheckAndMutateRow` is out.
    Create(ChildId),
}

/// The flow of [`NewGraph`]: one conditional write of the graph cell.
#[derive(Debug)]
pub struct NewGraphFlow {
    graph: Vec<u8>,
    phase: Phase,
}

impl Flow for NewGraphFlow {
    type Schema = TriplesSchema;
    type Output = ();

    fn advance(&mut self, io: &mut Io<()>, config: &mut OperationConfig) -> Progress<()> {
        let create = match self.phase {
            Phase::Create(create) => create,
            Phase::Start => {
                let create = io.unary(Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                    table: config.table.clone(),
                    app_profile_id: Default::default(),
                    row_key: keys::graph_row_key(&self.graph),
                    predicate: Some(graph_cell_filter()),
                    true_mutations: Vec::new(),
                    false_mutations: alloc::vec![graph_cell(&self.graph)],
                }));
                self.phase = Phase::Create(create);
                create
            }
        };
        if ready!(io.matched(create)) {
            return Err(TriplesError::AlreadyExists(self.graph.clone()));
        }
        Ok(Some(()))
    }
}
