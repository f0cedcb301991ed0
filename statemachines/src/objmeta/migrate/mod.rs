//! The live v0 ↔ v1 layout migration of a bucket (`docs/migration.md`) as objmeta
//! operations: the pure parts are in [`rowkit_codec::objmeta::migration`].
//!
//! - [`marker`]: reading the bucket's migration state, changing the marker (the switch and the
//!   final removal included) and writing the checkpoint, each one conditional write that
//!   recognises its own lost response (§2, §4.5, §4.7, §4.8, §7.1).

pub mod marker;
