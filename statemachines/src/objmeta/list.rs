//! The `ListObject` flow (`objmeta.md` 10.1): rows stream from one scan (or a master /
//! version pair merged by key) into the listing algorithm of
//! [`rowkit_codec::objmeta::listing`]; v1 placeholder masters are resolved one at a time;
//! a streak of 100 skipped entries restarts the scan(s) at the algorithm's `skipping()` key;
//! `FILTER_END` ends the operation, which aborts the open scans.
//!
//! An aware process listing a bucket with a migration marker reads only the rows of the
//! bucket's truth layout (`docs/migration.md` §12.63): each scan's range is cut to the
//! layout's object rows ([`object_rows_within`]), so a v0 listing does not show the v1
//! copies. An unaware process lists as Arsenal does (§6.1).

use alloc::collections::VecDeque;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::cmp::Ordering;

use rowkit_codec::model::{Row, RowSet};
use rowkit_codec::objmeta::cells::{StoredDoc, filters, unescape_tags};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{
    MASTER_PREFIX, METASTORE, VFormat, cmp_utf16, collection_for_bucket, row_key,
};
use rowkit_codec::objmeta::listing::{
    FILTER_END, FILTER_SKIP, Listing, ListingParams, MdParams, Skip,
};
use rowkit_codec::objmeta::migration::pass::object_rows_within;
use rowkit_codec::objmeta::range::RangeParams;

use super::documents::layout_of;
use super::requests::{OmIo, P, latest_version_range, start_read};
use super::{BucketLayout, ListObject, ObjmetaError, ObjmetaSchema, ObjmetaState};
use crate::children::ChildId;
use crate::operation::{ContextArg, Flow, Operation, Start};
use crate::{RetryPolicy, Timestamp};

/// Skipped entries in a row before the scan restarts at `skipping()`.
const SKIP_STREAK: u32 = 100;

/// The flow of [`ListObject`]: the bucket's vFormat, then the scans fed to the listing
/// algorithm. Output: Arsenal's `result()` object, values as JSON text.
#[derive(Debug)]
pub struct ListObjectFlow {
    bucket: String,
    collection: String,
    phase: ListPhase,
}

#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one phase at a time; boxing buys nothing
enum ListPhase {
    Start(ListingParams),
    /// Reading the bucket's vFormat (not cached).
    VFormat {
        params: ListingParams,
        read: ChildId,
        /// When the read was sent.
        at: Timestamp,
    },
    /// Scanning, every decidable entry fed.
    Scanning(Scanner),
    /// A v1 placeholder master (`key`) waiting for its latest version; the scans go on
    /// buffering meanwhile.
    Resolving {
        scanner: Scanner,
        key: String,
        read: ChildId,
    },
    /// A read gave up because no retry fits before the deadline: the operation ends `Aborted`
    /// there (`objmeta.md` 16.3).
    Doomed,
    Done,
}

/// An open scan.
#[derive(Debug)]
struct Scan {
    /// The read (`None`: its range holds no row of the layout read, so nothing is read).
    id: Option<ChildId>,
    /// Rows received and not fed yet.
    buffer: VecDeque<Row>,
    ended: bool,
    range: RangeParams,
}

/// The listing algorithm and its scans.
#[derive(Debug)]
struct Scanner {
    listing: Listing,
    scans: Vec<Scan>,
    /// Entries skipped in a row.
    streak: u32,
    /// Read only the object rows of this layout: an aware process's truth layout while the
    /// bucket has a migration marker (`None`: the whole range, as Arsenal reads it).
    only_layout: Option<VFormat>,
}

/// Where feeding the scanned entries stopped.
enum Fed {
    /// Every decidable entry was fed; more rows are needed.
    Wait,
    /// The listing is complete.
    Done(Json),
    /// A placeholder master to resolve first.
    Resolve { key: String, read: ChildId },
}

/// Why a read did not produce its rows.
enum Stop {
    /// No retry fits before the deadline.
    Doomed,
    Failed(ObjmetaError),
}

/// A finished read's rows (`Ok(None)` while it runs), or why there are none.
fn finished(io: &mut OmIo, id: ChildId) -> Result<Option<Vec<Row>>, Stop> {
    if io.gave_up(id) {
        return Err(Stop::Doomed);
    }
    io.rows(id).map_err(Stop::Failed)
}

impl<'a> ListObject<'a> {
    /// Lists `bucket` with `params` (`Delimiter`, `DelimiterMaster` or `DelimiterVersions`).
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        params: ListingParams,
        start: Start,
    ) -> ListObject<'a> {
        let flow = ListObjectFlow {
            bucket: bucket.to_string(),
            collection: collection_for_bucket(bucket).to_string(),
            phase: ListPhase::Start(params),
        };
        // The listing's seed stream is its own seed, unsalted, as it always was.
        Operation::begin(ctx.into(), start, RetryPolicy::default(), flow)
    }
}

impl ListObjectFlow {
    /// The listing of the bucket as `layout` says, its scans open.
    fn scan(
        &self,
        io: &mut OmIo,
        st: &ObjmetaState,
        params: ListingParams,
        layout: &BucketLayout,
    ) -> Result<Scanner, ObjmetaError> {
        let vf = layout.vformat;
        let listing = Listing::new(params, vf);
        let md = listing.gen_md_params().map_err(ObjmetaError::internal)?;
        let ranges = match md {
            MdParams::Single(r) => alloc::vec![r],
            MdParams::Pair(m, v) => alloc::vec![m, v],
        };
        let mut scanner = Scanner {
            listing,
            scans: Vec::new(),
            streak: 0,
            // `vFormat` is the truth until the switch flips it (§2.3); the marker is only
            // ever seen by an aware process.
            only_layout: layout.marker.as_ref().map(|_| vf),
        };
        scanner.open(io, st, &self.collection, ranges);
        Ok(scanner)
    }

    /// Ends the listing at the deadline: every read is stopped now.
    fn doom(io: &mut OmIo, scanner: Option<&Scanner>, read: Option<ChildId>) -> ListPhase {
        for id in scanner.iter().flat_map(|s| &s.scans).filter_map(|s| s.id) {
            io.abort(id);
        }
        if let Some(id) = read {
            io.abort(id);
        }
        ListPhase::Doomed
    }
}

impl Scanner {
    fn open(
        &mut self,
        io: &mut OmIo,
        st: &ObjmetaState,
        collection: &str,
        ranges: Vec<RangeParams>,
    ) {
        for range in ranges {
            let whole = range.to_row_range(collection);
            let rows = match self.only_layout {
                None => RowSet::range(whole),
                Some(layout) => RowSet {
                    row_keys: Vec::new(),
                    row_ranges: object_rows_within(collection, layout, &whole),
                },
            };
            // An empty row set would read the whole table: nothing to read instead.
            let id = (!rows.is_whole_table())
                .then(|| start_read(io, st, rows, filters::live_value(), 0));
            self.scans.push(Scan {
                id,
                buffer: VecDeque::new(),
                ended: id.is_none(),
                range,
            });
        }
    }

    /// Moves what the scans produced into their buffers.
    fn drain(&mut self, io: &mut OmIo) -> Result<(), Stop> {
        for scan in self.scans.iter_mut().filter(|s| !s.ended) {
            let Some(id) = scan.id else { continue };
            if io.is_running(id) {
                while let Some(row) = io.next_row(id) {
                    scan.buffer.push_back(row);
                }
                continue;
            }
            if let Some(rows) = finished(io, id)? {
                scan.buffer.extend(rows);
                scan.ended = true;
            }
        }
        Ok(())
    }

    /// Restarts the scans at `skip`, keeping `gt` bounds.
    fn restart(&mut self, io: &mut OmIo, st: &ObjmetaState, collection: &str, skip: Skip) {
        let gtes = match skip {
            Skip::Single(s) => alloc::vec![s],
            Skip::Pair(m, v) => alloc::vec![m, v],
        };
        let mut ranges = Vec::new();
        for (scan, gte) in self.scans.iter().zip(gtes) {
            let mut r = scan.range.clone();
            r.gte = Some(gte);
            ranges.push(r);
        }
        for scan in self.scans.drain(..) {
            if let Some(id) = scan.id.filter(|_| !scan.ended) {
                io.abort(id);
            }
        }
        self.streak = 0;
        self.open(io, st, collection, ranges);
    }

    /// The next entry in key order, if one is decidable now (`Some(None)`: none left).
    fn next_row(&mut self, collection: &str) -> Option<Option<Row>> {
        match self.scans.as_mut_slice() {
            [s] => match s.buffer.pop_front() {
                Some(r) => Some(Some(r)),
                None if s.ended => Some(None),
                None => None,
            },
            [a, b] => {
                let ready = |s: &Scan| s.ended || !s.buffer.is_empty();
                if !ready(a) || !ready(b) {
                    return None;
                }
                // Masters and versions merge by object key (the Arsenal key after its prefix).
                let key = |r: &Row| {
                    arsenal_key(collection, r)
                        .chars()
                        .skip(2)
                        .collect::<String>()
                };
                let pick_b = match (a.buffer.front(), b.buffer.front()) {
                    (None, None) => return Some(None),
                    (Some(_), None) => false,
                    (None, Some(_)) => true,
                    (Some(x), Some(y)) => cmp_utf16(&key(x), &key(y)) == Ordering::Greater,
                };
                Some(if pick_b {
                    b.buffer.pop_front()
                } else {
                    a.buffer.pop_front()
                })
            }
            _ => Some(None),
        }
    }

    /// Feeds every decidable entry to the algorithm.
    fn pump(
        &mut self,
        io: &mut OmIo,
        st: &ObjmetaState,
        collection: &str,
    ) -> Result<Fed, ObjmetaError> {
        while let Some(next) = self.next_row(collection) {
            let Some(row) = next else {
                return Ok(Fed::Done(self.listing.result()));
            };
            let key = arsenal_key(collection, &row);
            let Some(doc) = StoredDoc::from_row(&row).map_err(ObjmetaError::internal)? else {
                continue;
            };
            let vf = self.listing.vformat();
            if vf == VFormat::V1 && self.scans.len() == 1 && doc.value.member_truthy("isPHD") {
                let object_key = key.strip_prefix(MASTER_PREFIX).unwrap_or(&key);
                let range = latest_version_range(collection, vf, object_key);
                let read = start_read(io, st, RowSet::range(range), filters::live_value(), 1);
                return Ok(Fed::Resolve { key, read });
            }
            if let Some(result) = self.feed(io, st, collection, &key, &entry_value(doc)) {
                return Ok(Fed::Done(result));
            }
        }
        Ok(Fed::Wait)
    }

    /// Feeds one entry; the result once the algorithm says `FILTER_END`.
    fn feed(
        &mut self,
        io: &mut OmIo,
        st: &ObjmetaState,
        collection: &str,
        key: &str,
        value: &str,
    ) -> Option<Json> {
        let code = self.listing.filter(key, value);
        let skip = self.listing.skipping();
        if code == FILTER_END {
            return Some(self.listing.result());
        }
        if code == FILTER_SKIP
            && let Some(skip) = skip
        {
            self.streak += 1;
            if self.streak >= SKIP_STREAK {
                // Restarting where a single scan already starts would go nowhere.
                let same = match (&skip, self.scans.first()) {
                    (Skip::Single(s), Some(scan)) => scan.range.gte.as_deref() == Some(s.as_str()),
                    _ => false,
                };
                if same {
                    self.streak = 1;
                } else {
                    self.restart(io, st, collection, skip);
                }
            }
        } else {
            self.streak = 0;
        }
        None
    }
}

fn arsenal_key(collection: &str, row: &Row) -> String {
    let n = collection.len() + 1;
    String::from_utf8_lossy(row.key.get(n..).unwrap_or(&[])).into_owned()
}

/// Value text of an entry: tags unescaped, top-level `location` removed.
fn entry_value(doc: StoredDoc) -> String {
    let mut v = doc.value;
    unescape_tags(&mut v);
    if let Some(o) = v.as_object_mut() {
        o.remove("location");
    }
    v.stringify()
}

impl Flow for ListObjectFlow {
    type Schema = ObjmetaSchema;
    type Output = Json;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<Json> {
        loop {
            match core::mem::replace(&mut self.phase, ListPhase::Done) {
                ListPhase::Start(params) => {
                    self.phase = match st.cached_layout(&self.bucket, io.now()) {
                        Some(layout) => ListPhase::Scanning(self.scan(io, st, params, &layout)?),
                        None => {
                            let rows = RowSet::key(row_key(METASTORE, &self.bucket));
                            let read = start_read(io, st, rows, filters::latest(), 0);
                            ListPhase::VFormat {
                                params,
                                read,
                                at: io.now(),
                            }
                        }
                    };
                }
                ListPhase::VFormat { params, read, at } => {
                    let rows = match finished(io, read) {
                        Ok(Some(rows)) => rows,
                        Ok(None) => {
                            self.phase = ListPhase::VFormat { params, read, at };
                            return Ok(None);
                        }
                        Err(Stop::Doomed) => {
                            self.phase = ListPhase::Doomed;
                            continue;
                        }
                        Err(Stop::Failed(e)) => return Err(e),
                    };
                    // An unreadable metastore document lists as v0, as an absent one does;
                    // a damaged marker (an aware process) is an error.
                    let layout = match layout_of(st, rows.first(), at) {
                        Ok(Some(layout)) => {
                            st.cache_layout(&self.bucket, &layout);
                            layout
                        }
                        Err(e @ ObjmetaError::MigrationRecordInvalid { .. }) => return Err(e),
                        _ => BucketLayout {
                            vformat: VFormat::V0,
                            marker: None,
                            read_at: at,
                        },
                    };
                    self.phase = ListPhase::Scanning(self.scan(io, st, params, &layout)?);
                }
                ListPhase::Scanning(mut scanner) => {
                    match scanner.drain(io) {
                        Ok(()) => {}
                        Err(Stop::Doomed) => {
                            self.phase = Self::doom(io, Some(&scanner), None);
                            continue;
                        }
                        Err(Stop::Failed(e)) => return Err(e),
                    }
                    match scanner.pump(io, st, &self.collection)? {
                        Fed::Wait => {
                            self.phase = ListPhase::Scanning(scanner);
                            return Ok(None);
                        }
                        Fed::Done(result) => return Ok(Some(result)),
                        Fed::Resolve { key, read } => {
                            self.phase = ListPhase::Resolving { scanner, key, read };
                        }
                    }
                }
                ListPhase::Resolving {
                    mut scanner,
                    key,
                    read,
                } => {
                    match scanner.drain(io) {
                        Ok(()) => {}
                        Err(Stop::Doomed) => {
                            self.phase = Self::doom(io, Some(&scanner), Some(read));
                            continue;
                        }
                        Err(Stop::Failed(e)) => return Err(e),
                    }
                    let rows = match finished(io, read) {
                        Ok(Some(rows)) => rows,
                        Ok(None) => {
                            self.phase = ListPhase::Resolving { scanner, key, read };
                            return Ok(None);
                        }
                        Err(Stop::Doomed) => {
                            self.phase = Self::doom(io, Some(&scanner), None);
                            continue;
                        }
                        Err(Stop::Failed(e)) => return Err(e),
                    };
                    if let Some(doc) = rows
                        .first()
                        .map(StoredDoc::from_row)
                        .transpose()
                        .map_err(ObjmetaError::internal)?
                        .flatten()
                    {
                        // Resolved entries keep `location` (quirk 11).
                        let mut v = doc.value;
                        unescape_tags(&mut v);
                        let value = v.stringify();
                        let collection = &self.collection;
                        if let Some(result) = scanner.feed(io, st, collection, &key, &value) {
                            return Ok(Some(result));
                        }
                    }
                    self.phase = ListPhase::Scanning(scanner);
                }
                ListPhase::Doomed => {
                    self.phase = ListPhase::Doomed;
                    return Ok(None);
                }
                ListPhase::Done => return Ok(None),
            }
        }
    }
}
