#![allow(clippy::unwrap_used)]
//! The mounttable acceptance scenarios (`rowkit_embedded::mounttable_scenarios`) on the memory
//! store and the redb store. The Bigtable emulator runs the same functions from
//! `rowkit-bigtable`'s tests.

use rowkit_embedded::mounttable_scenarios::{CONCURRENCY, SCENARIOS};
use rowkit_embedded::{MemoryStore, RedbStore, Store};

fn run_all(store: &dyn Store, tag: &str) {
    for (name, f) in SCENARIOS {
        eprintln!("{tag}: {name}");
        f(store, &format!("mt-{name}"));
    }
}

#[test]
fn scenarios_memory() {
    run_all(&MemoryStore::new(), "memory");
}

#[test]
fn scenarios_redb() {
    let dir = std::env::temp_dir().join(format!("rowkit-mt-{}.redb", std::process::id()));
    let _ = std::fs::remove_file(&dir);
    let store = RedbStore::open(&dir).unwrap();
    run_all(&store, "redb");
    drop(store);
    let _ = std::fs::remove_file(&dir);
}

const THREADS: usize = 15;
const CYCLES: usize = 250;

#[test]
#[ignore = "known race: under load a Mount or ResolveStep sometimes answers NoSuchName for an \
            intermediate node another thread is creating or collecting (with and without the row \
            cache); issue 4 stays open until it is fixed. Run with --ignored"]
fn concurrency_memory() {
    let store = MemoryStore::new();
    for (name, f) in CONCURRENCY {
        eprintln!("memory: {name}");
        f(&store, &format!("mt-{name}"), THREADS, CYCLES);
    }
}

#[test]
#[ignore = "known race: under load a Mount or ResolveStep sometimes answers NoSuchName for an \
            intermediate node another thread is creating or collecting (with and without the row \
            cache); issue 4 stays open until it is fixed. Run with --ignored"]
fn concurrency_redb() {
    let store = RedbStore::in_memory().unwrap();
    for (name, f) in CONCURRENCY {
        eprintln!("redb: {name}");
        f(&store, &format!("mt-{name}"), THREADS, CYCLES);
    }
}
