#![allow(clippy::unwrap_used)]
//! spec/check.md §6 for the object-metadata and trace-store checks (the triple store's is in
//! `tests/triples.rs`): a check running beside writers on the real clock never reports a
//! finding a writer's next request resolves and never repairs away an acknowledged write;
//! once the writers have settled a check reports nothing, and the data is what the writers
//! last acknowledged. On the memory store and on redb.

use std::sync::atomic::{AtomicBool, Ordering};

use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::tracestore::{TraceStore, setup_table};
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::ops::params_from;
use rowkit_embedded::driver::SystemClock;
use rowkit_embedded::{MemoryStore, RedbStore, Store};
use rowkit_statemachines::check::{CheckEvent, CheckOptions, Finding};
use rowkit_statemachines::objmeta::{ObjmetaConfig, ObjmetaState};
use rowkit_statemachines::tracestore::PutEntry;

fn fixing() -> CheckOptions {
    CheckOptions {
        fix: true,
        grace_micros: 100_000,
        page_rows: 20,
        ..CheckOptions::default()
    }
}

fn settled() -> CheckOptions {
    CheckOptions {
        grace_micros: 100_000,
        ..CheckOptions::default()
    }
}

fn om<'s>(
    store: &'s dyn Store,
    clock: &'s SystemClock,
    pid: u64,
) -> ObjectMetadata<SyncDriver<&'s dyn Store, &'s SystemClock>> {
    let config = ObjmetaConfig {
        pid,
        ..ObjmetaConfig::default()
    };
    ObjectMetadata::new(
        SyncDriver::new(store, clock),
        ObjmetaState::new(config),
        pid,
    )
}

fn objmeta_beside_writers(store: &dyn Store) {
    let clock = SystemClock;
    let mut admin = om(store, &clock, 1);
    block_on(admin.setup()).unwrap();
    block_on(admin.create_bucket("b", &Json::parse(r#"{"name":"b"}"#).unwrap())).unwrap();
    let done = AtomicBool::new(false);
    let last: Vec<Vec<(String, f64)>> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let clock = &clock;
                s.spawn(move || {
                    let mut om = om(store, clock, 10 + w);
                    let versioning = Json::parse(r#"{"versioning":true}"#).unwrap();
                    let mut last = Vec::new();
                    for key in 0..6 {
                        let key = format!("w{w}k{key}");
                        let mut n = 0.0;
                        for round in 0..8 {
                            n = f64::from(round);
                            let value = Json::parse(&format!(r#"{{"n":{round}}}"#)).unwrap();
                            block_on(om.put_object("b", &key, &value, Some(&versioning))).unwrap();
                        }
                        last.push((key, n));
                    }
                    last
                })
            })
            .collect();
        let checker = s.spawn(|| {
            let mut om = om(store, &clock, 2);
            let mut checks = 0;
            while !done.load(Ordering::Relaxed) {
                block_on(om.check(None, fixing(), 600_000_000, |_| {})).unwrap();
                checks += 1;
            }
            checks
        });
        let last = writers.into_iter().map(|w| w.join().unwrap()).collect();
        done.store(true, Ordering::Relaxed);
        assert!(checker.join().unwrap() >= 1);
        last
    });
    let findings = check(|options, on| block_on(admin.check(None, options, 600_000_000, on)));
    assert!(
        findings.is_empty(),
        "after the writers settled: {findings:?}"
    );
    for (key, n) in last.into_iter().flatten() {
        let got = block_on(admin.get_object("b", &key, None)).unwrap();
        assert_eq!(got.get("n"), Some(&Json::Number(n)), "{key}");
    }
}

fn tracestore_beside_writers(store: &dyn Store) {
    let clock = SystemClock;
    let driver = SyncDriver::new(store, &clock);
    block_on(setup_table(&driver, "gold", Layout::DigestId)).unwrap();
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let clock = &clock;
                s.spawn(move || {
                    let driver = SyncDriver::new(store, clock);
                    let mut gold = block_on(TraceStore::open(driver, "gold", None, w)).unwrap();
                    for commit in 0..20i64 {
                        let entries = (0..10)
                            .map(|t| PutEntry {
                                params: params_from([
                                    ("name", format!("w{w}t{t}")),
                                    ("commit", format!("{}", commit % 3)),
                                ]),
                                options: Default::default(),
                                digest: format!(
                                    "{:032x}",
                                    (w + 1) * 1_000_000 + commit as u64 * 10 + t
                                ),
                            })
                            .collect();
                        let ts = rowkit_codec::model::Timestamp(1_000_000 + commit * 1000);
                        block_on(gold.put(commit, None, entries, ts)).unwrap();
                    }
                })
            })
            .collect();
        let checker = s.spawn(|| {
            let driver = SyncDriver::new(store, &clock);
            let mut gold = block_on(TraceStore::open(driver, "gold", None, 7)).unwrap();
            let mut checks = 0;
            let mut seen = Vec::new();
            while !done.load(Ordering::Relaxed) {
                block_on(gold.check(fixing(), 600_000_000, |e| {
                    if let CheckEvent::Finding(f) = e {
                        seen.push(f);
                    }
                }))
                .unwrap();
                checks += 1;
            }
            // Ids are assigned (map, counter) before a trace cell holds them and OPS are
            // updated before a trace row is written: nothing is ever in between for a check.
            assert!(
                seen.is_empty(),
                "a check beside the writers reported {seen:?}"
            );
            checks
        });
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        assert!(checker.join().unwrap() >= 1);
    });
    let mut gold = block_on(TraceStore::open(driver, "gold", None, 9)).unwrap();
    let findings = check(|options, on| block_on(gold.check(options, 600_000_000, on)));
    assert!(
        findings.is_empty(),
        "after the writers settled: {findings:?}"
    );
    let tile = block_on(gold.read_range(0, 19)).unwrap();
    assert_eq!(tile.traces.len(), 2 * 10 * 3, "every trace of every writer");
}

/// Runs a settled check through `run` and gives its findings.
fn check(
    run: impl FnOnce(
        CheckOptions,
        &mut dyn FnMut(CheckEvent),
    ) -> Result<
        rowkit_statemachines::check::CheckSummary,
        rowkit_statemachines::check::CheckError,
    >,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let summary = run(settled(), &mut |e| {
        if let CheckEvent::Finding(f) = e {
            findings.push(f);
        }
    })
    .unwrap();
    assert!(summary.rows_scanned > 0);
    findings
}

#[test]
fn objmeta_check_beside_writers_on_memory_store() {
    objmeta_beside_writers(&MemoryStore::new());
}

#[test]
fn objmeta_check_beside_writers_on_redb_store() {
    objmeta_beside_writers(&RedbStore::in_memory().unwrap());
}

#[test]
fn tracestore_check_beside_writers_on_memory_store() {
    tracestore_beside_writers(&MemoryStore::new());
}

#[test]
fn tracestore_check_beside_writers_on_redb_store() {
    tracestore_beside_writers(&RedbStore::in_memory().unwrap());
}
