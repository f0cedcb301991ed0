#![allow(clippy::unwrap_used)]
//! `MigrateBucket` (`docs/migration.md` §3, §4.4–§4.7, §4.9, §7.2) against a real
//! `MemoryStore` with a manual clock: the driver executes each request as it leaves, moving the
//! clock 10 ms per request, and fires the machine's timer by moving the clock to it when the
//! machine waits on nothing else. Objects are written and read through the existing
//! `PutObject`/`DeleteObject`/`GetObject`/`ListObject` machines; what they must read at the end
//! comes from the test's own list of objects and acknowledged writes.

use std::collections::BTreeMap;

use rowkit_codec::model::{Row, Timestamp};
use rowkit_codec::objmeta::cells::families;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::listing::{ListingParams, ListingType};
use rowkit_codec::objmeta::migration::marker::{
    Gates, MIN_SETTLE_US, MarkerChange, MigrationMarker, MigrationState, RunId, vformat_cell,
};
use rowkit_statemachines::check::{CheckEvent, CheckOptions, CheckTarget};
use rowkit_statemachines::objmeta::Check;
use rowkit_statemachines::objmeta::migrate::marker::{ReadMigration, WriteMarker};
use rowkit_statemachines::objmeta::migrate::pass::{MigrateEvent, PassKind};
use rowkit_statemachines::objmeta::migrate::run::{
    MigrateBucket, MigrateEnd, MigrateOptions, MigrateOutcome,
};
use rowkit_statemachines::objmeta::{
    CreateBucket, DeleteObject, GetObject, ListObject, ObjmetaConfig, ObjmetaError, ObjmetaEvent,
    ObjmetaState, PutObject,
};
use rowkit_statemachines::{Machine, Request};
use rowkit_store::{MemoryStore, Store};
use rowkit_testkit::script::{StoreWorld, store_responses};

const TABLE: &str = "objmeta";
const T0: Timestamp = Timestamp(1_764_428_400_000_000);
const METASTORE_ROW: &[u8] = b"__metastore\x00b";
const DAY_US: i64 = 86_400_000_000;

/// The store and the clock: each request executed as it leaves, 10 ms apart; a machine's
/// timer fired by moving the clock to it when it waits on nothing else.
type World = StoreWorld;

/// An empty objmeta table at `T0`.
fn empty_world() -> World {
    let store = MemoryStore::new();
    Store::create_table(&store, TABLE, &families()).unwrap();
    StoreWorld::new(store, T0)
}

fn state(vf: VFormat) -> ObjmetaState {
    ObjmetaState::new(ObjmetaConfig {
        default_bucket_key_format: vf,
        ..ObjmetaConfig::default()
    })
}

fn j(text: &str) -> Json {
    Json::parse(text).unwrap()
}

fn new_world(vf: VFormat) -> World {
    let mut w = empty_world();
    let start = w.start();
    let created = w.run(CreateBucket::new(
        state(vf),
        "b",
        &j(r#"{"name":"b","uid":"uid-1"}"#),
        start,
    ));
    assert_eq!(created, Ok(vf));
    w
}

/// What a migrator run came to: its result (`None`: dropped), its events, its requests.
struct Ran {
    result: Option<Result<MigrateOutcome, ObjmetaError>>,
    events: Vec<ObjmetaEvent>,
    requests: usize,
}

/// Runs a migrator; `crash_after`: dropped after that many responses; `hook` runs before each
/// request with the last state the migrator reported (the application beside it).
fn migrate(
    w: &mut World,
    to: VFormat,
    options: MigrateOptions,
    crash_after: Option<usize>,
    hook: &mut dyn FnMut(&mut World, Option<MigrationState>),
    known: &mut Option<MigrationState>,
) -> Ran {
    let start = w.start();
    let mut m = MigrateBucket::new(state(VFormat::V0), "b", to, options, start);
    let mut events = Vec::new();
    let mut requests = 0;
    loop {
        while let Some(e) = m.poll_event() {
            if let ObjmetaEvent::Migrate(MigrateEvent::StateChanged { to, .. }) = &e {
                *known = *to;
            }
            events.push(e);
        }
        if let Some(result) = m.result() {
            return Ran {
                result: Some(result),
                events,
                requests,
            };
        }
        if let Some((tag, request)) = m.poll_request() {
            hook(w, *known);
            w.execute(&mut m, tag, request);
            requests += 1;
            if crash_after == Some(requests) {
                return Ran {
                    result: None,
                    events,
                    requests,
                };
            }
        } else {
            let at = m.poll_timeout().expect("the migrator waits on nothing");
            assert!(
                at.0 < w.now.0 + DAY_US / 2,
                "the migrator waits for its deadline"
            );
            w.fire_timer(&mut m);
        }
    }
}

fn options(gates: Gates) -> MigrateOptions {
    MigrateOptions {
        gates,
        page_rows: 4,
        owner: "host:1".into(),
        ..MigrateOptions::default()
    }
}

fn no_hook(_: &mut World, _: Option<MigrationState>) {}

fn migrate_quietly(w: &mut World, options: MigrateOptions) -> Ran {
    migrate(w, VFormat::V1, options, None, &mut no_hook, &mut None)
}

fn outcome(ran: &Ran) -> MigrateOutcome {
    ran.result.clone().expect("the run ended").unwrap()
}

// ---------------------------------------------------------------------------------------------
// The bucket
// ---------------------------------------------------------------------------------------------

/// What a key must read.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    /// Its master with this `n`.
    N(i64),
    /// Its delete-marker master.
    DeleteMarker,
    /// `NoSuchKey`.
    Gone,
}

/// What the test wrote under each key.
type Expected = BTreeMap<String, Want>;

fn put(w: &mut World, st: &mut ObjmetaState, key: &str, n: i64, versioning: bool) {
    let value = j(&format!(r#"{{"key":"{key}","n":{n}}}"#));
    let params = versioning.then(|| j(r#"{"versioning":true}"#));
    let start = w.start();
    w.run(PutObject::new(st, "b", key, value, params, start))
        .unwrap();
}

fn put_delete_marker(w: &mut World, st: &mut ObjmetaState, key: &str) {
    let value = j(&format!(r#"{{"key":"{key}","isDeleteMarker":true}}"#));
    let start = w.start();
    let params = Some(j(r#"{"versioning":true}"#));
    w.run(PutObject::new(st, "b", key, value, params, start))
        .unwrap();
}

fn delete(w: &mut World, st: &mut ObjmetaState, key: &str) {
    let start = w.start();
    match w.run(DeleteObject::new(st, "b", key, None, None, start)) {
        Ok(()) | Err(ObjmetaError::NoSuchKey) => {}
        Err(e) => panic!("delete {key}: {e}"),
    }
}

/// A v0 bucket of 29 objects: 12 plain masters, 5 versioned keys of 3 versions each (two
/// ending in a delete marker), nested names. Returns what each key must read.
fn v0_bucket() -> (World, Expected) {
    let mut w = new_world(VFormat::V0);
    let mut st = state(VFormat::V0);
    let mut expected = Expected::new();
    for i in 0..12 {
        let key = format!("plain/{i:02}");
        put(&mut w, &mut st, &key, i, false);
        expected.insert(key, Want::N(i));
    }
    for i in 0..5 {
        let key = format!("ver/{i}");
        for v in 0..3 {
            put(&mut w, &mut st, &key, 100 * i + v, true);
        }
        expected.insert(key, Want::N(100 * i + 2));
    }
    for i in 0..2 {
        let key = format!("ver/{i}");
        put_delete_marker(&mut w, &mut st, &key);
        expected.insert(key, Want::DeleteMarker);
    }
    for key in ["a/b/c", "a/b", "z"] {
        put(&mut w, &mut st, key, 7, false);
        expected.insert(key.into(), Want::N(7));
    }
    (w, expected)
}

/// What an aware reader with a fresh state reads: every key's `GetObject` and the versions
/// listing.
fn read_all(w: &mut World, keys: &Expected) -> (BTreeMap<String, Result<Json, String>>, Json) {
    let mut got = BTreeMap::new();
    for key in keys.keys() {
        let start = w.start();
        let r = w.run(GetObject::new(state(VFormat::V0), "b", key, None, start));
        got.insert(key.clone(), r.map_err(|e| e.to_string()));
    }
    let params = ListingParams {
        listing_type: ListingType::DelimiterVersions,
        ..ListingParams::default()
    };
    let start = w.start();
    let listing = w
        .run(ListObject::new(state(VFormat::V0), "b", params, start))
        .unwrap();
    (got, listing)
}

/// Each key reads its expected master (`n`), or `NoSuchKey`.
fn check_reads(reads: &BTreeMap<String, Result<Json, String>>, expected: &Expected) {
    for (key, want) in expected {
        let got = &reads[key];
        match want {
            Want::N(n) => {
                let doc = got.as_ref().unwrap_or_else(|e| panic!("{key}: {e}"));
                assert_eq!(
                    doc.get("n").map(Json::stringify),
                    Some(n.to_string()),
                    "{key}"
                );
                assert_eq!(doc.get("key").and_then(Json::as_str), Some(key.as_str()));
            }
            Want::DeleteMarker => {
                let doc = got.as_ref().unwrap_or_else(|e| panic!("{key}: {e}"));
                assert_eq!(
                    doc.get("isDeleteMarker").map(Json::stringify).as_deref(),
                    Some("true"),
                    "{key}"
                );
            }
            Want::Gone => assert_eq!(
                got.as_ref().err().map(String::as_str),
                Some("NoSuchKey"),
                "{key}"
            ),
        }
    }
}

/// The v1 row key of a v0 object row key of bucket `b`.
fn v1_row(v0: &[u8]) -> Vec<u8> {
    let key = &v0[2..];
    let mut out = b"b\x00\x7f".to_vec();
    out.push(if key.contains(&0) { b'V' } else { b'M' });
    out.extend_from_slice(key);
    out
}

fn object_rows(rows: &BTreeMap<Vec<u8>, Row>) -> BTreeMap<Vec<u8>, Row> {
    rows.iter()
        .filter(|(k, _)| k.starts_with(b"b\x00"))
        .map(|(k, r)| (k.clone(), r.clone()))
        .collect()
}

fn has_column(row: &Row, qualifier: &[u8]) -> bool {
    row.cells.iter().any(|c| c.qualifier == qualifier)
}

/// The end state of a completed migration: the v0 rows `before` are now exactly the v1 rows
/// (same cells), nothing else in the collection, no stamp, a plain v1 metastore row.
fn check_migrated(after: &BTreeMap<Vec<u8>, Row>, before: &BTreeMap<Vec<u8>, Row>) {
    let want: BTreeMap<Vec<u8>, Vec<_>> = object_rows(before)
        .into_iter()
        .map(|(k, r)| (v1_row(&k), r.cells))
        .collect();
    let got: BTreeMap<Vec<u8>, Vec<_>> = object_rows(after)
        .into_iter()
        .map(|(k, r)| (k, r.cells))
        .collect();
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert_eq!(got, want);
    for row in object_rows(after).values() {
        assert!(!has_column(row, b"rowkitSync"), "a stamp left");
    }
    let ms = &after[METASTORE_ROW];
    assert!(!has_column(ms, b"rowkitMigration"));
    assert!(!has_column(ms, b"rowkitCheckpoint"));
    let vformat = ms.cells.iter().find(|c| c.qualifier == b"vFormat").unwrap();
    assert_eq!(vformat.value, vformat_cell(VFormat::V1));
}

fn state_changes(events: &[ObjmetaEvent]) -> Vec<(Option<MigrationState>, Option<MigrationState>)> {
    events
        .iter()
        .filter_map(|e| match e {
            ObjmetaEvent::Migrate(MigrateEvent::StateChanged { from, to }) => Some((*from, *to)),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// (a) the whole migration
// ---------------------------------------------------------------------------------------------

#[test]
fn a_v0_bucket_migrates_to_v1_with_both_gates() {
    use MigrationState::*;
    let (mut w, expected) = v0_bucket();
    let before = w.snapshot(TABLE);
    assert_eq!(object_rows(&before).len(), 12 + 5 * 4 + 2 + 3);
    let (reads_before, listing_before) = read_all(&mut w, &expected);
    check_reads(&reads_before, &expected);

    let ran = migrate_quietly(&mut w, options(Gates::ALL));
    let out = outcome(&ran);
    assert_eq!(out.end, MigrateEnd::Removed);
    assert!(out.conflicts.is_empty() && out.findings.is_empty() && out.stragglers.is_empty());
    let kinds: Vec<PassKind> = out.passes.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        [
            PassKind::Copy,
            PassKind::Verify,
            PassKind::Light,
            PassKind::Light,
            PassKind::Clean
        ]
    );
    assert_eq!(out.passes[0].counters.copied, 37);
    assert_eq!(out.passes[1].diffs, 0);
    assert_eq!(out.passes[3].diffs, 0, "the sweep found nothing to adopt");
    assert_eq!(out.passes[4].deletion.from_rows_deleted, 37);
    assert_eq!(
        state_changes(&ran.events),
        [
            (None, Some(Copying)),
            (Some(Copying), Some(Verifying)),
            (Some(Verifying), Some(Switching)),
            (Some(Switching), Some(Switched)),
            (Some(Switched), Some(Cleaning)),
            (Some(Cleaning), None),
        ]
    );
    // Two settle waits of Δ (switching, cleaning) passed on the machine's clock.
    assert!(w.now.0 - T0.0 >= 2 * 90_000_000);

    check_migrated(&w.snapshot(TABLE), &before);
    let (reads_after, listing_after) = read_all(&mut w, &expected);
    check_reads(&reads_after, &expected);
    assert_eq!(reads_after, reads_before);
    assert_eq!(listing_after, listing_before);

    // A second run reads only: "already".
    let again = w.snapshot(TABLE);
    let ran = migrate_quietly(&mut w, options(Gates::ALL));
    assert_eq!(outcome(&ran).end, MigrateEnd::Already);
    assert_eq!(ran.requests, 1);
    assert_eq!(w.snapshot(TABLE), again);
}

/// Every marker or checkpoint CAS of the metastore row is answered with a retryable error
/// once: alternately before it reaches the store (`UNAVAILABLE`) and after it applied (its
/// reply lost, `DEADLINE_EXCEEDED`). The migrator re-reads, recognises its own write or sends
/// it again, and ends as a run without faults does (§12.56, §12.62).
#[test]
fn marker_and_checkpoint_writes_answered_with_retryable_errors_are_retried() {
    let (mut w, expected) = v0_bucket();
    let before = w.snapshot(TABLE);
    let (reads_before, listing_before) = read_all(&mut w, &expected);
    let start = w.start();
    let m = MigrateBucket::new(
        state(VFormat::V0),
        "b",
        VFormat::V1,
        options(Gates::ALL),
        start,
    );
    let (result, faulted, retried) = w.run_failing_first_sends(
        m,
        |request| matches!(request, Request::CheckAndMutateRow(c) if c.row_key == METASTORE_ROW),
    );
    let out = result.unwrap();
    assert_eq!(out.end, MigrateEnd::Removed);
    assert!(
        faulted >= 6,
        "every state change and checkpoint was faulted: {faulted}"
    );
    assert_eq!(
        retried,
        faulted.div_ceil(2),
        "each write that did not reach the store was sent again"
    );
    check_migrated(&w.snapshot(TABLE), &before);
    let (reads_after, listing_after) = read_all(&mut w, &expected);
    assert_eq!(reads_after, reads_before);
    assert_eq!(listing_after, listing_before);
}

/// An aware process's state (its listings see the marker).
fn aware_state() -> ObjmetaState {
    ObjmetaState::new(ObjmetaConfig {
        default_bucket_key_format: VFormat::V0,
        migration_aware: true,
        ..ObjmetaConfig::default()
    })
}

/// The listings the test makes: a plain one under `plain/`, one with delimiter `/`, the
/// masters and the versions.
fn listing_kinds() -> Vec<ListingParams> {
    vec![
        ListingParams {
            listing_type: ListingType::Delimiter,
            prefix: Some("plain/".into()),
            ..ListingParams::default()
        },
        ListingParams {
            listing_type: ListingType::Delimiter,
            delimiter: Some("/".into()),
            ..ListingParams::default()
        },
        ListingParams {
            listing_type: ListingType::DelimiterMaster,
            ..ListingParams::default()
        },
        ListingParams {
            listing_type: ListingType::DelimiterVersions,
            ..ListingParams::default()
        },
    ]
}

/// What each of [`listing_kinds`] must list of the objects [`v0_bucket`] wrote: the keys of
/// its entries (a key once per version in the versions listing) and its common prefixes.
fn expected_listings(expected: &Expected) -> Vec<(Vec<String>, Vec<String>)> {
    let keys = |f: &dyn Fn(&str, Want) -> usize| -> Vec<String> {
        expected
            .iter()
            .flat_map(|(k, want)| std::iter::repeat_n(k.clone(), f(k, *want)))
            .collect()
    };
    // `v0_bucket`: plain keys and nested names are written once, `ver/i` three times with
    // versioning, then `ver/0` and `ver/1` a delete marker.
    let versions = |k: &str, want: Want| match (k.starts_with("ver/"), want) {
        (true, Want::DeleteMarker) => 4,
        (true, _) => 3,
        (false, _) => 1,
    };
    vec![
        (keys(&|k, _| usize::from(k.starts_with("plain/"))), vec![]),
        (
            keys(&|k, _| usize::from(!k.contains('/'))),
            vec!["a/".into(), "plain/".into(), "ver/".into()],
        ),
        (
            keys(&|_, want| usize::from(want != Want::DeleteMarker)),
            vec![],
        ),
        (keys(&versions), vec![]),
    ]
}

/// The entries' keys and the common prefixes of a listing result.
fn listed(result: &Json) -> (Vec<String>, Vec<String>) {
    let strings = |v: Option<&Json>, member: Option<&str>| -> Vec<String> {
        let Some(Json::Array(items)) = v else {
            return vec![];
        };
        items
            .iter()
            .filter_map(|i| match member {
                Some(m) => i.get(m).and_then(Json::as_str).map(str::to_string),
                None => i.as_str().map(str::to_string),
            })
            .collect()
    };
    let entries = result.get("Contents").or_else(|| result.get("Versions"));
    (
        strings(entries, Some("key")),
        strings(result.get("CommonPrefixes"), None),
    )
}

/// Lists `b` in every kind with `st`.
fn list_every_kind(w: &mut World, st: &mut ObjmetaState) -> Vec<Json> {
    listing_kinds()
        .into_iter()
        .map(|params| {
            let start = w.start();
            w.run(ListObject::new(&mut *st, "b", params, start))
                .unwrap()
        })
        .collect()
}

/// §12.63: while the bucket migrates, an aware process lists exactly the objects written, in
/// every listing kind and state (the v1 copies beside them are not listed); an unaware one
/// sees the copies (§6.1).
#[test]
fn aware_listings_show_exactly_the_objects_in_every_state() {
    let (mut w, expected) = v0_bucket();
    let want = expected_listings(&expected);
    let before = list_every_kind(&mut w, &mut aware_state());
    let got: Vec<_> = before.iter().map(listed).collect();
    assert_eq!(got, want, "before the migration");

    // `copying`: the migrator dropped once some objects are copied.
    let copied = |w: &World| {
        w.snapshot(TABLE)
            .keys()
            .filter(|k| k.starts_with(b"b\x00\x7fM"))
            .count()
    };
    for crash_after in 1.. {
        (w, _) = v0_bucket();
        let ran = migrate(
            &mut w,
            VFormat::V1,
            options(Gates::default()),
            Some(crash_after),
            &mut no_hook,
            &mut None,
        );
        assert!(
            ran.result.is_none(),
            "still copying after {crash_after} requests"
        );
        if copied(&w) >= 10 {
            break;
        }
    }
    let mut states = vec![];
    for gates in [
        None,
        Some(Gates::default()),
        Some(Gates {
            switch: true,
            finish: false,
        }),
    ] {
        if let Some(gates) = gates {
            outcome(&migrate_quietly(&mut w, options(gates)));
        }
        let start = w.start();
        let read = w
            .run(ReadMigration::new(state(VFormat::V0), "b", start))
            .unwrap();
        let state_now = read.marker.map(|m| m.state);
        states.push(state_now);
        for (i, result) in list_every_kind(&mut w, &mut aware_state())
            .iter()
            .enumerate()
        {
            assert_eq!(listed(result), want[i], "{state_now:?}, listing {i}");
            assert_eq!(result, &before[i], "{state_now:?}, listing {i}");
        }
        // An unaware v0 process sees the v1 copies beside the objects until the switch.
        if state_now != Some(MigrationState::Switched) {
            let unaware = list_every_kind(&mut w, &mut state(VFormat::V0));
            let (keys, _) = listed(&unaware[3]);
            assert!(keys.iter().any(|k| k.starts_with("\x7fM")), "{state_now:?}");
        }
    }
    assert_eq!(
        states,
        [
            Some(MigrationState::Copying),
            Some(MigrationState::Verifying),
            Some(MigrationState::Switched)
        ]
    );
}

/// The objmeta check of bucket `b`: its findings as (kind, row key), sorted.
fn check_findings(w: &mut World) -> Vec<(String, Vec<u8>)> {
    let start = w.start();
    let mut m = Check::new(
        CheckTarget::new(TABLE),
        Some("b"),
        CheckOptions::default(),
        start,
    );
    let mut findings = Vec::new();
    loop {
        while let Some(e) = m.poll_event() {
            if let CheckEvent::Finding(f) = e {
                findings.push((f.kind.to_string(), f.row_key.clone()));
            }
        }
        if let Some(result) = m.result() {
            result.unwrap();
            findings.sort();
            return findings;
        }
        w.step(&mut m);
    }
}

/// §6.3, §12.64: with a marker, `check` reports no `wrong_format_key` for the other layout's
/// rows; a pair an unaware writer changed is `migration_unsynced` before the switch, and after
/// it a straggler's write `migration_straggler`, both sides changed `migration_conflict`.
#[test]
fn check_judges_a_migrating_bucket_by_its_pairs() {
    let (mut w, _) = v0_bucket();
    let finding = |kind: &str, key: &str| (kind.to_string(), format!("b\0{key}").into_bytes());
    // An unaware v0 process that cached the bucket's v0 (a get caches it).
    let mut stale = state(VFormat::V0);
    let start = w.start();
    w.run(GetObject::new(&mut stale, "b", "z", None, start))
        .unwrap();
    // Without a marker the bucket is clean.
    assert_eq!(check_findings(&mut w), []);

    let out = outcome(&migrate_quietly(&mut w, options(Gates::default())));
    assert_eq!(out.end, MigrateEnd::InState(MigrationState::Verifying));
    assert_eq!(check_findings(&mut w), [], "every pair synced and stamped");
    put(&mut w, &mut stale, "plain/00", 1000, false);
    put(&mut w, &mut stale, "new", 1001, false);
    assert_eq!(
        check_findings(&mut w),
        [
            finding("migration_unsynced", "new"),
            finding("migration_unsynced", "plain/00"),
        ]
    );

    let switch = Gates {
        switch: true,
        finish: false,
    };
    let out = outcome(&migrate_quietly(&mut w, options(switch)));
    assert_eq!(out.end, MigrateEnd::InState(MigrationState::Switched));
    assert_eq!(check_findings(&mut w), [], "the final pass synced both");
    // A straggler writes `plain/01` in v0; `plain/02` is written by the straggler and by an
    // unaware process that read the switched vFormat (v1).
    put(&mut w, &mut stale, "plain/01", 2000, false);
    put(&mut w, &mut stale, "plain/02", 2001, false);
    put(&mut w, &mut state(VFormat::V0), "plain/02", 2002, false);
    assert_eq!(
        check_findings(&mut w),
        [
            finding("migration_conflict", "plain/02"),
            finding("migration_straggler", "plain/01"),
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// (b) crash and resume at every request
// ---------------------------------------------------------------------------------------------

#[test]
fn a_migrator_dropped_after_any_request_is_resumed_to_the_same_rows() {
    let (mut w, _) = v0_bucket();
    let before = w.snapshot(TABLE);
    migrate_quietly(&mut w, options(Gates::ALL));
    let reference = w.snapshot(TABLE);
    check_migrated(&reference, &before);

    let mut k = 1;
    loop {
        let (mut w, _) = v0_bucket();
        let first = migrate(
            &mut w,
            VFormat::V1,
            options(Gates::ALL),
            Some(k),
            &mut no_hook,
            &mut None,
        );
        if let Some(result) = first.result {
            // The run ended before its k-th request: every crash point was covered.
            assert_eq!(result.unwrap().end, MigrateEnd::Removed);
            assert!(k > 100, "only {k} requests");
            break;
        }
        let resumed = migrate_quietly(&mut w, options(Gates::ALL));
        let end = outcome(&resumed).end;
        assert!(
            matches!(end, MigrateEnd::Removed | MigrateEnd::Already),
            "crash after {k}: {end:?}"
        );
        assert_eq!(w.snapshot(TABLE), reference, "crash after request {k}");
        k += 1;
    }
}

// ---------------------------------------------------------------------------------------------
// (c) writers during the migration
// ---------------------------------------------------------------------------------------------

#[test]
fn writes_beside_the_migration_are_all_readable_at_the_end() {
    let (mut w, mut expected) = v0_bucket();
    // An unaware writer: it caches the bucket's vFormat (v0) for good.
    let mut unaware = state(VFormat::V0);
    let mut calls: i64 = 0;
    let mut after_switch = 0;
    let mut hook = |w: &mut World, known: Option<MigrationState>| {
        calls += 1;
        let switched = matches!(
            known,
            Some(MigrationState::Switched | MigrationState::Cleaning)
        );
        // Writers stop writing before the switch after a while, so that a verification
        // finds no difference; the switch gate: no unaware writer during the fence.
        if calls % 5 != 0 || (!switched && calls > 300) || known == Some(MigrationState::Switching)
        {
            return;
        }
        let i = calls / 5;
        let key = match i % 4 {
            0 => format!("new/{i}"),
            1 => format!("plain/{:02}", i % 12),
            2 => "a/b".to_string(),
            _ => format!("plain/{:02}", (i + 5) % 12),
        };
        // After the switch, writers restarted with a fresh state read vFormat v1.
        let mut fresh = state(VFormat::V0);
        let st = if switched {
            after_switch += 1;
            &mut fresh
        } else {
            &mut unaware
        };
        if i % 4 == 3 {
            delete(w, st, &key);
            expected.insert(key, Want::Gone);
        } else {
            put(w, st, &key, 1000 + i, false);
            expected.insert(key, Want::N(1000 + i));
        }
    };
    let ran = migrate(
        &mut w,
        VFormat::V1,
        options(Gates::ALL),
        None,
        &mut hook,
        &mut None,
    );
    let out = outcome(&ran);
    assert_eq!(out.end, MigrateEnd::Removed);
    assert!(out.conflicts.is_empty());
    assert!(after_switch > 0, "no write after the switch");
    assert!(
        out.passes
            .iter()
            .filter(|p| p.kind == PassKind::Verify)
            .count()
            >= 2,
        "the writers made a verification find differences"
    );
    let after = w.snapshot(TABLE);
    for (key, row) in object_rows(&after) {
        assert!(key.starts_with(b"b\x00\x7fM") || key.starts_with(b"b\x00\x7fV"));
        assert!(!has_column(&row, b"rowkitSync"));
    }
    let (reads, _) = read_all(&mut w, &expected);
    check_reads(&reads, &expected);
}

// ---------------------------------------------------------------------------------------------
// (d) gates
// ---------------------------------------------------------------------------------------------

#[test]
fn without_gates_the_run_stops_verified_and_the_next_run_continues() {
    let (mut w, expected) = v0_bucket();
    let before = w.snapshot(TABLE);
    let first = outcome(&migrate_quietly(&mut w, options(Gates::default())));
    assert_eq!(first.end, MigrateEnd::InState(MigrationState::Verifying));
    let kinds: Vec<PassKind> = first.passes.iter().map(|p| p.kind).collect();
    assert_eq!(kinds, [PassKind::Copy, PassKind::Verify]);

    let switch = Gates {
        switch: true,
        finish: false,
    };
    // The next runs are other processes (other owners): a run that stopped at a gate released
    // its lease, so they continue at once, without `--take-over`.
    let start = w.start();
    let read = w
        .run(ReadMigration::new(state(VFormat::V0), "b", start))
        .unwrap();
    let released = read.checkpoint.expect("a checkpoint");
    assert!(released.lease_until <= start.now, "{released:?}");
    let ran = migrate_quietly(
        &mut w,
        MigrateOptions {
            owner: "host:2".into(),
            ..options(switch)
        },
    );
    let second = outcome(&ran);
    assert_eq!(second.end, MigrateEnd::InState(MigrationState::Switched));
    assert_eq!(second.run, first.run);
    let kinds: Vec<PassKind> = second.passes.iter().map(|p| p.kind).collect();
    // The final pass, then the sweep of `switched` (§4.6).
    assert_eq!(kinds, [PassKind::Verify, PassKind::Light, PassKind::Light]);
    let start = w.start();
    let read = w
        .run(ReadMigration::new(state(VFormat::V0), "b", start))
        .unwrap();
    assert_eq!(read.vformat, VFormat::V1);

    let third = outcome(&migrate_quietly(
        &mut w,
        MigrateOptions {
            owner: "host:3".into(),
            ..options(Gates::ALL)
        },
    ));
    assert_eq!(third.end, MigrateEnd::Removed);
    check_migrated(&w.snapshot(TABLE), &before);
    let (reads, _) = read_all(&mut w, &expected);
    check_reads(&reads, &expected);
}

// ---------------------------------------------------------------------------------------------
// (e) abort
// ---------------------------------------------------------------------------------------------

#[test]
fn abort_after_copying_restores_the_v0_bucket_byte_for_byte() {
    let (mut w, _) = v0_bucket();
    let before = w.snapshot(TABLE);
    let first = outcome(&migrate_quietly(&mut w, options(Gates::default())));
    assert_eq!(first.end, MigrateEnd::InState(MigrationState::Verifying));
    assert_ne!(w.snapshot(TABLE), before);
    let abort = MigrateOptions {
        abort: true,
        ..options(Gates::default())
    };
    let ran = migrate_quietly(&mut w, abort);
    assert_eq!(outcome(&ran).end, MigrateEnd::Removed);
    assert_eq!(
        state_changes(&ran.events),
        [
            (
                Some(MigrationState::Verifying),
                Some(MigrationState::Aborting)
            ),
            (Some(MigrationState::Aborting), None),
        ]
    );
    assert_eq!(w.snapshot(TABLE), before);
}

#[test]
fn abort_in_the_middle_of_the_copy_pass_restores_the_bucket() {
    let (mut w, _) = v0_bucket();
    let before = w.snapshot(TABLE);
    let crashed = migrate(
        &mut w,
        VFormat::V1,
        options(Gates::default()),
        Some(12),
        &mut no_hook,
        &mut None,
    );
    assert!(crashed.result.is_none());
    let abort = MigrateOptions {
        abort: true,
        ..options(Gates::default())
    };
    assert_eq!(
        outcome(&migrate_quietly(&mut w, abort)).end,
        MigrateEnd::Removed
    );
    assert_eq!(w.snapshot(TABLE), before);
}

// ---------------------------------------------------------------------------------------------
// (f) refusals
// ---------------------------------------------------------------------------------------------

#[test]
fn a_v1_bucket_without_marker_is_already_migrated() {
    let mut w = new_world(VFormat::V1);
    let before = w.snapshot(TABLE);
    let ran = migrate_quietly(&mut w, options(Gates::ALL));
    assert_eq!(outcome(&ran).end, MigrateEnd::Already);
    assert!(outcome(&ran).passes.is_empty());
    assert_eq!(ran.requests, 1);
    assert_eq!(w.snapshot(TABLE), before);
}

#[test]
fn a_marker_of_a_run_to_another_layout_is_refused_before_any_write() {
    let mut w = new_world(VFormat::V1);
    let start = w.start();
    let as_read = w
        .run(ReadMigration::new(state(VFormat::V1), "b", start))
        .unwrap();
    let marker = MigrationMarker::new(
        RunId(0xabc),
        VFormat::V1,
        VFormat::V0,
        MigrationState::Copying,
        T0,
        90_000_000,
        "uid-1",
    );
    let start = w.start();
    w.run(WriteMarker::new(
        state(VFormat::V1),
        "b",
        &as_read,
        MarkerChange::Write(marker),
        Gates::ALL,
        start,
    ))
    .unwrap();
    let before = w.snapshot(TABLE);
    let ran = migrate_quietly(&mut w, options(Gates::ALL));
    let error = ran.result.unwrap().unwrap_err();
    assert!(
        matches!(error, ObjmetaError::MigrationInProgress(_)),
        "{error:?}"
    );
    assert_eq!(ran.requests, 1);
    assert_eq!(w.snapshot(TABLE), before);
}

#[test]
fn a_settle_time_below_the_minimum_is_a_usage_error_before_any_request() {
    let (mut w, _) = v0_bucket();
    let before = w.snapshot(TABLE);
    let short = MigrateOptions {
        settle_us: Some(MIN_SETTLE_US - 1),
        ..options(Gates::ALL)
    };
    let ran = migrate_quietly(&mut w, short);
    let error = ran.result.unwrap().unwrap_err();
    assert!(
        matches!(error, ObjmetaError::MigrationUsage(_)),
        "{error:?}"
    );
    assert_eq!(ran.requests, 0);
    assert_eq!(w.snapshot(TABLE), before);

    let exact = MigrateOptions {
        settle_us: Some(MIN_SETTLE_US),
        ..options(Gates::default())
    };
    let ran = migrate_quietly(&mut w, exact);
    assert_eq!(
        outcome(&ran).end,
        MigrateEnd::InState(MigrationState::Verifying)
    );
}

/// A v0 bucket whose stored value is `md`, with one object.
fn v0_bucket_with_value(md: &str) -> World {
    let mut w = empty_world();
    let start = w.start();
    let created = w.run(CreateBucket::new(state(VFormat::V0), "b", &j(md), start));
    assert_eq!(created, Ok(VFormat::V0));
    put(&mut w, &mut state(VFormat::V0), "k", 1, false);
    w
}

#[test]
fn a_bucket_without_uid_is_named_by_its_creation_date_and_one_with_neither_is_refused() {
    // An older tool's bucket: no uid, a creationDate. The marker names it by the date.
    let mut w = v0_bucket_with_value(r#"{"name":"b","creationDate":"2020-01-02T03:04:05.000Z"}"#);
    let ran = migrate_quietly(&mut w, options(Gates::default()));
    assert_eq!(
        outcome(&ran).end,
        MigrateEnd::InState(MigrationState::Verifying)
    );
    let marker = read_migration(&mut w).marker.expect("a marker");
    assert_eq!(marker.bucket_uid, "created:2020-01-02T03:04:05.000Z");
    let ran = migrate_quietly(&mut w, options(Gates::ALL));
    assert_eq!(outcome(&ran).end, MigrateEnd::Removed);

    // Neither: refused before any write, in one usage line.
    let mut w = v0_bucket_with_value(r#"{"name":"b"}"#);
    let before = w.snapshot(TABLE);
    let error = migrate_quietly(&mut w, options(Gates::ALL))
        .result
        .unwrap()
        .unwrap_err();
    match &error {
        ObjmetaError::MigrationUsage(line) => assert!(line.contains("uid"), "{line}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(w.snapshot(TABLE), before);
}

#[test]
fn abort_without_a_migration_is_a_usage_error() {
    let (mut w, _) = v0_bucket();
    let before = w.snapshot(TABLE);
    let abort = MigrateOptions {
        abort: true,
        ..options(Gates::default())
    };
    let error = migrate_quietly(&mut w, abort).result.unwrap().unwrap_err();
    assert!(
        matches!(error, ObjmetaError::MigrationUsage(_)),
        "{error:?}"
    );
    assert_eq!(w.snapshot(TABLE), before);
}

// ---------------------------------------------------------------------------------------------
// (g) after the switch: sweeps, conflicts, --resolve (§4.6)
// ---------------------------------------------------------------------------------------------

/// The bucket's metastore row as a fresh reader reads it.
fn read_migration(w: &mut World) -> rowkit_statemachines::objmeta::migrate::marker::MigrationRead {
    let start = w.start();
    w.run(ReadMigration::new(state(VFormat::V0), "b", start))
        .unwrap()
}

/// A v0 bucket migrated as far as `switched` (the `--switch` gate only), and an unaware
/// writer that read the bucket's vFormat (v0) before the migration and keeps it.
fn switched_bucket() -> (World, Expected, ObjmetaState) {
    let (mut w, expected) = v0_bucket();
    let mut unaware = state(VFormat::V0);
    let start = w.start();
    w.run(GetObject::new(&mut unaware, "b", "z", None, start))
        .unwrap();
    let switch = Gates {
        switch: true,
        finish: false,
    };
    let out = outcome(&migrate_quietly(&mut w, options(switch)));
    assert_eq!(out.end, MigrateEnd::InState(MigrationState::Switched));
    assert!(!out.blocked());
    assert_eq!(read_migration(&mut w).vformat, VFormat::V1);
    (w, expected, unaware)
}

fn events_of(ran: &Ran) -> Vec<MigrateEvent> {
    ran.events
        .iter()
        .filter_map(|e| match e {
            ObjmetaEvent::Migrate(
                m @ (MigrateEvent::Straggler { .. }
                | MigrateEvent::Conflict(_)
                | MigrateEvent::Resolved { .. }
                | MigrateEvent::Finding(_)),
            ) => Some(m.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_straggler_after_the_switch_is_adopted_by_the_sweep_and_readable() {
    let (mut w, mut expected, mut unaware) = switched_bucket();
    // The unaware writer still writes v0 rows: a put and a delete (stragglers).
    put(&mut w, &mut unaware, "plain/03", 5003, false);
    expected.insert("plain/03".into(), Want::N(5003));
    delete(&mut w, &mut unaware, "z");
    expected.insert("z".into(), Want::Gone);
    // Before the sweep, a reader of v1 does not see them.
    let (reads, _) = read_all(&mut w, &expected);
    assert_ne!(
        reads["plain/03"]
            .as_ref()
            .ok()
            .and_then(|d| d.get("n"))
            .map(Json::stringify),
        Some("5003".into())
    );

    let ran = migrate_quietly(&mut w, options(Gates::default()));
    let out = outcome(&ran);
    assert_eq!(out.end, MigrateEnd::InState(MigrationState::Switched));
    assert_eq!(
        out.passes.iter().map(|p| p.kind).collect::<Vec<_>>(),
        [PassKind::Light]
    );
    assert_eq!(out.stragglers, ["plain/03", "z"]);
    assert!(out.conflicts.is_empty() && !out.blocked());
    assert_eq!(
        events_of(&ran),
        [
            MigrateEvent::Straggler {
                key: "plain/03".into()
            },
            MigrateEvent::Straggler { key: "z".into() },
        ]
    );
    let (reads, _) = read_all(&mut w, &expected);
    check_reads(&reads, &expected);

    // The clean-up then leaves a plain v1 bucket that still reads the same.
    let finish = migrate_quietly(&mut w, options(Gates::ALL));
    assert_eq!(outcome(&finish).end, MigrateEnd::Removed);
    let (reads, _) = read_all(&mut w, &expected);
    check_reads(&reads, &expected);
}

/// A conflict on `plain/04`: a writer of v1 (started after the switch) and the unaware one
/// of v0 both write it. Returns the two documents' `n`.
fn make_conflict(w: &mut World, unaware: &mut ObjmetaState) -> (i64, i64) {
    let mut fresh = state(VFormat::V0);
    put(w, &mut fresh, "plain/04", 6004, false);
    put(w, unaware, "plain/04", 7004, false);
    (6004, 7004)
}

#[test]
fn a_conflict_blocks_and_resolve_keep_to_keeps_the_v1_write() {
    let (mut w, mut expected, mut unaware) = switched_bucket();
    let (to_n, _) = make_conflict(&mut w, &mut unaware);
    for gates in [Gates::default(), Gates::ALL] {
        let ran = migrate_quietly(&mut w, options(gates));
        let out = outcome(&ran);
        // Even with --finish, the run stops in switched: the conflict blocks (CLI exit 1).
        assert_eq!(out.end, MigrateEnd::InState(MigrationState::Switched));
        assert!(out.blocked());
        assert_eq!(out.conflicts.len(), 1);
        assert_eq!(out.conflicts[0].key, "plain/04");
        assert!(matches!(&events_of(&ran)[..], [MigrateEvent::Conflict(c)] if c.key == "plain/04"));
    }
    let keep_to = MigrateOptions {
        resolve: Some(rowkit_codec::objmeta::migration::sync::Keep::To),
        ..options(Gates::ALL)
    };
    let ran = migrate_quietly(&mut w, keep_to);
    let out = outcome(&ran);
    assert_eq!(out.resolved, ["plain/04"]);
    assert!(!out.blocked());
    assert_eq!(out.end, MigrateEnd::Removed);
    expected.insert("plain/04".into(), Want::N(to_n));
    let (reads, _) = read_all(&mut w, &expected);
    check_reads(&reads, &expected);
}

#[test]
fn resolve_keep_from_adopts_the_unaware_write() {
    let (mut w, mut expected, mut unaware) = switched_bucket();
    let (_, from_n) = make_conflict(&mut w, &mut unaware);
    let keep_from = MigrateOptions {
        resolve: Some(rowkit_codec::objmeta::migration::sync::Keep::From),
        ..options(Gates::default())
    };
    let ran = migrate_quietly(&mut w, keep_from);
    let out = outcome(&ran);
    assert_eq!(out.end, MigrateEnd::InState(MigrationState::Switched));
    assert_eq!(out.resolved, ["plain/04"]);
    assert!(out.conflicts.is_empty() && !out.blocked());
    assert_eq!(
        events_of(&ran),
        [MigrateEvent::Resolved {
            key: "plain/04".into(),
            kept: rowkit_codec::objmeta::migration::sync::Keep::From
        }]
    );
    expected.insert("plain/04".into(), Want::N(from_n));
    let (reads, _) = read_all(&mut w, &expected);
    check_reads(&reads, &expected);
    // Both layouts now hold the same document, stamped: the next sweep finds nothing.
    let again = outcome(&migrate_quietly(&mut w, options(Gates::default())));
    assert_eq!(again.passes[0].diffs, 0);
}

// ---------------------------------------------------------------------------------------------
// (h) the check of the `to` layout before the switch (§8)
// ---------------------------------------------------------------------------------------------

/// Adds a cell `f:extra` to `row` — a derived cell `d:value` does not call for, which the
/// check reports as `derived_stale` — leaving its hash and stamp as they are.
fn add_stray_flag(w: &mut World, row: &[u8]) {
    let request = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
        table: TABLE.into(),
        app_profile_id: String::new(),
        row_key: row.to_vec(),
        mutations: vec![rowkit_codec::model::Mutation::SetCell {
            family: "f".into(),
            qualifier: b"extra".to_vec(),
            timestamp: Timestamp(0),
            value: b"1".to_vec(),
        }],
    });
    for part in store_responses(&w.store, request, w.now) {
        part.unwrap();
    }
}

#[test]
fn a_check_finding_on_the_to_layout_blocks_the_switch_and_the_sources_own_does_not() {
    let (mut w, _) = v0_bucket();
    // The source's own finding: copied byte for byte, reported, not blocking.
    add_stray_flag(&mut w, b"b\x00plain/05");
    let first = outcome(&migrate_quietly(&mut w, options(Gates::default())));
    assert_eq!(first.end, MigrateEnd::InState(MigrationState::Verifying));
    let own: Vec<_> = first
        .findings
        .iter()
        .map(|f| (f.id(), f.to_string()))
        .collect();
    assert_eq!(own.len(), 1, "{own:?}");
    assert_eq!(own[0].0, "derived_stale");
    assert!(
        own[0].1.contains("source's own") && own[0].1.contains("plain/05"),
        "{own:?}"
    );

    // A finding of the copy only: the pair stays in sync (same hash, stamped), the check
    // of `to` finds it, the `from` row has none.
    add_stray_flag(&mut w, &v1_row(b"b\x00plain/06"));
    let before = w.snapshot(TABLE);
    let ran = migrate_quietly(&mut w, options(Gates::ALL));
    let error = ran.result.clone().unwrap().unwrap_err();
    let ObjmetaError::MigrationBlocked { state, findings } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*state, MigrationState::Verifying);
    let blocking: Vec<String> = findings
        .iter()
        .filter(|f| !f.to_string().contains("source's own"))
        .map(|f| f.to_string())
        .collect();
    assert_eq!(blocking.len(), 1, "{findings:?}");
    assert!(
        blocking[0].starts_with("derived_stale: b\\x00\\x7fMplain/06"),
        "{blocking:?}"
    );
    assert!(events_of(&ran).len() >= 2);
    // Nothing of the switch written: still verifying, the object rows as they were.
    assert_eq!(
        read_migration(&mut w).marker.unwrap().state,
        MigrationState::Verifying
    );
    assert_eq!(object_rows(&w.snapshot(TABLE)), object_rows(&before));
}

// ---------------------------------------------------------------------------------------------
// (i) --max-pause (§11.2)
// ---------------------------------------------------------------------------------------------

#[test]
fn max_pause_shorter_than_the_estimate_refuses_to_fence() {
    let (mut w, _) = v0_bucket();
    let first = outcome(&migrate_quietly(&mut w, options(Gates::default())));
    assert_eq!(first.end, MigrateEnd::InState(MigrationState::Verifying));
    let before = w.snapshot(TABLE);
    let marker_before = read_migration(&mut w).marker.unwrap();
    let settle = marker_before.settle_us;
    let short = MigrateOptions {
        max_pause_us: Some(settle),
        ..options(Gates::ALL)
    };
    let ran = migrate_quietly(&mut w, short);
    let error = ran.result.unwrap().unwrap_err();
    let ObjmetaError::MigrationPauseTooLong {
        estimate_us,
        settle_us,
        rows,
        rate,
        max_pause_us,
    } = error
    else {
        panic!("{error:?}");
    };
    assert_eq!(settle_us, settle);
    assert_eq!(max_pause_us, settle);
    // The verification read every row of both layouts: 37 object rows each.
    assert_eq!(rows, 2 * 37);
    let rate = rate.expect("the clock moved during the verification");
    assert_eq!(
        estimate_us,
        settle + (rows as i64) * 1_000_000 / rate as i64
    );
    assert!(estimate_us > settle);
    // Nothing of the switch written: the marker and every object row as they were.
    let after = read_migration(&mut w);
    assert_eq!(after.marker.unwrap(), marker_before);
    assert_eq!(after.vformat, VFormat::V0);
    assert_eq!(object_rows(&w.snapshot(TABLE)), object_rows(&before));
    // The lease was released: another process continues at once with a longer bound.
    let long = MigrateOptions {
        max_pause_us: Some(estimate_us + DAY_US),
        owner: "host:2".into(),
        ..options(Gates::ALL)
    };
    let out = outcome(&migrate_quietly(&mut w, long));
    assert_eq!(out.end, MigrateEnd::Removed);
    assert!(out.pause_estimate_us.is_some_and(|e| e >= settle));
}

// ---------------------------------------------------------------------------------------------
// (j) rollback from switched (§4.9's third row)
// ---------------------------------------------------------------------------------------------

/// Puts (`Some(n)`) and deletes (`None`) of non-versioned keys, in order.
fn write_all(w: &mut World, st: &mut ObjmetaState, writes: &[(&str, Option<i64>)]) {
    for &(key, n) in writes {
        match n {
            Some(n) => put(w, st, key, n, false),
            None => delete(w, st, key),
        }
    }
}

#[test]
fn rollback_from_switched_restores_v0_with_the_writes_since_the_switch() {
    // The reference: the same bucket and the same writes, no migration.
    let (mut reference, mut expected) = v0_bucket();
    let mut plain = state(VFormat::V0);
    let writes: [(&str, Option<i64>); 3] = [
        ("plain/02", Some(8002)),
        ("new/1", Some(8100)),
        ("a/b/c", None),
    ];
    write_all(&mut reference, &mut plain, &writes);
    for (key, n) in writes {
        expected.insert(key.into(), n.map_or(Want::Gone, Want::N));
    }

    let (mut w, _, _) = switched_bucket();
    // Writers restarted after the switch write v1.
    let mut fresh = state(VFormat::V0);
    write_all(&mut w, &mut fresh, &writes);
    // Without --switch the rollback is refused, nothing written.
    let before = w.snapshot(TABLE);
    let back = |gates| MigrateOptions {
        owner: "host:9".into(),
        ..options(gates)
    };
    let ran = migrate(
        &mut w,
        VFormat::V0,
        back(Gates::default()),
        None,
        &mut no_hook,
        &mut None,
    );
    let error = ran.result.unwrap().unwrap_err();
    assert!(
        matches!(error, ObjmetaError::MigrationUsage(_)),
        "{error:?}"
    );
    assert_eq!(w.snapshot(TABLE), before);

    let ran = migrate(
        &mut w,
        VFormat::V0,
        back(Gates::ALL),
        None,
        &mut no_hook,
        &mut None,
    );
    let out = outcome(&ran);
    assert_eq!(out.end, MigrateEnd::Removed);
    assert!(out.conflicts.is_empty() && out.stragglers.is_empty());
    use MigrationState::*;
    assert_eq!(
        state_changes(&ran.events),
        [
            (Some(Switched), Some(Switching)),
            (Some(Switching), Some(Switched)),
            (Some(Switched), Some(Cleaning)),
            (Some(Cleaning), None),
        ]
    );
    let after = w.snapshot(TABLE);
    let ms = &after[METASTORE_ROW];
    assert!(!has_column(ms, b"rowkitMigration") && !has_column(ms, b"rowkitCheckpoint"));
    assert_eq!(read_migration(&mut w).vformat, VFormat::V0);
    assert_eq!(object_rows(&after), object_rows(&reference.snapshot(TABLE)));
    let (reads, _) = read_all(&mut w, &expected);
    check_reads(&reads, &expected);
}

#[test]
fn a_rollback_dropped_after_any_request_is_resumed_to_the_same_rows() {
    let writes: [(&str, Option<i64>); 2] = [("plain/07", Some(9007)), ("new/2", Some(9100))];
    let switched_with_writes = || {
        let (mut w, _, _) = switched_bucket();
        write_all(&mut w, &mut state(VFormat::V0), &writes);
        w
    };
    let back = MigrateOptions {
        owner: "host:9".into(),
        ..options(Gates::ALL)
    };
    let mut w = switched_with_writes();
    let ran = migrate(
        &mut w,
        VFormat::V0,
        back.clone(),
        None,
        &mut no_hook,
        &mut None,
    );
    assert_eq!(outcome(&ran).end, MigrateEnd::Removed);
    let reference = object_rows(&w.snapshot(TABLE));

    let mut k = 1;
    loop {
        let mut w = switched_with_writes();
        let first = migrate(
            &mut w,
            VFormat::V0,
            back.clone(),
            Some(k),
            &mut no_hook,
            &mut None,
        );
        if let Some(result) = first.result {
            assert_eq!(result.unwrap().end, MigrateEnd::Removed);
            assert!(k > 50, "only {k} requests");
            break;
        }
        let resumed = migrate(
            &mut w,
            VFormat::V0,
            back.clone(),
            None,
            &mut no_hook,
            &mut None,
        );
        let end = outcome(&resumed).end;
        assert!(
            matches!(end, MigrateEnd::Removed | MigrateEnd::Already),
            "crash after {k}: {end:?}"
        );
        assert_eq!(
            read_migration(&mut w).vformat,
            VFormat::V0,
            "crash after {k}"
        );
        assert_eq!(
            object_rows(&w.snapshot(TABLE)),
            reference,
            "crash after request {k}"
        );
        k += 1;
    }
}
