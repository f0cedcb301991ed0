//! Sans-IO state machines for rowkit.
//!
//! This crate holds the Bigtable request vocabulary ([`Request`], [`Response`],
//! [`StoreError`]), the [`Machine`] protocol every operation follows, the ReadRows chunk merger
//! with resume ([`readrows`]), and the generic machines for raw requests ([`raw`]). It does no
//! I/O, reads no clock and draws no OS randomness: time arrives as a [`Timestamp`] argument and
//! randomness from a caller-given seed. Drivers (embedded sync, Tokio, wasm) do the I/O.
//!
//! ```
//! use rowkit_codec::model::{Mutation, Timestamp};
//! use rowkit_statemachines::raw::Unary;
//! use rowkit_statemachines::{Machine, MutateRowRequest, Request, Response};
//!
//! let request = Request::MutateRow(MutateRowRequest {
//!     table: "t".into(),
//!     app_profile_id: String::new(),
//!     row_key: b"r".to_vec(),
//!     mutations: vec![Mutation::DeleteFromRow],
//! });
//! let mut m = Unary::new(request);
//! let (tag, _request) = m.poll_request().unwrap();
//! m.handle_response(tag, Ok(Response::MutateRow), Timestamp(0));
//! assert_eq!(m.result(), Some(Ok(Response::MutateRow)));
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

mod attempt;
pub mod check;
pub mod children;
mod machine;
pub mod mounttable;
pub mod objmeta;
pub mod operation;
#[cfg(feature = "_planted_bugs")]
#[doc(hidden)]
pub mod planted;
pub mod raw;
pub mod readrows;
mod request;
mod retry;
mod rng;
pub mod tracestore;
pub mod triples;

pub use machine::{Machine, Tag, TagAllocator};
pub use request::{
    CellChunk, CheckAndMutateRowRequest, MutateRowRequest, MutateRowsEntry, MutateRowsEntryResult,
    MutateRowsRequest, MutateRowsResponse, ReadModifyWriteRowRequest, ReadRowsRequest,
    ReadRowsResponse, Request, Response, RowStatus, SampleRowKeysRequest, SampleRowKeysResponse,
    StoreError,
};
pub use retry::{Backoff, RetryPolicy};
pub use rng::SplitMix64;
pub use rowkit_codec::model::{Code, Timestamp};
