//! `rowkit gold …` and the gold part of `rowkit key …` (`spec/tracestore.md` 19): the Skia
//! Gold trace store over the sync [`TraceStore`] facade.

use crate::check::{CheckOutput, check_error, check_timeout};
use clap::{Args, Subcommand};
use rowkit_client::tracestore::{TraceStore, setup_table};
use rowkit_client::{Driver, SyncDriver, block_on};
use rowkit_codec::escape::escape;
use rowkit_codec::explain;
use rowkit_codec::model::Timestamp;
use rowkit_codec::tracestore::keys::{
    digest_id_trace_qualifier, md5_trace_qualifier, ops_row_name, repo_index_position,
};
use rowkit_codec::tracestore::{CodecError, Layout, Params};
use rowkit_statemachines::check::CheckOptions;
use rowkit_statemachines::operation::OperationError;
use rowkit_statemachines::tracestore::{PutEntry, Tile, TraceStoreError};
use rowkit_store::Store;
use rowkit_store::driver::Clock;
use serde_json::{Map, Value, json};

use crate::args::Context;
use crate::error::CliError;
use crate::output::{Output, Progress, bytes_fields};

/// Most commits `gold traces` reads at once.
const MAX_TRACES_COMMITS: i64 = 12_800;

/// `rowkit gold …`.
#[derive(Debug, Args)]
pub struct GoldArgs {
    /// The store and its clock.
    #[command(flatten)]
    pub store: crate::args::StoreArgs,
    /// Table id.
    #[arg(long, global = true, default_value = "gold")]
    pub table: String,
    /// The layout, `md5` or `digest-id`: the one `setup` creates (default md5); other
    /// commands detect it from the table's families unless it is given.
    #[arg(long, global = true, value_name = "LAYOUT")]
    pub layout: Option<String>,
    /// The operation.
    #[command(subcommand)]
    pub command: GoldCommand,
}

/// The trace store operations.
#[derive(Debug, Subcommand)]
pub enum GoldCommand {
    /// Create the table in a layout (`--layout`, default md5).
    Setup,
    /// Check the table: row keys, shards, OPS rows, trace rows against their tile's OPS,
    /// trace and options cells, and (digest-id layout) ids against the digest map and the id
    /// counter. Exit 0 when clean, 1 when problems are found, 2 when it could not run. Nothing
    /// in a trace store is repairable, so `--fix` (accepted like every check's) changes nothing.
    Check {
        /// Repair what can be repaired (nothing, in a trace store).
        #[arg(long)]
        fix: bool,
    },
    /// Write digests at one commit.
    Put {
        /// Repo index of the commit.
        #[arg(long, allow_negative_numbers = true)]
        commit: i64,
        /// Commit time (µs or RFC 3339); needed with options.
        #[arg(long, value_name = "TIME")]
        commit_time: Option<String>,
        /// Cell timestamp (µs or RFC 3339); default: now.
        #[arg(long, value_name = "TIME")]
        ts: Option<String>,
        /// The trace's params `k=v,…`.
        #[arg(long, conflicts_with = "entries")]
        params: Option<String>,
        /// The digest: 32 hex characters, or empty for a missing point (anything else is refused).
        #[arg(long, conflicts_with = "entries")]
        digest: Option<String>,
        /// Options `k=v,…` (md5 layout only).
        #[arg(long, conflicts_with = "entries")]
        options: Option<String>,
        /// A file holding a JSON array of `{"params": {}, "options": {}, "digest": ""}` (`-`:
        /// stdin).
        #[arg(long, value_name = "FILE")]
        entries: Option<String>,
    },
    /// Read one tile (default: the newest).
    Tile {
        /// Tile index.
        index: Option<u32>,
        /// Read the `N` newest commits with data up to the end of the tile instead.
        #[arg(long, value_name = "N")]
        dense: Option<usize>,
    },
    /// Read the traces of a commit range.
    Traces {
        /// First repo index.
        #[arg(long, allow_negative_numbers = true)]
        from: i64,
        /// Last repo index.
        #[arg(long, allow_negative_numbers = true)]
        to: i64,
        /// Keep traces whose params hold every `k=v`.
        #[arg(long = "match", value_name = "k=v,…")]
        matches: Option<String>,
    },
    /// The newest tile.
    Newest,
    /// Migrate the table into a table of the other layout, beside the running Gold writers
    /// (docs/migration.md §5): copy, verify, and with --switch / --finish the switch and
    /// the clean-up (--drop-source then deletes the source table); --abort rolls back before
    /// the switch, and after it `gold --table T2 migrate --to <T1's layout> --target-table T1
    /// --switch` migrates back. Progress on stderr (a bar on a terminal, JSON Lines with
    /// --json), one summary on stdout. Exit 0 when the run ended as asked, 1 when the check of
    /// the target blocked the switch or the clean-up stopped on conflicts, 2 on bad usage or
    /// when it could not run.
    Migrate(crate::gold_migrate::GoldMigrateArgs),
    /// One Put per line of a JSON Lines file, in order; stops at the first failure.
    ///
    /// Each non-empty line is one of:
    ///   {"commit": N, "commit_time": TIME, "ts": TIME, "entries": [{"params": {..}, "options": {..}, "digest": "hex"}, ..]}
    ///   {"commit": N, "commit_time": TIME, "ts": TIME, "params": {..} or "k=v,..", "digest": "hex", "options": {..} or "k=v,.."}
    /// The second (one entry) takes the fields of `gold put`. `commit_time`, `ts` and `options`
    /// may be left out (`ts` then is the current time, as in `gold put`); TIME is integer µs or
    /// an RFC 3339 string; a digest other than 32 hex characters is stored as missing.
    /// A malformed line or a failed Put exits 1 with the line number in the message.
    /// On a terminal a progress bar is drawn on stderr (none when stderr is piped).
    #[command(verbatim_doc_comment)]
    Import {
        /// The JSON Lines file (`-`: stdin).
        file: String,
    },
}

impl GoldCommand {
    /// Whether the command only reads (the store is then opened read-only).
    pub fn only_reads(&self) -> bool {
        matches!(
            self,
            GoldCommand::Tile { .. }
                | GoldCommand::Traces { .. }
                | GoldCommand::Newest
                | GoldCommand::Check { .. }
        )
    }
}

/// `rowkit key encode gold …`.
#[derive(Debug, Subcommand)]
pub enum GoldKeyCommand {
    /// A trace row: row name, shard and both layouts' qualifiers.
    Trace {
        /// Repo index of the commit.
        #[arg(long, allow_negative_numbers = true)]
        commit: i64,
        /// The encoded trace id, verbatim (e.g. `,0=1,1=3,`).
        #[arg(long)]
        subkey: String,
    },
    /// A digest: its digest-map row and column, and its md5 cell.
    Digest {
        /// 32 hex characters.
        hex: String,
    },
}

/// `?` on a trace-store call: the one mapping of [`CliError::operation`].
impl From<TraceStoreError> for CliError {
    fn from(e: TraceStoreError) -> CliError {
        CliError::operation(e)
    }
}

/// `?` on a trace-store codec call: the operation error of the same name.
impl From<CodecError> for CliError {
    fn from(e: CodecError) -> CliError {
        CliError::operation(TraceStoreError::from(e))
    }
}

fn layout_arg(args: &GoldArgs) -> Result<Option<Layout>, CliError> {
    args.layout
        .as_deref()
        .map(|l| {
            Layout::parse(l)
                .ok_or_else(|| CliError::usage(format!("--layout {l}: md5 or digest-id")))
        })
        .transpose()
}

fn parse_pairs(text: &str, what: &str) -> Result<Params, CliError> {
    rowkit_codec::validate::param_pairs(text).map_err(|e| CliError::usage(format!("{what}: {e}")))
}

fn time_arg(text: &Option<String>) -> Result<Option<Timestamp>, CliError> {
    text.as_deref().map(crate::clock::parse_time).transpose()
}

/// The trace store facade the CLI runs on.
pub(crate) type Gold<'c> = TraceStore<SyncDriver<&'c dyn Store, &'c (dyn Clock + Send + Sync)>>;

fn open<'c>(ctx: &'c Context, args: &GoldArgs) -> Result<Gold<'c>, CliError> {
    open_on(ctx, args, SyncDriver::new(&*ctx.store, &*ctx.clock))
}

/// [`open`] over `driver`.
fn open_on<D: Driver>(
    ctx: &Context,
    args: &GoldArgs,
    driver: D,
) -> Result<TraceStore<D>, CliError> {
    let gold = block_on(TraceStore::open(driver, &args.table, layout_arg(args)?))?;
    Ok(gold.with_options(ctx.call_options()))
}

/// Runs one `gold` command.
pub fn run(ctx: &Context, args: &GoldArgs, out: &Output) -> Result<(), CliError> {
    match &args.command {
        GoldCommand::Setup => {
            let layout = layout_arg(args)?.unwrap_or(Layout::Md5);
            block_on(setup_table(
                &SyncDriver::new(&*ctx.store, &*ctx.clock),
                &args.table,
                layout,
            ))?;
            let families: Vec<String> = layout.families().into_iter().map(|f| f.name).collect();
            if out.is_json() {
                outln!(
                    "{}",
                    json!({"table": args.table, "layout": layout.name(), "families": families})
                );
            } else {
                outln!(
                    "table {} set up in the {} layout",
                    args.table,
                    layout.name()
                );
            }
            Ok(())
        }
        GoldCommand::Put {
            commit,
            commit_time,
            ts,
            params,
            digest,
            options,
            entries,
        } => {
            let entries = match entries {
                Some(file) => read_entries(file)?,
                None => vec![PutEntry {
                    params: parse_pairs(params.as_deref().unwrap_or(""), "--params")?,
                    options: parse_pairs(options.as_deref().unwrap_or(""), "--options")?,
                    digest: digest.clone().unwrap_or_default(),
                }],
            };
            let ts = time_arg(ts)?.unwrap_or_else(|| ctx.now());
            let commit_time = time_arg(commit_time)?;
            // The commit's range is checked before the table is read for its layout.
            rowkit_codec::tracestore::keys::repo_index_position(*commit)?;
            // A digest Gold would store as missing is refused before the store is opened,
            // unless the spec's own error comes first: a digest-id table refuses options.
            let check_digest = || match digest {
                Some(d) => {
                    rowkit_codec::validate::digest(d).map_err(|e| CliError::usage(e.to_string()))
                }
                None => Ok(()),
            };
            let has_options = entries.iter().any(|e| !e.options.is_empty());
            if !has_options {
                check_digest()?;
            }
            let gold = open(ctx, args)?;
            if has_options && gold.layout() != Layout::DigestId {
                check_digest()?;
            }
            let rows = block_on(gold.put(*commit, commit_time, entries, ts))?;
            put_output(&gold, *commit, &rows, out)
        }
        GoldCommand::Tile { index, dense } => {
            let gold = open(ctx, args)?;
            let index = match index {
                Some(i) => Some(*i),
                None => block_on(gold.newest_tile())?,
            };
            let Some(index) = index else {
                let mut doc = tile_json(gold.layout(), &Tile::default());
                doc.insert("tile_index".into(), Value::Null);
                return print_tile(out, doc, &Tile::default());
            };
            let first = i64::from(index) * 256;
            let tile = match dense {
                Some(n) => block_on(gold.read_dense(first + 255, *n))?,
                None => block_on(gold.read_range(first, first + 255))?,
            };
            let mut doc = tile_json(gold.layout(), &tile);
            doc.insert("tile_index".into(), Value::from(index));
            print_tile(out, doc, &tile)
        }
        GoldCommand::Traces { from, to, matches } => {
            // Saturating: `--to` and `--from` are any i64 (the machine judges each index).
            if to.saturating_sub(*from) >= MAX_TRACES_COMMITS {
                return Err(CliError::usage(format!(
                    "at most {MAX_TRACES_COMMITS} commits at once"
                )));
            }
            let wanted = parse_pairs(matches.as_deref().unwrap_or(""), "--match")?;
            let gold = open(ctx, args)?;
            let mut tile = block_on(gold.read_range(*from, *to))?;
            tile.traces
                .retain(|_, t| wanted.iter().all(|(k, v)| t.params.get(k) == Some(v)));
            let doc = tile_json(gold.layout(), &tile);
            print_tile(out, doc, &tile)
        }
        GoldCommand::Check { fix } => {
            let gold = open(ctx, args)?;
            let options = CheckOptions {
                fix: *fix,
                ..CheckOptions::default()
            };
            let timeout = check_timeout(ctx);
            let mut output = CheckOutput::new(out, "gold");
            let summary =
                block_on(gold.check(options, timeout, |e| output.event(e))).map_err(check_error)?;
            output.finish(&summary)
        }
        GoldCommand::Migrate(m) => {
            let pid = u64::from(std::process::id());
            // Its copies run at once (`Context::with_pool`).
            ctx.with_pool(usize::from(m.max_inflight), |driver| {
                let gold = open_on(ctx, args, driver)?;
                crate::gold_migrate::run(ctx, &gold, &args.store.store, pid, m, out)
            })
        }
        GoldCommand::Newest => {
            let gold = open(ctx, args)?;
            let newest = block_on(gold.newest_tile())?;
            if out.is_json() {
                let mut m = Map::new();
                match newest {
                    Some(i) => {
                        let key = rowkit_codec::tracestore::keys::tile_key(i64::from(i));
                        m.insert("tile_index".into(), Value::from(i));
                        m.insert("tile_key".into(), Value::from(key));
                        m.insert("first_repo_index".into(), Value::from(u64::from(i) * 256));
                        m.insert(
                            "last_repo_index".into(),
                            Value::from(u64::from(i) * 256 + 255),
                        );
                        bytes_fields(&mut m, "row_key", &ops_row_name(key));
                    }
                    None => {
                        for f in [
                            "tile_index",
                            "tile_key",
                            "first_repo_index",
                            "last_repo_index",
                            "row_key",
                            "row_key_hex",
                        ] {
                            m.insert(f.into(), Value::Null);
                        }
                    }
                }
                outln!("{}", Value::Object(m));
            } else {
                match newest {
                    Some(i) => outln!("{i}"),
                    None => outln!("no tiles"),
                }
            }
            Ok(())
        }
        GoldCommand::Import { file } => import(ctx, args, file, out),
    }
}

fn read_entries(path: &str) -> Result<Vec<PutEntry>, CliError> {
    let path = std::path::Path::new(path);
    let file = crate::input::display_name(path);
    let text =
        crate::input::read_text(path).map_err(|e| CliError::usage(format!("{file}: {e}")))?;
    let value: Value =
        serde_json::from_str(&text).map_err(|e| CliError::usage(format!("{file}: {e}")))?;
    entries_of(&value).map_err(|e| CliError::usage(format!("{file}: {e}")))
}

fn map_of(v: &Value) -> Result<Params, String> {
    match v {
        Value::Null => Ok(Params::new()),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| {
                v.as_str()
                    .map(|s| (k.clone(), s.to_string()))
                    .ok_or_else(|| format!("{k}: not a string"))
            })
            .collect(),
        _ => Err("expected an object".into()),
    }
}

/// Params or options given as an object or, as on `gold put`'s command line, as `k=v,…`.
fn pairs_of(v: &Value, what: &str) -> Result<Params, String> {
    match v {
        Value::String(text) => parse_pairs(text, what).map_err(|e| e.message()),
        other => map_of(other).map_err(|e| format!("{what}: {e}")),
    }
}

/// One entry `{"params", "options"?, "digest"?}` (an absent digest is the missing digest).
fn entry_of(v: &Value) -> Result<PutEntry, String> {
    let digest = match &v["digest"] {
        Value::Null => String::new(),
        Value::String(d) => d.clone(),
        _ => return Err("digest: expected a string".into()),
    };
    Ok(PutEntry {
        params: pairs_of(&v["params"], "params")?,
        options: pairs_of(&v["options"], "options")?,
        digest,
    })
}

fn entries_of(v: &Value) -> Result<Vec<PutEntry>, String> {
    v.as_array()
        .ok_or("expected an array of entries")?
        .iter()
        .map(entry_of)
        .collect()
}

/// Prints where a Put wrote: its commit's position and the `rows` it wrote.
fn put_output(
    gold: &Gold<'_>,
    commit: i64,
    rows: &[Vec<u8>],
    out: &Output,
) -> Result<(), CliError> {
    let pos = repo_index_position(commit)?;
    let ops_row = ops_row_name(pos.tile_key);
    let layout = gold.layout();
    let qualifier = match layout {
        Layout::Md5 => md5_trace_qualifier(pos.offset),
        Layout::DigestId => digest_id_trace_qualifier(pos.offset),
    };
    if out.is_json() {
        let mut m = Map::new();
        m.insert("layout".into(), Value::from(layout.name()));
        m.insert("repo_index".into(), Value::from(commit));
        m.insert("tile_index".into(), Value::from(pos.tile_index));
        m.insert("tile_key".into(), Value::from(pos.tile_key));
        m.insert("offset".into(), Value::from(pos.offset));
        bytes_fields(&mut m, "qualifier", &qualifier);
        m.insert("ops_row".into(), key_json(&ops_row));
        m.insert(
            "rows".into(),
            Value::Array(rows.iter().map(|r| key_json(r)).collect()),
        );
        outln!("{}", Value::Object(m));
    } else {
        for r in rows {
            outln!("{}", escape(r));
        }
    }
    Ok(())
}

fn key_json(key: &[u8]) -> Value {
    let mut m = Map::new();
    bytes_fields(&mut m, "row_key", key);
    Value::Object(m)
}

fn tile_json(layout: Layout, tile: &Tile) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("layout".into(), Value::from(layout.name()));
    m.insert("commits".into(), json!(tile.commits));
    m.insert("paramset".into(), json!(tile.paramset));
    let traces: Vec<Value> = tile
        .traces
        .iter()
        .map(|(id, t)| json!({"id": id, "params": t.params, "options": t.options, "digests": t.digests}))
        .collect();
    m.insert("traces".into(), Value::Array(traces));
    m
}

fn print_tile(out: &Output, doc: Map<String, Value>, tile: &Tile) -> Result<(), CliError> {
    if out.is_json() {
        outln!("{}", Value::Object(doc));
    } else {
        for (id, t) in &tile.traces {
            let digests: Vec<&str> = t
                .digests
                .iter()
                .map(|d| if d.is_empty() { "-" } else { d.as_str() })
                .collect();
            outln!("{id} {}", digests.join(" "));
        }
    }
    Ok(())
}

/// One import line's Put: `(commit, commit_time, entries, ts)`.
type ImportPut = (i64, Option<Timestamp>, Vec<PutEntry>, Option<Timestamp>);

/// A TIME field of an import line: integer µs or RFC 3339 text (absent: `None`).
fn line_time(v: &Value, what: &str) -> Result<Option<Timestamp>, String> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => n
            .as_i64()
            .map(|us| Some(Timestamp(us)))
            .ok_or_else(|| format!("{what}: expected integer microseconds")),
        Value::String(text) => crate::clock::parse_time(text)
            .map(Some)
            .map_err(|_| format!("{what}: expected microseconds or RFC 3339, got {text:?}")),
        _ => Err(format!("{what}: expected microseconds or RFC 3339")),
    }
}

/// Parses one import line: the spec's `{"commit", "commit_time"?, "ts", "entries"}`, or one
/// entry with `gold put`'s fields `{"commit", "commit_time"?, "ts"?, "params", "digest",
/// "options"?}`.
fn import_line(line: &str) -> Result<ImportPut, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    if !v.is_object() {
        return Err("expected a JSON object".into());
    }
    let commit = v["commit"].as_i64().ok_or("commit: expected an integer")?;
    let entries = match (v.get("entries"), v.get("params")) {
        (Some(entries), None) => entries_of(entries)?,
        (None, Some(_)) => vec![entry_of(&v)?],
        (Some(_), Some(_)) => return Err("\"entries\" and \"params\" exclude each other".into()),
        (None, None) => return Err("expected \"entries\" or \"params\"".into()),
    };
    Ok((
        commit,
        line_time(&v["commit_time"], "commit_time")?,
        entries,
        line_time(&v["ts"], "ts")?,
    ))
}

fn import(ctx: &Context, args: &GoldArgs, path: &str, out: &Output) -> Result<(), CliError> {
    let path = std::path::Path::new(path);
    let file = crate::input::display_name(path);
    let text =
        crate::input::read_text(path).map_err(|e| CliError::usage(format!("{file}: {e}")))?;
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| (n + 1, l))
        .collect();
    // The spec's rule for import: any failure exits 1 and names the line. Every line is
    // parsed before the first Put, so a malformed file writes nothing.
    let failed = |line_no: usize, id: String, message: String| CliError::Schema {
        id,
        message: format!("{file}:{line_no}: {message}"),
        exit: 1,
    };
    let puts_to_do = lines
        .into_iter()
        .map(|(line_no, line)| {
            import_line(line)
                .map(|put| (line_no, put))
                .map_err(|e| failed(line_no, "bad_import_line".into(), e))
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    let gold = open(ctx, args)?;
    let mut progress = Progress::with_total("puts", puts_to_do.len() as u64);
    let (mut puts, mut total) = (0u64, 0u64);
    for (line_no, (commit, commit_time, entries, ts)) in puts_to_do {
        let count = entries.len() as u64;
        let ts = ts.unwrap_or_else(|| ctx.now());
        // (The bar, if any, is cleared when `progress` drops.)
        block_on(gold.put(commit, commit_time, entries, ts))
            .map_err(|e| failed(line_no, e.id().to_string(), e.to_string()))?;
        total += count;
        puts += 1;
        progress.tick();
    }
    progress.finish();
    if out.is_json() {
        outln!("{}", json!({"puts": puts, "entries": total}));
    } else {
        outln!("imported {puts} puts, {total} entries");
    }
    Ok(())
}

/// `rowkit key encode gold …` (the fields come from `rowkit_codec::explain`).
pub fn encode_key(cmd: &GoldKeyCommand, out: &Output) -> Result<(), CliError> {
    let doc = match cmd {
        GoldKeyCommand::Trace { commit, subkey } => explain::encode_gold_trace(*commit, subkey)
            .map_err(|e| CliError::Schema {
                id: "bad_repo_index".into(),
                message: e.to_string(),
                exit: 2,
            })?,
        GoldKeyCommand::Digest { hex } => {
            explain::encode_gold_digest(hex).map_err(|e| CliError::Schema {
                id: "bad_digest".into(),
                message: e.to_string(),
                exit: 2,
            })?
        }
    };
    if out.is_json() {
        outln!("{}", Value::Object(doc));
    } else {
        outln!("{}", doc["row_key"].as_str().unwrap_or_default());
    }
    Ok(())
}

/// `rowkit key decode` for a gold key; `None` when the key is not one.
pub fn decode_key(key: &[u8]) -> Option<Map<String, Value>> {
    explain::decode_gold(key).ok()
}
