//! Pure codecs for rowkit: the Bigtable wide-column model and, per schema, the exact row-key and
//! cell encodings of the original systems.
//!
//! Everything here is `no_std` + `alloc`, does no I/O, reads no clock and draws no randomness.
//! The [`model`] module is the one description of Bigtable's data model that every store, adapter
//! and machine in rowkit targets: keys, families, qualifiers, [`model::Timestamp`]s, cells, row
//! sets, filters, mutations and read-modify-write rules, with validation of the production limits
//! as typed errors.
//!
//! ```
//! use rowkit_codec::model::{Mutation, RowRange, Timestamp, validate_mutation};
//!
//! let set = Mutation::SetCell {
//!     family: "cf".into(),
//!     qualifier: b"q".to_vec(),
//!     timestamp: Timestamp::from_millis(1),
//!     value: b"v".to_vec(),
//! };
//! assert!(validate_mutation(&set).is_ok());
//!
//! // A prefix scan is a half-open range up to the prefix's successor.
//! let range = RowRange::prefix(b"user#");
//! assert!(range.contains(b"user#42"));
//! assert!(!range.contains(b"user$"));
//! ```
#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

extern crate alloc;
#[cfg(any(test, feature = "std"))]
extern crate std;

pub mod civil;
mod digits;
pub mod escape;
pub mod explain;
pub mod migration;
pub mod model;
pub mod mounttable;
pub mod objmeta;
pub mod segment;
pub mod tracestore;
pub mod triples;
pub mod validate;
