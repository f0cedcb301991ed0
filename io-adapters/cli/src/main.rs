//! `rowkit`: the command line over rowkit's stores and schemas.
//!
//! Exit codes: 0 ok, 1 the operation failed (not found, conflict, …), 2 bad usage or bad input.
//! Errors are one line on stderr; with `--json` also `{"error":{"id","message"}}` on stdout.
#![forbid(unsafe_code)]

// First: the other modules print with its `outln!`.
#[macro_use]
mod output;

mod admin;
mod args;
mod clock;
mod error;
mod gold;
mod graph;
mod key;
mod mt;
mod s3;
mod serve;
mod store_location;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::error::CliError;
use crate::output::Output;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help/version to stdout with exit 0 and usage errors to stderr.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let out = Output::new(cli.global.json);
    match run(&cli, &out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            out.error(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(cli: &Cli, out: &Output) -> Result<(), CliError> {
    // Key commands are pure: they need no store (and must not create one).
    if let Command::Key(cmd) = &cli.command {
        return key::run(cmd, out);
    }
    let ctx = args::Context::from_global(&cli.global)?;
    // The server owns the store for as long as it runs.
    if let Command::Serve(args) = &cli.command {
        return serve::run(ctx, args, out);
    }
    match &cli.command {
        Command::Admin(cmd) => admin::run(&ctx, cmd, out),
        Command::Graph { table, command } => graph::run(&ctx, table, command, out),
        Command::Gold(args) => gold::run(&ctx, args, out),
        Command::S3(cmd) => s3::run(&ctx, cmd, out),
        Command::Mt(cmd) => mt::run(&ctx, &cli.global, cmd, out),
        Command::Key(cmd) => key::run(cmd, out),
        Command::Serve(args) => serve::run(ctx, args, out),
    }
}
