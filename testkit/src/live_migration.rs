//! Writers that write while a layout migration runs (`docs/migration.md` issue 36's acceptance
//! test and the migration bench), and the record of what they were acknowledged.
//!
//! - [`Workload`] / [`WriterPool`]: several writer threads, each with a client of its own (a
//!   separate process's state), looping over one write each until told to stop. Any error
//!   fails the pool: a writer unaware of the migration must never see one.
//! - [`objmeta`]: the object-metadata half: a bucket loaded through `putObject`, writers doing
//!   puts, overwrites, deletes and versioned puts over the whole bucket, the expected final
//!   state built from their acknowledgements only, and [`objmeta::ObjmetaWorkload::verify`],
//!   which reads the bucket back through `getObject` / `listObject`, the check and the raw
//!   rows.
//! - [`tracestore`]: the trace-store half: an md5 table loaded through the trace store's
//!   `Put`, Gold writers putting new commits and overwriting points on the source table, then
//!   (restarted after the switch) on the target, and [`tracestore::TraceWorkload::verify`],
//!   which reads the target back through the facade, checks it and reads both tables' raw rows.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rowkit_codec::migration::MigrationState;
use rowkit_statemachines::SplitMix64;
use rowkit_store::Store;

pub mod objmeta;
pub mod tracestore;

/// Opens a connection to the store under test: one per client, as separate processes have.
pub type StoreFactory = Box<dyn Fn() -> Arc<dyn Store> + Send + Sync>;

/// What a migrator's progress event said: the state, the pass number, the pass's rows
/// scanned so far (both schemas' `PassProgress`, the CLI's JSON Lines). The in-process
/// migrators also report each change of state as it happens (`StateChanged`: pass 0, no
/// rows), so that the copy's end is seen before the first tile or page of the next pass.
#[derive(Clone, Copy, Debug)]
pub struct MigrateProgress<'a> {
    /// The migration state (`copying`, `verifying`, …).
    pub state: &'a str,
    /// The pass number.
    pub pass: u64,
    /// Rows the pass has read (both layouts, or both tables, in a verification).
    pub rows_scanned: u64,
}

impl MigrateProgress<'static> {
    /// The report of a change of state into `to`.
    pub fn state_changed(to: MigrationState) -> MigrateProgress<'static> {
        MigrateProgress {
            state: to.as_str(),
            pass: 0,
            rows_scanned: 0,
        }
    }
}

/// What the writers of one schema do: a client per writer thread and one write at a time,
/// each acknowledged write recorded in the workload's expected state.
pub trait Workload: Send + Sync + 'static {
    /// One writer's client: a process's own state (caches, id generators).
    type Client;

    /// A fresh client for writer `writer` of phase `phase` (a restarted process: fresh caches).
    fn client(&self, writer: usize, phase: u32) -> Self::Client;

    /// One write by `writer` (of `writers`) with `client`, its randomness from `rng`; records
    /// the write once acknowledged. An error is the test's failure, as text.
    fn write_once(
        &self,
        client: &Self::Client,
        writer: usize,
        writers: usize,
        rng: &mut SplitMix64,
    ) -> Result<(), String>;
}

/// Writer threads of one phase; they write until [`WriterPool::stop`].
pub struct WriterPool {
    stop: Arc<AtomicBool>,
    acks: Arc<AtomicU64>,
    started: Instant,
    threads: Vec<JoinHandle<Result<(), String>>>,
}

/// What a phase's writers did.
#[derive(Clone, Copy, Debug)]
pub struct WritersReport {
    /// Writes acknowledged.
    pub acks: u64,
    /// From start to stop.
    pub elapsed: Duration,
}

impl WritersReport {
    /// Acknowledged writes per second.
    pub fn per_second(&self) -> f64 {
        self.acks as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl WriterPool {
    /// Starts `writers` threads of phase `phase` over `workload`, writer `w` drawing from
    /// `SplitMix64::new(seed ^ phase ^ w)`; each writes at most once per `pace` (zero: as fast
    /// as the store answers).
    pub fn start<W: Workload>(
        workload: &Arc<W>,
        writers: usize,
        phase: u32,
        seed: u64,
        pace: Duration,
    ) -> WriterPool {
        let stop = Arc::new(AtomicBool::new(false));
        let acks = Arc::new(AtomicU64::new(0));
        let threads = (0..writers)
            .map(|w| {
                let (workload, stop, acks) =
                    (Arc::clone(workload), Arc::clone(&stop), Arc::clone(&acks));
                std::thread::spawn(move || {
                    let client = workload.client(w, phase);
                    let mut rng = SplitMix64::new(seed ^ (u64::from(phase) << 32) ^ w as u64);
                    let mut next = Instant::now();
                    while !stop.load(Ordering::SeqCst) {
                        next += pace;
                        workload
                            .write_once(&client, w, writers, &mut rng)
                            .map_err(|e| format!("writer {w} of phase {phase}: {e}"))?;
                        acks.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(next.saturating_duration_since(Instant::now()));
                    }
                    Ok(())
                })
            })
            .collect();
        WriterPool {
            stop,
            acks,
            started: Instant::now(),
            threads,
        }
    }

    /// Writes acknowledged so far.
    pub fn acks(&self) -> u64 {
        self.acks.load(Ordering::SeqCst)
    }

    /// A handle that stops the writers when set (e.g. from a migrator's progress callback).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// Stops the writers and waits for each to finish its write in flight; the first writer's
    /// error, if any.
    pub fn stop(self) -> Result<WritersReport, String> {
        self.stop.store(true, Ordering::SeqCst);
        let mut first_error = None;
        for t in self.threads {
            let result = t.join().unwrap_or_else(|_| Err("a writer panicked".into()));
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        let report = WritersReport {
            acks: self.acks.load(Ordering::SeqCst),
            elapsed: self.started.elapsed(),
        };
        first_error.map_or(Ok(report), Err)
    }
}
