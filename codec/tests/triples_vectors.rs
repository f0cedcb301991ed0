#![allow(clippy::unwrap_used)]
//! Every case of `$ROWKIT_SHARED/vectors/triples.json` (spec `triples.md` §12 scenario 1) and
//! the text-form cases of scenario 14.

use rowkit_codec::triples::keys::{self, DecodedKey, Index};
use rowkit_codec::triples::{
    Literal, Node, Object, Predicate, Reason, Triple, put_varint, varint16,
};
use serde_json::Value;

fn vectors() -> Value {
    let dir = std::env::var("ROWKIT_SHARED")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").to_string());
    let path = format!("{dir}/vectors/triples.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("vector file {path} is required: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn node_uuids() {
    let v = vectors();
    let cases = v["node_uuids"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let n = Node::parse(s(&c["text"]).as_bytes()).unwrap();
        assert_eq!(n.node_type(), s(&c["type"]).as_bytes());
        assert_eq!(n.id(), s(&c["id"]).as_bytes());
        assert_eq!(n.to_text(), s(&c["text"]).as_bytes());
        assert_eq!(
            hex(&[n.node_type(), n.id()].concat()),
            s(&c["uuid_input_hex"])
        );
        assert_eq!(n.uuid().to_text(), s(&c["uuid"]), "{c}");
    }
}

#[test]
fn predicates() {
    let v = vectors();
    let cases = v["predicates"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let p = Predicate::parse(s(&c["input"]).as_bytes()).unwrap();
        assert_eq!(p.to_text(), s(&c["text"]).as_bytes(), "{c}");
        assert_eq!(p.id(), s(&c["id"]).as_bytes());
        assert_eq!(p.is_immutable(), c["immutable"].as_bool().unwrap());
        assert_eq!(p.uuid().to_text(), s(&c["uuid"]), "{c}");
        assert_eq!(p.partial_uuid().to_text(), s(&c["partial_uuid"]));
        if let Some(a) = p.anchor() {
            assert_eq!(
                a.unix_nano_wrapping(),
                c["anchor_unix_nanos"].as_i64().unwrap()
            );
            assert_eq!(
                hex(&varint16(a.unix_nano_wrapping())),
                s(&c["anchor_varint16_hex"])
            );
            let t = Triple {
                subject: Node::parse(b"/u<x>").unwrap(),
                predicate: p.clone(),
                object: Object::parse(b"/u<y>").unwrap(),
            };
            assert_eq!(
                keys::cell_timestamp(&t).0,
                c["cell_timestamp_micros"].as_i64().unwrap()
            );
        }
        // The text form round-trips.
        assert_eq!(Predicate::parse(&p.to_text()).unwrap(), p);
    }
}

#[test]
fn literals() {
    let v = vectors();
    let cases = v["literals"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let l = Literal::parse(s(&c["input"]).as_bytes()).unwrap();
        assert_eq!(l.to_text(), s(&c["text"]).as_bytes(), "{c}");
        assert_eq!(l.type_name(), s(&c["type"]));
        assert_eq!(hex(&l.uuid_input()), s(&c["uuid_input_hex"]), "{c}");
        assert_eq!(l.uuid().to_text(), s(&c["uuid"]), "{c}");
        assert_eq!(Literal::parse(&l.to_text()).unwrap().to_text(), l.to_text());
    }
    for c in v["int64_literal_out_of_range"].as_array().unwrap() {
        let e = Literal::parse(s(&c["input"]).as_bytes()).unwrap_err();
        assert!(matches!(e.reason, Reason::Int64OutOfRange(_)), "{e}");
    }
    // The range edges.
    assert!(Literal::parse(b"\"36028797018963967\"^^type:int64").is_ok());
    assert!(Literal::parse(b"\"-36028797018963968\"^^type:int64").is_ok());
    assert!(Literal::parse(b"\"-36028797018963969\"^^type:int64").is_err());
    assert_eq!(put_varint::<8>((1 << 55) - 1).map(|b| b[7]), Some(0x7f));
}

#[test]
fn correct_timestamps() {
    let v = vectors();
    let cases = v["correct_timestamp"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        assert_eq!(
            keys::correct_timestamp(c["input"].as_i64().unwrap()),
            c["output"].as_i64().unwrap(),
            "{c}"
        );
    }
}

fn check_triple(c: &Value, graph: &str) {
    let t = Triple::parse(s(&c["input"]).as_bytes()).unwrap();
    assert_eq!(t.to_text(), s(&c["text"]).as_bytes(), "{c}");
    assert_eq!(t.uuid().to_text(), s(&c["triple_uuid"]), "{c}");
    if let Some(u) = c.get("subject_uuid") {
        assert_eq!(t.subject.uuid().to_text(), s(u));
        assert_eq!(t.predicate.uuid().to_text(), s(&c["predicate_uuid"]));
        assert_eq!(
            t.predicate.partial_uuid().to_text(),
            s(&c["predicate_partial_uuid"])
        );
        assert_eq!(t.object.uuid().to_text(), s(&c["object_uuid"]));
    }
    if let Some(h) = c.get("sha256_of_text") {
        use sha2::Digest;
        assert_eq!(hex(&sha2::Sha256::digest(t.to_text())), s(h));
    }
    let cells = keys::triple_cells(graph.as_bytes(), &t);
    assert_eq!(cells[0].family, s(&c["family"]));
    if let Some(ts) = c.get("timestamp_micros") {
        assert_eq!(cells[0].timestamp.0, ts.as_i64().unwrap(), "{c}");
    }
    if let Some(expected) = c.get("cells") {
        let expected = expected.as_array().unwrap();
        assert_eq!(expected.len(), 4);
        for (cell, e) in cells.iter().zip(expected) {
            assert_eq!(cell.row_key, s(&e["row"]).as_bytes(), "{c}");
            let column = format!(
                "{}:{}",
                cell.family,
                std::str::from_utf8(cell.qualifier).unwrap()
            );
            assert_eq!(column, s(&e["column"]));
        }
    }
    for cell in &cells {
        assert_eq!(cell.row_key.len(), graph.len() + 115);
        match keys::decode_row_key(&cell.row_key).unwrap() {
            DecodedKey::Triple {
                graph: g,
                index,
                uuids,
            } => {
                assert_eq!(g, graph.as_bytes());
                assert_eq!(index, cell.index);
                assert_eq!(uuids, keys::KeyUuids::of(&t));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn triples_and_row_keys() {
    let v = vectors();
    let cases = v["triples"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        check_triple(c, s(&c["graph"]));
    }
}

#[test]
fn bt_fixture() {
    let v = vectors();
    let cases = v["bt_fixture"].as_array().unwrap();
    assert_eq!(cases.len(), 18);
    for c in cases {
        check_triple(c, "test");
    }
    // Spec §8: the derived timestamps of the entries without `timestamp_micros`.
    let derived: Vec<i64> = [2, 4, 8, 11, 14, 17]
        .iter()
        .map(|&i| {
            let t = Triple::parse(s(&cases[i]["input"]).as_bytes()).unwrap();
            keys::cell_timestamp(&t).0
        })
        .collect();
    assert_eq!(
        derived,
        [
            111000000,
            382000000,
            410852000000,
            8799000000,
            76000000,
            14702000000
        ]
    );
}

#[test]
fn graph_rows() {
    let v = vectors();
    let cases = v["graph_rows"].as_array().unwrap();
    assert!(!cases.is_empty());
    for c in cases {
        let g = s(&c["graph"]).as_bytes();
        assert_eq!(keys::graph_row_key(g), s(&c["row"]).as_bytes());
        assert_eq!(
            format!(
                "{}:{}",
                keys::FAMILY_GRAPH,
                std::str::from_utf8(keys::GRAPH_QUALIFIER).unwrap()
            ),
            s(&c["column"])
        );
        assert_eq!(
            keys::GRAPH_CELL_TIMESTAMP.0,
            c["timestamp_micros"].as_i64().unwrap()
        );
        assert_eq!(
            keys::decode_row_key(&keys::graph_row_key(g)).unwrap(),
            DecodedKey::Graph { graph: g.to_vec() }
        );
    }
}

#[test]
fn key_test_vectors_of_section_8() {
    let t = Triple::parse(b"/u<joe>\t\"parent_of\"@[2017-12-21T12:00:00-08:00]\t/u<mary>").unwrap();
    let cells = keys::triple_cells(b"test", &t);
    assert_eq!(cells[0].row_key, b"test:OSP:e5364b94-fe66-5b01-a526-5fdf1e028e80:2821fefc-a86e-597b-b187-58805cad8813:91b6c9d2-69e3-5cec-a465-d200f4872671");
    assert_eq!(cells[0].family, "temporal_triple");
    assert_eq!(cells[0].timestamp.0, 1513886400000000);
    let q: Vec<&[u8]> = cells.iter().map(|c| c.qualifier).collect();
    assert_eq!(q, [b"SP", b"OS", b"OP", b"PO"]);
    assert_eq!(cells.map(|c| c.index), Index::ALL);
}

#[test]
fn scenario_14_text_forms() {
    assert!(Node::parse(b"_").is_err());
    assert!(Node::parse(b"").is_err());
    assert!(Predicate::parse(b"\"p\"@[").is_err());
    assert!(Predicate::parse(b"\"p\"@[\"]").is_err());
    assert!(Literal::parse(b"\"x\"^^type:blob").is_err());
    assert!(Literal::parse(b"\"^^type:text").is_err());
    assert!(Literal::parse(b"\"1\"^^type:foo").is_err());
    let e = Triple::parse(b"/u<a] /b> \"p\"@[] /u<c>").unwrap_err();
    assert_eq!(e.reason, Reason::SplitOrder);
    let nan = Literal::parse(b"\"NaN\"^^type:float64").unwrap();
    assert_eq!(hex(&nan.uuid_input()), "010000000000f87f");
    assert_eq!(
        Predicate::parse(b"\"foo\"@[2016-01-01T00:00:00,5Z]")
            .unwrap()
            .to_text(),
        b"\"foo\"@[2016-01-01T00:00:00.5Z]"
    );
    assert_eq!(
        Predicate::parse(b"\"foo\"@[2016-01-01T00:00:00.1234567891Z]")
            .unwrap()
            .to_text(),
        b"\"foo\"@[2016-01-01T00:00:00.123456789Z]"
    );
    // Whitespace of any kind between parts; output uses TAB.
    let t = Triple::parse(b"  /u<a>  \n\"p\"@[]\r /u<c>  ").unwrap();
    assert_eq!(t.to_text(), b"/u<a>\t\"p\"@[]\t/u<c>");
    // Blank nodes, quoted anchors.
    assert_eq!(Node::parse(b"_:x").unwrap().to_text(), b"/_<x>");
    assert_eq!(
        Predicate::parse(b"\"p\"@[\"2016-01-01T00:00:00Z\"]")
            .unwrap()
            .to_text(),
        b"\"p\"@[2016-01-01T00:00:00Z]"
    );
    // Key decoding rejects non-keys.
    assert!(keys::decode_row_key(b"nonsense").is_err());
}
