//! Machines for raw Bigtable requests, used by drivers and tools that speak the store
//! vocabulary directly (`rowkit admin`, tests): [`Unary`] and [`Collect`] send once;
//! [`MutateRow`] and [`MutateRows`] apply the client retry rule of `spec/bigtable.md` 6, each a
//! [`Retrying`] machine with its own [`RetryRule`].

use alloc::vec::Vec;

use rowkit_codec::model::Mutation;

pub use crate::attempt::{RetryRule, Retrying, Run};
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
    /// When set, the request is cut there ([`SendOnce::until`]).
    deadline: Option<Timestamp>,
    /// The tag of a request cut at its deadline, for `poll_abort`.
    cut: Option<Tag>,
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
            deadline: None,
            cut: None,
        }
    }

    /// A machine like [`SendOnce::new`] whose request is cut at `deadline`: unanswered by
    /// then, it is aborted and the machine fails with `DEADLINE_EXCEEDED` (a request with a
    /// deadline of its own, never retried).
    pub fn until(request: Request, deadline: Timestamp) -> Self {
        SendOnce {
            deadline: Some(deadline),
            ..SendOnce::new(request)
        }
    }

    fn waiting(&self) -> bool {
        self.outcome.is_none() && !self.done
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

    fn handle_timeout(&mut self, now: Timestamp) {
        if !(self.waiting() && self.deadline.is_some_and(|d| now >= d)) {
            return;
        }
        // A request never polled is simply not sent; one sent is aborted.
        if self.request.take().is_none() {
            self.cut = Some(self.tag);
        }
        self.outcome = Some(Err(StoreError::new(
            Code::DeadlineExceeded,
            "request deadline exceeded",
        )));
    }

    fn cancel(&mut self, _now: Timestamp) {
        if self.waiting() {
            self.request = None;
            self.outcome = Some(Err(StoreError::new(crate::Code::Cancelled, "cancelled")));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.request.take().map(|r| (self.tag, r))
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.cut.take()
    }

    fn poll_event(&mut self) -> Option<()> {
        None
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.deadline.filter(|_| self.waiting())
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
pub type MutateRow = Retrying<MutateRowRule>;

/// The [`RetryRule`] of [`MutateRow`].
#[derive(Debug)]
pub struct MutateRowRule {
    request: MutateRowRequest,
    idempotent: bool,
}

impl MutateRow {
    /// A write of `request` started at `now`; `seed` drives the retry jitter.
    pub fn new(request: MutateRowRequest, now: Timestamp, seed: u64, policy: RetryPolicy) -> Self {
        let idempotent = request.mutations.iter().all(Mutation::is_idempotent);
        let first = Request::MutateRow(request.clone());
        let rule = MutateRowRule {
            request,
            idempotent,
        };
        Retrying::start(rule, first, now, seed, policy)
    }
}

impl RetryRule for MutateRowRule {
    type Output = ();
    type Event = ();

    fn on_part(&mut self, part: Response, _now: Timestamp, run: &mut Run<()>) {
        run.attempt_ended();
        match part {
            Response::MutateRow => run.finish(Ok(())),
            other => run.finish(Err(unexpected("MutateRow", &other))),
        }
    }

    fn on_failure(&mut self, error: StoreError, now: Timestamp, run: &mut Run<()>) {
        if !(self.idempotent && error.code.is_retryable()) {
            return run.finish(Err(error));
        }
        let request = Request::MutateRow(self.request.clone());
        if let Err(e) = run.retry(error, request, now) {
            run.finish(self.gave_up(e));
        }
    }

    fn gave_up(&mut self, last_error: StoreError) -> Result<(), StoreError> {
        Err(last_error)
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
pub type MutateRows = Retrying<MutateRowsRule>;

/// The [`RetryRule`] of [`MutateRows`]: each entry's latest status, and which entries the
/// attempt in flight carries.
#[derive(Debug)]
pub struct MutateRowsRule {
    request: MutateRowsRequest,
    /// Per original entry: its latest status.
    statuses: Vec<Option<Result<(), StoreError>>>,
    /// The attempt in flight: its index `i` is original entry `sent[i]`.
    sent: Vec<usize>,
    /// Per index of the attempt in flight: whether a status arrived.
    answered: Vec<bool>,
}

impl MutateRows {
    /// A batch write of `request` started at `now`; `seed` drives the retry jitter.
    pub fn new(request: MutateRowsRequest, now: Timestamp, seed: u64, policy: RetryPolicy) -> Self {
        let first = Request::MutateRows(request.clone());
        let rule = MutateRowsRule {
            statuses: alloc::vec![None; request.entries.len()],
            sent: (0..request.entries.len()).collect(),
            answered: alloc::vec![false; request.entries.len()],
            request,
        };
        Retrying::start(rule, first, now, seed, policy)
    }
}

impl MutateRowsRule {
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
    fn attempt_over(
        &mut self,
        broken: Option<StoreError>,
        now: Timestamp,
        run: &mut Run<Vec<MutateRowsEntryResult>>,
    ) {
        if self.request.entries.is_empty()
            && let Some(e) = broken
        {
            // No entry can carry a whole-request error: it is the operation's.
            return run.finish(Err(e));
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
            return run.finish(Ok(self.results()));
        }
        let request = MutateRowsRequest {
            entries: retry
                .iter()
                .filter_map(|&i| self.request.entries.get(i).cloned())
                .collect(),
            ..self.request.clone()
        };
        match run.retry(missing, Request::MutateRows(request), now) {
            Ok(()) => {
                self.answered = alloc::vec![false; retry.len()];
                self.sent = retry;
            }
            Err(e) => run.finish(self.gave_up(e)),
        }
    }

    /// Every entry's latest status, in index order.
    fn results(&mut self) -> Vec<MutateRowsEntryResult> {
        core::mem::take(&mut self.statuses)
            .into_iter()
            .enumerate()
            .map(|(index, status)| MutateRowsEntryResult {
                index,
                result: status.unwrap_or_else(|| Err(missing_result())),
            })
            .collect()
    }
}

impl RetryRule for MutateRowsRule {
    type Output = Vec<MutateRowsEntryResult>;
    type Event = ();

    fn on_part(&mut self, part: Response, now: Timestamp, run: &mut Run<Self::Output>) {
        match part {
            Response::MutateRowsPart(part) => {
                if let Err(e) = self.record(part) {
                    run.finish(Err(e));
                }
            }
            Response::StreamEnd => {
                run.attempt_ended();
                self.attempt_over(None, now, run);
            }
            other => run.finish(Err(unexpected("MutateRows", &other))),
        }
    }

    fn on_failure(&mut self, error: StoreError, now: Timestamp, run: &mut Run<Self::Output>) {
        self.attempt_over(Some(error), now, run);
    }

    /// Entries left over when the deadline passes keep their latest status: a result, not an
    /// error.
    fn gave_up(&mut self, _last_error: StoreError) -> Result<Self::Output, StoreError> {
        Ok(self.results())
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
