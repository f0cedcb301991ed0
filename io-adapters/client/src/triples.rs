//! The triple store facade (BadWolf's Bigtable driver, `spec/triples.md`) over any
//! [`Driver`]: [`TripleStore`] (table setup, graphs) and [`Graph`] (writes and lookups), each
//! call running one machine of `rowkit_statemachines::triples` with [`crate::run`].
//!
//! ```
//! use rowkit_client::triples::TripleStore;
//! use rowkit_client::{SyncDriver, block_on};
//! use rowkit_codec::model::Timestamp;
//! use rowkit_codec::triples::Triple;
//! use rowkit_embedded::MemoryStore;
//! use rowkit_embedded::driver::ManualClock;
//! use rowkit_statemachines::triples::{LookupMethod, LookupOptions};
//!
//! let store = MemoryStore::new();
//! let clock = ManualClock::new(Timestamp::from_secs(1));
//! let ts = TripleStore::new(SyncDriver::new(&store, &clock));
//! block_on(ts.setup()).unwrap();
//! let g = block_on(ts.new_graph(b"test")).unwrap();
//! let t = Triple::parse(b"/u<joe> \"parent_of\"@[] /u<mary>").unwrap();
//! block_on(g.add_triples(vec![t])).unwrap();
//! let found = block_on(g.lookup(LookupMethod::Triples, LookupOptions::default())).unwrap();
//! assert_eq!(found.len(), 1);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use rowkit_codec::model::ColumnFamily;
use rowkit_codec::triples::Triple;
use rowkit_codec::triples::keys;
use rowkit_statemachines::check::{CheckError, CheckEvent, CheckOptions, CheckSummary};
use rowkit_statemachines::triples::{
    AddTriples, Check, DeleteGraph, Exist, Found, GraphExists, GraphNames, Lookup, LookupMethod,
    LookupOptions, NewGraph, OperationConfig, RemoveTriples, TriplesError,
};
use rowkit_statemachines::{Code, Machine, SplitMix64, StoreError, Timestamp};

use crate::{Driver, RunError, ensure_table, run};

/// Deadline of ordinary operations (spec §11).
pub const DEFAULT_TIMEOUT_MICROS: i64 = 60_000_000;
/// Deadline of `DeleteGraph`, `AddTriples` and `RemoveTriples` (spec §11).
pub const LONG_TIMEOUT_MICROS: i64 = 3_600_000_000;

/// The families of the triple table, without GC rules (spec §3.1).
pub fn table_families() -> [ColumnFamily; 3] {
    [
        ColumnFamily::new(keys::FAMILY_GRAPH),
        ColumnFamily::new(keys::FAMILY_IMMUTABLE),
        ColumnFamily::new(keys::FAMILY_TEMPORAL),
    ]
}

/// The table, and the n-th call's seed (`nth_output(seed, n)`, so a single-threaded sequence
/// of calls is reproducible).
#[derive(Debug)]
struct TriplesCalls {
    table: String,
    seed: u64,
    calls: AtomicU64,
}

impl TriplesCalls {
    /// Calls on `table` seeded from `seed`.
    fn new(table: &str, seed: u64) -> TriplesCalls {
        TriplesCalls {
            table: table.into(),
            seed,
            calls: AtomicU64::new(0),
        }
    }

    /// The table id.
    fn table(&self) -> &str {
        &self.table
    }

    /// The base seed.
    fn seed(&self) -> u64 {
        self.seed
    }

    /// The configuration and seed of a call starting at `now` with `timeout` µs.
    fn next(&self, now: Timestamp, timeout: i64) -> (OperationConfig, u64) {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let config = OperationConfig::new(&self.table, Timestamp(now.0.saturating_add(timeout)));
        (config, SplitMix64::nth_output(self.seed, n))
    }
}

/// The triple store in one table, over a driver.
#[derive(Debug)]
pub struct TripleStore<D> {
    driver: D,
    calls: TriplesCalls,
    /// The deadline of every operation in µs from its start, if set (else spec §11's).
    deadline_micros: Option<i64>,
}

/// A graph handle, obtained from [`TripleStore::new_graph`] or [`TripleStore::graph`].
#[derive(Debug)]
pub struct Graph<'s, D> {
    owner: &'s TripleStore<D>,
    id: Vec<u8>,
}

fn unwrap_run<T>(r: Result<T, RunError<TriplesError>>) -> Result<T, TriplesError> {
    r.map_err(|e| match e {
        RunError::Machine(e) => e,
        RunError::Stalled => {
            TriplesError::Store(StoreError::new(Code::Internal, "machine stalled"))
        }
    })
}

impl<D: Driver> TripleStore<D> {
    /// The store in table `badwolf`, seed 0.
    pub fn new(driver: D) -> Self {
        TripleStore {
            driver,
            calls: TriplesCalls::new(keys::DEFAULT_TABLE, 0),
            deadline_micros: None,
        }
    }

    /// Every later operation ends `Aborted` this many µs after it starts (`None`: spec §11's
    /// 60 s, and 1 h for `DeleteGraph`, `AddTriples` and `RemoveTriples`).
    pub fn set_deadline(&mut self, micros: Option<i64>) {
        self.deadline_micros = micros;
    }

    /// Uses table `table`.
    pub fn with_table(mut self, table: &str) -> Self {
        self.calls = TriplesCalls::new(table, self.calls.seed());
        self
    }

    /// Seeds the retry jitter of every operation.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.calls = TriplesCalls::new(self.calls.table(), seed);
        self
    }

    /// The table id.
    pub fn table(&self) -> &str {
        self.calls.table()
    }

    /// The configuration, start and seed of an operation whose own deadline is `timeout` µs
    /// (unless [`TripleStore::set_deadline`] set one for every operation).
    fn config(&self, timeout: i64) -> (OperationConfig, Timestamp, u64) {
        let now = self.driver.now();
        let (config, seed) = self
            .calls
            .next(now, self.deadline_micros.unwrap_or(timeout));
        (config, now, seed)
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.driver
    }

    async fn run<M: Machine<Error = TriplesError>>(&self, m: M) -> Result<M::Output, TriplesError> {
        unwrap_run(run(&self.driver, m, |_| {}).await)
    }

    /// Creates the table with families `graph`, `immutable_triple`, `temporal_triple`, without
    /// GC rules (spec §3.1). An existing table is left as it is.
    pub async fn setup(&self) -> Result<(), StoreError> {
        ensure_table(&self.driver, self.table(), &table_families()).await
    }

    /// `NewGraph(g)`.
    pub async fn new_graph(&self, id: &[u8]) -> Result<Graph<'_, D>, TriplesError> {
        let (config, now, seed) = self.config(DEFAULT_TIMEOUT_MICROS);
        self.run(NewGraph::new(config, id, now, seed)).await?;
        Ok(Graph {
            owner: self,
            id: id.to_vec(),
        })
    }

    /// `Graph(g)`: a handle if the graph exists.
    pub async fn graph(&self, id: &[u8]) -> Result<Graph<'_, D>, TriplesError> {
        let (config, now, seed) = self.config(DEFAULT_TIMEOUT_MICROS);
        self.run(GraphExists::new(config, id, now, seed)).await?;
        Ok(Graph {
            owner: self,
            id: id.to_vec(),
        })
    }

    /// A handle to graph `id` without checking that it exists (what BadWolf's callers hold
    /// after `NewGraph`); operations on a missing graph fail as they would there.
    pub fn handle(&self, id: &[u8]) -> Graph<'_, D> {
        Graph {
            owner: self,
            id: id.to_vec(),
        }
    }

    /// `DeleteGraph(g)`.
    pub async fn delete_graph(&self, id: &[u8]) -> Result<(), TriplesError> {
        let (config, now, seed) = self.config(LONG_TIMEOUT_MICROS);
        self.run(DeleteGraph::new(config, id, now, seed)).await
    }

    /// `GraphNames()`.
    pub async fn graph_names(&self) -> Result<Vec<Vec<u8>>, TriplesError> {
        let (config, now, seed) = self.config(DEFAULT_TIMEOUT_MICROS);
        self.run(GraphNames::new(config, now, seed)).await
    }

    /// Checks the table, or one graph (`spec/check.md` §4), repairing with `options.fix`;
    /// findings and progress go to `on_event`. Runs until `timeout` µs from now.
    pub async fn check(
        &self,
        graph: Option<&[u8]>,
        options: CheckOptions,
        timeout: i64,
        on_event: impl FnMut(CheckEvent),
    ) -> Result<CheckSummary, CheckError> {
        // Its own `timeout`, not the operations' deadline: a check runs as long as it is let.
        let now = self.driver.now();
        let (config, seed) = self.calls.next(now, timeout);
        let m = Check::new(config, graph, options, now, seed);
        run(&self.driver, m, on_event).await.map_err(|e| match e {
            RunError::Machine(e) => e,
            RunError::Stalled => {
                CheckError::Store(StoreError::new(Code::Internal, "machine stalled"))
            }
        })
    }
}

impl<D: Driver> Graph<'_, D> {
    /// The graph id.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// `AddTriples`.
    pub async fn add_triples(&self, triples: Vec<Triple>) -> Result<(), TriplesError> {
        let (config, now, seed) = self.owner.config(LONG_TIMEOUT_MICROS);
        self.owner
            .run(AddTriples::new(config, &self.id, triples, now, seed))
            .await
    }

    /// `RemoveTriples`.
    pub async fn remove_triples(&self, triples: Vec<Triple>) -> Result<(), TriplesError> {
        let (config, now, seed) = self.owner.config(LONG_TIMEOUT_MICROS);
        self.owner
            .run(RemoveTriples::new(config, &self.id, triples, now, seed))
            .await
    }

    /// `Exist`.
    pub async fn exist(&self, triple: &Triple) -> Result<bool, TriplesError> {
        let (config, now, seed) = self.owner.config(DEFAULT_TIMEOUT_MICROS);
        self.owner
            .run(Exist::new(config, &self.id, triple.clone(), now, seed))
            .await
    }

    /// Any lookup method with options.
    pub async fn lookup(
        &self,
        method: LookupMethod,
        options: LookupOptions,
    ) -> Result<Vec<Found>, TriplesError> {
        let (config, now, seed) = self.owner.config(DEFAULT_TIMEOUT_MICROS);
        self.owner
            .run(Lookup::new(config, &self.id, method, options, now, seed))
            .await
    }
}
