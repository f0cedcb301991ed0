//! Command-line grammar (clap) and the context every command runs in.

use clap::{Args, Parser, Subcommand};
use rowkit_codec::model::Timestamp;
use rowkit_embedded::Store;
use rowkit_embedded::driver::{Clock, ManualClock, SystemClock};
use rowkit_statemachines::RetryPolicy;

use crate::error::CliError;
use crate::store_location::StoreLocation;

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

/// Options shared by every command.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Where the tables live: `memory:`, `embedded:PATH`, or `bigtable://PROJECT/INSTANCE[?emulator=HOST:PORT]`.
    #[arg(
        long,
        global = true,
        env = "ROWKIT_STORE",
        default_value = "embedded:./rowkit.redb"
    )]
    pub store: String,
    /// Print one JSON document instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Fix the clock: microseconds since the epoch, or RFC 3339 (`2024-01-02T03:04:05Z`).
    #[arg(long, global = true, value_name = "TIME")]
    pub now: Option<String>,
    /// Seed for every random choice (retry jitter, generated versions).
    #[arg(long, global = true, default_value_t = 0)]
    pub seed: u64,
    /// Node table of the mount table (`mt`); the counter table is `<table>-counters`.
    #[arg(long, global = true, default_value = "mounttable")]
    pub table: String,
    /// The caller's blessing names, comma-separated (`mt`); default: the server itself.
    #[arg(long = "as", global = true, value_name = "NAME[,NAME...]")]
    pub as_names: Option<String>,
    /// Give up retrying after this many seconds.
    #[arg(long, global = true, default_value_t = 60, value_name = "SECS")]
    pub deadline: u64,
}

/// The command groups.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Tables: create, list, delete, dump.
    #[command(subcommand)]
    Admin(AdminCommand),
    /// BadWolf triple store: graphs, triples, lookups.
    Graph {
        /// Table id.
        #[arg(long, default_value = "badwolf")]
        table: String,
        /// The graph command.
        #[command(subcommand)]
        command: crate::graph::GraphCommand,
    },
    /// The Skia Gold trace store.
    Gold(crate::gold::GoldArgs),
    /// Object metadata (Scality Arsenal): buckets, versioned objects, listings.
    S3(crate::s3::S3Args),
    /// The Vanadium mount table (btmtd layout).
    #[command(subcommand)]
    Mt(crate::mt::MtCommand),
    /// Encode or decode row keys.
    #[command(subcommand)]
    Key(crate::key::KeyCommand),
    /// Serve the Bigtable v2 JSON API and the browser tool over the store.
    Serve(crate::serve::ServeArgs),
}

/// `rowkit admin …`.
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
    /// Print every cell of a table: row, family, qualifier, timestamp, value.
    Dump {
        /// Table id.
        table: String,
        /// Only rows whose key starts with this (escaped key text or `hex:…`).
        #[arg(long)]
        prefix: Option<String>,
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
    /// Retry policy with the operation deadline.
    pub retry: RetryPolicy,
}

impl Context {
    /// Opens the store and sets up the clock from the global options.
    pub fn from_global(global: &GlobalArgs) -> Result<Context, CliError> {
        let clock: Box<dyn Clock + Send + Sync> = match &global.now {
            Some(text) => Box::new(ManualClock::new(crate::clock::parse_time(text)?)),
            None => Box::new(SystemClock),
        };
        let store = StoreLocation::parse(&global.store)?.open()?;
        let deadline = i64::try_from(global.deadline)
            .ok()
            .and_then(|s| s.checked_mul(1_000_000))
            .ok_or_else(|| {
                CliError::usage(format!("--deadline {} is too large", global.deadline))
            })?;
        let retry = RetryPolicy {
            operation_timeout: deadline,
            ..RetryPolicy::default()
        };
        Ok(Context {
            store,
            clock,
            seed: global.seed,
            retry,
        })
    }

    /// The current time on the command's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }
}
