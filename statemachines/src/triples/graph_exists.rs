//! `Graph(g)` (spec §4): one `ReadRow` of `graph:<g>`; fails unless the graph cell exists.

use alloc::vec::Vec;

use super::requests::{graph_read, is_graph_cell, stream_rows};
use super::{OperationConfig, Progress, TriplesError, TriplesSchema, start};
use crate::Timestamp;
use crate::children::ChildId;
use crate::operation::{Flow, Io, Operation};

/// Checks that a graph exists (the original `Graph(g)`).
pub type GraphExists = Operation<'static, GraphExistsFlow>;

impl GraphExists {
    /// `Graph(graph)` at `now`.
    pub fn new(config: OperationConfig, graph: &[u8], now: Timestamp, seed: u64) -> GraphExists {
        let flow = GraphExistsFlow {
            graph: graph.to_vec(),
            phase: Phase::Start,
        };
        start(config, now, seed, flow)
    }
}

/// Where the check stands.
#[derive(Debug)]
enum Phase {
    /// Nothing sent yet.
    Start,
    /// The graph row's read is out; `found` once a graph cell came.
    Read { read: ChildId, found: bool },
}

/// The flow of [`GraphExists`]: one read of the graph row.
#[derive(Debug)]
pub struct GraphExistsFlow {
    graph: Vec<u8>,
    phase: Phase,
}

impl Flow for GraphExistsFlow {
    type Schema = TriplesSchema;
    type Output = ();

    fn advance(&mut self, io: &mut Io<()>, config: &mut OperationConfig) -> Progress<()> {
        loop {
            match &mut self.phase {
                Phase::Start => {
                    let read = io.read_rows(graph_read(config, &self.graph));
                    self.phase = Phase::Read { read, found: false };
                }
                Phase::Read { read, found } => {
                    let done = stream_rows(io, *read, |row| {
                        *found |= is_graph_cell(&row);
                        Ok(())
                    })?;
                    return match done {
                        None => Ok(None),
                        Some(()) if *found => Ok(Some(())),
                        Some(()) => Err(TriplesError::DoesNotExist(self.graph.clone())),
                    };
                }
            }
        }
    }
}
