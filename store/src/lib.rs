//! Local stores with exact Bigtable semantics, and the clocks the sync driver
//! (`rowkit_client::SyncDriver`) runs machines against them with.
//!
//! - [`MemoryStore`]: a pure in-memory store, the reference every other store is tested
//!   against; builds for wasm32.
//! - [`RedbStore`] (feature `redb`, default): a persistent, crash-safe store in one redb file,
//!   with cell-level keys and one write transaction per row mutation.
//!
//! Both implement [`TableStorage`] — raw row storage — and get [`Store`] (execution of any
//! [`Request`]) from the one evaluator in [`semantics`], so they cannot disagree on Bigtable's
//! rules.
//!
//! ```
//! use rowkit_codec::model::{ColumnFamily, Mutation, Timestamp};
//! use rowkit_store::{MemoryStore, Reply, Store};
//! use rowkit_statemachines::{MutateRowRequest, Request, Response};
//!
//! let store = MemoryStore::new();
//! store.create_table("t", &[ColumnFamily::new("cf")]).unwrap();
//! let set = Mutation::SetCell {
//!     family: "cf".into(),
//!     qualifier: b"q".to_vec(),
//!     timestamp: Timestamp::from_millis(1),
//!     value: b"v".to_vec(),
//! };
//! let request = Request::MutateRow(MutateRowRequest {
//!     table: "t".into(),
//!     row_key: b"r".to_vec(),
//!     mutations: vec![set],
//!     ..Default::default()
//! });
//! let reply = store.execute(request, Timestamp::from_secs(1)).unwrap();
//! assert!(matches!(reply, Reply::Unary(Response::MutateRow)));
//! ```
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

#[cfg(feature = "redb")]
mod backup;
pub mod driver;
mod memory;
#[cfg(feature = "redb")]
mod redb_guard;
#[cfg(feature = "redb")]
mod redb_store;
pub mod semantics;
mod store;

pub use memory::MemoryStore;
#[cfg(feature = "redb")]
pub use redb_store::RedbStore;
pub use rowkit_statemachines::{Request, Response, StoreError};
pub(crate) use store::NewestPerColumn;
pub use store::{
    BackupSummary, ChunkingOptions, EngineState, GcPage, Reply, RowWrite, ServerTime, Store,
    StoreOptions, TableStorage,
};
