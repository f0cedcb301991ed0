//! Object metadata (`spec/objmeta.md`) under the simulator: clients put, delete and read a
//! small universe of keys in two buckets (one v0, one v1 key format) and list them, while
//! the delayed placeholder repairs the deletes schedule run as operations of their own.
//!
//! Each bucket has three kinds of keys, as S3 buckets use them (§12):
//! - a **plain** key (versioning never enabled): non-versioned puts (`{}`) and deletes;
//! - two **versioned** keys: versioned puts (Case1, delete markers included) and deletes of
//!   a version id (the placeholder-master path when it is the current one);
//! - a **suspended** key: versioned puts, null-version puts (Case2, `{versionId: ""}`,
//!   delete markers included) and version deletes (of a null id too).
//!
//! Every operation runs as its own Arsenal process: its own `ObjmetaState`, with a `pid`
//! that decreases with the start order so that ids generated in the same millisecond by
//! operations that do not overlap still sort newest first (§16.1 asks for distinct pids).
//! Version ids to delete and read come from acknowledged puts; a few are unknown ids.
//!
//! After the run, every pending repair runs at its `due` (time moves there), then, as
//! `rowkit s3 repair` does, every placeholder master left in the store is repaired (a crash
//! can leave one no repair was scheduled for). Then:
//! - **no acknowledged version is lost**: each acknowledged versioned put's version reads
//!   back by version id with its value (`GetObject`), unless an acknowledged delete of that
//!   id started after the put ended (then it must read `NoSuchKey`); other deletes of it
//!   leave it open;
//! - **the master is the latest version** of every versioned and suspended key: equal to the
//!   newest version row (apart from the repair's `originOp`), absent when there is none or
//!   when v1's newest version is a delete marker, or a null master newer than every version
//!   row. Open when the newest version comes from an unacknowledged put, or when its put
//!   overlapped another write of the key (Arsenal's non-atomic steps allow a stale master
//!   then, e.g. a repair or a placeholder delete that read the latest version just before the
//!   put wrote it). A placeholder left with no version (repairs leave it, reads ignore it) is
//!   open when the delete that wrote it failed or overlapped another write, wrong otherwise.
//!   Plain keys: the master is the last write's when the history decides it;
//! - **reads never expose a placeholder master** (§9.2 step 3, §10.1): no acknowledged get
//!   and no listing entry of the run is a value with `isPHD`, whatever the history;
//! - **listings** (DelimiterVersions, DelimiterMaster) list every decided version with its
//!   value and none of the decided-deleted ones, and the current entry of every decided key;
//! - **acknowledged gets** answered what the history decides: reads by version id after
//!   the put (or after its acknowledged delete), current reads of plain keys with no
//!   overlapping write, current reads of the other keys when every write of the key so far
//!   was acknowledged and sequential (then the model is exact).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::rc::Rc;

use rowkit_codec::model::{RowRange, RowSet};
use rowkit_codec::objmeta::cells::{StoredDoc, families, filters};
use rowkit_codec::objmeta::json::{Json, JsonObject};
use rowkit_codec::objmeta::keys::{VFormat, collection_end, collection_start, decode_row_key};
use rowkit_codec::objmeta::listing::{ListingParams, ListingType};
use rowkit_statemachines::check::CheckTarget;
use rowkit_statemachines::objmeta::Check;
use rowkit_statemachines::objmeta::{
    AsyncRepair, CreateBucket, DEFAULT_DEADLINE_US, DeleteObject, GetObject, ListObject,
    ObjmetaConfig, ObjmetaEvent, ObjmetaState, PutObject, RepairOutcome, RepairTask,
};
use rowkit_statemachines::operation::Start;
#[cfg(feature = "planted-bugs")]
use rowkit_statemachines::planted::PlantedBug;
use rowkit_statemachines::{
    Machine, ReadRowsRequest, Request, Response, SplitMix64, StoreError, Tag, Timestamp,
};

use super::{
    CHECK_EVERY, CheckOutcome, Checked, Outcome, Record, RepairLog, SimMachine, Workload, check_op,
    check_options, erase, verify_concurrent_checks, verify_settled_checks,
};
use rowkit_store::driver::ManualClock;
use rowkit_store::{MemoryStore, Store};

pub(crate) const TABLE: &str = "objmeta";
/// The buckets and their key formats.
pub(crate) const BUCKETS: [(&str, VFormat); 2] =
    [("simzero", VFormat::V0), ("simone", VFormat::V1)];
/// How each key is used (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Plain,
    Versioned,
    Suspended,
}
const KEYS: [(&str, Mode); 4] = [
    ("plain", Mode::Plain),
    ("ver-a", Mode::Versioned),
    ("ver-b", Mode::Versioned),
    ("susp", Mode::Suspended),
];
/// A version id no put generates (newest possible id, so it sorts first).
const UNKNOWN_VID: &str = "00000000000000999999RG001  none";
/// pids count down from here, one per operation (fixed width: string order = number order).
const FIRST_PID: u64 = 999_999_999;

/// How a put writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PutKind {
    /// Non-versioned (`{}`).
    Plain,
    /// Versioned (Case1, `{versioning: true}`).
    Version,
    /// A delete marker, versioned (Case1).
    VersionDeleteMarker,
    /// A null version (Case2, `{versionId: ""}`, `isNull: true`).
    Null,
    /// A null delete marker (Case2).
    NullDeleteMarker,
}

impl PutKind {
    fn versioned(self) -> bool {
        matches!(self, PutKind::Version | PutKind::VersionDeleteMarker)
    }
    fn null(self) -> bool {
        matches!(self, PutKind::Null | PutKind::NullDeleteMarker)
    }
    fn delete_marker(self) -> bool {
        matches!(
            self,
            PutKind::VersionDeleteMarker | PutKind::NullDeleteMarker
        )
    }
}

/// An operation on the universe (bucket and key by index).
#[derive(Clone, PartialEq, Eq)]
pub enum ObjmetaOp {
    /// `PutObject` of `{key, n}` (plus the kind's flags).
    Put {
        /// Bucket index.
        bucket: usize,
        /// Key index.
        key: usize,
        /// Distinguishes the values.
        n: u64,
        /// How it writes.
        kind: PutKind,
    },
    /// `DeleteObject`, of a version id or (`None`) the non-versioned object.
    Delete {
        /// Bucket index.
        bucket: usize,
        /// Key index.
        key: usize,
        /// Raw version id.
        version: Option<String>,
        /// Identifies the operation (the placeholders it writes are traced back to it).
        n: u64,
    },
    /// `GetObject`, by version id or current.
    Get {
        /// Bucket index.
        bucket: usize,
        /// Key index.
        key: usize,
        /// Raw version id.
        version: Option<String>,
    },
    /// `ListObject` (`DelimiterVersions` if `versions`, else `DelimiterMaster`).
    List {
        /// Bucket index.
        bucket: usize,
        /// Which listing.
        versions: bool,
    },
    /// `AsyncRepair` of a scheduled (or found) placeholder.
    Repair(RepairTask),
    /// A check of the table with `--fix`: its number in `log`, where its writes are.
    Check {
        /// The check's number.
        n: u64,
        /// The run's log of check writes.
        log: RepairLog,
    },
}

impl fmt::Debug for ObjmetaOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |b: &usize, k: &usize| format!("{}/{}", BUCKETS[*b].0, KEYS[*k].0);
        match self {
            ObjmetaOp::Put {
                bucket,
                key,
                n,
                kind,
            } => {
                write!(f, "Put {} n={n} {kind:?}", at(bucket, key))
            }
            ObjmetaOp::Delete {
                bucket,
                key,
                version,
                n,
            } => write!(f, "Delete {} n={n} version={version:?}", at(bucket, key)),
            ObjmetaOp::Get {
                bucket,
                key,
                version,
            } => write!(f, "Get {} version={version:?}", at(bucket, key)),
            ObjmetaOp::List { bucket, versions } => write!(
                f,
                "List {} {}",
                BUCKETS[*bucket].0,
                if *versions {
                    "DelimiterVersions"
                } else {
                    "DelimiterMaster"
                }
            ),
            ObjmetaOp::Repair(t) => write!(
                f,
                "Repair {}/{} phd={} due={}",
                t.bucket, t.key, t.phd_version_id, t.due.0
            ),
            ObjmetaOp::Check { n, .. } => write!(f, "Check#{n} --fix"),
        }
    }
}

impl ObjmetaOp {
    /// Whether it writes (a check: may have repaired) the key `k` of bucket `b`.
    fn writes(&self, b: usize, k: usize) -> bool {
        match self {
            ObjmetaOp::Put { bucket, key, .. } | ObjmetaOp::Delete { bucket, key, .. } => {
                (*bucket, *key) == (b, k)
            }
            ObjmetaOp::Repair(t) => t.bucket == BUCKETS[b].0 && t.key == KEYS[k].0,
            ObjmetaOp::Check { n, log } => log.rows(*n).iter().any(|row| {
                decode_row_key(row).is_ok_and(|d| {
                    d.bucket.as_deref() == Some(BUCKETS[b].0) && d.object_key == KEYS[k].0
                })
            }),
            ObjmetaOp::Get { .. } | ObjmetaOp::List { .. } => false,
        }
    }

    /// Whether it is a put or a delete (what an application's writer sends).
    pub(crate) fn is_object_write(&self) -> bool {
        matches!(self, ObjmetaOp::Put { .. } | ObjmetaOp::Delete { .. })
    }

    /// Whether it is a check.
    pub(crate) fn is_check(&self) -> bool {
        matches!(self, ObjmetaOp::Check { .. })
    }

    /// Whether it may write the bucket `b` (a put, a delete, a repair, a check with `--fix`):
    /// the operations an operator stops at a migration's `--switch` gate
    /// (`docs/migration.md` §6.1).
    pub(crate) fn may_write(&self, b: usize) -> bool {
        match self {
            ObjmetaOp::Put { bucket, .. } | ObjmetaOp::Delete { bucket, .. } => *bucket == b,
            ObjmetaOp::Repair(t) => t.bucket == BUCKETS[b].0,
            ObjmetaOp::Check { .. } => true,
            ObjmetaOp::Get { .. } | ObjmetaOp::List { .. } => false,
        }
    }
}

/// What an operation returned.
#[derive(Clone, Debug, PartialEq)]
pub enum ObjmetaOutput {
    /// A put: the version id it reported (`None` for a non-versioned put).
    Put(Option<String>),
    /// A delete finished.
    Deleted,
    /// A get's value.
    Got(Json),
    /// A listing's result.
    Listed(Json),
    /// A repair's outcome.
    Repaired(RepairOutcome),
    /// A check's findings.
    Checked(CheckOutcome),
}

type History = [Record<ObjmetaOp, ObjmetaOutput>];
type Rec = Record<ObjmetaOp, ObjmetaOutput>;

/// What operations learn while they run: acknowledged version ids, scheduled repairs.
#[derive(Debug, Default)]
struct Shared {
    /// Acknowledged version ids per (bucket, key), in acknowledgement order.
    versions: BTreeMap<(usize, usize), Vec<String>>,
    /// Scheduled repairs no operation has taken yet.
    repairs: VecDeque<RepairTask>,
    /// Placeholder id → the delete (`n`) that wrote it.
    placeholders: BTreeMap<String, u64>,
}

/// The object-metadata workload (see the module doc).
#[derive(Debug)]
pub struct ObjmetaWorkload {
    /// A bug planted in every machine this workload starts (the simulator's self-test; this
    /// crate's `planted-bugs` feature).
    #[cfg(feature = "planted-bugs")]
    pub planted: Option<PlantedBug>,
    shared: Rc<RefCell<Shared>>,
    next_n: u64,
    next_pid: Cell<u64>,
    /// What each check of the run wrote.
    check_writes: RepairLog,
    checks: u64,
    /// How processes and the model see each bucket's key format (a migration changes it).
    layouts: [BucketLayout; 2],
    /// Readers (gets, listings) run on processes that read the bucket's key format instead of
    /// using a cached one: they read the truth of a migrating bucket (`docs/migration.md` §3).
    fresh_readers: bool,
    /// Finding kinds a check among the writers may report besides [`CONCURRENT_KINDS`].
    extra_concurrent_kinds: Vec<&'static str>,
}

/// One bucket's key format as the workload sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BucketLayout {
    /// What a new process has cached (`None`: it reads `d:vFormat` on first use).
    cached: Option<VFormat>,
    /// The format of the bucket's rows once the run has settled.
    rows: VFormat,
    /// Whether the bucket was v1 at some point of the run: its keys may then have no master
    /// over a delete-marker latest version, which a migration to v0 keeps (§4.1).
    was_v1: bool,
}

impl BucketLayout {
    fn of(vf: VFormat) -> BucketLayout {
        BucketLayout {
            cached: Some(vf),
            rows: vf,
            was_v1: vf == VFormat::V1,
        }
    }
}

impl Default for ObjmetaWorkload {
    fn default() -> Self {
        ObjmetaWorkload {
            #[cfg(feature = "planted-bugs")]
            planted: None,
            shared: Rc::default(),
            next_n: 0,
            next_pid: Cell::new(FIRST_PID),
            check_writes: RepairLog::default(),
            checks: 0,
            layouts: BUCKETS.map(|(_, vf)| BucketLayout::of(vf)),
            fresh_readers: false,
            extra_concurrent_kinds: Vec::new(),
        }
    }
}

/// What a check among the writers may find (`spec/check.md` §3): the states a write in flight
/// or one that crashed leaves until its repair runs.
const CONCURRENT_KINDS: [&str; 3] = [
    "placeholder_due",
    "versions_without_master",
    "master_behind",
];

/// A check's deadline (the other operations have none: they run until done).
const CHECK_DEADLINE_US: i64 = 60_000_000;

fn check_machine(now: Timestamp, fix: bool, seed: u64) -> Check {
    Check::new(
        CheckTarget::new(TABLE),
        None,
        check_options(fix),
        Start::within(now, seed, CHECK_DEADLINE_US),
    )
}

/// The stored value a put writes (before the version id is set).
fn put_value(key: usize, n: u64, kind: PutKind) -> Json {
    let mut o = JsonObject::new();
    o.set("key", Json::str(KEYS[key].0));
    o.set("n", Json::Number(n as f64));
    if kind.null() {
        o.set("isNull", Json::Bool(true));
    }
    if kind.delete_marker() {
        o.set("isDeleteMarker", Json::Bool(true));
    }
    Json::Object(o)
}

/// The value a put leaves in its rows, given the id it reported.
fn stored_value(key: usize, n: u64, kind: PutKind, vid: Option<&str>) -> Json {
    let mut v = put_value(key, n, kind);
    if let (Some(vid), Some(o)) = (vid, v.as_object_mut()) {
        o.set("versionId", Json::str(vid));
    }
    v
}

/// The id inside a put's `{"versionId": "<vid>"}`.
fn reported_vid(result: &Option<String>) -> Option<String> {
    let r = result.as_deref()?;
    let inner = r.strip_prefix("{\"versionId\": \"")?.strip_suffix("\"}")?;
    Some(inner.to_string())
}

/// A value without the repair's `originOp` (and the listing's dropped `location`, which
/// these values never have).
fn strip_origin(v: &Json) -> Json {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("originOp");
    }
    v
}

fn vid_of(v: &Json) -> Option<&str> {
    v.get("versionId").and_then(Json::as_str)
}

/// Wraps a machine to collect the repairs it schedules (the host's job, §16.5).
struct Tap<M> {
    machine: M,
    shared: Rc<RefCell<Shared>>,
    /// The delete operation it runs (`n`), whose placeholder ids are recorded.
    delete: Option<u64>,
}

impl<M: Machine<Event = ObjmetaEvent>> Machine for Tap<M> {
    type Output = M::Output;
    type Event = ObjmetaEvent;
    type Error = M::Error;

    fn handle_response(&mut self, tag: Tag, r: Result<Response, StoreError>, now: Timestamp) {
        self.machine.handle_response(tag, r, now);
    }
    fn handle_timeout(&mut self, now: Timestamp) {
        self.machine.handle_timeout(now);
    }
    fn cancel(&mut self, now: Timestamp) {
        self.machine.cancel(now);
    }
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.machine.poll_request()
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        self.machine.poll_abort()
    }
    fn poll_event(&mut self) -> Option<ObjmetaEvent> {
        let e = self.machine.poll_event()?;
        match &e {
            ObjmetaEvent::RepairScheduled(task) => {
                self.shared.borrow_mut().repairs.push_back(task.clone());
            }
            ObjmetaEvent::Put { value, .. } => {
                let phd = Json::parse(value).ok().filter(|v| v.member_truthy("isPHD"));
                if let (Some(n), Some(p)) = (self.delete, phd.as_ref().and_then(vid_of)) {
                    self.shared
                        .borrow_mut()
                        .placeholders
                        .insert(p.to_string(), n);
                }
            }
            // Deletes, and events added later, change nothing the workload tracks.
            _ => {}
        }
        Some(e)
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.machine.poll_timeout()
    }
    fn result(&mut self) -> Option<Result<M::Output, M::Error>> {
        self.machine.result()
    }
}

/// The store's rows of one key.
#[derive(Debug, Default)]
struct KeyRows {
    master: Option<Json>,
    /// Version id → value, newest first (ids sort newest first).
    versions: BTreeMap<String, Json>,
}

impl ObjmetaWorkload {
    /// The workload with `bug` planted in every machine it starts.
    #[cfg(feature = "planted-bugs")]
    pub fn with_planted_bug(bug: PlantedBug) -> ObjmetaWorkload {
        ObjmetaWorkload {
            planted: Some(bug),
            ..Default::default()
        }
    }

    /// A fresh Arsenal process: its own pid, the buckets' vFormats cached as
    /// [`BucketLayout::cached`] says.
    fn state(&self) -> ObjmetaState {
        let mut state = self.uncached_state();
        for ((b, _), layout) in BUCKETS.iter().zip(&self.layouts) {
            if let Some(vf) = layout.cached {
                state.cache_vformat(b, vf);
            }
        }
        state
    }

    /// A fresh Arsenal process that reads each bucket's vFormat on first use.
    fn uncached_state(&self) -> ObjmetaState {
        let pid = self.next_pid.get();
        self.next_pid.set(pid.saturating_sub(1));
        ObjmetaState::new(ObjmetaConfig {
            table: TABLE.into(),
            pid,
            #[cfg(feature = "planted-bugs")]
            planted: self.planted,
            ..ObjmetaConfig::default()
        })
    }

    /// A fresh process of rowkit's client facade (`ObjmetaConfig::migration_aware`): it reads
    /// each bucket's vFormat and migration marker, and follows the marker (`docs/migration.md`
    /// §3, §9).
    fn aware_state(&self) -> ObjmetaState {
        let mut state = self.uncached_state();
        state.config.migration_aware = true;
        state
    }

    /// The process a put or delete runs on: aware, or an Arsenal one with its cached vFormat.
    fn writer_state(&self, aware: bool) -> ObjmetaState {
        if aware {
            self.aware_state()
        } else {
            self.state()
        }
    }

    /// The process a get or listing runs on.
    fn reader_state(&self) -> ObjmetaState {
        if self.fresh_readers {
            self.uncached_state()
        } else {
            self.state()
        }
    }

    /// New processes cache `cached` as bucket `b`'s vFormat (`None`: they read it).
    pub(crate) fn set_cached_vformat(&mut self, b: usize, cached: Option<VFormat>) {
        self.layouts[b].cached = cached;
    }

    /// Bucket `b`'s rows are in format `vf` once the run settles (a migration's end).
    pub(crate) fn set_rows_vformat(&mut self, b: usize, vf: VFormat) {
        self.layouts[b].rows = vf;
        self.layouts[b].was_v1 |= vf == VFormat::V1;
    }

    /// Readers read each bucket's vFormat (aware readers of a migration) rather than cache it.
    pub(crate) fn set_fresh_readers(&mut self, fresh: bool) {
        self.fresh_readers = fresh;
    }

    /// Lets checks among the writers report `kind` too.
    pub(crate) fn allow_concurrent_finding(&mut self, kind: &'static str) {
        if !self.extra_concurrent_kinds.contains(&kind) {
            self.extra_concurrent_kinds.push(kind);
        }
    }

    /// Starts `op`; its put or delete runs on an aware process when `aware` (a write of
    /// rowkit's client facade beside a migration), else on an Arsenal one.
    pub(crate) fn start_on(
        &self,
        op: &ObjmetaOp,
        now: Timestamp,
        seed: u64,
        aware: bool,
    ) -> SimMachine<ObjmetaOutput> {
        let names = |b: &usize, k: &usize| (BUCKETS[*b].0.to_string(), KEYS[*k].0.to_string());
        match op {
            ObjmetaOp::Put {
                bucket,
                key,
                n,
                kind,
            } => {
                let (b, k) = names(bucket, key);
                let params = match kind {
                    PutKind::Plain => "{}",
                    PutKind::Version | PutKind::VersionDeleteMarker => "{\"versioning\":true}",
                    PutKind::Null | PutKind::NullDeleteMarker => "{\"versionId\":\"\"}",
                };
                let value = put_value(*key, *n, *kind);
                let params = Json::parse(params).ok();
                let shared = self.shared.clone();
                let at = (*bucket, *key);
                let m = PutObject::new(
                    self.writer_state(aware),
                    &b,
                    &k,
                    value,
                    params,
                    Start::within(now, seed, DEFAULT_DEADLINE_US),
                );
                erase(self.tap(m, None), move |put| {
                    let out = put.result;
                    if let Some(vid) = reported_vid(&out) {
                        shared
                            .borrow_mut()
                            .versions
                            .entry(at)
                            .or_default()
                            .push(vid);
                    }
                    ObjmetaOutput::Put(out)
                })
            }
            ObjmetaOp::Delete {
                bucket,
                key,
                version,
                n,
            } => {
                let (b, k) = names(bucket, key);
                let params = version.as_ref().map(|v| {
                    let mut o = JsonObject::new();
                    o.set("versionId", Json::str(v.clone()));
                    Json::Object(o)
                });
                let state = self.writer_state(aware);
                let m = DeleteObject::new(
                    state,
                    &b,
                    &k,
                    params.as_ref(),
                    None,
                    Start::within(now, seed, DEFAULT_DEADLINE_US),
                );
                erase(self.tap(m, Some(*n)), |()| ObjmetaOutput::Deleted)
            }
            ObjmetaOp::Get {
                bucket,
                key,
                version,
            } => {
                let (b, k) = names(bucket, key);
                let version = version.as_deref();
                let m = GetObject::new(
                    self.reader_state(),
                    &b,
                    &k,
                    version,
                    Start::within(now, seed, DEFAULT_DEADLINE_US),
                );
                erase(m, ObjmetaOutput::Got)
            }
            ObjmetaOp::List { bucket, versions } => {
                let params = listing_params(*versions);
                let m = ListObject::new(
                    self.reader_state(),
                    BUCKETS[*bucket].0,
                    params,
                    Start::within(now, seed, DEFAULT_DEADLINE_US),
                );
                erase(m, ObjmetaOutput::Listed)
            }
            ObjmetaOp::Repair(task) => {
                let m =
                    AsyncRepair::new(TABLE, task.clone(), AsyncRepair::start_at(task, now, seed));
                erase(m, ObjmetaOutput::Repaired)
            }
            ObjmetaOp::Check { n, log } => check_op(
                check_machine(now, true, seed),
                *n,
                log,
                ObjmetaOutput::Checked,
            ),
        }
    }

    /// Forgets the scheduled repairs of bucket `b` nobody took yet: their processes were
    /// stopped (a placeholder they leave is found by the final sweep, [`Workload::repairs`]).
    pub(crate) fn drop_pending_repairs(&self, b: usize) {
        self.shared
            .borrow_mut()
            .repairs
            .retain(|t| t.bucket != BUCKETS[b].0);
    }

    /// A read of bucket `b`: a current get of a random key, or a listing.
    pub(crate) fn next_read(&mut self, rng: &mut SplitMix64, b: usize) -> ObjmetaOp {
        let r = rng.next_u64();
        match r % 8 {
            0 => ObjmetaOp::List {
                bucket: b,
                versions: r.is_multiple_of(16),
            },
            _ => ObjmetaOp::Get {
                bucket: b,
                key: ((r >> 8) % KEYS.len() as u64) as usize,
                version: None,
            },
        }
    }

    fn tap<M: Machine<Event = ObjmetaEvent>>(&self, machine: M, delete: Option<u64>) -> Tap<M> {
        Tap {
            machine,
            shared: self.shared.clone(),
            delete,
        }
    }

    /// Every row of every bucket, by (bucket, key).
    fn store_rows(
        &self,
        store: &MemoryStore,
        now: Timestamp,
    ) -> Result<BTreeMap<(usize, usize), KeyRows>, String> {
        let mut out: BTreeMap<(usize, usize), KeyRows> = BTreeMap::new();
        for (b, (bucket, _)) in BUCKETS.iter().enumerate() {
            let vf = &self.layouts[b].rows;
            let request = ReadRowsRequest {
                table: TABLE.into(),
                rows: RowSet::range(RowRange::half_open(
                    collection_start(bucket),
                    collection_end(bucket),
                )),
                filter: Some(filters::latest()),
                ..Default::default()
            };
            let rows = rowkit_client::read_rows_blocking(store, request, now)
                .map_err(|e| e.to_string())?;
            for row in rows {
                let arsenal = String::from_utf8_lossy(&row.key[bucket.len() + 1..]).into_owned();
                let Some(doc) = StoredDoc::from_row(&row).map_err(|e| e.to_string())? else {
                    return Err(format!("row {arsenal:?} of {bucket} has no value"));
                };
                if doc.deleted {
                    return Err(format!("row {arsenal:?} of {bucket} is flagged deleted"));
                }
                let (name, version) = match vf {
                    VFormat::V1 => {
                        match (arsenal.strip_prefix("\x7fM"), arsenal.strip_prefix("\x7fV")) {
                            (Some(m), _) => (m.to_string(), None),
                            (_, Some(v)) => match v.split_once('\0') {
                                Some((k, id)) => (k.to_string(), Some(id.to_string())),
                                None => return Err(format!("bad version key {arsenal:?}")),
                            },
                            _ => return Err(format!("unexpected key {arsenal:?} in a v1 bucket")),
                        }
                    }
                    VFormat::V0 => match arsenal.split_once('\0') {
                        Some((k, id)) => (k.to_string(), Some(id.to_string())),
                        None => (arsenal.clone(), None),
                    },
                };
                let Some(k) = KEYS.iter().position(|(n, _)| *n == name) else {
                    return Err(format!("row of unknown key {arsenal:?} in {bucket}"));
                };
                let entry = out.entry((b, k)).or_default();
                match version {
                    None => entry.master = Some(doc.value),
                    Some(id) => {
                        if vid_of(&doc.value) != Some(id.as_str()) {
                            return Err(format!(
                                "version row {arsenal:?} of {bucket} holds versionId {:?}",
                                vid_of(&doc.value)
                            ));
                        }
                        entry.versions.insert(id, doc.value);
                    }
                }
            }
        }
        Ok(out)
    }

    fn get_now(
        &self,
        store: &MemoryStore,
        now: Timestamp,
        bucket: usize,
        key: usize,
        version: Option<&str>,
    ) -> Result<Option<Json>, String> {
        let (b, k) = (BUCKETS[bucket].0, KEYS[key].0);
        let m = GetObject::new(
            self.uncached_state(),
            b,
            k,
            version,
            Start::within(now, 0, DEFAULT_DEADLINE_US),
        );
        match rowkit_client::run_blocking(store, &ManualClock::new(now), m, |_| {}) {
            Ok(v) => Ok(Some(v)),
            Err(rowkit_client::RunError::Machine(
                rowkit_statemachines::objmeta::ObjmetaError::NoSuchKey,
            )) => Ok(None),
            Err(e) => Err(format!(
                "get {}/{} {version:?}: {e:?}",
                BUCKETS[bucket].0, KEYS[key].0
            )),
        }
    }

    fn list_now(
        &self,
        store: &MemoryStore,
        now: Timestamp,
        bucket: usize,
        versions: bool,
    ) -> Result<Vec<(String, Option<String>, Json)>, String> {
        let params = listing_params(versions);
        let m = ListObject::new(
            self.uncached_state(),
            BUCKETS[bucket].0,
            params,
            Start::within(now, 0, DEFAULT_DEADLINE_US),
        );
        let result = rowkit_client::run_blocking(store, &ManualClock::new(now), m, |_| {})
            .map_err(|e| format!("listing {}: {e:?}", BUCKETS[bucket].0))?;
        listing_entries(&result, versions)
    }
}

fn listing_params(versions: bool) -> ListingParams {
    ListingParams {
        listing_type: if versions {
            ListingType::DelimiterVersions
        } else {
            ListingType::DelimiterMaster
        },
        ..Default::default()
    }
}

/// A listing's entries as (key, versionId, value).
fn listing_entries(
    result: &Json,
    versions: bool,
) -> Result<Vec<(String, Option<String>, Json)>, String> {
    let member = if versions { "Versions" } else { "Contents" };
    if result.get("IsTruncated") != Some(&Json::Bool(false)) {
        return Err(format!("listing truncated: {}", result.stringify()));
    }
    let Some(Json::Array(entries)) = result.get(member) else {
        return Err(format!("listing without {member}: {}", result.stringify()));
    };
    entries
        .iter()
        .map(|e| {
            let key = e
                .get("key")
                .and_then(Json::as_str)
                .ok_or("entry without key")?;
            let vid = e.get("versionId").and_then(Json::as_str).map(String::from);
            let text = e
                .get("value")
                .and_then(Json::as_str)
                .ok_or("entry without value")?;
            let value = Json::parse(text).map_err(|e| e.to_string())?;
            Ok((key.to_string(), vid, value))
        })
        .collect()
}

/// The acknowledged puts, by (bucket, key, reported id).
struct Puts<'h> {
    by_vid: BTreeMap<(usize, usize, String), (&'h Rec, Json, PutKind)>,
}

impl<'h> Puts<'h> {
    fn new(history: &'h History) -> Puts<'h> {
        let mut by_vid = BTreeMap::new();
        for r in history {
            let (
                ObjmetaOp::Put {
                    bucket,
                    key,
                    n,
                    kind,
                },
                Outcome::Done(Ok(ObjmetaOutput::Put(out))),
            ) = (&r.op, &r.outcome)
            else {
                continue;
            };
            if let Some(vid) = reported_vid(out) {
                let value = stored_value(*key, *n, *kind, Some(&vid));
                by_vid.insert((*bucket, *key, vid), (r, value, *kind));
            }
        }
        Puts { by_vid }
    }

    fn get(&self, b: usize, k: usize, vid: &str) -> Option<&(&'h Rec, Json, PutKind)> {
        self.by_vid.get(&(b, k, vid.to_string()))
    }
}

fn overlap(a: &Rec, b: &Rec) -> bool {
    a.start <= b.end && b.start <= a.end
}

fn writes_of(history: &History, b: usize, k: usize) -> impl Iterator<Item = &Rec> {
    history.iter().filter(move |r| r.op.writes(b, k))
}

fn deletes_of<'h>(history: &'h History, b: usize, k: usize, vid: &str) -> Vec<&'h Rec> {
    history
        .iter()
        .filter(|r| {
            matches!(&r.op, ObjmetaOp::Delete { bucket, key, version: Some(v), .. }
                if (*bucket, *key) == (b, k) && v == vid)
        })
        .collect()
}

/// Whether a version put `put` is present (`Some(true)`), deleted (`Some(false)`) or open
/// as of `at` (`None`: the put must have ended before `at`).
fn version_state(
    history: &History,
    put: &Rec,
    b: usize,
    k: usize,
    vid: &str,
    at: Timestamp,
) -> Option<bool> {
    if put.end >= at {
        return None;
    }
    let dels: Vec<_> = deletes_of(history, b, k, vid)
        .into_iter()
        .filter(|d| d.start <= at)
        .collect();
    if dels.is_empty() {
        return Some(true);
    }
    if dels
        .iter()
        .any(|d| d.acknowledged() && d.start > put.end && d.end < at)
    {
        return Some(false);
    }
    None
}

/// Plain keys: the master as the history decides it at `at` (`Some(None)` = absent).
fn plain_master(history: &History, b: usize, k: usize, at: Timestamp) -> Option<Option<Json>> {
    let writes: Vec<_> = writes_of(history, b, k).filter(|r| r.start <= at).collect();
    let Some(last) = writes.iter().max_by_key(|r| r.start) else {
        return Some(None);
    };
    // A check's repair keeps the key open, never decides it.
    let decided = last.acknowledged()
        && !last.op.is_check()
        && last.end <= at
        && writes
            .iter()
            .all(|r| std::ptr::eq(*r, *last) || r.end < last.start);
    if !decided {
        return None;
    }
    match &last.op {
        ObjmetaOp::Put { key, n, kind, .. } => Some(Some(stored_value(*key, *n, *kind, None))),
        _ => Some(None),
    }
}

/// Versioned and suspended keys: the current object at `at` when the last write of the key
/// before `at` is an acknowledged put that overlapped no other write of the key. Its id is
/// then newer than every id written before, so it is the master (v1 delete marker: the newest
/// version row), whatever earlier writes left behind.
fn last_put_current(history: &History, b: usize, k: usize, at: Timestamp) -> Option<Option<Json>> {
    let writes: Vec<&Rec> = writes_of(history, b, k).filter(|r| r.start <= at).collect();
    let last = writes.iter().max_by_key(|r| r.start)?;
    let decided = last.end < at
        && writes
            .iter()
            .all(|r| std::ptr::eq(*r, *last) || r.end < last.start);
    match (&last.op, &last.outcome) {
        (ObjmetaOp::Put { key, n, kind, .. }, Outcome::Done(Ok(ObjmetaOutput::Put(out))))
            if decided =>
        {
            let vid = reported_vid(out)?;
            Some(Some(stored_value(*key, *n, *kind, Some(&vid))))
        }
        _ => None,
    }
}

/// Whether every write of the key was acknowledged and none overlapped another.
fn sequential(history: &History, b: usize, k: usize) -> bool {
    let writes: Vec<&Rec> = writes_of(history, b, k).collect();
    writes.iter().enumerate().all(|(i, w)| {
        w.acknowledged() && !w.op.is_check() && writes[..i].iter().all(|p| !overlap(p, w))
    })
}

/// Versioned and suspended keys: the current object at `at` when every write of the key
/// that started before `at` was acknowledged (or a delete that found nothing) and they ran
/// one after another, ended before `at`; `Some(None)` = no object.
fn sequential_current(
    history: &History,
    b: usize,
    k: usize,
    at: Timestamp,
) -> Option<Option<Json>> {
    let writes: Vec<&Rec> = writes_of(history, b, k).filter(|r| r.start <= at).collect();
    for (i, w) in writes.iter().enumerate() {
        let clean = match &w.outcome {
            Outcome::Done(Ok(_)) => !w.op.is_check(),
            Outcome::Done(Err(e)) => matches!(w.op, ObjmetaOp::Delete { .. }) && e == "NoSuchKey",
            Outcome::Crashed => false,
        };
        if !clean || w.end >= at || writes[..i].iter().any(|p| overlap(p, w)) {
            return None;
        }
    }
    // Rows by id (newest first) and the null master, replayed in order.
    let mut rows: BTreeMap<String, Json> = BTreeMap::new();
    let mut null: Option<(String, Json)> = None;
    for w in writes {
        match (&w.op, &w.outcome) {
            (ObjmetaOp::Put { key, n, kind, .. }, Outcome::Done(Ok(ObjmetaOutput::Put(out)))) => {
                let vid = reported_vid(out)?;
                let value = stored_value(*key, *n, *kind, Some(&vid));
                if kind.null() {
                    null = Some((vid, value));
                } else {
                    if null.as_ref().is_some_and(|(s, _)| *s > vid) {
                        null = None;
                    }
                    rows.insert(vid, value);
                }
            }
            (
                ObjmetaOp::Delete {
                    version: Some(v), ..
                },
                Outcome::Done(Ok(_)),
            ) => {
                rows.remove(v);
                if null.as_ref().is_some_and(|(s, _)| s == v) {
                    null = None;
                }
            }
            _ => {}
        }
    }
    Some(match null {
        Some((_, v)) => Some(v),
        None => rows.into_values().next(),
    })
}

impl Workload for ObjmetaWorkload {
    type Op = ObjmetaOp;
    type Output = ObjmetaOutput;

    fn setup(&mut self, store: &MemoryStore, now: Timestamp, _seed: u64) -> Result<(), String> {
        self.shared = Rc::default();
        self.next_n = 0;
        self.check_writes.clear();
        self.checks = 0;
        self.next_pid.set(FIRST_PID);
        self.layouts = BUCKETS.map(|(_, vf)| BucketLayout::of(vf));
        store
            .create_table(TABLE, &families())
            .map_err(|e| e.to_string())?;
        let clock = ManualClock::new(now);
        for (bucket, vf) in BUCKETS {
            let mut state = ObjmetaState::new(ObjmetaConfig {
                table: TABLE.into(),
                default_bucket_key_format: vf,
                ..ObjmetaConfig::default()
            });
            let md = Json::parse(&format!(
                "{{\"name\":\"{bucket}\",\"owner\":\"sim\",\"uid\":\"uid-{bucket}\"}}"
            ))
            .map_err(|e| e.to_string())?;
            let m = CreateBucket::new(
                &mut state,
                bucket,
                &md,
                Start::within(now, 0, DEFAULT_DEADLINE_US),
            );
            rowkit_client::run_blocking(store, &clock, m, |_| {})
                .map_err(|e| format!("create bucket: {e:?}"))?;
        }
        Ok(())
    }

    fn next_op(&mut self, rng: &mut SplitMix64) -> ObjmetaOp {
        if rng.next_u64().is_multiple_of(CHECK_EVERY) {
            self.checks += 1;
            return ObjmetaOp::Check {
                n: self.checks,
                log: self.check_writes.clone(),
            };
        }
        let mut pick = |n: usize| (rng.next_u64() % n as u64) as usize;
        let bucket = pick(BUCKETS.len());
        let roll = pick(40);
        if roll < 3 {
            return ObjmetaOp::List {
                bucket,
                versions: roll < 2,
            };
        }
        if roll < 6
            && let Some(task) = self.shared.borrow_mut().repairs.pop_front()
        {
            return ObjmetaOp::Repair(task);
        }
        let key = pick(KEYS.len());
        let known: Vec<String> = self
            .shared
            .borrow()
            .versions
            .get(&(bucket, key))
            .cloned()
            .unwrap_or_default();
        let some_version = |pick: &mut dyn FnMut(usize) -> usize| {
            if known.is_empty() || pick(10) == 0 {
                return UNKNOWN_VID.to_string();
            }
            // Mostly recent ones: they are the ones still there.
            let i = if pick(4) == 0 {
                pick(known.len())
            } else {
                known.len() - 1 - pick(known.len().min(3))
            };
            known[i].clone()
        };
        self.next_n += 1;
        let n = self.next_n;
        let put = |kind| ObjmetaOp::Put {
            bucket,
            key,
            n,
            kind,
        };
        let r = pick(20);
        match KEYS[key].1 {
            Mode::Plain => match r {
                0..=8 => put(PutKind::Plain),
                9..=13 => ObjmetaOp::Delete {
                    bucket,
                    key,
                    version: None,
                    n,
                },
                _ => ObjmetaOp::Get {
                    bucket,
                    key,
                    version: None,
                },
            },
            mode => match r {
                0..=5 => put(PutKind::Version),
                6 => put(PutKind::VersionDeleteMarker),
                7..=8 if mode == Mode::Suspended => put(PutKind::Null),
                9 if mode == Mode::Suspended => put(PutKind::NullDeleteMarker),
                7..=9 => put(PutKind::Version),
                10..=13 => ObjmetaOp::Delete {
                    bucket,
                    key,
                    version: Some(some_version(&mut pick)),
                    n,
                },
                14..=16 => ObjmetaOp::Get {
                    bucket,
                    key,
                    version: None,
                },
                _ => ObjmetaOp::Get {
                    bucket,
                    key,
                    version: Some(some_version(&mut pick)),
                },
            },
        }
    }

    fn start(&self, op: &ObjmetaOp, now: Timestamp, seed: u64) -> SimMachine<ObjmetaOutput> {
        self.start_on(op, now, seed, false)
    }

    /// The repairs nobody ran, each at its `due`; then, as `rowkit s3 repair` does, one
    /// repair (due now) of every placeholder master left in the store.
    fn repairs(
        &mut self,
        store: &MemoryStore,
        now: Timestamp,
        _history: &History,
    ) -> Vec<ObjmetaOp> {
        let mut ops: Vec<ObjmetaOp> = self
            .shared
            .borrow_mut()
            .repairs
            .drain(..)
            .map(ObjmetaOp::Repair)
            .collect();
        // A failed read leaves the sweep out; the check then reports the placeholders.
        if let Ok(rows) = self.store_rows(store, now) {
            for ((b, k), kr) in rows {
                let Some(m) = kr.master.filter(|m| m.member_truthy("isPHD")) else {
                    continue;
                };
                let Some(p) = vid_of(&m) else { continue };
                ops.push(ObjmetaOp::Repair(RepairTask {
                    bucket: BUCKETS[b].0.into(),
                    key: KEYS[k].0.into(),
                    phd_version_id: p.to_string(),
                    vformat: self.layouts[b].rows,
                    due: now,
                    migration: None,
                }));
            }
        }
        ops
    }

    fn check(
        &mut self,
        store: &MemoryStore,
        now: Timestamp,
        history: &History,
    ) -> Result<Checked, String> {
        let mut checked = Checked::default();
        let checks = history.iter().filter_map(|r| match &r.outcome {
            Outcome::Done(Ok(ObjmetaOutput::Checked(outcome))) => Some((&r.op, outcome)),
            _ => None,
        });
        let allowed: Vec<&str> = CONCURRENT_KINDS
            .iter()
            .chain(&self.extra_concurrent_kinds)
            .copied()
            .collect();
        verify_concurrent_checks(checks, &allowed, &mut checked)?;
        // The invariants below then hold on the repaired table.
        verify_settled_checks(
            store,
            now,
            |fix, seed| check_machine(now, fix, seed),
            &mut checked,
        )?;
        let rows = self.store_rows(store, now)?;
        let empty = KeyRows::default();
        let puts = Puts::new(history);
        let at_end = Timestamp(now.0.saturating_add(1));

        // No acknowledged version lost (read back by id through GetObject).
        let mut decided_versions: BTreeMap<(usize, usize, String), Option<Json>> = BTreeMap::new();
        for ((b, k, vid), (put, value, kind)) in &puts.by_vid {
            if !kind.versioned() {
                continue;
            }
            let Some(present) = version_state(history, put, *b, *k, vid, at_end) else {
                checked.undecided += 1;
                continue;
            };
            let want = present.then(|| value.clone());
            let got = self.get_now(store, now, *b, *k, Some(vid))?;
            if got != want {
                return Err(format!(
                    "version {vid:?} of {}/{} (put at {}..{}): GetObject by version id gives {}, expected {}",
                    BUCKETS[*b].0,
                    KEYS[*k].0,
                    put.start.0,
                    put.end.0,
                    got.map_or("NoSuchKey".into(), |v| v.stringify()),
                    want.as_ref().map_or("NoSuchKey".into(), Json::stringify),
                ));
            }
            decided_versions.insert((*b, *k, vid.clone()), want);
            checked.decided += 1;
        }

        // The master of every key (after repairs), and what the current listing must show.
        let mut current: BTreeMap<(usize, usize), Option<Json>> = BTreeMap::new();
        for (b, (bucket, _)) in BUCKETS.iter().enumerate() {
            let was_v1 = self.layouts[b].was_v1;
            for (k, (key, mode)) in KEYS.iter().enumerate() {
                let kr = rows.get(&(b, k)).unwrap_or(&empty);
                if *mode == Mode::Plain {
                    if !kr.versions.is_empty() {
                        return Err(format!("plain key {bucket}/{key} has version rows"));
                    }
                    match plain_master(history, b, k, at_end) {
                        Some(want) => {
                            if kr.master != want {
                                return Err(format!(
                                    "plain key {bucket}/{key}: master {:?}, the history says {:?}",
                                    kr.master.as_ref().map(Json::stringify),
                                    want.as_ref().map(Json::stringify)
                                ));
                            }
                            checked.decided += 1;
                            current.insert((b, k), want);
                        }
                        None => checked.undecided += 1,
                    }
                    continue;
                }
                let latest = kr.versions.iter().next();
                let master = kr.master.as_ref();
                let is_phd = master.is_some_and(|m| m.member_truthy("isPHD"));
                let null_master = master
                    .filter(|m| !is_phd && m.member_truthy("isNull"))
                    .filter(|m| {
                        latest.is_none_or(|(x, _)| vid_of(m).is_some_and(|s| s < x.as_str()))
                    });
                let consistent = match (master, latest) {
                    // Only a delete that failed midway leaves a placeholder with no version
                    // (repairs leave it, reads ignore it): open then, wrong otherwise.
                    (_, None) if is_phd => false,
                    (None, None) => true,
                    (Some(_), None) => null_master.is_some(),
                    (Some(_), Some(_)) if is_phd => false,
                    (None, Some((_, lv))) => was_v1 && lv.member_truthy("isDeleteMarker"),
                    (Some(m), Some((_, lv))) => strip_origin(m) == *lv || null_master.is_some(),
                };
                // Which put's value should be current: the null master's, or the newest row's.
                let (current_vid, is_null) = match (null_master, latest) {
                    (Some(m), _) => (vid_of(m).map(String::from), true),
                    (None, Some((x, _))) => (Some(x.clone()), false),
                    (None, None) => (None, false),
                };
                let decided = match &current_vid {
                    // A placeholder with no version: decided when the delete that wrote it
                    // was acknowledged and overlapped no other write of the key (only a
                    // delete that failed midway, or a race, leaves one behind).
                    None if is_phd => {
                        let creator = master.and_then(vid_of).and_then(|p| {
                            let n = *self.shared.borrow().placeholders.get(p)?;
                            writes_of(history, b, k)
                                .find(|w| matches!(w.op, ObjmetaOp::Delete { n: d, .. } if d == n))
                        });
                        creator.is_some_and(|d| {
                            d.acknowledged()
                                && writes_of(history, b, k)
                                    .all(|w| std::ptr::eq(w, d) || !overlap(w, d))
                        })
                    }
                    None => sequential(history, b, k),
                    Some(x) => match puts.get(b, k, x) {
                        Some((p, _, kind)) if kind.null() == is_null => {
                            writes_of(history, b, k).all(|w| std::ptr::eq(w, *p) || !overlap(w, p))
                        }
                        _ => false,
                    },
                };
                if !decided {
                    checked.undecided += 1;
                    continue;
                }
                if !consistent {
                    return Err(format!(
                        "{bucket}/{key} after repairs: master {:?} is not the latest version {:?}",
                        master.map(Json::stringify),
                        latest.map(|(x, v)| (x, v.stringify()))
                    ));
                }
                checked.decided += 1;
                let visible = current_vid
                    .and_then(|x| puts.get(b, k, &x))
                    .filter(|(_, _, kind)| !kind.delete_marker())
                    .map(|(_, v, _)| v.clone());
                current.insert((b, k), visible);
            }
        }

        // Listings against the model.
        for (b, (bucket, _)) in BUCKETS.iter().enumerate() {
            let versions = self.list_now(store, now, b, true)?;
            for ((vb, vk, vid), want) in &decided_versions {
                if *vb != b {
                    continue;
                }
                let found: Vec<_> = versions
                    .iter()
                    .filter(|(key, v, _)| key == KEYS[*vk].0 && v.as_deref() == Some(vid.as_str()))
                    .collect();
                let ok = match (want, found.as_slice()) {
                    (None, []) => true,
                    (Some(w), [(_, _, v)]) => strip_origin(v) == *w,
                    _ => false,
                };
                if !ok {
                    return Err(format!(
                        "DelimiterVersions of {bucket}: version {vid:?} of {} listed {:?}, expected {:?}",
                        KEYS[*vk].0,
                        found
                            .iter()
                            .map(|(_, _, v)| v.stringify())
                            .collect::<Vec<_>>(),
                        want.as_ref().map(Json::stringify)
                    ));
                }
                checked.decided += 1;
            }
            for (k, (key, mode)) in KEYS.iter().enumerate() {
                if *mode != Mode::Plain {
                    continue;
                }
                let Some(want) = current.get(&(b, k)) else {
                    continue;
                };
                let found: Vec<_> = versions.iter().filter(|(n, _, _)| n == key).collect();
                let ok = match (want, found.as_slice()) {
                    (None, []) => true,
                    (Some(w), [(_, v, value)]) => v.as_deref() == Some("null") && value == w,
                    _ => false,
                };
                if !ok {
                    return Err(format!(
                        "DelimiterVersions of {bucket}: plain key {key} listed {found:?}, expected {:?}",
                        want.as_ref().map(Json::stringify)
                    ));
                }
                checked.decided += 1;
            }
            let masters = self.list_now(store, now, b, false)?;
            for (k, (key, _)) in KEYS.iter().enumerate() {
                let Some(want) = current.get(&(b, k)) else {
                    checked.undecided += 1;
                    continue;
                };
                let found: Vec<_> = masters.iter().filter(|(n, _, _)| n == key).collect();
                let ok = match (want, found.as_slice()) {
                    (None, []) => true,
                    (Some(w), [(_, _, v)]) => strip_origin(v) == *w,
                    _ => false,
                };
                if !ok {
                    return Err(format!(
                        "DelimiterMaster of {bucket}: {key} listed {:?}, expected {:?}",
                        found
                            .iter()
                            .map(|(_, _, v)| v.stringify())
                            .collect::<Vec<_>>(),
                        want.as_ref().map(Json::stringify)
                    ));
                }
                checked.decided += 1;
            }
        }

        // Reads never expose a placeholder master (§9.2 step 3, §10.1): every acknowledged
        // get and every listing entry, whatever the history.
        for r in history {
            let entries: Vec<Json> = match &r.outcome {
                Outcome::Done(Ok(ObjmetaOutput::Got(v))) => vec![v.clone()],
                Outcome::Done(Ok(ObjmetaOutput::Listed(l))) => {
                    let versions = matches!(r.op, ObjmetaOp::List { versions: true, .. });
                    listing_entries(l, versions)?
                        .into_iter()
                        .map(|(_, _, v)| v)
                        .collect()
                }
                _ => continue,
            };
            if let Some(phd) = entries.iter().find(|v| v.member_truthy("isPHD")) {
                return Err(format!(
                    "{:?} at {}..{} exposed a placeholder master: {}",
                    r.op,
                    r.start.0,
                    r.end.0,
                    phd.stringify()
                ));
            }
            checked.decided += 1;
        }

        // Acknowledged gets (NoSuchKey is an answer too).
        for r in history {
            let ObjmetaOp::Get {
                bucket: b,
                key: k,
                version,
            } = &r.op
            else {
                continue;
            };
            let got = match &r.outcome {
                Outcome::Done(Ok(ObjmetaOutput::Got(v))) => Some(v.clone()),
                Outcome::Done(Err(e)) if e == "NoSuchKey" => None,
                _ => continue,
            };
            let (b, k) = (*b, *k);
            let want: Option<Option<Json>> = match version {
                Some(vid) => match puts.get(b, k, vid) {
                    None if vid == UNKNOWN_VID => Some(None),
                    None => None,
                    // A null version lives in the master only: no version row to read.
                    Some((_, _, kind)) if kind.null() => Some(None),
                    Some((p, value, _)) => version_state(history, p, b, k, vid, r.start)
                        .filter(|_| {
                            deletes_of(history, b, k, vid)
                                .iter()
                                .all(|d| !overlap(d, r))
                        })
                        .map(|present| present.then(|| value.clone())),
                },
                None => {
                    if writes_of(history, b, k).any(|w| overlap(w, r)) {
                        None
                    } else if KEYS[k].1 == Mode::Plain {
                        plain_master(history, b, k, r.start)
                    } else {
                        last_put_current(history, b, k, r.start)
                            .or_else(|| sequential_current(history, b, k, r.start))
                    }
                }
            };
            let Some(want) = want else {
                checked.undecided += 1;
                continue;
            };
            if got.as_ref().map(strip_origin) != want {
                return Err(format!(
                    "Get {}/{} version {version:?} at {}..{} answered {}, the history says {}",
                    BUCKETS[b].0,
                    KEYS[k].0,
                    r.start.0,
                    r.end.0,
                    got.map_or("NoSuchKey".into(), |v| v.stringify()),
                    want.as_ref().map_or("NoSuchKey".into(), Json::stringify),
                ));
            }
            checked.decided += 1;
        }
        Ok(checked)
    }
}
