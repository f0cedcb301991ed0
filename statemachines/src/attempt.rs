//! The retry skeleton shared by the retrying machines ([`crate::readrows::ReadRows`],
//! [`crate::raw::MutateRows`], [`crate::raw::MutateRow`]): one attempt in flight at a time under
//! a fresh tag, a back-off timer between attempts, attempt and operation deadlines, a clamped
//! clock and stale-tag filtering (`spec/sans-io.md` 2 and 3.1). [`Retrying`] is the one
//! [`Machine`] they all are; what an answer means, what to retry and with which request stays
//! with each machine's [`RetryRule`].

use alloc::collections::VecDeque;

use crate::{
    Backoff, Code, Machine, Request, Response, RetryPolicy, StoreError, Tag, TagAllocator,
    Timestamp,
};

/// A machine that sends one request and retries it by a [`RetryRule`]: the shell of
/// [`ReadRows`](crate::readrows::ReadRows), [`MutateRow`](crate::raw::MutateRow) and
/// [`MutateRows`](crate::raw::MutateRows). It clamps the clock, drops stale responses, runs the
/// attempt and back-off timers, answers `cancel` and keeps the outcome; the rule decides what
/// each answer means and what to send again.
#[derive(Debug)]
pub struct Retrying<R: RetryRule> {
    rule: R,
    run: Run<R::Output>,
}

/// The part of a [`Retrying`] machine that differs per request: what a part of an answer
/// means, whether a failed attempt is sent again and as which request, and what giving up
/// yields. It acts on the machine through [`Run`].
pub trait RetryRule {
    /// The machine's output.
    type Output;
    /// The machine's events.
    type Event;
    /// A part of the answer to the attempt in flight, at `now` (already clamped; stale parts
    /// never arrive here). The rule ends the attempt when the part is its last.
    fn on_part(&mut self, part: Response, now: Timestamp, run: &mut Run<Self::Output>);
    /// The attempt in flight failed with `error` (an error answer, or DEADLINE_EXCEEDED when it
    /// ran out of time) and is over: retry, or finish.
    fn on_failure(&mut self, error: StoreError, now: Timestamp, run: &mut Run<Self::Output>);
    /// The outcome when the operation deadline leaves no room for another attempt;
    /// `last_error` is the error of the last attempt.
    fn gave_up(&mut self, last_error: StoreError) -> Result<Self::Output, StoreError>;
    /// The next event (none by default).
    fn poll_event(&mut self) -> Option<Self::Event> {
        None
    }
}

/// Where a [`Retrying`] machine stands: its attempts and, once finished, its outcome.
#[derive(Debug)]
pub struct Run<T> {
    attempts: Attempts,
    outcome: Option<Result<T, StoreError>>,
    finished: bool,
}

impl<T> Run<T> {
    /// The attempt in flight is complete: nothing more will arrive under its tag.
    pub(crate) fn attempt_ended(&mut self) {
        self.attempts.attempt_ended();
    }

    /// After a retryable `error` at `now` (the attempt already ended), waits the next back-off
    /// and then sends `request`; gives `error` back when the operation deadline leaves no room
    /// for another attempt.
    pub(crate) fn retry(
        &mut self,
        error: StoreError,
        request: Request,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.attempts.retry(error, request, now)
    }

    /// Finishes with `outcome`: the attempt in flight (if any) is aborted, nothing more is
    /// sent.
    pub(crate) fn finish(&mut self, outcome: Result<T, StoreError>) {
        self.attempts.stop();
        self.outcome = Some(outcome);
        self.finished = true;
    }
}

impl<R: RetryRule> Retrying<R> {
    /// Starts `rule`'s operation at `now` by sending `first`; `seed` drives the retry jitter.
    pub(crate) fn start(
        rule: R,
        first: Request,
        now: Timestamp,
        seed: u64,
        policy: RetryPolicy,
    ) -> Self {
        Retrying {
            rule,
            run: Run {
                attempts: Attempts::start(first, now, seed, policy),
                outcome: None,
                finished: false,
            },
        }
    }

    /// The rule, with what it has gathered so far.
    pub(crate) fn rule(&self) -> &R {
        &self.rule
    }

    /// The rule, to take what it has gathered.
    pub(crate) fn rule_mut(&mut self) -> &mut R {
        &mut self.rule
    }

    /// Responses ignored because their tag was not the attempt in flight.
    pub fn stale_responses(&self) -> u64 {
        self.run.attempts.stale()
    }

    /// Retries scheduled so far.
    pub fn retries(&self) -> u32 {
        self.run.attempts.retries()
    }
}

impl<R: RetryRule> Machine for Retrying<R> {
    type Output = R::Output;
    type Event = R::Event;
    type Error = StoreError;

    fn handle_response(
        &mut self,
        tag: Tag,
        response: Result<Response, StoreError>,
        now: Timestamp,
    ) {
        let now = self.run.attempts.clock(now);
        if !self.run.attempts.accepts(tag) || self.run.finished {
            return;
        }
        match response {
            Ok(part) => self.rule.on_part(part, now, &mut self.run),
            Err(e) => {
                self.run.attempt_ended();
                self.rule.on_failure(e, now, &mut self.run);
            }
        }
    }

    fn handle_timeout(&mut self, now: Timestamp) {
        let now = self.run.attempts.clock(now);
        if self.run.finished {
            return;
        }
        match self.run.attempts.on_timeout(now) {
            Fired::Nothing | Fired::Sent => {}
            Fired::AttemptExpired => self
                .rule
                .on_failure(deadline_exceeded(), now, &mut self.run),
            Fired::GaveUp(e) => {
                let outcome = self.rule.gave_up(e);
                self.run.finish(outcome);
            }
        }
    }

    fn cancel(&mut self, now: Timestamp) {
        self.run.attempts.clock(now);
        if !self.run.finished {
            self.run.finish(Err(cancelled()));
        }
    }

    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.run.attempts.poll_request()
    }

    fn poll_abort(&mut self) -> Option<Tag> {
        self.run.attempts.poll_abort()
    }

    fn poll_event(&mut self) -> Option<R::Event> {
        self.rule.poll_event()
    }

    fn poll_timeout(&self) -> Option<Timestamp> {
        self.run.attempts.poll_timeout()
    }

    fn result(&mut self) -> Option<Result<R::Output, StoreError>> {
        self.run.outcome.take()
    }
}

/// Where the operation stands between inputs.
#[derive(Debug)]
enum Phase {
    /// An attempt was sent under `tag` and must finish by `deadline`.
    InFlight { tag: Tag, deadline: Timestamp },
    /// Waiting for the back-off timer before sending `request`.
    BackingOff { at: Timestamp, request: Request },
    /// Nothing outstanding: the machine is finished, or deciding what to do next.
    Idle,
}

/// What [`Attempts::on_timeout`] did.
#[derive(Debug)]
enum Fired {
    /// No timer was due.
    Nothing,
    /// The back-off ended and the next attempt was queued for sending.
    Sent,
    /// The attempt in flight ran out of time; it was aborted and counts as DEADLINE_EXCEEDED.
    AttemptExpired,
    /// The operation deadline passed while backing off: give up with this error.
    GaveUp(StoreError),
}

/// One operation's attempts (see the module doc).
#[derive(Debug)]
struct Attempts {
    backoff: Backoff,
    tags: TagAllocator,
    last_now: Timestamp,
    phase: Phase,
    outgoing: Option<(Tag, Request)>,
    aborts: VecDeque<Tag>,
    last_error: Option<StoreError>,
    stale: u64,
    retries: u32,
}

impl Attempts {
    /// Sends `first` at once, for an operation started at `now`.
    fn start(first: Request, now: Timestamp, seed: u64, policy: RetryPolicy) -> Self {
        let mut attempts = Attempts {
            backoff: Backoff::new(policy, now, seed),
            tags: TagAllocator::default(),
            last_now: now,
            phase: Phase::Idle,
            outgoing: None,
            aborts: VecDeque::new(),
            last_error: None,
            stale: 0,
            retries: 0,
        };
        attempts.send(first, now);
        attempts
    }

    /// Clamps a clock that went backwards: `max(now, last now seen)`.
    fn clock(&mut self, now: Timestamp) -> Timestamp {
        self.last_now = self.last_now.max(now);
        self.last_now
    }

    /// Whether `tag` is the attempt in flight; anything else is stale input, counted and
    /// ignored.
    fn accepts(&mut self, tag: Tag) -> bool {
        let current = matches!(self.phase, Phase::InFlight { tag: t, .. } if t == tag);
        if !current {
            self.stale += 1;
        }
        current
    }

    /// The attempt's stream or reply is complete: nothing more will arrive under its tag.
    fn attempt_ended(&mut self) {
        self.phase = Phase::Idle;
    }

    /// Stops everything: the attempt in flight (if any) is aborted, nothing more is sent.
    fn stop(&mut self) {
        if let Phase::InFlight { tag, .. } = self.phase {
            self.aborts.push_back(tag);
        }
        self.phase = Phase::Idle;
        self.outgoing = None;
    }

    /// After a retryable `error` at `now` (the attempt already ended or stopped), waits the
    /// next back-off and then sends `request`; gives `error` back when the operation deadline
    /// leaves no room for another attempt.
    fn retry(
        &mut self,
        error: StoreError,
        request: Request,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.stop();
        match self.backoff.next_retry_at(now) {
            Some(at) => {
                self.retries = self.retries.saturating_add(1);
                self.last_error = Some(error);
                self.phase = Phase::BackingOff { at, request };
                Ok(())
            }
            None => Err(error),
        }
    }

    /// Fires whatever timer is due at `now` (already clamped).
    fn on_timeout(&mut self, now: Timestamp) -> Fired {
        match core::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::BackingOff { .. } if now >= self.backoff.deadline() => {
                Fired::GaveUp(self.last_error.clone().unwrap_or_else(deadline_exceeded))
            }
            Phase::BackingOff { at, request } if now >= at => {
                self.send(request, now);
                Fired::Sent
            }
            Phase::InFlight { tag, deadline } if now >= deadline => {
                self.aborts.push_back(tag);
                Fired::AttemptExpired
            }
            other => {
                self.phase = other;
                Fired::Nothing
            }
        }
    }

    /// The next request to send.
    fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.outgoing.take()
    }

    /// The next tag whose responses the driver should stop delivering.
    fn poll_abort(&mut self) -> Option<Tag> {
        self.aborts.pop_front()
    }

    /// The earliest timer: back-off end or attempt deadline (both bounded by the operation
    /// deadline).
    fn poll_timeout(&self) -> Option<Timestamp> {
        match &self.phase {
            Phase::InFlight { deadline, .. } => Some(*deadline),
            Phase::BackingOff { at, .. } => Some((*at).min(self.backoff.deadline())),
            Phase::Idle => None,
        }
    }

    /// Responses ignored because their tag was not the attempt in flight.
    fn stale(&self) -> u64 {
        self.stale
    }

    /// Retries scheduled so far.
    fn retries(&self) -> u32 {
        self.retries
    }

    fn send(&mut self, request: Request, now: Timestamp) {
        let tag = self.tags.next_tag();
        self.phase = Phase::InFlight {
            tag,
            deadline: self.backoff.attempt_deadline(now),
        };
        self.outgoing = Some((tag, request));
    }
}

/// The error an attempt that ran out of time counts as.
fn deadline_exceeded() -> StoreError {
    StoreError::new(Code::DeadlineExceeded, "deadline exceeded")
}

/// The error a cancelled operation ends with.
fn cancelled() -> StoreError {
    StoreError::new(Code::Cancelled, "cancelled")
}
