//! The Tokio driver: runs any [`Machine`] against a [`BigtableConnection`], with every
//! outstanding request of the machine in flight at once (`spec/sans-io.md` 4.2).
//!
//! In-flight calls live in a `StreamMap` keyed by tag; an abort removes the entry, which drops
//! the tonic call (HTTP/2 `RST_STREAM`). Timeouts are `tokio::time` sleeps to the machine's
//! `poll_timeout`. Events go to a callback ([`run`]) or a bounded channel ([`run_to_channel`],
//! whose capacity is the back-pressure: a slow consumer pauses the whole driver). The driver
//! never retries: the machine decides.
//!
//! [`run_with`] generalises the two things the typed facades need to vary: where requests go
//! (any [`Transport`]; the mount table's hot-row cache answers node reads itself) and the time
//! source (`rowkit_embedded::driver::Clock`, so a facade and its sync twin can share one
//! injected clock).

use rowkit_embedded::driver::{Clock, SystemClock};
use rowkit_statemachines::{Code, Machine, Request, Response, StoreError, Tag, Timestamp};
use tokio_stream::{StreamExt, StreamMap};

use crate::connection::{BigtableConnection, PartStream};

/// Why [`run`] did not return the machine's output.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum RunError<E> {
    /// The machine finished with an error.
    #[error(transparent)]
    Machine(E),
    /// The machine had no request in flight, no timeout and no result: a bug in the machine.
    #[error("machine stalled: nothing in flight, no timeout and no result")]
    Stalled,
    /// The event receiver was dropped; the machine was cancelled.
    #[error("event receiver dropped")]
    Closed,
}

impl<E: Into<StoreError>> RunError<E> {
    /// The failure as a store status (a stall is `INTERNAL`, a closed channel `CANCELLED`).
    pub fn into_store_error(self) -> StoreError {
        match self {
            RunError::Machine(e) => e.into(),
            RunError::Stalled => StoreError::new(Code::Internal, "machine stalled"),
            RunError::Closed => StoreError::new(Code::Cancelled, "event receiver dropped"),
        }
    }
}

/// A shareable clock: the typed facades' time source.
pub type SharedClock = std::sync::Arc<dyn Clock + Send + Sync>;

/// Wall-clock time in microseconds, the machines' `now`.
pub fn now() -> Timestamp {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp(i64::try_from(since.as_micros()).unwrap_or(i64::MAX))
}

/// Where the driver sends a machine's requests.
pub trait Transport {
    /// Starts `request`: the stream of everything the machine must see (the unary response,
    /// or the parts then [`Response::StreamEnd`]; an `Err` item ends it), as
    /// [`BigtableConnection::call`].
    fn call(&self, request: Request) -> PartStream;
}

impl Transport for BigtableConnection {
    fn call(&self, request: Request) -> PartStream {
        BigtableConnection::call(self, request)
    }
}

/// What the driver does with events.
trait Sink<E> {
    async fn send(&mut self, event: E) -> Result<(), ()>;
}

struct Callback<F>(F);

impl<E, F: FnMut(E)> Sink<E> for Callback<F> {
    async fn send(&mut self, event: E) -> Result<(), ()> {
        (self.0)(event);
        Ok(())
    }
}

struct Channel<E>(tokio::sync::mpsc::Sender<E>);

impl<E> Sink<E> for Channel<E> {
    async fn send(&mut self, event: E) -> Result<(), ()> {
        self.0.send(event).await.map_err(drop)
    }
}

/// Runs `machine` until it has a result, handing every event to `on_event`.
pub async fn run<M: Machine>(
    conn: &BigtableConnection,
    mut machine: M,
    on_event: impl FnMut(M::Event),
) -> Result<M::Output, RunError<M::Error>> {
    drive(conn, &SystemClock, &mut machine, Callback(on_event)).await
}

/// [`run`] over any [`Transport`] with time from `clock`: every `now` the machine sees is
/// `clock.now()`, and a timeout waits (on Tokio's timer) until the clock reaches it; a manual
/// clock is then moved there (`Clock::sleep_until`), so it never runs behind the machine.
pub async fn run_with<M: Machine, T: Transport + ?Sized, C: Clock + ?Sized>(
    transport: &T,
    clock: &C,
    machine: &mut M,
    on_event: impl FnMut(M::Event),
) -> Result<M::Output, RunError<M::Error>> {
    drive(transport, clock, machine, Callback(on_event)).await
}

/// [`run`] on a borrowed machine, so its counters (retries, rows emitted) can be read after.
pub async fn run_mut<M: Machine>(
    conn: &BigtableConnection,
    machine: &mut M,
    on_event: impl FnMut(M::Event),
) -> Result<M::Output, RunError<M::Error>> {
    drive(conn, &SystemClock, machine, Callback(on_event)).await
}

/// Runs `machine` until it has a result, sending every event into a bounded channel. If the
/// receiver is dropped the machine is cancelled, its calls dropped, and [`RunError::Closed`]
/// returned.
pub async fn run_to_channel<M: Machine>(
    conn: &BigtableConnection,
    mut machine: M,
    events: tokio::sync::mpsc::Sender<M::Event>,
) -> Result<M::Output, RunError<M::Error>> {
    drive(conn, &SystemClock, &mut machine, Channel(events)).await
}

async fn drive<M: Machine, T: Transport + ?Sized, C: Clock + ?Sized, S: Sink<M::Event>>(
    conn: &T,
    clock: &C,
    machine: &mut M,
    mut sink: S,
) -> Result<M::Output, RunError<M::Error>> {
    let mut inflight: StreamMap<Tag, PartStream> = StreamMap::new();
    loop {
        while let Some((tag, request)) = machine.poll_request() {
            inflight.insert(tag, conn.call(request));
        }
        while let Some(tag) = machine.poll_abort() {
            // Dropping the stream drops the tonic call, which resets the HTTP/2 stream.
            inflight.remove(&tag);
        }
        while let Some(event) = machine.poll_event() {
            if sink.send(event).await.is_err() {
                machine.cancel(clock.now());
                return Err(RunError::Closed);
            }
        }
        if let Some(result) = machine.result() {
            return result.map_err(RunError::Machine);
        }
        let timeout = machine.poll_timeout();
        if inflight.is_empty() && timeout.is_none() {
            return Err(RunError::Stalled);
        }
        let sleep = async {
            match timeout {
                Some(at) => {
                    let wait = at.0.saturating_sub(clock.now().0).max(0).unsigned_abs();
                    tokio::time::sleep(std::time::Duration::from_micros(wait)).await;
                    // A wall clock is there already (Tokio's timer never fires early); a
                    // manual one jumps.
                    clock.sleep_until(at);
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            Some((tag, item)) = inflight.next(), if !inflight.is_empty() => {
                if item.is_err() || matches!(item, Ok(Response::StreamEnd)) {
                    inflight.remove(&tag);
                }
                machine.handle_response(tag, item, clock.now());
            }
            () = sleep => machine.handle_timeout(clock.now()),
        }
    }
}
