#![allow(clippy::unwrap_used)]
//! §22 scenario 21 (concurrent Mount / ResolveStep / Unmount) as virtual threads on one OS
//! thread: every machine's requests are interleaved one at a time in an order drawn from a
//! seed, so each seed is one reproducible schedule. This found the child-reference races of
//! `statemachines::mounttable` deterministically (about one seed in eight failed before the
//! fix: a resolve right after the caller's own mount answered `NoSuchName` for a parent that
//! another thread had collected under an orphaned child).

use rowkit_client::mounttable::{MountTable, MtConfig};
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::Timestamp;
use rowkit_codec::mounttable::{Caller, MountFlags};
use rowkit_statemachines::mounttable::{self as mt, MountEntry, MtCtx, MtError, MtEvent, Tables};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::{Machine, Request, Response, SplitMix64, Tag};
use rowkit_store::driver::{Clock, ManualClock};
use rowkit_store::{MemoryStore, Reply, Store};
use rowkit_testkit::scenarios::mounttable::scan;

/// The three operations of a cycle, as one machine type.
enum Op {
    Mount(mt::Mount),
    Resolve(mt::ResolveStep),
    Unmount(mt::Unmount),
}

/// What an operation ended with (only what the checks need).
enum Outcome {
    Mounted,
    Resolved(MountEntry),
    Unmounted,
}

macro_rules! each {
    ($op:expr, $m:ident => $body:expr) => {
        match $op {
            Op::Mount($m) => $body,
            Op::Resolve($m) => $body,
            Op::Unmount($m) => $body,
        }
    };
}

impl Op {
    fn result(&mut self) -> Option<Result<Outcome, MtError>> {
        match self {
            Op::Mount(m) => m.result().map(|r| r.map(|_| Outcome::Mounted)),
            Op::Resolve(m) => m.result().map(|r| r.map(Outcome::Resolved)),
            Op::Unmount(m) => m.result().map(|r| r.map(|()| Outcome::Unmounted)),
        }
    }
}

struct VirtualThread {
    rng: SplitMix64,
    cycle: usize,
    /// 0 mount, 1 resolve, 2 unmount.
    phase: u8,
    name: &'static str,
    op: Option<Op>,
    pending: Vec<(Tag, Request)>,
}

const POOL: [&str; 6] = ["a", "a/b", "a/b/c", "a/d", "e/f", "e"];

fn feed(store: &dyn Store, now: Timestamp, op: &mut Op, tag: Tag, request: Request) {
    match store.execute(request, now) {
        Ok(Reply::Unary(r)) => each!(op, m => m.handle_response(tag, Ok(r), now)),
        Ok(Reply::Stream(parts)) => {
            let parts: Vec<_> = parts.collect();
            let failed = parts.iter().any(|p| p.is_err());
            for p in parts {
                each!(op, m => m.handle_response(tag, p, now));
            }
            if !failed {
                each!(op, m => m.handle_response(tag, Ok(Response::StreamEnd), now));
            }
        }
        Err(e) => each!(op, m => m.handle_response(tag, Err(e), now)),
    }
}

/// Runs one schedule; `Err` names the first wrong answer.
fn schedule(seed: u64, threads: usize, cycles: usize) -> Result<(), String> {
    let store = MemoryStore::new();
    let clock = ManualClock::new(Timestamp(1_700_000_000_000_000));
    let table = "mt-interleaved";
    let t = MountTable::new(
        SyncDriver::new(&store, &clock),
        MtConfig {
            tables: Tables::new(table),
            gc_grace_us: 0,
            ..MtConfig::default()
        },
    );
    block_on(t.create_tables()).unwrap();
    block_on(t.setup(None)).unwrap();
    let mut scheduler = SplitMix64::new(seed);
    let mut ths: Vec<VirtualThread> = (0..threads)
        .map(|i| VirtualThread {
            rng: SplitMix64::new(seed * 1000 + i as u64),
            cycle: 0,
            phase: 0,
            name: "",
            op: None,
            pending: Vec::new(),
        })
        .collect();
    loop {
        let live: Vec<usize> = (0..threads).filter(|&i| ths[i].cycle < cycles).collect();
        if live.is_empty() {
            break;
        }
        let i = live[(scheduler.next_u64() % live.len() as u64) as usize];
        let th = &mut ths[i];
        let server = format!("/127.0.0.1:{}/t", 8000 + i);
        let now = clock.now();
        let op = th.op.get_or_insert_with(|| {
            let ctx = MtCtx {
                tables: Tables::new(table),
                caller: Caller::new(&["root"], false),
                gc_grace_us: 0,
                ..MtCtx::new()
            };
            let start = Start::within(now, th.rng.next_u64(), 100_000_000_000);
            if th.phase == 0 {
                th.name = POOL[(th.rng.next_u64() % POOL.len() as u64) as usize];
            }
            match th.phase {
                0 => Op::Mount(mt::Mount::new(
                    ctx,
                    th.name,
                    &server,
                    0,
                    MountFlags(0),
                    start,
                )),
                1 => Op::Resolve(mt::ResolveStep::new(ctx, th.name, start)),
                _ => Op::Unmount(mt::Unmount::new(ctx, th.name, &server, start)),
            }
        });
        while let Some(r) = each!(op, m => m.poll_request()) {
            th.pending.push(r);
        }
        if !th.pending.is_empty() {
            let (tag, request) = th.pending.remove(0);
            feed(&store, now, op, tag, request);
        } else if let Some(at) = each!(op, m => m.poll_timeout()) {
            clock.advance_to(at);
            each!(op, m => m.handle_timeout(clock.now()));
        }
        while each!(op, m => m.poll_abort()).is_some() {}
        while let Some(event) = each!(op, m => m.poll_event()) {
            if let MtEvent::Warning { step, error } = event {
                eprintln!("seed {seed} thread {i}: warning {step}: {error}");
            }
        }
        let Some(outcome) = op.result() else {
            continue;
        };
        let what = format!(
            "seed {seed} thread {i} cycle {} {} {}",
            th.cycle,
            ["mount", "resolve", "unmount"][th.phase as usize],
            th.name
        );
        match outcome {
            Ok(Outcome::Resolved(e)) if e.servers.is_empty() => {
                return Err(format!("{what}: no servers"));
            }
            Ok(_) => {}
            Err(e) => return Err(format!("{what}: {e:?}")),
        }
        th.op = None;
        th.phase = (th.phase + 1) % 3;
        if th.phase == 0 {
            th.cycle += 1;
        }
    }
    let rows = scan(&store, table).len();
    if rows != 1 {
        return Err(format!(
            "seed {seed}: {rows} node rows left, want only the root"
        ));
    }
    Ok(())
}

#[test]
fn scenario_21_interleaved_schedules() {
    let failures: Vec<String> = (0..12)
        .filter_map(|seed| schedule(seed, 6, 40).err())
        .collect();
    assert!(failures.is_empty(), "{failures:#?}");
}
