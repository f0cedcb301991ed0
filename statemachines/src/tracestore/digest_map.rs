//! Reads of the digest-id layout's digest map (`spec/tracestore.md` 11.4): [`LookupDigests`]
//! (one read of the map rows of some digests) and [`ReadFullMap`] (32 prefix scans),
//! both merged into the state's digest cache.

use alloc::collections::BTreeSet;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::model::RowSet;
use rowkit_codec::tracestore::cells::digest_map_row;
use rowkit_codec::tracestore::keys::{
    GLOBAL_TILE_KEY, SHARDS, TYPE_DIGEST_MAP, shard_prefix_range,
};

use super::requests::{map_filter, merge_map_rows, read_request, read_row_request};
use super::state::TraceStoreState;
use super::{Progress, TraceStoreEvent, TraceStoreSchema};
use crate::children::ChildId;
use crate::operation::{Flow, Io, WaitAll};
use crate::ready;

/// Row lookup of a set of normalized digests: one `ReadRows` of their map rows (a point read
/// when there is one row, nothing when the set is empty), merged into the digest cache.
#[derive(Debug)]
pub(crate) struct LookupDigests {
    read: MapRead,
}

/// The read of a [`LookupDigests`].
#[derive(Debug)]
enum MapRead {
    /// No digest has a map row: nothing to read.
    Nothing,
    /// The point read of the one map row.
    Row(ChildId),
    /// The read of several map rows.
    Rows(ChildId),
}

impl LookupDigests {
    /// Sends the lookup of `digests`.
    pub(crate) fn start(
        io: &mut Io<TraceStoreEvent>,
        state: &TraceStoreState,
        digests: &BTreeSet<String>,
    ) -> LookupDigests {
        let mut rows: Vec<Vec<u8>> = digests
            .iter()
            .filter_map(|d| digest_map_row(d))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let read = if rows.len() > 1 {
            let set = RowSet {
                row_keys: rows,
                row_ranges: Vec::new(),
            };
            MapRead::Rows(io.read_rows(read_request(state, set, map_filter(), 0)))
        } else if let Some(row_key) = rows.pop() {
            MapRead::Row(io.read_row(read_row_request(state, row_key, map_filter())))
        } else {
            MapRead::Nothing
        };
        LookupDigests { read }
    }
}

impl Flow for LookupDigests {
    type Schema = TraceStoreSchema;
    type Output = ();

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<()> {
        match self.read {
            MapRead::Nothing => {}
            MapRead::Row(child) => {
                let row = ready!(io.row(child));
                merge_map_rows(&mut state.digests, row.as_slice())?;
            }
            MapRead::Rows(child) => {
                let rows = ready!(io.rows(child));
                merge_map_rows(&mut state.digests, &rows)?;
            }
        }
        Ok(Some(()))
    }
}

/// Full map read: 32 prefix scans together, merged in shard order after all completed.
#[derive(Debug)]
pub(crate) struct ReadFullMap {
    scans: WaitAll,
}

impl ReadFullMap {
    /// Sends the 32 scans.
    pub(crate) fn start(io: &mut Io<TraceStoreEvent>, state: &TraceStoreState) -> ReadFullMap {
        let ids = (0..SHARDS)
            .map(|s| {
                let range = shard_prefix_range(s, TYPE_DIGEST_MAP, GLOBAL_TILE_KEY);
                io.read_rows(read_request(state, RowSet::range(range), map_filter(), 0))
            })
            .collect();
        ReadFullMap {
            scans: WaitAll::new(ids),
        }
    }
}

impl Flow for ReadFullMap {
    type Schema = TraceStoreSchema;
    type Output = ();

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<()> {
        let all: Vec<_> = ready!(self.scans.rows(io)).into_iter().flatten().collect();
        merge_map_rows(&mut state.digests, &all)?;
        Ok(Some(()))
    }
}
