//! The `ListObject` machine (`objmeta.md` 10.1): rows stream from one scan (or a master /
//! version pair merged by key) into the listing algorithm of
//! [`rowkit_codec::objmeta::listing`]; v1 placeholder masters are resolved one at a time;
//! a streak of 100 skipped entries restarts the scan(s) at the algorithm's `skipping()` key;
//! `FILTER_END` aborts the open scans.

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
use rowkit_codec::objmeta::range::RangeParams;

use super::engine::StateSlot;
use super::ops::latest_version_range;
use super::{DEFAULT_DEADLINE_US, ObjmetaError, ObjmetaEvent, ObjmetaState};
use crate::readrows::ReadRows;
use crate::{
    Machine, ReadRowsRequest, Request, Response, RetryPolicy, SplitMix64, StoreError, Tag,
    Timestamp,
};

/// Skipped entries in a row before the scan restarts at `skipping()`.
const SKIP_STREAK: u32 = 100;

#[derive(Debug)]
struct Scan {
    slot: u64,
    machine: ReadRows,
    buffer: VecDeque<Row>,
    ended: bool,
    range: RangeParams,
}

#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Phase {
    /// Reading the bucket's vFormat (not cached).
    VFormat {
        slot: u64,
        machine: ReadRows,
        rows: Vec<Row>,
    },
    /// Scanning; `resolving` = a PHD entry waiting for its latest version.
    Scanning,
    Done,
}

#[derive(Debug)]
struct Resolving {
    slot: u64,
    machine: ReadRows,
    rows: Vec<Row>,
    key: String,
}

/// Lists a bucket with `Delimiter`, `DelimiterMaster` or `DelimiterVersions`. Output:
/// Arsenal's `result()` object, values as JSON text.
#[derive(Debug)]
pub struct ListObject<'a> {
    state: StateSlot<'a>,
    bucket: String,
    collection: String,
    params: ListingParams,
    listing: Option<Listing>,
    phase: Phase,
    scans: Vec<Scan>,
    resolving: Option<Resolving>,
    streak: u32,
    slot: u64,
    rng: SplitMix64,
    table: String,
    last_now: Timestamp,
    deadline: Timestamp,
    scans_started: u64,
    rows_scanned: u64,
    aborts: VecDeque<Tag>,
    doomed: bool,
    outcome: Option<Result<Json, ObjmetaError>>,
}

impl ListObject<'static> {
    /// Starts a listing of `bucket` at `now` with a state of its own (a host that runs
    /// several operations at once, e.g. the fault simulator, gives each its own state).
    pub fn with_state(
        bucket: &str,
        params: ListingParams,
        state: ObjmetaState,
        now: Timestamp,
        seed: u64,
        deadline: Option<Timestamp>,
    ) -> ListObject<'static> {
        ListObject::build(bucket, params, StateSlot::Owned(state), now, seed, deadline)
    }
}

impl<'a> ListObject<'a> {
    /// Starts a listing of `bucket` at `now`.
    pub fn new(
        bucket: &str,
        params: ListingParams,
        state: &'a mut ObjmetaState,
        now: Timestamp,
        seed: u64,
        deadline: Option<Timestamp>,
    ) -> ListObject<'a> {
        ListObject::build(
            bucket,
            params,
            StateSlot::Borrowed(state),
            now,
            seed,
            deadline,
        )
    }

    fn build(
        bucket: &str,
        params: ListingParams,
        mut state: StateSlot<'a>,
        now: Timestamp,
        seed: u64,
        deadline: Option<Timestamp>,
    ) -> ListObject<'a> {
        let table = state.get().config.table.clone();
        let mut m = ListObject {
            bucket: bucket.to_string(),
            collection: collection_for_bucket(bucket).to_string(),
            params,
            listing: None,
            phase: Phase::Done,
            scans: Vec::new(),
            resolving: None,
            streak: 0,
            slot: 0,
            rng: SplitMix64::new(seed),
            table,
            last_now: now,
            deadline: deadline.unwrap_or(now.saturating_add_micros(DEFAULT_DEADLINE_US)),
            scans_started: 0,
            rows_scanned: 0,
            aborts: VecDeque::new(),
            doomed: false,
            outcome: None,
            state,
        };
        match m.state.get().cached_vformat(bucket) {
            Some(vf) => m.start(vf),
            None => {
                let req = m.read_request(
                    RowSet::key(row_key(METASTORE, bucket)),
                    filters::latest(),
                    0,
                );
                let (slot, machine) = m.child(req);
                m.phase = Phase::VFormat {
                    slot,
                    machine,
                    rows: Vec::new(),
                };
            }
        }
        m
    }

    /// Scans started so far (a skip restart adds one per range).
    pub fn scans_started(&self) -> u64 {
        self.scans_started
    }

    /// Rows received from the scans (not counting PHD resolutions).
    pub fn rows_scanned(&self) -> u64 {
        self.rows_scanned
    }

    fn read_request(
        &self,
        rows: RowSet,
        filter: rowkit_codec::model::RowFilter,
        limit: i64,
    ) -> ReadRowsRequest {
        ReadRowsRequest {
            table: self.table.clone(),
            rows,
            filter: Some(filter),
            rows_limit: limit,
            ..Default::default()
        }
    }

    fn child(&mut self, req: ReadRowsRequest) -> (u64, ReadRows) {
        self.slot += 1;
        let policy = RetryPolicy {
            operation_timeout: self.deadline.0.saturating_sub(self.last_now.0).max(0),
            ..RetryPolicy::default()
        };
        (
            self.slot,
            ReadRows::new(req, self.last_now, self.rng.next_u64(), policy),
        )
    }

    fn finish(&mut self, outcome: Result<Json, ObjmetaError>) {
        let now = self.last_now;
        let stop = |slot: u64, m: &mut ReadRows, aborts: &mut VecDeque<Tag>| {
            m.cancel(now);
            while let Some(t) = m.poll_abort() {
                aborts.push_back(Tag(slot << 32 | t.0));
            }
        };
        for s in &mut self.scans {
            if !s.ended {
                stop(s.slot, &mut s.machine, &mut self.aborts);
            }
        }
        self.scans.clear();
        if let Some(mut r) = self.resolving.take() {
            stop(r.slot, &mut r.machine, &mut self.aborts);
        }
        if let Phase::VFormat { slot, machine, .. } = &mut self.phase {
            stop(*slot, machine, &mut self.aborts);
        }
        self.phase = Phase::Done;
        self.outcome = Some(outcome);
    }

    fn start(&mut self, vf: VFormat) {
        let listing = Listing::new(self.params.clone(), vf);
        let md = match listing.gen_md_params() {
            Ok(md) => md,
            Err(e) => return self.finish(Err(ObjmetaError::internal(e))),
        };
        self.listing = Some(listing);
        self.phase = Phase::Scanning;
        let ranges = match md {
            MdParams::Single(r) => alloc::vec![r],
            MdParams::Pair(m, v) => alloc::vec![m, v],
        };
        self.open_scans(ranges);
        self.pump();
    }

    fn open_scans(&mut self, ranges: Vec<RangeParams>) {
        for range in ranges {
            let req = self.read_request(
                RowSet::range(range.to_row_range(&self.collection)),
                filters::live_value(),
                0,
            );
            let (slot, machine) = self.child(req);
            self.scans_started += 1;
            self.scans.push(Scan {
                slot,
                machine,
                buffer: VecDeque::new(),
                ended: false,
                range,
            });
        }
    }

    /// Restarts the scans at `skip`, keeping `gt` bounds.
    fn restart(&mut self, skip: Skip) {
        let gtes = match skip {
            Skip::Single(s) => alloc::vec![s],
            Skip::Pair(m, v) => alloc::vec![m, v],
        };
        let mut ranges = Vec::new();
        for (scan, gte) in self.scans.iter_mut().zip(gtes) {
            if !scan.ended {
                scan.machine.cancel(self.last_now);
                while let Some(t) = scan.machine.poll_abort() {
                    self.aborts.push_back(Tag(scan.slot << 32 | t.0));
                }
            }
            let mut r = scan.range.clone();
            r.gte = Some(gte);
            ranges.push(r);
        }
        self.scans.clear();
        self.streak = 0;
        self.open_scans(ranges);
    }

    fn arsenal_key(&self, row: &Row) -> String {
        let n = self.collection.len() + 1;
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

    /// Takes the next entry in key order, if one is decidable now.
    fn next_row(&mut self) -> Option<Option<Row>> {
        match self.scans.len() {
            1 => {
                let s = &mut self.scans[0];
                match s.buffer.pop_front() {
                    Some(r) => Some(Some(r)),
                    None if s.ended => Some(None),
                    None => None,
                }
            }
            2 => {
                let ready = |s: &Scan| s.ended || !s.buffer.is_empty();
                if !ready(&self.scans[0]) || !ready(&self.scans[1]) {
                    return None;
                }
                let key = |r: &Row, me: &ListObject<'_>| {
                    let k = me.arsenal_key(r);
                    k.chars().skip(2).collect::<String>()
                };
                let pick = match (self.scans[0].buffer.front(), self.scans[1].buffer.front()) {
                    (None, None) => return Some(None),
                    (Some(_), None) => 0,
                    (None, Some(_)) => 1,
                    (Some(a), Some(b)) => {
                        if cmp_utf16(&key(a, self), &key(b, self)) == Ordering::Greater {
                            1
                        } else {
                            0
                        }
                    }
                };
                Some(self.scans[pick].buffer.pop_front())
            }
            _ => Some(None),
        }
    }

    /// Feeds every decidable entry to the algorithm.
    fn pump(&mut self) {
        while matches!(self.phase, Phase::Scanning) && self.resolving.is_none() {
            let Some(next) = self.next_row() else { return };
            let Some(row) = next else {
                let result = self
                    .listing
                    .as_ref()
                    .map(Listing::result)
                    .unwrap_or_default();
                return self.finish(Ok(result));
            };
            let key = self.arsenal_key(&row);
            let doc = match StoredDoc::from_row(&row) {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                Err(e) => return self.finish(Err(ObjmetaError::internal(e))),
            };
            let vf = self.listing.as_ref().map_or(VFormat::V0, Listing::vformat);
            if vf == VFormat::V1 && self.scans.len() == 1 && doc.value.member_truthy("isPHD") {
                let object_key = key.strip_prefix(MASTER_PREFIX).unwrap_or(&key).to_string();
                let range = latest_version_range(&self.collection, vf, &object_key);
                let req = self.read_request(RowSet::range(range), filters::live_value(), 1);
                let (slot, machine) = self.child(req);
                self.resolving = Some(Resolving {
                    slot,
                    machine,
                    rows: Vec::new(),
                    key,
                });
                return;
            }
            let value = ListObject::entry_value(doc);
            self.feed(&key, &value);
        }
    }

    fn feed(&mut self, key: &str, value: &str) {
        let Some(listing) = self.listing.as_mut() else {
            return;
        };
        let code = listing.filter(key, value);
        let skip = listing.skipping();
        if code == FILTER_END {
            let result = listing.result();
            return self.finish(Ok(result));
        }
        if code == FILTER_SKIP
            && let Some(skip) = skip
        {
            self.streak += 1;
            if self.streak >= SKIP_STREAK {
                let same = match (&skip, self.scans.first()) {
                    (Skip::Single(s), Some(scan)) => scan.range.gte.as_deref() == Some(s.as_str()),
                    _ => false,
                };
                if same {
                    self.streak = 1;
                } else {
                    self.restart(skip);
                }
            }
        } else {
            self.streak = 0;
        }
    }

    fn resolved(&mut self, result: Result<Vec<Row>, StoreError>) {
        let Some(r) = self.resolving.take() else {
            return;
        };
        let rows = match result {
            Ok(rows) => rows,
            Err(e) if e.code.is_retryable() => {
                self.doomed = true;
                return;
            }
            Err(e) => return self.finish(Err(ObjmetaError::internal(e))),
        };
        match rows.first().map(StoredDoc::from_row) {
            None | Some(Ok(None)) => {}
            Some(Err(e)) => return self.finish(Err(ObjmetaError::internal(e))),
            Some(Ok(Some(doc))) => {
                // Resolved entries keep `location` (quirk 11).
                let mut v = doc.value;
                unescape_tags(&mut v);
                self.feed(&r.key, &v.stringify());
            }
        }
        self.pump();
    }

    /// Drains a child after an input: rows, aborts, its end.
    fn settle(&mut self, slot: u64) {
        if self.doomed {
            return;
        }
        if let Phase::VFormat {
            slot: s,
            machine,
            rows,
        } = &mut self.phase
            && *s == slot
        {
            while let Some(r) = machine.poll_event() {
                rows.push(r);
            }
            match machine.result() {
                Some(Ok(_)) => {
                    let vf = match rows.first().map(StoredDoc::from_row) {
                        Some(Ok(Some(doc))) => {
                            let vf = doc
                                .vformat
                                .as_ref()
                                .and_then(Json::as_str)
                                .map_or(VFormat::V0, VFormat::from_stored);
                            self.state.get().cache_vformat(&self.bucket, vf);
                            vf
                        }
                        _ => VFormat::V0,
                    };
                    self.start(vf);
                }
                Some(Err(e)) if e.code.is_retryable() => self.doomed = true,
                Some(Err(e)) => self.finish(Err(ObjmetaError::internal(e))),
                None => {}
            }
            return;
        }
        if let Some(r) = self.resolving.as_mut()
            && r.slot == slot
        {
            while let Some(row) = r.machine.poll_event() {
                r.rows.push(row);
            }
            if let Some(result) = r.machine.result() {
                let rows = core::mem::take(&mut r.rows);
                self.resolved(result.map(|_| rows));
            }
            return;
        }
        let mut failed = None;
        if let Some(scan) = self.scans.iter_mut().find(|s| s.slot == slot) {
            while let Some(row) = scan.machine.poll_event() {
                self.rows_scanned += 1;
                scan.buffer.push_back(row);
            }
            match scan.machine.result() {
                Some(Ok(_)) => scan.ended = true,
                Some(Err(e)) => failed = Some(e),
                None => {}
            }
        }
        if let Some(e) = failed {
            if e.code.is_retryable() {
                // The nested read gave up because no retry fits before the deadline: the
                // operation ends `Aborted` at the deadline (`objmeta.md` 16.3).
                self.doomed = true;
                return;
            }
            return self.finish(Err(ObjmetaError::internal(e)));
        }
        self.pump();
    }

    fn children(&mut self) -> Vec<(u64, &mut ReadRows)> {
        let mut v: Vec<(u64, &mut ReadRows)> = Vec::new();
        if let Phase::VFormat { slot, machine, .. } = &mut self.phase {
            v.push((*slot, machine));
        }
        if let Some(r) = self.resolving.as_mut() {
            v.push((r.slot, &mut r.machine));
        }
        for s in self.scans.iter_mut().filter(|s| !s.ended) {
            v.push((s.slot, &mut s.machine));
        }
        v
    }
}

impl Machine for ListObject<'_> {
    type Output = Json;
    type Event = ObjmetaEvent;
    type Error = ObjmetaError;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) {
        self.last_now = self.last_now.max(now);
        if self.outcome.is_some() || matches!(self.phase, Phase::Done) {
            return;
        }
        let slot = tag.0 >> 32;
        let inner = Tag(tag.0 & 0xffff_ffff);
        let now = self.last_now;
        let mut hit = false;
        for (s, m) in self.children() {
            if s == slot {
                m.handle_response(inner, response.clone(), now);
                hit = true;
            }
        }
        if hit {
            self.settle(slot);
        }
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        self.last_now = self.last_now.max(now);
        if matches!(self.phase, Phase::Done) {
            return;
        }
        if self.last_now >= self.deadline {
            return self.finish(Err(ObjmetaError::Aborted));
        }
        let now = self.last_now;
        let slots: Vec<u64> = self
            .children()
            .into_iter()
            .map(|(s, m)| {
                m.handle_timeout(now);
                s
            })
            .collect();
        for s in slots {
            if !matches!(self.phase, Phase::Done) {
                self.settle(s);
            }
        }
    }

    fn cancel(&mut self, now: Timestamp) {
        self.last_now = self.last_now.max(now);
        if !matches!(self.phase, Phase::Done) {
            self.finish(Err(ObjmetaError::Aborted));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.children()
            .into_iter()
            .find_map(|(s, m)| m.poll_request().map(|(t, r)| (Tag(s << 32 | t.0), r)))
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        if let Some(t) = self.aborts.pop_front() {
            return Some(t);
        }
        self.children()
            .into_iter()
            .find_map(|(s, m)| m.poll_abort().map(|t| Tag(s << 32 | t.0)))
    }

    fn poll_event(&mut self) -> Option<ObjmetaEvent> {
        None
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        if matches!(self.phase, Phase::Done) {
            return None;
        }
        let mut t = self.deadline;
        if self.doomed {
            return Some(t);
        }
        let mut consider = |m: &ReadRows| {
            if let Some(x) = m.poll_timeout() {
                t = t.min(x);
            }
        };
        if let Phase::VFormat { machine, .. } = &self.phase {
            consider(machine);
        }
        if let Some(r) = &self.resolving {
            consider(&r.machine);
        }
        for s in self.scans.iter().filter(|s| !s.ended) {
            consider(&s.machine);
        }
        Some(t)
    }

    fn result(&mut self) -> Option<Result<Json, ObjmetaError>> {
        self.outcome.take()
    }
}
