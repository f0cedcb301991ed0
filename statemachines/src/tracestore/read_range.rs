//! `ReadRange(first, last)` (`spec/tracestore.md` 12.2): every trace of the commits
//! `first ..= last`, one [`TracesInRange`] over their tiles.

use rowkit_codec::tracestore::keys::{TilePosition, repo_index_position};
use rowkit_codec::tracestore::{CodecError, Layout};

use super::aware::{Aware, TableFlow};
use super::range::TracesInRange;
use super::state::TraceStoreState;
use super::{Progress, Tile, TraceStoreError, TraceStoreEvent, TraceStoreSchema, begin};
use crate::operation::{ContextArg, Flow, Io, Operation, Start};

/// `ReadRange(first, last)`: every trace of the commits `first ..= last` (an aware process's:
/// of the truth's table, [`Aware`]).
pub type ReadRange<'a> = Operation<'a, Aware<ReadRangeFlow>>;

impl<'a> ReadRange<'a> {
    /// Reads the commits `first ..= last` as `start` says.
    pub fn new(
        state: impl Into<ContextArg<'a, TraceStoreState>>,
        first: i64,
        last: i64,
        start: Start,
    ) -> Self {
        let flow = check_range(first, last)
            .and_then(|(a, b)| TracesInRange::new(a.tile_key, b.tile_key, a.offset, b.offset))
            .map(|range| Aware::new(ReadRangeFlow { first, last, range }));
        begin(state, flow, start)
    }
}

/// Validates a commit range.
fn check_range(first: i64, last: i64) -> Result<(TilePosition, TilePosition), TraceStoreError> {
    let a = repo_index_position(first)?;
    let b = repo_index_position(last)?;
    if first > last {
        return Err(TraceStoreError::Codec(CodecError::BadRepoIndex));
    }
    Ok((a, b))
}

/// The flow of [`ReadRange`]: the range's tiles, then the commits numbered `first ..= last`.
#[derive(Debug)]
pub struct ReadRangeFlow {
    first: i64,
    last: i64,
    range: TracesInRange,
}

impl TableFlow for ReadRangeFlow {
    const WRITES: bool = false;

    fn mirror(&self, _layout: Layout) -> Option<ReadRangeFlow> {
        None
    }
}

impl Flow for ReadRangeFlow {
    type Schema = TraceStoreSchema;
    type Output = Tile;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<Tile> {
        let mut tile = crate::ready!(self.range.advance(io, state));
        tile.commits = (self.first as u32..=self.last as u32).collect();
        Ok(Some(tile))
    }
}
