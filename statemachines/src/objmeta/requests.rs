//! What the objmeta flows share: typed handles of the requests they send (each runs in a child
//! of the operation's [`Io`]), the change events, and the sub-flows several operations nest
//! (the vFormat lookup, document reads, `getLatestVersion`, `internalDelete`, the read–merge–CAS
//! of `objmeta.md` 5.7, the metastore scan).
//!
//! A sub-flow is a struct with a phase enum whose `poll` runs it as far as finished children
//! allow and returns `Ok(None)` while it waits, like [`Flow::advance`](crate::operation::Flow).

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{KeyBound, Mutation, Row, RowFilter, RowRange, RowSet, limits};
use rowkit_codec::objmeta::cells::{StoredDoc, filters, replace, unescape_tags};
use rowkit_codec::objmeta::json::{Json, JsonObject};
use rowkit_codec::objmeta::keys::{
    METASTORE, VFormat, collection_end, collection_start, is_special_bucket, row_key, version_key,
};

use super::bucket::BucketEntry;
use super::{ObjmetaError, ObjmetaEvent, ObjmetaSchema, ObjmetaState};
use crate::children::{ChildId, ChildOutput, owned_rows};
use crate::operation::{Io, OperationError, Progress};
use crate::ready;
use crate::{
    CheckAndMutateRowRequest, MutateRowRequest, MutateRowsEntry, MutateRowsRequest,
    ReadRowsRequest, Request, Response, StoreError,
};

/// The operation's I/O as every objmeta flow sees it.
pub(super) type OmIo = Io<ObjmetaEvent>;
/// A step of an objmeta flow or sub-flow.
pub(super) type P<T> = Progress<T, ObjmetaSchema>;

/// Row keys over 4 KiB are refused before anything is sent.
fn check_key(key: &[u8]) -> Result<(), ObjmetaError> {
    if key.len() > limits::MAX_ROW_KEY_BYTES {
        return Err(ObjmetaError::internal(alloc::format!(
            "row key of {} bytes is over the 4096-byte limit",
            key.len()
        )));
    }
    Ok(())
}

/// Cell values over 100 MiB are refused before anything is sent.
fn check_mutations(mutations: &[Mutation]) -> Result<(), ObjmetaError> {
    for m in mutations {
        if let Mutation::SetCell { value, .. } = m
            && value.len() > limits::MAX_VALUE_BYTES
        {
            return Err(ObjmetaError::internal("cell value over 100 MiB"));
        }
    }
    Ok(())
}

/// Sends a request once (writes are never retried: a CAS or a replace that timed out may have
/// applied, and Arsenal reports it as an error).
fn unary(io: &mut OmIo, request: Request) -> ChildId {
    // Reads and batches draw their jitter seed from the stream; a unary request draws one too
    // (and drops it) so that the seeds of the requests after it stay where they always were.
    let _ = io.next_seed();
    io.unary(request)
}

/// The outcome of child `id` once it has finished (`Ok(None)` while it runs): `reply` reads
/// the reply the handle expects (handing back one of another kind, an internal error), a store
/// error is handed back for the caller to map.
fn outcome<T>(
    io: &mut OmIo,
    id: ChildId,
    reply: impl FnOnce(ChildOutput) -> Result<T, ChildOutput>,
) -> P<Result<T, StoreError>> {
    match io.take(id) {
        None => Ok(None),
        Some(Err(e)) => Ok(Some(Err(e))),
        Some(Ok(output)) => reply(output)
            .map(|v| Some(Ok(v)))
            .map_err(|other| ObjmetaError::unexpected(&other)),
    }
}

/// [`outcome`] for a child that retries on its own: a retryable error it ends with means no
/// retry fits before the deadline, so the flow waits for the deadline to end the operation
/// `Aborted` (`objmeta.md` 16.3).
fn outcome_unless_retryable<T>(
    io: &mut OmIo,
    id: ChildId,
    reply: impl FnOnce(ChildOutput) -> Result<T, ChildOutput>,
) -> P<Result<T, StoreError>> {
    match outcome(io, id, reply)? {
        Some(Err(e)) if e.code.is_retryable() => Ok(None),
        other => Ok(other),
    }
}

/// Starts a `ReadRows` of `rows` on the table (merge, resume and retries in its child).
pub(super) fn start_read(
    io: &mut OmIo,
    st: &ObjmetaState,
    rows: RowSet,
    filter: RowFilter,
    rows_limit: i64,
) -> ChildId {
    io.read_rows(ReadRowsRequest {
        table: st.config.table.clone(),
        rows,
        filter: Some(filter),
        rows_limit,
        ..Default::default()
    })
}

/// A `ReadRows` in flight.
#[derive(Debug)]
pub(super) struct Read(ChildId);

impl Read {
    pub(super) fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        rows: RowSet,
        filter: RowFilter,
        rows_limit: i64,
    ) -> Read {
        Read(start_read(io, st, rows, filter, rows_limit))
    }

    /// Every row, or the store's error, once the read has finished; a retryable error waits
    /// for the deadline (see [`outcome_unless_retryable`]).
    pub(super) fn poll(&self, io: &mut OmIo) -> P<Result<Vec<Row>, StoreError>> {
        outcome_unless_retryable(io, self.0, |output| match output {
            ChildOutput::Rows(rows) => Ok(owned_rows(rows)),
            other => Err(other),
        })
    }

    /// What `value` makes of every row once the read has finished; a store error is an
    /// `InternalError`.
    pub(super) fn rows<T>(
        &self,
        io: &mut OmIo,
        value: impl FnOnce(Vec<Row>) -> Result<T, ObjmetaError>,
    ) -> P<T> {
        let Some(rows) = self.poll(io)? else {
            return Ok(None);
        };
        value(rows.map_err(ObjmetaError::internal)?).map(Some)
    }
}

/// A `MutateRow` in flight.
#[derive(Debug)]
pub(super) struct Write(ChildId);

impl Write {
    pub(super) fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        row_key: Vec<u8>,
        mutations: Vec<Mutation>,
    ) -> Result<Write, ObjmetaError> {
        check_key(&row_key)?;
        check_mutations(&mutations)?;
        Ok(Write(unary(
            io,
            Request::MutateRow(MutateRowRequest {
                table: st.config.table.clone(),
                row_key,
                mutations,
                ..Default::default()
            }),
        )))
    }

    /// `Ok(())` or the store's error (for the caller to map) once answered.
    pub(super) fn poll(&self, io: &mut OmIo) -> P<Result<(), StoreError>> {
        outcome(io, self.0, |output| match output {
            ChildOutput::Unary(Response::MutateRow) => Ok(()),
            other => Err(other),
        })
    }
}

/// A `CheckAndMutateRow` in flight.
#[derive(Debug)]
pub(super) struct Cas(ChildId);

impl Cas {
    pub(super) fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        row_key: Vec<u8>,
        predicate: RowFilter,
        true_mutations: Vec<Mutation>,
        false_mutations: Vec<Mutation>,
    ) -> Result<Cas, ObjmetaError> {
        check_key(&row_key)?;
        check_mutations(&true_mutations)?;
        check_mutations(&false_mutations)?;
        Ok(Cas(unary(
            io,
            Request::CheckAndMutateRow(CheckAndMutateRowRequest {
                table: st.config.table.clone(),
                row_key,
                predicate: Some(predicate),
                true_mutations,
                false_mutations,
                ..Default::default()
            }),
        )))
    }

    /// A CAS that applies `mutations` only while the row's document is still the one read,
    /// whose hash was `hash` (none: empty); matched = applied.
    pub(super) fn unchanged(
        io: &mut OmIo,
        st: &ObjmetaState,
        row_key: Vec<u8>,
        hash: Option<&[u8]>,
        mutations: Vec<Mutation>,
    ) -> Result<Cas, ObjmetaError> {
        let predicate = filters::hash_eq(hash.unwrap_or_default());
        Cas::start(io, st, row_key, predicate, mutations, vec![])
    }

    /// `predicate_matched`, or the store's error (for the caller to map), once answered.
    pub(super) fn poll(&self, io: &mut OmIo) -> P<Result<bool, StoreError>> {
        outcome(io, self.0, |output| match output {
            ChildOutput::Unary(Response::CheckAndMutateRow { predicate_matched }) => {
                Ok(predicate_matched)
            }
            other => Err(other),
        })
    }
}

/// A `MutateRows` batch in flight (the `bigtable.md` 6 entry retries in its child).
#[derive(Debug)]
pub(super) struct Bulk(ChildId);

impl Bulk {
    pub(super) fn start(io: &mut OmIo, st: &ObjmetaState, entries: Vec<MutateRowsEntry>) -> Bulk {
        Bulk(io.mutate_rows(MutateRowsRequest {
            table: st.config.table.clone(),
            entries,
            ..Default::default()
        }))
    }

    /// `Ok(())`, or the error of the batch (or else of its first failed entry), once
    /// finished; a retryable batch error waits for the deadline as [`Read::poll`] does.
    pub(super) fn poll(&self, io: &mut OmIo) -> P<Result<(), StoreError>> {
        let Some(batch) = outcome_unless_retryable(io, self.0, |output| match output {
            ChildOutput::WroteRows(results) => Ok(results),
            other => Err(other),
        })?
        else {
            return Ok(None);
        };
        Ok(Some(batch.and_then(|results| {
            results
                .into_iter()
                .find_map(|r| r.result.err())
                .map_or(Ok(()), Err)
        })))
    }
}

/// Emits the `Put` of a document.
pub(super) fn put_event(io: &mut OmIo, collection: &str, key: &str, value: &Json) {
    put_event_text(io, collection, key, value.stringify());
}

/// Emits the `Put` of a document whose JSON text the caller has made already.
pub(super) fn put_event_text(io: &mut OmIo, collection: &str, key: &str, text: String) {
    io.emit(ObjmetaEvent::Put {
        collection: collection.to_string(),
        key: key.to_string(),
        value: text,
    });
}

/// Emits the `Delete` of a document (with its pre-image when the delete read it).
pub(super) fn delete_event(io: &mut OmIo, collection: &str, key: &str, value: Option<&Json>) {
    io.emit(ObjmetaEvent::Delete {
        collection: collection.to_string(),
        key: key.to_string(),
        value: value.map(Json::stringify),
    });
}

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

/// `ReadRow(key, LatestN(1))` as a document (no deleted filter); a store error is an
/// `InternalError`.
#[derive(Debug)]
pub(super) struct ReadDoc {
    key: Vec<u8>,
    read: Read,
}

impl ReadDoc {
    pub(super) fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        key: Vec<u8>,
    ) -> Result<ReadDoc, ObjmetaError> {
        check_key(&key)?;
        let read = Read::start(io, st, RowSet::key(key.clone()), filters::latest(), 0);
        Ok(ReadDoc { key, read })
    }

    /// The document (`None`: no row, or a row without one) once read.
    pub(super) fn poll(&self, io: &mut OmIo) -> P<Option<StoredDoc>> {
        self.read
            .rows(io, |rows| doc_of(rows.iter().find(|r| r.key == self.key)))
    }
}

/// `getBucketVFormat(b)` with the LRU cache (`objmeta.md` 4.3): zero or one metastore read.
#[derive(Debug)]
pub(super) enum BucketVFormat {
    /// Nothing looked up yet.
    Start,
    /// Not cached: the metastore row is being read.
    Reading(ReadDoc),
}

impl BucketVFormat {
    pub(super) fn poll(
        &mut self,
        io: &mut OmIo,
        st: &mut ObjmetaState,
        bucket: &str,
    ) -> P<VFormat> {
        if let BucketVFormat::Start = self {
            if let Some(vf) = st.cached_vformat(bucket) {
                return Ok(Some(vf));
            }
            *self = BucketVFormat::Reading(ReadDoc::start(io, st, row_key(METASTORE, bucket))?);
        }
        let BucketVFormat::Reading(read) = self else {
            return Ok(None);
        };
        let Some(doc) = read.poll(io)? else {
            return Ok(None);
        };
        // A bucket without a metastore row is v0, and not cached (it may be created later).
        let Some(doc) = doc else {
            return Ok(Some(VFormat::V0));
        };
        let vf = vformat_of(&doc);
        st.cache_vformat(bucket, vf);
        Ok(Some(vf))
    }
}

/// The row range `getLatestVersion` reads (both ends exclusive).
pub(super) fn latest_version_range(collection: &str, vf: VFormat, key: &str) -> RowRange {
    let (start, end) = match vf {
        VFormat::V0 => (key.to_string(), alloc::format!("{key}\u{1}")),
        VFormat::V1 => (version_key(vf, key, ""), alloc::format!("\x7fV{key}\u{1}")),
    };
    RowRange {
        start: KeyBound::Open(row_key(collection, &start)),
        end: KeyBound::Open(row_key(collection, &end)),
    }
}

/// `getLatestVersion(key)` (`objmeta.md` 9.1): the newest live version, tags unescaped.
#[derive(Debug)]
pub(super) struct LatestVersion(Read);

impl LatestVersion {
    pub(super) fn start(
        io: &mut OmIo,
        st: &ObjmetaState,
        collection: &str,
        vf: VFormat,
        key: &str,
    ) -> LatestVersion {
        let rows = RowSet::range(latest_version_range(collection, vf, key));
        LatestVersion(Read::start(io, st, rows, filters::live_value(), 1))
    }

    /// The version (`None` = NoSuchKey) once read; any failure is an error.
    pub(super) fn poll(&self, io: &mut OmIo) -> P<Option<Json>> {
        self.0.rows(io, |rows| {
            Ok(doc_of(rows.first())?.map(|doc| {
                let mut v = doc.value;
                unescape_tags(&mut v);
                v
            }))
        })
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
    Unlogged(Write),
    /// Reading the document.
    Reading(ReadDoc),
    /// Deleting it under its hash; `pre` is its value (the event's pre-image).
    Deleting {
        cas: Cas,
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
                    let write = Write::start(io, st, self.row.clone(), mutations)?;
                    self.phase = DeletePhase::Unlogged(write);
                }
                DeletePhase::Start { no_oplog: false } => {
                    self.phase = DeletePhase::Reading(ReadDoc::start(io, st, self.row.clone())?);
                }
                DeletePhase::Unlogged(write) => {
                    let r = ready!(write.poll(io), self.phase => DeletePhase::Unlogged(write));
                    r.map_err(ObjmetaError::internal)?;
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
                    let cas = Cas::unchanged(io, st, self.row.clone(), doc.hash.as_deref(), drop)?;
                    self.phase = DeletePhase::Deleting {
                        cas,
                        pre: doc.value,
                    };
                }
                DeletePhase::Deleting { cas, mut pre } => {
                    let matched =
                        ready!(cas.poll(io), self.phase => DeletePhase::Deleting { cas, pre });
                    if !matched.map_err(ObjmetaError::internal)? {
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
        cas: Cas,
        merged: Json,
    },
    /// Creating the document where there was none.
    Creating {
        cas: Cas,
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
                            let cas =
                                Cas::unchanged(io, st, self.row.clone(), doc.hash.as_deref(), rep)?;
                            self.phase = MergePhase::Replacing { cas, merged };
                        }
                        None => {
                            let Some(fresh) = self.edit.fresh()? else {
                                return Ok(Some(()));
                            };
                            let cas = Cas::start(
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
                    let matched = ready!(cas.poll(io),
                        self.phase => MergePhase::Replacing { cas, merged });
                    if matched.map_err(ObjmetaError::internal)? {
                        put_event(io, &self.collection, &self.key, &merged);
                        return Ok(Some(()));
                    }
                    self.phase = MergePhase::Start;
                }
                MergePhase::Creating { cas, fresh } => {
                    let matched =
                        ready!(cas.poll(io), self.phase => MergePhase::Creating { cas, fresh });
                    if !matched.map_err(ObjmetaError::internal)? {
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
pub(super) struct MetastoreRows(Read);

impl MetastoreRows {
    pub(super) fn start(io: &mut OmIo, st: &ObjmetaState) -> MetastoreRows {
        let range = RowRange::half_open(collection_start(METASTORE), collection_end(METASTORE));
        MetastoreRows(Read::start(
            io,
            st,
            RowSet::range(range),
            filters::latest(),
            0,
        ))
    }

    pub(super) fn poll(&self, io: &mut OmIo) -> P<Vec<BucketEntry>> {
        self.0.rows(io, |rows| {
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
            Ok(out)
        })
    }
}
