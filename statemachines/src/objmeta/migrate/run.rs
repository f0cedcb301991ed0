//! `MigrateBucket` — the object-metadata migrator (`docs/migration.md` §3, §4.4–§4.7, §4.9,
//! §7.2, §8, §11.2): one operation that drives a bucket's migration through its states as far
//! as the operator's gates allow, composing the migration's machines inside its own operation
//! — [`ReadMigration`](super::marker::ReadMigration)'s read, [`WriteMarker`]'s marker changes
//! and [`MigrationPass`](super::pass::MigrationPass)'s passes — without repeating any of
//! their logic.
//!
//! | Marker as read | What the run does |
//! | --- | --- |
//! | none, `vFormat` = `to` | nothing: [`MigrateEnd::Already`], no write |
//! | none | the start: marker `copying` (run id from the operation's seed, `since` = now) |
//! | `copying` | a Copy pass, then `verifying` |
//! | `verifying` | Verify passes until one run from its start has `diffs == 0`; findings stop the run ([`ObjmetaError::MigrationBlocked`]); then the objmeta `Check` of the `to` layout, nested (§8: findings not the source's own stop the run); then, with the switch gate, the pause estimate (`--max-pause`: [`ObjmetaError::MigrationPauseTooLong`]) and `switching`; else the run ends |
//! | `switching` | waits `since + Δ`; Light passes (truth `from`) until one run from its start is clean; the switch CAS to `switched` |
//! | `switched` | a sweep (a Light pass, truth `to`, §4.6: stragglers adopted, conflicts settled by `--resolve` or left); conflicts or findings end the run here ([`MigrateOutcome::blocked`]); else `cleaning` with the finish gate, else the run ends |
//! | `switched`, run `--to` its `from` | §4.9's rollback: a new run with `from`/`to` swapped written at `switching` (needs the switch gate) |
//! | `cleaning` | waits `since + Δ`; a Clean pass; no `from` row left → the marker removed ([`MigrateEnd::Removed`]); else the run ends in `cleaning` with the conflicts and findings listed in the output |
//! | `aborting` (or `--abort` from `copying`, `verifying`, `switching`) | waits `since + Δ`; an Abort pass; the marker removed |
//!
//! Resume (§7.2): a marker of a run migrating to the same `to` is continued in its state; the
//! state's first pass continues after the checkpoint's cursor when the checkpoint names the
//! marker's run and state, else it starts from the beginning with the next pass number. A pass
//! resumed from a cursor does not know what the pages before it found, so a pass that decides
//! counts only when it ran whole: the verification and the final pass are never resumed (they
//! start again from the beginning), and a resumed clean-up is followed by a whole one before
//! the marker is removed (§12.18). Every wait is
//! measured from the marker's `since`, so a resumed run does not wait again for time already
//! passed. Each marker change emits [`MigrateEvent::StateChanged`]; the passes' events pass
//! through.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::objmeta::keys::{VFormat, collection_for_bucket};
use rowkit_codec::objmeta::migration::marker::{
    DEFAULT_SETTLE_US, Gates, MIN_SETTLE_US, MarkerChange, MigrationCheckpoint, MigrationMarker,
    MigrationState, RunId,
};
use rowkit_codec::objmeta::migration::pass::pair_key;
use rowkit_codec::objmeta::migration::sync::Keep;

use super::super::requests::{OmIo, P};
use super::super::{ObjmetaError, ObjmetaEvent, ObjmetaSchema, ObjmetaState, begin};
use super::marker::{MigrationRead, ReadMigrationFlow, WriteCheckpointFlow, WriteMarkerFlow};
use super::pass::{
    MigrateEvent, MigrationPassFlow, PassConflict, PassFinding, PassKind, PassResume, PassSummary,
};
use crate::Timestamp;
use crate::check::{CheckError, CheckOptions, CheckTarget, Finding, NestedCheck};
use crate::objmeta::check::Check;
use crate::operation::{ContextArg, Flow, Operation, OperationError, Start};

/// `MigrateBucket(bucket, to, options)`: the whole migration of a bucket's key layout, as far
/// as the gates allow (`rowkit s3 migrate BUCKET --to v1|v0`).
pub type MigrateBucket<'a> = Operation<'a, MigrateBucketFlow>;

/// The migrator's command-line options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigrateOptions {
    /// `--switch` / `--finish`: the states the operator lets the run enter (§3).
    pub gates: Gates,
    /// `--abort`: roll back before the switch (§4.9's first two rows; `switched` is rolled back
    /// by a run `--to` its `from`).
    pub abort: bool,
    /// `--settle`: `Δ` for a run this operation starts (`None`: [`DEFAULT_SETTLE_US`]); never
    /// below [`MIN_SETTLE_US`]. A resumed run keeps its marker's `settle_us`.
    pub settle_us: Option<i64>,
    /// `from` rows read per page (`0`: the pass's default).
    pub page_rows: u32,
    /// `--take-over`: write checkpoints even while another owner's lease holds (§7.1).
    pub take_over: bool,
    /// Who runs the migration (`host:pid`): the checkpoints' `owner`, whose lease keeps a
    /// second migrator out (§7.1).
    pub owner: String,
    /// `--resolve keep-to|keep-from`: conflicts met after the switch are settled by copying
    /// this side over the other (§4.6); `None`: they are reported and left, and block.
    pub resolve: Option<Keep>,
    /// `--max-pause`: the longest fence the `--switch` gate may start, µs (§11.2); `None`:
    /// no bound.
    pub max_pause_us: Option<i64>,
}

/// Where a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrateEnd {
    /// The bucket's `vFormat` already was `to` and no marker was present: nothing written.
    Already,
    /// The run stopped in this state: a gate not given, or (`cleaning`) conflicts or findings
    /// left (see [`MigrateOutcome::blocked`]).
    InState(MigrationState),
    /// The marker was removed: the migration (or its rollback) is complete.
    Removed,
}

/// What a run did: where it ended and every pass it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MigrateOutcome {
    /// Where the run ended.
    pub end: MigrateEnd,
    /// The run id (`None` for [`MigrateEnd::Already`]).
    pub run: Option<RunId>,
    /// The passes this operation ran, in order.
    pub passes: Vec<PassSummary>,
    /// Adopted stragglers, over every pass.
    pub stragglers: Vec<String>,
    /// Conflicts, over every pass.
    pub conflicts: Vec<PassConflict>,
    /// Findings that did not stop the run: the sweeps' and the clean-up's, and the `to`
    /// layout check's findings of the source's own (§8).
    pub findings: Vec<PassFinding>,
    /// Conflicts settled by `--resolve`, over every pass (their `from` keys).
    pub resolved: Vec<String>,
    /// The pause the `--switch` gate expected (`Δ` + rows ÷ the verification's rate, µs),
    /// when this run reached the gate with `--switch` (§11.2).
    pub pause_estimate_us: Option<i64>,
}

impl MigrateOutcome {
    fn empty(end: MigrateEnd) -> MigrateOutcome {
        MigrateOutcome {
            end,
            run: None,
            passes: Vec::new(),
            stragglers: Vec::new(),
            conflicts: Vec::new(),
            findings: Vec::new(),
            resolved: Vec::new(),
            pause_estimate_us: None,
        }
    }

    /// Whether the run stopped because something needs the operator (a sweep of `switched`
    /// or the clean-up left conflicts or findings): the CLI exits 1.
    pub fn blocked(&self) -> bool {
        let after_switch = matches!(
            self.end,
            MigrateEnd::InState(MigrationState::Switched | MigrationState::Cleaning)
        );
        let blocking = self
            .conflicts
            .iter()
            .any(|c| !self.resolved.contains(&c.key))
            || self.findings.iter().any(|f| !is_source_own(f));
        after_switch && blocking
    }
}

/// A check finding of the source's own: reported, never blocking (§8, §12.27).
fn is_source_own(finding: &PassFinding) -> bool {
    matches!(
        finding,
        PassFinding::Check {
            source_own: true,
            ..
        }
    )
}

/// What the last pass of the current state came to.
#[derive(Debug)]
struct PassVerdict {
    /// It ran from the beginning of its pass in this operation (not resumed from a cursor).
    from_start: bool,
    /// Its pairs not in sync (resumed counters included).
    diffs: u64,
    /// Whether it found keys or rows it cannot sync.
    findings: bool,
    /// Clean-up: a `from` row is left.
    from_rows_left: bool,
    /// It left conflicts.
    conflicts: bool,
    /// Rows it read, and its rate (rows per second): the `--switch` gate's estimate.
    rows_scanned: u64,
    rate: Option<u64>,
    /// A clean verification: the check of the `to` layout ran after it and blocks nothing.
    checked: bool,
}

/// The schema check of the `to` layout (§8), then — only when it found something — of the
/// `from` layout, to tell the source's own findings from the copy's.
#[derive(Debug)]
struct LayoutCheck {
    nested: NestedCheck<Check>,
    /// The layout being checked.
    layout: VFormat,
    /// The `to` layout's findings, once its check ended (the `from` check is running).
    to_findings: Option<Vec<Finding>>,
}

#[derive(Debug)]
enum RunPhase {
    /// The bucket's metastore row being read.
    Read(ReadMigrationFlow),
    /// A marker change being written; `from` is the state before it.
    Marker {
        write: Box<WriteMarkerFlow>,
        from: Option<MigrationState>,
    },
    /// Waiting until the marker's `since + Δ` (§2.3) before the state's pass.
    Settle(Timestamp),
    /// A pass running.
    Pass {
        pass: Box<MigrationPassFlow>,
        from_start: bool,
    },
    /// The schema check of the `to` layout after a clean verification (§8).
    Check(Box<LayoutCheck>),
    /// The run stops at a gate (or is refused there): its lease being released first (§7.1),
    /// then `end`.
    Release {
        write: Box<WriteCheckpointFlow>,
        end: Result<MigrateEnd, ObjmetaError>,
    },
    Done,
}

/// The flow of [`MigrateBucket`].
#[derive(Debug)]
pub struct MigrateBucketFlow {
    bucket: String,
    to: VFormat,
    options: MigrateOptions,
    /// The metastore row as last read or written (`None` before the first read).
    migration: Option<MigrationRead>,
    /// The checkpoint to resume the current state's first pass from (§7.2), taken once.
    resume: Option<MigrationCheckpoint>,
    /// The last pass run in the current state (cleared by every marker change).
    verdict: Option<PassVerdict>,
    outcome: MigrateOutcome,
    /// Whether the lease was released (or had nothing to release) before the run ends.
    released: bool,
    phase: RunPhase,
}

impl<'a> MigrateBucket<'a> {
    /// Migrates `bucket` to key format `to` as far as `options.gates` allow, starting a run or
    /// resuming the one its marker names (see the module doc). Refused before any request:
    /// `options.settle_us` below [`MIN_SETTLE_US`] ([`ObjmetaError::MigrationUsage`]). Refused
    /// after the read, before any write: no bucket (`NoSuchBucket`); a marker of a run to
    /// another layout (`migration_in_progress`); a marker of another bucket uid
    /// (`bucket_deleted`); `--abort` with no marker, or after the switch (`usage_error`). Its
    /// deadline bounds the whole run: a run that ends aborted resumes where it stopped.
    pub fn new(
        ctx: impl Into<ContextArg<'a, ObjmetaState>>,
        bucket: &str,
        to: VFormat,
        options: MigrateOptions,
        start: Start,
    ) -> MigrateBucket<'a> {
        if let Some(settle) = options.settle_us
            && settle < MIN_SETTLE_US
        {
            let error = ObjmetaError::MigrationUsage(alloc::format!(
                "--settle {settle} µs is below the minimum of {MIN_SETTLE_US} µs \
                 (marker_ttl + max(max_write, 75 s) + skew, docs/migration.md §2.3)"
            ));
            return Operation::failed(ctx.into(), error);
        }
        let flow = MigrateBucketFlow {
            bucket: bucket.into(),
            to,
            options,
            migration: None,
            resume: None,
            verdict: None,
            outcome: MigrateOutcome::empty(MigrateEnd::Already),
            released: false,
            phase: RunPhase::Read(ReadMigrationFlow::new(bucket)),
        };
        begin(ctx, start, flow)
    }
}

/// What the run does next.
enum Next {
    Write(MarkerChange),
    Settle(Timestamp),
    Pass(PassKind),
    /// The schema check of a layout (§8).
    Check(VFormat),
    /// The run ends (`Err`: refused at a gate, after its lease is released).
    End(Result<MigrateEnd, ObjmetaError>),
}

impl MigrateBucketFlow {
    /// The refusals of §4.1 on the row as first read, and what the run starts with.
    fn first(&mut self, io: &mut OmIo, read: MigrationRead) -> Result<Next, ObjmetaError> {
        let Some(marker) = read.marker.clone() else {
            if self.options.abort {
                return Err(ObjmetaError::MigrationUsage(alloc::format!(
                    "bucket {} has no migration to abort",
                    self.bucket
                )));
            }
            if read.vformat == self.to {
                self.migration = Some(read);
                return Ok(Next::End(Ok(MigrateEnd::Already)));
            }
            let uid = read.bucket_uid.clone().ok_or_else(|| {
                ObjmetaError::MigrationUsage(alloc::format!(
                    "bucket {} has neither a uid nor a creationDate to name it by in the \
                     migration marker: give it one with putBucketAttributes first",
                    self.bucket
                ))
            })?;
            let run = RunId((u128::from(io.next_seed()) << 64) | u128::from(io.next_seed()));
            let settle = self.options.settle_us.unwrap_or(DEFAULT_SETTLE_US);
            let marker = MigrationMarker::new(
                run,
                read.vformat,
                self.to,
                MigrationState::Copying,
                io.now(),
                settle,
                &uid,
            );
            self.migration = Some(read);
            return Ok(Next::Write(MarkerChange::Write(marker)));
        };
        if read.bucket_uid.as_deref() != Some(marker.bucket_uid.as_str()) {
            return Err(ObjmetaError::BucketDeleted);
        }
        if marker.to != self.to && marker.state == MigrationState::Switched && !self.options.abort {
            return self.roll_back(io, read, marker);
        }
        if marker.to != self.to {
            return Err(ObjmetaError::MigrationInProgress(alloc::format!(
                "run {} migrates bucket {} from {} to {} ({})",
                marker.run,
                self.bucket,
                marker.from.as_str(),
                marker.to.as_str(),
                marker.state
            )));
        }
        self.resume = read
            .checkpoint
            .clone()
            .filter(|c| c.run == marker.run && c.state == marker.state);
        self.migration = Some(read);
        if self.options.abort {
            return match marker.state {
                MigrationState::Copying | MigrationState::Verifying | MigrationState::Switching => {
                    let since = io.now();
                    Ok(Next::Write(MarkerChange::Write(
                        marker.with_state(MigrationState::Aborting, since),
                    )))
                }
                MigrationState::Aborting => self.next(io),
                MigrationState::Switched | MigrationState::Cleaning => {
                    Err(ObjmetaError::MigrationUsage(alloc::format!(
                        "run {} is {}: the truth is {} and --abort would delete it; roll back \
                         with --to {} (docs/migration.md §4.9)",
                        marker.run,
                        marker.state,
                        marker.to.as_str(),
                        marker.from.as_str()
                    )))
                }
            };
        }
        self.next(io)
    }

    /// §4.9's third row: `--to <from>` on a `switched` bucket starts the swapped run (a new
    /// run id, `from` and `to` swapped) at `switching` — it needs `--switch`, since it fences
    /// the writers; without it the run is refused before any write.
    fn roll_back(
        &mut self,
        io: &mut OmIo,
        read: MigrationRead,
        marker: MigrationMarker,
    ) -> Result<Next, ObjmetaError> {
        if !self.options.gates.switch {
            return Err(ObjmetaError::MigrationUsage(alloc::format!(
                "run {} is switched to {}: rolling back to {} fences the writers and needs \
                 --switch (docs/migration.md §4.9)",
                marker.run,
                marker.to.as_str(),
                marker.from.as_str()
            )));
        }
        let run = RunId((u128::from(io.next_seed()) << 64) | u128::from(io.next_seed()));
        let swapped = MigrationMarker::new(
            run,
            marker.to,
            marker.from,
            MigrationState::Switching,
            io.now(),
            marker.settle_us,
            &marker.bucket_uid,
        );
        self.migration = Some(read);
        Ok(Next::Write(MarkerChange::Write(swapped)))
    }

    /// The next step from the marker as last read and the current state's last pass.
    fn next(&mut self, io: &mut OmIo) -> Result<Next, ObjmetaError> {
        let Some(marker) = self.migration.as_ref().and_then(|m| m.marker.clone()) else {
            return Ok(Next::End(Ok(MigrateEnd::Removed)));
        };
        let state = marker.state;
        let gates = self.options.gates;
        let to_state = |s: MigrationState| MarkerChange::Write(marker.with_state(s, io.now()));
        let blocked = |findings: &[PassFinding]| ObjmetaError::MigrationBlocked {
            state,
            findings: findings.to_vec(),
        };
        let stop = Next::End(Ok(MigrateEnd::InState(state)));
        let Some(verdict) = &self.verdict else {
            let kind = match state {
                MigrationState::Copying => PassKind::Copy,
                MigrationState::Verifying => PassKind::Verify,
                // The final pass of `switching` and the sweep of `switched` (§4.5, §4.6).
                MigrationState::Switching | MigrationState::Switched => PassKind::Light,
                MigrationState::Cleaning => PassKind::Clean,
                MigrationState::Aborting => PassKind::Abort,
            };
            let settled = marker.since.saturating_add_micros(marker.settle_us);
            if matches!(
                state,
                MigrationState::Switching | MigrationState::Cleaning | MigrationState::Aborting
            ) && io.now() < settled
            {
                return Ok(Next::Settle(settled));
            }
            return Ok(Next::Pass(kind));
        };
        let clean = verdict.from_start && verdict.diffs == 0;
        Ok(match state {
            MigrationState::Copying => Next::Write(to_state(MigrationState::Verifying)),
            MigrationState::Verifying | MigrationState::Switching if verdict.findings => {
                let last = self.outcome.passes.last().map(|p| p.findings.as_slice());
                return Err(blocked(last.unwrap_or_default()));
            }
            MigrationState::Verifying if !clean => Next::Pass(PassKind::Verify),
            MigrationState::Verifying if !verdict.checked => Next::Check(marker.to),
            MigrationState::Verifying if gates.switch => {
                // §11.2: the fence lasts `Δ` + one light pass over the rows the verification
                // read, at the verification's rate (an unmeasured rate adds nothing).
                let rows = verdict.rows_scanned;
                let pass_us = verdict.rate.filter(|r| *r > 0).map_or(0, |rate| {
                    let us = u128::from(rows) * 1_000_000 / u128::from(rate);
                    i64::try_from(us).unwrap_or(i64::MAX)
                });
                let estimate_us = marker.settle_us.saturating_add(pass_us);
                self.outcome.pause_estimate_us = Some(estimate_us);
                match self.options.max_pause_us {
                    Some(max_pause_us) if estimate_us > max_pause_us => {
                        Next::End(Err(ObjmetaError::MigrationPauseTooLong {
                            estimate_us,
                            settle_us: marker.settle_us,
                            rows,
                            rate: verdict.rate,
                            max_pause_us,
                        }))
                    }
                    _ => Next::Write(to_state(MigrationState::Switching)),
                }
            }
            MigrationState::Verifying => stop,
            MigrationState::Switching if !clean => Next::Pass(PassKind::Light),
            MigrationState::Switching => Next::Write(MarkerChange::Switch(
                marker.with_state(MigrationState::Switched, io.now()),
            )),
            // A sweep's conflicts or findings need the operator (§4.6): the run stops here.
            MigrationState::Switched if verdict.conflicts || verdict.findings => stop,
            MigrationState::Switched if gates.finish => {
                Next::Write(to_state(MigrationState::Cleaning))
            }
            MigrationState::Switched => stop,
            MigrationState::Cleaning if !verdict.from_start => Next::Pass(PassKind::Clean),
            MigrationState::Cleaning if verdict.from_rows_left => stop,
            MigrationState::Cleaning | MigrationState::Aborting => {
                Next::Write(MarkerChange::Remove)
            }
        })
    }

    /// Starts the schema check of `layout`, restricted to the bucket (§8), as a nested
    /// operation with the run's deadline.
    fn start_check(&self, io: &mut OmIo, st: &ObjmetaState, layout: VFormat) -> NestedCheck<Check> {
        let options = CheckOptions {
            page_rows: match self.options.page_rows {
                0 => CheckOptions::default().page_rows,
                rows => i64::from(rows),
            },
            ..CheckOptions::default()
        };
        let start = io.child_start();
        let target = CheckTarget::new(&st.config.table);
        let check = Check::layout(target, &self.bucket, layout, options, start);
        NestedCheck::start(io, check)
    }

    /// The check findings of the `to` layout, each marked whether it is the source's own: the
    /// same kind on the pair's `from` row (§8, §12.27).
    fn judge_check(&self, to: &[Finding], from: &[Finding]) -> Vec<PassFinding> {
        let collection = collection_for_bucket(&self.bucket);
        let Some(marker) = self.migration.as_ref().and_then(|m| m.marker.as_ref()) else {
            return Vec::new();
        };
        let pair = |f: &Finding, layout: VFormat| {
            pair_key(&f.row_key, collection, layout).map(|k| (f.kind, k))
        };
        let source: Vec<_> = from.iter().filter_map(|f| pair(f, marker.from)).collect();
        to.iter()
            .map(|f| PassFinding::Check {
                finding: f.clone(),
                source_own: pair(f, marker.to).is_some_and(|p| source.contains(&p)),
            })
            .collect()
    }

    /// The pass of `kind` in the marker's state: resumed from the checkpoint when it names
    /// this run and state (once), else from the beginning with the next pass number.
    fn start_pass(&mut self, io: &mut OmIo, kind: PassKind) -> Result<RunPhase, ObjmetaError> {
        let migration = self
            .migration
            .clone()
            .ok_or_else(|| ObjmetaError::internal("a pass before the migration was read"))?;
        let marker = migration
            .marker
            .clone()
            .ok_or_else(|| ObjmetaError::internal("a pass without a marker"))?;
        let now = io.now();
        // A decisive pass (verification, final pass) always runs whole: resumed, it would
        // have to be followed by a whole one anyway.
        let resumable = matches!(kind, PassKind::Copy | PassKind::Clean | PassKind::Abort);
        let resume = self
            .resume
            .take()
            .filter(|c| resumable && c.run == marker.run && c.state == marker.state);
        let (checkpoint, from_start) = match resume {
            Some(resumed) => {
                let from_start = resumed.cursor.is_none();
                let checkpoint = MigrationCheckpoint {
                    owner: self.options.owner.clone(),
                    ..resumed
                };
                (checkpoint, from_start)
            }
            None => {
                let checkpoint = MigrationCheckpoint::next_pass(
                    migration.checkpoint.as_ref(),
                    marker.run,
                    marker.state,
                    &self.options.owner,
                    now,
                );
                (checkpoint, true)
            }
        };
        let resume = PassResume {
            as_read: migration,
            checkpoint,
            take_over: self.options.take_over,
        };
        let pass = MigrationPassFlow::new(
            &self.bucket,
            marker.from,
            marker.to,
            marker.state.truth(),
            kind,
            resume,
            self.options.page_rows,
        )?
        .resolving(self.options.resolve);
        Ok(RunPhase::Pass {
            pass: Box::new(pass),
            from_start,
        })
    }

    /// The phase that carries out `next`, or the run's output when it ends.
    fn carry_out(
        &mut self,
        io: &mut OmIo,
        st: &ObjmetaState,
        next: Next,
    ) -> Result<Result<RunPhase, MigrateOutcome>, ObjmetaError> {
        Ok(Ok(match next {
            Next::Write(change) => {
                let migration = self
                    .migration
                    .as_ref()
                    .ok_or_else(|| ObjmetaError::internal("a marker write before the read"))?;
                let from = migration.marker.as_ref().map(|m| m.state);
                let write =
                    WriteMarkerFlow::new(&self.bucket, migration, change, self.options.gates)?;
                RunPhase::Marker {
                    write: Box::new(write),
                    from,
                }
            }
            Next::Settle(until) => RunPhase::Settle(until),
            Next::Pass(kind) => self.start_pass(io, kind)?,
            Next::Check(layout) => RunPhase::Check(Box::new(LayoutCheck {
                nested: self.start_check(io, st, layout),
                layout,
                to_findings: None,
            })),
            Next::End(end @ (Ok(MigrateEnd::InState(_)) | Err(_))) if !self.released => {
                self.released = true;
                let migration = self
                    .migration
                    .as_ref()
                    .ok_or_else(|| ObjmetaError::internal("a run ending before the read"))?;
                match WriteCheckpointFlow::release(
                    &self.bucket,
                    migration,
                    &self.options.owner,
                    io.now(),
                )? {
                    Some(write) => RunPhase::Release {
                        write: Box::new(write),
                        end,
                    },
                    None => return self.carry_out(io, st, Next::End(end)),
                }
            }
            Next::End(end) => {
                let end = end?;
                let mut outcome = core::mem::replace(&mut self.outcome, MigrateOutcome::empty(end));
                outcome.end = end;
                return Ok(Err(outcome));
            }
        }))
    }

    /// Records a finished pass: its summary in the output, its verdict for the next step.
    fn record_pass(&mut self, summary: PassSummary, from_start: bool) {
        self.verdict = Some(PassVerdict {
            from_start,
            diffs: summary.diffs,
            findings: !summary.findings.is_empty(),
            from_rows_left: summary.deletion.from_rows_left,
            conflicts: !summary.conflicts.is_empty(),
            rows_scanned: summary.counters.rows_scanned,
            rate: summary.rate_rows_per_s,
            checked: false,
        });
        self.outcome
            .resolved
            .extend(summary.resolved.iter().cloned());
        self.outcome
            .stragglers
            .extend(summary.stragglers.iter().cloned());
        self.outcome
            .conflicts
            .extend(summary.conflicts.iter().cloned());
        self.outcome
            .findings
            .extend(summary.findings.iter().cloned());
        self.outcome.passes.push(summary);
    }
}

impl Flow for MigrateBucketFlow {
    type Schema = ObjmetaSchema;
    type Output = MigrateOutcome;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<MigrateOutcome> {
        loop {
            let next = match core::mem::replace(&mut self.phase, RunPhase::Done) {
                RunPhase::Read(mut read) => {
                    let Some(migration) = read.advance(io, st)? else {
                        self.phase = RunPhase::Read(read);
                        return Ok(None);
                    };
                    if let Some(m) = &migration.marker {
                        self.outcome.run = Some(m.run);
                    }
                    self.first(io, migration)?
                }
                RunPhase::Marker { mut write, from } => {
                    let Some(written) = write.advance(io, st)? else {
                        self.phase = RunPhase::Marker { write, from };
                        return Ok(None);
                    };
                    let to = written.marker.as_ref().map(|m| m.state);
                    if let Some(m) = &written.marker {
                        self.outcome.run = Some(m.run);
                    }
                    io.emit(ObjmetaEvent::Migrate(MigrateEvent::StateChanged {
                        from,
                        to,
                    }));
                    self.migration = Some(written);
                    self.verdict = None;
                    self.resume = None;
                    self.next(io)?
                }
                RunPhase::Settle(until) => {
                    if io.now() < until {
                        if !io.sleeping() {
                            io.sleep_until(until);
                        }
                        self.phase = RunPhase::Settle(until);
                        return Ok(None);
                    }
                    io.cancel_sleep();
                    self.next(io)?
                }
                RunPhase::Pass {
                    mut pass,
                    from_start,
                } => {
                    let Some(done) = pass.advance(io, st)? else {
                        self.phase = RunPhase::Pass { pass, from_start };
                        return Ok(None);
                    };
                    self.migration = Some(done.migration);
                    self.record_pass(done.summary, from_start);
                    self.next(io)?
                }
                RunPhase::Check(mut check) => {
                    let Some(result) = check.nested.advance(io) else {
                        self.phase = RunPhase::Check(check);
                        return Ok(None);
                    };
                    let found = result.map_err(|e| match e {
                        CheckError::Aborted => ObjmetaError::Aborted,
                        CheckError::Store(e) => ObjmetaError::store(e),
                        other => ObjmetaError::internal(alloc::format!(
                            "the check of the {} layout: {other}",
                            check.layout.as_str()
                        )),
                    })?;
                    let marker_from = self.migration.as_ref().and_then(|m| m.marker.as_ref());
                    match (check.to_findings.take(), marker_from) {
                        // Findings in `to`: check `from` too, to tell the source's own.
                        (None, Some(marker)) if !found.is_empty() => {
                            let from = marker.from;
                            check.to_findings = Some(found);
                            check.nested = self.start_check(io, st, from);
                            check.layout = from;
                            self.phase = RunPhase::Check(check);
                            continue;
                        }
                        (to, _) => {
                            let (to, from) = match to {
                                Some(to) => (to, found),
                                None => (found, Vec::new()),
                            };
                            let judged = self.judge_check(&to, &from);
                            for finding in &judged {
                                io.emit(ObjmetaEvent::Migrate(MigrateEvent::Finding(
                                    finding.clone(),
                                )));
                            }
                            if judged.iter().any(|f| !is_source_own(f)) {
                                return Err(ObjmetaError::MigrationBlocked {
                                    state: MigrationState::Verifying,
                                    findings: judged,
                                });
                            }
                            self.outcome.findings.extend(judged);
                            if let Some(verdict) = &mut self.verdict {
                                verdict.checked = true;
                            }
                            self.next(io)?
                        }
                    }
                }
                RunPhase::Release { mut write, end } => {
                    let Some(written) = write.advance(io, st)? else {
                        self.phase = RunPhase::Release { write, end };
                        return Ok(None);
                    };
                    self.migration = Some(written);
                    Next::End(end)
                }
                RunPhase::Done => return Ok(None),
            };
            match self.carry_out(io, st, next)? {
                Ok(phase) => self.phase = phase,
                Err(outcome) => return Ok(Some(outcome)),
            }
        }
    }
}
