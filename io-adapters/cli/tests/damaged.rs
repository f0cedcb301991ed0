//! A damaged store file is an error, never a panic: the test makes a real store file with the
//! CLI (tables of its own and the object-metadata schema, so `check` reads rows), flips one
//! byte at a time at several offsets of every page, and runs `admin list-tables`, `admin dump`,
//! `check`, `admin create-table` and `admin set` on each copy. Every command succeeds or exits
//! 1 with one line on stderr (`DATA_LOSS` naming the file for damage redb trips over), never
//! 101 (a panic) or 134 (an abort). `rowkit serve --grpc` on a damaged file stays up: requests
//! that touch the damaged part answer `DATA_LOSS` (HTTP 500 with the JSON status, gRPC
//! `DATA_LOSS`), the others keep working.
#![allow(clippy::unwrap_used)]

mod support;

use support::serve_grpc;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use rowkit_bigtable::BigtableStore;
use rowkit_codec::model::{Mutation, RowSet, Timestamp};
use rowkit_store::Store;
use rowkit_statemachines::{Code, MutateRowRequest, ReadRowsRequest, Request};

/// redb's page size: the sweep flips bytes at fixed offsets of every page.
const PAGE: usize = 4096;
/// Offsets inside each page: the page type byte, the header after it, the allocator state's
/// region bits (page 3 of a small file holds them), and the data area.
const IN_PAGE: [usize; 4] = [0, 2, 133, 1000];

fn rowkit(store: &str, args: &[&str]) -> Output {
    support::rowkit_with_env(store, args, &[])
}

fn ok(store: &str, args: &[&str]) {
    let o = rowkit(store, args);
    assert!(o.status.success(), "{args:?}: {o:?}");
}

fn temp_dir(name: &str) -> PathBuf {
    support::temp_dir("damaged", name)
}

/// A store file at `path` with tables `t1` (60 rows), `t2` (one row) and the s3 schema's
/// `objmeta` (a bucket of 20 objects): its bytes.
fn make_store(path: &Path) -> Vec<u8> {
    let store = format!("embedded:{}", path.display());
    ok(&store, &["s3", "setup"]);
    ok(&store, &["s3", "bucket", "create", "b"]);
    for i in 0..20 {
        let value = format!(r#"{{"n":{i},"pad":"{}"}}"#, "p".repeat(40));
        ok(
            &store,
            &["s3", "put", "b", &format!("k{i:02}"), "--value", &value],
        );
    }
    ok(&store, &["admin", "create-table", "t1", "--family", "cf"]);
    ok(&store, &["admin", "create-table", "t2", "--family", "cf"]);
    for i in 0..60 {
        let cell = format!("cf:q=value-{i}-{}", "x".repeat(40));
        ok(
            &store,
            &["admin", "set", "t1", &format!("row{i:02}"), &cell],
        );
    }
    ok(&store, &["admin", "set", "t2", "a", "cf:q=1"]);
    std::fs::read(path).unwrap()
}

/// Writes `base` to `path` with the byte at `offset` inverted.
fn damage(base: &[u8], offset: usize, path: &Path) {
    let mut bytes = base.to_vec();
    bytes[offset] ^= 0xff;
    std::fs::write(path, bytes).unwrap();
}

/// The commands run on every damaged copy, by name.
const COMMANDS: [(&str, &[&str]); 5] = [
    ("list-tables", &["admin", "list-tables"]),
    ("dump", &["admin", "dump", "t1"]),
    ("check", &["check", "--grace", "0"]),
    (
        "create-table",
        &["admin", "create-table", "n", "--family", "cf"],
    ),
    ("set", &["admin", "set", "t1", "row05", "cf:q=new"]),
];

/// A test's directory, the bytes of a store made in it, and the path (and `--store`) of the
/// copy the test damages.
fn fixture(name: &str) -> (PathBuf, Vec<u8>, PathBuf, String) {
    let dir = temp_dir(name);
    let base = make_store(&dir.join("base.redb"));
    let copy = dir.join("copy.redb");
    let store = format!("embedded:{}", copy.display());
    (dir, base, copy, store)
}

#[test]
fn every_command_on_a_damaged_file_fails_with_one_line_never_a_panic() {
    let (dir, base, copy, store) = fixture("commands");
    let offsets: Vec<usize> = (0..base.len() / PAGE)
        .flat_map(|page| IN_PAGE.iter().map(move |o| page * PAGE + o))
        .collect();
    // command -> how many copies it reported DATA_LOSS on
    let mut data_loss: BTreeMap<&str, usize> = BTreeMap::new();
    // (offset, command) -> its stderr
    let mut outcomes: BTreeMap<(usize, &str), String> = BTreeMap::new();
    for &offset in &offsets {
        for (name, args) in COMMANDS {
            damage(&base, offset, &copy);
            let o = rowkit(&store, args);
            let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
            let what = format!("offset {offset}, {name}: {o:?}");
            // A check that could not run exits 2 (its 1 means findings left).
            let failed = if name == "check" { 2 } else { 1 };
            match o.status.code() {
                Some(0) => {}
                Some(code) if code == failed => {
                    assert_eq!(stderr.lines().count(), 1, "{what}");
                    assert!(stderr.starts_with("rowkit: "), "{what}");
                    if stderr.contains("DATA_LOSS") {
                        let says = format!("DATA_LOSS: {} is damaged: ", copy.display());
                        assert!(stderr.contains(&says), "{what}");
                        assert!(stderr.contains("restore the file from a backup"), "{what}");
                        assert!(stderr.contains("`rowkit admin backup`"), "{what}");
                        assert!(stderr.contains("`rowkit check`"), "{what}");
                        *data_loss.entry(name).or_default() += 1;
                    }
                }
                _ => panic!("{what}"),
            }
            assert!(!stderr.contains("Poison"), "{what}");
            outcomes.insert((offset, name), stderr);
        }
    }
    // The damage reached every command, so the assertions above were exercised.
    for (name, _) in COMMANDS {
        assert!(
            data_loss.get(name).copied().unwrap_or(0) > 0,
            "{name} never saw DATA_LOSS: {data_loss:?}"
        );
    }
    // Among them, panics inside a write transaction (the user's exit 134 and 101).
    for (name, says) in [
        ("create-table", "create_table: redb panicked"),
        ("set", "write_row on table \"t1\": redb panicked"),
    ] {
        assert!(
            outcomes
                .iter()
                .any(|((_, n), stderr)| *n == name && stderr.contains(says)),
            "no copy made {name} panic inside redb"
        );
    }
    assert!(
        outcomes
            .iter()
            .any(|((_, n), stderr)| *n == "dump" && stderr.contains("next_row on table \"t1\"")),
        "no copy made a read of t1 panic inside redb"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One JSON API call on a fresh connection: status and body.
fn post(addr: &str, path: &str, body: &str) -> (u16, String) {
    let answer = support::http_with(addr, "POST", path, &[], body);
    (answer.status, answer.body)
}

fn read(addr: &str, table: &str) -> (u16, String) {
    let path = format!("/v2/projects/p/instances/i/tables/{table}:readRows");
    post(addr, &path, "{}")
}

/// Sets `cf:q` of row `r9` (`cjk=`) to `v` (`dg==`).
fn write(addr: &str, table: &str) -> (u16, String) {
    let path = format!("/v2/projects/p/instances/i/tables/{table}:mutateRow");
    let body = r#"{"rowKey":"cjk=","mutations":[{"setCell":{"familyName":"cf","columnQualifier":"cQ==","timestampMicros":"1000","value":"dg=="}}]}"#;
    post(addr, &path, body)
}

/// The gateway's answer for damage: 500 with a JSON `google.rpc.Status` saying `DATA_LOSS`
/// and naming the file.
fn assert_data_loss(answer: &(u16, String), file: &Path) {
    let (status, body) = answer;
    assert_eq!(*status, 500, "{body}");
    assert!(body.contains("DATA_LOSS"), "{body}");
    assert!(body.contains(&file.display().to_string()), "{body}");
    assert!(!body.contains("Poison"), "{body}");
}

fn grpc_store(host: &str) -> BigtableStore {
    BigtableStore::open(&format!("bigtable://p/i?emulator={host}")).unwrap()
}

fn grpc_read(store: &BigtableStore, table: &str) -> Result<usize, Code> {
    let request = ReadRowsRequest {
        table: table.into(),
        rows: RowSet::all(),
        ..Default::default()
    };
    rowkit_client::read_rows_blocking(store, request, Timestamp::from_secs(1))
        .map(|rows| rows.len())
        .map_err(|e| e.code)
}

fn grpc_write(store: &BigtableStore, table: &str) -> Result<(), Code> {
    let request = Request::MutateRow(MutateRowRequest {
        table: table.into(),
        row_key: b"g1".to_vec(),
        mutations: vec![Mutation::SetCell {
            family: "cf".into(),
            qualifier: b"q".to_vec(),
            timestamp: Timestamp::from_millis(1),
            value: b"v".to_vec(),
        }],
        ..Default::default()
    });
    store
        .execute(request, Timestamp::from_secs(1))
        .map(|_| ())
        .map_err(|e| e.code)
}

/// The first offset (at the sweep's places in every page) at which `args` on a damaged copy
/// say `says` on stderr while `works` still succeeds.
fn find_damage(base: &[u8], copy: &Path, args: &[&str], says: &str, works: &[&str]) -> usize {
    let store = format!("embedded:{}", copy.display());
    for page in 0..base.len() / PAGE {
        for o in IN_PAGE {
            let offset = page * PAGE + o;
            damage(base, offset, copy);
            let o = rowkit(&store, args);
            if !String::from_utf8_lossy(&o.stderr).contains(says) {
                continue;
            }
            damage(base, offset, copy);
            if rowkit(&store, works).status.success() {
                return offset;
            }
        }
    }
    panic!("no single flipped byte makes {args:?} say {says}");
}

/// A server on a file whose t1 pages are damaged: reads and writes of t1 answer DATA_LOSS
/// (HTTP and gRPC), t2 keeps answering both, and the server stays up throughout.
#[test]
fn serve_answers_data_loss_for_a_damaged_table_and_serves_the_others() {
    let dir = temp_dir("serve-read");
    let base = make_store(&dir.join("base.redb"));
    let copy = dir.join("copy.redb");
    let offset = find_damage(
        &base,
        &copy,
        &["admin", "dump", "t1"],
        "next_row on table \"t1\": redb panicked",
        // A write to another table: the file opens for writing.
        &["admin", "set", "t2", "b", "cf:q=2"],
    );
    damage(&base, offset, &copy);
    let (server, http, grpc) = serve_grpc(&format!("embedded:{}", copy.display()), &[]);
    assert_eq!(read(&http, "t2").0, 200);
    assert_data_loss(&read(&http, "t1"), &copy);
    // Fails fast now, with the same answer.
    assert_data_loss(&read(&http, "t1"), &copy);
    assert_data_loss(&write(&http, "t1"), &copy);
    assert_eq!(
        write(&http, "t2"),
        (200, "{}".to_string()),
        "offset {offset}"
    );
    let (status, body) = read(&http, "t2");
    assert_eq!(status, 200);
    assert!(body.contains("cjk="), "{body}");
    let client = grpc_store(&grpc);
    assert_eq!(grpc_read(&client, "t1"), Err(Code::DataLoss));
    assert_eq!(grpc_write(&client, "t1"), Err(Code::DataLoss));
    assert!(grpc_read(&client, "t2").is_ok());
    assert_eq!(grpc_write(&client, "t2"), Ok(()));
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A server whose first write makes redb panic (damaged allocator state): that write and every
/// later one answer the same DATA_LOSS at once; a read redb can no longer serve (the panic
/// poisoned a lock a new read snapshot takes) answers DATA_LOSS naming its own table and the
/// earlier panic: no `PoisonError` status, no 500 without a status, and the server keeps
/// answering.
#[test]
fn serve_after_a_write_panics_refuses_writes_and_stays_up() {
    let dir = temp_dir("serve-write");
    let base = make_store(&dir.join("base.redb"));
    let copy = dir.join("copy.redb");
    let offset = find_damage(
        &base,
        &copy,
        &["admin", "set", "t1", "row05", "cf:q=new"],
        "write_row on table \"t1\": redb panicked",
        &["admin", "list-tables"],
    );
    damage(&base, offset, &copy);
    let (server, http, grpc) = serve_grpc(&format!("embedded:{}", copy.display()), &[]);
    let (status, before) = read(&http, "t1");
    assert_eq!(status, 200, "{before}");
    let first = write(&http, "t1");
    assert_data_loss(&first, &copy);
    assert!(first.1.contains("write_row on table"), "{}", first.1);
    for _ in 0..2 {
        assert_eq!(write(&http, "t2"), first);
        assert_eq!(write(&http, "t1"), first);
        for table in ["t1", "t2"] {
            let answer = read(&http, table);
            if answer.0 != 200 {
                assert_data_loss(&answer, &copy);
                let says =
                    format!("on table \\\"{table}\\\" failed after an earlier write panicked");
                assert!(answer.1.contains(&says), "{table}: {answer:?}");
            }
        }
    }
    // The read snapshot taken before the panic still serves t1.
    assert_eq!(read(&http, "t1"), (200, before));
    let client = grpc_store(&grpc);
    assert_eq!(grpc_write(&client, "t2"), Err(Code::DataLoss));
    assert_eq!(grpc_write(&client, "t1"), Err(Code::DataLoss));
    assert!(matches!(
        grpc_read(&client, "t2"),
        Ok(_) | Err(Code::DataLoss)
    ));
    assert_eq!(grpc_read(&client, "t1"), Ok(60));
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file whose header lost a byte of redb's magic number is damaged (DATA_LOSS with the advice,
/// exit 1), not "not a redb file"; a file that never was one is told apart.
#[test]
fn a_damaged_header_is_data_loss_and_a_foreign_file_is_not_a_store() {
    let (dir, base, copy, store) = fixture("header");
    for offset in [0, 3, 8] {
        for (name, args) in COMMANDS {
            damage(&base, offset, &copy);
            let o = rowkit(&store, args);
            let stderr = String::from_utf8_lossy(&o.stderr);
            let what = format!("offset {offset}, {name}: {o:?}");
            assert_ne!(o.status.code(), Some(0), "{what}");
            assert_ne!(o.status.code(), Some(101), "{what}");
            let says = format!("DATA_LOSS: {} is damaged: ", copy.display());
            assert!(stderr.contains(&says), "{what}");
            assert!(stderr.contains("magic number"), "{what}");
            assert!(stderr.contains("`rowkit admin backup`"), "{what}");
        }
    }
    std::fs::write(&copy, "a text file, not a store\n").unwrap();
    let o = rowkit(&store, &["admin", "list-tables"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("FAILED_PRECONDITION"), "{stderr}");
    assert!(stderr.contains("is not a redb file"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
