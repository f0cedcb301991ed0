//! The sync typed facade over BadWolf's triple store (`spec/triples.md`): [`TripleStore`]
//! (table setup, graphs) and [`Graph`] (writes and lookups), each call running one machine of
//! `rowkit_statemachines::triples` to completion with [`driver::run`] on any [`Store`] and
//! [`Clock`].
//!
//! The Tokio facade (`rowkit_bigtable::triples`) runs the same machines with the async driver
//! and shares the driver-independent parts: [`TriplesCalls`] (table, per-call deadline and
//! seed), [`table_families`] and the timeouts.
//!
//! ```
//! use rowkit_codec::model::Timestamp;
//! use rowkit_codec::triples::Triple;
//! use rowkit_embedded::MemoryStore;
//! use rowkit_embedded::driver::ManualClock;
//! use rowkit_embedded::triples::TripleStore;
//! use rowkit_statemachines::triples::{LookupMethod, LookupOptions};
//!
//! let store = MemoryStore::new();
//! let clock = ManualClock::new(Timestamp::from_secs(1));
//! let ts = TripleStore::new(&store, &clock);
//! ts.setup().unwrap();
//! let g = ts.new_graph(b"test").unwrap();
//! g.add_triples(vec![Triple::parse(b"/u<joe> \"parent_of\"@[] /u<mary>").unwrap()]).unwrap();
//! let found = g.lookup(LookupMethod::Triples, LookupOptions::default()).unwrap();
//! assert_eq!(found.len(), 1);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use rowkit_codec::model::ColumnFamily;
use rowkit_codec::triples::Triple;
use rowkit_codec::triples::keys;
use rowkit_statemachines::triples::{
    AddTriples, DeleteGraph, Exist, Found, GraphExists, GraphNames, Lookup, LookupMethod,
    LookupOptions, NewGraph, OperationConfig, RemoveTriples, TriplesError,
};
use rowkit_statemachines::{Code, Machine, SplitMix64, StoreError, Timestamp};

use crate::Store;
use crate::driver::{self, Clock, RunError};

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

/// The driver-independent part of every call: the table, and the n-th call's seed
/// (`nth_output(seed, n)`, so a single-threaded sequence of calls is reproducible).
#[derive(Debug)]
pub struct TriplesCalls {
    table: String,
    seed: u64,
    calls: AtomicU64,
}

impl TriplesCalls {
    /// Calls on `table` seeded from `seed`.
    pub fn new(table: &str, seed: u64) -> TriplesCalls {
        TriplesCalls {
            table: table.into(),
            seed,
            calls: AtomicU64::new(0),
        }
    }

    /// The table id.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The base seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The configuration and seed of a call starting at `now` with `timeout` µs.
    pub fn next(&self, now: Timestamp, timeout: i64) -> (OperationConfig, u64) {
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        let config = OperationConfig::new(&self.table, Timestamp(now.0.saturating_add(timeout)));
        (config, SplitMix64::nth_output(self.seed, n))
    }
}

/// The triple store in one table of a [`Store`].
pub struct TripleStore<'a, S: Store + ?Sized, C: Clock + ?Sized> {
    store: &'a S,
    clock: &'a C,
    calls: TriplesCalls,
}

/// A graph handle, obtained from [`TripleStore::new_graph`] or [`TripleStore::graph`].
pub struct Graph<'s, 'a, S: Store + ?Sized, C: Clock + ?Sized> {
    owner: &'s TripleStore<'a, S, C>,
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

impl<'a, S: Store + ?Sized, C: Clock + ?Sized> TripleStore<'a, S, C> {
    /// The store in table `badwolf`, seed 0.
    pub fn new(store: &'a S, clock: &'a C) -> Self {
        TripleStore {
            store,
            clock,
            calls: TriplesCalls::new(keys::DEFAULT_TABLE, 0),
        }
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

    fn config(&self, timeout: i64) -> (OperationConfig, Timestamp, u64) {
        let now = self.clock.now();
        let (config, seed) = self.calls.next(now, timeout);
        (config, now, seed)
    }

    fn run<M: Machine<Error = TriplesError>>(&self, m: M) -> Result<M::Output, TriplesError> {
        unwrap_run(driver::run(self.store, self.clock, m, |_| {}))
    }

    /// Creates the table with families `graph`, `immutable_triple`, `temporal_triple`, without
    /// GC rules (spec §3.1). An existing table is left as it is.
    pub fn setup(&self) -> Result<(), StoreError> {
        match self.store.create_table(self.table(), &table_families()) {
            Err(e) if e.code == Code::AlreadyExists => Ok(()),
            other => other,
        }
    }

    /// `NewGraph(g)`.
    pub fn new_graph(&self, id: &[u8]) -> Result<Graph<'_, 'a, S, C>, TriplesError> {
        let (config, now, seed) = self.config(DEFAULT_TIMEOUT_MICROS);
        self.run(NewGraph::new(id, config, now, seed))?;
        Ok(Graph {
            owner: self,
            id: id.to_vec(),
        })
    }

    /// `Graph(g)`: a handle if the graph exists.
    pub fn graph(&self, id: &[u8]) -> Result<Graph<'_, 'a, S, C>, TriplesError> {
        let (config, now, seed) = self.config(DEFAULT_TIMEOUT_MICROS);
        self.run(GraphExists::new(id, config, now, seed))?;
        Ok(Graph {
            owner: self,
            id: id.to_vec(),
        })
    }

    /// `DeleteGraph(g)`.
    pub fn delete_graph(&self, id: &[u8]) -> Result<(), TriplesError> {
        let (config, now, seed) = self.config(LONG_TIMEOUT_MICROS);
        self.run(DeleteGraph::new(id, config, now, seed))
    }

    /// `GraphNames()`.
    pub fn graph_names(&self) -> Result<Vec<Vec<u8>>, TriplesError> {
        let (config, now, seed) = self.config(DEFAULT_TIMEOUT_MICROS);
        self.run(GraphNames::new(config, now, seed))
    }
}

impl<S: Store + ?Sized, C: Clock + ?Sized> Graph<'_, '_, S, C> {
    /// The graph id.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// `AddTriples`.
    pub fn add_triples(&self, triples: Vec<Triple>) -> Result<(), TriplesError> {
        let (config, now, seed) = self.owner.config(LONG_TIMEOUT_MICROS);
        self.owner
            .run(AddTriples::new(&self.id, triples, config, now, seed))
    }

    /// `RemoveTriples`.
    pub fn remove_triples(&self, triples: Vec<Triple>) -> Result<(), TriplesError> {
        let (config, now, seed) = self.owner.config(LONG_TIMEOUT_MICROS);
        self.owner
            .run(RemoveTriples::new(&self.id, triples, config, now, seed))
    }

    /// `Exist`.
    pub fn exist(&self, triple: &Triple) -> Result<bool, TriplesError> {
        let (config, now, seed) = self.owner.config(DEFAULT_TIMEOUT_MICROS);
        self.owner
            .run(Exist::new(&self.id, triple.clone(), config, now, seed))
    }

    /// Any lookup method with options.
    pub fn lookup(
        &self,
        method: LookupMethod,
        options: LookupOptions,
    ) -> Result<Vec<Found>, TriplesError> {
        let (config, now, seed) = self.owner.config(DEFAULT_TIMEOUT_MICROS);
        self.owner
            .run(Lookup::new(&self.id, method, options, config, now, seed))
    }
}
