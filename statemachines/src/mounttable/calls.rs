//! The store calls of the mount-table flows (`spec/mounttable.md` §9–§10, §17): each is a
//! small typed step that sends one request through [`Io`] (hence one child machine of
//! `children.rs`) and turns its reply into what the flow needs (a node, rows, a predicate
//! outcome, a counter value). A flow has at most one call in flight, so the same inputs and
//! seed give the same requests and tags.
//!
//! Deadlines (§17): the operation deadline is checked at the points the spec names
//! ([`check_deadline`]), never inside a node protocol, so that a detached second half always
//! runs; each request carries its own deadline instead (`max(deadline, now + 60 s)`, 1 h for
//! a second half): a read retries until then, a write is cut there with `DEADLINE_EXCEEDED`.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{
    Mutation, ReadModifyWriteRule, Row, RowFilter, RowSet, RuleOp, literal_regex,
};
use rowkit_codec::mounttable::{self as codec, FAMILY_COUNTER, NodeRow, QUAL_COUNTER};

use super::{MtError, MtEvent, MtRun, Nodes};
use crate::children::{ChildId, ChildOutput};
use crate::operation::{Io, OperationError};
use crate::ready;
use crate::{
    CheckAndMutateRowRequest, Code, MutateRowRequest, ReadModifyWriteRowRequest, ReadRowsRequest,
    Request, Response, StoreError, Timestamp,
};

/// What a mount-table step gives: `Ok(None)` while it waits.
pub(super) type Progress<T> = crate::operation::Progress<T, super::MountTableSchema>;

/// The I/O every mount-table step runs on.
pub(super) type MtIo = Io<MtEvent>;

/// The error of a step advanced after it ended (a bug in its parent, reported rather than a
/// panic).
pub(super) fn ended() -> MtError {
    MtError::Internal {
        what: String::from("mounttable step advanced after it ended"),
    }
}

/// Queues a warning for a failure the original only logged.
pub(super) fn warn(io: &mut MtIo, step: &'static str, error: MtError) {
    io.emit(MtEvent::Warning { step, error });
}

const SECOND: i64 = 1_000_000;

/// `Aborted` once the operation deadline has passed (§17: before each attempt, walk element,
/// glob step, fsck pass and row, and after a back-off).
pub(super) fn check_deadline(io: &MtIo, ctx: &MtRun) -> Result<(), MtError> {
    if io.now() >= ctx.deadline {
        Err(MtError::Aborted)
    } else {
        Ok(())
    }
}

/// Request deadline class (§17).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Half {
    /// `max(operation deadline, now + request floor)`: btmtd never cuts a request in flight
    /// before 60 s ([`MtCtx::request_floor_us`](super::MtCtx::request_floor_us)).
    First,
    /// The detached second half of a two-row operation: `now + 3600 s`.
    Second,
}

impl Half {
    fn deadline(self, io: &MtIo, ctx: &MtRun) -> Timestamp {
        match self {
            Half::First => ctx
                .deadline
                .max(io.now().saturating_add_micros(ctx.request_floor_us)),
            Half::Second => io.now().saturating_add_micros(3600 * SECOND),
        }
    }
}

pub(super) fn delete_column(family: &str, qualifier: &[u8]) -> Mutation {
    Mutation::DeleteFromColumn {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        range: None,
    }
}

/// A decoded node, shared: steps pass and keep snapshots without copying them, and a node
/// read answered from the hot-row cache hands over the node decoded from that row before
/// ([`Nodes`]).
pub(super) type Node = Arc<NodeRow>;

/// §9 `getNode`'s reply: the first row decoded (`None` = missing). The one place a node
/// read becomes a node: once per shared row, `nodes` handing back what an earlier read
/// decoded from the same row.
fn decode_node(
    rows: Vec<Arc<Row>>,
    nodes: &Nodes,
    now: Timestamp,
) -> Result<Option<Node>, MtError> {
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    if row.key.len() < 9 {
        return Ok(None);
    }
    nodes
        .node(&row, now, |row| codec::decode_node(row, now.0))
        .map(Some)
        .map_err(|e| MtError::Internal {
            what: format!("row {}: {e}", String::from_utf8_lossy(&row.key)),
        })
}

/// Starts a read that retries until its request deadline.
fn read(io: &mut MtIo, ctx: &MtRun, request: ReadRowsRequest) -> ChildId {
    let deadline = Half::First.deadline(io, ctx);
    io.read_rows_until(request, deadline)
}

/// A read's rows once it has finished, as shared.
fn rows(io: &mut MtIo, child: ChildId) -> Progress<Vec<Arc<Row>>> {
    match io.take(child) {
        None => Ok(None),
        Some(Ok(ChildOutput::Rows(rows))) => Ok(Some(rows)),
        Some(Ok(other)) => Err(MtError::unexpected(&other)),
        Some(Err(e)) => Err(MtError::store(e)),
    }
}

/// A scan (`ReadRows`, merged, resumed and retried by its child).
#[derive(Debug)]
pub(super) struct Scan(ChildId);

impl Scan {
    pub(super) fn start(
        io: &mut MtIo,
        ctx: &MtRun,
        table: String,
        rows: RowSet,
        filter: Option<RowFilter>,
        limit: i64,
    ) -> Scan {
        let request = ReadRowsRequest {
            table,
            rows,
            filter,
            rows_limit: limit,
            ..ReadRowsRequest::default()
        };
        Scan(read(io, ctx, request))
    }

    pub(super) fn poll(&mut self, io: &mut MtIo) -> Progress<Vec<Row>> {
        io.rows(self.0)
    }
}

/// §9 `getNode(name)`: `ReadRow(nodeTable, key, LatestN(1))`, decoded.
#[derive(Debug)]
pub(super) struct NodeRead {
    child: ChildId,
    /// Where the node of a row decoded before is found ([`MtRun::nodes`]).
    nodes: Nodes,
}

impl NodeRead {
    pub(super) fn start(io: &mut MtIo, ctx: &MtRun, name: &str) -> NodeRead {
        let request = ReadRowsRequest {
            table: ctx.tables.node.clone(),
            rows: RowSet::key(codec::row_key(name)),
            filter: Some(RowFilter::CellsPerColumnLimit(1)),
            ..ReadRowsRequest::default()
        };
        NodeRead {
            child: read(io, ctx, request),
            nodes: ctx.nodes.clone(),
        }
    }

    pub(super) fn poll(&mut self, io: &mut MtIo) -> Progress<Option<Node>> {
        let rows = ready!(rows(io, self.child));
        decode_node(rows, &self.nodes, io.now()).map(Some)
    }
}

/// A write in flight, sent once and never retried (§17), cut at its request deadline (the
/// operation's timer is armed until then) with `DEADLINE_EXCEEDED`.
#[derive(Debug)]
struct Unary {
    child: ChildId,
    deadline: Timestamp,
}

impl Unary {
    fn send(io: &mut MtIo, ctx: &MtRun, request: Request, half: Half) -> Unary {
        let deadline = half.deadline(io, ctx);
        let child = io.unary(request);
        io.sleep_until(deadline);
        Unary { child, deadline }
    }

    /// The reply once the request finished, read by `reply` (one of [`Io`]'s handles); the
    /// request cut with `DEADLINE_EXCEEDED` once its deadline passed.
    fn poll<T>(
        &mut self,
        io: &mut MtIo,
        reply: impl FnOnce(&mut MtIo, ChildId) -> Progress<T>,
    ) -> Progress<T> {
        if io.is_running(self.child) {
            if io.now() < self.deadline {
                return Ok(None);
            }
            io.abort(self.child);
            return Err(MtError::Store(StoreError::new(
                Code::DeadlineExceeded,
                "request deadline exceeded",
            )));
        }
        io.cancel_sleep();
        reply(io, self.child)
    }
}

fn cam_request(
    ctx: &MtRun,
    key: Vec<u8>,
    predicate: RowFilter,
    true_mutations: Vec<Mutation>,
    false_mutations: Vec<Mutation>,
) -> Request {
    Request::CheckAndMutateRow(CheckAndMutateRowRequest {
        table: ctx.tables.node.clone(),
        row_key: key,
        predicate: Some(predicate),
        true_mutations,
        false_mutations,
        ..CheckAndMutateRowRequest::default()
    })
}

/// A `CheckAndMutateRow` on the node table → its `predicate_matched`.
#[derive(Debug)]
pub(super) struct Cam(Unary);

impl Cam {
    pub(super) fn start(
        io: &mut MtIo,
        ctx: &MtRun,
        key: Vec<u8>,
        predicate: RowFilter,
        false_mutations: Vec<Mutation>,
        half: Half,
    ) -> Cam {
        let request = cam_request(ctx, key, predicate, Vec::new(), false_mutations);
        Cam(Unary::send(io, ctx, request, half))
    }

    pub(super) fn poll(&mut self, io: &mut MtIo) -> Progress<bool> {
        self.0.poll(io, |io, id| io.matched(id))
    }
}

/// §10.1 OCC mutation of a node snapshot: applied only if the node's version is still the
/// snapshot's (else `ConcurrentAccess`). Unless `delete`, the version moves on too.
#[derive(Debug)]
pub(super) struct Occ(Result<Unary, Option<MtError>>);

impl Occ {
    pub(super) fn start(
        io: &mut MtIo,
        ctx: &MtRun,
        node: &NodeRow,
        mut mutations: Vec<Mutation>,
        delete: bool,
    ) -> Occ {
        if !delete {
            match codec::next_version(&node.version) {
                Ok(next) => mutations.push(Mutation::set_cell(
                    codec::FAMILY_META,
                    codec::QUAL_VERSION,
                    Timestamp::SERVER_TIME,
                    next.as_bytes(),
                )),
                // Nothing is sent: the step gets the error as if the write had failed.
                Err(e) => return Occ(Err(Some(e.into()))),
            }
        }
        let predicate = RowFilter::Chain(vec![
            RowFilter::FamilyNameRegex(codec::FAMILY_META.into()),
            RowFilter::ColumnQualifierRegex(codec::QUAL_VERSION.to_vec()),
            RowFilter::CellsPerColumnLimit(1),
            RowFilter::ValueRegex(literal_regex(&node.version)),
        ]);
        let request = cam_request(ctx, node.row_key.clone(), predicate, mutations, Vec::new());
        Occ(Ok(Unary::send(io, ctx, request, Half::First)))
    }

    pub(super) fn poll(&mut self, io: &mut MtIo) -> Progress<()> {
        let call = match &mut self.0 {
            Ok(call) => call,
            Err(e) => return Err(e.take().unwrap_or_else(ended)),
        };
        if ready!(call.poll(io, |io, id| io.matched(id))) {
            Ok(Some(()))
        } else {
            Err(MtError::ConcurrentAccess)
        }
    }
}

/// A plain `MutateRow`.
#[derive(Debug)]
pub(super) struct Put(Unary);

impl Put {
    pub(super) fn start(
        io: &mut MtIo,
        ctx: &MtRun,
        table: String,
        key: Vec<u8>,
        mutations: Vec<Mutation>,
        half: Half,
    ) -> Put {
        let request = Request::MutateRow(MutateRowRequest {
            table,
            row_key: key,
            mutations,
            ..MutateRowRequest::default()
        });
        Put(Unary::send(io, ctx, request, half))
    }

    /// A `MutateRow` of the node row of `name`.
    pub(super) fn node(
        io: &mut MtIo,
        ctx: &MtRun,
        name: &str,
        mutations: Vec<Mutation>,
        half: Half,
    ) -> Put {
        Put::start(
            io,
            ctx,
            ctx.tables.node.clone(),
            codec::row_key(name),
            mutations,
            half,
        )
    }

    pub(super) fn poll(&mut self, io: &mut MtIo) -> Progress<()> {
        self.0.poll(io, |io, id| io.written(id))
    }
}

/// A counter increment (`ReadModifyWriteRow` on the counter table) → the new value.
#[derive(Debug)]
pub(super) struct Incr(Unary);

impl Incr {
    pub(super) fn start(io: &mut MtIo, ctx: &MtRun, key: Vec<u8>, delta: i64, half: Half) -> Incr {
        let request = Request::ReadModifyWriteRow(ReadModifyWriteRowRequest {
            table: ctx.tables.counter.clone(),
            row_key: key,
            rules: vec![ReadModifyWriteRule {
                family: FAMILY_COUNTER.into(),
                qualifier: QUAL_COUNTER.to_vec(),
                op: RuleOp::IncrementAmount(delta),
            }],
            ..ReadModifyWriteRowRequest::default()
        });
        Incr(Unary::send(io, ctx, request, half))
    }

    pub(super) fn poll(&mut self, io: &mut MtIo) -> Progress<i64> {
        let row = ready!(self.0.poll(io, |io, id| match io.take(id) {
            None => Ok(None),
            Some(Ok(ChildOutput::Unary(Response::ReadModifyWriteRow(row)))) => Ok(Some(row)),
            Some(Ok(other)) => Err(MtError::unexpected(&other)),
            Some(Err(e)) => Err(MtError::store(e)),
        }));
        codec::decode_counter_row(&row)
            .map(Some)
            .map_err(|e| MtError::Internal {
                what: e.to_string(),
            })
    }
}

/// The wait after an OCC conflict (§17): `(next_u64 % 50)` ms, bounded by the operation
/// deadline; past the deadline once it ends, `Aborted`.
#[derive(Debug)]
pub(super) struct BackOff {
    until: Timestamp,
}

impl BackOff {
    pub(super) fn start(io: &mut MtIo, ctx: &MtRun) -> BackOff {
        let jitter = (io.next_seed() % 50) as i64 * 1000;
        let until = io.now().saturating_add_micros(jitter).min(ctx.deadline);
        if until > io.now() {
            io.sleep_until(until);
        }
        BackOff { until }
    }

    pub(super) fn poll(&mut self, io: &mut MtIo, ctx: &MtRun) -> Progress<()> {
        if io.now() < self.until {
            return Ok(None);
        }
        check_deadline(io, ctx).map(Some)
    }
}
