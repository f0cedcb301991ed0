//! Rows as chunks: what a store sends for a row (`spec/bigtable.md` 9.3), the inverse of the
//! [`ChunkMerger`](super::ChunkMerger). Local stores use it for the wire-faithful stream of
//! `Store::execute`, the JSON and gRPC servers for a [`Response::Rows`](crate::Response::Rows)
//! answer, tests to feed the merger.

use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::Row;

use crate::{CellChunk, RowStatus};

/// The chunks of one row as a store sends them (`spec/bigtable.md` 9.3): row key on the first
/// chunk, family and qualifier only when they change, timestamp and labels on every cell's first
/// chunk, values cut into pieces of at most `split_values_every` bytes (non-final pieces carry
/// `value_size`), and `commit_row` on the last chunk of the last cell. A row without cells
/// gives no chunks (stores never send empty rows).
///
/// ```
/// use rowkit_codec::model::{Cell, Row, Timestamp};
/// use rowkit_statemachines::readrows::row_chunks;
/// use rowkit_statemachines::RowStatus;
///
/// let row = Row {
///     key: b"r".to_vec(),
///     cells: vec![Cell {
///         family: "cf".into(),
///         qualifier: b"q".to_vec(),
///         timestamp: Timestamp::from_millis(1),
///         value: b"hello".to_vec(),
///         labels: vec![],
///     }],
/// };
/// let chunks = row_chunks(&row, Some(2));
/// assert_eq!(chunks.len(), 3);
/// assert_eq!(chunks[0].value_size, 5);
/// assert_eq!(chunks[2].row_status, RowStatus::Commit);
/// ```
pub fn row_chunks(row: &Row, split_values_every: Option<usize>) -> Vec<CellChunk> {
    let split = split_values_every.filter(|&n| n > 0);
    let mut chunks = Vec::with_capacity(row.cells.len());
    for (i, cell) in row.cells.iter().enumerate() {
        let mut first = CellChunk::default();
        match i.checked_sub(1).and_then(|p| row.cells.get(p)) {
            None => {
                first.row_key = row.key.clone();
                first.family_name = Some(cell.family.clone());
                first.qualifier = Some(cell.qualifier.clone());
            }
            Some(prev) if prev.family != cell.family => {
                first.family_name = Some(cell.family.clone());
                first.qualifier = Some(cell.qualifier.clone());
            }
            Some(prev) if prev.qualifier != cell.qualifier => {
                first.qualifier = Some(cell.qualifier.clone());
            }
            Some(_) => {}
        }
        first.timestamp_micros = cell.timestamp.0;
        first.labels = cell.labels.clone();
        let total = i32::try_from(cell.value.len()).unwrap_or(i32::MAX);
        let pieces: Vec<&[u8]> = match split {
            Some(n) if cell.value.len() > n => cell.value.chunks(n).collect(),
            _ => vec![cell.value.as_slice()],
        };
        let last_cell = i + 1 == row.cells.len();
        let mut first = Some(first);
        for (j, piece) in pieces.iter().enumerate() {
            let mut chunk = first.take().unwrap_or_default();
            chunk.value = piece.to_vec();
            if j + 1 < pieces.len() {
                chunk.value_size = total;
            } else if last_cell {
                chunk.row_status = RowStatus::Commit;
            }
            chunks.push(chunk);
        }
    }
    chunks
}
