//! [`MountTable`]: the Vanadium mount table (btmtd layout, `spec/mounttable.md`) over any
//! [`Driver`].
//!
//! Every operation creates its machine from `rowkit_statemachines::mounttable` with the call's
//! context (tables, caller, limits) and the call's [`Start`] drawn from the facade's
//! [`CallOptions`] (set with [`MountTable::with_options`]: the seed stream, and a deadline that
//! replaces btmtd's — 60 s, fsck 1 h — and its 60 s least request deadline), and runs it with
//! [`crate::run`]. Node reads go through the
//! hot-row cache ([`RowCached`], §15) unless [`MtConfig::row_cache_capacity`] is 0; a hit
//! hands the machine the cached row itself (shared), and the cache gives it back the node a
//! machine decoded from that row before ([`MountTable::nodes`]), so a walk through a hot
//! directory neither copies nor decodes it again.
//!
//! Writes are not serialised here: every store stamps server time (`-1`) when it applies a
//! write, as Bigtable does, so concurrent writers from many threads or tasks are safe.
//!
//! ```
//! use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};
//! use rowkit_codec::mounttable::MountFlags;
//! use rowkit_client::{SyncDriver, block_on};
//! use rowkit_store::MemoryStore;
//! use rowkit_store::driver::ManualClock;
//! use rowkit_statemachines::Timestamp;
//!
//! let store = MemoryStore::new();
//! let clock = ManualClock::new(Timestamp::from_secs(1_700_000_000));
//! let mt = MountTable::new(SyncDriver::new(&store, &clock), MtConfig::default());
//! block_on(mt.setup(None)).unwrap();
//! let me = server_caller();
//! block_on(mt.mount(&me, "a/b", "/addr:1", 60, MountFlags::default())).unwrap();
//! let entry = block_on(mt.resolve(&me, "a/b")).unwrap();
//! assert_eq!(entry.servers[0].server, "/addr:1");
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use rowkit_codec::model::{ColumnFamily, GcRule};
use rowkit_codec::mounttable::{AccessList, Caller, MountFlags, NodeRow, Permissions};
use rowkit_statemachines::check::{CheckEvent, CheckSummary, Finding};
use rowkit_statemachines::mounttable::{
    self as mt, FsckSummary, Limits, MountEntry, Mounted, MtCtx, MtError, MtEvent, Nodes,
    PermsAndVersion, Primitive, PrimitiveOutput, REQUEST_FLOOR_US, ROW_CACHE_CAPACITY, Tables,
};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::{Machine, StoreError};

use crate::calls::Calls;
use crate::row_cache::RowCached;
use crate::{CallOptions, Driver, ensure_table};

/// btmtd's operation deadline (§17).
pub const DEFAULT_TIMEOUT_MICROS: i64 = 60_000_000;
/// The seed of a facade without options (the mount table's first, kept so that the versions
/// it draws stay as they were).
pub const DEFAULT_SEED: u64 = 1;
/// Fsck's deadline, as btmtd's CLI gives it.
pub const FSCK_TIMEOUT_MICROS: i64 = 3_600_000_000;

/// Settings of a [`MountTable`].
#[derive(Clone, Debug)]
pub struct MtConfig {
    /// Node and counter tables.
    pub tables: Tables,
    /// Per-creator limits.
    pub limits: Limits,
    /// GC grace period in µs.
    pub gc_grace_us: i64,
    /// Access list granting every tag.
    pub global_acl: AccessList,
    /// How many node rows the hot-row cache keeps, each with the node decoded from it (0: no
    /// cache). Size it so that the hot set of the walks fits: the directories on the walked
    /// paths plus the leaves read between two visits of one directory (default
    /// [`ROW_CACHE_CAPACITY`], 10,000). Memory grows with the rows kept: a directory's row and
    /// its decoded node cost a few hundred bytes per child.
    pub row_cache_capacity: usize,
}

impl Default for MtConfig {
    fn default() -> Self {
        MtConfig {
            tables: Tables::default(),
            limits: Limits::default(),
            gc_grace_us: 60_000_000,
            global_acl: AccessList::default(),
            row_cache_capacity: ROW_CACHE_CAPACITY,
        }
    }
}

/// Families of the node table and the counter table (§5): `max_num_versions = 1` each.
pub fn table_families() -> (Vec<ColumnFamily>, Vec<ColumnFamily>) {
    let fam = |name: &str| ColumnFamily {
        name: name.into(),
        gc_rule: Some(GcRule::MaxNumVersions(1)),
    };
    (vec![fam("m"), fam("s"), fam("c")], vec![fam("m")])
}

/// The server itself as caller (no names; creator `self:?:ServerUser`).
pub fn server_caller() -> Caller {
    Caller {
        blessing_names: Vec::new(),
        is_server: true,
    }
}

/// What receives the warnings of a facade's operations ([`MtEvent::Warning`]: failures the
/// original only logged), with the step that failed.
pub type WarningSink = Arc<dyn Fn(&'static str, &MtError) + Send + Sync>;

/// The mount table over a driver (see the module doc).
pub struct MountTable<D> {
    driver: RowCached<D>,
    config: MtConfig,
    calls: Calls,
    warnings: Option<WarningSink>,
}

impl<D> core::fmt::Debug for MountTable<D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MountTable")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<D: Driver> MountTable<D> {
    /// A facade with `config` over `driver`, seed [`DEFAULT_SEED`] and btmtd's deadlines.
    pub fn new(driver: D, config: MtConfig) -> MountTable<D> {
        MountTable {
            driver: RowCached::new(driver, &config.tables.node, config.row_cache_capacity),
            config,
            calls: Calls::new(CallOptions {
                seed: DEFAULT_SEED,
                deadline_micros: None,
            }),
            warnings: None,
        }
    }

    /// Seeds every operation and, if `options` set one, bounds every operation by its
    /// deadline instead of btmtd's, its requests included (no 60 s least request deadline).
    pub fn with_options(mut self, options: CallOptions) -> MountTable<D> {
        self.calls = Calls::new(options);
        self
    }

    /// The options.
    pub fn options(&self) -> CallOptions {
        self.calls.options()
    }

    /// Sends every operation's warnings to `sink` as well (by default they reach only the
    /// `on_event` of [`MountTable::run`] and [`MountTable::fsck`]).
    pub fn with_warning_sink(
        mut self,
        sink: impl Fn(&'static str, &MtError) + Send + Sync + 'static,
    ) -> MountTable<D> {
        self.warnings = Some(Arc::new(sink));
        self
    }

    /// The settings.
    pub fn config(&self) -> &MtConfig {
        &self.config
    }

    /// The driver underneath the cache.
    pub fn driver(&self) -> &D {
        self.driver.inner()
    }

    /// How many node-row reads the hot-row cache has sent to the store so far (concurrent
    /// reads of one row count once; hits count nothing).
    pub fn cache_fetches(&self) -> u64 {
        self.driver.fetches()
    }

    /// Where machines find the nodes decoded from the rows the hot-row cache hands out: the
    /// [`MtCtx::nodes`] of every call, and of machines given to [`MountTable::run`] that should
    /// share them.
    pub fn nodes(&self) -> Nodes {
        self.driver.nodes()
    }

    /// The context of a call by `caller`: a deadline set in the options is the caller's
    /// own, so its requests end there too.
    fn ctx(&self, caller: &Caller) -> MtCtx {
        let request_floor_us = match self.calls.options().deadline_micros {
            Some(_) => 0,
            None => REQUEST_FLOOR_US,
        };
        MtCtx {
            tables: self.config.tables.clone(),
            caller: caller.clone(),
            global_acl: self.config.global_acl.clone(),
            limits: self.config.limits,
            gc_grace_us: self.config.gc_grace_us,
            request_floor_us,
            nodes: self.nodes(),
        }
    }

    /// The next call's start: aborted after the options' deadline, else `default_micros`.
    fn start(&self, default_micros: i64) -> Start {
        self.calls.start(self.driver.now(), default_micros)
    }

    /// Drives `machine` through the cache, handing every event to `on_event` (and warnings to
    /// the [warning sink](MountTable::with_warning_sink) too).
    pub async fn run<M>(
        &self,
        machine: M,
        mut on_event: impl FnMut(MtEvent),
    ) -> Result<M::Output, MtError>
    where
        M: Machine<Event = MtEvent, Error = MtError>,
    {
        let sink = self.warnings.clone();
        let on_event = move |event: MtEvent| {
            if let (Some(sink), MtEvent::Warning { step, error }) = (&sink, &event) {
                sink(step, error);
            }
            on_event(event);
        };
        crate::run_operation(&self.driver, machine, on_event).await
    }

    async fn run_quiet<M>(&self, machine: M) -> Result<M::Output, MtError>
    where
        M: Machine<Event = MtEvent, Error = MtError>,
    {
        self.run(machine, |_| {}).await
    }

    /// Creates the node and counter tables (counter first, as btmtd), ignoring "exists".
    pub async fn create_tables(&self) -> Result<(), StoreError> {
        let (node, counter) = table_families();
        ensure_table(self.driver(), &self.config.tables.counter, &counter).await?;
        ensure_table(self.driver(), &self.config.tables.node, &node).await
    }

    /// §5 setup: tables, then the initial nodes (from a permissions file if given).
    pub async fn setup(
        &self,
        perms_file: Option<BTreeMap<String, Permissions>>,
    ) -> Result<(), MtError> {
        self.create_tables().await?;
        let m = mt::CreateInitialNodes::new(
            self.ctx(&server_caller()),
            perms_file,
            self.start(DEFAULT_TIMEOUT_MICROS),
        );
        self.run_quiet(m).await
    }

    /// Mount; returns what it wrote (the node's row key and the deadline, µs).
    pub async fn mount(
        &self,
        caller: &Caller,
        name: &str,
        server: &str,
        ttl_s: u32,
        flags: MountFlags,
    ) -> Result<Mounted, MtError> {
        let start = self.start(DEFAULT_TIMEOUT_MICROS);
        let m = mt::Mount::new(self.ctx(caller), name, server, ttl_s, flags, start);
        self.run_quiet(m).await
    }

    /// Unmount (`server = ""`: all).
    pub async fn unmount(&self, caller: &Caller, name: &str, server: &str) -> Result<(), MtError> {
        let m = mt::Unmount::new(
            self.ctx(caller),
            name,
            server,
            self.start(DEFAULT_TIMEOUT_MICROS),
        );
        self.run_quiet(m).await
    }

    /// ResolveStep.
    pub async fn resolve(&self, caller: &Caller, name: &str) -> Result<MountEntry, MtError> {
        let m = mt::ResolveStep::new(self.ctx(caller), name, self.start(DEFAULT_TIMEOUT_MICROS));
        self.run_quiet(m).await
    }

    /// Glob under `name`; entries in emission order.
    pub async fn glob(
        &self,
        caller: &Caller,
        name: &str,
        pattern: &str,
    ) -> Result<Vec<MountEntry>, MtError> {
        let m = mt::Glob::new(
            self.ctx(caller),
            name,
            pattern,
            self.start(DEFAULT_TIMEOUT_MICROS),
        );
        let mut out = Vec::new();
        self.run(m, |e| {
            if let MtEvent::GlobEntry(entry) = e {
                out.push(entry);
            }
        })
        .await?;
        Ok(out)
    }

    /// Delete.
    pub async fn delete(&self, caller: &Caller, name: &str, subtree: bool) -> Result<(), MtError> {
        let m = mt::Delete::new(
            self.ctx(caller),
            name,
            subtree,
            self.start(DEFAULT_TIMEOUT_MICROS),
        );
        self.run_quiet(m).await
    }

    /// GetPermissions.
    pub async fn get_permissions(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<PermsAndVersion, MtError> {
        let m = mt::GetPermissions::new(self.ctx(caller), name, self.start(DEFAULT_TIMEOUT_MICROS));
        self.run_quiet(m).await
    }

    /// SetPermissions (`version = ""`: any).
    pub async fn set_permissions(
        &self,
        caller: &Caller,
        name: &str,
        perms: Permissions,
        version: &str,
    ) -> Result<PermsAndVersion, MtError> {
        let start = self.start(DEFAULT_TIMEOUT_MICROS);
        let m = mt::SetPermissions::new(self.ctx(caller), name, perms, version, start);
        self.run_quiet(m).await
    }

    /// Fsck, as the server with a 1 h deadline (as btmtd's CLI) unless the options set one;
    /// findings and progress go to `on_event`.
    pub async fn fsck(
        &self,
        fix: bool,
        on_event: impl FnMut(MtEvent),
    ) -> Result<FsckSummary, MtError> {
        let start = self.start(FSCK_TIMEOUT_MICROS);
        let m = mt::Fsck::new(self.ctx(&server_caller()), fix, start);
        self.run(m, on_event).await
    }

    /// The mount table's check (`spec/check.md` §1): fsck as the server, each finding as a
    /// check [`Finding`] to `on_event`, repaired when `fix` fixed it, and the rows read so far
    /// after each page as progress. Inconsistencies are findings, not an error; counters that
    /// differ from the nodes (tolerated, §17) are notes.
    pub async fn check(
        &self,
        fix: bool,
        mut on_event: impl FnMut(CheckEvent),
    ) -> Result<CheckSummary, MtError> {
        let mut summary = CheckSummary::default();
        // fsck reports a finding again when a later pass changes what became of it: it is
        // counted once, and fixed and left are fsck's own counts.
        let mut seen = std::collections::BTreeSet::new();
        let outcome = self
            .fsck(fix, |event| {
                if let MtEvent::FsckPage { rows } = event {
                    summary.rows_scanned += rows;
                    on_event(CheckEvent::Progress {
                        rows_scanned: summary.rows_scanned,
                        findings: seen.len() as u64,
                    });
                } else if let MtEvent::FsckFinding {
                    row_key,
                    kind,
                    fixed,
                    detail,
                } = event
                {
                    let finding = Finding {
                        schema: "mt",
                        kind: kind.name(),
                        row_key,
                        detail,
                        repair: kind.repair().map(String::from),
                        repaired: fixed,
                    };
                    if seen.insert((finding.row_key.clone(), finding.kind)) {
                        *summary
                            .findings_by_kind
                            .entry(finding.kind.into())
                            .or_insert(0) += 1;
                    }
                    on_event(CheckEvent::Finding(finding));
                }
            })
            .await;
        let fsck = match outcome {
            Ok(fsck) | Err(MtError::FsckInconsistent(fsck)) => fsck,
            Err(e) => return Err(e),
        };
        summary.repaired = fsck.fixed.len() as u64;
        summary.left = (fsck.left.len() + fsck.undecodable.len()) as u64;
        for (key, detail) in &fsck.counters {
            let rebuilt = if fix { " (rebuilt)" } else { "" };
            let key = rowkit_codec::escape::escape(key);
            summary
                .notes
                .push(format!("counter row {key}: {detail}{rebuilt}"));
        }
        Ok(summary)
    }

    /// Every counter row.
    pub async fn counters(&self) -> Result<BTreeMap<Vec<u8>, i64>, MtError> {
        let m = mt::ReadCounters::new(
            self.ctx(&server_caller()),
            self.start(DEFAULT_TIMEOUT_MICROS),
        );
        self.run_quiet(m).await
    }

    /// Runs one internal primitive as `caller`.
    pub async fn primitive(
        &self,
        caller: &Caller,
        p: Primitive,
    ) -> Result<PrimitiveOutput, MtError> {
        let m = mt::PrimitiveOp::new(self.ctx(caller), p, self.start(DEFAULT_TIMEOUT_MICROS));
        self.run_quiet(m).await
    }

    /// `getNode(name)` (through the cache).
    pub async fn get_node(&self, name: &str) -> Result<Option<NodeRow>, MtError> {
        match self
            .primitive(&server_caller(), Primitive::GetNode { name: name.into() })
            .await?
        {
            PrimitiveOutput::Node(n) => Ok(n.map(|b| *b)),
            PrimitiveOutput::Done => Ok(None),
        }
    }
}
