//! The JSON documents of a bucket migration (`docs/migration.md` §7.3, §11.7), one
//! serialisation for every front end: `rowkit s3 migrate --json` prints them (progress as JSON
//! Lines, the result on stdout) and the wasm package hands the same members to JS (the browser
//! tool's Migrate action).

use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::marker::PassCounters;
use rowkit_statemachines::objmeta::migrate::marker::MigrationRead;
use rowkit_statemachines::objmeta::migrate::pass::{
    MigrateEvent, PassConflict, PassFinding, PassProgress,
};
use rowkit_statemachines::objmeta::migrate::run::{MigrateEnd, MigrateOutcome};
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
    // The texts as stored (members in their written order); `read` decoded them strictly, so
    // they parse.
    let stored = |text: Option<&[u8]>| {
        text.and_then(|t| serde_json::from_slice::<Value>(t).ok())
            .unwrap_or(Value::Null)
    };
    json!({
        "bucket": bucket,
        "vformat": read.vformat.as_str(),
        "marker": stored(read.columns.marker.as_deref()),
        "checkpoint": stored(read.columns.checkpoint.as_deref()),
    })
}
