//! The replay engine behind the single-request object operations.
//!
//! An operation is written as straight-line code over an [`Io`] that answers each request
//! from a log of the replies received so far. When the log runs out, the request is recorded
//! and the run stops with [`Flow::Suspend`]; [`OpMachine`] sends it (through a nested
//! [`ReadRows`] or [`MutateRows`] machine for streams, directly for unary requests), appends
//! the reply with its `now` to the log, restores the state snapshot taken at `new` and runs the
//! operation again. Every run is deterministic (same log, same state, same seed), so the code
//! retraces its steps and goes one request further. Events produced by the replayed part were
//! already emitted and are dropped; only new ones come out. Object operations send at most a
//! handful of requests, so the quadratic replay cost is negligible; listings, which stream,
//! have their own machine.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::model::{Mutation, Row, RowFilter, RowSet, limits};

use super::{DEFAULT_DEADLINE_US, ObjmetaError, ObjmetaEvent, ObjmetaState};
use crate::raw::MutateRows;
use crate::readrows::ReadRows;
use crate::{
    CheckAndMutateRowRequest, Machine, MutateRowRequest, MutateRowsEntry, MutateRowsRequest,
    ReadRowsRequest, Request, Response, RetryPolicy, SplitMix64, StoreError, Tag, Timestamp,
};

/// Why a run of an operation stopped before its result.
#[derive(Debug)]
pub enum Flow {
    /// The next request is recorded in the [`Io`]; run again once it is answered.
    Suspend,
    /// The operation failed.
    Fail(ObjmetaError),
}

impl From<ObjmetaError> for Flow {
    fn from(e: ObjmetaError) -> Flow {
        Flow::Fail(e)
    }
}

/// A reply as the log keeps it.
#[derive(Clone, Debug)]
enum Reply {
    Rows(Result<Vec<Row>, StoreError>),
    Unary(Result<Response, StoreError>),
    Bulk(Result<(), StoreError>),
}

/// A request waiting to be sent.
#[derive(Clone, Debug)]
enum Pending {
    Read(ReadRowsRequest),
    Unary(Request),
    Bulk(MutateRowsRequest),
}

#[derive(Clone, Debug)]
struct Entry {
    reply: Reply,
    now: Timestamp,
}

/// What an operation's code talks to: requests answered from the log, the current time,
/// change events and the seed.
#[derive(Debug)]
pub struct Io<'l> {
    log: &'l [Entry],
    pos: usize,
    now: Timestamp,
    table: String,
    seed: u64,
    events: Vec<ObjmetaEvent>,
    pending: Option<Pending>,
}

impl Io<'_> {
    /// The current time: `now` of the last reply consumed (or of `new`).
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The machine's seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Records a change event.
    pub fn emit(&mut self, event: ObjmetaEvent) {
        self.events.push(event);
    }

    fn take(&mut self, pending: Pending) -> Result<Reply, Flow> {
        if let Some(entry) = self.log.get(self.pos) {
            self.pos += 1;
            self.now = self.now.max(entry.now);
            return Ok(entry.reply.clone());
        }
        self.pending = Some(pending);
        Err(Flow::Suspend)
    }

    fn check_key(key: &[u8]) -> Result<(), Flow> {
        if key.len() > limits::MAX_ROW_KEY_BYTES {
            return Err(ObjmetaError::internal(alloc::format!(
                "row key of {} bytes is over the 4096-byte limit",
                key.len()
            ))
            .into());
        }
        Ok(())
    }

    fn check_mutations(mutations: &[Mutation]) -> Result<(), Flow> {
        for m in mutations {
            if let Mutation::SetCell { value, .. } = m
                && value.len() > limits::MAX_VALUE_BYTES
            {
                return Err(ObjmetaError::internal("cell value over 100 MiB").into());
            }
        }
        Ok(())
    }

    /// `ReadRows(rows, filter, rows_limit)`: all rows, or the store error.
    pub fn read_rows(
        &mut self,
        rows: RowSet,
        filter: Option<RowFilter>,
        rows_limit: i64,
    ) -> Result<Result<Vec<Row>, StoreError>, Flow> {
        let request = ReadRowsRequest {
            table: self.table.clone(),
            rows,
            filter,
            rows_limit,
            ..Default::default()
        };
        match self.take(Pending::Read(request))? {
            Reply::Rows(r) => Ok(r),
            other => Err(mismatch(&other)),
        }
    }

    /// `ReadRow(key, filter)`; an RPC error is an `InternalError`.
    pub fn read_row(&mut self, key: &[u8], filter: RowFilter) -> Result<Option<Row>, Flow> {
        Io::check_key(key)?;
        let rows = self
            .read_rows(RowSet::key(key.to_vec()), Some(filter), 0)?
            .map_err(ObjmetaError::internal)?;
        Ok(rows.into_iter().find(|r| r.key == key))
    }

    /// `MutateRow`; the store error is returned for the caller to map.
    pub fn mutate_row(
        &mut self,
        key: &[u8],
        mutations: Vec<Mutation>,
    ) -> Result<Result<(), StoreError>, Flow> {
        Io::check_key(key)?;
        Io::check_mutations(&mutations)?;
        let request = Request::MutateRow(MutateRowRequest {
            table: self.table.clone(),
            row_key: key.to_vec(),
            mutations,
            ..Default::default()
        });
        match self.take(Pending::Unary(request))? {
            Reply::Unary(Ok(Response::MutateRow)) => Ok(Ok(())),
            Reply::Unary(Err(e)) => Ok(Err(e)),
            other => Err(mismatch(&other)),
        }
    }

    /// `CheckAndMutateRow` → `predicate_matched`, or the store error.
    pub fn check_and_mutate(
        &mut self,
        key: &[u8],
        predicate: RowFilter,
        true_mutations: Vec<Mutation>,
        false_mutations: Vec<Mutation>,
    ) -> Result<Result<bool, StoreError>, Flow> {
        Io::check_key(key)?;
        Io::check_mutations(&true_mutations)?;
        Io::check_mutations(&false_mutations)?;
        let request = Request::CheckAndMutateRow(CheckAndMutateRowRequest {
            table: self.table.clone(),
            row_key: key.to_vec(),
            predicate: Some(predicate),
            true_mutations,
            false_mutations,
            ..Default::default()
        });
        match self.take(Pending::Unary(request))? {
            Reply::Unary(Ok(Response::CheckAndMutateRow { predicate_matched })) => {
                Ok(Ok(predicate_matched))
            }
            Reply::Unary(Err(e)) => Ok(Err(e)),
            other => Err(mismatch(&other)),
        }
    }

    /// `MutateRows` with the bigtable.md §6 retries; any failed entry is an error.
    pub fn mutate_rows(
        &mut self,
        entries: Vec<MutateRowsEntry>,
    ) -> Result<Result<(), StoreError>, Flow> {
        let request = MutateRowsRequest {
            table: self.table.clone(),
            entries,
            ..Default::default()
        };
        match self.take(Pending::Bulk(request))? {
            Reply::Bulk(r) => Ok(r),
            other => Err(mismatch(&other)),
        }
    }
}

fn mismatch(reply: &Reply) -> Flow {
    Flow::Fail(ObjmetaError::internal(alloc::format!(
        "replay diverged: unexpected {reply:?}"
    )))
}

/// One object operation as replayable code.
pub trait Op {
    /// What it produces.
    type Output;
    /// Runs the operation from the start against `io`.
    fn run(&self, io: &mut Io<'_>, state: &mut ObjmetaState) -> Result<Self::Output, Flow>;
    /// The result when the deadline passes or the machine is cancelled.
    fn on_abort(&self) -> Result<Self::Output, ObjmetaError> {
        Err(ObjmetaError::Aborted)
    }
}

/// Where the machine's state lives: borrowed from the host, or owned (repairs need none;
/// a host running several operations at once gives each its own).
#[derive(Debug)]
pub(crate) enum StateSlot<'a> {
    Borrowed(&'a mut ObjmetaState),
    Owned(ObjmetaState),
}

impl StateSlot<'_> {
    pub(crate) fn get(&mut self) -> &mut ObjmetaState {
        match self {
            StateSlot::Borrowed(s) => s,
            StateSlot::Owned(s) => s,
        }
    }
}

/// The request in flight (one at a time, so the size difference does not matter).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Child {
    Idle,
    Unary {
        tag: Tag,
        request: Option<Request>,
    },
    Read {
        slot: u64,
        machine: ReadRows,
        rows: Vec<Row>,
    },
    Bulk {
        slot: u64,
        machine: MutateRows,
    },
}

/// Runs an [`Op`] as a [`Machine`] (see the module doc). Tags are `slot << 32 | child tag`,
/// one slot per request, so replies to abandoned requests are recognised.
#[derive(Debug)]
pub struct OpMachine<'a, O: Op> {
    op: O,
    state: StateSlot<'a>,
    snapshot: ObjmetaState,
    table: String,
    seed: u64,
    rng: SplitMix64,
    log: Vec<Entry>,
    start_now: Timestamp,
    last_now: Timestamp,
    start_at: Option<Timestamp>,
    deadline: Timestamp,
    slot: u64,
    child: Child,
    emitted: usize,
    events: VecDeque<ObjmetaEvent>,
    aborts: VecDeque<Tag>,
    outcome: Option<Result<O::Output, ObjmetaError>>,
    finished: bool,
}

impl<'a, O: Op> OpMachine<'a, O> {
    /// Starts `op` at `now` with `state` borrowed until the machine is dropped.
    pub fn new(
        op: O,
        state: &'a mut ObjmetaState,
        now: Timestamp,
        seed: u64,
        deadline: Option<Timestamp>,
    ) -> Self {
        let table = state.config.table.clone();
        let snapshot = state.clone();
        OpMachine::build(
            op,
            StateSlot::Borrowed(state),
            snapshot,
            table,
            now,
            seed,
            deadline,
            None,
        )
    }

    /// Starts `op` at `now` with a state of its own (a host that runs several operations at
    /// once, e.g. the fault simulator, gives each its own state: its own Arsenal process).
    pub fn with_state(
        op: O,
        state: ObjmetaState,
        now: Timestamp,
        seed: u64,
        deadline: Option<Timestamp>,
    ) -> OpMachine<'static, O> {
        let table = state.config.table.clone();
        OpMachine::build(
            op,
            StateSlot::Owned(state.clone()),
            state,
            table,
            now,
            seed,
            deadline,
            None,
        )
    }

    /// A machine with its own state that starts at `start_at` (the delayed repair).
    pub fn new_delayed(
        op: O,
        table: String,
        now: Timestamp,
        start_at: Timestamp,
        seed: u64,
        deadline: Option<Timestamp>,
    ) -> OpMachine<'static, O> {
        let state = ObjmetaState::default();
        let deadline = deadline.or(Some(start_at.saturating_add_micros(DEFAULT_DEADLINE_US)));
        OpMachine::build(
            op,
            StateSlot::Owned(state.clone()),
            state,
            table,
            now,
            seed,
            deadline,
            Some(start_at),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn build<'b>(
        op: O,
        state: StateSlot<'b>,
        snapshot: ObjmetaState,
        table: String,
        now: Timestamp,
        seed: u64,
        deadline: Option<Timestamp>,
        start_at: Option<Timestamp>,
    ) -> OpMachine<'b, O> {
        let mut m = OpMachine {
            op,
            state,
            snapshot,
            table,
            seed,
            rng: SplitMix64::new(seed ^ 0x006f_626a_6d65_7461),
            log: Vec::new(),
            start_now: now,
            last_now: now,
            start_at,
            deadline: deadline.unwrap_or(now.saturating_add_micros(DEFAULT_DEADLINE_US)),
            slot: 0,
            child: Child::Idle,
            emitted: 0,
            events: VecDeque::new(),
            aborts: VecDeque::new(),
            outcome: None,
            finished: false,
        };
        if m.start_at.is_none_or(|t| now >= t) {
            m.start_at = None;
            m.advance();
        }
        m
    }

    /// The operation's arguments.
    pub fn op(&self) -> &O {
        &self.op
    }

    fn clock(&mut self, now: Timestamp) -> Timestamp {
        self.last_now = self.last_now.max(now);
        self.last_now
    }

    fn finish(&mut self, outcome: Result<O::Output, ObjmetaError>) {
        self.abort_child();
        self.outcome = Some(outcome);
        self.finished = true;
    }

    fn abort_child(&mut self) {
        match core::mem::replace(&mut self.child, Child::Idle) {
            Child::Idle => {}
            Child::Unary { tag, request } => {
                if request.is_none() {
                    self.aborts.push_back(tag);
                }
            }
            Child::Read {
                slot, mut machine, ..
            } => {
                machine.cancel(self.last_now);
                while let Some(t) = machine.poll_abort() {
                    self.aborts.push_back(Tag(slot << 32 | t.0));
                }
            }
            Child::Bulk { slot, mut machine } => {
                machine.cancel(self.last_now);
                while let Some(t) = machine.poll_abort() {
                    self.aborts.push_back(Tag(slot << 32 | t.0));
                }
            }
        }
    }

    /// Replays the operation over the log and sends its next request, or finishes.
    fn advance(&mut self) {
        let state = self.state.get();
        *state = self.snapshot.clone();
        let mut io = Io {
            log: &self.log,
            pos: 0,
            now: self.start_now,
            table: self.table.clone(),
            seed: self.seed,
            events: Vec::new(),
            pending: None,
        };
        let run = self.op.run(&mut io, state);
        let Io {
            events, pending, ..
        } = io;
        for e in events.into_iter().skip(self.emitted) {
            self.emitted += 1;
            self.events.push_back(e);
        }
        match run {
            Ok(out) => self.finish(Ok(out)),
            Err(Flow::Fail(e)) => self.finish(Err(e)),
            Err(Flow::Suspend) => match pending {
                Some(p) => self.send(p),
                None => self.finish(Err(ObjmetaError::internal(
                    "operation suspended without a request",
                ))),
            },
        }
    }

    fn send(&mut self, pending: Pending) {
        self.slot += 1;
        let slot = self.slot;
        let now = self.last_now;
        let policy = RetryPolicy {
            operation_timeout: self.deadline.0.saturating_sub(now.0).max(0),
            ..RetryPolicy::default()
        };
        let seed = self.rng.next_u64();
        self.child = match pending {
            Pending::Unary(request) => Child::Unary {
                tag: Tag(slot << 32),
                request: Some(request),
            },
            Pending::Read(request) => Child::Read {
                slot,
                machine: ReadRows::new(request, now, seed, policy),
                rows: Vec::new(),
            },
            Pending::Bulk(request) => Child::Bulk {
                slot,
                machine: MutateRows::new(request, now, seed, policy),
            },
        };
    }

    fn record(&mut self, reply: Reply, now: Timestamp) {
        self.child = Child::Idle;
        self.log.push(Entry { reply, now });
        self.advance();
    }

    /// Drains a finished nested machine into the log.
    fn settle_child(&mut self, now: Timestamp) {
        let reply = match &mut self.child {
            Child::Read {
                slot,
                machine,
                rows,
            } => {
                while let Some(t) = machine.poll_abort() {
                    self.aborts.push_back(Tag(*slot << 32 | t.0));
                }
                while let Some(row) = machine.poll_event() {
                    rows.push(row);
                }
                match machine.result() {
                    Some(Err(e)) if e.code.is_retryable() => {
                        // No retry fits before the deadline: wait for it and end `Aborted`.
                        self.child = Child::Idle;
                        return;
                    }
                    Some(r) => Reply::Rows(r.map(|_| core::mem::take(rows))),
                    None => return,
                }
            }
            Child::Bulk { slot, machine } => {
                while let Some(t) = machine.poll_abort() {
                    self.aborts.push_back(Tag(*slot << 32 | t.0));
                }
                match machine.result() {
                    Some(Ok(results)) => {
                        Reply::Bulk(match results.into_iter().find_map(|r| r.result.err()) {
                            Some(e) => Err(e),
                            None => Ok(()),
                        })
                    }
                    Some(Err(e)) if e.code.is_retryable() => {
                        self.child = Child::Idle;
                        return;
                    }
                    Some(Err(e)) => Reply::Bulk(Err(e)),
                    None => return,
                }
            }
            _ => return,
        };
        self.record(reply, now);
    }
}

impl<O: Op> Machine for OpMachine<'_, O> {
    type Output = O::Output;
    type Event = ObjmetaEvent;
    type Error = ObjmetaError;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) {
        let now = self.clock(now);
        if self.finished {
            return;
        }
        let inner = Tag(tag.0 & 0xffff_ffff);
        match &mut self.child {
            Child::Unary {
                tag: t,
                request: None,
            } if *t == tag => {
                self.record(Reply::Unary(response), now);
            }
            Child::Read { slot, machine, .. } if *slot == tag.0 >> 32 => {
                machine.handle_response(inner, response, now);
                self.settle_child(now);
            }
            Child::Bulk { slot, machine } if *slot == tag.0 >> 32 => {
                machine.handle_response(inner, response, now);
                self.settle_child(now);
            }
            _ => {}
        }
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        let now = self.clock(now);
        if self.finished {
            return;
        }
        if let Some(at) = self.start_at {
            if now >= at {
                self.start_at = None;
                self.start_now = now;
                self.advance();
            }
            return;
        }
        if now >= self.deadline {
            let outcome = self.op.on_abort();
            self.finish(outcome);
            return;
        }
        match &mut self.child {
            Child::Read { machine, .. } => machine.handle_timeout(now),
            Child::Bulk { machine, .. } => machine.handle_timeout(now),
            _ => return,
        }
        self.settle_child(now);
    }

    fn cancel(&mut self, now: Timestamp) {
        self.clock(now);
        if !self.finished {
            let outcome = self.op.on_abort();
            self.finish(outcome);
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        match &mut self.child {
            Child::Unary { tag, request } => request.take().map(|r| (*tag, r)),
            Child::Read { slot, machine, .. } => machine
                .poll_request()
                .map(|(t, r)| (Tag(*slot << 32 | t.0), r)),
            Child::Bulk { slot, machine } => machine
                .poll_request()
                .map(|(t, r)| (Tag(*slot << 32 | t.0), r)),
            Child::Idle => None,
        }
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.aborts.pop_front()
    }

    fn poll_event(&mut self) -> Option<ObjmetaEvent> {
        self.events.pop_front()
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        if self.finished {
            return None;
        }
        if let Some(at) = self.start_at {
            return Some(at);
        }
        let child = match &self.child {
            Child::Read { machine, .. } => machine.poll_timeout(),
            Child::Bulk { machine, .. } => machine.poll_timeout(),
            _ => None,
        };
        Some(child.map_or(self.deadline, |t| t.min(self.deadline)))
    }

    fn result(&mut self) -> Option<Result<O::Output, ObjmetaError>> {
        self.outcome.take()
    }
}

/// Maps a store error to `InternalError`.
pub(crate) fn internal(e: StoreError) -> Flow {
    Flow::Fail(ObjmetaError::internal(e))
}
