//! The ReadRows machine: the merger plus retry with resume (`spec/sans-io.md` 3.1,
//! `spec/bigtable.md` 15.6).

use alloc::boxed::Box;
use alloc::sync::Arc;

use rowkit_codec::model::Row;

use super::{ChunkMerger, next_attempt};
use crate::raw::{RetryRule, Retrying, Run};
use crate::{Code, ReadRowsRequest, Request, Response, RetryPolicy, StoreError, Timestamp};

/// Reads rows, delivering each committed row as an event and retrying retryable failures
/// (`UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`) with a resumed request under a new tag.
///
/// Whole rows ([`Response::Rows`], from a store or cache in the driver's process) pass
/// through without the merger, under the same order and `rows_limit` checks, and count for
/// resume like merged ones. The output is the number of rows delivered. Protocol violations
/// end the read with `INTERNAL` and are never retried; so do non-retryable errors (with their
/// own status). When the operation deadline leaves no room for another attempt, the read fails
/// with the last error.
///
/// ```
/// use rowkit_statemachines::readrows::ReadRows;
/// use rowkit_statemachines::{Machine, ReadRowsRequest, Response, RetryPolicy, Timestamp};
///
/// let mut m = ReadRows::new(ReadRowsRequest::default(), Timestamp(0), 7, RetryPolicy::default());
/// let (tag, _request) = m.poll_request().unwrap();
/// m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(1));
/// assert_eq!(m.result(), Some(Ok(0)));
/// ```
pub type ReadRows = Retrying<ReadRowsRule>;

/// The [`RetryRule`] of [`ReadRows`]: the merger, and the original request each resumed
/// attempt is cut from.
#[derive(Debug)]
pub struct ReadRowsRule {
    original: ReadRowsRequest,
    /// Boxed, so that a read machine stays a small block: the children of an operation are
    /// boxed one by one, each the size of the largest machine.
    merger: Box<ChunkMerger>,
}

impl ReadRows {
    /// A read of `request` started at `now`; `seed` drives the retry jitter.
    pub fn new(request: ReadRowsRequest, now: Timestamp, seed: u64, policy: RetryPolicy) -> Self {
        let merger = Box::new(ChunkMerger::new(request.reversed, request.rows_limit));
        let first = Request::ReadRows(request.clone());
        let rule = ReadRowsRule {
            original: request,
            merger,
        };
        Retrying::start(rule, first, now, seed, policy)
    }

    /// The merger: resume key, rows emitted, direction.
    pub fn merger(&self) -> &ChunkMerger {
        &self.rule().merger
    }

    /// The next row, as shared: what [`Machine::poll_event`](crate::Machine::poll_event) hands
    /// out, without the copy `poll_event` makes of a row someone else still holds (a cache's
    /// whole row).
    pub fn poll_shared_row(&mut self) -> Option<Arc<Row>> {
        self.rule_mut().merger.pop_shared_row()
    }

    /// Rows committed so far over all attempts.
    pub fn rows_emitted(&self) -> u64 {
        self.rule().merger.rows_emitted()
    }
}

impl RetryRule for ReadRowsRule {
    type Output = u64;
    type Event = Row;

    fn on_part(&mut self, part: Response, _now: Timestamp, run: &mut Run<u64>) {
        match part {
            Response::ReadRowsPart(part) => {
                if let Err(e) = self.merger.push_response(part) {
                    run.finish(Err(e.into()));
                }
            }
            Response::Rows(rows) => {
                if let Err(e) = self.merger.push_rows(rows) {
                    run.finish(Err(e.into()));
                }
            }
            Response::StreamEnd => {
                run.attempt_ended();
                match self.merger.end_of_stream() {
                    Ok(()) => run.finish(Ok(self.merger.rows_emitted())),
                    Err(e) => run.finish(Err(e.into())),
                }
            }
            other => run.finish(Err(StoreError::new(
                Code::Internal,
                alloc::format!("ReadRows got a {other:?} response"),
            ))),
        }
    }

    /// A retryable failure resumes after the rows already delivered (or finishes when nothing
    /// is left to read); any other error ends the read with its own status.
    fn on_failure(&mut self, error: StoreError, now: Timestamp, run: &mut Run<u64>) {
        if !error.code.is_retryable() {
            return run.finish(Err(error));
        }
        self.merger.start_new_attempt();
        match next_attempt(&self.original, &self.merger) {
            Ok(Some(request)) => {
                if let Err(e) = run.retry(error, Request::ReadRows(request), now) {
                    run.finish(self.gave_up(e));
                }
            }
            Ok(None) => run.finish(Ok(self.merger.rows_emitted())),
            Err(e) => run.finish(Err(e.into())),
        }
    }

    fn gave_up(&mut self, last_error: StoreError) -> Result<u64, StoreError> {
        Err(last_error)
    }

    fn poll_event(&mut self) -> Option<Row> {
        self.merger.pop_row()
    }
}
