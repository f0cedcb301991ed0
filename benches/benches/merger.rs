//! ReadRows chunk merger throughput (chunks/s): whole cells, and values split into pieces as
//! production does for large cells.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rowkit_benches::wide_row;
use rowkit_store::semantics::row_chunks;
use rowkit_statemachines::ReadRowsResponse;
use rowkit_statemachines::readrows::ChunkMerger;

/// 200 rows of 50 cells each, chunked by the stores' own chunk producer; one response per row.
fn stream(split_values_every: Option<usize>) -> Vec<ReadRowsResponse> {
    (0..200)
        .map(|i| {
            let row = wide_row(format!("row{i:06}").as_bytes(), 2, 5, 5);
            ReadRowsResponse {
                chunks: row_chunks(&row, split_values_every),
                last_scanned_row_key: Vec::new(),
            }
        })
        .collect()
}

fn bench_merger(c: &mut Criterion) {
    let mut group = c.benchmark_group("merger");
    for (name, split) in [
        ("whole_cells", None),
        ("values_split_every_4_bytes", Some(4)),
    ] {
        let responses = stream(split);
        let chunks: usize = responses.iter().map(|r| r.chunks.len()).sum();
        group.throughput(Throughput::Elements(chunks as u64));
        group.bench_function(name, |b| {
            b.iter_batched(
                || responses.clone(),
                |responses| {
                    let mut merger = ChunkMerger::new(false, 0);
                    let mut rows = 0usize;
                    for r in responses {
                        merger.push_response(r).expect("valid stream");
                        while merger.pop_row().is_some() {
                            rows += 1;
                        }
                    }
                    merger.end_of_stream().expect("complete stream");
                    rows
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench_merger);
criterion_main!(benches);
