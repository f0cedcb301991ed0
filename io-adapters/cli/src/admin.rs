//! `rowkit admin`: table creation, listing, deletion, garbage collection, dumps and backups.

use std::io::Write;

use rowkit_codec::escape::{self, escape};
use rowkit_codec::model::{ColumnFamily, GcRule, Mutation, Row, RowRange, RowSet, Timestamp};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{Code, MutateRowRequest, ReadRowsRequest, StoreError, raw};
use serde_json::{Map, Value, json};

use crate::args::{AdminCommand, Context};
use crate::error::CliError;
use crate::output::{Output, Progress, bytes_fields};

/// Runs one admin command.
pub fn run(ctx: &Context, cmd: &AdminCommand, out: &Output) -> Result<(), CliError> {
    match cmd {
        AdminCommand::CreateTable {
            name,
            families,
            splits,
        } => {
            let families = families
                .iter()
                .map(|f| parse_family(f))
                .collect::<Result<Vec<_>, _>>()?;
            let splits = splits
                .iter()
                .map(|k| escape::parse(k).map_err(|e| CliError::usage(format!("split {k:?}: {e}"))))
                .collect::<Result<Vec<_>, _>>()?;
            // Bigtable's rules, checked before the store is opened (bad input changes nothing).
            rowkit_store::semantics::validate_schema(name, &families)?;
            rowkit_store::semantics::normalize_splits(&splits)?;
            ctx.store
                .create_table_with_splits(name, &families, &splits)?;
            if out.is_json() {
                let fams: Vec<Value> = families.iter().map(family_json).collect();
                outln!("{}", json!({"table": name, "families": fams}));
            } else {
                outln!("created table {name}");
            }
            Ok(())
        }
        AdminCommand::ListTables => {
            let tables = ctx.store.list_tables()?;
            if out.is_json() {
                let list: Vec<Value> = tables
                    .iter()
                    .map(|t| {
                        let fams = ctx.store.families(t).unwrap_or_default();
                        json!({"table": t, "families": fams.iter().map(family_json).collect::<Vec<_>>()})
                    })
                    .collect();
                outln!("{}", json!({"tables": list}));
            } else {
                for t in tables {
                    outln!("{t}");
                }
            }
            Ok(())
        }
        AdminCommand::DeleteTable { name } => {
            ctx.store.delete_table(name)?;
            if out.is_json() {
                outln!("{}", json!({"deleted": name}));
            } else {
                outln!("deleted table {name}");
            }
            Ok(())
        }
        AdminCommand::Set {
            table,
            row,
            cells,
            timestamp,
        } => set(ctx, table, row, cells, *timestamp, out),
        AdminCommand::Gc { tables } => gc(ctx, tables, out),
        AdminCommand::Dump { table, prefix } => dump(ctx, table, prefix.as_deref(), out),
        AdminCommand::Backup { file, force } => {
            let summary = ctx.store.backup_to(file, *force)?;
            if out.is_json() {
                let path = file.display().to_string();
                outln!(
                    "{}",
                    json!({"backup": path, "tables": summary.tables, "bytes": summary.bytes})
                );
            } else {
                outln!(
                    "backed up {} table(s) to {} ({} bytes)",
                    summary.tables,
                    file.display(),
                    summary.bytes
                );
            }
            Ok(())
        }
    }
}

/// Garbage-collects `tables` (every table when empty) at the context's time and prints the
/// cells removed per table, as each table is done.
fn gc(ctx: &Context, tables: &[String], out: &Output) -> Result<(), CliError> {
    let tables = if tables.is_empty() {
        ctx.store.list_tables()?
    } else {
        tables.to_vec()
    };
    let now = ctx.now();
    let mut report = Vec::with_capacity(tables.len());
    let mut total = 0u64;
    for table in &tables {
        let deleted = ctx.store.gc(table, now)?;
        total += deleted;
        if out.is_json() {
            report.push(json!({"table": table, "deleted": deleted}));
        } else {
            outln!("{table}: {deleted} cell(s) removed");
        }
    }
    if out.is_json() {
        outln!("{}", json!({"tables": report, "deleted": total}));
    }
    Ok(())
}

/// Writes `FAMILY:QUALIFIER=VALUE` cells to one row with one MutateRow.
fn set(
    ctx: &Context,
    table: &str,
    row: &str,
    cells: &[String],
    timestamp: Option<i64>,
    out: &Output,
) -> Result<(), CliError> {
    let row_key = escape::parse(row).map_err(|e| CliError::usage(format!("row {row:?}: {e}")))?;
    // Checked here, as the store would, so that bad input never reaches (or opens) the store.
    if let Some(t) = timestamp.filter(|t| *t != -1 && (*t < 0 || t % 1000 != 0)) {
        return Err(CliError::Store(StoreError::new(
            Code::InvalidArgument,
            format!(
                "--timestamp {t}: a cell timestamp is -1 (server time) or a multiple of 1000 us"
            ),
        )));
    }
    let timestamp = timestamp.map_or(Timestamp::SERVER_TIME, Timestamp);
    let mutations = cells
        .iter()
        .map(|spec| {
            let bad = || CliError::usage(format!("cell {spec:?}: expected FAMILY:QUALIFIER=VALUE"));
            let (family, rest) = spec.split_once(':').ok_or_else(bad)?;
            let (qualifier, value) = rest.split_once('=').ok_or_else(bad)?;
            let parse = |t: &str| {
                escape::parse(t).map_err(|e| CliError::usage(format!("cell {spec:?}: {e}")))
            };
            Ok(Mutation::SetCell {
                family: family.to_string(),
                qualifier: parse(qualifier)?,
                timestamp,
                value: parse(value)?,
            })
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    let count = mutations.len();
    let request = MutateRowRequest {
        table: table.to_string(),
        app_profile_id: String::new(),
        row_key: row_key.clone(),
        mutations,
    };
    let machine = raw::MutateRow::new(request, ctx.now(), ctx.seed, ctx.retry);
    rowkit_client::run_blocking(&*ctx.store, &*ctx.clock, machine, |_| {})
        .map_err(|e| CliError::Store(e.into_store_error()))?;
    if out.is_json() {
        let mut m = Map::new();
        m.insert("table".into(), Value::String(table.to_string()));
        bytes_fields(&mut m, "row_key", &row_key);
        m.insert("cells".into(), Value::from(count));
        outln!("{}", Value::Object(m));
    } else {
        outln!("wrote {count} cell(s) to {}", escape(&row_key));
    }
    Ok(())
}

/// Parses `F`, `F:maxversions=N`, `F:maxage=DUR`, `F:maxversions=N,maxage=DUR`.
fn parse_family(spec: &str) -> Result<ColumnFamily, CliError> {
    let (name, policy) = match spec.split_once(':') {
        Some((n, p)) => (n, Some(p)),
        None => (spec, None),
    };
    let mut rules = Vec::new();
    for part in policy.into_iter().flat_map(|p| p.split(',')) {
        let rule = match part.split_once('=') {
            Some(("maxversions", n)) => n
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .map(GcRule::MaxNumVersions)
                .ok_or_else(|| {
                    CliError::usage(format!(
                        "--family {spec}: maxversions needs a positive integer"
                    ))
                })?,
            Some(("maxage", d)) => GcRule::MaxAge(parse_duration(d).map_err(|e| {
                CliError::usage(format!(
                    "--family {spec}: maxage needs a duration like 1500ms, 30s, 10m, 12h, 7d ({e})"
                ))
            })?),
            _ => {
                return Err(CliError::usage(format!(
                    "--family {spec}: unknown policy {part:?}; use maxversions=N or maxage=DUR"
                )));
            }
        };
        rules.push(rule);
    }
    let gc_rule = match rules.len() {
        0 => None,
        1 => rules.pop(),
        _ => Some(GcRule::Union(rules)),
    };
    Ok(ColumnFamily {
        name: name.to_string(),
        gc_rule,
    })
}

/// `1500ms`, `30s`, `10m`, `12h`, `7d` (or combined, `1h 30m`) in microseconds, by
/// `humantime`.
fn parse_duration(text: &str) -> Result<i64, String> {
    let duration = humantime::parse_duration(text).map_err(|e| e.to_string())?;
    i64::try_from(duration.as_micros()).map_err(|_| "too long".to_string())
}

fn family_json(f: &ColumnFamily) -> Value {
    json!({"name": f.name, "gc_rule": f.gc_rule.as_ref().map(gc_json)})
}

fn gc_json(rule: &GcRule) -> Value {
    match rule {
        GcRule::MaxNumVersions(n) => json!({"max_num_versions": n}),
        GcRule::MaxAge(us) => json!({"max_age_us": us}),
        GcRule::Intersection(rs) => {
            json!({"intersection": rs.iter().map(gc_json).collect::<Vec<_>>()})
        }
        GcRule::Union(rs) => json!({"union": rs.iter().map(gc_json).collect::<Vec<_>>()}),
    }
}

/// Streams every cell of the table (or of the rows under `prefix`) to stdout as rows arrive.
fn dump(ctx: &Context, table: &str, prefix: Option<&str>, out: &Output) -> Result<(), CliError> {
    let rows = match prefix {
        Some(p) => {
            let bytes =
                escape::parse(p).map_err(|e| CliError::usage(format!("--prefix {p:?}: {e}")))?;
            RowSet::range(RowRange::prefix(&bytes))
        }
        None => RowSet::all(),
    };
    // Fail before printing anything when the table is missing, so `--json` prints exactly one
    // document (the error) instead of a truncated dump followed by it.
    ctx.store.families(table)?;
    let request = ReadRowsRequest {
        table: table.to_string(),
        rows,
        ..ReadRowsRequest::default()
    };
    let machine = ReadRows::new(request, ctx.now(), ctx.seed, ctx.retry);
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    let mut progress = Progress::new("rows");
    let mut first = true;
    let mut io_error = None;
    if out.is_json() {
        io_error = write!(
            w,
            "{{\"table\":{},\"cells\":[",
            Value::String(table.to_string())
        )
        .err();
    }
    let result = rowkit_client::run_blocking(&*ctx.store, &*ctx.clock, machine, |row: Row| {
        progress.tick();
        if io_error.is_none() {
            io_error = write_row(&mut w, &row, out.is_json(), &mut first).err();
        }
    });
    progress.finish();
    let rows = result.map_err(|e| CliError::Store(e.into_store_error()))?;
    if out.is_json() {
        io_error = io_error.or(writeln!(w, "],\"rows\":{rows}}}").err());
    }
    io_error = io_error.or(w.flush().err());
    io_error.map_or(Ok(()), |e| Err(CliError::Output(e)))
}

fn write_row(w: &mut impl Write, row: &Row, json: bool, first: &mut bool) -> std::io::Result<()> {
    for cell in &row.cells {
        if json {
            let mut m = Map::new();
            bytes_fields(&mut m, "row_key", &row.key);
            m.insert("family".into(), Value::String(cell.family.clone()));
            bytes_fields(&mut m, "qualifier", &cell.qualifier);
            m.insert("timestamp_us".into(), Value::from(cell.timestamp.0));
            bytes_fields(&mut m, "value", &cell.value);
            if !*first {
                w.write_all(b",")?;
            }
            *first = false;
            serde_json::to_writer(&mut *w, &Value::Object(m))?;
        } else {
            writeln!(
                w,
                "{}\t{}:{}\t@{}\t{}",
                escape(&row.key),
                cell.family,
                escape(&cell.qualifier),
                crate::clock::format_micros(cell.timestamp.0),
                escape(&cell.value)
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn family_specs() {
        assert_eq!(parse_family("cf").unwrap(), ColumnFamily::new("cf"));
        assert_eq!(
            parse_family("cf:maxversions=2").unwrap(),
            ColumnFamily::max_versions("cf", 2)
        );
        assert_eq!(
            parse_family("cf:maxversions=1,maxage=1d").unwrap().gc_rule,
            Some(GcRule::Union(vec![
                GcRule::MaxNumVersions(1),
                GcRule::MaxAge(86_400_000_000)
            ]))
        );
        assert!(parse_family("cf:maxversions=0").is_err());
        assert!(parse_family("cf:ttl=3").is_err());
    }
}
