//! [`TokioDriver`]: the driver over a [`BigtableConnection`] (Cloud Bigtable or the emulator,
//! `spec/sans-io.md` 4.2), feature `bigtable`.
//!
//! Every outstanding request of a machine is an HTTP/2 stream of its own; dropping one (an
//! abort) resets it. Waits are Tokio timers. Its futures are `Send`, so a facade call over it
//! can be `tokio::spawn`ed or awaited in an axum handler. It runs object metadata's repairs in
//! background tasks ([`SpawnRepairs`]).

use core::future::Future;
use std::sync::Arc;

use futures_core::Stream;
use rowkit_bigtable::BigtableConnection;
use rowkit_codec::model::ColumnFamily;
use rowkit_statemachines::{Request, Response, StoreError, Timestamp};
use rowkit_store::driver::{Clock, SystemClock};

use crate::Driver;
use crate::objmeta::{RepairJob, SpawnRepairs};

/// The Tokio driver: a connection and a clock (see the module doc).
#[derive(Clone)]
pub struct TokioDriver {
    conn: BigtableConnection,
    clock: Arc<dyn Clock + Send + Sync>,
}

impl core::fmt::Debug for TokioDriver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TokioDriver")
            .field("target", self.conn.target())
            .finish_non_exhaustive()
    }
}

impl TokioDriver {
    /// A driver on `conn` with wall-clock time.
    pub fn new(conn: BigtableConnection) -> TokioDriver {
        TokioDriver {
            conn,
            clock: Arc::new(SystemClock),
        }
    }

    /// The same driver with time from `clock` (tests inject a manual clock; a wait then runs
    /// Tokio's timer to the deadline and moves the clock there).
    pub fn with_clock(mut self, clock: Arc<dyn Clock + Send + Sync>) -> TokioDriver {
        self.clock = clock;
        self
    }

    /// The connection.
    pub fn connection(&self) -> &BigtableConnection {
        &self.conn
    }
}

impl Driver for TokioDriver {
    fn now(&self) -> Timestamp {
        self.clock.now()
    }

    fn call(&self, request: Request) -> impl Stream<Item = Result<Response, StoreError>> {
        self.conn.call(request)
    }

    async fn sleep_until(&self, at: Timestamp) {
        let wait =
            at.0.saturating_sub(self.clock.now().0)
                .max(0)
                .unsigned_abs();
        tokio::time::sleep(std::time::Duration::from_micros(wait)).await;
        // A wall clock is there already (Tokio's timer never fires early); a manual one
        // jumps.
        self.clock.sleep_until(at);
    }

    fn create_table(
        &self,
        table: &str,
        families: &[ColumnFamily],
    ) -> impl Future<Output = Result<(), StoreError>> {
        self.conn.create_table(table, families)
    }

    fn families(&self, table: &str) -> impl Future<Output = Result<Vec<ColumnFamily>, StoreError>> {
        self.conn.families(table)
    }

    fn delete_table(&self, table: &str) -> impl Future<Output = Result<(), StoreError>> {
        self.conn.delete_table(table)
    }

    fn set_family(
        &self,
        table: &str,
        family: &ColumnFamily,
    ) -> impl Future<Output = Result<(), StoreError>> {
        self.conn.set_family(table, family)
    }
}

impl SpawnRepairs for TokioDriver {
    /// A Tokio task over a clone of this driver (same connection and clock). Must be called
    /// inside a Tokio runtime, as every facade call over this driver is.
    fn spawn_repair(&self, job: RepairJob) {
        let driver = self.clone();
        // Detached: the facade aborts the job through its own handle and learns its end from
        // the job itself.
        drop(tokio::spawn(async move { job.run(&driver).await }));
    }
}
