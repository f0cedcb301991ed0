//! Cloud Bigtable adapter over gRPC (Tokio + tonic): executes rowkit's request vocabulary
//! against Cloud Bigtable or the emulator, and nothing more — every decision (retries, resume,
//! row merging) stays in the sans-IO machines of `rowkit-statemachines`.
//!
//! - The conversion rowkit <-> prost at the edge is `rowkit-proto` (shared with rowkit's gRPC
//!   server); [`status_to_error`] reads a `tonic::Status` as a [`StoreError`].
//! - [`Target`] parses `bigtable://PROJECT/INSTANCE[?emulator=HOST:PORT|?endpoint=URL[&ca=FILE]]`,
//!   `BIGTABLE_EMULATOR_HOST`.
//! - [`BigtableConnection`]: async, one RPC per call, table admin; routing header, feature
//!   flags and bearer tokens ([`TokenProvider`], [`credentials::GoogleCredentials`]).
//! - [`BigtableStore`]: the blocking `rowkit_store::Store`, so sync code runs unchanged.
//!
//! Async code runs machines over a connection with `rowkit-client`'s `TokioDriver` and its one
//! driving loop (`rowkit_client::run`), which keeps every request of a machine in flight at
//! once; the typed API of the four schemas runs the same way.
//!
//! ```
//! use rowkit_bigtable::{Endpoint, Target};
//! let t = Target::parse_with_emulator_env("bigtable://p/i?emulator=127.0.0.1:8086", None).unwrap();
//! assert_eq!(t.endpoint, Endpoint::Emulator("127.0.0.1:8086".into()));
//! assert_eq!(t.table_name("t"), "projects/p/instances/i/tables/t");
//! ```
#![forbid(unsafe_code)]

mod auth;
mod connection;
pub mod credentials;
mod status;
mod store;
mod target;
mod transport;

pub use auth::{HeadersFuture, StaticToken, TokenFuture, TokenProvider};
pub use connection::{
    AsyncReply, BigtableConnection, CONNECT_TIMEOUT, FEATURE_FLAGS, MAX_DECODING_MESSAGE_SIZE,
    PartStream, error_chain, percent_encode,
};
pub use rowkit_proto::MAX_ENCODING_MESSAGE_SIZE;
pub use rowkit_statemachines::{Request, Response, StoreError};
pub use status::status_to_error;
pub use store::{BigtableStore, TOKEN_ENV, new_runtime};
pub use target::{
    CLOUD_ADMIN_ENDPOINT, CLOUD_DATA_ENDPOINT, EMULATOR_HOST_ENV, Endpoint, Target, TargetError,
};
