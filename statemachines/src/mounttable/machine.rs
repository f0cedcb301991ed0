//! The executor under every mounttable machine: an explicit coroutine stack.
//!
//! The protocols of `spec/mounttable.md` nest deeply (a path walk creates nodes, a creation may
//! collect garbage, a collection deletes subtrees, OCC conflicts retry the whole operation
//! after a back-off). Each sub-protocol is a [`Frame`] (see `frames`): a small state machine
//! whose `step` consumes the outcome of what it last waited for and answers with a [`Step`]:
//! wait for one store request ([`Call`]), call a sub-protocol (push a frame), or return a
//! [`Value`] to the frame below. [`OpMachine::advance`] runs that loop until the top frame
//! waits for the store; the machine is plain data (`Send`), with no futures, wakers or shared
//! cells (`spec/sans-io.md` 2.1).
//!
//! Every request runs in a child machine of [`Children`]: reads in [`ReadRows`] (merge, resume,
//! retries until the request deadline), writes in [`Unary`], sent once and never retried
//! (`spec/mounttable.md` §17). A write that outlives its request deadline fails with
//! `DEADLINE_EXCEEDED` and is aborted. At most one request is outstanding at a time, so the
//! same inputs and seed give the same requests and tags.

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::marker::PhantomData;

use rowkit_codec::model::{Mutation, ReadModifyWriteRule, Row, RowFilter, RowSet, RuleOp};
use rowkit_codec::mounttable::{self as codec, FAMILY_COUNTER, NodeRow, QUAL_COUNTER};

use super::frames::Frame;
use super::{
    FsckSummary, MountEntry, MtCtx, MtError, MtEvent, Nodes, PermsAndVersion, PrimitiveOutput,
};
use crate::children::{Child, ChildId, ChildOutput, Children};
use crate::raw::Unary;
use crate::readrows::ReadRows;
use crate::{
    CheckAndMutateRowRequest, Code, Machine, MutateRowRequest, ReadModifyWriteRowRequest,
    ReadRowsRequest, Request, Response, RetryPolicy, SplitMix64, StoreError, Tag, Timestamp,
};

const SECOND: i64 = 1_000_000;

/// Request deadline class (§17).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Half {
    /// `max(operation deadline, now + 60 s)`.
    First,
    /// The detached second half of a two-row operation: `now + 3600 s`.
    Second,
}

/// A decoded node, shared: frames pass and keep snapshots without copying them, and a node
/// read answered from the hot-row cache hands over the node decoded from that row before
/// ([`Nodes`]).
pub(crate) type Node = Arc<NodeRow>;

/// What a frame returns to the frame below it.
#[derive(Debug)]
pub(crate) enum Value {
    /// Nothing (also the input a frame starts with).
    Unit,
    /// A check-and-mutate's `predicate_matched`.
    Matched(bool),
    /// A counter value.
    Int(i64),
    /// Rows of a scan.
    Rows(Vec<Row>),
    /// A node read (`None` = missing) or created.
    Node(Option<Node>),
    /// `accessNode`: the node found and the unresolved rest.
    Access(Option<Node>, String),
    /// GC: whether it deleted or changed something, and how it ended.
    Gc(bool, Result<(), MtError>),
    /// One fsck pass: inconsistencies counted, and the summary handed back.
    Pass(u64, FsckSummary),
    /// A resolve result.
    Entry(MountEntry),
    /// Permissions and version.
    Perms(PermsAndVersion),
    /// Fsck's result.
    Summary(FsckSummary),
    /// Counter rows.
    Counters(BTreeMap<Vec<u8>, i64>),
    /// A primitive's output.
    Primitive(PrimitiveOutput),
}

/// What a frame is resumed with: the outcome of its last call (`Ok(Unit)` at the start).
pub(crate) type Input = Result<Value, MtError>;

/// The frame protocol was broken (a frame got a value of the wrong kind): a bug, reported as
/// an internal error rather than a panic.
pub(crate) fn mismatch(what: &'static str, got: &Value) -> MtError {
    MtError::Internal {
        what: alloc::format!("mounttable frame expected {what}, got {got:?}"),
    }
}

impl Value {
    pub(crate) fn node(input: Input) -> Result<Option<Node>, MtError> {
        match input? {
            Value::Node(n) => Ok(n),
            v => Err(mismatch("a node", &v)),
        }
    }

    pub(crate) fn access(input: Input) -> Result<(Option<Node>, String), MtError> {
        match input? {
            Value::Access(n, rest) => Ok((n, rest)),
            v => Err(mismatch("an access result", &v)),
        }
    }

    pub(crate) fn rows(input: Input) -> Result<Vec<Row>, MtError> {
        match input? {
            Value::Rows(r) => Ok(r),
            v => Err(mismatch("rows", &v)),
        }
    }

    pub(crate) fn int(input: Input) -> Result<i64, MtError> {
        match input? {
            Value::Int(n) => Ok(n),
            v => Err(mismatch("an integer", &v)),
        }
    }

    pub(crate) fn matched(input: Input) -> Result<bool, MtError> {
        match input? {
            Value::Matched(b) => Ok(b),
            v => Err(mismatch("a predicate outcome", &v)),
        }
    }
}

/// One store request a frame waits for, with how its reply becomes a [`Value`].
#[derive(Debug)]
pub(crate) enum Call {
    /// A scan → [`Value::Rows`].
    Scan {
        table: String,
        rows: RowSet,
        filter: Option<RowFilter>,
        limit: i64,
    },
    /// §9 `getNode`: `ReadRow(nodeTable, key, LatestN(1))` decoded → [`Value::Node`].
    GetNode { name: String },
    /// `CheckAndMutateRow` on the node table → [`Value::Matched`].
    CheckAndMutate {
        key: Vec<u8>,
        predicate: RowFilter,
        true_mutations: Vec<Mutation>,
        false_mutations: Vec<Mutation>,
        half: Half,
    },
    /// §10.1 OCC mutation of a node snapshot → `Unit`, or `ConcurrentAccess` when the version
    /// moved. `delete` mutations do not bump the version.
    Mutate {
        node: Node,
        mutations: Vec<Mutation>,
        delete: bool,
    },
    /// A plain `MutateRow` → `Unit`.
    MutateRow {
        table: String,
        key: Vec<u8>,
        mutations: Vec<Mutation>,
        half: Half,
    },
    /// Counter increment by `delta` → [`Value::Int`] (the new value).
    Increment {
        key: Vec<u8>,
        delta: i64,
        half: Half,
    },
    /// The OCC back-off: wait until `until`, then fail with `Aborted` past the deadline.
    Sleep { until: Timestamp },
}

/// How a reply is interpreted.
#[derive(Clone, Copy, Debug)]
enum Reply {
    Rows,
    Node,
    Matched,
    Occ,
    Unit,
    Counter,
}

/// A frame's answer.
#[allow(clippy::large_enum_variant)] // a transient return value, moved once into the stack
pub(crate) enum Step {
    /// Wait for one store request.
    Await(Call),
    /// Run a sub-protocol; its return value resumes this frame.
    Push(Frame),
    /// Done: resume the frame below with this.
    Return(Input),
}

/// What the top frame waits for.
#[derive(Debug)]
enum Wait {
    /// Nothing (the stack is running, or finished).
    Idle,
    /// A read child.
    Read { child: ChildId, reply: Reply },
    /// A write child that fails at `deadline`.
    Unary {
        child: ChildId,
        reply: Reply,
        deadline: Timestamp,
    },
    /// A back-off until `until`.
    Sleep { until: Timestamp },
}

/// The inputs and outputs every frame shares.
#[derive(Debug)]
pub(crate) struct Env {
    /// Shared inputs.
    pub(crate) ctx: MtCtx,
    /// The latest `now` fed to the machine (never goes backwards).
    pub(crate) now: Timestamp,
    rng: SplitMix64,
    events: VecDeque<MtEvent>,
}

impl Env {
    /// The next 64 random bits of the operation's PRNG.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Queues an event.
    pub(crate) fn emit(&mut self, event: MtEvent) {
        self.events.push_back(event);
    }

    /// Queues a warning for a failure the original only logged.
    pub(crate) fn warn(&mut self, step: &'static str, error: MtError) {
        self.emit(MtEvent::Warning { step, error });
    }

    /// `Aborted` once the operation deadline has passed.
    pub(crate) fn check_deadline(&self) -> Result<(), MtError> {
        if self.now >= self.ctx.deadline {
            Err(MtError::Aborted)
        } else {
            Ok(())
        }
    }

    fn request_deadline(&self, half: Half) -> Timestamp {
        match half {
            Half::First => self
                .ctx
                .deadline
                .max(self.now.saturating_add_micros(60 * SECOND)),
            Half::Second => self.now.saturating_add_micros(3600 * SECOND),
        }
    }
}

/// A type a machine outputs, taken out of the final [`Value`].
pub(crate) trait Output: Sized {
    fn from_value(value: Value) -> Result<Self, MtError>;
}

macro_rules! output {
    ($ty:ty, $pat:pat => $out:expr) => {
        impl Output for $ty {
            fn from_value(value: Value) -> Result<Self, MtError> {
                match value {
                    $pat => Ok($out),
                    v => Err(mismatch(stringify!($ty), &v)),
                }
            }
        }
    };
}

impl Output for () {
    fn from_value(_: Value) -> Result<(), MtError> {
        Ok(())
    }
}
output!(i64, Value::Int(n) => n);
output!(MountEntry, Value::Entry(e) => e);
output!(PermsAndVersion, Value::Perms(p) => p);
output!(FsckSummary, Value::Summary(s) => s);
output!(BTreeMap<Vec<u8>, i64>, Value::Counters(c) => c);
output!(PrimitiveOutput, Value::Primitive(p) => p);

/// A machine running one operation's frame stack (see the module doc).
#[derive(Debug)]
pub(crate) struct OpMachine<T> {
    env: Env,
    children: Children,
    stack: Vec<Frame>,
    wait: Wait,
    outcome: Option<Result<T, MtError>>,
    finished: bool,
    _output: PhantomData<fn() -> T>,
}

impl<T: Output> OpMachine<T> {
    /// Starts `frame` at `now` with randomness from `seed`.
    pub(crate) fn start(ctx: MtCtx, now: Timestamp, seed: u64, frame: Frame) -> OpMachine<T> {
        let mut m = OpMachine {
            env: Env {
                ctx,
                now,
                rng: SplitMix64::new(seed),
                events: VecDeque::new(),
            },
            children: Children::new(),
            stack: vec![frame],
            wait: Wait::Idle,
            outcome: None,
            finished: false,
            _output: PhantomData,
        };
        m.advance(Ok(Value::Unit));
        m
    }

    fn clock(&mut self, now: Timestamp) {
        self.env.now = self.env.now.max(now);
    }

    /// Runs the stack with `input` for the top frame until it waits for the store or the
    /// bottom frame returns.
    fn advance(&mut self, mut input: Input) {
        loop {
            let Some(top) = self.stack.last_mut() else {
                return;
            };
            match top.step(&mut self.env, input) {
                Step::Push(frame) => {
                    self.stack.push(frame);
                    input = Ok(Value::Unit);
                }
                Step::Return(result) => {
                    self.stack.pop();
                    if self.stack.is_empty() {
                        self.finish(result.and_then(T::from_value));
                        return;
                    }
                    input = result;
                }
                Step::Await(call) => match self.issue(call) {
                    Some(ready) => input = ready,
                    None => return,
                },
            }
        }
    }

    fn finish(&mut self, outcome: Result<T, MtError>) {
        self.finished = true;
        self.outcome = Some(outcome);
        self.wait = Wait::Idle;
        self.stack.clear();
        // Nothing is outstanding in a sequential protocol, but never leave a route behind.
        self.children.abort_all();
    }

    /// Starts `call`; returns its outcome at once when it needs no request.
    fn issue(&mut self, call: Call) -> Option<Input> {
        let env = &mut self.env;
        let node_table = env.ctx.tables.node.clone();
        let (request, reply, half) = match call {
            Call::Sleep { until } => {
                if env.now >= until {
                    return Some(env.check_deadline().map(|()| Value::Unit));
                }
                self.wait = Wait::Sleep { until };
                return None;
            }
            Call::Scan {
                table,
                rows,
                filter,
                limit,
            } => {
                let request = ReadRowsRequest {
                    table,
                    rows,
                    filter,
                    rows_limit: limit,
                    ..ReadRowsRequest::default()
                };
                return self.read(request, Reply::Rows);
            }
            Call::GetNode { name } => {
                let request = ReadRowsRequest {
                    table: node_table,
                    rows: RowSet::key(codec::row_key(&name)),
                    filter: Some(RowFilter::CellsPerColumnLimit(1)),
                    ..ReadRowsRequest::default()
                };
                return self.read(request, Reply::Node);
            }
            Call::CheckAndMutate {
                key,
                predicate,
                true_mutations,
                false_mutations,
                half,
            } => (
                cam(node_table, key, predicate, true_mutations, false_mutations),
                Reply::Matched,
                half,
            ),
            Call::Mutate {
                node,
                mut mutations,
                delete,
            } => {
                if !delete {
                    let next = match codec::next_version(&node.version) {
                        Ok(v) => v,
                        Err(e) => return Some(Err(e.into())),
                    };
                    mutations.push(Mutation::SetCell {
                        family: codec::FAMILY_META.into(),
                        qualifier: codec::QUAL_VERSION.to_vec(),
                        timestamp: Timestamp::SERVER_TIME,
                        value: next.into_bytes(),
                    });
                }
                let predicate = RowFilter::Chain(vec![
                    RowFilter::FamilyNameRegex(codec::FAMILY_META.into()),
                    RowFilter::ColumnQualifierRegex(codec::QUAL_VERSION.to_vec()),
                    RowFilter::CellsPerColumnLimit(1),
                    RowFilter::ValueRegex(literal_regex(&node.version)),
                ]);
                (
                    cam(
                        node_table,
                        node.row_key.clone(),
                        predicate,
                        mutations,
                        Vec::new(),
                    ),
                    Reply::Occ,
                    Half::First,
                )
            }
            Call::MutateRow {
                table,
                key,
                mutations,
                half,
            } => (
                Request::MutateRow(MutateRowRequest {
                    table,
                    row_key: key,
                    mutations,
                    ..MutateRowRequest::default()
                }),
                Reply::Unit,
                half,
            ),
            Call::Increment { key, delta, half } => (
                Request::ReadModifyWriteRow(ReadModifyWriteRowRequest {
                    table: env.ctx.tables.counter.clone(),
                    row_key: key,
                    rules: vec![ReadModifyWriteRule {
                        family: FAMILY_COUNTER.into(),
                        qualifier: QUAL_COUNTER.to_vec(),
                        op: RuleOp::IncrementAmount(delta),
                    }],
                    ..ReadModifyWriteRowRequest::default()
                }),
                Reply::Counter,
                half,
            ),
        };
        let deadline = env.request_deadline(half);
        let child = self.children.spawn(Child::Unary(Unary::new(request)));
        self.wait = Wait::Unary {
            child,
            reply,
            deadline,
        };
        None
    }

    /// Starts a read in a [`ReadRows`] child that retries until the request deadline.
    fn read(&mut self, request: ReadRowsRequest, reply: Reply) -> Option<Input> {
        let now = self.env.now;
        let seed = self.env.next_u64();
        let deadline = self.env.request_deadline(Half::First);
        let policy = RetryPolicy {
            operation_timeout: deadline.0.saturating_sub(now.0).max(1),
            ..RetryPolicy::default()
        };
        let child = self
            .children
            .spawn(Child::Read(ReadRows::new(request, now, seed, policy)));
        self.wait = Wait::Read { child, reply };
        None
    }

    /// Resumes the stack if the awaited child has finished.
    fn collect(&mut self) {
        let (child, reply) = match self.wait {
            Wait::Read { child, reply } | Wait::Unary { child, reply, .. } => (child, reply),
            _ => return,
        };
        let Some(outcome) = self.children.take(child) else {
            return;
        };
        self.wait = Wait::Idle;
        let input = interpret(reply, outcome, &self.env.ctx.nodes, self.env.now);
        self.advance(input);
    }
}

fn cam(
    table: String,
    key: Vec<u8>,
    predicate: RowFilter,
    true_mutations: Vec<Mutation>,
    false_mutations: Vec<Mutation>,
) -> Request {
    Request::CheckAndMutateRow(CheckAndMutateRowRequest {
        table,
        row_key: key,
        predicate: Some(predicate),
        true_mutations,
        false_mutations,
        ..CheckAndMutateRowRequest::default()
    })
}

/// `Value(v)`: every byte outside `[0-9A-Za-z]` as `\xHH`, so the RE2 pattern is a literal.
fn literal_regex(v: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len());
    for &b in v {
        if b.is_ascii_alphanumeric() {
            out.push(b);
        } else {
            out.extend_from_slice(alloc::format!("\\x{b:02x}").as_bytes());
        }
    }
    out
}

/// Turns a child's outcome into the value its caller expects. A node row is decoded once per
/// shared row: `nodes` hands back what an earlier read decoded from the same row.
fn interpret(
    reply: Reply,
    outcome: Result<ChildOutput, StoreError>,
    nodes: &Nodes,
    now: Timestamp,
) -> Input {
    let output = outcome?;
    match (reply, output) {
        (Reply::Rows, ChildOutput::Rows(rows)) => Ok(Value::Rows(
            rows.into_iter().map(Arc::unwrap_or_clone).collect(),
        )),
        (Reply::Node, ChildOutput::Rows(rows)) => {
            let Some(row) = rows.into_iter().next() else {
                return Ok(Value::Node(None));
            };
            if row.key.len() < 9 {
                return Ok(Value::Node(None));
            }
            nodes
                .node(&row, now, |row| codec::decode_node(row, now.0))
                .map(|n| Value::Node(Some(n)))
                .map_err(|e| MtError::Internal {
                    what: alloc::format!("row {}: {e}", String::from_utf8_lossy(&row.key)),
                })
        }
        (Reply::Matched, ChildOutput::Unary(Response::CheckAndMutateRow { predicate_matched })) => {
            Ok(Value::Matched(predicate_matched))
        }
        (Reply::Occ, ChildOutput::Unary(Response::CheckAndMutateRow { predicate_matched })) => {
            if predicate_matched {
                Ok(Value::Unit)
            } else {
                Err(MtError::ConcurrentAccess)
            }
        }
        (Reply::Unit, ChildOutput::Unary(Response::MutateRow)) => Ok(Value::Unit),
        (Reply::Counter, ChildOutput::Unary(Response::ReadModifyWriteRow(row))) => {
            codec::decode_counter_row(&row)
                .map(Value::Int)
                .map_err(|e| MtError::Internal {
                    what: e.to_string(),
                })
        }
        (_, other) => Err(MtError::Store(StoreError::new(
            Code::Internal,
            alloc::format!("unexpected response {other:?}"),
        ))),
    }
}

impl<T: Output> Machine for OpMachine<T> {
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
        if self
            .children
            .handle_response(tag, response, self.env.now)
            .is_some()
        {
            self.collect();
        }
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        self.clock(now);
        let now = self.env.now;
        self.children.handle_timeout(now);
        match self.wait {
            Wait::Unary {
                child, deadline, ..
            } if deadline <= now && self.children.is_running(child) => {
                self.children.abort(child);
                self.wait = Wait::Idle;
                self.advance(Err(MtError::Store(StoreError::new(
                    Code::DeadlineExceeded,
                    "request deadline exceeded",
                ))));
            }
            Wait::Sleep { until } if until <= now => {
                self.wait = Wait::Idle;
                let input = self.env.check_deadline().map(|()| Value::Unit);
                self.advance(input);
            }
            _ => self.collect(),
        }
    }

    fn cancel(&mut self, now: Timestamp) {
        self.clock(now);
        if !self.finished {
            self.finish(Err(MtError::Aborted));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.children.poll_request()
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.children.poll_abort()
    }

    fn poll_event(&mut self) -> Option<MtEvent> {
        self.env.events.pop_front()
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        match self.wait {
            Wait::Idle => None,
            Wait::Read { .. } => self.children.poll_timeout(),
            Wait::Unary { deadline, .. } => Some(deadline),
            Wait::Sleep { until } => Some(until),
        }
    }

    fn result(&mut self) -> Option<Result<T, MtError>> {
        self.outcome.take()
    }
}
