//! [`ObjectMetadata`]: Scality Arsenal's object-metadata backend (`spec/objmeta.md`) over any
//! [`Driver`].
//!
//! The facade owns Arsenal's per-process [`ObjmetaState`] (version-id generator, vFormat
//! cache) and its bookkeeping: each operation's [`Start`] (seed and deadline from its
//! [`CallOptions`], as every facade's; repairs seeded from the same stream), the change events (kept in emission order for
//! [`ObjectMetadata::take_events`] and streamed to every [`ObjectMetadata::subscribe`]r as the
//! machine emits them) and the repairs that deletes schedule.
//!
//! Delayed repairs (`objmeta.md` 16.5): each `RepairScheduled` event becomes an `AsyncRepair`
//! machine, driven in one of two ways.
//!
//! - Explicitly (the default, every driver): the repair waits in
//!   [`ObjectMetadata::pending_repairs`] until [`ObjectMetadata::run_due_repairs`],
//!   [`ObjectMetadata::run_all_repairs`] or [`ObjectMetadata::run_repair`] runs it with the
//!   machine's time standing at its `due`; the driver's own clock is not moved.
//! - In the background ([`ObjectMetadata::with_background_repairs`], drivers that can spawn:
//!   [`SpawnRepairs`], e.g. the Tokio driver): each repair is a task of its own that drives the
//!   machine on the driver's clock, so it sleeps until `due`, then runs. The facade tracks it
//!   ([`ObjectMetadata::background_repairs`], [`ObjectMetadata::wait_for_repairs`],
//!   [`ObjectMetadata::take_repair_reports`]); dropping the facade, or
//!   [`ObjectMetadata::drop_pending_repairs`], aborts the ones not finished (a process exit:
//!   the placeholder master stays, as `objmeta.md` 8.4 allows).
//!
//! ```
//! use rowkit_client::objmeta::ObjectMetadata;
//! use rowkit_client::{SyncDriver, block_on};
//! use rowkit_codec::objmeta::json::Json;
//! use rowkit_codec::objmeta::keys::VFormat;
//! use rowkit_store::MemoryStore;
//! use rowkit_store::driver::ManualClock;
//! use rowkit_statemachines::Timestamp;
//! use rowkit_statemachines::objmeta::{ObjmetaConfig, ObjmetaState, RepairOutcome};
//!
//! let store = MemoryStore::new();
//! let clock = ManualClock::new(Timestamp::from_secs(1_700_000_000));
//! let state = ObjmetaState::new(ObjmetaConfig {
//!     table: "s3".into(),
//!     default_bucket_key_format: VFormat::V1,
//!     ..ObjmetaConfig::default()
//! });
//! let om = ObjectMetadata::new(SyncDriver::new(&store, &clock), state);
//! block_on(om.setup()).unwrap();
//! block_on(om.create_bucket("b", &Json::parse(r#"{"name":"b"}"#).unwrap())).unwrap();
//! let versioned = Json::parse(r#"{"versioning":true}"#).unwrap();
//! for n in 1..=2 {
//!     let value = Json::parse(&format!(r#"{{"key":"k","n":{n}}}"#)).unwrap();
//!     block_on(om.put_object("b", "k", &value, Some(&versioned))).unwrap();
//! }
//! let latest = block_on(om.get_object("b", "k", None)).unwrap();
//! assert_eq!(latest.get("n"), Some(&Json::Number(2.0)));
//! // Deleting the current version leaves a placeholder master and schedules its repair.
//! let id = latest.get("versionId").and_then(Json::as_str).unwrap();
//! let by_version = Json::parse(&format!(r#"{{"versionId":"{id}"}}"#)).unwrap();
//! block_on(om.delete_object("b", "k", Some(&by_version), None)).unwrap();
//! assert_eq!(om.pending_repairs().len(), 1);
//! let reports = block_on(om.run_all_repairs());
//! assert_eq!(reports[0].outcome, RepairOutcome::Repaired);
//! let repaired = block_on(om.get_object("b", "k", None)).unwrap();
//! assert_eq!(repaired.get("n"), Some(&Json::Number(1.0)));
//! ```

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use futures_channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use futures_core::Stream;
use futures_util::future::{AbortHandle, AbortRegistration, Abortable};
use futures_util::lock::Mutex as AsyncMutex;
use rowkit_codec::model::{RowRange, RowSet};
use rowkit_codec::objmeta::cells::{StoredDoc, families, filters};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{VFormat, collection_end, collection_start};
use rowkit_codec::objmeta::listing::ListingParams;
use rowkit_statemachines::check::{
    CheckError, CheckEvent, CheckOptions, CheckSummary, CheckTarget,
};
use rowkit_statemachines::objmeta;
use rowkit_statemachines::objmeta::migrate::marker::{MigrationRead, ReadMigration};
use rowkit_statemachines::objmeta::migrate::run::{MigrateBucket, MigrateOptions, MigrateOutcome};
use rowkit_statemachines::objmeta::{
    AsyncRepair, BucketEntry, CountItems, CreateBucket, DEFAULT_DEADLINE_US, DeleteBucket,
    DeleteBucketAttributesCapability, DeleteObject, GetBucketAndObject, GetBucketAttributes,
    GetBucketVFormat, GetObject, GetObjects, GetUuid, ListBuckets, ListObject, ObjmetaError,
    ObjmetaEvent, ObjmetaSchema, ObjmetaState, PutBucketAttributes,
    PutBucketAttributesCapabilities, PutObject, PutOutcome, ReadCountItems, RepairOutcome,
    RepairTask, UpdateCountItems,
};
use rowkit_statemachines::operation::{Flow, Operation, Start};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    Machine, ReadRowsRequest, Request, Response, RetryPolicy, StoreError, Timestamp,
};
use rowkit_store::driver::{Clock, ManualClock};

use crate::calls::Calls;
use crate::driver::forward_admin;
use crate::{CallOptions, Driver, ensure_table, run, run_operation};

/// A finished repair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairReport {
    /// What was repaired.
    pub task: RepairTask,
    /// How it ended.
    pub outcome: RepairOutcome,
}

/// A driver that can run work in the background, which
/// [`ObjectMetadata::with_background_repairs`] needs (`objmeta.md` 16.5). The Tokio driver
/// implements it with `tokio::spawn`; a browser driver would with `spawn_local`.
pub trait SpawnRepairs: Driver {
    /// Starts `job` in the background: a task that awaits `job.run(&driver)` over a driver of
    /// its own (a clone of this one), so the job borrows neither the facade nor the caller.
    /// The job reports to the facade and stops when the facade aborts it; the task needs no
    /// handle kept.
    fn spawn_repair(&self, job: RepairJob);
}

impl<D: SpawnRepairs + ?Sized> SpawnRepairs for &D {
    fn spawn_repair(&self, job: RepairJob) {
        (**self).spawn_repair(job);
    }
}

impl<D: SpawnRepairs + ?Sized> SpawnRepairs for Arc<D> {
    fn spawn_repair(&self, job: RepairJob) {
        (**self).spawn_repair(job);
    }
}

/// What the facade and its background repairs share.
#[derive(Debug, Default)]
struct Shared {
    /// Events not yet taken, in emission order.
    events: Vec<ObjmetaEvent>,
    /// Receivers of every event (closed ones are dropped at the next event).
    subscribers: Vec<UnboundedSender<ObjmetaEvent>>,
    /// Background repairs started and not done with, by job id, in scheduling order.
    running: Vec<(u64, RepairTask)>,
    /// Reports of finished background repairs, in finishing order.
    finished: Vec<RepairReport>,
    /// The `wait_for_repairs` waiting for `running` to empty.
    waiter: Option<Waker>,
}

impl Shared {
    /// Hands `e` to the subscribers and keeps it for `take_events`.
    fn publish(&mut self, e: ObjmetaEvent) {
        self.subscribers
            .retain(|tx| tx.unbounded_send(e.clone()).is_ok());
        self.events.push(e);
    }

    /// Forgets background repair `id`; whether it was still tracked.
    fn untrack(&mut self, id: u64) -> bool {
        let before = self.running.len();
        self.running.retain(|(i, _)| *i != id);
        if self.running.is_empty()
            && let Some(waiter) = self.waiter.take()
        {
            waiter.wake();
        }
        self.running.len() != before
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // A panic while holding the lock leaves plain data behind: keep using it.
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Untracks a background repair when its job is done with, however that happens (finished,
/// aborted, dropped before it started, its task panicked or its runtime shut down), so
/// `wait_for_repairs` never waits for a repair that cannot finish.
struct Tracked {
    id: u64,
    shared: Arc<Mutex<Shared>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        lock(&self.shared).untrack(self.id);
    }
}

/// One background repair, handed to [`SpawnRepairs::spawn_repair`]: its `AsyncRepair` machine
/// (created when the delete scheduled it; it sends nothing before `due`), the facade's shared
/// event and report lists, and an abort registration the facade holds the handle of.
pub struct RepairJob {
    task: RepairTask,
    machine: AsyncRepair,
    registration: AbortRegistration,
    tracked: Tracked,
}

impl core::fmt::Debug for RepairJob {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RepairJob")
            .field("task", &self.task)
            .finish_non_exhaustive()
    }
}

impl RepairJob {
    /// The repair.
    pub fn task(&self) -> &RepairTask {
        &self.task
    }

    /// Drives the repair over `driver` to its end, on the driver's clock: it sleeps until
    /// `due`, then reads and writes. Its events go to the facade as the machine emits them and
    /// its report to [`ObjectMetadata::take_repair_reports`]; once the facade aborts it, it
    /// stops at its next wake-up without a report.
    pub async fn run<D: Driver + ?Sized>(self, driver: &D) {
        let RepairJob {
            task,
            machine,
            registration,
            tracked,
        } = self;
        let shared = &*tracked.shared;
        let ran = Abortable::new(
            run(driver, machine, |e| lock(shared).publish(e)),
            registration,
        )
        .await;
        if let Ok(result) = ran {
            let outcome = result.unwrap_or(RepairOutcome::Failed);
            let mut s = lock(shared);
            // A repair dropped meanwhile (`drop_pending_repairs`) is no longer reported.
            if s.untrack(tracked.id) {
                s.finished.push(RepairReport { task, outcome });
            }
        }
    }
}

/// A driver whose time stands at an instant of its own, moved only by its waits; requests and
/// admin calls go to `inner`.
///
/// Why: an explicitly driven repair runs "with `now = due`, the step clock not changed"
/// (`objmeta.md` 16.5), which the sync facade did with a private manual clock. Decorating the
/// driver gives every driver exactly that without a clock parameter on [`Driver`]:
///
/// - a wait while no request is in flight jumps at once, as the private manual clock did
///   (nothing can answer meanwhile, so the machine cannot tell). Over the sync driver every
///   wait is of this kind (its answers are always ready, so [`crate::run`] only polls a timer
///   once nothing is in flight), so the sync results are those of the old sync facade;
/// - a wait while a request is in flight (an attempt timeout or the deadline over an async
///   driver) lasts as long on the inner driver's timer, as the old Tokio facade's did, so a
///   hung request still times out; then this clock jumps. (With an injected manual clock the
///   inner driver moves it too, as any of its own timeouts would.)
///
/// A store's own time (server-time stamps) stays the inner driver's; objmeta writes only cells
/// at the explicit timestamp 0 and never read-modify-writes, so that time never reaches the
/// table.
struct AtTime<'d, D: ?Sized> {
    inner: &'d D,
    clock: ManualClock,
    /// Calls started and not yet dropped.
    in_flight: AtomicUsize,
}

impl<'d, D: Driver + ?Sized> AtTime<'d, D> {
    /// `inner` with time standing at `at`.
    fn new(inner: &'d D, at: Timestamp) -> Self {
        AtTime {
            inner,
            clock: ManualClock::new(at),
            in_flight: AtomicUsize::new(0),
        }
    }
}

/// A call through [`AtTime`], counted as in flight until dropped.
struct Counted<'a, S> {
    call: Pin<Box<S>>,
    in_flight: &'a AtomicUsize,
}

impl<S: Stream> Stream for Counted<'_, S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        self.call.as_mut().poll_next(cx)
    }
}

impl<S> Drop for Counted<'_, S> {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<D: Driver + ?Sized> Driver for AtTime<'_, D> {
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn call(&self, request: Request) -> impl Stream<Item = Result<Response, StoreError>> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        Counted {
            call: Box::pin(self.inner.call(request)),
            in_flight: &self.in_flight,
        }
    }

    fn blocking_waits(&self) -> bool {
        self.inner.blocking_waits()
    }

    fn sleep_until(&self, at: Timestamp) -> impl Future<Output = ()> {
        // Decided at each poll (the loop polls a timer only once no answer is ready), so a
        // wait that began with a request in flight ends at once when it is answered.
        let mut wait = None;
        core::future::poll_fn(move |cx| {
            if self.in_flight.load(Ordering::SeqCst) > 0 {
                let timer = wait.get_or_insert_with(|| {
                    let micros = at.0.saturating_sub(self.clock.now().0).max(0);
                    let until = self.inner.now().saturating_add_micros(micros);
                    Box::pin(self.inner.sleep_until(until))
                });
                if timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
            self.clock.sleep_until(at);
            Poll::Ready(())
        })
    }

    forward_admin!(self => self.inner);
}

/// The repairs of a facade: the ones waiting to be driven explicitly, and the abort handles of
/// the background ones.
#[derive(Debug, Default)]
struct Repairs {
    /// Waiting for `run_repair` and friends, in scheduling order.
    pending: Vec<RepairTask>,
    /// Abort handles of the background repairs, by job id.
    aborts: Vec<(u64, AbortHandle)>,
    /// The id of the next background job.
    next_job: u64,
}

/// The object-metadata facade over a driver (see the module doc). Every call takes `&self`;
/// operations run one at a time on Arsenal's per-process state, as they did in its process.
pub struct ObjectMetadata<D> {
    driver: D,
    /// The table (the state's, fixed when the facade is made).
    table: String,
    /// Arsenal's per-process state, held by one operation at a time (an async lock: a call
    /// waits for the one before it, and its future stays `Send`). Unlike the other schemas'
    /// contexts it is shared mutable state: every operation must draw its version ids from
    /// the one generator (on copies, two puts in one millisecond would get the same id) and
    /// see the one vFormat cache, and an operation borrows it for its whole run.
    state: AsyncMutex<ObjmetaState>,
    calls: Calls,
    shared: Arc<Mutex<Shared>>,
    repairs: Mutex<Repairs>,
    /// How repairs start in the background; `None`: explicit driving. A plain function
    /// (`D::spawn_repair`) so the facade stays as `Send` and `Sync` as its driver.
    spawn: Option<fn(&D, RepairJob)>,
    /// Whether object calls first check that their bucket exists
    /// ([`ObjectMetadata::with_bucket_checks`]).
    bucket_checks: bool,
}

impl<D> core::fmt::Debug for ObjectMetadata<D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ObjectMetadata")
            .field("table", &self.table)
            .field("calls", &self.calls)
            .field("background", &self.spawn.is_some())
            .finish_non_exhaustive()
    }
}

impl<D> Drop for ObjectMetadata<D> {
    fn drop(&mut self) {
        // A process exit: repairs not run yet never run (`objmeta.md` 8.4).
        for (_, handle) in &lock_repairs(&self.repairs).aborts {
            handle.abort();
        }
    }
}

fn lock_repairs(repairs: &Mutex<Repairs>) -> MutexGuard<'_, Repairs> {
    // As `lock`: plain data, kept after a panic.
    repairs.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<D: Driver> ObjectMetadata<D> {
    /// A facade over `driver` with `state` (config + generator + cache) and default
    /// [`CallOptions`] (seed 0; each operation's 60 s deadline, `objmeta.md` 16.3). Repairs
    /// are driven explicitly.
    ///
    /// The facade is a migration-**aware** process (`docs/migration.md` §2.3, §6): it turns
    /// on `state.config.migration_aware`, so its lookups read the migration marker (kept at
    /// most `marker_ttl`), its writes mirror and pause in a fence, and no gate waits for it.
    /// [`ObjectMetadata::unaware`] keeps Arsenal's behaviour.
    pub fn new(driver: D, mut state: ObjmetaState) -> ObjectMetadata<D> {
        state.config.migration_aware = true;
        ObjectMetadata::unaware(driver, state)
    }

    /// A facade running `state` as its config says — with the flag off, an *unaware*
    /// process as Arsenal's (its vFormat cached until evicted, no mirror, no pause): the
    /// migration's gates must wait for it (`docs/migration.md` §6.1).
    pub fn unaware(driver: D, state: ObjmetaState) -> ObjectMetadata<D> {
        ObjectMetadata {
            driver,
            table: state.config.table.clone(),
            state: AsyncMutex::new(state),
            calls: Calls::default(),
            shared: Arc::default(),
            repairs: Mutex::default(),
            spawn: None,
            bucket_checks: false,
        }
    }

    /// Seeds every operation and, if `options` set one, bounds every operation by its
    /// deadline instead of the 60 s default (repairs keep theirs: 60 s from `due`).
    pub fn with_options(mut self, options: CallOptions) -> ObjectMetadata<D> {
        self.calls = Calls::new(options);
        self
    }

    /// The options.
    pub fn options(&self) -> CallOptions {
        self.calls.options()
    }

    /// The same facade with every later repair run in a background task of its own, sleeping
    /// until its `due` on the driver's clock (see the module doc).
    pub fn with_background_repairs(mut self) -> ObjectMetadata<D>
    where
        D: SpawnRepairs,
    {
        self.spawn = Some(D::spawn_repair);
        self
    }

    /// Object calls (`put_object`, `get_object`, `delete_object`, `list_object`) first read
    /// the bucket's metastore row and fail with `NoSuchBucket` when there is none, before any
    /// write — what S3's front end does before calling Arsenal's metadata layer, whose calls
    /// take any bucket name (`objmeta.md` 4.3). The CLI and the browser tool turn it on.
    pub fn with_bucket_checks(mut self) -> ObjectMetadata<D> {
        self.bucket_checks = true;
        self
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.driver
    }

    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Runs `f` on the state (config, generator, cache) between operations, e.g. to change
    /// the default vFormat (not the table: the facade's is fixed).
    pub async fn with_state<R>(&self, f: impl FnOnce(&mut ObjmetaState) -> R) -> R {
        f(&mut *self.state.lock().await)
    }

    /// A receiver of every later change event, sent as the machine emits it (background
    /// repairs' included); dropping the receiver unsubscribes it.
    pub fn subscribe(&self) -> UnboundedReceiver<ObjmetaEvent> {
        let (tx, rx) = unbounded();
        lock(&self.shared).subscribers.push(tx);
        rx
    }

    /// Change events since the last call, in emission order (background repairs' included).
    pub fn take_events(&self) -> Vec<ObjmetaEvent> {
        std::mem::take(&mut lock(&self.shared).events)
    }

    /// Repairs waiting to be driven explicitly, in scheduling order (background repairs are
    /// [`ObjectMetadata::background_repairs`]).
    pub fn pending_repairs(&self) -> Vec<RepairTask> {
        lock_repairs(&self.repairs).pending.clone()
    }

    /// Background repairs not finished yet, in scheduling order.
    pub fn background_repairs(&self) -> Vec<RepairTask> {
        let s = lock(&self.shared);
        s.running.iter().map(|(_, task)| task.clone()).collect()
    }

    /// Reports of the background repairs finished since the last call, in finishing order.
    pub fn take_repair_reports(&self) -> Vec<RepairReport> {
        let mut s = lock(&self.shared);
        lock_repairs(&self.repairs)
            .aborts
            .retain(|(id, _)| s.running.iter().any(|(i, _)| i == id));
        std::mem::take(&mut s.finished)
    }

    /// Waits until every background repair has run (each at its `due`), then returns
    /// [`ObjectMetadata::take_repair_reports`]. Cancel-safe: it holds nothing.
    pub async fn wait_for_repairs(&self) -> Vec<RepairReport> {
        let shared = &*self.shared;
        core::future::poll_fn(|cx| {
            let mut s = lock(shared);
            if s.running.is_empty() {
                Poll::Ready(())
            } else {
                s.waiter = Some(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
        self.take_repair_reports()
    }

    /// `setup` (`objmeta.md` 5.1): creates the table with families `d` and `f`; an existing
    /// table is left as it is.
    pub async fn setup(&self) -> Result<(), ObjmetaError> {
        ensure_table(&self.driver, &self.table, &families())
            .await
            .map_err(ObjmetaError::internal_error)
    }

    /// Runs `machine` over `driver`, publishing its events; also returns the repairs they
    /// schedule.
    async fn drive<Dr, M>(
        driver: &Dr,
        shared: &Mutex<Shared>,
        machine: M,
    ) -> (Result<M::Output, ObjmetaError>, Vec<RepairTask>)
    where
        Dr: Driver + ?Sized,
        M: Machine<Event = ObjmetaEvent, Error = ObjmetaError>,
    {
        let mut repairs = Vec::new();
        let result = run_operation(driver, machine, |e| {
            if let ObjmetaEvent::RepairScheduled(task) = &e {
                repairs.push(task.clone());
            }
            lock(shared).publish(e);
        })
        .await;
        (result, repairs)
    }

    /// Schedules the repairs an operation asked for: pending, or each in a background task.
    fn schedule(&self, tasks: Vec<RepairTask>) {
        for task in tasks {
            match self.spawn {
                None => lock_repairs(&self.repairs).pending.push(task),
                Some(spawn) => self.spawn_repair(spawn, task),
            }
        }
    }

    /// The machine of one repair created at `now`: until `due` it sends nothing and its
    /// `poll_timeout` is `due` (`objmeta.md` 8.4). It owns everything it needs, so a
    /// background task can drive it without the facade.
    fn repair_machine(&self, task: &RepairTask, now: Timestamp) -> AsyncRepair {
        let start = AsyncRepair::start_at(task, now, self.calls.next_seed());
        AsyncRepair::new(&self.table, task.clone(), start)
    }

    /// Starts the background task of one repair, created now on the driver's clock.
    fn spawn_repair(&self, spawn: fn(&D, RepairJob), task: RepairTask) {
        let machine = self.repair_machine(&task, self.driver.now());
        let (handle, registration) = AbortHandle::new_pair();
        let id = {
            let mut s = lock(&self.shared);
            let mut repairs = lock_repairs(&self.repairs);
            // Handles of repairs done with are of no use any more.
            repairs
                .aborts
                .retain(|(i, _)| s.running.iter().any(|(r, _)| r == i));
            let id = repairs.next_job;
            repairs.next_job += 1;
            repairs.aborts.push((id, handle));
            // Tracked before it starts, so it cannot finish untracked.
            s.running.push((id, task.clone()));
            id
        };
        let job = RepairJob {
            task,
            machine,
            registration,
            tracked: Tracked {
                id,
                shared: self.shared.clone(),
            },
        };
        spawn(&self.driver, job);
    }

    /// Runs the operation `op(state, start)` builds, once the operation before it ended.
    async fn run_op<F: Flow<Schema = ObjmetaSchema>>(
        &self,
        op: impl FnOnce(&mut ObjmetaState, Start) -> Operation<'_, F>,
    ) -> Result<F::Output, ObjmetaError> {
        let mut state = self.state.lock().await;
        let start = self.calls.start(self.driver.now(), DEFAULT_DEADLINE_US);
        let machine = op(&mut state, start);
        let (result, repairs) = Self::drive(&self.driver, &self.shared, machine).await;
        self.schedule(repairs);
        result
    }

    /// Checks the table, or one bucket's collection (`spec/check.md` §3), repairing with
    /// `options.fix`; findings and progress go to `on_event`. Runs until `timeout` µs from now.
    pub async fn check(
        &self,
        bucket: Option<&str>,
        options: CheckOptions,
        timeout: i64,
        on_event: impl FnMut(CheckEvent),
    ) -> Result<CheckSummary, CheckError> {
        // Its own `timeout`, not the operations' deadline: a check runs as long as it is let.
        let start = self.calls.start_within(self.driver.now(), timeout);
        let target = CheckTarget::new(&self.table);
        let m = objmeta::Check::new(target, bucket, options, start);
        crate::run_operation(&self.driver, m, on_event).await
    }

    /// `MigrateBucket(bucket, to, options)` (`docs/migration.md` §3, `rowkit s3 migrate`):
    /// migrates the bucket's key layout to `to` as far as `options.gates` allow, starting a
    /// run or resuming the one its marker names. Its events (`ObjmetaEvent::Migrate`: progress
    /// after every page, marker changes, stragglers, conflicts, findings) go to `on_event` as
    /// the machine emits them and are not kept for [`ObjectMetadata::take_events`] (a pass
    /// emits one per page). Runs until `timeout` µs from now: its own, not the operations'
    /// deadline, since the run waits the settle time `Δ` before the switch and the clean-up.
    pub async fn migrate_bucket(
        &self,
        bucket: &str,
        to: VFormat,
        options: MigrateOptions,
        timeout: i64,
        on_event: impl FnMut(ObjmetaEvent),
    ) -> Result<MigrateOutcome, ObjmetaError> {
        let mut state = self.state.lock().await;
        let start = self.calls.start_within(self.driver.now(), timeout);
        let m = MigrateBucket::new(&mut *state, bucket, to, options, start);
        let result = crate::run_operation(&self.driver, m, on_event).await;
        // The run may have switched the bucket's format: this facade's next call reads it again.
        state.uncache_vformat(bucket);
        result
    }

    /// `ReadMigration(b)` (`docs/migration.md` §2.1): bucket `b`'s key format, marker and
    /// checkpoint as the migrator reads them, in one read; `NoSuchBucket` when it has none.
    pub async fn read_migration(&self, bucket: &str) -> Result<MigrationRead, ObjmetaError> {
        self.run_op(|st, start| ReadMigration::new(st, bucket, start))
            .await
    }

    /// `createBucket(b, md)` → the vFormat written.
    pub async fn create_bucket(&self, bucket: &str, md: &Json) -> Result<VFormat, ObjmetaError> {
        self.run_op(|st, start| CreateBucket::new(st, bucket, md, start))
            .await
    }

    /// `createBucket(b, md)` only where bucket `b` does not exist, atomically
    /// ([`CreateBucket::new_exclusive`]) → the vFormat written; an existing bucket →
    /// `BucketAlreadyExists` naming its format, and nothing changed.
    pub async fn create_new_bucket(
        &self,
        bucket: &str,
        md: &Json,
    ) -> Result<VFormat, ObjmetaError> {
        self.run_op(|st, start| CreateBucket::new_exclusive(st, bucket, md, start))
            .await
    }

    /// With [`ObjectMetadata::with_bucket_checks`]: `NoSuchBucket` unless bucket `b` exists.
    async fn check_bucket(&self, bucket: &str) -> Result<(), ObjmetaError> {
        if self.bucket_checks {
            self.get_bucket_attributes(bucket).await?;
        }
        Ok(())
    }

    /// `putBucketAttributes(b, md)`.
    pub async fn put_bucket_attributes(&self, bucket: &str, md: &Json) -> Result<(), ObjmetaError> {
        self.run_op(|st, start| PutBucketAttributes::new(st, bucket, md, start))
            .await
    }

    /// `getBucketAttributes(b)`.
    pub async fn get_bucket_attributes(&self, bucket: &str) -> Result<Json, ObjmetaError> {
        self.run_op(|st, start| GetBucketAttributes::new(st, bucket, start))
            .await
    }

    /// `deleteBucket(b)` → rows deleted from the collection.
    pub async fn delete_bucket(&self, bucket: &str) -> Result<u64, ObjmetaError> {
        self.run_op(|st, start| DeleteBucket::new(st, bucket, start))
            .await
    }

    /// `listBuckets()`.
    pub async fn list_buckets(&self) -> Result<Vec<BucketEntry>, ObjmetaError> {
        self.run_op(|st, start| ListBuckets::new(st, start)).await
    }

    /// `putObject(b, k, value, params)` → what it wrote: Arsenal's result (`{"versionId":
    /// "…"}` or none), the version id, the key format and the master's row key.
    pub async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        value: &Json,
        params: Option<&Json>,
    ) -> Result<PutOutcome, ObjmetaError> {
        self.check_bucket(bucket).await?;
        let (value, params) = (value.clone(), params.cloned());
        self.run_op(|st, start| PutObject::new(st, bucket, key, value, params, start))
            .await
    }

    /// `getObject(b, k, {versionId})`.
    pub async fn get_object(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<Json, ObjmetaError> {
        self.check_bucket(bucket).await?;
        self.run_op(|st, start| GetObject::new(st, bucket, key, version_id, start))
            .await
    }

    /// `deleteObject(b, k, params, originOp)`; deleting the current version schedules a
    /// repair (see the module doc).
    pub async fn delete_object(
        &self,
        bucket: &str,
        key: &str,
        params: Option<&Json>,
        origin_op: Option<&str>,
    ) -> Result<(), ObjmetaError> {
        self.check_bucket(bucket).await?;
        self.run_op(|st, start| DeleteObject::new(st, bucket, key, params, origin_op, start))
            .await
    }

    /// `listObject(b, params)` → Arsenal's result (values as JSON text).
    pub async fn list_object(
        &self,
        bucket: &str,
        params: &ListingParams,
    ) -> Result<Json, ObjmetaError> {
        self.check_bucket(bucket).await?;
        let params = params.clone();
        self.run_op(|st, start| ListObject::new(st, bucket, params, start))
            .await
    }

    /// `getBucketVFormat(b)`.
    pub async fn get_bucket_vformat(&self, bucket: &str) -> Result<VFormat, ObjmetaError> {
        self.run_op(|st, start| GetBucketVFormat::new(st, bucket, start))
            .await
    }

    /// `getBucketAndObject(b, k, {versionId})` → `(BucketInfo, object or None)`.
    pub async fn get_bucket_and_object(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<(Json, Option<Json>), ObjmetaError> {
        self.run_op(|st, start| GetBucketAndObject::new(st, bucket, key, version_id, start))
            .await
    }

    /// `getObjects(b, items)`.
    pub async fn get_objects(&self, bucket: &str, items: &Json) -> Result<Json, ObjmetaError> {
        self.run_op(|st, start| GetObjects::new(st, bucket, items, start))
            .await
    }

    /// `putBucketAttributesCapabilities(b, name, field?, cap)`.
    pub async fn put_bucket_capability(
        &self,
        bucket: &str,
        name: &str,
        field: Option<&str>,
        capability: &Json,
    ) -> Result<(), ObjmetaError> {
        let capability = capability.clone();
        self.run_op(|st, start| {
            PutBucketAttributesCapabilities::new(st, bucket, name, field, capability, start)
        })
        .await
    }

    /// `deleteBucketAttributesCapability(b, name, field?)`.
    pub async fn delete_bucket_capability(
        &self,
        bucket: &str,
        name: &str,
        field: Option<&str>,
    ) -> Result<(), ObjmetaError> {
        self.run_op(|st, start| {
            DeleteBucketAttributesCapability::new(st, bucket, name, field, start)
        })
        .await
    }

    /// `readCountItems()`.
    pub async fn read_count_items(&self) -> Result<Json, ObjmetaError> {
        self.run_op(|st, start| ReadCountItems::new(st, start))
            .await
    }

    /// `updateCountItems(v)`.
    pub async fn update_count_items(&self, value: &Json) -> Result<(), ObjmetaError> {
        let value = value.clone();
        self.run_op(|st, start| UpdateCountItems::new(st, value, start))
            .await
    }

    /// `getUUID()`.
    pub async fn get_uuid(&self, candidate: Option<&str>) -> Result<String, ObjmetaError> {
        self.run_op(|st, start| GetUuid::new(st, candidate, start))
            .await
    }

    /// `countItems()`.
    pub async fn count_items(&self) -> Result<Json, ObjmetaError> {
        self.run_op(|st, start| CountItems::new(st, start)).await
    }

    /// Runs one repair now, the machine's time standing at its `due` (the driver's clock is
    /// not moved); its events are recorded like an operation's.
    pub async fn run_repair(&self, task: RepairTask) -> RepairReport {
        let machine = self.repair_machine(&task, task.due);
        let at_due = AtTime::new(&self.driver, task.due);
        let (result, repairs) = Self::drive(&at_due, &self.shared, machine).await;
        // An AsyncRepair schedules nothing; kept uniform with every other machine.
        self.schedule(repairs);
        RepairReport {
            task,
            outcome: result.unwrap_or(RepairOutcome::Failed),
        }
    }

    /// Runs every pending repair whose `due` ≤ `now`, in scheduling order, each at its `due`.
    pub async fn run_due_repairs(&self, now: Timestamp) -> Vec<RepairReport> {
        let due = {
            let mut repairs = lock_repairs(&self.repairs);
            let (due, later) = std::mem::take(&mut repairs.pending)
                .into_iter()
                .partition(|t| t.due <= now);
            repairs.pending = later;
            due
        };
        self.run_repairs(due).await
    }

    /// Runs every pending repair, in scheduling order, each at its `due` (scenario "run
    /// repairs").
    pub async fn run_all_repairs(&self) -> Vec<RepairReport> {
        let all = std::mem::take(&mut lock_repairs(&self.repairs).pending);
        self.run_repairs(all).await
    }

    /// Runs `tasks` one after the other.
    async fn run_repairs(&self, tasks: Vec<RepairTask>) -> Vec<RepairReport> {
        let mut reports = Vec::new();
        for task in tasks {
            reports.push(self.run_repair(task).await);
        }
        reports
    }

    /// Forgets every repair not run yet (a process exit): the pending ones, and the
    /// background ones, whose tasks are aborted. Returns them in scheduling order, pending
    /// ones first.
    pub fn drop_pending_repairs(&self) -> Vec<RepairTask> {
        let mut repairs = lock_repairs(&self.repairs);
        let mut dropped = std::mem::take(&mut repairs.pending);
        dropped.extend(lock(&self.shared).running.drain(..).map(|(_, task)| task));
        for (_, handle) in repairs.aborts.drain(..) {
            handle.abort();
        }
        dropped
    }
}

/// Every row of a bucket's collection (`collection`, e.g.
/// [`collection_for_bucket`](rowkit_codec::objmeta::keys::collection_for_bucket)) as Arsenal's
/// JSON `{key, row_key_hex, value}`, in key order: `key` is the row key after the collection
/// prefix, `value` the stored document (latest `d:value`). One ReadRows; an error (the
/// read's, or a row without a document) is returned as text.
pub async fn bucket_rows<D: Driver + ?Sized>(
    driver: &D,
    table: &str,
    collection: &str,
) -> Result<Vec<Json>, String> {
    let req = ReadRowsRequest {
        table: table.to_string(),
        rows: RowSet::range(RowRange::half_open(
            collection_start(collection),
            collection_end(collection),
        )),
        filter: Some(filters::latest()),
        ..Default::default()
    };
    let m = ReadRows::new(req, driver.now(), 0, RetryPolicy::default());
    let mut rows = Vec::new();
    run(driver, m, |r| rows.push(r))
        .await
        .map_err(|e| format!("{e:?}"))?;
    let n = collection.len() + 1;
    rows.iter()
        .map(|r| {
            let doc = StoredDoc::from_row(r)
                .map_err(|e| e.to_string())?
                .ok_or("row without d:value")?;
            let key = String::from_utf8_lossy(&r.key[n.min(r.key.len())..]).into_owned();
            let hex: String = r.key.iter().map(|b| format!("{b:02x}")).collect();
            Ok(Json::Object(
                [
                    ("key".to_string(), Json::str(key)),
                    ("row_key_hex".to_string(), Json::str(hex)),
                    ("value".to_string(), doc.value),
                ]
                .into_iter()
                .collect(),
            ))
        })
        .collect()
}
