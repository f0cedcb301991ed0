//! The live layout migration of object metadata (issue 36, `docs/migration.md` §4) as machines
//! of the objmeta schema; the pure parts (key mapping, the sync stamp and its predicates, the
//! classification of a pair) are in `rowkit_codec::objmeta::migration`.
//!
//! - [`sync`]: [`SyncKey`](sync::SyncKey), the one sync step of a key (§4.3), used by every
//!   pass of the migrator and by aware writers' mirrors.

pub mod sync;
