//! Reading (`spec/tracestore.md` 11.7, 12): [`LoadTile`] (the OPS read and the 32 trace scans,
//! plus 32 options scans in the md5 layout, all together), [`TracesInRange`] (tiles oldest
//! first, one at a time, then range assembly and, in the digest-id layout, id resolution with
//! one full map read on a cache miss), and the machines' flows [`ReadRange`], [`ReadDense`] and
//! [`NewestTile`].

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::model::{Row, RowFilter, RowSet};
use rowkit_codec::tracestore::cells::{
    COLUMN_HASH, FAMILY_OPS, FAMILY_OPTIONS, FAMILY_TRACE, cell_to_digest, decode_digest_id_cell,
};
use rowkit_codec::tracestore::keys::{
    OPS_ROWS_PREFIX, SHARDS, TILE_SIZE, TYPE_OPTIONS, TYPE_TRACE, TilePosition, extract_subkey,
    parse_ops_row_tile_key, parse_trace_qualifier, repo_index_position, shard_prefix_range,
    tile_index_of_key, tile_key,
};
use rowkit_codec::tracestore::ops::{
    add_params, normalize_param_set, parse_options_text, trace_id_text,
};
use rowkit_codec::tracestore::{Layout, OrderedParamSet, ParamSet, Params, TraceStoreError};

use super::digest_ids::ReadFullMap;
use super::op::{Flow, Io, Progress, WaitAll};
use super::requests::{family, latest, ops_read_request, read_request, rows_of, take_ops_read};
use super::state::TraceStoreState;
use super::{Tile, Trace};
use crate::children::ChildId;

/// Tile steps of a dense read.
pub(crate) const MAX_DENSE_STEPS: usize = 50;

/// One slot of a trace in a tile as read: a digest (md5) or an id (digest-id).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Slot {
    Digest(String),
    Id(u64),
}

impl Slot {
    fn missing(layout: Layout) -> Slot {
        match layout {
            Layout::Md5 => Slot::Digest(String::new()),
            Layout::DigestId => Slot::Id(0),
        }
    }
}

/// One tile as read, before range assembly.
#[derive(Debug)]
struct RawTile {
    ops: OrderedParamSet,
    traces: Vec<(Vec<u8>, Vec<Slot>)>,
    options: BTreeMap<Vec<u8>, Params>,
}

// ---------------------------------------------------------------- one tile (§12.1, §11.7)

/// Where a tile load stands. Outcomes are checked in this order, as the protocol waits: the
/// OPS read first (its store error ends the load at once), then every trace scan, then every
/// options scan.
#[derive(Debug)]
enum LoadPhase {
    Ops,
    Traces {
        ops_rows: Vec<Row>,
    },
    Options {
        ops_rows: Vec<Row>,
        trace_rows: Vec<Row>,
    },
}

/// `loadTile(tk)`.
#[derive(Debug)]
struct LoadTile {
    tile_key: i32,
    ops: ChildId,
    traces: WaitAll,
    options: WaitAll,
    phase: LoadPhase,
}

impl LoadTile {
    /// Sends the tile's requests together: OPS read, 32 trace scans, (md5) 32 options scans.
    fn start(io: &mut Io, state: &TraceStoreState, tile_key: i32) -> LoadTile {
        let ops = io.read_rows(ops_read_request(state, tile_key));
        let trace_filter = RowFilter::Chain(alloc::vec![
            family(FAMILY_TRACE),
            latest(),
            RowFilter::CellsPerRowLimit(256)
        ]);
        let traces = (0..SHARDS)
            .map(|s| {
                io.read_rows(read_request(
                    state,
                    RowSet::range(shard_prefix_range(s, TYPE_TRACE, tile_key)),
                    trace_filter.clone(),
                    0,
                ))
            })
            .collect();
        let options = if state.layout == Layout::Md5 {
            let filter = RowFilter::Chain(alloc::vec![
                family(FAMILY_OPTIONS),
                latest(),
                RowFilter::CellsPerRowLimit(1)
            ]);
            (0..SHARDS)
                .map(|s| {
                    io.read_rows(read_request(
                        state,
                        RowSet::range(shard_prefix_range(s, TYPE_OPTIONS, tile_key)),
                        filter.clone(),
                        0,
                    ))
                })
                .collect()
        } else {
            Vec::new()
        };
        LoadTile {
            tile_key,
            ops,
            traces: WaitAll::new(traces),
            options: WaitAll::new(options),
            phase: LoadPhase::Ops,
        }
    }

    /// Decodes the tile once every read has completed.
    fn decode(
        &self,
        state: &mut TraceStoreState,
        ops_rows: &[Row],
        trace_rows: &[Row],
        options_rows: &[Row],
    ) -> Result<RawTile, TraceStoreError> {
        let layout = state.layout;
        let ops = take_ops_read(state, self.tile_key, ops_rows)?
            .map(|c| c.ops)
            .unwrap_or_default();
        let mut traces = Vec::with_capacity(trace_rows.len());
        for row in trace_rows {
            let mut slots = alloc::vec![Slot::missing(layout); TILE_SIZE as usize];
            for cell in row.cells.iter().filter(|c| c.family == FAMILY_TRACE) {
                let i = parse_trace_qualifier(&cell.qualifier)? as usize;
                let slot = match layout {
                    Layout::Md5 => Slot::Digest(cell_to_digest(&cell.value)),
                    Layout::DigestId => Slot::Id(decode_digest_id_cell(&cell.value)?),
                };
                if let Some(s) = slots.get_mut(i) {
                    *s = slot;
                }
            }
            traces.push((extract_subkey(&row.key).to_vec(), slots));
        }
        let mut options = BTreeMap::new();
        for row in options_rows {
            if let Some(cell) = row.cells.iter().find(|c| c.family == FAMILY_OPTIONS) {
                options.insert(
                    extract_subkey(&row.key).to_vec(),
                    parse_options_text(&cell.value)?,
                );
            }
        }
        Ok(RawTile {
            ops,
            traces,
            options,
        })
    }
}

impl Flow for LoadTile {
    type Output = RawTile;

    fn advance(&mut self, io: &mut Io, state: &mut TraceStoreState) -> Progress<RawTile> {
        loop {
            match &mut self.phase {
                LoadPhase::Ops => {
                    let Some(outcome) = io.take(self.ops) else {
                        return Ok(None);
                    };
                    let ops_rows = rows_of(outcome)?;
                    self.phase = LoadPhase::Traces { ops_rows };
                }
                LoadPhase::Traces { ops_rows } => {
                    let Some(outcomes) = self.traces.poll(io) else {
                        return Ok(None);
                    };
                    let mut trace_rows = Vec::new();
                    for outcome in outcomes {
                        trace_rows.extend(rows_of(outcome)?);
                    }
                    let ops_rows = core::mem::take(ops_rows);
                    self.phase = LoadPhase::Options {
                        ops_rows,
                        trace_rows,
                    };
                }
                LoadPhase::Options {
                    ops_rows,
                    trace_rows,
                } => {
                    let Some(outcomes) = self.options.poll(io) else {
                        return Ok(None);
                    };
                    let mut options_rows = Vec::new();
                    for outcome in outcomes {
                        options_rows.extend(rows_of(outcome)?);
                    }
                    let (ops_rows, trace_rows) =
                        (core::mem::take(ops_rows), core::mem::take(trace_rows));
                    return self
                        .decode(state, &ops_rows, &trace_rows, &options_rows)
                        .map(Some);
                }
            }
        }
    }
}

// ---------------------------------------------------------------- a range (§12.2)

/// Traces of a range as assembled, before ids are resolved.
#[derive(Debug)]
struct Assembled {
    n_commits: usize,
    traces: BTreeMap<String, (Params, Params, Vec<Slot>)>,
    paramset: ParamSet,
}

/// Where a range read stands.
#[derive(Debug)]
enum RangePhase {
    /// Loading tile `tiles.len()` (oldest first).
    Load(LoadTile),
    /// Digest-id layout: an id was not cached, the full map is being read.
    Resolve {
        assembled: Assembled,
        map: ReadFullMap,
    },
}

/// `getTracesInRange(startTK, endTK, startOff, endOff)`: tiles loaded oldest first, one at a
/// time, then assembled and (digest-id) resolved to digests. The tile's `commits` are
/// `0 .. n_commits`; callers replace them with repo indices.
#[derive(Debug)]
struct TracesInRange {
    start_tk: i32,
    start_off: u32,
    end_off: u32,
    n_tiles: usize,
    n_commits: usize,
    tiles: Vec<RawTile>,
    phase: Option<RangePhase>,
}

impl TracesInRange {
    /// Checks the tile math; nothing is sent before the first [`Flow::advance`].
    fn new(
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
            phase: None,
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
                    add_params(&mut out.paramset, &params);
                    add_params(&mut out.paramset, &options);
                    (
                        params.clone(),
                        options.clone(),
                        alloc::vec![Slot::missing(layout); n_commits],
                    )
                });
                entry.2[pos..pos + len].clone_from_slice(&slots[a..a + len]);
            }
        }
        normalize_param_set(&mut out.paramset);
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
                .map(|s| match s {
                    Slot::Digest(d) => d,
                    Slot::Id(id) => String::from(state.digests.digest(id).unwrap_or_default()),
                })
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
    type Output = Tile;

    fn advance(&mut self, io: &mut Io, state: &mut TraceStoreState) -> Progress<Tile> {
        loop {
            match &mut self.phase {
                None => {
                    let tk = self.start_tk - self.tiles.len() as i32;
                    self.phase = Some(RangePhase::Load(LoadTile::start(io, state, tk)));
                }
                Some(RangePhase::Load(load)) => {
                    let Some(tile) = load.advance(io, state)? else {
                        return Ok(None);
                    };
                    self.tiles.push(tile);
                    if self.tiles.len() < self.n_tiles {
                        self.phase = None;
                        continue;
                    }
                    let assembled = self.assemble(state.layout)?;
                    // Ids are resolved after every trace scan (fix: the original read the map
                    // concurrently, so an id written in between failed the read).
                    if ids_of(&assembled)
                        .iter()
                        .any(|&id| state.digests.digest(id).is_none())
                    {
                        let map = ReadFullMap::start(io, state);
                        self.phase = Some(RangePhase::Resolve { assembled, map });
                        continue;
                    }
                    return resolved(state, assembled).map(Some);
                }
                Some(RangePhase::Resolve { map, .. }) => {
                    if map.advance(io, state)?.is_none() {
                        return Ok(None);
                    }
                    let Some(RangePhase::Resolve { assembled, .. }) = self.phase.take() else {
                        return Ok(None);
                    };
                    return resolved(state, assembled).map(Some);
                }
            }
        }
    }
}

// ---------------------------------------------------------------- machines

/// Validates a commit range.
pub(crate) fn check_range(
    first: i64,
    last: i64,
) -> Result<(TilePosition, TilePosition), TraceStoreError> {
    let a = repo_index_position(first)?;
    let b = repo_index_position(last)?;
    if first > last {
        return Err(TraceStoreError::BadRepoIndex);
    }
    Ok((a, b))
}

/// `ReadRange(first, last)`.
#[derive(Debug)]
pub(crate) struct ReadRange {
    first: i64,
    last: i64,
    range: Option<TracesInRange>,
}

impl ReadRange {
    /// Reads the commits `first ..= last`.
    pub(crate) fn new(first: i64, last: i64) -> ReadRange {
        ReadRange {
            first,
            last,
            range: None,
        }
    }
}

impl Flow for ReadRange {
    type Output = Tile;

    fn advance(&mut self, io: &mut Io, state: &mut TraceStoreState) -> Progress<Tile> {
        let range = match &mut self.range {
            Some(range) => range,
            None => {
                let (a, b) = check_range(self.first, self.last)?;
                self.range.insert(TracesInRange::new(
                    a.tile_key, b.tile_key, a.offset, b.offset,
                )?)
            }
        };
        let Some(mut tile) = range.advance(io, state)? else {
            return Ok(None);
        };
        tile.commits = (self.first as u32..=self.last as u32).collect();
        Ok(Some(tile))
    }
}

/// `ReadDense(last, n)` (`GetDenseTile`, §12.3): ranges stepping back one tile at a time, at
/// most [`MAX_DENSE_STEPS`].
#[derive(Debug)]
pub(crate) struct ReadDense {
    last: i64,
    n: usize,
    start_tk: i32,
    end_tk: i32,
    end_idx: u32,
    steps: usize,
    found: Vec<u32>,
    traces: BTreeMap<String, Trace>,
    paramset: ParamSet,
    range: Option<TracesInRange>,
}

impl ReadDense {
    /// The newest `n` commits up to `last` that hold data.
    pub(crate) fn new(last: i64, n: usize) -> ReadDense {
        ReadDense {
            last,
            n,
            start_tk: 0,
            end_tk: 0,
            end_idx: 0,
            steps: 0,
            found: Vec::new(),
            traces: BTreeMap::new(),
            paramset: ParamSet::new(),
            range: None,
        }
    }

    /// The first range: back from `last` far enough for `n` commits.
    fn first_range(&mut self) -> Result<TracesInRange, TraceStoreError> {
        let end = repo_index_position(self.last)?;
        if self.n == 0 {
            return Err(TraceStoreError::BadArgument);
        }
        let oldest = tile_key(0);
        self.end_tk = end.tile_key;
        self.end_idx = end.offset;
        self.start_tk = self.end_tk;
        let mut k = self.n as i64 - i64::from(self.end_idx);
        while k > 0 && self.start_tk < oldest {
            k -= 256;
            self.start_tk += 1;
        }
        TracesInRange::new(self.start_tk, self.end_tk, 0, self.end_idx)
    }

    /// Adds the filled columns of one loaded range in front of the result.
    fn absorb(&mut self, range: Tile) {
        let tile_start = tile_index_of_key(self.start_tk).unwrap_or(0) * TILE_SIZE;
        let width = (self.start_tk - self.end_tk) as usize * 256 + self.end_idx as usize + 1;
        let mut filled: Vec<usize> = (0..width)
            .filter(|&p| {
                range
                    .traces
                    .values()
                    .any(|t| t.digests.get(p).is_some_and(|d| !d.is_empty()))
            })
            .collect();
        let want = self.n - self.found.len();
        if filled.len() > want {
            filled.drain(..filled.len() - want);
        }
        for (key, values) in &range.paramset {
            for v in values {
                let list = self.paramset.entry(key.clone()).or_default();
                if !list.contains(v) {
                    list.push(v.clone());
                }
            }
        }
        if filled.is_empty() {
            return;
        }
        let had = self.found.len();
        for t in self.traces.values_mut() {
            let mut cols: Vec<String> = alloc::vec![String::new(); filled.len()];
            cols.append(&mut t.digests);
            t.digests = cols;
        }
        for (key, t) in range.traces {
            let cols: Vec<String> = filled
                .iter()
                .map(|&p| t.digests.get(p).cloned().unwrap_or_default())
                .collect();
            let entry = self.traces.entry(key).or_insert_with(|| Trace {
                params: t.params.clone(),
                options: t.options.clone(),
                digests: alloc::vec![String::new(); filled.len() + had],
            });
            entry.digests[..filled.len()].clone_from_slice(&cols);
        }
        let mut commits: Vec<u32> = filled.iter().map(|&p| tile_start + p as u32).collect();
        commits.append(&mut self.found);
        self.found = commits;
    }

    /// The result once the steps are over.
    fn result(&mut self) -> Tile {
        if self.found.is_empty() {
            return Tile::default();
        }
        let mut paramset = core::mem::take(&mut self.paramset);
        normalize_param_set(&mut paramset);
        Tile {
            commits: core::mem::take(&mut self.found),
            traces: core::mem::take(&mut self.traces),
            paramset,
        }
    }
}

impl Flow for ReadDense {
    type Output = Tile;

    fn advance(&mut self, io: &mut Io, state: &mut TraceStoreState) -> Progress<Tile> {
        loop {
            if self.range.is_none() {
                let next = if self.steps == 0 {
                    self.first_range()?
                } else {
                    TracesInRange::new(self.start_tk, self.end_tk, 0, self.end_idx)?
                };
                self.range = Some(next);
            }
            let Some(range) = self.range.as_mut() else {
                return Ok(None);
            };
            let Some(tile) = range.advance(io, state)? else {
                return Ok(None);
            };
            self.range = None;
            self.steps += 1;
            self.absorb(tile);
            if self.found.len() == self.n
                || self.start_tk >= tile_key(0)
                || self.steps >= MAX_DENSE_STEPS
            {
                return Ok(Some(self.result()));
            }
            self.start_tk += 1;
            self.end_tk = self.start_tk;
            self.end_idx = 255;
        }
    }
}

/// `NewestTile` (§12.4): the tile index of the first OPS row, `None` on a table without tiles.
#[derive(Debug)]
pub(crate) struct NewestTile {
    child: Option<ChildId>,
}

impl NewestTile {
    /// Finds the newest tile.
    pub(crate) fn new() -> NewestTile {
        NewestTile { child: None }
    }
}

impl Flow for NewestTile {
    type Output = Option<u32>;

    fn advance(&mut self, io: &mut Io, state: &mut TraceStoreState) -> Progress<Option<u32>> {
        let child = match self.child {
            Some(child) => child,
            None => {
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
                *self.child.insert(io.read_rows(request))
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
