//! Google credentials through Google's own `google-cloud-auth` crate, as every official Cloud
//! client library gets them: Application Default Credentials in their full form.
//!
//! [`GoogleCredentials::application_default`] looks, in order, at the file
//! `GOOGLE_APPLICATION_CREDENTIALS` names, gcloud's `application_default_credentials.json`, and
//! the metadata server (GCE, GKE and its workload identity, Cloud Run; `GCE_METADATA_HOST`
//! overrides its address). A file may hold any type ADC accepts: `authorized_user`
//! (`gcloud auth application-default login`), `service_account` (a key: self-signed JWTs, no
//! token exchange), `external_account` (workload identity federation: AWS, Azure, OIDC,
//! executables), `impersonated_service_account`. Tokens are cached and refreshed by the crate.
//!
//! The crate is built without its default TLS provider (aws-lc, a C build); rowkit installs
//! rustls' ring provider, which tonic already uses, as the process default.

use std::sync::Arc;

use google_cloud_auth::credentials::{AccessTokenCredentials, mds};
use rowkit_codec::model::Code;
use rowkit_statemachines::StoreError;

use crate::auth::{TokenFuture, TokenProvider};

/// The OAuth2 scope rowkit asks for.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

fn unauthenticated(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::new(Code::Unauthenticated, format!("{what}: {e}"))
}

/// Makes ring rustls' process-wide provider unless one is installed already (by the
/// application, or by an earlier call).
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another installer is fine: a provider is installed either way.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A [`TokenProvider`] over `google-cloud-auth` credentials (see the module doc).
#[derive(Clone)]
pub struct GoogleCredentials {
    inner: Arc<AccessTokenCredentials>,
    /// Where the credentials came from, for messages.
    source: &'static str,
}

impl std::fmt::Debug for GoogleCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleCredentials")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl GoogleCredentials {
    /// Application Default Credentials (see the module doc), scoped to [`SCOPE`].
    pub fn application_default() -> Result<GoogleCredentials, StoreError> {
        install_crypto_provider();
        let inner = google_cloud_auth::credentials::Builder::default()
            .with_scopes([SCOPE])
            .build_access_token_credentials()
            .map_err(|e| unauthenticated("Application Default Credentials", e))?;
        Ok(GoogleCredentials::new(
            inner,
            "Application Default Credentials",
        ))
    }

    /// The credentials a JSON document describes, by its `type` as ADC reads it:
    /// `service_account`, `authorized_user`, `external_account` or
    /// `impersonated_service_account`.
    pub fn from_json(json: serde_json::Value) -> Result<GoogleCredentials, StoreError> {
        use google_cloud_auth::credentials::{
            external_account, impersonated, service_account, user_account,
        };
        install_crypto_provider();
        let kind = json
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_string();
        let built = match kind.as_str() {
            "service_account" => service_account::Builder::new(json)
                .with_access_specifier(service_account::AccessSpecifier::from_scopes([SCOPE]))
                .build_access_token_credentials(),
            "authorized_user" => user_account::Builder::new(json)
                .with_scopes([SCOPE])
                .build_access_token_credentials(),
            "external_account" => external_account::Builder::new(json)
                .with_scopes([SCOPE])
                .build_access_token_credentials(),
            "impersonated_service_account" => impersonated::Builder::new(json)
                .with_scopes([SCOPE])
                .build_access_token_credentials(),
            other => {
                return Err(StoreError::new(
                    Code::Unauthenticated,
                    format!(
                        "credentials of type {other:?}: expected service_account, authorized_user, external_account or impersonated_service_account"
                    ),
                ));
            }
        };
        let inner = built.map_err(|e| unauthenticated("credentials", e))?;
        Ok(GoogleCredentials::new(inner, "a credentials file"))
    }

    /// The metadata server at `endpoint` (`http://HOST[:PORT]`, no trailing slash), e.g. a
    /// local one; [`GoogleCredentials::application_default`] finds the real one by itself.
    pub fn metadata_server(endpoint: &str) -> Result<GoogleCredentials, StoreError> {
        install_crypto_provider();
        let inner = mds::Builder::default()
            .with_endpoint(endpoint)
            .with_scopes([SCOPE])
            .build_access_token_credentials()
            .map_err(|e| unauthenticated("metadata server credentials", e))?;
        Ok(GoogleCredentials::new(inner, "the metadata server"))
    }

    fn new(inner: AccessTokenCredentials, source: &'static str) -> GoogleCredentials {
        GoogleCredentials {
            inner: Arc::new(inner),
            source,
        }
    }
}

impl TokenProvider for GoogleCredentials {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(async move {
            self.inner
                .access_token()
                .await
                .map(|t| t.token)
                .map_err(|e| unauthenticated(&format!("token from {}", self.source), e))
        })
    }
}
