//! Group commit: concurrent durable row writes share one commit and one fsync.
//!
//! With durable commits on, a row write joins the pending write transaction ([`super::writer`])
//! and takes a sequence number while it holds redb's writer, but commits nothing; it is
//! acknowledged (its `write_row` returns) only once a durable commit made after it has
//! returned. The first writer that finds its row not yet on disk becomes the leader: it lets
//! the writers in flight add their rows (at most [`GATHER`]), then commits the pending
//! transaction with `Durability::Immediate` ([`RedbStore::sync`]) and wakes every writer whose
//! row it carried; writers that write during that commit wait for the next leader. A lone
//! writer leads its own group at once: one commit, one fsync, as a write alone would cost.
//! The gather matters on few cores: the writers the last commit woke are still being
//! scheduled when the first of them would otherwise lead the next commit alone.
//!
//! Why it keeps the guarantees. redb documents `Durability::None` as "will not be persisted to
//! disk unless followed by a commit with [`Durability::Immediate`]", and `Immediate` as
//! "persistent as soon as `WriteTransaction::commit` returns": a durable commit persists the
//! database state it commits, which is built on every earlier commit, durable or not. So:
//!
//! - A crash loses only rows written after the last durable commit: a suffix of the write
//!   order (redb runs one writer at a time). A write is acknowledged only after a durable
//!   commit that carried or followed it, so a crash never loses an acknowledged write, and no
//!   acknowledged write depends on a lost one (what it read or replaced was written before it,
//!   hence committed with it or earlier).
//! - A write that writes nothing (a predicate that chose no mutation) may still have read rows
//!   not on disk yet: it waits for them as a writer would ([`SyncGroups::seen`]), so its answer
//!   never rests on data a crash could take back.
//! - Readers do not see a grouped row before it is on disk: an uncommitted row is in no
//!   snapshot, and while any grouped row is not on disk (also one an admin call's commit
//!   carried non-durably) readers read the snapshot pinned at the last point where everything
//!   they may see was on disk ([`SyncGroups::read_point`]). A writer's own acknowledged write
//!   is in the snapshot its later reads get: the leader pins a new one right after each
//!   durable commit, still holding the writer, before waking the writers.
//! - A failed durable commit fails every writer it was to make durable (and every writer
//!   waiting then): none is acknowledged, though, as redb says of a failed commit, their data
//!   may have reached the disk anyway — an error never claims the write was not applied,
//!   which is Bigtable's contract for a failed mutation too. A pending transaction that is
//!   lost before its leader commits it (a row that could not be undone, a panic inside redb)
//!   is recorded as damage, which fails the leader's sync at once (`DATA_LOSS`), so its group
//!   fails with that error.
//!
//! [`RedbStore::sync`]: super::RedbStore::sync

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use redb::ReadTransaction;
use rowkit_statemachines::StoreError;

/// How long a leader waits at most for the durable writes in flight to add their rows to its
/// commit: a few times what a one-row write takes, well under what an fsync costs.
const GATHER: Duration = Duration::from_micros(200);

/// The sequence numbers of grouped writes and how far they are on disk.
#[derive(Default)]
pub(super) struct SyncGroups {
    state: Mutex<SyncState>,
    /// Signalled when a leader finishes (synced or failed).
    finished: Condvar,
    /// Signalled once a gathering leader's group is in ([`SyncGroups::arrive`]).
    arrived: Condvar,
}

#[derive(Default)]
struct SyncState {
    /// Grouped writes (and admin commits) begun so far: each takes the count after its own as
    /// sequence number.
    started: u64,
    /// Durable writes in flight ([`InFlight`]).
    active: usize,
    /// Callers in [`SyncGroups::wait`]: in flight ones whose rows are in.
    waiting: usize,
    /// Callers the last leader's commit served: how many the next leader may expect back.
    served: usize,
    /// Every grouped write numbered up to this is on disk.
    synced: u64,
    /// Whether a writer is making the durable commit for the others.
    leading: bool,
    /// The last failed sync: the sequence numbers it failed, `(after, through]`, and why.
    failed: Option<(u64, u64, StoreError)>,
    /// The snapshot readers get while grouped writes are pending: the state at the last
    /// durable commit, or just before the first grouped write after commits of another kind.
    visible: Option<Arc<ReadTransaction>>,
    /// Whether a commit outside the groups (non-durable mode) made `visible` out of date.
    visible_stale: bool,
}

impl SyncState {
    /// Whether every durable write in flight, and as many as the last commit served, wait:
    /// a leader need not wait longer for its group.
    fn gathered(&self) -> bool {
        self.waiting >= self.active.max(self.served)
    }
}

impl SyncGroups {
    /// The state; whole even if a holder panicked (nothing that can panic runs under it).
    fn lock(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The ticket of a write transaction that is about to end without a grouped write of its
    /// own (it committed nothing, or committed outside the groups): the grouped writes it
    /// could see. Called while holding redb's writer.
    pub(super) fn seen(&self) -> u64 {
        self.lock().started
    }

    /// Numbers a grouped write that its caller, holding redb's writer, is making (a row in the
    /// pending transaction, or an admin call's non-durable commit), and returns its ticket. If
    /// nothing is pending and `visible` is out of date, first pins the last commit's state
    /// (`begin_read`: everything readers may see, since nothing is pending) for readers to
    /// use until this write is on disk.
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

    /// Records a durable commit that succeeded: the grouped writes numbered up to `target`
    /// (the count taken while holding redb's writer, before the commit) are on disk, and
    /// `pinned` (begun right after the commit, the writer still held) is what readers may now
    /// see.
    pub(super) fn durable(&self, target: u64, pinned: ReadTransaction) {
        let mut state = self.lock();
        state.synced = state.synced.max(target);
        state.visible = Some(Arc::new(pinned));
        state.visible_stale = false;
    }

    /// Returns once the grouped writes up to `ticket` are on disk, making the durable commit
    /// with `sync` if no other writer is making one; `Err` if the sync meant to cover them
    /// failed.
    pub(super) fn wait(
        &self,
        ticket: u64,
        sync: impl Fn() -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut state = self.lock();
        state.waiting += 1;
        self.arrive(&state);
        drop(state);
        let waited = self.wait_for(ticket, sync);
        self.lock().waiting -= 1;
        waited
    }

    /// [`SyncGroups::wait`], counted among the waiting.
    fn wait_for(
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
            drop(self.gather(state));
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

    /// Waits, at most [`GATHER`], until every durable write in flight, and as many writers as
    /// the last commit served, have their rows in and wait too ([`SyncState::gathered`]), so
    /// that the leader's commit carries them all.
    fn gather<'a>(&'a self, mut state: MutexGuard<'a, SyncState>) -> MutexGuard<'a, SyncState> {
        let deadline = Instant::now() + GATHER;
        while !state.gathered() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .arrived
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        state
    }

    /// Wakes a gathering leader once the last writer it waits for is in (not at every
    /// arrival: on few cores, each wake-up costs the others a time slice).
    fn arrive(&self, state: &SyncState) {
        if state.leading && state.gathered() {
            self.arrived.notify_one();
        }
    }

    /// Counts a durable write in flight until the returned guard drops (after its wait).
    pub(super) fn in_flight(&self) -> InFlight<'_> {
        self.lock().active += 1;
        InFlight { groups: self }
    }

    /// The read transaction a reader opens tables from: a new one, unless grouped writes
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
                // No grouped write began before the snapshot: it holds only what may be seen.
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
        state.served = state.waiting;
        if let Some(error) = self.failed.take() {
            // Every commit not on disk now was to be covered by this sync, or began after it
            // failed (and will be refused by the same failed file): none is acknowledged.
            state.failed = Some((state.synced, state.started, error));
        }
        drop(state);
        self.groups.finished.notify_all();
    }
}

/// A durable write in flight, from before it joins the pending transaction until its wait
/// ended ([`SyncGroups::in_flight`]).
pub(super) struct InFlight<'a> {
    groups: &'a SyncGroups,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut state = self.groups.lock();
        state.active -= 1;
        // One fewer to wait for.
        self.groups.arrive(&state);
    }
}
