//! `MigrationPass` — one pass of the object-metadata migration over a bucket, page by page
//! (`docs/migration.md` §4.4, §4.5, §4.6, §7.1, §7.3, §8): the copy pass of `copying`, the
//! verification of `verifying` (the same pass, counting pairs not in sync as `diffs`), and the
//! light final pass of `switching` and sweeps of `switched`.
//!
//! Per page:
//!
//! 1. **Source page**: `ReadRows` of the `from` objects after the cursor, `LatestN(1)`,
//!    `rows_limit = page`. v0 `from`: the collection minus the v1 ranges `[C‖00‖\x7fM,
//!    C‖00‖\x7fN)` and `[C‖00‖\x7fV, C‖00‖\x7fW)`, up to three row ranges in one request. Keys
//!    starting with `\x7fR` are **not** left out: replay keys are never written (`objmeta.md`
//!    §4.1), so such a row is an object an application wrote, and §4.1 makes it a
//!    `key_collision` finding. v1 `from`: two scans, masters and versions, merged by pair key
//!    ([`pair_key`]). The page covers the pair keys `(cursor, hi]`: `hi` is the last key a
//!    full scan returned (the smaller of the two for v1); a page whose scans all came back
//!    short is the last and covers `(cursor, ∞)`.
//! 2. **Target rows** of the same interval `(cursor, hi]`, whole (so that target rows of keys
//!    no longer in `from`, even before the page's first source key, are found).
//! 3. Merge by pair key, classify each pair as read ([`classify`]); pairs in sync count as
//!    `unchanged`; the others run [`SyncKey`](super::sync::SyncKey)'s flow inside this
//!    operation (the first round on the page's reads), at most [`MAX_OUTSTANDING_SYNCS`] at
//!    once, started in key order. A target row without a source row is synced by its key
//!    mapped back ([`map_key`]`(…, to, from)`). A key §4.1 refuses is a finding
//!    ([`PassFinding`]): recorded, reported as an event, and the pass goes on (the run stops
//!    before the switch while findings exist: the caller's decision, from the summary).
//! 4. When every sync of the page has ended: the checkpoint with `cursor = hi` through the
//!    checkpoint CAS ([`WriteCheckpoint`](super::marker::WriteCheckpoint)'s flow), then a
//!    [`MigrateEvent::Progress`], then the next page after `hi`.
//!
//! [`PassKind::Clean`] (§4.7, truth `to`) and [`PassKind::Abort`] (§4.9's first row, truth
//! `from`) are the same pages, merge and checkpoints with another step per pair: a pair with
//! something to delete or strip ([`clean_writes`], [`abort_writes`]) runs the deletion step
//! (module `deletion`) instead of a sync — the clean-up deletes stamped `from` rows, syncs an
//! unstamped one first (a straggler adopted, or a conflict left in place) and strips the stamps
//! of `to` rows; the rollback deletes `to` rows and strips the stamps of `from` rows. Their
//! summary says what was deleted and stripped ([`DeletionCounts`]) and whether a `from` row is
//! left ([`DeletionCounts::from_rows_left`]).
//!
//! [`PassKind::Light`] reads both layouts with [`light_filter`] (hashes and stamps only) and
//! lets each pair not in sync read itself whole ([`SyncKey`](super::sync::SyncKey) without a
//! pre-read pair).
//!
//! The machine returns what it did ([`PassResult`]): the [`PassSummary`] and the metastore
//! row as last written ([`MigrationRead`]), which the caller hands to its next marker or
//! checkpoint write. Its deadline bounds the whole pass: give it one long enough for the
//! bucket (a pass that ends aborted resumes from its last checkpoint).

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rowkit_codec::escape::escape;
use rowkit_codec::model::{Row, RowFilter, RowSet};
use rowkit_codec::objmeta::cells::filters;
use rowkit_codec::objmeta::keys::{VFormat, collection_for_bucket, collection_start};
use rowkit_codec::objmeta::migration::Truth;
use rowkit_codec::objmeta::migration::marker::{MigrationCheckpoint, MigrationState, PassCounters};
use rowkit_codec::objmeta::migration::pass::{
    DEFAULT_PAGE_ROWS, MAX_OUTSTANDING_SYNCS, object_row_ranges, pair_key,
};
use rowkit_codec::objmeta::migration::sync::{
    CleanPlan, Keep, KeyFinding, Side, SyncAction, abort_writes, classify, clean_writes,
    light_filter, map_key, sync_pair,
};

use super::super::requests::{OmIo, P, start_read};
use super::super::{ObjmetaError, ObjmetaEvent, ObjmetaSchema, ObjmetaState, begin};
use super::deletion::{DeletePairFlow, DeletedPair, Deletion};
use super::marker::{MigrationRead, WriteCheckpointFlow};
use super::sync::{PairAsRead, SyncKeyFlow, SyncOutcome, SyncedKey};
use crate::Timestamp;
use crate::children::ChildId;
use crate::operation::{ContextArg, Flow, Operation, Start};

/// `MigrationPass(bucket, from, to, truth, kind, resume, page_rows)`: one pass over a
/// migrating bucket (§4.4–§4.6).
pub type MigrationPass<'a> = Operation<'a, MigrationPassFlow>;

/// Which pass: what it reads and what it counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PassKind {
    /// The copy pass of `copying` (§4.4): rows read whole, pairs not in sync synced.
    Copy,
    /// The verification of `verifying` (§4.5 first bullet): the copy pass whose `diffs` (pairs
    /// not in sync) decide whether another verification pass runs.
    Verify,
    /// The final pass of `switching` and the sweeps of `switched` (§4.5 step 2, §4.6): rows
    /// read with [`light_filter`], a pair read whole only when it is not in sync.
    Light,
    /// The clean-up of `cleaning` (§4.7, truth `to`): stamped `from` rows deleted, unstamped
    /// ones (stragglers) synced first, stamps stripped from `to` rows.
    Clean,
    /// The rollback of `aborting` from `copying`, `verifying` or `switching` (§4.9, truth
    /// `from`): `to` rows deleted, stamps stripped from `from` rows.
    Abort,
}

/// What a deletion pass ([`PassKind::Clean`], [`PassKind::Abort`]) removed in this run, and
/// whether the clean-up may end: the caller removes the marker only when no `from` row is left.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeletionCounts {
    /// `from` rows deleted (clean-up).
    pub from_rows_deleted: u64,
    /// `to` rows deleted (rollback).
    pub to_rows_deleted: u64,
    /// Stamps stripped (`to` rows in a clean-up, `from` rows in a rollback).
    pub stamps_stripped: u64,
    /// Clean-up: a `from` row is left — a conflict (resumed counters included), a finding, or
    /// a pair this run could not finish. Always `false` for the other kinds. A pass resumed
    /// from a checkpoint does not know the findings of the pages before its cursor: only a
    /// pass run from the start proves the layout empty.
    pub from_rows_left: bool,
}

/// Where a pass starts and as whom it writes its checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassResume {
    /// The bucket's metastore row as last read or written ([`ReadMigration`] or the previous
    /// write): the predicate of the first checkpoint CAS.
    ///
    /// [`ReadMigration`]: super::marker::ReadMigration
    pub as_read: MigrationRead,
    /// The checkpoint to continue from: its `cursor` (the pair key after which the pass
    /// continues; `None`: from the start), `pass` and counters so far; `run`, `state`,
    /// `owner`, `started` and `pass_rows_previous` are kept in every checkpoint the pass
    /// writes (`lease_until` and `updated` are the checkpoint machine's).
    pub checkpoint: MigrationCheckpoint,
    /// `--take-over`: write the checkpoint even when another owner's lease holds (§7.1).
    pub take_over: bool,
}

/// A key or row the pass could not sync (§4.1's findings, and rows that are no object rows
/// the sync step can name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PassFinding {
    /// A key §4.1 refuses (`key_collision`, `key_too_long`, `nul_in_object_key`).
    Key(KeyFinding),
    /// A row that cannot be synced as read: a `d:value` without `f:hash` (`check --fix`
    /// rewrites it: `derived_stale`), a row key that is not UTF-8, or a second row of one pair
    /// key.
    Row {
        /// The row key.
        row_key: Vec<u8>,
        /// Why.
        reason: String,
    },
    /// A finding of the schema check of the `to` layout before the switch (§8), with
    /// whether it is the source's own (the same kind on the pair's `from` row: copied byte
    /// for byte, it does not block).
    Check {
        /// The check's finding, on a `to` row.
        finding: crate::check::Finding,
        /// The same kind is reported on the pair's `from` row.
        source_own: bool,
    },
}

impl PassFinding {
    /// The finding's stable id (a [`KeyFinding`]'s, or `row_not_syncable`).
    pub fn id(&self) -> &'static str {
        match self {
            PassFinding::Key(finding) => finding.id(),
            PassFinding::Row { .. } => "row_not_syncable",
            PassFinding::Check { finding, .. } => finding.kind,
        }
    }
}

impl core::fmt::Display for PassFinding {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PassFinding::Key(finding) => write!(f, "{finding}"),
            PassFinding::Row { row_key, reason } => {
                write!(f, "row_not_syncable: {}: {reason}", escape(row_key))
            }
            PassFinding::Check {
                finding,
                source_own,
            } => {
                let whose = if *source_own {
                    " (the source's own)"
                } else {
                    ""
                };
                let (kind, key, detail) = (finding.kind, escape(&finding.row_key), &finding.detail);
                write!(f, "{kind}{whose}: {key}: {detail}")
            }
        }
    }
}

/// A pair where both sides changed since the last sync, after the switch (§4.6): left as it
/// is, for the operator's `--resolve`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassConflict {
    /// The key in the `from` layout.
    pub key: String,
    /// `f:hash` of `S(a)`.
    pub from_hash: Vec<u8>,
    /// `f:hash` of `T(a)` (`None`: absent).
    pub to_hash: Option<Vec<u8>>,
}

/// The progress of a pass after a page (§7.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassProgress {
    /// The migration state the pass runs in (the checkpoint's).
    pub state: MigrationState,
    /// The pass number.
    pub pass: u64,
    /// The pass's counters so far, resumed ones included (the checkpoint's).
    pub counters: PassCounters,
    /// Rows read by this run per second of the machine's clock since it began (`None` before
    /// any time has passed).
    pub rate_rows_per_s: Option<u64>,
    /// Seconds left, from the previous pass's row count (`pass_rows_previous`) and the rate;
    /// `None` in a first pass. The `SampleRowKeys` estimate of a first pass (§7.3) is not
    /// built yet.
    pub eta_s: Option<u64>,
}

/// The migration's events (§7.3), emitted as [`ObjmetaEvent::Migrate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MigrateEvent {
    /// After every page, once its checkpoint is written.
    Progress(PassProgress),
    /// A straggler's write (or delete) adopted after the switch (§4.6).
    Straggler {
        /// The key in the `from` layout.
        key: String,
    },
    /// A conflict, left in place (§4.6).
    Conflict(PassConflict),
    /// A conflict settled by `--resolve` (§4.6): the kept side copied over the other.
    Resolved {
        /// The key in the `from` layout.
        key: String,
        /// The side kept.
        kept: Keep,
    },
    /// A key or row the pass cannot sync.
    Finding(PassFinding),
    /// The migrator changed the marker (`MigrateBucket`, §3): `None` is "no marker" (the
    /// start, the removal).
    StateChanged {
        /// The state before the change.
        from: Option<MigrationState>,
        /// The state after it.
        to: Option<MigrationState>,
    },
}

/// What a pass did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassSummary {
    /// The kind of pass.
    pub kind: PassKind,
    /// Its number (the checkpoint's).
    pub pass: u64,
    /// Its counters, resumed ones included; each pair synced counts once, by what its sync
    /// ended with (a straggler adopted counts in `stragglers` only, a conflict in `conflicts`).
    pub counters: PassCounters,
    /// Pairs not in sync as the page read them (`StampUnstamped` included), findings
    /// excluded; a resumed pass adds the writes and conflicts its resumed counters show.
    /// A verification is clean when it is 0 (§8).
    pub diffs: u64,
    /// The `from` keys of adopted stragglers, in key order (this run only).
    pub stragglers: Vec<String>,
    /// Conflicts, in key order (this run only).
    pub conflicts: Vec<PassConflict>,
    /// The `from` keys of conflicts settled by `--resolve`, in key order (this run only;
    /// counted in `copied` or `deleted`).
    pub resolved: Vec<String>,
    /// Findings, in key order (this run only).
    pub findings: Vec<PassFinding>,
    /// The cursor of the last checkpoint written (the last pair key of the pass).
    pub cursor: Option<Vec<u8>>,
    /// Pages run (this run only).
    pub pages: u64,
    /// Rows read per second of the machine's clock over this run of the pass (`None`: no
    /// time passed) — the rate the `--switch` gate estimates the fence's length from (§11.2).
    pub rate_rows_per_s: Option<u64>,
    /// What a deletion pass removed (this run only; all zero for the other kinds).
    pub deletion: DeletionCounts,
}

/// A pass's output: its summary and the metastore row as last written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassResult {
    /// What the pass did.
    pub summary: PassSummary,
    /// The row as the last checkpoint write left it: the caller's next "as last read".
    pub migration: MigrationRead,
}

/// Whether a planted bug makes a pass skip a pair whose source was rewritten after its last
/// sync (the fault simulator's self-test).
#[cfg(feature = "_planted_bugs")]
fn skips_rewritten_source(st: &ObjmetaState, source: &Side, target: &Side) -> bool {
    st.config.planted == Some(crate::planted::PlantedBug::ObjmetaMigrateSkipsRewrittenSource)
        && source.present().is_some()
        && !source.is_stamped()
        && target.is_stamped()
}

#[cfg(not(feature = "_planted_bugs"))]
fn skips_rewritten_source(_: &ObjmetaState, _: &Side, _: &Side) -> bool {
    false
}

/// A pair of the page still to sync (or, in a deletion pass, to delete).
#[derive(Debug)]
struct PendingSync {
    /// Its `from` key.
    key: String,
    /// The pair as the page read it (`None`: a light read, the sync reads it whole).
    read: Option<PairAsRead>,
}

/// One pair's step running: a sync, or a deletion pass's step.
#[derive(Debug)]
enum PairStep {
    Sync(Box<SyncKeyFlow>),
    Delete(Box<DeletePairFlow>),
}

/// What a pair's step ended with.
enum PairDone {
    Synced(SyncedKey),
    Deleted(String, DeletedPair),
}

impl PairStep {
    fn advance(
        &mut self,
        io: &mut OmIo,
        st: &mut ObjmetaState,
    ) -> Result<Option<PairDone>, ObjmetaError> {
        Ok(match self {
            PairStep::Sync(flow) => flow.advance(io, st)?.map(PairDone::Synced),
            PairStep::Delete(flow) => {
                let key = flow.key().into();
                flow.advance(io, st)?.map(|d| PairDone::Deleted(key, d))
            }
        })
    }
}

/// A source scan's rows and whether it came back full (more may follow).
#[derive(Debug)]
struct Scanned {
    rows: Vec<Row>,
    full: bool,
}

#[derive(Debug)]
enum PassPhase {
    /// Send the page's source read(s).
    Page,
    /// Source reads sent (one for v0, masters and versions for v1).
    Source {
        reads: Vec<(ChildId, Option<Scanned>)>,
    },
    /// The target read of `(cursor, hi]` sent (`None`: no range to read).
    Target {
        read: Option<ChildId>,
        source: Vec<Row>,
        hi: Option<String>,
    },
    /// The page's syncs.
    Syncing {
        queue: VecDeque<PendingSync>,
        running: Vec<PairStep>,
        cursor: Option<String>,
        last: bool,
    },
    /// The page's checkpoint being written.
    Checkpoint {
        write: Box<WriteCheckpointFlow>,
        last: bool,
    },
    Done,
}

/// The flow of [`MigrationPass`].
#[derive(Debug)]
pub struct MigrationPassFlow {
    bucket: String,
    collection: String,
    from: VFormat,
    to: VFormat,
    truth: Truth,
    kind: PassKind,
    page_rows: u32,
    as_read: MigrationRead,
    /// The checkpoint as last written (or resumed from).
    checkpoint: MigrationCheckpoint,
    take_over: bool,
    /// `--resolve`: the side a conflict keeps (`None`: conflicts are left and reported).
    keep: Option<Keep>,
    /// The pair key the next page reads after.
    cursor: Option<String>,
    counters: PassCounters,
    diffs: u64,
    stragglers: Vec<String>,
    conflicts: Vec<PassConflict>,
    resolved: Vec<String>,
    findings: Vec<PassFinding>,
    pages: u64,
    deletion: DeletionCounts,
    /// When this run began (its first step) and the rows it has read.
    began: Option<Timestamp>,
    rows_this_run: u64,
    /// The rate of the last progress event.
    rate: Option<u64>,
    phase: PassPhase,
}

impl<'a> MigrationPass<'a> {
    /// One pass of `kind` over `bucket`, migrating `from` → `to` with `truth` the layout of
    /// the truth, continuing after `resume`'s cursor, reading `page_rows` `from` rows a page
    /// (`0`: [`DEFAULT_PAGE_ROWS`]). Refused before any request (`InternalError`): `from ==
    /// to`, a checkpoint cursor that is not a UTF-8 key.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        from: VFormat,
        to: VFormat,
        truth: Truth,
        kind: PassKind,
        resume: PassResume,
        page_rows: u32,
        start: Start,
    ) -> MigrationPass<'a> {
        match MigrationPassFlow::new(bucket, from, to, truth, kind, resume, page_rows) {
            Ok(flow) => begin(ctx, start, flow),
            Err(error) => Operation::failed(ctx.into(), error),
        }
    }
}

impl MigrationPassFlow {
    /// The flow of [`MigrationPass::new`], for a parent flow that runs the pass inside its own
    /// operation (the migrator).
    pub(super) fn new(
        bucket: &str,
        from: VFormat,
        to: VFormat,
        truth: Truth,
        kind: PassKind,
        resume: PassResume,
        page_rows: u32,
    ) -> Result<MigrationPassFlow, ObjmetaError> {
        if from == to {
            return Err(ObjmetaError::internal(alloc::format!(
                "a migration from {} to {} has nothing to pass over",
                from.as_str(),
                to.as_str()
            )));
        }
        let truth_wanted = match kind {
            PassKind::Clean => Some(Truth::To),
            PassKind::Abort => Some(Truth::From),
            PassKind::Copy | PassKind::Verify | PassKind::Light => None,
        };
        if truth_wanted.is_some_and(|wanted| wanted != truth) {
            return Err(ObjmetaError::internal(alloc::format!(
                "a {kind:?} pass runs with truth {:?}, not {truth:?}",
                truth_wanted
            )));
        }
        let cursor = match &resume.checkpoint.cursor {
            None => None,
            Some(bytes) => Some(String::from_utf8(bytes.clone()).map_err(|_| {
                ObjmetaError::internal(alloc::format!(
                    "the checkpoint's cursor {} is not a key",
                    escape(bytes)
                ))
            })?),
        };
        Ok(MigrationPassFlow {
            bucket: bucket.into(),
            collection: collection_for_bucket(bucket).into(),
            from,
            to,
            truth,
            kind,
            page_rows: if page_rows == 0 {
                DEFAULT_PAGE_ROWS
            } else {
                page_rows
            },
            counters: resume.checkpoint.counters,
            diffs: written_or_conflicting(&resume.checkpoint.counters),
            as_read: resume.as_read,
            checkpoint: resume.checkpoint,
            take_over: resume.take_over,
            keep: None,
            cursor,
            stragglers: Vec::new(),
            conflicts: Vec::new(),
            resolved: Vec::new(),
            findings: Vec::new(),
            pages: 0,
            deletion: DeletionCounts::default(),
            began: None,
            rows_this_run: 0,
            rate: None,
            phase: PassPhase::Page,
        })
    }

    /// The same pass settling the conflicts it meets by keeping `keep` (`--resolve`, §4.6)
    /// instead of leaving them; `None` leaves them.
    pub(super) fn resolving(mut self, keep: Option<Keep>) -> MigrationPassFlow {
        self.keep = keep;
        self
    }

    /// The filter of both reads of a page.
    fn read_filter(&self) -> RowFilter {
        match self.kind {
            PassKind::Copy | PassKind::Verify | PassKind::Clean | PassKind::Abort => {
                filters::latest()
            }
            PassKind::Light => light_filter(),
        }
    }

    /// The row's key without the collection prefix (`None`: not UTF-8).
    fn arsenal_key(&self, row: &[u8]) -> Option<String> {
        let key = row.strip_prefix(collection_start(&self.collection).as_slice())?;
        core::str::from_utf8(key).ok().map(String::from)
    }

    fn finding(&mut self, io: &mut OmIo, finding: PassFinding) {
        io.emit(ObjmetaEvent::Migrate(MigrateEvent::Finding(
            finding.clone(),
        )));
        self.findings.push(finding);
    }

    fn row_finding(&mut self, io: &mut OmIo, row_key: &[u8], reason: impl ToString) {
        let finding = PassFinding::Row {
            row_key: row_key.to_vec(),
            reason: reason.to_string(),
        };
        self.finding(io, finding);
    }

    /// Sends the page's source read(s): the `from` objects after the cursor.
    fn send_source(&self, io: &mut OmIo, st: &ObjmetaState) -> Vec<(ChildId, Option<Scanned>)> {
        let ranges = object_row_ranges(&self.collection, self.from, self.cursor.as_deref(), None);
        let limit = i64::from(self.page_rows);
        let one_read = |io: &mut OmIo, ranges| {
            let rows = RowSet {
                row_keys: Vec::new(),
                row_ranges: ranges,
            };
            (start_read(io, st, rows, self.read_filter(), limit), None)
        };
        match self.from {
            // One request, up to three ranges: their rows arrive in pair-key order.
            VFormat::V0 => alloc::vec![one_read(io, ranges)],
            // Masters and versions: two scans, merged by pair key.
            VFormat::V1 => ranges
                .into_iter()
                .map(|range| one_read(io, alloc::vec![range]))
                .collect(),
        }
    }

    /// The page's interval end and its source rows, from the scans: `hi` is the smallest
    /// last pair key of a full scan (`None`: every scan came back short, the last page);
    /// rows after `hi` are left for the next page.
    fn source_page(
        &mut self,
        io: &mut OmIo,
        scans: Vec<Scanned>,
    ) -> Result<(Vec<Row>, Option<String>), ObjmetaError> {
        let mut hi: Option<String> = None;
        for scan in scans.iter().filter(|s| s.full) {
            let Some(last) = scan.rows.last() else {
                continue;
            };
            let Some(key) = pair_key(&last.key, &self.collection, self.from) else {
                return Err(ObjmetaError::internal(alloc::format!(
                    "a page ends on row {}, which is no object row of the {} layout",
                    escape(&last.key),
                    self.from.as_str()
                )));
            };
            if hi.as_ref().is_none_or(|h| key < *h) {
                hi = Some(key);
            }
        }
        let mut rows = Vec::new();
        for row in scans.into_iter().flat_map(|s| s.rows) {
            match pair_key(&row.key, &self.collection, self.from) {
                None => self.row_finding(io, &row.key, "row key is no object key"),
                Some(key) if hi.as_ref().is_none_or(|h| key <= *h) => rows.push(row),
                Some(_) => {}
            }
        }
        Ok((rows, hi))
    }

    /// Step 3: pairs the page's rows, classifies each, and queues the syncs of those not in
    /// sync (in pair-key order). Gives the queue and the page's last pair key.
    fn plan_page(
        &mut self,
        io: &mut OmIo,
        st: &ObjmetaState,
        source: Vec<Row>,
        target: Vec<Row>,
    ) -> (VecDeque<PendingSync>, Option<String>) {
        #[derive(Default)]
        struct Entry {
            source: Option<Row>,
            target: Option<Row>,
        }
        let mut pairs: BTreeMap<String, Entry> = BTreeMap::new();
        self.counters.rows_scanned += (source.len() + target.len()) as u64;
        self.rows_this_run += (source.len() + target.len()) as u64;
        for (row, is_source) in source
            .into_iter()
            .map(|r| (r, true))
            .chain(target.into_iter().map(|r| (r, false)))
        {
            let layout = if is_source { self.from } else { self.to };
            let Some(key) = pair_key(&row.key, &self.collection, layout) else {
                self.row_finding(io, &row.key, "row key is no object key");
                continue;
            };
            let entry = pairs.entry(key).or_default();
            let slot = if is_source {
                &mut entry.source
            } else {
                &mut entry.target
            };
            if slot.is_some() {
                self.row_finding(io, &row.key, "a second row of one pair key");
                continue;
            }
            *slot = Some(row);
        }
        let last = pairs.keys().next_back().cloned();
        let mut queue = VecDeque::new();
        for (_, entry) in pairs {
            if let Some(pending) = self.plan_pair(io, st, entry.source, entry.target) {
                queue.push_back(pending);
            }
        }
        (queue, last)
    }

    /// One pair of the page: its `from` key (a target-only key mapped back), its
    /// classification; `Some` when it needs a sync.
    fn plan_pair(
        &mut self,
        io: &mut OmIo,
        st: &ObjmetaState,
        source: Option<Row>,
        target: Option<Row>,
    ) -> Option<PendingSync> {
        let (row, layout) = match (&source, &target) {
            (Some(row), _) => (row, self.from),
            (None, Some(row)) => (row, self.to),
            (None, None) => return None,
        };
        let Some(key) = self.arsenal_key(&row.key) else {
            self.row_finding(io, &row.key, "row key is not UTF-8");
            return None;
        };
        let from_key = if layout == self.from {
            Ok(key)
        } else {
            map_key(&self.collection, &key, self.to, self.from)
        };
        let pair = from_key.and_then(|k| sync_pair(&self.collection, &k, self.from, self.to));
        let pair = match pair {
            Ok(pair) => pair,
            Err(finding) => {
                self.finding(io, PassFinding::Key(finding));
                return None;
            }
        };
        let light = self.kind == PassKind::Light;
        let side = |row: &Option<Row>| -> Result<Side, String> {
            if light {
                Ok(Side::from_light_row(row.as_ref()))
            } else {
                Side::from_row(row.as_ref()).map_err(|e| e.to_string())
            }
        };
        let sides = side(&source).and_then(|s| side(&target).map(|t| (s, t)));
        let (s, t) = match sides {
            Ok(sides) => sides,
            Err(reason) => {
                self.row_finding(io, &row.key, reason);
                return None;
            }
        };
        let nothing_to_do = match self.kind {
            PassKind::Clean => clean_writes(&s, &t) == CleanPlan::Writes(Vec::new()),
            PassKind::Abort => abort_writes(&s, &t).is_empty(),
            PassKind::Copy | PassKind::Verify | PassKind::Light => {
                classify(&s, &t, self.truth) == SyncAction::InSync
                    || skips_rewritten_source(st, &s, &t)
            }
        };
        if nothing_to_do {
            self.counters.unchanged += 1;
            return None;
        }
        self.diffs += 1;
        let read = (!light).then_some(PairAsRead { source, target });
        Some(PendingSync {
            key: pair.source_key,
            read,
        })
    }

    /// Counts what a sync ended with and reports stragglers and conflicts.
    fn record(&mut self, io: &mut OmIo, synced: SyncedKey) {
        let key = synced.key().to_string();
        match synced.outcome {
            SyncOutcome::InSync => self.counters.unchanged += 1,
            SyncOutcome::Stamped => self.counters.stamped += 1,
            SyncOutcome::Copied { .. } => self.counters.copied += 1,
            SyncOutcome::Deleted { .. } => self.counters.deleted += 1,
            SyncOutcome::Resolved { kept } => {
                self.counters.copied += 1;
                io.emit(ObjmetaEvent::Migrate(MigrateEvent::Resolved {
                    key: key.clone(),
                    kept,
                }));
                self.resolved.push(key);
            }
            SyncOutcome::StragglerAdopted { .. } => {
                self.counters.stragglers += 1;
                io.emit(ObjmetaEvent::Migrate(MigrateEvent::Straggler {
                    key: key.clone(),
                }));
                self.stragglers.push(key);
            }
            SyncOutcome::Conflict { from_hash, to_hash } => {
                self.counters.conflicts += 1;
                let conflict = PassConflict {
                    key,
                    from_hash,
                    to_hash,
                };
                io.emit(ObjmetaEvent::Migrate(MigrateEvent::Conflict(
                    conflict.clone(),
                )));
                self.conflicts.push(conflict);
            }
        }
    }

    /// Counts what a deletion step did: its syncs as [`Self::record`] counts them, then its
    /// deletions (`deleted`) and stripped stamps (`stamped`: in a deletion pass the
    /// checkpoint's stamp counter counts stamps removed). A pair that wrote nothing and ran
    /// no sync (the page's read was already stale and the re-read found nothing to do) counts
    /// as `unchanged`.
    fn record_deletion(&mut self, io: &mut OmIo, key: &str, deleted: DeletedPair) {
        let wrote = deleted.from_rows_deleted + deleted.to_rows_deleted + deleted.stamps_stripped;
        if wrote == 0 && deleted.syncs.is_empty() {
            self.counters.unchanged += 1;
        }
        for synced in deleted.syncs {
            self.record(io, synced);
        }
        self.counters.deleted += deleted.from_rows_deleted + deleted.to_rows_deleted;
        self.counters.stamped += deleted.stamps_stripped;
        self.deletion.from_rows_deleted += deleted.from_rows_deleted;
        self.deletion.to_rows_deleted += deleted.to_rows_deleted;
        self.deletion.stamps_stripped += deleted.stamps_stripped;
        if deleted.from_row_left && !self.conflicts.iter().any(|c| c.key == key) {
            // A pair left without a conflict of its own (cannot happen today: the step leaves
            // a `from` row only on a conflict); it still keeps the layout from being empty.
            self.deletion.from_rows_left = true;
        }
    }

    /// Starts queued syncs up to the limit and advances every running one; `true` when the
    /// page's syncs have all ended.
    fn run_syncs(
        &mut self,
        io: &mut OmIo,
        st: &mut ObjmetaState,
        queue: &mut VecDeque<PendingSync>,
        running: &mut Vec<PairStep>,
    ) -> Result<bool, ObjmetaError> {
        loop {
            while running.len() < MAX_OUTSTANDING_SYNCS {
                let Some(next) = queue.pop_front() else {
                    break;
                };
                let deletion = match self.kind {
                    PassKind::Clean => Some(Deletion::Clean),
                    PassKind::Abort => Some(Deletion::Abort),
                    PassKind::Copy | PassKind::Verify | PassKind::Light => None,
                };
                let step = match deletion {
                    Some(deletion) => PairStep::Delete(Box::new(
                        DeletePairFlow::start(
                            &self.bucket,
                            &next.key,
                            self.from,
                            self.to,
                            deletion,
                            next.read,
                        )?
                        .resolving(self.keep),
                    )),
                    None => PairStep::Sync(Box::new(
                        SyncKeyFlow::start(
                            &self.bucket,
                            &next.key,
                            self.from,
                            self.to,
                            self.truth,
                            next.read,
                        )?
                        .resolving(self.keep),
                    )),
                };
                running.push(step);
            }
            let mut ended = false;
            let mut i = 0;
            while i < running.len() {
                match running[i].advance(io, st)? {
                    Some(PairDone::Synced(synced)) => {
                        running.remove(i);
                        self.record(io, synced);
                        ended = true;
                    }
                    Some(PairDone::Deleted(key, deleted)) => {
                        running.remove(i);
                        self.record_deletion(io, &key, deleted);
                        ended = true;
                    }
                    None => i += 1,
                }
            }
            if running.is_empty() && queue.is_empty() {
                return Ok(true);
            }
            if !ended {
                return Ok(false);
            }
        }
    }

    /// The progress event of the page just checkpointed.
    /// The progress after a page: the checkpoint just written (it carries the counters).
    fn progress(&self, now: Timestamp) -> PassProgress {
        crate::migration::pass_progress(&self.checkpoint, self.rows_this_run, self.began, now)
    }

    fn summary(&mut self) -> PassSummary {
        self.findings.sort_by_key(finding_order);
        PassSummary {
            kind: self.kind,
            pass: self.checkpoint.pass,
            counters: self.counters,
            diffs: self.diffs,
            stragglers: core::mem::take(&mut self.stragglers),
            conflicts: core::mem::take(&mut self.conflicts),
            resolved: core::mem::take(&mut self.resolved),
            findings: core::mem::take(&mut self.findings),
            cursor: self.checkpoint.cursor.clone(),
            pages: self.pages,
            rate_rows_per_s: self.rate,
            deletion: DeletionCounts {
                from_rows_left: self.kind == PassKind::Clean
                    && (self.deletion.from_rows_left
                        || self.counters.conflicts > 0
                        || !self.findings.is_empty()),
                ..self.deletion
            },
        }
    }
}

/// The pairs a resumed pass's counters show not in sync when it read them: its writes and
/// its conflicts.
fn written_or_conflicting(c: &PassCounters) -> u64 {
    c.copied + c.deleted + c.stamped + c.stragglers + c.conflicts
}

/// Findings sort by the key or row they name.
fn finding_order(finding: &PassFinding) -> Vec<u8> {
    match finding {
        PassFinding::Key(
            KeyFinding::KeyCollision { key }
            | KeyFinding::KeyTooLong { key, .. }
            | KeyFinding::NulInObjectKey { key }
            | KeyFinding::NotInFromLayout { key, .. },
        ) => key.as_bytes().to_vec(),
        PassFinding::Row { row_key, .. } => row_key.clone(),
        PassFinding::Check { finding, .. } => finding.row_key.clone(),
    }
}

impl Flow for MigrationPassFlow {
    type Schema = ObjmetaSchema;
    type Output = PassResult;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<PassResult> {
        if self.began.is_none() {
            self.began = Some(io.now());
        }
        loop {
            match core::mem::replace(&mut self.phase, PassPhase::Done) {
                PassPhase::Page => {
                    let reads = self.send_source(io, st);
                    self.phase = PassPhase::Source { reads };
                }
                PassPhase::Source { mut reads } => {
                    for (id, slot) in reads.iter_mut().filter(|(_, s)| s.is_none()) {
                        if let Some(rows) = io.rows_or_wait(*id)? {
                            let full = rows.len() as u64 >= u64::from(self.page_rows);
                            *slot = Some(Scanned { rows, full });
                        }
                    }
                    if reads.iter().any(|(_, s)| s.is_none()) {
                        self.phase = PassPhase::Source { reads };
                        return Ok(None);
                    }
                    let scans = reads.into_iter().filter_map(|(_, s)| s).collect();
                    let (source, hi) = self.source_page(io, scans)?;
                    let ranges = object_row_ranges(
                        &self.collection,
                        self.to,
                        self.cursor.as_deref(),
                        hi.as_deref(),
                    );
                    let read = (!ranges.is_empty()).then(|| {
                        let rows = RowSet {
                            row_keys: Vec::new(),
                            row_ranges: ranges,
                        };
                        start_read(io, st, rows, self.read_filter(), 0)
                    });
                    self.phase = PassPhase::Target { read, source, hi };
                }
                PassPhase::Target { read, source, hi } => {
                    let target = match read {
                        None => Vec::new(),
                        Some(id) => match io.rows_or_wait(id)? {
                            Some(rows) => rows,
                            None => {
                                self.phase = PassPhase::Target { read, source, hi };
                                return Ok(None);
                            }
                        },
                    };
                    let (queue, page_last) = self.plan_page(io, st, source, target);
                    let last = hi.is_none();
                    // A last page ends on its greatest key (or where the pass already was).
                    let cursor = hi.or(page_last).or_else(|| self.cursor.clone());
                    self.phase = PassPhase::Syncing {
                        queue,
                        running: Vec::new(),
                        cursor,
                        last,
                    };
                }
                PassPhase::Syncing {
                    mut queue,
                    mut running,
                    cursor,
                    last,
                } => {
                    if !self.run_syncs(io, st, &mut queue, &mut running)? {
                        self.phase = PassPhase::Syncing {
                            queue,
                            running,
                            cursor,
                            last,
                        };
                        return Ok(None);
                    }
                    let mut checkpoint = self.checkpoint.clone();
                    checkpoint.cursor = cursor.clone().map(String::into_bytes);
                    checkpoint.counters = self.counters;
                    let write = WriteCheckpointFlow::new(
                        &self.bucket,
                        &self.as_read,
                        checkpoint,
                        self.take_over,
                        io.now(),
                    )?;
                    self.cursor = cursor;
                    self.phase = PassPhase::Checkpoint {
                        write: Box::new(write),
                        last,
                    };
                }
                PassPhase::Checkpoint { mut write, last } => {
                    let Some(written) = write.advance(io, st)? else {
                        self.phase = PassPhase::Checkpoint { write, last };
                        return Ok(None);
                    };
                    if let Some(checkpoint) = &written.checkpoint {
                        self.checkpoint = checkpoint.clone();
                    }
                    self.as_read = written;
                    self.pages += 1;
                    let progress = self.progress(io.now());
                    self.rate = progress.rate_rows_per_s;
                    io.emit(ObjmetaEvent::Migrate(MigrateEvent::Progress(progress)));
                    if last {
                        return Ok(Some(PassResult {
                            summary: self.summary(),
                            migration: self.as_read.clone(),
                        }));
                    }
                    self.phase = PassPhase::Page;
                }
                PassPhase::Done => return Ok(None),
            }
        }
    }
}
