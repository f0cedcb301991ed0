//! [`SyncDriver`]: the driver over any sync [`Store`] (memory, redb, or Bigtable through the
//! blocking `rowkit_bigtable::BigtableStore`) and a [`Clock`] (`spec/sans-io.md` 4.1).
//!
//! A request runs on the store when its stream is first polled, and every part is ready at
//! once, so [`crate::run`] serves requests one at a time in the order the machine emitted
//! them: a run is deterministic for a given store state, clock and seed. Facade calls over it
//! complete without waiting; sync callers use [`crate::block_on`].

use core::future::Future;
use core::ops::Deref;
use core::pin::Pin;
use core::task::{Context, Poll};

use futures_core::Stream;
use rowkit_codec::model::ColumnFamily;
use rowkit_statemachines::{Request, Response, StoreError, Timestamp};
use rowkit_store::driver::Clock;
use rowkit_store::{Reply, Store};

use crate::Driver;

/// The sync driver: a store and a clock, each held by a pointer (`&`, `Arc`, `Rc`, `Box`), so
/// several drivers and facades can share them (see the module doc).
#[derive(Debug, Clone, Copy)]
pub struct SyncDriver<S, C> {
    store: S,
    clock: C,
}

impl<S, C> SyncDriver<S, C>
where
    S: Deref<Target: Store>,
    C: Deref<Target: Clock>,
{
    /// A driver executing on `store` at `clock`'s time, e.g.
    /// `SyncDriver::new(&store, &clock)` or `SyncDriver::new(Arc::new(store), Arc::new(clock))`.
    pub fn new(store: S, clock: C) -> SyncDriver<S, C> {
        SyncDriver { store, clock }
    }

    /// The store.
    pub fn store(&self) -> &S::Target {
        &self.store
    }

    /// The clock.
    pub fn clock(&self) -> &C::Target {
        &self.clock
    }
}

/// Where a [`StoreCall`] is.
enum CallState<'a> {
    Unsent(Request),
    Parts(Box<dyn Iterator<Item = Result<Response, StoreError>> + 'a>),
    Done,
}

/// One request on a store: executed when first polled.
pub struct StoreCall<'a, S, C> {
    driver: &'a SyncDriver<S, C>,
    state: CallState<'a>,
}

impl<S, C> Unpin for StoreCall<'_, S, C> {}

impl<'a, S, C> Stream for StoreCall<'a, S, C>
where
    S: Deref<Target: Store>,
    C: Deref<Target: Clock>,
{
    type Item = Result<Response, StoreError>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let driver: &'a SyncDriver<S, C> = self.driver;
        let mut parts = match core::mem::replace(&mut self.state, CallState::Done) {
            // Local: whole rows where the store has them (no chunks for the machine to merge).
            CallState::Unsent(request) => {
                match driver.store.execute_local(request, driver.clock.now()) {
                    Ok(Reply::Unary(response)) => return Poll::Ready(Some(Ok(response))),
                    Ok(Reply::Stream(parts)) => parts,
                    Err(e) => return Poll::Ready(Some(Err(e))),
                }
            }
            CallState::Parts(parts) => parts,
            CallState::Done => return Poll::Ready(None),
        };
        Poll::Ready(Some(match parts.next() {
            Some(Ok(part)) => {
                self.state = CallState::Parts(parts);
                Ok(part)
            }
            Some(Err(e)) => Err(e),
            None => Ok(Response::StreamEnd),
        }))
    }
}

impl<S, C> Driver for SyncDriver<S, C>
where
    S: Deref<Target: Store>,
    C: Deref<Target: Clock>,
{
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn call(&self, request: Request) -> impl Stream<Item = Result<Response, StoreError>> {
        StoreCall {
            driver: self,
            state: CallState::Unsent(request),
        }
    }

    fn sleep_until(&self, at: Timestamp) -> impl Future<Output = ()> {
        // Waits (or jumps) when first polled, i.e. only once nothing else is ready.
        core::future::poll_fn(move |_| {
            self.clock.sleep_until(at);
            Poll::Ready(())
        })
    }

    /// The wait blocks the thread (or jumps a manual clock).
    fn blocking_waits(&self) -> bool {
        true
    }

    /// Resolves once the store is unusable ([`Store::unusable`]: it could not be opened), so
    /// that [`crate::run`] ends the operation at once instead of the machine retrying, until
    /// its deadline, a failure no retry mends. [`crate::run`] polls it whenever it wakes,
    /// which over this driver is after every answer, so it needs no waker.
    fn cancelled(&self) -> impl Future<Output = ()> {
        core::future::poll_fn(move |_| {
            if self.store.unusable().is_some() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
    }

    fn create_table(
        &self,
        table: &str,
        families: &[ColumnFamily],
    ) -> impl Future<Output = Result<(), StoreError>> {
        core::future::ready(self.store.create_table(table, families))
    }

    fn families(&self, table: &str) -> impl Future<Output = Result<Vec<ColumnFamily>, StoreError>> {
        core::future::ready(self.store.families(table))
    }

    fn delete_table(&self, table: &str) -> impl Future<Output = Result<(), StoreError>> {
        core::future::ready(self.store.delete_table(table))
    }

    fn set_family(
        &self,
        table: &str,
        family: &ColumnFamily,
    ) -> impl Future<Output = Result<(), StoreError>> {
        core::future::ready(self.store.set_family(table, family))
    }
}

/// Runs `machine` to its end on `store` at `clock`'s time, blocking the thread: the sync
/// driver's one-call form, for tools and tests that hold a store rather than a facade. It is
/// [`crate::run`] over a [`SyncDriver`], so requests are served one at a time in the order the
/// machine emits them.
pub fn run_blocking<M, S, C>(
    store: &S,
    clock: &C,
    machine: M,
    on_event: impl FnMut(M::Event),
) -> Result<M::Output, crate::RunError<M::Error>>
where
    M: rowkit_statemachines::Machine,
    S: Store + ?Sized,
    C: Clock + ?Sized,
{
    crate::block_on(crate::run(
        &SyncDriver::new(store, clock),
        machine,
        on_event,
    ))
}

/// Reads every row `request` selects at `now` (a nested `ReadRows` machine with the default
/// retry policy, run by [`run_blocking`]): the one-call read that checks, tools and tests use.
pub fn read_rows_blocking<S: Store + ?Sized>(
    store: &S,
    request: rowkit_statemachines::ReadRowsRequest,
    now: Timestamp,
) -> Result<Vec<rowkit_codec::model::Row>, StoreError> {
    let clock = rowkit_store::driver::ManualClock::new(now);
    let machine =
        rowkit_statemachines::readrows::ReadRows::new(request, now, 0, Default::default());
    let mut rows = Vec::new();
    run_blocking(store, &clock, machine, |row| rows.push(row))
        .map_err(crate::RunError::into_store_error)?;
    Ok(rows)
}
