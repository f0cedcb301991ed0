//! ReadRows and SampleRowKeys as lazy streams over [`TableStorage`] (`spec/bigtable.md` 9, 11).

use std::collections::VecDeque;
use std::sync::Arc;

use rowkit_codec::model::{KeyBound, Row, RowRange};
use rowkit_statemachines::readrows::row_chunks;
use rowkit_statemachines::{
    CellChunk, ReadRowsResponse, Response, SampleRowKeysResponse, SplitMix64, StoreError,
};

use super::filter::CompiledFilter;
use crate::{ChunkingOptions, TableStorage};

/// Bytes of row data between two SampleRowKeys samples (the last one is always `""`).
pub const SAMPLE_INTERVAL_BYTES: u64 = 16 * 1024 * 1024;

/// The rows of one ReadRows request, produced lazily: one `next_row` call per stored row,
/// filtered, cut into responses per the store's [`ChunkingOptions`], or handed over whole
/// ([`Response::Rows`], one row per part) to a driver in the same process.
pub(crate) struct ReadStream<'a, S: TableStorage> {
    pub(crate) store: &'a S,
    pub(crate) table: String,
    /// Disjoint ranges in scan order (descending when reversed).
    pub(crate) ranges: VecDeque<RowRange>,
    /// The last key read from the front range.
    pub(crate) after: Option<Vec<u8>>,
    pub(crate) reversed: bool,
    pub(crate) filter: Option<CompiledFilter>,
    pub(crate) rng: SplitMix64,
    /// 0 = unlimited.
    pub(crate) rows_limit: u64,
    pub(crate) rows_returned: u64,
    pub(crate) chunking: ChunkingOptions,
    /// Answer with whole rows instead of chunks (`Store::execute_local`).
    pub(crate) whole_rows: bool,
    /// Chunks waiting to fill a response (only with `chunks_per_response`).
    pub(crate) pending: VecDeque<CellChunk>,
    /// No more rows to read (the scan ended or failed).
    pub(crate) exhausted: bool,
}

impl<S: TableStorage> ReadStream<'_, S> {
    /// The next row to return, with its filtered cells; `None` at the end of the scan or the
    /// row limit.
    fn next_result_row(&mut self) -> Result<Option<Row>, StoreError> {
        loop {
            if self.rows_limit > 0 && self.rows_returned >= self.rows_limit {
                return Ok(None);
            }
            let Some(range) = self.ranges.front() else {
                return Ok(None);
            };
            let next =
                self.store
                    .next_row(&self.table, range, self.after.as_deref(), self.reversed)?;
            let Some(row) = next else {
                self.ranges.pop_front();
                self.after = None;
                continue;
            };
            if is_one_key(range) {
                // Nothing follows the one key of a point range: skip the lookup that would
                // only find its end (a node read is a point read).
                self.ranges.pop_front();
                self.after = None;
            } else {
                self.after = Some(row.key.clone());
            }
            let cells = match &self.filter {
                Some(f) => f.apply(&row.key, row.cells, &mut self.rng),
                None => row.cells,
            };
            // Rows whose filtered result is empty are omitted and not counted.
            if cells.is_empty() {
                continue;
            }
            self.rows_returned += 1;
            return Ok(Some(Row {
                key: row.key,
                cells,
            }));
        }
    }

    fn part(chunks: Vec<CellChunk>) -> Response {
        Response::ReadRowsPart(ReadRowsResponse {
            chunks,
            last_scanned_row_key: Vec::new(),
        })
    }
}

/// Whether `range` holds a single key (`[k, k]`).
fn is_one_key(range: &RowRange) -> bool {
    matches!((&range.start, &range.end), (KeyBound::Closed(s), KeyBound::Closed(e)) if s == e)
}

impl<S: TableStorage> Iterator for ReadStream<'_, S> {
    type Item = Result<Response, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let split = self.chunking.split_values_every;
        let per_response = match self.chunking.chunks_per_response {
            Some(n) if !self.whole_rows => n,
            // One response per row, like the service and the emulator, or one whole row.
            _ => {
                if self.exhausted {
                    return None;
                }
                return match self.next_result_row() {
                    Ok(Some(row)) if self.whole_rows => {
                        Some(Ok(Response::Rows(vec![Arc::new(row)])))
                    }
                    Ok(Some(row)) => Some(Ok(Self::part(row_chunks(&row, split)))),
                    Ok(None) => {
                        self.exhausted = true;
                        None
                    }
                    Err(e) => {
                        self.exhausted = true;
                        Some(Err(e))
                    }
                };
            }
        };
        let per_response = per_response.max(1);
        while !self.exhausted && self.pending.len() < per_response {
            match self.next_result_row() {
                Ok(Some(row)) => self.pending.extend(row_chunks(&row, split)),
                Ok(None) => self.exhausted = true,
                Err(e) => {
                    // Partial rows in `pending` are dropped; the client re-reads after its
                    // last committed row.
                    self.exhausted = true;
                    self.pending.clear();
                    return Some(Err(e));
                }
            }
        }
        if self.pending.is_empty() {
            return None;
        }
        let n = per_response.min(self.pending.len());
        Some(Ok(Self::part(self.pending.drain(..n).collect())))
    }
}

/// SampleRowKeys, lazily: a key every [`SAMPLE_INTERVAL_BYTES`] of row data, then
/// `("", total)`.
pub(crate) struct SampleStream<'a, S: TableStorage> {
    pub(crate) store: &'a S,
    pub(crate) table: String,
    pub(crate) after: Option<Vec<u8>>,
    /// Bytes of the rows before `after` (inclusive).
    pub(crate) offset: u64,
    /// `offset` at the last sample.
    pub(crate) last_sample: u64,
    pub(crate) done: bool,
}

impl<S: TableStorage> Iterator for SampleStream<'_, S> {
    type Item = Result<Response, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let all = RowRange::all();
        loop {
            match self
                .store
                .next_row_size(&self.table, &all, self.after.as_deref())
            {
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
                Ok(None) => {
                    self.done = true;
                    return Some(Ok(sample(Vec::new(), self.offset)));
                }
                Ok(Some((key, size))) => {
                    let before = self.offset;
                    self.offset = self.offset.saturating_add(size);
                    self.after = Some(key.clone());
                    if before.saturating_sub(self.last_sample) >= SAMPLE_INTERVAL_BYTES {
                        self.last_sample = before;
                        return Some(Ok(sample(key, before)));
                    }
                }
            }
        }
    }
}

fn sample(row_key: Vec<u8>, offset: u64) -> Response {
    Response::SampleRowKeysPart(SampleRowKeysResponse {
        row_key,
        offset_bytes: i64::try_from(offset).unwrap_or(i64::MAX),
    })
}
