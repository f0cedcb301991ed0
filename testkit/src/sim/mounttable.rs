//! The mount table under the simulator (`spec/mounttable.md`): clients mount and unmount
//! servers on a small tree of names, delete nodes (with and without their subtree) and
//! resolve, all as the server user. Afterwards, with `fsck --fix` run as the repair:
//!
//! - `fsck` (report only) finds nothing: no orphan, no dangling child reference;
//! - the counter table equals a recount of the node table (nodes and servers per creator);
//! - every server whose last mount or unmount the history determines (an acknowledged
//!   Mount/Unmount of that name, or Delete of it or an ancestor, overlapping no other
//!   operation that could change it) is mounted exactly when that operation says so.
//!
//! Mounts use a one-day TTL, so no acknowledged mount expires during a run (clock jumps
//! are at most seconds).

use std::collections::BTreeMap;

use rowkit_codec::model::{ColumnFamily, GcRule, RowSet};
use rowkit_codec::mounttable::{self as codec, Caller, MountFlags};
use rowkit_statemachines::mounttable::{self as mt, FsckSummary, MtCtx, Tables};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::{ReadRowsRequest, SplitMix64, Timestamp};

use super::{Checked, Outcome, Record, SimMachine, Workload, erase};
use rowkit_store::driver::ManualClock;
use rowkit_store::{MemoryStore, Store};

/// Names of the tree (parents before children).
const NAMES: &[&str] = &["a", "a/x", "a/y", "a/x/deep", "b", "b/x"];
/// Servers clients mount.
const SERVERS: &[&str] = &["/127.0.0.1:1", "/127.0.0.1:2", "/127.0.0.1:3"];
/// One day: no acknowledged mount expires within a run.
const TTL_S: u32 = 86_400;
/// Operation deadline (µs): long enough to ride out faults, short enough for clock jumps.
const DEADLINE_US: i64 = 30_000_000;

/// A mount table operation (names and servers by index into [`NAMES`] / [`SERVERS`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MtOp {
    /// `Mount(name, server)` with a one-day TTL.
    Mount(usize, usize),
    /// `Unmount(name, server)`; `None` = every server.
    Unmount(usize, Option<usize>),
    /// `Delete(name, subtree)`.
    Delete(usize, bool),
    /// `ResolveStep(name)`.
    Resolve(usize),
    /// `fsck --fix` (the repair).
    FsckFix,
}

impl MtOp {
    /// Whether this operation can change whether `server` is mounted on `name`.
    fn touches(&self, name: usize, server: usize) -> bool {
        let under = |n: usize| {
            NAMES[name] == NAMES[n] || NAMES[name].starts_with(&format!("{}/", NAMES[n]))
        };
        match *self {
            MtOp::Mount(n, s) => n == name && s == server,
            MtOp::Unmount(n, s) => n == name && s.is_none_or(|s| s == server),
            MtOp::Delete(n, subtree) => n == name || (subtree && under(n)),
            MtOp::Resolve(_) => false,
            MtOp::FsckFix => true,
        }
    }
}

/// What an operation returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MtOutput {
    /// Mount, Unmount, Delete finished.
    Done,
    /// ResolveStep's servers.
    Resolved(Vec<String>),
    /// fsck's summary.
    Fsck(FsckSummary),
}

/// The mount table workload (see the module doc).
#[derive(Debug)]
pub struct MounttableWorkload {
    /// Whether `fsck --fix` runs before the checks (see [`MounttableWorkload::unrepaired`]).
    repair: bool,
}

impl Default for MounttableWorkload {
    fn default() -> Self {
        MounttableWorkload { repair: true }
    }
}

impl MounttableWorkload {
    /// The workload without the `fsck --fix` repair: the table the operations themselves left
    /// must be consistent. Meant for runs without crashes and lost answers (those may leave a
    /// dangling reference that only a repair removes); races alone must never leave an orphan.
    pub fn unrepaired() -> Self {
        MounttableWorkload { repair: false }
    }
}

fn ctx() -> MtCtx {
    MtCtx {
        caller: Caller::new(&[], true),
        ..MtCtx::new()
    }
}

fn scan(
    store: &MemoryStore,
    table: &str,
    now: Timestamp,
) -> Result<Vec<rowkit_codec::model::Row>, String> {
    let request = ReadRowsRequest {
        table: table.into(),
        rows: RowSet::all(),
        ..Default::default()
    };
    rowkit_client::read_rows_blocking(store, request, now).map_err(|e| format!("scan {table}: {e}"))
}

fn run_quiet<M>(store: &MemoryStore, now: Timestamp, m: M) -> Result<M::Output, String>
where
    M: rowkit_statemachines::Machine,
    M::Error: std::fmt::Display,
{
    let clock = ManualClock::new(now);
    rowkit_client::run_blocking(store, &clock, m, |_| {}).map_err(|e| match e {
        rowkit_client::RunError::Machine(e) => e.to_string(),
        other => other.to_string(),
    })
}

impl Workload for MounttableWorkload {
    type Op = MtOp;
    type Output = MtOutput;

    fn setup(&mut self, store: &MemoryStore, now: Timestamp, _seed: u64) -> Result<(), String> {
        let tables = Tables::default();
        let family = |name: &str| ColumnFamily {
            name: name.into(),
            gc_rule: Some(GcRule::MaxNumVersions(1)),
        };
        store
            .create_table(&tables.counter, &[family("m")])
            .map_err(|e| e.to_string())?;
        store
            .create_table(&tables.node, &[family("m"), family("s"), family("c")])
            .map_err(|e| e.to_string())?;
        run_quiet(
            store,
            now,
            mt::CreateInitialNodes::new(ctx(), None, Start::within(now, 0, DEADLINE_US)),
        )
    }

    fn next_op(&mut self, rng: &mut SplitMix64) -> MtOp {
        let name = (rng.next_u64() % NAMES.len() as u64) as usize;
        let server = (rng.next_u64() % SERVERS.len() as u64) as usize;
        match rng.next_u64() % 10 {
            0..=3 => MtOp::Mount(name, server),
            4 | 5 => MtOp::Unmount(name, (!rng.next_u64().is_multiple_of(4)).then_some(server)),
            6 | 7 => MtOp::Delete(name, rng.next_u64().is_multiple_of(2)),
            _ => MtOp::Resolve(name),
        }
    }

    fn start(&self, op: &MtOp, now: Timestamp, seed: u64) -> SimMachine<MtOutput> {
        let ctx = ctx();
        let start = Start::within(now, seed, DEADLINE_US);
        match *op {
            MtOp::Mount(n, s) => erase(
                mt::Mount::new(ctx, NAMES[n], SERVERS[s], TTL_S, MountFlags(0), start),
                |_| MtOutput::Done,
            ),
            MtOp::Unmount(n, s) => erase(
                mt::Unmount::new(ctx, NAMES[n], s.map_or("", |s| SERVERS[s]), start),
                |()| MtOutput::Done,
            ),
            MtOp::Delete(n, subtree) => {
                erase(mt::Delete::new(ctx, NAMES[n], subtree, start), |()| {
                    MtOutput::Done
                })
            }
            MtOp::Resolve(n) => erase(mt::ResolveStep::new(ctx, NAMES[n], start), |e| {
                MtOutput::Resolved(e.servers.into_iter().map(|s| s.server).collect())
            }),
            MtOp::FsckFix => erase(mt::Fsck::new(ctx, true, start), MtOutput::Fsck),
        }
    }

    fn repairs(
        &mut self,
        _store: &MemoryStore,
        _now: Timestamp,
        _history: &[Record<MtOp, MtOutput>],
    ) -> Vec<MtOp> {
        if self.repair {
            vec![MtOp::FsckFix]
        } else {
            Vec::new()
        }
    }

    fn check(
        &mut self,
        store: &MemoryStore,
        now: Timestamp,
        history: &[Record<MtOp, MtOutput>],
    ) -> Result<Checked, String> {
        let mut checked = Checked::default();
        // fsck after the repair (or, unrepaired, after the operations alone): clean.
        match run_quiet(
            store,
            now,
            mt::Fsck::new(ctx(), false, Start::within(now, 1, DEADLINE_US)),
        ) {
            Ok(summary) if summary.inconsistent == 0 && summary.undecodable.is_empty() => {}
            Ok(summary) => return Err(format!("fsck after repair: {summary:?}")),
            Err(e) => return Err(format!("fsck after repair: {e}")),
        }
        checked.decided += 1;
        // Counters equal a recount of the node table.
        let tables = Tables::default();
        let mut recount: BTreeMap<Vec<u8>, i64> = BTreeMap::new();
        let mut mounted: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for row in scan(store, &tables.node, now)? {
            let node = codec::decode_node(&row, now.0).map_err(|e| format!("node row: {e}"))?;
            let servers = (node.servers.len() + node.expired_servers.len()) as i64;
            *recount
                .entry(codec::counter_row_key(
                    codec::CounterKind::Nodes,
                    &node.creator,
                ))
                .or_default() += 1;
            *recount
                .entry(codec::counter_row_key(
                    codec::CounterKind::Servers,
                    &node.creator,
                ))
                .or_default() += servers;
            mounted.insert(
                node.name.clone(),
                node.servers.into_iter().map(|s| s.server).collect(),
            );
        }
        recount.retain(|_, v| *v != 0);
        let mut counters = run_quiet(
            store,
            now,
            mt::ReadCounters::new(ctx(), Start::within(now, 2, DEADLINE_US)),
        )?;
        counters.retain(|_, v| *v != 0);
        if counters != recount {
            return Err(format!(
                "counters {:?} differ from the recount {:?}",
                lossy(&counters),
                lossy(&recount)
            ));
        }
        checked.decided += 1;
        // Servers whose last operation the history decides.
        for (name, name_text) in NAMES.iter().enumerate() {
            for (server, server_text) in SERVERS.iter().enumerate() {
                let touching: Vec<_> = history
                    .iter()
                    .filter(|r| !matches!(r.op, MtOp::FsckFix) && r.op.touches(name, server))
                    .collect();
                let Some(last) = touching.iter().max_by_key(|r| r.start) else {
                    continue;
                };
                let decided = last.acknowledged()
                    && touching
                        .iter()
                        .all(|r| std::ptr::eq(*r, *last) || r.end < last.start);
                if !decided {
                    checked.undecided += 1;
                    continue;
                }
                let want = matches!(last.op, MtOp::Mount(..));
                let have = mounted
                    .get(*name_text)
                    .is_some_and(|s| s.iter().any(|s| s == server_text));
                if want != have {
                    return Err(format!(
                        "{} on {:?}: mounted {have}, but the last operation {:?} (acknowledged at {}) says {want}",
                        server_text, name_text, last.op, last.end.0
                    ));
                }
                checked.decided += 1;
            }
        }
        // An acknowledged resolve never names a server that was never mounted there.
        for r in history {
            if let (MtOp::Resolve(n), Outcome::Done(Ok(MtOutput::Resolved(servers)))) =
                (&r.op, &r.outcome)
            {
                let mounted_somewhere = servers.iter().all(|s| {
                    history.iter().any(|m| {
                        matches!(m.op, MtOp::Mount(mn, ms) if SERVERS[ms] == s && NAMES[*n].starts_with(NAMES[mn]))
                            && m.start <= r.end
                    })
                });
                if !mounted_somewhere {
                    return Err(format!(
                        "Resolve {:?} answered {servers:?}, never mounted on its path",
                        NAMES[*n]
                    ));
                }
                checked.decided += 1;
            }
        }
        Ok(checked)
    }
}

fn lossy(m: &BTreeMap<Vec<u8>, i64>) -> BTreeMap<String, i64> {
    m.iter()
        .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), *v))
        .collect()
}

/// `spec/mounttable.md` §22 scenario 22 as a simulation: clients loop Mount and subtree
/// Delete on `a|b/<0..3>/<0..3>` (a delete takes the name or its top), with no grace period
/// so every emptied node is collected at once; afterwards `Delete("a", true)` and
/// `Delete("b", true)` must leave exactly one row, the root, and a clean fsck. No repair.
#[derive(Debug, Default)]
pub struct MountDeleteWorkload;

/// An operation of [`MountDeleteWorkload`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MountDeleteOp {
    /// `Mount(name, S)`, no TTL.
    Mount(String),
    /// `Delete(name, true)`.
    Delete(String),
}

/// The server [`MountDeleteWorkload`] mounts.
const MOUNT_DELETE_SERVER: &str = "/127.0.0.1:8000";

/// No grace period, and a deadline as long as §22's threaded runs give (100 000 s): with 15
/// clients on two subtrees an operation may lose many OCC rounds in a row.
fn no_grace_ctx() -> MtCtx {
    MtCtx {
        gc_grace_us: 0,
        ..ctx()
    }
}

/// [`MountDeleteWorkload`]'s deadline (see [`no_grace_ctx`]).
const MOUNT_DELETE_DEADLINE_US: i64 = 100_000_000_000;

impl Workload for MountDeleteWorkload {
    type Op = MountDeleteOp;
    type Output = ();

    fn setup(&mut self, store: &MemoryStore, now: Timestamp, seed: u64) -> Result<(), String> {
        MounttableWorkload::default().setup(store, now, seed)
    }

    fn next_op(&mut self, rng: &mut SplitMix64) -> MountDeleteOp {
        let top = if rng.below(2) == 0 { "a" } else { "b" };
        let name = format!("{top}/{}/{}", rng.below(3), rng.below(3));
        if rng.below(2) == 0 {
            MountDeleteOp::Mount(name)
        } else if rng.below(2) == 0 {
            MountDeleteOp::Delete(top.to_string())
        } else {
            MountDeleteOp::Delete(name)
        }
    }

    fn start(&self, op: &MountDeleteOp, now: Timestamp, seed: u64) -> SimMachine<()> {
        let ctx = no_grace_ctx();
        let start = Start::within(now, seed, MOUNT_DELETE_DEADLINE_US);
        match op {
            MountDeleteOp::Mount(name) => erase(
                mt::Mount::new(ctx, name, MOUNT_DELETE_SERVER, 0, MountFlags(0), start),
                |_| (),
            ),
            MountDeleteOp::Delete(name) => erase(mt::Delete::new(ctx, name, true, start), |()| ()),
        }
    }

    fn repairs(
        &mut self,
        _store: &MemoryStore,
        _now: Timestamp,
        _history: &[Record<MountDeleteOp, ()>],
    ) -> Vec<MountDeleteOp> {
        // Not repairs: the scenario's two final deletes.
        vec![
            MountDeleteOp::Delete("a".into()),
            MountDeleteOp::Delete("b".into()),
        ]
    }

    fn check(
        &mut self,
        store: &MemoryStore,
        now: Timestamp,
        history: &[Record<MountDeleteOp, ()>],
    ) -> Result<Checked, String> {
        for r in history {
            if let Outcome::Done(Err(e)) = &r.outcome {
                return Err(format!("{:?} failed: {e}", r.op));
            }
        }
        let rows = scan(store, &Tables::default().node, now)?;
        if rows.len() != 1 {
            let keys: Vec<String> = rows
                .iter()
                .map(|r| rowkit_codec::escape::escape(&r.key))
                .collect();
            return Err(format!("{} node rows left: {keys:?}", rows.len()));
        }
        match run_quiet(
            store,
            now,
            mt::Fsck::new(ctx(), false, Start::within(now, 1, DEADLINE_US)),
        ) {
            Ok(summary) if summary.inconsistent == 0 && summary.undecodable.is_empty() => {}
            Ok(summary) => return Err(format!("fsck: {summary:?}")),
            Err(e) => return Err(format!("fsck: {e}")),
        }
        Ok(Checked {
            decided: 2,
            ..Checked::default()
        })
    }
}
