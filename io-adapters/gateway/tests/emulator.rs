//! The gateway in front of Bigtable (the emulator, through `rowkit_bigtable::BigtableStore`,
//! as `rowkit serve --store bigtable://…` runs it): semantics cases played over HTTP must give
//! exactly what the same cases give on the emulator directly.
//!
//! Compared are the cases whose result the emulator makes deterministic: no documented emulator
//! deviation, no server-time timestamps (the emulator stamps them with its wall clock), no row
//! sampling, no limit-size values, and not the one request that crashes the emulator.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use common::{HttpStore, client, local, runtime, start};
use rowkit_codec::model::{Mutation, Timestamp};
use rowkit_store::Store;
use rowkit_statemachines::{Request, StoreError};
use rowkit_testkit::emulator::Emulator;
use rowkit_testkit::suite::{self, Category, Expectation, SemanticsCase, compare_rows, play};

/// Cases the emulator cannot be sent (see `io-adapters/bigtable/tests/semantics.rs`).
const CRASHES_THE_EMULATOR: &[&str] = &["filter-invalid/cells_per_row_offset -1"];

fn uses_server_time(case: &SemanticsCase) -> bool {
    case.setup.iter().chain([&case.request]).any(|r| match r {
        Request::ReadModifyWriteRow(_) => true,
        Request::MutateRow(m) => m.mutations.iter().any(server_time),
        Request::MutateRows(m) => m.entries.iter().flat_map(|e| &e.mutations).any(server_time),
        Request::CheckAndMutateRow(m) => m
            .true_mutations
            .iter()
            .chain(&m.false_mutations)
            .any(server_time),
        _ => false,
    })
}

/// Each side runs on its own fresh instance, whose name appears in not-found messages.
fn without_instance(e: &StoreError) -> StoreError {
    let mut message = String::new();
    let mut rest = e.message.as_str();
    while let Some(at) = rest.find("/instances/") {
        let after = &rest[at + "/instances/".len()..];
        let end = after.find('/').unwrap_or(after.len());
        message.push_str(&rest[..at]);
        message.push_str("/instances/*");
        rest = &after[end..];
    }
    message.push_str(rest);
    StoreError::new(e.code, message)
}

fn server_time(m: &Mutation) -> bool {
    matches!(m, Mutation::SetCell { timestamp, .. } if *timestamp == Timestamp::SERVER_TIME)
}

#[test]
fn gateway_over_the_emulator_equals_the_emulator() {
    let Some(emu) = Emulator::shared_or_skip("gateway_over_the_emulator") else {
        return;
    };
    let rt = Arc::new(runtime());
    let client = rt.block_on(async { client() });
    // Stores live until the end: a BigtableStore must not be dropped inside the runtime.
    let mut keep: Vec<Arc<dyn Store>> = Vec::new();
    let mut failures = Vec::new();
    let mut played = 0;
    for mut case in suite::cases() {
        if case.emulator_deviation.is_some()
            || case.category == Category::Limit
            || matches!(case.expect, Expectation::RowsSubsetOf(_))
            || CRASHES_THE_EMULATOR.contains(&case.name)
            || uses_server_time(&case)
        {
            continue;
        }
        played += 1;
        let mut twin = case.clone();
        let direct = play(&emu.fresh_store(), &mut case);
        let behind: Arc<dyn Store> = Arc::new(emu.fresh_store());
        keep.push(behind.clone());
        let running = start(&rt, behind.clone(), local());
        let http = HttpStore {
            rt: rt.clone(),
            client: client.clone(),
            addr: running.addr,
            clock: running.clock.clone(),
            admin: behind,
        };
        let via_gateway = play(&http, &mut twin);
        drop(running);
        let equal = match (&direct, &via_gateway) {
            (Ok(a), Ok(b)) => {
                let outcome = match (&a.outcome, &b.outcome) {
                    (suite::Outcome::Error(x), suite::Outcome::Error(y)) => {
                        without_instance(x) == without_instance(y)
                    }
                    (suite::Outcome::Rows(x), suite::Outcome::Rows(y)) => {
                        compare_rows(x, y).is_ok()
                    }
                    (x, y) => x == y,
                };
                let check = match (&a.check, &b.check) {
                    (Some(Ok(x)), Some(Ok(y))) => compare_rows(x, y).is_ok(),
                    (x, y) => x == y,
                };
                outcome && check
            }
            (Err(a), Err(b)) => a == b,
            _ => false,
        };
        if !equal {
            failures.push(format!(
                "{}:\n  direct:  {direct:?}\n  gateway: {via_gateway:?}",
                case.name
            ));
        }
    }
    assert!(played >= 50, "only {played} cases");
    assert!(
        failures.is_empty(),
        "{} of {played} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    drop(rt);
    drop(keep);
}
