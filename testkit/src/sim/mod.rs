//! Deterministic fault simulation: many machines of one schema interleaved by a seeded
//! scheduler over a [`MemoryStore`], with injected faults, and a schema [`Workload`] that
//! knows what must hold afterwards.
//!
//! Sans-IO machines make this possible: a machine only emits requests and takes responses,
//! so the simulator decides, one step at a time and from one seed, which client sends its
//! next request, which response arrives, when time moves and what goes wrong:
//!
//! - **failed request**: the store never sees it; the client gets `UNAVAILABLE`;
//! - **lost response**: the store applied it, the client gets `UNAVAILABLE` (for a stream,
//!   after a random number of parts);
//! - **crash**: the client's machine is dropped between two requests, its operation's
//!   outcome unknown;
//! - **clock jump**: time leaps forward (up to 10 s), firing back-offs and expiries;
//! - **delayed request**: the request reaches the store late, after many steps of other
//!   clients (a slow path through the network); its client waits for it. This is how a
//!   write lands after everything its sender read has changed;
//! - **failed entries**: some entries of a MutateRows fail, the others apply (Bigtable's
//!   MutateRows is not atomic across rows). This is how a triple loses an index row.
//!
//! The workloads also run their schema's table check (`spec/check.md`, with `--fix`) as an
//! operation among the writers ([`check_op`]): what it may report there, and that its repairs
//! never undo a decided write, is part of each workload's invariants, as is a check run once
//! the writers have settled, which must leave nothing ([`check_settled`]).
//!
//! After the operation budget, clients finish without faults, the workload's repairs run
//! (fsck, placeholder repair...), and [`Workload::check`] verifies the invariants against
//! the store and the acknowledged history. A failing run is shrunk to the smallest operation
//! budget that still fails for its seed and reported with that run's trace; rerunning the
//! seed reproduces it exactly (the store, the machines and the scheduler draw from seeds).
//!
//! Reads are answered from the store at the instant they are sent (the parts then arrive
//! one by one, interleaved with other clients' steps); Bigtable gives no stronger guarantee
//! across rows, and none weaker within one.
//!
//! ```
//! use rowkit_testkit::sim::{self, SimConfig};
//! use rowkit_testkit::sim::triples::TriplesWorkload;
//!
//! let report = sim::run(&SimConfig::quick(7), &mut TriplesWorkload::default()).unwrap();
//! assert!(report.operations > 0);
//! ```

pub mod admin;
pub mod migration;
pub mod mounttable;
pub mod objmeta;
pub mod objmeta_migrate;
pub mod tracestore;
pub mod tracestore_migrate;
pub mod triples;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::{self, Debug, Display};
use std::rc::Rc;

use rowkit_codec::model::Mutation;
use rowkit_statemachines::check::{CheckEvent, CheckOptions, CheckSummary, Finding};
use rowkit_statemachines::{
    Code, Machine, MutateRowsEntryResult, MutateRowsResponse, Request, Response, SplitMix64,
    StoreError, Tag, Timestamp,
};

use rowkit_store::{MemoryStore, Reply, Store, StoreOptions};

/// Fault rates, in parts per 10 000 of the chances to inject them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultRates {
    /// Per request sent: the store never sees it.
    pub fail_request: u32,
    /// Per request sent: applied, but the response is lost.
    pub lose_response: u32,
    /// Per step of a running client: the client crashes (its machine is dropped).
    pub crash: u32,
    /// Per step: the clock jumps forward.
    pub clock_jump: u32,
    /// Per request sent: it reaches the store late (see the module doc); one that its client
    /// aborted meanwhile still lands, unanswered; one whose client crashes is dropped with it.
    /// 0 by default: the rates above were tuned without it, and a non-zero rate changes every
    /// seed's schedule.
    pub delay_request: u32,
    /// Per MutateRows request of two entries or more: some of its entries fail (`UNAVAILABLE`
    /// in their status) and the others apply, as Bigtable's MutateRows may answer. 0 by
    /// default, for the same reason as `delay_request`.
    pub fail_entries: u32,
}

impl Default for FaultRates {
    fn default() -> Self {
        FaultRates {
            fail_request: 300,
            lose_response: 300,
            crash: 40,
            clock_jump: 20,
            delay_request: 0,
            fail_entries: 0,
        }
    }
}

/// One simulation run.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Seeds the scheduler, the faults, the machines and the store.
    pub seed: u64,
    /// Operations started before the run winds down.
    pub operations: u64,
    /// Clients running operations concurrently.
    pub clients: usize,
    /// Fault rates.
    pub faults: FaultRates,
    /// Where the clock starts.
    pub start: Timestamp,
    /// Bigtable's garbage collection runs in the background, at times of its choosing: every
    /// this many requests the store collects every table by its families' GC rules
    /// (`spec/bigtable.md` 12). 0: never (cells pile up as if GC were far behind).
    pub gc_every: u64,
}

impl SimConfig {
    /// 200 operations over 4 clients with the default fault rates.
    pub fn quick(seed: u64) -> SimConfig {
        SimConfig {
            seed,
            operations: 200,
            clients: 4,
            faults: FaultRates::default(),
            start: Timestamp::from_secs(1_700_000_000),
            gc_every: 0,
        }
    }
}

/// A schema operation as the simulator runs it: any machine, events dropped, errors as text.
pub type SimMachine<O> = Box<dyn Machine<Output = O, Event = (), Error = String>>;

/// How an operation ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome<O> {
    /// The machine finished (its result, errors as text).
    Done(Result<O, String>),
    /// The client crashed while it ran: any prefix of its requests may have applied.
    Crashed,
}

/// One operation of the history: what ran, when, and how it ended.
#[derive(Clone, Debug)]
pub struct Record<Op, O> {
    /// The operation.
    pub op: Op,
    /// When it started.
    pub start: Timestamp,
    /// When it ended (finished or crashed).
    pub end: Timestamp,
    /// How it ended.
    pub outcome: Outcome<O>,
}

impl<Op, O> Record<Op, O> {
    /// Whether the operation finished successfully.
    pub fn acknowledged(&self) -> bool {
        matches!(self.outcome, Outcome::Done(Ok(_)))
    }
}

/// A schema's side of the simulation: what operations to run and what must hold after.
pub trait Workload {
    /// An operation, as traces print it.
    type Op: Clone + Debug;
    /// What an operation's machine returns.
    type Output: Clone + Debug;

    /// Resets the workload for a new run and prepares the store (tables, graphs...).
    fn setup(&mut self, store: &MemoryStore, now: Timestamp, seed: u64) -> Result<(), String>;
    /// The next operation to start.
    fn next_op(&mut self, rng: &mut SplitMix64) -> Self::Op;
    /// The machine running `op` from `now`.
    fn start(&self, op: &Self::Op, now: Timestamp, seed: u64) -> SimMachine<Self::Output>;
    /// Operations that repair what crashes left behind, run one by one without faults
    /// after the clients are done. They may look at the store as it stands then (as an
    /// operator's repair tool does, e.g. `rowkit s3 repair` finding placeholder masters).
    /// A repair whose machine waits for a timer (a delayed repair) gets it: time moves to
    /// the machine's `poll_timeout` when nothing else is left to do. Default: none.
    fn repairs(
        &mut self,
        _store: &MemoryStore,
        _now: Timestamp,
        _history: &[Record<Self::Op, Self::Output>],
    ) -> Vec<Self::Op> {
        Vec::new()
    }
    /// Checks the invariants against the store and the history (repairs included).
    fn check(
        &mut self,
        store: &MemoryStore,
        now: Timestamp,
        history: &[Record<Self::Op, Self::Output>],
    ) -> Result<Checked, String>;
}

/// What a successful [`Workload::check`] verified.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Facts checked exactly (e.g. triples whose final state the history determines).
    pub decided: u64,
    /// Facts the history leaves open (e.g. concurrent add and remove of one triple).
    pub undecided: u64,
    /// Checks (`spec/check.md`) whose findings were verified: those run among the writers
    /// and those run once they had settled.
    pub checks: u64,
    /// Findings those checks repaired.
    pub check_repairs: u64,
}

impl Checked {
    /// Counts a verified check's outcome.
    pub fn check(&mut self, outcome: &CheckOutcome) {
        self.checks += 1;
        self.check_repairs += outcome.summary.repaired;
    }
}

/// Counters of one or more runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimReport {
    /// Operations started (repairs included).
    pub operations: u64,
    /// Operations that finished successfully.
    pub acknowledged: u64,
    /// Requests the store received.
    pub requests: u64,
    /// Requests failed before the store.
    pub failed_requests: u64,
    /// Responses lost after the store applied the request.
    pub lost_responses: u64,
    /// Clients crashed mid-operation.
    pub crashes: u64,
    /// Clock jumps.
    pub clock_jumps: u64,
    /// Requests that reached the store late.
    pub delayed_requests: u64,
    /// MutateRows requests of which some entries failed.
    pub failed_entries: u64,
    /// What the checks verified.
    pub checked: Checked,
}

impl SimReport {
    /// Faults of every kind.
    pub fn faults(&self) -> u64 {
        self.failed_requests
            + self.lost_responses
            + self.crashes
            + self.clock_jumps
            + self.delayed_requests
            + self.failed_entries
    }

    /// Adds another run's counters.
    pub fn add(&mut self, other: &SimReport) {
        self.operations += other.operations;
        self.acknowledged += other.acknowledged;
        self.requests += other.requests;
        self.failed_requests += other.failed_requests;
        self.lost_responses += other.lost_responses;
        self.crashes += other.crashes;
        self.clock_jumps += other.clock_jumps;
        self.delayed_requests += other.delayed_requests;
        self.failed_entries += other.failed_entries;
        self.checked.decided += other.checked.decided;
        self.checked.undecided += other.checked.undecided;
        self.checked.checks += other.checked.checks;
        self.checked.check_repairs += other.checked.check_repairs;
    }
}

impl Display for SimReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} operations ({} acknowledged), {} requests, {} faults ({} failed requests, {} lost responses, {} crashes, {} clock jumps, {} delayed requests, {} partly failed MutateRows), {} facts checked ({} left open by concurrency), {} table checks verified ({} findings repaired)",
            self.operations,
            self.acknowledged,
            self.requests,
            self.faults(),
            self.failed_requests,
            self.lost_responses,
            self.crashes,
            self.clock_jumps,
            self.delayed_requests,
            self.failed_entries,
            self.checked.decided,
            self.checked.undecided,
            self.checked.checks,
            self.checked.check_repairs
        )
    }
}

/// A run whose invariants did not hold: reproduce with `seed` and `operations`.
#[derive(Clone, Debug)]
pub struct SimFailure {
    /// The run's seed.
    pub seed: u64,
    /// The smallest operation budget found that still fails.
    pub operations: u64,
    /// What did not hold.
    pub message: String,
    /// Every step of the failing run that touched an operation, in order.
    pub trace: Vec<String>,
}

impl Display for SimFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "simulation failed: seed {} with {} operations: {}",
            self.seed, self.operations, self.message
        )?;
        writeln!(f, "trace ({} steps):", self.trace.len())?;
        for line in &self.trace {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SimFailure {}

/// Wraps a machine for the simulator: events dropped, errors as text, output mapped.
pub struct Erased<M, F> {
    machine: M,
    map: F,
}

impl<M, F, O> Machine for Erased<M, F>
where
    M: Machine,
    M::Error: Display,
    F: FnMut(M::Output) -> O,
{
    type Output = O;
    type Event = ();
    type Error = String;

    fn handle_response(&mut self, tag: Tag, r: Result<Response, StoreError>, now: Timestamp) {
        self.machine.handle_response(tag, r, now);
    }
    fn handle_timeout(&mut self, now: Timestamp) {
        self.machine.handle_timeout(now);
    }
    fn cancel(&mut self, now: Timestamp) {
        self.machine.cancel(now);
    }
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.machine.poll_request()
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        self.machine.poll_abort()
    }
    fn poll_event(&mut self) -> Option<()> {
        self.machine.poll_event().map(drop)
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.machine.poll_timeout()
    }
    fn result(&mut self) -> Option<Result<O, String>> {
        let result = self.machine.result()?;
        Some(result.map(&mut self.map).map_err(|e| e.to_string()))
    }
}

/// `machine` for the simulator, its output mapped by `map`.
pub fn erase<M, O>(machine: M, map: impl FnMut(M::Output) -> O + 'static) -> SimMachine<O>
where
    M: Machine + 'static,
    M::Error: Display,
    O: 'static,
{
    Box::new(Erased { machine, map })
}

/// The columns each check operation of a run may have written (its repairs), by the check's
/// number: filled as its machine emits requests, so a check that crashes or whose answer is
/// lost still counts every repair it sent. The workloads treat such a repair as a write of
/// those columns that runs for the whole check (its exact instant is not in the history).
#[derive(Clone, Debug, Default)]
pub struct RepairLog(Rc<RefCell<BTreeMap<u64, BTreeSet<WrittenColumn>>>>);

/// A column a request may write: `family`/`qualifier` `None` when it may write any of them.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct WrittenColumn {
    row_key: Vec<u8>,
    family: Option<String>,
    qualifier: Option<Vec<u8>>,
}

/// One log is equal only to itself (operations holding it compare by identity).
impl PartialEq for RepairLog {
    fn eq(&self, other: &RepairLog) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for RepairLog {}

impl RepairLog {
    /// Forgets every check (a new run).
    pub fn clear(&self) {
        self.0.borrow_mut().clear();
    }

    /// Records what `request`, sent by check `id`, may write.
    fn record(&self, id: u64, request: &Request) {
        let column = |row_key: &[u8], m: &Mutation| WrittenColumn {
            row_key: row_key.to_vec(),
            family: m.family().map(str::to_string),
            qualifier: match m {
                Mutation::SetCell { qualifier, .. }
                | Mutation::DeleteFromColumn { qualifier, .. } => Some(qualifier.clone()),
                Mutation::DeleteFromFamily { .. } | Mutation::DeleteFromRow => None,
            },
        };
        let written: Vec<WrittenColumn> = match request {
            Request::MutateRow(r) => r.mutations.iter().map(|m| column(&r.row_key, m)).collect(),
            Request::CheckAndMutateRow(r) => r
                .true_mutations
                .iter()
                .chain(&r.false_mutations)
                .map(|m| column(&r.row_key, m))
                .collect(),
            Request::MutateRows(r) => r
                .entries
                .iter()
                .flat_map(|e| e.mutations.iter().map(|m| column(&e.row_key, m)))
                .collect(),
            Request::ReadModifyWriteRow(r) => vec![WrittenColumn {
                row_key: r.row_key.clone(),
                family: None,
                qualifier: None,
            }],
            Request::ReadRows(_) | Request::ReadRow(_) | Request::SampleRowKeys(_) => Vec::new(),
        };
        if !written.is_empty() {
            self.0.borrow_mut().entry(id).or_default().extend(written);
        }
    }

    /// The rows check `id` may have written.
    pub fn rows(&self, id: u64) -> BTreeSet<Vec<u8>> {
        self.0
            .borrow()
            .get(&id)
            .map_or_else(BTreeSet::new, |columns| {
                columns.iter().map(|c| c.row_key.clone()).collect()
            })
    }

    /// Whether check `id` sent any write.
    pub fn wrote_any(&self, id: u64) -> bool {
        self.0.borrow().get(&id).is_some_and(|c| !c.is_empty())
    }

    /// Whether check `id` may have written the cell column `family:qualifier` of `row_key`.
    pub fn wrote(&self, id: u64, row_key: &[u8], family: &str, qualifier: &[u8]) -> bool {
        self.0.borrow().get(&id).is_some_and(|columns| {
            columns.iter().any(|c| {
                c.row_key == row_key
                    && c.family.as_deref().is_none_or(|f| f == family)
                    && c.qualifier.as_deref().is_none_or(|q| q == qualifier)
            })
        })
    }
}

/// Workloads start one check in this many operations.
pub const CHECK_EVERY: u64 = 40;

/// A check's options in the simulator: a short grace period (`spec/check.md` rule 1.2), so
/// that checks finish among the writers (simulated time moves ~0.35 ms a step).
pub fn check_options(fix: bool) -> CheckOptions {
    CheckOptions {
        fix,
        grace_micros: 200_000,
        ..CheckOptions::default()
    }
}

/// What a check operation returned: its summary and every finding it reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOutcome {
    /// The summary (rows scanned, findings by kind, repaired, left).
    pub summary: CheckSummary,
    /// The findings, in the order reported.
    pub findings: Vec<Finding>,
}

impl CheckOutcome {
    /// The findings as one line each, for failure messages.
    pub fn describe(&self) -> String {
        self.findings
            .iter()
            .map(|f| {
                format!(
                    "{} {} ({}){}",
                    f.kind,
                    rowkit_codec::escape::escape(&f.row_key),
                    f.detail,
                    if f.repaired { " repaired" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// A check machine under the simulator: findings collected into its output, every write it
/// sends logged in a [`RepairLog`] under `id`.
struct CheckRun<M> {
    machine: M,
    id: u64,
    log: RepairLog,
    findings: Vec<Finding>,
}

impl<M> Machine for CheckRun<M>
where
    M: Machine<Output = CheckSummary, Event = CheckEvent>,
    M::Error: Display,
{
    type Output = CheckOutcome;
    type Event = ();
    type Error = String;

    fn handle_response(&mut self, tag: Tag, r: Result<Response, StoreError>, now: Timestamp) {
        self.machine.handle_response(tag, r, now);
    }
    fn handle_timeout(&mut self, now: Timestamp) {
        self.machine.handle_timeout(now);
    }
    fn cancel(&mut self, now: Timestamp) {
        self.machine.cancel(now);
    }
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        let (tag, request) = self.machine.poll_request()?;
        self.log.record(self.id, &request);
        Some((tag, request))
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        self.machine.poll_abort()
    }
    fn poll_event(&mut self) -> Option<()> {
        // Progress, and events added later, are not findings.
        if let CheckEvent::Finding(f) = self.machine.poll_event()? {
            self.findings.push(f);
        }
        Some(())
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.machine.poll_timeout()
    }
    fn result(&mut self) -> Option<Result<CheckOutcome, String>> {
        let result = self.machine.result()?;
        Some(
            result
                .map(|summary| CheckOutcome {
                    summary,
                    findings: std::mem::take(&mut self.findings),
                })
                .map_err(|e| e.to_string()),
        )
    }
}

/// A check machine as a simulated operation numbered `id` (see [`RepairLog`]), its outcome
/// mapped by `map`.
pub fn check_op<M, O>(
    machine: M,
    id: u64,
    log: &RepairLog,
    map: impl FnMut(CheckOutcome) -> O + 'static,
) -> SimMachine<O>
where
    M: Machine<Output = CheckSummary, Event = CheckEvent> + 'static,
    M::Error: Display,
    O: 'static,
{
    erase(
        CheckRun {
            machine,
            id,
            log: log.clone(),
            findings: Vec::new(),
        },
        map,
    )
}

/// Runs a check machine alone against `store` to completion, time moving to its timers (the
/// grace period passes), as an operator runs `rowkit check` once the writers have settled.
pub fn check_settled<M>(
    store: &MemoryStore,
    now: Timestamp,
    machine: M,
) -> Result<CheckOutcome, String>
where
    M: Machine<Output = CheckSummary, Event = CheckEvent>,
    M::Error: Display,
{
    let clock = rowkit_store::driver::ManualClock::new(now);
    let mut findings = Vec::new();
    let summary = rowkit_client::run_blocking(store, &clock, machine, |event| {
        if let CheckEvent::Finding(f) = event {
            findings.push(f);
        }
    })
    .map_err(|e| format!("check: {e}"))?;
    Ok(CheckOutcome { summary, findings })
}

/// Verifies the checks that ran among the writers (each given with its operation, for the
/// message): they may only report the `allowed` kinds, what a write in flight leaves.
pub fn verify_concurrent_checks<'h, Op: Debug + 'h>(
    checks: impl IntoIterator<Item = (&'h Op, &'h CheckOutcome)>,
    allowed: &[&str],
    checked: &mut Checked,
) -> Result<(), String> {
    for (op, outcome) in checks {
        if let Some(f) = outcome.findings.iter().find(|f| !allowed.contains(&f.kind)) {
            return Err(format!(
                "{op:?} reported {} {}, which no write in flight leaves: {}",
                f.kind,
                rowkit_codec::escape::escape(&f.row_key),
                outcome.describe()
            ));
        }
        checked.check(outcome);
    }
    Ok(())
}

/// Once the writers (and their repairs) are done: a check with `--fix` leaves nothing, and a
/// second one finds nothing. `check(fix, seed)` builds the schema's check machine.
pub fn verify_settled_checks<M>(
    store: &MemoryStore,
    now: Timestamp,
    check: impl Fn(bool, u64) -> M,
    checked: &mut Checked,
) -> Result<(), String>
where
    M: Machine<Output = CheckSummary, Event = CheckEvent>,
    M::Error: Display,
{
    let fixed = check_settled(store, now, check(true, 1))?;
    if fixed.summary.left > 0 {
        return Err(format!("settled check --fix left: {}", fixed.describe()));
    }
    let again = check_settled(store, now, check(false, 2))?;
    if !again.findings.is_empty() {
        return Err(format!(
            "check after the settled --fix found: {}",
            again.describe()
        ));
    }
    checked.check(&fixed);
    checked.check(&again);
    Ok(())
}

/// A client: at most one operation at a time.
struct Client<Op, O> {
    running: Option<Running<Op, O>>,
}

struct Running<Op, O> {
    op: Op,
    start: Timestamp,
    machine: SimMachine<O>,
    /// Requests the machine emitted, not yet sent.
    outbox: VecDeque<(Tag, Request)>,
    /// Responses (or stream parts) on their way back, in order.
    inbox: VecDeque<(Tag, Result<Response, StoreError>)>,
    /// Requests sent but not yet at the store (delayed), in order.
    delayed: VecDeque<(Tag, Request)>,
    /// Delayed requests the machine aborted: they still land, their answers are dropped.
    aborted: Vec<Tag>,
}

fn unavailable(what: &str) -> StoreError {
    StoreError::new(Code::Unavailable, format!("simulated fault: {what}"))
}

/// One run of the scheduler.
struct Run<'w, W: Workload> {
    config: &'w SimConfig,
    workload: &'w mut W,
    store: MemoryStore,
    rng: SplitMix64,
    now: Timestamp,
    clients: Vec<Client<W::Op, W::Output>>,
    history: Vec<Record<W::Op, W::Output>>,
    started: u64,
    faults_on: bool,
    report: SimReport,
    trace: Vec<String>,
}

impl<W: Workload> Run<'_, W> {
    fn roll(&mut self, per_10k: u32) -> bool {
        self.faults_on && self.rng.next_u64() % 10_000 < u64::from(per_10k)
    }

    fn start_op(&mut self, c: usize) {
        let op = self.workload.next_op(&mut self.rng);
        let seed = self.rng.next_u64();
        self.trace.push(format!("{} c{c} start {op:?}", self.now.0));
        let machine = self.workload.start(&op, self.now, seed);
        self.started += 1;
        self.report.operations += 1;
        self.clients[c].running = Some(Running {
            op,
            start: self.now,
            machine,
            outbox: VecDeque::new(),
            inbox: VecDeque::new(),
            delayed: VecDeque::new(),
            aborted: Vec::new(),
        });
        self.pump(c);
    }

    /// Drains a machine's outputs after an input; records its end.
    fn pump(&mut self, c: usize) {
        let Some(running) = self.clients[c].running.as_mut() else {
            return;
        };
        while let Some(out) = running.machine.poll_request() {
            running.outbox.push_back(out);
        }
        while let Some(tag) = running.machine.poll_abort() {
            // The driver stops delivering: queued parts of that request are dropped.
            running.outbox.retain(|(t, _)| *t != tag);
            running.inbox.retain(|(t, _)| *t != tag);
            if running.delayed.iter().any(|(t, _)| *t == tag) {
                running.aborted.push(tag);
            }
        }
        while running.machine.poll_event().is_some() {}
        if let Some(result) = running.machine.result() {
            let ok = result.is_ok();
            self.trace.push(format!(
                "{} c{c} done {}",
                self.now.0,
                match &result {
                    Ok(o) => format!("ok {o:?}"),
                    Err(e) => format!("error {e}"),
                }
            ));
            self.report.acknowledged += u64::from(ok);
            if let Some(running) = self.clients[c].running.take() {
                self.history.push(Record {
                    op: running.op,
                    start: running.start,
                    end: self.now,
                    outcome: Outcome::Done(result),
                });
            }
        }
    }

    fn send(&mut self, c: usize) -> Result<(), String> {
        let Some((tag, request)) = self.clients[c]
            .running
            .as_mut()
            .and_then(|r| r.outbox.pop_front())
        else {
            return Ok(());
        };
        let kind = describe(&request);
        if self.roll(self.config.faults.fail_request) {
            self.report.failed_requests += 1;
            self.trace.push(format!(
                "{} c{c} FAULT {kind} failed before the store",
                self.now.0
            ));
            self.queue(c, tag, Err(unavailable("request failed")));
            return Ok(());
        }
        if self.config.faults.delay_request > 0 && self.roll(self.config.faults.delay_request) {
            self.report.delayed_requests += 1;
            self.trace
                .push(format!("{} c{c} FAULT {kind} delayed", self.now.0));
            if let Some(running) = self.clients[c].running.as_mut() {
                running.delayed.push_back((tag, request));
            }
            return Ok(());
        }
        self.apply(c, tag, request, kind)
    }

    /// A delayed request of client `c` may land now: one chance in eight per turn, so it
    /// typically waits while the other clients run several operations.
    fn land(&mut self, c: usize) -> Result<(), String> {
        if !self.rng.next_u64().is_multiple_of(8) {
            return Ok(());
        }
        let Some(running) = self.clients[c].running.as_mut() else {
            return Ok(());
        };
        let Some((tag, request)) = running.delayed.pop_front() else {
            return Ok(());
        };
        let kind = format!("{} (delayed)", describe(&request));
        self.apply(c, tag, request, kind)
    }

    /// Executes a request at the store and queues its answer (or loses it).
    fn apply(&mut self, c: usize, tag: Tag, request: Request, kind: String) -> Result<(), String> {
        self.report.requests += 1;
        self.collect_garbage()?;
        self.trace.push(format!("{} c{c} send {kind}", self.now.0));
        let lose = self.roll(self.config.faults.lose_response);
        let mut parts = match self.fail_some_entries(&request) {
            Some(failing) => {
                self.report.failed_entries += 1;
                self.trace.push(format!(
                    "{} c{c} FAULT {kind}: entries {failing:?} fail, the others apply",
                    self.now.0
                ));
                self.answer_partly(c, request, &failing)
            }
            None => self.answer(c, request),
        };
        if lose {
            self.report.lost_responses += 1;
            let keep = (self.rng.next_u64() % parts.len() as u64) as usize;
            parts.truncate(keep);
            parts.push(Err(unavailable("response lost")));
            self.trace.push(format!(
                "{} c{c} FAULT {kind} applied, response lost after {keep} parts",
                self.now.0
            ));
        }
        for part in parts {
            self.queue(c, tag, part);
        }
        Ok(())
    }

    /// The store's answer to client `c`'s `request`, as the parts it receives (a stream ends
    /// with `StreamEnd` or its error). Odd clients get whole rows (what a local store hands its
    /// driver), even ones chunks for the merger, so both paths run under the same faults; either
    /// way a read answers one part per row, so the draws and the trace do not depend on it.
    fn answer(&self, c: usize, request: Request) -> Vec<Result<Response, StoreError>> {
        let reply = if c % 2 == 1 {
            self.store.execute_local(request, self.now)
        } else {
            self.store.execute(request, self.now)
        };
        match reply {
            Ok(Reply::Unary(response)) => vec![Ok(response)],
            Ok(Reply::Stream(stream)) => {
                let mut parts = Vec::new();
                let mut failed = false;
                for part in stream {
                    failed |= part.is_err();
                    parts.push(part);
                    if failed {
                        break;
                    }
                }
                if !failed {
                    parts.push(Ok(Response::StreamEnd));
                }
                parts
            }
            Err(e) => vec![Err(e)],
        }
    }

    /// The entries of a MutateRows request to fail (sorted, some but not all), if the fault
    /// strikes it.
    fn fail_some_entries(&mut self, request: &Request) -> Option<Vec<usize>> {
        let Request::MutateRows(r) = request else {
            return None;
        };
        let rate = self.config.faults.fail_entries;
        if r.entries.len() < 2 || rate == 0 || !self.roll(rate) {
            return None;
        }
        let n = r.entries.len();
        let mut failing: Vec<usize> = (0..n)
            .filter(|_| self.rng.next_u64().is_multiple_of(2))
            .collect();
        if failing.is_empty() || failing.len() == n {
            failing = vec![(self.rng.next_u64() % n as u64) as usize];
        }
        Some(failing)
    }

    /// The answer to a MutateRows `request` whose `failing` entries fail before the store: the
    /// others are applied (one request) and every entry's status is reported by its index in
    /// `request`.
    fn answer_partly(
        &self,
        c: usize,
        request: Request,
        failing: &[usize],
    ) -> Vec<Result<Response, StoreError>> {
        let Request::MutateRows(mut r) = request else {
            return self.answer(c, request);
        };
        let mut kept = Vec::new();
        let mut original = Vec::new();
        for (i, entry) in r.entries.iter().enumerate() {
            if !failing.contains(&i) {
                original.push(i);
                kept.push(entry.clone());
            }
        }
        r.entries = kept.into();
        let mut parts = self.answer(c, Request::MutateRows(r));
        for part in &mut parts {
            if let Ok(Response::MutateRowsPart(p)) = part {
                for e in &mut p.entries {
                    e.index = original.get(e.index).copied().unwrap_or(e.index);
                }
            }
        }
        if !matches!(parts.last(), Some(Ok(Response::StreamEnd))) {
            // The whole request failed (e.g. invalid): no entry statuses to add.
            return parts;
        }
        let end = parts.pop();
        parts.push(Ok(Response::MutateRowsPart(MutateRowsResponse {
            entries: failing
                .iter()
                .map(|&index| MutateRowsEntryResult {
                    index,
                    result: Err(unavailable("entry failed")),
                })
                .collect(),
        })));
        parts.extend(end);
        parts
    }

    /// Background GC, every `gc_every` requests (no draw from the scheduler's seed).
    fn collect_garbage(&mut self) -> Result<(), String> {
        let every = self.config.gc_every;
        if every == 0 || !self.report.requests.is_multiple_of(every) {
            return Ok(());
        }
        let tables = self.store.list_tables().map_err(|e| format!("gc: {e}"))?;
        for table in tables {
            let collected = self
                .store
                .gc(&table, self.now)
                .map_err(|e| format!("gc {table}: {e}"))?;
            if collected > 0 {
                self.trace
                    .push(format!("{} gc {table}: {collected} cells", self.now.0));
            }
        }
        Ok(())
    }

    fn queue(&mut self, c: usize, tag: Tag, r: Result<Response, StoreError>) {
        if let Some(running) = self.clients[c].running.as_mut()
            && !running.aborted.contains(&tag)
        {
            running.inbox.push_back((tag, r));
        }
    }

    fn deliver(&mut self, c: usize) {
        let now = self.now;
        let Some(running) = self.clients[c].running.as_mut() else {
            return;
        };
        let Some((tag, r)) = running.inbox.pop_front() else {
            return;
        };
        running.machine.handle_response(tag, r, now);
        self.pump(c);
    }

    fn crash(&mut self, c: usize) {
        if let Some(running) = self.clients[c].running.take() {
            self.report.crashes += 1;
            self.trace.push(format!("{} c{c} CRASH", self.now.0));
            self.history.push(Record {
                op: running.op,
                start: running.start,
                end: self.now,
                outcome: Outcome::Crashed,
            });
        }
    }

    /// Fires the timers of every client due at the current time, as a driver would.
    fn fire_due_timers(&mut self) {
        for c in 0..self.clients.len() {
            let now = self.now;
            let due = self.clients[c]
                .running
                .as_mut()
                .filter(|r| r.machine.poll_timeout().is_some_and(|t| t <= now));
            if let Some(running) = due {
                running.machine.handle_timeout(now);
                self.pump(c);
            }
        }
    }

    /// Moves time to the earliest timer and fires it; false if no timer is pending.
    fn skip_to_next_timer(&mut self) -> bool {
        let earliest = self
            .clients
            .iter()
            .filter_map(|c| c.running.as_ref().and_then(|r| r.machine.poll_timeout()))
            .min();
        let Some(at) = earliest else {
            return false;
        };
        self.now = self.now.max(at);
        self.fire_due_timers();
        true
    }

    /// One scheduler step; false when nothing is left to do.
    fn step(&mut self) -> Result<bool, String> {
        // Time passes a little with every step (µs), so writes get distinct timestamps.
        self.now = Timestamp(self.now.0 + (self.rng.next_u64() % 700) as i64);
        if self.roll(self.config.faults.clock_jump) {
            let jump = 1_000 + (self.rng.next_u64() % 10_000_000) as i64;
            self.report.clock_jumps += 1;
            self.trace
                .push(format!("{} FAULT clock jumps {jump} us", self.now.0));
            self.now = Timestamp(self.now.0 + jump);
        }
        self.fire_due_timers();
        let mut actions: Vec<(usize, u8)> = Vec::new();
        for (c, client) in self.clients.iter().enumerate() {
            match &client.running {
                None if self.started < self.config.operations => actions.push((c, 0)),
                None => {}
                Some(r) => {
                    if !r.outbox.is_empty() {
                        actions.push((c, 1));
                    }
                    if !r.inbox.is_empty() {
                        actions.push((c, 2));
                    }
                    if !r.delayed.is_empty() {
                        actions.push((c, 4));
                    }
                    if self.faults_on {
                        actions.push((c, 3));
                    }
                }
            }
        }
        let useful = actions.iter().any(|&(_, a)| a != 3);
        if !useful {
            if self.skip_to_next_timer() {
                return Ok(true);
            }
            if self.clients.iter().any(|c| c.running.is_some()) {
                return Err("a machine stalled: no request, no response due, no timer".into());
            }
            return Ok(false);
        }
        let (c, action) = actions[(self.rng.next_u64() % actions.len() as u64) as usize];
        match action {
            0 => self.start_op(c),
            1 => self.send(c)?,
            2 => self.deliver(c),
            4 => self.land(c)?,
            _ => {
                if self.roll(self.config.faults.crash) {
                    self.crash(c);
                }
            }
        }
        Ok(true)
    }

    /// Runs one operation alone, without faults, to completion.
    fn run_alone(&mut self, op: W::Op) -> Result<(), String> {
        let seed = self.rng.next_u64();
        self.trace
            .push(format!("{} repair start {op:?}", self.now.0));
        let machine = self.workload.start(&op, self.now, seed);
        self.report.operations += 1;
        self.clients.push(Client {
            running: Some(Running {
                op,
                start: self.now,
                machine,
                outbox: VecDeque::new(),
                inbox: VecDeque::new(),
                delayed: VecDeque::new(),
                aborted: Vec::new(),
            }),
        });
        let c = self.clients.len() - 1;
        self.pump(c);
        while self.step()? {}
        self.clients.pop();
        Ok(())
    }
}

/// A request as a trace line shows it: the RPC, the table and the row(s).
fn describe(request: &Request) -> String {
    use rowkit_codec::escape::escape;
    let rows = match request {
        Request::ReadRows(r) => {
            let keys = r.rows.row_keys.iter().map(|k| escape(k));
            let ranges = r.rows.row_ranges.iter().map(|r| format!("{r:?}"));
            keys.chain(ranges).collect::<Vec<_>>().join(" ")
        }
        // The line of the one-key ReadRows it stands for.
        Request::ReadRow(r) => escape(&r.row_key),
        Request::MutateRow(r) => escape(&r.row_key),
        Request::CheckAndMutateRow(r) => escape(&r.row_key),
        Request::ReadModifyWriteRow(r) => escape(&r.row_key),
        Request::MutateRows(r) => r
            .entries
            .iter()
            .map(|e| escape(&e.row_key))
            .collect::<Vec<_>>()
            .join(" "),
        Request::SampleRowKeys(_) => String::new(),
    };
    format!("{} {} {rows}", request.rpc_name(), request.table())
}

/// One run with `config.operations` operations; the report, or the failure with its trace.
fn run_once<W: Workload>(config: &SimConfig, workload: &mut W) -> Result<SimReport, SimFailure> {
    let fail = |message: String, trace: Vec<String>| SimFailure {
        seed: config.seed,
        operations: config.operations,
        message,
        trace,
    };
    let store = MemoryStore::new().with_options(StoreOptions::default().with_seed(config.seed));
    workload
        .setup(&store, config.start, config.seed)
        .map_err(|e| fail(format!("setup: {e}"), Vec::new()))?;
    let mut run = Run {
        config,
        workload,
        store,
        rng: SplitMix64::new(config.seed),
        now: config.start,
        clients: (0..config.clients.max(1))
            .map(|_| Client { running: None })
            .collect(),
        history: Vec::new(),
        started: 0,
        faults_on: true,
        report: SimReport::default(),
        trace: Vec::new(),
    };
    let outcome = (|| -> Result<(), String> {
        while run.started < config.operations {
            run.step()?;
        }
        run.faults_on = false;
        while run.step()? {}
        let repairs = run.workload.repairs(&run.store, run.now, &run.history);
        for op in repairs {
            run.run_alone(op)?;
        }
        let checked = run.workload.check(&run.store, run.now, &run.history)?;
        run.report.checked = checked;
        Ok(())
    })();
    match outcome {
        Ok(()) => Ok(run.report),
        Err(message) => Err(fail(message, run.trace)),
    }
}

/// Runs `config` once; on failure, shrinks the operation budget (bisection) to the smallest
/// that still fails for the seed and returns that run's failure.
pub fn run<W: Workload>(config: &SimConfig, workload: &mut W) -> Result<SimReport, SimFailure> {
    let failure = match run_once(config, workload) {
        Ok(report) => return Ok(report),
        Err(failure) => failure,
    };
    let (mut good, mut bad) = (0u64, failure);
    while bad.operations > good + 1 {
        let mid = good + (bad.operations - good) / 2;
        let attempt = SimConfig {
            operations: mid,
            ..config.clone()
        };
        match run_once(&attempt, workload) {
            Ok(_) => good = mid,
            Err(f) => bad = f,
        }
    }
    Err(bad)
}

/// Runs exactly `config` once, without shrinking: the replay of a failure [`run`] reported
/// (its seed and operation count). `run` would bisect again from that count, and a failure
/// need not be monotonic in the budget: a shorter budget it never tried may fail differently.
pub fn replay<W: Workload>(config: &SimConfig, workload: &mut W) -> Result<SimReport, SimFailure> {
    run_once(config, workload)
}

/// Runs `runs` seeds derived from `config.seed` (each `config.operations` operations) and
/// sums their reports; stops at the first failure.
pub fn run_many<W: Workload>(
    config: &SimConfig,
    runs: u64,
    workload: &mut W,
) -> Result<SimReport, SimFailure> {
    let mut total = SimReport::default();
    for n in 0..runs {
        let seeded = SimConfig {
            seed: SplitMix64::nth_output(config.seed, n),
            ..config.clone()
        };
        total.add(&run(&seeded, workload)?);
    }
    Ok(total)
}
