//! What every `rowkit … check` prints (`spec/check.md` §1.4, §1.5, §5): each finding as it
//! comes (text) or in one document at the end (`--json`), the rows scanned and problems found
//! on a terminal while it runs, the summary, and the exit code: 0 when nothing is left, 1 when
//! findings are left.

use std::io::Write;

use rowkit_codec::escape::escape;
use rowkit_statemachines::StoreError;
use rowkit_statemachines::check::{CheckError, CheckEvent, CheckSummary, Finding};
use serde_json::{Map, Value, json};

use crate::error::CliError;
use crate::output::{Output, Progress, bytes_fields};

/// A check's deadline: as long as `mt fsck`'s (1 h), or the `--deadline` given if longer.
pub const CHECK_TIMEOUT_MICROS: i64 = 3_600_000_000;

/// A check's error: `aborted` as the other commands report it, bad arguments as usage.
pub fn check_error(e: CheckError) -> CliError {
    match e {
        CheckError::Aborted => CliError::Schema {
            id: "aborted".into(),
            message: e.to_string(),
            exit: 1,
        },
        CheckError::Invalid(m) => CliError::usage(m),
        other => CliError::Store(StoreError::from(other)),
    }
}

/// The output of one schema's check while it runs.
pub struct CheckOutput<'o> {
    out: &'o Output,
    schema: &'static str,
    progress: Progress,
    /// With `--json`: every finding, for the document at the end.
    findings: Vec<Value>,
    /// A failed write of a finding line (a closed pipe): the check goes on, quietly.
    write_error: Option<CliError>,
}

impl<'o> CheckOutput<'o> {
    /// The output of the check of `schema`.
    pub fn new(out: &'o Output, schema: &'static str) -> CheckOutput<'o> {
        CheckOutput {
            out,
            schema,
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
            CheckEvent::Finding(f) if self.out.is_json() => self.findings.push(finding_json(&f)),
            CheckEvent::Finding(f) => {
                if self.write_error.is_some() {
                    return;
                }
                self.progress.finish();
                if let Err(e) = write_finding(&f) {
                    self.write_error = Some(CliError::Output(e));
                }
            }
        }
    }

    /// Prints the summary (or the JSON document) of a finished check; `Err(Exit(1))` when
    /// findings are left.
    pub fn finish(mut self, summary: &CheckSummary) -> Result<(), CliError> {
        self.progress.finish();
        if let Some(e) = self.write_error.take() {
            return Err(e);
        }
        if self.out.is_json() {
            let mut doc = summary_json(self.schema, summary);
            doc.insert(
                "findings".into(),
                Value::Array(std::mem::take(&mut self.findings)),
            );
            outln!("{}", Value::Object(doc));
        } else {
            outln!("{}", summary_line(self.schema, summary));
        }
        if summary.is_clean() {
            Ok(())
        } else {
            Err(CliError::Exit(1))
        }
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

/// One finding as JSON: `{schema, kind, row_key, row_key_hex, detail, repair, repaired}`.
fn finding_json(f: &Finding) -> Value {
    let mut m = Map::new();
    m.insert("schema".into(), json!(f.schema));
    m.insert("kind".into(), json!(f.kind));
    bytes_fields(&mut m, "row_key", &f.row_key);
    m.insert("detail".into(), json!(f.detail));
    m.insert(
        "repair".into(),
        json!(f.repair.as_deref().unwrap_or("none")),
    );
    m.insert("repaired".into(), json!(f.repaired));
    Value::Object(m)
}

/// `{schema, rows_scanned, findings_by_kind, repaired, left, notes}`.
fn summary_json(schema: &str, s: &CheckSummary) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("schema".into(), json!(schema));
    m.insert("rows_scanned".into(), json!(s.rows_scanned));
    m.insert("findings_by_kind".into(), json!(s.findings_by_kind));
    m.insert("repaired".into(), json!(s.repaired));
    m.insert("left".into(), json!(s.left));
    m.insert("notes".into(), json!(s.notes));
    m
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
