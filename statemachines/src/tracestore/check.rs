//! `Check` of a trace store table (`spec/check.md` §2), in either layout.
//!
//! Digest-id layout: the id counter is read first and the digest map scanned into a bitmap of
//! the ids it holds (its size is the counter's, bounded by [`MAX_ID_BITS`]). Then every row
//! is scanned page by page and classified by its key; the trace rows of a page are checked
//! against their tiles' OPS rows, read by key after the page (a writer updates a tile's OPS
//! before it writes a trace row, so an OPS read after the trace row holds its params). A trace
//! cell's id the map or the counter did not know yet may have been assigned after they were
//! read: such cells are held, and judged after the counter is read and the map scanned again.
//! Nothing here is repairable (the spec allows no repair of a trace store): findings are
//! reported.
//!
//! A table that was the source of a layout migration past its switch (its marker row
//! `:rk:m:0000000000:`, read first, says `role: source` and `switched` or `cleaning`,
//! `docs/migration.md` §6.3) is also compared, after the scan, with the target its marker
//! names: every point it holds that the target neither holds (same `ts` and digest) nor
//! supersedes (a newer cell at that column) is `write_after_switch` — a Gold writer still on
//! the old table ([`UnsettledPoints`], the sweep's own definition).

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rowkit_codec::escape::escape;
use rowkit_codec::model::{Cell, Row, RowRange, RowSet};
use rowkit_codec::tracestore::cells::{
    COLUMN_HASH, COLUMN_ID_COUNTER, COLUMN_OPS, COLUMN_OPTIONS, FAMILY_DIGEST_MAP,
    FAMILY_ID_COUNTER, FAMILY_OPS, FAMILY_OPTIONS, FAMILY_TRACE, decode_digest_id_cell,
    decode_digest_map_value, decode_id_counter,
};
use rowkit_codec::tracestore::gob::{decode_ops_gob, ops_hash};
use rowkit_codec::tracestore::keys::{
    self, GLOBAL_TILE_KEY, RowType, SHARDS, TYPE_DIGEST_MAP, decode_row_key, parse_trace_qualifier,
};
use rowkit_codec::tracestore::layout::Layout;
use rowkit_codec::tracestore::ops::{OrderedParamSet, parse_options_text};

use super::migrate::TablePair;
use super::migrate::compare::UnsettledPoints;
use super::migrate::marker::TraceMigrationRead;
use super::state::TraceStoreState;
use crate::check::{
    CheckError, CheckEvent, CheckOptions, CheckProgress, CheckSummary, CheckTarget, Checking,
    Finding, PagedScan, PointReads, Report, RowsByKey,
};
use crate::operation::{ContextArg, Flow, Io, Nested, Operation, Start};
use rowkit_codec::migration::{MarkerRole, MigrationState};
use rowkit_codec::tracestore::keys::migration_row_name;

/// The schema name in findings.
const SCHEMA: &str = "gold";
/// Most ids the digest-map bitmap covers (32 MiB); beyond, the id checks are skipped with a
/// note in the summary.
pub const MAX_ID_BITS: u64 = 1 << 28;

/// A check of a trace store table.
pub type Check = Operation<'static, CheckFlow>;

impl Check {
    /// Checks `target.table`, a table of `layout`, as `start` says.
    pub fn new(target: CheckTarget, layout: Layout, options: CheckOptions, start: Start) -> Check {
        let flow = CheckFlow {
            layout,
            options,
            scan: PagedScan::new(&target.table, RowSet::all(), None, options.page_rows),
            report: Report::default(),
            ids: None,
            held: Vec::new(),
            after_switch: None,
            phase: Phase::Marker(None),
        };
        let retry = target.retry;
        Operation::begin(ContextArg::owned(target), start, retry, flow)
    }
}

/// What the digest map and the counter hold, as last read.
#[derive(Debug)]
struct KnownIds {
    /// The counter's value (one more than the highest id reserved); `None` when the cell was
    /// bad (the counter checks are then skipped).
    counter: Option<u64>,
    /// Bit `id` set when the map holds `id`.
    bits: Vec<u64>,
}

impl KnownIds {
    fn holds(&self, id: u64) -> bool {
        let word = usize::try_from(id / 64).unwrap_or(usize::MAX);
        self.bits
            .get(word)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    /// Sets `id`; `false` if it was set already.
    fn insert(&mut self, id: u64) -> bool {
        let Ok(word) = usize::try_from(id / 64) else {
            return true;
        };
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        let bit = 1 << (id % 64);
        let new = self.bits[word] & bit == 0;
        self.bits[word] |= bit;
        new
    }
}

/// A trace cell whose id was not known when it was read.
#[derive(Debug)]
struct HeldId {
    row_key: Vec<u8>,
    qualifier: Vec<u8>,
    id: u64,
}

#[derive(Debug)]
enum Phase {
    /// The migration marker row being read (`None`: not yet asked).
    Marker(Option<PointReads>),
    /// The id counter being read (`None`: not yet asked). `rescan` is set on a re-read.
    Counter(Option<(PointReads, bool)>),
    /// The digest map being scanned (`rescan`: for held ids, reporting nothing new).
    Map {
        scan: PagedScan,
        rescan: bool,
    },
    /// Reading the next page of the table.
    Scan,
    /// After the scan: the table compared with the target of its switched migration.
    AfterSwitch(Box<Nested<UnsettledPoints<'static>>>),
    /// The OPS rows of the page's trace rows being read.
    Ops {
        reads: PointReads,
        traces: Vec<Row>,
    },
    Done,
}

/// The flow of [`Check`].
#[derive(Debug)]
pub struct CheckFlow {
    layout: Layout,
    options: CheckOptions,
    scan: PagedScan,
    report: Report,
    /// Digest-id layout: the ids known (`None` before the map was read, and when the id
    /// checks are skipped).
    ids: Option<KnownIds>,
    held: Vec<HeldId>,
    /// This table and the target of its switched migration (from the marker), whose points
    /// it is compared with after the scan.
    after_switch: Option<TablePair>,
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
                Phase::Marker(None) => {
                    let reads =
                        PointReads::start(io, &target.table, alloc::vec![migration_row_name()]);
                    self.phase = Phase::Marker(Some(reads));
                }
                Phase::Marker(Some(mut reads)) => {
                    let Some(found) = reads.poll(io)? else {
                        self.phase = Phase::Marker(Some(reads));
                        return Ok(None);
                    };
                    self.after_switch = switched_target(
                        &target.table,
                        self.layout,
                        found.get(&migration_row_name()),
                    );
                    self.phase = match self.layout {
                        Layout::DigestId => Phase::Counter(None),
                        Layout::Md5 => Phase::Scan,
                    };
                }
                Phase::Counter(None) => {
                    let reads = PointReads::start(io, &target.table, alloc::vec![counter_row()]);
                    self.phase = Phase::Counter(Some((reads, false)));
                }
                Phase::Counter(Some((mut reads, rescan))) => {
                    let Some(found) = reads.poll(io)? else {
                        self.phase = Phase::Counter(Some((reads, rescan)));
                        return Ok(None);
                    };
                    let counter = self.counter(io, &found, rescan);
                    self.ids = match counter {
                        Some(c) if c > MAX_ID_BITS => {
                            if !rescan {
                                self.report.note(format!(
                                    "id checks skipped: the id counter ({c}) is above the \
                                     {MAX_ID_BITS} ids the check holds in memory"
                                ));
                            }
                            None
                        }
                        _ => Some(KnownIds {
                            counter,
                            bits: Vec::new(),
                        }),
                    };
                    let scan =
                        PagedScan::new(&target.table, map_rows(), None, self.options.page_rows);
                    self.phase = Phase::Map { scan, rescan };
                }
                Phase::Map { mut scan, rescan } => {
                    let Some(page) = scan.poll(io)? else {
                        self.phase = Phase::Map { scan, rescan };
                        return Ok(None);
                    };
                    for row in &page {
                        self.map_row(io, row, rescan);
                    }
                    if !scan.is_done() {
                        self.phase = Phase::Map { scan, rescan };
                        continue;
                    }
                    if rescan {
                        self.judge_held(io);
                    }
                    self.phase = Phase::Scan;
                }
                Phase::Scan => {
                    if !self.held.is_empty()
                        && (self.scan.is_done() || self.held.len() >= self.options.max_pending)
                    {
                        let reads =
                            PointReads::start(io, &target.table, alloc::vec![counter_row()]);
                        self.phase = Phase::Counter(Some((reads, true)));
                        continue;
                    }
                    if self.scan.is_done() {
                        let Some(pair) = self.after_switch.take() else {
                            return Ok(Some(self.report.finish()));
                        };
                        let start = io.child_start();
                        let compare = UnsettledPoints::new(ContextArg::owned(pair), start);
                        self.phase = Phase::AfterSwitch(Box::new(Nested::start(io, compare)));
                        continue;
                    }
                    let Some(page) = self.scan.poll(io)? else {
                        self.phase = Phase::Scan;
                        return Ok(None);
                    };
                    self.report.scanned(io, page.len());
                    let traces = self.check_page(io, page);
                    let tiles: Vec<Vec<u8>> = traces
                        .iter()
                        .filter_map(|r| decode_row_key(&r.key).ok())
                        .map(|k| keys::ops_row_name(k.tile_key))
                        .collect();
                    let reads = PointReads::start(io, &target.table, tiles);
                    self.phase = Phase::Ops { reads, traces };
                }
                Phase::Ops { mut reads, traces } => {
                    let Some(found) = reads.poll(io)? else {
                        self.phase = Phase::Ops { reads, traces };
                        return Ok(None);
                    };
                    let mut decoded: BTreeMap<Vec<u8>, Option<OrderedParamSet>> = BTreeMap::new();
                    for row in &traces {
                        self.trace_row(io, row, &found, &mut decoded);
                    }
                    self.phase = Phase::Scan;
                }
                Phase::AfterSwitch(mut compare) => {
                    let Some(result) = compare.advance(io, |_, _| {}) else {
                        self.phase = Phase::AfterSwitch(compare);
                        return Ok(None);
                    };
                    match result {
                        Ok(points) => {
                            for p in points {
                                let detail = format!(
                                    "trace {} at commit {} holds {} (ts {}), which the target of \
                                     the switched migration neither holds nor supersedes",
                                    p.trace,
                                    p.commit,
                                    if p.digest.is_empty() {
                                        "a missing digest"
                                    } else {
                                        &p.digest
                                    },
                                    p.ts.0
                                );
                                self.report
                                    .finding(io, finding("write_after_switch", &p.row_key, detail));
                            }
                        }
                        Err(super::TraceStoreError::Aborted) => return Err(CheckError::Aborted),
                        // The target gone or unreadable: the rest of the check stands.
                        Err(e) => self.report.note(format!(
                            "write_after_switch not checked: the target of the switched \
                             migration could not be read: {e}"
                        )),
                    }
                    return Ok(Some(self.report.finish()));
                }
                Phase::Done => return Err(CheckError::Aborted),
            }
        }
    }
}

/// The pair this table (`table`, of `layout`) and its migration's target form when the
/// marker row `row` says the table is a source past its switch (§6.3); `None` otherwise —
/// also for a marker that does not decode (the migrator reports that).
fn switched_target(table: &str, layout: Layout, row: Option<&Row>) -> Option<TablePair> {
    let marker = TraceMigrationRead::from_row(row).ok()?.marker?;
    let past_switch = matches!(
        marker.state,
        MigrationState::Switched | MigrationState::Cleaning
    );
    if marker.role != Some(MarkerRole::Source) || !past_switch || marker.from != layout {
        return None;
    }
    let target = marker.target_table?;
    Some(TablePair::new(
        TraceStoreState::new(table, layout),
        TraceStoreState::new(&target, marker.to),
    ))
}

/// `:ts:i:0000000000:`.
fn counter_row() -> Vec<u8> {
    keys::id_counter_row_name()
}

/// The digest map: `SS:ts:d:0000000000:` of every shard.
fn map_rows() -> RowSet {
    RowSet {
        row_keys: Vec::new(),
        row_ranges: (0..SHARDS)
            .map(|s| RowRange::prefix(&keys::shard_prefix(s, TYPE_DIGEST_MAP, GLOBAL_TILE_KEY)))
            .collect(),
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

/// The newest cell of each column of `family`, in column order (what `LatestN(1)` reads).
fn latest<'r>(row: &'r Row, family: &str) -> Vec<&'r Cell> {
    let mut out: Vec<&Cell> = Vec::new();
    for cell in row.cells.iter().filter(|c| c.family == family) {
        match out.iter_mut().find(|c| c.qualifier == cell.qualifier) {
            Some(seen) if seen.timestamp < cell.timestamp => *seen = cell,
            Some(_) => {}
            None => out.push(cell),
        }
    }
    out
}

fn column(cell: &Cell) -> String {
    format!("{}:{}", cell.family, escape(&cell.qualifier))
}

impl CheckFlow {
    /// The counter's value from its row (`counter_bad` reported on the first read).
    fn counter(&mut self, io: &mut Io<CheckEvent>, found: &RowsByKey, rescan: bool) -> Option<u64> {
        let Some(row) = found.get(&counter_row()) else {
            return Some(0);
        };
        let Some(cell) = latest(row, FAMILY_ID_COUNTER)
            .into_iter()
            .find(|c| c.qualifier == COLUMN_ID_COUNTER)
        else {
            return Some(0);
        };
        match decode_id_counter(&cell.value) {
            Ok(v) => Some(u64::try_from(v).unwrap_or(0)),
            Err(_) => {
                if !rescan {
                    let detail = format!(
                        "I:idc holds {} bytes ({}), not an 8-byte counter",
                        cell.value.len(),
                        escape(&cell.value)
                    );
                    self.report
                        .finding(io, finding("counter_bad", &row.key, detail));
                }
                None
            }
        }
    }

    /// One digest-map row: each column's id recorded, bad values and conflicts reported (on
    /// the first scan only). Rows under the wrong shard are left to the main scan.
    fn map_row(&mut self, io: &mut Io<CheckEvent>, row: &Row, rescan: bool) {
        if decode_row_key(&row.key).map_or(true, |k| k.shard_ok() == Some(false)) {
            return;
        }
        let mut columns: BTreeMap<&[u8], Vec<u64>> = BTreeMap::new();
        for cell in row.cells.iter().filter(|c| c.family == FAMILY_DIGEST_MAP) {
            match decode_digest_map_value(&cell.value) {
                Ok(id) => columns.entry(&cell.qualifier).or_default().push(id),
                Err(_) if !rescan => {
                    let detail = format!(
                        "{} holds {}, not an id >= 1",
                        column(cell),
                        escape(&cell.value)
                    );
                    self.report
                        .finding(io, finding("map_bad_value", &row.key, detail));
                }
                Err(_) => {}
            }
        }
        for (qualifier, mut ids) in columns {
            ids.sort_unstable();
            ids.dedup();
            if ids.len() > 1 && !rescan {
                let detail = format!(
                    "digest {}{} is mapped to ids {ids:?}",
                    escape(keys::extract_subkey(&row.key)),
                    escape(qualifier)
                );
                self.report
                    .finding(io, finding("map_conflict", &row.key, detail));
            }
            let Some(known) = &mut self.ids else {
                continue;
            };
            for id in ids {
                if id > MAX_ID_BITS {
                    continue;
                }
                if !known.insert(id) && !rescan {
                    let detail = format!(
                        "id {id} is mapped to digest {}{} and to another digest",
                        escape(keys::extract_subkey(&row.key)),
                        escape(qualifier)
                    );
                    self.report
                        .finding(io, finding("map_conflict", &row.key, detail));
                }
            }
        }
    }

    /// Checks each row of a page on its own; gives the trace rows, which need their OPS.
    fn check_page(&mut self, io: &mut Io<CheckEvent>, page: Vec<Row>) -> Vec<Row> {
        let mut traces = Vec::new();
        for row in page {
            let key = match decode_row_key(&row.key) {
                Ok(k) => k,
                Err(e) => {
                    self.report
                        .finding(io, finding("undecodable_key", &row.key, e.to_string()));
                    continue;
                }
            };
            if key.shard_ok() == Some(false) {
                let detail = format!(
                    "shard {:02} is not crc32(subkey) % 32 = {:02}: readers never find this row",
                    key.shard.unwrap_or(0),
                    keys::shard_of(&key.subkey)
                );
                self.report
                    .finding(io, finding("wrong_shard", &row.key, detail));
                continue;
            }
            match key.row_type {
                RowType::Ops => self.ops_row(io, &row),
                // rowkit's migration marker (`docs/migration.md` §2.1, §9): no Gold reader
                // reads it; the migration's own machines check it.
                RowType::Migration => {}
                RowType::Trace => traces.push(row),
                RowType::Options if self.layout == Layout::Md5 => self.options_row(io, &row),
                // The map and the counter were read first.
                RowType::DigestMap | RowType::IdCounter if self.layout == Layout::DigestId => {}
                // A row of the other layout: no reader of this table's layout reads it.
                RowType::Options | RowType::DigestMap | RowType::IdCounter => {
                    let detail = format!(
                        "a {:?} row, which the {:?} layout of this table does not have: no reader reads it",
                        key.row_type, self.layout
                    );
                    self.report
                        .finding(io, finding("other_layout_row", &row.key, detail));
                }
            }
        }
        traces
    }

    /// An OPS row: exactly `O:H` and `O:OPS` (newest cells), a gob that decodes, and `H` its
    /// MD5.
    fn ops_row(&mut self, io: &mut Io<CheckEvent>, row: &Row) {
        let cells = latest(row, FAMILY_OPS);
        let hash = cells.iter().find(|c| c.qualifier == COLUMN_HASH);
        let ops = cells.iter().find(|c| c.qualifier == COLUMN_OPS);
        let complete =
            cells.len() == 2 && hash.is_some_and(|h| !h.value.is_empty()) && ops.is_some();
        if !complete {
            let columns: Vec<String> = cells.iter().map(|c| column(c)).collect();
            let detail = format!(
                "OPS row holds [{}], not exactly a non-empty O:H and O:OPS",
                columns.join(", ")
            );
            self.report
                .finding(io, finding("ops_incomplete", &row.key, detail));
        }
        let Some(ops) = ops else {
            return;
        };
        if let Err(e) = decode_ops_gob(&ops.value) {
            let detail = format!("O:OPS ({} bytes) does not decode: {e}", ops.value.len());
            self.report
                .finding(io, finding("ops_undecodable", &row.key, detail));
        }
        if let Some(h) = hash
            && !h.value.is_empty()
            && h.value != ops_hash(&ops.value).as_bytes()
        {
            let detail = format!(
                "O:H is {}, the MD5 of O:OPS is {}",
                escape(&h.value),
                ops_hash(&ops.value)
            );
            self.report
                .finding(io, finding("ops_hash_mismatch", &row.key, detail));
        }
    }

    /// An options row (md5 layout): its `P:B` parses.
    fn options_row(&mut self, io: &mut Io<CheckEvent>, row: &Row) {
        let cells = latest(row, FAMILY_OPTIONS);
        let detail = match cells.iter().find(|c| c.qualifier == COLUMN_OPTIONS) {
            None => "no P:B cell".to_string(),
            Some(c) => match parse_options_text(&c.value) {
                Ok(_) => return,
                Err(e) => format!("P:B {} does not parse: {e}", escape(&c.value)),
            },
        };
        self.report
            .finding(io, finding("bad_options_cell", &row.key, detail));
    }

    /// A trace row against its tile's OPS (read after it, in `found`), and its cells.
    fn trace_row(
        &mut self,
        io: &mut Io<CheckEvent>,
        row: &Row,
        found: &RowsByKey,
        decoded: &mut BTreeMap<Vec<u8>, Option<OrderedParamSet>>,
    ) {
        let Ok(key) = decode_row_key(&row.key) else {
            return;
        };
        let ops_key = keys::ops_row_name(key.tile_key);
        match found.get(&ops_key) {
            None => {
                let detail = format!("tile key {} has no OPS row", key.tile_key);
                self.report
                    .finding(io, finding("trace_without_ops", &row.key, detail));
            }
            Some(ops_row) => {
                let ops = decoded.entry(ops_key).or_insert_with(|| {
                    latest(ops_row, FAMILY_OPS)
                        .into_iter()
                        .find(|c| c.qualifier == COLUMN_OPS)
                        .and_then(|c| decode_ops_gob(&c.value).ok())
                });
                // An OPS that does not decode is reported on its own row.
                if let Some(ops) = ops
                    && let Err(e) = ops.decode_params(&key.subkey)
                {
                    let detail = format!(
                        "params {} do not decode against the tile's OPS: {e}",
                        escape(&key.subkey)
                    );
                    self.report
                        .finding(io, finding("trace_params_not_in_ops", &row.key, detail));
                }
            }
        }
        for cell in latest(row, FAMILY_TRACE) {
            self.trace_cell(io, &row.key, cell);
        }
    }

    /// One trace cell: a valid column and a value of the layout (and a known id).
    fn trace_cell(&mut self, io: &mut Io<CheckEvent>, row_key: &[u8], cell: &Cell) {
        let bad = |detail: String| finding("bad_trace_cell", row_key, detail);
        if parse_trace_qualifier(&cell.qualifier).is_err() {
            let detail = format!("{} is not a commit offset 0..255", column(cell));
            return self.report.finding(io, bad(detail));
        }
        match self.layout {
            // Empty is the missing digest; `00` is the v2–v4 missing marker (spec §16).
            Layout::Md5 => {
                if !matches!(cell.value.len(), 0 | 16) && cell.value != [0] {
                    let detail = format!(
                        "{} holds {} bytes, not 16 MD5 bytes or empty",
                        column(cell),
                        cell.value.len()
                    );
                    self.report.finding(io, bad(detail));
                }
            }
            Layout::DigestId => match decode_digest_id_cell(&cell.value) {
                Err(_) => {
                    let detail = format!(
                        "{} holds {}, not a digest id",
                        column(cell),
                        escape(&cell.value)
                    );
                    self.report.finding(io, bad(detail));
                }
                Ok(0) => {}
                Ok(id) => {
                    let unknown = self
                        .ids
                        .as_ref()
                        .is_some_and(|k| !k.holds(id) || k.counter.is_some_and(|c| id >= c));
                    if unknown {
                        self.held.push(HeldId {
                            row_key: row_key.to_vec(),
                            qualifier: cell.qualifier.clone(),
                            id,
                        });
                    }
                }
            },
        }
    }

    /// Judges the held ids against the counter and map just read again.
    fn judge_held(&mut self, io: &mut Io<CheckEvent>) {
        let held = core::mem::take(&mut self.held);
        let Some(known) = &self.ids else {
            return;
        };
        let mut findings = Vec::new();
        for h in held {
            let at = format!("T:{} holds id {}", escape(&h.qualifier), h.id);
            // An id at or above the counter cannot be in the map either: one finding, the
            // more telling one.
            if let Some(c) = known.counter
                && h.id >= c
            {
                let detail = format!("{at}, not below the id counter {c}");
                findings.push(finding("id_above_counter", &h.row_key, detail));
            } else if !known.holds(h.id) {
                let detail = format!("{at}, which no digest-map entry holds");
                findings.push(finding("id_unknown", &h.row_key, detail));
            }
        }
        for f in findings {
            self.report.finding(io, f);
        }
    }
}
