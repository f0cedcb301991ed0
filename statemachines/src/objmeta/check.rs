//! `Check` of an object-metadata table (`spec/check.md` §3).
//!
//! The metastore is read first (each bucket's vFormat and versioning state); then every row is
//! scanned page by page. Each row is checked on its own (key, document, derived cells, key
//! format); and each object key met in a page is judged as a whole from its master and all its
//! version rows, read by key after the page: a dangling or lagging master, a placeholder whose
//! repair is due, versions without a master. Those findings are
//! what a put or delete in flight passes through, so a judged key waits out the grace period,
//! is read and judged again, and only what still holds is reported (and repaired with `fix`:
//! each repair a `CheckAndMutateRow` on the master or row exactly as it was read).
//!
//! A bucket with a migration marker (`docs/migration.md` §6.3, §9) holds rows of both layouts:
//! the other layout's rows are no `wrong_format_key`; each object row's pair (`S(a)`, `T(a)`)
//! is judged by the sync step's classification instead, and a pair not in sync after the
//! grace period is `migration_unsynced`, `migration_straggler` or `migration_conflict`.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rowkit_codec::civil::format_rfc3339_millis;
use rowkit_codec::escape::escape;
use rowkit_codec::model::prefix_successor;
use rowkit_codec::model::{KeyBound, Mutation, Row, RowFilter, RowRange, RowSet};
use rowkit_codec::objmeta::cells::{
    DOC_FAMILY, FLAG_FAMILY, StoredDoc, filters, replace, replace_text,
};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{
    DecodedRowKey, INFOSTORE, KeyKind, METASTORE, USERS_BUCKET, USERS_BUCKET_COLLECTION, VFormat,
    collection_end, collection_start, decode_row_key, master_key, row_key,
};
use rowkit_codec::objmeta::migration::marker::{MigrationColumns, MigrationMarker, MigrationState};
use rowkit_codec::objmeta::migration::pass::object_row_ranges;
use rowkit_codec::objmeta::migration::sync::{
    PairRow, SYNC_QUALIFIER, Side, Stamp, StampKind, SyncAction, SyncPair, classify, map_key,
    sync_pair,
};
use rowkit_codec::objmeta::version_id::generated_at_ms;

use super::REPAIR_DELAY_US;
use super::requests::latest_version_range;
use crate::check::{
    CheckError, CheckEvent, CheckOptions, CheckProgress, CheckSummary, CheckTarget, Checking,
    Finding, PagedScan, Repair, Repairs, Scanner, Step,
};
use crate::children::{ChildId, ChildOutput, owned_rows};
use crate::operation::{ContextArg, Flow, Io, Operation, Start};
use crate::{CheckAndMutateRowRequest, ReadRowsRequest, Request, Timestamp};

/// The schema name in findings.
const SCHEMA: &str = "s3";
/// The `originOp` a placeholder repair stores (`objmeta.md` §8.4 step 2).
const REPAIR_ORIGIN_OP: &str = "s3:ObjectRemoved:Delete";
/// Most version rows of one key read to judge it.
const MAX_VERSIONS_READ: i64 = 10_000;

/// A check of the object-metadata table, or of one bucket.
pub type Check = Operation<'static, CheckFlow>;

impl Check {
    /// Checks `target.table` (or only `bucket`'s collection and metastore row) as `start`
    /// says.
    pub fn new(
        target: CheckTarget,
        bucket: Option<&str>,
        options: CheckOptions,
        start: Start,
    ) -> Check {
        let rows = match bucket {
            None => RowSet::all(),
            Some(b) => {
                let c = collection_of(b);
                RowSet {
                    row_keys: alloc::vec![row_key(METASTORE, b)],
                    row_ranges: alloc::vec![RowRange {
                        start: KeyBound::Closed(collection_start(c)),
                        end: KeyBound::Open(collection_end(c)),
                    }],
                }
            }
        };
        Check::scan(target, rows, None, options, start)
    }

    /// Checks only the object rows of `layout` in `bucket`'s collection, judged as a bucket
    /// of key format `layout` whatever its `vFormat` says: the schema check of a migration's
    /// `to` layout before the switch (`docs/migration.md` §8), while the bucket is still
    /// `from`. The metastore row itself is read for the versioning state, not checked.
    pub fn layout(
        target: CheckTarget,
        bucket: &str,
        layout: VFormat,
        options: CheckOptions,
        start: Start,
    ) -> Check {
        let rows = RowSet {
            row_keys: Vec::new(),
            row_ranges: object_row_ranges(collection_of(bucket), layout, None, None),
        };
        Check::scan(target, rows, Some((bucket.into(), layout)), options, start)
    }

    /// The check of `rows` (after the metastore), `layout` overriding one bucket's key format.
    fn scan(
        target: CheckTarget,
        rows: RowSet,
        layout: Option<(String, VFormat)>,
        options: CheckOptions,
        start: Start,
    ) -> Check {
        let metastore = PagedScan::new(
            &target.table,
            RowSet::range(RowRange {
                start: KeyBound::Closed(collection_start(METASTORE)),
                end: KeyBound::Open(collection_end(METASTORE)),
            }),
            Some(filters::latest()),
            options.page_rows,
        );
        let scan = PagedScan::new(
            &target.table,
            rows,
            Some(filters::latest()),
            options.page_rows,
        );
        let flow = CheckFlow {
            scanner: Scanner::new(scan, options),
            buckets: BTreeMap::new(),
            layout,
            last_key: None,
            asked_buckets: BTreeSet::new(),
            phase: Phase::Metastore(metastore),
        };
        let retry = target.retry;
        Operation::begin(ContextArg::owned(target), start, retry, flow)
    }
}

/// The collection of bucket `b` (`users..bucket` lives in `__usersbucket`).
fn collection_of(b: &str) -> &str {
    if b == USERS_BUCKET {
        USERS_BUCKET_COLLECTION
    } else {
        b
    }
}

/// The bucket a collection holds.
fn bucket_of(collection: &str) -> &str {
    if collection == USERS_BUCKET_COLLECTION {
        USERS_BUCKET
    } else {
        collection
    }
}

/// What the metastore says of a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BucketInfo {
    vformat: VFormat,
    /// Versioning suspended: its null masters have no version row.
    suspended: bool,
    /// The bucket's migration, when its metastore row has a marker (§6.3).
    migration: Option<Migrating>,
}

/// What check needs of a bucket's migration marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Migrating {
    from: VFormat,
    to: VFormat,
    state: MigrationState,
}

impl Migrating {
    /// The pair of an object row of layout `layout` whose Arsenal key is `key` (`None`: a key
    /// the migration cannot map, judged as without a marker).
    fn pair(self, collection: &str, key: &str, layout: VFormat) -> Option<(SyncPair, PairRow)> {
        if layout == self.from {
            let pair = sync_pair(collection, key, self.from, self.to).ok()?;
            return Some((pair, PairRow::Source));
        }
        let from_key = map_key(collection, key, self.to, self.from).ok()?;
        let pair = sync_pair(collection, &from_key, self.from, self.to).ok()?;
        (pair.target_key == key).then_some((pair, PairRow::Target))
    }
}

/// How a key came to be judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// From its master row: every versioned finding applies.
    Master,
    /// From its version rows: only "versions without a master" (a key with a master is judged
    /// from it).
    Versions,
}

/// An object key to judge from its master and versions.
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyCheck {
    collection: String,
    key: String,
    bucket: BucketInfo,
    seen: Seen,
}

impl KeyCheck {
    fn master_row(&self) -> Vec<u8> {
        row_key(
            &self.collection,
            &master_key(self.bucket.vformat, &self.key),
        )
    }

    fn versions(&self) -> RowRange {
        latest_version_range(&self.collection, self.bucket.vformat, &self.key)
    }
}

/// A suspected finding waiting out the grace period.
#[derive(Debug)]
enum Suspect {
    Key(KeyCheck),
    /// Rows of `collection` (first row `row`) whose bucket has no metastore row.
    Bucket {
        collection: String,
        row: Vec<u8>,
    },
    /// A migrating bucket's pair, met at its `seen` row.
    Pair {
        pair: SyncPair,
        seen: PairRow,
        state: MigrationState,
    },
}

/// The rows read for a batch of suspects: masters and metastore rows by key, the version rows
/// of each key in order.
#[derive(Debug, Default)]
struct Reads {
    rows: BTreeMap<Vec<u8>, Row>,
}

impl Reads {
    /// The version rows of `k`, newest first.
    fn versions(&self, k: &KeyCheck) -> Vec<&Row> {
        let range = k.versions();
        self.rows
            .range(range.start.key().unwrap_or_default().to_vec()..)
            .map(|(_, r)| r)
            .skip_while(|r| !range.contains(&r.key))
            .take_while(|r| range.contains(&r.key))
            .collect()
    }
}

/// One `ReadRows` for every suspect's rows: masters and metastore rows by key, and version
/// ranges (at most [`MAX_VERSIONS_READ`] rows a suspect, in all).
fn read_for(io: &mut Io<CheckEvent>, table: &str, suspects: &[Suspect]) -> Option<ChildId> {
    let mut set = RowSet::default();
    for s in suspects {
        match s {
            Suspect::Key(k) => {
                set.row_keys.push(k.master_row());
                set.row_ranges.push(k.versions());
            }
            Suspect::Bucket { collection, .. } => {
                set.row_keys.push(row_key(METASTORE, bucket_of(collection)));
            }
            Suspect::Pair { pair, .. } => {
                set.row_keys.push(pair.source_row.clone());
                set.row_keys.push(pair.target_row.clone());
            }
        }
    }
    if set.row_keys.is_empty() && set.row_ranges.is_empty() {
        return None;
    }
    set.row_keys.sort_unstable();
    set.row_keys.dedup();
    Some(io.read_rows(ReadRowsRequest {
        table: table.into(),
        rows: set,
        filter: Some(filters::latest()),
        rows_limit: MAX_VERSIONS_READ.saturating_mul(suspects.len() as i64 + 1),
        ..Default::default()
    }))
}

#[derive(Debug)]
enum Phase {
    /// Reading the metastore.
    Metastore(PagedScan),
    /// Scanning: the next page, or suspects due again.
    Scan,
    /// Repairs of the page's `derived_stale` rows, then its keys' first judgement.
    PageRepairs(Repairs, alloc::boxed::Box<Phase>),
    /// The page's keys and unknown buckets being read for a first judgement.
    First {
        read: Option<ChildId>,
        suspects: Vec<Suspect>,
        rows: usize,
    },
    /// Due suspects being read again.
    Again {
        read: Option<ChildId>,
        suspects: Vec<Suspect>,
    },
    /// Repairs of confirmed findings.
    Repair(Repairs),
    Done,
}

/// The flow of [`Check`].
#[derive(Debug)]
pub struct CheckFlow {
    scanner: Scanner<Suspect>,
    buckets: BTreeMap<String, BucketInfo>,
    /// A bucket judged in another key format than its `vFormat` ([`Check::layout`]).
    layout: Option<(String, VFormat)>,
    /// The last (collection, key) of a row seen, so a key's other rows are skipped.
    last_key: Option<(String, String)>,
    /// Collections whose missing metastore row was looked for (each reported once).
    asked_buckets: BTreeSet<String>,
    phase: Phase,
}

impl Flow for CheckFlow {
    type Schema = Checking<CheckTarget>;
    type Output = CheckSummary;

    fn advance(
        &mut self,
        io: &mut Io<CheckEvent>,
        target: &mut CheckTarget,
    ) -> CheckProgress<CheckSummary> {
        loop {
            match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Metastore(mut scan) => {
                    let Some(page) = scan.poll(io)? else {
                        self.phase = Phase::Metastore(scan);
                        return Ok(None);
                    };
                    for row in &page {
                        self.know_bucket(row);
                    }
                    self.phase = if scan.is_done() {
                        Phase::Scan
                    } else {
                        Phase::Metastore(scan)
                    };
                }
                Phase::Scan => match self.scanner.next(io)? {
                    None => {
                        self.phase = Phase::Scan;
                        return Ok(None);
                    }
                    Some(Step::Done(summary)) => return Ok(Some(summary)),
                    Some(Step::Recheck(suspects)) => {
                        let read = read_for(io, &target.table, &suspects);
                        self.phase = Phase::Again { read, suspects };
                    }
                    Some(Step::Page(page)) => {
                        let rows = page.len();
                        let (suspects, repairs) = self.check_page(io, &target.table, page);
                        let read = read_for(io, &target.table, &suspects);
                        let first = Phase::First {
                            read,
                            suspects,
                            rows,
                        };
                        self.phase = if repairs.is_empty() {
                            first
                        } else {
                            Phase::PageRepairs(
                                Repairs::start(io, repairs),
                                alloc::boxed::Box::new(first),
                            )
                        };
                    }
                },
                Phase::PageRepairs(mut repairs, then) => {
                    if repairs
                        .poll(io, self.scanner.report(), still_wrong)
                        .is_none()
                    {
                        self.phase = Phase::PageRepairs(repairs, then);
                        return Ok(None);
                    }
                    self.phase = *then;
                }
                Phase::First {
                    read,
                    suspects,
                    rows,
                } => {
                    let Some(found) = take_rows(io, read)? else {
                        self.phase = Phase::First {
                            read,
                            suspects,
                            rows,
                        };
                        return Ok(None);
                    };
                    for s in suspects {
                        if let Suspect::Bucket { collection, .. } = &s
                            && let Some(row) =
                                found.rows.get(&row_key(METASTORE, bucket_of(collection)))
                        {
                            self.know_bucket(row);
                        }
                        if !judge(&target.table, &s, &found, io.now()).is_empty() {
                            self.scanner.hold(io, s);
                        }
                    }
                    self.scanner.report().scanned(io, rows);
                    self.phase = Phase::Scan;
                }
                Phase::Again { read, suspects } => {
                    let Some(found) = take_rows(io, read)? else {
                        self.phase = Phase::Again { read, suspects };
                        return Ok(None);
                    };
                    let fix = self.scanner.options().fix;
                    let mut repairs = Vec::new();
                    for s in &suspects {
                        for (f, repair) in judge(&target.table, s, &found, io.now()) {
                            match repair {
                                Some(r) if fix => repairs.push((f, r)),
                                _ => self.scanner.report().finding(io, f),
                            }
                        }
                    }
                    self.phase = Phase::Repair(Repairs::start(io, repairs));
                }
                Phase::Repair(mut repairs) => {
                    if repairs
                        .poll(io, self.scanner.report(), still_wrong)
                        .is_none()
                    {
                        self.phase = Phase::Repair(repairs);
                        return Ok(None);
                    }
                    self.phase = Phase::Scan;
                }
                Phase::Done => return Err(CheckError::Aborted),
            }
        }
    }
}

/// The rows of a finished read by key (`None` while it runs; no read: nothing).
fn take_rows(io: &mut Io<CheckEvent>, read: Option<ChildId>) -> CheckProgress<Reads> {
    let Some(read) = read else {
        return Ok(Some(Reads::default()));
    };
    match io.take(read) {
        None => Ok(None),
        Some(Ok(ChildOutput::Rows(rows))) => Ok(Some(Reads {
            rows: owned_rows(rows)
                .into_iter()
                .map(|r| (r.key.clone(), r))
                .collect(),
        })),
        Some(Ok(_)) => Ok(Some(Reads::default())),
        Some(Err(e)) => Err(CheckError::Store(e)),
    }
}

impl CheckFlow {
    /// Records a metastore row's bucket.
    fn know_bucket(&mut self, row: &Row) {
        let Ok(key) = decode_row_key(&row.key) else {
            return;
        };
        if key.kind != KeyKind::Metastore {
            return;
        }
        if let Some(mut info) = bucket_info(row) {
            if let Some((bucket, layout)) = &self.layout
                && *bucket == key.arsenal_key
            {
                // The check of one layout before the switch (§8) judges only that layout.
                info.vformat = *layout;
                info.migration = None;
            }
            self.buckets.insert(key.arsenal_key, info);
        }
    }

    /// Checks each row of a page on its own; gives the keys and buckets to judge.
    fn check_page(
        &mut self,
        io: &mut Io<CheckEvent>,
        table: &str,
        page: Vec<Row>,
    ) -> (Vec<Suspect>, Vec<(Finding, Repair)>) {
        let mut suspects = Vec::new();
        let mut repairs = Vec::new();
        for row in page {
            let key = match decode_row_key(&row.key) {
                Ok(k) => k,
                Err(e) => {
                    self.scanner
                        .report()
                        .finding(io, finding("undecodable_key", &row.key, e.to_string()));
                    continue;
                }
            };
            let doc = self.document(io, table, &row, &key, &mut repairs);
            if matches!(key.kind, KeyKind::Metastore | KeyKind::Infostore) {
                continue;
            }
            let Some(bucket) = self.buckets.get(bucket_of(&key.collection)).copied() else {
                if self.asked_buckets.insert(key.collection.clone()) {
                    suspects.push(Suspect::Bucket {
                        collection: key.collection.clone(),
                        row: row.key.clone(),
                    });
                }
                continue;
            };
            let object_row = matches!(key.kind, KeyKind::Master | KeyKind::Version);
            let v1_key = object_row && key.format == Some(VFormat::V1);
            let layout = if v1_key { VFormat::V1 } else { VFormat::V0 };
            if let Some(m) = bucket.migration.filter(|_| object_row)
                && let Some((pair, seen)) = m.pair(&key.collection, &key.arsenal_key, layout)
            {
                suspects.push(Suspect::Pair {
                    pair,
                    seen,
                    state: m.state,
                });
                if layout != bucket.vformat {
                    // The other layout's row: judged as a pair only.
                    continue;
                }
            }
            if (bucket.vformat == VFormat::V1) != v1_key {
                let detail = format!(
                    "the bucket's vFormat is {}, the key is {}",
                    bucket.vformat.as_str(),
                    if v1_key { "v1" } else { "not v1" }
                );
                self.scanner
                    .report()
                    .finding(io, finding("wrong_format_key", &row.key, detail));
                continue;
            }
            let Some(doc) = doc else {
                continue;
            };
            // A version row is found by the id in its key: a key cut short, or written with
            // another id, is listed as a version no read of its document's id ever finds.
            if key.kind == KeyKind::Version
                && let Some(doc_vid) = vid(&doc)
                && key.version_id.as_deref() != Some(doc_vid)
            {
                let detail = format!(
                    "the key names version {}, its document is version {}",
                    key.version_id
                        .as_deref()
                        .map_or_else(|| "none".into(), |v| escape(v.as_bytes())),
                    escape(doc_vid.as_bytes())
                );
                self.scanner
                    .report()
                    .finding(io, finding("version_key_mismatch", &row.key, detail));
                continue;
            }
            let this = (key.collection.clone(), key.object_key.clone());
            if self.last_key.as_ref() == Some(&this) {
                continue;
            }
            self.last_key = Some(this);
            // A key met at its master is judged whole; met at its versions (v1 keeps them
            // apart; v0 when it has no master) only a missing master counts, so no finding is
            // reported twice and nothing is remembered beyond the last key.
            let seen = match key.kind {
                KeyKind::Master => Seen::Master,
                _ => Seen::Versions,
            };
            suspects.push(Suspect::Key(KeyCheck {
                collection: key.collection,
                key: key.object_key,
                bucket,
                seen,
            }));
        }
        (suspects, repairs)
    }

    /// The row's document, after `bad_document` and `derived_stale` are reported (the latter
    /// with its repair in `repairs` under `fix`: conditional on the row as read, it needs no
    /// grace period).
    fn document(
        &mut self,
        io: &mut Io<CheckEvent>,
        table: &str,
        row: &Row,
        key: &DecodedRowKey,
        repairs: &mut Vec<(Finding, Repair)>,
    ) -> Option<StoredDoc> {
        let object_expected = key.collection != INFOSTORE;
        let doc = match StoredDoc::from_row(row) {
            Ok(Some(doc)) if !object_expected || doc.value.as_object().is_some() => doc,
            Ok(Some(doc)) => {
                let detail = format!("d:value {} is not a JSON object", short(&doc.text));
                self.scanner
                    .report()
                    .finding(io, finding("bad_document", &row.key, detail));
                return None;
            }
            Ok(None) => {
                self.scanner.report().finding(
                    io,
                    finding("bad_document", &row.key, "no d:value cell".into()),
                );
                return None;
            }
            Err(e) => {
                let detail = format!("d:value does not parse: {e}");
                self.scanner
                    .report()
                    .finding(io, finding("bad_document", &row.key, detail));
                return None;
            }
        };
        if let Some(stale) = derived_stale(row, &doc) {
            let mut f = finding("derived_stale", &row.key, stale);
            f.repair = Some("rewrite the f family from d:value, if both are as read".into());
            if self.scanner.options().fix {
                let request = cam(
                    table,
                    &row.key,
                    unchanged(&doc),
                    derived_cells(&doc),
                    Vec::new(),
                );
                let repair = Repair {
                    request,
                    when_matched: true,
                };
                repairs.push((f, repair));
            } else {
                self.scanner.report().finding(io, f);
            }
        }
        Some(doc)
    }
}

/// The re-check of a finding whose repair's condition failed, on its row read again (rule
/// 1.3): a derived cell is still stale; versions still have no master; a master is still a
/// placeholder (it may be another one, whose repair is left to the next check); a master
/// still names a version older than the one the repair would have made master.
fn still_wrong(f: &Finding, repair: &Repair, row: Option<&Row>) -> bool {
    let doc = row.and_then(|r| StoredDoc::from_row(r).ok().flatten());
    match (f.kind, row, doc) {
        ("versions_without_master", row, _) => row.is_none(),
        (_, None, _) | (_, _, None) => false,
        ("derived_stale", Some(row), Some(doc)) => derived_stale(row, &doc).is_some(),
        ("placeholder_due", _, Some(doc)) => flag(&doc, "isPHD"),
        ("master_behind", _, Some(doc)) => {
            let newest = repair.cells().find_map(|m| match m {
                Mutation::SetCell {
                    family,
                    qualifier,
                    value,
                    ..
                } if family == FLAG_FAMILY && qualifier == b"versionId" => Some(value.as_slice()),
                _ => None,
            });
            !flag(&doc, "isPHD")
                && !flag(&doc, "isDeleteMarker")
                && vid(&doc).zip(newest).is_some_and(|(m, n)| m.as_bytes() > n)
        }
        _ => true,
    }
}

/// A report-only finding.
fn finding(kind: &'static str, row_key: &[u8], detail: String) -> Finding {
    Finding {
        schema: SCHEMA,
        kind,
        row_key: row_key.to_vec(),
        detail,
        repair: None,
        repaired: false,
    }
}

/// At most 80 characters of a document, for details.
fn short(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.into(),
    }
}

/// A metastore row's vFormat and versioning state.
fn bucket_info(row: &Row) -> Option<BucketInfo> {
    let doc = StoredDoc::from_row(row).ok()??;
    let vformat = doc
        .vformat
        .as_ref()
        .and_then(Json::as_str)
        .map_or(VFormat::V0, VFormat::from_stored);
    let suspended = doc
        .value
        .get("versioningConfiguration")
        .and_then(|v| v.get("Status"))
        .and_then(Json::as_str)
        == Some("Suspended");
    // A marker that does not decode is no migration check can judge by: the bucket is checked
    // as without one (the migrator and aware processes refuse it, `migration_record_invalid`).
    let migration = MigrationColumns::from_row(row)
        .marker
        .and_then(|bytes| MigrationMarker::from_json_bytes(&bytes).ok())
        .map(|m| Migrating {
            from: m.from,
            to: m.to,
            state: m.state,
        });
    Some(BucketInfo {
        vformat,
        suspended,
        migration,
    })
}

/// What is stale in the row's `f` family against its `d:value`, if anything.
fn derived_stale(row: &Row, doc: &StoredDoc) -> Option<String> {
    let want: BTreeMap<Vec<u8>, Vec<u8>> = derived_cells(doc)
        .into_iter()
        .filter_map(|m| match m {
            Mutation::SetCell {
                family,
                qualifier,
                value,
                ..
            } if family == FLAG_FAMILY => Some((qualifier, value)),
            _ => None,
        })
        .collect();
    let mut have: BTreeMap<Vec<u8>, Vec<u8>> = row
        .cells
        .iter()
        .filter(|c| c.family == FLAG_FAMILY)
        .map(|c| (c.qualifier.clone(), c.value.clone()))
        .collect();
    // The layout migration's sync stamp (`docs/migration.md` §4.2, §9) is no derived cell: it
    // is accepted iff it is a valid stamp of the row's `f:hash` (the hash, then the sync's kind
    // and nonce, or the hash alone as written before §12.73); any other value is reported
    // with the derived cells, and the repair's rewrite removes it.
    let stamp = SYNC_QUALIFIER.as_bytes();
    if let (Some(value), Some(hash)) = (have.get(stamp), have.get(b"hash".as_slice()))
        && matches!(Stamp::read(hash, Some(value)), Stamp::Stamped(_))
    {
        have.remove(stamp);
    }
    if want == have {
        return None;
    }
    let names =
        |m: &BTreeMap<Vec<u8>, Vec<u8>>| m.keys().map(|q| escape(q)).collect::<Vec<_>>().join(", ");
    let wrong: Vec<String> = want
        .iter()
        .filter(|(q, v)| have.get(*q).is_some_and(|h| h != *v))
        .map(|(q, _)| format!("f:{}", escape(q)))
        .collect();
    Some(format!(
        "f cells [{}] are not those of d:value [{}]{}",
        names(&have),
        names(&want),
        if wrong.is_empty() {
            String::new()
        } else {
            format!("; wrong values: {}", wrong.join(", "))
        }
    ))
}

/// The `f` family `REPLACE` writes for the stored `d:value` bytes (`objmeta.md` §5.4: the
/// hash is of the bytes as stored), without `d:value` itself: a repair of derived cells never
/// writes the document, so it cannot overwrite a newer one.
fn derived_cells(doc: &StoredDoc) -> Vec<Mutation> {
    replace_text(&doc.value, &doc.text, None)
        .into_iter()
        .filter(|m| match m {
            Mutation::SetCell { family, .. } | Mutation::DeleteFromFamily { family } => {
                family == FLAG_FAMILY
            }
            _ => false,
        })
        .collect()
}

/// Bytes of `d:value` a repair's condition holds at most: Bigtable refuses a filter over
/// 20 KiB, so a condition that held the whole document (twice, as both ends of a value range)
/// failed for every document of about 10 KB (issue 29).
const CONDITION_DOC_BYTES: usize = 4_096;

/// Matches iff the row's `d:value` and `f:hash` are as in `doc` (an absent hash must still be
/// absent). The value is compared whole up to [`CONDITION_DOC_BYTES`], beyond that by its
/// first [`CONDITION_DOC_BYTES`] bytes: with the hash as read (which every writer's `REPLACE`
/// rewrites with the document) the condition still fails for any write since the read, except
/// one that restores the very document whose hash the row holds, keeping the prefix; the
/// repair then writes stale `f` cells, never the document, and the next check reports them.
fn unchanged(doc: &StoredDoc) -> RowFilter {
    let text = doc.text.as_bytes();
    let (start, end) = if text.len() <= CONDITION_DOC_BYTES {
        (
            KeyBound::Closed(text.to_vec()),
            KeyBound::Closed(text.to_vec()),
        )
    } else {
        let prefix = &text[..CONDITION_DOC_BYTES];
        let end = prefix_successor(prefix).map_or(KeyBound::Unbounded, KeyBound::Open);
        (KeyBound::Closed(prefix.to_vec()), end)
    };
    let value = RowFilter::Chain(alloc::vec![
        RowFilter::FamilyNameRegex(DOC_FAMILY.into()),
        RowFilter::ColumnQualifierRegex(b"value".to_vec()),
        RowFilter::ValueRange { start, end },
    ]);
    let hash = match &doc.hash {
        Some(h) => filters::hash_eq(h),
        None => RowFilter::Condition {
            predicate: Some(alloc::boxed::Box::new(filters::flag("hash"))),
            true_filter: Some(alloc::boxed::Box::new(RowFilter::BlockAll)),
            false_filter: Some(alloc::boxed::Box::new(filters::exists())),
        },
    };
    filters::and(value, hash)
}

fn cam(
    table: &str,
    row: &[u8],
    predicate: RowFilter,
    true_mutations: Vec<Mutation>,
    false_mutations: Vec<Mutation>,
) -> Request {
    Request::CheckAndMutateRow(CheckAndMutateRowRequest {
        table: table.into(),
        app_profile_id: String::new(),
        row_key: row.to_vec(),
        predicate: Some(predicate),
        true_mutations,
        false_mutations,
    })
}

/// A document of a row that exists and is not flagged deleted.
fn live(row: &Row) -> Option<StoredDoc> {
    StoredDoc::from_row(row)
        .ok()
        .flatten()
        .filter(|d| !d.deleted)
}

fn flag(doc: &StoredDoc, name: &str) -> bool {
    doc.value.get(name) == Some(&Json::Bool(true))
}

fn vid(doc: &StoredDoc) -> Option<&str> {
    doc.value.get("versionId").and_then(Json::as_str)
}

/// The findings a suspect's rows show now, each with its repair request (if one is allowed).
fn judge(
    table: &str,
    s: &Suspect,
    found: &Reads,
    now: Timestamp,
) -> Vec<(Finding, Option<Repair>)> {
    match s {
        Suspect::Bucket { collection, row } => {
            if found
                .rows
                .contains_key(&row_key(METASTORE, bucket_of(collection)))
            {
                return Vec::new();
            }
            let detail = format!(
                "collection {} has rows but bucket {} has no __metastore row",
                escape(collection.as_bytes()),
                escape(bucket_of(collection).as_bytes())
            );
            alloc::vec![(finding("bucket_without_metastore", row, detail), None)]
        }
        Suspect::Key(k) => judge_key(table, k, found, now),
        Suspect::Pair { pair, seen, state } => judge_pair(pair, *seen, *state, found)
            .into_iter()
            .map(|f| (f, None))
            .collect(),
    }
}

/// A migrating bucket's pair as read now (§6.3): the sync step's classification of it
/// ([`classify`]), reported from its `S(a)` row while that is present, else from `T(a)`, so a
/// pair met at both rows is reported once. In `cleaning`, an absent `S(a)` beside a stamped
/// `T(a)` is the clean-up between its two writes, not a straggler's delete.
fn judge_pair(
    pair: &SyncPair,
    seen: PairRow,
    state: MigrationState,
    found: &Reads,
) -> Option<Finding> {
    // A row that is no valid side (`d:value` without `f:hash`) is `derived_stale` already.
    let side = |row: PairRow| Side::from_row(found.rows.get(pair.row_key(row))).ok();
    let (source, target) = (side(PairRow::Source)?, side(PairRow::Target)?);
    let source_present = source.present().is_some();
    if source_present != (seen == PairRow::Source) {
        return None;
    }
    // Whatever its stamp's kind (a confirmed `T(a)` beside an absent `S(a)` classifies as a
    // reverse mirror due, §12.73): the clean-up's two writes are not a finding.
    if state == MigrationState::Cleaning && !source_present && target.is_stamped() {
        return None;
    }
    let kind = match classify(&source, &target, state.truth()) {
        SyncAction::InSync | SyncAction::StampUnstamped { .. } => return None,
        SyncAction::StragglerCopyToTarget | SyncAction::StragglerDeleteTarget => {
            "migration_straggler"
        }
        SyncAction::Conflict => "migration_conflict",
        _ => "migration_unsynced",
    };
    let describe = |side: &Side| match (side.present(), side.sync_mark()) {
        (None, _) => "absent",
        (Some(_), Some(mark)) if mark.kind == StampKind::Copy => "stamped by a copy",
        (Some(_), Some(_)) => "stamped by a confirmation",
        (Some(_), None) if side.is_stamped() => "stamped",
        (Some(_), None) => "unstamped",
    };
    let detail = format!(
        "migration state {}: S(a) {} is {}, T(a) {} is {}",
        state.as_str(),
        escape(&pair.source_row),
        describe(&source),
        escape(&pair.target_row),
        describe(&target),
    );
    Some(finding(kind, pair.row_key(seen), detail))
}

fn judge_key(
    table: &str,
    k: &KeyCheck,
    found: &Reads,
    now: Timestamp,
) -> Vec<(Finding, Option<Repair>)> {
    let master_key = k.master_row();
    let master_row = found.rows.get(&master_key);
    let master = master_row.and_then(|r| StoredDoc::from_row(r).ok().flatten());
    let versions: Vec<(&Row, StoredDoc)> = found
        .versions(k)
        .into_iter()
        .filter_map(|r| live(r).map(|d| (r, d)))
        .collect();
    let latest = versions.first();
    // The §8.4 repair: the master becomes the newest live version.
    let becomes_latest = |predicate: RowFilter, when_matched: bool| -> Option<Repair> {
        let (_, doc) = latest?;
        let mutations = replace(&doc.value, None);
        let request = if when_matched {
            cam(table, &master_key, predicate, mutations, Vec::new())
        } else {
            cam(table, &master_key, predicate, Vec::new(), mutations)
        };
        Some(Repair {
            request,
            when_matched,
        })
    };
    let mut out = Vec::new();
    let Some(master) = master else {
        // v1: the master disappears under a delete marker; v0 never lacks one legitimately.
        if let Some((row, doc)) = latest
            && !flag(doc, "isDeleteMarker")
        {
            let detail = format!(
                "{} version row(s), the newest {} not a delete marker, and no master",
                versions.len(),
                escape(&row.key)
            );
            let mut f = finding("versions_without_master", &master_key, detail);
            f.repair =
                Some("write the newest version as master, if the master is still absent".into());
            out.push((f, becomes_latest(filters::exists(), false)));
        }
        return out;
    };
    if k.seen == Seen::Versions {
        return out;
    }
    let Some(mvid) = vid(&master) else {
        return out;
    };
    if flag(&master, "isPHD") {
        let due =
            generated_at_ms(mvid).map(|ms| ms.saturating_mul(1000).saturating_add(REPAIR_DELAY_US));
        // Narrowed (check.md §3's rule for conditions a legitimate sequence reaches): a
        // placeholder with no live version left is such a state — a delete that stopped
        // between `deleteOrRepairPHD`'s read and its removal of the placeholder, or a repair
        // that found no version (`NoVersion`) — which reads resolve to no object and which
        // §8.4's repair leaves as it is: reported, it could never be repaired.
        if latest.is_some() && due.is_some_and(|d| d <= now.0) {
            let detail = format!(
                "placeholder master {} whose repair was due at {}",
                escape(mvid.as_bytes()),
                due.map_or_else(
                    || "an unknown time".into(),
                    |us| format_rfc3339_millis(
                        us.div_euclid(1_000_000),
                        us.rem_euclid(1_000_000) / 1000
                    )
                )
            );
            let mut f = finding("placeholder_due", &master_key, detail);
            f.repair = Some("the delayed repair (objmeta.md §8.4): the newest version becomes master, if the placeholder is still there".into());
            let repair = latest.map(|(_, doc)| {
                let mut value = doc.value.clone();
                if let Some(obj) = value.as_object_mut() {
                    obj.set("originOp", Json::str(REPAIR_ORIGIN_OP));
                }
                let predicate = filters::exists_and_not(filters::phd_is(mvid));
                Repair {
                    request: cam(
                        table,
                        &master_key,
                        predicate,
                        Vec::new(),
                        replace(&value, None),
                    ),
                    when_matched: false,
                }
            });
            out.push((f, repair));
        }
        return out;
    }
    if flag(&master, "isDeleteMarker") || k.bucket.suspended || flag(&master, "isNull") {
        return out;
    }
    if !versions.iter().any(|(_, d)| vid(d) == Some(mvid)) {
        let detail = format!(
            "the master names version {}, which has no version row",
            escape(mvid.as_bytes())
        );
        out.push((finding("master_dangling", &master_key, detail), None));
        return out;
    }
    // Ids sort newest first: a master id above the newest non-delete-marker version's is older.
    if let Some((row, newest)) = versions.iter().find(|(_, d)| !flag(d, "isDeleteMarker"))
        && vid(newest).is_some_and(|v| mvid > v)
    {
        let detail = format!(
            "the master names version {}, older than version row {}",
            escape(mvid.as_bytes()),
            escape(&row.key)
        );
        let mut f = finding("master_behind", &master_key, detail);
        f.repair = Some("the newest version becomes master, if the master is as read".into());
        let hash = master.hash.clone().unwrap_or_default();
        out.push((f, becomes_latest(filters::hash_eq(&hash), true)));
    }
    out
}

#[cfg(test)]
mod tests {
    use alloc::vec;

    use rowkit_codec::model::{Cell, Timestamp};
    use rowkit_codec::objmeta::cells::replace;

    use super::*;

    /// The row `REPLACE(value)` writes, plus `extra` `f` cells.
    fn row(value: &str, extra: &[(&str, Vec<u8>)]) -> (Row, StoredDoc) {
        let json = Json::parse(value).unwrap();
        let mut cells: Vec<Cell> = replace(&json, None)
            .into_iter()
            .filter_map(Cell::from_set_cell)
            .collect();
        for (q, v) in extra {
            cells.push(Cell {
                family: FLAG_FAMILY.into(),
                qualifier: q.as_bytes().to_vec(),
                timestamp: Timestamp(0),
                value: v.clone(),
                labels: vec![],
            });
        }
        cells.sort_by(rowkit_codec::model::compare_canonical);
        let row = Row {
            key: b"b\x00k".to_vec(),
            cells,
        };
        let doc = StoredDoc::from_row(&row).unwrap().unwrap();
        (row, doc)
    }

    const DOC: &str = r#"{"key":"k","versionId":"v1"}"#;

    #[test]
    fn a_sync_stamp_equal_to_the_hash_is_accepted() {
        let hash = rowkit_codec::objmeta::cells::value_hash(DOC);
        let (r, doc) = row(DOC, &[("rowkitSync", hash)]);
        assert_eq!(derived_stale(&r, &doc), None);
        let (r, doc) = row(DOC, &[]);
        assert_eq!(derived_stale(&r, &doc), None);
    }

    #[test]
    fn a_sync_stamp_of_another_value_is_derived_stale() {
        let (r, doc) = row(DOC, &[("rowkitSync", vec![7; 32])]);
        let stale = derived_stale(&r, &doc).unwrap();
        assert!(
            stale.contains("f:rowkitSync") || stale.contains("rowkitSync"),
            "{stale}"
        );
        // A stamp equal to a stale stored hash: the hash is what is reported.
        let (mut r, doc) = row(DOC, &[("rowkitSync", vec![5; 32])]);
        for c in &mut r.cells {
            if c.qualifier == b"hash" {
                c.value = vec![5; 32];
            }
        }
        let stale = derived_stale(&r, &doc).unwrap();
        assert!(stale.contains("wrong values: f:hash"), "{stale}");
    }
}
