//! Fuzzes the BadWolf text parsers and the triple key codec: no input panics; parsed values
//! re-parse from their own text to the same text (except the documented quirk 19 and offsets
//! beyond ±24:00 that Go itself cannot re-read); every encoded row key decodes back.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rowkit_codec::triples::keys::{self, DecodedKey};
use rowkit_codec::triples::{Literal, LiteralValue, Node, Object, Predicate, Triple};

fn find(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fuzz_target!(|data: &[u8]| {
    let _ = keys::decode_row_key(data);
    let _ = Object::parse(data);
    if let Ok(n) = Node::parse(data) {
        let again = Node::parse(&n.to_text()).expect("node text re-parses");
        assert_eq!(again, n);
    }
    if let Ok(p) = Predicate::parse(data) {
        let offset_ok = p
            .anchor()
            .is_none_or(|a| a.offset_seconds().abs() <= 24 * 3600);
        if offset_ok && !find(p.id(), b"\"@[") {
            let again = Predicate::parse(&p.to_text()).expect("predicate text re-parses");
            assert_eq!(again.to_text(), p.to_text());
            assert_eq!(again.uuid(), p.uuid());
        }
    }
    if let Ok(l) = Literal::parse(data) {
        let quirk = matches!(l.value(), LiteralValue::Text(t) if find(t, b"\"^^type:"));
        if !quirk {
            let again = Literal::parse(&l.to_text()).expect("literal text re-parses");
            assert_eq!(again.to_text(), l.to_text());
            assert_eq!(again.uuid(), l.uuid());
        }
    }
    if let Ok(t) = Triple::parse(data) {
        let graph = b"g";
        let _ = t.uuid();
        for cell in keys::triple_cells(graph, &t) {
            match keys::decode_row_key(&cell.row_key).expect("row key decodes") {
                DecodedKey::Triple {
                    graph: g, index, ..
                } => {
                    assert_eq!(g, graph);
                    assert_eq!(index, cell.index);
                }
                DecodedKey::Graph { .. } => panic!("triple key decoded as graph row"),
            }
            assert_eq!(cell.timestamp.0 % 1000, 0);
        }
    }
});
