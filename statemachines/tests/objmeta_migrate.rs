#![allow(clippy::unwrap_used)]
//! `SyncKey` (`docs/migration.md` §4.3) driven against a real `MemoryStore`: each race of
//! §4.3's race table is played by injecting the competing write between the machine's
//! requests, and the final rows of both layouts are compared with rows built here from
//! `REPLACE` (the application's write) and the stamp's definition (§4.2), never by the code
//! under test. Plus both directions, masters and versions, before and after the switch.

use std::sync::Arc;

use rowkit_codec::model::{Cell, Mutation, Row, RowFilter, Timestamp, compare_canonical};
use rowkit_codec::objmeta::cells::{families, filters, replace, value_hash};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::Truth;
use rowkit_codec::objmeta::migration::sync::{KeyFinding, PairRow, WriteKind};
use rowkit_statemachines::check::{CheckEvent, CheckOptions, CheckTarget, Finding};
use rowkit_statemachines::objmeta::migrate::sync::{PairAsRead, SyncOutcome, SyncedKey};
use rowkit_statemachines::objmeta::{Check, ObjmetaError, ObjmetaState, SyncKey};
use rowkit_statemachines::operation::{OperationError, Start};
use rowkit_statemachines::{
    Code, Machine, MutateRowRequest, ReadRowRequest, Request, Response, StoreError, Tag,
};
use rowkit_store::{MemoryStore, Store};
use rowkit_testkit::script::store_responses;
use rowkit_testkit::sync_stamps::{sync_mark, without_sync_nonce};

const TABLE: &str = "objmeta";
const T0: Timestamp = Timestamp(1_700_000_000_000_000);

const A: &str = r#"{"key":"k","n":1}"#;
const B: &str = r#"{"key":"k","n":2}"#;
const Z: &str = r#"{"key":"k","n":0}"#;
const VA: &str = r#"{"key":"k","versionId":"v1","n":1}"#;
const VB: &str = r#"{"key":"k","versionId":"v1","n":2}"#;

/// The rows of key `k` (master) and `k\0v1` (version) in both layouts of bucket `b`.
const V0_MASTER: &[u8] = b"b\x00k";
const V1_MASTER: &[u8] = b"b\x00\x7fMk";
const V0_VERSION: &[u8] = b"b\x00k\x00v1";
const V1_VERSION: &[u8] = b"b\x00\x7fVk\x00v1";

// ---------------------------------------------------------------------------------------------
// The world: a memory store, application writes, expected rows
// ---------------------------------------------------------------------------------------------

struct World {
    store: MemoryStore,
}

impl World {
    fn new() -> World {
        let store = MemoryStore::new();
        Store::create_table(&store, TABLE, &families()).unwrap();
        World { store }
    }

    /// The store's answer to `request`, as the parts a machine receives.
    fn exec(&self, request: Request, now: Timestamp) -> Vec<Result<Response, StoreError>> {
        store_responses(&self.store, request, now)
    }

    fn mutate(&self, row: &[u8], mutations: Vec<Mutation>) {
        let request = Request::MutateRow(MutateRowRequest {
            table: TABLE.into(),
            row_key: row.to_vec(),
            mutations,
            ..Default::default()
        });
        assert_eq!(self.exec(request, T0), vec![Ok(Response::MutateRow)]);
    }

    /// An application's write (`MutateRow(k, REPLACE(v))`, `objmeta.md` §5.6): removes any stamp.
    fn app_put(&self, row: &[u8], text: &str) {
        self.mutate(row, replace(&Json::parse(text).unwrap(), None));
    }

    /// What an earlier sync left: the document and its stamp.
    fn synced_put(&self, row: &[u8], text: &str) {
        let mut m = replace(&Json::parse(text).unwrap(), None);
        m.push(stamp_cell(text));
        self.mutate(row, m);
    }

    /// A row carrying a stamp of another value than its hash (damage).
    fn badly_stamped_put(&self, row: &[u8], text: &str) {
        let mut m = replace(&Json::parse(text).unwrap(), None);
        m.push(Mutation::set_cell(
            "f",
            b"rowkitSync",
            Timestamp(0),
            vec![0xee; 32],
        ));
        self.mutate(row, m);
    }

    fn app_delete(&self, row: &[u8]) {
        self.mutate(row, vec![Mutation::DeleteFromRow]);
    }

    fn row(&self, row: &[u8]) -> Option<Row> {
        let request = Request::ReadRow(ReadRowRequest {
            table: TABLE.into(),
            row_key: row.to_vec(),
            filter: None,
            ..Default::default()
        });
        match self.exec(request, T0).pop() {
            Some(Ok(Response::Row(row))) => row.map(Arc::unwrap_or_clone),
            other => panic!("read: {other:?}"),
        }
    }

    /// Whether `predicate` yields a cell of `row` now (what a `CheckAndMutateRow` with it
    /// would see as matched).
    fn matches(&self, row: &[u8], predicate: RowFilter) -> bool {
        let request = Request::ReadRow(ReadRowRequest {
            table: TABLE.into(),
            row_key: row.to_vec(),
            filter: Some(predicate),
            ..Default::default()
        });
        match self.exec(request, T0).pop() {
            Some(Ok(Response::Row(row))) => row.is_some(),
            other => panic!("read: {other:?}"),
        }
    }

    /// Both rows of the pair are as expected, stamps compared by the hash they start with
    /// ([`without_sync_nonce`]: the sync's kind and nonce are checked by the tests that mean
    /// them, with [`sync_mark`]).
    #[track_caller]
    fn assert_rows(&self, pair: (&[u8], &[u8]), want: (Option<Row>, Option<Row>)) {
        let got = |row: &[u8]| self.row(row).map(without_sync_nonce);
        assert_eq!(got(pair.0), want.0, "source row {:?}", esc(pair.0));
        assert_eq!(got(pair.1), want.1, "target row {:?}", esc(pair.1));
    }
}

fn esc(key: &[u8]) -> String {
    rowkit_codec::escape::escape(key)
}

/// `Set(f, rowkitSync, 0, sha256(text))`: a stamp as §4.2 defines it.
fn stamp_cell(text: &str) -> Mutation {
    Mutation::set_cell("f", b"rowkitSync", Timestamp(0), value_hash(text))
}

/// The row `REPLACE(text)` leaves at `key`, with the stamp when `stamped`: built from the
/// application's write and the stamp's definition, not by the code under test.
fn expect(key: &[u8], text: &str, stamped: bool) -> Option<Row> {
    let mut mutations = replace(&Json::parse(text).unwrap(), None);
    if stamped {
        mutations.push(stamp_cell(text));
    }
    let mut cells: Vec<Cell> = mutations
        .into_iter()
        .filter_map(Cell::from_set_cell)
        .collect();
    cells.sort_by(compare_canonical);
    Some(Row {
        key: key.to_vec(),
        cells,
    })
}

// ---------------------------------------------------------------------------------------------
// The driver: one request at a time, a hook before each
// ---------------------------------------------------------------------------------------------

/// What happens to request `n` of a machine.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    /// Executed, its reply delivered.
    Deliver,
    /// Executed, its reply lost: the machine gets `UNAVAILABLE`.
    LoseResponse,
    /// The process dies before sending it: the machine is dropped.
    Crash,
    /// Not yet: [`Driven::run`] returns `None` and the request is sent by the next `run`.
    Pause,
}

/// A machine being driven against the world, request by request.
struct Driven<M: Machine> {
    m: M,
    now: Timestamp,
    /// Requests executed so far (1-based count of the next is `sent.len() + 1`).
    sent: Vec<Request>,
    /// How far the clock moves before each request.
    step_micros: i64,
    /// Events the machine emitted.
    events: Vec<M::Event>,
    /// A request polled but paused.
    pending: Option<(Tag, Request)>,
}

impl<M: Machine> Driven<M> {
    fn new(m: M) -> Self {
        Driven {
            m,
            now: T0,
            sent: Vec::new(),
            step_micros: 0,
            events: Vec::new(),
            pending: None,
        }
    }

    /// Runs the machine until it ends (`Some(result)`) or `hook` crashes it (`None`). `hook`
    /// sees the number of each request (1-based) and the request before it is executed, and
    /// may write to the world.
    fn run(
        &mut self,
        world: &World,
        mut hook: impl FnMut(usize, &Request) -> Fate,
    ) -> Option<Result<M::Output, M::Error>> {
        loop {
            while let Some(event) = self.m.poll_event() {
                self.events.push(event);
            }
            if let Some(result) = self.m.result() {
                return Some(result);
            }
            let polled = match self.pending.take() {
                Some(paused) => Some(paused),
                None => {
                    self.now = Timestamp(self.now.0 + self.step_micros);
                    self.m.poll_request()
                }
            };
            let Some((tag, request)) = polled else {
                let at = self.m.poll_timeout().expect("a stalled machine");
                self.now = self.now.max(at);
                self.m.handle_timeout(self.now);
                continue;
            };
            let fate = hook(self.sent.len() + 1, &request);
            if fate == Fate::Crash {
                return None;
            }
            if fate == Fate::Pause {
                self.pending = Some((tag, request));
                return None;
            }
            self.sent.push(request.clone());
            let parts = world.exec(request, self.now);
            if fate == Fate::LoseResponse {
                let lost = StoreError::new(Code::Unavailable, "response lost");
                self.m.handle_response(tag, Err(lost), self.now);
                continue;
            }
            for part in parts {
                self.m.handle_response(tag, part, self.now);
            }
        }
    }
}

fn start() -> Start {
    Start::within(T0, 1, 60_000_000)
}

fn sync<'a>(
    st: &'a mut ObjmetaState,
    key: &str,
    from: VFormat,
    to: VFormat,
    truth: Truth,
) -> Driven<SyncKey<'a>> {
    Driven::new(SyncKey::new(st, "b", key, from, to, truth, start()))
}

/// Runs a sync of `key` to its end with `hook`.
fn run_sync(
    world: &World,
    key: &str,
    from: VFormat,
    to: VFormat,
    truth: Truth,
    hook: impl FnMut(usize, &Request) -> Fate,
) -> (SyncedKey, Vec<Request>) {
    let mut st = ObjmetaState::default();
    let mut d = sync(&mut st, key, from, to, truth);
    let out = d.run(world, hook).expect("not crashed").unwrap();
    (out, d.sent)
}

fn deliver(_: usize, _: &Request) -> Fate {
    Fate::Deliver
}

/// The kinds of requests sent, for request-order assertions.
fn kinds(requests: &[Request]) -> Vec<&'static str> {
    requests
        .iter()
        .map(|r| match r {
            Request::ReadRows(_) => "read",
            Request::CheckAndMutateRow(_) => "cas",
            _ => "other",
        })
        .collect()
}

/// `(row, kind)` of the applied writes.
fn wrote(out: &SyncedKey) -> Vec<(PairRow, WriteKind)> {
    out.writes.iter().map(|w| (w.row, w.kind)).collect()
}

use PairRow::{Source, Target};
use WriteKind::{Copy, Delete, Stamp};

const MASTERS_01: (&[u8], &[u8]) = (V0_MASTER, V1_MASTER);

// ---------------------------------------------------------------------------------------------
// Plain syncs: both directions, masters and versions
// ---------------------------------------------------------------------------------------------

#[test]
fn copies_a_new_v0_master_into_v1_and_stamps_it() {
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let (out, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Copied { onto: Target });
    assert_eq!(
        (out.rounds, wrote(&out)),
        (1, vec![(Target, Copy), (Source, Stamp)])
    );
    assert_eq!(kinds(&sent), ["read", "cas", "cas"]);
    // Step 1 reads both rows, LatestN(1).
    let Request::ReadRows(read) = &sent[0] else {
        panic!()
    };
    assert_eq!(
        read.rows.row_keys,
        vec![V0_MASTER.to_vec(), V1_MASTER.to_vec()]
    );
    assert_eq!(read.filter, Some(RowFilter::CellsPerColumnLimit(1)));
    assert_eq!(
        (
            out.pair.source_row.as_slice(),
            out.pair.target_row.as_slice()
        ),
        MASTERS_01
    );
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
    // Run again: in sync, one read, nothing written.
    let (out, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, deliver);
    assert_eq!(
        (out.outcome.clone(), out.rounds, kinds(&sent)),
        (SyncOutcome::InSync, 1, vec!["read"])
    );
}

#[test]
fn copies_a_v0_version_into_v1() {
    let w = World::new();
    w.app_put(V0_VERSION, VA);
    let (out, _) = run_sync(&w, "k\0v1", VFormat::V0, VFormat::V1, Truth::From, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Copied { onto: Target });
    w.assert_rows(
        (V0_VERSION, V1_VERSION),
        (expect(V0_VERSION, VA, true), expect(V1_VERSION, VA, true)),
    );
}

#[test]
fn copies_v1_into_v0_masters_and_versions() {
    let w = World::new();
    w.app_put(V1_MASTER, A);
    w.app_put(V1_VERSION, VB);
    let (out, _) = run_sync(&w, "\x7fMk", VFormat::V1, VFormat::V0, Truth::From, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Copied { onto: Target });
    let (out, _) = run_sync(
        &w,
        "\x7fVk\0v1",
        VFormat::V1,
        VFormat::V0,
        Truth::From,
        deliver,
    );
    assert_eq!(out.outcome.clone(), SyncOutcome::Copied { onto: Target });
    w.assert_rows(
        (V1_MASTER, V0_MASTER),
        (expect(V1_MASTER, A, true), expect(V0_MASTER, A, true)),
    );
    w.assert_rows(
        (V1_VERSION, V0_VERSION),
        (expect(V1_VERSION, VB, true), expect(V0_VERSION, VB, true)),
    );
}

#[test]
fn before_the_switch_the_source_wins() {
    // stamped / stamped, other hash (an interrupted sync): copy s → T.
    let w = World::new();
    w.synced_put(V0_MASTER, A);
    w.synced_put(V1_MASTER, Z);
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Copied { onto: Target });
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
    // absent / unstamped: delete T.
    let w = World::new();
    w.app_put(V1_MASTER, Z);
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Deleted { row: Target });
    assert_eq!(wrote(&out), [(Target, Delete)]);
    w.assert_rows(MASTERS_01, (None, None));
}

#[test]
fn equal_rows_get_their_stamps_only() {
    let w = World::new();
    w.app_put(V0_MASTER, A);
    w.app_put(V1_MASTER, A);
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::To, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Stamped);
    assert_eq!(wrote(&out), [(Source, Stamp), (Target, Stamp)]);
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
}

#[test]
fn a_stamp_of_another_value_counts_as_unstamped_and_is_replaced() {
    let w = World::new();
    w.badly_stamped_put(V0_MASTER, A);
    w.synced_put(V1_MASTER, A);
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Stamped);
    assert_eq!(wrote(&out), [(Source, Stamp)]);
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
    // With another hash on the target, before the switch: the copy replaces the bad stamp.
    let w = World::new();
    w.app_put(V0_MASTER, A);
    w.badly_stamped_put(V1_MASTER, B);
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Copied { onto: Target });
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
}

// ---------------------------------------------------------------------------------------------
// After the switch: reverse mirror, stragglers, conflicts
// ---------------------------------------------------------------------------------------------

#[test]
fn after_the_switch_the_reverse_mirror_copies_t_into_s() {
    // stamped / unstamped: copy t → S (v1 → v0 here: the from layout is v1).
    let w = World::new();
    w.synced_put(V1_VERSION, VA);
    w.app_put(V0_VERSION, VB);
    let (out, _) = run_sync(
        &w,
        "\x7fVk\0v1",
        VFormat::V1,
        VFormat::V0,
        Truth::To,
        deliver,
    );
    assert_eq!(out.outcome.clone(), SyncOutcome::Copied { onto: Source });
    assert_eq!(wrote(&out), [(Source, Copy), (Target, Stamp)]);
    w.assert_rows(
        (V1_VERSION, V0_VERSION),
        (expect(V1_VERSION, VB, true), expect(V0_VERSION, VB, true)),
    );
    // absent / unstamped: a new key in to, copied into S.
    let w = World::new();
    w.app_put(V1_MASTER, B);
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::To, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Copied { onto: Source });
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, B, true), expect(V1_MASTER, B, true)),
    );
    // stamped / absent: a to delete not yet mirrored, S deleted.
    let w = World::new();
    w.synced_put(V0_MASTER, A);
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::To, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Deleted { row: Source });
    assert_eq!(wrote(&out), [(Source, Delete)]);
    w.assert_rows(MASTERS_01, (None, None));
}

#[test]
fn a_stragglers_write_is_adopted_after_the_switch() {
    // unstamped S over a stamped T: an unaware process's write in from, copied into to.
    for (from, to, s_key, key, pair) in [
        (VFormat::V0, VFormat::V1, V0_MASTER, "k", MASTERS_01),
        (
            VFormat::V1,
            VFormat::V0,
            V1_VERSION,
            "\x7fVk\0v1",
            (V1_VERSION, V0_VERSION),
        ),
    ] {
        let w = World::new();
        w.synced_put(pair.1, A);
        w.app_put(s_key, B);
        let (out, _) = run_sync(&w, key, from, to, Truth::To, deliver);
        assert_eq!(
            out.outcome,
            SyncOutcome::StragglerAdopted { deleted: false },
            "{from:?}"
        );
        assert_eq!(wrote(&out), [(Target, Copy), (Source, Stamp)]);
        w.assert_rows(pair, (expect(pair.0, B, true), expect(pair.1, B, true)));
    }
}

#[test]
fn a_stragglers_delete_is_adopted_after_the_switch() {
    let w = World::new();
    w.synced_put(V1_MASTER, A);
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::To, deliver);
    assert_eq!(
        out.outcome.clone(),
        SyncOutcome::StragglerAdopted { deleted: true }
    );
    assert_eq!(wrote(&out), [(Target, Delete)]);
    w.assert_rows(MASTERS_01, (None, None));
}

#[test]
fn a_conflict_leaves_both_rows_untouched() {
    // unstamped / unstamped, other hash; stamped / stamped, other hash; unstamped / absent.
    /// The setup, then each side's document (if present) and whether it is stamped.
    type Case = (
        fn(&World),
        Option<&'static str>,
        Option<&'static str>,
        bool,
        bool,
    );
    let cases: [Case; 3] = [
        (
            |w| {
                w.app_put(V0_MASTER, A);
                w.app_put(V1_MASTER, B);
            },
            Some(A),
            Some(B),
            false,
            false,
        ),
        (
            |w| {
                w.synced_put(V0_MASTER, A);
                w.synced_put(V1_MASTER, B);
            },
            Some(A),
            Some(B),
            true,
            true,
        ),
        (|w| w.app_put(V0_MASTER, A), Some(A), None, false, false),
    ];
    for (setup, s, t, s_stamped, t_stamped) in cases {
        let w = World::new();
        setup(&w);
        let (out, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::To, deliver);
        assert_eq!(
            out.outcome,
            SyncOutcome::Conflict {
                from_hash: value_hash(s.unwrap()),
                to_hash: t.map(value_hash),
            }
        );
        assert_eq!((kinds(&sent), out.writes.len()), (vec!["read"], 0));
        w.assert_rows(
            MASTERS_01,
            (
                s.and_then(|s| expect(V0_MASTER, s, s_stamped)),
                t.and_then(|t| expect(V1_MASTER, t, t_stamped)),
            ),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// §4.3's race table
// ---------------------------------------------------------------------------------------------

/// A writer's whole mirror of `key` (its own `SyncKey`, run to the end at once).
fn mirror(w: &World, key: &str, truth: Truth) -> SyncedKey {
    run_sync(w, key, VFormat::V0, VFormat::V1, truth, deliver).0
}

#[test]
fn race_copiers_older_copy_vs_a_writers_newer_mirror() {
    // The copier read s = A; a writer writes B into S(a) and mirrors B into T(a); the
    // copier's copy of A must not land.
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let (out, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, |n, _| {
        if n == 2 {
            w.app_put(V0_MASTER, B);
            assert_eq!(
                mirror(&w, "k", Truth::From).outcome,
                SyncOutcome::Copied { onto: Target }
            );
        }
        Fate::Deliver
    });
    assert_eq!(kinds(&sent), ["read", "cas", "read"]);
    assert_eq!(
        (out.outcome.clone(), out.rounds, out.writes.len()),
        (SyncOutcome::InSync, 2, 0)
    );
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, B, true), expect(V1_MASTER, B, true)),
    );
}

#[test]
fn race_a_write_between_copy_and_confirm() {
    // The copier copied A, then a writer wrote B into S(a) before the confirmation: step 4
    // fails, the loop copies B.
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let (out, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, |n, _| {
        if n == 3 {
            w.app_put(V0_MASTER, B);
        }
        Fate::Deliver
    });
    assert_eq!(kinds(&sent), ["read", "cas", "cas", "read", "cas", "cas"]);
    assert_eq!(out.outcome.clone(), SyncOutcome::Copied { onto: Target });
    assert_eq!(out.rounds, 2);
    assert_eq!(
        wrote(&out),
        [(Target, Copy), (Target, Copy), (Source, Stamp)]
    );
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, B, true), expect(V1_MASTER, B, true)),
    );
}

/// §12.9's interleaving after the switch, up to sync 1's late confirmation: `S(a)` and `T(a)`
/// synced with `Z`; an application writes `A` into `T(a)`; sync 1 (seed 2) reads the pair and
/// copies `A` into `S(a)`; before its confirmation of `T(a)`, the application writes `B`, a
/// second sync (seed 1) copies `B` and confirms it, `between` runs (the application's further
/// writes), and the application writes `A` again; then sync 1's confirmation lands (`SAME`:
/// `A` unstamped, as it read). Returns sync 1's nonce.
fn late_confirmation_of_t(w: &World, between: impl FnOnce(&World)) -> u64 {
    w.synced_put(V0_MASTER, Z);
    w.synced_put(V1_MASTER, Z);
    w.app_put(V1_MASTER, A);
    let mut st = ObjmetaState::default();
    let seed_2 = Start::within(T0, 2, 60_000_000);
    let mut sync_1 = Driven::new(SyncKey::new(
        &mut st,
        "b",
        "k",
        VFormat::V0,
        VFormat::V1,
        Truth::To,
        seed_2,
    ));
    let paused = sync_1.run(w, |n, _| if n == 3 { Fate::Pause } else { Fate::Deliver });
    assert!(paused.is_none(), "paused before its confirmation");
    let copied_by_1 = sync_mark(&w.row(V0_MASTER).unwrap()).unwrap();
    assert_eq!(copied_by_1.0, b'c', "sync 1 copied A into S(a)");

    w.app_put(V1_MASTER, B);
    let (out, _) = run_sync(w, "k", VFormat::V0, VFormat::V1, Truth::To, deliver);
    assert_eq!(out.outcome, SyncOutcome::Copied { onto: Source });
    between(w);
    w.app_put(V1_MASTER, A);

    let out = sync_1.run(w, |_, _| Fate::Deliver).unwrap().unwrap();
    assert_eq!(out.outcome, SyncOutcome::Copied { onto: Source });
    assert_eq!(wrote(&out), [(Source, Copy), (Target, Stamp)]);
    let confirmed_by_1 = sync_mark(&w.row(V1_MASTER).unwrap()).unwrap();
    assert_eq!(
        confirmed_by_1,
        (b'k', copied_by_1.1),
        "sync 1's late confirmation"
    );
    copied_by_1.1
}

#[test]
fn race_a_late_confirmation_after_the_switch_is_no_conflict() {
    // §12.9: the pair is left with `B` copied by sync 2 on S(a) and `A` — the newest
    // document — on T(a) under sync 1's late confirmation. Both rows stamped with different
    // hashes used to be a conflict; the confirmation beside another sync's copy counts as
    // changed (§12.73), so the next sync mirrors T(a) into S(a).
    let w = World::new();
    let nonce_1 = late_confirmation_of_t(&w, |_| {});
    let (s, t) = (w.row(V0_MASTER).unwrap(), w.row(V1_MASTER).unwrap());
    let (copy_kind, nonce_2) = sync_mark(&s).unwrap();
    assert_eq!(copy_kind, b'c');
    assert_ne!(nonce_2, nonce_1, "two syncs, two nonces");
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, B, true), expect(V1_MASTER, A, true)),
    );
    assert_eq!(sync_mark(&t), Some((b'k', nonce_1)));

    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::To, deliver);
    assert_eq!(out.outcome, SyncOutcome::Copied { onto: Source });
    assert_eq!(wrote(&out), [(Source, Copy), (Target, Stamp)]);
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
    // One sync's work: the copy and the confirmation name the same round.
    let (s, t) = (w.row(V0_MASTER).unwrap(), w.row(V1_MASTER).unwrap());
    let ((ks, ns), (kt, nt)) = (sync_mark(&s).unwrap(), sync_mark(&t).unwrap());
    assert_eq!((ks, kt, ns), (b'c', b'k', nt));
    let (again, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::To, deliver);
    assert_eq!(
        (again.outcome, kinds(&sent)),
        (SyncOutcome::InSync, vec!["read"])
    );
}

#[test]
fn race_a_late_confirmation_beside_a_mirrored_delete_is_no_straggler_delete() {
    // The same race with a delete in between: the application deletes T(a) and its mirror
    // deletes S(a) before `A` is written again. Sync 1's late confirmation then leaves `A`
    // confirmed beside an absent S(a) — which a stamp of T(a) alone would take for a
    // straggler's delete and delete the application's `A`. A confirmation beside an absent
    // S(a) counts as changed (§12.73): `A` is mirrored.
    let w = World::new();
    late_confirmation_of_t(&w, |w| {
        w.app_delete(V1_MASTER);
        let (out, _) = run_sync(w, "k", VFormat::V0, VFormat::V1, Truth::To, deliver);
        assert_eq!(out.outcome, SyncOutcome::Deleted { row: Source });
    });
    w.assert_rows(MASTERS_01, (None, expect(V1_MASTER, A, true)));
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::To, deliver);
    assert_eq!(out.outcome, SyncOutcome::Copied { onto: Source });
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
}

#[test]
fn race_aba_after_the_switch_is_no_stale_delete() {
    // After the switch S(a) = A stamped, T(a) absent (a to delete not yet mirrored): the sync
    // decides to delete S. Before its delete, a straggler writes B then A again into S(a).
    // The bytes are A again (a hash-only condition would match and delete the straggler's
    // write); the stamp is gone, so SAME does not match: re-read, and the straggler's A is a
    // conflict (a straggler's write before a to delete), left in place.
    let w = World::new();
    w.synced_put(V0_MASTER, A);
    let (out, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::To, |n, _| {
        if n == 2 {
            w.app_put(V0_MASTER, B);
            w.app_put(V0_MASTER, A);
        }
        Fate::Deliver
    });
    assert_eq!(kinds(&sent), ["read", "cas", "read"]);
    assert_eq!(
        out.outcome,
        SyncOutcome::Conflict {
            from_hash: value_hash(A),
            to_hash: None
        }
    );
    assert!(out.writes.is_empty());
    w.assert_rows(MASTERS_01, (expect(V0_MASTER, A, false), None));
    assert!(
        w.matches(V0_MASTER, filters::hash_eq(&value_hash(A))),
        "the value alone is the one the sync read"
    );
}

#[test]
fn race_aba_before_the_switch_is_no_stale_confirmation() {
    // S(a) = A stamped, T(a) = Z stamped (an interrupted sync): copy A, then confirm S. Before
    // the confirmation an application writes B then A into S(a): the confirmation (SAME: A
    // stamped) fails; the re-read finds A unstamped beside A stamped and stamps it.
    let w = World::new();
    w.synced_put(V0_MASTER, A);
    w.synced_put(V1_MASTER, Z);
    let (out, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, |n, _| {
        if n == 3 {
            w.app_put(V0_MASTER, B);
            w.app_put(V0_MASTER, A);
        }
        Fate::Deliver
    });
    assert_eq!(kinds(&sent), ["read", "cas", "cas", "read", "cas"]);
    assert_eq!((out.outcome.clone(), out.rounds), (SyncOutcome::Stamped, 2));
    assert_eq!(wrote(&out), [(Target, Copy), (Source, Stamp)]);
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
}

#[test]
fn race_two_syncs_of_one_key() {
    // The copier and a writer's mirror both read S = A unstamped, T absent, and interleave
    // request by request: both conditional, the loser re-reads.
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let (mut st1, mut st2) = (ObjmetaState::default(), ObjmetaState::default());
    let mut copier = sync(&mut st1, "k", VFormat::V0, VFormat::V1, Truth::From);
    let mut writer = sync(&mut st2, "k", VFormat::V0, VFormat::V1, Truth::From);
    // Both read, then the copier copies, then the writer's copy (not applied) and re-read,
    // then the copier's confirmation, …: one request each in turn.
    let mut turn = 0;
    let mut outs: [Option<SyncedKey>; 2] = [None, None];
    while outs.iter().any(Option::is_none) {
        let i = turn % 2;
        turn += 1;
        if outs[i].is_some() {
            continue;
        }
        let d = if i == 0 { &mut copier } else { &mut writer };
        // Execute exactly one request of this machine, then pause it.
        let mut count = 0;
        let before = d.sent.len();
        let result = d.run(&w, |_, _| {
            count += 1;
            if count > 1 {
                Fate::Pause
            } else {
                Fate::Deliver
            }
        });
        assert!(d.sent.len() <= before + 1);
        if let Some(r) = result {
            outs[i] = Some(r.unwrap());
        }
        assert!(turn < 40, "syncs do not converge");
    }
    let [Some(c), Some(m)] = outs else { panic!() };
    // Turns: both read; the copier's copy lands; the writer's (SAME(absent)) does not; the
    // copier confirms; the writer re-reads and finds the pair in sync.
    assert_eq!(kinds(&copier.sent), ["read", "cas", "cas"]);
    assert_eq!(kinds(&writer.sent), ["read", "cas", "read"]);
    assert_eq!(c.outcome, SyncOutcome::Copied { onto: Target });
    assert_eq!(wrote(&c), [(Target, Copy), (Source, Stamp)]);
    assert_eq!(
        (m.outcome, m.rounds, m.writes.len()),
        (SyncOutcome::InSync, 2, 0)
    );
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
}

#[test]
fn race_a_delete_during_the_copy() {
    // A writer deletes S(a) while the copier copies A into an absent T(a): the copy lands,
    // the confirmation fails on the absent source, the loop deletes T(a).
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let (out, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, |n, _| {
        if n == 2 {
            w.app_delete(V0_MASTER);
        }
        Fate::Deliver
    });
    assert_eq!(kinds(&sent), ["read", "cas", "cas", "read", "cas"]);
    assert_eq!(out.outcome.clone(), SyncOutcome::Deleted { row: Target });
    assert_eq!(wrote(&out), [(Target, Copy), (Target, Delete)]);
    w.assert_rows(MASTERS_01, (None, None));
}

#[test]
fn race_a_lost_response_after_an_applied_cas() {
    // The copy applies, its response is lost: re-read, the pair is one step further (equal,
    // S unstamped), the stamp finishes it.
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let (out, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, |n, _| {
        if n == 2 {
            Fate::LoseResponse
        } else {
            Fate::Deliver
        }
    });
    assert_eq!(kinds(&sent), ["read", "cas", "read", "cas"]);
    assert_eq!((out.outcome.clone(), out.rounds), (SyncOutcome::Stamped, 2));
    assert_eq!(
        wrote(&out),
        [(Source, Stamp)],
        "the lost copy is not reported"
    );
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
    // The confirmation's response lost: the re-read finds the pair in sync.
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let (out, sent) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, |n, _| {
        if n == 3 {
            Fate::LoseResponse
        } else {
            Fate::Deliver
        }
    });
    assert_eq!(kinds(&sent), ["read", "cas", "cas", "read"]);
    assert_eq!((out.outcome.clone(), out.rounds), (SyncOutcome::InSync, 2));
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );
}

#[test]
fn race_a_crash_between_steps_3_and_4_then_a_new_sync() {
    // The copy lands, the process dies before the confirmation: "unstamped / stamped, same
    // hash", which a new sync stamps.
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let mut st = ObjmetaState::default();
    let mut d = sync(&mut st, "k", VFormat::V0, VFormat::V1, Truth::From);
    let crashed = d.run(&w, |n, _| if n == 3 { Fate::Crash } else { Fate::Deliver });
    assert!(crashed.is_none());
    drop(d);
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, false), expect(V1_MASTER, A, true)),
    );
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Stamped);
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, A, true), expect(V1_MASTER, A, true)),
    );

    // The same crash, then an application write before the new sync: "unstamped / stamped,
    // other hash", copied toward the source.
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let mut st = ObjmetaState::default();
    let mut d = sync(&mut st, "k", VFormat::V0, VFormat::V1, Truth::From);
    assert!(
        d.run(&w, |n, _| if n == 3 { Fate::Crash } else { Fate::Deliver })
            .is_none()
    );
    drop(d);
    w.app_put(V0_MASTER, B);
    let (out, _) = run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, deliver);
    assert_eq!(out.outcome.clone(), SyncOutcome::Copied { onto: Target });
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, B, true), expect(V1_MASTER, B, true)),
    );
}

// ---------------------------------------------------------------------------------------------
// The pre-read pair, findings, the deadline, check
// ---------------------------------------------------------------------------------------------

#[test]
fn a_pre_read_pair_is_the_first_round() {
    let w = World::new();
    w.synced_put(V0_MASTER, A);
    w.synced_put(V1_MASTER, A);
    fn with_read(st: &mut ObjmetaState, read: PairAsRead) -> Driven<SyncKey<'_>> {
        let m = SyncKey::with_read(
            st,
            "b",
            "k",
            VFormat::V0,
            VFormat::V1,
            Truth::From,
            read,
            start(),
        );
        Driven::new(m)
    }
    // A page read in sync: the sync ends at once, without a request.
    let read = PairAsRead {
        source: w.row(V0_MASTER),
        target: w.row(V1_MASTER),
    };
    let mut st = ObjmetaState::default();
    let mut d = with_read(&mut st, read);
    let out = d.run(&w, deliver).unwrap().unwrap();
    assert_eq!(
        (out.outcome.clone(), out.rounds, d.sent.len()),
        (SyncOutcome::InSync, 1, 0)
    );

    // A page read that went stale: the page read S = A (unstamped), T absent; the
    // application then wrote B. Round 1 acts on the page's read: the copy of A lands (T is
    // still absent), its confirmation does not (S is B); round 2 reads and copies B.
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let read = PairAsRead {
        source: w.row(V0_MASTER),
        target: w.row(V1_MASTER),
    };
    w.app_put(V0_MASTER, B);
    let mut st = ObjmetaState::default();
    let mut d = with_read(&mut st, read);
    let out = d.run(&w, deliver).unwrap().unwrap();
    assert_eq!(kinds(&d.sent), ["cas", "cas", "read", "cas", "cas"]);
    assert_eq!(
        (out.outcome.clone(), out.rounds),
        (SyncOutcome::Copied { onto: Target }, 2)
    );
    assert_eq!(
        wrote(&out),
        [(Target, Copy), (Target, Copy), (Source, Stamp)]
    );
    w.assert_rows(
        MASTERS_01,
        (expect(V0_MASTER, B, true), expect(V1_MASTER, B, true)),
    );
}

#[test]
fn findings_end_the_sync_before_any_request() {
    let cases: [(&str, VFormat, VFormat, &str); 4] = [
        ("\x7fMk", VFormat::V0, VFormat::V1, "key_collision"),
        ("\x7fMa\0b", VFormat::V1, VFormat::V0, "nul_in_object_key"),
        ("\x7fM\x7fVk", VFormat::V1, VFormat::V0, "key_collision"),
        ("k", VFormat::V1, VFormat::V0, "not_in_from_layout"),
    ];
    for (key, from, to, id) in cases {
        let mut st = ObjmetaState::default();
        let mut m = SyncKey::new(&mut st, "b", key, from, to, Truth::From, start());
        assert!(m.poll_request().is_none());
        let err = m.result().unwrap().unwrap_err();
        assert_eq!(err.id(), id, "{key:?}");
        assert!(matches!(err, ObjmetaError::MigrationKey(_)));
    }
    let long = "k".repeat(4093);
    let mut st = ObjmetaState::default();
    let mut m = SyncKey::new(
        &mut st,
        "b",
        &long,
        VFormat::V0,
        VFormat::V1,
        Truth::From,
        start(),
    );
    assert_eq!(
        m.result(),
        Some(Err(ObjmetaError::MigrationKey(KeyFinding::KeyTooLong {
            key: long.clone(),
            row_key_bytes: 4097
        })))
    );
    let mut st = ObjmetaState::default();
    let mut m = SyncKey::new(
        &mut st,
        "b",
        "k",
        VFormat::V0,
        VFormat::V0,
        Truth::From,
        start(),
    );
    assert_eq!(m.result().unwrap().unwrap_err().id(), "InternalError");
}

#[test]
fn a_sync_that_never_settles_ends_aborted_at_its_deadline() {
    // An application rewrites S(a) before every write of the sync, so no round completes;
    // the clock moves 1 s per request and the deadline is 10 s away.
    let w = World::new();
    w.app_put(V0_MASTER, A);
    let mut st = ObjmetaState::default();
    let m = SyncKey::new(
        &mut st,
        "b",
        "k",
        VFormat::V0,
        VFormat::V1,
        Truth::From,
        Start::within(T0, 1, 10_000_000),
    );
    let mut d = Driven::new(m);
    d.step_micros = 1_000_000;
    let mut n = 1;
    let result = d
        .run(&w, |_, r| {
            if matches!(r, Request::CheckAndMutateRow(_)) {
                n += 1;
                w.app_put(V0_MASTER, &format!(r#"{{"key":"k","n":{n}}}"#));
            }
            Fate::Deliver
        })
        .unwrap();
    assert_eq!(result, Err(ObjmetaError::Aborted));
    assert!(d.sent.len() <= 10, "{} requests", d.sent.len());
    assert!(
        d.sent.len() >= 6,
        "it kept trying: {} requests",
        d.sent.len()
    );
}

#[test]
fn check_accepts_the_stamps_a_sync_writes() {
    let w = World::new();
    w.app_put(V0_MASTER, A);
    w.app_put(V0_VERSION, VA);
    run_sync(&w, "k", VFormat::V0, VFormat::V1, Truth::From, deliver);
    run_sync(&w, "k\0v1", VFormat::V0, VFormat::V1, Truth::From, deliver);
    // A stamp of another value is reported.
    w.badly_stamped_put(b"b\x00other", B);
    let check = Check::new(
        CheckTarget::new(TABLE),
        Some("b"),
        CheckOptions::default(),
        Start::within(T0, 1, 60_000_000),
    );
    let mut d = Driven::new(check);
    d.run(&w, deliver).unwrap().unwrap();
    let findings: Vec<Finding> = d
        .events
        .iter()
        .filter_map(|e| match e {
            CheckEvent::Finding(f) => Some(f.clone()),
            _ => None,
        })
        .collect();
    let stale: Vec<String> = findings
        .iter()
        .filter(|f| f.kind == "derived_stale")
        .map(|f| esc(&f.row_key))
        .collect();
    assert_eq!(stale, [esc(b"b\x00other")], "{findings:#?}");
}
