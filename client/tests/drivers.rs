#![allow(clippy::unwrap_used)]
//! One facade, two drivers: each schema's core acceptance flow runs through rowkit-client's
//! facade over the sync driver (a `MemoryStore`) and over the Tokio driver (the emulator), and
//! every result (values and errors) must be equal for the same calls on the same injected
//! clock. The objmeta flows are in `objmeta_drivers.rs`.

use std::sync::Arc;

use rowkit_bigtable::BigtableConnection;
use rowkit_client::{SyncDriver, TokioDriver, block_on};
use rowkit_codec::model::Timestamp;
use rowkit_codec::mounttable::MountFlags;
use rowkit_store::MemoryStore;
use rowkit_store::driver::{Clock, ManualClock, SystemClock};
use rowkit_testkit::emulator::Emulator;

/// The time source shared with a Tokio driver.
type SharedClock = Arc<dyn Clock + Send + Sync>;

fn shared_dir() -> String {
    std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string())
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
    SystemClock.now().truncate_to_millis()
}

/// Two clocks at `t`: one for the sync run, one shared with the Tokio driver.
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
        "step {step}: the sync and Tokio drivers disagree"
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
    use rowkit_client::mounttable::{MountTable, MtConfig};
    use rowkit_codec::mounttable::{Caller, NodeRow, decode_permissions_file};
    use rowkit_statemachines::mounttable::{MtError, Tables};
    use rowkit_testkit::scenarios::mounttable::{S, TEST_PERMS};

    fn config() -> MtConfig {
        MtConfig {
            tables: Tables::new("mt"),
            ..MtConfig::default()
        }
    }

    /// Both drivers' calls seeded alike.
    fn options() -> rowkit_client::CallOptions {
        rowkit_client::CallOptions {
            seed: 7,
            deadline_micros: None,
        }
    }

    /// Mount, resolve, glob, permissions, unmount, delete (with and without subtree), with
    /// the hot-row cache on, as root, alice and bob of `spec/mounttable.md` §22.
    #[tokio::test]
    async fn mounttable_flow_is_the_same_on_both_drivers() {
        let Some(emu) = Emulator::shared_or_skip("mounttable_flow_is_the_same_on_both_drivers")
        else {
            return;
        };
        let start = near_wall_clock();
        let (sync_clock, async_clock) = clocks(start);
        let store = MemoryStore::new();
        let sync =
            MountTable::new(SyncDriver::new(&store, &sync_clock), config()).with_options(options());
        let driver = TokioDriver::new(connect(emu).await).with_clock(shared(&async_clock));
        let tokio = MountTable::new(driver, config()).with_options(options());
        let perms = decode_permissions_file(TEST_PERMS.as_bytes()).unwrap();
        same(
            "setup",
            block_on(sync.setup(Some(perms.clone()))),
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
                block_on(sync.mount(who, name, server, 3600, MountFlags(flags))),
                tokio
                    .mount(who, name, server, 3600, MountFlags(flags))
                    .await,
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
                block_on(sync.resolve(who, name)),
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
                block_on(sync.glob(who, name, pattern)),
                tokio.glob(who, name, pattern).await,
            );
            if pattern == "..." {
                assert!(entries.unwrap().len() >= 7);
            }
        }
        let got = agreed(
            "perms get a",
            block_on(sync.get_permissions(&root, "a")),
            tokio.get_permissions(&root, "a").await,
        )
        .unwrap();
        same(
            "perms set a",
            block_on(sync.set_permissions(&root, "a", got.perms.clone(), &got.version)),
            tokio
                .set_permissions(&root, "a", got.perms.clone(), &got.version)
                .await,
        );
        same(
            "perms set a, stale version",
            block_on(sync.set_permissions(&root, "a", got.perms.clone(), &got.version)),
            tokio
                .set_permissions(&root, "a", got.perms, &got.version)
                .await,
        );
        advance(1_000);
        same(
            "unmount a/b",
            block_on(sync.unmount(&root, "a/b", S)),
            tokio.unmount(&root, "a/b", S).await,
        );
        same(
            "resolve a/b after unmount",
            block_on(sync.resolve(&root, "a/b")),
            tokio.resolve(&root, "a/b").await,
        );
        let refused = agreed(
            "delete a/c without subtree",
            block_on(sync.delete(&root, "a/c", false)),
            tokio.delete(&root, "a/c", false).await,
        );
        assert!(refused.is_err(), "{refused:?}");
        same(
            "delete a/c as alice",
            block_on(sync.delete(&alice, "a/c", true)),
            tokio.delete(&alice, "a/c", true).await,
        );
        same(
            "delete a/c with subtree",
            block_on(sync.delete(&root, "a/c", true)),
            tokio.delete(&root, "a/c", true).await,
        );
        let after = agreed(
            "glob after delete",
            block_on(sync.glob(&root, "", "...")),
            tokio.glob(&root, "", "...").await,
        )
        .unwrap();
        assert!(
            after.iter().all(|e| !e.name.starts_with("a/c")),
            "{after:?}"
        );
        same(
            "counters",
            block_on(sync.counters()),
            tokio.counters().await,
        );
        // The creation time is server time: the emulator's wall clock on one side, the
        // injected clock on the other (`bigtable.md` 14); the rest must agree.
        let created = |n: Option<NodeRow>| {
            n.map(|mut n| {
                let t = n.creation_time_us;
                n.creation_time_us = 0;
                (n, t)
            })
        };
        let (sync_node, _) = created(block_on(sync.get_node("a/b")).unwrap()).unwrap();
        let (tokio_node, t) = created(tokio.get_node("a/b").await.unwrap()).unwrap();
        assert_eq!(sync_node, tokio_node);
        assert!(t >= start.0 && t <= SystemClock.now().0, "{t}");
        let mut sync_findings = Vec::new();
        let mut tokio_findings = Vec::new();
        same(
            "fsck",
            block_on(sync.fsck(false, |e| sync_findings.push(e))),
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
        let mt =
            MountTable::new(TokioDriver::new(connect(emu).await), config()).with_options(options());
        mt.setup(None).await.unwrap();
        let root = Caller::new(&["root"], true);
        mt.mount(&root, "x/y", S, 3600, MountFlags(0))
            .await
            .unwrap();
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
        mt.mount(&root, "x/y", "/127.0.0.1:9/z", 3600, MountFlags(0))
            .await
            .unwrap();
        assert_eq!(mt.resolve(&root, "x/y").await.unwrap().servers.len(), 2);
    }
}

// ---------------------------------------------------------------------------------------------

mod tracestore {
    use super::*;
    use rowkit_client::CallOptions;
    use rowkit_client::tracestore::{TraceStore, setup_table};
    use rowkit_codec::tracestore::Layout;
    use rowkit_codec::tracestore::ops::params_from;
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
    async fn tracestore_flow_is_the_same_on_both_drivers() {
        let Some(emu) = Emulator::shared_or_skip("tracestore_flow_is_the_same_on_both_drivers")
        else {
            return;
        };
        for layout in [Layout::Md5, Layout::DigestId] {
            let (sync_clock, async_clock) = clocks(near_wall_clock());
            let store = MemoryStore::new();
            let conn = connect(emu).await;
            let sync_driver = SyncDriver::new(&store, &sync_clock);
            let tokio_driver = TokioDriver::new(conn.clone()).with_clock(shared(&async_clock));
            block_on(setup_table(&sync_driver, "gold", layout)).unwrap();
            setup_table(&tokio_driver, "gold", layout).await.unwrap();
            let sync = block_on(TraceStore::open(sync_driver, "gold", None))
                .unwrap()
                .with_options(CallOptions {
                    seed: 5,
                    ..CallOptions::default()
                });
            let tokio = TraceStore::open(tokio_driver, "gold", None)
                .await
                .unwrap()
                .with_options(CallOptions {
                    seed: 5,
                    ..CallOptions::default()
                });
            assert_eq!(tokio.layout(), layout);
            same(
                "newest (empty)",
                block_on(sync.newest_tile()),
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
                    block_on(sync.put(commit, commit_time(commit), entries.clone(), ts)),
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
                block_on(sync.put(1, commit_time(1), newer.clone(), later)),
                tokio.put(1, commit_time(1), newer, later).await,
            );
            same(
                "put older",
                block_on(sync.put(1, commit_time(1), older.clone(), ts)),
                tokio.put(1, commit_time(1), older, ts).await,
            );
            let tile = agreed(
                &format!("tile 0 ({layout:?})"),
                block_on(sync.read_range(0, 255)),
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
                block_on(sync.read_range(250, 300)),
                tokio.read_range(250, 300).await,
            )
            .unwrap();
            assert_eq!(traces.commits.len(), 51);
            let dense = agreed(
                "dense",
                block_on(sync.read_dense(300, 4)),
                tokio.read_dense(300, 4).await,
            )
            .unwrap();
            assert_eq!(dense.commits, [254, 255, 256, 300]);
            same(
                "newest",
                block_on(sync.newest_tile()),
                tokio.newest_tile().await,
            );
            assert_eq!(tokio.newest_tile().await.unwrap(), Some(1));
            if layout == Layout::DigestId {
                same(
                    "allocate",
                    block_on(sync.allocate_digest_ids(3)),
                    tokio.allocate_digest_ids(3).await,
                );
                same(
                    "assign",
                    block_on(sync.assign_digest_ids(vec![digest(1), digest(42)])),
                    tokio.assign_digest_ids(vec![digest(1), digest(42)]).await,
                );
            }
            // A fresh Tokio reader (no caches) reads the same tile.
            let reader = TraceStore::open(TokioDriver::new(conn), "gold", Some(layout))
                .await
                .unwrap()
                .with_options(CallOptions {
                    seed: 6,
                    ..CallOptions::default()
                });
            assert_eq!(reader.read_range(0, 255).await.unwrap(), tile);
        }
    }
}

// ---------------------------------------------------------------------------------------------

mod triples {
    use super::*;
    use rowkit_client::triples::TripleStore;
    use rowkit_codec::triples::Triple;
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
    /// and without `max`, Exist, RemoveTriples of one triple, on the BT18 fixture of the vectors.
    #[tokio::test]
    async fn graph_flow_is_the_same_on_both_drivers() {
        let Some(emu) = Emulator::shared_or_skip("graph_flow_is_the_same_on_both_drivers") else {
            return;
        };
        let triples = fixture();
        assert!(!triples.is_empty(), "no bt_fixture triples");
        let distinct: std::collections::BTreeSet<Vec<u8>> =
            triples.iter().map(Triple::to_text).collect();
        let (sync_clock, async_clock) = clocks(near_wall_clock());
        let store = MemoryStore::new();
        let sync_ts = TripleStore::new(SyncDriver::new(&store, &sync_clock)).with_options(
            rowkit_client::CallOptions {
                seed: 4,
                ..Default::default()
            },
        );
        let driver = TokioDriver::new(connect(emu).await).with_clock(shared(&async_clock));
        let tokio_ts = TripleStore::new(driver).with_options(rowkit_client::CallOptions {
            seed: 4,
            ..Default::default()
        });
        same("setup", block_on(sync_ts.setup()), tokio_ts.setup().await);
        let sg = block_on(sync_ts.new_graph(b"g")).unwrap();
        let tg = tokio_ts.new_graph(b"g").await.unwrap();
        same(
            "second graph",
            block_on(sync_ts.new_graph(b"h")).map(|_| ()),
            tokio_ts.new_graph(b"h").await.map(|_| ()),
        );
        same(
            "duplicate graph",
            block_on(sync_ts.new_graph(b"g")).map(|_| ()),
            tokio_ts.new_graph(b"g").await.map(|_| ()),
        );
        for round in 0..2 {
            same(
                &format!("add round {round}"),
                block_on(sg.add_triples(triples.clone())),
                tg.add_triples(triples.clone()).await,
            );
        }
        let t = &triples[0];
        let u = triples.get(5).unwrap_or(t);
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
                    block_on(sg.lookup(method.clone(), options.clone())),
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
        assert_eq!(all.len(), distinct.len());
        same("exist", block_on(sg.exist(t)), tg.exist(t).await);
        same(
            "remove one",
            block_on(sg.remove_triples(vec![t.clone()])),
            tg.remove_triples(vec![t.clone()]).await,
        );
        assert!(!tg.exist(t).await.unwrap());
        same(
            "after remove",
            block_on(sg.lookup(LookupMethod::Triples, LookupOptions::default())),
            tg.lookup(LookupMethod::Triples, LookupOptions::default())
                .await,
        );
        same(
            "names",
            block_on(sync_ts.graph_names()),
            tokio_ts.graph_names().await,
        );
        same(
            "drop h",
            block_on(sync_ts.delete_graph(b"h")),
            tokio_ts.delete_graph(b"h").await,
        );
        same(
            "open dropped",
            block_on(sync_ts.graph(b"h")).map(|_| ()),
            tokio_ts.graph(b"h").await.map(|_| ()),
        );
        same(
            "names after drop",
            block_on(sync_ts.graph_names()),
            tokio_ts.graph_names().await,
        );
    }
}
