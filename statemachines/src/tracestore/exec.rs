//! The sequencing core of the trace store machines.
//!
//! A trace store operation is a long sequence of phases (read the OPS, compare-and-swap it,
//! look digests up, allocate ids, insert, write chunks), several with many requests in flight.
//! Each operation is written as an `async fn` over a [`Ctx`], and [`Op`] turns it into a
//! [`Machine`]: the future is polled with a no-op waker after every input, and it can only wait
//! on things that inputs complete — child machines and back-off timers. No executor, thread
//! or clock is involved; everything stays deterministic and sans-IO.
//!
//! Requests are never built ad hoc for the wire: every request runs in a nested child machine
//! ([`ReadRows`] with its merger and resume, [`MutateRows`] with the entry retry rule, or
//! [`Unary`] for `CheckAndMutateRow` / `ReadModifyWriteRow`, which are never retried). [`Io`]
//! gives each child request a fresh outer tag and routes responses back by tag.

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use rowkit_codec::model::Row;
use rowkit_codec::tracestore::TraceStoreError;

use crate::raw::{MutateRows, Unary};
use crate::readrows::ReadRows;
use crate::{
    Backoff, Machine, MutateRowsEntryResult, MutateRowsRequest, ReadRowsRequest, Request, Response,
    RetryPolicy, SplitMix64, StoreError, Tag, TagAllocator, Timestamp,
};

/// A nested child machine. Children live in a map and are few; boxing them buys nothing.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum ChildMachine {
    Read(ReadRows),
    Unary(Unary),
    Rows(MutateRows),
}

/// What a child produced.
#[derive(Debug)]
pub(crate) enum ChildOutput {
    /// A ReadRows child's rows, in order.
    Rows(Vec<Row>),
    /// A unary reply.
    Unary(Response),
    /// A MutateRows child's per-entry results.
    Mutated(Vec<MutateRowsEntryResult>),
}

#[derive(Debug)]
struct Child {
    machine: ChildMachine,
    rows: Vec<Row>,
    outcome: Option<Result<ChildOutput, StoreError>>,
}

/// Identifies a child of an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct ChildId(u64);

/// The I/O state an operation shares with its future.
#[derive(Debug)]
pub(crate) struct Io {
    tags: TagAllocator,
    now: Timestamp,
    deadline: Timestamp,
    rng: SplitMix64,
    children: BTreeMap<ChildId, Child>,
    next_child: u64,
    /// Outer tag -> (child, the child's own tag).
    routes: BTreeMap<Tag, (ChildId, Tag)>,
    outgoing: VecDeque<(Tag, Request)>,
    aborts: VecDeque<Tag>,
    wake_at: Option<Timestamp>,
}

impl Io {
    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            operation_timeout: self.deadline.0.saturating_sub(self.now.0).max(0),
            ..RetryPolicy::default()
        }
    }

    fn spawn(&mut self, machine: ChildMachine) -> ChildId {
        let id = ChildId(self.next_child);
        self.next_child += 1;
        self.children.insert(
            id,
            Child {
                machine,
                rows: Vec::new(),
                outcome: None,
            },
        );
        self.pump(id);
        id
    }

    /// Drains a child's outputs: requests get outer tags, aborts are translated, rows kept.
    fn pump(&mut self, id: ChildId) {
        let Some(child) = self.children.get_mut(&id) else {
            return;
        };
        loop {
            let next = match &mut child.machine {
                ChildMachine::Read(m) => m.poll_request(),
                ChildMachine::Unary(m) => m.poll_request(),
                ChildMachine::Rows(m) => m.poll_request(),
            };
            let Some((inner, request)) = next else { break };
            let outer = self.tags.next_tag();
            self.routes.insert(outer, (id, inner));
            self.outgoing.push_back((outer, request));
        }
        loop {
            let next = match &mut child.machine {
                ChildMachine::Read(m) => m.poll_abort(),
                ChildMachine::Unary(m) => m.poll_abort(),
                ChildMachine::Rows(m) => m.poll_abort(),
            };
            let Some(inner) = next else { break };
            let outer = self
                .routes
                .iter()
                .find(|(_, r)| r.0 == id && r.1 == inner)
                .map(|(&o, _)| o);
            if let Some(outer) = outer {
                self.routes.remove(&outer);
                self.aborts.push_back(outer);
            }
        }
        if let ChildMachine::Read(m) = &mut child.machine {
            while let Some(row) = m.poll_event() {
                child.rows.push(row);
            }
        }
        if child.outcome.is_none() {
            let outcome = match &mut child.machine {
                ChildMachine::Read(m) => m
                    .result()
                    .map(|r| r.map(|_| ChildOutput::Rows(core::mem::take(&mut child.rows)))),
                ChildMachine::Unary(m) => m.result().map(|r| r.map(ChildOutput::Unary)),
                ChildMachine::Rows(m) => m.result().map(|r| r.map(ChildOutput::Mutated)),
            };
            if let Some(outcome) = outcome {
                child.outcome = Some(outcome);
                // The child is done: its remaining tags (none for well-behaved children) go.
                let stale: Vec<Tag> = self
                    .routes
                    .iter()
                    .filter(|(_, r)| r.0 == id)
                    .map(|(&o, _)| o)
                    .collect();
                for outer in stale {
                    self.routes.remove(&outer);
                }
            }
        }
    }

    fn deliver(&mut self, tag: Tag, response: Result<Response, StoreError>) {
        let Some(&(id, inner)) = self.routes.get(&tag) else {
            return;
        };
        let now = self.now;
        if let Some(child) = self.children.get_mut(&id) {
            match &mut child.machine {
                ChildMachine::Read(m) => m.handle_response(inner, response, now),
                ChildMachine::Unary(m) => m.handle_response(inner, response, now),
                ChildMachine::Rows(m) => m.handle_response(inner, response, now),
            }
        }
        self.pump(id);
    }

    fn child_timeout(child: &Child) -> Option<Timestamp> {
        if child.outcome.is_some() {
            return None;
        }
        match &child.machine {
            ChildMachine::Read(m) => m.poll_timeout(),
            ChildMachine::Unary(m) => m.poll_timeout(),
            ChildMachine::Rows(m) => m.poll_timeout(),
        }
    }

    fn timeouts(&mut self, now: Timestamp) {
        let due: Vec<ChildId> = self
            .children
            .iter()
            .filter(|(_, c)| Io::child_timeout(c).is_some_and(|t| t <= now))
            .map(|(&id, _)| id)
            .collect();
        for id in due {
            if let Some(child) = self.children.get_mut(&id) {
                match &mut child.machine {
                    ChildMachine::Read(m) => m.handle_timeout(now),
                    ChildMachine::Unary(m) => m.handle_timeout(now),
                    ChildMachine::Rows(m) => m.handle_timeout(now),
                }
            }
            self.pump(id);
        }
        if self.wake_at.is_some_and(|t| t <= now) {
            self.wake_at = None;
        }
    }

    /// Abandons every outstanding request.
    fn abort_all(&mut self) {
        let routes = core::mem::take(&mut self.routes);
        // Requests still queued never leave; only sent ones are aborted.
        let unsent: Vec<Tag> = self.outgoing.drain(..).map(|(t, _)| t).collect();
        self.aborts
            .extend(routes.into_keys().filter(|t| !unsent.contains(t)));
        self.children.clear();
        self.wake_at = None;
    }
}

/// An operation's handle on its I/O: spawn children, wait for them, sleep, read the clock.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    io: Rc<RefCell<Io>>,
}

impl Ctx {
    /// The machine's current time (never decreasing).
    pub(crate) fn now(&self) -> Timestamp {
        self.io.borrow().now
    }

    /// A seed for a child's jitter, drawn from the machine's seed.
    fn child_seed(&self) -> u64 {
        self.io.borrow_mut().rng.next_u64()
    }

    /// Starts a read (nested [`ReadRows`] with resume and back-off).
    pub(crate) fn read_rows(&self, request: ReadRowsRequest) -> ChildId {
        let seed = self.child_seed();
        let mut io = self.io.borrow_mut();
        let machine = ReadRows::new(request, io.now, seed, io.policy());
        io.spawn(ChildMachine::Read(machine))
    }

    /// Sends a unary request once (never retried).
    pub(crate) fn unary(&self, request: Request) -> ChildId {
        self.io
            .borrow_mut()
            .spawn(ChildMachine::Unary(Unary::new(request)))
    }

    /// Starts a batch write (nested [`MutateRows`] with the entry retry rule).
    pub(crate) fn mutate_rows(&self, request: MutateRowsRequest) -> ChildId {
        let seed = self.child_seed();
        let mut io = self.io.borrow_mut();
        let machine = MutateRows::new(request, io.now, seed, io.policy());
        io.spawn(ChildMachine::Rows(machine))
    }

    /// Waits for one child.
    pub(crate) fn wait(&self, id: ChildId) -> WaitOne {
        WaitOne {
            io: self.io.clone(),
            id,
        }
    }

    /// Waits for the first of `ids` to finish (lowest id first when several have).
    pub(crate) fn wait_any(&self, ids: Vec<ChildId>) -> WaitAny {
        WaitAny {
            io: self.io.clone(),
            ids,
        }
    }

    /// Waits for every child of `ids`; outcomes in the order of `ids`.
    pub(crate) async fn wait_all(&self, ids: &[ChildId]) -> Vec<Result<ChildOutput, StoreError>> {
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            out.push(self.wait(id).await);
        }
        out
    }

    /// Sleeps until `at` (a timer the driver fires through `handle_timeout`).
    pub(crate) fn sleep_until(&self, at: Timestamp) -> Sleep {
        self.io.borrow_mut().wake_at = Some(at);
        Sleep {
            io: self.io.clone(),
        }
    }

    /// A back-off schedule for a retry loop of this operation.
    pub(crate) fn backoff(&self) -> Backoff {
        let seed = self.child_seed();
        let io = self.io.borrow();
        Backoff::new(io.policy(), io.now, seed)
    }
}

/// Future of [`Ctx::wait`].
pub(crate) struct WaitOne {
    io: Rc<RefCell<Io>>,
    id: ChildId,
}

impl Future for WaitOne {
    type Output = Result<ChildOutput, StoreError>;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut io = self.io.borrow_mut();
        let done = io
            .children
            .get(&self.id)
            .is_some_and(|c| c.outcome.is_some());
        if !done {
            return Poll::Pending;
        }
        match io.children.remove(&self.id).and_then(|c| c.outcome) {
            Some(outcome) => Poll::Ready(outcome),
            None => Poll::Pending,
        }
    }
}

/// Future of [`Ctx::wait_any`].
pub(crate) struct WaitAny {
    io: Rc<RefCell<Io>>,
    ids: Vec<ChildId>,
}

impl Future for WaitAny {
    type Output = (ChildId, Result<ChildOutput, StoreError>);

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut io = self.io.borrow_mut();
        let first = self
            .ids
            .iter()
            .copied()
            .filter(|id| io.children.get(id).is_some_and(|c| c.outcome.is_some()))
            .min();
        match first.and_then(|id| {
            io.children
                .remove(&id)
                .and_then(|c| c.outcome)
                .map(|o| (id, o))
        }) {
            Some(done) => Poll::Ready(done),
            None => Poll::Pending,
        }
    }
}

/// Future of [`Ctx::sleep_until`].
pub(crate) struct Sleep {
    io: Rc<RefCell<Io>>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        if self.io.borrow().wake_at.is_none() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

type OpFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, TraceStoreError>> + 'a>>;

/// A trace store operation as a [`Machine`] (see the module doc). Emits no events.
pub struct Op<'a, T> {
    io: Rc<RefCell<Io>>,
    future: Option<OpFuture<'a, T>>,
    outcome: Option<Result<T, TraceStoreError>>,
}

impl<T> core::fmt::Debug for Op<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Op")
            .field("running", &self.future.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a, T> Op<'a, T> {
    /// Builds the operation from `body`, started at `now` with deadline `deadline`.
    pub(crate) fn start<F, Fut>(now: Timestamp, deadline: Timestamp, seed: u64, body: F) -> Self
    where
        F: FnOnce(Ctx) -> Fut,
        Fut: Future<Output = Result<T, TraceStoreError>> + 'a,
    {
        let io = Rc::new(RefCell::new(Io {
            tags: TagAllocator::default(),
            now,
            deadline,
            rng: SplitMix64::new(seed),
            children: BTreeMap::new(),
            next_child: 0,
            routes: BTreeMap::new(),
            outgoing: VecDeque::new(),
            aborts: VecDeque::new(),
            wake_at: None,
        }));
        let future: OpFuture<'a, T> = Box::pin(body(Ctx { io: io.clone() }));
        let mut op = Op {
            io,
            future: Some(future),
            outcome: None,
        };
        op.step();
        op
    }

    /// An operation that failed before sending anything.
    pub(crate) fn failed(error: TraceStoreError) -> Self {
        Op::start(Timestamp(0), Timestamp::MAX, 0, move |_| async move {
            Err(error)
        })
    }

    fn clock(&mut self, now: Timestamp) {
        let mut io = self.io.borrow_mut();
        if now > io.now {
            io.now = now;
        }
    }

    /// Polls the body once; it runs until it waits on something an input must complete.
    fn step(&mut self) {
        let Some(future) = self.future.as_mut() else {
            return;
        };
        let past_deadline = {
            let io = self.io.borrow();
            io.now >= io.deadline
        };
        if past_deadline {
            return self.finish(Err(TraceStoreError::Aborted));
        }
        let mut cx = Context::from_waker(Waker::noop());
        if let Poll::Ready(outcome) = future.as_mut().poll(&mut cx) {
            self.finish(outcome);
        }
    }

    fn finish(&mut self, outcome: Result<T, TraceStoreError>) {
        // Dropping the body runs its guards (pool restoration) before outstanding tags go.
        self.future = None;
        self.io.borrow_mut().abort_all();
        self.outcome = Some(outcome);
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
        if self.future.is_none() {
            return;
        }
        self.io.borrow_mut().deliver(tag, response);
        self.step();
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        self.clock(now);
        if self.future.is_none() {
            return;
        }
        let expired = {
            let io = self.io.borrow();
            io.now >= io.deadline
        };
        if expired {
            return self.finish(Err(TraceStoreError::Aborted));
        }
        let now = self.io.borrow().now;
        self.io.borrow_mut().timeouts(now);
        self.step();
    }

    fn cancel(&mut self, now: Timestamp) {
        self.clock(now);
        if self.future.is_some() {
            self.finish(Err(TraceStoreError::Aborted));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        let mut io = self.io.borrow_mut();
        if io.now >= io.deadline && self.future.is_some() {
            return None;
        }
        io.outgoing.pop_front()
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.io.borrow_mut().aborts.pop_front()
    }

    fn poll_event(&mut self) -> Option<()> {
        None
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.future.as_ref()?;
        let io = self.io.borrow();
        let mut earliest = io.deadline;
        if let Some(t) = io.wake_at {
            earliest = earliest.min(t);
        }
        for child in io.children.values() {
            if let Some(t) = Io::child_timeout(child) {
                earliest = earliest.min(t);
            }
        }
        Some(earliest)
    }

    fn result(&mut self) -> Option<Result<T, TraceStoreError>> {
        self.outcome.take()
    }
}
