//! The semantics suite **as data**: every case of `spec/bigtable.md` that a store must get
//! right, as plain values that any runner can replay — the memory and redb stores
//! (rowkit-store's `tests/semantics.rs`), the Bigtable emulator, the gateway.
//!
//! How a runner plays one [`SemanticsCase`]:
//! 1. Create table [`TABLE`] with [`SemanticsCase::families`]. If the case expects
//!    [`Expectation::CreateTableError`], creation must fail with that code and the case ends.
//! 2. Execute every request of [`SemanticsCase::setup`] in order at [`SemanticsCase::now`]; each
//!    must succeed (for `MutateRows`: every entry).
//! 3. If [`SemanticsCase::gc_at`] is set, run the store's `gc(TABLE, at)` (memory/embedded only;
//!    on the emulator GC is asynchronous, which such cases note as a deviation).
//! 4. Execute [`SemanticsCase::request`] at `now`; ReadRows through the chunk merger. Turn the
//!    reply into an [`Outcome`] ([`Outcome::from_unary`], [`Outcome::from_parts`],
//!    [`Outcome::Rows`]) and check it with [`Expectation::check`].
//! 5. If [`SemanticsCase::check`] is set, execute its read and compare the rows likewise.
//!
//! Rows are compared after [`normalize_rows`], so no case depends on the (unspecified) order of
//! families or of duplicate cells. A case whose production behaviour the emulator does not
//! reproduce says why in [`SemanticsCase::emulator_deviation`] (`spec/bigtable.md` 14).

use rowkit_codec::model::{
    Cell, ColumnFamily, GcRule, KeyBound, Mutation, ReadModifyWriteRule, Row, RowFilter, RowRange,
    RowSet, RuleOp, Timestamp, TimestampRange, filter_encoded_len, limits,
};
use rowkit_statemachines::raw::{Collect, Unary};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{
    CheckAndMutateRowRequest, Code, MutateRowRequest, MutateRowsEntry, MutateRowsRequest,
    ReadModifyWriteRowRequest, ReadRowsRequest, Request, Response, RetryPolicy,
    SampleRowKeysRequest, StoreError,
};

use rowkit_store::Store;
use rowkit_store::driver::{Clock, ManualClock};

/// The table every case creates and addresses.
pub const TABLE: &str = "semantics";
/// The time cases run at unless they say otherwise: not a whole millisecond, so server-time
/// truncation shows.
pub const SUITE_NOW: Timestamp = Timestamp(1_700_000_123_456);
/// [`SUITE_NOW`] truncated to milliseconds: what `-1` timestamps become.
pub const SUITE_NOW_MS: Timestamp = Timestamp(1_700_000_123_000);

/// What part of `spec/bigtable.md` a case covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    /// RowFilter evaluation (section 10).
    Filter,
    /// RowFilter validation (sections 4, 10).
    FilterValidation,
    /// MutateRow and the mutation kinds (sections 3, 5, 6).
    Mutation,
    /// MutateRows per-entry and whole-request results (section 6).
    MutateRows,
    /// CheckAndMutateRow (section 7).
    CheckAndMutate,
    /// ReadModifyWriteRow (section 8).
    ReadModifyWrite,
    /// ReadRows row sets, direction and limits (section 9).
    RowSet,
    /// SampleRowKeys (section 11).
    SampleRowKeys,
    /// Garbage collection after an explicit `gc` call (section 12).
    Gc,
    /// Production limits (section 4).
    Limit,
    /// Table creation rules (sections 1, 4).
    Admin,
}

/// One scenario: a table schema, setup requests, the request under test and what it must give.
#[derive(Clone, Debug)]
pub struct SemanticsCase {
    /// Unique, stable name (`area/what`).
    pub name: &'static str,
    /// What the case covers.
    pub category: Category,
    /// The families [`TABLE`] is created with.
    pub families: Vec<ColumnFamily>,
    /// The time every request of the case runs at.
    pub now: Timestamp,
    /// Requests run first, in order; each must succeed.
    pub setup: Vec<Request>,
    /// Run `gc(TABLE, at)` after the setup.
    pub gc_at: Option<Timestamp>,
    /// The request under test.
    pub request: Request,
    /// What the request must give.
    pub expect: Expectation,
    /// A read run afterwards, e.g. to prove a failed write applied nothing.
    pub check: Option<PostCheck>,
    /// Why the emulator answers differently, if it does (`spec/bigtable.md` 14).
    pub emulator_deviation: Option<&'static str>,
}

/// A read run after the request, and the rows it must return.
#[derive(Clone, Debug)]
pub struct PostCheck {
    /// The read.
    pub read: ReadRowsRequest,
    /// Its rows (compared after [`normalize_rows`]).
    pub rows: Vec<Row>,
}

/// What the request under test must give.
#[derive(Clone, Debug, PartialEq)]
pub enum Expectation {
    /// ReadRows: exactly these rows in this order.
    Rows(Vec<Row>),
    /// ReadRows with `row_sample_filter`: each returned row is one of these, in this order
    /// (which rows depends on the store's seed).
    RowsSubsetOf(Vec<Row>),
    /// MutateRow succeeded.
    Applied,
    /// CheckAndMutateRow succeeded with this `predicate_matched`.
    PredicateMatched(bool),
    /// ReadModifyWriteRow succeeded with this row (one cell per modified column).
    ModifiedRow(Row),
    /// MutateRows succeeded; the status code of each entry, in index order.
    EntryCodes(Vec<Code>),
    /// SampleRowKeys succeeded with these `(row_key, offset_bytes)` samples.
    Samples(Vec<(Vec<u8>, i64)>),
    /// The request failed with this code.
    Error(Code),
    /// The request failed with this code and a message containing the text.
    ErrorContaining(Code, &'static str),
    /// Creating the table failed with this code (nothing else runs).
    CreateTableError(Code),
}

/// What a runner observed for the request under test.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// ReadRows rows, as merged from the chunk stream.
    Rows(Vec<Row>),
    /// MutateRow succeeded.
    Applied,
    /// CheckAndMutateRow's answer.
    PredicateMatched(bool),
    /// ReadModifyWriteRow's row.
    ModifiedRow(Row),
    /// MutateRows entry codes in index order.
    EntryCodes(Vec<Code>),
    /// SampleRowKeys samples.
    Samples(Vec<(Vec<u8>, i64)>),
    /// The request failed.
    Error(StoreError),
    /// Creating the table failed.
    CreateTableError(StoreError),
}

impl Outcome {
    /// The outcome of a unary request (MutateRow, CheckAndMutateRow, ReadModifyWriteRow).
    pub fn from_unary(reply: Result<Response, StoreError>) -> Outcome {
        match reply {
            Ok(Response::MutateRow) => Outcome::Applied,
            Ok(Response::CheckAndMutateRow { predicate_matched }) => {
                Outcome::PredicateMatched(predicate_matched)
            }
            Ok(Response::ReadModifyWriteRow(row)) => Outcome::ModifiedRow(row),
            Ok(other) => Outcome::Error(StoreError::new(
                Code::Internal,
                format!("unexpected unary response {other:?}"),
            )),
            Err(e) => Outcome::Error(e),
        }
    }

    /// The outcome of a MutateRows or SampleRowKeys stream, from all its parts.
    pub fn from_parts(parts: Result<Vec<Response>, StoreError>) -> Outcome {
        let parts = match parts {
            Ok(p) => p,
            Err(e) => return Outcome::Error(e),
        };
        let mut entries = Vec::new();
        let mut samples = Vec::new();
        for part in parts {
            match part {
                Response::MutateRowsPart(p) => entries.extend(p.entries),
                Response::SampleRowKeysPart(s) => samples.push((s.row_key, s.offset_bytes)),
                Response::StreamEnd => {}
                other => {
                    return Outcome::Error(StoreError::new(
                        Code::Internal,
                        format!("unexpected stream part {other:?}"),
                    ));
                }
            }
        }
        if samples.is_empty() {
            entries.sort_by_key(|e| e.index);
            Outcome::EntryCodes(
                entries
                    .into_iter()
                    .map(|e| e.result.err().map_or(Code::Ok, |e| e.code))
                    .collect(),
            )
        } else {
            Outcome::Samples(samples)
        }
    }
}

/// Rows with their cells in a total order: canonical order, then labels, then value. Backends
/// may order families and duplicate cells differently (`spec/bigtable.md` 2); comparisons
/// across backends go through this.
pub fn normalize_rows(rows: &[Row]) -> Vec<Row> {
    rows.iter()
        .map(|r| {
            let mut cells = r.cells.clone();
            cells.sort_by(|a, b| {
                rowkit_codec::model::compare_canonical(a, b)
                    .then_with(|| a.labels.cmp(&b.labels))
                    .then_with(|| a.value.cmp(&b.value))
            });
            Row {
                key: r.key.clone(),
                cells,
            }
        })
        .collect()
}

/// Compares rows after [`normalize_rows`]; the message shows both sides, values abridged.
pub fn compare_rows(expected: &[Row], actual: &[Row]) -> Result<(), String> {
    if normalize_rows(expected) == normalize_rows(actual) {
        Ok(())
    } else {
        Err(format!(
            "rows differ\n  expected: {}\n  actual:   {}",
            show_rows(expected),
            show_rows(actual)
        ))
    }
}

fn show_rows(rows: &[Row]) -> String {
    let esc = |b: &[u8]| -> String {
        let shown: Vec<u8> = b.iter().copied().take(24).collect();
        let mut s = String::from_utf8_lossy(&shown).escape_debug().to_string();
        if b.len() > 24 {
            s.push_str(&format!("..({} bytes)", b.len()));
        }
        s
    };
    let rows: Vec<String> = rows
        .iter()
        .map(|r| {
            let cells: Vec<String> = r
                .cells
                .iter()
                .map(|c| {
                    format!(
                        "{}:{}@{}={}{}",
                        c.family,
                        esc(&c.qualifier),
                        c.timestamp.0,
                        esc(&c.value),
                        if c.labels.is_empty() {
                            String::new()
                        } else {
                            format!("{:?}", c.labels)
                        }
                    )
                })
                .collect();
            format!("{} [{}]", esc(&r.key), cells.join(", "))
        })
        .collect();
    format!("[{}]", rows.join("; "))
}

impl Expectation {
    /// Whether `outcome` is what this expectation asks for; `Err` explains the difference.
    pub fn check(&self, outcome: &Outcome) -> Result<(), String> {
        let mismatch = || Err(format!("expected {self:?}\n  got {outcome:?}"));
        match (self, outcome) {
            (Expectation::Rows(e), Outcome::Rows(a)) => compare_rows(e, a),
            (Expectation::RowsSubsetOf(pool), Outcome::Rows(a)) => {
                let pool = normalize_rows(pool);
                let mut rest = pool.iter();
                for row in normalize_rows(a) {
                    if !rest.any(|p| *p == row) {
                        return Err(format!(
                            "row {:?} is not in the expected pool (or out of order)",
                            String::from_utf8_lossy(&row.key)
                        ));
                    }
                }
                Ok(())
            }
            (Expectation::Applied, Outcome::Applied) => Ok(()),
            (Expectation::PredicateMatched(e), Outcome::PredicateMatched(a)) if e == a => Ok(()),
            (Expectation::ModifiedRow(e), Outcome::ModifiedRow(a)) => {
                compare_rows(std::slice::from_ref(e), std::slice::from_ref(a))
            }
            (Expectation::EntryCodes(e), Outcome::EntryCodes(a)) if e == a => Ok(()),
            (Expectation::Samples(e), Outcome::Samples(a)) if e == a => Ok(()),
            (Expectation::Error(code), Outcome::Error(e)) if e.code == *code => Ok(()),
            (Expectation::ErrorContaining(code, text), Outcome::Error(e))
                if e.code == *code && e.message.contains(text) =>
            {
                Ok(())
            }
            (Expectation::CreateTableError(code), Outcome::CreateTableError(e))
                if e.code == *code =>
            {
                Ok(())
            }
            _ => mismatch(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Builders

fn ms(ms: i64) -> Timestamp {
    Timestamp::from_millis(ms)
}

fn cell(family: &str, qualifier: &[u8], ms: i64, value: &[u8]) -> Cell {
    Cell {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        timestamp: Timestamp::from_millis(ms),
        value: value.to_vec(),
        labels: Vec::new(),
    }
}

fn cell_at(family: &str, qualifier: &[u8], ts: Timestamp, value: &[u8]) -> Cell {
    Cell {
        timestamp: ts,
        ..cell(family, qualifier, 0, value)
    }
}

fn label(mut c: Cell, l: &str) -> Cell {
    c.labels = vec![l.to_string()];
    c
}

fn strip(mut c: Cell) -> Cell {
    c.value.clear();
    c
}

fn row(key: &[u8], cells: Vec<Cell>) -> Row {
    Row {
        key: key.to_vec(),
        cells,
    }
}

fn set(family: &str, qualifier: &[u8], ms: i64, value: &[u8]) -> Mutation {
    set_at(family, qualifier, Timestamp::from_millis(ms), value)
}

fn set_at(family: &str, qualifier: &[u8], timestamp: Timestamp, value: &[u8]) -> Mutation {
    Mutation::SetCell {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        timestamp,
        value: value.to_vec(),
    }
}

fn del_column(family: &str, qualifier: &[u8], range: Option<(i64, i64)>) -> Mutation {
    Mutation::DeleteFromColumn {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        range: range.map(|(start, end)| TimestampRange { start, end }),
    }
}

fn mutate(key: &[u8], mutations: Vec<Mutation>) -> Request {
    Request::MutateRow(MutateRowRequest {
        table: TABLE.into(),
        row_key: key.to_vec(),
        mutations,
        ..Default::default()
    })
}

fn mutate_rows(entries: Vec<(&[u8], Vec<Mutation>)>) -> Request {
    Request::MutateRows(MutateRowsRequest {
        table: TABLE.into(),
        entries: entries
            .into_iter()
            .map(|(k, m)| MutateRowsEntry {
                row_key: k.to_vec(),
                mutations: m,
            })
            .collect(),
        ..Default::default()
    })
}

fn check_and_mutate(
    key: &[u8],
    predicate: Option<RowFilter>,
    true_mutations: Vec<Mutation>,
    false_mutations: Vec<Mutation>,
) -> Request {
    Request::CheckAndMutateRow(CheckAndMutateRowRequest {
        table: TABLE.into(),
        row_key: key.to_vec(),
        predicate,
        true_mutations,
        false_mutations,
        ..Default::default()
    })
}

fn rmw(key: &[u8], rules: Vec<ReadModifyWriteRule>) -> Request {
    Request::ReadModifyWriteRow(ReadModifyWriteRowRequest {
        table: TABLE.into(),
        row_key: key.to_vec(),
        rules,
        ..Default::default()
    })
}

fn append(family: &str, qualifier: &[u8], value: &[u8]) -> ReadModifyWriteRule {
    ReadModifyWriteRule {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        op: RuleOp::AppendValue(value.to_vec()),
    }
}

fn increment(family: &str, qualifier: &[u8], amount: i64) -> ReadModifyWriteRule {
    ReadModifyWriteRule {
        family: family.into(),
        qualifier: qualifier.to_vec(),
        op: RuleOp::IncrementAmount(amount),
    }
}

fn read_req(rows: RowSet, filter: Option<RowFilter>) -> ReadRowsRequest {
    ReadRowsRequest {
        table: TABLE.into(),
        rows,
        filter,
        ..Default::default()
    }
}

fn read(filter: Option<RowFilter>) -> Request {
    Request::ReadRows(read_req(RowSet::all(), filter))
}

fn read_rows(req: ReadRowsRequest) -> Request {
    Request::ReadRows(req)
}

fn closed(k: &[u8]) -> KeyBound {
    KeyBound::Closed(k.to_vec())
}

fn open(k: &[u8]) -> KeyBound {
    KeyBound::Open(k.to_vec())
}

fn families(names: &[&str]) -> Vec<ColumnFamily> {
    names.iter().map(|n| ColumnFamily::new(*n)).collect()
}

fn qual_regex(p: &[u8]) -> RowFilter {
    RowFilter::ColumnQualifierRegex(p.to_vec())
}

fn lbl(l: &str) -> RowFilter {
    RowFilter::ApplyLabel(l.into())
}

fn cond(
    predicate: Option<RowFilter>,
    true_filter: Option<RowFilter>,
    false_filter: Option<RowFilter>,
) -> RowFilter {
    RowFilter::Condition {
        predicate: predicate.map(Box::new),
        true_filter: true_filter.map(Box::new),
        false_filter: false_filter.map(Box::new),
    }
}

impl SemanticsCase {
    /// A case on the standard families `cf1`, `cf2` at [`SUITE_NOW`] with no setup.
    fn new(
        category: Category,
        name: &'static str,
        request: Request,
        expect: Expectation,
    ) -> SemanticsCase {
        SemanticsCase {
            name,
            category,
            families: families(&["cf1", "cf2"]),
            now: SUITE_NOW,
            setup: Vec::new(),
            gc_at: None,
            request,
            expect,
            check: None,
            emulator_deviation: None,
        }
    }

    fn with_setup(mut self, requests: Vec<Request>) -> SemanticsCase {
        self.setup = requests;
        self
    }

    /// Adds the standard fixture ([`fixture_setup`]) to the setup.
    fn on_fixture(mut self) -> SemanticsCase {
        self.setup = fixture_setup();
        self
    }

    fn with_families(mut self, families: Vec<ColumnFamily>) -> SemanticsCase {
        self.families = families;
        self
    }

    fn with_check(mut self, read: ReadRowsRequest, rows: Vec<Row>) -> SemanticsCase {
        self.check = Some(PostCheck { read, rows });
        self
    }

    /// Post-check: the whole table must hold exactly `rows`.
    fn table_holds(self, rows: Vec<Row>) -> SemanticsCase {
        self.with_check(read_req(RowSet::all(), None), rows)
    }

    fn deviation(mut self, why: &'static str) -> SemanticsCase {
        self.emulator_deviation = Some(why);
        self
    }

    fn with_gc_at(mut self, at: Timestamp) -> SemanticsCase {
        self.gc_at = Some(at);
        self
    }
}

// ---------------------------------------------------------------------------------------------
// The standard fixture

/// The standard fixture: three rows over `cf1` and `cf2`.
///
/// - `r1`: `cf1:a@3=v3`, `cf1:a@2=v2`, `cf1:a@1=v1`, `cf1:b@1=b1-bee`, `cf2:c@5=c5 is longer`
/// - `r2`: `cf1:a@1=w`, `cf2:d@2=\x00\xff`
/// - `r3`: `cf2:c@4=` (empty value)
///
/// (timestamps in milliseconds).
pub fn fixture() -> Vec<Row> {
    vec![
        row(
            b"r1",
            vec![
                cell("cf1", b"a", 3, b"v3"),
                cell("cf1", b"a", 2, b"v2"),
                cell("cf1", b"a", 1, b"v1"),
                cell("cf1", b"b", 1, b"b1-bee"),
                cell("cf2", b"c", 5, b"c5 is longer"),
            ],
        ),
        row(
            b"r2",
            vec![
                cell("cf1", b"a", 1, b"w"),
                cell("cf2", b"d", 2, b"\x00\xff"),
            ],
        ),
        row(b"r3", vec![cell("cf2", b"c", 4, b"")]),
    ]
}

/// The setup requests that write [`fixture`] (cells written out of order on purpose).
pub fn fixture_setup() -> Vec<Request> {
    fixture()
        .into_iter()
        .map(|r| {
            let mut mutations: Vec<Mutation> = r
                .cells
                .iter()
                .map(|c| set_at(&c.family, &c.qualifier, c.timestamp, &c.value))
                .collect();
            mutations.reverse();
            mutate(&r.key, mutations)
        })
        .collect()
}

/// The fixture keeping, per row, the cells `keep` accepts; rows left empty are dropped.
fn fixture_where(keep: impl Fn(&[u8], &Cell) -> bool) -> Vec<Row> {
    fixture()
        .into_iter()
        .filter_map(|r| {
            let cells: Vec<Cell> = r
                .cells
                .iter()
                .filter(|c| keep(&r.key, c))
                .cloned()
                .collect();
            (!cells.is_empty()).then(|| row(&r.key, cells))
        })
        .collect()
}

/// The fixture with every cell mapped.
fn fixture_map(f: impl Fn(Cell) -> Cell) -> Vec<Row> {
    fixture()
        .into_iter()
        .map(|r| row(&r.key, r.cells.into_iter().map(&f).collect()))
        .collect()
}

fn fixture_rows(keys: &[&[u8]]) -> Vec<Row> {
    fixture_where(|k, _| keys.contains(&k))
}

// ---------------------------------------------------------------------------------------------
// Emulator deviations (`spec/bigtable.md` 14)

const DEV_FAMILY_ORDER_LIMIT: &str = "cells_per_row_* over several families: the emulator iterates families in Go map order (nondeterministic)";
const DEV_SINK: &str = "sink is not implemented by the emulator (treated as pass-all)";
const DEV_STRIP_LABELS: &str = "the emulator's strip_value_transformer drops labels";
const DEV_LAZY_FILTER: &str =
    "the emulator validates filters lazily, per row: an empty table accepts an invalid filter";
const DEV_FILTER_UNCHECKED: &str = "the emulator does not check filter size or depth";
const DEV_LABEL: &str = "the emulator checks labels with an unanchored regex";
const DEV_ROW_KEY: &str = "the emulator accepts row keys over 4 KiB";
const DEV_MUTATION_COUNT: &str = "the emulator accepts more than 100000 mutations";
const DEV_SIZES: &str = "the emulator does not check qualifier, value or row sizes";
const DEV_TIMESTAMP: &str = "the emulator answers UNKNOWN \"invalid timestamp\"";
const DEV_UNKNOWN_FAMILY: &str = "the emulator answers UNKNOWN (MutateRow) or per-entry INTERNAL (MutateRows) \"unknown family\"";
const DEV_BATCH: &str = "the emulator answers per-entry INTERNAL for an unknown family and does not check qualifier sizes";
const DEV_DELETE_FAMILY: &str = "the emulator does not check the family of DeleteFromFamily";
const DEV_BOTH_EMPTY: &str =
    "the emulator accepts CheckAndMutateRow with both lists empty and answers true";
const DEV_INCREMENT: &str = "the emulator answers UNKNOWN \"increment on non-64-bit value\"";
const DEV_SAMPLES: &str = "the emulator samples about 1% of rows at random";
const DEV_GC: &str = "the emulator garbage-collects asynchronously every 0.5-1.5 s; only local stores assert post-gc state";
const DEV_GC_INTERSECTION: &str =
    "the emulator garbage-collects asynchronously and ignores intersection rules";
const DEV_ROWKIT_RULE: &str = "a rowkit validator rule where Google is silent (spec/bigtable.md 9, 10.3); the emulator may accept the request";
const DEV_EMPTY_RANGE: &str =
    "an empty-by-construction range: rowkit answers no rows, production may reject it";
const DEV_FILTER_UP_FRONT: &str =
    "the emulator does not validate filters up front (sink inside a condition is accepted)";
const DEV_CHAIN_LABELS: &str = "the emulator does not check the one-label-per-chain rule";
const DEV_DELETE_RANGE: &str = "the emulator does not check DeleteFromColumn time ranges";
const DEV_RMW_REQUEST: &str =
    "the emulator accepts a ReadModifyWriteRow without rules or with an empty row key";
const DEV_FAMILY_COUNT: &str = "the emulator does not limit the number of families";
const DEV_UNVERIFIED_ADMIN: &str = "admin validation of the emulator not verified for this input";

// ---------------------------------------------------------------------------------------------
// The cases

/// Every case of the suite, in a stable order with unique names.
pub fn cases() -> Vec<SemanticsCase> {
    let mut all = Vec::new();
    all.extend(filter_cases());
    all.extend(filter_validation_cases());
    all.extend(mutation_cases());
    all.extend(mutate_rows_cases());
    all.extend(check_and_mutate_cases());
    all.extend(read_modify_write_cases());
    all.extend(row_set_cases());
    all.extend(sample_cases());
    all.extend(gc_cases());
    all.extend(limit_cases());
    all.extend(admin_cases());
    all
}

fn filter_cases() -> Vec<SemanticsCase> {
    use Category::Filter as F;
    use Expectation::Rows;
    let c = |name, filter: Option<RowFilter>, rows: Vec<Row>| {
        SemanticsCase::new(F, name, read(filter), Rows(rows)).on_fixture()
    };
    let f = |name, filter: RowFilter, rows: Vec<Row>| c(name, Some(filter), rows);
    let qualifier_rows = || {
        vec![mutate(
            b"q",
            vec![
                set("cf1", b"q", 1, b"1"),
                set("cf1", b"q\n", 1, b"2"),
                set("cf1", b"qx", 1, b"3"),
            ],
        )]
    };
    let qualifier_case = |name, pattern: &[u8], quals: &[&[u8]]| {
        let all = [(&b"q"[..], &b"1"[..]), (b"q\n", b"2"), (b"qx", b"3")];
        let cells: Vec<Cell> = all
            .iter()
            .filter(|(q, _)| quals.contains(q))
            .map(|(q, v)| cell("cf1", q, 1, v))
            .collect();
        let rows = if cells.is_empty() {
            vec![]
        } else {
            vec![row(b"q", cells)]
        };
        SemanticsCase::new(F, name, read(Some(qual_regex(pattern))), Rows(rows))
            .with_setup(qualifier_rows())
    };
    vec![
        c("filter/unset returns every cell", None, fixture()),
        f("filter/pass_all", RowFilter::PassAll, fixture()),
        f(
            "filter/block_all omits every row",
            RowFilter::BlockAll,
            vec![],
        ),
        f(
            "filter/sink alone returns its input",
            RowFilter::Sink,
            fixture(),
        ),
        f(
            "filter/row_key_regex",
            RowFilter::RowKeyRegex(b"r[12]".to_vec()),
            fixture_rows(&[b"r1", b"r2"]),
        ),
        f(
            "filter/row_key_regex is a full match",
            RowFilter::RowKeyRegex(b"r".to_vec()),
            vec![],
        ),
        SemanticsCase::new(
            F,
            "filter/row_sample returns a subset",
            read(Some(RowFilter::RowSample(0.5))),
            Expectation::RowsSubsetOf(fixture()),
        )
        .on_fixture(),
        f(
            "filter/family_name_regex",
            RowFilter::FamilyNameRegex("cf2".into()),
            fixture_where(|_, c| c.family == "cf2"),
        ),
        f(
            "filter/family_name_regex is a full match",
            RowFilter::FamilyNameRegex("cf".into()),
            vec![],
        ),
        f(
            "filter/column_qualifier_regex",
            qual_regex(b"a"),
            fixture_where(|_, c| c.qualifier == b"a"),
        ),
        qualifier_case("filter/regex q matches q only", b"q", &[b"q"]),
        qualifier_case("filter/regex dot excludes newline", b"q.", &[b"qx"]),
        qualifier_case(
            "filter/regex \\C matches any byte",
            b"q\\C",
            &[b"q\n", b"qx"],
        ),
        f(
            "filter/value_regex raw bytes",
            RowFilter::ValueRegex(b".\xff".to_vec()),
            fixture_where(|_, c| c.value == b"\x00\xff"),
        ),
        f(
            "filter/value_regex class",
            RowFilter::ValueRegex(b"[v][0-9]".to_vec()),
            fixture_where(|_, c| c.value.starts_with(b"v")),
        ),
        f(
            "filter/column_range closed-open",
            RowFilter::ColumnRange {
                family: "cf1".into(),
                start: closed(b"a"),
                end: open(b"b"),
            },
            fixture_where(|_, c| c.family == "cf1" && c.qualifier == b"a"),
        ),
        f(
            "filter/column_range open start, unbounded end",
            RowFilter::ColumnRange {
                family: "cf1".into(),
                start: open(b"a"),
                end: KeyBound::Unbounded,
            },
            fixture_where(|_, c| c.family == "cf1" && c.qualifier == b"b"),
        ),
        f(
            "filter/column_range closed end, exact family",
            RowFilter::ColumnRange {
                family: "cf2".into(),
                start: KeyBound::Unbounded,
                end: closed(b"c"),
            },
            fixture_where(|_, c| c.family == "cf2" && c.qualifier == b"c"),
        ),
        f(
            "filter/timestamp_range half open",
            RowFilter::TimestampRange(TimestampRange {
                start: 2000,
                end: 3000,
            }),
            fixture_where(|_, c| c.timestamp == ms(2)),
        ),
        f(
            "filter/timestamp_range end 0 is infinity",
            RowFilter::TimestampRange(TimestampRange {
                start: 4000,
                end: 0,
            }),
            fixture_where(|_, c| c.timestamp >= ms(4)),
        ),
        f(
            "filter/value_range closed",
            RowFilter::ValueRange {
                start: closed(b"b1"),
                end: closed(b"v2"),
            },
            fixture_where(|_, c| {
                c.value.as_slice() >= b"b1".as_slice() && c.value.as_slice() <= b"v2".as_slice()
            }),
        ),
        f(
            "filter/value_range open",
            RowFilter::ValueRange {
                start: open(b""),
                end: open(b"c5"),
            },
            fixture_where(|_, c| !c.value.is_empty() && c.value.as_slice() < b"c5".as_slice()),
        ),
        f(
            "filter/cells_per_row_offset",
            RowFilter::CellsPerRowOffset(2),
            vec![row(
                b"r1",
                vec![
                    cell("cf1", b"a", 1, b"v1"),
                    cell("cf1", b"b", 1, b"b1-bee"),
                    cell("cf2", b"c", 5, b"c5 is longer"),
                ],
            )],
        )
        .deviation(DEV_FAMILY_ORDER_LIMIT),
        f(
            "filter/cells_per_row_limit",
            RowFilter::CellsPerRowLimit(2),
            vec![
                row(
                    b"r1",
                    vec![cell("cf1", b"a", 3, b"v3"), cell("cf1", b"a", 2, b"v2")],
                ),
                fixture_rows(&[b"r2"]).remove(0),
                fixture_rows(&[b"r3"]).remove(0),
            ],
        )
        .deviation(DEV_FAMILY_ORDER_LIMIT),
        f(
            "filter/cells_per_column_limit keeps the newest",
            RowFilter::CellsPerColumnLimit(1),
            fixture_where(|_, c| c.qualifier != b"a" || c.timestamp == ms(3) || c.value == b"w"),
        ),
        f(
            "filter/strip_value",
            RowFilter::StripValue,
            fixture_map(strip),
        ),
        f(
            "filter/apply_label",
            lbl("lbl"),
            fixture_map(|c| label(c, "lbl")),
        ),
        f(
            "filter/strip_value keeps labels",
            RowFilter::Chain(vec![lbl("lbl"), RowFilter::StripValue]),
            fixture_map(|c| strip(label(c, "lbl"))),
        )
        .deviation(DEV_STRIP_LABELS),
        f(
            "filter/chain",
            RowFilter::Chain(vec![
                RowFilter::FamilyNameRegex("cf1".into()),
                qual_regex(b"b"),
            ]),
            fixture_where(|_, c| c.family == "cf1" && c.qualifier == b"b"),
        ),
        f(
            "filter/chain stops at an empty intermediate result",
            RowFilter::Chain(vec![RowFilter::BlockAll, RowFilter::Sink]),
            vec![],
        ),
        f(
            "filter/interleave keeps duplicates",
            RowFilter::Chain(vec![
                RowFilter::RowKeyRegex(b"r2".to_vec()),
                RowFilter::Interleave(vec![RowFilter::PassAll, RowFilter::PassAll]),
            ]),
            vec![row(
                b"r2",
                vec![
                    cell("cf1", b"a", 1, b"w"),
                    cell("cf1", b"a", 1, b"w"),
                    cell("cf2", b"d", 2, b"\x00\xff"),
                    cell("cf2", b"d", 2, b"\x00\xff"),
                ],
            )],
        ),
        f(
            "filter/interleave labelled and unlabelled copies",
            RowFilter::Chain(vec![
                RowFilter::RowKeyRegex(b"r2".to_vec()),
                RowFilter::Interleave(vec![lbl("x"), RowFilter::PassAll]),
            ]),
            vec![row(
                b"r2",
                vec![
                    label(cell("cf1", b"a", 1, b"w"), "x"),
                    cell("cf1", b"a", 1, b"w"),
                    label(cell("cf2", b"d", 2, b"\x00\xff"), "x"),
                    cell("cf2", b"d", 2, b"\x00\xff"),
                ],
            )],
        ),
        f(
            "filter/interleave output is in canonical order",
            RowFilter::Chain(vec![
                RowFilter::RowKeyRegex(b"r1".to_vec()),
                RowFilter::Interleave(vec![
                    RowFilter::FamilyNameRegex("cf2".into()),
                    qual_regex(b"a"),
                ]),
            ]),
            fixture_where(|k, c| k == b"r1" && (c.family == "cf2" || c.qualifier == b"a")),
        ),
        f(
            "filter/condition chooses per row",
            cond(
                Some(qual_regex(b"b")),
                Some(RowFilter::StripValue),
                Some(lbl("no")),
            ),
            vec![
                fixture_map(strip).remove(0),
                fixture_map(|c| label(c, "no")).remove(1),
                fixture_map(|c| label(c, "no")).remove(2),
            ],
        ),
        f(
            "filter/condition missing false branch yields nothing",
            cond(Some(qual_regex(b"b")), Some(RowFilter::PassAll), None),
            fixture_rows(&[b"r1"]),
        ),
        f(
            "filter/condition missing true branch yields nothing",
            cond(Some(qual_regex(b"b")), None, Some(RowFilter::PassAll)),
            fixture_rows(&[b"r2", b"r3"]),
        ),
        f(
            "filter/condition missing predicate passes all",
            cond(None, Some(lbl("t")), Some(lbl("f"))),
            fixture_map(|c| label(c, "t")),
        ),
        f(
            "filter/condition branch filters the whole input",
            cond(
                Some(RowFilter::ValueRegex(b"c5.*".to_vec())),
                Some(RowFilter::FamilyNameRegex("cf1".into())),
                Some(RowFilter::BlockAll),
            ),
            fixture_where(|k, c| k == b"r1" && c.family == "cf1"),
        ),
        SemanticsCase::new(
            F,
            "filter/sink worked example (data.proto)",
            read(Some(RowFilter::Chain(vec![
                RowFilter::FamilyNameRegex("A".into()),
                RowFilter::Interleave(vec![
                    RowFilter::PassAll,
                    RowFilter::Chain(vec![lbl("foo"), RowFilter::Sink]),
                ]),
                qual_regex(b"B"),
            ]))),
            Rows(vec![row(
                b"r",
                vec![
                    label(cell("A", b"A", 1, b"w"), "foo"),
                    cell("A", b"B", 2, b"x"),
                    label(cell("A", b"B", 2, b"x"), "foo"),
                ],
            )]),
        )
        .with_families(families(&["A", "B"]))
        .with_setup(vec![mutate(
            b"r",
            vec![
                set("A", b"A", 1, b"w"),
                set("A", b"B", 2, b"x"),
                set("B", b"B", 4, b"z"),
            ],
        )])
        .deviation(DEV_SINK),
        f(
            "filter/sink bypasses a blocking parent",
            RowFilter::Chain(vec![
                RowFilter::Interleave(vec![
                    RowFilter::Chain(vec![qual_regex(b"b"), lbl("s"), RowFilter::Sink]),
                    RowFilter::PassAll,
                ]),
                RowFilter::BlockAll,
            ]),
            vec![row(
                b"r1",
                vec![label(cell("cf1", b"b", 1, b"b1-bee"), "s")],
            )],
        )
        .deviation(DEV_SINK),
        f(
            "filter/interleave may hold several labels",
            RowFilter::Chain(vec![
                RowFilter::RowKeyRegex(b"r3".to_vec()),
                RowFilter::Interleave(vec![lbl("one"), lbl("two")]),
            ]),
            vec![row(
                b"r3",
                vec![
                    label(cell("cf2", b"c", 4, b""), "one"),
                    label(cell("cf2", b"c", 4, b""), "two"),
                ],
            )],
        ),
    ]
}

fn filter_validation_cases() -> Vec<SemanticsCase> {
    use Category::FilterValidation as V;
    let bad = |name, filter: RowFilter| {
        SemanticsCase::new(
            V,
            name,
            read(Some(filter)),
            Expectation::Error(Code::InvalidArgument),
        )
        .on_fixture()
    };
    vec![
        bad(
            "filter-invalid/chain of one",
            RowFilter::Chain(vec![RowFilter::PassAll]),
        ),
        bad(
            "filter-invalid/interleave of one",
            RowFilter::Interleave(vec![RowFilter::PassAll]),
        ),
        bad(
            "filter-invalid/sink inside a condition",
            cond(Some(RowFilter::Sink), Some(RowFilter::PassAll), None),
        )
        .deviation(DEV_FILTER_UP_FRONT),
        bad(
            "filter-invalid/two labels in one chain",
            RowFilter::Chain(vec![
                lbl("a"),
                RowFilter::Chain(vec![RowFilter::PassAll, lbl("b")]),
            ]),
        )
        .deviation(DEV_CHAIN_LABELS),
        SemanticsCase::new(
            V,
            "filter-invalid/regex compile error names the field",
            read(Some(qual_regex(b"("))),
            Expectation::ErrorContaining(Code::InvalidArgument, "column_qualifier_regex_filter"),
        )
        .on_fixture(),
        SemanticsCase::new(
            V,
            "filter-invalid/regex rejected even on an empty table",
            read(Some(RowFilter::ValueRegex(b"a(".to_vec()))),
            Expectation::ErrorContaining(Code::InvalidArgument, "value_regex_filter"),
        )
        .deviation(DEV_LAZY_FILTER),
        bad(
            "filter-invalid/re2 rejects the x flag",
            RowFilter::ValueRegex(b"(?x)a".to_vec()),
        ),
        bad(
            "filter-invalid/empty row_key_regex",
            RowFilter::RowKeyRegex(Vec::new()),
        ),
        bad(
            "filter-invalid/family regex with a colon",
            RowFilter::FamilyNameRegex("cf1:a".into()),
        )
        .deviation(DEV_ROWKIT_RULE),
        bad("filter-invalid/row_sample of 1", RowFilter::RowSample(1.0)),
        bad("filter-invalid/row_sample of 0", RowFilter::RowSample(0.0)),
        bad(
            "filter-invalid/cells_per_row_limit 0",
            RowFilter::CellsPerRowLimit(0),
        ),
        bad(
            "filter-invalid/cells_per_row_offset -1",
            RowFilter::CellsPerRowOffset(-1),
        )
        .deviation(DEV_ROWKIT_RULE),
        bad(
            "filter-invalid/cells_per_column_limit 0",
            RowFilter::CellsPerColumnLimit(0),
        ),
        bad(
            "filter-invalid/inverted column_range",
            RowFilter::ColumnRange {
                family: "cf1".into(),
                start: closed(b"b"),
                end: closed(b"a"),
            },
        )
        .deviation(DEV_ROWKIT_RULE),
        bad(
            "filter-invalid/inverted value_range",
            RowFilter::ValueRange {
                start: open(b"z"),
                end: open(b"a"),
            },
        )
        .deviation(DEV_ROWKIT_RULE),
        bad(
            "filter-invalid/negative timestamp_range",
            RowFilter::TimestampRange(TimestampRange {
                start: -1000,
                end: 0,
            }),
        )
        .deviation(DEV_ROWKIT_RULE),
        bad(
            "filter-invalid/inverted timestamp_range",
            RowFilter::TimestampRange(TimestampRange {
                start: 3000,
                end: 2000,
            }),
        )
        .deviation(DEV_ROWKIT_RULE),
    ]
}

fn mutation_cases() -> Vec<SemanticsCase> {
    use Category::Mutation as M;
    use Expectation::{Applied, Error, ErrorContaining};
    let three_versions = || {
        mutate(
            b"r",
            vec![
                set("cf1", b"a", 1, b"one"),
                set("cf1", b"a", 2, b"two"),
                set("cf1", b"a", 3, b"three"),
                set("cf1", b"b", 1, b"bee"),
            ],
        )
    };
    vec![
        SemanticsCase::new(
            M,
            "mutation/set_cell",
            mutate(b"r", vec![set("cf1", b"q", 1, b"v")]),
            Applied,
        )
        .table_holds(vec![row(b"r", vec![cell("cf1", b"q", 1, b"v")])]),
        SemanticsCase::new(
            M,
            "mutation/same timestamp overwrites",
            mutate(b"r", vec![set("cf1", b"q", 1, b"new")]),
            Applied,
        )
        .with_setup(vec![mutate(b"r", vec![set("cf1", b"q", 1, b"old")])])
        .table_holds(vec![row(b"r", vec![cell("cf1", b"q", 1, b"new")])]),
        SemanticsCase::new(
            M,
            "mutation/versions come back newest first",
            mutate(
                b"r",
                vec![
                    set("cf1", b"q", 1, b"1"),
                    set("cf1", b"q", 3, b"3"),
                    set("cf1", b"q", 2, b"2"),
                ],
            ),
            Applied,
        )
        .table_holds(vec![row(
            b"r",
            vec![
                cell("cf1", b"q", 3, b"3"),
                cell("cf1", b"q", 2, b"2"),
                cell("cf1", b"q", 1, b"1"),
            ],
        )]),
        SemanticsCase::new(
            M,
            "mutation/server time is now truncated to ms, once per request",
            mutate(
                b"r",
                vec![
                    set_at("cf1", b"a", Timestamp::SERVER_TIME, b"x"),
                    set_at("cf2", b"b", Timestamp::SERVER_TIME, b"y"),
                ],
            ),
            Applied,
        )
        .table_holds(vec![row(
            b"r",
            vec![
                cell_at("cf1", b"a", SUITE_NOW_MS, b"x"),
                cell_at("cf2", b"b", SUITE_NOW_MS, b"y"),
            ],
        )]),
        SemanticsCase::new(
            M,
            "mutation/timestamp 0 is valid",
            mutate(b"r", vec![set_at("cf1", b"q", Timestamp::ZERO, b"v")]),
            Applied,
        )
        .table_holds(vec![row(b"r", vec![cell("cf1", b"q", 0, b"v")])]),
        SemanticsCase::new(
            M,
            "mutation/empty qualifier and value",
            mutate(b"r", vec![set("cf1", b"", 1, b"")]),
            Applied,
        )
        .table_holds(vec![row(b"r", vec![cell("cf1", b"", 1, b"")])]),
        SemanticsCase::new(
            M,
            "mutation/delete_from_column without range",
            mutate(b"r", vec![del_column("cf1", b"a", None)]),
            Applied,
        )
        .with_setup(vec![three_versions()])
        .table_holds(vec![row(b"r", vec![cell("cf1", b"b", 1, b"bee")])]),
        SemanticsCase::new(
            M,
            "mutation/delete_from_column with range",
            mutate(b"r", vec![del_column("cf1", b"a", Some((1000, 3000)))]),
            Applied,
        )
        .with_setup(vec![three_versions()])
        .table_holds(vec![row(
            b"r",
            vec![cell("cf1", b"a", 3, b"three"), cell("cf1", b"b", 1, b"bee")],
        )]),
        SemanticsCase::new(
            M,
            "mutation/delete_from_column range end 0 is infinity",
            mutate(b"r", vec![del_column("cf1", b"a", Some((2000, 0)))]),
            Applied,
        )
        .with_setup(vec![three_versions()])
        .table_holds(vec![row(
            b"r",
            vec![cell("cf1", b"a", 1, b"one"), cell("cf1", b"b", 1, b"bee")],
        )]),
        SemanticsCase::new(
            M,
            "mutation/delete_from_column of an empty column is a no-op",
            mutate(b"r", vec![del_column("cf2", b"none", None)]),
            Applied,
        )
        .with_setup(vec![three_versions()])
        .table_holds(vec![row(
            b"r",
            vec![
                cell("cf1", b"a", 3, b"three"),
                cell("cf1", b"a", 2, b"two"),
                cell("cf1", b"a", 1, b"one"),
                cell("cf1", b"b", 1, b"bee"),
            ],
        )]),
        SemanticsCase::new(
            M,
            "mutation/delete_from_family",
            mutate(
                b"r1",
                vec![Mutation::DeleteFromFamily {
                    family: "cf1".into(),
                }],
            ),
            Applied,
        )
        .on_fixture()
        .table_holds(fixture_where(|k, c| k != b"r1" || c.family != "cf1")),
        SemanticsCase::new(
            M,
            "mutation/delete_from_row",
            mutate(b"r2", vec![Mutation::DeleteFromRow]),
            Applied,
        )
        .on_fixture()
        .table_holds(fixture_rows(&[b"r1", b"r3"])),
        SemanticsCase::new(
            M,
            "mutation/delete_from_row of a missing row",
            mutate(b"nothing", vec![Mutation::DeleteFromRow]),
            Applied,
        )
        .on_fixture()
        .table_holds(fixture()),
        SemanticsCase::new(
            M,
            "mutation/set then delete_from_row leaves no row",
            mutate(
                b"r",
                vec![set("cf1", b"q", 1, b"v"), Mutation::DeleteFromRow],
            ),
            Applied,
        )
        .table_holds(vec![]),
        SemanticsCase::new(
            M,
            "mutation/delete_from_row then set leaves that cell",
            mutate(
                b"r1",
                vec![Mutation::DeleteFromRow, set("cf1", b"q", 1, b"v")],
            ),
            Applied,
        )
        .on_fixture()
        .table_holds(vec![
            row(b"r1", vec![cell("cf1", b"q", 1, b"v")]),
            fixture_rows(&[b"r2"]).remove(0),
            fixture_rows(&[b"r3"]).remove(0),
        ]),
        SemanticsCase::new(
            M,
            "mutation/later mutations mask earlier ones",
            mutate(
                b"r",
                vec![
                    set("cf1", b"a", 1, b"x"),
                    del_column("cf1", b"a", None),
                    set("cf1", b"a", 2, b"y"),
                ],
            ),
            Applied,
        )
        .table_holds(vec![row(b"r", vec![cell("cf1", b"a", 2, b"y")])]),
        SemanticsCase::new(
            M,
            "mutation/unknown family is NOT_FOUND and applies nothing",
            mutate(
                b"r",
                vec![set("cf1", b"q", 1, b"v"), set("nofam", b"q", 1, b"v")],
            ),
            ErrorContaining(Code::NotFound, "Requested column family not found."),
        )
        .table_holds(vec![])
        .deviation(DEV_UNKNOWN_FAMILY),
        SemanticsCase::new(
            M,
            "mutation/delete_from_family of an unknown family",
            mutate(
                b"r1",
                vec![Mutation::DeleteFromFamily {
                    family: "nofam".into(),
                }],
            ),
            Error(Code::NotFound),
        )
        .on_fixture()
        .deviation(DEV_DELETE_FAMILY),
        SemanticsCase::new(
            M,
            "mutation/invalid family name",
            mutate(b"r", vec![set("bad:fam", b"q", 1, b"v")]),
            Error(Code::InvalidArgument),
        )
        .deviation(DEV_UNKNOWN_FAMILY),
        SemanticsCase::new(
            M,
            "mutation/timestamp not a whole millisecond",
            mutate(
                b"r",
                vec![
                    set("cf1", b"ok", 1, b"v"),
                    set_at("cf1", b"q", Timestamp(1_234_567), b"v"),
                ],
            ),
            Error(Code::InvalidArgument),
        )
        .table_holds(vec![])
        .deviation(DEV_TIMESTAMP),
        SemanticsCase::new(
            M,
            "mutation/negative timestamp",
            mutate(b"r", vec![set_at("cf1", b"q", Timestamp(-5), b"v")]),
            Error(Code::InvalidArgument),
        )
        .deviation(DEV_TIMESTAMP),
        SemanticsCase::new(
            M,
            "mutation/negative timestamp -1000",
            mutate(b"r", vec![set_at("cf1", b"q", Timestamp(-1000), b"v")]),
            Error(Code::InvalidArgument),
        )
        .deviation(DEV_TIMESTAMP),
        SemanticsCase::new(
            M,
            "mutation/inverted delete range",
            mutate(b"r", vec![del_column("cf1", b"a", Some((3000, 1000)))]),
            Error(Code::InvalidArgument),
        )
        .deviation(DEV_DELETE_RANGE),
        SemanticsCase::new(
            M,
            "mutation/unaligned delete range",
            mutate(b"r", vec![del_column("cf1", b"a", Some((1500, 3000)))]),
            Error(Code::InvalidArgument),
        )
        .deviation(DEV_TIMESTAMP),
        SemanticsCase::new(
            M,
            "mutation/no mutations",
            mutate(b"r", vec![]),
            Error(Code::InvalidArgument),
        ),
        SemanticsCase::new(
            M,
            "mutation/table not found",
            Request::MutateRow(MutateRowRequest {
                table: "missing".into(),
                row_key: b"r".to_vec(),
                mutations: vec![set("cf1", b"q", 1, b"v")],
                ..Default::default()
            }),
            Error(Code::NotFound),
        ),
    ]
}

fn mutate_rows_cases() -> Vec<SemanticsCase> {
    use Category::MutateRows as B;
    use Expectation::{EntryCodes, Error};
    let long_qualifier = vec![b'q'; limits::MAX_QUALIFIER_BYTES + 1];
    vec![
        SemanticsCase::new(
            B,
            "mutate_rows/per-entry errors do not stop the batch",
            mutate_rows(vec![
                (b"a", vec![set("cf1", b"q", 1, b"ok")]),
                (b"b", vec![set("nofam", b"q", 1, b"v")]),
                (b"", vec![set("cf1", b"q", 1, b"v")]),
                (b"c", vec![]),
                (b"d", vec![set_at("cf1", b"q", Timestamp(1500), b"v")]),
                (b"e", vec![set("cf1", &long_qualifier, 1, b"v")]),
                (b"f", vec![set("cf2", b"q", 1, b"ok")]),
            ]),
            EntryCodes(vec![
                Code::Ok,
                Code::NotFound,
                Code::InvalidArgument,
                Code::InvalidArgument,
                Code::InvalidArgument,
                Code::InvalidArgument,
                Code::Ok,
            ]),
        )
        .table_holds(vec![
            row(b"a", vec![cell("cf1", b"q", 1, b"ok")]),
            row(b"f", vec![cell("cf2", b"q", 1, b"ok")]),
        ])
        .deviation(DEV_BATCH),
        SemanticsCase::new(
            B,
            "mutate_rows/no entries",
            mutate_rows(vec![]),
            Error(Code::InvalidArgument),
        ),
        SemanticsCase::new(
            B,
            "mutate_rows/entries apply in index order",
            mutate_rows(vec![
                (b"r", vec![set("cf1", b"a", 1, b"x")]),
                (b"r", vec![Mutation::DeleteFromRow]),
                (b"r", vec![set("cf1", b"b", 1, b"y")]),
            ]),
            EntryCodes(vec![Code::Ok; 3]),
        )
        .table_holds(vec![row(b"r", vec![cell("cf1", b"b", 1, b"y")])]),
        SemanticsCase::new(
            B,
            "mutate_rows/table not found",
            Request::MutateRows(MutateRowsRequest {
                table: "missing".into(),
                entries: vec![MutateRowsEntry {
                    row_key: b"r".to_vec(),
                    mutations: vec![set("cf1", b"q", 1, b"v")],
                }]
                .into(),
                ..Default::default()
            }),
            Error(Code::NotFound),
        ),
    ]
}

fn check_and_mutate_cases() -> Vec<SemanticsCase> {
    use Category::CheckAndMutate as C;
    use Expectation::{Error, PredicateMatched};
    let t = || vec![set("cf1", b"t", 9, b"true")];
    let f = || vec![set("cf1", b"f", 9, b"false")];
    let with = |key: &[u8], c: Cell| {
        fixture()
            .into_iter()
            .map(|mut r| {
                if r.key == key {
                    r.cells.push(c.clone());
                    r.cells.sort_by(rowkit_codec::model::compare_canonical);
                }
                r
            })
            .collect::<Vec<_>>()
    };
    let true_cell = || cell("cf1", b"t", 9, b"true");
    let false_cell = || cell("cf1", b"f", 9, b"false");
    vec![
        SemanticsCase::new(
            C,
            "check_and_mutate/predicate matches: true mutations",
            check_and_mutate(b"r1", Some(qual_regex(b"b")), t(), f()),
            PredicateMatched(true),
        )
        .on_fixture()
        .table_holds(with(b"r1", true_cell())),
        SemanticsCase::new(
            C,
            "check_and_mutate/predicate fails: false mutations",
            check_and_mutate(b"r2", Some(qual_regex(b"b")), t(), f()),
            PredicateMatched(false),
        )
        .on_fixture()
        .table_holds(with(b"r2", false_cell())),
        SemanticsCase::new(
            C,
            "check_and_mutate/unset predicate on an existing row",
            check_and_mutate(b"r3", None, t(), f()),
            PredicateMatched(true),
        )
        .on_fixture()
        .table_holds(with(b"r3", true_cell())),
        SemanticsCase::new(
            C,
            "check_and_mutate/unset predicate on a missing row",
            check_and_mutate(b"r9", None, t(), f()),
            PredicateMatched(false),
        )
        .on_fixture()
        .table_holds({
            let mut rows = fixture();
            rows.push(row(b"r9", vec![false_cell()]));
            rows
        }),
        SemanticsCase::new(
            C,
            "check_and_mutate/transformer predicate still matches",
            check_and_mutate(b"r3", Some(RowFilter::StripValue), t(), f()),
            PredicateMatched(true),
        )
        .on_fixture(),
        SemanticsCase::new(
            C,
            "check_and_mutate/block_all predicate",
            check_and_mutate(b"r1", Some(RowFilter::BlockAll), t(), f()),
            PredicateMatched(false),
        )
        .on_fixture()
        .table_holds(with(b"r1", false_cell())),
        SemanticsCase::new(
            C,
            "check_and_mutate/sink output counts as a match",
            check_and_mutate(
                b"r1",
                Some(RowFilter::Chain(vec![RowFilter::Sink, RowFilter::BlockAll])),
                t(),
                f(),
            ),
            PredicateMatched(true),
        )
        .on_fixture()
        .deviation(DEV_SINK),
        SemanticsCase::new(
            C,
            "check_and_mutate/chosen list empty writes nothing",
            check_and_mutate(b"r1", Some(qual_regex(b"b")), vec![], f()),
            PredicateMatched(true),
        )
        .on_fixture()
        .table_holds(fixture()),
        SemanticsCase::new(
            C,
            "check_and_mutate/both lists empty",
            check_and_mutate(b"r1", None, vec![], vec![]),
            Error(Code::InvalidArgument),
        )
        .on_fixture()
        .deviation(DEV_BOTH_EMPTY),
        SemanticsCase::new(
            C,
            "check_and_mutate/invalid mutation in the other list",
            check_and_mutate(
                b"r1",
                Some(qual_regex(b"b")),
                t(),
                vec![set_at("cf1", b"q", Timestamp(7), b"v")],
            ),
            Error(Code::InvalidArgument),
        )
        .on_fixture()
        .table_holds(fixture())
        .deviation(DEV_TIMESTAMP),
        SemanticsCase::new(
            C,
            "check_and_mutate/unknown family in the other list",
            check_and_mutate(
                b"r1",
                Some(qual_regex(b"b")),
                t(),
                vec![set("nofam", b"q", 1, b"v")],
            ),
            Error(Code::NotFound),
        )
        .on_fixture()
        .table_holds(fixture())
        .deviation(DEV_UNKNOWN_FAMILY),
        SemanticsCase::new(
            C,
            "check_and_mutate/invalid predicate",
            check_and_mutate(b"r1", Some(RowFilter::CellsPerRowLimit(0)), t(), f()),
            Error(Code::InvalidArgument),
        )
        .on_fixture()
        .table_holds(fixture()),
        SemanticsCase::new(
            C,
            "check_and_mutate/server time in the chosen list",
            check_and_mutate(
                b"r2",
                Some(RowFilter::ValueRegex(b"w".to_vec())),
                vec![set_at("cf1", b"now", Timestamp::SERVER_TIME, b"n")],
                vec![],
            ),
            PredicateMatched(true),
        )
        .on_fixture()
        .with_check(
            read_req(RowSet::key("r2"), None),
            vec![row(
                b"r2",
                vec![
                    cell("cf1", b"a", 1, b"w"),
                    cell_at("cf1", b"now", SUITE_NOW_MS, b"n"),
                    cell("cf2", b"d", 2, b"\x00\xff"),
                ],
            )],
        ),
    ]
}

fn read_modify_write_cases() -> Vec<SemanticsCase> {
    use Category::ReadModifyWrite as W;
    use Expectation::{Error, ModifiedRow};
    let be = |v: i64| v.to_be_bytes().to_vec();
    let now = SUITE_NOW_MS;
    vec![
        SemanticsCase::new(
            W,
            "rmw/append to a missing cell",
            rmw(b"r", vec![append("cf1", b"q", b"abc")]),
            ModifiedRow(row(b"r", vec![cell_at("cf1", b"q", now, b"abc")])),
        )
        .table_holds(vec![row(b"r", vec![cell_at("cf1", b"q", now, b"abc")])]),
        SemanticsCase::new(
            W,
            "rmw/append reads the latest version",
            rmw(b"r", vec![append("cf1", b"q", b"ef")]),
            ModifiedRow(row(b"r", vec![cell_at("cf1", b"q", now, b"cdef")])),
        )
        .with_setup(vec![mutate(
            b"r",
            vec![set("cf1", b"q", 2, b"cd"), set("cf1", b"q", 1, b"ab")],
        )])
        .table_holds(vec![row(
            b"r",
            vec![
                cell_at("cf1", b"q", now, b"cdef"),
                cell("cf1", b"q", 2, b"cd"),
                cell("cf1", b"q", 1, b"ab"),
            ],
        )]),
        SemanticsCase::new(
            W,
            "rmw/increment a missing cell",
            rmw(b"r", vec![increment("cf1", b"n", 5)]),
            ModifiedRow(row(b"r", vec![cell_at("cf1", b"n", now, &be(5))])),
        ),
        SemanticsCase::new(
            W,
            "rmw/increment below zero",
            rmw(b"r", vec![increment("cf1", b"n", -7)]),
            ModifiedRow(row(
                b"r",
                vec![cell_at(
                    "cf1",
                    b"n",
                    now,
                    &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe],
                )],
            )),
        )
        .with_setup(vec![rmw(b"r", vec![increment("cf1", b"n", 5)])])
        .table_holds(vec![row(b"r", vec![cell_at("cf1", b"n", now, &be(-2))])]),
        SemanticsCase::new(
            W,
            "rmw/increment adds a new version",
            rmw(b"r", vec![increment("cf1", b"n", 1)]),
            ModifiedRow(row(b"r", vec![cell_at("cf1", b"n", now, &be(42))])),
        )
        .with_setup(vec![mutate(b"r", vec![set("cf1", b"n", 1, &be(41))])])
        .table_holds(vec![row(
            b"r",
            vec![
                cell_at("cf1", b"n", now, &be(42)),
                cell("cf1", b"n", 1, &be(41)),
            ],
        )]),
        SemanticsCase::new(
            W,
            "rmw/increment of a non-8-byte value fails the whole request",
            rmw(
                b"r",
                vec![append("cf2", b"s", b"x"), increment("cf1", b"n", 1)],
            ),
            Error(Code::FailedPrecondition),
        )
        .with_setup(vec![mutate(b"r", vec![set("cf1", b"n", 1, b"1234")])])
        .table_holds(vec![row(b"r", vec![cell("cf1", b"n", 1, b"1234")])])
        .deviation(DEV_INCREMENT),
        SemanticsCase::new(
            W,
            "rmw/increment of an empty value fails",
            rmw(b"r", vec![increment("cf1", b"n", 1)]),
            Error(Code::FailedPrecondition),
        )
        .with_setup(vec![mutate(b"r", vec![set("cf1", b"n", 1, b"")])])
        .deviation(DEV_INCREMENT),
        SemanticsCase::new(
            W,
            "rmw/increment overflow wraps",
            rmw(b"r", vec![increment("cf1", b"n", 1)]),
            ModifiedRow(row(b"r", vec![cell_at("cf1", b"n", now, &be(i64::MIN))])),
        )
        .with_setup(vec![mutate(b"r", vec![set("cf1", b"n", 1, &be(i64::MAX))])]),
        SemanticsCase::new(
            W,
            "rmw/future timestamp is kept and overwritten",
            rmw(b"r", vec![increment("cf1", b"n", 1)]),
            ModifiedRow(row(
                b"r",
                vec![cell_at(
                    "cf1",
                    b"n",
                    Timestamp(4_000_000_000_000_000),
                    &be(8),
                )],
            )),
        )
        .with_setup(vec![mutate(
            b"r",
            vec![set_at(
                "cf1",
                b"n",
                Timestamp(4_000_000_000_000_000),
                &be(7),
            )],
        )])
        .table_holds(vec![row(
            b"r",
            vec![cell_at(
                "cf1",
                b"n",
                Timestamp(4_000_000_000_000_000),
                &be(8),
            )],
        )]),
        SemanticsCase::new(
            W,
            "rmw/two rules on one column give one cell",
            rmw(
                b"r",
                vec![increment("cf1", b"n", 5), increment("cf1", b"n", 3)],
            ),
            ModifiedRow(row(b"r", vec![cell_at("cf1", b"n", now, &be(8))])),
        )
        .table_holds(vec![row(b"r", vec![cell_at("cf1", b"n", now, &be(8))])]),
        SemanticsCase::new(
            W,
            "rmw/reply is in canonical order",
            rmw(
                b"r",
                vec![
                    append("cf2", b"z", b"1"),
                    append("cf1", b"b", b"2"),
                    append("cf1", b"a", b"3"),
                ],
            ),
            ModifiedRow(row(
                b"r",
                vec![
                    cell_at("cf1", b"a", now, b"3"),
                    cell_at("cf1", b"b", now, b"2"),
                    cell_at("cf2", b"z", now, b"1"),
                ],
            )),
        ),
        SemanticsCase::new(
            W,
            "rmw/unknown family",
            rmw(b"r", vec![append("nofam", b"q", b"x")]),
            Error(Code::NotFound),
        )
        .deviation(DEV_UNKNOWN_FAMILY),
        SemanticsCase::new(
            W,
            "rmw/no rules",
            rmw(b"r", vec![]),
            Error(Code::InvalidArgument),
        )
        .deviation(DEV_RMW_REQUEST),
        SemanticsCase::new(
            W,
            "rmw/empty row key",
            rmw(b"", vec![append("cf1", b"q", b"x")]),
            Error(Code::InvalidArgument),
        )
        .deviation(DEV_RMW_REQUEST),
    ]
}

fn row_set_cases() -> Vec<SemanticsCase> {
    use Category::RowSet as S;
    use Expectation::{Error, Rows};
    let r = |name, req: ReadRowsRequest, rows: Vec<Row>| {
        SemanticsCase::new(S, name, read_rows(req), Rows(rows)).on_fixture()
    };
    let set = |keys: &[&[u8]], ranges: Vec<RowRange>| RowSet {
        row_keys: keys.iter().map(|k| k.to_vec()).collect(),
        row_ranges: ranges,
    };
    let range = |start: KeyBound, end: KeyBound| RowRange { start, end };
    let rev = |mut rows: Vec<Row>| {
        rows.reverse();
        rows
    };
    vec![
        r(
            "rows/union of keys and ranges, each row once",
            read_req(
                set(
                    &[b"r2", b"r1", b"r2"],
                    vec![range(closed(b"r1"), closed(b"r2"))],
                ),
                None,
            ),
            fixture_rows(&[b"r1", b"r2"]),
        ),
        r(
            "rows/missing keys are skipped",
            read_req(set(&[b"r0", b"r3", b"zz"], vec![]), None),
            fixture_rows(&[b"r3"]),
        ),
        r(
            "rows/overlapping ranges are merged",
            read_req(
                set(
                    &[],
                    vec![
                        RowRange::half_open("r1", "r3"),
                        range(closed(b"r2"), closed(b"r3")),
                    ],
                ),
                None,
            ),
            fixture(),
        ),
        r(
            "rows/open start, closed end",
            read_req(set(&[], vec![range(open(b"r1"), closed(b"r3"))]), None),
            fixture_rows(&[b"r2", b"r3"]),
        ),
        r(
            "rows/single-row closed range",
            read_req(set(&[], vec![range(closed(b"r2"), closed(b"r2"))]), None),
            fixture_rows(&[b"r2"]),
        ),
        r(
            "rows/empty open range",
            read_req(set(&[], vec![range(open(b"r2"), open(b"r2"))]), None),
            vec![],
        )
        .deviation(DEV_EMPTY_RANGE),
        r(
            "rows/prefix",
            read_req(RowSet::range(RowRange::prefix(b"r2")), None),
            fixture_rows(&[b"r2"]),
        ),
        r(
            "rows/reversed",
            ReadRowsRequest {
                reversed: true,
                ..read_req(RowSet::all(), None)
            },
            rev(fixture()),
        ),
        r(
            "rows/reversed over keys and ranges",
            ReadRowsRequest {
                reversed: true,
                ..read_req(
                    set(&[b"r3"], vec![range(KeyBound::Unbounded, open(b"r2"))]),
                    None,
                )
            },
            rev(fixture_rows(&[b"r1", b"r3"])),
        ),
        r(
            "rows/reversed with rows_limit",
            ReadRowsRequest {
                reversed: true,
                rows_limit: 2,
                ..read_req(RowSet::all(), None)
            },
            rev(fixture_rows(&[b"r2", b"r3"])),
        ),
        r(
            "rows/rows_limit",
            ReadRowsRequest {
                rows_limit: 2,
                ..read_req(RowSet::all(), None)
            },
            fixture_rows(&[b"r1", b"r2"]),
        ),
        r(
            "rows/filtered-out rows do not count toward rows_limit",
            ReadRowsRequest {
                rows_limit: 2,
                ..read_req(RowSet::all(), Some(qual_regex(b"c")))
            },
            fixture_where(|_, c| c.qualifier == b"c"),
        ),
        SemanticsCase::new(
            S,
            "rows/negative rows_limit",
            read_rows(ReadRowsRequest {
                rows_limit: -1,
                ..read_req(RowSet::all(), None)
            }),
            Error(Code::InvalidArgument),
        )
        .on_fixture()
        .deviation(DEV_ROWKIT_RULE),
        SemanticsCase::new(
            S,
            "rows/inverted range",
            read_rows(read_req(
                set(&[], vec![range(closed(b"r3"), open(b"r1"))]),
                None,
            )),
            Error(Code::InvalidArgument),
        )
        .on_fixture(),
        SemanticsCase::new(
            S,
            "rows/empty key in row_keys",
            read_rows(read_req(set(&[b""], vec![]), None)),
            Error(Code::InvalidArgument),
        )
        .on_fixture()
        .deviation(DEV_ROWKIT_RULE),
        SemanticsCase::new(
            S,
            "rows/table not found",
            read_rows(ReadRowsRequest {
                table: "missing".into(),
                ..read_req(RowSet::all(), None)
            }),
            Error(Code::NotFound),
        ),
    ]
}

fn sample_cases() -> Vec<SemanticsCase> {
    let size = |r: &Row| rowkit_codec::model::row_size(&r.key, &r.cells);
    let rows = fixture();
    let total: u64 = rows.iter().map(size).sum();
    // The fixture is far smaller than the sampling interval: the only row key sampled is the
    // last one (always reported, as production reports the table's end), after the bytes of
    // every other row.
    let last = rows.iter().max_by(|a, b| a.key.cmp(&b.key));
    let last_sample = last.map(|r| (r.key.clone(), (total - size(r)) as i64));
    let sample = || {
        Request::SampleRowKeys(SampleRowKeysRequest {
            table: TABLE.into(),
            ..Default::default()
        })
    };
    vec![
        SemanticsCase::new(
            Category::SampleRowKeys,
            "sample_row_keys/small table: its last row key, then the total",
            sample(),
            Expectation::Samples(
                last_sample
                    .into_iter()
                    .chain([(Vec::new(), total as i64)])
                    .collect(),
            ),
        )
        .on_fixture()
        .deviation(DEV_SAMPLES),
        SemanticsCase::new(
            Category::SampleRowKeys,
            "sample_row_keys/empty table",
            sample(),
            Expectation::Samples(vec![(Vec::new(), 0)]),
        )
        .deviation(DEV_SAMPLES),
    ]
}

fn gc_cases() -> Vec<SemanticsCase> {
    use Category::Gc as G;
    use Expectation::Rows;
    let minute = 60_000_000;
    let old = Timestamp(SUITE_NOW_MS.0 - 2 * minute);
    let older = Timestamp(SUITE_NOW_MS.0 - 3 * minute);
    let recent = Timestamp(SUITE_NOW_MS.0 - 30_000_000);
    let fresh = SUITE_NOW_MS;
    let schema = |rule: GcRule| {
        vec![
            ColumnFamily {
                name: "g".into(),
                gc_rule: Some(rule),
            },
            ColumnFamily::new("keep"),
        ]
    };
    let versions = |family: &str, q: &[u8]| {
        vec![
            set_at(family, q, older, b"older"),
            set_at(family, q, old, b"old"),
            set_at(family, q, recent, b"recent"),
            set_at(family, q, fresh, b"fresh"),
        ]
    };
    let data = || {
        let mut m = versions("g", b"a");
        m.push(set_at("g", b"b", old, b"lonely-old"));
        m.extend(versions("keep", b"a"));
        vec![mutate(b"r", m)]
    };
    let keep_cells = || {
        vec![
            cell_at("keep", b"a", fresh, b"fresh"),
            cell_at("keep", b"a", recent, b"recent"),
            cell_at("keep", b"a", old, b"old"),
            cell_at("keep", b"a", older, b"older"),
        ]
    };
    let expect = |g: Vec<Cell>| {
        let mut cells = g;
        cells.extend(keep_cells());
        Rows(vec![row(b"r", cells)])
    };
    vec![
        SemanticsCase::new(
            G,
            "gc/max_num_versions after gc",
            read(None),
            expect(vec![
                cell_at("g", b"a", fresh, b"fresh"),
                cell_at("g", b"a", recent, b"recent"),
                cell_at("g", b"b", old, b"lonely-old"),
            ]),
        )
        .with_families(schema(GcRule::MaxNumVersions(2)))
        .with_setup(data())
        .with_gc_at(SUITE_NOW)
        .deviation(DEV_GC),
        SemanticsCase::new(
            G,
            "gc/reads never hide collectible cells",
            read(None),
            expect(vec![
                cell_at("g", b"a", fresh, b"fresh"),
                cell_at("g", b"a", recent, b"recent"),
                cell_at("g", b"a", old, b"old"),
                cell_at("g", b"a", older, b"older"),
                cell_at("g", b"b", old, b"lonely-old"),
            ]),
        )
        .with_families(schema(GcRule::MaxNumVersions(1)))
        .with_setup(data())
        .deviation(DEV_GC),
        SemanticsCase::new(
            G,
            "gc/max_age after gc",
            read(None),
            expect(vec![
                cell_at("g", b"a", fresh, b"fresh"),
                cell_at("g", b"a", recent, b"recent"),
            ]),
        )
        .with_families(schema(GcRule::MaxAge(minute)))
        .with_setup(data())
        .with_gc_at(SUITE_NOW)
        .deviation(DEV_GC),
        SemanticsCase::new(
            G,
            "gc/union after gc",
            read(None),
            expect(vec![cell_at("g", b"a", fresh, b"fresh")]),
        )
        .with_families(schema(GcRule::Union(vec![
            GcRule::MaxNumVersions(1),
            GcRule::MaxAge(minute),
        ])))
        .with_setup(data())
        .with_gc_at(SUITE_NOW)
        .deviation(DEV_GC),
        SemanticsCase::new(
            G,
            "gc/intersection after gc",
            read(None),
            expect(vec![
                cell_at("g", b"a", fresh, b"fresh"),
                cell_at("g", b"a", recent, b"recent"),
                cell_at("g", b"b", old, b"lonely-old"),
            ]),
        )
        .with_families(schema(GcRule::Intersection(vec![
            GcRule::MaxNumVersions(1),
            GcRule::MaxAge(minute),
        ])))
        .with_setup(data())
        .with_gc_at(SUITE_NOW)
        .deviation(DEV_GC_INTERSECTION),
    ]
}

/// A value-regex filter whose protobuf encoding is exactly `size` bytes; it matches the
/// fixture's `v1`..`v3` values.
fn filter_of_size(size: usize) -> RowFilter {
    let mut pattern = b"v[0-9]|".to_vec();
    // Start just below the target (tag and length prefix take at most 6 bytes here) and grow;
    // the length prefix may jump a byte, which the case names would then misstate.
    pattern.resize(size.saturating_sub(6).max(pattern.len()), b'x');
    while filter_encoded_len(&RowFilter::ValueRegex(pattern.clone())) < size {
        pattern.push(b'x');
    }
    RowFilter::ValueRegex(pattern)
}

/// A chain nested `depth` deep around a qualifier filter for `b`.
fn filter_of_depth(depth: usize) -> RowFilter {
    let mut f = qual_regex(b"b");
    for _ in 1..depth {
        f = RowFilter::Chain(vec![RowFilter::PassAll, f]);
    }
    f
}

fn limit_cases() -> Vec<SemanticsCase> {
    use Category::Limit as L;
    use Expectation::{Applied, EntryCodes, Error, Rows};
    let invalid = || Error(Code::InvalidArgument);
    let key_4096 = vec![b'k'; limits::MAX_ROW_KEY_BYTES];
    let key_4097 = vec![b'k'; limits::MAX_ROW_KEY_BYTES + 1];
    let qual_16k = vec![b'q'; limits::MAX_QUALIFIER_BYTES];
    let qual_over = vec![b'q'; limits::MAX_QUALIFIER_BYTES + 1];
    // Zero-filled: allocated lazily by the OS, so unused cases cost no memory.
    let value_max = vec![0u8; limits::MAX_VALUE_BYTES];
    let value_over = vec![0u8; limits::MAX_VALUE_BYTES + 1];
    // A row of exactly 256 MiB: key "big", three cells of cf1 with one-byte qualifiers.
    let overhead = (3 + 1 + 8) as u64;
    let third = limits::MAX_ROW_BYTES - 3 - 3 * overhead - 2 * limits::MAX_VALUE_BYTES as u64;
    let big_row = mutate(
        b"big",
        vec![
            set("cf1", b"1", 1, &value_max),
            set("cf1", b"2", 1, &value_max),
            set("cf1", b"3", 1, &vec![0u8; third as usize]),
        ],
    );
    let many = |n: usize| -> Vec<Mutation> {
        // The first and last cells survive; the middle deletes touch an unrelated column.
        let mut m = vec![set("cf1", b"first", 1, b"f")];
        m.extend((0..n.saturating_sub(2)).map(|_| del_column("cf1", b"other", None)));
        m.push(set("cf1", b"last", 1, b"l"));
        m
    };
    let max = limits::MAX_MUTATIONS;
    let fifteen = "abcdefghij-1234";
    let depth_ok = filter_of_depth(limits::MAX_FILTER_DEPTH);
    let depth_over = filter_of_depth(limits::MAX_FILTER_DEPTH + 1);
    let size_ok = filter_of_size(limits::MAX_FILTER_BYTES);
    let size_over = filter_of_size(limits::MAX_FILTER_BYTES + 1);
    let rules = |n: usize| {
        (0..n)
            .map(|_| increment("cf1", b"n", 1))
            .collect::<Vec<_>>()
    };
    vec![
        SemanticsCase::new(
            L,
            "limit/row key of 4096 bytes",
            mutate(&key_4096, vec![set("cf1", b"q", 1, b"v")]),
            Applied,
        )
        .table_holds(vec![row(&key_4096, vec![cell("cf1", b"q", 1, b"v")])]),
        SemanticsCase::new(
            L,
            "limit/row key of 4097 bytes",
            mutate(&key_4097, vec![set("cf1", b"q", 1, b"v")]),
            invalid(),
        )
        .table_holds(vec![])
        .deviation(DEV_ROW_KEY),
        SemanticsCase::new(
            L,
            "limit/row key of 4097 bytes in a read",
            read_rows(read_req(RowSet::key(key_4097.clone()), None)),
            invalid(),
        )
        .deviation(DEV_ROW_KEY),
        SemanticsCase::new(
            L,
            "limit/empty row key",
            mutate(b"", vec![set("cf1", b"q", 1, b"v")]),
            invalid(),
        ),
        SemanticsCase::new(
            L,
            "limit/qualifier of 16 KiB",
            mutate(b"r", vec![set("cf1", &qual_16k, 1, b"v")]),
            Applied,
        )
        .table_holds(vec![row(b"r", vec![cell("cf1", &qual_16k, 1, b"v")])]),
        SemanticsCase::new(
            L,
            "limit/qualifier over 16 KiB",
            mutate(b"r", vec![set("cf1", &qual_over, 1, b"v")]),
            invalid(),
        )
        .deviation(DEV_SIZES),
        SemanticsCase::new(
            L,
            "limit/value of 100 MiB",
            mutate(b"r", vec![set("cf1", b"q", 1, &value_max)]),
            Applied,
        )
        .with_check(
            read_req(RowSet::all(), Some(RowFilter::StripValue)),
            vec![row(b"r", vec![cell("cf1", b"q", 1, b"")])],
        ),
        SemanticsCase::new(
            L,
            "limit/value over 100 MiB",
            mutate(b"r", vec![set("cf1", b"q", 1, &value_over)]),
            invalid(),
        )
        .table_holds(vec![])
        .deviation(DEV_SIZES),
        SemanticsCase::new(
            L,
            "limit/row of 256 MiB accepted, one more cell rejected",
            mutate(b"big", vec![set("cf1", b"4", 1, b"")]),
            invalid(),
        )
        .with_setup(vec![big_row])
        .with_check(
            read_req(RowSet::all(), Some(RowFilter::StripValue)),
            vec![row(
                b"big",
                vec![
                    cell("cf1", b"1", 1, b""),
                    cell("cf1", b"2", 1, b""),
                    cell("cf1", b"3", 1, b""),
                ],
            )],
        )
        .deviation(DEV_SIZES),
        SemanticsCase::new(
            L,
            "limit/100000 mutations",
            mutate(b"r", many(max)),
            Applied,
        )
        .table_holds(vec![row(
            b"r",
            vec![
                cell("cf1", b"first", 1, b"f"),
                cell("cf1", b"last", 1, b"l"),
            ],
        )]),
        SemanticsCase::new(
            L,
            "limit/100001 mutations",
            mutate(b"r", many(max + 1)),
            invalid(),
        )
        .table_holds(vec![])
        .deviation(DEV_MUTATION_COUNT),
        SemanticsCase::new(
            L,
            "limit/100000 mutations over a batch",
            mutate_rows(vec![(b"a", many(max / 2)), (b"b", many(max / 2))]),
            EntryCodes(vec![Code::Ok, Code::Ok]),
        ),
        SemanticsCase::new(
            L,
            "limit/100001 mutations over a batch",
            mutate_rows(vec![(b"a", many(max / 2)), (b"b", many(max / 2 + 1))]),
            invalid(),
        )
        .table_holds(vec![])
        .deviation(DEV_MUTATION_COUNT),
        SemanticsCase::new(
            L,
            "limit/100001 mutations in a check_and_mutate list",
            check_and_mutate(b"r", None, many(max + 1), vec![set("cf1", b"q", 1, b"v")]),
            invalid(),
        )
        .table_holds(vec![])
        .deviation(DEV_MUTATION_COUNT),
        SemanticsCase::new(
            L,
            "limit/100001 read-modify-write rules",
            rmw(b"r", rules(max + 1)),
            invalid(),
        )
        .table_holds(vec![])
        .deviation(DEV_MUTATION_COUNT),
        SemanticsCase::new(
            L,
            "limit/filter of 20480 bytes",
            read(Some(size_ok)),
            Rows(fixture_where(|_, c| c.value.starts_with(b"v"))),
        )
        .on_fixture(),
        SemanticsCase::new(
            L,
            "limit/filter of 20481 bytes",
            read(Some(size_over)),
            invalid(),
        )
        .on_fixture()
        .deviation(DEV_FILTER_UNCHECKED),
        SemanticsCase::new(
            L,
            "limit/filter nested 20 deep",
            read(Some(depth_ok)),
            Rows(fixture_where(|_, c| c.qualifier == b"b")),
        )
        .on_fixture(),
        SemanticsCase::new(
            L,
            "limit/filter nested 21 deep",
            read(Some(depth_over)),
            invalid(),
        )
        .on_fixture()
        .deviation(DEV_FILTER_UNCHECKED),
        SemanticsCase::new(
            L,
            "limit/label of 15 characters",
            read(Some(RowFilter::Chain(vec![
                RowFilter::RowKeyRegex(b"r3".to_vec()),
                lbl(fifteen),
            ]))),
            Rows(vec![row(
                b"r3",
                vec![label(cell("cf2", b"c", 4, b""), fifteen)],
            )]),
        )
        .on_fixture(),
        SemanticsCase::new(
            L,
            "limit/label of 16 characters",
            read(Some(lbl("abcdefghij-12345"))),
            invalid(),
        )
        .on_fixture()
        .deviation(DEV_LABEL),
        SemanticsCase::new(
            L,
            "limit/label with upper case",
            read(Some(lbl("A_B"))),
            invalid(),
        )
        .on_fixture(),
        SemanticsCase::new(
            L,
            "limit/label with underscore",
            read(Some(lbl("a_b"))),
            invalid(),
        )
        .on_fixture()
        .deviation(DEV_LABEL),
        SemanticsCase::new(L, "limit/empty label", read(Some(lbl(""))), invalid()).on_fixture(),
    ]
}

fn admin_cases() -> Vec<SemanticsCase> {
    use Category::Admin as A;
    use Expectation::{CreateTableError, Rows};
    let many = |n: usize| {
        (0..n)
            .map(|i| ColumnFamily::new(format!("f{i:03}")))
            .collect::<Vec<_>>()
    };
    let name_64 = "f".repeat(limits::MAX_FAMILY_NAME_CHARS);
    let name_65 = "f".repeat(limits::MAX_FAMILY_NAME_CHARS + 1);
    let empty_read = || read(None);
    vec![
        SemanticsCase::new(
            A,
            "admin/100 families",
            mutate(b"r", vec![set("f099", b"q", 1, b"v")]),
            Expectation::Applied,
        )
        .with_families(many(limits::MAX_FAMILIES))
        .table_holds(vec![row(b"r", vec![cell("f099", b"q", 1, b"v")])]),
        SemanticsCase::new(
            A,
            "admin/101 families",
            empty_read(),
            CreateTableError(Code::InvalidArgument),
        )
        .with_families(many(limits::MAX_FAMILIES + 1))
        .deviation(DEV_FAMILY_COUNT),
        SemanticsCase::new(
            A,
            "admin/family name of 64 characters",
            mutate(b"r", vec![set(&name_64, b"q", 1, b"v")]),
            Expectation::Applied,
        )
        .with_families(vec![ColumnFamily::new(name_64.clone())])
        .table_holds(vec![row(b"r", vec![cell(&name_64, b"q", 1, b"v")])]),
        SemanticsCase::new(
            A,
            "admin/family name of 65 characters",
            empty_read(),
            CreateTableError(Code::InvalidArgument),
        )
        .with_families(vec![ColumnFamily::new(name_65)])
        .deviation(DEV_UNVERIFIED_ADMIN),
        SemanticsCase::new(
            A,
            "admin/family name with a space",
            empty_read(),
            CreateTableError(Code::InvalidArgument),
        )
        .with_families(vec![ColumnFamily::new("a b")])
        .deviation(DEV_UNVERIFIED_ADMIN),
        SemanticsCase::new(
            A,
            "admin/empty family name",
            empty_read(),
            CreateTableError(Code::InvalidArgument),
        )
        .with_families(vec![ColumnFamily::new("")])
        .deviation(DEV_UNVERIFIED_ADMIN),
        SemanticsCase::new(
            A,
            "admin/family name characters",
            empty_read(),
            Rows(vec![]),
        )
        .with_families(vec![ColumnFamily::new("a-Z_0.9")]),
        SemanticsCase::new(
            A,
            "admin/table without families",
            empty_read(),
            Rows(vec![]),
        )
        .with_families(vec![]),
        SemanticsCase::new(
            A,
            "admin/gc rule of zero versions",
            empty_read(),
            CreateTableError(Code::InvalidArgument),
        )
        .with_families(vec![ColumnFamily::max_versions("cf", 0)])
        .deviation(DEV_UNVERIFIED_ADMIN),
    ]
}

/// What one store gave for one case: the outcome of its request and of its post-check read.
#[derive(Debug)]
pub struct CaseRun {
    /// The outcome of the case's request.
    pub outcome: Outcome,
    /// The rows of the post-check read, when the case has one.
    pub check: Option<Result<Vec<Row>, StoreError>>,
}

fn read_through<S: Store + ?Sized>(
    store: &S,
    clock: &ManualClock,
    req: ReadRowsRequest,
) -> Result<Vec<Row>, StoreError> {
    let mut rows = Vec::new();
    let machine = ReadRows::new(req, clock.now(), 7, RetryPolicy::default());
    rowkit_client::run_blocking(store, clock, machine, |row| rows.push(row))
        .map_err(|e| e.into_store_error())?;
    Ok(rows)
}

fn execute<S: Store + ?Sized>(store: &S, clock: &ManualClock, request: Request) -> Outcome {
    match request {
        Request::ReadRows(r) => match read_through(store, clock, r) {
            Ok(rows) => Outcome::Rows(rows),
            Err(e) => Outcome::Error(e),
        },
        Request::MutateRows(_) | Request::SampleRowKeys(_) => Outcome::from_parts(
            rowkit_client::run_blocking(store, clock, Collect::new(request), |_| {})
                .map_err(|e| e.into_store_error()),
        ),
        _ => Outcome::from_unary(
            rowkit_client::run_blocking(store, clock, Unary::new(request), |_| {})
                .map_err(|e| e.into_store_error()),
        ),
    }
}

/// Plays one case on a fresh store (see the module docs): creates the table, runs the setup,
/// the optional `gc`, the request and the post-check read through the sync driver and the
/// ReadRows machine — the one runner every backend's replay uses. The case's requests are
/// moved, not cloned: some carry hundreds of MiB.
pub fn play<S: Store + ?Sized>(store: &S, case: &mut SemanticsCase) -> Result<CaseRun, String> {
    let clock = ManualClock::new(case.now);
    if let Err(e) = store.create_table(TABLE, &case.families) {
        return Ok(CaseRun {
            outcome: Outcome::CreateTableError(e),
            check: None,
        });
    }
    for (i, request) in std::mem::take(&mut case.setup).into_iter().enumerate() {
        match execute(store, &clock, request) {
            Outcome::Error(e) => return Err(format!("setup request {i} failed: {e}")),
            Outcome::EntryCodes(codes) if codes.iter().any(|c| *c != Code::Ok) => {
                return Err(format!("setup request {i}: entry codes {codes:?}"));
            }
            _ => {}
        }
    }
    if let Some(at) = case.gc_at {
        store.gc(TABLE, at).map_err(|e| format!("gc failed: {e}"))?;
    }
    let request = std::mem::replace(
        &mut case.request,
        Request::ReadRows(ReadRowsRequest::default()),
    );
    let outcome = execute(store, &clock, request);
    let check = case
        .check
        .as_ref()
        .map(|c| read_through(store, &clock, c.read.clone()));
    Ok(CaseRun { outcome, check })
}
