//! [`MemoryStore`]'s backup: its contents written as a redb store file, which
//! `rowkit --store embedded:FILE` then opens (a memory store's data outlives its process).

use std::path::Path;

use rowkit_codec::model::Timestamp;
use rowkit_statemachines::{Code, StoreError};

use super::MemoryStore;
use crate::backup::write_atomically;
use crate::{BackupSummary, RedbStore, RowWrite, TableStorage};

/// Rows written per commit of the backup file.
const ROWS_PER_COMMIT: usize = 1_000;

impl MemoryStore {
    /// [`crate::Store::backup_to`] for the memory store: one snapshot is the tables' read lock,
    /// held while the copy is written, so writers wait for it.
    pub(super) fn write_backup(
        &self,
        dest: &Path,
        overwrite: bool,
    ) -> Result<BackupSummary, StoreError> {
        write_atomically(dest, overwrite, None, |temp| {
            let tables = self.read()?;
            // Unsynced commits, then one synced one: the file is whole once `sync` returns.
            let copy = RedbStore::open(temp)?.with_durable_commits(false);
            for (name, table) in tables.iter() {
                copy.create_table_with_splits(name, &table.families, &table.splits)?;
                let rows: Vec<_> = table.rows_in_order().collect();
                for batch in rows.chunks(ROWS_PER_COMMIT) {
                    let keys: Vec<&[u8]> = batch.iter().map(|(key, _)| *key).collect();
                    let written = copy.write_rows(name, &keys, |i, row| {
                        for cell in &batch[i].1.cells {
                            let family = std::str::from_utf8(cell.family())
                                .map_err(|e| StoreError::new(Code::Internal, e.to_string()))?;
                            row.put(
                                family,
                                cell.qualifier(),
                                Timestamp(cell.timestamp),
                                cell.value(),
                            )?;
                        }
                        Ok(())
                    });
                    written.into_iter().collect::<Result<Vec<()>, _>>()?;
                }
            }
            copy.sync()?;
            Ok(tables.len())
        })
    }
}
