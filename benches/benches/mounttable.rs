//! Mount table: row-key encode/decode, and mount + resolve through the `MountTable` facade on
//! a RedbStore holding 1 k / 100 k nodes (1 M with `ROWKIT_BENCH_1M=1`; populating it takes a
//! long time on a small machine).

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rowkit_codec::mounttable as mt;
use rowkit_embedded::RedbStore;
use rowkit_embedded::driver::SystemClock;
use rowkit_embedded::mounttable::{MountTable, MtConfig, server_caller};
use rowkit_statemachines::mounttable::Tables;

fn bench_keys(c: &mut Criterion) {
    let mut group = c.benchmark_group("mt_key");
    group.throughput(Throughput::Elements(1));
    group.bench_function("encode users/alice/devices/phone", |b| {
        b.iter(|| mt::row_key(std::hint::black_box("users/alice/devices/phone")))
    });
    let key = mt::row_key("users/alice/devices/phone");
    group.bench_function("decode+verify", |b| {
        b.iter(|| {
            let name = mt::decode_row_key(std::hint::black_box(&key)).unwrap_or_default();
            let name = std::str::from_utf8(name).unwrap_or_default();
            mt::row_key(name) == key
        })
    });
    let perms = mt::decode_permissions(br#"{"Admin":{"In":["root"]},"Read":{"In":["...","alice","bob"]},"%%/Admin":{"In":["%%"]}}"#)
        .unwrap_or_default();
    let bytes = mt::encode_permissions(&perms);
    group.bench_function("permissions encode", |b| {
        b.iter(|| mt::encode_permissions(std::hint::black_box(&perms)))
    });
    group.bench_function("permissions decode", |b| {
        b.iter(|| mt::decode_permissions(std::hint::black_box(&bytes)))
    });
    group.finish();
}

fn bench_ops(c: &mut Criterion) {
    let mut sizes = vec![1_000usize, 100_000];
    if std::env::var("ROWKIT_BENCH_1M").is_ok() {
        sizes.push(1_000_000);
    }
    let mut group = c.benchmark_group("mt_ops_redb");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    for n in sizes {
        let dir =
            std::env::temp_dir().join(format!("rowkit-bench-mt-{n}-{}.redb", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let Ok(store) = RedbStore::open(&dir) else {
            continue;
        };
        let store = store.with_durable_commits(false);
        let clock = SystemClock;
        let t = MountTable::new(
            &store,
            &clock,
            MtConfig {
                tables: Tables::new("mt"),
                ..MtConfig::default()
            },
        );
        if t.setup(None).is_err() {
            continue;
        }
        let who = server_caller();
        // n nodes: 100 top-level directories with n/100 leaves each, every leaf mounted.
        for i in 0..n {
            let _ = t.mount(
                &who,
                &format!("d{}/n{i}", i % 100),
                "/127.0.0.1:8000/x",
                0,
                0,
            );
        }
        group.throughput(Throughput::Elements(1));
        let mut i = 0usize;
        group.bench_function(format!("resolve {n} nodes"), |b| {
            b.iter(|| {
                i = (i + 7919) % n;
                t.resolve(&who, &format!("d{}/n{i}/rest", i % 100))
            })
        });
        let mut j = 0usize;
        group.bench_function(format!("mount refresh {n} nodes"), |b| {
            b.iter(|| {
                j = (j + 7919) % n;
                t.mount(
                    &who,
                    &format!("d{}/n{j}", j % 100),
                    "/127.0.0.1:8000/x",
                    0,
                    0,
                )
            })
        });
        drop(t);
        drop(store);
        let _ = std::fs::remove_file(&dir);
    }
    group.finish();
}

criterion_group!(benches, bench_keys, bench_ops);
criterion_main!(benches);
