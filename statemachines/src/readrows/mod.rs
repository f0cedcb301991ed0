//! ReadRows on the client side: the chunk merger (`spec/bigtable.md` 15) and the ReadRows
//! machine that nests it with retry and resume.
//!
//! - [`ChunkMerger`] turns `ReadRowsResponse` chunks into committed
//!   [`Row`](rowkit_codec::model::Row)s, checking every rule of the protocol, and takes whole
//!   rows ([`Response::Rows`](crate::Response::Rows)) from stores in the same process under the
//!   same order and limit rules; [`row_chunks`] is its inverse.
//! - [`resume_request`] / [`next_attempt`] build the request of the next attempt from the
//!   original request and what was read.
//! - [`ReadRows`] is the [`Machine`](crate::Machine) drivers run: rows as events, retries with
//!   seeded back-off, resume under a new tag.
//! - [`ReadRow`] reads one row as a point read ([`Request::ReadRow`](crate::Request::ReadRow)),
//!   retried as a one-key [`ReadRows`] would be.

mod chunks;
mod machine;
mod merger;
mod point;
mod resume;

pub use chunks::row_chunks;
pub use machine::{ReadRows, ReadRowsRule};
pub use merger::{ChunkMerger, MergeError, MergeState};
pub use point::{ReadRow, ReadRowRule};
pub use resume::{next_attempt, resume_request};
