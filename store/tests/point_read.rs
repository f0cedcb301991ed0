//! The point read (`Request::ReadRow`) on the local stores: it answers what a one-key ReadRows
//! answers — the same row, the same cells, nothing for a missing row or a row the filter
//! empties, dropped families hidden — and takes one request seed as a ReadRows does, so the
//! seeds of the requests after it are where they were. Every test runs on the memory store and
//! on the redb store.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use rowkit_codec::model::{Cell, ColumnFamily, Mutation, Row, RowFilter, RowSet, Timestamp};
use rowkit_statemachines::{Code, MutateRowRequest, ReadRowRequest, ReadRowsRequest, Request};
use rowkit_store::{MemoryStore, RedbStore, Reply, Response, Store};

const TABLE: &str = "t";

/// Both local stores, each with table [`TABLE`] (families `a` and `b`) holding rows `r1`
/// (three versions of `a:x`, two of `a:y`, one of `b:z`) and `r2` (only `b:z`).
fn stores() -> Vec<(&'static str, Box<dyn Store>)> {
    let all: Vec<(&'static str, Box<dyn Store>)> = vec![
        ("memory", Box::new(MemoryStore::new())),
        ("redb", Box::new(RedbStore::in_memory().unwrap())),
    ];
    for (_, store) in &all {
        let families = [ColumnFamily::new("a"), ColumnFamily::new("b")];
        store.create_table(TABLE, &families).unwrap();
        let cells: &[(&[u8], &str, &[u8], i64)] = &[
            (b"r1", "a", b"x", 1),
            (b"r1", "a", b"x", 2),
            (b"r1", "a", b"x", 3),
            (b"r1", "a", b"y", 1),
            (b"r1", "a", b"y", 2),
            (b"r1", "b", b"z", 1),
            (b"r2", "b", b"z", 1),
        ];
        for &(row, family, qualifier, ms) in cells {
            let value = format!("{family}{ms}");
            let set = Mutation::set_cell(family, qualifier, Timestamp::from_millis(ms), value);
            let write = Request::MutateRow(MutateRowRequest {
                table: TABLE.into(),
                row_key: row.to_vec(),
                mutations: vec![set],
                ..Default::default()
            });
            store.execute(write, Timestamp::from_secs(1)).unwrap();
        }
    }
    all
}

/// The point read's answer.
fn point(store: &dyn Store, key: &[u8], filter: Option<RowFilter>) -> Option<Arc<Row>> {
    let request = Request::ReadRow(ReadRowRequest {
        table: TABLE.into(),
        row_key: key.to_vec(),
        filter,
        ..Default::default()
    });
    match store
        .execute_local(request, Timestamp::from_secs(2))
        .unwrap()
    {
        Reply::Unary(Response::Row(row)) => row,
        other => panic!("{other:?}"),
    }
}

/// What a one-key ReadRows answers, as whole rows.
fn scan(store: &dyn Store, key: &[u8], filter: Option<RowFilter>) -> Vec<Arc<Row>> {
    let request = Request::ReadRows(ReadRowsRequest {
        table: TABLE.into(),
        rows: RowSet::key(key.to_vec()),
        filter,
        ..Default::default()
    });
    let Reply::Stream(parts) = store
        .execute_local(request, Timestamp::from_secs(2))
        .unwrap()
    else {
        panic!("ReadRows is a stream")
    };
    parts
        .flat_map(|part| match part.unwrap() {
            Response::Rows(rows) => rows,
            other => panic!("{other:?}"),
        })
        .collect()
}

fn filters() -> Vec<Option<RowFilter>> {
    vec![
        None,
        Some(RowFilter::CellsPerColumnLimit(1)),
        Some(RowFilter::CellsPerColumnLimit(2)),
        Some(RowFilter::Chain(vec![
            RowFilter::FamilyNameRegex("a".into()),
            RowFilter::CellsPerColumnLimit(1),
        ])),
        Some(RowFilter::ColumnQualifierRegex(b"y".to_vec())),
        Some(RowFilter::BlockAll),
    ]
}

#[test]
fn a_point_read_answers_what_a_one_key_read_rows_answers() {
    for (name, store) in stores() {
        for key in [&b"r1"[..], b"r2", b"missing"] {
            for filter in filters() {
                let got = point(store.as_ref(), key, filter.clone());
                let want = scan(store.as_ref(), key, filter.clone());
                assert_eq!(
                    got.into_iter().collect::<Vec<_>>(),
                    want,
                    "{name} {key:?} {filter:?}"
                );
            }
        }
    }
}

/// The newest cell of each column, as the engine limits it: the cells written above.
#[test]
fn latest_one_is_the_newest_cell_of_each_column() {
    for (name, store) in stores() {
        let row = point(
            store.as_ref(),
            b"r1",
            Some(RowFilter::CellsPerColumnLimit(1)),
        )
        .unwrap();
        let cell = |family: &str, qualifier: &[u8], ms: i64| Cell {
            family: family.into(),
            qualifier: qualifier.to_vec(),
            timestamp: Timestamp::from_millis(ms),
            value: format!("{family}{ms}").into_bytes(),
            labels: Vec::new(),
        };
        let want = vec![cell("a", b"x", 3), cell("a", b"y", 2), cell("b", b"z", 1)];
        assert_eq!(row.cells, want, "{name}");
    }
}

#[test]
fn dropped_families_are_hidden_and_errors_are_those_of_a_read() {
    for (name, store) in stores() {
        store.drop_family(TABLE, "b").unwrap();
        assert_eq!(
            point(store.as_ref(), b"r2", None),
            None,
            "{name}: only b was there"
        );
        let r1 = point(
            store.as_ref(),
            b"r1",
            Some(RowFilter::CellsPerColumnLimit(1)),
        )
        .unwrap();
        assert!(r1.cells.iter().all(|c| c.family == "a"), "{name}");

        let read = |table: &str, key: &[u8]| {
            let request = Request::ReadRow(ReadRowRequest {
                table: table.into(),
                row_key: key.to_vec(),
                ..Default::default()
            });
            store
                .execute_local(request, Timestamp::from_secs(2))
                .unwrap_err()
                .code
        };
        assert_eq!(read("nope", b"r1"), Code::NotFound, "{name}");
        assert_eq!(read(TABLE, b""), Code::InvalidArgument, "{name}");
    }
}

/// A point read takes one request seed, as a ReadRows does: a sampling read after it draws the
/// same rows whichever of the two came first.
#[test]
fn a_point_read_takes_the_seed_a_read_rows_takes() {
    let sampled = |first_is_point: bool| {
        let store = MemoryStore::new();
        store
            .create_table(TABLE, &[ColumnFamily::new("a")])
            .unwrap();
        for i in 0..64u8 {
            let write = Request::MutateRow(MutateRowRequest {
                table: TABLE.into(),
                row_key: vec![b'k', i],
                mutations: vec![Mutation::set_cell("a", b"q", Timestamp(0), vec![i])],
                ..Default::default()
            });
            store.execute(write, Timestamp(0)).unwrap();
        }
        if first_is_point {
            point(&store, b"k\x00", None);
        } else {
            scan(&store, b"k\x00", None);
        }
        let request = Request::ReadRows(ReadRowsRequest {
            table: TABLE.into(),
            filter: Some(RowFilter::RowSample(0.5)),
            ..Default::default()
        });
        let Reply::Stream(parts) = store.execute_local(request, Timestamp(0)).unwrap() else {
            panic!()
        };
        parts
            .flat_map(|part| match part.unwrap() {
                Response::Rows(rows) => rows.iter().map(|r| r.key.clone()).collect::<Vec<_>>(),
                other => panic!("{other:?}"),
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(sampled(true), sampled(false));
}
