//! The table browser's scan: rows of any table by key prefix, each row key explained for its
//! schema (`rowkit_codec::explain`). Runs the `ReadRows` machine (merger + resume) on the
//! client's backend, so through a gateway the rows stream in as the body arrives. And its list
//! of tables with their families (`listTables`).

use js_sys::Promise;
use rowkit_codec::escape::escape;
use rowkit_codec::explain::{self, Schema};
use rowkit_codec::model::{ColumnFamily, KeyBound, RowFilter, RowRange, RowSet, literal_regex};
use rowkit_store::Store;
use rowkit_rest::admin::gc_rule_to_json;
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{ReadRowsRequest, RetryPolicy};
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;

use rowkit_client::Driver;

use crate::backend::{ClientOptions, PageDriver, page_store, run_error};
use crate::js;

/// Values longer than this are cut in the row documents (the hex is cut alike); `valueSize`
/// keeps the real length.
const SHOWN_VALUE_BYTES: usize = 512;

// The TypeScript types of the result (the package's `.d.ts`).
#[wasm_bindgen(typescript_custom_section)]
const SCAN_TS: &str = r#"
/** One cell of a scanned row; byte strings as escaped text and as hex. */
export interface ScannedCell {
    family: string;
    qualifier: string;
    qualifier_hex: string;
    timestampMicros: number;
    /** The value (its first 512 bytes). */
    value: string;
    value_hex: string;
    /** The value's whole length in bytes. */
    valueSize: number;
}

/** What narrows a `scanRows` scan beyond its prefix (every member optional). */
export interface ScanNarrowing {
    /** The first row key to read (inclusive), escaped key text, `hex:…` or bytes. */
    start?: Uint8Array | string;
    /** The row key to stop before (exclusive). */
    end?: Uint8Array | string;
    /** Only the cells of this column family (its exact name); rows without any are skipped. */
    family?: string;
    /** Only the cells with this exact qualifier (escaped text, `hex:…` or bytes). */
    qualifier?: Uint8Array | string;
}

/** A column family of a table `listTables` lists. */
export interface ListedFamily {
    name: string;
    /**
     * Its GC rule in Google's JSON (`{maxNumVersions: 1}`, `{maxAge: "3600s"}`,
     * `{intersection: {rules: [...]}}`, `{union: {rules: [...]}}`); `null` keeps every cell.
     */
    gcRule: GcRuleJson | null;
}

/** A GC rule in Google's JSON (the Bigtable Admin API's `GcRule`). */
export type GcRuleJson =
    | { maxNumVersions: number }
    | { maxAge: string }
    | { intersection: { rules?: GcRuleJson[] } }
    | { union: { rules?: GcRuleJson[] } };

/** One table of `listTables`. */
export interface ListedTable {
    /** The table id. */
    name: string;
    /** Its families, ascending by name. */
    families: ListedFamily[];
}

/** One row of `scanRows`. */
export interface ScannedRow {
    row_key: string;
    row_key_hex: string;
    /** The key explained (`null` for schema `"none"`; `{error}` when it is not the schema's). */
    decoded: DecodedKey | { error: string } | null;
    cells: ScannedCell[];
}
"#;

/// Scans `table` for rows whose key starts with `prefix` (a `Uint8Array`, escaped key text or
/// `hex:…`; empty = the whole table), at most `limit` rows (0 = no limit). `schema` (`auto`,
/// `mt`, `gold`, `s3`, `graph`, or `none`) says how to explain each key. `after` (a key, as
/// `prefix`) pages: only rows after it are read, so the next page starts after the last key
/// of the previous one. `narrowing` (optional, `ScanNarrowing`) bounds the keys further
/// (`start` inclusive, `end` exclusive) and keeps only the cells of one family and/or
/// qualifier (Bigtable's family and qualifier filters: a row without such a cell is not
/// returned). Options are the common client options (`gateway`, `token`, …); `deadlineMs`
/// bounds the whole scan, retries included.
/// Resolves to `[{row_key, row_key_hex, decoded, cells: [{family, qualifier, qualifier_hex,
/// timestampMicros, value, value_hex, valueSize}]}]`; `decoded` is the key's document with
/// its `segments` (see `decodeKey`), or `{error}` when the key is not one of the schema's.
#[wasm_bindgen(js_name = scanRows, unchecked_return_type = "Promise<ScannedRow[]>")]
pub fn scan_rows(
    #[wasm_bindgen(unchecked_param_type = "ClientOptions | null | undefined")] options: JsValue,
    table: String,
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] prefix: JsValue,
    limit: u32,
    #[wasm_bindgen(unchecked_param_type = "KeySchemaName | \"auto\" | \"none\" | null")]
    schema: Option<String>,
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | string | undefined")] after: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "ScanNarrowing")] narrowing: JsValue,
) -> Promise {
    let opts = match ClientOptions::from_js(&options) {
        Ok(opts) => opts,
        Err(e) => return Promise::reject(&e),
    };
    opts.diagnosis("table", Vec::new()).promise(async move {
        let prefix = if js::is_absent(&prefix) {
            Vec::new()
        } else {
            js::key_bytes(&prefix)?
        };
        let mut range = RowRange::prefix(&prefix);
        let optional_key = |name: &str| {
            let v = js::get(&narrowing, name);
            if js::is_absent(&v) || v.as_string().is_some_and(|s| s.is_empty()) {
                Ok(None)
            } else {
                js::key_bytes(&v).map(Some)
            }
        };
        // Each further start bound only moves the start later; the end only earlier.
        let mut later_start = |bound: KeyBound| {
            if let Some(k) = bound.key()
                && range.start.admits_from_below(k)
            {
                range.start = bound;
            }
        };
        let start = optional_key("start")?;
        let end = optional_key("end")?;
        if let (Some(s), Some(e)) = (&start, &end)
            && s >= e
        {
            return Err(js::invalid(format!(
                "the start key {} is not before the end key {} (the end is exclusive)",
                escape(s),
                escape(e)
            )));
        }
        if let Some(start) = start {
            later_start(KeyBound::Closed(start));
        }
        if !js::is_absent(&after) {
            later_start(KeyBound::Open(js::key_bytes(&after)?));
        }
        if let Some(end) = end
            && range.end.admits_from_above(&end)
        {
            range.end = KeyBound::Open(end);
        }
        let mut cell_filters = Vec::new();
        if let Some(family) = js::get_string(&narrowing, "family")?.filter(|f| !f.is_empty()) {
            let pattern = String::from_utf8(literal_regex(family.as_bytes()))
                .map_err(|e| js::invalid(format!("family {family:?}: {e}")))?;
            cell_filters.push(RowFilter::FamilyNameRegex(pattern));
        }
        if let Some(qualifier) = optional_key("qualifier")? {
            cell_filters.push(RowFilter::ColumnQualifierRegex(literal_regex(&qualifier)));
        }
        let filter = match cell_filters.len() {
            0 => None,
            1 => cell_filters.pop(),
            _ => Some(RowFilter::Chain(cell_filters)),
        };
        // A range that holds nothing (start at or after end) reads nothing.
        if range.is_empty() {
            return Ok(js::to_js(&Value::Array(Vec::new())));
        }
        let schema = schema.unwrap_or_else(|| "auto".into());
        let explain_as = match schema.as_str() {
            "auto" | "none" => None,
            s => {
                Some(Schema::parse(s).ok_or_else(|| js::invalid(format!("unknown schema {s:?}")))?)
            }
        };
        let request = ReadRowsRequest {
            table,
            rows: RowSet {
                row_keys: Vec::new(),
                row_ranges: vec![range],
            },
            filter,
            rows_limit: i64::from(limit),
            ..Default::default()
        };
        // The page's per-operation deadline (`deadlineMs`): a stopped server is an error within
        // it, not after the default minute of retries.
        let mut policy = RetryPolicy::default();
        if let Some(deadline) = opts.deadline_us() {
            policy.operation_timeout = deadline;
        }
        let m = ReadRows::new(request, opts.driver.now(), opts.seed, policy);
        let mut rows = Vec::new();
        rowkit_client::run(&opts.driver, m, |row| {
            let decoded = match (schema.as_str(), explain_as) {
                ("none", _) => Value::Null,
                (_, Some(s)) => explain::decode_segmented(s, &row.key)
                    .map(Value::Object)
                    .unwrap_or_else(|e| json!({"error": e.to_string()})),
                (_, None) => explain::decode_auto_segmented(&row.key)
                    .map(|(_, d)| Value::Object(d))
                    .unwrap_or_else(|e| json!({"error": e.to_string()})),
            };
            let cells: Vec<Value> = row
                .cells
                .iter()
                .map(|c| {
                    let shown = &c.value[..c.value.len().min(SHOWN_VALUE_BYTES)];
                    json!({
                        "family": c.family,
                        "qualifier": escape(&c.qualifier),
                        "qualifier_hex": hex::encode(&c.qualifier),
                        "timestampMicros": c.timestamp.0,
                        "value": escape(shown),
                        "value_hex": hex::encode(shown),
                        "valueSize": c.value.len(),
                    })
                })
                .collect();
            rows.push(json!({
                "row_key": escape(&row.key),
                "row_key_hex": hex::encode(&row.key),
                "decoded": decoded,
                "cells": cells,
            }));
        })
        .await
        .map_err(|e| run_error(e, |e| js::store_error(&e)))?;
        Ok(js::to_js(&Value::Array(rows)))
    })
}

/// Every table of the client's store with its families, ascending by table id: the page's
/// store offline, the gateway's instance through its table admin (`GET …/tables`). Options are
/// the common client options (`gateway`, `token`, `project`, `instance`). Resolves to
/// `[{name, families: [{name, gcRule}]}]`, `gcRule` in Google's JSON or `null`.
#[wasm_bindgen(js_name = listTables, unchecked_return_type = "Promise<ListedTable[]>")]
pub fn list_tables(
    #[wasm_bindgen(unchecked_param_type = "ClientOptions | null | undefined")] options: JsValue,
) -> Promise {
    let opts = match ClientOptions::from_js(&options) {
        Ok(opts) => opts,
        Err(e) => return Promise::reject(&e),
    };
    opts.diagnosis("tables", Vec::new()).promise(async move {
        let tables: Vec<(String, Vec<ColumnFamily>)> = match &opts.driver {
            PageDriver::Gateway(d) => rowkit_fetch::list_tables(d.gateway())
                .await
                .map_err(|e| js::store_error(&e))?
                .into_iter()
                .map(|t| (t.id, t.families))
                .collect(),
            PageDriver::Memory(_) => {
                let store = page_store();
                let mut tables = Vec::new();
                for id in Store::list_tables(store.as_ref()).map_err(|e| js::store_error(&e))? {
                    let families =
                        Store::families(store.as_ref(), &id).map_err(|e| js::store_error(&e))?;
                    tables.push((id, families));
                }
                tables
            }
        };
        let mut tables = tables;
        tables.sort_by(|a, b| a.0.cmp(&b.0));
        let tables: Vec<Value> = tables
            .into_iter()
            .map(|(name, families)| {
                let families: Vec<Value> = families
                    .iter()
                    .map(|f| {
                        let rule = f
                            .gc_rule
                            .as_ref()
                            .map(|r| serde_json::to_value(gc_rule_to_json(r)))
                            .transpose()
                            .unwrap_or_default()
                            .unwrap_or(Value::Null);
                        json!({"name": f.name, "gcRule": rule})
                    })
                    .collect();
                json!({"name": name, "families": families})
            })
            .collect();
        Ok(js::to_js(&Value::Array(tables)))
    })
}
