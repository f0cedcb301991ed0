//! The `rowkit` binary on Cloud Bigtable's path end to end, offline: Application Default
//! Credentials (a service-account key, `authorized_user` refreshed at a local token endpoint,
//! impersonation and workload identity federation at local IAM and STS endpoints, the metadata
//! server at `GCE_METADATA_HOST`) through `google-cloud-auth` in the binary, a
//! TLS connection to an endpoint override (`?endpoint=https://127.0.0.1:PORT&ca=FILE`) served
//! by rowkit's own gRPC server with a test CA's certificate, and the headers that arrived
//! there: the bearer (a JWT checked against the key's public half, or the token the fake
//! endpoint granted) and `x-goog-user-project` when a quota project is configured.
#![allow(clippy::unwrap_used)]

#[path = "../../bigtable/tests/support/google_auth.rs"]
mod google_auth;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use google_auth::*;
use rowkit_codec::model::ColumnFamily;
use rowkit_store::driver::SystemClock;
use rowkit_store::{MemoryStore, Store};
use rowkit_grpc::{GrpcConfig, GrpcServer};

/// What one call carried: its `authorization` and `x-goog-user-project` headers.
#[derive(Debug, Clone)]
struct Arrived {
    authorization: Option<String>,
    quota_project: Option<String>,
}

/// rowkit's gRPC server over TLS (a certificate of a fresh test CA) on a free loopback port,
/// over a memory store holding table `t`, recording the headers of every call.
struct TlsServer {
    addr: SocketAddr,
    ca: PathBuf,
    arrived: Arc<Mutex<Vec<Arrived>>>,
}

fn start_tls_server(rt: &tokio::runtime::Runtime, dir: &Path) -> TlsServer {
    let (ca, cert, key) = tls_ca_and_server(dir);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    store.create_table("t", &[ColumnFamily::new("cf")]).unwrap();
    let arrived: Arc<Mutex<Vec<Arrived>>> = Arc::default();
    let log = arrived.clone();
    let config = GrpcConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        token: None,
    };
    let server = rt
        .block_on(GrpcServer::bind(config, store, Arc::new(SystemClock)))
        .unwrap()
        .with_tls(&cert, &key)
        .unwrap()
        .with_metadata_observer(Arc::new(move |md| {
            let text = |name| md.get(name).map(|v| v.to_str().unwrap().to_string());
            log.lock().unwrap().push(Arrived {
                authorization: text("authorization"),
                quota_project: text("x-goog-user-project"),
            });
        }));
    let addr = server.local_addr().unwrap();
    rt.spawn(server.serve(std::future::pending()));
    TlsServer { addr, ca, arrived }
}

/// `rowkit --store STORE admin list-tables` with `HOME` at `home` (no gcloud configuration)
/// and none of the caller's credentials settings, only `env`.
fn list_tables(store: &str, home: &Path, env: &[(&str, String)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rowkit"));
    cmd.args(["--store", store, "admin", "list-tables"])
        .env("HOME", home);
    for var in [
        "ROWKIT_STORE",
        "BIGTABLE_EMULATOR_HOST",
        "ROWKIT_BIGTABLE_TOKEN",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_QUOTA_PROJECT",
        "GCE_METADATA_HOST",
        "CLOUDSDK_CONFIG",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn assert_lists_t(out: &Output) {
    assert!(
        out.status.success() && out.stdout == b"t\n",
        "{out:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl TlsServer {
    fn url(&self) -> String {
        format!(
            "bigtable://p/i?endpoint=https://{}&ca={}",
            self.addr,
            self.ca.display()
        )
    }

    /// The headers of every call so far (at least one).
    fn arrived(&self) -> Vec<Arrived> {
        let arrived = self.arrived.lock().unwrap().clone();
        assert!(!arrived.is_empty());
        arrived
    }
}

/// A key file → self-signed JWTs on the wire of a TLS endpoint override, with the key file's
/// quota project; without `ca=` the test CA is not trusted and the command fails cleanly.
#[test]
fn a_service_account_key_reaches_a_tls_endpoint_with_signed_jwts() {
    let dir = temp_dir("cli-sa");
    let rt = runtime();
    let server = start_tls_server(&rt, &dir);
    let (pem, public) = rsa_key(&dir);
    let mut key = service_account_json(&pem);
    key["quota_project_id"] = "billing-project".into();
    let key_file = dir.join("key.json");
    std::fs::write(&key_file, key.to_string()).unwrap();
    let adc = [(
        "GOOGLE_APPLICATION_CREDENTIALS",
        key_file.display().to_string(),
    )];
    assert_lists_t(&list_tables(&server.url(), &dir, &adc));
    for call in server.arrived() {
        let bearer = call.authorization.as_deref().unwrap();
        assert_self_signed_jwt(bearer.strip_prefix("Bearer ").unwrap(), &public);
        assert_eq!(call.quota_project.as_deref(), Some("billing-project"));
    }
    // The system's roots alone do not trust the test CA.
    let untrusted = format!("bigtable://p/i?endpoint=https://{}", server.addr);
    let out = list_tables(&untrusted, &dir, &adc);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("UNAVAILABLE") && stderr.contains("certificate"),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// `authorized_user` credentials (gcloud's well-known file) refreshed at a local token
/// endpoint; `GOOGLE_CLOUD_QUOTA_PROJECT` names the quota project.
#[test]
fn an_authorized_user_is_refreshed_and_sends_the_environments_quota_project() {
    let dir = temp_dir("cli-user");
    let rt = runtime();
    let server = start_tls_server(&rt, &dir);
    let (token_endpoint, seen) = rt.block_on(fake_server(token_endpoint_reply));
    let gcloud = dir.join(".config/gcloud");
    std::fs::create_dir_all(&gcloud).unwrap();
    let user = serde_json::json!({
        "type": "authorized_user",
        "client_id": "id",
        "client_secret": "secret",
        "refresh_token": "refresh-1",
        "token_uri": format!("http://{token_endpoint}/token"),
    });
    std::fs::write(
        gcloud.join("application_default_credentials.json"),
        user.to_string(),
    )
    .unwrap();
    let quota = [("GOOGLE_CLOUD_QUOTA_PROJECT", "env-project".to_string())];
    assert_lists_t(&list_tables(&server.url(), &dir, &quota));
    assert_eq!(seen.lock().unwrap().len(), 1);
    for call in server.arrived() {
        assert_eq!(call.authorization.as_deref(), Some("Bearer user-token"));
        assert_eq!(call.quota_project.as_deref(), Some("env-project"));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// No credentials file: the metadata server (`GCE_METADATA_HOST`), no quota project.
#[test]
fn the_metadata_server_gives_the_token_when_there_is_no_file() {
    let dir = temp_dir("cli-mds");
    let rt = runtime();
    let server = start_tls_server(&rt, &dir);
    let (metadata, seen) = rt.block_on(fake_server(metadata_reply));
    let env = [("GCE_METADATA_HOST", metadata.to_string())];
    assert_lists_t(&list_tables(&server.url(), &dir, &env));
    assert!(!seen.lock().unwrap().is_empty());
    for call in server.arrived() {
        assert_eq!(call.authorization.as_deref(), Some("Bearer mds-token"));
        assert_eq!(call.quota_project, None);
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Kills the server when the test ends, pass or fail.
struct ServeProcess(std::process::Child);

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `rowkit serve --grpc --tls-cert --tls-key --token` as a process: the CLI reaches it as an
/// endpoint override with the static token (`ROWKIT_BIGTABLE_TOKEN`), a wrong token is refused,
/// and a key that does not match the certificate is refused before serving.
#[test]
fn serve_grpc_over_tls_from_the_command_line() {
    use std::io::{BufRead, BufReader};
    let dir = temp_dir("cli-serve-tls");
    let (ca, cert, key) = tls_ca_and_server(&dir);
    let (cert_file, key_file) = (dir.join("server.pem"), dir.join("server.key"));
    assert_eq!(std::fs::read(&cert_file).unwrap(), cert);
    assert_eq!(std::fs::read(&key_file).unwrap(), key);
    let serve = |key: &Path| {
        Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .args(["--store", "memory:", "serve", "--listen", "127.0.0.1:0"])
            .args(["--grpc", "127.0.0.1:0", "--token", "secret"])
            .arg("--tls-cert")
            .arg(&cert_file)
            .arg("--tls-key")
            .arg(key)
            .env_remove("ROWKIT_GATEWAY_TOKEN")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut child = serve(&key_file);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let _server = ServeProcess(child);
    let _url = lines.next().unwrap().unwrap();
    let grpc = lines.next().unwrap().unwrap();
    let store = format!("bigtable://p/i?endpoint=https://{grpc}&ca={}", ca.display());
    let rowkit = |token: &str, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rowkit"))
            .args(["--store", store.as_str()])
            .args(args)
            .env("ROWKIT_BIGTABLE_TOKEN", token)
            .env_remove("ROWKIT_STORE")
            .env_remove("BIGTABLE_EMULATOR_HOST")
            .output()
            .unwrap()
    };
    let created = rowkit("secret", &["admin", "create-table", "t", "--family", "cf"]);
    assert!(created.status.success(), "{created:?}");
    assert_lists_t(&rowkit("secret", &["admin", "list-tables"]));
    let refused = rowkit("wrong", &["admin", "list-tables"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("UNAUTHENTICATED"), "{stderr}");
    // The CA's key is not the certificate's: a usage error, nothing served.
    let out = serve(&dir.join("ca.key")).wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--tls-cert/--tls-key"), "{stderr}");
    assert!(out.stdout.is_empty(), "{out:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Google's token services for the federated and impersonated credentials: the OAuth2 token
/// endpoint ([`token_endpoint_reply`]), IAM's `generateAccessToken` for a caller holding the
/// user's token, and STS exchanging the workload's subject token `subject-1`.
fn federation_reply(request: &str) -> Option<String> {
    let head = request.split("\r\n\r\n").next().unwrap_or("");
    let bearer = |token: &str| {
        head.lines()
            .any(|l| l.eq_ignore_ascii_case(&format!("authorization: Bearer {token}")))
    };
    if request.starts_with("POST /token ") {
        token_endpoint_reply(request)
    } else if request.starts_with("POST /v1/projects/-/serviceAccounts/") {
        (request.contains(":generateAccessToken ") && bearer("user-token")).then(|| {
            r#"{"accessToken":"impersonated-token","expireTime":"2099-01-01T00:00:00Z"}"#.into()
        })
    } else if request.starts_with("POST /v1/token ") {
        request.contains("subject_token=subject-1").then(|| {
            r#"{"access_token":"sts-token","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}"#.into()
        })
    } else {
        None
    }
}

/// `impersonated_service_account` (a user's token traded at IAM for the service account's)
/// and `external_account` (workload identity federation: a subject token from a file traded at
/// STS), each as the `GOOGLE_APPLICATION_CREDENTIALS` file, with local token services.
#[test]
fn impersonated_and_federated_credentials_reach_the_endpoint() {
    let dir = temp_dir("cli-federated");
    let rt = runtime();
    let server = start_tls_server(&rt, &dir);
    let (google, seen) = rt.block_on(fake_server(federation_reply));
    let user = serde_json::json!({
        "type": "authorized_user",
        "client_id": "id",
        "client_secret": "secret",
        "refresh_token": "refresh-1",
        "token_uri": format!("http://{google}/token"),
    });
    let impersonated = serde_json::json!({
        "type": "impersonated_service_account",
        "service_account_impersonation_url": format!(
            "http://{google}/v1/projects/-/serviceAccounts/sa@p.iam.gserviceaccount.com:generateAccessToken"
        ),
        "source_credentials": user,
        "delegates": [],
    });
    let subject = dir.join("subject.txt");
    std::fs::write(&subject, "subject-1").unwrap();
    let federated = serde_json::json!({
        "type": "external_account",
        "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/pool/providers/provider",
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": format!("http://{google}/v1/token"),
        "credential_source": { "file": subject.display().to_string() },
    });
    for (name, json, token) in [
        ("impersonated", impersonated, "impersonated-token"),
        ("federated", federated, "sts-token"),
    ] {
        let file = dir.join(format!("{name}.json"));
        std::fs::write(&file, json.to_string()).unwrap();
        let adc = [("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string())];
        server.arrived.lock().unwrap().clear();
        assert_lists_t(&list_tables(&server.url(), &dir, &adc));
        for call in server.arrived() {
            assert_eq!(
                call.authorization.as_deref(),
                Some(format!("Bearer {token}").as_str()),
                "{name}: {:?}",
                seen.lock().unwrap()
            );
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A token endpoint granting `go-token` for a service account's signed JWT assertion (the
/// `jwt-bearer` grant Google's Go libraries make from a key file).
fn jwt_bearer_reply(request: &str) -> Option<String> {
    let body = request.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let assertion = body
        .split('&')
        .find_map(|pair| pair.strip_prefix("assertion="))?;
    (request.starts_with("POST /token ")
        && body.contains("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer")
        && assertion.split('.').count() == 3)
        .then(|| r#"{"access_token":"go-token","expires_in":3600,"token_type":"Bearer"}"#.into())
}

/// Google's own `cbt` in production mode reaches rowkit's TLS server as it reaches Cloud
/// Bigtable: `-data-endpoint`/`-admin-endpoint` at it, the test CA trusted through
/// `SSL_CERT_FILE`, a service-account key traded at a local token endpoint.
#[test]
fn cbt_in_production_mode_reaches_the_tls_server() {
    let cbt = rowkit_testkit::emulator::CBT_BIN;
    if !Path::new(cbt).is_file() {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "{cbt} is missing"
        );
        eprintln!("\n!!!!! SKIPPED cbt in production mode: {cbt} is not installed\n");
        return;
    }
    let dir = temp_dir("cli-cbt-prod");
    let rt = runtime();
    let server = start_tls_server(&rt, &dir);
    let (token_endpoint, _seen) = rt.block_on(fake_server(jwt_bearer_reply));
    let (pem, _public) = rsa_key(&dir);
    let mut key = service_account_json(&pem);
    key["token_uri"] = format!("http://{token_endpoint}/token").into();
    let key_file = dir.join("key.json");
    std::fs::write(&key_file, key.to_string()).unwrap();
    let endpoint = server.addr.to_string();
    let run = |args: &[&str]| {
        let out = Command::new(cbt)
            .args(["-project", "p", "-instance", "i"])
            .args(["-data-endpoint", &endpoint, "-admin-endpoint", &endpoint])
            .arg("-creds")
            .arg(&key_file)
            .args(args)
            .env("SSL_CERT_FILE", &server.ca)
            .env("HOME", &dir)
            .env_remove("BIGTABLE_EMULATOR_HOST")
            .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "cbt {args:?}: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    run(&["set", "t", "r1", "cf:a=over-tls"]);
    let read = run(&["read", "t"]);
    assert!(
        read.contains("r1") && read.contains("\"over-tls\""),
        "{read}"
    );
    for call in server.arrived() {
        assert_eq!(call.authorization.as_deref(), Some("Bearer go-token"));
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// `rowkit serve` over a Cloud Bigtable store with a key file (the user's report: it exited
/// 101): it opens the store with its credentials, serves, and what a client asks reaches the
/// TLS endpoint as calls carrying the key's signed JWTs.
#[test]
fn serve_over_cloud_bigtable_with_a_key_file() {
    use std::io::{BufRead, BufReader};
    let dir = temp_dir("cli-serve-adc");
    let rt = runtime();
    let upstream = start_tls_server(&rt, &dir);
    let (pem, public) = rsa_key(&dir);
    let key_file = dir.join("key.json");
    std::fs::write(&key_file, service_account_json(&pem).to_string()).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rowkit"))
        .args([
            "--store",
            &upstream.url(),
            "serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--grpc", "127.0.0.1:0"])
        .env("GOOGLE_APPLICATION_CREDENTIALS", &key_file)
        .env("HOME", &dir)
        .env_remove("ROWKIT_BIGTABLE_TOKEN")
        .env_remove("ROWKIT_GATEWAY_TOKEN")
        .env_remove("BIGTABLE_EMULATOR_HOST")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let _server = ServeProcess(child);
    let _url = lines.next().unwrap().unwrap();
    let grpc = lines.next().unwrap().unwrap();
    // Opening the store made no call; the client's list-tables makes the first.
    assert!(upstream.arrived.lock().unwrap().is_empty());
    let store = format!("bigtable://p/i?emulator={grpc}");
    assert_lists_t(&list_tables(&store, &dir, &[]));
    for call in upstream.arrived() {
        let bearer = call.authorization.as_deref().unwrap();
        assert_self_signed_jwt(bearer.strip_prefix("Bearer ").unwrap(), &public);
    }
    std::fs::remove_dir_all(dir).unwrap();
}
