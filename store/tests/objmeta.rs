#![allow(clippy::unwrap_used)]
//! objmeta on the embedded stores: every scenario trace of `vectors/objmeta.json` replayed on
//! MemoryStore and RedbStore, comparing the whole bucket after each step.

use rowkit_codec::objmeta::json::Json;
use rowkit_store::{MemoryStore, RedbStore, Store};
use rowkit_testkit::scenarios::objmeta::replay_all;

fn vectors() -> Json {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
    let path = format!("{dir}/vectors/objmeta.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    Json::parse(&text).unwrap()
}

fn check(store: &dyn Store) {
    match replay_all(store, &vectors()) {
        Ok(n) => assert!(n > 0, "no scenarios"),
        Err(failures) => panic!(
            "{} scenario(s) failed:\n{}",
            failures.len(),
            failures.join("\n\n")
        ),
    }
}

#[test]
fn scenario_traces_memory() {
    check(&MemoryStore::new());
}

#[test]
fn scenario_traces_redb() {
    let dir = std::env::temp_dir().join(format!("rowkit-objmeta-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = RedbStore::open(dir.join("scenarios.redb")).unwrap();
    check(&store);
}

// Crash at every cut point (`objmeta.md` 8.4, issue "Done when"): a versioned put or delete is
// dropped after its k-th request, for every k, for nine operations in both formats
// (`rowkit_testkit::scenarios::objmeta::crash_at_every_cut`, which also checks each
// operation's request count and that the repair path ran).

use rowkit_testkit::scenarios::objmeta::{CRASH_CASES, crash_at_every_cut};

#[test]
fn crash_at_every_cut_point_memory() {
    assert_eq!(crash_at_every_cut(&MemoryStore::new()), CRASH_CASES);
}

#[test]
fn crash_at_every_cut_point_redb() {
    let dir = std::env::temp_dir().join(format!("rowkit-objmeta-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    assert_eq!(
        crash_at_every_cut(&RedbStore::open(dir.join("crash.redb")).unwrap()),
        CRASH_CASES
    );
}
