//! `rowkit admin backup`: a consistent copy of a store, offline and through a running server.
//!
//! The load test runs `rowkit serve --grpc` on a file, two writers that record every write the
//! server acknowledged, and takes the backup through the server (`--store http://ADDR`) while
//! they write: the backup opens, `rowkit check` passes on it, it holds every write acknowledged
//! before the backup began (cell by cell) and nothing sent after it ended, and the tables
//! nobody wrote meanwhile are equal to the source's, schemas and split points included.
#![allow(clippy::unwrap_used)]

mod support;

use support::{rowkit_with_env as rowkit, serve_grpc};

use std::collections::BTreeMap;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rowkit_bigtable::BigtableStore;
use rowkit_codec::model::{Cell, ColumnFamily, Mutation, RowSet, Timestamp};
use rowkit_store::{RedbStore, Reply, Store, TableStorage};
use rowkit_statemachines::{
    MutateRowRequest, MutateRowsEntry, MutateRowsRequest, ReadRowsRequest, Request, Response,
};

fn ok(store: &str, args: &[&str]) -> String {
    let o = rowkit(store, args, &[]);
    assert!(o.status.success(), "{args:?}: {o:?}");
    String::from_utf8(o.stdout).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    support::temp_dir("backup", name)
}

fn embedded(path: &Path) -> String {
    format!("embedded:{}", path.display())
}

/// A store at `path` with the object-metadata schema (so `check` has rows to read), and a
/// table `t` with split points and two families.
fn make_store(path: &Path) {
    let store = embedded(path);
    ok(&store, &["s3", "setup"]);
    ok(&store, &["s3", "bucket", "create", "b"]);
    for i in 0..12 {
        let value = format!(r#"{{"n":{i}}}"#);
        ok(
            &store,
            &["s3", "put", "b", &format!("k{i:02}"), "--value", &value],
        );
    }
    ok(
        &store,
        &[
            "admin",
            "create-table",
            "t",
            "--family",
            "cf:maxversions=2",
            "--family",
            "meta",
            "--split",
            "g",
            "--split",
            "p",
        ],
    );
    for i in 0..30 {
        let row = format!("row{i:02}");
        ok(
            &store,
            &["admin", "set", "t", &row, &format!("cf:q=v{i}"), "meta:m=x"],
        );
    }
}

/// Everything a store holds that a backup must keep, per table: families, split points and
/// every cell of every row.
type Contents = BTreeMap<String, (Vec<ColumnFamily>, Vec<Vec<u8>>, Vec<(Vec<u8>, Vec<Cell>)>)>;

fn table_rows(store: &RedbStore, table: &str) -> Vec<(Vec<u8>, Vec<Cell>)> {
    let request = ReadRowsRequest {
        table: table.into(),
        rows: RowSet::all(),
        ..Default::default()
    };
    rowkit_client::read_rows_blocking(store, request, Timestamp::from_secs(1))
        .unwrap()
        .into_iter()
        .map(|row| (row.key, row.cells))
        .collect()
}

fn contents(path: &Path, skip: &[&str]) -> Contents {
    let store = RedbStore::open_read_only(path).unwrap();
    Store::list_tables(&store)
        .unwrap()
        .into_iter()
        .filter(|t| !skip.contains(&t.as_str()))
        .map(|t| {
            let families = Store::families(&store, &t).unwrap();
            let splits = TableStorage::splits(&store, &t).unwrap().to_vec();
            let rows = table_rows(&store, &t);
            (t, (families, splits, rows))
        })
        .collect()
}

/// Files in `dir` other than `keep`: a backup leaves no temporary file behind.
fn others(dir: &Path, keep: &[&Path]) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !keep.contains(&p.as_path()))
        .collect()
}

#[test]
fn offline_backup_copies_everything_and_refuses_to_overwrite() {
    let dir = temp_dir("offline");
    let source = dir.join("source.redb");
    make_store(&source);
    let before = std::fs::read(&source).unwrap();
    let backup = dir.join("backup.redb");
    let printed = ok(
        &embedded(&source),
        &["admin", "backup", backup.to_str().unwrap()],
    );
    assert!(printed.starts_with("backed up 2 table(s) to "), "{printed}");
    // Read from a read-only open: not a byte of the source changed.
    assert!(std::fs::read(&source).unwrap() == before);
    let expected = contents(&source, &[]);
    assert_eq!(expected.len(), 2, "{:?}", expected.keys());
    assert_eq!(expected["t"].1, vec![b"g".to_vec(), b"p".to_vec()]);
    assert_eq!(expected["t"].2.len(), 30);
    assert_eq!(contents(&backup, &[]), expected);
    let check = rowkit(&embedded(&backup), &["check", "--grace", "0"], &[]);
    assert_eq!(check.status.code(), Some(0), "{check:?}");
    // The copy is a store like any other: it takes writes.
    ok(&embedded(&backup), &["admin", "set", "t", "new", "cf:q=1"]);
    assert_eq!(others(&dir, &[&source, &backup]), Vec::<PathBuf>::new());

    // An existing file is not replaced without --force, and stays as it was.
    let copy_before = std::fs::read(&backup).unwrap();
    let o = rowkit(
        &embedded(&source),
        &["admin", "backup", backup.to_str().unwrap()],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let says = stderr(&o);
    assert!(says.contains("ALREADY_EXISTS"), "{says}");
    assert!(says.contains("--force"), "{says}");
    assert!(std::fs::read(&backup).unwrap() == copy_before);
    let json = ok(
        &embedded(&source),
        &[
            "--json",
            "admin",
            "backup",
            "--force",
            backup.to_str().unwrap(),
        ],
    );
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["tables"], 2, "{json}");
    assert_eq!(
        json["bytes"].as_u64(),
        Some(std::fs::metadata(&backup).unwrap().len())
    );
    assert_eq!(contents(&backup, &[]), expected);

    // Never onto the store's own file, even with --force (spelled another way, too).
    let own = dir.join(".").join("source.redb");
    let o = rowkit(
        &embedded(&source),
        &["admin", "backup", "--force", own.to_str().unwrap()],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(stderr(&o).contains("the store's own file"), "{o:?}");
    assert!(std::fs::read(&source).unwrap() == before);
    // Even with --force only a regular file is replaced: not a directory, a link or a device.
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let link = dir.join("link.redb");
    std::os::unix::fs::symlink(&backup, &link).unwrap();
    for target in [&sub, &link, &PathBuf::from("/dev/null")] {
        let o = rowkit(
            &embedded(&source),
            &["admin", "backup", "--force", target.to_str().unwrap()],
            &[],
        );
        assert_eq!(o.status.code(), Some(1), "{target:?}: {o:?}");
        assert!(stderr(&o).contains("not a regular file"), "{o:?}");
    }
    assert!(sub.is_dir() && link.symlink_metadata().unwrap().is_symlink());
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    std::fs::remove_dir(&sub).unwrap();
    std::fs::remove_file(&link).unwrap();
    // A missing directory is named.
    let nowhere = dir.join("missing").join("b.redb");
    let o = rowkit(
        &embedded(&source),
        &["admin", "backup", nowhere.to_str().unwrap()],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stderr(&o).contains("NOT_FOUND"), "{o:?}");
    assert_eq!(others(&dir, &[&source, &backup]), Vec::<PathBuf>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

fn grpc_client(host: &str) -> BigtableStore {
    BigtableStore::open(&format!("bigtable://p/i?emulator={host}")).unwrap()
}

/// MutateRow setting `cf:q` of `row` at `timestamp` to `value`.
fn set_cell(table: &str, row: &[u8], timestamp: Timestamp, value: &[u8]) -> Request {
    Request::MutateRow(MutateRowRequest {
        table: table.into(),
        row_key: row.to_vec(),
        mutations: vec![Mutation::SetCell {
            family: "cf".into(),
            qualifier: b"q".to_vec(),
            timestamp,
            value: value.to_vec(),
        }],
        ..Default::default()
    })
}

/// One write the server acknowledged: its row, value, and when it was sent and answered.
struct Ack {
    row: Vec<u8>,
    value: Vec<u8>,
    timestamp: Timestamp,
    sent: Instant,
    answered: Instant,
}

/// Writes rows `w{writer}-{n}` (one cell each) until `stop`, recording each acknowledged one.
fn writer(grpc: String, writer: usize, stop: Arc<AtomicBool>, acks: Arc<Mutex<Vec<Ack>>>) {
    let client = grpc_client(&grpc);
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let row = format!("w{writer}-{n:06}").into_bytes();
        let value = format!("value {writer} {n} {}", "x".repeat(200)).into_bytes();
        let timestamp = Timestamp::from_millis(1_000 + n as i64);
        let request = set_cell("load", &row, timestamp, &value);
        let sent = Instant::now();
        client
            .execute(request, Timestamp::from_secs(1))
            .unwrap_or_else(|e| panic!("writer {writer}, write {n}: {e}"));
        acks.lock().unwrap().push(Ack {
            row,
            value,
            timestamp,
            sent,
            answered: Instant::now(),
        });
        n += 1;
    }
}

/// `rows` rows of 1 KiB in table `load` of the file, written before the server starts (so
/// the backup has something to copy while the writers go on).
fn preload(path: &Path, rows: usize) {
    let store = RedbStore::open(path).unwrap().with_durable_commits(false);
    for batch in (0..rows).collect::<Vec<_>>().chunks(1_000) {
        let entries = batch
            .iter()
            .map(|i| MutateRowsEntry {
                row_key: format!("pre-{i:06}").into_bytes(),
                mutations: vec![Mutation::SetCell {
                    family: "cf".into(),
                    qualifier: b"q".to_vec(),
                    timestamp: Timestamp::from_millis(1),
                    value: vec![b'p'; 1024],
                }],
            })
            .collect();
        let request = Request::MutateRows(MutateRowsRequest {
            table: "load".into(),
            entries,
            ..Default::default()
        });
        let Reply::Stream(parts) = store.execute(request, Timestamp::from_secs(1)).unwrap() else {
            panic!("MutateRows answered unary")
        };
        for part in parts {
            let Response::MutateRowsPart(part) = part.unwrap() else {
                panic!("not a MutateRows part")
            };
            assert!(part.entries.iter().all(|e| e.result.is_ok()));
        }
    }
    store.sync().unwrap();
}

#[test]
fn backup_through_the_server_under_write_load_holds_every_acknowledged_write() {
    const PRELOADED: usize = 20_000;
    let dir = temp_dir("load");
    let source = dir.join("source.redb");
    make_store(&source);
    ok(
        &embedded(&source),
        &[
            "admin",
            "create-table",
            "load",
            "--family",
            "cf",
            "--split",
            "w1",
        ],
    );
    preload(&source, PRELOADED);
    let (server, http, grpc) =
        serve_grpc(&embedded(&source), &["--backup-dir", dir.to_str().unwrap()]);
    let gateway = format!("http://{http}");

    // The file is the server's: a command on it is told to ask the server.
    let o = rowkit(
        &embedded(&source),
        &["admin", "backup", dir.join("x.redb").to_str().unwrap()],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stderr(&o).contains("UNAVAILABLE"), "{o:?}");
    assert!(stderr(&o).contains("--store http://ADDR"), "{o:?}");

    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (grpc, stop, acks) = (grpc.clone(), stop.clone(), acks.clone());
            std::thread::spawn(move || writer(grpc, w, stop, acks))
        })
        .collect();
    // Writes land before the backup, during it and after it.
    while acks.lock().unwrap().len() < 100 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let backup = dir.join("backup.redb");
    let began = Instant::now();
    let o = rowkit(
        &gateway,
        &["admin", "backup", backup.to_str().unwrap()],
        &[],
    );
    let ended = Instant::now();
    assert!(o.status.success(), "{o:?}");
    let in_flight_after = acks.lock().unwrap().len();
    while acks.lock().unwrap().len() < in_flight_after + 50 {
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    drop(server);
    let acks = std::mem::take(&mut *acks.lock().unwrap());

    // The writers were never held up by the backup: some of their writes were answered while
    // it ran.
    let during = acks
        .iter()
        .filter(|a| a.answered > began && a.answered < ended)
        .count();
    assert!(during > 0, "no write was answered during the backup");

    let check = rowkit(&embedded(&backup), &["check", "--grace", "0"], &[]);
    assert_eq!(check.status.code(), Some(0), "{check:?}");
    let copy = RedbStore::open_read_only(&backup).unwrap();
    let rows: BTreeMap<Vec<u8>, Vec<Cell>> = table_rows(&copy, "load").into_iter().collect();
    let acked: BTreeMap<&[u8], &Ack> = acks.iter().map(|a| (a.row.as_slice(), a)).collect();
    let mut before = 0;
    for ack in &acks {
        let expected = vec![Cell {
            family: "cf".into(),
            qualifier: b"q".to_vec(),
            timestamp: ack.timestamp,
            value: ack.value.clone(),
            labels: Vec::new(),
        }];
        if ack.answered < began {
            before += 1;
            assert_eq!(
                rows.get(&ack.row),
                Some(&expected),
                "acknowledged before the backup: {}",
                String::from_utf8_lossy(&ack.row)
            );
        } else if ack.sent > ended {
            assert!(!rows.contains_key(&ack.row), "sent after the backup");
        } else if let Some(cells) = rows.get(&ack.row) {
            assert_eq!(cells, &expected);
        }
    }
    assert!(before >= 100, "{before}");
    // Nothing else: the preloaded rows and writes that were sent.
    let preloaded = rows
        .iter()
        .filter(|(key, cells)| {
            key.starts_with(b"pre-") && cells.len() == 1 && cells[0].value == vec![b'p'; 1024]
        })
        .count();
    assert_eq!(preloaded, PRELOADED);
    for key in rows.keys().filter(|k| !k.starts_with(b"pre-")) {
        assert!(
            acked.contains_key(key.as_slice()),
            "{key:?} was never written"
        );
    }
    // The tables nobody wrote meanwhile are the source's, schema and split points included.
    drop(copy);
    assert_eq!(contents(&backup, &["load"]), contents(&source, &["load"]));
    let source_store = RedbStore::open_read_only(&source).unwrap();
    assert_eq!(
        TableStorage::splits(&source_store, "load")
            .unwrap()
            .to_vec(),
        vec![b"w1".to_vec()]
    );
    let copy = RedbStore::open_read_only(&backup).unwrap();
    assert_eq!(
        TableStorage::splits(&copy, "load").unwrap().to_vec(),
        vec![b"w1".to_vec()]
    );
    drop((copy, source_store));
    assert_eq!(others(&dir, &[&source, &backup]), Vec::<PathBuf>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Through a server: its token is required, its paths are its own (absolute, inside its
/// `--backup-dir`; none without one), and a memory store is backed up to a file that opens as
/// an embedded store.
#[test]
fn backup_through_the_server_needs_its_token_and_an_absolute_path() {
    let dir = temp_dir("server");
    let backup_dir = ["--backup-dir", dir.to_str().unwrap()];
    let (server, http, _) = serve_grpc(
        "memory:",
        &[&["--token", "s3cret"][..], &backup_dir].concat(),
    );
    let gateway = format!("http://{http}");
    let token = [("ROWKIT_GATEWAY_TOKEN", "s3cret")];
    let empty = dir.join("empty.redb");
    let o = rowkit(&gateway, &["admin", "backup", empty.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stderr(&o).contains("UNAUTHENTICATED"), "{o:?}");
    assert!(!empty.exists());
    let o = rowkit(&gateway, &["admin", "backup", "relative.redb"], &token);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(stderr(&o).contains("not an absolute path"), "{o:?}");
    // Nowhere outside the backup directory, however the path is spelled.
    let outside = std::env::temp_dir().join(format!("rowkit-outside-{}.redb", std::process::id()));
    let sneaky = dir.join("..").join(outside.file_name().unwrap());
    for path in [&outside, &sneaky, &PathBuf::from("/dev/full")] {
        let o = rowkit(
            &gateway,
            &["admin", "backup", path.to_str().unwrap()],
            &token,
        );
        assert_eq!(o.status.code(), Some(1), "{path:?}: {o:?}");
        assert!(
            stderr(&o).contains("outside the server's backup directory"),
            "{o:?}"
        );
    }
    assert!(!outside.exists());
    // Other calls are not served at this address.
    let o = rowkit(&gateway, &["admin", "list-tables"], &token);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stderr(&o).contains("emulator="), "{o:?}");
    let o = rowkit(
        &gateway,
        &["admin", "backup", empty.to_str().unwrap()],
        &token,
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(contents(&empty, &[]), Contents::new());
    drop(server);

    // A server without --backup-dir takes no backups.
    let (server, http, _) = serve_grpc("memory:", &[]);
    let o = rowkit(
        &format!("http://{http}"),
        &["admin", "backup", dir.join("none.redb").to_str().unwrap()],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stderr(&o).contains("--backup-dir"), "{o:?}");
    assert!(!dir.join("none.redb").exists());
    drop(server);

    // A memory store's contents, through a server without a token.
    let (server, http, grpc) = serve_grpc("memory:", &backup_dir);
    let client = grpc_client(&grpc);
    client
        .create_table_with_splits("m", &[ColumnFamily::new("cf")], &[b"k".to_vec()])
        .unwrap();
    for (row, value) in [("r1", "one"), ("r2", "two")] {
        let request = set_cell(
            "m",
            row.as_bytes(),
            Timestamp::from_millis(5),
            value.as_bytes(),
        );
        client.execute(request, Timestamp::from_secs(1)).unwrap();
    }
    let backup = dir.join("memory.redb");
    let gateway = format!("http://{http}");
    let o = rowkit(
        &gateway,
        &["admin", "backup", backup.to_str().unwrap()],
        &[],
    );
    assert!(o.status.success(), "{o:?}");
    drop(server);
    let cell = |value: &str| Cell {
        family: "cf".into(),
        qualifier: b"q".to_vec(),
        timestamp: Timestamp::from_millis(5),
        value: value.as_bytes().to_vec(),
        labels: Vec::new(),
    };
    let expected: Contents = [(
        "m".to_string(),
        (
            vec![ColumnFamily::new("cf")],
            vec![b"k".to_vec()],
            vec![
                (b"r1".to_vec(), vec![cell("one")]),
                (b"r2".to_vec(), vec![cell("two")]),
            ],
        ),
    )]
    .into();
    assert_eq!(contents(&backup, &[]), expected);
    std::fs::remove_dir_all(&dir).unwrap();
}
