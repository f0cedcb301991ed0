//! The delayed placeholder repair, `AsyncRepair` (`objmeta.md` 8.4).

use super::*;
use rowkit_codec::objmeta::migration::marker::MAX_REPAIR_WRITE_US;

/// How a repair ended (`objmeta.md` 8.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RepairOutcome {
    /// The master now holds the latest version.
    Repaired,
    /// The master changed meanwhile; nothing written.
    Conflict,
    /// No version left.
    NoVersion,
    /// A request failed, or the deadline passed.
    Failed,
}

impl RepairOutcome {
    /// Lowercase name for output.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairOutcome::Repaired => "repaired",
            RepairOutcome::Conflict => "conflict",
            RepairOutcome::NoVersion => "no_version",
            RepairOutcome::Failed => "failed",
        }
    }
}

/// The flow of [`AsyncRepair`]: it sleeps until the task's `due`, reads the latest version and
/// writes it to the master unless the master is no longer placeholder `phd`. A task scheduled
/// under a migration marker runs as an aware write under that marker ([`Aware::under`]).
#[derive(Debug)]
pub struct AsyncRepairFlow(Aware<RepairProtocol>);

impl Flow for AsyncRepairFlow {
    type Schema = ObjmetaSchema;
    type Output = RepairOutcome;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<RepairOutcome> {
        self.0.advance(io, st)
    }
}

/// Arsenal's repair protocol (`objmeta.md` 8.4).
#[derive(Debug)]
struct RepairProtocol {
    task: RepairTask,
    phase: RepairPhase,
}

#[derive(Debug)]
enum RepairPhase {
    /// Until `due`.
    Sleeping,
    Latest(LatestVersion),
    Write {
        cas: ChildId,
        mk: String,
        latest: Json,
    },
    Done,
}

impl AsyncRepair {
    /// `asyncRepair(bucket, key, phd, vf)` of `task` on `table`: created at `now`, it sends
    /// nothing before `task.due` (its `poll_timeout` is `due` until then); its deadline is
    /// `start`'s (the facade's: `due + 60 s`, [`AsyncRepair::start_at`]). A repair that cannot complete ends `Failed`, or `Aborted` when
    /// cancelled or past its deadline.
    pub fn new(table: &str, task: RepairTask, start: Start) -> AsyncRepair {
        let state = ObjmetaState::new(ObjmetaConfig {
            table: table.to_string(),
            migration_aware: task.migration.is_some(),
            ..ObjmetaConfig::default()
        });
        let layout = task.migration.as_ref().map(|m| m.layout(task.vformat));
        let protocol = RepairProtocol {
            task,
            phase: RepairPhase::Sleeping,
        };
        let flow = match layout {
            Some(layout) => Aware::under(protocol, layout, MAX_REPAIR_WRITE_US),
            None => Aware::new(protocol),
        };
        begin(ContextArg::owned(state), start, AsyncRepairFlow(flow))
    }

    /// The [`Start`] of a repair of `task` created at `now`: its 60 s run from `due`, when
    /// the repair starts (`objmeta.md` 16.3).
    pub fn start_at(task: &RepairTask, now: Timestamp, seed: u64) -> Start {
        Start {
            now,
            seed,
            deadline: task.due.saturating_add_micros(DEFAULT_DEADLINE_US),
        }
    }
}

impl Protocol for RepairProtocol {
    fn bucket(&self) -> &str {
        &self.task.bucket
    }

    /// The task's key format is the one it was scheduled under.
    fn use_layout(&mut self, _layout: &BucketLayout) {}
}

impl Flow for RepairProtocol {
    type Schema = ObjmetaSchema;
    type Output = RepairOutcome;

    fn advance(&mut self, io: &mut OmIo, st: &mut ObjmetaState) -> P<RepairOutcome> {
        loop {
            match core::mem::replace(&mut self.phase, RepairPhase::Done) {
                RepairPhase::Sleeping => {
                    if io.now() < self.task.due {
                        io.sleep_until(self.task.due);
                        self.phase = RepairPhase::Sleeping;
                        return Ok(None);
                    }
                    let t = &self.task;
                    let coll = collection_for_bucket(&t.bucket);
                    let read = LatestVersion::start(io, st, coll, t.vformat, &t.key);
                    self.phase = RepairPhase::Latest(read);
                }
                RepairPhase::Latest(read) => {
                    let latest = match read.poll(io) {
                        Ok(None) => {
                            self.phase = RepairPhase::Latest(read);
                            return Ok(None);
                        }
                        Ok(Some(Some(l))) => l,
                        Ok(Some(None)) => return Ok(Some(RepairOutcome::NoVersion)),
                        Err(_) => return Ok(Some(RepairOutcome::Failed)),
                    };
                    let mut latest = latest;
                    if let Some(o) = latest.as_object_mut() {
                        o.set("originOp", Json::str(ORIGIN_OP_DELETE));
                    }
                    escape_tags(&mut latest);
                    let t = &self.task;
                    let mk = master_key(t.vformat, &t.key);
                    let row = row_key(collection_for_bucket(&t.bucket), &mk);
                    let moved = filters::exists_and_not(filters::phd_is(&t.phd_version_id));
                    let rep = replace(&latest, None);
                    let Ok(cas) = start_cas(io, st, row, moved, vec![], rep) else {
                        return Ok(Some(RepairOutcome::Failed));
                    };
                    self.phase = RepairPhase::Write { cas, mk, latest };
                }
                RepairPhase::Write { cas, mk, latest } => {
                    let matched = match io.matched::<ObjmetaError>(cas) {
                        Ok(None) => {
                            self.phase = RepairPhase::Write { cas, mk, latest };
                            return Ok(None);
                        }
                        Ok(Some(m)) => m,
                        Err(_) => return Ok(Some(RepairOutcome::Failed)),
                    };
                    if matched {
                        return Ok(Some(RepairOutcome::Conflict));
                    }
                    let coll = collection_for_bucket(&self.task.bucket);
                    put_event(io, coll, &mk, &latest);
                    return Ok(Some(RepairOutcome::Repaired));
                }
                RepairPhase::Done => return Ok(None),
            }
        }
    }
}
