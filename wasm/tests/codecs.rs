//! The key codecs through the JS API (`decodeKey`, `encode*Key`) on the shared vectors, read at
//! run time from the harness's server. Runs in Node and in headless Chromium.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used, missing_docs)]
// Without the harness's URLs the tests must fail (not skip), at run time with a clear message.
#![allow(clippy::option_env_unwrap)]

mod harness;

use harness::{json, vectors};
use rowkit_wasm::keys::{
    decode_key, encode_gold_digest_key, encode_gold_trace_key, encode_graph_key, encode_mt_key,
    encode_s3_key,
};
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

#[wasm_bindgen_test]
fn garbage_is_an_error_with_a_code() {
    let e = decode_key("auto", JsValue::from_str("x")).unwrap_err();
    let code = js_sys::Reflect::get(&e, &"code".into()).unwrap();
    assert_eq!(code.as_string().as_deref(), Some("unknown_row_key"));
    let e = decode_key("nope", JsValue::from_str("x")).unwrap_err();
    let code = js_sys::Reflect::get(&e, &"code".into()).unwrap();
    assert_eq!(code.as_string().as_deref(), Some("invalid_argument"));
    assert!(decode_key("auto", JsValue::from_f64(1.0)).is_err());
}
