//! A commit range (`spec/tracestore.md` 12.2): [`TracesInRange`] loads its tiles oldest first,
//! one at a time, then assembles the traces and, in the digest-id layout, resolves ids to
//! digests (with one full map read on a cache miss).

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::tracestore::ops::{ParamSetBuilder, trace_id_text};
use rowkit_codec::tracestore::{Layout, ParamSet, Params};

use super::digest_map::ReadFullMap;
use super::state::TraceStoreState;
use super::tile::{LoadTile, RawTile, Slot};
use super::{Progress, Tile, Trace, TraceStoreError, TraceStoreEvent, TraceStoreSchema};
use crate::operation::{Flow, Io};
use crate::ready;

/// Traces of a range as assembled, before ids are resolved.
#[derive(Debug)]
struct Assembled {
    n_commits: usize,
    traces: BTreeMap<String, (Params, Params, Vec<Slot>)>,
    paramset: ParamSet,
}

/// Where a range read stands.
#[derive(Debug)]
enum Phase {
    /// The next tile's load is to be sent (`tiles.len()`, oldest first).
    Next,
    /// Loading tile `tiles.len()`.
    Load(LoadTile),
    /// Digest-id layout: an id was not cached, the full map is being read.
    Resolve {
        assembled: Assembled,
        map: ReadFullMap,
    },
    /// Ended (a flow that ended is never advanced again).
    Done,
}

/// `getTracesInRange(startTK, endTK, startOff, endOff)`: tiles loaded oldest first, one at a
/// time, then assembled and (digest-id) resolved to digests. The tile's `commits` are
/// `0 .. n_commits`; callers replace them with repo indices.
#[derive(Debug)]
pub(super) struct TracesInRange {
    start_tk: i32,
    start_off: u32,
    end_off: u32,
    n_tiles: usize,
    n_commits: usize,
    tiles: Vec<RawTile>,
    phase: Phase,
}

impl TracesInRange {
    /// Checks the tile math; nothing is sent before the first [`Flow::advance`].
    pub(super) fn new(
        start_tk: i32,
        end_tk: i32,
        start_off: u32,
        end_off: u32,
    ) -> Result<Self, TraceStoreError> {
        if start_tk < end_tk {
            return Err(TraceStoreError::IncorrectTileMath);
        }
        let n_commits =
            (start_tk - end_tk) as i64 * 256 + i64::from(end_off) - i64::from(start_off) + 1;
        if n_commits <= 0 {
            return Err(TraceStoreError::IncorrectTileMath);
        }
        Ok(TracesInRange {
            start_tk,
            start_off,
            end_off,
            n_tiles: (start_tk - end_tk) as usize + 1,
            n_commits: n_commits as usize,
            tiles: Vec::new(),
            phase: Phase::Next,
        })
    }

    /// Range assembly over the loaded tiles (§12.2).
    fn assemble(&self, layout: Layout) -> Result<Assembled, TraceStoreError> {
        let (n_tiles, n_commits) = (self.n_tiles, self.n_commits);
        let mut out = Assembled {
            n_commits,
            traces: BTreeMap::new(),
            paramset: ParamSet::new(),
        };
        let mut paramset = ParamSetBuilder::new();
        let mut pos = n_commits;
        for idx in (0..n_tiles).rev() {
            let a = if idx == 0 { self.start_off } else { 0 } as usize;
            let b = if idx == n_tiles - 1 {
                self.end_off
            } else {
                255
            } as usize;
            let len = b - a + 1;
            pos = pos
                .checked_sub(len)
                .ok_or(TraceStoreError::IncorrectTileMath)?;
            if idx == 0 && pos != 0 {
                return Err(TraceStoreError::IncorrectTileMath);
            }
            let Some(tile) = self.tiles.get(idx) else {
                return Err(TraceStoreError::IncorrectTileMath);
            };
            for (subkey, slots) in &tile.traces {
                // A trace written before its OPS was readable is skipped (reproduce).
                let Ok(params) = tile.ops.decode_params(subkey) else {
                    continue;
                };
                let key = trace_id_text(&params);
                let options = tile.options.get(subkey).cloned().unwrap_or_default();
                let entry = out.traces.entry(key).or_insert_with(|| {
                    paramset.add(&params);
                    paramset.add(&options);
                    (
                        params.clone(),
                        options.clone(),
                        alloc::vec![Slot::missing(layout); n_commits],
                    )
                });
                entry.2[pos..pos + len].clone_from_slice(&slots[a..a + len]);
            }
        }
        out.paramset = paramset.finish_sorted();
        Ok(out)
    }
}

/// The ids of `assembled` other than 0 (digest-id layout).
fn ids_of(assembled: &Assembled) -> BTreeSet<u64> {
    assembled
        .traces
        .values()
        .flat_map(|t| t.2.iter())
        .filter_map(|s| match s {
            Slot::Id(id) if *id != 0 => Some(*id),
            _ => None,
        })
        .collect()
}

/// Resolves ids to digests with the cache; an id still unknown is `unknown digest id`.
fn resolved(state: &TraceStoreState, assembled: Assembled) -> Result<Tile, TraceStoreError> {
    if let Some(&id) = ids_of(&assembled)
        .iter()
        .find(|&&id| state.digests.digest(id).is_none())
    {
        return Err(TraceStoreError::UnknownDigestId(id));
    }
    let traces = assembled
        .traces
        .into_iter()
        .map(|(key, (params, options, slots))| {
            let digests = slots
                .into_iter()
                .map(|s| s.into_digest(&state.digests))
                .collect();
            (
                key,
                Trace {
                    params,
                    options,
                    digests,
                },
            )
        })
        .collect();
    Ok(Tile {
        commits: (0..assembled.n_commits as u32).collect(),
        traces,
        paramset: assembled.paramset,
    })
}

impl Flow for TracesInRange {
    type Schema = TraceStoreSchema;
    type Output = Tile;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<Tile> {
        loop {
            self.phase = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Next => {
                    let tk = self.start_tk - self.tiles.len() as i32;
                    Phase::Load(LoadTile::start(io, state, tk))
                }
                Phase::Load(mut load) => {
                    let tile = ready!(load.advance(io, state), self.phase => Phase::Load(load));
                    self.tiles.push(tile);
                    if self.tiles.len() < self.n_tiles {
                        self.phase = Phase::Next;
                        continue;
                    }
                    let assembled = self.assemble(state.layout)?;
                    // Ids are resolved after every trace scan (fix: the original read the map
                    // concurrently, so an id written in between failed the read).
                    if !ids_of(&assembled)
                        .iter()
                        .any(|&id| state.digests.digest(id).is_none())
                    {
                        return resolved(state, assembled).map(Some);
                    }
                    let map = ReadFullMap::start(io, state);
                    Phase::Resolve { assembled, map }
                }
                Phase::Resolve { assembled, mut map } => {
                    ready!(map.advance(io, state), self.phase => Phase::Resolve { assembled, map });
                    return resolved(state, assembled).map(Some);
                }
                Phase::Done => return Ok(None),
            }
        }
    }
}
