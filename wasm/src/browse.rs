//! The table browser's scan: rows of any table by key prefix, each row key explained for its
//! schema (`rowkit_codec::explain`). Runs the `ReadRows` machine (merger + resume) on the
//! client's backend, so through a gateway the rows stream in as the body arrives. And its list
//! of tables with their families (`listTables`).

use js_sys::Promise;
use rowkit_codec::escape::escape;
use rowkit_codec::explain::{self, Schema};
use rowkit_codec::model::{ColumnFamily, KeyBound, RowRange, RowSet};
use rowkit_embedded::Store;
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
/// of the previous one. Options are the common client options (`gateway`, `token`, …).
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
        if !js::is_absent(&after) {
            let after = js::key_bytes(&after)?;
            if range.start.admits_from_below(&after) {
                range.start = KeyBound::Open(after);
            }
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
            rows_limit: i64::from(limit),
            ..Default::default()
        };
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
