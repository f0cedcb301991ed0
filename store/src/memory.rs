//! The in-memory store: the reference for Bigtable semantics (`spec/bigtable.md`), pure enough
//! to build for wasm32 (no threads, files or clock).
//!
//! Tables live behind one `RwLock`. A table keeps its rows in a hash map by key, for point reads
//! and writes in one probe, beside an ordered set of the same keys (shared `Arc`s, one
//! allocation per key) that scans walk. A row is a `Vec` of cells in canonical order, each cell
//! one allocation holding family, qualifier and value beside its column's first 16 bytes
//! inline; columns and families are contiguous runs of it, found by binary search.
//!
//! A write changes the row in place and records each change in an undo log of moved cells (a
//! removed cell moves into the log, an inserted one leaves only its index), so a failed
//! transaction is undone backwards without copying anything first: a 256 MiB row is not cloned
//! to add one cell, and no cell key is cloned to log it. A batch of rows (MutateRows) takes the
//! lock once.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use rowkit_codec::model::{Cell, ColumnFamily, KeyBound, Row, RowRange, Timestamp, TimestampRange};
use rowkit_statemachines::{Code, StoreError};

use crate::semantics::{
    check_not_dropped, check_put_family, remove_from_schema, validate_schema, with_dropped,
};
use crate::{EngineState, NewestPerColumn, RowWrite, StoreOptions, TableStorage};

#[cfg(feature = "redb")]
mod backup;

/// The in-memory store. Every request is evaluated by [`crate::semantics`]; this type only
/// keeps rows.
///
/// ```
/// use rowkit_codec::model::ColumnFamily;
/// use rowkit_store::{ChunkingOptions, MemoryStore, Store, StoreOptions};
///
/// let options = StoreOptions::default().with_seed(7).with_chunking(ChunkingOptions {
///     split_values_every: Some(3),
///     chunks_per_response: Some(2),
/// });
/// let store = MemoryStore::new().with_options(options);
/// store.create_table("t", &[ColumnFamily::new("cf")]).unwrap();
/// assert_eq!(store.list_tables().unwrap(), vec!["t".to_string()]);
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    tables: RwLock<BTreeMap<String, Table>>,
    /// Its server time is stamped under the tables' write lock (inside every row transaction).
    state: EngineState,
}

#[derive(Debug, Default)]
struct Table {
    /// Ascending by name; shared with the evaluator's requests ([`TableStorage::schema`]).
    families: Arc<[ColumnFamily]>,
    /// CreateTable's split points, ascending.
    splits: Arc<[Vec<u8>]>,
    /// Dropped families whose cells may remain, ascending ([`TableStorage::dropped_families`]).
    dropped: Arc<[String]>,
    /// Every row (each has at least one cell), by key.
    rows: HashMap<Arc<[u8]>, StoredRow>,
    /// The keys of `rows` in ascending order, for scans.
    order: BTreeSet<Arc<[u8]>>,
}

impl Table {
    /// The row of `key`, if it exists.
    fn row(&self, key: &[u8]) -> Option<(&[u8], &StoredRow)> {
        self.rows.get_key_value(key).map(|(k, row)| (&**k, row))
    }

    /// The rows of this table in ascending key order, for a backup.
    #[cfg(feature = "redb")]
    fn rows_in_order(&self) -> impl Iterator<Item = (&[u8], &StoredRow)> {
        self.order.iter().filter_map(|key| self.row(key))
    }

    /// Runs one row transaction on the row of `key` (the table's write lock is held).
    fn write_row<T>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(&mut MemoryRow) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        // The row's cells move out for the transaction and back after it: no copy.
        let existing = self.rows.get_mut(key).map(std::mem::take);
        let existed = existing.is_some();
        let stored = existing.unwrap_or_default();
        let mut row = MemoryRow {
            families: Arc::clone(&self.families),
            key_len: key.len(),
            saved_size: stored.cells_size,
            row: stored,
            undo: Vec::new(),
        };
        let result = f(&mut row);
        if result.is_err() {
            row.rollback();
        }
        // A row exists iff it has a cell (`spec/bigtable.md` 1).
        match (existed, row.row.cells.is_empty()) {
            (true, false) => {
                if let Some(slot) = self.rows.get_mut(key) {
                    *slot = row.row;
                }
            }
            (true, true) => {
                self.rows.remove(key);
                self.order.remove(key);
            }
            (false, false) => {
                let key: Arc<[u8]> = Arc::from(key);
                self.order.insert(Arc::clone(&key));
                self.rows.insert(key, row.row);
            }
            (false, true) => {}
        }
        result
    }
}

/// One stored cell: family, qualifier and value in one buffer, and the column's first bytes
/// inline, so that the binary searches of a row mostly compare without following `data` (a
/// cache miss per probe was most of a large row's write).
#[derive(Debug)]
struct StoredCell {
    /// [`ColumnPrefix::head`] of its column (the length is the sum of the two below).
    column_head: u128,
    /// The family's bytes, then the qualifier's, then the value's.
    data: Box<[u8]>,
    timestamp: i64,
    family_len: u32,
    qualifier_len: u32,
}

/// The first 16 bytes of `family ‖ 0x00 ‖ qualifier`, zero-padded, as a big-endian number, and
/// that text's length. Family names are `[-_.a-zA-Z0-9]+` (checked when a family is created,
/// and a put names an existing family), so the separator sorts below every family byte and
/// the text orders as the `(family, qualifier)` pair does; zero padding keeps that order for
/// the prefixes, where different columns may tie (then the full bytes decide).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ColumnPrefix {
    head: u128,
    len: usize,
}

impl ColumnPrefix {
    const INLINE: usize = 16;

    fn new(family: &[u8], qualifier: &[u8]) -> ColumnPrefix {
        let mut head = [0u8; Self::INLINE];
        let f = family.len().min(Self::INLINE);
        head[..f].copy_from_slice(&family[..f]);
        // head[f], when inside, stays the 0x00 separator.
        let q_start = (f + 1).min(Self::INLINE);
        let q = qualifier.len().min(Self::INLINE - q_start);
        head[q_start..q_start + q].copy_from_slice(&qualifier[..q]);
        ColumnPrefix {
            head: u128::from_be_bytes(head),
            len: family.len() + 1 + qualifier.len(),
        }
    }

    /// The order of two columns when their prefixes decide it: different heads; or equal
    /// heads where one text is held whole, which makes it a prefix of the other (equal when
    /// the lengths are). Only two texts longer than the head need their bytes compared.
    fn decides(self, other: ColumnPrefix) -> Option<Ordering> {
        match self.head.cmp(&other.head) {
            Ordering::Equal if self.len <= Self::INLINE || other.len <= Self::INLINE => {
                Some(self.len.cmp(&other.len))
            }
            Ordering::Equal => None,
            order => Some(order),
        }
    }
}

/// A column and timestamp searched for in a row: `(family, qualifier)` ascending, newest
/// first.
struct CellProbe<'a> {
    column: ColumnPrefix,
    family: &'a [u8],
    qualifier: &'a [u8],
    timestamp: i64,
}

impl<'a> CellProbe<'a> {
    fn new(family: &'a [u8], qualifier: &'a [u8], timestamp: i64) -> CellProbe<'a> {
        CellProbe {
            column: ColumnPrefix::new(family, qualifier),
            family,
            qualifier,
            timestamp,
        }
    }
}

impl StoredCell {
    /// A cell of `family:qualifier` at `timestamp` holding `value`. Lengths are bounded by
    /// Bigtable's limits (values up to 256 MiB), far below `u32::MAX`.
    fn new(family: &str, qualifier: &[u8], timestamp: i64, value: &[u8]) -> StoredCell {
        let mut data = Vec::with_capacity(family.len() + qualifier.len() + value.len());
        data.extend_from_slice(family.as_bytes());
        data.extend_from_slice(qualifier);
        data.extend_from_slice(value);
        StoredCell {
            column_head: ColumnPrefix::new(family.as_bytes(), qualifier).head,
            data: data.into_boxed_slice(),
            timestamp,
            family_len: u32::try_from(family.len()).unwrap_or(u32::MAX),
            qualifier_len: u32::try_from(qualifier.len()).unwrap_or(u32::MAX),
        }
    }

    fn family(&self) -> &[u8] {
        &self.data[..self.family_len as usize]
    }

    fn column(&self) -> ColumnPrefix {
        ColumnPrefix {
            head: self.column_head,
            len: self.family_len as usize + 1 + self.qualifier_len as usize,
        }
    }

    fn qualifier(&self) -> &[u8] {
        let start = self.family_len as usize;
        &self.data[start..start + self.qualifier_len as usize]
    }

    fn value(&self) -> &[u8] {
        &self.data[self.family_len as usize + self.qualifier_len as usize..]
    }

    /// `len(family) + len(qualifier) + 8 + len(value)`: its part of the row's size.
    fn size(&self) -> u64 {
        self.data.len() as u64 + 8
    }

    /// Its column's place against the probe's: family, then qualifier, ascending (a family
    /// name's bytes order as the name does).
    fn cmp_column(&self, probe: &CellProbe<'_>) -> Ordering {
        self.column().decides(probe.column).unwrap_or_else(|| {
            self.family()
                .cmp(probe.family)
                .then_with(|| self.qualifier().cmp(probe.qualifier))
        })
    }

    /// Its place against the probe in canonical order: column ascending, newest first.
    fn cmp_key(&self, probe: &CellProbe<'_>) -> Ordering {
        self.cmp_column(probe)
            .then_with(|| probe.timestamp.cmp(&self.timestamp))
    }

    fn to_cell(&self) -> Cell {
        Cell {
            // Families are put as `&str` and stored whole, so the bytes are UTF-8: the strict
            // check (fast) always passes; the lossy one walked the bytes in chunks per cell.
            family: core::str::from_utf8(self.family())
                .map(str::to_owned)
                .unwrap_or_else(|_| String::from_utf8_lossy(self.family()).into_owned()),
            qualifier: self.qualifier().to_vec(),
            timestamp: Timestamp(self.timestamp),
            value: self.value().to_vec(),
            labels: Vec::new(),
        }
    }
}

#[derive(Debug, Default)]
struct StoredRow {
    /// In canonical order: `(family, qualifier)` ascending, timestamp descending.
    cells: Vec<StoredCell>,
    /// Σ over cells of `len(family) + len(qualifier) + 8 + len(value)` (the key is added by
    /// [`RowWrite::size`]).
    cells_size: u64,
}

impl StoredRow {
    fn to_row(&self, key: &[u8]) -> Row {
        Row {
            key: key.to_vec(),
            cells: self.cells.iter().map(StoredCell::to_cell).collect(),
        }
    }

    fn size(&self, key_len: usize) -> u64 {
        if self.cells.is_empty() {
            0
        } else {
            self.cells_size + key_len as u64
        }
    }

    /// The index of the first cell at or after the probe. Writers often add a column after
    /// every stored one (a trace's next commit), so the last cell is tried first.
    fn position(&self, probe: &CellProbe<'_>) -> usize {
        match self.cells.last() {
            Some(last) if last.cmp_key(probe) == Ordering::Less => self.cells.len(),
            _ => self
                .cells
                .partition_point(|c| c.cmp_key(probe) == Ordering::Less),
        }
    }

    /// The index range of one column's cells (newest first).
    fn column(&self, family: &[u8], qualifier: &[u8]) -> std::ops::Range<usize> {
        let probe = CellProbe::new(family, qualifier, i64::MAX);
        let start = self.position(&probe);
        let len = self.cells[start..].partition_point(|c| c.cmp_column(&probe) == Ordering::Equal);
        start..start + len
    }

    /// The index range of one family's cells.
    fn family(&self, family: &[u8]) -> std::ops::Range<usize> {
        let start = self.cells.partition_point(|c| c.family() < family);
        let len = self.cells[start..].partition_point(|c| c.family() == family);
        start..start + len
    }
}

impl MemoryStore {
    /// An empty store with seed 0 and the default chunking (one response per row, no splits).
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// Sets the store's seed and chunking (default: seed 0, whole rows), and restarts the
    /// count of requests that drew a seed.
    pub fn with_options(mut self, options: StoreOptions) -> MemoryStore {
        self.state.set_options(options);
        self
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, BTreeMap<String, Table>>, StoreError> {
        self.tables.read().map_err(|_| poisoned())
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, BTreeMap<String, Table>>, StoreError> {
        self.tables.write().map_err(|_| poisoned())
    }
}

/// A panic while the lock was held may have left a row's cells moved out of its table: refuse
/// to go on rather than serve silently missing data.
fn poisoned() -> StoreError {
    StoreError::new(
        Code::Internal,
        "memory store: lock poisoned by an earlier panic",
    )
}

fn table_not_found(table: &str) -> StoreError {
    StoreError::new(Code::NotFound, format!("table \"{table}\" not found"))
}

fn get_table<'m>(
    tables: &'m BTreeMap<String, Table>,
    table: &str,
) -> Result<&'m Table, StoreError> {
    tables.get(table).ok_or_else(|| table_not_found(table))
}

fn get_table_mut<'m>(
    tables: &'m mut BTreeMap<String, Table>,
    table: &str,
) -> Result<&'m mut Table, StoreError> {
    tables.get_mut(table).ok_or_else(|| table_not_found(table))
}

/// A start bound combined with "strictly after `after`" (ascending scans).
fn lower_bound<'k>(start: &'k KeyBound, after: Option<&'k [u8]>) -> Bound<&'k [u8]> {
    let from_start = match start {
        KeyBound::Unbounded => Bound::Unbounded,
        KeyBound::Closed(k) => Bound::Included(k.as_slice()),
        KeyBound::Open(k) => Bound::Excluded(k.as_slice()),
    };
    match (after, start.key()) {
        (Some(a), Some(s)) if a < s => from_start,
        (Some(a), _) => Bound::Excluded(a),
        (None, _) => from_start,
    }
}

/// An end bound combined with "strictly before `after`" (descending scans). Empty end keys are
/// unbounded.
fn upper_bound<'k>(end: &'k KeyBound, after: Option<&'k [u8]>) -> Bound<&'k [u8]> {
    let from_end = match end {
        KeyBound::Closed(k) if !k.is_empty() => Bound::Included(k.as_slice()),
        KeyBound::Open(k) if !k.is_empty() => Bound::Excluded(k.as_slice()),
        _ => Bound::Unbounded,
    };
    match (after, &from_end) {
        (Some(a), Bound::Included(e) | Bound::Excluded(e)) if a > *e => from_end,
        (Some(a), _) => Bound::Excluded(a),
        (None, _) => from_end,
    }
}

/// The one key of a range `[k, k]` (a point read), if it is one.
fn single_key(range: &RowRange) -> Option<&[u8]> {
    match (&range.start, &range.end) {
        (KeyBound::Closed(start), KeyBound::Closed(end)) if start == end && !start.is_empty() => {
            Some(start)
        }
        _ => None,
    }
}

/// The first row of `range` after `after` in scan direction. A point read is one hash probe;
/// otherwise only one side of each `BTreeSet::range` call is bounded and the other side is
/// checked by hand, because `range` panics on inverted bounds.
fn scan<'t>(
    table: &'t Table,
    range: &RowRange,
    after: Option<&[u8]>,
    reversed: bool,
) -> Option<(&'t [u8], &'t StoredRow)> {
    if let Some(key) = single_key(range) {
        let passed = after.is_some_and(|a| if reversed { a <= key } else { a >= key });
        return if passed { None } else { table.row(key) };
    }
    let found = if reversed {
        let upper = upper_bound(&range.end, after);
        table
            .order
            .range::<[u8], _>((Bound::Unbounded, upper))
            .next_back()
    } else {
        let lower = lower_bound(&range.start, after);
        table
            .order
            .range::<[u8], _>((lower, Bound::Unbounded))
            .next()
    }?;
    if !range.contains(found) {
        return None;
    }
    table.row(found)
}

impl TableStorage for MemoryStore {
    type Row<'t> = MemoryRow;

    /// A write takes the tables' lock for the few microseconds of its row (or batch).
    fn writes_in_memory(&self) -> bool {
        true
    }

    #[cfg(feature = "redb")]
    fn backup_to(
        &self,
        path: &std::path::Path,
        overwrite: bool,
    ) -> Result<crate::BackupSummary, StoreError> {
        self.write_backup(path, overwrite)
    }

    fn create_table_with_splits(
        &self,
        table: &str,
        families: &[ColumnFamily],
        splits: &[Vec<u8>],
    ) -> Result<(), StoreError> {
        validate_schema(table, families)?;
        let mut tables = self.write()?;
        if tables.contains_key(table) {
            return Err(StoreError::new(
                Code::AlreadyExists,
                format!("table \"{table}\" already exists"),
            ));
        }
        let mut families = families.to_vec();
        families.sort_by(|a, b| a.name.cmp(&b.name));
        tables.insert(
            table.to_string(),
            Table {
                families: families.into(),
                splits: splits.into(),
                ..Table::default()
            },
        );
        Ok(())
    }

    fn splits(&self, table: &str) -> Result<Arc<[Vec<u8>]>, StoreError> {
        let tables = self.read()?;
        Ok(Arc::clone(&get_table(&tables, table)?.splits))
    }

    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.write()?
            .remove(table)
            .map(drop)
            .ok_or_else(|| table_not_found(table))
    }

    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.read()?.keys().cloned().collect())
    }

    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        Ok(self.schema(table)?.to_vec())
    }

    fn schema(&self, table: &str) -> Result<Arc<[ColumnFamily]>, StoreError> {
        let tables = self.read()?;
        Ok(Arc::clone(&get_table(&tables, table)?.families))
    }

    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        let mut tables = self.write()?;
        let t = get_table_mut(&mut tables, table)?;
        check_not_dropped(table, &t.dropped, &family.name)?;
        let mut all: Vec<ColumnFamily> = t.families.to_vec();
        all.retain(|f| f.name != family.name);
        all.push(family.clone());
        validate_schema(table, &all)?;
        all.sort_by(|a, b| a.name.cmp(&b.name));
        t.families = all.into();
        Ok(())
    }

    fn remove_family(&self, table: &str, family: &str) -> Result<(), StoreError> {
        let mut tables = self.write()?;
        let t = get_table_mut(&mut tables, table)?;
        t.families = remove_from_schema(table, &t.families, family)?.into();
        t.dropped = with_dropped(&t.dropped, family).into();
        Ok(())
    }

    fn dropped_families(&self, table: &str) -> Result<Arc<[String]>, StoreError> {
        let tables = self.read()?;
        Ok(Arc::clone(&get_table(&tables, table)?.dropped))
    }

    fn forget_dropped(&self, table: &str, family: &str) -> Result<(), StoreError> {
        let mut tables = self.write()?;
        let t = get_table_mut(&mut tables, table)?;
        t.dropped = t.dropped.iter().filter(|d| *d != family).cloned().collect();
        Ok(())
    }

    fn next_row(
        &self,
        table: &str,
        range: &RowRange,
        after: Option<&[u8]>,
        reversed: bool,
    ) -> Result<Option<Row>, StoreError> {
        let tables = self.read()?;
        let t = get_table(&tables, table)?;
        Ok(scan(t, range, after, reversed).map(|(key, row)| row.to_row(key)))
    }

    /// One hash lookup, without building a range; only the cells within the limit are
    /// copied out.
    fn read_row(
        &self,
        table: &str,
        key: &[u8],
        cells_per_column: Option<usize>,
    ) -> Result<Option<Row>, StoreError> {
        let tables = self.read()?;
        let t = get_table(&tables, table)?;
        let Some((key, row)) = t.row(key) else {
            return Ok(None);
        };
        let Some(limit) = cells_per_column else {
            return Ok(Some(row.to_row(key)));
        };
        let mut newest = NewestPerColumn::new(limit);
        let mut previous: Option<&StoredCell> = None;
        let mut cells = Vec::new();
        for cell in row.cells.iter() {
            let same = previous
                .is_some_and(|p| p.family() == cell.family() && p.qualifier() == cell.qualifier());
            previous = Some(cell);
            if newest.keeps(same) {
                cells.push(cell.to_cell());
            }
        }
        Ok(Some(Row {
            key: key.to_vec(),
            cells,
        }))
    }

    fn next_row_size(
        &self,
        table: &str,
        range: &RowRange,
        after: Option<&[u8]>,
    ) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        let tables = self.read()?;
        let t = get_table(&tables, table)?;
        Ok(scan(t, range, after, false).map(|(key, row)| (key.to_vec(), row.size(key.len()))))
    }

    fn write_row<T>(
        &self,
        table: &str,
        key: &[u8],
        f: impl FnOnce(&mut MemoryRow) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut tables = self.write()?;
        get_table_mut(&mut tables, table)?.write_row(key, f)
    }

    /// Every row of the batch under one hold of the write lock, in index order.
    fn write_rows<T>(
        &self,
        table: &str,
        keys: &[&[u8]],
        mut f: impl FnMut(usize, &mut MemoryRow) -> Result<T, StoreError>,
    ) -> Vec<Result<T, StoreError>> {
        let mut tables = match self.write() {
            Ok(tables) => tables,
            Err(e) => return keys.iter().map(|_| Err(e.clone())).collect(),
        };
        let t = match get_table_mut(&mut tables, table) {
            Ok(t) => t,
            Err(e) => return keys.iter().map(|_| Err(e.clone())).collect(),
        };
        keys.iter()
            .enumerate()
            .map(|(i, key)| t.write_row(key, |row| f(i, row)))
            .collect()
    }

    fn state(&self) -> &EngineState {
        &self.state
    }
}

/// One change to a row inside a transaction, as needed to undo it. Changes are undone in
/// reverse order, so each index is valid against the row as that change left it.
#[derive(Debug)]
enum Undo {
    /// A cell was inserted at this index.
    Inserted(usize),
    /// The cell at this index replaced this one.
    Replaced(usize, StoredCell),
    /// These cells were removed from this index on.
    Removed(usize, Vec<StoredCell>),
}

/// One row inside a [`MemoryStore`] write: the row's cells moved out of their table plus the
/// undo log that restores them if the transaction fails.
#[derive(Debug)]
pub struct MemoryRow {
    /// The table's families as of the transaction: the only ones a cell may be put in.
    families: Arc<[ColumnFamily]>,
    key_len: usize,
    row: StoredRow,
    /// `cells_size` when the transaction began.
    saved_size: u64,
    undo: Vec<Undo>,
}

impl MemoryRow {
    fn rollback(&mut self) {
        let cells = &mut self.row.cells;
        while let Some(change) = self.undo.pop() {
            match change {
                Undo::Inserted(at) => {
                    cells.remove(at);
                }
                Undo::Replaced(at, old) => cells[at] = old,
                Undo::Removed(at, removed) => {
                    cells.splice(at..at, removed);
                }
            }
        }
        self.row.cells_size = self.saved_size;
    }

    /// Removes the cells in `range`, logging them for undo.
    fn remove_range(&mut self, range: std::ops::Range<usize>) {
        if range.is_empty() {
            return;
        }
        let at = range.start;
        let removed: Vec<StoredCell> = if range.len() == self.row.cells.len() {
            std::mem::take(&mut self.row.cells)
        } else {
            self.row.cells.drain(range).collect()
        };
        let size: u64 = removed.iter().map(StoredCell::size).sum();
        self.row.cells_size = self.row.cells_size.saturating_sub(size);
        self.undo.push(Undo::Removed(at, removed));
    }
}

impl RowWrite for MemoryRow {
    fn cells(&mut self) -> Result<Vec<Cell>, StoreError> {
        Ok(self.row.cells.iter().map(StoredCell::to_cell).collect())
    }

    fn latest(
        &mut self,
        family: &str,
        qualifier: &[u8],
    ) -> Result<Option<(Timestamp, Vec<u8>)>, StoreError> {
        let newest = self
            .row
            .column(family.as_bytes(), qualifier)
            .next()
            .map(|at| &self.row.cells[at]);
        Ok(newest.map(|c| (Timestamp(c.timestamp), c.value().to_vec())))
    }

    fn put(
        &mut self,
        family: &str,
        qualifier: &[u8],
        timestamp: Timestamp,
        value: &[u8],
    ) -> Result<(), StoreError> {
        check_put_family(&self.families, family)?;
        let cell = StoredCell::new(family, qualifier, timestamp.0, value);
        self.row.cells_size += cell.size();
        let probe = CellProbe {
            column: cell.column(),
            family: family.as_bytes(),
            qualifier,
            timestamp: timestamp.0,
        };
        let at = self.row.position(&probe);
        let same = self
            .row
            .cells
            .get(at)
            .is_some_and(|c| c.cmp_key(&probe) == Ordering::Equal);
        if same {
            let old = std::mem::replace(&mut self.row.cells[at], cell);
            self.row.cells_size = self.row.cells_size.saturating_sub(old.size());
            self.undo.push(Undo::Replaced(at, old));
        } else {
            self.row.cells.insert(at, cell);
            self.undo.push(Undo::Inserted(at));
        }
        Ok(())
    }

    fn delete_column(
        &mut self,
        family: &str,
        qualifier: &[u8],
        range: Option<TimestampRange>,
    ) -> Result<(), StoreError> {
        let column = self.row.column(family.as_bytes(), qualifier);
        let cells = &self.row.cells[column.clone()];
        // Newest first, so the cells inside a timestamp range are one run.
        let (skip, take) = match range {
            None => (0, cells.len()),
            Some(r) => {
                let skip = cells
                    .iter()
                    .take_while(|c| !r.contains(Timestamp(c.timestamp)))
                    .count();
                let take = cells[skip..]
                    .iter()
                    .take_while(|c| r.contains(Timestamp(c.timestamp)))
                    .count();
                (skip, take)
            }
        };
        let start = column.start + skip;
        self.remove_range(start..start + take);
        Ok(())
    }

    fn delete_family(&mut self, family: &str) -> Result<(), StoreError> {
        let cells = self.row.family(family.as_bytes());
        self.remove_range(cells);
        Ok(())
    }

    fn delete_row(&mut self) -> Result<(), StoreError> {
        let all = 0..self.row.cells.len();
        self.remove_range(all);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.row.size(self.key_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Reply, Store};
    use rowkit_codec::model::{GcRule, Mutation, RowFilter, RowSet};
    use rowkit_statemachines::{
        CellChunk, MutateRowRequest, ReadRowsRequest, Request, Response, RowStatus, SplitMix64,
    };

    const NOW: Timestamp = Timestamp(1_700_000_123_456);

    fn cell(family: &str, qualifier: &[u8], ms: i64, value: &[u8]) -> Cell {
        Cell {
            family: family.into(),
            qualifier: qualifier.to_vec(),
            timestamp: Timestamp::from_millis(ms),
            value: value.to_vec(),
            labels: Vec::new(),
        }
    }

    /// The inline column prefix orders cells as the `(family, qualifier)` pair does, at the
    /// lengths around its 16 bytes where texts are cut or padded: families of 1 to 20 allowed
    /// characters, qualifiers of 0 to 19 bytes drawn from zero, one, `0` and 0xff.
    #[test]
    fn column_prefix_orders_as_family_then_qualifier() {
        const FAMILY_BYTES: &[u8] = b"-._09AZaz";
        let mut rng = SplitMix64::new(35);
        let draw = |rng: &mut SplitMix64| {
            let family_len = 1 + rng.below(20) as usize;
            let family: Vec<u8> = (0..family_len)
                .map(|_| FAMILY_BYTES[rng.below(FAMILY_BYTES.len() as u64) as usize])
                .collect();
            let qualifier: Vec<u8> = (0..rng.below(20))
                .map(|_| [0u8, 1, b'0', 0xff][rng.below(4) as usize])
                .collect();
            (String::from_utf8(family).unwrap(), qualifier)
        };
        let mut decided = 0;
        for _ in 0..200_000 {
            let (fa, qa) = draw(&mut rng);
            let (fb, qb) = draw(&mut rng);
            let (fb, qb) = if rng.below(4) == 0 {
                (fa.clone(), qa.clone())
            } else {
                (fb, qb)
            };
            let expected = (fa.as_bytes(), qa.as_slice()).cmp(&(fb.as_bytes(), qb.as_slice()));
            let a = StoredCell::new(&fa, &qa, 0, b"v");
            let probe = CellProbe::new(fb.as_bytes(), &qb, 0);
            assert_eq!(
                a.cmp_column(&probe),
                expected,
                "{fa:?} {qa:?} vs {fb:?} {qb:?}"
            );
            if let Some(order) = a.column().decides(probe.column) {
                assert_eq!(order, expected, "{fa:?} {qa:?} vs {fb:?} {qb:?}");
                decided += 1;
            }
        }
        // Most pairs are decided by the prefix alone (the point of it).
        assert!(decided > 150_000, "{decided}");
    }

    fn labelled(mut c: Cell, label: &str) -> Cell {
        c.labels = vec![label.to_string()];
        c
    }

    fn set(family: &str, qualifier: &[u8], ms: i64, value: &[u8]) -> Mutation {
        Mutation::SetCell {
            family: family.into(),
            qualifier: qualifier.to_vec(),
            timestamp: Timestamp::from_millis(ms),
            value: value.to_vec(),
        }
    }

    fn mutate(store: &MemoryStore, key: &[u8], mutations: Vec<Mutation>) -> Result<(), StoreError> {
        let req = Request::MutateRow(MutateRowRequest {
            table: "t".into(),
            row_key: key.to_vec(),
            mutations,
            ..Default::default()
        });
        Store::execute(store, req, NOW).map(drop)
    }

    fn store(families: &[&str]) -> MemoryStore {
        let s = MemoryStore::new();
        let fams: Vec<ColumnFamily> = families.iter().map(|f| ColumnFamily::new(*f)).collect();
        Store::create_table(&s, "t", &fams).unwrap();
        s
    }

    /// Reassembles the store's own chunk stream (well-formed by construction) into rows and
    /// checks the chunking rules of `spec/bigtable.md` 9.3 on the way.
    fn assemble(parts: Vec<Response>) -> Vec<Row> {
        let chunks: Vec<CellChunk> = parts
            .into_iter()
            .flat_map(|p| match p {
                Response::ReadRowsPart(r) => r.chunks,
                other => panic!("unexpected part {other:?}"),
            })
            .collect();
        let mut rows = Vec::new();
        let mut row: Option<Row> = None;
        let (mut family, mut qualifier) = (String::new(), Vec::new());
        let mut partial: Option<Cell> = None;
        for ch in chunks {
            if let Some(mut c) = partial.take() {
                assert!(
                    ch.family_name.is_none() && ch.qualifier.is_none() && ch.row_key.is_empty()
                );
                c.value.extend_from_slice(&ch.value);
                if ch.value_size > 0 {
                    partial = Some(c);
                    continue;
                }
                row.as_mut().unwrap().cells.push(c);
            } else {
                if row.is_none() {
                    assert!(!ch.row_key.is_empty(), "first chunk carries the key");
                    row = Some(Row {
                        key: ch.row_key.clone(),
                        cells: Vec::new(),
                    });
                } else {
                    assert!(ch.row_key.is_empty());
                }
                if let Some(f) = ch.family_name {
                    family = f;
                    assert!(ch.qualifier.is_some());
                }
                if let Some(q) = ch.qualifier {
                    qualifier = q;
                }
                let c = Cell {
                    family: family.clone(),
                    qualifier: qualifier.clone(),
                    timestamp: Timestamp(ch.timestamp_micros),
                    value: ch.value,
                    labels: ch.labels,
                };
                if ch.value_size > 0 {
                    assert_ne!(ch.row_status, RowStatus::Commit);
                    assert!(!c.value.is_empty());
                    partial = Some(c);
                    continue;
                }
                row.as_mut().unwrap().cells.push(c);
            }
            if ch.row_status == RowStatus::Commit {
                rows.push(row.take().unwrap());
            }
        }
        assert!(row.is_none() && partial.is_none(), "stream ended mid-row");
        rows
    }

    fn read(store: &MemoryStore, rows: RowSet, filter: Option<RowFilter>) -> Vec<Row> {
        read_req(
            store,
            ReadRowsRequest {
                table: "t".into(),
                rows,
                filter,
                ..Default::default()
            },
        )
    }

    fn read_req(store: &MemoryStore, req: ReadRowsRequest) -> Vec<Row> {
        match Store::execute(store, Request::ReadRows(req), NOW).unwrap() {
            Reply::Stream(parts) => assemble(parts.map(Result::unwrap).collect()),
            Reply::Unary(r) => panic!("unary reply {r:?}"),
        }
    }

    #[test]
    fn worked_sink_example() {
        // bigtable.md 10.4: cells A:A@1=w, A:B@2=x, B:B@4=z.
        let s = store(&["A", "B"]);
        mutate(
            &s,
            b"r",
            vec![
                set("A", b"A", 1, b"w"),
                set("A", b"B", 2, b"x"),
                set("B", b"B", 4, b"z"),
            ],
        )
        .unwrap();
        let filter = RowFilter::Chain(vec![
            RowFilter::FamilyNameRegex("A".into()),
            RowFilter::Interleave(vec![
                RowFilter::PassAll,
                RowFilter::Chain(vec![RowFilter::ApplyLabel("foo".into()), RowFilter::Sink]),
            ]),
            RowFilter::ColumnQualifierRegex(b"B".to_vec()),
        ]);
        let rows = read(&s, RowSet::all(), Some(filter));
        assert_eq!(
            rows,
            vec![Row {
                key: b"r".to_vec(),
                cells: vec![
                    labelled(cell("A", b"A", 1, b"w"), "foo"),
                    cell("A", b"B", 2, b"x"),
                    labelled(cell("A", b"B", 2, b"x"), "foo"),
                ],
            }]
        );
    }

    #[test]
    fn failed_write_leaves_row_untouched() {
        let s = store(&["cf"]);
        mutate(
            &s,
            b"r",
            vec![set("cf", b"a", 1, b"one"), set("cf", b"b", 1, b"two")],
        )
        .unwrap();
        let before = read(&s, RowSet::all(), None);
        let err = TableStorage::write_row(&s, "t", b"r", |row| {
            row.put("cf", b"a", Timestamp::from_millis(1), b"changed")?;
            row.put("cf", b"c", Timestamp::from_millis(5), b"new")?;
            row.delete_column("cf", b"b", None)?;
            row.delete_row()?;
            row.put("cf", b"z", Timestamp::from_millis(9), b"z")?;
            Err::<(), _>(StoreError::new(Code::Aborted, "no"))
        })
        .unwrap_err();
        assert_eq!(err.code, Code::Aborted);
        assert_eq!(read(&s, RowSet::all(), None), before);
        let size = TableStorage::next_row_size(&s, "t", &RowRange::all(), None)
            .unwrap()
            .unwrap();
        assert_eq!(
            size.1,
            rowkit_codec::model::row_size(b"r", &before[0].cells)
        );

        // A failed write to a missing row does not create it.
        TableStorage::write_row(&s, "t", b"new", |row| {
            row.put("cf", b"a", Timestamp::ZERO, b"x")?;
            Err::<(), _>(StoreError::new(Code::Aborted, "no"))
        })
        .unwrap_err();
        assert_eq!(read(&s, RowSet::key("new"), None), vec![]);
    }

    #[test]
    fn row_size_is_maintained() {
        let s = store(&["cf"]);
        mutate(
            &s,
            b"k",
            vec![set("cf", b"q", 1, b"abc"), set("cf", b"q", 1, b"abcdef")],
        )
        .unwrap();
        let (_, size) = TableStorage::next_row_size(&s, "t", &RowRange::all(), None)
            .unwrap()
            .unwrap();
        assert_eq!(size, 1 + 2 + 1 + 8 + 6);
        mutate(&s, b"k", vec![Mutation::DeleteFromRow]).unwrap();
        assert_eq!(
            TableStorage::next_row_size(&s, "t", &RowRange::all(), None).unwrap(),
            None
        );
    }

    #[test]
    fn scans_respect_bounds_and_direction() {
        let s = store(&["cf"]);
        for k in [&b"a"[..], b"b", b"c", b"d"] {
            mutate(&s, k, vec![set("cf", b"q", 1, b"v")]).unwrap();
        }
        let range = RowRange {
            start: KeyBound::Open(b"a".to_vec()),
            end: KeyBound::Closed(b"c".to_vec()),
        };
        let keys = |reversed: bool| {
            let mut out = Vec::new();
            let mut after: Option<Vec<u8>> = None;
            while let Some(r) =
                TableStorage::next_row(&s, "t", &range, after.as_deref(), reversed).unwrap()
            {
                out.push(r.key.clone());
                after = Some(r.key);
            }
            out
        };
        assert_eq!(keys(false), vec![b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(keys(true), vec![b"c".to_vec(), b"b".to_vec()]);
        // Inverted and empty ranges never panic.
        let inverted = RowRange {
            start: KeyBound::Closed(b"d".to_vec()),
            end: KeyBound::Open(b"a".to_vec()),
        };
        for reversed in [false, true] {
            assert_eq!(
                TableStorage::next_row(&s, "t", &inverted, None, reversed).unwrap(),
                None
            );
            assert_eq!(
                TableStorage::next_row(&s, "t", &range, Some(b"zz"), reversed)
                    .unwrap()
                    .map(|r| r.key),
                reversed.then(|| b"c".to_vec())
            );
        }
    }

    #[test]
    fn point_ranges_find_one_row_in_either_direction() {
        let s = store(&["cf"]);
        for k in [&b"a"[..], b"b", b"c"] {
            mutate(&s, k, vec![set("cf", b"q", 1, b"v")]).unwrap();
        }
        let point = |key: &[u8]| RowRange {
            start: KeyBound::Closed(key.to_vec()),
            end: KeyBound::Closed(key.to_vec()),
        };
        let next = |key: &[u8], after: Option<&[u8]>, reversed: bool| {
            TableStorage::next_row(&s, "t", &point(key), after, reversed)
                .unwrap()
                .map(|r| r.key)
        };
        let b = Some(b"b".to_vec());
        for reversed in [false, true] {
            assert_eq!(next(b"b", None, reversed), b);
            assert_eq!(next(b"b", Some(b"b"), reversed), None);
            assert_eq!(next(b"bb", None, reversed), None);
        }
        assert_eq!(next(b"b", Some(b"a"), false), b);
        assert_eq!(next(b"b", Some(b"c"), false), None);
        assert_eq!(next(b"b", Some(b"c"), true), b);
        assert_eq!(next(b"b", Some(b"a"), true), None);
    }

    #[test]
    fn chunking_splits_values_and_spreads_rows() {
        let chunked = MemoryStore::new().with_options(StoreOptions::default().with_chunking(
            crate::ChunkingOptions {
                split_values_every: Some(3),
                chunks_per_response: Some(2),
            },
        ));
        Store::create_table(&chunked, "t", &[ColumnFamily::new("cf")]).unwrap();
        let plain = store(&["cf"]);
        for s in [&chunked, &plain] {
            mutate(
                s,
                b"r1",
                vec![set("cf", b"a", 1, b"0123456789"), set("cf", b"a", 2, b"")],
            )
            .unwrap();
            mutate(
                s,
                b"r2",
                vec![set("cf", b"b", 1, b"xyz"), set("cf", b"c", 1, b"xyzw")],
            )
            .unwrap();
        }
        let req = || {
            Request::ReadRows(ReadRowsRequest {
                table: "t".into(),
                ..Default::default()
            })
        };
        let parts: Vec<Response> = match Store::execute(&chunked, req(), NOW).unwrap() {
            Reply::Stream(p) => p.map(Result::unwrap).collect(),
            Reply::Unary(_) => unreachable!(),
        };
        // r1: empty@2, 4 pieces of 10 bytes; r2: 1 + 2 pieces -> 8 chunks in 4 responses.
        assert_eq!(parts.len(), 4);
        assert_eq!(read(&plain, RowSet::all(), None), assemble(parts));
        let plain_parts = match Store::execute(&plain, req(), NOW).unwrap() {
            Reply::Stream(p) => p.count(),
            Reply::Unary(_) => unreachable!(),
        };
        assert_eq!(plain_parts, 2, "one response per row by default");
    }

    #[test]
    fn row_sample_is_deterministic_per_seed() {
        let fill = |seed: u64| {
            let s = MemoryStore::new().with_options(StoreOptions::default().with_seed(seed));
            Store::create_table(&s, "t", &[ColumnFamily::new("cf")]).unwrap();
            for i in 0..400u32 {
                mutate(
                    &s,
                    format!("k{i:04}").as_bytes(),
                    vec![set("cf", b"q", 1, b"v")],
                )
                .unwrap();
            }
            s
        };
        let sample = |s: &MemoryStore| {
            read(s, RowSet::all(), Some(RowFilter::RowSample(0.25)))
                .into_iter()
                .map(|r| r.key)
                .collect::<Vec<_>>()
        };
        let (a, b) = (fill(1), fill(1));
        let first = sample(&a);
        assert_eq!(first, sample(&b));
        assert!((60..140).contains(&first.len()), "{} of 400", first.len());
        assert_ne!(first, sample(&a), "the next request draws from a new seed");
    }

    #[test]
    fn gc_applies_rules_per_column() {
        let s = MemoryStore::new();
        Store::create_table(
            &s,
            "t",
            &[
                ColumnFamily::max_versions("v2", 2),
                ColumnFamily {
                    name: "old".into(),
                    gc_rule: Some(GcRule::MaxAge(10_000)),
                },
                ColumnFamily::new("keep"),
            ],
        )
        .unwrap();
        let mut m = Vec::new();
        for ms in 1..=4 {
            m.push(set("v2", b"a", ms, b"x"));
            m.push(set("v2", b"b", ms, b"x"));
            m.push(set("keep", b"a", ms, b"x"));
        }
        m.push(set("old", b"a", 1, b"x"));
        m.push(set("old", b"a", 20, b"x"));
        mutate(&s, b"r", m).unwrap();
        let deleted = Store::gc(&s, "t", Timestamp::from_millis(25)).unwrap();
        assert_eq!(deleted, 2 + 2 + 1);
        let rows = read(&s, RowSet::all(), None);
        let count = |f: &str| rows[0].cells.iter().filter(|c| c.family == f).count();
        assert_eq!((count("v2"), count("old"), count("keep")), (4, 1, 4));
        assert_eq!(Store::gc(&s, "t", Timestamp::from_millis(25)).unwrap(), 0);
    }

    #[test]
    fn regex_translation_follows_re2() {
        let matches = |pattern: &[u8], value: &[u8]| {
            let f = crate::semantics::CompiledFilter::new(&RowFilter::ValueRegex(pattern.to_vec()))
                .unwrap();
            !f.apply(
                b"k",
                vec![cell("cf", b"q", 1, value)],
                &mut SplitMix64::new(0),
            )
            .is_empty()
        };
        assert!(matches(b"q", b"q"));
        assert!(!matches(b"q", b"q\n"));
        assert!(!matches(b"q.", b"q"));
        assert!(!matches(b"q.", b"q\n"));
        assert!(matches(b"q\\C", b"q\n"));
        assert!(matches(b"q.", b"qx"));
        assert!(matches(b"\xff+", b"\xff\xff"));
        assert!(matches(b"[\x80-\xff]", b"\xe9"));
        assert!(!matches(b"[\x80-\xff]", b"e"));
        assert!(matches(b"[a-c]x", b"bx"));
        assert!(matches(b"[^a]", b"\n"));
        assert!(matches(b"[]a]", b"]"));
        assert!(matches(b"[[]", b"["));
        assert!(matches(b"a&&b|[&&]", b"&"));
        assert!(matches(b"[[:digit:]]+", b"123"));
        assert!(matches(b"(?i)abc", b"ABC"));
        assert!(matches(b"a{2}", b"aa"));
        assert!(matches(b"x{", b"x{"));
        assert!(matches(b"\\\\C", b"\\C"));
        assert!(matches(b"", b""));
        assert!(!matches(b"", b"a"));
        for bad in [
            &b"("[..],
            b"[a",
            b"a\\",
            b"(?x)a",
            b"a{1001}",
            b"\\pL",
            b"[\\C]",
            b"[a--b]",
            b"\\\xff",
            b"\\Qa\\E",
        ] {
            let err = crate::semantics::CompiledFilter::new(&RowFilter::ValueRegex(bad.to_vec()))
                .unwrap_err();
            assert_eq!(err.code, Code::InvalidArgument, "{bad:?}");
            assert!(
                err.message.contains("value_regex_filter"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn label_survives_strip_value_and_interleave_keeps_duplicates() {
        let s = store(&["cf"]);
        mutate(&s, b"r", vec![set("cf", b"q", 1, b"v")]).unwrap();
        let f = RowFilter::Interleave(vec![
            RowFilter::Chain(vec![
                RowFilter::ApplyLabel("x".into()),
                RowFilter::StripValue,
            ]),
            RowFilter::PassAll,
            RowFilter::PassAll,
        ]);
        let rows = read(&s, RowSet::all(), Some(f));
        assert_eq!(
            rows[0].cells,
            vec![
                labelled(cell("cf", b"q", 1, b""), "x"),
                cell("cf", b"q", 1, b"v"),
                cell("cf", b"q", 1, b"v"),
            ]
        );
    }

    /// A random filter tree, valid or not, from a small alphabet so regexes and ranges hit.
    fn random_filter(rng: &mut SplitMix64, depth: u32) -> RowFilter {
        let bytes = |rng: &mut SplitMix64| -> Vec<u8> {
            let alphabet = [
                &b"a"[..],
                b"b",
                b"",
                b"\\C",
                b".",
                b"(",
                b"[a-",
                b"\xff",
                b"*",
                b"q",
            ];
            (0..rng.below(3))
                .flat_map(|_| alphabet[rng.below(alphabet.len() as u64) as usize].to_vec())
                .collect()
        };
        let bound = |rng: &mut SplitMix64| match rng.below(3) {
            0 => KeyBound::Unbounded,
            1 => KeyBound::Closed(bytes(rng)),
            _ => KeyBound::Open(bytes(rng)),
        };
        let pick = if depth == 0 {
            3 + rng.below(17)
        } else {
            rng.below(20)
        };
        let children = |rng: &mut SplitMix64| {
            (0..rng.below(4))
                .map(|_| random_filter(rng, depth.saturating_sub(1)))
                .collect()
        };
        let opt = |rng: &mut SplitMix64| {
            (rng.below(4) != 0).then(|| Box::new(random_filter(rng, depth.saturating_sub(1))))
        };
        let int = |rng: &mut SplitMix64| rng.below(5) as i32 - 1;
        match pick {
            0 => RowFilter::Chain(children(rng)),
            1 => RowFilter::Interleave(children(rng)),
            2 => RowFilter::Condition {
                predicate: opt(rng),
                true_filter: opt(rng),
                false_filter: opt(rng),
            },
            3 => RowFilter::Sink,
            4 => RowFilter::PassAll,
            5 => RowFilter::BlockAll,
            6 => RowFilter::RowKeyRegex(bytes(rng)),
            7 => RowFilter::RowSample(rng.next_f64() * 1.2 - 0.1),
            8 => RowFilter::FamilyNameRegex(String::from_utf8_lossy(&bytes(rng)).into_owned()),
            9 => RowFilter::ColumnQualifierRegex(bytes(rng)),
            10 => RowFilter::ColumnRange {
                family: ["a", "b", "", "x:y"][rng.below(4) as usize].into(),
                start: bound(rng),
                end: bound(rng),
            },
            11 => RowFilter::TimestampRange(TimestampRange {
                start: rng.below(5) as i64 * 1000 - 1000,
                end: rng.below(5) as i64 * 1000,
            }),
            12 => RowFilter::ValueRegex(bytes(rng)),
            13 => RowFilter::ValueRange {
                start: bound(rng),
                end: bound(rng),
            },
            14 => RowFilter::CellsPerRowOffset(int(rng)),
            15 => RowFilter::CellsPerRowLimit(int(rng)),
            16 => RowFilter::CellsPerColumnLimit(int(rng)),
            17 => RowFilter::StripValue,
            _ => RowFilter::ApplyLabel(["l", "m", "", "Bad"][rng.below(4) as usize].into()),
        }
    }

    #[test]
    fn random_filters_never_panic_and_keep_canonical_order() {
        use crate::semantics::CompiledFilter;
        let mut rng = SplitMix64::new(42);
        let mut valid = 0;
        for _ in 0..3000 {
            let filter = random_filter(&mut rng, 4);
            let mut cells: Vec<Cell> = (0..rng.below(8))
                .map(|_| {
                    let fam = ["a", "b"][rng.below(2) as usize];
                    let q = [&b"a"[..], b"b", b"", b"\xff"][rng.below(4) as usize];
                    let v = [&b"a"[..], b"q\n", b"", b"\xffb"][rng.below(4) as usize];
                    cell(fam, q, rng.below(4) as i64, v)
                })
                .collect();
            cells.sort_by(rowkit_codec::model::compare_canonical);
            let Ok(compiled) = CompiledFilter::new(&filter) else {
                continue;
            };
            valid += 1;
            let out = compiled.apply(b"a", cells.clone(), &mut rng);
            assert!(
                out.windows(2)
                    .all(|w| rowkit_codec::model::compare_canonical(&w[0], &w[1]).is_le()),
                "{filter:?} gave {out:?}"
            );
            // Every output cell comes from an input cell (labels and value may be transformed).
            for c in &out {
                assert!(cells.iter().any(|i| i.family == c.family
                    && i.qualifier == c.qualifier
                    && i.timestamp == c.timestamp
                    && (c.value.is_empty() || c.value == i.value)));
            }
        }
        assert!(valid > 300, "only {valid} valid filters generated");
    }
}
