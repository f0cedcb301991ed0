//! Row keys from JS: `decodeKey` for any schema and one encoder per schema. The documents are
//! the CLI's (`rowkit_codec::explain`): every byte string as escaped text and as `*_hex`.

use rowkit_codec::escape;
use rowkit_codec::explain::{self, Doc, ExplainError, Schema};
use wasm_bindgen::prelude::*;

use crate::js;

// The TypeScript types of the documents (the package's `.d.ts`): `rowkit_codec::explain`'s.
#[wasm_bindgen(typescript_custom_section)]
const KEYS_TS: &str = r#"
/** The four schemas' short names. */
export type KeySchemaName = "mt" | "gold" | "s3" | "graph";

/** A row key (or qualifier) as escaped text (`\xHH` for other bytes) and as hex. */
export interface KeyBytes {
    row_key: string;
    row_key_hex: string;
}

/** A qualifier as escaped text and as hex. */
export interface QualifierBytes {
    qualifier: string;
    qualifier_hex: string;
}

/** One run of a key's bytes and what its codec says it is. */
export interface KeySegment {
    /** Byte offsets, `end` exclusive. */
    start: number;
    end: number;
    field: string;
    meaning: string;
    bytes: string;
    bytes_hex: string;
}

/** A decoded row key: the schema, the key, its segments and the schema's own fields. */
export interface DecodedKey extends KeyBytes {
    schema: KeySchemaName;
    segments: KeySegment[];
    [field: string]: unknown;
}

/** `encodeMtKey`: a mount table name's node row. */
export interface MtKey extends KeyBytes {
    schema: "mt";
    name: string;
}

/** `encodeGoldTraceKey`: a trace's rows and qualifier at a commit. */
export interface GoldTraceKey extends KeyBytes {
    schema: "gold";
    repo_index: number;
    tile_index: number;
    tile_key: number;
    /** The commit's column within its tile. */
    offset: number;
    shard: number;
    options_row: KeyBytes;
    ops_row: KeyBytes;
    qualifier_md5: QualifierBytes;
    qualifier_digest_id: QualifierBytes;
}

/** `encodeGoldDigestKey`: a digest's digest-map row and qualifier. */
export interface GoldDigestKey extends KeyBytes, QualifierBytes {
    schema: "gold";
    digest: string;
    md5_cell_hex: string;
}

/** `encodeS3Key`: an object's master or version row. */
export interface S3Key extends KeyBytes {
    schema: "s3";
    bucket: string;
    collection: string;
    format: "v0" | "v1";
    kind: "master" | "version";
    object_key: string;
    version_id: string | null;
    arsenal_key: string;
    arsenal_key_hex: string;
}

/** `encodeGraphKey`: a triple's four index rows and its graph's row. */
export interface GraphKey {
    schema: "graph";
    graph: string;
    triple: string;
    uuid: string;
    family: string;
    timestamp_us: number;
    rows: (KeyBytes & QualifierBytes & { index: "SPO" | "SOP" | "POS" | "OSP" })[];
    graph_row: KeyBytes & QualifierBytes;
}
"#;

fn doc(d: Doc) -> JsValue {
    js::to_js(&serde_json::Value::Object(d))
}

fn explain_error(e: ExplainError) -> JsValue {
    let code = match e {
        ExplainError::NotAKey { .. } => "not_a_row_key",
        ExplainError::UnknownKey { .. } | ExplainError::NoLayoutFits { .. } => "unknown_row_key",
        ExplainError::BadArgument { .. } => "invalid_argument",
        // A reason added later: still the caller's input that was refused.
        _ => "invalid_argument",
    };
    js::error(code, &e.to_string())
}

/// Decodes a row key. `schema` is `"auto"` (the first of gold, s3, graph, mt whose decoder
/// reads the key and whose layout it fits — a node row's hash prefix must be its name's;
/// none: `unknown_row_key`, "no schema's layout fits this key"
/// with each schema's reason) or one
/// of `"mt"`, `"gold"`, `"s3"`, `"graph"` (`mounttable`, `tracestore`, `objmeta`, `triples`
/// also accepted). `key` is a `Uint8Array` or escaped key text (`\xHH`) or `hex:…`. Returns an
/// object with `schema`, `row_key`, `row_key_hex`, the schema's fields and `segments` (the
/// key's byte runs from its codec: `[{start, end, field, meaning, bytes, bytes_hex}]`); throws an `Error`
/// whose `code` is `not_a_row_key` / `unknown_row_key` / `invalid_argument`.
#[wasm_bindgen(js_name = decodeKey, unchecked_return_type = "DecodedKey")]
pub fn decode_key(
    #[wasm_bindgen(
        unchecked_param_type = "KeySchemaName | \"auto\" | \"mounttable\" | \"tracestore\" | \"objmeta\" | \"triples\""
    )]
    schema: &str,
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] key: JsValue,
) -> Result<JsValue, JsValue> {
    let bytes = js::key_bytes(&key)?;
    if schema == "auto" {
        return explain::decode_auto_plausible(&bytes)
            .map(|(_, d)| doc(d))
            .map_err(explain_error);
    }
    let s = Schema::parse(schema).ok_or_else(|| {
        js::invalid(format!(
            "unknown schema {schema:?} (auto, mt, gold, s3, graph)"
        ))
    })?;
    explain::decode_segmented(s, &bytes)
        .map(doc)
        .map_err(explain_error)
}

/// The node row key of a mount table name: `{schema, name, row_key, row_key_hex}`.
#[wasm_bindgen(js_name = encodeMtKey, unchecked_return_type = "MtKey")]
pub fn encode_mt_key(name: &str) -> JsValue {
    doc(explain::encode_mt(name))
}

/// The rows of a trace at commit `repoIndex` with trace id `subkey` (e.g. `,0=1,1=3,`): trace
/// row, options row, ops row, shard, tile, and the qualifier in both layouts.
#[wasm_bindgen(js_name = encodeGoldTraceKey, unchecked_return_type = "GoldTraceKey")]
pub fn encode_gold_trace_key(
    #[wasm_bindgen(js_name = repoIndex)] repo_index: f64,
    subkey: &str,
) -> Result<JsValue, JsValue> {
    let repo_index = js::to_i64(repo_index, "repoIndex")?;
    explain::encode_gold_trace(repo_index, subkey)
        .map(doc)
        .map_err(explain_error)
}

/// The digest-map row and qualifier of a digest (32 hex characters).
#[wasm_bindgen(js_name = encodeGoldDigestKey, unchecked_return_type = "GoldDigestKey")]
pub fn encode_gold_digest_key(digest: &str) -> Result<JsValue, JsValue> {
    explain::encode_gold_digest(digest)
        .map(doc)
        .map_err(explain_error)
}

/// The row of an object's master (`versionId` absent) or of one version; `format` is `v0` or
/// `v1` (default `v1`).
#[wasm_bindgen(js_name = encodeS3Key, unchecked_return_type = "S3Key")]
pub fn encode_s3_key(
    bucket: &str,
    key: &str,
    #[wasm_bindgen(js_name = versionId)] version_id: Option<String>,
    #[wasm_bindgen(unchecked_optional_param_type = "\"v0\" | \"v1\" | null")] format: Option<
        String,
    >,
) -> Result<JsValue, JsValue> {
    explain::encode_s3(
        bucket,
        key,
        version_id.as_deref(),
        format.as_deref().unwrap_or("v1"),
    )
    .map(doc)
    .map_err(explain_error)
}

/// The four index rows of a triple (BadWolf text, tab- or space-separated) in `graph`, and the
/// graph row.
#[wasm_bindgen(js_name = encodeGraphKey, unchecked_return_type = "GraphKey")]
pub fn encode_graph_key(graph: &str, triple: &str) -> Result<JsValue, JsValue> {
    explain::encode_graph(graph, triple)
        .map(doc)
        .map_err(explain_error)
}

/// Parses escaped key text (`\xHH`, `\\`) or `hex:…` into bytes.
#[wasm_bindgen(js_name = parseKey)]
pub fn parse_key(text: &str) -> Result<Vec<u8>, JsValue> {
    escape::parse(text).map_err(|e| js::invalid(format!("key {text:?}: {e}")))
}

/// Bytes as escaped key text: printable ASCII verbatim, `\` as `\\`, others as `\xHH`.
#[wasm_bindgen(js_name = escapeKey)]
pub fn escape_key(bytes: &[u8]) -> String {
    escape::escape(bytes)
}
