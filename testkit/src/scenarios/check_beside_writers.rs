//! `spec/check.md` §6, over any store: a check running beside writers on the real clock never
//! reports a finding a writer's next request resolves and never repairs away an acknowledged
//! write; once the writers have settled a check reports nothing, and the data is what the
//! writers last acknowledged. Run on the memory store, redb and the Bigtable emulator.
// Scenarios: a failure is a panic with what was expected.
#![allow(clippy::unwrap_used)]

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};

use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::tracestore::{TraceStore, setup_table};
use rowkit_client::{CallOptions, SyncDriver, block_on};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::tracestore::Layout;
use rowkit_codec::tracestore::ops::params_from;
use rowkit_codec::triples::Triple;
use rowkit_statemachines::check::{CheckEvent, CheckOptions, Finding};
use rowkit_statemachines::objmeta::{ObjmetaConfig, ObjmetaState};
use rowkit_statemachines::tracestore::PutEntry;
use rowkit_store::Store;
use rowkit_store::driver::SystemClock;

use super::triples::shorthand;

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
    ObjectMetadata::new(SyncDriver::new(store, clock), ObjmetaState::new(config)).with_options(
        CallOptions {
            seed: pid,
            ..CallOptions::default()
        },
    )
}

/// The object-metadata check beside two writers of versioned objects.
pub fn objmeta(store: &dyn Store) {
    let clock = SystemClock;
    let admin = om(store, &clock, 1);
    block_on(admin.setup()).unwrap();
    block_on(admin.create_bucket("b", &Json::parse(r#"{"name":"b"}"#).unwrap())).unwrap();
    let done = AtomicBool::new(false);
    // The writers start with the checker's first check, so at least one overlaps them.
    let start = Barrier::new(3);
    let last: Vec<Vec<(String, f64)>> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let (clock, start) = (&clock, &start);
                s.spawn(move || {
                    start.wait();
                    let om = om(store, clock, 10 + w);
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
            let om = om(store, &clock, 2);
            start.wait();
            loop {
                block_on(om.check(None, fixing(), 600_000_000, |_| {})).unwrap();
                if done.load(Ordering::Relaxed) {
                    break;
                }
            }
        });
        let last = writers.into_iter().map(|w| w.join().unwrap()).collect();
        done.store(true, Ordering::Relaxed);
        checker.join().unwrap();
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

/// The trace-store check beside two writers of tiles (digest-id layout).
pub fn tracestore(store: &dyn Store) {
    let clock = SystemClock;
    let driver = SyncDriver::new(store, &clock);
    block_on(setup_table(&driver, "gold", Layout::DigestId)).unwrap();
    let done = AtomicBool::new(false);
    // The writers start with the checker's first check, so at least one overlaps them.
    let start = Barrier::new(3);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let (clock, start) = (&clock, &start);
                s.spawn(move || {
                    start.wait();
                    let driver = SyncDriver::new(store, clock);
                    let gold = block_on(TraceStore::open(driver, "gold", None))
                        .unwrap()
                        .with_options(rowkit_client::CallOptions {
                            seed: w,
                            ..Default::default()
                        });
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
            let gold = block_on(TraceStore::open(driver, "gold", None))
                .unwrap()
                .with_options(rowkit_client::CallOptions {
                    seed: 7,
                    ..Default::default()
                });
            let mut seen = Vec::new();
            start.wait();
            loop {
                block_on(gold.check(fixing(), 600_000_000, |e| {
                    if let CheckEvent::Finding(f) = e {
                        seen.push(f);
                    }
                }))
                .unwrap();
                if done.load(Ordering::Relaxed) {
                    break;
                }
            }
            // Ids are assigned (map, counter) before a trace cell holds them and OPS are
            // updated before a trace row is written: nothing is ever in between for a check.
            assert!(
                seen.is_empty(),
                "a check beside the writers reported {seen:?}"
            );
        });
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        checker.join().unwrap();
    });
    let gold = block_on(TraceStore::open(driver, "gold", None))
        .unwrap()
        .with_options(rowkit_client::CallOptions {
            seed: 9,
            ..Default::default()
        });
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

/// spec/check.md §6: a check with `fix` running beside writers (two threads adding and
/// removing triples on the real clock) never repairs away an acknowledged write, and once the
/// writers have settled a check reports nothing: the graph holds exactly the triples the
/// writers last acknowledged.
pub fn triples(store: &dyn Store) {
    use rowkit_client::triples::TripleStore;
    use std::collections::BTreeSet;

    let clock = SystemClock;
    let ts = TripleStore::new(SyncDriver::new(store, &clock));
    block_on(ts.setup()).unwrap();
    block_on(ts.new_graph(b"live")).unwrap();
    let options = CheckOptions {
        fix: true,
        grace_micros: 100_000,
        page_rows: 50,
        ..CheckOptions::default()
    };
    let done = AtomicBool::new(false);
    // The writers start with the checker's first check, so at least one overlaps them.
    let start = Barrier::new(3);
    let live: Vec<BTreeSet<String>> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let (ts, start) = (&ts, &start);
                s.spawn(move || {
                    start.wait();
                    let g = ts.handle(b"live");
                    let mut live = BTreeSet::new();
                    for round in 0..60 {
                        let added: Vec<String> = (0..8)
                            .map(|i| shorthand(&format!("w{w}r{round}i{i} knows x{}", i % 3)))
                            .collect();
                        let parsed = added.iter().map(|t| Triple::parse(t.as_bytes()).unwrap());
                        block_on(g.add_triples(parsed.collect())).unwrap();
                        live.extend(added.iter().cloned());
                        // Remove half of the round before.
                        let gone: Vec<String> = live
                            .iter()
                            .filter(|t| t.contains(&format!("w{w}r{}i", round.max(1) - 1)))
                            .take(4)
                            .cloned()
                            .collect();
                        let parsed = gone.iter().map(|t| Triple::parse(t.as_bytes()).unwrap());
                        block_on(g.remove_triples(parsed.collect())).unwrap();
                        for t in &gone {
                            live.remove(t);
                        }
                    }
                    live
                })
            })
            .collect();
        let checker = s.spawn(|| {
            start.wait();
            loop {
                block_on(ts.check(None, options, 600_000_000, |_| {})).unwrap();
                if done.load(Ordering::Relaxed) {
                    break;
                }
            }
        });
        let live = writers.into_iter().map(|w| w.join().unwrap()).collect();
        done.store(true, Ordering::Relaxed);
        checker.join().unwrap();
        live
    });
    std::thread::sleep(std::time::Duration::from_millis(150));
    let mut findings = Vec::new();
    let summary = block_on(ts.check(
        None,
        CheckOptions {
            grace_micros: 100_000,
            ..CheckOptions::default()
        },
        600_000_000,
        |e| {
            if let CheckEvent::Finding(f) = e {
                findings.push(f);
            }
        },
    ))
    .unwrap();
    assert!(
        findings.is_empty(),
        "after the writers settled: {findings:?}"
    );
    assert!(
        summary.is_clean() && summary.rows_scanned > 0,
        "{summary:?}"
    );
    let g = ts.handle(b"live");
    let found: BTreeSet<String> = block_on(g.lookup(
        rowkit_statemachines::triples::LookupMethod::Triples,
        Default::default(),
    ))
    .unwrap()
    .iter()
    .map(|f| String::from_utf8_lossy(&f.item().to_text()).into_owned())
    .collect();
    let expected: BTreeSet<String> = live.into_iter().flatten().collect();
    assert_eq!(
        found, expected,
        "the graph holds what the writers acknowledged"
    );
}
