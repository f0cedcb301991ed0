//! The evaluator's ReadRows scan markers (`last_scanned_row_key` after a long filtered-out
//! stretch) and SampleRowKeys split points, on the memory store and on a redb file (reopened,
//! so split points are shown to persist); expected values are worked out by hand from the row
//! sizes (`spec/bigtable.md` 2: key + per cell family + qualifier + 8 + value).
#![allow(clippy::unwrap_used)]

use rowkit_codec::model::{ColumnFamily, Mutation, RowFilter, RowSet, Timestamp};
use rowkit_statemachines::{
    Code, MutateRowsEntry, MutateRowsRequest, ReadRowsRequest, Request, Response,
    SampleRowKeysRequest,
};
use rowkit_store::semantics::{
    SAMPLE_INTERVAL_BYTES, SCANNED_BYTES_BEFORE_MARKER, SCANNED_ROWS_BEFORE_MARKER,
};
use rowkit_store::{ChunkingOptions, MemoryStore, RedbStore, Reply, Store, StoreOptions};

const NOW: Timestamp = Timestamp(1_700_000_000_000_000);

/// Writes `rows` (key, value of column `cf:q`) with one MutateRows.
fn write(store: &dyn Store, rows: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>) {
    let entries = rows
        .into_iter()
        .map(|(row_key, value)| MutateRowsEntry {
            row_key,
            mutations: vec![Mutation::SetCell {
                family: "cf".into(),
                qualifier: b"q".to_vec(),
                timestamp: Timestamp::from_millis(1),
                value,
            }],
        })
        .collect();
    let request = Request::MutateRows(MutateRowsRequest {
        table: "t".into(),
        entries,
        ..Default::default()
    });
    match store.execute(request, NOW).unwrap() {
        Reply::Stream(parts) => {
            for part in parts {
                let Response::MutateRowsPart(p) = part.unwrap() else {
                    panic!("not a MutateRows part")
                };
                assert!(p.entries.iter().all(|e| e.result.is_ok()));
            }
        }
        Reply::Unary(r) => panic!("{r:?}"),
    }
}

/// What one ReadRows part shows: the keys of its rows (or of its chunks' rows), or a marker.
#[derive(Debug, PartialEq)]
enum Seen {
    Rows(Vec<String>),
    Marker(String),
}

fn text(key: &[u8]) -> String {
    String::from_utf8(key.to_vec()).unwrap()
}

fn read_parts(store: &dyn Store, local: bool, filter: RowFilter) -> Vec<Seen> {
    let request = Request::ReadRows(ReadRowsRequest {
        table: "t".into(),
        rows: RowSet::all(),
        filter: Some(filter),
        ..Default::default()
    });
    let reply = if local {
        store.execute_local(request, NOW)
    } else {
        store.execute(request, NOW)
    };
    let Reply::Stream(parts) = reply.unwrap() else {
        panic!("unary ReadRows")
    };
    parts
        .map(|part| match part.unwrap() {
            Response::Rows(rows) => Seen::Rows(rows.iter().map(|r| text(&r.key)).collect()),
            Response::ReadRowsPart(p) if p.chunks.is_empty() => {
                Seen::Marker(text(&p.last_scanned_row_key))
            }
            Response::ReadRowsPart(p) => {
                assert!(p.last_scanned_row_key.is_empty());
                Seen::Rows(
                    p.chunks
                        .iter()
                        .filter(|c| !c.row_key.is_empty())
                        .map(|c| text(&c.row_key))
                        .collect(),
                )
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

fn table(store: &dyn Store) {
    store.create_table("t", &[ColumnFamily::new("cf")]).unwrap();
}

/// 2 500 rows `k0000`..`k2499`, of which only the first and the last pass the filter.
fn filtered_table(store: &dyn Store) -> RowFilter {
    table(store);
    write(
        store,
        (0..2500).map(|i| {
            let keep = i == 0 || i == 2499;
            let value: &[u8] = if keep { b"keep" } else { b"drop" };
            (format!("k{i:04}").into_bytes(), value.to_vec())
        }),
    );
    RowFilter::ValueRegex(b"keep".to_vec())
}

#[test]
fn a_long_filtered_stretch_sends_scan_markers() {
    assert_eq!(SCANNED_ROWS_BEFORE_MARKER, 1000);
    let rows = |k: &str| Seen::Rows(vec![k.to_string()]);
    let marker = |k: &str| Seen::Marker(k.to_string());
    // k0001..k1000 are the first 1000 dropped rows, k1001..k2000 the next; the 498 before
    // k2499 are too few.
    let expected = vec![
        rows("k0000"),
        marker("k1000"),
        marker("k2000"),
        rows("k2499"),
    ];
    let memory = MemoryStore::new();
    let filter = filtered_table(&memory);
    assert_eq!(read_parts(&memory, true, filter.clone()), expected);
    assert_eq!(read_parts(&memory, false, filter.clone()), expected);
    let redb = RedbStore::in_memory().unwrap();
    filtered_table(&redb);
    assert_eq!(read_parts(&redb, true, filter.clone()), expected);
    // Chunks held for a fuller response go out before the marker, which comes alone.
    let chunked =
        MemoryStore::new().with_options(StoreOptions::default().with_chunking(ChunkingOptions {
            split_values_every: None,
            chunks_per_response: Some(4),
        }));
    filtered_table(&chunked);
    assert_eq!(read_parts(&chunked, false, filter.clone()), expected);
    // The merger takes the markers: the client gets the two rows.
    let read = ReadRowsRequest {
        table: "t".into(),
        rows: RowSet::all(),
        filter: Some(filter),
        ..Default::default()
    };
    let got = rowkit_client::read_rows_blocking(&memory, read, NOW).unwrap();
    let keys: Vec<String> = got.iter().map(|r| text(&r.key)).collect();
    assert_eq!(keys, ["k0000", "k2499"]);
}

#[test]
fn a_marker_also_comes_after_a_mebibyte_of_dropped_rows() {
    assert_eq!(SCANNED_BYTES_BEFORE_MARKER, 1 << 20);
    let store = MemoryStore::new();
    table(&store);
    // Rows of 5 + 2 + 1 + 8 + 2048 = 2064 bytes: the 509th dropped row reaches 1 MiB
    // (508 * 2064 = 1 048 512 < 1 048 576 <= 509 * 2064).
    write(
        &store,
        (0..600).map(|i| (format!("b{i:04}").into_bytes(), vec![b'd'; 2048])),
    );
    let parts = read_parts(&store, true, RowFilter::ValueRegex(b"keep".to_vec()));
    assert_eq!(parts, vec![Seen::Marker("b0508".into())]);
}

fn samples(store: &dyn Store) -> Vec<(String, i64)> {
    let request = Request::SampleRowKeys(SampleRowKeysRequest {
        table: "t".into(),
        ..Default::default()
    });
    let Reply::Stream(parts) = store.execute(request, NOW).unwrap() else {
        panic!("unary SampleRowKeys")
    };
    parts
        .map(|p| match p.unwrap() {
            Response::SampleRowKeysPart(s) => (text(&s.row_key), s.offset_bytes),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Rows `k00`..`k10` of `3 + 2 + 1 + 8 + 30 000 = 30 014` bytes each.
const ROW: i64 = 30_014;

fn sized_rows(store: &dyn Store) {
    write(
        store,
        (0..11).map(|i| (format!("k{i:02}").into_bytes(), vec![b'v'; 30_000])),
    );
}

#[test]
fn samples_every_interval_and_the_last_row() {
    assert_eq!(SAMPLE_INTERVAL_BYTES, 64 * 1024);
    let store = MemoryStore::new();
    table(&store);
    assert_eq!(samples(&store), [(String::new(), 0)]);
    sized_rows(&store);
    // A sample once 65 536 bytes passed since the last: before k03 (90 042), k06, k09; then
    // the last row and the end.
    let s = |k: &str, rows: i64| (k.to_string(), rows * ROW);
    assert_eq!(
        samples(&store),
        [
            s("k03", 3),
            s("k06", 6),
            s("k09", 9),
            s("k10", 10),
            s("", 11)
        ]
    );
}

#[test]
fn initial_splits_are_samples_and_persist() {
    let dir = std::env::temp_dir().join(format!("rowkit-splits-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("db.redb");
    let splits: Vec<Vec<u8>> = ["z", "k055", "a", "k05", "a"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    let s = |k: &str, rows: i64| (k.to_string(), rows * ROW);
    // `a` before every row; k03 by the interval; k05 a row and a split; k055 between rows,
    // which restarts the interval; k09 by the interval; the last row; `z` after every row.
    let expected = [
        s("a", 0),
        s("k03", 3),
        s("k05", 5),
        s("k055", 6),
        s("k09", 9),
        s("k10", 10),
        s("z", 11),
        s("", 11),
    ];
    let memory = MemoryStore::new();
    {
        let redb = RedbStore::open(&path).unwrap();
        for store in [&memory as &dyn Store, &redb] {
            store
                .create_table_with_splits("t", &[ColumnFamily::new("cf")], &splits)
                .unwrap();
            assert_eq!(
                samples(store),
                [s("a", 0), s("k05", 0), s("k055", 0), s("z", 0), s("", 0)]
            );
            sized_rows(store);
            assert_eq!(samples(store), expected);
        }
    }
    let redb = RedbStore::open(&path).unwrap();
    assert_eq!(samples(&redb), expected);
    // A table deleted and created again has no split points left.
    redb.delete_table("t").unwrap();
    table(&redb);
    assert_eq!(samples(&redb), [(String::new(), 0)]);
    drop(redb);
    assert_eq!(
        samples(&RedbStore::open(&path).unwrap()),
        [(String::new(), 0)]
    );
    // An empty key is no split point: refused.
    let err = memory
        .create_table_with_splits("u", &[ColumnFamily::new("cf")], &[Vec::new()])
        .unwrap_err();
    assert_eq!(err.code, Code::InvalidArgument);
    let _ = std::fs::remove_dir_all(&dir);
}
