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
//! The credentials are built on first use, on the Tokio runtime that asks for a token (the
//! crate's token cache runs a refresh task there), never in a constructor: a constructor works
//! anywhere, in or out of a runtime. A [`GoogleCredentials`] is meant for one runtime (a
//! store's); used outside any, it answers an error instead of panicking.
//!
//! Calls carry the headers the crate makes ([`TokenProvider::headers`]): the bearer token, and
//! `x-goog-user-project` when a quota project is configured — `GOOGLE_CLOUD_QUOTA_PROJECT`, else
//! the credentials file's `quota_project_id`, as Google's libraries read them.
//!
//! The crate is built without its default TLS provider (aws-lc, a C build); rowkit installs
//! rustls' ring provider, which tonic already uses, as the process default.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use google_cloud_auth::credentials::{
    AccessTokenCredentials, CacheableResource, CredentialsProvider, mds,
};
use rowkit_codec::model::Code;
use rowkit_statemachines::StoreError;
use tonic::codegen::http::Extensions;

use crate::auth::{HeadersFuture, TokenFuture, TokenProvider};

/// The OAuth2 scope rowkit asks for.
pub const SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// The environment variable naming the quota project (billed for the calls), over the one in
/// the credentials file, as in Google's libraries.
pub const QUOTA_PROJECT_ENV: &str = "GOOGLE_CLOUD_QUOTA_PROJECT";

fn unauthenticated(what: &str, e: &dyn std::error::Error) -> StoreError {
    StoreError::new(
        Code::Unauthenticated,
        format!("{what}: {}", crate::error_chain(e)),
    )
}

/// Makes ring rustls' process-wide provider unless one is installed already (by the
/// application, or by an earlier call). Public for the CLI's other TLS client (a gateway's
/// `https://` address), which shares the process.
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another installer is fine: a provider is installed either way.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// A non-empty string field of a credentials document.
fn json_str(json: &serde_json::Value, field: &str) -> Option<String> {
    json.get(field)
        .and_then(|v| v.as_str())
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// `GOOGLE_CLOUD_QUOTA_PROJECT` if set, else the document's `quota_project_id`.
fn quota_project(json: Option<&serde_json::Value>) -> Option<String> {
    std::env::var(QUOTA_PROJECT_ENV)
        .ok()
        .filter(|q| !q.is_empty())
        .or_else(|| json.and_then(|j| json_str(j, "quota_project_id")))
}

/// The credentials file Application Default Credentials read, found as `google-cloud-auth`
/// finds it (AIP-4110): `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's well-known file.
fn adc_file() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GOOGLE_APPLICATION_CREDENTIALS") {
        return Some(PathBuf::from(path));
    }
    let (root, file) = if cfg!(windows) {
        ("APPDATA", "gcloud/application_default_credentials.json")
    } else {
        (
            "HOME",
            ".config/gcloud/application_default_credentials.json",
        )
    };
    std::env::var_os(root).map(|r| PathBuf::from(r).join(file))
}

/// How the credentials are made: recorded by a constructor, built on first use.
#[derive(Debug)]
enum Recipe {
    /// Application Default Credentials as `google-cloud-auth` finds them, with the quota project
    /// of the ADC file (the crate reads the environment's itself, but not a service-account
    /// key's `quota_project_id`).
    ApplicationDefault { file_quota_project: Option<String> },
    /// A credentials document, by its `type`.
    Json {
        json: serde_json::Value,
        quota_project: Option<String>,
    },
    /// The metadata server at `endpoint`.
    MetadataServer {
        endpoint: String,
        quota_project: Option<String>,
    },
}

impl Recipe {
    /// Builds the credentials; on a Tokio runtime (the token cache spawns its refresh task).
    fn build(&self) -> Result<AccessTokenCredentials, StoreError> {
        use google_cloud_auth::credentials::{
            external_account, impersonated, service_account, user_account,
        };
        install_crypto_provider();
        match self {
            Recipe::ApplicationDefault { file_quota_project } => {
                let mut builder = google_cloud_auth::credentials::Builder::default();
                if let Some(q) = file_quota_project {
                    builder = builder.with_quota_project_id(q);
                }
                builder
                    .with_scopes([SCOPE])
                    .build_access_token_credentials()
                    .map_err(|e| unauthenticated("Application Default Credentials", &e))
            }
            Recipe::MetadataServer {
                endpoint,
                quota_project,
            } => {
                let mut builder = mds::Builder::default().with_endpoint(endpoint.clone());
                if let Some(q) = quota_project {
                    builder = builder.with_quota_project_id(q);
                }
                builder
                    .with_scopes([SCOPE])
                    .build_access_token_credentials()
                    .map_err(|e| unauthenticated("metadata server credentials", &e))
            }
            Recipe::Json {
                json,
                quota_project,
            } => {
                let json = json.clone();
                let q = quota_project.clone();
                let built = match json.get("type").and_then(|t| t.as_str()) {
                    Some("service_account") => {
                        let mut b = service_account::Builder::new(json).with_access_specifier(
                            service_account::AccessSpecifier::from_scopes([SCOPE]),
                        );
                        if let Some(q) = q {
                            b = b.with_quota_project_id(q);
                        }
                        b.build_access_token_credentials()
                    }
                    Some("authorized_user") => {
                        let mut b = user_account::Builder::new(json).with_scopes([SCOPE]);
                        if let Some(q) = q {
                            b = b.with_quota_project_id(q);
                        }
                        b.build_access_token_credentials()
                    }
                    Some("external_account") => {
                        let mut b = external_account::Builder::new(json).with_scopes([SCOPE]);
                        if let Some(q) = q {
                            b = b.with_quota_project_id(q);
                        }
                        b.build_access_token_credentials()
                    }
                    Some("impersonated_service_account") => {
                        let mut b = impersonated::Builder::new(json).with_scopes([SCOPE]);
                        if let Some(q) = q {
                            b = b.with_quota_project_id(q);
                        }
                        b.build_access_token_credentials()
                    }
                    // Refused by the constructor.
                    other => {
                        return Err(StoreError::new(
                            Code::Unauthenticated,
                            format!("credentials of type {other:?}"),
                        ));
                    }
                };
                built.map_err(|e| unauthenticated("credentials", &e))
            }
        }
    }
}

/// What the clones of a [`GoogleCredentials`] share.
#[derive(Debug)]
struct Inner {
    recipe: Recipe,
    built: OnceLock<Result<AccessTokenCredentials, StoreError>>,
    /// Where the credentials came from, for messages.
    source: &'static str,
}

/// A [`TokenProvider`] over `google-cloud-auth` credentials (see the module doc). Cheap to
/// clone: clones share the credentials and their token cache.
#[derive(Clone)]
pub struct GoogleCredentials {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for GoogleCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleCredentials")
            .field("source", &self.inner.source)
            .finish_non_exhaustive()
    }
}

impl GoogleCredentials {
    /// Application Default Credentials (see the module doc), scoped to [`SCOPE`]. Reads
    /// nothing but the ADC file's quota project now; the credentials are found and built on
    /// first use.
    pub fn application_default() -> GoogleCredentials {
        let file_quota_project = adc_file()
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|text| serde_json::from_slice::<serde_json::Value>(&text).ok())
            .and_then(|json| json_str(&json, "quota_project_id"));
        GoogleCredentials::new(
            Recipe::ApplicationDefault { file_quota_project },
            "Application Default Credentials",
        )
    }

    /// The credentials a JSON document describes, by its `type` as ADC reads it:
    /// `service_account`, `authorized_user`, `external_account` or
    /// `impersonated_service_account`. An unknown type is refused now; the rest is checked when
    /// the credentials are built, on first use.
    pub fn from_json(json: serde_json::Value) -> Result<GoogleCredentials, StoreError> {
        match json.get("type").and_then(|t| t.as_str()) {
            Some(
                "service_account"
                | "authorized_user"
                | "external_account"
                | "impersonated_service_account",
            ) => {}
            other => {
                return Err(StoreError::new(
                    Code::Unauthenticated,
                    format!(
                        "credentials of type {:?}: expected service_account, authorized_user, external_account or impersonated_service_account",
                        other.unwrap_or_default()
                    ),
                ));
            }
        }
        let quota_project = quota_project(Some(&json));
        Ok(GoogleCredentials::new(
            Recipe::Json {
                json,
                quota_project,
            },
            "a credentials file",
        ))
    }

    /// The metadata server at `endpoint` (`http://HOST[:PORT]`, no trailing slash), e.g. a
    /// local one; [`GoogleCredentials::application_default`] finds the real one by itself.
    pub fn metadata_server(endpoint: &str) -> GoogleCredentials {
        GoogleCredentials::new(
            Recipe::MetadataServer {
                endpoint: endpoint.to_string(),
                quota_project: quota_project(None),
            },
            "the metadata server",
        )
    }

    fn new(recipe: Recipe, source: &'static str) -> GoogleCredentials {
        GoogleCredentials {
            inner: Arc::new(Inner {
                recipe,
                built: OnceLock::new(),
                source,
            }),
        }
    }

    /// The credentials, built by the first caller, which must be on a Tokio runtime.
    fn built(&self) -> Result<&AccessTokenCredentials, StoreError> {
        if self.inner.built.get().is_none() && tokio::runtime::Handle::try_current().is_err() {
            return Err(StoreError::new(
                Code::FailedPrecondition,
                "Google credentials are used on a Tokio runtime (their token cache runs there)",
            ));
        }
        self.inner
            .built
            .get_or_init(|| self.inner.recipe.build())
            .as_ref()
            .map_err(Clone::clone)
    }

    fn token_error(&self, e: &dyn std::error::Error) -> StoreError {
        unauthenticated(&format!("token from {}", self.inner.source), e)
    }
}

impl TokenProvider for GoogleCredentials {
    fn token(&self) -> TokenFuture<'_> {
        Box::pin(async move {
            self.built()?
                .access_token()
                .await
                .map(|t| t.token)
                .map_err(|e| self.token_error(&e))
        })
    }

    /// The headers `google-cloud-auth` makes: `authorization`, and `x-goog-user-project` with
    /// a quota project.
    fn headers(&self) -> HeadersFuture<'_> {
        Box::pin(async move {
            match self.built()?.headers(Extensions::new()).await {
                Ok(CacheableResource::New { data, .. }) => Ok(data),
                // Only answered to a caller that passed the tag of earlier headers.
                Ok(CacheableResource::NotModified) => Err(StoreError::new(
                    Code::Internal,
                    "google-cloud-auth answered NotModified to a request without a tag",
                )),
                Err(e) => Err(self.token_error(&e)),
            }
        })
    }
}
