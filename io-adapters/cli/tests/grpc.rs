//! `rowkit serve --grpc` as a real process: `cbt` (Google's Go client, through
//! `BIGTABLE_EMULATOR_HOST`) runs every table and row command against it over `memory:` and
//! `embedded:`, instance commands and `waitforreplication` included; the address rule is the
//! gateway's; a server killed with SIGKILL while clients write keeps, after a restart on the
//! same file, every write it acknowledged; `cbt` reads rows larger than a response;
//! SampleRowKeys of a 50 000-row table gives its split points.
#![allow(clippy::unwrap_used)]

mod support;

use support::{cbt, cbt_ok, cbt_or_skip, serve_grpc};

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rowkit_bigtable::BigtableStore;
use rowkit_codec::model::{ColumnFamily, Mutation, RowSet, Timestamp};
use rowkit_store::Store;
use rowkit_statemachines::{MutateRowRequest, ReadRowsRequest, Request};

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rowkit-grpc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn cbt_commands(store: &str) {
    let (_server, _, host) = serve_grpc(store, &[]);
    assert_eq!(cbt_ok(&host, &["ls"]).trim(), "");
    cbt_ok(&host, &["createtable", "t1", "families=cf:maxversions=3"]);
    cbt_ok(&host, &["createtable", "t2"]);
    assert_eq!(cbt_ok(&host, &["ls"]).trim(), "t1\nt2");
    cbt_ok(&host, &["createfamily", "t2", "cg"]);
    cbt_ok(
        &host,
        &[
            "setgcpolicy",
            "t2",
            "cg",
            "maxage=1d",
            "or",
            "maxversions=2",
        ],
    );
    let families = cbt_ok(&host, &["ls", "t2"]);
    assert!(families.contains("cg"), "{families}");
    assert!(
        families.contains("age() > 1d || versions() > 2"),
        "{families}"
    );
    let families = cbt_ok(&host, &["ls", "t1"]);
    assert!(families.contains("versions() > 3"), "{families}");
    // A family the table does not have: production's NOT_FOUND reaches cbt.
    let unknown = cbt(&host, &["set", "t2", "r", "nope:q=v"]);
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("Requested column family not found"),
        "{unknown:?}"
    );
    for (row, value) in [("r1", "v1"), ("r2", "v2"), ("r3", "v3")] {
        cbt_ok(&host, &["set", "t2", row, &format!("cg:q={value}")]);
    }
    cbt_ok(&host, &["set", "t2", "r1", "cg:q=v1b", "cg:p=p1"]);
    let read = cbt_ok(&host, &["read", "t2"]);
    for text in [
        "r1", "r2", "r3", "cg:q", "\"v1b\"", "\"v1\"", "cg:p", "\"p1\"",
    ] {
        assert!(read.contains(text), "{text} not in\n{read}");
    }
    let latest = cbt_ok(&host, &["read", "t2", "cells-per-column=1", "prefix=r1"]);
    assert!(
        latest.contains("\"v1b\"") && !latest.contains("\"v1\""),
        "{latest}"
    );
    assert!(!latest.contains("r2"), "{latest}");
    let one = cbt_ok(&host, &["lookup", "t2", "r2"]);
    assert!(
        one.contains("r2") && one.contains("\"v2\"") && !one.contains("r1"),
        "{one}"
    );
    assert_eq!(cbt_ok(&host, &["count", "t2"]).trim(), "3");
    // deletefamily: the family and its cells go, the other family's stay.
    cbt_ok(&host, &["createfamily", "t2", "gone"]);
    cbt_ok(&host, &["set", "t2", "r1", "gone:q=doomed"]);
    cbt_ok(&host, &["set", "t2", "r9", "gone:q=doomed"]);
    assert_eq!(cbt_ok(&host, &["count", "t2"]).trim(), "4");
    cbt_ok(&host, &["deletefamily", "t2", "gone"]);
    assert!(!cbt_ok(&host, &["ls", "t2"]).contains("gone"));
    let read = cbt_ok(&host, &["read", "t2"]);
    assert!(!read.contains("doomed") && !read.contains("r9"), "{read}");
    assert!(read.contains("\"v1b\""), "{read}");
    assert_eq!(cbt_ok(&host, &["count", "t2"]).trim(), "3");
    cbt_ok(&host, &["deleterow", "t2", "r2"]);
    assert_eq!(cbt_ok(&host, &["count", "t2"]).trim(), "2");
    assert!(!cbt_ok(&host, &["lookup", "t2", "r2"]).contains("\"v2\""));
    cbt_ok(&host, &["deleteallrows", "t2"]);
    assert_eq!(cbt_ok(&host, &["count", "t2"]).trim(), "0");
    cbt_ok(&host, &["deletetable", "t1"]);
    assert_eq!(cbt_ok(&host, &["ls"]).trim(), "t2");
    // Deleting a table that is not there fails as it does on Bigtable.
    assert!(!cbt(&host, &["deletetable", "t1"]).status.success());
}

#[test]
fn cbt_commands_over_memory() {
    if cbt_or_skip("cbt_commands_over_memory") {
        cbt_commands("memory:");
    }
}

#[test]
fn cbt_commands_over_embedded() {
    if cbt_or_skip("cbt_commands_over_embedded") {
        let dir = temp_dir("cbt");
        cbt_commands(&format!("embedded:{}", dir.join("db.redb").display()));
    }
}

/// `cbt`'s instance commands and `waitforreplication` (consistency tokens) answer as on a
/// one-cluster production instance.
fn cbt_instance_commands(store: &str) {
    let (_server, _, host) = serve_grpc(store, &[]);
    cbt_ok(&host, &["createtable", "t", "families=cf"]);
    cbt_ok(&host, &["set", "t", "r1", "cf:q=v"]);
    // Returns once CheckConsistency says the token's writes are everywhere.
    cbt_ok(&host, &["waitforreplication", "t"]);
    let missing = cbt(&host, &["waitforreplication", "nope"]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("NotFound"),
        "{missing:?}"
    );
    // One instance, listed under the id the README documents.
    let instances = cbt_ok(&host, &["listinstances"]);
    let listed: Vec<&str> = instances
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(listed, ["rowkit"], "{instances}");
    let clusters = cbt_ok(&host, &["listclusters"]);
    assert!(clusters.contains("i-c1"), "{clusters}");
    assert!(clusters.contains("READY"), "{clusters}");
    assert_eq!(cbt_ok(&host, &["ls"]).trim(), "t");
    // A family without a GC rule is listed as such (its map entry carries an empty value).
    let families = cbt_ok(&host, &["ls", "t"]);
    assert!(families.contains("cf"), "{families}");
}

#[test]
fn cbt_instance_commands_over_memory() {
    if cbt_or_skip("cbt_instance_commands_over_memory") {
        cbt_instance_commands("memory:");
    }
}

#[test]
fn cbt_instance_commands_over_embedded() {
    if cbt_or_skip("cbt_instance_commands_over_embedded") {
        let dir = temp_dir("cbt-instance");
        cbt_instance_commands(&format!("embedded:{}", dir.join("db.redb").display()));
    }
}

#[test]
fn grpc_beyond_loopback_needs_a_token() {
    let out = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args(["--store", "memory:", "serve", "--listen", "127.0.0.1:0"])
        .args(["--grpc", "0.0.0.0:0"])
        .env_remove("ROWKIT_GATEWAY_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--token"), "{err}");
}

fn store_at(host: &str) -> BigtableStore {
    BigtableStore::open(&format!("bigtable://p/i?emulator={host}")).unwrap()
}

fn set(row: u64) -> Request {
    Request::MutateRow(MutateRowRequest {
        table: "t".into(),
        row_key: format!("row{row:08}").into_bytes(),
        mutations: vec![Mutation::SetCell {
            family: "cf".into(),
            qualifier: b"q".to_vec(),
            timestamp: Timestamp::from_millis(1),
            value: row.to_be_bytes().to_vec(),
        }],
        ..Default::default()
    })
}

/// Writers keep writing while the server is killed with SIGKILL after the first
/// `ACKED_BEFORE_KILL` acknowledged writes; restarted on the same file, the server still has
/// every row whose write was acknowledged.
#[test]
fn every_acknowledged_write_survives_kill_9() {
    const WRITERS: u64 = 4;
    const ACKED_BEFORE_KILL: u64 = 200;
    let dir = temp_dir("kill9");
    let store_arg = format!("embedded:{}", dir.join("db.redb").display());
    let (mut server, _, host) = serve_grpc(&store_arg, &[]);
    store_at(&host)
        .create_table("t", &[ColumnFamily::new("cf")])
        .unwrap();
    let acked: Arc<std::sync::Mutex<Vec<u64>>> = Arc::default();
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (acked, count, stop, host) =
                (acked.clone(), count.clone(), stop.clone(), host.clone());
            std::thread::spawn(move || {
                let store = store_at(&host);
                let mut row = w;
                while !stop.load(Ordering::SeqCst) {
                    // Only a write the server answered OK counts; the ones in flight at the
                    // kill fail (or are retried and then fail) and are not counted.
                    if store.execute(set(row), Timestamp::from_secs(1)).is_ok() {
                        acked.lock().unwrap().push(row);
                        count.fetch_add(1, Ordering::SeqCst);
                    } else {
                        return;
                    }
                    row += WRITERS;
                }
            })
        })
        .collect();
    while count.load(Ordering::SeqCst) < ACKED_BEFORE_KILL {
        std::thread::yield_now();
    }
    server.0.kill().unwrap(); // SIGKILL
    server.0.wait().unwrap();
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() as u64 >= ACKED_BEFORE_KILL);

    let (_server, _, host) = serve_grpc(&store_arg, &[]);
    let read = ReadRowsRequest {
        table: "t".into(),
        rows: RowSet::all(),
        ..Default::default()
    };
    let rows =
        rowkit_client::read_rows_blocking(&store_at(&host), read, Timestamp::from_secs(1)).unwrap();
    let present: std::collections::BTreeSet<Vec<u8>> = rows.into_iter().map(|r| r.key).collect();
    let missing: Vec<u64> = acked
        .iter()
        .copied()
        .filter(|row| !present.contains(format!("row{row:08}").as_bytes()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged writes lost after kill -9: {missing:?}",
        missing.len(),
        acked.len()
    );
}

/// `cbt lookup` and `cbt read` of rows larger than a response (one 2 MiB cell; 1 500 cells of
/// 1 KiB) between small rows: the Go client checks that every ReadRows response ends on a row
/// boundary, so each row must arrive within one response.
fn cbt_reads_big_rows(store: &str) {
    let (_server, _, host) = serve_grpc(store, &[]);
    cbt_ok(&host, &["createtable", "t", "families=cf"]);
    let big_value: Vec<u8> = (0..2u32 << 20).map(|i| b'a' + (i % 26) as u8).collect();
    let mut rows = vec![(
        b"big".to_vec(),
        vec![Mutation::SetCell {
            family: "cf".into(),
            qualifier: b"v".to_vec(),
            timestamp: Timestamp::from_millis(1),
            value: big_value.clone(),
        }],
    )];
    rows.push((
        b"wide".to_vec(),
        (0..1500)
            .map(|i| Mutation::SetCell {
                family: "cf".into(),
                qualifier: format!("q{i:04}").into_bytes(),
                timestamp: Timestamp::from_millis(1),
                value: vec![b'w'; 1024],
            })
            .collect(),
    ));
    for key in ["a", "c", "x"] {
        rows.push((
            key.as_bytes().to_vec(),
            vec![Mutation::SetCell {
                family: "cf".into(),
                qualifier: b"s".to_vec(),
                timestamp: Timestamp::from_millis(1),
                value: b"small".to_vec(),
            }],
        ));
    }
    let writer = store_at(&host);
    for (row_key, mutations) in rows {
        let request = Request::MutateRow(MutateRowRequest {
            table: "t".into(),
            row_key,
            mutations,
            ..Default::default()
        });
        writer.execute(request, Timestamp::from_secs(1)).unwrap();
    }
    let big = cbt_ok(&host, &["lookup", "t", "big"]);
    let printed = format!("\"{}\"", String::from_utf8(big_value).unwrap());
    assert!(
        big.contains(&printed),
        "the 2 MiB value is not in cbt's output"
    );
    let wide = cbt_ok(&host, &["lookup", "t", "wide"]);
    assert_eq!(wide.matches("cf:q").count(), 1500, "{}", &wide[..200]);
    let all = cbt_ok(&host, &["read", "t"]);
    assert!(all.contains(&printed));
    assert_eq!(all.matches("cf:q").count(), 1500);
    assert_eq!(all.matches("\"small\"").count(), 3);
    assert_eq!(cbt_ok(&host, &["count", "t"]).trim(), "5");
}

#[test]
fn cbt_reads_big_rows_over_memory() {
    if cbt_or_skip("cbt_reads_big_rows_over_memory") {
        cbt_reads_big_rows("memory:");
    }
}

#[test]
fn cbt_reads_big_rows_over_embedded() {
    if cbt_or_skip("cbt_reads_big_rows_over_embedded") {
        let dir = temp_dir("big");
        cbt_reads_big_rows(&format!("embedded:{}", dir.join("db.redb").display()));
    }
}

/// A 50 000-row table created by `cbt` with split points: SampleRowKeys through the server
/// gives a sample about every 64 KiB of rows, every split point, the last row key and the
/// total (all worked out here from the rows written); and a filtered scan that skips almost
/// every row reaches both Go's client and rowkit's (through its scan markers).
fn samples_of_a_big_table(store: &str) {
    const ROWS: usize = 50_000;
    let (_server, _, host) = serve_grpc(store, &[]);
    cbt_ok(
        &host,
        &[
            "createtable",
            "t",
            "families=cf",
            "splits=m,row00025000x,zz",
        ],
    );
    let client = store_at(&host);
    let key = |i: usize| format!("row{i:08}").into_bytes();
    for batch in (0..ROWS).collect::<Vec<_>>().chunks(5000) {
        let entries = batch
            .iter()
            .map(|&i| rowkit_statemachines::MutateRowsEntry {
                row_key: key(i),
                mutations: vec![Mutation::SetCell {
                    family: "cf".into(),
                    qualifier: b"q".to_vec(),
                    timestamp: Timestamp::from_millis(1),
                    value: if i == ROWS - 1 {
                        b"last".to_vec()
                    } else {
                        vec![b'v'; 75]
                    },
                }],
            })
            .collect();
        let request = Request::MutateRows(rowkit_statemachines::MutateRowsRequest {
            table: "t".into(),
            entries,
            ..Default::default()
        });
        match client.execute(request, Timestamp::from_secs(1)).unwrap() {
            rowkit_store::Reply::Stream(parts) => {
                for part in parts {
                    let rowkit_statemachines::Response::MutateRowsPart(p) = part.unwrap() else {
                        panic!("not a MutateRows part")
                    };
                    assert!(p.entries.iter().all(|e| e.result.is_ok()));
                }
            }
            rowkit_store::Reply::Unary(r) => panic!("{r:?}"),
        }
    }
    // Row size: key 11 + family 2 + qualifier 1 + timestamp 8 + value.
    let row_size = |i: usize| 11 + 2 + 1 + 8 + if i == ROWS - 1 { 4 } else { 75 };
    let total: i64 = (0..ROWS).map(row_size).sum();
    let request = Request::SampleRowKeys(rowkit_statemachines::SampleRowKeysRequest {
        table: "t".into(),
        ..Default::default()
    });
    let samples: Vec<(Vec<u8>, i64)> = match client.execute(request, Timestamp::from_secs(1)) {
        Ok(rowkit_store::Reply::Stream(parts)) => parts
            .map(|p| match p.unwrap() {
                rowkit_statemachines::Response::SampleRowKeysPart(s) => (s.row_key, s.offset_bytes),
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    };
    // 4.85 MB at one sample per 64 KiB: 74 from the interval, give or take the split points.
    assert!(
        (60..=90).contains(&samples.len()),
        "{} samples",
        samples.len()
    );
    assert_eq!(samples.last().unwrap(), &(Vec::new(), total));
    let keys: Vec<&[u8]> = samples.iter().map(|(k, _)| k.as_slice()).collect();
    for split in [&b"m"[..], b"row00025000x", b"zz"] {
        assert!(keys.contains(&split), "split {split:?} missing");
    }
    let last = key(ROWS - 1);
    assert!(keys.contains(&last.as_slice()));
    assert!(keys[..keys.len() - 1].windows(2).all(|w| w[0] < w[1]));
    assert!(samples.windows(2).all(|w| w[0].1 <= w[1].1));
    // Every sample's offset is the size of the rows before its key.
    for (k, offset) in &samples[..samples.len() - 1] {
        let before: i64 = (0..ROWS).filter(|&i| key(i) < *k).map(row_size).sum();
        assert_eq!(*offset, before, "offset of {}", String::from_utf8_lossy(k));
    }
    // A scan whose filter drops all but the last row: 49 scan markers on the way.
    let found = cbt_ok(&host, &["read", "t", "regex=row00049999"]);
    assert!(found.contains("\"last\""), "{found}");
    let read = ReadRowsRequest {
        table: "t".into(),
        rows: RowSet::all(),
        filter: Some(rowkit_codec::model::RowFilter::ValueRegex(b"last".to_vec())),
        ..Default::default()
    };
    let rows = rowkit_client::read_rows_blocking(&client, read, Timestamp::from_secs(1)).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].key, last);
}

#[test]
fn samples_of_a_big_table_over_memory() {
    if cbt_or_skip("samples_of_a_big_table_over_memory") {
        samples_of_a_big_table("memory:");
    }
}

#[test]
fn samples_of_a_big_table_over_embedded() {
    if cbt_or_skip("samples_of_a_big_table_over_embedded") {
        let dir = temp_dir("samples");
        samples_of_a_big_table(&format!("embedded:{}", dir.join("db.redb").display()));
    }
}
