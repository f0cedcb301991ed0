//! Garbage collection in the background of a server process (`rowkit serve`, with or without
//! `--grpc`: one task per process, whatever servers it runs over the store).
//!
//! Local stores collect only when asked (`spec/bigtable.md` 12), so without this a server's
//! file would grow with every overwrite beyond a family's `max_versions` / `max_age`. The task
//! runs on its own thread (stores block; the async runtime never runs it), walks every table in
//! [`Store::gc_page`] steps of [`GC_PAGE_ROWS`] rows, each a short batch of row transactions,
//! and pauses after each step for as long as the step took (between [`MIN_PAGE_PAUSE`] and
//! [`MAX_PAGE_PAUSE`]), so writers always get the store between steps and GC takes at most
//! about half of one core. After a full pass over every table it sleeps for the interval.
//! The first step of a table's pass also finishes the purge of a family dropped and not yet
//! purged (a drop a crash cut short, `rowkit_store::semantics`), so a restarted server
//! resumes it.
//! Network stores are left alone: their server collects by itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rowkit_store::Store;
use rowkit_store::driver::Clock;
use rowkit_statemachines::Code;

/// The default sleep between two full passes.
pub const DEFAULT_GC_INTERVAL: Duration = Duration::from_secs(5);

/// Rows read per [`Store::gc_page`] step (fewer when they are large: the step also stops
/// after `rowkit_store::semantics::GC_PAGE_BYTES`).
pub const GC_PAGE_ROWS: usize = 256;

/// The shortest pause after a step: even a step that found nothing lets writers in.
pub const MIN_PAGE_PAUSE: Duration = Duration::from_millis(1);

/// The longest pause after a step, however long it took (a step over huge rows): a pass over
/// a big table still ends within minutes.
pub const MAX_PAGE_PAUSE: Duration = Duration::from_millis(100);

/// What the GC thread and its owner share.
#[derive(Default)]
struct Shared {
    /// Set once, by [`BackgroundGc::stop`].
    stopping: Mutex<bool>,
    /// Wakes the thread from a pause when `stopping` is set.
    wake: Condvar,
    /// Cells deleted so far.
    deleted: AtomicU64,
    /// Full passes over every table finished so far.
    passes: AtomicU64,
}

impl Shared {
    /// Sleeps for `pause` unless stopped first; returns whether the task should go on.
    fn pause(&self, pause: Duration) -> bool {
        let stopping = self.stopping.lock().unwrap_or_else(PoisonError::into_inner);
        let (stopping, _) = self
            .wake
            .wait_timeout_while(stopping, pause, |stopping| !*stopping)
            .unwrap_or_else(PoisonError::into_inner);
        !*stopping
    }

    fn stopping(&self) -> bool {
        *self.stopping.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The running background GC of one process; [`BackgroundGc::stop`] (or dropping it) stops
/// it within one step.
pub struct BackgroundGc {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl BackgroundGc {
    /// Starts collecting `store`'s tables on a thread of its own, at the time `clock` says
    /// (for `max_age`), sleeping `interval` between full passes. Returns `None` (nothing
    /// started) when `interval` is zero (GC off) or the store is not in this process
    /// ([`Store::in_process`] false: Cloud Bigtable or its emulator collect by themselves).
    pub fn start(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock + Send + Sync>,
        interval: Duration,
    ) -> std::io::Result<Option<BackgroundGc>> {
        if interval.is_zero() || !store.in_process() {
            return Ok(None);
        }
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("rowkit-gc".into())
            .spawn({
                let shared = shared.clone();
                move || {
                    while !shared.stopping() {
                        if collect_every_table(&*store, &*clock, &shared) {
                            shared.passes.fetch_add(1, Ordering::Relaxed);
                        }
                        if !shared.pause(interval) {
                            break;
                        }
                    }
                }
            })?;
        Ok(Some(BackgroundGc {
            shared,
            thread: Some(thread),
        }))
    }

    /// Cells deleted so far.
    pub fn deleted(&self) -> u64 {
        self.shared.deleted.load(Ordering::Relaxed)
    }

    /// Full passes over every table finished so far.
    pub fn passes(&self) -> u64 {
        self.shared.passes.load(Ordering::Relaxed)
    }

    /// Stops the task and waits for its thread: the step in progress (one short batch) ends
    /// first, so no row transaction is cut short. Returns the cells deleted in all.
    pub fn stop(mut self) -> u64 {
        self.stop_and_join();
        self.deleted()
    }

    fn stop_and_join(&mut self) {
        *self
            .shared
            .stopping
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A panic in the task has been printed by the panic hook; nothing to add.
            let _ = thread.join();
        }
    }
}

impl Drop for BackgroundGc {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// One pass over every table; `false` if it was stopped before the end.
fn collect_every_table(store: &dyn Store, clock: &dyn Clock, shared: &Shared) -> bool {
    let tables = match store.list_tables() {
        Ok(tables) => tables,
        Err(e) => {
            eprintln!("rowkit: background GC cannot list the tables: {e}");
            return true;
        }
    };
    for table in tables {
        let mut after: Option<Vec<u8>> = None;
        loop {
            let started = Instant::now();
            let page = match store.gc_page(&table, after.as_deref(), GC_PAGE_ROWS, clock.now()) {
                Ok(page) => page,
                // Deleted since the listing: nothing left to collect.
                Err(e) if e.code == Code::NotFound => break,
                Err(e) => {
                    // Reported, and the table is tried again on the next pass.
                    eprintln!("rowkit: background GC of table {table}: {e}");
                    break;
                }
            };
            shared.deleted.fetch_add(page.deleted, Ordering::Relaxed);
            let pause = started.elapsed().clamp(MIN_PAGE_PAUSE, MAX_PAGE_PAUSE);
            if !shared.pause(pause) {
                return false;
            }
            match page.next_after {
                Some(key) => after = Some(key),
                None => break,
            }
        }
    }
    true
}
