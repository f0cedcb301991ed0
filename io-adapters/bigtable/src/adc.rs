//! Application Default Credentials: the JSON file `gcloud auth application-default login`
//! writes (or the one `GOOGLE_APPLICATION_CREDENTIALS` names), turned into OAuth2 access
//! tokens.
//!
//! Supported file types:
//! - `authorized_user`: the refresh-token grant (`grant_type=refresh_token`) against the file's
//!   token endpoint (default `https://oauth2.googleapis.com/token`).
//! - `service_account`: a self-signed RS256 JWT assertion
//!   (`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`), signed with `ring`.
//!
//! Not supported (an `UNAUTHENTICATED` error says so): `external_account` (workload identity
//! federation), `impersonated_service_account`, and the GCE/GKE metadata server used when no
//! file exists. Tokens are cached until a minute before they expire. The token request is a
//! one-shot HTTP/1.0 POST over rustls (already in the tree through tonic), so no HTTP client
//! crate is added.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use rowkit_codec::model::Code;
use rowkit_statemachines::StoreError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::auth::{TokenFuture, TokenProvider};

/// The OAuth2 scope requested for service accounts.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";
/// The default token endpoint.
pub const TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

fn unauthenticated(msg: impl Into<String>) -> StoreError {
    StoreError::new(Code::Unauthenticated, msg)
}

enum Credentials {
    AuthorizedUser {
        client_id: String,
        client_secret: String,
        refresh_token: String,
        token_uri: String,
    },
    ServiceAccount {
        client_email: String,
        key: Arc<ring::signature::RsaKeyPair>,
        token_uri: String,
    },
}

/// A [`TokenProvider`] reading Application Default Credentials.
pub struct ApplicationDefaultCredentials {
    credentials: Credentials,
    cache: tokio::sync::Mutex<Option<(String, Instant)>>,
}

impl std::fmt::Debug for ApplicationDefaultCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.credentials {
            Credentials::AuthorizedUser { .. } => "authorized_user",
            Credentials::ServiceAccount { .. } => "service_account",
        };
        f.debug_struct("ApplicationDefaultCredentials")
            .field("type", &kind)
            .finish_non_exhaustive()
    }
}

impl ApplicationDefaultCredentials {
    /// The well-known file: `$GOOGLE_APPLICATION_CREDENTIALS`, else
    /// `$HOME/.config/gcloud/application_default_credentials.json`.
    pub fn default_path() -> Option<std::path::PathBuf> {
        if let Some(p) = std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS") {
            return Some(p.into());
        }
        std::env::var_os("HOME").map(|h| {
            std::path::Path::new(&h).join(".config/gcloud/application_default_credentials.json")
        })
    }

    /// Loads the credentials from [`Self::default_path`].
    pub fn load() -> Result<ApplicationDefaultCredentials, StoreError> {
        let path = Self::default_path().ok_or_else(|| {
            unauthenticated(
                "no Application Default Credentials: set GOOGLE_APPLICATION_CREDENTIALS",
            )
        })?;
        let text = std::fs::read_to_string(&path).map_err(|e| {
            unauthenticated(format!(
                "reading Application Default Credentials {}: {e} (run `gcloud auth application-default login` or set GOOGLE_APPLICATION_CREDENTIALS)",
                path.display()
            ))
        })?;
        Self::from_json(&text)
    }

    /// Parses an ADC JSON document.
    pub fn from_json(text: &str) -> Result<ApplicationDefaultCredentials, StoreError> {
        let v: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| unauthenticated(format!("credentials file is not JSON: {e}")))?;
        let field = |name: &str| -> Result<String, StoreError> {
            v.get(name)
                .and_then(|x| x.as_str())
                .map(str::to_string)
                .ok_or_else(|| unauthenticated(format!("credentials file lacks \"{name}\"")))
        };
        let token_uri = field("token_uri").unwrap_or_else(|_| TOKEN_URI.to_string());
        let credentials = match field("type")?.as_str() {
            "authorized_user" => Credentials::AuthorizedUser {
                client_id: field("client_id")?,
                client_secret: field("client_secret")?,
                refresh_token: field("refresh_token")?,
                token_uri,
            },
            "service_account" => {
                let pem = field("private_key")?;
                let body: String = pem
                    .lines()
                    .filter(|l| !l.starts_with("-----"))
                    .collect::<Vec<_>>()
                    .concat();
                let der = base64::engine::general_purpose::STANDARD
                    .decode(body.trim())
                    .map_err(|e| unauthenticated(format!("private_key is not PEM: {e}")))?;
                let key = ring::signature::RsaKeyPair::from_pkcs8(&der).map_err(|e| {
                    unauthenticated(format!("private_key is not a PKCS#8 RSA key: {e}"))
                })?;
                Credentials::ServiceAccount {
                    client_email: field("client_email")?,
                    key: Arc::new(key),
                    token_uri,
                }
            }
            other => {
                return Err(unauthenticated(format!(
                    "credentials of type {other:?} are not supported (authorized_user and service_account are)"
                )));
            }
        };
        Ok(ApplicationDefaultCredentials {
            credentials,
            cache: tokio::sync::Mutex::new(None),
        })
    }

    /// The form body of the token request.
    fn token_request(&self) -> Result<(String, String), StoreError> {
        match &self.credentials {
            Credentials::AuthorizedUser {
                client_id,
                client_secret,
                refresh_token,
                token_uri,
            } => Ok((
                token_uri.clone(),
                format!(
                    "grant_type=refresh_token&client_id={}&client_secret={}&refresh_token={}",
                    form_encode(client_id),
                    form_encode(client_secret),
                    form_encode(refresh_token)
                ),
            )),
            Credentials::ServiceAccount {
                client_email,
                key,
                token_uri,
            } => {
                let iat = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs();
                let jwt = sign_jwt(key, client_email, token_uri, iat)?;
                Ok((
                    token_uri.clone(),
                    format!(
                        "grant_type={}&assertion={jwt}",
                        form_encode("urn:ietf:params:oauth:grant-type:jwt-bearer")
                    ),
                ))
            }
        }
    }

    async fn fetch(&self) -> Result<(String, Duration), StoreError> {
        let (uri, body) = self.token_request()?;
        let (status, reply) = post_form(&uri, &body).await?;
        let v: serde_json::Value = serde_json::from_slice(&reply).map_err(|e| {
            unauthenticated(format!(
                "token endpoint answered {status} with non-JSON: {e}"
            ))
        })?;
        let token = v
            .get("access_token")
            .and_then(|t| t.as_str())
            .ok_or_else(|| unauthenticated(format!("token endpoint answered {status}: {v}")))?;
        let expires = v.get("expires_in").and_then(|t| t.as_u64()).unwrap_or(3600);
        Ok((token.to_string(), Duration::from_secs(expires)))
    }
}

impl TokenProvider for ApplicationDefaultCredentials {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(async move {
            let mut cache = self.cache.lock().await;
            if let Some((token, until)) = cache.as_ref()
                && Instant::now() < *until
            {
                return Ok(token.clone());
            }
            let (token, lifetime) = self.fetch().await?;
            let margin = Duration::from_secs(60).min(lifetime / 2);
            *cache = Some((token.clone(), Instant::now() + lifetime - margin));
            Ok(token)
        })
    }
}

/// An RS256 JWT assertion for the service-account grant.
fn sign_jwt(
    key: &ring::signature::RsaKeyPair,
    client_email: &str,
    token_uri: &str,
    iat: u64,
) -> Result<String, StoreError> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = b64.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "iss": client_email,
        "scope": SCOPE,
        "aud": token_uri,
        "iat": iat,
        "exp": iat + 3600,
    });
    let signing_input = format!("{header}.{}", b64.encode(claims.to_string()));
    let mut signature = vec![0; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| unauthenticated("signing the JWT assertion failed"))?;
    Ok(format!("{signing_input}.{}", b64.encode(signature)))
}

/// `application/x-www-form-urlencoded` escaping.
fn form_encode(s: &str) -> String {
    crate::connection::percent_encode(s)
}

/// POSTs a form and returns the status code and the body. HTTP/1.0, so the reply is never
/// chunked and ends with the connection. `https://` over rustls with the system roots;
/// `http://` only for loopback tests.
async fn post_form(uri: &str, body: &str) -> Result<(u16, Vec<u8>), StoreError> {
    let bad = |why: &str| unauthenticated(format!("token endpoint {uri}: {why}"));
    let (tls, rest) = if let Some(r) = uri.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = uri.strip_prefix("http://") {
        (false, r)
    } else {
        return Err(bad("not an http(s) URL"));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let host = authority.split(':').next().unwrap_or(authority).to_string();
    let addr = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:{}", if tls { 443 } else { 80 })
    };
    let request = format!(
        "POST {path} HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let tcp = tokio::net::TcpStream::connect(&addr)
        .await
        .map_err(|e| bad(&format!("connect: {e}")))?;
    let mut reply = Vec::new();
    if tls {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            // A malformed system certificate is skipped, as tonic does.
            let _ = roots.add(cert);
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(&format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|e| bad(&format!("server name: {e}")))?;
        let mut stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| bad(&format!("TLS handshake: {e}")))?;
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| bad(&e.to_string()))?;
        // Google closes without close_notify at times; keep what arrived.
        let _ = stream.read_to_end(&mut reply).await;
    } else {
        let mut stream = tcp;
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| bad(&e.to_string()))?;
        stream
            .read_to_end(&mut reply)
            .await
            .map_err(|e| bad(&e.to_string()))?;
    }
    let split = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("malformed HTTP reply"))?;
    let head = String::from_utf8_lossy(&reply[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| bad("malformed status line"))?;
    Ok((status, reply[split + 4..].to_vec()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn rejects_unsupported_and_malformed_files() {
        let e =
            ApplicationDefaultCredentials::from_json(r#"{"type":"external_account"}"#).unwrap_err();
        assert_eq!(e.code, Code::Unauthenticated);
        assert!(e.message.contains("not supported"));
        assert!(ApplicationDefaultCredentials::from_json("nope").is_err());
        assert!(ApplicationDefaultCredentials::from_json(r#"{"type":"authorized_user"}"#).is_err());
        let bad_key = r#"{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}"#;
        assert!(ApplicationDefaultCredentials::from_json(bad_key).is_err());
    }

    /// The service-account flow: an RS256 JWT assertion whose signature verifies with the
    /// key's public half, claims naming the account, scope and endpoint. The key is a
    /// throwaway generated for this test (`openssl genpkey -algorithm RSA`), never a real one.
    #[test]
    fn service_account_jwt_assertion() {
        let pem = include_str!("../testdata/throwaway-test-rsa-key.pem");
        let json = serde_json::json!({
            "type": "service_account",
            "client_email": "sa@p.iam.gserviceaccount.com",
            "private_key": pem,
        })
        .to_string();
        let adc = ApplicationDefaultCredentials::from_json(&json).unwrap();
        let (uri, body) = adc.token_request().unwrap();
        assert_eq!(uri, TOKEN_URI);
        let assertion = body
            .strip_prefix(
                "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=",
            )
            .unwrap();
        let parts: Vec<&str> = assertion.split('.').collect();
        assert_eq!(parts.len(), 3);
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let claims: serde_json::Value =
            serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "sa@p.iam.gserviceaccount.com");
        assert_eq!(claims["aud"], TOKEN_URI);
        assert_eq!(claims["scope"], SCOPE);
        assert_eq!(
            claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
            3600
        );
        let Credentials::ServiceAccount { key, .. } = &adc.credentials else {
            panic!("not a service account")
        };
        use ring::signature::KeyPair;
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::RSA_PKCS1_2048_8192_SHA256,
            key.public_key().as_ref().to_vec(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(signed.as_bytes(), &b64.decode(parts[2]).unwrap())
            .unwrap();
    }

    /// The refresh-token flow against a loopback token endpoint: the request carries the
    /// form fields, the token is cached.
    #[test]
    fn authorized_user_refresh_flow() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let server = tokio::spawn(async move {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = vec![0; 4096];
                let n = s.read(&mut buf).await.unwrap();
                let req = String::from_utf8_lossy(&buf[..n]).to_string();
                s.write_all(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"access_token\":\"tok-1\",\"expires_in\":3600}")
                    .await
                    .unwrap();
                req
            });
            let json = format!(
                r#"{{"type":"authorized_user","client_id":"cid","client_secret":"s/e","refresh_token":"rt","token_uri":"http://127.0.0.1:{port}/token"}}"#
            );
            let adc = ApplicationDefaultCredentials::from_json(&json).unwrap();
            assert_eq!(adc.token().await.unwrap(), "tok-1");
            // Cached: no second connection is made (the server accepted only one).
            assert_eq!(adc.token().await.unwrap(), "tok-1");
            let req = server.await.unwrap();
            assert!(req.starts_with("POST /token HTTP/1.0"), "{req}");
            assert!(req.contains("grant_type=refresh_token&client_id=cid&client_secret=s%2Fe&refresh_token=rt"), "{req}");
        });
    }
}
