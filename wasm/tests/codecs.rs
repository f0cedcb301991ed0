//! The key codecs through the JS API (`decodeKey`, `encode*Key`, and `ObjectMetadata` for the
//! metastore rows) on the shared vectors, read at run time from the harness's server, as the
//! native tests in `codec/tests/*_vectors.rs` check them. Where a vector lies outside what the
//! JS API accepts (tiles no int32 commit number reaches), the codec itself is checked on wasm32.
//! Runs in Node and in headless Chromium.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used, missing_docs)]
// Without the harness's URLs the tests must fail (not skip), at run time with a clear message.
#![allow(clippy::option_env_unwrap)]

mod harness;

use harness::{js_at, json, vectors, vectors_js, wait};
use rowkit_codec::model::{RowRange, RowSet};
use rowkit_codec::tracestore::keys::{ops_row_name, tile_key};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{ReadRowsRequest, RetryPolicy};
use rowkit_store::driver::Clock;
use rowkit_wasm::ObjectMetadata;
use rowkit_wasm::backend::{PageClock, page_store};
use rowkit_wasm::keys::{
    decode_key, encode_gold_digest_key, encode_gold_trace_key, encode_graph_key, encode_mt_key,
    encode_s3_key,
};
use serde_json::Value;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

fn hex_key(h: &str) -> JsValue {
    JsValue::from_str(&format!("hex:{h}"))
}

fn text_key(s: &str) -> JsValue {
    JsValue::from_str(&format!("hex:{}", hex::encode(s.as_bytes())))
}

#[wasm_bindgen_test]
async fn mounttable_row_keys() {
    let v = vectors("mounttable").await;
    let cases = v["row_keys"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let enc = json(&encode_mt_key(c["name"].as_str().unwrap()));
        assert_eq!(enc["row_key_hex"], c["row_key_hex"], "{c}");
        let dec = json(&decode_key("mt", hex_key(c["row_key_hex"].as_str().unwrap())).unwrap());
        assert_eq!(dec["hash_ok"], true, "{c}");
        assert_eq!(dec["hash"], c["fnv1_32"], "{c}");
    }
    for c in v["row_key_decode"].as_array().unwrap() {
        let r = decode_key("mt", text_key(c["row_key"].as_str().unwrap()));
        match c["name"].as_str() {
            Some(name) => assert_eq!(json(&r.unwrap())["name"], name, "{c}"),
            None => assert!(r.is_err(), "{c}"),
        }
    }
    for c in v["counter_row_keys"].as_array().unwrap() {
        let d = json(&decode_key("auto", text_key(c["row_key"].as_str().unwrap())).unwrap());
        assert_eq!(
            (&d["schema"], &d["kind"]),
            (&"mt".into(), &"counter".into())
        );
        assert_eq!(d["counter"], c["counter"]);
        assert_eq!(d["creator"], c["creator"]);
    }
}

#[wasm_bindgen_test]
async fn tracestore_row_keys() {
    let v = vectors("tracestore").await;
    let cases = v["sharded_row_names"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let d = json(&decode_key("auto", text_key(c["row"].as_str().unwrap())).unwrap());
        assert_eq!(d["schema"], "gold", "{c}");
        assert_eq!(d["shard"], c["shard"], "{c}");
        assert_eq!(d["tile_key"], c["tile_key"], "{c}");
        assert_eq!(d["subkey"], c["subkey"], "{c}");
    }
    for c in v["digest_map_cells"].as_array().unwrap() {
        let d = json(&encode_gold_digest_key(c["digest"].as_str().unwrap()).unwrap());
        assert_eq!(d["row_key"], c["row"], "{c}");
        assert_eq!(d["qualifier"], c["qualifier"], "{c}");
    }
    for c in v["repo_index_to_tile"].as_array().unwrap() {
        let d = json(&encode_gold_trace_key(c["repo_index"].as_f64().unwrap(), ",0=1,").unwrap());
        assert_eq!(d["tile_key"], c["tile_key"], "{c}");
        assert_eq!(d["offset"], c["offset"], "{c}");
        assert_eq!(d["qualifier_md5"]["qualifier"], c["column"], "{c}");
    }
}

/// The first commit (repo index) of the tile with key `tile_key`, as a JS number, if Gold's
/// int32 commit numbers reach that tile (`encodeGoldTraceKey` refuses the others).
fn first_repo_index(tile_key: i64) -> Option<f64> {
    let first = (i64::from(i32::MAX) - tile_key) * 256;
    (first <= i64::from(i32::MAX)).then_some(first as f64)
}

/// `encodeGoldTraceKey(repoIndex, subkey)` as JSON; the error's `code` when it throws.
fn gold_trace(repo_index: f64, subkey: &str) -> Result<Value, String> {
    encode_gold_trace_key(repo_index, subkey)
        .map(|d| json(&d))
        .map_err(|e| {
            js_sys::Reflect::get(&e, &"code".into())
                .unwrap()
                .as_string()
                .unwrap()
        })
}

#[wasm_bindgen_test]
async fn tracestore_tiles_and_row_names() {
    let v = vectors("tracestore").await;
    // tile_keys: tile index -> tile key (2^31-1 - index).
    let cases = v["tile_keys"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let index = c["tile_index"].as_i64().unwrap();
        match first_repo_index(i64::from(i32::MAX) - index) {
            Some(first) => {
                let d = gold_trace(first, ",0=1,").unwrap();
                assert_eq!(
                    (&d["tile_index"], &d["tile_key"]),
                    (&c["tile_index"], &c["tile_key"]),
                    "{c}"
                );
                assert_eq!(d["offset"], 0, "{c}");
            }
            None => {
                assert_eq!(
                    gold_trace(index as f64 * 256.0, ",0=1,"),
                    Err("invalid_argument".into()),
                    "{c}"
                );
                assert_eq!(
                    i64::from(tile_key(index)),
                    c["tile_key"].as_i64().unwrap(),
                    "{c}"
                );
            }
        }
    }
    // calc_sharded_row_name: the shard comes from the subkey's CRC-32; type `t` is the trace
    // row, `p` the options row.
    let cases = v["calc_sharded_row_name"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let first = first_repo_index(c["tile_key"].as_i64().unwrap()).unwrap();
        let d = gold_trace(first, c["subkey"].as_str().unwrap()).unwrap();
        assert_eq!(d["tile_key"], c["tile_key"], "{c}");
        let row = match c["type"].as_str().unwrap() {
            "t" => &d["row_key"],
            "p" => &d["options_row"]["row_key"],
            other => panic!("row type {other}"),
        };
        assert_eq!(row, &c["row"], "{c}");
        let dec = json(&decode_key("auto", text_key(c["row"].as_str().unwrap())).unwrap());
        assert_eq!(dec["schema"], "gold", "{c}");
        assert_eq!(dec["shard"], d["shard"], "{c}");
        assert_eq!(dec["shard_ok"], true, "{c}");
        assert_eq!(dec["tile_key"], c["tile_key"], "{c}");
        assert_eq!(dec["subkey"], c["subkey"], "{c}");
    }
    // ops_row_names: one unsharded OPS row per tile, the tile key zero-padded to 10 digits.
    let cases = v["ops_row_names"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let key = c["tile_key"].as_i64().unwrap();
        match first_repo_index(key) {
            Some(first) => {
                let d = gold_trace(first, ",0=1,").unwrap();
                assert_eq!(d["ops_row"]["row_key"], c["row"], "{c}");
            }
            None => assert_eq!(
                ops_row_name(i32::try_from(key).unwrap()),
                c["row"].as_str().unwrap().as_bytes(),
                "{c}"
            ),
        }
        let dec = json(&decode_key("gold", text_key(c["row"].as_str().unwrap())).unwrap());
        assert_eq!(
            (&dec["type"], &dec["tile_key"]),
            (&"ops".into(), &c["tile_key"]),
            "{c}"
        );
        assert_eq!(dec["tile_index"], i64::from(i32::MAX) - key, "{c}");
    }
}

/// Every `metastore_rows` case through
/// `ObjectMetadata.createBucket` offline, with the BucketInfo as `JSON.parse` gives it: the
/// key format it answers, and exactly the cells it wrote to the page's store under the row key.
#[wasm_bindgen_test]
async fn objmeta_metastore_rows() {
    let v = vectors("objmeta").await;
    let ordered = vectors_js("objmeta").await;
    let cases = v["metastore_rows"].as_array().unwrap();
    assert!(!cases.is_empty(), "no metastore_rows");
    let om = ObjectMetadata::new(JsValue::UNDEFINED).unwrap();
    wait(om.setup()).await.unwrap();
    for (i, c) in cases.iter().enumerate() {
        let bucket = c["bucket"].as_str().unwrap();
        let value = js_at(
            &ordered,
            &["metastore_rows", &i.to_string(), "document", "value"],
        );
        assert_eq!(json(&value), c["document"]["value"], "case order");
        let vformat = wait(om.create_bucket(bucket.into(), value)).await.unwrap();
        assert_eq!(json(&vformat), c["document"]["vFormat"], "{bucket}");

        let key = hex::decode(c["row_key_hex"].as_str().unwrap()).unwrap();
        let dec = json(&decode_key("s3", hex_key(c["row_key_hex"].as_str().unwrap())).unwrap());
        // A metastore row belongs to no bucket's collection: its Arsenal key names the bucket.
        assert_eq!(
            (&dec["kind"], &dec["bucket"], &dec["arsenal_key"]),
            (&"metastore".into(), &Value::Null, &bucket.into()),
            "{dec}"
        );
        let read = ReadRowsRequest {
            table: "objmeta".into(),
            rows: RowSet {
                row_keys: vec![key.clone()],
                row_ranges: Vec::<RowRange>::new(),
            },
            ..Default::default()
        };
        let mut rows = Vec::new();
        let clock = PageClock::default();
        let m = ReadRows::new(read, clock.now(), 1, RetryPolicy::default());
        rowkit_client::run_blocking(&*page_store(), &clock, m, |row| rows.push(row)).unwrap();
        assert_eq!(rows.len(), 1, "{bucket}");
        let mut cells = serde_json::Map::new();
        for cell in &rows[0].cells {
            let q = String::from_utf8(cell.qualifier.clone()).unwrap();
            let (name, value) = match cell.family.as_str() {
                "d" => (
                    format!("d:{q}"),
                    String::from_utf8(cell.value.clone()).unwrap(),
                ),
                _ => (format!("{}:{q}_hex", cell.family), hex::encode(&cell.value)),
            };
            assert!(
                cells.insert(name, Value::String(value)).is_none(),
                "one version per column"
            );
        }
        assert_eq!(Value::Object(cells), c["cells"], "{bucket}");
    }
}

#[wasm_bindgen_test]
async fn objmeta_row_keys() {
    let v = vectors("objmeta").await;
    let cases = v["row_keys"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let d = json(&decode_key("s3", hex_key(c["row_key_hex"].as_str().unwrap())).unwrap());
        assert_eq!(d["collection"], c["collection"], "{c}");
        assert_eq!(
            d["arsenal_key_hex"],
            hex::encode(c["arsenal_key"].as_str().unwrap().as_bytes()),
            "{c}"
        );
    }
    for c in v["key_formats"].as_array().unwrap() {
        let (vf, key) = (
            c["vFormat"].as_str().unwrap(),
            c["object_key"].as_str().unwrap(),
        );
        let master = json(&encode_s3_key("b", key, None, Some(vf.into())).unwrap());
        assert_eq!(
            master["arsenal_key_hex"],
            hex::encode(c["master_key"].as_str().unwrap().as_bytes()),
            "{c}"
        );
        let vid = c["version_id"].as_str().unwrap().to_string();
        let version = json(&encode_s3_key("b", key, Some(vid), Some(vf.into())).unwrap());
        assert_eq!(
            version["arsenal_key_hex"],
            hex::encode(c["version_key"].as_str().unwrap().as_bytes()),
            "{c}"
        );
    }
}

#[wasm_bindgen_test]
async fn triples_row_keys() {
    let v = vectors("triples").await;
    let cases = v["triples"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let graph = c["graph"].as_str().unwrap();
        let d = json(&encode_graph_key(graph, c["input"].as_str().unwrap()).unwrap());
        assert_eq!(d["uuid"], c["triple_uuid"], "{c}");
        assert_eq!(d["family"], c["family"], "{c}");
        for (row, cell) in d["rows"]
            .as_array()
            .unwrap()
            .iter()
            .zip(c["cells"].as_array().unwrap())
        {
            assert_eq!(row["row_key"], cell["row"], "{c}");
            let dec = json(&decode_key("auto", text_key(cell["row"].as_str().unwrap())).unwrap());
            assert_eq!(
                (&dec["schema"], &dec["graph"]),
                (&"graph".into(), &graph.into())
            );
            assert_eq!(dec["s"], c["subject_uuid"], "{c}");
            assert_eq!(dec["o"], c["object_uuid"], "{c}");
        }
    }
    for c in v["graph_rows"].as_array().unwrap() {
        let d = json(&decode_key("graph", text_key(c["row"].as_str().unwrap())).unwrap());
        assert_eq!((&d["kind"], &d["graph"]), (&"graph".into(), &c["graph"]));
    }
}

/// The repository's own escaping vectors (Go's `strconv.Quote` output for format and tag
/// characters, unassigned code points, a flag emoji and a rune printable from Unicode 15.0;
/// `codec/tools/gotext/make_vectors.go`), built into the test: `encodeGraphKey` gives the
/// text, UUID, family, timestamp and row keys BadWolf writes.
#[wasm_bindgen_test]
fn triples_escaped_like_go() {
    let v: Value = serde_json::from_str(include_str!(
        "../../codec/tests/vectors/triples_gotext.json"
    ))
    .unwrap();
    let cases = v["triples"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let graph = c["graph"].as_str().unwrap();
        let d = json(&encode_graph_key(graph, c["input"].as_str().unwrap()).unwrap());
        assert_eq!(d["triple"], c["text"], "{c}");
        assert_eq!(d["uuid"], c["triple_uuid"], "{c}");
        assert_eq!(d["family"], c["family"], "{c}");
        assert_eq!(d["timestamp_us"], c["timestamp_micros"], "{c}");
        let rows = d["rows"].as_array().unwrap();
        let cells = c["cells"].as_array().unwrap();
        assert_eq!(rows.len(), cells.len(), "{c}");
        for (row, cell) in rows.iter().zip(cells) {
            assert_eq!(row["row_key"], cell["row"], "{c}");
        }
    }
}

#[wasm_bindgen_test]
fn garbage_is_an_error_with_a_code() {
    let e = decode_key("auto", JsValue::from_str("x")).unwrap_err();
    let code = js_sys::Reflect::get(&e, &"code".into()).unwrap();
    assert_eq!(code.as_string().as_deref(), Some("unknown_row_key"));
    let e = decode_key("nope", JsValue::from_str("x")).unwrap_err();
    let code = js_sys::Reflect::get(&e, &"code".into()).unwrap();
    assert_eq!(code.as_string().as_deref(), Some("invalid_argument"));
    assert!(decode_key("auto", JsValue::from_f64(1.0)).is_err());
    // Text the mount table's decoder would read is no key: its hash prefix is not its name's.
    let e = decode_key("auto", JsValue::from_str("hello world")).unwrap_err();
    let code = js_sys::Reflect::get(&e, &"code".into()).unwrap();
    assert_eq!(code.as_string().as_deref(), Some("unknown_row_key"));
    let message = String::from(js_sys::Error::from(e).message());
    assert!(
        message.starts_with("no schema's layout fits this key: gold: ")
            && message.contains("; mt: the prefix hello wo is not the hash"),
        "{message}"
    );
    // A key a writer wrote still decodes, with its segments.
    let d = decode_key("auto", JsValue::from_str("88e481b8/foo")).unwrap();
    let schema = js_sys::Reflect::get(&d, &"schema".into()).unwrap();
    assert_eq!(schema.as_string().as_deref(), Some("mt"));
}
