//! Checking a table for the states the originals' own failures leave behind (`spec/check.md`):
//! the vocabulary every schema's check shares.
//!
//! A check is an [`Operation`](crate::operation::Operation) whose flow scans the table page by
//! page ([`PagedScan`]: bounded `rows_limit`, resuming after the last key, so memory never holds
//! more than a page), reports each [`Finding`] as a [`CheckEvent`], and ends with a
//! [`CheckSummary`]. A finding a concurrent writer could be producing right now (a missing
//! index row, a missing graph row) is held in [`Pending`] and re-read once the grace period has
//! passed; it is reported only if it still holds (rule 1.2). A repair is a conditional write
//! the schema's flow sends itself (rule 1.3).
//!
//! ```
//! use rowkit_statemachines::check::{CheckSummary, Finding};
//!
//! let mut summary = CheckSummary::default();
//! summary.record(&Finding {
//!     schema: "graph",
//!     kind: "missing_index",
//!     row_key: b"g:SPO:...".to_vec(),
//!     detail: "triple ... is not in its SPO row".into(),
//!     repair: Some("write the missing cell".into()),
//!     repaired: true,
//! });
//! assert_eq!(summary.findings_by_kind["missing_index"], 1);
//! assert_eq!((summary.repaired, summary.left), (1, 0));
//! ```

use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::marker::PhantomData;

use rowkit_codec::escape::escape;
use rowkit_codec::model::{Row, RowFilter, RowSet};
use serde::Serialize;

use crate::children::{ChildId, ChildOutput, owned_rows};
use crate::machine::Machine;
use crate::operation::{ABORTED_MESSAGE, Io, Nested, OperationError, Schema, WaitAll};
use crate::readrows::resume_request;
use crate::{Code, ReadRowsRequest, RetryPolicy, StoreError, Timestamp};

/// Default grace period before a suspected finding is re-read: 10 s of the machine's clock
/// (rule 1.2).
pub const DEFAULT_GRACE_MICROS: i64 = 10_000_000;
/// Default rows per scan page.
pub const DEFAULT_PAGE_ROWS: i64 = 1_000;
/// Default bound on suspected findings waiting for their grace period; a full queue pauses the
/// scan until the oldest is due.
pub const DEFAULT_MAX_PENDING: usize = 10_000;

/// How a check runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    /// Repair what the spec allows to be repaired.
    pub fix: bool,
    /// How long a suspected finding waits before it is re-read, in µs.
    pub grace_micros: i64,
    /// Rows per scan page (`rows_limit` of each page's `ReadRows`).
    pub page_rows: i64,
    /// Most suspected findings held at once.
    pub max_pending: usize,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions {
            fix: false,
            grace_micros: DEFAULT_GRACE_MICROS,
            page_rows: DEFAULT_PAGE_ROWS,
            max_pending: DEFAULT_MAX_PENDING,
        }
    }
}

/// Bytes of a cell (or characters of a text) a finding's detail shows at most: details stay
/// small whatever the cell (a 20 MB cell once made a 54 MB finding).
pub const DETAIL_PREVIEW: usize = 64;
/// Characters of a whole finding detail at most.
pub const MAX_DETAIL: usize = 1_024;

/// A bounded view of cell bytes for a detail: the whole value when it has at most
/// [`DETAIL_PREVIEW`] bytes, else its first [`DETAIL_PREVIEW`] bytes and its length; escaped
/// text when it is printable, hex when it is binary.
///
/// ```
/// use rowkit_statemachines::check::cell_preview;
///
/// assert_eq!(cell_preview(b"abc"), "\"abc\"");
/// assert_eq!(cell_preview(&[0, 1, 2]), "hex:000102");
/// assert!(cell_preview(&[b'x'; 1000]).ends_with("… (1000 bytes)"));
/// ```
pub fn cell_preview(value: &[u8]) -> String {
    let head = &value[..value.len().min(DETAIL_PREVIEW)];
    let printable = head
        .iter()
        .filter(|b| !(0x20..=0x7e).contains(*b) && !matches!(b, b'\t' | b'\n' | b'\r'))
        .count()
        * 4
        <= head.len();
    let mut text = if printable {
        alloc::format!("\"{}\"", escape(head))
    } else {
        alloc::format!("hex:{}", hex::encode(head))
    };
    if head.len() < value.len() {
        text.push_str(&alloc::format!("… ({} bytes)", value.len()));
    }
    text
}

/// `detail` cut to [`MAX_DETAIL`] characters (at a character boundary), saying how long it
/// was: the last bound on a finding's size, whatever a detail quotes (an error message that
/// quotes a value, many names).
pub fn bounded_detail(mut detail: String) -> String {
    if let Some((cut, _)) = detail.char_indices().nth(MAX_DETAIL) {
        let len = detail.len();
        detail.truncate(cut);
        detail.push_str(&alloc::format!("… ({len} bytes in all)"));
    }
    detail
}

/// One finding (rule 1.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The schema checked: `graph`, `gold`, `s3`.
    pub schema: &'static str,
    /// The finding kind, a stable identifier of `spec/check.md` (e.g. `missing_index`).
    pub kind: &'static str,
    /// The row the finding is about.
    pub row_key: Vec<u8>,
    /// What is wrong, for a person.
    pub detail: String,
    /// What a repair does; `None` when the kind is report-only.
    pub repair: Option<String>,
    /// Whether the repair was applied (only with [`CheckOptions::fix`]).
    pub repaired: bool,
}

/// The JSON form (rule 1.4): `{schema, kind, row_key, row_key_hex, detail, repair,
/// repaired}`, the row key as escaped text and as hex, `repair` `"none"` when report-only.
impl Serialize for Finding {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut m = s.serialize_struct("Finding", 7)?;
        m.serialize_field("schema", self.schema)?;
        m.serialize_field("kind", self.kind)?;
        m.serialize_field("row_key", &escape(&self.row_key))?;
        m.serialize_field("row_key_hex", &hex::encode(&self.row_key))?;
        m.serialize_field("detail", &self.detail)?;
        m.serialize_field("repair", self.repair.as_deref().unwrap_or("none"))?;
        m.serialize_field("repaired", &self.repaired)?;
        m.end()
    }
}

/// One check's report as a document: the summary's fields, the schema and table checked, and
/// every finding (what `--json` prints and the browser tool receives).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckReport {
    /// The schema checked.
    pub schema: &'static str,
    /// The table, when it is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// The summary.
    #[serde(flatten)]
    pub summary: CheckSummary,
    /// Every finding, in the order reported.
    pub findings: Vec<Finding>,
}

/// What a check emits along the way.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckEvent {
    /// A finding, once it is certain (and repaired, if it was).
    Finding(Finding),
    /// After each scanned page.
    Progress {
        /// Rows scanned so far.
        rows_scanned: u64,
        /// Findings reported so far.
        findings: u64,
    },
}

/// What a check found (rule 1.5).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CheckSummary {
    /// Rows the scan read.
    pub rows_scanned: u64,
    /// Findings per kind.
    pub findings_by_kind: BTreeMap<String, u64>,
    /// Findings repaired.
    pub repaired: u64,
    /// Findings left (not repaired).
    pub left: u64,
    /// What the check could not do, e.g. checks skipped for a memory bound.
    pub notes: Vec<String>,
}

impl CheckSummary {
    /// Counts `finding`.
    pub fn record(&mut self, finding: &Finding) {
        *self
            .findings_by_kind
            .entry(finding.kind.into())
            .or_insert(0) += 1;
        if finding.repaired {
            self.repaired += 1;
        } else {
            self.left += 1;
        }
    }

    /// Findings reported.
    pub fn findings(&self) -> u64 {
        self.repaired + self.left
    }

    /// Whether nothing is left to repair or look at (the CLI's exit 0).
    pub fn is_clean(&self) -> bool {
        self.left == 0
    }
}

/// Why a check failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// A store request failed after its retries.
    #[error("store: {0}")]
    Store(StoreError),
    /// Invalid check arguments (no request was sent).
    #[error("{0}")]
    Invalid(String),
    /// The deadline passed or the check was cancelled.
    #[error("{}", ABORTED_MESSAGE)]
    Aborted,
}

impl From<CheckError> for StoreError {
    fn from(e: CheckError) -> StoreError {
        match e {
            CheckError::Store(s) => s,
            CheckError::Invalid(m) => StoreError::new(Code::InvalidArgument, m),
            CheckError::Aborted => StoreError::new(Code::DeadlineExceeded, e.to_string()),
        }
    }
}

/// The table a check reads and how its reads retry: the context of a check whose schema needs
/// nothing else. When it starts and until when it runs is the check's [`Start`], as for every
/// operation.
///
/// [`Start`]: crate::operation::Start
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckTarget {
    /// The table id.
    pub table: String,
    /// Back-off of its reads (`operation_timeout` is replaced by the time left).
    pub retry: RetryPolicy,
}

impl CheckTarget {
    /// `table` with the default back-off.
    pub fn new(table: &str) -> CheckTarget {
        CheckTarget {
            table: table.into(),
            retry: RetryPolicy::default(),
        }
    }
}

/// The schema of a check operation running on context `C` (the checked schema's table
/// configuration): it emits [`CheckEvent`]s and fails with [`CheckError`].
#[derive(Debug)]
pub struct Checking<C>(PhantomData<fn() -> C>);

/// A schema's check nested in a migrator (`docs/migration.md` §8): a [`Nested`] check whose
/// findings are gathered as it emits them.
#[derive(Debug)]
pub(crate) struct NestedCheck<M: Machine> {
    nested: Nested<M>,
    findings: Vec<Finding>,
}

impl<M: Machine<Event = CheckEvent, Error = CheckError>> NestedCheck<M> {
    /// Nests `check` (started with [`Io::child_start`]) in the operation of `io`.
    pub(crate) fn start<E>(io: &mut Io<E>, check: M) -> NestedCheck<M> {
        NestedCheck {
            nested: Nested::start(io, check),
            findings: Vec::new(),
        }
    }

    /// Advances the check ([`Nested::advance`]); once it ended, its findings.
    pub(crate) fn advance<E>(
        &mut self,
        io: &mut Io<E>,
    ) -> Option<Result<Vec<Finding>, CheckError>> {
        let found = &mut self.findings;
        let result = self.nested.advance(io, |_, event| {
            if let CheckEvent::Finding(finding) = event {
                found.push(finding);
            }
        })?;
        Some(result.map(|_| core::mem::take(&mut self.findings)))
    }
}

impl<C> Schema for Checking<C> {
    type Context = C;
    type Event = CheckEvent;
    type Error = CheckError;
}

impl OperationError for CheckError {
    fn id(&self) -> &'static str {
        match self {
            CheckError::Store(_) => "store",
            CheckError::Invalid(_) => "invalid_argument",
            CheckError::Aborted => crate::operation::ABORTED_ID,
        }
    }

    fn aborted() -> CheckError {
        CheckError::Aborted
    }

    fn store(error: StoreError) -> CheckError {
        CheckError::Store(error)
    }

    fn as_store(&self) -> Option<&StoreError> {
        match self {
            CheckError::Store(s) => Some(s),
            _ => None,
        }
    }

    fn is_bad_input(&self) -> bool {
        matches!(self, CheckError::Invalid(_))
    }
}

/// A flow step of a check: `Ok(None)` while it waits.
pub type CheckProgress<T> = Result<Option<T>, CheckError>;

/// The findings reported so far and the rows scanned, and the events that say so.
#[derive(Debug, Default)]
pub struct Report {
    summary: CheckSummary,
}

impl Report {
    /// Reports `finding`: counted, and emitted as an event.
    pub fn finding(&mut self, io: &mut Io<CheckEvent>, mut finding: Finding) {
        finding.detail = bounded_detail(finding.detail);
        self.summary.record(&finding);
        io.emit(CheckEvent::Finding(finding));
    }

    /// Counts a scanned page of `rows` rows and emits the progress.
    pub fn scanned(&mut self, io: &mut Io<CheckEvent>, rows: usize) {
        self.summary.rows_scanned += rows as u64;
        io.emit(CheckEvent::Progress {
            rows_scanned: self.summary.rows_scanned,
            findings: self.summary.findings(),
        });
    }

    /// Adds a note to the summary.
    pub fn note(&mut self, note: String) {
        self.summary.notes.push(note);
    }

    /// The final summary.
    pub fn finish(&mut self) -> CheckSummary {
        core::mem::take(&mut self.summary)
    }
}

/// A scan of `rows` page by page: each page is one `ReadRows` of at most `page_rows` rows,
/// the next starting after the last key of the one before, so a scan of any table holds one
/// page at a time.
#[derive(Debug)]
pub struct PagedScan {
    /// The request of the next page, `None` once the last page was read.
    next: Option<ReadRowsRequest>,
    read: Option<ChildId>,
}

impl PagedScan {
    /// A scan of `rows` of `table` through `filter`, `page_rows` rows a page (at least 1).
    pub fn new(table: &str, rows: RowSet, filter: Option<RowFilter>, page_rows: i64) -> PagedScan {
        PagedScan {
            next: Some(ReadRowsRequest {
                table: table.into(),
                rows,
                filter,
                rows_limit: page_rows.max(1),
                ..Default::default()
            }),
            read: None,
        }
    }

    /// The next page: `Ok(None)` while it is being read, `Ok(Some(rows))` once read (an empty
    /// page only when the scan is over; see [`PagedScan::is_done`]).
    pub fn poll(&mut self, io: &mut Io<CheckEvent>) -> CheckProgress<Vec<Row>> {
        let read = match self.read {
            Some(read) => read,
            None => match &self.next {
                Some(request) => {
                    let read = io.read_rows(request.clone());
                    self.read = Some(read);
                    read
                }
                None => return Ok(Some(Vec::new())),
            },
        };
        let rows = match io.take(read) {
            None => return Ok(None),
            Some(Ok(ChildOutput::Rows(rows))) => owned_rows(rows),
            Some(Ok(_)) => Vec::new(),
            Some(Err(e)) => return Err(CheckError::Store(e)),
        };
        self.read = None;
        self.next = match (&self.next, rows.last()) {
            (Some(request), Some(last)) if rows.len() as i64 >= request.rows_limit => {
                // Nothing delivered counts against the page size: each page keeps its limit.
                resume_request(request, Some(&last.key), 0).map_err(|e| {
                    CheckError::Store(StoreError::new(Code::Internal, e.to_string()))
                })?
            }
            _ => None,
        };
        Ok(Some(rows))
    }

    /// Whether every page has been read.
    pub fn is_done(&self) -> bool {
        self.next.is_none() && self.read.is_none()
    }
}

/// Suspected findings waiting for their grace period, oldest first, at most `max` of them.
#[derive(Debug)]
pub struct Pending<T> {
    queue: VecDeque<(Timestamp, T)>,
    max: usize,
}

impl<T> Pending<T> {
    /// An empty queue holding at most `max` (at least 1).
    pub fn new(max: usize) -> Pending<T> {
        Pending {
            queue: VecDeque::new(),
            max: max.max(1),
        }
    }

    /// Holds `item` until `due`. Items are due in the order they were pushed (every push uses
    /// the same grace period from a clock that never goes back).
    pub fn push(&mut self, due: Timestamp, item: T) {
        self.queue.push_back((due, item));
    }

    /// Whether the queue is at its bound (the scan should wait for the oldest to be due).
    pub fn is_full(&self) -> bool {
        self.queue.len() >= self.max
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// When the oldest item is due.
    pub fn next_due(&self) -> Option<Timestamp> {
        self.queue.front().map(|(due, _)| *due)
    }

    /// The items due at `now`, oldest first, at most `limit`.
    pub fn take_due(&mut self, now: Timestamp, limit: usize) -> Vec<T> {
        let mut due = Vec::new();
        while due.len() < limit {
            match self.queue.front() {
                Some((at, _)) if *at <= now => {
                    if let Some((_, item)) = self.queue.pop_front() {
                        due.push(item);
                    }
                }
                _ => break,
            }
        }
        due
    }
}

/// What a scanning check does next ([`Scanner::next`]).
#[derive(Debug)]
pub enum Step<T> {
    /// Read these suspects again: their grace period has passed.
    Recheck(Vec<T>),
    /// Check this page.
    Page(Vec<Row>),
    /// The scan is over and nothing is held: the summary.
    Done(CheckSummary),
}

/// The loop every check that holds suspects runs (rule 1.2): suspects whose grace period has
/// passed are re-read first, a page's worth at a time; a full queue, or the end of the scan
/// with suspects left, waits for the oldest; otherwise the next page is read.
#[derive(Debug)]
pub struct Scanner<T> {
    scan: PagedScan,
    pending: Pending<T>,
    report: Report,
    options: CheckOptions,
}

impl<T> Scanner<T> {
    /// Scans with `scan` under `options`.
    pub fn new(scan: PagedScan, options: CheckOptions) -> Scanner<T> {
        Scanner {
            scan,
            pending: Pending::new(options.max_pending),
            report: Report::default(),
            options,
        }
    }

    /// The next step; `Ok(None)` while a page is read or the timer runs.
    pub fn next(&mut self, io: &mut Io<CheckEvent>) -> CheckProgress<Step<T>> {
        if io.sleeping() {
            return Ok(None);
        }
        let batch = usize::try_from(self.options.page_rows).unwrap_or(1).max(1);
        let due = self.pending.take_due(io.now(), batch);
        if !due.is_empty() {
            return Ok(Some(Step::Recheck(due)));
        }
        if self.pending.is_full() || (self.scan.is_done() && !self.pending.is_empty()) {
            if let Some(at) = self.pending.next_due() {
                io.sleep_until(at);
            }
            return Ok(None);
        }
        if self.scan.is_done() {
            return Ok(Some(Step::Done(self.report.finish())));
        }
        Ok(self.scan.poll(io)?.map(Step::Page))
    }

    /// Holds `suspect` for the grace period from now.
    pub fn hold(&mut self, io: &Io<CheckEvent>, suspect: T) {
        let due = Timestamp(io.now().0.saturating_add(self.options.grace_micros));
        self.pending.push(due, suspect);
    }

    /// The findings reported so far.
    pub fn report(&mut self) -> &mut Report {
        &mut self.report
    }

    /// The check's options.
    pub fn options(&self) -> &CheckOptions {
        &self.options
    }
}

/// A conditional write repairing a finding (rule 1.3), and which answer means it was applied.
#[derive(Clone, Debug)]
pub struct Repair {
    /// The `CheckAndMutateRow`.
    pub request: crate::Request,
    /// The write is the `true` branch (a condition on the row as read) rather than the
    /// `false` one (a condition that what is missing is still missing).
    pub when_matched: bool,
}

impl Repair {
    /// The cells the write sets on the branch it is sent for (what a re-check looks for).
    pub fn cells(&self) -> impl Iterator<Item = &rowkit_codec::model::Mutation> {
        let mutations = match &self.request {
            crate::Request::CheckAndMutateRow(cam) if self.when_matched => &cam.true_mutations[..],
            crate::Request::CheckAndMutateRow(cam) => &cam.false_mutations[..],
            _ => &[],
        };
        mutations
            .iter()
            .filter(|m| matches!(m, rowkit_codec::model::Mutation::SetCell { .. }))
    }
}

/// Repairs in flight, each with its finding; then the rows of those whose condition did not
/// match, re-read.
#[derive(Debug)]
pub struct Repairs {
    writes: WaitAll,
    findings: Vec<(Finding, Repair)>,
    /// The findings whose repair's condition did not match, their rows being re-read.
    recheck: Option<(PointReads, Vec<(Finding, Repair)>)>,
}

impl Repairs {
    /// Sends every repair at once.
    pub fn start(io: &mut Io<CheckEvent>, repairs: Vec<(Finding, Repair)>) -> Repairs {
        let mut ids = Vec::new();
        for (_, r) in &repairs {
            ids.push(io.unary(r.request.clone()));
        }
        Repairs {
            writes: WaitAll::new(ids),
            findings: repairs,
            recheck: None,
        }
    }

    /// Once every repair is answered, reports each finding: repaired when its write applied;
    /// with the error when the write failed. A repair whose condition did not match (the row
    /// changed since it was read) is not forced: its row is read again and the finding is
    /// judged by `still_wrong(finding, repair, row)` (`None`: the row is gone): reported as left when it
    /// still holds, dropped when it no longer does (rule 1.3). `Some(())` once all are done.
    pub fn poll(
        &mut self,
        io: &mut Io<CheckEvent>,
        report: &mut Report,
        still_wrong: impl Fn(&Finding, &Repair, Option<&Row>) -> bool,
    ) -> Option<()> {
        if let Some((reads, unmatched)) = &mut self.recheck {
            let found = match reads.poll(io) {
                Ok(None) => return None,
                Ok(Some(found)) => Ok(found),
                Err(e) => Err(e),
            };
            for (mut f, repair) in core::mem::take(unmatched) {
                match &found {
                    Ok(rows) if !still_wrong(&f, &repair, rows.get(&f.row_key)) => continue,
                    Ok(_) => {
                        f.detail = alloc::format!(
                            "{}; not repaired: the repair's condition did not hold, and a second read \
                             finds it still wrong",
                            f.detail
                        )
                    }
                    Err(e) => {
                        f.detail = alloc::format!(
                            "{}; not repaired: the row changed since it was read, and reading \
                             it again failed: {e}",
                            f.detail
                        )
                    }
                }
                report.finding(io, f);
            }
            self.recheck = None;
            return Some(());
        }
        let outcomes = self.writes.poll(io)?;
        let mut unmatched = Vec::new();
        for ((mut f, repair), outcome) in core::mem::take(&mut self.findings)
            .into_iter()
            .zip(outcomes)
        {
            match outcome {
                Ok(ChildOutput::Unary(crate::Response::CheckAndMutateRow {
                    predicate_matched,
                })) => {
                    if predicate_matched != repair.when_matched {
                        unmatched.push((f, repair));
                        continue;
                    }
                    f.repaired = true;
                }
                Ok(other) => {
                    f.detail = alloc::format!("{}; repair: unexpected reply {other:?}", f.detail)
                }
                Err(e) => f.detail = alloc::format!("{}; repair failed: {e}", f.detail),
            }
            report.finding(io, f);
        }
        let Some(table) = unmatched.first().and_then(|(_, r)| match &r.request {
            crate::Request::CheckAndMutateRow(cam) => Some(cam.table.clone()),
            _ => None,
        }) else {
            return Some(());
        };
        let keys = unmatched.iter().map(|(f, _)| f.row_key.clone()).collect();
        self.recheck = Some((PointReads::start(io, &table, keys), unmatched));
        None
    }
}

/// The rows a batch of point reads found, by key.
pub type RowsByKey = BTreeMap<Vec<u8>, Row>;

/// A batch of point reads (`rows.row_keys`), keyed by row key once done.
#[derive(Debug)]
pub struct PointReads {
    read: Option<ChildId>,
}

impl PointReads {
    /// Reads `keys` of `table` in one `ReadRows` (no read when `keys` is empty).
    pub fn start(io: &mut Io<CheckEvent>, table: &str, mut keys: Vec<Vec<u8>>) -> PointReads {
        keys.sort_unstable();
        keys.dedup();
        if keys.is_empty() {
            return PointReads { read: None };
        }
        let read = io.read_rows(ReadRowsRequest {
            table: table.into(),
            rows: RowSet {
                row_keys: keys,
                row_ranges: Vec::new(),
            },
            ..Default::default()
        });
        PointReads { read: Some(read) }
    }

    /// The rows found (a missing key has no entry), once read.
    pub fn poll(&mut self, io: &mut Io<CheckEvent>) -> CheckProgress<RowsByKey> {
        let Some(read) = self.read else {
            return Ok(Some(RowsByKey::new()));
        };
        match io.take(read) {
            None => Ok(None),
            Some(Ok(ChildOutput::Rows(rows))) => Ok(Some(
                owned_rows(rows)
                    .into_iter()
                    .map(|r| (r.key.clone(), r))
                    .collect(),
            )),
            Some(Ok(_)) => Ok(Some(RowsByKey::new())),
            Some(Err(e)) => Err(CheckError::Store(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn pending_items_come_due_in_order_and_respect_the_bound() {
        let mut p = Pending::new(2);
        p.push(Timestamp(10), "a");
        assert!(!p.is_full());
        p.push(Timestamp(20), "b");
        assert!(p.is_full());
        assert_eq!(p.take_due(Timestamp(9), 10), Vec::<&str>::new());
        assert_eq!(p.next_due(), Some(Timestamp(10)));
        assert_eq!(p.take_due(Timestamp(25), 1), vec!["a"]);
        assert_eq!(p.take_due(Timestamp(25), 5), vec!["b"]);
        assert!(p.is_empty());
    }

    #[test]
    fn summary_counts_left_and_repaired_by_kind() {
        let mut s = CheckSummary::default();
        let f = |kind, repaired| Finding {
            schema: "graph",
            kind,
            row_key: Vec::new(),
            detail: String::new(),
            repair: None,
            repaired,
        };
        s.record(&f("undecodable_key", false));
        s.record(&f("missing_index", true));
        s.record(&f("missing_index", false));
        assert_eq!(s.findings_by_kind["missing_index"], 2);
        assert_eq!((s.repaired, s.left, s.findings()), (1, 2, 3));
        assert!(!s.is_clean());
    }
}
