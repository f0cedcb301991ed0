//! ReadRows and SampleRowKeys as lazy streams over [`TableStorage`] (`spec/bigtable.md` 9, 11).

use std::collections::VecDeque;
use std::sync::Arc;

use rowkit_codec::model::{KeyBound, Row, RowRange, row_size};
use rowkit_statemachines::readrows::row_chunks;
use rowkit_statemachines::{
    CellChunk, ReadRowsResponse, Response, SampleRowKeysResponse, SplitMix64, StoreError,
};

use super::filter::CompiledFilter;
use super::hide_dropped;
use crate::{ChunkingOptions, TableStorage};

/// Bytes of row data (as [`rowkit_codec::model::row_size`] counts them) between two
/// SampleRowKeys samples. Production samples tablets of hundreds of MiB; a local table is small,
/// so this is small enough that a table of a few MiB (50 000 rows of 100 bytes: about 75
/// samples) still gives a sharding client many split points, and large enough that a GiB table
/// gives tens of thousands, not millions.
pub const SAMPLE_INTERVAL_BYTES: u64 = 64 * 1024;

/// Rows scanned and filtered out, with no row returned since, after which a ReadRows sends a
/// response with no chunks and `last_scanned_row_key` (`spec/bigtable.md` 9): a client that
/// retries then skips what was already scanned, as production lets it.
pub const SCANNED_ROWS_BEFORE_MARKER: u64 = 1000;

/// Bytes of rows scanned and filtered out, with no row returned since, after which a ReadRows
/// sends a `last_scanned_row_key` (whichever of this and [`SCANNED_ROWS_BEFORE_MARKER`] comes
/// first).
pub const SCANNED_BYTES_BEFORE_MARKER: u64 = 1 << 20;

/// What a ReadRows scan finds next.
enum Scanned {
    /// A row to return, with its filtered cells.
    Row(Row),
    /// A long stretch of filtered-out rows ended at this key: tell the client.
    Marker(Vec<u8>),
    /// The scan or the row limit is over.
    End,
}

/// The rows of one ReadRows request, produced lazily: one `next_row` call per stored row,
/// filtered, cut into responses per the store's [`ChunkingOptions`], or handed over whole
/// ([`Response::Rows`], one row per part) to a driver in the same process.
pub(crate) struct ReadStream<'a, S: TableStorage> {
    pub(crate) store: &'a S,
    pub(crate) table: String,
    /// Dropped families whose cells may remain: never shown (`crate::semantics`).
    pub(crate) hidden: Arc<[String]>,
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
    /// Rows and bytes scanned and filtered out since the last part ([`Scanned::Marker`]).
    pub(crate) skipped_rows: u64,
    pub(crate) skipped_bytes: u64,
    /// A marker found while chunks were pending, sent after them.
    pub(crate) marker: Option<Vec<u8>>,
}

impl<S: TableStorage> ReadStream<'_, S> {
    /// The next row to return, with its filtered cells, or a scan marker after a long stretch
    /// of filtered-out rows.
    fn next_result_row(&mut self) -> Result<Scanned, StoreError> {
        loop {
            if self.rows_limit > 0 && self.rows_returned >= self.rows_limit {
                return Ok(Scanned::End);
            }
            let Some(range) = self.ranges.front() else {
                return Ok(Scanned::End);
            };
            let next =
                self.store
                    .next_row(&self.table, range, self.after.as_deref(), self.reversed)?;
            let Some(mut row) = next else {
                self.ranges.pop_front();
                self.after = None;
                continue;
            };
            hide_dropped(&mut row.cells, &self.hidden);
            if is_one_key(range) {
                // Nothing follows the one key of a point range: skip the lookup that would
                // only find its end (a node read is a point read).
                self.ranges.pop_front();
                self.after = None;
            } else {
                self.after = Some(row.key.clone());
            }
            // Only a filter can leave a row of visible cells empty: only then is its size needed.
            let scanned_bytes = match self.filter {
                Some(_) => row_size(&row.key, &row.cells),
                None => 0,
            };
            let cells = match &self.filter {
                Some(f) => f.apply(&row.key, row.cells, &mut self.rng),
                None => row.cells,
            };
            // Rows whose filtered result is empty are omitted and not counted.
            if cells.is_empty() {
                self.skipped_rows += 1;
                self.skipped_bytes = self.skipped_bytes.saturating_add(scanned_bytes);
                if self.skipped_rows >= SCANNED_ROWS_BEFORE_MARKER
                    || self.skipped_bytes >= SCANNED_BYTES_BEFORE_MARKER
                {
                    self.skipped_rows = 0;
                    self.skipped_bytes = 0;
                    return Ok(Scanned::Marker(row.key));
                }
                continue;
            }
            self.skipped_rows = 0;
            self.skipped_bytes = 0;
            self.rows_returned += 1;
            return Ok(Scanned::Row(Row {
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

    /// A response with no chunks telling how far the scan got.
    fn marker_part(key: Vec<u8>) -> Response {
        Response::ReadRowsPart(ReadRowsResponse {
            chunks: Vec::new(),
            last_scanned_row_key: key,
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
                    Ok(Scanned::Row(row)) if self.whole_rows => {
                        Some(Ok(Response::Rows(vec![Arc::new(row)])))
                    }
                    Ok(Scanned::Row(row)) => Some(Ok(Self::part(row_chunks(&row, split)))),
                    // Whole rows too: the marker is the same wire part for every consumer.
                    Ok(Scanned::Marker(key)) => Some(Ok(Self::marker_part(key))),
                    Ok(Scanned::End) => {
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
        if self.pending.is_empty()
            && let Some(key) = self.marker.take()
        {
            return Some(Ok(Self::marker_part(key)));
        }
        while !self.exhausted && self.pending.len() < per_response {
            match self.next_result_row() {
                Ok(Scanned::Row(row)) => self.pending.extend(row_chunks(&row, split)),
                Ok(Scanned::Marker(key)) if self.pending.is_empty() => {
                    return Some(Ok(Self::marker_part(key)));
                }
                Ok(Scanned::Marker(key)) => {
                    // The pending chunks end on a row boundary: send them, then the marker
                    // (a response's marker is read before its chunks).
                    self.marker = Some(key);
                    break;
                }
                Ok(Scanned::End) => self.exhausted = true,
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
        // `n` is all of `pending` whenever a marker waits (the loop stopped short of full).
        Some(Ok(Self::part(self.pending.drain(..n).collect())))
    }
}

/// SampleRowKeys, lazily, as production answers it: split points in ascending key order, each
/// with the bytes of the rows before it. A row key every [`SAMPLE_INTERVAL_BYTES`] of row data,
/// every split point the table was created with (its tablet boundaries), the table's last row
/// key when it has rows, then `("", total)`. Keys strictly increase, offsets never decrease.
pub(crate) struct SampleStream<'a, S: TableStorage> {
    store: &'a S,
    table: String,
    /// The table's split points not yet passed, ascending.
    splits: VecDeque<Vec<u8>>,
    /// The last row key read (the scan continues after it).
    after: Option<Vec<u8>>,
    /// Bytes of the rows read so far.
    offset: u64,
    /// `offset` at the last sample.
    last_sample: u64,
    /// Bytes before the last row read, and whether its key was sampled.
    before_last_row: u64,
    last_row_sampled: bool,
    /// Samples found and not yet handed out.
    ready: VecDeque<SampleRowKeysResponse>,
    done: bool,
}

impl<'a, S: TableStorage> SampleStream<'a, S> {
    /// Samples `table` of `store`, whose split points are `splits` (ascending, distinct).
    pub(crate) fn new(store: &'a S, table: String, splits: &[Vec<u8>]) -> SampleStream<'a, S> {
        SampleStream {
            store,
            table,
            splits: splits.iter().cloned().collect(),
            after: None,
            offset: 0,
            last_sample: 0,
            before_last_row: 0,
            last_row_sampled: false,
            ready: VecDeque::new(),
            done: false,
        }
    }

    fn push(&mut self, row_key: Vec<u8>, offset: u64) {
        self.last_sample = offset;
        self.ready.push_back(SampleRowKeysResponse {
            row_key,
            offset_bytes: i64::try_from(offset).unwrap_or(i64::MAX),
        });
    }

    /// Reads one more row (or the end) and queues the samples it settles.
    fn advance(&mut self) -> Result<(), StoreError> {
        let next =
            self.store
                .next_row_size(&self.table, &RowRange::all(), self.after.as_deref())?;
        let Some((key, size)) = next else {
            self.done = true;
            if let Some(last) = self.after.take()
                && !self.last_row_sampled
            {
                self.push(last, self.before_last_row);
            }
            // Split points past the last row: the rows before them are all of the table.
            while let Some(split) = self.splits.pop_front() {
                self.push(split, self.offset);
            }
            self.push(Vec::new(), self.offset);
            return Ok(());
        };
        while self.splits.front().is_some_and(|split| *split < key) {
            if let Some(split) = self.splits.pop_front() {
                self.push(split, self.offset);
            }
        }
        let at_split = self.splits.front() == Some(&key);
        if at_split {
            self.splits.pop_front();
        }
        self.last_row_sampled =
            at_split || self.offset.saturating_sub(self.last_sample) >= SAMPLE_INTERVAL_BYTES;
        if self.last_row_sampled {
            self.push(key.clone(), self.offset);
        }
        self.before_last_row = self.offset;
        self.offset = self.offset.saturating_add(size);
        self.after = Some(key);
        Ok(())
    }
}

impl<S: TableStorage> Iterator for SampleStream<'_, S> {
    type Item = Result<Response, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(sample) = self.ready.pop_front() {
                return Some(Ok(Response::SampleRowKeysPart(sample)));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.advance() {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}
