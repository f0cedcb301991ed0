//! The fetch driver against the gateways the harness started (`wasm/test.sh`; URLs baked in at
//! compile time): raw writes and a streamed, resumable read, error statuses decoded from the
//! gateway's JSON bodies (readable across origins in the browser only if the gateway sends CORS
//! headers on errors), cancellation through an `AbortSignal`, the bearer token of a gateway
//! started with `--token`, and what the driver does on the wire as the harness's proxy
//! (`wasm/tests/harness/observe-proxy.mjs`) sees it: CORS preflights, several requests in flight
//! together, rows handed over before the body ends (`rest-json.md` 8). Node and headless
//! Chromium.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used, missing_docs)]
// Without the harness's URLs the tests must fail (not skip), at run time with a clear message.
#![allow(clippy::option_env_unwrap)]

use std::cell::Cell;
use std::rc::Rc;

use rowkit_client::{FetchDriver, RunError};
use rowkit_codec::model::{Mutation, ReadModifyWriteRule, RowRange, RowSet, RuleOp, Timestamp};
use rowkit_codec::tracestore::Layout;
use rowkit_fetch::{Gateway, now};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::raw::{MutateRows, Unary};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::tracestore::{READ_DEADLINE_MICROS, ReadRange, TraceStoreState};
use rowkit_statemachines::{
    Code, Machine, MutateRowsEntry, MutateRowsRequest, ReadModifyWriteRowRequest, ReadRowsRequest,
    Request, RetryPolicy, StoreError,
};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

/// Runs `machine` over `gw` with the typed API's driving loop, cancelled by `cancel` if given.
async fn run<M: Machine>(
    gw: &Gateway,
    machine: M,
    on_event: impl FnMut(M::Event),
    cancel: Option<&web_sys::AbortSignal>,
) -> Result<M::Output, RunError<M::Error>> {
    let driver = FetchDriver::new(gw.clone());
    match cancel {
        Some(signal) => {
            rowkit_client::run_until(&driver, machine, on_event, rowkit_fetch::aborted(signal))
                .await
        }
        None => rowkit_client::run(&driver, machine, on_event).await,
    }
}

fn gateway() -> Gateway {
    Gateway::new(
        option_env!("ROWKIT_TEST_GATEWAY")
            .expect("ROWKIT_TEST_GATEWAY is not set: run the wasm tests with wasm/test.sh"),
    )
}

/// The proxy in front of the open gateway.
fn proxy() -> &'static str {
    option_env!("ROWKIT_TEST_PROXY")
        .expect("ROWKIT_TEST_PROXY is not set: run the wasm tests with wasm/test.sh")
}

/// The proxy in front of the gateway started with `--token`.
fn token_proxy() -> &'static str {
    option_env!("ROWKIT_TEST_TOKEN_PROXY")
        .expect("ROWKIT_TEST_TOKEN_PROXY is not set: run the wasm tests with wasm/test.sh")
}

/// The token the harness started that gateway with.
fn test_token() -> &'static str {
    option_env!("ROWKIT_TEST_TOKEN")
        .expect("ROWKIT_TEST_TOKEN is not set: run the wasm tests with wasm/test.sh")
}

/// A proxy group name no other test or run uses.
fn group(what: &str) -> String {
    format!("{what}-{}", js_sys::Date::now() as u64)
}

/// Whether the tests run in a browser (where CORS applies) rather than in Node (where it
/// does not).
fn in_browser() -> bool {
    js_sys::Reflect::has(&js_sys::global(), &"document".into()).unwrap()
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = fetch)]
    fn fetch_url(url: &str) -> js_sys::Promise;
}

/// GETs `url` and returns the body as JSON (`null` for an empty body); fails the test on any
/// error.
async fn get_json(url: &str) -> serde_json::Value {
    let resp: web_sys::Response = JsFuture::from(fetch_url(url))
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e:?}"))
        .dyn_into()
        .unwrap();
    assert!(resp.ok(), "GET {url}: HTTP {}", resp.status());
    let text = JsFuture::from(resp.text().unwrap()).await.unwrap();
    let text = text.as_string().unwrap();
    if text.is_empty() {
        return serde_json::Value::Null;
    }
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {url}: {e}: {text}"))
}

/// What the proxy recorded for `group`.
async fn proxy_stats(proxy: &str, group: &str) -> serde_json::Value {
    get_json(&format!("{proxy}/stats/{group}")).await
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

/// `n` rows `{prefix}0000…` with a `value_len`-byte cell `d:v` and the row number in `d:n`.
fn write_rows(prefix: &str, n: usize, value_len: usize) -> MutateRowsRequest {
    let entries = (0..n)
        .map(|i| MutateRowsEntry {
            row_key: format!("{prefix}{i:04}").into_bytes(),
            mutations: vec![
                set("v", vec![b'x'; value_len]),
                set("n", i.to_string().into_bytes()),
            ],
        })
        .collect();
    MutateRowsRequest {
        table: TABLE.into(),
        entries,
        ..Default::default()
    }
}

/// Every row under `prefix`, at most `limit` (0 = all).
fn read_prefix(prefix: &str, limit: i64) -> ReadRowsRequest {
    ReadRowsRequest {
        table: TABLE.into(),
        rows: RowSet {
            row_keys: vec![],
            row_ranges: vec![RowRange::prefix(prefix.as_bytes())],
        },
        rows_limit: limit,
        ..Default::default()
    }
}

/// Writes `request` through `gw`; every entry must succeed.
async fn write(gw: &Gateway, request: MutateRowsRequest) {
    let n = request.entries.len();
    let m = MutateRows::new(request, now(), 1, RetryPolicy::default());
    let results = run(gw, m, |()| {}, None).await.unwrap();
    assert_eq!(results.len(), n);
    assert!(results.iter().all(|r| r.result.is_ok()), "{results:?}");
}

#[wasm_bindgen_test]
async fn writes_then_streams_rows_back() {
    let gw = gateway();
    let prefix = format!("fetch-{}-", js_sys::Date::now() as u64);
    // 300 rows of 2 KiB: a body of ~800 KiB arrives in many network chunks.
    write(&gw, write_rows(&prefix, 300, 2048)).await;
    let mut rows = Vec::new();
    let m = ReadRows::new(read_prefix(&prefix, 250), now(), 2, RetryPolicy::default());
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

/// The status of a failed read through `gw` (a machine error, not a stall).
async fn read_error(gw: &Gateway, prefix: &str) -> StoreError {
    let m = ReadRows::new(read_prefix(prefix, 0), now(), 6, RetryPolicy::default());
    match run(gw, m, |_| {}, None).await {
        Err(RunError::Machine(e)) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

/// The page's origin (`location.origin`), in a browser.
fn page_origin() -> String {
    let location = js_sys::Reflect::get(&js_sys::global(), &"location".into()).unwrap();
    js_sys::Reflect::get(&location, &"origin".into())
        .unwrap()
        .as_string()
        .unwrap()
}

#[wasm_bindgen_test]
async fn a_token_gateway_answers_the_right_bearer_token_only() {
    let g = group("token");
    let mut gw = Gateway::new(&format!("{}/observe/{g}", token_proxy()));
    gw.token = Some(test_token().into());
    let prefix = format!("{g}-");
    write(&gw, write_rows(&prefix, 3, 16)).await;
    let mut rows = Vec::new();
    let m = ReadRows::new(read_prefix(&prefix, 0), now(), 2, RetryPolicy::default());
    run(&gw, m, |row| rows.push(row), None).await.unwrap();
    assert_eq!(rows.len(), 3);

    // The 401s' JSON bodies are readable across origins (CORS headers on errors too): the two
    // messages tell a missing token from a wrong one.
    let anonymous = Gateway {
        token: None,
        ..gw.clone()
    };
    let e = read_error(&anonymous, &prefix).await;
    assert_eq!(e.code, Code::Unauthenticated, "{e:?}");
    assert!(
        e.message.contains("requires `Authorization: Bearer"),
        "{e:?}"
    );
    let wrong = Gateway {
        token: Some(format!("{}x", test_token())),
        ..gw.clone()
    };
    let e = read_error(&wrong, &prefix).await;
    assert_eq!(e.code, Code::Unauthenticated, "{e:?}");
    assert!(e.message.contains("not this gateway's token"), "{e:?}");

    let stats = proxy_stats(token_proxy(), &g).await;
    // Write, read, and one read each without and with a wrong token: 401 is not retried.
    assert_eq!(stats["requests"], 4, "{stats}");
    let preflights = stats["preflights"].as_array().unwrap();
    if in_browser() {
        // Chromium asked first, without the token, whether this page may send `authorization`
        // and `content-type` in a POST, and the gateway allowed exactly this origin.
        assert!(
            preflights.iter().any(|p| p["requestHeaders"]
                .as_str()
                .is_some_and(|h| h.split(',').any(|h| h.trim() == "authorization"))),
            "{stats}"
        );
        for p in preflights {
            assert_eq!(p["method"], "POST", "{stats}");
            assert_eq!(p["authorization"], false, "{stats}");
            let status = p["status"].as_u64().unwrap();
            assert!((200..300).contains(&status), "{stats}");
            assert_eq!(p["allowOrigin"], page_origin().as_str(), "{stats}");
            let allowed = p["allowHeaders"].as_str().unwrap().to_ascii_lowercase();
            assert!(
                allowed.contains("authorization") && allowed.contains("content-type"),
                "{stats}"
            );
        }
    } else {
        assert!(preflights.is_empty(), "Node's fetch does no CORS: {stats}");
    }
}

#[wasm_bindgen_test]
async fn a_tile_read_has_several_requests_in_flight_at_once() {
    // The proxy answers none of the group's requests before this many are open at once. Fewer
    // than the 6 connections per host Chromium opens over HTTP/1.1, which bound how many can be
    // open in the browser.
    const TOGETHER: u64 = 4;
    let g = group("barrier");
    let gw = Gateway::new(&format!("{}/barrier/{TOGETHER}/{g}", proxy()));
    let mut state = TraceStoreState::new("gold", Layout::Md5);
    let op = ReadRange::new(
        &mut state,
        0,
        255,
        Start::within(now(), 7, READ_DEADLINE_MICROS),
    );
    run(&gw, op, |_| {}, None).await.unwrap();
    let stats = proxy_stats(proxy(), &g).await;
    assert_eq!(stats["released"], "barrier", "{stats}");
    assert!(stats["maxOpen"].as_u64().unwrap() >= TOGETHER, "{stats}");
    // A tile load sends its OPS read, 32 trace scans and (md5 layout) 32 options scans
    // together (`tracestore.md` 12.1).
    assert_eq!(stats["requests"], 65, "{stats}");
}

#[wasm_bindgen_test]
async fn rows_are_handed_over_before_the_body_ends() {
    let g = group("hold-end");
    let prefix = format!("{g}-");
    write(&gateway(), write_rows(&prefix, 5, 64)).await;
    // The proxy holds the body's last byte (`]`) until the first row here asks it to let go: a
    // driver that waited for the whole body would never hand a row over. The `]` thus reaches
    // the driver in a later network chunk than the rows.
    let gw = Gateway::new(&format!("{}/hold-end/{g}", proxy()));
    let release = format!("{}/release/{g}", proxy());
    let asked = Rc::new(Cell::new(false));
    let mut rows = Vec::new();
    let m = ReadRows::new(read_prefix(&prefix, 0), now(), 3, RetryPolicy::default());
    let first_row = asked.clone();
    run(
        &gw,
        m,
        |row| {
            if !first_row.replace(true) {
                let url = release.clone();
                wasm_bindgen_futures::spawn_local(async move {
                    get_json(&url).await;
                });
            }
            rows.push(row);
        },
        None,
    )
    .await
    .unwrap();
    assert_eq!(rows.len(), 5);
    let stats = proxy_stats(proxy(), &g).await;
    assert_eq!(stats["endSent"], "after release by client", "{stats}");
}

#[wasm_bindgen_test]
async fn a_status_the_http_code_cannot_tell_comes_from_the_json_body() {
    let gw = gateway();
    let key = format!("fp-{}", js_sys::Date::now() as u64);
    write(
        &gw,
        MutateRowsRequest {
            table: TABLE.into(),
            entries: vec![MutateRowsEntry {
                row_key: key.clone().into_bytes(),
                mutations: vec![set("n", b"1234".to_vec())],
            }]
            .into(),
            ..Default::default()
        },
    )
    .await;
    // Incrementing a 4-byte value is FAILED_PRECONDITION, which shares HTTP 400 with
    // INVALID_ARGUMENT and OUT_OF_RANGE: only the body's `status` tells which.
    let request = Request::ReadModifyWriteRow(ReadModifyWriteRowRequest {
        table: TABLE.into(),
        app_profile_id: String::new(),
        row_key: key.into_bytes(),
        rules: vec![ReadModifyWriteRule {
            family: "d".into(),
            qualifier: b"n".to_vec(),
            op: RuleOp::IncrementAmount(1),
        }],
    });
    let err = run(&gw, Unary::new(request), |()| {}, None)
        .await
        .unwrap_err();
    let RunError::Machine(e) = err else {
        panic!("stalled")
    };
    assert_eq!(e.code, Code::FailedPrecondition, "{e:?}");
}
