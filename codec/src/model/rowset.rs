use alloc::vec::Vec;
use core::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::ValidationError;

/// One end of a byte-string range (rows, qualifiers, values).
///
/// For a start, [`KeyBound::Unbounded`] means "from the empty string, inclusive"; for an end it
/// means "to infinity". An empty end key of either kind also means unbounded
/// (`spec/bigtable.md` 9.1); use [`KeyBound::Unbounded`] to say so.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KeyBound {
    /// No bound.
    #[default]
    Unbounded,
    /// Inclusive bound.
    Closed(Vec<u8>),
    /// Exclusive bound.
    Open(Vec<u8>),
}

impl KeyBound {
    /// `true` if `key` is at or after this bound used as a start.
    pub fn admits_from_below(&self, key: &[u8]) -> bool {
        match self {
            KeyBound::Unbounded => true,
            KeyBound::Closed(s) => key >= s.as_slice(),
            KeyBound::Open(s) => key > s.as_slice(),
        }
    }

    /// `true` if `key` is at or before this bound used as an end. An empty end key is unbounded.
    pub fn admits_from_above(&self, key: &[u8]) -> bool {
        match self {
            KeyBound::Unbounded => true,
            KeyBound::Closed(e) if e.is_empty() => true,
            KeyBound::Open(e) if e.is_empty() => true,
            KeyBound::Closed(e) => key <= e.as_slice(),
            KeyBound::Open(e) => key < e.as_slice(),
        }
    }

    /// The bound's key, if any.
    pub fn key(&self) -> Option<&[u8]> {
        match self {
            KeyBound::Unbounded => None,
            KeyBound::Closed(k) | KeyBound::Open(k) => Some(k),
        }
    }

    /// The bound as an end: empty end keys normalised to [`KeyBound::Unbounded`].
    pub fn normalized_end(&self) -> KeyBound {
        match self.key() {
            Some([]) => KeyBound::Unbounded,
            _ => self.clone(),
        }
    }
}

/// Checks that a `(start, end)` pair of bounds is not inverted. Equal bounds are valid (the
/// range may be empty).
pub(crate) fn check_bounds(
    start: &KeyBound,
    end: &KeyBound,
    field: &'static str,
) -> Result<(), ValidationError> {
    match (start.key(), end.normalized_end().key()) {
        (Some(s), Some(e)) if s.cmp(e) == Ordering::Greater => {
            Err(ValidationError::InvertedRange { field })
        }
        _ => Ok(()),
    }
}

/// A contiguous range of row keys (`data.proto` `RowRange`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RowRange {
    /// Start bound; unbounded = table start.
    pub start: KeyBound,
    /// End bound; unbounded = table end.
    pub end: KeyBound,
}

impl RowRange {
    /// The whole table.
    pub fn all() -> RowRange {
        RowRange::default()
    }

    /// `[start, end)`.
    pub fn half_open(start: impl Into<Vec<u8>>, end: impl Into<Vec<u8>>) -> RowRange {
        RowRange {
            start: KeyBound::Closed(start.into()),
            end: KeyBound::Open(end.into()),
        }
    }

    /// Every row whose key starts with `prefix`: `[prefix, successor(prefix))`, unbounded above
    /// when the prefix is empty or all `0xFF` (`spec/bigtable.md` 9.1).
    ///
    /// ```
    /// use rowkit_codec::model::{KeyBound, RowRange};
    /// let r = RowRange::prefix(b"user#");
    /// assert_eq!(r.end, KeyBound::Open(b"user$".to_vec()));
    /// assert_eq!(RowRange::prefix(b"\xff\xff").end, KeyBound::Unbounded);
    /// ```
    pub fn prefix(prefix: &[u8]) -> RowRange {
        let start = if prefix.is_empty() {
            KeyBound::Unbounded
        } else {
            KeyBound::Closed(prefix.to_vec())
        };
        let end = match prefix_successor(prefix) {
            Some(s) => KeyBound::Open(s),
            None => KeyBound::Unbounded,
        };
        RowRange { start, end }
    }

    /// Whether `key` lies in the range.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.start.admits_from_below(key) && self.end.admits_from_above(key)
    }

    /// Whether no key can lie in the range by construction (`[k, k)`, `(k, k]`, `(k, k)`,
    /// `(s, s\0)`, or start after end).
    pub fn is_empty(&self) -> bool {
        let end = self.end.normalized_end();
        let (Some(s), Some(e)) = (self.start.key(), end.key()) else {
            return false;
        };
        match s.cmp(e) {
            Ordering::Greater => true,
            Ordering::Equal => !matches!(
                (&self.start, &end),
                (KeyBound::Closed(_), KeyBound::Closed(_))
            ),
            Ordering::Less => {
                // (s, s\0) with both ends open holds nothing: s\0 is s's immediate successor.
                matches!((&self.start, &end), (KeyBound::Open(_), KeyBound::Open(_)))
                    && e.len() == s.len() + 1
                    && e.starts_with(s)
                    && e.last() == Some(&0)
            }
        }
    }

    /// Checks the range is not inverted (`spec/bigtable.md` 9.1).
    pub fn validate(&self) -> Result<(), ValidationError> {
        check_bounds(&self.start, &self.end, "row_range")
    }
}

/// The smallest byte string greater than every string starting with `prefix`: strip trailing
/// `0xFF` bytes and increment the last remaining byte. `None` when nothing remains (the range is
/// unbounded above).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut out = prefix[..=keep].to_vec();
    out[keep] += 1;
    Some(out)
}

/// A set of rows: explicit keys plus ranges (`data.proto` `RowSet`). Empty (no keys, no
/// ranges) means **the whole table**.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RowSet {
    /// Single row keys; missing rows are skipped, duplicates returned once.
    pub row_keys: Vec<Vec<u8>>,
    /// Row ranges; overlapping ranges are merged.
    pub row_ranges: Vec<RowRange>,
}

impl RowSet {
    /// The whole table.
    pub fn all() -> RowSet {
        RowSet::default()
    }

    /// One row.
    pub fn key(key: impl Into<Vec<u8>>) -> RowSet {
        RowSet {
            row_keys: alloc::vec![key.into()],
            row_ranges: Vec::new(),
        }
    }

    /// One range.
    pub fn range(range: RowRange) -> RowSet {
        RowSet {
            row_keys: Vec::new(),
            row_ranges: alloc::vec![range],
        }
    }

    /// Whether the set means the whole table (no keys and no ranges).
    pub fn is_whole_table(&self) -> bool {
        self.row_keys.is_empty() && self.row_ranges.is_empty()
    }

    /// Whether `key` belongs to the set.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.is_whole_table()
            || self.row_keys.iter().any(|k| k.as_slice() == key)
            || self.row_ranges.iter().any(|r| r.contains(key))
    }

    /// Checks keys are valid and ranges are not inverted.
    pub fn validate(&self) -> Result<(), ValidationError> {
        for key in &self.row_keys {
            super::validate_row_key(key)?;
        }
        self.row_ranges.iter().try_for_each(RowRange::validate)
    }

    /// The set as sorted, disjoint, non-empty ranges covering exactly its rows (single keys
    /// become closed `[k, k]` ranges). The whole table is one unbounded range.
    pub fn normalized_ranges(&self) -> Vec<RowRange> {
        if self.is_whole_table() {
            return alloc::vec![RowRange::all()];
        }
        let mut ranges: Vec<RowRange> = self
            .row_keys
            .iter()
            .map(|k| RowRange {
                start: KeyBound::Closed(k.clone()),
                end: KeyBound::Closed(k.clone()),
            })
            .chain(self.row_ranges.iter().map(|r| RowRange {
                start: r.start.clone(),
                end: r.end.normalized_end(),
            }))
            .filter(|r| !r.is_empty())
            .collect();
        ranges.sort_by(|a, b| compare_starts(&a.start, &b.start));
        let mut out: Vec<RowRange> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match out.last_mut() {
                Some(last) if touches(&last.end, &r.start) => {
                    if compare_ends(&r.end, &last.end) == Ordering::Greater {
                        last.end = r.end;
                    }
                }
                _ => out.push(r),
            }
        }
        out
    }
}

/// Orders starts: unbounded first, then by key, closed before open at the same key.
fn compare_starts(a: &KeyBound, b: &KeyBound) -> Ordering {
    compare_bounds(a, b, Ordering::Less, |b| matches!(b, KeyBound::Open(_)))
}

/// Orders ends: by key, open before closed at the same key, unbounded last.
fn compare_ends(a: &KeyBound, b: &KeyBound) -> Ordering {
    compare_bounds(a, b, Ordering::Greater, |b| {
        matches!(b, KeyBound::Closed(_))
    })
}

/// Orders bounds of one side of ranges: an unbounded one compares as `unbounded` (`Less`:
/// first, `Greater`: last) to any other; the others go by key and, at the same key, the one
/// that `comes_later` after the other.
fn compare_bounds(
    a: &KeyBound,
    b: &KeyBound,
    unbounded: Ordering,
    comes_later: fn(&KeyBound) -> bool,
) -> Ordering {
    match (a, b) {
        (KeyBound::Unbounded, KeyBound::Unbounded) => Ordering::Equal,
        (KeyBound::Unbounded, _) => unbounded,
        (_, KeyBound::Unbounded) => unbounded.reverse(),
        (x, y) => x
            .key()
            .cmp(&y.key())
            .then(comes_later(x).cmp(&comes_later(y))),
    }
}

/// Whether a range ending at `end` overlaps or abuts one starting at `start` (given sorted
/// starts), so the two can be merged without admitting a key neither holds.
fn touches(end: &KeyBound, start: &KeyBound) -> bool {
    match (end, start) {
        (KeyBound::Unbounded, _) | (_, KeyBound::Unbounded) => true,
        (KeyBound::Open(e), KeyBound::Open(s)) => s < e,
        (e, s) => s.key() <= e.key(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn successor_strips_ff() {
        assert_eq!(prefix_successor(b"ab\xff\xff"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b""), None);
        assert_eq!(prefix_successor(b"\xff"), None);
    }

    #[test]
    fn normalized_merges_overlaps_and_keys() {
        let set = RowSet {
            row_keys: vec![b"b".to_vec(), b"z".to_vec(), b"b".to_vec()],
            row_ranges: vec![RowRange::half_open("a", "c"), RowRange::half_open("x", "y")],
        };
        let n = set.normalized_ranges();
        assert_eq!(n.len(), 3);
        assert_eq!(n[0], RowRange::half_open("a", "c"));
        assert!(n[2].contains(b"z") && !n[2].contains(b"za"));
    }

    #[test]
    fn empty_ranges_by_construction() {
        let open = |s: &[u8], e: &[u8]| RowRange {
            start: KeyBound::Open(s.to_vec()),
            end: KeyBound::Open(e.to_vec()),
        };
        assert!(open(b"k", b"k").is_empty());
        assert!(open(b"k", b"k\0").is_empty());
        assert!(!open(b"k", b"k\0\0").is_empty());
        assert!(
            !RowRange {
                start: KeyBound::Closed(b"k".to_vec()),
                end: KeyBound::Closed(b"k".to_vec())
            }
            .is_empty()
        );
        assert!(
            !RowRange {
                start: KeyBound::Closed(b"k".to_vec()),
                end: KeyBound::Closed(Vec::new())
            }
            .is_empty()
        );
    }

    #[test]
    fn open_ranges_sharing_a_bound_are_not_merged() {
        let set = RowSet {
            row_keys: vec![],
            row_ranges: vec![
                RowRange {
                    start: KeyBound::Unbounded,
                    end: KeyBound::Open(b"m".to_vec()),
                },
                RowRange {
                    start: KeyBound::Open(b"m".to_vec()),
                    end: KeyBound::Unbounded,
                },
            ],
        };
        let n = set.normalized_ranges();
        assert_eq!(n.len(), 2);
        assert!(!n.iter().any(|r| r.contains(b"m")));
    }
}
