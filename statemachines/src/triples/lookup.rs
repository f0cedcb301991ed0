//! Lookups (spec §5): one prefix scan, every cell of both triple families parsed
//! into the candidate set (first occurrence per triple UUID), then the memory driver's
//! filtering pipeline, sort by triple text and paging.

use alloc::collections::btree_map::Entry;
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;

use rowkit_codec::model::{Row, RowRange, RowSet};
use rowkit_codec::triples::gotext::quote;
use rowkit_codec::triples::keys::{self, LookupPrefix};
use rowkit_codec::triples::{Anchor, Node, Object, Predicate, Triple, Uuid};

use super::{OperationConfig, Progress, TriplesError, TriplesSchema, begin, failed};
use crate::ReadRowsRequest;
use crate::children::ChildId;
use crate::operation::{Flow, Io, Operation, Start};

/// A filter operation code (`Latest = 1`, `IsImmutable = 2`, `IsTemporal = 3`; any other
/// value is representable because the original accepts any int and rejects it at lookup).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterOperation(pub i64);

impl FilterOperation {
    /// Keep the latest anchor per predicate.
    pub const LATEST: FilterOperation = FilterOperation(1);
    /// Keep immutable predicates.
    pub const IS_IMMUTABLE: FilterOperation = FilterOperation(2);
    /// Keep temporal predicates.
    pub const IS_TEMPORAL: FilterOperation = FilterOperation(3);

    /// The original's `String()`.
    pub fn name(self) -> String {
        match self.0 {
            1 => "latest".into(),
            2 => "isImmutable".into(),
            3 => "isTemporal".into(),
            n => alloc::format!("not defined filter operation \"{n}\""),
        }
    }
}

/// A filter field code (`Subject = 1`, `Predicate = 2`, `Object = 3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilterField(pub i64);

impl FilterField {
    /// The subject (never valid for a filter).
    pub const SUBJECT: FilterField = FilterField(1);
    /// The predicate.
    pub const PREDICATE: FilterField = FilterField(2);
    /// The object (if it is a predicate).
    pub const OBJECT: FilterField = FilterField(3);

    /// The original's `String()`.
    pub fn name(self) -> String {
        match self.0 {
            1 => "subject field".into(),
            2 => "predicate field".into(),
            3 => "object field".into(),
            n => alloc::format!("not defined filter field \"{n}\""),
        }
    }
}

/// `FilterOptions` (spec §5.3; `value` is unused by every operation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterOptions {
    /// The operation.
    pub operation: FilterOperation,
    /// The field it applies to.
    pub field: FilterField,
    /// Unused.
    pub value: Option<Vec<u8>>,
}

/// `LookupOptions` (spec §5.3); `Default` is `DefaultLookup`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LookupOptions {
    /// Page size; 0 (or negative) = unlimited.
    pub max_elements: i64,
    /// Inclusive lower bound on anchors of temporal triples.
    pub lower_anchor: Option<Anchor>,
    /// Inclusive upper bound on anchors of temporal triples.
    pub upper_anchor: Option<Anchor>,
    /// Shorthand for `FilterOptions { Latest, Predicate }`.
    pub latest_anchor: bool,
    /// A filter (spec §5.2 step 4).
    pub filter_options: Option<FilterOptions>,
    /// Page index: `skip = max_elements * offset`.
    pub offset: i64,
}

impl LookupOptions {
    /// Steps 1, 3 and the checks of step 4: the effective filter, or the option error.
    fn effective_filter(&self) -> Result<Option<FilterOptions>, TriplesError> {
        if self.latest_anchor && self.filter_options.is_some() {
            return Err(TriplesError::Options(
                "cannot have LatestAnchor and FilterOptions used at the same time inside lookup options"
                    .into(),
            ));
        }
        let filter = if self.latest_anchor {
            Some(FilterOptions {
                operation: FilterOperation::LATEST,
                field: FilterField::PREDICATE,
                value: None,
            })
        } else {
            self.filter_options.clone()
        };
        if let Some(f) = &filter {
            if !(1..=3).contains(&f.operation.0) {
                return Err(TriplesError::Options(alloc::format!(
                    "filter operation {} not supported in the driver",
                    quote(f.operation.name().as_bytes())
                )));
            }
            if f.field != FilterField::PREDICATE && f.field != FilterField::OBJECT {
                return Err(TriplesError::Options(alloc::format!(
                    "invalid field {} for {} filter operation, can accept only {} or {}",
                    quote(f.field.name().as_bytes()),
                    quote(f.operation.name().as_bytes()),
                    quote(b"predicate field"),
                    quote(b"object field"),
                )));
            }
        }
        Ok(filter)
    }

    /// Checks the options without data (the errors of spec §5.2 steps 1 and 4).
    pub fn validate(&self) -> Result<(), TriplesError> {
        self.effective_filter().map(|_| ())
    }
}

/// Step 2: inclusive time bounds and exact-anchor matching.
fn within_bounds(t: &Triple, op: Option<&Predicate>, lo: &LookupOptions) -> bool {
    let Some(anchor) = t.predicate.anchor() else {
        return true;
    };
    if let Some(qa) = op.and_then(Predicate::anchor)
        && !anchor.same_instant(qa)
    {
        return false;
    }
    if let Some(lower) = &lo.lower_anchor
        && anchor.cmp_instant(lower).is_lt()
    {
        return false;
    }
    if let Some(upper) = &lo.upper_anchor
        && anchor.cmp_instant(upper).is_gt()
    {
        return false;
    }
    true
}

/// The memory driver's pipeline (spec §5.2 steps 1–6) over candidates `c` for query
/// predicate `op`: the emitted page, in order.
pub fn filter_candidates(
    c: Vec<Triple>,
    op: Option<&Predicate>,
    lo: &LookupOptions,
) -> Result<Vec<Triple>, TriplesError> {
    let mut pipeline = Pipeline::new(op, lo)?;
    for t in c {
        pipeline.push(t);
    }
    Ok(pipeline.finish())
}

/// Spec §5.2 as a stream: candidates are pushed one at a time as the scan parses them, and
/// only what can still reach the page is kept. The memory driver sorts all of `C`; the result
/// here is the same, but a paged lookup holds at most `skip + limit` triples (plus, for
/// `Latest`, the current latest triples of each group), never the whole graph.
#[derive(Debug)]
pub struct Pipeline {
    bounds: LookupOptions,
    op: Option<Predicate>,
    op_text: Option<Vec<u8>>,
    filter: Option<FilterOptions>,
    /// `Latest`: per partial UUID of the field predicate, its latest instant and the
    /// triples at that instant (with their arrival numbers, for a stable sort).
    latest: BTreeMap<Uuid, (Anchor, Vec<(u64, Triple)>)>,
    page: PageSelection,
    arrivals: u64,
}

impl Pipeline {
    /// A pipeline for query predicate `op` and options `lo`, or the option error (steps 1, 4).
    pub fn new(op: Option<&Predicate>, lo: &LookupOptions) -> Result<Pipeline, TriplesError> {
        let filter = lo.effective_filter()?;
        Ok(Pipeline {
            bounds: lo.clone(),
            op: op.cloned(),
            op_text: op.map(Predicate::to_text),
            filter,
            latest: BTreeMap::new(),
            page: PageSelection::new(lo),
            arrivals: 0,
        })
    }

    /// The field predicate of step 4, if `t` has one.
    fn field(filter: &FilterOptions, t: &Triple) -> Option<Predicate> {
        if filter.field == FilterField::PREDICATE {
            Some(t.predicate.clone())
        } else {
            t.object.as_predicate().cloned()
        }
    }

    /// Offers one candidate (in scan order).
    pub fn push(&mut self, t: Triple) {
        let arrival = self.arrivals;
        self.arrivals += 1;
        if !within_bounds(&t, self.op.as_ref(), &self.bounds) {
            return;
        }
        let Some(filter) = &self.filter else {
            return self.page.offer(arrival, t);
        };
        if self
            .op_text
            .as_ref()
            .is_some_and(|q| *q != t.predicate.to_text())
        {
            return;
        }
        let Some(fp) = Pipeline::field(filter, &t) else {
            return;
        };
        match filter.operation {
            FilterOperation::LATEST => {
                let Some(anchor) = fp.anchor().copied() else {
                    return; // immutable field predicates never survive `Latest`
                };
                match self.latest.entry(fp.partial_uuid()) {
                    Entry::Vacant(v) => {
                        v.insert((anchor, alloc::vec![(arrival, t)]));
                    }
                    Entry::Occupied(mut o) => {
                        let (best, triples) = o.get_mut();
                        if anchor.cmp_instant(best).is_gt() {
                            *best = anchor;
                            triples.clear();
                            triples.push((arrival, t));
                        } else if anchor.same_instant(best) {
                            triples.push((arrival, t));
                        }
                    }
                }
            }
            FilterOperation::IS_IMMUTABLE if fp.is_immutable() => self.page.offer(arrival, t),
            FilterOperation::IS_TEMPORAL if !fp.is_immutable() => self.page.offer(arrival, t),
            _ => {}
        }
    }

    /// The page (steps 5 and 6), in order.
    pub fn finish(mut self) -> Vec<Triple> {
        for (_, triples) in core::mem::take(&mut self.latest).into_values() {
            for (arrival, t) in triples {
                self.page.offer(arrival, t);
            }
        }
        self.page.finish()
    }
}

/// Steps 5 and 6: sort by triple text (ties in arrival order, as a stable sort keeps them),
/// skip, limit. Keeps only the `skip + limit` smallest when the page is bounded.
#[derive(Debug)]
struct PageSelection {
    skip: usize,
    limit: usize,
    /// At most `skip + limit` entries when bounded.
    kept: BTreeMap<(Vec<u8>, u64), Triple>,
}

impl PageSelection {
    fn new(lo: &LookupOptions) -> PageSelection {
        let skip = lo.max_elements.wrapping_mul(lo.offset);
        let skip = usize::try_from(skip.max(0)).unwrap_or(usize::MAX);
        let limit = if lo.max_elements > 0 {
            usize::try_from(lo.max_elements).unwrap_or(usize::MAX)
        } else {
            usize::MAX
        };
        PageSelection {
            skip,
            limit,
            kept: BTreeMap::new(),
        }
    }

    fn offer(&mut self, arrival: u64, t: Triple) {
        let cap = self.skip.saturating_add(self.limit);
        if cap == 0 {
            return;
        }
        let key = (t.to_text(), arrival);
        if self.kept.len() == cap {
            // Full: the newcomer only gets in by pushing out the current largest.
            match self.kept.last_key_value() {
                Some((largest, _)) if key < *largest => {
                    self.kept.pop_last();
                }
                _ => return,
            }
        }
        self.kept.insert(key, t);
    }

    fn finish(self) -> Vec<Triple> {
        self.kept
            .into_values()
            .skip(self.skip)
            .take(self.limit)
            .collect()
    }
}

/// A lookup method with its arguments (spec §5.1).
#[derive(Clone, Debug, PartialEq)]
pub enum LookupMethod {
    /// Objects of `(s, p)`.
    Objects(Node, Predicate),
    /// Subjects of `(p, o)`.
    Subjects(Predicate, Object),
    /// Predicates of triples with subject `s`.
    PredicatesForSubject(Node),
    /// Predicates of triples with object `o`.
    PredicatesForObject(Object),
    /// Predicates of triples `(s, ?, o)` (fix 10).
    PredicatesForSubjectAndObject(Node, Object),
    /// Triples with subject `s`.
    TriplesForSubject(Node),
    /// Triples with predicate `p`.
    TriplesForPredicate(Predicate),
    /// Triples with object `o`.
    TriplesForObject(Object),
    /// Triples `(s, p, ?)`.
    TriplesForSubjectAndPredicate(Node, Predicate),
    /// Triples `(?, p, o)`.
    TriplesForPredicateAndObject(Predicate, Object),
    /// Every triple of the graph.
    Triples,
}

impl LookupMethod {
    /// Every method name [`LookupMethod::parse`] knows (the CLI's `graph query` names).
    pub const NAMES: [&'static str; 11] = [
        "objects",
        "subjects",
        "predicates-for-subject",
        "predicates-for-object",
        "predicates-for-subject-and-object",
        "triples-for-subject",
        "triples-for-predicate",
        "triples-for-object",
        "triples-for-subject-and-predicate",
        "triples-for-predicate-and-object",
        "triples",
    ];

    /// The arguments of each method of [`LookupMethod::NAMES`] (same order), each named by
    /// what it is: `subject` (a node), `predicate`, `object` (a node, predicate or literal);
    /// for callers that build a query field by field (the browser tool's query builder).
    pub const ARGUMENTS: [&'static [&'static str]; 11] = [
        &["subject", "predicate"],
        &["predicate", "object"],
        &["subject"],
        &["object"],
        &["subject", "object"],
        &["subject"],
        &["predicate"],
        &["object"],
        &["subject", "predicate"],
        &["predicate", "object"],
        &[],
    ];

    /// A method from its name (`objects`, `triples-for-subject`, …; see
    /// [`LookupMethod::NAMES`]) and its arguments as BadWolf text (node, predicate, object in
    /// the order of the name).
    pub fn parse(name: &str, args: &[&str]) -> Result<LookupMethod, LookupParseError> {
        let arg = |i: usize| args.get(i).map_or(&b""[..], |s| s.as_bytes());
        let bad = |e: &dyn core::fmt::Display| LookupParseError::BadArgument {
            method: String::from(name),
            reason: alloc::format!("{e}"),
        };
        let n = |i: usize| Node::parse(arg(i)).map_err(|e| bad(&e));
        let p = |i: usize| Predicate::parse(arg(i)).map_err(|e| bad(&e));
        let o = |i: usize| Object::parse(arg(i)).map_err(|e| bad(&e));
        let want = |k: usize| {
            if args.len() == k {
                Ok(())
            } else {
                Err(LookupParseError::Arity {
                    method: String::from(name),
                    expected: k,
                })
            }
        };
        use LookupMethod as M;
        Ok(match name {
            "objects" => want(2).and_then(|()| Ok(M::Objects(n(0)?, p(1)?)))?,
            "subjects" => want(2).and_then(|()| Ok(M::Subjects(p(0)?, o(1)?)))?,
            "predicates-for-subject" => {
                want(1).and_then(|()| Ok(M::PredicatesForSubject(n(0)?)))?
            }
            "predicates-for-object" => want(1).and_then(|()| Ok(M::PredicatesForObject(o(0)?)))?,
            "predicates-for-subject-and-object" => {
                want(2).and_then(|()| Ok(M::PredicatesForSubjectAndObject(n(0)?, o(1)?)))?
            }
            "triples-for-subject" => want(1).and_then(|()| Ok(M::TriplesForSubject(n(0)?)))?,
            "triples-for-predicate" => want(1).and_then(|()| Ok(M::TriplesForPredicate(p(0)?)))?,
            "triples-for-object" => want(1).and_then(|()| Ok(M::TriplesForObject(o(0)?)))?,
            "triples-for-subject-and-predicate" => {
                want(2).and_then(|()| Ok(M::TriplesForSubjectAndPredicate(n(0)?, p(1)?)))?
            }
            "triples-for-predicate-and-object" => {
                want(2).and_then(|()| Ok(M::TriplesForPredicateAndObject(p(0)?, o(1)?)))?
            }
            "triples" => want(0).map(|()| M::Triples)?,
            other => {
                return Err(LookupParseError::UnknownMethod {
                    method: String::from(other),
                });
            }
        })
    }
}

/// Why [`LookupMethod::parse`] failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LookupParseError {
    /// Not a method name.
    #[error("unknown lookup method {method:?}")]
    UnknownMethod {
        /// The name given.
        method: String,
    },
    /// Wrong number of arguments.
    #[error("{method} takes {expected} argument(s)")]
    Arity {
        /// The method.
        method: String,
        /// How many it takes.
        expected: usize,
    },
    /// An argument does not parse.
    #[error("{method}: {reason}")]
    BadArgument {
        /// The method.
        method: String,
        /// The parser's message.
        reason: String,
    },
}

/// What part of a triple a method emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Projection {
    /// The object.
    Object,
    /// The subject.
    Subject,
    /// The predicate.
    Predicate,
    /// The whole triple.
    Triple,
}

/// One emitted item.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A subject.
    Node(Node),
    /// A predicate.
    Predicate(Predicate),
    /// An object.
    Object(Object),
    /// A triple.
    Triple(Triple),
}

impl Item {
    /// The text form.
    pub fn to_text(&self) -> Vec<u8> {
        match self {
            Item::Node(n) => n.to_text(),
            Item::Predicate(p) => p.to_text(),
            Item::Object(o) => o.to_text(),
            Item::Triple(t) => t.to_text(),
        }
    }
}

/// One result: the triple it comes from and the method's projection of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The matching triple.
    pub triple: Triple,
    /// What the method emits of it.
    pub projection: Projection,
}

/// A [`Found`] as text, the shape the CLI's `--json` and the wasm `Graph` client answer
/// (serialised with its keys in order: item, object, predicate, subject, triple, uuid).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FoundText {
    /// The emitted item's text.
    pub item: String,
    /// The object's text.
    pub object: String,
    /// The predicate's text.
    pub predicate: String,
    /// The subject's text.
    pub subject: String,
    /// The triple's text (tab-separated).
    pub triple: String,
    /// The triple's UUID.
    pub uuid: String,
}

impl Found {
    /// Every part as text (non-UTF-8 bytes replaced).
    pub fn to_text(&self) -> FoundText {
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        FoundText {
            item: text(self.item().to_text()),
            object: text(self.triple.object.to_text()),
            predicate: text(self.triple.predicate.to_text()),
            subject: text(self.triple.subject.to_text()),
            triple: text(self.triple.to_text()),
            uuid: self.triple.uuid().to_text(),
        }
    }

    /// The emitted item (spec §5.2 step 7).
    pub fn item(&self) -> Item {
        match self.projection {
            Projection::Object => Item::Object(self.triple.object.clone()),
            Projection::Subject => Item::Node(self.triple.subject.clone()),
            Projection::Predicate => Item::Predicate(self.triple.predicate.clone()),
            Projection::Triple => Item::Triple(self.triple.clone()),
        }
    }
}

impl LookupMethod {
    /// The prefix scanned.
    pub fn prefix(&self) -> LookupPrefix<'_> {
        use LookupMethod as M;
        match self {
            M::Objects(s, p) | M::TriplesForSubjectAndPredicate(s, p) => {
                LookupPrefix::SubjectPredicate(s, p)
            }
            M::Subjects(p, o) | M::TriplesForPredicateAndObject(p, o) => {
                LookupPrefix::PredicateObject(p, o)
            }
            M::PredicatesForSubject(s) | M::TriplesForSubject(s) => LookupPrefix::Subject(s),
            M::PredicatesForObject(o) | M::TriplesForObject(o) => LookupPrefix::Object(o),
            M::PredicatesForSubjectAndObject(s, o) => LookupPrefix::SubjectObject(s, o),
            M::TriplesForPredicate(p) => LookupPrefix::Predicate(p),
            M::Triples => LookupPrefix::All,
        }
    }

    /// The query predicate `op` of spec §5.1.
    pub fn query_predicate(&self) -> Option<&Predicate> {
        use LookupMethod as M;
        match self {
            M::Objects(_, p)
            | M::Subjects(p, _)
            | M::TriplesForPredicate(p)
            | M::TriplesForSubjectAndPredicate(_, p)
            | M::TriplesForPredicateAndObject(p, _) => Some(p),
            _ => None,
        }
    }

    /// What the method emits.
    pub fn projection(&self) -> Projection {
        use LookupMethod as M;
        match self {
            M::Objects(..) => Projection::Object,
            M::Subjects(..) => Projection::Subject,
            M::PredicatesForSubject(_)
            | M::PredicatesForObject(_)
            | M::PredicatesForSubjectAndObject(..) => Projection::Predicate,
            _ => Projection::Triple,
        }
    }
}

/// The values of the triple cells of one row of `graph`, in cell order (none if the row is
/// not a triple row of it).
pub(super) fn triple_cell_values<'r>(graph: &[u8], row: &'r Row) -> impl Iterator<Item = &'r [u8]> {
    let triple_row = keys::is_triple_row_of(graph, &row.key);
    row.cells
        .iter()
        .filter(move |cell| {
            triple_row
                && (cell.family == keys::FAMILY_IMMUTABLE || cell.family == keys::FAMILY_TEMPORAL)
        })
        .map(|cell| cell.value.as_slice())
}

/// The triple of one triple cell of the row `row_key`; one that does not parse fails the row.
pub(super) fn parse_triple_cell(row_key: &[u8], value: &[u8]) -> Result<Triple, TriplesError> {
    Triple::parse(value).map_err(|error| TriplesError::LookupParse {
        row_key: row_key.to_vec(),
        error,
    })
}

/// The triples of the triple cells of one row of `graph`, in cell order (none if the row is
/// not a triple row of it); a cell that does not parse fails the row.
pub(super) fn row_triples(graph: &[u8], row: Row) -> Result<Vec<Triple>, TriplesError> {
    triple_cell_values(graph, &row)
        .map(|value| parse_triple_cell(&row.key, value))
        .collect()
}

/// [`row_triples`], first occurrence per UUID. A triple lives in exactly one row of an index
/// (its key holds S, P' and O), so "first occurrence per UUID" only ever repeats within a
/// row; a row of one triple (the usual case) is not hashed at all.
fn distinct_row_triples(graph: &[u8], row: Row) -> Result<Vec<Triple>, TriplesError> {
    let mut triples = row_triples(graph, row)?;
    if triples.len() > 1 {
        let mut seen = BTreeSet::new();
        triples.retain(|t| seen.insert(t.uuid()));
    }
    Ok(triples)
}

/// Runs one lookup method.
pub type Lookup = Operation<'static, LookupFlow>;

impl Lookup {
    /// `method` on `graph` with `options`, as `start` says; invalid options fail before any request
    /// (spec §5.2: they occur even when the graph is empty).
    pub fn new(
        config: OperationConfig,
        graph: &[u8],
        method: LookupMethod,
        options: LookupOptions,
        start: Start,
    ) -> Lookup {
        match Pipeline::new(method.query_predicate(), &options) {
            Ok(pipeline) => {
                let flow = LookupFlow {
                    graph: graph.to_vec(),
                    method,
                    phase: Phase::Start(pipeline),
                };
                begin(config, start, flow)
            }
            Err(e) => failed(config, e),
        }
    }
}

/// Where a lookup stands.
#[derive(Debug)]
enum Phase {
    /// Nothing sent yet.
    Start(Pipeline),
    /// The prefix scan is out; its rows go through the pipeline as they come.
    Read { read: ChildId, pipeline: Pipeline },
    /// Ended (a flow that ended is never advanced again).
    Done,
}

/// The flow of [`Lookup`]: scan, parse, filter, sort, page — each row's triples go through
/// the [`Pipeline`] as they arrive.
#[derive(Debug)]
pub struct LookupFlow {
    graph: Vec<u8>,
    method: LookupMethod,
    phase: Phase,
}

impl Flow for LookupFlow {
    type Schema = TriplesSchema;
    type Output = Vec<Found>;

    fn advance(&mut self, io: &mut Io<()>, config: &mut OperationConfig) -> Progress<Vec<Found>> {
        loop {
            self.phase = match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Start(pipeline) => {
                    let prefix = self.method.prefix().key(&self.graph);
                    let read = io.read_rows(ReadRowsRequest {
                        table: config.table.clone(),
                        rows: RowSet::range(RowRange::prefix(&prefix)),
                        ..Default::default()
                    });
                    Phase::Read { read, pipeline }
                }
                Phase::Read { read, mut pipeline } => {
                    let graph = &self.graph;
                    let done = io.stream_rows::<TriplesError>(read, |row| {
                        for t in distinct_row_triples(graph, row)? {
                            pipeline.push(t);
                        }
                        Ok(())
                    })?;
                    if done.is_none() {
                        self.phase = Phase::Read { read, pipeline };
                        return Ok(None);
                    }
                    let projection = self.method.projection();
                    return Ok(Some(
                        pipeline
                            .finish()
                            .into_iter()
                            .map(|triple| Found { triple, projection })
                            .collect(),
                    ));
                }
                Phase::Done => return Ok(None),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_found_triple_as_text() {
        let triple = Triple::parse(b"/u<joe>\t\"knows\"@[]\t/u<mary>").unwrap();
        let found = Found {
            triple: triple.clone(),
            projection: Projection::Object,
        };
        let json = serde_json::to_string(&found.to_text()).unwrap();
        assert_eq!(
            json,
            alloc::format!(
                r#"{{"item":"/u<mary>","object":"/u<mary>","predicate":"\"knows\"@[]","subject":"/u<joe>","triple":"/u<joe>\t\"knows\"@[]\t/u<mary>","uuid":"{}"}}"#,
                triple.uuid().to_text()
            )
        );
    }

    #[test]
    fn every_method_name_parses_and_bad_input_is_an_error() {
        let (s, p, o) = ("/u<joe>", "\"p\"@[]", "/u<mary>");
        let cases: [(&str, &[&str]); 11] = [
            ("objects", &[s, p]),
            ("subjects", &[p, o]),
            ("predicates-for-subject", &[s]),
            ("predicates-for-object", &[o]),
            ("predicates-for-subject-and-object", &[s, o]),
            ("triples-for-subject", &[s]),
            ("triples-for-predicate", &[p]),
            ("triples-for-object", &[o]),
            ("triples-for-subject-and-predicate", &[s, p]),
            ("triples-for-predicate-and-object", &[p, o]),
            ("triples", &[]),
        ];
        for ((name, args), listed) in cases.iter().zip(LookupMethod::NAMES) {
            assert_eq!(*name, listed);
            assert!(LookupMethod::parse(name, args).is_ok(), "{name} {args:?}");
        }
        // ARGUMENTS says what each argument is: built from it, every query parses, and a
        // literal object is accepted exactly where an object is asked for.
        for (name, kinds) in LookupMethod::NAMES.iter().zip(LookupMethod::ARGUMENTS) {
            let args: Vec<&str> = kinds
                .iter()
                .map(|k| match *k {
                    "subject" => s,
                    "predicate" => p,
                    "object" => "\"3\"^^type:int64",
                    other => panic!("unknown argument kind {other}"),
                })
                .collect();
            assert!(LookupMethod::parse(name, &args).is_ok(), "{name} {args:?}");
        }
        assert!(matches!(
            LookupMethod::parse("nope", &[]),
            Err(LookupParseError::UnknownMethod { .. })
        ));
        assert!(matches!(
            LookupMethod::parse("objects", &["/u<joe>"]),
            Err(LookupParseError::Arity { expected: 2, .. })
        ));
        assert!(matches!(
            LookupMethod::parse("triples-for-subject", &["not a node"]),
            Err(LookupParseError::BadArgument { .. })
        ));
    }
}
