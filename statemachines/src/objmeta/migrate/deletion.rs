//! One pair of the deletion passes (`docs/migration.md` §4.7, §4.9's first row), run by
//! [`MigrationPass`](super::pass::MigrationPass) for [`PassKind::Clean`] and
//! [`PassKind::Abort`] in place of a sync: not a pass of its own, the step the pass runs per
//! pair.
//!
//! 1. Read the pair (or take the page's read for the first round).
//! 2. Plan its writes: [`clean_writes`] (the clean-up, truth `to`) or [`abort_writes`] (the
//!    rollback, truth `from`).
//! 3. Send them one at a time, each `SAME(row as read)`; one not applied (the row changed
//!    since it was read), or answered with a retryable error (it may have applied with its
//!    response lost), sends the pair back to 1.
//! 4. The clean-up of a `from` row without a valid stamp (a straggler) runs
//!    [`SyncKey`](super::sync::SyncKey)'s flow with truth `to` first, then goes back to 1; a
//!    sync that ends in a conflict leaves the pair as it is.
//!
//! [`PassKind::Clean`]: super::pass::PassKind::Clean
//! [`PassKind::Abort`]: super::pass::PassKind::Abort

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::Truth;
use rowkit_codec::objmeta::migration::sync::{
    CleanPlan, Keep, PairRow, Side, SyncPair, SyncWrite, WriteKind, abort_writes, clean_writes,
};

use super::super::requests::OmIo;
use super::super::{ObjmetaError, ObjmetaState};
use super::sync::{PairAsRead, SyncKeyFlow, SyncOutcome, SyncedKey};
use super::sync::{checked_pair, read_pair, sides_as_read, sides_in, start_write, write_applied};
use crate::children::ChildId;
use crate::operation::Flow;

/// Which deletion a pair gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Deletion {
    /// §4.7: delete the `from` rows, strip the `to` stamps (truth `to`).
    Clean,
    /// §4.9: delete the `to` rows, strip the `from` stamps (truth `from`).
    Abort,
}

/// What the deletion of one pair did.
#[derive(Debug)]
pub(super) struct DeletedPair {
    /// `from` rows deleted (0 or 1).
    pub(super) from_rows_deleted: u64,
    /// `to` rows deleted (0 or 1, or more when a mirror rewrote the row between rounds).
    pub(super) to_rows_deleted: u64,
    /// Stamps stripped.
    pub(super) stamps_stripped: u64,
    /// The syncs run first (clean-up of a straggler), in order.
    pub(super) syncs: Vec<SyncedKey>,
    /// Whether the `from` row is still there (a conflict left in place).
    pub(super) from_row_left: bool,
}

#[derive(Debug)]
enum Phase {
    Read,
    Reading(ChildId),
    Plan {
        source: Side,
        target: Side,
    },
    Writing {
        cas: ChildId,
        write: SyncWrite,
        /// Still to send, last first.
        rest: Vec<SyncWrite>,
    },
    Syncing(Box<SyncKeyFlow>),
    Done,
}

/// The flow of one pair's deletion.
#[derive(Debug)]
pub(super) struct DeletePairFlow {
    bucket: String,
    pair: SyncPair,
    from: VFormat,
    to: VFormat,
    deletion: Deletion,
    /// `--resolve`: the side a straggler's conflict keeps.
    keep: Option<Keep>,
    out: DeletedPair,
    phase: Phase,
}

impl DeletePairFlow {
    /// The deletion of the pair of `from` key `arsenal_key`, its first round on `read` when
    /// given (the page's read).
    pub(super) fn start(
        bucket: &str,
        arsenal_key: &str,
        from: VFormat,
        to: VFormat,
        deletion: Deletion,
        read: Option<PairAsRead>,
    ) -> Result<DeletePairFlow, ObjmetaError> {
        let pair = checked_pair(bucket, arsenal_key, from, to)?;
        let phase = match read {
            None => Phase::Read,
            Some(read) => {
                let (source, target) = sides_as_read(&pair, read)?;
                Phase::Plan { source, target }
            }
        };
        Ok(DeletePairFlow {
            bucket: bucket.into(),
            pair,
            from,
            to,
            deletion,
            keep: None,
            out: DeletedPair {
                from_rows_deleted: 0,
                to_rows_deleted: 0,
                stamps_stripped: 0,
                syncs: Vec::new(),
                from_row_left: false,
            },
            phase,
        })
    }

    /// The same step settling a straggler's conflict by keeping `keep` (`--resolve`).
    pub(super) fn resolving(mut self, keep: Option<Keep>) -> DeletePairFlow {
        self.keep = keep;
        self
    }

    /// The pair's `from` key.
    pub(super) fn key(&self) -> &str {
        &self.pair.source_key
    }

    fn count(&mut self, write: &SyncWrite) {
        match (write.kind, write.row) {
            (WriteKind::Delete, PairRow::Source) => self.out.from_rows_deleted += 1,
            (WriteKind::Delete, PairRow::Target) => self.out.to_rows_deleted += 1,
            (WriteKind::Unstamp, _) => self.out.stamps_stripped += 1,
            // The deletion plans send no other writes.
            (WriteKind::Copy | WriteKind::Stamp, _) => {}
        }
    }

    fn done(&mut self) -> DeletedPair {
        core::mem::replace(
            &mut self.out,
            DeletedPair {
                from_rows_deleted: 0,
                to_rows_deleted: 0,
                stamps_stripped: 0,
                syncs: Vec::new(),
                from_row_left: false,
            },
        )
    }

    /// Advances the pair; `Some` once it has ended.
    pub(super) fn advance(
        &mut self,
        io: &mut OmIo,
        st: &mut ObjmetaState,
    ) -> Result<Option<DeletedPair>, ObjmetaError> {
        loop {
            match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Read => {
                    self.phase = Phase::Reading(read_pair(io, st, &self.pair));
                }
                Phase::Reading(read) => {
                    let Some(rows) = io.rows_or_wait(read)? else {
                        self.phase = Phase::Reading(read);
                        return Ok(None);
                    };
                    let (source, target) = sides_in(&self.pair, &rows)?;
                    self.phase = Phase::Plan { source, target };
                }
                Phase::Plan { source, target } => {
                    let mut writes = match self.deletion {
                        Deletion::Abort => abort_writes(&source, &target),
                        Deletion::Clean => match clean_writes(&source, &target) {
                            CleanPlan::Writes(writes) => writes,
                            CleanPlan::SyncFirst => {
                                let sync = SyncKeyFlow::start(
                                    &self.bucket,
                                    &self.pair.source_key,
                                    self.from,
                                    self.to,
                                    Truth::To,
                                    None,
                                )?
                                .resolving(self.keep);
                                self.phase = Phase::Syncing(Box::new(sync));
                                continue;
                            }
                        },
                    };
                    writes.reverse();
                    let Some(write) = writes.pop() else {
                        self.out.from_row_left = false;
                        return Ok(Some(self.done()));
                    };
                    let cas = start_write(io, st, &self.pair, &write)?;
                    self.phase = Phase::Writing {
                        cas,
                        write,
                        rest: writes,
                    };
                }
                Phase::Writing {
                    cas,
                    write,
                    mut rest,
                } => {
                    let Some(reply) = io.take(cas) else {
                        self.phase = Phase::Writing { cas, write, rest };
                        return Ok(None);
                    };
                    if !write_applied(&write, reply)? {
                        self.phase = Phase::Read;
                        continue;
                    }
                    self.count(&write);
                    let Some(next) = rest.pop() else {
                        self.out.from_row_left = false;
                        return Ok(Some(self.done()));
                    };
                    let cas = start_write(io, st, &self.pair, &next)?;
                    self.phase = Phase::Writing {
                        cas,
                        write: next,
                        rest,
                    };
                }
                Phase::Syncing(mut sync) => {
                    let Some(synced) = sync.advance(io, st)? else {
                        self.phase = Phase::Syncing(sync);
                        return Ok(None);
                    };
                    let conflict = matches!(synced.outcome, SyncOutcome::Conflict { .. });
                    self.out.syncs.push(synced);
                    if conflict {
                        // Left in both layouts for the operator (§4.6): the `from` row stays.
                        self.out.from_row_left = true;
                        return Ok(Some(self.done()));
                    }
                    self.phase = Phase::Read;
                }
                Phase::Done => return Ok(None),
            }
        }
    }
}
