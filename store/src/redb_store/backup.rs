//! [`RedbStore`]'s backup: every redb table of the file, copied entry by entry from one read
//! snapshot into a fresh redb file.
//!
//! A copy of the file's bytes is not a backup while a writer commits (pages change under the
//! copy: the issue measured 3 of 5 `cp` copies that redb could not open). A read transaction is
//! an MVCC snapshot: it holds exactly the commits made before it began, and writers go on
//! beside it. Copying every table (not only the rowkit tables the catalog names) keeps whatever
//! the file holds: the layout version, schemas, split points and anything a later layout adds.

use std::path::Path;

use redb::{Database, Durability, ReadTransaction, ReadableTable, TableDefinition, TableHandle};
use rowkit_statemachines::{Code, StoreError};

use super::{RedbStore, Scope, redb_error};
use crate::BackupSummary;
use crate::backup::write_atomically;

/// Entries copied per write transaction of the backup file: its commits are not synced (the
/// last one is), so this only bounds the memory a transaction's dirty pages take.
const ENTRIES_PER_COMMIT: u64 = 20_000;

/// The prefix of the redb tables that hold one rowkit table's rows (the rowkit table id
/// follows); each rowkit table has exactly one.
const ROWS_PREFIX: &str = "rowkit/rows/";

/// Copies one redb table of the snapshot `src`, if its key and value types are `K` and `V`:
/// `Ok(None)` when they are not (the caller tries the next pair), else the entries copied.
type CopyTable = fn(&ReadTransaction, &Database, &str) -> Result<Option<u64>, StoreError>;

/// Every key and value type pair the rowkit layout stores (`redb_store`'s module docs): a table
/// is copied with the first pair redb accepts for it.
const COPIERS: [CopyTable; 4] = [
    copy_table::<&'static str, u64>,
    copy_table::<&'static str, &'static [u8]>,
    copy_table::<&'static [u8], (u64, u64)>,
    copy_table::<&'static [u8], &'static [u8]>,
];

fn copy_table<K: redb::Key + 'static, V: redb::Value + 'static>(
    src: &ReadTransaction,
    dst: &Database,
    name: &str,
) -> Result<Option<u64>, StoreError> {
    let op = "backup";
    let definition = TableDefinition::<K, V>::new(name);
    let table = match src.open_table(definition) {
        Ok(table) => table,
        Err(redb::TableError::TableTypeMismatch { .. }) => return Ok(None),
        Err(e) => return Err(redb_error(op, e)),
    };
    let mut entries = table.iter().map_err(|e| redb_error(op, e))?;
    let mut copied = 0;
    loop {
        let mut txn = dst.begin_write().map_err(|e| redb_error(op, e))?;
        txn.set_durability(Durability::None)
            .map_err(|e| redb_error(op, e))?;
        let mut in_batch = 0;
        {
            // Opened even when the source is empty: an empty table is part of the layout.
            let mut out = txn.open_table(definition).map_err(|e| redb_error(op, e))?;
            while in_batch < ENTRIES_PER_COMMIT {
                let Some(entry) = entries.next() else { break };
                let (key, value) = entry.map_err(|e| redb_error(op, e))?;
                out.insert(key.value(), value.value())
                    .map_err(|e| redb_error(op, e))?;
                in_batch += 1;
            }
        }
        txn.commit().map_err(|e| redb_error(op, e))?;
        copied += in_batch;
        if in_batch < ENTRIES_PER_COMMIT {
            return Ok(Some(copied));
        }
    }
}

impl RedbStore {
    /// [`crate::Store::backup_to`] for a redb store.
    pub(super) fn write_backup(
        &self,
        dest: &Path,
        overwrite: bool,
    ) -> Result<BackupSummary, StoreError> {
        write_atomically(dest, overwrite, self.path.as_deref(), |temp| {
            self.copy_to(temp)
        })
    }

    /// Copies every table of one read snapshot into a new redb file at `temp`, then checks that
    /// the copy opens as a rowkit store with the same tables. Returns the rowkit tables copied.
    fn copy_to(&self, temp: &Path) -> Result<usize, StoreError> {
        let op = "backup";
        // Scopes name redb tables here: a rowkit table id never holds a `/`, so a damaged
        // `rowkit/schema` recorded as such fails no rowkit table's requests.
        let snapshot = self.guarded(Scope::Read("rowkit/schema"), op, || {
            self.commit_for_readers(op)?;
            let txn = self.begin_read(op)?;
            let names: Vec<String> = txn
                .list_tables()
                .map_err(|e| redb_error(op, e))?
                .map(|handle| handle.name().to_string())
                .collect();
            let multimaps = txn
                .list_multimap_tables()
                .map_err(|e| redb_error(op, e))?
                .count();
            if multimaps > 0 {
                return Err(StoreError::new(
                    Code::FailedPrecondition,
                    format!(
                        "{}: holds {multimaps} multimap table(s), which no rowkit layout writes; not backed up",
                        self.describe()
                    ),
                ));
            }
            Ok((txn, names))
        })?;
        let (txn, names) = snapshot;
        let dst = Database::builder()
            .create(temp)
            .map_err(|e| redb_error(&format!("backup: create {}", temp.display()), e))?;
        let mut tables = 0;
        for name in &names {
            let table = name
                .strip_prefix(ROWS_PREFIX)
                .or_else(|| name.strip_prefix("rowkit/cells/"))
                .unwrap_or(name);
            let copied = self.guarded(Scope::Read(table), op, || {
                for copy in COPIERS {
                    if copy(&txn, &dst, name)?.is_some() {
                        return Ok(true);
                    }
                }
                Ok(false)
            })?;
            if !copied {
                return Err(StoreError::new(
                    Code::FailedPrecondition,
                    format!(
                        "{}: redb table {name:?} has key and value types this build does not know; not backed up",
                        self.describe()
                    ),
                ));
            }
            tables += usize::from(name.starts_with(ROWS_PREFIX));
        }
        drop(txn);
        // One synced commit makes the unsynced ones durable; closing writes the allocator
        // state, so the copy opens without a repair.
        let mut last = dst.begin_write().map_err(|e| redb_error(op, e))?;
        last.set_durability(Durability::Immediate)
            .map_err(|e| redb_error(op, e))?;
        last.commit().map_err(|e| redb_error(op, e))?;
        drop(dst);
        let copy = RedbStore::open_read_only(temp)?;
        let listed = crate::TableStorage::list_tables(&copy)?.len();
        if listed != tables {
            return Err(StoreError::new(
                Code::Internal,
                format!("backup: the copy lists {listed} tables, the store {tables}"),
            ));
        }
        Ok(tables)
    }
}
