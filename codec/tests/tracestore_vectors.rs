#![allow(clippy::unwrap_used)]
//! Every codec case of `$ROWKIT_SHARED/vectors/tracestore.json`, and the codec side of the
//! machine-level cases (allocation and assignment: counter answers, reserved ranges, insert
//! cells and outcomes); the machines replay those in rowkit-embedded's `tracestore_vectors`.

use std::collections::BTreeSet;

use rowkit_codec::model::{GcRule, Mutation, Timestamp, TimestampRange};
use rowkit_codec::tracestore::cells::*;
use rowkit_codec::tracestore::keys::*;
use rowkit_codec::tracestore::ops::{parse_options_text, trace_id_text};
use rowkit_codec::tracestore::*;
use serde_json::Value;

fn vectors() -> Value {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
    let path = format!("{dir}/vectors/tracestore.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn cases(name: &str) -> Vec<Value> {
    let v = vectors()[name].as_array().unwrap().clone();
    assert!(!v.is_empty(), "no cases in {name}");
    v
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| s(x).to_string())
        .collect()
}

fn params(v: &Value) -> Params {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, x)| (k.clone(), s(x).to_string()))
        .collect()
}

fn param_set(v: &Value) -> ParamSet {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, x)| (k.clone(), strings(x)))
        .collect()
}

fn ops_of(case: &Value) -> OrderedParamSet {
    OrderedParamSet {
        key_order: strings(&case["key_order"]),
        param_set: param_set(&case["param_set"]),
    }
}

fn type_char(v: &Value) -> char {
    s(v).chars().next().unwrap()
}

#[test]
fn tile_keys_and_positions() {
    for c in cases("tile_keys") {
        let key = tile_key(c["tile_index"].as_i64().unwrap());
        assert_eq!(i64::from(key), c["tile_key"].as_i64().unwrap(), "{c}");
    }
    for c in cases("repo_index_to_tile") {
        let p = repo_index_position(c["repo_index"].as_i64().unwrap()).unwrap();
        assert_eq!(i64::from(p.tile_key), c["tile_key"].as_i64().unwrap());
        assert_eq!(i64::from(p.offset), c["offset"].as_i64().unwrap());
        assert_eq!(md5_trace_qualifier(p.offset), s(&c["column"]).as_bytes());
    }
    assert_eq!(
        repo_index_position(2147483648),
        Err(TraceStoreError::BadRepoIndex)
    );
    assert_eq!(repo_index_position(-1), Err(TraceStoreError::BadRepoIndex));
    for c in cases("ops_row_names") {
        let key = c["tile_key"].as_i64().unwrap() as i32;
        assert_eq!(ops_row_name(key), s(&c["row"]).as_bytes());
    }
}

#[test]
fn shards_and_row_names() {
    for c in cases("shards") {
        let sub = s(&c["subkey"]).as_bytes();
        assert_eq!(format!("{:08x}", crc32_ieee(sub)), s(&c["crc32_ieee"]));
        assert_eq!(i64::from(shard_of(sub)), c["shard"].as_i64().unwrap());
    }
    for c in cases("sharded_row_names") {
        let row = sharded_row_name(
            c["shard"].as_u64().unwrap() as u32,
            type_char(&c["type"]),
            c["tile_key"].as_i64().unwrap() as i32,
            s(&c["subkey"]).as_bytes(),
        );
        assert_eq!(row, s(&c["row"]).as_bytes());
    }
    for c in cases("calc_sharded_row_name") {
        let row = calc_sharded_row_name(
            c["tile_key"].as_i64().unwrap() as i32,
            type_char(&c["type"]),
            s(&c["subkey"]).as_bytes(),
        );
        assert_eq!(row, s(&c["row"]).as_bytes(), "{c}");
    }
    for c in cases("shard_prefix_ranges") {
        let r = shard_prefix_range(
            c["shard"].as_u64().unwrap() as u32,
            type_char(&c["type"]),
            c["tile_key"].as_i64().unwrap() as i32,
        );
        let expected = rowkit_codec::model::RowRange::half_open(
            s(&c["start"]).as_bytes(),
            s(&c["end_exclusive"]).as_bytes(),
        );
        assert_eq!(r, expected);
    }
    for c in cases("extract_subkey") {
        assert_eq!(
            extract_subkey(s(&c["row"]).as_bytes()),
            s(&c["subkey"]).as_bytes()
        );
    }
}

#[test]
fn ops_encode_decode_update() {
    for c in cases("ops_encode") {
        let got = ops_of(&c).encode_params(&params(&c["params"]));
        match c.get("error") {
            Some(e) => assert_eq!(got.unwrap_err().to_string(), s(e), "{c}"),
            None => assert_eq!(got.unwrap(), s(&c["encoded"]), "{c}"),
        }
    }
    for c in cases("ops_decode") {
        let got = ops_of(&c).decode_params(s(&c["encoded"]).as_bytes());
        match c.get("error") {
            Some(e) => assert_eq!(got.unwrap_err().to_string(), s(e), "{c}"),
            None => assert_eq!(got.unwrap(), params(&c["params"]), "{c}"),
        }
    }
    for c in cases("ops_update") {
        let mut ops = ops_of(&c);
        let input = param_set(&c["input_param_set"]);
        let delta = ops.delta(&input);
        assert_eq!(delta, param_set(&c["delta"]), "{c}");
        assert_eq!(!delta.is_empty(), c["write_needed"].as_bool().unwrap());
        ops.update(&input);
        assert_eq!(ops.key_order, strings(&c["new_key_order"]), "{c}");
        assert_eq!(ops.param_set, param_set(&c["new_param_set"]), "{c}");
    }
}

#[test]
fn ops_gob_bytes_and_hash() {
    for c in cases("ops_gob") {
        let ops = ops_of(&c);
        let bytes = encode_ops_gob(&ops);
        assert_eq!(hex::encode(&bytes), s(&c["gob_hex"]), "{c}");
        assert_eq!(bytes.len() as u64, c["length"].as_u64().unwrap());
        assert_eq!(ops_hash(&bytes), s(&c["md5_hex"]));
        let back = decode_ops_gob(&bytes).unwrap();
        assert_eq!(back, ops);
    }
    for c in cases("ops_gob_decode_only") {
        let bytes = hex::decode(s(&c["gob_hex"])).unwrap();
        assert_eq!(decode_ops_gob(&bytes).unwrap(), ops_of(&c));
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert_eq!(
            decode_ops_gob(&trailing).unwrap_err().to_string(),
            "corrupted paramset"
        );
    }
}

#[test]
fn md5_digest_cells_and_options() {
    for c in cases("digest_to_cell") {
        assert_eq!(
            hex::encode(digest_to_cell(s(&c["digest"]))),
            s(&c["cell_hex"])
        );
    }
    for c in cases("cell_to_digest") {
        let cell = hex::decode(s(&c["cell_hex"])).unwrap();
        assert_eq!(cell_to_digest(&cell), s(&c["digest"]));
    }
    for c in cases("options_value") {
        let text = trace_id_text(&params(&c["options"]));
        assert_eq!(text, s(&c["cell"]));
        assert_eq!(
            parse_options_text(text.as_bytes()).unwrap(),
            params(&c["parsed"])
        );
    }
    for c in cases("cell_timestamps") {
        let ts = cell_timestamp(
            c["unix_seconds"].as_i64().unwrap(),
            c["nanos"].as_u64().unwrap() as u32,
        );
        assert_eq!(ts, Timestamp(c["timestamp_micros"].as_i64().unwrap()));
    }
    for c in cases("trace_column_parse") {
        let got = parse_trace_qualifier(s(&c["qualifier"]).as_bytes());
        match c.get("error") {
            Some(e) => assert_eq!(got.unwrap_err().to_string(), s(e)),
            None => assert_eq!(u64::from(got.unwrap()), c["offset"].as_u64().unwrap()),
        }
    }
}

#[test]
fn setup_and_detection() {
    for c in cases("table_setup") {
        let layout = Layout::parse(s(&c["layout"])).unwrap();
        let plan = layout.setup_plan();
        let reqs = c["requests"].as_array().unwrap();
        assert_eq!(plan.len(), reqs.len());
        for (p, r) in plan.iter().zip(reqs) {
            assert_eq!(s(&r["ignore_code"]), "ALREADY_EXISTS");
            match p {
                SetupRequest::CreateTable { families } => {
                    assert_eq!(s(&r["op"]), "CreateTable");
                    let want = r["families"].as_object().unwrap();
                    assert_eq!(families.len(), want.len());
                    for f in families {
                        let rule = &want[&f.name];
                        let expected = rule["max_num_versions"]
                            .as_u64()
                            .map(|n| GcRule::MaxNumVersions(n as u32));
                        assert_eq!(f.gc_rule, expected);
                    }
                }
                SetupRequest::CreateColumnFamily { family } => {
                    assert_eq!(s(&r["op"]), "CreateColumnFamily");
                    assert_eq!(family.name, s(&r["family"]));
                    assert!(r["gc_rule"].is_null() && family.gc_rule.is_none());
                }
            }
        }
    }
    for c in cases("layout_detection") {
        let families = strings(&c["families"]);
        let got = detect_layout(&families, None);
        match c.get("error") {
            Some(e) => assert_eq!(got.unwrap_err().to_string(), s(e)),
            None => assert_eq!(got.unwrap().name(), s(&c["layout"])),
        }
    }
    // Scenario 16/28: a named layout the families contradict.
    assert_eq!(
        detect_layout(&["D", "I", "O", "T"], Some(Layout::Md5)),
        Err(TraceStoreError::LayoutMismatch)
    );
    assert_eq!(
        detect_layout(&["O", "P", "T"], Some(Layout::DigestId)),
        Err(TraceStoreError::LayoutMismatch)
    );
    assert_eq!(
        detect_layout(&["O", "T"], Some(Layout::Md5)),
        Ok(Layout::Md5)
    );
}

#[test]
fn digest_map_codecs() {
    for c in cases("digest_normalize") {
        assert_eq!(normalize_digest(s(&c["digest"])), s(&c["normalized"]));
    }
    for c in cases("digest_map_cells") {
        let d = s(&c["digest"]);
        let prefix = s(&c["prefix"]);
        assert_eq!(
            format!("{:08x}", crc32_ieee(prefix.as_bytes())),
            s(&c["crc32_ieee"])
        );
        assert_eq!(
            i64::from(shard_of(prefix.as_bytes())),
            c["shard"].as_i64().unwrap()
        );
        let row = digest_map_row(d).unwrap();
        assert_eq!(row, s(&c["row"]).as_bytes());
        let q = digest_map_qualifier(d).unwrap();
        assert_eq!(q, s(&c["qualifier"]).as_bytes());
        assert_eq!(digest_of_map_cell(&row, &q).unwrap(), d);
    }
    for c in cases("digest_map_values") {
        let id = c["digest_id"].as_u64().unwrap();
        let v = encode_digest_map_value(id);
        assert_eq!(v, s(&c["value"]).as_bytes());
        assert_eq!(hex::encode(&v), s(&c["value_hex"]));
        assert_eq!(decode_digest_map_value(&v), Ok(id));
    }
    for c in cases("digest_map_value_decode") {
        let got = decode_digest_map_value(s(&c["value"]).as_bytes());
        match c.get("error") {
            Some(e) => assert_eq!(got.unwrap_err().to_string(), s(e)),
            None => assert_eq!(got.unwrap(), c["digest_id"].as_u64().unwrap()),
        }
    }
    for c in cases("digest_map_lookup_rows") {
        let rows: BTreeSet<Vec<u8>> = strings(&c["digests"])
            .iter()
            .map(|d| normalize_digest(d))
            .filter(|d| !d.is_empty())
            .filter_map(|d| digest_map_row(&d))
            .collect();
        let want: Vec<Vec<u8>> = strings(&c["rows"])
            .into_iter()
            .map(String::into_bytes)
            .collect();
        assert_eq!(rows.into_iter().collect::<Vec<_>>(), want);
    }
}

#[test]
fn digest_map_row_counts_and_histogram() {
    for c in cases("digest_map_row_counts") {
        assert_eq!(s(&c["generator"]), "md5_decimal");
        let n = c["n"].as_u64().unwrap();
        let rows: BTreeSet<Vec<u8>> = (0..n)
            .map(|i| ops_hash(i.to_string().as_bytes()))
            .map(|d| digest_map_row(&d).unwrap())
            .collect();
        assert_eq!(
            rows.len() as u64,
            c["distinct_rows"].as_u64().unwrap(),
            "n = {n}"
        );
        assert_eq!(n, c["rows_one_row_per_digest"].as_u64().unwrap());
    }
    for c in cases("digest_map_shard_histogram") {
        let mut hist = [0u64; 32];
        for p in 0..4096u32 {
            hist[shard_of(format!("{p:03x}").as_bytes()) as usize] += 1;
        }
        let want: Vec<u64> = c["rows_per_shard"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(hist.to_vec(), want);
    }
}

#[test]
fn digest_id_cells_and_mutations() {
    for c in cases("digest_id_columns") {
        let off = c["offset"].as_u64().unwrap() as u32;
        assert_eq!(
            digest_id_trace_qualifier(off),
            s(&c["qualifier"]).as_bytes()
        );
    }
    for c in cases("digest_id_cells") {
        let id = c["digest_id"].as_u64().unwrap();
        assert_eq!(hex::encode(encode_digest_id_cell(id)), s(&c["cell_hex"]));
    }
    for c in cases("digest_id_cell_decode") {
        let got = decode_digest_id_cell(&hex::decode(s(&c["cell_hex"])).unwrap());
        match c.get("error") {
            Some(e) => assert_eq!(got.unwrap_err().to_string(), s(e), "{c}"),
            None => assert_eq!(got.unwrap(), c["digest_id"].as_u64().unwrap(), "{c}"),
        }
    }
    for c in cases("digest_id_trace_mutations") {
        let pos = repo_index_position(c["repo_index"].as_i64().unwrap()).unwrap();
        let row = trace_row_name(pos.tile_key, s(&c["subkey"]).as_bytes());
        assert_eq!(row, s(&c["row"]).as_bytes());
        let q = digest_id_trace_qualifier(pos.offset);
        let muts = digest_id_trace_mutations(
            &q,
            Timestamp(c["ts_micros"].as_i64().unwrap()),
            c["digest_id"].as_u64().unwrap(),
        );
        let set = &c["set"];
        assert_eq!(
            muts[0],
            Mutation::SetCell {
                family: s(&set["family"]).into(),
                qualifier: s(&set["qualifier"]).as_bytes().to_vec(),
                timestamp: Timestamp(set["timestamp_micros"].as_i64().unwrap()),
                value: hex::decode(s(&set["value_hex"])).unwrap(),
            }
        );
        let del = &c["delete_from_column"];
        if del.is_null() {
            assert_eq!(muts.len(), 1);
        } else {
            assert_eq!(
                muts[1],
                Mutation::DeleteFromColumn {
                    family: s(&del["family"]).into(),
                    qualifier: s(&del["qualifier"]).as_bytes().to_vec(),
                    range: Some(TimestampRange {
                        start: del["start_timestamp_micros"].as_i64().unwrap(),
                        end: del["end_timestamp_micros"].as_i64().unwrap(),
                    }),
                }
            );
        }
    }
    for c in cases("id_counter") {
        assert_eq!(s(&c["row"]).as_bytes(), id_counter_row_name());
        assert_eq!(s(&c["family"]), FAMILY_ID_COUNTER);
        assert_eq!(s(&c["qualifier"]).as_bytes(), COLUMN_ID_COUNTER);
        let before = c["counter_before"].as_i64().unwrap_or(0);
        let inc = c["missing"].as_u64().unwrap() + RESERVED_IDS;
        assert_eq!(inc, c["increment"].as_u64().unwrap());
        let after = before + inc as i64;
        assert_eq!(after, c["counter_after"].as_i64().unwrap());
        assert_eq!(hex::encode(encode_id_counter(after)), s(&c["cell_hex"]));
        assert_eq!(decode_id_counter(&encode_id_counter(after)), Ok(after));
    }
}

fn id_ranges(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r[0].as_u64().unwrap()..=r[1].as_u64().unwrap())
        .collect()
}

/// `digest_id_allocation`: each increment's `counter_response` is the counter before plus the
/// increment, encodes as the 8-byte counter cell, and reserves (`reserved_ids`) exactly the
/// step's fresh ids followed by the pool it leaves.
#[test]
fn digest_id_allocation_counter_responses() {
    for case in cases("digest_id_allocation") {
        let mut counter = case["initial_counter"].as_i64().unwrap_or(0);
        for step in case["steps"].as_array().unwrap() {
            if step["op"] != "allocate" {
                continue;
            }
            let Some(increment) = step["increment"].as_u64() else {
                assert!(step["counter_response"].is_null(), "{step}");
                continue;
            };
            let response = step["counter_response"].as_i64().unwrap();
            assert_eq!(response, counter + increment as i64, "{step}");
            assert_eq!(
                decode_id_counter(&encode_id_counter(response)),
                Ok(response)
            );
            counter = response;
            let missing = (increment - RESERVED_IDS) as usize;
            let ids = id_ranges(&step["ids_ranges"]);
            let reserved: Vec<u64> = reserved_ids(response, increment).unwrap().collect();
            assert_eq!(ids[ids.len() - missing..], reserved[..missing], "{step}");
            assert_eq!(
                reserved[missing..],
                id_ranges(&step["pool_after_ranges"]),
                "{step}"
            );
        }
        assert_eq!(counter, case["final_counter"].as_i64().unwrap());
    }
}

/// `digest_id_assignment`: every insert's cells come from the codec, and it answers
/// `predicate_matched` exactly when the map already holds its digest's column (the table map
/// or a concurrent insert); a matched insert's digest gets the stored id and its offered id
/// goes back to the pool, an unmatched one gets the offered id.
#[test]
fn digest_id_assignment_insert_outcomes() {
    for case in cases("digest_id_assignment") {
        let mut stored = case["table_map"].as_object().unwrap().clone();
        stored.extend(case["concurrent_inserts"].as_object().unwrap().clone());
        let pool_after = id_ranges(&case["pool_after_ranges"]);
        let ids = &case["ids"];
        for insert in case["inserts"].as_array().unwrap() {
            let d = s(&insert["digest"]);
            let offered = insert["digest_id"].as_u64().unwrap();
            let q = digest_map_qualifier(d).unwrap();
            assert_eq!(digest_map_row(d).unwrap(), s(&insert["row"]).as_bytes());
            assert_eq!(q, s(&insert["qualifier"]).as_bytes());
            assert_eq!(q, s(&insert["predicate_qualifier_regex"]).as_bytes());
            assert_eq!(
                encode_digest_map_value(offered),
                s(&insert["value"]).as_bytes()
            );
            let matched = insert["predicate_matched"].as_bool().unwrap();
            assert_eq!(matched, stored.contains_key(d), "{insert}");
            if matched {
                assert_eq!(ids[d], stored[d], "{insert}");
                assert_ne!(ids[d], offered, "{insert}");
                assert!(pool_after.contains(&offered), "{insert}");
            } else {
                assert_eq!(ids[d], offered, "{insert}");
                assert!(!pool_after.contains(&offered), "{insert}");
            }
        }
    }
}
