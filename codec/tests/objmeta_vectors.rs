#![allow(clippy::unwrap_used)]
//! Every pure case of `$ROWKIT_SHARED/vectors/objmeta.json`: version ids and encodings, keys,
//! row keys, `inc`, listing ranges, row ranges, row cells, metastore rows, bucket vFormats, the
//! uuid row, `genMDParams` and filter traces. The file is read at run time into strict structs
//! (`common`; documents keep their member order): every field of every case is checked, and a
//! case kind, a field or an operation this file does not know fails the test. The scenario
//! traces (`scenarios`) are replayed on every store by rowkit-testkit
//! (`scenarios::objmeta::replay_all`), with their own strict types.

mod common;

use std::collections::BTreeMap;

use common::{Cases, check_meta, hex, load, required_nullable, unhex};
use rowkit_codec::model::{KeyBound, Mutation};
use rowkit_codec::objmeta::cells::replace;
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{
    INFOSTORE, METASTORE, UUID_KEY, VFormat, collection_for_bucket, inc, master_key, row_key,
    version_key,
};
use rowkit_codec::objmeta::listing::{Listing, ListingParams, MdParams, Skip, master_range_v1};
use rowkit_codec::objmeta::range::RangeParams;
use rowkit_codec::objmeta::version_id::{
    VersionIdGenerator, base62_decode, base62_encode, decode, encode, inf_vid,
};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    meta: Value,
    version_id_generate: Cases<VersionIdGenerate>,
    get_inf_vid: Cases<GetInfVid>,
    version_id_encode: Cases<VersionIdEncode>,
    base62_direct: Cases<Base62Direct>,
    version_id_decode_errors: Cases<VersionIdDecodeError>,
    key_formats: Cases<KeyFormat>,
    row_keys: Cases<RowKeyCase>,
    inc: Cases<Inc>,
    listing_params_v0_to_v1: Cases<ListingV0ToV1>,
    gen_md_params: Cases<GenMdParams>,
    bigtable_row_ranges: Cases<BigtableRowRange>,
    filter_sequences: Cases<FilterSequence>,
    bucket_vformat: Cases<BucketVFormat>,
    metastore_rows: Cases<MetastoreRow>,
    infostore_get_uuid: Cases<InfostoreGetUuid>,
    row_cells: Cases<RowCells>,
    /// Replayed by rowkit-testkit on every store (strict types there).
    scenarios: Vec<Json>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GeneratorState {
    #[serde(rename = "lastTimestamp")]
    last_timestamp: i64,
    #[serde(rename = "lastSeq")]
    last_seq: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VersionIdGenerate {
    state_before: GeneratorState,
    now_ms: i64,
    info: String,
    replication_group_id: String,
    /// `null`: unset.
    #[serde(
        rename = "env_S3_VERSION_ID_ENCODING_TYPE",
        deserialize_with = "required_nullable"
    )]
    encoding_type: Option<String>,
    version_id: String,
    state_after: GeneratorState,
    note: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GetInfVid {
    replication_group_id: String,
    inf_vid: String,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum DecodeOutcome {
    Decoded(String),
    Failed(ErrorResult),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorResult {
    error: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VersionIdEncode {
    version_id: String,
    encoded: String,
    scheme: String,
    decode_of_encoded: DecodeOutcome,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Base62Direct {
    version_id: String,
    base62_encode: String,
    base62_decode_of_encoded: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VersionIdDecodeError {
    input: String,
    result: ErrorResult,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyFormat {
    #[serde(rename = "vFormat")]
    vformat: String,
    object_key: String,
    version_id: String,
    master_key: String,
    version_key: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowKeyCase {
    bucket: String,
    collection: String,
    arsenal_key: String,
    row_key_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Inc {
    input: String,
    inc: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListingV0ToV1 {
    v0: Json,
    v1: Json,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GenMdParams {
    algo: String,
    #[serde(rename = "vFormat")]
    vformat: String,
    params: Json,
    md: Json,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Bound {
    bound: String,
    key_hex: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BigtableRowRange {
    bucket: String,
    params: Json,
    start: Bound,
    end: Bound,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilterStep {
    key: String,
    value: String,
    filter: i64,
    /// Recorded only for FILTER_SKIP (0); absent there: `skipping()` returned none.
    skipping: Option<Json>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FilterSequence {
    name: String,
    algo: String,
    #[serde(rename = "vFormat")]
    vformat: String,
    params: Json,
    #[serde(rename = "genMDParams")]
    gen_md_params: Json,
    trace: Vec<FilterStep>,
    result: Json,
}

/// One `bucket_vformat` case, by its `operation`.
#[derive(Debug, Deserialize)]
#[serde(tag = "operation", deny_unknown_fields)]
enum BucketVFormat {
    /// The vFormat `createBucket` gives `bucket` with env `DEFAULT_BUCKET_KEY_FORMAT` (absent
    /// or `null`: unset).
    #[serde(rename = "createBucket")]
    CreateBucket {
        bucket: String,
        #[serde(rename = "DEFAULT_BUCKET_KEY_FORMAT", default)]
        default_bucket_key_format: Option<String>,
        #[serde(rename = "vFormat")]
        vformat: String,
    },
    /// The vFormat `getBucketVFormat` reads for `bucket` whose metastore document is
    /// `metastore_row` (`null`: no row).
    #[serde(rename = "getBucketVFormat")]
    GetBucketVFormat {
        bucket: String,
        #[serde(deserialize_with = "required_nullable")]
        metastore_row: Option<MetastoreDocument>,
        #[serde(rename = "vFormat")]
        vformat: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetastoreDocument {
    #[serde(rename = "_id")]
    id: String,
    value: Json,
    #[serde(rename = "vFormat")]
    vformat: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetastoreRow {
    bucket: String,
    row_key_hex: String,
    document: MetastoreDocument,
    cells: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UuidCall {
    candidate: String,
    result: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InfostoreGetUuid {
    description: String,
    calls: Vec<UuidCall>,
    row_key_hex: String,
    final_d_value: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowCells {
    bucket: String,
    arsenal_key: String,
    row_key_hex: String,
    value: Json,
    cells: BTreeMap<String, String>,
}

fn vectors() -> File {
    let f: File = load("objmeta.json");
    check_meta(&f.meta, "objmeta.md");
    f
}

fn vf(s: &str) -> VFormat {
    VFormat::parse(s).unwrap_or_else(|e| panic!("vFormat {s:?}: {e}"))
}

/// `DEFAULT_BUCKET_KEY_FORMAT` as the host reads it (`objmeta.md` 4.3, 16.1): `v0` or `v1`,
/// anything else (or unset) `v1`.
fn default_format(env: Option<&str>) -> VFormat {
    match env {
        Some("v0") => VFormat::V0,
        _ => VFormat::V1,
    }
}

/// JSON values equal with member order ignored.
fn same_json(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(n, v)| y.get(n).is_some_and(|w| same_json(v, w)))
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same_json(v, w))
        }
        _ => a == b,
    }
}

#[test]
fn version_id_generate() {
    let v = vectors();
    for c in v.version_id_generate.non_empty("version_id_generate") {
        let mut g = VersionIdGenerator {
            last_timestamp: c.state_before.last_timestamp,
            last_seq: c.state_before.last_seq,
            uid_counter: 0,
        };
        let id = g.generate_with_info(
            c.now_ms * 1000,
            &c.info,
            &c.replication_group_id,
            c.encoding_type.as_deref(),
        );
        assert_eq!(id, c.version_id, "{} ({c:?})", c.note);
        assert_eq!(g.last_timestamp, c.state_after.last_timestamp, "{c:?}");
        assert_eq!(g.last_seq, c.state_after.last_seq, "{c:?}");
    }
}

#[test]
fn version_id_encodings() {
    let v = vectors();
    for c in v.get_inf_vid.non_empty("get_inf_vid") {
        assert_eq!(inf_vid(&c.replication_group_id), c.inf_vid, "{c:?}");
    }
    for c in v.version_id_encode.non_empty("version_id_encode") {
        assert_eq!(encode(&c.version_id), c.encoded, "{c:?}");
        match c.scheme.as_str() {
            "base62" => assert_eq!(base62_encode(&c.version_id), c.encoded, "{c:?}"),
            "hex" => assert_eq!(hex(c.version_id.as_bytes()), c.encoded, "{c:?}"),
            other => panic!("{c:?}: unknown scheme {other:?}"),
        }
        match &c.decode_of_encoded {
            DecodeOutcome::Decoded(d) => assert_eq!(decode(&c.encoded).unwrap(), *d, "{c:?}"),
            DecodeOutcome::Failed(e) => {
                assert_eq!(
                    decode(&c.encoded).unwrap_err().to_string(),
                    e.error,
                    "{c:?}"
                )
            }
        }
    }
    for c in v.base62_direct.non_empty("base62_direct") {
        assert_eq!(base62_encode(&c.version_id), c.base62_encode, "{c:?}");
        assert_eq!(
            base62_decode(&c.base62_encode).unwrap(),
            c.base62_decode_of_encoded,
            "{c:?}"
        );
    }
    for c in v
        .version_id_decode_errors
        .non_empty("version_id_decode_errors")
    {
        assert_eq!(
            decode(&c.input).unwrap_err().to_string(),
            c.result.error,
            "{c:?}"
        );
    }
}

#[test]
fn keys_row_keys_and_inc() {
    let v = vectors();
    for c in v.key_formats.non_empty("key_formats") {
        let f = vf(&c.vformat);
        assert_eq!(master_key(f, &c.object_key), c.master_key, "{c:?}");
        assert_eq!(
            version_key(f, &c.object_key, &c.version_id),
            c.version_key,
            "{c:?}"
        );
    }
    for c in v.row_keys.non_empty("row_keys") {
        assert_eq!(collection_for_bucket(&c.bucket), c.collection, "{c:?}");
        let k = row_key(&c.collection, &c.arsenal_key);
        assert_eq!(hex(&k), c.row_key_hex, "{c:?}");
    }
    for c in v.inc.non_empty("inc") {
        assert_eq!(inc(&c.input).unwrap(), c.inc, "{c:?}");
    }
}

/// `bucket_vformat`: the vFormat a new bucket gets under the case's
/// `DEFAULT_BUCKET_KEY_FORMAT`, and the one a stored metastore document (or none) reads as.
/// The machines run every case in rowkit-testkit (`scenarios::objmeta::metastore_uuid_count`).
#[test]
fn bucket_vformats() {
    let v = vectors();
    for c in v.bucket_vformat.non_empty("bucket_vformat") {
        match c {
            BucketVFormat::CreateBucket {
                bucket,
                default_bucket_key_format,
                vformat,
            } => assert_eq!(
                VFormat::for_new_bucket(
                    bucket,
                    default_format(default_bucket_key_format.as_deref())
                )
                .as_str(),
                vformat,
                "{c:?}"
            ),
            BucketVFormat::GetBucketVFormat {
                bucket,
                metastore_row,
                vformat,
            } => {
                let got = match metastore_row {
                    None => VFormat::V0,
                    Some(doc) => {
                        assert_eq!(doc.id, *bucket, "{c:?}");
                        doc.vformat
                            .as_deref()
                            .map_or(VFormat::V0, VFormat::from_stored)
                    }
                };
                assert_eq!(got.as_str(), vformat, "{c:?}");
            }
        }
    }
}

fn bound_of(b: &KeyBound) -> Option<(&'static str, String)> {
    match b {
        KeyBound::Closed(k) => Some(("closed", hex(k))),
        KeyBound::Open(k) => Some(("open", hex(k))),
        KeyBound::Unbounded => None,
    }
}

#[test]
fn row_ranges() {
    let v = vectors();
    for c in v.bigtable_row_ranges.non_empty("bigtable_row_ranges") {
        let r = RangeParams::from_json(&c.params);
        let rr = r.to_row_range(collection_for_bucket(&c.bucket));
        for (got, want) in [(&rr.start, &c.start), (&rr.end, &c.end)] {
            assert!(
                ["closed", "open"].contains(&want.bound.as_str()),
                "{c:?}: unknown bound {:?}",
                want.bound
            );
            assert_eq!(
                bound_of(got),
                Some((want.bound.as_str(), want.key_hex.clone())),
                "{c:?}"
            );
        }
    }
}

/// The `d:` / `f:` cells a mutation list sets, as the vectors write them (`f:` values hex).
fn set_cells(muts: &[Mutation]) -> BTreeMap<String, String> {
    let mut cells = BTreeMap::new();
    for m in muts {
        if let Mutation::SetCell {
            family,
            qualifier,
            value,
            timestamp,
        } = m
        {
            assert_eq!(timestamp.0, 0);
            let q = String::from_utf8(qualifier.clone()).unwrap();
            if family == "d" {
                cells.insert(format!("d:{q}"), String::from_utf8(value.clone()).unwrap());
            } else {
                cells.insert(format!("{family}:{q}_hex"), hex(value));
            }
        }
    }
    cells
}

#[test]
fn row_cells() {
    let v = vectors();
    for c in v.row_cells.non_empty("row_cells") {
        let k = row_key(collection_for_bucket(&c.bucket), &c.arsenal_key);
        assert_eq!(hex(&k), c.row_key_hex, "{c:?}");
        let muts = replace(&c.value, None);
        assert_eq!(set_cells(&muts), c.cells, "{c:?}");
        assert_eq!(
            muts[0],
            Mutation::DeleteFromFamily { family: "f".into() },
            "{c:?}"
        );
        // The stored `d:value` text is the document.
        let text = c
            .cells
            .get("d:value")
            .unwrap_or_else(|| panic!("{c:?}: no d:value"));
        assert!(same_json(&Json::parse(text).unwrap(), &c.value), "{c:?}");
    }
}

/// Every `metastore_rows` case: the row key, the vFormat createBucket gives the bucket (default
/// v1), and exactly the cells of `REPLACE(value, vFormat)`.
#[test]
fn metastore_rows() {
    let v = vectors();
    for c in v.metastore_rows.non_empty("metastore_rows") {
        let bucket = &c.bucket;
        assert_eq!(hex(&row_key(METASTORE, bucket)), c.row_key_hex, "{c:?}");
        assert_eq!(unhex(&c.row_key_hex), row_key(METASTORE, bucket), "{c:?}");
        assert_eq!(c.document.id, *bucket, "{c:?}");
        let vformat = VFormat::for_new_bucket(bucket, VFormat::V1);
        assert_eq!(
            Some(vformat.as_str()),
            c.document.vformat.as_deref(),
            "{c:?}"
        );
        let muts = replace(&c.document.value, Some(vformat.as_str()));
        assert_eq!(
            muts[0],
            Mutation::DeleteFromFamily { family: "f".into() },
            "{c:?}"
        );
        assert_eq!(set_cells(&muts), c.cells, "{c:?}");
    }
}

/// `infostore_get_uuid`: the uuid row's key, the first call's candidate is stored and every
/// call answers it, and the stored `d:value` is its `REPLACE` text. The machines run every
/// case in rowkit-testkit (`scenarios::objmeta::metastore_uuid_count`).
#[test]
fn infostore_uuid_rows() {
    let v = vectors();
    for c in v.infostore_get_uuid.non_empty("infostore_get_uuid") {
        let what = format!("{} ({c:?})", c.description);
        assert_eq!(hex(&row_key(INFOSTORE, UUID_KEY)), c.row_key_hex, "{what}");
        let first = c
            .calls
            .first()
            .unwrap_or_else(|| panic!("{what}: no calls"));
        assert_eq!(first.result, first.candidate, "{what}");
        for call in &c.calls {
            assert_eq!(call.result, first.candidate, "{what}");
        }
        let cells = set_cells(&replace(&Json::str(first.result.clone()), None));
        assert_eq!(cells.get("d:value"), Some(&c.final_d_value), "{what}");
    }
}

#[test]
fn listing_params_and_md() {
    let v = vectors();
    for c in v
        .listing_params_v0_to_v1
        .non_empty("listing_params_v0_to_v1")
    {
        // The conversion itself, on whatever bounds the case gives (`gt`, `gte`, `lt`, `lte`
        // in any combination).
        let v1 = master_range_v1(&RangeParams::from_json(&c.v0));
        assert!(
            same_json(&v1.to_json(), &c.v1),
            "{c:?}: got {}",
            v1.to_json().stringify()
        );
    }
    for c in v.gen_md_params.non_empty("gen_md_params") {
        let mut params = c.params.clone();
        params
            .as_object_mut()
            .unwrap_or_else(|| panic!("{c:?}: params is not an object"))
            .set("listingType", Json::str(c.algo.clone()));
        let l = Listing::new(ListingParams::from_json(&params), vf(&c.vformat));
        let md = l.gen_md_params().unwrap();
        assert!(
            same_json(&md.to_json(), &c.md),
            "{c:?}: got {}",
            md.to_json().stringify()
        );
    }
}

#[test]
fn filter_sequences() {
    let v = vectors();
    for c in v.filter_sequences.non_empty("filter_sequences") {
        let name = &c.name;
        let mut params = c.params.clone();
        params
            .as_object_mut()
            .unwrap_or_else(|| panic!("{name}: params is not an object"))
            .set("listingType", Json::str(c.algo.clone()));
        let mut l = Listing::new(ListingParams::from_json(&params), vf(&c.vformat));
        let md = l.gen_md_params().unwrap().to_json();
        assert!(
            same_json(&md, &c.gen_md_params),
            "{name}: genMDParams {}",
            md.stringify()
        );
        for (i, t) in c.trace.iter().enumerate() {
            let code = l.filter(&t.key, &t.value);
            assert_eq!(i64::from(code), t.filter, "{name} step {i}");
            // The vector's code says whether `skipping()` is recorded.
            if t.filter == 0 {
                let got = match l.skipping() {
                    None => Json::Null,
                    Some(Skip::Single(x)) => Json::str(x),
                    Some(Skip::Pair(m, v)) => Json::Array(vec![Json::str(m), Json::str(v)]),
                };
                let want = t.skipping.clone().unwrap_or(Json::Null);
                assert!(same_json(&got, &want), "{name} step {i} skipping {got:?}");
            } else {
                assert!(
                    t.skipping.is_none(),
                    "{name} step {i}: `skipping` is recorded only for FILTER_SKIP"
                );
            }
        }
        let result = l.result();
        assert!(
            same_json(&result, &c.result),
            "{name} result {}",
            result.stringify()
        );
    }
    let _ = MdParams::Single(RangeParams::default());
}

#[test]
fn scenarios_are_replayed_by_the_testkit() {
    // Each scenario is a whole trace over a store: rowkit-testkit's
    // `scenarios::objmeta::replay_all` replays every one of them (with strict types) on the
    // memory, redb and emulator stores. Here: the kind is a list of trace objects.
    let v = vectors();
    for s in &v.scenarios {
        assert!(s.as_object().is_some(), "scenario {}", s.stringify());
    }
}
