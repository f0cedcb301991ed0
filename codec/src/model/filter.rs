use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use serde::{Deserialize, Serialize};

use super::rowset::check_bounds;
use super::{KeyBound, TimestampRange, ValidationError, limits, regex, validate_family_name};

/// A Bigtable `RowFilter` (`spec/bigtable.md` 10). "No filter" is `Option::<RowFilter>::None`
/// wherever a filter is optional, and returns every cell.
///
/// The boolean leaves of the proto (`pass_all_filter`, `block_all_filter`, `sink`,
/// `strip_value_transformer`) are only valid when `true`, so they are unit variants here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum RowFilter {
    /// Each filter sees the previous one's output (at least two members).
    Chain(Vec<RowFilter>),
    /// Every filter sees the input; outputs are pooled in canonical order, duplicates kept
    /// (at least two members).
    Interleave(Vec<RowFilter>),
    /// `predicate` decides, on the whole input row, which branch filters it; a missing
    /// predicate passes everything, a missing branch yields nothing.
    Condition {
        /// The test; `None` passes every cell.
        predicate: Option<Box<RowFilter>>,
        /// Applied when the predicate yields at least one cell.
        true_filter: Option<Box<RowFilter>>,
        /// Applied otherwise.
        false_filter: Option<Box<RowFilter>>,
    },
    /// Sends its input straight to the read's result; yields nothing to its parent.
    Sink,
    /// Passes every cell.
    PassAll,
    /// Passes no cell.
    BlockAll,
    /// The whole row if its key fully matches the RE2 pattern.
    RowKeyRegex(Vec<u8>),
    /// The whole row with probability `p`, `0 < p < 1`.
    RowSample(f64),
    /// Cells whose family fully matches the RE2 pattern (no `:`).
    FamilyNameRegex(String),
    /// Cells whose qualifier fully matches the RE2 pattern.
    ColumnQualifierRegex(Vec<u8>),
    /// Cells of one family with a qualifier in range.
    ColumnRange {
        /// Exact family name.
        family: String,
        /// Start bound; unbounded = empty string inclusive.
        start: KeyBound,
        /// End bound; unbounded = infinity.
        end: KeyBound,
    },
    /// Cells with `start <= ts` and (`end == 0` or `ts < end`).
    TimestampRange(TimestampRange),
    /// Cells whose value fully matches the RE2 pattern.
    ValueRegex(Vec<u8>),
    /// Cells whose value lies in range.
    ValueRange {
        /// Start bound; unbounded = empty string inclusive.
        start: KeyBound,
        /// End bound; unbounded = infinity.
        end: KeyBound,
    },
    /// Drops the first N cells of the row.
    CellsPerRowOffset(i32),
    /// Keeps the first N cells of the row.
    CellsPerRowLimit(i32),
    /// Keeps the newest N cells of each column.
    CellsPerColumnLimit(i32),
    /// Empties every value, keeping timestamps and labels.
    StripValue,
    /// Replaces every cell's labels with this one.
    ApplyLabel(String),
}

impl RowFilter {
    /// A chain, collapsed as builders must (`spec/bigtable.md` 10.2): no member -> `None`
    /// (pass all), one member -> that member.
    pub fn chain(mut filters: Vec<RowFilter>) -> Option<RowFilter> {
        match filters.len() {
            0 => None,
            1 => filters.pop(),
            _ => Some(RowFilter::Chain(filters)),
        }
    }

    /// The proto field name of this filter kind, used in error messages.
    pub fn field_name(&self) -> &'static str {
        match self {
            RowFilter::Chain(_) => "chain",
            RowFilter::Interleave(_) => "interleave",
            RowFilter::Condition { .. } => "condition",
            RowFilter::Sink => "sink",
            RowFilter::PassAll => "pass_all_filter",
            RowFilter::BlockAll => "block_all_filter",
            RowFilter::RowKeyRegex(_) => "row_key_regex_filter",
            RowFilter::RowSample(_) => "row_sample_filter",
            RowFilter::FamilyNameRegex(_) => "family_name_regex_filter",
            RowFilter::ColumnQualifierRegex(_) => "column_qualifier_regex_filter",
            RowFilter::ColumnRange { .. } => "column_range_filter",
            RowFilter::TimestampRange(_) => "timestamp_range_filter",
            RowFilter::ValueRegex(_) => "value_regex_filter",
            RowFilter::ValueRange { .. } => "value_range_filter",
            RowFilter::CellsPerRowOffset(_) => "cells_per_row_offset_filter",
            RowFilter::CellsPerRowLimit(_) => "cells_per_row_limit_filter",
            RowFilter::CellsPerColumnLimit(_) => "cells_per_column_limit_filter",
            RowFilter::StripValue => "strip_value_transformer",
            RowFilter::ApplyLabel(_) => "apply_label_transformer",
        }
    }

    /// The filters this one is made of: a chain's or interleave's members, a condition's
    /// predicate and branches (none for the other filters).
    pub fn children(&self) -> impl Iterator<Item = &RowFilter> {
        let (members, condition): (&[RowFilter], [Option<&RowFilter>; 3]) = match self {
            RowFilter::Chain(fs) | RowFilter::Interleave(fs) => (fs, [None; 3]),
            RowFilter::Condition {
                predicate,
                true_filter,
                false_filter,
            } => (
                &[],
                [predicate, true_filter, false_filter].map(|f| f.as_deref()),
            ),
            _ => (&[], [None; 3]),
        };
        members.iter().chain(condition.into_iter().flatten())
    }

    fn contains(&self, pred: &dyn Fn(&RowFilter) -> bool) -> bool {
        pred(self) || self.children().any(|f| f.contains(pred))
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> ValidationError {
    ValidationError::InvalidFilter {
        field,
        reason: reason.into(),
    }
}

/// An RE2 pattern that fully matches exactly `bytes`: every byte outside `[0-9A-Za-z]` as
/// `\xHH`, so no byte of the input is a regex operator (for the `*Regex` filters that should
/// compare, not search).
pub fn literal_regex(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() {
            out.push(b);
        } else {
            out.extend_from_slice(format!("\\x{b:02x}").as_bytes());
        }
    }
    out
}

/// Checks a whole filter tree before any row is read (`spec/bigtable.md` 4 and 10): every
/// node's own rules, the chain label rule, no sink inside a condition, every regex translatable,
/// encoded size <= 20 480 bytes and depth <= 20.
pub fn validate_filter(filter: &RowFilter) -> Result<(), ValidationError> {
    let depth = filter_depth(filter);
    if depth > limits::MAX_FILTER_DEPTH {
        return Err(ValidationError::FilterTooDeep { depth });
    }
    let size = filter_encoded_len(filter);
    if size > limits::MAX_FILTER_BYTES {
        return Err(ValidationError::FilterTooLarge { size });
    }
    validate_node(filter)
}

fn validate_node(filter: &RowFilter) -> Result<(), ValidationError> {
    let is_label = |f: &RowFilter| matches!(f, RowFilter::ApplyLabel(_));
    match filter {
        RowFilter::Chain(fs) => {
            if fs.len() < 2 {
                return Err(invalid(
                    "chain",
                    "Chain must contain at least two RowFilters",
                ));
            }
            if fs.iter().filter(|f| f.contains(&is_label)).count() > 1 {
                return Err(invalid(
                    "chain",
                    "at most one sub-filter of a chain may contain apply_label_transformer",
                ));
            }
            fs.iter().try_for_each(validate_node)
        }
        RowFilter::Interleave(fs) => {
            if fs.len() < 2 {
                return Err(invalid(
                    "interleave",
                    "Interleave must contain at least two RowFilters",
                ));
            }
            fs.iter().try_for_each(validate_node)
        }
        RowFilter::Condition {
            predicate,
            true_filter,
            false_filter,
        } => {
            let parts = [predicate, true_filter, false_filter];
            if parts
                .iter()
                .copied()
                .flatten()
                .any(|f| f.contains(&|f| matches!(f, RowFilter::Sink)))
            {
                return Err(invalid(
                    "condition",
                    "sink is not allowed inside a condition",
                ));
            }
            parts
                .into_iter()
                .flatten()
                .try_for_each(|f| validate_node(f))
        }
        RowFilter::Sink | RowFilter::PassAll | RowFilter::BlockAll | RowFilter::StripValue => {
            Ok(())
        }
        RowFilter::RowKeyRegex(p) => {
            if p.is_empty() {
                return Err(invalid("row_key_regex_filter", "pattern must not be empty"));
            }
            regex::translate(p, "row_key_regex_filter").map(drop)
        }
        RowFilter::ColumnQualifierRegex(p) => {
            regex::translate(p, "column_qualifier_regex_filter").map(drop)
        }
        RowFilter::ValueRegex(p) => regex::translate(p, "value_regex_filter").map(drop),
        RowFilter::FamilyNameRegex(p) => {
            if p.contains(':') {
                return Err(invalid(
                    "family_name_regex_filter",
                    "pattern must not contain ':'",
                ));
            }
            regex::translate(p.as_bytes(), "family_name_regex_filter").map(drop)
        }
        RowFilter::RowSample(p) => {
            if *p > 0.0 && *p < 1.0 {
                Ok(())
            } else {
                Err(invalid(
                    "row_sample_filter",
                    format!("probability {p} is not in (0, 1)"),
                ))
            }
        }
        RowFilter::ColumnRange { family, start, end } => {
            validate_family_name(family)
                .map_err(|_| invalid("column_range_filter", format!("bad family {family:?}")))?;
            check_bounds(start, end, "column_range_filter")
        }
        RowFilter::TimestampRange(r) => {
            if r.start < 0 || r.end < 0 || (r.end != 0 && r.start > r.end) {
                return Err(invalid(
                    "timestamp_range_filter",
                    format!("inverted or negative range [{}, {})", r.start, r.end),
                ));
            }
            Ok(())
        }
        RowFilter::ValueRange { start, end } => check_bounds(start, end, "value_range_filter"),
        RowFilter::CellsPerRowOffset(n) if *n < 0 => Err(invalid(
            "cells_per_row_offset_filter",
            format!("{n} is negative"),
        )),
        RowFilter::CellsPerRowLimit(n) if *n <= 0 => Err(invalid(
            "cells_per_row_limit_filter",
            format!("{n} is not positive"),
        )),
        RowFilter::CellsPerColumnLimit(n) if *n <= 0 => Err(invalid(
            "cells_per_column_limit_filter",
            format!("{n} is not positive"),
        )),
        RowFilter::CellsPerRowOffset(_)
        | RowFilter::CellsPerRowLimit(_)
        | RowFilter::CellsPerColumnLimit(_) => Ok(()),
        RowFilter::ApplyLabel(label) => {
            let ok = !label.is_empty()
                && label.len() <= limits::MAX_LABEL_CHARS
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
            if ok {
                Ok(())
            } else {
                Err(invalid(
                    "apply_label_transformer",
                    format!("label {label:?} must match [a-z0-9-]{{1,15}}"),
                ))
            }
        }
    }
}

/// Nesting depth: every `Chain`, `Interleave` and `Condition` on the deepest path counts one; a
/// bare leaf has depth 1. Iterative, so an absurdly deep tree cannot overflow the stack before
/// validation rejects it.
pub fn filter_depth(filter: &RowFilter) -> usize {
    let mut deepest = 0;
    let mut stack = alloc::vec![(filter, 1usize)];
    while let Some((f, depth)) = stack.pop() {
        deepest = deepest.max(depth);
        match f {
            RowFilter::Chain(fs) | RowFilter::Interleave(fs) => {
                stack.extend(fs.iter().map(|c| (c, depth + 1)));
            }
            RowFilter::Condition {
                predicate,
                true_filter,
                false_filter,
            } => {
                stack.extend(
                    [predicate, true_filter, false_filter]
                        .into_iter()
                        .flatten()
                        .map(|c| (&**c, depth + 1)),
                );
            }
            _ => {}
        }
    }
    deepest
}

/// The length of the filter's protobuf encoding (`data.proto` field numbers), as the 20 KiB
/// limit measures it. Recursive: [`validate_filter`] checks the depth first.
pub fn filter_encoded_len(filter: &RowFilter) -> usize {
    match filter {
        RowFilter::Chain(fs) => message_field(
            1,
            fs.iter()
                .map(|f| message_field(1, filter_encoded_len(f)))
                .sum(),
        ),
        RowFilter::Interleave(fs) => message_field(
            2,
            fs.iter()
                .map(|f| message_field(1, filter_encoded_len(f)))
                .sum(),
        ),
        RowFilter::Condition {
            predicate,
            true_filter,
            false_filter,
        } => {
            let inner: usize = [predicate, true_filter, false_filter]
                .into_iter()
                .zip(1u32..)
                .filter_map(|(f, n)| f.as_ref().map(|f| message_field(n, filter_encoded_len(f))))
                .sum();
            message_field(3, inner)
        }
        RowFilter::Sink => tag_len(16) + 1,
        RowFilter::PassAll => tag_len(17) + 1,
        RowFilter::BlockAll => tag_len(18) + 1,
        RowFilter::RowKeyRegex(p) => message_field(4, p.len()),
        RowFilter::RowSample(_) => tag_len(14) + 8,
        RowFilter::FamilyNameRegex(p) => message_field(5, p.len()),
        RowFilter::ColumnQualifierRegex(p) => message_field(6, p.len()),
        RowFilter::ColumnRange { family, start, end } => {
            let fam = if family.is_empty() {
                0
            } else {
                message_field(1, family.len())
            };
            message_field(7, fam + bound_len(start, 2, 3) + bound_len(end, 5, 4))
        }
        RowFilter::TimestampRange(r) => {
            let int = |n: u32, v: i64| {
                if v == 0 {
                    0
                } else {
                    tag_len(n) + varint_len(v as u64)
                }
            };
            message_field(8, int(1, r.start) + int(2, r.end))
        }
        RowFilter::ValueRegex(p) => message_field(9, p.len()),
        RowFilter::ValueRange { start, end } => {
            message_field(15, bound_len(start, 1, 2) + bound_len(end, 4, 3))
        }
        RowFilter::CellsPerRowOffset(n) => tag_len(10) + int32_len(*n),
        RowFilter::CellsPerRowLimit(n) => tag_len(11) + int32_len(*n),
        RowFilter::CellsPerColumnLimit(n) => tag_len(12) + int32_len(*n),
        RowFilter::StripValue => tag_len(13) + 1,
        RowFilter::ApplyLabel(l) => message_field(19, l.len()),
    }
}

/// Encoded length of a bound given the field numbers of its open and closed forms.
fn bound_len(bound: &KeyBound, open_field: u32, closed_field: u32) -> usize {
    match bound {
        KeyBound::Unbounded => 0,
        KeyBound::Open(k) => message_field(open_field, k.len()),
        KeyBound::Closed(k) => message_field(closed_field, k.len()),
    }
}

/// A length-delimited field: tag, length varint, payload.
fn message_field(field: u32, payload: usize) -> usize {
    tag_len(field) + varint_len(payload as u64) + payload
}

fn tag_len(field: u32) -> usize {
    varint_len(u64::from(field) << 3)
}

fn int32_len(v: i32) -> usize {
    // Negative int32 values are sign-extended to 64 bits on the wire.
    varint_len(i64::from(v) as u64)
}

fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn literal_regex_escapes_every_operator() {
        assert_eq!(literal_regex(b"Ab9"), b"Ab9".to_vec());
        assert_eq!(literal_regex(b"a.b*"), b"a\\x2eb\\x2a".to_vec());
        assert_eq!(literal_regex(b"\x00\xff"), b"\\x00\\xff".to_vec());
        // What it gives is a valid RE2 pattern for every byte.
        let all: Vec<u8> = (0..=255).collect();
        assert!(super::super::regex::translate(&literal_regex(&all), "value_regex_filter").is_ok());
    }

    #[test]
    fn varints() {
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(127), 1);
        assert_eq!(varint_len(128), 2);
        assert_eq!(varint_len(u64::MAX), 10);
        assert_eq!(int32_len(-1), 10);
    }

    #[test]
    fn sizes_of_simple_filters() {
        assert_eq!(filter_encoded_len(&RowFilter::PassAll), 3);
        assert_eq!(filter_encoded_len(&RowFilter::CellsPerColumnLimit(1)), 2);
        // chain{filters:[pass_all, block_all]} = 0a 0a (0a 03 88 01 01) (0a 03 90 01 01)
        let chain = RowFilter::Chain(vec![RowFilter::PassAll, RowFilter::BlockAll]);
        assert_eq!(filter_encoded_len(&chain), 12);
    }

    #[test]
    fn depth_counts_composites() {
        let leaf = RowFilter::PassAll;
        assert_eq!(filter_depth(&leaf), 1);
        let c = RowFilter::Chain(vec![
            leaf.clone(),
            RowFilter::Interleave(vec![leaf.clone(), leaf]),
        ]);
        assert_eq!(filter_depth(&c), 3);
    }

    #[test]
    fn chain_label_rule() {
        let l = || RowFilter::ApplyLabel("a".into());
        assert!(validate_filter(&RowFilter::Chain(vec![l(), RowFilter::PassAll])).is_ok());
        assert!(validate_filter(&RowFilter::Chain(vec![l(), l()])).is_err());
    }
}
