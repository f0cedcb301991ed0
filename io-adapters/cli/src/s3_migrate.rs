//! `rowkit s3 migrate BUCKET --to v1|v0`: the object-metadata migrator
//! (`docs/migration.md` §3, §7.3, §11.7) run through `ObjectMetadata::migrate_bucket` as far
//! as the gates allow: a progress bar on a terminal (stderr), progress as JSON Lines on stderr
//! with `--json`, and one summary (text line, or JSON document) on stdout. `rowkit gold
//! migrate` shows its progress with the same code ([`Shown`], [`progress_json`]).

use std::io::Write;

use clap::Args;
use rowkit_client::migration_json::{MIGRATE_TIMEOUT_MICROS, outcome_json, progress_json};
use rowkit_client::objmeta::ObjectMetadata;
use rowkit_client::{Driver, POOL_WORKERS, block_on};
use rowkit_codec::objmeta::keys::VFormat;
use rowkit_codec::objmeta::migration::marker::{Gates, MIN_SETTLE_US};
use rowkit_codec::objmeta::migration::sync::Keep;
use rowkit_statemachines::objmeta::migrate::pass::{MigrateEvent, PassProgress};
use rowkit_statemachines::objmeta::migrate::run::{MigrateEnd, MigrateOptions, MigrateOutcome};
use rowkit_statemachines::objmeta::{ObjmetaError, ObjmetaEvent};

use crate::args::Context;
use crate::check::could_not_run;
use crate::error::CliError;
use crate::output::{Output, Progress, Verbosity, verbosity};
use crate::store_location::StoreLocation;

/// `rowkit s3 migrate BUCKET --to v1|v0 …`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Bucket.
    pub bucket: String,
    /// The key format to migrate to: `v1` or `v0` (with `--abort`: the one of the run being
    /// rolled back). On a bucket `switched` to the other format, the format it came from rolls
    /// the switch back (with `--switch`; `--finish` then deletes the other layout).
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
    /// Requests the migrator keeps in flight at once (1–256): fewer leave more of the store
    /// to the applications' writers, more copy faster.
    #[arg(long, value_name = "N", default_value_t = POOL_WORKERS as u16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub max_inflight: u16,
    /// Settle the conflicts met after the switch by copying one side over the other:
    /// `keep-to` (the new layout's row) or `keep-from` (the old layout's row).
    #[arg(long, value_name = "keep-to|keep-from")]
    pub resolve: Option<String>,
    /// Refuse to start the switch's pause of the writers when it is expected to last longer
    /// (e.g. `2m`; the estimate: the settle time plus the rows at the verification's rate).
    #[arg(long, value_name = "DURATION")]
    pub max_pause: Option<String>,
}

/// The side `--resolve` keeps.
fn parse_resolve(text: Option<&str>) -> Result<Option<Keep>, CliError> {
    text.map(|t| {
        Keep::parse(t).ok_or_else(|| {
            CliError::usage(format!("--resolve {t:?}: expected keep-to or keep-from"))
        })
    })
    .transpose()
}

/// A duration flag (`--settle`, `--max-pause`) in µs.
fn duration_us(flag: &str, text: &str) -> Result<i64, CliError> {
    let d = humantime::parse_duration(text)
        .map_err(|e| CliError::usage(format!("{flag} {text:?}: {e}")))?;
    i64::try_from(d.as_micros())
        .map_err(|_| CliError::usage(format!("{flag} {text:?} is too large")))
}

/// The key format `--to` names.
fn parse_to(text: &str) -> Result<VFormat, CliError> {
    VFormat::parse(text).map_err(|_| CliError::usage(format!("--to {text:?}: expected v1 or v0")))
}

/// `--settle` in µs; without it the minimum on a store this process holds alone (the
/// embedded file's exclusive lock, or memory: no other process can write during the run),
/// else the machine's default.
pub(crate) fn settle_us(settle: Option<&str>, store: &str) -> Result<Option<i64>, CliError> {
    if let Some(text) = settle {
        return duration_us("--settle", text).map(Some);
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
    let pause = o.pause_estimate_us.map_or(String::new(), |us| {
        format!(
            ", expected pause of the switch {} s",
            us.saturating_add(999_999) / 1_000_000
        )
    });
    let counts = format!("{counts}{pause}");
    let mut text = match o.end {
        MigrateEnd::Already => format!("bucket {bucket}: already {}, nothing to do", to.as_str()),
        MigrateEnd::Removed if abort => {
            format!("bucket {bucket}: migration rolled back ({counts})")
        }
        MigrateEnd::Removed => format!("bucket {bucket}: migrated to {} ({counts})", to.as_str()),
        MigrateEnd::InState(s) => {
            let next = match s.as_str() {
                "verifying" => "; run again with --switch to switch",
                "switched" if o.blocked() => {
                    "; settle the conflicts with --resolve keep-to|keep-from, or fix the findings"
                }
                "switched" => "; run again with --finish to clean up",
                _ => "",
            };
            format!("bucket {bucket}: {s} ({counts}){next}")
        }
    };
    for c in o.conflicts.iter().filter(|c| !o.resolved.contains(&c.key)) {
        text.push_str(&format!("\nconflict: {}", c.key));
    }
    for key in &o.resolved {
        text.push_str(&format!("\nresolved: {key}"));
    }
    for f in &o.findings {
        text.push_str(&format!("\nfinding: {f}"));
    }
    text
}

/// Runs `rowkit s3 migrate`: exit 0 when the run ended as asked, 1 when it stopped blocked
/// (conflicts or findings left), 2 on bad usage or when it could not run.
pub fn run<D: Driver>(
    ctx: &Context,
    om: &ObjectMetadata<D>,
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
        resolve: parse_resolve(args.resolve.as_deref())?,
        max_pause_us: args
            .max_pause
            .as_deref()
            .map(|t| duration_us("--max-pause", t))
            .transpose()?,
    };
    // A day, or the `--deadline` given if longer.
    let timeout = MIGRATE_TIMEOUT_MICROS.max(ctx.retry.operation_timeout);
    let mut shown = Shown::new(out.is_json());
    let bucket = args.bucket.as_str();
    let result = block_on(om.migrate_bucket(bucket, to, options, timeout, |e| shown.event(e)));
    shown.finish();
    let outcome = match result {
        Ok(o) => o,
        // Findings stop the run before the switch, and --max-pause refuses the fence:
        // blocked, exit 1.
        Err(
            e
            @ (ObjmetaError::MigrationBlocked { .. } | ObjmetaError::MigrationPauseTooLong { .. }),
        ) => {
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
