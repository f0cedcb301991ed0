//! Fsck (§16): passes over the node table, each finding reported once, repaired with `fix`.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::mem;

use rowkit_codec::model::{KeyBound, Mutation, Row, RowFilter, RowRange, RowSet};
use rowkit_codec::mounttable::{self as codec, CounterKind, FAMILY_CHILDREN};

use crate::children::ChildId;
use crate::mounttable::calls::{
    Half, MtIo, Node, NodeRead, Occ, Progress, check_deadline, ended, put, scan,
};
use crate::mounttable::nodes::{Delete, Increment};
use crate::mounttable::{FindingKind, FsckSummary, MountTableSchema, MtError, MtEvent, MtRun};
use crate::operation::Flow;
use crate::operation::settled;
use crate::ready;

pub(in crate::mounttable) const FSCK_PAGE: i64 = 1000;
/// Most passes of `fsck --fix`: a backstop only, since passes already stop as soon as one fixes
/// nothing it had not fixed before.
pub(in crate::mounttable) const MAX_FSCK_PASSES: u32 = 16;

/// Names a finding's detail lists at most (a node may have many dangling children).
pub(in crate::mounttable) const DETAIL_NAMES: usize = 8;

/// What fsck has reported, so that each finding is reported once whatever the passes, and the
/// counters the node rows imply.
#[derive(Debug, Default)]
pub(in crate::mounttable) struct Tally {
    summary: FsckSummary,
    /// Each finding reported, by row and kind, and what became of it.
    reported: BTreeMap<(Vec<u8>, FindingKind), Outcome>,
    /// Findings the current pass fixed that no pass had fixed before.
    fixed_in_pass: u64,
    /// Per creator: the decodable nodes of the current pass and their servers (live and
    /// expired), what the counters must hold (§16's rebuild).
    counts: BTreeMap<String, (i64, i64)>,
}

/// What became of a reported finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::mounttable) enum Outcome {
    Fixed,
    Left,
    /// Fixed, then found again by a later pass: the repair does not take; left, and reported
    /// no more.
    Recurring,
}

impl Tally {
    /// Reports a finding unless it was reported before; a finding left before and fixed now,
    /// or fixed before and found again, is reported once more with what changed.
    fn report(
        &mut self,
        io: &mut MtIo,
        row_key: &[u8],
        kind: FindingKind,
        fixed: bool,
        detail: String,
    ) {
        let key = (row_key.to_vec(), kind);
        let (outcome, detail) = match self.reported.get(&key) {
            None => {
                if kind == FindingKind::Undecodable {
                    self.summary.undecodable.push(row_key.to_vec());
                } else {
                    self.summary.inconsistent += 1;
                    if fixed {
                        self.fixed_in_pass += 1;
                        self.summary.fixed.push(row_key.to_vec());
                    } else {
                        self.summary.left.push(row_key.to_vec());
                    }
                }
                (if fixed { Outcome::Fixed } else { Outcome::Left }, detail)
            }
            Some(Outcome::Left) if fixed => {
                self.fixed_in_pass += 1;
                self.summary.left.retain(|k| k.as_slice() != row_key);
                self.summary.fixed.push(row_key.to_vec());
                (Outcome::Fixed, detail)
            }
            Some(Outcome::Fixed) => {
                self.summary.fixed.retain(|k| k.as_slice() != row_key);
                self.summary.left.push(row_key.to_vec());
                let detail = alloc::format!(
                    "{detail}; found again after an earlier pass fixed it: left as it is"
                );
                (Outcome::Recurring, detail)
            }
            Some(_) => return,
        };
        let fixed = outcome == Outcome::Fixed;
        self.reported.insert(key, outcome);
        io.emit(MtEvent::FsckFinding {
            row_key: row_key.to_vec(),
            kind,
            fixed,
            detail: crate::check::bounded_detail(detail),
        });
    }

    /// Counts a decodable node for its creator's counters.
    fn count(&mut self, node: &codec::NodeRow) {
        let servers = (node.servers.len() + node.expired_servers.len()) as i64;
        let entry = self.counts.entry(node.creator.clone()).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += servers;
    }

    /// The counter rows the nodes counted imply, by row key.
    fn expected_counters(&self) -> BTreeMap<Vec<u8>, i64> {
        let mut out = BTreeMap::new();
        for (creator, (nodes, servers)) in &self.counts {
            out.insert(codec::counter_row_key(CounterKind::Nodes, creator), *nodes);
            out.insert(
                codec::counter_row_key(CounterKind::Servers, creator),
                *servers,
            );
        }
        out
    }
}

/// The flow of [`Fsck`](crate::mounttable::Fsck): one pass, or with `fix` passes until one fixes nothing new
/// (a finding no pass can fix is reported once and left); then the counters are compared with
/// the nodes of the last pass, the wrong ones listed in the summary, and with `fix` rebuilt
/// (§16).
#[derive(Debug)]
pub struct FsckFlow {
    fix: bool,
    tally: Tally,
    /// Wrong counter rows found (row key, detail), for the summary.
    wrong_counters: Vec<(Vec<u8>, String)>,
    phase: FsckPhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum FsckPhase {
    Start,
    Passing(FsckPass),
    CountersRead(ChildId),
    /// Counter row `at` of `rows` is being deleted.
    CounterDeleted {
        put: ChildId,
        rows: Vec<Row>,
        at: usize,
    },
    /// Counter `at` of `counters` (row key, value) is being written by an increment.
    Counted {
        count: Increment,
        counters: Vec<(Vec<u8>, i64)>,
        at: usize,
    },
    Done,
}

impl FsckFlow {
    pub(in crate::mounttable) fn new(fix: bool) -> FsckFlow {
        FsckFlow {
            fix,
            tally: Tally::default(),
            wrong_counters: Vec::new(),
            phase: FsckPhase::Start,
        }
    }

    fn pass(&mut self, io: &MtIo, ctx: &MtRun) -> Result<(), MtError> {
        check_deadline(io, ctx)?;
        self.tally.summary.passes += 1;
        self.tally.fixed_in_pass = 0;
        self.tally.counts.clear();
        let tally = mem::take(&mut self.tally);
        self.phase = FsckPhase::Passing(FsckPass::new(self.fix, tally));
        Ok(())
    }

    /// The counter rows that differ from what the nodes imply, each with its detail.
    fn compare_counters(&mut self, rows: &[Row]) {
        let mut expected = self.tally.expected_counters();
        for row in rows {
            let want = expected.remove(&row.key).unwrap_or(0);
            // The scan keeps every version (the rebuild deletes whole rows); a counter is its
            // newest cell, the first of its column.
            let mut latest = Row {
                key: row.key.clone(),
                cells: Vec::new(),
            };
            for cell in &row.cells {
                if !latest
                    .cells
                    .last()
                    .is_some_and(|c| c.family == cell.family && c.qualifier == cell.qualifier)
                {
                    latest.cells.push(cell.clone());
                }
            }
            let detail = match codec::decode_counter_row(&latest) {
                Ok(have) if have == want => continue,
                Ok(have) => alloc::format!("counter is {have}, the nodes imply {want}"),
                Err(e) => alloc::format!("counter does not decode ({e}); the nodes imply {want}"),
            };
            self.wrong_counters.push((row.key.clone(), detail));
        }
        for (key, want) in expected {
            if want != 0 {
                let detail = alloc::format!("no counter row; the nodes imply {want}");
                self.wrong_counters.push((key, detail));
            }
        }
        self.wrong_counters.sort();
    }

    /// Deletes counter row `at`, or writes the counters once all are gone.
    fn delete_counter(&mut self, io: &mut MtIo, ctx: &MtRun, rows: Vec<Row>, at: usize) {
        self.phase = match rows.get(at) {
            Some(row) => {
                let table = ctx.tables.counter.clone();
                let put = put(
                    io,
                    ctx,
                    table,
                    row.key.clone(),
                    vec![Mutation::DeleteFromRow],
                    Half::First,
                );
                FsckPhase::CounterDeleted { put, rows, at }
            }
            None => {
                let counters = self.tally.expected_counters().into_iter().collect();
                match self.count(counters, 0) {
                    Some(phase) => phase,
                    None => FsckPhase::Done,
                }
            }
        };
    }

    /// The increment writing counter `at`, or `None` past the last.
    fn count(&self, counters: Vec<(Vec<u8>, i64)>, at: usize) -> Option<FsckPhase> {
        let (key, value) = counters.get(at)?;
        let (kind, creator) = codec::decode_counter_row_key(key)?;
        let creator = String::from_utf8_lossy(creator).into_owned();
        let count = Increment::unlimited(kind, &creator, *value);
        Some(FsckPhase::Counted {
            count,
            counters,
            at,
        })
    }

    /// Ends, with the wrong counters in the summary (rebuilt when `fix`): with the summary, or
    /// `FsckInconsistent` when something is left (or, without `fix`, found).
    fn finish(&mut self) -> Progress<FsckSummary> {
        let mut summary = mem::take(&mut self.tally.summary);
        summary.counters = mem::take(&mut self.wrong_counters);
        if !summary.left.is_empty() || !summary.undecodable.is_empty() {
            return Err(MtError::FsckInconsistent(summary));
        }
        Ok(Some(summary))
    }
}

impl Flow for FsckFlow {
    type Schema = MountTableSchema;
    type Output = FsckSummary;

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<FsckSummary> {
        use FsckPhase as P;
        loop {
            match mem::replace(&mut self.phase, P::Done) {
                P::Start => self.pass(io, ctx)?,
                P::Passing(mut pass) => {
                    self.tally = ready!(pass.advance(io, ctx), self.phase => P::Passing(pass));
                    if self.fix
                        && self.tally.fixed_in_pass > 0
                        && self.tally.summary.passes < MAX_FSCK_PASSES
                    {
                        self.pass(io, ctx)?;
                        continue;
                    }
                    self.phase = P::CountersRead(scan(
                        io,
                        ctx,
                        ctx.tables.counter.clone(),
                        RowSet::all(),
                        None,
                        0,
                    ));
                }
                P::CountersRead(scan) => {
                    let rows = ready!(io.rows(scan), self.phase => P::CountersRead(scan));
                    self.compare_counters(&rows);
                    if !self.fix {
                        return self.finish();
                    }
                    self.delete_counter(io, ctx, rows, 0);
                    if matches!(self.phase, P::Done) {
                        return self.finish();
                    }
                }
                P::CounterDeleted { put, rows, at } => {
                    ready!(io.written(put), self.phase => P::CounterDeleted { put, rows, at });
                    self.delete_counter(io, ctx, rows, at + 1);
                    if matches!(self.phase, P::Done) {
                        return self.finish();
                    }
                }
                P::Counted {
                    mut count,
                    counters,
                    at,
                } => {
                    ready!(count.advance(io, ctx), self.phase => P::Counted {
                        count,
                        counters,
                        at
                    });
                    match self.count(counters, at + 1) {
                        Some(next) => self.phase = next,
                        None => return self.finish(),
                    }
                }
                P::Done => return Err(ended()),
            }
        }
    }
}

/// One fsck pass over the node table, page by page: orphans (deleted with `fix`), dangling
/// child references (dropped with `fix`), undecodable rows and rows under a key that is not
/// their name's. Gives the tally back.
#[derive(Debug)]
pub(in crate::mounttable) struct FsckPass {
    fix: bool,
    tally: Tally,
    /// The last row key of the page before (`None`: the first page).
    start: Option<Vec<u8>>,
    page: Vec<Row>,
    /// Whether the page was full (another may follow).
    full: bool,
    /// Index of the page's row being checked.
    at: usize,
    phase: PassPhase,
}

#[derive(Debug)]
pub(in crate::mounttable) enum PassPhase {
    Start,
    Paging(ChildId),
    /// Does the parent of `node` reference it?
    ParentRead {
        read: NodeRead,
        node: Node,
    },
    OrphanDeleted {
        delete: Box<Delete>,
        node: Node,
        detail: String,
    },
    /// The delete of an orphan failed: is the node still there (or was it deleted with an
    /// orphan subtree before it in this pass)?
    OrphanReread {
        read: NodeRead,
        node: Node,
        detail: String,
    },
    /// The node's children are being read one by one.
    ChildRead {
        read: NodeRead,
        check: ChildCheck,
    },
    DanglingFixed {
        occ: Occ,
        key: Vec<u8>,
        detail: String,
    },
    Done,
}

/// The children check of one node: which child is read, what was found so far.
#[derive(Debug)]
pub(in crate::mounttable) struct ChildCheck {
    node: Node,
    at: usize,
    /// Qualifiers of references to missing nodes or other incarnations.
    dangling: Vec<Vec<u8>>,
    /// Names of those children (the first few, for the detail).
    dangling_names: Vec<String>,
    /// The first child read that failed, and why.
    store_error: Option<String>,
}

/// `a, b, c (and 5 more)`: the first [`DETAIL_NAMES`] of `names`.
pub(in crate::mounttable) fn some_names(names: &[String], all: usize) -> String {
    let mut text = names.join(", ");
    if all > names.len() {
        text.push_str(&alloc::format!(" (and {} more)", all - names.len()));
    }
    text
}

impl FsckPass {
    fn new(fix: bool, tally: Tally) -> FsckPass {
        FsckPass {
            fix,
            tally,
            start: None,
            page: Vec::new(),
            full: false,
            at: 0,
            phase: PassPhase::Start,
        }
    }

    fn advance(&mut self, io: &mut MtIo, ctx: &mut MtRun) -> Progress<Tally> {
        use PassPhase as P;
        loop {
            let ended_pass = match mem::replace(&mut self.phase, P::Done) {
                P::Start => {
                    self.scan_page(io, ctx);
                    false
                }
                P::Paging(scan) => {
                    self.page = ready!(io.rows(scan), self.phase => P::Paging(scan));
                    io.emit(MtEvent::FsckPage {
                        rows: self.page.len() as u64,
                    });
                    self.full = self.page.len() as i64 >= FSCK_PAGE;
                    self.start = self.page.last().map(|r| r.key.clone());
                    self.at = 0;
                    self.next_row(io, ctx)?
                }
                P::ParentRead { mut read, node } => {
                    let dir = codec::split(&node.name).0;
                    match ready!(settled(read.poll(io)), self.phase => P::ParentRead { read, node })
                    {
                        Err(e) => {
                            let detail = alloc::format!("reading its parent {dir:?} failed: {e}");
                            self.tally.report(
                                io,
                                &node.row_key,
                                FindingKind::StoreError,
                                false,
                                detail,
                            );
                            self.row_done(io, ctx)?
                        }
                        Ok(parent) => {
                            let base = codec::split(&node.name).1;
                            let detail = match &parent {
                                None => Some(alloc::format!(
                                    "node {:?}: its parent {dir:?} does not exist",
                                    node.name
                                )),
                                Some(p)
                                    if !p
                                        .children
                                        .iter()
                                        .any(|c| c.name == base && c.id == node.id) =>
                                {
                                    Some(alloc::format!(
                                        "node {:?} (id {:?}): its parent {dir:?} does not reference it",
                                        node.name,
                                        String::from_utf8_lossy(&node.id)
                                    ))
                                }
                                Some(_) => None,
                            };
                            match detail {
                                None => self.check_children(io, ctx, node)?,
                                Some(detail) if self.fix => {
                                    let delete = Box::new(Delete::new(node.clone(), true));
                                    self.phase = P::OrphanDeleted {
                                        delete,
                                        node,
                                        detail,
                                    };
                                    false
                                }
                                Some(detail) => {
                                    self.tally.report(
                                        io,
                                        &node.row_key,
                                        FindingKind::Orphan,
                                        false,
                                        detail,
                                    );
                                    self.row_done(io, ctx)?
                                }
                            }
                        }
                    }
                }
                P::OrphanDeleted {
                    mut delete,
                    node,
                    detail,
                } => {
                    match ready!(settled(delete.advance(io, ctx)), self.phase => P::OrphanDeleted {
                        delete,
                        node,
                        detail
                    }) {
                        Ok(()) => {
                            self.tally
                                .report(io, &node.row_key, FindingKind::Orphan, true, detail);
                            self.row_done(io, ctx)?
                        }
                        Err(e) => {
                            let detail = alloc::format!("{detail}; its delete failed: {e}");
                            let read = NodeRead::start(io, ctx, &node.name);
                            self.phase = P::OrphanReread { read, node, detail };
                            false
                        }
                    }
                }
                P::OrphanReread {
                    mut read,
                    node,
                    detail,
                } => {
                    let now = ready!(settled(read.poll(io)), self.phase => P::OrphanReread { read, node, detail });
                    // Gone (or another incarnation): deleted with an orphan subtree earlier in
                    // this pass, or by a writer; nothing to report.
                    if matches!(&now, Ok(Some(n)) if n.id == node.id) || now.is_err() {
                        self.tally
                            .report(io, &node.row_key, FindingKind::Orphan, false, detail);
                    }
                    self.row_done(io, ctx)?
                }
                P::ChildRead {
                    mut read,
                    mut check,
                } => {
                    let found =
                        ready!(settled(read.poll(io)), self.phase => P::ChildRead { read, check });
                    if let Some(c) = check.node.children.get(check.at) {
                        match found {
                            Err(e) => {
                                if check.store_error.is_none() {
                                    check.store_error = Some(alloc::format!(
                                        "reading child {:?} failed: {e}",
                                        c.name
                                    ));
                                }
                            }
                            Ok(Some(child)) if child.id == c.id => {}
                            Ok(_) => {
                                check.dangling.push(codec::child_qualifier(&c.id, &c.name));
                                if check.dangling_names.len() < DETAIL_NAMES {
                                    check.dangling_names.push(c.name.clone());
                                }
                            }
                        }
                    }
                    check.at += 1;
                    self.next_child(io, ctx, check)?
                }
                P::DanglingFixed {
                    mut occ,
                    key,
                    detail,
                } => {
                    let (fixed, detail) = match ready!(settled(occ.poll(io)), self.phase => P::DanglingFixed { occ, key, detail })
                    {
                        Ok(_) => (true, detail),
                        Err(e) => (false, alloc::format!("{detail}; the repair failed: {e}")),
                    };
                    self.tally
                        .report(io, &key, FindingKind::Dangling, fixed, detail);
                    self.row_done(io, ctx)?
                }
                P::Done => return Err(ended()),
            };
            if ended_pass {
                return Ok(Some(mem::take(&mut self.tally)));
            }
        }
    }

    fn scan_page(&mut self, io: &mut MtIo, ctx: &MtRun) {
        let rows = match &self.start {
            None => RowSet::all(),
            Some(k) => RowSet::range(RowRange {
                start: KeyBound::Open(k.clone()),
                end: KeyBound::Unbounded,
            }),
        };
        self.phase = PassPhase::Paging(scan(
            io,
            ctx,
            ctx.tables.node.clone(),
            rows,
            Some(RowFilter::CellsPerColumnLimit(1)),
            FSCK_PAGE,
        ));
    }

    fn row_done(&mut self, io: &mut MtIo, ctx: &MtRun) -> Result<bool, MtError> {
        self.at += 1;
        self.next_row(io, ctx)
    }

    /// Checks the next row of the page (if the deadline allows); past the last, the next page.
    /// `true` once the pass has ended.
    fn next_row(&mut self, io: &mut MtIo, ctx: &MtRun) -> Result<bool, MtError> {
        loop {
            let Some(row) = self.page.get(self.at) else {
                if !self.full {
                    return Ok(true);
                }
                self.scan_page(io, ctx);
                return Ok(false);
            };
            check_deadline(io, ctx)?;
            let node = match codec::decode_node(row, io.now().0) {
                Ok(n) => n,
                Err(e) => {
                    let key = row.key.clone();
                    let detail = alloc::format!("the row does not decode: {e}");
                    self.tally
                        .report(io, &key, FindingKind::Undecodable, false, detail);
                    self.at += 1;
                    continue;
                }
            };
            self.tally.count(&node);
            // getNode reads a name at its hash: a row under another key is never found.
            let canonical = codec::row_key(&node.name);
            if canonical != row.key {
                let key = row.key.clone();
                let detail = alloc::format!(
                    "node {:?} is stored under this key, but reads look for it at {}",
                    node.name,
                    rowkit_codec::escape::escape(&canonical)
                );
                self.tally
                    .report(io, &key, FindingKind::WrongKey, false, detail);
                self.at += 1;
                continue;
            }
            let node = Node::new(node);
            if node.name.is_empty() {
                return self.check_children(io, ctx, node);
            }
            let read = NodeRead::start(io, ctx, codec::split(&node.name).0);
            self.phase = PassPhase::ParentRead { read, node };
            return Ok(false);
        }
    }

    /// Starts reading the node's children.
    fn check_children(&mut self, io: &mut MtIo, ctx: &MtRun, node: Node) -> Result<bool, MtError> {
        let check = ChildCheck {
            node,
            at: 0,
            dangling: Vec::new(),
            dangling_names: Vec::new(),
            store_error: None,
        };
        self.next_child(io, ctx, check)
    }

    /// Reads the next child of the node, or judges the node once all are read.
    fn next_child(
        &mut self,
        io: &mut MtIo,
        ctx: &MtRun,
        check: ChildCheck,
    ) -> Result<bool, MtError> {
        let node = &check.node;
        if let Some(c) = node.children.get(check.at) {
            let read = NodeRead::start(io, ctx, &codec::join(&[&node.name, &c.name]));
            self.phase = PassPhase::ChildRead { read, check };
            return Ok(false);
        }
        let key = node.row_key.clone();
        if let Some(error) = check.store_error {
            self.tally
                .report(io, &key, FindingKind::StoreError, false, error);
            return self.row_done(io, ctx);
        }
        if check.dangling.is_empty() {
            return self.row_done(io, ctx);
        }
        let detail = alloc::format!(
            "node {:?} references children that are missing or another incarnation: {}",
            node.name,
            some_names(&check.dangling_names, check.dangling.len())
        );
        if !self.fix {
            self.tally
                .report(io, &key, FindingKind::Dangling, false, detail);
            return self.row_done(io, ctx);
        }
        let mutations = check
            .dangling
            .iter()
            .map(|q| crate::mounttable::calls::delete_column(FAMILY_CHILDREN, q))
            .collect();
        let occ = Occ::start(io, ctx, node, mutations, false);
        self.phase = PassPhase::DanglingFixed { occ, key, detail };
        Ok(false)
    }
}
