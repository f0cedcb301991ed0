#![allow(clippy::unwrap_used)]
//! Every case of `$ROWKIT_SHARED/vectors/mounttable.json` (spec/mounttable.md §22 scenario 24),
//! read at run time.

use rowkit_codec::mounttable::*;
use serde_json::Value;

fn vectors() -> Value {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
    let path = format!("{dir}/vectors/mounttable.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap()
}

fn cases<'a>(v: &'a Value, k: &str) -> &'a Vec<Value> {
    let c = v[k].as_array().unwrap();
    assert!(!c.is_empty(), "{k} is empty");
    c
}

fn perms_from(v: &Value) -> Permissions {
    decode_permissions(serde_json::to_string(v).unwrap().as_bytes()).unwrap()
}

#[test]
fn row_keys() {
    let v = vectors();
    for c in cases(&v, "row_keys") {
        let name = s(&c["name"]).trim_start_matches('/');
        let key = row_key(name);
        assert_eq!(key, s(&c["row_key"]).as_bytes(), "{c}");
        assert_eq!(hex::encode(&key), s(&c["row_key_hex"]));
        assert_eq!(clean(&format!("/{name}")), s(&c["cleaned"]));
        assert_eq!(
            format!("{:08x}", fnv1_32(s(&c["cleaned"]).as_bytes())),
            s(&c["fnv1_32"])
        );
    }
    for c in cases(&v, "fnv1_32") {
        assert_eq!(
            format!("{:08x}", fnv1_32(s(&c["input"]).as_bytes())),
            s(&c["hash"])
        );
    }
    for c in cases(&v, "row_key_decode") {
        let got = decode_row_key(s(&c["row_key"]).as_bytes());
        match c["name"].as_str() {
            Some(n) => assert_eq!(got, Some(n.as_bytes()), "{c}"),
            None => assert_eq!(got, None, "{c}"),
        }
    }
}

#[test]
fn names() {
    let v = vectors();
    for c in cases(&v, "naming_clean") {
        assert_eq!(clean(s(&c["input"])), s(&c["output"]), "{c}");
    }
    for c in cases(&v, "naming_join") {
        let elems: Vec<&str> = c["elems"].as_array().unwrap().iter().map(s).collect();
        assert_eq!(join(&elems), s(&c["output"]), "{c}");
    }
}

#[test]
fn versions_and_children() {
    let v = vectors();
    for c in cases(&v, "version_increment") {
        assert_eq!(
            next_version(s(&c["version"]).as_bytes()).unwrap(),
            s(&c["next"])
        );
    }
    for c in cases(&v, "child_columns") {
        let q = child_qualifier(s(&c["parent_version"]).as_bytes(), s(&c["child_name"]));
        assert_eq!(q, s(&c["qualifier"]).as_bytes());
        assert_eq!(hex::encode(&q), s(&c["qualifier_hex"]));
        assert_eq!(hex::encode(MARKER_VALUE), s(&c["value_hex"]));
        let back = decode_child_qualifier(&q).unwrap();
        assert_eq!(back.id, s(&c["parent_version"]).as_bytes());
        assert_eq!(back.name, s(&c["child_name"]));
    }
    let f = &v["fixed_cells"];
    assert_eq!(hex::encode(MARKER_VALUE), s(&f["sticky_value_hex"]));
    assert_eq!(hex::encode(MARKER_VALUE), s(&f["child_value_hex"]));
    assert_eq!(ROOT_ID.as_slice(), s(&f["root_id"]).as_bytes());
    assert_eq!(hex::encode(ROOT_ID), s(&f["root_id_hex"]));
}

#[test]
fn permissions_json() {
    let v = vectors();
    for c in cases(&v, "permissions_json") {
        let input = perms_from(&c["input"]);
        let out = match s(&c["operation"]) {
            "setup_default" => {
                let mut p = input.clone();
                p.add("...", tags::ADMIN);
                assert_eq!(p, default_root_permissions());
                p
            }
            "marshal" => input.clone(),
            "normalize" => {
                let mut p = input.clone();
                p.normalize();
                p
            }
            "template" => {
                let mut p = input.template(s(&c["child"])).unwrap();
                p.normalize();
                p
            }
            "copy" => {
                assert!(input.template("x").is_none());
                let mut p = input.clone();
                if c["final_element"].as_bool().unwrap() {
                    for n in c["caller_blessing_names"].as_array().unwrap() {
                        p.add(s(n), tags::ADMIN);
                    }
                }
                p.normalize();
                p
            }
            other => panic!("unknown operation {other}"),
        };
        let json = encode_permissions(&out);
        assert_eq!(
            String::from_utf8(json.clone()).unwrap(),
            s(&c["json"]),
            "{c}"
        );
        // The stored bytes decode back to the same value.
        assert_eq!(decode_permissions(&json).unwrap(), out);
    }
}

#[test]
fn flags_counters_deadlines() {
    let v = vectors();
    for c in cases(&v, "mount_flags") {
        let b = encode_flags(MountFlags(c["flags"].as_u64().unwrap() as u32));
        assert_eq!(b, s(&c["value"]).as_bytes());
        assert_eq!(hex::encode(&b), s(&c["value_hex"]));
        let (mut mt, mut leaf) = (false, false);
        decode_flags_into(&b, &mut mt, &mut leaf).unwrap();
        let f = c["flags"].as_u64().unwrap() as u32;
        assert_eq!((mt, leaf), (f & 2 != 0, f & 4 != 0));
    }
    for c in cases(&v, "counter_values") {
        let n = c["value"].as_i64().unwrap();
        assert_eq!(hex::encode(encode_counter_value(n)), s(&c["bytes_hex"]));
        assert_eq!(
            decode_counter_value(&hex::decode(s(&c["bytes_hex"])).unwrap()).unwrap(),
            n
        );
    }
    for c in cases(&v, "counter_row_keys") {
        let kind = match s(&c["counter"]) {
            "nodes" => CounterKind::Nodes,
            "servers" => CounterKind::Servers,
            o => panic!("{o}"),
        };
        let key = counter_row_key(kind, s(&c["creator"]));
        assert_eq!(key, s(&c["row_key"]).as_bytes());
        assert_eq!(
            decode_counter_row_key(&key),
            Some((kind, s(&c["creator"]).as_bytes()))
        );
    }
    for c in cases(&v, "deadlines") {
        let ns = c["now_unix_nanos"].as_i64().unwrap();
        let ttl = c["ttl_seconds"].as_u64().unwrap() as u32;
        assert_eq!(
            mount_deadline(ns.div_euclid(1000), ttl),
            c["deadline_micros"].as_i64().unwrap(),
            "{c}"
        );
    }
    for c in cases(&v, "expiry") {
        let ns = c["now_unix_nanos"].as_i64().unwrap();
        let now = ns.div_euclid(1000) + i64::from(ns.rem_euclid(1000) != 0);
        assert_eq!(
            is_expired(c["deadline_micros"].as_i64().unwrap(), now),
            c["expired"].as_bool().unwrap(),
            "{c}"
        );
    }
}

#[test]
fn creators_and_addresses() {
    let v = vectors();
    for c in cases(&v, "creator_ids") {
        let names: Vec<&str> = c["remote_blessing_names"]
            .as_array()
            .unwrap()
            .iter()
            .map(s)
            .collect();
        let caller = Caller::new(&names, c["caller_is_server"].as_bool().unwrap());
        assert_eq!(creator_of(&caller), s(&c["creator"]), "{c}");
    }
    for c in cases(&v, "server_validation") {
        assert_eq!(
            validate_server(s(&c["server"])),
            c["valid"].as_bool().unwrap(),
            "{c}"
        );
    }
    // Spec §14 and §22 scenario 16 examples.
    for ok in [
        "/127.0.0.1:8000/quux",
        "/@6@tcp@127.0.0.1:1234@@00000000000000000000000000000000@m@@/collection",
        "/127.0.0.1:8000/life/on/the/mississippi",
        "host:",
        ":80",
        "[::1]:80",
        "(x)@h:1",
    ] {
        assert!(validate_server(ok), "{ok}");
    }
    for bad in ["", "[::1:80", "a:b:c", "/"] {
        assert!(!validate_server(bad), "{bad}");
    }
}
