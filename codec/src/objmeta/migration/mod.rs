//! The live layout migration of a bucket between the v0 and v1 key formats
//! (`docs/migration.md`): the pure parts the migrator and the aware processes share.
//!
//! - [`marker`]: where the marker and the checkpoint live on the bucket's metastore row
//!   (§2.1), their JSON texts (§2.2, §7.1), the states and their transitions (§3), and the
//!   conditional writes that change them (§2.2, §4.5, §4.7, §7.1).

pub mod marker;
