//! Row keys of the trace store (`spec/tracestore.md` 3, 4): tile keys, offsets, shards (CRC-32
//! of the subkey mod 32), the `[shard]:ts:[type]:[tile key]:[subkey]` grammar, prefix ranges,
//! trace qualifiers of both layouts, rowkit's migration marker row `:rk:m:0000000000:`
//! (`docs/migration.md` §2.1), and the decoding of any trace store row key.
//!
//! This module is the only place that builds or parses these keys.

use alloc::vec::Vec;

use super::CodecError;
use crate::digits::{push_decimal_padded, ten_digits, two_digits};
use crate::model::RowRange;
use crate::segment::{KeySegment, Segments};

/// Commits per tile.
pub const TILE_SIZE: u32 = 256;
/// Number of shards trace, options and digest-map rows are spread over.
pub const SHARDS: u32 = 32;
/// The largest valid repo index (Go converts it to `int32`).
pub const MAX_REPO_INDEX: u32 = i32::MAX as u32;
/// The tile key of the global rows (digest map, id counter): the constant `0`.
pub const GLOBAL_TILE_KEY: i32 = 0;
/// Row type of the OPS row.
pub const TYPE_OPS: char = 'o';
/// Row type of trace rows.
pub const TYPE_TRACE: char = 't';
/// Row type of options rows (md5 layout).
pub const TYPE_OPTIONS: char = 'p';
/// Row type of digest-map rows (digest-id layout).
pub const TYPE_DIGEST_MAP: char = 'd';
/// Row type of the id counter row (digest-id layout).
pub const TYPE_ID_COUNTER: char = 'i';
/// Row type of rowkit's migration marker row (namespace `rk`, `docs/migration.md` §2.1).
pub const TYPE_MIGRATION: char = 'm';
/// Gold's namespace: every Gold row is `[shard]:ts:…`.
const NAMESPACE_GOLD: &[u8; 2] = b"ts";
/// rowkit's namespace beside Gold's: nothing of Gold reads `:rk:` rows (`docs/migration.md`
/// §2.1).
const NAMESPACE_ROWKIT: &[u8; 2] = b"rk";

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320, as zlib and Go's `crc32.ChecksumIEEE`),
/// by `crc32fast` (SIMD where the target has it, slicing-by-16 otherwise, `no_std`).
pub fn crc32_ieee(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// The shard of a subkey: `crc32_ieee(subkey) mod 32`.
pub fn shard_of(subkey: &[u8]) -> u32 {
    crc32_ieee(subkey) % SHARDS
}

/// The tile key of a tile index: `2147483647 - index`; `-1` for a negative index (Go's "bad
/// key").
pub fn tile_key(tile_index: i64) -> i32 {
    if tile_index < 0 || tile_index > i64::from(i32::MAX) {
        return -1;
    }
    // In range by the check above.
    (i64::from(i32::MAX) - tile_index) as i32
}

/// The tile index of a tile key (inverse of [`tile_key`] for keys `0 ..= 2147483647`).
pub fn tile_index_of_key(tile_key: i32) -> Option<u32> {
    (tile_key >= 0).then(|| (i32::MAX - tile_key) as u32)
}

/// Where a commit lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TilePosition {
    /// `repo_index / 256`.
    pub tile_index: u32,
    /// The tile's key.
    pub tile_key: i32,
    /// `repo_index % 256`.
    pub offset: u32,
}

/// The tile and offset of a repo index; `bad repo index` outside `0 ..= 2147483647`.
pub fn repo_index_position(repo_index: i64) -> Result<TilePosition, CodecError> {
    if repo_index < 0 || repo_index > i64::from(MAX_REPO_INDEX) {
        return Err(CodecError::BadRepoIndex);
    }
    let r = repo_index as u32;
    let tile_index = r / TILE_SIZE;
    Ok(TilePosition {
        tile_index,
        tile_key: tile_key(i64::from(tile_index)),
        offset: r % TILE_SIZE,
    })
}

/// The md5 layout's trace qualifier: `%03d` of the offset.
pub fn md5_trace_qualifier(offset: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(3);
    push_decimal_padded(&mut out, u64::from(offset), 3);
    out
}

/// The digest-id layout's trace qualifier: the offset as unpadded decimal.
pub fn digest_id_trace_qualifier(offset: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(3);
    push_decimal_padded(&mut out, u64::from(offset), 1);
    out
}

/// Parses a trace qualifier as Go `strconv.Atoi` does (optional sign, one or more ASCII
/// digits) and checks `[0, 256)`; anything else is `bad trace column`.
pub fn parse_trace_qualifier(qualifier: &[u8]) -> Result<u32, CodecError> {
    let digits = match qualifier.first() {
        Some(b'+') | Some(b'-') => &qualifier[1..],
        _ => qualifier,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(CodecError::BadTraceColumn);
    }
    let negative = qualifier.first() == Some(&b'-');
    let mut value: u32 = 0;
    for &d in digits {
        value = value.saturating_mul(10).saturating_add(u32::from(d - b'0'));
    }
    if negative && value != 0 {
        return Err(CodecError::BadTraceColumn);
    }
    if value >= TILE_SIZE {
        return Err(CodecError::BadTraceColumn);
    }
    Ok(value)
}

/// `"%02d:ts:%c:%010d:%s"`: a sharded row name with an explicit shard.
pub fn sharded_row_name(shard: u32, row_type: char, tile_key: i32, subkey: &[u8]) -> Vec<u8> {
    // 2 shard digits (more only past 99), 4 for `:ts:`, the type, 1 + 10 + 1 for the tile key.
    let mut out = Vec::with_capacity(18 + row_type.len_utf8() + subkey.len());
    match u8::try_from(shard) {
        Ok(small) if small < 100 => out.extend_from_slice(&two_digits(small)),
        _ => push_decimal_padded(&mut out, u64::from(shard), 2),
    }
    out.extend_from_slice(b":ts:");
    push_row_type(&mut out, row_type);
    out.push(b':');
    push_tile_key(&mut out, tile_key);
    out.push(b':');
    out.extend_from_slice(subkey);
    out
}

/// Go's `calcShardedRowName`: the shard is computed from the subkey.
pub fn calc_sharded_row_name(tile_key: i32, row_type: char, subkey: &[u8]) -> Vec<u8> {
    sharded_row_name(shard_of(subkey), row_type, tile_key, subkey)
}

/// The UTF-8 of a row type (`%c`).
fn push_row_type(out: &mut Vec<u8>, row_type: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(row_type.encode_utf8(&mut buf).as_bytes());
}

/// `%010d` of an int32 (Go pads negatives after the sign: `-000000001`).
fn push_tile_key(out: &mut Vec<u8>, tile_key: i32) {
    match u32::try_from(tile_key) {
        Ok(key) => out.extend_from_slice(&ten_digits(key)),
        Err(_) => {
            out.push(b'-');
            push_decimal_padded(out, u64::from(tile_key.unsigned_abs()), 9);
        }
    }
}

/// `:<namespace>:<type>:%010d:`: the unsharded rows (OPS, id counter in `ts`; the migration
/// marker in `rk`).
fn unsharded_row_name(namespace: &[u8; 2], row_type: char, tile_key: i32) -> Vec<u8> {
    let mut out = Vec::with_capacity(17);
    out.push(b':');
    out.extend_from_slice(namespace);
    out.push(b':');
    push_row_type(&mut out, row_type);
    out.push(b':');
    push_tile_key(&mut out, tile_key);
    out.push(b':');
    out
}

/// The OPS row of a tile: `:ts:o:%010d:`.
pub fn ops_row_name(tile_key: i32) -> Vec<u8> {
    unsharded_row_name(NAMESPACE_GOLD, TYPE_OPS, tile_key)
}

/// The id counter row: `:ts:i:0000000000:`.
pub fn id_counter_row_name() -> Vec<u8> {
    unsharded_row_name(NAMESPACE_GOLD, TYPE_ID_COUNTER, GLOBAL_TILE_KEY)
}

/// The migration marker row: `:rk:m:0000000000:` (`docs/migration.md` §2.1), in both tables.
pub fn migration_row_name() -> Vec<u8> {
    unsharded_row_name(NAMESPACE_ROWKIT, TYPE_MIGRATION, GLOBAL_TILE_KEY)
}

/// The trace row of an encoded trace id in a tile.
pub fn trace_row_name(tile_key: i32, encoded_params: &[u8]) -> Vec<u8> {
    calc_sharded_row_name(tile_key, TYPE_TRACE, encoded_params)
}

/// The options row of an encoded trace id in a tile (md5 layout).
pub fn options_row_name(tile_key: i32, encoded_params: &[u8]) -> Vec<u8> {
    calc_sharded_row_name(tile_key, TYPE_OPTIONS, encoded_params)
}

/// The prefix `"%02d:ts:%c:%010d:"` every row of one shard, type and tile starts with.
pub fn shard_prefix(shard: u32, row_type: char, tile_key: i32) -> Vec<u8> {
    sharded_row_name(shard, row_type, tile_key, b"")
}

/// The scan of one shard, type and tile: `[prefix, successor(prefix))`.
pub fn shard_prefix_range(shard: u32, row_type: char, tile_key: i32) -> RowRange {
    RowRange::prefix(&shard_prefix(shard, row_type, tile_key))
}

/// The prefix of every OPS row (`:ts:o:`), scanned by NewestTile.
pub const OPS_ROWS_PREFIX: &[u8] = b":ts:o:";

/// Go's `extractSubkey`: the bytes after the last `:` (all of `row` if it has none).
pub fn extract_subkey(row: &[u8]) -> &[u8] {
    match row.iter().rposition(|&b| b == b':') {
        Some(i) => &row[i + 1..],
        None => row,
    }
}

/// Parses the tile key of an OPS row key (`:ts:o:NNNNNNNNNN:`), as NewestTile does: exactly
/// 10 digits in `0 ..= 2147483647`, else `bad tile key`.
pub fn parse_ops_row_tile_key(row: &[u8]) -> Result<i32, CodecError> {
    let digits = row
        .strip_prefix(OPS_ROWS_PREFIX)
        .and_then(|r| r.strip_suffix(b":"))
        .ok_or(CodecError::BadTileKey)?;
    parse_ten_digits(digits).ok_or(CodecError::BadTileKey)
}

/// Exactly 10 ASCII digits with a value `<= i32::MAX`.
fn parse_ten_digits(digits: &[u8]) -> Option<i32> {
    if digits.len() != 10 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits
        .iter()
        .fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
    i32::try_from(value).ok()
}

/// What kind of trace store row a key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowType {
    /// `:ts:o:` — a tile's OrderedParamSet.
    Ops,
    /// `NN:ts:t:` — a trace.
    Trace,
    /// `NN:ts:p:` — a trace's options (md5 layout).
    Options,
    /// `NN:ts:d:` — a digest-map row (digest-id layout).
    DigestMap,
    /// `:ts:i:` — the id counter (digest-id layout).
    IdCounter,
    /// `:rk:m:` — rowkit's migration marker and checkpoint (`docs/migration.md` §2.1).
    Migration,
}

impl RowType {
    /// The name used in CLI output (`ops`, `trace`, `options`, `digest_map`, `id_counter`).
    pub fn name(self) -> &'static str {
        match self {
            RowType::Ops => "ops",
            RowType::Trace => "trace",
            RowType::Options => "options",
            RowType::DigestMap => "digest_map",
            RowType::IdCounter => "id_counter",
            RowType::Migration => "migration",
        }
    }
}

/// A decoded trace store row key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedRowKey {
    /// The row type.
    pub row_type: RowType,
    /// The shard of a sharded row (`None` for OPS and counter rows).
    pub shard: Option<u32>,
    /// The tile key (`0` for the global digest-map and counter rows).
    pub tile_key: i32,
    /// The subkey (encoded trace id, digest prefix; empty for OPS and counter rows).
    pub subkey: Vec<u8>,
}

impl DecodedRowKey {
    /// Whether the shard matches `crc32(subkey) mod 32` (`None` for unsharded rows).
    pub fn shard_ok(&self) -> Option<bool> {
        self.shard.map(|s| s == shard_of(&self.subkey))
    }

    /// The tile index, for per-tile rows (`None` for the global digest-map and counter rows).
    pub fn tile_index(&self) -> Option<u32> {
        match self.row_type {
            RowType::DigestMap | RowType::IdCounter | RowType::Migration => None,
            _ => tile_index_of_key(self.tile_key),
        }
    }
}

/// Why a key is not a trace store row key.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RowKeyError {
    /// The key matches neither `^[0-9]{2}:ts:[tpd]:[0-9]{10}:.*$`, `^:ts:[oi]:[0-9]{10}:$` nor
    /// `^:rk:m:0000000000:$`.
    #[error("not a gold row key: {reason} at byte {offset}")]
    NotAGoldRowKey {
        /// Byte offset where the key stops matching.
        offset: usize,
        /// What was expected there.
        reason: &'static str,
    },
}

fn not_gold(offset: usize, reason: &'static str) -> RowKeyError {
    RowKeyError::NotAGoldRowKey { offset, reason }
}

/// Decodes any trace store row key (`spec/tracestore.md` 19, recognition rule).
pub fn decode_row_key(key: &[u8]) -> Result<DecodedRowKey, RowKeyError> {
    let (shard, rest, base) = if key.first() == Some(&b':') {
        (None, &key[1..], 1)
    } else {
        let two = key
            .get(..2)
            .ok_or_else(|| not_gold(0, "two shard digits"))?;
        if !two.iter().all(u8::is_ascii_digit) {
            return Err(not_gold(0, "two shard digits"));
        }
        if key.get(2) != Some(&b':') {
            return Err(not_gold(2, "':' after the shard"));
        }
        let shard = u32::from(two[0] - b'0') * 10 + u32::from(two[1] - b'0');
        (Some(shard), &key[3..], 3)
    };
    let rowkit = shard.is_none() && rest.get(..3) == Some(b"rk:".as_slice());
    if !rowkit && rest.get(..3) != Some(b"ts:".as_slice()) {
        return Err(not_gold(base, "the namespace 'ts:'"));
    }
    let row_type = match (rest.get(3), shard.is_some(), rowkit) {
        (Some(b't'), true, false) => RowType::Trace,
        (Some(b'p'), true, false) => RowType::Options,
        (Some(b'd'), true, false) => RowType::DigestMap,
        (Some(b'o'), false, false) => RowType::Ops,
        (Some(b'i'), false, false) => RowType::IdCounter,
        (Some(b'm'), false, true) => RowType::Migration,
        (_, _, true) => return Err(not_gold(base + 3, "the row type m of the 'rk' namespace")),
        _ => {
            return Err(not_gold(
                base + 3,
                "a row type (t, p, d sharded; o, i unsharded)",
            ));
        }
    };
    if rest.get(4) != Some(&b':') {
        return Err(not_gold(base + 4, "':' after the row type"));
    }
    let digits = rest
        .get(5..15)
        .ok_or_else(|| not_gold(base + 5, "ten tile key digits"))?;
    let tile_key = parse_ten_digits(digits)
        .ok_or_else(|| not_gold(base + 5, "ten tile key digits <= 2147483647"))?;
    if rest.get(15) != Some(&b':') {
        return Err(not_gold(base + 15, "':' after the tile key"));
    }
    let subkey = &rest[16..];
    if shard.is_none() && !subkey.is_empty() {
        return Err(not_gold(base + 16, "the end of an unsharded key"));
    }
    if row_type == RowType::Migration && tile_key != GLOBAL_TILE_KEY {
        return Err(not_gold(
            base + 5,
            "the tile key 0000000000 of the migration row",
        ));
    }
    Ok(DecodedRowKey {
        row_type,
        shard,
        tile_key,
        subkey: subkey.to_vec(),
    })
}

/// The segments of a trace store row key (as [`decode_row_key`] reads it): shard, namespace,
/// row type, tile key and subkey, with the `:` separators.
pub fn row_key_segments(key: &[u8]) -> Result<Vec<KeySegment>, RowKeyError> {
    let d = decode_row_key(key)?;
    let mut s = Segments::new();
    if d.shard.is_some() {
        s.push(
            2,
            "shard",
            "shard: CRC-32 of the subkey mod 32, two digits (spreads a tile's rows)",
        );
    }
    s.push(1, "separator", "':'");
    s.push(
        2,
        "namespace",
        if d.row_type == RowType::Migration {
            "'rk': rowkit's rows beside Gold's (no Gold process reads them)"
        } else {
            "'ts': the trace store's namespace"
        },
    );
    s.push(1, "separator", "':'");
    s.push(
        1,
        "row type",
        "row type: t trace, p options, d digest map, o OPS (a tile's param sets), i id counter, m migration marker (rk)",
    );
    s.push(1, "separator", "':'");
    s.push(
        10,
        "tile key",
        "tile key: 2147483647 − tile index, ten digits, so the newest tile sorts first (0 for d and i rows)",
    );
    s.push(1, "separator", "':'");
    s.push(
        d.subkey.len(),
        "subkey",
        match d.row_type {
            RowType::Trace | RowType::Options => {
                "trace id: the params as ,key=value, indices into the tile's OPS"
            }
            RowType::DigestMap => {
                "the digest's first 3 hex characters (its columns hold the other 29)"
            }
            _ => "none: an unsharded row",
        },
    );
    Ok(s.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_check_value() {
        // The standard CRC-32 check value.
        assert_eq!(crc32_ieee(b"123456789"), 0xCBF4_3926);
    }

    /// The bitwise CRC, an independent reference for every length and alignment.
    fn crc32_bitwise(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                let mask = (crc & 1).wrapping_neg();
                crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
            }
        }
        !crc
    }

    #[test]
    fn crc_equals_bitwise_crc() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7919 % 251) as u8).collect();
        for start in 0..9 {
            for end in start..data.len() {
                let s = &data[start..end];
                assert_eq!(crc32_ieee(s), crc32_bitwise(s), "{start}..{end}");
            }
        }
    }

    #[test]
    fn row_names_equal_go_format() {
        for shard in [0, 7, 31, 99, 100, 12345] {
            for tile in [0, 1, 255, 2_147_483_647, -1, -123, i32::MIN] {
                let padded = if tile < 0 {
                    alloc::format!("-{:09}", i64::from(tile).unsigned_abs())
                } else {
                    alloc::format!("{tile:010}")
                };
                for ty in ['t', 'p', 'd', 'é'] {
                    let want = alloc::format!("{shard:02}:ts:{ty}:{padded}:,0=1,");
                    assert_eq!(sharded_row_name(shard, ty, tile, b",0=1,"), want.as_bytes());
                }
                let want = alloc::format!(":ts:o:{padded}:");
                assert_eq!(ops_row_name(tile), want.as_bytes());
            }
        }
        assert_eq!(id_counter_row_name(), b":ts:i:0000000000:".to_vec());
        for offset in [0, 5, 42, 255, 1000] {
            assert_eq!(
                md5_trace_qualifier(offset),
                alloc::format!("{offset:03}").into_bytes()
            );
            let plain = alloc::format!("{offset}").into_bytes();
            assert_eq!(digest_id_trace_qualifier(offset), plain);
        }
    }

    #[test]
    fn migration_row_round_trips() {
        let key = migration_row_name();
        assert_eq!(key, b":rk:m:0000000000:".to_vec());
        let d = decode_row_key(&key).unwrap();
        assert_eq!(d.row_type, RowType::Migration);
        assert_eq!(d.row_type.name(), "migration");
        assert_eq!((d.shard, d.tile_key, d.tile_index()), (None, 0, None));
        assert!(d.subkey.is_empty());
        for bad in [
            &b":rk:m:0000000001:"[..],
            b":rk:o:0000000000:",
            b":rk:m:0000000000:x",
            b"01:rk:m:0000000000:",
            b":ts:m:0000000000:",
        ] {
            assert!(decode_row_key(bad).is_err(), "{bad:?}");
        }
        let segments = row_key_segments(&key).unwrap();
        assert_eq!(segments.last().map(|s| s.end), Some(key.len()));
    }

    #[test]
    fn negative_tile_key_is_padded_like_go() {
        assert_eq!(ops_row_name(-1), b":ts:o:-000000001:".to_vec());
    }

    #[test]
    fn decode_rejects_garbage() {
        for key in [
            &b""[..],
            b"0",
            b"xx:ts:t:0000000000:",
            b":ts:t:0000000000:",
            b":ts:o:2147483648:",
            b":ts:o:0000000000:x",
        ] {
            assert!(decode_row_key(key).is_err(), "{key:?}");
        }
        let d = decode_row_key(b"21:ts:d:0000000000:9e1").unwrap();
        assert_eq!(d.row_type, RowType::DigestMap);
        assert_eq!(d.shard_ok(), Some(true));
        assert_eq!(d.tile_index(), None);
    }
}
