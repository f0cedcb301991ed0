//! `UnsettledPoints` — the source's points its target neither holds nor supersedes, tile by
//! tile, read-only (`docs/migration.md` §6.3): what `check` reports as `write_after_switch`
//! on a table whose marker says the switch happened. The tiles are read as the migration's
//! passes read them ([`ReadTilePoints`], newest first down to tile index 0) and judged by
//! [`TilePoints::unsettled_in`], the definition the sweep adopts stragglers by.

use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::model::Timestamp;
use rowkit_codec::tracestore::keys::{tile_index_of_key, tile_key};

use super::super::TraceStoreEvent;
use super::super::newest_tile::NewestTileFlow;
use super::copy_tile::{ReadTilePoints, TilePoints};
use super::{TablePair, TraceMigrationSchema};
use crate::operation::{ContextArg, Flow, Io, Operation, Progress, Start};
use crate::{RetryPolicy, ready};

/// A source point the target neither holds nor supersedes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsettledPoint {
    /// The source's trace row holding it.
    pub row_key: Vec<u8>,
    /// The trace id text.
    pub trace: String,
    /// The repo index.
    pub commit: u32,
    /// The digest (`""`: missing).
    pub digest: String,
    /// The point's timestamp.
    pub ts: Timestamp,
}

/// `UnsettledPoints`: every source point of `pair` its target neither holds nor supersedes,
/// newest tile first.
pub type UnsettledPoints<'a> = Operation<'a, UnsettledPointsFlow>;

impl<'a> UnsettledPoints<'a> {
    /// Compares `pair.source` with `pair.target` as `start` says; reads only.
    pub fn new(pair: impl Into<ContextArg<'a, TablePair>>, start: Start) -> UnsettledPoints<'a> {
        let flow = UnsettledPointsFlow {
            found: Vec::new(),
            phase: Phase::Newest(NewestTileFlow::new()),
        };
        Operation::begin(pair.into(), start, RetryPolicy::default(), flow)
    }
}

#[derive(Debug)]
enum Phase {
    /// The source's newest tile being found.
    Newest(NewestTileFlow),
    /// Tile `tk` of the source being read.
    Source(i32, ReadTilePoints),
    /// Tile `tk` of the target being read.
    Target(i32, TilePoints, ReadTilePoints),
    Done,
}

/// The flow of [`UnsettledPoints`].
#[derive(Debug)]
pub struct UnsettledPointsFlow {
    found: Vec<UnsettledPoint>,
    phase: Phase,
}

impl Flow for UnsettledPointsFlow {
    type Schema = TraceMigrationSchema;
    type Output = Vec<UnsettledPoint>;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        pair: &mut TablePair,
    ) -> Progress<Vec<UnsettledPoint>, TraceMigrationSchema> {
        loop {
            self.phase = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Newest(mut newest) => {
                    let index = ready!(newest.advance(io, &mut pair.source),
                        self.phase => Phase::Newest(newest));
                    let Some(i) = index else {
                        return Ok(Some(core::mem::take(&mut self.found)));
                    };
                    let tk = tile_key(i64::from(i));
                    Phase::Source(tk, ReadTilePoints::new(tk))
                }
                Phase::Source(tk, mut read) => {
                    let source = ready!(read.advance(io, &mut pair.source),
                        self.phase => Phase::Source(tk, read));
                    Phase::Target(tk, source, ReadTilePoints::new(tk))
                }
                Phase::Target(tk, source, mut read) => {
                    let target = ready!(read.advance(io, &mut pair.target),
                        self.phase => Phase::Target(tk, source, read));
                    let unsettled = source.unsettled_in(&target);
                    let first_commit = tile_index_of_key(tk).unwrap_or(0).saturating_mul(256);
                    for (row_key, trace, points) in source.rows_of(tk, unsettled)? {
                        for (offset, (digest, ts)) in points {
                            self.found.push(UnsettledPoint {
                                row_key: row_key.clone(),
                                trace: trace.clone(),
                                commit: first_commit + offset,
                                digest,
                                ts,
                            });
                        }
                    }
                    // Tiles go downwards to tile index 0, whose key is `i32::MAX`.
                    if tk == i32::MAX {
                        return Ok(Some(core::mem::take(&mut self.found)));
                    }
                    Phase::Source(tk + 1, ReadTilePoints::new(tk + 1))
                }
                Phase::Done => return Ok(None),
            }
        }
    }
}
