#![allow(clippy::unwrap_used)]
//! Every codec case of `$ROWKIT_SHARED/vectors/tracestore.json`, and the codec side of the
//! machine-level cases (allocation and assignment: counter answers, reserved ranges, lookup
//! rows, insert cells and outcomes); the machines replay those in rowkit-store's
//! `tracestore_vectors`. The file is read at run time into strict structs (`common`): every
//! field of every case is checked, and a case kind, a field or an op this file does not know
//! fails the test.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{Cases, check_meta, hex, load, required_nullable, unhex};
use rowkit_codec::model::{GcRule, Mutation, Timestamp, TimestampRange};
use rowkit_codec::tracestore::cells::*;
use rowkit_codec::tracestore::keys::*;
use rowkit_codec::tracestore::ops::{parse_options_text, trace_id_text};
use rowkit_codec::tracestore::*;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    meta: Value,
    tile_keys: Cases<TileKey>,
    repo_index_to_tile: Cases<RepoIndexToTile>,
    ops_row_names: Cases<OpsRowName>,
    shards: Cases<Shard>,
    sharded_row_names: Cases<ShardedRowName>,
    calc_sharded_row_name: Cases<CalcShardedRowName>,
    shard_prefix_ranges: Cases<ShardPrefixRange>,
    extract_subkey: Cases<ExtractSubkey>,
    ops_encode: Cases<OpsEncode>,
    ops_decode: Cases<OpsDecode>,
    ops_update: Cases<OpsUpdate>,
    ops_gob: Cases<OpsGob>,
    ops_gob_decode_only: Cases<OpsGobDecodeOnly>,
    digest_to_cell: Cases<DigestCell>,
    cell_to_digest: Cases<DigestCell>,
    options_value: Cases<OptionsValue>,
    cell_timestamps: Cases<CellTimestamp>,
    trace_column_parse: Cases<TraceColumnParse>,
    table_setup: Cases<TableSetup>,
    layout_detection: Cases<LayoutDetection>,
    digest_normalize: Cases<DigestNormalize>,
    digest_map_cells: Cases<DigestMapCell>,
    digest_map_values: Cases<DigestMapValue>,
    digest_map_value_decode: Cases<DigestMapValueDecode>,
    digest_map_lookup_rows: Cases<DigestMapLookupRows>,
    digest_map_row_counts: Cases<DigestMapRowCount>,
    digest_map_shard_histogram: Cases<ShardHistogram>,
    digest_id_columns: Cases<DigestIdColumn>,
    digest_id_cells: Cases<DigestIdCell>,
    digest_id_cell_decode: Cases<DigestIdCellDecode>,
    digest_id_trace_mutations: Cases<DigestIdTraceMutations>,
    id_counter: Cases<IdCounter>,
    digest_id_allocation: Cases<Allocation>,
    digest_id_assignment: Cases<Assignment>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TileKey {
    tile_index: i64,
    tile_key: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoIndexToTile {
    repo_index: i64,
    tile_key: i64,
    offset: i64,
    column: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpsRowName {
    tile_key: i32,
    row: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Shard {
    subkey: String,
    crc32_ieee: String,
    shard: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShardedRowName {
    shard: u32,
    #[serde(rename = "type")]
    row_type: String,
    tile_key: i32,
    subkey: String,
    row: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CalcShardedRowName {
    tile_key: i32,
    #[serde(rename = "type")]
    row_type: String,
    subkey: String,
    row: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShardPrefixRange {
    shard: u32,
    tile_key: i32,
    #[serde(rename = "type")]
    row_type: String,
    start: String,
    end_exclusive: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExtractSubkey {
    row: String,
    subkey: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpsEncode {
    key_order: Vec<String>,
    param_set: ParamSet,
    params: Params,
    encoded: Option<String>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpsDecode {
    key_order: Vec<String>,
    param_set: ParamSet,
    encoded: String,
    params: Option<Params>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpsUpdate {
    key_order: Vec<String>,
    param_set: ParamSet,
    input_param_set: ParamSet,
    delta: ParamSet,
    new_key_order: Vec<String>,
    new_param_set: ParamSet,
    write_needed: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpsGob {
    key_order: Vec<String>,
    param_set: ParamSet,
    gob_hex: String,
    length: usize,
    md5_hex: String,
    note: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpsGobDecodeOnly {
    gob_hex: String,
    key_order: Vec<String>,
    param_set: ParamSet,
    note: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestCell {
    digest: String,
    cell_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionsValue {
    options: Params,
    cell: String,
    parsed: Params,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CellTimestamp {
    unix_seconds: i64,
    nanos: u32,
    timestamp_micros: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceColumnParse {
    qualifier: String,
    offset: Option<u32>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TableSetup {
    layout: String,
    requests: Vec<SetupRequestCase>,
}

/// One admin request of a layout's setup (`spec/tracestore.md` 8), by its `op`.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", deny_unknown_fields)]
enum SetupRequestCase {
    CreateTable {
        /// Family name -> its GC rule (`null`: none).
        families: BTreeMap<String, Option<GcRuleCase>>,
        ignore_code: String,
    },
    CreateColumnFamily {
        family: String,
        #[serde(deserialize_with = "required_nullable")]
        gc_rule: Option<GcRuleCase>,
        ignore_code: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GcRuleCase {
    max_num_versions: Option<u32>,
}

impl GcRuleCase {
    fn rule(rule: &Option<GcRuleCase>) -> Option<GcRule> {
        rule.as_ref()
            .and_then(|r| r.max_num_versions)
            .map(GcRule::MaxNumVersions)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LayoutDetection {
    families: Vec<String>,
    layout: Option<String>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestNormalize {
    digest: String,
    normalized: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestMapCell {
    digest: String,
    prefix: String,
    crc32_ieee: String,
    shard: u32,
    row: String,
    qualifier: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestMapValue {
    digest_id: u64,
    value: String,
    value_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestMapValueDecode {
    value: String,
    digest_id: Option<u64>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestMapLookupRows {
    digests: Vec<String>,
    rows: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestMapRowCount {
    generator: String,
    n: u64,
    distinct_rows: usize,
    rows_one_row_per_digest: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShardHistogram {
    /// `FIRST..LAST (…)`: the inclusive range of hexadecimal prefixes counted.
    prefixes: String,
    rows_per_shard: Vec<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestIdColumn {
    offset: u32,
    qualifier: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestIdCell {
    digest_id: u64,
    cell_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestIdCellDecode {
    cell_hex: String,
    digest_id: Option<u64>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetCellCase {
    family: String,
    qualifier: String,
    timestamp_micros: i64,
    value_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteFromColumnCase {
    family: String,
    qualifier: String,
    start_timestamp_micros: i64,
    end_timestamp_micros: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestIdTraceMutations {
    repo_index: i64,
    subkey: String,
    digest_id: u64,
    ts_micros: i64,
    row: String,
    set: SetCellCase,
    #[serde(deserialize_with = "required_nullable")]
    delete_from_column: Option<DeleteFromColumnCase>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdCounter {
    row: String,
    family: String,
    qualifier: String,
    /// `null`: the counter cell is absent (counts as 0).
    #[serde(deserialize_with = "required_nullable")]
    counter_before: Option<i64>,
    missing: u64,
    increment: u64,
    counter_after: i64,
    cell_hex: String,
}

/// A pool entry: one id, or an inclusive `[first, last]` range.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum PoolEntry {
    Id(u64),
    Range([u64; 2]),
}

fn pool_ids(entries: &[PoolEntry]) -> Vec<u64> {
    entries
        .iter()
        .flat_map(|e| match *e {
            PoolEntry::Id(id) => id..=id,
            PoolEntry::Range([first, last]) => first..=last,
        })
        .collect()
}

/// Inclusive `[first, last]` ranges, in order.
fn id_ranges(ranges: &[[u64; 2]]) -> Vec<u64> {
    ranges.iter().flat_map(|&[a, b]| a..=b).collect()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Allocation {
    description: String,
    #[serde(deserialize_with = "required_nullable")]
    initial_counter: Option<i64>,
    initial_pools: BTreeMap<String, Vec<PoolEntry>>,
    steps: Vec<AllocationStep>,
    final_counter: i64,
}

/// One call of an allocator instance (`spec/tracestore.md` 11.3), by its `op`.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
enum AllocationStep {
    /// `AllocateDigestIds(n)`.
    Allocate {
        allocator: String,
        n: usize,
        /// `null`: no increment was sent.
        #[serde(deserialize_with = "required_nullable")]
        increment: Option<u64>,
        /// The counter value the increment's response carries (other instances may have
        /// moved the counter in between).
        #[serde(deserialize_with = "required_nullable")]
        counter_response: Option<i64>,
        ids_ranges: Vec<[u64; 2]>,
        pool_after_ranges: Vec<[u64; 2]>,
    },
    /// `ReturnDigestIds(ids)`.
    Return {
        allocator: String,
        ids: Vec<u64>,
        pool_after_ranges: Vec<[u64; 2]>,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Assignment {
    description: String,
    #[serde(deserialize_with = "required_nullable")]
    initial_counter: Option<i64>,
    initial_pool_ranges: Vec<[u64; 2]>,
    cache: BTreeMap<String, u64>,
    table_map: BTreeMap<String, u64>,
    concurrent_inserts: BTreeMap<String, u64>,
    now_micros: i64,
    digests: Vec<String>,
    lookup_rows: Vec<String>,
    new_digests: Vec<String>,
    #[serde(deserialize_with = "required_nullable")]
    increment: Option<u64>,
    counter_after: i64,
    inserts: Vec<Insert>,
    reread_rows: Vec<String>,
    ids: BTreeMap<String, u64>,
    pool_after_ranges: Vec<[u64; 2]>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Insert {
    digest: String,
    digest_id: u64,
    row: String,
    predicate_qualifier_regex: String,
    family: String,
    qualifier: String,
    timestamp_micros: i64,
    value: String,
    predicate_matched: bool,
}

fn vectors() -> File {
    let f: File = load("tracestore.json");
    check_meta(&f.meta, "tracestore.md");
    f
}

fn type_char(t: &str) -> char {
    let mut chars = t.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => c,
        _ => panic!("row type {t:?} is not one character"),
    }
}

fn ops(key_order: &[String], param_set: &ParamSet) -> OrderedParamSet {
    OrderedParamSet::from_parts(key_order.to_vec(), param_set.clone())
}

/// Exactly one of a case's `ok` / `error` fields.
fn outcome<'a, T: std::fmt::Debug>(
    ok: &'a Option<T>,
    error: &'a Option<String>,
    what: &dyn std::fmt::Debug,
) -> Result<&'a T, &'a str> {
    match (ok, error) {
        (Some(v), None) => Ok(v),
        (None, Some(e)) => Err(e),
        _ => panic!("{what:?}: exactly one of the result and `error`"),
    }
}

#[test]
fn tile_keys_and_positions() {
    let v = vectors();
    for c in v.tile_keys.non_empty("tile_keys") {
        let key = tile_key(c.tile_index);
        assert_eq!(i64::from(key), c.tile_key, "{c:?}");
    }
    for c in v.repo_index_to_tile.non_empty("repo_index_to_tile") {
        let p = repo_index_position(c.repo_index).unwrap();
        assert_eq!(i64::from(p.tile_key), c.tile_key, "{c:?}");
        assert_eq!(i64::from(p.offset), c.offset, "{c:?}");
        assert_eq!(md5_trace_qualifier(p.offset), c.column.as_bytes(), "{c:?}");
        assert_eq!(
            i64::from(parse_trace_qualifier(c.column.as_bytes()).unwrap()),
            c.offset,
            "{c:?}"
        );
    }
    assert_eq!(
        repo_index_position(2147483648),
        Err(CodecError::BadRepoIndex)
    );
    assert_eq!(repo_index_position(-1), Err(CodecError::BadRepoIndex));
    for c in v.ops_row_names.non_empty("ops_row_names") {
        assert_eq!(ops_row_name(c.tile_key), c.row.as_bytes(), "{c:?}");
    }
}

#[test]
fn shards_and_row_names() {
    let v = vectors();
    for c in v.shards.non_empty("shards") {
        let sub = c.subkey.as_bytes();
        assert_eq!(format!("{:08x}", crc32_ieee(sub)), c.crc32_ieee, "{c:?}");
        assert_eq!(shard_of(sub), c.shard, "{c:?}");
    }
    for c in v.sharded_row_names.non_empty("sharded_row_names") {
        let row = sharded_row_name(
            c.shard,
            type_char(&c.row_type),
            c.tile_key,
            c.subkey.as_bytes(),
        );
        assert_eq!(row, c.row.as_bytes(), "{c:?}");
        assert_eq!(
            extract_subkey(c.row.as_bytes()),
            c.subkey.as_bytes(),
            "{c:?}"
        );
    }
    for c in v.calc_sharded_row_name.non_empty("calc_sharded_row_name") {
        let row = calc_sharded_row_name(c.tile_key, type_char(&c.row_type), c.subkey.as_bytes());
        assert_eq!(row, c.row.as_bytes(), "{c:?}");
    }
    for c in v.shard_prefix_ranges.non_empty("shard_prefix_ranges") {
        let r = shard_prefix_range(c.shard, type_char(&c.row_type), c.tile_key);
        let expected = rowkit_codec::model::RowRange::half_open(
            c.start.as_bytes(),
            c.end_exclusive.as_bytes(),
        );
        assert_eq!(r, expected, "{c:?}");
    }
    for c in v.extract_subkey.non_empty("extract_subkey") {
        assert_eq!(
            extract_subkey(c.row.as_bytes()),
            c.subkey.as_bytes(),
            "{c:?}"
        );
    }
}

#[test]
fn ops_encode_decode_update() {
    let v = vectors();
    for c in v.ops_encode.non_empty("ops_encode") {
        let got = ops(&c.key_order, &c.param_set).encode_params(&c.params);
        match outcome(&c.encoded, &c.error, c) {
            Ok(encoded) => assert_eq!(got.unwrap(), *encoded, "{c:?}"),
            Err(e) => assert_eq!(got.unwrap_err().to_string(), e, "{c:?}"),
        }
    }
    for c in v.ops_decode.non_empty("ops_decode") {
        let got = ops(&c.key_order, &c.param_set).decode_params(c.encoded.as_bytes());
        match outcome(&c.params, &c.error, c) {
            Ok(params) => assert_eq!(got.unwrap(), *params, "{c:?}"),
            Err(e) => assert_eq!(got.unwrap_err().to_string(), e, "{c:?}"),
        }
    }
    for c in v.ops_update.non_empty("ops_update") {
        let mut o = ops(&c.key_order, &c.param_set);
        let delta = o.delta(&c.input_param_set);
        assert_eq!(delta, c.delta, "{c:?}");
        assert_eq!(!delta.is_empty(), c.write_needed, "{c:?}");
        o.update(&c.input_param_set);
        assert_eq!(o.key_order(), c.new_key_order, "{c:?}");
        assert_eq!(*o.param_set(), c.new_param_set, "{c:?}");
        // The indices the update kept are those of the lists it left.
        assert_eq!(o, ops(&c.new_key_order, &c.new_param_set), "{c:?}");
    }
}

#[test]
fn ops_gob_bytes_and_hash() {
    let v = vectors();
    for c in v.ops_gob.non_empty("ops_gob") {
        let what = format!("{} ({c:?})", c.note);
        let o = ops(&c.key_order, &c.param_set);
        // Every ops_gob entry is writer output: the writer produces exactly these bytes.
        let bytes = encode_ops_gob(&o);
        assert_eq!(hex(&bytes), c.gob_hex, "{what}");
        // The vector's bytes: their length, their hash H, and what a reader makes of them.
        let stored = unhex(&c.gob_hex);
        assert_eq!(stored.len(), c.length, "{what}");
        assert_eq!(ops_hash(&stored), c.md5_hex, "{what}");
        assert_eq!(decode_ops_gob(&stored).unwrap(), o, "{what}");
    }
    for c in v.ops_gob_decode_only.non_empty("ops_gob_decode_only") {
        let what = format!("{} ({c:?})", c.note);
        let bytes = unhex(&c.gob_hex);
        assert_eq!(
            decode_ops_gob(&bytes).unwrap(),
            ops(&c.key_order, &c.param_set),
            "{what}"
        );
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert_eq!(
            decode_ops_gob(&trailing).unwrap_err().to_string(),
            "corrupted paramset",
            "{what}"
        );
    }
}

#[test]
fn md5_digest_cells_and_options() {
    let v = vectors();
    for c in v.digest_to_cell.non_empty("digest_to_cell") {
        assert_eq!(hex(&digest_to_cell(&c.digest)), c.cell_hex, "{c:?}");
    }
    for c in v.cell_to_digest.non_empty("cell_to_digest") {
        assert_eq!(cell_to_digest(&unhex(&c.cell_hex)), c.digest, "{c:?}");
    }
    for c in v.options_value.non_empty("options_value") {
        assert_eq!(trace_id_text(&c.options), c.cell, "{c:?}");
        // The vector's stored text parses to its `parsed` map.
        assert_eq!(
            parse_options_text(c.cell.as_bytes()).unwrap(),
            c.parsed,
            "{c:?}"
        );
    }
    for c in v.cell_timestamps.non_empty("cell_timestamps") {
        let ts = cell_timestamp(c.unix_seconds, c.nanos);
        assert_eq!(ts, Timestamp(c.timestamp_micros), "{c:?}");
    }
    for c in v.trace_column_parse.non_empty("trace_column_parse") {
        let got = parse_trace_qualifier(c.qualifier.as_bytes());
        match outcome(&c.offset, &c.error, c) {
            Ok(offset) => assert_eq!(got.unwrap(), *offset, "{c:?}"),
            Err(e) => assert_eq!(got.unwrap_err().to_string(), e, "{c:?}"),
        }
    }
}

#[test]
fn setup_and_detection() {
    let v = vectors();
    for c in v.table_setup.non_empty("table_setup") {
        let layout = Layout::parse(&c.layout).unwrap_or_else(|| panic!("{c:?}: unknown layout"));
        let plan = layout.setup_plan();
        assert_eq!(plan.len(), c.requests.len(), "{c:?}");
        for (p, r) in plan.iter().zip(&c.requests) {
            match (p, r) {
                (
                    SetupRequest::CreateTable { families },
                    SetupRequestCase::CreateTable {
                        families: want,
                        ignore_code,
                    },
                ) => {
                    assert_eq!(ignore_code, "ALREADY_EXISTS", "{c:?}");
                    let got: BTreeMap<&str, Option<GcRule>> = families
                        .iter()
                        .map(|f| (f.name.as_str(), f.gc_rule.clone()))
                        .collect();
                    let want: BTreeMap<&str, Option<GcRule>> = want
                        .iter()
                        .map(|(name, rule)| (name.as_str(), GcRuleCase::rule(rule)))
                        .collect();
                    assert_eq!(got, want, "{c:?}");
                }
                (
                    SetupRequest::CreateColumnFamily { family },
                    SetupRequestCase::CreateColumnFamily {
                        family: name,
                        gc_rule,
                        ignore_code,
                    },
                ) => {
                    assert_eq!(ignore_code, "ALREADY_EXISTS", "{c:?}");
                    assert_eq!(family.name, *name, "{c:?}");
                    assert_eq!(family.gc_rule, GcRuleCase::rule(gc_rule), "{c:?}");
                }
                (p, r) => panic!("{c:?}: the plan has {p:?} where the vector has {r:?}"),
            }
        }
    }
    for c in v.layout_detection.non_empty("layout_detection") {
        let got = detect_layout(&c.families, None);
        match outcome(&c.layout, &c.error, c) {
            Ok(layout) => assert_eq!(got.unwrap().name(), layout, "{c:?}"),
            Err(e) => assert_eq!(got.unwrap_err().to_string(), e, "{c:?}"),
        }
    }
    // Scenario 16/28: a named layout the families contradict.
    assert_eq!(
        detect_layout(&["D", "I", "O", "T"], Some(Layout::Md5)),
        Err(CodecError::LayoutMismatch)
    );
    assert_eq!(
        detect_layout(&["O", "P", "T"], Some(Layout::DigestId)),
        Err(CodecError::LayoutMismatch)
    );
    assert_eq!(
        detect_layout(&["O", "T"], Some(Layout::Md5)),
        Ok(Layout::Md5)
    );
}

#[test]
fn digest_map_codecs() {
    let v = vectors();
    for c in v.digest_normalize.non_empty("digest_normalize") {
        assert_eq!(normalize_digest(&c.digest), c.normalized, "{c:?}");
    }
    for c in v.digest_map_cells.non_empty("digest_map_cells") {
        let d = &c.digest;
        assert_eq!(
            format!("{:08x}", crc32_ieee(c.prefix.as_bytes())),
            c.crc32_ieee,
            "{c:?}"
        );
        assert_eq!(shard_of(c.prefix.as_bytes()), c.shard, "{c:?}");
        let row = digest_map_row(d).unwrap();
        assert_eq!(row, c.row.as_bytes(), "{c:?}");
        assert_eq!(extract_subkey(&row), c.prefix.as_bytes(), "{c:?}");
        let q = digest_map_qualifier(d).unwrap();
        assert_eq!(q, c.qualifier.as_bytes(), "{c:?}");
        // The vector's row and qualifier give back the digest.
        assert_eq!(
            digest_of_map_cell(c.row.as_bytes(), c.qualifier.as_bytes()).unwrap(),
            *d,
            "{c:?}"
        );
    }
    for c in v.digest_map_values.non_empty("digest_map_values") {
        let value = encode_digest_map_value(c.digest_id);
        assert_eq!(value, c.value.as_bytes(), "{c:?}");
        assert_eq!(hex(&value), c.value_hex, "{c:?}");
        assert_eq!(
            decode_digest_map_value(&unhex(&c.value_hex)),
            Ok(c.digest_id),
            "{c:?}"
        );
    }
    for c in v
        .digest_map_value_decode
        .non_empty("digest_map_value_decode")
    {
        let got = decode_digest_map_value(c.value.as_bytes());
        match outcome(&c.digest_id, &c.error, c) {
            Ok(id) => assert_eq!(got.unwrap(), *id, "{c:?}"),
            Err(e) => assert_eq!(got.unwrap_err().to_string(), e, "{c:?}"),
        }
    }
    for c in v.digest_map_lookup_rows.non_empty("digest_map_lookup_rows") {
        let rows: BTreeSet<Vec<u8>> = c
            .digests
            .iter()
            .map(|d| normalize_digest(d))
            .filter(|d| !d.is_empty())
            .filter_map(|d| digest_map_row(&d))
            .collect();
        let want: Vec<&[u8]> = c.rows.iter().map(|r| r.as_bytes()).collect();
        assert_eq!(
            rows.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            want,
            "{c:?}"
        );
    }
}

/// `FIRST..LAST…` of a histogram's `prefixes`: every lowercase hex prefix from FIRST to LAST
/// inclusive, of their width.
fn prefix_range(text: &str) -> Vec<String> {
    let head = text.split_whitespace().next().unwrap_or("");
    let (first, last) = head
        .split_once("..")
        .unwrap_or_else(|| panic!("prefixes {text:?}: expected FIRST..LAST"));
    assert_eq!(first.len(), last.len(), "prefixes {text:?}");
    let width = first.len();
    let (a, b) = (
        u64::from_str_radix(first, 16).unwrap(),
        u64::from_str_radix(last, 16).unwrap(),
    );
    (a..=b).map(|p| format!("{p:0width$x}")).collect()
}

#[test]
fn digest_map_row_counts_and_histogram() {
    let v = vectors();
    for c in v.digest_map_row_counts.non_empty("digest_map_row_counts") {
        let digest = |i: u64| match c.generator.as_str() {
            "md5_decimal" => ops_hash(i.to_string().as_bytes()),
            other => panic!("{c:?}: unknown generator {other:?}"),
        };
        let rows: BTreeSet<Vec<u8>> = (0..c.n)
            .map(|i| digest_map_row(&digest(i)).unwrap())
            .collect();
        assert_eq!(rows.len(), c.distinct_rows, "{c:?}");
        // One row per digest would read `n` rows.
        assert_eq!(c.n, c.rows_one_row_per_digest, "{c:?}");
    }
    for c in v
        .digest_map_shard_histogram
        .non_empty("digest_map_shard_histogram")
    {
        let mut hist = vec![0u64; c.rows_per_shard.len().max(32)];
        for p in prefix_range(&c.prefixes) {
            hist[shard_of(p.as_bytes()) as usize] += 1;
        }
        assert_eq!(hist, c.rows_per_shard, "{c:?}");
    }
}

#[test]
fn digest_id_cells_and_mutations() {
    let v = vectors();
    for c in v.digest_id_columns.non_empty("digest_id_columns") {
        assert_eq!(
            digest_id_trace_qualifier(c.offset),
            c.qualifier.as_bytes(),
            "{c:?}"
        );
        assert_eq!(
            parse_trace_qualifier(c.qualifier.as_bytes()).unwrap(),
            c.offset,
            "{c:?}"
        );
    }
    for c in v.digest_id_cells.non_empty("digest_id_cells") {
        assert_eq!(
            hex(&encode_digest_id_cell(c.digest_id)),
            c.cell_hex,
            "{c:?}"
        );
        assert_eq!(
            decode_digest_id_cell(&unhex(&c.cell_hex)),
            Ok(c.digest_id),
            "{c:?}"
        );
    }
    for c in v.digest_id_cell_decode.non_empty("digest_id_cell_decode") {
        let got = decode_digest_id_cell(&unhex(&c.cell_hex));
        match outcome(&c.digest_id, &c.error, c) {
            Ok(id) => assert_eq!(got.unwrap(), *id, "{c:?}"),
            Err(e) => assert_eq!(got.unwrap_err().to_string(), e, "{c:?}"),
        }
    }
    for c in v
        .digest_id_trace_mutations
        .non_empty("digest_id_trace_mutations")
    {
        let pos = repo_index_position(c.repo_index).unwrap();
        let row = trace_row_name(pos.tile_key, c.subkey.as_bytes());
        assert_eq!(row, c.row.as_bytes(), "{c:?}");
        let q = digest_id_trace_qualifier(pos.offset);
        let muts = digest_id_trace_mutations(&q, Timestamp(c.ts_micros), c.digest_id);
        let mut want = vec![Mutation::SetCell {
            family: c.set.family.clone(),
            qualifier: c.set.qualifier.as_bytes().to_vec(),
            timestamp: Timestamp(c.set.timestamp_micros),
            value: unhex(&c.set.value_hex),
        }];
        if let Some(del) = &c.delete_from_column {
            want.push(Mutation::DeleteFromColumn {
                family: del.family.clone(),
                qualifier: del.qualifier.as_bytes().to_vec(),
                range: Some(TimestampRange {
                    start: del.start_timestamp_micros,
                    end: del.end_timestamp_micros,
                }),
            });
        }
        assert_eq!(muts, want, "{c:?}");
    }
    for c in v.id_counter.non_empty("id_counter") {
        assert_eq!(c.row.as_bytes(), id_counter_row_name(), "{c:?}");
        assert_eq!(c.family, FAMILY_ID_COUNTER, "{c:?}");
        assert_eq!(c.qualifier.as_bytes(), COLUMN_ID_COUNTER, "{c:?}");
        let before = c.counter_before.unwrap_or(0);
        assert_eq!(c.missing + RESERVED_IDS, c.increment, "{c:?}");
        let after = before + c.increment as i64;
        assert_eq!(after, c.counter_after, "{c:?}");
        assert_eq!(
            hex(&encode_id_counter(c.counter_after)),
            c.cell_hex,
            "{c:?}"
        );
        assert_eq!(
            decode_id_counter(&unhex(&c.cell_hex)),
            Ok(c.counter_after),
            "{c:?}"
        );
    }
}

/// `digest_id_allocation` against the rules of `spec/tracestore.md` 11.3, per allocator
/// instance (each has its own pool; all share the counter): an allocation takes the pool's
/// front, and only when that falls short sends an increment of `missing + 256`, whose
/// `counter_response` is at least the counter before plus the increment (other instances may
/// have moved it on) and reserves (`reserved_ids`) the fresh ids, the first `missing` handed
/// out, the rest appended to the pool; a return appends its ids to the pool. The machines
/// replay every step in rowkit-store.
#[test]
fn digest_id_allocation_counter_responses() {
    let v = vectors();
    for case in v.digest_id_allocation.non_empty("digest_id_allocation") {
        let what = &case.description;
        let mut counter = case.initial_counter.unwrap_or(0);
        let mut pools: BTreeMap<&str, Vec<u64>> = case
            .initial_pools
            .iter()
            .map(|(name, pool)| (name.as_str(), pool_ids(pool)))
            .collect();
        for step in &case.steps {
            let (allocator, pool_after_ranges) = match step {
                AllocationStep::Allocate {
                    allocator,
                    pool_after_ranges,
                    ..
                }
                | AllocationStep::Return {
                    allocator,
                    pool_after_ranges,
                    ..
                } => (allocator, pool_after_ranges),
            };
            let pool = pools.get_mut(allocator.as_str()).unwrap_or_else(|| {
                panic!("{what}: allocator {allocator:?} has no initial pool ({step:?})")
            });
            match step {
                AllocationStep::Return { ids, .. } => pool.extend(ids),
                AllocationStep::Allocate {
                    n,
                    increment,
                    counter_response,
                    ids_ranges,
                    ..
                } => {
                    let k = (*n).min(pool.len());
                    let mut ids: Vec<u64> = pool.drain(..k).collect();
                    let missing = n - k;
                    match (increment, counter_response) {
                        (None, None) => {
                            assert_eq!(missing, 0, "{what}: no increment for {step:?}")
                        }
                        (Some(increment), Some(response)) => {
                            assert!(missing > 0, "{what}: an increment without need: {step:?}");
                            assert_eq!(
                                *increment,
                                missing as u64 + RESERVED_IDS,
                                "{what}: {step:?}"
                            );
                            assert!(
                                *response >= counter + *increment as i64,
                                "{what}: the counter moves only forward: {step:?}"
                            );
                            assert_eq!(
                                decode_id_counter(&encode_id_counter(*response)),
                                Ok(*response)
                            );
                            counter = *response;
                            let fresh: Vec<u64> =
                                reserved_ids(*response, *increment).unwrap().collect();
                            assert!(fresh.len() >= missing, "{what}: {step:?}");
                            ids.extend(&fresh[..missing]);
                            pool.extend(&fresh[missing..]);
                        }
                        _ => panic!("{what}: an increment and its response go together ({step:?})"),
                    }
                    assert_eq!(ids, id_ranges(ids_ranges), "{what}: ids of {step:?}");
                }
            }
            assert_eq!(
                *pool,
                id_ranges(pool_after_ranges),
                "{what}: pool after {step:?}"
            );
        }
        assert_eq!(counter, case.final_counter, "{what}");
    }
}

/// `digest_id_assignment`: the digests the call looks up (rows), inserts (ascending, the
/// vector's `new_digests`) and answers; every insert's cells come from the codec, and it
/// answers `predicate_matched` exactly when the map already holds its digest's column (the
/// table map or a concurrent insert); a matched insert's digest gets the stored id and its
/// offered id goes back to the pool, an unmatched one gets the offered id. The machines replay
/// every call in rowkit-store.
#[test]
fn digest_id_assignment_insert_outcomes() {
    let v = vectors();
    for case in v.digest_id_assignment.non_empty("digest_id_assignment") {
        let what = &case.description;
        let wanted: BTreeSet<String> = case
            .digests
            .iter()
            .map(|d| normalize_digest(d))
            .filter(|d| !d.is_empty())
            .collect();
        let uncached: BTreeSet<&String> = wanted
            .iter()
            .filter(|d| !case.cache.contains_key(*d))
            .collect();
        let lookup: BTreeSet<Vec<u8>> = uncached
            .iter()
            .map(|d| digest_map_row(d).unwrap())
            .collect();
        let lookup: Vec<Vec<u8>> = lookup.into_iter().collect();
        let want_lookup: Vec<&[u8]> = case.lookup_rows.iter().map(|r| r.as_bytes()).collect();
        assert_eq!(
            lookup.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            want_lookup,
            "{what}"
        );
        let new: Vec<&String> = uncached
            .iter()
            .copied()
            .filter(|d| !case.table_map.contains_key(*d))
            .collect();
        assert_eq!(
            new,
            case.new_digests.iter().collect::<Vec<_>>(),
            "{what}: new digests"
        );
        let inserted: Vec<&String> = case.inserts.iter().map(|i| &i.digest).collect();
        assert_eq!(
            inserted, new,
            "{what}: one insert per new digest, ascending"
        );
        let mut stored = case.table_map.clone();
        stored.extend(case.concurrent_inserts.clone());
        let pool_after = id_ranges(&case.pool_after_ranges);
        let ts = Timestamp(case.now_micros).truncate_to_millis().0;
        // §11.5 step 6 answers every *input* digest (`ids` is keyed by the digests as given,
        // uppercase and invalid ones included): the answers of the inputs that normalise to `n`.
        let answers = |n: &str| -> Vec<u64> {
            let got: Vec<u64> = case
                .digests
                .iter()
                .filter(|d| normalize_digest(d) == n)
                .map(|d| {
                    *case
                        .ids
                        .get(d)
                        .unwrap_or_else(|| panic!("{what}: no id for input {d:?}"))
                })
                .collect();
            assert!(!got.is_empty(), "{what}: {n:?} is no input's digest");
            got
        };
        let mut reread = BTreeSet::new();
        for insert in &case.inserts {
            let d = &insert.digest;
            let offered = insert.digest_id;
            let q = digest_map_qualifier(d).unwrap();
            assert_eq!(digest_map_row(d).unwrap(), insert.row.as_bytes(), "{what}");
            assert_eq!(insert.family, FAMILY_DIGEST_MAP, "{what}");
            assert_eq!(q, insert.qualifier.as_bytes(), "{what}");
            assert_eq!(q, insert.predicate_qualifier_regex.as_bytes(), "{what}");
            assert_eq!(insert.timestamp_micros, ts, "{what}: {insert:?}");
            assert_eq!(
                encode_digest_map_value(offered),
                insert.value.as_bytes(),
                "{what}"
            );
            let matched = insert.predicate_matched;
            assert_eq!(matched, stored.contains_key(d), "{what}: {insert:?}");
            if matched {
                reread.insert(insert.row.clone());
                for id in answers(d) {
                    assert_eq!(id, stored[d], "{what}: {insert:?}");
                    assert_ne!(id, offered, "{what}: {insert:?}");
                }
                assert!(pool_after.contains(&offered), "{what}: {insert:?}");
            } else {
                for id in answers(d) {
                    assert_eq!(id, offered, "{what}: {insert:?}");
                }
                assert!(!pool_after.contains(&offered), "{what}: {insert:?}");
            }
        }
        assert_eq!(
            case.reread_rows,
            reread.into_iter().collect::<Vec<_>>(),
            "{what}: re-read rows"
        );
        // Every input digest, as given, has its id: the cache's, the table's, the insert's,
        // or 0 for the missing and invalid digests.
        for d in &case.digests {
            let n = normalize_digest(d);
            let want = case
                .ids
                .get(d)
                .unwrap_or_else(|| panic!("{what}: no id for {d:?}"));
            let from = case.cache.get(&n).or_else(|| stored.get(&n)).or_else(|| {
                case.inserts
                    .iter()
                    .find(|i| i.digest == n)
                    .map(|i| &i.digest_id)
            });
            assert_eq!(
                Some(want),
                from.or(n.is_empty().then_some(&0)),
                "{what}: {d:?}"
            );
        }
        // The counter moves by the increment, if one was sent.
        let before = case.initial_counter.unwrap_or(0);
        assert_eq!(
            case.counter_after,
            before + case.increment.map_or(0, |i| i as i64),
            "{what}"
        );
        // §11.3 and §11.5: the offered ids are the pool's front, then the increment's fresh
        // ids; the pool after is the rest of both, then the ids of the matched inserts.
        let pool = id_ranges(&case.initial_pool_ranges);
        let k = case.inserts.len();
        let from_pool = k.min(pool.len());
        let fresh: Vec<u64> = match case.increment {
            Some(inc) => reserved_ids(case.counter_after, inc).unwrap().collect(),
            None => Vec::new(),
        };
        assert!(
            fresh.len() >= k - from_pool,
            "{what}: the increment reserves too few ids"
        );
        assert_eq!(
            case.increment.is_some(),
            k > pool.len(),
            "{what}: an increment is sent exactly when the pool is short"
        );
        let offered: Vec<u64> = case.inserts.iter().map(|i| i.digest_id).collect();
        let want_offered: Vec<u64> = pool[..from_pool]
            .iter()
            .chain(&fresh[..k - from_pool])
            .copied()
            .collect();
        assert_eq!(offered, want_offered, "{what}: offered ids");
        let want_pool: Vec<u64> = pool[from_pool..]
            .iter()
            .chain(&fresh[k - from_pool..])
            .copied()
            .chain(
                case.inserts
                    .iter()
                    .filter(|i| i.predicate_matched)
                    .map(|i| i.digest_id),
            )
            .collect();
        assert_eq!(pool_after, want_pool, "{what}: pool after");
    }
}
