//! The Tokio facade over BadWolf's triple store (`spec/triples.md`) on a
//! [`BigtableConnection`]: [`TripleStore`] (table setup, graphs) and [`Graph`] (writes and
//! lookups), the async twins of `rowkit_embedded::triples`, running the same machines with the
//! async driver and sharing the per-call configuration and seeds ([`TriplesCalls`]), the
//! table families and the timeouts.
//!
//! A lookup's machine pages through its scan and returns the page (the spec's result after
//! filtering, sorting and `max`): the facade returns it whole, as the sync one does.

use rowkit_codec::triples::{Triple, keys};
use rowkit_embedded::driver::SystemClock;
use rowkit_embedded::triples::{
    DEFAULT_TIMEOUT_MICROS, LONG_TIMEOUT_MICROS, TriplesCalls, table_families,
};
use rowkit_statemachines::triples::{
    AddTriples, DeleteGraph, Exist, Found, GraphExists, GraphNames, Lookup, LookupMethod,
    LookupOptions, NewGraph, OperationConfig, RemoveTriples, TriplesError,
};
use rowkit_statemachines::{Code, Machine, StoreError, Timestamp};

use crate::connection::BigtableConnection;
use crate::driver::{self, RunError, SharedClock};

/// The triple store in one table of a Bigtable instance.
pub struct TripleStore {
    conn: BigtableConnection,
    clock: SharedClock,
    calls: TriplesCalls,
}

impl std::fmt::Debug for TripleStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TripleStore")
            .field("table", &self.calls.table())
            .finish_non_exhaustive()
    }
}

/// A graph handle, obtained from [`TripleStore::new_graph`] or [`TripleStore::graph`].
#[derive(Debug)]
pub struct Graph<'s> {
    owner: &'s TripleStore,
    id: Vec<u8>,
}

impl TripleStore {
    /// The store in table `badwolf`, seed 0, on the wall clock.
    pub fn new(conn: BigtableConnection) -> TripleStore {
        TripleStore {
            conn,
            clock: std::sync::Arc::new(SystemClock),
            calls: TriplesCalls::new(keys::DEFAULT_TABLE, 0),
        }
    }

    /// Uses table `table`.
    pub fn with_table(mut self, table: &str) -> TripleStore {
        self.calls = TriplesCalls::new(table, self.calls.seed());
        self
    }

    /// Seeds the retry jitter of every operation.
    pub fn with_seed(mut self, seed: u64) -> TripleStore {
        self.calls = TriplesCalls::new(self.calls.table(), seed);
        self
    }

    /// The same store on `clock`.
    pub fn with_clock(mut self, clock: SharedClock) -> TripleStore {
        self.clock = clock;
        self
    }

    /// The table id.
    pub fn table(&self) -> &str {
        self.calls.table()
    }

    fn config(&self, timeout: i64) -> (OperationConfig, Timestamp, u64) {
        let now = self.clock.now();
        let (config, seed) = self.calls.next(now, timeout);
        (config, now, seed)
    }

    async fn run<M: Machine<Error = TriplesError>>(
        &self,
        mut m: M,
    ) -> Result<M::Output, TriplesError> {
        driver::run_with(&self.conn, &*self.clock, &mut m, |_| {})
            .await
            .map_err(|e| match e {
                RunError::Machine(e) => e,
                RunError::Stalled | RunError::Closed => {
                    TriplesError::Store(StoreError::new(Code::Internal, e.to_string()))
                }
            })
    }

    /// Creates the table with families `graph`, `immutable_triple`, `temporal_triple`, without
    /// GC rules (spec §3.1). An existing table is left as it is.
    pub async fn setup(&self) -> Result<(), StoreError> {
        match self
            .conn
            .create_table(self.table(), &table_families())
            .await
        {
            Err(e) if e.code == Code::AlreadyExists => Ok(()),
            other => other,
        }
    }

    /// `NewGraph(g)`.
    pub async fn new_graph(&self, id: &[u8]) -> Result<Graph<'_>, TriplesError> {
        let (config, now, seed) = self.config(DEFAULT_TIMEOUT_MICROS);
        self.run(NewGraph::new(id, config, now, seed)).await?;
        Ok(Graph {
            owner: self,
            id: id.to_vec(),
        })
    }

    /// `Graph(g)`: a handle if the graph exists.
    pub async fn graph(&self, id: &[u8]) -> Result<Graph<'_>, TriplesError> {
        let (config, now, seed) = self.config(DEFAULT_TIMEOUT_MICROS);
        self.run(GraphExists::new(id, config, now, seed)).await?;
        Ok(Graph {
            owner: self,
            id: id.to_vec(),
        })
    }

    /// `DeleteGraph(g)`.
    pub async fn delete_graph(&self, id: &[u8]) -> Result<(), TriplesError> {
        let (config, now, seed) = self.config(LONG_TIMEOUT_MICROS);
        self.run(DeleteGraph::new(id, config, now, seed)).await
    }

    /// `GraphNames()`.
    pub async fn graph_names(&self) -> Result<Vec<Vec<u8>>, TriplesError> {
        let (config, now, seed) = self.config(DEFAULT_TIMEOUT_MICROS);
        self.run(GraphNames::new(config, now, seed)).await
    }
}

impl Graph<'_> {
    /// The graph id.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// `AddTriples`.
    pub async fn add_triples(&self, triples: Vec<Triple>) -> Result<(), TriplesError> {
        let (config, now, seed) = self.owner.config(LONG_TIMEOUT_MICROS);
        self.owner
            .run(AddTriples::new(&self.id, triples, config, now, seed))
            .await
    }

    /// `RemoveTriples`.
    pub async fn remove_triples(&self, triples: Vec<Triple>) -> Result<(), TriplesError> {
        let (config, now, seed) = self.owner.config(LONG_TIMEOUT_MICROS);
        self.owner
            .run(RemoveTriples::new(&self.id, triples, config, now, seed))
            .await
    }

    /// `Exist`.
    pub async fn exist(&self, triple: &Triple) -> Result<bool, TriplesError> {
        let (config, now, seed) = self.owner.config(DEFAULT_TIMEOUT_MICROS);
        self.owner
            .run(Exist::new(&self.id, triple.clone(), config, now, seed))
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
            .run(Lookup::new(&self.id, method, options, config, now, seed))
            .await
    }
}
