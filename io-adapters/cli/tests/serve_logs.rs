//! `rowkit serve`'s request log and health endpoints, on a real server process: with
//! `RUST_LOG=info` every request writes one line to stderr (JSON gateway: method, path, table,
//! HTTP status, duration; gRPC: method, `grpc-status`, duration), a failure the server owns
//! (5xx) at warn, and `RUST_LOG=warn` keeps only those; `--log-format json` writes one JSON
//! object per line; `GET /healthz` answers `200 ok` and the gRPC health service answers
//! SERVING, both without the token a `--token` server requires of everything else.
#![allow(clippy::unwrap_used)]

mod support;

use support::{cbt_ok, cbt_or_skip, http_with, rowkit_with_env, serve_grpc_logged, temp_dir};

const MUTATE_PATH: &str = "/v2/projects/p/instances/i/tables/t:mutateRow";
/// `r1` / `cf:q` @1000 = `v1`.
const MUTATE_BODY: &str = r#"{"rowKey":"cjE=","mutations":[{"setCell":{"familyName":"cf","columnQualifier":"cQ==","timestampMicros":"1000","value":"djE="}}]}"#;

/// An embedded store in a fresh directory (returned too) with table `t` (family `cf`).
fn store_with_table(name: &str) -> (std::path::PathBuf, String) {
    let dir = temp_dir("serve-logs", name);
    let store = format!("embedded:{}", dir.join("db.redb").display());
    let created = rowkit_with_env(
        &store,
        &["admin", "create-table", "t", "--family", "cf"],
        &[],
    );
    assert!(created.status.success(), "{created:?}");
    (dir, store)
}

/// A backup into the server's backup directory (`dir`, given as `--backup-dir`) under a name
/// the file system refuses (too long for its temporary file): a 500 (`INTERNAL`).
fn backup_body_failing_with_500(dir: &std::path::Path) -> String {
    let target = dir.join(format!("{}.redb", "x".repeat(240)));
    serde_json::json!({ "path": target }).to_string()
}

#[test]
fn rust_log_info_logs_each_request_and_errors_at_warn() {
    let (dir, store) = store_with_table("text");
    let (server, http, grpc, mut log) = serve_grpc_logged(
        &store,
        &["--backup-dir", dir.to_str().unwrap()],
        &[("RUST_LOG", "info")],
    );

    let ok = http_with(&http, "POST", MUTATE_PATH, &[], MUTATE_BODY);
    assert_eq!(ok.status, 200, "{}", ok.body);
    let line = log.line_with(&[
        " INFO ",
        r#"server="json""#,
        r#"method="POST""#,
        &format!(r#"path="{MUTATE_PATH}""#),
        r#"table="t""#,
        "status=200",
        "complete=true",
    ]);
    assert!(line.contains("duration_ms="), "{line}");

    let missing = "/v2/projects/p/instances/i/tables/nope:readRows";
    assert_eq!(http_with(&http, "POST", missing, &[], "{}").status, 404);
    log.line_with(&[" INFO ", r#"table="nope""#, "status=404"]);

    let failed = http_with(
        &http,
        "POST",
        "/v2/rowkit:backup",
        &[],
        &backup_body_failing_with_500(&dir),
    );
    assert_eq!(failed.status, 500, "{}", failed.body);
    log.line_with(&[" WARN ", r#"path="/v2/rowkit:backup""#, "status=500"]);

    if cbt_or_skip("rust_log_info_logs_each_request_and_errors_at_warn") {
        assert!(cbt_ok(&grpc, &["read", "t"]).contains("r1"));
        log.line_with(&[
            " INFO ",
            r#"server="grpc""#,
            r#"method="/google.bigtable.v2.Bigtable/ReadRows""#,
            r#"grpc_status="OK""#,
            "complete=true",
            "duration_ms=",
        ]);
    }
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rust_log_warn_keeps_only_the_errors() {
    let (dir, store) = store_with_table("warn");
    let (server, http, _grpc, mut log) = serve_grpc_logged(
        &store,
        &["--backup-dir", dir.to_str().unwrap()],
        &[("RUST_LOG", "warn")],
    );
    assert_eq!(
        http_with(&http, "POST", MUTATE_PATH, &[], MUTATE_BODY).status,
        200
    );
    let body = backup_body_failing_with_500(&dir);
    assert_eq!(
        http_with(&http, "POST", "/v2/rowkit:backup", &[], &body).status,
        500
    );
    log.line_with(&[" WARN ", "status=500"]);
    assert!(
        !log.seen().iter().any(|line| line.contains("status=200")),
        "{:#?}",
        log.seen()
    );
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn log_format_json_writes_one_json_object_per_line() {
    let (dir, store) = store_with_table("json");
    // No RUST_LOG: requests are logged at info by default.
    let (server, http, _grpc, mut log) = serve_grpc_logged(&store, &["--log-format", "json"], &[]);
    assert_eq!(
        http_with(&http, "POST", MUTATE_PATH, &[], MUTATE_BODY).status,
        200
    );
    let line = log.line_with(&[r#""status":200"#]);
    let event: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(event["level"], "INFO", "{line}");
    assert_eq!(event["message"], "request", "{line}");
    assert_eq!(event["server"], "json", "{line}");
    assert_eq!(event["method"], "POST", "{line}");
    assert_eq!(event["path"], MUTATE_PATH, "{line}");
    assert_eq!(event["table"], "t", "{line}");
    assert!(event["duration_ms"].as_f64().unwrap() >= 0.0, "{line}");
    assert!(
        event["timestamp"].as_str().unwrap().starts_with("20"),
        "{line}"
    );
    // The startup lines stay text (scripts read them); every other line is JSON.
    for line in log.seen() {
        if !line.starts_with("rowkit serve: ") {
            serde_json::from_str::<serde_json::Value>(line)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        }
    }
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn healthz_and_grpc_health_answer_without_the_token() {
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;

    let (dir, store) = store_with_table("health");
    let (server, http, grpc, _log) = serve_grpc_logged(&store, &["--token", "s3cret"], &[]);

    let health = http_with(&http, "GET", "/healthz", &[], "");
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));
    // The token is in force for the data API.
    let data = http_with(&http, "POST", MUTATE_PATH, &[], MUTATE_BODY);
    assert_eq!(data.status, 401, "{}", data.body);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{grpc}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client = HealthClient::new(channel);
        for service in [
            "",
            "google.bigtable.v2.Bigtable",
            "google.bigtable.admin.v2.BigtableTableAdmin",
            "google.bigtable.admin.v2.BigtableInstanceAdmin",
        ] {
            let request = HealthCheckRequest {
                service: service.to_string(),
            };
            let answer = client.check(request).await.unwrap().into_inner();
            assert_eq!(answer.status(), ServingStatus::Serving, "{service:?}");
        }
        let unknown = HealthCheckRequest {
            service: "no.such.Service".to_string(),
        };
        let status = client.check(unknown).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::NotFound, "{status:?}");
    });
    drop(server);
    std::fs::remove_dir_all(&dir).unwrap();
}
