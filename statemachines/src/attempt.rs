//! The retry skeleton shared by the retrying machines ([`crate::readrows::ReadRows`],
//! [`crate::raw::MutateRows`], [`crate::raw::MutateRow`]): one attempt in flight at a time under
//! a fresh tag, a back-off timer between attempts, attempt and operation deadlines, a clamped
//! clock and stale-tag filtering (`spec/sans-io.md` 2 and 3.1). What to retry and with which
//! request stays with each machine.

use alloc::collections::VecDeque;

use crate::{Backoff, Code, Request, RetryPolicy, StoreError, Tag, TagAllocator, Timestamp};

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
pub(crate) enum Fired {
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
pub(crate) struct Attempts {
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
    pub(crate) fn start(first: Request, now: Timestamp, seed: u64, policy: RetryPolicy) -> Self {
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
    pub(crate) fn clock(&mut self, now: Timestamp) -> Timestamp {
        self.last_now = self.last_now.max(now);
        self.last_now
    }

    /// Whether `tag` is the attempt in flight; anything else is stale input, counted and
    /// ignored.
    pub(crate) fn accepts(&mut self, tag: Tag) -> bool {
        let current = matches!(self.phase, Phase::InFlight { tag: t, .. } if t == tag);
        if !current {
            self.stale += 1;
        }
        current
    }

    /// The attempt's stream or reply is complete: nothing more will arrive under its tag.
    pub(crate) fn attempt_ended(&mut self) {
        self.phase = Phase::Idle;
    }

    /// Stops everything: the attempt in flight (if any) is aborted, nothing more is sent.
    pub(crate) fn stop(&mut self) {
        if let Phase::InFlight { tag, .. } = self.phase {
            self.aborts.push_back(tag);
        }
        self.phase = Phase::Idle;
        self.outgoing = None;
    }

    /// After a retryable `error` at `now` (the attempt already ended or stopped), waits the
    /// next back-off and then sends `request`; gives `error` back when the operation deadline
    /// leaves no room for another attempt.
    pub(crate) fn retry(
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
    pub(crate) fn on_timeout(&mut self, now: Timestamp) -> Fired {
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
    pub(crate) fn poll_request(&mut self) -> Option<(Tag, Request)> {
        self.outgoing.take()
    }

    /// The next tag whose responses the driver should stop delivering.
    pub(crate) fn poll_abort(&mut self) -> Option<Tag> {
        self.aborts.pop_front()
    }

    /// The earliest timer: back-off end or attempt deadline (both bounded by the operation
    /// deadline).
    pub(crate) fn poll_timeout(&self) -> Option<Timestamp> {
        match &self.phase {
            Phase::InFlight { deadline, .. } => Some(*deadline),
            Phase::BackingOff { at, .. } => Some((*at).min(self.backoff.deadline())),
            Phase::Idle => None,
        }
    }

    /// Responses ignored because their tag was not the attempt in flight.
    pub(crate) fn stale(&self) -> u64 {
        self.stale
    }

    /// Retries scheduled so far.
    pub(crate) fn retries(&self) -> u32 {
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
pub(crate) fn deadline_exceeded() -> StoreError {
    StoreError::new(Code::DeadlineExceeded, "deadline exceeded")
}

/// The error a cancelled operation ends with.
pub(crate) fn cancelled() -> StoreError {
    StoreError::new(Code::Cancelled, "cancelled")
}
