//! `rowkit s3 migrate BUCKET --to v1|v0`: the object-metadata migrator
//! (`docs/migration.md` §3, §7.3, §11.7) run through `ObjectMetadata::migrate_bucket` as far
//! as the gates allow: a progress bar on a terminal (stderr), progress as JSON Lines on stderr
//! with `--json`, and one summary (text line, or JSON document) on stdout. `rowkit gold
//! migrate` shows its progress with the same code ([`Shown`], [`progress_json`]).

use std::io::Write;

use clap::Args;
use rowkit_client::block_on;
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::marker::{Gates, MIN_SETTLE_US, PassCounters};
use rowkit_statemachines::objmeta::migrate::pass::{
    MigrateEvent, PassConflict, PassFinding, PassProgress,
};
use rowkit_statemachines::objmeta::migrate::run::{MigrateEnd, MigrateOptions, MigrateOutcome};
use rowkit_statemachines::objmeta::{ObjmetaError, ObjmetaEvent};
use serde_json::{Value, json};

use crate::args::Context;
use crate::check::could_not_run;
use crate::error::CliError;
use crate::output::{Output, Progress, Verbosity, verbosity};
use crate::s3::Om;
use crate::store_location::StoreLocation;

/// A migration's deadline: a day, or the `--deadline` given if longer. A run stopped by it
/// resumes where it stopped when run again (§7.2).
pub(crate) const MIGRATE_TIMEOUT_MICROS: i64 = 86_400_000_000;

/// `rowkit s3 migrate BUCKET --to v1|v0 …`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Bucket.
    pub bucket: String,
    /// The key format to migrate to: `v1` or `v0` (with `--abort`: the one of the run being
    /// rolled back).
    #[arg(long, value_name = "v1|v0")]
    pub to: String,
    /// Let the run enter `switching` and switch the bucket to the new format: no writer
    /// unaware of the migration writes meanwhile.
    #[arg(long)]
    pub switch: bool,
    /// Let the run enter `cleaning` and delete the old layout: no process of the old
    /// configuration is left.
    #[arg(long)]
    pub finish: bool,
    /// Roll the migration back (before the switch).
    #[arg(long)]
    pub abort: bool,
    /// The settle time Δ waited before the switch, the clean-up and the rollback (e.g. `90s`;
    /// at least 85 s; default 90 s, or 85 s on an embedded or memory store, which this
    /// process holds alone).
    #[arg(long, value_name = "DURATION")]
    pub settle: Option<String>,
    /// Rows read per page (default: the pass's).
    #[arg(long, value_name = "N")]
    pub page: Option<u32>,
    /// Take over a run another migrator's lease holds.
    #[arg(long)]
    pub take_over: bool,
}

/// The key format `--to` names.
fn parse_to(text: &str) -> Result<VFormat, CliError> {
    match text {
        "v1" => Ok(VFormat::V1),
        "v0" => Ok(VFormat::V0),
        other => Err(CliError::usage(format!(
            "--to {other:?}: expected v1 or v0"
        ))),
    }
}

/// `--settle` in µs; without it the minimum on a store this process holds alone (the
/// embedded file's exclusive lock, or memory: no other process can write during the run),
/// else the machine's default.
pub(crate) fn settle_us(settle: Option<&str>, store: &str) -> Result<Option<i64>, CliError> {
    if let Some(text) = settle {
        let d = humantime::parse_duration(text)
            .map_err(|e| CliError::usage(format!("--settle {text:?}: {e}")))?;
        let us = i64::try_from(d.as_micros())
            .map_err(|_| CliError::usage(format!("--settle {text:?} is too large")))?;
        return Ok(Some(us));
    }
    Ok(match StoreLocation::parse(store) {
        Ok(StoreLocation::Embedded(_) | StoreLocation::Memory) => Some(MIN_SETTLE_US),
        _ => None,
    })
}

/// This migrator's name in the checkpoints (`host:pid`, §7.1).
pub(crate) fn owner(pid: u64) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}:{pid}")
}

/// What a migration shows while it runs: the bar, or (`--json`) one JSON line per page or
/// tile.
pub(crate) struct Shown {
    json: bool,
    progress: Progress,
}

impl Shown {
    /// The bar (`json`: JSON Lines instead) of a migration run.
    pub(crate) fn new(json: bool) -> Shown {
        Shown {
            json,
            progress: Progress::new("rows scanned"),
        }
    }

    fn event(&mut self, e: ObjmetaEvent) {
        if let ObjmetaEvent::Migrate(MigrateEvent::Progress(p)) = e {
            self.show(&p);
        }
    }

    /// Ends the bar.
    pub(crate) fn finish(&mut self) {
        self.progress.finish();
    }

    /// Shows one progress event (§7.3).
    pub(crate) fn show(&mut self, p: &PassProgress) {
        if self.json {
            if verbosity() > Verbosity::Quiet {
                // A closed stderr leaves nobody to tell: the run goes on.
                let _ = writeln!(std::io::stderr(), "{}", progress_json(p));
            }
            return;
        }
        let rate = p
            .rate_rows_per_s
            .map_or(String::new(), |r| format!(", {r} rows/s"));
        let eta = p.eta_s.map_or(String::new(), |s| format!(", ETA {s} s"));
        self.progress.show(
            p.counters.rows_scanned,
            &format!("{} pass {}{rate}{eta}", p.state, p.pass),
        );
    }
}

pub(crate) fn counters_json(c: &PassCounters) -> serde_json::Map<String, Value> {
    let v = json!({
        "rows_scanned": c.rows_scanned, "copied": c.copied, "deleted": c.deleted,
        "stamped": c.stamped, "unchanged": c.unchanged, "stragglers": c.stragglers,
        "conflicts": c.conflicts,
    });
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// One JSON line of progress: `MigrateEvent::Progress`'s members (§11.7).
pub(crate) fn progress_json(p: &PassProgress) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("state".into(), json!(p.state.as_str()));
    m.insert("pass".into(), json!(p.pass));
    m.extend(counters_json(&p.counters));
    m.insert("rate_rows_per_s".into(), json!(p.rate_rows_per_s));
    m.insert("eta_s".into(), json!(p.eta_s));
    Value::Object(m)
}

fn conflict_json(c: &PassConflict) -> Value {
    json!({"key": c.key, "from_hash": hex::encode(&c.from_hash), "to_hash": c.to_hash.as_ref().map(hex::encode)})
}

fn finding_json(f: &PassFinding) -> Value {
    json!({"id": f.id(), "message": f.to_string()})
}

/// Where the run ended, as a word: a state, `already` or `removed`.
fn end_name(end: MigrateEnd) -> &'static str {
    match end {
        MigrateEnd::Already => "already",
        MigrateEnd::InState(s) => s.as_str(),
        MigrateEnd::Removed => "removed",
    }
}

/// The summary document.
fn outcome_json(bucket: &str, to: VFormat, abort: bool, o: &MigrateOutcome) -> Value {
    let passes: Vec<Value> = o
        .passes
        .iter()
        .map(|p| {
            let mut m = serde_json::Map::new();
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
        "conflicts": o.conflicts.iter().map(conflict_json).collect::<Vec<_>>(),
        "findings": o.findings.iter().map(finding_json).collect::<Vec<_>>(),
    })
}

/// The summary line (and one line per conflict and finding).
fn outcome_text(bucket: &str, to: VFormat, abort: bool, o: &MigrateOutcome) -> String {
    let rows: u64 = o.passes.iter().map(|p| p.counters.rows_scanned).sum();
    let copied: u64 = o.passes.iter().map(|p| p.counters.copied).sum();
    let deleted: u64 = o.passes.iter().map(|p| p.counters.deleted).sum();
    let counts = format!(
        "{} passes, {rows} rows scanned, {copied} copied, {deleted} deleted, {} stragglers, {} conflicts, {} findings",
        o.passes.len(),
        o.stragglers.len(),
        o.conflicts.len(),
        o.findings.len()
    );
    let mut text = match o.end {
        MigrateEnd::Already => format!("bucket {bucket}: already {}, nothing to do", to.as_str()),
        MigrateEnd::Removed if abort => {
            format!("bucket {bucket}: migration rolled back ({counts})")
        }
        MigrateEnd::Removed => format!("bucket {bucket}: migrated to {} ({counts})", to.as_str()),
        MigrateEnd::InState(s) => {
            let next = match s.as_str() {
                "verifying" => "; run again with --switch to switch",
                "switched" => "; run again with --finish to clean up",
                _ => "",
            };
            format!("bucket {bucket}: {s} ({counts}){next}")
        }
    };
    for c in &o.conflicts {
        text.push_str(&format!("\nconflict: {}", c.key));
    }
    for f in &o.findings {
        text.push_str(&format!("\nfinding: {f}"));
    }
    text
}

/// Runs `rowkit s3 migrate`: exit 0 when the run ended as asked, 1 when it stopped blocked
/// (conflicts or findings left), 2 on bad usage or when it could not run.
pub fn run(
    ctx: &Context,
    om: &Om<'_>,
    store: &str,
    pid: u64,
    args: &MigrateArgs,
    out: &Output,
) -> Result<(), CliError> {
    let to = parse_to(&args.to)?;
    let options = MigrateOptions {
        gates: Gates {
            switch: args.switch,
            finish: args.finish,
        },
        abort: args.abort,
        settle_us: settle_us(args.settle.as_deref(), store)?,
        page_rows: args.page.unwrap_or(0),
        take_over: args.take_over,
        owner: owner(pid),
    };
    let timeout = MIGRATE_TIMEOUT_MICROS.max(ctx.retry.operation_timeout);
    let mut shown = Shown::new(out.is_json());
    let bucket = args.bucket.as_str();
    let result = block_on(om.migrate_bucket(bucket, to, options, timeout, |e| shown.event(e)));
    shown.finish();
    let outcome = match result {
        Ok(o) => o,
        // Findings stop the run before the switch: blocked, exit 1.
        Err(e @ ObjmetaError::MigrationBlocked { .. }) => {
            return Err(CliError::operation(e.in_call(bucket, None)));
        }
        Err(e) => return Err(could_not_run(CliError::operation(e.in_call(bucket, None)))),
    };
    if out.is_json() {
        outln!("{}", outcome_json(bucket, to, args.abort, &outcome));
    } else {
        outln!("{}", outcome_text(bucket, to, args.abort, &outcome));
    }
    if outcome.blocked() {
        return Err(CliError::Exit(1));
    }
    Ok(())
}
