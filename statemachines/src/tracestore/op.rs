//! The shell every trace store operation runs in: [`Op`] is the [`Machine`], a [`Flow`] is the
//! operation itself.
//!
//! A trace store operation is a long sequence of phases (read the OPS, compare-and-swap it, look
//! digests up, allocate ids, insert, write chunks), several with many requests in flight. Each
//! operation is a struct with an explicit phase enum; its [`Flow::advance`] runs the phases as
//! far as the finished children allow and returns `Ok(None)` while it waits. Sub-operations
//! (the OPS update inside Put, a tile load inside a range read) are flows too, nested as a
//! phase's payload and advanced by their parent.
//!
//! Requests are never built ad hoc for the wire: every request runs in a child machine of the
//! shared [`Children`] set ([`ReadRows`] with its merger and resume, [`MutateRows`] with the
//! entry retry rule, or [`Unary`] for `CheckAndMutateRow` / `ReadModifyWriteRow`, which are
//! never retried). [`Io`] is what a flow sees of its operation: the children, the clock (never
//! decreasing), the deadline, the seed stream and one back-off timer.

use alloc::boxed::Box;
use alloc::vec::Vec;

use rowkit_codec::tracestore::TraceStoreError;

use super::state::TraceStoreState;
use crate::children::{Child, ChildId, ChildOutput, Children};
use crate::raw::{MutateRows, Unary};
use crate::readrows::ReadRows;
use crate::{
    Backoff, Machine, MutateRowsRequest, ReadRowsRequest, Request, Response, RetryPolicy,
    SplitMix64, StoreError, Tag, Timestamp,
};

/// What a flow's step gives: `Ok(None)` while it waits for children or its timer.
pub(crate) type Progress<T> = Result<Option<T>, TraceStoreError>;

/// One trace store operation or sub-operation as an explicit state machine.
pub(crate) trait Flow: Send {
    /// What the operation produces.
    type Output;

    /// Runs the phases as far as finished children (and the timer) allow.
    fn advance(&mut self, io: &mut Io, state: &mut TraceStoreState) -> Progress<Self::Output>;

    /// Called once when the operation is stopped before it finished (deadline, `cancel`, an
    /// error of a sibling, or the machine dropped): gives back to the state what the flow holds
    /// for it, e.g. ids offered to digest-map inserts never sent (`spec/tracestore.md` 17.1).
    fn release(&mut self, _state: &mut TraceStoreState) {}
}

/// An operation's I/O: its children, clock, deadline, seed stream and back-off timer.
#[derive(Debug)]
pub(crate) struct Io {
    children: Children,
    now: Timestamp,
    deadline: Timestamp,
    rng: SplitMix64,
    wake_at: Option<Timestamp>,
}

impl Io {
    fn new(now: Timestamp, deadline: Timestamp, seed: u64) -> Io {
        Io {
            children: Children::new(),
            now,
            deadline,
            rng: SplitMix64::new(seed),
            wake_at: None,
        }
    }

    /// The machine's current time (never decreasing).
    pub(crate) fn now(&self) -> Timestamp {
        self.now
    }

    /// Children retry within what is left of the operation's deadline.
    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            operation_timeout: self.deadline.0.saturating_sub(self.now.0).max(0),
            ..RetryPolicy::default()
        }
    }

    /// Starts a read (nested [`ReadRows`] with resume and back-off; its jitter seed is drawn
    /// from the operation's seed).
    pub(crate) fn read_rows(&mut self, request: ReadRowsRequest) -> ChildId {
        let seed = self.rng.next_u64();
        let machine = ReadRows::new(request, self.now, seed, self.policy());
        self.children.spawn(Child::Read(machine))
    }

    /// Sends a unary request once (never retried).
    pub(crate) fn unary(&mut self, request: Request) -> ChildId {
        self.children.spawn(Child::Unary(Unary::new(request)))
    }

    /// Starts a batch write (nested [`MutateRows`] with the entry retry rule).
    pub(crate) fn mutate_rows(&mut self, request: MutateRowsRequest) -> ChildId {
        let seed = self.rng.next_u64();
        let machine = MutateRows::new(request, self.now, seed, self.policy());
        self.children.spawn(Child::WriteRows(machine))
    }

    /// The outcome of `id` once it has finished.
    pub(crate) fn take(&mut self, id: ChildId) -> Option<Result<ChildOutput, StoreError>> {
        self.children.take(id)
    }

    /// The finished outcome with the lowest id among `ids`.
    pub(crate) fn take_any(
        &mut self,
        ids: &[ChildId],
    ) -> Option<(ChildId, Result<ChildOutput, StoreError>)> {
        self.children.take_any(ids)
    }

    /// A back-off schedule for a retry loop of this operation.
    pub(crate) fn backoff(&mut self) -> Backoff {
        let seed = self.rng.next_u64();
        Backoff::new(self.policy(), self.now, seed)
    }

    /// Arms the operation's timer; [`Io::sleeping`] is true until `handle_timeout` reaches `at`.
    pub(crate) fn sleep_until(&mut self, at: Timestamp) {
        self.wake_at = Some(at);
    }

    /// Whether the timer armed by [`Io::sleep_until`] has not fired yet.
    pub(crate) fn sleeping(&self) -> bool {
        self.wake_at.is_some()
    }
}

/// Waits for every child of a fan-out; outcomes come back in spawn order.
#[derive(Debug)]
pub(crate) struct WaitAll {
    ids: Vec<ChildId>,
    outcomes: Vec<Option<Result<ChildOutput, StoreError>>>,
}

impl WaitAll {
    /// Waits for `ids`.
    pub(crate) fn new(ids: Vec<ChildId>) -> WaitAll {
        let outcomes = ids.iter().map(|_| None).collect();
        WaitAll { ids, outcomes }
    }

    /// All outcomes, in the order of the ids, once every child has finished.
    pub(crate) fn poll(&mut self, io: &mut Io) -> Option<Vec<Result<ChildOutput, StoreError>>> {
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
}

/// The state an [`Op`] runs on: borrowed from the caller, or owned by the machine (so it can
/// be `'static`, e.g. boxed in a scheduler that runs many machines, and hand the state back
/// with [`Op::take_state`] once it finished).
enum Slot<'a> {
    Borrowed(&'a mut TraceStoreState),
    Owned(Box<TraceStoreState>),
    Empty,
}

impl Slot<'_> {
    fn get(&mut self) -> Option<&mut TraceStoreState> {
        match self {
            Slot::Borrowed(s) => Some(s),
            Slot::Owned(s) => Some(s),
            Slot::Empty => None,
        }
    }
}

/// How a constructor gets its state: `&mut TraceStoreState` borrows it for the machine's life
/// (`Op<'a, T>`); a `TraceStoreState` by value moves it into the machine (`Op<'static, T>`,
/// taken back with [`Op::take_state`]). Both run the same flow and send the same requests.
pub struct StateArg<'a>(Slot<'a>);

impl<'a> From<&'a mut TraceStoreState> for StateArg<'a> {
    fn from(state: &'a mut TraceStoreState) -> Self {
        StateArg(Slot::Borrowed(state))
    }
}

impl From<TraceStoreState> for StateArg<'static> {
    fn from(state: TraceStoreState) -> Self {
        StateArg(Slot::Owned(Box::new(state)))
    }
}

impl StateArg<'_> {
    /// The state, to validate arguments before the machine starts.
    pub(crate) fn get(&mut self) -> Option<&mut TraceStoreState> {
        self.0.get()
    }
}

/// A trace store operation as a [`Machine`] (see the module doc). Emits no events; `Send`
/// whenever its output is.
pub struct Op<'a, T> {
    state: Slot<'a>,
    io: Io,
    flow: Option<Box<dyn Flow<Output = T>>>,
    outcome: Option<Result<T, TraceStoreError>>,
}

impl<T> core::fmt::Debug for Op<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Op")
            .field("running", &self.flow.is_some())
            .field("io", &self.io)
            .finish_non_exhaustive()
    }
}

impl<'a, T> Op<'a, T> {
    /// Starts `flow` on `state` at `now`; it runs until its first wait.
    pub(crate) fn start(
        state: StateArg<'a>,
        now: Timestamp,
        deadline: Timestamp,
        seed: u64,
        flow: impl Flow<Output = T> + 'static,
    ) -> Self {
        let mut op = Op {
            state: state.0,
            io: Io::new(now, deadline, seed),
            flow: Some(Box::new(flow)),
            outcome: None,
        };
        op.step();
        op
    }

    /// An operation that failed before sending anything.
    pub(crate) fn failed(state: StateArg<'a>, error: TraceStoreError) -> Self {
        Op {
            state: state.0,
            io: Io::new(Timestamp(0), Timestamp::MAX, 0),
            flow: None,
            outcome: Some(Err(error)),
        }
    }

    fn clock(&mut self, now: Timestamp) {
        if now > self.io.now {
            self.io.now = now;
        }
    }

    fn expired(&self) -> bool {
        self.io.now >= self.io.deadline
    }

    /// Advances the flow once after an input.
    fn step(&mut self) {
        if self.flow.is_none() {
            return;
        }
        if self.expired() {
            return self.finish(Err(TraceStoreError::Aborted));
        }
        let (Some(flow), Some(state)) = (self.flow.as_mut(), self.state.get()) else {
            return;
        };
        match flow.advance(&mut self.io, state) {
            Ok(None) => {}
            Ok(Some(output)) => self.finish(Ok(output)),
            Err(e) => self.finish(Err(e)),
        }
    }

    fn finish(&mut self, outcome: Result<T, TraceStoreError>) {
        self.release();
        self.io.children.abort_all();
        self.io.wake_at = None;
        self.outcome = Some(outcome);
    }

    /// Ends the flow, giving back what it holds for the state.
    fn release(&mut self) {
        if let (Some(mut flow), Some(state)) = (self.flow.take(), self.state.get()) {
            flow.release(state);
        }
    }

    /// The state the machine owns (built from a `TraceStoreState` by value), once the
    /// operation has ended; `None` while it runs, for a borrowed state, or when taken before.
    pub fn take_state(&mut self) -> Option<TraceStoreState> {
        if self.flow.is_some() {
            return None;
        }
        match core::mem::replace(&mut self.state, Slot::Empty) {
            Slot::Owned(state) => Some(*state),
            other => {
                self.state = other;
                None
            }
        }
    }
}

impl<T> Drop for Op<'_, T> {
    /// A machine dropped while running gives back what its flow holds, as `cancel` would.
    fn drop(&mut self) {
        self.release();
    }
}

impl<T> Machine for Op<'_, T> {
    type Output = T;
    type Event = ();
    type Error = TraceStoreError;

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
            return self.finish(Err(TraceStoreError::Aborted));
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
            self.finish(Err(TraceStoreError::Aborted));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        // Past the deadline nothing new leaves; the next input ends the machine `aborted`.
        if self.flow.is_some() && self.expired() {
            return None;
        }
        self.io.children.poll_request()
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.io.children.poll_abort()
    }

    fn poll_event(&mut self) -> Option<()> {
        None
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.flow.as_ref()?;
        let mut earliest = self.io.deadline;
        if let Some(t) = self.io.wake_at {
            earliest = earliest.min(t);
        }
        if let Some(t) = self.io.children.poll_timeout() {
            earliest = earliest.min(t);
        }
        Some(earliest)
    }

    fn result(&mut self) -> Option<Result<T, TraceStoreError>> {
        self.outcome.take()
    }
}
