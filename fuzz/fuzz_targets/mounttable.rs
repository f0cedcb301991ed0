//! Mount table codecs (spec/mounttable.md §4–§9): row keys, child qualifiers, permissions JSON,
//! mount flags, counters, node rows, glob patterns and server addresses never panic on any
//! input, and whatever decodes re-encodes to something that decodes to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rowkit_codec::model::{Cell, Row, Timestamp};
use rowkit_codec::mounttable as mt;
use rowkit_statemachines::mounttable::{GlobPattern, path_match};

fuzz_target!(|data: &[u8]| {
    let (selector, rest) = match data.split_first() {
        Some((s, r)) => (*s, r),
        None => return,
    };
    match selector % 8 {
        0 => {
            // Row key: decode, and for UTF-8 names re-encode and check the hash round trip.
            if let Some(name) = mt::decode_row_key(rest)
                && let Ok(name) = std::str::from_utf8(name)
            {
                let key = mt::row_key(name);
                let back = mt::decode_row_key(&key).expect("a row key has 9+ bytes");
                let cleaned = mt::clean(&format!("/{name}"));
                assert_eq!(back, &cleaned.as_bytes()[1..].to_vec()[..].to_owned()[..]);
            }
            let _ = mt::decode_counter_row_key(rest);
        }
        1 => {
            if let Ok(c) = mt::decode_child_qualifier(rest) {
                assert_eq!(mt::child_qualifier(&c.id, &c.name), rest);
            }
        }
        2 => {
            if let Ok(p) = mt::decode_permissions(rest) {
                let bytes = mt::encode_permissions(&p);
                assert_eq!(
                    mt::decode_permissions(&bytes).expect("own output decodes"),
                    p
                );
                let mut n = p.clone();
                n.normalize();
                let mut again = n.clone();
                again.normalize();
                assert_eq!(n, again, "normalize is idempotent");
                if let Ok(s) = std::str::from_utf8(rest) {
                    let _ = p.template(s);
                    let _ = p.includes("Admin", &[s.to_string()]);
                }
            }
            let _ = mt::decode_permissions_file(rest);
        }
        3 => {
            let (mut m, mut l) = (false, false);
            if mt::decode_flags_into(rest, &mut m, &mut l).is_ok() {
                let bits = (u32::from(m) << 1) | (u32::from(l) << 2);
                let (mut m2, mut l2) = (false, false);
                mt::decode_flags_into(&mt::encode_flags(mt::MountFlags(bits)), &mut m2, &mut l2)
                    .expect("own output decodes");
                assert_eq!((m, l), (m2, l2));
            }
        }
        4 => {
            if let Ok(v) = mt::decode_counter_value(rest) {
                assert_eq!(mt::encode_counter_value(v), rest);
            }
            if let Ok(v) = mt::parse_version(rest) {
                assert_eq!(mt::parse_version(mt::format_version(v).as_bytes()), Ok(v));
            }
        }
        5 => {
            // A node row from arbitrary cells.
            let mut cells = Vec::new();
            for chunk in rest.chunks(12) {
                let fam = ["m", "s", "c", "x"][usize::from(chunk[0] % 4)];
                let q = chunk
                    .get(1..chunk.len().min(6))
                    .unwrap_or_default()
                    .to_vec();
                let v = chunk.get(chunk.len().min(6)..).unwrap_or_default().to_vec();
                cells.push(Cell {
                    family: fam.into(),
                    qualifier: q,
                    timestamp: Timestamp(i64::from(chunk[0]) * 1000),
                    value: v,
                    labels: vec![],
                });
            }
            let row = Row {
                key: rest.iter().take(12).copied().collect(),
                cells,
            };
            let _ = mt::decode_node(&row, 100_000);
        }
        6 => {
            if let Ok(s) = std::str::from_utf8(rest) {
                let _ = mt::validate_server(s);
                let _ = mt::normalize_suffix(s);
                let _ = mt::path_clean(s);
                if let Ok(g) = GlobPattern::parse(s) {
                    let _ = g.head_matches(s);
                    let _ = g.tail();
                }
            }
        }
        _ => {
            let mid = rest.len() / 2;
            let _ = path_match(&rest[..mid], &rest[mid..]);
        }
    }
});
