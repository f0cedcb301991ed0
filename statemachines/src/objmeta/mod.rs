//! Scality Arsenal's object-metadata backend as sans-IO machines (`spec/objmeta.md` 16).
//!
//! Every operation is a [`Machine`](crate::Machine) created with `new(args, &mut state, now,
//! seed, deadline)`: [`PutObject`], [`GetObject`], [`DeleteObject`], [`AsyncRepair`],
//! [`ListObject`], [`CreateBucket`], [`PutBucketAttributes`], [`GetBucketAttributes`],
//! [`DeleteBucket`], [`ListBuckets`], [`GetUuid`], [`CountItems`], [`GetObjects`],
//! [`GetBucketAndObject`], [`GetBucketVFormat`], [`ReadCountItems`], [`UpdateCountItems`],
//! [`PutBucketAttributesCapabilities`], [`DeleteBucketAttributesCapability`]. [`ObjmetaState`] is
//! Arsenal's per-process state (version-id generator, vFormat cache), borrowed exclusively by
//! one machine at a time. Change events ([`ObjmetaEvent`]) come out of `poll_event`; a
//! `RepairScheduled` event asks the host to run an [`AsyncRepair`] at its `due` time.
//!
//! The single-request operations are written as straight-line code over a replayed log of
//! replies (see [`engine`]); listings stream rows and have their own machine ([`list`]).

pub mod engine;
pub mod list;
mod ops;

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::version_id::VersionIdGenerator;

use crate::Timestamp;

pub use engine::OpMachine;
pub use list::ListObject;

pub use ops::{
    AsyncRepairOp, BucketEntry, CountItemsOp, CreateBucketOp, DeleteBucketAttributesCapabilityOp,
    DeleteBucketOp, DeleteObjectOp, GetBucketAndObjectOp, GetBucketAttributesOp,
    GetBucketVFormatOp, GetObjectOp, GetObjectsOp, GetUuidOp, ListBucketsOp,
    PutBucketAttributesCapabilitiesOp, PutBucketAttributesOp, PutObjectOp, ReadCountItemsOp,
    RepairOutcome, UpdateCountItemsOp, bucket_info_value,
};

/// `PutObject`: the five write strategies of `objmeta.md` 7.
pub type PutObject<'a> = OpMachine<'a, PutObjectOp>;
/// `GetObject`, with placeholder resolution (`objmeta.md` 9.2).
pub type GetObject<'a> = OpMachine<'a, GetObjectOp>;
/// `DeleteObject` in every case (`objmeta.md` 8).
pub type DeleteObject<'a> = OpMachine<'a, DeleteObjectOp>;
/// The delayed placeholder repair (`objmeta.md` 8.4); takes no state.
pub type AsyncRepair = OpMachine<'static, AsyncRepairOp>;
/// `createBucket`.
pub type CreateBucket<'a> = OpMachine<'a, CreateBucketOp>;
/// `putBucketAttributes`.
pub type PutBucketAttributes<'a> = OpMachine<'a, PutBucketAttributesOp>;
/// `getBucketAttributes`.
pub type GetBucketAttributes<'a> = OpMachine<'a, GetBucketAttributesOp>;
/// `deleteBucket`: drops the collection, then the metastore row.
pub type DeleteBucket<'a> = OpMachine<'a, DeleteBucketOp>;
/// `listBuckets` (project addition).
pub type ListBuckets<'a> = OpMachine<'a, ListBucketsOp>;
/// `getUUID`.
pub type GetUuid<'a> = OpMachine<'a, GetUuidOp>;
/// `countItems`.
pub type CountItems<'a> = OpMachine<'a, CountItemsOp>;
/// `putBucketAttributesCapabilities` (read–merge–CAS).
pub type PutBucketAttributesCapabilities<'a> = OpMachine<'a, PutBucketAttributesCapabilitiesOp>;
/// `deleteBucketAttributesCapability` (read–merge–CAS).
pub type DeleteBucketAttributesCapability<'a> = OpMachine<'a, DeleteBucketAttributesCapabilityOp>;
/// `getObjects`.
pub type GetObjects<'a> = OpMachine<'a, GetObjectsOp>;
/// `getBucketVFormat`.
pub type GetBucketVFormat<'a> = OpMachine<'a, GetBucketVFormatOp>;
/// `getBucketAndObject`.
pub type GetBucketAndObject<'a> = OpMachine<'a, GetBucketAndObjectOp>;
/// `readCountItems`.
pub type ReadCountItems<'a> = OpMachine<'a, ReadCountItemsOp>;
/// `updateCountItems`.
pub type UpdateCountItems<'a> = OpMachine<'a, UpdateCountItemsOp>;

/// Operation deadline when none is given: `now₀ + 60 s` (`objmeta.md` 16.3).
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
    /// A bug planted in every machine using this config (the fault simulator's self-test;
    /// ignored unless built with the `planted-bugs` feature).
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
    /// bucket → vFormat, least recently used first.
    cache: Vec<(String, VFormat)>,
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

    /// A cache hit (made most recent), or `None`.
    pub fn cached_vformat(&mut self, bucket: &str) -> Option<VFormat> {
        let i = self.cache.iter().position(|(b, _)| b == bucket)?;
        let entry = self.cache.remove(i);
        let vf = entry.1;
        self.cache.push(entry);
        Some(vf)
    }

    /// Caches a vFormat, evicting the least recently used entry when full.
    pub fn cache_vformat(&mut self, bucket: &str, vf: VFormat) {
        self.cache.retain(|(b, _)| b != bucket);
        if self.config.max_cached_buckets == 0 {
            return;
        }
        while self.cache.len() >= self.config.max_cached_buckets {
            self.cache.remove(0);
        }
        self.cache.push((bucket.to_string(), vf));
    }

    /// Forgets a bucket's vFormat.
    pub fn uncache_vformat(&mut self, bucket: &str) {
        self.cache.retain(|(b, _)| b != bucket);
    }
}

/// Errors of `objmeta.md` 14; [`ObjmetaError::id`] is the CLI error id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
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
    /// Everything else Arsenal reports as an internal error.
    #[error("InternalError: {0}")]
    InternalError(String),
    /// The operation deadline passed, or the machine was cancelled.
    #[error("Aborted")]
    Aborted,
}

impl ObjmetaError {
    /// Arsenal's name, used as the CLI error id.
    pub fn id(&self) -> &'static str {
        match self {
            ObjmetaError::NoSuchKey => "NoSuchKey",
            ObjmetaError::NoSuchBucket => "NoSuchBucket",
            ObjmetaError::NoSuchVersion => "NoSuchVersion",
            ObjmetaError::InternalError(_) => "InternalError",
            ObjmetaError::Aborted => "aborted",
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
}

/// A change event (`objmeta.md` 13.1).
#[derive(Clone, Debug, PartialEq, Eq)]
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
}
