//! Machines for raw Bigtable requests, used by drivers and tools that speak the store
//! vocabulary directly (`rowkit admin`, tests): [`Unary`] and [`Collect`] send once;
//! [`MutateRow`] and [`MutateRows`] apply the client retry rule of `spec/bigtable.md` 6.

use alloc::vec::Vec;

use rowkit_codec::model::Mutation;

use crate::attempt::{Attempts, Fired, cancelled, deadline_exceeded};
use crate::{
    Code, Machine, MutateRowRequest, MutateRowsEntryResult, MutateRowsRequest, MutateRowsResponse,
    Request, Response, RetryPolicy, StoreError, Tag, TagAllocator, Timestamp,
};

/// Sends one unary request once and returns its reply. Never retries: `CheckAndMutateRow` and
/// `ReadModifyWriteRow` must not be retried blindly, and callers that may retry decide so
/// themselves.
pub type Unary = SendOnce<Reply>;

/// Sends one streaming request once and collects every part until the stream ends.
pub type Collect = SendOnce<Parts>;

/// A request sent once, never retried, whose answer `A` gathers ([`Unary`], [`Collect`]).
#[derive(Debug)]
pub struct SendOnce<A: Answer> {
    request: Option<Request>,
    tag: Tag,
    answer: A,
    outcome: Option<Result<A::Output, StoreError>>,
    done: bool,
}

/// How a [`SendOnce`] gathers its answer from the parts it receives.
pub trait Answer: Default {
    /// The machine's output.
    type Output;
    /// Takes one part; `Some` once the answer is complete.
    fn part(&mut self, part: Response) -> Option<Self::Output>;
}

/// A unary reply: the first part is the answer.
#[derive(Debug, Default)]
pub struct Reply;

impl Answer for Reply {
    type Output = Response;
    fn part(&mut self, part: Response) -> Option<Response> {
        Some(part)
    }
}

/// A stream's parts, complete at its end.
#[derive(Debug, Default)]
pub struct Parts(Vec<Response>);

impl Answer for Parts {
    type Output = Vec<Response>;
    fn part(&mut self, part: Response) -> Option<Vec<Response>> {
        match part {
            Response::StreamEnd => Some(core::mem::take(&mut self.0)),
            part => {
                self.0.push(part);
                None
            }
        }
    }
}

impl<A: Answer> SendOnce<A> {
    /// A machine that will send `request` (for [`Collect`], a streaming one: ReadRows,
    /// MutateRows, SampleRowKeys).
    pub fn new(request: Request) -> Self {
        SendOnce {
            request: Some(request),
            tag: TagAllocator::default().next_tag(),
            answer: A::default(),
            outcome: None,
            done: false,
        }
    }
}

impl<A: Answer> Machine for SendOnce<A> {
    type Output = A::Output;
    type Event = ();
    type Error = StoreError;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        _now: Timestamp,
    ) {
        if tag != self.tag || self.outcome.is_some() || self.done {
            return;
        }
        match response {
            Ok(part) => self.outcome = self.answer.part(part).map(Ok),
            Err(e) => self.outcome = Some(Err(e)),
        }
    }

    fn handle_timeout(&mut self, _now: Timestamp) {}

    fn cancel(&mut self, _now: Timestamp) {
        if self.outcome.is_none() && !self.done {
            self.request = None;
            self.outcome = Some(Err(StoreError::new(crate::Code::Cancelled, "cancelled")));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.request.take().map(|r| (self.tag, r))
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        None
    }

    fn poll_event(&mut self) -> Option<()> {
        None
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        None
    }

    fn result(&mut self) -> Option<Result<A::Output, StoreError>> {
        let outcome = self.outcome.take()?;
        self.done = true;
        Some(outcome)
    }
}

/// `MutateRow` with the client retry rule: a retryable failure (`UNAVAILABLE`,
/// `DEADLINE_EXCEEDED`, `ABORTED`, or the attempt deadline) is retried with seeded back-off
/// only when every mutation is idempotent (`spec/bigtable.md` 6); otherwise, and for any other
/// error, the operation fails with that error.
#[derive(Debug)]
pub struct MutateRow {
    request: MutateRowRequest,
    idempotent: bool,
    attempts: Attempts,
    outcome: Option<Result<(), StoreError>>,
    finished: bool,
}

impl MutateRow {
    /// A write of `request` started at `now`; `seed` drives the retry jitter.
    pub fn new(request: MutateRowRequest, now: Timestamp, seed: u64, policy: RetryPolicy) -> Self {
        let idempotent = request.mutations.iter().all(Mutation::is_idempotent);
        let attempts = Attempts::start(Request::MutateRow(request.clone()), now, seed, policy);
        MutateRow {
            request,
            idempotent,
            attempts,
            outcome: None,
            finished: false,
        }
    }

    /// Responses ignored because their tag was not the attempt in flight.
    pub fn stale_responses(&self) -> u64 {
        self.attempts.stale()
    }

    /// Retries scheduled so far.
    pub fn retries(&self) -> u32 {
        self.attempts.retries()
    }

    fn finish(&mut self, outcome: Result<(), StoreError>) {
        self.attempts.stop();
        self.outcome = Some(outcome);
        self.finished = true;
    }

    fn failed(&mut self, error: StoreError, now: Timestamp) {
        if !(self.idempotent && error.code.is_retryable()) {
            return self.finish(Err(error));
        }
        let request = Request::MutateRow(self.request.clone());
        if let Err(e) = self.attempts.retry(error, request, now) {
            self.finish(Err(e));
        }
    }
}

impl Machine for MutateRow {
    type Output = ();
    type Event = ();
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
        self.attempts.attempt_ended();
        match response {
            Ok(Response::MutateRow) => self.finish(Ok(())),
            Ok(other) => self.finish(Err(unexpected("MutateRow", &other))),
            Err(e) => self.failed(e, now),
        }
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        let now = self.attempts.clock(now);
        if self.finished {
            return;
        }
        match self.attempts.on_timeout(now) {
            Fired::Nothing | Fired::Sent => {}
            Fired::AttemptExpired => self.failed(deadline_exceeded(), now),
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

    fn poll_event(&mut self) -> Option<()> {
        None
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.attempts.poll_timeout()
    }

    fn result(&mut self) -> Option<Result<(), StoreError>> {
        self.outcome.take()
    }
}

/// `MutateRows` with the client retry rule of `spec/bigtable.md` 6: after an attempt, the
/// entries whose status is retryable — or that got no status before the stream broke — are
/// sent again, if idempotent, in a new request with new indexes (mapped back to the original
/// ones), after a seeded back-off.
///
/// The output has one result per original entry, in index order. Entry failures (including a
/// whole-request error, which every unanswered entry then carries, and entries left over when
/// the deadline passes) are results, not errors; the machine fails only on cancellation, a
/// protocol violation (`INTERNAL`: a wrong response type or an index outside the request), or
/// a stream error for a request with no entries. An entry missing when a stream ends with OK
/// gets `INTERNAL` and is not retried.
#[derive(Debug)]
pub struct MutateRows {
    request: MutateRowsRequest,
    /// Per original entry: its latest status.
    statuses: Vec<Option<Result<(), StoreError>>>,
    /// The attempt in flight: its index `i` is original entry `sent[i]`.
    sent: Vec<usize>,
    /// Per index of the attempt in flight: whether a status arrived.
    answered: Vec<bool>,
    attempts: Attempts,
    outcome: Option<Result<Vec<MutateRowsEntryResult>, StoreError>>,
    finished: bool,
}

impl MutateRows {
    /// A batch write of `request` started at `now`; `seed` drives the retry jitter.
    pub fn new(request: MutateRowsRequest, now: Timestamp, seed: u64, policy: RetryPolicy) -> Self {
        let attempts = Attempts::start(Request::MutateRows(request.clone()), now, seed, policy);
        MutateRows {
            statuses: alloc::vec![None; request.entries.len()],
            sent: (0..request.entries.len()).collect(),
            answered: alloc::vec![false; request.entries.len()],
            request,
            attempts,
            outcome: None,
            finished: false,
        }
    }

    /// Responses ignored because their tag was not the attempt in flight.
    pub fn stale_responses(&self) -> u64 {
        self.attempts.stale()
    }

    /// Retries scheduled so far.
    pub fn retries(&self) -> u32 {
        self.attempts.retries()
    }

    /// Records one streamed part; `Err` on an index outside the attempt's request.
    fn record(&mut self, part: MutateRowsResponse) -> Result<(), StoreError> {
        for entry in part.entries {
            let slot = self.sent.get(entry.index).and_then(|&original| {
                self.statuses
                    .get_mut(original)
                    .zip(self.answered.get_mut(entry.index))
            });
            let Some((status, answered)) = slot else {
                return Err(StoreError::new(
                    Code::Internal,
                    alloc::format!("MutateRows result for unknown entry index {}", entry.index),
                ));
            };
            *status = Some(entry.result);
            *answered = true;
        }
        Ok(())
    }

    /// The attempt ended, cleanly (`broken == None`) or with an error: entries it did not
    /// answer get that error (or `INTERNAL` after a clean end); then retry what may be retried.
    fn attempt_over(&mut self, broken: Option<StoreError>, now: Timestamp) {
        if self.request.entries.is_empty()
            && let Some(e) = broken
        {
            // No entry can carry a whole-request error: it is the operation's.
            return self.finish(Err(e));
        }
        let missing = broken.unwrap_or_else(missing_result);
        let mut retry = Vec::new();
        for (&original, &answered) in self.sent.iter().zip(&self.answered) {
            let Some(status) = self.statuses.get_mut(original) else {
                continue;
            };
            if !answered {
                *status = Some(Err(missing.clone()));
            }
            let idempotent = self
                .request
                .entries
                .get(original)
                .is_some_and(|e| e.mutations.iter().all(Mutation::is_idempotent));
            if idempotent && matches!(status, Some(Err(e)) if e.code.is_retryable()) {
                retry.push(original);
            }
        }
        if retry.is_empty() {
            return self.complete();
        }
        let request = MutateRowsRequest {
            entries: retry
                .iter()
                .filter_map(|&i| self.request.entries.get(i).cloned())
                .collect(),
            ..self.request.clone()
        };
        match self
            .attempts
            .retry(missing, Request::MutateRows(request), now)
        {
            Ok(()) => {
                self.answered = alloc::vec![false; retry.len()];
                self.sent = retry;
            }
            Err(_) => self.complete(),
        }
    }

    /// Finishes with every entry's latest status.
    fn complete(&mut self) {
        let results = core::mem::take(&mut self.statuses)
            .into_iter()
            .enumerate()
            .map(|(index, status)| MutateRowsEntryResult {
                index,
                result: status.unwrap_or_else(|| Err(missing_result())),
            })
            .collect();
        self.finish(Ok(results));
    }

    fn finish(&mut self, outcome: Result<Vec<MutateRowsEntryResult>, StoreError>) {
        self.attempts.stop();
        self.outcome = Some(outcome);
        self.finished = true;
    }
}

impl Machine for MutateRows {
    type Output = Vec<MutateRowsEntryResult>;
    type Event = ();
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
            Ok(Response::MutateRowsPart(part)) => {
                if let Err(e) = self.record(part) {
                    self.finish(Err(e));
                }
            }
            Ok(Response::StreamEnd) => {
                self.attempts.attempt_ended();
                self.attempt_over(None, now);
            }
            Ok(other) => self.finish(Err(unexpected("MutateRows", &other))),
            Err(e) => {
                self.attempts.attempt_ended();
                self.attempt_over(Some(e), now);
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
            Fired::AttemptExpired => self.attempt_over(Some(deadline_exceeded()), now),
            Fired::GaveUp(_) => self.complete(),
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

    fn poll_event(&mut self) -> Option<()> {
        None
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.attempts.poll_timeout()
    }

    fn result(&mut self) -> Option<Result<Vec<MutateRowsEntryResult>, StoreError>> {
        self.outcome.take()
    }
}

/// The status of an entry a stream ended (with OK) without answering.
fn missing_result() -> StoreError {
    StoreError::new(
        Code::Internal,
        "MutateRows stream ended without this entry's result",
    )
}

/// A response of the wrong kind: a protocol violation.
fn unexpected(rpc: &str, response: &Response) -> StoreError {
    StoreError::new(
        Code::Internal,
        alloc::format!("{rpc} got an unexpected response: {response:?}"),
    )
}
