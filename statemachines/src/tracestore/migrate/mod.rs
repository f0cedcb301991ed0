//! The live layout migration of a trace store (`docs/migration.md` §5): a Gold table `T1` of
//! one layout (md5 or digest-id) copied into a table `T2` of the other, point by point with
//! the source's timestamps, beside the running Gold writers, until every process uses `T2`.
//! The records (marker, checkpoint, states) are the ones both schemas share
//! ([`rowkit_codec::migration`], their trace-store place [`rowkit_codec::tracestore::migration`]);
//! the marker machines are [`crate::migration`]'s.
//!
//! The migration's operations run on both tables at once: their context is a [`TablePair`]
//! (one [`TraceStoreState`] per table: the target's OPS, digest map, id counter and pool are
//! its own, §5.1), their schema [`TraceMigrationSchema`]; inside them the trace store's own
//! flows (the tile reader, `UpdateOps`, `AssignDigestIds`, Put's chunked writes) run on the
//! side they concern.
//!
//! - [`marker`]: a table's marker row as read ([`TraceMigrationRead`](marker::TraceMigrationRead)).
//! - [`copy_tile`]: [`CopyTile`](copy_tile::CopyTile), the one sync step (§5.3), and the
//!   points of a tile both tables are compared by (§5.5).
//! - [`compare`]: [`UnsettledPoints`](compare::UnsettledPoints), the source points the
//!   target neither holds nor supersedes (`check`'s `write_after_switch`, §6.3).
//! - [`pass`]: [`TilePass`](pass::TilePass), the copy pass and the verification, tile by tile
//!   with checkpoints and progress events (§5.4, §5.5, §7).
//! - [`run`]: [`MigrateTraceStore`](run::MigrateTraceStore), the migrator over both tables
//!   (§3, §5.4, §5.5, §5.9's first row, §7.2).

pub mod compare;
pub mod copy_tile;
pub mod marker;
pub mod pass;
pub mod run;

use alloc::string::String;

use super::{TraceStoreError, TraceStoreEvent, TraceStoreState};
use crate::operation::Schema;

/// The migration's operations: they run on a [`TablePair`], emit [`TraceStoreEvent`]s and
/// fail with [`TraceStoreError`]s, so that the trace store's flows run inside them.
#[derive(Debug)]
pub struct TraceMigrationSchema;

impl Schema for TraceMigrationSchema {
    type Context = TablePair;
    type Event = TraceStoreEvent;
    type Error = TraceStoreError;
}

/// The two tables of a migration (§5.1), each with its own state.
#[derive(Clone, Debug)]
pub struct TablePair {
    /// `T1`, the table being left (its layout is the migration's `from`).
    pub source: TraceStoreState,
    /// `T2`, the table being reached (its layout is the migration's `to`).
    pub target: TraceStoreState,
}

impl TablePair {
    /// The pair of `source` and `target`.
    pub fn new(source: TraceStoreState, target: TraceStoreState) -> TablePair {
        TablePair { source, target }
    }

    /// The state of `side`.
    pub fn side(&mut self, side: Side) -> &mut TraceStoreState {
        match side {
            Side::Source => &mut self.source,
            Side::Target => &mut self.target,
        }
    }
}

/// One of the two tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// `T1`.
    Source,
    /// `T2`.
    Target,
}

/// What a migration step reports along the way (`docs/migration.md` §7.3), emitted as
/// [`TraceStoreEvent::Migrate`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceMigrateEvent {
    /// After every tile of a pass, once its checkpoint is written: the objmeta pass's progress
    /// (the same counters, rate and ETA).
    Progress(crate::objmeta::migrate::pass::PassProgress),
    /// A straggler's point adopted by a sweep (§5.6): a source point written into the target.
    Straggler {
        /// The trace id text.
        trace: String,
        /// The repo index.
        commit: u32,
        /// The point's timestamp.
        ts: rowkit_codec::model::Timestamp,
    },
    /// A source point the target holds at the same `ts` with another digest (§5.6): reported,
    /// left in the source.
    Conflict {
        /// The trace id text.
        trace: String,
        /// The repo index.
        commit: u32,
        /// The point's timestamp.
        ts: rowkit_codec::model::Timestamp,
    },
    /// A finding of the check of the target before the switch (§5.5, §8), marked whether
    /// the source has it too (the same kind on the same row key): only those that it does
    /// not have block the switch.
    Finding(crate::objmeta::migrate::pass::PassFinding),
    /// The migrator changed the source's marker (the run's state, §3): `None` is "no marker".
    StateChanged {
        /// The state before the change.
        from: Option<rowkit_codec::migration::MigrationState>,
        /// The state after it.
        to: Option<rowkit_codec::migration::MigrationState>,
    },
}
