//! `MountTable`: the typed, synchronous facade over the mounttable machines
//! (`spec/mounttable.md`), for any [`Store`] and [`Clock`].
//!
//! It owns the hot-row cache (§15): node-row reads (`ReadRow(node table, key, LatestN(1))`)
//! go through a shared [`RowCache`] behind a mutex, so concurrent reads of one row from many
//! threads cost one store request; from the moment a `MutateRow`/`CheckAndMutateRow` on a
//! node row is sent until it is answered, reads of that row bypass the cache, and the entry is
//! dropped ([`RowCache::begin_write`]). Machines never see the cache. Each call draws its machine seed from
//! one SplitMix64 stream (`nth_output(seed, n)`), so a single-threaded sequence of calls is
//! reproducible.
//!
//! The Tokio facade (`rowkit_bigtable::mounttable::MountTable`) follows the same shape and
//! shares the driver-independent parts: [`MtConfig`], [`MtCalls`] (contexts and seeds),
//! [`NodeRowCache`] and the request classification of the cache.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use rowkit_codec::model::{ColumnFamily, GcRule, Row, RowFilter, Timestamp};
use rowkit_codec::mounttable::{Caller, Permissions};
use rowkit_statemachines::mounttable::{
    self as mt, FsckSummary, Limits, Lookup, MountEntry, MtCtx, MtError, MtEvent, PermsAndVersion,
    Primitive, PrimitiveOutput, RowCache, Tables, WaiterId,
};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    Code, Machine, ReadRowsResponse, Request, Response, RetryPolicy, SplitMix64, StoreError,
};

use crate::driver::{self, Clock, RunError};
use crate::{Reply, Store};

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
    pub global_acl: rowkit_codec::mounttable::AccessList,
    /// Operation deadline, from the start of each call, in µs.
    pub deadline_us: i64,
    /// Base seed of every machine's randomness.
    pub seed: u64,
    /// Whether node reads go through the hot-row cache.
    pub row_cache: bool,
}

impl Default for MtConfig {
    fn default() -> Self {
        MtConfig {
            tables: Tables::default(),
            limits: Limits::default(),
            gc_grace_us: 60_000_000,
            global_acl: Default::default(),
            deadline_us: 60_000_000,
            seed: 1,
            row_cache: true,
        }
    }
}

/// What a waiter of a coalesced node read is told by the read it waited for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheAnswer {
    /// The fetched row (`None`: no such row).
    Row(Option<Row>),
    /// The fetch failed or found nothing cacheable: send your own read.
    Fetch,
}

/// The hot-row cache of a facade (§15) and the answers owed to coalesced waiters: the
/// driver-independent half of the cache, shared by this sync facade (behind a mutex and a
/// condvar) and the Tokio facade of `rowkit-bigtable` (behind a mutex and a `Notify`).
#[derive(Debug, Default)]
pub struct NodeRowCache {
    cache: RowCache,
    answers: BTreeMap<WaiterId, CacheAnswer>,
    /// Waiters that left before their answer (a cancelled async read): never answered, and
    /// a fetch handed to one of them is passed on at once.
    abandoned: std::collections::BTreeSet<WaiterId>,
}

impl NodeRowCache {
    /// Looks `key` up at `now`: a hit, a fetch to send, or a wait for someone else's fetch.
    pub fn lookup(&mut self, key: &[u8], now: Timestamp) -> Lookup {
        self.cache.lookup(key, now)
    }

    /// The answer for waiter `id`, once the fetch it waits for completed.
    pub fn take_answer(&mut self, id: WaiterId) -> Option<CacheAnswer> {
        self.answers.remove(&id)
    }

    /// Records the end of fetch `id` of `key` (`row`: the fetched row, `None` if missing or
    /// failed) and leaves an answer for every waiter it serves; wake all waiters after.
    pub fn complete(&mut self, key: &[u8], id: WaiterId, row: Option<Row>, now: Timestamp) {
        let done = self.cache.complete(key, id, row.clone(), now);
        for w in done.answered.iter().filter(|w| **w != id) {
            if !self.abandoned.remove(w) {
                self.answers.insert(*w, CacheAnswer::Row(row.clone()));
            }
        }
        if let Some(next) = done.next_fetcher {
            if self.abandoned.remove(&next) {
                self.complete(key, next, None, now);
            } else {
                self.answers.insert(next, CacheAnswer::Fetch);
            }
        }
    }

    /// Waiter `id` of `key` leaves without its answer (its read was cancelled): if it was
    /// handed the fetch, the fetch passes to the next waiter; wake all waiters after.
    pub fn abandon(&mut self, key: &[u8], id: WaiterId, now: Timestamp) {
        match self.answers.remove(&id) {
            Some(CacheAnswer::Fetch) => self.complete(key, id, None, now),
            Some(CacheAnswer::Row(_)) => {}
            None => {
                self.abandoned.insert(id);
            }
        }
    }

    /// A write to node row `key` is about to be sent: until [`NodeRowCache::end_write`],
    /// reads of `key` go to the store and nothing is cached ([`RowCache::begin_write`]).
    pub fn begin_write(&mut self, key: &[u8]) {
        self.cache.begin_write(key);
    }

    /// The write announced by [`NodeRowCache::begin_write`] was answered or failed.
    pub fn end_write(&mut self, key: &[u8]) {
        self.cache.end_write(key);
    }
}

/// The node row `request` reads, if it is a node read the cache may answer
/// (`ReadRow(node table, key, LatestN(1))`).
pub fn cached_node_read(request: &Request, node_table: &str) -> Option<Vec<u8>> {
    match request {
        Request::ReadRows(r)
            if r.table == node_table
                && r.rows.row_keys.len() == 1
                && r.rows.row_ranges.is_empty()
                && r.filter == Some(RowFilter::CellsPerColumnLimit(1))
                && r.rows_limit == 0
                && !r.reversed =>
        {
            r.rows.row_keys.first().cloned()
        }
        _ => None,
    }
}

/// The node row `request` writes, if any: its cache entry must be invalidated.
pub fn node_write(request: &Request, node_table: &str) -> Option<Vec<u8>> {
    match request {
        Request::MutateRow(r) if r.table == node_table => Some(r.row_key.clone()),
        Request::CheckAndMutateRow(r) if r.table == node_table => Some(r.row_key.clone()),
        _ => None,
    }
}

/// Whether `request` writes.
pub fn is_write(request: &Request) -> bool {
    matches!(
        request,
        Request::MutateRow(_)
            | Request::MutateRows(_)
            | Request::CheckAndMutateRow(_)
            | Request::ReadModifyWriteRow(_)
    )
}

/// A cached node row as the read reply a store would give (one part, or none if missing).
pub fn cached_reply_parts(row: Option<Row>) -> Vec<Result<Response, StoreError>> {
    match row {
        Some(row) => vec![Ok(Response::ReadRowsPart(ReadRowsResponse {
            chunks: crate::semantics::row_chunks(&row, None),
            last_scanned_row_key: Vec::new(),
        }))],
        None => Vec::new(),
    }
}

/// The driver-independent part of a facade call: the settings, the operation context and the
/// seed stream (`nth_output(seed, n)` for the n-th call, so a single-threaded sequence of calls
/// is reproducible). Shared by the sync and the Tokio facades.
#[derive(Debug)]
pub struct MtCalls {
    config: MtConfig,
    calls: AtomicU64,
}

impl MtCalls {
    /// Calls with `config`.
    pub fn new(config: MtConfig) -> MtCalls {
        MtCalls {
            config,
            calls: AtomicU64::new(0),
        }
    }

    /// The settings.
    pub fn config(&self) -> &MtConfig {
        &self.config
    }

    /// The context of a call by `caller` starting at `now` (deadline `now + deadline_us`).
    pub fn ctx(&self, caller: &Caller, now: Timestamp) -> MtCtx {
        MtCtx {
            tables: self.config.tables.clone(),
            caller: caller.clone(),
            global_acl: self.config.global_acl.clone(),
            limits: self.config.limits,
            gc_grace_us: self.config.gc_grace_us,
            deadline: now.saturating_add_micros(self.config.deadline_us),
        }
    }

    /// The context of `fsck` (the server as caller, a 1 h deadline, as the CLI).
    pub fn fsck_ctx(&self, now: Timestamp) -> MtCtx {
        let mut ctx = self.ctx(&server_caller(), now);
        ctx.deadline = now.saturating_add_micros(3_600_000_000);
        ctx
    }

    /// The next call's seed.
    pub fn seed(&self) -> u64 {
        SplitMix64::nth_output(self.config.seed, self.calls.fetch_add(1, Ordering::Relaxed))
    }
}

/// The store as the machines see it: node reads through the cache, node writes invalidating.
///
/// Writes go to the store as they come, concurrently, with the driver's `now`: server time
/// (`-1`, e.g. a node's new `m:v`) is stamped by the store when it applies the write, so a
/// later version never hides behind an earlier one (Bigtable stamps at apply time; the local
/// stores stamp inside the row's transaction, monotonic per store: `Store::execute`).
struct CachedStore<'a, S: ?Sized> {
    store: &'a S,
    node_table: &'a str,
    state: Option<&'a (Mutex<NodeRowCache>, Condvar)>,
}

fn lock(m: &Mutex<NodeRowCache>) -> MutexGuard<'_, NodeRowCache> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<S: Store + ?Sized> CachedStore<'_, S> {
    fn fetch(&self, request: &Request, now: Timestamp) -> Result<Option<Row>, StoreError> {
        let Request::ReadRows(r) = request else {
            return Err(StoreError::new(Code::Internal, "not a read"));
        };
        let mut rows = Vec::new();
        let clock = crate::driver::ManualClock::new(now);
        let m = ReadRows::new(r.clone(), now, 0, RetryPolicy::default());
        driver::run(self.store, &clock, m, |row| rows.push(row))
            .map_err(RunError::into_store_error)?;
        Ok(rows.into_iter().next())
    }

    fn cached_read(
        &self,
        state: &(Mutex<NodeRowCache>, Condvar),
        key: &[u8],
        request: &Request,
        now: Timestamp,
    ) -> Result<Option<Row>, StoreError> {
        let mut guard = lock(&state.0);
        let me = match guard.lookup(key, now) {
            Lookup::Hit(row) => return Ok(Some(row)),
            Lookup::Fetch(id) => id,
            Lookup::Wait(id) => loop {
                guard = state.1.wait(guard).unwrap_or_else(|p| p.into_inner());
                match guard.take_answer(id) {
                    Some(CacheAnswer::Row(row)) => return Ok(row),
                    Some(CacheAnswer::Fetch) => break id,
                    None => {}
                }
            },
        };
        drop(guard);
        let result = self.fetch(request, now);
        let row = result.as_ref().ok().cloned().flatten();
        lock(&state.0).complete(key, me, row, now);
        state.1.notify_all();
        result
    }
}

impl<S: Store + ?Sized> Store for CachedStore<'_, S> {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        let Some(state) = self.state else {
            return self.store.execute(request, now);
        };
        if let Some(key) = cached_node_read(&request, self.node_table) {
            let row = self.cached_read(state, &key, &request, now)?;
            return Ok(Reply::Stream(Box::new(cached_reply_parts(row).into_iter())));
        }
        if !is_write(&request) {
            return self.store.execute(request, now);
        }
        let write_key = node_write(&request, self.node_table);
        if let Some(key) = &write_key {
            lock(&state.0).begin_write(key);
        }
        let reply = self.store.execute(request, now);
        if let Some(key) = write_key {
            lock(&state.0).end_write(&key);
        }
        reply
    }

    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.store.create_table(table, families)
    }

    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.store.delete_table(table)
    }

    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        self.store.list_tables()
    }

    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.store.families(table)
    }

    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        self.store.set_family(table, family)
    }

    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError> {
        self.store.gc(table, now)
    }
}

/// The mount table over a store and a clock (see the module doc).
pub struct MountTable<'a, S: Store + ?Sized, C: Clock + Sync + ?Sized> {
    store: &'a S,
    clock: &'a C,
    calls: MtCalls,
    cache: (Mutex<NodeRowCache>, Condvar),
}

impl<S: Store + ?Sized, C: Clock + Sync + ?Sized> core::fmt::Debug for MountTable<'_, S, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MountTable")
            .field("config", self.calls.config())
            .finish()
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

impl<'a, S: Store + ?Sized, C: Clock + Sync + ?Sized> MountTable<'a, S, C> {
    /// A facade with `config` over `store` and `clock`.
    pub fn new(store: &'a S, clock: &'a C, config: MtConfig) -> Self {
        MountTable {
            store,
            clock,
            calls: MtCalls::new(config),
            cache: (Mutex::new(NodeRowCache::default()), Condvar::new()),
        }
    }

    /// The settings.
    pub fn config(&self) -> &MtConfig {
        self.calls.config()
    }

    fn ctx(&self, caller: &Caller) -> MtCtx {
        self.calls.ctx(caller, self.clock.now())
    }

    fn seed(&self) -> u64 {
        self.calls.seed()
    }

    /// Drives `machine`, handing every event to `on_event`.
    pub fn run<M>(&self, machine: M, on_event: impl FnMut(MtEvent)) -> Result<M::Output, MtError>
    where
        M: Machine<Event = MtEvent, Error = MtError>,
    {
        let store = CachedStore {
            store: self.store,
            node_table: &self.calls.config().tables.node,
            state: self.calls.config().row_cache.then_some(&self.cache),
        };
        driver::run(&store, self.clock, machine, on_event).map_err(|e| match e {
            RunError::Machine(e) => e,
            RunError::Stalled => MtError::Internal {
                what: "machine stalled".into(),
            },
        })
    }

    fn run_quiet<M>(&self, machine: M) -> Result<M::Output, MtError>
    where
        M: Machine<Event = MtEvent, Error = MtError>,
    {
        self.run(machine, |_| {})
    }

    /// Creates the node and counter tables (counter first, as btmtd), ignoring "exists".
    pub fn create_tables(&self) -> Result<(), StoreError> {
        let (node, counter) = table_families();
        for (table, families) in [
            (&self.calls.config().tables.counter, counter),
            (&self.calls.config().tables.node, node),
        ] {
            match self.store.create_table(table, &families) {
                Ok(()) => {}
                Err(e) if e.code == Code::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// §5 setup: tables, then the initial nodes (from a permissions file if given).
    pub fn setup(&self, perms_file: Option<BTreeMap<String, Permissions>>) -> Result<(), MtError> {
        self.create_tables()?;
        let now = self.clock.now();
        let m =
            mt::CreateInitialNodes::new(self.ctx(&server_caller()), perms_file, now, self.seed());
        self.run_quiet(m)
    }

    /// Mount; returns the deadline written (µs).
    pub fn mount(
        &self,
        caller: &Caller,
        name: &str,
        server: &str,
        ttl_s: u32,
        flags: u32,
    ) -> Result<i64, MtError> {
        let m = mt::Mount::new(
            self.ctx(caller),
            name,
            server,
            ttl_s,
            flags,
            self.clock.now(),
            self.seed(),
        );
        self.run_quiet(m)
    }

    /// Unmount (`server = ""`: all).
    pub fn unmount(&self, caller: &Caller, name: &str, server: &str) -> Result<(), MtError> {
        let m = mt::Unmount::new(
            self.ctx(caller),
            name,
            server,
            self.clock.now(),
            self.seed(),
        );
        self.run_quiet(m)
    }

    /// ResolveStep.
    pub fn resolve(&self, caller: &Caller, name: &str) -> Result<MountEntry, MtError> {
        let m = mt::ResolveStep::new(self.ctx(caller), name, self.clock.now(), self.seed());
        self.run_quiet(m)
    }

    /// Glob under `name`; entries in emission order.
    pub fn glob(
        &self,
        caller: &Caller,
        name: &str,
        pattern: &str,
    ) -> Result<Vec<MountEntry>, MtError> {
        let m = mt::Glob::new(
            self.ctx(caller),
            name,
            pattern,
            self.clock.now(),
            self.seed(),
        );
        let mut out = Vec::new();
        self.run(m, |e| {
            if let MtEvent::GlobEntry(entry) = e {
                out.push(entry);
            }
        })?;
        Ok(out)
    }

    /// Delete.
    pub fn delete(&self, caller: &Caller, name: &str, subtree: bool) -> Result<(), MtError> {
        let m = mt::Delete::new(
            self.ctx(caller),
            name,
            subtree,
            self.clock.now(),
            self.seed(),
        );
        self.run_quiet(m)
    }

    /// GetPermissions.
    pub fn get_permissions(&self, caller: &Caller, name: &str) -> Result<PermsAndVersion, MtError> {
        let m = mt::GetPermissions::new(self.ctx(caller), name, self.clock.now(), self.seed());
        self.run_quiet(m)
    }

    /// SetPermissions (`version = ""`: any).
    pub fn set_permissions(
        &self,
        caller: &Caller,
        name: &str,
        perms: Permissions,
        version: &str,
    ) -> Result<PermsAndVersion, MtError> {
        let m = mt::SetPermissions::new(
            self.ctx(caller),
            name,
            perms,
            version,
            self.clock.now(),
            self.seed(),
        );
        self.run_quiet(m)
    }

    /// Fsck (with a 1 h deadline, as the CLI).
    pub fn fsck(&self, fix: bool, on_event: impl FnMut(MtEvent)) -> Result<FsckSummary, MtError> {
        let ctx = self.calls.fsck_ctx(self.clock.now());
        let m = mt::Fsck::new(ctx, fix, self.clock.now(), self.seed());
        self.run(m, on_event)
    }

    /// Every counter row.
    pub fn counters(&self) -> Result<BTreeMap<Vec<u8>, i64>, MtError> {
        let m = mt::ReadCounters::new(self.ctx(&server_caller()), self.clock.now(), self.seed());
        self.run_quiet(m)
    }

    /// Runs one internal primitive as `caller`.
    pub fn primitive(&self, caller: &Caller, p: Primitive) -> Result<PrimitiveOutput, MtError> {
        let m = mt::PrimitiveOp::new(self.ctx(caller), p, self.clock.now(), self.seed());
        self.run_quiet(m)
    }

    /// `getNode(name)` (through the cache).
    pub fn get_node(
        &self,
        name: &str,
    ) -> Result<Option<rowkit_codec::mounttable::NodeRow>, MtError> {
        match self.primitive(&server_caller(), Primitive::GetNode { name: name.into() })? {
            PrimitiveOutput::Node(n) => Ok(n.map(|b| *b)),
            PrimitiveOutput::Done => Ok(None),
        }
    }
}

/// The server itself as caller (no names; creator `self:?:ServerUser`).
pub fn server_caller() -> Caller {
    Caller {
        blessing_names: Vec::new(),
        is_server: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(c: &mut NodeRowCache, key: &[u8], now: Timestamp) -> WaiterId {
        match c.lookup(key, now) {
            Lookup::Wait(id) => id,
            other => panic!("{other:?}"),
        }
    }

    /// A cancelled waiter never strands the others: a fetch handed to it (before or after it
    /// left) passes to the next waiter, and a row answer is not kept for it.
    #[test]
    fn abandoned_waiters_pass_the_fetch_on() {
        let now = Timestamp(1);
        let k = b"k".as_slice();
        for abandon_first in [false, true] {
            let mut c = NodeRowCache::default();
            let Lookup::Fetch(a) = c.lookup(k, now) else {
                panic!()
            };
            let b = waiting(&mut c, k, now);
            let w = waiting(&mut c, k, now);
            if abandon_first {
                c.abandon(k, b, now);
                c.complete(k, a, None, now);
            } else {
                c.complete(k, a, None, now);
                c.abandon(k, b, now);
            }
            assert_eq!(c.take_answer(b), None);
            assert_eq!(c.take_answer(w), Some(CacheAnswer::Fetch));
        }
        let mut c = NodeRowCache::default();
        let Lookup::Fetch(a) = c.lookup(k, now) else {
            panic!()
        };
        let b = waiting(&mut c, k, now);
        let w = waiting(&mut c, k, now);
        c.abandon(k, b, now);
        let row = Row {
            key: k.to_vec(),
            cells: Vec::new(),
        };
        c.complete(k, a, Some(row.clone()), now);
        assert_eq!(c.take_answer(b), None);
        assert_eq!(c.take_answer(w), Some(CacheAnswer::Row(Some(row))));
        assert!(c.abandoned.is_empty() && c.answers.is_empty());
    }
}
