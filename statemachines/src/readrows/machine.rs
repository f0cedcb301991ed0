//! The ReadRows machine: the merger plus retry with resume (`spec/sans-io.md` 3.1,
//! `spec/bigtable.md` 15.6).

use alloc::sync::Arc;

use rowkit_codec::model::Row;

use super::{ChunkMerger, next_attempt};
use crate::attempt::{Attempts, Fired, cancelled, deadline_exceeded};
use crate::{
    Code, Machine, ReadRowsRequest, Request, Response, RetryPolicy, StoreError, Tag, Timestamp,
};

/// Reads rows, delivering each committed row as an event and retrying retryable failures
/// (`UNAVAILABLE`, `DEADLINE_EXCEEDED`, `ABORTED`) with a resumed request under a new tag.
///
/// Whole rows ([`Response::Rows`], from a store or cache in the driver's process) pass
/// through without the merger, under the same order and `rows_limit` checks, and count for
/// resume like merged ones. The output is the number of rows delivered. Protocol violations end the read with
/// `INTERNAL` and are never retried; so do non-retryable errors (with their own status). When
/// the operation deadline leaves no room for another attempt, the read fails with the last
/// error.
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
#[derive(Debug)]
pub struct ReadRows {
    original: ReadRowsRequest,
    merger: ChunkMerger,
    attempts: Attempts,
    outcome: Option<Result<u64, StoreError>>,
    finished: bool,
}

impl ReadRows {
    /// A read of `request` started at `now`; `seed` drives the retry jitter.
    pub fn new(request: ReadRowsRequest, now: Timestamp, seed: u64, policy: RetryPolicy) -> Self {
        let merger = ChunkMerger::new(request.reversed, request.rows_limit);
        let attempts = Attempts::start(Request::ReadRows(request.clone()), now, seed, policy);
        ReadRows {
            original: request,
            merger,
            attempts,
            outcome: None,
            finished: false,
        }
    }

    /// The merger: resume key, rows emitted, direction.
    pub fn merger(&self) -> &ChunkMerger {
        &self.merger
    }

    /// The next row, as shared: what [`Machine::poll_event`] hands out, without the copy
    /// `poll_event` makes of a row someone else still holds (a cache's whole row).
    pub fn poll_shared_row(&mut self) -> Option<Arc<Row>> {
        self.merger.pop_shared_row()
    }

    /// Rows committed so far over all attempts.
    pub fn rows_emitted(&self) -> u64 {
        self.merger.rows_emitted()
    }

    /// Responses ignored because their tag was not the attempt in flight.
    pub fn stale_responses(&self) -> u64 {
        self.attempts.stale()
    }

    /// Retries scheduled so far.
    pub fn retries(&self) -> u32 {
        self.attempts.retries()
    }

    fn finish(&mut self, outcome: Result<u64, StoreError>) {
        self.attempts.stop();
        self.outcome = Some(outcome);
        self.finished = true;
    }

    /// After a retryable failure at `now`: resume, finish if nothing is left, or give up.
    fn retry(&mut self, error: StoreError, now: Timestamp) {
        self.merger.start_new_attempt();
        match next_attempt(&self.original, &self.merger) {
            Ok(Some(request)) => {
                if let Err(e) = self.attempts.retry(error, Request::ReadRows(request), now) {
                    self.finish(Err(e));
                }
            }
            Ok(None) => self.finish(Ok(self.merger.rows_emitted())),
            Err(e) => self.finish(Err(e.into())),
        }
    }
}

impl Machine for ReadRows {
    type Output = u64;
    type Event = Row;
    type Error = StoreError;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) {
        let now = self.attempts.clock(now);
        if !self.attempts.accepts(tag) || self.finished {
            return;
        }
        match response {
            Ok(Response::ReadRowsPart(part)) => {
                if let Err(e) = self.merger.push_response(part) {
                    self.finish(Err(e.into()));
                }
            }
            Ok(Response::Rows(rows)) => {
                if let Err(e) = self.merger.push_rows(rows) {
                    self.finish(Err(e.into()));
                }
            }
            Ok(Response::StreamEnd) => {
                self.attempts.attempt_ended();
                match self.merger.end_of_stream() {
                    Ok(()) => self.finish(Ok(self.merger.rows_emitted())),
                    Err(e) => self.finish(Err(e.into())),
                }
            }
            Ok(other) => self.finish(Err(StoreError::new(
                Code::Internal,
                alloc::format!("ReadRows got a {other:?} response"),
            ))),
            Err(e) if e.code.is_retryable() => {
                self.attempts.attempt_ended();
                self.retry(e, now);
            }
            Err(e) => {
                self.attempts.attempt_ended();
                self.finish(Err(e));
            }
        }
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        let now = self.attempts.clock(now);
        if self.finished {
            return;
        }
        match self.attempts.on_timeout(now) {
            Fired::Nothing | Fired::Sent => {}
            Fired::AttemptExpired => self.retry(deadline_exceeded(), now),
            Fired::GaveUp(e) => self.finish(Err(e)),
        }
    }

    fn cancel(&mut self, now: Timestamp) {
        self.attempts.clock(now);
        if !self.finished {
            self.finish(Err(cancelled()));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.attempts.poll_request()
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.attempts.poll_abort()
    }

    fn poll_event(&mut self) -> Option<Row> {
        self.merger.pop_row()
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.attempts.poll_timeout()
    }

    fn result(&mut self) -> Option<Result<u64, StoreError>> {
        self.outcome.take()
    }
}
