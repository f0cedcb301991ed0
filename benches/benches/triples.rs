#![allow(clippy::unwrap_used)]
//! BadWolf triple store: text parsing + key encoding (pure codec), and on a RedbStore (temp
//! file, non-durable commits) the throughput of AddTriples and of lookups through the sync
//! facade.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rowkit_client::triples::TripleStore;
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::Timestamp;
use rowkit_codec::triples::{Node, Predicate, Triple, keys};
use rowkit_store::RedbStore;
use rowkit_store::driver::ManualClock;
use rowkit_statemachines::triples::{LookupMethod, LookupOptions};

/// Preloaded triples: `/u<sN> "pK"@[] /u<oM>` and temporal `"seen"` triples.
const PRELOAD: usize = 100_000;

fn triple_text(i: usize) -> String {
    rowkit_benches::triple_text(i as u64)
}

fn codec(c: &mut Criterion) {
    let texts: Vec<String> = (0..1000).map(triple_text).collect();
    let mut g = c.benchmark_group("triples_codec");
    g.throughput(Throughput::Elements(texts.len() as u64));
    g.bench_function("parse_1000", |b| {
        b.iter(|| {
            texts
                .iter()
                .map(|t| {
                    Triple::parse(t.as_bytes())
                        .map(|t| t.subject.id().len())
                        .unwrap_or(0)
                })
                .sum::<usize>()
        })
    });
    let parsed: Vec<Triple> = texts
        .iter()
        .map(|t| Triple::parse(t.as_bytes()).unwrap())
        .collect();
    g.bench_function("encode_4_keys_1000", |b| {
        b.iter(|| {
            parsed
                .iter()
                .map(|t| keys::triple_cells(b"bench", t)[0].row_key.len())
                .sum::<usize>()
        })
    });
    g.finish();
}

fn store(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("rowkit-bench-triples-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let redb = RedbStore::open(dir.join("t.redb"))
        .unwrap()
        .with_durable_commits(false);
    let clock = ManualClock::new(Timestamp::from_secs(1_700_000_000));
    let ts = TripleStore::new(SyncDriver::new(&redb, &clock));
    block_on(ts.setup()).unwrap();
    let g = block_on(ts.new_graph(b"bench")).unwrap();
    let all: Vec<Triple> = (0..PRELOAD)
        .map(|i| Triple::parse(triple_text(i).as_bytes()).unwrap())
        .collect();
    for chunk in all.chunks(10_000) {
        block_on(g.add_triples(chunk.to_vec())).unwrap();
    }

    let mut group = c.benchmark_group("triples_redb");
    group.sample_size(10);
    let mut next = PRELOAD;
    group.throughput(Throughput::Elements(1000));
    group.bench_function("add_1000_new_triples", |b| {
        b.iter_batched(
            || {
                let batch: Vec<Triple> = (next..next + 1000)
                    .map(|i| Triple::parse(triple_text(i).as_bytes()).unwrap())
                    .collect();
                next += 1000;
                batch
            },
            |batch| block_on(g.add_triples(batch)).unwrap(),
            BatchSize::LargeInput,
        )
    });
    group.throughput(Throughput::Elements(1));
    let s = Node::parse(b"/u<s4242>").unwrap();
    let p = Predicate::parse(b"\"p1\"@[]").unwrap();
    group.bench_function("objects_lookup", |b| {
        b.iter(|| {
            block_on(g.lookup(
                LookupMethod::Objects(s.clone(), p.clone()),
                LookupOptions::default(),
            ))
            .unwrap()
            .len()
        })
    });
    group.bench_function("triples_for_subject_lookup", |b| {
        b.iter(|| {
            block_on(g.lookup(
                LookupMethod::TriplesForSubject(s.clone()),
                LookupOptions::default(),
            ))
            .unwrap()
            .len()
        })
    });
    let t = all[42_421].clone();
    group.bench_function("exist", |b| b.iter(|| block_on(g.exist(&t)).unwrap()));
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, codec, store);
criterion_main!(benches);
