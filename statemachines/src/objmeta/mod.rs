//! Scality Arsenal's object-metadata backend as sans-IO machines (`spec/objmeta.md` 16).
//!
//! Every operation is an [`Operation`] of [`ObjmetaSchema`] created with `new(ctx, args…,
//! Start { now, seed, deadline })` (the crate's dialect; callers without a deadline of their
//! own give `now + `[`DEFAULT_DEADLINE_US`]): [`PutObject`], [`GetObject`], [`DeleteObject`], [`ListObject`],
//! [`CreateBucket`], [`PutBucketAttributes`], [`GetBucketAttributes`], [`DeleteBucket`],
//! [`ListBuckets`], [`GetUuid`], [`CountItems`], [`GetObjects`], [`GetBucketAndObject`],
//! [`GetBucketVFormat`], [`ReadCountItems`], [`UpdateCountItems`],
//! [`PutBucketAttributesCapabilities`], [`DeleteBucketAttributesCapability`], the delayed
//! [`AsyncRepair`], and the layout migration's sync step [`SyncKey`] ([`migrate`]). The context is Arsenal's per-process [`ObjmetaState`] (version-id
//! generator, vFormat cache), borrowed exclusively by one machine at a time (`&mut state`) or
//! moved into it (`state` by value: a `'static` machine, e.g. one of several a simulator runs
//! at once). Change events ([`ObjmetaEvent`]) come out of `poll_event` in the order the
//! operation makes its changes; a `RepairScheduled` event asks the host to run an
//! [`AsyncRepair`] at its `due` time. `cancel` and the deadline end every operation
//! [`ObjmetaError::Aborted`]. The live layout migration's operations are in [`migrate`]
//! (`docs/migration.md`).
//!
//! Each operation is an explicit flow (a struct with a phase enum, `object/`, `bucket.rs`,
//! `list.rs`) over the document-level steps of `documents.rs` and the requests of
//! `requests.rs`; every request runs in a child of the operation's
//! [`Io`](crate::operation::Io) and its reply comes back through `Io`'s handles.
//!
//! ```
//! use rowkit_codec::objmeta::json::Json;
//! use rowkit_statemachines::objmeta::{DEFAULT_DEADLINE_US, GetObject, ObjmetaError, ObjmetaState};
//! use rowkit_statemachines::operation::Start;
//! use rowkit_statemachines::{Machine, Request, Response, Timestamp};
//!
//! let mut state = ObjmetaState::default();
//! let start = Start::within(Timestamp(0), 1, DEFAULT_DEADLINE_US);
//! let mut m = GetObject::new(&mut state, "b", "k", None, start);
//! // The bucket's vFormat is not cached: the metastore row is read first (a point read).
//! let (tag, request) = m.poll_request().unwrap();
//! assert!(matches!(request, Request::ReadRow(_)));
//! m.handle_response(tag, Ok(Response::Row(None)), Timestamp(1));
//! let (tag, _) = m.poll_request().unwrap();
//! m.handle_response(tag, Ok(Response::Row(None)), Timestamp(2));
//! // No master: the latest version, a scan.
//! let (tag, request) = m.poll_request().unwrap();
//! assert!(matches!(request, Request::ReadRows(_)));
//! m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(3));
//! assert_eq!(m.result(), Some(Err(ObjmetaError::NoSuchKey)));
//! ```

mod bucket;
mod check;
mod documents;
mod list;
pub mod migrate;
mod object;
mod requests;

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::marker::{MARKER_TTL_US, MigrationMarker};
use rowkit_codec::objmeta::version_id::VersionIdGenerator;

use crate::RetryPolicy;
use crate::Timestamp;
use crate::operation::{ABORTED_ID, ContextArg, Flow, Operation, OperationError, Schema, Start};

pub use bucket::{
    BucketEntry, CountItemsFlow, CreateBucketFlow, DeleteBucketAttributesCapabilityFlow,
    DeleteBucketFlow, GetBucketAttributesFlow, GetBucketVFormatFlow, GetUuidFlow, ListBucketsFlow,
    PutBucketAttributesCapabilitiesFlow, PutBucketAttributesFlow, ReadCountItemsFlow,
    UpdateCountItemsFlow, bucket_info_value, uuid_v4,
};
pub use check::{Check, CheckFlow};
pub use list::ListObjectFlow;
pub use migrate::sync::{SyncKey, SyncKeyFlow};
pub use object::{
    AsyncRepairFlow, DeleteObjectFlow, GetBucketAndObjectFlow, GetObjectFlow, GetObjectsFlow,
    PutObjectFlow, PutOutcome, RepairOutcome,
};

/// The objmeta schema: operations run on an [`ObjmetaState`], emit [`ObjmetaEvent`]s and fail
/// with [`ObjmetaError`].
#[derive(Debug)]
pub struct ObjmetaSchema;

impl Schema for ObjmetaSchema {
    type Context = ObjmetaState;
    type Event = ObjmetaEvent;
    type Error = ObjmetaError;
}

impl OperationError for ObjmetaError {
    /// Arsenal's name (`NoSuchKey`, …), the CLI's and the JavaScript API's error id.
    fn id(&self) -> &'static str {
        match self {
            ObjmetaError::NoSuchKey => "NoSuchKey",
            ObjmetaError::NoSuchBucket => "NoSuchBucket",
            ObjmetaError::NoSuchVersion => "NoSuchVersion",
            ObjmetaError::BucketAlreadyExists { .. } => "BucketAlreadyExists",
            ObjmetaError::InternalError(_) => "InternalError",
            ObjmetaError::MigrationKey(finding) => finding.id(),
            ObjmetaError::MarkerChanged => "marker_changed",
            ObjmetaError::BucketDeleted => "bucket_deleted",
            ObjmetaError::MigrationTakenOver { .. } => "migration_taken_over",
            ObjmetaError::MigrationInProgress(_) => "migration_in_progress",
            ObjmetaError::MigrationRecordInvalid { .. } => "migration_record_invalid",
            ObjmetaError::MigrationChangeRefused(_) => "migration_change_refused",
            ObjmetaError::MigrationUsage(_) => "usage_error",
            ObjmetaError::MigrationBlocked { .. } => "migration_blocked",
            ObjmetaError::MigrationPauseTooLong { .. } => "migration_pause_too_long",
            ObjmetaError::Aborted => ABORTED_ID,
        }
    }

    fn aborted() -> ObjmetaError {
        ObjmetaError::Aborted
    }

    /// A migrator's refused arguments (`--settle` below the minimum, an `--abort` with
    /// nothing to abort) are the caller's input.
    fn is_bad_input(&self) -> bool {
        matches!(self, ObjmetaError::MigrationUsage(_))
    }

    /// Arsenal reports a failed store request as an internal error.
    fn store(error: crate::StoreError) -> ObjmetaError {
        ObjmetaError::internal(error)
    }
}

/// `PutObject`: the five write strategies of `objmeta.md` 7.
pub type PutObject<'a> = Operation<'a, PutObjectFlow>;
/// `GetObject`, with placeholder resolution (`objmeta.md` 9.2).
pub type GetObject<'a> = Operation<'a, GetObjectFlow>;
/// `DeleteObject` in every case (`objmeta.md` 8).
pub type DeleteObject<'a> = Operation<'a, DeleteObjectFlow>;
/// The delayed placeholder repair (`objmeta.md` 8.4); it owns its context (only the table).
pub type AsyncRepair = Operation<'static, AsyncRepairFlow>;
/// `listObject` with `Delimiter`, `DelimiterMaster` or `DelimiterVersions` (`objmeta.md` 10).
pub type ListObject<'a> = Operation<'a, ListObjectFlow>;
/// `createBucket`.
pub type CreateBucket<'a> = Operation<'a, CreateBucketFlow>;
/// `putBucketAttributes`.
pub type PutBucketAttributes<'a> = Operation<'a, PutBucketAttributesFlow>;
/// `getBucketAttributes`.
pub type GetBucketAttributes<'a> = Operation<'a, GetBucketAttributesFlow>;
/// `deleteBucket`: drops the collection, then the metastore row.
pub type DeleteBucket<'a> = Operation<'a, DeleteBucketFlow>;
/// `listBuckets` (project addition).
pub type ListBuckets<'a> = Operation<'a, ListBucketsFlow>;
/// `getUUID`.
pub type GetUuid<'a> = Operation<'a, GetUuidFlow>;
/// `countItems`.
pub type CountItems<'a> = Operation<'a, CountItemsFlow>;
/// `putBucketAttributesCapabilities` (read–merge–CAS).
pub type PutBucketAttributesCapabilities<'a> = Operation<'a, PutBucketAttributesCapabilitiesFlow>;
/// `deleteBucketAttributesCapability` (read–merge–CAS).
pub type DeleteBucketAttributesCapability<'a> = Operation<'a, DeleteBucketAttributesCapabilityFlow>;
/// `getObjects`.
pub type GetObjects<'a> = Operation<'a, GetObjectsFlow>;
/// `getBucketVFormat`.
pub type GetBucketVFormat<'a> = Operation<'a, GetBucketVFormatFlow>;
/// `getBucketAndObject`.
pub type GetBucketAndObject<'a> = Operation<'a, GetBucketAndObjectFlow>;
/// `readCountItems`.
pub type ReadCountItems<'a> = Operation<'a, ReadCountItemsFlow>;
/// `updateCountItems`.
pub type UpdateCountItems<'a> = Operation<'a, UpdateCountItemsFlow>;

/// Mixed into the seed of every operation but the listing: the seed stream (one draw per
/// request) and so every retry's jitter stay those of the machines before the flows.
const SEED_SALT: u64 = 0x006f_626a_6d65_7461;

/// Starts an object, bucket or infostore operation as `start` says (seed salted, see
/// [`SEED_SALT`]).
fn begin<'a, F: Flow<Schema = ObjmetaSchema>>(
    ctx: impl Into<ContextArg<'a, ObjmetaState>>,
    start: Start,
    flow: F,
) -> Operation<'a, F> {
    let salted = Start {
        seed: start.seed ^ SEED_SALT,
        ..start
    };
    Operation::begin(ctx.into(), salted, RetryPolicy::default(), flow)
}

/// Operation deadline callers give when they set none: `now₀ + 60 s` (`objmeta.md` 16.3).
pub const DEFAULT_DEADLINE_US: i64 = 60_000_000;
/// Delay of a placeholder repair (`objmeta.md` 8.3).
pub const REPAIR_DELAY_US: i64 = 15_000_000;
/// `originOp` of deletes and repaired masters.
pub const ORIGIN_OP_DELETE: &str = "s3:ObjectRemoved:Delete";

/// Configuration (`objmeta.md` 16.1). Hosts fill it from the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjmetaConfig {
    /// Table (default `objmeta`).
    pub table: String,
    /// Process id, part of generated version ids.
    pub pid: u64,
    /// Replication group id (`RG001`).
    pub replication_group_id: String,
    /// `S3_VERSION_ID_ENCODING_TYPE`.
    pub version_id_encoding_type: Option<String>,
    /// `DEFAULT_BUCKET_KEY_FORMAT` (v1 unless it says v0).
    pub default_bucket_key_format: VFormat,
    /// `METADATA_MAX_CACHED_BUCKETS` (default 1000).
    pub max_cached_buckets: usize,
    /// `INITIAL_INSTANCE_ID`.
    pub initial_instance_id: Option<String>,
    /// Whether this process is *aware* of live layout migrations (`docs/migration.md` §2.3,
    /// §6): its bucket lookups read the marker `d:rowkitMigration` with the vFormat and keep
    /// both at most `marker_ttl_us`, its object writes mirror through the sync step and pause
    /// in a fence. Off (Arsenal's own behaviour: the vFormat is cached until evicted) for a
    /// bare state; the client facade turns it on.
    pub migration_aware: bool,
    /// How long an aware process keeps a bucket's marker (`marker_ttl`, §2.3; default
    /// [`MARKER_TTL_US`](rowkit_codec::objmeta::migration::marker::MARKER_TTL_US), 5 s).
    pub marker_ttl_us: i64,
    /// A bug planted in every machine using this config (the fault simulator's self-test;
    /// not public API: only with the `_planted_bugs` feature).
    #[cfg(feature = "_planted_bugs")]
    #[doc(hidden)]
    pub planted: Option<crate::planted::PlantedBug>,
}

impl Default for ObjmetaConfig {
    fn default() -> ObjmetaConfig {
        ObjmetaConfig {
            table: "objmeta".to_string(),
            pid: 0,
            replication_group_id: "RG001".to_string(),
            version_id_encoding_type: None,
            default_bucket_key_format: VFormat::V1,
            max_cached_buckets: 1000,
            initial_instance_id: None,
            migration_aware: false,
            marker_ttl_us: MARKER_TTL_US,
            #[cfg(feature = "_planted_bugs")]
            planted: None,
        }
    }
}

/// Arsenal's per-process state: config, version-id generator, vFormat LRU cache.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjmetaState {
    /// Configuration.
    pub config: ObjmetaConfig,
    /// The version-id generator.
    pub generator: VersionIdGenerator,
    /// Buckets' vFormats (and, for an aware process, markers), least recently used first.
    cache: Vec<CachedBucket>,
}

/// One bucket of the vFormat LRU cache.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CachedBucket {
    bucket: String,
    vformat: VFormat,
    /// The marker as read with the vFormat and when (`None`: not read with it, e.g. cached
    /// by `createBucket`; an aware lookup then reads the row again).
    marker: Option<(Timestamp, Option<MigrationMarker>)>,
}

impl ObjmetaState {
    /// Fresh state for `config`.
    pub fn new(config: ObjmetaConfig) -> ObjmetaState {
        ObjmetaState {
            config,
            generator: VersionIdGenerator::default(),
            cache: Vec::new(),
        }
    }

    /// `generateVersionId(rg)` at `now`.
    pub fn generate_version_id(&mut self, now: Timestamp) -> String {
        let c = &self.config;
        self.generator.generate(
            now.0,
            c.pid,
            &c.replication_group_id,
            c.version_id_encoding_type.as_deref(),
        )
    }

    /// A cache hit (made most recent), or `None`: Arsenal's lookup, which never expires.
    pub fn cached_vformat(&mut self, bucket: &str) -> Option<VFormat> {
        let i = self.cache.iter().position(|c| c.bucket == bucket)?;
        let entry = self.cache.remove(i);
        let vf = entry.vformat;
        self.cache.push(entry);
        Some(vf)
    }

    /// The bucket's layout for an operation starting at `now` (made most recent), or `None`
    /// when it must be read: not cached, or — for an aware process — cached without its
    /// marker or at `now ≥ cached_at + marker_ttl` (`docs/migration.md` §2.3). An unaware
    /// process's hit has no marker and is as old as the operation.
    pub fn cached_layout(&mut self, bucket: &str, now: Timestamp) -> Option<BucketLayout> {
        let i = self.cache.iter().position(|c| c.bucket == bucket)?;
        let aware = self.config.migration_aware;
        let (read_at, marker) = match &self.cache[i].marker {
            _ if !aware => (now, None),
            Some((at, marker)) if now < at.saturating_add_micros(self.config.marker_ttl_us) => {
                (*at, marker.clone())
            }
            _ => return None,
        };
        let entry = self.cache.remove(i);
        let layout = BucketLayout {
            vformat: entry.vformat,
            marker,
            read_at,
        };
        self.cache.push(entry);
        Some(layout)
    }

    /// Caches a vFormat, evicting the least recently used entry when full.
    pub fn cache_vformat(&mut self, bucket: &str, vf: VFormat) {
        self.insert(CachedBucket {
            bucket: bucket.to_string(),
            vformat: vf,
            marker: None,
        });
    }

    /// Caches a layout read from the metastore row; a fence (`switching`, `aborting`) is
    /// never cached: the bucket is forgotten, so that every operation reads it again (§2.3).
    pub fn cache_layout(&mut self, bucket: &str, layout: &BucketLayout) {
        if layout.marker.as_ref().is_some_and(|m| m.state.is_fence()) {
            self.uncache_vformat(bucket);
            return;
        }
        self.insert(CachedBucket {
            bucket: bucket.to_string(),
            vformat: layout.vformat,
            marker: Some((layout.read_at, layout.marker.clone())),
        });
    }

    fn insert(&mut self, entry: CachedBucket) {
        self.cache.retain(|c| c.bucket != entry.bucket);
        if self.config.max_cached_buckets == 0 {
            return;
        }
        while self.cache.len() >= self.config.max_cached_buckets {
            self.cache.remove(0);
        }
        self.cache.push(entry);
    }

    /// Forgets a bucket's vFormat.
    pub fn uncache_vformat(&mut self, bucket: &str) {
        self.cache.retain(|c| c.bucket != bucket);
    }
}

/// A bucket's layout as a lookup found it (`getBucketVFormat`, `objmeta.md` 4.3, with the
/// migration marker of an aware process, `docs/migration.md` §2.3).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BucketLayout {
    /// The bucket's key format (`d:vFormat`; `v0` for a bucket without a row).
    pub vformat: VFormat,
    /// The migration marker (`d:rowkitMigration`); always `None` for an unaware process.
    pub marker: Option<MigrationMarker>,
    /// When the row this comes from was read (the instant an aware write's `max_write`
    /// counts from).
    pub read_at: Timestamp,
}

/// Errors of `objmeta.md` 14; their ids are [`OperationError::id`] (Arsenal's names).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ObjmetaError {
    /// Missing object or version.
    #[error("NoSuchKey")]
    NoSuchKey,
    /// Missing bucket.
    #[error("NoSuchBucket")]
    NoSuchBucket,
    /// Case3 write failure.
    #[error("NoSuchVersion")]
    NoSuchVersion,
    /// [`CreateBucket::new_exclusive`] found the bucket's metastore row (a project addition:
    /// the callers' existence check, named as S3's error).
    #[error(
        "bucket {bucket} already exists (key format {}); create does not change a bucket's format",
        vformat.as_str()
    )]
    BucketAlreadyExists {
        /// The bucket.
        bucket: String,
        /// Its key format, as stored.
        vformat: VFormat,
    },
    /// Everything else Arsenal reports as an internal error.
    #[error("InternalError: {0}")]
    InternalError(String),
    /// A key the layout migration cannot move (`docs/migration.md` §4.1: `key_collision`,
    /// `key_too_long`, `nul_in_object_key`); its id is the finding's. A project addition:
    /// [`SyncKey`] refuses such a key before any request.
    #[error("{0}")]
    MigrationKey(rowkit_codec::objmeta::migration::sync::KeyFinding),
    /// A migration's marker CAS found the marker or `d:vFormat` changed by someone else
    /// (`docs/migration.md` §2.2): the run stops, writing nothing more.
    #[error("the migration marker or the bucket's key format changed since it was read")]
    MarkerChanged,
    /// The bucket of a running migration is gone, or was recreated (another `uid`)
    /// (`docs/migration.md` §4.8).
    #[error("the bucket was deleted (or recreated) during the migration")]
    BucketDeleted,
    /// Another migrator wrote the run's checkpoint (`docs/migration.md` §7.1): this one stops.
    #[error("the migration was taken over by {owner}")]
    MigrationTakenOver {
        /// The checkpoint's owner now (empty when there is no checkpoint).
        owner: String,
    },
    /// Another migrator runs this bucket's migration (its lease holds), or another migration
    /// is in progress (`docs/migration.md` §4.1, §7.1).
    #[error("a migration is in progress: {0}")]
    MigrationInProgress(String),
    /// A stored migration marker or checkpoint that does not decode (damaged, or written by
    /// something else): named, never guessed at.
    #[error("the stored migration {column} is invalid: {error}")]
    MigrationRecordInvalid {
        /// `marker` or `checkpoint`.
        column: &'static str,
        /// What is wrong with it.
        error: rowkit_codec::objmeta::migration::marker::MigrationRecordError,
    },
    /// A marker change that `docs/migration.md` §3 does not allow (or whose gate is closed),
    /// refused before anything is sent.
    #[error("migration change refused: {0}")]
    MigrationChangeRefused(rowkit_codec::objmeta::migration::marker::MarkerTransitionError),
    /// A migrator's arguments refused before any write (a `--settle` below the minimum, an
    /// `--abort` with nothing to abort or after the switch): the CLI's usage error.
    #[error("usage: {0}")]
    MigrationUsage(String),
    /// A migration pass found keys or rows it cannot sync (`docs/migration.md` §4.1): the run
    /// stops in `state`, before the switch, until the operator fixes them.
    #[error("the migration stops in {state}: {} finding(s) block it: {}", findings.len(),
        migration_findings_text(findings))]
    MigrationBlocked {
        /// The state the run stopped in.
        state: rowkit_codec::objmeta::migration::marker::MigrationState,
        /// What blocks it, in key order.
        findings: Vec<migrate::pass::PassFinding>,
    },
    /// `--max-pause` (`docs/migration.md` §11.2): the fence the `--switch` gate would start is
    /// estimated longer than allowed (`Δ` + the rows of the last verification ÷ its rate);
    /// the run stays in `verifying`, nothing of the switch written.
    #[error("the expected pause of the switch is {} s ({} s settle + {} rows at {}), \
        longer than --max-pause {} s", micros_text(*estimate_us), micros_text(*settle_us), rows,
        rate.map_or_else(|| "an unmeasured rate".into(), |r| alloc::format!("{r} rows/s")),
        micros_text(*max_pause_us))]
    MigrationPauseTooLong {
        /// The estimated pause, µs.
        estimate_us: i64,
        /// Its settle part (`Δ`), µs.
        settle_us: i64,
        /// Rows the final pass reads (the last verification's).
        rows: u64,
        /// The last verification's rate, rows per second (`None`: not measured).
        rate: Option<u64>,
        /// `--max-pause`, µs.
        max_pause_us: i64,
    },
    /// The operation deadline passed, or the machine was cancelled.
    #[error("{}", crate::operation::ABORTED_MESSAGE)]
    Aborted,
}

/// Microseconds as seconds with up to three decimals (`90`, `1.5`).
fn micros_text(us: i64) -> String {
    let ms = us / 1000;
    if ms % 1000 == 0 {
        alloc::format!("{}", ms / 1000)
    } else {
        let text = alloc::format!("{}.{:03}", ms / 1000, (ms % 1000).abs());
        text.trim_end_matches('0').into()
    }
}

/// The findings of [`ObjmetaError::MigrationBlocked`], one per item: id and what it names.
pub(crate) fn migration_findings_text(findings: &[migrate::pass::PassFinding]) -> String {
    let items: Vec<String> = findings.iter().map(|f| alloc::format!("{f}")).collect();
    items.join("; ")
}

impl ObjmetaError {
    /// One readable sentence for a person, naming the bucket (and the object `key`, when the
    /// call had one) where the error id alone says little (`NoSuchKey` → `no such key k in
    /// bucket b`); the id itself is [`OperationError::id`].
    pub fn describe(&self, bucket: &str, key: Option<&str>) -> alloc::string::String {
        match (self, key) {
            (ObjmetaError::NoSuchKey, Some(k)) => {
                alloc::format!("no such key {k} in bucket {bucket}")
            }
            (ObjmetaError::NoSuchKey, None) => alloc::format!("no such key in bucket {bucket}"),
            (ObjmetaError::NoSuchBucket, _) => alloc::format!("no such bucket {bucket}"),
            (ObjmetaError::NoSuchVersion, Some(k)) => {
                alloc::format!("no such version of {k} in bucket {bucket}")
            }
            (ObjmetaError::InternalError(m), _) => alloc::format!("internal error: {m}"),
            (other, _) => other.to_string(),
        }
    }

    /// An `InternalError` with a message.
    pub fn internal_error(msg: impl core::fmt::Display) -> ObjmetaError {
        ObjmetaError::internal(msg)
    }

    pub(crate) fn internal(msg: impl core::fmt::Display) -> ObjmetaError {
        ObjmetaError::InternalError(alloc::format!("{msg}"))
    }
}

/// An [`ObjmetaError`] of a call on a bucket (and an object key): its id, kind and store
/// error are the error's, its `Display` names the bucket and key
/// ([`ObjmetaError::describe`]), so that callers map it as every schema error
/// ([`OperationError`]) and still say which object was missing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ObjmetaErrorIn {
    /// The error.
    pub error: ObjmetaError,
    message: String,
}

impl ObjmetaError {
    /// This error of a call on `bucket` (and object `key`).
    pub fn in_call(self, bucket: &str, key: Option<&str>) -> ObjmetaErrorIn {
        ObjmetaErrorIn {
            message: self.describe(bucket, key),
            error: self,
        }
    }
}

impl OperationError for ObjmetaErrorIn {
    fn id(&self) -> &'static str {
        self.error.id()
    }

    fn aborted() -> ObjmetaErrorIn {
        ObjmetaError::Aborted.in_call("", None)
    }

    fn store(error: crate::StoreError) -> ObjmetaErrorIn {
        ObjmetaError::store(error).in_call("", None)
    }

    fn as_store(&self) -> Option<&crate::StoreError> {
        self.error.as_store()
    }

    fn is_bad_input(&self) -> bool {
        self.error.is_bad_input()
    }
}

/// A scheduled placeholder repair (`objmeta.md` 8.3 step 5.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RepairTask {
    /// Bucket.
    pub bucket: String,
    /// Object key.
    pub key: String,
    /// Id of the placeholder master to replace.
    pub phd_version_id: String,
    /// The bucket's vFormat at delete time.
    pub vformat: VFormat,
    /// When to run it.
    pub due: Timestamp,
    /// The migration marker the scheduling delete acted on (`None`: no migration, or an
    /// unaware process): the repair writes and mirrors as that state says, within
    /// `MAX_REPAIR_WRITE_US` of its read (`docs/migration.md` §2.3).
    pub migration: Option<ScheduledMarker>,
}

/// A migration marker as an aware operation read it, handed to the work it schedules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduledMarker {
    /// The marker.
    pub marker: MigrationMarker,
    /// When the metastore row holding it was read.
    pub read_at: Timestamp,
}

impl ScheduledMarker {
    /// The marker of `layout`, if it has one.
    pub fn of(layout: &BucketLayout) -> Option<ScheduledMarker> {
        let marker = layout.marker.clone()?;
        Some(ScheduledMarker {
            marker,
            read_at: layout.read_at,
        })
    }

    /// The layout the scheduled work acts on: key format `vformat` under this marker.
    fn layout(&self, vformat: VFormat) -> BucketLayout {
        BucketLayout {
            vformat,
            marker: Some(self.marker.clone()),
            read_at: self.read_at,
        }
    }
}

/// A change event (`objmeta.md` 13.1).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ObjmetaEvent {
    /// A document was inserted or replaced.
    Put {
        /// Collection name.
        collection: String,
        /// Arsenal key.
        key: String,
        /// Stored `d:value` text.
        value: String,
    },
    /// A document was deleted; `value` is the pre-image when the delete read it first.
    Delete {
        /// Collection name.
        collection: String,
        /// Arsenal key.
        key: String,
        /// Pre-image JSON text.
        value: Option<String>,
    },
    /// A delayed repair was decided; run an [`AsyncRepair`] for it.
    RepairScheduled(RepairTask),
    /// A layout migration's pass reports its progress, a straggler, a conflict or a finding
    /// (`docs/migration.md` §7.3). Not a document change.
    Migrate(migrate::pass::MigrateEvent),
}
