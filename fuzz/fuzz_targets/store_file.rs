//! The embedded store's file format against damaged files: a small valid store file (made once
//! by the target: two tables, rows of several sizes, a row deleted) has bytes flipped, zeroed,
//! overwritten or cut off per the input, then is opened (read-write or read-only) and used as
//! the commands use it: list the tables, dump every table (every row with its cells), walk
//! every table's row index as `check` does, back the store up (before and after the write),
//! and write one row. Each call may fail (a damaged
//! file answers `DATA_LOSS`, or an error for a file that is no store at all), but no panic may
//! escape and nothing may abort: a panic inside redb must be contained by the store.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use rowkit_codec::model::{ColumnFamily, Mutation, RowRange, Timestamp};
use rowkit_statemachines::{MutateRowRequest, Request};
use rowkit_store::{RedbStore, Store, TableStorage};

/// Rows per table: enough for each table's cells to span several pages.
const ROWS: usize = 40;

/// The path of this process's scratch store file (libFuzzer may run several processes).
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rowkit-fuzz-{name}-{}.redb", std::process::id()))
}

fn set(table: &str, row: &[u8], family: &str, value: &[u8]) -> Request {
    Request::MutateRow(MutateRowRequest {
        table: table.into(),
        row_key: row.to_vec(),
        mutations: vec![Mutation::SetCell {
            family: family.into(),
            qualifier: b"q".to_vec(),
            timestamp: Timestamp::from_millis(1),
            value: value.to_vec(),
        }],
        ..Default::default()
    })
}

/// The bytes of the valid store file every input starts from, made on first use.
fn valid_file() -> &'static [u8] {
    static FILE: OnceLock<Vec<u8>> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = scratch("seed");
        let _ = std::fs::remove_file(&path);
        {
            let store = RedbStore::open(&path)
                .expect("a fresh store opens")
                .with_durable_commits(false);
            Store::create_table(&store, "t1", &[ColumnFamily::new("cf")]).expect("create t1");
            Store::create_table(
                &store,
                "t2",
                &[ColumnFamily::new("cf"), ColumnFamily::max_versions("g", 2)],
            )
            .expect("create t2");
            let now = Timestamp::from_secs(1);
            for i in 0..ROWS {
                let row = format!("row{i:03}");
                let value = vec![b'a' + (i % 26) as u8; 16 + i * 7];
                store
                    .execute(set("t1", row.as_bytes(), "cf", &value), now)
                    .expect("write t1");
                store
                    .execute(set("t2", row.as_bytes(), ["cf", "g"][i % 2], b"v"), now)
                    .expect("write t2");
            }
            let delete = Request::MutateRow(MutateRowRequest {
                table: "t1".into(),
                row_key: b"row007".to_vec(),
                mutations: vec![Mutation::DeleteFromRow],
                ..Default::default()
            });
            store.execute(delete, now).expect("delete a row");
        }
        let bytes = std::fs::read(&path).expect("read the seed file");
        let _ = std::fs::remove_file(&path);
        bytes
    })
}

/// One change to the file's bytes.
#[derive(Arbitrary, Debug)]
enum Damage {
    /// XOR `mask` into the byte at `at`.
    Flip { at: u32, mask: u8 },
    /// Zero `len` bytes from `at`.
    Zero { at: u32, len: u16 },
    /// Overwrite bytes from `at`.
    Write { at: u32, bytes: Vec<u8> },
    /// Cut the file at `at`.
    Truncate { at: u32 },
}

impl Damage {
    fn apply(&self, file: &mut Vec<u8>) {
        let len = file.len().max(1);
        match self {
            Damage::Flip { at, mask } => {
                if let Some(b) = file.get_mut(*at as usize % len) {
                    *b ^= mask | 1;
                }
            }
            Damage::Zero { at, len: n } => {
                let start = (*at as usize % len).min(file.len());
                let end = (start + usize::from(*n)).min(file.len());
                file[start..end].fill(0);
            }
            Damage::Write { at, bytes } => {
                let start = (*at as usize % len).min(file.len());
                let end = (start + bytes.len()).min(file.len());
                file[start..end].copy_from_slice(&bytes[..end - start]);
            }
            Damage::Truncate { at } => file.truncate(*at as usize % len),
        }
    }
}

/// Every row of `table`, cells included (`admin dump`); stops at the first error.
fn dump(store: &RedbStore, table: &str) {
    let all = RowRange::all();
    let mut after: Option<Vec<u8>> = None;
    // Bounded: the file holds ROWS rows per table; a damaged index must not loop forever.
    for _ in 0..=2 * ROWS {
        match store.next_row(table, &all, after.as_deref(), false) {
            Ok(Some(row)) => after = Some(row.key),
            Ok(None) | Err(_) => return,
        }
    }
}

/// Every entry of `table`'s row index with its size, as a check's scan reads it.
fn walk_index(store: &RedbStore, table: &str) {
    let all = RowRange::all();
    let mut after: Option<Vec<u8>> = None;
    for _ in 0..=2 * ROWS {
        match store.next_row_size(table, &all, after.as_deref()) {
            Ok(Some((key, _size))) => after = Some(key),
            Ok(None) | Err(_) => return,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let read_only = u.arbitrary::<bool>().unwrap_or(false);
    let mut file = valid_file().to_vec();
    for _ in 0..u.int_in_range(1..=8u8).unwrap_or(1) {
        match u.arbitrary::<Damage>() {
            Ok(damage) => damage.apply(&mut file),
            Err(_) => break,
        }
    }
    let path = scratch("input");
    std::fs::write(&path, &file).expect("write the damaged file");
    let opened = if read_only {
        RedbStore::open_read_only(&path)
    } else {
        RedbStore::open(&path).map(|s| s.with_durable_commits(false))
    };
    if let Ok(store) = opened {
        let tables = TableStorage::list_tables(&store).unwrap_or_default();
        for table in &tables {
            let _ = TableStorage::families(&store, table);
            dump(&store, table);
            walk_index(&store, table);
        }
        // A backup reads every table from one snapshot into a new file: damage makes it fail,
        // never panic.
        let backup = scratch("backup");
        let _ = Store::backup_to(&store, &backup, true);
        let now = Timestamp::from_secs(2);
        let _ = store.execute(set("t1", b"row003", "cf", b"new"), now);
        let _ = store.execute(set("t2", b"new", "g", b"new"), now);
        // After the write the reads go on where they can.
        dump(&store, "t2");
        let _ = Store::backup_to(&store, &backup, true);
        let _ = std::fs::remove_file(&backup);
    }
    let _ = std::fs::remove_file(&path);
});
