//! Key explanation (`rowkit_codec::explain`), native: the same keys as the Node measurement of
//! the wasm package (`wasm/bench/keys.mjs`), so benches/README.md can compare the two.
#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use rowkit_codec::explain;
use std::hint::black_box;

/// One row key per schema (mt, gold, s3, graph); shared with `wasm/bench/keys.mjs`.
const KEYS: [&[u8]; 4] = [
    b"88e481b8/foo",
    b"03:ts:t:2147483646:,0=1,1=3,3=0,",
    b"b\x00\x7fMk",
    b"test:SPO:2821fefc-a86e-597b-b187-58805cad8813:91b6c9d2-69e3-5cec-a465-d200f4872671:e5364b94-fe66-5b01-a526-5fdf1e028e80",
];

fn bench(c: &mut Criterion) {
    c.bench_function("explain/decode_auto x4 (one key per schema)", |b| {
        b.iter(|| {
            for k in KEYS {
                black_box(explain::decode_auto(black_box(k)).unwrap());
            }
        })
    });
    c.bench_function("explain/encode_graph", |b| {
        b.iter(|| {
            black_box(
                explain::encode_graph("test", black_box("/u<joe>\t\"parent_of\"@[]\t/u<mary>"))
                    .unwrap(),
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
