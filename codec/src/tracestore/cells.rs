//! Cell values of the trace store (`spec/tracestore.md` 5, 11.2): digests <-> md5 cells,
//! digest normalization, digest-id cells (Go uvarint), digest-map rows, qualifiers and values,
//! the id counter, and the mutations of a trace cell.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::CodecError;
use super::keys::{GLOBAL_TILE_KEY, TYPE_DIGEST_MAP, calc_sharded_row_name, extract_subkey};
use crate::model::{Mutation, Timestamp, TimestampRange};

/// The missing digest.
pub const MISSING_DIGEST: &str = "";
/// Family of the OPS row.
pub const FAMILY_OPS: &str = "O";
/// Family of trace cells.
pub const FAMILY_TRACE: &str = "T";
/// Family of options cells (md5 layout).
pub const FAMILY_OPTIONS: &str = "P";
/// Family of the id counter (digest-id layout).
pub const FAMILY_ID_COUNTER: &str = "I";
/// Family of the digest map (digest-id layout).
pub const FAMILY_DIGEST_MAP: &str = "D";
/// `O:H`.
pub const COLUMN_HASH: &[u8] = b"H";
/// `O:OPS`.
pub const COLUMN_OPS: &[u8] = b"OPS";
/// `P:B`.
pub const COLUMN_OPTIONS: &[u8] = b"B";
/// `I:idc`.
pub const COLUMN_ID_COUNTER: &[u8] = b"idc";
/// Extra ids reserved by every counter increment (`numReservedIds`).
pub const RESERVED_IDS: u64 = 256;

/// md5 layout `toBytes`: the 16 bytes of a 32-hex-character digest (either case), else the
/// empty value (missing or invalid digests are stored as missing).
pub fn digest_to_cell(digest: &str) -> Vec<u8> {
    // Into a fixed buffer: a Put converts one digest per trace.
    let mut bytes = [0u8; 16];
    match hex::decode_to_slice(digest, &mut bytes) {
        Ok(()) => bytes.to_vec(),
        Err(_) => Vec::new(),
    }
}

/// md5 layout `fromBytes`: lowercase hex of a 16-byte value, else `""`.
pub fn cell_to_digest(cell: &[u8]) -> String {
    // Into a fixed buffer: `hex::encode` collects a `String` from a char iterator, and a tile
    // read converts every trace cell (a fifth of `read 1 commit` went there).
    let mut text = [0u8; 32];
    match hex::encode_to_slice(cell, &mut text) {
        // Fails unless the cell is 16 bytes; hex digits are ASCII, so the text is UTF-8.
        Ok(()) => core::str::from_utf8(&text)
            .map(String::from)
            .unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// `norm(d)`: lowercase of a 32-hex-character digest, otherwise `""`.
pub fn normalize_digest(digest: &str) -> String {
    if digest.len() == 32 && digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        digest.to_ascii_lowercase()
    } else {
        String::new()
    }
}

/// Go `binary.PutUvarint`: the digest-id trace cell.
pub fn encode_digest_id_cell(id: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(10);
    let mut x = id;
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
    out
}

/// Go `binary.Uvarint` over the whole value: empty -> 0; the first byte without the high bit
/// must be the last, at index <= 9 (<= 1 there). Else `corrupt digest id cell`.
pub fn decode_digest_id_cell(cell: &[u8]) -> Result<u64, CodecError> {
    if cell.is_empty() {
        return Ok(0);
    }
    let mut x: u64 = 0;
    let mut shift = 0u32;
    for (i, &b) in cell.iter().enumerate() {
        if i == 10 {
            break;
        }
        if b < 0x80 {
            if (i == 9 && b > 1) || i + 1 != cell.len() {
                return Err(CodecError::CorruptDigestIdCell);
            }
            return Ok(x | (u64::from(b) << shift));
        }
        x |= u64::from(b & 0x7f) << shift;
        shift += 7;
    }
    Err(CodecError::CorruptDigestIdCell)
}

/// The digest-map row of a normalized digest: `calcShardedRowName(0, "d", d[0:3])`.
/// `None` for a digest shorter than 3 bytes (never the case after [`normalize_digest`]).
pub fn digest_map_row(digest: &str) -> Option<Vec<u8>> {
    let prefix = digest.as_bytes().get(..3)?;
    Some(calc_sharded_row_name(
        GLOBAL_TILE_KEY,
        TYPE_DIGEST_MAP,
        prefix,
    ))
}

/// The digest-map qualifier of a normalized digest: `d[3:]`.
pub fn digest_map_qualifier(digest: &str) -> Option<Vec<u8>> {
    digest.as_bytes().get(3..).map(<[u8]>::to_vec)
}

/// A digest-map value: the id as decimal ASCII (`strconv.FormatInt`).
pub fn encode_digest_map_value(id: u64) -> Vec<u8> {
    format!("{id}").into_bytes()
}

/// Parses a digest-map value as Go `strconv.ParseInt(v, 10, 64)` and requires `>= 1`; else
/// `corrupt digest map`.
pub fn decode_digest_map_value(value: &[u8]) -> Result<u64, CodecError> {
    let (negative, digits) = match value.first() {
        Some(b'+') => (false, &value[1..]),
        Some(b'-') => (true, &value[1..]),
        _ => (false, value),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(CodecError::CorruptDigestMap);
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or(CodecError::CorruptDigestMap)?;
    }
    // Within int64 (a negative value is rejected below anyway).
    if negative || v == 0 || v > i64::MAX as u64 {
        return Err(CodecError::CorruptDigestMap);
    }
    Ok(v)
}

/// The digest a map cell names: the row's subkey followed by the qualifier, verbatim.
pub fn digest_of_map_cell(row_key: &[u8], qualifier: &[u8]) -> Result<String, CodecError> {
    let mut bytes = extract_subkey(row_key).to_vec();
    bytes.extend_from_slice(qualifier);
    String::from_utf8(bytes).map_err(|_| CodecError::CorruptDigestMap)
}

/// The id counter value from an increment's answer: 8-byte big-endian int64.
pub fn decode_id_counter(value: &[u8]) -> Result<i64, CodecError> {
    let bytes: [u8; 8] = value.try_into().map_err(|_| CodecError::BadIdCounter {
        reason: "malformed id counter response",
    })?;
    Ok(i64::from_be_bytes(bytes))
}

/// The id counter cell of a value (Bigtable's increment format).
pub fn encode_id_counter(value: i64) -> Vec<u8> {
    value.to_be_bytes().to_vec()
}

/// The ids an increment of `amount` answered with `max` reserved: `[max - amount, max)`, with
/// id 0 skipped. `corrupt id counter` when `max < amount`.
pub fn reserved_ids(max: i64, amount: u64) -> Result<core::ops::Range<u64>, CodecError> {
    let amount_i = i64::try_from(amount).map_err(|_| CodecError::BadIdCounter {
        reason: "corrupt id counter",
    })?;
    if max < amount_i {
        return Err(CodecError::BadIdCounter {
            reason: "corrupt id counter",
        });
    }
    let first = (max - amount_i).max(1) as u64;
    Ok(first..max as u64)
}

/// The mutations of one digest-id trace cell (`spec/tracestore.md` 11.6 step 6): the cell at
/// `trunc_ms(ts)` and, when its end is positive, the deletion of versions older than 1 ms
/// before it.
pub fn digest_id_trace_mutations(qualifier: &[u8], ts: Timestamp, id: u64) -> Vec<Mutation> {
    let ts = ts.truncate_to_millis();
    let mut out = alloc::vec![Mutation::SetCell {
        family: FAMILY_TRACE.into(),
        qualifier: qualifier.to_vec(),
        timestamp: ts,
        value: encode_digest_id_cell(id),
    }];
    let end = ts.0 - 1000;
    if end > 0 {
        out.push(Mutation::DeleteFromColumn {
            family: FAMILY_TRACE.into(),
            qualifier: qualifier.to_vec(),
            range: Some(TimestampRange { start: 0, end }),
        });
    }
    out
}

/// A Go `time.Time` (seconds, nanoseconds) as a cell timestamp: µs truncated to ms.
pub fn cell_timestamp(unix_seconds: i64, nanos: u32) -> Timestamp {
    Timestamp(
        unix_seconds
            .saturating_mul(1_000_000)
            .saturating_add(i64::from(nanos / 1000)),
    )
    .truncate_to_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uvarint_round_trip() {
        for id in [0u64, 1, 127, 128, 300, 70000, u64::MAX] {
            assert_eq!(decode_digest_id_cell(&encode_digest_id_cell(id)), Ok(id));
        }
        assert!(decode_digest_id_cell(&[0xff; 11]).is_err());
        assert!(
            decode_digest_id_cell(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02])
                .is_err()
        );
    }

    #[test]
    fn reserved_ranges() {
        assert_eq!(reserved_ids(346, 346), Ok(1..346));
        assert_eq!(reserved_ids(697, 351), Ok(346..697));
        assert!(reserved_ids(5, 346).is_err());
    }
}
