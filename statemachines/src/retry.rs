//! The machines' retry schedule.
//!
//! Hand-written on purpose: it is sans-I/O (the machine computes the next wake-up time from
//! the clock it is given and [`SplitMix64`], never sleeps) and follows the Bigtable clients'
//! schedule (`spec/sans-io.md` 3.1); `backoff`-style crates own the timer or the randomness,
//! which would break the deterministic request scripts.

use crate::{SplitMix64, Timestamp};

/// How a machine retries: exponential back-off with jitter, bounded by an operation deadline
/// (`spec/sans-io.md` 3.1). Durations are microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// First back-off base (Python client default: 10 ms).
    pub initial_backoff: i64,
    /// Largest back-off base (default 60 s).
    pub max_backoff: i64,
    /// Time allowed for one attempt; 0 = no per-attempt limit.
    pub attempt_timeout: i64,
    /// Time allowed for the whole operation, from its start (default 60 s).
    pub operation_timeout: i64,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            initial_backoff: 10_000,
            max_backoff: 60_000_000,
            attempt_timeout: 0,
            operation_timeout: 60_000_000,
        }
    }
}

/// The back-off state of one operation: which retry comes next and the seeded jitter source.
#[derive(Clone, Debug)]
pub struct Backoff {
    policy: RetryPolicy,
    rng: SplitMix64,
    retries: u32,
    deadline: Timestamp,
}

impl Backoff {
    /// Back-off for an operation started at `now`.
    pub fn new(policy: RetryPolicy, now: Timestamp, seed: u64) -> Backoff {
        Backoff {
            policy,
            rng: SplitMix64::new(seed),
            retries: 0,
            deadline: now.saturating_add_micros(policy.operation_timeout),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// The operation deadline.
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }

    /// How many retries were scheduled so far.
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// When the next attempt may start after a failure at `now`: `now + base/2 + rand(0..=base/2)`
    /// with `base = min(max, initial * 2^k)`; `None` if that is past the deadline.
    pub fn next_retry_at(&mut self, now: Timestamp) -> Option<Timestamp> {
        let shift = self.retries.min(62);
        let base = self
            .policy
            .initial_backoff
            .saturating_mul(1i64 << shift)
            .min(self.policy.max_backoff)
            .max(0);
        let half = base / 2;
        let jitter = self.rng.below(half as u64 + 1) as i64;
        let at = now.saturating_add_micros(half + jitter);
        self.retries += 1;
        (at < self.deadline).then_some(at)
    }

    /// The deadline of an attempt started at `now`: the earlier of the per-attempt limit and
    /// the operation deadline.
    pub fn attempt_deadline(&self, now: Timestamp) -> Timestamp {
        if self.policy.attempt_timeout > 0 {
            now.saturating_add_micros(self.policy.attempt_timeout)
                .min(self.deadline)
        } else {
            self.deadline
        }
    }
}
