#![allow(clippy::unwrap_used)]
//! objmeta acceptance scenarios of `objmeta.md` 18 that the traces do not cover
//! (`rowkit_testkit::scenarios::objmeta::ACCEPTANCE`), on MemoryStore and RedbStore; the
//! emulator runs the same functions (rowkit-bigtable `tests/schemas.rs`).

use rowkit_codec::objmeta::json::Json;
use rowkit_store::{MemoryStore, RedbStore};
use rowkit_testkit::scenarios::objmeta::acceptance_all;

fn vectors() -> Json {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
    let path = format!("{dir}/vectors/objmeta.json");
    Json::parse(
        &std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path} is required: {e}")),
    )
    .unwrap()
}

#[test]
fn acceptance_memory() {
    acceptance_all(&MemoryStore::new(), &vectors());
}

#[test]
fn acceptance_redb() {
    let dir = std::env::temp_dir().join(format!("rowkit-objmeta-acc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    acceptance_all(&RedbStore::open(dir.join("acc.redb")).unwrap(), &vectors());
}
