#![allow(clippy::unwrap_used)]
//! `MigrationPass` (`docs/migration.md` §4.4–§4.6, §7) driven against a real `MemoryStore`, one
//! request at a time, by a small driver whose hook can write to the store between requests
//! (the application beside the migrator) or crash the migrator. Expected rows are built here
//! from `REPLACE` (the application's write) and the stamp's definition (§4.2), never by the
//! code under test. Small pages, so that every pass runs several.

use std::collections::BTreeMap;
use std::sync::Arc;

use rowkit_codec::model::compare_canonical;
use rowkit_codec::model::{Cell, KeyBound, Mutation, Row, RowRange, RowSet, Timestamp};
use rowkit_codec::objmeta::cells::{families, replace, value_hash};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::Truth;
use rowkit_codec::objmeta::migration::marker::{
    Gates, MarkerChange, MigrationCheckpoint, MigrationMarker, MigrationState, PassCounters, RunId,
};
use rowkit_codec::objmeta::migration::sync::{KeyFinding, PairRow, light_filter};
use rowkit_statemachines::objmeta::migrate::marker::{MigrationRead, ReadMigration, WriteMarker};
use rowkit_statemachines::objmeta::migrate::pass::{
    DeletionCounts, MigrateEvent, MigrationPass, PassConflict, PassFinding, PassKind, PassProgress,
    PassResult, PassResume,
};
use rowkit_statemachines::objmeta::migrate::sync::SyncOutcome;
use rowkit_statemachines::objmeta::{
    CreateBucket, ObjmetaConfig, ObjmetaEvent, ObjmetaState, SyncKey,
};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::{Machine, MutateRowRequest, ReadRowsRequest, Request, Response};
use rowkit_store::{MemoryStore, Store};
use rowkit_testkit::script::store_responses;
use rowkit_testkit::sync_stamps::without_sync_nonce;

const TABLE: &str = "objmeta";
const T0: Timestamp = Timestamp(1_764_428_400_000_000);
const METASTORE_ROW: &[u8] = b"__metastore\x00b";

// ---------------------------------------------------------------------------------------------
// The world
// ---------------------------------------------------------------------------------------------

fn mutate(store: &MemoryStore, key: &str, mutations: Vec<Mutation>) {
    let request = Request::MutateRow(MutateRowRequest {
        table: TABLE.into(),
        row_key: row(key),
        mutations,
        ..Default::default()
    });
    assert_eq!(
        store_responses(store, request, T0),
        vec![Ok(Response::MutateRow)]
    );
}

/// The row key of Arsenal key `key` in bucket `b`.
fn row(key: &str) -> Vec<u8> {
    let mut k = b"b\x00".to_vec();
    k.extend_from_slice(key.as_bytes());
    k
}

/// An application's write (`REPLACE`): no stamp.
fn app_put(store: &MemoryStore, key: &str, text: &str) {
    mutate(store, key, replace(&Json::parse(text).unwrap(), None));
}

fn app_delete(store: &MemoryStore, key: &str) {
    mutate(store, key, vec![Mutation::DeleteFromRow]);
}

/// The row `REPLACE(text)` leaves at `key`, with the stamp `Set(f, rowkitSync, 0,
/// sha256(text))` when `stamped`.
fn expect(key: &str, text: &str, stamped: bool) -> Row {
    let mut mutations = replace(&Json::parse(text).unwrap(), None);
    if stamped {
        mutations.push(Mutation::set_cell(
            "f",
            b"rowkitSync",
            Timestamp(0),
            value_hash(text),
        ));
    }
    let mut cells: Vec<Cell> = mutations
        .into_iter()
        .filter_map(Cell::from_set_cell)
        .collect();
    cells.sort_by(compare_canonical);
    Row {
        key: row(key),
        cells,
    }
}

/// Every row of bucket `b`'s collection, by Arsenal key, stamps cut to their hash
/// ([`without_sync_nonce`]).
fn collection(store: &MemoryStore) -> BTreeMap<String, Row> {
    let request = Request::ReadRows(ReadRowsRequest {
        table: TABLE.into(),
        rows: RowSet::range(RowRange {
            start: KeyBound::Closed(b"b\x00".to_vec()),
            end: KeyBound::Open(b"b\x01".to_vec()),
        }),
        ..Default::default()
    });
    let mut rows = BTreeMap::new();
    for part in store_responses(store, request, T0) {
        if let Ok(Response::Rows(chunk)) = part {
            for r in chunk {
                let r = without_sync_nonce(Arc::unwrap_or_clone(r));
                let key = String::from_utf8(r.key[2..].to_vec()).unwrap();
                rows.insert(key, r);
            }
        }
    }
    rows
}

/// Both layouts of every `(v0 key, v1 key, text)`, stamped, plus `others` as they are.
fn synced(docs: &[(&str, &str, &str)], others: &[Row]) -> BTreeMap<String, Row> {
    let mut want = BTreeMap::new();
    for &(v0, v1, text) in docs {
        want.insert(v0.to_string(), expect(v0, text, true));
        want.insert(v1.to_string(), expect(v1, text, true));
    }
    for r in others {
        want.insert(String::from_utf8(r.key[2..].to_vec()).unwrap(), r.clone());
    }
    want
}

// ---------------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Debug)]
enum Fate {
    Deliver,
    /// The migrator dies before sending the request.
    Crash,
}

struct Ran<M: Machine> {
    result: Option<Result<M::Output, M::Error>>,
    sent: Vec<Request>,
    events: Vec<M::Event>,
}

/// Runs `m` request by request on `store`, the clock moving 10 ms before each; `hook` sees each
/// request before it is executed and may write to the store or crash the machine.
fn drive<M: Machine>(
    store: &MemoryStore,
    mut m: M,
    mut hook: impl FnMut(&MemoryStore, &Request) -> Fate,
) -> Ran<M> {
    let mut now = T0;
    let mut sent = Vec::new();
    let mut events = Vec::new();
    loop {
        while let Some(e) = m.poll_event() {
            events.push(e);
        }
        if let Some(result) = m.result() {
            return Ran {
                result: Some(result),
                sent,
                events,
            };
        }
        now = Timestamp(now.0 + 10_000);
        let (tag, request) = m.poll_request().expect("the machine waits on nothing");
        if hook(store, &request) == Fate::Crash {
            return Ran {
                result: None,
                sent,
                events,
            };
        }
        sent.push(request.clone());
        for part in store_responses(store, request, now) {
            m.handle_response(tag, part, now);
        }
    }
}

fn quiet(_: &MemoryStore, _: &Request) -> Fate {
    Fate::Deliver
}

fn start() -> Start {
    Start::within(T0, 1, 86_400_000_000)
}

fn state(vf: VFormat) -> ObjmetaState {
    ObjmetaState::new(ObjmetaConfig {
        default_bucket_key_format: vf,
        ..ObjmetaConfig::default()
    })
}

/// A store with bucket `b` of key format `from` and a `copying` marker `from` → `to`.
fn world(from: VFormat, to: VFormat) -> (MemoryStore, MigrationRead) {
    let store = MemoryStore::new();
    Store::create_table(&store, TABLE, &families()).unwrap();
    let md = Json::parse(r#"{"name":"b","uid":"uid-1"}"#).unwrap();
    let ran = drive(
        &store,
        CreateBucket::new(state(from), "b", &md, start()),
        quiet,
    );
    assert_eq!(ran.result, Some(Ok(from)));
    let as_read = drive(&store, ReadMigration::new(state(from), "b", start()), quiet)
        .result
        .unwrap()
        .unwrap();
    let marker = MigrationMarker::new(
        RunId(0xabc),
        from,
        to,
        MigrationState::Copying,
        T0,
        90_000_000,
        "uid-1",
    );
    let change = MarkerChange::Write(marker);
    let m = WriteMarker::new(state(from), "b", &as_read, change, Gates::ALL, start());
    let as_read = drive(&store, m, quiet).result.unwrap().unwrap();
    (store, as_read)
}

fn first_checkpoint() -> MigrationCheckpoint {
    MigrationCheckpoint {
        run: RunId(0xabc),
        state: MigrationState::Copying,
        pass: 1,
        cursor: None,
        owner: "host:1".into(),
        lease_until: Timestamp(0),
        counters: PassCounters::default(),
        pass_rows_previous: None,
        started: T0,
        updated: T0,
    }
}

/// The next pass after `done`, from the start.
fn next_pass(done: &PassResult, state: MigrationState) -> PassResume {
    let previous = done.migration.checkpoint.clone().unwrap();
    PassResume {
        as_read: done.migration.clone(),
        checkpoint: MigrationCheckpoint {
            state,
            pass: previous.pass + 1,
            cursor: None,
            counters: PassCounters::default(),
            pass_rows_previous: Some(done.summary.counters.rows_scanned),
            ..previous
        },
        take_over: false,
    }
}

struct Pass {
    from: VFormat,
    to: VFormat,
    truth: Truth,
    kind: PassKind,
    page: u32,
}

const V0_TO_V1: Pass = Pass {
    from: VFormat::V0,
    to: VFormat::V1,
    truth: Truth::From,
    kind: PassKind::Copy,
    page: 3,
};

/// The light sweep of `switched` (§4.6) after the pass that ended in `first`.
fn run_sweep(store: &MemoryStore, first: &PassResult) -> Ran<MigrationPass<'static>> {
    let sweep = Pass {
        truth: Truth::To,
        kind: PassKind::Light,
        ..V0_TO_V1
    };
    run_pass(
        store,
        &sweep,
        next_pass(first, MigrationState::Switched),
        quiet,
    )
}

fn run_pass(
    store: &MemoryStore,
    pass: &Pass,
    resume: PassResume,
    hook: impl FnMut(&MemoryStore, &Request) -> Fate,
) -> Ran<MigrationPass<'static>> {
    let m = MigrationPass::new(
        state(pass.from),
        "b",
        pass.from,
        pass.to,
        pass.truth,
        pass.kind,
        resume,
        pass.page,
        start(),
    );
    drive(store, m, hook)
}

fn done(ran: &Ran<MigrationPass<'static>>) -> PassResult {
    ran.result
        .clone()
        .expect("the pass ran to its end")
        .unwrap()
}

/// Whether `request` is a checkpoint write (a CAS on the metastore row).
fn is_checkpoint(request: &Request) -> bool {
    matches!(request, Request::CheckAndMutateRow(r) if r.row_key == METASTORE_ROW)
}

/// The checkpoint a checkpoint write sets.
fn checkpoint_of(request: &Request) -> MigrationCheckpoint {
    let Request::CheckAndMutateRow(r) = request else {
        panic!("not a CAS")
    };
    let value = r
        .true_mutations
        .iter()
        .find_map(|m| match m {
            Mutation::SetCell {
                qualifier, value, ..
            } if qualifier == b"rowkitCheckpoint" => Some(value.clone()),
            _ => None,
        })
        .unwrap();
    MigrationCheckpoint::from_json_bytes(&value).unwrap()
}

/// The row keys of the object rows written (CAS or MutateRow outside the metastore).
fn object_writes(sent: &[Request]) -> Vec<Vec<u8>> {
    sent.iter()
        .filter_map(|r| match r {
            Request::CheckAndMutateRow(r) if r.row_key != METASTORE_ROW => Some(r.row_key.clone()),
            Request::MutateRow(r) => Some(r.row_key.clone()),
            _ => None,
        })
        .collect()
}

/// The pair key of an object row key (v1 prefix stripped): what the cursor names.
fn pair_of(row_key: &[u8]) -> Vec<u8> {
    let key = &row_key[2..];
    match key {
        [0x7f, b'M' | b'V', rest @ ..] => rest.to_vec(),
        _ => key.to_vec(),
    }
}

fn progress(events: &[ObjmetaEvent]) -> Vec<PassProgress> {
    events
        .iter()
        .filter_map(|e| match e {
            ObjmetaEvent::Migrate(MigrateEvent::Progress(p)) => Some(p.clone()),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The bucket
// ---------------------------------------------------------------------------------------------

const A: &str = r#"{"key":"a","versionId":"v2","n":1}"#;
const A_V1: &str = r#"{"key":"a","versionId":"v1","n":0}"#;
const A_V2: &str = r#"{"key":"a","versionId":"v2","n":1}"#;
const A_DM: &str = r#"{"key":"a","versionId":"v3","isDeleteMarker":true}"#;
const EMPTY: &str = r#"{"key":"","n":7}"#;
// Raw DEL characters: the stored text (and so `f:hash`) is the JSON text as written.
const BEFORE_M: &str = "{\"key\":\"\x7fLz\",\"n\":2}";
const BETWEEN: &str = "{\"key\":\"\x7fPz\",\"n\":3}";
const AFTER_W: &str = "{\"key\":\"\x7fX\",\"n\":4}";
const ZZ: &str = r#"{"key":"zz","n":5}"#;
const ZZ_V9: &str = r#"{"key":"zz","versionId":"v9","n":5}"#;
const COLLIDES: &str = "{\"key\":\"\x7fRk\",\"n\":6}";

/// The v0 objects (v0 key, v1 key, document): masters, versions, a delete-marker master,
/// the empty key, and keys sorting just around the v1 ranges.
const V0_DOCS: &[(&str, &str, &str)] = &[
    ("", "\x7fM", EMPTY),
    ("a", "\x7fMa", A_DM),
    ("a\0v1", "\x7fVa\0v1", A_V1),
    ("a\0v2", "\x7fVa\0v2", A_V2),
    ("a\0v3", "\x7fVa\0v3", A_DM),
    ("zz", "\x7fMzz", ZZ),
    ("zz\0v9", "\x7fVzz\0v9", ZZ_V9),
    ("\x7fLz", "\x7fM\x7fLz", BEFORE_M),
    ("\x7fPz", "\x7fM\x7fPz", BETWEEN),
    ("\x7fX", "\x7fM\x7fX", AFTER_W),
];

/// A v0 bucket holding [`V0_DOCS`] and the colliding key `\x7fRk`.
fn v0_bucket() -> (MemoryStore, MigrationRead) {
    let (store, as_read) = world(VFormat::V0, VFormat::V1);
    for &(key, _, text) in V0_DOCS {
        app_put(&store, key, text);
    }
    app_put(&store, "\x7fRk", COLLIDES);
    (store, as_read)
}

fn fresh(as_read: &MigrationRead) -> PassResume {
    PassResume {
        as_read: as_read.clone(),
        checkpoint: first_checkpoint(),
        take_over: false,
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn a_copy_pass_copies_every_row_and_checkpoints_each_page() {
    let (store, as_read) = v0_bucket();
    let ran = run_pass(&store, &V0_TO_V1, fresh(&as_read), quiet);
    let out = done(&ran);
    let s = &out.summary;

    // Every object in both layouts, stamped; the colliding key left as it was.
    let want = synced(V0_DOCS, &[expect("\x7fRk", COLLIDES, false)]);
    assert_eq!(collection(&store), want);

    assert_eq!(s.counters.copied, V0_DOCS.len() as u64);
    assert_eq!(s.diffs, V0_DOCS.len() as u64);
    assert_eq!(s.counters.unchanged, 0);
    assert_eq!((s.counters.deleted, s.counters.stamped), (0, 0));
    // 11 v0 rows read, no v1 row existed.
    assert_eq!(s.counters.rows_scanned, 11);
    assert_eq!(
        s.findings,
        vec![PassFinding::Key(KeyFinding::KeyCollision {
            key: "\x7fRk".into()
        })]
    );
    // 11 rows, 3 a page: 4 pages, the last one short.
    assert_eq!(s.pages, 4);

    // One checkpoint CAS a page, each after every write of its page, none after the last.
    let mut cursor: Option<Vec<u8>> = None;
    let mut checkpoints = 0;
    for request in &ran.sent {
        if is_checkpoint(request) {
            checkpoints += 1;
            let cp = checkpoint_of(request);
            assert!(cp.cursor > cursor, "cursors increase");
            cursor = cp.cursor;
        } else if let Some(written) = object_writes(std::slice::from_ref(request)).pop() {
            let key = pair_of(&written);
            assert!(
                cursor.as_ref().is_none_or(|c| key > *c),
                "a write behind the checkpoint's cursor {cursor:?}: {key:?}"
            );
        }
    }
    assert_eq!(checkpoints, 4);
    assert_eq!(s.cursor, cursor);
    assert_eq!(s.cursor.as_deref(), Some(&b"\x7fX"[..]));
    let stored = out.migration.checkpoint.clone().unwrap();
    assert_eq!(stored.cursor, s.cursor);
    assert_eq!(stored.counters, s.counters);
    let read_back = drive(
        &store,
        ReadMigration::new(state(VFormat::V0), "b", start()),
        quiet,
    );
    assert_eq!(read_back.result, Some(Ok(out.migration.clone())));

    // The source read is one request of three ranges (v1 ranges left out), LatestN(1), a
    // page of 3.
    let Request::ReadRows(first) = &ran.sent[0] else {
        panic!("{:?}", ran.sent[0])
    };
    assert_eq!(first.rows.row_ranges.len(), 3);
    assert_eq!(first.rows_limit, 3);

    // Progress events: one a page, with the counts so far; the last equals the summary.
    let events = progress(&ran.events);
    assert_eq!(events.len(), 4);
    assert!(
        events
            .windows(2)
            .all(|w| w[0].counters.rows_scanned < w[1].counters.rows_scanned)
    );
    let last = events.last().unwrap();
    assert_eq!(
        (
            last.counters.rows_scanned,
            last.counters.copied,
            last.counters.unchanged,
            last.pass
        ),
        (11, 10, 0, 1)
    );
    assert_eq!(last.state, MigrationState::Copying);
    assert!(last.rate_rows_per_s.is_some_and(|r| r > 0));
    assert_eq!(last.eta_s, None, "a first pass has no previous row count");
    // The finding is an event too.
    assert!(ran.events.iter().any(|e| matches!(
        e,
        ObjmetaEvent::Migrate(MigrateEvent::Finding(PassFinding::Key(_)))
    )));
}

#[test]
fn a_second_copy_pass_and_a_verification_write_nothing() {
    let (store, as_read) = v0_bucket();
    let first = done(&run_pass(&store, &V0_TO_V1, fresh(&as_read), quiet));
    let after_first = collection(&store);

    let second = run_pass(
        &store,
        &V0_TO_V1,
        next_pass(&first, MigrationState::Copying),
        quiet,
    );
    let second_out = done(&second);
    assert_eq!(object_writes(&second.sent), Vec::<Vec<u8>>::new());
    assert_eq!(second_out.summary.diffs, 0);
    assert_eq!(second_out.summary.counters.unchanged, V0_DOCS.len() as u64);
    assert_eq!(second_out.summary.counters.copied, 0);
    // 11 v0 rows and 10 v1 rows read.
    assert_eq!(second_out.summary.counters.rows_scanned, 21);
    assert_eq!(second_out.summary.pass, 2);

    let verify = Pass {
        kind: PassKind::Verify,
        ..V0_TO_V1
    };
    let ran = run_pass(
        &store,
        &verify,
        next_pass(&second_out, MigrationState::Verifying),
        quiet,
    );
    let out = done(&ran);
    assert_eq!(object_writes(&ran.sent), Vec::<Vec<u8>>::new());
    assert_eq!(out.summary.diffs, 0);
    assert_eq!(
        out.summary.findings.len(),
        1,
        "the collision is still there"
    );
    assert_eq!(collection(&store), after_first);
    // A previous pass's row count gives an ETA.
    let events = progress(&ran.events);
    assert!(events.iter().all(|p| p.eta_s.is_some()));
    assert_eq!(events.last().unwrap().state, MigrationState::Verifying);
    assert_eq!(
        out.migration.checkpoint.unwrap().state,
        MigrationState::Verifying
    );
}

#[test]
fn writes_between_pages_are_synced_and_counted() {
    let (store, as_read) = v0_bucket();
    let first = done(&run_pass(&store, &V0_TO_V1, fresh(&as_read), quiet));

    // Between passes: a new object, an overwrite, a delete, and a row written into the
    // target layout only.
    const NEW: &str = r#"{"key":"b","n":8}"#;
    const A_NEW: &str = r#"{"key":"a","versionId":"v4","n":9}"#;
    app_put(&store, "b", NEW);
    app_put(&store, "a", A_NEW);
    app_delete(&store, "zz\0v9");
    app_put(&store, "\x7fMq", r#"{"key":"q","n":1}"#);

    // During the second pass, after its first page: an overwrite ahead of the cursor (this
    // pass syncs it) and a new key behind it (the next pass does).
    const ZZ_NEW: &str = r#"{"key":"zz","n":10}"#;
    const BEHIND: &str = r#"{"key":"","n":11}"#;
    let mut checkpoints = 0;
    let hook = |store: &MemoryStore, request: &Request| {
        if is_checkpoint(request) {
            checkpoints += 1;
        } else if checkpoints == 1 && matches!(request, Request::ReadRows(_)) {
            checkpoints += 1;
            app_put(store, "zz", ZZ_NEW);
            app_put(store, "", BEHIND);
        }
        Fate::Deliver
    };
    let ran = run_pass(
        &store,
        &V0_TO_V1,
        next_pass(&first, MigrationState::Copying),
        hook,
    );
    let s = done(&ran).summary;
    // Copied: b, a, zz; deleted: the target of zz\0v9, the target-only \x7fMq.
    assert_eq!((s.counters.copied, s.counters.deleted), (3, 2));
    assert_eq!(s.diffs, 5);
    let second = done(&ran);

    // The next pass picks up the write behind the cursor, and nothing else.
    let third = run_pass(
        &store,
        &V0_TO_V1,
        next_pass(&second, MigrationState::Copying),
        quiet,
    );
    let t = done(&third).summary;
    assert_eq!((t.counters.copied, t.diffs), (1, 1));
    // Copy into T, then the stamp of S.
    assert_eq!(object_writes(&third.sent), vec![row("\x7fM"), row("")]);

    let docs: Vec<(&str, &str, &str)> = V0_DOCS
        .iter()
        .copied()
        .filter(|d| !["", "a", "zz", "zz\0v9"].contains(&d.0))
        .chain([
            ("", "\x7fM", BEHIND),
            ("a", "\x7fMa", A_NEW),
            ("b", "\x7fMb", NEW),
            ("zz", "\x7fMzz", ZZ_NEW),
        ])
        .collect();
    assert_eq!(
        collection(&store),
        synced(&docs, &[expect("\x7fRk", COLLIDES, false)])
    );
}

#[test]
fn a_resumed_pass_continues_after_the_cursor_and_a_replayed_page_writes_nothing() {
    let (store, as_read) = v0_bucket();
    // The migrator dies just before its third checkpoint write: page 3 is synced but not
    // checkpointed.
    let mut checkpoints = 0;
    let crashed = run_pass(&store, &V0_TO_V1, fresh(&as_read), |_, request| {
        if is_checkpoint(request) {
            checkpoints += 1;
            if checkpoints == 3 {
                return Fate::Crash;
            }
        }
        Fate::Deliver
    });
    assert!(crashed.result.is_none());
    let written_before: Vec<Vec<u8>> = object_writes(&crashed.sent);

    // A new run resumes from the stored checkpoint (page 2's).
    let as_read = drive(
        &store,
        ReadMigration::new(state(VFormat::V0), "b", start()),
        quiet,
    )
    .result
    .unwrap()
    .unwrap();
    let checkpoint = as_read.checkpoint.clone().unwrap();
    let cursor = checkpoint.cursor.clone().unwrap();
    let resumed = run_pass(
        &store,
        &V0_TO_V1,
        PassResume {
            as_read,
            checkpoint,
            take_over: false,
        },
        quiet,
    );
    let out = done(&resumed);
    // Its first read starts after the cursor.
    let Request::ReadRows(first) = &resumed.sent[0] else {
        panic!()
    };
    assert_eq!(
        first.rows.row_ranges[0].start,
        KeyBound::Open(row(std::str::from_utf8(&cursor).unwrap()))
    );
    // The replayed page 3 writes nothing again: no row written twice.
    let written_after = object_writes(&resumed.sent);
    for key in &written_after {
        assert!(!written_before.contains(key), "written twice: {key:?}");
        assert!(pair_of(key) > cursor);
    }
    // Together, every pair synced once; the counters carry on from the checkpoint.
    assert_eq!(
        written_before.len() + written_after.len(),
        2 * V0_DOCS.len()
    );
    // Page 3's copies were never checkpointed: the replay finds its pairs in sync.
    let c = out.summary.counters;
    assert!(c.unchanged > 0, "page 3's pairs were in sync");
    assert_eq!(c.copied + c.unchanged, V0_DOCS.len() as u64);
    assert_eq!(
        collection(&store),
        synced(V0_DOCS, &[expect("\x7fRk", COLLIDES, false)])
    );
}

#[test]
fn a_v1_bucket_is_copied_into_v0() {
    let (store, as_read) = world(VFormat::V1, VFormat::V0);
    const V1_DOCS: &[(&str, &str, &str)] = &[
        ("\x7fMa", "a", A),
        ("\x7fVa\0v1", "a\0v1", A_V1),
        ("\x7fVa\0v2", "a\0v2", A_V2),
        (
            "\x7fVb\0v1",
            "b\0v1",
            r#"{"key":"b","versionId":"v1","isDeleteMarker":true}"#,
        ),
        ("\x7fMc", "c", r#"{"key":"c","n":1}"#),
        (
            "\x7fVc\0v7",
            "c\0v7",
            r#"{"key":"c","versionId":"v7","n":1}"#,
        ),
        ("\x7fMzz", "zz", ZZ),
    ];
    for &(key, _, text) in V1_DOCS {
        app_put(&store, key, text);
    }
    // A v1 object whose key starts with a prefix collides in v0 (its v0 row would be the v1
    // master row of `k`).
    const COLLIDING: &str = "{\"key\":\"\x7fMk\",\"n\":1}";
    app_put(&store, "\x7fM\x7fMk", COLLIDING);
    let pass = Pass {
        from: VFormat::V1,
        to: VFormat::V0,
        page: 2,
        ..V0_TO_V1
    };
    let ran = run_pass(&store, &pass, fresh(&as_read), quiet);
    let out = done(&ran);
    assert_eq!(
        collection(&store),
        synced(
            &V1_DOCS
                .iter()
                .map(|&(a, b, t)| (b, a, t))
                .collect::<Vec<_>>(),
            &[expect("\x7fM\x7fMk", COLLIDING, false)]
        )
    );
    assert_eq!(out.summary.counters.copied, V1_DOCS.len() as u64);
    assert_eq!(
        out.summary.findings,
        vec![PassFinding::Key(KeyFinding::KeyCollision {
            key: "\x7fM\x7fMk".into()
        })]
    );
    // Two scans a page (masters, versions), each of 2 rows.
    let Request::ReadRows(masters) = &ran.sent[0] else {
        panic!()
    };
    let Request::ReadRows(versions) = &ran.sent[1] else {
        panic!()
    };
    assert_eq!((masters.rows_limit, versions.rows_limit), (2, 2));
    assert_eq!(
        masters.rows.row_ranges[0].start,
        KeyBound::Closed(row("\x7fM"))
    );
    assert_eq!(
        versions.rows.row_ranges[0].start,
        KeyBound::Closed(row("\x7fV"))
    );
    assert!(out.summary.pages >= 3);

    // And again: nothing to write.
    let again = run_pass(
        &store,
        &pass,
        next_pass(&out, MigrationState::Copying),
        quiet,
    );
    assert_eq!(object_writes(&again.sent), Vec::<Vec<u8>>::new());
    assert_eq!(done(&again).summary.diffs, 0);
}

#[test]
fn a_light_sweep_after_the_switch_adopts_a_straggler_and_reports_a_conflict() {
    let (store, as_read) = v0_bucket();
    let first = done(&run_pass(&store, &V0_TO_V1, fresh(&as_read), quiet));

    // After the switch: an unaware process writes `a` in v0 (a straggler); `zz` is written in
    // both layouts (a conflict).
    const A_STRAGGLER: &str = r#"{"key":"a","versionId":"v5","n":12}"#;
    const ZZ_FROM: &str = r#"{"key":"zz","n":13}"#;
    const ZZ_TO: &str = r#"{"key":"zz","n":14}"#;
    app_put(&store, "a", A_STRAGGLER);
    app_put(&store, "zz", ZZ_FROM);
    app_put(&store, "\x7fMzz", ZZ_TO);

    let ran = run_sweep(&store, &first);
    let out = done(&ran);
    let s = &out.summary;
    assert_eq!(s.stragglers, vec!["a".to_string()]);
    assert_eq!(
        s.conflicts,
        vec![PassConflict {
            key: "zz".into(),
            from_hash: value_hash(ZZ_FROM),
            to_hash: Some(value_hash(ZZ_TO)),
        }]
    );
    assert_eq!((s.counters.stragglers, s.counters.conflicts), (1, 1));
    assert_eq!(s.counters.unchanged, V0_DOCS.len() as u64 - 2);
    assert_eq!(s.diffs, 2);

    // The straggler is adopted into v1 and both sides stamped; the conflict left as it is.
    let rows = collection(&store);
    assert_eq!(rows["a"], expect("a", A_STRAGGLER, true));
    assert_eq!(rows["\x7fMa"], expect("\x7fMa", A_STRAGGLER, true));
    assert_eq!(rows["zz"], expect("zz", ZZ_FROM, false));
    assert_eq!(rows["\x7fMzz"], expect("\x7fMzz", ZZ_TO, false));
    // Only the straggler's pair was written.
    assert_eq!(object_writes(&ran.sent), vec![row("\x7fMa"), row("a")]);

    // The page reads were light; only the two pairs not in sync were read whole, by their
    // syncs (point reads of the pair).
    let reads: Vec<&ReadRowsRequest> = ran
        .sent
        .iter()
        .filter_map(|r| match r {
            Request::ReadRows(r) => Some(r),
            _ => None,
        })
        .collect();
    let light: Vec<_> = reads
        .iter()
        .filter(|r| r.filter == Some(light_filter()))
        .collect();
    let whole: Vec<_> = reads
        .iter()
        .filter(|r| r.filter != Some(light_filter()))
        .collect();
    assert_eq!(whole.len(), 2);
    assert!(whole.iter().all(|r| r.rows.row_keys.len() == 2));
    assert_eq!(light.len(), 2 * s.pages as usize);

    // Events: the straggler and the conflict, and the counts in the last progress.
    assert!(
        ran.events
            .contains(&ObjmetaEvent::Migrate(MigrateEvent::Straggler {
                key: "a".into()
            }))
    );
    assert!(ran.events.iter().any(|e| matches!(
        e,
        ObjmetaEvent::Migrate(MigrateEvent::Conflict(c)) if c.key == "zz"
    )));
    let last = progress(&ran.events).pop().unwrap();
    assert_eq!((last.counters.stragglers, last.counters.conflicts), (1, 1));
    assert_eq!(last.state, MigrationState::Switched);
}

#[test]
fn a_sweep_after_a_late_confirmation_mirrors_the_newest_document_without_a_conflict() {
    // §12.9 / §12.73 after the switch, on `zz`: an application writes ZZ_A into T(zz); sync 1
    // reads the pair and copies ZZ_A into S(zz); before its confirmation of T(zz) lands, the
    // application writes ZZ_B, sync 2 copies and confirms it, and the application writes
    // ZZ_A again. Sync 1's confirmation then matches (ZZ_A unstamped, as it read). The sweep
    // must end with ZZ_A — the newest document — in both layouts, and report no conflict.
    const ZZ_A: &str = r#"{"key":"zz","n":21}"#;
    const ZZ_B: &str = r#"{"key":"zz","n":22}"#;
    let (store, as_read) = v0_bucket();
    let first = done(&run_pass(&store, &V0_TO_V1, fresh(&as_read), quiet));
    let sync = |seed| {
        SyncKey::new(
            state(VFormat::V1),
            "b",
            "zz",
            VFormat::V0,
            VFormat::V1,
            Truth::To,
            Start::within(T0, seed, 60_000_000),
        )
    };
    app_put(&store, "\x7fMzz", ZZ_A);
    let mut requests = 0;
    let sync_1 = drive(&store, sync(2), |store, _| {
        requests += 1;
        if requests == 3 {
            // Sync 1 read and copied; its confirmation of T(zz) is next.
            app_put(store, "\x7fMzz", ZZ_B);
            let sync_2 = drive(store, sync(1), quiet).result.unwrap().unwrap();
            assert_eq!(
                sync_2.outcome,
                SyncOutcome::Copied {
                    onto: PairRow::Source
                }
            );
            app_put(store, "\x7fMzz", ZZ_A);
        }
        Fate::Deliver
    });
    let sync_1 = sync_1.result.unwrap().unwrap();
    assert_eq!(
        sync_1.outcome,
        SyncOutcome::Copied {
            onto: PairRow::Source
        }
    );
    let rows = collection(&store);
    assert_eq!(rows["zz"], expect("zz", ZZ_B, true));
    assert_eq!(rows["\x7fMzz"], expect("\x7fMzz", ZZ_A, true));

    let ran = run_sweep(&store, &first);
    let s = done(&ran).summary;
    assert_eq!(s.conflicts, vec![]);
    assert_eq!(s.stragglers, Vec::<String>::new());
    assert_eq!(s.diffs, 1);
    assert!(
        !ran.events
            .iter()
            .any(|e| matches!(e, ObjmetaEvent::Migrate(MigrateEvent::Conflict(_)))),
        "no conflict event"
    );
    let rows = collection(&store);
    assert_eq!(rows["zz"], expect("zz", ZZ_A, true));
    assert_eq!(rows["\x7fMzz"], expect("\x7fMzz", ZZ_A, true));
    // Only that pair was written: S(zz) copied, T(zz) confirmed.
    assert_eq!(object_writes(&ran.sent), vec![row("zz"), row("\x7fMzz")]);
    // A second sweep finds everything in sync.
    let again = run_sweep(&store, &done(&ran));
    assert_eq!(done(&again).summary.diffs, 0);
}

// ---------------------------------------------------------------------------------------------
// The deletion passes (§4.7, §4.9)
// ---------------------------------------------------------------------------------------------

const CLEAN: Pass = Pass {
    from: VFormat::V0,
    to: VFormat::V1,
    truth: Truth::To,
    kind: PassKind::Clean,
    page: 3,
};

const ABORT: Pass = Pass {
    from: VFormat::V0,
    to: VFormat::V1,
    truth: Truth::From,
    kind: PassKind::Abort,
    page: 3,
};

/// A v0 bucket of [`V0_DOCS`] only (the colliding key resolved by the operator), copied into
/// v1 by a full copy pass.
fn copied_v0_bucket() -> (MemoryStore, PassResult) {
    let (store, as_read) = v0_bucket();
    app_delete(&store, "\x7fRk");
    let copy = done(&run_pass(&store, &V0_TO_V1, fresh(&as_read), quiet));
    assert_eq!(collection(&store), synced(V0_DOCS, &[]));
    (store, copy)
}

/// The v1 layout of every `(v0 key, v1 key, text)`, as the application wrote it (no stamp).
fn v1_only(docs: &[(&str, &str, &str)]) -> BTreeMap<String, Row> {
    docs.iter()
        .map(|&(_, v1, text)| (v1.to_string(), expect(v1, text, false)))
        .collect()
}

fn read_migration(store: &MemoryStore) -> MigrationRead {
    drive(
        store,
        ReadMigration::new(state(VFormat::V0), "b", start()),
        quiet,
    )
    .result
    .unwrap()
    .unwrap()
}

/// Whether `request` is a CAS deleting an object row.
fn is_row_delete(request: &Request) -> bool {
    matches!(request, Request::CheckAndMutateRow(r)
        if r.row_key != METASTORE_ROW
            && (r.true_mutations == vec![Mutation::DeleteFromRow]))
}

#[test]
fn a_clean_pass_leaves_the_to_layout_only_without_stamps() {
    let (store, copy) = copied_v0_bucket();
    let ran = run_pass(
        &store,
        &CLEAN,
        next_pass(&copy, MigrationState::Cleaning),
        quiet,
    );
    let out = done(&ran);
    let s = &out.summary;
    assert_eq!(collection(&store), v1_only(V0_DOCS));
    let n = V0_DOCS.len() as u64;
    assert_eq!(
        s.deletion,
        DeletionCounts {
            from_rows_deleted: n,
            to_rows_deleted: 0,
            stamps_stripped: n,
            from_rows_left: false,
        }
    );
    assert!(s.conflicts.is_empty() && s.stragglers.is_empty() && s.findings.is_empty());
    assert_eq!((s.counters.deleted, s.counters.stamped), (n, n));
    assert_eq!(s.counters.rows_scanned, 2 * n);
    // Per pair, the `from` row first, then the `to` row's stamp.
    let writes = object_writes(&ran.sent);
    assert_eq!(writes.len(), 2 * V0_DOCS.len());
    for &(v0, v1, _) in V0_DOCS {
        let at = |key: &str| writes.iter().position(|w| *w == row(key)).unwrap();
        assert!(
            at(v0) < at(v1),
            "{v0:?}: the from row before the to row's stamp"
        );
    }
    // A checkpoint after every page, in state cleaning.
    let cp = out.migration.checkpoint.clone().unwrap();
    assert_eq!((cp.state, cp.pass), (MigrationState::Cleaning, 2));
    assert_eq!(cp.cursor.as_deref(), Some(&b"\x7fX"[..]));

    // A second clean pass reads, writes nothing, finds nothing left.
    let again = run_pass(
        &store,
        &CLEAN,
        next_pass(&out, MigrationState::Cleaning),
        quiet,
    );
    assert!(object_writes(&again.sent).is_empty());
    assert_eq!(done(&again).summary.deletion, DeletionCounts::default());
    assert_eq!(collection(&store), v1_only(V0_DOCS));
}

const ZZ_NEW: &str = r#"{"key":"zz","n":55}"#;
const X_FROM: &str = "{\"key\":\"\x7fX\",\"n\":40}";
const X_TO: &str = "{\"key\":\"\x7fX\",\"n\":41}";

#[test]
fn a_clean_pass_adopts_a_straggler_and_leaves_a_conflict() {
    let (store, copy) = copied_v0_bucket();
    // Both sides of `\x7fX` changed since the copy: a conflict.
    app_put(&store, "\x7fX", X_FROM);
    app_put(&store, "\x7fM\x7fX", X_TO);
    // After page 1, an unaware v0 process writes `zz` (later in key order): a straggler.
    let mut checkpoints = 0;
    let ran = run_pass(
        &store,
        &CLEAN,
        next_pass(&copy, MigrationState::Cleaning),
        |store, request| {
            if is_checkpoint(request) {
                checkpoints += 1;
                if checkpoints == 1 {
                    app_put(store, "zz", ZZ_NEW);
                }
            }
            Fate::Deliver
        },
    );
    let s = done(&ran).summary;
    assert_eq!(s.stragglers, vec!["zz".to_string()]);
    assert_eq!(
        s.conflicts,
        vec![PassConflict {
            key: "\x7fX".into(),
            from_hash: value_hash(X_FROM),
            to_hash: Some(value_hash(X_TO)),
        }]
    );
    assert!(s.deletion.from_rows_left);
    assert_eq!(s.deletion.from_rows_deleted, V0_DOCS.len() as u64 - 1);
    // The straggler's document is in `to`, unstamped; the conflict is left in both layouts.
    let mut want: Vec<(&str, &str, &str)> = V0_DOCS
        .iter()
        .copied()
        .filter(|(v0, _, _)| *v0 != "zz" && *v0 != "\x7fX")
        .collect();
    want.push(("zz", "\x7fMzz", ZZ_NEW));
    want.push(("\x7fX", "\x7fM\x7fX", X_TO));
    let mut want = v1_only(&want);
    want.insert("\x7fX".into(), expect("\x7fX", X_FROM, false));
    assert_eq!(collection(&store), want);
    // Events: the straggler and the conflict.
    assert!(ran.events.iter().any(|e| matches!(
        e, ObjmetaEvent::Migrate(MigrateEvent::Straggler { key }) if key == "zz")));
    assert!(ran.events.iter().any(|e| matches!(
        e, ObjmetaEvent::Migrate(MigrateEvent::Conflict(c)) if c.key == "\x7fX")));
}

#[test]
fn a_clean_pass_survives_a_lost_delete_response_and_resumes_after_its_cursor() {
    let (store, copy) = copied_v0_bucket();
    // The 5th row delete applies, its response is lost, the migrator dies (page 2 is synced
    // in part, page 1 checkpointed).
    let mut deletes = 0;
    let crashed = run_pass(
        &store,
        &CLEAN,
        next_pass(&copy, MigrationState::Cleaning),
        |store, request| {
            if is_row_delete(request) {
                deletes += 1;
                if deletes == 5 {
                    store_responses(store, request.clone(), T0);
                    return Fate::Crash;
                }
            }
            Fate::Deliver
        },
    );
    assert!(crashed.result.is_none());
    let written_before = object_writes(&crashed.sent);

    let as_read = read_migration(&store);
    let checkpoint = as_read.checkpoint.clone().unwrap();
    assert_eq!(checkpoint.state, MigrationState::Cleaning);
    let cursor = checkpoint.cursor.clone().unwrap();
    let resumed = run_pass(
        &store,
        &CLEAN,
        PassResume {
            as_read,
            checkpoint,
            take_over: false,
        },
        quiet,
    );
    let out = done(&resumed);
    let Request::ReadRows(first) = &resumed.sent[0] else {
        panic!()
    };
    assert_eq!(
        first.rows.row_ranges[0].start,
        KeyBound::Open(row(std::str::from_utf8(&cursor).unwrap()))
    );
    // Nothing behind the cursor is written again, nothing is written twice, and the row
    // whose delete's response was lost is not deleted again.
    let written_after = object_writes(&resumed.sent);
    for key in &written_after {
        assert!(pair_of(key) > cursor, "{key:?} behind the cursor");
        assert!(!written_before.contains(key), "written twice: {key:?}");
    }
    assert_eq!(collection(&store), v1_only(V0_DOCS));
    assert!(!out.summary.deletion.from_rows_left);
    // The whole bucket's deletes and strips, across both runs (the lost one applied once).
    assert_eq!(
        written_before.len() + 1 + written_after.len(),
        2 * V0_DOCS.len()
    );
}

const A_V2_MIRRORED: &str = r#"{"key":"a","versionId":"v2","n":9}"#;

#[test]
fn an_abort_pass_restores_the_from_layout_and_a_replay_writes_nothing() {
    let (store, as_read) = v0_bucket();
    let before = collection(&store);
    let copy = done(&run_pass(&store, &V0_TO_V1, fresh(&as_read), quiet));
    assert_ne!(collection(&store), before);
    // While the abort runs, a sync's mirror (begun before the fence) rewrites `to` row
    // `\x7fVa\0v2` with another document just before its delete: the delete is not applied,
    // the pair is read again and the row deleted as the mirror left it.
    let mut mirrored = false;
    let ran = run_pass(
        &store,
        &ABORT,
        next_pass(&copy, MigrationState::Aborting),
        |store, request| {
            if let Request::CheckAndMutateRow(r) = request
                && r.row_key == row("\x7fVa\0v2")
                && !mirrored
            {
                mirrored = true;
                let mut m = replace(&Json::parse(A_V2_MIRRORED).unwrap(), None);
                m.push(Mutation::set_cell(
                    "f",
                    b"rowkitSync",
                    Timestamp(0),
                    value_hash(A_V2_MIRRORED),
                ));
                mutate(store, "\x7fVa\0v2", m);
            }
            Fate::Deliver
        },
    );
    assert!(mirrored);
    let s = done(&ran).summary;
    // Byte-identical to the v0 bucket before the copy: no v1 row, no stamp.
    assert_eq!(collection(&store), before);
    let n = V0_DOCS.len() as u64;
    assert_eq!(
        s.deletion,
        DeletionCounts {
            from_rows_deleted: 0,
            to_rows_deleted: n,
            stamps_stripped: n,
            from_rows_left: false,
        }
    );
    // The colliding key is still a finding (it has no `to` row to delete).
    assert_eq!(s.findings.len(), 1);
    // The mirrored row's first delete was not applied: one more CAS than rows written.
    assert_eq!(object_writes(&ran.sent).len(), 2 * V0_DOCS.len() + 1);

    let again = run_pass(
        &store,
        &ABORT,
        next_pass(&done(&ran), MigrationState::Aborting),
        quiet,
    );
    assert!(object_writes(&again.sent).is_empty());
    assert_eq!(done(&again).summary.deletion, DeletionCounts::default());
    assert_eq!(collection(&store), before);
}

#[test]
fn a_deletion_pass_refuses_the_wrong_truth() {
    let (store, as_read) = v0_bucket();
    for pass in [
        Pass {
            truth: Truth::From,
            ..CLEAN
        },
        Pass {
            truth: Truth::To,
            ..ABORT
        },
    ] {
        let ran = run_pass(&store, &pass, fresh(&as_read), quiet);
        assert!(ran.sent.is_empty());
        assert!(matches!(ran.result, Some(Err(_))));
    }
}
