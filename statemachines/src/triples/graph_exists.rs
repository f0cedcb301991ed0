//! `Graph(g)` (spec §4): one `ReadRow` of `graph:<g>`; fails unless the graph cell exists.

use super::requests::GraphCheck;
use super::{OperationConfig, Progress, TriplesSchema, begin};
use crate::operation::{Flow, Io, Operation, Start};

/// Checks that a graph exists (the original `Graph(g)`).
pub type GraphExists = Operation<'static, GraphExistsFlow>;

impl GraphExists {
    /// `Graph(graph)` as `start` says.
    pub fn new(config: OperationConfig, graph: &[u8], start: Start) -> GraphExists {
        let flow = GraphExistsFlow(GraphCheck::new(&config, graph));
        begin(config, start, flow)
    }
}

/// The flow of [`GraphExists`]: one read of the graph row.
#[derive(Debug)]
pub struct GraphExistsFlow(GraphCheck);

impl Flow for GraphExistsFlow {
    type Schema = TriplesSchema;
    type Output = ();

    fn advance(&mut self, io: &mut Io<()>, _config: &mut OperationConfig) -> Progress<()> {
        self.0.advance(io)
    }
}
