//! `rowkit gold migrate --to digest-id|md5 --target-table T2`: the trace store's migrator
//! (`docs/migration.md` §5, §7.3, §11.6, §11.7) run through `TraceStore::migrate` as far as
//! the gates allow; `--drop-source` then deletes the source table (§5.8), and the same
//! command run on `T2` with `--to` the source's layout, `--target-table T1` and `--switch`
//! rolls a switched migration back (§5.9). It shows its progress as `rowkit s3 migrate` does (the same bar and JSON
//! Lines) and prints one summary (text line, or JSON document) on stdout.

use clap::Args;
use rowkit_client::tracestore::TraceStore;
use rowkit_client::{Driver, POOL_WORKERS, block_on};
use rowkit_codec::migration::{Gates, OptionsPolicy};
use rowkit_codec::tracestore::Layout;
use rowkit_statemachines::tracestore::migrate::TraceMigrateEvent;
use rowkit_statemachines::tracestore::migrate::run::{
    TraceMigrateEnd, TraceMigrateOptions, TraceMigrateOutcome,
};
use rowkit_statemachines::tracestore::{TraceStoreError, TraceStoreEvent};

use crate::args::Context;
use crate::check::could_not_run;
use crate::error::CliError;
use crate::output::Output;
use rowkit_client::migration_json::{MIGRATE_TIMEOUT_MICROS, TracePoints, trace_outcome_json};

use crate::s3_migrate::{Shown, owner, settle_us};

/// `rowkit gold migrate --to L --target-table T2 …`.
#[derive(Debug, Args)]
pub struct GoldMigrateArgs {
    /// The layout to migrate to: `digest-id` or `md5` (the other one of the table's).
    #[arg(long, value_name = "digest-id|md5")]
    pub to: String,
    /// The table to migrate into: an empty table of the `--to` layout
    /// (`rowkit gold setup --table T2 --layout L`).
    #[arg(long, value_name = "T2")]
    pub target_table: String,
    /// Let the run enter `switching`: the Gold writers are stopped.
    #[arg(long)]
    pub switch: bool,
    /// Let the run enter `cleaning` and delete the source's Gold rows: no Gold process uses
    /// the source table any more.
    #[arg(long)]
    pub finish: bool,
    /// Roll the migration back (before the switch): the target's rows are deleted. After
    /// the switch, roll back by migrating the target back: `rowkit gold --table T2 migrate
    /// --to <T1's layout> --target-table T1 --switch`.
    #[arg(long)]
    pub abort: bool,
    /// With --finish: once the clean-up is complete, delete the source table (an admin
    /// request), so that a Gold process still configured on it fails loudly.
    #[arg(long)]
    pub drop_source: bool,
    /// Options rows (md5 → digest-id): `refuse` (default: the run stops at the first) or
    /// `drop` (not copied, counted).
    #[arg(long, value_name = "refuse|drop", default_value = "refuse")]
    pub options: String,
    /// The settle time Δ waited before the switch, the clean-up and the rollback (e.g.
    /// `90s`; at least 85 s; default 90 s, or 85 s on an embedded or memory store).
    #[arg(long, value_name = "DURATION")]
    pub settle: Option<String>,
    /// Take over a run another migrator's lease holds.
    #[arg(long)]
    pub take_over: bool,
    /// Requests the migrator keeps in flight at once (1–256): fewer leave more of the store
    /// to the applications' writers, more copy faster.
    #[arg(long, value_name = "N", default_value_t = POOL_WORKERS as u16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub max_inflight: u16,
}

fn parse_to(text: &str) -> Result<Layout, CliError> {
    Layout::parse(text)
        .ok_or_else(|| CliError::usage(format!("--to {text:?}: expected digest-id or md5")))
}

fn parse_options(text: &str) -> Result<OptionsPolicy, CliError> {
    match text {
        "refuse" => Ok(OptionsPolicy::Refuse),
        "drop" => Ok(OptionsPolicy::Drop),
        other => Err(CliError::usage(format!(
            "--options {other:?}: expected refuse or drop"
        ))),
    }
}

fn outcome_text(
    source: &str,
    target: &str,
    to: Layout,
    o: &TraceMigrateOutcome,
    p: &TracePoints,
) -> String {
    let copied: u64 = o.passes.iter().map(|s| s.counters.copied).sum();
    let rows: u64 = o.passes.iter().map(|s| s.counters.rows_scanned).sum();
    let counts = format!(
        "{} passes, {rows} rows scanned, {copied} points copied, {} stragglers, {} conflicts",
        o.passes.len(),
        p.stragglers.len(),
        p.conflicts.len()
    );
    let mut text = match o.end {
        TraceMigrateEnd::Removed => {
            format!("table {source}: migration rolled back, {target} emptied ({counts})")
        }
        TraceMigrateEnd::Cleaned => format!(
            "table {source}: migrated to {target} ({}); {source} holds only the migration marker ({counts})",
            to.name()
        ),
        TraceMigrateEnd::InState(s) => {
            let next = match s.as_str() {
                "verifying" => "; stop the Gold writers, then run again with --switch",
                "switched" => {
                    "; restart Gold readers, then writers, on the target; then run again with --finish"
                }
                "cleaning" => {
                    "; conflicts or newer rows left in the source: resolve, then run again"
                }
                _ => "",
            };
            format!("table {source} -> {target}: {s} ({counts}){next}")
        }
    };
    for c in &p.conflicts {
        text.push_str(&format!("\nconflict: {c}"));
    }
    for f in &o.findings {
        text.push_str(&format!("\nfinding: {f}"));
    }
    text
}

/// Runs `rowkit gold migrate`: exit 0 when the run ended as asked, 1 when the check of the
/// target blocked the switch or the clean-up stopped (conflicts or newer rows left in the
/// source), 2 on bad usage or when it could not run.
pub fn run<D: Driver>(
    ctx: &Context,
    gold: &TraceStore<D>,
    store: &str,
    pid: u64,
    args: &GoldMigrateArgs,
    out: &Output,
) -> Result<(), CliError> {
    let to = parse_to(&args.to)?;
    if to == gold.layout() {
        return Err(CliError::usage(format!(
            "--to {}: the table is {} already; migrate it into a table of the other layout",
            to.name(),
            to.name()
        )));
    }
    if args.drop_source && (!args.finish || args.abort) {
        return Err(CliError::usage(
            "--drop-source deletes the source table after a complete clean-up: it needs \
             --finish and no --abort",
        ));
    }
    let options = TraceMigrateOptions {
        gates: Gates {
            switch: args.switch,
            finish: args.finish,
        },
        abort: args.abort,
        options: parse_options(&args.options)?,
        settle_us: settle_us(args.settle.as_deref(), store)?,
        take_over: args.take_over,
        owner: owner(pid),
    };
    let timeout = MIGRATE_TIMEOUT_MICROS.max(ctx.retry.operation_timeout);
    let mut shown = Shown::new(out.is_json());
    let mut points = TracePoints::default();
    let target = args.target_table.as_str();
    let result = block_on(gold.migrate(target, options, timeout, |e| {
        let TraceStoreEvent::Migrate(e) = e else {
            return;
        };
        if let TraceMigrateEvent::Progress(p) = &e {
            shown.show(p);
        }
        points.record(&e);
    }));
    shown.finish();
    let outcome = match result {
        Ok(o) => o,
        // The target's check found what the source does not have: blocked, exit 1.
        Err(e @ TraceStoreError::MigrationBlocked { .. }) => return Err(CliError::from(e)),
        Err(e) => return Err(could_not_run(CliError::from(e))),
    };
    let source = gold.table();
    // §5.8: only a complete clean-up lets the source go.
    let dropped = args.drop_source && outcome.end == TraceMigrateEnd::Cleaned;
    if dropped {
        block_on(gold.drop_source()).map_err(|e| could_not_run(CliError::from(e)))?;
    }
    if out.is_json() {
        let mut doc = trace_outcome_json(source, target, to, args.abort, &outcome, &points);
        doc["source_dropped"] = dropped.into();
        outln!("{doc}");
    } else {
        let mut text = outcome_text(source, target, to, &outcome, &points);
        if dropped {
            text.push_str(&format!("\ntable {source} deleted"));
        }
        outln!("{text}");
    }
    if outcome.end == TraceMigrateEnd::InState(rowkit_codec::migration::MigrationState::Cleaning) {
        return Err(CliError::Exit(1));
    }
    Ok(())
}
