//! The one evaluator of Bigtable semantics shared by every local store (`spec/bigtable.md`).
//!
//! Any [`TableStorage`] is a [`Store`] through the blanket implementation here, so the memory
//! and redb stores cannot disagree on a rule: validation, filters, mutation order, server time,
//! read-modify-write, chunking, sampling and garbage collection all live in this module; a
//! storage engine only stores bytes and runs one atomic transaction per row.
//!
//! Per request:
//! 1. The table's families are read (missing table -> `NOT_FOUND`).
//! 2. The whole request is validated (section 4, 13), regexes compiled once, before any row is
//!    read or written.
//! 3. Writes run inside [`TableStorage::write_row`]; any error (row over 256 MiB, increment of a
//!    non-8-byte cell) is returned from the closure so the row is left untouched. Server time is
//!    chosen there too, per row transaction (`RowTime`).
//! 4. Reads are lazy streams built on [`TableStorage::next_row`]; a point read is one
//!    [`TableStorage::read_row`].
//!
//! # Admin calls and crashes
//!
//! Every admin call is atomic or tombstoned, so a crash (kill -9) at any point leaves a table
//! or family whole or gone. Creating a table (with its split points), deleting one (however
//! large), and changing a family's GC rule are each one engine transaction. Dropping a family
//! cannot be one: its cells may fill many transactions. So [`TableStorage::remove_family`]
//! removes it from the schema and records it as *dropped* (a tombstone: the family name, per
//! table) in one transaction, and its cells are then purged in steps of one transaction each
//! (`purge_family`), after which the record is forgotten. Until then:
//! - reads and predicates never see cells of a dropped family (`execute` hides them), and a row
//!   holding nothing else does not exist;
//! - no cell of it can be written: a write checked against the old schema fails in its
//!   transaction ([`crate::RowWrite::put`]);
//! - a family of the same name is created only after the purge is done (engines refuse it
//!   before, [`Store::set_family`] purges first), so it never sees old cells: cells are keyed by
//!   family name, and the record is what tells the old ones apart;
//! - the purge resumes after a crash: [`Store::gc`] and the first [`Store::gc_page`] step of a
//!   pass (the background GC of `rowkit serve`) finish every recorded drop first.
//!
//! Each purge step holds the store's purge lock ([`crate::EngineState::purge_lock`]) and
//! first checks that the drop is still recorded, so a purge running in the background never
//! deletes cells of a family re-created meanwhile.

mod filter;
mod read;
mod validate;

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use rowkit_codec::model::{
    Cell, ColumnFamily, GcRule, Mutation, ReadModifyWriteRule, Row, RowFilter, RowRange, RuleOp,
    Timestamp, TimestampRange, ValidationError, limits, row_size,
};
use rowkit_statemachines::{
    CheckAndMutateRowRequest, MutateRowRequest, MutateRowsEntryResult, MutateRowsRequest,
    MutateRowsResponse, ReadModifyWriteRowRequest, ReadRowRequest, ReadRowsRequest, Request,
    Response, SplitMix64, StoreError,
};

pub use filter::CompiledFilter;
pub use read::{SAMPLE_INTERVAL_BYTES, SCANNED_BYTES_BEFORE_MARKER, SCANNED_ROWS_BEFORE_MARKER};
/// Where the chunks of a row are cut: one function, in `rowkit-statemachines` beside the merger.
pub use rowkit_statemachines::readrows::row_chunks;
pub(crate) use validate::{check_not_dropped, check_put_family, remove_from_schema, with_dropped};
pub use validate::{validate_request, validate_schema};

use std::path::Path;

use crate::{
    BackupSummary, ChunkingOptions, GcPage, Reply, RowWrite, ServerTime, Store, TableStorage,
};
use read::{ReadStream, SampleStream};
use validate::Schema;

impl<S: TableStorage> Store for S {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        execute(self, request, now, false)
    }

    /// Whole rows unless the store was told to cut them ([`ChunkingOptions`] other than the
    /// default: tests that run the merger's split paths against a real store).
    fn execute_local(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        let whole_rows = self.chunking() == ChunkingOptions::default();
        execute(self, request, now, whole_rows)
    }

    fn in_process(&self) -> bool {
        true
    }

    fn writes_in_memory(&self) -> bool {
        TableStorage::writes_in_memory(self)
    }

    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        validate_schema(table, families)?;
        TableStorage::create_table(self, table, families)
    }

    fn create_table_with_splits(
        &self,
        table: &str,
        families: &[ColumnFamily],
        splits: &[Vec<u8>],
    ) -> Result<(), StoreError> {
        validate_schema(table, families)?;
        let splits = normalize_splits(splits)?;
        TableStorage::create_table_with_splits(self, table, families, &splits)
    }

    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        TableStorage::delete_table(self, table)
    }

    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        TableStorage::list_tables(self)
    }

    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        TableStorage::families(self, table)
    }

    /// A family of a dropped one's name is created once the old one's cells are purged (see
    /// the module doc).
    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        if is_dropped(self, table, &family.name)? {
            purge_family(self, table, &family.name)?;
        }
        TableStorage::set_family(self, table, family)
    }

    fn drop_family(&self, table: &str, family: &str) -> Result<(), StoreError> {
        drop_family(self, table, family)
    }

    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError> {
        gc(self, table, now)
    }

    fn gc_page(
        &self,
        table: &str,
        after: Option<&[u8]>,
        max_rows: usize,
        now: Timestamp,
    ) -> Result<GcPage, StoreError> {
        gc_page(self, table, after, max_rows, now)
    }

    fn backup_to(&self, path: &Path, overwrite: bool) -> Result<BackupSummary, StoreError> {
        TableStorage::backup_to(self, path, overwrite)
    }
}

/// CreateTable's `initial_splits` as a store keeps them: ascending, each once. An empty key
/// (no split point) or one longer than a row key may be is refused (`INVALID_ARGUMENT`).
pub fn normalize_splits(splits: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, StoreError> {
    for key in splits {
        if key.is_empty() || key.len() > limits::MAX_ROW_KEY_BYTES {
            return Err(StoreError::new(
                rowkit_statemachines::Code::InvalidArgument,
                format!(
                    "initial split keys must be 1 to {} bytes, got one of {}",
                    limits::MAX_ROW_KEY_BYTES,
                    key.len()
                ),
            ));
        }
    }
    let mut sorted = splits.to_vec();
    sorted.sort();
    sorted.dedup();
    Ok(sorted)
}

/// [`Store::execute`] (`whole_rows`: [`Store::execute_local`]).
fn execute<S: TableStorage>(
    store: &S,
    request: Request,
    now: Timestamp,
    whole_rows: bool,
) -> Result<Reply<'_>, StoreError> {
    let families = store.schema(request.table())?;
    let hidden = store.dropped_families(request.table())?;
    let writer = Writer {
        store,
        schema: Schema::new(&families),
        hidden: &hidden,
        now,
    };
    match request {
        Request::ReadRows(r) => read_rows(store, r, whole_rows, hidden.clone()),
        Request::ReadRow(r) => read_row(store, r, &hidden),
        Request::MutateRow(r) => writer.mutate_row(r),
        Request::MutateRows(r) => writer.mutate_rows(r),
        Request::CheckAndMutateRow(r) => writer.check_and_mutate(r),
        Request::ReadModifyWriteRow(r) => writer.read_modify_write(r),
        Request::SampleRowKeys(r) => {
            let splits = store.splits(&r.table)?;
            Ok(Reply::Stream(Box::new(SampleStream::new(
                store, r.table, &splits,
            ))))
        }
    }
}

/// ReadRows as a lazy stream: chunked per the store's [`ChunkingOptions`], or whole rows.
fn read_rows<S: TableStorage>(
    store: &S,
    req: ReadRowsRequest,
    whole_rows: bool,
    hidden: Arc<[String]>,
) -> Result<Reply<'_>, StoreError> {
    let filter = validate::check_read(&req)?;
    let mut ranges: VecDeque<RowRange> = req.rows.normalized_ranges().into();
    if req.reversed {
        ranges = ranges.into_iter().rev().collect();
    }
    Ok(Reply::Stream(Box::new(ReadStream {
        store,
        table: req.table,
        hidden,
        ranges,
        after: None,
        reversed: req.reversed,
        filter,
        // Every ReadRows takes one seed, whether or not its filter samples.
        rng: SplitMix64::new(store.next_request_seed()),
        rows_limit: u64::try_from(req.rows_limit).unwrap_or(0),
        rows_returned: 0,
        chunking: store.chunking(),
        whole_rows,
        pending: VecDeque::new(),
        exhausted: false,
        skipped_rows: 0,
        skipped_bytes: 0,
        marker: None,
    })))
}

/// A point read: one lookup, the dropped families hidden, the filter applied; the row when a
/// cell is left (`Response::Row`, unary, whatever the chunking: no wire carries it).
fn read_row<'s, S: TableStorage>(
    store: &'s S,
    req: ReadRowRequest,
    hidden: &[String],
) -> Result<Reply<'s>, StoreError> {
    let filter = validate::check_read_row(&req)?;
    // One seed, as every ReadRows takes, so the requests after it draw what they always drew.
    let mut rng = SplitMix64::new(store.next_request_seed());
    // A filter that only limits the cells per column (the node and document reads' `LatestN`)
    // is applied by the engine as it reads: older cells are never copied out.
    let per_column = match req.filter {
        Some(RowFilter::CellsPerColumnLimit(n)) => usize::try_from(n).ok(),
        _ => None,
    };
    let Some(mut row) = store.read_row(&req.table, &req.row_key, per_column)? else {
        return Ok(Reply::Unary(Response::Row(None)));
    };
    hide_dropped(&mut row.cells, hidden);
    if let (Some(filter), None) = (&filter, per_column) {
        row.cells = filter.apply(&row.key, row.cells, &mut rng);
    }
    // A row whose filtered result is empty is not returned, as in a scan.
    let row = (!row.cells.is_empty()).then(|| Arc::new(row));
    Ok(Reply::Unary(Response::Row(row)))
}

/// The server time of one row transaction (`Store::execute`): drawn from the store's
/// [`ServerTime`] the first time a cell of the transaction needs it, so inside the transaction.
/// A row's transactions run one at a time, so one that applies later draws later and gets a
/// stamp at least as late, whatever `now` its caller read: a newer cell never hides behind an
/// older one. Every server-time cell of the transaction gets the same stamp, and a transaction
/// that needs none leaves the store's clock alone.
struct RowTime<'s> {
    server: &'s ServerTime,
    now: Timestamp,
    stamp: Option<Timestamp>,
}

impl<'s> RowTime<'s> {
    /// Created inside the row's transaction; `now` is the request's lower bound.
    fn new(server: &'s ServerTime, now: Timestamp) -> RowTime<'s> {
        RowTime {
            server,
            now,
            stamp: None,
        }
    }

    /// The transaction's server time: `max(floor_ms(now), last stamp of the store)`.
    fn get(&mut self) -> Timestamp {
        *self
            .stamp
            .get_or_insert_with(|| self.server.stamp(self.now))
    }
}

/// Applies mutations in order to one row inside its transaction. A write that makes the row
/// larger than 256 MiB fails the whole list (the caller's transaction rolls back).
fn apply_mutations<R: RowWrite + ?Sized>(
    row: &mut R,
    mutations: &[Mutation],
    time: &mut RowTime<'_>,
) -> Result<(), StoreError> {
    for m in mutations {
        match m {
            Mutation::SetCell {
                family,
                qualifier,
                timestamp,
                value,
            } => {
                let ts = if *timestamp == Timestamp::SERVER_TIME {
                    time.get()
                } else {
                    *timestamp
                };
                row.put(family, qualifier, ts, value)?;
                check_row_size(row)?;
            }
            Mutation::DeleteFromColumn {
                family,
                qualifier,
                range,
            } => row.delete_column(family, qualifier, *range)?,
            Mutation::DeleteFromFamily { family } => row.delete_family(family)?,
            Mutation::DeleteFromRow => row.delete_row()?,
        }
    }
    Ok(())
}

fn check_row_size<R: RowWrite + ?Sized>(row: &R) -> Result<(), StoreError> {
    let size = row.size();
    if size > limits::MAX_ROW_BYTES {
        return Err(ValidationError::RowTooLarge { size }.into());
    }
    Ok(())
}

/// One write request's context: the store, the table's schema, and the caller's `now`, which
/// only bounds server time from below: each row transaction picks its own ([`RowTime`]), as
/// Bigtable stamps at apply time.
struct Writer<'s, 'f, S> {
    store: &'s S,
    schema: Schema<'f>,
    /// Dropped families whose cells may remain: a predicate never sees them.
    hidden: &'f [String],
    now: Timestamp,
}

impl<'s, S: TableStorage> Writer<'s, '_, S> {
    /// The server time of one row transaction; call it inside the transaction.
    fn row_time(&self) -> RowTime<'s> {
        RowTime::new(self.store.server_time(), self.now)
    }

    /// MutateRow: the mutations in order, in one row transaction.
    fn mutate_row(&self, req: MutateRowRequest) -> Result<Reply<'s>, StoreError> {
        validate::check_row_mutations(&req.row_key, &req.mutations, &self.schema)?;
        self.store.write_row(&req.table, &req.row_key, |row| {
            let mut time = self.row_time();
            apply_mutations(row, &req.mutations, &mut time)
        })?;
        Ok(Reply::Unary(Response::MutateRow))
    }

    /// MutateRows: each valid entry in its own row transaction, in index order.
    fn mutate_rows(&self, req: MutateRowsRequest) -> Result<Reply<'s>, StoreError> {
        validate::check_batch(&req)?;
        // Entries apply eagerly, in index order, each atomically; the batch is one response part.
        // Invalid entries fail alone, before the valid ones are written (as one batch where the
        // storage can).
        let mut results: Vec<Option<Result<(), StoreError>>> = req
            .entries
            .iter()
            .map(|entry| {
                validate::check_row_mutations(&entry.row_key, &entry.mutations, &self.schema)
                    .err()
                    .map(|e| Err(StoreError::from(e)))
            })
            .collect();
        let valid: Vec<usize> = (0..results.len())
            .filter(|&i| results[i].is_none())
            .collect();
        let keys: Vec<&[u8]> = valid
            .iter()
            .map(|&i| req.entries[i].row_key.as_slice())
            .collect();
        // Each entry is its own row transaction with its own server time.
        let written = self.store.write_rows(&req.table, &keys, |k, row| {
            let mut time = self.row_time();
            apply_mutations(row, &req.entries[valid[k]].mutations, &mut time)
        });
        for (&i, result) in valid.iter().zip(written) {
            results[i] = Some(result);
        }
        let entries = results
            .into_iter()
            .enumerate()
            .map(|(index, result)| MutateRowsEntryResult {
                index,
                result: result.unwrap_or(Ok(())),
            })
            .collect();
        let part = Response::MutateRowsPart(MutateRowsResponse { entries });
        Ok(Reply::Stream(Box::new(std::iter::once(Ok(part)))))
    }

    /// CheckAndMutateRow: the predicate and the chosen mutations in one row transaction.
    fn check_and_mutate(&self, req: CheckAndMutateRowRequest) -> Result<Reply<'s>, StoreError> {
        let predicate = validate::check_conditional(&req, &self.schema)?;
        let mut rng = SplitMix64::new(self.store.next_request_seed());
        let key = req.row_key.as_slice();
        let predicate_matched = self.store.write_row(&req.table, key, |row| {
            let mut cells = row.cells()?;
            hide_dropped(&mut cells, self.hidden);
            // Unset predicate: "the row contains any values at all". Otherwise any cell in the
            // result, sink output included, is a match; transformers do not change that.
            let matched = match &predicate {
                None => !cells.is_empty(),
                Some(f) => !f.apply(key, cells, &mut rng).is_empty(),
            };
            let chosen = if matched {
                &req.true_mutations
            } else {
                &req.false_mutations
            };
            let mut time = self.row_time();
            apply_mutations(row, chosen, &mut time)?;
            Ok(matched)
        })?;
        Ok(Reply::Unary(Response::CheckAndMutateRow {
            predicate_matched,
        }))
    }

    /// ReadModifyWriteRow: the rules in order, in one row transaction; the reply holds the
    /// modified cells.
    fn read_modify_write(&self, req: ReadModifyWriteRowRequest) -> Result<Reply<'s>, StoreError> {
        validate::check_rmw(&req, &self.schema)?;
        let cells = self.store.write_row(&req.table, &req.row_key, |row| {
            // Keyed by column, so the reply is in canonical order with one cell per column.
            let mut modified: BTreeMap<Column<'_>, (Timestamp, Vec<u8>)> = BTreeMap::new();
            let mut time = self.row_time();
            for rule in &req.rules {
                let latest = row.latest(&rule.family, &rule.qualifier)?;
                let value = modified_value(rule, latest.as_ref().map(|(_, v)| v.as_slice()))?;
                // "The greater of the existing timestamp or the current server time" (section 8).
                let server = time.get();
                let ts = latest.map_or(server, |(ts, _)| ts.max(server));
                row.put(&rule.family, &rule.qualifier, ts, &value)?;
                check_row_size(row)?;
                modified.insert((&rule.family, &rule.qualifier), (ts, value));
            }
            Ok(modified
                .into_iter()
                .map(|((family, qualifier), (timestamp, value))| Cell {
                    family: family.to_string(),
                    qualifier: qualifier.to_vec(),
                    timestamp,
                    value,
                    labels: Vec::new(),
                })
                .collect())
        })?;
        Ok(Reply::Unary(Response::ReadModifyWriteRow(Row {
            key: req.row_key,
            cells,
        })))
    }
}

/// The new value of one read-modify-write rule given the column's latest value.
fn modified_value(
    rule: &ReadModifyWriteRule,
    latest: Option<&[u8]>,
) -> Result<Vec<u8>, ValidationError> {
    match &rule.op {
        RuleOp::AppendValue(suffix) => {
            let old = latest.unwrap_or_default();
            let len = old.len().saturating_add(suffix.len());
            if len > limits::MAX_VALUE_BYTES {
                return Err(ValidationError::ValueTooLarge { len });
            }
            let mut value = Vec::with_capacity(len);
            value.extend_from_slice(old);
            value.extend_from_slice(suffix);
            Ok(value)
        }
        RuleOp::IncrementAmount(amount) => {
            let old = match latest {
                None => 0,
                Some(bytes) => {
                    let arr: [u8; 8] = bytes
                        .try_into()
                        .map_err(|_| ValidationError::IncrementNonInt64 { len: bytes.len() })?;
                    i64::from_be_bytes(arr)
                }
            };
            // Overflow wraps, as Go's int64 in the emulator (`spec/bigtable.md` 8).
            Ok(old.wrapping_add(*amount).to_be_bytes().to_vec())
        }
    }
}

/// A column named by a request: `(family, qualifier)`.
type Column<'r> = (&'r str, &'r [u8]);

/// The cells of a row (canonical order) that the families' GC rules collect at `now`: each
/// column's cells are indexed from 0 = newest.
fn collectible<'c>(
    cells: &'c [Cell],
    rules: &BTreeMap<String, GcRule>,
    now: Timestamp,
) -> Vec<&'c Cell> {
    let mut out = Vec::new();
    let mut index = 0usize;
    for (i, cell) in cells.iter().enumerate() {
        let same_column = i
            .checked_sub(1)
            .and_then(|p| cells.get(p))
            .is_some_and(|p| p.family == cell.family && p.qualifier == cell.qualifier);
        index = if same_column { index + 1 } else { 0 };
        if let Some(rule) = rules.get(&cell.family)
            && rule.collects(index, cell.timestamp, now)
        {
            out.push(cell);
        }
    }
    out
}

/// Rows a step of [`purge_family`] reads, and at most rewrites in one engine transaction.
const PURGE_STEP_ROWS: usize = 1_000;

/// Removes the cells of families in `hidden` (dropped, maybe not purged yet) from `cells`.
pub(crate) fn hide_dropped(cells: &mut Vec<Cell>, hidden: &[String]) {
    if !hidden.is_empty() {
        cells.retain(|c| !hidden.contains(&c.family));
    }
}

/// Whether `family` of `table` is recorded as dropped, its cells maybe not purged yet.
fn is_dropped<S: TableStorage>(store: &S, table: &str, family: &str) -> Result<bool, StoreError> {
    Ok(store.dropped_families(table)?.iter().any(|d| d == family))
}

/// [`Store::drop_family`]: the family leaves the schema and is recorded as dropped in one
/// engine transaction, then its cells are purged (the module doc).
fn drop_family<S: TableStorage>(store: &S, table: &str, family: &str) -> Result<(), StoreError> {
    store.remove_family(table, family)?;
    purge_family(store, table, family).map(drop)
}

/// Purges every family recorded as dropped from `table` ([`purge_family`]); returns the rows
/// that lost cells.
fn purge_dropped<S: TableStorage>(store: &S, table: &str) -> Result<u64, StoreError> {
    let mut purged = 0;
    for family in store.dropped_families(table)?.iter() {
        purged += purge_family(store, table, family)?;
    }
    Ok(purged)
}

/// Deletes every cell of `family`, recorded as dropped from `table`, then forgets the record;
/// returns the rows that lost cells. Steps of [`PURGE_STEP_ROWS`] rows from the first row to
/// the last, each rewriting its rows in one [`TableStorage::write_rows`] under the purge lock,
/// after checking that the drop is still recorded: if it is not (another purge finished it, and
/// maybe re-created the family), this one stops. Idempotent, so a purge a crash cut short is
/// simply run again from the start.
fn purge_family<S: TableStorage>(store: &S, table: &str, family: &str) -> Result<u64, StoreError> {
    let all = RowRange::all();
    let mut after: Option<Vec<u8>> = None;
    let mut purged = 0u64;
    loop {
        let _purging = store.state().purge_lock();
        if !is_dropped(store, table, family)? {
            return Ok(purged);
        }
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut read = 0usize;
        let finished = loop {
            let Some(row) = store.next_row(table, &all, after.as_deref(), false)? else {
                break true;
            };
            if row.cells.iter().any(|c| c.family == family) {
                keys.push(row.key.clone());
            }
            after = Some(row.key);
            read += 1;
            if read == PURGE_STEP_ROWS {
                break false;
            }
        };
        if !keys.is_empty() {
            let batch: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            for deleted in store.write_rows(table, &batch, |_, row| row.delete_family(family)) {
                deleted?;
            }
        }
        purged += keys.len() as u64;
        if finished {
            store.forget_dropped(table, family)?;
            return Ok(purged);
        }
    }
}

/// Rows [`gc`] reads per [`gc_page`] step.
const GC_PASS_PAGE_ROWS: usize = 1_000;

/// Bytes of rows (as [`row_size`] counts them) after which a [`gc_page`] step stops reading,
/// whatever its row limit: the rows it rewrites are then one short engine transaction.
pub const GC_PAGE_BYTES: u64 = 4 << 20;

/// The GC rules of a table's families, by family name (families without one are left out).
fn gc_rules<S: TableStorage>(
    store: &S,
    table: &str,
) -> Result<BTreeMap<String, GcRule>, StoreError> {
    Ok(store
        .schema(table)?
        .iter()
        .filter_map(|f| Some((f.name.clone(), f.gc_rule.clone()?)))
        .collect())
}

/// Garbage collection of a whole table (`spec/bigtable.md` 12): [`gc_page`] steps from the
/// first row to the last.
fn gc<S: TableStorage>(store: &S, table: &str, now: Timestamp) -> Result<u64, StoreError> {
    purge_dropped(store, table)?;
    let mut deleted = 0u64;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page = gc_page(store, table, after.as_deref(), GC_PASS_PAGE_ROWS, now)?;
        deleted += page.deleted;
        match page.next_after {
            Some(key) => after = Some(key),
            None => return Ok(deleted),
        }
    }
}

/// [`Store::gc_page`]: reads up to `max_rows` rows after `after` (fewer once they hold
/// [`GC_PAGE_BYTES`]) from snapshots, without blocking writers, then rewrites those with
/// collectible cells in one [`TableStorage::write_rows`]: each row atomically, its victims
/// recomputed inside its transaction from what it holds then, so a write that landed since
/// the scan is never lost (a newer cell only makes older ones collectible, never itself).
fn gc_page<S: TableStorage>(
    store: &S,
    table: &str,
    after: Option<&[u8]>,
    max_rows: usize,
    now: Timestamp,
) -> Result<GcPage, StoreError> {
    if after.is_none() {
        // The first step of a pass resumes the purges a crash cut short (the module doc).
        purge_dropped(store, table)?;
    }
    let rules = gc_rules(store, table)?;
    if rules.is_empty() {
        return Ok(GcPage::default());
    }
    let all = RowRange::all();
    let mut page = GcPage::default();
    let mut after = after.map(<[u8]>::to_vec);
    let mut bytes = 0u64;
    let mut candidates: Vec<Vec<u8>> = Vec::new();
    loop {
        let Some(row) = store.next_row(table, &all, after.as_deref(), false)? else {
            after = None;
            break;
        };
        page.rows += 1;
        bytes = bytes.saturating_add(row_size(&row.key, &row.cells));
        if !collectible(&row.cells, &rules, now).is_empty() {
            candidates.push(row.key.clone());
        }
        after = Some(row.key);
        if page.rows >= max_rows.max(1) as u64 || bytes >= GC_PAGE_BYTES {
            break;
        }
    }
    page.next_after = after;
    let keys: Vec<&[u8]> = candidates.iter().map(Vec::as_slice).collect();
    let rewritten = store.write_rows(table, &keys, |_, row| {
        let cells = row.cells()?;
        let victims = collectible(&cells, &rules, now);
        // A column's victims are its oldest cells (every rule collects a cell the more surely
        // the older it is: a higher index, an earlier timestamp, and unions and intersections
        // keep that), so one range from 0 to just past its newest victim, the first one met in
        // canonical order, deletes them all in one call instead of one call per cell.
        let mut column: Option<(&str, &[u8])> = None;
        for cell in &victims {
            let this = (cell.family.as_str(), cell.qualifier.as_slice());
            if column == Some(this) {
                continue;
            }
            column = Some(this);
            // ts >= 0, so the end is never the 0 = infinity mark.
            let range = TimestampRange {
                start: 0,
                end: cell.timestamp.0.saturating_add(1),
            };
            row.delete_column(&cell.family, &cell.qualifier, Some(range))?;
        }
        Ok(victims.len() as u64)
    });
    for deleted in rewritten {
        page.deleted += deleted?;
    }
    Ok(page)
}
