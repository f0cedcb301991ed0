#![allow(clippy::unwrap_used)]
//! Mounttable machines without a store: the row cache (spec/mounttable.md §22 scenario 3) and
//! the machines' determinism and request shapes, driven by hand.

use rowkit_codec::model::{Cell, Row, RowFilter, Timestamp};
use rowkit_codec::mounttable::Caller;
use rowkit_statemachines::mounttable::{
    Lookup, Mount, MtCtx, MtError, ResolveStep, RowCache, WaiterId,
};
use rowkit_statemachines::{
    CellChunk, Code, Machine, ReadRowsResponse, Request, Response, RowStatus, StoreError,
};

fn row(key: &str, version: &str) -> Row {
    Row {
        key: key.as_bytes().to_vec(),
        cells: vec![Cell {
            family: "m".into(),
            qualifier: b"v".to_vec(),
            timestamp: Timestamp(0),
            value: version.as_bytes().to_vec(),
            labels: vec![],
        }],
    }
}

fn version(r: &Row) -> String {
    String::from_utf8(r.cells[0].value.clone()).unwrap()
}

#[test]
fn row_cache_scenario() {
    let mut cache = RowCache::default();
    let steps: [(i64, Option<(&str, &str)>); 5] = [
        (0, Some(("100", "200"))),
        (500_001, None),
        (1_000_002, Some(("101", "201"))),
        (1_500_003, None),
        (2_000_004, Some(("102", "202"))),
    ];
    let mut last: [Option<String>; 2] = [None, None];
    for (t, values) in steps {
        for (k, key) in ["one", "two"].into_iter().enumerate() {
            let looks: Vec<Lookup> = (0..5)
                .map(|_| cache.lookup(key.as_bytes(), Timestamp(t)))
                .collect();
            let fetches: Vec<WaiterId> = looks
                .iter()
                .filter_map(|l| match l {
                    Lookup::Fetch(id) => Some(*id),
                    _ => None,
                })
                .collect();
            let waits = looks
                .iter()
                .filter(|l| matches!(l, Lookup::Wait(_)))
                .count();
            let hits: Vec<String> = looks
                .iter()
                .filter_map(|l| match l {
                    Lookup::Hit(r) => Some(version(r)),
                    _ => None,
                })
                .collect();
            match values {
                Some(v) => {
                    assert_eq!((fetches.len(), waits), (1, 4), "t={t} {key}");
                    let value = if k == 0 { v.0 } else { v.1 };
                    let done = cache.complete(
                        key.as_bytes(),
                        fetches[0],
                        Some(row(key, value)),
                        Timestamp(t),
                    );
                    assert_eq!(done.answered.len(), 5);
                    assert_eq!(done.next_fetcher, None);
                    last[k] = Some(value.to_string());
                }
                None => {
                    assert_eq!(hits.len(), 5, "t={t} {key}");
                    assert!(hits.iter().all(|h| Some(h) == last[k].as_ref()));
                }
            }
        }
    }
    cache.invalidate(b"one");
    assert!(matches!(
        cache.lookup(b"one", Timestamp(2_000_005)),
        Lookup::Fetch(_)
    ));
    // A missing row answers only the fetcher; the first waiter fetches next.
    let mut cache = RowCache::default();
    let Lookup::Fetch(f) = cache.lookup(b"k", Timestamp(0)) else {
        panic!()
    };
    let Lookup::Wait(w1) = cache.lookup(b"k", Timestamp(0)) else {
        panic!()
    };
    let Lookup::Wait(w2) = cache.lookup(b"k", Timestamp(0)) else {
        panic!()
    };
    let done = cache.complete(b"k", f, None, Timestamp(0));
    assert_eq!(done.answered, vec![f]);
    assert_eq!(done.next_fetcher, Some(w1));
    let done = cache.complete(b"k", w1, Some(row("k", "1")), Timestamp(0));
    assert_eq!(done.answered, vec![w1, w2]);
    // An invalidated in-flight fetch still answers but does not store.
    let Lookup::Fetch(f) = cache.lookup(b"z", Timestamp(0)) else {
        panic!()
    };
    cache.invalidate(b"z");
    assert_eq!(
        cache
            .complete(b"z", f, Some(row("z", "1")), Timestamp(0))
            .answered,
        vec![f]
    );
    assert!(matches!(cache.lookup(b"z", Timestamp(1)), Lookup::Fetch(_)));
    // LRU bound.
    let mut small = RowCache::new(2, 1_000_000);
    for k in [b"a", b"b", b"c"] {
        let Lookup::Fetch(id) = small.lookup(k, Timestamp(0)) else {
            panic!()
        };
        small.complete(k, id, Some(row("x", "1")), Timestamp(0));
    }
    assert_eq!(small.len(), 2);
    assert!(matches!(small.lookup(b"a", Timestamp(0)), Lookup::Fetch(_)));
}

/// The rowkit refinement of §15: between `begin_write` and `end_write` every lookup reads the
/// store itself (no hit, no joining, nothing kept), so no read that starts after the store
/// applied a write can get the row from before it. Before the refinement the second lookup
/// below was a `Hit` of the old row.
#[test]
fn row_cache_serves_nothing_while_a_write_is_in_flight() {
    let mut cache = RowCache::default();
    let fetch = |cache: &mut RowCache, key: &[u8], t: i64| match cache.lookup(key, Timestamp(t)) {
        Lookup::Fetch(id) => id,
        other => panic!("t={t}: {other:?}"),
    };
    let f = fetch(&mut cache, b"k", 0);
    cache.complete(b"k", f, Some(row("k", "old")), Timestamp(0));
    assert!(matches!(cache.lookup(b"k", Timestamp(1)), Lookup::Hit(r) if version(&r) == "old"));

    // A fetch that started before the write is answered but not kept.
    let mut cache2 = RowCache::default();
    let early = fetch(&mut cache2, b"k", 0);
    cache2.begin_write(b"k");
    assert_eq!(
        cache2
            .complete(b"k", early, Some(row("k", "old")), Timestamp(1))
            .answered,
        vec![early]
    );
    cache2.end_write(b"k");
    fetch(&mut cache2, b"k", 2);

    cache.begin_write(b"k");
    cache.begin_write(b"k"); // two writes in flight
    let a = fetch(&mut cache, b"k", 2);
    let b = fetch(&mut cache, b"k", 2); // not a waiter of `a`: a read of its own
    assert_ne!(a, b);
    let done = cache.complete(b"k", a, Some(row("k", "new")), Timestamp(3));
    assert_eq!((done.answered, done.next_fetcher), (vec![a], None));
    assert!(matches!(cache.lookup(b"k", Timestamp(4)), Lookup::Fetch(_)));
    cache.complete(b"k", b, None, Timestamp(4));
    cache.end_write(b"k");
    let c = fetch(&mut cache, b"k", 5); // one write still in flight
    cache.complete(b"k", c, Some(row("k", "new")), Timestamp(5));
    cache.end_write(b"k");
    // Both answered: the cache fills again.
    let d = fetch(&mut cache, b"k", 6);
    assert!(matches!(cache.lookup(b"k", Timestamp(6)), Lookup::Wait(_)));
    cache.complete(b"k", d, Some(row("k", "newest")), Timestamp(6));
    assert!(matches!(cache.lookup(b"k", Timestamp(7)), Lookup::Hit(r) if version(&r) == "newest"));

    // An entry with a write in flight is never evicted (its marker would be lost).
    let mut small = RowCache::new(1, 1_000_000);
    small.begin_write(b"w");
    for k in [b"a", b"b"] {
        let id = fetch(&mut small, k, 0);
        small.complete(k, id, Some(row("x", "1")), Timestamp(0));
    }
    // Still marked: the fetch is a read of its own, not kept.
    let id = fetch(&mut small, b"w", 0);
    small.complete(b"w", id, Some(row("w", "1")), Timestamp(0));
    fetch(&mut small, b"w", 0);
}

fn ctx() -> MtCtx {
    MtCtx {
        caller: Caller::new(&["alice"], false),
        ..MtCtx::new(Timestamp(60_000_000))
    }
}

#[test]
fn resolve_reads_root_first_and_missing_root_is_an_error() {
    let mut m = ResolveStep::new(ctx(), "a/b", Timestamp(0), 3);
    let (tag, req) = m.poll_request().unwrap();
    let Request::ReadRows(r) = req else {
        panic!("{req:?}")
    };
    assert_eq!(r.table, "mounttable");
    assert_eq!(r.rows.row_keys, vec![b"050c5d30/".to_vec()]);
    assert_eq!(r.filter, Some(RowFilter::CellsPerColumnLimit(1)));
    assert!(m.poll_request().is_none());
    m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(1));
    assert_eq!(m.result(), Some(Err(MtError::NoSuchNameRoot)));
}

#[test]
fn same_seed_same_requests_and_store_errors_surface() {
    let run = |seed| {
        let mut m = Mount::new(ctx(), "x", "/h:1", 0, 0, Timestamp(5), seed);
        let (tag, req) = m.poll_request().unwrap();
        m.handle_response(
            tag,
            Err(StoreError::new(Code::PermissionDenied, "no")),
            Timestamp(6),
        );
        (req, m.result())
    };
    let (a, ra) = run(9);
    let (b, _) = run(9);
    assert_eq!(a, b);
    assert!(matches!(ra, Some(Err(MtError::Store(e))) if e.code == Code::PermissionDenied));
}

#[test]
fn deadline_aborts_the_operation() {
    let mut c = ctx();
    c.deadline = Timestamp(10);
    let mut m = Mount::new(c, "x", "/h:1", 0, 0, Timestamp(10), 1);
    assert!(m.poll_request().is_none());
    assert_eq!(m.result(), Some(Err(MtError::Aborted)));
}

/// §17: `cancel` ends an operation `Aborted` at once, giving up the request in flight. The
/// operation deadline is checked between steps instead: a read sent before it keeps its own
/// 60 s request deadline, and the walk ends `Aborted` before its next element.
#[test]
fn cancel_aborts_and_the_deadline_is_checked_between_steps() {
    let mut m = ResolveStep::new(ctx(), "a", Timestamp(0), 1);
    let (tag, _) = m.poll_request().unwrap();
    m.cancel(Timestamp(1));
    assert_eq!(m.poll_abort(), Some(tag));
    assert_eq!(m.result(), Some(Err(MtError::Aborted)));
    m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(2));
    assert_eq!(m.result(), None, "a late answer is dropped");

    let mut m = ResolveStep::new(MtCtx::new(Timestamp(10)), "a", Timestamp(0), 1);
    let (tag, _) = m.poll_request().unwrap();
    assert_eq!(m.poll_timeout(), Some(Timestamp(60_000_000)));
    let root = ReadRowsResponse {
        chunks: vec![CellChunk {
            row_key: b"050c5d30/".to_vec(),
            family_name: Some("m".into()),
            qualifier: Some(b"v".to_vec()),
            value: b"00000001".to_vec(),
            row_status: RowStatus::Commit,
            ..Default::default()
        }],
        last_scanned_row_key: vec![],
    };
    m.handle_response(tag, Ok(Response::ReadRowsPart(root)), Timestamp(20));
    m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(20));
    assert!(
        m.poll_request().is_none(),
        "no read of \"a\" past the deadline"
    );
    assert_eq!(m.result(), Some(Err(MtError::Aborted)));
}
