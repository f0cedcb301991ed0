//! Counter rows (§7.5): `num-nodes-per-user:<creator>` / `num-servers-per-user:<creator>` with
//! one 8-byte big-endian `i64` cell `m:c`.

use crate::segment::{KeySegment, Segments};
use alloc::string::String;
use alloc::vec::Vec;

use crate::model::Row;

/// Which per-user counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterKind {
    /// Nodes created by the user.
    Nodes,
    /// Servers mounted on nodes the user created.
    Servers,
}

impl CounterKind {
    /// The row-key prefix.
    pub fn prefix(self) -> &'static str {
        match self {
            CounterKind::Nodes => "num-nodes-per-user:",
            CounterKind::Servers => "num-servers-per-user:",
        }
    }

    /// `nodes` / `servers` (CLI JSON).
    pub fn as_str(self) -> &'static str {
        match self {
            CounterKind::Nodes => "nodes",
            CounterKind::Servers => "servers",
        }
    }
}

/// The counter row key for `creator` (verbatim; it may contain `:`).
pub fn counter_row_key(kind: CounterKind, creator: &str) -> Vec<u8> {
    alloc::format!("{}{creator}", kind.prefix()).into_bytes()
}

/// Splits a counter row key into kind and creator; `None` if it has neither prefix.
pub fn decode_counter_row_key(key: &[u8]) -> Option<(CounterKind, &[u8])> {
    [CounterKind::Nodes, CounterKind::Servers]
        .into_iter()
        .find_map(|k| key.strip_prefix(k.prefix().as_bytes()).map(|c| (k, c)))
}

/// The segments of a counter row key: its kind's prefix, then the creator. `None` if it has
/// neither prefix.
pub fn counter_row_key_segments(key: &[u8]) -> Option<Vec<KeySegment>> {
    let (kind, creator) = decode_counter_row_key(key)?;
    let mut s = Segments::new();
    s.push(
        kind.prefix().len(),
        "counter",
        "which per-creator counter: num-nodes-per-user or num-servers-per-user",
    );
    s.push(
        creator.len(),
        "creator",
        "the creator (blessing) whose nodes or servers are counted",
    );
    Some(s.finish())
}

/// Why a counter did not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CounterDecodeError {
    /// The value is not 8 bytes.
    #[error("counter value of {len} bytes, expected 8")]
    BadLength {
        /// Length found.
        len: usize,
    },
    /// The row did not hold exactly one cell in family `m`.
    #[error("counter row {row_key:?} has {cells} cells in family m, expected 1")]
    BadRow {
        /// The row key (lossy).
        row_key: String,
        /// Cells found.
        cells: usize,
    },
}

/// 8-byte big-endian two's complement.
pub fn encode_counter_value(v: i64) -> [u8; 8] {
    v.to_be_bytes()
}

/// Decodes a counter cell value.
pub fn decode_counter_value(b: &[u8]) -> Result<i64, CounterDecodeError> {
    let arr: [u8; 8] = b
        .try_into()
        .map_err(|_| CounterDecodeError::BadLength { len: b.len() })?;
    Ok(i64::from_be_bytes(arr))
}

/// Decodes a counter row as returned by ReadModifyWriteRow or a scan: exactly one `m` cell.
pub fn decode_counter_row(row: &Row) -> Result<i64, CounterDecodeError> {
    let cells: Vec<_> = row.cells.iter().filter(|c| c.family == "m").collect();
    match cells.as_slice() {
        [c] => decode_counter_value(&c.value),
        _ => Err(CounterDecodeError::BadRow {
            row_key: String::from_utf8_lossy(&row.key).into_owned(),
            cells: cells.len(),
        }),
    }
}
