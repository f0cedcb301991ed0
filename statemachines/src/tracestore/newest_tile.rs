//! `NewestTile` (`spec/tracestore.md` 12.4): the tile index of the first OPS row.

use rowkit_codec::model::{RowFilter, RowSet};
use rowkit_codec::tracestore::cells::{COLUMN_HASH, FAMILY_OPS};
use rowkit_codec::tracestore::keys::{OPS_ROWS_PREFIX, parse_ops_row_tile_key, tile_index_of_key};

use rowkit_codec::tracestore::Layout;

use super::TraceStoreEvent;
use super::aware::{Aware, TableFlow};
use super::requests::{family, read_request};
use super::state::TraceStoreState;
use super::{Progress, TraceStoreSchema, begin};
use crate::children::ChildId;
use crate::operation::{ContextArg, Flow, Io, Operation, Start};
use crate::ready;

/// `NewestTile`: the index of the newest tile, `None` when the table has none (an aware
/// process's: of the truth's table, [`Aware`]).
pub type NewestTile<'a> = Operation<'a, Aware<NewestTileFlow>>;

impl<'a> NewestTile<'a> {
    /// Finds the newest tile as `start` says.
    pub fn new(state: impl Into<ContextArg<'a, TraceStoreState>>, start: Start) -> Self {
        begin(state, Ok(Aware::new(NewestTileFlow::new())), start)
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

impl NewestTileFlow {
    /// The flow of [`NewestTile::new`], for a parent flow (the migration's passes).
    pub(crate) fn new() -> NewestTileFlow {
        NewestTileFlow {
            phase: Phase::Start,
        }
    }
}

impl TableFlow for NewestTileFlow {
    const WRITES: bool = false;

    fn mirror(&self, _layout: Layout) -> Option<NewestTileFlow> {
        None
    }
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
        let rows = ready!(io.rows(child));
        let Some(row) = rows.first() else {
            return Ok(Some(None));
        };
        let key = parse_ops_row_tile_key(&row.key)?;
        Ok(Some(tile_index_of_key(key)))
    }
}
