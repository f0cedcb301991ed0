//! Google's side of authentication, played locally for the credentials tests of
//! `rowkit-bigtable` and of the `rowkit` binary (included by both with `#[path]`): fake HTTP
//! servers (the metadata server, an OAuth2 token endpoint), service-account keys and a TLS CA
//! made by `openssl`, and the check that a bearer is a JWT signed by a given key.
#![allow(dead_code, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use base64::Engine;
use rowkit_bigtable::credentials::SCOPE;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request a fake server saw: its request line and headers, then its body.
pub type Seen = Arc<Mutex<Vec<String>>>;

/// An HTTP/1.1 server answering every request with `reply(request text)` as a JSON body
/// (`None`: 404). Returns its address and the requests it saw.
pub async fn fake_server(reply: fn(&str) -> Option<String>) -> (SocketAddr, Seen) {
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
pub fn metadata_reply(request: &str) -> Option<String> {
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
pub fn token_endpoint_reply(request: &str) -> Option<String> {
    let body = request.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let grant: serde_json::Value = serde_json::from_str(body).ok()?;
    (request.starts_with("POST /token ")
        && grant["grant_type"] == "refresh_token"
        && grant["refresh_token"] == "refresh-1"
        && grant["client_secret"] == "secret")
        .then(|| r#"{"access_token":"user-token","expires_in":3600,"token_type":"Bearer"}"#.into())
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rowkit-creds-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh 2048-bit RSA key: (PKCS#8 PEM, PKCS#1 public key DER), made by `openssl`.
pub fn rsa_key(dir: &Path) -> (String, Vec<u8>) {
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

pub fn service_account_json(private_key: &str) -> serde_json::Value {
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
pub fn assert_self_signed_jwt(token: &str, public_key: &[u8]) {
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
    // Scoped, so no audience; valid now, for about an hour (the crate backdates `iat` a little).
    assert!(claims["aud"].is_null(), "{claims}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (iat, exp) = (
        claims["iat"].as_u64().unwrap(),
        claims["exp"].as_u64().unwrap(),
    );
    assert!(
        iat <= now + 60 && now < exp && exp - iat <= 3600 + 60,
        "{claims}"
    );
    let signed = format!("{}.{}", parts[0], parts[1]);
    let signature = b64.decode(parts[2]).unwrap();
    ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        public_key,
    )
    .verify(signed.as_bytes(), &signature)
    .expect("the JWT is signed by the service account's key");
}

/// A throwaway CA and a server certificate it signed for `127.0.0.1` and `localhost`, made by
/// `openssl` in `dir`: (the CA's PEM file, the server's certificate PEM, its key PEM).
pub fn tls_ca_and_server(dir: &Path) -> (PathBuf, Vec<u8>, Vec<u8>) {
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let run = |args: &[&str]| {
        let out = Command::new("openssl").args(args).output().unwrap();
        assert!(out.status.success(), "openssl {args:?}: {out:?}");
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=rowkit test CA",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign",
        "-keyout",
        &path("ca.key"),
        "-out",
        &path("ca.pem"),
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=localhost",
        "-keyout",
        &path("server.key"),
        "-out",
        &path("server.csr"),
    ]);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-days",
        "1",
        "-in",
        &path("server.csr"),
        "-CA",
        &path("ca.pem"),
        "-CAkey",
        &path("ca.key"),
        "-CAcreateserial",
        "-extfile",
        &path("server.ext"),
        "-out",
        &path("server.pem"),
    ]);
    (
        dir.join("ca.pem"),
        std::fs::read(dir.join("server.pem")).unwrap(),
        std::fs::read(dir.join("server.key")).unwrap(),
    )
}
