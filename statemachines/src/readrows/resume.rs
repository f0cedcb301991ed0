//! Building the next ReadRows attempt from the original request and what was read so far
//! (`spec/bigtable.md` 15.6 steps 1-5).

use alloc::vec::Vec;

use rowkit_codec::model::{KeyBound, RowRange, RowSet};

use super::{ChunkMerger, MergeError};
use crate::ReadRowsRequest;

/// The request for the next attempt of `original`, given the merger's progress; `Ok(None)`
/// when the read is complete (nothing left to read or the `rows_limit` reached).
///
/// Shorthand for [`resume_request`] with the merger's resume key and row count.
pub fn next_attempt(
    original: &ReadRowsRequest,
    merger: &ChunkMerger,
) -> Result<Option<ReadRowsRequest>, MergeError> {
    resume_request(original, merger.resume_key(), merger.rows_emitted())
}

/// The request for the next attempt of `original`, when every row up to `resume_key` (in
/// scan direction) has been read and `rows_emitted` rows were delivered:
///
/// 1. no resume key: `original` unchanged;
/// 2. the row set trimmed to what lies beyond the key, dropping ranges that became empty;
/// 3. `Ok(None)` (complete) if nothing remains — an empty row set would read the whole table;
/// 4. `rows_limit` reduced by `rows_emitted`; `Ok(None)` if that leaves 0, an error if fewer
///    rows were allowed than delivered;
/// 5. filter, direction, app profile and table unchanged.
///
/// An empty `resume_key` counts as none: no row has an empty key, and an empty end key would
/// mean "unbounded" in a reversed read.
///
/// ```
/// use rowkit_codec::model::{KeyBound, RowRange, RowSet};
/// use rowkit_statemachines::ReadRowsRequest;
/// use rowkit_statemachines::readrows::resume_request;
///
/// let original = ReadRowsRequest { rows_limit: 10, ..ReadRowsRequest::default() };
/// let next = resume_request(&original, Some(b"b"), 2).unwrap().unwrap();
/// assert_eq!(next.rows, RowSet::range(RowRange { start: KeyBound::Open(b"b".to_vec()), end: KeyBound::Unbounded }));
/// assert_eq!(next.rows_limit, 8);
/// ```
pub fn resume_request(
    original: &ReadRowsRequest,
    resume_key: Option<&[u8]>,
    rows_emitted: u64,
) -> Result<Option<ReadRowsRequest>, MergeError> {
    let rows = match resume_key {
        Some(key) if !key.is_empty() => {
            match trim_row_set(&original.rows, key, original.reversed) {
                Some(rows) => rows,
                None => return Ok(None),
            }
        }
        _ => original.rows.clone(),
    };
    let rows_limit = match remaining_limit(original.rows_limit, rows_emitted)? {
        Some(limit) => limit,
        None => return Ok(None),
    };
    // Field by field: `..original.clone()` would copy the original row set only to drop it.
    Ok(Some(ReadRowsRequest {
        table: original.table.clone(),
        app_profile_id: original.app_profile_id.clone(),
        rows,
        filter: original.filter.clone(),
        rows_limit,
        reversed: original.reversed,
    }))
}

/// The `rows_limit` of the next attempt; `None` when the limit is reached.
fn remaining_limit(rows_limit: i64, rows_emitted: u64) -> Result<Option<i64>, MergeError> {
    if rows_limit <= 0 {
        return Ok(Some(rows_limit));
    }
    let remaining = i128::from(rows_limit) - i128::from(rows_emitted);
    match i64::try_from(remaining) {
        Ok(0) => Ok(None),
        Ok(r) if r > 0 => Ok(Some(r)),
        _ => Err(MergeError::RowsLimitExceeded { rows_limit }),
    }
}

/// The part of `rows` beyond `key` in scan direction; `None` if nothing remains.
fn trim_row_set(rows: &RowSet, key: &[u8], reversed: bool) -> Option<RowSet> {
    if rows.is_whole_table() {
        let rest = if reversed {
            RowRange {
                start: KeyBound::Unbounded,
                end: KeyBound::Open(key.to_vec()),
            }
        } else {
            RowRange {
                start: KeyBound::Open(key.to_vec()),
                end: KeyBound::Unbounded,
            }
        };
        return Some(RowSet::range(rest));
    }
    let row_keys: Vec<Vec<u8>> = rows
        .row_keys
        .iter()
        .filter(|k| {
            if reversed {
                k.as_slice() < key
            } else {
                k.as_slice() > key
            }
        })
        .cloned()
        .collect();
    let row_ranges: Vec<RowRange> = rows
        .row_ranges
        .iter()
        .filter_map(|r| {
            if reversed {
                trim_range_reversed(r, key)
            } else {
                trim_range_forward(r, key)
            }
        })
        .filter(|r| !r.is_empty())
        .collect();
    let rest = RowSet {
        row_keys,
        row_ranges,
    };
    (!rest.is_whole_table()).then_some(rest)
}

/// Forward: drop a range ending at or before `key`; otherwise start it just after `key` if it
/// started at or before it. Empty end keys become unbounded (never send `end_key_closed: ""`).
fn trim_range_forward(range: &RowRange, key: &[u8]) -> Option<RowRange> {
    let end = range.end.normalized_end();
    if end.key().is_some_and(|e| e <= key) {
        return None;
    }
    let start = match range.start.key() {
        Some(s) if s > key => range.start.clone(),
        _ => KeyBound::Open(key.to_vec()),
    };
    Some(RowRange { start, end })
}

/// Reversed: drop a range starting at or after `key`; otherwise end it just before `key` if it
/// ended at or after it (or was unbounded).
fn trim_range_reversed(range: &RowRange, key: &[u8]) -> Option<RowRange> {
    if range.start.key().is_some_and(|s| s >= key) {
        return None;
    }
    let end = match range.end.normalized_end() {
        KeyBound::Unbounded => KeyBound::Open(key.to_vec()),
        bound if bound.key().is_some_and(|e| e >= key) => KeyBound::Open(key.to_vec()),
        bound => bound,
    };
    Some(RowRange {
        start: range.start.clone(),
        end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn closed(k: &[u8]) -> KeyBound {
        KeyBound::Closed(k.to_vec())
    }
    fn open(k: &[u8]) -> KeyBound {
        KeyBound::Open(k.to_vec())
    }
    fn range(start: KeyBound, end: KeyBound) -> RowRange {
        RowRange { start, end }
    }
    fn request(rows: RowSet, reversed: bool, rows_limit: i64) -> ReadRowsRequest {
        ReadRowsRequest {
            table: "t".into(),
            app_profile_id: "profile".into(),
            rows,
            filter: Some(rowkit_codec::model::RowFilter::PassAll),
            rows_limit,
            reversed,
        }
    }
    fn ranges(rs: Vec<RowRange>) -> RowSet {
        RowSet {
            row_keys: vec![],
            row_ranges: rs,
        }
    }
    fn keys(ks: &[&[u8]]) -> RowSet {
        RowSet {
            row_keys: ks.iter().map(|k| k.to_vec()).collect(),
            row_ranges: vec![],
        }
    }
    /// The trimmed row set, or `None` when the read is complete.
    fn trimmed(rows: RowSet, reversed: bool, key: &[u8]) -> Option<RowSet> {
        resume_request(&request(rows, reversed, 0), Some(key), 1)
            .unwrap()
            .map(|r| r.rows)
    }

    #[test]
    fn no_resume_key_resends_the_original() {
        let original = request(keys(&[b"a"]), false, 5);
        assert_eq!(
            resume_request(&original, None, 0).unwrap(),
            Some(original.clone())
        );
        assert_eq!(
            resume_request(&original, Some(b""), 0).unwrap(),
            Some(original)
        );
    }

    #[test]
    fn keeps_filter_direction_profile_and_table() {
        let original = request(RowSet::all(), true, 0);
        let next = resume_request(&original, Some(b"m"), 3).unwrap().unwrap();
        assert_eq!(next.table, "t");
        assert_eq!(next.app_profile_id, "profile");
        assert_eq!(next.filter, original.filter);
        assert!(next.reversed);
        assert_eq!(next.rows_limit, 0);
    }

    #[test]
    fn whole_table_forward() {
        assert_eq!(
            trimmed(RowSet::all(), false, b"k"),
            Some(RowSet::range(range(open(b"k"), KeyBound::Unbounded)))
        );
    }

    #[test]
    fn whole_table_reversed() {
        assert_eq!(
            trimmed(RowSet::all(), true, b"k"),
            Some(RowSet::range(range(KeyBound::Unbounded, open(b"k"))))
        );
    }

    #[test]
    fn forward_row_keys_after_k_only() {
        assert_eq!(
            trimmed(keys(&[b"a", b"k", b"z", b"kk"]), false, b"k"),
            Some(keys(&[b"z", b"kk"]))
        );
        assert_eq!(trimmed(keys(&[b"a", b"k"]), false, b"k"), None);
    }

    #[test]
    fn reversed_row_keys_before_k_only() {
        assert_eq!(
            trimmed(keys(&[b"a", b"k", b"z", b"j"]), true, b"k"),
            Some(keys(&[b"a", b"j"]))
        );
        assert_eq!(trimmed(keys(&[b"k", b"z"]), true, b"k"), None);
    }

    #[test]
    fn forward_drops_ranges_ending_at_or_before_k() {
        let rs = ranges(vec![
            range(closed(b"a"), closed(b"k")), // closed end == k: done
            range(closed(b"a"), open(b"k")),   // open end == k: done
            range(closed(b"a"), closed(b"c")), // before k
            range(closed(b"a"), open(b"c")),
        ]);
        assert_eq!(trimmed(rs, false, b"k"), None);
    }

    #[test]
    fn forward_moves_starts_at_or_before_k() {
        let rs = ranges(vec![
            range(closed(b"a"), closed(b"m")),
            range(open(b"a"), open(b"m")),
            range(KeyBound::Unbounded, KeyBound::Unbounded),
            range(closed(b"k"), open(b"m")),
            range(open(b"k"), open(b"m")),
        ]);
        let expected = ranges(vec![
            range(open(b"k"), closed(b"m")),
            range(open(b"k"), open(b"m")),
            range(open(b"k"), KeyBound::Unbounded),
            range(open(b"k"), open(b"m")),
            range(open(b"k"), open(b"m")),
        ]);
        assert_eq!(trimmed(rs, false, b"k"), Some(expected));
    }

    #[test]
    fn forward_keeps_ranges_after_k() {
        let rs = ranges(vec![
            range(closed(b"m"), open(b"p")),
            range(open(b"kk"), closed(b"p")),
        ]);
        assert_eq!(trimmed(rs.clone(), false, b"k"), Some(rs));
    }

    #[test]
    fn forward_end_just_after_k() {
        // [a, k] ended at k: gone. [a, k\0) keeps only k\0's predecessor k: empty, gone.
        // (a, k\0] keeps k\0.
        let rs = ranges(vec![
            range(closed(b"a"), open(b"k\0")),
            range(open(b"a"), closed(b"k\0")),
        ]);
        assert_eq!(
            trimmed(rs, false, b"k"),
            Some(ranges(vec![range(open(b"k"), closed(b"k\0"))]))
        );
    }

    #[test]
    fn empty_end_key_means_unbounded() {
        let rs = ranges(vec![range(closed(b"a"), closed(b""))]);
        assert_eq!(
            trimmed(rs.clone(), false, b"k"),
            Some(ranges(vec![range(open(b"k"), KeyBound::Unbounded)]))
        );
        assert_eq!(
            trimmed(rs, true, b"k"),
            Some(ranges(vec![range(closed(b"a"), open(b"k"))]))
        );
    }

    #[test]
    fn reversed_drops_ranges_starting_at_or_after_k() {
        let rs = ranges(vec![
            range(closed(b"k"), closed(b"z")),
            range(open(b"k"), KeyBound::Unbounded),
            range(closed(b"m"), open(b"z")),
        ]);
        assert_eq!(trimmed(rs, true, b"k"), None);
    }

    #[test]
    fn reversed_moves_ends_at_or_after_k() {
        let rs = ranges(vec![
            range(closed(b"a"), closed(b"k")),
            range(closed(b"a"), open(b"k")),
            range(open(b"a"), closed(b"z")),
            range(KeyBound::Unbounded, KeyBound::Unbounded),
            range(closed(b"a"), closed(b"c")),
            range(closed(b"a"), open(b"c")),
        ]);
        let expected = ranges(vec![
            range(closed(b"a"), open(b"k")),
            range(closed(b"a"), open(b"k")),
            range(open(b"a"), open(b"k")),
            range(KeyBound::Unbounded, open(b"k")),
            range(closed(b"a"), closed(b"c")),
            range(closed(b"a"), open(b"c")),
        ]);
        assert_eq!(trimmed(rs, true, b"k"), Some(expected));
    }

    #[test]
    fn drops_ranges_empty_by_construction() {
        // Forward from k: [k, k] is done; (j, k] is done; (k-adjacent) (k, k\0) holds nothing.
        let rs = ranges(vec![
            range(closed(b"k"), closed(b"k")),
            range(open(b"j"), closed(b"k")),
            range(closed(b"a"), open(b"k\0")),
        ]);
        assert_eq!(trimmed(rs, false, b"k"), None);
        // Reversed from k: [a, a] stays, [k, k] is done, (j, k) stays as is.
        let rs = ranges(vec![
            range(closed(b"a"), closed(b"a")),
            range(closed(b"k"), closed(b"k")),
            range(open(b"j"), open(b"k")),
        ]);
        assert_eq!(
            trimmed(rs, true, b"k"),
            Some(ranges(vec![
                range(closed(b"a"), closed(b"a")),
                range(open(b"j"), open(b"k")),
            ]))
        );
        // An originally empty range is dropped too.
        let rs = ranges(vec![range(closed(b"x"), open(b"x"))]);
        assert_eq!(trimmed(rs, false, b"k"), None);
    }

    #[test]
    fn keys_and_ranges_together() {
        let rs = RowSet {
            row_keys: vec![b"b".to_vec(), b"x".to_vec()],
            row_ranges: vec![
                range(closed(b"a"), open(b"c")),
                range(closed(b"m"), open(b"p")),
            ],
        };
        assert_eq!(
            trimmed(rs.clone(), false, b"n"),
            Some(RowSet {
                row_keys: vec![b"x".to_vec()],
                row_ranges: vec![range(open(b"n"), open(b"p"))],
            })
        );
        assert_eq!(
            trimmed(rs, true, b"n"),
            Some(RowSet {
                row_keys: vec![b"b".to_vec()],
                row_ranges: vec![
                    range(closed(b"a"), open(b"c")),
                    range(closed(b"m"), open(b"n"))
                ],
            })
        );
    }

    #[test]
    fn rows_limit_is_reduced() {
        let original = request(RowSet::all(), false, 10);
        let next = resume_request(&original, Some(b"b"), 4).unwrap().unwrap();
        assert_eq!(next.rows_limit, 6);
    }

    #[test]
    fn rows_limit_reached_is_complete() {
        let original = request(RowSet::all(), false, 4);
        assert_eq!(resume_request(&original, Some(b"b"), 4).unwrap(), None);
    }

    #[test]
    fn rows_limit_overrun_is_an_error() {
        let original = request(RowSet::all(), false, 4);
        assert_eq!(
            resume_request(&original, Some(b"b"), 5),
            Err(MergeError::RowsLimitExceeded { rows_limit: 4 })
        );
        assert!(resume_request(&original, Some(b"b"), u64::MAX).is_err());
    }

    #[test]
    fn unlimited_stays_unlimited() {
        let original = request(RowSet::all(), false, 0);
        let next = resume_request(&original, Some(b"b"), 1_000)
            .unwrap()
            .unwrap();
        assert_eq!(next.rows_limit, 0);
    }

    #[test]
    fn nothing_left_beats_rows_limit() {
        let original = request(keys(&[b"a"]), false, 10);
        assert_eq!(resume_request(&original, Some(b"a"), 1).unwrap(), None);
    }

    #[test]
    fn from_merger_state() {
        let mut merger = ChunkMerger::new(false, 3);
        merger
            .push_response(crate::ReadRowsResponse {
                chunks: vec![],
                last_scanned_row_key: b"q".to_vec(),
            })
            .unwrap();
        let next = next_attempt(&request(RowSet::all(), false, 3), &merger)
            .unwrap()
            .unwrap();
        assert_eq!(
            next.rows,
            RowSet::range(range(open(b"q"), KeyBound::Unbounded))
        );
        assert_eq!(next.rows_limit, 3);
    }
}
