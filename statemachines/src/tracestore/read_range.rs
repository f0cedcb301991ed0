//! `ReadRange(first, last)` (`spec/tracestore.md` 12.2): every trace of the commits
//! `first ..= last`, one [`TracesInRange`] over their tiles.

use rowkit_codec::tracestore::TraceStoreError;
use rowkit_codec::tracestore::keys::{TilePosition, repo_index_position};

use super::TraceStoreEvent;
use super::range::TracesInRange;
use super::state::TraceStoreState;
use super::{Progress, READ_DEADLINE_MICROS, Tile, TraceStoreSchema, start};
use crate::Timestamp;
use crate::operation::{ContextArg, Flow, Io, Operation};

/// `ReadRange(first, last)`: every trace of the commits `first ..= last`.
pub type ReadRange<'a> = Operation<'a, ReadRangeFlow>;

impl<'a> ReadRange<'a> {
    /// Reads the commits `first ..= last`, aborted at `deadline` (default:
    /// [`READ_DEADLINE_MICROS`] after `now`).
    pub fn new(
        state: impl Into<ContextArg<'a, TraceStoreState>>,
        first: i64,
        last: i64,
        deadline: Option<Timestamp>,
        now: Timestamp,
        seed: u64,
    ) -> Self {
        let flow = check_range(first, last)
            .and_then(|(a, b)| TracesInRange::new(a.tile_key, b.tile_key, a.offset, b.offset))
            .map(|range| ReadRangeFlow { first, last, range });
        start(state, flow, deadline, READ_DEADLINE_MICROS, now, seed)
    }
}

/// Validates a commit range.
fn check_range(first: i64, last: i64) -> Result<(TilePosition, TilePosition), TraceStoreError> {
    let a = repo_index_position(first)?;
    let b = repo_index_position(last)?;
    if first > last {
        return Err(TraceStoreError::BadRepoIndex);
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

impl Flow for ReadRangeFlow {
    type Schema = TraceStoreSchema;
    type Output = Tile;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<Tile> {
        let Some(mut tile) = self.range.advance(io, state)? else {
            return Ok(None);
        };
        tile.commits = (self.first as u32..=self.last as u32).collect();
        Ok(Some(tile))
    }
}
