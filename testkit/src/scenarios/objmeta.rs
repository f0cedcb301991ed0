//! The objmeta scenario traces of `vectors/objmeta.json` (`objmeta.md` 18) as functions over
//! any [`Store`]: each scenario runs on its own table through `rowkit_client`'s facade over the sync driver, and after every
//! step the result, the error, the pending repair count and the whole bucket (every row, in
//! key order) are compared with the vector. The same functions serve MemoryStore, RedbStore
//! and the emulator-backed store.
//!
//! Also the acceptance scenarios the traces do not cover ([`ACCEPTANCE`]: metastore, uuid and
//! count, change events and the repair machine, the vFormat cache, the deadline, the skip
//! streak's requests, deleted-flag invisibility, the single-format traces replayed in the other
//! format, and scenarios 10–13 and 19 in both formats) and the crash at every cut point of
//! nine versioned puts and deletes ([`crash_at_every_cut`]). Like tests, they panic on a
//! failure.
#![allow(clippy::unwrap_used, clippy::panic)]

use rowkit_codec::model::{RowRange, RowSet};
use rowkit_codec::objmeta::cells::{StoredDoc, filters};
use rowkit_codec::objmeta::json::{Json, JsonObject};
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::listing::ListingParams;
use rowkit_statemachines::objmeta::{ObjmetaConfig, ObjmetaState};
use rowkit_statemachines::operation::OperationError;
use rowkit_statemachines::{ReadRowsRequest, Timestamp};

use super::read_key;

use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::run_blocking;
use rowkit_client::{CallOptions, SyncDriver, block_on};
use rowkit_store::Store;
use rowkit_store::driver::ManualClock;

use std::sync::Mutex;

use rowkit_codec::model::{ColumnFamily, KeyBound};
use rowkit_codec::objmeta::listing::ListingType;
use rowkit_statemachines::objmeta::{
    AsyncRepair, DEFAULT_DEADLINE_US, DeleteObject, ListObject, ObjmetaError, ObjmetaEvent,
    PutObject, RepairOutcome, RepairTask,
};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::{Code, Machine, Request, StoreError};

use rowkit_store::{Reply, Response};

/// Every row of a bucket's collection as Arsenal's JSON, read from `store`
/// ([`rowkit_client::objmeta::bucket_rows`]).
pub fn bucket_rows(store: &dyn Store, table: &str, collection: &str) -> Result<Vec<Json>, String> {
    let clock = ManualClock::new(Timestamp(0));
    block_on(rowkit_client::objmeta::bucket_rows(
        &SyncDriver::new(store, &clock),
        table,
        collection,
    ))
}

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

fn get_str<'a>(v: &'a Json, name: &str) -> Result<&'a str, String> {
    v.get(name)
        .and_then(Json::as_str)
        .ok_or(format!("missing string {name}"))
}

/// The members of a trace object, checked against the ones its kind defines: an unknown
/// member fails the replay (it is never ignored), naming `what`.
fn members<'a>(v: &'a Json, allowed: &[&str], what: &str) -> Result<&'a JsonObject, String> {
    let o = v
        .as_object()
        .ok_or(format!("{what}: not an object: {}", v.stringify()))?;
    for (name, _) in o.iter() {
        if !allowed.contains(&name) {
            return Err(format!(
                "{what}: unknown member {name:?} (known: {})",
                allowed.join(", ")
            ));
        }
    }
    Ok(o)
}

/// A whole number (the vectors write JSON integers).
fn get_int(v: &Json, what: &str) -> Result<i64, String> {
    match v {
        Json::Number(n) if n.fract() == 0.0 => Ok(*n as i64),
        other => Err(format!("{what}: not an integer: {}", other.stringify())),
    }
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

/// One operation of a trace (`meta.conventions.scenarios.op` of the vectors: putObject,
/// getObject, deleteObject, listObject, runRepairs, rawSetDeleted).
#[derive(Clone, Debug, PartialEq)]
enum TraceOp {
    Put {
        key: String,
        value: Json,
        params: Option<Json>,
    },
    Get {
        key: String,
        version_id: Option<String>,
    },
    Delete {
        key: String,
        params: Option<Json>,
    },
    List {
        params: Option<Json>,
    },
    RunRepairs,
    /// Test-only direct store edit (`objmeta.md` 18): `value.deleted = true` written with
    /// `REPLACE` on the master and every version row of the object key.
    RawSetDeleted {
        key: String,
    },
}

/// `params`: absent or `null` is none.
fn params_of(o: &JsonObject) -> Option<Json> {
    o.get("params")
        .filter(|p| !matches!(p, Json::Null))
        .cloned()
}

/// Parses an op object; `extra` names members the context adds (a setup op's `clockMs`).
fn parse_op(op: &Json, extra: &[&str], what: &str) -> Result<TraceOp, String> {
    let name = get_str(op, "op").map_err(|e| format!("{what}: {e}"))?;
    let what = format!("{what}: op {name}");
    fn with<'a>(own: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        own.iter().chain(extra).copied().collect()
    }
    let key = |o: &JsonObject| -> Result<String, String> {
        o.get("key")
            .and_then(Json::as_str)
            .map(String::from)
            .ok_or(format!("{what}: no key"))
    };
    Ok(match name {
        "putObject" => {
            let o = members(op, &with(&["op", "key", "value", "params"], extra), &what)?;
            TraceOp::Put {
                key: key(o)?,
                value: o.get("value").cloned().ok_or(format!("{what}: no value"))?,
                params: params_of(o),
            }
        }
        "getObject" => {
            let o = members(op, &with(&["op", "key", "params"], extra), &what)?;
            let version_id = match params_of(o) {
                None => None,
                Some(p) => {
                    let po = members(&p, &["versionId"], &format!("{what} params"))?;
                    po.get("versionId").and_then(Json::as_str).map(String::from)
                }
            };
            TraceOp::Get {
                key: key(o)?,
                version_id,
            }
        }
        "deleteObject" => {
            let o = members(op, &with(&["op", "key", "params"], extra), &what)?;
            TraceOp::Delete {
                key: key(o)?,
                params: params_of(o),
            }
        }
        "listObject" => {
            let o = members(op, &with(&["op", "params"], extra), &what)?;
            TraceOp::List {
                params: params_of(o),
            }
        }
        "runRepairs" => {
            members(op, &with(&["op"], extra), &what)?;
            TraceOp::RunRepairs
        }
        "rawSetDeleted" => {
            let o = members(op, &with(&["op", "key", "objectKey"], extra), &what)?;
            let key = match (o.get("key"), o.get("objectKey")) {
                (Some(Json::String(k)), None) | (None, Some(Json::String(k))) => k.clone(),
                _ => return Err(format!("{what}: needs one string key (or objectKey)")),
            };
            TraceOp::RawSetDeleted { key }
        }
        other => return Err(format!("{what}: unknown op {other:?}")),
    })
}

/// `rawSetDeleted(key)`: every row of the object (its master and each version) rewritten with
/// `REPLACE(value + {deleted: true})`, straight on the store.
fn raw_set_deleted(
    store: &dyn Store,
    table: &str,
    bucket: &str,
    vf: VFormat,
    key: &str,
) -> Result<(), String> {
    use rowkit_codec::objmeta::keys;
    let coll = keys::collection_for_bucket(bucket);
    let master = keys::master_key(vf, key);
    let versions = keys::version_key(vf, key, "");
    for row in bucket_rows(store, table, coll)? {
        let arsenal_key = get_str(&row, "key")?.to_string();
        if arsenal_key != master && !arsenal_key.starts_with(&versions) {
            continue;
        }
        let mut value = row.get("value").cloned().ok_or("row without value")?;
        value
            .as_object_mut()
            .ok_or("row value is not an object")?
            .set("deleted", Json::Bool(true));
        let req = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
            table: table.into(),
            row_key: keys::row_key(coll, &arsenal_key),
            mutations: rowkit_codec::objmeta::cells::replace(&value, None),
            ..Default::default()
        });
        store
            .execute(req, Timestamp(0))
            .map_err(|e| format!("rawSetDeleted {arsenal_key:?}: {e}"))?;
    }
    Ok(())
}

/// Runs one operation of a trace; returns `(data, error id)`.
fn run_op<S: Store + ?Sized>(
    om: &ObjectMetadata<SyncDriver<&S, &ManualClock>>,
    store: &dyn Store,
    table: &str,
    bucket: &str,
    op: &TraceOp,
) -> Result<(Option<Json>, Option<String>), String> {
    let split = |r: Result<Option<Json>, rowkit_statemachines::objmeta::ObjmetaError>| match r {
        Ok(d) => (d, None),
        Err(e) => (None, Some(e.id().to_string())),
    };
    Ok(match op {
        TraceOp::Put { key, value, params } => split(
            block_on(om.put_object(bucket, key, value, params.as_ref()))
                .map(|put| put.result.map(Json::String)),
        ),
        TraceOp::Get { key, version_id } => {
            split(block_on(om.get_object(bucket, key, version_id.as_deref())).map(Some))
        }
        TraceOp::Delete { key, params } => {
            split(block_on(om.delete_object(bucket, key, params.as_ref(), None)).map(|()| None))
        }
        TraceOp::List { params } => {
            let lp = ListingParams::from_json(params.as_ref().unwrap_or(&Json::Null));
            split(block_on(om.list_object(bucket, &lp)).map(|r| Some(parse_listing_values(r))))
        }
        TraceOp::RunRepairs => {
            let n = block_on(om.run_all_repairs()).len();
            (Some(Json::Number(n as f64)), None)
        }
        TraceOp::RawSetDeleted { key } => {
            let vf = block_on(om.get_bucket_vformat(bucket)).map_err(|e| e.to_string())?;
            raw_set_deleted(store, table, bucket, vf, key)?;
            (None, None)
        }
    })
}

/// Every string inside `v` (values, not member names).
fn strings_in<'a>(v: &'a Json, out: &mut std::collections::BTreeSet<&'a str>) {
    match v {
        Json::String(s) => {
            out.insert(s);
        }
        Json::Array(items) => items.iter().for_each(|i| strings_in(i, out)),
        Json::Object(o) => o.iter().for_each(|(_, m)| strings_in(m, out)),
        _ => {}
    }
}

/// The scenario members the vectors define (`meta.conventions.scenarios`).
const SCENARIO_MEMBERS: &[&str] = &["name", "vFormat", "bucket", "vars", "setup", "steps"];
/// The step members.
const STEP_MEMBERS: &[&str] = &[
    "label",
    "clockMs",
    "op",
    "err",
    "data",
    "stateAfter",
    "pendingRepairs",
];

/// Replays one scenario of the vectors on `store`, in table `table` (created here). Every
/// member of the scenario, its steps and their ops is read: an unknown one fails the replay.
/// `vars` names version ids the replay must have produced (returned, listed or stored).
pub fn replay_scenario(store: &dyn Store, table: &str, scenario: &Json) -> Result<(), String> {
    let name = get_str(scenario, "name")?;
    let sc = members(scenario, SCENARIO_MEMBERS, &format!("scenario {name}"))?;
    let vf = VFormat::parse(get_str(scenario, "vFormat")?).map_err(|e| e.to_string())?;
    let bucket = get_str(scenario, "bucket")?;
    let name = format!("{name} [{}]", vf.as_str());
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let om = ObjectMetadata::new(SyncDriver::new(store, &clock), scenario_state(table, vf))
        .with_options(CallOptions {
            seed: 1,
            ..CallOptions::default()
        });
    block_on(om.setup()).map_err(|e| e.to_string())?;
    let md = Json::parse(&format!(r#"{{"name":"{bucket}","owner":"ownerid"}}"#))
        .map_err(|e| e.to_string())?;
    block_on(om.create_bucket(bucket, &md)).map_err(|e| format!("{name}: createBucket: {e}"))?;
    let coll = rowkit_codec::objmeta::keys::collection_for_bucket(bucket);
    // Before each step the clock moves to the step's `clockMs`, or 1 ms on without one.
    let mut ms = 1_700_000_000_000;
    let mut tick = |c: Option<&Json>, what: &str| -> Result<(), String> {
        ms = match c {
            Some(c) => get_int(c, &format!("{what}: clockMs"))?,
            None => ms + 1,
        };
        clock.advance_to(Timestamp(ms * 1000));
        Ok(())
    };
    let no_setup = Vec::new();
    let setup = match sc.get("setup") {
        None => &no_setup,
        Some(Json::Array(s)) => s,
        Some(other) => {
            return Err(format!(
                "{name}: setup is not a list: {}",
                other.stringify()
            ));
        }
    };
    for (i, op) in setup.iter().enumerate() {
        let what = format!("{name}: setup {i}");
        let parsed = parse_op(op, &["clockMs"], &what)?;
        tick(op.get("clockMs"), &what)?;
        let (_, err) = run_op(&om, store, table, bucket, &parsed)?;
        if let Some(e) = err {
            return Err(format!("{what} failed: {e}"));
        }
    }
    let Some(Json::Array(steps)) = sc.get("steps") else {
        return Err(format!("{name}: no steps"));
    };
    // Every string the replay saw: results and the bucket's rows after each step.
    let mut seen: Vec<Json> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let label = step
            .get("label")
            .and_then(Json::as_str)
            .map_or(format!("#{i}"), String::from);
        let at = |what: &str| format!("{name} step {label:?}: {what}");
        let st = members(step, STEP_MEMBERS, &at("step"))?;
        tick(st.get("clockMs"), &at("step"))?;
        let op = parse_op(st.get("op").ok_or(at("no op"))?, &[], &at("step"))?;
        let (data, err) = run_op(&om, store, table, bucket, &op)?;
        let want_err = match st.get("err") {
            None | Some(Json::Null) => None,
            Some(Json::String(e)) => Some(e.clone()),
            Some(other) => return Err(at(&format!("err is {}", other.stringify()))),
        };
        if err != want_err {
            return Err(at(&format!("error {err:?}, expected {want_err:?}")));
        }
        let want_data = st.get("data");
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
        if let Some(n) = st.get("pendingRepairs") {
            let n = get_int(n, &at("pendingRepairs"))?;
            if om.pending_repairs().len() as i64 != n {
                return Err(at(&format!(
                    "{} pending repairs, expected {n}",
                    om.pending_repairs().len()
                )));
            }
        }
        let got = Json::Array(bucket_rows(store, table, coll)?);
        if let Some(want) = st.get("stateAfter")
            && !json_eq(&got, want)
        {
            return Err(at(&format!(
                "state\n  got  {}\n  want {}",
                got.stringify(),
                want.stringify()
            )));
        }
        seen.extend(data);
        seen.push(got);
    }
    match sc.get("vars") {
        None => {}
        Some(Json::Object(vars)) => {
            let mut strings = std::collections::BTreeSet::new();
            for v in &seen {
                strings_in(v, &mut strings);
            }
            for (var, value) in vars.iter() {
                let id = value
                    .as_str()
                    .ok_or(format!("{name}: var {var} is not a string"))?;
                // A put's result is the JSON text `{"versionId": …}`: look inside it too.
                let inside_put_result = seen.iter().any(|d| {
                    d.as_str()
                        .and_then(|t| Json::parse(t).ok())
                        .is_some_and(|j| j.get("versionId").and_then(Json::as_str) == Some(id))
                });
                if !strings.contains(id) && !inside_put_result {
                    return Err(format!(
                        "{name}: var {var} = {id:?} is no id the replay produced"
                    ));
                }
            }
        }
        Some(other) => return Err(format!("{name}: vars is {}", other.stringify())),
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

/// A store that records every request and can refuse reads (scans and point reads) with
/// UNAVAILABLE.
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
        if self.fail_reads && request.rpc_name() == "ReadRows" {
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

/// The `d`/`f` cells a `MutateRow` sets, as the vectors write them (`f:` values as hex under
/// `f:<q>_hex`).
fn written_cells(write: &rowkit_statemachines::MutateRowRequest) -> Json {
    let mut cells = Vec::new();
    for m in &write.mutations {
        if let rowkit_codec::model::Mutation::SetCell {
            family,
            qualifier,
            value,
            ..
        } = m
        {
            let q = String::from_utf8(qualifier.clone()).unwrap();
            let (name, text) = if family == "d" {
                (format!("d:{q}"), String::from_utf8(value.clone()).unwrap())
            } else {
                (
                    format!("{family}:{q}_hex"),
                    value.iter().map(|b| format!("{b:02x}")).collect(),
                )
            };
            cells.push((name, Json::str(text)));
        }
    }
    Json::Object(cells.into_iter().collect())
}

/// `DEFAULT_BUCKET_KEY_FORMAT` as a host reads it (`objmeta.md` 4.3, 16.1): `v0` or `v1`,
/// anything else (or unset) `v1`.
fn default_format(env: Option<&str>) -> VFormat {
    match env {
        Some("v0") => VFormat::V0,
        _ => VFormat::V1,
    }
}

/// Every `metastore_rows` case of the vectors, each on its own table: createBucket with the
/// case's document value answers the document's vFormat, writes exactly the case's cells under
/// its row key, and the row reads back as the document.
pub fn metastore_rows(store: &dyn Store, table: &str, vectors: &Json) {
    for (i, case) in arr(vectors, "metastore_rows").iter().enumerate() {
        let what = case.stringify();
        members(
            case,
            &["bucket", "row_key_hex", "document", "cells"],
            "metastore_rows",
        )
        .unwrap();
        let doc = case.get("document").unwrap();
        members(doc, &["_id", "value", "vFormat"], "metastore_rows document").unwrap();
        let bucket = get_str(case, "bucket").unwrap();
        assert_eq!(
            doc.get("_id").and_then(Json::as_str),
            Some(bucket),
            "{what}"
        );
        let table = format!("{table}-{i}");
        let rec = Recorder::new(store);
        let clock = ManualClock::new(Timestamp::from_millis(T0));
        let om = ObjectMetadata::new(
            SyncDriver::new(&rec, &clock),
            scenario_state(&table, VFormat::V1),
        )
        .with_options(CallOptions {
            seed: 1,
            ..CallOptions::default()
        });
        block_on(om.setup()).unwrap();
        rec.take();
        let value = doc.get("value").unwrap();
        let vf = block_on(om.create_bucket(bucket, value)).unwrap();
        assert_eq!(
            Some(vf.as_str()),
            doc.get("vFormat").and_then(Json::as_str),
            "{what}"
        );
        let row_key = rowkit_codec::objmeta::keys::row_key("__metastore", bucket);
        let writes: Vec<_> = rec
            .take()
            .into_iter()
            .filter_map(|r| match r {
                Request::MutateRow(m) if m.row_key == row_key => Some(m),
                _ => None,
            })
            .collect();
        let [write] = writes.as_slice() else {
            panic!("{what}: {} metastore writes", writes.len())
        };
        let got = written_cells(write);
        assert!(
            json_eq(&got, case.get("cells").unwrap()),
            "{what}: cells {}",
            got.stringify()
        );
        let rows = bucket_rows(&rec, &table, "__metastore").unwrap();
        let row = rows
            .iter()
            .find(|r| r.get("key") == Some(&Json::str(bucket)))
            .unwrap_or_else(|| panic!("{what}: no metastore row"));
        assert_eq!(row.get("row_key_hex"), case.get("row_key_hex"), "{what}");
        let stored = block_on(om.get_bucket_attributes(bucket)).unwrap();
        assert!(json_eq(&stored, value), "{what}: {}", stored.stringify());
    }
}

/// Every `infostore_get_uuid` case of the vectors, each on its own table: the calls with their
/// candidates answer the case's results (the first sends one `CheckAndMutateRow`, each later
/// one a `CheckAndMutateRow` and a `ReadRow`), under the case's row key, and the stored
/// `d:value` is the case's.
pub fn infostore_get_uuid(store: &dyn Store, table: &str, vectors: &Json) {
    for (i, case) in arr(vectors, "infostore_get_uuid").iter().enumerate() {
        let what = case.stringify();
        members(
            case,
            &["description", "calls", "row_key_hex", "final_d_value"],
            "infostore_get_uuid",
        )
        .unwrap();
        let table = format!("{table}-{i}");
        let rec = Recorder::new(store);
        let clock = ManualClock::new(Timestamp::from_millis(T0));
        let om = ObjectMetadata::new(
            SyncDriver::new(&rec, &clock),
            scenario_state(&table, VFormat::V1),
        )
        .with_options(CallOptions {
            seed: 1,
            ..CallOptions::default()
        });
        block_on(om.setup()).unwrap();
        rec.take();
        let calls = arr(case, "calls");
        assert!(!calls.is_empty(), "{what}: no calls");
        let mut want_requests = Vec::new();
        for (n, call) in calls.iter().enumerate() {
            members(call, &["candidate", "result"], "infostore_get_uuid call").unwrap();
            let got = block_on(om.get_uuid(call.get("candidate").and_then(Json::as_str))).unwrap();
            assert_eq!(
                Some(got.as_str()),
                call.get("result").and_then(Json::as_str),
                "{what}: call {n}"
            );
            want_requests.push("CheckAndMutateRow");
            if n > 0 {
                want_requests.push("ReadRows");
            }
        }
        assert_eq!(names(&rec.take()), want_requests, "{what}");
        // The uuid row: its key and exactly the vector's `d:value` text.
        let uuid_key = rowkit_codec::objmeta::keys::row_key(
            rowkit_codec::objmeta::keys::INFOSTORE,
            rowkit_codec::objmeta::keys::UUID_KEY,
        );
        let hex: String = uuid_key.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            Some(hex.as_str()),
            case.get("row_key_hex").and_then(Json::as_str),
            "{what}"
        );
        let rows = rowkit_client::read_rows_blocking(
            store,
            ReadRowsRequest {
                table: table.clone(),
                rows: RowSet::key(uuid_key),
                filter: Some(filters::latest()),
                ..Default::default()
            },
            Timestamp(0),
        )
        .unwrap();
        let [row] = rows.as_slice() else {
            panic!("{what}: uuid rows {rows:?}")
        };
        let doc = StoredDoc::from_row(row).unwrap().unwrap();
        assert_eq!(
            Some(doc.text.as_str()),
            case.get("final_d_value").and_then(Json::as_str),
            "{what}"
        );
    }
}

/// Every `bucket_vformat` case of the vectors, each on its own table:
/// - `createBucket`: with `default_bucket_key_format` from the case's
///   `DEFAULT_BUCKET_KEY_FORMAT` (absent or `null`: unset), createBucket answers the case's
///   vFormat and getBucketVFormat then reads it from the cache (no request);
/// - `getBucketVFormat`: with the case's `metastore_row` document stored (`null`: no row),
///   two getBucketVFormat calls answer its vFormat; without a row each call reads the
///   metastore row (a missing row is not cached), with one only the first does.
pub fn bucket_vformat(store: &dyn Store, table: &str, vectors: &Json) {
    for (i, case) in arr(vectors, "bucket_vformat").iter().enumerate() {
        let what = case.stringify();
        let table = format!("{table}-{i}");
        let operation = get_str(case, "operation").unwrap();
        let bucket = get_str(case, "bucket").unwrap();
        let want = VFormat::parse(get_str(case, "vFormat").unwrap()).unwrap();
        let metastore_row = rowkit_codec::objmeta::keys::row_key("__metastore", bucket);
        let rec = Recorder::new(store);
        let clock = ManualClock::new(Timestamp::from_millis(T0));
        let mut state = scenario_state(&table, VFormat::V1);
        match operation {
            "createBucket" => {
                let o = members(
                    case,
                    &[
                        "operation",
                        "bucket",
                        "DEFAULT_BUCKET_KEY_FORMAT",
                        "vFormat",
                    ],
                    "bucket_vformat",
                )
                .unwrap();
                let env = match o.get("DEFAULT_BUCKET_KEY_FORMAT") {
                    None | Some(Json::Null) => None,
                    Some(Json::String(v)) => Some(v.as_str()),
                    Some(other) => {
                        panic!("{what}: DEFAULT_BUCKET_KEY_FORMAT {}", other.stringify())
                    }
                };
                state.config.default_bucket_key_format = default_format(env);
                let om = ObjectMetadata::new(SyncDriver::new(&rec, &clock), state).with_options(
                    CallOptions {
                        seed: 1,
                        ..CallOptions::default()
                    },
                );
                block_on(om.setup()).unwrap();
                let md =
                    Json::parse(&format!(r#"{{"name":"{bucket}","owner":"ownerid"}}"#)).unwrap();
                assert_eq!(
                    block_on(om.create_bucket(bucket, &md)).unwrap(),
                    want,
                    "{what}"
                );
                rec.take();
                assert_eq!(
                    block_on(om.get_bucket_vformat(bucket)).unwrap(),
                    want,
                    "{what}"
                );
                assert_eq!(names(&rec.take()), Vec::<&str>::new(), "{what}: cached");
            }
            "getBucketVFormat" => {
                let o = members(
                    case,
                    &["operation", "bucket", "metastore_row", "vFormat"],
                    "bucket_vformat",
                )
                .unwrap();
                let om = ObjectMetadata::new(SyncDriver::new(&rec, &clock), state).with_options(
                    CallOptions {
                        seed: 1,
                        ..CallOptions::default()
                    },
                );
                block_on(om.setup()).unwrap();
                let stored = match o.get("metastore_row") {
                    None | Some(Json::Null) => false,
                    Some(doc) => {
                        let d =
                            members(doc, &["_id", "value", "vFormat"], "metastore_row").unwrap();
                        assert_eq!(d.get("_id").and_then(Json::as_str), Some(bucket), "{what}");
                        let req = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
                            table: table.clone(),
                            row_key: metastore_row.clone(),
                            mutations: rowkit_codec::objmeta::cells::replace(
                                d.get("value").unwrap_or(&Json::Null),
                                d.get("vFormat").and_then(Json::as_str),
                            ),
                            ..Default::default()
                        });
                        store.execute(req, Timestamp(0)).unwrap();
                        true
                    }
                };
                rec.take();
                for _ in 0..2 {
                    assert_eq!(
                        block_on(om.get_bucket_vformat(bucket)).unwrap(),
                        want,
                        "{what}"
                    );
                }
                let reads: Vec<_> = rec
                    .take()
                    .into_iter()
                    .map(|r| match read_key(&r) {
                        Some(key) => key.to_vec(),
                        None => panic!("{what}: {r:?}"),
                    })
                    .collect();
                let want_reads = if stored { 1 } else { 2 };
                assert_eq!(reads, vec![metastore_row.clone(); want_reads], "{what}");
            }
            other => panic!("{what}: unknown bucket_vformat operation {other:?}"),
        }
    }
}

/// Scenario 30 (+ getObjects, capabilities, getBucketAndObject, count items): createBucket of
/// `b` with the `md` of the vectors' `metastore_rows` case of bucket `b` (the spec's; a plain
/// BucketInfo if the file has none), and of `users..bucket`, `PENSIEVE` and
/// `mpuShadowBucketb` with the same `md` renamed, then `countItems`, the uuid and
/// `bucket_vformat` cases ([`metastore_rows`], [`infostore_get_uuid`], [`bucket_vformat`]
/// check every vector case on its own table).
pub fn metastore_uuid_count(store: &dyn Store, table: &str, vectors: &Json) {
    metastore_rows(store, &format!("{table}-rows"), vectors);
    infostore_get_uuid(store, &format!("{table}-uuid"), vectors);
    bucket_vformat(store, &format!("{table}-vformat"), vectors);
    let rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let om = ObjectMetadata::new(
        SyncDriver::new(&rec, &clock),
        scenario_state(table, VFormat::V1),
    )
    .with_options(CallOptions {
        seed: 1,
        ..CallOptions::default()
    });
    block_on(om.setup()).unwrap();
    let md = arr(vectors, "metastore_rows")
        .iter()
        .find(|c| c.get("bucket") == Some(&Json::str("b")))
        .and_then(|c| c.get("document")?.get("value").cloned())
        .unwrap_or_else(|| {
            j(r#"{"acl":{"Canned":"private","FULL_CONTROL":[],"WRITE":[],"WRITE_ACP":[],"READ":[],"READ_ACP":[]},"name":"b","owner":"ownerid","ownerDisplayName":"ownerdisplay","creationDate":"2024-01-01T00:00:00.000Z","mdBucketModelVersion":16,"transient":false,"deleted":false}"#)
        });
    let mut written = Vec::new();
    for (bucket, vf) in [
        ("b", VFormat::V1),
        ("users..bucket", VFormat::V0),
        ("PENSIEVE", VFormat::V0),
        ("mpuShadowBucketb", VFormat::V0),
    ] {
        let mut m = md.clone();
        m.as_object_mut().unwrap().set("name", Json::str(bucket));
        assert_eq!(
            block_on(om.create_bucket(bucket, &m)).unwrap(),
            vf,
            "{bucket}"
        );
        written.push(m);
    }
    rec.take();

    // countItems: the bucket list derived from the md written for `b`, the only non-special
    // bucket (objmeta.md 11: members whose source is absent are omitted); the counters are
    // readCountItems' defaults, as nothing was counted yet.
    let count = block_on(om.count_items()).unwrap();
    let b_md = &written[0];
    let mut entry = JsonObject::new();
    for (member, source) in [
        ("name", "name"),
        ("location", "locationConstraint"),
        ("isVersioned", "versioningConfiguration"),
        ("ownerCanonicalId", "owner"),
        ("ingestion", "ingestion"),
    ] {
        if let Some(v) = b_md.get(source) {
            let truthiness = matches!(member, "isVersioned" | "ingestion");
            entry.set(
                member,
                if truthiness {
                    Json::Bool(v.truthy())
                } else {
                    v.clone()
                },
            );
        }
    }
    let mut want = j(
        r#"{"objects":0,"versions":0,"buckets":1,"dataManaged":{"total":{"curr":0,"prev":0},"byLocation":{}},"stalled":0}"#,
    );
    let w = want.as_object_mut().unwrap();
    w.set("bucketList", Json::Array(vec![Json::Object(entry)]));
    w.set(
        "bucketWithQuotaCount",
        Json::Number(f64::from(u8::from(b_md.member_truthy("quotaMax")))),
    );
    assert!(json_eq(&count, &want), "{}", count.stringify());

    // getObjects: argument errors, an empty list, found / missing / missing version.
    assert!(
        matches!(block_on(om.get_objects("b", &j("{}"))), Err(ObjmetaError::InternalError(m)) if m == "objects must be an array")
    );
    assert_eq!(block_on(om.get_objects("b", &j("[]"))).unwrap(), j("[]"));
    block_on(om.put_object("b", "g", &j(r#"{"key":"g"}"#), Some(&j("{}")))).unwrap();
    let got = block_on(om.get_objects(
        "b",
        &j(r#"[{"key":"g"},{"key":"h"},{"key":"g","params":{"versionId":"x"}}]"#),
    ))
    .unwrap();
    let want = j(
        r#"[{"err":null,"doc":{"key":"g"},"key":"\u007fMg"},{"err":"NoSuchKey","doc":null,"key":"\u007fMh"},{"err":"NoSuchKey","doc":null,"versionId":"x","key":"\u007fVg\u0000x"}]"#,
    );
    assert!(json_eq(&got, &want), "{}", got.stringify());

    // Capabilities: nested upsert, sub-field, removal, removal of nothing, upsert of a new row.
    rec.take();
    block_on(om.put_bucket_capability(
        "b",
        "VeeamSOSApi",
        Some("CapacityInfo"),
        &j(r#"{"Capacity":1}"#),
    ))
    .unwrap();
    block_on(om.put_bucket_capability("b", "other", None, &j("true"))).unwrap();
    let caps = block_on(om.get_bucket_attributes("b"))
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
    block_on(om.delete_bucket_capability("b", "VeeamSOSApi", Some("CapacityInfo"))).unwrap();
    rec.take();
    block_on(om.delete_bucket_capability("b", "absent", None)).unwrap();
    assert_eq!(
        names(&rec.take()),
        ["ReadRows"],
        "removing nothing writes nothing"
    );
    let caps = block_on(om.get_bucket_attributes("b"))
        .unwrap()
        .get("capabilities")
        .cloned()
        .unwrap();
    assert!(
        json_eq(&caps, &j(r#"{"VeeamSOSApi":{},"other":true}"#)),
        "{}",
        caps.stringify()
    );
    block_on(om.put_bucket_capability("fresh", "c", None, &j("1"))).unwrap();
    assert!(json_eq(
        &block_on(om.get_bucket_attributes("fresh")).unwrap(),
        &j(r#"{"capabilities":{"c":1}}"#)
    ));
    block_on(om.delete_bucket("fresh")).unwrap();

    // getBucketAndObject, getBucketVFormat, read/updateCountItems.
    let (bucket_value, obj) = block_on(om.get_bucket_and_object("b", "nothing", None)).unwrap();
    assert_eq!(
        (bucket_value.get("name"), obj),
        (Some(&Json::str("b")), None)
    );
    assert_eq!(
        block_on(om.get_bucket_and_object("nope", "k", None)),
        Err(ObjmetaError::NoSuchBucket)
    );
    assert_eq!(
        block_on(om.get_bucket_vformat("PENSIEVE")).unwrap(),
        VFormat::V0
    );
    assert_eq!(
        block_on(om.read_count_items()).unwrap().get("buckets"),
        Some(&Json::Number(0.0))
    );
    block_on(om.update_count_items(&j(r#"{"objects":5,"versions":0,"buckets":0,"bucketList":[],"dataManaged":{"total":{"curr":0,"prev":0},"byLocation":{}},"stalled":0}"#))).unwrap();
    assert_eq!(
        block_on(om.count_items()).unwrap().get("objects"),
        Some(&Json::Number(5.0))
    );

    // vFormat of an unknown bucket is v0, read every time; deleteBucket is idempotent.
    rec.take();
    assert_eq!(
        block_on(om.get_object("nope", "k", None)),
        Err(ObjmetaError::NoSuchKey)
    );
    assert_eq!(
        block_on(om.get_object("nope", "k", None)),
        Err(ObjmetaError::NoSuchKey)
    );
    let metastore_reads = rec
        .take()
        .iter()
        .filter(|r| read_key(r).is_some_and(|k| k.starts_with(b"__metastore")))
        .count();
    assert_eq!(metastore_reads, 2);
    block_on(om.put_object("b", "k", &j(r#"{"key":"k"}"#), Some(&j("{}")))).unwrap();
    assert_eq!(block_on(om.delete_bucket("b")).unwrap(), 2); // "g" and "k"
    assert!(bucket_rows(&rec, table, "b").unwrap().is_empty());
    assert!(block_on(om.get_bucket_attributes("b")).is_err());
    assert_eq!(block_on(om.delete_bucket("b")).unwrap(), 0);
}

/// `putBucketAttributes` (`objmeta.md` 11): one `MutateRow` of the metastore row with
/// exactly the BucketInfo members of `md`, in BucketInfo order (unknown members dropped, no
/// `d:vFormat` mutation), and its `Put` event. An existing bucket keeps its `d:vFormat`; a
/// bucket created this way has none, so its vFormat reads `v0`.
pub fn put_bucket_attributes(store: &dyn Store, table: &str) {
    let rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let om = ObjectMetadata::new(
        SyncDriver::new(&rec, &clock),
        scenario_state(table, VFormat::V1),
    )
    .with_options(CallOptions {
        seed: 1,
        ..CallOptions::default()
    });
    block_on(om.setup()).unwrap();
    block_on(om.create_bucket("b", &j(r#"{"name":"b","owner":"ownerid"}"#))).unwrap();
    om.take_events();
    let md = j(r#"{"owner":"o2","unknown":1,"name":"b","acl":{"Canned":"private"}}"#);
    let stored = r#"{"acl":{"Canned":"private"},"name":"b","owner":"o2"}"#;
    for bucket in ["b", "nb"] {
        let mut md = md.clone();
        md.as_object_mut().unwrap().set("name", Json::str(bucket));
        let stored = stored.replace(r#""name":"b""#, &format!(r#""name":"{bucket}""#));
        rec.take();
        block_on(om.put_bucket_attributes(bucket, &md)).unwrap();
        let metastore_row = rowkit_codec::objmeta::keys::row_key("__metastore", bucket);
        let reqs = rec.take();
        let [Request::MutateRow(write)] = reqs.as_slice() else {
            panic!("{bucket}: {reqs:?}")
        };
        assert_eq!(write.row_key, metastore_row);
        assert_eq!(
            write.mutations,
            rowkit_codec::objmeta::cells::replace(&j(&stored), None),
            "{bucket}: no d:vFormat"
        );
        assert_eq!(
            om.take_events(),
            [ObjmetaEvent::Put {
                collection: "__metastore".into(),
                key: bucket.into(),
                value: stored.clone(),
            }]
        );
        assert_eq!(
            block_on(om.get_bucket_attributes(bucket))
                .unwrap()
                .stringify(),
            stored
        );
        // Another process (no cache) reads the stored vFormat.
        let fresh = ObjectMetadata::new(
            SyncDriver::new(store, &clock),
            scenario_state(table, VFormat::V1),
        )
        .with_options(CallOptions {
            seed: 2,
            ..CallOptions::default()
        });
        let want = if bucket == "b" {
            VFormat::V1
        } else {
            VFormat::V0
        };
        assert_eq!(
            block_on(fresh.get_bucket_vformat(bucket)).unwrap(),
            want,
            "{bucket}"
        );
    }
}

/// Scenario 34: the bucket vFormat cache (no metastore read after createBucket, one per
/// fresh process, a re-read after deleteBucket).
pub fn cache_behaviour(store: &dyn Store, table: &str) {
    let rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let om = ObjectMetadata::new(
        SyncDriver::new(&rec, &clock),
        scenario_state(table, VFormat::V1),
    )
    .with_options(CallOptions {
        seed: 1,
        ..CallOptions::default()
    });
    block_on(om.setup()).unwrap();
    block_on(om.create_bucket("b", &j(r#"{"name":"b"}"#))).unwrap();
    block_on(om.put_object("b", "k", &j(r#"{"key":"k"}"#), Some(&j("{}")))).unwrap();
    rec.take();
    block_on(om.get_object("b", "k", None)).unwrap();
    block_on(om.get_object("b", "k", None)).unwrap();
    assert_eq!(
        names(&rec.take()),
        ["ReadRows", "ReadRows"],
        "no metastore read after createBucket"
    );
    // A second state (another process) reads it once, then uses its cache.
    let other = ObjectMetadata::new(
        SyncDriver::new(&rec, &clock),
        scenario_state(table, VFormat::V1),
    )
    .with_options(CallOptions {
        seed: 2,
        ..CallOptions::default()
    });
    block_on(other.get_object("b", "k", None)).unwrap();
    block_on(other.get_object("b", "k", None)).unwrap();
    assert_eq!(rec.take().len(), 3);
    block_on(other.delete_bucket("b")).unwrap();
    rec.take();
    let _ = block_on(other.get_object("b", "k", None));
    assert_eq!(
        read_key(&rec.take()[0]),
        Some(b"__metastore\x00b".as_slice())
    );
}

/// A `Put` event of collection `b`.
fn put_ev(key: &str, value: &Json) -> ObjmetaEvent {
    ObjmetaEvent::Put {
        collection: "b".into(),
        key: key.into(),
        value: value.stringify(),
    }
}

/// A `Delete` event of collection `b`, with the pre-image when the delete read one.
fn delete_ev(key: &str, value: Option<&Json>) -> ObjmetaEvent {
    ObjmetaEvent::Delete {
        collection: "b".into(),
        key: key.into(),
        value: value.map(Json::stringify),
    }
}

/// Scenario 32 in `vf`: the whole event list of every operation it names, compared exactly.
/// A versioned put (version then master), the delete of the current version (placeholder
/// master, the version's pre-image, `RepairScheduled` due 15 s later) and the repair's master
/// `Put`; scenario 2's non-versioned delete (pre-image with `originOp` and `deleted`) and its
/// repetition (nothing); scenario 3's key-only delete, sent as exactly one `MutateRow` even
/// when no row exists; scenario 28's overwrite (`Delete` pre-image then `Put`, `originOp`
/// removed from the pre-image when the params have none) and its failing put on a missing key
/// (nothing); scenario 9's delete-marker put (v1: version `Put`, key-only master `Delete`; v0:
/// version and master `Put`). Each part runs on its own table `<table>-<scenario>`.
pub fn change_events(store: &dyn Store, table: &str, vf: VFormat) {
    // Each part on its own clock, so that its ids are the scenario's.
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    // Scenario 32's versioned sequence.
    let t32 = format!("{table}-32");
    let mut s = Steps::new(store, &clock, &t32, vf, "scenario 32");
    let v1 = s.vput("k", N1);
    let v1v = with_vid(N1, &v1);
    assert_eq!(
        s.om.take_events(),
        [put_ev(&s.v("k", &v1), &v1v), put_ev(&s.m("k"), &v1v)],
        "{}",
        s.at("versioned put")
    );
    let v2 = s.vput("k", N2);
    let v2v = with_vid(N2, &v2);
    assert_eq!(
        s.om.take_events(),
        [put_ev(&s.v("k", &v2), &v2v), put_ev(&s.m("k"), &v2v)]
    );
    s.del("k", &v2).unwrap();
    let v3 = s.next_id();
    let task = RepairTask {
        bucket: "b".into(),
        key: "k".into(),
        phd_version_id: v3.clone(),
        vformat: vf,
        due: Timestamp(1_700_000_015_003_000),
        migration: None,
    };
    assert_eq!(
        s.om.take_events(),
        [
            put_ev(
                &s.m("k"),
                &with(
                    N2,
                    &format!(r#"{{"versionId":"{v3}","isPHD":true,"deleted":false}}"#)
                )
            ),
            delete_ev(
                &s.v("k", &v2),
                Some(&with(
                    &v2v.stringify(),
                    r#"{"originOp":"s3:ObjectRemoved:Delete","deleted":true}"#
                ))
            ),
            ObjmetaEvent::RepairScheduled(task),
        ],
        "{}",
        s.at("delete of the current version")
    );
    assert_eq!(s.repairs(), [RepairOutcome::Repaired]);
    assert_eq!(
        s.om.take_events(),
        [put_ev(&s.m("k"), &with(&v1v.stringify(), ORIGIN))],
        "{}",
        s.at("repair")
    );

    // Scenario 2: non-versioned put, delete (pre-image), delete again (nothing).
    let t2 = format!("{table}-2");
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut s = Steps::new(store, &clock, &t2, vf, "scenario 2");
    s.put("k", &j(N1), &j("{}")).unwrap();
    assert_eq!(s.om.take_events(), [put_ev(&s.m("k"), &j(N1))]);
    s.tick();
    block_on(s.om.delete_object("b", "k", Some(&j("{}")), None)).unwrap();
    assert_eq!(
        s.om.take_events(),
        [delete_ev(
            &s.m("k"),
            Some(&with(
                N1,
                r#"{"originOp":"s3:ObjectRemoved:Delete","deleted":true}"#
            ))
        )],
        "{}",
        s.at("delete")
    );
    s.state_is(&[]);
    s.tick();
    block_on(s.om.delete_object("b", "k", Some(&j("{}")), None)).unwrap();
    assert_eq!(s.om.take_events(), [], "{}", s.at("second delete"));
    assert_eq!(s.get("k", None), Err(ObjmetaError::NoSuchKey));

    // Scenario 3: the key-only delete, one MutateRow, emitted even with no row there.
    let t3 = format!("{table}-3");
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let rec = Recorder::new(store);
    let mut s = Steps::new(&rec, &clock, &t3, vf, "scenario 3");
    s.put("k", &j(N1), &j("{}")).unwrap();
    s.om.take_events();
    let no_oplog = j(r#"{"doesNotNeedOpogUpdate":true}"#);
    let delete_request = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
        table: t3.clone(),
        row_key: rowkit_codec::objmeta::keys::row_key("b", &s.m("k")),
        mutations: vec![rowkit_codec::model::Mutation::DeleteFromRow],
        ..Default::default()
    });
    for round in ["existing row", "no row"] {
        rec.take();
        s.tick();
        block_on(s.om.delete_object("b", "k", Some(&no_oplog), None)).unwrap();
        assert_eq!(
            rec.take(),
            std::slice::from_ref(&delete_request),
            "{}",
            s.at(round)
        );
        assert_eq!(
            s.om.take_events(),
            [delete_ev(&s.m("k"), None)],
            "{}",
            s.at(round)
        );
        s.state_is(&[]);
    }

    // Scenario 28: the needOplogUpdate overwrite and its failure on a missing key.
    let t28 = format!("{table}-28");
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut s = Steps::new(store, &clock, &t28, vf, "scenario 28");
    s.put("k", &j(N1), &j("{}")).unwrap();
    s.om.take_events();
    let replace_archived = j(r#"{"needOplogUpdate":true,"originOp":"s3:ReplaceArchivedObject"}"#);
    assert_eq!(s.put("k", &j(N2), &replace_archived), Ok(None));
    assert_eq!(
        s.om.take_events(),
        [
            delete_ev(
                &s.m("k"),
                Some(&with(
                    N1,
                    r#"{"originOp":"s3:ReplaceArchivedObject","deleted":true}"#
                ))
            ),
            put_ev(&s.m("k"), &j(N2)),
        ],
        "{}",
        s.at("overwrite")
    );
    s.state_is(&[(s.m("k"), j(N2))]);
    // Without params.originOp the pre-image loses its own originOp.
    let tagged = r#"{"key":"k","n":3,"originOp":"earlier"}"#;
    s.put("k", &j(tagged), &j("{}")).unwrap();
    s.om.take_events();
    assert_eq!(
        s.put("k", &j(N1), &j(r#"{"needOplogUpdate":true}"#)),
        Ok(None)
    );
    assert_eq!(
        s.om.take_events(),
        [
            delete_ev(&s.m("k"), Some(&j(r#"{"key":"k","n":3,"deleted":true}"#))),
            put_ev(&s.m("k"), &j(N1)),
        ],
        "{}",
        s.at("overwrite without originOp")
    );
    let r = s.put("missing", &j(N2), &replace_archived);
    assert!(
        matches!(r, Err(ObjmetaError::InternalError(_))),
        "{}: {r:?}",
        s.at("overwrite of a missing key")
    );
    assert_eq!(s.om.take_events(), [], "{}", s.at("failing put"));
    s.state_is(&[(s.m("k"), j(N1))]);

    // Scenario 9: the delete-marker put over v1.
    let t9 = format!("{table}-9");
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut s = Steps::new(store, &clock, &t9, vf, "scenario 9");
    s.vput("k", N1);
    s.om.take_events();
    let dm = s.vput("k", DM0);
    let dmv = with_vid(DM0, &dm);
    let master = match vf {
        VFormat::V0 => put_ev(&s.m("k"), &dmv),
        VFormat::V1 => delete_ev(&s.m("k"), None),
    };
    assert_eq!(
        s.om.take_events(),
        [put_ev(&s.v("k", &dm), &dmv), master],
        "{}",
        s.at("delete-marker put")
    );
}

/// Scenario 33 in `vf`, after scenario 32's delete: the `AsyncRepair` machine sends nothing
/// and its `poll_timeout()` is `due` until `handle_timeout` reaches it; until it runs,
/// getObject answers v1 and DelimiterMaster lists `[k → v1]`. Then it sends exactly
/// `ReadRows(latest-version range, LIVE_VALUE, rows_limit 1)` and `CheckAndMutateRow(M(k),
/// EXISTS_AND_NOT(PHD_IS(v3)), true: [], false: REPLACE(v1 + originOp))`, ends `Repaired`
/// with the master's `Put`; a second repair of `v3` sends the same two requests, ends
/// `Conflict`, emits nothing and leaves every row as it was.
pub fn repair_machine(store: &dyn Store, table: &str, vf: VFormat) {
    let rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut s = Steps::new(&rec, &clock, table, vf, "scenario 33");
    let v1 = s.vput("k", N1);
    let v2 = s.vput("k", N2);
    s.del("k", &v2).unwrap();
    let v3 = s.next_id();
    let v1v = with_vid(N1, &v1);
    let [task] = s.om.drop_pending_repairs().try_into().unwrap();
    assert_eq!(task.phd_version_id, v3);
    assert_eq!(task.due, Timestamp(1_700_000_015_003_000));
    // The repair never ran: reads and listings resolve the placeholder.
    s.get_is("k", &v1v);
    s.masters_are(&[("k", &v1v)]);
    rec.take();
    let machine = |start: Timestamp| -> AsyncRepair {
        AsyncRepair::new(table, task.clone(), AsyncRepair::start_at(&task, start, 9))
    };
    let mut m = machine(Timestamp::from_millis(T0 + 20));
    assert!(m.poll_request().is_none());
    assert_eq!(m.poll_timeout(), Some(task.due));
    m.handle_timeout(Timestamp(task.due.0 - 1));
    assert!(m.poll_request().is_none());
    assert_eq!(m.poll_timeout(), Some(task.due));
    let repaired = with(&v1v.stringify(), ORIGIN);
    let read = Request::ReadRows(ReadRowsRequest {
        table: table.into(),
        rows: RowSet::range(RowRange {
            start: KeyBound::Open(rowkit_codec::objmeta::keys::row_key(
                "b",
                &match vf {
                    VFormat::V0 => s.m("k"),
                    VFormat::V1 => s.v("k", ""),
                },
            )),
            end: KeyBound::Open(rowkit_codec::objmeta::keys::row_key(
                "b",
                &format!("{}\u{1}", s.m("k").replace("\x7fM", "\x7fV")),
            )),
        }),
        filter: Some(filters::live_value()),
        rows_limit: 1,
        ..Default::default()
    });
    let write = Request::CheckAndMutateRow(rowkit_statemachines::CheckAndMutateRowRequest {
        table: table.into(),
        row_key: rowkit_codec::objmeta::keys::row_key("b", &s.m("k")),
        predicate: Some(filters::exists_and_not(filters::phd_is(&v3))),
        true_mutations: vec![],
        false_mutations: rowkit_codec::objmeta::cells::replace(&repaired, None),
        ..Default::default()
    });
    let mut events = Vec::new();
    let outcome = run_blocking(&rec, &ManualClock::new(task.due), m, |e| events.push(e)).unwrap();
    assert_eq!(outcome, RepairOutcome::Repaired, "{vf:?}");
    assert_eq!(rec.take(), [read.clone(), write.clone()], "{vf:?}");
    assert_eq!(events, [put_ev(&s.m("k"), &repaired)]);
    let before = bucket_rows(store, table, "b").unwrap();
    let mut events = Vec::new();
    let outcome = run_blocking(&rec, &ManualClock::new(task.due), machine(task.due), |e| {
        events.push(e)
    })
    .unwrap();
    assert_eq!(outcome, RepairOutcome::Conflict, "{vf:?}");
    assert_eq!(rec.take(), [read, write], "{vf:?}: the same two requests");
    assert_eq!(events, [], "{vf:?}: a conflict emits nothing");
    assert_eq!(
        bucket_rows(store, table, "b").unwrap(),
        before,
        "{vf:?}: a conflict writes nothing"
    );
}

/// Scenario 35: a listing whose reads keep failing ends `Aborted` at the 60 s deadline.
pub fn deadline(store: &dyn Store, table: &str) {
    let mut rec = Recorder::new(store);
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    {
        let om = ObjectMetadata::new(
            SyncDriver::new(&rec, &clock),
            scenario_state(table, VFormat::V1),
        )
        .with_options(CallOptions {
            seed: 1,
            ..CallOptions::default()
        });
        block_on(om.setup()).unwrap();
        block_on(om.create_bucket("b", &j(r#"{"name":"b"}"#))).unwrap();
    }
    rec.fail_reads = true;
    let om = ObjectMetadata::new(
        SyncDriver::new(&rec, &clock),
        scenario_state(table, VFormat::V1),
    )
    .with_options(CallOptions {
        seed: 1,
        ..CallOptions::default()
    });
    block_on(om.create_bucket("b", &j(r#"{"name":"b"}"#))).unwrap();
    rec_take_writes(&rec);
    let start = clock_now(&clock);
    assert_eq!(
        block_on(om.list_object("b", &ListingParams::default())),
        Err(ObjmetaError::Aborted)
    );
    assert_eq!(clock_now(&clock), Timestamp(start.0 + 60_000_000));
    assert!(rec.take().iter().all(|r| r.rpc_name() == "ReadRows"));
}

fn rec_take_writes(rec: &Recorder<'_>) {
    rec.take();
}

fn clock_now(c: &ManualClock) -> Timestamp {
    use rowkit_store::driver::Clock;
    c.now()
}

/// One scan of a listing driven by [`list_row_by_row`].
#[derive(Debug)]
struct ScanLog {
    /// Its row set.
    rows: RowSet,
    /// Rows handed to the machine before it aborted the scan or the scan ended.
    fed: usize,
    /// Whether the machine aborted it before its end.
    aborted: bool,
}

/// Runs a listing handing each scan's rows to the machine one row per message, so that the
/// rows it consumed before aborting a scan can be counted; returns the result and the scans.
fn list_row_by_row(
    store: &dyn Store,
    state: &mut ObjmetaState,
    bucket: &str,
    params: ListingParams,
    now: Timestamp,
) -> (Json, Vec<ScanLog>) {
    use rowkit_statemachines::ReadRowsResponse;
    let mut m = ListObject::new(
        state,
        bucket,
        params,
        Start::within(now, 5, DEFAULT_DEADLINE_US),
    );
    let mut scans = Vec::new();
    while let Some((tag, request)) = m.poll_request() {
        let Request::ReadRows(q) = request else {
            panic!("a listing sends only ReadRows: {request:?}")
        };
        let rows = rowkit_client::read_rows_blocking(store, q.clone(), now).unwrap();
        let mut log = ScanLog {
            rows: q.rows,
            fed: 0,
            aborted: false,
        };
        for row in &rows {
            let part = ReadRowsResponse {
                chunks: rowkit_store::semantics::row_chunks(row, None),
                ..Default::default()
            };
            m.handle_response(tag, Ok(Response::ReadRowsPart(part)), now);
            log.fed += 1;
            while let Some(t) = m.poll_abort() {
                log.aborted |= t == tag;
            }
            if log.aborted {
                break;
            }
        }
        if !log.aborted {
            m.handle_response(tag, Ok(Response::StreamEnd), now);
        }
        scans.push(log);
    }
    while m.poll_abort().is_some() {}
    let result = m.result().expect("the listing finished").unwrap();
    (result, scans)
}

/// Scenario 24: 120 versioned puts of `a` (the last with n = 119) and one of `b`;
/// DelimiterMaster lists `[a (n 119), b]`. v0 sends exactly two scans: `[b‖00, b‖01)`, aborted
/// after the master `a` and 100 skipped `a\0…` version rows (101 rows consumed), then
/// `[b‖00‖a\x01, b‖01)` to its end; v1 sends the single master-range scan `[b‖00‖\x7fM,
/// b‖00‖\x7fN)`, read to its end (two masters).
pub fn skip_streak(store: &dyn Store, table: &str, vf: VFormat) {
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let om = ObjectMetadata::new(SyncDriver::new(store, &clock), scenario_state(table, vf))
        .with_options(CallOptions {
            seed: 1,
            ..CallOptions::default()
        });
    block_on(om.setup()).unwrap();
    block_on(om.create_bucket("b", &j(r#"{"name":"b"}"#))).unwrap();
    let ver = j(r#"{"versioning":true}"#);
    for n in 0..120 {
        clock.advance_to(Timestamp::from_millis(T0 + 1 + n));
        block_on(om.put_object(
            "b",
            "a",
            &j(&format!(r#"{{"key":"a","n":{n}}}"#)),
            Some(&ver),
        ))
        .unwrap();
    }
    block_on(om.put_object("b", "b", &j(r#"{"key":"b","n":1}"#), Some(&ver))).unwrap();
    let p = ListingParams {
        listing_type: ListingType::DelimiterMaster,
        ..Default::default()
    };
    let now = clock_now(&clock);
    let (r, scans) = block_on(om.with_state(|st| list_row_by_row(store, st, "b", p, now)));
    let r = parse_listing_values(r);
    let listed: Vec<(&str, Option<&Json>)> = arr(&r, "Contents")
        .iter()
        .map(|e| {
            (
                e.get("key").and_then(Json::as_str).unwrap(),
                e.get("value").unwrap().get("n"),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("a", Some(&Json::Number(119.0))),
            ("b", Some(&Json::Number(1.0)))
        ]
    );
    let range = |start: &[u8], end: &[u8]| {
        RowSet::range(RowRange {
            start: KeyBound::Closed(start.to_vec()),
            end: KeyBound::Open(end.to_vec()),
        })
    };
    let got: Vec<(RowSet, usize, bool)> = scans
        .into_iter()
        .map(|s| (s.rows, s.fed, s.aborted))
        .collect();
    match vf {
        VFormat::V0 => assert_eq!(
            got,
            [
                (range(b"b\x00", b"b\x01"), 101, true),
                (range(b"b\x00a\x01", b"b\x01"), 2, false),
            ]
        ),
        VFormat::V1 => assert_eq!(got, [(range(b"b\x00\x7fM", b"b\x00\x7fN"), 2, false)]),
    }
}

/// Scenario 25: with `value.deleted = true` on every row of `k` (a direct store edit), reads
/// and both listings ignore `k`.
pub fn deleted_flag_invisibility(store: &dyn Store, table: &str, vf: VFormat) {
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let om = ObjectMetadata::new(SyncDriver::new(store, &clock), scenario_state(table, vf))
        .with_options(CallOptions {
            seed: 1,
            ..CallOptions::default()
        });
    block_on(om.setup()).unwrap();
    block_on(om.create_bucket("b", &j(r#"{"name":"b"}"#))).unwrap();
    let ver = j(r#"{"versioning":true}"#);
    for n in 1..=2 {
        clock.advance_to(Timestamp::from_millis(T0 + n));
        block_on(om.put_object(
            "b",
            "k",
            &j(&format!(r#"{{"key":"k","n":{n}}}"#)),
            Some(&ver),
        ))
        .unwrap();
    }
    block_on(om.put_object("b", "other", &j(r#"{"key":"other"}"#), Some(&ver))).unwrap();
    // The traces' `rawSetDeleted(k)` edit.
    raw_set_deleted(store, table, "b", vf, "k").unwrap();
    let flagged: Vec<bool> = bucket_rows(store, table, "b")
        .unwrap()
        .iter()
        .map(|r| r.get("value").unwrap().member_truthy("deleted"))
        .collect();
    // Master and two versions of `k` flagged (v0 and v1 alike), `other`'s rows not.
    assert_eq!(flagged.iter().filter(|d| **d).count(), 3, "{vf:?}");
    assert_eq!(flagged.len(), 5, "{vf:?}");
    assert_eq!(
        block_on(om.get_object("b", "k", None)),
        Err(ObjmetaError::NoSuchKey)
    );
    for lt in [ListingType::DelimiterMaster, ListingType::DelimiterVersions] {
        let r = block_on(om.list_object(
            "b",
            &ListingParams {
                listing_type: lt,
                ..Default::default()
            },
        ))
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

// -------------------------------------------------------------------------------------------
// Explicit scenarios of `objmeta.md` 18 in both formats: each step one machine run with the
// scenario clock, its result, the pending repairs and the whole bucket compared with what the
// spec states.

/// The raw id generated at `T0 + ms` ms with sequence 0 and uid counter `uid` (pid 4242, rg
/// `RG001`, `objmeta.md` 3.1–3.2): `98299999999998999999RG001  4242.0` for `(1, 0)`.
pub fn scenario_vid(ms: i64, uid: u64) -> String {
    format!(
        "{:014}{:06}RG001  4242.{uid}",
        99_999_999_999_999 - (T0 + ms),
        999_999
    )
}

/// `value` (JSON text) with `members` (JSON object text) set, in order.
fn with(value: &str, members: &str) -> Json {
    let mut v = j(value);
    let o = v.as_object_mut().unwrap();
    for (n, m) in j(members).as_object().unwrap().iter() {
        o.set(n, m.clone());
    }
    v
}

/// `value` with `versionId` set to `vid`.
fn with_vid(value: &str, vid: &str) -> Json {
    with(value, &format!(r#"{{"versionId":"{vid}"}}"#))
}

/// `{"versionId": vid}` as params.
fn vid_params(vid: &str) -> Json {
    Json::Object(
        [("versionId".to_string(), Json::str(vid))]
            .into_iter()
            .collect(),
    )
}

/// One listed entry: `(key, versionId for DelimiterVersions, value)`.
type Listed = (String, Option<String>, Json);

/// One explicit scenario run on bucket `b` in one format: the facade, its clock (moved 1 ms
/// forward before each step, `objmeta.md` 18) and the number of ids generated so far.
struct Steps<'a> {
    om: ObjectMetadata<SyncDriver<&'a dyn Store, &'a ManualClock>>,
    clock: &'a ManualClock,
    store: &'a dyn Store,
    table: &'a str,
    vf: VFormat,
    name: &'static str,
    ms: i64,
    uid: u64,
}

impl<'a> Steps<'a> {
    fn new(
        store: &'a dyn Store,
        clock: &'a ManualClock,
        table: &'a str,
        vf: VFormat,
        name: &'static str,
    ) -> Self {
        let om = ObjectMetadata::new(SyncDriver::new(store, clock), scenario_state(table, vf))
            .with_options(CallOptions {
                seed: 1,
                ..CallOptions::default()
            });
        block_on(om.setup()).unwrap();
        assert_eq!(
            block_on(om.create_bucket("b", &j(r#"{"name":"b","owner":"ownerid"}"#))).unwrap(),
            vf
        );
        om.take_events();
        Steps {
            om,
            clock,
            store,
            table,
            vf,
            name,
            ms: 0,
            uid: 0,
        }
    }

    fn at(&self, what: &str) -> String {
        format!(
            "{} [{}] step {}: {what}",
            self.name,
            self.vf.as_str(),
            self.ms
        )
    }

    fn tick(&mut self) {
        self.ms += 1;
        self.clock.advance_to(Timestamp::from_millis(T0 + self.ms));
    }

    /// The id generated by the current step (the next uid, sequence 0).
    fn next_id(&mut self) -> String {
        let id = scenario_vid(self.ms, self.uid);
        self.uid += 1;
        id
    }

    fn m(&self, key: &str) -> String {
        rowkit_codec::objmeta::keys::master_key(self.vf, key)
    }

    fn v(&self, key: &str, vid: &str) -> String {
        rowkit_codec::objmeta::keys::version_key(self.vf, key, vid)
    }

    fn put(
        &mut self,
        key: &str,
        value: &Json,
        params: &Json,
    ) -> Result<Option<String>, ObjmetaError> {
        self.tick();
        block_on(self.om.put_object("b", key, value, Some(params))).map(|put| put.result)
    }

    /// A `{versioning: true}` put (Case1) of `value`: returns its id, the one the generator
    /// gives this step.
    fn vput(&mut self, key: &str, value: &str) -> String {
        let r = self.put(key, &j(value), &j(r#"{"versioning":true}"#));
        let id = self.next_id();
        assert_eq!(
            r,
            Ok(Some(format!(r#"{{"versionId": "{id}"}}"#))),
            "{}",
            self.at("versioned put")
        );
        id
    }

    fn del(&mut self, key: &str, vid: &str) -> Result<(), ObjmetaError> {
        self.tick();
        block_on(
            self.om
                .delete_object("b", key, Some(&vid_params(vid)), None),
        )
    }

    fn get(&mut self, key: &str, vid: Option<&str>) -> Result<Json, ObjmetaError> {
        self.tick();
        block_on(self.om.get_object("b", key, vid))
    }

    /// Asserts that getObject of the latest version answers `want`.
    fn get_is(&mut self, key: &str, want: &Json) {
        let got = self.get(key, None).unwrap();
        assert!(
            json_eq(&got, want),
            "{}",
            self.at(&format!(
                "get {} want {}",
                got.stringify(),
                want.stringify()
            ))
        );
    }

    fn list(&mut self, lt: ListingType) -> Vec<Listed> {
        self.tick();
        let r = block_on(self.om.list_object(
            "b",
            &ListingParams {
                listing_type: lt,
                ..Default::default()
            },
        ))
        .unwrap();
        let r = parse_listing_values(r);
        let items = arr(
            &r,
            if lt == ListingType::DelimiterVersions {
                "Versions"
            } else {
                "Contents"
            },
        );
        items
            .iter()
            .map(|e| {
                (
                    e.get("key").and_then(Json::as_str).unwrap().to_string(),
                    e.get("versionId").and_then(Json::as_str).map(String::from),
                    e.get("value").cloned().unwrap(),
                )
            })
            .collect()
    }

    /// Asserts a DelimiterMaster listing: `(key, value)` per entry.
    fn masters_are(&mut self, want: &[(&str, &Json)]) {
        let got = self.list(ListingType::DelimiterMaster);
        let ok = got.len() == want.len()
            && got
                .iter()
                .zip(want)
                .all(|((k, _, v), (wk, wv))| k == wk && json_eq(v, wv));
        assert!(
            ok,
            "{}",
            self.at(&format!("DelimiterMaster {got:?}, want {want:?}"))
        );
    }

    /// Asserts a DelimiterVersions listing: `(key, versionId)` per entry.
    fn versions_are(&mut self, want: &[(&str, &str)]) {
        let got: Vec<(String, String)> = self
            .list(ListingType::DelimiterVersions)
            .into_iter()
            .map(|(k, v, _)| (k, v.unwrap_or_default()))
            .collect();
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want, "{}", self.at("DelimiterVersions"));
    }

    /// Runs every pending repair ("run repairs"), returns their outcomes.
    fn repairs(&mut self) -> Vec<RepairOutcome> {
        self.tick();
        block_on(self.om.run_all_repairs())
            .into_iter()
            .map(|r| r.outcome)
            .collect()
    }

    fn pending_is(&self, n: usize) {
        assert_eq!(
            self.om.pending_repairs().len(),
            n,
            "{}",
            self.at("pending repairs")
        );
    }

    /// The value of one row (Arsenal key), if present.
    fn row(&self, key: &str) -> Option<Json> {
        bucket_rows(self.store, self.table, "b")
            .unwrap()
            .into_iter()
            .find(|r| r.get("key").and_then(Json::as_str) == Some(key))
            .and_then(|r| r.get("value").cloned())
    }

    /// Asserts the whole bucket: `(Arsenal key, value)` per row, in key order.
    fn state_is(&self, want: &[(String, Json)]) {
        let got: Vec<(String, Json)> = bucket_rows(self.store, self.table, "b")
            .unwrap()
            .into_iter()
            .map(|r| {
                (
                    r.get("key").and_then(Json::as_str).unwrap().to_string(),
                    r.get("value").cloned().unwrap(),
                )
            })
            .collect();
        let ok = got.len() == want.len()
            && got
                .iter()
                .zip(want)
                .all(|((k, v), (wk, wv))| k == wk && json_eq(v, wv));
        let show = |rows: &[(String, Json)]| {
            rows.iter()
                .map(|(k, v)| format!("{k:?} = {}", v.stringify()))
                .collect::<Vec<_>>()
                .join("\n    ")
        };
        assert!(
            ok,
            "{}",
            self.at(&format!(
                "state\n  got\n    {}\n  want\n    {}",
                show(&got),
                show(want)
            ))
        );
    }
}

const DM0: &str = r#"{"key":"k","n":0,"isDeleteMarker":true}"#;
const N1: &str = r#"{"key":"k","n":1}"#;
const N2: &str = r#"{"key":"k","n":2}"#;
const N3: &str = r#"{"key":"k","n":3}"#;
const ORIGIN: &str = r#"{"originOp":"s3:ObjectRemoved:Delete"}"#;

/// Scenario 10: a delete marker put on a missing key. v0: the master is the delete marker and
/// its version row exists; v1: only `V(k, dm)` (the master removal emits `Delete` anyway,
/// scenario 32). getObject returns the marker; DelimiterMaster lists nothing,
/// DelimiterVersions `[k@dm]`.
pub fn dm_on_missing_key(store: &dyn Store, table: &str, vf: VFormat) {
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut s = Steps::new(store, &clock, table, vf, "scenario 10");
    let dm = s.vput("k", DM0);
    let dmv = with_vid(DM0, &dm);
    let put = |key: String| ObjmetaEvent::Put {
        collection: "b".into(),
        key,
        value: dmv.stringify(),
    };
    let events = s.om.take_events();
    match vf {
        VFormat::V0 => {
            assert_eq!(events, [put(s.v("k", &dm)), put(s.m("k"))]);
            s.state_is(&[(s.m("k"), dmv.clone()), (s.v("k", &dm), dmv.clone())]);
        }
        VFormat::V1 => {
            let removed = ObjmetaEvent::Delete {
                collection: "b".into(),
                key: s.m("k"),
                value: None,
            };
            assert_eq!(events, [put(s.v("k", &dm)), removed]);
            s.state_is(&[(s.v("k", &dm), dmv.clone())]);
        }
    }
    s.pending_is(0);
    s.get_is("k", &dmv);
    s.masters_are(&[]);
    s.versions_are(&[("k", &dm)]);
}

/// Scenario 11: deleting the delete marker of scenario 9 (`delete {versionId: dm}`). v0: the
/// master (the marker) becomes a PHD carrying the marker's members plus `isPHD`; v1 (no
/// master): the master is upserted as `{isPHD, versionId: vX, deleted: false}`. `V(k, dm)` is
/// removed, 1 repair pending, get → v1; after the repair `M(k) = v1 + originOp`.
/// DelimiterMaster before the repair follows `objmeta.md` 10.4: v0 checks "delete marker"
/// before "PHD" on a master, so the PHD carrying the marker's members hides `k`; v1 resolves
/// the PHD to v1.
pub fn delete_the_delete_marker(store: &dyn Store, table: &str, vf: VFormat) {
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut s = Steps::new(store, &clock, table, vf, "scenario 11");
    let v1 = s.vput("k", N1);
    let dm = s.vput("k", DM0);
    let v1v = with_vid(N1, &v1);
    s.del("k", &dm).unwrap();
    let x = s.next_id();
    let phd = match vf {
        VFormat::V0 => with(
            DM0,
            &format!(r#"{{"versionId":"{x}","isPHD":true,"deleted":false}}"#),
        ),
        VFormat::V1 => j(&format!(
            r#"{{"isPHD":true,"versionId":"{x}","deleted":false}}"#
        )),
    };
    s.state_is(&[(s.m("k"), phd), (s.v("k", &v1), v1v.clone())]);
    s.pending_is(1);
    assert_eq!(s.om.pending_repairs()[0].phd_version_id, x);
    s.get_is("k", &v1v);
    match vf {
        VFormat::V0 => s.masters_are(&[]),
        VFormat::V1 => s.masters_are(&[("k", &v1v)]),
    }
    s.versions_are(&[("k", &v1)]);
    assert_eq!(s.repairs(), [RepairOutcome::Repaired]);
    let repaired = with(&v1v.stringify(), ORIGIN);
    s.state_is(&[(s.m("k"), repaired.clone()), (s.v("k", &v1), v1v.clone())]);
    s.pending_is(0);
    s.get_is("k", &repaired);
    s.masters_are(&[("k", &repaired)]);
}

/// Scenario 12: puts v1, DM, v2, then `delete {versionId: v2}`: v1 → the master is deleted at
/// once (the latest version is the marker), 0 pending; v0 → a PHD, 1 pending, DelimiterMaster
/// → `[]`, and after the repair `M(k) = DM + originOp` (which get then answers).
pub fn delete_latest_exposing_dm(store: &dyn Store, table: &str, vf: VFormat) {
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut s = Steps::new(store, &clock, table, vf, "scenario 12");
    let v1 = s.vput("k", N1);
    let dm = s.vput("k", DM0);
    let v2 = s.vput("k", N2);
    let (v1v, dmv) = (with_vid(N1, &v1), with_vid(DM0, &dm));
    s.state_is(&[
        (s.m("k"), with_vid(N2, &v2)),
        (s.v("k", &v2), with_vid(N2, &v2)),
        (s.v("k", &dm), dmv.clone()),
        (s.v("k", &v1), v1v.clone()),
    ]);
    s.del("k", &v2).unwrap();
    let p = s.next_id();
    let versions = [(s.v("k", &dm), dmv.clone()), (s.v("k", &v1), v1v.clone())];
    match vf {
        VFormat::V1 => {
            s.state_is(&versions);
            s.pending_is(0);
        }
        VFormat::V0 => {
            let phd = with(
                N2,
                &format!(r#"{{"versionId":"{p}","isPHD":true,"deleted":false}}"#),
            );
            let mut want = vec![(s.m("k"), phd)];
            want.extend(versions.iter().cloned());
            s.state_is(&want);
            s.pending_is(1);
        }
    }
    s.get_is("k", &dmv);
    s.masters_are(&[]);
    s.versions_are(&[("k", &dm), ("k", &v1)]);
    match vf {
        VFormat::V1 => {
            assert_eq!(s.repairs(), []);
            s.get_is("k", &dmv);
        }
        VFormat::V0 => {
            assert_eq!(s.repairs(), [RepairOutcome::Repaired]);
            let repaired = with(&dmv.stringify(), ORIGIN);
            let mut want = vec![(s.m("k"), repaired.clone())];
            want.extend(versions.iter().cloned());
            s.state_is(&want);
            s.get_is("k", &repaired);
            s.masters_are(&[]);
            s.versions_are(&[("k", &dm), ("k", &v1)]);
        }
    }
}

/// Scenario 13: a Case1 put while the master is a pending PHD: the master's id (the PHD's,
/// older than the new one) satisfies the Case1 condition, so the master becomes the new
/// version; the repair then conflicts and the master stays.
pub fn put_on_pending_phd(store: &dyn Store, table: &str, vf: VFormat) {
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut s = Steps::new(store, &clock, table, vf, "scenario 13");
    let v1 = s.vput("k", N1);
    let v2 = s.vput("k", N2);
    s.del("k", &v2).unwrap();
    let p = s.next_id();
    let v1v = with_vid(N1, &v1);
    s.state_is(&[
        (
            s.m("k"),
            with(
                N2,
                &format!(r#"{{"versionId":"{p}","isPHD":true,"deleted":false}}"#),
            ),
        ),
        (s.v("k", &v1), v1v.clone()),
    ]);
    s.pending_is(1);
    let v4 = s.vput("k", N3);
    let v4v = with_vid(N3, &v4);
    assert!(v4 < p, "the new id is newer than the PHD's");
    let want = [
        (s.m("k"), v4v.clone()),
        (s.v("k", &v4), v4v.clone()),
        (s.v("k", &v1), v1v.clone()),
    ];
    s.state_is(&want);
    s.get_is("k", &v4v);
    assert_eq!(s.repairs(), [RepairOutcome::Conflict]);
    s.state_is(&want);
    s.pending_is(0);
    s.get_is("k", &v4v);
    s.masters_are(&[("k", &v4v)]);
    s.versions_are(&[("k", &v4), ("k", &v1)]);
}

/// Scenario 19 (`repairMaster`, Case4): with the master at X, Case4 on X sets the master to
/// the updated X; after a newer v2, Case4 on X updates only `V(X)` and the master stays v2.
/// Also (`objmeta.md` 7 Case4): the result echoes `objVal.versionId` (`"undefined"` when the
/// caller set none); Case4 on the id of the latest delete marker rewrites the master in v0
/// and leaves it absent in v1; Case4 of a version newer than the master (replication) makes
/// it the master; Case4 on a key without versions writes the version and makes it the master;
/// Case4 of an older version under a pending PHD leaves the PHD, and the repair copies it.
pub fn repair_master_case4(store: &dyn Store, table: &str, vf: VFormat) {
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut s = Steps::new(store, &clock, table, vf, "scenario 19");
    let x = s.vput("k", N1);
    let case4 = |vid: &str| {
        let mut p = vid_params(vid);
        p.as_object_mut()
            .unwrap()
            .set("repairMaster", Json::Bool(true));
        p
    };
    // Master at X: Case4 on X updates V(X) and the master.
    let x2 = with_vid(r#"{"key":"k","n":2,"tag":"updated"}"#, &x);
    let r = s.put("k", &x2, &case4(&x));
    assert_eq!(r, Ok(Some(format!(r#"{{"versionId": "{x}"}}"#))));
    s.state_is(&[(s.m("k"), x2.clone()), (s.v("k", &x), x2.clone())]);
    s.get_is("k", &x2);
    s.pending_is(0);
    // A newer v2, then Case4 on X: only V(X) changes.
    let v2 = s.vput("k", N3);
    let v2v = with_vid(N3, &v2);
    let x4 = with_vid(r#"{"key":"k","n":4}"#, &x);
    let r = s.put("k", &x4, &case4(&x));
    assert_eq!(r, Ok(Some(format!(r#"{{"versionId": "{x}"}}"#))));
    s.state_is(&[
        (s.m("k"), v2v.clone()),
        (s.v("k", &v2), v2v.clone()),
        (s.v("k", &x), x4.clone()),
    ]);
    s.get_is("k", &v2v);
    assert!(json_eq(&s.get("k", Some(&x)).unwrap(), &x4));
    // objVal without versionId: the result says "undefined", V(X) is stored as given.
    let bare = j(r#"{"key":"k","n":5}"#);
    let r = s.put("k", &bare, &case4(&x));
    assert_eq!(r, Ok(Some(r#"{"versionId": "undefined"}"#.to_string())));
    s.state_is(&[
        (s.m("k"), v2v.clone()),
        (s.v("k", &v2), v2v.clone()),
        (s.v("k", &x), bare.clone()),
    ]);
    // Replication of a version newer than the master (Case4 on a new id Y): the master
    // (id ≥ Y) becomes Y.
    let y = scenario_vid(s.ms + 1, 99);
    assert!(y < v2);
    let yv = with_vid(r#"{"key":"k","n":8}"#, &y);
    let r = s.put("k", &yv, &case4(&y));
    assert_eq!(r, Ok(Some(format!(r#"{{"versionId": "{y}"}}"#))));
    s.state_is(&[
        (s.m("k"), yv.clone()),
        (s.v("k", &y), yv.clone()),
        (s.v("k", &v2), v2v.clone()),
        (s.v("k", &x), bare.clone()),
    ]);
    s.get_is("k", &yv);
    // A delete marker on top, then Case4 on the marker's id with updated metadata.
    let dm = s.vput("k", DM0);
    let dm2 = with_vid(r#"{"key":"k","n":6,"isDeleteMarker":true}"#, &dm);
    let r = s.put("k", &dm2, &case4(&dm));
    assert_eq!(r, Ok(Some(format!(r#"{{"versionId": "{dm}"}}"#))));
    let versions = [
        (s.v("k", &dm), dm2.clone()),
        (s.v("k", &y), yv.clone()),
        (s.v("k", &v2), v2v.clone()),
        (s.v("k", &x), bare.clone()),
    ];
    match vf {
        VFormat::V0 => {
            let mut want = vec![(s.m("k"), dm2.clone())];
            want.extend(versions.iter().cloned());
            s.state_is(&want);
        }
        VFormat::V1 => s.state_is(&versions),
    }
    s.get_is("k", &dm2);
    s.masters_are(&[]);
    // Case4 on a key with no version at all: the version is written, then it is the latest.
    let lone = j(r#"{"key":"lone","n":7,"versionId":"lonevid"}"#);
    let r = s.put("lone", &lone, &case4("lonevid"));
    assert_eq!(r, Ok(Some(r#"{"versionId": "lonevid"}"#.to_string())));
    assert!(json_eq(&s.get("lone", None).unwrap(), &lone));
    assert!(json_eq(&s.get("lone", Some("lonevid")).unwrap(), &lone));
    s.pending_is(0);
    // While the master is a pending PHD (newer than every version), Case4 on an older version
    // leaves the PHD ("master newer than latest" counts as success); the repair then copies
    // the updated version.
    let q1 = s.vput("q", r#"{"key":"q","n":1}"#);
    let q2 = s.vput("q", r#"{"key":"q","n":2}"#);
    s.del("q", &q2).unwrap();
    let p = s.next_id();
    let phd = s.row(&s.m("q")).unwrap();
    assert_eq!(
        phd.get("versionId").and_then(Json::as_str),
        Some(p.as_str())
    );
    let q9 = with_vid(r#"{"key":"q","n":9}"#, &q1);
    let r = s.put("q", &q9, &case4(&q1));
    assert_eq!(r, Ok(Some(format!(r#"{{"versionId": "{q1}"}}"#))));
    assert_eq!(s.row(&s.m("q")), Some(phd), "{}", s.at("PHD kept"));
    assert!(json_eq(&s.row(&s.v("q", &q1)).unwrap(), &q9));
    s.get_is("q", &q9);
    assert_eq!(s.repairs(), [RepairOutcome::Repaired]);
    assert!(json_eq(
        &s.row(&s.m("q")).unwrap(),
        &with(&q9.stringify(), ORIGIN)
    ));
}

// -------------------------------------------------------------------------------------------
// Traces recorded in one format, replayed in the other (`objmeta.md` 18: "each runs with v0
// and v1 unless stated").

/// The scenario traces of `vectors/objmeta.json` recorded in one format only whose scenario
/// (`objmeta.md` 18, number given) has the same results and, apart from the key layout, the
/// same rows in both formats. [`other_format_traces`] replays each in the other format.
/// Scenarios 10, 11, 12, 13 and 19, whose formats differ or which have no trace, have their
/// own functions ([`dm_on_missing_key`] and the following).
pub const SAME_IN_BOTH_FORMATS: &[(&str, u32)] = &[
    ("delete_doesNotNeedOpogUpdate", 3),
    ("versioned_delete_noncurrent", 5),
    ("versioned_delete_only_version", 7),
    ("delete_nonexistent_version", 8),
    ("delete_phd_master_again", 14),
    ("suspended_delete_marker", 16),
    ("put_explicit_version_case3", 17),
    ("listing_versions_pagination", 23),
    ("cloudserver_suspended_overwrite_sequence", 29),
];

/// An Arsenal key of format `from` in format `to` (`objmeta.md` 4.1): a master or a version
/// (`k‖\0‖x`) of the same object.
fn key_in_format(key: &str, from: VFormat, to: VFormat) -> String {
    let (object, vid) = match from {
        VFormat::V0 => match key.split_once('\0') {
            Some((k, x)) => (k, Some(x)),
            None => (key, None),
        },
        VFormat::V1 => match (key.strip_prefix("\x7fM"), key.strip_prefix("\x7fV")) {
            (Some(k), _) => (k, None),
            (None, Some(kx)) => {
                let (k, x) = kx.split_once('\0').unwrap();
                (k, Some(x))
            }
            (None, None) => panic!("not a v1 object key: {key:?}"),
        },
    };
    match vid {
        None => rowkit_codec::objmeta::keys::master_key(to, object),
        Some(x) => rowkit_codec::objmeta::keys::version_key(to, object, x),
    }
}

/// `scenario` (a trace in one format) for the other format: `vFormat` switched, each
/// `stateAfter` row's key and row key translated and the rows re-sorted by row key. Results,
/// errors, listings and pending repairs are format-independent and kept.
pub fn trace_in_other_format(scenario: &Json) -> Json {
    let from = VFormat::parse(scenario.get("vFormat").and_then(Json::as_str).unwrap()).unwrap();
    let to = match from {
        VFormat::V0 => VFormat::V1,
        VFormat::V1 => VFormat::V0,
    };
    let coll = rowkit_codec::objmeta::keys::collection_for_bucket(
        scenario.get("bucket").and_then(Json::as_str).unwrap(),
    )
    .to_string();
    let mut out = scenario.clone();
    let o = out.as_object_mut().unwrap();
    o.set("vFormat", Json::str(to.as_str()));
    if let Some(Json::Array(steps)) = o.get_mut("steps") {
        for step in steps {
            let Some(Json::Array(rows)) = step.as_object_mut().unwrap().get_mut("stateAfter")
            else {
                continue;
            };
            let mut keyed: Vec<(Vec<u8>, Json)> = rows
                .iter()
                .map(|r| {
                    let key = key_in_format(r.get("key").and_then(Json::as_str).unwrap(), from, to);
                    let rk = rowkit_codec::objmeta::keys::row_key(&coll, &key);
                    let hex: String = rk.iter().map(|b| format!("{b:02x}")).collect();
                    let mut row = r.clone();
                    let ro = row.as_object_mut().unwrap();
                    ro.set("key", Json::str(key));
                    ro.set("row_key_hex", Json::str(hex));
                    (rk, row)
                })
                .collect();
            keyed.sort_by(|a, b| a.0.cmp(&b.0));
            *rows = keyed.into_iter().map(|(_, r)| r).collect();
        }
    }
    out
}

/// Every trace of [`SAME_IN_BOTH_FORMATS`] replayed in each format the vectors do not record
/// it in, each in table `<table>-<i>-<format>`. A trace recorded in both formats is replayed
/// as recorded by [`replay_all`]; one the file does not have is not checked here.
pub fn other_format_traces(store: &dyn Store, table: &str, vectors: &Json) {
    let scenarios = arr(vectors, "scenarios");
    let mut failures = Vec::new();
    for (i, (name, number)) in SAME_IN_BOTH_FORMATS.iter().enumerate() {
        let recorded: Vec<&Json> = scenarios
            .iter()
            .filter(|s| s.get("name").and_then(Json::as_str) == Some(name))
            .collect();
        let formats: Vec<&str> = recorded
            .iter()
            .filter_map(|s| s.get("vFormat").and_then(Json::as_str))
            .collect();
        for missing in ["v0", "v1"] {
            if formats.contains(&missing) {
                continue;
            }
            let Some(from) = recorded.first() else {
                continue;
            };
            let other = trace_in_other_format(from);
            if let Err(e) = replay_scenario(store, &format!("{table}-{i}-{missing}"), &other) {
                failures.push(format!("scenario {number}: {e}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
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
    ("put_bucket_attributes", |s, t, _| {
        put_bucket_attributes(s, t)
    }),
    ("cache_behaviour", |s, t, _| cache_behaviour(s, t)),
    ("change_events_v0", |s, t, _| {
        change_events(s, t, VFormat::V0)
    }),
    ("change_events_v1", |s, t, _| {
        change_events(s, t, VFormat::V1)
    }),
    ("repair_machine_v0", |s, t, _| {
        repair_machine(s, t, VFormat::V0)
    }),
    ("repair_machine_v1", |s, t, _| {
        repair_machine(s, t, VFormat::V1)
    }),
    ("deadline", |s, t, _| deadline(s, t)),
    ("check_corrupted_v0", |s, t, _| {
        check_corrupted(s, t, VFormat::V0)
    }),
    ("check_corrupted_v1", |s, t, _| {
        check_corrupted(s, t, VFormat::V1)
    }),
    ("skip_streak_v0", |s, t, _| skip_streak(s, t, VFormat::V0)),
    ("skip_streak_v1", |s, t, _| skip_streak(s, t, VFormat::V1)),
    ("other_format_traces", other_format_traces),
    ("dm_on_missing_key_v0", |s, t, _| {
        dm_on_missing_key(s, t, VFormat::V0)
    }),
    ("dm_on_missing_key_v1", |s, t, _| {
        dm_on_missing_key(s, t, VFormat::V1)
    }),
    ("delete_the_delete_marker_v0", |s, t, _| {
        delete_the_delete_marker(s, t, VFormat::V0)
    }),
    ("delete_the_delete_marker_v1", |s, t, _| {
        delete_the_delete_marker(s, t, VFormat::V1)
    }),
    ("delete_latest_exposing_dm_v0", |s, t, _| {
        delete_latest_exposing_dm(s, t, VFormat::V0)
    }),
    ("delete_latest_exposing_dm_v1", |s, t, _| {
        delete_latest_exposing_dm(s, t, VFormat::V1)
    }),
    ("put_on_pending_phd_v0", |s, t, _| {
        put_on_pending_phd(s, t, VFormat::V0)
    }),
    ("put_on_pending_phd_v1", |s, t, _| {
        put_on_pending_phd(s, t, VFormat::V1)
    }),
    ("repair_master_case4_v0", |s, t, _| {
        repair_master_case4(s, t, VFormat::V0)
    }),
    ("repair_master_case4_v1", |s, t, _| {
        repair_master_case4(s, t, VFormat::V1)
    }),
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
    om: &ObjectMetadata<SyncDriver<&S, &ManualClock>>,
    key: &str,
) -> Option<i64> {
    match block_on(om.get_object("b", key, None)) {
        Ok(v) if !v.member_truthy("isDeleteMarker") => match v.get("n") {
            Some(Json::Number(n)) => Some(*n as i64),
            _ => None,
        },
        _ => None,
    }
}

fn listed<S: Store + ?Sized>(
    om: &ObjectMetadata<SyncDriver<&S, &ManualClock>>,
    key: &str,
) -> Option<i64> {
    let p = ListingParams {
        listing_type: ListingType::DelimiterMaster,
        ..Default::default()
    };
    let r = block_on(om.list_object("b", &p)).unwrap();
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

/// The operation a crash cuts (`objmeta.md` 7, 8.3), with the versioned puts made before it
/// (bucket `b`, key `k`, values `{key, n}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crashing {
    /// Case1 put of n:2 over v1.
    PutSecondVersion,
    /// Delete of the current version v2 of v1, v2 (leaves a placeholder master).
    DeleteCurrentOfTwo,
    /// Delete of the only version v1.
    DeleteOnlyVersion,
    /// Case1 put of a delete marker over v1, v2.
    PutDeleteMarker,
    /// Case2 (suspended) put of `{n:3, isNull: true}` with `{versionId: ""}` over v1, v2.
    SuspendedPut,
    /// Case3 put of n:5 with `{versionId: v2}` (the current version) over v1, v2.
    ExplicitVersionPut,
    /// Delete of the non-current version v1 of v1, v2.
    DeleteNonCurrent,
    /// Delete of the delete marker over v1 (v0: the master is the marker; v1: no master).
    DeleteDeleteMarker,
    /// Delete of v1 while the master is the placeholder left by a finished delete of v3 (of
    /// v1, v2, v3) whose repair never ran.
    DeleteWhilePlaceholder,
}

impl Crashing {
    /// Every operation, in the order [`crash_at_every_cut`] runs them.
    pub const ALL: [Crashing; 9] = [
        Crashing::PutSecondVersion,
        Crashing::DeleteCurrentOfTwo,
        Crashing::DeleteOnlyVersion,
        Crashing::PutDeleteMarker,
        Crashing::SuspendedPut,
        Crashing::ExplicitVersionPut,
        Crashing::DeleteNonCurrent,
        Crashing::DeleteDeleteMarker,
        Crashing::DeleteWhilePlaceholder,
    ];

    /// The requests the uncut operation sends (the bucket's vFormat is cached), per
    /// `objmeta.md`: Case1 `CheckAndMutateRow` V, M (2); Case2 `MutateRow` M (1); Case3
    /// `ReadRow` M, V, `MutateRow` V, `CheckAndMutateRow` M (4); DeleteVerNotMaster `ReadRow` M,
    /// then `internalDelete` `ReadRow` + `CheckAndMutateRow` (3); DeleteVerMaster `ReadRow` M
    /// (v1 without master: + `getLatestVersion`), merge `ReadRow` + `CheckAndMutateRow`,
    /// `internalDelete` (2), `getLatestVersion` (6, v1 marker 7), plus, with no version left,
    /// the PHD's `internalDelete` (8).
    pub fn requests(self, vf: VFormat) -> usize {
        match self {
            Crashing::SuspendedPut => 1,
            Crashing::PutSecondVersion | Crashing::PutDeleteMarker => 2,
            Crashing::DeleteNonCurrent => 3,
            Crashing::ExplicitVersionPut => 4,
            Crashing::DeleteCurrentOfTwo | Crashing::DeleteWhilePlaceholder => 6,
            Crashing::DeleteDeleteMarker => match vf {
                VFormat::V0 => 6,
                VFormat::V1 => 7,
            },
            Crashing::DeleteOnlyVersion => 8,
        }
    }

    /// Whether the uncut operation writes a placeholder master (so some cut leaves one).
    pub fn writes_placeholder(self) -> bool {
        matches!(
            self,
            Crashing::DeleteCurrentOfTwo
                | Crashing::DeleteOnlyVersion
                | Crashing::DeleteDeleteMarker
                | Crashing::DeleteWhilePlaceholder
        )
    }
}

/// What one cut left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CutOutcome {
    /// The machine finished before the cut (nothing was cut).
    pub finished: bool,
    /// A placeholder master was left and the repair replaced it by the latest version.
    pub repaired: bool,
}

/// One cut of one operation on a fresh table `table`: the operation is dropped after its
/// `cut`-th request (applied, reply lost); reads and listings must answer the value from
/// before or after; a placeholder master left behind is repaired (`AsyncRepair` with its
/// id): the master then holds the latest version plus `originOp` (or, with no version left,
/// the outcome is `NoVersion`), and reads and listings keep their answer.
pub fn crash_case(
    store: &dyn Store,
    table: &str,
    vf: VFormat,
    what: Crashing,
    cut: usize,
) -> CutOutcome {
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let om = ObjectMetadata::new(SyncDriver::new(store, &clock), scenario_state(table, vf))
        .with_options(CallOptions {
            seed: 1,
            ..CallOptions::default()
        });
    block_on(om.setup()).unwrap();
    block_on(om.create_bucket("b", &j(r#"{"name":"b"}"#))).unwrap();
    let versioning = j(r#"{"versioning":true}"#);
    let before_puts: &[&str] = match what {
        Crashing::PutSecondVersion | Crashing::DeleteOnlyVersion => &[N1],
        Crashing::DeleteDeleteMarker => &[N1, DM0],
        Crashing::DeleteWhilePlaceholder => &[N1, N2, N3],
        _ => &[N1, N2],
    };
    let mut ids = Vec::new();
    for (i, value) in before_puts.iter().enumerate() {
        clock.advance_to(Timestamp::from_millis(T0 + 1 + i as i64));
        let r = block_on(om.put_object("b", "k", &j(value), Some(&versioning)))
            .unwrap()
            .result
            .unwrap();
        ids.push(
            Json::parse(&r)
                .unwrap()
                .get("versionId")
                .and_then(Json::as_str)
                .unwrap()
                .to_string(),
        );
    }
    if what == Crashing::DeleteWhilePlaceholder {
        clock.advance_to(Timestamp::from_millis(T0 + 5));
        block_on(om.delete_object("b", "k", Some(&vid_params(&ids[2])), None)).unwrap();
        assert_eq!(om.drop_pending_repairs().len(), 1);
    }
    let before = visible(&om, "k");
    clock.advance_to(Timestamp::from_millis(T0 + 10));
    let now = Timestamp::from_millis(T0 + 10);
    fn put<'a>(
        st: &'a mut ObjmetaState,
        now: Timestamp,
        value: &str,
        params: Json,
    ) -> PutObject<'a> {
        PutObject::new(
            st,
            "b",
            "k",
            j(value),
            Some(params),
            Start::within(now, 7, DEFAULT_DEADLINE_US),
        )
    }
    fn delete<'a>(st: &'a mut ObjmetaState, now: Timestamp, vid: &str) -> DeleteObject<'a> {
        DeleteObject::new(
            st,
            "b",
            "k",
            Some(&vid_params(vid)),
            None,
            Start::within(now, 7, DEFAULT_DEADLINE_US),
        )
    }
    // The machine borrows a copy of the facade's state, as a process that crashes would.
    let mut state: ObjmetaState = block_on(om.with_state(|st| st.clone()));
    let st = &mut state;
    let (finished, after) = match what {
        Crashing::PutSecondVersion => (
            run_until_cut(store, now, put(st, now, N2, versioning.clone()), cut),
            Some(2),
        ),
        Crashing::PutDeleteMarker => (
            run_until_cut(store, now, put(st, now, DM0, versioning.clone()), cut),
            None,
        ),
        Crashing::SuspendedPut => (
            run_until_cut(
                store,
                now,
                put(
                    st,
                    now,
                    r#"{"key":"k","n":3,"isNull":true}"#,
                    vid_params(""),
                ),
                cut,
            ),
            Some(3),
        ),
        Crashing::ExplicitVersionPut => (
            run_until_cut(
                store,
                now,
                put(st, now, r#"{"key":"k","n":5}"#, vid_params(&ids[1])),
                cut,
            ),
            Some(5),
        ),
        Crashing::DeleteCurrentOfTwo | Crashing::DeleteDeleteMarker => (
            run_until_cut(store, now, delete(st, now, &ids[1]), cut),
            Some(1),
        ),
        Crashing::DeleteOnlyVersion | Crashing::DeleteNonCurrent => (
            run_until_cut(store, now, delete(st, now, &ids[0]), cut),
            if what == Crashing::DeleteOnlyVersion {
                None
            } else {
                Some(2)
            },
        ),
        Crashing::DeleteWhilePlaceholder => (
            run_until_cut(store, now, delete(st, now, &ids[0]), cut),
            Some(2),
        ),
    };
    block_on(om.with_state(|st| *st = state));
    let ctx = format!("{what:?} {vf:?} cut {cut}");
    let got = visible(&om, "k");
    assert!(
        got == before || got == after,
        "{ctx}: read {got:?}, expected {before:?} or {after:?}"
    );
    let mk = rowkit_codec::objmeta::keys::master_key(vf, "k");
    let version_prefix = rowkit_codec::objmeta::keys::version_key(vf, "k", "");
    let rows = bucket_rows(store, table, "b").unwrap();
    let value_of = |rows: &[Json], pred: &dyn Fn(&str) -> bool| {
        rows.iter()
            .find(|r| r.get("key").and_then(Json::as_str).is_some_and(pred))
            .map(|r| r.get("value").unwrap().clone())
    };
    let master = value_of(&rows, &|k| k == mk);
    // v0 DelimiterMaster tests "delete marker" before "PHD" on a master (objmeta.md 10.4), so
    // a PHD made from a delete-marker master (scenario 11, also the uncut delete's state until
    // its repair) hides the key from the listing while reads resolve the latest version.
    let hidden_by_dm_phd = vf == VFormat::V0
        && master
            .as_ref()
            .is_some_and(|m| m.member_truthy("isPHD") && m.member_truthy("isDeleteMarker"));
    assert_eq!(
        listed(&om, "k"),
        if hidden_by_dm_phd { None } else { got },
        "{ctx}: listing disagrees with the read"
    );
    // The repair path: a placeholder master left behind is repaired from the latest version.
    let phd = master.and_then(|v| {
        v.member_truthy("isPHD")
            .then(|| v.get("versionId").unwrap().as_str().unwrap().to_string())
    });
    let mut repaired = false;
    if let Some(p) = phd {
        let report = block_on(om.run_repair(RepairTask {
            bucket: "b".into(),
            key: "k".into(),
            phd_version_id: p,
            vformat: vf,
            due: Timestamp::from_millis(T0 + 20),
            migration: None,
        }));
        let rows = bucket_rows(store, table, "b").unwrap();
        let master = value_of(&rows, &|k| k == mk);
        let latest = value_of(&rows, &|k| k.starts_with(&version_prefix));
        match (report.outcome, latest) {
            (RepairOutcome::Repaired, Some(latest)) => {
                let want = with(&latest.stringify(), ORIGIN);
                assert!(
                    master.as_ref().is_some_and(|m| json_eq(m, &want)),
                    "{ctx}: master after the repair {master:?}, want {}",
                    want.stringify()
                );
                repaired = true;
            }
            // With no version left the repair ends `NoVersion` and leaves the PHD
            // (objmeta.md 8.4), which reads and listings resolve to "no object".
            (RepairOutcome::NoVersion, None) => {}
            (outcome, latest) => panic!("{ctx}: repair {outcome:?} with latest {latest:?}"),
        }
        assert_eq!(
            visible(&om, "k"),
            got,
            "{ctx}: the repair changed the answer"
        );
        assert_eq!(listed(&om, "k"), got, "{ctx}: listing after repair");
    }
    CutOutcome { finished, repaired }
}

/// The number of cases [`crash_at_every_cut`] runs: for each operation and format, one cut
/// after each of its [`Crashing::requests`] requests plus the uncut run.
pub fn crash_case_count() -> usize {
    [VFormat::V0, VFormat::V1]
        .into_iter()
        .flat_map(|vf| Crashing::ALL.into_iter().map(move |w| w.requests(vf) + 1))
        .sum()
}

/// Total of [`crash_case_count`]: 47 cases in v0, 48 in v1.
pub const CRASH_CASES: usize = 95;

/// [`crash_case`] at every cut point of every [`Crashing`] operation, in v0 and v1, each on
/// its own table `crash-<n>`. Asserts that each operation finishes exactly after its
/// [`Crashing::requests`], that the total is [`CRASH_CASES`], and that for every operation
/// that writes a placeholder some cut left one that the repair replaced; returns the number of
/// cases run.
pub fn crash_at_every_cut(store: &dyn Store) -> usize {
    let mut cases = 0;
    let mut repaired_total = 0;
    for vf in [VFormat::V0, VFormat::V1] {
        for what in Crashing::ALL {
            let mut cut = 1;
            let mut repaired = 0;
            loop {
                cases += 1;
                let table = format!("crash-{cases}");
                let outcome = crash_case(store, &table, vf, what, cut);
                repaired += usize::from(outcome.repaired);
                if outcome.finished {
                    break;
                }
                cut += 1;
                assert!(cut < 50, "{what:?} never finishes");
            }
            assert_eq!(cut, what.requests(vf) + 1, "{what:?} {vf:?}: requests sent");
            assert_eq!(
                repaired > 0,
                what.writes_placeholder(),
                "{what:?} {vf:?}: {repaired} cuts repaired a placeholder"
            );
            repaired_total += repaired;
        }
    }
    assert_eq!(cases, crash_case_count());
    assert_eq!(cases, CRASH_CASES);
    assert!(repaired_total > 0);
    cases
}

// ---- check (spec/check.md §3 and §6) -----------------------------------------------------

/// Writes `mutations` to `row` as they are (as a crashed or buggy writer would have left it).
fn raw_row(
    store: &dyn Store,
    table: &str,
    row: Vec<u8>,
    mutations: Vec<rowkit_codec::model::Mutation>,
) {
    let req = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
        table: table.into(),
        row_key: row,
        mutations,
        ..Default::default()
    });
    store.execute(req, Timestamp(0)).unwrap();
}

/// Each finding's (kind, escaped row key), sorted, and the summary, of a check at `clock`.
fn check_findings(
    om: &ObjectMetadata<SyncDriver<&dyn Store, &ManualClock>>,
    fix: bool,
) -> (
    Vec<(String, String)>,
    rowkit_statemachines::check::CheckSummary,
) {
    use rowkit_statemachines::check::{CheckEvent, CheckOptions};
    let options = CheckOptions {
        fix,
        page_rows: 5,
        ..CheckOptions::default()
    };
    let mut found = Vec::new();
    let summary = block_on(om.check(None, options, 3_600_000_000, |e| {
        if let CheckEvent::Finding(f) = e {
            found.push((
                f.kind.to_string(),
                rowkit_codec::escape::escape(&f.row_key),
                f.repaired,
            ));
        }
    }))
    .unwrap();
    let repaired = found.iter().filter(|f| f.2).count() as u64;
    assert_eq!(
        (summary.repaired, summary.left),
        (repaired, found.len() as u64 - repaired)
    );
    let mut found: Vec<(String, String)> = found.into_iter().map(|(k, r, _)| (k, r)).collect();
    found.sort();
    (found, summary)
}

/// Check acceptance (spec/check.md §3, §6) in `vf`: beside clean data and the legitimate
/// states that look odd (a delete marker as latest version, a pending placeholder, a master
/// without a version id), one instance of every finding kind, written raw, is reported exactly;
/// `fix` repairs exactly the repairable ones (the objects read back as their latest version);
/// then only the report-only kinds are left.
pub fn check_corrupted(store: &dyn Store, table: &str, vf: VFormat) {
    use rowkit_codec::objmeta::cells::replace;
    use rowkit_codec::objmeta::keys::row_key;
    let esc = |c: &str, k: &str| rowkit_codec::escape::escape(&row_key(c, k));
    let clock = ManualClock::new(Timestamp::from_millis(T0));
    let mut s = Steps::new(store, &clock, table, vf, "check");
    s.vput("clean", N1);
    s.vput("clean", N2);
    s.vput("dm", N1);
    let dm = s.put(
        "dm",
        &j(r#"{"isDeleteMarker":true}"#),
        &j(r#"{"versioning":true}"#),
    );
    assert!(dm.is_ok(), "{dm:?}");
    s.next_id();
    s.put("nover", &j(N1), &j("{}")).unwrap();
    let phd_v1 = s.vput("phd", N1);
    let phd_v2 = s.vput("phd", N2);
    s.del("phd", &phd_v2).unwrap();
    s.next_id();
    let _ = s.om.drop_pending_repairs();
    s.vput("orph", N1);
    s.vput("orph", N2);
    let lag1 = s.vput("lag", N1);
    s.vput("lag", N2);
    // Before the placeholder's repair is due nothing is wrong.
    let (found, _) = check_findings(&s.om, false);
    assert_eq!(found, Vec::<(String, String)>::new(), "{vf:?}: clean table");

    let doc = |v: &str| j(v);
    let mut expect = vec![
        ("undecodable_key".to_string(), "nosep".to_string()),
        ("bucket_without_metastore".to_string(), esc("ghost", "obj")),
    ];
    raw_row(store, table, b"nosep".to_vec(), replace(&doc("{}"), None));
    raw_row(
        store,
        table,
        row_key("ghost", "obj"),
        replace(&doc("{}"), None),
    );
    let wrong = match vf {
        VFormat::V0 => "\x7fMwrong".to_string(),
        VFormat::V1 => "wrong".to_string(),
    };
    raw_row(
        store,
        table,
        row_key("b", &wrong),
        replace(&doc("{}"), None),
    );
    expect.push(("wrong_format_key".into(), esc("b", &wrong)));
    let mut bad = replace(&doc("{}"), None);
    bad[1] = rowkit_codec::model::Mutation::SetCell {
        family: "d".into(),
        qualifier: b"value".to_vec(),
        timestamp: Timestamp(0),
        value: b"[1]".to_vec(),
    };
    raw_row(store, table, row_key("b", &s.m("bad")), bad);
    expect.push(("bad_document".into(), esc("b", &s.m("bad"))));
    let mut stale = replace(&doc(r#"{"a":1}"#), None);
    stale.push(rowkit_codec::model::Mutation::SetCell {
        family: "f".into(),
        qualifier: b"isPHD".to_vec(),
        timestamp: Timestamp(0),
        value: vec![1],
    });
    raw_row(store, table, row_key("b", &s.m("stale")), stale);
    expect.push(("derived_stale".into(), esc("b", &s.m("stale"))));
    let dangling = scenario_vid(1, 99);
    let master = j(&format!(r#"{{"key":"dang","versionId":"{dangling}"}}"#));
    raw_row(
        store,
        table,
        row_key("b", &s.m("dang")),
        replace(&master, None),
    );
    expect.push(("master_dangling".into(), esc("b", &s.m("dang"))));
    raw_row(
        store,
        table,
        row_key("b", &s.m("orph")),
        vec![rowkit_codec::model::Mutation::DeleteFromRow],
    );
    expect.push(("versions_without_master".into(), esc("b", &s.m("orph"))));
    let lagging = with_vid(N1, &lag1);
    raw_row(
        store,
        table,
        row_key("b", &s.m("lag")),
        replace(&lagging, None),
    );
    expect.push(("master_behind".into(), esc("b", &s.m("lag"))));
    // A placeholder with no version left (a delete stopped before removing it): reads find
    // no object and §8.4's repair leaves it, so it is no finding, due or not.
    let lone = j(&format!(
        r#"{{"isPHD":true,"versionId":"{}","deleted":false}}"#,
        scenario_vid(1, 98)
    ));
    raw_row(
        store,
        table,
        row_key("b", &s.m("lone")),
        replace(&lone, None),
    );
    // The placeholder's repair is due 15 s after its id's time.
    clock.advance_to(Timestamp::from_millis(T0 + 60_000));
    expect.push(("placeholder_due".into(), esc("b", &s.m("phd"))));
    expect.sort();

    let (found, summary) = check_findings(&s.om, false);
    assert_eq!(found, expect, "{vf:?}");
    assert_eq!(summary.repaired, 0);
    let repairable = [
        "derived_stale",
        "versions_without_master",
        "master_behind",
        "placeholder_due",
    ];
    let (fixed, summary) = check_findings(&s.om, true);
    assert_eq!(fixed, expect, "{vf:?} with fix");
    assert_eq!(
        summary.repaired,
        repairable.len() as u64,
        "{vf:?}: {summary:?}"
    );
    let left: Vec<(String, String)> = expect
        .iter()
        .filter(|(k, _)| !repairable.contains(&k.as_str()))
        .cloned()
        .collect();
    let (after, _) = check_findings(&s.om, false);
    assert_eq!(after, left, "{vf:?} after the fix");
    let get = |om: &ObjectMetadata<_>, key: &str| block_on(om.get_object("b", key, None)).unwrap();
    assert_eq!(
        get(&mut s.om, "orph").get("n"),
        Some(&Json::Number(2.0)),
        "{vf:?}"
    );
    assert_eq!(
        get(&mut s.om, "lag").get("n"),
        Some(&Json::Number(2.0)),
        "{vf:?}"
    );
    assert!(
        block_on(s.om.get_object("b", "lone", None)).is_err(),
        "{vf:?}: a lone placeholder reads as no object"
    );
    let phd = get(&mut s.om, "phd");
    assert_eq!(
        phd.get("versionId").and_then(Json::as_str),
        Some(phd_v1.as_str()),
        "{vf:?}"
    );
}
