//! Nested child machines: the one place where a parent operation runs the generic request
//! machines ([`ReadRows`], [`ReadRow`], [`Unary`], [`MutateRow`], [`MutateRows`]) and routes tags.
//!
//! Schema operations never build wire-level retries or resumes themselves: every request they
//! send runs inside a child machine. A child numbers its tags from 0, so [`Children`] gives each
//! request it forwards a fresh *parent* tag, remembers which child and which child tag it stands
//! for, and routes responses back by that tag. Several children may run at once (a tile read
//! fans out to 32 shard scans); their outcomes are collected per [`ChildId`] until the parent
//! takes them. A response for a tag that no longer routes anywhere (the child was aborted or has
//! finished) is stale: it is dropped and counted (`spec/sans-io.md` 2.8).
//!
//! ```
//! use rowkit_codec::model::{Mutation, Timestamp};
//! use rowkit_statemachines::children::{Child, ChildOutput, Children};
//! use rowkit_statemachines::raw::Unary;
//! use rowkit_statemachines::{MutateRowRequest, Request, Response};
//!
//! let write = |row: &[u8]| {
//!     Request::MutateRow(MutateRowRequest {
//!         table: "t".into(),
//!         app_profile_id: String::new(),
//!         row_key: row.to_vec(),
//!         mutations: vec![Mutation::DeleteFromRow],
//!     })
//! };
//! let mut children = Children::new();
//! let a = children.spawn(Child::Unary(Unary::new(write(b"a"))));
//! let b = children.spawn(Child::Unary(Unary::new(write(b"b"))));
//! // Both children's requests are out at once, under distinct parent tags.
//! let (tag_a, _) = children.poll_request().unwrap();
//! let (tag_b, _) = children.poll_request().unwrap();
//! assert_ne!(tag_a, tag_b);
//! children.handle_response(tag_b, Ok(Response::MutateRow), Timestamp(0));
//! assert!(children.take(a).is_none());
//! assert!(matches!(children.take(b), Some(Ok(ChildOutput::Unary(Response::MutateRow)))));
//! ```

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::sync::Arc;
use alloc::vec::Vec;

use rowkit_codec::model::Row;

use crate::raw::{MutateRow, MutateRows, Unary};
use crate::readrows::{ReadRow, ReadRows};
use crate::{
    Machine, MutateRowsEntryResult, Request, Response, StoreError, Tag, TagAllocator, Timestamp,
};

/// A child machine, as a parent starts it.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // a running child is boxed whole (see `Children`)
pub enum Child {
    /// A row read with merge, resume and retries.
    Read(ReadRows),
    /// A point read of one row, with retries.
    ReadRow(ReadRow),
    /// One unary request, sent once.
    Unary(Unary),
    /// One `MutateRow`, retried only when idempotent.
    WriteRow(MutateRow),
    /// A `MutateRows` batch with the entry retry rule.
    WriteRows(MutateRows),
    /// The port of a machine nested in the parent ([`Nested`](crate::operation::Nested)):
    /// requests the parent puts in leave under parent tags, responses wait for the parent.
    Port(Port),
}

/// The child through which a parent relays another machine's requests, aborts and responses
/// (see [`Nested`](crate::operation::Nested)): requests keep the nested machine's own tags
/// inside, and get parent tags outside as every child's do. It never ends by itself.
#[derive(Debug, Default)]
pub struct Port {
    requests: VecDeque<(Tag, Request)>,
    aborts: VecDeque<Tag>,
    responses: VecDeque<(Tag, Result<Response, StoreError>)>,
}

impl Port {
    /// Queues a request of the nested machine (its own tag).
    pub fn send(&mut self, tag: Tag, request: Request) {
        self.requests.push_back((tag, request));
    }

    /// Queues an abort of the nested machine's request `tag`.
    pub fn abort(&mut self, tag: Tag) {
        self.aborts.push_back(tag);
    }

    /// Takes the responses received so far, in arrival order, under the nested machine's tags.
    pub fn take_responses(&mut self) -> Vec<(Tag, Result<Response, StoreError>)> {
        self.responses.drain(..).collect()
    }

    fn handle_response(&mut self, tag: Tag, response: Result<Response, StoreError>, _: Timestamp) {
        self.responses.push_back((tag, response));
    }

    /// The nested machine's timer is the parent's business.
    fn handle_timeout(&mut self, _: Timestamp) {}

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.requests.pop_front()
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.aborts.pop_front()
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        None
    }
}

/// Calls `$body` with `$m` bound to the machine inside any [`Child`] variant.
macro_rules! each {
    ($child:expr, $m:ident => $body:expr) => {
        match $child {
            Child::Read($m) => $body,
            Child::ReadRow($m) => $body,
            Child::Unary($m) => $body,
            Child::WriteRow($m) => $body,
            Child::WriteRows($m) => $body,
            Child::Port($m) => $body,
        }
    };
}

/// What a finished child produced.
#[derive(Clone, Debug, PartialEq)]
pub enum ChildOutput {
    /// A read's rows, in key order (those not already taken with [`Children::next_row`]),
    /// shared: a row a cache handed over arrives without a copy.
    Rows(Vec<Arc<Row>>),
    /// A point read's row (`None`: missing, or no cell passed the filter), shared.
    Row(Option<Arc<Row>>),
    /// A unary reply.
    Unary(Response),
    /// A `MutateRow` applied.
    WroteRow,
    /// A batch's per-entry results.
    WroteRows(Vec<MutateRowsEntryResult>),
}

/// A read's rows out of their `Arc`s, for a parent that works on owned rows: free for the rows
/// nobody else holds (merged or read for this child alone), a copy of those a cache shares.
pub fn owned_rows(rows: Vec<Arc<Row>>) -> Vec<Row> {
    rows.into_iter().map(Arc::unwrap_or_clone).collect()
}

/// Identifies one child of a [`Children`] set; ids increase in spawn order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChildId(pub u64);

#[derive(Debug)]
struct Running {
    machine: Child,
    rows: VecDeque<Arc<Row>>,
}

/// Values by child id, in id order: a `Vec` sorted by id. An operation has few children at a
/// time (most one or two), and a B-tree would allocate a leaf of eleven slots for them, which
/// for ~1 KB machines is a ~12 KB block per operation.
#[derive(Debug)]
struct ById<V>(Vec<(ChildId, V)>);

impl<V> Default for ById<V> {
    fn default() -> Self {
        ById(Vec::new())
    }
}

impl<V> ById<V> {
    fn find(&self, id: ChildId) -> Result<usize, usize> {
        self.0.binary_search_by_key(&id, |&(k, _)| k)
    }

    fn get(&self, id: ChildId) -> Option<&V> {
        self.find(id).ok().map(|i| &self.0[i].1)
    }

    fn get_mut(&mut self, id: ChildId) -> Option<&mut V> {
        self.find(id).ok().map(|i| &mut self.0[i].1)
    }

    fn contains(&self, id: ChildId) -> bool {
        self.find(id).is_ok()
    }

    /// Inserts `value` under `id` (replacing what was there).
    fn insert(&mut self, id: ChildId, value: V) {
        match self.find(id) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (id, value)),
        }
    }

    fn remove(&mut self, id: ChildId) -> Option<V> {
        self.find(id).ok().map(|i| self.0.remove(i).1)
    }

    fn pop_first(&mut self) -> Option<(ChildId, V)> {
        (!self.0.is_empty()).then(|| self.0.remove(0))
    }

    fn iter(&self) -> impl Iterator<Item = (ChildId, &V)> {
        self.0.iter().map(|(id, v)| (*id, v))
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// The children of one parent operation (see the module doc).
#[derive(Debug, Default)]
pub struct Children {
    tags: TagAllocator,
    next_child: u64,
    /// Boxed: the list then holds pointers, and a child's box is the size of its machine.
    running: ById<Box<Running>>,
    finished: ById<Result<ChildOutput, StoreError>>,
    /// Parent tag -> (child, the child's own tag).
    routes: BTreeMap<Tag, (ChildId, Tag)>,
    outgoing: VecDeque<(Tag, Request)>,
    aborts: VecDeque<Tag>,
    stale: u64,
}

impl Children {
    /// An empty set.
    pub fn new() -> Children {
        Children::default()
    }

    /// Starts `child`; its first requests are ready for [`Children::poll_request`] at once.
    pub fn spawn(&mut self, child: Child) -> ChildId {
        let id = ChildId(self.next_child);
        self.next_child += 1;
        self.running.insert(
            id,
            Box::new(Running {
                machine: child,
                rows: VecDeque::new(),
            }),
        );
        self.pump(id);
        id
    }

    /// Feeds a response for a parent tag. Returns the child it went to, or `None` (counted in
    /// [`Children::stale_responses`]) when the tag routes nowhere any more.
    pub fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) -> Option<ChildId> {
        let Some(&(id, inner)) = self.routes.get(&tag) else {
            self.stale += 1;
            return None;
        };
        let ends = !matches!(
            response,
            Ok(Response::ReadRowsPart(_) | Response::Rows(_) | Response::MutateRowsPart(_))
        );
        if ends {
            self.routes.remove(&tag);
        }
        if let Some(child) = self.running.get_mut(id) {
            each!(&mut child.machine, m => m.handle_response(inner, response, now));
        }
        self.pump(id);
        Some(id)
    }

    /// Fires the timers of every child due at `now`.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        let due: Vec<ChildId> = self
            .running
            .iter()
            .filter(|(_, c)| each!(&c.machine, m => m.poll_timeout()).is_some_and(|t| t <= now))
            .map(|(id, _)| id)
            .collect();
        for id in due {
            if let Some(child) = self.running.get_mut(id) {
                each!(&mut child.machine, m => m.handle_timeout(now));
            }
            self.pump(id);
        }
    }

    /// The next request of any child, under its parent tag.
    pub fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.outgoing.pop_front()
    }

    /// The next parent tag whose responses the driver should stop delivering.
    pub fn poll_abort(&mut self) -> Option<Tag> {
        self.aborts.pop_front()
    }

    /// The earliest timer of any running child.
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.running
            .iter()
            .filter_map(|(_, c)| each!(&c.machine, m => m.poll_timeout()))
            .min()
    }

    /// The next row a reading child has produced so far, for parents that stream.
    pub fn next_row(&mut self, id: ChildId) -> Option<Row> {
        if let Some(child) = self.running.get_mut(id) {
            return child.rows.pop_front().map(Arc::unwrap_or_clone);
        }
        match self.finished.get_mut(id) {
            Some(Ok(ChildOutput::Rows(rows))) if !rows.is_empty() => {
                Some(Arc::unwrap_or_clone(rows.remove(0)))
            }
            _ => None,
        }
    }

    /// Whether `id` is still running.
    pub fn is_running(&self, id: ChildId) -> bool {
        self.running.contains(id)
    }

    /// Whether no child runs and no outcome waits to be taken.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty() && self.finished.is_empty()
    }

    /// Takes the outcome of `id` once it has finished.
    pub fn take(&mut self, id: ChildId) -> Option<Result<ChildOutput, StoreError>> {
        self.finished.remove(id)
    }

    /// The outcome of `id` once it has finished, left for [`Children::take`].
    pub fn outcome(&self, id: ChildId) -> Option<&Result<ChildOutput, StoreError>> {
        self.finished.get(id)
    }

    /// Takes the finished outcome with the lowest id among `ids`.
    pub fn take_any(
        &mut self,
        ids: &[ChildId],
    ) -> Option<(ChildId, Result<ChildOutput, StoreError>)> {
        let id = ids
            .iter()
            .copied()
            .filter(|&id| self.finished.contains(id))
            .min()?;
        self.finished.remove(id).map(|outcome| (id, outcome))
    }

    /// Takes the finished outcome with the lowest id.
    pub fn take_next(&mut self) -> Option<(ChildId, Result<ChildOutput, StoreError>)> {
        self.finished.pop_first()
    }

    /// Runs `f` on the port `id` (`None`: no such port running), then sends what it queued.
    pub fn with_port<R>(&mut self, id: ChildId, f: impl FnOnce(&mut Port) -> R) -> Option<R> {
        let out = match &mut self.running.get_mut(id)?.machine {
            Child::Port(port) => f(port),
            _ => return None,
        };
        self.pump(id);
        Some(out)
    }

    /// Stops `id`: its requests in flight are aborted and their late responses dropped. An
    /// outcome it already has is discarded too.
    pub fn abort(&mut self, id: ChildId) {
        self.running.remove(id);
        self.finished.remove(id);
        self.unroute(id, true);
    }

    /// Stops every child (see [`Children::abort`]). Requests not yet polled are never sent, and
    /// only tags already sent are reported through [`Children::poll_abort`].
    pub fn abort_all(&mut self) {
        self.running.clear();
        self.finished.clear();
        let routes = core::mem::take(&mut self.routes);
        for outer in routes.into_keys() {
            forget_or_abort(&mut self.outgoing, &mut self.aborts, outer);
        }
        self.outgoing.clear();
    }

    /// Responses dropped because their tag no longer routed to a running child.
    pub fn stale_responses(&self) -> u64 {
        self.stale
    }

    /// Drains a child's outputs: requests get parent tags, aborts are translated, rows and the
    /// outcome are kept for the parent.
    fn pump(&mut self, id: ChildId) {
        let Some(child) = self.running.get_mut(id) else {
            return;
        };
        while let Some((inner, request)) = each!(&mut child.machine, m => m.poll_request()) {
            let outer = self.tags.next_tag();
            self.routes.insert(outer, (id, inner));
            self.outgoing.push_back((outer, request));
        }
        while let Some(inner) = each!(&mut child.machine, m => m.poll_abort()) {
            let outer = self
                .routes
                .iter()
                .find(|&(_, &(c, t))| c == id && t == inner)
                .map(|(&outer, _)| outer);
            if let Some(outer) = outer {
                self.routes.remove(&outer);
                forget_or_abort(&mut self.outgoing, &mut self.aborts, outer);
            }
        }
        if let Child::Read(m) = &mut child.machine {
            while let Some(row) = m.poll_shared_row() {
                child.rows.push_back(row);
            }
        }
        let outcome = match &mut child.machine {
            Child::Read(m) => m
                .result()
                .map(|r| r.map(|_| ChildOutput::Rows(core::mem::take(&mut child.rows).into()))),
            Child::ReadRow(m) => m.result().map(|r| r.map(ChildOutput::Row)),
            Child::Unary(m) => m.result().map(|r| r.map(ChildOutput::Unary)),
            Child::WriteRow(m) => m.result().map(|r| r.map(|()| ChildOutput::WroteRow)),
            Child::WriteRows(m) => m.result().map(|r| r.map(ChildOutput::WroteRows)),
            Child::Port(_) => None,
        };
        if let Some(outcome) = outcome {
            self.running.remove(id);
            self.finished.insert(id, outcome);
            // A finished child owes nothing; tags it left behind (none for the generic
            // machines) must not route anywhere.
            self.unroute(id, false);
        }
    }

    /// Removes every route of `id`; with `abort`, tags already sent are reported as aborts.
    fn unroute(&mut self, id: ChildId, abort: bool) {
        let tags: Vec<Tag> = self
            .routes
            .iter()
            .filter(|&(_, &(c, _))| c == id)
            .map(|(&outer, _)| outer)
            .collect();
        for outer in tags {
            self.routes.remove(&outer);
            if abort {
                forget_or_abort(&mut self.outgoing, &mut self.aborts, outer);
            }
        }
    }
}

/// A request still queued is simply not sent; one already sent is aborted.
fn forget_or_abort(
    outgoing: &mut VecDeque<(Tag, Request)>,
    aborts: &mut VecDeque<Tag>,
    outer: Tag,
) {
    let queued = outgoing.len();
    outgoing.retain(|(t, _)| *t != outer);
    if outgoing.len() == queued {
        aborts.push_back(outer);
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::String;
    use alloc::vec;

    use rowkit_codec::model::{Mutation, RowSet};

    use super::*;
    use crate::{MutateRowRequest, ReadRowsRequest, RetryPolicy};

    fn write(row: &[u8]) -> Request {
        Request::MutateRow(MutateRowRequest {
            table: "t".into(),
            app_profile_id: String::new(),
            row_key: row.to_vec(),
            mutations: vec![Mutation::DeleteFromRow],
        })
    }

    fn read() -> ReadRows {
        let request = ReadRowsRequest {
            table: "t".into(),
            app_profile_id: String::new(),
            rows: RowSet::all(),
            filter: None,
            rows_limit: 0,
            reversed: false,
        };
        ReadRows::new(request, Timestamp(0), 7, RetryPolicy::default())
    }

    #[test]
    fn aborted_child_drops_late_responses_and_reports_its_tag() {
        let mut children = Children::new();
        let a = children.spawn(Child::Unary(Unary::new(write(b"a"))));
        let (tag, _) = children.poll_request().unwrap();
        children.abort(a);
        assert_eq!(children.poll_abort(), Some(tag));
        assert_eq!(
            children.handle_response(tag, Ok(Response::MutateRow), Timestamp(1)),
            None
        );
        assert_eq!(children.stale_responses(), 1);
        assert!(children.take(a).is_none());
        assert!(children.is_empty());
    }

    #[test]
    fn unsent_requests_of_an_aborted_child_are_never_sent_nor_aborted() {
        let mut children = Children::new();
        let a = children.spawn(Child::Unary(Unary::new(write(b"a"))));
        children.abort(a);
        assert!(children.poll_request().is_none());
        assert!(children.poll_abort().is_none());
    }

    #[test]
    fn abort_all_reports_only_sent_tags() {
        let mut children = Children::new();
        children.spawn(Child::Unary(Unary::new(write(b"a"))));
        let (sent, _) = children.poll_request().unwrap();
        children.spawn(Child::Unary(Unary::new(write(b"b"))));
        children.abort_all();
        assert!(children.poll_request().is_none(), "b is never sent");
        assert_eq!(children.poll_abort(), Some(sent));
        assert_eq!(
            children.poll_abort(),
            None,
            "b was never sent, so never aborted"
        );
        assert!(children.is_empty());
    }

    /// A running child is one allocation of at most 1 KiB, which glibc serves from its
    /// per-thread cache: a larger block is a "large" request, which first consolidates the
    /// fast bins (5-8 % of a point read's time when every operation made one).
    #[test]
    fn a_running_child_is_a_small_allocation() {
        let size = core::mem::size_of::<Running>();
        assert!(size <= 1024, "{size} bytes");
    }

    #[test]
    fn a_read_child_yields_rows_then_its_outcome() {
        let mut children = Children::new();
        let r = children.spawn(Child::Read(read()));
        let (tag, _) = children.poll_request().unwrap();
        let part = crate::ReadRowsResponse {
            chunks: vec![crate::CellChunk {
                row_key: b"k".to_vec(),
                family_name: Some("f".into()),
                qualifier: Some(b"q".to_vec()),
                value: b"v".to_vec(),
                row_status: crate::RowStatus::Commit,
                ..Default::default()
            }],
            last_scanned_row_key: vec![],
        };
        children.handle_response(tag, Ok(Response::ReadRowsPart(part)), Timestamp(1));
        assert!(children.is_running(r));
        assert_eq!(children.next_row(r).map(|row| row.key), Some(b"k".to_vec()));
        children.handle_response(tag, Ok(Response::StreamEnd), Timestamp(2));
        assert_eq!(
            children.take_any(&[r]),
            Some((r, Ok(ChildOutput::Rows(vec![]))))
        );
    }
}
