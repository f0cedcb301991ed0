//! The [`Driver`] seam and the one loop that runs a machine over it (`spec/sans-io.md` 4).
//!
//! A driver knows how to start one request, what time it is, and how to wait; everything else
//! — which requests, in what order, retries, resume, deadlines — is the machine's. [`run`] is
//! the only driving loop of the typed API, so an operation cannot behave differently between
//! drivers:
//!
//! - after every input it drains the machine in the documented order (requests, aborts,
//!   events, timeout, result; [`Machine`]);
//! - every outstanding request is in flight at once; an abort drops that request's stream
//!   (which cancels it where the transport can);
//! - a driver whose waits block ([`Driver::blocking_waits`], the sync driver) has its ready
//!   answers taken oldest request first (lowest tag), so it serves requests one at a time in
//!   the order the machine emitted them (deterministic for a store, clock and seed); any
//!   other driver's are taken round-robin, so a stream whose parts are always ready (a long
//!   scan read by a slow machine) cannot hold back the other requests' answers;
//! - the caller's cancellation is checked before any answer, so it is never held back either;
//! - it never retries: the machine decides.

use core::future::Future;
use core::ops::Deref;
use core::pin::{Pin, pin};
use core::task::{Context, Poll};

use futures_core::Stream;
use rowkit_codec::model::ColumnFamily;
use rowkit_statemachines::operation::{OperationError, STALLED_MESSAGE};
use rowkit_statemachines::{Code, Machine, Request, Response, StoreError, Tag, Timestamp};

/// Where a machine's requests go, and its time: the one thing the sync, Tokio and browser
/// drivers implement.
///
/// Futures and streams returned here are as `Send` as the driver makes them: the Tokio
/// driver's are, so a facade call over it can be `tokio::spawn`ed; the sync and browser
/// drivers' need not be.
pub trait Driver {
    /// The current time, as every `now` the machines are given.
    fn now(&self) -> Timestamp;

    /// Starts `request`: the stream of everything the machine must see — the unary response,
    /// or each part of a streamed reply followed by [`Response::StreamEnd`]; an `Err` item
    /// ends it with that status. Dropping the stream abandons the request.
    fn call(&self, request: Request) -> impl Stream<Item = Result<Response, StoreError>>;

    /// Resolves once the driver's clock has reached `at` (a manual clock jumps there).
    fn sleep_until(&self, at: Timestamp) -> impl Future<Output = ()>;

    /// Whether [`Driver::sleep_until`] blocks the thread or jumps a manual clock rather than
    /// waiting alongside the driver's I/O. [`run`] then waits only when nothing is in flight:
    /// a request waiting for another thread's answer (a coalesced row read) must not make a
    /// shared manual clock jump to the machine's deadline, nor block past the answer.
    fn blocking_waits(&self) -> bool {
        false
    }

    /// Creates `table` with `families` (`ALREADY_EXISTS` if it exists).
    fn create_table(
        &self,
        table: &str,
        families: &[ColumnFamily],
    ) -> impl Future<Output = Result<(), StoreError>>;

    /// The families of `table`, ascending by name (`NOT_FOUND` if it is missing).
    fn families(&self, table: &str) -> impl Future<Output = Result<Vec<ColumnFamily>, StoreError>>;

    /// Adds a family to `table`, or replaces the GC rule of one it has (`ModifyColumnFamilies`
    /// with one `create` or `update`).
    fn set_family(
        &self,
        table: &str,
        family: &ColumnFamily,
    ) -> impl Future<Output = Result<(), StoreError>>;

    /// Deletes `table` and every row it holds (an admin request: `rowkit gold migrate
    /// --drop-source`). A driver without table administration answers `UNIMPLEMENTED` with
    /// one line saying so, as this default does (the browser's: a page cannot delete tables,
    /// `docs/migration.md` §11.6).
    fn delete_table(&self, table: &str) -> impl Future<Output = Result<(), StoreError>> {
        core::future::ready(Err(StoreError::new(
            Code::Unimplemented,
            format!(
                "deleting table {table} is an admin request this host cannot send: run it \
                 with a native driver (the rowkit CLI)"
            ),
        )))
    }

    /// Resolves when the caller cancels every operation of this driver (a page's
    /// `AbortSignal`): [`run`] then cancels its machine ([`Machine::cancel`]), which abandons
    /// its requests and ends with its own cancellation error. Never, by default.
    fn cancelled(&self) -> impl Future<Output = ()> {
        core::future::pending()
    }
}

/// The table administration and cancellation of a [`Driver`] that wraps another (`$inner`:
/// how to reach it from `self`, e.g. `forward_admin!(self => self.inner)`), inside an `impl Driver` block: one definition for every
/// decorator.
macro_rules! forward_admin {
    ($this:ident => $($inner:tt)+) => {
        fn create_table(
            &$this,
            table: &str,
            families: &[rowkit_codec::model::ColumnFamily],
        ) -> impl core::future::Future<Output = Result<(), rowkit_statemachines::StoreError>> {
            $($inner)+.create_table(table, families)
        }

        fn families(
            &$this,
            table: &str,
        ) -> impl core::future::Future<
            Output = Result<Vec<rowkit_codec::model::ColumnFamily>, rowkit_statemachines::StoreError>,
        > {
            $($inner)+.families(table)
        }

        fn set_family(
            &$this,
            table: &str,
            family: &rowkit_codec::model::ColumnFamily,
        ) -> impl core::future::Future<Output = Result<(), rowkit_statemachines::StoreError>> {
            $($inner)+.set_family(table, family)
        }

        fn delete_table(
            &$this,
            table: &str,
        ) -> impl core::future::Future<Output = Result<(), rowkit_statemachines::StoreError>> {
            $($inner)+.delete_table(table)
        }

        fn cancelled(&$this) -> impl core::future::Future<Output = ()> {
            $($inner)+.cancelled()
        }
    };
}
pub(crate) use forward_admin;

/// A pointer to a driver (`&D`, `Arc<D>`, `Rc<D>`, `Box<D>`) is that driver, so facades and
/// tasks can share one.
impl<P> Driver for P
where
    P: Deref<Target: Driver>,
{
    fn now(&self) -> Timestamp {
        (**self).now()
    }

    fn call(&self, request: Request) -> impl Stream<Item = Result<Response, StoreError>> {
        (**self).call(request)
    }

    fn sleep_until(&self, at: Timestamp) -> impl Future<Output = ()> {
        (**self).sleep_until(at)
    }

    fn blocking_waits(&self) -> bool {
        (**self).blocking_waits()
    }

    forward_admin!(self => (**self));
}

/// Creates `table` unless it exists.
pub async fn ensure_table<D: Driver + ?Sized>(
    driver: &D,
    table: &str,
    families: &[ColumnFamily],
) -> Result<(), StoreError> {
    match driver.create_table(table, families).await {
        Err(e) if e.code == Code::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Why [`run`] did not return the machine's output.
#[derive(Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError<E> {
    /// The machine finished with an error.
    #[error(transparent)]
    Machine(E),
    /// The machine had nothing in flight, no timeout and no result: a bug in the machine.
    #[error("machine stalled: nothing in flight, no timeout and no result")]
    Stalled,
}

impl<E: Into<StoreError>> RunError<E> {
    /// The failure as a store status (a stall is `INTERNAL`).
    pub fn into_store_error(self) -> StoreError {
        match self {
            RunError::Machine(e) => e.into(),
            RunError::Stalled => StoreError::new(Code::Internal, STALLED_MESSAGE),
        }
    }
}

/// Runs `machine` over `driver` until it has a result, handing every event to `on_event`;
/// cancelled when the driver is ([`Driver::cancelled`]).
pub async fn run<D, M>(
    driver: &D,
    machine: M,
    on_event: impl FnMut(M::Event),
) -> Result<M::Output, RunError<M::Error>>
where
    D: Driver + ?Sized,
    M: Machine,
{
    run_until(driver, machine, on_event, driver.cancelled()).await
}

/// [`run`] for a schema's operation: a stalled machine ends with the schema's own error
/// ([`OperationError::stalled`]), so a facade returns one error type.
pub async fn run_operation<D, M>(
    driver: &D,
    machine: M,
    on_event: impl FnMut(M::Event),
) -> Result<M::Output, M::Error>
where
    D: Driver + ?Sized,
    M: Machine<Error: OperationError>,
{
    run(driver, machine, on_event).await.map_err(|e| match e {
        RunError::Machine(e) => e,
        RunError::Stalled => M::Error::stalled(),
    })
}

/// What woke the loop.
enum Woke {
    /// An item (or the end) of the stream at this index of the in-flight list.
    Part(usize, Option<Result<Response, StoreError>>),
    /// The machine's timeout was reached.
    Timer,
    /// The caller cancelled.
    Cancel,
}

/// [`run`], cancelling the machine ([`Machine::cancel`]) when `cancel` resolves: the machine
/// abandons its requests and ends with its own cancellation result, which is returned.
pub async fn run_until<D, M>(
    driver: &D,
    mut machine: M,
    mut on_event: impl FnMut(M::Event),
    cancel: impl Future<Output = ()>,
) -> Result<M::Output, RunError<M::Error>>
where
    D: Driver + ?Sized,
    M: Machine,
{
    let mut cancel = pin!(cancel);
    let mut cancelled = false;
    let blocking_waits = driver.blocking_waits();
    // In tag order: tags increase, so pushing keeps it sorted.
    let mut inflight = Vec::new();
    let mut sleep = None;
    // Where the next round-robin poll of `inflight` starts (unused when waits block).
    let mut next = 0;
    loop {
        while let Some((tag, request)) = machine.poll_request() {
            inflight.push((tag, Box::pin(driver.call(request))));
        }
        while let Some(tag) = machine.poll_abort() {
            inflight.retain(|(t, _)| *t != tag);
        }
        while let Some(event) = machine.poll_event() {
            on_event(event);
        }
        if let Some(result) = machine.result() {
            return result.map_err(RunError::Machine);
        }
        let timeout = machine.poll_timeout();
        if inflight.is_empty() && timeout.is_none() {
            return Err(RunError::Stalled);
        }
        match (timeout, &sleep) {
            (Some(at), Some((armed, _))) if *armed == at => {}
            (Some(at), _) => sleep = Some((at, Box::pin(driver.sleep_until(at)))),
            (None, _) => sleep = None,
        }
        let woke = core::future::poll_fn(|cx: &mut Context<'_>| {
            if !cancelled && cancel.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Woke::Cancel);
            }
            let n = inflight.len();
            let start = if blocking_waits || n == 0 {
                0
            } else {
                next % n
            };
            for k in 0..n {
                let i = (start + k) % n;
                if let Poll::Ready(item) = inflight[i].1.as_mut().poll_next(cx) {
                    return Poll::Ready(Woke::Part(i, item));
                }
            }
            if let Some((_, wait)) = sleep.as_mut()
                && (inflight.is_empty() || !blocking_waits)
                && Pin::as_mut(wait).poll(cx).is_ready()
            {
                return Poll::Ready(Woke::Timer);
            }
            Poll::Pending
        })
        .await;
        match woke {
            Woke::Part(i, Some(item)) => {
                let tag: Tag = inflight[i].0;
                // The next poll starts after this request (at `i` once it is removed).
                next = i + 1;
                if item.is_err() || matches!(item, Ok(Response::StreamEnd)) {
                    drop(inflight.remove(i));
                    next = i;
                }
                machine.handle_response(tag, item, driver.now());
            }
            // A unary call ends after its response.
            Woke::Part(i, None) => {
                drop(inflight.remove(i));
                next = i;
            }
            Woke::Timer => {
                sleep = None;
                machine.handle_timeout(driver.now());
            }
            Woke::Cancel => {
                cancelled = true;
                machine.cancel(driver.now());
            }
        }
    }
}

/// Runs a future to completion on the calling thread, parking it while the future waits:
/// the blocking call of the typed API for sync callers (`block_on(mt.mount(..))`).
///
/// Over the sync driver a call completes without ever waiting, except when it joins another
/// thread's read of a hot row (the mount table's row cache), which wakes it. Not for the
/// Tokio driver (its I/O needs the runtime: use `Runtime::block_on`) nor wasm32 (a page
/// cannot block).
pub fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}
