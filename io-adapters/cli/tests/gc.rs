//! Garbage collection with the real `rowkit` binary: `rowkit serve --grpc` collects in the
//! background while Bigtable clients (rowkit's own adapter, over gRPC) overwrite cells, and
//! `rowkit admin gc` collects offline and reports what it removed.
#![allow(clippy::unwrap_used)]

mod support;

use support::{Server, serve_grpc};

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rowkit_bigtable::BigtableStore;
use rowkit_codec::model::{ColumnFamily, GcRule, Mutation, Row, RowSet, Timestamp};
use rowkit_store::Store;
use rowkit_statemachines::{MutateRowRequest, ReadRowsRequest, Request};
use serde_json::{Value, json};

/// A fresh directory for one test's files, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("rowkit-gc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn store(&self) -> String {
        format!("embedded:{}", self.0.join("t.redb").display())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn client(host: &str) -> BigtableStore {
    BigtableStore::open(&format!("bigtable://p/i?emulator={host}")).unwrap()
}

fn set(row: &str, family: &str, qualifier: &str, timestamp: Timestamp, value: u64) -> Request {
    Request::MutateRow(MutateRowRequest {
        table: "t".into(),
        row_key: row.as_bytes().to_vec(),
        mutations: vec![Mutation::SetCell {
            family: family.into(),
            qualifier: qualifier.as_bytes().to_vec(),
            timestamp,
            value: value.to_be_bytes().to_vec(),
        }],
        ..Default::default()
    })
}

fn wall_clock() -> Timestamp {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros();
    Timestamp(i64::try_from(micros).unwrap())
}

fn read_all(host: &str) -> Vec<Row> {
    let read = ReadRowsRequest {
        table: "t".into(),
        rows: RowSet::all(),
        ..Default::default()
    };
    rowkit_client::read_rows_blocking(&client(host), read, wall_clock()).unwrap()
}

/// Cells per (row, family, qualifier).
fn versions(rows: &[Row]) -> Vec<((String, String, String), usize)> {
    let mut out: std::collections::BTreeMap<(String, String, String), usize> = Default::default();
    for row in rows {
        for cell in &row.cells {
            let column = (
                String::from_utf8_lossy(&row.key).into_owned(),
                cell.family.clone(),
                String::from_utf8_lossy(&cell.qualifier).into_owned(),
            );
            *out.entry(column).or_default() += 1;
        }
    }
    out.into_iter().collect()
}

/// Reads the table every 250 ms until `done` holds, for at most `limit`; returns the last
/// read and whether `done` held.
fn poll(host: &str, limit: Duration, done: impl Fn(&[Row]) -> bool) -> (Vec<Row>, bool) {
    let deadline = Instant::now() + limit;
    loop {
        let rows = read_all(host);
        if done(&rows) {
            return (rows, true);
        }
        if Instant::now() >= deadline {
            return (rows, false);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

const ROWS: usize = 5;
const QUALIFIERS: [&str; 2] = ["a", "b"];
const WRITERS: usize = 4;
const OVERWRITES: usize = 10_000;

/// `OVERWRITES` writes over `ROWS` × 2 columns of family `v` (`max_versions` 1), each column's
/// versions at increasing timestamps, from `WRITERS` client threads; returns the value of each
/// column's last write.
fn overwrite(host: &str) -> Vec<((String, String, String), u64)> {
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let host = host.to_string();
            std::thread::spawn(move || {
                let store = client(&host);
                let mut last = Vec::new();
                // Writer w owns the columns i with i % WRITERS == w.
                let columns: Vec<usize> = (0..ROWS * QUALIFIERS.len())
                    .filter(|i| i % WRITERS == w)
                    .collect();
                for n in 0..OVERWRITES / WRITERS {
                    let column = columns[n % columns.len()];
                    let (row, qualifier) = (
                        format!("row{}", column / QUALIFIERS.len()),
                        QUALIFIERS[column % QUALIFIERS.len()],
                    );
                    let ts = Timestamp::from_millis(1 + n as i64);
                    let value = (w * OVERWRITES + n) as u64;
                    store
                        .execute(set(&row, "v", qualifier, ts, value), wall_clock())
                        .unwrap();
                    last.push(((row, "v".to_string(), qualifier.to_string()), value));
                }
                last
            })
        })
        .collect();
    let mut last = std::collections::BTreeMap::new();
    for thread in threads {
        last.extend(thread.join().unwrap());
    }
    last.into_iter().collect()
}

/// The issue's case: a table with `maxversions=1` overwritten 10 000 times through a running
/// server on a persistent file holds one cell per column within a minute, and each is the
/// column's last write.
#[test]
fn serve_collects_overwrites_in_the_background() {
    let scratch = Scratch::new("serve");
    let (server, _, host) = serve_grpc(&scratch.store(), &["--gc-interval", "1"]);
    client(&host)
        .create_table("t", &[ColumnFamily::max_versions("v", 1)])
        .unwrap();
    let last = overwrite(&host);
    assert_eq!(last.len(), ROWS * QUALIFIERS.len());
    let (rows, done) = poll(&host, Duration::from_secs(60), |rows| {
        versions(rows).iter().all(|(_, n)| *n == 1)
    });
    assert!(done, "not collected within a minute: {:?}", versions(&rows));
    let newest: Vec<((String, String, String), u64)> = rows
        .iter()
        .flat_map(|row| {
            row.cells.iter().map(|cell| {
                let column = (
                    String::from_utf8_lossy(&row.key).into_owned(),
                    cell.family.clone(),
                    String::from_utf8_lossy(&cell.qualifier).into_owned(),
                );
                (
                    column,
                    u64::from_be_bytes(cell.value[..].try_into().unwrap()),
                )
            })
        })
        .collect();
    assert_eq!(newest, last, "the last write of a column was collected");
    // Ctrl-C stops the server, its GC thread included, and closes the file: another process
    // opens it and finds the collected table.
    let mut server = server;
    interrupt_and_wait(&mut server);
    let dump: Value =
        serde_json::from_str(&ok(&scratch, &["--json", "admin", "dump", "t"])).unwrap();
    assert_eq!(dump["cells"].as_array().unwrap().len(), last.len());
}

/// Sends SIGINT (what Ctrl-C sends) and waits up to 10 s for a clean exit.
fn interrupt_and_wait(server: &mut Server) {
    let kill = Command::new("kill")
        .args(["-INT", &server.0.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            assert!(
                status.success(),
                "rowkit serve exited with {status} on SIGINT"
            );
            return;
        }
        assert!(
            Instant::now() < deadline,
            "rowkit serve still runs 10 s after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// With `--gc-interval 0` nothing is collected: the versions stay (the same reads that see one
/// cell per column above see every version here).
#[test]
fn serve_without_gc_keeps_every_version() {
    let (_server, _, host) = serve_grpc("memory:", &["--gc-interval", "0"]);
    let store = client(&host);
    store
        .create_table("t", &[ColumnFamily::max_versions("v", 1)])
        .unwrap();
    for n in 0..50 {
        let ts = Timestamp::from_millis(1 + n);
        store
            .execute(set("row0", "v", "a", ts, n as u64), wall_clock())
            .unwrap();
    }
    std::thread::sleep(Duration::from_secs(3));
    let rows = read_all(&host);
    assert_eq!(
        versions(&rows),
        vec![(("row0".into(), "v".into(), "a".into()), 50)]
    );
}

/// `maxage`: cells older than the family's age go in the background (here on `memory:`), the
/// fresh one stays.
#[test]
fn serve_collects_old_cells_in_the_background() {
    let (_server, _, host) = serve_grpc("memory:", &["--gc-interval", "1"]);
    let store = client(&host);
    let ten_minutes = 600_000_000;
    store
        .create_table(
            "t",
            &[ColumnFamily {
                name: "age".into(),
                gc_rule: Some(GcRule::MaxAge(ten_minutes)),
            }],
        )
        .unwrap();
    // 1 000 versions between two hours and one hour old, then one at the server's time.
    let start = Timestamp::from_millis(wall_clock().0 / 1000 - 2 * 3_600_000);
    for n in 0..1_000 {
        let ts = Timestamp(start.0 + n * 3_600_000);
        store
            .execute(set("row0", "age", "q", ts, n as u64), wall_clock())
            .unwrap();
    }
    store
        .execute(
            set("row0", "age", "q", Timestamp::SERVER_TIME, 1_000),
            wall_clock(),
        )
        .unwrap();
    let (rows, done) = poll(&host, Duration::from_secs(60), |rows| {
        versions(rows).iter().all(|(_, n)| *n == 1)
    });
    assert!(done, "not collected within a minute: {:?}", versions(&rows));
    assert_eq!(rows[0].cells[0].value, 1_000u64.to_be_bytes());
}

fn rowkit(scratch: &Scratch, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .arg("--store")
        .arg(scratch.store())
        .args(args)
        .env_remove("ROWKIT_STORE")
        .output()
        .unwrap()
}

fn ok(scratch: &Scratch, args: &[&str]) -> String {
    let out = rowkit(scratch, args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// `rowkit admin gc` on a file: per table, the cells its rules remove (counted by hand from
/// what was written), in text and JSON; what is left is what the rules keep.
#[test]
fn admin_gc_removes_versions_offline() {
    let s = Scratch::new("admin");
    ok(
        &s,
        &[
            "admin",
            "create-table",
            "t",
            "--family",
            "v:maxversions=2",
            "--family",
            "keep",
        ],
    );
    ok(
        &s,
        &["admin", "create-table", "u", "--family", "old:maxage=1h"],
    );
    ok(&s, &["admin", "create-table", "plain", "--family", "cf"]);
    // t: 2 rows × 5 versions of v:q (3 go per row), 5 of keep:q (none go).
    for row in ["r1", "r2"] {
        for ms in 1..=5 {
            let ts = (ms * 1000).to_string();
            ok(
                &s,
                &[
                    "admin",
                    "set",
                    "t",
                    row,
                    "v:q=x",
                    "keep:q=y",
                    "--timestamp",
                    &ts,
                ],
            );
        }
    }
    // u: at --now 2024-01-01T02:00:00Z, cells of 00:30 and 00:59 are over an hour old, 01:30 is not.
    for ts in ["1704069000000000", "1704070740000000", "1704072600000000"] {
        ok(
            &s,
            &["admin", "set", "u", "r", "old:q=x", "--timestamp", ts],
        );
    }
    ok(
        &s,
        &[
            "admin",
            "set",
            "plain",
            "r",
            "cf:q=x",
            "--timestamp",
            "1000",
        ],
    );
    ok(
        &s,
        &[
            "admin",
            "set",
            "plain",
            "r",
            "cf:q=y",
            "--timestamp",
            "2000",
        ],
    );
    let now = ["--now", "2024-01-01T02:00:00Z"];
    let text = ok(&s, &[&["admin", "gc", "t", "plain"][..], &now].concat());
    assert_eq!(text, "t: 6 cell(s) removed\nplain: 0 cell(s) removed\n");
    let report: Value =
        serde_json::from_str(&ok(&s, &[&["--json", "admin", "gc"][..], &now].concat())).unwrap();
    assert_eq!(
        report,
        json!({"tables": [
            {"table": "plain", "deleted": 0},
            {"table": "t", "deleted": 0},
            {"table": "u", "deleted": 2},
        ], "deleted": 2})
    );
    let dump: Value = serde_json::from_str(&ok(&s, &["--json", "admin", "dump", "t"])).unwrap();
    assert_eq!(dump["cells"].as_array().unwrap().len(), 2 * (2 + 5));
    let dump: Value = serde_json::from_str(&ok(&s, &["--json", "admin", "dump", "u"])).unwrap();
    assert_eq!(dump["cells"].as_array().unwrap().len(), 1);
    // A table that does not exist: NOT_FOUND, exit 1.
    let missing = rowkit(&s, &["admin", "gc", "nope"]);
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
}
