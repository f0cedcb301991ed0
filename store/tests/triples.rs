#![allow(clippy::unwrap_used)]
//! `spec/triples.md` §12 acceptance scenarios on MemoryStore and RedbStore (the scenario
//! functions live in `rowkit_testkit::scenarios::triples` so the emulator-backed store can run
//! them too), plus batching and store-failure behaviour (scenario 15).

use std::sync::Mutex;

use rowkit_client::run_blocking;
use rowkit_codec::model::{ColumnFamily, Timestamp};
use rowkit_codec::triples::Triple;
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::triples::{AddTriples, OperationConfig, TriplesError};
use rowkit_statemachines::{
    Code, MutateRowsEntryResult, MutateRowsResponse, Request, Response, StoreError,
};
use rowkit_store::driver::ManualClock;
use rowkit_store::{MemoryStore, RedbStore, Reply, Store};
use rowkit_testkit::scenarios::check_beside_writers;
use rowkit_testkit::scenarios::triples::{self as triples_scenarios, shorthand};

fn bt18() -> Vec<triples_scenarios::FixtureTriple> {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
    let path = format!("{dir}/vectors/triples.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    triples_scenarios::bt18_from_vectors(&text)
}

fn run_all(make: &dyn Fn() -> Box<dyn Store>) {
    let fixture = bt18();
    let mut failures = Vec::new();
    for (name, scenario) in triples_scenarios::all() {
        let store = make();
        if let Err(e) = scenario(store.as_ref(), &fixture) {
            failures.push(format!("scenario {name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn scenarios_on_memory_store() {
    run_all(&|| Box::new(MemoryStore::new()));
}

#[test]
fn scenarios_on_redb_store() {
    run_all(&|| Box::new(RedbStore::in_memory().unwrap()));
}

/// A store that records MutateRows batch sizes and can rewrite entry results.
struct Faulty {
    inner: MemoryStore,
    batches: Mutex<Vec<usize>>,
    /// Per call of MutateRows: entry index -> code to answer instead of executing.
    faults: Mutex<Vec<Vec<(usize, Code)>>>,
}

impl Store for Faulty {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        if let Request::MutateRows(r) = &request {
            self.batches.lock().unwrap().push(r.entries.len());
            let faults = {
                let mut f = self.faults.lock().unwrap();
                if f.is_empty() {
                    Vec::new()
                } else {
                    f.remove(0)
                }
            };
            if !faults.is_empty() {
                let mut kept = r.clone();
                let mut results = Vec::new();
                for (i, entry) in r.entries.iter().enumerate() {
                    if let Some((_, code)) = faults.iter().find(|(j, _)| *j == i) {
                        results.push(MutateRowsEntryResult {
                            index: i,
                            result: Err(StoreError::new(*code, "injected")),
                        });
                    } else {
                        kept.entries = vec![entry.clone()].into();
                        let reply = self.inner.execute(Request::MutateRows(kept.clone()), now)?;
                        if let Reply::Stream(parts) = reply {
                            for part in parts {
                                if let Ok(Response::MutateRowsPart(p)) = part {
                                    for e in p.entries {
                                        results.push(MutateRowsEntryResult {
                                            index: i,
                                            result: e.result,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
                let part = Response::MutateRowsPart(MutateRowsResponse { entries: results });
                return Ok(Reply::Stream(Box::new(std::iter::once(Ok(part)))));
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

fn faulty(faults: Vec<Vec<(usize, Code)>>) -> Faulty {
    let inner = MemoryStore::new();
    inner
        .create_table(
            "badwolf",
            &[
                ColumnFamily::new("graph"),
                ColumnFamily::new("immutable_triple"),
                ColumnFamily::new("temporal_triple"),
            ],
        )
        .unwrap();
    Faulty {
        inner,
        batches: Mutex::new(Vec::new()),
        faults: Mutex::new(faults),
    }
}

fn add(store: &Faulty, triples: Vec<Triple>) -> Result<(), TriplesError> {
    let clock = ManualClock::new(Timestamp::from_secs(10));
    let start = Start {
        now: Timestamp::from_secs(10),
        seed: 3,
        deadline: Timestamp::from_secs(70),
    };
    let m = AddTriples::new(OperationConfig::new("badwolf"), b"test", triples, start);
    run_blocking(store, &clock, m, |_| {}).map_err(|e| match e {
        rowkit_client::RunError::Machine(e) => e,
        other => panic!("{other:?}"),
    })
}

#[test]
fn scenario_15_batches_of_100000_entries() {
    let store = faulty(vec![]);
    let triples: Vec<Triple> = (0..25001)
        .map(|i| Triple::parse(shorthand(&format!("n{i} knows m")).as_bytes()).unwrap())
        .collect();
    add(&store, triples).unwrap();
    assert_eq!(*store.batches.lock().unwrap(), [100000, 4]);
    let store = faulty(vec![]);
    add(&store, vec![]).unwrap();
    assert!(
        store.batches.lock().unwrap().is_empty(),
        "an empty list sends nothing"
    );
}

#[test]
fn scenario_15_entry_failures() {
    let two: Vec<Triple> = ["a knows b", "c knows d"]
        .iter()
        .map(|s| Triple::parse(shorthand(s).as_bytes()).unwrap())
        .collect();
    // Entry 5 NOT_FOUND: the operation fails with that entry's error.
    let store = faulty(vec![vec![(5, Code::NotFound)]]);
    match add(&store, two.clone()) {
        Err(TriplesError::Store(e)) => assert_eq!(e.code, Code::NotFound),
        other => panic!("{other:?}"),
    }
    // Entry 5 UNAVAILABLE: resent alone, its OK completes the operation.
    let store = faulty(vec![vec![(5, Code::Unavailable)]]);
    add(&store, two).unwrap();
    assert_eq!(*store.batches.lock().unwrap(), [8, 1]);
}

#[test]
fn delete_graph_pages_through_every_index_and_spares_other_graphs() {
    use rowkit_client::triples::TripleStore;
    use rowkit_client::{SyncDriver, block_on};
    use rowkit_statemachines::triples::{DeleteGraph, LookupMethod, LookupOptions};
    let store = MemoryStore::new();
    let clock = ManualClock::new(Timestamp::from_secs(10));
    let ts = TripleStore::new(SyncDriver::new(&store, &clock));
    block_on(ts.setup()).unwrap();
    let data: Vec<Triple> = (0..10)
        .map(|i| Triple::parse(shorthand(&format!("s{i} p o")).as_bytes()).unwrap())
        .collect();
    // `t` and `t:x` (whose keys start with `t:`) must not disturb each other (fix 17).
    let g = block_on(ts.new_graph(b"t")).unwrap();
    block_on(g.add_triples(data.clone())).unwrap();
    let other = block_on(ts.new_graph(b"t:x")).unwrap();
    block_on(other.add_triples(data[..3].to_vec())).unwrap();
    let all = || LookupOptions::default();
    assert_eq!(
        block_on(g.lookup(LookupMethod::Triples, all()))
            .unwrap()
            .len(),
        10
    );
    let start = Start {
        now: Timestamp::from_secs(10),
        seed: 9,
        deadline: Timestamp::from_secs(100),
    };
    let m = DeleteGraph::with_page_rows(OperationConfig::new("badwolf"), b"t", 3, start);
    run_blocking(&store, &clock, m, |_| {}).unwrap();
    assert!(block_on(ts.graph(b"t")).is_err());
    assert_eq!(block_on(ts.graph_names()).unwrap(), [b"t:x".to_vec()]);
    assert_eq!(
        block_on(other.lookup(LookupMethod::Triples, all()))
            .unwrap()
            .len(),
        3
    );
    // The re-created graph is empty.
    let g = block_on(ts.new_graph(b"t")).unwrap();
    assert!(
        block_on(g.lookup(LookupMethod::Triples, all()))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn check_beside_writers_on_memory_store() {
    check_beside_writers::triples(&MemoryStore::new());
}

#[test]
fn check_beside_writers_on_redb_store() {
    check_beside_writers::triples(&RedbStore::in_memory().unwrap());
}
