//! `getObjects` (`objmeta.md` 9.3): one read of every item, then the latest version of each
//! placeholder or missing master, a few at once.

use super::*;

/// One item of `getObjects`: its key, the version asked for, and its Arsenal key.
#[derive(Debug)]
struct Item {
    key: String,
    vid: Option<String>,
    ak: String,
}

/// Arsenal's `maxBatchingConcurrentOperations`: the `getLatestVersion` reads of one
/// `getObjects` outstanding at once (`objmeta.md` 9.3).
const MAX_LATEST_VERSION_READS: usize = 5;

/// The flow of [`GetObjects`]: the vFormat, one read of every item's row, then the latest
/// version of each placeholder or missing master, up to five reads at once, started in item
/// order.
#[derive(Debug)]
pub struct GetObjectsFlow {
    bucket: String,
    /// `(key, version id)` of each item.
    items: Vec<(String, Option<String>)>,
    phase: GetObjectsPhase,
}

#[derive(Debug)]
enum GetObjectsPhase {
    VFormat(BucketVFormat),
    Reading { items: Items, read: ChildId },
    Resolving(Items),
    Done,
}

/// The items and what is known of them.
#[derive(Debug)]
struct Items {
    coll: String,
    vf: VFormat,
    items: Vec<Item>,
    rows: Vec<Row>,
    /// Per item, its `{err, doc, versionId?, key}` once known.
    out: Vec<Option<Json>>,
    /// The first item not yet looked at.
    next: usize,
    /// The `getLatestVersion` reads in flight, by item index.
    latest: Vec<(usize, LatestVersion)>,
}

impl Items {
    /// Records `{err, doc, versionId?, key}` of item `i`.
    fn set(&mut self, i: usize, err: Json, doc: Json) {
        let item = &self.items[i];
        let mut o = JsonObject::new();
        o.set("err", err);
        o.set("doc", doc);
        if let Some(v) = &item.vid {
            o.set("versionId", Json::str(v.as_str()));
        }
        o.set("key", Json::str(item.ak.as_str()));
        self.out[i] = Some(Json::Object(o));
    }

    /// Records the reads that have finished, then looks at the next items in order, starting a
    /// read for each placeholder or missing master while fewer than five are in flight. The
    /// list, in item order, once every item is known.
    fn resolve(&mut self, io: &mut OmIo, st: &ObjmetaState) -> P<Json> {
        let mut in_flight = Vec::with_capacity(self.latest.len());
        for (i, latest) in core::mem::take(&mut self.latest) {
            match latest.poll(io) {
                Ok(None) => in_flight.push((i, latest)),
                Ok(Some(Some(v))) => self.set(i, Json::Null, v),
                Ok(Some(None)) => self.set(i, Json::str("NoSuchKey"), Json::Null),
                Err(_) => self.set(i, Json::str("InternalError"), Json::Null),
            }
        }
        self.latest = in_flight;
        while self.next < self.items.len() {
            let i = self.next;
            let rk = row_key(&self.coll, &self.items[i].ak);
            match doc_of(self.rows.iter().find(|r| r.key == rk))? {
                None if self.items[i].vid.is_some() => {
                    self.set(i, Json::str("NoSuchKey"), Json::Null);
                }
                Some(d) if !d.value.member_truthy("isPHD") => {
                    let mut v = d.value;
                    unescape_tags(&mut v);
                    self.set(i, Json::Null, v);
                }
                _ if self.latest.len() >= MAX_LATEST_VERSION_READS => break,
                _ => {
                    let key = &self.items[i].key;
                    let latest = LatestVersion::start(io, st, &self.coll, self.vf, key);
                    self.latest.push((i, latest));
                }
            }
            self.next += 1;
        }
        if self.next < self.items.len() || !self.latest.is_empty() {
            return Ok(None);
        }
        let out = core::mem::take(&mut self.out);
        Ok(Some(Json::Array(out.into_iter().flatten().collect())))
    }
}

impl<'a> GetObjects<'a> {
    /// `getObjects(bucket, items)` with `items` = `[{key, params}]` (at most 1000) → one
    /// `{err, doc, versionId?, key}` object per item, in item order (`err` = `"NoSuchKey"`,
    /// `"InternalError"` or `null`). The `getLatestVersion` reads of placeholders and missing
    /// masters start in item order, at most five in flight (Arsenal's
    /// `maxBatchingConcurrentOperations`).
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        items: &Json,
        start: Start,
    ) -> GetObjects<'a> {
        let Json::Array(items) = items else {
            let error = ObjmetaError::internal("objects must be an array");
            return Operation::failed(ctx.into(), error);
        };
        if items.len() > 1000 {
            let error = ObjmetaError::internal("cannot get more than 1000 objects");
            return Operation::failed(ctx.into(), error);
        }
        let items = items
            .iter()
            .map(|item| {
                let key = item.get("key").and_then(Json::as_str).unwrap_or("");
                let vid = item
                    .get("params")
                    .and_then(|p| p.get("versionId"))
                    .filter(|v| v.truthy())
                    .map(|v| v.as_str().map_or_else(|| v.stringify(), String::from));
                (key.to_string(), vid)
            })
            .collect();
        let flow = GetObjectsFlow {
            bucket: bucket.to_string(),
            items,
            phase: GetObjectsPhase::VFormat(BucketVFormat::Start),
        };
        begin(ctx, start, flow)
    }
}

impl Flow for GetObjectsFlow {
    type Schema = ObjmetaSchema;
    type Output = Json;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Json> {
        loop {
            match core::mem::replace(&mut self.phase, GetObjectsPhase::Done) {
                GetObjectsPhase::VFormat(mut lookup) => {
                    let vf = ready!(lookup.poll(io, st, &self.bucket),
                        self.phase => GetObjectsPhase::VFormat(lookup));
                    if self.items.is_empty() {
                        return Ok(Some(Json::Array(Vec::new())));
                    }
                    let coll = collection_for_bucket(&self.bucket).to_string();
                    let items: Vec<Item> = core::mem::take(&mut self.items)
                        .into_iter()
                        .map(|(key, vid)| {
                            let ak = match &vid {
                                Some(v) => version_key(vf, &key, v),
                                None => master_key(vf, &key),
                            };
                            Item { key, vid, ak }
                        })
                        .collect();
                    let mut keys: Vec<Vec<u8>> = Vec::new();
                    for item in &items {
                        let rk = row_key(&coll, &item.ak);
                        if !keys.contains(&rk) {
                            keys.push(rk);
                        }
                    }
                    let rowset = RowSet {
                        row_keys: keys,
                        row_ranges: Vec::new(),
                    };
                    let read = start_read(io, st, rowset, filters::live_value(), 0);
                    let items = Items {
                        coll,
                        vf,
                        out: items.iter().map(|_| None).collect(),
                        items,
                        rows: Vec::new(),
                        next: 0,
                        latest: Vec::new(),
                    };
                    self.phase = GetObjectsPhase::Reading { items, read };
                }
                GetObjectsPhase::Reading { mut items, read } => {
                    items.rows = ready!(io.rows_or_wait(read),
                        self.phase => GetObjectsPhase::Reading { items, read });
                    self.phase = GetObjectsPhase::Resolving(items);
                }
                GetObjectsPhase::Resolving(mut items) => {
                    let list = ready!(items.resolve(io, st),
                        self.phase => GetObjectsPhase::Resolving(items));
                    return Ok(Some(list));
                }
                GetObjectsPhase::Done => return Ok(None),
            }
        }
    }
}
