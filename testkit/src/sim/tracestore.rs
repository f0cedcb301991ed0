//! The Gold trace store under the simulator (`spec/tracestore.md`): every client operation
//! runs as a separate Gold writer (an ingester process) with its own [`TraceStoreState`] —
//! OPS cache, digest cache, id pool — kept between its operations and lost when it crashes.
//! Clients put small batches (a few traces x one commit, over two tiles, later puts
//! overriding earlier values with a newer timestamp), read ranges and assign digest ids;
//! afterwards, with a fresh state,
//!
//! - every cell (trace, commit) whose last write the history decides (an acknowledged put
//!   that overlapped no other put of that cell) reads back its digest, and never-written
//!   cells read back missing;
//! - the digest map gives every id to one digest and every digest one id, and every
//!   acknowledged `AssignDigestIds` answered the map's ids (digest-id layout);
//! - the param set only grows: every param of an acknowledged put is in its tile's final OPS,
//!   and an acknowledged read's param set holds every value of an earlier acknowledged read
//!   of the same range.
//!
//! Checks (`spec/check.md` §2, report-only) run among the writers and once more after them:
//! none may report a finding or send a write.
//!
//! Writers share nothing but the store; machines own their state (an [`Operation`] built from a
//! `TraceStoreState` by value) and give it back to the writer pool when they end.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::rc::Rc;

use rowkit_codec::model::{RowFilter, RowSet};
use rowkit_codec::tracestore::cells::{
    COLUMN_OPS, FAMILY_DIGEST_MAP, FAMILY_OPS, decode_digest_map_value, digest_of_map_cell,
};
use rowkit_codec::tracestore::keys::{
    GLOBAL_TILE_KEY, SHARDS, TILE_SIZE, TYPE_DIGEST_MAP, ops_row_name, shard_prefix_range, tile_key,
};
use rowkit_codec::tracestore::ops::{params_from, trace_id_text};
use rowkit_codec::tracestore::{Layout, ParamSet, Params, decode_ops_gob};
use rowkit_statemachines::operation::{Flow, Operation, Start};
#[cfg(feature = "planted-bugs")]
use rowkit_statemachines::planted::PlantedBug;
use rowkit_statemachines::tracestore::{
    AssignDigestIds, Put, PutEntry, ReadRange, Tile, TraceStoreSchema, TraceStoreState,
};
use rowkit_statemachines::{
    Machine, ReadRowsRequest, Request, Response, SplitMix64, StoreError, Tag, Timestamp,
};

use super::{
    CHECK_EVERY, CheckOutcome, Checked, Outcome, Record, RepairLog, SimMachine, Workload, check_op,
    check_options, erase, verify_concurrent_checks, verify_settled_checks,
};
use rowkit_client::tracestore::{TraceStore, setup_table};
use rowkit_client::{CallOptions, SyncDriver, block_on};
use rowkit_statemachines::check::CheckTarget;
use rowkit_statemachines::tracestore::Check;
use rowkit_store::MemoryStore;
use rowkit_store::driver::ManualClock;

/// The workload's table (the migration's source, `T1`).
pub const TABLE: &str = "gold";
/// Operation deadline: long enough to ride out injected failures, short enough that a
/// clock jump can expire it.
const DEADLINE_US: i64 = 60_000_000;
/// Traces of the universe.
const TRACES: usize = 4;
/// Commits written: two in each of the first two tiles.
const COMMITS: [i64; 4] = [1, 2, TILE_SIZE as i64 + 1, TILE_SIZE as i64 + 2];
/// Distinct digests values are drawn from.
const DIGESTS: usize = 8;

/// A trace's params: its name, and a config that varies with it (so the OPS has two keys
/// with several values each).
fn trace_params(t: usize) -> Params {
    params_from([
        ("name", format!("test_{t}")),
        ("config", ["8888", "gles", "vk"][t % 3].to_string()),
    ])
}

fn digest(d: usize) -> String {
    format!("{:032x}", 0xd1_9e57_u64 * 1_000 + d as u64)
}

/// An operation of a writer.
#[derive(Clone, PartialEq, Eq)]
pub enum TraceStoreOp {
    /// `Put(commit, entries, ts)` of `(trace, digest)` pairs (universe indices).
    Put {
        /// The commit's repo index.
        commit: i64,
        /// `(trace, digest)` pairs, traces distinct.
        values: Vec<(usize, usize)>,
    },
    /// `ReadRange(first, last)`.
    Read {
        /// First commit.
        first: i64,
        /// Last commit.
        last: i64,
    },
    /// `AssignDigestIds` (digest-id layout).
    Assign(Vec<usize>),
    /// A check of the table with `--fix` (its number in the run's [`RepairLog`]).
    Check(u64),
}

impl fmt::Debug for TraceStoreOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceStoreOp::Put { commit, values } => write!(f, "Put@{commit}{values:?}"),
            TraceStoreOp::Read { first, last } => write!(f, "ReadRange[{first}..={last}]"),
            TraceStoreOp::Assign(d) => write!(f, "AssignDigestIds{d:?}"),
            TraceStoreOp::Check(n) => write!(f, "Check#{n} --fix"),
        }
    }
}

impl TraceStoreOp {
    /// Whether it writes the cell `(trace, commit)`.
    fn writes(&self, trace: usize, at: i64) -> bool {
        matches!(self, TraceStoreOp::Put { commit, values } if *commit == at && values.iter().any(|v| v.0 == trace))
    }
}

/// What an operation returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceStoreOutput {
    /// A put finished.
    Written,
    /// A read's param set.
    Read(ParamSet),
    /// The ids assigned, in input order.
    Ids(Vec<u64>),
    /// A check's findings.
    Checked(CheckOutcome),
}

/// Writer states not running an operation; a crashed writer's state is gone (a new process
/// starts with an empty one).
type WriterPool = Rc<RefCell<Vec<TraceStoreState>>>;

/// A machine run by one writer: gives the state back to the pool when it ends.
struct Writer<F: Flow<Schema = TraceStoreSchema> + 'static> {
    op: Operation<'static, F>,
    pool: WriterPool,
}

impl<F: Flow<Schema = TraceStoreSchema> + 'static> Machine for Writer<F> {
    type Output = F::Output;
    type Event = ();
    type Error = rowkit_statemachines::tracestore::TraceStoreError;

    fn handle_response(&mut self, tag: Tag, r: Result<Response, StoreError>, now: Timestamp) {
        self.op.handle_response(tag, r, now);
    }
    fn handle_timeout(&mut self, now: Timestamp) {
        self.op.handle_timeout(now);
    }
    fn cancel(&mut self, now: Timestamp) {
        self.op.cancel(now);
    }
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.op.poll_request()
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        self.op.poll_abort()
    }
    fn poll_event(&mut self) -> Option<()> {
        // Only StreamTile emits events, and the workload never runs it.
        self.op.poll_event().map(drop)
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.op.poll_timeout()
    }
    fn result(&mut self) -> Option<Result<F::Output, Self::Error>> {
        let result = self.op.result()?;
        if let Some(state) = self.op.take_context() {
            self.pool.borrow_mut().push(state);
        }
        Some(result)
    }
}

/// The trace store workload (see the module doc).
#[derive(Debug)]
pub struct TraceStoreWorkload {
    layout: Layout,
    table: &'static str,
    pool: WriterPool,
    /// A bug planted in every writer's state (the simulator's self-test; this crate's
    /// `planted-bugs` feature).
    #[cfg(feature = "planted-bugs")]
    pub planted: Option<PlantedBug>,
    /// What each check of the run sent as writes (none may).
    check_writes: RepairLog,
    checks: u64,
}

impl TraceStoreWorkload {
    /// The workload on a table of `layout`.
    pub fn new(layout: Layout) -> TraceStoreWorkload {
        TraceStoreWorkload::on_table(layout, TABLE)
    }

    /// The workload on table `table` of `layout` (a migration's two tables).
    pub fn on_table(layout: Layout, table: &'static str) -> TraceStoreWorkload {
        TraceStoreWorkload {
            layout,
            table,
            pool: Rc::default(),
            #[cfg(feature = "planted-bugs")]
            planted: None,
            check_writes: RepairLog::default(),
            checks: 0,
        }
    }

    fn check_machine(&self, now: Timestamp, fix: bool, seed: u64) -> Check {
        let start = Start::within(now, seed, DEADLINE_US);
        Check::new(
            CheckTarget::new(self.table),
            self.layout,
            check_options(fix),
            start,
        )
    }

    /// The digest-id layout workload with `bug` planted in every writer.
    #[cfg(feature = "planted-bugs")]
    pub fn with_planted_bug(bug: PlantedBug) -> TraceStoreWorkload {
        TraceStoreWorkload {
            planted: Some(bug),
            ..TraceStoreWorkload::new(Layout::DigestId)
        }
    }

    /// A free writer's state, or a new writer's.
    fn writer(&self) -> TraceStoreState {
        self.pool.borrow_mut().pop().unwrap_or_else(|| {
            #[cfg_attr(not(feature = "planted-bugs"), expect(unused_mut))]
            let mut state = TraceStoreState::new(self.table, self.layout);
            #[cfg(feature = "planted-bugs")]
            state.set_planted_bug(self.planted);
            state
        })
    }

    /// The table's layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The table the workload's clients use.
    pub fn table(&self) -> &'static str {
        self.table
    }

    /// A range read of one of the two tiles (a reader's operation).
    pub fn next_read(rng: &mut SplitMix64) -> TraceStoreOp {
        let tile = (rng.next_u64() % 2) as i64 * i64::from(TILE_SIZE);
        TraceStoreOp::Read {
            first: tile,
            last: tile + i64::from(TILE_SIZE) - 1,
        }
    }

    /// A fresh reader's range read of the whole written range, as a machine (the
    /// operator's snapshot of the truth).
    pub fn read_everything(&self, now: Timestamp, seed: u64) -> ReadRange<'static> {
        ReadRange::new(
            TraceStoreState::new(self.table, self.layout),
            0,
            LAST_COMMIT,
            Start::within(now, seed, DEADLINE_US),
        )
    }

    fn run<F: Flow<Schema = TraceStoreSchema> + 'static>(
        &self,
        op: Operation<'static, F>,
    ) -> Writer<F> {
        Writer {
            op,
            pool: self.pool.clone(),
        }
    }
}

impl Default for TraceStoreWorkload {
    /// The digest-id layout (it has the id allocator).
    fn default() -> Self {
        TraceStoreWorkload::new(Layout::DigestId)
    }
}

/// The write deciding cell `(trace, commit)` at the end: `Ok(None)` untouched, `Err(())` open.
#[allow(clippy::result_unit_err)]
fn decide(
    history: &[Record<TraceStoreOp, TraceStoreOutput>],
    trace: usize,
    commit: i64,
) -> Result<Option<usize>, ()> {
    let writes: Vec<_> = history
        .iter()
        .filter(|r| r.op.writes(trace, commit))
        .collect();
    let Some(last) = writes.iter().max_by_key(|r| r.start) else {
        return Ok(None);
    };
    let decided = last.acknowledged()
        && writes
            .iter()
            .all(|r| std::ptr::eq(*r, *last) || r.end < last.start);
    match &last.op {
        TraceStoreOp::Put { values, .. } if decided => {
            Ok(values.iter().find(|v| v.0 == trace).map(|v| v.1))
        }
        _ => Err(()),
    }
}

fn read_all(
    store: &MemoryStore,
    table: &str,
    rows: RowSet,
    now: Timestamp,
) -> Result<Vec<rowkit_codec::model::Row>, String> {
    let request = ReadRowsRequest {
        table: table.into(),
        rows,
        filter: Some(RowFilter::PassAll),
        ..Default::default()
    };
    rowkit_client::read_rows_blocking(store, request, now).map_err(|e| e.to_string())
}

/// A tile's final OPS param set (newest `O:OPS` cell).
fn final_ops(
    store: &MemoryStore,
    table: &str,
    tile: i64,
    now: Timestamp,
) -> Result<ParamSet, String> {
    let rows = read_all(store, table, RowSet::key(ops_row_name(tile_key(tile))), now)?;
    let newest = rows
        .iter()
        .flat_map(|r| &r.cells)
        .filter(|c| c.family == FAMILY_OPS && c.qualifier == COLUMN_OPS)
        .max_by_key(|c| c.timestamp);
    match newest {
        None => Ok(ParamSet::new()),
        Some(c) => decode_ops_gob(&c.value)
            .map(|ops| ops.into_parts().1)
            .map_err(|e| format!("tile {tile}: OPS does not decode: {e}")),
    }
}

impl Workload for TraceStoreWorkload {
    type Op = TraceStoreOp;
    type Output = TraceStoreOutput;

    fn setup(&mut self, store: &MemoryStore, _now: Timestamp, _seed: u64) -> Result<(), String> {
        self.pool.borrow_mut().clear();
        self.check_writes.clear();
        self.checks = 0;
        let clock = ManualClock::new(Timestamp(0));
        block_on(setup_table(
            &SyncDriver::new(store, &clock),
            self.table,
            self.layout,
        ))
        .map_err(|e| e.to_string())
    }

    fn next_op(&mut self, rng: &mut SplitMix64) -> TraceStoreOp {
        let pick = |rng: &mut SplitMix64, n: usize| (rng.next_u64() % n as u64) as usize;
        // A range read costs 33 requests (32 shard scans and the OPS): reads are kept rare
        // so that 100 000 operations stay fast in a debug build.
        let kinds = if self.layout == Layout::DigestId {
            8
        } else {
            7
        };
        if rng.next_u64().is_multiple_of(CHECK_EVERY) {
            self.checks += 1;
            return TraceStoreOp::Check(self.checks);
        }
        match rng.next_u64() % kinds {
            0..=5 => {
                let commit = COMMITS[pick(rng, COMMITS.len())];
                let mut values: BTreeMap<usize, usize> = BTreeMap::new();
                for _ in 0..1 + pick(rng, 3) {
                    values.insert(pick(rng, TRACES), pick(rng, DIGESTS));
                }
                TraceStoreOp::Put {
                    commit,
                    values: values.into_iter().collect(),
                }
            }
            6 => Self::next_read(rng),
            _ => {
                let mut d: Vec<usize> = (0..1 + pick(rng, 3)).map(|_| pick(rng, DIGESTS)).collect();
                d.sort_unstable();
                d.dedup();
                TraceStoreOp::Assign(d)
            }
        }
    }

    fn start(&self, op: &TraceStoreOp, now: Timestamp, seed: u64) -> SimMachine<TraceStoreOutput> {
        let start = Start::within(now, seed, DEADLINE_US);
        let state = self.writer();
        match op {
            TraceStoreOp::Put { commit, values } => {
                let entries = values
                    .iter()
                    .map(|&(t, d)| PutEntry {
                        params: trace_params(t),
                        options: Params::new(),
                        digest: digest(d),
                    })
                    .collect();
                // Later puts carry newer timestamps: they override earlier values.
                let ts = now.truncate_to_millis();
                let m = Put::new(state, *commit, None, entries, ts, start);
                erase(self.run(m), |_rows| TraceStoreOutput::Written)
            }
            TraceStoreOp::Read { first, last } => {
                let m = ReadRange::new(state, *first, *last, start);
                erase(self.run(m), |tile| TraceStoreOutput::Read(tile.paramset))
            }
            TraceStoreOp::Assign(d) => {
                let digests = d.iter().map(|&d| digest(d)).collect();
                let m = AssignDigestIds::new(state, digests, start);
                erase(self.run(m), TraceStoreOutput::Ids)
            }
            TraceStoreOp::Check(n) => check_op(
                self.check_machine(now, true, seed),
                *n,
                &self.check_writes,
                TraceStoreOutput::Checked,
            ),
        }
    }

    fn check(
        &mut self,
        store: &MemoryStore,
        now: Timestamp,
        history: &[Record<TraceStoreOp, TraceStoreOutput>],
    ) -> Result<Checked, String> {
        let mut checked = Checked::default();
        // 1. The digest map (first: a corrupt map also fails the final read): one digest per id, one id per digest; assignments agree.
        if self.layout == Layout::DigestId {
            let mut by_id: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
            let mut by_digest: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
            for s in 0..SHARDS {
                let range = shard_prefix_range(s, TYPE_DIGEST_MAP, GLOBAL_TILE_KEY);
                for row in read_all(store, self.table, RowSet::range(range), now)? {
                    for cell in row.cells.iter().filter(|c| c.family == FAMILY_DIGEST_MAP) {
                        let d = digest_of_map_cell(&row.key, &cell.qualifier)
                            .map_err(|e| format!("digest map: {e}"))?;
                        let id = decode_digest_map_value(&cell.value)
                            .map_err(|e| format!("digest map: {e}"))?;
                        by_id.entry(id).or_default().insert(d.clone());
                        by_digest.entry(d).or_default().insert(id);
                    }
                }
            }
            for (id, digests) in &by_id {
                if digests.len() > 1 || *id == 0 {
                    return Err(format!("digest id {id} handed out to {digests:?}"));
                }
                checked.decided += 1;
            }
            for (d, ids) in &by_digest {
                if ids.len() > 1 {
                    return Err(format!("digest {d} has ids {ids:?}"));
                }
            }
            for r in history {
                let (TraceStoreOp::Assign(ds), Outcome::Done(Ok(TraceStoreOutput::Ids(ids)))) =
                    (&r.op, &r.outcome)
                else {
                    continue;
                };
                for (&d, &id) in ds.iter().zip(ids) {
                    let stored = by_digest.get(&digest(d));
                    if stored.is_none_or(|s| !s.contains(&id)) {
                        return Err(format!(
                            "AssignDigestIds at {} gave {} id {id}, the map holds {stored:?}",
                            r.start.0,
                            digest(d)
                        ));
                    }
                    checked.decided += 1;
                }
            }
        }
        let clock = ManualClock::new(now);
        let fresh = block_on(TraceStore::open(
            SyncDriver::new(store, &clock),
            self.table,
            Some(self.layout),
        ))
        // Gold's reader: the table the run ends on, whatever marker it holds.
        .map(|g| g.unaware().with_options(seeded(1)))
        .map_err(|e| format!("open: {e}"))?;
        let tile =
            block_on(fresh.read_range(0, LAST_COMMIT)).map_err(|e| format!("final read: {e}"))?;
        // 2. Decided cells read back their digest.
        check_tile(&tile, history, &mut checked)?;
        // 3. The OPS only grows: acknowledged puts' params are in the final OPS...
        let finals = [
            final_ops(store, self.table, 0, now)?,
            final_ops(store, self.table, 1, now)?,
        ];
        for r in history.iter().filter(|r| r.acknowledged()) {
            let TraceStoreOp::Put { commit, values } = &r.op else {
                continue;
            };
            let ops = &finals[(*commit / i64::from(TILE_SIZE)) as usize];
            for &(t, _) in values {
                for (k, v) in trace_params(t) {
                    if !ops.get(&k).is_some_and(|vs| vs.contains(&v)) {
                        return Err(format!(
                            "Put@{commit} at {} wrote {k}={v}, the final OPS lacks it: {ops:?}",
                            r.start.0
                        ));
                    }
                    checked.decided += 1;
                }
            }
        }
        // ... and no acknowledged read lost a value an earlier one of its range had.
        let reads: Vec<_> = history
            .iter()
            .filter_map(|r| match (&r.op, &r.outcome) {
                (
                    TraceStoreOp::Read { first, .. },
                    Outcome::Done(Ok(TraceStoreOutput::Read(ps))),
                ) => Some((r, *first, ps)),
                _ => None,
            })
            .collect();
        for (later, first, ps) in &reads {
            // The latest earlier read of the range suffices (subset is transitive).
            let earlier = reads
                .iter()
                .filter(|(r, f, _)| f == first && r.end < later.start)
                .max_by_key(|(r, _, _)| r.end);
            let Some((e, _, eps)) = earlier else {
                continue;
            };
            for (k, vs) in eps.iter() {
                for v in vs {
                    if !ps.get(k).is_some_and(|l| l.contains(v)) {
                        return Err(format!(
                            "read of {first} at {} lost {k}={v} that the read at {} had",
                            later.start.0, e.start.0
                        ));
                    }
                }
            }
            checked.decided += 1;
        }
        // Last, once the invariants hold: checks are report-only, and find nothing among the
        // writers or after them.
        if let Some(r) = history
            .iter()
            .find(|r| matches!(r.op, TraceStoreOp::Check(n) if self.check_writes.wrote_any(n)))
        {
            return Err(format!("{:?} sent a write", r.op));
        }
        let checks = history.iter().filter_map(|r| match &r.outcome {
            Outcome::Done(Ok(TraceStoreOutput::Checked(outcome))) => Some((&r.op, outcome)),
            _ => None,
        });
        verify_concurrent_checks(checks, &[], &mut checked)?;
        verify_settled_checks(
            store,
            now,
            |fix, seed| self.check_machine(now, fix, seed),
            &mut checked,
        )?;
        Ok(checked)
    }
}

/// The range every check reads: the two tiles the workload writes.
pub const LAST_COMMIT: i64 = 2 * TILE_SIZE as i64 - 1;

/// Checks that every cell of `tile` (a read of `0..=`[`LAST_COMMIT`]) whose last write
/// `history` decides reads back that write's digest, and never-written cells read missing.
pub fn check_tile(
    tile: &Tile,
    history: &[Record<TraceStoreOp, TraceStoreOutput>],
    checked: &mut Checked,
) -> Result<(), String> {
    for trace in 0..TRACES {
        let id = trace_id_text(&trace_params(trace));
        for commit in COMMITS {
            let read = tile
                .commits
                .iter()
                .position(|&c| i64::from(c) == commit)
                .and_then(|col| tile.traces.get(&id).and_then(|t| t.digests.get(col)))
                .cloned()
                .unwrap_or_default();
            let want = match decide(history, trace, commit) {
                Ok(Some(d)) => digest(d),
                Ok(None) => String::new(),
                Err(()) => {
                    checked.undecided += 1;
                    continue;
                }
            };
            if read != want {
                return Err(format!(
                    "trace {id} commit {commit}: read {read:?}, the history says {want:?}"
                ));
            }
            checked.decided += 1;
        }
    }
    Ok(())
}

/// Facade options with `seed` (default deadlines).
fn seeded(seed: u64) -> CallOptions {
    CallOptions {
        seed,
        ..CallOptions::default()
    }
}
