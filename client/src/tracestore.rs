//! [`TraceStore`]: one table of Skia Gold's trace store (`spec/tracestore.md`) over any
//! [`Driver`].
//!
//! The facade keeps one [`TraceStoreState`] (OPS cache, digest cache, id pool) between
//! operations and draws each operation's seed from one SplitMix64 stream started at the open
//! seed.
//!
//! ```
//! use rowkit_client::tracestore::{TraceStore, setup_table};
//! use rowkit_client::{SyncDriver, block_on};
//! use rowkit_codec::model::Timestamp;
//! use rowkit_codec::tracestore::{Layout, ops::params_from};
//! use rowkit_store::MemoryStore;
//! use rowkit_store::driver::ManualClock;
//! use rowkit_statemachines::tracestore::PutEntry;
//!
//! let store = MemoryStore::new();
//! let clock = ManualClock::new(Timestamp::from_secs(1_557_018_184));
//! let driver = SyncDriver::new(&store, &clock);
//! block_on(setup_table(&driver, "gold", Layout::Md5)).unwrap();
//! let mut gold = block_on(TraceStore::open(driver, "gold", None, 1)).unwrap();
//! let entry = PutEntry {
//!     params: params_from([("name", "test_alpha")]),
//!     digest: "000075b9c0f1b6a831c399e269772661".into(),
//!     ..PutEntry::default()
//! };
//! block_on(gold.put(5, None, vec![entry], Timestamp::from_secs(1_557_018_184))).unwrap();
//! let tile = block_on(gold.read_range(0, 255)).unwrap();
//! assert_eq!(tile.traces[",name=test_alpha,"].digests[5], "000075b9c0f1b6a831c399e269772661");
//! assert_eq!(block_on(gold.newest_tile()).unwrap(), Some(0));
//! ```

use rowkit_codec::model::{ColumnFamily, Timestamp};
use rowkit_codec::tracestore::{Layout, SetupRequest, TraceStoreError, detect_layout};
use rowkit_statemachines::check::{
    CheckError, CheckEvent, CheckOptions, CheckSummary, CheckTarget,
};
use rowkit_statemachines::operation::{Flow, Operation};
use rowkit_statemachines::tracestore::{
    AllocateDigestIds, AssignDigestIds, Check, NewestTile, Put, PutEntry, ReadDense, ReadRange,
    StreamTile, Tile, TraceBatch, TraceStoreEvent, TraceStoreSchema, TraceStoreState,
};
use rowkit_statemachines::{Code, SplitMix64, StoreError};

use crate::{Driver, run_operation};

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
/// lacks ([`Driver::set_family`], `ModifyColumnFamilies` on Bigtable) and leave present
/// families as they are; the md5 plan has no such steps, so an existing md5 table is not
/// checked or changed (§8.1, reproduce).
pub async fn setup_table<D: Driver + ?Sized>(
    driver: &D,
    table: &str,
    layout: Layout,
) -> Result<(), TraceStoreError> {
    let mut existed = false;
    for request in layout.setup_plan() {
        match request {
            SetupRequest::CreateTable { .. } => {
                match driver.create_table(table, &layout.families()).await {
                    Ok(()) => {}
                    Err(e) if e.code == Code::AlreadyExists => existed = true,
                    Err(e) => return Err(store_error(e)),
                }
            }
            // A new table got its families with CreateTable.
            SetupRequest::CreateColumnFamily { family } if existed => {
                let present = driver.families(table).await.map_err(store_error)?;
                // A present family answers ALREADY_EXISTS in the original: left unchanged.
                if !present.iter().any(|f| f.name == family.name) {
                    driver
                        .set_family(table, &family)
                        .await
                        .map_err(store_error)?;
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
    families: &[ColumnFamily],
    named: Option<Layout>,
) -> Result<Layout, TraceStoreError> {
    let names: Vec<&str> = families.iter().map(|f| f.name.as_str()).collect();
    detect_layout(&names, named)
}

/// One open trace store table over a driver (see the module doc).
pub struct TraceStore<D> {
    driver: D,
    state: TraceStoreState,
    seeds: SplitMix64,
    deadline_micros: Option<i64>,
}

impl<D> core::fmt::Debug for TraceStore<D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TraceStore")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl<D: Driver> TraceStore<D> {
    /// Opens `table`: the layout is detected from its families, or checked against `named`
    /// (`spec/tracestore.md` 8.3). `seed` starts the stream of per-operation seeds.
    pub async fn open(
        driver: D,
        table: &str,
        named: Option<Layout>,
        seed: u64,
    ) -> Result<TraceStore<D>, TraceStoreError> {
        let families = driver.families(table).await.map_err(store_error)?;
        let layout = layout_of(&families, named)?;
        Ok(TraceStore::with_layout(driver, table, layout, seed))
    }

    /// Opens `table` in `layout` without reading its schema (for drivers that cannot: a
    /// gateway). `seed` starts the stream of per-operation seeds.
    pub fn with_layout(driver: D, table: &str, layout: Layout, seed: u64) -> TraceStore<D> {
        TraceStore {
            driver,
            state: TraceStoreState::new(table, layout),
            seeds: SplitMix64::new(seed),
            deadline_micros: None,
        }
    }

    /// Every later operation ends `aborted` this many µs after it starts (`None`: the
    /// spec's 4 minutes for reads, 10 for Put).
    pub fn set_deadline(&mut self, micros: Option<i64>) {
        self.deadline_micros = micros;
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.driver
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

    /// The start, seed and deadline of an operation starting now.
    fn begin(&mut self) -> (Timestamp, u64, Option<Timestamp>) {
        let now = self.driver.now();
        let deadline = self.deadline_micros.map(|d| now.saturating_add_micros(d));
        (now, self.seeds.next_u64(), deadline)
    }

    async fn run<F: Flow<Schema = TraceStoreSchema>>(
        driver: &D,
        op: Operation<'_, F>,
    ) -> Result<F::Output, TraceStoreError> {
        Self::run_with_events(driver, op, |_| {}).await
    }

    /// Runs `op`, handing its events to `on_event`.
    async fn run_with_events<F: Flow<Schema = TraceStoreSchema>>(
        driver: &D,
        op: Operation<'_, F>,
        on_event: impl FnMut(TraceStoreEvent),
    ) -> Result<F::Output, TraceStoreError> {
        run_operation(driver, op, on_event).await
    }

    /// Checks the table (`spec/check.md` §2) until `timeout` µs from now; findings and
    /// progress go to `on_event`. Nothing in a trace store is repairable: `options.fix`
    /// changes nothing.
    pub async fn check(
        &mut self,
        options: CheckOptions,
        timeout: i64,
        on_event: impl FnMut(CheckEvent),
    ) -> Result<CheckSummary, CheckError> {
        let (now, seed, _) = self.begin();
        let target = CheckTarget::new(self.state.table(), now.saturating_add_micros(timeout));
        let m = Check::new(target, self.layout(), options, now, seed);
        run_operation(&self.driver, m, on_event).await
    }

    /// `Put`: writes `entries` at commit `repo_index` with cell timestamp `ts`.
    pub async fn put(
        &mut self,
        repo_index: i64,
        commit_time: Option<Timestamp>,
        entries: Vec<PutEntry>,
        ts: Timestamp,
    ) -> Result<(), TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = Put::new(
            &mut self.state,
            repo_index,
            commit_time,
            entries,
            ts,
            deadline,
            now,
            seed,
        );
        Self::run(&self.driver, op).await
    }

    /// `ReadRange(first, last)`.
    pub async fn read_range(&mut self, first: i64, last: i64) -> Result<Tile, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = ReadRange::new(&mut self.state, first, last, deadline, now, seed);
        Self::run(&self.driver, op).await
    }

    /// `StreamTile(index)`: the tile's traces handed to `on_batch` as they arrive (options are
    /// not read); resolves to how many traces were handed over.
    pub async fn stream_tile(
        &mut self,
        index: u32,
        mut on_batch: impl FnMut(TraceBatch),
    ) -> Result<usize, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = StreamTile::new(&mut self.state, index, deadline, now, seed);
        Self::run_with_events(&self.driver, op, |e| {
            // Only traces are handed over; any other event (none yet) is not this call's output.
            if let TraceStoreEvent::Traces(batch) = e {
                on_batch(batch)
            }
        })
        .await
    }

    /// `ReadDense(last, n)`.
    pub async fn read_dense(&mut self, last: i64, n: usize) -> Result<Tile, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = ReadDense::new(&mut self.state, last, n, deadline, now, seed);
        Self::run(&self.driver, op).await
    }

    /// `NewestTile`.
    pub async fn newest_tile(&mut self) -> Result<Option<u32>, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = NewestTile::new(&mut self.state, deadline, now, seed);
        Self::run(&self.driver, op).await
    }

    /// `AssignDigestIds` (digest-id layout).
    pub async fn assign_digest_ids(
        &mut self,
        digests: Vec<String>,
    ) -> Result<Vec<u64>, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = AssignDigestIds::new(&mut self.state, digests, deadline, now, seed);
        Self::run(&self.driver, op).await
    }

    /// `AllocateDigestIds` (digest-id layout).
    pub async fn allocate_digest_ids(&mut self, n: usize) -> Result<Vec<u64>, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = AllocateDigestIds::new(&mut self.state, n, deadline, now, seed);
        Self::run(&self.driver, op).await
    }
}
