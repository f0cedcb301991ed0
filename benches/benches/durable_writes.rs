//! Durable row writes on RedbStore: 1 writer against 16 concurrent writers, each write one
//! `write_row` (one cell put, a distinct row per write) on a file opened as `rowkit serve`
//! opens it (durable commits). Criterion's time per iteration is the wall time per write over
//! all writers together, so its throughput line is the store's writes/s. Issue 35's bar:
//! 16 writers ≥ 6 × one writer (group commit shares one fsync among concurrent writers).
//!
//! ```sh
//! cargo bench -p rowkit-benches --bench durable_writes
//! ```
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rowkit_codec::model::{ColumnFamily, Timestamp};
use rowkit_store::{RedbStore, RowWrite, TableStorage};

/// A fresh durable store in a new directory under the system temp dir (removed at the end).
fn store(dir: &std::path::Path) -> RedbStore {
    let store = RedbStore::open(dir.join("durable-writes.redb")).unwrap();
    store
        .create_table("t", &[ColumnFamily::max_versions("v", 1)])
        .unwrap();
    store
}

fn durable_writes(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("rowkit-durable-writes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = store(&dir);
    // Distinct rows for every write of the run, as independent clients would write.
    let next_row = AtomicU64::new(0);
    let value = [7u8; 100];
    let mut group = c.benchmark_group("redb_durable_writes");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(1));
    for writers in [1u64, 16] {
        group.bench_function(format!("writers/{writers}"), |b| {
            b.iter_custom(|iters| {
                let per_writer = iters.div_ceil(writers);
                let started = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..writers {
                        s.spawn(|| {
                            for _ in 0..per_writer {
                                let n = next_row.fetch_add(1, Ordering::Relaxed);
                                let key = format!("row/{n:012}");
                                store
                                    .write_row("t", key.as_bytes(), |row| {
                                        row.put("v", b"c", Timestamp(0), &value)
                                    })
                                    .unwrap();
                            }
                        });
                    }
                });
                // Per write actually made (a multiple of `writers`, at least `iters`).
                started
                    .elapsed()
                    .mul_f64(iters as f64 / (per_writer * writers) as f64)
            })
        });
    }
    group.finish();
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, durable_writes);
criterion_main!(benches);
