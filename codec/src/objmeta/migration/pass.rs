//! The pages of a migration pass (`docs/migration.md` §4.4), pure: which rows of a layout hold
//! the objects of an interval of keys, and by which key rows of both layouts are merged.
//!
//! A pass walks a bucket's objects in the order of their **pair key**: the key without the
//! v1 prefix, i.e. the object key, or object key ‖ `\0` ‖ version id — the same text for
//! `S(a)` and `T(a)`. The two v1 scans (masters, versions) are merged by it as
//! `DelimiterVersions` merges them (`objmeta.md` §10.1), but comparing **bytes** (UTF-8, the
//! rows' own order) rather than UTF-16 units: a merge needs the order both inputs arrive in,
//! and the two orders differ only for keys mixing U+E000–U+FFFF with supplementary
//! characters. The checkpoint's cursor is a pair key, so it names the same place in both
//! layouts.
//!
//! ```
//! use rowkit_codec::model::KeyBound;
//! use rowkit_codec::objmeta::keys::VFormat;
//! use rowkit_codec::objmeta::migration::pass::{object_row_ranges, pair_key};
//!
//! assert_eq!(pair_key(b"b\x00\x7fVk\x00v1", "b", VFormat::V1), Some("k\0v1".to_string()));
//! assert_eq!(pair_key(b"b\x00\x7fMk", "b", VFormat::V0), None); // a v1 row
//! // v1 objects after "k", up to "m": masters and versions, two ranges.
//! let ranges = object_row_ranges("b", VFormat::V1, Some("k"), Some("m"));
//! assert_eq!(ranges[0].start, KeyBound::Open(b"b\x00\x7fMk".to_vec()));
//! assert_eq!(ranges[1].end, KeyBound::Closed(b"b\x00\x7fVm".to_vec()));
//! ```

use alloc::string::String;
use alloc::vec::Vec;

use crate::model::{KeyBound, RowRange, prefix_successor};
use crate::objmeta::keys::{
    KeyKind, MASTER_PREFIX, VERSION_PREFIX, VFormat, collection_end, collection_start,
    decode_object_key, master_key, row_key, version_key,
};

/// How many `from` rows a page reads when the caller gives no other number (§4.4).
pub const DEFAULT_PAGE_ROWS: u32 = 1000;
/// Most syncs of a page running at once (§4.4 step 3).
pub const MAX_OUTSTANDING_SYNCS: usize = 100;

/// The pair key of the row `row` of collection `collection` read as a row of layout `layout`,
/// or `None` when it is no object row of that layout: v0 keeps the key as it is (a key
/// starting with `\x7fR` included: §4.1 makes it a `key_collision` finding, not a row to skip;
/// replay keys are never written, `objmeta.md` §4.1), and refuses keys starting with `\x7fM` or
/// `\x7fV` (the v1 rows sharing the collection); v1 takes masters and versions without their
/// prefix and refuses anything else (replay keys, v0 rows). A row key that is not UTF-8, or of
/// another collection, is `None` too.
pub fn pair_key(row: &[u8], collection: &str, layout: VFormat) -> Option<String> {
    let key =
        core::str::from_utf8(row.strip_prefix(collection_start(collection).as_slice())?).ok()?;
    let parts = decode_object_key(key);
    match (layout, parts.format, parts.kind) {
        (VFormat::V0, VFormat::V0, _) | (VFormat::V0, VFormat::V1, KeyKind::Replay) => {
            Some(key.into())
        }
        (VFormat::V1, VFormat::V1, KeyKind::Master) => {
            Some(master_key(VFormat::V0, parts.object_key))
        }
        (VFormat::V1, VFormat::V1, KeyKind::Version) => Some(match parts.version_id {
            Some(version_id) => version_key(VFormat::V0, parts.object_key, version_id),
            None => master_key(VFormat::V0, parts.object_key),
        }),
        _ => None,
    }
}

/// The row ranges of `collection` holding the object rows of layout `layout` whose pair key
/// ([`pair_key`]) lies in `(after, upto]` (`None`: unbounded on that side), in key order,
/// empty ones left out. v1: the masters `[C‖00‖\x7fM, C‖00‖\x7fN)` and the versions
/// `[C‖00‖\x7fV, C‖00‖\x7fW)`, each cut to the interval. v0: the collection `[C‖00, C‖01)`
/// minus those two v1 ranges (up to three ranges), cut to the interval.
pub fn object_row_ranges(
    collection: &str,
    layout: VFormat,
    after: Option<&str>,
    upto: Option<&str>,
) -> Vec<RowRange> {
    let master_start = row_key(collection, MASTER_PREFIX);
    let version_start = row_key(collection, VERSION_PREFIX);
    // `C‖00‖\x7fN` and `C‖00‖\x7fW`: the prefixes end in 0x4d / 0x56, so a successor exists.
    let master_end = prefix_successor(&master_start).unwrap_or_else(|| collection_end(collection));
    let version_end =
        prefix_successor(&version_start).unwrap_or_else(|| collection_end(collection));
    let mut ranges = Vec::new();
    match layout {
        VFormat::V1 => {
            for (prefix, start, end) in [
                (MASTER_PREFIX, master_start, master_end),
                (VERSION_PREFIX, version_start, version_end),
            ] {
                let bound = |key: &str| {
                    let mut text = String::with_capacity(prefix.len() + key.len());
                    text.push_str(prefix);
                    text.push_str(key);
                    row_key(collection, &text)
                };
                let low = match after {
                    Some(key) => KeyBound::Open(bound(key)),
                    None => KeyBound::Closed(start),
                };
                let high = match upto {
                    Some(key) => KeyBound::Closed(bound(key)),
                    None => KeyBound::Open(end),
                };
                push_if_not_empty(&mut ranges, low, high);
            }
        }
        VFormat::V0 => {
            let low = after.map(|key| KeyBound::Open(row_key(collection, key)));
            let high = upto.map(|key| KeyBound::Closed(row_key(collection, key)));
            for (start, end) in [
                (
                    collection_start(collection),
                    row_key(collection, MASTER_PREFIX),
                ),
                (master_end, version_start),
                (version_end, collection_end(collection)),
            ] {
                let start = later_start(KeyBound::Closed(start), low.clone());
                let end = earlier_end(KeyBound::Open(end), high.clone());
                push_if_not_empty(&mut ranges, start, end);
            }
        }
    }
    ranges
}

/// The parts of `range` (a range of `collection`'s rows) that hold object rows of layout
/// `layout`: `range` cut to each of [`object_row_ranges`] over all keys, in key order, empty
/// ones left out (none at all when `range` holds no such row). An aware listing of a bucket
/// with a marker reads these, so that it never shows the other layout's rows
/// (`docs/migration.md` §12.63).
pub fn object_rows_within(collection: &str, layout: VFormat, range: &RowRange) -> Vec<RowRange> {
    let mut ranges = Vec::new();
    for r in object_row_ranges(collection, layout, None, None) {
        let start = later_start(r.start, Some(range.start.clone()));
        let end = earlier_end(r.end, Some(range.end.clone()));
        push_if_not_empty(&mut ranges, start, end);
    }
    ranges
}

/// The later of two start bounds (at equal keys the open one; an unbounded one is earliest).
fn later_start(a: KeyBound, b: Option<KeyBound>) -> KeyBound {
    let Some(b) = b else { return a };
    match (a.key(), b.key()) {
        (Some(x), Some(y)) if x > y => a,
        (Some(x), Some(y)) if x == y && matches!(a, KeyBound::Open(_)) => a,
        (_, None) => a,
        _ => b,
    }
}

/// The earlier of two end bounds (at equal keys the open one; an unbounded one is latest).
fn earlier_end(a: KeyBound, b: Option<KeyBound>) -> KeyBound {
    let Some(b) = b else { return a };
    match (a.key(), b.key()) {
        (Some(x), Some(y)) if x < y => a,
        (Some(x), Some(y)) if x == y && matches!(a, KeyBound::Open(_)) => a,
        (_, None) => a,
        _ => b,
    }
}

/// Adds `[start, end]` unless it holds no key.
fn push_if_not_empty(ranges: &mut Vec<RowRange>, start: KeyBound, end: KeyBound) {
    let range = RowRange { start, end };
    if !range.is_empty() {
        ranges.push(range);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn open(k: &[u8]) -> KeyBound {
        KeyBound::Open(k.to_vec())
    }
    fn closed(k: &[u8]) -> KeyBound {
        KeyBound::Closed(k.to_vec())
    }
    fn range(start: KeyBound, end: KeyBound) -> RowRange {
        RowRange { start, end }
    }

    #[test]
    fn pair_keys_of_both_layouts() {
        let v0 = |k: &[u8]| pair_key(k, "b", VFormat::V0);
        let v1 = |k: &[u8]| pair_key(k, "b", VFormat::V1);
        assert_eq!(v0(b"b\x00k"), Some("k".into()));
        assert_eq!(v0(b"b\x00k\x00v"), Some("k\0v".into()));
        assert_eq!(v0(b"b\x00"), Some("".into()));
        assert_eq!(v0(b"b\x00\x7fRk"), Some("\x7fRk".into()));
        assert_eq!(v0(b"b\x00\x7fMk"), None);
        assert_eq!(v0(b"b\x00\x7fVk\x00v"), None);
        assert_eq!(v0(b"c\x00k"), None);
        assert_eq!(v0(b"b\x00\xff"), None);
        assert_eq!(v1(b"b\x00\x7fMk"), Some("k".into()));
        assert_eq!(v1(b"b\x00\x7fM"), Some("".into()));
        assert_eq!(v1(b"b\x00\x7fVk\x00v"), Some("k\0v".into()));
        assert_eq!(v1(b"b\x00\x7fRk"), None);
        assert_eq!(v1(b"b\x00k"), None);
    }

    #[test]
    fn v1_ranges_are_masters_and_versions_cut_to_the_interval() {
        assert_eq!(
            object_row_ranges("b", VFormat::V1, None, None),
            vec![
                range(closed(b"b\x00\x7fM"), open(b"b\x00\x7fN")),
                range(closed(b"b\x00\x7fV"), open(b"b\x00\x7fW")),
            ]
        );
        assert_eq!(
            object_row_ranges("b", VFormat::V1, Some(""), Some("k\0v")),
            vec![
                range(open(b"b\x00\x7fM"), closed(b"b\x00\x7fMk\x00v")),
                range(open(b"b\x00\x7fV"), closed(b"b\x00\x7fVk\x00v")),
            ]
        );
    }

    #[test]
    fn v0_ranges_leave_out_the_v1_rows() {
        assert_eq!(
            object_row_ranges("b", VFormat::V0, None, None),
            vec![
                range(closed(b"b\x00"), open(b"b\x00\x7fM")),
                range(closed(b"b\x00\x7fN"), open(b"b\x00\x7fV")),
                range(closed(b"b\x00\x7fW"), open(b"b\x01")),
            ]
        );
        // An interval inside the first piece.
        assert_eq!(
            object_row_ranges("b", VFormat::V0, Some("a"), Some("k")),
            vec![range(open(b"b\x00a"), closed(b"b\x00k"))]
        );
        // The empty key is after nothing, and not after itself.
        assert_eq!(
            object_row_ranges("b", VFormat::V0, None, Some(""))[0],
            range(closed(b"b\x00"), closed(b"b\x00"))
        );
        assert_eq!(
            object_row_ranges("b", VFormat::V0, Some(""), Some(""))[..],
            []
        );
        // Across the v1 ranges: `\x7fRk` sits between them and is kept.
        assert_eq!(
            object_row_ranges("b", VFormat::V0, Some("z"), Some("\x7fRk")),
            vec![
                range(open(b"b\x00z"), open(b"b\x00\x7fM")),
                range(closed(b"b\x00\x7fN"), closed(b"b\x00\x7fRk")),
            ]
        );
        // After the last v1 range.
        assert_eq!(
            object_row_ranges("b", VFormat::V0, Some("\x7fZ"), None),
            vec![range(open(b"b\x00\x7fZ"), open(b"b\x01"))]
        );
    }

    #[test]
    fn a_listing_range_is_cut_to_the_object_rows_of_its_layout() {
        let whole = range(closed(b"b\x00"), open(b"b\x01"));
        assert_eq!(
            object_rows_within("b", VFormat::V0, &whole),
            object_row_ranges("b", VFormat::V0, None, None)
        );
        // A prefix listing across the v1 masters keeps what is around them.
        let across = range(closed(b"b\x00\x7f"), open(b"b\x00\x80"));
        assert_eq!(
            object_rows_within("b", VFormat::V0, &across),
            vec![
                range(closed(b"b\x00\x7f"), open(b"b\x00\x7fM")),
                range(closed(b"b\x00\x7fN"), open(b"b\x00\x7fV")),
                range(closed(b"b\x00\x7fW"), open(b"b\x00\x80")),
            ]
        );
        // A range inside the v1 masters holds no v0 row, and is itself for v1.
        let masters = range(open(b"b\x00\x7fMa"), closed(b"b\x00\x7fMk"));
        assert_eq!(object_rows_within("b", VFormat::V0, &masters), vec![]);
        assert_eq!(
            object_rows_within("b", VFormat::V1, &masters),
            vec![masters.clone()]
        );
        // Unbounded sides take the layout's bounds.
        let all = range(KeyBound::Unbounded, KeyBound::Unbounded);
        assert_eq!(
            object_rows_within("b", VFormat::V1, &all),
            object_row_ranges("b", VFormat::V1, None, None)
        );
    }
}
