//! Each schema's JS client, offline (the page's memory store) and against the gateway the
//! harness started (`rowkit serve` on an embedded store set up with `rowkit <schema> setup`).
//! The same scenario function runs in both modes, in Node and in headless Chromium. Against
//! `rowkit serve` on an empty memory store, every class's `setup()` creates its tables through
//! the gateway's table admin.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used, missing_docs)]
// Without the harness's URLs the tests must fail (not skip), at run time with a clear message.
#![allow(clippy::option_env_unwrap)]

mod harness;

use harness::{
    closed_gateway_url, empty_gateway_url, json, options, options_at, stoppable_gateway,
    stoppable_gateway_url, test_token, token_options, unique, wait,
};
use rowkit_wasm::{Graph, MountTable, ObjectMetadata, TraceStore};
use serde_json::json;
use wasm_bindgen::JsValue;
use wasm_bindgen::prelude::{Closure, JsCast};
use wasm_bindgen_test::*;

/// The error of a scan of one row of `table` (which must fail).
async fn scan_one_row_error(options: JsValue, table: &str) -> JsValue {
    wait(rowkit_wasm::browse::scan_rows(
        options,
        table.into(),
        JsValue::UNDEFINED,
        1,
        None,
        JsValue::UNDEFINED,
        JsValue::UNDEFINED,
    ))
    .await
    .unwrap_err()
}

fn code(e: &JsValue) -> String {
    js_sys::Reflect::get(e, &"code".into())
        .unwrap()
        .as_string()
        .unwrap_or_default()
}

async fn mounttable(gateway: bool) {
    let mt = MountTable::new(options(gateway, None)).unwrap();
    // Setup writes the root node once (a second setup fails, as `rowkit mt setup` does); the
    // harness already ran `rowkit mt setup` on the gateway's store.
    if !gateway {
        wait(mt.setup()).await.unwrap();
    }
    let base = format!("wasm{}", unique());
    let name = format!("{base}/a/b");
    let deadline = wait(mt.mount(name.clone(), "/host:1234".into(), 600, None))
        .await
        .unwrap();
    assert!(deadline.as_f64().unwrap() > 0.0);
    // A second mount keeps `base` alive after `a/b` is unmounted (empty nodes are removed).
    wait(mt.mount(format!("{base}/c"), "/host:99".into(), 600, None))
        .await
        .unwrap();
    let r = json(&wait(mt.resolve(name.clone())).await.unwrap());
    assert_eq!(r["servers"][0]["server"], "/host:1234", "{r}");
    let g = json(&wait(mt.glob(base.clone(), "...".into())).await.unwrap());
    let names: Vec<&str> = g
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"a/b") && names.contains(&"c"), "{g}");
    wait(mt.unmount(name.clone(), None)).await.unwrap();
    let e = wait(mt.resolve(name.clone())).await.unwrap_err();
    assert_eq!(code(&e), "v.io/v23/naming.nameDoesntExist");
    // A bad address: Vanadium's id as `code` and `id`, no Go package path in the message.
    let e = wait(mt.mount(format!("{base}/bad"), "x".into(), 600, None))
        .await
        .unwrap_err();
    let id = js_sys::Reflect::get(&e, &"id".into()).unwrap();
    assert_eq!(
        id.as_string().as_deref(),
        Some("v.io/x/ref/services/mounttable/btmtd/internal.errMalformedAddress")
    );
    let message = String::from(js_sys::Error::from(e).message());
    assert!(message.starts_with("malformed address \"x\""), "{message}");
    assert!(!message.contains("v.io/"), "{message}");
    wait(mt.mount(format!("{base}/x/y"), "/host:7".into(), 600, None))
        .await
        .unwrap();
    wait(mt.delete(format!("{base}/x"), true)).await.unwrap();
    let g = json(&wait(mt.glob(base.clone(), "...".into())).await.unwrap());
    let names: Vec<&str> = g
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"c") && !names.iter().any(|n| n.starts_with('x')),
        "{g}"
    );
    // Permissions as the tree shows them: the stored JSON object and its version.
    let p = json(&wait(mt.permissions(base)).await.unwrap());
    assert!(p["perms"]["Admin"]["In"].is_array(), "{p}");
    assert!(!p["version"].as_str().unwrap().is_empty(), "{p}");
    // The check is fsck's, as a report (other tests may write to the gateway's tables while it
    // runs: only its shape is asserted).
    let report = json(&wait(mt.check(false)).await.unwrap());
    assert_eq!(report["schema"], "mt", "{report}");
    assert!(
        report["left"].is_u64() && report["findings"].is_array(),
        "{report}"
    );
}

async fn tracestore(gateway: bool) {
    let ts = TraceStore::new(options(gateway, None)).unwrap();
    wait(ts.setup()).await.unwrap();
    // Commits far apart per run so reruns against one gateway store see their own tile.
    let commit = (js_sys::Date::now() as i64 / 1000 % 1_000_000) * 256 + 7;
    let entries = js_sys::JSON::parse(
        &json!([
            {"params": {"name": "t1", "os": "linux"}, "digest": "8db9913366b07bd14df9a68459e2958b"},
            {"params": {"name": "t2", "os": "linux"}, "digest": "9e1d402515193304cafbdf02b8fd751b"}
        ])
        .to_string(),
    )
    .unwrap();
    wait(ts.put(commit as f64, entries, None)).await.unwrap();
    let tile = json(
        &wait(ts.read_range(commit as f64, commit as f64))
            .await
            .unwrap(),
    );
    let traces = tile["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 2, "{tile}");
    assert_eq!(
        traces[0]["digests"][0], "8db9913366b07bd14df9a68459e2958b",
        "{tile}"
    );
    let newest = wait(ts.newest_tile()).await.unwrap();
    assert!(newest.as_f64().unwrap() >= (commit / 256) as f64);
    // The tile streamed to a callback: each trace's params, and its cells numbering the digests
    // of the stream (1 + index in every batch's newDigests so far; 0 = missing).
    let batches = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let keep = batches.clone();
    let on_batch = Closure::<dyn FnMut(JsValue)>::new(move |b: JsValue| keep.borrow_mut().push(b));
    let n = wait(
        ts.stream_tile(
            (commit / 256) as u32,
            on_batch
                .as_ref()
                .unchecked_ref::<js_sys::Function>()
                .clone(),
        ),
    )
    .await
    .unwrap();
    assert_eq!(n.as_f64(), Some(2.0));
    let (mut digests, mut seen) = (Vec::new(), Vec::new());
    for b in batches.borrow().iter() {
        digests.extend(
            json(&js_sys::Reflect::get(b, &"newDigests".into()).unwrap())
                .as_array()
                .unwrap()
                .clone(),
        );
        let cells =
            js_sys::Uint32Array::from(js_sys::Reflect::get(b, &"cells".into()).unwrap()).to_vec();
        let traces = json(&js_sys::Reflect::get(b, &"traces".into()).unwrap());
        for (t, trace) in traces.as_array().unwrap().iter().enumerate() {
            let at = cells[t * 256 + (commit % 256) as usize] as usize;
            seen.push((trace["params"]["name"].clone(), digests[at - 1].clone()));
            assert_eq!(
                cells[t * 256 + (commit % 256) as usize - 1],
                0,
                "a missing point is 0"
            );
        }
    }
    seen.sort_by_key(|(name, _)| name.to_string());
    assert_eq!(
        serde_json::to_value(seen).unwrap(),
        json!([
            ["t1", "8db9913366b07bd14df9a68459e2958b"],
            ["t2", "9e1d402515193304cafbdf02b8fd751b"]
        ])
    );
    let e = wait(ts.read_range(-1.0, 3.0)).await.unwrap_err();
    assert_eq!(code(&e), "bad_repo_index");
}

async fn objmeta(gateway: bool) {
    objmeta_with(options(gateway, None)).await;
}

async fn objmeta_with(options: JsValue) {
    let om = ObjectMetadata::new(options).unwrap();
    wait(om.setup()).await.unwrap();
    let bucket = format!("wasm-{}", unique());
    let vf = wait(om.create_bucket(bucket.clone(), JsValue::UNDEFINED))
        .await
        .unwrap();
    assert_eq!(vf.as_string().as_deref(), Some("v1"));
    // Members out of alphabetical order, nested too: Arsenal stores a value's JSON text, so
    // their order is data and must survive the round trip.
    let text = |n: u32| format!(r#"{{"n":{n},"z":{{"b":1,"a":[{{"y":2,"x":3}}]}},"a":"last"}}"#);
    let val = |n: u32| js_sys::JSON::parse(&text(n)).unwrap();
    for (i, key) in ["dir/a", "dir/b", "top"].iter().enumerate() {
        wait(om.put_object(
            bucket.clone(),
            (*key).into(),
            val(i as u32),
            JsValue::UNDEFINED,
        ))
        .await
        .unwrap();
    }
    let got = wait(om.get_object(bucket.clone(), "top".into(), None))
        .await
        .unwrap();
    assert_eq!(
        String::from(js_sys::JSON::stringify(&got).unwrap()),
        text(2)
    );
    let params = js_sys::JSON::parse(r#"{"delimiter": "/"}"#).unwrap();
    let list = json(&wait(om.list_objects(bucket.clone(), params)).await.unwrap());
    assert_eq!(list["CommonPrefixes"], json!(["dir/"]), "{list}");
    let keys: Vec<&str> = list["Contents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["top"], "{list}");
    wait(om.delete_object(bucket.clone(), "top".into(), JsValue::UNDEFINED))
        .await
        .unwrap();
    let e = wait(om.get_object(bucket.clone(), "top".into(), None))
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    // Readable: the id as `code` and `id`, a sentence naming the key as `message`.
    let id = js_sys::Reflect::get(&e, &"id".into()).unwrap();
    assert_eq!(id.as_string().as_deref(), Some("NoSuchKey"));
    assert_eq!(
        String::from(js_sys::Error::from(e).message()),
        format!("no such key top in bucket {bucket}")
    );
    let buckets = json(&wait(om.list_buckets()).await.unwrap());
    assert!(
        buckets
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["name"] == bucket.as_str()),
        "{buckets}"
    );
}

/// The objects of `/u<joe> "parent_of"@[]` in `g`, sorted.
async fn children_of_joe(g: &Graph) -> Vec<String> {
    let found = json(
        &wait(g.query(
            "objects".into(),
            vec!["/u<joe>".into(), "\"parent_of\"@[]".into()],
            JsValue::UNDEFINED,
        ))
        .await
        .unwrap(),
    );
    let mut items: Vec<String> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["item"].as_str().unwrap().to_string())
        .collect();
    items.sort_unstable();
    items
}

async fn triples(gateway: bool) {
    let id = format!("wasm{}", unique());
    let g = Graph::new(id.clone(), options(gateway, None)).unwrap();
    wait(g.setup()).await.unwrap();
    wait(g.create()).await.unwrap();
    let t1 = "/u<joe>\t\"parent_of\"@[]\t/u<mary>".to_string();
    let t2 = "/u<joe>\t\"parent_of\"@[]\t/u<peter>".to_string();
    wait(g.add(vec![t1.clone(), t2.clone()])).await.unwrap();
    assert_eq!(children_of_joe(&g).await, ["/u<mary>", "/u<peter>"]);
    // What the graph view draws: the predicate's id, a temporal predicate's anchor, the
    // object's kind.
    let met = "/u<joe>\t\"met\"@[2001-05-04T10:00:00Z]\t\"3\"^^type:int64".to_string();
    wait(g.add(vec![met.clone()])).await.unwrap();
    let by_predicate = |p: &str| {
        wait(g.query(
            "triples-for-predicate".into(),
            vec![p.into()],
            JsValue::UNDEFINED,
        ))
    };
    let found = json(
        &by_predicate("\"met\"@[2001-05-04T10:00:00Z]")
            .await
            .unwrap(),
    );
    assert_eq!(found[0]["predicateId"], "met", "{found}");
    assert_eq!(found[0]["anchor"], "2001-05-04T10:00:00Z", "{found}");
    assert_eq!(found[0]["objectKind"], "literal", "{found}");
    let parents = json(&by_predicate("\"parent_of\"@[]").await.unwrap());
    assert_eq!(parents[0]["anchor"], serde_json::Value::Null, "{parents}");
    assert_eq!(parents[0]["objectKind"], "node", "{parents}");
    wait(g.remove(vec![met])).await.unwrap();
    // Time bounds, as the CLI's `--lower`, `--upper`, `--latest`: of three anchors of `lived`,
    // the bounds keep those inside them (inclusive), `latest` the newest.
    let lived = |year: u32| format!("/u<joe>\t\"lived\"@[{year}-01-01T00:00:00Z]\t/c<paris>");
    let years = [lived(2001), lived(2005), lived(2009)];
    wait(g.add(years.to_vec())).await.unwrap();
    let query_subject = |bounds: serde_json::Value| {
        let bounds = js_sys::JSON::parse(&bounds.to_string()).unwrap();
        wait(g.query("triples-for-subject".into(), vec!["/u<joe>".into()], bounds))
    };
    let anchors = |found: JsValue| {
        let found = json(&found);
        let mut anchors: Vec<String> = found
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f["anchor"].as_str().map(str::to_owned))
            .collect();
        anchors.sort_unstable();
        anchors
    };
    assert_eq!(
        anchors(
            query_subject(
                json!({"lower": "2005-01-01T00:00:00Z", "upper": "2009-01-01T00:00:00Z"})
            )
            .await
            .unwrap()
        ),
        ["2005-01-01T00:00:00Z", "2009-01-01T00:00:00Z"]
    );
    assert_eq!(
        anchors(
            query_subject(json!({"upper": "2004-12-31T00:00:00Z"}))
                .await
                .unwrap()
        ),
        ["2001-01-01T00:00:00Z"]
    );
    assert_eq!(
        anchors(query_subject(json!({"latest": true})).await.unwrap()),
        ["2009-01-01T00:00:00Z"]
    );
    let e = wait(g.query(
        "triples".into(),
        vec![],
        js_sys::JSON::parse(r#"{"lower": "yesterday"}"#).unwrap(),
    ))
    .await
    .unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    wait(g.remove(years.to_vec())).await.unwrap();
    let names = json(
        &wait(Graph::names(options(gateway, None)).unwrap())
            .await
            .unwrap(),
    );
    assert!(
        names
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str() == Some(id.as_str())),
        "{names}"
    );
    // The query builder's fields: every method with its arguments, in order.
    let methods = json(&rowkit_wasm::triples::lookup_methods());
    assert_eq!(methods.as_array().unwrap().len(), 11, "{methods}");
    assert_eq!(
        methods[0],
        json!({"method": "objects", "arguments": ["subject", "predicate"]})
    );
    wait(g.remove(vec![t1.clone()])).await.unwrap();
    assert_eq!(wait(g.exist(t1)).await.unwrap(), JsValue::FALSE);
    assert_eq!(wait(g.exist(t2)).await.unwrap(), JsValue::TRUE);
    let all = json(
        &wait(g.query("triples".into(), vec![], JsValue::UNDEFINED))
            .await
            .unwrap(),
    );
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
    wait(g.drop()).await.unwrap();
    // A dropped graph is missing, not empty: lookups check the graph row first (`Graph()`).
    let e = wait(g.query("triples".into(), vec![], JsValue::UNDEFINED))
        .await
        .unwrap_err();
    assert_eq!(code(&e), "not_found");
}

/// What the classes refuse before writing (issue 31), and `validate`, the same rules for forms.
async fn refused_input(gateway: bool) {
    use rowkit_wasm::validate::validate;
    let message = |e: &JsValue| String::from(js_sys::Error::from(e.clone()).message());
    // Buckets: an existing one is not re-created (its format stays), a bad name is refused.
    let om = ObjectMetadata::new(options(gateway, None)).unwrap();
    wait(om.setup()).await.unwrap();
    let bucket = format!("wasm-{}", unique());
    let md = js_sys::JSON::parse(r#"{"name":"x","owner":"first"}"#).unwrap();
    wait(om.create_bucket(bucket.clone(), md)).await.unwrap();
    let e = wait(om.create_bucket(bucket.clone(), JsValue::UNDEFINED))
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BucketAlreadyExists");
    assert_eq!(
        message(&e),
        format!(
            "bucket {bucket} already exists (key format v1); create does not change a bucket's format"
        )
    );
    let buckets = json(&wait(om.list_buckets()).await.unwrap());
    let entry = buckets
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == bucket.as_str())
        .unwrap();
    assert_eq!(entry["value"]["owner"], "first", "{entry}");
    let e = wait(om.create_bucket("Bad_Name!!".into(), JsValue::UNDEFINED))
        .await
        .unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    assert_eq!(
        message(&e),
        validate("bucket", "Bad_Name!!").unwrap().unwrap()
    );
    // Objects of a missing bucket: NoSuchBucket, nothing written.
    let missing = format!("nobucket-{}", unique());
    let value = js_sys::JSON::parse("{}").unwrap();
    let e = wait(om.put_object(missing.clone(), "k".into(), value, JsValue::UNDEFINED))
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
    let e = wait(om.list_objects(missing.clone(), JsValue::UNDEFINED))
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
    let buckets = json(&wait(om.list_buckets()).await.unwrap());
    assert!(!buckets.to_string().contains(&missing), "{buckets}");
    // Gold: a digest Put would store as missing is refused, nothing written at that commit.
    let ts = TraceStore::new(options(gateway, None)).unwrap();
    wait(ts.setup()).await.unwrap();
    let commit = (js_sys::Date::now() as i64 / 1000 % 1_000_000) * 256 + 9;
    // A trace name of its own: a Put that went through would add it to the tile's params
    // (its point, "xyz", would be stored as missing).
    let name = format!("refused{}", unique());
    let entries = js_sys::JSON::parse(
        &json!([{"params": {"name": name.as_str()}, "digest": "xyz"}]).to_string(),
    )
    .unwrap();
    let e = wait(ts.put(commit as f64, entries, None))
        .await
        .unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    assert!(
        message(&e).starts_with(r#"digest "xyz": "#),
        "{}",
        message(&e)
    );
    let tile = json(
        &wait(ts.read_range(commit as f64, commit as f64))
            .await
            .unwrap(),
    );
    assert!(!tile.to_string().contains(&name), "{tile}");
    // Graphs: triples for a missing graph are not written (it stays unlisted).
    let id = format!("nograph{}", unique());
    let g = Graph::new(id.clone(), options(gateway, None)).unwrap();
    wait(g.setup()).await.unwrap();
    let t = "/u<a>\t\"p\"@[]\t/u<b>".to_string();
    let e = wait(g.add(vec![t.clone()])).await.unwrap_err();
    assert_eq!(code(&e), "not_found");
    assert!(message(&e).contains("does not exist"), "{}", message(&e));
    wait(g.create()).await.unwrap();
    assert_eq!(wait(g.exist(t)).await.unwrap(), JsValue::FALSE);
    let e = wait(g.add(vec!["not a triple".into()])).await.unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    wait(g.drop()).await.unwrap();
    // `validate`: null when valid, the rule otherwise; an unknown field throws.
    assert_eq!(validate("commit", "12").unwrap(), None);
    assert!(
        validate("commit", "")
            .unwrap()
            .unwrap()
            .contains("required")
    );
    assert_eq!(validate("address", "/host:1234").unwrap(), None);
    assert!(validate("nope", "x").is_err());
}

#[wasm_bindgen_test]
async fn refused_input_offline() {
    refused_input(false).await;
}

#[wasm_bindgen_test]
async fn refused_input_gateway() {
    refused_input(true).await;
}

#[wasm_bindgen_test]
async fn mounttable_offline() {
    mounttable(false).await;
}

#[wasm_bindgen_test]
async fn mounttable_gateway() {
    mounttable(true).await;
}

#[wasm_bindgen_test]
async fn tracestore_offline() {
    tracestore(false).await;
}

#[wasm_bindgen_test]
async fn tracestore_gateway() {
    tracestore(true).await;
}

#[wasm_bindgen_test]
async fn objmeta_offline() {
    objmeta(false).await;
}

#[wasm_bindgen_test]
async fn objmeta_gateway() {
    objmeta(true).await;
}

/// `migrateBucket` and `migrationStatus` (docs/migration.md §3, §7.3) on a v1 bucket the
/// client created (with a uid, which the migrator names the bucket by): offline with both
/// gates (the page's clock jumps over the settle waits) the run ends `removed` and the bucket
/// is v0; through the gateway without gates (no wait) it stops in `verifying`. Events and
/// result are the CLI's documents; every object reads as written.
async fn objmeta_migrate(gateway: bool) {
    let om = ObjectMetadata::new(options(gateway, None)).unwrap();
    wait(om.setup()).await.unwrap();
    let bucket = format!("wasm-mig-{}", unique());
    wait(om.create_bucket(bucket.clone(), JsValue::UNDEFINED))
        .await
        .unwrap();
    let keys = ["a", "dir/b", "dir/c"];
    let value = |key: &str| json!({ "key": key, "content-length": key.len() });
    for key in keys {
        let v = js_sys::JSON::parse(&value(key).to_string()).unwrap();
        wait(om.put_object(bucket.clone(), key.into(), v, JsValue::UNDEFINED))
            .await
            .unwrap();
    }
    let status = json(&wait(om.migration_status(bucket.clone())).await.unwrap());
    assert_eq!(
        status,
        json!({"bucket": bucket, "vformat": "v1", "marker": null, "checkpoint": null})
    );
    // Refused before anything is written.
    let opts = |v: serde_json::Value| js_sys::JSON::parse(&v.to_string()).unwrap();
    let e = wait(om.migrate_bucket(bucket.clone(), "v2".into(), JsValue::UNDEFINED, None))
        .await
        .unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    let e = wait(om.migrate_bucket(
        bucket.clone(),
        "v0".into(),
        opts(json!({"settleMs": 1000})),
        None,
    ))
    .await
    .unwrap_err();
    assert_eq!(code(&e), "usage_error");
    let e = wait(om.migrate_bucket(
        bucket.clone(),
        "v0".into(),
        opts(json!({"switch": "yes"})),
        None,
    ))
    .await
    .unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    let status = json(&wait(om.migration_status(bucket.clone())).await.unwrap());
    assert_eq!(
        status["marker"],
        serde_json::Value::Null,
        "a refusal wrote nothing"
    );

    let events = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let keep = events.clone();
    let on_event =
        Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| keep.borrow_mut().push(json(&e)));
    let gates = if gateway {
        json!({})
    } else {
        json!({"switch": true, "finish": true})
    };
    let result = wait(
        om.migrate_bucket(
            bucket.clone(),
            "v0".into(),
            opts(gates),
            Some(
                on_event
                    .as_ref()
                    .unchecked_ref::<js_sys::Function>()
                    .clone(),
            ),
        ),
    )
    .await
    .unwrap();
    let result = json(&result);
    let walk: &[Option<&str>] = if gateway {
        &[None, Some("copying"), Some("verifying")]
    } else {
        &[
            None,
            Some("copying"),
            Some("verifying"),
            Some("switching"),
            Some("switched"),
            Some("cleaning"),
            None,
        ]
    };
    assert_eq!(
        result["state"],
        if gateway { "verifying" } else { "removed" },
        "{result}"
    );
    assert_eq!(
        (&result["bucket"], &result["to"], &result["abort"]),
        (&json!(bucket), &json!("v0"), &json!(false))
    );
    let events = events.borrow().clone();
    let changes: Vec<serde_json::Value> = events
        .iter()
        .filter(|e| e["event"] == "state_changed")
        .map(|e| json!([e["from"], e["to"]]))
        .collect();
    let want: Vec<serde_json::Value> = walk.windows(2).map(|w| json!([w[0], w[1]])).collect();
    assert_eq!(changes, want);
    // The copy pass: one row per object (a master each), each copied.
    let copy = events
        .iter()
        .rfind(|e| e["event"] == "progress" && e["state"] == "copying")
        .unwrap();
    assert_eq!(
        (&copy["rows_scanned"], &copy["copied"]),
        (&json!(keys.len()), &json!(keys.len()))
    );
    for key in keys {
        let got = json(
            &wait(om.get_object(bucket.clone(), key.into(), None))
                .await
                .unwrap(),
        );
        assert_eq!(got, value(key));
    }
    let status = json(&wait(om.migration_status(bucket.clone())).await.unwrap());
    if gateway {
        assert_eq!(
            (&status["vformat"], &status["marker"]["state"]),
            (&json!("v1"), &json!("verifying"))
        );
    } else {
        assert_eq!(
            (&status["vformat"], &status["marker"]),
            (&json!("v0"), &serde_json::Value::Null)
        );
    }
}

/// `TraceStore.migrate` and `migrationStatus` (docs/migration.md §5, §7.3): an md5 table
/// migrated into a digest-id table of its own — refused in one line naming `rowkit gold setup`
/// while the target does not exist; offline with both gates (the page's clock jumps over the
/// settle waits) the run ends `cleaned` and the target reads every point; through the gateway
/// without gates it stops in `verifying`. Events and result are the CLI's documents.
async fn tracestore_migrate(gateway: bool) {
    let source = format!("wasm-gmig-{}", unique());
    let target = format!("{source}-dig");
    let client = |table: &str, layout: &str| {
        let o = options(gateway, Some(table));
        js_sys::Reflect::set(&o, &"layout".into(), &layout.into()).unwrap();
        TraceStore::new(o).unwrap()
    };
    let ts = client(&source, "md5");
    wait(ts.setup()).await.unwrap();
    let digests = [
        "8db9913366b07bd14df9a68459e2958b",
        "9e1d402515193304cafbdf02b8fd751b",
    ];
    let (first, second) = (7_i64, 256 + 9);
    for (commit, digest) in [(first, digests[0]), (second, digests[1])] {
        let entries = js_sys::JSON::parse(
            &json!([
                {"params": {"name": "t1", "os": "linux"}, "digest": digest},
                {"params": {"name": "t2", "os": "linux"}, "digest": digest}
            ])
            .to_string(),
        )
        .unwrap();
        wait(ts.put(commit as f64, entries, None)).await.unwrap();
    }
    let status = json(&wait(ts.migration_status()).await.unwrap());
    assert_eq!(
        status,
        json!({"table": source, "layout": "md5", "marker": null, "checkpoint": null})
    );
    let opts = |v: serde_json::Value| js_sys::JSON::parse(&v.to_string()).unwrap();
    // Refused before anything is written: the same layout, a bad option, no target table.
    let e = wait(ts.migrate(target.clone(), "md5".into(), JsValue::UNDEFINED, None))
        .await
        .unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    let e = wait(ts.migrate(
        target.clone(),
        "digest-id".into(),
        opts(json!({"options": "keep"})),
        None,
    ))
    .await
    .unwrap_err();
    assert_eq!(code(&e), "invalid_argument");
    let e = wait(ts.migrate(target.clone(), "digest-id".into(), JsValue::UNDEFINED, None))
        .await
        .unwrap_err();
    let message = js_sys::Reflect::get(&e, &"message".into())
        .unwrap()
        .as_string()
        .unwrap();
    assert_eq!(code(&e), "usage_error", "{message}");
    let setup = format!("rowkit gold setup --table {target} --layout digest-id");
    assert!(
        message.contains(&setup) && !message.contains('\n'),
        "{message}"
    );
    let status = json(&wait(ts.migration_status()).await.unwrap());
    assert_eq!(
        status["marker"],
        serde_json::Value::Null,
        "a refusal wrote nothing"
    );

    wait(client(&target, "digest-id").setup()).await.unwrap();
    let events = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let keep = events.clone();
    let on_event =
        Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| keep.borrow_mut().push(json(&e)));
    let gates = if gateway {
        json!({})
    } else {
        json!({"switch": true, "finish": true})
    };
    let result = json(
        &wait(
            ts.migrate(
                target.clone(),
                "digest-id".into(),
                opts(gates),
                Some(
                    on_event
                        .as_ref()
                        .unchecked_ref::<js_sys::Function>()
                        .clone(),
                ),
            ),
        )
        .await
        .unwrap(),
    );
    assert_eq!(
        result["state"],
        if gateway { "verifying" } else { "cleaned" },
        "{result}"
    );
    assert_eq!(
        (
            &result["table"],
            &result["target_table"],
            &result["to"],
            &result["abort"]
        ),
        (
            &json!(source),
            &json!(target),
            &json!("digest-id"),
            &json!(false)
        )
    );
    let walk: &[Option<&str>] = if gateway {
        &[None, Some("copying"), Some("verifying")]
    } else {
        &[
            None,
            Some("copying"),
            Some("verifying"),
            Some("switching"),
            Some("switched"),
            Some("cleaning"),
        ]
    };
    let events = events.borrow().clone();
    let changes: Vec<serde_json::Value> = events
        .iter()
        .filter(|e| e["event"] == "state_changed")
        .map(|e| json!([e["from"], e["to"]]))
        .collect();
    let want: Vec<serde_json::Value> = walk.windows(2).map(|w| json!([w[0], w[1]])).collect();
    assert_eq!(changes, want);
    // The copy pass wrote the 4 points put (2 traces × 2 commits).
    let copied: u64 = result["passes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "copy")
        .map(|p| p["copied"].as_u64().unwrap())
        .sum();
    assert_eq!(copied, 4, "{result}");
    // The target reads what was put.
    let moved = json(
        &wait(client(&target, "digest-id").read_range(0.0, 511.0))
            .await
            .unwrap(),
    );
    let cell = |id: &str, commit: i64| {
        let at = moved["commits"]
            .as_array()
            .unwrap()
            .iter()
            .position(|c| c.as_i64() == Some(commit))
            .unwrap();
        let trace = moved["traces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap_or_else(|| panic!("{id}: {moved}"));
        trace["digests"][at].clone()
    };
    for id in [",name=t1,os=linux,", ",name=t2,os=linux,"] {
        assert_eq!(
            (cell(id, first), cell(id, second)),
            (json!(digests[0]), json!(digests[1])),
            "{id}"
        );
    }
    let status = json(&wait(ts.migration_status()).await.unwrap());
    let state = if gateway { "verifying" } else { "cleaning" };
    assert_eq!(
        (
            &status["marker"]["state"],
            &status["marker"]["target_table"]
        ),
        (&json!(state), &json!(target)),
        "{status}"
    );
}

#[wasm_bindgen_test]
async fn tracestore_migrate_offline() {
    tracestore_migrate(false).await;
}

#[wasm_bindgen_test]
async fn tracestore_migrate_gateway() {
    tracestore_migrate(true).await;
}

#[wasm_bindgen_test]
async fn objmeta_migrate_offline() {
    objmeta_migrate(false).await;
}

#[wasm_bindgen_test]
async fn objmeta_migrate_gateway() {
    objmeta_migrate(true).await;
}

/// The `token` option reaches the gateway started with `--token` (in the browser after a CORS
/// preflight that allows `authorization`), and its 401 reaches JS as `unauthenticated`.
#[wasm_bindgen_test]
async fn objmeta_through_a_token_gateway() {
    objmeta_with(token_options(Some(test_token()))).await;
    let wrong = format!("{}x", test_token());
    for token in [None, Some(wrong.as_str())] {
        let e = scan_one_row_error(token_options(token), "objmeta").await;
        assert_eq!(code(&e), "unauthenticated", "{token:?}");
    }
}

#[wasm_bindgen_test]
async fn triples_offline() {
    triples(false).await;
}

#[wasm_bindgen_test]
async fn triples_gateway() {
    triples(true).await;
}

#[wasm_bindgen_test]
async fn scan_rows_decodes_every_key() {
    for gateway in [false, true] {
        let id = format!("scan{}", unique());
        let g = Graph::new(id.clone(), options(gateway, None)).unwrap();
        wait(g.setup()).await.unwrap();
        wait(g.create()).await.unwrap();
        wait(g.add(vec!["/u<a>\t\"p\"@[]\t/u<b>".into()]))
            .await
            .unwrap();
        let prefix = format!("{id}:");
        let scan_narrowed = |limit: u32, after: JsValue, narrowing: serde_json::Value| {
            let prefix = prefix.clone();
            async move {
                wait(rowkit_wasm::browse::scan_rows(
                    options(gateway, None),
                    "badwolf".into(),
                    JsValue::from_str(&prefix),
                    limit,
                    None,
                    after,
                    rowkit_wasm::js::to_js(&narrowing),
                ))
                .await
                .map(|rows| json(&rows).as_array().unwrap().clone())
            }
        };
        let scan = |limit: u32, after: JsValue| {
            let narrowed = scan_narrowed(limit, after, serde_json::Value::Null);
            async move { narrowed.await.unwrap() }
        };
        let rows = scan(0, JsValue::UNDEFINED).await;
        assert_eq!(rows.len(), 4, "{rows:?}");
        for r in &rows {
            assert_eq!(r["decoded"]["schema"], "graph", "{r}");
            // The key's segments, from the codec, cover it byte for byte.
            let segments = r["decoded"]["segments"].as_array().unwrap();
            let hex: String = segments
                .iter()
                .map(|g| g["bytes_hex"].as_str().unwrap())
                .collect();
            assert_eq!(hex, r["row_key_hex"].as_str().unwrap(), "{r}");
        }
        // Pages of 3: the second starts after the first's last key and holds the rest.
        let first = scan(3, JsValue::UNDEFINED).await;
        let last = first[2]["row_key"].as_str().unwrap();
        let second = scan(3, JsValue::from_str(last)).await;
        let keys = |rows: &[serde_json::Value]| -> Vec<String> {
            rows.iter()
                .map(|r| r["row_key"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!([keys(&first), keys(&second)].concat(), keys(&rows));

        // A range end (exclusive) after a start (inclusive): rows 1 and 2 of the four.
        let key = |i: usize| rows[i]["row_key"].as_str().unwrap().to_string();
        let between = scan_narrowed(
            0,
            JsValue::UNDEFINED,
            serde_json::json!({"start": key(1), "end": key(3)}),
        )
        .await
        .unwrap();
        assert_eq!(keys(&between), vec![key(1), key(2)]);
        let inverted = scan_narrowed(
            0,
            JsValue::UNDEFINED,
            serde_json::json!({"start": key(3), "end": key(1)}),
        )
        .await
        .unwrap_err();
        assert_eq!(code(&inverted), "invalid_argument");
        // A family and a qualifier filter keep only those cells; rows without one are left out.
        let cell = &rows[0]["cells"][0];
        let (family, qualifier) = (
            cell["family"].as_str().unwrap(),
            cell["qualifier"].as_str().unwrap(),
        );
        for (narrowing, only_qualifier) in [
            (serde_json::json!({"family": family}), None),
            (
                serde_json::json!({"family": family, "qualifier": qualifier}),
                Some(qualifier),
            ),
        ] {
            let keep = |c: &serde_json::Value| {
                c["family"] == family && only_qualifier.is_none_or(|q| c["qualifier"] == q)
            };
            let expected: Vec<(String, usize)> = rows
                .iter()
                .map(|r| {
                    (
                        r["row_key"].as_str().unwrap().to_string(),
                        r["cells"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .filter(|c| keep(c))
                            .count(),
                    )
                })
                .filter(|(_, n)| *n > 0)
                .collect();
            let got: Vec<(String, usize)> = scan_narrowed(0, JsValue::UNDEFINED, narrowing.clone())
                .await
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["row_key"].as_str().unwrap().to_string(),
                        r["cells"].as_array().unwrap().len(),
                    )
                })
                .collect();
            assert_eq!(got, expected, "{narrowing}");
        }
        let none = scan_narrowed(
            0,
            JsValue::UNDEFINED,
            serde_json::json!({"family": "no-such-family"}),
        )
        .await
        .unwrap();
        assert!(none.is_empty(), "{none:?}");
        wait(g.drop()).await.unwrap();
    }
}

/// `deadlineMs` bounds a scan, retries included: against a port nothing listens on, the
/// error (`unavailable`) comes within the deadline and a little more, not after a minute.
#[wasm_bindgen_test]
async fn scan_rows_ends_at_the_deadline() {
    let deadline_ms = 1500;
    let options = options_at("http://127.0.0.1:1", None, Some(deadline_ms));
    let started = js_sys::Date::now();
    let e = scan_one_row_error(options, "badwolf").await;
    let took = js_sys::Date::now() - started;
    assert_eq!(code(&e), "unavailable");
    assert!(
        took < f64::from(deadline_ms) + 2000.0,
        "the scan failed after {took} ms"
    );
}

/// A family as `listTables` shows it: `{name, gcRule}`, the rule in Google's JSON, written out
/// here for the rules the schemas use.
fn listed_family(f: &rowkit_codec::model::ColumnFamily) -> serde_json::Value {
    use rowkit_codec::model::GcRule;
    let rule = match &f.gc_rule {
        None => serde_json::Value::Null,
        Some(GcRule::MaxNumVersions(n)) => json!({ "maxNumVersions": n }),
        Some(other) => panic!("no schema family has the rule {other:?}"),
    };
    json!({"name": f.name, "gcRule": rule})
}

/// `rowkit serve` on an empty memory store: each class's `setup()` creates its tables through
/// the gateway's table admin (tables of this run's own names, so the Node and the browser runs
/// each start from nothing), then a write and a read work, and `listTables` shows the tables
/// with the schemas' families.
#[wasm_bindgen_test]
async fn setup_creates_every_schemas_tables_through_the_gateway() {
    let u = unique();
    let at = |table: &str| options_at(empty_gateway_url(), Some(table), None);

    let mt_table = format!("mt{u}");
    let mt = MountTable::new(at(&mt_table)).unwrap();
    wait(mt.setup()).await.unwrap();
    wait(mt.mount("a/b".into(), "/host:1".into(), 600, None))
        .await
        .unwrap();
    let r = json(&wait(mt.resolve("a/b".into())).await.unwrap());
    assert_eq!(r["servers"][0]["server"], "/host:1", "{r}");

    let gold_table = format!("gold{u}");
    let ts = TraceStore::new(at(&gold_table)).unwrap();
    wait(ts.setup()).await.unwrap();
    // Again: the table exists with every family, so nothing changes.
    wait(ts.setup()).await.unwrap();
    let entries = js_sys::JSON::parse(
        r#"[{"params": {"name": "t1"}, "digest": "8db9913366b07bd14df9a68459e2958b"}]"#,
    )
    .unwrap();
    wait(ts.put(3.0, entries, None)).await.unwrap();
    let tile = json(&wait(ts.read_range(3.0, 3.0)).await.unwrap());
    assert_eq!(
        tile["traces"][0]["digests"][0], "8db9913366b07bd14df9a68459e2958b",
        "{tile}"
    );

    let s3_table = format!("objmeta{u}");
    let om = ObjectMetadata::new(at(&s3_table)).unwrap();
    wait(om.setup()).await.unwrap();
    wait(om.create_bucket("photos".into(), JsValue::UNDEFINED))
        .await
        .unwrap();
    let value = js_sys::JSON::parse(r#"{"content-length": 4}"#).unwrap();
    wait(om.put_object("photos".into(), "cat.jpg".into(), value, JsValue::UNDEFINED))
        .await
        .unwrap();
    let got = json(
        &wait(om.get_object("photos".into(), "cat.jpg".into(), None))
            .await
            .unwrap(),
    );
    assert_eq!(got, json!({"content-length": 4}));

    let graph_table = format!("badwolf{u}");
    let g = Graph::new("family".into(), at(&graph_table)).unwrap();
    wait(g.setup()).await.unwrap();
    wait(g.create()).await.unwrap();
    wait(g.add(vec!["/u<joe>\t\"parent_of\"@[]\t/u<mary>".into()]))
        .await
        .unwrap();
    assert_eq!(children_of_joe(&g).await, ["/u<mary>"]);

    // listTables: this run's tables with the families each schema's setup asks for.
    let listed = json(
        &wait(rowkit_wasm::browse::list_tables(options_at(
            empty_gateway_url(),
            None,
            None,
        )))
        .await
        .unwrap(),
    );
    let families_of = |table: &str| -> serde_json::Value {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == table)
            .unwrap_or_else(|| panic!("{table} not listed: {listed}"))["families"]
            .clone()
    };
    let expected = |mut families: Vec<rowkit_codec::model::ColumnFamily>| {
        families.sort_by(|a, b| a.name.cmp(&b.name));
        serde_json::Value::Array(families.iter().map(listed_family).collect())
    };
    let (node, counter) = rowkit_client::mounttable::table_families();
    assert_eq!(families_of(&mt_table), expected(node));
    assert_eq!(
        families_of(&rowkit_codec::mounttable::counter_table(&mt_table)),
        expected(counter)
    );
    assert_eq!(
        families_of(&gold_table),
        expected(rowkit_codec::tracestore::Layout::Md5.families())
    );
    assert_eq!(
        families_of(&s3_table),
        expected(rowkit_codec::objmeta::cells::families())
    );
    assert_eq!(
        families_of(&graph_table),
        expected(rowkit_client::triples::table_families().to_vec())
    );
}

fn message(e: &JsValue) -> String {
    js_sys::Reflect::get(e, &"message".into())
        .unwrap()
        .as_string()
        .unwrap_or_default()
}

/// The first call of each class on a store without its table (this run's own table names,
/// offline and through `rowkit serve` on an empty store) says what to do: `not_set_up`, naming
/// the table and Set up.
#[wasm_bindgen_test]
async fn a_store_without_the_tables_says_to_set_it_up() {
    let u = unique();
    for gateway in [false, true] {
        let at = |table: &str| {
            if gateway {
                options_at(empty_gateway_url(), Some(table), None)
            } else {
                options(false, Some(table))
            }
        };
        let expect = |e: JsValue, what: &str, table: &str| {
            assert_eq!(code(&e), "not_set_up", "{gateway}: {}", message(&e));
            assert_eq!(
                message(&e),
                format!(
                    "no {what} here (table \"{table}\" does not exist): Set up creates its tables"
                ),
                "{gateway}"
            );
        };
        let table = format!("nomt{u}");
        let mt = MountTable::new(at(&table)).unwrap();
        let e = wait(mt.resolve("a".into())).await.unwrap_err();
        expect(e, "mount table", &table);
        let table = format!("nogold{u}");
        let ts = TraceStore::new(at(&table)).unwrap();
        let e = wait(ts.tile(None)).await.unwrap_err();
        expect(e, "trace store", &table);
        let table = format!("nos3{u}");
        let om = ObjectMetadata::new(at(&table)).unwrap();
        let e = wait(om.list_buckets()).await.unwrap_err();
        expect(e, "buckets", &table);
        let table = format!("nograph{u}");
        let g = Graph::new("g".into(), at(&table)).unwrap();
        let e = wait(g.query("triples".into(), vec![], JsValue::UNDEFINED))
            .await
            .unwrap_err();
        expect(e, "triple store", &table);
    }
}

/// One call of each class (after `setup` when `set_up`), with its error and how long it took
/// to come, in ms.
async fn each_class_fails(
    url: &str,
    deadline_ms: u32,
    set_up: bool,
) -> Vec<(String, JsValue, f64)> {
    let opts = || options_at(url, None, Some(deadline_ms));
    let mt = MountTable::new(opts()).unwrap();
    let ts = TraceStore::new(opts()).unwrap();
    let om = ObjectMetadata::new(opts()).unwrap();
    let g = Graph::new("g".into(), opts()).unwrap();
    if set_up {
        // A session that works: every class set up and read once.
        wait(mt.setup()).await.unwrap();
        wait(ts.setup()).await.unwrap();
        wait(om.setup()).await.unwrap();
        wait(g.setup()).await.unwrap();
        wait(g.create()).await.unwrap();
        wait(mt.mount("a".into(), "/host:1".into(), 600, None))
            .await
            .unwrap();
        wait(ts.tile(None)).await.unwrap();
        wait(om.list_buckets()).await.unwrap();
        wait(g.query("triples".into(), vec![], JsValue::UNDEFINED))
            .await
            .unwrap();
        stoppable_gateway("stop").await;
    }
    let mut failures = Vec::new();
    // One after the other, each timed alone.
    for what in [
        "MountTable.resolve",
        "TraceStore.tile",
        "ObjectMetadata.listBuckets",
        "Graph.query",
    ] {
        let started = js_sys::Date::now();
        let call = match what {
            "MountTable.resolve" => mt.resolve("a".into()),
            "TraceStore.tile" => ts.tile(None),
            "ObjectMetadata.listBuckets" => om.list_buckets(),
            _ => g.query("triples".into(), vec![], JsValue::UNDEFINED),
        };
        let e = wait(call).await.unwrap_err();
        failures.push((what.to_string(), e, js_sys::Date::now() - started));
    }
    failures
}

/// Checks that every failure came within the deadline + 2 s, as `unavailable`, saying which
/// gateway did not answer and the last error it gave (and "within 3 s" when the operation
/// waited that long: some give up sooner, when no retry fits).
fn assert_readable_unavailable(url: &str, failures: &[(String, JsValue, f64)]) {
    for (what, e, took_ms) in failures {
        let text = message(e);
        assert!(*took_ms < 5000.0, "{what} took {took_ms} ms: {text}");
        assert_eq!(code(e), "unavailable", "{what}: {text}");
        let within = if *took_ms >= 2500.0 {
            " within 3 s"
        } else {
            ""
        };
        assert!(
            text.starts_with(&format!(
                "the gateway at {url} did not answer{within} (last error: "
            )),
            "{what} ({took_ms} ms): {text}"
        );
    }
}

/// `deadlineMs` against a port nothing listens on: each class fails within the deadline
/// (+ 2 s) with a readable `unavailable`.
#[wasm_bindgen_test]
async fn a_closed_port_fails_within_the_deadline() {
    let url = closed_gateway_url();
    let failures = each_class_fails(url, 3000, false).await;
    assert_readable_unavailable(url, &failures);
}

/// `deadlineMs` against a real `rowkit serve` stopped mid-session: each class, which worked a
/// moment before, fails within the deadline (+ 2 s) with a readable `unavailable`.
#[wasm_bindgen_test]
async fn a_server_stopped_mid_session_fails_within_the_deadline() {
    stoppable_gateway("start").await;
    let url = stoppable_gateway_url();
    let failures = each_class_fails(url, 3000, true).await;
    assert_readable_unavailable(url, &failures);
}
