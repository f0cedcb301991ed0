//! The real gateway on `127.0.0.1:0` over a MemoryStore, driven over HTTP:
//! - the foundation's semantics suite replayed through [`HttpStore`] (a `Store` that speaks the
//!   JSON API) must give exactly the native MemoryStore's results, case by case;
//! - authentication on a non-loopback address, body limits, malformed bodies, wrong paths and
//!   methods, CORS, a stream failing after it started, and a storm of random and truncated
//!   bodies that must never kill the server.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use common::{HttpStore, SEED, client, local, runtime, send, start};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rowkit_codec::model::{ColumnFamily, Mutation, RowSet, Timestamp};
use rowkit_gateway::{Gateway, GatewayConfig, GatewayError, ServeError};
use rowkit_rest::{
    ArraySplitter, Method, TableName, decode_error, decode_stream_element, encode_request,
};
use rowkit_statemachines::{
    Code, MutateRowRequest, ReadRowsRequest, Request, Response, SplitMix64, StoreError,
};
use rowkit_store::driver::{Clock, ManualClock};
use rowkit_store::{MemoryStore, Reply, Store, StoreOptions};
use rowkit_testkit::suite::{self, CaseRun, Outcome, play};

/// Every semantics case through the gateway equals the native MemoryStore run: same rows,
/// same answers, same error codes and messages.
#[test]
fn semantics_suite_through_the_gateway_equals_the_native_store() {
    let rt = Arc::new(runtime());
    let client = rt.block_on(async { client() });
    let mut failures = Vec::new();
    let mut played = 0;
    for mut case in suite::cases() {
        let mut twin = case.clone();
        let native = play(
            &MemoryStore::new().with_options(StoreOptions::default().with_seed(SEED)),
            &mut case,
        );
        let memory =
            Arc::new(MemoryStore::new().with_options(StoreOptions::default().with_seed(SEED)));
        let running = start(&rt, memory.clone(), local());
        running.clock.advance_to(twin.now);
        let http = HttpStore {
            rt: rt.clone(),
            client: client.clone(),
            addr: running.addr,
            clock: running.clock.clone(),
            admin: memory,
        };
        let via_http = play(&http, &mut twin);
        played += 1;
        let equal = match (&native, &via_http) {
            (Ok(a), Ok(b)) => same(a, b),
            (Err(a), Err(b)) => a == b,
            _ => false,
        };
        if !equal {
            failures.push(format!(
                "{}:\n  native: {native:?}\n  http:   {via_http:?}",
                case.name
            ));
        }
    }
    assert!(played >= 80, "only {played} cases");
    assert!(
        failures.is_empty(),
        "{} of {played} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn same(a: &CaseRun, b: &CaseRun) -> bool {
    let outcome = match (&a.outcome, &b.outcome) {
        (Outcome::Error(x), Outcome::Error(y)) => x == y,
        (x, y) => x == y,
    };
    outcome && a.check == b.check
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP

fn post(addr: SocketAddr, path: &str, body: impl Into<Bytes>) -> hyper::Request<Full<Bytes>> {
    hyper::Request::post(format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(body.into()))
        .unwrap()
}

const MUTATE: &str = "/v2/projects/p/instances/i/tables/t:mutateRow";
const READ: &str = "/v2/projects/p/instances/i/tables/t:readRows";

fn store_with_table() -> Arc<MemoryStore> {
    let store = Arc::new(MemoryStore::new());
    store.create_table("t", &[ColumnFamily::new("cf")]).unwrap();
    store
}

fn a_mutation() -> Vec<u8> {
    encode_request(&Request::MutateRow(MutateRowRequest {
        table: "t".into(),
        row_key: b"r1".to_vec(),
        mutations: vec![Mutation::SetCell {
            family: "cf".into(),
            qualifier: b"q".to_vec(),
            timestamp: Timestamp(1000),
            value: b"v1".to_vec(),
        }],
        ..Default::default()
    }))
    .unwrap()
}

#[test]
fn a_non_loopback_gateway_requires_a_token_and_checks_it() {
    let rt = runtime();
    // Without a token, binding beyond loopback is refused with a clear error.
    let open = GatewayConfig {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..GatewayConfig::default()
    };
    let clock = Arc::new(ManualClock::new(suite::SUITE_NOW));
    let refused = rt.block_on(Gateway::bind(open, store_with_table(), clock));
    let Err(e @ GatewayError::Serve(ServeError::TokenRequired { .. })) = refused else {
        panic!("a non-loopback gateway without a token must be refused")
    };
    assert!(e.to_string().contains("--token"), "{e}");

    let running = start(
        &rt,
        store_with_table(),
        GatewayConfig {
            listen: "0.0.0.0:0".parse().unwrap(),
            token: Some("s3cret".into()),
            ..GatewayConfig::default()
        },
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], running.addr.port()));
    let with = |auth: Option<&str>| {
        let mut req = post(addr, MUTATE, a_mutation());
        if let Some(auth) = auth {
            req.headers_mut()
                .insert("authorization", auth.parse().unwrap());
        }
        send(&rt, req)
    };
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Basic s3cret"),
        Some("Bearer s3cret2"),
    ] {
        let answer = with(auth);
        assert_eq!(answer.status, 401, "{auth:?}: {}", answer.text());
        assert_eq!(answer.error().code, Code::Unauthenticated);
        assert!(answer.text().contains("\"status\":\"UNAUTHENTICATED\""));
    }
    let answer = with(Some("Bearer s3cret"));
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.body, b"{}");
    // Even unknown paths answer 401 first: nothing about the server leaks without the token.
    let answer = send(&rt, post(addr, "/v2/nope", "{}"));
    assert_eq!(answer.status, 401);
    // A preflight carries no credentials and is answered without them.
    let preflight = hyper::Request::options(format!("http://{addr}{MUTATE}"))
        .header("origin", "http://127.0.0.1:8000")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .body(Full::new(Bytes::new()))
        .unwrap();
    let answer = send(&rt, preflight);
    assert!(answer.status < 300, "{}", answer.status);
    // An empty token is refused.
    let empty = GatewayConfig {
        token: Some(String::new()),
        ..local()
    };
    let clock = Arc::new(ManualClock::new(suite::SUITE_NOW));
    assert!(matches!(
        rt.block_on(Gateway::bind(empty, store_with_table(), clock)),
        Err(GatewayError::Serve(ServeError::EmptyToken))
    ));
}

#[test]
fn oversized_and_malformed_bodies_get_400_with_a_clear_message() {
    let rt = runtime();
    let running = start(
        &rt,
        store_with_table(),
        GatewayConfig {
            max_body_bytes: 1024,
            ..local()
        },
    );
    let addr = running.addr;
    // Declared too large.
    let answer = send(&rt, post(addr, MUTATE, vec![b' '; 2000]));
    assert_eq!(answer.status, 400);
    let e = answer.error();
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(e.message.contains("limit of 1024 bytes"), "{}", e.message);
    // Too large without a Content-Length (chunked upload).
    let answer = rt.block_on(async {
        let chunks = futures_util::stream::iter((0..8).map(|_| {
            Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from(vec![
                b' ';
                512
            ])))
        }));
        let req = hyper::Request::post(format!("http://{addr}{MUTATE}"))
            .header("content-type", "application/json")
            .body(http_body_util::StreamBody::new(chunks))
            .unwrap();
        let c = Client::builder(TokioExecutor::new()).build_http();
        let response = c.request(req).await.unwrap();
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, body)
    });
    assert_eq!(answer.0, 400);
    assert!(
        decode_error(400, &answer.1)
            .message
            .contains("limit of 1024 bytes")
    );

    for (body, text) in [
        (
            &b"{\"rowKey\": "[..],
            "Invalid JSON payload received. MutateRowRequest",
        ),
        (b"{\"rowKey\": \"!!\"}", "invalid base64"),
        (b"{\"bogus\": 1}", "unknown field `bogus`"),
        (b"[1,2]", "expected a JSON object"),
        (
            b"{\"mutations\": [{}]}",
            "Mutation: no member of the oneof is set",
        ),
        (b"\xff\xfe", "Invalid JSON payload received"),
    ] {
        let answer = send(&rt, post(addr, MUTATE, body.to_vec()));
        assert_eq!(answer.status, 400, "{}", answer.text());
        let e = answer.error();
        assert_eq!(e.code, Code::InvalidArgument);
        assert!(e.message.contains(text), "{text}: {}", e.message);
    }
    // Wrong content type.
    let mut req = post(addr, MUTATE, a_mutation());
    req.headers_mut()
        .insert("content-type", "text/plain".parse().unwrap());
    let answer = send(&rt, req);
    assert_eq!(answer.status, 400);
    assert!(
        answer
            .error()
            .message
            .contains("Content-Type must be application/json")
    );
    // Unimplemented features.
    let answer = send(
        &rt,
        post(addr, MUTATE, r#"{"mutations":[{"addToCell":{}}]}"#),
    );
    assert_eq!(
        (answer.status, answer.error().code),
        (501, Code::Unimplemented)
    );
    // Store validation errors keep their code and message.
    let answer = send(
        &rt,
        post(
            addr,
            MUTATE,
            r#"{"rowKey":"cjE=","mutations":[{"setCell":{"familyName":"nope","timestampMicros":"1000"}}]}"#,
        ),
    );
    assert_eq!(answer.status, 404, "{}", answer.text());
    assert_eq!(answer.error().code, Code::NotFound);
}

#[test]
fn paths_methods_query_and_cors() {
    let rt = runtime();
    let running = start(&rt, store_with_table(), local());
    let addr = running.addr;
    let answer = send(
        &rt,
        post(addr, "/v2/projects/p/instances/i/tables/t:nope", "{}"),
    );
    assert_eq!((answer.status, answer.error().code), (404, Code::NotFound));
    let answer = send(
        &rt,
        post(
            addr,
            "/v2/projects/p/instances/i/authorizedViews/v:readRows",
            "{}",
        ),
    );
    assert_eq!(answer.status, 404);
    let get = |path: &str| {
        hyper::Request::get(format!("http://{addr}{path}"))
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    let answer = send(&rt, get(READ));
    assert_eq!(answer.status, 405);
    assert_eq!(answer.headers["allow"], "POST");
    assert!(
        answer.text().contains("\"status\":\"UNIMPLEMENTED\""),
        "{}",
        answer.text()
    );
    assert!(answer.text().contains("\"code\":405"), "{}", answer.text());
    // SampleRowKeys: GET (Google's binding, appProfileId in the query) and POST `{}`.
    let sample = "/v2/projects/p/instances/i/tables/t:sampleRowKeys";
    let answer = send(
        &rt,
        get(&format!(
            "{sample}?appProfileId=x&%24alt=json%3Benum-encoding%3Dint"
        )),
    );
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(answer.text().starts_with('['));
    let answer = send(&rt, post(addr, sample, "{}"));
    assert_eq!(answer.status, 200);
    let answer = send(&rt, get(&format!("{sample}?alt=proto")));
    assert_eq!(answer.status, 400);
    // `%3A` for `:`.
    let answer = send(
        &rt,
        post(addr, "/v2/projects/p/instances/i/tables/t%3AreadRows", "{}"),
    );
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert_eq!(answer.text(), "[]");
    // Missing table: an ordinary error before the stream starts.
    let answer = send(
        &rt,
        post(
            addr,
            "/v2/projects/p/instances/i/tables/missing:readRows",
            "{}",
        ),
    );
    assert_eq!((answer.status, answer.error().code), (404, Code::NotFound));
    assert!(
        answer.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );

    // CORS: allowed (loopback) origin gets the headers on preflight, success and error.
    let origin = "http://127.0.0.1:8000";
    let preflight = hyper::Request::options(format!("http://{addr}{READ}"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization,content-type",
        )
        .body(Full::new(Bytes::new()))
        .unwrap();
    let answer = send(&rt, preflight);
    assert!(answer.status < 300);
    assert_eq!(answer.headers["access-control-allow-origin"], origin);
    let allowed = answer.headers["access-control-allow-headers"]
        .to_str()
        .unwrap();
    assert!(
        allowed.contains("authorization") && allowed.contains("content-type"),
        "{allowed}"
    );
    assert_eq!(answer.headers["access-control-max-age"], "600");
    let mut req = post(
        addr,
        "/v2/projects/p/instances/i/tables/missing:readRows",
        "{}",
    );
    req.headers_mut().insert("origin", origin.parse().unwrap());
    let answer = send(&rt, req);
    assert_eq!(answer.status, 404);
    assert_eq!(answer.headers["access-control-allow-origin"], origin);
    // A foreign origin gets no CORS headers (the browser blocks the call).
    let mut req = post(addr, READ, "{}");
    req.headers_mut()
        .insert("origin", "http://evil.example".parse().unwrap());
    let answer = send(&rt, req);
    assert!(!answer.headers.contains_key("access-control-allow-origin"));

    // Configured origins replace the loopback default.
    let running = start(
        &rt,
        store_with_table(),
        GatewayConfig {
            cors_origins: vec!["https://tool.example".into()],
            ..local()
        },
    );
    let mut req = post(running.addr, READ, "{}");
    req.headers_mut()
        .insert("origin", "https://tool.example".parse().unwrap());
    let answer = send(&rt, req);
    assert_eq!(
        answer.headers["access-control-allow-origin"],
        "https://tool.example"
    );
    let mut req = post(running.addr, READ, "{}");
    req.headers_mut().insert("origin", origin.parse().unwrap());
    assert!(
        !send(&rt, req)
            .headers
            .contains_key("access-control-allow-origin")
    );
    // `*` with a token is refused.
    let clock = Arc::new(ManualClock::new(suite::SUITE_NOW));
    let star = GatewayConfig {
        cors_origins: vec!["*".into()],
        token: Some("t".into()),
        ..local()
    };
    assert!(matches!(
        rt.block_on(Gateway::bind(star, store_with_table(), clock)),
        Err(GatewayError::BadOrigin { .. })
    ));

    // Static files: the built-in page without --www.
    let answer = send(&rt, get("/"));
    assert_eq!(answer.status, 200);
    assert!(answer.text().contains("rowkit gateway"));
    assert_eq!(send(&rt, get("/nope.js")).status, 404);
}

#[test]
fn static_files_come_from_the_www_directory() {
    let rt = runtime();
    let dir = std::env::temp_dir().join(format!("rowkit-www-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("pkg")).unwrap();
    std::fs::write(dir.join("index.html"), "<h1>tool</h1>").unwrap();
    std::fs::write(dir.join("pkg/x.wasm"), b"\0asm").unwrap();
    let running = start(
        &rt,
        store_with_table(),
        GatewayConfig {
            www: Some(dir.clone()),
            ..local()
        },
    );
    let get = |path: &str| {
        send(
            &rt,
            hyper::Request::get(format!("http://{}{path}", running.addr))
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
    };
    let answer = get("/");
    assert_eq!(
        (answer.status, answer.text().as_str()),
        (200, "<h1>tool</h1>")
    );
    let answer = get("/pkg/x.wasm");
    assert_eq!(answer.headers["content-type"], "application/wasm");
    assert_eq!(get("/../Cargo.toml").status, 404);
    assert_eq!(get("/pkg/%2e%2e/%2e%2e/etc/passwd").status, 404);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without a directory the files built into the binary are served; a directory without
/// `index.html`, like a binary built without the tool, gets a page at `/` saying why (never a
/// page that waits forever).
#[test]
fn the_built_in_tool_and_pages_saying_why_it_is_missing() {
    let rt = runtime();
    let files: rowkit_gateway::EmbeddedFiles = &[
        ("index.html", b"<h1>built in</h1>"),
        ("pkg/rowkit.js", b"export {}"),
    ];
    let built_in = start(
        &rt,
        store_with_table(),
        GatewayConfig {
            www_files: files,
            ..local()
        },
    );
    let get = |addr: SocketAddr, path: &str| {
        send(
            &rt,
            hyper::Request::get(format!("http://{addr}{path}"))
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
    };
    assert_eq!(get(built_in.addr, "/").text(), "<h1>built in</h1>");
    let js = get(built_in.addr, "/pkg/rowkit.js");
    assert_eq!(js.status, 200);
    assert_eq!(js.headers["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(get(built_in.addr, "/pkg/rowkit_bg.wasm").status, 404);

    let dir = std::env::temp_dir().join(format!("rowkit-www-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = start(
        &rt,
        store_with_table(),
        GatewayConfig {
            www: Some(dir.clone()),
            www_files: files,
            ..local()
        },
    );
    let page = get(empty.addr, "/");
    assert_eq!(page.status, 200);
    assert!(page.text().contains("has no index.html"), "{}", page.text());
    assert_eq!(get(empty.addr, "/app.js").status, 404);
    std::fs::remove_dir_all(&dir).unwrap();

    let without = start(&rt, store_with_table(), local());
    assert!(get(without.addr, "/").text().contains("built without it"));
}

/// Random, truncated and mutated bodies on every endpoint: every answer is a well-formed
/// status, and the server keeps serving correct answers afterwards.
#[test]
fn random_and_truncated_bodies_never_kill_the_server() {
    let rt = runtime();
    let store = store_with_table();
    let running = start(&rt, store.clone(), local());
    let addr = running.addr;
    let table = TableName::new("p", "i", "t");
    let valid: Vec<(Method, Vec<u8>)> = suite::cases()
        .into_iter()
        .flat_map(|c| {
            let mut all = c.setup;
            all.push(c.request);
            all
        })
        .filter(|r| encode_request(r).is_ok_and(|b| b.len() < 4096))
        .map(|r| (Method::of(&r), encode_request(&r).unwrap()))
        .collect();
    let mut rng = SplitMix64::new(42);
    let mut statuses = std::collections::BTreeMap::new();
    for i in 0..600 {
        let (_, source) = &valid[(rng.next_u64() as usize) % valid.len()];
        let mut body = source.clone();
        match i % 4 {
            0 => body.truncate((rng.next_u64() as usize) % (body.len() + 1)),
            1 => {
                for _ in 0..3 {
                    let at = (rng.next_u64() as usize) % body.len().max(1);
                    if let Some(b) = body.get_mut(at) {
                        *b = rng.next_u64() as u8;
                    }
                }
            }
            2 => {
                body = (0..(rng.next_u64() % 64))
                    .map(|_| rng.next_u64() as u8)
                    .collect()
            }
            _ => {}
        }
        let method = Method::ALL[(rng.next_u64() as usize) % Method::ALL.len()];
        let answer = send(&rt, post(addr, &table.path(method), body));
        assert!(
            [200, 400, 404, 409, 429, 501].contains(&answer.status),
            "{method:?}: {} {}",
            answer.status,
            answer.text()
        );
        if answer.status != 200 {
            let e = answer.error();
            assert!(
                answer.text().starts_with("{\"error\":"),
                "{}",
                answer.text()
            );
            assert_ne!(e.code, Code::Ok);
        }
        *statuses.entry(answer.status).or_insert(0) += 1;
    }
    assert!(statuses.len() >= 3, "{statuses:?}");
    // Still serving, and the table is intact.
    let answer = send(&rt, post(addr, MUTATE, a_mutation()));
    assert_eq!(answer.status, 200, "{}", answer.text());
    let read = encode_request(&Request::ReadRows(ReadRowsRequest {
        table: "t".into(),
        rows: RowSet::key(b"r1".to_vec()),
        ..Default::default()
    }))
    .unwrap();
    let answer = send(&rt, post(addr, READ, read));
    assert_eq!(answer.status, 200);
    let mut splitter = ArraySplitter::new();
    let elements = splitter.push_all(&answer.body).unwrap();
    splitter.finish().unwrap();
    assert!(!elements.is_empty());
    for e in elements {
        assert!(matches!(
            decode_stream_element(Method::ReadRows, &e).unwrap(),
            Ok(Response::ReadRowsPart(_))
        ));
    }
    // The clock is the gateway's: untouched by all of this.
    assert_eq!(running.clock.now(), suite::SUITE_NOW);
}

/// A store that fails every stream after `after` parts: how a scan that breaks mid-way (a
/// storage error, an upstream Bigtable stream reset) reaches the gateway.
struct FailsMidStream {
    inner: MemoryStore,
    after: usize,
}

impl Store for FailsMidStream {
    fn execute(&self, request: Request, now: Timestamp) -> Result<Reply<'_>, StoreError> {
        match self.inner.execute(request, now)? {
            Reply::Stream(parts) => Ok(Reply::Stream(Box::new(parts.take(self.after).chain(
                std::iter::once(Err(StoreError::new(Code::Unavailable, "disk on fire"))),
            )))),
            unary => Ok(unary),
        }
    }
    fn create_table(&self, table: &str, families: &[ColumnFamily]) -> Result<(), StoreError> {
        self.inner.create_table(table, families)
    }
    fn delete_table(&self, table: &str) -> Result<(), StoreError> {
        self.inner.delete_table(table)
    }
    fn list_tables(&self) -> Result<Vec<String>, StoreError> {
        self.inner.list_tables()
    }
    fn families(&self, table: &str) -> Result<Vec<ColumnFamily>, StoreError> {
        self.inner.families(table)
    }
    fn gc(&self, table: &str, now: Timestamp) -> Result<u64, StoreError> {
        self.inner.gc(table, now)
    }
}

/// After the array has started, a failure is a final `{"error": …}` element and `]`; before
/// it, an ordinary error response (`rest-json.md` 5.1).
#[test]
fn a_stream_failing_after_it_started_ends_with_an_error_element() {
    let rt = runtime();
    for after in [0, 2] {
        let inner = MemoryStore::new();
        inner.create_table("t", &[ColumnFamily::new("cf")]).unwrap();
        for key in [b"r1", b"r2", b"r3"] {
            let request = Request::MutateRow(MutateRowRequest {
                table: "t".into(),
                row_key: key.to_vec(),
                mutations: vec![Mutation::SetCell {
                    family: "cf".into(),
                    qualifier: b"q".to_vec(),
                    timestamp: Timestamp(1000),
                    value: b"v".to_vec(),
                }],
                ..Default::default()
            });
            inner.execute(request, suite::SUITE_NOW).unwrap();
        }
        let running = start(&rt, Arc::new(FailsMidStream { inner, after }), local());
        let answer = send(&rt, post(running.addr, READ, "{}"));
        if after == 0 {
            assert_eq!(answer.status, 503, "{}", answer.text());
            assert_eq!(
                answer.error(),
                StoreError::new(Code::Unavailable, "disk on fire")
            );
            continue;
        }
        assert_eq!(answer.status, 200);
        let mut splitter = ArraySplitter::new();
        let elements = splitter.push_all(&answer.body).unwrap();
        splitter.finish().unwrap();
        assert_eq!(elements.len(), after + 1, "{}", answer.text());
        for e in &elements[..after] {
            assert!(matches!(
                decode_stream_element(Method::ReadRows, e).unwrap(),
                Ok(Response::ReadRowsPart(_))
            ));
        }
        assert_eq!(
            decode_stream_element(Method::ReadRows, &elements[after]).unwrap(),
            Err(StoreError::new(Code::Unavailable, "disk on fire"))
        );
        assert!(answer.text().contains(r#""status":"UNAVAILABLE""#));
    }
}

/// Sends `head` (a request line and headers, without the blank line) on a fresh connection
/// and returns the status code of the answer.
fn raw_status(addr: SocketAddr, head: &str) -> u16 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(s, "{head}\r\nconnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// DNS rebinding: a page on a name the attacker points at 127.0.0.1 sends its own name as
/// `Host`; only IP addresses, `localhost` names and `--allow-host` names are served, for the
/// data API and the static files alike.
#[test]
fn requests_for_a_host_not_allowed_are_refused() {
    let rt = runtime();
    let running = start(
        &rt,
        store_with_table(),
        GatewayConfig {
            allowed_hosts: vec!["tool.example".into()],
            ..local()
        },
    );
    let addr = running.addr;
    let read = |host: &str| {
        raw_status(
            addr,
            &format!(
                "GET /v2/projects/p/instances/i/tables/t:sampleRowKeys HTTP/1.1\r\nhost: {host}"
            ),
        )
    };
    let page = |host: &str| raw_status(addr, &format!("GET / HTTP/1.1\r\nhost: {host}"));
    for host in [
        addr.to_string(),
        format!("localhost:{}", addr.port()),
        "app.localhost".into(),
        "[::1]:1".into(),
        "tool.example".into(),
        "TOOL.example:8080".into(),
    ] {
        assert_eq!(read(&host), 200, "{host}");
        assert_eq!(page(&host), 200, "{host}");
    }
    for host in [
        "evil.example",
        "evil.example:8080",
        "localhost.evil.example",
    ] {
        assert_eq!(read(host), 403, "{host}");
        assert_eq!(page(host), 403, "{host}");
    }
    // HTTP/1.0 may omit Host; such a request names no allowed host.
    assert_eq!(
        raw_status(
            addr,
            "GET /v2/projects/p/instances/i/tables/t:sampleRowKeys HTTP/1.0"
        ),
        403
    );
    // The refusal says what to do, as a google.rpc.Status.
    let answer = send(
        &rt,
        hyper::Request::get(format!("http://{addr}/"))
            .header("host", "evil.example")
            .body(Full::new(Bytes::new()))
            .unwrap(),
    );
    assert_eq!(answer.error().code, Code::PermissionDenied);
    assert!(
        answer.error().message.contains("--allow-host evil.example"),
        "{}",
        answer.error().message
    );
}

/// A link inside `--www` that leads outside it (to a secret file, or a directory of them) is
/// not followed; a link to a file inside it is.
#[cfg(unix)]
#[test]
fn static_files_never_follow_links_out_of_the_www_directory() {
    let rt = runtime();
    let base = std::env::temp_dir().join(format!("rowkit-links-{}", std::process::id()));
    let (www, outside) = (base.join("www"), base.join("secret"));
    std::fs::create_dir_all(&www).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(www.join("index.html"), "tool").unwrap();
    std::fs::write(outside.join("passwd"), "root:x:0:0").unwrap();
    std::os::unix::fs::symlink(outside.join("passwd"), www.join("passwd")).unwrap();
    std::os::unix::fs::symlink(&outside, www.join("etc")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", www.join("system")).unwrap();
    std::os::unix::fs::symlink(www.join("index.html"), www.join("home.html")).unwrap();
    let running = start(
        &rt,
        store_with_table(),
        GatewayConfig {
            www: Some(www.clone()),
            token: Some("t0ken".into()),
            ..local()
        },
    );
    let get = |path: &str| {
        send(
            &rt,
            hyper::Request::get(format!("http://{}{path}", running.addr))
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
    };
    for path in ["/passwd", "/etc/passwd", "/system"] {
        let answer = get(path);
        assert_eq!(answer.status, 404, "{path}");
        assert!(!answer.text().contains("root:"), "{path}");
    }
    assert_eq!(get("/home.html").text(), "tool");
    std::fs::remove_dir_all(&base).unwrap();
}

/// A body declared larger than the limit is refused from its headers alone (nothing of it is
/// sent here), and one streamed without a length is cut off once it passes the limit: the
/// gateway never reads a 200 MB body it will refuse.
#[test]
fn oversized_bodies_are_refused_before_they_are_read() {
    use std::io::{Read, Write};
    let rt = runtime();
    let running = start(
        &rt,
        store_with_table(),
        GatewayConfig {
            max_body_bytes: 1 << 20,
            ..local()
        },
    );
    let head = |extra: &str| {
        format!(
            "POST {MUTATE} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n{extra}\r\n",
            running.addr
        )
    };
    assert_eq!(
        raw_status(running.addr, head("content-length: 200000000").trim_end()),
        400
    );
    // Chunked: keep writing 1 MiB chunks until the gateway answers and closes.
    let mut s = std::net::TcpStream::connect(running.addr).unwrap();
    s.set_write_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    s.write_all(head("transfer-encoding: chunked\r\n").as_bytes())
        .unwrap();
    let chunk = format!("{:x}\r\n{}\r\n", 1 << 20, " ".repeat(1 << 20));
    let mut sent = 0usize;
    while sent < 200 && s.write_all(chunk.as_bytes()).is_ok() {
        sent += 1;
    }
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("limit of 1048576 bytes"), "{answer}");
    // What the socket buffers absorb aside, the upload stopped near the limit.
    assert!(sent < 64, "{sent} MiB written before the gateway closed");
}
