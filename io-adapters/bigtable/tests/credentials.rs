//! Cloud Bigtable credentials through `google-cloud-auth`, checked without Google: a local
//! fake metadata server (as on GCE/GKE), a service-account key file (self-signed JWTs, checked
//! against the key's public half), an `authorized_user` file refreshed at a local token
//! endpoint, and Application Default Credentials found through the environment (in a child
//! process, so the environment of this one stays untouched).
//!
//! The credentials are built on first use, on the runtime asking: constructors work outside
//! any runtime, and a provider used outside one answers an error instead of panicking.
#![allow(clippy::unwrap_used)]

#[path = "support/google_auth.rs"]
mod google_auth;

use std::path::Path;
use std::process::Command;

use google_auth::*;
use rowkit_bigtable::TokenProvider;
use rowkit_bigtable::credentials::{GoogleCredentials, QUOTA_PROJECT_ENV};

#[test]
fn the_metadata_server_gives_tokens_to_callers_that_say_the_flavour() {
    runtime().block_on(async {
        let (addr, seen) = fake_server(metadata_reply).await;
        let creds = GoogleCredentials::metadata_server(&format!("http://{addr}"));
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
    // Made outside any runtime (as the CLI does), used inside one.
    let creds = GoogleCredentials::from_json(service_account_json(&pem)).unwrap();
    runtime().block_on(async {
        assert_self_signed_jwt(&creds.token().await.unwrap(), &public);
    });
    std::fs::remove_dir_all(dir).unwrap();
}

/// Every constructor works outside a runtime; a token asked for outside one is an error, not
/// a panic (the token cache needs a runtime to run on).
#[test]
fn credentials_outside_a_runtime_are_an_error_not_a_panic() {
    let dir = temp_dir("no-runtime");
    let (pem, _public) = rsa_key(&dir);
    let made = [
        GoogleCredentials::from_json(service_account_json(&pem)).unwrap(),
        GoogleCredentials::metadata_server("http://127.0.0.1:9"),
        GoogleCredentials::application_default(),
    ];
    for creds in made {
        let e = futures_executor_block_on(creds.token()).unwrap_err();
        assert_eq!(
            e.code,
            rowkit_codec::model::Code::FailedPrecondition,
            "{creds:?}: {e}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Polls a future to completion on this thread, with no Tokio runtime anywhere.
fn futures_executor_block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
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
/// headers Application Default Credentials give in this process's environment (the bearer
/// token, the quota project or nothing).
#[test]
#[ignore = "run by application_default_credentials_come_from_the_environment"]
fn adc_child() {
    if std::env::var_os("ROWKIT_ADC_CHILD").is_none() {
        return;
    }
    let headers = runtime().block_on(async {
        let creds = GoogleCredentials::application_default();
        creds.headers().await.unwrap()
    });
    let text = |name: &str| headers.get(name).map_or("", |v| v.to_str().unwrap());
    let token = text("authorization").strip_prefix("Bearer ").unwrap();
    println!("TOKEN={token}");
    println!("QUOTA={}", text("x-goog-user-project"));
}

/// What [`adc_child`] printed: the token, and the quota project ("" for none).
struct AdcHeaders {
    token: String,
    quota: String,
}

/// Runs [`adc_child`] with `env` (and nothing of gcloud's own configuration) and returns the
/// headers it printed.
fn adc_headers(home: &Path, env: &[(&str, String)]) -> AdcHeaders {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", "adc_child", "--ignored", "--nocapture"])
        .env("ROWKIT_ADC_CHILD", "1")
        .env("HOME", home)
        .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
        .env_remove("GCE_METADATA_HOST")
        .env_remove("CLOUDSDK_CONFIG")
        .env_remove(QUOTA_PROJECT_ENV);
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
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {stdout}"))
            .to_string()
    };
    AdcHeaders {
        token: field("TOKEN="),
        quota: field("QUOTA="),
    }
}

#[test]
fn application_default_credentials_come_from_the_environment() {
    let dir = temp_dir("adc");
    let (pem, public) = rsa_key(&dir);
    let file = dir.join("sa.json");
    std::fs::write(&file, service_account_json(&pem).to_string()).unwrap();
    let from_env = ("GOOGLE_APPLICATION_CREDENTIALS", file.display().to_string());
    // GOOGLE_APPLICATION_CREDENTIALS names a service-account key file: no quota project.
    let adc = adc_headers(&dir, std::slice::from_ref(&from_env));
    assert_self_signed_jwt(&adc.token, &public);
    assert_eq!(adc.quota, "");
    // gcloud's well-known file under HOME.
    let gcloud = dir.join(".config/gcloud");
    std::fs::create_dir_all(&gcloud).unwrap();
    std::fs::copy(&file, gcloud.join("application_default_credentials.json")).unwrap();
    assert_self_signed_jwt(&adc_headers(&dir, &[]).token, &public);
    std::fs::remove_file(gcloud.join("application_default_credentials.json")).unwrap();
    // A key with a quota project sends it; GOOGLE_CLOUD_QUOTA_PROJECT overrides it.
    let mut with_quota = service_account_json(&pem);
    with_quota["quota_project_id"] = "file-project".into();
    std::fs::write(&file, with_quota.to_string()).unwrap();
    let adc = adc_headers(&dir, std::slice::from_ref(&from_env));
    assert_self_signed_jwt(&adc.token, &public);
    assert_eq!(adc.quota, "file-project");
    let env_quota = (QUOTA_PROJECT_ENV, "env-project".to_string());
    let adc = adc_headers(&dir, &[from_env, env_quota.clone()]);
    assert_eq!(adc.quota, "env-project");
    // No file: the metadata server (GCE_METADATA_HOST points at the fake one).
    let rt = runtime();
    let (addr, _seen) = rt.block_on(fake_server(metadata_reply));
    let mds = ("GCE_METADATA_HOST", addr.to_string());
    let adc = adc_headers(&dir, std::slice::from_ref(&mds));
    assert_eq!((adc.token.as_str(), adc.quota.as_str()), ("mds-token", ""));
    let adc = adc_headers(&dir, &[mds, env_quota]);
    assert_eq!(
        (adc.token.as_str(), adc.quota.as_str()),
        ("mds-token", "env-project")
    );
    std::fs::remove_dir_all(dir).unwrap();
}
