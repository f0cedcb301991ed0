//! `rowkit graph …` and the `graph` schema of `rowkit key encode/decode`: BadWolf's triple
//! store (`spec/triples.md` §11) through `rowkit_client::triples` over the sync driver.

use std::io::BufRead;

use clap::{Args, Subcommand};
use rowkit_client::triples::TripleStore;
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::explain;
use rowkit_codec::triples::keys;
use rowkit_codec::triples::{Anchor, Triple};
use rowkit_statemachines::triples::{
    FilterField, FilterOperation, FilterOptions, Found, LookupMethod, LookupOptions,
};
use serde_json::{Map, Value, json};

use crate::args::Context;
use crate::check::{CheckFlags, CheckOutput, check_error, check_timeout};
use crate::error::CliError;
use crate::output::{Output, Progress, bytes_fields};

/// `rowkit graph [--table T] …`.
#[derive(Debug, Args)]
pub struct GraphArgs {
    /// The store and its clock.
    #[command(flatten)]
    pub store: crate::args::StoreArgs,
    /// Table id of the triple store.
    #[arg(long, global = true, default_value = "badwolf")]
    pub table: String,
    /// The graph command.
    #[command(subcommand)]
    pub command: GraphCommand,
}

/// `rowkit graph …`.
#[derive(Debug, Subcommand)]
pub enum GraphCommand {
    /// Create the table and its families (`graph`, `immutable_triple`, `temporal_triple`).
    Setup,
    /// Create a graph.
    Create {
        /// Graph id.
        graph: String,
    },
    /// Delete a graph and every row of its indices.
    Drop {
        /// Graph id.
        graph: String,
    },
    /// List the graphs.
    List,
    /// Add triples (arguments, or one per non-empty stdin line when none or `-` is given).
    Add {
        /// Graph id.
        graph: String,
        /// Triples (`S P O`, tabs or spaces between parts).
        triples: Vec<String>,
    },
    /// Remove exactly these triples (arguments, or one per non-empty stdin line when none or
    /// `-` is given).
    Remove {
        /// Graph id.
        graph: String,
        /// Triples (`S P O`, tabs or spaces between parts).
        triples: Vec<String>,
    },
    /// Run a lookup: `objects S P`, `subjects P O`, `predicates-for-subject S`,
    /// `predicates-for-object O`, `predicates-for-subject-and-object S O`,
    /// `triples-for-subject S`, `triples-for-predicate P`, `triples-for-object O`,
    /// `triples-for-subject-and-predicate S P`, `triples-for-predicate-and-object P O`,
    /// `triples`, or `exist TRIPLE`.
    Query {
        /// Graph id.
        graph: String,
        /// The method.
        method: String,
        /// Its arguments.
        args: Vec<String>,
        /// Page size (0 = unlimited).
        #[arg(long, default_value_t = 0)]
        max: i64,
        /// Page index.
        #[arg(long, default_value_t = 0)]
        offset: i64,
        /// Inclusive lower anchor (RFC 3339).
        #[arg(long)]
        lower: Option<String>,
        /// Inclusive upper anchor (RFC 3339).
        #[arg(long)]
        upper: Option<String>,
        /// Only the latest anchor per predicate.
        #[arg(long)]
        latest: bool,
        /// `OP:FIELD` with OP latest|isImmutable|isTemporal, FIELD subject|predicate|object.
        #[arg(long)]
        filter: Option<String>,
    },
    /// Check the table (or one graph) for what failed writes leave behind: undecodable keys
    /// and cells, cells in the wrong row or at the wrong timestamp, triples missing from some
    /// of their four index rows, graphs without their graph row. `--fix` writes missing
    /// index cells and graph rows. Exit 0 when clean, 1 when problems are left, 2 when it could
    /// not run.
    Check {
        /// Only this graph (its graph row and its four indices).
        graph: Option<String>,
        /// `--fix`, `--grace`.
        #[command(flatten)]
        flags: CheckFlags,
    },
}

impl GraphCommand {
    /// Whether the command only reads (the store is then opened read-only).
    pub fn only_reads(&self) -> bool {
        matches!(
            self,
            GraphCommand::List
                | GraphCommand::Query { .. }
                | GraphCommand::Check {
                    flags: CheckFlags { fix: false, .. },
                    ..
                }
        )
    }
}

fn bad(e: impl std::fmt::Display) -> CliError {
    CliError::usage(e.to_string())
}

fn parse_triple(text: &str) -> Result<Triple, CliError> {
    rowkit_codec::validate::triple(text).map_err(bad)
}

fn read_triples(args: &[String]) -> Result<Vec<Triple>, CliError> {
    // `-` alone reads stdin, as no arguments do (a triple is never `-`).
    if !args.is_empty() && args != [crate::input::STDIN] {
        return args.iter().map(|t| parse_triple(t)).collect();
    }
    let mut progress = Progress::new("triples");
    let mut out = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(bad)?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(parse_triple(&line)?);
        progress.tick();
    }
    progress.finish();
    Ok(out)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn found_json(f: &Found) -> Value {
    serde_json::to_value(f.to_text()).unwrap_or(Value::Null)
}

fn method_of(name: &str, args: &[String]) -> Result<LookupMethod, CliError> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    LookupMethod::parse(name, &args).map_err(bad)
}

fn parse_filter(text: &str) -> Result<FilterOptions, CliError> {
    let (op, field) = text
        .split_once(':')
        .ok_or_else(|| CliError::usage("--filter takes OP:FIELD"))?;
    let operation = match op {
        "latest" => FilterOperation::LATEST,
        "isImmutable" => FilterOperation::IS_IMMUTABLE,
        "isTemporal" => FilterOperation::IS_TEMPORAL,
        _ => return Err(CliError::usage(format!("unknown filter operation {op:?}"))),
    };
    let field = match field {
        "subject" => FilterField::SUBJECT,
        "predicate" => FilterField::PREDICATE,
        "object" => FilterField::OBJECT,
        _ => return Err(CliError::usage(format!("unknown filter field {field:?}"))),
    };
    Ok(FilterOptions {
        operation,
        field,
        value: None,
    })
}

fn anchor(text: &Option<String>) -> Result<Option<Anchor>, CliError> {
    text.as_ref()
        .map(|t| Anchor::parse(t.as_bytes()).map_err(bad))
        .transpose()
}

/// Runs one graph command on table `table`.
pub fn run(ctx: &Context, args: &GraphArgs, out: &Output) -> Result<(), CliError> {
    let (table, cmd) = (args.table.as_str(), &args.command);
    let ts = TripleStore::new(SyncDriver::new(ctx.store.as_ref(), ctx.clock.as_ref()))
        .with_table(table)
        .with_options(ctx.call_options());
    match cmd {
        GraphCommand::Check { graph, flags } => {
            let (options, timeout) = (flags.options(), check_timeout(ctx));
            let mut output = CheckOutput::new(out, "graph");
            let graph = graph.as_ref().map(String::as_bytes);
            let summary = block_on(ts.check(graph, options, timeout, |e| output.event(e)))
                .map_err(check_error)?;
            output.finish(&summary)?;
        }
        GraphCommand::Setup => {
            block_on(ts.setup())?;
            if out.is_json() {
                outln!("{}", json!({"table": table}));
            } else {
                outln!("table {table} ready");
            }
        }
        GraphCommand::Create { graph } => {
            block_on(ts.new_graph(graph.as_bytes())).map_err(CliError::operation)?;
            if out.is_json() {
                let mut m = Map::new();
                m.insert("graph".into(), json!(graph));
                bytes_fields(&mut m, "row_key", &keys::graph_row_key(graph.as_bytes()));
                outln!("{}", Value::Object(m));
            } else {
                outln!("created graph {graph}");
            }
        }
        GraphCommand::Drop { graph } => {
            block_on(ts.delete_graph(graph.as_bytes())).map_err(CliError::operation)?;
            if out.is_json() {
                outln!("{{}}");
            } else {
                outln!("dropped graph {graph}");
            }
        }
        GraphCommand::List => {
            let names = block_on(ts.graph_names()).map_err(CliError::operation)?;
            if out.is_json() {
                let list: Vec<String> = names.iter().map(|n| text(n)).collect();
                outln!("{}", json!(list));
            } else {
                for n in names {
                    outln!("{}", text(&n));
                }
            }
        }
        GraphCommand::Add { graph, triples } | GraphCommand::Remove { graph, triples } => {
            let list = read_triples(triples)?;
            let g = block_on(ts.graph(graph.as_bytes())).map_err(CliError::operation)?;
            let n = list.len();
            let (verb, key) = if matches!(cmd, GraphCommand::Add { .. }) {
                block_on(g.add_triples(list)).map_err(CliError::operation)?;
                ("added", "added")
            } else {
                block_on(g.remove_triples(list)).map_err(CliError::operation)?;
                ("removed", "removed")
            };
            if out.is_json() {
                outln!("{}", json!({ key: n }));
            } else {
                outln!("{verb} {n} triple{}", if n == 1 { "" } else { "s" });
            }
        }
        GraphCommand::Query {
            graph,
            method,
            args,
            max,
            offset,
            lower,
            upper,
            latest,
            filter,
        } => {
            // Every argument is checked before the graph is read.
            let query = match (method.as_str(), args.as_slice()) {
                ("exist", [t]) => Query::Exist(parse_triple(t)?),
                ("exist", _) => return Err(CliError::usage("exist takes 1 argument (a triple)")),
                _ => Query::Lookup(
                    method_of(method, args)?,
                    LookupOptions {
                        max_elements: *max,
                        lower_anchor: anchor(lower)?,
                        upper_anchor: anchor(upper)?,
                        latest_anchor: *latest,
                        filter_options: filter.as_deref().map(parse_filter).transpose()?,
                        offset: *offset,
                    },
                ),
            };
            let g = block_on(ts.graph(graph.as_bytes())).map_err(CliError::operation)?;
            let found = match query {
                Query::Exist(t) => {
                    let exists = block_on(g.exist(&t)).map_err(CliError::operation)?;
                    let found: Vec<Found> = if exists {
                        vec![Found {
                            triple: t,
                            projection: rowkit_statemachines::triples::Projection::Triple,
                        }]
                    } else {
                        vec![]
                    };
                    print_found(&found, out)?;
                    if !exists {
                        return Err(CliError::Exit(1));
                    }
                    return Ok(());
                }
                Query::Lookup(method, options) => {
                    block_on(g.lookup(method, options)).map_err(CliError::operation)?
                }
            };
            print_found(&found, out)?;
        }
    }
    Ok(())
}

/// A `graph query`, its arguments checked.
enum Query {
    Exist(Triple),
    Lookup(LookupMethod, LookupOptions),
}

fn print_found(found: &[Found], out: &Output) -> Result<(), CliError> {
    if out.is_json() {
        let list: Vec<Value> = found.iter().map(found_json).collect();
        outln!("{}", Value::Array(list));
    } else {
        for f in found {
            outln!("{}", text(&f.item().to_text()));
        }
    }
    Ok(())
}

/// `rowkit key encode graph G TRIPLE` (fields from `rowkit_codec::explain`).
pub fn encode(args: &[String], out: &Output) -> Result<(), CliError> {
    let [graph, triple] = args else {
        return Err(CliError::usage("key encode graph takes G TRIPLE"));
    };
    keys::check_graph_id(graph.as_bytes()).map_err(bad)?;
    let t = parse_triple(triple)?;
    if out.is_json() {
        outln!("{}", Value::Object(explain::encode_graph_triple(graph, &t)));
    } else {
        let cells = keys::triple_cells(graph.as_bytes(), &t);
        outln!("uuid {}", t.uuid());
        outln!(
            "family {} timestamp {}",
            cells[0].family,
            crate::clock::format_micros(cells[0].timestamp.0)
        );
        for c in &cells {
            outln!(
                "{} {}",
                rowkit_codec::escape::escape(&c.row_key),
                text(c.qualifier)
            );
        }
    }
    Ok(())
}

/// `rowkit key decode --schema graph KEY` (KEY as escaped key text or `hex:…`).
pub fn decode(key: &[u8], out: &Output) -> Result<(), CliError> {
    let m = explain::decode_graph(key).map_err(bad)?;
    if out.is_json() {
        outln!("{}", Value::Object(m));
    } else {
        crate::output::write_fields(&m)?;
    }
    Ok(())
}
