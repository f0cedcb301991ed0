//! `Exist(t)` (spec §5): reads the POS row of `t` and looks for its UUID.

use alloc::vec::Vec;

use rowkit_codec::triples::keys;
use rowkit_codec::triples::{Triple, Uuid};

use super::lookup::{parse_triple_cell, triple_cell_values};
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
            stored_text: triple.round_trip_text(),
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
    /// The triple's text if a cell holding exactly it is certainly the triple
    /// ([`Triple::round_trip_text`]): such a cell is not parsed.
    stored_text: Option<Vec<u8>>,
    /// The triple's UUID, once a cell needed it ([`Triple::same_uuid`]).
    uuid: Option<Uuid>,
}

impl Flow for ExistFlow {
    type Schema = TriplesSchema;
    type Output = bool;

    fn advance(&mut self, io: &mut Io<()>, _config: &mut OperationConfig) -> Progress<bool> {
        let (graph, triple, uuid) = (&self.graph, &self.triple, &mut self.uuid);
        let stored_text = self.stored_text.as_deref();
        // Every cell is parsed (one that does not parse fails the Exist, spec §5), and a
        // cell matches when its triple has the UUID of the one asked for. A cell holding the
        // asked triple's own round-tripping text would parse to that triple: it matches
        // without the parse (the usual answer: the row holds the triple itself).
        self.read.advance(io, |row| {
            let mut found = false;
            for value in triple_cell_values(graph, &row) {
                if stored_text == Some(value) {
                    found = true;
                    continue;
                }
                let t = parse_triple_cell(&row.key, value)?;
                found = found || t.same_uuid(triple, || *uuid.get_or_insert_with(|| triple.uuid()));
            }
            Ok(found)
        })
    }
}
