#![allow(clippy::unwrap_used)]
//! Table administration on the local stores (the same scenario runs on the emulator and on
//! `rowkit serve --grpc` from rowkit-bigtable's smoke tests).

use rowkit_store::{MemoryStore, RedbStore};
use rowkit_testkit::scenarios::admin;

#[test]
fn dropping_a_family_deletes_its_cells_on_memory() {
    admin::drop_family(&MemoryStore::new(), "drop-family");
}

#[test]
fn dropping_a_family_deletes_its_cells_on_redb() {
    let store = RedbStore::in_memory().unwrap().with_durable_commits(false);
    admin::drop_family(&store, "drop-family");
}
