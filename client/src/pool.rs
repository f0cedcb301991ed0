//! [`PoolDriver`]: the [`SyncDriver`] with every request run on a small pool of worker
//! threads, so that the requests a machine has outstanding run on the store at the same time
//! (native only: a page cannot start threads).
//!
//! [`crate::run`] keeps every request of a machine in flight at once, but over the
//! [`SyncDriver`] a request runs when its stream is first polled, on the caller's thread, so
//! the ~100 outstanding syncs of a migration pass are served one after the other: one fsync
//! per write on a durable redb file (whose group commit shares one among *concurrent*
//! writers), one round trip per call to Bigtable. Here a call hands its request to a worker
//! and returns the receiving end of a channel; the worker runs it as the [`SyncDriver`]
//! does ([`StoreCall`](crate::StoreCall): the same parts, `StreamEnd`, errors) and sends each
//! item on, waking the caller, which [`crate::block_on`] parks meanwhile. A stream that is
//! not read holds its worker after a few parts (the channel is bounded), so a long scan is
//! never materialised; dropping it (an abort) stops the worker at its next part, or before
//! the request runs if it is still queued.
//!
//! Time, waits, cancellation and table administration are the [`SyncDriver`]'s, on the
//! caller's thread. Answers arrive in whatever order the store gives them, so a run over it
//! is not deterministic: tests and the simulator use the [`SyncDriver`].

use core::future::{Future, poll_fn};
use core::pin::pin;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::sync::{Mutex, PoisonError};

use futures_core::Stream;
use rowkit_statemachines::{Code, Request, Response, StoreError, Timestamp};
use rowkit_store::Store;
use rowkit_store::driver::Clock;

use crate::driver::forward_admin;
use crate::{Driver, SyncDriver};

/// The worker threads the CLI's migrators run with. A migration pass keeps ~100 requests
/// outstanding; 16 at once already made the migration ~10× faster on a durable redb file
/// (benches/README.md, the migration row). Not tuned further: more threads mostly wait.
pub const POOL_WORKERS: usize = 16;

/// One item of a call's stream, as [`Driver::call`] yields it.
type Item = Result<Response, StoreError>;

/// Parts a worker may run ahead of the machine reading its stream (on top of the channel's
/// one slot per sender): enough that a reader of a scan rarely waits, few enough that a
/// scan nobody reads costs little memory.
const PARTS_AHEAD: usize = 8;

/// A request for a worker, and where its items go.
struct Job {
    request: Request,
    items: futures_channel::mpsc::Sender<Item>,
}

/// The driver over a sync [`Store`] whose requests run on worker threads (see the module
/// doc). Made, and its workers joined, by [`PoolDriver::scope`].
pub struct PoolDriver<'p, S: ?Sized, C: ?Sized> {
    /// Time, waits, cancellation and administration.
    sync: SyncDriver<&'p S, &'p C>,
    /// The workers' queue.
    jobs: mpsc::Sender<Job>,
}

impl<S: ?Sized, C: ?Sized> core::fmt::Debug for PoolDriver<'_, S, C> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PoolDriver").finish_non_exhaustive()
    }
}

impl<'p, S, C> PoolDriver<'p, S, C>
where
    S: Store + ?Sized,
    C: Clock + Sync + ?Sized,
{
    /// Runs `body` with a driver whose requests run on `workers` threads (at least one)
    /// executing on `store` at `clock`'s time; the threads end, and are joined, when `body`
    /// returns. E.g. `PoolDriver::scope(&store, &clock, 16, |d| block_on(run(d, machine, …)))`.
    pub fn scope<R>(
        store: &'p S,
        clock: &'p C,
        workers: usize,
        body: impl FnOnce(&PoolDriver<'p, S, C>) -> R,
    ) -> R {
        let (jobs, queue) = mpsc::channel();
        let queue = Mutex::new(queue);
        let sync = SyncDriver::new(store, clock);
        std::thread::scope(|threads| {
            let queue = &queue;
            for _ in 0..workers.max(1) {
                threads.spawn(move || serve(sync, queue));
            }
            // Dropped when `body` returns or unwinds: the queue closes and the workers end.
            let driver = PoolDriver { sync, jobs };
            body(&driver)
        })
    }

    /// The store.
    pub fn store(&self) -> &S {
        self.sync.store()
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        self.sync.clock()
    }
}

/// A worker: takes jobs until the driver is gone.
fn serve<S, C>(sync: SyncDriver<&S, &C>, queue: &Mutex<mpsc::Receiver<Job>>)
where
    S: Store + ?Sized,
    C: Clock + ?Sized,
{
    loop {
        // The lock is held while waiting, so one idle worker waits on the queue and the others
        // on the lock: either way the next job wakes exactly one.
        let job = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(Job { request, mut items }) = job else {
            return;
        };
        // A store that panics answers INTERNAL, so the machine hears of its request, and the
        // worker stays for the next one.
        let run = catch_unwind(AssertUnwindSafe(|| forward(&sync, request, &mut items)));
        if run.is_err() {
            let panicked = StoreError::new(Code::Internal, "the store panicked running a request");
            let _ = send(&mut items, Err(panicked));
        }
    }
}

/// Runs `request` as the sync driver does and sends its items on, until the last or until
/// the caller drops its stream.
fn forward<S, C>(
    sync: &SyncDriver<&S, &C>,
    request: Request,
    items: &mut futures_channel::mpsc::Sender<Item>,
) where
    S: Store + ?Sized,
    C: Clock + ?Sized,
{
    // Abandoned while queued: not run at all.
    if items.is_closed() {
        return;
    }
    let mut call = pin!(sync.call(request));
    // The sync driver's stream is always ready: each poll runs the store's next step.
    while let Some(item) = crate::block_on(poll_fn(|cx| call.as_mut().poll_next(cx))) {
        if send(items, item).is_err() {
            return;
        }
    }
}

/// Sends `item` once the caller has room for it (waiting parks the worker).
fn send(
    items: &mut futures_channel::mpsc::Sender<Item>,
    item: Item,
) -> Result<(), futures_channel::mpsc::SendError> {
    crate::block_on(poll_fn(|cx| items.poll_ready(cx)))?;
    items.start_send(item)
}

impl<S, C> Driver for PoolDriver<'_, S, C>
where
    S: Store + ?Sized,
    C: Clock + Sync + ?Sized,
{
    fn now(&self) -> Timestamp {
        self.sync.now()
    }

    /// Queues `request` for the next free worker; the stream yields its items as they come.
    fn call(&self, request: Request) -> impl Stream<Item = Item> {
        let (items, answers) = futures_channel::mpsc::channel(PARTS_AHEAD);
        if let Err(mpsc::SendError(job)) = self.jobs.send(Job { request, items }) {
            // Every worker is gone (only while the scope unwinds): answered at once. A fresh
            // channel has its sender's slot free, so this cannot fail.
            let mut items = job.items;
            let gone = StoreError::new(Code::Unavailable, "the driver's workers have stopped");
            let _ = items.try_send(Err(gone));
        }
        answers
    }

    fn sleep_until(&self, at: Timestamp) -> impl Future<Output = ()> {
        self.sync.sleep_until(at)
    }

    /// As the [`SyncDriver`]'s: the wait blocks the thread (or jumps a manual clock), so
    /// [`crate::run`] waits only when nothing is in flight; a worker's answer cannot be held
    /// back by a sleep, nor a manual clock jump while requests run.
    fn blocking_waits(&self) -> bool {
        true
    }

    forward_admin!(self => self.sync);
}
