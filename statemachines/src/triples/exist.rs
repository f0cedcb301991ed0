//! `Exist(t)` (spec §5): reads the POS row of `t` and looks for its UUID.

use alloc::vec::Vec;

use rowkit_codec::triples::keys;
use rowkit_codec::triples::{Triple, Uuid};

use super::lookup::row_triples;
use super::requests::AnyRow;
use super::{OperationConfig, Progress, TriplesSchema, begin};
use crate::ReadRowRequest;
use crate::operation::{Flow, Io, Operation, Start};

/// Whether a triple is stored.
pub type Exist = Operation<'static, ExistFlow>;

impl Exist {
    /// `Exist(triple)` in `graph`, as `start` says.
    pub fn new(config: OperationConfig, graph: &[u8], triple: Triple, start: Start) -> Exist {
        let flow = ExistFlow {
            graph: graph.to_vec(),
            read: AnyRow::Unsent(ReadRowRequest {
                table: config.table.clone(),
                row_key: keys::exist_row_key(graph, &triple),
                ..Default::default()
            }),
            triple,
            uuid: None,
        };
        begin(config, start, flow)
    }
}

/// The flow of [`Exist`]: one read of the triple's POS row, looking for the triple's UUID.
#[derive(Debug)]
pub struct ExistFlow {
    graph: Vec<u8>,
    read: AnyRow,
    triple: Triple,
    /// The triple's UUID, once a cell needed it ([`Triple::same_uuid`]).
    uuid: Option<Uuid>,
}

impl Flow for ExistFlow {
    type Schema = TriplesSchema;
    type Output = bool;

    fn advance(&mut self, io: &mut Io<()>, _config: &mut OperationConfig) -> Progress<bool> {
        let (graph, triple, uuid) = (&self.graph, &self.triple, &mut self.uuid);
        // Every cell is parsed (one that does not parse fails the Exist, spec §5), and a
        // cell matches when its triple has the UUID of the one asked for.
        self.read.advance(io, |row| {
            let parsed = row_triples(graph, row)?;
            Ok(parsed
                .iter()
                .any(|t| t.same_uuid(triple, || *uuid.get_or_insert_with(|| triple.uuid()))))
        })
    }
}
