//! `TraceStore`: the Tokio facade of the Gold trace store (`spec/tracestore.md`) on a
//! [`BigtableConnection`], the async twin of `rowkit_embedded::tracestore::TraceStore`: one
//! [`TraceStoreState`] (OPS cache, digest cache, id pool) kept between operations, the same
//! machines, the same seeds and deadlines ([`TraceStoreCalls`]) and layout detection
//! ([`layout_of`]).
//!
//! Futures of this facade are `!Send` while the trace store machines are (their sequencing
//! core uses `Rc`); nothing here prevents `Send` once they are.

use rowkit_codec::tracestore::{Layout, SetupRequest, TraceStoreError};
use rowkit_embedded::driver::SystemClock;
use rowkit_embedded::tracestore::{TraceStoreCalls, layout_of, store_error};
use rowkit_statemachines::tracestore::{self as machines, Op, PutEntry, Tile, TraceStoreState};
use rowkit_statemachines::{Code, Timestamp};

use crate::connection::BigtableConnection;
use crate::driver::{self, RunError, SharedClock};

/// Sets `table` up in `layout` (`spec/tracestore.md` 8) by running the layout's setup plan
/// as Bigtable admin calls: `CreateTable`, then (digest-id layout) one `ModifyColumnFamilies`
/// per family. An existing table is left as it is.
pub async fn setup_table(
    conn: &BigtableConnection,
    table: &str,
    layout: Layout,
) -> Result<(), TraceStoreError> {
    for request in layout.setup_plan() {
        match request {
            SetupRequest::CreateTable { families } => {
                match conn.create_table(table, &families).await {
                    Ok(()) => {}
                    Err(e) if e.code == Code::AlreadyExists => return Ok(()),
                    Err(e) => return Err(store_error(e)),
                }
            }
            SetupRequest::CreateColumnFamily { family } => {
                conn.set_family(table, &family).await.map_err(store_error)?
            }
        }
    }
    Ok(())
}

/// One open trace store table over a connection.
pub struct TraceStore {
    conn: BigtableConnection,
    clock: SharedClock,
    state: TraceStoreState,
    calls: TraceStoreCalls,
}

impl std::fmt::Debug for TraceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceStore")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl TraceStore {
    /// Opens `table` on the wall clock: the layout is detected from its families, or checked
    /// against `named` (`spec/tracestore.md` 8.3). `seed` starts the stream of per-operation
    /// seeds.
    pub async fn open(
        conn: BigtableConnection,
        table: &str,
        named: Option<Layout>,
        seed: u64,
    ) -> Result<TraceStore, TraceStoreError> {
        let families = conn.families(table).await.map_err(store_error)?;
        let layout = layout_of(&families, named)?;
        Ok(TraceStore {
            conn,
            clock: std::sync::Arc::new(SystemClock),
            state: TraceStoreState::new(table, layout),
            calls: TraceStoreCalls::new(seed),
        })
    }

    /// The same store on `clock` (every `now` of every machine).
    pub fn with_clock(mut self, clock: SharedClock) -> TraceStore {
        self.clock = clock;
        self
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

    async fn run<T>(
        conn: &BigtableConnection,
        clock: &SharedClock,
        mut op: Op<'_, T>,
    ) -> Result<T, TraceStoreError> {
        driver::run_with(conn, &**clock, &mut op, |()| {})
            .await
            .map_err(|e| match e {
                RunError::Machine(e) => e,
                RunError::Stalled | RunError::Closed => TraceStoreError::Store {
                    code: Code::Internal,
                    message: e.to_string(),
                },
            })
    }

    fn begin(&mut self) -> (Timestamp, u64, Option<Timestamp>) {
        let now = self.clock.now();
        let (seed, deadline) = self.calls.begin(now);
        (now, seed, deadline)
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
        Self::run(&self.conn, &self.clock, op).await
    }

    /// `ReadRange(first, last)`.
    pub async fn read_range(&mut self, first: i64, last: i64) -> Result<Tile, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::read_range(&mut self.state, first, last, now, seed, deadline);
        Self::run(&self.conn, &self.clock, op).await
    }

    /// `ReadDense(last, n)`.
    pub async fn read_dense(&mut self, last: i64, n: usize) -> Result<Tile, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::read_dense(&mut self.state, last, n, now, seed, deadline);
        Self::run(&self.conn, &self.clock, op).await
    }

    /// `NewestTile`.
    pub async fn newest_tile(&mut self) -> Result<Option<u32>, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::newest_tile(&mut self.state, now, seed, deadline);
        Self::run(&self.conn, &self.clock, op).await
    }

    /// `AssignDigestIds` (digest-id layout).
    pub async fn assign_digest_ids(
        &mut self,
        digests: Vec<String>,
    ) -> Result<Vec<u64>, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::assign_digest_ids(&mut self.state, digests, now, seed, deadline);
        Self::run(&self.conn, &self.clock, op).await
    }

    /// `AllocateDigestIds` (digest-id layout).
    pub async fn allocate_digest_ids(&mut self, n: usize) -> Result<Vec<u64>, TraceStoreError> {
        let (now, seed, deadline) = self.begin();
        let op = machines::allocate_digest_ids(&mut self.state, n, now, seed, deadline);
        Self::run(&self.conn, &self.clock, op).await
    }
}
