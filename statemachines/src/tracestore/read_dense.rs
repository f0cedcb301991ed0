//! `ReadDense(last, n)` (`GetDenseTile`, `spec/tracestore.md` 12.3): the newest `n` commits up
//! to `last` that hold data, from ranges stepping back one tile at a time.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::tracestore::keys::{TILE_SIZE, repo_index_position, tile_index_of_key, tile_key};
use rowkit_codec::tracestore::ops::normalize_param_set;
use rowkit_codec::tracestore::{Layout, ParamSet};

use super::aware::{Aware, TableFlow};
use super::range::TracesInRange;
use super::state::TraceStoreState;
use super::{Progress, Tile, Trace, TraceStoreError, TraceStoreEvent, TraceStoreSchema, begin};
use crate::operation::{ContextArg, Flow, Io, Operation, Start};
use crate::ready;

/// Tile steps of a dense read.
pub(crate) const MAX_DENSE_STEPS: usize = 50;

/// `ReadDense(last, n)`: the newest `n` commits up to `last` that hold data (an aware
/// process's: of the truth's table, [`Aware`]).
pub type ReadDense<'a> = Operation<'a, Aware<ReadDenseFlow>>;

impl<'a> ReadDense<'a> {
    /// Reads the newest `n` commits up to `last` that hold data as `start` says.
    pub fn new(
        state: impl Into<ContextArg<'a, TraceStoreState>>,
        last: i64,
        n: usize,
        start: Start,
    ) -> Self {
        let flow = ReadDenseFlow::new(last, n).map(Aware::new);
        begin(state, flow, start)
    }
}

/// The flow of [`ReadDense`]: ranges stepping back one tile at a time (the first from `last`),
/// at most 50 (`MAX_DENSE_STEPS`).
#[derive(Debug)]
pub struct ReadDenseFlow {
    n: usize,
    start_tk: i32,
    end_tk: i32,
    end_idx: u32,
    steps: usize,
    found: Vec<u32>,
    traces: BTreeMap<String, Trace>,
    paramset: ParamSet,
    /// The range of the current step.
    range: TracesInRange,
}

impl ReadDenseFlow {
    /// The newest `n` commits up to `last` that hold data: the first range goes back from
    /// `last` far enough for `n` commits.
    fn new(last: i64, n: usize) -> Result<ReadDenseFlow, TraceStoreError> {
        let end = repo_index_position(last)?;
        if n == 0 {
            return Err(TraceStoreError::BadArgument);
        }
        let oldest = tile_key(0);
        let (end_tk, end_idx) = (end.tile_key, end.offset);
        let mut start_tk = end_tk;
        let mut k = n as i64 - i64::from(end_idx);
        while k > 0 && start_tk < oldest {
            k -= 256;
            start_tk += 1;
        }
        Ok(ReadDenseFlow {
            n,
            start_tk,
            end_tk,
            end_idx,
            steps: 0,
            found: Vec::new(),
            traces: BTreeMap::new(),
            paramset: ParamSet::new(),
            range: TracesInRange::new(start_tk, end_tk, 0, end_idx)?,
        })
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

impl TableFlow for ReadDenseFlow {
    const WRITES: bool = false;

    fn mirror(&self, _layout: Layout) -> Option<ReadDenseFlow> {
        None
    }
}

impl Flow for ReadDenseFlow {
    type Schema = TraceStoreSchema;
    type Output = Tile;

    fn advance(
        &mut self,
        io: &mut Io<TraceStoreEvent>,
        state: &mut TraceStoreState,
    ) -> Progress<Tile> {
        loop {
            let tile = ready!(self.range.advance(io, state));
            self.steps += 1;
            self.absorb(tile);
            if self.found.len() == self.n
                || self.start_tk >= tile_key(0)
                || self.steps >= MAX_DENSE_STEPS
            {
                return Ok(Some(self.result()));
            }
            // One tile further back, in full.
            self.start_tk += 1;
            self.end_tk = self.start_tk;
            self.end_idx = 255;
            self.range = TracesInRange::new(self.start_tk, self.end_tk, 0, self.end_idx)?;
        }
    }
}
