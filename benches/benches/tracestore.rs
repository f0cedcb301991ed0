//! Trace store benches (`spec/tracestore.md`): param encode/decode and gob, Put ingest rate
//! and tile read time on RedbStore in both layouts, and the digest map's rows fetched per
//! digest versus a layout with one row per digest (the design document's 0.4 s vs 100 s).
//!
//! `ROWKIT_BENCH_TRACES` sets the traces of the tile bench (default 1 000; the figure
//! is 10 000, which takes minutes to populate).
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rowkit_client::CallOptions;
use rowkit_client::tracestore::{TraceStore, setup_table};
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::model::{Mutation, RowFilter, RowRange, RowSet, Timestamp};
use rowkit_codec::tracestore::cells::*;
use rowkit_codec::tracestore::ops::params_from;
use rowkit_codec::tracestore::{Layout, OrderedParamSet, decode_ops_gob, encode_ops_gob, ops_hash};
use rowkit_statemachines::MutateRowsEntry;
use rowkit_statemachines::tracestore::PutEntry;
use rowkit_store::driver::ManualClock;
use rowkit_store::{MemoryStore, RedbStore, Store};
use rowkit_testkit::scenarios::tracestore::{TABLE, raw_read, raw_write};

const T0: i64 = 1_557_018_184_000_000;

fn ops() -> OrderedParamSet {
    let mut ops = OrderedParamSet::new();
    let mut ps = rowkit_codec::tracestore::ParamSet::new();
    ps.insert(
        "config".into(),
        ["8888", "565", "gpu", "gles"].map(String::from).to_vec(),
    );
    ps.insert(
        "name".into(),
        (0..1000).map(|i| format!("test{i:04}")).collect(),
    );
    ps.insert(
        "arch".into(),
        ["x86", "arm", "riscv"].map(String::from).to_vec(),
    );
    ps.insert(
        "device".into(),
        (0..50).map(|i| format!("device{i}")).collect(),
    );
    ops.update(&ps);
    ops
}

fn codec(c: &mut Criterion) {
    let ops = ops();
    let params = params_from([
        ("config", "gles"),
        ("name", "test0768"),
        ("arch", "arm"),
        ("device", "device42"),
    ]);
    let enc = ops.encode_params(&params).unwrap();
    let gob = encode_ops_gob(&ops);
    let mut g = c.benchmark_group("tracestore_codec");
    g.bench_function("encode_params", |b| {
        b.iter(|| ops.encode_params(&params).unwrap())
    });
    g.bench_function("decode_params", |b| {
        b.iter(|| ops.decode_params(enc.as_bytes()).unwrap())
    });
    g.throughput(Throughput::Bytes(gob.len() as u64));
    g.bench_function("gob_encode_1057_values", |b| {
        b.iter(|| encode_ops_gob(&ops))
    });
    g.bench_function("gob_decode_1057_values", |b| {
        b.iter(|| decode_ops_gob(&gob).unwrap())
    });
    g.finish();
}

fn digest(i: u64) -> String {
    ops_hash(i.to_string().as_bytes())
}

fn entries(traces: u64, commit: u64) -> Vec<PutEntry> {
    (0..traces)
        .map(|t| PutEntry {
            params: params_from([
                ("name", format!("test{t}")),
                ("config", format!("c{}", t % 7)),
            ]),
            options: Default::default(),
            digest: digest((t * 31 + commit) % 5000),
        })
        .collect()
}

fn redb() -> RedbStore {
    RedbStore::in_memory().unwrap().with_durable_commits(false)
}

fn ingest_and_tile(c: &mut Criterion) {
    let traces: u64 = std::env::var("ROWKIT_BENCH_TRACES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let mut g = c.benchmark_group("tracestore_redb");
    g.sample_size(10);
    for layout in [Layout::Md5, Layout::DigestId] {
        let store = redb();
        block_on(setup_table(
            &SyncDriver::new(&store, &ManualClock::new(Timestamp(0))),
            TABLE,
            layout,
        ))
        .unwrap();
        let clock = ManualClock::new(Timestamp(T0));
        let gold = block_on(TraceStore::open(
            SyncDriver::new(&store, &clock),
            TABLE,
            None,
        ))
        .unwrap()
        .with_options(CallOptions {
            seed: 1,
            ..CallOptions::default()
        });
        let batch = entries(1000, 0);
        block_on(gold.put(0, None, batch.clone(), Timestamp(T0))).unwrap();
        g.throughput(Throughput::Elements(batch.len() as u64));
        g.bench_function(format!("put_1000_values_{}", layout.name()), |b| {
            b.iter(|| block_on(gold.put(1, None, batch.clone(), Timestamp(T0))).unwrap())
        });
        // A full tile: `traces` traces x 256 commits.
        let started = Instant::now();
        for commit in 0..256u64 {
            block_on(gold.put(commit as i64, None, entries(traces, commit), Timestamp(T0)))
                .unwrap();
        }
        let took = started.elapsed();
        eprintln!(
            "populate {} traces x 256 commits ({}): {:.2?} = {:.0} values/s",
            traces,
            layout.name(),
            took,
            (traces * 256) as f64 / took.as_secs_f64()
        );
        g.throughput(Throughput::Elements(traces * 256));
        g.bench_function(format!("read_tile_{traces}x256_{}", layout.name()), |b| {
            b.iter(|| {
                let reader = block_on(TraceStore::open(
                    SyncDriver::new(&store, &clock),
                    TABLE,
                    None,
                ))
                .unwrap()
                .with_options(CallOptions {
                    seed: 2,
                    ..CallOptions::default()
                });
                let tile = block_on(reader.read_range(0, 255)).unwrap();
                assert_eq!(tile.traces.len() as u64, traces);
            })
        });
    }
    g.finish();
}

/// The design document's argument, measured: a map of N digests in 4096-way split rows vs one
/// row per digest.
fn digest_map(c: &mut Criterion) {
    const N: u64 = 100_000;
    const LOOKUP: u64 = 10_000;
    let split = MemoryStore::new();
    let per_digest = MemoryStore::new();
    for s in [&split, &per_digest] {
        block_on(setup_table(
            &SyncDriver::new(s, &ManualClock::new(Timestamp(0))),
            TABLE,
            Layout::DigestId,
        ))
        .unwrap();
    }
    let mut rows: std::collections::BTreeMap<Vec<u8>, Vec<Mutation>> = Default::default();
    let mut single = Vec::new();
    for i in 0..N {
        let d = digest(i);
        let set = |q: Vec<u8>| Mutation::SetCell {
            family: "D".into(),
            qualifier: q,
            timestamp: Timestamp(T0),
            value: encode_digest_map_value(i + 1),
        };
        rows.entry(digest_map_row(&d).unwrap())
            .or_default()
            .push(set(digest_map_qualifier(&d).unwrap()));
        single.push(MutateRowsEntry {
            row_key: format!("xx:ts:d:0000000000:{d}").into_bytes(),
            mutations: vec![set(b"id".to_vec())],
        });
    }
    raw_write(
        &split,
        rows.into_iter()
            .map(|(row_key, mutations)| MutateRowsEntry { row_key, mutations })
            .collect(),
    );
    raw_write(&per_digest, single);
    let clock = ManualClock::new(Timestamp(T0));
    let wanted: Vec<String> = (0..LOOKUP).map(digest).collect();
    let mut g = c.benchmark_group("tracestore_digest_map");
    g.sample_size(10);
    let mut rows_fetched = 0;
    g.bench_function("lookup_10000_of_100000_split_rows", |b| {
        b.iter(|| {
            let mut gold = block_on(TraceStore::open(
                SyncDriver::new(&split as &dyn Store, &clock),
                TABLE,
                None,
            ))
            .unwrap()
            .with_options(CallOptions {
                seed: 1,
                ..CallOptions::default()
            });
            block_on(gold.assign_digest_ids(wanted.clone())).unwrap();
            rows_fetched = gold.state().digest_cache().len();
        })
    });
    g.bench_function("full_read_100000_split_rows", |b| {
        b.iter(|| {
            raw_read(
                &split,
                RowSet::range(RowRange::prefix(b"")),
                Some(RowFilter::FamilyNameRegex("D".into())),
            )
            .len()
        })
    });
    g.bench_function("full_read_100000_one_row_per_digest", |b| {
        b.iter(|| {
            raw_read(
                &per_digest,
                RowSet::range(RowRange::prefix(b"")),
                Some(RowFilter::FamilyNameRegex("D".into())),
            )
            .len()
        })
    });
    g.bench_function("lookup_10000_one_row_per_digest", |b| {
        b.iter(|| {
            let keys = wanted
                .iter()
                .map(|d| format!("xx:ts:d:0000000000:{d}").into_bytes())
                .collect();
            raw_read(
                &per_digest,
                RowSet {
                    row_keys: keys,
                    row_ranges: vec![],
                },
                None,
            )
            .len()
        })
    });
    g.finish();
    let split_rows = raw_read(&split, RowSet::range(RowRange::prefix(b"")), None).len();
    let lookup_rows: std::collections::BTreeSet<Vec<u8>> =
        wanted.iter().map(|d| digest_map_row(d).unwrap()).collect();
    eprintln!(
        "rows fetched: lookup of {LOOKUP} digests = {} split rows (vs {LOOKUP} one-row-per-digest), {} digests cached; full map = {split_rows} rows (vs {N})",
        lookup_rows.len(),
        rows_fetched
    );
}

criterion_group!(benches, codec, digest_map, ingest_and_tile);
criterion_main!(benches);
