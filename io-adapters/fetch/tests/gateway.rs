//! The fetch driver against the gateway the harness started (`wasm/test.sh`; URL baked in at
//! compile time): raw writes and a streamed, resumable read, error statuses decoded from the
//! gateway's JSON bodies (readable across origins in the browser only if the gateway sends CORS
//! headers on errors), and cancellation through an `AbortSignal`. Node and headless Chromium.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used, missing_docs)]
// Without the harness's URLs the tests must fail (not skip), at run time with a clear message.
#![allow(clippy::option_env_unwrap)]

use rowkit_codec::model::{Mutation, RowRange, RowSet, Timestamp};
use rowkit_embedded::driver::RunError;
use rowkit_fetch::{Gateway, now, run};
use rowkit_statemachines::raw::MutateRows;
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    Code, MutateRowsEntry, MutateRowsRequest, ReadRowsRequest, RetryPolicy, StoreError,
};
use wasm_bindgen_test::*;

fn gateway() -> Gateway {
    Gateway::new(
        option_env!("ROWKIT_TEST_GATEWAY")
            .expect("ROWKIT_TEST_GATEWAY is not set: run the wasm tests with wasm/test.sh"),
    )
}

/// The harness sets up `objmeta` (families `d` and `f`) on the served store.
const TABLE: &str = "objmeta";

fn set(q: &str, value: Vec<u8>) -> Mutation {
    Mutation::SetCell {
        family: "d".into(),
        qualifier: q.as_bytes().to_vec(),
        timestamp: Timestamp::from_millis(1),
        value,
    }
}

#[wasm_bindgen_test]
async fn writes_then_streams_rows_back() {
    let gw = gateway();
    let prefix = format!("fetch-{}-", js_sys::Date::now() as u64);
    // 300 rows of 2 KiB: a body of ~800 KiB arrives in many network chunks.
    let entries: Vec<MutateRowsEntry> = (0..300)
        .map(|i| MutateRowsEntry {
            row_key: format!("{prefix}{i:04}").into_bytes(),
            mutations: vec![
                set("v", vec![b'x'; 2048]),
                set("n", i.to_string().into_bytes()),
            ],
        })
        .collect();
    let request = MutateRowsRequest {
        table: TABLE.into(),
        entries,
        ..Default::default()
    };
    let m = MutateRows::new(request, now(), 1, RetryPolicy::default());
    let results = run(&gw, m, |()| {}, None).await.unwrap();
    assert_eq!(results.len(), 300);
    assert!(results.iter().all(|r| r.result.is_ok()));

    let read = ReadRowsRequest {
        table: TABLE.into(),
        rows: RowSet {
            row_keys: vec![],
            row_ranges: vec![RowRange::prefix(prefix.as_bytes())],
        },
        rows_limit: 250,
        ..Default::default()
    };
    let mut rows = Vec::new();
    let m = ReadRows::new(read, now(), 2, RetryPolicy::default());
    run(&gw, m, |row| rows.push(row), None).await.unwrap();
    assert_eq!(rows.len(), 250, "rows_limit honoured");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row.key, format!("{prefix}{i:04}").into_bytes());
        assert_eq!(row.cells.len(), 2);
        assert_eq!(row.cells[1].value.len(), 2048);
    }
}

#[wasm_bindgen_test]
async fn missing_table_is_not_found_from_the_json_error_body() {
    let read = ReadRowsRequest {
        table: "no-such-table".into(),
        ..Default::default()
    };
    let m = ReadRows::new(read, now(), 3, RetryPolicy::default());
    let err = run(&gateway(), m, |_| {}, None).await.unwrap_err();
    match err {
        RunError::Machine(StoreError { code, .. }) => assert_eq!(code, Code::NotFound),
        other => panic!("{other:?}"),
    }
}

#[wasm_bindgen_test]
async fn unreachable_gateway_is_unavailable() {
    // Port 9 (discard) on loopback: nothing listens, the fetch rejects. The ReadRows machine
    // retries UNAVAILABLE until its deadline, so give it a short one.
    let gw = Gateway::new("http://127.0.0.1:9");
    let read = ReadRowsRequest {
        table: TABLE.into(),
        ..Default::default()
    };
    let policy = RetryPolicy {
        operation_timeout: 300_000,
        ..RetryPolicy::default()
    };
    let m = ReadRows::new(read, now(), 4, policy);
    let err = run(&gw, m, |_| {}, None).await.unwrap_err();
    let RunError::Machine(e) = err else {
        panic!("stalled")
    };
    assert!(
        matches!(e.code, Code::Unavailable | Code::DeadlineExceeded),
        "{e:?}"
    );
}

#[wasm_bindgen_test]
async fn an_aborted_signal_cancels_the_operation() {
    let controller = web_sys::AbortController::new().unwrap();
    controller.abort();
    let read = ReadRowsRequest {
        table: TABLE.into(),
        ..Default::default()
    };
    let m = ReadRows::new(read, now(), 5, RetryPolicy::default());
    let err = run(&gateway(), m, |_| {}, Some(&controller.signal()))
        .await
        .unwrap_err();
    let RunError::Machine(e) = err else {
        panic!("stalled")
    };
    assert_eq!(e.code, Code::Cancelled, "{e:?}");
}
