//! Scality Arsenal's object metadata on Bigtable rows (`spec/objmeta.md`): the pure parts.
//!
//! - [`version_id`]: version-id generation, the infinite id, base62 / hex external encodings.
//! - [`keys`]: master / version keys (v0, v1), `inc`, collections and row keys, row-key decoding.
//! - [`json`]: JSON documents with JavaScript semantics (member order, doubles, stringify).
//! - [`cells`]: documents as cells (`REPLACE`), the named filters, tag-key escaping.
//! - [`range`]: Arsenal key ranges and their row ranges.
//! - [`listing`]: the listing algorithms (`Delimiter`, `DelimiterMaster`, `DelimiterVersions`).
//! - [`migration`]: the live layout migration v0 ↔ v1 (`docs/migration.md` §4): key mapping, the
//!   sync stamp and its predicates, the classification of a pair of rows, the marker, its
//!   states and the checkpoint.

pub mod cells;
mod error;
pub mod json;
pub mod keys;
pub mod listing;
pub mod migration;
pub mod range;
pub mod version_id;

pub use error::ObjmetaCodecError;
