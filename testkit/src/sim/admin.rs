//! Crashes inside admin calls: every admin call that changes a schema or drops data is run over
//! a store that "dies" after its first `n` engine transactions ([`CrashAfter`]), for every `n`
//! from 0 until the call completes, and the store as the crash left it (a redb file reopened,
//! or the memory store as it stands) must hold the invariant of the call:
//!
//! - create table (with split points): the table is absent, or present with its families, its
//!   split points and no row;
//! - delete table: the table is present with every row, or absent; re-created, it is empty;
//! - drop family (and its resumed purge, and re-creating the family meanwhile): the family is
//!   in the schema with every cell, or absent with no cell visible; once the purge ran, none is
//!   stored; a family re-created with its name is empty;
//! - set a GC rule: the family has the old rule or the new one, and every cell (GC is not the
//!   call's business).
//!
//! A crash here is a transaction boundary: a redb transaction either committed or left
//! nothing (redb's own guarantee, which the kill -9 tests of `rowkit serve` check on a real
//! process), so stopping the calls between two transactions and reopening the file is what a
//! kill at that instant leaves.
//!
//! ```
//! use rowkit_testkit::sim::admin::{AdminOp, Engine, crash_every_step};
//!
//! // A drop of a family is cut after its schema change and after each purge step.
//! let report = crash_every_step(Engine::Memory, AdminOp::DropFamily).unwrap();
//! assert!(report.crash_points >= 2);
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rowkit_codec::model::{Cell, ColumnFamily, GcRule, Mutation, Row, RowRange, Timestamp};
use rowkit_store::{EngineState, MemoryStore, RedbStore, Store, StoreError, TableStorage};
use rowkit_statemachines::{Code, MutateRowsEntry, MutateRowsRequest, ReadRowsRequest, Request};

/// The table every run works on.
const TABLE: &str = "t";
/// The family that is dropped.
const DROPPED: &str = "g";
/// The family that stays.
const KEPT: &str = "f";
/// Rows of the table: a drop's purge takes several steps of 1 000 rows.
const ROWS: usize = 2_500;
/// The split points create table is given.
const SPLITS: [&[u8]; 2] = [b"r001000", b"r002000"];

/// A [`TableStorage`] that forwards to its engine until `budget` write transactions (schema
/// changes, row writes, batches) have run, then fails that call and every later one with
/// `UNAVAILABLE`, reads included: the process died there.
pub struct CrashAfter<S> {
    inner: S,
    budget: u64,
    /// Write transactions let through so far.
    commits: AtomicU64,
}

impl<S: TableStorage> CrashAfter<S> {
    /// `inner`, dying before its write transaction number `budget` (0: before the first).
    pub fn new(inner: S, budget: u64) -> CrashAfter<S> {
        CrashAfter {
            inner,
            budget,
            commits: AtomicU64::new(0),
        }
    }

    /// Whether the store died.
    pub fn crashed(&self) -> bool {
        self.commits.load(Ordering::SeqCst) > self.budget
    }

    /// The engine, as the crash left it.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Lets one write transaction through, or dies.
    fn transaction(&self) -> Result<(), StoreError> {
        if self.commits.fetch_add(1, Ordering::SeqCst) >= self.budget {
            return Err(died());
        }
        Ok(())
    }

    /// Lets a read through unless the store died.
    fn alive(&self) -> Result<(), StoreError> {
        if self.crashed() {
            return Err(died());
        }
        Ok(())
    }
}

fn died() -> StoreError {
    StoreError::new(Code::Unavailable, "simulated crash")
}

impl<S: TableStorage + 'static> TableStorage for CrashAfter<S> {
    type Row<'t>
        = S::Row<'t>
    where
        Self: 't;

    fn create_table_with_splits(
        &self,
        table: &str,
        families: &[ColumnFamily],
        splits: &[Vec<u8>],
    ) -> Result<(), StoreError> {
        self.transaction()?;
        self.inner.create_table_with_splits(table, families, splits)
    }

    fn splits(&self, table: &str) -> Result<Arc<[Vec<u8>]>, StoreError> {
        self.alive()?;
        self.inner.splits(table)
    }

    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.transaction()?;
        self.inner.delete_table(table)
    }

    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        self.alive()?;
        self.inner.list_tables()
    }

    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.alive()?;
        self.inner.families(table)
    }

    fn set_family(&self, table: &str, family: &ColumnFamily) -> Result<(), StoreError> {
        self.transaction()?;
        self.inner.set_family(table, family)
    }

    fn remove_family(&self, table: &str, family: &str) -> Result<(), StoreError> {
        self.transaction()?;
        self.inner.remove_family(table, family)
    }

    fn dropped_families(&self, table: &str) -> Result<Arc<[String]>, StoreError> {
        self.alive()?;
        self.inner.dropped_families(table)
    }

    fn forget_dropped(&self, table: &str, family: &str) -> Result<(), StoreError> {
        self.transaction()?;
        self.inner.forget_dropped(table, family)
    }

    fn next_row(
        &self,
        table: &str,
        range: &RowRange,
        after: Option<&[u8]>,
        reversed: bool,
    ) -> Result<Option<Row>, StoreError> {
        self.alive()?;
        self.inner.next_row(table, range, after, reversed)
    }

    fn next_row_size(
        &self,
        table: &str,
        range: &RowRange,
        after: Option<&[u8]>,
    ) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        self.alive()?;
        self.inner.next_row_size(table, range, after)
    }

    fn write_row<T>(
        &self,
        table: &str,
        key: &[u8],
        f: impl FnOnce(&mut Self::Row<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.transaction()?;
        self.inner.write_row(table, key, f)
    }

    fn write_rows<T>(
        &self,
        table: &str,
        keys: &[&[u8]],
        f: impl FnMut(usize, &mut Self::Row<'_>) -> Result<T, StoreError>,
    ) -> Vec<Result<T, StoreError>> {
        if let Err(e) = self.transaction() {
            return keys.iter().map(|_| Err(e.clone())).collect();
        }
        self.inner.write_rows(table, keys, f)
    }

    fn state(&self) -> &EngineState {
        self.inner.state()
    }
}

/// The engine a run crashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// [`MemoryStore`]: the state at the crash is the store as it stands.
    Memory,
    /// [`RedbStore`] in a file, reopened after the crash.
    Redb,
}

/// The admin call a run crashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdminOp {
    /// Create table `t` with families `f`, `g` and two split points.
    CreateTable,
    /// Delete the full table `t`.
    DeleteTable,
    /// Drop family `g` of the full table (schema change, purge, forgetting the drop).
    DropFamily,
    /// After a drop of `g` cut short by a crash: the purge resumed by garbage collection.
    ResumePurge,
    /// After a drop of `g` cut short by a crash: create family `g` again.
    RecreateFamily,
    /// Set a GC rule on family `f`.
    SetGcRule,
}

impl AdminOp {
    /// Every admin call the simulation crashes.
    pub const ALL: [AdminOp; 6] = [
        AdminOp::CreateTable,
        AdminOp::DeleteTable,
        AdminOp::DropFamily,
        AdminOp::ResumePurge,
        AdminOp::RecreateFamily,
        AdminOp::SetGcRule,
    ];
}

/// What [`crash_every_step`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CrashReport {
    /// Runs that crashed (one per transaction boundary of the call), each checked.
    pub crash_points: u64,
    /// Runs in which the change had happened at the crash (the rest found the old state).
    pub changed: u64,
}

/// A table's rows as compared here: `(family, value)` per cell, by row key.
pub type Rows = BTreeMap<Vec<u8>, Vec<(String, Vec<u8>)>>;

/// The full table of [`ROWS`] rows ([`table_rows`]).
fn expected_rows(with_dropped: bool) -> Rows {
    table_rows(ROWS, with_dropped)
}

/// The expected cells of a table of `count` rows: row `r{i:06}` holds `f` when `i % 3 != 0`,
/// `g` when `i % 3 != 1` (so some rows hold only `g` and vanish with it), one cell per family;
/// `g` is left out without `with_dropped`. Written here from the row number, never read back
/// from a store under test.
pub fn table_rows(count: usize, with_dropped: bool) -> Rows {
    let mut rows = BTreeMap::new();
    for i in 0..count {
        let mut cells = Vec::new();
        if !i.is_multiple_of(3) {
            cells.push((KEPT.to_string(), format!("f{i}").into_bytes()));
        }
        if with_dropped && i % 3 != 1 {
            cells.push((DROPPED.to_string(), format!("g{i}").into_bytes()));
        }
        if !cells.is_empty() {
            rows.insert(format!("r{i:06}").into_bytes(), cells);
        }
    }
    rows
}

fn families() -> Vec<ColumnFamily> {
    vec![ColumnFamily::new(KEPT), ColumnFamily::new(DROPPED)]
}

const NOW: Timestamp = Timestamp(1_700_000_000_000_000);

/// Fills `store` with the full table.
fn fill(store: &dyn Store) -> Result<(), String> {
    store
        .create_table(TABLE, &families())
        .map_err(|e| format!("setup: create table: {e}"))?;
    write_rows(store, TABLE, &expected_rows(true)).map_err(|e| format!("setup: {e}"))
}

/// Writes `rows` into `table` in one MutateRows, each cell in column `q` at 1 ms; fails if any
/// entry fails.
pub fn write_rows(store: &dyn Store, table: &str, rows: &Rows) -> Result<(), String> {
    let entries = rows
        .iter()
        .map(|(row_key, cells)| MutateRowsEntry {
            row_key: row_key.clone(),
            mutations: cells
                .iter()
                .map(|(family, value)| Mutation::SetCell {
                    family: family.clone(),
                    qualifier: b"q".to_vec(),
                    timestamp: Timestamp::from_millis(1),
                    value: value.clone(),
                })
                .collect(),
        })
        .collect();
    let request = Request::MutateRows(MutateRowsRequest {
        table: table.into(),
        entries,
        ..Default::default()
    });
    let reply = store
        .execute(request, NOW)
        .map_err(|e| format!("write: {e}"))?;
    if let rowkit_store::Reply::Stream(parts) = reply {
        for part in parts {
            if let rowkit_statemachines::Response::MutateRowsPart(p) =
                part.map_err(|e| format!("write: {e}"))?
            {
                for entry in p.entries {
                    entry.result.map_err(|e| format!("write: {e}"))?;
                }
            }
        }
    }
    Ok(())
}

/// The rows of `table` as a reader sees them: `(family, value)` per cell.
pub fn read_rows(store: &dyn Store, table: &str) -> Result<Rows, String> {
    let request = ReadRowsRequest {
        table: table.into(),
        ..Default::default()
    };
    let rows =
        rowkit_client::read_rows_blocking(store, request, NOW).map_err(|e| format!("read: {e}"))?;
    Ok(rows
        .into_iter()
        .map(|row| (row.key, row.cells.into_iter().map(family_value).collect()))
        .collect())
}

fn visible(store: &dyn Store) -> Result<Rows, String> {
    read_rows(store, TABLE)
}

fn family_value(cell: Cell) -> (String, Vec<u8>) {
    (cell.family, cell.value)
}

/// Cells of `family` stored in `table` of the engine, visible or not.
pub fn stored_cells<S: TableStorage>(
    store: &S,
    table: &str,
    family: &str,
) -> Result<usize, String> {
    let all = RowRange::all();
    let mut after: Option<Vec<u8>> = None;
    let mut count = 0;
    while let Some(row) = store
        .next_row(table, &all, after.as_deref(), false)
        .map_err(|e| format!("raw scan: {e}"))?
    {
        count += row.cells.iter().filter(|c| c.family == family).count();
        after = Some(row.key);
    }
    Ok(count)
}

fn family_names(store: &dyn Store) -> Result<Vec<String>, String> {
    Ok(store
        .families(TABLE)
        .map_err(|e| format!("families: {e}"))?
        .into_iter()
        .map(|f| f.name)
        .collect())
}

/// Checks `got` against `want`, naming the first difference.
fn same_rows(what: &str, got: &Rows, want: &Rows) -> Result<(), String> {
    if got == want {
        return Ok(());
    }
    let differs = want
        .iter()
        .find(|(k, v)| got.get(*k) != Some(v))
        .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
        .or_else(|| {
            got.keys()
                .find(|k| !want.contains_key(*k))
                .map(|k| String::from_utf8_lossy(k).into_owned())
        });
    Err(format!(
        "{what}: {} rows, expected {} (first difference at {differs:?})",
        got.len(),
        want.len()
    ))
}

/// A file in the temp directory that is removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new() -> TempFile {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "rowkit-admin-crash-{}-{n}.redb",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One engine instance of a run: the memory store, or a redb file that can be reopened.
enum Instance {
    Memory(MemoryStore),
    Redb(Box<RedbStore>, TempFile),
}

impl Instance {
    fn new(engine: Engine) -> Result<Instance, String> {
        Ok(match engine {
            Engine::Memory => Instance::Memory(MemoryStore::new()),
            Engine::Redb => {
                let file = TempFile::new();
                let store = RedbStore::open(&file.0)
                    .map_err(|e| format!("open: {e}"))?
                    .with_durable_commits(false);
                Instance::Redb(Box::new(store), file)
            }
        })
    }

    /// Runs `call` over this instance crashing after `budget` write transactions; returns
    /// whether it crashed and its result, and the instance as the crash left it (a redb file
    /// closed and reopened).
    fn crash_after(
        self,
        budget: u64,
        call: impl Fn(&dyn Store) -> Result<(), StoreError>,
    ) -> Result<(Instance, bool, Result<(), StoreError>), String> {
        Ok(match self {
            Instance::Memory(store) => {
                let wrapped = CrashAfter::new(store, budget);
                let result = call(&wrapped);
                let crashed = wrapped.crashed();
                (Instance::Memory(wrapped.into_inner()), crashed, result)
            }
            Instance::Redb(store, file) => {
                let wrapped = CrashAfter::new(*store, budget);
                let result = call(&wrapped);
                let crashed = wrapped.crashed();
                drop(wrapped.into_inner());
                let store = RedbStore::open(&file.0)
                    .map_err(|e| format!("reopen after the crash: {e}"))?
                    .with_durable_commits(false);
                (Instance::Redb(Box::new(store), file), crashed, result)
            }
        })
    }

    fn store(&self) -> &dyn Store {
        match self {
            Instance::Memory(s) => s,
            Instance::Redb(s, _) => s.as_ref(),
        }
    }

    /// The table's split points as the engine keeps them.
    fn splits(&self) -> Result<Vec<Vec<u8>>, String> {
        match self {
            Instance::Memory(s) => s.splits(TABLE),
            Instance::Redb(s, _) => s.splits(TABLE),
        }
        .map(|splits| splits.to_vec())
        .map_err(|e| format!("split points: {e}"))
    }

    fn stored_cells(&self, family: &str) -> Result<usize, String> {
        match self {
            Instance::Memory(s) => stored_cells(s, TABLE, family),
            Instance::Redb(s, _) => stored_cells(s.as_ref(), TABLE, family),
        }
    }
}

/// Write transactions after which a drop of `g` is cut short in the setups of
/// [`AdminOp::ResumePurge`] and [`AdminOp::RecreateFamily`]: the schema change and one purge
/// step.
const CUT_DROP_AFTER: u64 = 2;

/// The state a run of `op` starts from.
fn setup(engine: Engine, op: AdminOp) -> Result<Instance, String> {
    let instance = Instance::new(engine)?;
    if op == AdminOp::CreateTable {
        return Ok(instance);
    }
    fill(instance.store())?;
    if matches!(op, AdminOp::ResumePurge | AdminOp::RecreateFamily) {
        let (instance, crashed, _) =
            instance.crash_after(CUT_DROP_AFTER, |s| s.drop_family(TABLE, DROPPED))?;
        if !crashed {
            return Err("setup: the drop finished before its crash".into());
        }
        return Ok(instance);
    }
    Ok(instance)
}

/// The call of `op`.
fn call(op: AdminOp, store: &dyn Store) -> Result<(), StoreError> {
    match op {
        AdminOp::CreateTable => {
            let splits: Vec<Vec<u8>> = SPLITS.iter().map(|s| s.to_vec()).collect();
            store.create_table_with_splits(TABLE, &families(), &splits)
        }
        AdminOp::DeleteTable => store.delete_table(TABLE),
        AdminOp::DropFamily => store.drop_family(TABLE, DROPPED),
        AdminOp::ResumePurge => store.gc(TABLE, NOW).map(drop),
        AdminOp::RecreateFamily => store.set_family(TABLE, &ColumnFamily::new(DROPPED)),
        AdminOp::SetGcRule => store.set_family(TABLE, &gc_family()),
    }
}

fn gc_family() -> ColumnFamily {
    ColumnFamily {
        name: KEPT.into(),
        gc_rule: Some(GcRule::MaxNumVersions(1)),
    }
}

/// Checks the invariant of `op` on the state a crash left; returns whether the change had
/// happened.
fn check(op: AdminOp, instance: &Instance) -> Result<bool, String> {
    let store = instance.store();
    let tables = store
        .list_tables()
        .map_err(|e| format!("list tables: {e}"))?;
    let exists = tables.iter().any(|t| t == TABLE);
    match op {
        AdminOp::CreateTable => {
            if !exists {
                return Ok(false);
            }
            let mut want = families();
            want.sort_by(|a, b| a.name.cmp(&b.name));
            let got = store.families(TABLE).map_err(|e| e.to_string())?;
            let splits = instance.splits()?;
            if got != want || !visible(store)?.is_empty() || splits != SPLITS {
                return Err(format!(
                    "created table half made: families {got:?}, split points {splits:?}"
                ));
            }
            Ok(true)
        }
        AdminOp::DeleteTable => {
            if exists {
                same_rows("deleted table", &visible(store)?, &expected_rows(true))?;
                return Ok(false);
            }
            Ok(true)
        }
        AdminOp::DropFamily | AdminOp::ResumePurge | AdminOp::RecreateFamily => {
            let names = family_names(store)?;
            let rows = visible(store)?;
            if names.iter().any(|n| n == DROPPED) {
                // Whole (the drop never happened), or re-created and empty.
                if op == AdminOp::RecreateFamily {
                    same_rows("re-created family", &rows, &expected_rows(false))?;
                    return Ok(true);
                }
                same_rows("family not dropped", &rows, &expected_rows(true))?;
                return Ok(false);
            }
            same_rows("dropped family", &rows, &expected_rows(false))?;
            match op {
                AdminOp::ResumePurge => Ok(instance.stored_cells(DROPPED)? == 0),
                _ => Ok(op == AdminOp::DropFamily),
            }
        }
        AdminOp::SetGcRule => {
            let f = store
                .families(TABLE)
                .map_err(|e| e.to_string())?
                .into_iter()
                .find(|f| f.name == KEPT)
                .ok_or("family f is gone")?;
            same_rows("GC rule change", &visible(store)?, &expected_rows(true))?;
            Ok(f == gc_family())
        }
    }
}

/// After the check: the state must also recover. A dropped family's purge finishes (no cell
/// stored), and a family or table created again with the old name is empty and takes writes.
fn recover(op: AdminOp, instance: &Instance) -> Result<(), String> {
    let store = instance.store();
    let exists = store
        .list_tables()
        .map_err(|e| e.to_string())?
        .iter()
        .any(|t| t == TABLE);
    if !exists {
        if op == AdminOp::CreateTable {
            return Ok(());
        }
        // A deleted table comes back empty.
        store
            .create_table(TABLE, &families())
            .map_err(|e| format!("re-create the table: {e}"))?;
        if !visible(store)?.is_empty() {
            return Err("a re-created table shows old rows".into());
        }
        return Ok(());
    }
    if !family_names(store)?.iter().any(|n| n == DROPPED) {
        // No cell of a dropped family can be written, purged or not.
        let write = Request::MutateRow(rowkit_statemachines::MutateRowRequest {
            table: TABLE.into(),
            row_key: b"r00000".to_vec(),
            mutations: vec![Mutation::SetCell {
                family: DROPPED.into(),
                qualifier: b"q".to_vec(),
                timestamp: Timestamp::from_millis(2),
                value: b"late".to_vec(),
            }],
            ..Default::default()
        });
        if store.execute(write, NOW).is_ok() {
            return Err("a write to the dropped family was accepted".into());
        }
    }
    store.gc(TABLE, NOW).map_err(|e| format!("gc: {e}"))?;
    if !family_names(store)?.iter().any(|n| n == DROPPED) {
        let left = instance.stored_cells(DROPPED)?;
        if left != 0 {
            return Err(format!(
                "{left} cells of the dropped family left after the purge"
            ));
        }
        store
            .set_family(TABLE, &ColumnFamily::new(DROPPED))
            .map_err(|e| format!("re-create the family: {e}"))?;
        same_rows(
            "family re-created after the purge",
            &visible(store)?,
            &expected_rows(false),
        )?;
    }
    Ok(())
}

/// Runs `op` on `engine` crashing after each of its write transactions in turn (0, 1, 2, …
/// until a run completes without a crash), checking the invariant after each crash and that
/// the state recovers; then checks the completed run the same way.
pub fn crash_every_step(engine: Engine, op: AdminOp) -> Result<CrashReport, String> {
    let mut report = CrashReport::default();
    let mut budget = 0;
    loop {
        let instance = setup(engine, op)?;
        let (instance, crashed, result) = instance.crash_after(budget, |s| call(op, s))?;
        let context = |e: String| format!("{op:?} on {engine:?}, crash after {budget}: {e}");
        if !crashed {
            result.map_err(|e| context(format!("the call failed: {e}")))?;
        }
        let changed = check(op, &instance).map_err(context)?;
        if !crashed && !changed {
            return Err(context("completed but changed nothing".into()));
        }
        recover(op, &instance).map_err(context)?;
        if !crashed {
            return Ok(report);
        }
        report.crash_points += 1;
        report.changed += u64::from(changed);
        budget += 1;
    }
}
