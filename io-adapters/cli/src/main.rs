//! `rowkit`: the command line over rowkit's stores and schemas.
//!
//! Exit codes: 0 ok, 1 the operation failed (not found, conflict, …), 2 bad usage or bad input;
//! every check: 0 clean, 1 findings left, 2 it could not run (`check::could_not_run`).
//! Errors are one line on stderr; with `--json` also `{"error":{"id","message"}}` on stdout.
#![forbid(unsafe_code)]

// First: the other modules print with its `outln!`.
#[macro_use]
mod output;

mod admin;
mod args;
mod check;
mod clock;
mod error;
mod gateway_store;
mod gold;
mod gold_migrate;
mod graph;
mod help_docs;
mod input;
mod key;
mod mt;
mod s3;
mod s3_migrate;
mod serve;
mod store_location;

use std::process::ExitCode;

use crate::args::{Cli, Command, Opening};
use crate::error::CliError;
use crate::output::{Output, Verbosity};

fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let json = argv
        .iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--json");
    let cli = match Cli::try_parse_anywhere(argv) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // Help and version: stdout, exit 0 (a closed pipe is no failure).
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // One line, as every other failure (clap's own render is several).
            let usage = CliError::usage(clap_message(&e));
            Output::new(json).error(&usage);
            return ExitCode::from(usage.exit_code());
        }
    };
    output::set_verbosity(if cli.global.quiet {
        Verbosity::Quiet
    } else if cli.global.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    });
    let out = Output::new(cli.global.json);
    let started = std::time::Instant::now();
    let result = run(&cli, &out);
    output::detail(format_args!(
        "took {:.3} s",
        started.elapsed().as_secs_f64()
    ));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            out.error(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(cli: &Cli, out: &Output) -> Result<(), CliError> {
    // Key commands are pure: they need no store (and must not create one).
    if let Command::Key(args) = &cli.command {
        return key::run(&args.command, out);
    }
    // Generated from the grammar alone: no store either.
    match &cli.command {
        Command::Completions { shell } => return help_docs::completions(*shell),
        Command::Man => return help_docs::man_page(),
        _ => {}
    }
    // The server owns the store for as long as it runs, opened before it listens.
    if let Command::Serve(args) = &cli.command {
        let ctx = args::Context::from_options(&args.store, Opening::Now)?;
        return serve::run(ctx, args, out);
    }
    let Some(store) = cli.command.store_args() else {
        return Err(CliError::usage("this command takes no store"));
    };
    let read_only = cli.command.only_reads();
    let opening = Opening::OnFirstUse { read_only };
    let ctx = args::Context::from_options(store, opening)?;
    output::detail(format_args!(
        "store {} ({}), clock {} ({})",
        store.store,
        if read_only { "read-only" } else { "read-write" },
        clock::format_micros(ctx.now().0),
        if store.now.is_some() {
            "--now"
        } else {
            "system"
        }
    ));
    let result = match &cli.command {
        Command::Admin(args) => admin::run(&ctx, &args.command, out),
        Command::Graph(args) => graph::run(&ctx, args, out),
        Command::Gold(args) => gold::run(&ctx, args, out),
        Command::S3(cmd) => s3::run(&ctx, cmd, out),
        Command::Mt(args) => mt::run(&ctx, args, out),
        Command::Key(args) => key::run(&args.command, out),
        Command::Completions { shell } => help_docs::completions(*shell),
        Command::Man => help_docs::man_page(),
        Command::Serve(args) => return serve::run(ctx, args, out),
        Command::Check(args) => check::run_all(&ctx, args, out),
    };
    // A store that could not be opened (a file another process holds) is what failed,
    // however the command's schema words it (object metadata's errors cannot say UNAVAILABLE,
    // and its machine was cancelled): one message and exit code for every command.
    let result = result.map_err(|e| match ctx.store.unusable() {
        Some(open) => CliError::Store(open),
        None => not_set_up(&cli.command, e),
    });
    if cli.command.is_check() {
        result.map_err(check::could_not_run)
    } else {
        result
    }
}

/// A schema command's error saying its table does not exist, as the hint to set it up: `no
/// trace store here (table "gold" does not exist): `rowkit gold setup` creates its tables`
/// (id `not_set_up`). Other errors, and other commands', unchanged.
fn not_set_up(command: &Command, e: CliError) -> CliError {
    use rowkit_client::not_set_up::{missing_table, not_set_up_message};
    let (what, setup) = match command {
        Command::Gold(_) => ("trace store", "rowkit gold setup"),
        Command::Mt(_) => ("mount table", "rowkit mt setup"),
        Command::S3(_) => ("buckets", "rowkit s3 setup"),
        Command::Graph(_) => ("triple store", "rowkit graph setup"),
        _ => return e,
    };
    let message = e.message();
    match missing_table(&message) {
        Some(table) => CliError::Schema {
            id: "not_set_up".into(),
            message: not_set_up_message(what, table, &format!("`{setup}` creates its tables")),
            exit: 1,
        },
        None => e,
    }
}

/// The first line of a clap error without its `error: ` prefix, and its tips.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    // Keep clap's suggestions ("tip: a similar argument exists: '--table'") on the line.
    for tip in lines.filter_map(|l| l.trim_start().strip_prefix("tip: ")) {
        line.push_str("; ");
        line.push_str(tip);
    }
    line
}
