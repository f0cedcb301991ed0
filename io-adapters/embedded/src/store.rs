//! The store interface: [`TableStorage`] is what a storage engine provides (raw rows and one
//! atomic write per row), [`Store`] is what callers use (execute any request), and the blanket
//! implementation between them is the one evaluator in [`crate::semantics`].

use rowkit_codec::model::{Cell, ColumnFamily, Row, RowRange, Timestamp, TimestampRange};
use rowkit_statemachines::{Request, Response, StoreError};

/// The answer to one request: a unary reply, or the parts of a stream produced lazily (a long
/// scan is never materialised). A stream's items are parts; an `Err` item ends it with that
/// status. The driver appends `StreamEnd` after the last `Ok` part.
pub enum Reply<'a> {
    /// Reply to a unary RPC.
    Unary(Response),
    /// Parts of a streamed reply, in order.
    Stream(Box<dyn Iterator<Item = Result<Response, StoreError>> + 'a>),
}

impl core::fmt::Debug for Reply<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Reply::Unary(r) => f.debug_tuple("Unary").field(r).finish(),
            Reply::Stream(_) => f.write_str("Stream(..)"),
        }
    }
}

/// How a store cuts ReadRows results into chunks and responses (`spec/bigtable.md` 9.3). The
/// default sends each row whole in one response, like the emulator; tests split values and
/// spread rows so the merger's split paths run against a real store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkingOptions {
    /// Split values into pieces of at most this many bytes (`None`: never split).
    pub split_values_every: Option<usize>,
    /// Start a new response after this many chunks (`None`: one response per row).
    pub chunks_per_response: Option<usize>,
}

/// One row inside a write transaction. Every method sees the effect of the earlier ones; the
/// transaction commits only if the evaluator's closure returns `Ok`.
pub trait RowWrite {
    /// Every cell of the row in canonical order.
    fn cells(&mut self) -> Result<Vec<Cell>, StoreError>;
    /// The newest cell of a column: its timestamp and value.
    fn latest(
        &mut self,
        family: &str,
        qualifier: &[u8],
    ) -> Result<Option<(Timestamp, Vec<u8>)>, StoreError>;
    /// Writes a cell, replacing one with the same column and timestamp.
    fn put(
        &mut self,
        family: &str,
        qualifier: &[u8],
        timestamp: Timestamp,
        value: &[u8],
    ) -> Result<(), StoreError>;
    /// Deletes the cells of a column (all, or those in `range`).
    fn delete_column(
        &mut self,
        family: &str,
        qualifier: &[u8],
        range: Option<TimestampRange>,
    ) -> Result<(), StoreError>;
    /// Deletes every cell of a family.
    fn delete_family(&mut self, family: &str) -> Result<(), StoreError>;
    /// Deletes every cell of the row.
    fn delete_row(&mut self) -> Result<(), StoreError>;
    /// The row's current size as counted by [`rowkit_codec::model::row_size`] (0 when it has no cell).
    fn size(&self) -> u64;
}

/// What a storage engine provides: tables with schemas, ordered row reads, and one atomic
/// read-write transaction per row. Everything Bigtable-specific is done on top by
/// [`crate::semantics`]; implementors only store bytes.
pub trait TableStorage: Send + Sync {
    /// The row handle given to [`TableStorage::write_row`] closures.
    type Row<'t>: RowWrite
    where
        Self: 't;

    /// Creates a table (`ALREADY_EXISTS` if it exists).
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError>;
    /// Deletes a table and all its rows (`NOT_FOUND` if missing).
    fn delete_table(&self, table: &str) -> Result<(), StoreError>;
    /// Table ids in ascending order.
    fn list_tables(&self) -> Result<Vec<String>, StoreError>;
    /// The families of a table (`NOT_FOUND` if missing), ascending by name.
    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError>;
    /// Adds or replaces a family (its GC rule) in an existing table.
    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError>;

    /// The first row of `range` strictly after `after` in scan direction (ascending, or
    /// descending when `reversed`), with all its cells in canonical order.
    fn next_row(
        &self,
        table: &str,
        range: &RowRange,
        after: Option<&[u8]>,
        reversed: bool,
    ) -> Result<Option<Row>, StoreError>;
    /// The first row key of `range` strictly after `after`, ascending, with the row's size;
    /// used for sampling and maintenance without loading cells.
    fn next_row_size(
        &self,
        table: &str,
        range: &RowRange,
        after: Option<&[u8]>,
    ) -> Result<Option<(Vec<u8>, u64)>, StoreError>;
    /// Runs `f` on one row in a single atomic transaction: its writes become visible together
    /// if it returns `Ok`, and not at all if it returns `Err`.
    fn write_row<T>(
        &self,
        table: &str,
        key: &[u8],
        f: impl FnOnce(&mut Self::Row<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError>;

    /// Runs `f(i, row)` on the row of each `keys[i]`, in order, each row atomically as
    /// [`TableStorage::write_row`] does (MutateRows); returns each row's result. Engines with a
    /// per-transaction cost may commit the batch at once; the default writes row by row.
    fn write_rows<T>(
        &self,
        table: &str,
        keys: &[&[u8]],
        mut f: impl FnMut(usize, &mut Self::Row<'_>) -> Result<T, StoreError>,
    ) -> Vec<Result<T, StoreError>> {
        keys.iter()
            .enumerate()
            .map(|(i, key)| self.write_row(table, key, |row| f(i, row)))
            .collect()
    }

    /// How ReadRows results are cut into chunks.
    fn chunking(&self) -> ChunkingOptions;
    /// A fresh seed for one request's random draws (`row_sample_filter`), deterministic from the
    /// store's own seed and the number of requests so far.
    fn next_request_seed(&self) -> u64;
}

/// Executes any [`Request`] with exact Bigtable semantics (`spec/bigtable.md`). Implemented for
/// every [`TableStorage`] by the shared evaluator.
pub trait Store: Send + Sync {
    /// Runs one request at time `now` (server time for `-1` timestamps and read-modify-write).
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError>;
    /// Creates a table with its families (`ALREADY_EXISTS` if it exists).
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError>;
    /// Deletes a table.
    fn delete_table(&self, table: &str) -> Result<(), StoreError>;
    /// Table ids in ascending order.
    fn list_tables(&self) -> Result<Vec<String>, StoreError>;
    /// The families of a table, ascending by name.
    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError>;
    /// Adds a family to an existing table, or replaces the GC rule of one it has: the admin
    /// `ModifyColumnFamilies` with one `create` or `update` (`NOT_FOUND` if the table is
    /// missing). Stores with a schema implement it (memory and redb through
    /// [`TableStorage::set_family`], Bigtable through the admin API); the default answers
    /// `UNIMPLEMENTED`, and wrappers forward it.
    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        Err(StoreError::new(
            rowkit_statemachines::Code::Unimplemented,
            format!(
                "this store cannot add family {} to table {table}",
                family.name
            ),
        ))
    }
    /// Runs garbage collection on a table per its families' GC rules; returns the number of
    /// cells deleted. GC never happens implicitly (`spec/bigtable.md` 12).
    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError>;
}
