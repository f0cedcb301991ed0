//! Mount table codecs: row-key encode/decode and permissions encode/decode. Mount and resolve
//! at 1 k to 1 M nodes are in the scale bench (`benches/scale.rs`).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rowkit_codec::mounttable as mt;

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

criterion_group!(benches, bench_keys);
criterion_main!(benches);
