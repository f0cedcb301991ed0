//! Table administration over any [`Store`]: dropping a column family (`ModifyColumnFamilies`
//! with `drop`, what `cbt deletefamily` sends), on the memory and redb stores, the Bigtable
//! emulator and `rowkit serve --grpc`.

use rowkit_codec::model::{ColumnFamily, Mutation, Row, RowSet, Timestamp};
use rowkit_store::Store;
use rowkit_store::driver::SystemClock;
use rowkit_statemachines::raw::{Collect, Unary};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    Code, MutateRowsEntry, MutateRowsRequest, ReadRowsRequest, Request, RetryPolicy,
};

/// A cell as the scenario compares it: its family and value.
type FamilyValue = (String, Vec<u8>);

/// Rows holding only the dropped family: more than one batch of the local stores' drop.
const ONLY_DROPPED: usize = 1_500;

fn set(family: &str, value: &[u8]) -> Mutation {
    Mutation::SetCell {
        family: family.into(),
        qualifier: b"q".to_vec(),
        timestamp: Timestamp::from_millis(1),
        value: value.to_vec(),
    }
}

/// Writes `rows` (key, mutations) in one MutateRows; every entry must apply.
fn write(store: &dyn Store, table: &str, rows: Vec<(Vec<u8>, Vec<Mutation>)>) {
    let entries = rows
        .into_iter()
        .map(|(row_key, mutations)| MutateRowsEntry { row_key, mutations })
        .collect();
    let request = Request::MutateRows(MutateRowsRequest {
        table: table.into(),
        entries,
        ..Default::default()
    });
    let results = rowkit_client::run_blocking(store, &SystemClock, Collect::new(request), |_| {})
        .unwrap_or_else(|e| panic!("MutateRows on {table}: {e:?}"));
    for part in results {
        if let rowkit_statemachines::Response::MutateRowsPart(part) = part {
            for entry in part.entries {
                if let Err(e) = entry.result {
                    panic!("MutateRows entry {} on {table}: {e}", entry.index);
                }
            }
        }
    }
}

/// Every row of `table`, read through the ReadRows machine.
fn rows(store: &dyn Store, table: &str) -> Vec<Row> {
    let read = ReadRowsRequest {
        table: table.into(),
        rows: RowSet::all(),
        ..Default::default()
    };
    let now = rowkit_store::driver::Clock::now(&SystemClock);
    let machine = ReadRows::new(read, now, 7, RetryPolicy::default());
    let mut rows = Vec::new();
    rowkit_client::run_blocking(store, &SystemClock, machine, |row| rows.push(row))
        .unwrap_or_else(|e| panic!("reading {table}: {e:?}"));
    rows
}

/// Drops family `a` of a table whose rows hold `a` only, `b` only, or both: the family leaves
/// the schema, every `a` cell goes, rows left without a cell stop existing, and the other
/// family's cells stay. Dropping it again, or from a missing table, is `NOT_FOUND`; a write to
/// it is refused; re-creating it brings back no old cell. Creates and deletes table `table`.
pub fn drop_family(store: &dyn Store, table: &str) {
    let families = vec![ColumnFamily::new("a"), ColumnFamily::max_versions("b", 2)];
    store
        .create_table(table, &families)
        .expect("create the table");
    let mut setup = vec![
        (b"both".to_vec(), vec![set("a", b"a1"), set("b", b"b1")]),
        (b"only-b".to_vec(), vec![set("b", b"b2")]),
    ];
    setup.extend(
        (0..ONLY_DROPPED).map(|i| (format!("only-a-{i:05}").into_bytes(), vec![set("a", b"x")])),
    );
    write(store, table, setup);
    assert_eq!(rows(store, table).len(), ONLY_DROPPED + 2);

    store.drop_family(table, "a").expect("drop family a");
    assert_eq!(
        store.families(table).expect("families"),
        vec![families[1].clone()]
    );
    let left = rows(store, table);
    let shown: Vec<(Vec<u8>, Vec<FamilyValue>)> = left
        .iter()
        .map(|r| {
            let cells = r
                .cells
                .iter()
                .map(|c| (c.family.clone(), c.value.clone()))
                .collect();
            (r.key.clone(), cells)
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            (b"both".to_vec(), vec![("b".to_string(), b"b1".to_vec())]),
            (b"only-b".to_vec(), vec![("b".to_string(), b"b2".to_vec())]),
        ],
        "after dropping family a"
    );

    let err = store
        .drop_family(table, "a")
        .expect_err("dropping family a twice");
    assert_eq!(err.code, Code::NotFound, "dropping a dropped family: {err}");
    let err = store
        .drop_family("no-such-table", "a")
        .expect_err("dropping from a missing table");
    assert_eq!(
        err.code,
        Code::NotFound,
        "dropping from a missing table: {err}"
    );
    let request = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
        table: table.into(),
        row_key: b"both".to_vec(),
        mutations: vec![set("a", b"late")],
        ..Default::default()
    });
    let refused = rowkit_client::run_blocking(store, &SystemClock, Unary::new(request), |_| {});
    assert!(refused.is_err(), "a write to a dropped family was accepted");

    store
        .set_family(table, &ColumnFamily::new("a"))
        .expect("re-create family a");
    assert_eq!(
        rows(store, table),
        left,
        "re-creating family a brought cells back"
    );
    store.delete_table(table).expect("delete the table");
}
