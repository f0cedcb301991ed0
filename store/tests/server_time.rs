//! Server time on the local stores (`Store::execute`): a `-1` cell, a read-modify-write cell and
//! a `-1` cell of a CheckAndMutateRow are stamped inside the row's transaction with
//! `max(floor_ms(now), the last server time the store stamped)`, as Bigtable stamps at apply
//! time. A write applied later therefore never gets an earlier stamp than one applied before it,
//! even when its caller read an earlier `now`; sequential calls with increasing `now` still get
//! exactly `floor_ms(now)`. Every test runs on the memory store and on the redb store.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicI64, Ordering};

use rowkit_codec::model::{
    Cell, ColumnFamily, Mutation, ReadModifyWriteRule, Row, RowFilter, RowSet, RuleOp, Timestamp,
};
use rowkit_store::{MemoryStore, RedbStore, Reply, Response, Store};
use rowkit_statemachines::{
    CheckAndMutateRowRequest, MutateRowRequest, MutateRowsEntry, MutateRowsRequest,
    ReadModifyWriteRowRequest, ReadRowsRequest, Request, SplitMix64,
};

const TABLE: &str = "t";
const MS: i64 = 1000;

/// Both local stores, each with table [`TABLE`] (family `cf`, no GC).
fn stores() -> Vec<(&'static str, Box<dyn Store>)> {
    let all: Vec<(&'static str, Box<dyn Store>)> = vec![
        ("memory", Box::new(MemoryStore::new())),
        ("redb", Box::new(RedbStore::in_memory().unwrap())),
    ];
    for (_, store) in &all {
        store
            .create_table(TABLE, &[ColumnFamily::new("cf")])
            .unwrap();
    }
    all
}

fn set(qualifier: &str, timestamp: Timestamp, value: &[u8]) -> Mutation {
    Mutation::SetCell {
        family: "cf".into(),
        qualifier: qualifier.as_bytes().to_vec(),
        timestamp,
        value: value.to_vec(),
    }
}

/// A unary reply's response, or a stream's parts collected.
fn answer(reply: Reply<'_>) -> Vec<Response> {
    match reply {
        Reply::Unary(r) => vec![r],
        Reply::Stream(parts) => parts.map(|p| p.unwrap()).collect(),
    }
}

fn mutate(store: &dyn Store, key: &str, mutations: Vec<Mutation>, now: Timestamp) {
    let request = Request::MutateRow(MutateRowRequest {
        table: TABLE.into(),
        row_key: key.as_bytes().to_vec(),
        mutations,
        ..Default::default()
    });
    answer(store.execute(request, now).unwrap());
}

fn increment(store: &dyn Store, key: &str, columns: &[&str], now: Timestamp) -> Row {
    let request = Request::ReadModifyWriteRow(ReadModifyWriteRowRequest {
        table: TABLE.into(),
        row_key: key.as_bytes().to_vec(),
        rules: columns
            .iter()
            .map(|q| ReadModifyWriteRule {
                family: "cf".into(),
                qualifier: q.as_bytes().to_vec(),
                op: RuleOp::IncrementAmount(1),
            })
            .collect(),
        ..Default::default()
    });
    match answer(store.execute(request, now).unwrap()).pop() {
        Some(Response::ReadModifyWriteRow(row)) => row,
        other => panic!("not a read-modify-write answer: {other:?}"),
    }
}

/// Every cell of row `key` (all versions), in canonical order.
fn cells(store: &dyn Store, key: &str) -> Vec<Cell> {
    let read = |filter| ReadRowsRequest {
        table: TABLE.into(),
        rows: RowSet::key(key.as_bytes()),
        filter,
        ..Default::default()
    };
    let rows = rowkit_client::read_rows_blocking(store, read(None), Timestamp(0)).unwrap();
    rows.into_iter().flat_map(|r| r.cells).collect()
}

/// The timestamp and value of the newest cell of column `cf:qualifier` in row `key`.
fn latest(store: &dyn Store, key: &str, qualifier: &str) -> (Timestamp, Vec<u8>) {
    cells(store, key)
        .into_iter()
        .find(|c| c.qualifier == qualifier.as_bytes())
        .map(|c| (c.timestamp, c.value))
        .unwrap_or_else(|| panic!("no cell cf:{qualifier} in row {key}"))
}

fn cell_ts(row: &Row, qualifier: &str) -> Timestamp {
    row.cells
        .iter()
        .find(|c| c.qualifier == qualifier.as_bytes())
        .map(|c| c.timestamp)
        .unwrap()
}

/// Sequential calls with increasing `now`: every `-1` cell gets exactly `floor_ms(now)`, so a
/// manual clock still determines the timestamps.
#[test]
fn sequential_writes_get_exactly_their_now_truncated_to_ms() {
    for (name, store) in stores() {
        let store = store.as_ref();
        mutate(
            store,
            "r",
            vec![set("a", Timestamp::SERVER_TIME, b"1")],
            Timestamp(10_000_456),
        );
        mutate(
            store,
            "r",
            vec![set("b", Timestamp::SERVER_TIME, b"2")],
            Timestamp(12_000_000),
        );
        let row = increment(store, "r", &["n"], Timestamp(13_999_999));
        assert_eq!(latest(store, "r", "a").0, Timestamp(10_000_000), "{name}");
        assert_eq!(latest(store, "r", "b").0, Timestamp(12_000_000), "{name}");
        assert_eq!(cell_ts(&row, "n"), Timestamp(13_999_000), "{name}");
        // An explicit timestamp is kept as given, and does not move server time.
        mutate(
            store,
            "r",
            vec![set("c", Timestamp(99_000_000), b"3")],
            Timestamp(14_000_000),
        );
        mutate(
            store,
            "r",
            vec![set("d", Timestamp::SERVER_TIME, b"4")],
            Timestamp(15_000_000),
        );
        assert_eq!(latest(store, "r", "c").0, Timestamp(99_000_000), "{name}");
        assert_eq!(latest(store, "r", "d").0, Timestamp(15_000_000), "{name}");
    }
}

/// The race of two callers, played in order: A read the clock at 10 ms and was applied first,
/// B read it at 5 ms and was applied after. B's cell must not be older than A's (with the
/// caller's `now` it was, and `LatestN(1)` showed A's value).
#[test]
fn a_later_write_with_an_earlier_now_is_not_stamped_earlier() {
    for (name, store) in stores() {
        let store = store.as_ref();
        mutate(
            store,
            "r",
            vec![set("v", Timestamp::SERVER_TIME, b"A")],
            Timestamp::from_millis(10),
        );
        mutate(
            store,
            "r",
            vec![set("v", Timestamp::SERVER_TIME, b"B")],
            Timestamp::from_millis(5),
        );
        let (ts, value) = latest(store, "r", "v");
        assert_eq!(
            value, b"B",
            "{name}: the newest version is the one applied last"
        );
        assert_eq!(ts, Timestamp::from_millis(10), "{name}");
        // Same stamp, same column: B replaced A (Bigtable's overwrite of an equal timestamp).
        assert_eq!(cells(store, "r").len(), 1, "{name}");
        // Server time belongs to the store, not to the row: another row follows too.
        mutate(
            store,
            "other",
            vec![set("v", Timestamp::SERVER_TIME, b"C")],
            Timestamp::from_millis(7),
        );
        assert_eq!(
            latest(store, "other", "v").0,
            Timestamp::from_millis(10),
            "{name}"
        );
        // A later `now` moves it on.
        mutate(
            store,
            "r",
            vec![set("v", Timestamp::SERVER_TIME, b"D")],
            Timestamp(11_500_000),
        );
        assert_eq!(
            latest(store, "r", "v"),
            (Timestamp::from_millis(11_500), b"D".to_vec()),
            "{name}"
        );
    }
}

/// ReadModifyWriteRow (a column's new timestamp is the greater of its latest timestamp and the
/// server time), CheckAndMutateRow and MutateRows follow the same server time.
#[test]
fn every_write_kind_follows_the_store_server_time() {
    for (name, store) in stores() {
        let store = store.as_ref();
        mutate(
            store,
            "r",
            vec![set("v", Timestamp::SERVER_TIME, b"A")],
            Timestamp::from_millis(10),
        );
        // A fresh column: its timestamp is server time alone.
        let row = increment(store, "r", &["n"], Timestamp::from_millis(5));
        assert_eq!(
            cell_ts(&row, "n"),
            Timestamp::from_millis(10),
            "{name}: increment"
        );

        let cam = Request::CheckAndMutateRow(CheckAndMutateRowRequest {
            table: TABLE.into(),
            row_key: b"r".to_vec(),
            predicate: None,
            true_mutations: vec![set("v", Timestamp::SERVER_TIME, b"B")],
            false_mutations: vec![],
            ..Default::default()
        });
        answer(store.execute(cam, Timestamp::from_millis(6)).unwrap());
        assert_eq!(
            latest(store, "r", "v"),
            (Timestamp::from_millis(10), b"B".to_vec()),
            "{name}: check-and-mutate"
        );

        mutate(
            store,
            "r",
            vec![set("v", Timestamp::SERVER_TIME, b"C")],
            Timestamp::from_millis(20),
        );
        let batch = Request::MutateRows(MutateRowsRequest {
            table: TABLE.into(),
            entries: ["r", "s"]
                .iter()
                .map(|k| MutateRowsEntry {
                    row_key: k.as_bytes().to_vec(),
                    mutations: vec![set("v", Timestamp::SERVER_TIME, b"D")],
                })
                .collect(),
            ..Default::default()
        });
        answer(store.execute(batch, Timestamp::from_millis(15)).unwrap());
        for key in ["r", "s"] {
            assert_eq!(
                latest(store, key, "v"),
                (Timestamp::from_millis(20), b"D".to_vec()),
                "{name}: mutate rows, row {key}"
            );
        }
    }
}

/// Many threads read a shared clock, dawdle, then write one row. Each write is a
/// read-modify-write of a counter (its new value is the write's place in the apply order) and of
/// a column of its own (whose timestamp is the server time alone): in apply order, the stamps
/// never go back.
#[test]
fn racing_writers_get_stamps_in_apply_order() {
    const THREADS: u64 = 8;
    const WRITES: u64 = 200;
    for (name, store) in stores() {
        let store = store.as_ref();
        let clock = AtomicI64::new(Timestamp::from_secs(1_000).0);
        let stamps = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for th in 0..THREADS {
                let (clock, stamps) = (&clock, &stamps);
                s.spawn(move || {
                    let mut rng = SplitMix64::new(th);
                    for i in 0..WRITES {
                        let now = Timestamp(clock.fetch_add(MS, Ordering::SeqCst));
                        for _ in 0..rng.below(4) {
                            std::thread::yield_now();
                        }
                        let own = format!("w{th}-{i}");
                        let row = increment(store, "r", &["seq", &own], now);
                        let seq = row
                            .cells
                            .iter()
                            .find(|c| c.qualifier == b"seq")
                            .map(|c| i64::from_be_bytes(c.value.clone().try_into().unwrap()))
                            .unwrap();
                        stamps.lock().unwrap().push((seq, cell_ts(&row, &own), now));
                    }
                });
            }
        });
        let mut stamps = stamps.into_inner().unwrap();
        stamps.sort();
        assert_eq!(stamps.len() as u64, THREADS * WRITES, "{name}");
        for pair in stamps.windows(2) {
            let ((a_seq, a_ts, _), (b_seq, b_ts, b_now)) = (pair[0], pair[1]);
            assert!(
                b_ts >= a_ts,
                "{name}: write {b_seq} (now {b_now:?}) applied after write {a_seq} got an earlier stamp: {b_ts:?} < {a_ts:?}"
            );
            assert!(
                b_ts >= b_now.truncate_to_millis(),
                "{name}: below its caller's now"
            );
        }
    }
}

/// An optimistic-concurrency loop on a version cell (as the mount table's `m:v`): read the
/// newest version, write version + 1 with server time only if the newest is still the one
/// read. Threads that read the clock early and write late must not hide a newer version behind
/// an older one, so no two writers ever succeed from the same snapshot.
#[test]
fn version_cell_occ_never_passes_on_a_stale_snapshot() {
    const THREADS: u64 = 6;
    const BUMPS: u64 = 60;
    for (name, store) in stores() {
        let store = store.as_ref();
        mutate(
            store,
            "r",
            vec![set("v", Timestamp::SERVER_TIME, b"0")],
            Timestamp(0),
        );
        let clock = AtomicI64::new(Timestamp::from_secs(1_000).0);
        let won = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for th in 0..THREADS {
                let (clock, won) = (&clock, &won);
                s.spawn(move || {
                    let mut rng = SplitMix64::new(100 + th);
                    let mut mine = 0;
                    while mine < BUMPS {
                        let now = Timestamp(clock.fetch_add(MS, Ordering::SeqCst));
                        let read = ReadRowsRequest {
                            table: TABLE.into(),
                            rows: RowSet::key(b"r".to_vec()),
                            filter: Some(RowFilter::CellsPerColumnLimit(1)),
                            ..Default::default()
                        };
                        let rows = rowkit_client::read_rows_blocking(store, read, now).unwrap();
                        let seen = rows[0].cells[0].value.clone();
                        let n: u64 = String::from_utf8(seen.clone()).unwrap().parse().unwrap();
                        for _ in 0..rng.below(4) {
                            std::thread::yield_now();
                        }
                        let cam = Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                            table: TABLE.into(),
                            row_key: b"r".to_vec(),
                            predicate: Some(RowFilter::Chain(vec![
                                RowFilter::CellsPerColumnLimit(1),
                                RowFilter::ValueRegex(seen),
                            ])),
                            true_mutations: vec![set(
                                "v",
                                Timestamp::SERVER_TIME,
                                (n + 1).to_string().as_bytes(),
                            )],
                            false_mutations: vec![],
                            ..Default::default()
                        });
                        let matched = match answer(store.execute(cam, now).unwrap()).pop() {
                            Some(Response::CheckAndMutateRow { predicate_matched }) => {
                                predicate_matched
                            }
                            other => panic!("not a check-and-mutate answer: {other:?}"),
                        };
                        if matched {
                            won.lock().unwrap().push(n + 1);
                            mine += 1;
                        }
                    }
                });
            }
        });
        let mut won = won.into_inner().unwrap();
        won.sort_unstable();
        let twice: Vec<u64> = won
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| w[0])
            .collect();
        assert!(
            twice.is_empty(),
            "{name}: versions won twice (stale snapshots passed): {twice:?}"
        );
        assert_eq!(won, (1..=THREADS * BUMPS).collect::<Vec<_>>(), "{name}");
        let newest = latest(store, "r", "v").1;
        assert_eq!(newest, (THREADS * BUMPS).to_string().into_bytes(), "{name}");
    }
}
