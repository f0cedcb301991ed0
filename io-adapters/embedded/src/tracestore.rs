//! `TraceStore`: the sync typed facade of the Gold trace store (`spec/tracestore.md`) over any
//! [`Store`] and [`Clock`]. It keeps one [`TraceStoreState`] (OPS cache, digest cache, id
//! pool) between operations and runs each machine with the sync driver.
//!
//! The Tokio facade (`rowkit_bigtable::tracestore::TraceStore`) wraps the same machines the
//! same way and shares the driver-independent parts: [`TraceStoreCalls`] (per-operation seeds
//! and deadlines), [`layout_of`] and [`store_error`]. The machines are `Send` (explicit state
//! machines, no async inside), so a multi-threaded runtime may move them between workers.
//!
//! ```
//! use rowkit_codec::model::Timestamp;
//! use rowkit_codec::tracestore::{Layout, ops::params_from};
//! use rowkit_embedded::MemoryStore;
//! use rowkit_embedded::driver::ManualClock;
//! use rowkit_embedded::tracestore::{TraceStore, setup_table};
//! use rowkit_statemachines::tracestore::PutEntry;
//!
//! let store = MemoryStore::new();
//! let clock = ManualClock::new(Timestamp::from_secs(1_557_018_184));
//! setup_table(&store, "gold", Layout::Md5).unwrap();
//! let mut gold = TraceStore::open(&store, &clock, "gold", None, 1).unwrap();
//! let entry = PutEntry {
//!     params: params_from([("name", "test_alpha")]),
//!     digest: "000075b9c0f1b6a831c399e269772661".into(),
//!     ..PutEntry::default()
//! };
//! gold.put(5, None, vec![entry], clock_now(&clock)).unwrap();
//! let tile = gold.read_range(0, 255).unwrap();
//! assert_eq!(tile.traces[",name=test_alpha,"].digests[5], "000075b9c0f1b6a831c399e269772661");
//! assert_eq!(gold.newest_tile().unwrap(), Some(0));
//! # fn clock_now(c: &ManualClock) -> Timestamp { use rowkit_embedded::driver::Clock; c.now() }
//! ```

use rowkit_codec::model::Timestamp;
use rowkit_codec::tracestore::{Layout, SetupRequest, TraceStoreError, detect_layout};
use rowkit_statemachines::tracestore::{self as machines, Op, PutEntry, Tile, TraceStoreState};
use rowkit_statemachines::{Code, SplitMix64, StoreError};

use crate::Store;
use crate::driver::{self, Clock, RunError};

/// A store failure as the trace store's error.
pub fn store_error(e: StoreError) -> TraceStoreError {
    TraceStoreError::Store {
        code: e.code,
        message: e.message,
    }
}

/// Sets `table` up in `layout` (`spec/tracestore.md` 8), running the codec's setup plan.
///
/// A new table is created together with the layout's families in one request (the spec allows
/// this for the digest-id plan; the schema is the same). On an existing table
/// (`ALREADY_EXISTS`), the digest-id plan's `CreateColumnFamily` steps add the families it
/// lacks through [`Store::set_family`] (`ModifyColumnFamilies` on Bigtable) and leave present
/// families as they are; the md5 plan has no such steps, so an existing md5 table is not
/// checked or changed (§8.1, reproduce).
pub fn setup_table<S: Store + ?Sized>(
    store: &S,
    table: &str,
    layout: Layout,
) -> Result<(), TraceStoreError> {
    let mut existed = false;
    for request in layout.setup_plan() {
        match request {
            SetupRequest::CreateTable { .. } => {
                match store.create_table(table, &layout.families()) {
                    Ok(()) => {}
                    Err(e) if e.code == Code::AlreadyExists => existed = true,
                    Err(e) => return Err(store_error(e)),
                }
            }
            // A new table got its families with CreateTable.
            SetupRequest::CreateColumnFamily { family } if existed => {
                let present = store.families(table).map_err(store_error)?;
                // A present family answers ALREADY_EXISTS in the original: left unchanged.
                if !present.iter().any(|f| f.name == family.name) {
                    store.set_family(table, &family).map_err(store_error)?;
                }
            }
            SetupRequest::CreateColumnFamily { .. } => {}
        }
    }
    Ok(())
}

/// The layout of a table with `families` (`spec/tracestore.md` 8.3: detected, or `named`
/// checked against them).
pub fn layout_of(
    families: &[rowkit_codec::model::ColumnFamily],
    named: Option<Layout>,
) -> Result<Layout, TraceStoreError> {
    let names: Vec<&str> = families.iter().map(|f| f.name.as_str()).collect();
    detect_layout(&names, named)
}

/// The driver-independent part of every operation: the seed stream (one SplitMix64 stream
/// from the open seed) and the optional deadline.
#[derive(Debug)]
pub struct TraceStoreCalls {
    seeds: SplitMix64,
    deadline_micros: Option<i64>,
}

impl TraceStoreCalls {
    /// Seeds from `seed`, the machines' default deadlines.
    pub fn new(seed: u64) -> TraceStoreCalls {
        TraceStoreCalls {
            seeds: SplitMix64::new(seed),
            deadline_micros: None,
        }
    }

    /// Every later operation ends `aborted` this many µs after it starts (`None`: the
    /// spec's 4 minutes for reads, 10 for Put).
    pub fn set_deadline(&mut self, micros: Option<i64>) {
        self.deadline_micros = micros;
    }

    /// The seed and deadline of an operation starting at `now`.
    pub fn begin(&mut self, now: Timestamp) -> (u64, Option<Timestamp>) {
        let deadline = self.deadline_micros.map(|d| now.saturating_add_micros(d));
        (self.seeds.next_u64(), deadline)
    }
}

/// One open trace store table over a [`Store`] and a [`Clock`].
pub struct TraceStore<'s, S: Store + ?Sized, C: Clock + ?Sized> {
    store: &'s S,
    clock: &'s C,
    state: TraceStoreState,
    calls: TraceStoreCalls,
}

impl<S: Store + ?Sized, C: Clock + ?Sized> core::fmt::Debug for TraceStore<'_, S, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TraceStore")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl<'s, S: Store + ?Sized, C: Clock + ?Sized> TraceStore<'s, S, C> {
    /// [`setup_table`] (kept here for callers that name the facade type).
    pub fn setup(store: &S, table: &str, layout: Layout) -> Result<(), TraceStoreError> {
        setup_table(store, table, layout)
    }

    /// Opens `table`: the layout is detected from its families, or checked against `named`
    /// (`spec/tracestore.md` 8.3). `seed` starts the stream of per-operation seeds.
    pub fn open(
        store: &'s S,
        clock: &'s C,
        table: &str,
        named: Option<Layout>,
        seed: u64,
    ) -> Result<Self, TraceStoreError> {
        let layout = layout_of(&store.families(table).map_err(store_error)?, named)?;
        Ok(TraceStore {
            store,
            clock,
            state: TraceStoreState::new(table, layout),
            calls: TraceStoreCalls::new(seed),
        })
    }

    /// Every later operation ends `aborted` this many µs after it starts (default: the
    /// spec's 4 minutes for reads, 10 for Put).
    pub fn set_deadline(&mut self, micros: Option<i64>) {
        self.calls.set_deadline(micros);
    }

    /// The layout of the table.
    pub fn layout(&self) -> Layout {
        self.state.layout()
    }

    /// The instance state (caches, id pool).
    pub fn state(&self) -> &TraceStoreState {
        &self.state
    }

    /// The instance state, mutably (e.g. `clear_digest_cache`).
    pub fn state_mut(&mut self) -> &mut TraceStoreState {
        &mut self.state
    }

    fn begin(&mut self) -> (Timestamp, u64, Option<Timestamp>) {
        let now = self.clock.now();
        let (seed, deadline) = self.calls.begin(now);
        (now, seed, deadline)
    }

    fn run<T>(store: &S, clock: &C, op: Op<'_, T>) -> Result<T, TraceStoreError> {
        driver::run(store, clock, op, |()| {}).map_err(|e| match e {
            RunError::Machine(e) => e,
            RunError::Stalled => TraceStoreError::Store {
                code: Code::Internal,
                message: "machine stalled".into(),
            },
        })
    }

    /// `Put`: writes `entries` at commit `repo_index` with cell timestamp `ts`.
    pub fn put(
        &mut self,
        repo_index: i64,
        commit_time: Option<Timestamp>,
        entries: Vec<PutEntry>,
        ts: Timestamp,
    ) -> Result<(), TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::put(
            &mut self.state,
            repo_index,
            commit_time,
            entries,
            ts,
            now,
            seed,
            deadline,
        );
        Self::run(self.store, self.clock, op)
    }

    /// `ReadRange(first, last)`.
    pub fn read_range(&mut self, first: i64, last: i64) -> Result<Tile, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::read_range(&mut self.state, first, last, now, seed, deadline);
        Self::run(self.store, self.clock, op)
    }

    /// `ReadDense(last, n)`.
    pub fn read_dense(&mut self, last: i64, n: usize) -> Result<Tile, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::read_dense(&mut self.state, last, n, now, seed, deadline);
        Self::run(self.store, self.clock, op)
    }

    /// `NewestTile`.
    pub fn newest_tile(&mut self) -> Result<Option<u32>, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::newest_tile(&mut self.state, now, seed, deadline);
        Self::run(self.store, self.clock, op)
    }

    /// `AssignDigestIds` (digest-id layout).
    pub fn assign_digest_ids(&mut self, digests: Vec<String>) -> Result<Vec<u64>, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::assign_digest_ids(&mut self.state, digests, now, seed, deadline);
        Self::run(self.store, self.clock, op)
    }

    /// `AllocateDigestIds` (digest-id layout).
    pub fn allocate_digest_ids(&mut self, n: usize) -> Result<Vec<u64>, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::allocate_digest_ids(&mut self.state, n, now, seed, deadline);
        Self::run(self.store, self.clock, op)
    }
}
