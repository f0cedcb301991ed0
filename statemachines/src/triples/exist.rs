//! `Exist(t)` (spec §5): reads the POS row of `t` and looks for its UUID.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use rowkit_codec::model::RowSet;
use rowkit_codec::triples::keys;
use rowkit_codec::triples::{Triple, Uuid};

use super::lookup::collect_row;
use super::requests::stream_rows;
use super::{OperationConfig, Progress, TriplesSchema, start};
use crate::children::ChildId;
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
        let uuid = triple.uuid();
        let flow = ExistFlow {
            graph: graph.to_vec(),
            triple,
            uuid,
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
    /// The POS row's read is out; `found` once the triple's UUID came.
    Read { read: ChildId, found: bool },
}

/// The flow of [`Exist`]: one read of the triple's POS row.
#[derive(Debug)]
pub struct ExistFlow {
    graph: Vec<u8>,
    triple: Triple,
    uuid: Uuid,
    phase: Phase,
}

impl Flow for ExistFlow {
    type Schema = TriplesSchema;
    type Output = bool;

    fn advance(&mut self, io: &mut Io<()>, config: &mut OperationConfig) -> Progress<bool> {
        loop {
            match &mut self.phase {
                Phase::Start => {
                    let read = io.read_rows(ReadRowsRequest {
                        table: config.table.clone(),
                        rows: RowSet::key(keys::exist_row_key(&self.graph, &self.triple)),
                        ..Default::default()
                    });
                    self.phase = Phase::Read { read, found: false };
                }
                Phase::Read { read, found } => {
                    let (graph, uuid) = (&self.graph, self.uuid);
                    let done = stream_rows(io, *read, |row| {
                        let mut parsed = Vec::new();
                        collect_row(graph, row, &mut BTreeSet::new(), &mut parsed)?;
                        *found |= parsed.iter().any(|t| t.uuid() == uuid);
                        Ok(())
                    })?;
                    return Ok(done.map(|()| *found));
                }
            }
        }
    }
}
