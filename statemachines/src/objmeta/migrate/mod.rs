//! The live layout migration of object metadata (issue 36, `docs/migration.md` §2–§4) as
//! operations of the objmeta schema; the pure parts (key mapping, the sync stamp and its
//! predicates, the classification of a pair, the marker and checkpoint texts and their
//! conditional writes) are in [`rowkit_codec::objmeta::migration`].
//!
//! - [`marker`]: reading the bucket's migration state, changing the marker (the switch and the
//!   final removal included) and writing the checkpoint, each one conditional write that
//!   recognises its own lost response (§2, §4.5, §4.7, §4.8, §7.1).
//! - [`sync`]: [`SyncKey`](sync::SyncKey), the one sync step of a key (§4.3), used by every
//!   pass of the migrator and by aware writers' mirrors.
//! - [`pass`]: [`MigrationPass`](pass::MigrationPass), one pass over a bucket page by page —
//!   the copy pass, the verification, the light final pass and sweeps (§4.4–§4.6) — running
//!   `SyncKey` for every pair not in sync and writing the checkpoint after each page (§7) —
//!   and the deletion passes, the clean-up of `cleaning` and the rollback of `aborting` (§4.7,
//!   §4.9), whose per-pair step is `deletion`'s.
//! - [`aware`]: aware writers — every object write of a process that reads the marker runs
//!   its protocol on the truth, mirrors what it wrote with `SyncKey` and pauses in a fence
//!   (§2.3, §3, §4.3).
//! - [`run`]: [`MigrateBucket`](run::MigrateBucket), the migrator: one operation that drives
//!   a bucket through the states (§3) as far as the operator's gates allow, running the
//!   marker writes and the passes above inside it, and resuming a run from its marker and
//!   checkpoint (§7.2).

pub mod aware;
mod deletion;
pub mod marker;
pub mod pass;
pub mod run;
pub mod sync;
