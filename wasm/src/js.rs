//! Conversions at the JS boundary: JSON documents to JS values, errors to JS `Error`s with a
//! stable `code`, and reading option objects.

use core::future::Future;
use rowkit_statemachines::check::{CheckError, CheckEvent, CheckReport, CheckSummary, Finding};
use rowkit_statemachines::operation::OperationError;

use js_sys::{Promise, Reflect};
use rowkit_statemachines::StoreError;
use wasm_bindgen::prelude::*;

/// JSON text as a plain JS value (objects, arrays, strings, numbers), through `JSON.parse`:
/// an ordinary object, not a wrapper, with its members in the text's order.
pub fn parse(text: &str) -> JsValue {
    js_sys::JSON::parse(text).unwrap_or(JsValue::NULL)
}

/// A JSON document as a plain JS value (see [`parse`]).
pub fn to_js(value: &serde_json::Value) -> JsValue {
    parse(&value.to_string())
}

/// A JS value as JSON text (`JSON.stringify`, members in the object's order); `undefined` is
/// `null`.
pub fn stringify(value: &JsValue) -> Result<String, JsValue> {
    if is_absent(value) {
        return Ok("null".into());
    }
    js_sys::JSON::stringify(value)
        .map(String::from)
        .map_err(|_| error("invalid_argument", "value is not JSON-serialisable"))
}

/// A JS value as a JSON document (through [`stringify`]). `serde_json::Value` sorts object
/// members: where their order is data (Arsenal values), parse [`stringify`]'s text instead.
pub fn from_js(value: &JsValue) -> Result<serde_json::Value, JsValue> {
    serde_json::from_str(&stringify(value)?).map_err(|e| error("invalid_argument", &e.to_string()))
}

/// A JS `Error` with `message` and a stable `code` property (`not_found`, `invalid_argument`,
/// a schema error id, …), so callers can branch without parsing messages.
pub fn error(code: &str, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    let _ = Reflect::set(&e, &"code".into(), &code.into());
    e.into()
}

/// A schema operation's error, every schema's the same way: a store error as its status
/// ([`store_error`]), anything else as [`schema_error`] under the schema's id.
pub fn operation_error(e: impl OperationError) -> JsValue {
    match e.as_store() {
        Some(store) => store_error(store),
        None => schema_error(e.id(), &e.to_string()),
    }
}

/// A schema's error as a JS error: `code` and `id` both the schema's error id (Arsenal's
/// `NoSuchKey`, Vanadium's `v.io/…`), `message` one readable sentence without that id.
pub fn schema_error(id: &str, message: &str) -> JsValue {
    let e = error(id, message);
    let _ = Reflect::set(&e, &"id".into(), &id.into());
    e
}

/// A store status as a JS error (`code`: the status name in lower case; `message`: the
/// status's own message, or the status name when it has none).
pub fn store_error(e: &StoreError) -> JsValue {
    let message = if e.message.is_empty() {
        e.code.to_string()
    } else {
        e.message.clone()
    };
    error(&e.code.name().to_ascii_lowercase(), &message)
}

/// The `not_set_up` error for `e` when it says one of `tables` (a schema's own) does not
/// exist: `no WHAT here (table "gold" does not exist): Set up creates its tables`, what the
/// page's Set up does; `None` for any other error.
pub fn not_set_up(e: &JsValue, what: &str, tables: &[&str]) -> Option<JsValue> {
    use rowkit_client::not_set_up::{missing_table, not_set_up_message};
    let message = String::from(e.dyn_ref::<js_sys::Error>()?.message());
    let table = missing_table(&message).filter(|t| tables.contains(t))?;
    Some(error(
        "not_set_up",
        &not_set_up_message(what, table, "Set up creates its tables"),
    ))
}

/// A check's error, every schema's check the same way, through the one contract
/// ([`operation_error`]): `aborted` for a deadline or cancel, `invalid_argument` for refused
/// arguments, else its store status.
pub fn check_error(e: CheckError) -> JsValue {
    operation_error(e)
}

// The TypeScript type of `check_report`'s document (the package's `.d.ts`).
#[wasm_bindgen(typescript_custom_section)]
const CHECK_REPORT_TS: &str = r#"
/** One finding of a check (`spec/check.md`). */
export interface CheckFinding {
    schema: string;
    /** The finding's kind, e.g. `"missing_index"`. */
    kind: string;
    /** The row it is about, as escaped text and as hex. */
    row_key: string;
    row_key_hex: string;
    /** What is wrong. */
    detail: string;
    /** What a repair does (`"none"`: report only). */
    repair: string;
    /** Whether the repair was applied. */
    repaired: boolean;
}

/** A check's report, as `rowkit … check --json` prints it. */
export interface CheckReport {
    schema: string;
    rows_scanned: number;
    findings_by_kind: Record<string, number>;
    repaired: number;
    left: number;
    /** What the check could not do. */
    notes: string[];
    findings: CheckFinding[];
}
"#;

/// How long a check from the page may run: an hour, as the CLI's.
pub const CHECK_TIMEOUT_MICROS: i64 = 3_600_000_000;

/// Keeps the findings of a check's events (progress is not shown through a promise).
pub fn keep_finding(findings: &mut Vec<Finding>, event: CheckEvent) {
    if let CheckEvent::Finding(f) = event {
        findings.push(f);
    }
}

/// A finished check as the JS object of its report: the summary's fields, `schema` and every
/// finding (`{schema, kind, row_key, row_key_hex, detail, repair, repaired}`), as `--json`
/// prints it.
pub fn check_report(
    schema: &'static str,
    summary: CheckSummary,
    findings: Vec<Finding>,
) -> JsValue {
    let report = CheckReport {
        schema,
        table: None,
        summary,
        findings,
    };
    to_js(&serde_json::to_value(report).unwrap_or(serde_json::Value::Null))
}

/// Bad input from the caller.
pub fn invalid(message: impl core::fmt::Display) -> JsValue {
    error("invalid_argument", &message.to_string())
}

/// Whether an optional argument was left out (`undefined` or `null`).
pub fn is_absent(value: &JsValue) -> bool {
    value.is_undefined() || value.is_null()
}

/// The property `name` of `obj` as a `T` (`as_t`; `kind` names the type for the error), if
/// present.
fn get_as<T>(
    obj: &JsValue,
    name: &str,
    kind: &str,
    as_t: impl FnOnce(&JsValue) -> Option<T>,
) -> Result<Option<T>, JsValue> {
    if is_absent(obj) {
        return Ok(None);
    }
    let v = Reflect::get(obj, &name.into()).map_err(|_| invalid(format!("option {name}")))?;
    if is_absent(&v) {
        return Ok(None);
    }
    as_t(&v)
        .map(Some)
        .ok_or_else(|| invalid(format!("option {name} must be {kind}")))
}

/// The string property `name` of `obj`, if present.
pub fn get_string(obj: &JsValue, name: &str) -> Result<Option<String>, JsValue> {
    get_as(obj, name, "a string", JsValue::as_string)
}

/// The boolean property `name` of `obj`, if present.
pub fn get_bool(obj: &JsValue, name: &str) -> Result<Option<bool>, JsValue> {
    get_as(obj, name, "true or false", JsValue::as_bool)
}

/// The number property `name` of `obj`, if present.
pub fn get_number(obj: &JsValue, name: &str) -> Result<Option<f64>, JsValue> {
    get_as(obj, name, "a number", JsValue::as_f64)
}

/// The property `name` of `obj` (`undefined` when absent or when `obj` is not an object).
pub fn get(obj: &JsValue, name: &str) -> JsValue {
    if is_absent(obj) {
        return JsValue::UNDEFINED;
    }
    Reflect::get(obj, &name.into()).unwrap_or(JsValue::UNDEFINED)
}

/// A row key given as bytes (`Uint8Array`) or as escaped key text / `hex:…` (a string).
pub fn key_bytes(key: &JsValue) -> Result<Vec<u8>, JsValue> {
    if let Some(text) = key.as_string() {
        return rowkit_codec::escape::parse(&text)
            .map_err(|e| invalid(format!("key {text:?}: {e}")));
    }
    if key.is_instance_of::<js_sys::Uint8Array>() {
        return Ok(js_sys::Uint8Array::new(key).to_vec());
    }
    Err(invalid("a key is a Uint8Array or a string"))
}

/// A non-negative integer option as `u64` (seeds): JS numbers are exact up to 2^53.
pub fn to_u64(n: f64, what: &str) -> Result<u64, JsValue> {
    if n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= 9_007_199_254_740_991.0 {
        Ok(n as u64)
    } else {
        Err(invalid(format!(
            "{what} must be a whole number from 0 to 2^53-1"
        )))
    }
}

/// An integer argument as `i64` (repo indexes, timestamps).
pub fn to_i64(n: f64, what: &str) -> Result<i64, JsValue> {
    if n.is_finite() && n.fract() == 0.0 && n.abs() <= 9_007_199_254_740_991.0 {
        Ok(n as i64)
    } else {
        Err(invalid(format!("{what} must be a whole number")))
    }
}

/// `work` as a JS promise that resolves to `undefined` (the methods that only write).
pub fn promise_void(work: impl Future<Output = Result<(), JsValue>> + 'static) -> Promise {
    wasm_bindgen_futures::future_to_promise(async move { work.await.map(|()| JsValue::UNDEFINED) })
}
