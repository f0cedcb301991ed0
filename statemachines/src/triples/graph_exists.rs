//! `Graph(g)` (spec §4): one `ReadRow` of `graph:<g>`; fails unless the graph cell exists.

use super::requests::GraphCheck;
use super::{OperationConfig, Progress, TriplesSchema, start};
use crate::Timestamp;
use crate::operation::{Flow, Io, Operation};

/// Checks that a graph exists (the original `Graph(g)`).
pub type GraphExists = Operation<'static, GraphExistsFlow>;

impl GraphExists {
    /// `Graph(graph)` at `now`.
    pub fn new(config: OperationConfig, graph: &[u8], now: Timestamp, seed: u64) -> GraphExists {
        let flow = GraphExistsFlow(GraphCheck::new(&config, graph));
        start(config, now, seed, flow)
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
