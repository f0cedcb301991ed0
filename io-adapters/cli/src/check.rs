//! What every `rowkit … check` prints (`spec/check.md` §1.4, §1.5, §5): each finding as it
//! comes (text) or in one document at the end (`--json`), the rows scanned and problems found
//! on a terminal while it runs, the summary, and the exit code: 0 when nothing is left, 1 when
//! findings are left, 2 when the check could not run ([`could_not_run`]).

use std::io::Write;

use rowkit_codec::escape::escape;
use rowkit_statemachines::check::{CheckError, CheckEvent, CheckReport, CheckSummary, Finding};
use serde_json::{Value, json};

use rowkit_client::mounttable::{MountTable, MtConfig};
use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::tracestore::TraceStore;
use rowkit_client::triples::TripleStore;
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::tracestore::detect_layout;
use rowkit_statemachines::check::CheckOptions;
use rowkit_statemachines::mounttable::Tables;
use rowkit_statemachines::objmeta::{ObjmetaConfig, ObjmetaState};
use rowkit_store::Store;
use rowkit_store::driver::Clock;

use crate::args::Context;
use crate::error::CliError;
use crate::output::{Output, Progress};

/// A check's deadline: as long as `mt fsck`'s (1 h), or the `--deadline` given if longer.
pub const CHECK_TIMEOUT_MICROS: i64 = 3_600_000_000;

/// The deadline of a check run with `ctx`'s options, in µs from its start.
pub fn check_timeout(ctx: &Context) -> i64 {
    CHECK_TIMEOUT_MICROS.max(ctx.retry.operation_timeout)
}

/// The facades' options for a check: the seed, and the check's own deadline
/// ([`check_timeout`]: a check runs as long as it is let).
pub fn check_options(ctx: &Context) -> rowkit_client::CallOptions {
    rowkit_client::CallOptions {
        deadline_micros: Some(check_timeout(ctx)),
        ..ctx.call_options()
    }
}

/// `--fix` and `--grace SECS`: the options of every check that may repair.
#[derive(Debug, clap::Args)]
pub struct CheckFlags {
    /// Repair what the check may repair, each repair only if the rows are still as the check
    /// read them (without it the store is opened read-only).
    #[arg(long)]
    pub fix: bool,
    /// Seconds a possible in-flight write is given before it is re-read and reported.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub grace: u32,
}

impl CheckFlags {
    /// The check's options.
    pub fn options(&self) -> CheckOptions {
        CheckOptions {
            fix: self.fix,
            grace_micros: i64::from(self.grace) * 1_000_000,
            ..CheckOptions::default()
        }
    }
}

/// A check's error, every schema's check the same way: bad arguments as usage, anything else
/// through the one mapping of operation errors ([`CliError::operation`]: `aborted` as the
/// other commands report it, a store error as its status).
pub fn check_error(e: CheckError) -> CliError {
    match e {
        CheckError::Invalid(m) => CliError::usage(m),
        other => CliError::operation(other),
    }
}

/// The error of a check that could not run (a store error, a locked store, the deadline):
/// exit 2, since 1 means findings left; bad usage is 2 already, and findings, a closed pipe
/// and other ends with their own code keep it.
pub fn could_not_run(e: CliError) -> CliError {
    match e {
        CliError::Usage(_) | CliError::Exit(_) | CliError::Output(_) => e,
        other => CliError::Schema {
            id: other.id(),
            message: other.message(),
            exit: 2,
        },
    }
}

/// The output of one schema's check while it runs.
pub struct CheckOutput<'o> {
    out: &'o Output,
    schema: &'static str,
    /// The table, named in the summary when several are checked.
    table: Option<String>,
    progress: Progress,
    /// With `--json`: every finding, for the document at the end.
    findings: Vec<Finding>,
    /// A failed write of a finding line (a closed pipe): the check goes on, quietly.
    write_error: Option<CliError>,
}

impl<'o> CheckOutput<'o> {
    /// The output of the check of `schema`.
    pub fn new(out: &'o Output, schema: &'static str) -> CheckOutput<'o> {
        CheckOutput {
            out,
            schema,
            table: None,
            progress: Progress::new("rows scanned"),
            findings: Vec::new(),
            write_error: None,
        }
    }

    /// Takes one event of the check machine.
    pub fn event(&mut self, event: CheckEvent) {
        match event {
            CheckEvent::Progress {
                rows_scanned,
                findings,
            } => self
                .progress
                .show(rows_scanned, &format!("{findings} problems")),
            CheckEvent::Finding(f) if self.out.is_json() => self.findings.push(f),
            CheckEvent::Finding(f) => {
                if self.write_error.is_some() {
                    return;
                }
                self.progress.finish();
                if let Err(e) = write_finding(&f) {
                    self.write_error = Some(CliError::Output(e));
                }
            }
            // An event added later: nothing to show until the CLI learns it.
            _ => {}
        }
    }

    /// Names the table in the summary (`rowkit check` checks several).
    pub fn with_table(mut self, table: &str) -> Self {
        self.table = Some(table.into());
        self
    }

    /// Prints the summary (or the JSON document) of a finished check; `Err(Exit(1))` when
    /// findings are left.
    pub fn finish(self, summary: &CheckSummary) -> Result<(), CliError> {
        if let Some(doc) = self.report(summary)? {
            outln!("{doc}");
        }
        if summary.is_clean() {
            Ok(())
        } else {
            Err(CliError::Exit(1))
        }
    }

    /// Ends the check: the summary line is printed (text), or the JSON document given back.
    pub fn report(mut self, summary: &CheckSummary) -> Result<Option<Value>, CliError> {
        self.progress.finish();
        if let Some(e) = self.write_error.take() {
            return Err(e);
        }
        if self.out.is_json() {
            let report = CheckReport {
                schema: self.schema,
                table: self.table.take(),
                summary: summary.clone(),
                findings: std::mem::take(&mut self.findings),
            };
            return Ok(Some(json!(report)));
        }
        let label = match &self.table {
            Some(t) => format!("{} (table {t})", self.schema),
            None => self.schema.to_string(),
        };
        outln!("{}", summary_line(&label, summary));
        Ok(None)
    }
}

/// `KIND  ROW  DETAIL  (repaired | repair: WHAT)` on stdout.
fn write_finding(f: &Finding) -> std::io::Result<()> {
    let repair = match (&f.repair, f.repaired) {
        (Some(what), true) => format!(" (repaired: {what})"),
        (Some(what), false) => format!(" (repair: {what})"),
        (None, _) => String::new(),
    };
    writeln!(
        std::io::stdout().lock(),
        "{}\t{}\t{}{repair}",
        f.kind,
        escape(&f.row_key),
        f.detail
    )
}

/// `graph: 120 rows scanned, 11 findings (cell_mismatch 1, …), 3 repaired, 8 left`.
fn summary_line(schema: &str, s: &CheckSummary) -> String {
    let kinds: Vec<String> = s
        .findings_by_kind
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let mut line = format!(
        "{schema}: {} rows scanned, {} findings",
        s.rows_scanned,
        s.findings()
    );
    if !kinds.is_empty() {
        line.push_str(&format!(" ({})", kinds.join(", ")));
    }
    line.push_str(&format!(", {} repaired, {} left", s.repaired, s.left));
    for note in &s.notes {
        line.push_str(&format!("\nnote: {note}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_line_names_every_kind() {
        let mut s = CheckSummary {
            rows_scanned: 12,
            ..CheckSummary::default()
        };
        for (kind, repaired) in [("missing_index", true), ("undecodable_key", false)] {
            s.record(&Finding {
                schema: "graph",
                kind,
                row_key: b"k".to_vec(),
                detail: String::new(),
                repair: None,
                repaired,
            });
        }
        assert_eq!(
            summary_line("graph", &s),
            "graph: 12 rows scanned, 2 findings (missing_index 1, undecodable_key 1), 1 repaired, 1 left"
        );
    }
}

/// `rowkit check [--fix] [--grace SECS]`: every schema table of the store, each found by its
/// families, checked with its schema's check (the mount table's is `fsck`); exit 1 if any
/// table has findings left.
pub fn run_all(ctx: &Context, args: &CheckArgs, out: &Output) -> Result<(), CliError> {
    let (options, timeout) = (args.flags.options(), check_timeout(ctx));
    let driver = SyncDriver::new(ctx.store.as_ref(), ctx.clock.as_ref());
    let mut tables = ctx.store.list_tables()?;
    tables.sort();
    let mut docs = Vec::new();
    let mut skipped = Vec::new();
    let mut left = false;
    for table in &tables {
        let families: Vec<String> = ctx
            .store
            .families(table)?
            .into_iter()
            .map(|f| f.name)
            .collect();
        let exactly = |names: &[&str]| {
            let mut want: Vec<&str> = names.to_vec();
            let mut got: Vec<&str> = families.iter().map(String::as_str).collect();
            want.sort_unstable();
            got.sort_unstable();
            want == got
        };
        let summary = if exactly(&["graph", "immutable_triple", "temporal_triple"]) {
            let mut output = CheckOutput::new(out, "graph").with_table(table);
            let ts = TripleStore::new(&driver)
                .with_table(table)
                .with_options(ctx.call_options());
            let s = block_on(ts.check(None, options, timeout, |e| output.event(e)))
                .map_err(check_error)?;
            docs.extend(output.report(&s)?);
            s
        } else if exactly(&["d", "f"]) {
            let mut output = CheckOutput::new(out, "s3").with_table(table);
            let config = ObjmetaConfig {
                table: table.clone(),
                ..ObjmetaConfig::default()
            };
            let om = ObjectMetadata::new(&driver, ObjmetaState::new(config))
                .with_options(ctx.call_options());
            let s = block_on(om.check(None, options, timeout, |e| output.event(e)))
                .map_err(check_error)?;
            docs.extend(output.report(&s)?);
            s
        } else if exactly(&["m", "s", "c"]) && tables.contains(&format!("{table}-counters")) {
            let (s, doc) = fsck(ctx, &driver, table, args.flags.fix, out)?;
            docs.extend(doc);
            s
        } else if let Ok(layout) = detect_layout(&families, None) {
            let mut output = CheckOutput::new(out, "gold").with_table(table);
            let gold =
                TraceStore::with_layout(&driver, table, layout).with_options(ctx.call_options());
            let s =
                block_on(gold.check(options, timeout, |e| output.event(e))).map_err(check_error)?;
            docs.extend(output.report(&s)?);
            s
        } else if let Some(finding) = incomplete_schema_table(table, &families, &tables) {
            let mut output = CheckOutput::new(out, finding.schema).with_table(table);
            let mut s = CheckSummary::default();
            s.record(&finding);
            output.event(CheckEvent::Finding(finding));
            docs.extend(output.report(&s)?);
            s
        } else {
            if !table.ends_with("-counters") {
                skipped.push(table.clone());
            }
            continue;
        };
        left |= !summary.is_clean();
    }
    if out.is_json() {
        outln!("{}", json!({"checks": docs, "skipped": skipped}));
    } else if !skipped.is_empty() {
        outln!("not a schema table, not checked: {}", skipped.join(", "));
    }
    if left { Err(CliError::Exit(1)) } else { Ok(()) }
}

/// Each schema's families, and the companion table it needs (its name after the table's).
const SCHEMA_FAMILIES: [(&str, &[&str], Option<&str>); 4] = [
    (
        "graph",
        &["graph", "immutable_triple", "temporal_triple"],
        None,
    ),
    ("s3", &["d", "f"], None),
    ("mt", &["m", "s", "c"], Some("-counters")),
    ("gold", &["T", "O"], None),
];

/// A finding for a table that is a schema's table with a family or its companion table
/// missing (or, for Gold, families that name no one layout): reported rather than skipped as
/// "not a schema table", since no check of it can run. Only a table holding at least two of a
/// schema's families counts, so a table of someone else's with one family named `d` or `c`
/// is not taken for one.
fn incomplete_schema_table(table: &str, families: &[String], tables: &[String]) -> Option<Finding> {
    let has = |f: &str| families.iter().any(|x| x == f);
    for (schema, wanted, companion) in SCHEMA_FAMILIES {
        let present = wanted.iter().filter(|f| has(f)).count();
        if present < 2 {
            continue;
        }
        let missing: Vec<&str> = wanted.iter().copied().filter(|f| !has(f)).collect();
        let (kind, detail) = if !missing.is_empty() {
            let detail = format!(
                "table {table} has the {schema} families but not {}: it cannot be checked",
                missing.join(", ")
            );
            ("missing_family", detail)
        } else if let Some(suffix) = companion
            && !tables.contains(&format!("{table}{suffix}"))
        {
            let detail = format!(
                "table {table} has no companion table {table}{suffix}: it cannot be checked"
            );
            ("missing_table", detail)
        } else if schema == "gold"
            && let Err(e) = detect_layout(families, None)
        {
            let detail = format!("table {table}: {e}: it cannot be checked");
            ("ambiguous_layout", detail)
        } else {
            continue;
        };
        return Some(Finding {
            schema,
            kind,
            row_key: Vec::new(),
            detail,
            repair: None,
            repaired: false,
        });
    }
    None
}

/// The driver `rowkit` commands run on.
type Driver<'c> = SyncDriver<&'c dyn Store, &'c (dyn Clock + Send + Sync)>;

/// The mount table's check is its fsck (`spec/check.md` §1: not restated), reported like the
/// others: its findings by kind, repaired when `fix` fixed them.
fn fsck(
    ctx: &Context,
    driver: &Driver<'_>,
    table: &str,
    fix: bool,
    out: &Output,
) -> Result<(CheckSummary, Option<Value>), CliError> {
    let config = MtConfig {
        tables: Tables::new(table),
        ..MtConfig::default()
    };
    let t = MountTable::new(driver, config).with_options(check_options(ctx));
    let mut output = CheckOutput::new(out, "mt").with_table(table);
    let summary =
        block_on(t.check(fix, |event| output.event(event))).map_err(CliError::operation)?;
    let doc = output.report(&summary)?;
    Ok((summary, doc))
}

/// `rowkit check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The store and its clock.
    #[command(flatten)]
    pub store: crate::args::StoreArgs,
    /// `--fix` (the mount table: `fsck --fix`), `--grace`.
    #[command(flatten)]
    pub flags: CheckFlags,
}
