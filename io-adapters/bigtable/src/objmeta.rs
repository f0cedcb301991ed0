//! `ObjectMetadata`: the Tokio facade over the objmeta machines (`spec/objmeta.md`) on a
//! [`BigtableConnection`], the async twin of `rowkit_embedded::objmeta::ObjectMetadata`: it
//! owns Arsenal's per-process [`ObjmetaState`] and shares the driver-independent bookkeeping
//! ([`ObjmetaCalls`]: seeds, deadline, pending repairs).
//!
//! Delayed repairs (`objmeta.md` 16.5): by default ([`RepairDriving::Background`]) each
//! `RepairScheduled` event starts a Tokio task that drives its `AsyncRepair` machine like any
//! machine, on the facade's clock: the driver sleeps until the machine's `poll_timeout` (its
//! `due`), then runs it. The facade keeps each task until it has run
//! ([`ObjectMetadata::background_repairs`], [`ObjectMetadata::wait_for_repairs`],
//! [`ObjectMetadata::take_repair_reports`]); dropping the facade, or
//! [`ObjectMetadata::drop_pending_repairs`], aborts the tasks not yet finished (a process
//! exit: the placeholder stays, as `objmeta.md` 8.4 allows). With [`RepairDriving::OnCall`]
//! repairs wait for [`ObjectMetadata::run_due_repairs`] / [`ObjectMetadata::run_all_repairs`],
//! as in the sync facade.
//!
//! Change events, a background repair's included, are kept in emission order for
//! [`ObjectMetadata::take_events`] and also streamed, as the machine emits them, to every
//! receiver of [`ObjectMetadata::subscribe`].

use rowkit_codec::objmeta::cells::families;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::listing::ListingParams;
use rowkit_embedded::driver::{ManualClock, SystemClock};
use rowkit_embedded::objmeta::{ObjmetaCalls, RepairReport};
use rowkit_statemachines::objmeta::{
    BucketEntry, CountItemsOp, CreateBucketOp, DeleteBucketAttributesCapabilityOp, DeleteBucketOp,
    DeleteObjectOp, GetBucketAndObjectOp, GetBucketAttributesOp, GetBucketVFormatOp, GetObjectOp,
    GetObjectsOp, GetUuidOp, ListBucketsOp, ListObject, ObjmetaError, ObjmetaEvent, ObjmetaState,
    OpMachine, PutBucketAttributesCapabilitiesOp, PutBucketAttributesOp, PutObjectOp,
    ReadCountItemsOp, RepairOutcome, RepairTask, UpdateCountItemsOp,
};
use rowkit_statemachines::{Code, Timestamp};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::JoinHandle;

use crate::connection::BigtableConnection;
use crate::driver::{self, RunError, SharedClock};

/// Who runs the repairs that deletes schedule (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RepairDriving {
    /// A Tokio task per repair, sleeping until its `due` (`objmeta.md` 16.5).
    #[default]
    Background,
    /// Kept pending until `run_due_repairs` / `run_all_repairs`.
    OnCall,
}

/// What the facade and its background repairs share: the subscribers, the events not yet
/// taken (in emission order) and the reports of finished background repairs.
#[derive(Debug, Default)]
struct Shared {
    subscribers: Vec<UnboundedSender<ObjmetaEvent>>,
    events: Vec<ObjmetaEvent>,
    finished: Vec<RepairReport>,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // A panic while holding the lock leaves plain data behind: keep using it.
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Hands `e` to the subscribers (dropping the closed ones) and keeps it for `take_events`.
fn emit(shared: &Mutex<Shared>, e: ObjmetaEvent) {
    let mut s = lock(shared);
    s.subscribers.retain(|tx| tx.send(e.clone()).is_ok());
    s.events.push(e);
}

/// The Tokio object-metadata facade (see the module doc).
pub struct ObjectMetadata {
    conn: BigtableConnection,
    clock: SharedClock,
    state: ObjmetaState,
    calls: ObjmetaCalls,
    shared: Arc<Mutex<Shared>>,
    driving: RepairDriving,
    background: Vec<(RepairTask, JoinHandle<()>)>,
}

impl std::fmt::Debug for ObjectMetadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectMetadata")
            .field("calls", &self.calls)
            .field("driving", &self.driving)
            .field("background", &self.background.len())
            .finish_non_exhaustive()
    }
}

impl Drop for ObjectMetadata {
    fn drop(&mut self) {
        for (_, task) in &self.background {
            task.abort();
        }
    }
}

fn run_error(e: RunError<ObjmetaError>) -> ObjmetaError {
    match e {
        RunError::Machine(e) => e,
        RunError::Stalled | RunError::Closed => ObjmetaError::internal_error(e.to_string()),
    }
}

impl ObjectMetadata {
    /// A facade over `conn` with `state` (config + generator + cache) on the wall clock;
    /// `seed` feeds each machine's seed (incremented per operation).
    pub fn new(conn: BigtableConnection, state: ObjmetaState, seed: u64) -> ObjectMetadata {
        ObjectMetadata {
            conn,
            clock: Arc::new(SystemClock),
            state,
            calls: ObjmetaCalls::new(seed),
            shared: Arc::default(),
            driving: RepairDriving::default(),
            background: Vec::new(),
        }
    }

    /// The same facade with repairs run as `driving` says (default: background tasks).
    pub fn with_repair_driving(mut self, driving: RepairDriving) -> ObjectMetadata {
        self.driving = driving;
        self
    }

    /// The same facade on `clock` (version ids and repair due times come from it).
    pub fn with_clock(mut self, clock: SharedClock) -> ObjectMetadata {
        self.clock = clock;
        self
    }

    /// Per-operation deadline (default 60 s).
    pub fn set_deadline(&mut self, micros: i64) {
        self.calls.set_deadline(micros);
    }

    /// The state (config, generator, cache).
    pub fn state(&self) -> &ObjmetaState {
        &self.state
    }

    /// The state, mutably (e.g. to change the default vFormat).
    pub fn state_mut(&mut self) -> &mut ObjmetaState {
        &mut self.state
    }

    /// A receiver of every later change event, sent as the machine emits it (dropping the
    /// receiver unsubscribes it).
    pub fn subscribe(&mut self) -> UnboundedReceiver<ObjmetaEvent> {
        let (tx, rx) = unbounded_channel();
        lock(&self.shared).subscribers.push(tx);
        rx
    }

    /// `setup` (`objmeta.md` 5.1): creates the table with families `d` and `f`; an existing
    /// table is left as it is.
    pub async fn setup(&self) -> Result<(), ObjmetaError> {
        let table = &self.state.config.table;
        match self.conn.create_table(table, &families()).await {
            Ok(()) => Ok(()),
            Err(e) if e.code == Code::AlreadyExists => Ok(()),
            Err(e) => Err(ObjmetaError::internal_error(e)),
        }
    }

    /// Change events since the last call, in emission order (background repairs' included).
    pub fn take_events(&mut self) -> Vec<ObjmetaEvent> {
        std::mem::take(&mut lock(&self.shared).events)
    }

    /// Repairs waiting for [`ObjectMetadata::run_due_repairs`], in scheduling order (with
    /// [`RepairDriving::OnCall`]; background repairs are [`ObjectMetadata::background_repairs`]).
    pub fn pending_repairs(&self) -> &[RepairTask] {
        self.calls.pending_repairs()
    }

    /// Background repairs not finished yet, in scheduling order.
    pub fn background_repairs(&self) -> Vec<RepairTask> {
        self.background
            .iter()
            .filter(|(_, handle)| !handle.is_finished())
            .map(|(task, _)| task.clone())
            .collect()
    }

    /// Reports of the background repairs finished since the last call, in finishing order.
    pub fn take_repair_reports(&mut self) -> Vec<RepairReport> {
        self.background.retain(|(_, handle)| !handle.is_finished());
        std::mem::take(&mut lock(&self.shared).finished)
    }

    /// Waits until every background repair has run (each at its `due`), then returns
    /// [`ObjectMetadata::take_repair_reports`]. Cancel-safe: a repair not yet awaited stays
    /// tracked.
    pub async fn wait_for_repairs(&mut self) -> Vec<RepairReport> {
        while let Some((_, handle)) = self.background.first_mut() {
            // A task ends by itself unless aborted; either way it is done with.
            let _ = handle.await;
            self.background.remove(0);
        }
        self.take_repair_reports()
    }

    /// Starts the background task of one repair: it drives the machine on the facade's clock
    /// and connection, so it sleeps until `due`, then reads and writes.
    fn spawn_repair(&mut self, task: RepairTask) {
        // Finished handles are done with (their reports wait in `shared`).
        self.background.retain(|(_, handle)| !handle.is_finished());
        let start = self.clock.now();
        let mut machine = self
            .calls
            .repair_machine(&self.state.config.table, &task, start);
        let (conn, clock, shared) = (self.conn.clone(), self.clock.clone(), self.shared.clone());
        let report_task = task.clone();
        let handle = tokio::spawn(async move {
            let outcome = driver::run_with(&conn, &*clock, &mut machine, |e| emit(&shared, e))
                .await
                .unwrap_or(RepairOutcome::Failed);
            lock(&shared).finished.push(RepairReport {
                task: report_task,
                outcome,
            });
        });
        self.background.push((task, handle));
    }

    /// Schedules the repairs an operation's events ask for, as [`RepairDriving`] says.
    fn schedule(&mut self, tasks: Vec<RepairTask>) {
        for task in tasks {
            match self.driving {
                RepairDriving::Background => self.spawn_repair(task),
                RepairDriving::OnCall => self.calls.schedule(task),
            }
        }
    }

    async fn run_op<O: rowkit_statemachines::objmeta::engine::Op>(
        &mut self,
        op: O,
    ) -> Result<O::Output, ObjmetaError> {
        let now = self.clock.now();
        let (seed, deadline) = self.calls.begin(now);
        let mut repairs = Vec::new();
        let shared = &self.shared;
        let r = {
            let mut m = OpMachine::new(op, &mut self.state, now, seed, deadline);
            driver::run_with(&self.conn, &*self.clock, &mut m, |e| {
                if let ObjmetaEvent::RepairScheduled(task) = &e {
                    repairs.push(task.clone());
                }
                emit(shared, e)
            })
            .await
        };
        self.schedule(repairs);
        r.map_err(run_error)
    }

    /// `createBucket(b, md)` → the vFormat written.
    pub async fn create_bucket(
        &mut self,
        bucket: &str,
        md: &Json,
    ) -> Result<VFormat, ObjmetaError> {
        self.run_op(CreateBucketOp {
            bucket: bucket.into(),
            md: md.clone(),
        })
        .await
    }

    /// `putBucketAttributes(b, md)`.
    pub async fn put_bucket_attributes(
        &mut self,
        bucket: &str,
        md: &Json,
    ) -> Result<(), ObjmetaError> {
        self.run_op(PutBucketAttributesOp {
            bucket: bucket.into(),
            md: md.clone(),
        })
        .await
    }

    /// `getBucketAttributes(b)`.
    pub async fn get_bucket_attributes(&mut self, bucket: &str) -> Result<Json, ObjmetaError> {
        self.run_op(GetBucketAttributesOp {
            bucket: bucket.into(),
        })
        .await
    }

    /// `deleteBucket(b)` → rows deleted from the collection.
    pub async fn delete_bucket(&mut self, bucket: &str) -> Result<u64, ObjmetaError> {
        self.run_op(DeleteBucketOp {
            bucket: bucket.into(),
        })
        .await
    }

    /// `listBuckets()`.
    pub async fn list_buckets(&mut self) -> Result<Vec<BucketEntry>, ObjmetaError> {
        self.run_op(ListBucketsOp).await
    }

    /// `putObject(b, k, value, params)` → `{"versionId": "…"}` or `None`.
    pub async fn put_object(
        &mut self,
        bucket: &str,
        key: &str,
        value: &Json,
        params: Option<&Json>,
    ) -> Result<Option<String>, ObjmetaError> {
        self.run_op(PutObjectOp {
            bucket: bucket.into(),
            key: key.into(),
            value: value.clone(),
            params: params.cloned(),
        })
        .await
    }

    /// `getObject(b, k, {versionId})`.
    pub async fn get_object(
        &mut self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<Json, ObjmetaError> {
        self.run_op(GetObjectOp {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(String::from),
        })
        .await
    }

    /// `deleteObject(b, k, params, originOp)`.
    pub async fn delete_object(
        &mut self,
        bucket: &str,
        key: &str,
        params: Option<&Json>,
        origin_op: Option<&str>,
    ) -> Result<(), ObjmetaError> {
        self.run_op(DeleteObjectOp {
            bucket: bucket.into(),
            key: key.into(),
            params: params.cloned(),
            origin_op: origin_op.map(String::from),
        })
        .await
    }

    /// `listObject(b, params)` → Arsenal's result (values as JSON text).
    pub async fn list_object(
        &mut self,
        bucket: &str,
        params: &ListingParams,
    ) -> Result<Json, ObjmetaError> {
        let now = self.clock.now();
        let (seed, deadline) = self.calls.begin(now);
        let mut m = ListObject::new(bucket, params.clone(), &mut self.state, now, seed, deadline);
        driver::run_with(&self.conn, &*self.clock, &mut m, |_| {})
            .await
            .map_err(run_error)
    }

    /// `getBucketVFormat(b)`.
    pub async fn get_bucket_vformat(&mut self, bucket: &str) -> Result<VFormat, ObjmetaError> {
        self.run_op(GetBucketVFormatOp {
            bucket: bucket.into(),
        })
        .await
    }

    /// `getBucketAndObject(b, k, {versionId})` → `(BucketInfo, object or None)`.
    pub async fn get_bucket_and_object(
        &mut self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> Result<(Json, Option<Json>), ObjmetaError> {
        self.run_op(GetBucketAndObjectOp {
            get: GetObjectOp {
                bucket: bucket.into(),
                key: key.into(),
                version_id: version_id.map(String::from),
            },
        })
        .await
    }

    /// `getObjects(b, items)`.
    pub async fn get_objects(&mut self, bucket: &str, items: &Json) -> Result<Json, ObjmetaError> {
        self.run_op(GetObjectsOp {
            bucket: bucket.into(),
            items: items.clone(),
        })
        .await
    }

    /// `putBucketAttributesCapabilities(b, name, field?, cap)`.
    pub async fn put_bucket_capability(
        &mut self,
        bucket: &str,
        name: &str,
        field: Option<&str>,
        capability: &Json,
    ) -> Result<(), ObjmetaError> {
        self.run_op(PutBucketAttributesCapabilitiesOp {
            bucket: bucket.into(),
            name: name.into(),
            field: field.map(String::from),
            capability: capability.clone(),
        })
        .await
    }

    /// `deleteBucketAttributesCapability(b, name, field?)`.
    pub async fn delete_bucket_capability(
        &mut self,
        bucket: &str,
        name: &str,
        field: Option<&str>,
    ) -> Result<(), ObjmetaError> {
        self.run_op(DeleteBucketAttributesCapabilityOp {
            bucket: bucket.into(),
            name: name.into(),
            field: field.map(String::from),
        })
        .await
    }

    /// `readCountItems()`.
    pub async fn read_count_items(&mut self) -> Result<Json, ObjmetaError> {
        self.run_op(ReadCountItemsOp).await
    }

    /// `updateCountItems(v)`.
    pub async fn update_count_items(&mut self, value: &Json) -> Result<(), ObjmetaError> {
        self.run_op(UpdateCountItemsOp {
            value: value.clone(),
        })
        .await
    }

    /// `getUUID()`.
    pub async fn get_uuid(&mut self, candidate: Option<&str>) -> Result<String, ObjmetaError> {
        self.run_op(GetUuidOp {
            candidate: candidate.map(String::from),
        })
        .await
    }

    /// `countItems()`.
    pub async fn count_items(&mut self) -> Result<Json, ObjmetaError> {
        self.run_op(CountItemsOp).await
    }

    /// Runs one repair now (its clock standing at `due`); its `Put` event is recorded.
    pub async fn run_repair(&mut self, task: RepairTask) -> RepairReport {
        let clock = ManualClock::new(task.due);
        let mut m = self
            .calls
            .repair_machine(&self.state.config.table, &task, task.due);
        let shared = &self.shared;
        let outcome = driver::run_with(&self.conn, &clock, &mut m, |e| emit(shared, e))
            .await
            .unwrap_or(RepairOutcome::Failed);
        RepairReport { task, outcome }
    }

    /// Runs every pending repair whose `due` ≤ `now`, in scheduling order
    /// ([`RepairDriving::OnCall`]).
    pub async fn run_due_repairs(&mut self, now: Timestamp) -> Vec<RepairReport> {
        let mut reports = Vec::new();
        for task in self.calls.take_due(now) {
            reports.push(self.run_repair(task).await);
        }
        reports
    }

    /// Runs every pending repair, each at its `due` ([`RepairDriving::OnCall`]).
    pub async fn run_all_repairs(&mut self) -> Vec<RepairReport> {
        let mut reports = Vec::new();
        for task in self.calls.take_all() {
            reports.push(self.run_repair(task).await);
        }
        reports
    }

    /// Forgets every repair not run yet (a process exit): the pending ones, and the
    /// background ones, whose tasks are aborted. Returns them in scheduling order.
    pub fn drop_pending_repairs(&mut self) -> Vec<RepairTask> {
        let mut dropped = self.calls.take_all();
        for (task, handle) in self.background.drain(..) {
            if !handle.is_finished() {
                handle.abort();
                dropped.push(task);
            }
        }
        dropped
    }
}
