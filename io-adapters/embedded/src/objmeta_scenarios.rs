//! The objmeta scenario traces of `vectors/objmeta.json` (`objmeta.md` 18) as functions over
//! any [`Store`]: each scenario runs on its own table through the sync facade, and after every
//! step the result, the error, the pending repair count and the whole bucket (every row, in
//! key order) are compared with the vector. The same functions serve MemoryStore, RedbStore
//! and, once it exists, the emulator-backed store.

use rowkit_codec::model::{RowRange, RowSet};
use rowkit_codec::objmeta::cells::{StoredDoc, filters};
use rowkit_codec::objmeta::json::Json;
use rowkit_codec::objmeta::keys::{VFormat, collection_end, collection_start};
use rowkit_codec::objmeta::listing::ListingParams;
use rowkit_statemachines::objmeta::{ObjmetaConfig, ObjmetaState};
use rowkit_statemachines::readrows::ReadRows;
use rowkit_statemachines::{ReadRowsRequest, RetryPolicy, Timestamp};

use crate::Store;
use crate::driver::{ManualClock, run};
use crate::objmeta::ObjectMetadata;

/// JSON equality with member order ignored (how the vectors compare documents).
pub fn json_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(n, v)| y.get(n).is_some_and(|w| json_eq(v, w)))
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| json_eq(v, w))
        }
        _ => a == b,
    }
}

/// The state of the scenarios: pid 4242, rg `RG001`, the scenario's default vFormat.
pub fn scenario_state(table: &str, vformat: VFormat) -> ObjmetaState {
    ObjmetaState::new(ObjmetaConfig {
        table: table.to_string(),
        pid: 4242,
        default_bucket_key_format: vformat,
        ..ObjmetaConfig::default()
    })
}

/// Every row of a bucket's collection as `{key, row_key_hex, value}`, in key order.
pub fn bucket_rows(store: &dyn Store, table: &str, collection: &str) -> Result<Vec<Json>, String> {
    let req = ReadRowsRequest {
        table: table.to_string(),
        rows: RowSet::range(RowRange::half_open(
            collection_start(collection),
            collection_end(collection),
        )),
        filter: Some(filters::latest()),
        ..Default::default()
    };
    let m = ReadRows::new(req, Timestamp(0), 0, RetryPolicy::default());
    let mut rows = Vec::new();
    run(store, &ManualClock::new(Timestamp(0)), m, |r| rows.push(r))
        .map_err(|e| format!("{e:?}"))?;
    let n = collection.len() + 1;
    rows.iter()
        .map(|r| {
            let doc = StoredDoc::from_row(r)
                .map_err(|e| e.to_string())?
                .ok_or("row without d:value")?;
            let key = String::from_utf8_lossy(&r.key[n.min(r.key.len())..]).into_owned();
            let hex: String = r.key.iter().map(|b| format!("{b:02x}")).collect();
            Ok(Json::Object(
                [
                    ("key".to_string(), Json::str(key)),
                    ("row_key_hex".to_string(), Json::str(hex)),
                    ("value".to_string(), doc.value),
                ]
                .into_iter()
                .collect(),
            ))
        })
        .collect()
}

fn get_str<'a>(v: &'a Json, name: &str) -> Result<&'a str, String> {
    v.get(name)
        .and_then(Json::as_str)
        .ok_or(format!("missing string {name}"))
}

/// A listing result with each value parsed (the vectors' form).
fn parse_listing_values(mut result: Json) -> Json {
    if let Some(o) = result.as_object_mut() {
        for list in ["Contents", "Versions"] {
            if let Some(Json::Array(items)) = o.get_mut(list) {
                for item in items {
                    if let Some(io) = item.as_object_mut()
                        && let Some(Json::String(text)) = io.get("value").cloned()
                        && let Ok(v) = Json::parse(&text)
                    {
                        io.set("value", v);
                    }
                }
            }
        }
    }
    result
}

/// Runs one operation of a trace; returns `(data, error id)`.
fn run_op<S: Store + ?Sized>(
    om: &mut ObjectMetadata<'_, S, ManualClock>,
    bucket: &str,
    op: &Json,
) -> Result<(Option<Json>, Option<String>), String> {
    let name = get_str(op, "op")?;
    let params = op.get("params").filter(|p| !matches!(p, Json::Null));
    let key = op.get("key").and_then(Json::as_str).unwrap_or("");
    let split = |r: Result<Option<Json>, rowkit_statemachines::objmeta::ObjmetaError>| match r {
        Ok(d) => (d, None),
        Err(e) => (None, Some(e.id().to_string())),
    };
    Ok(match name {
        "putObject" => {
            let value = op.get("value").cloned().unwrap_or_default();
            split(
                om.put_object(bucket, key, &value, params)
                    .map(|r| r.map(Json::String)),
            )
        }
        "getObject" => {
            let vid = params
                .and_then(|p| p.get("versionId"))
                .and_then(Json::as_str);
            split(om.get_object(bucket, key, vid).map(Some))
        }
        "deleteObject" => split(om.delete_object(bucket, key, params, None).map(|()| None)),
        "listObject" => {
            let lp = ListingParams::from_json(params.unwrap_or(&Json::Null));
            split(
                om.list_object(bucket, &lp)
                    .map(|r| Some(parse_listing_values(r))),
            )
        }
        "runRepairs" => {
            let n = om.run_all_repairs().len();
            (Some(Json::Number(n as f64)), None)
        }
        other => return Err(format!("unknown op {other}")),
    })
}

/// Replays one scenario of the vectors on `store`, in table `table` (created here).
pub fn replay_scenario(store: &dyn Store, table: &str, scenario: &Json) -> Result<(), String> {
    let name = get_str(scenario, "name")?;
    let vf = VFormat::parse(get_str(scenario, "vFormat")?).map_err(|e| e.to_string())?;
    let bucket = get_str(scenario, "bucket")?;
    let clock = ManualClock::new(Timestamp::from_millis(1_700_000_000_000));
    let mut om = ObjectMetadata::new(store, &clock, scenario_state(table, vf), 1);
    om.setup().map_err(|e| e.to_string())?;
    let md = Json::parse(&format!(r#"{{"name":"{bucket}","owner":"ownerid"}}"#))
        .map_err(|e| e.to_string())?;
    om.create_bucket(bucket, &md)
        .map_err(|e| format!("{name}: createBucket: {e}"))?;
    let empty = Vec::new();
    let setup = match scenario.get("setup") {
        Some(Json::Array(s)) => s,
        _ => &empty,
    };
    for (i, op) in setup.iter().enumerate() {
        let ms = op.get("clockMs").and_then(|c| {
            if let Json::Number(n) = c {
                Some(*n as i64)
            } else {
                None
            }
        });
        if let Some(ms) = ms {
            clock.advance_to(Timestamp(ms * 1000));
        }
        let (_, err) = run_op(&mut om, bucket, op)?;
        if let Some(e) = err {
            return Err(format!("{name} [{}]: setup {i} failed: {e}", vf.as_str()));
        }
    }
    let Some(Json::Array(steps)) = scenario.get("steps") else {
        return Err(format!("{name}: no steps"));
    };
    for step in steps {
        let label = get_str(step, "label")?;
        let at = |what: &str| format!("{name} [{}] step {label:?}: {what}", vf.as_str());
        if let Some(Json::Number(ms)) = step.get("clockMs") {
            clock.advance_to(Timestamp(*ms as i64 * 1000));
        }
        let op = step.get("op").ok_or(at("no op"))?;
        let (data, err) = run_op(&mut om, bucket, op)?;
        let want_err = step.get("err").and_then(Json::as_str).map(String::from);
        if err != want_err {
            return Err(at(&format!("error {err:?}, expected {want_err:?}")));
        }
        let want_data = step.get("data");
        match (&data, want_data) {
            (None, None) => {}
            (Some(d), Some(w)) if json_eq(d, w) => {}
            _ => {
                return Err(at(&format!(
                    "data {}, expected {}",
                    data.as_ref().map_or("(none)".into(), Json::stringify),
                    want_data.map_or("(none)".into(), Json::stringify)
                )));
            }
        }
        if let Some(Json::Number(n)) = step.get("pendingRepairs")
            && om.pending_repairs().len() != *n as usize
        {
            return Err(at(&format!(
                "{} pending repairs, expected {n}",
                om.pending_repairs().len()
            )));
        }
        if let Some(want) = step.get("stateAfter") {
            let coll = rowkit_codec::objmeta::keys::collection_for_bucket(bucket);
            let got = Json::Array(bucket_rows(store, table, coll)?);
            if !json_eq(&got, want) {
                return Err(at(&format!(
                    "state\n  got  {}\n  want {}",
                    got.stringify(),
                    want.stringify()
                )));
            }
        }
    }
    Ok(())
}

/// Replays every scenario of `vectors` on `store`, each in table `objmeta-<i>`; returns the
/// number run, or every failure.
pub fn replay_all(store: &dyn Store, vectors: &Json) -> Result<usize, Vec<String>> {
    let Some(Json::Array(scenarios)) = vectors.get("scenarios") else {
        return Err(vec!["no scenarios in the vectors".into()]);
    };
    let failures: Vec<String> = scenarios
        .iter()
        .enumerate()
        .filter_map(|(i, s)| replay_scenario(store, &format!("objmeta-{i}"), s).err())
        .collect();
    if failures.is_empty() {
        Ok(scenarios.len())
    } else {
        Err(failures)
    }
}
