//! One nested child machine at a time, with its tags mapped into the parent's tag space.
//!
//! Every child numbers its tags from 0, so a parent that runs children one after another
//! gives each child an epoch and sends child tag `t` as `epoch << 32 | t`: a late response to
//! an earlier child's request is recognised and dropped, and tags stay unique for the parent's
//! whole life as the `Machine` protocol requires.

use alloc::collections::VecDeque;

use rowkit_codec::model::Row;

use crate::raw::{MutateRow, MutateRows, Unary};
use crate::readrows::ReadRows;
use crate::{Machine, MutateRowsEntryResult, Request, Response, StoreError, Tag, Timestamp};

/// A running child.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one child per operation: boxing buys nothing
pub(crate) enum Child {
    Read(ReadRows),
    Write(MutateRows),
    Unary(Unary),
    WriteRow(MutateRow),
}

/// A finished child's outcome.
#[derive(Debug)]
pub enum Done {
    /// A read: rows delivered.
    Read(Result<u64, StoreError>),
    /// A batch write: per-entry results.
    Write(Result<alloc::vec::Vec<MutateRowsEntryResult>, StoreError>),
    /// A unary call: its reply.
    Unary(Result<Response, StoreError>),
    /// A single-row write.
    WriteRow(Result<(), StoreError>),
}

macro_rules! each {
    ($child:expr, $m:ident => $body:expr) => {
        match $child {
            Child::Read($m) => $body,
            Child::Write($m) => $body,
            Child::Unary($m) => $body,
            Child::WriteRow($m) => $body,
        }
    };
}

/// The slot holding the current child.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    child: Option<Child>,
    epoch: u64,
    /// The parent tag of the child's request in flight (our children send one at a time).
    in_flight: Option<Tag>,
    aborts: VecDeque<Tag>,
}

impl Slot {
    /// Starts `child`, abandoning any previous one.
    pub(crate) fn start(&mut self, child: Child) {
        self.abort();
        self.epoch += 1;
        self.child = Some(child);
    }

    fn child_tag(&self, tag: Tag) -> Option<Tag> {
        (tag.0 >> 32 == self.epoch).then_some(Tag(tag.0 & 0xffff_ffff))
    }

    /// Forwards a response; `false` if it is not the current child's.
    pub(crate) fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) -> bool {
        let Some(inner) = self.child_tag(tag) else {
            return false;
        };
        let Some(child) = self.child.as_mut() else {
            return false;
        };
        let ends = !matches!(
            response,
            Ok(Response::ReadRowsPart(_) | Response::MutateRowsPart(_))
        );
        if ends && self.in_flight == Some(tag) {
            self.in_flight = None;
        }
        each!(child, m => m.handle_response(inner, response, now));
        true
    }

    /// Forwards a timeout.
    pub(crate) fn handle_timeout(&mut self, now: Timestamp) {
        if let Some(child) = self.child.as_mut() {
            each!(child, m => m.handle_timeout(now));
        }
    }

    /// The child's next request, tagged for the parent.
    pub(crate) fn poll_request(&mut self) -> Option<(Tag, Request)> {
        let child = self.child.as_mut()?;
        let (tag, request) = each!(child, m => m.poll_request())?;
        let tag = Tag((self.epoch << 32) | (tag.0 & 0xffff_ffff));
        self.in_flight = Some(tag);
        Some((tag, request))
    }

    /// Aborts: the child's own, then those of abandoned children.
    pub(crate) fn poll_abort(&mut self) -> Option<Tag> {
        if let Some(child) = self.child.as_mut()
            && let Some(tag) = each!(child, m => m.poll_abort())
        {
            return Some(Tag((self.epoch << 32) | (tag.0 & 0xffff_ffff)));
        }
        self.aborts.pop_front()
    }

    /// The child's timeout.
    pub(crate) fn poll_timeout(&self) -> Option<Timestamp> {
        self.child
            .as_ref()
            .and_then(|c| each!(c, m => m.poll_timeout()))
    }

    /// The next row of a reading child.
    pub(crate) fn next_row(&mut self) -> Option<Row> {
        match self.child.as_mut()? {
            Child::Read(m) => m.poll_event(),
            _ => None,
        }
    }

    /// The child's outcome, once it has one (the slot is then empty).
    pub(crate) fn take_done(&mut self) -> Option<Done> {
        let done = match self.child.as_mut()? {
            // Callers drain `next_row` first: queued rows come before the outcome.
            Child::Read(m) => Done::Read(m.result()?),
            Child::Write(m) => Done::Write(m.result()?),
            Child::Unary(m) => Done::Unary(m.result()?),
            Child::WriteRow(m) => Done::WriteRow(m.result()?),
        };
        self.child = None;
        self.in_flight = None;
        Some(done)
    }

    /// Stops the current child: its request in flight is aborted and later responses ignored.
    pub(crate) fn abort(&mut self) {
        if let Some(tag) = self.in_flight.take() {
            self.aborts.push_back(tag);
        }
        self.child = None;
    }

    /// Cancels the child.
    pub(crate) fn cancel(&mut self, now: Timestamp) {
        if let Some(child) = self.child.as_mut() {
            each!(child, m => m.cancel(now));
        }
        self.abort();
    }
}
