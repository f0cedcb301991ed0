#![allow(clippy::unwrap_used)]
//! `rowkit_client::objmeta::ObjectMetadata`, written once, over both drivers: every result
//! (values and errors) over the sync driver on a `MemoryStore` must equal what the Tokio driver
//! on the emulator returns for the same calls on the same injected clock (repairs driven
//! explicitly); and with background repairs over the Tokio driver and the wall clock, a repair
//! runs by itself at its `due`, and one whose facade is dropped first never runs.
//! (Ported from `rowkit-bigtable`'s `tokio_facades.rs`, which compares the two old facades.)

use std::sync::Arc;

use futures_util::StreamExt;
use rowkit_bigtable::BigtableConnection;
use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::{CallOptions, SyncDriver, TokioDriver};
use rowkit_codec::model::Timestamp;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::listing::ListingParams;
use rowkit_statemachines::objmeta::{ObjmetaEvent, PutOutcome, RepairOutcome, RepairTask};
use rowkit_store::MemoryStore;
use rowkit_store::driver::{Clock, ManualClock, SystemClock};
use rowkit_testkit::emulator::Emulator;
use rowkit_testkit::scenarios::objmeta::scenario_state;

async fn connect(emu: &Emulator) -> BigtableConnection {
    BigtableConnection::connect(emu.fresh_target(), None)
        .await
        .unwrap()
}

/// The wall clock now, whole milliseconds: the emulator stamps server-time cells with its
/// own clock, so both runs stand near it (and at a millisecond, as Bigtable's timestamps).
fn near_wall_clock() -> Timestamp {
    SystemClock.now().truncate_to_millis()
}

/// Two clocks at `t`: one for the sync run, one shared with the Tokio driver.
fn clocks(t: Timestamp) -> (ManualClock, Arc<ManualClock>) {
    (ManualClock::new(t), Arc::new(ManualClock::new(t)))
}

/// The Tokio driver on `conn` at `clock`'s time.
fn tokio_driver(conn: BigtableConnection, clock: &Arc<ManualClock>) -> TokioDriver {
    TokioDriver::new(conn).with_clock(clock.clone())
}

/// Asserts one step's results are equal, naming the step; returns the result.
fn agreed<T: PartialEq + std::fmt::Debug>(step: &str, sync: T, tokio: T) -> T {
    assert_eq!(
        sync, tokio,
        "step {step}: the sync and Tokio drivers disagree"
    );
    tokio
}

/// [`agreed`], for steps whose result is not used further.
fn same<T: PartialEq + std::fmt::Debug>(step: &str, sync: T, tokio: T) {
    agreed(step, sync, tokio);
}

fn j(s: &str) -> Json {
    Json::parse(s).unwrap()
}

fn version_of(put: &PutOutcome) -> String {
    Json::parse(put.result.as_deref().unwrap())
        .unwrap()
        .get("versionId")
        .and_then(Json::as_str)
        .unwrap()
        .to_string()
}

/// The stored value of `key`'s master row (v1) in bucket `bucket` of table `s3`.
async fn master_row(conn: &BigtableConnection, bucket: &str, key: &str) -> Option<Json> {
    use rowkit_codec::model::RowSet;
    use rowkit_codec::objmeta::cells::{StoredDoc, filters};
    use rowkit_codec::objmeta::keys::{master_key, row_key};
    use rowkit_statemachines::readrows::ReadRows;
    use rowkit_statemachines::{ReadRowsRequest, RetryPolicy};
    let request = ReadRowsRequest {
        table: "s3".into(),
        rows: RowSet::key(row_key(bucket, &master_key(VFormat::V1, key))),
        filter: Some(filters::latest()),
        ..Default::default()
    };
    let machine = ReadRows::new(request, near_wall_clock(), 0, RetryPolicy::default());
    let mut rows = Vec::new();
    rowkit_client::run(&TokioDriver::new(conn.clone()), machine, |r| rows.push(r))
        .await
        .unwrap();
    rows.first()
        .map(|r| StoredDoc::from_row(r).unwrap().unwrap().value)
}

/// Two versioned puts of `key` (`n` 1 and 2) and the delete of the current one, which
/// leaves a placeholder master and schedules its repair; returns `(v1, the repair)`.
async fn delete_current(
    om: &ObjectMetadata<TokioDriver>,
    bucket: &str,
    key: &str,
) -> (String, RepairTask) {
    let versioned = j(r#"{"versioning":true}"#);
    let mut ids = Vec::new();
    for n in 1..=2 {
        let value = j(&format!(r#"{{"key":"{key}","n":{n}}}"#));
        let r = om.put_object(bucket, key, &value, Some(&versioned)).await;
        ids.push(version_of(&r.unwrap()));
    }
    let by_version = j(&format!(r#"{{"versionId":"{}"}}"#, ids[1]));
    om.delete_object(bucket, key, Some(&by_version), None)
        .await
        .unwrap();
    let task = om
        .take_events()
        .into_iter()
        .find_map(|e| match e {
            ObjmetaEvent::RepairScheduled(t) => Some(t),
            _ => None,
        })
        .unwrap();
    (ids[0].clone(), task)
}

/// `objmeta.md` 16.5 over the Tokio driver with the wall clock and background repairs: the
/// repair a delete schedules runs by itself in a background task at its `due` (15 s later),
/// emitting the master's `Put` to subscribers and `take_events`; until then the placeholder
/// master stays. A facade dropped before `due` aborts its repair: that placeholder stays.
#[tokio::test]
async fn objmeta_background_repair_runs_at_due() {
    let Some(emu) = Emulator::shared_or_skip("objmeta_background_repair_runs_at_due") else {
        return;
    };
    let conn = connect(emu).await;
    let background = |seed| {
        ObjectMetadata::new(
            TokioDriver::new(conn.clone()),
            scenario_state("s3", VFormat::V1),
        )
        .with_options(CallOptions {
            seed,
            ..CallOptions::default()
        })
        .with_background_repairs()
    };
    let om = background(3);
    om.setup().await.unwrap();
    for bucket in ["b", "c"] {
        let md = j(&format!(r#"{{"name":"{bucket}"}}"#));
        assert_eq!(om.create_bucket(bucket, &md).await, Ok(VFormat::V1));
    }
    // A second process that exits before its repair is due.
    let exiting = background(5);
    exiting.with_state(|st| st.config.pid = 5).await;
    let (_, dropped) = delete_current(&exiting, "c", "k").await;
    assert_eq!(exiting.background_repairs(), std::slice::from_ref(&dropped));
    drop(exiting);
    let (v1, task) = delete_current(&om, "b", "k").await;
    let mut streamed = om.subscribe();
    assert!(task.due > dropped.due);
    assert_eq!(om.background_repairs(), std::slice::from_ref(&task));
    assert!(om.pending_repairs().is_empty());
    let phd = master_row(&conn, "b", "k").await.unwrap();
    if SystemClock.now() < task.due {
        assert_eq!(
            phd.get("versionId").and_then(Json::as_str),
            Some(task.phd_version_id.as_str()),
            "the placeholder stays until due"
        );
    }
    // The next event is the repair's, at `due` (the guard only stops a hung test).
    let event = tokio::time::timeout(std::time::Duration::from_secs(120), streamed.next())
        .await
        .expect("the repair never ran")
        .unwrap();
    assert!(
        SystemClock.now() >= task.due,
        "the repair ran before its due time"
    );
    let want = j(&format!(
        r#"{{"key":"k","n":1,"versionId":"{v1}","originOp":"s3:ObjectRemoved:Delete"}}"#
    ));
    assert_eq!(
        event,
        ObjmetaEvent::Put {
            collection: "b".into(),
            key: "\x7fMk".into(),
            value: want.stringify(),
        }
    );
    let reports = om.wait_for_repairs().await;
    assert_eq!(reports.len(), 1);
    assert_eq!(
        (&reports[0].task, reports[0].outcome),
        (&task, RepairOutcome::Repaired)
    );
    assert!(om.background_repairs().is_empty());
    assert_eq!(master_row(&conn, "b", "k").await, Some(want));
    assert_eq!(
        om.take_events(),
        [event],
        "take_events keeps the repair's event"
    );
    // The dropped facade's repair never ran (its due passed before this one's).
    let left = master_row(&conn, "c", "k").await.unwrap();
    assert_eq!(left.get("isPHD"), Some(&Json::Bool(true)));
    assert_eq!(
        left.get("versionId").and_then(Json::as_str),
        Some(dropped.phd_version_id.as_str())
    );
}

/// `drop_pending_repairs` with background repairs, on an injected clock moved past each `due`
/// before the repair's task is first polled (so it would run at once): the dropped repair is
/// returned, aborted and never runs (no report, no event, its placeholder stays), while one
/// scheduled after it runs and is reported; explicit driving then finds nothing pending.
#[tokio::test]
async fn objmeta_drop_pending_repairs_aborts_background_ones() {
    let Some(emu) = Emulator::shared_or_skip("objmeta_drop_pending_repairs_aborts_background_ones")
    else {
        return;
    };
    let conn = connect(emu).await;
    let (_, clock) = clocks(near_wall_clock());
    let om = ObjectMetadata::new(
        tokio_driver(conn.clone(), &clock),
        scenario_state("s3", VFormat::V1),
    )
    .with_options(CallOptions {
        seed: 9,
        ..CallOptions::default()
    })
    .with_background_repairs();
    om.setup().await.unwrap();
    om.create_bucket("d", &j(r#"{"name":"d"}"#)).await.unwrap();
    let (_, dropped) = delete_current(&om, "d", "k").await;
    assert_eq!(om.background_repairs(), std::slice::from_ref(&dropped));
    assert_eq!(om.drop_pending_repairs(), std::slice::from_ref(&dropped));
    assert!(om.background_repairs().is_empty());
    // Past its due before its task is first polled: had it not been aborted, it would run
    // during the next calls.
    clock.advance_to(Timestamp(dropped.due.0 + 1));
    let (v1, kept) = delete_current(&om, "d", "m").await;
    assert_eq!(om.background_repairs(), std::slice::from_ref(&kept));
    clock.advance_to(Timestamp(kept.due.0 + 1));
    let reports = om.wait_for_repairs().await;
    assert_eq!(
        reports
            .iter()
            .map(|r| (&r.task, r.outcome))
            .collect::<Vec<_>>(),
        [(&kept, RepairOutcome::Repaired)]
    );
    let want = j(&format!(
        r#"{{"key":"m","n":1,"versionId":"{v1}","originOp":"s3:ObjectRemoved:Delete"}}"#
    ));
    assert_eq!(master_row(&conn, "d", "m").await, Some(want.clone()));
    assert_eq!(
        om.take_events(),
        [ObjmetaEvent::Put {
            collection: "d".into(),
            key: "\x7fMm".into(),
            value: want.stringify(),
        }]
    );
    assert_eq!(om.run_all_repairs().await, []);
    let left = master_row(&conn, "d", "k").await.unwrap();
    assert_eq!(left.get("isPHD"), Some(&Json::Bool(true)));
    assert_eq!(
        left.get("versionId").and_then(Json::as_str),
        Some(dropped.phd_version_id.as_str())
    );
}

/// `run_due_repairs(now)` over both drivers (repairs driven explicitly): only repairs whose
/// `due` ≤ `now` run, in scheduling order, each at its `due`; later ones stay pending.
#[tokio::test]
async fn objmeta_run_due_repairs_agrees_across_drivers() {
    let Some(emu) = Emulator::shared_or_skip("objmeta_run_due_repairs_agrees_across_drivers")
    else {
        return;
    };
    let (sync_clock, async_clock) = clocks(near_wall_clock());
    let store = MemoryStore::new();
    let sync = ObjectMetadata::new(
        SyncDriver::new(&store, &sync_clock),
        scenario_state("s3", VFormat::V1),
    )
    .with_options(CallOptions {
        seed: 3,
        ..CallOptions::default()
    });
    let tokio = ObjectMetadata::new(
        tokio_driver(connect(emu).await, &async_clock),
        scenario_state("s3", VFormat::V1),
    )
    .with_options(CallOptions {
        seed: 3,
        ..CallOptions::default()
    });
    same("setup", sync.setup().await, tokio.setup().await);
    let md = j(r#"{"name":"b"}"#);
    same(
        "create",
        sync.create_bucket("b", &md).await,
        tokio.create_bucket("b", &md).await,
    );
    let versioned = j(r#"{"versioning":true}"#);
    for key in ["x", "y"] {
        let mut ids = Vec::new();
        for n in 1..=2 {
            let value = j(&format!(r#"{{"key":"{key}","n":{n}}}"#));
            let id = agreed(
                &format!("put {key} {n}"),
                sync.put_object("b", key, &value, Some(&versioned)).await,
                tokio.put_object("b", key, &value, Some(&versioned)).await,
            );
            ids.push(version_of(&id.unwrap()));
        }
        for c in [&sync_clock, &*async_clock] {
            c.advance_to(Timestamp(c.now().0 + 1_000_000));
        }
        let by_version = j(&format!(r#"{{"versionId":"{}"}}"#, ids[1]));
        same(
            &format!("delete current {key}"),
            sync.delete_object("b", key, Some(&by_version), None).await,
            tokio.delete_object("b", key, Some(&by_version), None).await,
        );
    }
    let pending = agreed(
        "pending",
        sync.pending_repairs().to_vec(),
        tokio.pending_repairs().to_vec(),
    );
    let keys: Vec<&str> = pending.iter().map(|t| t.key.as_str()).collect();
    assert_eq!(keys, ["x", "y"]);
    let (first, second) = (pending[0].due, pending[1].due);
    assert!(first < second);
    let before = Timestamp(first.0 - 1);
    assert_eq!(
        agreed(
            "before due",
            sync.run_due_repairs(before).await,
            tokio.run_due_repairs(before).await
        ),
        []
    );
    let ran = agreed(
        "first due",
        sync.run_due_repairs(first).await,
        tokio.run_due_repairs(first).await,
    );
    assert_eq!(ran.len(), 1);
    assert_eq!(
        (&ran[0].task, ran[0].outcome),
        (&pending[0], RepairOutcome::Repaired)
    );
    assert_eq!(tokio.pending_repairs(), &pending[1..]);
    let got = agreed(
        "x repaired",
        sync.get_object("b", "x", None).await,
        tokio.get_object("b", "x", None).await,
    );
    assert_eq!(
        got.unwrap().get("originOp"),
        Some(&Json::str("s3:ObjectRemoved:Delete"))
    );
    let ran = agreed(
        "second due",
        sync.run_due_repairs(second).await,
        tokio.run_due_repairs(second).await,
    );
    assert_eq!(
        ran.iter().map(|r| (&r.task, r.outcome)).collect::<Vec<_>>(),
        [(&pending[1], RepairOutcome::Repaired)]
    );
    assert!(tokio.pending_repairs().is_empty());
    same("events", sync.take_events(), tokio.take_events());
    // Running repairs at their `due` did not move either driver's clock.
    assert!(sync_clock.now() < first && async_clock.now() < first);
}

/// Buckets, versioned puts, gets (latest, by version, missing), a delete marker, deletes of
/// the current version (placeholder master, then the scheduled repair), listings of
/// masters and versions, and the change events, in v0 and v1.
#[tokio::test]
async fn objmeta_flow_agrees_across_drivers() {
    let Some(emu) = Emulator::shared_or_skip("objmeta_flow_agrees_across_drivers") else {
        return;
    };
    for vf in [VFormat::V0, VFormat::V1] {
        let (sync_clock, async_clock) = clocks(near_wall_clock());
        let store = MemoryStore::new();
        let sync = ObjectMetadata::new(
            SyncDriver::new(&store, &sync_clock),
            scenario_state("s3", vf),
        )
        .with_options(CallOptions {
            seed: 3,
            ..CallOptions::default()
        });
        let tokio = ObjectMetadata::new(
            tokio_driver(connect(emu).await, &async_clock),
            scenario_state("s3", vf),
        )
        .with_options(CallOptions {
            seed: 3,
            ..CallOptions::default()
        });
        let mut streamed = tokio.subscribe();
        same("setup", sync.setup().await, tokio.setup().await);
        let md = j(
            r#"{"name":"b","owner":"o","ownerDisplayName":"o","creationDate":"2024-01-01T00:00:00.000Z","mdBucketModelVersion":10,"transient":false,"deleted":false,"versioningConfiguration":{"Status":"Enabled"},"locationConstraint":"us-east-1","readLocationConstraint":null,"isNFS":null,"ingestion":null}"#,
        );
        same(
            "create bucket",
            sync.create_bucket("b", &md).await,
            tokio.create_bucket("b", &md).await,
        );
        same(
            "list buckets",
            sync.list_buckets().await,
            tokio.list_buckets().await,
        );
        let versioned = j(r#"{"versioning":true}"#);
        let mut ids = Vec::new();
        for (key, n) in [("k", 1), ("k", 2), ("dir/a", 1), ("dir/b", 1), ("k", 3)] {
            let value = j(&format!(r#"{{"key":"{key}","n":{n}}}"#));
            let id = agreed(
                &format!("put {key} {n} ({vf:?})"),
                sync.put_object("b", key, &value, Some(&versioned)).await,
                tokio.put_object("b", key, &value, Some(&versioned)).await,
            );
            ids.push(id.unwrap());
        }
        let v1 = version_of(&ids[0]);
        let v3 = version_of(&ids[4]);
        let got = agreed(
            "get k",
            sync.get_object("b", "k", None).await,
            tokio.get_object("b", "k", None).await,
        );
        assert_eq!(got.unwrap().get("n"), Some(&Json::Number(3.0)));
        same(
            "get k v1",
            sync.get_object("b", "k", Some(&v1)).await,
            tokio.get_object("b", "k", Some(&v1)).await,
        );
        same(
            "get missing",
            sync.get_object("b", "nope", None).await,
            tokio.get_object("b", "nope", None).await,
        );
        let marker = j(r#"{"key":"dir/a","isDeleteMarker":true}"#);
        same(
            "delete marker",
            sync.put_object("b", "dir/a", &marker, Some(&versioned))
                .await,
            tokio
                .put_object("b", "dir/a", &marker, Some(&versioned))
                .await,
        );
        let by_version = j(&format!(r#"{{"versionId":"{v3}"}}"#));
        same(
            "delete current k",
            sync.delete_object("b", "k", Some(&by_version), None).await,
            tokio.delete_object("b", "k", Some(&by_version), None).await,
        );
        same(
            "get k (placeholder)",
            sync.get_object("b", "k", None).await,
            tokio.get_object("b", "k", None).await,
        );
        assert_eq!(sync.pending_repairs(), tokio.pending_repairs());
        assert!(!tokio.pending_repairs().is_empty());
        for (name, params) in [
            ("masters", r#"{"listingType":"DelimiterMaster"}"#),
            ("versions", r#"{"listingType":"DelimiterVersions"}"#),
            (
                "delimited",
                r#"{"listingType":"Delimiter","delimiter":"/"}"#,
            ),
            ("page", r#"{"listingType":"DelimiterVersions","maxKeys":2}"#),
        ] {
            let lp = ListingParams::from_json(&j(params));
            agreed(
                &format!("list {name} ({vf:?})"),
                sync.list_object("b", &lp).await,
                tokio.list_object("b", &lp).await,
            )
            .unwrap();
        }
        same(
            "repairs",
            sync.run_all_repairs().await,
            tokio.run_all_repairs().await,
        );
        let got = agreed(
            "get k (repaired)",
            sync.get_object("b", "k", None).await,
            tokio.get_object("b", "k", None).await,
        );
        assert_eq!(got.unwrap().get("n"), Some(&Json::Number(2.0)));
        same(
            "delete dir/b (non-versioned)",
            sync.delete_object("b", "dir/b", None, None).await,
            tokio.delete_object("b", "dir/b", None, None).await,
        );
        same("count", sync.count_items().await, tokio.count_items().await);
        same(
            "uuid",
            sync.get_uuid(Some("u-1")).await,
            tokio.get_uuid(Some("u-1")).await,
        );
        let events = agreed("events", sync.take_events(), tokio.take_events());
        assert!(
            events
                .iter()
                .any(|e| matches!(e, ObjmetaEvent::RepairScheduled(_)))
        );
        let mut got = Vec::new();
        while let Ok(e) = streamed.try_recv() {
            got.push(e);
        }
        assert_eq!(got, events, "the subscriber saw every event, in order");
    }
}

/// Two versioned puts of one key started together on one facade over the Tokio driver: both
/// succeed with different version ids (Arsenal's per-process generator is the facade's, shared
/// by its calls), and each version is readable.
#[tokio::test]
async fn objmeta_concurrent_puts_on_one_facade_get_distinct_versions() {
    let Some(emu) =
        Emulator::shared_or_skip("objmeta_concurrent_puts_on_one_facade_get_distinct_versions")
    else {
        return;
    };
    let om = ObjectMetadata::new(
        TokioDriver::new(connect(emu).await),
        scenario_state("s3", VFormat::V1),
    );
    om.setup().await.unwrap();
    om.create_bucket("b", &j(r#"{"name":"b"}"#)).await.unwrap();
    let versioning = j(r#"{"versioning":true}"#);
    let (one, two) = (j(r#"{"n":1}"#), j(r#"{"n":2}"#));
    let (first, second) = tokio::join!(
        om.put_object("b", "k", &one, Some(&versioning)),
        om.put_object("b", "k", &two, Some(&versioning)),
    );
    let (first, second) = (version_of(&first.unwrap()), version_of(&second.unwrap()));
    assert_ne!(first, second);
    for (version, n) in [(&first, 1.0), (&second, 2.0)] {
        let value = om.get_object("b", "k", Some(version)).await.unwrap();
        assert_eq!(value.get("n"), Some(&Json::Number(n)), "version {version}");
    }
}
