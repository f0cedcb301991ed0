#![allow(clippy::unwrap_used)]
//! objmeta machines driven by hand (`sans-io.md` 5.1): exact first requests, the cached
//! vFormat, stale replies, unary errors without retry, the deadline and cancel.

use rowkit_codec::model::{Mutation, RowFilter};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_statemachines::objmeta::{
    DEFAULT_DEADLINE_US, GetObject, ListObject, ObjmetaConfig, ObjmetaError, ObjmetaEvent,
    ObjmetaState, PutObject,
};
use rowkit_statemachines::operation::{ContextArg, OperationError, Start};
use rowkit_statemachines::{Code, Machine, Request, Response, StoreError, Tag, Timestamp};

fn state() -> ObjmetaState {
    let mut s = ObjmetaState::new(ObjmetaConfig {
        pid: 4242,
        ..ObjmetaConfig::default()
    });
    s.cache_vformat("b", VFormat::V1);
    s
}

fn value() -> Json {
    Json::parse(r#"{"key":"k","n":1}"#).unwrap()
}

fn put<'a>(st: impl Into<ContextArg<'a, ObjmetaState>>, params: &str) -> PutObject<'a> {
    let params = Some(Json::parse(params).unwrap());
    PutObject::new(
        st,
        "b",
        "k",
        value(),
        params,
        Start::within(NOW, 1, DEFAULT_DEADLINE_US),
    )
}

const NOW: Timestamp = Timestamp(1_700_000_000_001_000);

#[test]
fn versioned_put_sends_version_then_master_and_emits_both_puts() {
    let mut st = state();
    let mut m = put(&mut st, r#"{"versioning":true}"#);
    let (t1, r1) = m.poll_request().unwrap();
    let Request::CheckAndMutateRow(c) = r1 else {
        panic!()
    };
    assert_eq!(
        c.row_key,
        b"b\x00\x7fVk\x0098299999999998999999RG001  4242.0"
    );
    assert_eq!(c.true_mutations, c.false_mutations);
    assert!(matches!(
        c.true_mutations[0],
        Mutation::DeleteFromFamily { .. }
    ));
    assert!(m.poll_request().is_none(), "one request at a time");
    // A reply under an unknown tag is ignored.
    m.handle_response(
        Tag(t1.0 + 99),
        Ok(Response::CheckAndMutateRow {
            predicate_matched: true,
        }),
        NOW,
    );
    assert!(m.poll_request().is_none());
    m.handle_response(
        t1,
        Ok(Response::CheckAndMutateRow {
            predicate_matched: false,
        }),
        NOW,
    );
    let (t2, r2) = m.poll_request().unwrap();
    let Request::CheckAndMutateRow(c) = r2 else {
        panic!()
    };
    assert_eq!(c.row_key, b"b\x00\x7fMk");
    assert!(c.true_mutations.is_empty());
    assert!(matches!(c.predicate, Some(RowFilter::Chain(_))));
    m.handle_response(
        t2,
        Ok(Response::CheckAndMutateRow {
            predicate_matched: false,
        }),
        NOW,
    );
    let events: Vec<_> = std::iter::from_fn(|| m.poll_event()).collect();
    assert_eq!(events.len(), 2);
    assert!(matches!(&events[1], ObjmetaEvent::Put { key, .. } if key == "\x7fMk"));
    let outcome = m.result().unwrap().unwrap();
    assert_eq!(
        outcome.result.as_deref(),
        Some("{\"versionId\": \"98299999999998999999RG001  4242.0\"}")
    );
    assert_eq!(
        outcome.version_id.as_deref(),
        Some("98299999999998999999RG001  4242.0")
    );
    assert_eq!(outcome.master_row_key, b"b\x00\x7fMk".to_vec());
    assert_eq!(m.result(), None);
}

#[test]
fn unary_error_is_internal_at_once_and_emits_nothing() {
    let mut st = state();
    let mut m = put(&mut st, "{}");
    let (t, r) = m.poll_request().unwrap();
    assert!(matches!(r, Request::MutateRow(_)));
    m.handle_response(t, Err(StoreError::new(Code::Unavailable, "down")), NOW);
    assert!(m.poll_request().is_none());
    assert!(m.poll_event().is_none());
    assert!(matches!(
        m.result(),
        Some(Err(ObjmetaError::InternalError(_)))
    ));
}

#[test]
fn non_object_value_fails_before_any_request() {
    let mut st = state();
    let array = Json::parse("[1]").unwrap();
    let mut m = PutObject::new(
        &mut st,
        "b",
        "k",
        array,
        None,
        Start::within(NOW, 1, DEFAULT_DEADLINE_US),
    );
    assert!(m.poll_request().is_none());
    assert!(matches!(
        m.result(),
        Some(Err(ObjmetaError::InternalError(_)))
    ));
}

#[test]
fn uncached_bucket_reads_the_metastore_first_then_deadline_and_cancel() {
    let mut st = ObjmetaState::default();
    let deadline = Timestamp(NOW.0 + 5_000);
    let mut m = GetObject::new(
        &mut st,
        "b",
        "k",
        None,
        Start {
            now: NOW,
            seed: 1,
            deadline,
        },
    );
    let (_, r) = m.poll_request().unwrap();
    let Request::ReadRow(q) = r else { panic!() };
    assert_eq!(q.row_key, b"__metastore\x00b");
    assert_eq!(m.poll_timeout(), Some(Timestamp(NOW.0 + 5_000)));
    m.handle_timeout(Timestamp(NOW.0 + 5_000));
    assert!(m.poll_abort().is_some(), "the outstanding read is aborted");
    assert_eq!(m.result(), Some(Err(ObjmetaError::Aborted)));
    let mut st = ObjmetaState::default();
    let mut m = GetObject::new(
        &mut st,
        "b",
        "k",
        None,
        Start::within(NOW, 1, DEFAULT_DEADLINE_US),
    );
    m.poll_request().unwrap();
    m.cancel(NOW);
    assert_eq!(m.result(), Some(Err(ObjmetaError::Aborted)));
}

#[test]
fn a_machine_with_its_own_state_sends_what_a_borrowing_one_sends() {
    let mut st = state();
    let mut borrowed = put(&mut st, r#"{"versioning":true}"#);
    let mut owned: PutObject<'static> = put(state(), r#"{"versioning":true}"#);
    assert_eq!(borrowed.poll_request(), owned.poll_request());
    drop(borrowed);
    // The borrowed state moved on (an id was generated); the owned one is the machine's.
    assert_eq!(st.generator.uid_counter, 1);

    let params = rowkit_codec::objmeta::listing::ListingParams::default();
    let mut st = state();
    let mut borrowed = ListObject::new(
        &mut st,
        "b",
        params.clone(),
        Start::within(NOW, 1, DEFAULT_DEADLINE_US),
    );
    let mut owned: ListObject<'static> = ListObject::new(
        state(),
        "b",
        params,
        Start::within(NOW, 1, DEFAULT_DEADLINE_US),
    );
    assert_eq!(borrowed.poll_request(), owned.poll_request());
}

#[test]
fn a_repair_sleeps_until_due_and_ends_aborted_when_cancelled() {
    use rowkit_statemachines::objmeta::{AsyncRepair, RepairTask};
    let task = RepairTask {
        bucket: "b".into(),
        key: "k".into(),
        phd_version_id: "p".into(),
        vformat: VFormat::V1,
        due: Timestamp(NOW.0 + 15_000_000),
        migration: None,
    };
    let mut m = AsyncRepair::new("t", task.clone(), AsyncRepair::start_at(&task, NOW, 1));
    assert!(m.poll_request().is_none(), "nothing before due");
    assert_eq!(m.poll_timeout(), Some(task.due));
    m.handle_timeout(Timestamp(task.due.0 - 1));
    assert!(m.poll_request().is_none());
    m.handle_timeout(task.due);
    let (_, r) = m.poll_request().unwrap();
    let Request::ReadRows(q) = r else { panic!() };
    assert_eq!(q.table, "t", "the repair's own table");
    assert_eq!(q.rows_limit, 1, "getLatestVersion");
    m.cancel(task.due);
    assert!(m.poll_abort().is_some(), "the read in flight is aborted");
    // Cancel and deadline end every objmeta operation the same way, repairs included.
    assert_eq!(m.result(), Some(Err(ObjmetaError::Aborted)));
}

/// The row key of Arsenal key `ak` in bucket `b` (`objmeta.md` 5.2: collection, NUL, key).
fn bucket_row(ak: &str) -> Vec<u8> {
    [b"b\0".as_slice(), ak.as_bytes()].concat()
}

/// `ReadRows` of `rows` on the objmeta table with the `LIVE_VALUE` filter.
fn live_read(rows: rowkit_codec::model::RowSet, rows_limit: i64) -> Request {
    Request::ReadRows(rowkit_statemachines::ReadRowsRequest {
        table: "objmeta".into(),
        app_profile_id: String::new(),
        rows,
        filter: Some(rowkit_codec::objmeta::cells::filters::live_value()),
        rows_limit,
        reversed: false,
    })
}

/// `getLatestVersion(key)` on a v1 bucket (`objmeta.md` 9.1): the version rows of `key`, both
/// ends exclusive, one row.
fn latest_version_read(key: &str) -> Request {
    use rowkit_codec::model::{KeyBound, RowRange, RowSet};
    live_read(
        RowSet::range(RowRange {
            start: KeyBound::Open(bucket_row(&format!("\x7fV{key}\0"))),
            end: KeyBound::Open(bucket_row(&format!("\x7fV{key}\x01"))),
        }),
        1,
    )
}

/// A row holding document `doc` (its `d:value` cell) as one committed chunk.
fn doc_part(row: Vec<u8>, doc: &str) -> Response {
    Response::ReadRowsPart(rowkit_statemachines::ReadRowsResponse {
        chunks: vec![rowkit_statemachines::CellChunk {
            row_key: row,
            family_name: Some("d".into()),
            qualifier: Some(b"value".to_vec()),
            value: doc.as_bytes().to_vec(),
            row_status: rowkit_statemachines::RowStatus::Commit,
            ..Default::default()
        }],
        last_scanned_row_key: vec![],
    })
}

/// The answer to a point read of `row` holding document `doc` (its `d:value` cell).
fn doc_row(row: Vec<u8>, doc: &str) -> Response {
    Response::Row(Some(std::sync::Arc::new(rowkit_codec::model::Row {
        key: row,
        cells: vec![rowkit_codec::model::Cell {
            family: "d".into(),
            qualifier: b"value".to_vec(),
            timestamp: Timestamp(0),
            value: doc.as_bytes().to_vec(),
            labels: vec![],
        }],
    })))
}

/// `getObjects` of `keys` (no params) on the v1 bucket `b`, whose vFormat is cached: the first
/// request is the one read of every item's master row, in item order (`objmeta.md` 9.3).
fn get_objects<'a>(
    st: &'a mut ObjmetaState,
    keys: &[&str],
) -> rowkit_testkit::script::Script<rowkit_statemachines::objmeta::GetObjects<'a>> {
    use rowkit_testkit::script::Script;
    let items = Json::Array(
        keys.iter()
            .map(|k| Json::parse(&format!(r#"{{"key":"{k}"}}"#)).unwrap())
            .collect(),
    );
    let m = rowkit_statemachines::objmeta::GetObjects::new(
        st,
        "b",
        &items,
        Start::within(NOW, 1, DEFAULT_DEADLINE_US),
    );
    let mut s = Script::new(m, NOW);
    let masters = keys
        .iter()
        .map(|k| bucket_row(&format!("\x7fM{k}")))
        .collect();
    s.expect_request(
        Tag(0),
        &live_read(
            rowkit_codec::model::RowSet {
                row_keys: masters,
                row_ranges: vec![],
            },
            0,
        ),
    );
    s
}

/// `objmeta.md` 16.4: getObjects of 7 items, 3 of them without a master — the three
/// `getLatestVersion` reads go out together, in item order, and the list comes back in item
/// order whatever order the reads finish in.
#[test]
fn get_objects_of_seven_items_three_missing_reads_their_latest_versions_at_once() {
    let mut st = state();
    let keys = ["k1", "k2", "k3", "k4", "k5", "k6", "k7"];
    let mut s = get_objects(&mut st, &keys);
    s.expect_no_request();
    for k in ["k1", "k3", "k5", "k7"] {
        let doc = format!(r#"{{"key":"{k}"}}"#);
        s.respond(Tag(0), doc_part(bucket_row(&format!("\x7fM{k}")), &doc));
    }
    s.end_stream(Tag(0));
    s.expect_request(Tag(1), &latest_version_read("k2"));
    s.expect_request(Tag(2), &latest_version_read("k4"));
    s.expect_request(Tag(3), &latest_version_read("k6"));
    s.expect_no_request();
    // k6 has a version, k4 none, k2's read fails.
    s.respond(
        Tag(3),
        doc_part(
            bucket_row("\x7fVk6\0v1"),
            r#"{"key":"k6","versionId":"v1"}"#,
        ),
    );
    s.end_stream(Tag(3));
    s.end_stream(Tag(2));
    s.expect_no_request();
    assert!(s.result().is_none(), "k2 is still being read");
    s.fail(Tag(1), StoreError::new(Code::Internal, "boom"));
    s.expect_no_request();
    let want = Json::parse(
        r#"[{"err":null,"doc":{"key":"k1"},"key":"\u007fMk1"},
            {"err":"InternalError","doc":null,"key":"\u007fMk2"},
            {"err":null,"doc":{"key":"k3"},"key":"\u007fMk3"},
            {"err":"NoSuchKey","doc":null,"key":"\u007fMk4"},
            {"err":null,"doc":{"key":"k5"},"key":"\u007fMk5"},
            {"err":null,"doc":{"key":"k6","versionId":"v1"},"key":"\u007fMk6"},
            {"err":null,"doc":{"key":"k7"},"key":"\u007fMk7"}]"#,
    )
    .unwrap();
    assert_eq!(s.take_result(), Some(Ok(want)));
}

/// At most five `getLatestVersion` reads are outstanding (`maxBatchingConcurrentOperations`):
/// with 7 missing masters, the 6th read starts when one of the first five finishes, the 7th when
/// another does, still in item order.
#[test]
fn get_objects_keeps_at_most_five_latest_version_reads_outstanding() {
    let mut st = state();
    let keys = ["a", "b", "c", "d", "e", "f", "g"];
    let mut s = get_objects(&mut st, &keys);
    s.end_stream(Tag(0));
    for (i, k) in keys[..5].iter().enumerate() {
        s.expect_request(Tag(i as u64 + 1), &latest_version_read(k));
    }
    s.expect_no_request();
    s.end_stream(Tag(4));
    s.expect_request(Tag(6), &latest_version_read("f"));
    s.expect_no_request();
    s.end_stream(Tag(2));
    s.expect_request(Tag(7), &latest_version_read("g"));
    s.expect_no_request();
    for t in [1, 3, 5, 6] {
        s.end_stream(Tag(t));
    }
    assert!(s.result().is_none(), "g is still being read");
    s.end_stream(Tag(7));
    let Some(Ok(Json::Array(list))) = s.take_result() else {
        panic!("a list")
    };
    assert_eq!(list.len(), 7);
    for (item, k) in list.iter().zip(keys) {
        assert_eq!(item.get("err"), Some(&Json::str("NoSuchKey")));
        assert_eq!(item.get("key"), Some(&Json::str(format!("\x7fM{k}"))));
    }
}

/// Two exclusive creates of one bucket, both in flight before the store applies either: each
/// sends one `CheckAndMutateRow` that writes only where the metastore row has no document, so
/// the store's atomic CAS lets one win. The loser (predicate matched: the row is there) reads
/// the row for its vFormat and fails with `BucketAlreadyExists`, emitting no `Put`.
#[test]
fn exclusive_create_bucket_is_one_conditional_write_and_only_one_wins() {
    use rowkit_statemachines::objmeta::CreateBucket;
    use rowkit_testkit::script::Script;
    let md = Json::parse(r#"{"name":"photos"}"#).unwrap();
    let (mut st_a, mut st_b) = (state(), state());
    let mut a = Script::new(
        CreateBucket::new_exclusive(
            &mut st_a,
            "photos",
            &md,
            Start::within(NOW, 1, DEFAULT_DEADLINE_US),
        ),
        NOW,
    );
    let mut b = Script::new(
        CreateBucket::new_exclusive(
            &mut st_b,
            "photos",
            &md,
            Start::within(NOW, 2, DEFAULT_DEADLINE_US),
        ),
        NOW,
    );
    let row = b"__metastore\0photos".to_vec();
    for s in [&mut a, &mut b] {
        let (tag, request) = s.next_request().unwrap();
        let Request::CheckAndMutateRow(c) = request else {
            panic!("{request:?}")
        };
        assert_eq!(c.row_key, row);
        assert_eq!(
            c.predicate,
            Some(rowkit_codec::objmeta::cells::filters::exists())
        );
        assert!(c.true_mutations.is_empty(), "nothing written over a row");
        assert!(!c.false_mutations.is_empty());
        assert_eq!(tag, Tag(0));
        s.expect_no_request();
    }
    // The store applies a's first: a created the bucket; b found it there.
    a.respond(
        Tag(0),
        Response::CheckAndMutateRow {
            predicate_matched: false,
        },
    );
    b.respond(
        Tag(0),
        Response::CheckAndMutateRow {
            predicate_matched: true,
        },
    );
    assert!(matches!(a.result(), Some(Ok(VFormat::V1))));
    assert!(matches!(
        a.take_events().as_slice(),
        [ObjmetaEvent::Put { .. }]
    ));
    let (tag, request) = b.next_request().unwrap();
    assert!(matches!(request, Request::ReadRow(_)), "{request:?}");
    b.respond(tag, doc_row(row.clone(), r#"{"name":"photos"}"#));
    let Some(Err(e)) = b.result() else {
        panic!("{:?}", b.result())
    };
    assert_eq!(
        e,
        &ObjmetaError::BucketAlreadyExists {
            bucket: "photos".into(),
            vformat: VFormat::V0
        }
    );
    assert_eq!(e.id(), "BucketAlreadyExists");
    assert!(b.take_events().is_empty());
}

/// A `GetObject` of `k` in the cached v1 bucket `b`, aborted 100 µs after `NOW`.
fn get_with_short_deadline(st: &mut ObjmetaState) -> GetObject<'_> {
    let start = Start {
        now: NOW,
        seed: 1,
        deadline: Timestamp(NOW.0 + 100),
    };
    GetObject::new(st, "b", "k", None, start)
}

#[test]
fn a_read_no_retry_fits_before_the_deadline_waits_for_it_and_ends_aborted() {
    let mut st = state();
    let mut m = get_with_short_deadline(&mut st);
    let (t, _) = m.poll_request().unwrap();
    // The least back-off (5 ms) ends past the deadline: the read gives up at once.
    m.handle_response(t, Err(StoreError::new(Code::Unavailable, "down")), NOW);
    assert!(m.poll_request().is_none(), "no retry fits");
    assert_eq!(m.result(), None, "it waits for the deadline");
    assert_eq!(m.poll_timeout(), Some(Timestamp(NOW.0 + 100)));
    m.handle_timeout(Timestamp(NOW.0 + 100));
    assert_eq!(m.result(), Some(Err(ObjmetaError::Aborted)));
}

#[test]
fn a_store_failure_says_internal_error_once() {
    let mut st = state();
    let mut m = get_with_short_deadline(&mut st);
    let (t, _) = m.poll_request().unwrap();
    m.handle_response(t, Err(StoreError::new(Code::NotFound, "no table")), NOW);
    let read_error = m.result().unwrap().unwrap_err();
    assert_eq!(read_error.to_string(), "InternalError: NOT_FOUND: no table");
    assert_eq!(
        read_error.in_call("b", Some("k")).to_string(),
        "internal error: NOT_FOUND: no table"
    );
    drop(m);

    let mut m = put(&mut st, "{}");
    let (t, r) = m.poll_request().unwrap();
    assert!(matches!(r, Request::MutateRow(_)), "a put without params");
    m.handle_response(t, Err(StoreError::new(Code::NotFound, "no table")), NOW);
    let write_error = m.result().unwrap().unwrap_err();
    assert_eq!(
        write_error.to_string(),
        "InternalError: NOT_FOUND: no table"
    );
}
