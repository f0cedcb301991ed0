//! `ObjectMetadata`: the sync typed facade over the objmeta machines
//! (`rowkit_statemachines::objmeta`), for any [`Store`] and [`Clock`].
//!
//! It owns Arsenal's per-process [`ObjmetaState`], runs each operation to completion with the
//! sync driver, keeps every change event (drain them with [`ObjectMetadata::take_events`]) and
//! turns each `RepairScheduled` event into a pending [`AsyncRepair`], run by
//! [`ObjectMetadata::run_due_repairs`] (or [`ObjectMetadata::run_all_repairs`]) in scheduling
//! order, each driven with its clock at `due`. The Tokio facade
//! (`rowkit_bigtable::objmeta::ObjectMetadata`) shares the driver-independent bookkeeping,
//! [`ObjmetaCalls`] (seeds, deadline, events, pending repairs), and [`RepairReport`].

use rowkit_codec::model::{RowRange, RowSet};
use rowkit_codec::objmeta::cells::{StoredDoc, families, filters};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{VFormat, collection_end, collection_start};
use rowkit_codec::objmeta::listing::ListingParams;
use rowkit_statemachines::objmeta::{
    AsyncRepair, AsyncRepairOp, BucketEntry, CountItemsOp, CreateBucketOp,
    DeleteBucketAttributesCapabilityOp, DeleteBucketOp, DeleteObjectOp, GetBucketAndObjectOp,
    GetBucketAttributesOp, GetBucketVFormatOp, GetObjectOp, GetObjectsOp, GetUuidOp, ListBucketsOp,
    ListObject, ObjmetaError, ObjmetaEvent, ObjmetaState, OpMachine,
    PutBucketAttributesCapabilitiesOp, PutBucketAttributesOp, PutObjectOp, ReadCountItemsOp,
    RepairOutcome, RepairTask, UpdateCountItemsOp,
};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{Code, ReadRowsRequest, RetryPolicy, Timestamp};

use crate::Store;
use crate::driver::{Clock, ManualClock, RunError, run};

/// A finished repair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairReport {
    /// What was repaired.
    pub task: RepairTask,
    /// How it ended.
    pub outcome: RepairOutcome,
}

/// The driver-independent bookkeeping of a facade: each operation's seed (the base seed,
/// incremented per operation) and deadline, the change events kept for
/// [`ObjmetaCalls::take_events`], and the repairs scheduled by them.
#[derive(Debug, Default)]
pub struct ObjmetaCalls {
    seed: u64,
    deadline_us: Option<i64>,
    events: Vec<ObjmetaEvent>,
    pending: Vec<RepairTask>,
}

impl ObjmetaCalls {
    /// Bookkeeping from base seed `seed`.
    pub fn new(seed: u64) -> ObjmetaCalls {
        ObjmetaCalls {
            seed,
            ..ObjmetaCalls::default()
        }
    }

    /// Per-operation deadline (default: the machines' 60 s).
    pub fn set_deadline(&mut self, micros: i64) {
        self.deadline_us = Some(micros);
    }

    /// The next operation's seed.
    pub fn next_seed(&mut self) -> u64 {
        self.seed = self.seed.wrapping_add(1);
        self.seed
    }

    /// The seed and deadline of an operation starting at `now`.
    pub fn begin(&mut self, now: Timestamp) -> (u64, Option<Timestamp>) {
        let seed = self.next_seed();
        (seed, self.deadline_us.map(|d| now.saturating_add_micros(d)))
    }

    /// Keeps an operation's events, scheduling a repair for each `RepairScheduled`.
    pub fn record(&mut self, events: Vec<ObjmetaEvent>) {
        for e in events {
            if let ObjmetaEvent::RepairScheduled(task) = &e {
                self.schedule(task.clone());
            }
            self.events.push(e);
        }
    }

    /// Adds a repair to the pending ones (run by the facade's `run_due_repairs`).
    pub fn schedule(&mut self, task: RepairTask) {
        self.pending.push(task);
    }

    /// Change events since the last call.
    pub fn take_events(&mut self) -> Vec<ObjmetaEvent> {
        std::mem::take(&mut self.events)
    }

    /// Repairs scheduled and not yet run, in scheduling order.
    pub fn pending_repairs(&self) -> &[RepairTask] {
        &self.pending
    }

    /// Removes and returns the pending repairs whose `due` ≤ `now`, in scheduling order.
    pub fn take_due(&mut self, now: Timestamp) -> Vec<RepairTask> {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|t| t.due <= now);
        self.pending = later;
        due
    }

    /// Removes and returns every pending repair.
    pub fn take_all(&mut self) -> Vec<RepairTask> {
        std::mem::take(&mut self.pending)
    }

    /// The machine of one repair on `table`, created at `start`: until `due` it sends nothing
    /// and its `poll_timeout` is `due` (`objmeta.md` 8.4).
    pub fn repair_machine(
        &mut self,
        table: &str,
        task: &RepairTask,
        start: Timestamp,
    ) -> AsyncRepair {
        let seed = self.next_seed();
        OpMachine::new_delayed(
            AsyncRepairOp { task: task.clone() },
            table.to_string(),
            start,
            task.due,
            seed,
            None,
        )
    }
}

/// The sync object-metadata facade (see the module doc).
pub struct ObjectMetadata<'s, S: Store + ?Sized, C: Clock + ?Sized> {
    store: &'s S,
    clock: &'s C,
    state: ObjmetaState,
    calls: ObjmetaCalls,
}

impl<'s, S: Store + ?Sized, C: Clock + ?Sized> ObjectMetadata<'s, S, C> {
    /// A facade over `store` with `state` (config + generator + cache); `seed` feeds each
    /// machine's seed (incremented per operation).
    pub fn new(store: &'s S, clock: &'s C, state: ObjmetaState, seed: u64) -> Self {
        ObjectMetadata {
            store,
            clock,
            state,
            calls: ObjmetaCalls::new(seed),
        }
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

    /// `setup` (`objmeta.md` 5.1): creates the table with families `d` and `f`, or adds the
    /// missing ones' table.
    pub fn setup(&self) -> Result<(), ObjmetaError> {
        let table = &self.state.config.table;
        match self.store.create_table(table, &families()) {
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

    fn run_op<O: rowkit_statemachines::objmeta::engine::Op>(
        &mut self,
        op: O,
    ) -> Result<O::Output, ObjmetaError> {
        let now = self.clock.now();
        let (seed, deadline) = self.calls.begin(now);
        let mut events = Vec::new();
        let r = {
            let m = OpMachine::new(op, &mut self.state, now, seed, deadline);
            run(self.store, self.clock, m, |e| events.push(e))
        };
        self.calls.record(events);
        r.map_err(|e| match e {
            RunError::Machine(e) => e,
            RunError::Stalled => ObjmetaError::internal_error("machine stalled"),
        })
    }

    /// `createBucket(b, md)` → the vFormat written.
    pub fn create_bucket(&mut self, bucket: &str, md: &Json) -> Result<VFormat, ObjmetaError> {
        self.run_op(CreateBucketOp {
            bucket: bucket.into(),
            md: md.clone(),
        })
    }

    /// `putBucketAttributes(b, md)`.
    pub fn put_bucket_attributes(&mut self, bucket: &str, md: &Json) -> Result<(), ObjmetaError> {
        self.run_op(PutBucketAttributesOp {
            bucket: bucket.into(),
            md: md.clone(),
        })
    }

    /// `getBucketAttributes(b)`.
    pub fn get_bucket_attributes(&mut self, bucket: &str) -> Result<Json, ObjmetaError> {
        self.run_op(GetBucketAttributesOp {
            bucket: bucket.into(),
        })
    }

    /// `deleteBucket(b)` → rows deleted from the collection.
    pub fn delete_bucket(&mut self, bucket: &str) -> Result<u64, ObjmetaError> {
        self.run_op(DeleteBucketOp {
            bucket: bucket.into(),
        })
    }

    /// `listBuckets()`.
    pub fn list_buckets(&mut self) -> Result<Vec<BucketEntry>, ObjmetaError> {
        self.run_op(ListBucketsOp)
    }

    /// `putObject(b, k, value, params)` → `{"versionId": "…"}` or `None`.
    pub fn put_object(
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
    }

    /// `getObject(b, k, {versionId})`.
    pub fn get_object(
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
    }

    /// `deleteObject(b, k, params, originOp)`.
    pub fn delete_object(
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
    }

    /// `listObject(b, params)` → Arsenal's result (values as JSON text).
    pub fn list_object(
        &mut self,
        bucket: &str,
        params: &ListingParams,
    ) -> Result<Json, ObjmetaError> {
        let now = self.clock.now();
        let (seed, deadline) = self.calls.begin(now);
        let (store, clock) = (self.store, self.clock);
        let m = ListObject::new(bucket, params.clone(), &mut self.state, now, seed, deadline);
        run(store, clock, m, |_| {}).map_err(|e| match e {
            RunError::Machine(e) => e,
            RunError::Stalled => ObjmetaError::internal_error("machine stalled"),
        })
    }

    /// `getBucketVFormat(b)`.
    pub fn get_bucket_vformat(&mut self, bucket: &str) -> Result<VFormat, ObjmetaError> {
        self.run_op(GetBucketVFormatOp {
            bucket: bucket.into(),
        })
    }

    /// `getBucketAndObject(b, k, {versionId})` → `(BucketInfo, object or None)`.
    pub fn get_bucket_and_object(
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
    }

    /// `getObjects(b, items)`.
    pub fn get_objects(&mut self, bucket: &str, items: &Json) -> Result<Json, ObjmetaError> {
        self.run_op(GetObjectsOp {
            bucket: bucket.into(),
            items: items.clone(),
        })
    }

    /// `putBucketAttributesCapabilities(b, name, field?, cap)`.
    pub fn put_bucket_capability(
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
    }

    /// `deleteBucketAttributesCapability(b, name, field?)`.
    pub fn delete_bucket_capability(
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
    }

    /// `readCountItems()`.
    pub fn read_count_items(&mut self) -> Result<Json, ObjmetaError> {
        self.run_op(ReadCountItemsOp)
    }

    /// `updateCountItems(v)`.
    pub fn update_count_items(&mut self, value: &Json) -> Result<(), ObjmetaError> {
        self.run_op(UpdateCountItemsOp {
            value: value.clone(),
        })
    }

    /// `getUUID()`.
    pub fn get_uuid(&mut self, candidate: Option<&str>) -> Result<String, ObjmetaError> {
        self.run_op(GetUuidOp {
            candidate: candidate.map(String::from),
        })
    }

    /// `countItems()`.
    pub fn count_items(&mut self) -> Result<Json, ObjmetaError> {
        self.run_op(CountItemsOp)
    }

    /// Runs one repair now (its clock standing at `due`); its `Put` event is recorded.
    pub fn run_repair(&mut self, task: RepairTask) -> RepairReport {
        let clock = ManualClock::new(task.due);
        let m = self
            .calls
            .repair_machine(&self.state.config.table, &task, task.due);
        let mut events = Vec::new();
        let outcome =
            run(self.store, &clock, m, |e| events.push(e)).unwrap_or(RepairOutcome::Failed);
        self.calls.record(events);
        RepairReport { task, outcome }
    }

    /// Runs every pending repair whose `due` ≤ `now`, in scheduling order.
    pub fn run_due_repairs(&mut self, now: Timestamp) -> Vec<RepairReport> {
        let due = self.calls.take_due(now);
        due.into_iter().map(|t| self.run_repair(t)).collect()
    }

    /// Runs every pending repair, each at its `due` (scenario "run repairs").
    pub fn run_all_repairs(&mut self) -> Vec<RepairReport> {
        let all = self.calls.take_all();
        all.into_iter().map(|t| self.run_repair(t)).collect()
    }

    /// Forgets pending repairs without running them (a process exit).
    pub fn drop_pending_repairs(&mut self) -> Vec<RepairTask> {
        self.calls.take_all()
    }
}

/// Every row of a bucket's collection (`collection`, e.g.
/// [`collection_for_bucket`](rowkit_codec::objmeta::keys::collection_for_bucket)) as Arsenal's
/// JSON `{key, row_key_hex, value}`, in key order: `key` is the row key after the collection
/// prefix, `value` the stored document (latest `d:value`). One ReadRows through the sync
/// driver; an error (the read's, or a row without a document) is returned as text.
pub fn bucket_rows(store: &dyn Store, table: &str, collection: &str) -> Result<Vec<Json>, String> {
    let req = ReadRowsRequest {
        table: table.to_string(),
        rows: RowSet::range(RowRange::half_open(
            collection_start(collection),
            collection_end(collection),
        )),
        filter: Some(filters::latest()),
        ..Default::default()
    };
    let m = ReadRows::new(req, Timestamp(0), 0, RetryPolicy::default());
    let mut rows = Vec::new();
    run(store, &ManualClock::new(Timestamp(0)), m, |r| rows.push(r))
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
