//! The trace store codecs (`rowkit_codec::tracestore`): gob decoding of any bytes, row-key
//! decoding, trace-id text decoding (against a non-empty OPS built from the input), options and
//! digest-map cells never panic; whatever the gob decoder accepts re-encodes to a gob that
//! decodes to the same OrderedParamSet; a trace id that decodes re-encodes to a canonical id
//! that decodes to the same params; params drawn from the OPS round-trip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rowkit_codec::tracestore::cells::*;
use rowkit_codec::tracestore::keys::*;
use rowkit_codec::tracestore::ops::parse_options_text;
use rowkit_codec::tracestore::{
    CodecError, OrderedParamSet, ParamSet, Params, decode_ops_gob, encode_ops_gob,
};

/// An OPS shaped by the input's first bytes — 1 to 12 keys `k0…`, each with 1 to 12 values
/// `v0…`, so one- and two-digit key and value indices exist — and the rest of the input.
fn small_ops(data: &[u8]) -> (OrderedParamSet, &[u8]) {
    let Some((&shape, rest)) = data.split_first() else {
        return (OrderedParamSet::new(), data);
    };
    let keys = 1 + usize::from(shape % 12);
    let (counts, text) = rest.split_at(keys.min(rest.len()));
    let mut ps = ParamSet::new();
    for (k, &count) in counts.iter().enumerate() {
        let values = (0..=usize::from(count % 12))
            .map(|v| format!("v{v}"))
            .collect();
        ps.insert(format!("k{k}"), values);
    }
    let mut ops = OrderedParamSet::new();
    ops.update(&ps);
    (ops, text)
}

fuzz_target!(|data: &[u8]| {
    let (selector, rest) = match data.split_first() {
        Some((s, r)) => (*s, r),
        None => return,
    };
    match selector % 4 {
        0 => {
            // Gob: garbage, or a valid prefix followed by garbage.
            if let Ok(ops) = decode_ops_gob(rest) {
                let again = decode_ops_gob(&encode_ops_gob(&ops)).expect("re-encoded gob decodes");
                assert_eq!(again, ops);
                // Every trace id the OPS can express decodes back to its params.
                for (i, key) in ops.key_order().iter().enumerate().take(8) {
                    if let Some(value) = ops.param_set().get(key).and_then(|v| v.first()) {
                        let enc = format!(",{i}=0,");
                        if ops.key_order().iter().position(|k| k == key) == Some(i) {
                            let params = ops.decode_params(enc.as_bytes()).expect("canonical id");
                            assert_eq!(params.get(key), Some(value));
                        }
                    }
                }
            }
        }
        1 => {
            if let Ok(d) = decode_row_key(rest) {
                let rebuilt = match d.shard {
                    Some(s) => sharded_row_name(s, rest[6] as char, d.tile_key, &d.subkey),
                    None => rest.to_vec(),
                };
                assert_eq!(rebuilt, rest);
            }
            let _ = parse_ops_row_tile_key(rest);
            let _ = parse_trace_qualifier(rest);
            let _ = extract_subkey(rest);
        }
        2 => {
            let (ops, text) = small_ops(rest);
            let _ = parse_options_text(text);
            if let Ok(params) = ops.decode_params(text) {
                // Decode-encode round trip: what decoded has a canonical id that decodes back.
                match ops.encode_params(&params) {
                    Ok(canonical) => {
                        assert_eq!(ops.decode_params(canonical.as_bytes()), Ok(params));
                    }
                    Err(e) => assert!(params.is_empty() && e == CodecError::NoParamsEncoded, "{e}"),
                }
            }
            // Params drawn from the OPS (a value per key unless the byte's high bit is set)
            // encode and decode back.
            let drawn: Params = ops
                .key_order()
                .iter()
                .zip(text)
                .filter(|(_, b)| **b < 0x80)
                .map(|(k, &b)| {
                    let values = &ops.param_set()[k];
                    (k.clone(), values[usize::from(b) % values.len()].clone())
                })
                .collect();
            if !drawn.is_empty() {
                let id = ops.encode_params(&drawn).expect("params of the OPS encode");
                assert_eq!(ops.decode_params(id.as_bytes()), Ok(drawn));
            }
        }
        _ => {
            if let Ok(id) = decode_digest_id_cell(rest) {
                assert_eq!(decode_digest_id_cell(&encode_digest_id_cell(id)), Ok(id));
            }
            if let Ok(id) = decode_digest_map_value(rest) {
                assert_eq!(
                    decode_digest_map_value(&encode_digest_map_value(id)),
                    Ok(id)
                );
            }
            let _ = digest_of_map_cell(rest, rest);
            let _ = decode_id_counter(rest);
            let d = cell_to_digest(rest);
            if !d.is_empty() {
                assert_eq!(digest_to_cell(&d), rest);
            }
            if let Ok(text) = std::str::from_utf8(rest) {
                let n = normalize_digest(text);
                if !n.is_empty() {
                    assert!(digest_map_row(&n).is_some());
                }
            }
        }
    }
});
