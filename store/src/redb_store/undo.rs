//! Undoing one row's writes inside a transaction other rows share.
//!
//! redb can only abort a whole write transaction (and refuses an ephemeral savepoint once a
//! table is open in it), but a batch, or the pending transaction of lazy commits
//! ([`super::writer`]), holds rows that already succeeded when a later row fails (a row over
//! 256 MiB, an increment of a non-8-byte cell): that row alone must be as if it never ran. So
//! while a row writes into a shared transaction, each cell it adds or replaces is logged here,
//! and a failed row puts every logged cell back, newest first. The log is one byte buffer
//! reused from row to row: logging a cell is a copy, not an allocation.

use std::ops::Range;

use redb::{StorageError, Table};

/// The cells one row's writes changed, in order, to put back if the row fails.
#[derive(Debug, Default)]
pub(super) struct UndoLog {
    /// Keys and replaced values, back to back.
    bytes: Vec<u8>,
    /// Per change: the cell key, and the value it held before (`None`: the row added it).
    changes: Vec<(Range<usize>, Option<Range<usize>>)>,
}

impl UndoLog {
    /// Forgets every change: the next row starts.
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.changes.clear();
    }

    /// Logs a cell `key` the row added.
    pub(super) fn added(&mut self, key: &[u8]) {
        let key = self.push(key);
        self.changes.push((key, None));
    }

    /// Logs a cell `key` the row replaced or removed, which held `old`.
    pub(super) fn replaced(&mut self, key: &[u8], old: &[u8]) {
        let key = self.push(key);
        let old = self.push(old);
        self.changes.push((key, Some(old)));
    }

    fn push(&mut self, bytes: &[u8]) -> Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        start..self.bytes.len()
    }

    /// Puts back every logged change in `cells`, newest first, so a cell the row wrote twice
    /// ends as it was before the first write. Then the log is empty. An error leaves the
    /// transaction partly undone: the caller must abort it.
    pub(super) fn undo(
        &mut self,
        cells: &mut Table<'_, &'static [u8], &'static [u8]>,
    ) -> Result<(), StorageError> {
        for (key, old) in self.changes.iter().rev() {
            let key = &self.bytes[key.clone()];
            match old {
                Some(old) => drop(cells.insert(key, &self.bytes[old.clone()])?),
                None => drop(cells.remove(key)?),
            }
        }
        self.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

    use super::*;

    const CELLS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("cells");

    fn contents(
        table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        table
            .iter()
            .unwrap()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.value().to_vec(), v.value().to_vec())
            })
            .collect()
    }

    /// Every mix of adds, overwrites (twice of one key included) and removals is undone to
    /// exactly the table as it was, whatever the other rows left in it.
    #[test]
    fn undo_restores_the_table_as_before_the_row() {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut cells = txn.open_table(CELLS).unwrap();
            for k in [b"a".as_slice(), b"c", b"e"] {
                cells.insert(k, b"before".as_slice()).unwrap();
            }
            let before = contents(&cells);
            let mut log = UndoLog::default();
            // The row: adds b, replaces c twice, removes e, adds and then removes d.
            let writes: [(&[u8], Option<&[u8]>); 6] = [
                (b"b", Some(b"new")),
                (b"c", Some(b"first")),
                (b"c", Some(b"second")),
                (b"e", None),
                (b"d", Some(b"gone")),
                (b"d", None),
            ];
            for (key, value) in writes {
                let old = match value {
                    Some(v) => cells.insert(key, v).unwrap().map(|g| g.value().to_vec()),
                    None => cells.remove(key).unwrap().map(|g| g.value().to_vec()),
                };
                match old {
                    Some(old) => log.replaced(key, &old),
                    None => log.added(key),
                }
            }
            assert_ne!(contents(&cells), before);
            log.undo(&mut cells).unwrap();
            assert_eq!(contents(&cells), before);
            assert!(log.changes.is_empty() && log.bytes.is_empty());
        }
        txn.abort().unwrap();
        let read = db.begin_read().unwrap();
        assert!(read.open_table(CELLS).is_err(), "nothing was committed");
    }
}
