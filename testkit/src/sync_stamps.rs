//! The object-metadata migration's sync stamp `f:rowkitSync` (`docs/migration.md` §4.2) as the
//! tests check it: its shape is spelled out here from the doc — the row's own `f:hash`, then a
//! kind byte (`c` for a copy, `k` for a confirmation) and an 8-byte big-endian nonce — never
//! read with the codec under test.
//!
//! ```
//! use rowkit_codec::model::{Cell, Row, Timestamp};
//! use rowkit_testkit::sync_stamps::{sync_mark, without_sync_nonce};
//!
//! let cell = |q: &[u8], value: Vec<u8>| Cell {
//!     family: "f".into(),
//!     qualifier: q.to_vec(),
//!     timestamp: Timestamp(0),
//!     value,
//!     labels: Vec::new(),
//! };
//! let stamp = [vec![7; 32], b"c".to_vec(), 5u64.to_be_bytes().to_vec()].concat();
//! let row = Row { key: b"b\0k".to_vec(), cells: vec![cell(b"hash", vec![7; 32]), cell(b"rowkitSync", stamp)] };
//! assert_eq!(sync_mark(&row), Some((b'c', 5)));
//! assert_eq!(without_sync_nonce(row).cells[1].value, vec![7; 32]);
//! ```

use rowkit_codec::model::Row;

/// The newest value of `f:qualifier` on `row`.
fn flag<'a>(row: &'a Row, qualifier: &[u8]) -> Option<&'a [u8]> {
    row.cells
        .iter()
        .find(|c| c.family == "f" && c.qualifier == qualifier)
        .map(|c| c.value.as_slice())
}

/// The kind byte and the nonce of `row`'s stamp when it has §4.2's shape (`None`: no stamp,
/// a stamp of the hash alone, or any other value).
pub fn sync_mark(row: &Row) -> Option<(u8, u64)> {
    let mark = flag(row, b"rowkitSync")?.strip_prefix(flag(row, b"hash")?)?;
    match mark {
        [kind @ (b'c' | b'k'), nonce @ ..] => {
            Some((*kind, u64::from_be_bytes(nonce.try_into().ok()?)))
        }
        _ => None,
    }
}

/// Whether `row` carries a stamp of its own `f:hash`: §4.2's shape, or the hash alone (a stamp
/// written before stamps named their sync).
pub fn stamped_with_its_hash(row: &Row) -> bool {
    sync_mark(row).is_some()
        || (flag(row, b"hash").is_some() && flag(row, b"rowkitSync") == flag(row, b"hash"))
}

/// `row` with a stamp of §4.2's shape cut to its hash: what a row built as `REPLACE(text)` plus
/// `Set(f, rowkitSync, 0, sha256(text))` is compared with, the sync's kind and nonce being
/// checked with [`sync_mark`] where a test means them. A stamp of any other shape is left as
/// it is, so it differs from the expected row.
pub fn without_sync_nonce(mut row: Row) -> Row {
    if sync_mark(&row).is_some() {
        let hash_len = flag(&row, b"hash").map_or(0, <[u8]>::len);
        for cell in &mut row.cells {
            if cell.family == "f" && cell.qualifier == b"rowkitSync" {
                cell.value.truncate(hash_len);
            }
        }
    }
    row
}
