//! The object operations of `objmeta.md` 7–9 as flows: put (five strategies), get, delete,
//! the delayed placeholder repair, `getObjects` and `getBucketAndObject`, one file each; what
//! several share (where an object lives, the version result) is here.

mod bucket_and_object;
mod delete;
mod get;
mod get_objects;
mod put;
mod put_strategies;
mod repair;

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{Mutation, Row, RowSet};
use rowkit_codec::objmeta::cells::{escape_tags, filters, replace, replace_text, unescape_tags};
use rowkit_codec::objmeta::json::{Json, JsonObject};
use rowkit_codec::objmeta::keys::{
    METASTORE, VFormat, collection_for_bucket, master_key, row_key, version_key,
};

use super::documents::{
    BucketVFormat, Edit, InternalDelete, LatestVersion, Merge, ReadDoc, doc_of,
};
use super::migrate::aware::{Aware, Protocol};
use super::requests::{
    OmIo, P, delete_event, put_event, put_event_text, start_cas, start_cas_unchanged, start_read,
    start_write,
};
use super::{
    AsyncRepair, BucketLayout, DEFAULT_DEADLINE_US, DeleteObject, GetBucketAndObject, GetObject,
    GetObjects, ORIGIN_OP_DELETE, ObjmetaConfig, ObjmetaError, ObjmetaEvent, ObjmetaSchema,
    ObjmetaState, PutObject, REPAIR_DELAY_US, RepairTask, ScheduledMarker, begin,
};
use crate::Timestamp;
use crate::children::ChildId;
use crate::operation::{ContextArg, Flow, Operation, Start, settled};
use crate::ready;

/// Arsenal's put result naming version `vid`.
fn version_result(vid: &str) -> String {
    alloc::format!("{{\"versionId\": \"{vid}\"}}")
}

/// Sets the value's `versionId`.
fn set_version_id(value: &mut Json, vid: &str) {
    if let Some(o) = value.as_object_mut() {
        o.set("versionId", Json::str(vid));
    }
}

/// A version id given as params: a string as it is, anything else as its JSON text.
fn version_id_text(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        other => other.stringify(),
    }
}

/// Where an object lives once its bucket's vFormat is known.
#[derive(Debug)]
struct Target {
    coll: String,
    vf: VFormat,
    key: String,
    /// The master's Arsenal key and row key.
    mk: String,
    m_row: Vec<u8>,
}

impl Target {
    fn new(bucket: &str, key: &str, vf: VFormat) -> Target {
        let coll = collection_for_bucket(bucket).to_string();
        let mk = master_key(vf, key);
        let m_row = row_key(&coll, &mk);
        Target {
            coll,
            vf,
            key: key.to_string(),
            mk,
            m_row,
        }
    }

    /// Arsenal key and row key of version `vid`.
    fn version(&self, vid: &str) -> (String, Vec<u8>) {
        let vk = version_key(self.vf, &self.key, vid);
        let row = row_key(&self.coll, &vk);
        (vk, row)
    }
}

pub use bucket_and_object::GetBucketAndObjectFlow;
pub use delete::DeleteObjectFlow;
pub use get::GetObjectFlow;
pub use get_objects::GetObjectsFlow;
pub use put::{PutObjectFlow, PutOutcome};
pub use repair::{AsyncRepairFlow, RepairOutcome};
