//! `MountTable`: the Tokio facade over the mounttable machines (`spec/mounttable.md`), on a
//! [`BigtableConnection`]. The async twin of `rowkit_embedded::mounttable::MountTable`: the
//! same operations, the same settings ([`MtConfig`]), contexts and seeds ([`MtCalls`]) and the
//! same hot-row cache ([`NodeRowCache`], §15), so a sequence of calls on one facade behaves as
//! on the sync one.
//!
//! The cache sits between the machines and the connection as a [`Transport`]: a node read
//! (`ReadRow(node table, key, LatestN(1))`) is answered from the cache, or fetched once for all
//! concurrent readers of that row (waiters park on a [`Notify`]); while a write to a node row
//! is in flight, reads of that row bypass the cache and nothing is kept
//! ([`rowkit_statemachines::mounttable::RowCache::begin_write`]). The machines never see it.
//! Bigtable stamps server-time cells when it applies them (as the local stores do inside the
//! row's transaction), so writes need no serialising here.
//!
//! Futures of this facade are `!Send` while the mounttable machines are; nothing here holds
//! them across threads, so they become `Send` with the machines.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::StreamExt;
use rowkit_codec::model::Row;
use rowkit_codec::mounttable::{Caller, NodeRow, Permissions};
use rowkit_embedded::driver::SystemClock;
use rowkit_embedded::mounttable::{
    CacheAnswer, MtCalls, MtConfig, NodeRowCache, cached_node_read, cached_reply_parts, node_write,
    server_caller, table_families,
};
use rowkit_statemachines::mounttable::{
    self as mt, FsckSummary, Lookup, MountEntry, MtError, MtEvent, PermsAndVersion, Primitive,
    PrimitiveOutput, WaiterId,
};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{Code, Machine, Request, Response, RetryPolicy, StoreError, Timestamp};
use tokio::sync::Notify;

use crate::connection::{BigtableConnection, PartStream};
use crate::driver::{self, RunError, SharedClock, Transport};

/// The cache and the wake-up of its waiters.
#[derive(Debug, Default)]
struct SharedCache {
    rows: Mutex<NodeRowCache>,
    wake: Notify,
    /// Node reads the cache sent to Bigtable (its misses after coalescing).
    fetches: std::sync::atomic::AtomicU64,
}

impl SharedCache {
    fn lock(&self) -> MutexGuard<'_, NodeRowCache> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Completes a fetch even when its future is dropped (the machine aborted the read), so its
/// waiters are never left parked: a dropped fetch counts as failed and the next waiter reads.
struct FetchTurn {
    cache: Arc<SharedCache>,
    key: Vec<u8>,
    id: WaiterId,
    now: Timestamp,
    done: bool,
}

impl FetchTurn {
    fn complete(mut self, row: Option<Row>) {
        self.done = true;
        self.cache
            .lock()
            .complete(&self.key, self.id, row, self.now);
        self.cache.wake.notify_waiters();
    }
}

impl Drop for FetchTurn {
    fn drop(&mut self) {
        if !self.done {
            self.cache
                .lock()
                .complete(&self.key, self.id, None, self.now);
            self.cache.wake.notify_waiters();
        }
    }
}

/// A waiter of someone else's fetch; if its future is dropped before the answer came, the
/// cache is told ([`NodeRowCache::abandon`]), so a fetch handed to it passes on.
struct WaitTurn<'a> {
    cache: &'a SharedCache,
    key: &'a [u8],
    id: WaiterId,
    now: Timestamp,
    done: bool,
}

impl Drop for WaitTurn<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.cache.lock().abandon(self.key, self.id, self.now);
            self.cache.wake.notify_waiters();
        }
    }
}

/// One node read through the cache.
async fn cached_read(
    conn: BigtableConnection,
    clock: SharedClock,
    cache: Arc<SharedCache>,
    key: Vec<u8>,
    request: Request,
    now: Timestamp,
) -> Result<Option<Row>, StoreError> {
    let looked_up = cache.lock().lookup(&key, now);
    let me = match looked_up {
        Lookup::Hit(row) => return Ok(Some(row)),
        Lookup::Fetch(id) => id,
        Lookup::Wait(id) => {
            let mut turn = WaitTurn {
                cache: &cache,
                key: &key,
                id,
                now,
                done: false,
            };
            loop {
                // Registered before the check, so a completion in between is not missed.
                let notified = cache.wake.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let answer = cache.lock().take_answer(id);
                match answer {
                    Some(CacheAnswer::Row(row)) => {
                        turn.done = true;
                        return Ok(row);
                    }
                    Some(CacheAnswer::Fetch) => {
                        turn.done = true;
                        break id;
                    }
                    None => {}
                }
                notified.await;
            }
        }
    };
    let turn = FetchTurn {
        cache,
        key,
        id: me,
        now,
        done: false,
    };
    let Request::ReadRows(read) = request else {
        return Err(StoreError::new(Code::Internal, "not a read"));
    };
    turn.cache
        .fetches
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut rows = Vec::new();
    let mut m = ReadRows::new(read, now, 0, RetryPolicy::default());
    let result = driver::run_with(&conn, &*clock, &mut m, |row| rows.push(row))
        .await
        .map(|_| rows.into_iter().next())
        .map_err(RunError::into_store_error);
    turn.complete(result.as_ref().ok().cloned().flatten());
    result
}

/// The connection as the machines see it: node reads through the cache, node writes
/// invalidating.
struct CachedTransport<'a> {
    conn: &'a BigtableConnection,
    clock: &'a SharedClock,
    node_table: &'a str,
    cache: Option<&'a Arc<SharedCache>>,
}

impl Transport for CachedTransport<'_> {
    fn call(&self, request: Request) -> PartStream {
        let Some(cache) = self.cache else {
            return self.conn.call(request);
        };
        if let Some(key) = cached_node_read(&request, self.node_table) {
            let read = cached_read(
                self.conn.clone(),
                self.clock.clone(),
                cache.clone(),
                key,
                request,
                self.clock.now(),
            );
            return Box::pin(futures_util::stream::once(read).flat_map(|result| {
                let parts = match result {
                    Ok(row) => {
                        let mut parts = cached_reply_parts(row);
                        parts.push(Ok(Response::StreamEnd));
                        parts
                    }
                    Err(e) => vec![Err(e)],
                };
                futures_util::stream::iter(parts)
            }));
        }
        match node_write(&request, self.node_table) {
            // From sent to answered, reads of the row bypass the cache
            // (`RowCache::begin_write`); the write ends when its stream is dropped: answered,
            // failed or cancelled.
            Some(key) => {
                cache.lock().begin_write(&key);
                let write = WriteInFlight {
                    cache: cache.clone(),
                    key,
                };
                // The stream owns the guard, so the write ends when the stream goes.
                Box::pin(self.conn.call(request).inspect(move |_| {
                    let _owned = &write;
                }))
            }
            None => self.conn.call(request),
        }
    }
}

/// A node-row write between `begin_write` and `end_write`: ends it when dropped.
struct WriteInFlight {
    cache: Arc<SharedCache>,
    key: Vec<u8>,
}

impl Drop for WriteInFlight {
    fn drop(&mut self) {
        self.cache.lock().end_write(&self.key);
    }
}

/// The mount table over a connection (see the module doc).
pub struct MountTable {
    conn: BigtableConnection,
    clock: SharedClock,
    calls: MtCalls,
    cache: Arc<SharedCache>,
}

impl std::fmt::Debug for MountTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MountTable")
            .field("config", self.calls.config())
            .finish_non_exhaustive()
    }
}

impl MountTable {
    /// A facade with `config` over `conn`, on the wall clock.
    pub fn new(conn: BigtableConnection, config: MtConfig) -> MountTable {
        MountTable {
            conn,
            clock: Arc::new(SystemClock),
            calls: MtCalls::new(config),
            cache: Arc::default(),
        }
    }

    /// The same facade on `clock` (every `now` of every machine, and the cache's TTL).
    pub fn with_clock(mut self, clock: SharedClock) -> MountTable {
        self.clock = clock;
        self
    }

    /// The settings.
    pub fn config(&self) -> &MtConfig {
        self.calls.config()
    }

    /// The connection.
    pub fn connection(&self) -> &BigtableConnection {
        &self.conn
    }

    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// How many node-row reads the hot-row cache has sent to Bigtable so far (concurrent
    /// reads of one row count once; hits count nothing).
    pub fn cache_fetches(&self) -> u64 {
        self.cache
            .fetches
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Drives `machine`, handing every event to `on_event` as it is emitted.
    pub async fn run<M>(
        &self,
        mut machine: M,
        on_event: impl FnMut(MtEvent),
    ) -> Result<M::Output, MtError>
    where
        M: Machine<Event = MtEvent, Error = MtError>,
    {
        let config = self.calls.config();
        let transport = CachedTransport {
            conn: &self.conn,
            clock: &self.clock,
            node_table: &config.tables.node,
            cache: config.row_cache.then_some(&self.cache),
        };
        driver::run_with(&transport, &*self.clock, &mut machine, on_event)
            .await
            .map_err(|e| match e {
                RunError::Machine(e) => e,
                RunError::Stalled | RunError::Closed => MtError::Internal {
                    what: e.to_string(),
                },
            })
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
        let tables = &self.calls.config().tables;
        for (table, families) in [(&tables.counter, counter), (&tables.node, node)] {
            match self.conn.create_table(table, &families).await {
                Ok(()) => {}
                Err(e) if e.code == Code::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// §5 setup: tables, then the initial nodes (from a permissions file if given).
    pub async fn setup(
        &self,
        perms_file: Option<BTreeMap<String, Permissions>>,
    ) -> Result<(), MtError> {
        self.create_tables().await?;
        let now = self.now();
        let ctx = self.calls.ctx(&server_caller(), now);
        let m = mt::CreateInitialNodes::new(ctx, perms_file, now, self.calls.seed());
        self.run_quiet(m).await
    }

    /// Mount; returns the deadline written (µs).
    pub async fn mount(
        &self,
        caller: &Caller,
        name: &str,
        server: &str,
        ttl_s: u32,
        flags: u32,
    ) -> Result<i64, MtError> {
        let now = self.now();
        let ctx = self.calls.ctx(caller, now);
        let m = mt::Mount::new(ctx, name, server, ttl_s, flags, now, self.calls.seed());
        self.run_quiet(m).await
    }

    /// Unmount (`server = ""`: all).
    pub async fn unmount(&self, caller: &Caller, name: &str, server: &str) -> Result<(), MtError> {
        let now = self.now();
        let ctx = self.calls.ctx(caller, now);
        let m = mt::Unmount::new(ctx, name, server, now, self.calls.seed());
        self.run_quiet(m).await
    }

    /// ResolveStep.
    pub async fn resolve(&self, caller: &Caller, name: &str) -> Result<MountEntry, MtError> {
        let now = self.now();
        let ctx = self.calls.ctx(caller, now);
        let m = mt::ResolveStep::new(ctx, name, now, self.calls.seed());
        self.run_quiet(m).await
    }

    /// Glob under `name`, handing each entry to `on_entry` as the machine emits it.
    pub async fn glob_each(
        &self,
        caller: &Caller,
        name: &str,
        pattern: &str,
        mut on_entry: impl FnMut(MountEntry),
    ) -> Result<(), MtError> {
        let now = self.now();
        let ctx = self.calls.ctx(caller, now);
        let m = mt::Glob::new(ctx, name, pattern, now, self.calls.seed());
        self.run(m, |e| {
            if let MtEvent::GlobEntry(entry) = e {
                on_entry(entry);
            }
        })
        .await
    }

    /// Glob under `name`; entries in emission order.
    pub async fn glob(
        &self,
        caller: &Caller,
        name: &str,
        pattern: &str,
    ) -> Result<Vec<MountEntry>, MtError> {
        let mut out = Vec::new();
        self.glob_each(caller, name, pattern, |e| out.push(e))
            .await?;
        Ok(out)
    }

    /// Delete.
    pub async fn delete(&self, caller: &Caller, name: &str, subtree: bool) -> Result<(), MtError> {
        let now = self.now();
        let ctx = self.calls.ctx(caller, now);
        let m = mt::Delete::new(ctx, name, subtree, now, self.calls.seed());
        self.run_quiet(m).await
    }

    /// GetPermissions.
    pub async fn get_permissions(
        &self,
        caller: &Caller,
        name: &str,
    ) -> Result<PermsAndVersion, MtError> {
        let now = self.now();
        let ctx = self.calls.ctx(caller, now);
        let m = mt::GetPermissions::new(ctx, name, now, self.calls.seed());
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
        let now = self.now();
        let ctx = self.calls.ctx(caller, now);
        let m = mt::SetPermissions::new(ctx, name, perms, version, now, self.calls.seed());
        self.run_quiet(m).await
    }

    /// Fsck (with a 1 h deadline, as the CLI); findings are handed to `on_event`.
    pub async fn fsck(
        &self,
        fix: bool,
        on_event: impl FnMut(MtEvent),
    ) -> Result<FsckSummary, MtError> {
        let now = self.now();
        let m = mt::Fsck::new(self.calls.fsck_ctx(now), fix, now, self.calls.seed());
        self.run(m, on_event).await
    }

    /// Every counter row.
    pub async fn counters(&self) -> Result<BTreeMap<Vec<u8>, i64>, MtError> {
        let now = self.now();
        let ctx = self.calls.ctx(&server_caller(), now);
        let m = mt::ReadCounters::new(ctx, now, self.calls.seed());
        self.run_quiet(m).await
    }

    /// Runs one internal primitive as `caller`.
    pub async fn primitive(
        &self,
        caller: &Caller,
        p: Primitive,
    ) -> Result<PrimitiveOutput, MtError> {
        let now = self.now();
        let ctx = self.calls.ctx(caller, now);
        let m = mt::PrimitiveOp::new(ctx, p, now, self.calls.seed());
        self.run_quiet(m).await
    }

    /// `getNode(name)` (through the cache).
    pub async fn get_node(&self, name: &str) -> Result<Option<NodeRow>, MtError> {
        let p = Primitive::GetNode { name: name.into() };
        match self.primitive(&server_caller(), p).await? {
            PrimitiveOutput::Node(n) => Ok(n.map(|b| *b)),
            PrimitiveOutput::Done => Ok(None),
        }
    }
}
