//! Command-line grammar (clap) and the context every command runs in.

use std::ffi::OsString;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use rowkit_client::PoolDriver;
use rowkit_codec::model::Timestamp;
use rowkit_statemachines::RetryPolicy;
use rowkit_store::Store;
use rowkit_store::driver::{Clock, ManualClock, SystemClock};

use crate::error::CliError;
use crate::store_location::{StoreLocation, StoreOnFirstUse};

/// rowkit: the row layouts of real Bigtable-backed systems, on an embedded store, Cloud
/// Bigtable, or in memory.
#[derive(Debug, Parser)]
#[command(name = "rowkit", version, about)]
pub struct Cli {
    /// Options shared by every command.
    #[command(flatten)]
    pub global: GlobalArgs,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The grammar the line is parsed with: [`Cli`]'s, plus, at the top level, a hidden copy of
    /// each command group's options (`--store`, `--pid`, `--layout`, …; clap's `global = true`
    /// arguments in every group), so that they also go before the group (`rowkit --pid 4242
    /// s3 put …`, `rowkit --store X s3 list`) as they go after it and after the operation's
    /// own arguments. The copies are not global themselves (a group without the option must
    /// not take it, and an operation's argument of the same name, `admin dump TABLE`, must not
    /// be taken for it), have no default and no environment variable (the group's own option
    /// supplies those); clap hands a value given before the group to the group's global
    /// option of the same id. Help pages, completions and the man page come from
    /// [`Cli`]'s grammar, where each group lists only its own options.
    pub fn grammar() -> clap::Command {
        let mut cli = Cli::command();
        let mut copies: Vec<clap::Arg> = Vec::new();
        for group in cli.get_subcommands() {
            for arg in group.get_arguments().filter(|a| a.is_global_set()) {
                let known = cli
                    .get_arguments()
                    .chain(&copies)
                    .any(|a| a.get_id() == arg.get_id());
                if !known {
                    copies.push(
                        arg.clone()
                            .global(false)
                            .hide(true)
                            .default_value(None)
                            .env(None),
                    );
                }
            }
        }
        for arg in copies {
            cli = cli.arg(arg);
        }
        cli
    }

    /// Parses the command line with options allowed anywhere on it (see [`Cli::grammar`]).
    /// A group's option written before a group that does not have it is a usage error, as it
    /// is after that group.
    pub fn try_parse_anywhere(
        argv: impl IntoIterator<Item = OsString>,
    ) -> Result<Cli, clap::Error> {
        let mut grammar = Cli::grammar();
        let matches = grammar.try_get_matches_from_mut(argv)?;
        if let Some((group_name, _)) = matches.subcommand() {
            let own = Cli::command();
            let group = own.find_subcommand(group_name);
            let misplaced = grammar.get_arguments().find(|arg| {
                arg.is_hide_set()
                    && matches.value_source(arg.get_id().as_str())
                        == Some(clap::parser::ValueSource::CommandLine)
                    && !group.is_some_and(|g| g.get_arguments().any(|a| a.get_id() == arg.get_id()))
            });
            if let Some(arg) = misplaced {
                let name = arg.get_long().unwrap_or(arg.get_id().as_str());
                return Err(grammar.error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!("--{name} does not apply to `rowkit {group_name}`"),
                ));
            }
        }
        Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut grammar))
    }
}

/// Options shared by every command.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Print one JSON document instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Say less on stderr: no progress, no informational lines (errors and warnings stay).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more on stderr: the store, read-only or not, the clock, and the time taken; error
    /// ids beside their messages.
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

/// The options of every command group that works on a store (all but `key`): where the
/// store is, and the clock, seed and deadline its machines run with.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Where the tables live: `memory:`, `embedded:PATH`, or `bigtable://PROJECT/INSTANCE[?emulator=HOST:PORT|?endpoint=https://HOST:PORT[&ca=FILE]]`; `http://HOST:PORT` (a running `rowkit serve`) for `admin backup`.
    #[arg(
        long,
        global = true,
        env = "ROWKIT_STORE",
        default_value = "embedded:./rowkit.redb"
    )]
    pub store: String,
    /// Fix the clock: microseconds since the epoch, or RFC 3339 (`2024-01-02T03:04:05Z`), from
    /// the epoch to the end of year 9999.
    #[arg(long, global = true, value_name = "TIME")]
    pub now: Option<String>,
    /// Seed for every random choice (retry jitter, generated versions).
    #[arg(long, global = true, default_value_t = 0)]
    pub seed: u64,
    /// Give up retrying after this many seconds [default: 60; `graph` drop, add and remove:
    /// 3600, as BadWolf].
    #[arg(long, global = true, value_name = "SECS")]
    pub deadline: Option<u64>,
}

/// The command groups.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Tables: create, list, delete, garbage-collect, dump, back up.
    Admin(AdminArgs),
    /// BadWolf triple store: graphs, triples, lookups.
    Graph(crate::graph::GraphArgs),
    /// The Skia Gold trace store.
    Gold(crate::gold::GoldArgs),
    /// Object metadata (Scality Arsenal): buckets, versioned objects, listings.
    S3(crate::s3::S3Args),
    /// The Vanadium mount table (btmtd layout).
    Mt(crate::mt::MtArgs),
    /// Encode or decode row keys.
    Key(KeyArgs),
    /// Serve the Bigtable v2 JSON API and the browser tool over the store.
    Serve(crate::serve::ServeArgs),
    /// Check every schema table of the store (graph, gold, s3, and the mount table's fsck).
    /// Exit 0 when clean, 1 when problems are left, 2 when it could not run (bad usage, a store
    /// error, a store another process holds, the deadline).
    Check(crate::check::CheckArgs),
    /// Print a shell completion script for SHELL to stdout (e.g. `rowkit completions bash >
    /// ~/.local/share/bash-completion/completions/rowkit`).
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout (e.g. `rowkit man | man -l -`).
    Man,
}

/// `rowkit key …`: pure, no store.
#[derive(Debug, Args)]
pub struct KeyArgs {
    /// The store options, accepted so that a line written for every command still runs, and
    /// ignored (hidden from help: they do not apply).
    #[command(flatten)]
    pub ignored: IgnoredStoreArgs,
    /// The operation.
    #[command(subcommand)]
    pub command: crate::key::KeyCommand,
}

/// [`StoreArgs`] as a group without a store takes them: hidden, unused.
#[derive(Debug, Args)]
pub struct IgnoredStoreArgs {
    #[arg(long, global = true, hide = true)]
    store: Option<String>,
    #[arg(long, global = true, hide = true)]
    now: Option<String>,
    #[arg(long, global = true, hide = true)]
    seed: Option<u64>,
    #[arg(long, global = true, hide = true)]
    deadline: Option<u64>,
}

/// `rowkit admin …`.
#[derive(Debug, Args)]
pub struct AdminArgs {
    /// The store and its clock.
    #[command(flatten)]
    pub store: StoreArgs,
    /// The operation.
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// `rowkit admin …` operations.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create a table with column families.
    CreateTable {
        /// Table id.
        name: String,
        /// A family, optionally with a GC policy: `F`, `F:maxversions=N`, `F:maxage=30d`,
        /// or both separated by `,` (a cell goes when either rule says so).
        #[arg(long = "family", value_name = "F[:POLICY]", required = true)]
        families: Vec<String>,
        /// A split point (repeatable; escaped key text or `hex:…`): CreateTable's
        /// `initial_splits`, among the keys SampleRowKeys reports.
        #[arg(long = "split", value_name = "KEY")]
        splits: Vec<String>,
    },
    /// List the tables of the store.
    ListTables,
    /// Delete a table and all its rows.
    DeleteTable {
        /// Table id.
        name: String,
    },
    /// Write cells to one row (like `cbt set`), atomically.
    Set {
        /// Table id.
        table: String,
        /// Row key (escaped key text or `hex:…`).
        row: String,
        /// Cells as `FAMILY:QUALIFIER=VALUE` (qualifier and value in escaped key text).
        #[arg(required = true, value_name = "FAMILY:QUALIFIER=VALUE")]
        cells: Vec<String>,
        /// Cell timestamp in microseconds (a multiple of 1000); default: the store's time.
        #[arg(long, value_name = "US", allow_negative_numbers = true)]
        timestamp: Option<i64>,
    },
    /// Remove the cells beyond each family's GC policy (maxversions, maxage at the store's
    /// time or --now) and print how many went per table. On Bigtable its server collects by
    /// itself: nothing is removed here.
    Gc {
        /// Tables to collect (default: every table of the store).
        tables: Vec<String>,
    },
    /// Write a consistent copy of the whole store (every table, schema, split point and cell,
    /// from one read snapshot, while writers go on) to FILE, a redb store file that
    /// `--store embedded:FILE` opens: restore by opening it or moving it into place. Written
    /// to a temporary file beside FILE, synced, then renamed. With `--store http://ADDR` a
    /// running `rowkit serve` writes it, and FILE (absolute) is on the server's machine;
    /// ROWKIT_GATEWAY_TOKEN holds its token.
    Backup {
        /// Where the backup goes.
        file: std::path::PathBuf,
        /// Replace FILE if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Print every cell of a table: row, family, qualifier, timestamp, value.
    Dump {
        /// Table id.
        table: String,
        /// Only rows whose key starts with this (escaped key text or `hex:…`).
        #[arg(long)]
        prefix: Option<String>,
    },
}

impl Command {
    /// Whether the command only reads: an embedded store is then opened read-only, so it
    /// never creates, grows or changes a file (the mount table's reads are not: a resolve or
    /// glob collects expired servers, as btmtd's do).
    /// The store options of the command's group (`None` for `key`, which needs no store).
    pub fn store_args(&self) -> Option<&StoreArgs> {
        match self {
            Command::Admin(args) => Some(&args.store),
            Command::Graph(args) => Some(&args.store),
            Command::Gold(args) => Some(&args.store),
            Command::S3(args) => Some(&args.store),
            Command::Mt(args) => Some(&args.store),
            Command::Serve(args) => Some(&args.store),
            Command::Check(args) => Some(&args.store),
            Command::Key(_) | Command::Completions { .. } | Command::Man => None,
        }
    }

    /// Whether the command is a check (`check`, `graph check`, `gold check`, `s3 check`, `mt
    /// fsck`): its exit 1 means findings left (`spec/check.md` §1.5), so a check that could not
    /// run exits 2 ([`crate::check::could_not_run`]).
    pub fn is_check(&self) -> bool {
        match self {
            Command::Check(_) => true,
            Command::Graph(args) => {
                matches!(args.command, crate::graph::GraphCommand::Check { .. })
            }
            Command::Gold(args) => matches!(args.command, crate::gold::GoldCommand::Check { .. }),
            Command::S3(args) => matches!(args.command, crate::s3::S3Command::Check { .. }),
            Command::Mt(args) => matches!(args.command, crate::mt::MtCommand::Fsck { .. }),
            Command::Admin(_)
            | Command::Key(_)
            | Command::Serve(_)
            | Command::Completions { .. }
            | Command::Man => false,
        }
    }

    pub fn only_reads(&self) -> bool {
        match self {
            Command::Admin(args) => matches!(
                args.command,
                AdminCommand::ListTables | AdminCommand::Dump { .. } | AdminCommand::Backup { .. }
            ),
            Command::Graph(args) => args.command.only_reads(),
            Command::Gold(args) => args.command.only_reads(),
            Command::S3(args) => args.command.only_reads(),
            Command::Check(args) => !args.flags.fix,
            Command::Mt(_) | Command::Serve(_) => false,
            Command::Key(_) | Command::Completions { .. } | Command::Man => true,
        }
    }
}

/// When and how a command's store is opened.
#[derive(Clone, Copy, Debug)]
pub enum Opening {
    /// Before the command starts (a server: a store that cannot open fails at once).
    Now,
    /// At the command's first request, after it checked its input; read-only for commands
    /// that only read.
    OnFirstUse {
        /// Whether the command only reads.
        read_only: bool,
    },
}

/// Everything a command needs from the global options, resolved once.
pub struct Context {
    /// The opened store.
    pub store: Box<dyn Store>,
    /// The clock machines are driven by.
    pub clock: Box<dyn Clock + Send + Sync>,
    /// Seed for the machines.
    pub seed: u64,
    /// Retry policy with the operation deadline (`--deadline`, else 60 s).
    pub retry: RetryPolicy,
    /// The `--deadline` given, in µs (`None`: the default of each operation; the triple
    /// store's long ones keep their hour).
    pub deadline: Option<i64>,
}

impl Context {
    /// The facades' options: the seed, and the `--deadline` given (`None`: each operation's
    /// own default).
    pub fn call_options(&self) -> rowkit_client::CallOptions {
        rowkit_client::CallOptions {
            seed: self.seed,
            deadline_micros: self.deadline,
        }
    }

    /// Sets up the store (opened as `opening` says) and the clock from the store options.
    pub fn from_options(global: &StoreArgs, opening: Opening) -> Result<Context, CliError> {
        let clock: Box<dyn Clock + Send + Sync> = match &global.now {
            Some(text) => Box::new(ManualClock::new(crate::clock::parse_now(text)?)),
            None => Box::new(SystemClock),
        };
        let location = StoreLocation::parse(&global.store)?;
        let deadline = global
            .deadline
            .map(|secs| {
                i64::try_from(secs)
                    .ok()
                    .and_then(|s| s.checked_mul(1_000_000))
                    .ok_or_else(|| CliError::usage(format!("--deadline {secs} is too large")))
            })
            .transpose()?;
        let default = RetryPolicy::default();
        let retry = RetryPolicy {
            operation_timeout: deadline.unwrap_or(default.operation_timeout),
            ..default
        };
        // Non-negative: from u64 seconds.
        let call_timeout = Duration::from_micros(retry.operation_timeout.unsigned_abs());
        let store: Box<dyn Store> = match opening {
            Opening::Now => location.open(false, call_timeout)?,
            Opening::OnFirstUse { read_only } => {
                Box::new(StoreOnFirstUse::new(location, read_only, call_timeout))
            }
        };
        Ok(Context {
            store,
            clock,
            seed: global.seed,
            retry,
            deadline,
        })
    }

    /// The current time on the command's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// Runs `body` with a driver that runs requests on `workers` threads, so that up to that
    /// many of an operation's outstanding requests reach the store at once: the migrators',
    /// whose syncs would otherwise wait one fsync (embedded) or one round trip (Bigtable)
    /// each (`--max-inflight`, default [`rowkit_client::POOL_WORKERS`]).
    pub fn with_pool<R>(&self, workers: usize, body: impl FnOnce(&Pool<'_>) -> R) -> R {
        PoolDriver::scope(&*self.store, &*self.clock, workers, body)
    }
}

/// The driver of [`Context::with_pool`].
pub type Pool<'c> = PoolDriver<'c, dyn Store, dyn Clock + Send + Sync>;
