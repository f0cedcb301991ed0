#![allow(clippy::unwrap_used)]
//! The deterministic fault simulator (issue #9) per schema: a budget of simulated operations
//! with injected faults must keep every invariant, the same seed must replay the same run,
//! and a planted bug must be found within the default budget.
//!
//! `ROWKIT_SIM_OPS` overrides the operations per schema (default 100 000 in CI's release
//! run, see `.ci/run`; 20 000 in a plain `cargo test`). Each schema's totals are printed.

use rowkit_embedded::sim::objmeta::ObjmetaWorkload;
use rowkit_embedded::sim::triples::TriplesWorkload;
use rowkit_embedded::sim::{self, SimConfig, SimReport, Workload};
use rowkit_statemachines::planted::PlantedBug;

/// Operations per run: small runs keep shrunk traces short and cover many seeds.
const OPS_PER_RUN: u64 = 250;

fn budget() -> u64 {
    std::env::var("ROWKIT_SIM_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

fn simulate<W: Workload>(name: &str, seed: u64, workload: &mut W) -> SimReport {
    let runs = budget().div_ceil(OPS_PER_RUN);
    let config = SimConfig {
        operations: OPS_PER_RUN,
        ..SimConfig::quick(seed)
    };
    match sim::run_many(&config, runs, workload) {
        Ok(report) => {
            println!("sim {name}: {runs} runs x {OPS_PER_RUN}: {report}");
            report
        }
        Err(failure) => panic!("{failure}"),
    }
}

#[test]
fn triples_keep_their_invariants_under_faults() {
    let report = simulate("triples", 9, &mut TriplesWorkload::default());
    assert!(
        report.faults() > 0 && report.checked.decided > 0,
        "{report}"
    );
}

#[test]
fn a_seed_replays_the_same_run() {
    let config = SimConfig::quick(42);
    let a = sim::run(&config, &mut TriplesWorkload::default()).unwrap();
    let b = sim::run(&config, &mut TriplesWorkload::default()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn the_simulator_finds_a_planted_triples_bug_and_shrinks_it() {
    let mut workload = TriplesWorkload::with_planted_bug(PlantedBug::TriplesRemoveSkipsSpo);
    let config = SimConfig {
        operations: OPS_PER_RUN,
        ..SimConfig::quick(9)
    };
    let failure = sim::run_many(&config, budget().div_ceil(OPS_PER_RUN), &mut workload)
        .expect_err("the planted bug went unnoticed");
    println!("{failure}");
    assert!(
        failure.message.contains("SPO") || failure.message.contains("present"),
        "{failure}"
    );
    assert!(failure.operations <= OPS_PER_RUN);
    // The failure reproduces from its seed and budget alone.
    let again = sim::run(
        &SimConfig {
            seed: failure.seed,
            operations: failure.operations,
            ..SimConfig::quick(0)
        },
        &mut workload,
    )
    .expect_err("the seed did not reproduce the failure");
    assert_eq!(again.message, failure.message);
}

#[test]
fn objmeta_keeps_its_invariants_under_faults() {
    let report = simulate("objmeta", 9, &mut ObjmetaWorkload::default());
    assert!(
        report.faults() > 0 && report.checked.decided > 0,
        "{report}"
    );
}

#[test]
fn mounttable_keeps_its_invariants_under_faults() {
    use rowkit_embedded::sim::mounttable::MounttableWorkload;
    let report = simulate("mounttable", 11, &mut MounttableWorkload);
    assert!(
        report.faults() > 0 && report.checked.decided > 0,
        "{report}"
    );
}

#[test]
fn an_objmeta_seed_replays_the_same_run() {
    let config = SimConfig::quick(42);
    let a = sim::run(&config, &mut ObjmetaWorkload::default()).unwrap();
    let b = sim::run(&config, &mut ObjmetaWorkload::default()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn the_simulator_finds_a_planted_objmeta_bug_and_shrinks_it() {
    let mut workload =
        ObjmetaWorkload::with_planted_bug(PlantedBug::ObjmetaGetSkipsPlaceholderCheck);
    let config = SimConfig {
        operations: OPS_PER_RUN,
        ..SimConfig::quick(9)
    };
    let failure = sim::run_many(&config, budget().div_ceil(OPS_PER_RUN), &mut workload)
        .expect_err("the planted bug went unnoticed");
    println!("{failure}");
    assert!(failure.message.contains("isPHD"), "{failure}");
    assert!(failure.operations <= OPS_PER_RUN);
    // The failure reproduces from its seed and budget alone.
    let again = sim::run(
        &SimConfig {
            seed: failure.seed,
            operations: failure.operations,
            ..SimConfig::quick(0)
        },
        &mut workload,
    )
    .expect_err("the seed did not reproduce the failure");
    assert_eq!(again.message, failure.message);
}

#[test]
fn tracestore_keeps_its_invariants_under_faults() {
    use rowkit_embedded::sim::tracestore::TraceStoreWorkload;
    let report = simulate("tracestore", 13, &mut TraceStoreWorkload::default());
    assert!(
        report.faults() > 0 && report.checked.decided > 0,
        "{report}"
    );
}

#[test]
fn tracestore_md5_keeps_its_invariants_under_faults() {
    use rowkit_codec::tracestore::Layout;
    use rowkit_embedded::sim::tracestore::TraceStoreWorkload;
    let report = simulate(
        "tracestore md5",
        14,
        &mut TraceStoreWorkload::new(Layout::Md5),
    );
    assert!(
        report.faults() > 0 && report.checked.decided > 0,
        "{report}"
    );
}

#[test]
fn a_tracestore_seed_replays_the_same_run() {
    use rowkit_embedded::sim::tracestore::TraceStoreWorkload;
    let config = SimConfig::quick(42);
    let a = sim::run(&config, &mut TraceStoreWorkload::default()).unwrap();
    let b = sim::run(&config, &mut TraceStoreWorkload::default()).unwrap();
    assert_eq!(a, b);
}

#[test]
fn the_simulator_finds_a_planted_tracestore_bug_and_shrinks_it() {
    use rowkit_embedded::sim::tracestore::TraceStoreWorkload;
    let mut workload = TraceStoreWorkload::with_planted_bug(PlantedBug::TracestoreReusesPooledIds);
    let config = SimConfig {
        operations: OPS_PER_RUN,
        ..SimConfig::quick(13)
    };
    let failure = sim::run_many(&config, budget().div_ceil(OPS_PER_RUN), &mut workload)
        .expect_err("the planted bug went unnoticed");
    println!("{failure}");
    assert!(failure.message.contains("handed out to"), "{failure}");
    assert!(failure.operations <= OPS_PER_RUN);
    let again = sim::run(
        &SimConfig {
            seed: failure.seed,
            operations: failure.operations,
            ..SimConfig::quick(0)
        },
        &mut workload,
    )
    .expect_err("the seed did not reproduce the failure");
    assert_eq!(again.message, failure.message);
}
