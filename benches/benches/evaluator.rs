//! Filter evaluator throughput (cells/s) on one 2 000-cell row, for the filter shapes the
//! schemas use: latest version per column, a column range, regexes, and an interleave with
//! labels.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rowkit_benches::wide_row;
use rowkit_codec::model::{KeyBound, RowFilter};
use rowkit_store::semantics::CompiledFilter;
use rowkit_statemachines::SplitMix64;

fn filters() -> Vec<(&'static str, RowFilter)> {
    vec![
        ("pass_all", RowFilter::PassAll),
        ("latest_per_column", RowFilter::CellsPerColumnLimit(1)),
        (
            "family_regex_column_range_latest",
            RowFilter::Chain(vec![
                RowFilter::FamilyNameRegex("f1".into()),
                RowFilter::ColumnRange {
                    family: "f1".into(),
                    start: KeyBound::Closed(b"col00010".to_vec()),
                    end: KeyBound::Open(b"col00090".to_vec()),
                },
                RowFilter::CellsPerColumnLimit(1),
            ]),
        ),
        (
            "value_regex",
            RowFilter::ValueRegex(b"value-1-000[0-4]\\d-\\C*".to_vec()),
        ),
        (
            "interleave_labels_strip",
            RowFilter::Interleave(vec![
                RowFilter::Chain(vec![
                    RowFilter::CellsPerColumnLimit(1),
                    RowFilter::ApplyLabel("latest".into()),
                ]),
                RowFilter::Chain(vec![
                    RowFilter::StripValue,
                    RowFilter::ApplyLabel("all".into()),
                ]),
            ]),
        ),
    ]
}

fn bench_evaluator(c: &mut Criterion) {
    let row = wide_row(b"row", 2, 100, 10);
    let mut group = c.benchmark_group("evaluator");
    group.throughput(Throughput::Elements(row.cells.len() as u64));
    for (name, filter) in filters() {
        let compiled = CompiledFilter::new(&filter).expect("valid filter");
        group.bench_function(name, |b| {
            b.iter_batched(
                || row.cells.clone(),
                |cells| compiled.apply(&row.key, cells, &mut SplitMix64::new(1)),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench_evaluator);
criterion_main!(benches);
