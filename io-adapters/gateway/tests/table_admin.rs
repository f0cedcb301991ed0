//! The table admin calls in Google's JSON shapes, against the real gateway on `127.0.0.1:0`
//! over a MemoryStore, driven over HTTP: create with families and GC rules, get, list, modify,
//! drop a family, delete; Google's error statuses; the token; bad bodies; CORS for `DELETE`.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use common::{Answer, client, local, runtime, start};
use http_body_util::Full;
use rowkit_codec::model::{ColumnFamily, GcRule};
use rowkit_store::{MemoryStore, Store};
use rowkit_gateway::GatewayConfig;
use rowkit_statemachines::Code;
use serde_json::json;
use tokio::runtime::Runtime;

const TABLES: &str = "/v2/projects/p/instances/i/tables";
const TABLE: &str = "/v2/projects/p/instances/i/tables/t";
const MODIFY: &str = "/v2/projects/p/instances/i/tables/t:modifyColumnFamilies";

/// One request: `method` on `path`, a JSON body unless `None`, `auth` as the bearer token.
fn send(
    rt: &Runtime,
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
    auth: Option<&str>,
) -> Answer {
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    if let Some(token) = auth {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    let req = req
        .body(Full::new(Bytes::from(body.unwrap_or("").to_string())))
        .unwrap();
    common::send(rt, req)
}

#[test]
fn create_get_list_modify_drop_and_delete_a_table() {
    let rt = runtime();
    let store = Arc::new(MemoryStore::new());
    let running = start(&rt, store.clone(), local());
    let addr = running.addr;
    let call =
        |method: &str, path: &str, body: Option<&str>| send(&rt, addr, method, path, body, None);

    // An empty instance lists no table.
    let answer = call("GET", TABLES, None);
    assert_eq!((answer.status, answer.json()), (200, json!({})));

    let create = json!({
        "tableId": "t",
        "table": {"columnFamilies": {
            "keep": {},
            "one": {"gcRule": {"maxNumVersions": 1}},
            "hour": {"gcRule": {"maxAge": "3600s"}},
            "both": {"gcRule": {"union": {"rules": [{"maxNumVersions": 2}, {"maxAge": "1.5s"}]}}},
            "all": {"gcRule": {"intersection": {"rules": [{"maxNumVersions": 3}, {"maxAge": "86400s"}]}}}
        }},
        "initialSplits": [{"key": "bQ=="}]
    })
    .to_string();
    let answer = call("POST", TABLES, Some(&create));
    assert_eq!(answer.status, 200, "{}", answer.error().message);
    let expected = json!({
        "name": "projects/p/instances/i/tables/t",
        "columnFamilies": {
            "all": {"gcRule": {"intersection": {"rules": [{"maxNumVersions": 3}, {"maxAge": "86400s"}]}}},
            "both": {"gcRule": {"union": {"rules": [{"maxNumVersions": 2}, {"maxAge": "1.500s"}]}}},
            "hour": {"gcRule": {"maxAge": "3600s"}},
            "keep": {},
            "one": {"gcRule": {"maxNumVersions": 1}}
        },
        "granularity": "MILLIS"
    });
    assert_eq!(answer.json(), expected);
    // What the store holds is what was asked for, read by the store itself.
    let families = store.families("t").unwrap();
    assert_eq!(
        families.iter().find(|f| f.name == "both").unwrap().gc_rule,
        Some(GcRule::Union(vec![
            GcRule::MaxNumVersions(2),
            GcRule::MaxAge(1_500_000)
        ]))
    );
    assert_eq!(
        families.iter().find(|f| f.name == "keep").unwrap().gc_rule,
        None
    );
    assert_eq!(
        rowkit_store::TableStorage::splits(store.as_ref(), "t")
            .unwrap()
            .as_ref(),
        &[b"m".to_vec()]
    );

    // GetTable: the schema view by default, the others on request.
    assert_eq!(call("GET", TABLE, None).json(), expected);
    assert_eq!(
        call("GET", &format!("{TABLE}?view=NAME_ONLY"), None).json(),
        json!({"name": "projects/p/instances/i/tables/t"})
    );
    let full = call("GET", &format!("{TABLE}?view=FULL"), None).json();
    assert_eq!(full["columnFamilies"], expected["columnFamilies"]);
    assert_eq!(
        full["clusterStates"]["i-c1"]["replicationState"],
        json!("READY")
    );
    let answer = call("GET", &format!("{TABLE}?view=EVERYTHING"), None);
    assert_eq!(
        (answer.status, answer.error().code),
        (400, Code::InvalidArgument)
    );

    // ListTables: names only by default, families with the schema view.
    store.create_table("u", &[ColumnFamily::new("cf")]).unwrap();
    assert_eq!(
        call("GET", TABLES, None).json(),
        json!({"tables": [
            {"name": "projects/p/instances/i/tables/t"},
            {"name": "projects/p/instances/i/tables/u"}
        ]})
    );
    let listed = call("GET", &format!("{TABLES}?view=SCHEMA_VIEW"), None).json();
    assert_eq!(listed["tables"][0], expected);
    assert_eq!(listed["tables"][1]["columnFamilies"], json!({"cf": {}}));

    // Creating it again: ALREADY_EXISTS (409), the table unchanged.
    let answer = call("POST", TABLES, Some(&create));
    assert_eq!(
        (answer.status, answer.error().code),
        (409, Code::AlreadyExists)
    );
    assert!(
        answer.error().message.contains("\"t\""),
        "{}",
        answer.error().message
    );

    // ModifyColumnFamilies: create, update and drop in one request, answered with the table.
    let modify = json!({"modifications": [
        {"id": "new", "create": {"gcRule": {"maxNumVersions": 5}}},
        {"id": "keep", "update": {"gcRule": {"maxAge": "60s"}}},
        {"id": "hour", "drop": true}
    ]})
    .to_string();
    let answer = call("POST", MODIFY, Some(&modify));
    assert_eq!(answer.status, 200, "{}", answer.error().message);
    let families = &answer.json()["columnFamilies"];
    assert_eq!(families["new"], json!({"gcRule": {"maxNumVersions": 5}}));
    assert_eq!(families["keep"], json!({"gcRule": {"maxAge": "60s"}}));
    assert!(families.get("hour").is_none(), "{families}");
    assert_eq!(
        store
            .families("t")
            .unwrap()
            .iter()
            .map(|f| f.name.as_str())
            .collect::<Vec<_>>(),
        ["all", "both", "keep", "new", "one"]
    );
    // Changes are all checked before any is applied: a create of a present family fails the
    // whole request (ALREADY_EXISTS), an update of a missing one NOT_FOUND.
    let answer = call(
        "POST",
        MODIFY,
        Some(r#"{"modifications": [{"id": "x", "create": {}}, {"id": "new", "create": {}}]}"#),
    );
    assert_eq!(
        (answer.status, answer.error().code),
        (409, Code::AlreadyExists)
    );
    assert!(!store.families("t").unwrap().iter().any(|f| f.name == "x"));
    let answer = call(
        "POST",
        MODIFY,
        Some(r#"{"modifications": [{"id": "nope", "update": {}}]}"#),
    );
    assert_eq!((answer.status, answer.error().code), (404, Code::NotFound));

    // DeleteTable: `{}`, then NOT_FOUND for every call on it.
    let answer = call("DELETE", TABLE, None);
    assert_eq!((answer.status, answer.body.as_slice()), (200, &b"{}"[..]));
    for (method, path, body) in [
        ("GET", TABLE, None),
        ("DELETE", TABLE, None),
        ("POST", MODIFY, Some(modify.as_str())),
    ] {
        let answer = call(method, path, body);
        assert_eq!(
            (answer.status, answer.error().code),
            (404, Code::NotFound),
            "{method} {path}"
        );
    }
    assert_eq!(store.list_tables().unwrap(), ["u"]);
}

#[test]
fn bad_requests_get_a_readable_400_and_wrong_methods_405() {
    let rt = runtime();
    let running = start(&rt, Arc::new(MemoryStore::new()), local());
    let addr = running.addr;
    let call =
        |method: &str, path: &str, body: Option<&str>| send(&rt, addr, method, path, body, None);
    for (body, says) in [
        ("{", "Invalid JSON payload"),
        (r#"{"table": {}}"#, "tableId is required"),
        (r#"{"tableId": "t", "tabel": {}}"#, "unknown field `tabel`"),
        (
            r#"{"tableId": "t", "table": {"columnFamilies": {"cf": {"gcRule": {"maxAge": "1h"}}}}}"#,
            "not a duration",
        ),
        (
            r#"{"tableId": "t", "table": {"columnFamilies": {"cf": {"gcRule": {"maxNumVersions": 1, "maxAge": "1s"}}}}}"#,
            "more than one member",
        ),
        // The store's own checks: table id, family name, GC rule values.
        (r#"{"tableId": "bad id!"}"#, "bad id!"),
        (
            r#"{"tableId": "t", "table": {"columnFamilies": {"c f": {}}}}"#,
            "c f",
        ),
        (
            r#"{"tableId": "t", "table": {"columnFamilies": {"cf": {"gcRule": {"maxNumVersions": 0}}}}}"#,
            "at least 1",
        ),
        (
            r#"{"tableId": "t", "initialSplits": [{"key": "!!"}]}"#,
            "invalid base64",
        ),
    ] {
        let answer = call("POST", TABLES, Some(body));
        assert_eq!(
            (answer.status, answer.error().code),
            (400, Code::InvalidArgument),
            "{body}: {}",
            answer.error().message
        );
        assert!(
            answer.error().message.contains(says),
            "{body}: {:?} should say {says:?}",
            answer.error().message
        );
    }
    // A wrong content type, as for the data calls.
    let req = hyper::Request::post(format!("http://{addr}{TABLES}"))
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from(r#"{"tableId": "t"}"#)))
        .unwrap();
    let status = rt.block_on(async { client().request(req).await.unwrap().status().as_u16() });
    assert_eq!(status, 400);
    // Wrong methods: 405 with Allow.
    for (method, path, allow) in [
        ("DELETE", TABLES, "GET, POST"),
        ("POST", TABLE, "GET, DELETE"),
        ("GET", MODIFY, "POST"),
    ] {
        let answer = call(method, path, None);
        assert_eq!(answer.status, 405, "{method} {path}");
        assert_eq!(answer.headers["allow"], allow);
    }
    // Nothing was created by any of it.
    assert_eq!(call("GET", TABLES, None).json(), json!({}));
}

#[test]
fn admin_calls_need_the_token_and_pass_cors() {
    let rt = runtime();
    let running = start(
        &rt,
        Arc::new(MemoryStore::new()),
        GatewayConfig {
            token: Some("s3cret".into()),
            ..local()
        },
    );
    let addr = running.addr;
    let create = r#"{"tableId": "t", "table": {"columnFamilies": {"cf": {}}}}"#;
    for auth in [None, Some("wrong")] {
        for (method, path, body) in [
            ("POST", TABLES, Some(create)),
            ("GET", TABLES, None),
            ("GET", TABLE, None),
            ("DELETE", TABLE, None),
            (
                "POST",
                MODIFY,
                Some(r#"{"modifications": [{"id": "x", "create": {}}]}"#),
            ),
        ] {
            let answer = send(&rt, addr, method, path, body, auth);
            assert_eq!(
                (answer.status, answer.error().code),
                (401, Code::Unauthenticated),
                "{method} {path} {auth:?}"
            );
        }
    }
    let answer = send(&rt, addr, "POST", TABLES, Some(create), Some("s3cret"));
    assert_eq!(answer.status, 200, "{}", answer.error().message);

    // A page on another loopback origin: DELETE is preflighted and allowed, and the answer
    // carries the CORS header.
    let origin = "http://127.0.0.1:8000";
    let preflight = hyper::Request::options(format!("http://{addr}{TABLE}"))
        .header("origin", origin)
        .header("access-control-request-method", "DELETE")
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .body(Full::new(Bytes::new()))
        .unwrap();
    let (status, headers) = rt.block_on(async {
        let r = client().request(preflight).await.unwrap();
        (r.status().as_u16(), r.headers().clone())
    });
    assert!(status < 300, "{status}");
    assert_eq!(headers["access-control-allow-origin"], origin);
    let methods = headers["access-control-allow-methods"].to_str().unwrap();
    assert!(methods.contains("DELETE"), "{methods}");
    let req = hyper::Request::delete(format!("http://{addr}{TABLE}"))
        .header("origin", origin)
        .header("authorization", "Bearer s3cret")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let headers = rt.block_on(async { client().request(req).await.unwrap().headers().clone() });
    assert_eq!(headers["access-control-allow-origin"], origin);
}
