//! The store's one writer: redb's write transaction, and lazy commits with durable commits off.
//!
//! redb runs one write transaction at a time. The store holds its own writer lock from the
//! moment it begins a transaction until that transaction commits or aborts ([`WriteSlot`]),
//! so a transaction may outlive the call that began it: with durable commits off, a row write
//! does not commit. Its transaction stays open, *pending*, and the next row writes join it,
//! until [`LAZY_COMMIT_ROWS`] rows wrote into it, a reader needs them, an admin call or
//! [`RedbStore::sync`] begins a transaction of its own, or the store closes. A commit was about
//! half of a one-row write (its page bookkeeping, the table roots, the allocator state), so
//! sharing one among many rows is most of what a non-durable write can save.
//!
//! With durable commits on, row writes join the pending transaction too, but are not
//! acknowledged until the leader of their group commits it with `Durability::Immediate`
//! ([`super::group_commit`]): a group of concurrent writers shares one commit as well as one
//! fsync.
//!
//! Why non-durable mode keeps its guarantees:
//!
//! - **Reads see every acknowledged write.** A read commits the pending transaction before it
//!   takes a snapshot, whenever acknowledged rows are pending ([`Writer::has_pending`], checked
//!   without the lock; cleared only by the commit, so a writer resuming the pending
//!   transaction never hides it).
//! - **A crash loses no more.** redb persists a `Durability::None` commit only with a later
//!   durable one, so a crash already lost every non-durable commit since the last durable one:
//!   a pending transaction is such a suffix too, and is never torn (it commits whole or not at
//!   all). This is also why no timer commits a pending transaction: time would bound nothing
//!   that a non-durable commit keeps. What does bound the loss is that a lazy commit made
//!   [`DURABLE_INTERVAL`] after the last durable one is durable itself. Closing the store
//!   commits what is pending (and then makes it durable, as closing always did).
//! - **A failed row leaves the others.** A row that fails inside a pending transaction that
//!   already holds acknowledged rows has its own writes undone ([`super::undo`]), and the
//!   transaction goes on; a row that fails in a fresh transaction aborts it, as before.
//! - **A failed commit is loud.** If the pending transaction cannot commit (or a failed row
//!   cannot be undone: an I/O error in redb), the rows acknowledged in it are lost, as in a
//!   crash. The store then records the loss as damage: every later write fails at once with
//!   `DATA_LOSS` naming how many rows were lost, so no write is acknowledged on top of them.
//!
//! [`RedbStore::sync`]: super::RedbStore::sync

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use redb::{Durability, WriteTransaction};
use rowkit_statemachines::{Code, StoreError};

use super::{CommitKind, Db, RedbStore, Scope, redb_error};
use crate::redb_guard::Forgettable;

/// Rows a pending transaction takes before it commits (durable commits off). Past a few dozen
/// rows the commit's cost per row stops falling, while the transaction's dirty pages grow.
pub(super) const LAZY_COMMIT_ROWS: usize = 64;

/// With durable commits off, a lazy commit at least this long after the last durable one is
/// made durable: it bounds what a crash loses while writes go on, and the pages redb cannot
/// reuse until a durable commit (reads of a file after many non-durable commits were found
/// slower: `benches/HISTORY.md`). One fsync a second costs writes well under 1 %.
const DURABLE_INTERVAL: Duration = Duration::from_secs(1);

/// The writer lock and the pending transaction.
pub(super) struct Writer {
    /// Held by whoever uses redb's writer.
    state: Mutex<WriterState>,
    /// Whether acknowledged rows are pending: set with the lock held before it is released,
    /// cleared by the commit that takes them.
    has_pending: AtomicBool,
}

impl Default for Writer {
    fn default() -> Writer {
        Writer {
            state: Mutex::new(WriterState {
                pending: None,
                durable_at: Instant::now(),
            }),
            has_pending: AtomicBool::new(false),
        }
    }
}

/// What the writer lock guards.
pub(super) struct WriterState {
    /// The open transaction whose rows are written but not committed, if any: acknowledged
    /// (durable commits off) or waiting for their group's durable commit.
    pending: Option<Pending>,
    /// When a lazy commit was last made durable (or the store opened).
    durable_at: Instant,
}

/// A write transaction kept open between calls.
pub(super) struct Pending {
    txn: Forgettable<WriteTransaction>,
    /// Rows written in it: acknowledged ones (durable commits off), or ones whose writers
    /// wait for the group's durable commit ([`super::group_commit`]).
    rows: usize,
}

/// redb's write transaction, with the writer lock held until it commits or aborts.
pub(super) struct WriteSlot<'s> {
    pub(super) txn: Forgettable<WriteTransaction>,
    /// Rows in `txn` that wrote something: other calls' rows of a resumed pending transaction,
    /// then the caller's.
    pub(super) rows: usize,
    /// Rows of other calls in `txn` (a resumed pending transaction), acknowledged or waiting
    /// for their group's durable commit: lost if it cannot commit.
    pub(super) others: usize,
    guard: MutexGuard<'s, WriterState>,
}

impl std::ops::Deref for WriteSlot<'_> {
    type Target = WriteTransaction;

    fn deref(&self) -> &WriteTransaction {
        &self.txn
    }
}

impl RedbStore {
    /// The writer lock; a panic while one held it (redb on a damaged file) left no pending
    /// transaction behind (it was taken out first) and is recorded in the damage, so a poisoned
    /// lock is still used.
    fn writer(&self) -> MutexGuard<'_, WriterState> {
        self.writer
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A new write transaction that will commit as `kind` says, forgotten rather than dropped
    /// if redb panics in it ([`Forgettable`]). A pending transaction commits first.
    pub(super) fn begin_write(
        &self,
        op: &str,
        kind: CommitKind,
    ) -> Result<WriteSlot<'_>, StoreError> {
        let mut guard = self.writer();
        self.commit_pending(&mut guard, op)?;
        let txn = self.open_write_txn(op, kind)?;
        Ok(WriteSlot {
            txn,
            rows: 0,
            others: 0,
            guard,
        })
    }

    /// The transaction a row write that commits as `kind` says joins: the pending one, or a
    /// new one (which commits with `Durability::None`: a durable row write is made durable by
    /// its group's leader). A grouped write does not join acknowledged rows (durable commits
    /// were off until now): they commit first, so that readers, who see the snapshot of before
    /// the grouped write until it is on disk, have them.
    pub(super) fn resume_write(
        &self,
        op: &str,
        kind: CommitKind,
    ) -> Result<WriteSlot<'_>, StoreError> {
        let mut guard = self.writer();
        if kind != CommitKind::Plain && self.writer.has_pending.load(Ordering::Acquire) {
            self.commit_pending(&mut guard, op)?;
        }
        let (txn, rows) = match guard.pending.take() {
            Some(Pending { txn, rows }) => (txn, rows),
            None => (self.open_write_txn(op, CommitKind::Plain)?, 0),
        };
        Ok(WriteSlot {
            txn,
            rows,
            others: rows,
            guard,
        })
    }

    /// The transaction [`RedbStore::sync`] commits with `Durability::Immediate`: the pending
    /// one, whose rows the sync thus makes durable in the same commit, or a new, empty one.
    pub(super) fn begin_sync(&self, op: &str) -> Result<WriteSlot<'_>, StoreError> {
        let mut guard = self.writer();
        let Some(Pending { mut txn, rows }) = guard.pending.take() else {
            drop(guard);
            return self.begin_write(op, CommitKind::Durable);
        };
        if let Err(e) = txn.set_durability(Durability::Immediate) {
            // Left as it was, for a later commit to try.
            guard.pending = Some(Pending { txn, rows });
            return Err(redb_error(op, e));
        }
        Ok(WriteSlot {
            txn,
            rows,
            others: rows,
            guard,
        })
    }

    fn open_write_txn(
        &self,
        op: &str,
        kind: CommitKind,
    ) -> Result<Forgettable<WriteTransaction>, StoreError> {
        let db = match &*self.db {
            Db::Writable(db) => db,
            Db::ReadOnly(_) => {
                return Err(StoreError::new(
                    Code::FailedPrecondition,
                    format!("{}: opened read-only, cannot {op}", self.describe()),
                ));
            }
        };
        let mut txn = Forgettable::new(db.begin_write().map_err(|e| redb_error(op, e))?);
        // Durability::Immediate is redb's default.
        if kind != CommitKind::Durable {
            txn.set_durability(Durability::None)
                .map_err(|e| redb_error(op, e))?;
        }
        Ok(txn)
    }

    /// Leaves `slot`'s transaction open for the next row writes; returns the ticket its writer
    /// waits for (the grouped row writes it could see, its own included). `acknowledged` says
    /// its rows are answered before they commit (durable commits off), so that readers commit
    /// them first; a grouped row is not: it is seen once its group's durable commit made it so.
    pub(super) fn keep_pending(&self, slot: WriteSlot<'_>, acknowledged: bool) -> u64 {
        let WriteSlot {
            txn,
            rows,
            mut guard,
            ..
        } = slot;
        guard.pending = Some(Pending { txn, rows });
        if acknowledged {
            self.writer.has_pending.store(true, Ordering::Release);
        }
        self.groups.seen()
    }

    /// Commits `slot` (see [`RedbStore::commit_txn`]), then lets the writer lock go.
    pub(super) fn commit(
        &self,
        slot: WriteSlot<'_>,
        op: &str,
        kind: CommitKind,
    ) -> Result<u64, StoreError> {
        let WriteSlot {
            txn,
            others,
            mut guard,
            ..
        } = slot;
        let committed = self.commit_held(txn, &mut guard, kind, op);
        drop(guard);
        match committed {
            Err(e) if others > 0 => Err(self.lose_pending(others, e)),
            other => other,
        }
    }

    /// Aborts `slot`'s transaction, whose own writes failed with `cause` or chose to write
    /// nothing. Returns the ticket its writer waits for (the grouped commits it may have read),
    /// or, if it held rows acknowledged to other calls, their loss.
    pub(super) fn abort(
        &self,
        slot: WriteSlot<'_>,
        op: &str,
        cause: Option<&StoreError>,
    ) -> Result<u64, StoreError> {
        let seen = self.groups.seen();
        let others = slot.others;
        let aborted = slot.txn.into_inner().abort().map_err(|e| redb_error(op, e));
        self.writer.has_pending.store(false, Ordering::Release);
        if others > 0 {
            let cause = match (cause, aborted) {
                (Some(cause), _) => cause.clone(),
                (None, Err(e)) => e,
                (None, Ok(())) => StoreError::new(Code::Internal, "the transaction was aborted"),
            };
            return Err(self.lose_pending(others, cause));
        }
        aborted.map(|()| seen)
    }

    /// Commits the pending transaction, if acknowledged rows wait in it, so that a reader's
    /// snapshot holds them.
    pub(super) fn commit_for_readers(&self, op: &str) -> Result<(), StoreError> {
        if !self.writer.has_pending.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut guard = self.writer();
        if guard.pending.is_none() {
            return Ok(());
        }
        // A panic in redb here is a write's, and recorded as one: reads of the file go on.
        self.guarded(Scope::Admin, op, || self.commit_pending(&mut guard, op))
    }

    /// Commits the pending transaction, if any, under the writer lock its caller holds.
    fn commit_pending(&self, state: &mut WriterState, op: &str) -> Result<(), StoreError> {
        let Some(Pending { txn, rows }) = state.pending.take() else {
            return Ok(());
        };
        self.commit_held(txn, state, CommitKind::Plain, op)
            .map(|_| ())
            .map_err(|e| self.lose_pending(rows, e))
    }

    /// Commits `txn` as `kind` says (a lazy one durable if it is time, see
    /// [`RedbStore::commit_lazily`]) under the writer lock its caller holds: no acknowledged
    /// row is pending after it, whether it committed or not.
    fn commit_held(
        &self,
        mut txn: Forgettable<WriteTransaction>,
        state: &mut WriterState,
        kind: CommitKind,
        op: &str,
    ) -> Result<u64, StoreError> {
        let committed = self.commit_lazily(&mut txn, state, kind, op);
        let committed = committed.and_then(|()| self.commit_txn(txn, op, kind));
        self.writer.has_pending.store(false, Ordering::Release);
        committed
    }

    /// Before a commit of `kind`: a lazy (`Plain`) one is made durable once
    /// [`DURABLE_INTERVAL`] passed since the last durable one.
    fn commit_lazily(
        &self,
        txn: &mut WriteTransaction,
        state: &mut WriterState,
        kind: CommitKind,
        op: &str,
    ) -> Result<(), StoreError> {
        if kind != CommitKind::Plain {
            return Ok(());
        }
        let now = Instant::now();
        if now.duration_since(state.durable_at) < DURABLE_INTERVAL {
            return Ok(());
        }
        txn.set_durability(Durability::Immediate)
            .map_err(|e| redb_error(op, e))?;
        // Set before the commit: a failed one is not retried at every write.
        state.durable_at = now;
        Ok(())
    }

    /// Records that `rows` row writes (acknowledged, or waiting for their group's durable
    /// commit) are lost with their transaction (`cause`): from now on every write fails with
    /// the returned `DATA_LOSS`, the waiting writers' sync too, so none of them is acknowledged.
    /// Reads go on, and see the file as a crash would have left it.
    fn lose_pending(&self, rows: usize, cause: StoreError) -> StoreError {
        let error = StoreError::new(
            Code::DataLoss,
            format!(
                "{}: {rows} row write(s) of a pending transaction were lost, as in a crash, and writes are refused from now on: {}",
                self.describe(),
                cause.message
            ),
        );
        self.damage().writes.get_or_insert(error).clone()
    }

    /// At close: commits what is pending, unless the file is damaged.
    pub(super) fn commit_pending_at_close(&self) {
        // A failure is recorded as damage, which the close then handles.
        let _ = self.commit_pending(&mut self.writer(), "close");
    }
}

#[cfg(test)]
impl RedbStore {
    /// Whether acknowledged rows wait in a pending transaction.
    pub(super) fn has_pending(&self) -> bool {
        self.writer.has_pending.load(Ordering::Acquire)
    }

    /// Rows written in the pending transaction, acknowledged or not.
    pub(super) fn pending_rows(&self) -> usize {
        self.writer().pending.as_ref().map_or(0, |p| p.rows)
    }
}
