//! `NewestTile` (`spec/tracestore.md` 12.4): the tile index of the first OPS row.

use rowkit_codec::model::{RowFilter, RowSet};
use rowkit_codec::tracestore::cells::{COLUMN_HASH, FAMILY_OPS};
use rowkit_codec::tracestore::keys::{OPS_ROWS_PREFIX, parse_ops_row_tile_key, tile_index_of_key};

use super::TraceStoreEvent;
use super::requests::{family, read_request, rows_of};
use super::state::TraceStoreState;
use super::{Progress, READ_DEADLINE_MICROS, TraceStoreSchema, start};
use crate::Timestamp;
use crate::children::ChildId;
use crate::operation::{ContextArg, Flow, Io, Operation};

/// `NewestTile`: the index of the newest tile, `None` when the table has none.
pub type NewestTile<'a> = Operation<'a, NewestTileFlow>;

impl<'a> NewestTile<'a> {
    /// Finds the newest tile, aborted at `deadline` (default: [`READ_DEADLINE_MICROS`] after
    /// `now`).
    pub fn new(
        state: impl Into<ContextArg<'a, TraceStoreState>>,
        deadline: Option<Timestamp>,
        now: Timestamp,
        seed: u64,
    ) -> Self {
        let flow = NewestTileFlow {
            phase: Phase::Start,
        };
        start(state, Ok(flow), deadline, READ_DEADLINE_MICROS, now, seed)
    }
}

/// Where the search stands.
#[derive(Debug)]
enum Phase {
    /// Nothing sent yet.
    Start,
    /// The read of the first OPS row is out.
    Read(ChildId),
}

/// The flow of [`NewestTile`]: one read of the first OPS row.
#[derive(Debug)]
pub struct NewestTileFlow {
    phase: Phase,
}

impl Flow for NewestTileFlow {
    type Schema = TraceStoreSchema;
    type Output = Option<u32>;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<Option<u32>> {
        let child = match self.phase {
            Phase::Read(child) => child,
            Phase::Start => {
                let filter = RowFilter::Chain(alloc::vec![
                    family(FAMILY_OPS),
                    RowFilter::ColumnQualifierRegex(COLUMN_HASH.to_vec()),
                    RowFilter::StripValue,
                ]);
                let request = read_request(
                    state,
                    RowSet::range(rowkit_codec::model::RowRange::prefix(OPS_ROWS_PREFIX)),
                    filter,
                    1,
                );
                let child = io.read_rows(request);
                self.phase = Phase::Read(child);
                child
            }
        };
        let Some(outcome) = io.take(child) else {
            return Ok(None);
        };
        let rows = rows_of(outcome)?;
        let Some(row) = rows.first() else {
            return Ok(Some(None));
        };
        let key = parse_ops_row_tile_key(&row.key)?;
        Ok(Some(tile_index_of_key(key)))
    }
}
