#![allow(clippy::unwrap_used)]
//! Aware writers (`docs/migration.md` §2.3, §3 "Aware writers", §4.3) against a real
//! `MemoryStore` with a manual clock, beside the real migrator (`MigrateBucket`): the driver
//! executes each request as it leaves, moving the clock 10 ms per request, and fires a
//! machine's timer by moving the clock to it when the machine waits on nothing else. Writers
//! are the existing `PutObject`/`DeleteObject` machines on a state whose config says
//! `migration_aware` (the client facade's) or not (Arsenal's, a bare state). What each key
//! must read at the end comes from the test's own list of acknowledged writes.

use std::collections::BTreeMap;

use rowkit_codec::model::{Mutation, Row, Timestamp};
use rowkit_codec::objmeta::cells::families;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::marker::{Gates, MARKER_TTL_US, MigrationState};
use rowkit_statemachines::check::{CheckEvent, CheckOptions, CheckTarget};
use rowkit_statemachines::objmeta::migrate::pass::{MigrateEvent, PassKind};
use rowkit_statemachines::objmeta::migrate::run::{
    MigrateBucket, MigrateEnd, MigrateOptions, MigrateOutcome,
};
use rowkit_statemachines::objmeta::{
    AsyncRepair, Check, CreateBucket, DeleteObject, GetObject, ObjmetaConfig, ObjmetaError,
    ObjmetaEvent, ObjmetaState, PutObject, PutOutcome,
};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::{Machine, MutateRowRequest, Request};
use rowkit_store::{MemoryStore, Store};
use rowkit_testkit::script::{StoreWorld, store_responses};
use rowkit_testkit::sync_stamps::stamped_with_its_hash;

const TABLE: &str = "objmeta";
const T0: Timestamp = Timestamp(1_764_428_400_000_000);
const METASTORE_ROW: &[u8] = b"__metastore\x00b";

// ---------------------------------------------------------------------------------------------
// The world and its driver
// ---------------------------------------------------------------------------------------------

/// The store and the clock (each request executed as it leaves, 10 ms apart).
type World = StoreWorld;

/// The objmeta table at `T0` with bucket `b`, v0, created by an unaware process.
fn new_world() -> World {
    let store = MemoryStore::new();
    Store::create_table(&store, TABLE, &families()).unwrap();
    let mut w = StoreWorld::new(store, T0);
    let start = w.start();
    let md = j(r#"{"name":"b","uid":"uid-1"}"#);
    let created = w.run(CreateBucket::new(state(false), "b", &md, start));
    assert_eq!(created, Ok(VFormat::V0));
    w
}

/// A machine run a step at a time beside another (its requests executed as they leave, its
/// timer fired once the clock reaches it).
struct Pending<M: Machine> {
    m: M,
    result: Option<Result<M::Output, M::Error>>,
    events: Vec<M::Event>,
}

impl<M: Machine> Pending<M> {
    fn new(m: M) -> Pending<M> {
        Pending {
            m,
            result: None,
            events: Vec::new(),
        }
    }

    /// Runs the machine as far as the clock allows; `seen` gets each request it sends. When
    /// it waits on its timer alone and nothing else is running (`run`), the clock moves.
    fn pump(&mut self, w: &mut World, seen: &mut dyn FnMut(&Request)) {
        self.pump_until(w, seen, true);
    }

    /// As `pump`, never moving the clock past its timer.
    fn step(&mut self, w: &mut World, seen: &mut dyn FnMut(&Request)) {
        self.pump_until(w, seen, false);
    }

    fn pump_until(&mut self, w: &mut World, seen: &mut dyn FnMut(&Request), wait: bool) {
        loop {
            while let Some(e) = self.m.poll_event() {
                self.events.push(e);
            }
            if self.result.is_some() {
                return;
            }
            if let Some(result) = self.m.result() {
                self.result = Some(result);
                return;
            }
            if let Some((tag, request)) = self.m.poll_request() {
                seen(&request);
                w.execute(&mut self.m, tag, request);
                continue;
            }
            if !wait && self.m.poll_timeout().is_some_and(|at| at > w.now) {
                return;
            }
            w.fire_timer(&mut self.m);
        }
    }
}

fn state(aware: bool) -> ObjmetaState {
    ObjmetaState::new(ObjmetaConfig {
        default_bucket_key_format: VFormat::V0,
        migration_aware: aware,
        ..ObjmetaConfig::default()
    })
}

fn j(text: &str) -> Json {
    Json::parse(text).unwrap()
}

fn put_machine<'a>(
    w: &mut World,
    st: &'a mut ObjmetaState,
    key: &str,
    n: i64,
    versioning: bool,
) -> PutObject<'a> {
    let value = j(&format!(r#"{{"key":"{key}","n":{n}}}"#));
    let params = versioning.then(|| j(r#"{"versioning":true}"#));
    let start = w.start();
    PutObject::new(st, "b", key, value, params, start)
}

fn put(w: &mut World, st: &mut ObjmetaState, key: &str, n: i64, versioning: bool) -> PutOutcome {
    let m = put_machine(w, st, key, n, versioning);
    w.run(m).unwrap()
}

fn delete(w: &mut World, st: &mut ObjmetaState, key: &str) {
    let start = w.start();
    w.run(DeleteObject::new(st, "b", key, None, None, start))
        .unwrap();
}

/// The application beside the migrator: the world, the state the migrator last reported,
/// and its next request (`None`: it is about to wait on its timer).
type Beside<'a> = dyn FnMut(&mut World, Option<MigrationState>, Option<&Request>) + 'a;

/// The migrator's run: `hook` runs before each of its requests, and before each wait on its
/// timer (`None`), with the state it last reported (the application beside it).
fn migrate(w: &mut World, gates: Gates, hook: &mut Beside) -> MigrateOutcome {
    let start = w.start();
    let options = MigrateOptions {
        gates,
        page_rows: 4,
        owner: "host:1".into(),
        ..MigrateOptions::default()
    };
    let mut m = MigrateBucket::new(state(false), "b", VFormat::V1, options, start);
    let mut known = None;
    loop {
        while let Some(e) = m.poll_event() {
            if let ObjmetaEvent::Migrate(MigrateEvent::StateChanged { to, .. }) = &e {
                known = *to;
            }
        }
        if let Some(result) = m.result() {
            return result.unwrap();
        }
        if let Some((tag, request)) = m.poll_request() {
            hook(w, known, Some(&request));
            w.execute(&mut m, tag, request);
        } else {
            hook(w, known, None);
            w.fire_timer(&mut m);
        }
    }
}

/// A marker or checkpoint write of the migrator: between two of its pages.
fn between_pages(request: Option<&Request>) -> bool {
    matches!(request, Some(Request::CheckAndMutateRow(r)) if r.row_key == METASTORE_ROW)
}

// ---------------------------------------------------------------------------------------------
// What the store holds
// ---------------------------------------------------------------------------------------------

fn cell<'a>(row: &'a Row, qualifier: &[u8]) -> Option<&'a [u8]> {
    row.cells
        .iter()
        .find(|c| c.qualifier == qualifier)
        .map(|c| c.value.as_slice())
}

/// Whether each pair `pair_keys` names (`key`, or `key\0version`) is in sync and stamped
/// (§4.2–§4.3): both rows absent, or both present with the same `f:hash` and each with a
/// `f:rowkitSync` of it. v0 rows are `b\0key…`, v1 rows `b\0\x7fMkey` and
/// `b\0\x7fVkey\0…` (`objmeta.md` §4.1).
fn in_sync(w: &World, pair_keys: &[String]) -> bool {
    let rows = w.snapshot(TABLE);
    let stamped = stamped_with_its_hash;
    pair_keys.iter().all(|pk| {
        let v0 = [b"b\x00".as_slice(), pk.as_bytes()].concat();
        let prefix: &[u8] = if pk.contains('\0') {
            b"b\x00\x7fV"
        } else {
            b"b\x00\x7fM"
        };
        let v1 = [prefix, pk.as_bytes()].concat();
        match (rows.get(&v0), rows.get(&v1)) {
            (None, None) => true,
            (Some(s), Some(t)) => stamped(s) && stamped(t) && cell(s, b"hash") == cell(t, b"hash"),
            _ => false,
        }
    })
}

/// What a key must read.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    /// Its master with this `n`.
    N(i64),
    /// `NoSuchKey`.
    Gone,
}

/// What each key must read after the acknowledged writes.
type Expected = BTreeMap<String, Want>;

/// A v0 bucket of 8 plain objects and 3 versioned ones (2 versions each).
fn v0_bucket(w: &mut World) -> Expected {
    let mut st = state(false);
    let mut expected = Expected::new();
    for i in 0..8 {
        let key = format!("plain/{i}");
        put(w, &mut st, &key, i, false);
        expected.insert(key, Want::N(i));
    }
    for i in 0..3 {
        let key = format!("ver/{i}");
        for v in 0..2 {
            put(w, &mut st, &key, 100 * i + v, true);
        }
        expected.insert(key, Want::N(100 * i + 1));
    }
    expected
}

/// Write number `i` of the application — an overwrite, a new key, a new version, a delete —
/// and the pairs it wrote (the master's, and the new version's).
fn write(w: &mut World, st: &mut ObjmetaState, i: i64, expected: &mut Expected) -> Vec<String> {
    let (key, want, version) = match i % 4 {
        0 => {
            let key = format!("plain/{}", i % 8);
            put(w, st, &key, 1000 + i, false);
            (key, Want::N(1000 + i), None)
        }
        1 => {
            let key = format!("new/{i:02}");
            put(w, st, &key, i, false);
            (key, Want::N(i), None)
        }
        2 => {
            let key = format!("ver/{}", i % 3);
            let vid = put(w, st, &key, 2000 + i, true).version_id;
            (key, Want::N(2000 + i), vid)
        }
        _ => {
            let key = format!("plain/{}", (i + 3) % 8);
            delete(w, st, &key);
            (key, Want::Gone, None)
        }
    };
    expected.insert(key.clone(), want);
    let version = version.map(|vid| format!("{key}\0{vid}"));
    [Some(key), version].into_iter().flatten().collect()
}

/// Each key reads what the test wrote last, through a fresh aware reader.
fn check_reads(w: &mut World, expected: &Expected) {
    for (key, want) in expected {
        let start = w.start();
        let got = w.run(GetObject::new(state(true), "b", key, None, start));
        match want {
            Want::N(n) => {
                let doc = got.unwrap_or_else(|e| panic!("{key}: {e}"));
                assert_eq!(
                    doc.get("n").map(Json::stringify),
                    Some(n.to_string()),
                    "{key}"
                );
            }
            Want::Gone => assert_eq!(got, Err(ObjmetaError::NoSuchKey), "{key}"),
        }
    }
}

/// The objmeta check of bucket `b`: its findings' kinds.
fn check_findings(w: &mut World) -> Vec<String> {
    let start = w.start();
    let check = Check::new(
        CheckTarget::new(TABLE),
        Some("b"),
        CheckOptions::default(),
        start,
    );
    let mut m = check;
    let mut findings = Vec::new();
    loop {
        while let Some(e) = m.poll_event() {
            if let CheckEvent::Finding(f) = e {
                findings.push(f.kind.to_string());
            }
        }
        if let Some(result) = m.result() {
            result.unwrap();
            return findings;
        }
        w.step(&mut m);
    }
}

fn diffs_of(out: &MigrateOutcome, kind: PassKind) -> Vec<u64> {
    out.passes
        .iter()
        .filter(|p| p.kind == kind)
        .map(|p| p.diffs)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Aware writers beside the whole migration
// ---------------------------------------------------------------------------------------------

/// Aware writers put, overwrite, version and delete between the migrator's pages in every
/// state but the fences, and nobody stops them at the gates (`--switch --finish` in one run).
/// Each write leaves its key's pairs in sync and stamped before it is acknowledged (its
/// mirror, counted per state), so no pass after the copy finds a difference, and after the
/// clean-up every acknowledged write reads back and the check is clean.
#[test]
fn aware_writers_need_no_gate_their_mirrors_leave_the_passes_nothing_to_do() {
    let mut w = new_world();
    let mut expected = v0_bucket(&mut w);
    let mut st = state(true);
    let mut i = 0;
    let mut mirrored: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut written: BTreeMap<&'static str, usize> = BTreeMap::new();
    let out = migrate(&mut w, Gates::ALL, &mut |w, known, request| {
        let Some(s) = known.filter(|s| !s.is_fence()) else {
            return;
        };
        if !between_pages(request) {
            return;
        }
        i += 1;
        let key = write(w, &mut st, i, &mut expected);
        *written.entry(s.as_str()).or_default() += 1;
        if s != MigrationState::Cleaning && in_sync(w, &key) {
            *mirrored.entry(s.as_str()).or_default() += 1;
        }
    });
    assert_eq!(out.end, MigrateEnd::Removed);
    for s in ["copying", "verifying", "switched"] {
        assert!(written.get(s).copied().unwrap_or(0) > 0, "no write in {s}");
        assert_eq!(
            mirrored.get(s),
            written.get(s),
            "a write in {s} left its pair unsynced"
        );
    }
    assert!(written.get("cleaning").copied().unwrap_or(0) > 0);
    let kinds: Vec<PassKind> = out.passes.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        [
            PassKind::Copy,
            PassKind::Verify,
            PassKind::Light,
            PassKind::Light,
            PassKind::Clean
        ],
        "one verification: it found nothing"
    );
    assert_eq!(diffs_of(&out, PassKind::Verify), [0]);
    assert_eq!(
        diffs_of(&out, PassKind::Light),
        [0, 0],
        "final pass and sweep"
    );
    assert!(out.stragglers.is_empty() && out.conflicts.is_empty());
    check_reads(&mut w, &expected);
    assert_eq!(check_findings(&mut w), Vec::<String>::new());
    let rows = w.snapshot(TABLE);
    assert!(
        rows.keys()
            .filter(|k| k.starts_with(b"b\x00"))
            .all(|k| k.starts_with(b"b\x00\x7f")),
        "a v0 row left"
    );
}

/// The same writes by an unaware process (a bare state: Arsenal's), while the bucket copies
/// and verifies: nothing mirrors them, so the verification finds their pairs and loops.
#[test]
fn unaware_writers_leave_their_writes_to_the_passes() {
    let mut w = new_world();
    let mut expected = v0_bucket(&mut w);
    let mut st = state(false);
    let mut i = 0;
    let mut mirrored = 0;
    let mut metastore_reads = 0;
    let out = migrate(&mut w, Gates::default(), &mut |w, known, request| {
        if known.is_none() || !between_pages(request) || i >= 12 {
            return;
        }
        i += 1;
        let before = metastore_reads;
        let key = write_counting(w, &mut st, i, &mut expected, &mut metastore_reads);
        let key = [key];
        if i > 1 {
            assert_eq!(
                metastore_reads, before,
                "an unaware lookup is cached for ever"
            );
        }
        mirrored += usize::from(in_sync(w, &key));
    });
    assert_eq!(out.end, MigrateEnd::InState(MigrationState::Verifying));
    assert_eq!(mirrored, 0, "an unaware write is never mirrored");
    let diffs = diffs_of(&out, PassKind::Verify);
    assert!(diffs.len() >= 2 && diffs[0] > 0, "{diffs:?}");
    assert_eq!(diffs.last(), Some(&0));
    let out = migrate(&mut w, Gates::ALL, &mut |_, _, _| {});
    assert_eq!(out.end, MigrateEnd::Removed);
    check_reads(&mut w, &expected);
}

/// `write`, counting the metastore reads its machine sends.
fn write_counting(
    w: &mut World,
    st: &mut ObjmetaState,
    i: i64,
    expected: &mut Expected,
    metastore_reads: &mut usize,
) -> String {
    let key = format!("new/{i:02}");
    let m = put_machine(w, st, &key, i, false);
    let mut p = Pending::new(m);
    p.pump(w, &mut |r| {
        *metastore_reads += usize::from(reads_metastore(r));
    });
    p.result.unwrap().unwrap();
    expected.insert(key.clone(), Want::N(i));
    let _ = expected;
    key
}

/// The migrator's marker write entering `switching` (the `--switch` gate's fence).
fn enters_switching(request: Option<&Request>) -> bool {
    let Some(Request::CheckAndMutateRow(r)) = request else {
        return false;
    };
    r.row_key == METASTORE_ROW
        && r.true_mutations.iter().any(|m| {
            matches!(m, Mutation::SetCell { qualifier, value, .. }
                if qualifier == b"rowkitMigration"
                    && value.windows(11).any(|w| w == b"\"switching\""))
        })
}

fn reads_metastore(request: &Request) -> bool {
    match request {
        Request::ReadRow(r) => r.row_key == METASTORE_ROW,
        Request::ReadRows(r) => r.rows.row_keys.iter().any(|k| k == METASTORE_ROW),
        _ => false,
    }
}

fn is_write(request: &Request) -> bool {
    matches!(
        request,
        Request::MutateRow(_) | Request::CheckAndMutateRow(_) | Request::MutateRows(_)
    )
}

// ---------------------------------------------------------------------------------------------
// The marker's lifetime and the fence
// ---------------------------------------------------------------------------------------------

/// §2.3's boundary: a write that starts before `cached_at + marker_ttl` acts on its cached
/// marker without reading it — here `verifying` while the marker is already `switching`,
/// which `Δ` covers: it mirrors, and the final pass finds it in sync. A write that starts at
/// `cached_at + marker_ttl` reads the marker, finds the fence and pauses, sending no write
/// while the fence lasts; it completes once the bucket is `switched`, on `to`, mirrored
/// into `from`. After `--finish` all three writes read back and the check is clean.
#[test]
fn a_cached_marker_serves_until_its_ttl_then_a_write_in_the_fence_pauses_until_switched() {
    let mut w = new_world();
    let mut expected = v0_bucket(&mut w);
    let out = migrate(&mut w, Gates::default(), &mut |_, _, _| {});
    assert_eq!(out.end, MigrateEnd::InState(MigrationState::Verifying));

    let mut st = state(true);
    let mut cached_at = None;

    let mut paused: Option<Pending<PutObject<'static>>> = None;
    let mut sent_in_fence: Vec<Request> = Vec::new();
    let mut stale_requests: Vec<Request> = Vec::new();
    let switch = Gates {
        switch: true,
        finish: false,
    };
    let out = migrate(&mut w, switch, &mut |w, known, request| {
        if enters_switching(request) {
            // The last write before the fence: it reads (and caches) `verifying`.
            cached_at = Some(w.now);
            assert_eq!(put(w, &mut st, "s/1", 1, false).vformat, VFormat::V0);
            assert!(in_sync(w, &["s/1".into()]), "mirrored in verifying");
            return;
        }
        if let Some(p) = paused.as_mut() {
            p.step(w, &mut |r| {
                if known == Some(MigrationState::Switching) {
                    sent_in_fence.push(r.clone());
                }
            });
            return;
        }
        // The migrator sleeps through `Δ`: the writers go on.
        if known != Some(MigrationState::Switching) || request.is_some() {
            return;
        }
        // Within the TTL: the cached `verifying`, no marker read.
        let cached_at = cached_at.expect("the fence is entered by a marker write");
        assert!(
            w.now.0 < cached_at.0 + MARKER_TTL_US - 1,
            "the fence came late"
        );
        w.now = Timestamp(cached_at.0 + MARKER_TTL_US - 1);
        {
            let m = put_machine(w, &mut st, "s/2", 2, false);
            let mut p = Pending::new(m);
            p.pump(w, &mut |r| stale_requests.push(r.clone()));
            assert_eq!(p.result.take().unwrap().unwrap().vformat, VFormat::V0);
        }
        // At the TTL: read again, the fence: paused.
        w.now = Timestamp(cached_at.0 + MARKER_TTL_US);
        let start = w.start();
        let value = j(r#"{"key":"s/3","n":3}"#);
        let m = PutObject::new(st.clone(), "b", "s/3", value, None, start);
        let mut p = Pending::new(m);
        p.step(w, &mut |r| sent_in_fence.push(r.clone()));
        assert!(p.result.is_none(), "a write in the fence waits");
        paused = Some(p);
    });
    for (key, n) in [("s/1", 1), ("s/2", 2), ("s/3", 3)] {
        expected.insert(key.into(), Want::N(n));
    }
    assert_eq!(out.end, MigrateEnd::InState(MigrationState::Switched));
    assert!(
        !stale_requests.iter().any(reads_metastore),
        "{stale_requests:?}"
    );
    assert!(stale_requests.iter().any(is_write));
    assert_eq!(
        diffs_of(&out, PassKind::Light),
        [0, 0],
        "final pass and sweep"
    );
    assert!(
        !sent_in_fence.is_empty() && sent_in_fence.iter().all(reads_metastore),
        "only marker reads in the fence: {sent_in_fence:?}"
    );

    let mut p = paused.expect("the write was started in the fence");
    p.pump(&mut w, &mut |_| {});
    let outcome = p.result.unwrap().unwrap();
    assert_eq!(outcome.vformat, VFormat::V1, "written on to");
    assert!(in_sync(&w, &["s/3".into()]), "mirrored into from");

    let out = migrate(&mut w, Gates::ALL, &mut |_, _, _| {});
    assert_eq!(out.end, MigrateEnd::Removed);
    check_reads(&mut w, &expected);
    assert_eq!(check_findings(&mut w), Vec::<String>::new());
}

/// A write whose deadline passes while it is paused ends aborted, having written nothing.
#[test]
fn a_write_paused_past_its_deadline_ends_aborted_without_writing() {
    let mut w = new_world();
    v0_bucket(&mut w);
    let out = migrate(&mut w, Gates::default(), &mut |_, _, _| {});
    assert_eq!(out.end, MigrateEnd::InState(MigrationState::Verifying));
    let mut requests = Vec::new();
    let switch = Gates {
        switch: true,
        finish: false,
    };
    let mut done = false;
    migrate(&mut w, switch, &mut |w, known, _| {
        if done || known != Some(MigrationState::Switching) {
            return;
        }
        done = true;
        let start = Start::within(w.now, 99, 2_000_000);
        let value = j(r#"{"key":"late","n":1}"#);
        let m = PutObject::new(state(true), "b", "late", value, None, start);
        let mut p = Pending::new(m);
        p.pump(w, &mut |r| requests.push(r.clone()));
        assert_eq!(p.result.unwrap().unwrap_err(), ObjmetaError::Aborted);
    });
    assert!(done);
    assert!(requests.len() > 1, "it read the marker again while paused");
    assert!(requests.iter().all(reads_metastore), "{requests:?}");
}

// ---------------------------------------------------------------------------------------------
// The marker read
// ---------------------------------------------------------------------------------------------

/// A marker text that does not decode is a typed error for an aware process, before any
/// write; an unaware process never reads it.
#[test]
fn a_damaged_marker_is_a_typed_error_for_an_aware_writer_only() {
    let mut w = new_world();
    let request = Request::MutateRow(MutateRowRequest {
        table: TABLE.into(),
        row_key: METASTORE_ROW.to_vec(),
        mutations: vec![Mutation::SetCell {
            family: "d".into(),
            qualifier: b"rowkitMigration".to_vec(),
            timestamp: Timestamp(0),
            value: b"{\"run\":".to_vec(),
        }],
        ..Default::default()
    });
    for part in store_responses(&w.store, request, w.now) {
        part.unwrap();
    }
    let mut aware = state(true);
    let m = put_machine(&mut w, &mut aware, "k", 1, false);
    let mut p = Pending::new(m);
    let mut requests = Vec::new();
    p.pump(&mut w, &mut |r| requests.push(r.clone()));
    let error = p.result.unwrap().unwrap_err();
    assert!(
        matches!(
            error,
            ObjmetaError::MigrationRecordInvalid {
                column: "marker",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(!requests.iter().any(is_write));
    assert_eq!(
        put(&mut w, &mut state(false), "k", 1, false).vformat,
        VFormat::V0
    );
}

/// An aware process caches a bucket without a marker for `marker_ttl`: one metastore read per
/// TTL, not per operation (§2.3: the only new request of the hot path).
#[test]
fn an_aware_process_reads_a_plain_bucket_once_per_ttl() {
    let mut w = new_world();
    let mut st = state(true);
    let mut reads = Vec::new();
    let first = w.now;
    for (i, at) in [0, 1, MARKER_TTL_US - 1, MARKER_TTL_US, MARKER_TTL_US + 1]
        .into_iter()
        .enumerate()
    {
        w.now = Timestamp(w.now.0.max(first.0 + at));
        let m = put_machine(&mut w, &mut st, &format!("k{i}"), 1, false);
        let mut p = Pending::new(m);
        let mut n = 0;
        p.pump(&mut w, &mut |r| n += usize::from(reads_metastore(r)));
        p.result.unwrap().unwrap();
        reads.push(n);
    }
    assert_eq!(reads, [1, 0, 0, 1, 0]);
}

// ---------------------------------------------------------------------------------------------
// Repairs
// ---------------------------------------------------------------------------------------------

/// An aware delete of a versioned key's current version, in a migrating bucket, schedules a
/// repair that carries the marker it acted on; the repair writes the master and mirrors it,
/// so the master's pair ends in sync. The same delete by an unaware process schedules a
/// repair without a marker.
#[test]
fn a_repair_acts_on_the_marker_its_delete_read_and_mirrors_the_master() {
    let mut w = new_world();
    v0_bucket(&mut w);
    let out = migrate(&mut w, Gates::default(), &mut |_, _, _| {});
    assert_eq!(out.end, MigrateEnd::InState(MigrationState::Verifying));
    let mut st = state(true);
    let vid = put(&mut w, &mut st, "ver/0", 7, true).version_id.unwrap();
    let params = j(&format!(r#"{{"versionId":"{vid}"}}"#));
    let start = w.start();
    let mut p = Pending::new(DeleteObject::new(
        &mut st,
        "b",
        "ver/0",
        Some(&params),
        None,
        start,
    ));
    p.pump(&mut w, &mut |_| {});
    p.result.take().unwrap().unwrap();
    let task = p
        .events
        .iter()
        .find_map(|e| match e {
            ObjmetaEvent::RepairScheduled(t) => Some(t.clone()),
            _ => None,
        })
        .expect("the placeholder master is repaired later");
    let marker = &task
        .migration
        .as_ref()
        .expect("scheduled under the marker")
        .marker;
    assert_eq!(marker.state, MigrationState::Verifying);
    assert!(
        in_sync(&w, &["ver/0".into()]),
        "the placeholder was mirrored"
    );

    let start = AsyncRepair::start_at(&task, w.now, 5);
    let repaired = w.run(AsyncRepair::new(TABLE, task.clone(), start));
    assert_eq!(
        repaired,
        Ok(rowkit_statemachines::objmeta::RepairOutcome::Repaired)
    );
    assert!(
        in_sync(&w, &["ver/0".into()]),
        "the repaired master was mirrored"
    );

    // Unaware: the same delete carries no marker.
    let vid = put(&mut w, &mut state(false), "ver/1", 8, true)
        .version_id
        .unwrap();
    let params = j(&format!(r#"{{"versionId":"{vid}"}}"#));
    let start = w.start();
    let mut unaware = state(false);
    let mut p = Pending::new(DeleteObject::new(
        &mut unaware,
        "b",
        "ver/1",
        Some(&params),
        None,
        start,
    ));
    p.pump(&mut w, &mut |_| {});
    p.result.take().unwrap().unwrap();
    let scheduled: Vec<_> = p
        .events
        .iter()
        .filter_map(|e| match e {
            ObjmetaEvent::RepairScheduled(t) => Some(t.migration.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(scheduled, [None]);
}
