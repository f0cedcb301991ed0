#![allow(clippy::unwrap_used)]
//! spec/check.md §6 for the object-metadata and trace-store checks (the triple store's is in
//! `tests/triples.rs`) on the memory store and on redb: the scenarios are in
//! `rowkit_testkit::scenarios::check_beside_writers` (the emulator runs them too).

use rowkit_store::{MemoryStore, RedbStore};
use rowkit_testkit::scenarios::check_beside_writers;

#[test]
fn objmeta_check_beside_writers_on_memory_store() {
    check_beside_writers::objmeta(&MemoryStore::new());
}

#[test]
fn objmeta_check_beside_writers_on_redb_store() {
    check_beside_writers::objmeta(&RedbStore::in_memory().unwrap());
}

#[test]
fn tracestore_check_beside_writers_on_memory_store() {
    check_beside_writers::tracestore(&MemoryStore::new());
}

#[test]
fn tracestore_check_beside_writers_on_redb_store() {
    check_beside_writers::tracestore(&RedbStore::in_memory().unwrap());
}
