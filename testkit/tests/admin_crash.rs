#![allow(clippy::unwrap_used)]
//! Crash-safe admin calls (issue 28): every admin call that changes a schema or drops data,
//! crashed after each of its engine transactions on both engines, leaves its table or family
//! whole or gone, and the state recovers (`rowkit_testkit::sim::admin`).

use rowkit_testkit::sim::admin::{AdminOp, Engine, crash_every_step};

fn every_call(engine: Engine) {
    for op in AdminOp::ALL {
        let report = crash_every_step(engine, op).unwrap_or_else(|e| panic!("{e}"));
        println!("{engine:?} {op:?}: {report:?}");
        // Each call has at least one transaction, so at least one crash point before it.
        assert!(report.crash_points >= 1, "{op:?}: {report:?}");
    }
}

#[test]
fn admin_calls_survive_a_crash_at_every_step_on_redb() {
    every_call(Engine::Redb);
}

#[test]
fn admin_calls_survive_a_crash_at_every_step_in_memory() {
    every_call(Engine::Memory);
}

/// The drop of a family whose cells fill several purge steps is crashed between them: some
/// crash points find the family already gone from the schema while cells remain stored
/// (what the purge and the hiding of its cells are for), and those are checked too.
#[test]
fn a_drop_is_crashed_between_its_purge_steps() {
    let report = crash_every_step(Engine::Redb, AdminOp::DropFamily).unwrap();
    // Schema change, three purge steps of 1 000 rows, forgetting the drop.
    assert_eq!(report.crash_points, 5, "{report:?}");
    assert_eq!(report.changed, 4, "{report:?}");
}
