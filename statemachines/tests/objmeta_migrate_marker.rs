#![allow(clippy::unwrap_used)]
//! The migration marker's machines (`docs/migration.md` §2, §4.5, §4.7, §4.8, §7.1) driven
//! against a real `MemoryStore`, one request at a time, by a small driver that can lose the
//! reply of an applied write: reads with and without a marker, state changes, the switch, the
//! removal, the checkpoint and its lease, and every way a write finds the row changed.

use rowkit_codec::model::{Mutation, Timestamp};
use rowkit_codec::objmeta::cells::families;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::marker::{
    Gates, MarkerChange, MarkerTransitionError, MigrationCheckpoint, MigrationColumns,
    MigrationMarker, MigrationRecordError, MigrationState, PassCounters, RunId,
};
use rowkit_statemachines::objmeta::migrate::marker::{
    MigrationRead, ReadMigration, WriteCheckpoint, WriteMarker,
};
use rowkit_statemachines::objmeta::{
    CreateBucket, DeleteBucket, ObjmetaConfig, ObjmetaError, ObjmetaState,
};
use rowkit_statemachines::operation::{OperationError, Start};
use rowkit_statemachines::{
    Code, Machine, MutateRowRequest, ReadRowRequest, Request, Response, StoreError,
};
use rowkit_store::{MemoryStore, Reply, Store};
use rowkit_testkit::script::store_responses;

const TABLE: &str = "objmeta";
const NOW: Timestamp = Timestamp(1_764_428_400_000_000);
const ROW: &[u8] = b"__metastore\x00b";

fn start() -> Start {
    Start::within(NOW, 7, 60_000_000)
}

/// What the driver does with each request.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// The first `CheckAndMutateRow` is applied but its reply is lost.
    LoseCasReply,
    /// The first `CheckAndMutateRow` never reaches the store: it is answered `UNAVAILABLE`.
    DropCas,
    /// The first `CheckAndMutateRow` is refused with a non-retryable error.
    RefuseCas,
}

/// Runs `m` to its end on `store`, one request at a time (a timer it waits on fires at once);
/// returns its result and the requests it sent.
fn run<M: Machine>(
    store: &MemoryStore,
    mut m: M,
    fault: Fault,
) -> (Result<M::Output, M::Error>, Vec<Request>) {
    let mut sent = Vec::new();
    let mut fault = fault;
    loop {
        while m.poll_event().is_some() {}
        if let Some(result) = m.result() {
            return (result, sent);
        }
        let Some((tag, request)) = m.poll_request() else {
            let at = m.poll_timeout().expect("the machine waits on nothing");
            m.handle_timeout(at);
            continue;
        };
        sent.push(request.clone());
        let is_cas = matches!(request, Request::CheckAndMutateRow(_));
        let refusal = match fault {
            Fault::DropCas => Some(StoreError::new(Code::Unavailable, "connection reset")),
            Fault::RefuseCas => Some(StoreError::new(Code::PermissionDenied, "no write access")),
            _ => None,
        };
        if let Some(error) = refusal.filter(|_| is_cas) {
            fault = Fault::None;
            m.handle_response(tag, Err(error), NOW);
            continue;
        }
        let parts = store_responses(store, request, NOW);
        if is_cas && fault == Fault::LoseCasReply {
            fault = Fault::None;
            let lost = StoreError::new(Code::DeadlineExceeded, "reply lost");
            m.handle_response(tag, Err(lost), NOW);
            continue;
        }
        for part in parts {
            m.handle_response(tag, part, NOW);
        }
    }
}

fn state() -> ObjmetaState {
    ObjmetaState::new(ObjmetaConfig {
        default_bucket_key_format: VFormat::V0,
        ..ObjmetaConfig::default()
    })
}

/// A memory store with bucket `b` (uid `uid`), created v0.
fn store_with_bucket(uid: &str) -> MemoryStore {
    let store = MemoryStore::new();
    store.create_table(TABLE, &families()).unwrap();
    create_bucket(&store, uid);
    store
}

fn create_bucket(store: &MemoryStore, uid: &str) {
    let md = Json::parse(&format!(r#"{{"name":"b","uid":"{uid}"}}"#)).unwrap();
    let (r, _) = run(
        store,
        CreateBucket::new(state(), "b", &md, start()),
        Fault::None,
    );
    assert_eq!(r, Ok(VFormat::V0));
}

fn read(store: &MemoryStore) -> Result<MigrationRead, ObjmetaError> {
    run(
        store,
        ReadMigration::new(state(), "b", start()),
        Fault::None,
    )
    .0
}

/// The raw migration columns of the metastore row.
fn columns(store: &MemoryStore) -> MigrationColumns {
    let request = Request::ReadRow(ReadRowRequest {
        table: TABLE.into(),
        row_key: ROW.to_vec(),
        ..Default::default()
    });
    match store.execute_local(request, NOW).unwrap() {
        Reply::Unary(Response::Row(row)) => row
            .as_deref()
            .map(MigrationColumns::from_row)
            .unwrap_or_default(),
        other => panic!("{other:?}"),
    }
}

/// Another process sets a `d:` column of the metastore row.
fn set_column(store: &MemoryStore, qualifier: &str, value: &[u8]) {
    let request = Request::MutateRow(MutateRowRequest {
        table: TABLE.into(),
        row_key: ROW.to_vec(),
        mutations: vec![Mutation::set_cell(
            "d",
            qualifier.as_bytes(),
            Timestamp(0),
            value.to_vec(),
        )],
        ..Default::default()
    });
    store.execute_local(request, NOW).unwrap();
}

fn marker(state: MigrationState) -> MigrationMarker {
    MigrationMarker::new(
        RunId(0xabc),
        VFormat::V0,
        VFormat::V1,
        state,
        NOW,
        90_000_000,
        "uid-1",
    )
}

const COPYING_TEXT: &str = r#"{"run":"00000000000000000000000000000abc","from":"v0","to":"v1","state":"copying","since":1764428400000000,"settle_us":90000000,"bucket_uid":"uid-1"}"#;

fn write(
    store: &MemoryStore,
    as_read: &MigrationRead,
    change: MarkerChange,
    fault: Fault,
) -> (Result<MigrationRead, ObjmetaError>, Vec<Request>) {
    let m = WriteMarker::new(state(), "b", as_read, change, Gates::ALL, start());
    run(store, m, fault)
}

/// Starts the migration: the bucket as read, then the `copying` marker written.
fn started(store: &MemoryStore) -> MigrationRead {
    let as_read = read(store).unwrap();
    let change = MarkerChange::Write(marker(MigrationState::Copying));
    write(store, &as_read, change, Fault::None).0.unwrap()
}

#[test]
fn read_of_a_bucket_without_and_with_a_marker() {
    let store = store_with_bucket("uid-1");
    let r = read(&store).unwrap();
    assert_eq!(r.vformat, VFormat::V0);
    assert_eq!(r.bucket_uid.as_deref(), Some("uid-1"));
    assert_eq!((r.marker, r.checkpoint), (None, None));
    assert_eq!(r.columns.vformat.as_deref(), Some(&b"\"v0\""[..]));

    set_column(&store, "rowkitMigration", COPYING_TEXT.as_bytes());
    let r = read(&store).unwrap();
    assert_eq!(r.marker, Some(marker(MigrationState::Copying)));
    assert_eq!(r.columns.marker.as_deref(), Some(COPYING_TEXT.as_bytes()));

    // One request: the point read of the metastore row.
    let (_, sent) = run(
        &store,
        ReadMigration::new(state(), "b", start()),
        Fault::None,
    );
    assert_eq!(sent.len(), 1);
    let Request::ReadRow(r) = &sent[0] else {
        panic!("{sent:?}")
    };
    assert_eq!(r.row_key, ROW);
}

#[test]
fn read_of_a_missing_bucket_is_no_such_bucket() {
    let store = MemoryStore::new();
    store.create_table(TABLE, &families()).unwrap();
    assert_eq!(read(&store), Err(ObjmetaError::NoSuchBucket));
}

#[test]
fn a_damaged_marker_or_checkpoint_is_a_decoding_error() {
    let store = store_with_bucket("uid-1");
    set_column(&store, "rowkitMigration", br#"{"run":"xyz"}"#);
    let e = read(&store).unwrap_err();
    assert_eq!(e.id(), "migration_record_invalid");
    assert_eq!(
        e,
        ObjmetaError::MigrationRecordInvalid {
            column: "marker",
            // `{"run":"xyz"}` lacks `from`, the first member checked.
            error: MigrationRecordError::MissingMember("from"),
        }
    );
    set_column(&store, "rowkitMigration", b"\xff\xfe");
    assert_eq!(
        read(&store),
        Err(ObjmetaError::MigrationRecordInvalid {
            column: "marker",
            error: MigrationRecordError::NotUtf8 { offset: 0 },
        })
    );
    set_column(&store, "rowkitMigration", COPYING_TEXT.as_bytes());
    set_column(&store, "rowkitCheckpoint", b"[]");
    assert_eq!(
        read(&store),
        Err(ObjmetaError::MigrationRecordInvalid {
            column: "checkpoint",
            error: MigrationRecordError::NotAnObject,
        })
    );
}

#[test]
fn start_and_state_change_are_applied() {
    let store = store_with_bucket("uid-1");
    let as_read = read(&store).unwrap();
    let change = MarkerChange::Write(marker(MigrationState::Copying));
    let (r, sent) = write(&store, &as_read, change, Fault::None);
    let copying = r.unwrap();
    assert_eq!(sent.len(), 1, "one CAS, no re-read");
    assert_eq!(copying.marker, Some(marker(MigrationState::Copying)));
    assert_eq!(
        columns(&store).marker.as_deref(),
        Some(COPYING_TEXT.as_bytes())
    );
    assert_eq!(read(&store).unwrap(), copying);

    let verifying = marker(MigrationState::Verifying);
    let (r, _) = write(
        &store,
        &copying,
        MarkerChange::Write(verifying.clone()),
        Fault::None,
    );
    let r = r.unwrap();
    assert_eq!(r.marker, Some(verifying));
    assert_eq!(
        columns(&store).marker.as_deref(),
        Some(&br#"{"run":"00000000000000000000000000000abc","from":"v0","to":"v1","state":"verifying","since":1764428400000000,"settle_us":90000000,"bucket_uid":"uid-1"}"#[..])
    );
    assert_eq!(read(&store).unwrap(), r);
    assert_eq!(columns(&store).vformat.as_deref(), Some(&b"\"v0\""[..]));
}

#[test]
fn refused_changes_send_nothing() {
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    // copying → switched: §3 has no such arrow (and only the switch CAS enters switched).
    let m = WriteMarker::new(
        state(),
        "b",
        &copying,
        MarkerChange::Switch(marker(MigrationState::Switched)),
        Gates::ALL,
        start(),
    );
    let (r, sent) = run(&store, m, Fault::None);
    assert_eq!(
        r,
        Err(ObjmetaError::MigrationChangeRefused(
            MarkerTransitionError::Refused {
                from: Some(MigrationState::Copying),
                to: Some(MigrationState::Switched)
            }
        ))
    );
    assert!(sent.is_empty());
    // verifying → switching without --switch.
    let verifying = write(
        &store,
        &copying,
        MarkerChange::Write(marker(MigrationState::Verifying)),
        Fault::None,
    )
    .0
    .unwrap();
    let m = WriteMarker::new(
        state(),
        "b",
        &verifying,
        MarkerChange::Write(marker(MigrationState::Switching)),
        Gates::default(),
        start(),
    );
    let (r, sent) = run(&store, m, Fault::None);
    let e = r.unwrap_err();
    assert_eq!(e.id(), "migration_change_refused");
    assert_eq!(
        e.to_string(),
        "migration change refused: entering switching needs --switch"
    );
    assert!(sent.is_empty());
    // A start whose marker names another bucket uid.
    let store = store_with_bucket("uid-2");
    let as_read = read(&store).unwrap();
    let (r, sent) = write(
        &store,
        &as_read,
        MarkerChange::Write(marker(MigrationState::Copying)),
        Fault::None,
    );
    assert_eq!(
        r,
        Err(ObjmetaError::MigrationChangeRefused(
            MarkerTransitionError::Changed("bucket_uid")
        ))
    );
    assert!(sent.is_empty());
}

#[test]
fn a_lost_reply_after_an_applied_cas_is_recognised_as_our_own_write() {
    let store = store_with_bucket("uid-1");
    let as_read = read(&store).unwrap();
    let change = MarkerChange::Write(marker(MigrationState::Copying));
    let (r, sent) = write(&store, &as_read, change.clone(), Fault::LoseCasReply);
    assert_eq!(r.unwrap().marker, Some(marker(MigrationState::Copying)));
    assert_eq!(sent.len(), 2, "the CAS, then the re-read");
    assert!(matches!(sent[1], Request::ReadRow(_)));
    assert_eq!(
        columns(&store).marker.as_deref(),
        Some(COPYING_TEXT.as_bytes())
    );
    // The same write replayed from the same read (a migrator restarted): not matched, and
    // the re-read finds its own marker.
    let (r, sent) = write(&store, &as_read, change, Fault::None);
    assert_eq!(r.unwrap(), read(&store).unwrap());
    assert_eq!(sent.len(), 2);
}

#[test]
fn a_cas_answered_unavailable_is_reread_then_sent_again() {
    let store = store_with_bucket("uid-1");
    let as_read = read(&store).unwrap();
    let change = MarkerChange::Write(marker(MigrationState::Copying));
    let (r, sent) = write(&store, &as_read, change, Fault::DropCas);
    assert_eq!(r.unwrap().marker, Some(marker(MigrationState::Copying)));
    assert_eq!(sent.len(), 3, "the CAS, the re-read, the CAS again");
    assert!(matches!(sent[1], Request::ReadRow(_)));
    assert_eq!(sent[0], sent[2], "the same write");
    assert_eq!(
        columns(&store).marker.as_deref(),
        Some(COPYING_TEXT.as_bytes())
    );
}

#[test]
fn a_cas_refused_with_a_non_retryable_error_reports_it() {
    let store = store_with_bucket("uid-1");
    let as_read = read(&store).unwrap();
    let change = MarkerChange::Write(marker(MigrationState::Copying));
    let (r, sent) = write(&store, &as_read, change, Fault::RefuseCas);
    let e = r.unwrap_err();
    assert!(e.to_string().contains("no write access"), "{e}");
    assert_eq!(sent.len(), 2, "the CAS, the re-read");
    assert_eq!(columns(&store).marker, None);
}

#[test]
fn a_checkpoint_answered_unavailable_is_sent_again() {
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    let m = WriteCheckpoint::new(state(), "b", &copying, checkpoint("host:1"), false, start());
    let (r, sent) = run(&store, m, Fault::DropCas);
    let r = r.unwrap();
    assert_eq!(sent.len(), 3, "the CAS, the re-read, the CAS again");
    assert_eq!(r, read(&store).unwrap());
    assert_eq!(r.checkpoint.unwrap().owner, "host:1");
}

#[test]
fn a_concurrent_marker_change_stops_with_marker_changed_and_writes_nothing() {
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    // Another migrator moves the run on.
    let theirs = marker(MigrationState::Aborting).to_json_text().unwrap();
    set_column(&store, "rowkitMigration", theirs.as_bytes());
    let (r, sent) = write(
        &store,
        &copying,
        MarkerChange::Write(marker(MigrationState::Verifying)),
        Fault::None,
    );
    assert_eq!(r, Err(ObjmetaError::MarkerChanged));
    assert_eq!(r.unwrap_err().id(), "marker_changed");
    assert_eq!(sent.len(), 2, "the CAS and the re-read, nothing more");
    assert_eq!(columns(&store).marker.as_deref(), Some(theirs.as_bytes()));
}

#[test]
fn a_changed_vformat_stops_with_marker_changed() {
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    // A createBucket overwrite (same uid) resets d:vFormat.
    set_column(&store, "vFormat", b"\"v1\"");
    let (r, _) = write(
        &store,
        &copying,
        MarkerChange::Write(marker(MigrationState::Verifying)),
        Fault::None,
    );
    assert_eq!(r, Err(ObjmetaError::MarkerChanged));
    assert_eq!(
        columns(&store).marker.as_deref(),
        Some(COPYING_TEXT.as_bytes())
    );
}

#[test]
fn a_deleted_or_recreated_bucket_stops_with_bucket_deleted() {
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    let (r, _) = run(
        &store,
        DeleteBucket::new(state(), "b", start()),
        Fault::None,
    );
    r.unwrap();
    let verifying = MarkerChange::Write(marker(MigrationState::Verifying));
    let (r, sent) = write(&store, &copying, verifying.clone(), Fault::None);
    assert_eq!(r, Err(ObjmetaError::BucketDeleted));
    assert_eq!(r.unwrap_err().id(), "bucket_deleted");
    assert_eq!(sent.len(), 2);
    assert_eq!(
        columns(&store),
        MigrationColumns::default(),
        "no row written"
    );

    // Recreated with another uid: no marker, so the CAS fails; the re-read names the bucket.
    create_bucket(&store, "uid-2");
    let (r, _) = write(&store, &copying, verifying, Fault::None);
    assert_eq!(r, Err(ObjmetaError::BucketDeleted));
    assert_eq!(columns(&store).marker, None);
}

#[test]
fn the_switch_changes_vformat_and_marker_together() {
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    let verifying = write(
        &store,
        &copying,
        MarkerChange::Write(marker(MigrationState::Verifying)),
        Fault::None,
    )
    .0
    .unwrap();
    let switching = write(
        &store,
        &verifying,
        MarkerChange::Write(marker(MigrationState::Switching)),
        Fault::None,
    )
    .0
    .unwrap();
    let switched = marker(MigrationState::Switched);
    let (r, sent) = write(
        &store,
        &switching,
        MarkerChange::Switch(switched.clone()),
        Fault::None,
    );
    let r = r.unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!((r.vformat, r.marker.clone()), (VFormat::V1, Some(switched)));
    let c = columns(&store);
    assert_eq!(c.vformat.as_deref(), Some(&b"\"v1\""[..]));
    assert_eq!(
        c.marker.as_deref(),
        Some(&br#"{"run":"00000000000000000000000000000abc","from":"v0","to":"v1","state":"switched","since":1764428400000000,"settle_us":90000000,"bucket_uid":"uid-1"}"#[..])
    );
    assert_eq!(read(&store).unwrap(), r);
}

#[test]
fn a_switch_whose_predicate_fails_changes_neither() {
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    let verifying = write(
        &store,
        &copying,
        MarkerChange::Write(marker(MigrationState::Verifying)),
        Fault::None,
    )
    .0
    .unwrap();
    let switching = write(
        &store,
        &verifying,
        MarkerChange::Write(marker(MigrationState::Switching)),
        Fault::None,
    )
    .0
    .unwrap();
    // An operator's --abort from another process wins the race.
    let theirs = marker(MigrationState::Aborting).to_json_text().unwrap();
    set_column(&store, "rowkitMigration", theirs.as_bytes());
    let (r, _) = write(
        &store,
        &switching,
        MarkerChange::Switch(marker(MigrationState::Switched)),
        Fault::None,
    );
    assert_eq!(r, Err(ObjmetaError::MarkerChanged));
    let c = columns(&store);
    assert_eq!(c.vformat.as_deref(), Some(&b"\"v0\""[..]));
    assert_eq!(c.marker.as_deref(), Some(theirs.as_bytes()));
}

#[test]
fn the_removal_deletes_marker_and_checkpoint() {
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    let cp = write_checkpoint(&store, &copying, checkpoint("host:1"), false).unwrap();
    assert!(columns(&store).checkpoint.is_some());
    let aborting = write(
        &store,
        &cp,
        MarkerChange::Write(marker(MigrationState::Aborting)),
        Fault::None,
    )
    .0
    .unwrap();
    let (r, _) = write(&store, &aborting, MarkerChange::Remove, Fault::LoseCasReply);
    let r = r.unwrap();
    assert_eq!((r.marker, r.checkpoint), (None, None));
    let c = columns(&store);
    assert_eq!((c.marker, c.checkpoint), (None, None));
    assert_eq!(c.vformat.as_deref(), Some(&b"\"v0\""[..]));
    assert!(c.value.is_some(), "the bucket stays");
}

fn checkpoint(owner: &str) -> MigrationCheckpoint {
    MigrationCheckpoint {
        run: RunId(0xabc),
        state: MigrationState::Copying,
        pass: 1,
        cursor: Some(b"k1".to_vec()),
        owner: owner.into(),
        lease_until: Timestamp(0),
        counters: PassCounters {
            rows_scanned: 10,
            copied: 9,
            ..PassCounters::default()
        },
        pass_rows_previous: None,
        started: NOW,
        updated: Timestamp(0),
    }
}

fn write_checkpoint(
    store: &MemoryStore,
    as_read: &MigrationRead,
    cp: MigrationCheckpoint,
    take_over: bool,
) -> Result<MigrationRead, ObjmetaError> {
    let m = WriteCheckpoint::new(state(), "b", as_read, cp, take_over, start());
    run(store, m, Fault::None).0
}

#[test]
fn checkpoints_renew_the_lease_and_a_take_over_stops_the_old_owner() {
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    let first = write_checkpoint(&store, &copying, checkpoint("host:1"), false).unwrap();
    let cp = first.checkpoint.clone().unwrap();
    assert_eq!(cp.updated, NOW);
    assert_eq!(cp.lease_until, Timestamp(NOW.0 + 600_000_000));
    assert_eq!(
        columns(&store).checkpoint.as_deref(),
        Some(&br#"{"run":"00000000000000000000000000000abc","state":"copying","pass":1,"cursor":"hex:6b31","owner":"host:1","lease_until":1764429000000000,"rows_scanned":10,"copied":9,"deleted":0,"stamped":0,"unchanged":0,"stragglers":0,"conflicts":0,"pass_rows_previous":null,"started":1764428400000000,"updated":1764428400000000}"#[..])
    );
    assert_eq!(read(&store).unwrap(), first);

    // The next page's checkpoint, from the previous one.
    let next = MigrationCheckpoint {
        cursor: Some(b"k2".to_vec()),
        ..checkpoint("host:1")
    };
    let second = write_checkpoint(&store, &first, next, false).unwrap();
    assert_eq!(read(&store).unwrap(), second);

    // Another migrator while the lease holds: refused, nothing sent.
    let m = WriteCheckpoint::new(state(), "b", &second, checkpoint("host:2"), false, start());
    let (r, sent) = run(&store, m, Fault::None);
    let e = r.unwrap_err();
    assert_eq!(e.id(), "migration_in_progress");
    assert!(sent.is_empty());
    // With --take-over it writes; the first owner's next write then stops.
    write_checkpoint(&store, &second, checkpoint("host:2"), true).unwrap();
    let (r, sent) = run(
        &store,
        WriteCheckpoint::new(state(), "b", &second, checkpoint("host:1"), false, start()),
        Fault::None,
    );
    assert_eq!(
        r,
        Err(ObjmetaError::MigrationTakenOver {
            owner: "host:2".into()
        })
    );
    assert_eq!(r.unwrap_err().id(), "migration_taken_over");
    assert_eq!(sent.len(), 2);
    assert!(
        read(&store)
            .unwrap()
            .checkpoint
            .is_some_and(|c| c.owner == "host:2"),
        "nothing written"
    );
}

#[test]
fn a_checkpoint_with_a_lost_reply_is_our_own_write() {
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    let m = WriteCheckpoint::new(state(), "b", &copying, checkpoint("host:1"), false, start());
    let (r, sent) = run(&store, m, Fault::LoseCasReply);
    let r = r.unwrap();
    assert_eq!(sent.len(), 2);
    assert_eq!(r, read(&store).unwrap());
    assert_eq!(r.checkpoint.unwrap().owner, "host:1");
}

#[test]
fn a_checkpoint_needs_a_marker_and_the_bucket() {
    // No marker: the first checkpoint is not written (the predicate wants a marker).
    let store = store_with_bucket("uid-1");
    let as_read = read(&store).unwrap();
    let r = write_checkpoint(&store, &as_read, checkpoint("host:1"), false);
    assert_eq!(r, Err(ObjmetaError::MarkerChanged));
    assert_eq!(columns(&store).checkpoint, None);
    // The bucket deleted: nothing written, no phantom metastore row.
    let copying = started(&store);
    run(
        &store,
        DeleteBucket::new(state(), "b", start()),
        Fault::None,
    )
    .0
    .unwrap();
    let r = write_checkpoint(&store, &copying, checkpoint("host:1"), false);
    assert_eq!(r, Err(ObjmetaError::BucketDeleted));
    assert_eq!(columns(&store), MigrationColumns::default());
}

#[test]
fn a_replacing_create_bucket_removes_the_marker_and_the_checkpoint() {
    // §4.8, §12.74: a bucket under migration, fenced (`switching`) with a checkpoint, is
    // replaced by `createBucket`. Its one MutateRow is REPLACE (the spec's cells) followed by
    // the removal of rowkit's two columns, so no aware process follows the dead run's marker.
    let store = store_with_bucket("uid-1");
    let copying = started(&store);
    let switching = marker(MigrationState::Switching).to_json_text().unwrap();
    set_column(&store, "rowkitMigration", switching.as_bytes());
    set_column(
        &store,
        "rowkitCheckpoint",
        b"{\"run\":\"checkpoint of the dead run\"}",
    );

    let md = Json::parse(r#"{"name":"b","uid":"uid-2"}"#).unwrap();
    let (r, sent) = run(
        &store,
        CreateBucket::new(state(), "b", &md, start()),
        Fault::None,
    );
    assert_eq!(r, Ok(VFormat::V0));
    let [Request::MutateRow(replacing)] = sent.as_slice() else {
        panic!("one MutateRow, not {sent:?}")
    };
    assert_eq!(replacing.row_key, ROW);
    let mut want = rowkit_codec::objmeta::cells::replace(&md, Some("v0"));
    for column in [&b"rowkitMigration"[..], b"rowkitCheckpoint"] {
        want.push(Mutation::DeleteFromColumn {
            family: "d".into(),
            qualifier: column.to_vec(),
            range: None,
        });
    }
    assert_eq!(replacing.mutations, want);
    let after = columns(&store);
    assert_eq!((after.marker, after.checkpoint), (None, None));
    assert_eq!(after.vformat.as_deref(), Some(&b"\"v0\""[..]));

    // Another aware process's write reads the bucket as plain: no fence to wait in, no mirror
    // (its only requests are the metastore read and its own write).
    let aware = ObjmetaState::new(ObjmetaConfig {
        default_bucket_key_format: VFormat::V0,
        migration_aware: true,
        ..ObjmetaConfig::default()
    });
    let value = Json::parse(r#"{"key":"k"}"#).unwrap();
    let put = rowkit_statemachines::objmeta::PutObject::new(aware, "b", "k", value, None, start());
    let (r, sent) = run(&store, put, Fault::None);
    assert!(r.is_ok(), "{r:?}");
    let metastore_reads = sent
        .iter()
        .filter(|q| matches!(q, Request::ReadRow(r) if r.row_key == ROW))
        .count();
    assert_eq!((metastore_reads, sent.len()), (1, 2), "{sent:?}");

    // The dead run's migrator stops at its next marker write, having written nothing.
    let verifying = MarkerChange::Write(marker(MigrationState::Verifying));
    let (r, _) = write(&store, &copying, verifying, Fault::None);
    assert_eq!(r, Err(ObjmetaError::BucketDeleted));
    assert_eq!(columns(&store).marker, None);
}
