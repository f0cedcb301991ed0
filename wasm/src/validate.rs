//! `validate(field, value)`: the input rules of `rowkit_codec::validate` (the CLI's) for forms
//! that mark a field invalid as the user types.

use rowkit_codec::validate::{Field, validate as check};
use wasm_bindgen::prelude::*;

use crate::js;

// The TypeScript type of the field names (the package's `.d.ts`).
#[wasm_bindgen(typescript_custom_section)]
const VALIDATE_TS: &str = r#"
/**
 * What `validate` checks: `"bucket"` (an S3 bucket name), `"objectKey"`, `"commit"` (a Gold
 * commit as typed: a whole number from 0 to 2147483647), `"digest"` (32 hex characters, or
 * empty for a missing point), `"params"` (a trace's `k=v,…`, at least one pair), `"graph"` (a
 * graph id), `"triple"` (one triple in BadWolf's text form), `"mountName"`, `"address"` (a
 * server address to mount).
 */
export type ValidatedField =
    | "bucket"
    | "objectKey"
    | "commit"
    | "digest"
    | "params"
    | "graph"
    | "triple"
    | "mountName"
    | "address";
"#;

/// Checks `value` as a `field` with the CLI's rules: `null` when it is valid, else the one
/// sentence saying which rule it breaks (e.g. `validate("digest", "xyz")`). An unknown
/// `field` throws (`code` `invalid_argument`).
#[wasm_bindgen]
pub fn validate(
    #[wasm_bindgen(unchecked_param_type = "ValidatedField")] field: &str,
    value: &str,
) -> Result<Option<String>, JsValue> {
    let field = Field::parse(field).ok_or_else(|| {
        js::invalid(format!(
            "unknown field {field:?}: one of {}",
            Field::ALL.map(Field::name).join(", ")
        ))
    })?;
    Ok(check(field, value).err().map(|e| e.message))
}

/// A refused input as a JS error (`code` `invalid_argument`), before any request.
pub fn checked(field: Field, value: &str) -> Result<(), JsValue> {
    check(field, value).map_err(|e| js::invalid(e.message))
}
