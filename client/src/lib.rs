//! The typed API of rowkit's four schemas — [`MountTable`], [`TraceStore`],
//! [`ObjectMetadata`] and [`TripleStore`] — written once over a [`Driver`].
//!
//! A facade turns each call into one of `rowkit-statemachines`' machines and runs it with
//! [`run`], the one driving loop; a driver only starts requests, tells the time and waits.
//! So an operation cannot behave differently between drivers:
//!
//! - [`SyncDriver`]: any sync `rowkit_store::Store` (memory, redb, or Bigtable through the
//!   blocking `BigtableStore`) and a clock. Calls complete without waiting; sync callers wrap
//!   them in [`block_on`].
//! - `PoolDriver` (native): the sync driver with each request run on a pool of worker
//!   threads, so a machine's outstanding requests run on the store at once (the CLI's
//!   migrators).
//! - `TokioDriver` (feature `bigtable`): a `BigtableConnection`; its futures are `Send`.
//! - `FetchDriver` (feature `fetch`): a rowkit gateway from the browser (wasm32).
//!
//! [`not_set_up`] says what to do when a schema's table does not exist.
//!
//! Per-instance state (the mount table's hot-row cache, a trace store's OPS and digest ids,
//! object metadata's vFormat cache and pending repairs) is held once, by the facade.
//!
//! ```
//! use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};
//! use rowkit_client::{SyncDriver, block_on};
//! use rowkit_codec::mounttable::MountFlags;
//! use rowkit_store::MemoryStore;
//! use rowkit_store::driver::SystemClock;
//!
//! let store = MemoryStore::new();
//! let mt = MountTable::new(SyncDriver::new(&store, &SystemClock), MtConfig::default());
//! block_on(mt.setup(None)).unwrap();
//! block_on(mt.mount(&server_caller(), "x", "/host:1", 60, MountFlags(0))).unwrap();
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod calls;
mod driver;
#[cfg(feature = "fetch")]
mod fetch;
pub mod migration_json;
pub mod mounttable;
pub mod not_set_up;
pub mod objmeta;
#[cfg(not(target_arch = "wasm32"))]
mod pool;
mod row_cache;
mod sync;
#[cfg(feature = "bigtable")]
mod tokio;
pub mod tracestore;
pub mod triples;

pub use calls::CallOptions;
pub use driver::{Driver, RunError, block_on, ensure_table, run, run_operation, run_until};
#[cfg(feature = "fetch")]
pub use fetch::FetchDriver;
pub use mounttable::MountTable;
pub use objmeta::ObjectMetadata;
#[cfg(not(target_arch = "wasm32"))]
pub use pool::{POOL_WORKERS, PoolDriver};
pub use row_cache::RowCached;
pub use sync::{StoreCall, SyncDriver, read_rows_blocking, run_blocking};
#[cfg(feature = "bigtable")]
pub use tokio::TokioDriver;
pub use tracestore::TraceStore;
pub use triples::TripleStore;
