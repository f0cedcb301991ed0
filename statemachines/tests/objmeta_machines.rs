#![allow(clippy::unwrap_used)]
//! objmeta machines driven by hand (`sans-io.md` 5.1): exact first requests, the cached
//! vFormat, stale replies, unary errors without retry, the deadline and cancel.

use rowkit_codec::model::{Mutation, RowFilter};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_statemachines::objmeta::{
    GetObject, ListObject, ObjmetaConfig, ObjmetaError, ObjmetaEvent, ObjmetaState, PutObject,
};
use rowkit_statemachines::operation::ContextArg;
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
    PutObject::new(st, "b", "k", value(), params, None, NOW, 1)
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
    assert_eq!(
        m.result(),
        Some(Ok(Some(
            "{\"versionId\": \"98299999999998999999RG001  4242.0\"}".into()
        )))
    );
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
    let mut m = PutObject::new(&mut st, "b", "k", array, None, None, NOW, 1);
    assert!(m.poll_request().is_none());
    assert!(matches!(
        m.result(),
        Some(Err(ObjmetaError::InternalError(_)))
    ));
}

#[test]
fn uncached_bucket_reads_the_metastore_first_then_deadline_and_cancel() {
    let mut st = ObjmetaState::default();
    let deadline = Some(Timestamp(NOW.0 + 5_000));
    let mut m = GetObject::new(&mut st, "b", "k", None, deadline, NOW, 1);
    let (_, r) = m.poll_request().unwrap();
    let Request::ReadRows(q) = r else { panic!() };
    assert_eq!(q.rows.row_keys, [b"__metastore\x00b".to_vec()]);
    assert_eq!(m.poll_timeout(), Some(Timestamp(NOW.0 + 5_000)));
    m.handle_timeout(Timestamp(NOW.0 + 5_000));
    assert!(m.poll_abort().is_some(), "the outstanding read is aborted");
    assert_eq!(m.result(), Some(Err(ObjmetaError::Aborted)));
    let mut st = ObjmetaState::default();
    let mut m = GetObject::new(&mut st, "b", "k", None, None, NOW, 1);
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
    let mut borrowed = ListObject::new(&mut st, "b", params.clone(), None, NOW, 1);
    let mut owned: ListObject<'static> = ListObject::new(state(), "b", params, None, NOW, 1);
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
    };
    let mut m = AsyncRepair::new("t", task.clone(), None, NOW, 1);
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
