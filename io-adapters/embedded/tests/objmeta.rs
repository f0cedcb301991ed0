#![allow(clippy::unwrap_used)]
//! objmeta on the embedded stores: every scenario trace of `vectors/objmeta.json` replayed on
//! MemoryStore and RedbStore, comparing the whole bucket after each step.

use rowkit_codec::objmeta::json::Json;
use rowkit_embedded::objmeta_scenarios::replay_all;
use rowkit_embedded::{MemoryStore, RedbStore, Store};

fn vectors() -> Json {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared").to_string());
    let path = format!("{dir}/vectors/objmeta.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    Json::parse(&text).unwrap()
}

fn check(store: &dyn Store) {
    match replay_all(store, &vectors()) {
        Ok(n) => assert!(n >= 37, "only {n} scenarios"),
        Err(failures) => panic!(
            "{} scenario(s) failed:\n{}",
            failures.len(),
            failures.join("\n\n")
        ),
    }
}

#[test]
fn scenario_traces_memory() {
    check(&MemoryStore::new());
}

#[test]
fn scenario_traces_redb() {
    let dir = std::env::temp_dir().join(format!("rowkit-objmeta-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = RedbStore::open(dir.join("scenarios.redb")).unwrap();
    check(&store);
}

// ---------------------------------------------------------------------------------------------
// Crash at every cut point (`objmeta.md` 8.4, issue "Done when"): a versioned put or delete is
// dropped after its k-th request (the request applied, its reply lost), for every k. Reads must
// then return the value from before or after the operation, the listing must agree with the
// read, and repairing a placeholder master left behind must keep that answer.

use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::listing::{ListingParams, ListingType};
use rowkit_embedded::driver::ManualClock;
use rowkit_embedded::objmeta::ObjectMetadata;
use rowkit_embedded::objmeta_scenarios::scenario_state;
use rowkit_embedded::{Reply, Response};
use rowkit_statemachines::objmeta::{
    DeleteObjectOp, ObjmetaState, OpMachine, PutObjectOp, RepairOutcome, RepairTask,
};
use rowkit_statemachines::{Machine, Timestamp};

fn j(s: &str) -> Json {
    Json::parse(s).unwrap()
}

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

#[derive(Clone, Copy, Debug)]
enum Crashing {
    PutSecondVersion,
    DeleteCurrentOfTwo,
    DeleteOnlyVersion,
    PutDeleteMarker,
}

/// One cut of one operation on a fresh table; returns whether the machine finished.
fn crash_case(store: &dyn Store, table: &str, vf: VFormat, what: Crashing, cut: usize) -> bool {
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
    let rows = rowkit_embedded::objmeta_scenarios::bucket_rows(store, table, "b").unwrap();
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
        let rows = rowkit_embedded::objmeta_scenarios::bucket_rows(store, table, "b").unwrap();
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

fn crash_all(store: &dyn Store) -> usize {
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

#[test]
fn crash_at_every_cut_point_memory() {
    assert!(crash_all(&MemoryStore::new()) > 30);
}

#[test]
fn crash_at_every_cut_point_redb() {
    let dir = std::env::temp_dir().join(format!("rowkit-objmeta-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert!(crash_all(&RedbStore::open(dir.join("crash.redb")).unwrap()) > 30);
}
