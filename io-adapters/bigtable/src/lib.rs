//! Cloud Bigtable adapter over gRPC (Tokio + tonic): executes rowkit requests against Cloud Bigtable or the emulator. Built by the native-adapter issue.
//!
//! Until then the crate re-exports the request vocabulary it will execute:
//!
//! ```
//! use rowkit_bigtable::Request;
//! fn is_read(r: &Request) -> bool { matches!(r, Request::ReadRows(_)) }
//! # let _ = is_read;
//! ```
#![forbid(unsafe_code)]

pub use rowkit_statemachines::{Request, Response, StoreError};
