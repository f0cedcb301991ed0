#![allow(clippy::unwrap_used)]
//! Mounttable machines without a store: the row cache (spec/mounttable.md §22 scenario 3) and
//! the machines' determinism and request shapes, driven by hand.

use std::sync::{Arc, Mutex};

use rowkit_codec::model::{Cell, Row, RowFilter, Timestamp};
use rowkit_codec::mounttable::{self as codec, Caller, MountFlags, NodeRow};
use rowkit_statemachines::mounttable::{
    Lookup, Mount, MountEntry, MtCtx, MtError, Nodes, ResolveStep, RowCache, SharedNodes, WaiterId,
};
use rowkit_statemachines::operation::Start;
use rowkit_statemachines::{Code, Machine, Request, Response, StoreError};

fn row(key: &str, version: &str) -> Arc<Row> {
    Arc::new(Row {
        key: key.as_bytes().to_vec(),
        cells: vec![Cell {
            family: "m".into(),
            qualifier: b"v".to_vec(),
            timestamp: Timestamp(0),
            value: version.as_bytes().to_vec(),
            labels: vec![],
        }],
    })
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
        ..MtCtx::new()
    }
}

/// Starting at `now` with `seed`, the operation deadline at 60 s.
fn start(now: i64, seed: u64) -> Start {
    Start {
        now: Timestamp(now),
        seed,
        deadline: Timestamp(60_000_000),
    }
}

#[test]
fn resolve_reads_root_first_and_missing_root_is_an_error() {
    let mut m = ResolveStep::new(ctx(), "a/b", start(0, 3));
    let (tag, req) = m.poll_request().unwrap();
    let Request::ReadRow(r) = req else {
        panic!("{req:?}")
    };
    assert_eq!(r.table, "mounttable");
    assert_eq!(r.row_key, b"050c5d30/".to_vec());
    assert_eq!(r.filter, Some(RowFilter::CellsPerColumnLimit(1)));
    assert!(m.poll_request().is_none());
    m.handle_response(tag, Ok(Response::Row(None)), Timestamp(1));
    assert_eq!(m.result(), Some(Err(MtError::NoSuchNameRoot)));
}

#[test]
fn same_seed_same_requests_and_store_errors_surface() {
    let run = |seed| {
        let mut m = Mount::new(ctx(), "x", "/h:1", 0, MountFlags(0), start(5, seed));
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
    let at_deadline = Start {
        deadline: Timestamp(10),
        ..start(10, 1)
    };
    let mut m = Mount::new(ctx(), "x", "/h:1", 0, MountFlags(0), at_deadline);
    assert!(m.poll_request().is_none());
    assert_eq!(m.result(), Some(Err(MtError::Aborted)));
}

/// A facade's cache as the machines see it: a [`RowCache`] holding the rows it hands out, and
/// a record of the nodes the machines were handed from it and asked it to keep.
#[derive(Default)]
struct CountingNodes {
    cache: Mutex<RowCache>,
    hits: Mutex<Vec<Arc<NodeRow>>>,
    kept: Mutex<Vec<Arc<NodeRow>>>,
}

impl CountingNodes {
    /// Puts `row` in the cache, as a fetch of it would, and has a hit hand it out once (a
    /// childless node is kept only for a row read again).
    fn cache(&self, row: &Arc<Row>, now: Timestamp) {
        let mut cache = self.cache.lock().unwrap();
        if let Lookup::Fetch(id) = cache.lookup(&row.key, now) {
            cache.complete(&row.key, id, Some(row.clone()), now);
        }
        assert!(matches!(cache.lookup(&row.key, now), Lookup::Hit(r) if Arc::ptr_eq(&r, row)));
    }
}

impl SharedNodes for CountingNodes {
    fn get(&self, row: &Arc<Row>, now: Timestamp) -> Option<Arc<NodeRow>> {
        let node = self.cache.lock().unwrap().node(row, now);
        if let Some(n) = &node {
            self.hits.lock().unwrap().push(n.clone());
        }
        node
    }

    fn keep(&self, row: &Arc<Row>, node: &Arc<NodeRow>) {
        self.cache.lock().unwrap().keep_node(row, node.clone());
        self.kept.lock().unwrap().push(node.clone());
    }
}

/// A node row: an id, a version and the given servers (live until `deadline`).
fn node_row(name: &str, servers: &[&str], deadline: i64) -> Arc<Row> {
    let cell = |family: &str, qualifier: &[u8], ts: i64, value: Vec<u8>| Cell {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        timestamp: Timestamp(ts),
        value,
        labels: vec![],
    };
    let mut cells = vec![
        cell(
            codec::FAMILY_META,
            codec::QUAL_ID,
            1000,
            b"12345678".to_vec(),
        ),
        cell(
            codec::FAMILY_META,
            codec::QUAL_VERSION,
            1000,
            b"0000abcd".to_vec(),
        ),
    ];
    for s in servers {
        let flags = codec::encode_flags(codec::MountFlags(0));
        cells.push(cell(codec::FAMILY_SERVERS, s.as_bytes(), deadline, flags));
    }
    Arc::new(Row {
        key: codec::row_key(name),
        cells,
    })
}

/// ResolveStep("a") answered with these rows (root, then `a`) as whole, shared rows.
fn resolve_with(ctx: MtCtx, rows: &[&Arc<Row>], now: Timestamp) -> MountEntry {
    let mut m = ResolveStep::new(ctx, "a", start(now.0, 1));
    for row in rows {
        let (tag, _) = m.poll_request().unwrap();
        m.handle_response(tag, Ok(Response::Row(Some(Arc::clone(row)))), now);
    }
    assert!(m.poll_request().is_none());
    m.result().unwrap().unwrap()
}

/// Decoded nodes kept beside cached rows: a node read answered with a row the cache holds (a
/// hit hands out the same shared row) gets the node decoded from it before, the same `Arc`,
/// not a fresh decoding; a row written since (the cache's new allocation) is decoded again; a
/// row the cache does not hold is decoded and not kept; and the results are those of a machine
/// without a cache.
#[test]
fn a_cached_row_is_decoded_once() {
    let nodes = Arc::new(CountingNodes::default());
    let ctx = MtCtx {
        nodes: Nodes::shared(nodes.clone()),
        ..MtCtx::new()
    };
    let now = Timestamp(1_000_000);
    let (root, a) = (node_row("", &[], 0), node_row("a", &["/h:1"], 9_000_000));
    nodes.cache(&root, now);
    nodes.cache(&a, now);

    let first = resolve_with(ctx.clone(), &[&root, &a], now);
    assert_eq!(first.servers.len(), 1);
    assert_eq!(
        nodes.kept.lock().unwrap().len(),
        2,
        "both rows decoded once"
    );
    assert!(nodes.hits.lock().unwrap().is_empty());

    let second = resolve_with(ctx.clone(), &[&root, &a], now);
    assert_eq!(second, first);
    let (hits, kept) = (nodes.hits.lock().unwrap(), nodes.kept.lock().unwrap());
    assert_eq!(kept.len(), 2, "nothing decoded again");
    assert_eq!(hits.len(), 2);
    assert!(hits.iter().zip(kept.iter()).all(|(h, k)| Arc::ptr_eq(h, k)));
    drop((hits, kept));

    // `a` written: the cache drops its row (and node) and reads a new one.
    nodes.cache.lock().unwrap().invalidate(&a.key);
    let a2 = node_row("a", &["/h:1", "/h:2"], 9_000_000);
    nodes.cache(&a2, now);
    let third = resolve_with(ctx.clone(), &[&root, &a2], now);
    assert_eq!(third.servers.len(), 2, "the write is seen");
    assert_eq!(
        nodes.kept.lock().unwrap().len(),
        3,
        "the new row is decoded"
    );
    assert_eq!(
        nodes.hits.lock().unwrap().len(),
        3,
        "the root's node is reused"
    );
    // The old row (a read that went around the cache) is decoded again, and not kept.
    let stale = resolve_with(ctx.clone(), &[&root, &a], now);
    assert_eq!(stale, first);
    assert_eq!(nodes.kept.lock().unwrap().len(), 4);
    let cache = nodes.cache.lock().unwrap();
    assert!(cache.node(&a, now).is_none());
    assert_eq!(cache.node(&a2, now).unwrap().servers.len(), 2);
    drop(cache);

    // Behaviour-neutral: the same answers without a cache.
    for (rows, entry) in [([&root, &a], &first), ([&root, &a2], &third)] {
        assert_eq!(&resolve_with(MtCtx::new(), &rows, now), entry);
    }
}

/// A kept node serves only while its servers stay on the same side of their deadlines (a
/// node's decoding depends on time only through them), and goes with its row.
#[test]
fn a_kept_node_serves_only_the_times_it_decodes_the_same() {
    let mut cache = RowCache::default();
    let a = node_row("a", &["/h:1"], 5_000);
    let decode = |now: i64| Arc::new(codec::decode_node(&a, now).unwrap());
    let Lookup::Fetch(id) = cache.lookup(&a.key, Timestamp(1_000)) else {
        panic!()
    };
    cache.complete(&a.key, id, Some(a.clone()), Timestamp(1_000));
    let node = decode(1_000);
    // Only fetched, a childless node is not worth keeping (read once, it would only be freed
    // at eviction); read again (a hit), it is.
    cache.keep_node(&a, node.clone());
    assert!(cache.node(&a, Timestamp(1_000)).is_none());
    assert!(matches!(
        cache.lookup(&a.key, Timestamp(1_000)),
        Lookup::Hit(_)
    ));
    cache.keep_node(&a, node.clone());
    // Live up to its deadline (`is_expired` is `deadline < now`).
    assert!(Arc::ptr_eq(
        &cache.node(&a, Timestamp(5_000)).unwrap(),
        &node
    ));
    assert!(cache.node(&a, Timestamp(5_001)).is_none(), "expired since");
    // Decoded after the deadline: later times, not earlier ones.
    cache.keep_node(&a, decode(6_000));
    assert_eq!(*cache.node(&a, Timestamp(9_000)).unwrap(), *decode(9_000));
    assert!(cache.node(&a, Timestamp(4_000)).is_none());
    // Equal bytes in another allocation are not the cached row: nothing found, nothing kept.
    let copy = Arc::new((*a).clone());
    assert!(cache.node(&copy, Timestamp(9_000)).is_none());
    cache.keep_node(&copy, decode(9_000));
    assert!(cache.node(&copy, Timestamp(9_000)).is_none());
    // A write drops the row and its node.
    cache.begin_write(&a.key);
    assert!(cache.node(&a, Timestamp(9_000)).is_none());

    // A directory's node (child references) is kept from its fetch on.
    let mut dir = (*node_row("d", &[], 0)).clone();
    dir.cells.push(Cell {
        family: codec::FAMILY_CHILDREN.into(),
        qualifier: b"87654321x".to_vec(),
        timestamp: Timestamp(1_000),
        value: codec::MARKER_VALUE.to_vec(),
        labels: vec![],
    });
    let dir = Arc::new(dir);
    let Lookup::Fetch(id) = cache.lookup(&dir.key, Timestamp(1_000)) else {
        panic!()
    };
    cache.complete(&dir.key, id, Some(dir.clone()), Timestamp(1_000));
    let node = Arc::new(codec::decode_node(&dir, 1_000).unwrap());
    assert_eq!(node.children.len(), 1);
    cache.keep_node(&dir, node.clone());
    assert!(Arc::ptr_eq(
        &cache.node(&dir, Timestamp(1_000)).unwrap(),
        &node
    ));
}

/// §17: `cancel` ends an operation `Aborted` at once, giving up the request in flight. The
/// operation deadline is checked between steps instead: a read sent before it keeps its own
/// 60 s request deadline, and the walk ends `Aborted` before its next element.
#[test]
fn cancel_aborts_and_the_deadline_is_checked_between_steps() {
    let mut m = ResolveStep::new(ctx(), "a", start(0, 1));
    let (tag, _) = m.poll_request().unwrap();
    m.cancel(Timestamp(1));
    assert_eq!(m.poll_abort(), Some(tag));
    assert_eq!(m.result(), Some(Err(MtError::Aborted)));
    m.handle_response(tag, Ok(Response::StreamEnd), Timestamp(2));
    assert_eq!(m.result(), None, "a late answer is dropped");

    let until_10 = Start {
        deadline: Timestamp(10),
        ..start(0, 1)
    };
    let mut m = ResolveStep::new(MtCtx::new(), "a", until_10);
    let (tag, _) = m.poll_request().unwrap();
    assert_eq!(m.poll_timeout(), Some(Timestamp(60_000_000)));
    let root = Row {
        key: b"050c5d30/".to_vec(),
        cells: vec![Cell {
            family: "m".into(),
            qualifier: b"v".to_vec(),
            timestamp: Timestamp(0),
            value: b"00000001".to_vec(),
            labels: vec![],
        }],
    };
    m.handle_response(tag, Ok(Response::Row(Some(Arc::new(root)))), Timestamp(20));
    assert!(
        m.poll_request().is_none(),
        "no read of \"a\" past the deadline"
    );
    assert_eq!(m.result(), Some(Err(MtError::Aborted)));
}
