//! The persistent store: one redb file, cell-level keys, one write transaction per row mutation;
//! with durable commits, concurrent row writes share one fsync ([`group_commit`]).
//!
//! # On-disk layout
//!
//! | redb table | key | value |
//! |---|---|---|
//! | `rowkit/meta` | `&str` (`"format"`) | `u64` layout version (1) |
//! | `rowkit/schema` | `&str` table id | `&[u8]`: postcard of `Vec<ColumnFamily>`, ascending by name |
//! | `rowkit/splits` | `&str` table id | `&[u8]`: postcard of `Vec<Vec<u8>>`, CreateTable's split points, ascending |
//! | `rowkit/dropped` | `&str` table id | `&[u8]`: postcard of `Vec<String>`, dropped families whose cells may remain, ascending |
//! | `rowkit/rows/{table}` | `&[u8]` raw row key | `(u64, u64)`: row size ([`row_size`]), cell count |
//! | `rowkit/cells/{table}` | `&[u8]` cell key (below) | `&[u8]` cell value |
//!
//! A cell key is `esc(row) esc(family) esc(qualifier) ts`, where `esc` copies a byte string with
//! `00` written as `00 FF` and appends the terminator `00 01`, and `ts` is the 8-byte big-endian
//! bitwise complement of the timestamp with its sign bit flipped. Byte-wise order of cell keys is
//! then (row, family, qualifier) ascending and timestamp descending — Bigtable's canonical order —
//! because a terminator sorts below any escaped byte (a prefix sorts first) and no component can
//! bleed into the next. Every cell of a row, family or column is one contiguous key range, so each
//! operation costs O(log n + cells touched) however wide the row.
//!
//! `rowkit/splits` was added within layout version 1: it holds an entry only for a table created
//! with split points, and a file without it (written before) reads as having none.
//! `rowkit/dropped` likewise: an entry only while a table has a dropped family whose cells are
//! not purged yet (`crate::semantics`, "Admin calls and crashes"); it changes in the same
//! transaction as the schema (the drop) and as the last cells (the purge's end).
//!
//! The rows table lets row iteration, existence and size checks run without touching cells; it is
//! kept in the same transaction as the cells, and a row's entry is removed with its last cell
//! (`spec/bigtable.md` 1: a row exists iff it has a cell).
//!
//! Reads share one read snapshot per table until the store's next commit they may see (only
//! this process writes the file; a grouped commit is seen once it is on disk), so a point read
//! is a B-tree lookup rather than a new transaction and two table opens; a batch of rows is
//! written in key order, so its inserts walk the tree once.
//!
//! [`row_size`]: rowkit_codec::model::row_size

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::num::NonZeroUsize;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use redb::{
    Database, ReadOnlyDatabase, ReadOnlyTable, ReadTransaction, ReadableDatabase, ReadableTable,
    Table, TableDefinition, WriteTransaction,
};
use rowkit_codec::model::{Cell, ColumnFamily, KeyBound, Row, RowRange, Timestamp, TimestampRange};
use rowkit_statemachines::{Code, StoreError};

use crate::BackupSummary;
use crate::redb_guard::{Forgettable, contain};
use crate::semantics::{
    check_not_dropped, check_put_family, remove_from_schema, validate_schema, with_dropped,
};
use crate::{EngineState, NewestPerColumn, RowWrite, StoreOptions, TableStorage};

mod backup;
mod group_commit;
mod undo;
mod writer;

use undo::UndoLog;
use writer::{LAZY_COMMIT_ROWS, WriteSlot, Writer};

use group_commit::{InFlight, SyncGroups};

/// Version of the on-disk layout described in the module docs; a file written with another
/// layout is refused rather than misread.
const FORMAT_VERSION: u64 = 1;

const META: TableDefinition<&str, u64> = TableDefinition::new("rowkit/meta");
const SCHEMA: TableDefinition<&str, &[u8]> = TableDefinition::new("rowkit/schema");
/// Split points of the tables created with some (absent in files written before it existed).
const SPLITS: TableDefinition<&str, &[u8]> = TableDefinition::new("rowkit/splits");
/// Dropped families whose cells may remain, per table (absent until a family is dropped).
const DROPPED: TableDefinition<&str, &[u8]> = TableDefinition::new("rowkit/dropped");
const FORMAT_KEY: &str = "format";

/// `rowkit/rows/{table}`: raw row key -> (row size, cell count).
type RowsDef<'n> = TableDefinition<'n, &'static [u8], (u64, u64)>;
/// `rowkit/cells/{table}`: encoded cell key -> value.
type CellsDef<'n> = TableDefinition<'n, &'static [u8], &'static [u8]>;

/// The redb table names of one rowkit table.
#[derive(Debug)]
struct TableNames {
    rows: String,
    cells: String,
}

impl TableNames {
    fn new(table: &str) -> TableNames {
        TableNames {
            rows: format!("rowkit/rows/{table}"),
            cells: format!("rowkit/cells/{table}"),
        }
    }

    fn rows(&self) -> RowsDef<'_> {
        TableDefinition::new(&self.rows)
    }

    fn cells(&self) -> CellsDef<'_> {
        TableDefinition::new(&self.cells)
    }

    /// Creates both tables in `txn`: opening a table in a write transaction creates it, so
    /// readers can rely on them once it commits.
    fn create_in(&self, txn: &WriteTransaction, op: &str) -> Result<(), StoreError> {
        txn.open_table(self.rows()).map_err(|e| redb_error(op, e))?;
        txn.open_table(self.cells())
            .map_err(|e| redb_error(op, e))?;
        Ok(())
    }

    /// Deletes both tables in `txn`.
    fn delete_in(&self, txn: &WriteTransaction, op: &str) -> Result<(), StoreError> {
        txn.delete_table(self.rows())
            .map_err(|e| redb_error(op, e))?;
        txn.delete_table(self.cells())
            .map_err(|e| redb_error(op, e))?;
        Ok(())
    }
}

/// One table as the store keeps it in memory: its families and redb table names, so that a
/// request neither reads and decodes `rowkit/schema` nor formats the names again.
#[derive(Debug)]
struct TableInfo {
    /// Ascending by name, as stored.
    families: Arc<[ColumnFamily]>,
    /// CreateTable's split points, ascending.
    splits: Arc<[Vec<u8>]>,
    /// Dropped families whose cells may remain, ascending (`rowkit/dropped`).
    dropped: Arc<[String]>,
    names: TableNames,
}

impl TableInfo {
    fn new(
        table: &str,
        families: Vec<ColumnFamily>,
        splits: Arc<[Vec<u8>]>,
        dropped: Arc<[String]>,
    ) -> Arc<TableInfo> {
        Arc::new(TableInfo {
            families: families.into(),
            splits,
            dropped,
            names: TableNames::new(table),
        })
    }
}

/// Opens a table added within layout version 1 in a read snapshot (`None` in a file written
/// before it existed).
fn open_optional(
    txn: &ReadTransaction,
    definition: TableDefinition<'_, &'static str, &'static [u8]>,
    op: &str,
) -> Result<Option<ReadOnlyTable<&'static str, &'static [u8]>>, StoreError> {
    match txn.open_table(definition) {
        Ok(table) => Ok(Some(table)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(redb_error(op, e)),
    }
}

/// The value of `table` in an optional table, decoded (`Ok(default)` without one).
fn optional_entry<T: Default>(
    entries: Option<&ReadOnlyTable<&'static str, &'static [u8]>>,
    table: &str,
    op: &str,
    decode: impl FnOnce(&[u8]) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    match entries {
        Some(entries) => match entries.get(table).map_err(|e| redb_error(op, e))? {
            Some(bytes) => decode(bytes.value()),
            None => Ok(T::default()),
        },
        None => Ok(T::default()),
    }
}

/// `rowkit/schema` in memory: every table's [`TableInfo`], or the error its stored schema gives
/// (a corrupt schema fails that table's requests, not the whole file).
type Catalog = BTreeMap<String, Result<Arc<TableInfo>, StoreError>>;

/// Reads `rowkit/schema` whole, in the snapshot `txn`.
fn load_catalog(txn: &ReadTransaction) -> Result<Catalog, StoreError> {
    let op = "read schema";
    let schema = txn.open_table(SCHEMA).map_err(|e| redb_error(op, e))?;
    let splits = open_optional(txn, SPLITS, op)?;
    let dropped = open_optional(txn, DROPPED, op)?;
    let mut catalog = Catalog::new();
    for entry in schema.iter().map_err(|e| redb_error(op, e))? {
        let (k, v) = entry.map_err(|e| redb_error(op, e))?;
        let table = k.value();
        let info = (|| {
            let families = decode_families(table, v.value())?;
            let table_splits =
                optional_entry(splits.as_ref(), table, op, |b| decode_splits(table, b))?;
            let table_dropped =
                optional_entry(dropped.as_ref(), table, op, |b| decode_dropped(table, b))?;
            Ok(TableInfo::new(
                table,
                families,
                table_splits,
                table_dropped.into(),
            ))
        })();
        catalog.insert(table.to_string(), info);
    }
    Ok(catalog)
}

/// The entry of `table` in `catalog` (`NOT_FOUND` if there is none).
fn lookup(catalog: &Catalog, table: &str) -> Result<Arc<TableInfo>, StoreError> {
    match catalog.get(table) {
        Some(Ok(info)) => Ok(Arc::clone(info)),
        Some(Err(e)) => Err(e.clone()),
        None => Err(table_not_found(table)),
    }
}

/// A persistent, crash-safe store in one redb file (`DESIGN.md` "Stores").
///
/// Each [`TableStorage::write_row`] is one redb write transaction, committed only when the
/// evaluator's closure succeeds, so a row mutation is atomic and, with the default durability,
/// on disk when the call returns (concurrent writers share the fsync: module `group_commit`). With
/// durable commits off, row writes share a pending transaction that commits every few dozen
/// rows or when a reader needs them, each row still atomic: a failed one is undone alone
/// (module `writer`). redb runs one writer at a time and gives readers
/// MVCC snapshots, so the store is safe to share between threads and a reader always sees whole
/// rows. Only one process may open a file at a time (a second gets `UNAVAILABLE`).
pub struct RedbStore {
    /// Forgotten, not closed, once redb panicked on the file ([`Forgettable`]).
    db: Forgettable<Db>,
    /// Where the file is (`None` in memory); for messages.
    path: Option<PathBuf>,
    /// Whether the next write transactions commit durably ([`RedbStore::set_durable_commits`]).
    durable: AtomicBool,
    /// Kept in memory only: a reopened file starts its server time again from the caller's
    /// `now`, and its request seeds from the seed.
    state: EngineState,
    /// `rowkit/schema` as of the last commit, read when the file opens: only this process can
    /// write the file. The admin operations hold the write lock across their transaction and
    /// update it before letting go; a row write holds the read lock across its own, so its
    /// table cannot be deleted (nor its tables re-created by the write) under it. Lock order:
    /// this lock, then redb's writer.
    catalog: RwLock<Catalog>,
    /// Read snapshots of the tables as of the last commit readers may see ([`Snapshots`]).
    snapshots: Mutex<Snapshots>,
    /// What redb panicked on so far ([`Damage`]): such calls fail at once from then on.
    damage: Mutex<Damage>,
    /// Durable row writes waiting for a shared fsync ([`group_commit`]).
    groups: SyncGroups,
    /// The writer lock, and the pending transaction of lazy commits ([`writer`]).
    writer: Writer,
}

/// How a write transaction commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CommitKind {
    /// `Durability::Immediate`: on disk, with every commit before it, when the commit returns.
    /// Only for [`RedbStore::sync`]'s commit (of the pending transaction, or an empty one), so
    /// that the snapshot pinned right after it, still holding the writer, is exactly what it
    /// persisted.
    Durable,
    /// `Durability::None`, acknowledged only once a later durable commit returned
    /// ([`group_commit`]): an admin call with durable commits on (a row write joins the
    /// pending transaction instead, without a commit of its own).
    Grouped,
    /// `Durability::None`, acknowledged at once: durable commits are off.
    Plain,
}

/// The parts of a damaged file that made redb panic (`redb_guard`), each with the `DATA_LOSS`
/// its calls now fail with at once, before touching redb's state again.
#[derive(Default)]
struct Damage {
    /// Set by a panic inside a write transaction: redb skipped that transaction's abort and
    /// its writer state is unknown, so every later write fails. Reads go on: they use their
    /// own read transactions, and those of undamaged tables still work.
    writes: Option<StoreError>,
    /// Tables whose pages made redb panic in a read: their reads and writes fail.
    tables: HashMap<String, StoreError>,
}

/// What one call into redb touches, for [`Damage`].
#[derive(Clone, Copy, Debug)]
enum Scope<'a> {
    /// Reads of one table, in a read snapshot.
    Read(&'a str),
    /// A write transaction on one table's rows.
    Write(&'a str),
    /// A write transaction on the schema (an admin call) or the file as a whole.
    Admin,
}

impl Damage {
    /// The error a call in `scope` fails with at once, if what it touches is damaged.
    fn check(&self, scope: Scope<'_>) -> Result<(), StoreError> {
        let table = match scope {
            Scope::Read(table) | Scope::Write(table) => self.tables.get(table),
            Scope::Admin => None,
        };
        let writes = match scope {
            Scope::Read(_) => None,
            Scope::Write(_) | Scope::Admin => self.writes.as_ref(),
        };
        match table.or(writes) {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Records that a call in `scope` panicked with `error`.
    fn record(&mut self, scope: Scope<'_>, error: &StoreError) {
        match scope {
            Scope::Read(table) => {
                self.tables
                    .entry(table.to_string())
                    .or_insert(error.clone());
            }
            // Not the table: the panic may as well be in the allocator's pages, and a read
            // of damaged table pages records it itself.
            Scope::Write(_) | Scope::Admin => {
                self.writes.get_or_insert(error.clone());
            }
        }
    }
}

/// One table's redb tables, open in a read snapshot. Beginning a read transaction and opening
/// a table (which checks its stored key and value types, allocating their names) cost more than
/// a point read of a million-row table, so reads share one snapshot until the next commit.
struct TableSnapshot {
    /// Kept to open the rows table: a point read needs only the cells. Shared while grouped
    /// commits are pending ([`SyncGroups::read_point`]).
    txn: Arc<ReadTransaction>,
    rows: OnceLock<ReadOnlyTable<&'static [u8], (u64, u64)>>,
    cells: ReadOnlyTable<&'static [u8], &'static [u8]>,
}

impl TableSnapshot {
    /// The rows table of the snapshot, opened by the first call that needs it.
    fn rows(
        &self,
        info: &TableInfo,
        table: &str,
        op: &str,
    ) -> Result<&ReadOnlyTable<&'static [u8], (u64, u64)>, StoreError> {
        if let Some(rows) = self.rows.get() {
            return Ok(rows);
        }
        let rows = open_read(&self.txn, info.names.rows(), table, op)?;
        // A racing first call may have set it: either table is the same snapshot's.
        Ok(self.rows.get_or_init(|| rows))
    }
}

/// The read snapshots reads share: each table's as of the last commit readers may see (a
/// grouped commit once it is on disk: [`SyncGroups::read_point`]), opened by the first read
/// after it. Only this process writes the file, so a snapshot stays current until one of its
/// own commits, after which [`RedbStore::commit`] drops them all (so they pin no pages the
/// writer frees). A snapshot begun before a commit but opened after it must not be kept: a
/// read installs its snapshot only if no commit happened since it looked.
#[derive(Default)]
struct Snapshots {
    /// Commits readers may see so far, counted after each (a grouped one when its sync is).
    commits: u64,
    tables: HashMap<String, Arc<TableSnapshot>>,
}

/// The open file: read-write, or read-only for callers that only read (several readers may
/// share a file, and a file they may not write to still opens).
enum Db {
    Writable(Database),
    ReadOnly(ReadOnlyDatabase),
}

impl fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.path)
            .field("durable", &self.durable.load(Ordering::Relaxed))
            .field("read_only", &matches!(*self.db, Db::ReadOnly(_)))
            .field("seed", &self.state.seed())
            .field("chunking", &self.state.chunking())
            .finish_non_exhaustive()
    }
}

impl Drop for RedbStore {
    /// Closes the file, unless redb panicked on it: closing writes the allocator state through
    /// locks the panic may have poisoned (a second panic, outside any containment: exit 101).
    /// The database is then forgotten ([`Forgettable`]); if writes still work, commits are
    /// first made durable (a sync), as closing would have made them.
    fn drop(&mut self) {
        // Not while a panic unwinds (redb's, on a damaged file, before the store recorded it).
        if self.damage().writes.is_none() && !std::thread::panicking() {
            // A panic here (a damaged file) is recorded like any other, and handled below.
            let _ = self.contained(Scope::Admin, "close", || self.commit_pending_at_close());
        }
        let damage = self.damage();
        if damage.writes.is_none() && damage.tables.is_empty() {
            return;
        }
        let writes_work = damage.writes.is_none();
        drop(damage);
        if writes_work {
            // Its failure changes nothing here: the file is damaged and says so.
            let _ = self.sync();
        }
        self.db.forget();
    }
}

/// redb's page cache of a store file when `ROWKIT_REDB_CACHE_MB` does not say otherwise:
/// redb's own default (1 GiB) let a scan of a large table grow the process with the table
/// (309 MB at 600 k rows), so "bounded memory" held on Bigtable but not on the default store.
pub const DEFAULT_CACHE_BYTES: usize = 32 << 20;

/// The page cache size: `ROWKIT_REDB_CACHE_MB` (MiB) if set to a number, else
/// [`DEFAULT_CACHE_BYTES`].
pub fn cache_bytes() -> usize {
    std::env::var("ROWKIT_REDB_CACHE_MB")
        .ok()
        .and_then(|mb| mb.trim().parse::<usize>().ok())
        .map_or(DEFAULT_CACHE_BYTES, |mb| mb.saturating_mul(1 << 20))
}

/// A database builder with the page cache bounded ([`cache_bytes`]).
fn builder() -> redb::Builder {
    let mut b = Database::builder();
    b.set_cache_size(cache_bytes());
    b
}

impl RedbStore {
    /// Opens the redb file at `path`, creating it if missing. Commits are durable
    /// (`Durability::Immediate`: checksummed and fsynced before `write_row` returns).
    ///
    /// Fails with `UNAVAILABLE` if another process has the file open, `FAILED_PRECONDITION` if
    /// it is not a redb file or holds another rowkit layout version, `DATA_LOSS` if it is
    /// damaged (its header included), `INTERNAL` if it cannot be read.
    pub fn open(path: impl AsRef<Path>) -> Result<RedbStore, StoreError> {
        let path = path.as_ref();
        open_contained(path, || {
            let db = builder()
                .create(path)
                .map_err(|e| redb_error(&format!("open {}", path.display()), e))?;
            RedbStore::init(Db::Writable(db), Some(path.to_path_buf()))
        })
    }

    /// Opens the existing redb file at `path` to read it: the file is opened read-only (one
    /// without write permission opens too) and never written, except that a file a writer left
    /// without closing it (a crash) is first recovered as any read-write open would. Writes
    /// fail with `FAILED_PRECONDITION`.
    ///
    /// Fails with `NOT_FOUND` if there is no file (none is created), `UNAVAILABLE` while a
    /// writer has it open, `FAILED_PRECONDITION` if it is not a rowkit store (an empty file
    /// included) or holds another layout version, `DATA_LOSS` if it is damaged, `INTERNAL` if
    /// it cannot be read (or needs recovery and cannot be written).
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<RedbStore, StoreError> {
        let path = path.as_ref();
        let op = format!("open {} read-only", path.display());
        match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::new(
                    Code::NotFound,
                    format!("no store at {}", path.display()),
                ));
            }
            Ok(m) if m.len() == 0 => {
                return Err(StoreError::new(
                    Code::FailedPrecondition,
                    format!("{} is empty, not a rowkit store", path.display()),
                ));
            }
            _ => {}
        }
        open_contained(path, || {
            let db = match builder().open_read_only(path) {
                // A writer stopped without closing the file (a crash, a killed server): redb
                // recovers it on a read-write open, losing nothing committed, and a read-only
                // open cannot. Recover once, then read.
                Err(redb::DatabaseError::RepairAborted) => {
                    drop(
                        builder()
                            .open(path)
                            .map_err(|e| redb_error(&format!("recover {}", path.display()), e))?,
                    );
                    builder().open_read_only(path)
                }
                other => other,
            }
            .map_err(|e| redb_error(&op, e))?;
            RedbStore::init(Db::ReadOnly(db), Some(path.to_path_buf()))
        })
    }

    /// A fresh store held in memory (redb's `InMemoryBackend`), for tests.
    pub fn in_memory() -> Result<RedbStore, StoreError> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(|e| redb_error("open in-memory database", e))?;
        RedbStore::init(Db::Writable(db), None)
    }

    /// Whether commits wait for the disk (default `true`). With `false` (`Durability::None`)
    /// commits skip the fsync and row writes commit lazily, many to a transaction (module `writer`):
    /// much faster, for tests and bulk loads. A crash may then lose the writes since the last
    /// durable commit (one a second at most while writes go on), but never tears a row or
    /// corrupts the file; closing the store makes them durable.
    pub fn with_durable_commits(self, durable: bool) -> RedbStore {
        self.set_durable_commits(durable);
        self
    }

    /// [`RedbStore::with_durable_commits`] on a store in use: write transactions that begin
    /// after the call commit with the new setting (e.g. load a file fast, then serve durably).
    pub fn set_durable_commits(&self, durable: bool) {
        self.durable.store(durable, Ordering::Relaxed);
    }

    /// Makes every commit so far durable: one empty commit that waits for the disk (redb
    /// writes out what non-durable commits left behind with the next durable one). After a
    /// load with non-durable commits, so that the first durable write does not pay for it.
    pub fn sync(&self) -> Result<(), StoreError> {
        let op = "sync";
        self.guarded(Scope::Admin, op, || {
            let txn = self.begin_sync(op)?;
            self.commit(txn, op, CommitKind::Durable).map(|_| ())
        })
    }

    /// Sets the store's seed and chunking (default: seed 0, whole rows), and restarts the
    /// count of requests that drew a seed.
    pub fn with_options(mut self, options: StoreOptions) -> RedbStore {
        self.state.set_options(options);
        self
    }

    /// Checks the layout version, and on a writable file creates the fixed tables if they
    /// are missing. A file that has them is not written to (opening changes no byte of it).
    fn init(db: Db, path: Option<PathBuf>) -> Result<RedbStore, StoreError> {
        let mut store = RedbStore {
            db: Forgettable::new(db),
            path,
            durable: AtomicBool::new(true),
            state: EngineState::default(),
            catalog: RwLock::new(Catalog::new()),
            snapshots: Mutex::new(Snapshots::default()),
            damage: Mutex::new(Damage::default()),
            groups: SyncGroups::default(),
            writer: Writer::default(),
        };
        let op = "initialise";
        let found = {
            let txn = store.begin_read(op)?;
            let version = match txn.open_table(META) {
                Ok(meta) => meta
                    .get(FORMAT_KEY)
                    .map_err(|e| redb_error(op, e))?
                    .map(|v| v.value()),
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(redb_error(op, e)),
            };
            let schema = match txn.open_table(SCHEMA) {
                Ok(_) => true,
                Err(redb::TableError::TableDoesNotExist(_)) => false,
                Err(e) => return Err(redb_error(op, e)),
            };
            version.filter(|_| schema)
        };
        match found {
            Some(FORMAT_VERSION) => {
                let catalog = load_catalog(&store.begin_read(op)?)?;
                store.catalog = RwLock::new(catalog);
                Ok(store)
            }
            Some(other) => Err(StoreError::new(
                Code::FailedPrecondition,
                format!(
                    "{}: rowkit layout version {other}, this build reads {FORMAT_VERSION}",
                    store.describe()
                ),
            )),
            None if matches!(*store.db, Db::ReadOnly(_)) => Err(StoreError::new(
                Code::FailedPrecondition,
                format!("{} is not a rowkit store", store.describe()),
            )),
            None => {
                {
                    let txn = store.begin_write(op, CommitKind::Durable)?;
                    {
                        let mut meta = open_write(&txn, META, op)?;
                        meta.insert(FORMAT_KEY, FORMAT_VERSION)
                            .map_err(|e| redb_error(op, e))?;
                        txn.open_table(SCHEMA).map_err(|e| redb_error(op, e))?;
                    }
                    txn.txn.into_inner().commit()
                }
                .map_err(|e| redb_error(op, e))?;
                Ok(store)
            }
        }
    }

    fn describe(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => "in-memory database".to_string(),
        }
    }

    /// How a write transaction commits: grouped unless durable commits are off.
    fn commit_kind(&self) -> CommitKind {
        if self.durable.load(Ordering::Relaxed) {
            CommitKind::Grouped
        } else {
            CommitKind::Plain
        }
    }

    /// The catalog, to read. A poisoned lock is still used: an admin operation changes the
    /// catalog only after its commit returned, so one that panicked (redb on a damaged file,
    /// contained and recorded in [`Damage`]) left it as of the last commit.
    fn catalog(&self) -> Result<RwLockReadGuard<'_, Catalog>, StoreError> {
        Ok(self.catalog.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// The catalog, for an admin operation to hold across its transaction (poisoning as in
    /// [`RedbStore::catalog`]).
    fn catalog_mut(&self) -> Result<RwLockWriteGuard<'_, Catalog>, StoreError> {
        Ok(self.catalog.write().unwrap_or_else(PoisonError::into_inner))
    }

    /// What the store knows of `table` (`NOT_FOUND` if it does not exist).
    fn table_info(&self, table: &str) -> Result<Arc<TableInfo>, StoreError> {
        lookup(&*self.catalog()?, table)
    }

    fn begin_read(&self, op: &str) -> Result<ReadTransaction, StoreError> {
        match &*self.db {
            Db::Writable(db) => db.begin_read(),
            Db::ReadOnly(db) => db.begin_read(),
        }
        .map_err(|e| redb_error(op, e))
    }

    /// The shared snapshots; a panic while one held the lock left them whole (each change is
    /// one insert or one clear), so a poisoned lock is still used.
    fn snapshots(&self) -> std::sync::MutexGuard<'_, Snapshots> {
        self.snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A read snapshot of `table` as of the last commit readers may see: the shared one, or a
    /// new one (kept for the next reads unless a commit came first).
    fn snapshot(
        &self,
        table: &str,
        info: &TableInfo,
        op: &str,
    ) -> Result<Arc<TableSnapshot>, StoreError> {
        self.commit_for_readers(op)?;
        let seen = {
            let snapshots = self.snapshots();
            if let Some(snapshot) = snapshots.tables.get(table) {
                return Ok(Arc::clone(snapshot));
            }
            snapshots.commits
        };
        let txn = self.groups.read_point(|| self.begin_read(op))?;
        let snapshot = Arc::new(TableSnapshot {
            cells: open_read(&txn, info.names.cells(), table, op)?,
            rows: OnceLock::new(),
            txn,
        });
        let mut snapshots = self.snapshots();
        if snapshots.commits == seen {
            snapshots
                .tables
                .insert(table.to_string(), Arc::clone(&snapshot));
        }
        Ok(snapshot)
    }

    /// Replaces `table`'s stored families and dropped families with `change(families,
    /// dropped)` in one write transaction, holding the catalog until it is updated
    /// (`NOT_FOUND` if the table is missing).
    fn change_schema(
        &self,
        table: &str,
        op: &str,
        change: impl FnOnce(Vec<ColumnFamily>, &[String]) -> Result<SchemaChange, StoreError>,
    ) -> Result<(), StoreError> {
        self.guarded(Scope::Admin, op, || {
            let mut catalog = self.catalog_mut()?;
            let info = lookup(&catalog, table)?;
            let kind = self.commit_kind();
            let txn = self.begin_write(op, kind)?;
            let (families, dropped) = {
                let mut schema = open_write(&txn, SCHEMA, op)?;
                let (families, dropped) = match schema.get(table).map_err(|e| redb_error(op, e))? {
                    Some(bytes) => change(decode_families(table, bytes.value())?, &info.dropped)?,
                    None => return Err(table_not_found(table)),
                };
                let encoded = encode_families(table, &families)?;
                schema
                    .insert(table, encoded.as_slice())
                    .map_err(|e| redb_error(op, e))?;
                (families, dropped)
            };
            if *dropped != *info.dropped {
                if dropped.is_empty() {
                    remove_entry(&txn, DROPPED, table, op)?;
                } else {
                    open_write(&txn, DROPPED, op)?
                        .insert(table, encode_dropped(table, &dropped)?.as_slice())
                        .map_err(|e| redb_error(op, e))?;
                }
            }
            self.commit_and_wait(txn, op, kind)?;
            catalog.insert(
                table.to_string(),
                Ok(TableInfo::new(
                    table,
                    families,
                    Arc::clone(&info.splits),
                    dropped.into(),
                )),
            );
            Ok(())
        })
    }

    /// Runs `call`, a call into redb in `scope`, at the store boundary: fails at once with the
    /// recorded `DATA_LOSS` if what it touches is known damaged; a panic inside redb becomes
    /// `DATA_LOSS` naming the file and is recorded ([`Damage`]), so no later call touches the
    /// state it left; a corruption redb reports as an error names the file too. Every
    /// [`TableStorage`] call that reaches redb goes through here (or [`RedbStore::contained`]).
    fn guarded<R>(
        &self,
        scope: Scope<'_>,
        op: &str,
        call: impl FnOnce() -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        self.contained(scope, op, call)?
            .map_err(|e| self.data_loss(scope, op, e))
    }

    /// `e` as the store answers it: a `DATA_LOSS` names the file and what to do. After a panic
    /// in a write, redb's `DATA_LOSS` errors (a lock that panic poisoned) are its consequences:
    /// a write answers the same error as the panic; a read says which table it could not read
    /// and why, since other reads may still work.
    fn data_loss(&self, scope: Scope<'_>, op: &str, e: StoreError) -> StoreError {
        if e.code != Code::DataLoss {
            return e;
        }
        match (&self.damage().writes, scope) {
            (Some(_), Scope::Read(table)) => damaged_file(
                StoreError::new(
                    Code::DataLoss,
                    // Not redb's words ("poisoned lock"): what the reader can act on.
                    format!(
                        "{op} on table \"{table}\" failed after an earlier write panicked in redb, which left state that new reads need unusable in this process"
                    ),
                ),
                &self.describe(),
            ),
            (Some(first), _) => first.clone(),
            (None, _) => damaged_file(e, &self.describe()),
        }
    }

    /// [`RedbStore::guarded`] for a call whose errors are not one `Result` (a batch): only the
    /// damage check and the containment.
    fn contained<R>(
        &self,
        scope: Scope<'_>,
        op: &str,
        call: impl FnOnce() -> R,
    ) -> Result<R, StoreError> {
        self.damage().check(scope)?;
        contain(call).map_err(|panic| {
            let what = match scope {
                Scope::Read(table) | Scope::Write(table) => format!("{op} on table \"{table}\""),
                Scope::Admin => op.to_string(),
            };
            let mut damage = self.damage();
            let own = || {
                damaged_file(
                    StoreError::new(Code::DataLoss, format!("{what}: redb panicked: {panic}")),
                    &self.describe(),
                )
            };
            // After a panic in a write, a later one may only be redb finding the locks that
            // panic poisoned: for writes the first cause is the one to report. A read's panic
            // on pages it read is its own (its table is damaged), unless it is a poisoned lock.
            let error = match (&damage.writes, scope) {
                (Some(_), Scope::Read(_)) if !panic.contains("Poison") => own(),
                (Some(first), _) => first.clone(),
                (None, _) => own(),
            };
            damage.record(scope, &error);
            error
        })
    }

    /// The damage record; never poisoned in practice (nothing panics while it is held), and
    /// whole if it were (each change is one insert).
    fn damage(&self) -> std::sync::MutexGuard<'_, Damage> {
        self.damage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Commits `txn`, begun with `kind`, and returns the ticket its writer waits for
    /// ([`RedbStore::wait_durable`]): its own number if grouped, else the grouped commits it
    /// could see. Then, before the write returns, drops the shared snapshots so that later
    /// reads see it (also when the commit failed: whether it reached the file is then
    /// unknown), except for a grouped commit, which readers see only once it is on disk. The
    /// caller holds the writer lock ([`writer`]).
    fn commit_txn(
        &self,
        txn: Forgettable<WriteTransaction>,
        op: &str,
        kind: CommitKind,
    ) -> Result<u64, StoreError> {
        // redb's writer is held until the caller lets it go: no other commit runs between
        // these steps.
        let ticket = match kind {
            CommitKind::Grouped => self.groups.start_grouped(|| self.begin_read(op))?,
            CommitKind::Durable | CommitKind::Plain => self.groups.seen(),
        };
        let committed = txn.into_inner().commit().map_err(|e| redb_error(op, e));
        let committed = match (committed, kind) {
            (Ok(()), CommitKind::Grouped) => return Ok(ticket),
            // What this commit persisted, as readers may see it from now on: pinned after the
            // commit, since it may carry rows of writers waiting for it (a pending transaction).
            (Ok(()), CommitKind::Durable) => self
                .begin_read(op)
                .map(|pinned| self.groups.durable(ticket, pinned)),
            (committed, _) => committed,
        };
        if committed.is_err() || kind == CommitKind::Plain {
            self.groups.committed_outside();
        }
        let mut snapshots = self.snapshots();
        snapshots.commits += 1;
        snapshots.tables.clear();
        drop(snapshots);
        committed.map(|()| ticket)
    }

    /// [`RedbStore::commit`] for an admin call, which holds the catalog until its change is on
    /// disk: commits, then waits for the ticket.
    fn commit_and_wait(
        &self,
        txn: WriteSlot<'_>,
        op: &str,
        kind: CommitKind,
    ) -> Result<(), StoreError> {
        let ticket = self.commit(txn, op, kind)?;
        self.wait_durable(ticket)
    }

    /// Counts a row write among those its group's leader waits for, with durable commits on
    /// ([`group_commit`]).
    fn durable_write_in_flight(&self) -> Option<InFlight<'_>> {
        (self.commit_kind() == CommitKind::Grouped).then(|| self.groups.in_flight())
    }

    /// Returns once the grouped commits up to `ticket` are on disk (at once if they are),
    /// syncing them if no other writer is ([`group_commit`]).
    fn wait_durable(&self, ticket: u64) -> Result<(), StoreError> {
        self.groups.wait(ticket, || self.sync())
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

/// Maps a redb error to a status: `UNAVAILABLE` for conditions that clear by themselves (the
/// file is held by another process, a writer would block), `DATA_LOSS` for a file redb found
/// corrupt (or a lock a panic on it poisoned), `INTERNAL` for everything else (`spec/bigtable.md` 13). The message names the
/// operation.
fn redb_error(op: &str, e: impl Into<redb::Error>) -> StoreError {
    let e: redb::Error = e.into();
    let code = match e {
        redb::Error::DatabaseAlreadyOpen | redb::Error::WouldBlock => Code::Unavailable,
        // A lock poisoned by a panic inside redb (contained, see `redb_guard`): the state it
        // guards is as damaged as the file that caused the panic.
        redb::Error::Corrupted(_) | redb::Error::LockPoisoned(_) => Code::DataLoss,
        _ => Code::Internal,
    };
    StoreError::new(code, format!("redb store: {op}: {e}"))
}

/// What to do about a damaged file, the end of every `DATA_LOSS` the store answers.
const DAMAGED_ADVICE: &str = "restore the file from a backup (made with `rowkit admin backup`); `rowkit check` shows what still reads";

/// `e` as the store answers it: a `DATA_LOSS` names the damaged `file` and what to do (once);
/// other errors are unchanged.
fn damaged_file(mut e: StoreError, file: &str) -> StoreError {
    if e.code == Code::DataLoss && !e.message.ends_with(DAMAGED_ADVICE) {
        e.message = format!("{file} is damaged: {}; {DAMAGED_ADVICE}", e.message);
    }
    e
}

/// Runs `open`, which opens the file at `path`, containing a panic inside redb (a damaged
/// header or schema) as `DATA_LOSS` naming the file. Nothing of the failed open is kept.
fn open_contained(
    path: &Path,
    open: impl FnOnce() -> Result<RedbStore, StoreError>,
) -> Result<RedbStore, StoreError> {
    let file = path.display().to_string();
    let opened = contain(open)
        .map_err(|panic| StoreError::new(Code::DataLoss, format!("open: redb panicked: {panic}")));
    opened
        .and_then(|r| r)
        .map_err(|e| damaged_file(damaged_header(path, e), &file))
}

/// The 9 bytes every redb file starts with (redb's `MAGICNUMBER`, part of its file format).
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// A file redb would not open: one that starts almost with redb's magic number is a redb file
/// with a damaged header (`DATA_LOSS`), one that does not is not a redb file at all
/// (`FAILED_PRECONDITION`). redb says "magic number mismatch" (`INTERNAL`) for both.
fn damaged_header(path: &Path, e: StoreError) -> StoreError {
    if e.code != Code::Internal {
        return e;
    }
    let mut start = Vec::with_capacity(REDB_MAGIC.len());
    let read = std::fs::File::open(path).and_then(|f| {
        use std::io::Read;
        f.take(REDB_MAGIC.len() as u64).read_to_end(&mut start)
    });
    if read.is_err() || start == REDB_MAGIC {
        return e;
    }
    // One flipped byte, or a few (a missing byte counts as one): still recognisably redb's.
    let same = start
        .iter()
        .zip(REDB_MAGIC)
        .filter(|(a, b)| **a == *b)
        .count();
    let differing = REDB_MAGIC.len() - same;
    if differing <= 3 {
        StoreError::new(
            Code::DataLoss,
            format!("{differing} byte(s) of the magic number that starts its redb header differ"),
        )
    } else {
        StoreError::new(
            Code::FailedPrecondition,
            format!("{} is not a redb file, not a rowkit store", path.display()),
        )
    }
}

fn table_not_found(table: &str) -> StoreError {
    StoreError::new(Code::NotFound, format!("table \"{table}\" not found"))
}

fn corrupt(table: &str, what: impl fmt::Display) -> StoreError {
    StoreError::new(
        Code::Internal,
        format!("redb store: table \"{table}\": corrupt data: {what}"),
    )
}

// ---------------------------------------------------------------------------------------------
// Key encoding

/// Appends `bytes` as one order-preserving component: `00` escaped as `00 FF`, then `00 01`.
pub(crate) fn push_component(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0x00, 0x01]);
}

/// Splits one component off the front of `input`: the decoded bytes and the rest. `None` if the
/// input is not a well-formed component.
pub(crate) fn split_component(input: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    // Copied a run between escapes at a time (usually the whole component at once): every cell
    // of a row read passes here twice.
    let mut out = Vec::new();
    let mut rest = input;
    loop {
        let zero = rest.iter().position(|&b| b == 0)?;
        out.extend_from_slice(&rest[..zero]);
        match rest.get(zero + 1) {
            Some(0xff) => out.push(0),
            Some(0x01) => return Some((out, &rest[zero + 2..])),
            _ => return None,
        }
        rest = &rest[zero + 2..];
    }
}

/// A timestamp as 8 bytes that sort in descending timestamp order.
pub(crate) fn encode_ts(ts: Timestamp) -> [u8; 8] {
    (!((ts.0 as u64) ^ (1 << 63))).to_be_bytes()
}

/// Inverse of [`encode_ts`].
pub(crate) fn decode_ts(bytes: [u8; 8]) -> Timestamp {
    Timestamp(((!u64::from_be_bytes(bytes)) ^ (1 << 63)) as i64)
}

/// The full key of one cell.
#[cfg(test)]
pub(crate) fn cell_key(row: &[u8], family: &str, qualifier: &[u8], ts: Timestamp) -> Vec<u8> {
    let mut key = Vec::with_capacity(row.len() + family.len() + qualifier.len() + 14);
    push_component(&mut key, row);
    push_component(&mut key, family.as_bytes());
    push_component(&mut key, qualifier);
    key.extend_from_slice(&encode_ts(ts));
    key
}

/// Splits the part of a cell key after the row component into family, qualifier and timestamp.
pub(crate) fn decode_cell_suffix(suffix: &[u8]) -> Result<(String, Vec<u8>, Timestamp), String> {
    let (family, rest) = split_component(suffix).ok_or("bad family component")?;
    let family = String::from_utf8(family).map_err(|_| "family is not UTF-8")?;
    let (qualifier, rest) = split_component(rest).ok_or("bad qualifier component")?;
    let ts: [u8; 8] = rest
        .try_into()
        .map_err(|_| format!("timestamp of {} bytes", rest.len()))?;
    Ok((family, qualifier, decode_ts(ts)))
}

/// The exclusive upper end of the key range of everything starting with `prefix`, a sequence of
/// whole components: raising the final terminator `00 01` to `00 02` bounds exactly the keys
/// with that prefix.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

/// The cells of one row in canonical order, read from a snapshot or a write transaction; with
/// `per_column`, only the newest that many of each column ([`TableStorage::read_row`]): an
/// older cell of a column is recognised by its key bytes and neither decoded nor copied (the
/// column's newest cell, always kept, was decoded: its key is well formed).
fn read_cells<T: ReadableTable<&'static [u8], &'static [u8]>>(
    cells: &T,
    table: &str,
    prefix: &[u8],
    per_column: Option<NonZeroUsize>,
) -> Result<Vec<Cell>, StoreError> {
    let op = "read cells";
    let end = prefix_end(prefix);
    let range = cells
        .range::<&[u8]>(prefix..end.as_slice())
        .map_err(|e| redb_error(op, e))?;
    let mut out = Vec::new();
    let mut newest = per_column.map(|n| NewestPerColumn::new(n.get()));
    // The previous cell's key without its timestamp: its column, as stored.
    let mut previous: Option<Vec<u8>> = None;
    for entry in range {
        let (k, v) = entry.map_err(|e| redb_error(op, e))?;
        let key = k.value();
        if let Some(newest) = newest.as_mut() {
            let column = &key[..key.len().saturating_sub(8)];
            let same = previous.as_deref() == Some(column);
            if !same {
                let previous = previous.get_or_insert_with(Vec::new);
                previous.clear();
                previous.extend_from_slice(column);
            }
            if !newest.keeps(same) {
                continue;
            }
        }
        let suffix = key
            .get(prefix.len()..)
            .ok_or_else(|| corrupt(table, "short key"))?;
        let (family, qualifier, timestamp) =
            decode_cell_suffix(suffix).map_err(|e| corrupt(table, e))?;
        out.push(Cell {
            family,
            qualifier,
            timestamp,
            value: v.value().to_vec(),
            labels: Vec::new(),
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Row ranges

fn to_bound(b: KeyBound) -> Bound<Vec<u8>> {
    match b {
        KeyBound::Unbounded => Bound::Unbounded,
        KeyBound::Closed(k) => Bound::Included(k),
        KeyBound::Open(k) => Bound::Excluded(k),
    }
}

fn as_slice_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
    }
}

/// The key bounds of `range` restricted to keys strictly after `after` in scan direction.
fn scan_bounds(
    range: &RowRange,
    after: Option<&[u8]>,
    reversed: bool,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let mut lower = to_bound(range.start.clone());
    let mut upper = to_bound(range.end.normalized_end());
    if let Some(after) = after {
        // Tighten the bound on the side the scan has already passed; at an equal key the
        // exclusive bound is the tighter one.
        let passed = Bound::Excluded(after.to_vec());
        if reversed {
            let tighter = match &upper {
                Bound::Unbounded => true,
                Bound::Included(k) | Bound::Excluded(k) => after <= k.as_slice(),
            };
            if tighter {
                upper = passed;
            }
        } else {
            let tighter = match &lower {
                Bound::Unbounded => true,
                Bound::Included(k) | Bound::Excluded(k) => after >= k.as_slice(),
            };
            if tighter {
                lower = passed;
            }
        }
    }
    (lower, upper)
}

// ---------------------------------------------------------------------------------------------
// Schema

/// Encodes one of `table`'s stored values (`what` it is, for the message).
fn encode<T: serde::Serialize + ?Sized>(
    table: &str,
    what: &str,
    value: &T,
) -> Result<Vec<u8>, StoreError> {
    postcard::to_allocvec(value).map_err(|e| {
        StoreError::new(
            Code::Internal,
            format!("redb store: table \"{table}\": encode {what}: {e}"),
        )
    })
}

/// Decodes one of `table`'s stored values (`what` it is: a failure is a corrupt file).
fn decode<T: serde::de::DeserializeOwned>(
    table: &str,
    what: &str,
    bytes: &[u8],
) -> Result<T, StoreError> {
    postcard::from_bytes(bytes).map_err(|e| corrupt(table, format!("{what}: {e}")))
}

fn encode_families(table: &str, families: &[ColumnFamily]) -> Result<Vec<u8>, StoreError> {
    encode(table, "schema", families)
}

fn decode_families(table: &str, bytes: &[u8]) -> Result<Vec<ColumnFamily>, StoreError> {
    decode(table, "schema", bytes)
}

fn encode_splits(table: &str, splits: &[Vec<u8>]) -> Result<Vec<u8>, StoreError> {
    encode(table, "split points", splits)
}

fn decode_splits(table: &str, bytes: &[u8]) -> Result<Arc<[Vec<u8>]>, StoreError> {
    decode::<Vec<Vec<u8>>>(table, "split points", bytes).map(Arc::from)
}

/// Families and dropped families as [`RedbStore::change_schema`] stores them.
type SchemaChange = (Vec<ColumnFamily>, Vec<String>);

fn encode_dropped(table: &str, dropped: &[String]) -> Result<Vec<u8>, StoreError> {
    encode(table, "dropped families", dropped)
}

fn decode_dropped(table: &str, bytes: &[u8]) -> Result<Vec<String>, StoreError> {
    decode(table, "dropped families", bytes)
}

/// Removes `table`'s entry from a table added within layout version 1, if the file has it.
fn remove_entry(
    txn: &WriteTransaction,
    definition: TableDefinition<'_, &'static str, &'static [u8]>,
    table: &str,
    op: &str,
) -> Result<(), StoreError> {
    match txn.open_table(definition) {
        Ok(entries) => {
            Forgettable::new(entries)
                .remove(table)
                .map_err(|e| redb_error(op, e))?;
            Ok(())
        }
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(()),
        Err(e) => Err(redb_error(op, e)),
    }
}

/// Adds or replaces `family` in `families`, kept ascending by name.
fn upsert_family(families: &mut Vec<ColumnFamily>, family: &ColumnFamily) {
    match families.binary_search_by(|f| f.name.as_str().cmp(family.name.as_str())) {
        Ok(i) => families[i] = family.clone(),
        Err(i) => families.insert(i, family.clone()),
    }
}

/// Opens one of a rowkit table's redb tables in a snapshot: one deleted after the catalog was
/// read is `NOT_FOUND`, as if the request had come after the deletion.
fn open_read<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &ReadTransaction,
    definition: TableDefinition<'_, K, V>,
    table: &str,
    op: &str,
) -> Result<ReadOnlyTable<K, V>, StoreError> {
    txn.open_table(definition).map_err(|e| match e {
        redb::TableError::TableDoesNotExist(_) => table_not_found(table),
        e => redb_error(op, e),
    })
}

/// Opens (creating) a redb table in a write transaction, forgotten rather than dropped if redb
/// panics while it is open ([`Forgettable`]).
fn open_write<'t, K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &'t WriteTransaction,
    definition: TableDefinition<'_, K, V>,
    op: &str,
) -> Result<Forgettable<Table<'t, K, V>>, StoreError> {
    txn.open_table(definition)
        .map(Forgettable::new)
        .map_err(|e| redb_error(op, e))
}

/// The first row of `range` strictly after `after` in scan direction: its key and size, from
/// the rows table.
fn first_row(
    rows: &ReadOnlyTable<&'static [u8], (u64, u64)>,
    range: &RowRange,
    after: Option<&[u8]>,
    reversed: bool,
    op: &str,
) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
    let (lower, upper) = scan_bounds(range, after, reversed);
    let mut it = rows
        .range::<&[u8]>((as_slice_bound(&lower), as_slice_bound(&upper)))
        .map_err(|e| redb_error(op, e))?;
    let entry = if reversed { it.next_back() } else { it.next() };
    entry
        .map(|entry| {
            let (k, v) = entry.map_err(|e| redb_error(op, e))?;
            Ok((k.value().to_vec(), v.value().0))
        })
        .transpose()
}

/// The key of a range that holds exactly one row key (`[k, k]`, `k` not empty: an empty end
/// key means "no end").
fn single_key(range: &RowRange) -> Option<&[u8]> {
    match (&range.start, &range.end) {
        (KeyBound::Closed(s), KeyBound::Closed(e)) if s == e && !s.is_empty() => Some(s),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// TableStorage

impl TableStorage for RedbStore {
    type Row<'t> = RedbRow<'t>;

    fn backup_to(&self, path: &Path, overwrite: bool) -> Result<BackupSummary, StoreError> {
        self.write_backup(path, overwrite)
    }

    fn create_table_with_splits(
        &self,
        table: &str,
        families: &[ColumnFamily],
        splits: &[Vec<u8>],
    ) -> Result<(), StoreError> {
        // The evaluator's own check, so that every store accepts exactly the same schemas.
        validate_schema(table, families)?;
        let mut sorted = families.to_vec();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        let encoded = encode_families(table, &sorted)?;
        let encoded_splits = encode_splits(table, splits)?;

        let op = "create_table";
        self.guarded(Scope::Admin, op, || {
            let mut catalog = self.catalog_mut()?;
            let kind = self.commit_kind();
            let txn = self.begin_write(op, kind)?;
            {
                let mut schema = open_write(&txn, SCHEMA, op)?;
                if schema.get(table).map_err(|e| redb_error(op, e))?.is_some() {
                    return Err(StoreError::new(
                        Code::AlreadyExists,
                        format!("table \"{table}\" already exists"),
                    ));
                }
                schema
                    .insert(table, encoded.as_slice())
                    .map_err(|e| redb_error(op, e))?;
                TableNames::new(table).create_in(&txn, op)?;
            }
            // Only tables with split points get an entry (and a file the table itself): a
            // file without them stays as an older build wrote it.
            if !splits.is_empty() {
                open_write(&txn, SPLITS, op)?
                    .insert(table, encoded_splits.as_slice())
                    .map_err(|e| redb_error(op, e))?;
            }
            self.commit_and_wait(txn, op, kind)?;
            catalog.insert(
                table.to_string(),
                Ok(TableInfo::new(table, sorted, splits.into(), Arc::from([]))),
            );
            Ok(())
        })
    }

    fn splits(&self, table: &str) -> Result<Arc<[Vec<u8>]>, StoreError> {
        Ok(Arc::clone(&self.table_info(table)?.splits))
    }

    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        let op = "delete_table";
        self.guarded(Scope::Admin, op, || {
            let mut catalog = self.catalog_mut()?;
            let kind = self.commit_kind();
            let txn = self.begin_write(op, kind)?;
            {
                let mut schema = open_write(&txn, SCHEMA, op)?;
                if schema
                    .remove(table)
                    .map_err(|e| redb_error(op, e))?
                    .is_none()
                {
                    return Err(table_not_found(table));
                }
            }
            // The table may be re-created without split points: forget its old ones, and its
            // dropped families, whose cells go with the table.
            remove_entry(&txn, SPLITS, table, op)?;
            remove_entry(&txn, DROPPED, table, op)?;
            TableNames::new(table).delete_in(&txn, op)?;
            self.commit_and_wait(txn, op, kind)?;
            catalog.remove(table);
            Ok(())
        })
    }

    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.catalog()?.keys().cloned().collect())
    }

    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        Ok(self.table_info(table)?.families.to_vec())
    }

    fn schema(&self, table: &str) -> Result<Arc<[ColumnFamily]>, StoreError> {
        Ok(Arc::clone(&self.table_info(table)?.families))
    }

    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        self.change_schema(table, "set_family", |mut families, dropped| {
            check_not_dropped(table, dropped, &family.name)?;
            upsert_family(&mut families, family);
            validate_schema(table, &families)?;
            Ok((families, dropped.to_vec()))
        })
    }

    fn remove_family(&self, table: &str, family: &str) -> Result<(), StoreError> {
        self.change_schema(table, "remove_family", |families, dropped| {
            Ok((
                remove_from_schema(table, &families, family)?,
                with_dropped(dropped, family),
            ))
        })
    }

    fn dropped_families(&self, table: &str) -> Result<Arc<[String]>, StoreError> {
        Ok(Arc::clone(&self.table_info(table)?.dropped))
    }

    fn forget_dropped(&self, table: &str, family: &str) -> Result<(), StoreError> {
        if !self.table_info(table)?.dropped.iter().any(|d| d == family) {
            return Ok(());
        }
        self.change_schema(table, "forget_dropped", |families, dropped| {
            let kept = dropped.iter().filter(|d| *d != family).cloned().collect();
            Ok((families, kept))
        })
    }

    fn next_row(
        &self,
        table: &str,
        range: &RowRange,
        after: Option<&[u8]>,
        reversed: bool,
    ) -> Result<Option<Row>, StoreError> {
        let op = "next_row";
        self.guarded(Scope::Read(table), op, || {
            let info = self.table_info(table)?;
            // One snapshot for the row lookup and its cells: the row is read whole.
            let snapshot = self.snapshot(table, &info, op)?;
            let point = single_key(range).filter(|_| after.is_none());
            let key = match point {
                // A row exists iff it has a cell: a point read goes straight to the cells.
                Some(key) => key.to_vec(),
                None => {
                    match first_row(snapshot.rows(&info, table, op)?, range, after, reversed, op)? {
                        Some((key, _size)) => key,
                        None => return Ok(None),
                    }
                }
            };
            let mut prefix = Vec::with_capacity(key.len() + 2);
            push_component(&mut prefix, &key);
            let cells = read_cells(&snapshot.cells, table, &prefix, None)?;
            if cells.is_empty() {
                return match point {
                    Some(_) => Ok(None),
                    None => Err(corrupt(table, "row entry without cells")),
                };
            }
            Ok(Some(Row { key, cells }))
        })
    }

    /// Straight to the row's cells, with the limit applied as they are read.
    fn read_row(
        &self,
        table: &str,
        key: &[u8],
        cells_per_column: Option<usize>,
    ) -> Result<Option<Row>, StoreError> {
        let op = "read_row";
        self.guarded(Scope::Read(table), op, || {
            let info = self.table_info(table)?;
            let snapshot = self.snapshot(table, &info, op)?;
            let mut prefix = Vec::with_capacity(key.len() + 2);
            push_component(&mut prefix, key);
            // A limit of 0 keeps no cell of a row that exists: read whole, answered empty.
            let limit = cells_per_column.map(NonZeroUsize::new);
            let mut cells = read_cells(&snapshot.cells, table, &prefix, limit.flatten())?;
            if cells.is_empty() {
                return Ok(None);
            }
            if limit == Some(None) {
                cells.clear();
            }
            Ok(Some(Row {
                key: key.to_vec(),
                cells,
            }))
        })
    }

    fn next_row_size(
        &self,
        table: &str,
        range: &RowRange,
        after: Option<&[u8]>,
    ) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        let op = "next_row_size";
        self.guarded(Scope::Read(table), op, || {
            let info = self.table_info(table)?;
            let snapshot = self.snapshot(table, &info, op)?;
            first_row(snapshot.rows(&info, table, op)?, range, after, false, op)
        })
    }

    fn write_row<T>(
        &self,
        table: &str,
        key: &[u8],
        f: impl FnOnce(&mut RedbRow<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let op = "write_row";
        let _in_flight = self.durable_write_in_flight();
        let (value, ticket) = self.guarded(Scope::Write(table), op, || {
            self.in_write(table, op, false, |rows, row| {
                write_in(rows, row, key, f, op).map(|(value, wrote)| (value, usize::from(wrote)))
            })
        })?;
        self.wait_durable(ticket)?;
        Ok(value)
    }

    /// The whole batch in one write transaction (one commit, one fsync at most, instead of one
    /// per row). A row whose closure fails has its own writes undone inside the transaction
    /// (module `undo`) and answers its error; the others commit, as if each were its own
    /// transaction.
    fn write_rows<T>(
        &self,
        table: &str,
        keys: &[&[u8]],
        mut f: impl FnMut(usize, &mut RedbRow<'_>) -> Result<T, StoreError>,
    ) -> Vec<Result<T, StoreError>> {
        let op = "write_rows";
        let _in_flight = self.durable_write_in_flight();
        // Rows are written in key order: consecutive B-tree inserts then land in the same or
        // neighbouring pages (a 10 000-row batch of scattered keys spends most of its time
        // descending the tree). Nothing can observe the order inside one transaction; the
        // stable sort keeps entries of one row in index order.
        // With the ticket the batch's commit waits for.
        let results: Result<(Vec<Result<T, StoreError>>, u64), StoreError> =
            self.contained(Scope::Write(table), op, || {
                let mut order: Vec<usize> = (0..keys.len()).collect();
                order.sort_by_key(|&i| keys[i]);
                let batched = self.in_write(table, op, true, |rows, row| {
                    let mut values = Vec::with_capacity(keys.len());
                    let mut written = 0;
                    for &i in &order {
                        match write_in(rows, row, keys[i], |row| f(i, row), op) {
                            Ok((value, wrote)) => {
                                written += usize::from(wrote);
                                values.push((i, Ok(value)));
                            }
                            Err(failed) if failed.undone => values.push((i, Err(failed.error))),
                            Err(failed) => return Err(failed),
                        }
                    }
                    Ok((values, written))
                });
                match batched {
                    // Back in index order.
                    Ok((mut values, ticket)) => {
                        values.sort_unstable_by_key(|&(i, _)| i);
                        (values.into_iter().map(|(_, value)| value).collect(), ticket)
                    }
                    Err(e) => (keys.iter().map(|_| Err(e.clone())).collect(), 0),
                }
            });
        match results {
            Ok((results, ticket)) => {
                // Not on disk: no row of the batch is acknowledged.
                let unsynced = self.wait_durable(ticket).err();
                results
                    .into_iter()
                    .map(|r| match (r, &unsynced) {
                        (Ok(_), Some(e)) => Err(e.clone()),
                        (r, _) => r.map_err(|e| self.data_loss(Scope::Write(table), op, e)),
                    })
                    .collect()
            }
            Err(damaged) => keys.iter().map(|_| Err(damaged.clone())).collect(),
        }
    }

    fn state(&self) -> &EngineState {
        &self.state
    }
}

/// The rows table of a rowkit table, open in a write transaction.
type RowsTable<'t> = Table<'t, &'static [u8], (u64, u64)>;

impl RedbStore {
    /// Runs `body` in one write transaction on `table`'s redb tables (`NOT_FOUND` if the table
    /// does not exist), each opened once for the whole transaction; `body` returns its value
    /// and how many rows it wrote. The transaction is the pending one ([`writer`]), or a new
    /// one that aborts if nothing wrote into it (a read, or a predicate that chose no
    /// mutation: no commit and no fsync). With durable commits off it commits once it holds
    /// enough rows; with them on, its rows wait for their group's durable commit
    /// ([`group_commit`]). `batch` says the rows share the transaction: each logs what it changes,
    /// so that a failed one is undone alone ([`undo`]). Returns `body`'s value with the ticket
    /// to pass to [`RedbStore::wait_durable`] before answering.
    fn in_write<R>(
        &self,
        table: &str,
        op: &str,
        batch: bool,
        body: impl for<'t> FnOnce(&mut RowsTable<'t>, &mut RedbRow<'t>) -> Result<(R, usize), RowFailed>,
    ) -> Result<(R, u64), StoreError> {
        // Held until the commit: the table cannot be deleted under the transaction.
        let catalog = self.catalog()?;
        let info = lookup(&catalog, table)?;
        let kind = self.commit_kind();
        let mut slot = self.resume_write(op, kind)?;
        // Undo is needed only where other rows' writes share the transaction.
        let undoable = batch || slot.rows > 0;
        let result = (|| {
            let mut rows = open_write(&slot, info.names.rows(), op).map_err(RowFailed::broken)?;
            let cells = open_write(&slot, info.names.cells(), op).map_err(RowFailed::broken)?;
            let mut row = RedbRow::new(table, Arc::clone(&info.families), cells, undoable);
            body(&mut rows, &mut row)
        })();
        let acknowledged = kind == CommitKind::Plain;
        let ticket = match &result {
            Ok((_, written)) => {
                slot.rows += written;
                if slot.rows == 0 {
                    self.abort(slot, op, None)?
                } else if acknowledged && slot.rows >= LAZY_COMMIT_ROWS {
                    self.commit(slot, op, kind)?
                } else {
                    // A grouped write takes its number now, while it holds the writer: its
                    // group's durable commit is the first to begin after this.
                    if *written > 0
                        && !acknowledged
                        && let Err(e) = self.groups.start_grouped(|| self.begin_read(op))
                    {
                        self.abort(slot, op, Some(&e))?;
                        return Err(e);
                    }
                    self.keep_pending(slot, acknowledged)
                }
            }
            // The row left the transaction as it was: it goes on (or ends) without it.
            Err(failed) if failed.undone && slot.rows > 0 => self.keep_pending(slot, acknowledged),
            // Partial writes of the row, or nothing else in the transaction: abort.
            Err(failed) => self.abort(slot, op, Some(&failed.error))?,
        };
        drop(catalog);
        result
            .map(|(value, _)| (value, ticket))
            .map_err(|failed| failed.error)
    }
}

/// A row write that failed, and whether its transaction is still usable.
struct RowFailed {
    error: StoreError,
    /// The row's writes were undone, or it wrote nothing: the transaction is as before it.
    undone: bool,
}

impl RowFailed {
    /// A failure before the row wrote anything.
    fn clean(error: StoreError) -> RowFailed {
        RowFailed {
            error,
            undone: true,
        }
    }

    /// A failure that leaves the transaction unusable.
    fn broken(error: StoreError) -> RowFailed {
        RowFailed {
            error,
            undone: false,
        }
    }
}

/// Runs `f` on row `key` through `row` (the transaction's cells) and stores the row's new size
/// and cell count in `rows`; returns `f`'s value and whether anything was written. On failure
/// the row's writes are undone if `row` logs them, else the transaction must be aborted.
fn write_in<'t, T>(
    rows: &mut RowsTable<'t>,
    row: &mut RedbRow<'t>,
    key: &[u8],
    f: impl FnOnce(&mut RedbRow<'t>) -> Result<T, StoreError>,
    op: &str,
) -> Result<(T, bool), RowFailed> {
    let (size, count) = rows
        .get(key)
        .map_err(|e| RowFailed::clean(redb_error(op, e)))?
        .map_or((0, 0), |v| v.value());
    row.start(key, size, count).map_err(RowFailed::clean)?;
    let written = f(row).and_then(|value| {
        if row.dirty {
            if row.count == 0 {
                rows.remove(key).map_err(|e| redb_error(op, e))?;
            } else {
                rows.insert(key, (row.key_len + row.cell_bytes, row.count))
                    .map_err(|e| redb_error(op, e))?;
            }
        }
        Ok(value)
    });
    match written {
        Ok(value) => Ok((value, row.dirty)),
        Err(error) => Err(row.roll_back(error)),
    }
}

// ---------------------------------------------------------------------------------------------
// RowWrite

/// One row inside a redb write transaction: the handle [`TableStorage::write_row`] gives its
/// closure. Writes go straight to the transaction's cells table; the row's size and cell count
/// are tracked here and stored when the transaction commits. One handle serves every row of a
/// batch in turn ([`RedbRow::start`]), so the cells table is opened once per transaction.
pub struct RedbRow<'t> {
    table: &'t str,
    /// The table's families as of the transaction: the only ones a cell may be put in.
    families: Arc<[ColumnFamily]>,
    cells: Forgettable<redb::Table<'t, &'static [u8], &'static [u8]>>,
    key_len: u64,
    /// The encoded row key: the common prefix of all the row's cell keys.
    prefix: Vec<u8>,
    /// The key of the cell [`RowWrite::put`] writes, kept to reuse its allocation.
    key: Vec<u8>,
    count: u64,
    /// Σ over cells of `len(family) + len(qualifier) + 8 + len(value)`.
    cell_bytes: u64,
    dirty: bool,
    /// Whether the row shares its transaction with rows already written: then every change is
    /// logged in `undo`, to be put back if the row fails ([`RedbRow::roll_back`]).
    undoable: bool,
    undo: UndoLog,
}

impl fmt::Debug for RedbRow<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedbRow")
            .field("table", &self.table)
            .field("count", &self.count)
            .field("cell_bytes", &self.cell_bytes)
            .finish_non_exhaustive()
    }
}

fn cell_size(family: usize, qualifier: usize, value: usize) -> u64 {
    (family + qualifier + 8 + value) as u64
}

impl<'t> RedbRow<'t> {
    /// A handle on the cells of `table` in a write transaction, pointing at no row yet.
    fn new(
        table: &'t str,
        families: Arc<[ColumnFamily]>,
        cells: Forgettable<redb::Table<'t, &'static [u8], &'static [u8]>>,
        undoable: bool,
    ) -> RedbRow<'t> {
        RedbRow {
            table,
            families,
            cells,
            key_len: 0,
            prefix: Vec::new(),
            key: Vec::new(),
            count: 0,
            cell_bytes: 0,
            dirty: false,
            undoable,
            undo: UndoLog::default(),
        }
    }

    /// Points the handle at row `key`, whose rows-table entry says `size` and `count`.
    fn start(&mut self, key: &[u8], size: u64, count: u64) -> Result<(), StoreError> {
        self.cell_bytes = if count == 0 {
            0
        } else {
            size.checked_sub(key.len() as u64)
                .ok_or_else(|| corrupt(self.table, "row size below key length"))?
        };
        self.key_len = key.len() as u64;
        self.count = count;
        self.dirty = false;
        self.undo.clear();
        self.prefix.clear();
        push_component(&mut self.prefix, key);
        Ok(())
    }

    /// The failure of the row's write with `error`: its changes undone if they were logged
    /// (the transaction goes on without the row), else left for the caller to abort.
    fn roll_back(&mut self, error: StoreError) -> RowFailed {
        if !self.undoable {
            return RowFailed::broken(error);
        }
        match self.undo.undo(&mut self.cells) {
            Ok(()) => RowFailed::clean(error),
            Err(e) => RowFailed::broken(redb_error("undo a failed row", e)),
        }
    }
}

impl RedbRow<'_> {
    fn column_prefix(&self, family: &str, qualifier: &[u8]) -> Vec<u8> {
        let mut p = self.family_prefix(family);
        push_component(&mut p, qualifier);
        p
    }

    fn family_prefix(&self, family: &str) -> Vec<u8> {
        let mut p = Vec::with_capacity(self.prefix.len() + family.len() + 2);
        p.extend_from_slice(&self.prefix);
        push_component(&mut p, family.as_bytes());
        p
    }

    /// Removes the cells with keys in `[lower, upper)` (and timestamps in `range`, if given),
    /// keeping the size and count in step.
    fn remove_between(
        &mut self,
        lower: &[u8],
        upper: Bound<&[u8]>,
        range: Option<TimestampRange>,
    ) -> Result<(), StoreError> {
        let op = "delete cells";
        let prefix_len = self.prefix.len();
        let mut removed = 0u64;
        let mut removed_bytes = 0u64;
        let mut bad: Option<String> = None;
        let mut undo = self.undoable.then_some(&mut self.undo);
        let kept = self
            .cells
            .retain_in::<&[u8], _>((Bound::Included(lower), upper), |k, v| {
                let decoded = k.get(prefix_len..).map(decode_cell_suffix);
                match decoded {
                    Some(Ok((family, qualifier, ts))) => {
                        if range.is_some_and(|r| !r.contains(ts)) {
                            return true;
                        }
                        removed += 1;
                        removed_bytes += cell_size(family.len(), qualifier.len(), v.len());
                        if let Some(undo) = &mut undo {
                            undo.replaced(k, v);
                        }
                        false
                    }
                    // Keep what cannot be decoded; the error below aborts the transaction.
                    Some(Err(e)) => {
                        bad.get_or_insert(e);
                        true
                    }
                    None => {
                        bad.get_or_insert_with(|| "short key".to_string());
                        true
                    }
                }
            });
        // Set before any error: what was removed must be undone or aborted.
        if removed > 0 {
            self.dirty = true;
        }
        kept.map_err(|e| redb_error(op, e))?;
        if let Some(what) = bad {
            return Err(corrupt(self.table, what));
        }
        self.count = self
            .count
            .checked_sub(removed)
            .ok_or_else(|| corrupt(self.table, "cell count below the number of cells deleted"))?;
        self.cell_bytes = self
            .cell_bytes
            .checked_sub(removed_bytes)
            .ok_or_else(|| corrupt(self.table, "row size below the size of cells deleted"))?;
        Ok(())
    }
}

impl RowWrite for RedbRow<'_> {
    fn cells(&mut self) -> Result<Vec<Cell>, StoreError> {
        read_cells(&*self.cells, self.table, &self.prefix, None)
    }

    fn latest(
        &mut self,
        family: &str,
        qualifier: &[u8],
    ) -> Result<Option<(Timestamp, Vec<u8>)>, StoreError> {
        let op = "read latest cell";
        let prefix = self.column_prefix(family, qualifier);
        let end = prefix_end(&prefix);
        // Timestamps sort descending, so the column's first key is its newest cell.
        let mut range = self
            .cells
            .range::<&[u8]>(prefix.as_slice()..end.as_slice())
            .map_err(|e| redb_error(op, e))?;
        let Some(entry) = range.next() else {
            return Ok(None);
        };
        let (k, v) = entry.map_err(|e| redb_error(op, e))?;
        let ts: [u8; 8] = k
            .value()
            .get(prefix.len()..)
            .and_then(|t| t.try_into().ok())
            .ok_or_else(|| corrupt(self.table, "bad timestamp in cell key"))?;
        Ok(Some((decode_ts(ts), v.value().to_vec())))
    }

    fn put(
        &mut self,
        family: &str,
        qualifier: &[u8],
        timestamp: Timestamp,
        value: &[u8],
    ) -> Result<(), StoreError> {
        check_put_family(&self.families, family)?;
        // The key is built in the handle's buffer: a batch writes many cells through one handle.
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        key.extend_from_slice(&self.prefix);
        push_component(&mut key, family.as_bytes());
        push_component(&mut key, qualifier);
        key.extend_from_slice(&encode_ts(timestamp));
        let inserted = self.cells.insert(key.as_slice(), value).map(|old| {
            let old = old.map(|old| {
                if self.undoable {
                    self.undo.replaced(&key, old.value());
                }
                old.value().len()
            });
            if old.is_none() && self.undoable {
                self.undo.added(&key);
            }
            old
        });
        self.key = key;
        let old_len = inserted.map_err(|e| redb_error("put cell", e))?;
        self.dirty = true;
        match old_len {
            Some(old) => {
                self.cell_bytes = self
                    .cell_bytes
                    .checked_sub(old as u64)
                    .ok_or_else(|| corrupt(self.table, "row size below a cell's size"))?;
            }
            None => {
                self.count += 1;
                self.cell_bytes += cell_size(family.len(), qualifier.len(), 0);
            }
        }
        self.cell_bytes += value.len() as u64;
        Ok(())
    }

    fn delete_column(
        &mut self,
        family: &str,
        qualifier: &[u8],
        range: Option<TimestampRange>,
    ) -> Result<(), StoreError> {
        let prefix = self.column_prefix(family, qualifier);
        let end = prefix_end(&prefix);
        let Some(range) = range else {
            return self.remove_between(&prefix, Bound::Excluded(&end), None);
        };
        // [start, end) in time is one key interval, newest first: from the key of end - 1
        // (or the column start when unbounded) down to the key of start.
        let newest = if range.end == 0 {
            None
        } else {
            match range.end.checked_sub(1) {
                Some(n) if n >= range.start => Some(Timestamp(n)),
                _ => return Ok(()),
            }
        };
        let lower = match newest {
            Some(ts) => {
                let mut k = prefix.clone();
                k.extend_from_slice(&encode_ts(ts));
                k
            }
            None => prefix.clone(),
        };
        let mut upper = prefix;
        upper.extend_from_slice(&encode_ts(Timestamp(range.start)));
        self.remove_between(&lower, Bound::Included(&upper), Some(range))
    }

    fn delete_family(&mut self, family: &str) -> Result<(), StoreError> {
        let prefix = self.family_prefix(family);
        let end = prefix_end(&prefix);
        self.remove_between(&prefix, Bound::Excluded(&end), None)
    }

    fn delete_row(&mut self) -> Result<(), StoreError> {
        let prefix = self.prefix.clone();
        let end = prefix_end(&prefix);
        self.remove_between(&prefix, Bound::Excluded(&end), None)
    }

    fn size(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.key_len + self.cell_bytes
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rowkit_codec::model::{GcRule, compare_canonical, row_size};
    use rowkit_statemachines::SplitMix64;

    // -----------------------------------------------------------------------------------------
    // Key encoding

    /// Short byte strings rich in 0x00, 0x01 and 0xFF, so escapes, terminators and prefixes meet.
    fn interesting_strings(rng: &mut SplitMix64, n: usize) -> Vec<Vec<u8>> {
        let alphabet = [0x00u8, 0x01, 0x02, 0x7f, 0xfe, 0xff, b'a'];
        let mut out = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![0, 1],
            vec![0, 0xff],
            vec![1],
            vec![0xff],
            vec![0xff, 0],
            vec![0xff, 0xff],
            b"a".to_vec(),
            b"a\0".to_vec(),
            b"a\0b".to_vec(),
            b"ab".to_vec(),
        ];
        while out.len() < n {
            let len = rng.below(5) as usize;
            out.push(
                (0..len)
                    .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                    .collect(),
            );
        }
        out
    }

    #[test]
    fn component_order_matches_byte_order() {
        let mut rng = SplitMix64::new(1);
        let strings = interesting_strings(&mut rng, 60);
        for a in &strings {
            for b in &strings {
                let (mut ea, mut eb) = (Vec::new(), Vec::new());
                push_component(&mut ea, a);
                push_component(&mut eb, b);
                assert_eq!(ea.cmp(&eb), a.cmp(b), "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn cell_key_order_is_canonical_order() {
        let mut rng = SplitMix64::new(2);
        let strings = interesting_strings(&mut rng, 12);
        let families = ["", "a", "a.b", "a-", "b"];
        let stamps = [0, 1, 1000, i64::MAX, -1, i64::MIN];
        let mut tuples = Vec::new();
        for row in &strings {
            for family in families {
                for q in strings.iter().step_by(3) {
                    for ts in stamps {
                        tuples.push((row.clone(), family, q.clone(), ts));
                    }
                }
            }
        }
        for _ in 0..20_000 {
            let a = &tuples[rng.below(tuples.len() as u64) as usize];
            let b = &tuples[rng.below(tuples.len() as u64) as usize];
            let ka = cell_key(&a.0, a.1, &a.2, Timestamp(a.3));
            let kb = cell_key(&b.0, b.1, &b.2, Timestamp(b.3));
            let expected =
                a.0.cmp(&b.0)
                    .then(a.1.as_bytes().cmp(b.1.as_bytes()))
                    .then(a.2.cmp(&b.2))
                    .then(b.3.cmp(&a.3));
            assert_eq!(ka.cmp(&kb), expected, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn cell_key_round_trips() {
        let mut rng = SplitMix64::new(3);
        for row in interesting_strings(&mut rng, 30) {
            for q in interesting_strings(&mut rng, 10) {
                for ts in [0, 1000, 42_000, i64::MAX, -1, i64::MIN] {
                    let key = cell_key(&row, "fam.1", &q, Timestamp(ts));
                    let (r, rest) = split_component(&key).unwrap();
                    assert_eq!(r, row);
                    let (f, qq, t) = decode_cell_suffix(rest).unwrap();
                    assert_eq!((f.as_str(), qq, t), ("fam.1", q.clone(), Timestamp(ts)));
                }
            }
        }
    }

    #[test]
    fn row_prefix_bounds_exactly_its_cells() {
        // Cells of "a" must not include those of "a\0" or "a\x01", and vice versa.
        let mut prefix = Vec::new();
        push_component(&mut prefix, b"a");
        let end = prefix_end(&prefix);
        for other in [&b"a\0"[..], b"a\x01", b"a\xff", b"b", b""] {
            let k = cell_key(other, "f", b"q", Timestamp(0));
            assert!(!(prefix.as_slice() <= k.as_slice() && k < end), "{other:?}");
        }
        let k = cell_key(b"a", "f", b"\xff\xff", Timestamp(i64::MIN));
        assert!(prefix.as_slice() <= k.as_slice() && k < end);
    }

    #[test]
    fn malformed_components_are_rejected() {
        for bad in [&b""[..], b"a", b"\0", b"\0\x02", b"a\0\0", b"\0\xfe\0\x01"] {
            assert!(split_component(bad).is_none(), "{bad:?}");
        }
        assert!(decode_cell_suffix(b"f\0\x01q\0\x01short").is_err());
        assert!(decode_cell_suffix(b"\xff\0\x01q\0\x0112345678").is_err());
        assert!(decode_cell_suffix(b"f\0\x01q\0\x0112345678").is_ok());
    }

    // -----------------------------------------------------------------------------------------
    // TableStorage

    fn store() -> RedbStore {
        let s = RedbStore::in_memory().unwrap();
        s.create_table("t", &[ColumnFamily::new("cf"), ColumnFamily::new("a")])
            .unwrap();
        s
    }

    fn put(s: &RedbStore, row: &[u8], family: &str, q: &[u8], ms: i64, v: &[u8]) {
        s.write_row("t", row, |r| {
            r.put(family, q, Timestamp::from_millis(ms), v)
        })
        .unwrap();
    }

    fn keys(s: &RedbStore, range: &RowRange, after: Option<&[u8]>, reversed: bool) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut after = after.map(<[u8]>::to_vec);
        while let Some(row) = s.next_row("t", range, after.as_deref(), reversed).unwrap() {
            out.push(row.key.clone());
            after = Some(row.key);
        }
        out
    }

    fn k(keys: &[&str]) -> Vec<Vec<u8>> {
        keys.iter().map(|k| k.as_bytes().to_vec()).collect()
    }

    /// The schema kept in memory follows every admin change at once: a family added is
    /// accepted by the next request, a deleted table is gone for reads and writes (and a write
    /// does not bring its redb tables back), a re-created one starts empty.
    #[test]
    fn schema_changes_reach_the_next_request() {
        use crate::Store;
        use rowkit_statemachines::{MutateRowRequest, Request};
        let s = store();
        let set = |family: &str| {
            Request::MutateRow(MutateRowRequest {
                table: "t".into(),
                row_key: b"r".to_vec(),
                mutations: vec![rowkit_codec::model::Mutation::SetCell {
                    family: family.into(),
                    qualifier: b"q".to_vec(),
                    timestamp: Timestamp::from_millis(1),
                    value: b"v".to_vec(),
                }],
                ..Default::default()
            })
        };
        let now = Timestamp::from_secs(1);
        let err = Store::execute(&s, set("new"), now).unwrap_err();
        assert_eq!(err.code, Code::NotFound);
        TableStorage::set_family(&s, "t", &ColumnFamily::new("new")).unwrap();
        Store::execute(&s, set("new"), now).unwrap();
        let point = RowRange {
            start: KeyBound::Closed(b"r".to_vec()),
            end: KeyBound::Closed(b"r".to_vec()),
        };
        let row = s.next_row("t", &point, None, false).unwrap().unwrap();
        assert_eq!(row.cells.len(), 1);
        assert_eq!(row.cells[0].family, "new");

        TableStorage::delete_table(&s, "t").unwrap();
        for range in [&point, &RowRange::all()] {
            let err = s.next_row("t", range, None, false).unwrap_err();
            assert_eq!(err.code, Code::NotFound);
        }
        let err = s.write_row("t", b"r", |r| r.delete_row()).unwrap_err();
        assert_eq!(err.code, Code::NotFound);
        let err = Store::execute(&s, set("cf"), now).unwrap_err();
        assert_eq!(err.code, Code::NotFound);
        assert_eq!(TableStorage::list_tables(&s).unwrap(), Vec::<String>::new());

        TableStorage::create_table(&s, "t", &[ColumnFamily::new("cf")]).unwrap();
        assert_eq!(s.next_row("t", &point, None, false).unwrap(), None);
        assert_eq!(
            s.next_row("t", &RowRange::all(), None, false).unwrap(),
            None
        );
        let err = Store::execute(&s, set("new"), now).unwrap_err();
        assert_eq!(err.code, Code::NotFound);
        Store::execute(&s, set("cf"), now).unwrap();
        let row = s.next_row("t", &point, None, false).unwrap().unwrap();
        assert_eq!(row.cells[0].family, "cf");
    }

    /// A point read (no rows-table lookup) finds exactly what a scan over the same key finds.
    #[test]
    fn point_reads_match_scans() {
        let s = store();
        put(&s, b"a", "cf", b"q", 1, b"1");
        put(&s, b"a\0", "cf", b"q", 1, b"2");
        put(&s, b"b", "a", b"q", 2, b"3");
        for key in [&b"a"[..], b"a\0", b"a\x01", b"b", b"c", b"\0"] {
            let point = RowRange {
                start: KeyBound::Closed(key.to_vec()),
                end: KeyBound::Closed(key.to_vec()),
            };
            let through = RowRange {
                start: KeyBound::Closed(key.to_vec()),
                end: KeyBound::Open([key, &b"\0"[..]].concat()),
            };
            for reversed in [false, true] {
                assert_eq!(
                    s.next_row("t", &point, None, reversed).unwrap(),
                    s.next_row("t", &through, None, reversed).unwrap(),
                    "{key:?}"
                );
            }
        }
    }

    #[test]
    fn read_row_limits_match_the_memory_store() {
        let redb = store();
        let memory = crate::MemoryStore::new();
        memory
            .create_table("t", &[ColumnFamily::new("cf"), ColumnFamily::new("a")])
            .unwrap();
        // Columns whose stored keys share prefixes, each with up to three versions.
        let cells: &[(&str, &[u8], i64)] = &[
            ("a", b"q", 1),
            ("cf", b"", 7),
            ("cf", b"q", 1),
            ("cf", b"q", 2),
            ("cf", b"q", 3),
            ("cf", b"q\0", 5),
            ("cf", b"q\0", 4),
            ("cf", b"qa", 9),
            ("cf", b"qb", 6),
            ("cf", b"r", 2),
            ("cf", b"r", 8),
        ];
        for (family, qualifier, ms) in cells {
            let value = format!("{family}/{qualifier:?}/{ms}");
            let put = |r: &mut dyn RowWrite| {
                r.put(
                    family,
                    qualifier,
                    Timestamp::from_millis(*ms),
                    value.as_bytes(),
                )
            };
            redb.write_row("t", b"r", |r| put(r)).unwrap();
            memory.write_row("t", b"r", |r| put(r)).unwrap();
        }
        for key in [&b"r"[..], b"r\0", b"missing"] {
            for limit in [None, Some(0), Some(1), Some(2), Some(5)] {
                assert_eq!(
                    redb.read_row("t", key, limit).unwrap(),
                    memory.read_row("t", key, limit).unwrap(),
                    "{key:?} {limit:?}"
                );
            }
        }
        assert_eq!(
            redb.read_row("t", b"r", None).unwrap().unwrap().cells.len(),
            cells.len()
        );
        assert_eq!(
            redb.read_row("t", b"r", Some(1))
                .unwrap()
                .unwrap()
                .cells
                .len(),
            7
        );
    }

    #[test]
    fn schema_operations() {
        let s = RedbStore::in_memory().unwrap();
        let err = s.create_table("bad name", &[]).unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument);
        let err = s
            .create_table("t", &[ColumnFamily::new("bad family")])
            .unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument);
        let err = s
            .create_table("t", &[ColumnFamily::max_versions("cf", 0)])
            .unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument);
        let many: Vec<_> = (0..101)
            .map(|i| ColumnFamily::new(format!("f{i}")))
            .collect();
        assert_eq!(
            s.create_table("t", &many).unwrap_err().code,
            Code::InvalidArgument
        );
        assert_eq!(s.list_tables().unwrap(), Vec::<String>::new());

        s.create_table("t", &[ColumnFamily::new("z"), ColumnFamily::new("b")])
            .unwrap();
        s.create_table("a", &[]).unwrap();
        let err = s.create_table("t", &[]).unwrap_err();
        assert_eq!(err.code, Code::AlreadyExists);
        assert_eq!(s.list_tables().unwrap(), vec!["a", "t"]);
        let names = |fs: Vec<ColumnFamily>| fs.into_iter().map(|f| f.name).collect::<Vec<_>>();
        assert_eq!(names(s.families("t").unwrap()), vec!["b", "z"]);

        s.set_family("t", &ColumnFamily::max_versions("m", 2))
            .unwrap();
        s.set_family("t", &ColumnFamily::max_versions("z", 3))
            .unwrap();
        let fams = s.families("t").unwrap();
        assert_eq!(names(fams.clone()), vec!["b", "m", "z"]);
        assert_eq!(fams[2].gc_rule, Some(GcRule::MaxNumVersions(3)));
        assert_eq!(
            s.set_family("nope", &ColumnFamily::new("x"))
                .unwrap_err()
                .code,
            Code::NotFound
        );
        assert_eq!(s.families("nope").unwrap_err().code, Code::NotFound);
        let bad = ColumnFamily::new("bad name");
        assert_eq!(s.set_family("nope", &bad).unwrap_err().code, Code::NotFound);
        assert_eq!(
            s.set_family("t", &bad).unwrap_err().code,
            Code::InvalidArgument
        );
        let bad_rule = ColumnFamily::max_versions("b", 0);
        assert_eq!(
            s.set_family("t", &bad_rule).unwrap_err().code,
            Code::InvalidArgument
        );
        assert_eq!(s.families("t").unwrap().len(), 3);

        s.write_row("t", b"r", |r| r.put("b", b"q", Timestamp(0), b"v"))
            .unwrap();
        s.delete_table("t").unwrap();
        assert_eq!(s.delete_table("t").unwrap_err().code, Code::NotFound);
        assert_eq!(s.list_tables().unwrap(), vec!["a"]);
        // A re-created table starts empty.
        s.create_table("t", &[ColumnFamily::new("b")]).unwrap();
        assert_eq!(
            s.next_row("t", &RowRange::all(), None, false).unwrap(),
            None
        );
    }

    #[test]
    fn missing_table_is_not_found() {
        let s = store();
        let all = RowRange::all();
        assert_eq!(
            s.next_row("x", &all, None, false).unwrap_err().code,
            Code::NotFound
        );
        assert_eq!(
            s.next_row_size("x", &all, None).unwrap_err().code,
            Code::NotFound
        );
        let err = s.write_row("x", b"r", |_| Ok(())).unwrap_err();
        assert_eq!(err.code, Code::NotFound);
    }

    #[test]
    fn next_row_bounds_after_and_direction() {
        let s = store();
        for key in ["a", "b", "b\0", "ba", "c", "d"] {
            put(&s, key.as_bytes(), "cf", b"q", 1, b"v");
        }
        let all = RowRange::all();
        assert_eq!(
            keys(&s, &all, None, false),
            k(&["a", "b", "b\0", "ba", "c", "d"])
        );
        assert_eq!(
            keys(&s, &all, None, true),
            k(&["d", "c", "ba", "b\0", "b", "a"])
        );

        let closed_open = RowRange::half_open("b", "c");
        assert_eq!(keys(&s, &closed_open, None, false), k(&["b", "b\0", "ba"]));
        assert_eq!(keys(&s, &closed_open, None, true), k(&["ba", "b\0", "b"]));

        let open_closed = RowRange {
            start: KeyBound::Open(b"b".to_vec()),
            end: KeyBound::Closed(b"c".to_vec()),
        };
        assert_eq!(keys(&s, &open_closed, None, false), k(&["b\0", "ba", "c"]));
        assert_eq!(keys(&s, &open_closed, None, true), k(&["c", "ba", "b\0"]));

        // An empty end key is unbounded; a prefix range stops at the successor.
        let empty_end = RowRange {
            start: KeyBound::Closed(b"c".to_vec()),
            end: KeyBound::Open(Vec::new()),
        };
        assert_eq!(keys(&s, &empty_end, None, false), k(&["c", "d"]));
        assert_eq!(
            keys(&s, &RowRange::prefix(b"b"), None, true),
            k(&["ba", "b\0", "b"])
        );

        // `after` outside the range, inside it, and at its edges.
        assert_eq!(
            keys(&s, &closed_open, Some(b"0"), false),
            k(&["b", "b\0", "ba"])
        );
        assert_eq!(keys(&s, &closed_open, Some(b"b"), false), k(&["b\0", "ba"]));
        assert_eq!(keys(&s, &closed_open, Some(b"bz"), false), k(&[]));
        assert_eq!(keys(&s, &closed_open, Some(b"b\0"), true), k(&["b"]));
        assert_eq!(
            keys(&s, &closed_open, Some(b"z"), true),
            k(&["ba", "b\0", "b"])
        );
        assert_eq!(keys(&s, &all, Some(b"a"), true), k(&[]));
        assert_eq!(keys(&s, &all, Some(b"bb"), false), k(&["c", "d"]));

        // Inverted and empty ranges yield nothing rather than failing.
        let inverted = RowRange::half_open("c", "b");
        assert_eq!(keys(&s, &inverted, None, false), k(&[]));
        assert_eq!(keys(&s, &inverted, None, true), k(&[]));
        assert_eq!(
            keys(&s, &RowRange::half_open("b", "b"), None, false),
            k(&[])
        );

        // next_row_size walks the same keys with the stored size.
        let mut sizes = Vec::new();
        let mut after: Option<Vec<u8>> = None;
        while let Some((key, size)) = s.next_row_size("t", &all, after.as_deref()).unwrap() {
            sizes.push((key.clone(), size));
            after = Some(key);
        }
        assert_eq!(sizes.len(), 6);
        for (key, size) in sizes {
            let row = s
                .next_row(
                    "t",
                    &RowRange {
                        start: KeyBound::Closed(key.clone()),
                        end: KeyBound::Closed(key.clone()),
                    },
                    None,
                    false,
                )
                .unwrap()
                .unwrap();
            assert_eq!(size, row_size(&key, &row.cells));
        }
    }

    #[test]
    fn a_batch_commits_at_once_and_a_failing_row_fails_alone() {
        let s = store();
        s.write_row("t", b"b", |r| r.put("cf", b"q", Timestamp(0), b"old"))
            .unwrap();
        let keys: [&[u8]; 3] = [b"a", b"b", b"c"];
        let results = s.write_rows("t", &keys, |i, r| {
            r.put("cf", b"q", Timestamp(1000), b"new")?;
            if i == 1 {
                return Err(StoreError::new(Code::InvalidArgument, "row b refuses"));
            }
            Ok(i)
        });
        assert_eq!(results[0].as_ref().ok(), Some(&0));
        assert!(results[1].is_err());
        assert_eq!(results[2].as_ref().ok(), Some(&2));
        let rows: Vec<_> = std::iter::successors(
            s.next_row("t", &RowRange::all(), None, false).unwrap(),
            |r| {
                s.next_row("t", &RowRange::all(), Some(&r.key), false)
                    .unwrap()
            },
        )
        .map(|r| (r.key, r.cells.len(), r.cells[0].value.clone()))
        .collect();
        assert_eq!(
            rows,
            vec![
                (b"a".to_vec(), 1, b"new".to_vec()),
                (b"b".to_vec(), 1, b"old".to_vec()),
                (b"c".to_vec(), 1, b"new".to_vec()),
            ]
        );
        // Without a failure the batch is one transaction; sizes stay exact.
        let results = s.write_rows("t", &keys, |_, r| r.put("cf", b"q2", Timestamp(0), b"x"));
        assert!(results.iter().all(Result::is_ok));
        for (row, size) in dump(&s) {
            assert_eq!(size, row_size(&row.key, &row.cells));
            assert_eq!(row.cells.len(), 2);
        }
        // Keys out of order, one of them twice: results by index, and the two writes of "a"
        // apply in index order (the second sees the first's cell and replaces it).
        let keys: [&[u8]; 4] = [b"c", b"a", b"b", b"a"];
        let results = s.write_rows("t", &keys, |i, r| {
            let seen = r.latest("cf", b"order")?.map(|(_, v)| v);
            r.put("cf", b"order", Timestamp(0), &[i as u8])?;
            Ok((i, seen))
        });
        let results: Vec<_> = results.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            results,
            vec![(0, None), (1, None), (2, None), (3, Some(vec![1]))]
        );
        let a = s
            .next_row("t", &RowRange::prefix(b"a"), None, false)
            .unwrap()
            .unwrap();
        assert!(
            a.cells
                .iter()
                .any(|c| c.qualifier == b"order" && c.value == [3])
        );
    }

    #[test]
    fn cells_come_back_in_canonical_order() {
        let s = store();
        let writes: &[(&str, &[u8], i64, &[u8])] = &[
            ("cf", b"q", 1, b"1"),
            ("cf", b"q", 3, b"3"),
            ("cf", b"q", 2, b"2"),
            ("cf", b"", 5, b""),
            ("cf", b"q\0", 1, b"x"),
            ("a", b"zz", 0, b"y"),
            ("cf", b"\xff", 7, b"z"),
        ];
        s.write_row("t", b"r\0w", |r| {
            for (f, q, ms, v) in writes {
                r.put(f, q, Timestamp::from_millis(*ms), v)?;
            }
            let cells = r.cells()?;
            assert_eq!(cells.len(), writes.len());
            assert_eq!(r.size(), row_size(b"r\0w", &cells));
            assert_eq!(
                r.latest("cf", b"q")?,
                Some((Timestamp::from_millis(3), b"3".to_vec()))
            );
            assert_eq!(r.latest("cf", b"nope")?, None);
            assert_eq!(
                r.latest("cf", b"q\0")?,
                Some((Timestamp::from_millis(1), b"x".to_vec()))
            );
            Ok(())
        })
        .unwrap();
        let row = s
            .next_row("t", &RowRange::all(), None, false)
            .unwrap()
            .unwrap();
        assert_eq!(row.key, b"r\0w");
        let mut sorted = row.cells.clone();
        sorted.sort_by(compare_canonical);
        assert_eq!(row.cells, sorted);
        assert_eq!(row.cells[0].family, "a");
        let stamps: Vec<_> = row.cells.iter().map(|c| c.timestamp.0 / 1000).collect();
        assert_eq!(stamps, vec![0, 5, 3, 2, 1, 1, 7]);
    }

    #[test]
    fn put_replaces_and_size_tracks() {
        let s = store();
        put(&s, b"r", "cf", b"q", 1, b"short");
        put(&s, b"r", "cf", b"q", 1, b"a much longer value");
        put(&s, b"r", "a", b"q2", 2, b"v");
        let row = s
            .next_row("t", &RowRange::all(), None, false)
            .unwrap()
            .unwrap();
        assert_eq!(row.cells.len(), 2);
        let (_, size) = s
            .next_row_size("t", &RowRange::all(), None)
            .unwrap()
            .unwrap();
        assert_eq!(size, row_size(b"r", &row.cells));
        s.write_row("t", b"r", |r| {
            assert_eq!(r.size(), size);
            r.delete_column("a", b"q2", None)?;
            assert_eq!(r.size(), row_size(b"r", &r.cells()?));
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn failed_write_leaves_nothing() {
        let s = store();
        put(&s, b"r", "cf", b"keep", 1, b"old");
        let err = s
            .write_row("t", b"r", |r| -> Result<(), StoreError> {
                r.put("cf", b"keep", Timestamp::from_millis(1), b"new")?;
                r.put("cf", b"extra", Timestamp::from_millis(1), b"x")?;
                r.delete_family("a")?;
                Err(StoreError::new(Code::InvalidArgument, "no"))
            })
            .unwrap_err();
        assert_eq!(err.code, Code::InvalidArgument);
        let err = s
            .write_row("t", b"new", |r| -> Result<(), StoreError> {
                r.put("cf", b"q", Timestamp(0), b"x")?;
                Err(StoreError::new(Code::FailedPrecondition, "no"))
            })
            .unwrap_err();
        assert_eq!(err.code, Code::FailedPrecondition);
        let row = s
            .next_row("t", &RowRange::all(), None, false)
            .unwrap()
            .unwrap();
        assert_eq!(row.key, b"r");
        assert_eq!(row.cells.len(), 1);
        assert_eq!(row.cells[0].value, b"old");
        assert_eq!(
            s.next_row("t", &RowRange::all(), Some(b"r"), false)
                .unwrap(),
            None
        );
        let (_, size) = s
            .next_row_size("t", &RowRange::all(), None)
            .unwrap()
            .unwrap();
        assert_eq!(size, row_size(b"r", &row.cells));
    }

    #[test]
    fn row_disappears_with_its_last_cell() {
        let s = store();
        let all = RowRange::all();
        let count = |s: &RedbStore| keys(s, &all, None, false).len();

        put(&s, b"r", "cf", b"q", 1, b"v");
        s.write_row("t", b"r", |r| r.delete_column("cf", b"q", None))
            .unwrap();
        assert_eq!(count(&s), 0);

        put(&s, b"r", "cf", b"q", 1, b"v");
        put(&s, b"r", "cf", b"q2", 1, b"v");
        s.write_row("t", b"r", |r| r.delete_family("cf")).unwrap();
        assert_eq!(count(&s), 0);

        put(&s, b"r", "cf", b"q", 1, b"v");
        put(&s, b"r", "a", b"q", 1, b"v");
        s.write_row("t", b"r", |r| r.delete_family("cf")).unwrap();
        assert_eq!(count(&s), 1);
        s.write_row("t", b"r", |r| r.delete_row()).unwrap();
        assert_eq!(count(&s), 0);
        assert_eq!(s.next_row_size("t", &all, None).unwrap(), None);

        // Put and delete in one transaction: the row never appears.
        s.write_row("t", b"r", |r| {
            r.put("cf", b"q", Timestamp(0), b"v")?;
            r.delete_row()?;
            assert_eq!(r.size(), 0);
            Ok(())
        })
        .unwrap();
        assert_eq!(count(&s), 0);
        // Deleting from a missing row is a no-op.
        s.write_row("t", b"zzz", |r| r.delete_row()).unwrap();
        assert_eq!(count(&s), 0);
    }

    #[test]
    fn delete_column_with_time_range() {
        let s = store();
        for ms in [0, 1, 2, 3, 4] {
            put(&s, b"r", "cf", b"q", ms, b"v");
        }
        put(&s, b"r", "cf", b"q\0", 2, b"v");
        put(&s, b"r", "cf", b"p", 2, b"v");
        let stamps = |s: &RedbStore| -> Vec<(Vec<u8>, i64)> {
            let row = s.next_row("t", &RowRange::all(), None, false).unwrap();
            row.map(|r| {
                r.cells
                    .into_iter()
                    .map(|c| (c.qualifier, c.timestamp.0 / 1000))
                    .collect()
            })
            .unwrap_or_default()
        };
        let range = |start_ms: i64, end_ms: i64| TimestampRange {
            start: start_ms * 1000,
            end: end_ms * 1000,
        };
        s.write_row("t", b"r", |r| {
            r.delete_column("cf", b"q", Some(range(1, 3)))
        })
        .unwrap();
        let q = |ts: &[i64]| ts.iter().map(|t| (b"q".to_vec(), *t)).collect::<Vec<_>>();
        let mut expected = vec![(b"p".to_vec(), 2)];
        expected.extend(q(&[4, 3, 0]));
        expected.push((b"q\0".to_vec(), 2));
        assert_eq!(stamps(&s), expected);
        // end = 0 means infinity; an inverted range deletes nothing.
        s.write_row("t", b"r", |r| {
            r.delete_column("cf", b"q", Some(range(5, 4)))
        })
        .unwrap();
        assert_eq!(stamps(&s), expected);
        s.write_row("t", b"r", |r| {
            r.delete_column("cf", b"q", Some(range(3, 0)))
        })
        .unwrap();
        let mut expected = vec![(b"p".to_vec(), 2)];
        expected.extend(q(&[0]));
        expected.push((b"q\0".to_vec(), 2));
        assert_eq!(stamps(&s), expected);
        s.write_row("t", b"r", |r| {
            r.delete_column("cf", b"q", Some(TimestampRange::default()))?;
            r.delete_column("cf", b"p", None)?;
            r.delete_column("cf", b"q\0", Some(range(0, 2)))
        })
        .unwrap();
        assert_eq!(stamps(&s), vec![(b"q\0".to_vec(), 2)]);
        s.write_row("t", b"r", |r| {
            r.delete_column("cf", b"q\0", Some(range(2, 3)))
        })
        .unwrap();
        assert_eq!(stamps(&s), vec![]);
        assert_eq!(s.next_row_size("t", &RowRange::all(), None).unwrap(), None);
    }

    #[test]
    fn read_only_reads_and_never_writes() {
        let dir = std::env::temp_dir().join(format!("rowkit-redb-ro-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.redb");

        let err = RedbStore::open_read_only(&path).unwrap_err();
        assert_eq!(err.code, Code::NotFound);
        assert!(!path.exists());
        std::fs::write(&path, b"").unwrap();
        let err = RedbStore::open_read_only(&path).unwrap_err();
        assert_eq!(err.code, Code::FailedPrecondition);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        std::fs::remove_file(&path).unwrap();

        {
            let s = RedbStore::open(&path).unwrap();
            s.create_table("t", &[ColumnFamily::new("cf")]).unwrap();
            put(&s, b"r", "cf", b"q", 1, b"v");
        }
        let before = std::fs::read(&path).unwrap();
        {
            let s = RedbStore::open_read_only(&path).unwrap();
            assert_eq!(s.list_tables().unwrap(), vec!["t".to_string()]);
            let row = s
                .next_row("t", &RowRange::all(), None, false)
                .unwrap()
                .unwrap();
            assert_eq!(row.key, b"r".to_vec());
            let err = s.write_row("t", b"r", |r| r.delete_row()).unwrap_err();
            assert_eq!(err.code, Code::FailedPrecondition);
            let err = s.create_table("u", &[ColumnFamily::new("cf")]).unwrap_err();
            assert_eq!(err.code, Code::FailedPrecondition);
            assert_eq!(s.sync().unwrap_err().code, Code::FailedPrecondition);
        }
        assert!(std::fs::read(&path).unwrap() == before);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Reads share a snapshot until the next commit: a read that starts after a write returned
    /// sees it, on any thread, however reads and commits interleave (a snapshot begun before a
    /// commit and installed after it would show an older value).
    #[test]
    fn a_read_after_a_write_returned_sees_it() {
        use std::sync::atomic::{AtomicU64, Ordering};
        let s = store();
        put(&s, b"r", "cf", b"q", 1, &0u64.to_be_bytes());
        let written = AtomicU64::new(0);
        let value = |s: &RedbStore| {
            let point = RowRange {
                start: KeyBound::Closed(b"r".to_vec()),
                end: KeyBound::Closed(b"r".to_vec()),
            };
            let row = s.next_row("t", &point, None, false);
            let cells = row.unwrap().unwrap().cells;
            u64::from_be_bytes(cells[0].value.as_slice().try_into().unwrap())
        };
        std::thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    while written.load(Ordering::Acquire) < 2_000 {
                        let before = written.load(Ordering::Acquire);
                        assert!(value(&s) >= before, "a read missed a returned write");
                    }
                });
            }
            for n in 1..=2_000u64 {
                put(&s, b"r", "cf", b"q", 1, &n.to_be_bytes());
                written.store(n, Ordering::Release);
                assert_eq!(value(&s), n);
            }
        });
    }

    /// Commits a put of `value` to `key` as a durable-mode row write does, without waiting for
    /// the sync; returns the ticket to wait for.
    fn write_unsynced(s: &RedbStore, key: &[u8], value: &[u8]) -> u64 {
        let op = "test write";
        let put = |r: &mut RedbRow<'_>| r.put("cf", b"q", Timestamp::from_millis(1), value);
        let ((), ticket) = s
            .in_write("t", op, false, |rows, row| {
                write_in(rows, row, key, put, op).map(|(v, wrote)| (v, usize::from(wrote)))
            })
            .unwrap();
        ticket
    }

    fn value_of(s: &RedbStore, key: &[u8]) -> Option<Vec<u8>> {
        let point = RowRange {
            start: KeyBound::Closed(key.to_vec()),
            end: KeyBound::Closed(key.to_vec()),
        };
        let row = s.next_row("t", &point, None, false).unwrap()?;
        Some(row.cells[0].value.clone())
    }

    #[test]
    fn a_grouped_commit_is_seen_only_once_on_disk() {
        let s = store();
        put(&s, b"r", "cf", b"q", 1, b"old");
        assert_eq!(value_of(&s, b"r").unwrap(), b"old");
        let ticket = write_unsynced(&s, b"r", b"new");
        // Committed, not on disk: readers still get the state a crash would leave.
        assert_eq!(value_of(&s, b"r").unwrap(), b"old");
        assert_eq!(value_of(&s, b"fresh"), None);
        // A write transaction that commits nothing but could read it waits for it too.
        let op = "test read in a write";
        let (seen, after) = s
            .in_write("t", op, false, |_, row| {
                row.start(b"r", 0, 0).map_err(RowFailed::clean)?;
                let latest = row.latest("cf", b"q").map_err(RowFailed::clean)?;
                Ok((latest.map(|(_, v)| v), 0))
            })
            .unwrap();
        assert_eq!(seen.as_deref(), Some(&b"new"[..]));
        assert!(after >= ticket, "ticket {after} does not cover {ticket}");
        s.wait_durable(ticket).unwrap();
        assert_eq!(value_of(&s, b"r").unwrap(), b"new");
        // Non-durable commits are seen at once.
        s.set_durable_commits(false);
        put(&s, b"r", "cf", b"q", 1, b"plain");
        assert_eq!(value_of(&s, b"r").unwrap(), b"plain");
        // An acknowledged row still pending when durable commits come on is seen while the
        // first grouped write after it waits for the disk.
        put(&s, b"p", "cf", b"q", 1, b"acknowledged");
        assert!(s.has_pending());
        s.set_durable_commits(true);
        let ticket = write_unsynced(&s, b"r", b"grouped");
        assert_eq!(value_of(&s, b"p").unwrap(), b"acknowledged");
        assert_eq!(value_of(&s, b"r").unwrap(), b"plain");
        s.wait_durable(ticket).unwrap();
        assert_eq!(value_of(&s, b"r").unwrap(), b"grouped");
    }

    #[test]
    fn a_failed_sync_fails_every_writer_waiting_on_it() {
        let s = store();
        let tickets = [
            write_unsynced(&s, b"a", b"1"),
            write_unsynced(&s, b"b", b"2"),
        ];
        // As after a panic inside redb: the damage record fails the leader's sync at once.
        let planted = StoreError::new(Code::DataLoss, "planted damage");
        s.damage().writes = Some(planted.clone());
        let s = &s;
        let results: Vec<_> = std::thread::scope(|scope| {
            let waiters: Vec<_> = tickets
                .map(|ticket| scope.spawn(move || s.wait_durable(ticket)))
                .into_iter()
                .collect();
            waiters.into_iter().map(|w| w.join().unwrap()).collect()
        });
        for result in results {
            assert_eq!(result.unwrap_err().message, planted.message);
        }
        // Neither was acknowledged, and readers never saw them.
        assert_eq!(value_of(s, b"a"), None);
        assert_eq!(value_of(s, b"b"), None);
    }

    #[test]
    fn grouped_rows_share_one_durable_commit() {
        let s = store();
        let commits = s.snapshots().commits;
        let tickets = [b"a", b"b", b"c"].map(|key| write_unsynced(&s, key, b"v"));
        // Written into one transaction, not committed, not seen.
        assert_eq!(s.pending_rows(), 3);
        assert_eq!(s.snapshots().commits, commits);
        for key in [b"a", b"b", b"c"] {
            assert_eq!(value_of(&s, key), None);
        }
        // The last writer leads: one durable commit carries the three rows.
        s.wait_durable(tickets[2]).unwrap();
        assert_eq!(s.pending_rows(), 0);
        assert_eq!(s.snapshots().commits, commits + 1);
        for key in [b"a", b"b", b"c"] {
            assert_eq!(value_of(&s, key).as_deref(), Some(&b"v"[..]));
        }
        // The others are on disk with it: their waits need no commit of their own.
        for ticket in tickets {
            s.wait_durable(ticket).unwrap();
        }
        assert_eq!(s.snapshots().commits, commits + 1);
    }

    #[test]
    fn corrupt_cell_key_is_internal_not_panic() {
        let s = store();
        put(&s, b"r", "cf", b"q", 1, b"v");
        // Plant a key under row "r" that is not a valid cell key.
        let txn = s
            .begin_write("plant a bad key", CommitKind::Grouped)
            .unwrap();
        {
            let names = TableNames::new("t");
            let mut cells = txn.open_table(names.cells()).unwrap();
            let mut bad = Vec::new();
            push_component(&mut bad, b"r");
            bad.extend_from_slice(b"cf\0\x01q\0\x01bad");
            cells.insert(bad.as_slice(), b"x".as_slice()).unwrap();
        }
        s.commit_and_wait(txn, "plant a bad key", CommitKind::Grouped)
            .unwrap();
        let err = s.next_row("t", &RowRange::all(), None, false).unwrap_err();
        assert_eq!(err.code, Code::Internal);
        let err = s.write_row("t", b"r", |r| r.delete_row()).unwrap_err();
        assert_eq!(err.code, Code::Internal);
        let err = s
            .write_row("t", b"r", |r| r.cells().map(|_| ()))
            .unwrap_err();
        assert_eq!(err.code, Code::Internal);
    }

    /// Only panics in redb's code are contained: a bug in the caller's closure (the evaluator,
    /// running inside the write transaction) still panics, is not taken for damage, and leaves
    /// the writer free for the next write.
    #[test]
    fn a_panic_outside_redb_is_not_contained() {
        let s = store();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.write_row("t", b"r", |r| -> Result<(), StoreError> {
                r.put("cf", b"q", Timestamp(0), b"half")?;
                panic!("a bug in the caller")
            })
        }));
        assert!(caught.is_err());
        put(&s, b"r", "cf", b"q", 1, b"v");
        let row = s.next_row("t", &RowRange::all(), None, false).unwrap();
        assert_eq!(row.unwrap().cells.len(), 1);
    }

    #[test]
    fn request_seeds_follow_one_splitmix_stream() {
        let s = RedbStore::in_memory()
            .unwrap()
            .with_options(StoreOptions::default().with_seed(9));
        let mut rng = SplitMix64::new(9);
        for _ in 0..5 {
            assert_eq!(s.next_request_seed(), rng.next_u64());
        }
    }

    // -----------------------------------------------------------------------------------------
    // Differential: the same random row transactions on MemoryStore and RedbStore

    /// One random transaction: a few writes, with what the row reports in between recorded, and
    /// sometimes a failure at the end. Returns the observations (which must match across stores).
    fn random_txn<S: TableStorage>(s: &S, seed: u64) -> Vec<String> {
        let mut rng = SplitMix64::new(seed);
        let rows: [&[u8]; 5] = [b"a", b"a\0", b"a\xff", b"b", b"\0"];
        let quals: [&[u8]; 4] = [b"", b"q", b"q\0", b"\xff"];
        let families = ["a", "cf"];
        let row = rows[rng.below(5) as usize];
        let mut log = Vec::new();
        let result = s.write_row("t", row, |r| {
            for _ in 0..1 + rng.below(4) {
                let family = families[rng.below(2) as usize];
                let q = quals[rng.below(4) as usize];
                match rng.below(10) {
                    0..=4 => {
                        let ts = Timestamp::from_millis(rng.below(5) as i64);
                        let len = rng.below(4) as usize;
                        r.put(family, q, ts, &vec![b'v'; len])?;
                    }
                    5 | 6 => {
                        let range = match rng.below(3) {
                            0 => None,
                            _ => Some(TimestampRange {
                                start: rng.below(5) as i64 * 1000,
                                end: rng.below(6) as i64 * 1000,
                            }),
                        };
                        r.delete_column(family, q, range)?;
                    }
                    7 => r.delete_family(family)?,
                    8 => r.delete_row()?,
                    _ => log.push(format!("latest {:?}", r.latest(family, q)?)),
                }
                log.push(format!("size {}", r.size()));
            }
            log.push(format!("cells {:?}", r.cells()?));
            if rng.below(5) == 0 {
                return Err(StoreError::new(Code::Aborted, "rolled back"));
            }
            Ok(())
        });
        log.push(format!("result {:?}", result.map_err(|e| e.code)));
        log
    }

    fn random_bound(rng: &mut SplitMix64) -> KeyBound {
        let keys: [&[u8]; 6] = [b"", b"a", b"a\0", b"a\x01", b"b", b"\xff"];
        let key = keys[rng.below(6) as usize].to_vec();
        match rng.below(3) {
            0 => KeyBound::Unbounded,
            1 => KeyBound::Closed(key),
            _ => KeyBound::Open(key),
        }
    }

    /// Every scan a reader can make, as text.
    fn scans<S: TableStorage>(s: &S, rng: &mut SplitMix64) -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..4 {
            let range = RowRange {
                start: random_bound(rng),
                end: random_bound(rng),
            };
            for reversed in [false, true] {
                let mut after = None;
                while let Some(row) = s.next_row("t", &range, after.as_deref(), reversed).unwrap() {
                    out.push(format!("{row:?}"));
                    after = Some(row.key);
                }
            }
            let mut after = None;
            while let Some((key, size)) = s.next_row_size("t", &range, after.as_deref()).unwrap() {
                out.push(format!("{key:?} {size}"));
                after = Some(key);
            }
        }
        out
    }

    #[test]
    fn behaves_like_the_memory_store() {
        let families = [ColumnFamily::new("cf"), ColumnFamily::new("a")];
        let memory = crate::MemoryStore::new();
        memory.create_table("t", &families).unwrap();
        let redb = RedbStore::in_memory().unwrap();
        redb.create_table("t", &families).unwrap();
        let mut rng = SplitMix64::new(11);
        let mut compared = 0;
        for step in 0..600 {
            let seed = rng.next_u64();
            assert_eq!(
                random_txn(&memory, seed),
                random_txn(&redb, seed),
                "step {step}"
            );
            if step % 50 == 49 {
                let scan_seed = rng.next_u64();
                let expected = scans(&memory, &mut SplitMix64::new(scan_seed));
                compared += expected.len();
                let found = scans(&redb, &mut SplitMix64::new(scan_seed));
                assert_eq!(expected, found, "step {step}");
            }
        }
        assert!(compared > 100, "only {compared} rows compared");
    }

    #[test]
    fn reopen_finds_the_data() {
        let dir = std::env::temp_dir().join(format!(
            "rowkit-redb-unit-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("store.redb");
        {
            let s = RedbStore::open(&path).unwrap();
            s.create_table("t", &[ColumnFamily::max_versions("cf", 2)])
                .unwrap();
            put(&s, b"r1", "cf", b"q", 1, b"v1");
            put(&s, b"r2", "cf", b"q", 2, b"v2");
            // A second handle on the same file is refused while the first is open.
            let err = RedbStore::open(&path).unwrap_err();
            assert_eq!(err.code, Code::Unavailable, "{err}");
        }
        {
            let s = RedbStore::open(&path).unwrap().with_durable_commits(false);
            assert_eq!(
                s.families("t").unwrap(),
                vec![ColumnFamily::max_versions("cf", 2)]
            );
            assert_eq!(keys(&s, &RowRange::all(), None, false), k(&["r1", "r2"]));
            put(&s, b"r3", "cf", b"q", 3, b"v3");
            s.sync().unwrap();
            assert_eq!(
                keys(&s, &RowRange::all(), None, false),
                k(&["r1", "r2", "r3"])
            );
        }
        {
            // Non-durable commits are made durable when the store closes.
            let s = RedbStore::open(&path).unwrap();
            assert_eq!(
                keys(&s, &RowRange::all(), None, false),
                k(&["r1", "r2", "r3"])
            );
            let row = s
                .next_row("t", &RowRange::all(), None, true)
                .unwrap()
                .unwrap();
            assert_eq!(row.cells[0].value, b"v3");
        }
        std::fs::write(
            dir.join("junk.redb"),
            b"definitely not a redb file, just junk",
        )
        .unwrap();
        let err = RedbStore::open(dir.join("junk.redb")).unwrap_err();
        assert_eq!(err.code, Code::FailedPrecondition, "{err}");
        assert!(err.message.contains("not a redb file"), "{err}");
        // A store file whose header lost a byte of its magic number is damaged, not foreign.
        let store = dir.join("store.redb");
        RedbStore::open(&store).unwrap();
        let mut bytes = std::fs::read(&store).unwrap();
        bytes[3] ^= 0x20;
        std::fs::write(&store, &bytes).unwrap();
        for err in [
            RedbStore::open(&store).unwrap_err(),
            RedbStore::open_read_only(&store).unwrap_err(),
        ] {
            assert_eq!(err.code, Code::DataLoss, "{err}");
            assert!(err.message.contains("rowkit admin backup"), "{err}");
            assert!(err.message.contains("rowkit check"), "{err}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    // -----------------------------------------------------------------------------------------
    // Lazy commits and undo

    /// Every row of "t", whole, with its stored size, in key order.
    fn dump(s: &RedbStore) -> Vec<(Row, u64)> {
        let mut rows = Vec::new();
        let mut after: Option<Vec<u8>> = None;
        while let Some(row) = s
            .next_row("t", &RowRange::all(), after.as_deref(), false)
            .unwrap()
        {
            let (key, size) = s
                .next_row_size("t", &RowRange::all(), after.as_deref())
                .unwrap()
                .unwrap();
            assert_eq!(key, row.key);
            after = Some(row.key.clone());
            rows.push((row, size));
        }
        rows
    }

    /// A row write that changes every kind of cell, then fails: an overwrite, an add, a
    /// column delete, a row delete, and a put after it.
    fn failing_write(r: &mut RedbRow<'_>) -> Result<(), StoreError> {
        let ms = Timestamp::from_millis;
        r.put("cf", b"q", ms(1), b"overwritten")?;
        r.put("cf", b"x", ms(2), b"added")?;
        r.delete_column("cf", b"p", None)?;
        r.delete_row()?;
        r.put("a", b"z", ms(3), b"after the delete")?;
        Err(StoreError::new(Code::FailedPrecondition, "planted failure"))
    }

    /// Row "b" with two columns, then the failing write on it between two good rows; the
    /// oracle is a store with durable commits, where each row is its own transaction and the
    /// failed one is aborted by redb.
    fn write_around_a_failure(s: &RedbStore) {
        put(s, b"b", "cf", b"q", 1, b"old");
        put(s, b"b", "cf", b"p", 1, b"kept");
        // A read: what follows starts a new pending transaction.
        assert!(value_of(s, b"b").is_some());
        put(s, b"a", "cf", b"q", 1, b"acknowledged before");
        let err = s.write_row("t", b"b", failing_write).unwrap_err();
        assert_eq!(err.message, "planted failure");
        put(s, b"c", "cf", b"q", 1, b"after");
    }

    #[test]
    fn a_failed_row_in_a_pending_transaction_is_undone_alone() {
        let oracle = store();
        write_around_a_failure(&oracle);
        let s = store().with_durable_commits(false);
        write_around_a_failure(&s);
        assert!(
            s.has_pending(),
            "the failed row did not end the pending transaction"
        );
        let expected = dump(&oracle);
        assert_eq!(expected.len(), 3);
        assert_eq!(dump(&s), expected);
        assert!(!s.has_pending(), "the read committed it");
    }

    /// A batch whose middle row fails: that row alone is undone, in both commit modes.
    #[test]
    fn a_failed_row_in_a_batch_is_undone_alone() {
        for durable in [true, false] {
            let s = store().with_durable_commits(durable);
            put(&s, b"b", "cf", b"q", 1, b"old");
            put(&s, b"b", "cf", b"p", 1, b"kept");
            let before = dump(&s);
            let keys: [&[u8]; 3] = [b"a", b"b", b"c"];
            let results = s.write_rows("t", &keys, |i, r| match i {
                1 => failing_write(r),
                _ => r.put("cf", b"q", Timestamp::from_millis(1), b"batch"),
            });
            assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
            assert_eq!(results[1].as_ref().unwrap_err().message, "planted failure");
            // The oracle: the good rows written alone, row "b" as before.
            let oracle = store();
            put(&oracle, b"b", "cf", b"q", 1, b"old");
            put(&oracle, b"b", "cf", b"p", 1, b"kept");
            assert_eq!(dump(&oracle), before);
            put(&oracle, b"a", "cf", b"q", 1, b"batch");
            put(&oracle, b"c", "cf", b"q", 1, b"batch");
            assert_eq!(dump(&s), dump(&oracle), "durable commits: {durable}");
        }
    }

    /// Pending rows commit when a reader needs them, every `LAZY_COMMIT_ROWS` rows, and when
    /// the store closes: a reopened file holds every acknowledged write.
    #[test]
    fn pending_rows_are_seen_by_readers_and_kept_by_close() {
        let dir = std::env::temp_dir().join(format!("rowkit-redb-lazy-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.redb");
        let rows = LAZY_COMMIT_ROWS * 2 + 3;
        {
            let s = RedbStore::open(&path).unwrap().with_durable_commits(false);
            s.create_table("t", &[ColumnFamily::new("cf")]).unwrap();
            put(&s, b"first", "cf", b"q", 1, b"1");
            assert!(s.has_pending());
            // Seen by a reader on another thread.
            std::thread::scope(|t| {
                t.spawn(|| assert_eq!(value_of(&s, b"first").as_deref(), Some(&b"1"[..])));
            });
            assert!(!s.has_pending());
            for i in 0..rows {
                put(&s, format!("r{i:04}").as_bytes(), "cf", b"q", 1, b"v");
                // Committed at every LAZY_COMMIT_ROWS rows, pending between.
                assert_eq!(s.has_pending(), (i + 1) % LAZY_COMMIT_ROWS != 0, "row {i}");
            }
            assert!(s.has_pending());
        }
        let s = RedbStore::open(&path).unwrap();
        let keys = keys(&s, &RowRange::all(), None, false);
        assert_eq!(keys.len(), 1 + rows);
        assert_eq!(keys[0], b"first");
        assert_eq!(keys[rows], format!("r{:04}", rows - 1).into_bytes());
        drop(s);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
