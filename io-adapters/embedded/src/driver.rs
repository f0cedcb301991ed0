//! The sync driver: runs any [`Machine`] to completion against a [`Store`]
//! (`spec/sans-io.md` 4.1).
//!
//! Requests are served one at a time in the order the machine emits them, so a run is fully
//! deterministic for a given store state, clock and seed. Streamed replies are fed part by part;
//! events and aborts are drained after every part, so a machine that has seen enough can stop
//! a scan early.

use std::sync::atomic::{AtomicI64, Ordering};

use rowkit_statemachines::{Code, Machine, Response, StoreError, Timestamp};

use crate::{Reply, Store};

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

/// Why [`run`] did not return the machine's output.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum RunError<E> {
    /// The machine finished with an error.
    #[error(transparent)]
    Machine(E),
    /// The machine had no request, no timeout and no result: a bug in the machine.
    #[error("machine stalled: no request, no timeout and no result")]
    Stalled,
}

impl<E: Into<StoreError>> RunError<E> {
    /// The failure as a store status (a stall is `INTERNAL`).
    pub fn into_store_error(self) -> StoreError {
        match self {
            RunError::Machine(e) => e.into(),
            RunError::Stalled => StoreError::new(Code::Internal, "machine stalled"),
        }
    }
}

/// Runs `machine` against `store` until it has a result, handing every event to `on_event`.
pub fn run<M, S, C>(
    store: &S,
    clock: &C,
    mut machine: M,
    mut on_event: impl FnMut(M::Event),
) -> Result<M::Output, RunError<M::Error>>
where
    M: Machine,
    S: Store + ?Sized,
    C: Clock + ?Sized,
{
    loop {
        while let Some((tag, request)) = machine.poll_request() {
            match store.execute(request, clock.now()) {
                Ok(Reply::Unary(response)) => {
                    machine.handle_response(tag, Ok(response), clock.now())
                }
                Ok(Reply::Stream(parts)) => {
                    let mut ended = false;
                    for part in parts {
                        let failed = part.is_err();
                        machine.handle_response(tag, part, clock.now());
                        let aborted = drain(&mut machine, &mut on_event, tag);
                        if failed || aborted {
                            ended = true;
                            break;
                        }
                    }
                    if !ended {
                        machine.handle_response(tag, Ok(Response::StreamEnd), clock.now());
                    }
                }
                Err(e) => machine.handle_response(tag, Err(e), clock.now()),
            }
        }
        drain(
            &mut machine,
            &mut on_event,
            rowkit_statemachines::Tag(u64::MAX),
        );
        if let Some(result) = machine.result() {
            return result.map_err(RunError::Machine);
        }
        let Some(at) = machine.poll_timeout() else {
            return Err(RunError::Stalled);
        };
        clock.sleep_until(at);
        machine.handle_timeout(clock.now());
    }
}

/// Drains aborts and events; returns whether `current` was aborted.
fn drain<M: Machine>(
    machine: &mut M,
    on_event: &mut impl FnMut(M::Event),
    current: rowkit_statemachines::Tag,
) -> bool {
    let mut aborted = false;
    while let Some(tag) = machine.poll_abort() {
        aborted |= tag == current;
    }
    while let Some(event) = machine.poll_event() {
        on_event(event);
    }
    aborted
}

/// Reads every row `request` selects at `now` (nested [`ReadRows`] machine, default retry
/// policy): the one-call read that checks, tools and tests use.
///
/// [`ReadRows`]: rowkit_statemachines::readrows::ReadRows
pub fn read_rows<S: Store + ?Sized>(
    store: &S,
    request: rowkit_statemachines::ReadRowsRequest,
    now: Timestamp,
) -> Result<Vec<rowkit_codec::model::Row>, StoreError> {
    let clock = ManualClock::new(now);
    let machine =
        rowkit_statemachines::readrows::ReadRows::new(request, now, 0, Default::default());
    let mut rows = Vec::new();
    run(store, &clock, machine, |row| rows.push(row)).map_err(RunError::into_store_error)?;
    Ok(rows)
}
