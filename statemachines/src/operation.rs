//! The one shell every schema operation runs in: [`Operation`] is the [`Machine`], a [`Flow`]
//! is the operation itself.
//!
//! A schema operation is a struct with an explicit phase enum (typed states: each phase holds
//! exactly what it needs, and moving on consumes it). Its [`Flow::advance`] runs the phases as
//! far as the finished children and the timer allow and returns `Ok(None)` while it waits.
//! Sub-operations (the OPS update inside a trace-store Put, a walk inside a mount) are flows or
//! plain phase structs too, nested as a phase's payload and advanced by their parent.
//!
//! Requests are never built ad hoc for the wire: every request runs in a child machine of one
//! [`Children`] set ([`ReadRows`] with its merger and resume, [`ReadRow`] for one row,
//! [`MutateRows`] with the entry
//! retry rule, [`MutateRow`] retried when idempotent, or [`Unary`] for requests that are
//! never retried). [`Io`] is what a flow sees of its operation: the children, the clock (never
//! decreasing: every input's `now` is clamped to the latest seen), the deadline, the seed
//! stream, one back-off timer and the events it emits.
//!
//! Every schema ends the same way when stopped: `cancel` and the deadline both finish the
//! operation with [`OperationError::aborted`], abandon its children and release what the flow holds.
//!
//! ```
//! use rowkit_codec::model::{Mutation, Timestamp};
//! use rowkit_statemachines::operation::{Budget, ContextArg, Flow, Io, Operation, OperationError, Schema};
//! use rowkit_statemachines::children::ChildId;
//! use rowkit_statemachines::{Machine, MutateRowRequest, Request, Response, StoreError};
//!
//! /// A toy schema: its context counts the writes that succeeded.
//! struct Counter;
//! impl Schema for Counter {
//!     type Context = u32;
//!     type Event = ();
//!     type Error = ToyError;
//! }
//!
//! /// Its error: a static message.
//! #[derive(Debug, PartialEq)]
//! struct ToyError(&'static str);
//! impl core::fmt::Display for ToyError {
//!     fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
//!         f.write_str(self.0)
//!     }
//! }
//! impl OperationError for ToyError {
//!     fn id(&self) -> &'static str {
//!         self.0
//!     }
//!     fn aborted() -> ToyError {
//!         ToyError("aborted")
//!     }
//!     fn store(_: StoreError) -> ToyError {
//!         ToyError("store")
//!     }
//! }
//!
//! /// One write, sent once: `Start`, then `Wait` for its child.
//! enum Write {
//!     Start(Vec<u8>),
//!     Wait(ChildId),
//! }
//! impl Flow for Write {
//!     type Schema = Counter;
//!     type Output = ();
//!     fn advance(&mut self, io: &mut Io<()>, writes: &mut u32) -> Result<Option<()>, ToyError> {
//!         if let Write::Start(row) = self {
//!             let id = io.unary(Request::MutateRow(MutateRowRequest {
//!                 table: "t".into(),
//!                 app_profile_id: String::new(),
//!                 row_key: core::mem::take(row),
//!                 mutations: vec![Mutation::DeleteFromRow],
//!             }));
//!             *self = Write::Wait(id);
//!         }
//!         let Write::Wait(id) = self else { unreachable!() };
//!         match io.take(*id) {
//!             None => Ok(None),
//!             Some(Ok(_)) => {
//!                 *writes += 1;
//!                 Ok(Some(()))
//!             }
//!             Some(Err(_)) => Err(ToyError("write failed")),
//!         }
//!     }
//! }
//!
//! let mut writes = 0;
//! let budget = Budget::until(Timestamp(1_000_000));
//! let mut m = Operation::start(ContextArg::borrowed(&mut writes), Timestamp(0), 7, budget, Write::Start(b"r".to_vec()));
//! let (tag, _) = m.poll_request().unwrap();
//! m.handle_response(tag, Ok(Response::MutateRow), Timestamp(1));
//! assert_eq!(m.result(), Some(Ok(())));
//! drop(m);
//! assert_eq!(writes, 1);
//! ```

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::model::Row;

use crate::children::{Child, ChildId, ChildOutput, Children, Port, owned_rows};
use crate::raw::{MutateRow, MutateRows, Unary};
use crate::readrows::{ReadRow, ReadRows};
use crate::{
    Backoff, Machine, MutateRowRequest, MutateRowsRequest, ReadRowRequest, ReadRowsRequest,
    Request, Response, RetryPolicy, SplitMix64, StoreError, Tag, Timestamp,
};

/// What one schema's operations share: the per-instance context they run on, the events they
/// emit and their error.
pub trait Schema {
    /// Per-instance state an operation reads and updates (caches, allocators, the table).
    type Context;
    /// Events emitted along the way.
    type Event;
    /// Why an operation failed: the schema's one error type, following [`OperationError`].
    type Error: OperationError;
}

/// The id of the error every schema's operation ends with when it is cancelled or passes its
/// deadline ([`OperationError::aborted`]).
pub const ABORTED_ID: &str = "aborted";
/// The message of that error (its `Display`), the same in every schema.
pub const ABORTED_MESSAGE: &str = "aborted (deadline exceeded or cancelled)";
/// The message of the internal store error a driver reports for a stalled machine
/// ([`OperationError::stalled`]).
pub const STALLED_MESSAGE: &str = "machine stalled";

/// The error contract of every schema: a stable id, a readable `Display`, and the errors
/// every schema has — aborted, a store failure, a stalled machine, an unexpected reply — so
/// that operations, drivers and callers map them in one place.
pub trait OperationError: core::fmt::Display + core::fmt::Debug + Sized {
    /// The stable, machine-readable id (the CLI's and the JavaScript API's `id`).
    fn id(&self) -> &'static str;

    /// The error of an operation stopped by `cancel` or by its deadline; its id is
    /// [`ABORTED_ID`] and its message [`ABORTED_MESSAGE`], in every schema.
    fn aborted() -> Self;

    /// A store request that failed after its retries.
    fn store(error: StoreError) -> Self;

    /// The store error this error is, if it is one: callers show it as the store status
    /// (the CLI's `UNAVAILABLE: …`, the JavaScript API's `unavailable`), not as a schema error.
    fn as_store(&self) -> Option<&StoreError> {
        None
    }

    /// Whether the caller's input was refused before any request (the CLI exits 2, not 1).
    fn is_bad_input(&self) -> bool {
        false
    }

    /// A machine that had nothing in flight, no timeout and no result (a bug in the machine,
    /// reported by a driver rather than waiting forever): an `INTERNAL` store error.
    fn stalled() -> Self {
        Self::store(StoreError::new(crate::Code::Internal, STALLED_MESSAGE))
    }

    /// A child that answered with a reply of the wrong kind (a broken store or driver): an
    /// `INTERNAL` store error naming the reply.
    fn unexpected(reply: &ChildOutput) -> Self {
        Self::store(StoreError::new(
            crate::Code::Internal,
            alloc::format!("unexpected reply {reply:?}"),
        ))
    }
}

/// How an operation starts: its clock, the seed of its random stream, and the instant it is
/// aborted at. The last argument of every operation's `new`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    /// The current time.
    pub now: Timestamp,
    /// The seed of the operation's random stream (retry jitter, ids it draws).
    pub seed: u64,
    /// The instant the operation is aborted at.
    pub deadline: Timestamp,
}

impl Start {
    /// Starting at `now` with `seed`, aborted `micros` later.
    pub fn within(now: Timestamp, seed: u64, micros: i64) -> Start {
        Start {
            now,
            seed,
            deadline: now.saturating_add_micros(micros),
        }
    }
}

/// A step's outcome once it settled, its error included (`Ok(Some(Err(e)))`): for
/// `ready!(settled(step), …)` where the flow handles the step's error itself rather than
/// ending with it.
pub fn settled<T, E>(step: Result<Option<T>, E>) -> Result<Option<Result<T, E>>, E> {
    match step {
        Ok(None) => Ok(None),
        Ok(Some(v)) => Ok(Some(Ok(v))),
        Err(e) => Ok(Some(Err(e))),
    }
}

/// The value of a ready step (`Ok(Some(v))`) of the enclosing [`Flow::advance`], its error
/// returned as it is (so a request handle of [`Io`] takes the flow's error type); while the step
/// waits, the enclosing `advance` returns `Ok(None)` — after putting
/// `restore` back into `slot` when given (`ready!(step, self.phase => Phase::Wait(id))`, for a
/// phase moved out of `self`). The one wait idiom of every schema.
#[macro_export]
macro_rules! ready {
    ($poll:expr) => {
        match $poll {
            Ok(Some(v)) => v,
            Ok(None) => return Ok(None),
            Err(e) => return Err(e),
        }
    };
    ($poll:expr, $slot:expr => $restore:expr) => {
        match $poll {
            Ok(Some(v)) => v,
            Ok(None) => {
                $slot = $restore;
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
    };
}

/// What a flow's step gives: `Ok(None)` while it waits for children or its timer.
pub type Progress<T, S> = Result<Option<T>, <S as Schema>::Error>;

/// One schema operation as an explicit state machine (see the module doc).
pub trait Flow: Send {
    /// The schema whose context, events and error the flow uses.
    type Schema: Schema;
    /// What the operation produces.
    type Output;

    /// Runs the phases as far as finished children (and the timer) allow.
    fn advance(
        &mut self,
        io: &mut Io<<Self::Schema as Schema>::Event>,
        ctx: &mut <Self::Schema as Schema>::Context,
    ) -> Progress<Self::Output, Self::Schema>;

    /// Called once when the operation ends, however it ends (done, failed, deadline, `cancel`,
    /// or the machine dropped): gives back to the context what the flow still holds for it,
    /// e.g. ids offered to inserts never sent.
    fn release(&mut self, _ctx: &mut <Self::Schema as Schema>::Context) {}
}

/// How long an operation may run and how its children retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The instant the operation is aborted at.
    pub deadline: Timestamp,
    /// The children's retry policy; its `operation_timeout` is replaced by the time left until
    /// the deadline whenever a child starts.
    pub retry: RetryPolicy,
}

impl Budget {
    /// The default retry policy, up to `deadline`.
    pub fn until(deadline: Timestamp) -> Budget {
        Budget {
            deadline,
            retry: RetryPolicy::default(),
        }
    }
}

/// An operation's I/O: its children, clock, deadline, seed stream, back-off timer and events.
#[derive(Debug)]
pub struct Io<E> {
    children: Children,
    now: Timestamp,
    budget: Budget,
    rng: SplitMix64,
    wake_at: Option<Timestamp>,
    events: VecDeque<E>,
}

impl<E> Io<E> {
    fn new(now: Timestamp, seed: u64, budget: Budget) -> Io<E> {
        Io {
            children: Children::new(),
            now,
            budget,
            rng: SplitMix64::new(seed),
            wake_at: None,
            events: VecDeque::new(),
        }
    }

    /// The operation's current time: the latest `now` of any input (never decreasing).
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The instant the operation is aborted at.
    pub fn deadline(&self) -> Timestamp {
        self.budget.deadline
    }

    /// The next value of the operation's seed stream (for values the operation randomises).
    pub fn next_seed(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// The [`Start`] of an operation nested in this one ([`Nested`]): this one's time and
    /// deadline, the next seed of its stream.
    pub fn child_start(&mut self) -> Start {
        Start {
            now: self.now,
            seed: self.next_seed(),
            deadline: self.budget.deadline,
        }
    }

    /// Children retry within what is left of the operation's deadline.
    fn policy(&self) -> RetryPolicy {
        self.policy_until(self.budget.deadline)
    }

    /// The children's retry policy with its timeout at `deadline`.
    fn policy_until(&self, deadline: Timestamp) -> RetryPolicy {
        RetryPolicy {
            operation_timeout: deadline.0.saturating_sub(self.now.0).max(0),
            ..self.budget.retry
        }
    }

    /// Starts a read (nested [`ReadRows`] with resume and back-off; its jitter seed is drawn
    /// from the operation's seed stream).
    pub fn read_rows(&mut self, request: ReadRowsRequest) -> ChildId {
        self.read_rows_until(request, self.budget.deadline)
    }

    /// Starts a read like [`Io::read_rows`] whose retries end at `deadline` rather than at the
    /// operation's: for a schema whose requests carry deadlines of their own (the mount table's
    /// outlive its operation deadline, `spec/mounttable.md` §17).
    pub fn read_rows_until(&mut self, request: ReadRowsRequest, deadline: Timestamp) -> ChildId {
        let seed = self.rng.next_u64();
        let machine = ReadRows::new(request, self.now, seed, self.policy_until(deadline));
        self.children.spawn(Child::Read(machine))
    }

    /// Starts a point read of one row (nested [`ReadRow`], retried as a one-key
    /// [`ReadRows`]; its jitter seed is drawn from the operation's seed stream as
    /// [`Io::read_rows`] draws it, so a read moved onto it keeps every later seed). Read its
    /// row with [`Io::row`] or [`Io::shared_row`].
    pub fn read_row(&mut self, request: ReadRowRequest) -> ChildId {
        self.read_row_until(request, self.budget.deadline)
    }

    /// Starts a point read like [`Io::read_row`] whose retries end at `deadline` (as
    /// [`Io::read_rows_until`]).
    pub fn read_row_until(&mut self, request: ReadRowRequest, deadline: Timestamp) -> ChildId {
        let seed = self.rng.next_u64();
        let machine = ReadRow::new(request, self.now, seed, self.policy_until(deadline));
        self.children.spawn(Child::ReadRow(machine))
    }

    /// Sends a request once (never retried).
    pub fn unary(&mut self, request: Request) -> ChildId {
        self.children.spawn(Child::Unary(Unary::new(request)))
    }

    /// Sends a request once like [`Io::unary`], cut at `deadline` with `DEADLINE_EXCEEDED`
    /// when unanswered by then (its child's timer wakes the operation): for a schema whose
    /// requests carry deadlines of their own (`spec/mounttable.md` §17). Read its reply with
    /// the same handles ([`Io::matched`], [`Io::written`], [`Io::modified_row`]).
    pub fn unary_until(&mut self, request: Request, deadline: Timestamp) -> ChildId {
        self.children
            .spawn(Child::Unary(Unary::until(request, deadline)))
    }

    /// Starts a single-row write (nested [`MutateRow`], retried only when idempotent).
    pub fn mutate_row(&mut self, request: MutateRowRequest) -> ChildId {
        let seed = self.rng.next_u64();
        let machine = MutateRow::new(request, self.now, seed, self.policy());
        self.children.spawn(Child::WriteRow(machine))
    }

    /// Starts a batch write (nested [`MutateRows`] with the entry retry rule).
    pub fn mutate_rows(&mut self, request: MutateRowsRequest) -> ChildId {
        let seed = self.rng.next_u64();
        let machine = MutateRows::new(request, self.now, seed, self.policy());
        self.children.spawn(Child::WriteRows(machine))
    }

    /// The outcome of `id` once it has finished.
    pub fn take(&mut self, id: ChildId) -> Option<Result<ChildOutput, StoreError>> {
        self.children.take(id)
    }

    /// The finished outcome with the lowest id among `ids`.
    pub fn take_any(
        &mut self,
        ids: &[ChildId],
    ) -> Option<(ChildId, Result<ChildOutput, StoreError>)> {
        self.children.take_any(ids)
    }

    /// The next row a reading child has produced so far (for flows that stream).
    pub fn next_row(&mut self, id: ChildId) -> Option<Row> {
        self.children.next_row(id)
    }

    /// Whether `id` is still running.
    pub fn is_running(&self, id: ChildId) -> bool {
        self.children.is_running(id)
    }

    /// Stops child `id`; its late responses are dropped.
    pub fn abort(&mut self, id: ChildId) {
        self.children.abort(id);
    }

    /// A back-off schedule for a retry loop of this operation.
    pub fn backoff(&mut self) -> Backoff {
        let seed = self.rng.next_u64();
        Backoff::new(self.policy(), self.now, seed)
    }

    /// Arms the operation's timer; [`Io::sleeping`] is true until `handle_timeout` reaches `at`.
    pub fn sleep_until(&mut self, at: Timestamp) {
        self.wake_at = Some(at);
    }

    /// Disarms the timer armed by [`Io::sleep_until`] (what it bounded ended first).
    pub fn cancel_sleep(&mut self) {
        self.wake_at = None;
    }

    /// Whether the timer armed by [`Io::sleep_until`] has not fired yet.
    pub fn sleeping(&self) -> bool {
        self.wake_at.is_some()
    }

    /// Emits an event; the driver drains it after the current input.
    pub fn emit(&mut self, event: E) {
        self.events.push_back(event);
    }

    /// A mark for [`Io::emitted_since`]: how many events wait to be drained.
    pub fn emitted(&self) -> usize {
        self.events.len()
    }

    /// The events emitted since `mark` ([`Io::emitted`] taken earlier **in the same input**:
    /// the driver drains events only between inputs). A wrapper flow learns from them what
    /// the flow it runs changed (an aware objmeta write, the keys it mirrors).
    pub fn emitted_since(&self, mark: usize) -> impl Iterator<Item = &E> {
        self.events.iter().skip(mark)
    }

    /// Moves the operation's deadline to `deadline` (earlier or later); children already
    /// running keep the retry budget they started with. A flow that bounds part of its work
    /// on its own clock (an aware objmeta write sends nothing more than `max_write` after
    /// the marker read it acts on, `docs/migration.md` §2.3).
    pub fn set_deadline(&mut self, deadline: Timestamp) {
        self.budget.deadline = deadline;
    }

    // The request handles every schema reads its children's outcomes with: `Ok(None)` while
    // the child runs, a store error as the schema's [`OperationError::store`], a reply of
    // the wrong kind as its [`OperationError::unexpected`].

    /// The outcome of `id` once finished, `reply` reading the kind of output it expects
    /// (handing back any other kind).
    fn reply<T, Err: OperationError>(
        &mut self,
        id: ChildId,
        reply: impl FnOnce(ChildOutput) -> Result<T, ChildOutput>,
    ) -> Result<Option<T>, Err> {
        self.take(id)
            .map(|outcome| read_reply(outcome, reply))
            .transpose()
    }

    /// The rows of read `id`, owned, once it finished.
    pub fn rows<Err: OperationError>(&mut self, id: ChildId) -> Result<Option<Vec<Row>>, Err> {
        self.reply(id, rows_reply)
    }

    /// The rows of read `id` once it finished, shared as the read produced them (a row a cache
    /// handed over is not copied): for a flow that keeps or caches what it decodes.
    pub fn shared_rows<Err: OperationError>(
        &mut self,
        id: ChildId,
    ) -> Result<Option<Vec<Arc<Row>>>, Err> {
        self.reply(id, |output| match output {
            ChildOutput::Rows(rows) => Ok(rows),
            other => Err(other),
        })
    }

    /// The row of point read `id`, owned, once it finished (`Some(None)`: no such row, or no
    /// cell passed the filter).
    pub fn row<Err: OperationError>(&mut self, id: ChildId) -> Result<Option<Option<Row>>, Err> {
        Ok(self
            .shared_row(id)?
            .map(|row| row.map(Arc::unwrap_or_clone)))
    }

    /// The row of point read `id` once it finished, shared as the store or cache handed it
    /// over: for a flow that keeps or caches what it decodes.
    pub fn shared_row<Err: OperationError>(
        &mut self,
        id: ChildId,
    ) -> Result<Option<Option<Arc<Row>>>, Err> {
        self.reply(id, |output| match output {
            ChildOutput::Row(row) => Ok(row),
            other => Err(other),
        })
    }

    /// Hands every row read `id` has produced so far to `each`, in key order; `Some(())` once
    /// the read finished. A row `each` rejects ends the step with its error.
    pub fn stream_rows<Err: OperationError>(
        &mut self,
        id: ChildId,
        mut each: impl FnMut(Row) -> Result<(), Err>,
    ) -> Result<Option<()>, Err> {
        while let Some(row) = self.next_row(id) {
            each(row)?;
        }
        let Some(rest) = self.rows(id)? else {
            return Ok(None);
        };
        rest.into_iter().try_for_each(each).map(Some)
    }

    /// `predicate_matched` of `CheckAndMutateRow` `id` once it finished.
    pub fn matched<Err: OperationError>(&mut self, id: ChildId) -> Result<Option<bool>, Err> {
        self.reply(id, |output| match output {
            ChildOutput::Unary(Response::CheckAndMutateRow { predicate_matched }) => {
                Ok(predicate_matched)
            }
            other => Err(other),
        })
    }

    /// The row `ReadModifyWriteRow` `id` answered with, once it finished.
    pub fn modified_row<Err: OperationError>(&mut self, id: ChildId) -> Result<Option<Row>, Err> {
        self.reply(id, |output| match output {
            ChildOutput::Unary(Response::ReadModifyWriteRow(row)) => Ok(row),
            other => Err(other),
        })
    }

    /// `Some(())` once write `id` (a `MutateRow`, or a `MutateRows` whose first failed entry,
    /// in entry order, is its error) finished.
    pub fn written<Err: OperationError>(&mut self, id: ChildId) -> Result<Option<()>, Err> {
        let results = self.reply(id, |output| match output {
            ChildOutput::WroteRow | ChildOutput::Unary(Response::MutateRow) => Ok(Vec::new()),
            ChildOutput::WroteRows(results) => Ok(results),
            other => Err(other),
        })?;
        let Some(results) = results else {
            return Ok(None);
        };
        match results.into_iter().find_map(|r| r.result.err()) {
            Some(e) => Err(Err::store(e)),
            None => Ok(Some(())),
        }
    }
}

/// A finished child's `outcome`, `reply` reading the kind of output it expects: a store error
/// as the schema's [`OperationError::store`], another kind as its
/// [`OperationError::unexpected`].
fn read_reply<T, Err: OperationError>(
    outcome: Result<ChildOutput, StoreError>,
    reply: impl FnOnce(ChildOutput) -> Result<T, ChildOutput>,
) -> Result<T, Err> {
    match outcome {
        Err(e) => Err(Err::store(e)),
        Ok(output) => reply(output).map_err(|other| Err::unexpected(&other)),
    }
}

/// The rows of a read's output, owned (any other output handed back).
fn rows_reply(output: ChildOutput) -> Result<Vec<Row>, ChildOutput> {
    match output {
        ChildOutput::Rows(rows) => Ok(owned_rows(rows)),
        other => Err(other),
    }
}

// Waiting for the deadline after a child gave up (`spec/objmeta.md` 16.3; any schema may use
// it): a read or a batch write retries a retryable error while a retry fits before the
// deadline, so ending with one means none fits. The flow then waits and the operation ends
// aborted at its deadline, as it would have had the child kept retrying until then.
impl<E> Io<E> {
    /// Whether child `id`, a child that retries (a read, a point read or a batch write), ended with a
    /// retryable store error: it gave up because no retry fits before the deadline.
    pub fn gave_up(&self, id: ChildId) -> bool {
        matches!(self.children.outcome(id), Some(Err(e)) if e.code.is_retryable())
    }

    /// The rows of read `id` as [`Io::rows`] gives them, except that a read that
    /// [gave up](Io::gave_up) never finishes: the step waits for the deadline.
    pub fn rows_or_wait<Err: OperationError>(
        &mut self,
        id: ChildId,
    ) -> Result<Option<Vec<Row>>, Err> {
        if self.gave_up(id) {
            return Ok(None);
        }
        self.rows(id)
    }

    /// The row of point read `id` as [`Io::row`] gives it, except that a read that
    /// [gave up](Io::gave_up) never finishes: the step waits for the deadline.
    pub fn row_or_wait<Err: OperationError>(
        &mut self,
        id: ChildId,
    ) -> Result<Option<Option<Row>>, Err> {
        if self.gave_up(id) {
            return Ok(None);
        }
        self.row(id)
    }

    /// `Some(())` once batch write `id` finished as [`Io::written`] says, except that a batch
    /// that [gave up](Io::gave_up) never finishes: the step waits for the deadline.
    pub fn written_or_wait<Err: OperationError>(&mut self, id: ChildId) -> Result<Option<()>, Err> {
        if self.gave_up(id) {
            return Ok(None);
        }
        self.written(id)
    }
}

/// Waits for every child of a fan-out; outcomes come back in spawn order.
#[derive(Debug)]
pub struct WaitAll {
    ids: Vec<ChildId>,
    outcomes: Vec<Option<Result<ChildOutput, StoreError>>>,
}

impl WaitAll {
    /// Waits for `ids`.
    pub fn new(ids: Vec<ChildId>) -> WaitAll {
        let outcomes = ids.iter().map(|_| None).collect();
        WaitAll { ids, outcomes }
    }

    /// All outcomes, in the order of the ids, once every child has finished.
    pub fn poll<E>(&mut self, io: &mut Io<E>) -> Option<Vec<Result<ChildOutput, StoreError>>> {
        for (id, slot) in self.ids.iter().zip(self.outcomes.iter_mut()) {
            if slot.is_none() {
                *slot = io.take(*id);
            }
        }
        if self.outcomes.iter().any(Option::is_none) {
            return None;
        }
        Some(self.outcomes.drain(..).flatten().collect())
    }

    /// The rows of every read of the fan-out, in the order of the ids, once every one has
    /// finished; the first failure in that order is the error (read as [`Io::rows`] reads).
    pub fn rows<E, Err: OperationError>(
        &mut self,
        io: &mut Io<E>,
    ) -> Result<Option<Vec<Vec<Row>>>, Err> {
        let Some(outcomes) = self.poll(io) else {
            return Ok(None);
        };
        outcomes
            .into_iter()
            .map(|outcome| read_reply(outcome, rows_reply))
            .collect::<Result<Vec<_>, Err>>()
            .map(Some)
    }
}

/// The context an [`Operation`] runs on: borrowed from the caller for the machine's life, or
/// owned by the machine (so it can be `'static`, e.g. boxed in a scheduler that runs many
/// machines, and hand the context back with [`Operation::take_context`] once it finished).
/// Both run the same flow and send the same requests.
#[derive(Debug)]
pub struct ContextArg<'a, C>(Slot<'a, C>);

#[derive(Debug)]
enum Slot<'a, C> {
    Borrowed(&'a mut C),
    Owned(C),
    Empty,
}

/// `&mut ctx`: the machine borrows the context for its life.
impl<'a, C> From<&'a mut C> for ContextArg<'a, C> {
    fn from(ctx: &'a mut C) -> Self {
        ContextArg::borrowed(ctx)
    }
}

/// `ctx` by value: the machine owns it and hands it back with
/// [`Operation::take_context`] once it ended.
impl<'a, C> From<C> for ContextArg<'a, C> {
    fn from(ctx: C) -> Self {
        ContextArg(Slot::Owned(ctx))
    }
}

impl<'a, C> ContextArg<'a, C> {
    /// Borrows `ctx` for the machine's life.
    pub fn borrowed(ctx: &'a mut C) -> Self {
        ContextArg(Slot::Borrowed(ctx))
    }

    /// Moves `ctx` into the machine.
    pub fn owned(ctx: C) -> ContextArg<'static, C> {
        ContextArg(Slot::Owned(ctx))
    }

    /// The context, e.g. to validate arguments before the machine starts.
    pub fn get(&mut self) -> Option<&mut C> {
        match &mut self.0 {
            Slot::Borrowed(c) => Some(c),
            Slot::Owned(c) => Some(c),
            Slot::Empty => None,
        }
    }
}

/// A machine nested in an operation — the one way a flow composes another operation (of any
/// schema) as a child: its requests leave through the parent's children under parent tags (a
/// [`Port`] child), its responses come back through the parent, and its timer is the
/// parent's ([`Io::sleep_until`]). The parent calls [`Nested::advance`] from its own `advance`
/// until it returns the nested machine's result; the migrator runs `Check` this way.
#[derive(Debug)]
pub struct Nested<M: Machine> {
    machine: M,
    port: ChildId,
}

impl<M: Machine> Nested<M> {
    /// Nests `machine` (already started) in the operation of `io`, its first requests sent.
    pub fn start<E>(io: &mut Io<E>, machine: M) -> Nested<M> {
        let port = io.children.spawn(Child::Port(Port::default()));
        let mut nested = Nested { machine, port };
        nested.relay(io);
        nested
    }

    /// Sends the nested machine's requests and aborts through the port.
    fn relay<E>(&mut self, io: &mut Io<E>) {
        let machine = &mut self.machine;
        io.children.with_port(self.port, |port| {
            while let Some((tag, request)) = machine.poll_request() {
                port.send(tag, request);
            }
            while let Some(tag) = machine.poll_abort() {
                port.abort(tag);
            }
        });
    }

    /// Delivers the responses received and a due timer to the nested machine, relays what it
    /// sends, hands each of its events to `on_event`, and returns its result once it has
    /// one (the port is then closed). While it runs, the parent's timer is set to the nested
    /// machine's.
    pub fn advance<E>(
        &mut self,
        io: &mut Io<E>,
        mut on_event: impl FnMut(&mut Io<E>, M::Event),
    ) -> Option<Result<M::Output, M::Error>> {
        let responses = io
            .children
            .with_port(self.port, Port::take_responses)
            .unwrap_or_default();
        for (tag, response) in responses {
            self.machine.handle_response(tag, response, io.now);
        }
        if self.machine.poll_timeout().is_some_and(|t| t <= io.now) {
            self.machine.handle_timeout(io.now);
        }
        self.relay(io);
        while let Some(event) = self.machine.poll_event() {
            on_event(io, event);
        }
        if let Some(result) = self.machine.result() {
            io.children.abort(self.port);
            io.cancel_sleep();
            return Some(result);
        }
        match self.machine.poll_timeout() {
            Some(at) if at > io.now => io.sleep_until(at),
            _ => io.cancel_sleep(),
        }
        None
    }
}

/// A schema operation as a [`Machine`] (see the module doc). `Send` whenever its flow, context
/// reference, events and output are.
pub struct Operation<'a, F: Flow> {
    ctx: ContextArg<'a, <F::Schema as Schema>::Context>,
    io: Io<<F::Schema as Schema>::Event>,
    flow: Option<F>,
    outcome: Option<Result<F::Output, <F::Schema as Schema>::Error>>,
}

impl<F: Flow> core::fmt::Debug for Operation<'_, F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Operation")
            .field("running", &self.flow.is_some())
            .field("now", &self.io.now)
            .field("budget", &self.io.budget)
            .field("children", &self.io.children)
            .finish_non_exhaustive()
    }
}

type ErrorOf<F> = <<F as Flow>::Schema as Schema>::Error;

impl<'a, F: Flow> Operation<'a, F> {
    /// Starts `flow` on `ctx` at `now`; it runs until its first wait.
    pub fn start(
        ctx: ContextArg<'a, <F::Schema as Schema>::Context>,
        now: Timestamp,
        seed: u64,
        budget: Budget,
        flow: F,
    ) -> Self {
        let mut op = Operation {
            ctx,
            io: Io::new(now, seed, budget),
            flow: Some(flow),
            outcome: None,
        };
        op.step();
        op
    }

    /// Starts `flow` on `ctx` as `start` says, its children retrying with `retry` (whose
    /// `operation_timeout` is replaced by the time left until the deadline); it runs until its
    /// first wait.
    pub fn begin(
        ctx: ContextArg<'a, <F::Schema as Schema>::Context>,
        start: Start,
        retry: RetryPolicy,
        flow: F,
    ) -> Self {
        let budget = Budget {
            deadline: start.deadline,
            retry,
        };
        Operation::start(ctx, start.now, start.seed, budget, flow)
    }

    /// An operation that failed before sending anything (arguments rejected by validation).
    pub fn failed(ctx: ContextArg<'a, <F::Schema as Schema>::Context>, error: ErrorOf<F>) -> Self {
        Operation {
            ctx,
            io: Io::new(Timestamp(0), 0, Budget::until(Timestamp::MAX)),
            flow: None,
            outcome: Some(Err(error)),
        }
    }

    /// The context the machine owns (it was built from [`ContextArg::owned`]) once the
    /// operation has ended; `None` while it runs, for a borrowed context, or when taken before.
    pub fn take_context(&mut self) -> Option<<F::Schema as Schema>::Context> {
        if self.flow.is_some() {
            return None;
        }
        match core::mem::replace(&mut self.ctx.0, Slot::Empty) {
            Slot::Owned(ctx) => Some(ctx),
            other => {
                self.ctx.0 = other;
                None
            }
        }
    }

    /// Responses dropped because they answered an abandoned request.
    pub fn stale_responses(&self) -> u64 {
        self.io.children.stale_responses()
    }

    fn clock(&mut self, now: Timestamp) {
        if now > self.io.now {
            self.io.now = now;
        }
    }

    fn expired(&self) -> bool {
        self.io.now >= self.io.budget.deadline
    }

    /// Advances the flow once after an input.
    fn step(&mut self) {
        if self.flow.is_none() {
            return;
        }
        if self.expired() {
            return self.finish(Err(ErrorOf::<F>::aborted()));
        }
        let (Some(flow), Some(ctx)) = (self.flow.as_mut(), self.ctx.get()) else {
            return;
        };
        match flow.advance(&mut self.io, ctx) {
            Ok(None) => {}
            Ok(Some(output)) => self.finish(Ok(output)),
            Err(e) => self.finish(Err(e)),
        }
    }

    /// Ends the flow (done, failed, deadline, cancel): it releases what it still holds, and
    /// every child is abandoned.
    fn finish(&mut self, outcome: Result<F::Output, ErrorOf<F>>) {
        self.release();
        self.io.children.abort_all();
        self.io.wake_at = None;
        self.outcome = Some(outcome);
    }

    /// Ends the flow, giving back what it holds for the context.
    fn release(&mut self) {
        if let (Some(mut flow), Some(ctx)) = (self.flow.take(), self.ctx.get()) {
            flow.release(ctx);
        }
    }
}

impl<F: Flow> Drop for Operation<'_, F> {
    /// A machine dropped while running gives back what its flow holds, as `cancel` would.
    fn drop(&mut self) {
        self.release();
    }
}

impl<F: Flow> Machine for Operation<'_, F> {
    type Output = F::Output;
    type Event = <F::Schema as Schema>::Event;
    type Error = ErrorOf<F>;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) {
        self.clock(now);
        if self.flow.is_none() {
            return;
        }
        self.io.children.handle_response(tag, response, self.io.now);
        self.step();
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        self.clock(now);
        if self.flow.is_none() {
            return;
        }
        if self.expired() {
            return self.finish(Err(ErrorOf::<F>::aborted()));
        }
        let now = self.io.now;
        self.io.children.handle_timeout(now);
        if self.io.wake_at.is_some_and(|t| t <= now) {
            self.io.wake_at = None;
        }
        self.step();
    }

    fn cancel(&mut self, now: Timestamp) {
        self.clock(now);
        if self.flow.is_some() {
            self.finish(Err(ErrorOf::<F>::aborted()));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        // Past the deadline nothing new leaves; the next input ends the machine aborted.
        if self.flow.is_some() && self.expired() {
            return None;
        }
        self.io.children.poll_request()
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.io.children.poll_abort()
    }

    fn poll_event(&mut self) -> Option<Self::Event> {
        self.io.events.pop_front()
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.flow.as_ref()?;
        let mut earliest = self.io.budget.deadline;
        if let Some(t) = self.io.wake_at {
            earliest = earliest.min(t);
        }
        if let Some(t) = self.io.children.poll_timeout() {
            earliest = earliest.min(t);
        }
        Some(earliest)
    }

    fn result(&mut self) -> Option<Result<F::Output, ErrorOf<F>>> {
        self.outcome.take()
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::String;
    use alloc::vec;

    use rowkit_codec::model::Mutation;

    use super::*;

    struct Toy;
    impl Schema for Toy {
        type Context = Vec<&'static str>;
        type Event = u32;
        type Error = ToyError;
    }

    #[derive(Debug, PartialEq)]
    struct ToyError(&'static str);
    impl core::fmt::Display for ToyError {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl OperationError for ToyError {
        fn id(&self) -> &'static str {
            self.0
        }
        fn aborted() -> ToyError {
            ToyError("aborted")
        }
        fn store(_: StoreError) -> ToyError {
            ToyError("store")
        }
    }

    /// Writes one row, emitting an event per step; records in the context when released.
    struct Write(Option<ChildId>);
    impl Flow for Write {
        type Schema = Toy;
        type Output = ();
        fn advance(&mut self, io: &mut Io<u32>, _: &mut Vec<&'static str>) -> Progress<(), Toy> {
            let id = *self.0.get_or_insert_with(|| {
                io.emit(1);
                io.unary(Request::MutateRow(MutateRowRequest {
                    table: "t".into(),
                    app_profile_id: String::new(),
                    row_key: b"r".to_vec(),
                    mutations: vec![Mutation::DeleteFromRow],
                }))
            });
            Ok(io.take(id).map(drop))
        }
        fn release(&mut self, log: &mut Vec<&'static str>) {
            log.push("released");
        }
    }

    fn start<'a>(log: &'a mut Vec<&'static str>, deadline: i64) -> Operation<'a, Write> {
        let budget = Budget::until(Timestamp(deadline));
        Operation::start(
            ContextArg::borrowed(log),
            Timestamp(10),
            1,
            budget,
            Write(None),
        )
    }

    #[test]
    fn cancel_and_deadline_end_aborted_and_release() {
        let mut log = Vec::new();
        let mut m = start(&mut log, 100);
        let (tag, _) = m.poll_request().unwrap();
        m.cancel(Timestamp(5));
        assert_eq!(m.poll_abort(), Some(tag));
        assert_eq!(m.result(), Some(Err(ToyError("aborted"))));
        drop(m);
        let mut m = start(&mut log, 100);
        assert_eq!(m.poll_timeout(), Some(Timestamp(100)));
        m.handle_timeout(Timestamp(100));
        assert_eq!(m.result(), Some(Err(ToyError("aborted"))));
        drop(m);
        assert_eq!(log, ["released", "released"]);
    }

    #[test]
    fn now_is_clamped_and_a_finished_flow_is_released_once() {
        let mut log = Vec::new();
        let mut m = start(&mut log, 100);
        assert_eq!(m.poll_event(), Some(1));
        let (tag, _) = m.poll_request().unwrap();
        m.handle_response(tag, Ok(Response::MutateRow), Timestamp(3));
        assert_eq!(
            m.io.now(),
            Timestamp(10),
            "an earlier now does not move the clock back"
        );
        assert_eq!(m.result(), Some(Ok(())));
        drop(m);
        assert_eq!(log, ["released"]);
    }

    /// Runs a [`Write`] operation (deadline `inner_deadline`) nested in its own, re-emitting
    /// its events plus 100, and ends with its result.
    struct Outer {
        inner_deadline: i64,
        nested: Option<Nested<Operation<'static, Write>>>,
    }
    impl Flow for Outer {
        type Schema = Toy;
        type Output = Result<(), ToyError>;
        fn advance(
            &mut self,
            io: &mut Io<u32>,
            _: &mut Vec<&'static str>,
        ) -> Progress<Result<(), ToyError>, Toy> {
            let deadline = self.inner_deadline;
            let nested = self.nested.get_or_insert_with(|| {
                let budget = Budget::until(Timestamp(deadline));
                let inner = Operation::start(
                    ContextArg::owned(Vec::new()),
                    io.now(),
                    2,
                    budget,
                    Write(None),
                );
                Nested::start(io, inner)
            });
            Ok(nested.advance(io, |io, e| io.emit(e + 100)))
        }
    }

    fn outer(inner_deadline: i64) -> Operation<'static, Outer> {
        let flow = Outer {
            inner_deadline,
            nested: None,
        };
        let budget = Budget::until(Timestamp(1_000));
        Operation::start(
            ContextArg::owned(Vec::new()),
            Timestamp(10),
            1,
            budget,
            flow,
        )
    }

    #[test]
    fn a_nested_operation_runs_through_the_parents_requests_events_and_timer() {
        let mut m = outer(500);
        let (tag, request) = m.poll_request().unwrap();
        assert!(matches!(request, Request::MutateRow(r) if r.row_key == b"r"));
        assert_eq!(m.poll_request(), None);
        assert_eq!(
            m.poll_event(),
            Some(101),
            "the nested machine's event, re-emitted"
        );
        assert_eq!(
            m.poll_timeout(),
            Some(Timestamp(500)),
            "the nested deadline is the parent's timer"
        );
        m.handle_response(tag, Ok(Response::MutateRow), Timestamp(20));
        assert_eq!(m.result(), Some(Ok(Ok(()))));

        // The nested deadline passes first: its timer ends it aborted, the parent goes on.
        let mut m = outer(300);
        let (tag, _) = m.poll_request().unwrap();
        m.handle_timeout(Timestamp(300));
        assert_eq!(m.result(), Some(Ok(Err(ToyError("aborted")))));
        assert_eq!(
            m.poll_abort(),
            Some(tag),
            "its request in flight is aborted"
        );
    }

    /// Reads one row with [`Io::rows_or_wait`].
    struct ReadOrWait(Option<ChildId>);
    impl Flow for ReadOrWait {
        type Schema = Toy;
        type Output = usize;
        fn advance(&mut self, io: &mut Io<u32>, _: &mut Vec<&'static str>) -> Progress<usize, Toy> {
            let id = *self.0.get_or_insert_with(|| {
                io.read_rows(ReadRowsRequest {
                    table: "t".into(),
                    ..Default::default()
                })
            });
            Ok(io.rows_or_wait(id)?.map(|rows| rows.len()))
        }
    }

    /// A read answered with `error` 100 µs before the deadline (the least back-off, 5 ms,
    /// does not fit).
    fn read_failing_with<'a>(
        log: &'a mut Vec<&'static str>,
        error: StoreError,
    ) -> Operation<'a, ReadOrWait> {
        let budget = Budget::until(Timestamp(110));
        let mut m = Operation::start(
            ContextArg::borrowed(log),
            Timestamp(10),
            1,
            budget,
            ReadOrWait(None),
        );
        let (tag, _) = m.poll_request().unwrap();
        m.handle_response(tag, Err(error), Timestamp(10));
        m
    }

    #[test]
    fn a_read_that_gave_up_waits_for_the_deadline_and_ends_aborted() {
        let mut log = Vec::new();
        let unavailable = StoreError::new(crate::Code::Unavailable, "down");
        let mut m = read_failing_with(&mut log, unavailable);
        assert!(m.poll_request().is_none(), "no retry fits");
        assert_eq!(m.result(), None, "it waits");
        assert_eq!(m.poll_timeout(), Some(Timestamp(110)));
        m.handle_timeout(Timestamp(60));
        assert_eq!(m.result(), None, "still waiting before the deadline");
        m.handle_timeout(Timestamp(110));
        assert_eq!(m.result(), Some(Err(ToyError("aborted"))));
    }

    #[test]
    fn a_read_that_failed_for_good_fails_at_once() {
        let mut log = Vec::new();
        let not_found = StoreError::new(crate::Code::NotFound, "no table");
        let mut m = read_failing_with(&mut log, not_found);
        assert_eq!(m.result(), Some(Err(ToyError("store"))));
    }

    /// Writes one row with a request deadline of its own, read through [`Io::written`].
    struct WriteUntil(Timestamp, Option<ChildId>);
    impl Flow for WriteUntil {
        type Schema = Toy;
        type Output = ();
        fn advance(&mut self, io: &mut Io<u32>, _: &mut Vec<&'static str>) -> Progress<(), Toy> {
            let deadline = self.0;
            let id = *self.1.get_or_insert_with(|| {
                io.unary_until(
                    Request::MutateRow(MutateRowRequest {
                        table: "t".into(),
                        app_profile_id: String::new(),
                        row_key: b"r".to_vec(),
                        mutations: vec![Mutation::DeleteFromRow],
                    }),
                    deadline,
                )
            });
            io.written(id)
        }
    }

    #[test]
    fn a_request_deadline_cuts_only_an_unanswered_request() {
        let budget = Budget::until(Timestamp(1_000));
        let start = |log| {
            let flow = WriteUntil(Timestamp(50), None);
            Operation::start(ContextArg::owned(log), Timestamp(10), 1, budget, flow)
        };
        let mut m = start(Vec::new());
        let (tag, _) = m.poll_request().unwrap();
        assert_eq!(
            m.poll_timeout(),
            Some(Timestamp(50)),
            "the request's deadline"
        );
        m.handle_timeout(Timestamp(49));
        assert_eq!(m.result(), None);
        m.handle_timeout(Timestamp(50));
        assert_eq!(m.poll_abort(), Some(tag), "the cut request is aborted");
        assert_eq!(m.result(), Some(Err(ToyError("store"))));

        let mut m = start(Vec::new());
        let (tag, _) = m.poll_request().unwrap();
        m.handle_response(tag, Ok(Response::MutateRow), Timestamp(50));
        assert_eq!(
            m.result(),
            Some(Ok(())),
            "answered in time, even at the deadline"
        );
    }

    #[test]
    fn an_owned_context_comes_back_once_finished() {
        let budget = Budget::until(Timestamp(100));
        let mut m = Operation::start(
            ContextArg::owned(Vec::new()),
            Timestamp(0),
            1,
            budget,
            Write(None),
        );
        assert!(m.take_context().is_none(), "still running");
        m.cancel(Timestamp(1));
        assert_eq!(m.take_context(), Some(vec!["released"]));
    }
}
