//! Cloud Bigtable credentials through `google-cloud-auth`, checked without Google: a local
//! fake metadata server (as on GCE/GKE), a service-account key file (self-signed JWTs, checked
//! against the key's public half), an `authorized_user` file refreshed at a local token
//! endpoint, and Application Default Credentials found through the environment (in a child
//! process, so the environment of this one stays untouched).
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use base64::Engine;
use rowkit_bigtable::TokenProvider;
use rowkit_bigtable::credentials::{GoogleCredentials, SCOPE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request a fake server saw: its request line and headers, then its body.
type Seen = Arc<Mutex<Vec<String>>>;

/// An HTTP/1.1 server answering every request with `reply(request text)` as a JSON body
/// (`None`: 404). Returns its address and the requests it saw.
async fn fake_server(reply: fn(&str) -> Option<String>) -> (SocketAddr, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let log = log.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // Read the head, then as much body as Content-Length says.
                let request = loop {
                    let n = socket.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    let Some((head, body)) = text.split_once("\r\n\r\n") else {
                        continue;
                    };
                    let length = head
                        .lines()
                        .find_map(|l| {
                            let (k, v) = l.split_once(':')?;
                            k.eq_ignore_ascii_case("content-length")
                                .then(|| v.trim().parse::<usize>().ok())?
                        })
                        .unwrap_or(0);
                    if body.len() >= length {
                        break text;
                    }
                };
                log.lock().unwrap().push(request.clone());
                let answer = match reply(&request) {
                    Some(body) => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                    None => {
                        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            .to_string()
                    }
                };
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (addr, seen)
}

/// The metadata server's token endpoint, only for callers that say `Metadata-Flavor: Google`.
fn metadata_reply(request: &str) -> Option<String> {
    let flavoured = request.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("metadata-flavor: google")
    });
    let path = request.split(' ').nth(1).unwrap_or("");
    (flavoured && path.starts_with("/computeMetadata/v1/instance/service-accounts/default/token"))
        .then(|| r#"{"access_token":"mds-token","expires_in":3600,"token_type":"Bearer"}"#.into())
}

/// A token endpoint granting `user-token` for the refresh token `refresh-1` (the grant as
/// JSON, as `google-cloud-auth` sends it).
fn token_endpoint_reply(request: &str) -> Option<String> {
    let body = request.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let grant: serde_json::Value = serde_json::from_str(body).ok()?;
    (request.starts_with("POST /token ")
        && grant["grant_type"] == "refresh_token"
        && grant["refresh_token"] == "refresh-1"
        && grant["client_secret"] == "secret")
        .then(|| r#"{"access_token":"user-token","expires_in":3600,"token_type":"Bearer"}"#.into())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rowkit-creds-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh 2048-bit RSA key: (PKCS#8 PEM, PKCS#1 public key DER), made by `openssl`.
fn rsa_key(dir: &Path) -> (String, Vec<u8>) {
    let pem = dir.join("key.pem");
    let der = dir.join("pub.der");
    let run = |args: &[&str]| {
        let out = Command::new("openssl").args(args).output().unwrap();
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    };
    run(&[
        "genpkey",
        "-algorithm",
        "RSA",
        "-pkeyopt",
        "rsa_keygen_bits:2048",
        "-out",
        pem.to_str().unwrap(),
    ]);
    run(&[
        "rsa",
        "-in",
        pem.to_str().unwrap(),
        "-RSAPublicKey_out",
        "-outform",
        "DER",
        "-out",
        der.to_str().unwrap(),
    ]);
    (
        std::fs::read_to_string(pem).unwrap(),
        std::fs::read(der).unwrap(),
    )
}

fn service_account_json(private_key: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "service_account",
        "project_id": "p",
        "private_key_id": "key-1",
        "private_key": private_key,
        "client_email": "rowkit@p.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": "http://127.0.0.1:9/token",
        "universe_domain": "googleapis.com",
    })
}

/// Checks that `token` is a JWT signed by `public_key` (PKCS#1 DER) for the service account,
/// asking for rowkit's scope.
fn assert_self_signed_jwt(token: &str, public_key: &[u8]) {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "{token}");
    let header: serde_json::Value = serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
    assert_eq!(header["alg"], "RS256");
    assert_eq!(header["kid"], "key-1");
    let claims: serde_json::Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["iss"], "rowkit@p.iam.gserviceaccount.com");
    assert_eq!(claims["sub"], "rowkit@p.iam.gserviceaccount.com");
    assert_eq!(claims["scope"], SCOPE);
    let signed = format!("{}.{}", parts[0], parts[1]);
    let signature = b64.decode(parts[2]).unwrap();
    ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        public_key,
    )
    .verify(signed.as_bytes(), &signature)
    .expect("the JWT is signed by the service account's key");
}

#[test]
fn the_metadata_server_gives_tokens_to_callers_that_say_the_flavour() {
    runtime().block_on(async {
        let (addr, seen) = fake_server(metadata_reply).await;
        let creds = GoogleCredentials::metadata_server(&format!("http://{addr}")).unwrap();
        assert_eq!(creds.token().await.unwrap(), "mds-token");
        // Cached: a second token costs no request.
        assert_eq!(creds.token().await.unwrap(), "mds-token");
        let asked = seen.lock().unwrap().clone();
        let token_requests: Vec<_> = asked.iter().filter(|r| r.contains("/token")).collect();
        assert_eq!(token_requests.len(), 1, "{asked:?}");
        assert!(
            token_requests[0].contains("scopes="),
            "{}",
            token_requests[0]
        );
    });
}

#[test]
fn a_service_account_key_signs_its_own_tokens() {
    let dir = temp_dir("sa");
    let (pem, public) = rsa_key(&dir);
    runtime().block_on(async {
        let creds = GoogleCredentials::from_json(service_account_json(&pem)).unwrap();
        assert_self_signed_jwt(&creds.token().await.unwrap(), &public);
    });
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_authorized_user_is_refreshed_at_its_token_endpoint() {
    runtime().block_on(async {
        let (addr, seen) = fake_server(token_endpoint_reply).await;
        let creds = GoogleCredentials::from_json(serde_json::json!({
            "type": "authorized_user",
            "client_id": "id",
            "client_secret": "secret",
            "refresh_token": "refresh-1",
            "token_uri": format!("http://{addr}/token"),
        }))
        .unwrap();
        assert_eq!(creds.token().await.unwrap(), "user-token");
        assert_eq!(seen.lock().unwrap().len(), 1);
    });
}

#[test]
fn unknown_or_broken_credentials_are_unauthenticated() {
    for json in [
        serde_json::json!({"type": "api_key"}),
        serde_json::json!({"client_email": "x"}),
        serde_json::json!({"type": "service_account", "client_email": "x", "private_key": "not a key"}),
    ] {
        let e = runtime().block_on(async {
            let creds = GoogleCredentials::from_json(json.clone())?;
            creds.token().await.map(drop)
        });
        let e = e.expect_err(&json.to_string());
        assert_eq!(
            e.code,
            rowkit_codec::model::Code::Unauthenticated,
            "{json}: {e}"
        );
    }
}

/// Child half of [`application_default_credentials_come_from_the_environment`]: prints the
/// token Application Default Credentials give in this process's environment.
#[test]
#[ignore = "run by application_default_credentials_come_from_the_environment"]
fn adc_child() {
    if std::env::var_os("ROWKIT_ADC_CHILD").is_none() {
        return;
    }
    let token = runtime().block_on(async {
        let creds = GoogleCredentials::application_default().unwrap();
        creds.token().await.unwrap()
    });
    println!("TOKEN={token}");
}

/// Runs [`adc_child`] with `env` (and nothing of gcloud's own configuration) and returns the
/// token it printed.
fn adc_token(home: &Path, env: &[(&str, String)]) -> String {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", "adc_child", "--ignored", "--nocapture"])
        .env("ROWKIT_ADC_CHILD", "1")
        .env("HOME", home)
        .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
        .env_remove("GCE_METADATA_HOST")
        .env_remove("CLOUDSDK_CONFIG");
    for (k, v) in env {
        child.env(k, v);
    }
    let out = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("TOKEN="))
        .unwrap_or_else(|| panic!("no token in {stdout}"))
        .to_string()
}

#[test]
fn application_default_credentials_come_from_the_environment() {
    let dir = temp_dir("adc");
    let (pem, public) = rsa_key(&dir);
    let file = dir.join("sa.json");
    std::fs::write(&file, service_account_json(&pem).to_string()).unwrap();
    // GOOGLE_APPLICATION_CREDENTIALS names a service-account key file.
    let token = adc_token(
        &dir,
        &[("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string())],
    );
    assert_self_signed_jwt(&token, &public);
    // gcloud's well-known file under HOME.
    let gcloud = dir.join(".config/gcloud");
    std::fs::create_dir_all(&gcloud).unwrap();
    std::fs::copy(&file, gcloud.join("application_default_credentials.json")).unwrap();
    assert_self_signed_jwt(&adc_token(&dir, &[]), &public);
    std::fs::remove_file(gcloud.join("application_default_credentials.json")).unwrap();
    // No file: the metadata server (GCE_METADATA_HOST points at the fake one).
    let rt = runtime();
    let (addr, _seen) = rt.block_on(fake_server(metadata_reply));
    assert_eq!(
        adc_token(&dir, &[("GCE_METADATA_HOST", addr.to_string())]),
        "mds-token"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
