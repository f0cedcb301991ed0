//! `rowkit mt …` (spec/mounttable.md §21) and the mount table's part of `rowkit key`.

use std::io::Write;

use clap::{Args, Subcommand};
use rowkit_client::mounttable::{MountTable, MtConfig, server_caller};
use rowkit_client::{SyncDriver, block_on};
use rowkit_codec::escape::escape;
use rowkit_codec::explain;
use rowkit_codec::mounttable::{
    Caller, MountFlags, Permissions, decode_permissions, decode_permissions_file,
    encode_permissions_string,
};
use rowkit_statemachines::mounttable::{MountEntry, Mounted, MtError, MtEvent, Tables};
use serde_json::{Map, Value, json};

use crate::args::Context;
use crate::error::CliError;
use crate::output::{Output, bytes_fields};

/// `rowkit mt [--table T] [--as NAMES] …`.
#[derive(Debug, Args)]
pub struct MtArgs {
    /// The store and its clock.
    #[command(flatten)]
    pub store: crate::args::StoreArgs,
    /// Node table of the mount table; the counter table is `<table>-counters`.
    #[arg(long, global = true, default_value = "mounttable")]
    pub table: String,
    /// The caller's blessing names, comma-separated; default: the server itself.
    #[arg(long = "as", global = true, value_name = "NAME[,NAME...]")]
    pub as_names: Option<String>,
    /// The operation.
    #[command(subcommand)]
    pub command: MtCommand,
}

/// `rowkit mt …` operations.
#[derive(Debug, Subcommand)]
pub enum MtCommand {
    /// Create the tables and the initial nodes (root, and the nodes of a permissions file).
    Setup {
        /// A btmtd permissions file (`{name: permissions}` JSON; `-`: stdin).
        #[arg(long = "perms-file", alias = "perms", value_name = "FILE")]
        perms_file: Option<std::path::PathBuf>,
    },
    /// Mount SERVER on NAME.
    Mount {
        /// Name.
        name: String,
        /// Server address (`/host:port/suffix`, `host:port`, or an endpoint).
        server: String,
        /// Seconds to live (0 = forever, i.e. 2^32-1 s).
        #[arg(long, default_value_t = 0)]
        ttl: u32,
        /// The server is a mount table.
        #[arg(long)]
        mt: bool,
        /// The server is a leaf.
        #[arg(long)]
        leaf: bool,
        /// Replace every other server on NAME.
        #[arg(long)]
        replace: bool,
        /// Flags as a list: `mt,leaf,replace`.
        #[arg(long, value_delimiter = ',')]
        flags: Vec<String>,
    },
    /// Unmount SERVER (or every server) from NAME.
    Unmount {
        /// Name.
        name: String,
        /// Server; all when omitted.
        server: Option<String>,
    },
    /// Resolve one step of NAME.
    Resolve {
        /// Name.
        name: String,
    },
    /// List names matching PATTERN (`*`, `...`, `a/*/c`, …).
    Glob {
        /// Pattern.
        pattern: String,
        /// Glob under this name.
        #[arg(long, default_value = "")]
        at: String,
    },
    /// Delete NAME.
    Delete {
        /// Name.
        name: String,
        /// Delete its children too.
        #[arg(long)]
        subtree: bool,
    },
    /// Permissions of a node.
    #[command(subcommand)]
    Perms(PermsCommand),
    /// Check the table (and with --fix, repair it and recompute the counters). Exit 0 when
    /// consistent, 1 when inconsistencies are left, 2 when it could not run.
    Fsck {
        /// Repair what is found.
        #[arg(long)]
        fix: bool,
    },
}

/// `rowkit mt perms …`.
#[derive(Debug, Subcommand)]
pub enum PermsCommand {
    /// Print the permissions and version of NAME.
    Get {
        /// Name.
        name: String,
    },
    /// Set the permissions of NAME (creating it), if its version is V.
    Set {
        /// Name.
        name: String,
        /// Permissions JSON (`{"Admin":{"In":["..."]}}`).
        perms: String,
        /// Expected version; any when omitted.
        #[arg(long, default_value = "")]
        version: String,
    },
}

fn caller(args: &MtArgs) -> Caller {
    match &args.as_names {
        None => server_caller(),
        Some(list) => Caller {
            blessing_names: list
                .split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            is_server: false,
        },
    }
}

fn perms_value(p: &Permissions) -> Value {
    serde_json::from_str(&encode_permissions_string(p)).unwrap_or(Value::Null)
}

fn entry_json(e: &MountEntry) -> Value {
    let servers: Vec<Value> = e
        .servers
        .iter()
        .map(|s| json!({"server": s.server, "deadline_us": s.deadline_us}))
        .collect();
    json!({"name": e.name, "servers": servers, "mt": e.mt, "leaf": e.leaf})
}

/// One entry as a text line: `NAME SERVER (until TIME)… [mt] [leaf]`, without the name when
/// `name` is `None`, and parts separated by one space (no stray space when a part is empty).
fn entry_text(name: Option<&str>, e: &MountEntry) -> String {
    let servers = e.servers.iter().map(|s| {
        format!(
            "{} (until {})",
            s.server,
            crate::clock::format_micros(s.deadline_us)
        )
    });
    let flags = [(e.mt, "[mt]"), (e.leaf, "[leaf]")]
        .into_iter()
        .filter(|(set, _)| *set)
        .map(|(_, flag)| flag.to_string());
    name.map(str::to_string)
        .into_iter()
        .chain(servers)
        .chain(flags)
        .collect::<Vec<_>>()
        .join(" ")
}

fn key_list(keys: &[Vec<u8>]) -> Value {
    Value::Array(
        keys.iter()
            .map(|k| {
                let mut m = Map::new();
                bytes_fields(&mut m, "row_key", k);
                Value::Object(m)
            })
            .collect(),
    )
}

/// Runs one `mt` command.
pub fn run(ctx: &Context, args: &MtArgs, out: &Output) -> Result<(), CliError> {
    let cmd = &args.command;
    let config = MtConfig {
        tables: Tables::new(&args.table),
        ..MtConfig::default()
    };
    let json_warnings = out.is_json();
    let t = MountTable::new(
        SyncDriver::new(ctx.store.as_ref(), ctx.clock.as_ref()),
        config,
    )
    // fsck is the mount table's check: it keeps a check's own time.
    .with_options(match cmd {
        MtCommand::Fsck { .. } => crate::check::check_options(ctx),
        _ => ctx.call_options(),
    })
    // What btmtd only logs goes to stderr, so an operator sees it (a JSON line with --json).
    .with_warning_sink(move |step, error| {
        let mut err = std::io::stderr();
        let _ = if json_warnings {
            let doc = json!({"warning": {"step": step, "message": error.to_string()}});
            writeln!(err, "{doc}")
        } else {
            writeln!(err, "rowkit: warning: {step}: {error}")
        };
    });
    let who = caller(args);
    let empty = || -> Result<(), CliError> {
        if out.is_json() {
            outln!("{{}}");
        }
        Ok(())
    };
    match cmd {
        MtCommand::Setup { perms_file } => {
            let file = match perms_file {
                None => None,
                Some(path) => {
                    let name = crate::input::display_name(path);
                    let bytes = crate::input::read_bytes(path)
                        .map_err(|e| CliError::usage(format!("{name}: {e}")))?;
                    Some(
                        decode_permissions_file(&bytes)
                            .map_err(|e| CliError::usage(format!("{name}: {e}")))?,
                    )
                }
            };
            let with_file = file.is_some();
            match block_on(t.setup(file)) {
                Ok(()) => {
                    empty()?;
                    if !out.is_json() {
                        outln!("mount table {} ready", args.table);
                    }
                }
                // Without a permissions file the machine creates only the root, so a
                // concurrent-access answer means the root is there: setup already ran, which
                // is what a second `mt setup` wants (the spec leaves this to the caller).
                Err(MtError::ConcurrentAccess) if !with_file => {
                    empty()?;
                    if !out.is_json() {
                        outln!(
                            "mount table {} already set up (its root node exists); nothing changed",
                            args.table
                        );
                    }
                }
                Err(MtError::ConcurrentAccess) => {
                    return Err(CliError::Schema {
                        id: MtError::ConcurrentAccess.id().to_string(),
                        exit: 1,
                        message: format!(
                            "mount table {} is already set up (its root node exists): the permissions file was not applied",
                            args.table
                        ),
                    });
                }
                Err(e) => return Err(CliError::operation(e)),
            }
        }
        MtCommand::Mount {
            name,
            server,
            ttl,
            mt,
            leaf,
            replace,
            flags,
        } => {
            let mut bits = 0u32;
            for f in flags {
                bits |= match f.as_str() {
                    "replace" => MountFlags::REPLACE,
                    "mt" => MountFlags::MT,
                    "leaf" => MountFlags::LEAF,
                    other => return Err(CliError::usage(format!("unknown mount flag {other:?}"))),
                };
            }
            for (set, bit) in [
                (*replace, MountFlags::REPLACE),
                (*mt, MountFlags::MT),
                (*leaf, MountFlags::LEAF),
            ] {
                if set {
                    bits |= bit;
                }
            }
            let Mounted {
                row_key: key,
                deadline_us: deadline,
            } = block_on(t.mount(&who, name, server, *ttl, MountFlags(bits)))
                .map_err(CliError::operation)?;
            if out.is_json() {
                let mut m = Map::new();
                m.insert("name".into(), json!(name));
                m.insert("server".into(), json!(server));
                m.insert("deadline_us".into(), json!(deadline));
                bytes_fields(&mut m, "row_key", &key);
                outln!("{}", Value::Object(m));
            } else {
                outln!(
                    "mounted {server} on {name} until {} (row {})",
                    crate::clock::format_micros(deadline),
                    escape(&key)
                );
            }
        }
        MtCommand::Unmount { name, server } => {
            block_on(t.unmount(&who, name, server.as_deref().unwrap_or("")))
                .map_err(CliError::operation)?;
            empty()?;
        }
        MtCommand::Resolve { name } => {
            let e = block_on(t.resolve(&who, name)).map_err(CliError::operation)?;
            if out.is_json() {
                outln!("{}", entry_json(&e));
            } else {
                // The servers, then what of NAME is left for them to resolve.
                let mut line = entry_text(None, &e);
                if !e.name.is_empty() {
                    line.push_str(&format!(" (suffix {})", e.name));
                }
                outln!("{line}");
            }
        }
        MtCommand::Glob { pattern, at } => {
            let entries = block_on(t.glob(&who, at, pattern)).map_err(CliError::operation)?;
            if out.is_json() {
                outln!("{}", Value::Array(entries.iter().map(entry_json).collect()));
            } else {
                for e in &entries {
                    // The root's name is empty: shown as `(root)`, not as a blank line.
                    let name = if e.name.is_empty() { "(root)" } else { &e.name };
                    outln!("{}", entry_text(Some(name), e));
                }
            }
        }
        MtCommand::Delete { name, subtree } => {
            block_on(t.delete(&who, name, *subtree)).map_err(CliError::operation)?;
            empty()?;
        }
        MtCommand::Perms(PermsCommand::Get { name }) => {
            let pv = block_on(t.get_permissions(&who, name)).map_err(CliError::operation)?;
            print_perms(out, &pv.perms, &pv.version)?;
        }
        MtCommand::Perms(PermsCommand::Set {
            name,
            perms,
            version,
        }) => {
            let p = decode_permissions(perms.as_bytes())
                .map_err(|e| CliError::usage(format!("bad permissions: {e}")))?;
            let pv =
                block_on(t.set_permissions(&who, name, p, version)).map_err(CliError::operation)?;
            print_perms(out, &pv.perms, &pv.version)?;
        }
        MtCommand::Fsck { fix } => {
            // Each finding on stderr as it comes, and all of them in the JSON summary; rows
            // read so far on a terminal.
            let mut findings = Vec::new();
            let mut progress = crate::output::Progress::new("rows read");
            let mut rows_read = 0;
            let on_event = |event: MtEvent| {
                if let MtEvent::FsckPage { rows } = event {
                    rows_read += rows;
                    progress.show(rows_read, &format!("{} problems", findings.len()));
                } else if let MtEvent::FsckFinding {
                    row_key,
                    kind,
                    fixed,
                    detail,
                } = event
                {
                    progress.finish();
                    let kind = kind.name();
                    let _ = writeln!(
                        std::io::stderr(),
                        "rowkit: fsck: {kind} row {}{}: {detail}",
                        escape(&row_key),
                        if fixed { " (fixed)" } else { "" }
                    );
                    let mut m = Map::new();
                    bytes_fields(&mut m, "row_key", &row_key);
                    m.insert("kind".into(), json!(kind));
                    m.insert("fixed".into(), json!(fixed));
                    m.insert("detail".into(), json!(detail));
                    findings.push(Value::Object(m));
                }
            };
            let (summary, failure) = match block_on(t.fsck(*fix, on_event)) {
                Ok(summary) => (summary, None),
                Err(MtError::FsckInconsistent(summary)) => {
                    let failure = CliError::operation(MtError::FsckInconsistent(summary.clone()));
                    (summary, Some(failure))
                }
                Err(e) => return Err(CliError::operation(e)),
            };
            // Stale counters are tolerated (a crash leaves them), but said: on stderr as the
            // findings are.
            for (key, detail) in &summary.counters {
                let _ = writeln!(
                    std::io::stderr(),
                    "rowkit: fsck: counter row {}: {detail}{}",
                    escape(key),
                    if *fix { " (rebuilt)" } else { "" }
                );
            }
            if out.is_json() {
                let counters: Vec<Value> = summary
                    .counters
                    .iter()
                    .map(|(key, detail)| {
                        let mut m = Map::new();
                        bytes_fields(&mut m, "row_key", key);
                        m.insert("detail".into(), json!(detail));
                        m.insert("rebuilt".into(), json!(*fix));
                        Value::Object(m)
                    })
                    .collect();
                let mut doc = json!({"passes": summary.passes, "inconsistent": summary.inconsistent,
                    "fixed": key_list(&summary.fixed), "left": key_list(&summary.left),
                    "undecodable": key_list(&summary.undecodable), "findings": findings,
                    "counters": counters});
                if let Some(failure) = &failure {
                    doc["error"] = json!({"id": failure.id(), "message": failure.message()});
                }
                outln!("{doc}");
            } else {
                outln!(
                    "{} passes, {} inconsistencies ({} fixed, {} left), {} undecodable rows",
                    summary.passes,
                    summary.inconsistent,
                    summary.fixed.len(),
                    summary.left.len(),
                    summary.undecodable.len()
                );
            }
            if let Some(failure) = failure {
                // The JSON document above already carries the error: only stderr's line is left.
                let _ = writeln!(std::io::stderr(), "rowkit: {}", failure.message());
                return Err(CliError::Exit(failure.exit_code()));
            }
        }
    }
    Ok(())
}

fn print_perms(out: &Output, p: &Permissions, version: &str) -> Result<(), CliError> {
    if out.is_json() {
        outln!("{}", json!({"perms": perms_value(p), "version": version}));
    } else {
        outln!("{}\nversion {version}", encode_permissions_string(p));
    }
    Ok(())
}

/// `rowkit key encode mt NAME` (fields from `rowkit_codec::explain`).
pub fn key_encode(name: &str, out: &Output) -> Result<(), CliError> {
    let doc = explain::encode_mt(name);
    if out.is_json() {
        outln!("{}", Value::Object(doc));
    } else {
        outln!("{}", doc["row_key"].as_str().unwrap_or_default());
    }
    Ok(())
}

/// `rowkit key decode --schema mt KEY`.
pub fn key_decode(key: &[u8], out: &Output) -> Result<(), CliError> {
    let doc = explain::decode_mt(key).map_err(|e| CliError::usage(e.to_string()))?;
    if out.is_json() {
        outln!("{}", Value::Object(doc));
    } else if doc["kind"] == "counter" {
        outln!(
            "counter {} of {}",
            doc["counter"].as_str().unwrap_or_default(),
            doc["creator"].as_str().unwrap_or_default()
        );
    } else {
        outln!(
            "node {:?} hash {} {}",
            doc["name"].as_str().unwrap_or_default(),
            doc["hash"].as_str().unwrap_or_default(),
            if doc["hash_ok"] == true {
                "ok"
            } else {
                "MISMATCH"
            }
        );
    }
    Ok(())
}
