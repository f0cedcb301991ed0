//! `SyncKey(a)` — the one sync step of the object-metadata migration (`docs/migration.md`
//! §4.3): one key's two rows, `S(a)` in the `from` layout and `T(a)` in the `to` layout, made
//! equal and stamped, conditionally on each row being as read.
//!
//! 1. `ReadRows(rows = {S(a), T(a)}, LatestN(1))` — or, for the copy pass's first iteration
//!    (§4.4 step 3), the pair the page read ([`SyncKey::with_read`]).
//! 2. Classify the pair ([`classify`], §4.3's table; before or after the switch by [`Truth`]).
//! 3. Copy or delete: `CheckAndMutateRow(y, SAME(y as read), COPY(x) / DeleteFromRow())`.
//! 4. Confirm the source: `CheckAndMutateRow(x, SAME(x as read), STAMP(x))` (not for a deleted
//!    source). An equal pair with an unstamped side gets only its stamps. Every stamp of a
//!    round names it: a nonce drawn from the operation's seed stream, and whether the stamp
//!    is the copy's or a confirmation (§4.2, §12.73), which is how a late confirmation is
//!    told from the pair's last sync.
//!
//! A write not applied (the row changed since it was read) sends the sync back to step 1; so
//! does a write whose reply is a retryable error (`UNAVAILABLE`, `DEADLINE_EXCEEDED`,
//! `ABORTED`): it may have applied with its response lost, and every write is conditional on
//! the rows as read, so reading again and going on from what the store holds is harmless
//! (§4.3's race table). The loop is bounded by the operation's deadline (then
//! [`ObjmetaError::Aborted`], as every objmeta operation). A non-retryable store error ends the
//! sync with it ([`ObjmetaError::InternalError`]).
//!
//! The machine returns what it did ([`SyncedKey`]): the last round's [`SyncOutcome`] (a
//! straggler adopted, a conflict with both hashes, …), the number of rounds, and every write
//! that applied. It emits no event: the object change events of `objmeta.md` §13.1 report
//! application writes, and the migration's own events (`Straggler`, `Conflict`, `Progress`,
//! §7.3) belong to the pass that runs the syncs, which reads them from this output.

use alloc::vec;
use alloc::vec::Vec;

use rowkit_codec::model::{Row, RowSet};
use rowkit_codec::objmeta::cells::filters;
use rowkit_codec::objmeta::keys::{VFormat, collection_for_bucket};
use rowkit_codec::objmeta::migration::Truth;
use rowkit_codec::objmeta::migration::sync::{
    Keep, PairRow, Side, SyncAction, SyncPair, SyncWrite, WriteKind, classify, resolve, sync_pair,
    sync_writes,
};

use super::super::requests::{OmIo, P, check_key, start_cas, start_read};
use super::super::{ObjmetaError, ObjmetaSchema, ObjmetaState, begin};
use crate::children::{ChildId, ChildOutput};
use crate::operation::{ContextArg, Flow, Operation, OperationError, Start};
use crate::{Response, StoreError, ready};

/// `SyncKey(a)`: the sync step of one key of a migrating bucket (§4.3).
pub type SyncKey<'a> = Operation<'a, SyncKeyFlow>;

/// The pair a caller has read already (`ReadRows` with `LatestN(1)`), for a sync whose first
/// iteration uses it instead of reading ([`SyncKey::with_read`]). A row of another key is
/// ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PairAsRead {
    /// `S(a)` as read (`None`: no such row).
    pub source: Option<Row>,
    /// `T(a)` as read (`None`: no such row).
    pub target: Option<Row>,
}

/// What the last round of a sync found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncOutcome {
    /// The pair was in sync: nothing written in that round.
    InSync,
    /// Equal rows: the unstamped side(s) stamped.
    Stamped,
    /// One row copied onto the other (`Target`: `s` → `T(a)`; `Source`: the reverse mirror
    /// after the switch, `t` → `S(a)`) and the copied row confirmed with its stamp.
    Copied {
        /// The row written.
        onto: PairRow,
    },
    /// A row deleted because the other side is absent (`Target` before the switch, `Source`
    /// after it).
    Deleted {
        /// The row deleted.
        row: PairRow,
    },
    /// After the switch, a write (`deleted` false: copied into `T(a)`) or a delete (`deleted`
    /// true: `T(a)` deleted) of an unaware process in the `from` layout, adopted (§4.6, event
    /// `Straggler`).
    StragglerAdopted {
        /// Whether the straggler's write was a delete.
        deleted: bool,
    },
    /// A conflict settled by `--resolve` (§4.6): the kept side copied over the other (or, a
    /// kept `to` side absent, the `from` row deleted).
    Resolved {
        /// The side kept.
        kept: Keep,
    },
    /// After the switch, both sides changed since the last sync: nothing written (§4.6,
    /// event `Conflict`).
    Conflict {
        /// `f:hash` of `S(a)`.
        from_hash: Vec<u8>,
        /// `f:hash` of `T(a)`, `None` when it is absent (a straggler's new key, or its write
        /// before a `to` delete).
        to_hash: Option<Vec<u8>>,
    },
}

/// A conditional write of the sync that applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedWrite {
    /// Which row of the pair.
    pub row: PairRow,
    /// Its row key.
    pub row_key: Vec<u8>,
    /// What was written.
    pub kind: WriteKind,
}

/// What a [`SyncKey`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncedKey {
    /// The key in both layouts and both row keys.
    pub pair: SyncPair,
    /// What the last round found and did.
    pub outcome: SyncOutcome,
    /// Rounds of steps 1–2 (a pair given to [`SyncKey::with_read`] is the first round).
    pub rounds: u32,
    /// Every write that applied, in order, over all rounds (a write whose reply was lost is
    /// not listed: whether it applied is unknown).
    pub writes: Vec<AppliedWrite>,
}

/// The flow of [`SyncKey`]: read the pair, classify it, send its conditional writes one at a
/// time; back to the read when one does not apply.
#[derive(Debug)]
pub struct SyncKeyFlow {
    pair: SyncPair,
    truth: Truth,
    /// `--resolve`: the side a conflict keeps (`None`: a conflict is left as it is).
    keep: Option<Keep>,
    /// The current round settles a conflict (its outcome is [`SyncOutcome::Resolved`]).
    resolving: bool,
    rounds: u32,
    writes: Vec<AppliedWrite>,
    phase: SyncPhase,
}

#[derive(Debug)]
enum SyncPhase {
    /// Step 1 to send.
    Read,
    /// Step 1 sent.
    Reading(ChildId),
    /// Step 2: the pair as read.
    Classify {
        source: Side,
        target: Side,
    },
    /// Steps 3–4: `write` sent, `rest` still to send (last first).
    Writing {
        cas: ChildId,
        write: SyncWrite,
        rest: Vec<SyncWrite>,
        action: SyncAction,
    },
    Done,
}

impl<'a> SyncKey<'a> {
    /// `SyncKey(a)` for the key `arsenal_key` **in the `from` layout** (the key of `S(a)`;
    /// a key known only in `to` is mapped back first with
    /// [`map_key`](rowkit_codec::objmeta::migration::sync::map_key)`(…, to, from)`) of
    /// `bucket`, migrating `from` → `to`, with `truth` the layout of the truth (before or
    /// after the switch). A key of §4.1's findings ends it at once with
    /// [`ObjmetaError::MigrationKey`]; `from == to` with an `InternalError`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        arsenal_key: &str,
        from: VFormat,
        to: VFormat,
        truth: Truth,
        start: Start,
    ) -> SyncKey<'a> {
        match SyncKeyFlow::start(bucket, arsenal_key, from, to, truth, None) {
            Ok(flow) => begin(ctx, start, flow),
            Err(error) => Operation::failed(ctx.into(), error),
        }
    }

    /// [`SyncKey::new`] whose first round classifies `read` — the pair as the caller read it
    /// (the copy pass's page, §4.4 step 3) — instead of reading it: a pair in sync ends at
    /// once without a request.
    #[allow(clippy::too_many_arguments)]
    pub fn with_read(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        arsenal_key: &str,
        from: VFormat,
        to: VFormat,
        truth: Truth,
        read: PairAsRead,
        start: Start,
    ) -> SyncKey<'a> {
        match SyncKeyFlow::start(bucket, arsenal_key, from, to, truth, Some(read)) {
            Ok(flow) => begin(ctx, start, flow),
            Err(error) => Operation::failed(ctx.into(), error),
        }
    }
}

/// A row as read, as a [`Side`] (a present row without `f:hash` is an internal error).
pub(super) fn side_of(row: Option<&Row>) -> Result<Side, ObjmetaError> {
    Side::from_row(row).map_err(|e| {
        let key = row
            .map(|r| rowkit_codec::escape::escape(&r.key))
            .unwrap_or_default();
        ObjmetaError::internal(alloc::format!("row {key}: {e}"))
    })
}

/// The pair of `from` key `arsenal_key` of `bucket`, both row keys checked (§4.1's findings
/// are [`ObjmetaError::MigrationKey`]): the set-up of every per-pair step (sync, deletion).
pub(super) fn checked_pair(
    bucket: &str,
    arsenal_key: &str,
    from: VFormat,
    to: VFormat,
) -> Result<SyncPair, ObjmetaError> {
    let collection = collection_for_bucket(bucket);
    let pair = sync_pair(collection, arsenal_key, from, to).map_err(ObjmetaError::MigrationKey)?;
    check_key(&pair.source_row)?;
    check_key(&pair.target_row)?;
    Ok(pair)
}

/// The pair's sides in rows read by the caller (a row of another key is ignored).
pub(super) fn sides_in(pair: &SyncPair, rows: &[Row]) -> Result<(Side, Side), ObjmetaError> {
    let find = |key: &[u8]| rows.iter().find(|r| r.key == key);
    Ok((
        side_of(find(&pair.source_row))?,
        side_of(find(&pair.target_row))?,
    ))
}

/// The pair's sides as the caller read them ([`PairAsRead`]).
pub(super) fn sides_as_read(
    pair: &SyncPair,
    read: PairAsRead,
) -> Result<(Side, Side), ObjmetaError> {
    let rows: Vec<Row> = read.source.into_iter().chain(read.target).collect();
    sides_in(pair, &rows)
}

/// Step 1: `ReadRows(rows = {S(a), T(a)}, LatestN(1))`.
pub(super) fn read_pair(io: &mut OmIo, st: &ObjmetaState, pair: &SyncPair) -> ChildId {
    let mut row_keys = vec![pair.source_row.clone(), pair.target_row.clone()];
    row_keys.sort();
    let rows = RowSet {
        row_keys,
        row_ranges: Vec::new(),
    };
    start_read(io, st, rows, filters::latest(), 0)
}

impl SyncKeyFlow {
    /// The flow of [`SyncKey::new`] (`read` `None`) or [`SyncKey::with_read`], for a parent
    /// flow that runs syncs inside its own operation (the passes, §4.4): the same checks,
    /// the same errors.
    pub(in crate::objmeta) fn start(
        bucket: &str,
        arsenal_key: &str,
        from: VFormat,
        to: VFormat,
        truth: Truth,
        read: Option<PairAsRead>,
    ) -> Result<SyncKeyFlow, ObjmetaError> {
        let mut flow = SyncKeyFlow::new(bucket, arsenal_key, from, to, truth, SyncPhase::Read)?;
        if let Some(read) = read {
            let (source, target) = sides_as_read(&flow.pair, read)?;
            flow.rounds = 1;
            flow.phase = SyncPhase::Classify { source, target };
        }
        Ok(flow)
    }

    fn new(
        bucket: &str,
        arsenal_key: &str,
        from: VFormat,
        to: VFormat,
        truth: Truth,
        phase: SyncPhase,
    ) -> Result<SyncKeyFlow, ObjmetaError> {
        if from == to {
            return Err(ObjmetaError::internal(alloc::format!(
                "a migration from {} to {} has nothing to sync",
                from.as_str(),
                to.as_str()
            )));
        }
        Ok(SyncKeyFlow {
            pair: checked_pair(bucket, arsenal_key, from, to)?,
            truth,
            keep: None,
            resolving: false,
            rounds: 0,
            writes: Vec::new(),
            phase,
        })
    }

    /// The same sync settling a conflict by keeping `keep` (`--resolve`, §4.6) instead of
    /// leaving it; `None` leaves conflicts as they are.
    pub(in crate::objmeta) fn resolving(mut self, keep: Option<Keep>) -> SyncKeyFlow {
        self.keep = keep;
        self
    }

    /// The output, once the last round ended with `outcome`.
    fn done(&mut self, outcome: SyncOutcome) -> SyncedKey {
        let outcome = match (self.resolving, self.keep, outcome) {
            (true, Some(kept), SyncOutcome::Copied { .. } | SyncOutcome::Deleted { .. }) => {
                SyncOutcome::Resolved { kept }
            }
            (_, _, outcome) => outcome,
        };
        SyncedKey {
            pair: self.pair.clone(),
            outcome,
            rounds: self.rounds,
            writes: core::mem::take(&mut self.writes),
        }
    }
}

/// The outcome of a round whose writes for `action` all applied (or that had none).
fn outcome_of(action: SyncAction, source: &Side, target: &Side) -> SyncOutcome {
    match action {
        SyncAction::InSync => SyncOutcome::InSync,
        SyncAction::StampUnstamped { .. } => SyncOutcome::Stamped,
        SyncAction::CopyToTarget => SyncOutcome::Copied {
            onto: PairRow::Target,
        },
        SyncAction::CopyToSource => SyncOutcome::Copied {
            onto: PairRow::Source,
        },
        SyncAction::DeleteTarget => SyncOutcome::Deleted {
            row: PairRow::Target,
        },
        SyncAction::DeleteSource => SyncOutcome::Deleted {
            row: PairRow::Source,
        },
        SyncAction::StragglerCopyToTarget => SyncOutcome::StragglerAdopted { deleted: false },
        SyncAction::StragglerDeleteTarget => SyncOutcome::StragglerAdopted { deleted: true },
        SyncAction::Conflict => SyncOutcome::Conflict {
            from_hash: source.hash().map(<[u8]>::to_vec).unwrap_or_default(),
            to_hash: target.hash().map(<[u8]>::to_vec),
        },
    }
}

/// The nonce the stamps of one round name (§4.2, §12.73): the operation's next seed, mixed
/// with the round's time because processes seeded alike (the CLI's `--seed` defaults to 0)
/// draw the same seed stream. The classification never trusts two equal nonces to be one
/// sync; the nonce makes each stamp's bytes its round's, so `SAME` of a stamped row fails once
/// another round stamped it.
fn round_nonce(io: &mut OmIo) -> u64 {
    io.next_seed() ^ io.now().0.cast_unsigned()
}

/// Whether one conditional write of a pair applied, from its reply: `false` when the row
/// changed since it was read, or when a retryable error leaves it unknown whether it applied
/// (every write is conditional, so the caller reads the pair again and decides anew); a
/// permanent error or a reply of another kind ends the step.
pub(super) fn write_applied(
    write: &SyncWrite,
    reply: Result<ChildOutput, StoreError>,
) -> Result<bool, ObjmetaError> {
    match reply {
        Ok(ChildOutput::Unary(Response::CheckAndMutateRow { predicate_matched })) => {
            Ok(write.write.applied(predicate_matched))
        }
        Err(e) if e.code.is_retryable() => Ok(false),
        Err(e) => Err(ObjmetaError::store(e)),
        Ok(other) => Err(ObjmetaError::unexpected(&other)),
    }
}

/// Sends one conditional write of a pair's sync or deletion step (a `CheckAndMutateRow` on its
/// row).
pub(super) fn start_write(
    io: &mut OmIo,
    st: &ObjmetaState,
    pair: &SyncPair,
    write: &SyncWrite,
) -> Result<ChildId, ObjmetaError> {
    let w = &write.write;
    start_cas(
        io,
        st,
        pair.row_key(write.row).to_vec(),
        w.predicate.clone(),
        w.true_mutations.clone(),
        w.false_mutations.clone(),
    )
}

impl Flow for SyncKeyFlow {
    type Schema = ObjmetaSchema;
    type Output = SyncedKey;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<SyncedKey> {
        loop {
            match core::mem::replace(&mut self.phase, SyncPhase::Done) {
                SyncPhase::Read => {
                    self.rounds += 1;
                    self.phase = SyncPhase::Reading(read_pair(io, st, &self.pair));
                }
                SyncPhase::Reading(read) => {
                    let rows =
                        ready!(io.rows_or_wait(read), self.phase => SyncPhase::Reading(read));
                    let (source, target) = sides_in(&self.pair, &rows)?;
                    self.phase = SyncPhase::Classify { source, target };
                }
                SyncPhase::Classify { source, target } => {
                    let action = classify(&source, &target, self.truth);
                    self.resolving = action == SyncAction::Conflict && self.keep.is_some();
                    let action = match self.keep {
                        Some(keep) => resolve(action, &target, keep),
                        None => action,
                    };
                    let mut writes = sync_writes(action, &source, &target, round_nonce(io));
                    writes.reverse();
                    let Some(write) = writes.pop() else {
                        let outcome = outcome_of(action, &source, &target);
                        return Ok(Some(self.done(outcome)));
                    };
                    let cas = start_write(io, st, &self.pair, &write)?;
                    self.phase = SyncPhase::Writing {
                        cas,
                        write,
                        rest: writes,
                        action,
                    };
                }
                SyncPhase::Writing {
                    cas,
                    write,
                    mut rest,
                    action,
                } => {
                    let Some(reply) = io.take(cas) else {
                        self.phase = SyncPhase::Writing {
                            cas,
                            write,
                            rest,
                            action,
                        };
                        return Ok(None);
                    };
                    if !write_applied(&write, reply)? {
                        self.phase = SyncPhase::Read;
                        continue;
                    }
                    self.writes.push(AppliedWrite {
                        row: write.row,
                        row_key: self.pair.row_key(write.row).to_vec(),
                        kind: write.kind,
                    });
                    let Some(next) = rest.pop() else {
                        // Outcomes of writing actions do not depend on the sides.
                        let outcome = outcome_of(action, &Side::Absent, &Side::Absent);
                        return Ok(Some(self.done(outcome)));
                    };
                    let cas = start_write(io, st, &self.pair, &next)?;
                    self.phase = SyncPhase::Writing {
                        cas,
                        write: next,
                        rest,
                        action,
                    };
                }
                SyncPhase::Done => return Ok(None),
            }
        }
    }
}

impl SyncedKey {
    /// The `from` key of the synced pair (the key the sync was started with).
    pub fn key(&self) -> &str {
        &self.pair.source_key
    }
}
