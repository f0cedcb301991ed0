#![allow(clippy::unwrap_used)]
//! The hot-row cache over the sync driver, with threads: a read that waits for another
//! thread's fetch of the same row neither moves a shared manual clock (the machine's
//! deadline timers are not waited on while its request is in flight) nor sends a read of its
//! own.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::{ColumnFamily, Timestamp};
use rowkit_embedded::driver::{Clock, ManualClock};
use rowkit_embedded::{MemoryStore, Reply, Store};
use rowkit_statemachines::{Request, StoreError};

/// A store whose reads of node rows stop at a gate while it is closed.
struct Gated {
    inner: MemoryStore,
    closed: Mutex<bool>,
    opened: Condvar,
    reads: Mutex<usize>,
    arrived: Condvar,
}

impl Gated {
    fn set_closed(&self, closed: bool) {
        *self.closed.lock().unwrap() = closed;
        self.opened.notify_all();
    }
}

impl Store for Gated {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        if matches!(&request, Request::ReadRows(r) if r.table == "mt") {
            *self.reads.lock().unwrap() += 1;
            self.arrived.notify_all();
            let mut closed = self.closed.lock().unwrap();
            while *closed {
                closed = self.opened.wait(closed).unwrap();
            }
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

#[test]
fn a_coalesced_read_waits_without_moving_the_clock() {
    let store = Gated {
        inner: MemoryStore::new(),
        closed: Mutex::new(false),
        opened: Condvar::new(),
        reads: Mutex::new(0),
        arrived: Condvar::new(),
    };
    let start = Timestamp::from_secs(1_700_000_000);
    let clock = ManualClock::new(start);
    let config = MtConfig {
        tables: rowkit_statemachines::mounttable::Tables::new("mt"),
        ..MtConfig::default()
    };
    let mt = MountTable::new(SyncDriver::new(&store, &clock), config);
    block_on(mt.setup(None)).unwrap();
    block_on(mt.mount(&server_caller(), "x", "/host:1", 600, 0)).unwrap();
    // Past the cache's TTL: the next resolve fetches the root again.
    clock.advance_to(start.saturating_add_micros(5_000_000));
    let before = clock.now();
    let fetches = mt.cache_fetches();
    store.set_closed(true);
    *store.reads.lock().unwrap() = 0;
    std::thread::scope(|s| {
        let first = s.spawn(|| block_on(mt.resolve(&server_caller(), "x")));
        // The first resolve's root read is at the gate: the second joins it.
        let mut reads = store.reads.lock().unwrap();
        while *reads == 0 {
            reads = store.arrived.wait(reads).unwrap();
        }
        drop(reads);
        let second = s.spawn(|| block_on(mt.resolve(&server_caller(), "x")));
        std::thread::sleep(Duration::from_millis(200));
        let (now, reads) = (clock.now(), *store.reads.lock().unwrap());
        // Open the gate before asserting, so a failure does not leave the threads stuck.
        store.set_closed(false);
        let answers: Vec<_> = [first, second].map(|r| r.join().unwrap()).into();
        assert_eq!(now, before, "a waiting read moved the clock");
        assert_eq!(reads, 1, "the second read was not coalesced");
        for entry in answers {
            assert_eq!(entry.unwrap().servers[0].server, "/host:1");
        }
    });
    assert_eq!(clock.now(), before);
    assert!(mt.cache_fetches() > fetches);
}
