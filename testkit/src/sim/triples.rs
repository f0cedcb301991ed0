//! The triple store under the simulator (`spec/triples.md`): clients add and remove small
//! batches of one graph's triples and ask `Exist`; afterwards
//!
//! - every triple whose last write the history determines (an acknowledged add or remove
//!   that overlapped no other write of that triple) has all four index cells (OSP, POS, SOP,
//!   SPO) holding its text after an add, and none of them after a remove;
//! - every acknowledged `Exist` whose answer the history determines answered right.
//!
//! Writes that failed or crashed may have applied any prefix of their cells; a later
//! acknowledged write of the same triple decides it again.
//!
//! Checks (`spec/check.md` §4, with `--fix`) run among the writers. A check's repair writes
//! a triple's missing index cells, the write the triple's add would have made, so it counts as a
//! write of that triple for the whole check. Concurrent checks may only report what failed
//! writes leave (`missing_index`); once the writers have settled, a check with `--fix` leaves
//! nothing and a second check finds nothing, before the invariants above are checked (so the
//! repairs never undo a decided write).

use std::fmt;

use rowkit_codec::model::{ColumnFamily, RowSet};
use rowkit_codec::triples::{Triple, keys};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::triples::{
    AddTriples, Check, Exist, NewGraph, OperationConfig, RemoveTriples,
};
use rowkit_statemachines::{ReadRowsRequest, SplitMix64, Timestamp};

use super::{
    CHECK_EVERY, CheckOutcome, Checked, Outcome, Record, RepairLog, SimMachine, Workload, check_op,
    check_options, erase, verify_concurrent_checks, verify_settled_checks,
};
use rowkit_store::driver::ManualClock;
use rowkit_store::{MemoryStore, Store};

const GRAPH: &[u8] = b"sim";
const TABLE: &str = keys::DEFAULT_TABLE;
/// Operation deadline: long enough to ride out injected failures, short enough that a
/// clock jump can expire it.
const DEADLINE_US: i64 = 60_000_000;

/// An operation on the universe's triples (by index).
#[derive(Clone, PartialEq, Eq)]
pub enum TriplesOp {
    /// `AddTriples`.
    Add(Vec<usize>),
    /// `RemoveTriples`.
    Remove(Vec<usize>),
    /// `Exist`.
    Exist(usize),
    /// A check of the graph with `--fix` (its number in the run's [`RepairLog`]).
    Check(u64),
}

impl fmt::Debug for TriplesOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TriplesOp::Add(t) => write!(f, "AddTriples{t:?}"),
            TriplesOp::Remove(t) => write!(f, "RemoveTriples{t:?}"),
            TriplesOp::Exist(t) => write!(f, "Exist[{t}]"),
            TriplesOp::Check(n) => write!(f, "Check#{n} --fix"),
        }
    }
}

/// What an operation returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TriplesOutput {
    /// A write finished.
    Written,
    /// `Exist`'s answer.
    Exists(bool),
    /// A check's findings.
    Checked(CheckOutcome),
}

/// The triple store workload (see the module doc).
#[derive(Debug)]
pub struct TriplesWorkload {
    universe: Vec<Triple>,
    /// A bug planted in every machine this workload starts (the simulator's self-test; this
    /// crate's `planted-bugs` feature).
    #[cfg(feature = "planted-bugs")]
    pub planted: Option<rowkit_statemachines::planted::PlantedBug>,
    /// The rows each check of the run wrote.
    repairs: RepairLog,
    checks: u64,
}

impl Default for TriplesWorkload {
    fn default() -> Self {
        TriplesWorkload {
            universe: universe(),
            #[cfg(feature = "planted-bugs")]
            planted: None,
            repairs: RepairLog::default(),
            checks: 0,
        }
    }
}

/// The finding a concurrent check may report: what a failed or crashed write leaves.
const CONCURRENT_KINDS: [&str; 1] = ["missing_index"];

/// Triples over a few subjects, predicates (immutable and temporal) and objects, none of
/// which share a cell (`spec/triples.md` §3.3 cell sharing would blur the check).
fn universe() -> Vec<Triple> {
    let predicates = [
        "\"knows\"@[]".to_string(),
        "\"met\"@[2015-07-19T13:12:04.669618843-07:00]".to_string(),
        "\"met\"@[2016-01-01T00:00:00Z]".to_string(),
    ];
    let mut cells = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for s in 0..4 {
        for p in &predicates {
            for o in ["/u<o0>", "/u<o1>", "\"x\"^^type:text"] {
                let text = format!("/u<s{s}>\t{p}\t{o}");
                let Ok(triple) = Triple::parse(text.as_bytes()) else {
                    continue;
                };
                let mine: Vec<_> = keys::triple_cells(GRAPH, &triple)
                    .into_iter()
                    .map(|c| (c.row_key, c.family, c.qualifier, c.timestamp))
                    .collect();
                if mine.iter().all(|c| !cells.contains(c)) {
                    cells.extend(mine);
                    out.push(triple);
                }
            }
        }
    }
    out
}

fn config() -> OperationConfig {
    OperationConfig::new(TABLE)
}

/// An operation starting at `now` with `seed`, until the simulator's deadline.
fn start_at(now: Timestamp, seed: u64) -> Start {
    Start::within(now, seed, DEADLINE_US)
}

impl TriplesWorkload {
    /// The workload with `bug` planted in every machine it starts.
    #[cfg(feature = "planted-bugs")]
    pub fn with_planted_bug(bug: rowkit_statemachines::planted::PlantedBug) -> TriplesWorkload {
        TriplesWorkload {
            planted: Some(bug),
            ..Default::default()
        }
    }

    /// How many triples the universe has.
    pub fn universe_len(&self) -> usize {
        self.universe.len()
    }

    /// Whether `op` writes (or, a check, may have repaired) triple `i`.
    fn writes(&self, op: &TriplesOp, i: usize) -> bool {
        match op {
            TriplesOp::Add(t) | TriplesOp::Remove(t) => t.contains(&i),
            TriplesOp::Exist(_) => false,
            TriplesOp::Check(n) => keys::triple_cells(GRAPH, &self.universe[i])
                .iter()
                .any(|c| self.repairs.wrote(*n, &c.row_key, c.family, c.qualifier)),
        }
    }

    fn check_machine(now: Timestamp, fix: bool, seed: u64) -> Check {
        Check::new(
            config(),
            Some(GRAPH),
            check_options(fix),
            start_at(now, seed),
        )
    }

    /// Which of a triple's four cells hold its text.
    fn cells_present(
        &self,
        store: &MemoryStore,
        now: Timestamp,
        i: usize,
    ) -> Result<[bool; 4], String> {
        let triple = &self.universe[i];
        let text = triple.to_text();
        let mut present = [false; 4];
        for (n, cell) in keys::triple_cells(GRAPH, triple).iter().enumerate() {
            let request = ReadRowsRequest {
                table: TABLE.into(),
                rows: RowSet::key(cell.row_key.clone()),
                ..Default::default()
            };
            let rows = rowkit_client::read_rows_blocking(store, request, now)
                .map_err(|e| e.to_string())?;
            present[n] = rows.iter().flat_map(|r| &r.cells).any(|c| {
                c.family == cell.family
                    && c.qualifier == cell.qualifier
                    && c.timestamp == cell.timestamp
                    && c.value == text
            });
        }
        Ok(present)
    }
}

/// What the history says about a triple's state at some instant.
enum Decided<'h> {
    /// No write of it started before: absent.
    Untouched,
    /// This acknowledged write decides it: it ended before the instant, and every other
    /// write of the triple started before the instant ended before it started.
    By(&'h Record<TriplesOp, TriplesOutput>),
    /// Overlapping or unacknowledged writes leave it open.
    Open,
}

impl Decided<'_> {
    /// Whether the triple is present, if decided.
    fn present(&self) -> Option<bool> {
        match self {
            Decided::Untouched => Some(false),
            Decided::By(w) => Some(matches!(w.op, TriplesOp::Add(_))),
            Decided::Open => None,
        }
    }
}

fn decide<'h>(
    workload: &TriplesWorkload,
    history: &'h [Record<TriplesOp, TriplesOutput>],
    i: usize,
    at: Timestamp,
) -> Decided<'h> {
    let writes: Vec<_> = history
        .iter()
        .filter(|r| workload.writes(&r.op, i) && r.start <= at)
        .collect();
    let Some(last) = writes.iter().max_by_key(|r| r.start) else {
        return Decided::Untouched;
    };
    // A check's repair is an add of the triple when the check saw it partly written: it keeps
    // the triple open, never decides it.
    let decided = last.acknowledged()
        && !matches!(last.op, TriplesOp::Check(_))
        && last.end <= at
        && writes
            .iter()
            .all(|r| std::ptr::eq(*r, *last) || r.end < last.start);
    if decided {
        Decided::By(last)
    } else {
        Decided::Open
    }
}

impl Workload for TriplesWorkload {
    type Op = TriplesOp;
    type Output = TriplesOutput;

    fn setup(&mut self, store: &MemoryStore, now: Timestamp, _seed: u64) -> Result<(), String> {
        self.repairs.clear();
        self.checks = 0;
        let families = [
            ColumnFamily::new(keys::FAMILY_GRAPH),
            ColumnFamily::new(keys::FAMILY_IMMUTABLE),
            ColumnFamily::new(keys::FAMILY_TEMPORAL),
        ];
        store
            .create_table(TABLE, &families)
            .map_err(|e| e.to_string())?;
        let clock = ManualClock::new(now);
        rowkit_client::run_blocking(
            store,
            &clock,
            NewGraph::new(config(), GRAPH, start_at(now, 0)),
            |_| {},
        )
        .map_err(|e| format!("{e}"))
    }

    fn next_op(&mut self, rng: &mut SplitMix64) -> TriplesOp {
        let n = self.universe.len() as u64;
        let batch = |rng: &mut SplitMix64| {
            let len = 1 + rng.next_u64() % 3;
            let mut b: Vec<usize> = (0..len).map(|_| (rng.next_u64() % n) as usize).collect();
            b.sort_unstable();
            b.dedup();
            b
        };
        if rng.next_u64().is_multiple_of(CHECK_EVERY) {
            self.checks += 1;
            return TriplesOp::Check(self.checks);
        }
        match rng.next_u64() % 5 {
            0 | 1 => TriplesOp::Add(batch(rng)),
            2 | 3 => TriplesOp::Remove(batch(rng)),
            _ => TriplesOp::Exist((rng.next_u64() % n) as usize),
        }
    }

    fn start(&self, op: &TriplesOp, now: Timestamp, seed: u64) -> SimMachine<TriplesOutput> {
        let config = OperationConfig {
            #[cfg(feature = "planted-bugs")]
            planted: self.planted,
            ..config()
        };
        let pick = |ix: &[usize]| -> Vec<Triple> {
            ix.iter().map(|&i| self.universe[i].clone()).collect()
        };
        match op {
            TriplesOp::Add(ix) => erase(
                AddTriples::new(config, GRAPH, pick(ix), start_at(now, seed)),
                |()| TriplesOutput::Written,
            ),
            TriplesOp::Remove(ix) => erase(
                RemoveTriples::new(config, GRAPH, pick(ix), start_at(now, seed)),
                |()| TriplesOutput::Written,
            ),
            TriplesOp::Exist(i) => erase(
                Exist::new(
                    config,
                    GRAPH,
                    self.universe[*i].clone(),
                    start_at(now, seed),
                ),
                TriplesOutput::Exists,
            ),
            TriplesOp::Check(n) => check_op(
                Self::check_machine(now, true, seed),
                *n,
                &self.repairs,
                TriplesOutput::Checked,
            ),
        }
    }

    fn check(
        &mut self,
        store: &MemoryStore,
        now: Timestamp,
        history: &[Record<TriplesOp, TriplesOutput>],
    ) -> Result<Checked, String> {
        let mut checked = Checked::default();
        let checks = history.iter().filter_map(|r| match &r.outcome {
            Outcome::Done(Ok(TriplesOutput::Checked(outcome))) => Some((&r.op, outcome)),
            _ => None,
        });
        verify_concurrent_checks(checks, &CONCURRENT_KINDS, &mut checked)?;
        // Before the invariants: they must hold on the repaired table.
        verify_settled_checks(
            store,
            now,
            |fix, seed| Self::check_machine(now, fix, seed),
            &mut checked,
        )?;
        for i in 0..self.universe.len() {
            let Some(want) = decide(self, history, i, now).present() else {
                checked.undecided += 1;
                continue;
            };
            let present = self.cells_present(store, now, i)?;
            if present != [want; 4] {
                return Err(format!(
                    "triple [{i}] {:?}: index cells OSP/POS/SOP/SPO present {present:?}, expected all {}",
                    String::from_utf8_lossy(&self.universe[i].to_text()),
                    if want { "present" } else { "absent" }
                ));
            }
            checked.decided += 1;
        }
        for r in history {
            let (TriplesOp::Exist(i), Outcome::Done(Ok(TriplesOutput::Exists(answer)))) =
                (&r.op, &r.outcome)
            else {
                continue;
            };
            // Decided only when no write of the triple overlaps the Exist.
            let overlapping = history
                .iter()
                .any(|w| self.writes(&w.op, *i) && w.start <= r.end && w.end >= r.start);
            let want = if overlapping {
                None
            } else {
                decide(self, history, *i, r.start).present()
            };
            match want {
                Some(want) if want != *answer => {
                    return Err(format!(
                        "Exist[{i}] at {} answered {answer}, the history says {want}",
                        r.start.0
                    ));
                }
                Some(_) => checked.decided += 1,
                None => checked.undecided += 1,
            }
        }
        Ok(checked)
    }
}
