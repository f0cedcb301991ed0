//! objmeta's document-level steps, built on the requests of `requests.rs`: the vFormat lookup,
//! document reads, `getLatestVersion`, `internalDelete`, the read–merge–CAS of `objmeta.md`
//! 5.7 and the metastore scan. Each is a struct (with a phase enum when it takes more than one
//! request) whose `poll` runs it as far as finished children allow and returns `Ok(None)`
//! while it waits, like [`Flow::advance`](crate::operation::Flow).

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{Mutation, Row, RowRange, RowSet};
use rowkit_codec::objmeta::cells::{StoredDoc, filters, replace, unescape_tags};
use rowkit_codec::objmeta::json::{Json, JsonObject};
use rowkit_codec::objmeta::keys::{
    METASTORE, VFormat, collection_end, collection_start, is_special_bucket, row_key,
};
use rowkit_codec::objmeta::migration::marker::MigrationColumns;

use super::bucket::BucketEntry;
use super::migrate::marker::decode_marker;
use super::requests::{
    OmIo, P, check_key, delete_event, latest_version_range, put_event, start_cas,
    start_cas_unchanged, start_read, start_read_row, start_write,
};
use super::{BucketLayout, ObjmetaError, ObjmetaState};
use crate::children::ChildId;
use crate::{Timestamp, ready};

/// The stored document of a row, if it has one.
pub(super) fn doc_of(row: Option<&Row>) -> Result<Option<StoredDoc>, ObjmetaError> {
    match row {
        None => Ok(None),
        Some(r) => StoredDoc::from_row(r).map_err(ObjmetaError::internal),
    }
}

/// The vFormat a metastore document records (`v0` when absent).
pub(super) fn vformat_of(doc: &StoredDoc) -> VFormat {
    doc.vformat
        .as_ref()
        .and_then(Json::as_str)
        .map_or(VFormat::V0, VFormat::from_stored)
}

/// `ReadRow(key, LatestN(1))` as a document (no deleted filter): a point read.
#[derive(Debug)]
pub(super) struct ReadDoc(ChildId);

impl ReadDoc {
    pub(super) fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        key: Vec<u8>,
    ) -> Result<ReadDoc, ObjmetaError> {
        check_key(&key)?;
        Ok(ReadDoc(start_read_row(io, st, key, filters::latest())))
    }

    /// The document (`None`: no row, or a row without one) once read.
    pub(super) fn poll(&self, io: &mut OmIo) -> P<Option<StoredDoc>> {
        let row = ready!(io.row_or_wait(self.0));
        doc_of(row.as_ref()).map(Some)
    }
}

/// The layout a bucket's metastore row read at `read_at` gives (`None`: no row, or no
/// document: the bucket is v0 and is not cached); the marker is decoded only for an aware
/// process (`docs/migration.md` §2.3: the same `ReadRow`, no extra request).
pub(super) fn layout_of(
    st: &ObjmetaState,
    row: Option<&Row>,
    read_at: Timestamp,
) -> Result<Option<BucketLayout>, ObjmetaError> {
    let Some(doc) = doc_of(row)? else {
        return Ok(None);
    };
    let marker = match row.filter(|_| st.config.migration_aware) {
        Some(row) => decode_marker(MigrationColumns::from_row(row).marker.as_deref())?,
        None => None,
    };
    Ok(Some(BucketLayout {
        vformat: vformat_of(&doc),
        marker,
        read_at,
    }))
}

/// `getBucketVFormat(b)` with the LRU cache (`objmeta.md` 4.3): zero or one metastore read.
/// An aware process's lookup also gives the marker, and reads the row again once the cached
/// one is `marker_ttl` old ([`ObjmetaState::cached_layout`]).
#[derive(Debug)]
pub(super) enum BucketVFormat {
    /// Nothing looked up yet.
    Start,
    /// Nothing looked up yet, and the cache is not to be used: an aware write paused in a
    /// fence reads the marker again.
    Fresh,
    /// The metastore row is being read (sent at `at`).
    Reading { read: ReadDoc, at: Timestamp },
    /// Looked up already by the caller (an aware write's wrapper): this key format.
    Known(VFormat),
}

impl BucketVFormat {
    pub(super) fn poll(
        &mut self,
        io: &mut OmIo,
        st: &mut ObjmetaState,
        bucket: &str,
    ) -> P<VFormat> {
        Ok(self
            .poll_layout(io, st, bucket)?
            .map(|layout| layout.vformat))
    }

    /// The lookup with the marker ([`BucketLayout`]).
    pub(super) fn poll_layout(
        &mut self,
        io: &mut OmIo,
        st: &mut ObjmetaState,
        bucket: &str,
    ) -> P<BucketLayout> {
        if let BucketVFormat::Known(vformat) = self {
            return Ok(Some(BucketLayout {
                vformat: *vformat,
                marker: None,
                read_at: io.now(),
            }));
        }
        if let BucketVFormat::Start = self
            && let Some(layout) = st.cached_layout(bucket, io.now())
        {
            return Ok(Some(layout));
        }
        if let BucketVFormat::Start | BucketVFormat::Fresh = self {
            let read = ReadDoc::start(io, st, row_key(METASTORE, bucket))?;
            *self = BucketVFormat::Reading { read, at: io.now() };
        }
        let BucketVFormat::Reading { read, at } = self else {
            return Ok(None);
        };
        let row = ready!(io.row_or_wait(read.0));
        match layout_of(st, row.as_ref(), *at)? {
            Some(layout) => {
                st.cache_layout(bucket, &layout);
                Ok(Some(layout))
            }
            // A bucket without a metastore row is v0, and not cached (it may be created later).
            None => Ok(Some(BucketLayout {
                vformat: VFormat::V0,
                marker: None,
                read_at: *at,
            })),
        }
    }
}

/// `getLatestVersion(key)` (`objmeta.md` 9.1): the newest live version, tags unescaped.
#[derive(Debug)]
pub(super) struct LatestVersion(ChildId);

impl LatestVersion {
    pub(super) fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        collection: &str,
        vf: VFormat,
        key: &str,
    ) -> LatestVersion {
        let rows = RowSet::range(latest_version_range(collection, vf, key));
        LatestVersion(start_read(io, st, rows, filters::live_value(), 1))
    }

    /// The version (`None` = NoSuchKey) once read; any failure is an error.
    pub(super) fn poll(&self, io: &mut OmIo) -> P<Option<Json>> {
        let rows = ready!(io.rows_or_wait(self.0));
        let latest = doc_of(rows.first())?.map(|doc| {
            let mut v = doc.value;
            unescape_tags(&mut v);
            v
        });
        Ok(Some(latest))
    }
}

/// `internalDelete(collection, key, phd?, noOplog, originOp)` (`objmeta.md` 8.1): deletes the
/// document unconditionally (no oplog), or reads it and deletes it under its hash, again until
/// the hash holds. Output: `false` = NoSuchKey (absent, flagged deleted, or not placeholder
/// `phd`).
#[derive(Debug)]
pub(super) struct InternalDelete {
    collection: String,
    key: String,
    row: Vec<u8>,
    phd: Option<String>,
    origin_op: String,
    phase: DeletePhase,
}

#[derive(Debug)]
enum DeletePhase {
    /// Nothing sent yet.
    Start {
        no_oplog: bool,
    },
    /// The unconditional delete.
    Unlogged(ChildId),
    /// Reading the document.
    Reading(ReadDoc),
    /// Deleting it under its hash; `pre` is its value (the event's pre-image).
    Deleting {
        cas: ChildId,
        pre: Json,
    },
    Done,
}

impl InternalDelete {
    pub(super) fn new(
        collection: &str,
        key: &str,
        phd: Option<&str>,
        no_oplog: bool,
        origin_op: &str,
    ) -> InternalDelete {
        InternalDelete {
            collection: collection.to_string(),
            key: key.to_string(),
            row: row_key(collection, key),
            phd: phd.map(String::from),
            origin_op: origin_op.to_string(),
            phase: DeletePhase::Start { no_oplog },
        }
    }

    pub(super) fn poll(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<bool> {
        loop {
            match core::mem::replace(&mut self.phase, DeletePhase::Done) {
                DeletePhase::Start { no_oplog: true } => {
                    let mutations = vec![Mutation::DeleteFromRow];
                    let write = start_write(io, st, self.row.clone(), mutations)?;
                    self.phase = DeletePhase::Unlogged(write);
                }
                DeletePhase::Start { no_oplog: false } => {
                    self.phase = DeletePhase::Reading(ReadDoc::start(io, st, self.row.clone())?);
                }
                DeletePhase::Unlogged(write) => {
                    ready!(io.written(write), self.phase => DeletePhase::Unlogged(write));
                    delete_event(io, &self.collection, &self.key, None);
                    return Ok(Some(true));
                }
                DeletePhase::Reading(read) => {
                    let doc = ready!(read.poll(io), self.phase => DeletePhase::Reading(read));
                    let Some(doc) = doc.filter(|d| !d.deleted) else {
                        return Ok(Some(false));
                    };
                    if let Some(p) = &self.phd {
                        let is = doc.value.get("isPHD") == Some(&Json::Bool(true))
                            && doc.value.get("versionId").and_then(Json::as_str) == Some(p);
                        if !is {
                            return Ok(Some(false));
                        }
                    }
                    let drop = vec![Mutation::DeleteFromRow];
                    let cas =
                        start_cas_unchanged(io, st, self.row.clone(), doc.hash.as_deref(), drop)?;
                    self.phase = DeletePhase::Deleting {
                        cas,
                        pre: doc.value,
                    };
                }
                DeletePhase::Deleting { cas, mut pre } => {
                    let matched =
                        ready!(io.matched(cas), self.phase => DeletePhase::Deleting { cas, pre });
                    if !matched {
                        // Changed since read: read again.
                        self.phase = DeletePhase::Start { no_oplog: false };
                        continue;
                    }
                    if let Some(o) = pre.as_object_mut() {
                        o.set("originOp", Json::str(self.origin_op.as_str()));
                        o.set("deleted", Json::Bool(true));
                    }
                    delete_event(io, &self.collection, &self.key, Some(&pre));
                    return Ok(Some(true));
                }
                DeletePhase::Done => return Ok(None),
            }
        }
    }
}

/// What a read–merge–CAS changes in a document.
#[derive(Debug)]
pub(super) enum Edit {
    /// Top-level members set (upserted; the placeholder master of a delete).
    Fields(Vec<(&'static str, Json)>),
    /// One member at `path` set (`Some`) or removed (`None`); `upsert` creates the row.
    Path {
        path: Vec<String>,
        new: Option<Json>,
        upsert: bool,
    },
}

impl Edit {
    /// Applies the edit to a stored value; `false` = nothing to change.
    fn apply(&self, value: &mut Json) -> Result<bool, ObjmetaError> {
        match self {
            Edit::Fields(fields) => {
                let Some(o) = value.as_object_mut() else {
                    return Err(ObjmetaError::internal("stored value is not an object"));
                };
                for (n, v) in fields {
                    o.set(*n, v.clone());
                }
                Ok(true)
            }
            Edit::Path { path, new, .. } => apply_path(value, path, new.as_ref()),
        }
    }

    /// The document to create when there is none, or `None` to leave the row absent.
    fn fresh(&self) -> Result<Option<Json>, ObjmetaError> {
        match self {
            Edit::Fields(fields) => Ok(Some(Json::Object(
                fields
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.clone()))
                    .collect(),
            ))),
            Edit::Path { upsert: false, .. } | Edit::Path { new: None, .. } => Ok(None),
            Edit::Path { path, new, .. } => {
                let mut fresh = Json::Object(JsonObject::new());
                apply_path(&mut fresh, path, new.as_ref())?;
                Ok(Some(fresh))
            }
        }
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

/// Read–merge–CAS of one document (`objmeta.md` 5.7): the merged value is written under the
/// read value's hash (or created when absent), again from the read until the CAS holds; no
/// write when the merge changes nothing.
#[derive(Debug)]
pub(super) struct Merge {
    collection: String,
    key: String,
    row: Vec<u8>,
    edit: Edit,
    phase: MergePhase,
}

#[derive(Debug)]
enum MergePhase {
    Start,
    Reading(ReadDoc),
    /// Replacing the read value under its hash.
    Replacing {
        cas: ChildId,
        merged: Json,
    },
    /// Creating the document where there was none.
    Creating {
        cas: ChildId,
        fresh: Json,
    },
    Done,
}

impl Merge {
    pub(super) fn new(collection: &str, key: &str, edit: Edit) -> Merge {
        Merge {
            collection: collection.to_string(),
            key: key.to_string(),
            row: row_key(collection, key),
            edit,
            phase: MergePhase::Start,
        }
    }

    pub(super) fn poll(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<()> {
        loop {
            match core::mem::replace(&mut self.phase, MergePhase::Done) {
                MergePhase::Start => {
                    self.phase = MergePhase::Reading(ReadDoc::start(io, st, self.row.clone())?);
                }
                MergePhase::Reading(read) => {
                    let doc = ready!(read.poll(io), self.phase => MergePhase::Reading(read));
                    match doc {
                        Some(doc) => {
                            let mut merged = doc.value;
                            if !self.edit.apply(&mut merged)? || merged.stringify() == doc.text {
                                return Ok(Some(()));
                            }
                            let rep = replace(&merged, None);
                            let cas = start_cas_unchanged(
                                io,
                                st,
                                self.row.clone(),
                                doc.hash.as_deref(),
                                rep,
                            )?;
                            self.phase = MergePhase::Replacing { cas, merged };
                        }
                        None => {
                            let Some(fresh) = self.edit.fresh()? else {
                                return Ok(Some(()));
                            };
                            let cas = start_cas(
                                io,
                                st,
                                self.row.clone(),
                                filters::exists(),
                                vec![],
                                replace(&fresh, None),
                            )?;
                            self.phase = MergePhase::Creating { cas, fresh };
                        }
                    }
                }
                MergePhase::Replacing { cas, merged } => {
                    let matched = ready!(io.matched(cas),
                        self.phase => MergePhase::Replacing { cas, merged });
                    if matched {
                        put_event(io, &self.collection, &self.key, &merged);
                        return Ok(Some(()));
                    }
                    self.phase = MergePhase::Start;
                }
                MergePhase::Creating { cas, fresh } => {
                    let matched =
                        ready!(io.matched(cas), self.phase => MergePhase::Creating { cas, fresh });
                    if !matched {
                        put_event(io, &self.collection, &self.key, &fresh);
                        return Ok(Some(()));
                    }
                    self.phase = MergePhase::Start;
                }
                MergePhase::Done => return Ok(None),
            }
        }
    }
}

/// Every bucket of the metastore, in key order (one scan).
#[derive(Debug)]
pub(super) struct MetastoreRows(ChildId);

impl MetastoreRows {
    pub(super) fn start(io: &mut OmIo, st: &ObjmetaState) -> MetastoreRows {
        let range = RowRange::half_open(collection_start(METASTORE), collection_end(METASTORE));
        MetastoreRows(start_read(
            io,
            st,
            RowSet::range(range),
            filters::latest(),
            0,
        ))
    }

    pub(super) fn poll(&self, io: &mut OmIo) -> P<Vec<BucketEntry>> {
        let rows = ready!(io.rows_or_wait(self.0));
        let prefix_len = METASTORE.len() + 1;
        let mut out = Vec::new();
        for r in &rows {
            let key = r.key.get(prefix_len..).unwrap_or(&[]);
            let name = String::from_utf8_lossy(key).into_owned();
            if let Some(doc) = doc_of(Some(r))? {
                out.push(BucketEntry {
                    special: is_special_bucket(&name),
                    name,
                    vformat: vformat_of(&doc),
                    value: doc.value,
                });
            }
        }
        Ok(Some(out))
    }
}
