//! The schema-independent shell of a layout-migration workload (`docs/migration.md` §10): an
//! operator who drives one migrator through its gates among the schema's writers and
//! readers, and a migrator that crashes and is resumed.
//!
//! - [`Driver`]: the operator (§6.1). A run follows one [`Scenario`]: the migrator runs without
//!   gates (copying → verifying) while the unaware writers write; the writers are stopped (no
//!   writer in flight), then the migrator runs with `--switch`; the writers restart on fresh
//!   processes (they read the new layout) and the migrator runs with `--finish`. Or it rolls
//!   back with `--abort`, with the writers running or stopped. A migrator run that crashed
//!   or failed is followed by another one, which resumes from the marker and checkpoint with
//!   `--take-over` (§7.1: its predecessor's lease is still live; the operator who saw it die
//!   takes over rather than wait out the lease). While the migrator sleeps through a settle
//!   wait (§2.3), idle clients wait too, so that simulated time reaches the migrator's timer.
//! - [`MigratorShell`]: runs one migrator machine, records every request it sends and every
//!   event it emits (the schema checks marker transitions and "reads only" from them), tells
//!   the driver when it sleeps, and crashes it after a response with a seeded probability
//!   (§10.2), more often after an error (a response lost after the store applied the request).
//! - [`Waiting`], [`Pausing`], [`Collecting`], [`holding`]: the idle client's wait (through
//!   a settle wait; while the migrator sends a few requests), a read that keeps its
//!   rows (the operator's snapshot), and a writer counted while in flight (the gate).
//! - [`SchemaMigrator`], [`MigrationOp`]: what the shell and the counters need of a schema's
//!   migrator machine and operations.
//!
//! A schema's workload (`objmeta_migrate`; the trace store's next) supplies the machines,
//! the snapshot and the invariants; the driver and the shell are shared.

use std::cell::{Cell, RefCell};
use std::fmt::Display;
use std::rc::Rc;

use rowkit_statemachines::{Machine, Request, Response, SplitMix64, StoreError, Tag, Timestamp};

use rowkit_codec::migration::MigrationState;

use super::{Outcome, Record, SimMachine, erase};

/// How a run's migration goes (chosen per run from its seed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// The whole migration: copy, `--switch`, `--finish`.
    Complete,
    /// `--abort` while the unaware writers write (before the switch gate).
    AbortLive,
    /// `--abort` with the writers stopped at the switch gate: the bucket must come back
    /// byte for byte as before the migration (snapshots before and after).
    AbortFenced,
}

impl Scenario {
    /// The scenario of run `seed`: mostly complete migrations, one run in four an abort.
    pub fn of_seed(seed: u64) -> Scenario {
        match SplitMix64::nth_output(seed, 7) % 8 {
            0 => Scenario::AbortLive,
            1 => Scenario::AbortFenced,
            _ => Scenario::Complete,
        }
    }
}

/// The gates and options of one migrator run, as the operator types them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MigratorRun {
    /// The migrator's number in the run (its owner is `sim:<n>`).
    pub n: u64,
    /// `--switch`.
    pub switch: bool,
    /// `--finish`.
    pub finish: bool,
    /// `--abort`.
    pub abort: bool,
    /// `--take-over`: the previous migrator crashed or failed, its lease is live.
    pub take_over: bool,
}

/// As the operator types it: `Migrate#n` and the flags given (the trace's operations).
impl Display for MigratorRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Migrate#{}", self.n)?;
        for (flag, on) in [
            ("--switch", self.switch),
            ("--finish", self.finish),
            ("--abort", self.abort),
            ("--take-over", self.take_over),
        ] {
            if on {
                write!(f, " {flag}")?;
            }
        }
        Ok(())
    }
}

/// Where a migrator run ended, as the driver needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigratorEnd {
    /// Waiting at the `--switch` gate (state `verifying`).
    AtSwitchGate,
    /// Waiting at the `--finish` gate (state `switched`).
    Switched,
    /// The marker removed: the migration or its rollback is complete.
    Removed,
    /// It crashed or failed: another run resumes it.
    Failed,
}

/// What the driver asks the workload to start next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// One of the schema's usual operations (writers, readers, checks).
    Write,
    /// A read by an aware reader (writers are stopped).
    Read,
    /// A write by an aware process while the gated writers are stopped (it needs no gate,
    /// §9); only for a schema whose [`Pacing::aware_writers`] says it has them.
    AwareWrite,
    /// A migrator run.
    Migrate(MigratorRun),
    /// An idle client waits until this instant (the migrator's settle wait).
    Wait(Timestamp),
    /// An idle client pauses while the migrator sends [`Pacing::pause_requests`] requests
    /// ([`Pausing`]), instead of reading or writing (see [`Driver::next_action`]).
    Pause,
    /// The operator's snapshot of the migrating bucket or table (writers stopped).
    Snapshot(SnapshotPoint),
}

/// Which snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SnapshotPoint {
    /// Writers stopped, before `--abort` ([`Scenario::AbortFenced`]).
    BeforeAbort,
    /// Once the rollback is complete, writers still stopped.
    AfterAbort,
    /// Once the switch happened, writers still stopped: both layouts side by side.
    AfterSwitch,
}

/// The operator's progress through a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Writers write; the migrator runs without gates until it waits at the switch gate
    /// (while writers write, its verification rarely comes out clean).
    Live,
    /// The operator stops the writers: readers only until none is in flight and the gateless
    /// migrator has stopped.
    Stopping,
    /// Writers stopped: the snapshot before the rollback.
    SnapshotBefore,
    /// Writers stopped: the migrator runs with `--switch`.
    Switching,
    /// Writers stopped: the snapshot of both layouts after the switch.
    SnapshotSwitched,
    /// Writers restarted on the new layout; the migrator runs with `--finish`.
    Finishing,
    /// The migrator runs with `--abort`; `fenced`: the writers are stopped.
    Aborting {
        /// The writers are stopped.
        fenced: bool,
    },
    /// Writers stopped: the snapshot after the rollback.
    SnapshotAfter,
    /// The migration is over (complete or rolled back); writers write.
    Done,
}

impl Stage {
    /// Whether the unaware writers of the old layout may run (§6.1's gates).
    pub fn writers_run(self) -> bool {
        matches!(
            self,
            Stage::Live | Stage::Finishing | Stage::Aborting { fenced: false } | Stage::Done
        )
    }
}

/// What the migrator (and the snapshot) reported to the driver, shared with their machines.
#[derive(Debug, Default)]
pub struct MigratorStatus {
    /// A migrator run is in flight.
    pub running: bool,
    /// The timer it sleeps on (a settle wait), when it has no request outstanding.
    pub sleeping_until: Option<Timestamp>,
    /// How the last migrator run ended (taken by the driver).
    pub ended: Option<MigratorEnd>,
    /// A snapshot is in flight.
    pub snapshot_running: bool,
    /// The last snapshot ended, successfully or not (taken by the driver).
    pub snapshot_ended: Option<bool>,
    /// Requests sent by every migrator run so far (what [`Pausing`] counts).
    pub requests_sent: u64,
}

/// Counters of the migrations over every run (for the report line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MigrationStats {
    /// Runs simulated.
    pub runs: u64,
    /// Migrator runs started by the driver (within the operation budget).
    pub migrator_runs: u64,
    /// Migrator runs that crashed (injected by the shell, or the simulator's crash fault).
    pub crashes: u64,
    /// Migrator runs that ended with an error (resumed like a crash).
    pub failures: u64,
    /// Migrator runs that resumed a crashed or failed one (`--take-over`).
    pub resumes: u64,
    /// Migrations completed (marker removed after `cleaning`).
    pub completed: u64,
    /// Migrations rolled back (marker removed after `aborting`).
    pub rolled_back: u64,
    /// Of those, the ones the operation budget left unfinished, completed after it without
    /// faults.
    pub finished_after_budget: u64,
    /// Writes by aware processes (objmeta).
    pub aware_writes: u64,
    /// Of those, the ones crashed between the protocol write and its mirror.
    pub crashed_before_mirror: u64,
}

impl Display for MigrationStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} migrations ({} completed, {} rolled back, {} finished after the budget), {} migrator runs, {} crashed, {} failed, {} resumed with --take-over, {} aware writes ({} crashed before their mirror)",
            self.runs,
            self.completed,
            self.rolled_back,
            self.finished_after_budget,
            self.migrator_runs,
            self.crashes,
            self.failures,
            self.resumes,
            self.aware_writes,
            self.crashed_before_mirror
        )
    }
}

impl MigrationStats {
    /// Counts one run: its migrator runs (crashed, failed, resumed) in `history`, and how its
    /// migration ended (`scenario`; completed after the budget or not).
    pub fn count<Op: MigrationOp, O>(
        &mut self,
        history: &[Record<Op, O>],
        scenario: Scenario,
        finished_after_budget: bool,
    ) {
        self.runs += 1;
        for r in history {
            let Some(run) = r.op.migrator_run() else {
                continue;
            };
            self.migrator_runs += 1;
            self.resumes += u64::from(run.take_over);
            match &r.outcome {
                Outcome::Crashed => self.crashes += 1,
                Outcome::Done(Err(e)) if e == CRASHED => self.crashes += 1,
                Outcome::Done(Err(_)) => self.failures += 1,
                Outcome::Done(Ok(_)) => {}
            }
        }
        if scenario == Scenario::Complete {
            self.completed += 1;
        } else {
            self.rolled_back += 1;
        }
        self.finished_after_budget += u64::from(finished_after_budget);
    }
}

/// A schema workload's operation, which may be a migrator run.
pub trait MigrationOp {
    /// The migrator run this operation is, if it is one.
    fn migrator_run(&self) -> Option<&MigratorRun>;
}

/// What the shell needs of a schema's migrator machine: where a run stopped.
pub trait SchemaMigrator: Machine {
    /// The state a finished run stopped in (a gate not given, or blocked), `None` when the
    /// marker is gone: the migration or its rollback is complete (or there was nothing to do).
    fn stopped_in(output: &Self::Output) -> Option<MigrationState>;
    /// Whether `error` refuses a usage with nothing to act on (`--abort` with no marker).
    fn is_usage_error(error: &Self::Error) -> bool;
}

/// Where a migrator run ended, for the driver.
fn migrator_end<M: SchemaMigrator>(result: &Result<M::Output, M::Error>) -> MigratorEnd {
    match result {
        Ok(output) => match M::stopped_in(output) {
            Some(MigrationState::Verifying) => MigratorEnd::AtSwitchGate,
            Some(MigrationState::Switched) => MigratorEnd::Switched,
            Some(_) => MigratorEnd::Failed,
            None => MigratorEnd::Removed,
        },
        // `--abort` with no marker: the first migrator crashed before writing it.
        Err(e) if M::is_usage_error(e) => MigratorEnd::Removed,
        Err(_) => MigratorEnd::Failed,
    }
}

/// Operations of a run before the driver stops the writers, before a rollback, and after the
/// restart before `--finish`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacing {
    /// Operations started before the writers are stopped.
    pub live_ops: u64,
    /// Operations before `--abort` in [`Scenario::AbortLive`].
    pub abort_live_ops: u64,
    /// Operations of the restarted writers before `--finish`.
    pub restart_ops: u64,
    /// How many requests the migrator sends while an idle client pauses ([`Action::Pause`]):
    /// counted in the migrator's requests, not in time, because simulated time is mostly
    /// clock jumps and back-offs.
    pub pause_requests: u64,
    /// The schema has aware writers: they write through the gates (§9, [`Action::AwareWrite`]).
    pub aware_writers: bool,
}

impl Default for Pacing {
    /// Sized for runs of about 250 operations: a shorter budget (a shrunk failure) leaves the
    /// migration to be completed after it.
    fn default() -> Self {
        Pacing {
            live_ops: 80,
            abort_live_ops: 40,
            restart_ops: 20,
            pause_requests: 8,
            aware_writers: false,
        }
    }
}

/// The operator: decides what each idle client starts (see the module doc).
#[derive(Debug)]
pub struct Driver {
    /// The run's scenario.
    pub scenario: Scenario,
    pacing: Pacing,
    stage: Stage,
    /// Operations started in this run.
    ops: u64,
    /// Operations started when the current stage began.
    stage_ops: u64,
    /// The migrator reached the switch gate at least once.
    at_gate: bool,
    /// The last migrator run crashed or failed: the next takes over.
    take_over: bool,
    migrators: u64,
    /// Idle clients' actions beside a running migrator (see [`Driver::next_action`]).
    beside_actions: u64,
    writers: Rc<Cell<usize>>,
    /// Aware writers in flight: the operator's snapshots wait for them.
    aware_writers: Rc<Cell<usize>>,
    status: Rc<RefCell<MigratorStatus>>,
}

impl Driver {
    /// A driver for a new run.
    pub fn new(scenario: Scenario, pacing: Pacing) -> Driver {
        Driver {
            scenario,
            pacing,
            stage: Stage::Live,
            ops: 0,
            stage_ops: 0,
            at_gate: false,
            take_over: false,
            migrators: 0,
            beside_actions: 0,
            writers: Rc::default(),
            aware_writers: Rc::default(),
            status: Rc::default(),
        }
    }

    /// The current stage.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// Counts a writer in flight while the returned guard lives.
    pub fn writer(&self) -> InFlight {
        InFlight::new(&self.writers)
    }

    /// Counts an aware writer in flight while the returned guard lives.
    pub fn aware_writer(&self) -> InFlight {
        InFlight::new(&self.aware_writers)
    }

    /// What the migrator and snapshot machines report to.
    pub fn status(&self) -> Rc<RefCell<MigratorStatus>> {
        self.status.clone()
    }

    /// Migrator runs started so far in this run.
    pub fn migrator_runs(&self) -> u64 {
        self.migrators
    }

    fn enter(&mut self, stage: Stage) {
        self.stage = stage;
        self.stage_ops = self.ops;
    }

    fn migrate(&mut self, switch: bool, finish: bool, abort: bool) -> Action {
        self.migrators += 1;
        self.status.borrow_mut().running = true;
        Action::Migrate(MigratorRun {
            n: self.migrators,
            switch,
            finish,
            abort,
            take_over: std::mem::take(&mut self.take_over),
        })
    }

    fn snapshot(&mut self, point: SnapshotPoint) -> Action {
        self.status.borrow_mut().snapshot_running = true;
        Action::Snapshot(point)
    }

    /// An idle client's action beside a running migrator: `busy` one time in `every`, else
    /// a pause (see [`Driver::next_action`]).
    fn busy_or_pause(&mut self, busy: Action, every: u64) -> Action {
        self.beside_actions += 1;
        if self.beside_actions.is_multiple_of(every) {
            busy
        } else {
            Action::Pause
        }
    }

    /// A read (an aware reader, §10.3 invariant 2) one time in [`READ_EVERY`], else a pause:
    /// an idle client's action beside a running migrator while the writers are stopped.
    fn read_or_pause(&mut self) -> Action {
        self.busy_or_pause(Action::Read, READ_EVERY)
    }

    /// An idle client's action beside the gateless migrator once the gated writers are
    /// stopped (`Stopping`): of every [`READ_EVERY`] actions one is a read and, when the
    /// schema has aware writers, one an aware write; the others pause.
    /// (Aware writes through the switch are not simulated: one that crashed between its write
    /// after the switch and the reverse mirror would leave the layouts apart in the snapshot
    /// after the switch, which compares them with every writer stopped.)
    fn beside_stopped_writers(&mut self) -> Action {
        self.beside_actions += 1;
        match self.beside_actions % READ_EVERY {
            0 => Action::Read,
            2 if self.pacing.aware_writers => Action::AwareWrite,
            _ => Action::Pause,
        }
    }

    /// An idle client's action while the migrator runs: wait with it through a settle wait,
    /// else `busy`.
    fn beside_migrator(&self, busy: Action) -> Action {
        match self.status.borrow().sleeping_until {
            Some(until) => Action::Wait(until),
            None => busy,
        }
    }

    /// What the next idle client starts. The caller compares [`Driver::stage`] before and
    /// after: the schema changes its processes when a stage begins (writers stopped, restarted
    /// on the new layout).
    ///
    /// Every operation started counts against the run's budget, while a migrator run is one
    /// operation however many requests it sends. Clients that read or write back to back
    /// beside it would use up the budget long before the migration ends (it would be finished
    /// after the budget, without writers, which then rarely overlap the late states). So
    /// beside a running migrator, idle clients mostly pause: while the writers are stopped
    /// they read one time in [`READ_EVERY`] (and, until `--switch`, write as aware processes
    /// one time in [`READ_EVERY`]); restarted (`--finish`) or during a live
    /// `--abort`, they write one time in [`WRITE_EVERY`].
    pub fn next_action(&mut self) -> Action {
        self.ops += 1;
        self.observe_ends();
        let (running, snapshot_running) = {
            let s = self.status.borrow();
            (s.running, s.snapshot_running)
        };
        if self.stage == Stage::Live {
            // The rollback waits for the running migrator to stop (at its gate or dead).
            let abort_now = self.scenario == Scenario::AbortLive
                && self.ops >= self.pacing.abort_live_ops
                && !running;
            let stop = self.scenario != Scenario::AbortLive && self.ops >= self.pacing.live_ops;
            if abort_now {
                self.enter(Stage::Aborting { fenced: false });
            } else if stop {
                self.enter(Stage::Stopping);
            }
        }
        // Writers stopped and the gateless migrator stopped (its verification, clean once
        // nothing writes, took it to the gate; or it died): the next step needs both.
        if self.stage == Stage::Stopping
            && self.writers.get() == 0
            && self.aware_writers.get() == 0
            && !running
        {
            self.enter(if self.scenario == Scenario::AbortFenced {
                Stage::SnapshotBefore
            } else {
                Stage::Switching
            });
        }
        match self.stage {
            Stage::Live | Stage::Stopping if !running && !self.at_gate => {
                self.migrate(false, false, false)
            }
            Stage::Live | Stage::Done => Action::Write,
            // Writers in flight finish; the gateless migrator, if it runs, goes on.
            Stage::Stopping if running => self.beside_stopped_writers(),
            Stage::Stopping => Action::Read,
            Stage::Switching if !running => self.migrate(true, false, false),
            Stage::Switching => {
                let busy = self.read_or_pause();
                self.beside_migrator(busy)
            }
            Stage::Finishing
                if !running && self.ops >= self.stage_ops + self.pacing.restart_ops =>
            {
                self.migrate(true, true, false)
            }
            Stage::Finishing if running => {
                let busy = self.busy_or_pause(Action::Write, WRITE_EVERY);
                self.beside_migrator(busy)
            }
            Stage::Finishing => Action::Write,
            Stage::Aborting { .. } if !running => self.migrate(false, false, true),
            Stage::Aborting { fenced: true } => {
                let busy = self.read_or_pause();
                self.beside_migrator(busy)
            }
            Stage::Aborting { fenced: false } => {
                let busy = self.busy_or_pause(Action::Write, WRITE_EVERY);
                self.beside_migrator(busy)
            }
            // The snapshot waits for the aware writers in flight too.
            Stage::SnapshotBefore | Stage::SnapshotSwitched | Stage::SnapshotAfter
                if snapshot_running || self.aware_writers.get() > 0 =>
            {
                Action::Read
            }
            Stage::SnapshotBefore => self.snapshot(SnapshotPoint::BeforeAbort),
            Stage::SnapshotSwitched => self.snapshot(SnapshotPoint::AfterSwitch),
            Stage::SnapshotAfter => self.snapshot(SnapshotPoint::AfterAbort),
        }
    }

    /// The stage change on what ended (a migrator run, a snapshot) since the last action;
    /// true when the stage changed. [`Driver::next_action`] starts with it, and a workload
    /// calls it once the budget is spent, before it completes what is left: a migration that
    /// ended with the last operations does not count as finished after the budget.
    pub fn observe_ends(&mut self) -> bool {
        let (ended, snapshot_ended) = {
            let mut s = self.status.borrow_mut();
            (s.ended.take(), s.snapshot_ended.take())
        };
        if ended == Some(MigratorEnd::Failed) {
            self.take_over = true;
        }
        if ended == Some(MigratorEnd::AtSwitchGate) {
            self.at_gate = true;
        }
        // Stage changes on what ended.
        match (self.stage, ended, snapshot_ended) {
            (Stage::Switching, Some(MigratorEnd::Switched), _) => {
                self.enter(Stage::SnapshotSwitched)
            }
            (Stage::SnapshotSwitched, _, Some(true)) => self.enter(Stage::Finishing),
            (Stage::SnapshotBefore, _, Some(true)) => self.enter(Stage::Aborting { fenced: true }),
            (Stage::Aborting { fenced: true }, Some(MigratorEnd::Removed), _) => {
                self.enter(Stage::SnapshotAfter)
            }
            (Stage::Aborting { fenced: false }, Some(MigratorEnd::Removed), _)
            | (Stage::Finishing, Some(MigratorEnd::Removed), _)
            | (Stage::SnapshotAfter, _, Some(true)) => self.enter(Stage::Done),
            _ => return false,
        }
        true
    }
}

/// A writer in flight: counted from its start until its machine is dropped (done or crashed).
#[derive(Debug)]
pub struct InFlight(Rc<Cell<usize>>);

impl InFlight {
    fn new(count: &Rc<Cell<usize>>) -> InFlight {
        count.set(count.get() + 1);
        InFlight(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

/// `machine` for the simulator, holding `guard` (e.g. [`InFlight`]) for as long as it runs —
/// until it is dropped, done or crashed — its output mapped by `map`.
pub fn holding<O, P, G>(
    machine: SimMachine<O>,
    guard: G,
    mut map: impl FnMut(O) -> P + 'static,
) -> SimMachine<P>
where
    O: 'static,
    P: 'static,
    G: 'static,
{
    erase(machine, move |output| {
        // Captured by the closure, the guard lives as long as the machine.
        let _held = &guard;
        map(output)
    })
}

/// An idle client waiting until an instant (no request).
#[derive(Debug)]
pub struct Waiting {
    until: Timestamp,
    done: bool,
    reported: bool,
}

impl Waiting {
    /// Waits from `now` until `until` (done at once when it has passed).
    pub fn new(now: Timestamp, until: Timestamp) -> Waiting {
        Waiting {
            until,
            done: now >= until,
            reported: false,
        }
    }
}

impl Machine for Waiting {
    type Output = ();
    type Event = ();
    type Error = String;

    fn handle_response(&mut self, _: Tag, _: Result<Response, StoreError>, _: Timestamp) {}
    fn handle_timeout(&mut self, now: Timestamp) {
        self.done |= now >= self.until;
    }
    fn cancel(&mut self, _: Timestamp) {
        self.done = true;
    }
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        None
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        None
    }
    fn poll_event(&mut self) -> Option<()> {
        None
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        (!self.done).then_some(self.until)
    }
    fn result(&mut self) -> Option<Result<(), String>> {
        if !self.done || self.reported {
            return None;
        }
        self.reported = true;
        Some(Ok(()))
    }
}

/// An idle client pausing beside the migrator until it has sent a number of requests, or
/// stopped, or started a settle wait (then the driver has idle clients wait with it).
#[derive(Debug)]
pub struct Pausing {
    status: Rc<RefCell<MigratorStatus>>,
    /// The migrator's [`MigratorStatus::requests_sent`] that ends the pause.
    until_sent: u64,
    /// The next look at the migrator's status.
    next_look: Timestamp,
    done: bool,
    reported: bool,
}

impl Pausing {
    /// How often a pause looks at the migrator (a scheduler step is some 350 µs).
    const LOOK_EVERY_US: i64 = 1_000;

    /// Pauses from `now` while the migrator `status` reports sends `requests` more requests.
    pub fn new(now: Timestamp, status: &Rc<RefCell<MigratorStatus>>, requests: u64) -> Pausing {
        let mut pausing = Pausing {
            status: status.clone(),
            until_sent: status.borrow().requests_sent.saturating_add(requests),
            next_look: now,
            done: false,
            reported: false,
        };
        pausing.look(now);
        pausing
    }

    fn look(&mut self, now: Timestamp) {
        let status = self.status.borrow();
        self.done |= status.requests_sent >= self.until_sent
            || !status.running
            || status.sleeping_until.is_some();
        self.next_look = now.saturating_add_micros(Self::LOOK_EVERY_US);
    }
}

impl Machine for Pausing {
    type Output = ();
    type Event = ();
    type Error = String;

    fn handle_response(&mut self, _: Tag, _: Result<Response, StoreError>, _: Timestamp) {}
    fn handle_timeout(&mut self, now: Timestamp) {
        self.look(now);
    }
    fn cancel(&mut self, _: Timestamp) {
        self.done = true;
    }
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        None
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        None
    }
    fn poll_event(&mut self) -> Option<()> {
        None
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        (!self.done).then_some(self.next_look)
    }
    fn result(&mut self) -> Option<Result<(), String>> {
        if !self.done || self.reported {
            return None;
        }
        self.reported = true;
        Some(Ok(()))
    }
}

/// A machine whose events are collected into its output (a read keeping its rows).
pub struct Collecting<M: Machine> {
    machine: M,
    events: Vec<M::Event>,
}

impl<M: Machine> Collecting<M> {
    /// Collects `machine`'s events.
    pub fn new(machine: M) -> Collecting<M> {
        Collecting {
            machine,
            events: Vec::new(),
        }
    }
}

impl<M: Machine> Machine for Collecting<M> {
    type Output = Vec<M::Event>;
    type Event = ();
    type Error = M::Error;

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
        let event = self.machine.poll_event()?;
        self.events.push(event);
        Some(())
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.machine.poll_timeout()
    }
    fn result(&mut self) -> Option<Result<Vec<M::Event>, M::Error>> {
        let result = self.machine.result()?;
        Some(result.map(|_| std::mem::take(&mut self.events)))
    }
}

/// What every migrator of a run sent and emitted, in order (all runs of the shell share it).
#[derive(Debug)]
pub struct MigratorLog<E> {
    /// Every request sent, with the migrator's number.
    pub requests: Vec<(u64, Request)>,
    /// Every event emitted, with the migrator's number.
    pub events: Vec<(u64, E)>,
}

impl<E> Default for MigratorLog<E> {
    fn default() -> Self {
        MigratorLog {
            requests: Vec::new(),
            events: Vec::new(),
        }
    }
}

/// While the writers are stopped, one idle client's action in this many beside the migrator is
/// a read, the others pauses.
pub const READ_EVERY: u64 = 4;

/// Once the writers write again (restarted, or a live `--abort`), one idle client's action in
/// this many beside the migrator is a write, the others pauses.
pub const WRITE_EVERY: u64 = 2;

/// How far ahead a migrator's timer must be to count as a settle wait (retries back off for
/// less).
pub const WAIT_MIN_US: i64 = 1_000_000;

/// The error of a migrator the shell crashed.
pub const CRASHED: &str = "migrator crashed (simulated)";

/// Crash chances of the shell, per 10 000 responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrashRates {
    /// After a response.
    pub after_response: u32,
    /// After an error response (a failed request, or one applied whose response was lost).
    pub after_error: u32,
}

/// One migrator run under the simulator (see the module doc).
pub struct MigratorShell<M: Machine> {
    machine: M,
    n: u64,
    /// `None`: never crashes (the completion after the budget).
    crash: Option<(SplitMix64, CrashRates)>,
    deadline: Timestamp,
    /// The last instant the machine was given.
    now: Timestamp,
    crashed: bool,
    finished: bool,
    log: Rc<RefCell<MigratorLog<M::Event>>>,
    status: Rc<RefCell<MigratorStatus>>,
}

impl<M: Machine> MigratorShell<M> {
    /// Runs migrator number `n`, started at `now` with `deadline` (a timer before that, a
    /// second or more ahead, is a settle wait); crashes it with `crash`'s seed and rates, if
    /// given.
    pub fn new(
        machine: M,
        n: u64,
        now: Timestamp,
        deadline: Timestamp,
        crash: Option<(u64, CrashRates)>,
        log: &Rc<RefCell<MigratorLog<M::Event>>>,
        status: &Rc<RefCell<MigratorStatus>>,
    ) -> MigratorShell<M> {
        status.borrow_mut().running = true;
        MigratorShell {
            machine,
            n,
            crash: crash.map(|(seed, rates)| (SplitMix64::new(seed), rates)),
            deadline,
            now,
            crashed: false,
            finished: false,
            log: log.clone(),
            status: status.clone(),
        }
    }

    fn roll_crash(&mut self, error: bool) -> bool {
        let Some((rng, rates)) = self.crash.as_mut() else {
            return false;
        };
        let rate = if error {
            rates.after_error
        } else {
            rates.after_response
        };
        rng.next_u64() % 10_000 < u64::from(rate)
    }

    /// Tells the driver whether the migrator sleeps (a timer at least [`WAIT_MIN_US`] ahead and
    /// before its deadline: a settle wait, not a retry's back-off).
    fn publish_timer(&self) {
        let timer = self
            .machine
            .poll_timeout()
            .filter(|t| *t < self.deadline && t.0 >= self.now.0.saturating_add(WAIT_MIN_US));
        self.status.borrow_mut().sleeping_until = timer;
    }

    fn end(&mut self, end: MigratorEnd) {
        if !self.finished {
            self.finished = true;
            let mut status = self.status.borrow_mut();
            status.running = false;
            status.sleeping_until = None;
            status.ended = Some(end);
        }
    }
}

impl<M: Machine> Drop for MigratorShell<M> {
    /// Dropped without a result: the simulator crashed it.
    fn drop(&mut self) {
        self.end(MigratorEnd::Failed);
    }
}

impl<M> Machine for MigratorShell<M>
where
    M: SchemaMigrator,
    M::Error: Display,
    M::Event: Clone,
{
    type Output = M::Output;
    type Event = ();
    type Error = String;

    fn handle_response(&mut self, tag: Tag, r: Result<Response, StoreError>, now: Timestamp) {
        if self.crashed {
            return;
        }
        self.now = now;
        let error = r.is_err();
        self.machine.handle_response(tag, r, now);
        if self.roll_crash(error) {
            self.crashed = true;
        }
        self.publish_timer();
    }
    fn handle_timeout(&mut self, now: Timestamp) {
        self.now = now;
        if !self.crashed {
            self.machine.handle_timeout(now);
            self.publish_timer();
        }
    }
    fn cancel(&mut self, now: Timestamp) {
        self.machine.cancel(now);
    }
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        if self.crashed {
            return None;
        }
        let (tag, request) = self.machine.poll_request()?;
        self.status.borrow_mut().requests_sent += 1;
        self.log
            .borrow_mut()
            .requests
            .push((self.n, request.clone()));
        self.publish_timer();
        Some((tag, request))
    }
    fn poll_abort(&mut self) -> Option<Tag> {
        if self.crashed {
            return None;
        }
        self.machine.poll_abort()
    }
    fn poll_event(&mut self) -> Option<()> {
        if self.crashed {
            return None;
        }
        let event = self.machine.poll_event()?;
        self.log.borrow_mut().events.push((self.n, event));
        Some(())
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        if self.crashed {
            return None;
        }
        self.machine.poll_timeout()
    }
    fn result(&mut self) -> Option<Result<M::Output, String>> {
        if self.crashed {
            if self.finished {
                return None;
            }
            self.end(MigratorEnd::Failed);
            return Some(Err(CRASHED.to_string()));
        }
        let result = self.machine.result()?;
        let end = migrator_end::<M>(&result);
        self.end(end);
        Some(result.map_err(|e| e.to_string()))
    }
}

/// §3's arrows the simulated operator can cause (the start, the passes, the gates, the switch,
/// the end, the rollback before the switch; not §4.9's swapped run, never asked for here).
pub fn section3_arrow(old: Option<MigrationState>, new: Option<MigrationState>) -> bool {
    use rowkit_codec::migration::MigrationState::*;
    matches!(
        (old, new),
        (None, Some(Copying))
            | (Some(Copying), Some(Verifying))
            | (Some(Verifying), Some(Copying))
            | (Some(Verifying), Some(Switching))
            | (Some(Switching), Some(Switched))
            | (Some(Switched), Some(Cleaning))
            | (Some(Cleaning), None)
            | (Some(Copying | Verifying | Switching), Some(Aborting))
            | (Some(Aborting), None)
    )
}
