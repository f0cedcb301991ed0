//! Row keys explained: any schema's row key as a JSON object of named fields, and each schema's
//! key encoders with every derived key spelled out.
//!
//! This is the one place that turns keys into documents for people and scripts; the `rowkit key
//! encode|decode` commands and the wasm package's `decodeKey`/`encode*` both call it, so the CLI
//! and the browser show the same fields. The key layouts themselves stay in each schema's
//! codec module; this module only calls their encoders and decoders.
//!
//! Every byte string appears twice: as escaped key text (`crate::escape`) under its name and as
//! lowercase hex under `<name>_hex`. Every document carries `"schema"`.
//!
//! ```
//! use rowkit_codec::explain::{self, Schema};
//! let doc = explain::decode(Schema::Mt, b"88e481b8/foo").unwrap();
//! assert_eq!(doc["name"], "foo");
//! let (schema, _) = explain::decode_auto(b"88e481b8/foo").unwrap();
//! assert_eq!(schema, Schema::Mt);
//! ```

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{Map, Value, json};

use crate::escape::escape;
use crate::mounttable::{self, CounterKind};
use crate::objmeta::keys::{self as objmeta_keys, KeyKind, VFormat};
use crate::tracestore::cells::{
    cell_to_digest, digest_map_qualifier, digest_map_row, digest_to_cell, normalize_digest,
};
use crate::tracestore::keys::{
    self as gold_keys, digest_id_trace_qualifier, md5_trace_qualifier, ops_row_name,
    options_row_name, repo_index_position, shard_of, trace_row_name,
};
use crate::triples::Triple;
use crate::triples::keys::{self as triple_keys, DecodedKey};

/// A JSON object of named fields.
pub type Doc = Map<String, Value>;

/// The four schemas, by their CLI names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    /// Vanadium mount table (`mt`).
    Mt,
    /// Skia Gold trace store (`gold`).
    Gold,
    /// Arsenal object metadata (`s3`).
    S3,
    /// BadWolf triples (`graph`).
    Graph,
}

impl Schema {
    /// Every schema, in the order [`decode_auto`] tries them.
    pub const AUTO_ORDER: [Schema; 4] = [Schema::Gold, Schema::S3, Schema::Graph, Schema::Mt];

    /// The CLI name (`mt`, `gold`, `s3`, `graph`).
    pub fn name(self) -> &'static str {
        match self {
            Schema::Mt => "mt",
            Schema::Gold => "gold",
            Schema::S3 => "s3",
            Schema::Graph => "graph",
        }
    }

    /// Parses a CLI name; also accepts the schema module names (`mounttable`, `tracestore`,
    /// `objmeta`, `triples`).
    pub fn parse(name: &str) -> Option<Schema> {
        match name {
            "mt" | "mounttable" => Some(Schema::Mt),
            "gold" | "tracestore" => Some(Schema::Gold),
            "s3" | "objmeta" => Some(Schema::S3),
            "graph" | "triples" => Some(Schema::Graph),
            _ => None,
        }
    }
}

/// Why a key could not be explained or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExplainError {
    /// The bytes are not a row key of `schema`.
    #[error("{key} is not a {schema} row key: {reason}")]
    NotAKey {
        /// The schema tried.
        schema: &'static str,
        /// The key as escaped text.
        key: String,
        /// What the schema's decoder said.
        reason: String,
    },
    /// `decode_auto`: no schema decodes the key.
    #[error("{key} is not a row key of any known schema")]
    UnknownKey {
        /// The key as escaped text.
        key: String,
    },
    /// [`decode_auto_plausible`]: no schema both decodes the key and fits it by its layout's
    /// own rules; why not, per schema in [`Schema::AUTO_ORDER`].
    #[error("no schema's layout fits this key: {}", reasons.join("; "))]
    NoLayoutFits {
        /// The key as escaped text.
        key: String,
        /// `"<schema>: <why not>"`, one per schema.
        reasons: Vec<String>,
    },
    /// An encoder's argument is invalid.
    #[error("{what}: {reason}")]
    BadArgument {
        /// The argument.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

/// Inserts `bytes` under `name` as escaped text and under `<name>_hex` as lowercase hex.
pub fn bytes_fields(map: &mut Doc, name: &str, bytes: &[u8]) {
    map.insert(name.to_string(), Value::String(escape(bytes)));
    map.insert(format!("{name}_hex"), Value::String(hex::encode(bytes)));
}

/// `{"row_key": …, "row_key_hex": …}`.
fn key_doc(key: &[u8]) -> Value {
    let mut m = Map::new();
    bytes_fields(&mut m, "row_key", key);
    Value::Object(m)
}

fn not_a_key(schema: Schema, key: &[u8], reason: impl ToString) -> ExplainError {
    ExplainError::NotAKey {
        schema: schema.name(),
        key: escape(key),
        reason: reason.to_string(),
    }
}

fn new_doc(schema: Schema) -> Doc {
    let mut m = Map::new();
    m.insert("schema".into(), Value::from(schema.name()));
    m
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Explains `key` as a row key of `schema`.
pub fn decode(schema: Schema, key: &[u8]) -> Result<Doc, ExplainError> {
    match schema {
        Schema::Mt => decode_mt(key),
        Schema::Gold => decode_gold(key),
        Schema::S3 => decode_s3(key),
        Schema::Graph => decode_graph(key),
    }
}

/// Explains `key` with the first schema (in [`Schema::AUTO_ORDER`]) that decodes it. The mount
/// table comes last: any key of 9 or more bytes reads as a node (with its hash check reported),
/// so it must not shadow the stricter decoders.
pub fn decode_auto(key: &[u8]) -> Result<(Schema, Doc), ExplainError> {
    Schema::AUTO_ORDER
        .iter()
        .find_map(|&s| decode(s, key).ok().map(|d| (s, d)))
        .ok_or_else(|| ExplainError::UnknownKey { key: escape(key) })
}

/// Whether a decoded key is one its schema's writers could have written, by the layout's own
/// rules, not only its syntax: a mount-table node row's hash prefix is the FNV-1 hash of its
/// name (`mounttable.md` 4.2; any 9 bytes read as a node otherwise). The other decoders are
/// strict already: a trace-store key has its fixed grammar (its shard is not checked: the
/// spec's `shardedRowName` examples take any shard), an s3 key a known collection, a graph key
/// an exact length. `Err`: why it does not fit.
pub fn plausible(schema: Schema, doc: &Doc) -> Result<(), String> {
    if schema == Schema::Mt && doc.get("hash_ok") == Some(&Value::Bool(false)) {
        return Err(format!(
            "the prefix {} is not the hash of the name {}",
            doc.get("hash").and_then(Value::as_str).unwrap_or_default(),
            doc.get("name").map(Value::to_string).unwrap_or_default()
        ));
    }
    Ok(())
}

/// Explains `key` with the first schema (in [`Schema::AUTO_ORDER`]) that decodes it and that
/// it fits ([`plausible`]), with its [`segments`]; the key inspector's "auto". Unlike
/// [`decode_auto`] (the CLI's `key decode`, which reports a bad hash as `hash_ok: false`), a
/// text such as `hello world` is no schema's key.
pub fn decode_auto_plausible(key: &[u8]) -> Result<(Schema, Doc), ExplainError> {
    let mut reasons = Vec::new();
    for schema in Schema::AUTO_ORDER {
        match decode(schema, key).and_then(|d| {
            plausible(schema, &d)
                .map(|()| d)
                .map_err(|r| not_a_key(schema, key, r))
        }) {
            Ok(mut doc) => {
                doc.insert("segments".into(), segments(schema, key)?);
                return Ok((schema, doc));
            }
            Err(ExplainError::NotAKey { reason, .. }) => {
                reasons.push(format!("{}: {reason}", schema.name()));
            }
            Err(other) => reasons.push(format!("{}: {other}", schema.name())),
        }
    }
    Err(ExplainError::NoLayoutFits {
        key: escape(key),
        reasons,
    })
}

/// The byte runs of `key` as a row key of `schema`, from the schema's codec (`row_key_segments`
/// next to each key decoder): `[{start, end, field, meaning, bytes, bytes_hex}]`, covering the
/// whole key in order. The key inspector colours a key by them.
pub fn segments(schema: Schema, key: &[u8]) -> Result<Value, ExplainError> {
    let list = match schema {
        Schema::Mt => mounttable::counter_row_key_segments(key)
            .or_else(|| mounttable::row_key_segments(key))
            .ok_or_else(|| {
                not_a_key(
                    schema,
                    key,
                    format!("{} bytes, at least 9 needed", key.len()),
                )
            })?,
        Schema::Gold => gold_keys::row_key_segments(key).map_err(|e| not_a_key(schema, key, e))?,
        Schema::S3 => objmeta_keys::row_key_segments(key).map_err(|e| not_a_key(schema, key, e))?,
        Schema::Graph => {
            triple_keys::row_key_segments(key).map_err(|e| not_a_key(schema, key, e))?
        }
    };
    Ok(Value::Array(
        list.iter()
            .map(|g| {
                let mut m = Map::new();
                m.insert("start".into(), Value::from(g.start));
                m.insert("end".into(), Value::from(g.end));
                m.insert("field".into(), Value::from(g.field));
                m.insert("meaning".into(), Value::from(g.meaning));
                bytes_fields(&mut m, "bytes", key.get(g.start..g.end).unwrap_or_default());
                Value::Object(m)
            })
            .collect(),
    ))
}

/// [`decode`] with the key's [`segments`] under `segments`.
pub fn decode_segmented(schema: Schema, key: &[u8]) -> Result<Doc, ExplainError> {
    let mut doc = decode(schema, key)?;
    doc.insert("segments".into(), segments(schema, key)?);
    Ok(doc)
}

/// [`decode_auto`] with the key's [`segments`] under `segments`.
pub fn decode_auto_segmented(key: &[u8]) -> Result<(Schema, Doc), ExplainError> {
    let (schema, mut doc) = decode_auto(key)?;
    doc.insert("segments".into(), segments(schema, key)?);
    Ok((schema, doc))
}

/// A mount table key: a counter row (`kind: counter`) or a node row (`kind: node`, with the
/// name and whether its FNV-1 hash prefix matches).
pub fn decode_mt(key: &[u8]) -> Result<Doc, ExplainError> {
    let mut m = new_doc(Schema::Mt);
    if let Some((kind, creator)) = mounttable::decode_counter_row_key(key) {
        m.insert("kind".into(), json!("counter"));
        bytes_fields(&mut m, "row_key", key);
        m.insert(
            "counter".into(),
            json!(match kind {
                CounterKind::Nodes => "nodes",
                CounterKind::Servers => "servers",
            }),
        );
        m.insert("creator".into(), json!(text(creator)));
        return Ok(m);
    }
    let Some(name) = mounttable::decode_row_key(key) else {
        return Err(not_a_key(
            Schema::Mt,
            key,
            format!("{} bytes, at least 9 needed", key.len()),
        ));
    };
    let name_text = text(name);
    let hash = text(key.get(..8).unwrap_or_default());
    let hash_ok = mounttable::row_key(&name_text) == key;
    m.insert("kind".into(), json!("node"));
    bytes_fields(&mut m, "row_key", key);
    m.insert("name".into(), json!(name_text));
    m.insert("hash".into(), json!(hash));
    m.insert("hash_ok".into(), json!(hash_ok));
    Ok(m)
}

/// A trace store key: row type, shard (and whether it matches the subkey), tile and the repo
/// indexes it covers, subkey.
pub fn decode_gold(key: &[u8]) -> Result<Doc, ExplainError> {
    let d = gold_keys::decode_row_key(key).map_err(|e| not_a_key(Schema::Gold, key, e))?;
    let mut m = new_doc(Schema::Gold);
    bytes_fields(&mut m, "row_key", key);
    m.insert("type".into(), Value::from(d.row_type.name()));
    m.insert("shard".into(), d.shard.map_or(Value::Null, Value::from));
    m.insert(
        "shard_ok".into(),
        d.shard_ok().map_or(Value::Null, Value::from),
    );
    m.insert("tile_key".into(), Value::from(d.tile_key));
    let index = d.tile_index();
    m.insert("tile_index".into(), index.map_or(Value::Null, Value::from));
    m.insert(
        "first_repo_index".into(),
        index.map_or(Value::Null, |i| Value::from(u64::from(i) * 256)),
    );
    m.insert(
        "last_repo_index".into(),
        index.map_or(Value::Null, |i| Value::from(u64::from(i) * 256 + 255)),
    );
    bytes_fields(&mut m, "subkey", &d.subkey);
    Ok(m)
}

fn key_kind_name(kind: KeyKind) -> &'static str {
    match kind {
        KeyKind::Master => "master",
        KeyKind::Version => "version",
        KeyKind::Replay => "replay",
        KeyKind::Metastore => "metastore",
        KeyKind::Infostore => "infostore",
    }
}

/// An object metadata key: collection, bucket, kind, key format, object key, version id.
pub fn decode_s3(key: &[u8]) -> Result<Doc, ExplainError> {
    let d = objmeta_keys::decode_row_key(key).map_err(|e| not_a_key(Schema::S3, key, e))?;
    let mut m = new_doc(Schema::S3);
    bytes_fields(&mut m, "row_key", key);
    m.insert("collection".into(), json!(d.collection));
    m.insert("bucket".into(), json!(d.bucket));
    m.insert("kind".into(), json!(key_kind_name(d.kind)));
    m.insert("format".into(), json!(d.format.map(VFormat::as_str)));
    m.insert("object_key".into(), json!(d.object_key));
    m.insert("version_id".into(), json!(d.version_id));
    bytes_fields(&mut m, "arsenal_key", d.arsenal_key.as_bytes());
    Ok(m)
}

/// A triple store key: a triple index row (graph, index, the three UUIDs) or a graph row.
pub fn decode_graph(key: &[u8]) -> Result<Doc, ExplainError> {
    let decoded = triple_keys::decode_row_key(key).map_err(|e| not_a_key(Schema::Graph, key, e))?;
    let mut m = new_doc(Schema::Graph);
    match &decoded {
        DecodedKey::Triple {
            graph,
            index,
            uuids,
        } => {
            m.insert("kind".into(), json!("triple"));
            bytes_fields(&mut m, "row_key", key);
            m.insert("graph".into(), json!(text(graph)));
            m.insert("index".into(), json!(index.name()));
            m.insert("s".into(), json!(uuids.s.to_text()));
            m.insert("p".into(), json!(uuids.p.to_text()));
            m.insert("o".into(), json!(uuids.o.to_text()));
        }
        DecodedKey::Graph { graph } => {
            m.insert("kind".into(), json!("graph"));
            bytes_fields(&mut m, "row_key", key);
            m.insert("graph".into(), json!(text(graph)));
        }
    }
    Ok(m)
}

/// The node row of a mount table name (a leading `/` is ignored, the name cleaned as btmtd
/// does): `name`, `row_key`.
pub fn encode_mt(name: &str) -> Doc {
    let key = mounttable::row_key(name.trim_start_matches('/'));
    let mut m = new_doc(Schema::Mt);
    m.insert("name".into(), json!(name));
    bytes_fields(&mut m, "row_key", &key);
    m
}

/// The rows of one trace at commit `repo_index`: tile position, shard, trace row, options row,
/// ops row and the trace qualifier in both layouts.
pub fn encode_gold_trace(repo_index: i64, subkey: &str) -> Result<Doc, ExplainError> {
    let pos = repo_index_position(repo_index).map_err(|e| ExplainError::BadArgument {
        what: "repo index",
        reason: e.to_string(),
    })?;
    let row = trace_row_name(pos.tile_key, subkey.as_bytes());
    let mut m = new_doc(Schema::Gold);
    m.insert("repo_index".into(), Value::from(repo_index));
    m.insert("tile_index".into(), Value::from(pos.tile_index));
    m.insert("tile_key".into(), Value::from(pos.tile_key));
    m.insert("offset".into(), Value::from(pos.offset));
    m.insert("shard".into(), Value::from(shard_of(subkey.as_bytes())));
    bytes_fields(&mut m, "row_key", &row);
    m.insert(
        "options_row".into(),
        key_doc(&options_row_name(pos.tile_key, subkey.as_bytes())),
    );
    m.insert("ops_row".into(), key_doc(&ops_row_name(pos.tile_key)));
    for (name, q) in [
        ("qualifier_md5", md5_trace_qualifier(pos.offset)),
        ("qualifier_digest_id", digest_id_trace_qualifier(pos.offset)),
    ] {
        let mut qm = Map::new();
        bytes_fields(&mut qm, "qualifier", &q);
        m.insert(name.into(), Value::Object(qm));
    }
    Ok(m)
}

/// The digest map cell of a digest (32 hex characters, normalised): row, qualifier, md5-layout
/// cell bytes.
pub fn encode_gold_digest(digest_hex: &str) -> Result<Doc, ExplainError> {
    let digest = normalize_digest(digest_hex);
    let (Some(row), Some(q)) = (digest_map_row(&digest), digest_map_qualifier(&digest)) else {
        return Err(ExplainError::BadArgument {
            what: "digest",
            reason: format!("{digest_hex:?} is not a digest (32 hex characters)"),
        });
    };
    let cell = digest_to_cell(&digest);
    debug_assert_eq!(cell_to_digest(&cell), digest);
    let mut m = new_doc(Schema::Gold);
    m.insert("digest".into(), Value::from(digest));
    m.insert("md5_cell_hex".into(), Value::from(hex::encode(cell)));
    bytes_fields(&mut m, "row_key", &row);
    bytes_fields(&mut m, "qualifier", &q);
    Ok(m)
}

/// The row of an object's master (no `version_id`) or of one version, in key format `format`
/// (`v0` or `v1`).
pub fn encode_s3(
    bucket: &str,
    object_key: &str,
    version_id: Option<&str>,
    format: &str,
) -> Result<Doc, ExplainError> {
    let vf = VFormat::parse(format).map_err(|e| ExplainError::BadArgument {
        what: "format",
        reason: e.to_string(),
    })?;
    let collection = objmeta_keys::collection_for_bucket(bucket);
    let (kind, arsenal_key) = match version_id {
        Some(v) => ("version", objmeta_keys::version_key(vf, object_key, v)),
        None => ("master", objmeta_keys::master_key(vf, object_key)),
    };
    let rk = objmeta_keys::row_key(collection, &arsenal_key);
    let mut m = new_doc(Schema::S3);
    m.insert("bucket".into(), json!(bucket));
    m.insert("collection".into(), json!(collection));
    m.insert("format".into(), json!(vf.as_str()));
    m.insert("kind".into(), json!(kind));
    m.insert("object_key".into(), json!(object_key));
    m.insert("version_id".into(), json!(version_id));
    bytes_fields(&mut m, "arsenal_key", arsenal_key.as_bytes());
    bytes_fields(&mut m, "row_key", &rk);
    Ok(m)
}

/// The four index rows (and their cells) of `triple` (BadWolf text) in `graph`, plus the graph
/// row.
pub fn encode_graph(graph: &str, triple: &str) -> Result<Doc, ExplainError> {
    triple_keys::check_graph_id(graph.as_bytes()).map_err(|e| ExplainError::BadArgument {
        what: "graph",
        reason: e.to_string(),
    })?;
    let t = Triple::parse(triple.as_bytes()).map_err(|e| ExplainError::BadArgument {
        what: "triple",
        reason: e.to_string(),
    })?;
    Ok(encode_graph_triple(graph, &t))
}

/// [`encode_graph`] for a parsed triple.
pub fn encode_graph_triple(graph: &str, t: &Triple) -> Doc {
    let cells = triple_keys::triple_cells(graph.as_bytes(), t);
    let rows: Vec<Value> = cells
        .iter()
        .map(|c| {
            let mut m = Map::new();
            bytes_fields(&mut m, "row_key", &c.row_key);
            bytes_fields(&mut m, "qualifier", c.qualifier);
            m.insert("index".into(), json!(c.index.name()));
            Value::Object(m)
        })
        .collect();
    let mut graph_row = Map::new();
    bytes_fields(
        &mut graph_row,
        "row_key",
        &triple_keys::graph_row_key(graph.as_bytes()),
    );
    bytes_fields(&mut graph_row, "qualifier", triple_keys::GRAPH_QUALIFIER);
    let mut m = new_doc(Schema::Graph);
    m.insert("graph".into(), json!(graph));
    m.insert("triple".into(), json!(text(&t.to_text())));
    m.insert("uuid".into(), json!(t.uuid().to_text()));
    m.insert("family".into(), json!(cells[0].family));
    m.insert("timestamp_us".into(), json!(cells[0].timestamp.0));
    m.insert("rows".into(), Value::Array(rows));
    m.insert("graph_row".into(), Value::Object(graph_row));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_round_trips_through_auto() {
        let mt = encode_mt("/a/b");
        let key = hex::decode(mt["row_key_hex"].as_str().unwrap()).unwrap();
        assert_eq!(decode_auto(&key).unwrap().0, Schema::Mt);

        let s3 = encode_s3("bkt", "obj", None, "v1").unwrap();
        let key = hex::decode(s3["row_key_hex"].as_str().unwrap()).unwrap();
        let (schema, doc) = decode_auto(&key).unwrap();
        assert_eq!(
            (schema, doc["object_key"].as_str()),
            (Schema::S3, Some("obj"))
        );

        let gold = encode_gold_trace(1000, ",0=1,").unwrap();
        let key = hex::decode(gold["row_key_hex"].as_str().unwrap()).unwrap();
        let (schema, doc) = decode_auto(&key).unwrap();
        assert_eq!(schema, Schema::Gold);
        assert_eq!(doc["shard_ok"], Value::Bool(true));

        let g = encode_graph("g", "/u<a>\t\"p\"@[]\t/u<b>").unwrap();
        let key = hex::decode(g["rows"][0]["row_key_hex"].as_str().unwrap()).unwrap();
        assert_eq!(decode_auto(&key).unwrap().0, Schema::Graph);
    }

    /// Every key's segments cover it byte for byte, in order, and name the fields the decoder
    /// reads from the same bytes.
    #[test]
    fn segments_cover_every_key_and_match_the_decoded_fields() {
        let hex_key = |doc: &Doc, name: &str| hex::decode(doc[name].as_str().unwrap()).unwrap();
        let s3_version = encode_s3(
            "bkt",
            "photos/cat.jpg",
            Some("98500000000000999999RG001"),
            "v1",
        )
        .unwrap();
        let graph = encode_graph("g", "/u<a>\t\"p\"@[]\t/u<b>").unwrap();
        let cases: Vec<(Schema, Vec<u8>)> = alloc::vec![
            (Schema::Mt, hex_key(&encode_mt("/a/bc/d"), "row_key_hex")),
            (Schema::Mt, b"num-nodes-per-user:dev.v.io:u:joe".to_vec()),
            (
                Schema::Gold,
                hex_key(&encode_gold_trace(1000, ",0=1,").unwrap(), "row_key_hex"),
            ),
            (Schema::Gold, ops_row_name(2_147_483_644)),
            (Schema::S3, hex_key(&s3_version, "row_key_hex")),
            (
                Schema::S3,
                hex_key(&encode_s3("bkt", "k", None, "v0").unwrap(), "row_key_hex"),
            ),
            (Schema::S3, b"__metastore\0bkt".to_vec()),
            (
                Schema::Graph,
                hex::decode(graph["rows"][1]["row_key_hex"].as_str().unwrap()).unwrap(),
            ),
            (
                Schema::Graph,
                hex_key(graph["graph_row"].as_object().unwrap(), "row_key_hex"),
            ),
        ];
        for (schema, key) in cases {
            let segs = segments(schema, &key).unwrap();
            let segs = segs.as_array().unwrap();
            let mut at = 0;
            for g in segs {
                assert_eq!(g["start"], at, "{schema:?} {}: {segs:?}", escape(&key));
                at = g["end"].as_u64().unwrap();
            }
            assert_eq!(
                at as usize,
                key.len(),
                "{schema:?} {}: {segs:?}",
                escape(&key)
            );
            let doc = decode(schema, &key).unwrap();
            let field = |f: &str| -> Vec<&str> {
                segs.iter()
                    .filter(|g| g["field"] == f)
                    .map(|g| g["bytes"].as_str().unwrap())
                    .collect()
            };
            match schema {
                Schema::Mt if doc["kind"] == "node" => {
                    assert_eq!(field("name").join("/"), doc["name"].as_str().unwrap());
                    assert_eq!(field("hash"), [doc["hash"].as_str().unwrap()]);
                }
                Schema::Mt => assert_eq!(field("creator"), [doc["creator"].as_str().unwrap()]),
                Schema::Gold => {
                    let tile = field("tile key");
                    assert_eq!(
                        tile[0].parse::<i64>().unwrap(),
                        doc["tile_key"].as_i64().unwrap()
                    );
                    assert_eq!(field("subkey").concat(), doc["subkey"].as_str().unwrap());
                }
                Schema::S3 if doc["kind"] == "metastore" => {
                    assert_eq!(
                        field("internal key"),
                        [doc["arsenal_key"].as_str().unwrap()]
                    );
                }
                Schema::S3 => {
                    assert_eq!(field("collection"), [doc["collection"].as_str().unwrap()]);
                    assert_eq!(field("object key"), [doc["object_key"].as_str().unwrap()]);
                    let version: Vec<&str> = doc["version_id"].as_str().into_iter().collect();
                    assert_eq!(field("version id"), version);
                }
                Schema::Graph if doc["kind"] == "triple" => {
                    for f in ["s", "p", "o"] {
                        let name = match f {
                            "s" => "subject",
                            "p" => "predicate",
                            _ => "object",
                        };
                        assert_eq!(field(name), [doc[f].as_str().unwrap()], "{f}");
                    }
                    assert_eq!(field("index"), [doc["index"].as_str().unwrap()]);
                }
                Schema::Graph => assert_eq!(field("graph"), [doc["graph"].as_str().unwrap()]),
            }
        }
        assert!(segments(Schema::Gold, b"nope").is_err());
        assert!(segments(Schema::Mt, b"short").is_err());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(matches!(
            decode_auto(b"x"),
            Err(ExplainError::UnknownKey { .. })
        ));
        assert!(decode(Schema::Gold, b"").is_err());
        assert!(encode_gold_trace(-1, "").is_err());
        assert!(encode_gold_digest("zz").is_err());
        assert!(encode_s3("b", "k", None, "v9").is_err());
        assert!(encode_graph("g", "not a triple").is_err());
    }

    #[test]
    fn auto_decoding_needs_a_key_its_layout_fits() {
        // Text is no schema's key: the mount table's decoder reads any 9 bytes, but the hash
        // prefix of "hello world" is not the hash of the name after it, "ld".
        let e = decode_auto_plausible(b"hello world").unwrap_err();
        let message = e.to_string();
        assert!(
            message.starts_with("no schema's layout fits this key: gold: "),
            "{message}"
        );
        assert!(
            message.contains("mt: the prefix hello wo is not the hash of the name \"ld\""),
            "{message}"
        );
        assert!(
            message.contains("; s3: ") && message.contains("; graph: "),
            "{message}"
        );
        // The CLI's auto decoding still reports such a key as a node with a bad hash.
        assert_eq!(decode_auto(b"hello world").unwrap().0, Schema::Mt);
        // Keys their writers wrote decode as before, with their segments.
        let (schema, doc) = decode_auto_plausible(b"88e481b8/foo").unwrap();
        assert_eq!(schema, Schema::Mt);
        assert_eq!(doc["name"], "foo");
        assert!(doc["segments"].is_array());
        let gold = b"09:ts:t:2147483646:,0=1,1=3,3=0,";
        assert_eq!(decode_auto_plausible(gold).unwrap().0, Schema::Gold);
        // The migration marker row (`docs/migration.md` §2.1, §9).
        let (schema, doc) = decode_auto_plausible(b":rk:m:0000000000:").unwrap();
        assert_eq!(schema, Schema::Gold);
        assert_eq!(doc["type"], "migration");
        assert_eq!(doc["tile_index"], Value::Null);
        assert_eq!(decode_auto_plausible(b"b\x00k").unwrap().0, Schema::S3);
        // A node row's hash must be its name's.
        let e = decode_auto_plausible(b"00000000/foo").unwrap_err();
        assert!(
            e.to_string()
                .contains("mt: the prefix 00000000 is not the hash of the name \"foo\""),
            "{e}"
        );
    }
}
