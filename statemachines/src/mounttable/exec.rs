//! The single-threaded, waker-free executor under every mounttable machine.
//!
//! The protocols of `spec/mounttable.md` are deeply nested (path walks that create nodes, which
//! collect garbage, which delete subtrees...). They are written once as plain `async` code
//! against [`Env`]; awaiting a store request parks the future until the machine is fed the
//! response. The machine polls the future after every input with a no-op waker: no threads, no
//! clock, no I/O, and the same inputs give the same requests. Reads nest the workspace's
//! [`ReadRows`] machine (merger, resume, retries); writes are sent once and never retried
//! (`spec/mounttable.md` §17).

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};

use rowkit_codec::model::Row;

use super::{MtError, MtEvent};
use crate::readrows::ReadRows;
use crate::{
    Code, Machine, ReadRowsRequest, Request, Response, RetryPolicy, SplitMix64, StoreError, Tag,
    TagAllocator, Timestamp,
};

/// A boxed operation future.
pub(crate) type OpFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, MtError>> + 'a>>;

/// One pending wait of the operation.
enum Slot {
    Read {
        machine: Box<ReadRows>,
        rows: Vec<Row>,
        /// inner tag -> outer tag
        tags: BTreeMap<Tag, Tag>,
        done: Option<Result<Vec<Row>, StoreError>>,
    },
    Write {
        tag: Tag,
        deadline: Timestamp,
        done: Option<Result<Response, StoreError>>,
    },
    Sleep {
        until: Timestamp,
    },
}

/// The state shared between the machine and its future.
pub(crate) struct Io {
    now: Timestamp,
    rng: SplitMix64,
    tags: TagAllocator,
    outgoing: VecDeque<(Tag, Request)>,
    aborts: VecDeque<Tag>,
    events: VecDeque<MtEvent>,
    slots: BTreeMap<u64, Slot>,
    routes: BTreeMap<Tag, u64>,
    next_slot: u64,
}

impl Io {
    fn new(now: Timestamp, seed: u64) -> Io {
        Io {
            now,
            rng: SplitMix64::new(seed),
            tags: TagAllocator::default(),
            outgoing: VecDeque::new(),
            aborts: VecDeque::new(),
            events: VecDeque::new(),
            slots: BTreeMap::new(),
            routes: BTreeMap::new(),
            next_slot: 0,
        }
    }

    fn add_slot(&mut self, slot: Slot) -> u64 {
        let id = self.next_slot;
        self.next_slot += 1;
        self.slots.insert(id, slot);
        id
    }

    /// Moves a read slot's outputs (requests, aborts, rows, result) into the shared queues.
    fn pump_read(&mut self, id: u64) {
        let Some(Slot::Read {
            machine,
            rows,
            tags,
            done,
        }) = self.slots.get_mut(&id)
        else {
            return;
        };
        while let Some((inner, request)) = machine.poll_request() {
            let outer = self.tags.next_tag();
            tags.insert(inner, outer);
            self.routes.insert(outer, id);
            self.outgoing.push_back((outer, request));
        }
        while let Some(inner) = machine.poll_abort() {
            if let Some(outer) = tags.get(&inner) {
                self.aborts.push_back(*outer);
                self.routes.remove(outer);
            }
        }
        while let Some(row) = machine.poll_event() {
            rows.push(row);
        }
        if let Some(result) = machine.result() {
            *done = Some(result.map(|_| core::mem::take(rows)));
            for outer in tags.values() {
                self.routes.remove(outer);
            }
        }
    }
}

/// The future side's handle: issue requests, sleep, draw randomness, emit events.
#[derive(Clone)]
pub(crate) struct IoHandle(Rc<RefCell<Io>>);

/// Resolves when slot `id` has an outcome.
struct SlotWait {
    io: Rc<RefCell<Io>>,
    id: u64,
}

enum SlotOutcome {
    Rows(Result<Vec<Row>, StoreError>),
    Reply(Result<Response, StoreError>),
    Woke,
}

impl Future for SlotWait {
    type Output = SlotOutcome;

    fn poll(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<SlotOutcome> {
        let mut io = self.io.borrow_mut();
        let now = io.now;
        let ready = match io.slots.get_mut(&self.id) {
            Some(Slot::Read { done, .. }) => done.take().map(SlotOutcome::Rows),
            Some(Slot::Write { done, .. }) => done.take().map(SlotOutcome::Reply),
            Some(Slot::Sleep { until }) => (now >= *until).then_some(SlotOutcome::Woke),
            None => Some(SlotOutcome::Woke),
        };
        match ready {
            Some(outcome) => {
                io.slots.remove(&self.id);
                Poll::Ready(outcome)
            }
            None => Poll::Pending,
        }
    }
}

impl IoHandle {
    /// The latest `now` fed to the machine (clamped to never go backwards).
    pub(crate) fn now(&self) -> Timestamp {
        self.0.borrow().now
    }

    /// The next 64 random bits of the machine's PRNG.
    pub(crate) fn next_u64(&self) -> u64 {
        self.0.borrow_mut().rng.next_u64()
    }

    /// Queues an event.
    pub(crate) fn emit(&self, event: MtEvent) {
        self.0.borrow_mut().events.push_back(event);
    }

    /// Reads with a nested [`ReadRows`] machine that retries until `deadline`.
    pub(crate) async fn read(
        &self,
        request: ReadRowsRequest,
        deadline: Timestamp,
    ) -> Result<Vec<Row>, StoreError> {
        let id = {
            let mut io = self.0.borrow_mut();
            let now = io.now;
            let seed = io.rng.next_u64();
            let policy = RetryPolicy {
                operation_timeout: deadline.0.saturating_sub(now.0).max(1),
                ..RetryPolicy::default()
            };
            let machine = ReadRows::new(request, now, seed, policy);
            let id = io.add_slot(Slot::Read {
                machine: Box::new(machine),
                rows: Vec::new(),
                tags: BTreeMap::new(),
                done: None,
            });
            io.pump_read(id);
            id
        };
        match (SlotWait {
            io: self.0.clone(),
            id,
        })
        .await
        {
            SlotOutcome::Rows(r) => r,
            _ => Err(StoreError::new(Code::Internal, "read slot lost")),
        }
    }

    /// Sends a unary request once; it fails with `DEADLINE_EXCEEDED` at `deadline`.
    pub(crate) async fn unary(
        &self,
        request: Request,
        deadline: Timestamp,
    ) -> Result<Response, StoreError> {
        let id = {
            let mut io = self.0.borrow_mut();
            let tag = io.tags.next_tag();
            let id = io.add_slot(Slot::Write {
                tag,
                deadline,
                done: None,
            });
            io.routes.insert(tag, id);
            io.outgoing.push_back((tag, request));
            id
        };
        match (SlotWait {
            io: self.0.clone(),
            id,
        })
        .await
        {
            SlotOutcome::Reply(r) => r,
            _ => Err(StoreError::new(Code::Internal, "write slot lost")),
        }
    }

    /// Waits until `until`.
    pub(crate) async fn sleep_until(&self, until: Timestamp) {
        let id = self.0.borrow_mut().add_slot(Slot::Sleep { until });
        let _ = SlotWait {
            io: self.0.clone(),
            id,
        }
        .await;
    }
}

/// A machine running one operation future (see the module doc).
pub(crate) struct OpMachine<T> {
    io: Rc<RefCell<Io>>,
    future: Option<OpFuture<'static, T>>,
    outcome: Option<Result<T, MtError>>,
}

impl<T> core::fmt::Debug for OpMachine<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OpMachine")
            .field("running", &self.future.is_some())
            .finish()
    }
}

impl<T: 'static> OpMachine<T> {
    /// Starts `make(io)` at `now` with randomness from `seed`.
    pub(crate) fn start(
        now: Timestamp,
        seed: u64,
        make: impl FnOnce(IoHandle) -> OpFuture<'static, T>,
    ) -> OpMachine<T> {
        let io = Rc::new(RefCell::new(Io::new(now, seed)));
        let future = make(IoHandle(io.clone()));
        let mut m = OpMachine {
            io,
            future: Some(future),
            outcome: None,
        };
        m.drive();
        m
    }

    fn clock(&self, now: Timestamp) {
        let mut io = self.io.borrow_mut();
        io.now = io.now.max(now);
    }

    fn drive(&mut self) {
        let Some(future) = self.future.as_mut() else {
            return;
        };
        let mut cx = Context::from_waker(Waker::noop());
        if let Poll::Ready(outcome) = future.as_mut().poll(&mut cx) {
            self.future = None;
            self.outcome = Some(outcome);
            let mut io = self.io.borrow_mut();
            // Anything still outstanding is abandoned.
            let tags: Vec<Tag> = io.routes.keys().copied().collect();
            io.aborts.extend(tags);
            io.routes.clear();
            io.slots.clear();
        }
    }
}

impl<T: 'static> Machine for OpMachine<T> {
    type Output = T;
    type Event = MtEvent;
    type Error = MtError;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) {
        self.clock(now);
        let now = self.io.borrow().now;
        {
            let mut io = self.io.borrow_mut();
            let Some(&id) = io.routes.get(&tag) else {
                return;
            };
            let inner = inner_tag_of(tag, &io, id);
            match io.slots.get_mut(&id) {
                Some(Slot::Read { machine, .. }) => {
                    machine.handle_response(inner, response, now);
                    io.pump_read(id);
                }
                Some(Slot::Write { done, .. }) => {
                    *done = Some(response);
                    io.routes.remove(&tag);
                }
                _ => {}
            }
        }
        self.drive();
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        self.clock(now);
        let now = self.io.borrow().now;
        {
            let mut io = self.io.borrow_mut();
            let ids: Vec<u64> = io.slots.keys().copied().collect();
            for id in ids {
                let mut abort = None;
                match io.slots.get_mut(&id) {
                    Some(Slot::Read { machine, done, .. })
                        if done.is_none() && machine.poll_timeout().is_some_and(|t| t <= now) =>
                    {
                        machine.handle_timeout(now);
                    }
                    Some(Slot::Write {
                        tag,
                        deadline,
                        done,
                    }) if done.is_none() && *deadline <= now => {
                        *done = Some(Err(StoreError::new(
                            Code::DeadlineExceeded,
                            "request deadline exceeded",
                        )));
                        abort = Some(*tag);
                    }
                    _ => {}
                }
                if let Some(tag) = abort {
                    io.routes.remove(&tag);
                    io.aborts.push_back(tag);
                }
                io.pump_read(id);
            }
        }
        self.drive();
    }

    fn cancel(&mut self, now: Timestamp) {
        self.clock(now);
        if self.future.take().is_some() {
            let mut io = self.io.borrow_mut();
            let tags: Vec<Tag> = io.routes.keys().copied().collect();
            io.aborts.extend(tags);
            io.routes.clear();
            io.slots.clear();
            self.outcome = Some(Err(MtError::Aborted));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.io.borrow_mut().outgoing.pop_front()
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.io.borrow_mut().aborts.pop_front()
    }

    fn poll_event(&mut self) -> Option<MtEvent> {
        self.io.borrow_mut().events.pop_front()
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.future.as_ref()?;
        let io = self.io.borrow();
        io.slots
            .values()
            .filter_map(|s| match s {
                Slot::Read { machine, done, .. } if done.is_none() => machine.poll_timeout(),
                Slot::Write { deadline, done, .. } if done.is_none() => Some(*deadline),
                Slot::Sleep { until } => Some(*until),
                _ => None,
            })
            .min()
    }

    fn result(&mut self) -> Option<Result<T, MtError>> {
        self.outcome.take()
    }
}

/// The nested machine's tag behind outer `tag` of read slot `id`.
fn inner_tag_of(tag: Tag, io: &Io, id: u64) -> Tag {
    match io.slots.get(&id) {
        Some(Slot::Read { tags, .. }) => tags
            .iter()
            .find(|(_, outer)| **outer == tag)
            .map(|(inner, _)| *inner)
            .unwrap_or(Tag(u64::MAX)),
        _ => Tag(u64::MAX),
    }
}
