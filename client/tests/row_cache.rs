#![allow(clippy::unwrap_used)]
//! The hot-row cache over the sync driver, with threads: a read that waits for another
//! thread's fetch of the same row neither moves a shared manual clock (the machine's
//! deadline timers are not waited on while its request is in flight) nor sends a read of its
//! own. And a hit hands the walk the cached row and the node decoded from it before.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::{ColumnFamily, Row, Timestamp};
use rowkit_codec::mounttable::{MountFlags, NodeRow};
use rowkit_statemachines::mounttable::{MtCtx, Nodes, ResolveStep, SharedNodes, Tables};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::{Request, StoreError};
use rowkit_store::driver::{Clock, ManualClock};
use rowkit_store::{MemoryStore, Reply, Store};

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
        let node_read = match &request {
            Request::ReadRow(r) => r.table == "mt",
            Request::ReadRows(r) => r.table == "mt",
            _ => false,
        };
        if node_read {
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
    block_on(mt.mount(&server_caller(), "x", "/host:1", 600, MountFlags(0))).unwrap();
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

/// The facade's nodes, recording what the machines were handed and what they asked to keep.
struct CountingNodes {
    inner: Nodes,
    hits: Mutex<Vec<Arc<NodeRow>>>,
    kept: Mutex<Vec<Arc<NodeRow>>>,
}

impl SharedNodes for CountingNodes {
    fn get(&self, row: &Arc<Row>, now: Timestamp) -> Option<Arc<NodeRow>> {
        let node = self.inner.get(row, now);
        if let Some(n) = &node {
            self.hits.lock().unwrap().push(n.clone());
        }
        node
    }

    fn keep(&self, row: &Arc<Row>, node: &Arc<NodeRow>) {
        self.inner.keep(row, node);
        self.kept.lock().unwrap().push(node.clone());
    }
}

/// End to end over the sync driver: a resolve whose node reads hit the hot-row cache gets the
/// cached rows themselves (whole and shared, through the point-read child) and the nodes decoded
/// from them by a previous resolve, kept beside the rows: the same `Arc`s (a directory's from
/// its fetch, a leaf's from its row's first hit). A mount (a write)
/// makes the cache drop the leaf, so the next resolve decodes the leaf's new row and sees the
/// new server.
#[test]
fn a_cache_hit_reuses_the_decoded_node_and_a_write_is_seen() {
    let store = MemoryStore::new();
    let clock = ManualClock::new(Timestamp::from_secs(1_700_000_000));
    let tables = Tables::new("mt");
    let config = MtConfig {
        tables: tables.clone(),
        ..MtConfig::default()
    };
    let mt = MountTable::new(SyncDriver::new(&store, &clock), config);
    let me = server_caller();
    block_on(mt.setup(None)).unwrap();
    block_on(mt.mount(&me, "a/b", "/h:1", 600, MountFlags(0))).unwrap();
    // Past the cache's TTL: the first resolve below reads (and decodes) every row afresh.
    clock.advance_to(clock.now().saturating_add_micros(2_000_000));
    let nodes = Arc::new(CountingNodes {
        inner: mt.nodes(),
        hits: Mutex::default(),
        kept: Mutex::default(),
    });
    let resolve = || {
        let ctx = MtCtx {
            tables: tables.clone(),
            nodes: Nodes::shared(nodes.clone()),
            ..MtCtx::new()
        };
        block_on(mt.run(
            ResolveStep::new(ctx, "a/b", Start::within(clock.now(), 1, 60_000_000)),
            |_| {},
        ))
        .unwrap()
    };
    assert_eq!(resolve().servers.len(), 1);
    let kept = nodes.kept.lock().unwrap().clone();
    assert_eq!(kept.len(), 3, "root, a, a/b decoded once");
    let fetches = mt.cache_fetches();
    assert_eq!(resolve().servers.len(), 1);
    assert_eq!(mt.cache_fetches(), fetches, "every read a hit");
    // The directories' nodes were kept from their fetch; the leaf's (no children) is kept
    // from its row's first hit on, so it is decoded once more now.
    assert_eq!(
        nodes.kept.lock().unwrap().len(),
        4,
        "only the leaf decoded again"
    );
    let hits = nodes.hits.lock().unwrap().clone();
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().zip(&kept).all(|(h, k)| Arc::ptr_eq(h, k)));
    assert_eq!(resolve().servers.len(), 1);
    assert_eq!(nodes.kept.lock().unwrap().len(), 4, "nothing decoded again");
    assert_eq!(nodes.hits.lock().unwrap().len(), 5);

    block_on(mt.mount(&me, "a/b", "/h:2", 600, MountFlags(0))).unwrap();
    let entry = resolve();
    let servers: Vec<&str> = entry.servers.iter().map(|s| s.server.as_str()).collect();
    assert_eq!(servers, ["/h:1", "/h:2"]);
    assert_eq!(
        nodes.kept.lock().unwrap().len(),
        5,
        "the written leaf decoded again"
    );
    assert_eq!(
        nodes.hits.lock().unwrap().len(),
        7,
        "root and a: their kept nodes"
    );
}
