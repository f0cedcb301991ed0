//! The objmeta scenario traces of `vectors/objmeta.json` (`objmeta.md` 18) as functions over
//! any [`Store`]: each scenario runs on its own table through the sync facade, and after every
//! step the result, the error, the pending repair count and the whole bucket (every row, in
//! key order) are compared with the vector. The same functions serve MemoryStore, RedbStore
//! and the emulator-backed store.
//!
//! Also the acceptance scenarios the traces do not cover ([`ACCEPTANCE`]: metastore, uuid and
//! count, change events and the repair machine, the vFormat cache, the deadline, the skip
//! streak's requests, deleted-flag invisibility) and the crash at every cut point of a
//! versioned put or delete ([`crash_at_every_cut`]). Like tests, they panic on a failure.
#![allow(clippy::unwrap_used, clippy::panic)]

use rowkit_codec::model::{RowRange, RowSet};
use rowkit_codec::objmeta::cells::{StoredDoc, filters};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{VFormat, collection_end, collection_start};
use rowkit_codec::objmeta::listing::ListingParams;
use rowkit_statemachines::objmeta::{ObjmetaConfig, ObjmetaState};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{ReadRowsRequest, RetryPolicy, Timestamp};

use crate::Store;
use crate::driver::{ManualClock, run};
use crate::objmeta::ObjectMetadata;

use std::sync::Mutex;

use rowkit_codec::model::{ColumnFamily, KeyBound};
use rowkit_codec::objmeta::listing::ListingType;
use rowkit_statemachines::objmeta::{
    AsyncRepair, AsyncRepairOp, DeleteObjectOp, ObjmetaError, ObjmetaEvent, OpMachine, PutObjectOp,
    RepairOutcome, RepairTask,
};
use rowkit_statemachines::{Code, Machine, Request, StoreError};

use crate::{Reply, Response};

/// JSON equality with member order ignored (how the vectors compare documents).
pub fn json_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(n, v)| y.get(n).is_some_and(|w| json_eq(v, w)))
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| json_eq(v, w))
        }
        _ => a == b,
    }
}

/// The state of the scenarios: pid 4242, rg `RG001`, the scenario's default vFormat.
pub fn scenario_state(table: &str, vformat: VFormat) -> ObjmetaState {
    ObjmetaState::new(ObjmetaConfig {
        table: table.to_string(),
        pid: 4242,
        default_bucket_key_format: vformat,
        ..ObjmetaConfig::default()
    })
}

/// Every row of a bucket's collection as `{key, row_key_hex, value}`, in key order.
pub fn bucket_rows(store: &dyn Store, table: &str, collection: &str) -> Result<Vec<Json>, String> {
    let req = ReadRowsRequest {
        table: table.to_string(),
        rows: RowSet::range(RowRange::half_open(
            collection_start(collection),
            collection_end(collection),
        )),
        filter: Some(filters::latest()),
        ..Default::default()
    };
    let m = ReadRows::new(req, Timestamp(0), 0, RetryPolicy::default());
    let mut rows = Vec::new();
    run(store, &ManualClock::new(Timestamp(0)), m, |r| rows.push(r))
        .map_err(|e| format!("{e:?}"))?;
    let n = collection.len() + 1;
    rows.iter()
        .map(|r| {
            let doc = StoredDoc::from_row(r)
                .map_err(|e| e.to_string())?
                .ok_or("row without d:value")?;
            let key = String::from_utf8_lossy(&r.key[n.min(r.key.len())..]).into_owned();
            let hex: String = r.key.iter().map(|b| format!("{b:02x}")).collect();
            Ok(Json::Object(
                [
                    ("key".to_string(), Json::str(key)),
                    ("row_key_hex".to_string(), Json::str(hex)),
                    ("value".to_string(), doc.value),
                ]
                .into_iter()
                .collect(),
            ))
        })
        .collect()
}

fn get_str<'a>(v: &'a Json, name: &str) -> Result<&'a str, String> {
    v.get(name)
        .and_then(Json::as_str)
        .ok_or(format!("missing string {name}"))
}

/// A listing result with each value parsed (the vectors' form).
fn parse_listing_values(mut result: Json) -> Json {
    if let Some(o) = result.as_object_mut() {
        for list in ["Contents", "Versions"] {
            if let Some(Json::Array(items)) = o.get_mut(list) {
                for item in items {
                    if let Some(io) = item.as_object_mut()
                        && let Some(Json::String(text)) = io.get("value").cloned()
                        && let Ok(v) = Json::parse(&text)
                    {
                        io.set("value", v);
                    }
                }
            }
        }
    }
    result
}

/// Runs one operation of a trace; returns `(data, error id)`.
fn run_op<S: Store + ?Sized>(
    om: &mut ObjectMetadata<'_, S, ManualClock>,
    bucket: &str,
    op: &Json,
) -> Result<(Option<Json>, Option<String>), String> {
    let name = get_str(op, "op")?;
    let params = op.get("params").filter(|p| !matches!(p, Json::Null));
    let key = op.get("key").and_then(Json::as_str).unwrap_or("");
    let split = |r: Result<Option<Json>, rowkit_statemachines::objmeta::ObjmetaError>| match r {
        Ok(d) => (d, None),
        Err(e) => (None, Some(e.id().to_string())),
    };
    Ok(match name {
        "putObject" => {
            let value = op.get("value").cloned().unwrap_or_default();
            split(
                om.put_object(bucket, key, &value, params)
                    .map(|r| r.map(Json::String)),
            )
        }
        "getObject" => {
            let vid = params
                .and_then(|p| p.get("versionId"))
                .and_then(Json::as_str);
            split(om.get_object(bucket, key, vid).map(Some))
        }
        "deleteObject" => split(om.delete_object(bucket, key, params, None).map(|()| None)),
        "listObject" => {
            let lp = ListingParams::from_json(params.unwrap_or(&Json::Null));
            split(
                om.list_object(bucket, &lp)
                    .map(|r| Some(parse_listing_values(r))),
            )
        }
        "runRepairs" => {
            let n = om.run_all_repairs().len();
            (Some(Json::Number(n as f64)), None)
        }
        other => return Err(format!("unknown op {other}")),
    })
}

/// Replays one scenario of the vectors on `store`, in table `table` (created here).
pub fn replay_scenario(store: &dyn Store, table: &str, scenario: &Json) -> Result<(), String> {
    let name = get_str(scenario, "name")?;
    let vf = VFormat::parse(get_str(scenario, "vFormat")?).map_err(|e| e.to_string())?;
    let bucket = get_str(scenario, "bucket")?;
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let mut om = ObjectMetadata::new(store, &clock, scenario_state(table, vf), 1);
    om.setup().map_err(|e| e.to_string())?;
    let md = Json::parse(&format!(r#"{{"name":"{bucket}","owner":"ownerid"}}"#))
        .map_err(|e| e.to_string())?;
    om.create_bucket(bucket, &md)
        .map_err(|e| format!("{name}: createBucket: {e}"))?;
    let empty = Vec::new();
    let setup = match scenario.get("setup") {
        Some(Json::Array(s)) => s,
        _ => &empty,
    };
    for (i, op) in setup.iter().enumerate() {
        let ms = op.get("clockMs").and_then(|c| {
            if let Json::Number(n) = c {
                Some(*n as i64)
            } else {
                None
            }
        });
        if let Some(ms) = ms {
            clock.advance_to(Timestamp(ms * 1000));
        }
        let (_, err) = run_op(&mut om, bucket, op)?;
        if let Some(e) = err {
            return Err(format!("{name} [{}]: setup {i} failed: {e}", vf.as_str()));
        }
    }
    let Some(Json::Array(steps)) = scenario.get("steps") else {
        return Err(format!("{name}: no steps"));
    };
    for step in steps {
        let label = get_str(step, "label")?;
        let at = |what: &str| format!("{name} [{}] step {label:?}: {what}", vf.as_str());
        if let Some(Json::Number(ms)) = step.get("clockMs") {
            clock.advance_to(Timestamp(*ms as i64 * 1000));
        }
        let op = step.get("op").ok_or(at("no op"))?;
        let (data, err) = run_op(&mut om, bucket, op)?;
        let want_err = step.get("err").and_then(Json::as_str).map(String::from);
        if err != want_err {
            return Err(at(&format!("error {err:?}, expected {want_err:?}")));
        }
        let want_data = step.get("data");
        match (&data, want_data) {
            (None, None) => {}
            (Some(d), Some(w)) if json_eq(d, w) => {}
            _ => {
                return Err(at(&format!(
                    "data {}, expected {}",
                    data.as_ref().map_or("(none)".into(), Json::stringify),
                    want_data.map_or("(none)".into(), Json::stringify)
                )));
            }
        }
        if let Some(Json::Number(n)) = step.get("pendingRepairs")
            && om.pending_repairs().len() != *n as usize
        {
            return Err(at(&format!(
                "{} pending repairs, expected {n}",
                om.pending_repairs().len()
            )));
        }
        if let Some(want) = step.get("stateAfter") {
            let coll = rowkit_codec::objmeta::keys::collection_for_bucket(bucket);
            let got = Json::Array(bucket_rows(store, table, coll)?);
            if !json_eq(&got, want) {
                return Err(at(&format!(
                    "state\n  got  {}\n  want {}",
                    got.stringify(),
                    want.stringify()
                )));
            }
        }
    }
    Ok(())
}

/// Replays every scenario of `vectors` on `store`, each in table `objmeta-<i>`; returns the
/// number run, or every failure.
pub fn replay_all(store: &dyn Store, vectors: &Json) -> Result<usize, Vec<String>> {
    let Some(Json::Array(scenarios)) = vectors.get("scenarios") else {
        return Err(vec!["no scenarios in the vectors".into()]);
    };
    let failures: Vec<String> = scenarios
        .iter()
        .enumerate()
        .filter_map(|(i, s)| replay_scenario(store, &format!("objmeta-{i}"), s).err())
        .collect();
    if failures.is_empty() {
        Ok(scenarios.len())
    } else {
        Err(failures)
    }
}

// -------------------------------------------------------------------------------------------
// Acceptance scenarios (`objmeta.md` 18) beyond the traces.

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

/// Scenario 30 (+ getObjects, capabilities, getBucketAndObject, count items): metastore
/// rows as the vectors' `metastore_rows`, `getUUID` as `infostore_get_uuid`, `countItems`.
pub fn metastore_uuid_count(store: &dyn Store, table: &str, vectors: &Json) {
    let v = vectors;
    let rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut om = ObjectMetadata::new(&rec, &clock, scenario_state(table, VFormat::V1), 1);
    om.setup().unwrap();
    let b_case = arr(v, "metastore_rows")
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
    let uuid_case = &arr(v, "infostore_get_uuid")[0];
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

/// Scenario 34: the bucket vFormat cache (no metastore read after createBucket, one per
/// fresh process, a re-read after deleteBucket).
pub fn cache_behaviour(store: &dyn Store, table: &str) {
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

/// Scenarios 32-33: change events of a versioned put and of a delete of the current
/// version (placeholder master, RepairScheduled), then the repair machine: waits for `due`,
/// reads the latest version, writes the master conditionally; a second run conflicts.
pub fn events_and_repair_machine(store: &dyn Store, table: &str) {
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

/// Scenario 35: a listing whose reads keep failing ends `Aborted` at the 60 s deadline.
pub fn deadline(store: &dyn Store, table: &str) {
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
    use crate::driver::Clock;
    c.now()
}

/// Scenario 24: a DelimiterMaster listing past a key with 120 versions skips them with one
/// re-seek (v0) or never reads them (v1); checks the exact scan ranges.
pub fn skip_streak(store: &dyn Store, table: &str, vf: VFormat) {
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
pub fn deleted_flag_invisibility(store: &dyn Store, table: &str, vf: VFormat) {
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

/// An acceptance scenario of [`ACCEPTANCE`]: (store, table, the objmeta vectors).
pub type AcceptanceScenario = fn(&dyn Store, &str, &Json);

/// The acceptance scenarios of `objmeta.md` 18 that the traces do not cover, by name; each
/// creates its table (a fresh name per call).
pub const ACCEPTANCE: &[(&str, AcceptanceScenario)] = &[
    ("deleted_flag_invisibility_v0", |s, t, _| {
        deleted_flag_invisibility(s, t, VFormat::V0)
    }),
    ("deleted_flag_invisibility_v1", |s, t, _| {
        deleted_flag_invisibility(s, t, VFormat::V1)
    }),
    ("metastore_uuid_count", metastore_uuid_count),
    ("cache_behaviour", |s, t, _| cache_behaviour(s, t)),
    ("events_and_repair_machine", |s, t, _| {
        events_and_repair_machine(s, t)
    }),
    ("deadline", |s, t, _| deadline(s, t)),
    ("skip_streak_v0", |s, t, _| skip_streak(s, t, VFormat::V0)),
    ("skip_streak_v1", |s, t, _| skip_streak(s, t, VFormat::V1)),
];

/// Every [`ACCEPTANCE`] scenario on `store`, each in table `acc-<name>`.
pub fn acceptance_all(store: &dyn Store, vectors: &Json) {
    for (name, scenario) in ACCEPTANCE {
        scenario(store, &format!("acc-{name}"), vectors);
    }
}

// -------------------------------------------------------------------------------------------
// Crash at every cut point (`objmeta.md` 8.4).

/// Drives `m` until `cut` requests were executed; the last one's reply is never delivered.
/// Returns whether the machine finished before the cut.
fn run_until_cut<M: Machine>(store: &dyn Store, now: Timestamp, mut m: M, cut: usize) -> bool {
    let mut sent = 0;
    {
        while let Some((tag, req)) = m.poll_request() {
            let reply = store.execute(req, now);
            sent += 1;
            if sent == cut {
                return false;
            }
            match reply {
                Ok(Reply::Unary(r)) => m.handle_response(tag, Ok(r), now),
                Ok(Reply::Stream(parts)) => {
                    for p in parts {
                        m.handle_response(tag, p, now);
                    }
                    m.handle_response(tag, Ok(Response::StreamEnd), now);
                }
                Err(e) => m.handle_response(tag, Err(e), now),
            }
        }
        while m.poll_event().is_some() {}
        if m.result().is_some() {
            return true;
        }
        assert!(m.poll_timeout().is_some(), "stalled");
        panic!("an object machine waits only for replies");
    }
}

/// `n` of the visible object (None = NoSuchKey or a delete marker).
fn visible<S: Store + ?Sized>(
    om: &mut ObjectMetadata<'_, S, ManualClock>,
    key: &str,
) -> Option<i64> {
    match om.get_object("b", key, None) {
        Ok(v) if !v.member_truthy("isDeleteMarker") => match v.get("n") {
            Some(Json::Number(n)) => Some(*n as i64),
            _ => None,
        },
        _ => None,
    }
}

fn listed<S: Store + ?Sized>(
    om: &mut ObjectMetadata<'_, S, ManualClock>,
    key: &str,
) -> Option<i64> {
    let p = ListingParams {
        listing_type: ListingType::DelimiterMaster,
        ..Default::default()
    };
    let r = om.list_object("b", &p).unwrap();
    let Some(Json::Array(items)) = r.get("Contents") else {
        panic!("no Contents")
    };
    items
        .iter()
        .find(|e| e.get("key").and_then(Json::as_str) == Some(key))
        .map(|e| {
            let v = Json::parse(e.get("value").and_then(Json::as_str).unwrap()).unwrap();
            match v.get("n") {
                Some(Json::Number(n)) => *n as i64,
                _ => -1,
            }
        })
}

/// The operation a crash cuts.
#[derive(Clone, Copy, Debug)]
pub enum Crashing {
    /// A versioned put over one version.
    PutSecondVersion,
    /// A delete of the current of two versions (leaves a placeholder master).
    DeleteCurrentOfTwo,
    /// A delete of the only version.
    DeleteOnlyVersion,
    /// A versioned put of a delete marker over two versions.
    PutDeleteMarker,
}

/// One cut of one operation on a fresh table `table`: the operation is dropped after its
/// `cut`-th request (applied, reply lost); reads and listings must answer the value from
/// before or after, and repairing a placeholder master left behind must keep that answer.
/// Returns whether the machine finished before the cut.
pub fn crash_case(store: &dyn Store, table: &str, vf: VFormat, what: Crashing, cut: usize) -> bool {
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let mut om = ObjectMetadata::new(store, &clock, scenario_state(table, vf), 1);
    om.setup().unwrap();
    om.create_bucket("b", &j(r#"{"name":"b"}"#)).unwrap();
    let versioning = j(r#"{"versioning":true}"#);
    clock.advance_to(Timestamp::from_millis(1_700_000_000_001));
    let r1 = om
        .put_object("b", "k", &j(r#"{"key":"k","n":1}"#), Some(&versioning))
        .unwrap()
        .unwrap();
    let v1 = Json::parse(&r1)
        .unwrap()
        .get("versionId")
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    let mut v2 = None;
    if !matches!(
        what,
        Crashing::PutSecondVersion | Crashing::DeleteOnlyVersion
    ) {
        clock.advance_to(Timestamp::from_millis(1_700_000_000_002));
        let r = om
            .put_object("b", "k", &j(r#"{"key":"k","n":2}"#), Some(&versioning))
            .unwrap()
            .unwrap();
        v2 = Some(
            Json::parse(&r)
                .unwrap()
                .get("versionId")
                .unwrap()
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let before = visible(&mut om, "k");
    clock.advance_to(Timestamp::from_millis(1_700_000_000_010));
    let now = Timestamp::from_millis(1_700_000_000_010);
    // The machine borrows a copy of the facade's state, as a process that crashes would.
    let mut state: ObjmetaState = om.state().clone();
    let (finished, after) = match what {
        Crashing::PutSecondVersion => {
            let op = PutObjectOp {
                bucket: "b".into(),
                key: "k".into(),
                value: j(r#"{"key":"k","n":2}"#),
                params: Some(versioning.clone()),
            };
            (
                run_until_cut(
                    store,
                    now,
                    OpMachine::new(op, &mut state, now, 7, None),
                    cut,
                ),
                Some(2),
            )
        }
        Crashing::PutDeleteMarker => {
            let op = PutObjectOp {
                bucket: "b".into(),
                key: "k".into(),
                value: j(r#"{"key":"k","n":3,"isDeleteMarker":true}"#),
                params: Some(versioning.clone()),
            };
            (
                run_until_cut(
                    store,
                    now,
                    OpMachine::new(op, &mut state, now, 7, None),
                    cut,
                ),
                None,
            )
        }
        Crashing::DeleteCurrentOfTwo => {
            let params = Json::Object(
                [("versionId".to_string(), Json::str(v2.clone().unwrap()))]
                    .into_iter()
                    .collect(),
            );
            let op = DeleteObjectOp {
                bucket: "b".into(),
                key: "k".into(),
                params: Some(params),
                origin_op: None,
            };
            (
                run_until_cut(
                    store,
                    now,
                    OpMachine::new(op, &mut state, now, 7, None),
                    cut,
                ),
                Some(1),
            )
        }
        Crashing::DeleteOnlyVersion => {
            let params = Json::Object(
                [("versionId".to_string(), Json::str(v1.clone()))]
                    .into_iter()
                    .collect(),
            );
            let op = DeleteObjectOp {
                bucket: "b".into(),
                key: "k".into(),
                params: Some(params),
                origin_op: None,
            };
            (
                run_until_cut(
                    store,
                    now,
                    OpMachine::new(op, &mut state, now, 7, None),
                    cut,
                ),
                None,
            )
        }
    };
    *om.state_mut() = state;
    let ctx = format!("{what:?} {vf:?} cut {cut}");
    let got = visible(&mut om, "k");
    assert!(
        got == before || got == after,
        "{ctx}: read {got:?}, expected {before:?} or {after:?}"
    );
    assert_eq!(
        listed(&mut om, "k"),
        got,
        "{ctx}: listing disagrees with the read"
    );
    // The repair path: a placeholder master left behind is repaired from the latest version.
    let mk = rowkit_codec::objmeta::keys::master_key(vf, "k");
    let rows = bucket_rows(store, table, "b").unwrap();
    let phd = rows
        .iter()
        .find(|r| r.get("key").and_then(Json::as_str) == Some(mk.as_str()))
        .and_then(|r| {
            let v = r.get("value").unwrap();
            v.member_truthy("isPHD")
                .then(|| v.get("versionId").unwrap().as_str().unwrap().to_string())
        });
    if let Some(p) = phd {
        let report = om.run_repair(RepairTask {
            bucket: "b".into(),
            key: "k".into(),
            phd_version_id: p,
            vformat: vf,
            due: Timestamp::from_millis(1_700_000_000_020),
        });
        let rows = bucket_rows(store, table, "b").unwrap();
        let master = rows
            .iter()
            .find(|r| r.get("key").and_then(Json::as_str) == Some(mk.as_str()));
        // With no version left the repair ends `NoVersion` and leaves the PHD (objmeta.md 8.4),
        // which reads and listings resolve to "no object".
        if let Some(m) = master.filter(|_| report.outcome != RepairOutcome::NoVersion) {
            assert!(
                !m.get("value").unwrap().member_truthy("isPHD"),
                "{ctx}: PHD survived the repair"
            );
        }
        assert_eq!(
            visible(&mut om, "k"),
            got,
            "{ctx}: the repair changed the answer"
        );
        assert_eq!(listed(&mut om, "k"), got, "{ctx}: listing after repair");
    }
    finished
}

/// [`crash_case`] at every cut point of every [`Crashing`] operation, in v0 and v1, each on
/// its own table `crash-<n>`; returns the number of cases run.
pub fn crash_at_every_cut(store: &dyn Store) -> usize {
    let mut cases = 0;
    for vf in [VFormat::V0, VFormat::V1] {
        for what in [
            Crashing::PutSecondVersion,
            Crashing::DeleteCurrentOfTwo,
            Crashing::DeleteOnlyVersion,
            Crashing::PutDeleteMarker,
        ] {
            let mut cut = 1;
            loop {
                cases += 1;
                let table = format!("crash-{cases}");
                if crash_case(store, &table, vf, what, cut) {
                    break;
                }
                cut += 1;
                assert!(cut < 50, "{what:?} never finishes");
            }
        }
    }
    cases
}
