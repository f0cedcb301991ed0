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
fn concurrency_memory() {
    let store = MemoryStore::new();
    for (name, f) in CONCURRENCY {
        eprintln!("memory: {name}");
        f(&store, &format!("mt-{name}"), THREADS, CYCLES);
    }
}

#[test]
fn concurrency_redb() {
    let store = RedbStore::in_memory().unwrap();
    for (name, f) in CONCURRENCY {
        eprintln!("redb: {name}");
        f(&store, &format!("mt-{name}"), THREADS, CYCLES);
    }
}

/// §22 22 exactly as the spec states it (no fsck after the final deletes); see the known race
/// in `concurrent_mount_delete`'s doc.
#[test]
#[ignore = "known race, issue 4: an orphaned branch survived the final deletes once in CI"]
fn concurrent_mount_delete_strict_memory() {
    let store = MemoryStore::new();
    rowkit_embedded::mounttable_scenarios::concurrent_mount_delete_strict(
        &store,
        "mt-strict",
        THREADS,
        CYCLES,
    );
}

/// The memory store with 300 µs of latency before and after every request, so that
/// concurrent operations interleave the way they do on the Bigtable emulator.
struct Slow(MemoryStore);

impl Store for Slow {
    fn execute(
        &self,
        request: rowkit_statemachines::Request,
        now: rowkit_codec::model::Timestamp,
    ) -> Result<rowkit_embedded::Reply<'_>, rowkit_statemachines::StoreError> {
        std::thread::sleep(std::time::Duration::from_micros(300));
        let reply = match self.0.execute(request, now)? {
            rowkit_embedded::Reply::Stream(parts) => {
                let parts: Vec<_> = parts.collect();
                rowkit_embedded::Reply::Stream(Box::new(parts.into_iter()))
            }
            unary => unary,
        };
        std::thread::sleep(std::time::Duration::from_micros(300));
        Ok(reply)
    }
    fn create_table(
        &self,
        table: &str,
        families: &[rowkit_codec::model::ColumnFamily],
    ) -> Result<(), rowkit_statemachines::StoreError> {
        self.0.create_table(table, families)
    }
    fn delete_table(&self, table: &str) -> Result<(), rowkit_statemachines::StoreError> {
        self.0.delete_table(table)
    }
    fn list_tables(&self) -> Result<Vec<String>, rowkit_statemachines::StoreError> {
        self.0.list_tables()
    }
    fn families(
        &self,
        table: &str,
    ) -> Result<Vec<rowkit_codec::model::ColumnFamily>, rowkit_statemachines::StoreError> {
        self.0.families(table)
    }
    fn gc(
        &self,
        table: &str,
        now: rowkit_codec::model::Timestamp,
    ) -> Result<u64, rowkit_statemachines::StoreError> {
        self.0.gc(table, now)
    }
}

/// The concurrency scenarios with request latency, so that concurrent operations interleave
/// the way they do on the Bigtable emulator. Before the fix of child-reference cleanup
/// (`statemachines::mounttable` frames: `is_stale`, the incarnation checks of createChild),
/// scenario 21 failed here within seconds: `resolve e/f` right after a successful `mount e/f`
/// answered `NoSuchName { name: "e" }`. The latency makes it sleep-bound (about 5 minutes at
/// the full 250 cycles), so it runs 60 cycles by default; the full count is the ignored
/// `concurrency_with_latency_memory_full`.
#[test]
fn concurrency_with_latency_memory() {
    let store = Slow(MemoryStore::new());
    for (name, f) in CONCURRENCY {
        eprintln!("slow memory: {name}");
        f(&store, &format!("mt-{name}"), THREADS, 60);
    }
}

/// [`concurrency_with_latency_memory`] at the full 15 x 250.
#[test]
#[ignore = "sleep-bound, about 5 minutes; the 15 x 250 counts run without latency above"]
fn concurrency_with_latency_memory_full() {
    let store = Slow(MemoryStore::new());
    for (name, f) in CONCURRENCY {
        eprintln!("slow memory: {name}");
        f(&store, &format!("mt-{name}"), THREADS, CYCLES);
    }
}
