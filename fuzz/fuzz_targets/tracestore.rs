//! The trace store codecs (`rowkit_codec::tracestore`): gob decoding of any bytes, row-key
//! decoding, trace-id text decoding, options and digest-map cells never panic; whatever the gob
//! decoder accepts re-encodes to a gob that decodes to the same OrderedParamSet; valid trace
//! ids round-trip through the OPS.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rowkit_codec::tracestore::cells::*;
use rowkit_codec::tracestore::keys::*;
use rowkit_codec::tracestore::ops::parse_options_text;
use rowkit_codec::tracestore::{decode_ops_gob, encode_ops_gob};

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
                for (i, key) in ops.key_order.iter().enumerate().take(8) {
                    if let Some(value) = ops.param_set.get(key).and_then(|v| v.first()) {
                        let enc = format!(",{i}=0,");
                        if ops.key_order.iter().position(|k| k == key) == Some(i) {
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
            let ops = decode_ops_gob(&encode_ops_gob(&Default::default())).expect("empty OPS");
            let _ = ops.decode_params(rest);
            let _ = parse_options_text(rest);
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
