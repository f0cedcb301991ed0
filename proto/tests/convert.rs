#![allow(clippy::unwrap_used)]
//! The conversions at the edge, checked against prost itself: rowkit's own filter-size function
//! (used for the 20 KiB limit without any prost dependency) must equal
//! `prost::Message::encoded_len` on the converted message, and filters, row sets and mutations
//! must survive a round trip through the generated types and the wire encoding.

use prost::Message;
use rowkit_codec::model::{
    KeyBound, Mutation, RowFilter, RowRange, RowSet, Timestamp, TimestampRange, filter_encoded_len,
};
use rowkit_proto as convert;
use rowkit_statemachines::SplitMix64;

fn bytes(rng: &mut SplitMix64) -> Vec<u8> {
    // Lengths straddle the varint boundaries (127/128, 16383/16384).
    let len = match rng.below(6) {
        0 => 0,
        1 => rng.below(4) as usize,
        2 => 126 + rng.below(4) as usize,
        3 => 16_382 + rng.below(4) as usize,
        _ => rng.below(40) as usize,
    };
    (0..len).map(|_| rng.below(256) as u8).collect()
}

fn text(rng: &mut SplitMix64) -> String {
    let len = if rng.below(8) == 0 {
        130
    } else {
        rng.below(12) as usize
    };
    (0..len)
        .map(|_| char::from(b'a' + rng.below(26) as u8))
        .collect()
}

fn bound(rng: &mut SplitMix64) -> KeyBound {
    match rng.below(3) {
        0 => KeyBound::Unbounded,
        1 => KeyBound::Closed(bytes(rng)),
        _ => KeyBound::Open(bytes(rng)),
    }
}

fn int(rng: &mut SplitMix64) -> i32 {
    match rng.below(4) {
        0 => -(rng.below(1000) as i32) - 1,
        1 => i32::MAX - rng.below(3) as i32,
        _ => rng.below(300) as i32,
    }
}

fn i64_any(rng: &mut SplitMix64) -> i64 {
    match rng.below(4) {
        0 => 0,
        1 => -(rng.below(1 << 40) as i64),
        2 => i64::MAX,
        _ => rng.below(1 << 50) as i64,
    }
}

/// An arbitrary filter tree (valid or not: the size function must be exact on anything).
fn filter(rng: &mut SplitMix64, depth: u32) -> RowFilter {
    let kinds = if depth == 0 { 16 } else { 19 };
    match rng.below(kinds) {
        0 => RowFilter::Sink,
        1 => RowFilter::PassAll,
        2 => RowFilter::BlockAll,
        3 => RowFilter::RowKeyRegex(bytes(rng)),
        4 => RowFilter::RowSample(rng.next_f64()),
        5 => RowFilter::FamilyNameRegex(text(rng)),
        6 => RowFilter::ColumnQualifierRegex(bytes(rng)),
        7 => RowFilter::ColumnRange {
            family: text(rng),
            start: bound(rng),
            end: bound(rng),
        },
        8 => RowFilter::TimestampRange(TimestampRange {
            start: i64_any(rng),
            end: i64_any(rng),
        }),
        9 => RowFilter::ValueRegex(bytes(rng)),
        10 => RowFilter::ValueRange {
            start: bound(rng),
            end: bound(rng),
        },
        11 => RowFilter::CellsPerRowOffset(int(rng)),
        12 => RowFilter::CellsPerRowLimit(int(rng)),
        13 => RowFilter::CellsPerColumnLimit(int(rng)),
        14 => RowFilter::StripValue,
        15 => RowFilter::ApplyLabel(text(rng)),
        16 => RowFilter::Chain((0..rng.below(4)).map(|_| filter(rng, depth - 1)).collect()),
        17 => RowFilter::Interleave((0..rng.below(4)).map(|_| filter(rng, depth - 1)).collect()),
        _ => {
            let part =
                |rng: &mut SplitMix64| (rng.below(3) > 0).then(|| Box::new(filter(rng, depth - 1)));
            RowFilter::Condition {
                predicate: part(rng),
                true_filter: part(rng),
                false_filter: part(rng),
            }
        }
    }
}

#[test]
fn filter_encoded_len_equals_prost_on_many_filters() {
    let mut rng = SplitMix64::new(0xf11e);
    let mut checked = 0;
    for i in 0..20_000 {
        let f = filter(&mut rng, (i % 5) as u32);
        let pb = convert::filter_to_pb(f.clone());
        assert_eq!(filter_encoded_len(&f), pb.encoded_len(), "size of {f:?}");
        // The wire bytes decode to the same filter.
        let decoded = convert::filter_from_pb(
            &prost::Message::decode(pb.encode_to_vec().as_slice()).unwrap(),
        )
        .unwrap();
        if !matches!(f, RowFilter::RowSample(p) if p.is_nan()) {
            assert_eq!(decoded, f);
        }
        checked += 1;
    }
    assert_eq!(checked, 20_000);
}

#[test]
fn row_sets_and_mutations_round_trip_through_the_wire() {
    let set = RowSet {
        row_keys: vec![b"a".to_vec(), vec![], vec![0xff; 300]],
        row_ranges: vec![
            RowRange::all(),
            RowRange::prefix(b"p"),
            RowRange {
                start: KeyBound::Open(b"x".to_vec()),
                end: KeyBound::Closed(vec![]),
            },
        ],
    };
    let pb = convert::row_set_to_pb(set.clone());
    let wire = pb.encode_to_vec();
    let back = convert::row_set_from_pb(&prost::Message::decode(wire.as_slice()).unwrap());
    assert_eq!(back, set);

    let m = Mutation::SetCell {
        family: "f".into(),
        qualifier: vec![0, 1],
        timestamp: Timestamp::from_millis(7),
        value: vec![9; 200],
    };
    let wire = convert::mutation_to_pb(m.clone()).encode_to_vec();
    let back = convert::mutation_from_pb(prost::Message::decode(wire.as_slice()).unwrap()).unwrap();
    assert_eq!(back, m);
}
