#![allow(clippy::unwrap_used)]
//! The foundation's semantics suite (`rowkit_testkit::suite`) replayed on the Bigtable
//! emulator through the blocking [`BigtableStore`] and the sync driver — the same code path
//! the CLI and the schema suites use — and compared with the memory store, response by
//! response (rows with cell order, predicate results, read-modify-write rows, entry codes,
//! error codes).
//!
//! Cases marked `emulator_deviation` are played too and printed with their reason; where the
//! emulator's answer still agrees they count as agreeing, otherwise the difference is shown
//! but does not fail the test (the reason says why it differs).
//!
//! The same suite runs against rowkit's own gRPC server (`rowkit-grpc`) over a memory and a
//! redb store, with no deviation list: every case, sent over the wire, must agree.

mod backends;

use rowkit_bigtable::BigtableStore;
use rowkit_codec::model::{Row, Timestamp};
use rowkit_store::driver::{self, Clock};
use rowkit_store::{MemoryStore, StoreOptions};
use rowkit_testkit::emulator::Emulator;
use rowkit_testkit::suite::{self, CaseRun, Outcome, compare_rows, play};

const SEED: u64 = 0x5eed;

/// Cases the emulator cannot be sent at all: the request crashes the emulator process (a Go
/// panic), which would fail every case after it. Printed, never silently dropped.
const CRASHES_THE_EMULATOR: &[(&str, &str)] = &[(
    "filter-invalid/cells_per_row_offset -1",
    "a negative cells_per_row_offset_filter panics the emulator (inmem.go filterRow: slice bounds out of range [-1:])",
)];

/// The emulator stamps server-time cells (`-1` timestamps, read-modify-write results) with its
/// own clock, the memory store with the case's `now`. Every timestamp the emulator assigned
/// while the case ran (`wall` = the wall-clock window, in ms) becomes the case's `now`
/// (ms-truncated); server-stamped cells of one column then collapse to the newest, as the
/// suite runs every request at one instant.
fn normalize_server_time(rows: &mut [Row], wall: (i64, i64), now: Timestamp) {
    let now = now.truncate_to_millis();
    for row in rows {
        let mut seen = std::collections::BTreeSet::new();
        row.cells.retain_mut(|c| {
            if c.timestamp.0 >= wall.0 && c.timestamp.0 <= wall.1 {
                c.timestamp = now;
                return seen.insert((c.family.clone(), c.qualifier.clone()));
            }
            true
        });
    }
}

fn normalize_run(run: &mut CaseRun, wall: (i64, i64), now: Timestamp) {
    match &mut run.outcome {
        Outcome::Rows(rows) => normalize_server_time(rows, wall, now),
        Outcome::ModifiedRow(row) => normalize_server_time(std::slice::from_mut(row), wall, now),
        _ => {}
    }
    if let Some(Ok(rows)) = &mut run.check {
        normalize_server_time(rows, wall, now);
    }
}

fn wall_ms() -> i64 {
    driver::SystemClock.now().truncate_to_millis().0
}

/// Same rows (after normalising family order), same answers, same error codes.
fn same(a: &CaseRun, b: &CaseRun) -> Result<(), String> {
    let rows_eq = |x: &[Row], y: &[Row]| compare_rows(x, y).is_ok();
    let outcome_eq = match (&a.outcome, &b.outcome) {
        (Outcome::Error(x), Outcome::Error(y))
        | (Outcome::CreateTableError(x), Outcome::CreateTableError(y)) => x.code == y.code,
        (Outcome::Rows(x), Outcome::Rows(y)) => rows_eq(x, y),
        (Outcome::ModifiedRow(x), Outcome::ModifiedRow(y)) => {
            rows_eq(std::slice::from_ref(x), std::slice::from_ref(y))
        }
        (x, y) => x == y,
    };
    let check_eq = match (&a.check, &b.check) {
        (Some(Err(x)), Some(Err(y))) => x.code == y.code,
        (Some(Ok(x)), Some(Ok(y))) => rows_eq(x, y),
        (x, y) => x == y,
    };
    if outcome_eq && check_eq {
        Ok(())
    } else {
        Err(format!(
            "memory and the server disagree\n  memory: {a:?}\n  server: {b:?}"
        ))
    }
}

#[test]
fn semantics_suite_on_the_emulator_equals_the_memory_store() {
    let Some(emu) = Emulator::shared_or_skip("semantics_suite_on_the_emulator") else {
        return;
    };
    suite_agrees(emu);
}

#[test]
fn semantics_suite_on_rowkit_grpc_over_memory_equals_the_memory_store() {
    suite_agrees(backends::rowkit_memory());
}

#[test]
fn semantics_suite_on_rowkit_grpc_over_embedded_equals_the_memory_store() {
    suite_agrees(backends::rowkit_store());
}

/// Plays every case on `emu` and on a memory store; fails on any difference the emulator's
/// deviations do not explain (on rowkit: on any difference at all).
fn suite_agrees(emu: &Emulator) {
    let mut failures = Vec::new();
    let mut deviations = Vec::new();
    let mut agreed = 0;
    let mut not_sent = Vec::new();
    let mut gc_unobservable = 0;
    for mut case in suite::cases() {
        if emu.is_rowkit() && case.gc_at.take().is_some() {
            // No Bigtable RPC runs garbage collection (production collects on its own
            // schedule, `spec/bigtable.md` 12): through the wire, GC-eligible cells are still
            // read, so the reference keeps them too.
            gc_unobservable += 1;
        }
        let mut twin = case.clone();
        let reference = play(
            &MemoryStore::new().with_options(StoreOptions::default().with_seed(SEED)),
            &mut case,
        )
        .unwrap_or_else(|e| panic!("{}: memory store: {e}", case.name));
        if let Some((_, why)) = emu
            .deviations(CRASHES_THE_EMULATOR)
            .iter()
            .find(|(n, _)| *n == case.name)
        {
            not_sent.push(format!("{}: {why}", case.name));
            continue;
        }
        let store: BigtableStore = emu.fresh_store();
        let start = wall_ms();
        let result = play(&store, &mut twin).and_then(|mut run| {
            normalize_run(&mut run, (start, wall_ms()), case.now);
            if let suite::Expectation::RowsSubsetOf(_) = case.expect {
                // row_sample_filter draws differ across backends: hold each to the pool.
                return case.expect.check(&run.outcome);
            }
            same(&reference, &run)
        });
        let deviation = case.emulator_deviation.filter(|_| !emu.is_rowkit());
        match (result, deviation) {
            (Ok(()), _) => agreed += 1,
            (Err(e), Some(why)) => deviations.push(format!("{}: {why}\n    {e}", case.name)),
            (Err(e), None) => failures.push(format!("{}: {e}", case.name)),
        }
    }
    println!("{}: {agreed} cases agree with the memory store", emu.name());
    if gc_unobservable > 0 {
        println!("{gc_unobservable} cases compared before garbage collection (no RPC runs it)");
    }
    println!(
        "{} cases differ where the emulator deviates from production (spec/bigtable.md 14):",
        deviations.len()
    );
    for d in &deviations {
        println!("  DEVIATION {d}");
    }
    println!("{} cases not sent to the emulator:", not_sent.len());
    for n in &not_sent {
        println!("  NOT SENT {n}");
    }
    assert!(
        failures.is_empty(),
        "{} cases differ without a documented deviation:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
