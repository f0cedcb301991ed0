//! [`TraceStore`]: one table of Skia Gold's trace store (`spec/tracestore.md`) over any
//! [`Driver`].
//!
//! The facade keeps one [`TraceStoreState`] (OPS cache, digest cache, id pool) between
//! operations; its methods take `&self` and its [`CallOptions`] seed every operation and may
//! bound it by a deadline, as every facade's do.
//!
//! The facade is a migration-**aware** process (`docs/migration.md` §2.3, §9): its first
//! operation reads the table's marker `:rk:m:0000000000:`, and it reads it again every
//! `marker_ttl` (5 s); while the table migrates, reads go to the truth's table, a Put writes
//! the truth and mirrors into the other table before it returns, and pauses while the
//! migrator fences writes; after a finished migration the table's forwarding note sends every
//! operation to the new table ([`Aware`](rowkit_statemachines::tracestore::Aware)).
//! [`TraceStore::unaware`] keeps Gold's behaviour (the configured table, no marker).
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
//! let gold = block_on(TraceStore::open(driver, "gold", None)).unwrap();
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
use std::sync::{Mutex, PoisonError};

use rowkit_codec::migration::{MarkerRole, MigrationState};
use rowkit_codec::tracestore::{Layout, SetupRequest, detect_layout};
use rowkit_statemachines::check::{
    CheckError, CheckEvent, CheckOptions, CheckSummary, CheckTarget,
};
use rowkit_statemachines::operation::{Flow, Operation, OperationError, Start};
use rowkit_statemachines::tracestore::migrate::TablePair;
use rowkit_statemachines::tracestore::migrate::marker::{ReadTableMigration, TraceMigrationRead};
use rowkit_statemachines::tracestore::migrate::run::{
    MigrateTraceStore, TraceMigrateOptions, TraceMigrateOutcome,
};
use rowkit_statemachines::tracestore::{
    AllocateDigestIds, AssignDigestIds, Check, NewestTile, PUT_DEADLINE_MICROS, Put, PutEntry,
    READ_DEADLINE_MICROS, ReadDense, ReadRange, StreamTile, Tile, TraceBatch, TraceStoreConfig,
    TraceStoreError, TraceStoreEvent, TraceStoreSchema, TraceStoreState,
};
use rowkit_statemachines::{Code, StoreError};

use crate::calls::Calls;
use crate::{CallOptions, Driver, run_operation};

/// A store failure as the trace store's error.
fn store_error(e: StoreError) -> TraceStoreError {
    TraceStoreError::store(e)
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
    Ok(detect_layout(&names, named)?)
}

/// The facade's state lent to one operation. Dropping it gives the state back, also when the
/// call's future is dropped before it ends (a cancelled call): an operation that stops halfway
/// leaves its state consistent (it releases what it holds), so its caches and the pooled digest
/// ids it did not hand out stay with the facade. Ids it drew from the pool and had not written
/// yet are dropped, never handed out twice — as Gold's pool is on restart.
struct LentState<'f, D> {
    facade: &'f TraceStore<D>,
    /// `Some` until dropped.
    state: Option<TraceStoreState>,
}

impl<D> LentState<'_, D> {
    /// The lent state.
    fn get(&mut self) -> &mut TraceStoreState {
        self.state.get_or_insert_with(|| self.facade.fresh_state())
    }
}

impl<D> Drop for LentState<'_, D> {
    /// Gives the state back. When another operation's state came back first, that one stays
    /// and only this one's unused pooled ids join its pool (so no pooled id is handed out
    /// twice; this state's caches are dropped).
    fn drop(&mut self) {
        let Some(state) = self.state.take() else {
            return;
        };
        let mut slot = self
            .facade
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match slot.as_mut() {
            None => *slot = Some(state),
            Some(kept) => kept.return_digest_ids(&state.pool().collect::<Vec<_>>()),
        }
    }
}

/// One open trace store table over a driver (see the module doc).
pub struct TraceStore<D> {
    driver: D,
    table: String,
    layout: Layout,
    /// How the facade's states treat migrations (aware unless [`TraceStore::unaware`]).
    config: TraceStoreConfig,
    /// The state between operations; an operation takes it out while it runs (`None` then),
    /// so a call that starts meanwhile runs on a fresh state (see [`TraceStore::run`]).
    state: Mutex<Option<TraceStoreState>>,
    calls: Calls,
}

impl<D> core::fmt::Debug for TraceStore<D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TraceStore")
            .field("table", &self.table)
            .field("layout", &self.layout)
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

impl<D> TraceStore<D> {
    /// A fresh state for an operation: the table, its layout and the facade's config.
    fn fresh_state(&self) -> TraceStoreState {
        let mut state = TraceStoreState::new(self.table.as_str(), self.layout);
        state.config = self.config;
        state
    }
}

impl<D: Driver> TraceStore<D> {
    /// Opens `table`: the layout is detected from its families, or checked against `named`
    /// (`spec/tracestore.md` 8.3). Default [`CallOptions`].
    pub async fn open(
        driver: D,
        table: &str,
        named: Option<Layout>,
    ) -> Result<TraceStore<D>, TraceStoreError> {
        let families = driver.families(table).await.map_err(store_error)?;
        let layout = layout_of(&families, named)?;
        Ok(TraceStore::with_layout(driver, table, layout))
    }

    /// Opens `table` in `layout` without reading its schema (for drivers that cannot: a
    /// gateway). Default [`CallOptions`]; a migration-aware process (see the module doc).
    pub fn with_layout(driver: D, table: &str, layout: Layout) -> TraceStore<D> {
        let config = TraceStoreConfig {
            migration_aware: true,
            ..TraceStoreConfig::default()
        };
        let mut facade = TraceStore {
            driver,
            table: table.into(),
            layout,
            config,
            state: Mutex::new(None),
            calls: Calls::default(),
        };
        *facade
            .state
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner) = Some(facade.fresh_state());
        facade
    }

    /// The facade as an *unaware* process, as Gold's: every operation on the configured table,
    /// no marker read, no mirror, no pause — the migration's gates must wait for it
    /// (`docs/migration.md` §6.2). For Gold's own writers and readers (the simulator's, the
    /// tests'); the state's caches are kept.
    pub fn unaware(mut self) -> Self {
        self.config.migration_aware = false;
        self.state().config = self.config;
        self
    }

    /// Seeds every operation and, if `options` set one, bounds every operation by its
    /// deadline instead of the spec's (4 minutes for reads, 10 for Put).
    pub fn with_options(mut self, options: CallOptions) -> Self {
        self.calls = Calls::new(options);
        self
    }

    /// The options.
    pub fn options(&self) -> CallOptions {
        self.calls.options()
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.driver
    }

    /// The table's id (the one opened: while it migrates, an aware facade's operations run
    /// on the table its marker names the truth).
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The layout of the table.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The instance state (caches, id pool), exclusively: no operation runs while it is
    /// borrowed (e.g. to `clear_digest_cache`).
    pub fn state(&mut self) -> &mut TraceStoreState {
        let fresh = self.fresh_state();
        self.state
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(fresh)
    }

    /// The state for an operation, lent until the returned guard drops: taken out of the
    /// facade, or a fresh one while another operation holds it.
    fn lend_state(&self) -> LentState<'_, D> {
        let mut slot = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = slot.take().unwrap_or_else(|| self.fresh_state());
        LentState {
            facade: self,
            state: Some(state),
        }
    }

    /// The start of an operation whose own deadline is `default_micros` (unless the options
    /// set one for every operation).
    fn start(&self, default_micros: i64) -> Start {
        self.calls.start(self.driver.now(), default_micros)
    }

    /// Runs the operation `op` builds on the facade's state, handing its events to
    /// `on_event`, and keeps the state it leaves.
    async fn run<F: Flow<Schema = TraceStoreSchema>>(
        &self,
        op: impl for<'s> FnOnce(&'s mut TraceStoreState) -> Operation<'s, F>,
        on_event: impl FnMut(TraceStoreEvent),
    ) -> Result<F::Output, TraceStoreError> {
        let mut lent = self.lend_state();
        run_operation(&self.driver, op(lent.get()), on_event).await
    }

    /// Checks the table (`spec/check.md` §2) until `timeout` µs from now; findings and
    /// progress go to `on_event`. Nothing in a trace store is repairable: `options.fix`
    /// changes nothing.
    pub async fn check(
        &self,
        options: CheckOptions,
        timeout: i64,
        on_event: impl FnMut(CheckEvent),
    ) -> Result<CheckSummary, CheckError> {
        // Its own `timeout`, not the operations' deadline: a check runs as long as it is let.
        let start = self.calls.start_within(self.driver.now(), timeout);
        let target = CheckTarget::new(&self.table);
        let m = Check::new(target, self.layout, options, start);
        run_operation(&self.driver, m, on_event).await
    }

    /// `rowkit gold migrate --to L --target-table T2` (`docs/migration.md` §5): migrates this
    /// table into `target_table` — which must exist as a table of the other layout, and be
    /// empty unless a run is in progress (§11.6: a browser or remote host cannot set tables
    /// up) — as far as `options.gates` allow, starting a run or resuming the one the markers
    /// name ([`MigrateTraceStore`]). Its events (progress after every tile, marker changes,
    /// stragglers, conflicts) go to `on_event`. Runs until `timeout` µs from now: the run waits
    /// the settle time `Δ` before the switch, the clean-up and the rollback.
    pub async fn migrate(
        &self,
        target_table: &str,
        options: TraceMigrateOptions,
        timeout: i64,
        on_event: impl FnMut(TraceStoreEvent),
    ) -> Result<TraceMigrateOutcome, TraceStoreError> {
        let to = match self.layout {
            Layout::Md5 => Layout::DigestId,
            Layout::DigestId => Layout::Md5,
        };
        let setup = || {
            TraceStoreError::MigrationUsage(format!(
                "the target table {target_table} must be an empty table of the {} layout: \
                 rowkit gold setup --table {target_table} --layout {}",
                to.name(),
                to.name()
            ))
        };
        let families = self.driver.families(target_table).await.map_err(|e| {
            if e.code == Code::NotFound {
                setup()
            } else {
                store_error(e)
            }
        })?;
        if layout_of(&families, None).ok() != Some(to) {
            return Err(setup());
        }
        if self.read_migration().await?.marker.is_none() {
            let start = self.start(READ_DEADLINE_MICROS);
            let target = TraceStoreState::new(target_table, to);
            let newest = run_operation(&self.driver, NewestTile::new(target, start), |_| {});
            if newest.await?.is_some() {
                return Err(setup());
            }
        }
        let pair = TablePair::new(
            TraceStoreState::new(self.table.as_str(), self.layout),
            TraceStoreState::new(target_table, to),
        );
        let start = self.calls.start_within(self.driver.now(), timeout);
        let m = MigrateTraceStore::new(pair, to, options, start);
        run_operation(&self.driver, m, on_event).await
    }

    /// `rowkit gold migrate --finish --drop-source` (`docs/migration.md` §5.8): deletes this
    /// table — the source of a migration whose clean-up is complete (its marker `cleaning`,
    /// the target it names holding no marker) — so that a Gold process still configured on
    /// it fails loudly (`NOT_FOUND`) instead of writing where no one reads. Refused with one
    /// usage line, nothing deleted, when the migration is not complete; a driver without table
    /// administration (a browser host) answers with its one-line `UNIMPLEMENTED`.
    pub async fn drop_source(&self) -> Result<(), TraceStoreError> {
        let not_complete = |why: String| {
            TraceStoreError::MigrationUsage(format!(
                "--drop-source deletes table {} only after a complete clean-up: {why}",
                self.table
            ))
        };
        let marker = self.read_migration().await?.marker;
        let Some(m) = marker.filter(|m| m.role == Some(MarkerRole::Source)) else {
            return Err(not_complete("it is not the source of a migration".into()));
        };
        let target = m.target_table.clone().unwrap_or_default();
        let start = self.start(READ_DEADLINE_MICROS);
        let read = ReadTableMigration::new(TraceStoreState::new(target.as_str(), m.to), start);
        let target_marker = run_operation(&self.driver, read, |_| {}).await?.marker;
        if m.state != MigrationState::Cleaning || target_marker.is_some() {
            return Err(not_complete(format!(
                "its migration into {target} is {}",
                m.state
            )));
        }
        self.driver
            .delete_table(&self.table)
            .await
            .map_err(store_error)
    }

    /// The table's migration state as the migrator reads it (`docs/migration.md` §2.1): its
    /// marker row's marker and checkpoint (`rowkit gold migrate`'s status, the browser tool's).
    pub async fn read_migration(&self) -> Result<TraceMigrationRead, TraceStoreError> {
        let start = self.start(READ_DEADLINE_MICROS);
        let source = TraceStoreState::new(self.table.as_str(), self.layout);
        run_operation(&self.driver, ReadTableMigration::new(source, start), |_| {}).await
    }

    /// `Put`: writes `entries` at commit `repo_index` with cell timestamp `ts`; returns the
    /// row keys written, in entry order. While the table migrates (an aware facade), the rows
    /// are the truth's table's, and the same Put is mirrored into the other table first.
    pub async fn put(
        &self,
        repo_index: i64,
        commit_time: Option<Timestamp>,
        entries: Vec<PutEntry>,
        ts: Timestamp,
    ) -> Result<Vec<Vec<u8>>, TraceStoreError> {
        let start = self.start(PUT_DEADLINE_MICROS);
        self.run(
            |state| Put::new(state, repo_index, commit_time, entries, ts, start),
            |_| {},
        )
        .await
    }

    /// `ReadRange(first, last)`.
    pub async fn read_range(&self, first: i64, last: i64) -> Result<Tile, TraceStoreError> {
        let start = self.start(READ_DEADLINE_MICROS);
        self.run(|state| ReadRange::new(state, first, last, start), |_| {})
            .await
    }

    /// `StreamTile(index)`: the tile's traces handed to `on_batch` as they arrive (options are
    /// not read); resolves to how many traces were handed over.
    pub async fn stream_tile(
        &self,
        index: u32,
        mut on_batch: impl FnMut(TraceBatch),
    ) -> Result<usize, TraceStoreError> {
        let start = self.start(READ_DEADLINE_MICROS);
        self.run(
            |state| StreamTile::new(state, index, start),
            |e| {
                // Only traces are handed over; any other event (none yet) is not this call's
                // output.
                if let TraceStoreEvent::Traces(batch) = e {
                    on_batch(batch)
                }
            },
        )
        .await
    }

    /// `ReadDense(last, n)`.
    pub async fn read_dense(&self, last: i64, n: usize) -> Result<Tile, TraceStoreError> {
        let start = self.start(READ_DEADLINE_MICROS);
        self.run(|state| ReadDense::new(state, last, n, start), |_| {})
            .await
    }

    /// `NewestTile`.
    pub async fn newest_tile(&self) -> Result<Option<u32>, TraceStoreError> {
        let start = self.start(READ_DEADLINE_MICROS);
        self.run(|state| NewestTile::new(state, start), |_| {})
            .await
    }

    /// `AssignDigestIds` (digest-id layout).
    pub async fn assign_digest_ids(
        &self,
        digests: Vec<String>,
    ) -> Result<Vec<u64>, TraceStoreError> {
        let start = self.start(PUT_DEADLINE_MICROS);
        self.run(|state| AssignDigestIds::new(state, digests, start), |_| {})
            .await
    }

    /// `AllocateDigestIds` (digest-id layout).
    pub async fn allocate_digest_ids(&self, n: usize) -> Result<Vec<u64>, TraceStoreError> {
        let start = self.start(PUT_DEADLINE_MICROS);
        self.run(|state| AllocateDigestIds::new(state, n, start), |_| {})
            .await
    }
}
