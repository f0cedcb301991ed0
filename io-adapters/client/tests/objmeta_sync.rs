#![allow(clippy::unwrap_used)]
//! `rowkit_client::objmeta::ObjectMetadata` over the sync driver gives the old sync facade's
//! results (`rowkit_embedded::objmeta`), so moving a caller over changes nothing:
//!
//! - the scenario traces of `vectors/objmeta.json` (`objmeta.md` 18) replayed with the new
//!   facade: every step's result, error, pending repair count and bucket state as the vector
//!   says;
//! - every request of those traces, and of a run with repairs driven by `run_due_repairs`,
//!   equal bit for bit to what the old facade sends (seeds, version ids, repair times), with
//!   the same events, reports and pending repairs. These comparisons go when the old facade
//!   does.

use std::sync::Mutex;

use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::ColumnFamily;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{VFormat, collection_for_bucket};
use rowkit_codec::objmeta::listing::ListingParams;
use rowkit_embedded::driver::{Clock, ManualClock};
use rowkit_embedded::objmeta::ObjectMetadata as OldSync;
use rowkit_embedded::objmeta_scenarios::{bucket_rows, json_eq, replay_scenario, scenario_state};
use rowkit_embedded::{MemoryStore, Reply, Store};
use rowkit_statemachines::objmeta::{ObjmetaError, RepairOutcome, RepairTask};
use rowkit_statemachines::{Request, StoreError, Timestamp};

fn vectors() -> Json {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared").to_string());
    let path = format!("{dir}/vectors/objmeta.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    Json::parse(&text).unwrap()
}

/// A store that records every request.
struct Recorder<'a> {
    inner: &'a dyn Store,
    log: Mutex<Vec<Request>>,
}

impl<'a> Recorder<'a> {
    fn new(inner: &'a dyn Store) -> Self {
        Recorder {
            inner,
            log: Mutex::new(Vec::new()),
        }
    }

    fn take(&self) -> Vec<Request> {
        std::mem::take(&mut self.log.lock().unwrap())
    }
}

impl Store for Recorder<'_> {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        self.log.lock().unwrap().push(request.clone());
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

type Facade<'a> = ObjectMetadata<SyncDriver<&'a dyn Store, &'a ManualClock>>;

fn get_str<'a>(v: &'a Json, name: &str) -> &'a str {
    v.get(name)
        .and_then(Json::as_str)
        .unwrap_or_else(|| panic!("missing string {name}"))
}

fn clock_ms(v: &Json) -> Option<i64> {
    match v.get("clockMs") {
        Some(Json::Number(ms)) => Some(*ms as i64),
        _ => None,
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

/// Runs one operation of a trace; returns `(data, error id)`.
fn run_op(om: &mut Facade<'_>, bucket: &str, op: &Json) -> (Option<Json>, Option<String>) {
    let params = op.get("params").filter(|p| !matches!(p, Json::Null));
    let key = op.get("key").and_then(Json::as_str).unwrap_or("");
    let split = |r: Result<Option<Json>, ObjmetaError>| match r {
        Ok(d) => (d, None),
        Err(e) => (None, Some(e.id().to_string())),
    };
    match get_str(op, "op") {
        "putObject" => {
            let value = op.get("value").cloned().unwrap_or_default();
            split(block_on(om.put_object(bucket, key, &value, params)).map(|r| r.map(Json::String)))
        }
        "getObject" => {
            let vid = params
                .and_then(|p| p.get("versionId"))
                .and_then(Json::as_str);
            split(block_on(om.get_object(bucket, key, vid)).map(Some))
        }
        "deleteObject" => {
            split(block_on(om.delete_object(bucket, key, params, None)).map(|()| None))
        }
        "listObject" => {
            let lp = ListingParams::from_json(params.unwrap_or(&Json::Null));
            split(block_on(om.list_object(bucket, &lp)).map(|r| Some(parse_listing_values(r))))
        }
        "runRepairs" => {
            let n = block_on(om.run_all_repairs()).len();
            (Some(Json::Number(n as f64)), None)
        }
        other => panic!("unknown op {other}"),
    }
}

/// Replays one scenario with the new facade on `store`, in table `table` (created here),
/// checking every step against the vector.
fn replay(store: &dyn Store, table: &str, scenario: &Json) {
    let name = get_str(scenario, "name");
    let vf = VFormat::parse(get_str(scenario, "vFormat")).unwrap();
    let bucket = get_str(scenario, "bucket");
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let mut om: Facade<'_> =
        ObjectMetadata::new(SyncDriver::new(store, &clock), scenario_state(table, vf), 1);
    block_on(om.setup()).unwrap();
    let md = Json::parse(&format!(r#"{{"name":"{bucket}","owner":"ownerid"}}"#)).unwrap();
    block_on(om.create_bucket(bucket, &md)).unwrap();
    if let Some(Json::Array(setup)) = scenario.get("setup") {
        for (i, op) in setup.iter().enumerate() {
            if let Some(ms) = clock_ms(op) {
                clock.advance_to(Timestamp(ms * 1000));
            }
            let (_, err) = run_op(&mut om, bucket, op);
            assert_eq!(err, None, "{name} [{}]: setup {i} failed", vf.as_str());
        }
    }
    let Some(Json::Array(steps)) = scenario.get("steps") else {
        panic!("{name}: no steps");
    };
    for step in steps {
        let at = format!("{name} [{}] step {:?}", vf.as_str(), get_str(step, "label"));
        if let Some(ms) = clock_ms(step) {
            clock.advance_to(Timestamp(ms * 1000));
        }
        let (data, err) = run_op(&mut om, bucket, step.get("op").unwrap());
        let want_err = step.get("err").and_then(Json::as_str).map(String::from);
        assert_eq!(err, want_err, "{at}: error");
        match (&data, step.get("data")) {
            (None, None) => {}
            (Some(d), Some(w)) if json_eq(d, w) => {}
            (got, want) => panic!("{at}: data {got:?}, expected {want:?}"),
        }
        if let Some(Json::Number(n)) = step.get("pendingRepairs") {
            assert_eq!(
                om.pending_repairs().len(),
                *n as usize,
                "{at}: pending repairs"
            );
        }
        if let Some(want) = step.get("stateAfter") {
            let got =
                Json::Array(bucket_rows(store, table, collection_for_bucket(bucket)).unwrap());
            assert!(
                json_eq(&got, want),
                "{at}: state\n  got  {}\n  want {}",
                got.stringify(),
                want.stringify()
            );
        }
    }
}

/// Every scenario trace of the vectors, with the new facade, checked against the vector and
/// against the old facade's requests.
#[test]
fn scenario_traces_replay_as_the_vectors_and_the_old_facade() {
    let vectors = vectors();
    let Some(Json::Array(scenarios)) = vectors.get("scenarios") else {
        panic!("no scenarios in the vectors");
    };
    assert!(!scenarios.is_empty());
    for (i, scenario) in scenarios.iter().enumerate() {
        let table = format!("objmeta-{i}");
        let (old_store, new_store) = (MemoryStore::new(), MemoryStore::new());
        let (old, new) = (Recorder::new(&old_store), Recorder::new(&new_store));
        replay_scenario(&old, &table, scenario).unwrap();
        replay(&new, &table, scenario);
        assert_eq!(
            new.take(),
            old.take(),
            "scenario {}: the requests differ from the old facade's",
            get_str(scenario, "name")
        );
    }
}

fn new_pairs(
    reports: Vec<rowkit_client::objmeta::RepairReport>,
) -> Vec<(RepairTask, RepairOutcome)> {
    reports.into_iter().map(|r| (r.task, r.outcome)).collect()
}

fn old_pairs(
    reports: Vec<rowkit_embedded::objmeta::RepairReport>,
) -> Vec<(RepairTask, RepairOutcome)> {
    reports.into_iter().map(|r| (r.task, r.outcome)).collect()
}

/// Deletes of current versions in both formats, repairs driven by `run_due_repairs` at and
/// before their `due` (one superseded by a newer put: `Conflict`), then the rest by
/// `run_all_repairs`: every result, report, pending list, event and request as the old
/// facade's, and the caller's clock not moved by the repairs.
#[test]
fn repairs_and_events_match_the_old_facade() {
    for vf in [VFormat::V0, VFormat::V1] {
        let (old_store, new_store) = (MemoryStore::new(), MemoryStore::new());
        let (old_rec, new_rec) = (Recorder::new(&old_store), Recorder::new(&new_store));
        let t0 = Timestamp::from_millis(1_700_000_000_000);
        let (old_clock, new_clock) = (ManualClock::new(t0), ManualClock::new(t0));
        let mut old = OldSync::new(&old_rec, &old_clock, scenario_state("s3", vf), 7);
        let new_store: &dyn Store = &new_rec;
        let mut new: Facade<'_> = ObjectMetadata::new(
            SyncDriver::new(new_store, &new_clock),
            scenario_state("s3", vf),
            7,
        );
        let j = |s: &str| Json::parse(s).unwrap();
        assert_eq!(block_on(new.setup()), old.setup());
        let md = j(r#"{"name":"b"}"#);
        assert_eq!(
            block_on(new.create_bucket("b", &md)),
            old.create_bucket("b", &md)
        );
        let versioned = j(r#"{"versioning":true}"#);
        for key in ["x", "y", "z"] {
            let mut last = None;
            for n in 1..=2 {
                let value = j(&format!(r#"{{"key":"{key}","n":{n}}}"#));
                let got = block_on(new.put_object("b", key, &value, Some(&versioned)));
                assert_eq!(got, old.put_object("b", key, &value, Some(&versioned)));
                last = got.unwrap();
            }
            let id = j(&last.unwrap());
            let by_version = j(&format!(
                r#"{{"versionId":"{}"}}"#,
                id.get("versionId").and_then(Json::as_str).unwrap()
            ));
            assert_eq!(
                block_on(new.delete_object("b", key, Some(&by_version), None)),
                old.delete_object("b", key, Some(&by_version), None)
            );
            for c in [&old_clock, &new_clock] {
                c.advance_to(Timestamp(c.now().0 + 1_000_000));
            }
        }
        // A newer put supersedes z's placeholder: its repair ends in Conflict.
        let value = j(r#"{"key":"z","n":3}"#);
        assert_eq!(
            block_on(new.put_object("b", "z", &value, Some(&versioned))),
            old.put_object("b", "z", &value, Some(&versioned))
        );
        let pending = new.pending_repairs().to_vec();
        assert_eq!(pending, old.pending_repairs());
        assert_eq!(pending.len(), 3);
        let before = Timestamp(pending[0].due.0 - 1);
        assert_eq!(
            new_pairs(block_on(new.run_due_repairs(before))),
            old_pairs(old.run_due_repairs(before))
        );
        let first = pending[0].due;
        let ran = new_pairs(block_on(new.run_due_repairs(first)));
        assert_eq!(ran, [(pending[0].clone(), RepairOutcome::Repaired)]);
        assert_eq!(ran, old_pairs(old.run_due_repairs(first)));
        assert_eq!(new.pending_repairs(), old.pending_repairs());
        let rest = new_pairs(block_on(new.run_all_repairs()));
        assert_eq!(rest, old_pairs(old.run_all_repairs()));
        assert_eq!(
            rest,
            [
                (pending[1].clone(), RepairOutcome::Repaired),
                (pending[2].clone(), RepairOutcome::Conflict)
            ]
        );
        for key in ["x", "y", "z"] {
            assert_eq!(
                block_on(new.get_object("b", key, None)),
                old.get_object("b", key, None)
            );
        }
        assert_eq!(new.take_events(), old.take_events());
        assert_eq!(new_clock.now(), old_clock.now());
        assert!(
            new_clock.now() < first,
            "the repairs moved the caller's clock"
        );
        assert_eq!(new_rec.take(), old_rec.take());
    }
}
