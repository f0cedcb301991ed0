//! The live layout migration of object metadata (issue 36, `docs/migration.md` §2–§4): a
//! bucket's rows are copied from one key layout (`from`, v0 or v1) into the other (`to`) beside
//! the running application, kept equal by one conditional sync step per key until the bucket's
//! `vFormat` flips, and the old layout is then removed. Only the row keys differ between the
//! layouts; documents and cells are copied byte for byte.
//!
//! The pure parts live here, the machines in `rowkit_statemachines::objmeta::migrate`:
//!
//! - [`marker`]: where the marker and the checkpoint live on the bucket's metastore row
//!   (§2.1), their JSON texts (§2.2, §7.1), the states and their transitions (§3), and the
//!   conditional writes that change them (§2.2, §4.5, §4.7, §7.1).
//! - [`sync`]: the key mapping between the layouts and its blocking findings (§4.1), the sync
//!   stamp `f:rowkitSync` and the named predicates and mutations built on it (§4.2), and the
//!   classification of a pair of rows as read (§4.3 step 2) with the writes it calls for, and
//!   the writes of the deletion passes: the clean-up (§4.7) and the rollback (§4.9).
//! - [`pass`]: the pages of a pass (§4.4): the pair key both layouts' rows are merged by, and
//!   the row ranges of a layout's objects in an interval of pair keys.

pub mod marker;
pub mod pass;
pub mod sync;

/// Which layout decides every operation's outcome (shared with the trace store).
pub use crate::migration::Truth;
