//! The clocks of the sync driver (`spec/sans-io.md` 4.1): the system clock, a manual clock for
//! deterministic runs, and a running clock that only moves forward from the wall clock. The
//! driver itself, with the one driving loop, is `rowkit_client::SyncDriver`
//! (`rowkit_client::run_blocking` for a one-call run on a store).

use std::sync::atomic::{AtomicI64, Ordering};

use rowkit_statemachines::Timestamp;

/// The time source of a driver.
pub trait Clock {
    /// The current time.
    fn now(&self) -> Timestamp;
    /// Waits until `t` (a manual clock jumps there).
    fn sleep_until(&self, t: Timestamp);
}

/// Wall-clock time (`SystemTime`), sleeping the thread to wait.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp(i64::try_from(since.as_micros()).unwrap_or(i64::MAX))
    }

    fn sleep_until(&self, t: Timestamp) {
        let wait = t.0.saturating_sub(self.now().0);
        if wait > 0 {
            std::thread::sleep(std::time::Duration::from_micros(wait.unsigned_abs()));
        }
    }
}

/// A clock that only moves when told to: waiting jumps straight to the deadline. Used by tests
/// and by `--now` in the CLI.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `now`.
    pub fn new(now: Timestamp) -> ManualClock {
        ManualClock {
            now: AtomicI64::new(now.0),
        }
    }

    /// Moves the clock to `t` if that is later than the current time.
    pub fn advance_to(&self, t: Timestamp) {
        self.now.fetch_max(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.now.load(Ordering::SeqCst))
    }

    fn sleep_until(&self, t: Timestamp) {
        self.advance_to(t);
    }
}

/// The wall clock from a chosen start: it runs at real speed, waiting sleeps the thread (as
/// with [`SystemClock`]), and [`RunningClock::advance_to`] jumps it ahead. For tests whose
/// threads must really wait out their retry back-off (with a [`ManualClock`] a back-off costs
/// no time, so contending threads retry at once and keep colliding), or whose store stamps
/// server time with its own wall clock (the Bigtable emulator: started at the wall clock, this
/// clock is never behind the server's stamps).
#[derive(Debug)]
pub struct RunningClock {
    /// Added to the wall clock; only grows.
    offset: AtomicI64,
}

impl RunningClock {
    /// A clock standing at `start` now, and running from there.
    pub fn starting_at(start: Timestamp) -> RunningClock {
        RunningClock {
            offset: AtomicI64::new(start.0.saturating_sub(SystemClock.now().0)),
        }
    }

    /// Moves the clock to `t` if that is later than the current time.
    pub fn advance_to(&self, t: Timestamp) {
        self.offset
            .fetch_max(t.0.saturating_sub(SystemClock.now().0), Ordering::SeqCst);
    }
}

impl Clock for RunningClock {
    fn now(&self) -> Timestamp {
        SystemClock
            .now()
            .saturating_add_micros(self.offset.load(Ordering::SeqCst))
    }

    fn sleep_until(&self, t: Timestamp) {
        let wait = t.0.saturating_sub(self.now().0);
        if wait > 0 {
            std::thread::sleep(std::time::Duration::from_micros(wait.unsigned_abs()));
        }
    }
}
