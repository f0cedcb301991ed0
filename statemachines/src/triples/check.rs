//! `Check` of a triple table (`spec/check.md` §4): every row scanned page by page, each cell
//! parsed and put against the row it is in, and every triple's four index rows and its graph
//! row looked up by key in one batch per page.
//!
//! A triple missing from some of its rows is reported once, by the row that would be read
//! first when it is complete: its SPO row if present (the spec's "scan the SPO rows and read
//! the three others"), else the first of OSP, POS, SOP that holds it (the "triples whose SPO row
//! is missing"). Missing rows and missing graph rows are what a concurrent `AddTriples`,
//! `RemoveTriples` or `NewGraph` passes through, so they wait out the grace period and are
//! re-read before they are reported; the repairs write exactly the cells the original would
//! have written, each conditional on its column being absent at that timestamp.
//!
//! Such a repair is the write of the triple's add, and races like one: the predicate protects
//! the cells a writer put there, not an absence, so a `RemoveTriples` of that triple that runs
//! between the re-read and the repair is followed by the repaired cell (one row, which the next
//! check reports again), as it would be by an add in flight. The fault simulator models a
//! repair that way: as a write of the triple for the whole check (`rowkit-testkit`, `sim`).

use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use rowkit_codec::escape::escape;
use rowkit_codec::model::{Mutation, Row, RowFilter, RowRange, RowSet, TimestampRange};
use rowkit_codec::triples::keys::{self, DecodedKey, Index, TripleCell};
use rowkit_codec::triples::{Triple, gotext::quote};

use super::OperationConfig;
use super::requests::{graph_cell, graph_cell_filter};
use crate::check::{
    CheckError, CheckEvent, CheckOptions, CheckProgress, CheckSummary, Checking, Finding,
    PagedScan, PointReads, Repair, Repairs, RowsByKey, Scanner, Step, cell_preview,
};
use crate::operation::{ContextArg, Flow, Io, Operation, Start};
use crate::{CheckAndMutateRowRequest, Request, Timestamp};

/// The schema name in findings.
const SCHEMA: &str = "graph";
/// Graphs remembered as having their graph row, before the set is cleared (bounded memory).
const KNOWN_GRAPHS: usize = 4_096;

/// A check of the triple table (or of one graph in it).
pub type Check = Operation<'static, CheckFlow>;

impl Check {
    /// Checks `config.table`, or only `graph` (its graph row and four indices) if given, as
    /// `start` says. A graph id over the limit fails without a request.
    pub fn new(
        config: OperationConfig,
        graph: Option<&[u8]>,
        options: CheckOptions,
        start: Start,
    ) -> Check {
        if let Some(g) = graph
            && let Err(e) = keys::check_graph_id(g)
        {
            return Operation::failed(
                ContextArg::owned(config),
                CheckError::Invalid(e.to_string()),
            );
        }
        let rows = match graph {
            None => RowSet::all(),
            Some(g) => RowSet {
                row_keys: alloc::vec![keys::graph_row_key(g)],
                row_ranges: Index::ALL
                    .iter()
                    .map(|&i| RowRange::prefix(&keys::index_prefix(g, i)))
                    .collect(),
            },
        };
        let flow = CheckFlow {
            graph: graph.map(<[u8]>::to_vec),
            scanner: Scanner::new(
                PagedScan::new(&config.table, rows, None, options.page_rows),
                options,
            ),
            known_graphs: BTreeSet::new(),
            suspected_graphs: BTreeSet::new(),
            phase: Phase::Scan,
        };
        let retry = config.retry;
        Operation::begin(ContextArg::owned(config), start, retry, flow)
    }
}

/// A finding that waits out the grace period before it is re-read.
#[derive(Debug)]
enum Suspect {
    /// A triple found in row `seen` but not in every one of its four `cells`.
    Index {
        text: Vec<u8>,
        cells: [TripleCell; 4],
        seen: Index,
    },
    /// Triple rows of `graph` (row `seen`, holding cell `family:qualifier@ts = value`) without
    /// the graph row.
    Graph {
        graph: Vec<u8>,
        seen: Vec<u8>,
        family: String,
        qualifier: Vec<u8>,
        timestamp: Timestamp,
        value: Vec<u8>,
    },
}

impl Suspect {
    /// The rows its verdict needs.
    fn keys(&self, out: &mut Vec<Vec<u8>>) {
        match self {
            Suspect::Index { cells, .. } => out.extend(cells.iter().map(|c| c.row_key.clone())),
            Suspect::Graph { graph, seen, .. } => {
                out.push(keys::graph_row_key(graph));
                out.push(seen.clone());
            }
        }
    }
}

#[derive(Debug)]
enum Phase {
    /// Scanning: the next page, or suspects due again.
    Scan,
    /// The page's candidates, their companion rows being read.
    Companions {
        reads: PointReads,
        candidates: Vec<Suspect>,
        rows: usize,
    },
    /// Due suspects, their rows being re-read.
    Reverify {
        reads: PointReads,
        suspects: Vec<Suspect>,
    },
    /// Repairs of confirmed findings.
    Repair(Repairs),
    Done,
}

/// The flow of [`Check`].
#[derive(Debug)]
pub struct CheckFlow {
    graph: Option<Vec<u8>>,
    scanner: Scanner<Suspect>,
    /// Graphs whose graph row was seen, or judged missing and reported (bounded).
    known_graphs: BTreeSet<Vec<u8>>,
    /// Graphs whose missing graph row is pending (each reported once).
    suspected_graphs: BTreeSet<Vec<u8>>,
    phase: Phase,
}

impl Flow for CheckFlow {
    type Schema = Checking<OperationConfig>;
    type Output = CheckSummary;

    fn advance(
        &mut self,
        io: &mut Io<CheckEvent>,
        config: &mut OperationConfig,
    ) -> CheckProgress<CheckSummary> {
        loop {
            match core::mem::replace(&mut self.phase, Phase::Done) {
                Phase::Scan => match self.scanner.next(io)? {
                    None => {
                        self.phase = Phase::Scan;
                        return Ok(None);
                    }
                    Some(Step::Done(summary)) => return Ok(Some(summary)),
                    Some(Step::Recheck(suspects)) => {
                        let mut keys = Vec::new();
                        suspects.iter().for_each(|s| s.keys(&mut keys));
                        let reads = PointReads::start(io, &config.table, keys);
                        self.phase = Phase::Reverify { reads, suspects };
                    }
                    Some(Step::Page(page)) => {
                        let rows = page.len();
                        let candidates = self.check_page(io, page);
                        let mut keys = Vec::new();
                        candidates.iter().for_each(|s| companion_keys(s, &mut keys));
                        let reads = PointReads::start(io, &config.table, keys);
                        self.phase = Phase::Companions {
                            reads,
                            candidates,
                            rows,
                        };
                    }
                },
                Phase::Companions {
                    mut reads,
                    candidates,
                    rows,
                } => {
                    let Some(found) = reads.poll(io)? else {
                        self.phase = Phase::Companions {
                            reads,
                            candidates,
                            rows,
                        };
                        return Ok(None);
                    };
                    for suspect in candidates {
                        if self.still_suspect(&suspect, &found, false) {
                            if let Suspect::Graph { graph, .. } = &suspect {
                                self.suspected_graphs.insert(graph.clone());
                            }
                            self.scanner.hold(io, suspect);
                        }
                    }
                    self.scanner.report().scanned(io, rows);
                    self.phase = Phase::Scan;
                }
                Phase::Reverify {
                    mut reads,
                    suspects,
                } => {
                    let Some(found) = reads.poll(io)? else {
                        self.phase = Phase::Reverify { reads, suspects };
                        return Ok(None);
                    };
                    let mut repairs = Vec::new();
                    for suspect in suspects {
                        // Once judged, a graph is settled: its other rows do not ask again.
                        if let Suspect::Graph { graph, .. } = &suspect {
                            self.suspected_graphs.remove(graph);
                            self.know_graph(graph);
                        }
                        if self.still_suspect(&suspect, &found, true) {
                            confirmed(&config.table, &suspect, &found, &mut repairs);
                        }
                    }
                    self.phase = if self.scanner.options().fix {
                        Phase::Repair(Repairs::start(io, repairs))
                    } else {
                        for (f, _) in repairs {
                            self.scanner.report().finding(io, f);
                        }
                        Phase::Scan
                    };
                }
                Phase::Repair(mut repairs) => {
                    if repairs
                        .poll(io, self.scanner.report(), still_missing)
                        .is_none()
                    {
                        self.phase = Phase::Repair(repairs);
                        return Ok(None);
                    }
                    self.phase = Phase::Scan;
                }
                Phase::Done => return Err(CheckError::Aborted),
            }
        }
    }
}

impl CheckFlow {
    /// Checks each row of `page` on its own (keys, cells, timestamps, graph rows) and gives the
    /// candidates whose companion rows must be read.
    fn check_page(&mut self, io: &mut Io<CheckEvent>, page: Vec<Row>) -> Vec<Suspect> {
        let mut candidates = Vec::new();
        let mut graphs_asked = BTreeSet::new();
        for row in page {
            match keys::decode_row_key(&row.key) {
                Err(_) => self.scanner.report().finding(
                    io,
                    finding(
                        "undecodable_key",
                        &row.key,
                        "not a triple row g:IDX:<uuid>:<uuid>:<uuid> nor a graph row graph:<g>",
                    ),
                ),
                Ok(DecodedKey::Graph { graph }) => {
                    if self.graph.as_ref().is_none_or(|g| *g == graph) {
                        self.check_graph_row(io, &graph, &row);
                    }
                }
                Ok(DecodedKey::Triple { graph, index, .. }) => {
                    if self.graph.as_ref().is_some_and(|g| *g != graph) {
                        continue;
                    }
                    let before = candidates.len();
                    self.check_triple_row(io, &graph, index, &row, &mut candidates);
                    // The graph row is looked up once per page for a graph with a sound cell.
                    let first = match candidates.get(before) {
                        Some(Suspect::Index { text, cells, seen }) => {
                            Some((text.clone(), cells[position(*seen)].clone()))
                        }
                        _ => None,
                    };
                    if let Some((value, cell)) = first
                        && !self.known_graphs.contains(&graph)
                        && !self.suspected_graphs.contains(&graph)
                        && graphs_asked.insert(graph.clone())
                    {
                        candidates.push(Suspect::Graph {
                            graph,
                            seen: cell.row_key,
                            family: cell.family.into(),
                            qualifier: cell.qualifier.to_vec(),
                            timestamp: cell.timestamp,
                            value,
                        });
                    }
                }
            }
        }
        candidates
    }

    /// `metadata_mismatch` unless the row is exactly `graph:metadata@1714000 = g`.
    fn check_graph_row(&mut self, io: &mut Io<CheckEvent>, graph: &[u8], row: &Row) {
        let ok = matches!(row.cells.as_slice(), [c] if c.family == keys::FAMILY_GRAPH
            && c.qualifier == keys::GRAPH_QUALIFIER
            && c.timestamp == keys::GRAPH_CELL_TIMESTAMP
            && c.value == graph);
        if ok {
            self.know_graph(graph);
            return;
        }
        let cells: Vec<String> = row
            .cells
            .iter()
            .map(|c| {
                format!(
                    "{}:{}@{} = {}",
                    c.family,
                    escape(&c.qualifier),
                    c.timestamp.0,
                    cell_preview(&c.value)
                )
            })
            .collect();
        let detail = format!(
            "graph row of {} holds [{}], not graph:metadata@{} = the graph id",
            quote(graph),
            cells.join(", "),
            keys::GRAPH_CELL_TIMESTAMP.0
        );
        self.scanner
            .report()
            .finding(io, finding("metadata_mismatch", &row.key, &detail));
    }

    fn know_graph(&mut self, graph: &[u8]) {
        if self.known_graphs.len() >= KNOWN_GRAPHS {
            self.known_graphs.clear();
        }
        self.known_graphs.insert(graph.to_vec());
    }

    /// Each cell of a triple row: parsed, and put against the row, family, qualifier and
    /// timestamp its triple implies; a cell that passes becomes a candidate for the index check.
    fn check_triple_row(
        &mut self,
        io: &mut Io<CheckEvent>,
        graph: &[u8],
        index: Index,
        row: &Row,
        candidates: &mut Vec<Suspect>,
    ) {
        for cell in &row.cells {
            let at = format!(
                "cell {}:{}@{}",
                cell.family,
                escape(&cell.qualifier),
                cell.timestamp.0
            );
            if cell.family != keys::FAMILY_IMMUTABLE && cell.family != keys::FAMILY_TEMPORAL {
                let detail = format!("{at}: family {} is not a triple family", cell.family);
                self.scanner
                    .report()
                    .finding(io, finding("cell_mismatch", &row.key, &detail));
                continue;
            }
            let triple = match Triple::parse(&cell.value) {
                Ok(t) => t,
                Err(e) => {
                    let detail = format!("{at}: {} does not parse: {e}", cell_preview(&cell.value));
                    self.scanner
                        .report()
                        .finding(io, finding("undecodable_cell", &row.key, &detail));
                    continue;
                }
            };
            let cells = keys::triple_cells(graph, &triple);
            let Some(own) = cells.iter().find(|c| c.index == index) else {
                continue;
            };
            let text = cell_preview(&cell.value);
            let mismatch = if own.row_key != row.key {
                Some(format!(
                    "{at}: triple {text} belongs in row {}",
                    escape(&own.row_key)
                ))
            } else if own.family != cell.family {
                Some(format!(
                    "{at}: triple {text} belongs in family {}",
                    own.family
                ))
            } else if own.qualifier != cell.qualifier.as_slice() {
                Some(format!(
                    "{at}: triple {text} belongs in column {}:{}",
                    own.family,
                    escape(own.qualifier)
                ))
            } else {
                None
            };
            if let Some(detail) = mismatch {
                self.scanner
                    .report()
                    .finding(io, finding("cell_mismatch", &row.key, &detail));
                continue;
            }
            if own.timestamp != cell.timestamp {
                let detail = format!(
                    "{at}: triple {text} must be at cell timestamp {} (cellTimestamp of its text), not {}",
                    own.timestamp.0, cell.timestamp.0
                );
                self.scanner
                    .report()
                    .finding(io, finding("wrong_timestamp", &row.key, &detail));
                continue;
            }
            candidates.push(Suspect::Index {
                text: cell.value.clone(),
                cells,
                seen: index,
            });
        }
    }

    /// Whether `suspect` still holds given the rows `found`. At the first look (`recheck`
    /// false) the row it was seen in is the page's and counts as present; a re-read requires
    /// it still there (a concurrent remove takes the finding away).
    fn still_suspect(&mut self, suspect: &Suspect, found: &RowsByKey, recheck: bool) -> bool {
        match suspect {
            Suspect::Index { text, cells, seen } => {
                let present = presence(cells, text, found, (!recheck).then_some(*seen));
                let own = present[position(*seen)];
                own && reporter(&present) == Some(*seen) && present.iter().any(|p| !p)
            }
            Suspect::Graph {
                graph,
                seen,
                family,
                qualifier,
                timestamp,
                value,
            } => {
                let has_graph_row = found
                    .get(&keys::graph_row_key(graph))
                    .is_some_and(has_graph_cell);
                if has_graph_row {
                    self.know_graph(graph);
                    return false;
                }
                !recheck || holds(found.get(seen), family, qualifier, *timestamp, value)
            }
        }
    }
}

/// The rows a candidate's first verdict needs (the row it was seen in is the page's).
fn companion_keys(suspect: &Suspect, out: &mut Vec<Vec<u8>>) {
    match suspect {
        Suspect::Index { cells, seen, .. } => out.extend(
            cells
                .iter()
                .filter(|c| c.index != *seen)
                .map(|c| c.row_key.clone()),
        ),
        Suspect::Graph { graph, .. } => out.push(keys::graph_row_key(graph)),
    }
}

/// Position of `index` in write order (OSP, POS, SOP, SPO).
fn position(index: Index) -> usize {
    Index::ALL.iter().position(|&i| i == index).unwrap_or(0)
}

/// Which of the four rows hold the triple's cell; `assume` counts as present unread.
fn presence(
    cells: &[TripleCell; 4],
    text: &[u8],
    found: &RowsByKey,
    assume: Option<Index>,
) -> [bool; 4] {
    cells.each_ref().map(|c| {
        assume == Some(c.index)
            || holds(
                found.get(&c.row_key),
                c.family,
                c.qualifier,
                c.timestamp,
                text,
            )
    })
}

/// The row that reports a triple missing from others: SPO if it holds it, else the first of
/// OSP, POS, SOP that does.
fn reporter(present: &[bool; 4]) -> Option<Index> {
    if present[position(Index::Spo)] {
        return Some(Index::Spo);
    }
    Index::ALL
        .into_iter()
        .find(|&i| i != Index::Spo && present[position(i)])
}

/// Whether `row` holds the cell `family:qualifier@timestamp = value`.
fn holds(
    row: Option<&Row>,
    family: &str,
    qualifier: &[u8],
    timestamp: Timestamp,
    value: &[u8],
) -> bool {
    row.is_some_and(|r| {
        r.cells.iter().any(|c| {
            c.family == family
                && c.qualifier == qualifier
                && c.timestamp == timestamp
                && c.value == value
        })
    })
}

fn has_graph_cell(row: &Row) -> bool {
    row.cells
        .iter()
        .any(|c| c.family == keys::FAMILY_GRAPH && c.qualifier == keys::GRAPH_QUALIFIER)
}

/// A report-only finding.
fn finding(kind: &'static str, row_key: &[u8], detail: &str) -> Finding {
    Finding {
        schema: SCHEMA,
        kind,
        row_key: row_key.to_vec(),
        detail: detail.into(),
        repair: None,
        repaired: false,
    }
}

/// The findings of a suspect confirmed on re-read, each with the conditional write that
/// repairs it: one per missing index row (its cell, written only if its column holds nothing at
/// that timestamp), or the missing graph row (written only if it holds no graph cell).
fn confirmed(table: &str, suspect: &Suspect, found: &RowsByKey, out: &mut Vec<(Finding, Repair)>) {
    match suspect {
        Suspect::Index { text, cells, .. } => {
            let present = presence(cells, text, found, None);
            let held: Vec<&str> = cells
                .iter()
                .zip(present)
                .filter(|(_, p)| *p)
                .map(|(c, _)| c.index.name())
                .collect();
            for (c, p) in cells.iter().zip(present) {
                if p {
                    continue;
                }
                let finding = Finding {
                    schema: SCHEMA,
                    kind: "missing_index",
                    row_key: c.row_key.clone(),
                    detail: format!(
                        "triple {} is in its {} row(s) but not in its {} row",
                        cell_preview(text),
                        held.join(", "),
                        c.index.name()
                    ),
                    repair: Some(format!(
                        "write {}:{}@{} = the triple, if that cell is absent",
                        c.family,
                        escape(c.qualifier),
                        c.timestamp.0
                    )),
                    repaired: false,
                };
                let predicate = RowFilter::Chain(alloc::vec![
                    RowFilter::FamilyNameRegex(c.family.into()),
                    RowFilter::ColumnQualifierRegex(c.qualifier.to_vec()),
                    RowFilter::TimestampRange(TimestampRange {
                        start: c.timestamp.0,
                        end: c.timestamp.0.saturating_add(1),
                    }),
                ]);
                let cell = Mutation::set_cell(c.family, c.qualifier, c.timestamp, text.clone());
                let repair = write_if_absent(table, &c.row_key, predicate, cell);
                out.push((finding, repair));
            }
        }
        Suspect::Graph { graph, seen, .. } => {
            let row_key = keys::graph_row_key(graph);
            let finding = Finding {
                schema: SCHEMA,
                kind: "graph_without_metadata",
                row_key: row_key.clone(),
                detail: format!(
                    "graph {} has triple rows (e.g. {}) but no graph row",
                    quote(graph),
                    escape(seen)
                ),
                repair: Some(format!(
                    "write graph:metadata@{} = the graph id, if the graph row is absent",
                    keys::GRAPH_CELL_TIMESTAMP.0
                )),
                repaired: false,
            };
            let cell = graph_cell(graph);
            let repair = write_if_absent(table, &row_key, graph_cell_filter(), cell);
            out.push((finding, repair));
        }
    }
}

/// The re-check of a repair whose condition matched (something is at the missing cell's
/// coordinates): the finding still holds unless the row now holds exactly the cell the repair
/// would have written, e.g. when two triples of one millisecond share one cell (issue 29).
fn still_missing(_: &Finding, repair: &Repair, row: Option<&Row>) -> bool {
    repair.cells().any(|m| match m {
        Mutation::SetCell {
            family,
            qualifier,
            timestamp,
            value,
        } => !holds(row, family, qualifier, *timestamp, value),
        _ => false,
    })
}

/// `CheckAndMutateRow(row, predicate, false: [cell])`: the cell is written only if the
/// predicate finds nothing.
fn write_if_absent(table: &str, row_key: &[u8], predicate: RowFilter, cell: Mutation) -> Repair {
    let request = Request::CheckAndMutateRow(CheckAndMutateRowRequest {
        table: table.into(),
        app_profile_id: String::new(),
        row_key: row_key.to_vec(),
        predicate: Some(predicate),
        true_mutations: Vec::new(),
        false_mutations: alloc::vec![cell],
    });
    Repair {
        request,
        when_matched: false,
    }
}
