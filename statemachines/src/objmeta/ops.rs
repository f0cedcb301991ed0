//! The object, bucket and infostore operations of `objmeta.md` 7–11 as replayable code
//! ([`super::engine`]).

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{KeyBound, Mutation, RowFilter, RowRange, RowSet};
use rowkit_codec::objmeta::cells::{StoredDoc, escape_tags, filters, replace, unescape_tags};
use rowkit_codec::objmeta::json::{Json, JsonObject};
use rowkit_codec::objmeta::keys::{
    COUNT_ITEMS_KEY, INFOSTORE, METASTORE, UUID_KEY, VFormat, collection_end,
    collection_for_bucket, collection_start, is_special_bucket, master_key, row_key, version_key,
};

use super::engine::{Flow, Io, Op, internal};
use super::{
    ORIGIN_OP_DELETE, ObjmetaError, ObjmetaEvent, ObjmetaState, REPAIR_DELAY_US, RepairTask,
};
use crate::{MutateRowsEntry, SplitMix64};

type R<T> = Result<T, Flow>;

fn put_event(io: &mut Io<'_>, collection: &str, key: &str, value: &Json) {
    io.emit(ObjmetaEvent::Put {
        collection: collection.to_string(),
        key: key.to_string(),
        value: value.stringify(),
    });
}

fn delete_event(io: &mut Io<'_>, collection: &str, key: &str, value: Option<&Json>) {
    io.emit(ObjmetaEvent::Delete {
        collection: collection.to_string(),
        key: key.to_string(),
        value: value.map(Json::stringify),
    });
}

fn doc_of(row: Option<rowkit_codec::model::Row>) -> R<Option<StoredDoc>> {
    match row {
        None => Ok(None),
        Some(r) => StoredDoc::from_row(&r).map_err(|e| Flow::Fail(ObjmetaError::internal(e))),
    }
}

/// `ReadRow(k, LatestN(1))` as a document (no deleted filter).
fn read_doc(io: &mut Io<'_>, key: &[u8]) -> R<Option<StoredDoc>> {
    let row = io.read_row(key, filters::latest())?;
    doc_of(row)
}

/// The same, ignoring documents flagged deleted.
fn read_live_doc(io: &mut Io<'_>, key: &[u8]) -> R<Option<StoredDoc>> {
    Ok(read_doc(io, key)?.filter(|d| !d.deleted))
}

/// `getBucketVFormat` with the LRU cache (`objmeta.md` 4.3).
fn bucket_vformat(io: &mut Io<'_>, st: &mut ObjmetaState, bucket: &str) -> R<VFormat> {
    if let Some(vf) = st.cached_vformat(bucket) {
        return Ok(vf);
    }
    let Some(doc) = read_doc(io, &row_key(METASTORE, bucket))? else {
        return Ok(VFormat::V0);
    };
    let vf = doc
        .vformat
        .as_ref()
        .and_then(Json::as_str)
        .map_or(VFormat::V0, VFormat::from_stored);
    st.cache_vformat(bucket, vf);
    Ok(vf)
}

/// The row range `getLatestVersion` reads (both ends exclusive).
pub(crate) fn latest_version_range(collection: &str, vf: VFormat, key: &str) -> RowRange {
    let (start, end) = match vf {
        VFormat::V0 => (key.to_string(), alloc::format!("{key}\u{1}")),
        VFormat::V1 => (version_key(vf, key, ""), alloc::format!("\x7fV{key}\u{1}")),
    };
    RowRange {
        start: KeyBound::Open(row_key(collection, &start)),
        end: KeyBound::Open(row_key(collection, &end)),
    }
}

/// `getLatestVersion(key)` (`objmeta.md` 9.1): `None` = NoSuchKey.
pub(crate) fn latest_version(
    io: &mut Io<'_>,
    collection: &str,
    vf: VFormat,
    key: &str,
) -> R<Option<Json>> {
    let range = latest_version_range(collection, vf, key);
    let rows = io
        .read_rows(RowSet::range(range), Some(filters::live_value()), 1)?
        .map_err(internal)?;
    let Some(doc) = doc_of(rows.into_iter().next())? else {
        return Ok(None);
    };
    let mut v = doc.value;
    unescape_tags(&mut v);
    Ok(Some(v))
}

/// `internalDelete` (`objmeta.md` 8.1): `false` = NoSuchKey.
fn internal_delete(
    io: &mut Io<'_>,
    collection: &str,
    key: &str,
    phd: Option<&str>,
    no_oplog: bool,
    origin_op: &str,
) -> R<bool> {
    let rk = row_key(collection, key);
    if no_oplog {
        io.mutate_row(&rk, vec![Mutation::DeleteFromRow])?
            .map_err(internal)?;
        delete_event(io, collection, key, None);
        return Ok(true);
    }
    loop {
        let Some(doc) = read_doc(io, &rk)? else {
            return Ok(false);
        };
        if doc.deleted {
            return Ok(false);
        }
        if let Some(p) = phd {
            let is = doc.value.get("isPHD") == Some(&Json::Bool(true))
                && doc.value.get("versionId").and_then(Json::as_str) == Some(p);
            if !is {
                return Ok(false);
            }
        }
        let hash = doc.hash.clone().unwrap_or_default();
        let matched = io
            .check_and_mutate(
                &rk,
                filters::hash_eq(&hash),
                vec![Mutation::DeleteFromRow],
                vec![],
            )?
            .map_err(internal)?;
        if matched {
            let mut pre = doc.value;
            if let Some(o) = pre.as_object_mut() {
                o.set("originOp", Json::str(origin_op));
                o.set("deleted", Json::Bool(true));
            }
            delete_event(io, collection, key, Some(&pre));
            return Ok(true);
        }
    }
}

fn version_result(vid: &str) -> String {
    alloc::format!("{{\"versionId\": \"{vid}\"}}")
}

/// `putObject(bucket, key, objVal, params)`.
#[derive(Clone, Debug)]
pub struct PutObjectOp {
    /// Bucket.
    pub bucket: String,
    /// Object key.
    pub key: String,
    /// The metadata (must be a JSON object).
    pub value: Json,
    /// Params object, or `None` (null).
    pub params: Option<Json>,
}

impl Op for PutObjectOp {
    type Output = Option<String>;

    fn run(&self, io: &mut Io<'_>, st: &mut ObjmetaState) -> R<Option<String>> {
        let mut val = self.value.clone();
        if val.as_object().is_none() {
            return Err(ObjmetaError::internal("object metadata is not a JSON object").into());
        }
        escape_tags(&mut val);
        let vf = bucket_vformat(io, st, &self.bucket)?;
        let coll = collection_for_bucket(&self.bucket).to_string();
        let mk = master_key(vf, &self.key);
        let m_row = row_key(&coll, &mk);
        let params = match &self.params {
            None | Some(Json::Null) => None,
            Some(p) => Some(p),
        };
        let Some(params) = params else {
            return self.no_ver(io, &coll, &mk, &m_row, &val);
        };
        let version_id = params.get("versionId");
        let is_dm = val.member_truthy("isDeleteMarker");
        let set_vid = |val: &mut Json, vid: &str| {
            if let Some(o) = val.as_object_mut() {
                o.set("versionId", Json::str(vid));
            }
        };
        if version_id == Some(&Json::str("")) {
            // Case2: overwrite the null master.
            let vid = st.generate_version_id(io.now());
            set_vid(&mut val, &vid);
            io.mutate_row(&m_row, replace(&val, None))?
                .map_err(internal)?;
            put_event(io, &coll, &mk, &val);
            return Ok(Some(version_result(&vid)));
        }
        if version_id.is_some_and(Json::truthy) {
            let x = match version_id {
                Some(Json::String(s)) => s.clone(),
                Some(other) => other.stringify(),
                None => String::new(),
            };
            if params.member_truthy("repairMaster") {
                return self.case4(io, &coll, vf, &mk, &m_row, &x, val);
            }
            return self.case3(io, &coll, vf, &mk, &m_row, &x, val, is_dm);
        }
        if params.member_truthy("versioning") {
            return self.case1(io, st, &coll, vf, &mk, &m_row, val, is_dm);
        }
        if params.member_truthy("needOplogUpdate") {
            let origin = params.get("originOp").cloned();
            loop {
                let Some(doc) = read_doc(io, &m_row)? else {
                    return Err(ObjmetaError::internal("NoSuchKey").into());
                };
                if doc.deleted {
                    return Err(ObjmetaError::internal("NoSuchKey").into());
                }
                let hash = doc.hash.clone().unwrap_or_default();
                let matched = io
                    .check_and_mutate(&m_row, filters::hash_eq(&hash), replace(&val, None), vec![])?
                    .map_err(internal)?;
                if matched {
                    let mut pre = doc.value;
                    if let Some(o) = pre.as_object_mut() {
                        match &origin {
                            Some(op) => o.set("originOp", op.clone()),
                            None => {
                                o.remove("originOp");
                            }
                        }
                        o.set("deleted", Json::Bool(true));
                    }
                    delete_event(io, &coll, &mk, Some(&pre));
                    put_event(io, &coll, &mk, &val);
                    return Ok(None);
                }
            }
        }
        self.no_ver(io, &coll, &mk, &m_row, &val)
    }
}

impl PutObjectOp {
    fn no_ver(
        &self,
        io: &mut Io<'_>,
        coll: &str,
        mk: &str,
        m_row: &[u8],
        val: &Json,
    ) -> R<Option<String>> {
        io.mutate_row(m_row, replace(val, None))?
            .map_err(internal)?;
        put_event(io, coll, mk, val);
        Ok(None)
    }

    #[allow(clippy::too_many_arguments)]
    fn case1(
        &self,
        io: &mut Io<'_>,
        st: &mut ObjmetaState,
        coll: &str,
        vf: VFormat,
        mk: &str,
        m_row: &[u8],
        mut val: Json,
        is_dm: bool,
    ) -> R<Option<String>> {
        for attempt in 0..2 {
            let vid = st.generate_version_id(io.now());
            if let Some(o) = val.as_object_mut() {
                o.set("versionId", Json::str(vid.clone()));
            }
            let vk = version_key(vf, &self.key, &vid);
            let v_row = row_key(coll, &vk);
            let rep = replace(&val, None);
            let matched = io
                .check_and_mutate(&v_row, filters::exists(), rep.clone(), rep)?
                .map_err(internal)?;
            let inserted = !matched;
            put_event(io, coll, &vk, &val);
            if vf == VFormat::V1 && is_dm {
                let matched = io
                    .check_and_mutate(
                        m_row,
                        filters::vid_le(&vid),
                        vec![],
                        vec![Mutation::DeleteFromRow],
                    )?
                    .map_err(internal)?;
                if !matched {
                    delete_event(io, coll, mk, None);
                }
                return Ok(Some(version_result(&vid)));
            }
            let matched = io
                .check_and_mutate(m_row, filters::vid_le(&vid), vec![], replace(&val, None))?
                .map_err(internal)?;
            if !matched {
                put_event(io, coll, mk, &val);
                return Ok(Some(version_result(&vid)));
            }
            if inserted {
                return Ok(Some(version_result(&vid)));
            }
            if attempt == 1 {
                break;
            }
        }
        Err(ObjmetaError::internal("version id collision").into())
    }

    #[allow(clippy::too_many_arguments)]
    fn case3(
        &self,
        io: &mut Io<'_>,
        coll: &str,
        vf: VFormat,
        mk: &str,
        m_row: &[u8],
        x: &str,
        mut val: Json,
        is_dm: bool,
    ) -> R<Option<String>> {
        if let Some(o) = val.as_object_mut() {
            o.set("versionId", Json::str(x));
        }
        let mst = read_doc(io, m_row)?;
        let vk = version_key(vf, &self.key, x);
        let v_row = row_key(coll, &vk);
        let ver = read_doc(io, &v_row)?;
        io.mutate_row(&v_row, replace(&val, None))?
            .map_err(|_| Flow::Fail(ObjmetaError::NoSuchVersion))?;
        put_event(io, coll, &vk, &val);
        if ver.is_some() && mst.is_none() {
            return Ok(Some(version_result(x)));
        }
        let no_such_version = |_| Flow::Fail(ObjmetaError::NoSuchVersion);
        if vf == VFormat::V1 && is_dm {
            let matched = io
                .check_and_mutate(
                    m_row,
                    filters::vid_eq(x),
                    vec![Mutation::DeleteFromRow],
                    vec![],
                )?
                .map_err(no_such_version)?;
            if matched {
                delete_event(io, coll, mk, None);
            }
        } else if mst.is_some() {
            let matched = io
                .check_and_mutate(m_row, filters::vid_eq(x), replace(&val, None), vec![])?
                .map_err(no_such_version)?;
            if matched {
                put_event(io, coll, mk, &val);
            }
        } else {
            let matched = io
                .check_and_mutate(
                    m_row,
                    filters::exists_and_not(filters::vid_eq(x)),
                    vec![],
                    replace(&val, None),
                )?
                .map_err(no_such_version)?;
            if matched {
                return Err(ObjmetaError::internal("concurrent put of the same version").into());
            }
            put_event(io, coll, mk, &val);
        }
        Ok(Some(version_result(x)))
    }

    #[allow(clippy::too_many_arguments)]
    fn case4(
        &self,
        io: &mut Io<'_>,
        coll: &str,
        vf: VFormat,
        mk: &str,
        m_row: &[u8],
        x: &str,
        val: Json,
    ) -> R<Option<String>> {
        let vk = version_key(vf, &self.key, x);
        io.mutate_row(&row_key(coll, &vk), replace(&val, None))?
            .map_err(internal)?;
        put_event(io, coll, &vk, &val);
        let Some(mut latest) = latest_version(io, coll, vf, &self.key)? else {
            return Err(ObjmetaError::NoSuchKey.into());
        };
        escape_tags(&mut latest);
        let l = latest
            .get("versionId")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string();
        if vf == VFormat::V1 && latest.member_truthy("isDeleteMarker") {
            let matched = io
                .check_and_mutate(
                    m_row,
                    filters::vid_ge(&l),
                    vec![Mutation::DeleteFromRow],
                    vec![],
                )?
                .map_err(internal)?;
            if matched {
                delete_event(io, coll, mk, None);
            }
        } else {
            let matched = io
                .check_and_mutate(
                    m_row,
                    filters::exists_and_not(filters::vid_ge(&l)),
                    vec![],
                    replace(&latest, None),
                )?
                .map_err(internal)?;
            if !matched {
                put_event(io, coll, mk, &latest);
            }
        }
        let shown = match val.get("versionId") {
            None => "undefined".to_string(),
            Some(Json::String(s)) => s.clone(),
            Some(other) => other.stringify(),
        };
        Ok(Some(version_result(&shown)))
    }
}

/// `getObject(bucket, key, params)`.
#[derive(Clone, Debug)]
pub struct GetObjectOp {
    /// Bucket.
    pub bucket: String,
    /// Object key.
    pub key: String,
    /// Raw version id (`params.versionId` when truthy).
    pub version_id: Option<String>,
}

impl Op for GetObjectOp {
    type Output = Json;

    fn run(&self, io: &mut Io<'_>, st: &mut ObjmetaState) -> R<Json> {
        let vf = bucket_vformat(io, st, &self.bucket)?;
        let coll = collection_for_bucket(&self.bucket);
        let vid = self.version_id.as_deref().filter(|v| !v.is_empty());
        let k = match vid {
            Some(v) => version_key(vf, &self.key, v),
            None => master_key(vf, &self.key),
        };
        let doc = read_live_doc(io, &row_key(coll, &k))?;
        if doc.is_none() && vid.is_some() {
            return Err(ObjmetaError::NoSuchKey.into());
        }
        #[cfg(feature = "planted-bugs")]
        let skip_phd_check =
            st.config.planted == Some(crate::planted::PlantedBug::ObjmetaGetSkipsPlaceholderCheck);
        #[cfg(not(feature = "planted-bugs"))]
        let skip_phd_check = false;
        match doc {
            Some(d) if skip_phd_check || !d.value.member_truthy("isPHD") => {
                let mut v = d.value;
                unescape_tags(&mut v);
                Ok(v)
            }
            _ => {
                latest_version(io, coll, vf, &self.key)?.ok_or(Flow::Fail(ObjmetaError::NoSuchKey))
            }
        }
    }
}

/// `deleteObject(bucket, key, params, originOp)`.
#[derive(Clone, Debug)]
pub struct DeleteObjectOp {
    /// Bucket.
    pub bucket: String,
    /// Object key.
    pub key: String,
    /// Params object (`versionId`, `doesNotNeedOpogUpdate`), or `None`.
    pub params: Option<Json>,
    /// `originOp` (default `s3:ObjectRemoved:Delete`).
    pub origin_op: Option<String>,
}

impl Op for DeleteObjectOp {
    type Output = ();

    fn run(&self, io: &mut Io<'_>, st: &mut ObjmetaState) -> R<()> {
        let vf = bucket_vformat(io, st, &self.bucket)?;
        let coll = collection_for_bucket(&self.bucket).to_string();
        let origin = self.origin_op.as_deref().unwrap_or(ORIGIN_OP_DELETE);
        let params = self.params.clone().unwrap_or(Json::Null);
        let no_oplog = params.member_truthy("doesNotNeedOpogUpdate");
        let mk = master_key(vf, &self.key);
        let m_row = row_key(&coll, &mk);
        let vid = match params.get("versionId") {
            Some(v) if v.truthy() => match v {
                Json::String(s) => s.clone(),
                other => other.stringify(),
            },
            _ => {
                internal_delete(io, &coll, &mk, None, no_oplog, origin)?;
                return Ok(());
            }
        };
        let mst = match read_live_doc(io, &m_row)? {
            Some(d) => d.value,
            None => latest_version(io, &coll, vf, &self.key)?
                .ok_or(Flow::Fail(ObjmetaError::NoSuchKey))?,
        };
        let vk = version_key(vf, &self.key, &vid);
        let master_path = mst.member_truthy("isPHD")
            || mst.get("versionId").and_then(Json::as_str) == Some(vid.as_str());
        if !master_path {
            if !internal_delete(io, &coll, &vk, None, no_oplog, origin)? {
                return Err(ObjmetaError::NoSuchKey.into());
            }
            return Ok(());
        }
        let p = st.generate_version_id(io.now());
        let fields = [
            ("isPHD", Json::Bool(true)),
            ("versionId", Json::str(p.clone())),
            ("deleted", Json::Bool(false)),
        ];
        merge_upsert(io, &coll, &mk, &fields)?;
        internal_delete(io, &coll, &vk, None, no_oplog, origin)?;
        // deleteOrRepairPHD(p)
        let latest = latest_version(io, &coll, vf, &self.key)?;
        match latest {
            None => {
                internal_delete(io, &coll, &mk, Some(&p), false, ORIGIN_OP_DELETE)?;
            }
            Some(l) if vf == VFormat::V1 && l.member_truthy("isDeleteMarker") => {
                internal_delete(io, &coll, &mk, Some(&p), false, ORIGIN_OP_DELETE)?;
            }
            Some(_) => io.emit(ObjmetaEvent::RepairScheduled(RepairTask {
                bucket: self.bucket.clone(),
                key: self.key.clone(),
                phd_version_id: p,
                vformat: vf,
                due: io.now().saturating_add_micros(REPAIR_DELAY_US),
            })),
        }
        Ok(())
    }
}

/// Read–merge–CAS upsert of top-level fields (`objmeta.md` 5.7).
fn merge_upsert(io: &mut Io<'_>, coll: &str, key: &str, fields: &[(&str, Json)]) -> R<()> {
    let rk = row_key(coll, key);
    loop {
        match read_doc(io, &rk)? {
            Some(doc) => {
                let mut merged = doc.value.clone();
                let Some(o) = merged.as_object_mut() else {
                    return Err(ObjmetaError::internal("stored value is not an object").into());
                };
                for (n, v) in fields {
                    o.set(*n, v.clone());
                }
                if merged.stringify() == doc.text {
                    return Ok(());
                }
                let hash = doc.hash.clone().unwrap_or_default();
                let matched = io
                    .check_and_mutate(&rk, filters::hash_eq(&hash), replace(&merged, None), vec![])?
                    .map_err(internal)?;
                if matched {
                    put_event(io, coll, key, &merged);
                    return Ok(());
                }
            }
            None => {
                let fresh: JsonObject = fields
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.clone()))
                    .collect();
                let fresh = Json::Object(fresh);
                let matched = io
                    .check_and_mutate(&rk, filters::exists(), vec![], replace(&fresh, None))?
                    .map_err(internal)?;
                if !matched {
                    put_event(io, coll, key, &fresh);
                    return Ok(());
                }
            }
        }
    }
}

/// How a repair ended (`objmeta.md` 8.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepairOutcome {
    /// The master now holds the latest version.
    Repaired,
    /// The master changed meanwhile; nothing written.
    Conflict,
    /// No version left.
    NoVersion,
    /// A request failed, or the deadline passed.
    Failed,
}

impl RepairOutcome {
    /// Lowercase name for output.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairOutcome::Repaired => "repaired",
            RepairOutcome::Conflict => "conflict",
            RepairOutcome::NoVersion => "no_version",
            RepairOutcome::Failed => "failed",
        }
    }
}

/// `asyncRepair(bucket, key, p, vf)`.
#[derive(Clone, Debug)]
pub struct AsyncRepairOp {
    /// What to repair.
    pub task: RepairTask,
}

impl Op for AsyncRepairOp {
    type Output = RepairOutcome;

    fn run(&self, io: &mut Io<'_>, _st: &mut ObjmetaState) -> R<RepairOutcome> {
        let t = &self.task;
        let coll = collection_for_bucket(&t.bucket);
        let latest = match latest_version(io, coll, t.vformat, &t.key) {
            Ok(Some(l)) => l,
            Ok(None) => return Ok(RepairOutcome::NoVersion),
            Err(Flow::Suspend) => return Err(Flow::Suspend),
            Err(Flow::Fail(_)) => return Ok(RepairOutcome::Failed),
        };
        let mut latest = latest;
        if let Some(o) = latest.as_object_mut() {
            o.set("originOp", Json::str(ORIGIN_OP_DELETE));
        }
        escape_tags(&mut latest);
        let mk = master_key(t.vformat, &t.key);
        let r = io.check_and_mutate(
            &row_key(coll, &mk),
            filters::exists_and_not(filters::phd_is(&t.phd_version_id)),
            vec![],
            replace(&latest, None),
        );
        match r {
            Err(Flow::Suspend) => Err(Flow::Suspend),
            Err(Flow::Fail(_)) | Ok(Err(_)) => Ok(RepairOutcome::Failed),
            Ok(Ok(true)) => Ok(RepairOutcome::Conflict),
            Ok(Ok(false)) => {
                put_event(io, coll, &mk, &latest);
                Ok(RepairOutcome::Repaired)
            }
        }
    }

    fn on_abort(&self) -> Result<RepairOutcome, ObjmetaError> {
        Ok(RepairOutcome::Failed)
    }
}

/// The members `BucketInfo` keeps, in order (`objmeta.md` 11).
const BUCKET_INFO_MEMBERS: &[&str] = &[
    "acl",
    "name",
    "owner",
    "ownerDisplayName",
    "creationDate",
    "mdBucketModelVersion",
    "transient",
    "deleted",
    "serverSideEncryption",
    "versioningConfiguration",
    "locationConstraint",
    "readLocationConstraint",
    "websiteConfiguration",
    "cors",
    "replicationConfiguration",
    "lifecycleConfiguration",
    "bucketPolicy",
    "uid",
    "isNFS",
    "ingestion",
    "azureInfo",
    "objectLockEnabled",
    "objectLockConfiguration",
    "notificationConfiguration",
    "tags",
    "capabilities",
    "quotaMax",
];

/// The stored bucket value: `md`'s BucketInfo members in order, others dropped.
pub fn bucket_info_value(md: &Json) -> Json {
    let o: JsonObject = BUCKET_INFO_MEMBERS
        .iter()
        .filter_map(|n| md.get(n).map(|v| (n.to_string(), v.clone())))
        .collect();
    Json::Object(o)
}

/// `createBucket(b, md)`.
#[derive(Clone, Debug)]
pub struct CreateBucketOp {
    /// Bucket.
    pub bucket: String,
    /// BucketInfo.
    pub md: Json,
}

impl Op for CreateBucketOp {
    type Output = VFormat;

    fn run(&self, io: &mut Io<'_>, st: &mut ObjmetaState) -> R<VFormat> {
        let vf = VFormat::for_new_bucket(&self.bucket, st.config.default_bucket_key_format);
        let value = bucket_info_value(&self.md);
        io.mutate_row(
            &row_key(METASTORE, &self.bucket),
            replace(&value, Some(vf.as_str())),
        )?
        .map_err(internal)?;
        put_event(io, METASTORE, &self.bucket, &value);
        st.cache_vformat(&self.bucket, vf);
        Ok(vf)
    }
}

/// `putBucketAttributes(b, md)`.
#[derive(Clone, Debug)]
pub struct PutBucketAttributesOp {
    /// Bucket.
    pub bucket: String,
    /// BucketInfo.
    pub md: Json,
}

impl Op for PutBucketAttributesOp {
    type Output = ();

    fn run(&self, io: &mut Io<'_>, _st: &mut ObjmetaState) -> R<()> {
        let value = bucket_info_value(&self.md);
        io.mutate_row(&row_key(METASTORE, &self.bucket), replace(&value, None))?
            .map_err(internal)?;
        put_event(io, METASTORE, &self.bucket, &value);
        Ok(())
    }
}

/// `getBucketAttributes(b)`.
#[derive(Clone, Debug)]
pub struct GetBucketAttributesOp {
    /// Bucket.
    pub bucket: String,
}

impl Op for GetBucketAttributesOp {
    type Output = Json;

    fn run(&self, io: &mut Io<'_>, _st: &mut ObjmetaState) -> R<Json> {
        read_doc(io, &row_key(METASTORE, &self.bucket))?
            .map(|d| d.value)
            .ok_or(Flow::Fail(ObjmetaError::NoSuchBucket))
    }
}

/// Rows per page of a collection drop.
const DROP_PAGE: i64 = 10_000;

/// `deleteBucket(b)`: output = rows deleted (collection rows plus the metastore row).
#[derive(Clone, Debug)]
pub struct DeleteBucketOp {
    /// Bucket.
    pub bucket: String,
}

impl Op for DeleteBucketOp {
    type Output = u64;

    fn run(&self, io: &mut Io<'_>, st: &mut ObjmetaState) -> R<u64> {
        let coll = collection_for_bucket(&self.bucket).to_string();
        let prefix_len = coll.len() + 1;
        let mut start = KeyBound::Closed(collection_start(&coll));
        let mut deleted = 0u64;
        loop {
            let range = RowRange {
                start: start.clone(),
                end: KeyBound::Open(collection_end(&coll)),
            };
            let filter =
                RowFilter::Chain(vec![RowFilter::CellsPerRowLimit(1), RowFilter::StripValue]);
            let rows = io
                .read_rows(RowSet::range(range), Some(filter), DROP_PAGE)?
                .map_err(internal)?;
            let n = rows.len();
            if n > 0 {
                let entries = rows
                    .iter()
                    .map(|r| MutateRowsEntry {
                        row_key: r.key.clone(),
                        mutations: vec![Mutation::DeleteFromRow],
                    })
                    .collect();
                io.mutate_rows(entries)?.map_err(internal)?;
                for r in &rows {
                    let key = String::from_utf8_lossy(r.key.get(prefix_len..).unwrap_or(&[]))
                        .into_owned();
                    delete_event(io, &coll, &key, None);
                }
                deleted += n as u64;
            }
            match rows.last() {
                Some(last) if n as i64 >= DROP_PAGE => start = KeyBound::Open(last.key.clone()),
                _ => break,
            }
        }
        io.mutate_row(
            &row_key(METASTORE, &self.bucket),
            vec![Mutation::DeleteFromRow],
        )?
        .map_err(internal)?;
        delete_event(io, METASTORE, &self.bucket, None);
        st.uncache_vformat(&self.bucket);
        Ok(deleted)
    }
}

/// One bucket of `listBuckets`.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketEntry {
    /// Name (row key after the `00`).
    pub name: String,
    /// Its vFormat (`v0` when absent).
    pub vformat: VFormat,
    /// Whether it is a special bucket.
    pub special: bool,
    /// The stored BucketInfo.
    pub value: Json,
}

fn metastore_rows(io: &mut Io<'_>) -> R<Vec<BucketEntry>> {
    let range = RowRange::half_open(collection_start(METASTORE), collection_end(METASTORE));
    let rows = io
        .read_rows(RowSet::range(range), Some(filters::latest()), 0)?
        .map_err(internal)?;
    let prefix_len = METASTORE.len() + 1;
    let mut out = Vec::new();
    for r in rows {
        let name = String::from_utf8_lossy(r.key.get(prefix_len..).unwrap_or(&[])).into_owned();
        if let Some(doc) = doc_of(Some(r))? {
            let vformat = doc
                .vformat
                .as_ref()
                .and_then(Json::as_str)
                .map_or(VFormat::V0, VFormat::from_stored);
            out.push(BucketEntry {
                special: is_special_bucket(&name),
                name,
                vformat,
                value: doc.value,
            });
        }
    }
    Ok(out)
}

/// `listBuckets()`.
#[derive(Clone, Debug, Default)]
pub struct ListBucketsOp;

impl Op for ListBucketsOp {
    type Output = Vec<BucketEntry>;

    fn run(&self, io: &mut Io<'_>, _st: &mut ObjmetaState) -> R<Vec<BucketEntry>> {
        metastore_rows(io)
    }
}

/// A version-4 UUID from 16 bytes of `rng`.
pub(crate) fn uuid_v4(rng: &mut SplitMix64) -> String {
    let mut b = [0u8; 16];
    for chunk in b.chunks_mut(8) {
        let bytes = rng.next_u64().to_be_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
    b[6] = 0x40 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    let h = hex_lower(&b);
    alloc::format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn hex_lower(b: &[u8]) -> String {
    use core::fmt::Write;
    let mut s = String::new();
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// `getUUID()`; `candidate` overrides the config and the seed (tests, vectors).
#[derive(Clone, Debug, Default)]
pub struct GetUuidOp {
    /// A fixed candidate.
    pub candidate: Option<String>,
}

impl Op for GetUuidOp {
    type Output = String;

    fn run(&self, io: &mut Io<'_>, st: &mut ObjmetaState) -> R<String> {
        let candidate = match (&self.candidate, &st.config.initial_instance_id) {
            (Some(c), _) | (None, Some(c)) => c.clone(),
            (None, None) => uuid_v4(&mut SplitMix64::new(io.seed())),
        };
        let rk = row_key(INFOSTORE, UUID_KEY);
        let value = Json::str(candidate.clone());
        let matched = io
            .check_and_mutate(&rk, filters::exists(), vec![], replace(&value, None))?
            .map_err(internal)?;
        if !matched {
            put_event(io, INFOSTORE, UUID_KEY, &value);
            return Ok(candidate);
        }
        match read_doc(io, &rk)? {
            Some(d) => Ok(d
                .value
                .as_str()
                .map_or_else(|| d.value.stringify(), String::from)),
            None => Err(ObjmetaError::NoSuchKey.into()),
        }
    }
}

/// `countItems()`.
#[derive(Clone, Debug, Default)]
pub struct CountItemsOp;

impl Op for CountItemsOp {
    type Output = Json;

    fn run(&self, io: &mut Io<'_>, st: &mut ObjmetaState) -> R<Json> {
        let buckets = metastore_rows(io)?;
        let mut doc = ReadCountItemsOp.run(io, st)?;
        let mut list = Vec::new();
        let mut quota = 0u32;
        for b in buckets.iter().filter(|b| !b.special) {
            let v = &b.value;
            let mut e = JsonObject::new();
            if let Some(n) = v.get("name") {
                e.set("name", n.clone());
            }
            if let Some(l) = v.get("locationConstraint") {
                e.set("location", l.clone());
            }
            e.set(
                "isVersioned",
                Json::Bool(v.member_truthy("versioningConfiguration")),
            );
            if let Some(o) = v.get("owner") {
                e.set("ownerCanonicalId", o.clone());
            }
            e.set("ingestion", Json::Bool(v.member_truthy("ingestion")));
            if v.member_truthy("quotaMax") {
                quota += 1;
            }
            list.push(Json::Object(e));
        }
        if let Some(o) = doc.as_object_mut() {
            o.set("bucketList", Json::Array(list));
            o.set(
                "buckets",
                Json::Number(f64::from(
                    buckets.iter().filter(|b| !b.special).count() as u32
                )),
            );
            o.set("bucketWithQuotaCount", Json::Number(f64::from(quota)));
        }
        Ok(doc)
    }
}

/// `getBucketVFormat(b)` on its own (`objmeta.md` 4.3): zero or one metastore read.
#[derive(Clone, Debug)]
pub struct GetBucketVFormatOp {
    /// Bucket.
    pub bucket: String,
}

impl Op for GetBucketVFormatOp {
    type Output = VFormat;

    fn run(&self, io: &mut Io<'_>, st: &mut ObjmetaState) -> R<VFormat> {
        bucket_vformat(io, st, &self.bucket)
    }
}

/// `getBucketAndObject(b, k, params)`: the BucketInfo, plus the object when it exists.
#[derive(Clone, Debug)]
pub struct GetBucketAndObjectOp {
    /// The object read (bucket, key, version id).
    pub get: GetObjectOp,
}

impl Op for GetBucketAndObjectOp {
    /// `(bucket value, object value or None on NoSuchKey)`.
    type Output = (Json, Option<Json>);

    fn run(&self, io: &mut Io<'_>, st: &mut ObjmetaState) -> R<(Json, Option<Json>)> {
        let bucket = read_doc(io, &row_key(METASTORE, &self.get.bucket))?
            .map(|d| d.value)
            .ok_or(Flow::Fail(ObjmetaError::NoSuchBucket))?;
        match self.get.run(io, st) {
            Ok(v) => Ok((bucket, Some(v))),
            Err(Flow::Fail(ObjmetaError::NoSuchKey)) => Ok((bucket, None)),
            Err(e) => Err(e),
        }
    }
}

/// The countItems document when none is stored.
const EMPTY_COUNT_ITEMS: &str = r#"{"objects":0,"versions":0,"buckets":0,"bucketList":[],"dataManaged":{"total":{"curr":0,"prev":0},"byLocation":{}},"stalled":0}"#;

/// `readCountItems()`.
#[derive(Clone, Debug, Default)]
pub struct ReadCountItemsOp;

impl Op for ReadCountItemsOp {
    type Output = Json;

    fn run(&self, io: &mut Io<'_>, _st: &mut ObjmetaState) -> R<Json> {
        match read_doc(io, &row_key(INFOSTORE, COUNT_ITEMS_KEY))? {
            Some(d) => Ok(d.value),
            None => {
                Json::parse(EMPTY_COUNT_ITEMS).map_err(|e| Flow::Fail(ObjmetaError::internal(e)))
            }
        }
    }
}

/// `updateCountItems(v)`.
#[derive(Clone, Debug)]
pub struct UpdateCountItemsOp {
    /// The new document.
    pub value: Json,
}

impl Op for UpdateCountItemsOp {
    type Output = ();

    fn run(&self, io: &mut Io<'_>, _st: &mut ObjmetaState) -> R<()> {
        io.mutate_row(
            &row_key(INFOSTORE, COUNT_ITEMS_KEY),
            replace(&self.value, None),
        )?
        .map_err(internal)?;
        put_event(io, INFOSTORE, COUNT_ITEMS_KEY, &self.value);
        Ok(())
    }
}

/// `getObjects(bucket, items)` (`objmeta.md` 9.3). Output: one `{err, doc, versionId?, key}`
/// object per item, in item order (`err` = `"NoSuchKey"` / `"InternalError"` / `null`).
///
/// Deviation: the per-item `getLatestVersion` reads are sent one at a time, not up to five at
/// once (the replay engine has one request in flight); results and store state are the same.
#[derive(Clone, Debug)]
pub struct GetObjectsOp {
    /// Bucket.
    pub bucket: String,
    /// `[{key, params}]`; anything but an array is an error.
    pub items: Json,
}

impl Op for GetObjectsOp {
    type Output = Json;

    fn run(&self, io: &mut Io<'_>, st: &mut ObjmetaState) -> R<Json> {
        let Json::Array(items) = &self.items else {
            return Err(ObjmetaError::internal("objects must be an array").into());
        };
        if items.len() > 1000 {
            return Err(ObjmetaError::internal("cannot get more than 1000 objects").into());
        }
        let vf = bucket_vformat(io, st, &self.bucket)?;
        if items.is_empty() {
            return Ok(Json::Array(Vec::new()));
        }
        let coll = collection_for_bucket(&self.bucket).to_string();
        let parsed: Vec<(String, Option<String>, String)> = items
            .iter()
            .map(|item| {
                let key = item
                    .get("key")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string();
                let vid = item
                    .get("params")
                    .and_then(|p| p.get("versionId"))
                    .filter(|v| v.truthy())
                    .map(|v| v.as_str().map_or_else(|| v.stringify(), String::from));
                let ak = match &vid {
                    Some(v) => version_key(vf, &key, v),
                    None => master_key(vf, &key),
                };
                (key, vid, ak)
            })
            .collect();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        for (_, _, ak) in &parsed {
            let rk = row_key(&coll, ak);
            if !keys.contains(&rk) {
                keys.push(rk);
            }
        }
        let rowset = RowSet {
            row_keys: keys,
            row_ranges: Vec::new(),
        };
        let rows = io
            .read_rows(rowset, Some(filters::live_value()), 0)?
            .map_err(internal)?;
        let mut out = Vec::new();
        for (key, vid, ak) in parsed {
            let rk = row_key(&coll, &ak);
            let doc = doc_of(rows.iter().find(|r| r.key == rk).cloned())?;
            let (err, value) = match doc {
                None if vid.is_some() => (Json::str("NoSuchKey"), Json::Null),
                Some(d) if !d.value.member_truthy("isPHD") => {
                    let mut v = d.value;
                    unescape_tags(&mut v);
                    (Json::Null, v)
                }
                _ => match latest_version(io, &coll, vf, &key) {
                    Ok(Some(v)) => (Json::Null, v),
                    Ok(None) => (Json::str("NoSuchKey"), Json::Null),
                    Err(Flow::Suspend) => return Err(Flow::Suspend),
                    Err(Flow::Fail(_)) => (Json::str("InternalError"), Json::Null),
                },
            };
            let mut o = JsonObject::new();
            o.set("err", err);
            o.set("doc", value);
            if let Some(v) = vid {
                o.set("versionId", Json::str(v));
            }
            o.set("key", Json::str(ak));
            out.push(Json::Object(o));
        }
        Ok(Json::Array(out))
    }
}

/// Sets (`Some`) or removes (`None`) the member at `path` inside `value`; `Ok(false)` when a
/// removal finds nothing. A path through a non-object member is an error (MongoDB refuses it).
fn apply_path(value: &mut Json, path: &[String], new: Option<&Json>) -> Result<bool, ObjmetaError> {
    let Some((last, parents)) = path.split_last() else {
        return Ok(false);
    };
    let mut cur = value;
    for p in parents {
        let Some(o) = cur.as_object_mut() else {
            return Err(ObjmetaError::internal("merge through a non-object member"));
        };
        if o.get(p).is_none() {
            if new.is_none() {
                return Ok(false);
            }
            o.set(p.clone(), Json::Object(JsonObject::new()));
        }
        let Some(next) = o.get_mut(p) else {
            return Ok(false);
        };
        cur = next;
    }
    let Some(o) = cur.as_object_mut() else {
        return Err(ObjmetaError::internal("merge through a non-object member"));
    };
    match new {
        Some(v) => {
            o.set(last.clone(), v.clone());
            Ok(true)
        }
        None => Ok(o.remove(last).is_some()),
    }
}

/// Read–merge–CAS of one member at `path` (`objmeta.md` 5.7); `upsert` creates the row.
fn merge_path(
    io: &mut Io<'_>,
    coll: &str,
    key: &str,
    path: &[String],
    new: Option<&Json>,
    upsert: bool,
) -> R<()> {
    let rk = row_key(coll, key);
    loop {
        match read_doc(io, &rk)? {
            Some(doc) => {
                let mut merged = doc.value.clone();
                if !apply_path(&mut merged, path, new)? || merged.stringify() == doc.text {
                    return Ok(());
                }
                let hash = doc.hash.clone().unwrap_or_default();
                let matched = io
                    .check_and_mutate(&rk, filters::hash_eq(&hash), replace(&merged, None), vec![])?
                    .map_err(internal)?;
                if matched {
                    put_event(io, coll, key, &merged);
                    return Ok(());
                }
            }
            None => {
                if !upsert || new.is_none() {
                    return Ok(());
                }
                let mut fresh = Json::Object(JsonObject::new());
                apply_path(&mut fresh, path, new)?;
                let matched = io
                    .check_and_mutate(&rk, filters::exists(), vec![], replace(&fresh, None))?
                    .map_err(internal)?;
                if !matched {
                    put_event(io, coll, key, &fresh);
                    return Ok(());
                }
            }
        }
    }
}

fn capability_path(name: &str, field: Option<&str>) -> Vec<String> {
    let mut p = vec!["capabilities".to_string(), name.to_string()];
    p.extend(field.map(String::from));
    p
}

/// `putBucketAttributesCapabilities(b, name, field?, cap)`: upserts
/// `value.capabilities.<name>[.<field>] = cap`.
#[derive(Clone, Debug)]
pub struct PutBucketAttributesCapabilitiesOp {
    /// Bucket.
    pub bucket: String,
    /// Capability name.
    pub name: String,
    /// Optional sub-field.
    pub field: Option<String>,
    /// The capability value.
    pub capability: Json,
}

impl Op for PutBucketAttributesCapabilitiesOp {
    type Output = ();

    fn run(&self, io: &mut Io<'_>, _st: &mut ObjmetaState) -> R<()> {
        let path = capability_path(&self.name, self.field.as_deref());
        merge_path(
            io,
            METASTORE,
            &self.bucket,
            &path,
            Some(&self.capability),
            true,
        )
    }
}

/// `deleteBucketAttributesCapability(b, name, field?)`: removes that member (no write when
/// the row or the member is absent).
#[derive(Clone, Debug)]
pub struct DeleteBucketAttributesCapabilityOp {
    /// Bucket.
    pub bucket: String,
    /// Capability name.
    pub name: String,
    /// Optional sub-field.
    pub field: Option<String>,
}

impl Op for DeleteBucketAttributesCapabilityOp {
    type Output = ();

    fn run(&self, io: &mut Io<'_>, _st: &mut ObjmetaState) -> R<()> {
        let path = capability_path(&self.name, self.field.as_deref());
        merge_path(io, METASTORE, &self.bucket, &path, None, false)
    }
}
