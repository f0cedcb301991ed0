#![allow(clippy::unwrap_used)]
//! The Go peer benchmarks of `../shared/peers/go-codecs` (bench_test.go), case for case: the
//! same names (`MounttableRowKey/short`, …), the same inputs and the same work per iteration,
//! so that `benches/peers/codecs.sh` can put Go's ns/op and rowkit's side by side.
//!
//! Like the Go benches, each case first checks its function against the same vectors of
//! `../shared/vectors` (read at run time; `ROWKIT_VECTORS_DIR` overrides the directory) and
//! panics on a mismatch; only then does it measure. Results go to `black_box`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use rowkit_codec::mounttable::row_key;
use rowkit_codec::objmeta::keys::{VFormat, master_key, version_key};
use rowkit_codec::objmeta::version_id::VersionIdGenerator;
use rowkit_codec::tracestore::keys::{TYPE_TRACE, calc_sharded_row_name};
use rowkit_codec::tracestore::ops::{OrderedParamSet, Params};
use rowkit_codec::triples::Triple;
use rowkit_codec::triples::keys::{KeyUuids, family};
use serde_json::Value;

/// `shared/vectors`: `$ROWKIT_VECTORS_DIR`, else `../shared/vectors` beside the workspace (as
/// the Go module reads `../../vectors` from `shared/peers/go-codecs`).
fn vectors_dir() -> PathBuf {
    std::env::var_os("ROWKIT_VECTORS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/vectors"))
        })
}

fn load(name: &str) -> Value {
    let path = vectors_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {} is required: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

fn i(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

// ---- shared benchmark inputs (bench_test.go) ------------------------------------------------

/// `benchOPS`: a 10-key OrderedParamSet shaped like a Gold tile's; `name` has 100 values.
fn bench_ops() -> OrderedParamSet {
    let list = |vs: &[&str]| vs.iter().map(|v| v.to_string()).collect::<Vec<_>>();
    let names: Vec<String> = (0..100).map(|i| format!("test{i:02}")).collect();
    let key_order = list(&[
        "arch",
        "compiler",
        "config",
        "cpu_or_gpu",
        "extra_config",
        "model",
        "name",
        "os",
        "source_type",
        "style",
    ]);
    let mut param_set = BTreeMap::new();
    param_set.insert("arch".into(), list(&["x86", "x86_64", "arm", "arm64"]));
    param_set.insert("compiler".into(), list(&["Clang", "GCC", "MSVC"]));
    param_set.insert(
        "config".into(),
        list(&["8888", "565", "gles", "vk", "mtl", "pdf"]),
    );
    param_set.insert("cpu_or_gpu".into(), list(&["CPU", "GPU"]));
    param_set.insert(
        "extra_config".into(),
        list(&["none", "ASAN", "TSAN", "Debug"]),
    );
    param_set.insert(
        "model".into(),
        list(&["Pixel2", "Pixel3", "Nexus5x", "MacMini7.1", "Golo", "NUC"]),
    );
    param_set.insert("name".into(), names);
    param_set.insert(
        "os".into(),
        list(&["Android", "Ubuntu18", "Win10", "Mac10.14", "iOS"]),
    );
    param_set.insert(
        "source_type".into(),
        list(&["gm", "image", "svg", "colorImage"]),
    );
    param_set.insert("style".into(), list(&["default", "dark"]));
    OrderedParamSet::from_parts(key_order, param_set)
}

/// `benchParams`: one trace's 10-key Params map.
fn bench_params() -> Params {
    [
        ("arch", "arm64"),
        ("compiler", "Clang"),
        ("config", "vk"),
        ("cpu_or_gpu", "GPU"),
        ("extra_config", "none"),
        ("model", "Pixel3"),
        ("name", "test68"),
        ("os", "Android"),
        ("source_type", "gm"),
        ("style", "dark"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// `benchEncoded`: the encoding of [`bench_params`].
const BENCH_ENCODED: &str = ",0=3,1=0,2=3,3=1,4=0,5=1,6=68,7=0,8=0,9=1,";
/// `benchEncodedRow`: crc32_ieee(BENCH_ENCODED) mod 32 = 27 (computed independently with zlib).
const BENCH_ENCODED_ROW: &str = "27:ts:t:2147483647:,0=3,1=0,2=3,3=1,4=0,5=1,6=68,7=0,8=0,9=1,";

fn params_of(v: &Value) -> Params {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), s(v).to_string()))
        .collect()
}

fn ops_of(case: &Value) -> OrderedParamSet {
    OrderedParamSet::from_parts(
        case["key_order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| s(k).to_string())
            .collect(),
        case["param_set"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, vs)| {
                let values = vs.as_array().unwrap().iter().map(|v| s(v).to_string());
                (k.clone(), values.collect())
            })
            .collect(),
    )
}

// ---- (1) mounttable -------------------------------------------------------------------------

/// `mounttableInputs`: (label, name); each is a `row_keys` vector.
const MOUNTTABLE_INPUTS: [(&str, &str); 3] = [
    ("short", "foo"),
    ("deep", "one/bright/day"),
    ("unclean", "/foo//bar/"),
];

fn check_mounttable() {
    let vectors = load("mounttable.json");
    for (_, name) in MOUNTTABLE_INPUTS {
        let matching: Vec<&Value> = vectors["row_keys"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| s(&v["name"]) == name)
            .collect();
        assert!(!matching.is_empty(), "no row_keys vector for {name:?}");
        for v in matching {
            assert_eq!(
                row_key(name),
                s(&v["row_key"]).as_bytes(),
                "row_key({name:?})"
            );
        }
    }
}

fn mounttable(c: &mut Criterion) {
    check_mounttable();
    let mut g = c.benchmark_group("MounttableRowKey");
    for (label, name) in MOUNTTABLE_INPUTS {
        g.bench_function(label, |b| b.iter(|| row_key(black_box(name))));
    }
    g.finish();
}

// ---- (2) Gold --------------------------------------------------------------------------------

fn type_char(t: &str) -> char {
    let mut chars = t.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => c,
        _ => panic!("row type {t:?} is not one character"),
    }
}

fn check_trace_row_name(vectors: &Value) {
    for idx in [0, 3, 5] {
        let v = &vectors["calc_sharded_row_name"][idx];
        let got = calc_sharded_row_name(
            i32::try_from(i(&v["tile_key"])).unwrap(),
            type_char(s(&v["type"])),
            s(&v["subkey"]).as_bytes(),
        );
        assert_eq!(got, s(&v["row"]).as_bytes(), "calc_sharded_row_name[{idx}]");
    }
    let enc = bench_ops().encode_params(&bench_params()).unwrap();
    assert_eq!(enc, BENCH_ENCODED, "10-key encode");
}

fn check_bench_round_trip() {
    let ops = bench_ops();
    let enc = ops.encode_params(&bench_params()).unwrap();
    assert_eq!(enc, BENCH_ENCODED, "10-key encode");
    let dec = ops.decode_params(enc.as_bytes()).unwrap();
    assert_eq!(dec, bench_params(), "10-key decode");
}

fn check_ops_encode(vectors: &Value) {
    for idx in [0, 1, 3] {
        let v = &vectors["ops_encode"][idx];
        let got = ops_of(v).encode_params(&params_of(&v["params"]));
        assert_eq!(
            got.as_deref().ok(),
            Some(s(&v["encoded"])),
            "ops_encode[{idx}]"
        );
    }
    check_bench_round_trip();
}

fn check_ops_decode(vectors: &Value) {
    for idx in [0, 10, 6] {
        let v = &vectors["ops_decode"][idx];
        let got = ops_of(v).decode_params(s(&v["encoded"]).as_bytes());
        match v.get("error").and_then(Value::as_str) {
            Some(want) => {
                let err = got.expect_err("ops_decode: an error is expected");
                assert!(
                    err.to_string().contains(want),
                    "ops_decode[{idx}]: {err} does not contain {want}"
                );
            }
            None => assert_eq!(got.unwrap(), params_of(&v["params"]), "ops_decode[{idx}]"),
        }
    }
    check_bench_round_trip();
}

fn gold(c: &mut Criterion) {
    let vectors = load("tracestore.json");
    check_trace_row_name(&vectors);
    assert_eq!(
        calc_sharded_row_name(2147483647, TYPE_TRACE, BENCH_ENCODED.as_bytes()),
        BENCH_ENCODED_ROW.as_bytes(),
        "10-key row name"
    );
    let v0 = &vectors["calc_sharded_row_name"][0];
    let cases = [
        (
            "3keys",
            s(&v0["subkey"]).to_string(),
            i32::try_from(i(&v0["tile_key"])).unwrap(),
        ),
        ("10keys", BENCH_ENCODED.to_string(), 2147483647),
    ];
    let mut g = c.benchmark_group("GoldTraceRowName");
    for (label, subkey, tile) in &cases {
        g.bench_function(*label, |b| {
            b.iter(|| calc_sharded_row_name(black_box(*tile), TYPE_TRACE, subkey.as_bytes()))
        });
    }
    g.finish();

    check_ops_encode(&vectors);
    let ops = bench_ops();
    let params = bench_params();
    c.bench_function("GoldOPSEncode", |b| {
        b.iter(|| black_box(&ops).encode_params(black_box(&params)))
    });

    check_ops_decode(&vectors);
    c.bench_function("GoldOPSDecode", |b| {
        b.iter(|| black_box(&ops).decode_params(black_box(BENCH_ENCODED.as_bytes())))
    });
}

// ---- (3) BadWolf -----------------------------------------------------------------------------

/// `tripleInputs`: (label, index into `triples`).
const TRIPLE_INPUTS: [(&str, usize); 3] = [
    ("immutable_node", 0),
    ("temporal_node", 1),
    ("float_literal", 2),
];

/// One of the four cells of a triple as the Go peer returns it: row key, family, qualifier.
type RowCell = (Vec<u8>, &'static str, &'static [u8]);

/// Go's `ParseTripleRowKeys`: parse the line, then the four cells OSP, POS, SOP, SPO.
fn parse_triple_row_keys(graph: &[u8], line: &[u8]) -> Option<[RowCell; 4]> {
    let triple = Triple::parse(line).ok()?;
    let fam = family(&triple.predicate);
    let keys = KeyUuids::of(&triple).row_keys(graph);
    Some(keys.map(|(index, key)| (key, fam, index.qualifier())))
}

fn check_triples(vectors: &Value) {
    for (_, idx) in TRIPLE_INPUTS {
        let v = &vectors["triples"][idx];
        let cells = parse_triple_row_keys(s(&v["graph"]).as_bytes(), s(&v["input"]).as_bytes())
            .unwrap_or_else(|| panic!("triples[{idx}] does not parse"));
        let want = v["cells"].as_array().unwrap();
        assert_eq!(want.len(), 4, "triples[{idx}]: vector cells");
        for (k, (row, fam, qual)) in cells.iter().enumerate() {
            let column = format!("{fam}:{}", String::from_utf8_lossy(qual));
            assert_eq!(
                (String::from_utf8_lossy(row).as_ref(), column.as_str()),
                (s(&want[k]["row"]), s(&want[k]["column"])),
                "triples[{idx}] cell {k}"
            );
        }
    }
}

fn badwolf(c: &mut Criterion) {
    let vectors = load("triples.json");
    check_triples(&vectors);
    let mut g = c.benchmark_group("BadWolfTripleRowKeys");
    for (label, idx) in TRIPLE_INPUTS {
        let v = &vectors["triples"][idx];
        let graph = s(&v["graph"]).as_bytes();
        let line = s(&v["input"]).as_bytes();
        g.bench_function(label, |b| {
            b.iter(|| parse_triple_row_keys(black_box(graph), black_box(line)))
        });
    }
    g.finish();
}

// ---- (4) Arsenal -----------------------------------------------------------------------------

/// The pid of the backend wrapper's info `"<pid>.<uidCounter>"`.
const PID: u64 = 4242;

fn check_version_key_v1(vectors: &Value) {
    for idx in [1, 2, 4] {
        let v = &vectors["key_formats"][idx];
        assert_eq!(s(&v["vFormat"]), "v1", "key_formats[{idx}]");
        let (key, vid) = (s(&v["object_key"]), s(&v["version_id"]));
        assert_eq!(
            version_key(VFormat::V1, key, vid),
            s(&v["version_key"]),
            "key_formats[{idx}] version key"
        );
        assert_eq!(
            master_key(VFormat::V1, key),
            s(&v["master_key"]),
            "key_formats[{idx}] master key"
        );
    }
}

fn check_version_id(vectors: &Value) {
    for idx in [0, 1, 2] {
        let v = &vectors["version_id_generate"][idx];
        let mut g = VersionIdGenerator {
            last_timestamp: i(&v["state_before"]["lastTimestamp"]),
            last_seq: i(&v["state_before"]["lastSeq"]),
            uid_counter: 0,
        };
        let encoding = v["env_S3_VERSION_ID_ENCODING_TYPE"].as_str();
        let got = g.generate_with_info(
            i(&v["now_ms"]) * 1000,
            s(&v["info"]),
            s(&v["replication_group_id"]),
            encoding,
        );
        assert_eq!(
            (got.as_str(), g.last_timestamp, g.last_seq),
            (
                s(&v["version_id"]),
                i(&v["state_after"]["lastTimestamp"]),
                i(&v["state_after"]["lastSeq"])
            ),
            "version_id_generate[{idx}]"
        );
    }
    // The backend wrapper builds info "<pid>.<uidCounter>" (vector 0: pid 4242, counter 0).
    let v = &vectors["version_id_generate"][0];
    let mut g = VersionIdGenerator::default();
    let got = g.generate(
        i(&v["now_ms"]) * 1000,
        PID,
        s(&v["replication_group_id"]),
        None,
    );
    assert_eq!(
        (got.as_str(), g.uid_counter),
        (s(&v["version_id"]), 1),
        "wrapper"
    );
}

/// The real clock in µs, read on every call as Go's `time.Now()` (Arsenal's `Date.now()`).
fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

fn arsenal(c: &mut Criterion) {
    let vectors = load("objmeta.json");
    check_version_key_v1(&vectors);
    let v = &vectors["key_formats"][2]; // foo/bar, 33-character version id
    let (key, vid) = (s(&v["object_key"]), s(&v["version_id"]));
    c.bench_function("ArsenalVersionKeyV1", |b| {
        b.iter(|| version_key(VFormat::V1, black_box(key), black_box(vid)))
    });

    check_version_id(&vectors);
    let mut g = c.benchmark_group("ArsenalVersionID");
    g.bench_function("real_clock", |b| {
        let mut gen_ = VersionIdGenerator::default();
        b.iter(|| gen_.generate(now_us(), PID, black_box("RG001"), None))
    });
    g.bench_function("injected_clock", |b| {
        let mut gen_ = VersionIdGenerator::default();
        let mut clock: i64 = 0;
        b.iter(|| {
            // 1 ms more every 1024 ids, as the Go peer's NowMs.
            clock += 1;
            let now_ms = 1_700_000_000_000 + (clock >> 10);
            gen_.generate(now_ms * 1000, PID, black_box("RG001"), None)
        })
    });
    g.finish();

    c.bench_function("ArsenalNewVersionKey", |b| {
        let mut gen_ = VersionIdGenerator::default();
        b.iter(|| {
            let vid = gen_.generate(now_us(), PID, black_box("RG001"), None);
            version_key(VFormat::V1, black_box("foo/bar"), &vid)
        })
    });
}

fn config() -> Criterion {
    // Short per case, so one round of benches/peers/codecs.sh takes about a minute here.
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = mounttable, gold, badwolf, arsenal
}
criterion_main!(benches);
