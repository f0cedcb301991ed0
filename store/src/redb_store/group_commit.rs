//! Group commit: concurrent durable row writes share one fsync.
//!
//! With durable commits on, a row write commits with `Durability::None` (no fsync; the commit
//! is ordered after every earlier one, since redb runs one writer at a time) and takes a
//! sequence number; it is acknowledged (its `write_row` returns) only once a durable commit
//! made after it has returned. The first writer that finds its commit not yet on disk becomes
//! the leader: it makes one empty commit with `Durability::Immediate` ([`RedbStore::sync`])
//! and wakes every writer whose commit preceded it; writers that commit during that fsync wait
//! for the next leader, so one fsync serves every writer of a group. A lone writer leads its
//! own group at once: one non-durable commit plus one durable empty commit, still one fsync.
//!
//! Why it keeps the guarantees. redb documents `Durability::None` as "will not be persisted to
//! disk unless followed by a commit with [`Durability::Immediate`]", and `Immediate` as
//! "persistent as soon as `WriteTransaction::commit` returns": a durable commit persists the
//! database state it commits, which is built on every earlier commit, durable or not. So:
//!
//! - A crash loses only commits made after the last durable one: a suffix of the commit order.
//!   A write is acknowledged only after a durable commit that followed its own, so a crash
//!   never loses an acknowledged write, and no acknowledged write depends on a lost one (what
//!   it read or replaced was committed before it, hence before the durable commit too).
//! - A write transaction that commits nothing (a predicate that chose no mutation) may still
//!   have read commits not on disk yet: it waits for them as a writer would
//!   ([`SyncGroups::seen`]), so its answer never rests on data a crash could take back.
//! - Readers do not see a grouped commit before it is on disk: while any is pending they read
//!   the snapshot pinned at the last point where everything they may see was on disk
//!   ([`SyncGroups::read_point`]), so no read returns a value a crash could take back. A
//!   writer's own acknowledged write is in the snapshot its later reads get (the leader pins
//!   a new one with every durable commit, before waking the writers).
//! - A failed durable commit fails every writer it was to make durable (and every writer
//!   waiting then): none is acknowledged, though, as redb says of a failed commit, their data
//!   may have reached the disk anyway — an error never claims the write was not applied,
//!   which is Bigtable's contract for a failed mutation too. After a panic inside redb the
//!   store's damage record fails the next leader's sync at once (`DATA_LOSS`), so its group
//!   fails with that error.
//!
//! [`RedbStore::sync`]: super::RedbStore::sync

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use redb::ReadTransaction;
use rowkit_statemachines::StoreError;

/// The sequence numbers of grouped commits and how far they are on disk.
#[derive(Default)]
pub(super) struct SyncGroups {
    state: Mutex<SyncState>,
    /// Signalled when a leader finishes (synced or failed).
    finished: Condvar,
}

#[derive(Default)]
struct SyncState {
    /// Grouped commits begun so far: each takes the count after its own as sequence number.
    started: u64,
    /// Every grouped commit numbered up to this is on disk.
    synced: u64,
    /// Whether a writer is making the durable commit for the others.
    leading: bool,
    /// The last failed sync: the sequence numbers it failed, `(after, through]`, and why.
    failed: Option<(u64, u64, StoreError)>,
    /// The snapshot readers get while grouped commits are pending: the state at the last
    /// durable commit, or just before the first grouped commit after commits of another kind.
    visible: Option<Arc<ReadTransaction>>,
    /// Whether a commit outside the groups (non-durable mode) made `visible` out of date.
    visible_stale: bool,
}

impl SyncGroups {
    /// The state; whole even if a holder panicked (nothing that can panic runs under it).
    fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The ticket of a write transaction that is about to end without a grouped commit of its
    /// own (it committed nothing, or committed outside the groups): the grouped commits it
    /// could see. Called while holding redb's writer.
    pub(super) fn seen(&self) -> u64 {
        self.lock().started
    }

    /// Numbers a grouped commit that its caller, holding redb's writer, is about to make, and
    /// returns its ticket. If nothing is pending and `visible` is out of date, first pins the
    /// current state (`begin_read`: everything readers may see, since nothing is pending) for
    /// readers to use until this commit is on disk.
    pub(super) fn start_grouped(
        &self,
        begin_read: impl FnOnce() -> Result<ReadTransaction, StoreError>,
    ) -> Result<u64, StoreError> {
        let refresh = {
            let state = self.lock();
            state.started == state.synced && (state.visible_stale || state.visible.is_none())
        };
        // redb's writer is held: no commit can happen between the check and the pin.
        let pinned = if refresh {
            Some(Arc::new(begin_read()?))
        } else {
            None
        };
        let mut state = self.lock();
        if let Some(pinned) = pinned {
            state.visible = Some(pinned);
            state.visible_stale = false;
        }
        state.started += 1;
        Ok(state.started)
    }

    /// Notes a commit made outside the groups (non-durable mode, or one whose outcome is
    /// unknown): readers' pinned snapshot misses it.
    pub(super) fn committed_outside(&self) {
        self.lock().visible_stale = true;
    }

    /// Records a durable commit that succeeded: the grouped commits numbered up to `target`
    /// (the count taken while holding redb's writer, before the commit) are on disk, and
    /// `pinned` (begun at the same point) is what readers may now see.
    pub(super) fn durable(&self, target: u64, pinned: ReadTransaction) {
        let mut state = self.lock();
        state.synced = state.synced.max(target);
        state.visible = Some(Arc::new(pinned));
        state.visible_stale = false;
    }

    /// Returns once the grouped commits up to `ticket` are on disk, making the durable commit
    /// with `sync` if no other writer is making one; `Err` if the sync meant to cover them
    /// failed.
    pub(super) fn wait(
        &self,
        ticket: u64,
        sync: impl Fn() -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut state = self.lock();
        loop {
            // Synced first: a later sync that succeeded did put the data on disk.
            if state.synced >= ticket {
                return Ok(());
            }
            if let Some((after, through, error)) = &state.failed
                && *after < ticket
                && ticket <= *through
            {
                return Err(error.clone());
            }
            if state.leading {
                state = self
                    .finished
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            state.leading = true;
            drop(state);
            let mut leader = Leader {
                groups: self,
                failed: None,
            };
            leader.failed = sync().err();
            // Its drop records the outcome and wakes the group.
            drop(leader);
            state = self.lock();
        }
    }

    /// The read transaction a reader opens tables from: a new one, unless grouped commits
    /// are pending (or begin while it opens), in which case the pinned snapshot.
    pub(super) fn read_point(
        &self,
        begin_read: impl Fn() -> Result<ReadTransaction, StoreError>,
    ) -> Result<Arc<ReadTransaction>, StoreError> {
        loop {
            let started = {
                let state = self.lock();
                match &state.visible {
                    Some(visible) if state.started > state.synced => {
                        return Ok(Arc::clone(visible));
                    }
                    _ => state.started,
                }
            };
            let txn = begin_read()?;
            let state = self.lock();
            if state.started == started {
                // No grouped commit began before the snapshot: it holds only what may be seen.
                return Ok(Arc::new(txn));
            }
            // One did, and pinned `visible` before it: take that on the next turn.
        }
    }
}

/// The leader of a group while it syncs: records how the sync ended and wakes the waiters
/// when dropped, also if the sync panicked (then the next waiter leads).
struct Leader<'a> {
    groups: &'a SyncGroups,
    failed: Option<StoreError>,
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        let mut state = self.groups.lock();
        state.leading = false;
        if let Some(error) = self.failed.take() {
            // Every commit not on disk now was to be covered by this sync, or began after it
            // failed (and will be refused by the same failed file): none is acknowledged.
            state.failed = Some((state.synced, state.started, error));
        }
        drop(state);
        self.groups.finished.notify_all();
    }
}
