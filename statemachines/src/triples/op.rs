//! The one `Machine` implementation every triple-store operation shares: an operation is a
//! [`Flow`] that starts nested children one after another (reads, batch writes, unary calls)
//! through [`Children`] and decides what to do with each child's rows and outcome.

use alloc::vec::Vec;

use rowkit_codec::model::Row;

use super::{OperationConfig, TriplesError};
use crate::children::{Child, ChildId, ChildOutput, Children};
use crate::raw::{MutateRow, MutateRows, Unary};
use crate::readrows::ReadRows;
use crate::{
    Code, Machine, MutateRowRequest, MutateRowsEntryResult, MutateRowsRequest, ReadRowsRequest,
    Request, Response, RetryPolicy, SplitMix64, StoreError, Tag, Timestamp,
};

/// A finished child's outcome, by kind.
#[derive(Debug)]
pub enum Done {
    /// A read: its rows went to [`Flow::row`].
    Read(Result<(), StoreError>),
    /// A batch write: per-entry results.
    Write(Result<Vec<MutateRowsEntryResult>, StoreError>),
    /// A unary call: its reply.
    Unary(Result<Response, StoreError>),
    /// A single-row write.
    WriteRow(Result<(), StoreError>),
}

/// Which kind of child runs, so its error comes back as the right [`Done`].
#[derive(Clone, Copy, Debug)]
enum Kind {
    Read,
    Write,
    Unary,
    WriteRow,
}

impl Kind {
    fn done(self, outcome: Result<ChildOutput, StoreError>) -> Done {
        match (self, outcome) {
            (Kind::Read, r) => Done::Read(r.map(drop)),
            (Kind::Write, Ok(ChildOutput::WroteRows(results))) => Done::Write(Ok(results)),
            (Kind::Write, Ok(_)) => Done::Write(Ok(Vec::new())),
            (Kind::Write, Err(e)) => Done::Write(Err(e)),
            (Kind::Unary, Ok(ChildOutput::Unary(r))) => Done::Unary(Ok(r)),
            (Kind::Unary, Ok(_)) => Done::Unary(Err(StoreError::new(
                Code::Internal,
                "unary child produced no reply",
            ))),
            (Kind::Unary, Err(e)) => Done::Unary(Err(e)),
            (Kind::WriteRow, r) => Done::WriteRow(r.map(drop)),
        }
    }
}

/// What a flow does next.
pub enum Step<O> {
    /// A child is running (or was just started).
    Continue,
    /// The operation is over.
    Finish(Result<O, TriplesError>),
}

/// State shared by the flows: the table, the deadline, the PRNG seeding children, and the
/// one child running at a time.
#[derive(Debug)]
pub struct Core {
    pub(crate) config: OperationConfig,
    rng: SplitMix64,
    children: Children,
    current: Option<(ChildId, Kind)>,
}

impl Core {
    /// The retry policy of a child started at `now`: the time left until the deadline.
    fn policy(&self, now: Timestamp) -> Result<RetryPolicy, TriplesError> {
        let left = self.config.deadline.0.saturating_sub(now.0);
        if left <= 0 {
            return Err(TriplesError::DeadlineExceeded);
        }
        Ok(RetryPolicy {
            operation_timeout: left,
            ..self.config.retry
        })
    }

    /// Starts `child`, abandoning the previous one (its late responses are dropped).
    fn start(&mut self, child: Child, kind: Kind) {
        if let Some((id, _)) = self.current.take() {
            self.children.abort(id);
        }
        self.current = Some((self.children.spawn(child), kind));
    }

    /// Starts a retrying child built from the policy left until the deadline and a seed
    /// drawn from the operation's PRNG.
    fn start_retrying(
        &mut self,
        now: Timestamp,
        kind: Kind,
        build: impl FnOnce(RetryPolicy, u64) -> Child,
    ) -> Result<(), TriplesError> {
        let policy = self.policy(now)?;
        let seed = self.rng.next_u64();
        self.start(build(policy, seed), kind);
        Ok(())
    }

    /// Starts a retrying read.
    pub(crate) fn read(
        &mut self,
        request: ReadRowsRequest,
        now: Timestamp,
    ) -> Result<(), TriplesError> {
        self.start_retrying(now, Kind::Read, |policy, seed| {
            Child::Read(ReadRows::new(request, now, seed, policy))
        })
    }

    /// Starts a retrying batch write.
    pub(crate) fn write(
        &mut self,
        request: MutateRowsRequest,
        now: Timestamp,
    ) -> Result<(), TriplesError> {
        self.start_retrying(now, Kind::Write, |policy, seed| {
            Child::WriteRows(MutateRows::new(request, now, seed, policy))
        })
    }

    /// Starts a retrying single-row write.
    pub(crate) fn write_row(
        &mut self,
        request: MutateRowRequest,
        now: Timestamp,
    ) -> Result<(), TriplesError> {
        self.start_retrying(now, Kind::WriteRow, |policy, seed| {
            Child::WriteRow(MutateRow::new(request, now, seed, policy))
        })
    }

    /// Sends a request once, without retry.
    pub(crate) fn unary(&mut self, request: Request, now: Timestamp) -> Result<(), TriplesError> {
        self.policy(now)?;
        self.start(Child::Unary(Unary::new(request)), Kind::Unary);
        Ok(())
    }

    /// A child's store error as the operation's error.
    pub(crate) fn store_error(&self, e: StoreError, now: Timestamp) -> TriplesError {
        if e.code == Code::DeadlineExceeded || now >= self.config.deadline {
            TriplesError::DeadlineExceeded
        } else {
            TriplesError::Store(e)
        }
    }
}

impl<O> From<Result<(), TriplesError>> for Step<O> {
    /// A child started (`Continue`) or could not be (`Finish` with the error).
    fn from(started: Result<(), TriplesError>) -> Step<O> {
        match started {
            Ok(()) => Step::Continue,
            Err(e) => Step::Finish(Err(e)),
        }
    }
}

/// One operation's logic.
pub trait Flow {
    /// The operation's output.
    type Output;
    /// Starts the first child (or finishes at once).
    fn start(&mut self, core: &mut Core, now: Timestamp) -> Step<Self::Output>;
    /// One row of the running read.
    fn row(&mut self, _core: &mut Core, _row: Row) -> Result<(), TriplesError> {
        Ok(())
    }
    /// The running child finished.
    fn done(&mut self, core: &mut Core, done: Done, now: Timestamp) -> Step<Self::Output>;
}

/// A triple-store operation: a [`Flow`] driven through the `Machine` protocol.
#[derive(Debug)]
pub struct Op<F: Flow> {
    core: Core,
    flow: F,
    outcome: Option<Result<F::Output, TriplesError>>,
    finished: bool,
}

impl<F: Flow> Op<F> {
    pub(crate) fn start(flow: F, config: OperationConfig, now: Timestamp, seed: u64) -> Op<F> {
        let mut op = Op {
            core: Core {
                config,
                rng: SplitMix64::new(seed),
                children: Children::new(),
                current: None,
            },
            flow,
            outcome: None,
            finished: false,
        };
        let step = op.flow.start(&mut op.core, now);
        op.apply(step, now);
        op
    }

    fn finish(&mut self, outcome: Result<F::Output, TriplesError>) {
        self.core.current = None;
        self.core.children.abort_all();
        self.outcome = Some(outcome);
        self.finished = true;
    }

    fn apply(&mut self, step: Step<F::Output>, now: Timestamp) {
        match step {
            Step::Finish(r) => self.finish(r),
            Step::Continue => self.pump(now),
        }
    }

    /// Hands queued rows and a finished child's outcome to the flow.
    fn pump(&mut self, now: Timestamp) {
        while !self.finished {
            let Some((id, kind)) = self.core.current else {
                return;
            };
            while let Some(row) = self.core.children.next_row(id) {
                if let Err(e) = self.flow.row(&mut self.core, row) {
                    return self.finish(Err(e));
                }
            }
            let Some(outcome) = self.core.children.take(id) else {
                return;
            };
            self.core.current = None;
            let done = kind.done(outcome);
            match self.flow.done(&mut self.core, done, now) {
                Step::Finish(r) => return self.finish(r),
                Step::Continue => {}
            }
        }
    }
}

impl<F: Flow> Machine for Op<F> {
    type Output = F::Output;
    type Event = ();
    type Error = TriplesError;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) {
        if self.finished
            || self
                .core
                .children
                .handle_response(tag, response, now)
                .is_none()
        {
            return;
        }
        self.pump(now);
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        if self.finished {
            return;
        }
        self.core.children.handle_timeout(now);
        self.pump(now);
    }

    fn cancel(&mut self, _now: Timestamp) {
        if !self.finished {
            self.finish(Err(TriplesError::Store(StoreError::new(
                Code::Cancelled,
                "cancelled",
            ))));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        if self.finished {
            return None;
        }
        self.core.children.poll_request()
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.core.children.poll_abort()
    }

    fn poll_event(&mut self) -> Option<()> {
        None
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        if self.finished {
            return None;
        }
        self.core.children.poll_timeout()
    }

    fn result(&mut self) -> Option<Result<F::Output, TriplesError>> {
        self.outcome.take()
    }
}
