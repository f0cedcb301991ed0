//! The chunk merger: `ReadRowsResponse` chunks in, committed rows out (`spec/bigtable.md`
//! 15.2-15.5). Whole rows from a store in the same process ([`Response::Rows`]) join the same
//! stream of committed rows, under the same order and limit rules, without being merged.
//!
//! [`Response::Rows`]: crate::Response::Rows

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::model::{Cell, Code, Row, Timestamp, limits};

use crate::{CellChunk, ReadRowsResponse, RowStatus, StoreError};

/// Most bytes reserved up front for a split cell, whatever its announced `value_size`: the
/// size comes from the server and must not drive an allocation by itself.
const MAX_PREALLOCATION: usize = 1024 * 1024;

/// A ReadRows protocol violation (`spec/bigtable.md` 15.3-15.4). The read fails with
/// `INTERNAL` and is not retried; rows committed before the violation stay delivered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// `reset_row` while no row is open (case "invalid - bare reset").
    #[error("reset_row between rows")]
    ResetBetweenRows,
    /// The first chunk of a row has no `row_key`.
    #[error("new row without a row key")]
    MissingRowKey,
    /// The first chunk of a row has no `family_name`.
    #[error("new row without a family name")]
    MissingFamily,
    /// The first chunk of a row has no `qualifier`.
    #[error("new row without a qualifier")]
    MissingQualifier,
    /// A new row's key is not beyond the resume key in scan direction (duplicate or out of
    /// order).
    #[error("row key out of order: not beyond the last committed or scanned key")]
    RowKeyOutOfOrder,
    /// A `reset_row` chunk also carries cell data.
    #[error("reset_row chunk carries other fields")]
    ResetWithData,
    /// A chunk names another row while the current one is not committed.
    #[error("row key changed without a commit")]
    RowKeyChanged,
    /// A chunk changes the family without giving a qualifier.
    #[error("family name without a qualifier")]
    FamilyWithoutQualifier,
    /// `value_size` is negative.
    #[error("negative value_size {value_size}")]
    NegativeValueSize {
        /// The value received.
        value_size: i32,
    },
    /// `commit_row` on a chunk whose cell continues (`value_size > 0`).
    #[error("commit_row on a chunk that continues its cell")]
    CommitInSplitCell,
    /// A split cell's first chunk has an empty value.
    #[error("split cell starts with an empty value")]
    EmptySplitStart,
    /// A continuation chunk carries a row key, family, qualifier, timestamp or labels.
    #[error("cell key field in the continuation of a split cell")]
    CellKeyInContinuation,
    /// A non-final continuation announces another total size.
    #[error("value_size changed within a split cell: expected {expected}, got {got}")]
    ValueSizeChanged {
        /// The size announced by the cell's first chunk.
        expected: i32,
        /// The size in this chunk.
        got: i32,
    },
    /// A split cell's value does not have the announced length.
    #[error("split cell has {got} bytes, announced {expected}")]
    CellLengthMismatch {
        /// The announced length.
        expected: usize,
        /// The length received.
        got: usize,
    },
    /// A cell value grew past 100 MiB.
    #[error("cell value larger than {} bytes", limits::MAX_VALUE_BYTES)]
    CellTooLarge,
    /// A row grew past 256 MiB.
    #[error("row larger than {} bytes", limits::MAX_ROW_BYTES)]
    RowTooLarge,
    /// More rows were committed than the request's `rows_limit`.
    #[error("more rows than rows_limit {rows_limit}")]
    RowsLimitExceeded {
        /// The limit of the original request.
        rows_limit: i64,
    },
    /// `last_scanned_row_key` arrived while a row was open.
    #[error("last_scanned_row_key inside a row")]
    ScanMarkerInRow,
    /// `last_scanned_row_key` is not beyond the resume key in scan direction.
    #[error("last_scanned_row_key out of order")]
    ScanMarkerOutOfOrder,
    /// The stream ended with OK while a row was open (case "invalid - no commit").
    #[error("stream ended inside a row")]
    UnexpectedEndOfStream,
    /// Whole rows arrived while a chunked row was open.
    #[error("whole rows inside a chunked row")]
    RowsInsideRow,
    /// A whole row without a key or without cells (stores never send one).
    #[error("whole row without a key or without cells")]
    EmptyRow,
}

impl From<MergeError> for StoreError {
    fn from(e: MergeError) -> StoreError {
        StoreError::new(
            Code::Internal,
            alloc::format!("ReadRows protocol violation: {e}"),
        )
    }
}

/// Where the merger is between chunks (`spec/bigtable.md` 15.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeState {
    /// No row open.
    NewRow,
    /// A row is open, at a cell boundary.
    RowInProgress,
    /// A split cell is open.
    CellInProgress,
}

/// Merges `ReadRowsResponse` chunks into rows, exactly as `spec/bigtable.md` 15 prescribes,
/// across the attempts of one read.
///
/// Feed each response with [`push_response`](Self::push_response) (or whole rows with
/// [`push_rows`](Self::push_rows)), take committed rows with [`pop_row`](Self::pop_row) (or
/// [`pop_shared_row`](Self::pop_shared_row)), and call [`end_of_stream`](Self::end_of_stream)
/// when a stream ends with OK or [`start_new_attempt`](Self::start_new_attempt) before feeding
/// a retry. The first violation is sticky: every later call reports it again.
///
/// ```
/// use rowkit_statemachines::readrows::ChunkMerger;
/// use rowkit_statemachines::{CellChunk, ReadRowsResponse, RowStatus};
///
/// let mut merger = ChunkMerger::new(false, 0);
/// let chunk = CellChunk {
///     row_key: b"r".to_vec(),
///     family_name: Some("f".into()),
///     qualifier: Some(b"q".to_vec()),
///     value: b"v".to_vec(),
///     row_status: RowStatus::Commit,
///     ..CellChunk::default()
/// };
/// merger
///     .push_response(ReadRowsResponse { chunks: vec![chunk], ..Default::default() })
///     .unwrap();
/// assert_eq!(merger.pop_row().unwrap().cells[0].value, b"v");
/// assert!(merger.end_of_stream().is_ok());
/// assert_eq!(merger.rows_emitted(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct ChunkMerger {
    reversed: bool,
    rows_limit: i64,
    state: MergeState,
    /// The open row: key and completed cells.
    row: Row,
    /// Size of `row` as `rowkit_codec::model::row_size` counts it.
    row_bytes: u64,
    /// The current column of the open row.
    family: String,
    qualifier: Vec<u8>,
    /// The open split cell (meaningful in `CellInProgress`).
    cell: PendingCell,
    last_committed_key: Option<Vec<u8>>,
    last_scanned_key: Option<Vec<u8>>,
    rows_emitted: u64,
    /// Committed rows not yet taken: shared, so a whole row handed over by a cache passes
    /// through without a copy.
    ready: VecDeque<Arc<Row>>,
    failed: Option<MergeError>,
    /// Size limits (`spec/bigtable.md` 4); fields so that tests can use small ones.
    max_value_bytes: usize,
    max_row_bytes: u64,
}

/// A split cell being assembled.
#[derive(Clone, Debug, Default)]
struct PendingCell {
    timestamp: i64,
    labels: Vec<String>,
    value: Vec<u8>,
    expected_size: i32,
}

impl ChunkMerger {
    /// A merger for a read in the given direction; `rows_limit > 0` caps the rows that may be
    /// committed over all attempts (0 or negative = unlimited).
    pub fn new(reversed: bool, rows_limit: i64) -> ChunkMerger {
        ChunkMerger {
            reversed,
            rows_limit,
            state: MergeState::NewRow,
            row: Row::default(),
            row_bytes: 0,
            family: String::new(),
            qualifier: Vec::new(),
            cell: PendingCell::default(),
            last_committed_key: None,
            last_scanned_key: None,
            rows_emitted: 0,
            ready: VecDeque::new(),
            failed: None,
            max_value_bytes: limits::MAX_VALUE_BYTES,
            max_row_bytes: limits::MAX_ROW_BYTES,
        }
    }

    /// Feeds one response: its `last_scanned_row_key` first, then its chunks in order. Rows
    /// committed before a violation remain available from [`pop_row`](Self::pop_row).
    pub fn push_response(&mut self, response: ReadRowsResponse) -> Result<(), MergeError> {
        self.check_failed()?;
        let result = self.merge(response);
        self.record(result)
    }

    /// Feeds whole, committed rows ([`Response::Rows`](crate::Response::Rows)): each must come
    /// after the resume key in scan direction, have a key and a cell, and fit in `rows_limit`,
    /// as a merged row must; none may arrive while a chunked row is open. Rows accepted before
    /// a violation remain available.
    pub fn push_rows(&mut self, rows: Vec<Arc<Row>>) -> Result<(), MergeError> {
        self.check_failed()?;
        let result = self.whole_rows(rows);
        self.record(result)
    }

    /// The stream ended with OK: no row may be open.
    pub fn end_of_stream(&mut self) -> Result<(), MergeError> {
        self.check_failed()?;
        let result = match self.state {
            MergeState::NewRow => Ok(()),
            _ => Err(MergeError::UnexpectedEndOfStream),
        };
        self.record(result)
    }

    /// Prepares for the next attempt after a failed stream: the open row is dropped; only
    /// the last committed key, the last scanned key, the row count (and rows not yet popped)
    /// survive.
    pub fn start_new_attempt(&mut self) {
        self.drop_row();
    }

    /// The next committed row, in scan order (a copy only if someone else still shares it,
    /// e.g. a cache that handed it over: see [`pop_shared_row`](Self::pop_shared_row)).
    pub fn pop_row(&mut self) -> Option<Row> {
        self.ready.pop_front().map(Arc::unwrap_or_clone)
    }

    /// The next committed row, in scan order, as shared.
    pub fn pop_shared_row(&mut self) -> Option<Arc<Row>> {
        self.ready.pop_front()
    }

    /// Whether the read is descending.
    pub fn reversed(&self) -> bool {
        self.reversed
    }

    /// The `rows_limit` of the original request.
    pub fn rows_limit(&self) -> i64 {
        self.rows_limit
    }

    /// Where the merger is between chunks.
    pub fn state(&self) -> MergeState {
        self.state
    }

    /// Rows committed so far over all attempts (popped or not).
    pub fn rows_emitted(&self) -> u64 {
        self.rows_emitted
    }

    /// The key of the last committed row.
    pub fn last_committed_key(&self) -> Option<&[u8]> {
        self.last_committed_key.as_deref()
    }

    /// The last non-empty `last_scanned_row_key` received.
    pub fn last_scanned_key(&self) -> Option<&[u8]> {
        self.last_scanned_key.as_deref()
    }

    /// The later, in scan direction, of the last committed and the last scanned key: every
    /// row up to it has been read.
    pub fn resume_key(&self) -> Option<&[u8]> {
        match (self.last_committed_key(), self.last_scanned_key()) {
            (Some(c), Some(s)) => Some(if self.is_beyond(c, s) { c } else { s }),
            (c, s) => c.or(s),
        }
    }

    /// The violation that stopped the merger, if any.
    pub fn error(&self) -> Option<&MergeError> {
        self.failed.as_ref()
    }

    fn check_failed(&self) -> Result<(), MergeError> {
        match &self.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    fn record(&mut self, result: Result<(), MergeError>) -> Result<(), MergeError> {
        if let Err(e) = &result {
            self.failed = Some(e.clone());
            self.drop_row();
        }
        result
    }

    /// Whether `key` comes strictly after `than` in scan direction.
    fn is_beyond(&self, key: &[u8], than: &[u8]) -> bool {
        if self.reversed {
            key < than
        } else {
            key > than
        }
    }

    fn merge(&mut self, response: ReadRowsResponse) -> Result<(), MergeError> {
        if !response.last_scanned_row_key.is_empty() {
            self.scan_marker(response.last_scanned_row_key)?;
        }
        response
            .chunks
            .into_iter()
            .try_for_each(|chunk| self.chunk(chunk))
    }

    fn scan_marker(&mut self, key: Vec<u8>) -> Result<(), MergeError> {
        if self.state != MergeState::NewRow {
            return Err(MergeError::ScanMarkerInRow);
        }
        if let Some(resume) = self.resume_key()
            && !self.is_beyond(&key, resume)
        {
            return Err(MergeError::ScanMarkerOutOfOrder);
        }
        self.last_scanned_key = Some(key);
        Ok(())
    }

    fn whole_rows(&mut self, rows: Vec<Arc<Row>>) -> Result<(), MergeError> {
        if self.state != MergeState::NewRow {
            return Err(MergeError::RowsInsideRow);
        }
        for row in rows {
            if row.key.is_empty() || row.cells.is_empty() {
                return Err(MergeError::EmptyRow);
            }
            if let Some(resume) = self.resume_key()
                && !self.is_beyond(&row.key, resume)
            {
                return Err(MergeError::RowKeyOutOfOrder);
            }
            self.commit(row)?;
        }
        Ok(())
    }

    fn chunk(&mut self, chunk: CellChunk) -> Result<(), MergeError> {
        match self.state {
            MergeState::NewRow => self.new_row(chunk),
            MergeState::RowInProgress => self.row_in_progress(chunk),
            MergeState::CellInProgress => self.cell_in_progress(chunk),
        }
    }

    fn new_row(&mut self, mut chunk: CellChunk) -> Result<(), MergeError> {
        if chunk.row_status == RowStatus::Reset {
            return Err(MergeError::ResetBetweenRows);
        }
        if chunk.row_key.is_empty() {
            return Err(MergeError::MissingRowKey);
        }
        let Some(family) = chunk.family_name.take() else {
            return Err(MergeError::MissingFamily);
        };
        let Some(qualifier) = chunk.qualifier.take() else {
            return Err(MergeError::MissingQualifier);
        };
        if let Some(resume) = self.resume_key()
            && !self.is_beyond(&chunk.row_key, resume)
        {
            return Err(MergeError::RowKeyOutOfOrder);
        }
        self.row.key = core::mem::take(&mut chunk.row_key);
        self.row_bytes = self.row.key.len() as u64;
        self.family = family;
        self.qualifier = qualifier;
        self.new_cell(chunk)
    }

    fn row_in_progress(&mut self, mut chunk: CellChunk) -> Result<(), MergeError> {
        if chunk.row_status == RowStatus::Reset {
            return self.reset(&chunk);
        }
        if !chunk.row_key.is_empty() && chunk.row_key != self.row.key {
            return Err(MergeError::RowKeyChanged);
        }
        if chunk.family_name.is_some() && chunk.qualifier.is_none() {
            return Err(MergeError::FamilyWithoutQualifier);
        }
        if let Some(family) = chunk.family_name.take() {
            self.family = family;
        }
        if let Some(qualifier) = chunk.qualifier.take() {
            self.qualifier = qualifier;
        }
        self.new_cell(chunk)
    }

    /// RowInProgress steps 4-7: every chunk at a cell boundary starts a cell.
    fn new_cell(&mut self, chunk: CellChunk) -> Result<(), MergeError> {
        let CellChunk {
            timestamp_micros,
            labels,
            mut value,
            value_size,
            row_status,
            ..
        } = chunk;
        if value_size < 0 {
            return Err(MergeError::NegativeValueSize { value_size });
        }
        self.check_cell_size(value.len())?;
        if value_size == 0 {
            self.finish_cell(timestamp_micros, labels, value);
            return self.end_cell(row_status);
        }
        if row_status == RowStatus::Commit {
            return Err(MergeError::CommitInSplitCell);
        }
        if value.is_empty() {
            return Err(MergeError::EmptySplitStart);
        }
        let announced = usize::try_from(value_size).unwrap_or(MAX_PREALLOCATION);
        value.reserve_exact(announced.min(MAX_PREALLOCATION).saturating_sub(value.len()));
        self.cell = PendingCell {
            timestamp: timestamp_micros,
            labels,
            value,
            expected_size: value_size,
        };
        self.state = MergeState::CellInProgress;
        Ok(())
    }

    fn cell_in_progress(&mut self, chunk: CellChunk) -> Result<(), MergeError> {
        if chunk.row_status == RowStatus::Reset {
            return self.reset(&chunk);
        }
        if !chunk.row_key.is_empty()
            || chunk.family_name.is_some()
            || chunk.qualifier.is_some()
            || chunk.timestamp_micros != 0
            || !chunk.labels.is_empty()
        {
            return Err(MergeError::CellKeyInContinuation);
        }
        if chunk.value_size < 0 {
            return Err(MergeError::NegativeValueSize {
                value_size: chunk.value_size,
            });
        }
        if chunk.value_size > 0 {
            if chunk.row_status == RowStatus::Commit {
                return Err(MergeError::CommitInSplitCell);
            }
            if chunk.value_size != self.cell.expected_size {
                return Err(MergeError::ValueSizeChanged {
                    expected: self.cell.expected_size,
                    got: chunk.value_size,
                });
            }
        }
        let len = self.cell.value.len().saturating_add(chunk.value.len());
        self.check_cell_size(len)?;
        self.cell.value.extend_from_slice(&chunk.value);
        if chunk.value_size > 0 {
            return Ok(());
        }
        let expected = usize::try_from(self.cell.expected_size).unwrap_or(usize::MAX);
        if len != expected {
            return Err(MergeError::CellLengthMismatch { expected, got: len });
        }
        let cell = core::mem::take(&mut self.cell);
        self.finish_cell(cell.timestamp, cell.labels, cell.value);
        self.end_cell(chunk.row_status)
    }

    /// A reset must carry nothing else; it drops the open row.
    fn reset(&mut self, chunk: &CellChunk) -> Result<(), MergeError> {
        if !chunk.row_key.is_empty()
            || chunk.family_name.is_some()
            || chunk.qualifier.is_some()
            || chunk.timestamp_micros != 0
            || !chunk.labels.is_empty()
            || !chunk.value.is_empty()
            || chunk.value_size != 0
        {
            return Err(MergeError::ResetWithData);
        }
        self.drop_row();
        Ok(())
    }

    /// Fails if a cell of `value_len` bytes in the current column is too large for a cell or
    /// for the open row.
    fn check_cell_size(&self, value_len: usize) -> Result<(), MergeError> {
        if value_len > self.max_value_bytes {
            return Err(MergeError::CellTooLarge);
        }
        if self.row_bytes.saturating_add(self.cell_bytes(value_len)) > self.max_row_bytes {
            return Err(MergeError::RowTooLarge);
        }
        Ok(())
    }

    /// What a cell of the current column adds to the row size (`spec/bigtable.md` 4).
    fn cell_bytes(&self, value_len: usize) -> u64 {
        (self.family.len() as u64)
            .saturating_add(self.qualifier.len() as u64)
            .saturating_add(8)
            .saturating_add(value_len as u64)
    }

    fn finish_cell(&mut self, timestamp: i64, labels: Vec<String>, value: Vec<u8>) {
        self.row_bytes = self.row_bytes.saturating_add(self.cell_bytes(value.len()));
        self.row.cells.push(Cell {
            family: self.family.clone(),
            qualifier: self.qualifier.clone(),
            timestamp: Timestamp(timestamp),
            value,
            labels,
        });
    }

    /// After a finished cell: commit the row or wait for the next cell.
    fn end_cell(&mut self, status: RowStatus) -> Result<(), MergeError> {
        if status != RowStatus::Commit {
            self.state = MergeState::RowInProgress;
            return Ok(());
        }
        let row = core::mem::take(&mut self.row);
        self.drop_row();
        self.commit(Arc::new(row))
    }

    /// Hands over a complete row (merged or whole), counted against `rows_limit`.
    fn commit(&mut self, row: Arc<Row>) -> Result<(), MergeError> {
        if self.rows_limit > 0 && self.rows_emitted >= self.rows_limit.unsigned_abs() {
            return Err(MergeError::RowsLimitExceeded {
                rows_limit: self.rows_limit,
            });
        }
        self.last_committed_key = Some(row.key.clone());
        self.rows_emitted = self.rows_emitted.saturating_add(1);
        self.ready.push_back(row);
        Ok(())
    }

    fn drop_row(&mut self) {
        self.state = MergeState::NewRow;
        self.row = Row::default();
        self.row_bytes = 0;
        self.cell = PendingCell::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn first(key: &[u8], value: &[u8], status: RowStatus) -> CellChunk {
        CellChunk {
            row_key: key.to_vec(),
            family_name: Some("f".into()),
            qualifier: Some(b"q".to_vec()),
            timestamp_micros: 1000,
            value: value.to_vec(),
            row_status: status,
            ..CellChunk::default()
        }
    }
    fn row(key: &[u8]) -> CellChunk {
        first(key, b"v", RowStatus::Commit)
    }
    fn part(value: &[u8], value_size: i32, status: RowStatus) -> CellChunk {
        CellChunk {
            value: value.to_vec(),
            value_size,
            row_status: status,
            ..CellChunk::default()
        }
    }
    fn response(chunks: Vec<CellChunk>) -> ReadRowsResponse {
        ReadRowsResponse {
            chunks,
            last_scanned_row_key: vec![],
        }
    }
    fn marker(key: &[u8]) -> ReadRowsResponse {
        ReadRowsResponse {
            chunks: vec![],
            last_scanned_row_key: key.to_vec(),
        }
    }
    fn keys(m: &mut ChunkMerger) -> Vec<Vec<u8>> {
        core::iter::from_fn(|| m.pop_row()).map(|r| r.key).collect()
    }

    #[test]
    fn rows_in_order_and_resume_key() {
        let mut m = ChunkMerger::new(false, 0);
        m.push_response(response(vec![row(b"a"), row(b"b")]))
            .unwrap();
        assert_eq!(keys(&mut m), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(m.rows_emitted(), 2);
        assert_eq!(m.last_committed_key(), Some(&b"b"[..]));
        assert_eq!(m.resume_key(), Some(&b"b"[..]));
        assert_eq!(
            m.push_response(response(vec![row(b"b")])),
            Err(MergeError::RowKeyOutOfOrder)
        );
    }

    #[test]
    fn reversed_rows_descend() {
        let mut m = ChunkMerger::new(true, 0);
        m.push_response(response(vec![row(b"c"), row(b"b")]))
            .unwrap();
        m.push_response(marker(b"a")).unwrap();
        assert_eq!(m.resume_key(), Some(&b"a"[..]));
        assert_eq!(
            m.push_response(response(vec![row(b"b")])),
            Err(MergeError::RowKeyOutOfOrder)
        );
        assert_eq!(keys(&mut m), vec![b"c".to_vec(), b"b".to_vec()]);
    }

    #[test]
    fn reversed_out_of_order() {
        let mut m = ChunkMerger::new(true, 0);
        assert_eq!(
            m.push_response(response(vec![row(b"b"), row(b"c")])),
            Err(MergeError::RowKeyOutOfOrder)
        );
        assert_eq!(keys(&mut m), vec![b"b".to_vec()]);
    }

    #[test]
    fn scan_marker_comes_before_the_chunks() {
        let mut m = ChunkMerger::new(false, 0);
        let r = ReadRowsResponse {
            chunks: vec![row(b"c")],
            last_scanned_row_key: b"b".to_vec(),
        };
        m.push_response(r).unwrap();
        let r = ReadRowsResponse {
            chunks: vec![row(b"d")],
            last_scanned_row_key: b"e".to_vec(),
        };
        // The marker "e" applies before row "d": "d" is then out of order.
        assert_eq!(m.push_response(r), Err(MergeError::RowKeyOutOfOrder));
        assert_eq!(m.last_scanned_key(), Some(&b"e"[..]));
    }

    #[test]
    fn scan_marker_must_advance() {
        let mut m = ChunkMerger::new(false, 0);
        m.push_response(response(vec![row(b"b")])).unwrap();
        assert_eq!(
            m.clone().push_response(marker(b"b")),
            Err(MergeError::ScanMarkerOutOfOrder)
        );
        assert_eq!(
            m.clone().push_response(marker(b"a")),
            Err(MergeError::ScanMarkerOutOfOrder)
        );
        m.push_response(marker(b"c")).unwrap();
        assert_eq!(m.resume_key(), Some(&b"c"[..]));
        assert_eq!(m.rows_emitted(), 1);
        m.push_response(response(vec![row(b"d")])).unwrap();
        assert_eq!(m.resume_key(), Some(&b"d"[..]));
        assert_eq!(m.last_scanned_key(), Some(&b"c"[..]));
    }

    #[test]
    fn scan_marker_inside_a_row_fails() {
        let mut m = ChunkMerger::new(false, 0);
        m.push_response(response(vec![first(b"a", b"v", RowStatus::None)]))
            .unwrap();
        assert_eq!(
            m.push_response(marker(b"z")),
            Err(MergeError::ScanMarkerInRow)
        );
    }

    #[test]
    fn rows_limit_overrun_is_a_violation() {
        let mut m = ChunkMerger::new(false, 2);
        assert_eq!(
            m.push_response(response(vec![row(b"a"), row(b"b"), row(b"c")])),
            Err(MergeError::RowsLimitExceeded { rows_limit: 2 })
        );
        assert_eq!(keys(&mut m), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(m.rows_emitted(), 2);
    }

    #[test]
    fn new_attempt_keeps_only_progress() {
        let mut m = ChunkMerger::new(false, 0);
        m.push_response(response(vec![
            row(b"a"),
            first(b"b", b"v", RowStatus::None),
            part(b"", 0, RowStatus::None),
        ]))
        .unwrap();
        assert_eq!(m.state(), MergeState::RowInProgress);
        m.start_new_attempt();
        assert_eq!(m.state(), MergeState::NewRow);
        // "b" was never committed: the next attempt may send it again, from scratch.
        m.push_response(response(vec![row(b"b")])).unwrap();
        let rows: Vec<Row> = core::iter::from_fn(|| m.pop_row()).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1].cells.len(), 1);
        assert!(m.end_of_stream().is_ok());
    }

    #[test]
    fn errors_are_sticky() {
        let mut m = ChunkMerger::new(false, 0);
        let bad = part(b"", 0, RowStatus::Reset);
        assert_eq!(
            m.push_response(response(vec![bad])),
            Err(MergeError::ResetBetweenRows)
        );
        assert_eq!(
            m.push_response(response(vec![row(b"a")])),
            Err(MergeError::ResetBetweenRows)
        );
        m.start_new_attempt();
        assert_eq!(m.end_of_stream(), Err(MergeError::ResetBetweenRows));
        assert_eq!(m.error(), Some(&MergeError::ResetBetweenRows));
        assert_eq!(m.pop_row(), None);
    }

    #[test]
    fn end_of_stream_inside_a_row() {
        let mut m = ChunkMerger::new(false, 0);
        m.push_response(response(vec![first(b"a", b"v", RowStatus::None)]))
            .unwrap();
        assert_eq!(m.end_of_stream(), Err(MergeError::UnexpectedEndOfStream));
    }

    #[test]
    fn split_cell_checks() {
        let start = first(b"a", b"12", RowStatus::None);
        let split = CellChunk {
            value_size: 4,
            ..start.clone()
        };
        let run =
            |chunks: Vec<CellChunk>| ChunkMerger::new(false, 0).push_response(response(chunks));
        assert_eq!(
            run(vec![CellChunk {
                value_size: -1,
                ..start.clone()
            }]),
            Err(MergeError::NegativeValueSize { value_size: -1 })
        );
        assert_eq!(
            run(vec![CellChunk {
                value: vec![],
                ..split.clone()
            }]),
            Err(MergeError::EmptySplitStart)
        );
        assert_eq!(
            run(vec![CellChunk {
                row_status: RowStatus::Commit,
                ..split.clone()
            }]),
            Err(MergeError::CommitInSplitCell)
        );
        assert_eq!(
            run(vec![split.clone(), part(b"3", 5, RowStatus::None)]),
            Err(MergeError::ValueSizeChanged {
                expected: 4,
                got: 5
            })
        );
        assert_eq!(
            run(vec![split.clone(), part(b"3", 0, RowStatus::Commit)]),
            Err(MergeError::CellLengthMismatch {
                expected: 4,
                got: 3
            })
        );
        assert_eq!(
            run(vec![split.clone(), part(b"3", -2, RowStatus::None)]),
            Err(MergeError::NegativeValueSize { value_size: -2 })
        );
        for intruder in [
            CellChunk {
                row_key: b"a".to_vec(),
                ..part(b"3", 4, RowStatus::None)
            },
            CellChunk {
                family_name: Some(String::new()),
                ..part(b"3", 4, RowStatus::None)
            },
            CellChunk {
                qualifier: Some(vec![]),
                ..part(b"3", 4, RowStatus::None)
            },
            CellChunk {
                timestamp_micros: 5,
                ..part(b"3", 4, RowStatus::None)
            },
            CellChunk {
                labels: vec!["l".into()],
                ..part(b"3", 4, RowStatus::None)
            },
        ] {
            assert_eq!(
                run(vec![split.clone(), intruder]),
                Err(MergeError::CellKeyInContinuation)
            );
        }
        let mut m = ChunkMerger::new(false, 0);
        m.push_response(response(vec![
            split,
            part(b"3", 4, RowStatus::None),
            part(b"", 4, RowStatus::None),
            part(b"4", 0, RowStatus::Commit),
        ]))
        .unwrap();
        assert_eq!(m.pop_row().unwrap().cells[0].value, b"1234");
    }

    #[test]
    fn row_in_progress_checks() {
        let start = first(b"a", b"v", RowStatus::None);
        let run =
            |chunks: Vec<CellChunk>| ChunkMerger::new(false, 0).push_response(response(chunks));
        assert_eq!(
            run(vec![start.clone(), row(b"b")]),
            Err(MergeError::RowKeyChanged)
        );
        assert_eq!(
            run(vec![
                start.clone(),
                CellChunk {
                    family_name: Some("g".into()),
                    ..part(b"v", 0, RowStatus::Commit)
                }
            ]),
            Err(MergeError::FamilyWithoutQualifier)
        );
        assert_eq!(
            run(vec![
                start.clone(),
                CellChunk {
                    timestamp_micros: 7,
                    ..part(b"", 0, RowStatus::Reset)
                }
            ]),
            Err(MergeError::ResetWithData)
        );
        // Repeating the row key is allowed; an empty family is a present family.
        let mut m = ChunkMerger::new(false, 0);
        m.push_response(response(vec![
            start,
            CellChunk {
                row_key: b"a".to_vec(),
                family_name: Some(String::new()),
                qualifier: Some(vec![]),
                labels: vec!["x".into(), "y".into()],
                ..part(b"w", 0, RowStatus::Commit)
            },
        ]))
        .unwrap();
        let r = m.pop_row().unwrap();
        assert_eq!(r.cells.len(), 2);
        assert_eq!(r.cells[1].family, "");
        assert_eq!(r.cells[1].qualifier, b"");
        assert_eq!(
            r.cells[1].labels,
            vec![String::from("x"), String::from("y")]
        );
        assert_eq!(r.cells[1].timestamp, Timestamp(0));
    }

    #[test]
    fn new_row_checks() {
        let run =
            |chunk: CellChunk| ChunkMerger::new(false, 0).push_response(response(vec![chunk]));
        assert_eq!(
            run(CellChunk {
                family_name: None,
                ..row(b"a")
            }),
            Err(MergeError::MissingFamily)
        );
        assert_eq!(
            run(CellChunk {
                qualifier: None,
                ..row(b"a")
            }),
            Err(MergeError::MissingQualifier)
        );
        assert_eq!(run(row(b"")), Err(MergeError::MissingRowKey));
    }

    #[test]
    fn announced_size_does_not_drive_allocation() {
        let mut m = ChunkMerger::new(false, 0);
        m.push_response(response(vec![CellChunk {
            value_size: i32::MAX,
            ..first(b"a", b"x", RowStatus::None)
        }]))
        .unwrap();
        assert_eq!(m.state(), MergeState::CellInProgress);
        assert!(m.cell.value.capacity() <= MAX_PREALLOCATION);
        assert!(m.cell.value.capacity() >= 1);
    }

    fn small(max_value_bytes: usize, max_row_bytes: u64) -> ChunkMerger {
        ChunkMerger {
            max_value_bytes,
            max_row_bytes,
            ..ChunkMerger::new(false, 0)
        }
    }

    #[test]
    fn cell_size_limit() {
        // Unsplit.
        assert_eq!(
            small(3, 1000).push_response(response(vec![first(b"a", b"1234", RowStatus::Commit)])),
            Err(MergeError::CellTooLarge)
        );
        // Split: grows past the limit on the second chunk.
        let mut m = small(3, 1000);
        assert_eq!(
            m.push_response(response(vec![
                CellChunk {
                    value_size: 4,
                    ..first(b"a", b"12", RowStatus::None)
                },
                part(b"34", 4, RowStatus::None),
            ])),
            Err(MergeError::CellTooLarge)
        );
        // At the limit is fine.
        let mut m = small(4, 1000);
        m.push_response(response(vec![first(b"a", b"1234", RowStatus::Commit)]))
            .unwrap();
    }

    #[test]
    fn row_size_limit() {
        // key 1 + (family 1 + qualifier 1 + 8 + value 1) = 12 bytes per one-cell row.
        let mut m = small(100, 12);
        m.push_response(response(vec![row(b"a")])).unwrap();
        let mut m = small(100, 22);
        assert_eq!(
            m.push_response(response(vec![
                first(b"a", b"v", RowStatus::None),
                part(b"v", 0, RowStatus::Commit),
            ])),
            Err(MergeError::RowTooLarge)
        );
        // The limit is per row: the next row starts from zero.
        let mut m = small(100, 12);
        m.push_response(response(vec![row(b"a"), row(b"b")]))
            .unwrap();
    }

    #[test]
    fn protocol_errors_are_internal() {
        let e: StoreError = MergeError::RowKeyChanged.into();
        assert_eq!(e.code, Code::Internal);
        assert!(!e.code.is_retryable());
    }
}
