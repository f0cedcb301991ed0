//! Deliberate bugs for the fault simulator's self-test (issue #9): the simulator must find
//! each of them. Not public API: this module, and the hooks that plant the bugs, exist only
//! with the `_planted_bugs` feature, which only rowkit-testkit's `planted-bugs` enables.

/// A bug a machine can be told to have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlantedBug {
    /// `RemoveTriples` leaves each triple's SPO cell behind.
    TriplesRemoveSkipsSpo,
    /// `GetObject` skips the placeholder check of `objmeta.md` 9.2 step 3: a placeholder
    /// master (`isPHD`) is returned as the object instead of resolving the latest version.
    ObjmetaGetSkipsPlaceholderCheck,
    /// `AllocateDigestIds` reads its pooled ids without removing them from the pool, so the
    /// next allocation of the same instance hands the same ids out again.
    TracestoreReusesPooledIds,
    /// The object-metadata migration's passes (`docs/migration.md` §4.4–§4.5) take a pair
    /// whose source was rewritten after its last sync (`from` row unstamped, `to` row stamped)
    /// for a pair in sync: the rewrite is never copied, and the switch makes the stale copy
    /// the truth.
    ObjmetaMigrateSkipsRewrittenSource,
    /// The trace-store migration's rollback (`docs/migration.md` §5.9) takes the target's
    /// first page for the last one, empty: it removes both markers and leaves the copied rows
    /// in `T2`.
    TraceMigrateAbortKeepsTarget,
}
