//! How a facade starts its operations: one [`CallOptions`] type for every schema's facade,
//! and the [`Start`] of each call drawn from it.

use std::sync::atomic::{AtomicU64, Ordering};

use rowkit_statemachines::operation::Start;
use rowkit_statemachines::{SplitMix64, Timestamp};

/// The options every facade takes (`with_options`): the seed its calls' seeds are drawn from
/// and, if set, the deadline of every call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallOptions {
    /// The n-th call is seeded `SplitMix64::nth_output(seed, n)`, so a single-threaded
    /// sequence of calls is reproducible.
    pub seed: u64,
    /// Every call ends aborted this many µs after it starts (`None`: each operation's own
    /// default, as the original system sets it).
    pub deadline_micros: Option<i64>,
}

/// A facade's options and the number of calls it started.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    options: CallOptions,
    started: AtomicU64,
}

impl Calls {
    /// Calls with `options`, none started yet.
    pub(crate) fn new(options: CallOptions) -> Calls {
        Calls {
            options,
            started: AtomicU64::new(0),
        }
    }

    /// The options.
    pub(crate) fn options(&self) -> CallOptions {
        self.options
    }

    /// The start of the next call at `now`, aborted after the options' deadline or, if none
    /// is set, `default_micros`.
    pub(crate) fn start(&self, now: Timestamp, default_micros: i64) -> Start {
        Start::within(
            now,
            self.next_seed(),
            self.options.deadline_micros.unwrap_or(default_micros),
        )
    }

    /// The seed of the next call (for a call whose deadline is its own, e.g. a repair's).
    pub(crate) fn next_seed(&self) -> u64 {
        let n = self.started.fetch_add(1, Ordering::Relaxed);
        SplitMix64::nth_output(self.options.seed, n)
    }

    /// The start of the next call at `now` aborted `micros` later, whatever the options'
    /// deadline (a check runs as long as it is let).
    pub(crate) fn start_within(&self, now: Timestamp, micros: i64) -> Start {
        Start::within(now, self.next_seed(), micros)
    }
}
