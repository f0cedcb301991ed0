//! `ObjectMetadata`: the Tokio facade over the objmeta machines (`spec/objmeta.md`) on a
//! [`BigtableConnection`], the async twin of `rowkit_embedded::objmeta::ObjectMetadata`: it
//! owns Arsenal's per-process [`ObjmetaState`], shares the driver-independent bookkeeping
//! ([`ObjmetaCalls`]: seeds, deadline, change events, pending repairs) and runs each
//! `RepairScheduled` repair on request, driven with its clock at `due`.
//!
//! Change events are kept for [`ObjectMetadata::take_events`] and also streamed, as the
//! machine emits them, to every receiver of [`ObjectMetadata::subscribe`].

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
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::connection::BigtableConnection;
use crate::driver::{self, RunError, SharedClock};

/// The Tokio object-metadata facade (see the module doc).
pub struct ObjectMetadata {
    conn: BigtableConnection,
    clock: SharedClock,
    state: ObjmetaState,
    calls: ObjmetaCalls,
    subscribers: Vec<UnboundedSender<ObjmetaEvent>>,
}

impl std::fmt::Debug for ObjectMetadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectMetadata")
            .field("calls", &self.calls)
            .finish_non_exhaustive()
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
            clock: std::sync::Arc::new(SystemClock),
            state,
            calls: ObjmetaCalls::new(seed),
            subscribers: Vec::new(),
        }
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
        self.subscribers.push(tx);
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

    /// Change events since the last call.
    pub fn take_events(&mut self) -> Vec<ObjmetaEvent> {
        self.calls.take_events()
    }

    /// Repairs scheduled and not yet run, in scheduling order.
    pub fn pending_repairs(&self) -> &[RepairTask] {
        self.calls.pending_repairs()
    }

    /// Hands `e` to the subscribers (dropping the closed ones) and keeps it in `events`.
    fn emit(
        subscribers: &mut Vec<UnboundedSender<ObjmetaEvent>>,
        events: &mut Vec<ObjmetaEvent>,
        e: ObjmetaEvent,
    ) {
        subscribers.retain(|s| s.send(e.clone()).is_ok());
        events.push(e);
    }

    async fn run_op<O: rowkit_statemachines::objmeta::engine::Op>(
        &mut self,
        op: O,
    ) -> Result<O::Output, ObjmetaError> {
        let now = self.clock.now();
        let (seed, deadline) = self.calls.begin(now);
        let mut events = Vec::new();
        let subscribers = &mut self.subscribers;
        let r = {
            let mut m = OpMachine::new(op, &mut self.state, now, seed, deadline);
            driver::run_with(&self.conn, &*self.clock, &mut m, |e| {
                Self::emit(subscribers, &mut events, e)
            })
            .await
        };
        self.calls.record(events);
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
        let mut m = self.calls.repair_machine(&self.state.config.table, &task);
        let mut events = Vec::new();
        let subscribers = &mut self.subscribers;
        let outcome = driver::run_with(&self.conn, &clock, &mut m, |e| {
            Self::emit(subscribers, &mut events, e)
        })
        .await
        .unwrap_or(RepairOutcome::Failed);
        self.calls.record(events);
        RepairReport { task, outcome }
    }

    /// Runs every pending repair whose `due` ≤ `now`, in scheduling order.
    pub async fn run_due_repairs(&mut self, now: Timestamp) -> Vec<RepairReport> {
        let mut reports = Vec::new();
        for task in self.calls.take_due(now) {
            reports.push(self.run_repair(task).await);
        }
        reports
    }

    /// Runs every pending repair, each at its `due`.
    pub async fn run_all_repairs(&mut self) -> Vec<RepairReport> {
        let mut reports = Vec::new();
        for task in self.calls.take_all() {
            reports.push(self.run_repair(task).await);
        }
        reports
    }

    /// Forgets pending repairs without running them (a process exit).
    pub fn drop_pending_repairs(&mut self) -> Vec<RepairTask> {
        self.calls.take_all()
    }
}
