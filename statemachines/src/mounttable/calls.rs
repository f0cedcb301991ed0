//! The store calls of the mount-table flows (`spec/mounttable.md` §9–§10, §17): the
//! mount-table requests, each sent through [`Io`] (hence one child machine of `children.rs`)
//! with its §17 request deadline and read back with [`Io`]'s handles, plus what is protocol
//! on top of them: the node read through the shared row cache, the OCC write (§10.1), the
//! counter value and the conflict back-off. A flow has at most one call in flight, so the
//! same inputs and seed give the same requests and tags.
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

use super::{MtError, MtEvent, MtRun, Nodes, SharedNodes};
use crate::children::ChildId;
use crate::operation::Io;
use crate::ready;
use crate::{
    CheckAndMutateRowRequest, MutateRowRequest, ReadModifyWriteRowRequest, ReadRowRequest,
    ReadRowsRequest, Request, Timestamp,
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
    row: Option<Arc<Row>>,
    nodes: &Nodes,
    now: Timestamp,
) -> Result<Option<Node>, MtError> {
    let Some(row) = row else {
        return Ok(None);
    };
    if row.key.len() < 9 {
        return Ok(None);
    }
    nodes
        .node(&row, now, |row| {
            codec::decode_node_sharing(row, now.0, |text| nodes.permissions(text))
        })
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

/// Starts a scan (`ReadRows`, merged, resumed and retried by its child until its request
/// deadline); read it with [`Io::rows`].
pub(super) fn scan(
    io: &mut MtIo,
    ctx: &MtRun,
    table: String,
    rows: RowSet,
    filter: Option<RowFilter>,
    limit: i64,
) -> ChildId {
    let request = ReadRowsRequest {
        table,
        rows,
        filter,
        rows_limit: limit,
        ..ReadRowsRequest::default()
    };
    read(io, ctx, request)
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
        let request = ReadRowRequest {
            table: ctx.tables.node.clone(),
            row_key: codec::row_key(name),
            filter: Some(RowFilter::CellsPerColumnLimit(1)),
            ..ReadRowRequest::default()
        };
        // A point read, retried until its request deadline as a scan is.
        let deadline = Half::First.deadline(io, ctx);
        NodeRead {
            child: io.read_row_until(request, deadline),
            nodes: ctx.nodes.clone(),
        }
    }

    pub(super) fn poll(&mut self, io: &mut MtIo) -> Progress<Option<Node>> {
        let row = ready!(io.shared_row(self.child));
        decode_node(row, &self.nodes, io.now()).map(Some)
    }
}

/// Sends a write once (never retried, §17), cut at its request deadline with
/// `DEADLINE_EXCEEDED`.
fn send(io: &mut MtIo, ctx: &MtRun, request: Request, half: Half) -> ChildId {
    let deadline = half.deadline(io, ctx);
    // The request's own timer is the operation's only one while it runs (as when this
    // module armed it itself): a back-off that ended without its timer firing leaves none.
    io.cancel_sleep();
    io.unary_until(request, deadline)
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

/// Sends a `CheckAndMutateRow` on the node table writing `false_mutations` unless
/// `predicate` matches; read its `predicate_matched` with [`Io::matched`].
pub(super) fn cam(
    io: &mut MtIo,
    ctx: &MtRun,
    key: Vec<u8>,
    predicate: RowFilter,
    false_mutations: Vec<Mutation>,
    half: Half,
) -> ChildId {
    let request = cam_request(ctx, key, predicate, Vec::new(), false_mutations);
    send(io, ctx, request, half)
}

/// §10.1 OCC mutation of a node snapshot: applied only if the node's version is still the
/// snapshot's (else `ConcurrentAccess`). Unless `delete`, the version moves on too.
#[derive(Debug)]
pub(super) struct Occ(Result<ChildId, Option<MtError>>);

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
        Occ(Ok(send(io, ctx, request, Half::First)))
    }

    pub(super) fn poll(&mut self, io: &mut MtIo) -> Progress<()> {
        let id = match &mut self.0 {
            Ok(id) => *id,
            Err(e) => return Err(e.take().unwrap_or_else(ended)),
        };
        if ready!(io.matched(id)) {
            Ok(Some(()))
        } else {
            Err(MtError::ConcurrentAccess)
        }
    }
}

/// Sends a plain `MutateRow`; read it with [`Io::written`].
pub(super) fn put(
    io: &mut MtIo,
    ctx: &MtRun,
    table: String,
    key: Vec<u8>,
    mutations: Vec<Mutation>,
    half: Half,
) -> ChildId {
    let request = Request::MutateRow(MutateRowRequest {
        table,
        row_key: key,
        mutations,
        ..MutateRowRequest::default()
    });
    send(io, ctx, request, half)
}

/// Sends a `MutateRow` of the node row of `name`; read it with [`Io::written`].
pub(super) fn put_node(
    io: &mut MtIo,
    ctx: &MtRun,
    name: &str,
    mutations: Vec<Mutation>,
    half: Half,
) -> ChildId {
    let table = ctx.tables.node.clone();
    put(io, ctx, table, codec::row_key(name), mutations, half)
}

/// Sends a counter increment (`ReadModifyWriteRow` on the counter table); read the new value
/// with [`counter_value`].
pub(super) fn increment(
    io: &mut MtIo,
    ctx: &MtRun,
    key: Vec<u8>,
    delta: i64,
    half: Half,
) -> ChildId {
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
    send(io, ctx, request, half)
}

/// The counter value increment `id` left, once it finished.
pub(super) fn counter_value(io: &mut MtIo, id: ChildId) -> Progress<i64> {
    let row = ready!(io.modified_row(id));
    codec::decode_counter_row(&row)
        .map(Some)
        .map_err(|e| MtError::Internal {
            what: e.to_string(),
        })
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
