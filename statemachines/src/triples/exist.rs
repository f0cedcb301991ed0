//! `Exist(t)` (spec §5): reads the POS row of `t` and looks for its UUID.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use rowkit_codec::model::RowSet;
use rowkit_codec::triples::keys;
use rowkit_codec::triples::{Triple, Uuid};

use super::lookup::collect_row;
use super::requests::AnyRow;
use super::{OperationConfig, Progress, TriplesSchema, start};
use crate::operation::{Flow, Io, Operation};
use crate::{ReadRowsRequest, Timestamp};

/// Whether a triple is stored.
pub type Exist = Operation<'static, ExistFlow>;

impl Exist {
    /// `Exist(triple)` in `graph`, at `now`.
    pub fn new(
        config: OperationConfig,
        graph: &[u8],
        triple: Triple,
        now: Timestamp,
        seed: u64,
    ) -> Exist {
        let flow = ExistFlow {
            graph: graph.to_vec(),
            uuid: triple.uuid(),
            read: AnyRow::Unsent(ReadRowsRequest {
                table: config.table.clone(),
                rows: RowSet::key(keys::exist_row_key(graph, &triple)),
                ..Default::default()
            }),
        };
        start(config, now, seed, flow)
    }
}

/// The flow of [`Exist`]: one read of the triple's POS row, looking for the triple's UUID.
#[derive(Debug)]
pub struct ExistFlow {
    graph: Vec<u8>,
    uuid: Uuid,
    read: AnyRow,
}

impl Flow for ExistFlow {
    type Schema = TriplesSchema;
    type Output = bool;

    fn advance(&mut self, io: &mut Io<()>, _config: &mut OperationConfig) -> Progress<bool> {
        let (graph, uuid) = (&self.graph, self.uuid);
        self.read.advance(io, |row| {
            let mut parsed = Vec::new();
            collect_row(graph, row, &mut BTreeSet::new(), &mut parsed)?;
            Ok(parsed.iter().any(|t| t.uuid() == uuid))
        })
    }
}
