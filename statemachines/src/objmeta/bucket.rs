//! The bucket and infostore operations of `objmeta.md` 11 as flows.

use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{KeyBound, Mutation, Row, RowFilter, RowRange, RowSet};
use rowkit_codec::objmeta::cells::{StoredDoc, filters, replace};
use rowkit_codec::objmeta::json::{Json, JsonObject};
use rowkit_codec::objmeta::keys::{
    COUNT_ITEMS_KEY, INFOSTORE, METASTORE, UUID_KEY, VFormat, collection_end,
    collection_for_bucket, collection_start, row_key,
};
use rowkit_codec::objmeta::migration::marker::metastore_place;

use super::documents::{BucketVFormat, Edit, Merge, MetastoreRows, ReadDoc, vformat_of};
use super::requests::{
    OmIo, P, delete_event, put_event, start_bulk, start_cas, start_read, start_write,
};
use super::{
    BucketLayout, CountItems, CreateBucket, DeleteBucket, DeleteBucketAttributesCapability,
    GetBucketAttributes, GetBucketVFormat, GetUuid, ListBuckets, ObjmetaError, ObjmetaSchema,
    ObjmetaState, PutBucketAttributes, PutBucketAttributesCapabilities, ReadCountItems,
    UpdateCountItems, begin,
};
use crate::children::ChildId;
use crate::operation::{ContextArg, Flow, Start};
use crate::ready;
use crate::{MutateRowsEntry, SplitMix64, Timestamp};

/// Implements [`Flow`] for a flow that is one write sub-flow ([`PutDoc`], [`Merge`]): advancing
/// the flow polls the sub-flow.
macro_rules! write_flow {
    ($flow:ident) => {
        impl Flow for $flow {
            type Schema = ObjmetaSchema;
            type Output = ();

            fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<()> {
                self.0.poll(io, st)
            }
        }
    };
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

/// One document replaced (with the metastore's vFormat cell when given), then its `Put`.
#[derive(Debug)]
struct PutDoc {
    collection: &'static str,
    key: String,
    value: Json,
    /// Mutations sent after the `REPLACE` in the same `MutateRow` (columns outside the
    /// document's, [`PutDoc::also`]).
    also: Vec<Mutation>,
    phase: PutDocPhase,
}

#[derive(Debug)]
enum PutDocPhase {
    Start { vformat: Option<VFormat> },
    Writing(ChildId),
    Done,
}

impl PutDoc {
    fn new(collection: &'static str, key: &str, value: Json, vformat: Option<VFormat>) -> PutDoc {
        PutDoc {
            collection,
            key: key.to_string(),
            value,
            also: Vec::new(),
            phase: PutDocPhase::Start { vformat },
        }
    }

    /// The same write with `mutations` after the `REPLACE`, in the same `MutateRow`: atomic
    /// with it, and leaving the document's cells exactly `REPLACE`'s.
    fn also(mut self, mutations: Vec<Mutation>) -> PutDoc {
        self.also = mutations;
        self
    }

    fn poll(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<()> {
        loop {
            match core::mem::replace(&mut self.phase, PutDocPhase::Done) {
                PutDocPhase::Start { vformat } => {
                    let row = row_key(self.collection, &self.key);
                    let mut mutations = replace(&self.value, vformat.map(VFormat::as_str));
                    mutations.append(&mut self.also);
                    self.phase = PutDocPhase::Writing(start_write(io, st, row, mutations)?);
                }
                PutDocPhase::Writing(write) => {
                    ready!(io.written(write), self.phase => PutDocPhase::Writing(write));
                    put_event(io, self.collection, &self.key, &self.value);
                    return Ok(Some(()));
                }
                PutDocPhase::Done => return Ok(None),
            }
        }
    }
}

/// The flow of [`CreateBucket`]: the metastore row written with the new bucket's vFormat,
/// which is then cached. The exclusive form writes only where no metastore row is, in one
/// `CheckAndMutateRow`, so of two concurrent creates exactly one wins.
#[derive(Debug)]
pub struct CreateBucketFlow {
    bucket: String,
    phase: CreateBucketPhase,
}

#[derive(Debug)]
enum CreateBucketPhase {
    Start {
        value: Json,
        exclusive: bool,
    },
    Writing {
        vf: VFormat,
        put: PutDoc,
    },
    /// The conditional write: applied only when the row has no cell.
    Creating {
        vf: VFormat,
        cas: ChildId,
        value: Json,
        /// When the CAS was sent.
        sent: Timestamp,
    },
    /// The row was there: its vFormat is read for the error.
    ReadingExisting(ReadDoc),
    Done,
}

impl<'a> CreateBucket<'a> {
    /// `createBucket(bucket, md)` → the vFormat written (the config's default, `v0` for
    /// special buckets). As Arsenal's, it replaces an existing bucket's row (`objmeta.md` 11
    /// leaves the existence check to callers); callers that must not use
    /// [`CreateBucket::new_exclusive`]. Its one `MutateRow` is `REPLACE(value, vFormat)`
    /// followed by `DeleteFromColumn` of the layout migration's marker and checkpoint
    /// (`docs/migration.md` §2.1, §12.74): rowkit's own columns, so the row's Arsenal cells are
    /// exactly the spec's.
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        md: &Json,
        start: Start,
    ) -> CreateBucket<'a> {
        begin(ctx, start, CreateBucketFlow::new(bucket, md, false))
    }

    /// `createBucket(bucket, md)` only if the bucket does not exist: one `CheckAndMutateRow`
    /// on its metastore row (written only while the row has no cell), else
    /// [`ObjmetaError::BucketAlreadyExists`] with the stored vFormat and nothing changed.
    /// The callers' existence check (the CLI's and the browser tool's), atomic.
    pub fn new_exclusive(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        md: &Json,
        start: Start,
    ) -> CreateBucket<'a> {
        begin(ctx, start, CreateBucketFlow::new(bucket, md, true))
    }
}

impl CreateBucketFlow {
    fn new(bucket: &str, md: &Json, exclusive: bool) -> CreateBucketFlow {
        CreateBucketFlow {
            bucket: bucket.to_string(),
            phase: CreateBucketPhase::Start {
                value: bucket_info_value(md),
                exclusive,
            },
        }
    }
}

impl Flow for CreateBucketFlow {
    type Schema = ObjmetaSchema;
    type Output = VFormat;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<VFormat> {
        loop {
            match core::mem::replace(&mut self.phase, CreateBucketPhase::Done) {
                CreateBucketPhase::Start { value, exclusive } => {
                    let vf =
                        VFormat::for_new_bucket(&self.bucket, st.config.default_bucket_key_format);
                    self.phase = if exclusive {
                        let row = row_key(METASTORE, &self.bucket);
                        let mutations = replace(&value, Some(vf.as_str()));
                        let cas = start_cas(io, st, row, filters::exists(), vec![], mutations)?;
                        let sent = io.now();
                        CreateBucketPhase::Creating {
                            vf,
                            cas,
                            value,
                            sent,
                        }
                    } else {
                        // The replaced bucket's migration records go with it (§4.8,
                        // §12.74): its run ended with the instance it migrated, and a marker
                        // left behind would fence or mislead aware writers of the new one.
                        let put = PutDoc::new(METASTORE, &self.bucket, value, Some(vf))
                            .also(metastore_place(&self.bucket).removal());
                        CreateBucketPhase::Writing { vf, put }
                    };
                }
                CreateBucketPhase::Writing { vf, mut put } => {
                    ready!(put.poll(io, st),
                        self.phase => CreateBucketPhase::Writing { vf, put });
                    // Cached as Arsenal caches it (the next lookup reads nothing). An aware
                    // process takes the bucket as written, without a marker: the write removed
                    // the replaced bucket's marker, if any (§4.8, §12.74), and the entry
                    // expires after `marker_ttl` like any read (§12.33).
                    if st.config.migration_aware {
                        let layout = BucketLayout {
                            vformat: vf,
                            marker: None,
                            read_at: io.now(),
                        };
                        st.cache_layout(&self.bucket, &layout);
                    } else {
                        st.cache_vformat(&self.bucket, vf);
                    }
                    return Ok(Some(vf));
                }
                CreateBucketPhase::Creating {
                    vf,
                    cas,
                    value,
                    sent,
                } => {
                    let matched = ready!(io.matched(cas),
                        self.phase => CreateBucketPhase::Creating { vf, cas, value, sent });
                    if matched {
                        let row = row_key(METASTORE, &self.bucket);
                        self.phase =
                            CreateBucketPhase::ReadingExisting(ReadDoc::start(io, st, row)?);
                        continue;
                    }
                    put_event(io, METASTORE, &self.bucket, &value);
                    // The row had no cell, so no marker: known as a lookup would read it.
                    let layout = BucketLayout {
                        vformat: vf,
                        marker: None,
                        read_at: sent,
                    };
                    st.cache_layout(&self.bucket, &layout);
                    return Ok(Some(vf));
                }
                CreateBucketPhase::ReadingExisting(read) => {
                    let doc = ready!(read.poll(io),
                        self.phase => CreateBucketPhase::ReadingExisting(read));
                    return Err(ObjmetaError::BucketAlreadyExists {
                        bucket: self.bucket.clone(),
                        vformat: doc.as_ref().map_or(VFormat::V0, vformat_of),
                    });
                }
                CreateBucketPhase::Done => return Ok(None),
            }
        }
    }
}

/// The flow of [`PutBucketAttributes`]: the metastore row replaced.
#[derive(Debug)]
pub struct PutBucketAttributesFlow(PutDoc);
write_flow!(PutBucketAttributesFlow);

impl<'a> PutBucketAttributes<'a> {
    /// `putBucketAttributes(bucket, md)`.
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        md: &Json,
        start: Start,
    ) -> PutBucketAttributes<'a> {
        let put = PutDoc::new(METASTORE, bucket, bucket_info_value(md), None);
        begin(ctx, start, PutBucketAttributesFlow(put))
    }
}

/// The flow of [`UpdateCountItems`]: the infostore's countItems document replaced.
#[derive(Debug)]
pub struct UpdateCountItemsFlow(PutDoc);
write_flow!(UpdateCountItemsFlow);

impl<'a> UpdateCountItems<'a> {
    /// `updateCountItems(value)`.
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        value: Json,
        start: Start,
    ) -> UpdateCountItems<'a> {
        let put = PutDoc::new(INFOSTORE, COUNT_ITEMS_KEY, value, None);
        begin(ctx, start, UpdateCountItemsFlow(put))
    }
}

/// One document read, the only request of a flow.
#[derive(Debug)]
enum ReadPhase {
    /// The row to read.
    Start(Vec<u8>),
    Reading(ReadDoc),
    Done,
}

impl ReadPhase {
    /// What `value` makes of the document (`None`: no row) once read.
    fn poll<T>(
        &mut self,
        io: &mut OmIo,
        st: &ObjmetaState,
        value: impl FnOnce(Option<StoredDoc>) -> Result<T, ObjmetaError>,
    ) -> P<T> {
        loop {
            match core::mem::replace(self, ReadPhase::Done) {
                ReadPhase::Start(row) => *self = ReadPhase::Reading(ReadDoc::start(io, st, row)?),
                ReadPhase::Reading(read) => {
                    let doc = ready!(read.poll(io), *self => ReadPhase::Reading(read));
                    return value(doc).map(Some);
                }
                ReadPhase::Done => return Ok(None),
            }
        }
    }
}

/// The flow of [`GetBucketAttributes`]: the metastore row read.
#[derive(Debug)]
pub struct GetBucketAttributesFlow(ReadPhase);

impl<'a> GetBucketAttributes<'a> {
    /// `getBucketAttributes(bucket)` → the stored BucketInfo, or `NoSuchBucket`.
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        start: Start,
    ) -> GetBucketAttributes<'a> {
        let flow = GetBucketAttributesFlow(ReadPhase::Start(row_key(METASTORE, bucket)));
        begin(ctx, start, flow)
    }
}

impl Flow for GetBucketAttributesFlow {
    type Schema = ObjmetaSchema;
    type Output = Json;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Json> {
        self.0.poll(io, st, |doc| {
            doc.map(|d| d.value).ok_or(ObjmetaError::NoSuchBucket)
        })
    }
}

/// The countItems document when none is stored.
const EMPTY_COUNT_ITEMS: &str = r#"{"objects":0,"versions":0,"buckets":0,"bucketList":[],"dataManaged":{"total":{"curr":0,"prev":0},"byLocation":{}},"stalled":0}"#;

/// The stored countItems document, or the empty one.
fn count_items_doc(doc: Option<StoredDoc>) -> Result<Json, ObjmetaError> {
    match doc {
        Some(d) => Ok(d.value),
        None => Json::parse(EMPTY_COUNT_ITEMS).map_err(ObjmetaError::internal),
    }
}

/// The flow of [`ReadCountItems`]: the infostore's countItems document read.
#[derive(Debug)]
pub struct ReadCountItemsFlow(ReadPhase);

impl<'a> ReadCountItems<'a> {
    /// `readCountItems()`.
    pub fn new(ctx: impl Into<ContextArg<'a, ObjmetaState>>, start: Start) -> ReadCountItems<'a> {
        let row = row_key(INFOSTORE, COUNT_ITEMS_KEY);
        begin(ctx, start, ReadCountItemsFlow(ReadPhase::Start(row)))
    }
}

impl Flow for ReadCountItemsFlow {
    type Schema = ObjmetaSchema;
    type Output = Json;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Json> {
        self.0.poll(io, st, count_items_doc)
    }
}

/// Rows per page of a collection drop.
const DROP_PAGE: i64 = 10_000;

/// The flow of [`DeleteBucket`]: the collection dropped a page at a time (a read of row keys,
/// then one batch), then the metastore row. Output: the collection rows deleted.
#[derive(Debug)]
pub struct DeleteBucketFlow {
    bucket: String,
    coll: String,
    deleted: u64,
    phase: DeleteBucketPhase,
}

#[derive(Debug)]
enum DeleteBucketPhase {
    /// The next page starts at this bound.
    Page(KeyBound),
    Reading(ChildId),
    /// The page's rows being deleted.
    Deleting {
        rows: Vec<Row>,
        bulk: ChildId,
    },
    /// The metastore row being deleted.
    Metastore(ChildId),
    Done,
}

impl<'a> DeleteBucket<'a> {
    /// `deleteBucket(bucket)` → rows deleted from the collection.
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        start: Start,
    ) -> DeleteBucket<'a> {
        let coll = collection_for_bucket(bucket).to_string();
        let flow = DeleteBucketFlow {
            bucket: bucket.to_string(),
            phase: DeleteBucketPhase::Page(KeyBound::Closed(collection_start(&coll))),
            coll,
            deleted: 0,
        };
        begin(ctx, start, flow)
    }
}

impl DeleteBucketFlow {
    /// After a page of `rows`: the next page, or the metastore row once a page is short.
    fn next_page(
        &self,
        io: &mut OmIo,
        st: &ObjmetaState,
        rows: &[Row],
    ) -> Result<DeleteBucketPhase, ObjmetaError> {
        Ok(match rows.last() {
            Some(last) if rows.len() as i64 >= DROP_PAGE => {
                DeleteBucketPhase::Page(KeyBound::Open(last.key.clone()))
            }
            _ => {
                let row = row_key(METASTORE, &self.bucket);
                let drop = vec![Mutation::DeleteFromRow];
                DeleteBucketPhase::Metastore(start_write(io, st, row, drop)?)
            }
        })
    }
}

impl Flow for DeleteBucketFlow {
    type Schema = ObjmetaSchema;
    type Output = u64;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<u64> {
        loop {
            match core::mem::replace(&mut self.phase, DeleteBucketPhase::Done) {
                DeleteBucketPhase::Page(start) => {
                    let range = RowRange {
                        start,
                        end: KeyBound::Open(collection_end(&self.coll)),
                    };
                    // Row keys only: the first cell of each row, without its value.
                    let filter = RowFilter::Chain(vec![
                        RowFilter::CellsPerRowLimit(1),
                        RowFilter::StripValue,
                    ]);
                    let read = start_read(io, st, RowSet::range(range), filter, DROP_PAGE);
                    self.phase = DeleteBucketPhase::Reading(read);
                }
                DeleteBucketPhase::Reading(read) => {
                    let rows = ready!(io.rows_or_wait(read),
                        self.phase => DeleteBucketPhase::Reading(read));
                    if rows.is_empty() {
                        self.phase = self.next_page(io, st, &rows)?;
                        continue;
                    }
                    let entries = rows
                        .iter()
                        .map(|r| MutateRowsEntry {
                            row_key: r.key.clone(),
                            mutations: vec![Mutation::DeleteFromRow],
                        })
                        .collect();
                    let bulk = start_bulk(io, st, entries);
                    self.phase = DeleteBucketPhase::Deleting { rows, bulk };
                }
                DeleteBucketPhase::Deleting { rows, bulk } => {
                    ready!(io.written_or_wait(bulk),
                        self.phase => DeleteBucketPhase::Deleting { rows, bulk });
                    let prefix_len = self.coll.len() + 1;
                    for r in &rows {
                        let key = String::from_utf8_lossy(r.key.get(prefix_len..).unwrap_or(&[]));
                        delete_event(io, &self.coll, &key, None);
                    }
                    self.deleted += rows.len() as u64;
                    self.phase = self.next_page(io, st, &rows)?;
                }
                DeleteBucketPhase::Metastore(write) => {
                    ready!(io.written(write), self.phase => DeleteBucketPhase::Metastore(write));
                    delete_event(io, METASTORE, &self.bucket, None);
                    st.uncache_vformat(&self.bucket);
                    return Ok(Some(self.deleted));
                }
                DeleteBucketPhase::Done => return Ok(None),
            }
        }
    }
}

/// The flow of [`ListBuckets`]: one metastore scan.
#[derive(Debug)]
pub struct ListBucketsFlow(Option<MetastoreRows>);

impl<'a> ListBuckets<'a> {
    /// `listBuckets()`: every bucket, in key order.
    pub fn new(ctx: impl Into<ContextArg<'a, ObjmetaState>>, start: Start) -> ListBuckets<'a> {
        begin(ctx, start, ListBucketsFlow(None))
    }
}

impl Flow for ListBucketsFlow {
    type Schema = ObjmetaSchema;
    type Output = Vec<BucketEntry>;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Vec<BucketEntry>> {
        self.0
            .get_or_insert_with(|| MetastoreRows::start(io, st))
            .poll(io)
    }
}

/// A version-4 UUID from 16 bytes of [`SplitMix64`] seeded with `seed`: `getUUID`'s random
/// candidate, and the `uid` the CLI gives a bucket it creates.
pub fn uuid_v4(seed: u64) -> String {
    let mut rng = SplitMix64::new(seed);
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

/// The flow of [`GetUuid`]: the candidate created if absent, else the stored one read.
#[derive(Debug)]
pub struct GetUuidFlow {
    candidate: Option<String>,
    /// The operation's seed, unsalted: a random candidate is drawn from it.
    seed: u64,
    phase: GetUuidPhase,
}

#[derive(Debug)]
enum GetUuidPhase {
    Start,
    Creating {
        cas: ChildId,
        candidate: String,
        value: Json,
    },
    Reading(ReadDoc),
    Done,
}

impl<'a> GetUuid<'a> {
    /// `getUUID()`; `candidate` overrides the config's `initial_instance_id` and the random
    /// one (tests, vectors).
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        candidate: Option<&str>,
        start: Start,
    ) -> GetUuid<'a> {
        let flow = GetUuidFlow {
            candidate: candidate.map(String::from),
            seed: start.seed,
            phase: GetUuidPhase::Start,
        };
        begin(ctx, start, flow)
    }
}

impl Flow for GetUuidFlow {
    type Schema = ObjmetaSchema;
    type Output = String;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<String> {
        let rk = || row_key(INFOSTORE, UUID_KEY);
        loop {
            match core::mem::replace(&mut self.phase, GetUuidPhase::Done) {
                GetUuidPhase::Start => {
                    let candidate = match (&self.candidate, &st.config.initial_instance_id) {
                        (Some(c), _) | (None, Some(c)) => c.clone(),
                        (None, None) => uuid_v4(self.seed),
                    };
                    let value = Json::str(candidate.as_str());
                    let rep = replace(&value, None);
                    let cas = start_cas(io, st, rk(), filters::exists(), vec![], rep)?;
                    self.phase = GetUuidPhase::Creating {
                        cas,
                        candidate,
                        value,
                    };
                }
                GetUuidPhase::Creating {
                    cas,
                    candidate,
                    value,
                } => {
                    let matched = ready!(io.matched(cas),
                        self.phase => GetUuidPhase::Creating { cas, candidate, value });
                    if !matched {
                        put_event(io, INFOSTORE, UUID_KEY, &value);
                        return Ok(Some(candidate));
                    }
                    self.phase = GetUuidPhase::Reading(ReadDoc::start(io, st, rk())?);
                }
                GetUuidPhase::Reading(read) => {
                    let doc = ready!(read.poll(io), self.phase => GetUuidPhase::Reading(read));
                    let d = doc.ok_or(ObjmetaError::NoSuchKey)?;
                    return Ok(Some(
                        d.value
                            .as_str()
                            .map_or_else(|| d.value.stringify(), String::from),
                    ));
                }
                GetUuidPhase::Done => return Ok(None),
            }
        }
    }
}

/// The flow of [`CountItems`]: the metastore scanned, then the stored countItems document,
/// completed with the bucket list.
#[derive(Debug)]
pub struct CountItemsFlow(CountItemsPhase);

#[derive(Debug)]
enum CountItemsPhase {
    Start,
    Buckets(MetastoreRows),
    Counts {
        buckets: Vec<BucketEntry>,
        read: ReadDoc,
    },
    Done,
}

impl<'a> CountItems<'a> {
    /// `countItems()`.
    pub fn new(ctx: impl Into<ContextArg<'a, ObjmetaState>>, start: Start) -> CountItems<'a> {
        begin(ctx, start, CountItemsFlow(CountItemsPhase::Start))
    }
}

/// The countItems document `doc` with the bucket list of the non-special `buckets`.
fn with_buckets(mut doc: Json, buckets: &[BucketEntry]) -> Json {
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
    doc
}

impl Flow for CountItemsFlow {
    type Schema = ObjmetaSchema;
    type Output = Json;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Json> {
        loop {
            match core::mem::replace(&mut self.0, CountItemsPhase::Done) {
                CountItemsPhase::Start => {
                    self.0 = CountItemsPhase::Buckets(MetastoreRows::start(io, st));
                }
                CountItemsPhase::Buckets(scan) => {
                    let buckets = ready!(scan.poll(io), self.0 => CountItemsPhase::Buckets(scan));
                    let read = ReadDoc::start(io, st, row_key(INFOSTORE, COUNT_ITEMS_KEY))?;
                    self.0 = CountItemsPhase::Counts { buckets, read };
                }
                CountItemsPhase::Counts { buckets, read } => {
                    let doc = ready!(read.poll(io),
                        self.0 => CountItemsPhase::Counts { buckets, read });
                    return Ok(Some(with_buckets(count_items_doc(doc)?, &buckets)));
                }
                CountItemsPhase::Done => return Ok(None),
            }
        }
    }
}

/// The flow of [`GetBucketVFormat`]: the cached vFormat, or one metastore read.
#[derive(Debug)]
pub struct GetBucketVFormatFlow {
    bucket: String,
    lookup: BucketVFormat,
}

impl<'a> GetBucketVFormat<'a> {
    /// `getBucketVFormat(bucket)` (`objmeta.md` 4.3): `v0` for a bucket without a row.
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        start: Start,
    ) -> GetBucketVFormat<'a> {
        let flow = GetBucketVFormatFlow {
            bucket: bucket.to_string(),
            lookup: BucketVFormat::Start,
        };
        begin(ctx, start, flow)
    }
}

impl Flow for GetBucketVFormatFlow {
    type Schema = ObjmetaSchema;
    type Output = VFormat;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<VFormat> {
        self.lookup.poll(io, st, &self.bucket)
    }
}

/// The read–merge–CAS of `bucket`'s metastore row that sets (`Some`, creating the row if need
/// be) or removes (`None`) the member `capabilities.<name>[.<field>]`.
fn capability_merge(bucket: &str, name: &str, field: Option<&str>, new: Option<Json>) -> Merge {
    let mut path = vec!["capabilities".to_string(), name.to_string()];
    path.extend(field.map(String::from));
    let upsert = new.is_some();
    Merge::new(METASTORE, bucket, Edit::Path { path, new, upsert })
}

/// The flow of [`PutBucketAttributesCapabilities`]: a read–merge–CAS of the metastore row.
#[derive(Debug)]
pub struct PutBucketAttributesCapabilitiesFlow(Merge);
write_flow!(PutBucketAttributesCapabilitiesFlow);

impl<'a> PutBucketAttributesCapabilities<'a> {
    /// `putBucketAttributesCapabilities(bucket, name, field?, capability)`: upserts
    /// `value.capabilities.<name>[.<field>] = capability`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        name: &str,
        field: Option<&str>,
        capability: Json,
        start: Start,
    ) -> PutBucketAttributesCapabilities<'a> {
        let merge = capability_merge(bucket, name, field, Some(capability));
        begin(ctx, start, PutBucketAttributesCapabilitiesFlow(merge))
    }
}

/// The flow of [`DeleteBucketAttributesCapability`]: a read–merge–CAS of the metastore row.
#[derive(Debug)]
pub struct DeleteBucketAttributesCapabilityFlow(Merge);
write_flow!(DeleteBucketAttributesCapabilityFlow);

impl<'a> DeleteBucketAttributesCapability<'a> {
    /// `deleteBucketAttributesCapability(bucket, name, field?)`: removes that member (no write
    /// when the row or the member is absent).
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        name: &str,
        field: Option<&str>,
        start: Start,
    ) -> DeleteBucketAttributesCapability<'a> {
        let merge = capability_merge(bucket, name, field, None);
        begin(ctx, start, DeleteBucketAttributesCapabilityFlow(merge))
    }
}
