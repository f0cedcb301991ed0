//! The JSON documents of a layout migration (`docs/migration.md` §7.3, §11.7) — a bucket's
//! and a trace store table's —, one serialisation for every front end: `rowkit s3 migrate
//! --json` and `rowkit gold migrate --json` print them (progress as JSON Lines, the result on
//! stdout) and the wasm package hands the same members to JS (the browser tool's Migrate
//! actions).

use rowkit_codec::model::Timestamp;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::marker::PassCounters;
use rowkit_codec::tracestore::Layout;
use rowkit_statemachines::objmeta::migrate::marker::MigrationRead;
use rowkit_statemachines::objmeta::migrate::pass::{
    MigrateEvent, PassConflict, PassFinding, PassProgress,
};
use rowkit_statemachines::objmeta::migrate::run::{MigrateEnd, MigrateOutcome};
use rowkit_statemachines::tracestore::migrate::TraceMigrateEvent;
use rowkit_statemachines::tracestore::migrate::marker::TraceMigrationRead;
use rowkit_statemachines::tracestore::migrate::pass::TilePassSummary;
use rowkit_statemachines::tracestore::migrate::run::{TraceMigrateEnd, TraceMigrateOutcome};
use serde_json::{Map, Value, json};

/// A migration's deadline: a day. A run stopped by it resumes where it stopped when run again
/// (`docs/migration.md` §7.2); the run waits the settle time `Δ` twice on its way.
pub const MIGRATE_TIMEOUT_MICROS: i64 = 86_400_000_000;

/// A pass's counters as members (`rows_scanned`, `copied`, `deleted`, `stamped`, `unchanged`,
/// `stragglers`, `conflicts`).
pub fn counters_json(c: &PassCounters) -> Map<String, Value> {
    let mut m = Map::new();
    for (name, n) in [
        ("rows_scanned", c.rows_scanned),
        ("copied", c.copied),
        ("deleted", c.deleted),
        ("stamped", c.stamped),
        ("unchanged", c.unchanged),
        ("stragglers", c.stragglers),
        ("conflicts", c.conflicts),
    ] {
        m.insert(name.into(), json!(n));
    }
    m
}

/// One progress document: `MigrateEvent::Progress`'s members (`state`, `pass`, the counters,
/// `rate_rows_per_s`, `eta_s`), the CLI's JSON line per page (§11.7).
pub fn progress_json(p: &PassProgress) -> Value {
    let mut m = Map::new();
    m.insert("state".into(), json!(p.state.as_str()));
    m.insert("pass".into(), json!(p.pass));
    m.extend(counters_json(&p.counters));
    m.insert("rate_rows_per_s".into(), json!(p.rate_rows_per_s));
    m.insert("eta_s".into(), json!(p.eta_s));
    Value::Object(m)
}

/// A conflict: `{key, from_hash, to_hash}` (hashes in hex, `to_hash` `null` when absent).
pub fn conflict_json(c: &PassConflict) -> Value {
    json!({"key": c.key, "from_hash": hex::encode(&c.from_hash), "to_hash": c.to_hash.as_ref().map(hex::encode)})
}

/// A finding: `{id, message}`.
pub fn finding_json(f: &PassFinding) -> Value {
    json!({"id": f.id(), "message": f.to_string()})
}

/// Any event of the migration, as one document whose `event` names its kind: `progress`
/// ([`progress_json`]'s members), `state_changed` (`from`, `to`: a state or `null` for no
/// marker), `straggler` (`key`), `conflict` ([`conflict_json`]'s members), `finding`
/// ([`finding_json`]'s members), `resolved` (`key`, `kept`).
pub fn event_json(e: &MigrateEvent) -> Value {
    let (kind, body) = match e {
        MigrateEvent::Progress(p) => ("progress", progress_json(p)),
        MigrateEvent::StateChanged { from, to } => (
            "state_changed",
            json!({"from": from.map(|s| s.as_str()), "to": to.map(|s| s.as_str())}),
        ),
        MigrateEvent::Straggler { key } => ("straggler", json!({ "key": key })),
        MigrateEvent::Resolved { key, kept } => {
            ("resolved", json!({ "key": key, "kept": kept.as_str() }))
        }
        MigrateEvent::Conflict(c) => ("conflict", conflict_json(c)),
        MigrateEvent::Finding(f) => ("finding", finding_json(f)),
    };
    let mut m = Map::new();
    m.insert("event".into(), json!(kind));
    if let Value::Object(members) = body {
        m.extend(members);
    }
    Value::Object(m)
}

/// Where a run ended, as a word: a state, `already` or `removed`.
pub fn end_name(end: MigrateEnd) -> &'static str {
    match end {
        MigrateEnd::Already => "already",
        MigrateEnd::InState(s) => s.as_str(),
        MigrateEnd::Removed => "removed",
    }
}

/// The result document of a run on `bucket` to `to` (`abort`: a rollback): `{bucket, to,
/// abort, state, run, blocked, passes: [{kind, pass, diffs, …counters}], stragglers, resolved,
/// pause_estimate_us, conflicts, findings}`.
pub fn outcome_json(bucket: &str, to: VFormat, abort: bool, o: &MigrateOutcome) -> Value {
    let passes: Vec<Value> = o
        .passes
        .iter()
        .map(|p| {
            let mut m = Map::new();
            m.insert("kind".into(), json!(format!("{:?}", p.kind).to_lowercase()));
            m.insert("pass".into(), json!(p.pass));
            m.insert("diffs".into(), json!(p.diffs));
            m.extend(counters_json(&p.counters));
            Value::Object(m)
        })
        .collect();
    json!({
        "bucket": bucket,
        "to": to.as_str(),
        "abort": abort,
        "state": end_name(o.end),
        "run": o.run.map(|r| r.to_string()),
        "blocked": o.blocked(),
        "passes": passes,
        "stragglers": o.stragglers,
        "resolved": o.resolved,
        "pause_estimate_us": o.pause_estimate_us,
        "conflicts": o.conflicts.iter().map(conflict_json).collect::<Vec<_>>(),
        "findings": o.findings.iter().map(finding_json).collect::<Vec<_>>(),
    })
}

/// A bucket's migration state as read (`ObjectMetadata::read_migration`): `{bucket, vformat,
/// marker, checkpoint}`, the marker and checkpoint as their stored JSON texts parse (§2.2,
/// §7.1), `null` when absent.
pub fn status_json(bucket: &str, read: &MigrationRead) -> Value {
    json!({
        "bucket": bucket,
        "vformat": read.vformat.as_str(),
        "marker": stored_json(read.columns.marker.as_deref()),
        "checkpoint": stored_json(read.columns.checkpoint.as_deref()),
    })
}

/// A marker's or checkpoint's stored JSON text as a document, members in their written order
/// (`null` when absent). The reader decoded the text strictly already, so it parses.
fn stored_json(text: Option<&[u8]>) -> Value {
    text.and_then(|t| serde_json::from_slice::<Value>(t).ok())
        .unwrap_or(Value::Null)
}

/// Where a trace store run ended, as a word: a state, `removed` (rolled back) or `cleaned`.
pub fn trace_end_name(end: TraceMigrateEnd) -> &'static str {
    match end {
        TraceMigrateEnd::InState(s) => s.as_str(),
        TraceMigrateEnd::Removed => "removed",
        TraceMigrateEnd::Cleaned => "cleaned",
    }
}

/// A trace point a sweep named (a straggler or a conflict, §5.6): `{trace, commit, ts}` (`ts`
/// in µs).
pub fn trace_point_json(trace: &str, commit: u32, ts: Timestamp) -> Value {
    json!({"trace": trace, "commit": commit, "ts": ts.0})
}

/// Any event of a trace store migration, as one document whose `event` names its kind:
/// `progress` ([`progress_json`]'s members), `state_changed` (`from`, `to`), `straggler` and
/// `conflict` ([`trace_point_json`]'s members), `finding` ([`finding_json`]'s) — the members of [`event_json`]'s kinds where
/// the two migrators share them. `None` for a kind of event this serialisation does not know.
pub fn trace_event_json(e: &TraceMigrateEvent) -> Option<Value> {
    let (kind, body) = match e {
        TraceMigrateEvent::Progress(p) => ("progress", progress_json(p)),
        TraceMigrateEvent::StateChanged { from, to } => (
            "state_changed",
            json!({"from": from.map(|s| s.as_str()), "to": to.map(|s| s.as_str())}),
        ),
        TraceMigrateEvent::Straggler { trace, commit, ts } => {
            ("straggler", trace_point_json(trace, *commit, *ts))
        }
        TraceMigrateEvent::Conflict { trace, commit, ts } => {
            ("conflict", trace_point_json(trace, *commit, *ts))
        }
        TraceMigrateEvent::Finding(f) => ("finding", finding_json(f)),
        _ => return None,
    };
    let mut m = Map::new();
    m.insert("event".into(), json!(kind));
    if let Value::Object(members) = body {
        m.extend(members);
    }
    Some(Value::Object(m))
}

/// The stragglers and conflicts a trace store run's events named (its result lists them: the
/// outcome counts them only), as [`trace_point_json`] documents.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TracePoints {
    /// The stragglers' points.
    pub stragglers: Vec<Value>,
    /// The conflicts' points.
    pub conflicts: Vec<Value>,
}

impl TracePoints {
    /// Keeps the point `e` names, if it is a straggler or a conflict.
    pub fn record(&mut self, e: &TraceMigrateEvent) {
        match e {
            TraceMigrateEvent::Straggler { trace, commit, ts } => {
                self.stragglers.push(trace_point_json(trace, *commit, *ts))
            }
            TraceMigrateEvent::Conflict { trace, commit, ts } => {
                self.conflicts.push(trace_point_json(trace, *commit, *ts))
            }
            _ => {}
        }
    }
}

/// A tile pass's summary: `{kind, pass, diffs, tiles, skipped_rows, options_rows_dropped,
/// …counters}`.
fn tile_pass_json(s: &TilePassSummary) -> Value {
    let mut m = Map::new();
    m.insert("kind".into(), json!(format!("{:?}", s.kind).to_lowercase()));
    m.insert("pass".into(), json!(s.pass));
    m.insert("diffs".into(), json!(s.diffs));
    m.insert("tiles".into(), json!(s.tiles));
    m.insert("skipped_rows".into(), json!(s.skipped_rows));
    m.insert("options_rows_dropped".into(), json!(s.options_rows_dropped));
    m.extend(counters_json(&s.counters));
    Value::Object(m)
}

/// The result document of a trace store run of `table` into `target_table`, to layout `to`
/// (`abort`: a rollback): `{table, target_table, to, abort, state, run, passes: [{kind, pass,
/// diffs, tiles, skipped_rows, options_rows_dropped, …counters}], target_rows_deleted,
/// source_rows_deleted, source_rows_left, stragglers, conflicts, findings}` (`findings`: the
/// target check's findings the source has too, which did not block the switch).
pub fn trace_outcome_json(
    table: &str,
    target_table: &str,
    to: Layout,
    abort: bool,
    o: &TraceMigrateOutcome,
    points: &TracePoints,
) -> Value {
    json!({
        "table": table,
        "target_table": target_table,
        "to": to.name(),
        "abort": abort,
        "state": trace_end_name(o.end),
        "run": o.run.map(|r| r.to_string()),
        "passes": o.passes.iter().map(tile_pass_json).collect::<Vec<_>>(),
        "target_rows_deleted": o.target_rows_deleted,
        "source_rows_deleted": o.source_rows_deleted,
        "source_rows_left": o.source_rows_left,
        "stragglers": points.stragglers,
        "conflicts": points.conflicts,
        "findings": o.findings.iter().map(finding_json).collect::<Vec<_>>(),
    })
}

/// A trace store table's migration state as read (`TraceStore::read_migration`): `{table,
/// layout, marker, checkpoint}`, the marker and checkpoint as their stored JSON texts parse
/// (§2.1, §7.1), `null` when absent.
pub fn trace_status_json(table: &str, layout: Layout, read: &TraceMigrationRead) -> Value {
    json!({
        "table": table,
        "layout": layout.name(),
        "marker": stored_json(read.cells.marker.as_deref()),
        "checkpoint": stored_json(read.cells.checkpoint.as_deref()),
    })
}
