//! RowFilter evaluation (`spec/bigtable.md` 10): the `(out, sink)` model over one row.

use ::regex::bytes::{Regex, RegexBuilder};
use rowkit_codec::model::{
    Cell, KeyBound, RowFilter, TimestampRange, ValidationError, compare_canonical, validate_filter,
};
use rowkit_statemachines::{SplitMix64, StoreError};

/// Cap on one compiled regex program. RE2 limits programs too; a pattern that needs more is
/// answered with `INVALID_ARGUMENT` rather than an unbounded allocation.
const REGEX_SIZE_LIMIT: usize = 8 * 1024 * 1024;

/// A validated [`RowFilter`] with its regular expressions compiled, ready to run on many rows.
///
/// Compile once per request ([`CompiledFilter::new`] validates the whole tree first, as
/// `spec/bigtable.md` 4 requires), then [`CompiledFilter::apply`] each row.
///
/// ```
/// use rowkit_codec::model::{Cell, RowFilter, Timestamp};
/// use rowkit_store::semantics::CompiledFilter;
/// use rowkit_statemachines::SplitMix64;
///
/// let cell = |q: &[u8]| Cell {
///     family: "cf".into(),
///     qualifier: q.to_vec(),
///     timestamp: Timestamp::from_millis(1),
///     value: b"v".to_vec(),
///     labels: vec![],
/// };
/// let f = CompiledFilter::new(&RowFilter::ColumnQualifierRegex(b"a".to_vec())).unwrap();
/// let out = f.apply(b"row", vec![cell(b"a"), cell(b"ab")], &mut SplitMix64::new(0));
/// assert_eq!(out, vec![cell(b"a")]);
/// ```
#[derive(Debug, Clone)]
pub struct CompiledFilter {
    root: Node,
    /// Number of `row_sample_filter` nodes: each draws once per row.
    samples: usize,
}

#[derive(Debug, Clone)]
enum Node {
    Chain(Vec<Node>),
    Interleave(Vec<Node>),
    Condition {
        predicate: Option<Box<Node>>,
        true_filter: Option<Box<Node>>,
        false_filter: Option<Box<Node>>,
    },
    Sink,
    PassAll,
    BlockAll,
    RowKeyRegex(Pattern),
    /// Probability and the index of this node's draw in the row's draws.
    RowSample(f64, usize),
    FamilyRegex(Pattern),
    QualifierRegex(Pattern),
    ColumnRange {
        family: String,
        start: KeyBound,
        end: KeyBound,
    },
    TimestampRange(TimestampRange),
    ValueRegex(Pattern),
    ValueRange {
        start: KeyBound,
        end: KeyBound,
    },
    CellsPerRowOffset(usize),
    CellsPerRowLimit(usize),
    CellsPerColumnLimit(usize),
    StripValue,
    ApplyLabel(String),
}

impl CompiledFilter {
    /// Validates `filter` (every rule of `spec/bigtable.md` 4 and 10) and compiles its regular
    /// expressions. Errors are `INVALID_ARGUMENT` naming the offending field.
    pub fn new(filter: &RowFilter) -> Result<CompiledFilter, StoreError> {
        validate_filter(filter)?;
        let mut samples = 0;
        let root = compile(filter, &mut samples)?;
        Ok(CompiledFilter { root, samples })
    }

    /// Whether the filter contains a `row_sample_filter` (and so consumes random draws).
    pub fn is_random(&self) -> bool {
        self.samples > 0
    }

    /// Runs the filter on one row: `cells` must be the row's cells in canonical order. Returns
    /// `canonical_sort(out ++ sink)` (stable, duplicates kept), i.e. what a read returns for
    /// the row; empty means the row is omitted. Draws exactly one number from `rng` per
    /// `row_sample_filter` node, whether or not evaluation reaches it, so the draws of later
    /// rows do not depend on this row's data.
    pub fn apply(&self, key: &[u8], cells: Vec<Cell>, rng: &mut SplitMix64) -> Vec<Cell> {
        let draws: Vec<f64> = (0..self.samples).map(|_| rng.next_f64()).collect();
        let mut eval = Eval {
            key,
            draws: &draws,
            sink: Vec::new(),
        };
        let mut out = eval.eval(&self.root, cells);
        if !eval.sink.is_empty() {
            out.append(&mut eval.sink);
            out.sort_by(compare_canonical);
        }
        out
    }
}

/// A compiled RE2 pattern, matched against the whole input.
///
/// Most patterns machines send are plain names (`Column("v")`, `Family("m")` in every OCC
/// predicate): without an RE2 metacharacter a pattern matches exactly its own bytes, so it
/// is compared as bytes; compiling a regex for it cost more than evaluating the request.
#[derive(Debug, Clone)]
enum Pattern {
    Literal(Vec<u8>),
    Regex(Regex),
}

impl Pattern {
    fn is_match(&self, input: &[u8]) -> bool {
        match self {
            Pattern::Literal(bytes) => bytes.as_slice() == input,
            Pattern::Regex(re) => re.is_match(input),
        }
    }
}

/// RE2's metacharacters; a pattern with none of them is a literal.
const RE2_META: &[u8] = b"\\.+*?()|[]{}^$";

fn compile_regex(pattern: &[u8], field: &'static str) -> Result<Pattern, ValidationError> {
    if !pattern.iter().any(|b| RE2_META.contains(b)) {
        return Ok(Pattern::Literal(pattern.to_vec()));
    }
    let translated = rowkit_codec::model::regex::translate(pattern, field)?;
    RegexBuilder::new(&translated)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map(Pattern::Regex)
        .map_err(|e| ValidationError::InvalidRegex {
            field,
            pattern: String::from_utf8_lossy(pattern).into_owned(),
            reason: e.to_string(),
        })
}

fn compile(filter: &RowFilter, samples: &mut usize) -> Result<Node, ValidationError> {
    let boxed = |f: &Option<Box<RowFilter>>, samples: &mut usize| {
        f.as_deref()
            .map(|f| compile(f, samples).map(Box::new))
            .transpose()
    };
    let count = |n: i32| usize::try_from(n).unwrap_or(0);
    Ok(match filter {
        RowFilter::Chain(fs) => Node::Chain(
            fs.iter()
                .map(|f| compile(f, samples))
                .collect::<Result<_, _>>()?,
        ),
        RowFilter::Interleave(fs) => Node::Interleave(
            fs.iter()
                .map(|f| compile(f, samples))
                .collect::<Result<_, _>>()?,
        ),
        RowFilter::Condition {
            predicate,
            true_filter,
            false_filter,
        } => Node::Condition {
            predicate: boxed(predicate, samples)?,
            true_filter: boxed(true_filter, samples)?,
            false_filter: boxed(false_filter, samples)?,
        },
        RowFilter::Sink => Node::Sink,
        RowFilter::PassAll => Node::PassAll,
        RowFilter::BlockAll => Node::BlockAll,
        RowFilter::RowKeyRegex(p) => Node::RowKeyRegex(compile_regex(p, "row_key_regex_filter")?),
        RowFilter::RowSample(p) => {
            let slot = *samples;
            *samples += 1;
            Node::RowSample(*p, slot)
        }
        RowFilter::FamilyNameRegex(p) => {
            Node::FamilyRegex(compile_regex(p.as_bytes(), "family_name_regex_filter")?)
        }
        RowFilter::ColumnQualifierRegex(p) => {
            Node::QualifierRegex(compile_regex(p, "column_qualifier_regex_filter")?)
        }
        RowFilter::ColumnRange { family, start, end } => Node::ColumnRange {
            family: family.clone(),
            start: start.clone(),
            end: end.clone(),
        },
        RowFilter::TimestampRange(r) => Node::TimestampRange(*r),
        RowFilter::ValueRegex(p) => Node::ValueRegex(compile_regex(p, "value_regex_filter")?),
        RowFilter::ValueRange { start, end } => Node::ValueRange {
            start: start.clone(),
            end: end.clone(),
        },
        RowFilter::CellsPerRowOffset(n) => Node::CellsPerRowOffset(count(*n)),
        RowFilter::CellsPerRowLimit(n) => Node::CellsPerRowLimit(count(*n)),
        RowFilter::CellsPerColumnLimit(n) => Node::CellsPerColumnLimit(count(*n)),
        RowFilter::StripValue => Node::StripValue,
        RowFilter::ApplyLabel(l) => Node::ApplyLabel(l.clone()),
    })
}

/// One row's evaluation: the row key, its random draws, and the sink collecting cells that
/// bypass every parent filter.
struct Eval<'a> {
    key: &'a [u8],
    draws: &'a [f64],
    sink: Vec<Cell>,
}

impl Eval<'_> {
    /// The `out` of `node` on `input` (canonical order in, canonical order out); sink output
    /// goes to `self.sink`.
    fn eval(&mut self, node: &Node, mut input: Vec<Cell>) -> Vec<Cell> {
        // Every filter maps an empty row to an empty row with an empty sink, so a chain can
        // stop at its first empty intermediate result.
        if input.is_empty() {
            return input;
        }
        match node {
            Node::Chain(fs) => {
                for f in fs {
                    input = self.eval(f, input);
                    if input.is_empty() {
                        break;
                    }
                }
                input
            }
            Node::Interleave(fs) => {
                let mut pooled = Vec::new();
                let mut input = Some(input);
                for (i, f) in fs.iter().enumerate() {
                    // The last member may consume the input; the others get copies.
                    let copy = if i + 1 == fs.len() {
                        input.take().unwrap_or_default()
                    } else {
                        input.clone().unwrap_or_default()
                    };
                    pooled.extend(self.eval(f, copy));
                }
                // Stable: duplicates stay in member order (`spec/bigtable.md` 2).
                pooled.sort_by(compare_canonical);
                pooled
            }
            Node::Condition {
                predicate,
                true_filter,
                false_filter,
            } => {
                let matched = match predicate {
                    // A missing predicate passes every cell, and the input is not empty.
                    None => true,
                    Some(p) => !self.eval(p, input.clone()).is_empty(),
                };
                let branch = if matched { true_filter } else { false_filter };
                match branch {
                    Some(b) => self.eval(b, input),
                    None => Vec::new(),
                }
            }
            Node::Sink => {
                self.sink.append(&mut input);
                Vec::new()
            }
            Node::PassAll => input,
            Node::BlockAll => Vec::new(),
            Node::RowKeyRegex(re) => {
                if re.is_match(self.key) {
                    input
                } else {
                    Vec::new()
                }
            }
            Node::RowSample(p, slot) => {
                let draw = self.draws.get(*slot).copied().unwrap_or(1.0);
                if draw < *p { input } else { Vec::new() }
            }
            Node::FamilyRegex(re) => {
                input.retain(|c| re.is_match(c.family.as_bytes()));
                input
            }
            Node::QualifierRegex(re) => {
                input.retain(|c| re.is_match(&c.qualifier));
                input
            }
            Node::ColumnRange { family, start, end } => {
                input.retain(|c| {
                    c.family == *family
                        && start.admits_from_below(&c.qualifier)
                        && end.admits_from_above(&c.qualifier)
                });
                input
            }
            Node::TimestampRange(r) => {
                input.retain(|c| r.contains(c.timestamp));
                input
            }
            Node::ValueRegex(re) => {
                input.retain(|c| re.is_match(&c.value));
                input
            }
            Node::ValueRange { start, end } => {
                input.retain(|c| {
                    start.admits_from_below(&c.value) && end.admits_from_above(&c.value)
                });
                input
            }
            Node::CellsPerRowOffset(n) => {
                input.drain(..(*n).min(input.len()));
                input
            }
            Node::CellsPerRowLimit(n) => {
                input.truncate(*n);
                input
            }
            Node::CellsPerColumnLimit(0) => Vec::new(),
            Node::CellsPerColumnLimit(n) => {
                // A column's cells are adjacent and its first is always kept (n >= 1), so the
                // last cell kept is of the same column exactly when the previous cell was:
                // `dedup_by` compares with it, in place, copying no names.
                let mut seen = 1usize;
                input.dedup_by(|c, kept| {
                    if c.family == kept.family && c.qualifier == kept.qualifier {
                        seen += 1;
                        seen > *n
                    } else {
                        seen = 1;
                        false
                    }
                });
                input
            }
            Node::StripValue => {
                for c in &mut input {
                    c.value.clear();
                }
                input
            }
            Node::ApplyLabel(label) => {
                for c in &mut input {
                    c.labels.clear();
                    c.labels.push(label.clone());
                }
                input
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The literal fast path answers exactly as the compiled regex would: patterns and inputs
    /// drawn from the bytes that matter (metacharacter-free pattern bytes, Latin-1, newline,
    /// the empty string).
    #[test]
    fn a_literal_pattern_matches_as_its_regex_would() {
        let alphabet = [b'a', b'v', b'\n', 0x00, 0x7f, 0xe9, 0xff, b' '];
        let mut rng = SplitMix64::new(7);
        let draw = |rng: &mut SplitMix64, max: u64| -> Vec<u8> {
            (0..rng.below(max))
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect()
        };
        for _ in 0..2_000 {
            let pattern = draw(&mut rng, 4);
            let Pattern::Literal(_) = compile_regex(&pattern, "value_regex_filter").unwrap() else {
                panic!("{pattern:?} is a literal");
            };
            let translated = rowkit_codec::model::regex::translate(&pattern, "f").unwrap();
            let re = RegexBuilder::new(&translated).build().unwrap();
            let literal = Pattern::Literal(pattern.clone());
            for _ in 0..8 {
                let input = if rng.below(2) == 0 {
                    pattern.clone()
                } else {
                    draw(&mut rng, 5)
                };
                assert_eq!(
                    literal.is_match(&input),
                    re.is_match(&input),
                    "{pattern:?} {input:?}"
                );
            }
        }
        assert!(matches!(
            compile_regex(b"a.c", "value_regex_filter").unwrap(),
            Pattern::Regex(_)
        ));
    }

    /// `CellsPerColumnLimit(n)` keeps the first `n` cells of each column, duplicates counted,
    /// on rows drawn with few columns, repeated timestamps and duplicate cells.
    #[test]
    fn cells_per_column_limit_keeps_the_first_n_of_each_column() {
        use rowkit_codec::model::Timestamp;
        let mut rng = SplitMix64::new(11);
        let families = ["a", "b"];
        let qualifiers: [&[u8]; 3] = [b"", b"q", b"q\0"];
        for _ in 0..500 {
            let mut cells: Vec<Cell> = (0..rng.below(12))
                .map(|_| Cell {
                    family: families[rng.below(2) as usize].into(),
                    qualifier: qualifiers[rng.below(3) as usize].to_vec(),
                    timestamp: Timestamp::from_millis(rng.below(3) as i64),
                    value: vec![rng.below(4) as u8],
                    labels: vec![],
                })
                .collect();
            cells.sort_by(compare_canonical);
            for n in 1..4 {
                let mut expected = Vec::new();
                for (i, cell) in cells.iter().enumerate() {
                    let before = cells[..i]
                        .iter()
                        .filter(|c| c.family == cell.family && c.qualifier == cell.qualifier)
                        .count();
                    if before < n {
                        expected.push(cell.clone());
                    }
                }
                let f = CompiledFilter::new(&RowFilter::CellsPerColumnLimit(n as i32)).unwrap();
                let found = f.apply(b"r", cells.clone(), &mut SplitMix64::new(0));
                assert_eq!(found, expected, "n = {n}, {cells:?}");
            }
        }
    }
}
