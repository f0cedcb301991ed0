#![allow(clippy::unwrap_used)]
//! objmeta acceptance scenarios of `objmeta.md` 18 that the traces do not cover: metastore,
//! uuid and count (30), change events (32), the repair machine (33), the vFormat cache (34),
//! the deadline (35) and the skip streak's requests (24). Written over `&dyn Store` (wrapped
//! in a recorder), run on MemoryStore and RedbStore.

use std::sync::Mutex;

use rowkit_codec::model::{ColumnFamily, KeyBound, RowSet};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::listing::{ListingParams, ListingType};
use rowkit_embedded::driver::{ManualClock, run};
use rowkit_embedded::objmeta::ObjectMetadata;
use rowkit_embedded::objmeta_scenarios::{bucket_rows, json_eq, scenario_state};
use rowkit_embedded::{MemoryStore, RedbStore, Reply, Request, Store, StoreError};
use rowkit_statemachines::objmeta::{
    AsyncRepair, AsyncRepairOp, ObjmetaError, ObjmetaEvent, OpMachine, RepairOutcome,
};
use rowkit_statemachines::{Code, Machine, Timestamp};

/// A store that records every request and can refuse ReadRows with UNAVAILABLE.
struct Recorder<'a> {
    inner: &'a dyn Store,
    log: Mutex<Vec<Request>>,
    fail_reads: bool,
}

impl<'a> Recorder<'a> {
    fn new(inner: &'a dyn Store) -> Self {
        Recorder {
            inner,
            log: Mutex::new(Vec::new()),
            fail_reads: false,
        }
    }
    fn take(&self) -> Vec<Request> {
        std::mem::take(&mut self.log.lock().unwrap())
    }
}

impl Store for Recorder<'_> {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        self.log.lock().unwrap().push(request.clone());
        if self.fail_reads && matches!(request, Request::ReadRows(_)) {
            return Err(StoreError::new(Code::Unavailable, "injected"));
        }
        self.inner.execute(request, now)
    }
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.inner.create_table(table, families)
    }
    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.inner.delete_table(table)
    }
    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        self.inner.list_tables()
    }
    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.inner.families(table)
    }
    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError> {
        self.inner.gc(table, now)
    }
}

fn vectors() -> Json {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared").to_string());
    let path = format!("{dir}/vectors/objmeta.json");
    Json::parse(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path} is required: {e}")),
    )
    .unwrap()
}

fn j(s: &str) -> Json {
    Json::parse(s).unwrap()
}

fn arr<'a>(v: &'a Json, name: &str) -> &'a Vec<Json> {
    match v.get(name) {
        Some(Json::Array(a)) => a,
        _ => panic!("{name} is not an array"),
    }
}

const T0: i64 = 1_700_000_000_000;

fn names(reqs: &[Request]) -> Vec<&'static str> {
    reqs.iter().map(Request::rpc_name).collect()
}

fn metastore_uuid_count(store: &dyn Store, table: &str) {
    let v = vectors();
    let rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut om = ObjectMetadata::new(&rec, &clock, scenario_state(table, VFormat::V1), 1);
    om.setup().unwrap();
    let b_case = arr(&v, "metastore_rows")
        .iter()
        .find(|c| c.get("bucket") == Some(&Json::str("b")))
        .unwrap();
    let md = b_case
        .get("document")
        .unwrap()
        .get("value")
        .unwrap()
        .clone();
    assert_eq!(om.create_bucket("b", &md).unwrap(), VFormat::V1);
    for special in ["users..bucket", "PENSIEVE", "mpuShadowBucketb"] {
        let mut m = md.clone();
        m.as_object_mut().unwrap().set("name", Json::str(special));
        assert_eq!(
            om.create_bucket(special, &m).unwrap(),
            VFormat::V0,
            "{special}"
        );
    }
    // The metastore row holds exactly the vector's cells.
    let rows = bucket_rows(&rec, table, "__metastore").unwrap();
    let b_row = rows
        .iter()
        .find(|r| r.get("key") == Some(&Json::str("b")))
        .unwrap();
    assert_eq!(b_row.get("row_key_hex"), b_case.get("row_key_hex"));
    let cells = b_case.get("cells").unwrap();
    let Request::MutateRow(write) = rec
        .take()
        .into_iter()
        .find(|r| matches!(r, Request::MutateRow(m) if m.row_key == b"__metastore\x00b"))
        .unwrap()
    else {
        unreachable!()
    };
    let cell = |q: &[u8]| {
        write
            .mutations
            .iter()
            .find_map(|m| match m {
                rowkit_codec::model::Mutation::SetCell {
                    qualifier, value, ..
                } if qualifier == q => Some(value.clone()),
                _ => None,
            })
            .unwrap()
    };
    assert_eq!(
        String::from_utf8(cell(b"value")).unwrap(),
        cells.get("d:value").unwrap().as_str().unwrap()
    );
    assert_eq!(
        String::from_utf8(cell(b"vFormat")).unwrap(),
        cells.get("d:vFormat").unwrap().as_str().unwrap()
    );
    let hash: String = cell(b"hash").iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hash, cells.get("f:hash_hex").unwrap().as_str().unwrap());

    // countItems.
    let count = om.count_items().unwrap();
    let want = j(
        r#"{"objects":0,"versions":0,"buckets":1,"bucketList":[{"name":"b","location":null,"isVersioned":false,"ownerCanonicalId":"ownerid","ingestion":false}],"dataManaged":{"total":{"curr":0,"prev":0},"byLocation":{}},"stalled":0,"bucketWithQuotaCount":0}"#,
    );
    assert!(json_eq(&count, &want), "{}", count.stringify());

    // getObjects: argument errors, an empty list, found / missing / missing version.
    assert!(
        matches!(om.get_objects("b", &j("{}")), Err(ObjmetaError::InternalError(m)) if m == "objects must be an array")
    );
    assert_eq!(om.get_objects("b", &j("[]")).unwrap(), j("[]"));
    om.put_object("b", "g", &j(r#"{"key":"g"}"#), Some(&j("{}")))
        .unwrap();
    let got = om
        .get_objects(
            "b",
            &j(r#"[{"key":"g"},{"key":"h"},{"key":"g","params":{"versionId":"x"}}]"#),
        )
        .unwrap();
    let want = j(
        r#"[{"err":null,"doc":{"key":"g"},"key":"\u007fMg"},{"err":"NoSuchKey","doc":null,"key":"\u007fMh"},{"err":"NoSuchKey","doc":null,"versionId":"x","key":"\u007fVg\u0000x"}]"#,
    );
    assert!(json_eq(&got, &want), "{}", got.stringify());

    // Capabilities: nested upsert, sub-field, removal, removal of nothing, upsert of a new row.
    rec.take();
    om.put_bucket_capability(
        "b",
        "VeeamSOSApi",
        Some("CapacityInfo"),
        &j(r#"{"Capacity":1}"#),
    )
    .unwrap();
    om.put_bucket_capability("b", "other", None, &j("true"))
        .unwrap();
    let caps = om
        .get_bucket_attributes("b")
        .unwrap()
        .get("capabilities")
        .cloned()
        .unwrap();
    assert!(
        json_eq(
            &caps,
            &j(r#"{"VeeamSOSApi":{"CapacityInfo":{"Capacity":1}},"other":true}"#)
        ),
        "{}",
        caps.stringify()
    );
    om.delete_bucket_capability("b", "VeeamSOSApi", Some("CapacityInfo"))
        .unwrap();
    rec.take();
    om.delete_bucket_capability("b", "absent", None).unwrap();
    assert_eq!(
        names(&rec.take()),
        ["ReadRows"],
        "removing nothing writes nothing"
    );
    let caps = om
        .get_bucket_attributes("b")
        .unwrap()
        .get("capabilities")
        .cloned()
        .unwrap();
    assert!(
        json_eq(&caps, &j(r#"{"VeeamSOSApi":{},"other":true}"#)),
        "{}",
        caps.stringify()
    );
    om.put_bucket_capability("fresh", "c", None, &j("1"))
        .unwrap();
    assert!(json_eq(
        &om.get_bucket_attributes("fresh").unwrap(),
        &j(r#"{"capabilities":{"c":1}}"#)
    ));
    om.delete_bucket("fresh").unwrap();

    // getBucketAndObject, getBucketVFormat, read/updateCountItems.
    let (bucket_value, obj) = om.get_bucket_and_object("b", "nothing", None).unwrap();
    assert_eq!(
        (bucket_value.get("name"), obj),
        (Some(&Json::str("b")), None)
    );
    assert_eq!(
        om.get_bucket_and_object("nope", "k", None),
        Err(ObjmetaError::NoSuchBucket)
    );
    assert_eq!(om.get_bucket_vformat("PENSIEVE").unwrap(), VFormat::V0);
    assert_eq!(
        om.read_count_items().unwrap().get("buckets"),
        Some(&Json::Number(0.0))
    );
    om.update_count_items(&j(r#"{"objects":5,"versions":0,"buckets":0,"bucketList":[],"dataManaged":{"total":{"curr":0,"prev":0},"byLocation":{}},"stalled":0}"#)).unwrap();
    assert_eq!(
        om.count_items().unwrap().get("objects"),
        Some(&Json::Number(5.0))
    );

    // getUUID twice with the vector's candidates.
    let uuid_case = &arr(&v, "infostore_get_uuid")[0];
    rec.take();
    for call in arr(uuid_case, "calls") {
        let got = om
            .get_uuid(call.get("candidate").unwrap().as_str())
            .unwrap();
        assert_eq!(Some(got.as_str()), call.get("result").unwrap().as_str());
    }
    assert_eq!(
        names(&rec.take()),
        ["CheckAndMutateRow", "CheckAndMutateRow", "ReadRows"]
    );

    // vFormat of an unknown bucket is v0, read every time; deleteBucket is idempotent.
    assert_eq!(
        om.get_object("nope", "k", None),
        Err(ObjmetaError::NoSuchKey)
    );
    assert_eq!(
        om.get_object("nope", "k", None),
        Err(ObjmetaError::NoSuchKey)
    );
    let metastore_reads = rec.take().iter().filter(|r| matches!(r, Request::ReadRows(q) if q.rows.row_keys.first().is_some_and(|k| k.starts_with(b"__metastore")))).count();
    assert_eq!(metastore_reads, 2);
    om.put_object("b", "k", &j(r#"{"key":"k"}"#), Some(&j("{}")))
        .unwrap();
    assert_eq!(om.delete_bucket("b").unwrap(), 2); // "g" and "k"
    assert!(bucket_rows(&rec, table, "b").unwrap().is_empty());
    assert!(om.get_bucket_attributes("b").is_err());
    assert_eq!(om.delete_bucket("b").unwrap(), 0);
}

fn cache_behaviour(store: &dyn Store, table: &str) {
    let rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut om = ObjectMetadata::new(&rec, &clock, scenario_state(table, VFormat::V1), 1);
    om.setup().unwrap();
    om.create_bucket("b", &j(r#"{"name":"b"}"#)).unwrap();
    om.put_object("b", "k", &j(r#"{"key":"k"}"#), Some(&j("{}")))
        .unwrap();
    rec.take();
    om.get_object("b", "k", None).unwrap();
    om.get_object("b", "k", None).unwrap();
    assert_eq!(
        names(&rec.take()),
        ["ReadRows", "ReadRows"],
        "no metastore read after createBucket"
    );
    // A second state (another process) reads it once, then uses its cache.
    let mut other = ObjectMetadata::new(&rec, &clock, scenario_state(table, VFormat::V1), 2);
    other.get_object("b", "k", None).unwrap();
    other.get_object("b", "k", None).unwrap();
    assert_eq!(rec.take().len(), 3);
    other.delete_bucket("b").unwrap();
    rec.take();
    let _ = other.get_object("b", "k", None);
    assert!(
        matches!(&rec.take()[0], Request::ReadRows(q) if q.rows.row_keys == [b"__metastore\x00b".to_vec()])
    );
}

fn events_and_repair_machine(store: &dyn Store, table: &str) {
    let rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut om = ObjectMetadata::new(&rec, &clock, scenario_state(table, VFormat::V1), 1);
    om.setup().unwrap();
    om.create_bucket("b", &j(r#"{"name":"b"}"#)).unwrap();
    om.take_events();
    let ver = j(r#"{"versioning":true}"#);
    clock.advance_to(Timestamp::from_millis(T0 + 1));
    om.put_object("b", "k", &j(r#"{"key":"k","n":1}"#), Some(&ver))
        .unwrap();
    let v1 = "98299999999998999999RG001  4242.0";
    let put = |key: String, value: &str| ObjmetaEvent::Put {
        collection: "b".into(),
        key,
        value: value.into(),
    };
    let value1 = format!(r#"{{"key":"k","n":1,"versionId":"{v1}"}}"#);
    assert_eq!(
        om.take_events(),
        [
            put(format!("\x7fVk\0{v1}"), &value1),
            put("\x7fMk".into(), &value1)
        ]
    );
    clock.advance_to(Timestamp::from_millis(T0 + 2));
    om.put_object("b", "k", &j(r#"{"key":"k","n":2}"#), Some(&ver))
        .unwrap();
    om.take_events();
    let v2 = "98299999999997999999RG001  4242.1";
    let v3 = "98299999999996999999RG001  4242.2";
    clock.advance_to(Timestamp::from_millis(T0 + 3));
    let params = Json::Object(
        [("versionId".to_string(), Json::str(v2))]
            .into_iter()
            .collect(),
    );
    om.delete_object("b", "k", Some(&params), None).unwrap();
    let ev = om.take_events();
    assert_eq!(
        ev[0],
        put(
            "\x7fMk".into(),
            &format!(r#"{{"key":"k","n":2,"versionId":"{v3}","isPHD":true,"deleted":false}}"#)
        )
    );
    assert_eq!(
        ev[1],
        ObjmetaEvent::Delete {
            collection: "b".into(),
            key: format!("\x7fVk\0{v2}"),
            value: Some(format!(
                r#"{{"key":"k","n":2,"versionId":"{v2}","originOp":"s3:ObjectRemoved:Delete","deleted":true}}"#
            ))
        }
    );
    let ObjmetaEvent::RepairScheduled(task) = &ev[2] else {
        panic!("{ev:?}")
    };
    assert_eq!(
        (task.phd_version_id.as_str(), task.due),
        (v3, Timestamp(1_700_000_015_003_000))
    );
    // If the repair never runs, reads still resolve the PHD.
    assert_eq!(
        om.get_object("b", "k", None).unwrap().get("n"),
        Some(&Json::Number(1.0))
    );
    rec.take();
    // The repair machine waits for `due`, then reads and conditionally writes.
    let mut m: AsyncRepair = OpMachine::new_delayed(
        AsyncRepairOp { task: task.clone() },
        table.into(),
        Timestamp::from_millis(T0 + 4),
        task.due,
        9,
        None,
    );
    assert!(m.poll_request().is_none());
    assert_eq!(m.poll_timeout(), Some(task.due));
    m.handle_timeout(Timestamp(task.due.0 - 1));
    assert!(m.poll_request().is_none());
    let mut events = Vec::new();
    let outcome = run(&rec, &ManualClock::new(task.due), m, |e| events.push(e)).unwrap();
    assert_eq!(outcome, RepairOutcome::Repaired);
    let reqs = rec.take();
    assert_eq!(names(&reqs), ["ReadRows", "CheckAndMutateRow"]);
    let Request::ReadRows(r) = &reqs[0] else {
        unreachable!()
    };
    assert_eq!(r.rows_limit, 1);
    assert_eq!(
        r.rows.row_ranges[0].start,
        KeyBound::Open(b"b\x00\x7fVk\x00".to_vec())
    );
    assert_eq!(
        r.rows.row_ranges[0].end,
        KeyBound::Open(b"b\x00\x7fVk\x01".to_vec())
    );
    assert_eq!(
        events,
        [put(
            "\x7fMk".into(),
            &format!(
                r#"{{"key":"k","n":1,"versionId":"{v1}","originOp":"s3:ObjectRemoved:Delete"}}"#
            )
        )]
    );
    let again: AsyncRepair = OpMachine::new_delayed(
        AsyncRepairOp { task: task.clone() },
        table.into(),
        task.due,
        task.due,
        9,
        None,
    );
    assert_eq!(
        run(&rec, &ManualClock::new(task.due), again, |_| {}).unwrap(),
        RepairOutcome::Conflict
    );
}

fn deadline(store: &dyn Store, table: &str) {
    let mut rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    {
        let mut om = ObjectMetadata::new(&rec, &clock, scenario_state(table, VFormat::V1), 1);
        om.setup().unwrap();
        om.create_bucket("b", &j(r#"{"name":"b"}"#)).unwrap();
    }
    rec.fail_reads = true;
    let mut om = ObjectMetadata::new(&rec, &clock, scenario_state(table, VFormat::V1), 1);
    om.create_bucket("b", &j(r#"{"name":"b"}"#)).unwrap();
    rec_take_writes(&rec);
    let start = clock_now(&clock);
    assert_eq!(
        om.list_object("b", &ListingParams::default()),
        Err(ObjmetaError::Aborted)
    );
    assert_eq!(clock_now(&clock), Timestamp(start.0 + 60_000_000));
    assert!(rec.take().iter().all(|r| matches!(r, Request::ReadRows(_))));
}

fn rec_take_writes(rec: &Recorder<'_>) {
    rec.take();
}

fn clock_now(c: &ManualClock) -> Timestamp {
    use rowkit_embedded::driver::Clock;
    c.now()
}

fn skip_streak(store: &dyn Store, table: &str, vf: VFormat) {
    let rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut om = ObjectMetadata::new(&rec, &clock, scenario_state(table, vf), 1);
    om.setup().unwrap();
    om.create_bucket("b", &j(r#"{"name":"b"}"#)).unwrap();
    let ver = j(r#"{"versioning":true}"#);
    for n in 0..120 {
        clock.advance_to(Timestamp::from_millis(T0 + 1 + n));
        om.put_object(
            "b",
            "a",
            &j(&format!(r#"{{"key":"a","n":{n}}}"#)),
            Some(&ver),
        )
        .unwrap();
    }
    om.put_object("b", "b", &j(r#"{"key":"b","n":1}"#), Some(&ver))
        .unwrap();
    rec.take();
    let p = ListingParams {
        listing_type: ListingType::DelimiterMaster,
        ..Default::default()
    };
    let r = om.list_object("b", &p).unwrap();
    assert_eq!(arr(&r, "Contents").len(), 2);
    let scans: Vec<_> = rec
        .take()
        .into_iter()
        .map(|q| match q {
            Request::ReadRows(q) => q.rows,
            other => panic!("{other:?}"),
        })
        .collect();
    let range = |rs: &RowSet| (rs.row_ranges[0].start.clone(), rs.row_ranges[0].end.clone());
    match vf {
        VFormat::V0 => {
            assert_eq!(scans.len(), 2);
            assert_eq!(
                range(&scans[0]),
                (
                    KeyBound::Closed(b"b\x00".to_vec()),
                    KeyBound::Open(b"b\x01".to_vec())
                )
            );
            assert_eq!(
                range(&scans[1]),
                (
                    KeyBound::Closed(b"b\x00a\x01".to_vec()),
                    KeyBound::Open(b"b\x01".to_vec())
                )
            );
        }
        VFormat::V1 => {
            assert_eq!(scans.len(), 1);
            assert_eq!(
                range(&scans[0]),
                (
                    KeyBound::Closed(b"b\x00\x7fM".to_vec()),
                    KeyBound::Open(b"b\x00\x7fN".to_vec())
                )
            );
        }
    }
}

/// Scenario 25: with `value.deleted = true` on every row of `k` (a direct store edit), reads
/// and both listings ignore `k`.
fn deleted_flag_invisibility(store: &dyn Store, table: &str, vf: VFormat) {
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut om = ObjectMetadata::new(store, &clock, scenario_state(table, vf), 1);
    om.setup().unwrap();
    om.create_bucket("b", &j(r#"{"name":"b"}"#)).unwrap();
    let ver = j(r#"{"versioning":true}"#);
    for n in 1..=2 {
        clock.advance_to(Timestamp::from_millis(T0 + n));
        om.put_object(
            "b",
            "k",
            &j(&format!(r#"{{"key":"k","n":{n}}}"#)),
            Some(&ver),
        )
        .unwrap();
    }
    om.put_object("b", "other", &j(r#"{"key":"other"}"#), Some(&ver))
        .unwrap();
    for row in bucket_rows(store, table, "b").unwrap() {
        let key = row.get("key").and_then(Json::as_str).unwrap().to_string();
        if key.contains("other") {
            continue;
        }
        let mut value = row.get("value").unwrap().clone();
        value
            .as_object_mut()
            .unwrap()
            .set("deleted", Json::Bool(true));
        let req = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
            table: table.into(),
            row_key: rowkit_codec::objmeta::keys::row_key("b", &key),
            mutations: rowkit_codec::objmeta::cells::replace(&value, None),
            ..Default::default()
        });
        store.execute(req, Timestamp(0)).unwrap();
    }
    assert_eq!(om.get_object("b", "k", None), Err(ObjmetaError::NoSuchKey));
    for lt in [ListingType::DelimiterMaster, ListingType::DelimiterVersions] {
        let r = om
            .list_object(
                "b",
                &ListingParams {
                    listing_type: lt,
                    ..Default::default()
                },
            )
            .unwrap();
        let list = arr(
            &r,
            if lt == ListingType::DelimiterVersions {
                "Versions"
            } else {
                "Contents"
            },
        );
        let keys: Vec<_> = list
            .iter()
            .map(|e| e.get("key").and_then(Json::as_str).unwrap())
            .collect();
        assert_eq!(keys, ["other"], "{lt:?} {vf:?}");
    }
}

fn all(store: &dyn Store) {
    deleted_flag_invisibility(store, "acc-deleted0", VFormat::V0);
    deleted_flag_invisibility(store, "acc-deleted1", VFormat::V1);
    metastore_uuid_count(store, "acc-meta");
    cache_behaviour(store, "acc-cache");
    events_and_repair_machine(store, "acc-events");
    deadline(store, "acc-deadline");
    skip_streak(store, "acc-skip0", VFormat::V0);
    skip_streak(store, "acc-skip1", VFormat::V1);
}

#[test]
fn acceptance_memory() {
    all(&MemoryStore::new());
}

#[test]
fn acceptance_redb() {
    let dir = std::env::temp_dir().join(format!("rowkit-objmeta-acc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    all(&RedbStore::open(dir.join("acc.redb")).unwrap());
}
