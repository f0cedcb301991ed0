//! The store interface: [`TableStorage`] is what a storage engine provides (raw rows and one
//! atomic write per row), [`Store`] is what callers use (execute any request), and the blanket
//! implementation between them is the one evaluator in [`crate::semantics`].

use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rowkit_codec::model::{Cell, ColumnFamily, KeyBound, Row, RowRange, Timestamp, TimestampRange};
use rowkit_statemachines::{Request, Response, SplitMix64, StoreError};

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

/// A local store's server clock: the server time it stamps on `-1` cells and read-modify-write
/// cells (see [`Store::execute`]), kept per store and only moving forward.
///
/// Bigtable stamps a write when it applies it, so of two writes to one row the one applied later
/// never has the earlier timestamp. A local store is handed `now` by its caller instead, and two
/// callers that read their clocks and then race to the store could apply a later write with an
/// earlier `now`: its cell would hide behind the older one (`LatestN(1)` shows the old version, an
/// optimistic-concurrency check passes on a stale snapshot). So the evaluator draws each row
/// transaction's server time from here, inside the transaction, as `max(now, last stamp)`.
#[derive(Debug, Default)]
pub struct ServerTime {
    /// The greatest stamp handed out so far (0 before the first): a whole millisecond.
    last: AtomicI64,
}

impl ServerTime {
    /// The server time of a write arriving with `now`: `now` truncated to milliseconds (and
    /// clamped to 0), or the last stamp if that is later; recorded as the last stamp. Call it
    /// inside the row's write transaction, so that the stamps of one row's transactions follow
    /// the order in which they apply.
    pub fn stamp(&self, now: Timestamp) -> Timestamp {
        let now_ms = now.truncate_to_millis().0.max(0);
        // Every stored value is a whole millisecond, so the maximum is one too.
        let last = self.last.fetch_max(now_ms, Ordering::AcqRel);
        Timestamp(last.max(now_ms))
    }

    /// The last stamp handed out (`Timestamp(0)` before the first).
    pub fn last(&self) -> Timestamp {
        Timestamp(self.last.load(Ordering::Acquire))
    }
}

/// How a local store is set up besides its rows, the same for every engine: the seed its
/// requests' random draws come from and how it cuts ReadRows results into chunks. Given to
/// `MemoryStore::with_options` and `RedbStore::with_options`.
///
/// ```
/// use rowkit_store::{ChunkingOptions, StoreOptions};
///
/// let options = StoreOptions::default().with_seed(7).with_chunking(ChunkingOptions {
///     split_values_every: Some(3),
///     chunks_per_response: Some(2),
/// });
/// assert_eq!(options.seed, 7);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreOptions {
    /// The seed per-request random draws (`row_sample_filter`) derive from (default 0).
    pub seed: u64,
    /// How ReadRows results are cut into chunks and responses (default: whole rows).
    pub chunking: ChunkingOptions,
}

impl StoreOptions {
    /// These options with `seed` as the seed.
    pub fn with_seed(self, seed: u64) -> StoreOptions {
        StoreOptions { seed, ..self }
    }

    /// These options with `chunking` as the chunking (tests use it to run the merger's
    /// split-value and multi-response paths against a real store).
    pub fn with_chunking(self, chunking: ChunkingOptions) -> StoreOptions {
        StoreOptions { chunking, ..self }
    }
}

/// What a local storage engine keeps besides its rows, the same for every engine: its
/// [`StoreOptions`], the count of requests that drew a seed and its [`ServerTime`]. Each store
/// holds one and shows it to the evaluator through [`TableStorage::state`].
#[derive(Debug, Default)]
pub struct EngineState {
    /// Held by each step of a dropped family's purge (which first checks that the drop is still
    /// recorded), so that a purge never deletes cells of a family re-created under the name
    /// (`crate::semantics`).
    purge: Mutex<()>,
    options: StoreOptions,
    /// Requests that drew a seed so far.
    requests: AtomicU64,
    server_time: ServerTime,
}

impl EngineState {
    /// Sets the store's options and restarts the request count (a store's builder calls it
    /// before the store is shared).
    pub fn set_options(&mut self, options: StoreOptions) {
        self.options = options;
        self.requests = AtomicU64::new(0);
    }

    /// The store's options.
    pub fn options(&self) -> StoreOptions {
        self.options
    }

    /// The seed of [`StoreOptions::seed`].
    pub fn seed(&self) -> u64 {
        self.options.seed
    }

    /// How ReadRows results are cut into chunks.
    pub fn chunking(&self) -> ChunkingOptions {
        self.options.chunking
    }

    /// The lock of the purges of dropped families (a poisoned one is still used: it guards no
    /// data).
    pub fn purge_lock(&self) -> MutexGuard<'_, ()> {
        self.purge.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The store's server clock.
    pub fn server_time(&self) -> &ServerTime {
        &self.server_time
    }

    /// A fresh seed for one request's random draws: the next output of one logical random
    /// stream per store, so two stores with the same seed draw the same seeds.
    pub fn next_request_seed(&self) -> u64 {
        SplitMix64::nth_output(
            self.options.seed,
            self.requests.fetch_add(1, Ordering::Relaxed),
        )
    }
}

/// Picks the newest `limit` cells of each column from a row's cells in canonical order (each
/// column's cells adjacent, newest first): the `cells_per_column_limit_filter` an engine
/// applies while it reads ([`TableStorage::read_row`]).
#[derive(Debug)]
pub(crate) struct NewestPerColumn {
    limit: usize,
    taken: usize,
}

impl NewestPerColumn {
    /// Keeps at most `limit` cells per column.
    pub(crate) fn new(limit: usize) -> NewestPerColumn {
        NewestPerColumn { limit, taken: 0 }
    }

    /// Whether the next cell is kept; `same_column` says whether it is of the previous
    /// cell's column (the engine compares them where it stores them).
    pub(crate) fn keeps(&mut self, same_column: bool) -> bool {
        self.taken = if same_column { self.taken + 1 } else { 1 };
        self.taken <= self.limit
    }
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
    /// Writes a cell, replacing one with the same column and timestamp. A family that is not
    /// in the table's schema as of this transaction is `NOT_FOUND` (a write validated before a
    /// concurrent drop of its family must not land cells the drop's purge has passed).
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

    /// [`Store::writes_in_memory`] of this engine. Default `false`.
    fn writes_in_memory(&self) -> bool {
        false
    }

    /// Creates a table (`ALREADY_EXISTS` if it exists) with no split points.
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.create_table_with_splits(table, families, &[])
    }
    /// Creates a table (`ALREADY_EXISTS` if it exists) and keeps its split points (CreateTable's
    /// `initial_splits`: ascending, distinct, non-empty) for SampleRowKeys.
    fn create_table_with_splits(
        &self,
        table: &str,
        families: &[ColumnFamily],
        splits: &[Vec<u8>],
    ) -> Result<(), StoreError>;
    /// The split points the table was created with, ascending (`NOT_FOUND` if it is missing).
    fn splits(&self, table: &str) -> Result<Arc<[Vec<u8>]>, StoreError>;
    /// Deletes a table and all its rows (`NOT_FOUND` if missing).
    fn delete_table(&self, table: &str) -> Result<(), StoreError>;
    /// Table ids in ascending order.
    fn list_tables(&self) -> Result<Vec<String>, StoreError>;
    /// The families of a table (`NOT_FOUND` if missing), ascending by name.
    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError>;
    /// [`TableStorage::families`] as the evaluator reads them, once per request: shared, so an
    /// engine that keeps its schemas in memory hands them out without a copy. Default: a copy
    /// of `families`.
    fn schema(&self, table: &str) -> Result<Arc<[ColumnFamily]>, StoreError> {
        self.families(table).map(Arc::from)
    }
    /// Adds or replaces a family (its GC rule) in an existing table. Adding a family whose name
    /// is still among [`TableStorage::dropped_families`] fails with `FAILED_PRECONDITION`: its
    /// old cells must be purged first (the evaluator does, `crate::semantics`).
    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError>;
    /// Removes a family from a table's schema and records it among the table's
    /// [`TableStorage::dropped_families`], in one atomic step (`NOT_FOUND` if the table or the
    /// family is missing). Its cells stay until the evaluator purges them
    /// ([`Store::drop_family`]); reads never show them meanwhile.
    fn remove_family(&self, table: &str, family: &str) -> Result<(), StoreError>;
    /// The families removed from the table's schema whose cells may remain (their purge has
    /// not finished), ascending (`NOT_FOUND` if the table is missing). Persistent stores keep
    /// them across a crash, so the purge can resume.
    fn dropped_families(&self, table: &str) -> Result<Arc<[String]>, StoreError>;
    /// Forgets that `family` was dropped from `table`, once no cell of it remains (nothing
    /// happens if it is not recorded).
    fn forget_dropped(&self, table: &str, family: &str) -> Result<(), StoreError>;

    /// The first row of `range` strictly after `after` in scan direction (ascending, or
    /// descending when `reversed`), with all its cells in canonical order.
    fn next_row(
        &self,
        table: &str,
        range: &RowRange,
        after: Option<&[u8]>,
        reversed: bool,
    ) -> Result<Option<Row>, StoreError>;
    /// The row `key` with its cells in canonical order, if it has any: a point read
    /// (`Request::ReadRow`). With `cells_per_column`, only the newest that many cells of each
    /// column are read (a `cells_per_column_limit_filter` applied in the engine, before any
    /// older cell is copied out). Default: [`TableStorage::next_row`] over the one-key range,
    /// then the limit; engines with a cheaper lookup override it.
    fn read_row(
        &self,
        table: &str,
        key: &[u8],
        cells_per_column: Option<usize>,
    ) -> Result<Option<Row>, StoreError> {
        let range = RowRange {
            start: KeyBound::Closed(key.to_vec()),
            end: KeyBound::Closed(key.to_vec()),
        };
        let mut row = self.next_row(table, &range, None, false)?;
        if let (Some(row), Some(limit)) = (row.as_mut(), cells_per_column) {
            let mut newest = NewestPerColumn::new(limit);
            let kept: Vec<bool> = (0..row.cells.len())
                .map(|i| {
                    let same = i.checked_sub(1).is_some_and(|p| {
                        let (a, b) = (&row.cells[p], &row.cells[i]);
                        a.family == b.family && a.qualifier == b.qualifier
                    });
                    newest.keeps(same)
                })
                .collect();
            let mut kept = kept.into_iter();
            row.cells.retain(|_| kept.next().unwrap_or(false));
        }
        Ok(row)
    }
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

    /// Runs `f(i, row)` on the row of each `keys[i]`, each row atomically as
    /// [`TableStorage::write_row`] does (MutateRows); returns each row's result, by index.
    /// The default writes row by row in index order. Engines with a per-transaction cost may
    /// commit the batch at once, and then may visit its rows in another order (nothing can
    /// observe it before the commit), keeping the entries of one key in index order.
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

    /// Writes a consistent copy of the whole store to `path` as a redb store file
    /// ([`Store::backup_to`]). Default: `UNIMPLEMENTED`.
    fn backup_to(&self, path: &Path, overwrite: bool) -> Result<BackupSummary, StoreError> {
        let _ = overwrite;
        Err(no_backup(path))
    }

    /// The store's seed, chunking and server clock (one per store, shared by all its tables).
    fn state(&self) -> &EngineState;
    /// How ReadRows results are cut into chunks.
    fn chunking(&self) -> ChunkingOptions {
        self.state().chunking()
    }
    /// The store's server clock (one per store, shared by all its tables), read and advanced by
    /// the evaluator inside [`TableStorage::write_row`] / [`TableStorage::write_rows`] closures.
    fn server_time(&self) -> &ServerTime {
        self.state().server_time()
    }
    /// A fresh seed for one request's random draws (`row_sample_filter`), deterministic from the
    /// store's own seed and the number of requests so far.
    fn next_request_seed(&self) -> u64 {
        self.state().next_request_seed()
    }
}

/// Executes any [`Request`] with exact Bigtable semantics (`spec/bigtable.md`). Implemented for
/// every [`TableStorage`] by the shared evaluator.
pub trait Store: Send + Sync {
    /// Runs one request at time `now`.
    ///
    /// Server time (the timestamp of a `SetCell` with `-1`, in `MutateRow`, `MutateRows` and
    /// `CheckAndMutateRow`, and the lower bound of a `ReadModifyWriteRow` cell's timestamp,
    /// `spec/bigtable.md` 3 and 8) is chosen at apply time. Bigtable uses its own clock; the
    /// local stores choose it inside each row's write transaction ([`ServerTime`]) as
    /// `max(floor_ms(now), the last server time this store stamped)`.
    /// So for any one row a write applied later never gets an earlier stamp, whatever `now` the
    /// racing callers read (callers need not serialise their writes to keep versions in
    /// order). Every server-time cell of one row transaction (the row of a MutateRow,
    /// CheckAndMutateRow or ReadModifyWriteRow, one MutateRows entry) gets the same stamp, and
    /// sequential calls with non-decreasing `now` get exactly `floor_ms(now)`, so a manual
    /// clock still determines every timestamp. `now` is a lower bound: a store never stamps
    /// earlier than its caller's clock.
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError>;
    /// Runs one request as [`Store::execute`] does, for a driver in the same process: a read
    /// may be answered with whole rows ([`Response::Rows`]) instead of chunks, since the rows
    /// are at hand and cutting them up for a merger to join again would copy them twice. The
    /// rows, their order and the stream's end are the same. What `execute` answers stays
    /// wire-faithful (the gateway and the gRPC server send it on). Default: `execute` (stores
    /// over a network, wrappers that inspect chunks).
    fn execute_local(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        self.execute(request, now)
    }
    /// Whether calls are answered from this process's own memory and files (the memory and
    /// redb stores) rather than over a network, so that a point read costs microseconds and
    /// never waits on another runtime: servers then answer small reads on their async threads
    /// instead of handing them to a blocking thread. Default `false`; wrappers forward it.
    fn in_process(&self) -> bool {
        false
    }
    /// Whether a write is applied in this process's memory and answered without waiting on a
    /// disk or a network (the memory store; not redb, whose commit may wait for an fsync):
    /// servers then apply a single-row write on their async threads too, where the hop to a
    /// blocking thread and back cost more than the write. Default `false`; wrappers forward
    /// it.
    fn writes_in_memory(&self) -> bool {
        false
    }
    /// Why no call can succeed, if so: a store opened on first use whose open failed (a file
    /// another process holds, a server that refused the connection). The sync driver then
    /// cancels its operations at once, since retrying until the deadline cannot mend it, and
    /// the caller reports this error. Default `None`; wrappers forward it.
    fn unusable(&self) -> Option<StoreError> {
        None
    }
    /// Creates a table with its families (`ALREADY_EXISTS` if it exists).
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError>;
    /// Creates a table with its families and initial split points (CreateTable's
    /// `initial_splits`), which SampleRowKeys then reports among its samples as production
    /// reports tablet boundaries. The default creates the table when there are none and
    /// answers `UNIMPLEMENTED` otherwise; stores that keep splits implement it, wrappers
    /// forward it.
    fn create_table_with_splits(
        &self,
        table: &str,
        families: &[ColumnFamily],
        splits: &[Vec<u8>],
    ) -> Result<(), StoreError> {
        if splits.is_empty() {
            return self.create_table(table, families);
        }
        Err(StoreError::new(
            rowkit_statemachines::Code::Unimplemented,
            format!("this store cannot create table {table} with split points"),
        ))
    }
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
    /// Deletes a family and all its cells from a table: the admin `ModifyColumnFamilies` with
    /// one `drop` (`NOT_FOUND` if the table or the family is missing). A row left without a
    /// cell stops existing. The family leaves the schema first, so requests that start after
    /// the call began are refused, and a write already past its schema check fails with
    /// `NOT_FOUND` rather than land a cell. Local stores are crash-safe here: the family is
    /// either in the schema with all its cells or gone with none visible, whenever the process
    /// dies (`crate::semantics`). The default answers `UNIMPLEMENTED`; wrappers forward it.
    fn drop_family(&self, table: &str, family: &str) -> Result<(), StoreError> {
        Err(StoreError::new(
            rowkit_statemachines::Code::Unimplemented,
            format!("this store cannot drop family {family} of table {table}"),
        ))
    }
    /// Runs garbage collection on a table per its families' GC rules; returns the number of
    /// cells deleted. GC never happens implicitly (`spec/bigtable.md` 12). Local stores do it
    /// in [`Store::gc_page`] steps, each row rewritten atomically, so writers are never held
    /// for more than one short transaction; first they finish purging the table's dropped
    /// families (a drop a crash cut short).
    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError>;
    /// One bounded step of [`Store::gc`]: the rows after `after` (from the first row when
    /// `None`), at most `max_rows` of them (at least one), are collected; continue with
    /// [`GcPage::next_after`] until it is `None`. A server runs these steps in the background
    /// with pauses between them; the first step (`after` = `None`) of local stores also
    /// finishes purging the table's dropped families. Local stores read the rows without
    /// blocking writers and rewrite those with collectible cells in one short batch, each row
    /// atomically with its victims recomputed inside its transaction. The default runs
    /// [`Store::gc`] on the whole table as one step (a network store, whose server collects by
    /// itself); wrappers forward it.
    fn gc_page(
        &self,
        table: &str,
        after: Option<&[u8]>,
        max_rows: usize,
        now: Timestamp,
    ) -> Result<GcPage, StoreError> {
        let _ = (after, max_rows);
        Ok(GcPage {
            deleted: self.gc(table, now)?,
            ..GcPage::default()
        })
    }

    /// Writes a consistent copy of the whole store (every table, its schema and split points,
    /// every cell) to `path` as a redb store file that `RedbStore::open` opens: restoring is
    /// opening the copy, or moving it into place. The copy is read from one snapshot, so it
    /// holds exactly the writes that committed before it began; the redb store's writers go on
    /// meanwhile (the memory store holds them while it copies). It is written to a temporary file beside `path`, synced, then renamed,
    /// so `path` is never a half backup; an existing `path` is refused (`ALREADY_EXISTS`)
    /// unless `overwrite`, and the store's own file always is. The default answers
    /// `UNIMPLEMENTED`; wrappers forward it.
    fn backup_to(&self, path: &Path, overwrite: bool) -> Result<BackupSummary, StoreError> {
        let _ = overwrite;
        Err(no_backup(path))
    }
}

/// The answer of a store that cannot write backups.
fn no_backup(path: &Path) -> StoreError {
    StoreError::new(
        rowkit_statemachines::Code::Unimplemented,
        format!("this store cannot write a backup to {}", path.display()),
    )
}

/// What [`Store::backup_to`] wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackupSummary {
    /// The rowkit tables in the backup.
    pub tables: usize,
    /// The size of the backup file, in bytes.
    pub bytes: u64,
}

/// What one [`Store::gc_page`] step did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcPage {
    /// Cells deleted.
    pub deleted: u64,
    /// Rows read.
    pub rows: u64,
    /// The key of the last row read, to pass as the next step's `after`; `None` once the
    /// table is done (or has no GC rule).
    pub next_after: Option<Vec<u8>>,
}
