//! Replays the semantics suite (`rowkit_testkit::suite`) on every local store: the memory
//! store must meet every expectation, the redb store must give exactly the memory store's
//! results, and a memory store that splits values every 3 bytes and sends 2 chunks per response
//! must give the same rows through the chunk merger.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use rowkit_statemachines::Request;
use rowkit_store::{ChunkingOptions, MemoryStore, Store, StoreOptions};
use rowkit_testkit::suite::{self, CaseRun, Category, Outcome, SemanticsCase, compare_rows, play};

/// Seed of every store, so `row_sample_filter` draws agree across stores.
const SEED: u64 = 0x5eed;

/// Checks a run against the case's expectations.
fn verify(case: &SemanticsCase, run: &CaseRun) -> Result<(), String> {
    case.expect.check(&run.outcome)?;
    match (&case.check, &run.check) {
        (Some(expected), Some(Ok(rows))) => {
            compare_rows(&expected.rows, rows).map_err(|e| format!("post-check: {e}"))
        }
        (Some(_), Some(Err(e))) => Err(format!("post-check read failed: {e}")),
        _ => Ok(()),
    }
}

/// Whether two stores gave the same result: exactly the same rows (cell order included), the
/// same answers, the same error codes (messages may differ).
fn same(a: &CaseRun, b: &CaseRun) -> Result<(), String> {
    let outcome_eq = match (&a.outcome, &b.outcome) {
        (Outcome::Error(x), Outcome::Error(y))
        | (Outcome::CreateTableError(x), Outcome::CreateTableError(y)) => x.code == y.code,
        (x, y) => x == y,
    };
    let check_eq = match (&a.check, &b.check) {
        (Some(Err(x)), Some(Err(y))) => x.code == y.code,
        (x, y) => x == y,
    };
    if outcome_eq && check_eq {
        Ok(())
    } else {
        Err(format!(
            "stores disagree\n  reference: {a:?}\n  other:     {b:?}"
        ))
    }
}

fn memory() -> MemoryStore {
    MemoryStore::new().with_options(StoreOptions::default().with_seed(SEED))
}

/// Runs every case on the reference memory store and on `other`, requiring the reference to
/// meet the expectations and `other` to match it. Failures are collected, then reported
/// together.
fn replay<S: Store>(what: &str, other: impl Fn() -> S, only: impl Fn(&SemanticsCase) -> bool) {
    let mut failures = Vec::new();
    let mut played = 0;
    for mut case in suite::cases() {
        if !only(&case) {
            continue;
        }
        played += 1;
        let mut twin = case.clone();
        let result = play(&memory(), &mut case).and_then(|reference| {
            verify(&case, &reference)?;
            let store = other();
            let run = play(&store, &mut twin)?;
            same(&reference, &run)
        });
        if let Err(e) = result {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    assert!(played > 0, "{what}: no case played");
    assert!(
        failures.is_empty(),
        "{what}: {} of {played} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn suite_is_well_formed() {
    let cases = suite::cases();
    assert!(cases.len() >= 80, "only {} cases", cases.len());
    let mut names = std::collections::BTreeSet::new();
    let mut per_category: BTreeMap<Category, usize> = BTreeMap::new();
    for c in &cases {
        assert!(names.insert(c.name), "duplicate case name {:?}", c.name);
        *per_category.entry(c.category).or_default() += 1;
    }
    println!("{} cases: {per_category:?}", cases.len());
}

#[test]
fn memory_store_meets_the_suite() {
    let mut failures = Vec::new();
    for mut case in suite::cases() {
        let result = play(&memory(), &mut case).and_then(|run| verify(&case, &run));
        if let Err(e) = result {
            failures.push(format!("{}: {e}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn chunked_memory_store_gives_the_same_rows() {
    let chunked = || {
        MemoryStore::new().with_options(StoreOptions::default().with_seed(SEED).with_chunking(
            ChunkingOptions {
                split_values_every: Some(3),
                chunks_per_response: Some(2),
            },
        ))
    };
    replay("chunked memory store", chunked, |case| {
        matches!(case.request, Request::ReadRows(_)) || case.check.is_some()
    });
}

#[cfg(feature = "redb")]
#[test]
fn redb_store_agrees_with_memory() {
    let redb = || {
        rowkit_store::RedbStore::in_memory()
            .unwrap()
            .with_options(StoreOptions::default().with_seed(SEED))
    };
    replay("redb store", redb, |_| true);
}
