#![allow(clippy::unwrap_used)]
//! Every pure case of `$ROWKIT_SHARED/vectors/objmeta.json`: version ids and encodings, keys,
//! row keys, `inc`, listing ranges, row ranges, row cells, metastore rows, `genMDParams` and
//! filter traces.

use rowkit_codec::model::{KeyBound, Mutation};
use rowkit_codec::objmeta::cells::replace;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{
    METASTORE, VFormat, collection_for_bucket, inc, master_key, row_key, version_key,
};
use rowkit_codec::objmeta::listing::{Listing, ListingParams, MdParams, Skip};
use rowkit_codec::objmeta::range::RangeParams;
use rowkit_codec::objmeta::version_id::{
    VersionIdGenerator, base62_decode, base62_encode, decode, encode, inf_vid,
};
use serde_json::Value;

fn vectors() -> Value {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
    let path = format!("{dir}/vectors/objmeta.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The vector file with member order kept (serde_json's `Value` sorts members).
fn ordered_vectors() -> Json {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
    Json::parse(&std::fs::read_to_string(format!("{dir}/vectors/objmeta.json")).unwrap()).unwrap()
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap()
}

fn to_json(v: &Value) -> Json {
    Json::parse(&v.to_string()).unwrap()
}

fn to_value(j: &Json) -> Value {
    serde_json::from_str(&j.stringify()).unwrap()
}

fn vf(v: &Value) -> VFormat {
    VFormat::from_stored(s(v))
}

#[test]
fn version_id_generate() {
    let cases = vectors()["version_id_generate"].as_array().unwrap().clone();
    assert!(!cases.is_empty());
    for c in cases {
        let mut g = VersionIdGenerator {
            last_timestamp: c["state_before"]["lastTimestamp"].as_i64().unwrap(),
            last_seq: c["state_before"]["lastSeq"].as_i64().unwrap(),
            uid_counter: 0,
        };
        let now_us = c["now_ms"].as_i64().unwrap() * 1000;
        let id = g.generate_with_info(
            now_us,
            s(&c["info"]),
            s(&c["replication_group_id"]),
            c["env_S3_VERSION_ID_ENCODING_TYPE"].as_str(),
        );
        assert_eq!(id, s(&c["version_id"]), "{}", c["note"]);
        assert_eq!(
            g.last_timestamp,
            c["state_after"]["lastTimestamp"].as_i64().unwrap()
        );
        assert_eq!(g.last_seq, c["state_after"]["lastSeq"].as_i64().unwrap());
    }
}

#[test]
fn version_id_encodings() {
    let v = vectors();
    for c in v["get_inf_vid"].as_array().unwrap() {
        assert_eq!(inf_vid(s(&c["replication_group_id"])), s(&c["inf_vid"]));
    }
    for c in v["version_id_encode"].as_array().unwrap() {
        let raw = s(&c["version_id"]);
        assert_eq!(encode(raw), s(&c["encoded"]), "{raw}");
        match &c["decode_of_encoded"] {
            Value::String(d) => assert_eq!(&decode(s(&c["encoded"])).unwrap(), d),
            e => assert_eq!(
                decode(s(&c["encoded"])).unwrap_err().to_string(),
                s(&e["error"])
            ),
        }
    }
    for c in v["base62_direct"].as_array().unwrap() {
        assert_eq!(base62_encode(s(&c["version_id"])), s(&c["base62_encode"]));
        assert_eq!(
            base62_decode(s(&c["base62_encode"])).unwrap(),
            s(&c["base62_decode_of_encoded"])
        );
    }
    for c in v["version_id_decode_errors"].as_array().unwrap() {
        assert_eq!(
            decode(s(&c["input"])).unwrap_err().to_string(),
            s(&c["result"]["error"]),
            "{}",
            c["input"]
        );
    }
}

#[test]
fn keys_row_keys_and_inc() {
    let v = vectors();
    for c in v["key_formats"].as_array().unwrap() {
        let f = vf(&c["vFormat"]);
        assert_eq!(master_key(f, s(&c["object_key"])), s(&c["master_key"]));
        assert_eq!(
            version_key(f, s(&c["object_key"]), s(&c["version_id"])),
            s(&c["version_key"])
        );
    }
    for c in v["row_keys"].as_array().unwrap() {
        assert_eq!(collection_for_bucket(s(&c["bucket"])), s(&c["collection"]));
        let k = row_key(s(&c["collection"]), s(&c["arsenal_key"]));
        assert_eq!(hex(&k), s(&c["row_key_hex"]));
    }
    for c in v["inc"].as_array().unwrap() {
        assert_eq!(inc(s(&c["input"])).unwrap(), s(&c["inc"]));
    }
    for c in v["bucket_vformat"].as_array().unwrap() {
        match s(&c["operation"]) {
            "createBucket" => assert_eq!(
                VFormat::for_new_bucket(s(&c["bucket"]), VFormat::V1).as_str(),
                s(&c["vFormat"])
            ),
            // No metastore row to decode: the machine answers it (rowkit-testkit's
            // `scenarios::objmeta::metastore_uuid_count` runs this case on every store).
            "getBucketVFormat" => assert!(c["metastore_row"].is_null()),
            other => panic!("unknown bucket_vformat operation {other}"),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn bound_json(b: &KeyBound) -> Value {
    match b {
        KeyBound::Closed(k) => serde_json::json!({"bound": "closed", "key_hex": hex(k)}),
        KeyBound::Open(k) => serde_json::json!({"bound": "open", "key_hex": hex(k)}),
        KeyBound::Unbounded => Value::Null,
    }
}

#[test]
fn row_ranges() {
    let v = vectors();
    for c in v["bigtable_row_ranges"].as_array().unwrap() {
        let r = RangeParams::from_json(&to_json(&c["params"]));
        let rr = r.to_row_range(collection_for_bucket(s(&c["bucket"])));
        assert_eq!(bound_json(&rr.start), c["start"], "{}", c["params"]);
        assert_eq!(bound_json(&rr.end), c["end"], "{}", c["params"]);
    }
}

#[test]
fn row_cells() {
    let ordered = ordered_vectors();
    let Some(Json::Array(ordered_cases)) = ordered.get("row_cells") else {
        panic!("row_cells missing")
    };
    for (c, oc) in vectors()["row_cells"]
        .as_array()
        .unwrap()
        .iter()
        .zip(ordered_cases)
    {
        let value = oc.get("value").unwrap().clone();
        let muts = replace(&value, None);
        assert_eq!(set_cells(&muts), c["cells"], "{}", c["arsenal_key"]);
        assert_eq!(muts[0], Mutation::DeleteFromFamily { family: "f".into() });
    }
}

/// The `d:` / `f:` cells a mutation list sets, as the vectors write them (`f:` values hex).
fn set_cells(muts: &[Mutation]) -> Value {
    let mut cells = serde_json::Map::new();
    for m in muts {
        if let Mutation::SetCell {
            family,
            qualifier,
            value,
            timestamp,
        } = m
        {
            assert_eq!(timestamp.0, 0);
            let q = String::from_utf8(qualifier.clone()).unwrap();
            if family == "d" {
                cells.insert(
                    format!("d:{q}"),
                    Value::String(String::from_utf8(value.clone()).unwrap()),
                );
            } else {
                cells.insert(format!("f:{q}_hex"), Value::String(hex(value)));
            }
        }
    }
    Value::Object(cells)
}

/// Every `metastore_rows` case (`b`, `PENSIEVE`, `users..bucket`): the row key, the vFormat
/// createBucket gives the bucket (default v1), and exactly the cells of
/// `REPLACE(value, vFormat)`.
#[test]
fn metastore_rows() {
    let ordered = ordered_vectors();
    let Some(Json::Array(ordered_cases)) = ordered.get("metastore_rows") else {
        panic!("metastore_rows missing")
    };
    let cases = vectors()["metastore_rows"].as_array().unwrap().clone();
    assert_eq!(cases.len(), ordered_cases.len());
    let mut buckets = Vec::new();
    for (c, oc) in cases.iter().zip(ordered_cases) {
        let bucket = s(&c["bucket"]);
        buckets.push(bucket.to_string());
        assert_eq!(
            hex(&row_key(METASTORE, bucket)),
            s(&c["row_key_hex"]),
            "{bucket}"
        );
        assert_eq!(s(&c["document"]["_id"]), bucket);
        let vformat = VFormat::for_new_bucket(bucket, VFormat::V1);
        assert_eq!(vformat.as_str(), s(&c["document"]["vFormat"]), "{bucket}");
        let value = oc.get("document").unwrap().get("value").unwrap().clone();
        let muts = replace(&value, Some(vformat.as_str()));
        assert_eq!(muts[0], Mutation::DeleteFromFamily { family: "f".into() });
        assert_eq!(set_cells(&muts), c["cells"], "{bucket}");
    }
    buckets.sort();
    assert_eq!(buckets, ["PENSIEVE", "b", "users..bucket"]);
}

#[test]
fn listing_params_and_md() {
    let v = vectors();
    for c in v["listing_params_v0_to_v1"].as_array().unwrap() {
        // A v0 range as genMDParams v1 rewrites it: use a Delimiter listing whose v0 md is it.
        let r0 = RangeParams::from_json(&to_json(&c["v0"]));
        let mut p = ListingParams::default();
        if let (Some(gte), Some(lt)) = (&r0.gte, &r0.lt) {
            assert_eq!(&inc(gte).unwrap(), lt);
            p.prefix = Some(gte.clone());
        }
        if let Some(gt) = &r0.gt {
            p.marker = Some(gt.clone());
        }
        let md = Listing::new(p, VFormat::V1).gen_md_params().unwrap();
        assert_eq!(to_value(&md.to_json()), c["v1"]);
    }
    let cases = v["gen_md_params"].as_array().unwrap();
    assert!(cases.len() > 30);
    for c in cases {
        let mut params = to_json(&c["params"]);
        if let Some(o) = params.as_object_mut() {
            o.set("listingType", Json::str(s(&c["algo"])));
        }
        let l = Listing::new(ListingParams::from_json(&params), vf(&c["vFormat"]));
        let md = l.gen_md_params().unwrap();
        assert_eq!(
            to_value(&md.to_json()),
            c["md"],
            "{} {} {}",
            c["algo"],
            c["vFormat"],
            c["params"]
        );
    }
}

#[test]
fn filter_sequences() {
    let cases = vectors()["filter_sequences"].as_array().unwrap().clone();
    assert!(!cases.is_empty());
    for c in cases {
        let name = s(&c["name"]);
        let mut params = to_json(&c["params"]);
        params
            .as_object_mut()
            .unwrap()
            .set("listingType", Json::str(s(&c["algo"])));
        let mut l = Listing::new(ListingParams::from_json(&params), vf(&c["vFormat"]));
        assert_eq!(
            to_value(&l.gen_md_params().unwrap().to_json()),
            c["genMDParams"],
            "{name}"
        );
        for (i, t) in c["trace"].as_array().unwrap().iter().enumerate() {
            let code = l.filter(s(&t["key"]), s(&t["value"]));
            assert_eq!(
                i64::from(code),
                t["filter"].as_i64().unwrap(),
                "{name} step {i}"
            );
            if code == 0 {
                let got = match l.skipping() {
                    None => Value::Null,
                    Some(Skip::Single(x)) => Value::String(x),
                    Some(Skip::Pair(m, v)) => serde_json::json!([m, v]),
                };
                assert_eq!(got, t["skipping"], "{name} step {i} skipping");
            }
        }
        assert_eq!(to_value(&l.result()), c["result"], "{name} result");
    }
    let _ = MdParams::Single(RangeParams::default());
}
