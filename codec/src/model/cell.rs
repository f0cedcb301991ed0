use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::Timestamp;

/// One cell of a row as a read returns it: `(family, qualifier, timestamp) -> value`, plus the
/// labels a filter attached (never stored).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cell {
    /// Column family name.
    pub family: String,
    /// Column qualifier (any bytes, possibly empty).
    pub qualifier: Vec<u8>,
    /// Cell timestamp in microseconds.
    pub timestamp: Timestamp,
    /// Cell value (any bytes, possibly empty).
    pub value: Vec<u8>,
    /// Labels from `apply_label_transformer`; empty for stored cells.
    pub labels: Vec<String>,
}

impl Cell {
    /// The mutation that writes this cell as it is (same column, timestamp and value): copying
    /// cells from one row or table to another.
    ///
    /// ```
    /// use rowkit_codec::model::{Cell, Mutation, Timestamp};
    ///
    /// let cell = Cell {
    ///     family: "cf".into(),
    ///     qualifier: b"q".to_vec(),
    ///     timestamp: Timestamp(1_000),
    ///     value: b"v".to_vec(),
    ///     labels: Vec::new(),
    /// };
    /// let Mutation::SetCell { timestamp, .. } = cell.to_set_cell() else { unreachable!() };
    /// assert_eq!(timestamp, Timestamp(1_000));
    /// ```
    pub fn to_set_cell(&self) -> super::Mutation {
        super::Mutation::SetCell {
            family: self.family.clone(),
            qualifier: self.qualifier.clone(),
            timestamp: self.timestamp,
            value: self.value.clone(),
        }
    }

    /// The cell a `SetCell` with an explicit timestamp writes (no labels); `None` for any other
    /// mutation. The inverse of [`Cell::to_set_cell`], e.g. to lay out the cells a list of
    /// mutations leaves on an empty row.
    ///
    /// ```
    /// use rowkit_codec::model::{Cell, Mutation, Timestamp};
    ///
    /// let set = Mutation::set_cell("cf", b"q", Timestamp(1_000), b"v".to_vec());
    /// let cell = Cell::from_set_cell(set.clone()).unwrap();
    /// assert_eq!(cell.to_set_cell(), set);
    /// assert_eq!(Cell::from_set_cell(Mutation::DeleteFromRow), None);
    /// ```
    pub fn from_set_cell(mutation: super::Mutation) -> Option<Cell> {
        match mutation {
            super::Mutation::SetCell {
                family,
                qualifier,
                timestamp,
                value,
            } => Some(Cell {
                family,
                qualifier,
                timestamp,
                value,
                labels: Vec::new(),
            }),
            _ => None,
        }
    }
}

/// A row: its key and its cells in canonical order (family ascending, qualifier ascending,
/// timestamp descending). A row with no cells does not exist in Bigtable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Row {
    /// Row key.
    pub key: Vec<u8>,
    /// Cells in canonical order.
    pub cells: Vec<Cell>,
}

/// Canonical cell order (`spec/bigtable.md` 2): family ascending, qualifier ascending, timestamp
/// descending. Cells equal under it (duplicates from `interleave`) keep their relative order
/// under a stable sort.
pub fn compare_canonical(a: &Cell, b: &Cell) -> Ordering {
    a.family
        .as_bytes()
        .cmp(b.family.as_bytes())
        .then_with(|| a.qualifier.cmp(&b.qualifier))
        .then_with(|| b.timestamp.cmp(&a.timestamp))
}

/// The size of a row as rowkit stores count it (`spec/bigtable.md` 4):
/// `len(key) + Σ (len(family) + len(qualifier) + 8 + len(value))`.
pub fn row_size<'a>(key: &[u8], cells: impl IntoIterator<Item = &'a Cell>) -> u64 {
    cells.into_iter().fold(key.len() as u64, |acc, c| {
        acc + cell_size(c.family.len(), c.qualifier.len(), c.value.len())
    })
}

/// The bytes one cell adds to its row's size.
pub(crate) fn cell_size(family: usize, qualifier: usize, value: usize) -> u64 {
    (family + qualifier + 8 + value) as u64
}
