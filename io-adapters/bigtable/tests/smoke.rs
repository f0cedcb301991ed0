#![allow(clippy::unwrap_used)]
//! Round trips through the blocking store against the emulator: admin, every request kind.

mod backends;

use rowkit_codec::model::{ColumnFamily, GcRule, Mutation, RowFilter, RowSet, Timestamp};
use rowkit_statemachines::raw::Unary;
use rowkit_statemachines::readrows::{ReadRow, ReadRows};
use rowkit_statemachines::{
    Code, MutateRowRequest, ReadRowRequest, ReadRowsRequest, Request, RetryPolicy,
};
use rowkit_store::Store;
use rowkit_store::driver::{self, SystemClock};

#[test]
fn admin_and_a_round_trip() {
    let Some(emu) = backends::selected("admin_and_a_round_trip") else {
        return;
    };
    let store = emu.fresh_store();
    let fams = vec![
        ColumnFamily::max_versions("cf", 2),
        ColumnFamily {
            name: "cg".into(),
            gc_rule: Some(GcRule::Union(vec![
                GcRule::MaxAge(86_400_000_000),
                GcRule::MaxNumVersions(5),
            ])),
        },
    ];
    store.create_table("t", &fams).unwrap();
    assert_eq!(
        store.create_table("t", &fams).unwrap_err().code,
        Code::AlreadyExists
    );
    assert_eq!(store.list_tables().unwrap(), vec!["t".to_string()]);
    assert_eq!(store.families("t").unwrap(), fams);
    assert_eq!(store.families("nope").unwrap_err().code, Code::NotFound);
    let set = Mutation::SetCell {
        family: "cf".into(),
        qualifier: b"q".to_vec(),
        timestamp: Timestamp::from_millis(5),
        value: b"v".to_vec(),
    };
    let req = Request::MutateRow(MutateRowRequest {
        table: "t".into(),
        row_key: b"r1".to_vec(),
        mutations: vec![set],
        ..Default::default()
    });
    rowkit_client::run_blocking(&store, &SystemClock, Unary::new(req), |_| {}).unwrap();
    let mut rows = Vec::new();
    let read = ReadRowsRequest {
        table: "t".into(),
        rows: RowSet::all(),
        ..Default::default()
    };
    let m = ReadRows::new(
        read,
        driver::Clock::now(&SystemClock),
        1,
        RetryPolicy::default(),
    );
    rowkit_client::run_blocking(&store, &SystemClock, m, |r| rows.push(r)).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].cells[0].value, b"v");
    // A point read goes out as a one-key ReadRows and comes back as the one row.
    let point = |key: &[u8]| {
        let read = ReadRowRequest {
            table: "t".into(),
            row_key: key.to_vec(),
            filter: Some(RowFilter::CellsPerColumnLimit(1)),
            ..Default::default()
        };
        let now = driver::Clock::now(&SystemClock);
        let m = ReadRow::new(read, now, 1, RetryPolicy::default());
        rowkit_client::run_blocking(&store, &SystemClock, m, |()| {}).unwrap()
    };
    assert_eq!(point(b"r1").as_deref(), Some(&rows[0]));
    assert_eq!(point(b"r2"), None);
    store.delete_table("t").unwrap();
    assert!(store.list_tables().unwrap().is_empty());
}

#[test]
fn dropping_a_family_deletes_its_cells() {
    let Some(emu) = backends::selected("dropping_a_family_deletes_its_cells") else {
        return;
    };
    rowkit_testkit::scenarios::admin::drop_family(&emu.fresh_store(), "drop-family");
}

crate::every_test_on_rowkit_grpc!();
