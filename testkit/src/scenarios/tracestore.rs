//! The acceptance scenarios of `spec/tracestore.md` 20 as functions over any [`Store`], so the
//! same checks run on the memory store, the redb store and the Bigtable emulator. Each
//! function panics with a message on failure, like an assertion.
//!
//! Helpers: [`Hooked`] wraps a store to log requests and inject faults or concurrent writes;
//! [`Turnstile`] runs several facades on threads one request at a time, in an order a seed
//! chooses (a deterministic interleaving of whole instances).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]
// Actor closures are spelled out where they are built.
#![allow(clippy::type_complexity)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Condvar, Mutex};

use rowkit_codec::model::{ColumnFamily, Mutation, Row, RowFilter, RowSet, Timestamp};
use rowkit_codec::tracestore::CodecError;
use rowkit_codec::tracestore::cells::*;
use rowkit_codec::tracestore::keys::*;
use rowkit_codec::tracestore::ops::{params_from, trace_id_text};
use rowkit_codec::tracestore::{Layout, ParamSet, Params};
use rowkit_statemachines::raw::MutateRows;
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::tracestore::{PutEntry, Tile, Trace};
use rowkit_statemachines::{
    Code, MutateRowsEntry, MutateRowsRequest, ReadRowRequest, ReadRowsRequest, Request, Response,
    RetryPolicy, SplitMix64, StoreError,
};

use rowkit_client::tracestore::{TraceStore, setup_table};
use rowkit_client::{CallOptions, SyncDriver, block_on};
use rowkit_statemachines::tracestore::TraceStoreError;
use rowkit_store::driver::{Clock, ManualClock};
use rowkit_store::{Reply, Store};

use super::read_key;

/// The table the scenarios use.
pub const TABLE: &str = "gold";
/// `T0` of the spec.
pub const T0: i64 = 1_557_018_184_000_000;
pub const AP: &str = "000075b9c0f1b6a831c399e269772661";
pub const AN: &str = "11115ffee6ae2fec3ad71c777531578f";
pub const AU: &str = "222208f09d37b73795649038408b5f33";
pub const BP: &str = "4444e0910d750195b448797616e091ad";
pub const BU: &str = "55554cdd754f91cc6554c9e71929cce7";
/// Commit times of c0, c1, c2.
pub const COMMIT_TIMES: [i64; 3] = [
    1_556_280_003_000_000,
    1_556_280_618_000_000,
    1_556_284_208_000_000,
];

/// The six traces of "three devices": (device, name, digests at c0, c1, c2).
pub fn three_devices() -> Vec<(&'static str, &'static str, [&'static str; 3])> {
    vec![
        ("angler", "test_alpha", [AN, AN, AP]),
        ("angler", "test_beta", [BP, BP, BP]),
        ("bullhead", "test_alpha", [AN, AN, AU]),
        ("bullhead", "test_beta", [BP, BP, BP]),
        ("crosshatch", "test_alpha", [AN, AN, AP]),
        ("crosshatch", "test_beta", [BU, "", ""]),
    ]
}

pub fn trace_params(device: &str, name: &str) -> Params {
    params_from([("device", device), ("name", name), ("source_type", "gm")])
}

pub fn layout_options(layout: Layout) -> Params {
    match layout {
        Layout::Md5 => params_from([("ext", "png")]),
        Layout::DigestId => Params::new(),
    }
}

/// The test tile at commits `commits`.
pub fn expected_tile(layout: Layout, commits: [u32; 3]) -> Tile {
    let mut traces = BTreeMap::new();
    for (d, n, digests) in three_devices() {
        let params = trace_params(d, n);
        traces.insert(
            trace_id_text(&params),
            Trace {
                params,
                options: layout_options(layout),
                digests: digests.iter().map(|s| s.to_string()).collect(),
            },
        );
    }
    let mut paramset: ParamSet = BTreeMap::new();
    paramset.insert(
        "device".into(),
        vec!["angler".into(), "bullhead".into(), "crosshatch".into()],
    );
    paramset.insert("name".into(), vec!["test_alpha".into(), "test_beta".into()]);
    paramset.insert("source_type".into(), vec!["gm".into()]);
    if layout == Layout::Md5 {
        paramset.insert("ext".into(), vec!["png".into()]);
    }
    Tile {
        commits: commits.to_vec(),
        traces,
        paramset,
    }
}

/// The 16 points in scenario 8's order: c2 points, then c1, then c0; traces in table order.
/// Each is (commit position 0..3, device, name, digest).
pub fn points() -> Vec<(usize, &'static str, &'static str, &'static str)> {
    let mut out = Vec::new();
    for c in (0..3).rev() {
        for (d, n, digests) in three_devices() {
            if !digests[c].is_empty() {
                out.push((c, d, n, digests[c]));
            }
        }
    }
    out
}

fn entry(layout: Layout, device: &str, name: &str, digest: &str) -> PutEntry {
    PutEntry {
        params: trace_params(device, name),
        options: layout_options(layout),
        digest: digest.to_string(),
    }
}

/// A fresh table in `layout` on `store` (which must not hold [`TABLE`]).
pub fn setup(store: &dyn Store, layout: Layout) {
    setup_on(store, TABLE, layout).unwrap();
}

/// `table` set up in `layout` on `store`.
fn setup_on(store: &dyn Store, table: &str, layout: Layout) -> Result<(), TraceStoreError> {
    let clock = ManualClock::new(Timestamp(T0));
    block_on(setup_table(&SyncDriver::new(store, &clock), table, layout))
}

/// A facade over a scenario store.
pub type Gold<'s> = TraceStore<SyncDriver<&'s dyn Store, &'s ManualClock>>;

/// A Gold process on the scenario table: unaware of migrations, so that it sends exactly the
/// requests the spec's sequences name (no marker read).
pub fn open<'s>(store: &'s dyn Store, clock: &'s ManualClock, seed: u64) -> Gold<'s> {
    block_on(TraceStore::open(SyncDriver::new(store, clock), TABLE, None))
        .map(|g| g.unaware().with_options(seeded(seed)))
        .unwrap()
}

/// Puts every point separately at `commits`, the j-th with `ts = T0 + 7 s * j`.
pub fn put_points(gold: &mut Gold<'_>, layout: Layout, commits: [u32; 3], ts_base: i64) {
    for (j, (c, d, n, digest)) in points().into_iter().enumerate() {
        block_on(gold.put(
            i64::from(commits[c]),
            Some(Timestamp(COMMIT_TIMES[c])),
            vec![entry(layout, d, n, digest)],
            Timestamp(ts_base + 7_000_000 * j as i64),
        ))
        .unwrap();
    }
}

/// Reads raw rows.
pub fn raw_read(store: &dyn Store, rows: RowSet, filter: Option<RowFilter>) -> Vec<Row> {
    let clock = ManualClock::new(Timestamp(T0));
    let request = ReadRowsRequest {
        table: TABLE.into(),
        rows,
        filter,
        ..ReadRowsRequest::default()
    };
    let mut out = Vec::new();
    rowkit_client::run_blocking(
        store,
        &clock,
        ReadRows::new(request, clock.now(), 1, RetryPolicy::default()),
        |r| out.push(r),
    )
    .unwrap();
    out
}

/// Writes raw rows (every entry must succeed).
pub fn raw_write(store: &dyn Store, entries: Vec<MutateRowsEntry>) {
    let clock = ManualClock::new(Timestamp(T0));
    for chunk in entries.chunks(10_000) {
        let request = MutateRowsRequest {
            table: TABLE.into(),
            entries: chunk.into(),
            ..MutateRowsRequest::default()
        };
        let results = rowkit_client::run_blocking(
            store,
            &clock,
            MutateRows::new(request, clock.now(), 1, RetryPolicy::default()),
            |()| {},
        )
        .unwrap();
        assert!(
            results.iter().all(|r| r.result.is_ok()),
            "raw write failed: {results:?}"
        );
    }
}

fn set(family: &str, qualifier: &[u8], ts: i64, value: Vec<u8>) -> Mutation {
    Mutation::SetCell {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        timestamp: Timestamp(ts),
        value,
    }
}

// ------------------------------------------------------------------ Hooked

/// What a hook decides for one request.
pub enum HookAction {
    /// Execute it normally.
    Pass,
    /// Answer with this error without executing it.
    Fail(StoreError),
    /// Execute it, then answer with this error (a lost response).
    ApplyThenFail(StoreError),
}

type Hook<'a> = Box<dyn FnMut(&Request, &dyn Store) -> HookAction + Send + 'a>;

/// A store wrapper that logs every request (and every executed unary one with its answer)
/// and lets a hook inject faults or concurrent writes.
pub struct Hooked<'a> {
    inner: &'a dyn Store,
    log: Mutex<Vec<Request>>,
    unary_exchanges: Mutex<Vec<(Request, Response)>>,
    hook: Mutex<Option<Hook<'a>>>,
    lost_ops_swaps: std::sync::atomic::AtomicUsize,
}

impl<'a> Hooked<'a> {
    pub fn new(inner: &'a dyn Store) -> Hooked<'a> {
        Hooked {
            inner,
            log: Mutex::new(Vec::new()),
            unary_exchanges: Mutex::new(Vec::new()),
            hook: Mutex::new(None),
            lost_ops_swaps: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    pub fn set_hook(&self, hook: impl FnMut(&Request, &dyn Store) -> HookAction + Send + 'a) {
        *self.hook.lock().unwrap() = Some(Box::new(hook));
    }

    pub fn clear_hook(&self) {
        *self.hook.lock().unwrap() = None;
    }

    /// How many OPS compare-and-swaps of an existing row answered `predicate_matched = false`.
    pub fn lost_ops_swaps(&self) -> usize {
        self.lost_ops_swaps
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Takes the requests logged so far.
    pub fn take_log(&self) -> Vec<Request> {
        std::mem::take(&mut *self.log.lock().unwrap())
    }

    /// Takes the unary requests executed so far with their answers (not those a hook
    /// failed), in execution order.
    pub fn take_unary_exchanges(&self) -> Vec<(Request, Response)> {
        std::mem::take(&mut *self.unary_exchanges.lock().unwrap())
    }
}

impl Store for Hooked<'_> {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        self.log.lock().unwrap().push(request.clone());
        let action = match self.hook.lock().unwrap().as_mut() {
            Some(h) => h(&request, self.inner),
            None => HookAction::Pass,
        };
        let ops_swap = matches!(&request, Request::CheckAndMutateRow(c)
            if c.row_key.starts_with(OPS_ROWS_PREFIX) && !c.true_mutations.is_empty());
        match action {
            HookAction::Pass => {
                let unary = !matches!(
                    request,
                    Request::ReadRows(_) | Request::MutateRows(_) | Request::SampleRowKeys(_)
                );
                let asked = unary.then(|| request.clone());
                let reply = self.inner.execute(request, now)?;
                if let (Some(asked), Reply::Unary(answer)) = (asked, &reply) {
                    self.unary_exchanges
                        .lock()
                        .unwrap()
                        .push((asked, answer.clone()));
                }
                if ops_swap
                    && let Reply::Unary(Response::CheckAndMutateRow {
                        predicate_matched: false,
                    }) = &reply
                {
                    self.lost_ops_swaps
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
                Ok(reply)
            }
            HookAction::Fail(e) => Err(e),
            HookAction::ApplyThenFail(e) => {
                if let Ok(Reply::Stream(parts)) = self.inner.execute(request, now) {
                    parts.for_each(drop);
                }
                Err(e)
            }
        }
    }
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.inner.create_table(table, families)
    }
    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.inner.delete_table(table)
    }
    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        self.inner.list_tables()
    }
    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.inner.families(table)
    }
    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        self.inner.set_family(table, family)
    }
    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError> {
        self.inner.gc(table, now)
    }
}

fn unavailable() -> StoreError {
    StoreError::new(Code::Unavailable, "injected")
}

// ------------------------------------------------------------------ Turnstile

#[derive(Default)]
struct Turns {
    /// Actors blocked in `execute`, waiting for their turn.
    waiting: BTreeSet<usize>,
    /// The actor allowed to run.
    granted: Option<usize>,
    /// Actors that finished.
    done: BTreeSet<usize>,
}

/// Runs actors on threads one request at a time, in an order chosen by a seed: every actor
/// blocks before each request until the scheduler picks it, so a seed fixes the interleaving.
pub struct Turnstile<'a> {
    inner: &'a dyn Store,
    turns: Mutex<Turns>,
    changed: Condvar,
}

/// One actor's view of a [`Turnstile`].
pub struct Gate<'t, 'a> {
    turnstile: &'t Turnstile<'a>,
    actor: usize,
}

impl<'a> Turnstile<'a> {
    pub fn new(inner: &'a dyn Store) -> Turnstile<'a> {
        Turnstile {
            inner,
            turns: Mutex::new(Turns::default()),
            changed: Condvar::new(),
        }
    }

    pub fn gate(&self, actor: usize) -> Gate<'_, 'a> {
        Gate {
            turnstile: self,
            actor,
        }
    }

    /// Runs `actors` (each given its gate) to completion, choosing turns with `seed`.
    pub fn run<'t>(&'t self, seed: u64, actors: Vec<Box<dyn FnOnce(&Gate<'t, 'a>) + Send + 't>>) {
        let n = actors.len();
        std::thread::scope(|scope| {
            for (i, actor) in actors.into_iter().enumerate() {
                let gate = self.gate(i);
                scope.spawn(move || {
                    actor(&gate);
                    let mut t = self.turns.lock().unwrap();
                    t.done.insert(i);
                    if t.granted == Some(i) {
                        t.granted = None;
                    }
                    self.changed.notify_all();
                });
            }
            let mut rng = SplitMix64::new(seed);
            let mut t = self.turns.lock().unwrap();
            loop {
                // Wait until every live actor is blocked (or done) and nobody holds the turn.
                while t.granted.is_some() || t.waiting.len() + t.done.len() < n {
                    t = self.changed.wait(t).unwrap();
                }
                if t.done.len() == n {
                    break;
                }
                let choices: Vec<usize> = t.waiting.iter().copied().collect();
                let pick = choices[rng.below(choices.len() as u64) as usize];
                t.waiting.remove(&pick);
                t.granted = Some(pick);
                self.changed.notify_all();
            }
        });
    }
}

impl Store for Gate<'_, '_> {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        let ts = self.turnstile;
        let mut t = ts.turns.lock().unwrap();
        if t.granted == Some(self.actor) {
            t.granted = None;
        }
        t.waiting.insert(self.actor);
        ts.changed.notify_all();
        while t.granted != Some(self.actor) {
            t = ts.changed.wait(t).unwrap();
        }
        drop(t);
        // Materialise the reply so the next actor cannot run in the middle of a stream.
        match ts.inner.execute(request, now)? {
            Reply::Unary(r) => Ok(Reply::Unary(r)),
            Reply::Stream(parts) => {
                let parts: Vec<_> = parts.collect();
                Ok(Reply::Stream(Box::new(parts.into_iter())))
            }
        }
    }
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.turnstile.inner.create_table(table, families)
    }
    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.turnstile.inner.delete_table(table)
    }
    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        self.turnstile.inner.list_tables()
    }
    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.turnstile.inner.families(table)
    }
    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        self.turnstile.inner.set_family(table, family)
    }
    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError> {
        self.turnstile.inner.gc(table, now)
    }
}

// ------------------------------------------------------------------ scenarios, both layouts

/// Scenario 8 (and 10 with `commits = [254, 255, 256]`).
pub fn put_get(store: &dyn Store, layout: Layout, commits: [u32; 3]) {
    setup(store, layout);
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(store, &clock, 8);
    let first = i64::from(commits[0]);
    let last = i64::from(commits[2]);
    let empty = block_on(gold.read_range(first, last)).unwrap();
    assert!(empty.traces.is_empty() && empty.paramset.is_empty());
    assert_eq!(empty.commits.len() as i64, last - first + 1);
    put_points(&mut gold, layout, commits, T0);
    let tile = block_on(gold.read_range(first, last)).unwrap();
    if last - first == 2 {
        assert_eq!(tile, expected_tile(layout, commits));
    } else {
        check_sparse(&tile, layout, commits);
    }
    // A fresh instance reads the same.
    let reader = open(store, &clock, 9);
    assert_eq!(block_on(reader.read_range(first, last)).unwrap(), tile);
}

fn check_sparse(tile: &Tile, layout: Layout, commits: [u32; 3]) {
    let expected = expected_tile(layout, commits);
    assert_eq!(tile.paramset, expected.paramset);
    assert_eq!(tile.traces.len(), expected.traces.len());
    for (id, t) in &expected.traces {
        let got = &tile.traces[id];
        for (c, d) in commits.iter().zip(&t.digests) {
            assert_eq!(&got.digests[(c - tile.commits[0]) as usize], d);
        }
    }
}

/// Scenario 9: the newest timestamp wins, not the latest write.
pub fn override_by_timestamp(store: &dyn Store, layout: Layout) {
    setup(store, layout);
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(store, &clock, 9);
    let put = |g: &mut Gold<'_>, digest: &str, ts: i64| {
        block_on(g.put(
            0,
            Some(Timestamp(COMMIT_TIMES[0])),
            vec![entry(layout, "angler", "test_alpha", digest)],
            Timestamp(ts),
        ))
        .unwrap();
    };
    let key = trace_id_text(&trace_params("angler", "test_alpha"));
    put(&mut gold, AP, T0);
    put(&mut gold, AU, 1_451_606_400_000_000);
    assert_eq!(
        block_on(gold.read_range(0, 0)).unwrap().traces[&key].digests,
        vec![AP]
    );
    put(&mut gold, AN, T0 + 7_000_000);
    assert_eq!(
        block_on(gold.read_range(0, 0)).unwrap().traces[&key].digests,
        vec![AN]
    );
}

/// Scenario 11: one Put per commit.
pub fn grouped_put(store: &dyn Store, layout: Layout) {
    setup(store, layout);
    let clock = ManualClock::new(Timestamp(T0));
    let gold = open(store, &clock, 11);
    for (j, c) in (0..3).rev().enumerate() {
        let entries = three_devices()
            .into_iter()
            .filter(|(_, _, d)| !d[c].is_empty())
            .map(|(d, n, digests)| entry(layout, d, n, digests[c]))
            .collect();
        block_on(gold.put(
            c as i64,
            Some(Timestamp(COMMIT_TIMES[c])),
            entries,
            Timestamp(T0 + 7_000_000 * j as i64),
        ))
        .unwrap();
    }
    assert_eq!(
        block_on(gold.read_range(0, 2)).unwrap(),
        expected_tile(layout, [0, 1, 2])
    );
}

/// Scenario 12: six writers and a reader interleaved request by request for `seeds`.
/// Returns how many OPS check-and-mutates answered `predicate_matched = false` over all seeds.
pub fn concurrent_writers(
    make_store: &dyn Fn() -> Box<dyn Store>,
    layout: Layout,
    seeds: std::ops::RangeInclusive<u64>,
) -> usize {
    let mut conflicts = 0;
    for seed in seeds {
        let store = make_store();
        setup(&*store, layout);
        let hooked = Hooked::new(&*store);
        let turnstile = Turnstile::new(&hooked);
        let clock = ManualClock::new(Timestamp(T0));
        let writers_left = Mutex::new(6usize);
        let final_tile = expected_tile(layout, [0, 1, 2]);
        let mut actors: Vec<Box<dyn FnOnce(&Gate<'_, '_>) + Send + '_>> = Vec::new();
        for (w, (d, n, digests)) in three_devices().into_iter().enumerate() {
            let clock = &clock;
            let writers_left = &writers_left;
            actors.push(Box::new(move |gate: &Gate<'_, '_>| {
                let gold = block_on(TraceStore::open(
                    SyncDriver::new(gate as &dyn Store, clock),
                    TABLE,
                    None,
                ))
                .map(|g| g.unaware().with_options(seeded(seed * 100 + w as u64)))
                .unwrap();
                for c in (0..3).rev() {
                    if digests[c].is_empty() {
                        continue;
                    }
                    let ts = T0 + 7_000_000 * (w as i64 * 3 + (2 - c as i64));
                    block_on(gold.put(
                        c as i64,
                        Some(Timestamp(COMMIT_TIMES[c])),
                        vec![entry(layout, d, n, digests[c])],
                        Timestamp(ts),
                    ))
                    .unwrap_or_else(|e| panic!("seed {seed}: writer {w} failed: {e}"));
                }
                *writers_left.lock().unwrap() -= 1;
            }));
        }
        {
            let clock = &clock;
            let writers_left = &writers_left;
            let final_tile = &final_tile;
            actors.push(Box::new(move |gate: &Gate<'_, '_>| {
                let reader = block_on(TraceStore::open(
                    SyncDriver::new(gate as &dyn Store, clock),
                    TABLE,
                    None,
                ))
                .map(|g| g.unaware().with_options(seeded(seed * 100 + 99)))
                .unwrap();
                while *writers_left.lock().unwrap() > 0 {
                    let tile = block_on(reader.read_range(0, 2))
                        .unwrap_or_else(|e| panic!("seed {seed}: read failed: {e}"));
                    for (id, t) in &tile.traces {
                        let want = &final_tile.traces[id];
                        for (got, fin) in t.digests.iter().zip(&want.digests) {
                            assert!(
                                got.is_empty() || got == fin,
                                "seed {seed}: {id} shows {got}, final {fin}"
                            );
                        }
                    }
                }
            }));
        }
        turnstile.run(seed, actors);
        let gold = open(&*store, &clock, 1);
        assert_eq!(
            block_on(gold.read_range(0, 2)).unwrap(),
            final_tile,
            "seed {seed}"
        );
        conflicts += hooked.lost_ops_swaps();
    }
    conflicts
}

/// Scenario 13: every point first overwritten by a placeholder, then the real data.
pub fn overwrite(store: &dyn Store, layout: Layout) {
    setup(store, layout);
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(store, &clock, 13);
    let placeholder = "ffffffffffffffffffffffffffffffff";
    for (c, d, n, _) in points() {
        let mut e = entry(layout, d, n, placeholder);
        if layout == Layout::Md5 {
            e.options = params_from([("should", "be overwritten")]);
        }
        block_on(gold.put(
            c as i64,
            Some(Timestamp(COMMIT_TIMES[c] - 1_000_000)),
            vec![e],
            Timestamp(T0),
        ))
        .unwrap();
    }
    put_points(&mut gold, layout, [0, 1, 2], T0 + 7_000_000);
    assert_eq!(
        block_on(gold.read_range(0, 2)).unwrap(),
        expected_tile(layout, [0, 1, 2])
    );
}

/// Scenario 14: dense tiles.
pub fn dense(make_store: &dyn Fn() -> Box<dyn Store>, layout: Layout) {
    let cases: [([u32; 3], i64); 5] = [
        ([795, 987, 1001], 1023),
        ([300, 501, 557], 1100),
        ([0, 256, 512], 767),
        ([255, 511, 767], 767),
        ([50, 800, 1100], 1100),
    ];
    for (commits, last) in cases {
        let store = make_store();
        setup(&*store, layout);
        let clock = ManualClock::new(Timestamp(T0));
        let mut gold = open(&*store, &clock, 14);
        put_points(&mut gold, layout, commits, T0);
        assert_eq!(
            block_on(gold.read_dense(last, 3)).unwrap(),
            expected_tile(layout, commits),
            "{commits:?}"
        );
    }
    // Trimming.
    let store = make_store();
    setup(&*store, layout);
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(&*store, &clock, 14);
    assert_eq!(
        block_on(gold.read_dense(1023, 3)).unwrap(),
        Tile::default(),
        "empty table"
    );
    put_points(&mut gold, layout, [100, 200, 300], T0);
    let tile = block_on(gold.read_dense(300, 2)).unwrap();
    assert_eq!(tile.commits, vec![200, 300]);
    let full = expected_tile(layout, [100, 200, 300]);
    for (id, t) in &tile.traces {
        assert_eq!(t.digests, full.traces[id].digests[1..].to_vec());
    }
    assert_eq!(
        block_on(gold.read_dense(300, 0)).unwrap_err(),
        TraceStoreError::BadArgument
    );
    // Sparse: only c0 at 10.
    let store = make_store();
    setup(&*store, layout);
    let gold = open(&*store, &clock, 14);
    for (c, d, n, digest) in points() {
        if c == 0 {
            block_on(gold.put(
                10,
                Some(Timestamp(COMMIT_TIMES[0])),
                vec![entry(layout, d, n, digest)],
                Timestamp(T0),
            ))
            .unwrap();
        }
    }
    assert_eq!(block_on(gold.read_dense(300, 3)).unwrap().commits, vec![10]);
}

/// Scenario 29 (validation part) and 25: errors raised before any request.
pub fn validation(store: &dyn Store, layout: Layout) {
    setup(store, layout);
    let hooked = Hooked::new(store);
    let clock = ManualClock::new(Timestamp(T0));
    let gold = open(&hooked, &clock, 29);
    let e = entry(layout, "angler", "test_alpha", AP);
    assert_eq!(
        block_on(gold.put(
            2_147_483_648,
            Some(Timestamp(COMMIT_TIMES[0])),
            vec![e.clone()],
            Timestamp(T0)
        )),
        Err(TraceStoreError::Codec(CodecError::BadRepoIndex))
    );
    assert_eq!(
        block_on(gold.put(
            0,
            Some(Timestamp(COMMIT_TIMES[0])),
            vec![e.clone()],
            Timestamp(-1)
        )),
        Err(TraceStoreError::BadTimestamp)
    );
    assert_eq!(
        block_on(gold.read_range(5, 4)).unwrap_err(),
        TraceStoreError::Codec(CodecError::BadRepoIndex)
    );
    if layout == Layout::DigestId {
        let mut with_options = e;
        with_options.options = params_from([("ext", "png")]);
        assert_eq!(
            block_on(gold.put(0, Some(Timestamp(0)), vec![with_options], Timestamp(T0))),
            Err(TraceStoreError::OptionsNotSupported)
        );
    }
    assert!(
        hooked.take_log().is_empty(),
        "validation errors must send nothing"
    );
}

/// Entries per `MutateRows` request of a Put (`spec/tracestore.md` 3, "Put chunk").
const SPEC_PUT_CHUNK: usize = 10_000;

/// The params of the `i`-th trace of the Put-batch scenarios.
fn numbered_trace(i: usize) -> Params {
    params_from([("name", format!("t{i:05}")), ("source_type", "gm".into())])
}

/// Every row key the `MutateRows` requests of `log` carry, request by request.
fn mutate_rows_keys(log: &[Request]) -> Vec<Vec<Vec<u8>>> {
    log.iter()
        .filter_map(|r| match r {
            Request::MutateRows(m) => Some(m.entries.iter().map(|e| e.row_key.clone()).collect()),
            _ => None,
        })
        .collect()
}

/// Put chunks (`spec/tracestore.md` 10 step 5, 11.6 step 7): one Put of 10 001 traces at
/// commit 0 is sent as `MutateRows` requests of at most 10 000 row entries, all full but the
/// last, carrying every row entry once in write order (each trace row, then its options row);
/// a fresh reader reads every point back. In the md5 layout every trace but the first has
/// options, so the Put writes 20 001 row entries and the trace and options rows of entry
/// 5 000 fall in different chunks.
pub fn put_chunks(store: &dyn Store, layout: Layout) {
    const TRACES: usize = 10_001;
    setup(store, layout);
    let hooked = Hooked::new(store);
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(&hooked, &clock, 32);
    let digests = [AP, AN, AU, BP, BU];
    let entries: Vec<PutEntry> = (0..TRACES)
        .map(|i| PutEntry {
            params: numbered_trace(i),
            options: if i == 0 {
                Params::new()
            } else {
                layout_options(layout)
            },
            digest: digests[i % digests.len()].to_string(),
        })
        .collect();
    block_on(gold.put(
        0,
        Some(Timestamp(COMMIT_TIMES[0])),
        entries.clone(),
        Timestamp(T0),
    ))
    .unwrap();
    let chunks = mutate_rows_keys(&hooked.take_log());
    let sizes: Vec<usize> = chunks.iter().map(Vec::len).collect();
    let rows = match layout {
        Layout::Md5 => 1 + 2 * (TRACES - 1),
        Layout::DigestId => TRACES,
    };
    let mut want_sizes = vec![SPEC_PUT_CHUNK; rows / SPEC_PUT_CHUNK];
    want_sizes.push(rows % SPEC_PUT_CHUNK);
    assert_eq!(sizes, want_sizes, "MutateRows entries per request");
    // Every row, in write order, decodes (through the tile's OPS) to its entry's params.
    let ops_row = ops_row_name(tile_key(0));
    let ops = &gold
        .state()
        .cached_ops(&ops_row)
        .expect("the Put's OPS")
        .ops;
    let mut written = chunks.concat().into_iter();
    for (i, e) in entries.iter().enumerate() {
        let mut kinds = vec![RowType::Trace];
        if !e.options.is_empty() {
            kinds.push(RowType::Options);
        }
        for kind in kinds {
            let key = written
                .next()
                .unwrap_or_else(|| panic!("entry {i}: no {kind:?} row"));
            let decoded = decode_row_key(&key).unwrap();
            assert_eq!(
                (decoded.row_type, decoded.tile_key),
                (kind, tile_key(0)),
                "entry {i}"
            );
            assert_eq!(
                ops.decode_params(&decoded.subkey).unwrap(),
                e.params,
                "entry {i}"
            );
        }
    }
    assert_eq!(written.next(), None, "a row beyond the entries");
    if layout == Layout::Md5 {
        let split = decode_row_key(&chunks[1][0]).unwrap();
        assert_eq!(split.row_type, RowType::Options);
        assert_eq!(
            split.subkey,
            decode_row_key(chunks[0].last().unwrap()).unwrap().subkey,
            "entry 5 000's trace and options rows are in different chunks"
        );
    }
    let reader = open(store, &clock, 33);
    let tile = block_on(reader.read_range(0, 0)).unwrap();
    assert_eq!(tile.traces.len(), TRACES);
    for e in &entries {
        let t = &tile.traces[&trace_id_text(&e.params)];
        assert_eq!((&t.params, &t.options), (&e.params, &e.options));
        assert_eq!(t.digests, vec![e.digest.clone()]);
    }
}

/// Put validation is all or nothing (`spec/tracestore.md` 10 step 4, 11.6 step 4): a batch
/// whose one entry has a trace row key over 4096 bytes fails with `row key too long`, and one
/// whose one entry has no params with `No params encoded.`; either sends nothing after the
/// OPS update (§9) — no `MutateRows`, and in the digest-id layout no map lookup, increment or
/// insert — so no trace, options, map or counter cell changes. An invalid digest is no
/// validation error (§5.2, §11.2): its batch is written whole, that point missing.
pub fn put_all_or_nothing(store: &dyn Store, layout: Layout) {
    setup(store, layout);
    let hooked = Hooked::new(store);
    let clock = ManualClock::new(Timestamp(T0));
    let gold = open(&hooked, &clock, 34);
    block_on(gold.put(
        0,
        Some(Timestamp(COMMIT_TIMES[0])),
        vec![entry(layout, "angler", "test_alpha", AP)],
        Timestamp(T0),
    ))
    .unwrap();
    // Everything but the OPS rows, which the failed Puts may update.
    let data_rows = || {
        raw_read(store, RowSet::all(), None)
            .into_iter()
            .filter(|r| !r.key.starts_with(OPS_ROWS_PREFIX))
            .collect::<Vec<_>>()
    };
    let before = data_rows();
    hooked.take_log();
    // About 1 000 keys encode to a trace id of some 5 900 bytes.
    let too_long: Params = (0..1000)
        .map(|k| (format!("k{k:04}"), "v".to_string()))
        .collect();
    let batch = |bad: PutEntry| {
        let mut entries: Vec<PutEntry> = (0..5)
            .map(|i| PutEntry {
                params: numbered_trace(i),
                options: layout_options(layout),
                digest: [AN, AU, BP, BU, AP][i].into(),
            })
            .collect();
        entries.insert(3, bad);
        entries
    };
    let cases = [
        (too_long, TraceStoreError::RowKeyTooLong),
        (
            Params::new(),
            TraceStoreError::Codec(CodecError::NoParamsEncoded),
        ),
    ];
    for (params, error) in cases {
        let bad = PutEntry {
            params,
            options: layout_options(layout),
            digest: BU.into(),
        };
        assert_eq!(
            block_on(gold.put(
                1,
                Some(Timestamp(COMMIT_TIMES[1])),
                batch(bad),
                Timestamp(T0 + 7_000_000)
            )),
            Err(error.clone())
        );
        let ops_row = ops_row_name(tile_key(0));
        let log = hooked.take_log();
        let beyond_ops: Vec<&Request> = log
            .iter()
            .filter(|r| match r {
                Request::CheckAndMutateRow(c) => c.row_key != ops_row,
                _ => read_key(r) != Some(ops_row.as_slice()),
            })
            .collect();
        assert!(
            beyond_ops.is_empty(),
            "{error}: requests beyond the OPS update: {beyond_ops:?}"
        );
        assert_eq!(data_rows(), before, "{error}: data rows changed");
    }
    // An invalid digest is stored as missing, with the rest of its batch.
    let mut entries = batch(entry(layout, "bullhead", "test_alpha", "NOPE"));
    entries[0].digest = AU.to_ascii_uppercase();
    block_on(gold.put(
        1,
        Some(Timestamp(COMMIT_TIMES[1])),
        entries.clone(),
        Timestamp(T0 + 7_000_000),
    ))
    .unwrap();
    let tile = block_on(gold.read_range(1, 1)).unwrap();
    // The batch's traces and the first Put's (no digest at commit 1).
    assert_eq!(tile.traces.len(), entries.len() + 1);
    for e in &entries {
        assert_eq!(
            tile.traces[&trace_id_text(&e.params)].digests,
            vec![normalize_digest(&e.digest)]
        );
    }
}

/// Scenario 29 (deadline and back-off part) on a store: every `CheckAndMutateRow` answers
/// `UNAVAILABLE`; a Put on a tile without OPS row, with a deadline 1 s after it starts, re-reads
/// and retries after back-off waits within the bounds of §17.3 (10 ms base, doubling), ends
/// `aborted` exactly at the deadline and writes no trace row.
pub fn deadline_and_backoff(store: &dyn Store, layout: Layout) {
    setup(store, layout);
    let clock = ManualClock::new(Timestamp(T0));
    let seen: Mutex<Vec<(bool, i64)>> = Mutex::new(Vec::new());
    let hooked = Hooked::new(store);
    hooked.set_hook(|r, _| {
        let cas = matches!(r, Request::CheckAndMutateRow(_));
        seen.lock().unwrap().push((cas, clock.now().0));
        if cas {
            HookAction::Fail(unavailable())
        } else {
            HookAction::Pass
        }
    });
    let gold = open(&hooked, &clock, 29);
    let options = CallOptions {
        deadline_micros: Some(1_000_000),
        ..gold.options()
    };
    let gold = gold.with_options(options);
    assert_eq!(
        block_on(gold.put(
            0,
            Some(Timestamp(COMMIT_TIMES[0])),
            vec![entry(layout, "angler", "test_alpha", AP)],
            Timestamp(T0),
        )),
        Err(TraceStoreError::Aborted)
    );
    assert_eq!(
        clock.now(),
        Timestamp(T0 + 1_000_000),
        "ends at the deadline"
    );
    drop(gold);
    drop(hooked);
    let seen = seen.into_inner().unwrap();
    assert!(seen.len() >= 10, "{seen:?}");
    // ReadRow (the OPS row), CheckAndMutateRow, then again after each wait.
    for (i, (cas, _)) in seen.iter().enumerate() {
        assert_eq!(*cas, i % 2 == 1, "{seen:?}");
    }
    let reads: Vec<i64> = seen
        .iter()
        .filter(|(cas, _)| !cas)
        .map(|(_, t)| *t)
        .collect();
    for (k, w) in reads.windows(2).enumerate() {
        let base = 10_000i64 << k;
        let wait = w[1] - w[0];
        assert!(
            wait >= base / 2 && wait <= base,
            "wait {k} is {wait} for base {base}"
        );
    }
    let traces = raw_read(
        store,
        RowSet::range(rowkit_codec::model::RowRange::all()),
        Some(RowFilter::FamilyNameRegex("T".into())),
    );
    assert!(traces.is_empty(), "no trace row is written");
}

/// Scenario 30: OPS cells never go back in time.
pub fn ops_timestamps_never_go_back(store: &dyn Store, layout: Layout) {
    setup(store, layout);
    let later = ManualClock::new(Timestamp(T0 + 60_000_000));
    let first = open(store, &later, 30);
    block_on(first.put(
        0,
        Some(Timestamp(COMMIT_TIMES[0])),
        vec![entry(layout, "angler", "test_alpha", AP)],
        Timestamp(T0),
    ))
    .unwrap();
    let hooked = Hooked::new(store);
    let clock = ManualClock::new(Timestamp(T0));
    let behind = open(&hooked, &clock, 31);
    block_on(behind.put(
        0,
        Some(Timestamp(COMMIT_TIMES[0])),
        vec![entry(layout, "bullhead", "test_alpha", AU)],
        Timestamp(T0),
    ))
    .unwrap();
    let cas = hooked
        .take_log()
        .into_iter()
        .find_map(|r| match r {
            Request::CheckAndMutateRow(c) => Some(c),
            _ => None,
        })
        .expect("an OPS update");
    let stamps: Vec<i64> = cas
        .true_mutations
        .iter()
        .map(|m| match m {
            Mutation::SetCell { timestamp, .. } => timestamp.0,
            Mutation::DeleteFromColumn { range: Some(r), .. } => r.end,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        stamps,
        vec![
            T0 + 60_001_000,
            T0 + 60_001_000,
            T0 + 59_001_000,
            T0 + 59_001_000
        ]
    );
    let tile = block_on(behind.read_range(0, 0)).unwrap();
    assert_eq!(
        tile.traces[&trace_id_text(&trace_params("bullhead", "test_alpha"))].digests,
        vec![AU]
    );
}

/// Scenario 16 and 28: setup, detection and mismatches (on a store without tables `a`, `b`).
pub fn setup_and_detection(store: &dyn Store) {
    setup_on(store, "a", Layout::DigestId).unwrap();
    setup_on(store, "b", Layout::Md5).unwrap();
    let fam = |t: &str| store.families(t).unwrap();
    let a = fam("a");
    let mut names: Vec<&str> = a.iter().map(|f| f.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["D", "I", "O", "T"]);
    assert!(a.iter().all(|f| f.gc_rule.is_none()));
    let b = fam("b");
    assert_eq!(
        b.iter().map(|f| f.name.as_str()).collect::<BTreeSet<_>>(),
        ["O", "P", "T"].into()
    );
    assert!(
        b.iter()
            .all(|f| f.gc_rule == Some(rowkit_codec::model::GcRule::MaxNumVersions(1)))
    );
    // Again: nothing changes.
    setup_on(store, "a", Layout::DigestId).unwrap();
    setup_on(store, "b", Layout::Md5).unwrap();
    assert_eq!(fam("a"), a);
    assert_eq!(fam("b"), b);
    let rows = |table: &str| {
        let request = ReadRowsRequest {
            table: table.into(),
            rows: RowSet::all(),
            ..ReadRowsRequest::default()
        };
        rowkit_client::read_rows_blocking(store, request, Timestamp(T0)).unwrap()
    };
    assert!(rows("a").is_empty(), "setup writes no rows");
    assert!(rows("b").is_empty(), "setup writes no rows");
    let clock = ManualClock::new(Timestamp(T0));
    assert_eq!(
        block_on(TraceStore::open(SyncDriver::new(store, &clock), "a", None))
            .map(|g| g.with_options(seeded(1)))
            .unwrap()
            .layout(),
        Layout::DigestId
    );
    assert_eq!(
        block_on(TraceStore::open(SyncDriver::new(store, &clock), "b", None))
            .map(|g| g.with_options(seeded(1)))
            .unwrap()
            .layout(),
        Layout::Md5
    );
    assert_eq!(
        block_on(TraceStore::open(
            SyncDriver::new(store, &clock),
            "a",
            Some(Layout::Md5)
        ))
        .map(|g| g.with_options(seeded(1)))
        .unwrap_err(),
        TraceStoreError::Codec(CodecError::LayoutMismatch)
    );
    assert_eq!(
        block_on(TraceStore::open(
            SyncDriver::new(store, &clock),
            "b",
            Some(Layout::DigestId)
        ))
        .map(|g| g.with_options(seeded(1)))
        .unwrap_err(),
        TraceStoreError::Codec(CodecError::LayoutMismatch)
    );
    // Raw cells of one layout in the other's decoder.
    assert_eq!(
        decode_digest_id_cell(&digest_to_cell(AP)),
        Err(rowkit_codec::tracestore::CodecError::CorruptDigestIdCell)
    );
    assert_eq!(cell_to_digest(&encode_digest_id_cell(300)), "");
}

/// Scenario 16, re-running setup (§8.2): on an existing digest-id table setup adds the
/// families it lacks, without GC rule, and keeps the others (and their rows) as they are; an
/// existing md5 table is not changed (§8.1). Uses tables `c` and `d` (must not exist).
pub fn setup_adds_missing_families(store: &dyn Store) {
    let plain = |name: &str| ColumnFamily {
        name: name.into(),
        gc_rule: None,
    };
    let one_version = |name: &str| ColumnFamily {
        name: name.into(),
        gc_rule: Some(rowkit_codec::model::GcRule::MaxNumVersions(1)),
    };
    let names = |t: &str| -> Vec<String> {
        let mut n: Vec<String> = store
            .families(t)
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        n.sort();
        n
    };
    // A digest-id table from before the map existed: T (with a GC rule of its own) and O.
    store
        .create_table("c", &[one_version("T"), plain("O")])
        .unwrap();
    assert_eq!(
        block_on(TraceStore::open(
            SyncDriver::new(store, &ManualClock::new(Timestamp(T0))),
            "c",
            None
        ))
        .map(|g| g.with_options(seeded(1)))
        .unwrap_err(),
        TraceStoreError::Codec(CodecError::AmbiguousLayout)
    );
    setup_on(store, "c", Layout::DigestId).unwrap();
    assert_eq!(names("c"), ["D", "I", "O", "T"]);
    let families = store.families("c").unwrap();
    for f in &families {
        let want = if f.name == "T" {
            one_version("T")
        } else {
            plain(&f.name)
        };
        assert_eq!(
            f, &want,
            "added families have no GC rule, present ones are kept"
        );
    }
    let clock = ManualClock::new(Timestamp(T0));
    assert_eq!(
        block_on(TraceStore::open(SyncDriver::new(store, &clock), "c", None))
            .map(|g| g.with_options(seeded(1)))
            .unwrap()
            .layout(),
        Layout::DigestId
    );
    // Again: nothing changes.
    setup_on(store, "c", Layout::DigestId).unwrap();
    assert_eq!(store.families("c").unwrap(), families);
    // An md5 table with only O and T (v2, §16) is left as it is.
    store
        .create_table("d", &[one_version("O"), one_version("T")])
        .unwrap();
    setup_on(store, "d", Layout::Md5).unwrap();
    assert_eq!(names("d"), ["O", "T"]);
}

// ------------------------------------------------------------------ digest-id scenarios

fn digest_of(i: u64) -> String {
    format!("{i:032x}").chars().rev().collect()
}

fn counter_value(store: &dyn Store) -> i64 {
    let rows = raw_read(
        store,
        RowSet::key(id_counter_row_name()),
        Some(RowFilter::CellsPerColumnLimit(1)),
    );
    rows.first()
        .map_or(0, |r| decode_id_counter(&r.cells[0].value).unwrap())
}

fn map_cells(store: &dyn Store) -> Vec<(String, u64)> {
    let rows = raw_read(
        store,
        RowSet::range(rowkit_codec::model::RowRange::all()),
        Some(RowFilter::FamilyNameRegex("D".into())),
    );
    rows.iter()
        .flat_map(|r| {
            r.cells.iter().map(move |c| {
                (
                    digest_of_map_cell(&r.key, &c.qualifier).unwrap(),
                    decode_digest_map_value(&c.value).unwrap(),
                )
            })
        })
        .collect()
}

/// Scenario 17's nine batches of 113 new digests: the increment each sends, if any, and the
/// counter value it answers (vector `digest_id_allocation` case 1, its last nine steps; the
/// vector test checks this table against the vector).
pub const FIRST_IDS_BATCHES: [Option<(i64, i64)>; 9] = [
    None,
    None,
    Some((351, 697)),
    None,
    None,
    Some((339, 1036)),
    None,
    None,
    Some((339, 1375)),
];

/// The amounts of the increments in `log`.
fn increments_sent(log: &[Request]) -> Vec<i64> {
    log.iter()
        .filter_map(|r| match r {
            Request::ReadModifyWriteRow(r) => match r.rules[0].op {
                rowkit_codec::model::RuleOp::IncrementAmount(a) => Some(a),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Whether a request is one of the 32 prefix scans of a full digest-map read (§11.4).
fn is_full_map_scan(r: &Request) -> bool {
    matches!(r, Request::ReadRows(q) if q.rows.row_keys.is_empty()
        && q.rows.row_ranges.len() == 1
        && (0..SHARDS).any(|s| q.rows.row_ranges[0] == shard_prefix_range(s, TYPE_DIGEST_MAP, GLOBAL_TILE_KEY)))
}

/// Asserts that `log` holds exactly one full map read — the 32 shard scans in shard order —
/// and that nothing follows it.
fn assert_one_full_map_read_last(log: &[Request]) {
    let first = log
        .iter()
        .position(is_full_map_scan)
        .expect("a full map read");
    let scans: Vec<_> = log[first..]
        .iter()
        .map(|r| match r {
            Request::ReadRows(q) if is_full_map_scan(r) => q.rows.row_ranges[0].clone(),
            other => panic!("after the map read started: {other:?}"),
        })
        .collect();
    let shards: Vec<_> = (0..SHARDS)
        .map(|s| shard_prefix_range(s, TYPE_DIGEST_MAP, GLOBAL_TILE_KEY))
        .collect();
    assert_eq!(scans, shards, "one full map read, in shard order");
}

/// Scenario 17: the original `TestBTDigestMap`.
pub fn first_ids(store: &dyn Store) {
    setup(store, Layout::DigestId);
    let hooked = Hooked::new(store);
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(&hooked, &clock, 17);
    let digests: Vec<String> = (0..90).map(digest_of).collect();
    let ids = block_on(gold.assign_digest_ids(digests.clone())).unwrap();
    let mut sorted = digests.clone();
    sorted.sort();
    for (d, id) in digests.iter().zip(&ids) {
        assert_eq!(*id, sorted.iter().position(|s| s == d).unwrap() as u64 + 1);
    }
    assert_eq!(increments_sent(&hooked.take_log()), [346]);
    assert_eq!(
        encode_id_counter(counter_value(store)),
        vec![0, 0, 0, 0, 0, 0, 1, 0x5a]
    );
    assert_eq!(map_cells(store).len(), 90);
    // 91 entries with "" <-> 0, which `len` leaves out.
    let cache = gold.state().digest_cache();
    assert_eq!(
        (cache.len(), cache.id(""), cache.digest(0)),
        (90, Some(0), Some(""))
    );
    assert_eq!(
        block_on(gold.allocate_digest_ids(3)).unwrap(),
        vec![91, 92, 93]
    );
    assert!(hooked.take_log().is_empty());
    let pool: Vec<u64> = gold.state().pool().collect();
    assert!(pool.contains(&94) && !pool.contains(&92) && !pool.contains(&93));
    gold.state().return_digest_ids(&[91, 93]);
    let pool: Vec<u64> = gold.state().pool().collect();
    assert!(pool.contains(&93) && pool.contains(&94) && !pool.contains(&92));
    let more: Vec<String> = (80..100).map(digest_of).collect();
    let ids = block_on(gold.assign_digest_ids(more.clone())).unwrap();
    let new_ids: BTreeSet<u64> = ids[10..].iter().copied().collect();
    assert_eq!(new_ids, (94..104).collect());
    assert_eq!(
        map_cells(store).len(),
        100,
        "the map: 101 entries with \"\""
    );
    assert_eq!(gold.state().digest_cache().len(), 100);
    // A fresh instance reads the whole map (its tile read finds an id it does not know).
    block_on(gold.put(
        0,
        None,
        vec![entry(
            Layout::DigestId,
            "angler",
            "test_alpha",
            &digest_of(0),
        )],
        Timestamp(T0),
    ))
    .unwrap();
    hooked.take_log();
    let mut fresh = open(&hooked, &clock, 18);
    block_on(fresh.read_range(0, 0)).unwrap();
    assert_one_full_map_read_last(&hooked.take_log());
    assert_eq!(fresh.state().digest_cache(), gold.state().digest_cache());
    for (batch, want) in FIRST_IDS_BATCHES.iter().enumerate() {
        let digests: Vec<String> = (0..113)
            .map(|i| digest_of(1000 + batch as u64 * 113 + i))
            .collect();
        let before = counter_value(store);
        block_on(gold.assign_digest_ids(digests)).unwrap();
        let sent = increments_sent(&hooked.take_log());
        match want {
            Some((increment, counter)) => {
                assert_eq!(sent, [*increment], "batch {batch}");
                assert_eq!(counter_value(store), *counter, "batch {batch}");
            }
            None => {
                assert!(sent.is_empty(), "batch {batch}: {sent:?}");
                assert_eq!(counter_value(store), before, "batch {batch}");
            }
        }
    }
    assert_eq!(counter_value(store), 1375);
}

/// Scenario 18: concurrent allocators (threads), with and without lost increment answers.
pub fn concurrent_allocators(store: &dyn Store, lose_some: bool) {
    setup(store, Layout::DigestId);
    let hooked = Hooked::new(store);
    if lose_some {
        let mut n = 0u64;
        hooked.set_hook(move |r, _| {
            n += 1;
            if matches!(r, Request::ReadModifyWriteRow(_)) && n.is_multiple_of(7) {
                HookAction::ApplyThenFail(unavailable())
            } else {
                HookAction::Pass
            }
        });
    }
    let clock = ManualClock::new(Timestamp(T0));
    let results: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (hooked, clock, results) = (&hooked, &clock, &results);
            s.spawn(move || {
                let gold = block_on(TraceStore::open(
                    SyncDriver::new(hooked as &dyn Store, clock),
                    TABLE,
                    None,
                ))
                .map(|g| g.unaware().with_options(seeded(t)))
                .unwrap();
                let mut rng = SplitMix64::new(t + 1);
                for _ in 0..200 {
                    let n = 1 + rng.below(300) as usize;
                    match block_on(gold.allocate_digest_ids(n)) {
                        Ok(ids) => {
                            assert_eq!(ids.len(), n);
                            results.lock().unwrap().extend(ids);
                        }
                        Err(e) => assert!(lose_some, "allocation failed: {e}"),
                    }
                }
            });
        }
    });
    let ids = results.into_inner().unwrap();
    let distinct: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), ids.len(), "an id was handed out twice");
    let counter = counter_value(store);
    assert!(ids.iter().all(|&i| i >= 1 && (i as i64) < counter));
    let sent: i64 = increments_sent(&hooked.take_log()).iter().sum();
    assert_eq!(counter, sent);
}

/// Scenario 19: many writers Putting overlapping new digests concurrently (threads).
pub fn concurrent_inserts(store: &dyn Store) {
    setup(store, Layout::DigestId);
    let clock = ManualClock::new(Timestamp(T0));
    std::thread::scope(|s| {
        for w in 0..6u64 {
            let clock = &clock;
            s.spawn(move || {
                let gold = block_on(TraceStore::open(SyncDriver::new(store, clock), TABLE, None))
                    .map(|g| g.unaware().with_options(seeded(w)))
                    .unwrap();
                for step in 0..4u64 {
                    let entries = (0..10u64)
                        .map(|i| PutEntry {
                            params: params_from([
                                ("writer", w.to_string()),
                                ("trace", i.to_string()),
                            ]),
                            options: Params::new(),
                            digest: digest_of(step * 7 + i + w),
                        })
                        .collect();
                    block_on(gold.put(step as i64, None, entries, Timestamp(T0))).unwrap();
                }
            });
        }
    });
    let cells = map_cells(store);
    let digests: BTreeSet<&String> = cells.iter().map(|(d, _)| d).collect();
    assert_eq!(digests.len(), cells.len(), "a digest has two map cells");
    let ids: BTreeSet<u64> = cells.iter().map(|(_, i)| *i).collect();
    assert_eq!(ids.len(), cells.len(), "an id maps two digests");
    let reader = open(store, &clock, 99);
    let tile = block_on(reader.read_range(0, 3)).unwrap();
    for w in 0..6u64 {
        for i in 0..10u64 {
            let id = trace_id_text(&params_from([
                ("writer", w.to_string()),
                ("trace", i.to_string()),
            ]));
            let want: Vec<String> = (0..4u64).map(|step| digest_of(step * 7 + i + w)).collect();
            assert_eq!(tile.traces[&id].digests, want);
        }
    }
}

/// Scenario 19, deterministic form: both lookups miss, A inserts first, B adopts A's id.
pub fn one_digest_two_writers(store: &dyn Store) {
    setup(store, Layout::DigestId);
    let d = "9e1d402515193304cafbdf02b8fd751b";
    let map_row = digest_map_row(d).unwrap();
    let clock = ManualClock::new(Timestamp(T0));
    let mut a = open(store, &clock, 1);
    // B's insert finds A's cell: A runs in the hook, after B's lookup missed.
    let a_put = Mutex::new(Some(move || {
        block_on(a.put(
            0,
            None,
            vec![PutEntry {
                params: params_from([("t", "a")]),
                digest: d.into(),
                ..PutEntry::default()
            }],
            Timestamp(T0),
        ))
        .unwrap();
        a.state().digest_cache().id(d).unwrap()
    }));
    let a_id = Mutex::new(0u64);
    let hooked = Hooked::new(store);
    let mut b = open(&hooked, &clock, 2);
    hooked.set_hook(|r, _| {
        if matches!(r, Request::CheckAndMutateRow(c) if c.row_key == map_row)
            && let Some(mut f) = a_put.lock().unwrap().take()
        {
            *a_id.lock().unwrap() = f();
        }
        HookAction::Pass
    });
    block_on(b.put(
        0,
        None,
        vec![PutEntry {
            params: params_from([("t", "b")]),
            digest: d.into(),
            ..PutEntry::default()
        }],
        Timestamp(T0),
    ))
    .unwrap();
    hooked.clear_hook();
    let a_id = *a_id.lock().unwrap();
    assert!(a_id >= 1, "A's Put ran");
    // B's insert offered its own id and answered predicate_matched = true.
    let inserts: Vec<(u64, bool)> = hooked
        .take_unary_exchanges()
        .into_iter()
        .filter_map(|(asked, answer)| match (asked, answer) {
            (Request::CheckAndMutateRow(c), Response::CheckAndMutateRow { predicate_matched })
                if c.row_key == map_row =>
            {
                match c.false_mutations.as_slice() {
                    [Mutation::SetCell { value, .. }] => {
                        Some((decode_digest_map_value(value).unwrap(), predicate_matched))
                    }
                    other => panic!("insert mutations {other:?}"),
                }
            }
            _ => None,
        })
        .collect();
    let [(offered, true)] = inserts.as_slice() else {
        panic!("B's inserts: {inserts:?}")
    };
    assert_ne!(*offered, a_id);
    assert_eq!(
        b.state().pool().last(),
        Some(*offered),
        "B's offered id goes to the back of its pool"
    );
    // B looked the row up, then re-read it after the conflict.
    let log = hooked.take_log();
    let map_reads: Vec<usize> = log
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            let map_key = |k: &[u8]| k[3..].starts_with(b"ts:d:");
            match r {
                Request::ReadRows(q) => q.rows.row_keys.iter().any(|k| map_key(k)),
                Request::ReadRow(q) => map_key(&q.row_key),
                _ => false,
            }
        })
        .map(|(i, r)| {
            assert_eq!(read_key(r), Some(map_row.as_slice()), "request {i}");
            i
        })
        .collect();
    let insert_at = log
        .iter()
        .position(|r| matches!(r, Request::CheckAndMutateRow(c) if c.row_key == map_row))
        .unwrap();
    assert!(
        map_reads.len() == 2 && map_reads[0] < insert_at && insert_at < map_reads[1],
        "lookup, insert, re-read: {map_reads:?}, insert {insert_at}"
    );
    assert_eq!(b.state().digest_cache().id(d), Some(a_id), "B uses A's id");
    assert_eq!(map_cells(store), vec![(d.to_string(), a_id)]);
    let rows = raw_read(
        store,
        RowSet::range(rowkit_codec::model::RowRange::prefix(b"")),
        Some(RowFilter::FamilyNameRegex("T".into())),
    );
    assert_eq!(rows.len(), 2, "A's and B's trace rows");
    for row in rows {
        assert_eq!(row.cells.len(), 1);
        assert_eq!(row.cells[0].value, encode_digest_id_cell(a_id));
    }
    let tile = block_on(b.read_range(0, 0)).unwrap();
    assert_eq!(tile.traces.len(), 2);
    assert!(
        tile.traces
            .values()
            .all(|t| t.digests == vec![d.to_string()])
    );
}

/// Scenario 20: missing digests round trip; an absent cell or one with an empty value also
/// reads as missing.
pub fn missing_digest(store: &dyn Store) {
    setup(store, Layout::DigestId);
    let hooked = Hooked::new(store);
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(&hooked, &clock, 20);
    block_on(gold.put(
        0,
        None,
        vec![
            entry(Layout::DigestId, "angler", "test_alpha", ""),
            entry(Layout::DigestId, "angler", "test_beta", "NOPE"),
        ],
        Timestamp(T0),
    ))
    .unwrap();
    let log = hooked.take_log();
    assert!(increments_sent(&log).is_empty(), "no increment");
    assert!(map_cells(store).is_empty());
    let rows = raw_read(
        store,
        RowSet::range(rowkit_codec::model::RowRange::prefix(b"")),
        Some(RowFilter::FamilyNameRegex("T".into())),
    );
    assert_eq!(rows.len(), 2);
    for row in &rows {
        assert_eq!(row.cells.len(), 1);
        assert_eq!(row.cells[0].value, [0]);
    }
    let tile = block_on(gold.read_range(0, 0)).unwrap();
    assert_eq!(tile.traces.len(), 2);
    assert!(
        tile.traces
            .values()
            .all(|t| t.digests == vec![String::new()])
    );
    // Commit 1: an empty cell on angler/test_alpha, no cell on angler/test_beta.
    let ops = &gold
        .state()
        .cached_ops(&ops_row_name(tile_key(0)))
        .unwrap()
        .ops;
    let alpha = ops
        .encode_params(&trace_params("angler", "test_alpha"))
        .unwrap();
    let alpha_row = trace_row_name(tile_key(0), alpha.as_bytes());
    raw_write(
        store,
        vec![MutateRowsEntry {
            row_key: alpha_row,
            mutations: vec![set("T", &digest_id_trace_qualifier(1), T0, Vec::new())],
        }],
    );
    let tile = block_on(gold.read_range(0, 1)).unwrap();
    assert_eq!(tile.traces.len(), 2);
    assert!(
        tile.traces
            .values()
            .all(|t| t.digests == vec![String::new(), String::new()])
    );
}

/// Scenario 21: a fresh reader resolves ids with one full map read, after its trace scans.
pub fn fresh_reader(store: &dyn Store) {
    setup(store, Layout::DigestId);
    let clock = ManualClock::new(Timestamp(T0));
    let mut writer = open(store, &clock, 21);
    put_points(&mut writer, Layout::DigestId, [0, 1, 2], T0);
    let hooked = Hooked::new(store);
    let mut reader = open(&hooked, &clock, 22);
    let expected = expected_tile(Layout::DigestId, [0, 1, 2]);
    assert_eq!(block_on(reader.read_range(0, 2)).unwrap(), expected);
    let log = hooked.take_log();
    assert_one_full_map_read_last(&log);
    let trace_scans = (0..SHARDS)
        .filter(|&s| {
            let range = shard_prefix_range(s, TYPE_TRACE, tile_key(0));
            log.iter()
                .any(|r| matches!(r, Request::ReadRows(q) if q.rows.row_ranges == [range.clone()]))
        })
        .count();
    assert_eq!(trace_scans, 32, "every trace scan precedes the map read");
    block_on(reader.read_range(0, 2)).unwrap();
    assert!(
        !hooked.take_log().iter().any(is_full_map_scan),
        "a second read sends no map read"
    );
    // Each raw trace cell holds uvarint(the map's id for that trace's digest at that commit).
    let map: BTreeMap<String, u64> = map_cells(store).into_iter().collect();
    let ops = reader
        .state()
        .cached_ops(&ops_row_name(tile_key(0)))
        .unwrap()
        .ops
        .clone();
    let rows = raw_read(
        store,
        RowSet::range(rowkit_codec::model::RowRange::prefix(b"")),
        Some(RowFilter::Chain(vec![
            RowFilter::FamilyNameRegex("T".into()),
            RowFilter::CellsPerColumnLimit(1),
        ])),
    );
    let mut cells = 0;
    for row in rows {
        let params = ops.decode_params(extract_subkey(&row.key)).unwrap();
        let trace = &expected.traces[&trace_id_text(&params)];
        for cell in &row.cells {
            let commit = parse_trace_qualifier(&cell.qualifier).unwrap() as usize;
            let digest = &trace.digests[commit];
            assert_eq!(
                cell.value,
                encode_digest_id_cell(map[digest]),
                "{params:?} at {commit}"
            );
            cells += 1;
        }
    }
    assert_eq!(cells, 16, "one cell per point");
}

/// Scenario 22: unknown and corrupt ids.
pub fn unknown_and_corrupt_ids(make_store: &dyn Fn() -> Box<dyn Store>) {
    let clock = ManualClock::new(Timestamp(T0));
    fn trace_row<'s>(store: &'s dyn Store, clock: &'s ManualClock, value: Vec<u8>) -> Gold<'s> {
        let gold = open(store, clock, 22);
        block_on(gold.put(
            0,
            None,
            vec![entry(Layout::DigestId, "angler", "test_alpha", "")],
            Timestamp(T0),
        ))
        .unwrap();
        let row = raw_read(
            store,
            RowSet::range(rowkit_codec::model::RowRange::prefix(b"")),
            Some(RowFilter::FamilyNameRegex("T".into())),
        )[0]
        .key
        .clone();
        raw_write(
            store,
            vec![MutateRowsEntry {
                row_key: row,
                mutations: vec![set("T", b"0", T0 + 1000, value)],
            }],
        );
        gold
    }
    let store = make_store();
    setup(&*store, Layout::DigestId);
    trace_row(&*store, &clock, vec![0xe7, 0x07]);
    let hooked = Hooked::new(&*store);
    let reader = open(&hooked, &clock, 23);
    assert_eq!(
        block_on(reader.read_range(0, 0)).unwrap_err(),
        TraceStoreError::UnknownDigestId(999)
    );
    assert_one_full_map_read_last(&hooked.take_log());
    let store = make_store();
    setup(&*store, Layout::DigestId);
    let gold = trace_row(&*store, &clock, digest_to_cell(AP));
    assert_eq!(
        block_on(gold.read_range(0, 0)).unwrap_err(),
        TraceStoreError::Codec(CodecError::CorruptDigestIdCell)
    );
    for bad in [&b"0"[..], b"-5"] {
        let store = make_store();
        setup(&*store, Layout::DigestId);
        let gold = trace_row(&*store, &clock, vec![5]);
        raw_write(
            &*store,
            vec![MutateRowsEntry {
                row_key: digest_map_row(AP).unwrap(),
                mutations: vec![set(
                    "D",
                    &digest_map_qualifier(AP).unwrap(),
                    T0,
                    bad.to_vec(),
                )],
            }],
        );
        assert_eq!(
            block_on(gold.read_range(0, 0)).unwrap_err(),
            TraceStoreError::Codec(CodecError::CorruptDigestMap)
        );
    }
}

/// Scenario 23: rows per lookup with a map of `n_map` digests (the spec uses 100,000) when a
/// cold instance assigns the first `n_lookup` (10,000). Returns (lookup rows, full read rows).
pub fn rows_per_lookup(store: &dyn Store, n_map: u64, n_lookup: u64) -> (usize, usize) {
    setup(store, Layout::DigestId);
    let mut rows: BTreeMap<Vec<u8>, Vec<Mutation>> = BTreeMap::new();
    let digest = |i: u64| rowkit_codec::tracestore::ops_hash(i.to_string().as_bytes());
    for i in 0..n_map {
        let d = digest(i);
        rows.entry(digest_map_row(&d).unwrap())
            .or_default()
            .push(set(
                "D",
                &digest_map_qualifier(&d).unwrap(),
                T0,
                encode_digest_map_value(i + 1),
            ));
    }
    let entries: Vec<MutateRowsEntry> = rows
        .into_iter()
        .map(|(row_key, mutations)| MutateRowsEntry { row_key, mutations })
        .collect();
    let full_rows = entries.len();
    raw_write(store, entries);
    let hooked = Hooked::new(store);
    let clock = ManualClock::new(Timestamp(T0));
    let gold = open(&hooked, &clock, 23);
    let ids = block_on(gold.assign_digest_ids((0..n_lookup).map(digest).collect())).unwrap();
    assert_eq!(ids, (1..=n_lookup).collect::<Vec<_>>());
    let log = hooked.take_log();
    assert_eq!(log.len(), 1, "one lookup, no increment, no insert");
    let Request::ReadRows(r) = &log[0] else {
        panic!("not a ReadRows")
    };
    (r.rows.row_keys.len(), full_rows)
}

/// Scenario 24: the exact request sequence of one digest-id Put.
pub fn put_request_sequence(store: &dyn Store) {
    setup(store, Layout::DigestId);
    let clock = ManualClock::new(Timestamp(T0));
    // Tile 3's OPS, the map entry x -> 1 and the counter at 257.
    let ops = rowkit_codec::tracestore::OrderedParamSet::from_parts(
        vec!["device".into(), "name".into(), "source_type".into()],
        [
            (
                "device".into(),
                vec!["angler".into(), "bullhead".into(), "crosshatch".into()],
            ),
            ("name".into(), vec!["test_alpha".into(), "test_beta".into()]),
            ("source_type".into(), vec!["gm".into()]),
        ]
        .into(),
    );
    let bytes = rowkit_codec::tracestore::encode_ops_gob(&ops);
    let hash = rowkit_codec::tracestore::ops_hash(&bytes);
    let x = "9e1d402515193304cafbdf02b8fd751b";
    let y = "60b5e978d116cccc0ef12278d724245b";
    let z = "e30a49351a7e45b9591a989073e755b2";
    raw_write(
        store,
        vec![
            MutateRowsEntry {
                row_key: ops_row_name(2147483644),
                mutations: vec![
                    set("O", b"H", T0 - 1000, hash.into_bytes()),
                    set("O", b"OPS", T0 - 1000, bytes),
                ],
            },
            MutateRowsEntry {
                row_key: digest_map_row(x).unwrap(),
                mutations: vec![set(
                    "D",
                    &digest_map_qualifier(x).unwrap(),
                    T0 - 1000,
                    b"1".to_vec(),
                )],
            },
            MutateRowsEntry {
                row_key: id_counter_row_name(),
                mutations: vec![set("I", b"idc", T0 - 1000, encode_id_counter(257))],
            },
        ],
    );
    let hooked = Hooked::new(store);
    let mut gold = open(&hooked, &clock, 24);
    let e = |d: &str, digest: &str| entry(Layout::DigestId, d, "test_alpha", digest);
    block_on(gold.put(
        1000,
        None,
        vec![e("angler", x), e("bullhead", y), e("crosshatch", z)],
        Timestamp(T0),
    ))
    .unwrap();
    let log = hooked.take_log();
    let t = |s: &str| s.as_bytes().to_vec();
    let read = |rows: RowSet, filter: RowFilter| {
        Request::ReadRows(ReadRowsRequest {
            table: TABLE.into(),
            rows,
            filter: Some(filter),
            ..Default::default()
        })
    };
    let latest = RowFilter::CellsPerColumnLimit(1);
    let mut expected = vec![
        // The OPS row's read, a point read.
        Request::ReadRow(ReadRowRequest {
            table: TABLE.into(),
            row_key: t(":ts:o:2147483644:"),
            filter: Some(RowFilter::Chain(vec![
                latest.clone(),
                RowFilter::FamilyNameRegex("O".into()),
            ])),
            ..Default::default()
        }),
        read(
            RowSet {
                row_keys: vec![
                    t("05:ts:d:0000000000:e30"),
                    t("21:ts:d:0000000000:9e1"),
                    t("23:ts:d:0000000000:60b"),
                ],
                row_ranges: vec![],
            },
            RowFilter::Chain(vec![RowFilter::FamilyNameRegex("D".into()), latest]),
        ),
        Request::ReadModifyWriteRow(rowkit_statemachines::ReadModifyWriteRowRequest {
            table: TABLE.into(),
            app_profile_id: String::new(),
            row_key: t(":ts:i:0000000000:"),
            rules: vec![rowkit_codec::model::ReadModifyWriteRule {
                family: "I".into(),
                qualifier: t("idc"),
                op: rowkit_codec::model::RuleOp::IncrementAmount(258),
            }],
        }),
    ];
    for (row, q, v) in [
        (
            "23:ts:d:0000000000:60b",
            "5e978d116cccc0ef12278d724245b",
            "257",
        ),
        (
            "05:ts:d:0000000000:e30",
            "a49351a7e45b9591a989073e755b2",
            "258",
        ),
    ] {
        expected.push(Request::CheckAndMutateRow(
            rowkit_statemachines::CheckAndMutateRowRequest {
                table: TABLE.into(),
                app_profile_id: String::new(),
                row_key: t(row),
                predicate: Some(RowFilter::ColumnQualifierRegex(t(q))),
                true_mutations: vec![],
                false_mutations: vec![set("D", q.as_bytes(), T0, t(v))],
            },
        ));
    }
    let trace = |row: &str, v: Vec<u8>| MutateRowsEntry {
        row_key: t(row),
        mutations: vec![
            set("T", b"232", T0, v),
            Mutation::DeleteFromColumn {
                family: "T".into(),
                qualifier: t("232"),
                range: Some(rowkit_codec::model::TimestampRange {
                    start: 0,
                    end: T0 - 1000,
                }),
            },
        ],
    };
    expected.push(Request::MutateRows(MutateRowsRequest {
        table: TABLE.into(),
        app_profile_id: String::new(),
        entries: vec![
            trace("28:ts:t:2147483644:,0=0,1=0,2=0,", vec![1]),
            trace("02:ts:t:2147483644:,0=1,1=0,2=0,", vec![0x81, 2]),
            trace("01:ts:t:2147483644:,0=2,1=0,2=0,", vec![0x82, 2]),
        ]
        .into(),
    }));
    assert_eq!(log, expected);
    let pool: Vec<u64> = gold.state().pool().collect();
    assert_eq!(pool, (259..=514).collect::<Vec<_>>());
}

/// Scenario 26: versions without GC.
pub fn versions_without_gc(store: &dyn Store) {
    setup(store, Layout::DigestId);
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(store, &clock, 26);
    let put = |g: &mut Gold<'_>, d: &str, ts: i64| {
        block_on(g.put(
            0,
            None,
            vec![entry(Layout::DigestId, "angler", "test_alpha", d)],
            Timestamp(ts),
        ))
        .unwrap();
    };
    put(&mut gold, AP, T0);
    put(&mut gold, AN, T0 + 7_000_000);
    let cells = || {
        raw_read(
            store,
            RowSet::range(rowkit_codec::model::RowRange::prefix(b"")),
            Some(RowFilter::FamilyNameRegex("T".into())),
        )[0]
        .cells
        .len()
    };
    assert_eq!(cells(), 1);
    put(&mut gold, AU, T0 - 7_000_000);
    assert_eq!(cells(), 2);
    let tile = block_on(gold.read_range(0, 0)).unwrap();
    assert_eq!(
        tile.traces[&trace_id_text(&trace_params("angler", "test_alpha"))].digests,
        vec![AN]
    );
}

/// Scenario 27: an insert applied but answered with an error.
pub fn insert_with_unknown_outcome(store: &dyn Store) {
    setup(store, Layout::DigestId);
    let hooked = Hooked::new(store);
    hooked.set_hook(|r, _| {
        if matches!(r, Request::CheckAndMutateRow(c) if c.row_key[3..].starts_with(b"ts:d:")) {
            HookAction::ApplyThenFail(unavailable())
        } else {
            HookAction::Pass
        }
    });
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(&hooked, &clock, 27);
    let e = vec![entry(Layout::DigestId, "angler", "test_alpha", AP)];
    assert!(matches!(
        block_on(gold.put(0, None, e.clone(), Timestamp(T0))),
        Err(TraceStoreError::Store {
            code: Code::Unavailable,
            ..
        })
    ));
    hooked.clear_hook();
    block_on(gold.put(0, None, e, Timestamp(T0))).unwrap();
    let cells = map_cells(store);
    assert_eq!(cells.len(), 1);
    let written = cells[0].1;
    assert_eq!(gold.state().digest_cache().id(AP), Some(written));
    assert!(!gold.state().pool().any(|i| i == written));
}

// ------------------------------------------------------------------ check (spec/check.md §2)

/// Each finding's (kind, escaped row key), sorted, and the summary, of a check of [`TABLE`].
fn check_findings(
    store: &dyn Store,
    fix: bool,
) -> (
    Vec<(String, String)>,
    rowkit_statemachines::check::CheckSummary,
) {
    use rowkit_codec::escape::escape;
    use rowkit_statemachines::check::{CheckEvent, CheckOptions};
    let clock = ManualClock::new(Timestamp(T0 + 3_600_000_000));
    let gold = open(store, &clock, 9);
    let mut found = Vec::new();
    let options = CheckOptions {
        fix,
        page_rows: 7,
        ..CheckOptions::default()
    };
    let summary = block_on(gold.check(options, 3_600_000_000, |e| {
        if let CheckEvent::Finding(f) = e {
            assert!(
                f.repair.is_none() && !f.repaired,
                "a trace store finding is report-only: {f:?}"
            );
            found.push((f.kind.to_string(), escape(&f.row_key)));
        }
    }))
    .unwrap();
    found.sort();
    assert_eq!(summary.left, found.len() as u64, "{summary:?}");
    (found, summary)
}

fn entry_on(row: Vec<u8>, mutations: Vec<Mutation>) -> MutateRowsEntry {
    MutateRowsEntry {
        row_key: row,
        mutations,
    }
}

/// Check acceptance (spec/check.md §2, §6): a table of `layout` with clean data and one
/// instance of every finding kind of its layout (but `counter_bad`, see
/// [`check_counter_bad`]), written raw, is reported exactly, by kind and row key; `fix`
/// repairs nothing (no trace store finding is repairable); a clean table checks clean.
pub fn check_corrupted(store: &dyn Store, layout: Layout) {
    use rowkit_codec::escape::escape;
    use rowkit_codec::tracestore::gob::{encode_ops_gob, ops_hash};
    use rowkit_codec::tracestore::ops::OrderedParamSet;
    setup(store, layout);
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(store, &clock, 1);
    put_points(&mut gold, layout, [0, 1, 2], T0);
    let (clean, summary) = check_findings(store, false);
    assert_eq!(
        clean,
        Vec::<(String, String)>::new(),
        "clean table: {summary:?}"
    );
    assert!(summary.rows_scanned > 0);

    let late = T0 + 1_000_000_000;
    let tile0 = tile_key(0);
    // Rows the Puts wrote (their subkeys are OPS-encoded params).
    let traces: Vec<Vec<u8>> = raw_read(store, RowSet::all(), None)
        .into_iter()
        .map(|r| r.key)
        .filter(|k| {
            decode_row_key(k).is_ok_and(|d| d.row_type == RowType::Trace && d.tile_key == tile0)
        })
        .collect();
    assert!(traces.len() >= 3, "{traces:?}");
    let sound_trace = traces[0].clone();
    let qualifier = |offset: u32| match layout {
        Layout::Md5 => md5_trace_qualifier(offset),
        Layout::DigestId => digest_id_trace_qualifier(offset),
    };
    let good_value = match layout {
        Layout::Md5 => digest_to_cell(AP),
        Layout::DigestId => encode_digest_id_cell(0),
    };
    let mut ops = OrderedParamSet::new();
    ops.update(
        &[("device".to_string(), vec!["angler".to_string()])]
            .into_iter()
            .collect(),
    );
    let gob = encode_ops_gob(&ops);
    let mut entries = Vec::new();
    let mut expect = Vec::new();
    let mut conflict_row = None;
    let mut push = |kind: &str, row: Vec<u8>, mutations: Vec<Mutation>| {
        if !kind.is_empty() {
            expect.push((kind.to_string(), escape(&row)));
        }
        entries.push(entry_on(row, mutations));
    };
    push(
        "undecodable_key",
        b"zz:junk".to_vec(),
        vec![set(FAMILY_TRACE, b"0", late, vec![1])],
    );
    let mut wrong = sound_trace.clone();
    wrong[1] = if wrong[1] == b'0' { b'1' } else { b'0' };
    push(
        "wrong_shard",
        wrong,
        vec![set(FAMILY_TRACE, &qualifier(3), late, good_value.clone())],
    );
    // Tiles 5, 6, 7: OPS rows missing H, with a wrong H, with a gob that does not decode.
    push(
        "ops_incomplete",
        ops_row_name(tile_key(5)),
        vec![set(FAMILY_OPS, COLUMN_OPS, late, gob.clone())],
    );
    push(
        "ops_hash_mismatch",
        ops_row_name(tile_key(6)),
        vec![
            set(FAMILY_OPS, COLUMN_OPS, late, gob.clone()),
            set(FAMILY_OPS, COLUMN_HASH, late, vec![b'0'; 32]),
        ],
    );
    let junk = b"not a gob".to_vec();
    push(
        "ops_undecodable",
        ops_row_name(tile_key(7)),
        vec![
            set(FAMILY_OPS, COLUMN_OPS, late, junk.clone()),
            set(FAMILY_OPS, COLUMN_HASH, late, ops_hash(&junk).into_bytes()),
        ],
    );
    push(
        "trace_without_ops",
        trace_row_name(tile_key(8), b",0=0,"),
        vec![set(FAMILY_TRACE, &qualifier(0), late, good_value.clone())],
    );
    push(
        "trace_params_not_in_ops",
        trace_row_name(tile0, b",0=99,"),
        vec![set(FAMILY_TRACE, &qualifier(0), late, good_value.clone())],
    );
    let bad_cell = match layout {
        Layout::Md5 => vec![1, 2, 3],
        Layout::DigestId => vec![0x80],
    };
    push(
        "bad_trace_cell",
        sound_trace.clone(),
        vec![set(FAMILY_TRACE, &qualifier(9), late, bad_cell)],
    );
    match layout {
        Layout::Md5 => push(
            "bad_options_cell",
            options_row_name(tile0, b",0=0,"),
            vec![set(
                FAMILY_OPTIONS,
                COLUMN_OPTIONS,
                late,
                b",nokv,".to_vec(),
            )],
        ),
        Layout::DigestId => {
            let counter = u64::try_from(counter_value(store)).unwrap();
            let cells = map_cells(store);
            let used: Vec<u64> = cells.iter().map(|(_, id)| *id).collect();
            assert!(
                counter > 10 && !used.contains(&(counter - 1)),
                "{counter} {used:?}"
            );
            let cell = |offset, id| {
                vec![set(
                    FAMILY_TRACE,
                    &qualifier(offset),
                    late,
                    encode_digest_id_cell(id),
                )]
            };
            push("id_unknown", traces[1].clone(), cell(20, counter - 1));
            push("id_above_counter", traces[2].clone(), cell(21, counter + 5));
            let map = |digest: &str| {
                (
                    digest_map_row(digest).unwrap(),
                    digest_map_qualifier(digest).unwrap(),
                )
            };
            let (row, q) = map("fff00000000000000000000000000001");
            push(
                "map_bad_value",
                row,
                vec![set(FAMILY_DIGEST_MAP, &q, late, b"0".to_vec())],
            );
            let (row, q) = map("eee00000000000000000000000000002");
            push(
                "map_conflict",
                row,
                vec![
                    set(
                        FAMILY_DIGEST_MAP,
                        &q,
                        late,
                        encode_digest_map_value(counter - 2),
                    ),
                    set(
                        FAMILY_DIGEST_MAP,
                        &q,
                        late + 1000,
                        encode_digest_map_value(counter - 3),
                    ),
                ],
            );
            // An id given to a second digest: reported on whichever of the two map rows the
            // scan reaches second.
            let (row, q) = map("ddd00000000000000000000000000003");
            let first = digest_map_row(&cells[0].0).unwrap();
            let value = encode_digest_map_value(used[0]);
            let later = row.clone().max(first);
            conflict_row = Some(later);
            push("", row, vec![set(FAMILY_DIGEST_MAP, &q, late, value)]);
        }
    }
    raw_write(store, entries);
    expect.extend(conflict_row.map(|r| ("map_conflict".to_string(), escape(&r))));
    expect.sort();
    let (found, _) = check_findings(store, false);
    assert_eq!(found, expect, "{layout:?}");
    let (fixed, summary) = check_findings(store, true);
    assert_eq!(
        (fixed, summary.repaired),
        (expect, 0),
        "{layout:?} with fix"
    );
}

/// `counter_bad`: an id counter cell that is not 8 bytes is reported, and the id checks that
/// need the counter are skipped rather than guessed (the digest map still tells which ids
/// exist).
pub fn check_counter_bad(store: &dyn Store) {
    use rowkit_codec::escape::escape;
    setup(store, Layout::DigestId);
    let clock = ManualClock::new(Timestamp(T0));
    let mut gold = open(store, &clock, 1);
    put_points(&mut gold, Layout::DigestId, [0, 1, 2], T0);
    let counter = id_counter_row_name();
    raw_write(
        store,
        vec![entry_on(
            counter.clone(),
            vec![
                // The increments' cells carry server times: replace them all.
                Mutation::DeleteFromColumn {
                    family: FAMILY_ID_COUNTER.into(),
                    qualifier: COLUMN_ID_COUNTER.to_vec(),
                    range: None,
                },
                set(FAMILY_ID_COUNTER, COLUMN_ID_COUNTER, T0, vec![1, 2, 3]),
            ],
        )],
    );
    let (found, _) = check_findings(store, false);
    assert_eq!(found, vec![("counter_bad".to_string(), escape(&counter))]);
}

/// Facade options with `seed` (default deadlines).
fn seeded(seed: u64) -> CallOptions {
    CallOptions {
        seed,
        ..CallOptions::default()
    }
}
