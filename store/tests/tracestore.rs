//! The trace store acceptance scenarios (`spec/tracestore.md` 20) on the memory store and the
//! redb store, both layouts where they apply, plus the machine-level vectors
//! (`digest_id_allocation`, `digest_id_assignment`) of `vectors/tracestore.json`.
#![allow(clippy::unwrap_used)]

use rowkit_codec::tracestore::Layout;
use rowkit_store::{MemoryStore, RedbStore, Store};
use rowkit_testkit::scenarios::tracestore as sc;

const LAYOUTS: [Layout; 2] = [Layout::Md5, Layout::DigestId];

fn memory() -> Box<dyn Store> {
    Box::new(MemoryStore::new())
}

fn redb() -> Box<dyn Store> {
    Box::new(RedbStore::in_memory().unwrap().with_durable_commits(false))
}

/// Builds a fresh store.
type MakeStore = fn() -> Box<dyn Store>;

fn stores() -> [(&'static str, MakeStore); 2] {
    [("memory", memory), ("redb", redb)]
}

fn each(f: impl Fn(&dyn Store, Layout)) {
    for (_, make) in stores() {
        for layout in LAYOUTS {
            f(&*make(), layout);
        }
    }
}

fn each_store(f: impl Fn(&dyn Store)) {
    for (_, make) in stores() {
        f(&*make());
    }
}

#[test]
fn s08_put_get() {
    each(|s, l| sc::put_get(s, l, [0, 1, 2]));
}

#[test]
fn s09_override_by_timestamp() {
    each(sc::override_by_timestamp);
}

#[test]
fn s10_span_tiles() {
    each(|s, l| sc::put_get(s, l, [254, 255, 256]));
}

#[test]
fn s11_grouped_put() {
    each(sc::grouped_put);
}

#[test]
fn s12_concurrent_writers_converge() {
    for (_, make) in stores() {
        for layout in LAYOUTS {
            let lost = sc::concurrent_writers(&make, layout, 1..=100);
            assert!(lost > 0, "no seed produced a lost OPS compare-and-swap");
        }
    }
}

#[test]
fn s13_overwrite() {
    each(sc::overwrite);
}

#[test]
fn s14_dense() {
    for (_, make) in stores() {
        for layout in LAYOUTS {
            sc::dense(&make, layout);
        }
    }
}

#[test]
fn s16_s28_setup_and_detection() {
    each_store(sc::setup_and_detection);
}

#[test]
fn s16_setup_adds_missing_families() {
    each_store(sc::setup_adds_missing_families);
}

#[test]
fn s17_first_ids() {
    each_store(sc::first_ids);
}

#[test]
fn s18_concurrent_allocators() {
    each_store(|s| sc::concurrent_allocators(s, false));
    each_store(|s| sc::concurrent_allocators(s, true));
}

#[test]
fn s19_concurrent_inserts() {
    each_store(sc::one_digest_two_writers);
    each_store(sc::concurrent_inserts);
}

#[test]
fn s20_missing_digest() {
    each_store(sc::missing_digest);
}

#[test]
fn s21_fresh_reader() {
    each_store(sc::fresh_reader);
}

#[test]
fn s22_unknown_and_corrupt_ids() {
    for (_, make) in stores() {
        sc::unknown_and_corrupt_ids(&make);
    }
}

#[test]
fn s23_rows_per_lookup() {
    for (_, make) in stores() {
        assert_eq!(sc::rows_per_lookup(&*make(), 100_000, 10_000), (3756, 4096));
    }
}

#[test]
fn s24_put_request_sequence() {
    each_store(sc::put_request_sequence);
}

#[test]
fn s25_s29_validation() {
    each(sc::validation);
}

#[test]
fn put_chunks_of_10000_rows() {
    each(sc::put_chunks);
}

#[test]
fn put_validation_is_all_or_nothing() {
    each(sc::put_all_or_nothing);
}

#[test]
fn s29_deadline_and_backoff() {
    each(sc::deadline_and_backoff);
}

#[test]
fn s26_versions_without_gc() {
    each_store(sc::versions_without_gc);
}

#[test]
fn s27_insert_with_unknown_outcome() {
    each_store(sc::insert_with_unknown_outcome);
}

#[test]
fn s30_ops_timestamps_never_go_back() {
    each(sc::ops_timestamps_never_go_back);
}

#[test]
fn check_reports_every_finding_kind() {
    each(sc::check_corrupted);
    each_store(sc::check_counter_bad);
}
