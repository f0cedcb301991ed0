//! Crash safety of [`RedbStore`]: a child process writes rows to a redb file and acknowledges
//! each durable write on stdout; the parent SIGKILLs it at a random moment, reopens the file and
//! checks that every acknowledged mutation is there and that no row is partial. The same file is
//! crashed and recovered again on every iteration, so recovery itself is crashed into too.
//!
//! The child is this test executable re-run with `--exact child_writer` and [`CHILD_DB`] set;
//! without that variable `child_writer` returns at once, so a normal test run skips it.
//!
//! Seed: `ROWKIT_CRASH_SEED` (default fixed); the kill moments derive from it, and a failure
//! prints it.
#![cfg(feature = "redb")]
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use rowkit_codec::model::{ColumnFamily, Mutation, RowRange, Timestamp, row_size};
use rowkit_statemachines::{Code, MutateRowRequest, Request, SplitMix64, StoreError};
use rowkit_store::{RedbStore, Store, TableStorage};

use common::{ChildWriter, crash_seed, temp_dir};

/// Tells the child which database file to write.
const CHILD_DB: &str = "ROWKIT_CRASH_CHILD_DB";
/// Tells the child the index of its first mutation.
const CHILD_START: &str = "ROWKIT_CRASH_CHILD_START";
const TABLE: &str = "crash";
const FAMILY: &str = "cf";
/// Cells written by every mutation (all to one row).
const CELLS: usize = 5;
/// Rows rewritten in place by odd mutations, to crash into overwrites as well as inserts.
const HOT_ROWS: u64 = 4;
const ITERATIONS: usize = 24;
/// The child stops by itself after this many mutations, should the parent never kill it.
const CHILD_LIMIT: u64 = 20_000;

/// The row mutation `i` writes: even ones insert a fresh row, odd ones replace a hot row whole.
fn row_of(i: u64) -> Vec<u8> {
    if i.is_multiple_of(2) {
        format!("new/{i:08}").into_bytes()
    } else {
        format!("hot/{}", (i / 2) % HOT_ROWS).into_bytes()
    }
}

/// Values of mutation `i`: tagged with `i`, 0.2-2 KiB so that one commit spans several pages.
fn value_of(i: u64, cell: usize) -> Vec<u8> {
    let mut v = format!("{i}:{cell}:").into_bytes();
    let len = 200 + ((i as usize * 977 + cell * 131) % 1848);
    v.resize(len, b'a' + (i % 26) as u8);
    v
}

fn qualifier(cell: usize) -> Vec<u8> {
    format!("q{cell}").into_bytes()
}

fn mutations_of(i: u64) -> Vec<Mutation> {
    let mut out = Vec::with_capacity(CELLS + 1);
    if i % 2 == 1 {
        out.push(Mutation::DeleteFromRow);
    }
    for cell in 0..CELLS {
        out.push(Mutation::SetCell {
            family: FAMILY.into(),
            qualifier: qualifier(cell),
            timestamp: Timestamp::from_millis(i as i64),
            value: value_of(i, cell),
        });
    }
    out
}

/// Mutation `i` through the public path: one `MutateRow` request.
fn write_mutation(store: &RedbStore, i: u64) -> Result<(), StoreError> {
    let request = Request::MutateRow(MutateRowRequest {
        table: TABLE.into(),
        row_key: row_of(i),
        mutations: mutations_of(i),
        ..Default::default()
    });
    store.execute(request, Timestamp::from_secs(1)).map(|_| ())
}

/// The child: writes mutations `start..` forever, printing `@@ack i` after each one is durable.
#[test]
fn child_writer() {
    let Ok(path) = std::env::var(CHILD_DB) else {
        return;
    };
    let start: u64 = std::env::var(CHILD_START).unwrap().parse().unwrap();
    let store = RedbStore::open(&path).unwrap();
    match TableStorage::create_table(&store, TABLE, &[ColumnFamily::new(FAMILY)]) {
        Err(e) if e.code == Code::AlreadyExists => {}
        other => other.unwrap(),
    }
    let mut out = std::io::stdout().lock();
    for i in start..start + CHILD_LIMIT {
        write_mutation(&store, i).unwrap();
        // A leading newline keeps the marker on its own line whatever the harness printed.
        writeln!(out, "\n@@ack {i}").unwrap();
        out.flush().unwrap();
    }
}

/// What the parent learns from one child run.
struct Run {
    /// Indexes acknowledged, in order.
    acked: Vec<u64>,
}

fn run_child(path: &Path, start: u64, rng: &mut SplitMix64) -> Run {
    let mut child = ChildWriter::spawn(
        "child_writer",
        &[
            (CHILD_DB, path.to_str().unwrap().to_string()),
            (CHILD_START, start.to_string()),
        ],
    );
    // Kill after a random number of acknowledgements (0 = possibly while the child is still
    // opening and recovering the file) plus a random sub-commit delay.
    let wait_for = rng.below(20);
    let extra = Duration::from_micros(rng.below(4000));
    let mut acked = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while (acked.len() as u64) < wait_for {
        // EOF or timeout: the child died by itself or hangs — either is a failure.
        let ack = child.next_ack(deadline, || format!("{} acks", acked.len()));
        acked.push(ack.parse().unwrap());
    }
    let rest = child.kill_after(extra);
    acked.extend(rest.iter().map(|ack| ack.parse::<u64>().unwrap()));
    Run { acked }
}

/// Reads the whole table back, checks it against what was acknowledged, and returns each row's
/// mutation index.
///
/// `last_acked` maps each row to the last acknowledged mutation of it; `in_flight` is the one
/// mutation that may have committed without its acknowledgement reaching us.
fn verify(
    path: &Path,
    last_acked: &BTreeMap<Vec<u8>, u64>,
    in_flight: u64,
) -> BTreeMap<Vec<u8>, u64> {
    let store = RedbStore::open(path).unwrap();
    let all = RowRange::all();
    let mut seen = BTreeMap::new();
    let mut after: Option<Vec<u8>> = None;
    while let Some(row) = TableStorage::next_row(&store, TABLE, &all, after.as_deref(), false)
        .unwrap_or_else(|e| panic!("read after crash: {e}"))
    {
        // Whole row: exactly CELLS cells, all from one mutation.
        assert_eq!(
            row.cells.len(),
            CELLS,
            "partial row {:?}",
            String::from_utf8_lossy(&row.key)
        );
        let i = row.cells[0].timestamp.0 / 1000;
        let i = u64::try_from(i).unwrap();
        assert_eq!(
            row_of(i),
            row.key,
            "row holds the cells of another mutation"
        );
        for (cell_index, cell) in row.cells.iter().enumerate() {
            assert_eq!(cell.family, FAMILY);
            assert_eq!(cell.qualifier, qualifier(cell_index));
            assert_eq!(cell.timestamp, Timestamp::from_millis(i as i64));
            assert!(
                cell.value == value_of(i, cell_index),
                "row {:?}: cell {cell_index} is not from mutation {i}",
                String::from_utf8_lossy(&row.key)
            );
        }
        let (key, size) = TableStorage::next_row_size(&store, TABLE, &all, after.as_deref())
            .unwrap()
            .unwrap();
        assert_eq!(key, row.key);
        assert_eq!(size, row_size(&row.key, &row.cells), "stored row size");
        seen.insert(row.key.clone(), i);
        after = Some(row.key);
    }
    for (key, &acked) in last_acked {
        let found = seen.get(key).copied();
        let key_text = String::from_utf8_lossy(key);
        // A later, unacknowledged mutation of the same row may have landed too.
        assert!(
            found == Some(acked) || found == Some(in_flight),
            "row {key_text}: acknowledged mutation {acked} lost (found {found:?})"
        );
    }
    for (key, &i) in &seen {
        assert!(
            last_acked.get(key) == Some(&i) || i == in_flight,
            "row {} from mutation {i} that was neither acknowledged nor in flight",
            String::from_utf8_lossy(key)
        );
    }
    seen
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let seed = crash_seed(0x5eed_c0ffee_u64);
    let dir = temp_dir("crash");
    let path = dir.join("crash.redb");
    let started = Instant::now();
    let mut rng = SplitMix64::new(seed);
    let mut last_acked: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    let mut next = 0u64;
    let mut total_acks = 0;
    // Kills that fell between a commit and its acknowledgement.
    let mut landed_unacked = 0;
    for iteration in 0..ITERATIONS {
        let run = run_child(&path, next, &mut rng);
        for (expected, &i) in (next..).zip(&run.acked) {
            assert_eq!(
                i, expected,
                "seed {seed}, iteration {iteration}: acks out of order"
            );
            last_acked.insert(row_of(i), i);
        }
        total_acks += run.acked.len();
        let in_flight = next + run.acked.len() as u64;
        let seen = std::panic::catch_unwind(|| verify(&path, &last_acked, in_flight))
            .unwrap_or_else(|_| {
                panic!(
                    "seed {seed}, iteration {iteration}: verification failed (file kept: {})",
                    path.display()
                )
            });
        // The in-flight mutation may have committed without its acknowledgement; if so it is
        // now the row's state, and later checks must expect it.
        if seen.get(&row_of(in_flight)) == Some(&in_flight) {
            last_acked.insert(row_of(in_flight), in_flight);
            landed_unacked += 1;
        }
        next = in_flight + 1;
    }
    eprintln!(
        "crash test: {ITERATIONS} kills, {total_acks} acknowledged mutations, \
         {landed_unacked} committed but unacknowledged, seed {seed}, {:?}",
        started.elapsed()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
