#![allow(clippy::unwrap_used)]
//! `Store::gc_page` (garbage collection in bounded steps, as a server runs it in the
//! background): paging by hand-counted expectations, and GC beside writers on the memory store
//! and on a redb file, where no acknowledged write may be lost.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rowkit_codec::model::{ColumnFamily, GcRule, Mutation, Row, RowSet, Timestamp};
use rowkit_store::{GcPage, MemoryStore, RedbStore, Reply, Store};
use rowkit_statemachines::{MutateRowRequest, ReadRowsRequest, Request, Response};

const TABLE: &str = "t";

fn set(family: &str, qualifier: &[u8], millis: i64, value: &[u8]) -> Mutation {
    Mutation::SetCell {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        timestamp: Timestamp::from_millis(millis),
        value: value.to_vec(),
    }
}

fn mutate(store: &dyn Store, key: &[u8], mutations: Vec<Mutation>) {
    let request = Request::MutateRow(MutateRowRequest {
        table: TABLE.into(),
        row_key: key.to_vec(),
        mutations,
        ..Default::default()
    });
    let reply = store.execute(request, Timestamp::from_secs(1)).unwrap();
    assert!(matches!(reply, Reply::Unary(Response::MutateRow)));
}

fn rows(store: &dyn Store) -> Vec<Row> {
    read(store, RowSet::all())
}

fn read(store: &dyn Store, rows: RowSet) -> Vec<Row> {
    let request = Request::ReadRows(ReadRowsRequest {
        table: TABLE.into(),
        rows,
        ..Default::default()
    });
    match store
        .execute_local(request, Timestamp::from_secs(1))
        .unwrap()
    {
        Reply::Stream(parts) => parts
            .flat_map(|part| match part.unwrap() {
                Response::Rows(rows) => rows
                    .into_iter()
                    .map(Arc::unwrap_or_clone)
                    .collect::<Vec<_>>(),
                other => panic!("unexpected part {other:?}"),
            })
            .collect(),
        Reply::Unary(other) => panic!("unexpected reply {other:?}"),
    }
}

fn temp_redb(name: &str) -> (std::path::PathBuf, RedbStore) {
    let path = std::env::temp_dir().join(format!("rowkit-gc-{name}-{}.redb", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let store = RedbStore::open(&path).unwrap();
    (path, store)
}

/// Five rows, each with 3 versions of `v:q` (max 1 version) and 2 of `keep:q` (no rule):
/// pages of 2 rows delete 2 cells per row, and the keys continue where the last page ended.
fn pages_walk_the_table(store: &dyn Store) {
    store
        .create_table(
            TABLE,
            &[
                ColumnFamily::max_versions("v", 1),
                ColumnFamily::new("keep"),
            ],
        )
        .unwrap();
    for r in 0..5u8 {
        let key = [b'r', b'0' + r];
        mutate(
            store,
            &key,
            vec![
                set("v", b"q", 1, b"a"),
                set("v", b"q", 2, b"b"),
                set("v", b"q", 3, b"c"),
                set("keep", b"q", 1, b"a"),
                set("keep", b"q", 2, b"b"),
            ],
        );
    }
    let now = Timestamp::from_secs(10);
    let first = store.gc_page(TABLE, None, 2, now).unwrap();
    assert_eq!(
        first,
        GcPage {
            deleted: 4,
            rows: 2,
            next_after: Some(b"r1".to_vec())
        }
    );
    let second = store.gc_page(TABLE, Some(b"r1"), 2, now).unwrap();
    assert_eq!(second.deleted, 4);
    assert_eq!(second.next_after.as_deref(), Some(&b"r3"[..]));
    // The last row, then the end of the table: no key to continue from.
    let third = store.gc_page(TABLE, Some(b"r3"), 2, now).unwrap();
    assert_eq!((third.deleted, third.rows), (2, 1));
    assert_eq!(third.next_after, None);
    for row in rows(store) {
        let versions = |family: &str| row.cells.iter().filter(|c| c.family == family).count();
        assert_eq!(
            (versions("v"), versions("keep")),
            (1, 2),
            "row {:?}",
            row.key
        );
        let newest = row.cells.iter().find(|c| c.family == "v").unwrap();
        assert_eq!(newest.value, b"c");
    }
    // Nothing left to collect; a table without any GC rule is done at once.
    assert_eq!(store.gc(TABLE, now).unwrap(), 0);
    store
        .create_table("norule", &[ColumnFamily::new("cf")])
        .unwrap();
    assert_eq!(
        store.gc_page("norule", None, 2, now).unwrap(),
        GcPage::default()
    );
    assert_eq!(
        store.gc_page("missing", None, 2, now).unwrap_err().code,
        rowkit_statemachines::Code::NotFound
    );
}

#[test]
fn gc_pages_walk_the_table_on_memory_store() {
    pages_walk_the_table(&MemoryStore::new());
}

#[test]
fn gc_pages_walk_the_table_on_redb_file() {
    let (path, store) = temp_redb("pages");
    pages_walk_the_table(&store);
    drop(store);
    std::fs::remove_file(path).unwrap();
}

/// The timestamp (ms) of the newest acknowledged write, per (row key, family).
type Acked = BTreeMap<(Vec<u8>, String), i64>;

const WRITERS: usize = 4;
const ROWS_PER_WRITER: usize = 4;
const WRITES_PER_WRITER: i64 = 1_500;

/// Writers keep writing new versions (increasing timestamps) of two columns of their own rows,
/// in families collected beyond 1 version and beyond 2 versions (as an intersection), while
/// GC pages of 3 rows walk the table again and again (version rules only: an age rule removes
/// even a column's newest cell, as Bigtable's does). Before each write, and when they stop,
/// every write a writer saw acknowledged must still be the newest of its column (or a newer
/// one must be); a last pass then leaves exactly what the rules keep.
fn gc_beside_writers(store: Arc<dyn Store>) {
    store
        .create_table(
            TABLE,
            &[
                ColumnFamily::max_versions("one", 1),
                // Intersection: only cells beyond 2 versions AND older than 1 ms (all of them).
                ColumnFamily {
                    name: "two".into(),
                    gc_rule: Some(GcRule::Intersection(vec![
                        GcRule::MaxNumVersions(2),
                        GcRule::MaxAge(1_000),
                    ])),
                },
            ],
        )
        .unwrap();
    // (row, family) -> the timestamp (ms) of the newest acknowledged write.
    let acked: Arc<Mutex<Acked>> = Arc::default();
    let writing = Arc::new(AtomicBool::new(true));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            let acked = acked.clone();
            std::thread::spawn(move || {
                // What this writer saw acknowledged, per (row, family): its rows are its own.
                let mut mine = Acked::new();
                for ms in 1..=WRITES_PER_WRITER {
                    let row = format!("row{:02}", w * ROWS_PER_WRITER + ms as usize % ROWS_PER_WRITER)
                        .into_bytes();
                    // Every write acknowledged so far is still the newest of its column, or a
                    // newer one is: checked before each write, so a write lost at any moment
                    // of the run shows, not only one lost at the end.
                    let cells = read(&*store, RowSet::key(row.clone()));
                    for ((key, family), acked_ms) in mine.range((row.clone(), String::new())..) {
                        if *key != row {
                            break;
                        }
                        let newest = cells
                            .iter()
                            .flat_map(|r| &r.cells)
                            .filter(|c| &c.family == family)
                            .map(|c| c.timestamp.0 / 1000)
                            .max();
                        assert!(
                            newest >= Some(*acked_ms),
                            "write {acked_ms} ms to {family} of {row:?} was lost (newest {newest:?})"
                        );
                    }
                    let family = if ms % 3 == 0 { "two" } else { "one" };
                    let value = format!("{w}-{ms}");
                    mutate(&*store, &row, vec![set(family, b"q", ms, value.as_bytes())]);
                    mine.insert((row.clone(), family.to_string()), ms);
                    acked.lock().unwrap().insert((row, family.to_string()), ms);
                }
            })
        })
        .collect();
    let collector = {
        let store = store.clone();
        let writing = writing.clone();
        std::thread::spawn(move || {
            let mut deleted = 0u64;
            let mut after: Option<Vec<u8>> = None;
            while writing.load(Ordering::Acquire) {
                let page = store
                    .gc_page(TABLE, after.as_deref(), 3, Timestamp::from_secs(10))
                    .unwrap();
                deleted += page.deleted;
                after = page.next_after;
            }
            deleted
        })
    };
    for writer in writers {
        writer.join().unwrap();
    }
    writing.store(false, Ordering::Release);
    let deleted_beside_writers = collector.join().unwrap();
    assert!(
        deleted_beside_writers > 0,
        "GC ran beside the writers but collected nothing"
    );
    let acked = acked.lock().unwrap().clone();
    let newest = |rows: &[Row]| -> Acked {
        let mut out = BTreeMap::new();
        for row in rows {
            for cell in &row.cells {
                let ms = cell.timestamp.0 / 1000;
                let entry = out
                    .entry((row.key.clone(), cell.family.clone()))
                    .or_insert(ms);
                *entry = (*entry).max(ms);
            }
        }
        out
    };
    assert_eq!(
        newest(&rows(&*store)),
        acked,
        "an acknowledged write was lost"
    );
    store.gc(TABLE, Timestamp::from_secs(10)).unwrap();
    let after = rows(&*store);
    assert_eq!(newest(&after), acked);
    for row in &after {
        let versions = |family: &str| row.cells.iter().filter(|c| c.family == family).count();
        assert_eq!(versions("one"), 1, "row {:?}", row.key);
        assert!(versions("two") <= 2, "row {:?}", row.key);
    }
}

#[test]
fn gc_beside_writers_on_memory_store() {
    gc_beside_writers(Arc::new(MemoryStore::new()));
}

#[test]
fn gc_beside_writers_on_redb_file() {
    let (path, store) = temp_redb("writers");
    gc_beside_writers(Arc::new(store.with_durable_commits(false)));
    std::fs::remove_file(path).unwrap();
}
