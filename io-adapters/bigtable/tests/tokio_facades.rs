#![allow(clippy::unwrap_used)]
//! The Tokio facades on the emulator: each runs its schema's core acceptance flow and every
//! result (values and errors) must equal what the sync facade over a `MemoryStore` returns for
//! the same calls on the same injected clock. Current-thread runtimes (`#[tokio::test]`): the
//! mounttable and tracestore machines are `!Send` for now.

use std::sync::Arc;

use rowkit_bigtable::BigtableConnection;
use rowkit_bigtable::driver::SharedClock;
use rowkit_bigtable::emulator::Emulator;
use rowkit_codec::model::Timestamp;
use rowkit_embedded::MemoryStore;
use rowkit_embedded::driver::{Clock, ManualClock};

fn shared_dir() -> String {
    std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared").to_string())
}

fn vector_text(name: &str) -> String {
    let path = format!("{}/vectors/{name}", shared_dir());
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("vector file {path} is required: {e}"))
}

async fn connect(emu: &Emulator) -> BigtableConnection {
    BigtableConnection::connect(emu.fresh_target(), None)
        .await
        .unwrap()
}

/// The wall clock now, whole milliseconds: the emulator stamps server-time cells with its
/// own clock, so both runs stand near it (and at a millisecond, as Bigtable's timestamps).
fn near_wall_clock() -> Timestamp {
    rowkit_bigtable::driver::now().truncate_to_millis()
}

/// Two clocks at `t`: one for the sync run, one shared with the Tokio facade.
fn clocks(t: Timestamp) -> (ManualClock, Arc<ManualClock>) {
    (ManualClock::new(t), Arc::new(ManualClock::new(t)))
}

fn shared(c: &Arc<ManualClock>) -> SharedClock {
    c.clone()
}

/// Asserts one step's results are equal, naming the step; returns the result.
fn agreed<T: PartialEq + std::fmt::Debug>(step: &str, sync: T, tokio: T) -> T {
    assert_eq!(
        sync, tokio,
        "step {step}: the sync and Tokio facades disagree"
    );
    tokio
}

/// [`agreed`], for steps whose result is not used further.
fn same<T: PartialEq + std::fmt::Debug>(step: &str, sync: T, tokio: T) {
    agreed(step, sync, tokio);
}

// ---------------------------------------------------------------------------------------------

mod mounttable {
    use super::*;
    use rowkit_bigtable::mounttable::MountTable as AsyncMt;
    use rowkit_codec::mounttable::{Caller, NodeRow, decode_permissions_file};
    use rowkit_embedded::mounttable::{MountTable as SyncMt, MtConfig};
    use rowkit_statemachines::mounttable::{MtError, Tables};
    use rowkit_testkit::scenarios::mounttable::{S, TEST_PERMS};

    fn config() -> MtConfig {
        MtConfig {
            tables: Tables::new("mt"),
            seed: 7,
            ..MtConfig::default()
        }
    }

    /// Mount, resolve, glob, permissions, unmount, delete (with and without subtree), with
    /// the hot-row cache on, as root, alice and bob of `spec/mounttable.md` §22.
    #[tokio::test]
    async fn mounttable_flow_matches_the_sync_facade() {
        let Some(emu) = Emulator::shared_or_skip("mounttable_flow_matches_the_sync_facade") else {
            return;
        };
        let start = near_wall_clock();
        let (sync_clock, async_clock) = clocks(start);
        let store = MemoryStore::new();
        let sync = SyncMt::new(&store, &sync_clock, config());
        let tokio = AsyncMt::new(connect(emu).await, config()).with_clock(shared(&async_clock));
        let perms = decode_permissions_file(TEST_PERMS.as_bytes()).unwrap();
        same(
            "setup",
            sync.setup(Some(perms.clone())),
            tokio.setup(Some(perms)).await,
        );
        let root = Caller::new(&["root"], true);
        let alice = Caller::new(&["alice"], false);
        let bob = Caller::new(&["bob"], false);
        let advance = |us: i64| {
            let t = sync_clock.now().saturating_add_micros(us);
            sync_clock.advance_to(t);
            async_clock.advance_to(t);
        };
        for (who, name, server, flags) in [
            (&root, "a/b", S, 0),
            (&root, "a/c/d", "/127.0.0.1:8001/x", 1),
            (&bob, "stuff/x", S, 0),
            (&alice, "a/nope", S, 0),
            (&root, "users/carol/p", S, 2),
        ] {
            let step = format!("mount {name} as {who:?}");
            let r = agreed(
                &step,
                sync.mount(who, name, server, 3600, flags),
                tokio.mount(who, name, server, 3600, flags).await,
            );
            // alice may not create under `a`, nor bob under `stuff`; the rest succeed.
            let refused = ["a/nope", "stuff/x"].contains(&name);
            assert_eq!(r.is_ok(), !refused, "{step}: {r:?}");
            advance(1_000);
        }
        for (who, name) in [
            (&root, "a/b"),
            (&root, "a/b/more/rest"),
            (&alice, "a/c/d"),
            (&bob, "a/b"),
            (&root, "nowhere"),
        ] {
            let r = agreed(
                &format!("resolve {name} as {who:?}"),
                sync.resolve(who, name),
                tokio.resolve(who, name).await,
            );
            assert_eq!(
                r.is_ok(),
                name.starts_with("a/") && who != &bob,
                "{name}: {r:?}"
            );
        }
        for (who, name, pattern) in [
            (&root, "", "..."),
            (&root, "a", "*"),
            (&alice, "", "a/..."),
            (&bob, "", "***"),
        ] {
            let entries = agreed(
                &format!("glob {name} {pattern} as {who:?}"),
                sync.glob(who, name, pattern),
                tokio.glob(who, name, pattern).await,
            );
            if pattern == "..." {
                assert!(entries.unwrap().len() >= 7);
            }
        }
        let got = agreed(
            "perms get a",
            sync.get_permissions(&root, "a"),
            tokio.get_permissions(&root, "a").await,
        )
        .unwrap();
        same(
            "perms set a",
            sync.set_permissions(&root, "a", got.perms.clone(), &got.version),
            tokio
                .set_permissions(&root, "a", got.perms.clone(), &got.version)
                .await,
        );
        same(
            "perms set a, stale version",
            sync.set_permissions(&root, "a", got.perms.clone(), &got.version),
            tokio
                .set_permissions(&root, "a", got.perms, &got.version)
                .await,
        );
        advance(1_000);
        same(
            "unmount a/b",
            sync.unmount(&root, "a/b", S),
            tokio.unmount(&root, "a/b", S).await,
        );
        same(
            "resolve a/b after unmount",
            sync.resolve(&root, "a/b"),
            tokio.resolve(&root, "a/b").await,
        );
        let refused = agreed(
            "delete a/c without subtree",
            sync.delete(&root, "a/c", false),
            tokio.delete(&root, "a/c", false).await,
        );
        assert!(refused.is_err(), "{refused:?}");
        same(
            "delete a/c as alice",
            sync.delete(&alice, "a/c", true),
            tokio.delete(&alice, "a/c", true).await,
        );
        same(
            "delete a/c with subtree",
            sync.delete(&root, "a/c", true),
            tokio.delete(&root, "a/c", true).await,
        );
        let after = agreed(
            "glob after delete",
            sync.glob(&root, "", "..."),
            tokio.glob(&root, "", "...").await,
        )
        .unwrap();
        assert!(
            after.iter().all(|e| !e.name.starts_with("a/c")),
            "{after:?}"
        );
        same("counters", sync.counters(), tokio.counters().await);
        // The creation time is server time: the emulator's wall clock on one side, the
        // injected clock on the other (`bigtable.md` 14); the rest must agree.
        let created = |n: Option<NodeRow>| {
            n.map(|mut n| {
                let t = n.creation_time_us;
                n.creation_time_us = 0;
                (n, t)
            })
        };
        let (sync_node, _) = created(sync.get_node("a/b").unwrap()).unwrap();
        let (tokio_node, t) = created(tokio.get_node("a/b").await.unwrap()).unwrap();
        assert_eq!(sync_node, tokio_node);
        assert!(t >= start.0 && t <= rowkit_bigtable::driver::now().0, "{t}");
        let mut sync_findings = Vec::new();
        let mut tokio_findings = Vec::new();
        same(
            "fsck",
            sync.fsck(false, |e| sync_findings.push(e)),
            tokio.fsck(false, |e| tokio_findings.push(e)).await,
        );
        same("fsck findings", sync_findings, tokio_findings);
        assert!(matches!(
            tokio.resolve(&root, "nowhere").await,
            Err(MtError::NoSuchName { .. })
        ));
    }

    /// Concurrent resolves of one name on one facade share the hot-row cache: 16 resolves
    /// of `x/y` read each node row of the path (root, `x`, `x/y`) at most once between them,
    /// all answer the same, and a write invalidates (a second mount is seen at once).
    #[tokio::test]
    async fn mounttable_cache_coalesces_and_invalidates() {
        let Some(emu) = Emulator::shared_or_skip("mounttable_cache_coalesces_and_invalidates")
        else {
            return;
        };
        let mt = AsyncMt::new(connect(emu).await, config());
        mt.setup(None).await.unwrap();
        let root = Caller::new(&["root"], true);
        mt.mount(&root, "x/y", S, 3600, 0).await.unwrap();
        let before = mt.cache_fetches();
        let resolves = (0..16).map(|_| mt.resolve(&root, "x/y"));
        let answers = futures_util::future::join_all(resolves).await;
        let fetched = mt.cache_fetches() - before;
        assert!(
            (1..=3).contains(&fetched),
            "{fetched} node reads for 16 resolves"
        );
        let first = answers[0].clone().unwrap();
        assert_eq!(first.servers.len(), 1);
        assert!(answers.iter().all(|a| a.as_ref() == Ok(&first)));
        mt.mount(&root, "x/y", "/127.0.0.1:9/z", 3600, 0)
            .await
            .unwrap();
        assert_eq!(mt.resolve(&root, "x/y").await.unwrap().servers.len(), 2);
    }
}

// ---------------------------------------------------------------------------------------------

mod tracestore {
    use super::*;
    use rowkit_bigtable::tracestore::{TraceStore as AsyncGold, setup_table as async_setup};
    use rowkit_codec::tracestore::Layout;
    use rowkit_codec::tracestore::ops::params_from;
    use rowkit_embedded::tracestore::{TraceStore as SyncGold, setup_table};
    use rowkit_statemachines::tracestore::PutEntry;

    fn entry(name: &str, config: &str, digest: &str, layout: Layout) -> PutEntry {
        PutEntry {
            params: params_from([("name", name), ("config", config), ("source_type", "gm")]),
            options: match layout {
                Layout::Md5 => params_from([("ext", "png")]),
                Layout::DigestId => Default::default(),
            },
            digest: digest.into(),
        }
    }

    fn commit_time(commit: i64) -> Option<Timestamp> {
        Some(Timestamp::from_secs(1_557_000_000 + commit * 60))
    }

    fn digest(i: usize) -> String {
        format!(
            "{:032x}",
            0x1000_0000_0000_0000_0000_0000_0000_0000u128 + i as u128
        )
    }

    /// Put (several commits, spanning tiles 0 and 1, an override by a newer timestamp and a
    /// missing digest), ReadRange of a tile, ReadDense across the tile boundary, NewestTile,
    /// and (digest-id) id allocation, in both layouts.
    #[tokio::test]
    async fn tracestore_flow_matches_the_sync_facade() {
        let Some(emu) = Emulator::shared_or_skip("tracestore_flow_matches_the_sync_facade") else {
            return;
        };
        for layout in [Layout::Md5, Layout::DigestId] {
            let (sync_clock, async_clock) = clocks(near_wall_clock());
            let store = MemoryStore::new();
            let conn = connect(emu).await;
            setup_table(&store, "gold", layout).unwrap();
            async_setup(&conn, "gold", layout).await.unwrap();
            let mut sync = SyncGold::open(&store, &sync_clock, "gold", None, 5).unwrap();
            let mut tokio = AsyncGold::open(conn.clone(), "gold", None, 5)
                .await
                .unwrap()
                .with_clock(shared(&async_clock));
            assert_eq!(tokio.layout(), layout);
            same(
                "newest (empty)",
                sync.newest_tile(),
                tokio.newest_tile().await,
            );
            let ts = Timestamp::from_millis(1_557_018_184_000);
            let mut n = 0;
            for commit in [0i64, 1, 2, 254, 255, 256, 300] {
                let entries: Vec<PutEntry> = ["alpha", "beta", "gamma"]
                    .iter()
                    .flat_map(|name| {
                        ["8888", "565"].map(|config| {
                            n += 1;
                            let d = if n % 7 == 0 {
                                String::new()
                            } else {
                                digest(n % 5)
                            };
                            entry(name, config, &d, layout)
                        })
                    })
                    .collect();
                agreed(
                    &format!("put {commit} ({layout:?})"),
                    sync.put(commit, commit_time(commit), entries.clone(), ts),
                    tokio.put(commit, commit_time(commit), entries, ts).await,
                )
                .unwrap();
            }
            // The newer timestamp wins over the later write.
            let older = vec![entry("alpha", "8888", &digest(9), layout)];
            let newer = vec![entry("alpha", "8888", &digest(8), layout)];
            let later = Timestamp::from_millis(1_557_018_185_000);
            same(
                "put newer",
                sync.put(1, commit_time(1), newer.clone(), later),
                tokio.put(1, commit_time(1), newer, later).await,
            );
            same(
                "put older",
                sync.put(1, commit_time(1), older.clone(), ts),
                tokio.put(1, commit_time(1), older, ts).await,
            );
            let tile = agreed(
                &format!("tile 0 ({layout:?})"),
                sync.read_range(0, 255),
                tokio.read_range(0, 255).await,
            )
            .unwrap();
            assert_eq!(tile.traces.len(), 6);
            assert_eq!(
                tile.traces[",config=8888,name=alpha,source_type=gm,"].digests[1],
                digest(8)
            );
            let traces = agreed(
                &format!("traces 250..=300 ({layout:?})"),
                sync.read_range(250, 300),
                tokio.read_range(250, 300).await,
            )
            .unwrap();
            assert_eq!(traces.commits.len(), 51);
            let dense = agreed(
                "dense",
                sync.read_dense(300, 4),
                tokio.read_dense(300, 4).await,
            )
            .unwrap();
            assert_eq!(dense.commits, [254, 255, 256, 300]);
            same("newest", sync.newest_tile(), tokio.newest_tile().await);
            assert_eq!(tokio.newest_tile().await.unwrap(), Some(1));
            if layout == Layout::DigestId {
                same(
                    "allocate",
                    sync.allocate_digest_ids(3),
                    tokio.allocate_digest_ids(3).await,
                );
                same(
                    "assign",
                    sync.assign_digest_ids(vec![digest(1), digest(42)]),
                    tokio.assign_digest_ids(vec![digest(1), digest(42)]).await,
                );
            }
            // A fresh Tokio reader (no caches) reads the same tile.
            let mut reader = AsyncGold::open(conn, "gold", Some(layout), 6)
                .await
                .unwrap();
            assert_eq!(reader.read_range(0, 255).await.unwrap(), tile);
        }
    }
}

// ---------------------------------------------------------------------------------------------

mod objmeta {
    use super::*;
    use rowkit_bigtable::objmeta::{ObjectMetadata as AsyncOm, RepairDriving};
    use rowkit_codec::objmeta::json::Json;
    use rowkit_codec::objmeta::keys::VFormat;
    use rowkit_codec::objmeta::listing::ListingParams;
    use rowkit_embedded::objmeta::ObjectMetadata as SyncOm;
    use rowkit_statemachines::objmeta::{ObjmetaEvent, RepairOutcome, RepairTask};
    use rowkit_testkit::scenarios::objmeta::scenario_state;

    fn j(s: &str) -> Json {
        Json::parse(s).unwrap()
    }

    fn version_of(result: &Option<String>) -> String {
        Json::parse(result.as_deref().unwrap())
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
        rowkit_bigtable::driver::run(conn, machine, |r| rows.push(r))
            .await
            .unwrap();
        rows.first()
            .map(|r| StoredDoc::from_row(r).unwrap().unwrap().value)
    }

    /// Two versioned puts of `key` (`n` 1 and 2) and the delete of the current one, which
    /// leaves a placeholder master and schedules its repair; returns `(v1, the repair)`.
    async fn delete_current(om: &mut AsyncOm, bucket: &str, key: &str) -> (String, RepairTask) {
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

    /// `objmeta.md` 16.5 on the Tokio facade with the wall clock: the repair a delete
    /// schedules runs by itself in a background task at its `due` (15 s later), emitting the
    /// master's `Put` to subscribers and `take_events`; until then the placeholder master
    /// stays. A facade dropped before `due` aborts its repair: that placeholder stays.
    #[tokio::test]
    async fn objmeta_background_repair_runs_at_due() {
        let Some(emu) = Emulator::shared_or_skip("objmeta_background_repair_runs_at_due") else {
            return;
        };
        let conn = connect(emu).await;
        let mut om = AsyncOm::new(conn.clone(), scenario_state("s3", VFormat::V1), 3);
        om.setup().await.unwrap();
        for bucket in ["b", "c"] {
            let md = j(&format!(r#"{{"name":"{bucket}"}}"#));
            assert_eq!(om.create_bucket(bucket, &md).await, Ok(VFormat::V1));
        }
        // A second process that exits before its repair is due.
        let mut exiting = AsyncOm::new(conn.clone(), scenario_state("s3", VFormat::V1), 5);
        exiting.state_mut().config.pid = 5;
        let (_, dropped) = delete_current(&mut exiting, "c", "k").await;
        assert_eq!(exiting.background_repairs(), std::slice::from_ref(&dropped));
        drop(exiting);
        let (v1, task) = delete_current(&mut om, "b", "k").await;
        let mut streamed = om.subscribe();
        assert!(task.due > dropped.due);
        assert_eq!(om.background_repairs(), std::slice::from_ref(&task));
        assert!(om.pending_repairs().is_empty());
        let phd = master_row(&conn, "b", "k").await.unwrap();
        if rowkit_bigtable::driver::now() < task.due {
            assert_eq!(
                phd.get("versionId").and_then(Json::as_str),
                Some(task.phd_version_id.as_str()),
                "the placeholder stays until due"
            );
        }
        // The next event is the repair's, at `due` (the guard only stops a hung test).
        let event = tokio::time::timeout(std::time::Duration::from_secs(120), streamed.recv())
            .await
            .expect("the repair never ran")
            .unwrap();
        assert!(
            rowkit_bigtable::driver::now() >= task.due,
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

    /// `run_due_repairs(now)` on both facades (repairs kept pending): only repairs whose
    /// `due` ≤ `now` run, in scheduling order, each at its `due`; later ones stay pending.
    #[tokio::test]
    async fn objmeta_run_due_repairs_matches_the_sync_facade() {
        let Some(emu) = Emulator::shared_or_skip("objmeta_run_due_repairs_matches_the_sync_facade")
        else {
            return;
        };
        let (sync_clock, async_clock) = clocks(near_wall_clock());
        let store = MemoryStore::new();
        let mut sync = SyncOm::new(&store, &sync_clock, scenario_state("s3", VFormat::V1), 3);
        let mut tokio = AsyncOm::new(connect(emu).await, scenario_state("s3", VFormat::V1), 3)
            .with_clock(shared(&async_clock))
            .with_repair_driving(RepairDriving::OnCall);
        same("setup", sync.setup(), tokio.setup().await);
        let md = j(r#"{"name":"b"}"#);
        same(
            "create",
            sync.create_bucket("b", &md),
            tokio.create_bucket("b", &md).await,
        );
        let versioned = j(r#"{"versioning":true}"#);
        for key in ["x", "y"] {
            let mut ids = Vec::new();
            for n in 1..=2 {
                let value = j(&format!(r#"{{"key":"{key}","n":{n}}}"#));
                let id = agreed(
                    &format!("put {key} {n}"),
                    sync.put_object("b", key, &value, Some(&versioned)),
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
                sync.delete_object("b", key, Some(&by_version), None),
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
                sync.run_due_repairs(before),
                tokio.run_due_repairs(before).await
            ),
            []
        );
        let ran = agreed(
            "first due",
            sync.run_due_repairs(first),
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
            sync.get_object("b", "x", None),
            tokio.get_object("b", "x", None).await,
        );
        assert_eq!(
            got.unwrap().get("originOp"),
            Some(&Json::str("s3:ObjectRemoved:Delete"))
        );
        let ran = agreed(
            "second due",
            sync.run_due_repairs(second),
            tokio.run_due_repairs(second).await,
        );
        assert_eq!(
            ran.iter().map(|r| (&r.task, r.outcome)).collect::<Vec<_>>(),
            [(&pending[1], RepairOutcome::Repaired)]
        );
        assert!(tokio.pending_repairs().is_empty());
        same("events", sync.take_events(), tokio.take_events());
    }

    /// Buckets, versioned puts, gets (latest, by version, missing), a delete marker, deletes of
    /// the current version (placeholder master, then the scheduled repair), listings of
    /// masters and versions, and the change events, in v0 and v1.
    #[tokio::test]
    async fn objmeta_flow_matches_the_sync_facade() {
        let Some(emu) = Emulator::shared_or_skip("objmeta_flow_matches_the_sync_facade") else {
            return;
        };
        for vf in [VFormat::V0, VFormat::V1] {
            let (sync_clock, async_clock) = clocks(near_wall_clock());
            let store = MemoryStore::new();
            let mut sync = SyncOm::new(&store, &sync_clock, scenario_state("s3", vf), 3);
            let mut tokio = AsyncOm::new(connect(emu).await, scenario_state("s3", vf), 3)
                .with_clock(shared(&async_clock))
                .with_repair_driving(RepairDriving::OnCall);
            let mut streamed = tokio.subscribe();
            same("setup", sync.setup(), tokio.setup().await);
            let md = j(
                r#"{"name":"b","owner":"o","ownerDisplayName":"o","creationDate":"2024-01-01T00:00:00.000Z","mdBucketModelVersion":10,"transient":false,"deleted":false,"versioningConfiguration":{"Status":"Enabled"},"locationConstraint":"us-east-1","readLocationConstraint":null,"isNFS":null,"ingestion":null}"#,
            );
            same(
                "create bucket",
                sync.create_bucket("b", &md),
                tokio.create_bucket("b", &md).await,
            );
            same(
                "list buckets",
                sync.list_buckets(),
                tokio.list_buckets().await,
            );
            let versioned = j(r#"{"versioning":true}"#);
            let mut ids = Vec::new();
            for (key, n) in [("k", 1), ("k", 2), ("dir/a", 1), ("dir/b", 1), ("k", 3)] {
                let value = j(&format!(r#"{{"key":"{key}","n":{n}}}"#));
                let id = agreed(
                    &format!("put {key} {n} ({vf:?})"),
                    sync.put_object("b", key, &value, Some(&versioned)),
                    tokio.put_object("b", key, &value, Some(&versioned)).await,
                );
                ids.push(id.unwrap());
            }
            let v1 = Json::parse(ids[0].as_ref().unwrap())
                .unwrap()
                .get("versionId")
                .and_then(Json::as_str)
                .unwrap()
                .to_string();
            let v3 = Json::parse(ids[4].as_ref().unwrap())
                .unwrap()
                .get("versionId")
                .and_then(Json::as_str)
                .unwrap()
                .to_string();
            let got = agreed(
                "get k",
                sync.get_object("b", "k", None),
                tokio.get_object("b", "k", None).await,
            );
            assert_eq!(got.unwrap().get("n"), Some(&Json::Number(3.0)));
            same(
                "get k v1",
                sync.get_object("b", "k", Some(&v1)),
                tokio.get_object("b", "k", Some(&v1)).await,
            );
            same(
                "get missing",
                sync.get_object("b", "nope", None),
                tokio.get_object("b", "nope", None).await,
            );
            let marker = j(r#"{"key":"dir/a","isDeleteMarker":true}"#);
            same(
                "delete marker",
                sync.put_object("b", "dir/a", &marker, Some(&versioned)),
                tokio
                    .put_object("b", "dir/a", &marker, Some(&versioned))
                    .await,
            );
            let by_version = j(&format!(r#"{{"versionId":"{v3}"}}"#));
            same(
                "delete current k",
                sync.delete_object("b", "k", Some(&by_version), None),
                tokio.delete_object("b", "k", Some(&by_version), None).await,
            );
            same(
                "get k (placeholder)",
                sync.get_object("b", "k", None),
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
                    sync.list_object("b", &lp),
                    tokio.list_object("b", &lp).await,
                )
                .unwrap();
            }
            same(
                "repairs",
                sync.run_all_repairs(),
                tokio.run_all_repairs().await,
            );
            let got = agreed(
                "get k (repaired)",
                sync.get_object("b", "k", None),
                tokio.get_object("b", "k", None).await,
            );
            assert_eq!(got.unwrap().get("n"), Some(&Json::Number(2.0)));
            same(
                "delete dir/b (non-versioned)",
                sync.delete_object("b", "dir/b", None, None),
                tokio.delete_object("b", "dir/b", None, None).await,
            );
            same("count", sync.count_items(), tokio.count_items().await);
            same(
                "uuid",
                sync.get_uuid(Some("u-1")),
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
}

// ---------------------------------------------------------------------------------------------

mod triples {
    use super::*;
    use rowkit_bigtable::triples::TripleStore as AsyncTs;
    use rowkit_codec::triples::Triple;
    use rowkit_embedded::triples::TripleStore as SyncTs;
    use rowkit_statemachines::triples::{LookupMethod, LookupOptions};

    fn fixture() -> Vec<Triple> {
        let v: serde_json::Value = serde_json::from_str(&vector_text("triples.json")).unwrap();
        v["bt_fixture"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| Triple::parse(c["input"].as_str().unwrap().as_bytes()).unwrap())
            .collect()
    }

    /// Graphs (create, list, drop), AddTriples (twice: idempotent), every lookup method with
    /// and without `max`, Exist, RemoveTriples of one triple, on the 18-triple fixture.
    #[tokio::test]
    async fn graph_flow_matches_the_sync_facade() {
        let Some(emu) = Emulator::shared_or_skip("graph_flow_matches_the_sync_facade") else {
            return;
        };
        let triples = fixture();
        assert_eq!(triples.len(), 18);
        let (sync_clock, async_clock) = clocks(near_wall_clock());
        let store = MemoryStore::new();
        let sync_ts = SyncTs::new(&store, &sync_clock).with_seed(4);
        let tokio_ts = AsyncTs::new(connect(emu).await)
            .with_seed(4)
            .with_clock(shared(&async_clock));
        same("setup", sync_ts.setup(), tokio_ts.setup().await);
        let sg = sync_ts.new_graph(b"g").unwrap();
        let tg = tokio_ts.new_graph(b"g").await.unwrap();
        same(
            "second graph",
            sync_ts.new_graph(b"h").map(|_| ()),
            tokio_ts.new_graph(b"h").await.map(|_| ()),
        );
        same(
            "duplicate graph",
            sync_ts.new_graph(b"g").map(|_| ()),
            tokio_ts.new_graph(b"g").await.map(|_| ()),
        );
        for round in 0..2 {
            same(
                &format!("add round {round}"),
                sg.add_triples(triples.clone()),
                tg.add_triples(triples.clone()).await,
            );
        }
        let t = &triples[0];
        let u = &triples[5];
        let methods = [
            LookupMethod::Triples,
            LookupMethod::Objects(t.subject.clone(), t.predicate.clone()),
            LookupMethod::Subjects(t.predicate.clone(), t.object.clone()),
            LookupMethod::PredicatesForSubject(t.subject.clone()),
            LookupMethod::PredicatesForObject(u.object.clone()),
            LookupMethod::PredicatesForSubjectAndObject(t.subject.clone(), t.object.clone()),
            LookupMethod::TriplesForSubject(u.subject.clone()),
            LookupMethod::TriplesForPredicate(u.predicate.clone()),
            LookupMethod::TriplesForObject(t.object.clone()),
            LookupMethod::TriplesForSubjectAndPredicate(u.subject.clone(), u.predicate.clone()),
            LookupMethod::TriplesForPredicateAndObject(t.predicate.clone(), t.object.clone()),
        ];
        for method in &methods {
            for max in [0, 2] {
                let options = LookupOptions {
                    max_elements: max,
                    ..LookupOptions::default()
                };
                let found = agreed(
                    &format!("{method:?} max {max}"),
                    sg.lookup(method.clone(), options.clone()),
                    tg.lookup(method.clone(), options).await,
                )
                .unwrap();
                assert!(!found.is_empty(), "{method:?} found nothing");
            }
        }
        let all = tg
            .lookup(LookupMethod::Triples, LookupOptions::default())
            .await
            .unwrap();
        assert_eq!(all.len(), 18);
        same("exist", sg.exist(t), tg.exist(t).await);
        same(
            "remove one",
            sg.remove_triples(vec![t.clone()]),
            tg.remove_triples(vec![t.clone()]).await,
        );
        assert!(!tg.exist(t).await.unwrap());
        same(
            "after remove",
            sg.lookup(LookupMethod::Triples, LookupOptions::default()),
            tg.lookup(LookupMethod::Triples, LookupOptions::default())
                .await,
        );
        same("names", sync_ts.graph_names(), tokio_ts.graph_names().await);
        same(
            "drop h",
            sync_ts.delete_graph(b"h"),
            tokio_ts.delete_graph(b"h").await,
        );
        same(
            "open dropped",
            sync_ts.graph(b"h").map(|_| ()),
            tokio_ts.graph(b"h").await.map(|_| ()),
        );
        same(
            "names after drop",
            sync_ts.graph_names(),
            tokio_ts.graph_names().await,
        );
    }
}
