//! The triple store facade (BadWolf's Bigtable driver, `spec/triples.md`) over any
//! [`Driver`]: [`TripleStore`] (table setup, graphs) and [`Graph`] (writes and lookups), each
//! call running one machine of `rowkit_statemachines::triples` with [`crate::run`].
//!
//! ```
//! use rowkit_client::triples::TripleStore;
//! use rowkit_client::{SyncDriver, block_on};
//! use rowkit_codec::model::Timestamp;
//! use rowkit_codec::triples::Triple;
//! use rowkit_store::MemoryStore;
//! use rowkit_store::driver::ManualClock;
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

use rowkit_codec::model::ColumnFamily;
use rowkit_codec::triples::Triple;
use rowkit_codec::triples::keys;
use rowkit_statemachines::Machine;
use rowkit_statemachines::StoreError;
use rowkit_statemachines::check::{CheckError, CheckEvent, CheckOptions, CheckSummary};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::triples::{
    AddTriples, Check, DeleteGraph, Exist, Found, GraphExists, GraphNames, Lookup, LookupMethod,
    LookupOptions, NewGraph, OperationConfig, RemoveTriples, TriplesError,
};

use crate::calls::Calls;
use crate::{CallOptions, Driver, ensure_table, run_operation};

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

/// The triple store in one table, over a driver.
#[derive(Debug)]
pub struct TripleStore<D> {
    driver: D,
    table: String,
    calls: Calls,
}

/// A graph handle, obtained from [`TripleStore::new_graph`] or [`TripleStore::graph`].
#[derive(Debug)]
pub struct Graph<'s, D> {
    owner: &'s TripleStore<D>,
    id: Vec<u8>,
}

impl<D: Driver> TripleStore<D> {
    /// The store in table `badwolf`, default [`CallOptions`] (seed 0; spec §11's deadlines:
    /// 60 s, and 1 h for `DeleteGraph`, `AddTriples` and `RemoveTriples`).
    pub fn new(driver: D) -> Self {
        TripleStore {
            driver,
            table: keys::DEFAULT_TABLE.into(),
            calls: Calls::default(),
        }
    }

    /// Uses table `table`.
    pub fn with_table(mut self, table: &str) -> Self {
        self.table = table.into();
        self
    }

    /// Seeds every operation and, if `options` set one, bounds every operation by its
    /// deadline instead of spec §11's.
    pub fn with_options(mut self, options: CallOptions) -> Self {
        self.calls = Calls::new(options);
        self
    }

    /// The options.
    pub fn options(&self) -> CallOptions {
        self.calls.options()
    }

    /// The table id.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The configuration and start of an operation whose own deadline is `timeout` µs
    /// (unless the options set one for every operation).
    fn start(&self, timeout: i64) -> (OperationConfig, Start) {
        let start = self.calls.start(self.driver.now(), timeout);
        (OperationConfig::new(&self.table), start)
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.driver
    }

    async fn run<M: Machine<Error = TriplesError>>(&self, m: M) -> Result<M::Output, TriplesError> {
        run_operation(&self.driver, m, |_| {}).await
    }

    /// Creates the table with families `graph`, `immutable_triple`, `temporal_triple`, without
    /// GC rules (spec §3.1). An existing table is left as it is.
    pub async fn setup(&self) -> Result<(), StoreError> {
        ensure_table(&self.driver, self.table(), &table_families()).await
    }

    /// `NewGraph(g)`.
    pub async fn new_graph(&self, id: &[u8]) -> Result<Graph<'_, D>, TriplesError> {
        let (config, start) = self.start(DEFAULT_TIMEOUT_MICROS);
        self.run(NewGraph::new(config, id, start)).await?;
        Ok(self.handle(id))
    }

    /// `Graph(g)`: a handle if the graph exists.
    pub async fn graph(&self, id: &[u8]) -> Result<Graph<'_, D>, TriplesError> {
        let (config, start) = self.start(DEFAULT_TIMEOUT_MICROS);
        self.run(GraphExists::new(config, id, start)).await?;
        Ok(self.handle(id))
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
        let (config, start) = self.start(LONG_TIMEOUT_MICROS);
        self.run(DeleteGraph::new(config, id, start)).await
    }

    /// `GraphNames()`.
    pub async fn graph_names(&self) -> Result<Vec<Vec<u8>>, TriplesError> {
        let (config, start) = self.start(DEFAULT_TIMEOUT_MICROS);
        self.run(GraphNames::new(config, start)).await
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
        let start = self.calls.start_within(self.driver.now(), timeout);
        let m = Check::new(OperationConfig::new(&self.table), graph, options, start);
        run_operation(&self.driver, m, on_event).await
    }
}

impl<D: Driver> Graph<'_, D> {
    /// The graph id.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// `AddTriples`.
    pub async fn add_triples(&self, triples: Vec<Triple>) -> Result<(), TriplesError> {
        let (config, start) = self.owner.start(LONG_TIMEOUT_MICROS);
        self.owner
            .run(AddTriples::new(config, &self.id, triples, start))
            .await
    }

    /// `RemoveTriples`.
    pub async fn remove_triples(&self, triples: Vec<Triple>) -> Result<(), TriplesError> {
        let (config, start) = self.owner.start(LONG_TIMEOUT_MICROS);
        self.owner
            .run(RemoveTriples::new(config, &self.id, triples, start))
            .await
    }

    /// `Exist`.
    pub async fn exist(&self, triple: &Triple) -> Result<bool, TriplesError> {
        let (config, start) = self.owner.start(DEFAULT_TIMEOUT_MICROS);
        self.owner
            .run(Exist::new(config, &self.id, triple.clone(), start))
            .await
    }

    /// Any lookup method with options.
    pub async fn lookup(
        &self,
        method: LookupMethod,
        options: LookupOptions,
    ) -> Result<Vec<Found>, TriplesError> {
        let (config, start) = self.owner.start(DEFAULT_TIMEOUT_MICROS);
        self.owner
            .run(Lookup::new(config, &self.id, method, options, start))
            .await
    }
}
